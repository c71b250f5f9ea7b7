/* fuzz_http.c: libFuzzer target for HTTP/1.1 heads and framing (src/gateway/http_message.c).
 *
 * Input: one control byte, then the stream. Control bit 0 chooses a request stream (bit 1:
 * a TLS connection) or a response stream (bits 2-3: the method of the first request,
 * then GET, HEAD, CONNECT, POST in turn); bit 4 chooses small limits, so that 414 and 431
 * are reached.
 *
 * The stream is parsed three times: whole, one byte at a time, and in pseudo-random pieces
 * drawn from the data. Checked with abort():
 *   - consumed never exceeds what was given, and a body slice is exactly the consumed
 *     prefix of the input given;
 *   - the three runs give the same events: heads (their method, target, destination,
 *     status, framing, fields), body bytes per message, completions, the error's status and
 *     reason, the end;
 *   - libhttp-parser and the scanner never disagree on a boundary;
 *   - a head serialised by pdk_http_head_serialize() parses again to the same method,
 *     destination, framing and end-to-end fields;
 *   - the stream read as a request body (pdk_http_looks_like_request_line) is decided the
 *     same by every prefix that decides it, and by the whole;
 *   - a request body looked at before the parser reads it (pdk_body_prefix_scan, what a
 *     request held for a human shows) ends where the parser says it does, and no prefix of
 *     it is taken for a whole body of another length.
 * Leaks are ASan's. Built with -fsanitize=fuzzer (fuzz/meson.build, -Dfuzz=true) and,
 * without libFuzzer, as fuzz-http-replay (replay.c) for the committed corpus.
 */
#include "http_message.h"
#include "secret_mask.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const enum http_method response_methods[] = {HTTP_GET, HTTP_HEAD, HTTP_CONNECT, HTTP_POST};

struct setup {
    pdk_http_kind kind;
    pdk_http_config config;
    unsigned first_method;
};

static void check(bool ok)
{
    if (!ok)
        abort();
}

static const char *or_dash(const char *s)
{
    return s ? s : "-";
}

static void describe_head(pdk_buf *log, const pdk_http_head *h)
{
    if (h->request)
        pdk_buf_printf(log, "HEAD %s %s %s %s %u %s %s", h->method, h->target, or_dash(h->scheme),
                       h->host, (unsigned)h->port, or_dash(h->path), or_dash(h->query));
    else
        pdk_buf_printf(log, "HEAD %d %s", h->status, h->reason);
    pdk_buf_printf(log, " f%d %llu ka%d up%d %s 1.%d\n", (int)h->framing,
                   (unsigned long long)h->content_length, h->keep_alive, h->upgrade,
                   or_dash(h->upgrade_protocol), h->version_minor);
    for (size_t i = 0; i < h->header_count; i++)
        pdk_buf_printf(log, " %s: %s %d\n", h->headers[i].name, h->headers[i].value,
                       h->headers[i].hop_by_hop);
}

static bool same_end_to_end_fields(const pdk_http_head *a, const pdk_http_head *b)
{
    size_t i = 0, j = 0;
    for (;;) {
        while (i < a->header_count && a->headers[i].hop_by_hop)
            i++;
        while (j < b->header_count && b->headers[j].hop_by_hop)
            j++;
        if (i == a->header_count || j == b->header_count)
            return i == a->header_count && j == b->header_count;
        if (strcmp(a->headers[i].name, b->headers[j].name) != 0 ||
            strcmp(a->headers[i].value, b->headers[j].value) != 0)
            return false;
        i++, j++;
    }
}

