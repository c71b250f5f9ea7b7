/* test_http_message.c: HTTP/1.1 heads and framing (src/gateway/http_message.c).
 *
 * Most tests feed a byte stream and compare a trace of the events: one line per head
 * ("HEAD GET /a"), the body bytes of each message concatenated ("BODY abc", whatever the
 * split), "COMPLETE", "END", and "ERROR <status> <reason>". The same stream fed whole, cut at
 * every position and fed one byte at a time must give the same trace. No network.
 */
#include "http_message.h"
#include "util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define NO_METHOD (-1)

struct feed {
    pdk_http_kind kind;
    pdk_http_config config;
    const int *methods; /* responses: request methods in order, ended by NO_METHOD */
    bool eof;
};

static void trace_head(pdk_buf *t, const pdk_http_head *h)
{
    if (h->request)
        pdk_buf_printf(t, "HEAD %s %s\n", h->method, h->target);
    else
        pdk_buf_printf(t, "HEAD %d\n", h->status);
}

static void flush_body(pdk_buf *t, pdk_buf *body)
{
    if (body->len) {
        pdk_buf_puts(t, "BODY ");
        pdk_buf_append(t, body->data, body->len);
        pdk_buf_puts(t, "\n");
        body->len = 0;
    }
}

/* Feed data[0..len) cut at the given offsets (ascending); step > 0 cuts every step bytes
 * instead. Returns the trace (to free). */
static char *trace(const struct feed *f, const char *data, size_t len, const size_t *cuts,
                   size_t ncuts, size_t step)
{
    pdk_http_parser *p = pdk_http_parser_new(f->kind, &f->config);
    pdk_buf t = {0}, body = {0};
    size_t next_method = 0;
    if (f->methods && f->methods[0] != NO_METHOD)
        pdk_http_parser_set_request_method(p, (enum http_method)f->methods[next_method++]);
    size_t off = 0, cut = 0;
    bool stopped = false;
    while (off < len && !stopped) {
        size_t end = step ? off + step : (cut < ncuts ? cuts[cut++] : len);
        if (end > len || end <= off)
            end = len;
        const char *d = data + off;
        size_t n = end - off;
        off = end;
        for (;;) {
            pdk_http_result r;
            pdk_http_event ev = pdk_http_parse(p, d, n, &r);
            assert_true(r.consumed <= n);
            d += r.consumed;
            n -= r.consumed;
            if (ev == PDK_HTTP_NEED_MORE) {
                assert_int_equal(n, 0);
                break;
            }
            if (ev == PDK_HTTP_HEAD) {
                trace_head(&t, r.head);
            } else if (ev == PDK_HTTP_BODY) {
                assert_ptr_equal(r.body + r.body_len, d);
                pdk_buf_append(&body, r.body, r.body_len);
            } else if (ev == PDK_HTTP_MESSAGE_COMPLETE) {
                flush_body(&t, &body);
                pdk_buf_puts(&t, "COMPLETE\n");
                if (f->kind == PDK_HTTP_RESPONSE && r.head && r.head->status >= 200 && f->methods &&
                    f->methods[next_method] != NO_METHOD)
                    pdk_http_parser_set_request_method(p,
                                                       (enum http_method)f->methods[next_method++]);
            } else if (ev == PDK_HTTP_ERROR) {
                flush_body(&t, &body);
                pdk_buf_printf(&t, "ERROR %d %s\n", r.status, r.reason);
                stopped = true;
                break;
            } else {
                fail_msg("unexpected event %d", ev);
            }
        }
    }
    while (f->eof && !stopped) {
        pdk_http_result r;
        pdk_http_event ev = pdk_http_parse_eof(p, &r);
        flush_body(&t, &body);
        if (ev == PDK_HTTP_MESSAGE_COMPLETE) {
            pdk_buf_puts(&t, "COMPLETE\n");
        } else if (ev == PDK_HTTP_END) {
            pdk_buf_puts(&t, "END\n");
            break;
        } else {
            assert_int_equal(ev, PDK_HTTP_ERROR);
            pdk_buf_printf(&t, "ERROR %d %s\n", r.status, r.reason);
            break;
        }
    }
    flush_body(&t, &body);
    pdk_buf_free(&body);
    pdk_http_parser_free(p);
    if (!t.data)
        pdk_buf_puts(&t, "");
    return pdk_buf_steal(&t);
}

/* The trace of data fed whole, after checking that every single cut and byte-at-a-time
 * feeding give the same. */
static char *trace_all_splits(const struct feed *f, const char *data, size_t len)
{
    char *whole = trace(f, data, len, NULL, 0, 0);
    for (size_t k = 1; k < len; k++) {
        char *split = trace(f, data, len, &k, 1, 0);
        if (strcmp(whole, split) != 0)
            fail_msg("cut at %zu:\n%s\nwhole:\n%s", k, split, whole);
        free(split);
    }
    char *bytes = trace(f, data, len, NULL, 0, 1);
    if (strcmp(whole, bytes) != 0)
        fail_msg("byte by byte:\n%s\nwhole:\n%s", bytes, whole);
    free(bytes);
    return whole;
}

static void assert_trace_kind(pdk_http_kind kind, const int *methods, bool eof, const char *data,
                              size_t len, const char *want)
{
    struct feed f = {.kind = kind, .methods = methods, .eof = eof};
    char *got = trace_all_splits(&f, data, len);
    if (strcmp(got, want) != 0)
        fail_msg("input:\n%.*s\ngot:\n%s\nwant:\n%s", (int)len, data, got, want);
    free(got);
}

#define assert_requests(data, want)                                                                \
    assert_trace_kind(PDK_HTTP_REQUEST, NULL, false, data, sizeof(data) - 1, want)
#define assert_requests_eof(data, want)                                                            \
    assert_trace_kind(PDK_HTTP_REQUEST, NULL, true, data, sizeof(data) - 1, want)

/* Parse one request head (whole); fails the test unless a HEAD comes. */
static pdk_http_parser *parse_one(const char *data, const pdk_http_config *config,
                                  pdk_http_result *r)
{
    pdk_http_parser *p = pdk_http_parser_new(PDK_HTTP_REQUEST, config);
    pdk_http_event ev = pdk_http_parse(p, data, strlen(data), r);
    if (ev != PDK_HTTP_HEAD)
        fail_msg("event %d (%d %s) for:\n%s", ev, r->status, r->reason ? r->reason : "", data);
    return p;
}

/* The error a request stream gets, fed whole and byte by byte. */
static void assert_refused_with(const pdk_http_config *config, const char *data, size_t len,
                                int status, const char *reason)
{
    struct feed f = {.kind = PDK_HTTP_REQUEST};
    if (config)
        f.config = *config;
    char *got = trace_all_splits(&f, data, len);
    char want[256];
    snprintf(want, sizeof(want), "ERROR %d %s\n", status, reason);
    const char *error = strstr(got, "ERROR");
    if (!error || strcmp(error, want) != 0)
        fail_msg("input:\n%.*s\ngot:\n%s\nwant last line:\n%s", (int)len, data, got, want);
    free(got);
}

#define assert_refused(data, status, reason)                                                       \
    assert_refused_with(NULL, data, sizeof(data) - 1, status, reason)

