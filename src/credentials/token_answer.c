/* token_answer.c: token endpoints' answers and the token cache entry (token_answer.h). */
#include "token_answer.h"

#include "redact.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ANSWER_MAX (64 * 1024)

/* A string of the answer, for a one-line message: every registered secret in it redacted
 * (redact.h: an endpoint may quote the refresh token it refuses, and the message reaches
 * the sandbox in a 502) before it is cut at 200 bytes (a secret cut in two would no longer
 * be found), control characters (a newline, an escape sequence for the terminal) become
 * '?'. */
static char *text_or(json_t *o, const char *key, const char *fallback)
{
    const char *raw = json_string_value(json_object_get(o, key));
    if (!raw || !*raw)
        return fallback ? xstrdup(fallback) : NULL;
    _cleanup_free_ char *s = pdk_redacted(raw);
    char *t = xstrndup(s, strlen(s) > 200 ? 200 : strlen(s));
    for (char *p = t; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return t;
}

/* A token, as it will go into a header: printable ASCII, no spaces, not empty. */
static bool token_ok(const char *t)
{
    if (!t || !*t || strlen(t) > 8192)
        return false;
    for (const unsigned char *p = (const unsigned char *)t; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f)
            return false;
    return true;
}

static int feishu(long status, json_t *answer, const char *cred, pdk_token_answer *out,
                  pdk_error *err)
{
    json_t *code = json_object_get(answer, "code");
    json_t *expire = json_object_get(answer, "expire");
    const char *tok = json_string_value(json_object_get(answer, "tenant_access_token"));
    if (!json_is_integer(code) || json_integer_value(code) != 0) {
        _cleanup_free_ char *msg = text_or(answer, "msg", "(no message)");
        return pdk_error_set(
            err, 0, "credential %s: the token endpoint refused (HTTP %ld): code %lld: %s", cred,
            status, json_is_integer(code) ? (long long)json_integer_value(code) : -1LL, msg);
    }
    if (!token_ok(tok) || !json_is_integer(expire) || json_integer_value(expire) <= 0 ||
        json_integer_value(expire) > 366LL * 24 * 3600)
        return pdk_error_set(err, 0,
                             "credential %s: the token endpoint's answer has no usable token "
                             "or expiry",
                             cred);
    out->token = xstrdup(tok);
    out->lifetime_s = (int64_t)json_integer_value(expire);
    return 0;
}

static int oauth2(long status, json_t *answer, const char *cred, const char *refresh_secret,
                  pdk_token_answer *out, pdk_error *err)
{
    json_t *code = json_object_get(answer, "code");
    _cleanup_free_ char *error = text_or(answer, "error", NULL);
    if (error || (json_is_integer(code) && json_integer_value(code) != 0) || status < 200 ||
        status > 299) {
        _cleanup_free_ char *what =
            json_is_integer(code)
                ? xasprintf("%s%s, code %lld", error ? ", " : "", error ? error : "",
                            (long long)json_integer_value(code))
                : xasprintf("%s%s", error ? ", " : "", error ? error : "");
        _cleanup_free_ char *msg = text_or(answer, "msg", "no reason");
        _cleanup_free_ char *why = text_or(answer, "error_description", msg);
        return pdk_error_set(err, 0,
                             "credential %s: the token endpoint refused the refresh token (HTTP "
                             "%ld%s): %s (store a new one: paddock secret set %s)",
                             cred, status, what, why, refresh_secret ? refresh_secret : "NAME");
    }
    const char *tok = json_string_value(json_object_get(answer, "access_token"));
    json_t *expires_in = json_object_get(answer, "expires_in");
    json_t *next = json_object_get(answer, "refresh_token");
    if (!token_ok(tok) ||
        (expires_in && (!json_is_integer(expires_in) || json_integer_value(expires_in) <= 0 ||
                        json_integer_value(expires_in) > 366LL * 24 * 3600)) ||
        (next && !json_is_null(next) && !token_ok(json_string_value(next))))
        return pdk_error_set(err, 0,
                             "credential %s: the token endpoint's answer has no usable "
                             "access_token, expires_in or refresh_token",
                             cred);
    out->token = xstrdup(tok);
    out->lifetime_s =
        expires_in ? (int64_t)json_integer_value(expires_in) : PDK_TOKEN_DEFAULT_LIFETIME_S;
    if (json_is_string(next))
        out->refresh_token = xstrdup(json_string_value(next));
    return 0;
}

int pdk_token_answer_parse(pdk_token_kind kind, long status, const char *data, size_t len,
                           const char *credential, const char *refresh_secret,
                           pdk_token_answer *out, pdk_error *err)
{
    *out = (pdk_token_answer){0};
    json_error_t jerr;
    json_t *answer =
        len <= ANSWER_MAX ? json_loadb(data ? data : "", len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    int r;
    if (!json_is_object(answer))
        r = pdk_error_set(err, 0,
                          "credential %s: the token endpoint answered HTTP %ld with something "
                          "else than JSON",
                          credential, status);
    else if (kind == PDK_TOKEN_OAUTH2)
        r = oauth2(status, answer, credential, refresh_secret, out, err);
    else
        r = feishu(status, answer, credential, out, err);
    json_decref(answer); /* (jansson does not wipe its copies: they live a moment) */
    if (r < 0)
        pdk_token_answer_clear(out);
    return r;
}

void pdk_token_answer_clear(pdk_token_answer *a)
{
    pdk_free_secret(a->token);
    pdk_free_secret(a->refresh_token);
    *a = (pdk_token_answer){0};
}

char *pdk_token_cache_format(const char *token, int64_t expires_ns, int64_t lifetime_ns)
{
    return xasprintf("%s %lld %lld", token, (long long)expires_ns, (long long)lifetime_ns);
}

static bool number(const char *s, const char **end, int64_t *out)
{
    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    char *e = NULL;
    long long v = strtoll(s, &e, 10);
    if (errno || e == s)
        return false;
    *out = v;
    *end = e;
    return true;
}

bool pdk_token_cache_parse(const char *entry, char **token, int64_t *expires_ns,
                           int64_t *lifetime_ns)
{
    *token = NULL;
    const char *space = entry ? strchr(entry, ' ') : NULL;
    if (!space || space == entry)
        return false;
    const char *p = space + 1, *end = NULL;
    int64_t e = 0, l = 0;
    if (!number(p, &end, &e) || *end != ' ' || !number(end + 1, &end, &l) || *end || l <= 0)
        return false;
    *token = xstrndup(entry, (size_t)(space - entry));
    *expires_ns = e;
    *lifetime_ns = l;
    return true;
}
