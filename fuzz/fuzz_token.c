/* fuzz_token.c: libFuzzer target for token endpoints' answers and the token cache entry
 * (token_answer.c).
 *
 * The first byte picks the kind (Feishu tenant, OAuth 2) and the HTTP status (200, 400,
 * 401, 500); the rest is the answer's body, and also a cache entry. Checked: a parsed
 * answer has a token of printable ASCII without spaces and a lifetime in (0, 366 days]; an
 * error has a one-line message naming the credential; an entry parsed is formatted back to
 * the same token and times; every parse is deterministic. Built with -fsanitize=fuzzer
 * (fuzz/meson.build, -Dfuzz=true) and, without libFuzzer, as fuzz-token-replay.
 */
#include "token_answer.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_token(const char *t)
{
    if (!t || !*t)
        abort();
    for (const unsigned char *p = (const unsigned char *)t; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    static const long statuses[] = {200, 400, 401, 500};
    pdk_token_kind kind = (data[0] & 1) ? PDK_TOKEN_OAUTH2 : PDK_TOKEN_FEISHU_TENANT;
    long status = statuses[(data[0] >> 1) & 3];
    const char *body = (const char *)data + 1;
    size_t len = size - 1;

    pdk_token_answer a = {0}, b = {0};
    pdk_error err = {0}, err2 = {0};
    int r = pdk_token_answer_parse(kind, status, body, len, "cred", "cred_refresh", &a, &err);
    int r2 = pdk_token_answer_parse(kind, status, body, len, "cred", "cred_refresh", &b, &err2);
    if (r != r2)
        abort();
    if (r == 0) {
        check_token(a.token);
        if (a.lifetime_s <= 0 || a.lifetime_s > 366LL * 24 * 3600 || strcmp(a.token, b.token))
            abort();
        if (a.refresh_token)
            check_token(a.refresh_token);
        if (kind == PDK_TOKEN_OAUTH2 && (status < 200 || status > 299))
            abort(); /* an OAuth refusal status is never a token */
    } else {
        if (!strstr(err.message, "credential cred:") || strchr(err.message, '\n') ||
            strcmp(err.message, err2.message) != 0)
            abort();
        if (a.token || a.refresh_token)
            abort();
    }
    pdk_token_answer_clear(&a);
    pdk_token_answer_clear(&b);

    /* the same bytes as a cache entry (up to the first NUL) */
    char *entry = xstrndup(body, len);
    char *token = NULL;
    int64_t e = 0, l = 0;
    if (pdk_token_cache_parse(entry, &token, &e, &l)) {
        if (!token || !*token || strchr(token, ' ') || l <= 0)
            abort();
        char *again = pdk_token_cache_format(token, e, l);
        char *t2 = NULL;
        int64_t e2 = 0, l2 = 0;
        if (!pdk_token_cache_parse(again, &t2, &e2, &l2) || strcmp(t2, token) || e2 != e || l2 != l)
            abort();
        free(t2);
        free(again);
    } else if (token) {
        abort();
    }
    free(token);
    free(entry);
    return 0;
}