/* ---- Requests ---- */

static void simple_get(void **state)
{
    (void)state;
    static const char get[] = "GET /index.html?a=1&b HTTP/1.1\r\n"
                              "Host: Example.COM:8080\r\n"
                              "User-Agent: test/1.0\r\n"
                              "X-Empty:\r\n"
                              "x-Case:  spaced value \t\r\n"
                              "\r\n";
    pdk_http_result r;
    pdk_http_parser *p = parse_one(get, NULL, &r);
    pdk_http_head *h = r.head;
    assert_true(h->request);
    assert_string_equal(h->method, "GET");
    assert_int_equal(h->method_id, HTTP_GET);
    assert_string_equal(h->target, "/index.html?a=1&b");
    assert_int_equal(h->target_form, PDK_HTTP_TARGET_ORIGIN);
    assert_string_equal(h->scheme, "http");
    assert_string_equal(h->host, "example.com");
    assert_int_equal(h->port, 8080);
    assert_string_equal(h->path, "/index.html");
    assert_string_equal(h->query, "a=1&b");
    assert_int_equal(h->version_minor, 1);
    assert_int_equal(h->framing, PDK_HTTP_FRAMING_NONE);
    assert_true(h->keep_alive);
    assert_false(h->upgrade);
    assert_false(h->expect_continue);
    assert_int_equal(h->header_count, 4);
    assert_string_equal(h->headers[0].name, "Host");
    assert_string_equal(h->headers[0].value, "Example.COM:8080");
    assert_string_equal(h->headers[2].name, "X-Empty");
    assert_string_equal(h->headers[2].value, "");
    assert_string_equal(h->headers[3].name, "x-Case");
    assert_string_equal(h->headers[3].value, "spaced value");
    assert_string_equal(pdk_http_head_get(h, "user-agent"), "test/1.0");
    assert_string_equal(pdk_http_head_get(h, "X-CASE"), "spaced value");
    assert_null(pdk_http_head_get(h, "Cookie"));
    /* The whole head was consumed; the message (no body) completes on the next call. */
    assert_int_equal(r.consumed, sizeof(get) - 1);
    assert_int_equal(pdk_http_parse(p, "", 0, &r), PDK_HTTP_MESSAGE_COMPLETE);
    assert_int_equal(pdk_http_parse(p, "", 0, &r), PDK_HTTP_NEED_MORE);
    pdk_http_parser_free(p);

    assert_requests("GET / HTTP/1.1\r\nHost: a\r\n\r\n", "HEAD GET /\nCOMPLETE\n");
    /* Blank lines before a request are ignored (RFC 9112 2.2), not bare LFs. */
    assert_requests("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", "HEAD GET /\nCOMPLETE\n");
    assert_refused("\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "bare LF (line not ended by CRLF)");
}

static void absolute_form(void **state)
{
    (void)state;
    pdk_http_result r;
    pdk_http_parser *p = parse_one("GET http://Example.com:8080/a/b?x=1 HTTP/1.1\r\n"
                                   "Host: other.example\r\n"
                                   "Accept: */*\r\n\r\n",
                                   NULL, &r);
    pdk_http_head *h = r.head;
    assert_int_equal(h->target_form, PDK_HTTP_TARGET_ABSOLUTE);
    assert_string_equal(h->scheme, "http");
    assert_string_equal(h->host, "example.com");
    assert_int_equal(h->port, 8080);
    assert_string_equal(h->path, "/a/b");
    assert_string_equal(h->query, "x=1");
    /* RFC 9112 3.2.2: the disagreeing Host is replaced by the target's authority, in place. */
    assert_string_equal(h->headers[0].name, "Host");
    assert_string_equal(h->headers[0].value, "example.com:8080");
    assert_int_equal(h->header_count, 2);
    pdk_http_parser_free(p);

    /* https, default port; no Host: one is added; no path: "/". */
    p = parse_one("GET HTTPS://[2001:DB8::1]?q HTTP/1.1\r\n\r\n", NULL, &r);
    h = r.head;
    assert_string_equal(h->scheme, "https");
    assert_string_equal(h->host, "2001:db8::1");
    assert_int_equal(h->port, 443);
    assert_string_equal(h->path, "/");
    assert_string_equal(h->query, "q");
    assert_int_equal(h->header_count, 1);
    assert_string_equal(pdk_http_head_get(h, "host"), "[2001:db8::1]");
    pdk_http_parser_free(p);

    /* A Host equal but for case is left as sent. */
    p = parse_one("GET http://a.example/ HTTP/1.1\r\nHost: A.Example\r\n\r\n", NULL, &r);
    assert_string_equal(pdk_http_head_get(r.head, "host"), "A.Example");
    assert_null(r.head->query);
    pdk_http_parser_free(p);

    assert_refused("GET http://user:pw@example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 400,
                   "userinfo (user@host) in the request target");
    assert_refused("GET ftp://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 400,
                   "request target is not origin-form or an http(s) URL");
    assert_refused("GET http://example.com:0/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 400,
                   "invalid port in the request target");
    assert_refused("GET http://example.com:65536/ HTTP/1.1\r\n\r\n", 400,
                   "invalid port in the request target");
    assert_refused("GET http://exa%6dple.com/ HTTP/1.1\r\n\r\n", 400,
                   "invalid host in the request target");
    assert_refused("GET http://[::1%25eth0]/ HTTP/1.1\r\n\r\n", 400,
                   "invalid host in the request target");
    assert_refused("GET /a#frag HTTP/1.1\r\nHost: a\r\n\r\n", 400,
                   "fragment in the request target");
    /* The Host field is checked even when the target replaces it. */
    assert_refused("GET http://a/ HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400,
                   "several Host headers");
}

static void connect_requests(void **state)
{
    (void)state;
    pdk_http_result r;
    const char *connect = "CONNECT Example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"
                          "\x16\x03\x01";
    pdk_http_parser *p = pdk_http_parser_new(PDK_HTTP_REQUEST, NULL);
    assert_int_equal(pdk_http_parse(p, connect, strlen(connect), &r), PDK_HTTP_HEAD);
    pdk_http_head *h = r.head;
    assert_int_equal(h->method_id, HTTP_CONNECT);
    assert_int_equal(h->target_form, PDK_HTTP_TARGET_AUTHORITY);
    assert_null(h->scheme);
    assert_null(h->path);
    assert_string_equal(h->host, "example.com");
    assert_int_equal(h->port, 443);
    assert_true(h->upgrade);
    assert_null(h->upgrade_protocol);
    assert_int_equal(h->framing, PDK_HTTP_FRAMING_NONE);
    /* The tunnel's first bytes are not consumed: they are the caller's to relay. */
    size_t head_len = r.consumed;
    assert_int_equal(head_len, strlen(connect) - 3);
    assert_int_equal(pdk_http_parse(p, connect + head_len, 3, &r), PDK_HTTP_MESSAGE_COMPLETE);
    assert_int_equal(r.consumed, 0);
    /* Stopped: bytes are refused (without ending the parser)... */
    assert_int_equal(pdk_http_parse(p, connect + head_len, 3, &r), PDK_HTTP_ERROR);
    assert_int_equal(r.consumed, 0);
    assert_int_equal(r.status, 400);
    assert_int_equal(pdk_http_parse(p, "", 0, &r), PDK_HTTP_NEED_MORE);
    /* ...until the CONNECT is refused by the gateway and HTTP goes on. */
    assert_int_equal(pdk_http_parser_resume(p), 0);
    assert_int_equal(pdk_http_parser_resume(p), -1);
    const char *next = "GET / HTTP/1.1\r\nHost: b\r\n\r\n";
    assert_int_equal(pdk_http_parse(p, next, strlen(next), &r), PDK_HTTP_HEAD);
    assert_string_equal(r.head->host, "b");
    pdk_http_parser_free(p);

    p = parse_one("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n", NULL, &r);
    assert_string_equal(r.head->host, "2001:db8::1");
    assert_int_equal(r.head->port, 8443);
    pdk_buf out = {0};
    pdk_http_head_serialize(r.head, &out);
    assert_string_equal(out.data, "CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n");
    pdk_buf_free(&out);
    pdk_http_parser_free(p);

    assert_requests("CONNECT a:1 HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
                    "HEAD CONNECT a:1\nCOMPLETE\n");
    assert_refused("CONNECT example.com HTTP/1.1\r\n\r\n", 400, "CONNECT target without a port");
    assert_refused("CONNECT /path HTTP/1.1\r\nHost: a\r\n\r\n", 400,
                   "invalid host in the request target");
    assert_refused("CONNECT u@a:443 HTTP/1.1\r\n\r\n", 400,
                   "userinfo (user@host) in the request target");
    assert_refused("CONNECT a:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", 400,
                   "CONNECT with a body");
    assert_refused("CONNECT a:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
                   "CONNECT with a body");
}

static void origin_form_host(void **state)
{
    (void)state;
    pdk_http_result r;
    pdk_http_config tls = {.tls = true};
    pdk_http_parser *p = parse_one("GET /x HTTP/1.1\r\nHost: API.example.com\r\n\r\n", &tls, &r);
    assert_string_equal(r.head->scheme, "https");
    assert_string_equal(r.head->host, "api.example.com");
    assert_int_equal(r.head->port, 443);
    assert_string_equal(r.head->path, "/x");
    assert_null(r.head->query);
    pdk_http_parser_free(p);

    p = parse_one("GET /x HTTP/1.0\r\nHost: [::1]:81\r\n\r\n", NULL, &r);
    assert_string_equal(r.head->host, "::1");
    assert_int_equal(r.head->port, 81);
    pdk_http_parser_free(p);

    p = parse_one("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", NULL, &r);
    assert_int_equal(r.head->target_form, PDK_HTTP_TARGET_ASTERISK);
    assert_string_equal(r.head->path, "*");
    pdk_http_parser_free(p);

    assert_refused("GET / HTTP/1.1\r\n\r\n", 400, "no Host header");
    assert_refused("GET / HTTP/1.0\r\n\r\n", 400, "no Host header");
    assert_refused("GET / HTTP/1.1\r\nHost: a\r\nHOST: a\r\n\r\n", 400, "several Host headers");
    assert_refused("GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", 400,
                   "userinfo (user@host) in the Host header");
    assert_refused("GET / HTTP/1.1\r\nHost: a:b\r\n\r\n", 400, "invalid port in the Host header");
    assert_refused("GET / HTTP/1.1\r\nHost:\r\n\r\n", 400, "invalid Host header");
    assert_refused("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "invalid Host header");
    assert_refused("GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400,
                   "asterisk-form target for a method other than OPTIONS");
    /* (libhttp-parser refuses this one first, on its first digit) */
    assert_refused("GET example.com:80 HTTP/1.1\r\nHost: a\r\n\r\n", 400, "invalid request target");
    assert_refused("GET mailto:x HTTP/1.1\r\nHost: a\r\n\r\n", 400, "invalid request target");
}

static bool keep_alive_of(const char *data)
{
    pdk_http_result r;
    pdk_http_parser *p = parse_one(data, NULL, &r);
    bool keep_alive = r.head->keep_alive;
    pdk_http_parser_free(p);
    return keep_alive;
}

static void keep_alive_defaults(void **state)
{
    (void)state;
    assert_true(keep_alive_of("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
    assert_false(keep_alive_of("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"));
    assert_false(keep_alive_of("GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, Close\r\n\r\n"));
    assert_false(keep_alive_of("GET / HTTP/1.0\r\nHost: a\r\n\r\n"));
    assert_true(keep_alive_of("GET / HTTP/1.0\r\nHost: a\r\nConnection: Keep-Alive\r\n\r\n"));
    assert_false(
        keep_alive_of("GET / HTTP/1.0\r\nHost: a\r\nConnection: keep-alive, close\r\n\r\n"));
    /* Proxy-Connection is honoured for this, as libhttp-parser does. */
    assert_false(keep_alive_of("GET / HTTP/1.1\r\nHost: a\r\nProxy-Connection: close\r\n\r\n"));

    /* After a message that closes the connection, nothing more is parsed. */
    assert_requests("GET /1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
                    "GET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
                    "HEAD GET /1\nCOMPLETE\nERROR 400 data after the last message of the "
                    "connection\n");
    assert_refused("GET / HTTP/1.1\r\nHost: a\r\nConnection: a b\r\n\r\n", 400,
                   "invalid Connection header");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nConnection: Content-Length\r\n"
                   "Content-Length: 3\r\n\r\nabc",
                   400, "Connection header names Host, Content-Length or Transfer-Encoding");
}

static void pipelined(void **state)
{
    (void)state;
    /* Bodies end where their framing says; what follows is the next request, whether it
     * came in the same buffer or not. */
    assert_requests_eof("GET /a HTTP/1.1\r\nHost: a\r\n\r\n"
                        "POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
                        "PUT /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                        "3\r\nabc\r\n0\r\n\r\n"
                        "\r\n"
                        "DELETE /d HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
                        "HEAD GET /a\nCOMPLETE\n"
                        "HEAD POST /b\nBODY hello\nCOMPLETE\n"
                        "HEAD PUT /c\nBODY 3\r\nabc\r\n0\r\n\r\n\nCOMPLETE\n"
                        "HEAD DELETE /d\nCOMPLETE\nEND\n");

    /* Each head and body slice found exactly, in one buffer. */
    const char *stream = "POST /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nxyz"
                         "GET /2 HTTP/1.1\r\nHost: a\r\n\r\n";
    pdk_http_parser *p = pdk_http_parser_new(PDK_HTTP_REQUEST, NULL);
    pdk_http_result r;
    const char *d = stream;
    size_t n = strlen(stream);
    size_t head_len = (size_t)(strstr(stream, "xyz") - stream);
    assert_int_equal(pdk_http_parse(p, d, n, &r), PDK_HTTP_HEAD);
    assert_int_equal(r.consumed, head_len);
    assert_int_equal(r.head->framing, PDK_HTTP_FRAMING_CONTENT_LENGTH);
    assert_int_equal(r.head->content_length, 3);
    d += r.consumed, n -= r.consumed;
    assert_int_equal(pdk_http_parse(p, d, n, &r), PDK_HTTP_BODY);
    assert_ptr_equal(r.body, stream + head_len);
    assert_int_equal(r.body_len, 3);
    assert_int_equal(r.consumed, 3);
    d += r.consumed, n -= r.consumed;
    assert_int_equal(pdk_http_parse(p, d, n, &r), PDK_HTTP_MESSAGE_COMPLETE);
    assert_string_equal(r.head->path, "/1");
    assert_int_equal(pdk_http_parse(p, d, n, &r), PDK_HTTP_HEAD);
    assert_string_equal(r.head->path, "/2");
    assert_int_equal(r.consumed, n);
    pdk_http_parser_free(p);
}

static void every_split(void **state)
{
    (void)state;
    /* A stream that touches every scanner state: blank lines, a chunked body with
     * extensions (token and quoted values) and trailers, a Content-Length body, Expect. */
    static const char stream[] =
        "\r\nPOST http://h.example/up?x HTTP/1.1\r\nHost: h.example\r\n"
        "Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
        "4;a=b;c=\"q \\\" d\" ; e\r\nWiki\r\n5 ;x\r\npedia\r\n00\r\nX-Sum: 1\r\nY: 2\r\n\r\n"
        "PATCH /p HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\n\r\n1234567"
        "GET /z HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
    struct feed f = {.kind = PDK_HTTP_REQUEST, .eof = true};
    char *whole = trace_all_splits(&f, stream, sizeof(stream) - 1);
    assert_string_equal(whole, "HEAD POST http://h.example/up?x\n"
                               "BODY 4;a=b;c=\"q \\\" d\" ; e\r\nWiki\r\n5 ;x\r\npedia\r\n00\r\n"
                               "X-Sum: 1\r\nY: 2\r\n\r\n\nCOMPLETE\n"
                               "HEAD PATCH /p\nBODY 1234567\nCOMPLETE\n"
                               "HEAD GET /z\nCOMPLETE\nEND\n");
    /* Two cuts too, around the chunked body. */
    for (size_t a = 90; a < 150; a += 3)
        for (size_t b = a + 1; b < 200; b += 7) {
            size_t cuts[2] = {a, b};
            char *split = trace(&f, stream, sizeof(stream) - 1, cuts, 2, 0);
            if (strcmp(split, whole) != 0)
                fail_msg("cuts at %zu, %zu:\n%s", a, b, split);
            free(split);
        }
    free(whole);
}

static void content_length_body(void **state)
{
    (void)state;
    /* More bytes than Content-Length: the rest is the next message, and here not one. */
    assert_requests("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcdef",
                    "HEAD POST /\nBODY abc\nCOMPLETE\nERROR 501 unknown method\n");
    assert_requests("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 007\r\n\r\nabcdefg",
                    "HEAD POST /\nBODY abcdefg\nCOMPLETE\n");
    assert_requests_eof("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc",
                        "HEAD POST /\nBODY abc\n"
                        "ERROR 400 connection closed in the middle of a body\n");
    pdk_http_result r;
    pdk_http_parser *p = parse_one("PUT / HTTP/1.1\r\nHost: a\r\n"
                                   "Content-Length: 9223372036854775807\r\n\r\n",
                                   NULL, &r);
    assert_int_equal(r.head->content_length, INT64_MAX);
    pdk_http_parser_free(p);
}

static void chunked_body(void **state)
{
    (void)state;
    /* Body slices are the raw chunked framing: exactly the bytes to forward. */
    static const char head[] = "POST /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked \r\n\r\n";
    static const char body[] = "1a; name=value;n2 = \"quoted \\\\ \\\"x\\\"\"\r\n"
                               "abcdefghijklmnopqrstuvwxyz\r\n"
                               "A\r\n0123456789\r\n"
                               "0;last\r\n"
                               "Checksum: abc\r\nX-T: 1\r\n\r\n";
    char stream[512];
    snprintf(stream, sizeof(stream), "%s%sGET / HTTP/1.1\r\nHost: a\r\n\r\n", head, body);
    pdk_http_parser *p = pdk_http_parser_new(PDK_HTTP_REQUEST, NULL);
    pdk_http_result r;
    const char *d = stream;
    size_t n = strlen(stream);
    assert_int_equal(pdk_http_parse(p, d, n, &r), PDK_HTTP_HEAD);
    assert_int_equal(r.consumed, sizeof(head) - 1);
    assert_int_equal(r.head->framing, PDK_HTTP_FRAMING_CHUNKED);
    d += r.consumed, n -= r.consumed;
    assert_int_equal(pdk_http_parse(p, d, n, &r), PDK_HTTP_BODY);
    assert_int_equal(r.body_len, sizeof(body) - 1);
    assert_memory_equal(r.body, body, sizeof(body) - 1);
    d += r.consumed, n -= r.consumed;
    assert_int_equal(pdk_http_parse(p, d, n, &r), PDK_HTTP_MESSAGE_COMPLETE);
    /* Trailer fields are not head fields. */
    assert_null(pdk_http_head_get(r.head, "Checksum"));
    assert_int_equal(pdk_http_parse(p, d, n, &r), PDK_HTTP_HEAD);
    pdk_http_parser_free(p);

    assert_requests("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                    "HEAD POST /\nBODY 0\r\n\r\n\nCOMPLETE\n");
}

static void expect_continue(void **state)
{
    (void)state;
    pdk_http_result r;
    pdk_http_parser *p = parse_one("PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\n"
                                   "Content-Length: 1\r\n\r\n",
                                   NULL, &r);
    assert_true(r.head->expect_continue);
    pdk_http_parser_free(p);
    /* RFC 9110 10.1.1: ignored in HTTP/1.0. */
    p = parse_one("PUT / HTTP/1.0\r\nHost: a\r\nExpect: 100-continue\r\n\r\n", NULL, &r);
    assert_false(r.head->expect_continue);
    pdk_http_parser_free(p);
    assert_refused("PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue, x\r\n\r\n", 417,
                   "unsupported expectation (only 100-continue is)");
}

static void upgrade_websocket(void **state)
{
    (void)state;
    static const char ws[] = "GET /chat HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n"
                             "Connection: keep-alive, Upgrade\r\nSec-WebSocket-Key: k\r\n\r\n"
                             "\x81\x05hello";
    pdk_http_parser *p = pdk_http_parser_new(PDK_HTTP_REQUEST, NULL);
    pdk_http_result r;
    assert_int_equal(pdk_http_parse(p, ws, sizeof(ws) - 1, &r), PDK_HTTP_HEAD);
    assert_true(r.head->upgrade);
    assert_string_equal(r.head->upgrade_protocol, "websocket");
    assert_int_equal(r.consumed, sizeof(ws) - 1 - 7);
    pdk_buf out = {0};
    pdk_http_head_serialize(r.head, &out);
    assert_string_equal(out.data, "GET /chat HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n"
                                  "Sec-WebSocket-Key: k\r\nConnection: upgrade\r\n\r\n");
    pdk_buf_free(&out);
    assert_int_equal(pdk_http_parse(p, "", 0, &r), PDK_HTTP_MESSAGE_COMPLETE);
    assert_int_equal(pdk_http_parse(p, ws + sizeof(ws) - 8, 7, &r), PDK_HTTP_ERROR);
    pdk_http_parser_free(p);

    /* Without the "upgrade" option, or in HTTP/1.0, Upgrade means nothing (RFC 9110 7.8):
     * the connection stays HTTP and the field is not forwarded. */
    p = parse_one("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n", NULL, &r);
    assert_false(r.head->upgrade);
    assert_null(r.head->upgrade_protocol);
    pdk_http_head_serialize(r.head, &out);
    assert_string_equal(out.data, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    pdk_buf_free(&out);
    pdk_http_parser_free(p);
    p = parse_one("GET / HTTP/1.0\r\nHost: a\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n", NULL,
                  &r);
    assert_false(r.head->upgrade);
    pdk_http_parser_free(p);

    /* An upgrade request with a body: the body first, then the stop. */
    assert_requests("POST / HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\nConnection: upgrade\r\n"
                    "Content-Length: 2\r\n\r\nab\x00\x00",
                    "HEAD POST /\nBODY ab\nCOMPLETE\nERROR 400 bytes after an upgrade "
                    "(pdk_http_parser_resume if it was refused)\n");
}

/* ---- Strictness ---- */

static void smuggling(void **state)
{
    (void)state;
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                   400, "Content-Length with Transfer-Encoding");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                   "Content-Length: 3\r\n\r\n0\r\n\r\n",
                   400, "Content-Length with Transfer-Encoding");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n"
                   "abc",
                   400, "several Content-Length headers");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\nabc", 400,
                   "invalid Content-Length");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\nabc", 400,
                   "invalid Content-Length");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x3\r\n\r\nabc", 400,
                   "invalid Content-Length");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", 400,
                   "invalid Content-Length");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9223372036854775808\r\n\r\n", 400,
                   "invalid Content-Length");

    /* Transfer-Encoding: exactly chunked. */
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 400,
                   "Transfer-Encoding does not end with chunked: the body length is unknown");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400,
                   "Transfer-Encoding does not end with chunked: the body length is unknown");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n", 400,
                   "Transfer-Encoding does not end with chunked: the body length is unknown");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", 400,
                   "Transfer-Encoding does not end with chunked: the body length is unknown");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501,
                   "transfer codings other than chunked are not implemented");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n",
                   400, "chunked applied more than once");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ,\r\n\r\n", 400,
                   "empty Transfer-Encoding");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked,\r\n\r\n", 400,
                   "Transfer-Encoding other than a single \"chunked\"");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked \t\r\n\r\n", 400,
                   "Transfer-Encoding other than a single \"chunked\"");
    assert_requests("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:  CHUNKED  \r\n\r\n0\r\n\r\n",
                    "HEAD POST /\nBODY 0\r\n\r\n\nCOMPLETE\n");
    /* libhttp-parser reads these names as Transfer-Encoding (and then a chunked response
     * until close). */
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                   "Transfer-Encodingx: y\r\n\r\n0\r\n\r\n",
                   400, "header name beginning with Transfer-Encoding");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding-Hint: y\r\n\r\n", 400,
                   "header name beginning with Transfer-Encoding");
    assert_requests("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encodin: chunked\r\n"
                    "Content-Lengthx: 5\r\n\r\n",
                    "HEAD GET /\nCOMPLETE\n");
    assert_refused("POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
                   "Transfer-Encoding in an HTTP/1.0 message");

    /* Field syntax. */
    assert_refused("GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n folded\r\n\r\n", 400,
                   "obs-fold (field line starting with whitespace)");
    assert_refused("GET / HTTP/1.1\r\n\tHost: a\r\n\r\n", 400,
                   "obs-fold (field line starting with whitespace)");
    assert_refused("GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400,
                   "whitespace between a header name and its colon");
    assert_refused("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding\t: chunked\r\n\r\n", 400,
                   "whitespace between a header name and its colon");
    assert_refused("GET / HTTP/1.1\r\nHost: a\r\nX(y): 1\r\n\r\n", 400,
                   "invalid character in a header name");
    assert_refused("GET / HTTP/1.1\r\nHost: a\r\n\xc3\xa9: 1\r\n\r\n", 400,
                   "invalid character in a header name");
    assert_refused("GET / HTTP/1.1\r\nHost: a\r\n: 1\r\n\r\n", 400, "empty header name");
    assert_refused("GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", 400,
                   "header line without a colon");
    assert_refused("GET / HTTP/1.1\r\nHost: a\r\nX: a\x01z\r\n\r\n", 400,
                   "control character in a header value");
    assert_refused("GET / HTTP/1.1\r\nHost: a\r\nX: a\x7fz\r\n\r\n", 400,
                   "control character in a header value");
    static const char nul[] = "GET / HTTP/1.1\r\nHost: a\r\nX: a\0z\r\n\r\n";
    assert_refused_with(NULL, nul, sizeof(nul) - 1, 400, "control character in a header value");
    assert_refused("GET / HTTP/1.1\r\nHost: a\r\nX: a\rz\r\n\r\n", 400, "CR not followed by LF");
    /* HTAB and obs-text are legal in values. */
    assert_requests("GET / HTTP/1.1\r\nHost: a\r\nX: a\tb \xff\r\n\r\n", "HEAD GET /\nCOMPLETE\n");

    /* Line endings: libhttp-parser takes bare LF everywhere; this module does not. */
    assert_refused("GET / HTTP/1.1\nHost: a\r\n\r\n", 400, "bare LF (line not ended by CRLF)");
    assert_refused("GET / HTTP/1.1\r\nHost: a\n\r\n", 400, "bare LF (line not ended by CRLF)");
    assert_refused("GET / HTTP/1.1\r\nHost: a\r\n\n", 400, "bare LF (line not ended by CRLF)");
    assert_refused("GET / HTTP/1.1\r\nHost: a\r\n\rX", 400, "CR not followed by LF");
    assert_refused("GET / HTTP/1.1\rHost: a\r\n\r\n", 400, "CR not followed by LF");

    /* Request line. */
    assert_refused("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "malformed request line");
    assert_refused("GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400, "malformed request line");
    assert_refused("GET /\x01 HTTP/1.1\r\nHost: a\r\n\r\n", 400,
                   "invalid character in the request target");
    assert_refused("GET / http/1.1\r\nHost: a\r\n\r\n", 400, "malformed HTTP version");
    assert_refused("GET / HTTP/1.10\r\nHost: a\r\n\r\n", 400, "malformed request line");
    assert_refused("GET /\r\n\r\n", 505, "HTTP/0.9 request (no HTTP version)");
    assert_refused("GET / HTTP/0.9\r\nHost: a\r\n\r\n", 505, "unsupported HTTP version");
    assert_refused("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505, "unsupported HTTP version");
    assert_refused("GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505, "unsupported HTTP version");
    assert_refused("FOO / HTTP/1.1\r\nHost: a\r\n\r\n", 501, "unknown method");
    assert_refused("get / HTTP/1.1\r\nHost: a\r\n\r\n", 501, "unknown method");
    assert_refused("GETS / HTTP/1.1\r\nHost: a\r\n\r\n", 501, "unknown method");
    assert_refused("\x16\x03\x01\x02", 400, "invalid character in the method");
    assert_refused("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 501, "unknown method");

    /* Chunked framing. */
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400,
                   "invalid chunk size");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", 400,
                   "invalid chunk size");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3 x\r\n", 400,
                   "invalid chunk extension");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;=x\r\n", 400,
                   "invalid chunk extension");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;a\nb\r\n",
                   400, "invalid chunk extension");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;a=\"b\r\n",
                   400, "invalid chunk extension");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n",
                   400, "bare LF (line not ended by CRLF)");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "3\r\nabcd\r\n0\r\n\r\n",
                   400, "chunk data not followed by CRLF");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "8000000000000000\r\n",
                   400, "chunk size too large");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "0\r\nX : y\r\n\r\n",
                   400, "whitespace between a header name and its colon");
    assert_refused("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "0\r\nX: y\n\r\n",
                   400, "bare LF (line not ended by CRLF)");
    /* A chunk line is bounded. */
    char line[8192];
    int len = snprintf(line, sizeof(line),
                       "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1;x=");
    memset(line + len, 'a', 5000);
    assert_refused_with(NULL, line, (size_t)len + 5000, 400, "chunk line too long");
}

