/* fuzz_headers.c: libFuzzer target for the gateway's decisions on heads
 * (gateway_headers.c), on heads the sandbox or an upstream sends.
 *
 * Input: one control byte, then a head. Control bit 0: a request head (else a response
 * head, answering the method bits 4-5 choose: GET, HEAD, CONNECT, POST); bit 1: the
 * upstream is TLS; bit 2: credential A may go over plain HTTP; bit 3: A replaces in bodies.
 * Two credentials: A named in Authorization and X-Api-Key, B injected as X-Token, each
 * with a placeholder. Checked with abort():
 *   - finding a placeholder is deterministic, and a find names where;
 *   - putting credentials on either changes nothing at all (a refusal: the head serialises
 *     as before, plain HTTP only without TLS and with a credential that would put a value
 *     on), or leaves no placeholder of A in a field A names, B's header holding B's value,
 *     answers asked unencoded, and a listed field holding a placeholder for real;
 *   - every offset of a response head's text is placed ("response ...").
 * Leaks are ASan's. Built with -fsanitize=fuzzer (fuzz/meson.build, -Dfuzz=true) and,
 * without libFuzzer, as fuzz-headers-replay for the corpus.
 */
#include "gateway_headers.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PH_A "PDK_PLACEHOLDER_0123456789abcdef0123456789abcdef0123456789abcdef"
#define PH_B "PDK_PLACEHOLDER_fedcba9876543210fedcba9876543210fedcba9876543210"

static const enum http_method methods[] = {HTTP_GET, HTTP_HEAD, HTTP_CONNECT, HTTP_POST};

/* abort() naming the line that failed (the replay build has no line tables at -O2) */
#define check(ok)                                                                                  \
    do {                                                                                           \
        if (!(ok)) {                                                                               \
            fprintf(stderr, "fuzz_headers.c:%d: check failed\n", __LINE__);                        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static pdk_http_head *parse(pdk_http_kind kind, enum http_method method, const char *text,
                            size_t len)
{
    pdk_http_config config = {0};
    pdk_http_parser *p = pdk_http_parser_new(kind, &config);
    if (kind == PDK_HTTP_RESPONSE)
        pdk_http_parser_set_request_method(p, method);
    pdk_http_result r;
    pdk_http_head *h = NULL;
    if (pdk_http_parse(p, text, len, &r) == PDK_HTTP_HEAD)
        h = pdk_http_parser_take_head(p);
    pdk_http_parser_free(p);
    return h;
}

static void request(const uint8_t ctl, const char *text, size_t len)
{
    pdk_http_head *h = parse(PDK_HTTP_REQUEST, HTTP_GET, text, len);
    if (!h)
        return;
    pdk_placeholder_set *set = pdk_placeholder_set_new();
    check(pdk_placeholder_set_add(set, PH_A, 0) == 0 && pdk_placeholder_set_add(set, PH_B, 1) == 0);
    pdk_placeholder_found f1 = {-1, "", 0}, f2 = {-1, "", 0};
    char *w1 = NULL, *w2 = NULL;
    bool hit = pdk_headers_find_placeholder(h, set, NULL, NULL, &f1, &w1);
    check(hit == pdk_headers_find_placeholder(h, set, NULL, NULL, &f2, &w2));
    check(hit == (w1 != NULL) &&
          (!hit || (strcmp(w1, w2) == 0 && f1.id == f2.id && (f1.id == 0 || f1.id == 1))));
    free(w1);
    free(w2);

    char *fields[] = {"Authorization", "X-Api-Key", NULL};
    pdk_credential a = {.name = "a", .replace_in_headers = fields};
    pdk_credential b = {.name = "b", .inject_header = "X-Token", .inject_value = "Bearer {token}"};
    a.allow_plain_http = ctl & 4;
    a.replace_in_body = ctl & 8;
    pdk_headers_credential creds[] = {{&a, PH_A, "value-a"}, {&b, PH_B, "value-b"}};
    bool tls = ctl & 2;
    pdk_buf before = {0}, after = {0};
    pdk_http_head_serialize(h, &before);
    bool used[2];
    pdk_headers_put put = {.used = used};
    pdk_headers_outcome o = pdk_headers_put_credentials(h, creds, 2, tls, 4096, &put);
    pdk_http_head_serialize(h, &after);
    if (o != PDK_HEADERS_PUT) {
        check(before.len == after.len && memcmp(before.data, after.data, before.len) == 0);
        check(o != PDK_HEADERS_PLAIN_HTTP || (!tls && put.refused < 2));
    } else {
        check(tls); /* B injects on every request, and may not go over plain HTTP */
        for (size_t k = 0; k < h->header_count; k++)
            if (strcasecmp(h->headers[k].name, "authorization") == 0 ||
                strcasecmp(h->headers[k].name, "x-api-key") == 0)
                check(!strstr(h->headers[k].value, PH_A));
        const char *token = pdk_http_head_get(h, "X-Token");
        check(token && strcmp(token, "Bearer value-b") == 0 && used[1]);
        const char *enc = pdk_http_head_get(h, "Accept-Encoding");
        check(enc && strcmp(enc, "identity") == 0);
        for (size_t i = 0; put.placeholders_left && put.placeholders_left[i]; i++) {
            bool holds = false;
            for (size_t k = 0; k < h->header_count && !holds; k++)
                holds = strcmp(h->headers[k].name, put.placeholders_left[i]) == 0 &&
                        (strstr(h->headers[k].value, PH_A) || strstr(h->headers[k].value, PH_B));
            check(holds);
        }
    }
    pdk_headers_put_free(&put);
    pdk_buf_free(&before);
    pdk_buf_free(&after);
    pdk_placeholder_set_free(set);
    pdk_http_head_free(h);
}

static void response(const uint8_t ctl, const char *text, size_t len)
{
    pdk_http_head *h = parse(PDK_HTTP_RESPONSE, methods[(ctl >> 4) & 3], text, len);
    if (!h)
        return;
    const char *coding = NULL;
    if (pdk_headers_body_encoded(h, &coding))
        check(coding && *coding);
    pdk_buf out = {0};
    pdk_http_head_serialize(h, &out);
    char where[96];
    for (size_t i = 0; i < out.len; i++) {
        pdk_headers_response_where(out.data, i, where, sizeof(where));
        check(strncmp(where, "response ", 9) == 0);
    }
    pdk_buf_free(&out);
    pdk_http_head_free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *)data + 1;
    if (data[0] & 1)
        request(data[0], text, size - 1);
    else
        response(data[0], text, size - 1);
    return 0;
}