static bool same_string(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

/* Serialise a parsed head and parse it again: what is forwarded means the same. */
static void check_reparse(const pdk_http_head *h, enum http_method method)
{
    pdk_buf wire = {0};
    pdk_http_head_serialize(h, &wire);
    pdk_http_config config = {
        .max_headers = 1000,
        .max_head_bytes = 80 * 1024,
        .tls = h->scheme && strcmp(h->scheme, "https") == 0,
    };
    pdk_http_parser *p =
        pdk_http_parser_new(h->request ? PDK_HTTP_REQUEST : PDK_HTTP_RESPONSE, &config);
    pdk_http_parser_set_request_method(p, method);
    pdk_http_result r;
    pdk_http_event ev = pdk_http_parse(p, wire.data, wire.len, &r);
    check(ev == PDK_HTTP_HEAD && r.consumed == wire.len);
    const pdk_http_head *g = r.head;
    check(g->request == h->request && g->version_minor == 1 && g->framing == h->framing &&
          g->content_length == h->content_length && g->upgrade == h->upgrade &&
          same_string(g->upgrade_protocol, h->upgrade_protocol) && same_end_to_end_fields(h, g));
    if (h->request) {
        check(strcmp(g->method, h->method) == 0 && g->method_id == h->method_id);
        check(same_string(g->host, h->host) && g->port == h->port &&
              same_string(g->path, h->path) && same_string(g->query, h->query) &&
              same_string(g->scheme, h->scheme));
        check(g->target_form == h->target_form || (h->target_form == PDK_HTTP_TARGET_ABSOLUTE &&
                                                   g->target_form == PDK_HTTP_TARGET_ORIGIN));
    } else {
        check(g->status == h->status && strcmp(g->reason, h->reason) == 0);
    }
    pdk_http_parser_free(p);
    pdk_buf_free(&wire);
}

/* A body's bytes looked at before the parser reads them (data: what follows its head):
 * every prefix that the scan takes for a whole body gives the same length as the whole
 * does. The scan of everything is returned. */
static pdk_body_prefix prefix_scan(const pdk_http_head *h, const char *data, size_t len)
{
    bool chunked = h->framing == PDK_HTTP_FRAMING_CHUNKED;
    pdk_buf content = {0};
    pdk_body_prefix whole =
        pdk_body_prefix_scan(chunked, h->content_length, data, len, &content, 64);
    check(whole.raw <= len && whole.content <= whole.raw && content.len <= 64 &&
          content.len <= whole.content);
    pdk_buf_free(&content);
    for (size_t n = 0; n <= len && n <= 600; n++) {
        pdk_body_prefix p = pdk_body_prefix_scan(chunked, h->content_length, data, n, NULL, 0);
        check(p.raw <= n && p.content <= whole.content);
        if (p.complete)
            check(whole.complete && p.raw == whole.raw && p.content == whole.content);
    }
    return whole;
}

/* Parse the stream in pieces (step 0: whole; 1: bytes; else pseudo-random sizes seeded by
 * step) and log the events. */
static char *run(const struct setup *s, const char *data, size_t size, uint32_t step, bool reparse)
{
    pdk_http_parser *p = pdk_http_parser_new(s->kind, &s->config);
    unsigned next_method = s->first_method;
    enum http_method method = response_methods[next_method++ % 4];
    pdk_http_parser_set_request_method(p, method);
    pdk_buf log = {0};
    uint64_t body = 0;
    pdk_body_prefix held = {0};
    bool held_scanned = false;
    uint32_t seed = step;
    size_t off = 0;
    bool done = false;
    while (!done && off < size) {
        size_t piece = size - off;
        if (step == 1) {
            piece = 1;
        } else if (step > 1) {
            seed = seed * 1103515245u + 12345u;
            size_t limit = (seed >> 16) % 64 + 1;
            if (piece > limit)
                piece = limit;
        }
        const char *d = data + off;
        size_t n = piece;
        off += piece;
        while (!done) {
            pdk_http_result r;
            pdk_http_event ev = pdk_http_parse(p, d, n, &r);
            check(r.consumed <= n);
            switch (ev) {
            case PDK_HTTP_NEED_MORE:
                check(r.consumed == n);
                break;
            case PDK_HTTP_HEAD:
                check(r.head != NULL);
                describe_head(&log, r.head);
                if (reparse)
                    check_reparse(r.head, method);
                /* (step 0: the rest of the stream is all there) */
                held_scanned = step == 0 && r.head->request &&
                               (r.head->framing == PDK_HTTP_FRAMING_CHUNKED ||
                                r.head->framing == PDK_HTTP_FRAMING_CONTENT_LENGTH);
                if (held_scanned)
                    held = prefix_scan(r.head, d + r.consumed, n - r.consumed);
                break;
            case PDK_HTTP_BODY:
                check(r.body == d && r.body_len == r.consumed && r.body_len > 0);
                body += r.body_len;
                break;
            case PDK_HTTP_MESSAGE_COMPLETE:
                check(r.consumed == 0 && r.head != NULL);
                pdk_buf_printf(&log, "BODY %llu\nCOMPLETE\n", (unsigned long long)body);
                if (held_scanned) /* the held body ends where the parser's does */
                    check(held.complete && held.raw == body);
                held_scanned = false;
                body = 0;
                if (s->kind == PDK_HTTP_RESPONSE && r.head->status >= 200) {
                    method = response_methods[next_method++ % 4];
                    pdk_http_parser_set_request_method(p, method);
                }
                break;
            case PDK_HTTP_ERROR:
                check(r.consumed == 0 && r.reason && r.status >= 400 && r.status <= 505);
                /* The two parsers never disagree: that would be a smuggling vector. */
                check(strcmp(r.reason, "parsers disagree on the message framing") != 0);
                pdk_buf_printf(&log, "BODY %llu\nERROR %d %s\n", (unsigned long long)body, r.status,
                               r.reason);
                done = true;
                break;
            case PDK_HTTP_END:
            default:
                abort();
            }
            d += r.consumed;
            n -= r.consumed;
            if (ev == PDK_HTTP_NEED_MORE)
                break;
        }
    }
    while (!done) {
        pdk_http_result r;
        pdk_http_event ev = pdk_http_parse_eof(p, &r);
        if (ev == PDK_HTTP_MESSAGE_COMPLETE) {
            pdk_buf_printf(&log, "BODY %llu\nCOMPLETE\n", (unsigned long long)body);
            body = 0;
        } else if (ev == PDK_HTTP_END) {
            pdk_buf_puts(&log, "END\n");
            done = true;
        } else {
            check(ev == PDK_HTTP_ERROR && r.reason);
            check(strcmp(r.reason, "parsers disagree on the message framing") != 0);
            pdk_buf_printf(&log, "BODY %llu\nERROR %d %s\n", (unsigned long long)body, r.status,
                           r.reason);
            done = true;
        }
    }
    pdk_http_parser_free(p);
    return pdk_buf_steal(&log);
}

/* The stream as a request body (pdk_http_looks_like_request_line): a whole body is always
 * decided, and once a prefix is decided every longer prefix, and the whole, decides the
 * same. */
static void check_request_line(const char *body, size_t size)
{
    int whole = pdk_http_looks_like_request_line(body, size, true);
    check(whole == 0 || whole == 1);
    int decided = -1;
    for (size_t n = 0; n <= size; n = n < 512 ? n + 1 : (n < size ? size : n + 1)) {
        int r = pdk_http_looks_like_request_line(body, n, false);
        check(r >= -1 && r <= 1);
        if (decided >= 0)
            check(r == decided);
        else if (r >= 0)
            decided = r;
        int c = pdk_http_looks_like_request_line(body, n, true);
        check(c == 0 || c == 1);
        if (r >= 0)
            check(c == r);
    }
    check(decided < 0 || decided == whole);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t control = data[0];
    struct setup s = {
        .kind = (control & 1) ? PDK_HTTP_RESPONSE : PDK_HTTP_REQUEST,
        .config = {.tls = (control & 2) != 0},
        .first_method = (control >> 2) & 3,
    };
    if (control & 0x10) {
        s.config.max_head_bytes = 200;
        s.config.max_headers = 6;
        s.config.max_target_bytes = 40;
    }
    const char *stream = (const char *)data + 1;
    size -= 1;
    uint32_t seed = 2;
    for (size_t i = 0; i < size && i < 16; i++)
        seed = seed * 31 + (uint8_t)stream[i];

    char *whole = run(&s, stream, size, 0, true);
    char *bytes = run(&s, stream, size, 1, false);
    char *pieces = run(&s, stream, size, seed | 2, false);
    check(strcmp(whole, bytes) == 0);
    check(strcmp(whole, pieces) == 0);
    free(whole);
    free(bytes);
    free(pieces);
    check_request_line(stream, size);
    return 0;
}