static void limits(void **state)
{
    (void)state;
    pdk_http_config config = {.max_head_bytes = 64, .max_headers = 3, .max_target_bytes = 10};
    /* A head of exactly max_head_bytes passes; one byte more does not. */
    static const char exact[] =
        "GET /aaaaaaaaa HTTP/1.1\r\nHost: a\r\nX: 12345678901234567890123\r\n\r\n";
    assert_int_equal(sizeof(exact) - 1, 64);
    struct feed f = {.kind = PDK_HTTP_REQUEST, .config = config};
    char *got = trace_all_splits(&f, exact, sizeof(exact) - 1);
    assert_string_equal(got, "HEAD GET /aaaaaaaaa\nCOMPLETE\n");
    free(got);
    static const char over[] =
        "GET /aaaaaaaaa HTTP/1.1\r\nHost: a\r\nX: 123456789012345678901234\r\n\r\n";
    assert_refused_with(&config, over, sizeof(over) - 1, 431, "head too large");
    /* Blank lines before the request count. */
    static const char blank[] =
        "\r\nGET /aaaaaaaaa HTTP/1.1\r\nHost: a\r\nX: 12345678901234567890123\r\n\r\n";
    assert_refused_with(&config, blank, sizeof(blank) - 1, 431, "head too large");

    static const char target[] = "GET /aaaaaaaaaa HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_refused_with(&config, target, sizeof(target) - 1, 414, "request target too long");
    static const char fields[] = "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    assert_refused_with(&config, fields, sizeof(fields) - 1, 431, "too many header fields");
    static const char trailers[] = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                                   "\r\n0\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n";
    assert_refused_with(&config, trailers, sizeof(trailers) - 1, 431, "too many trailer fields");

    /* Default limits: 64 KiB heads, 100 fields, 8 KiB targets. */
    pdk_buf big = {0};
    pdk_buf_puts(&big, "GET /");
    for (int i = 0; i < 8 * 1024; i++)
        pdk_buf_puts(&big, "a");
    pdk_buf_puts(&big, " HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_refused_with(NULL, big.data, big.len, 414, "request target too long");
    big.len = 0;
    pdk_buf_puts(&big, "GET / HTTP/1.1\r\nHost: a\r\n");
    for (int i = 0; i < 100; i++)
        pdk_buf_printf(&big, "X-%d: %d\r\n", i, i);
    pdk_buf_puts(&big, "\r\n");
    assert_refused_with(NULL, big.data, big.len, 431, "too many header fields");
    big.len = 0;
    pdk_buf_puts(&big, "GET / HTTP/1.1\r\nHost: a\r\nX: ");
    for (int i = 0; i < 64 * 1024; i++)
        pdk_buf_puts(&big, "v");
    pdk_buf_puts(&big, "\r\n\r\n");
    pdk_http_parser *p = pdk_http_parser_new(PDK_HTTP_REQUEST, NULL);
    pdk_http_result r;
    assert_int_equal(pdk_http_parse(p, big.data, big.len, &r), PDK_HTTP_ERROR);
    assert_int_equal(r.status, 431);
    pdk_http_parser_free(p);
    /* Above libhttp-parser's own bound, the limit is cut to it, and still ours. */
    pdk_http_config huge = {.max_head_bytes = 1024 * 1024};
    big.len = 0;
    pdk_buf_puts(&big, "GET / HTTP/1.1\r\nHost: a\r\nX: ");
    for (int i = 0; i < 80 * 1024; i++)
        pdk_buf_puts(&big, "v");
    pdk_buf_puts(&big, "\r\n\r\n");
    p = pdk_http_parser_new(PDK_HTTP_REQUEST, &huge);
    assert_int_equal(pdk_http_parse(p, big.data, big.len, &r), PDK_HTTP_ERROR);
    assert_int_equal(r.status, 431);
    assert_string_equal(r.reason, "head too large");
    pdk_http_parser_free(p);
    pdk_buf_free(&big);
}

static void errors_are_final(void **state)
{
    (void)state;
    pdk_http_parser *p = pdk_http_parser_new(PDK_HTTP_REQUEST, NULL);
    pdk_http_result r;
    assert_int_equal(pdk_http_parse(p, "GET / HTTP/1.1\r\nA : b", 21, &r), PDK_HTTP_ERROR);
    assert_int_equal(r.consumed, 0);
    assert_int_equal(pdk_http_parse(p, "GET / HTTP/1.1\r\n\r\n", 18, &r), PDK_HTTP_ERROR);
    assert_int_equal(r.status, 400);
    assert_string_equal(r.reason, "whitespace between a header name and its colon");
    assert_int_equal(pdk_http_parse_eof(p, &r), PDK_HTTP_ERROR);
    pdk_http_parser_free(p);

    assert_requests_eof("", "END\n");
    assert_requests_eof("\r\n", "END\n");
    assert_requests_eof("GET / HTTP/1.1\r\nHost: a\r\n",
                        "ERROR 400 connection closed in the middle of a head\n");
}

/* ---- Responses ---- */

static const int get_methods[] = {HTTP_GET, HTTP_GET, HTTP_GET, NO_METHOD};

#define assert_responses(methods, data, want)                                                      \
    assert_trace_kind(PDK_HTTP_RESPONSE, methods, true, data, sizeof(data) - 1, want)

static void responses(void **state)
{
    (void)state;
    assert_responses(
        get_methods,
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
        "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
        "HEAD 200\nBODY abc\nCOMPLETE\nHEAD 404\nBODY 1\r\nx\r\n0\r\n\r\n\nCOMPLETE\n"
        "END\n");

    /* HEAD: Content-Length describes a body that is not sent. */
    static const int head_then_get[] = {HTTP_HEAD, HTTP_GET, NO_METHOD};
    assert_responses(head_then_get,
                     "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
                     "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                     "HEAD 200\nCOMPLETE\nHEAD 200\nBODY ok\nCOMPLETE\nEND\n");
    /* 204 and 304 have no body, whatever their fields say (libhttp-parser alone would read a
     * 304's Content-Length body). */
    assert_responses(get_methods,
                     "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n"
                     "HTTP/1.1 204 No Content\r\n\r\n"
                     "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
                     "HEAD 304\nCOMPLETE\nHEAD 204\nCOMPLETE\nHEAD 200\nCOMPLETE\nEND\n");
    /* 1xx then the final response, for one request. */
    static const int one_post[] = {HTTP_POST, NO_METHOD};
    assert_responses(one_post,
                     "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                     "HTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx",
                     "HEAD 100\nCOMPLETE\nHEAD 103\nCOMPLETE\nHEAD 201\nBODY x\nCOMPLETE\nEND\n");
    /* ...and a second final response has no request left. */
    assert_responses(one_post,
                     "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
                     "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
                     "HEAD 200\nCOMPLETE\nERROR 502 response to no request\n");
    /* Until close. */
    assert_responses(get_methods, "HTTP/1.1 200 OK\r\nServer: x\r\n\r\nsome bytes",
                     "HEAD 200\nBODY some bytes\nCOMPLETE\nEND\n");
    assert_responses(get_methods, "HTTP/1.0 200 OK\r\n\r\n", "HEAD 200\nCOMPLETE\nEND\n");

    /* 101: the connection leaves HTTP; what follows is not parsed. */
    pdk_http_parser *p = pdk_http_parser_new(PDK_HTTP_RESPONSE, NULL);
    pdk_http_parser_set_request_method(p, HTTP_GET);
    static const char switching[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                    "Connection: Upgrade\r\n\r\n\x81\x00";
    pdk_http_result r;
    assert_int_equal(pdk_http_parse(p, switching, sizeof(switching) - 1, &r), PDK_HTTP_HEAD);
    assert_int_equal(r.consumed, sizeof(switching) - 3);
    assert_true(r.head->upgrade);
    assert_string_equal(r.head->upgrade_protocol, "websocket");
    assert_string_equal(r.head->reason, "Switching Protocols");
    pdk_buf out = {0};
    pdk_http_head_serialize(r.head, &out);
    assert_string_equal(out.data, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                  "Connection: upgrade\r\n\r\n");
    pdk_buf_free(&out);
    assert_int_equal(pdk_http_parse(p, "", 0, &r), PDK_HTTP_MESSAGE_COMPLETE);
    assert_int_equal(pdk_http_parse(p, "\x81\x00", 2, &r), PDK_HTTP_ERROR);
    assert_int_equal(r.status, 502);
    pdk_http_parser_free(p);

    /* CONNECT: 2xx is a tunnel (its Content-Length ignored, RFC 9110 9.3.6), other
     * answers have bodies. */
    static const int connect[] = {HTTP_CONNECT, NO_METHOD};
    assert_responses(connect, "HTTP/1.1 200 Connection established\r\nContent-Length: 9\r\n\r\n",
                     "HEAD 200\nCOMPLETE\nEND\n");
    assert_responses(
        connect, "HTTP/1.1 407 Proxy Auth\r\nContent-Length: 2\r\n\r\nnoHTTP/1.1 200 OK\r\n\r\n",
        "HEAD 407\nBODY no\nCOMPLETE\nERROR 502 response to no request\n");

    /* Everything wrong with a response is a 502 for the client. */
    assert_responses(get_methods,
                     "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
                     "ERROR 502 Content-Length with Transfer-Encoding\n");
    assert_responses(get_methods, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc",
                     "ERROR 502 Transfer-Encoding does not end with chunked: the body length is "
                     "unknown\n");
    assert_responses(
        get_methods,
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encodingx: y\r\n\r\n"
        "0\r\n\r\n",
        "ERROR 502 header name beginning with Transfer-Encoding\n");
    assert_responses(get_methods, "HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n",
                     "ERROR 502 obs-fold (field line starting with whitespace)\n");
    assert_responses(get_methods, "HTTP/1.1 2000 OK\r\n\r\n", "ERROR 502 invalid status code\n");
    assert_responses(get_methods, "HTTP/1.1 099 X\r\n\r\n", "ERROR 502 invalid status code\n");
    assert_responses(get_methods, "HTTP/1.1 600 X\r\n\r\n", "ERROR 502 invalid status code\n");
    assert_responses(get_methods, "HXTP/1.1 200 OK\r\n\r\n", "ERROR 502 malformed HTTP version\n");
    assert_responses(get_methods, "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n",
                     "ERROR 502 bare LF (line not ended by CRLF)\n");
    assert_responses(get_methods, "HTTP/2 200\r\n\r\n", "ERROR 502 malformed HTTP version\n");
    assert_responses(get_methods, "HTTP/1.2 200 OK\r\n\r\n",
                     "ERROR 502 unsupported HTTP version\n");
    assert_responses(get_methods, "HTTP/1.10 200 OK\r\n\r\n", "ERROR 502 malformed status line\n");
    assert_responses(get_methods, "HTTP/1.1 2x0 OK\r\n\r\n", "ERROR 502 invalid status code\n");
    assert_responses(get_methods, "HTTP/1.1 200 O\x01K\r\n\r\n",
                     "ERROR 502 control character in the reason phrase\n");
    assert_responses(get_methods, "\rHTTP/1.1 200 OK\r\n\r\n", "ERROR 502 CR not followed by LF\n");
    assert_responses(get_methods, "HTTP/1.0 100 Continue\r\n\r\n",
                     "ERROR 502 1xx response in HTTP/1.0\n");
    assert_responses(get_methods, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab",
                     "HEAD 200\nBODY ab\nERROR 502 connection closed in the middle of a body\n");
    /* No reason phrase, with or without its SP. */
    assert_responses(get_methods, "HTTP/1.1 204\r\n\r\nHTTP/1.1 204 \r\n\r\n",
                     "HEAD 204\nCOMPLETE\nHEAD 204\nCOMPLETE\nEND\n");

    /* No method set at all. */
    p = pdk_http_parser_new(PDK_HTTP_RESPONSE, NULL);
    assert_int_equal(pdk_http_parse(p, "HTTP/1.1 200 OK\r\n\r\n", 19, &r), PDK_HTTP_ERROR);
    assert_int_equal(r.status, 502);
    assert_string_equal(r.reason, "response to no request");
    pdk_http_parser_free(p);
}

/* ---- Forwarding ---- */

/* A request body that a server which does not read it would take for a request. */
static void body_request_lines(void **state)
{
#define LINE(text, complete) pdk_http_looks_like_request_line(text, strlen(text), complete)
    assert_int_equal(LINE("DELETE /admin/x HTTP/1.1\r\nHost: a\r\n\r\n", false), 1);
    assert_int_equal(LINE("\r\n\r\nPOST http://a/x HTTP/1.0\n", false), 1);
    assert_int_equal(LINE("OPTIONS * HTTP/1.1\r\n", false), 1);
    assert_int_equal(LINE("X-CUSTOM\t/a \t HTTP/2 \r\n", false), 1);
    assert_int_equal(LINE("GET /x\r\n", false), 1); /* HTTP/0.9 */
    assert_int_equal(LINE("GET /x", true), 1);      /* the whole body ends the line */
    assert_int_equal(LINE("DELETE /a HTTP/1.1", true), 1);
    assert_int_equal(LINE("GET /x", false), -1);
    assert_int_equal(LINE("DELETE /x\r\n", false), 0); /* 0.9 is GET only */
    assert_int_equal(LINE("{\"a\": 1}", false), 0);    /* decided at the first byte */
    assert_int_equal(LINE("see /tmp/x is full\n", false), 0);
    assert_int_equal(LINE("Fix /etc\n", false), 0);
    assert_int_equal(LINE("a=1&b=2", false), 0);
    assert_int_equal(LINE("word word", false), 0);
    assert_int_equal(LINE("DELETE", false), -1);
    assert_int_equal(LINE("DELETE ", false), -1);
    assert_int_equal(LINE("DELETE", true), 0);
    assert_int_equal(LINE("", false), -1);
    assert_int_equal(LINE("", true), 0);
    assert_int_equal(LINE("\r\n", true), 0);
    /* a line longer than the bound is no request line, decided there */
    size_t n = PDK_HTTP_REQUEST_LINE_SNIFF_MAX + 10;
    char *long_line = xmalloc(n + 1);
    memcpy(long_line, "GET /", 5);
    memset(long_line + 5, 'a', n - 5);
    memcpy(long_line + n - 10, " HTTP/1.1\n", 10);
    long_line[n] = '\0';
    assert_int_equal(pdk_http_looks_like_request_line(long_line, n, false), 0);
    assert_int_equal(pdk_http_looks_like_request_line(long_line, 200, false), -1);
    free(long_line);
#undef LINE
}

static void serialize_forward(void **state)
{
    (void)state;
    pdk_http_result r;
    pdk_http_parser *p = parse_one("POST http://api.example/v1/x?y=2 HTTP/1.1\r\n"
                                   "Host: api.example\r\n"
                                   "Connection: keep-alive, X-Secret, authorization\r\n"
                                   "Keep-Alive: timeout=5\r\n"
                                   "Proxy-Connection: keep-alive\r\n"
                                   "Proxy-Authorization: Basic dXNlcjpwdw==\r\n"
                                   "TE: trailers\r\n"
                                   "Trailer: X-Sum\r\n"
                                   "Upgrade: h2c\r\n"
                                   "X-Secret: 1\r\n"
                                   "authorization: Bearer client\r\n"
                                   "Content-Type: text/plain\r\n"
                                   "Content-Length: 4\r\n"
                                   "\r\n",
                                   NULL, &r);
    pdk_http_head *h = pdk_http_parser_take_head(p);
    assert_ptr_equal(h, r.head);
    assert_null(pdk_http_parser_head(p));
    /* The head outlives the parser's next message. */
    assert_int_equal(pdk_http_parse(p, "abcd", 4, &r), PDK_HTTP_BODY);
    assert_null(r.head);
    assert_int_equal(pdk_http_parse(p, "", 0, &r), PDK_HTTP_MESSAGE_COMPLETE);
    assert_int_equal(pdk_http_parse(p, "GET / HTTP/1.1\r\nHost: b\r\n\r\n", 27, &r), PDK_HTTP_HEAD);
    pdk_http_parser_free(p);

    /* The gateway injects credentials: the client named Authorization in Connection, but a
     * field set by the caller is end-to-end. */
    pdk_error err;
    assert_int_equal(pdk_http_head_set(h, "Authorization", "Bearer injected", &err), 0);
    assert_int_equal(pdk_http_head_set(h, "X-Added", "1", &err), 0);
    assert_int_equal(pdk_http_head_remove(h, "content-type"), 1);
    assert_int_equal(pdk_http_head_remove(h, "content-type"), 0);
    pdk_buf out = {0};
    pdk_http_head_serialize(h, &out);
    assert_string_equal(out.data, "POST /v1/x?y=2 HTTP/1.1\r\n"
                                  "Host: api.example\r\n"
                                  "Authorization: Bearer injected\r\n"
                                  "Content-Length: 4\r\n"
                                  "X-Added: 1\r\n"
                                  "\r\n");
    pdk_buf_free(&out);

    /* What the caller may not inject. */
    assert_int_equal(pdk_http_head_set(h, "X-Bad", "a\r\nX-Smuggled: 1", &err), -1);
    assert_int_equal(err.code, EINVAL);
    assert_int_equal(pdk_http_head_set(h, "X Bad", "a", &err), -1);
    assert_int_equal(pdk_http_head_set(h, "", "a", &err), -1);
    assert_int_equal(pdk_http_head_set(h, "X-Bad", " a", &err), -1);
    assert_int_equal(pdk_http_head_set(h, "X-Ok", "", &err), 0);

    /* set replaces every field of the name, at the first one's place. */
    assert_int_equal(pdk_http_head_set(h, "x-added", "2", &err), 0);
    assert_string_equal(pdk_http_head_get(h, "X-ADDED"), "2");
    pdk_http_head_free(h);

    p = parse_one("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nA: 3\r\n\r\n", NULL, &r);
    assert_int_equal(pdk_http_head_set(r.head, "a", "x", &err), 0);
    pdk_http_head_serialize(r.head, &out);
    assert_string_equal(out.data, "GET / HTTP/1.1\r\nHost: a\r\na: x\r\nB: 2\r\n\r\n");
    pdk_buf_free(&out);
    pdk_http_parser_free(p);

    /* OPTIONS * and HTTP/1.0 requests go out as HTTP/1.1. */
    p = parse_one("OPTIONS * HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\n\r\n", NULL, &r);
    pdk_http_head_serialize(r.head, &out);
    assert_string_equal(out.data, "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n");
    pdk_buf_free(&out);
    pdk_http_parser_free(p);

    /* A response loses its hop-by-hop fields the same way. */
    p = pdk_http_parser_new(PDK_HTTP_RESPONSE, NULL);
    pdk_http_parser_set_request_method(p, HTTP_GET);
    static const char response[] = "HTTP/1.1 407 Who\r\nProxy-Authenticate: Basic\r\n"
                                   "Connection: close\r\nContent-Length: 0\r\n\r\n";
    assert_int_equal(pdk_http_parse(p, response, sizeof(response) - 1, &r), PDK_HTTP_HEAD);
    pdk_http_head_serialize(r.head, &out);
    assert_string_equal(out.data, "HTTP/1.1 407 Who\r\nContent-Length: 0\r\n\r\n");
    pdk_buf_free(&out);
    pdk_http_parser_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(simple_get),
        cmocka_unit_test(absolute_form),
        cmocka_unit_test(connect_requests),
        cmocka_unit_test(origin_form_host),
        cmocka_unit_test(keep_alive_defaults),
        cmocka_unit_test(pipelined),
        cmocka_unit_test(every_split),
        cmocka_unit_test(content_length_body),
        cmocka_unit_test(chunked_body),
        cmocka_unit_test(expect_continue),
        cmocka_unit_test(upgrade_websocket),
        cmocka_unit_test(smuggling),
        cmocka_unit_test(limits),
        cmocka_unit_test(errors_are_final),
        cmocka_unit_test(responses),
        cmocka_unit_test(serialize_forward),
        cmocka_unit_test(body_request_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
