/* gateway_headers.c: see gateway_headers.h. */
#include "gateway_headers.h"

#include "util.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool scan_string(const pdk_placeholder_set *set, bool (*wanted)(void *arg, int id),
                        void *arg, const char *s, pdk_placeholder_found *found)
{
    return s && pdk_placeholder_scan_string(set, wanted, arg, s, strlen(s), found);
}

bool pdk_headers_find_placeholder(const pdk_http_head *h, const pdk_placeholder_set *set,
                                  bool (*wanted)(void *arg, int id), void *arg,
                                  pdk_placeholder_found *found, char **where)
{
    *where = NULL;
    if (scan_string(set, wanted, arg, h->target, found)) {
        *where = xstrdup(h->method_id == HTTP_CONNECT ? "destination" : "URL");
        return true;
    }
    /* field names one by one; the values as one text, in order, as an upstream that joins
     * them would read them (a placeholder cut in two across two fields is found) */
    for (size_t k = 0; k < h->header_count; k++)
        if (scan_string(set, wanted, arg, h->headers[k].name, found)) {
            *where = xasprintf("field name %.64s", h->headers[k].name);
            return true;
        }
    pdk_placeholder_scan values;
    pdk_placeholder_scan_start(&values, set, wanted, arg);
    for (size_t k = 0; k < h->header_count; k++)
        if (pdk_placeholder_scan_feed(&values, h->headers[k].value, strlen(h->headers[k].value),
                                      found) ||
            (k + 1 == h->header_count && pdk_placeholder_scan_break(&values, found))) {
            *where = xasprintf("%.64s field", h->headers[k].name); /* (where it ends) */
            return true;
        }
    return false;
}

static bool names_field(const pdk_credential *cred, const char *name)
{
    for (char **f = cred->replace_in_headers; f && *f; f++)
        if (strcasecmp(*f, name) == 0)
            return true;
    return false;
}

static bool has_body(const pdk_http_head *h)
{
    return !h->upgrade &&
           (h->framing == PDK_HTTP_FRAMING_CHUNKED ||
            (h->framing == PDK_HTTP_FRAMING_CONTENT_LENGTH && h->content_length > 0));
}

/* s with every needle replaced by with (new string), or NULL when needle is not in s. */
static char *replaced(const char *s, const char *needle, const char *with)
{
    if (!s || !needle || !*needle || !with || !strstr(s, needle))
        return NULL;
    pdk_buf b = {0};
    pdk_buf_replace_all(&b, s, strlen(s), needle, with);
    return pdk_buf_steal(&b);
}

static void wipe_free(char *s)
{
    if (s) {
        sodium_memzero(s, strlen(s));
        free(s);
    }
}

pdk_headers_outcome pdk_headers_put_credentials(pdk_http_head *h,
                                                const pdk_headers_credential *creds, size_t count,
                                                bool tls, uint64_t body_max, pdk_headers_put *out)
{
    out->refused = 0;
    out->rewrite_body = false;
    out->placeholders_left = NULL;
    for (size_t i = 0; out->used && i < count; i++)
        out->used[i] = false;
    /* what each would put on, checked before anything is */
    for (size_t i = 0; i < count; i++) {
        const pdk_credential *p = creds[i].policy;
        bool puts = p->inject_header != NULL;
        for (size_t k = 0; k < h->header_count && !puts; k++)
            puts = names_field(p, h->headers[k].name) && creds[i].placeholder &&
                   strstr(h->headers[k].value, creds[i].placeholder);
        if (puts && !(p->allow_plain_http || tls)) {
            out->refused = i;
            return PDK_HEADERS_PLAIN_HTTP;
        }
        if (p->replace_in_body && has_body(h) && h->framing == PDK_HTTP_FRAMING_CONTENT_LENGTH &&
            h->content_length > body_max)
            return PDK_HEADERS_BODY_TOO_LARGE;
    }
    for (size_t i = 0; i < count; i++) {
        const pdk_credential *p = creds[i].policy;
        bool used = false;
        /* Setting a field removes its later namesakes, which moves the fields after them:
         * after each one set, from the start again (the ones set hold no placeholder now) */
        for (size_t k = 0; k < h->header_count;) {
            char *v = names_field(p, h->headers[k].name)
                          ? replaced(h->headers[k].value, creds[i].placeholder, creds[i].value)
                          : NULL;
            bool set = false;
            if (v) {
                _cleanup_free_ char *name = xstrdup(h->headers[k].name);
                pdk_error err = {0};
                set = pdk_http_head_set(h, name, v, &err) == 0;
                used = used || set;
            }
            wipe_free(v);
            k = set ? 0 : k + 1;
        }
        if (p->inject_header) {
            char *v = replaced(p->inject_value, "{token}", creds[i].value);
            pdk_error err = {0};
            if (v && pdk_http_head_set(h, p->inject_header, v, &err) == 0)
                used = true;
            wipe_free(v);
        }
        if (p->replace_in_body && has_body(h))
            out->rewrite_body = true;
        if (used && out->used)
            out->used[i] = true;
    }
    /* a placeholder left where no credential of this host replaces it: it goes on as it
     * is (worth nothing), and the caller says where */
    for (size_t k = 0; k < h->header_count; k++)
        for (size_t i = 0; i < count; i++)
            if (creds[i].placeholder && *creds[i].placeholder &&
                strstr(h->headers[k].value, creds[i].placeholder) &&
                !pdk_strv_contains(out->placeholders_left, h->headers[k].name))
                pdk_strv_push(&out->placeholders_left, h->headers[k].name);
    if (count > 0) {
        /* answers come unencoded, so that they can be masked (gateway_mask.c) */
        pdk_error err = {0};
        (void)pdk_http_head_set(h, "Accept-Encoding", "identity", &err);
    }
    return PDK_HEADERS_PUT;
}

void pdk_headers_put_free(pdk_headers_put *put)
{
    pdk_strv_free(put->placeholders_left);
    put->placeholders_left = NULL;
}

void pdk_headers_response_where(const char *head, size_t offset, char *where, size_t size)
{
    const char *at = head + offset, *line = at;
    while (line > head && line[-1] != '\n')
        line--;
    if (line == head) {
        snprintf(where, size, "response status line");
        return;
    }
    size_t name = strcspn(line, ":\r\n");
    if (at < line + name) /* (begins in the name: a name made of it) */
        snprintf(where, size, "response field name");
    else
        snprintf(where, size, "response field %.*s", (int)(name > 64 ? 64 : name), line);
}

bool pdk_headers_body_encoded(const pdk_http_head *response, const char **coding)
{
    const char *c = pdk_http_head_get(response, "Content-Encoding");
    if (coding)
        *coding = c;
    bool body =
        !response->upgrade &&
        (response->framing == PDK_HTTP_FRAMING_CHUNKED ||
         response->framing == PDK_HTTP_FRAMING_UNTIL_CLOSE ||
         (response->framing == PDK_HTTP_FRAMING_CONTENT_LENGTH && response->content_length > 0));
    return body && c && *c && strcasecmp(c, "identity") != 0;
}
