/* test_gateway_headers.c: the gateway's decisions on heads (gateway_headers.c), over heads
 * parsed as the gateway parses them. A placeholder bound to other hosts is found in the URL,
 * a CONNECT's destination, a field's name, a field's value and across two fields' values,
 * percent-encoded too, and only when the filter counts its credential; credentials are put
 * on in the fields they name (any case) and in their own header, but nothing changes when
 * one would go over plain HTTP or a body to rewrite is too large; a field left holding a
 * placeholder is listed once; answers are asked unencoded; a response head says which
 * part a masked value was in; an encoded response body is one paddock cannot mask. */
#include "gateway_headers.h"
#include "util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define RANDOM_A "0123456789abcdef0123456789abcdef0123456789abcdef"
#define RANDOM_B "fedcba9876543210fedcba9876543210fedcba9876543210"
#define PH_A     "PDK_PLACEHOLDER_" RANDOM_A
#define PH_B     "PDK_PLACEHOLDER_" RANDOM_B

static pdk_http_head *parse(pdk_http_kind kind, const char *text, enum http_method method)
{
    pdk_http_config config = {0};
    pdk_http_parser *p = pdk_http_parser_new(kind, &config);
    if (kind == PDK_HTTP_RESPONSE)
        pdk_http_parser_set_request_method(p, method);
    pdk_http_result r;
    pdk_http_event e = pdk_http_parse(p, text, strlen(text), &r);
    if (e != PDK_HTTP_HEAD)
        fail_msg("not a head (%d): %s", (int)e, text);
    pdk_http_head *h = pdk_http_parser_take_head(p);
    pdk_http_parser_free(p);
    return h;
}

static pdk_http_head *request(const char *text)
{
    return parse(PDK_HTTP_REQUEST, text, HTTP_GET);
}

static pdk_placeholder_set *two(void)
{
    pdk_placeholder_set *set = pdk_placeholder_set_new();
    assert_int_equal(pdk_placeholder_set_add(set, PH_A, 0), 0);
    assert_int_equal(pdk_placeholder_set_add(set, PH_B, 1), 0);
    return set;
}

static bool only_b(void *arg, int id)
{
    (void)arg;
    return id == 1;
}

/* Where a placeholder was found in the request text, or NULL. */
static char *found_in(const char *text, bool (*wanted)(void *, int), int *id)
{
    pdk_placeholder_set *set = two();
    pdk_http_head *h = request(text);
    pdk_placeholder_found found = {-1, "", 0};
    char *where = NULL;
    bool hit = pdk_headers_find_placeholder(h, set, wanted, NULL, &found, &where);
    assert_int_equal(hit, where != NULL);
    if (id)
        *id = found.id;
    pdk_http_head_free(h);
    pdk_placeholder_set_free(set);
    return where;
}

static void t_find_placeholder(void **state)
{
    (void)state;
    int id = -1;
    char *w = found_in("GET /x?key=" PH_A " HTTP/1.1\r\nHost: a\r\n\r\n", NULL, &id);
    assert_string_equal(w, "URL");
    assert_int_equal(id, 0);
    free(w);
    w = found_in("CONNECT " RANDOM_B ".evil.example:443 HTTP/1.1\r\nHost: x\r\n\r\n", NULL, &id);
    assert_string_equal(w, "destination");
    assert_int_equal(id, 1);
    free(w);
    w = found_in("GET / HTTP/1.1\r\nHost: a\r\nX-" RANDOM_A ": 1\r\n\r\n", NULL, NULL);
    assert_string_equal(w, "field name X-" RANDOM_A);
    free(w);
    w = found_in("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer " PH_B "\r\n\r\n", NULL, &id);
    assert_string_equal(w, "Authorization field");
    assert_int_equal(id, 1);
    free(w);
    /* cut across two fields: found where it completes */
    w = found_in("GET / HTTP/1.1\r\nHost: a\r\nX-One: "
                 "0123456789abcdef0123"
                 "\r\nX-Two: 456789abcdef0123456789abcdef\r\n\r\n",
                 NULL, &id);
    assert_non_null(w);
    assert_int_equal(id, 0);
    free(w);
    /* percent-encoded in the URL */
    w = found_in("GET /?k=%30%31%32%33%34%35%36%37%38%39%61%62%63%64%65%66%30%31 HTTP/1.1\r\n"
                 "Host: a\r\n\r\n",
                 NULL, &id);
    assert_string_equal(w, "URL");
    free(w);
    /* the filter decides which credentials count (those bound to other hosts) */
    assert_null(found_in("GET /x?key=" PH_A " HTTP/1.1\r\nHost: a\r\n\r\n", only_b, NULL));
    assert_null(found_in("GET /plain HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n", NULL, NULL));
}

static pdk_credential policy_of(char **fields, const char *inject, const char *value)
{
    pdk_credential p = {.name = "api", .replace_in_headers = fields};
    p.inject_header = (char *)inject;
    p.inject_value = (char *)value;
    return p;
}

static void t_put_credentials(void **state)
{
    (void)state;
    char *fields[] = {"authorization", "x-api-key", NULL};
    pdk_credential a = policy_of(fields, NULL, NULL);
    pdk_credential b = policy_of(NULL, "X-Token", "Bearer {token}");
    pdk_headers_credential creds[] = {{&a, PH_A, "real-a"}, {&b, PH_B, "real-b"}};
    pdk_http_head *h = request("POST /v1 HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer " PH_A
                               "\r\nX-Other: " PH_A "\r\nAccept-Encoding: gzip\r\n"
                               "Content-Length: 3\r\n\r\n");
    bool used[2];
    pdk_headers_put put = {.used = used};
    assert_int_equal(pdk_headers_put_credentials(h, creds, 2, true, 1 << 20, &put),
                     PDK_HEADERS_PUT);
    assert_string_equal(pdk_http_head_get(h, "Authorization"), "Bearer real-a");
    assert_string_equal(pdk_http_head_get(h, "X-Token"), "Bearer real-b");
    assert_true(used[0] && used[1]);
    /* a field the credential does not name keeps the placeholder, and is listed */
    assert_string_equal(pdk_http_head_get(h, "X-Other"), PH_A);
    assert_int_equal(pdk_strv_length(put.placeholders_left), 1);
    assert_string_equal(put.placeholders_left[0], "X-Other");
    assert_string_equal(pdk_http_head_get(h, "Accept-Encoding"), "identity");
    assert_false(put.rewrite_body);
    pdk_headers_put_free(&put);
    pdk_http_head_free(h);

    /* two fields of one name: the later ones go when the first is set, and the fields after
     * them are still rewritten */
    h = request("GET / HTTP/1.1\r\nHost: api\r\nAuthorization: one\r\nAuthorization: " PH_A
                "\r\nX-Api-Key: " PH_A "\r\n\r\n");
    assert_int_equal(pdk_headers_put_credentials(h, creds, 1, true, 1 << 20, &put),
                     PDK_HEADERS_PUT);
    assert_string_equal(pdk_http_head_get(h, "X-Api-Key"), "real-a");
    assert_string_equal(pdk_http_head_get(h, "Authorization"), "real-a");
    for (size_t k = 0; k < h->header_count; k++)
        assert_null(strstr(h->headers[k].value, PH_A));
    assert_null(put.placeholders_left);
    pdk_headers_put_free(&put);
    pdk_http_head_free(h);
    /* a value that cannot be a field's (a newline in the real value): not put on, not used */
    pdk_headers_credential bad[] = {{&a, PH_A, "real\nvalue"}};
    h = request("GET / HTTP/1.1\r\nHost: api\r\nX-Api-Key: " PH_A "\r\n\r\n");
    assert_int_equal(pdk_headers_put_credentials(h, bad, 1, true, 1 << 20, &put), PDK_HEADERS_PUT);
    assert_false(used[0]);
    assert_string_equal(pdk_http_head_get(h, "X-Api-Key"), PH_A);
    pdk_headers_put_free(&put);
    pdk_http_head_free(h);

    /* a named field without the placeholder: not used, left alone */
    h = request("GET / HTTP/1.1\r\nHost: api\r\nX-Api-Key: mine\r\n\r\n");
    assert_int_equal(pdk_headers_put_credentials(h, creds, 1, true, 1 << 20, &put),
                     PDK_HEADERS_PUT);
    assert_false(used[0]);
    assert_string_equal(pdk_http_head_get(h, "X-Api-Key"), "mine");
    assert_null(put.placeholders_left);
    pdk_headers_put_free(&put);
    pdk_http_head_free(h);

    /* no credential bound: nothing at all, not even the encoding */
    h = request("GET / HTTP/1.1\r\nHost: other\r\nAccept-Encoding: br\r\n\r\n");
    assert_int_equal(pdk_headers_put_credentials(h, creds, 0, false, 1 << 20, &put),
                     PDK_HEADERS_PUT);
    assert_string_equal(pdk_http_head_get(h, "Accept-Encoding"), "br");
    pdk_http_head_free(h);
}

static void t_refusals_change_nothing(void **state)
{
    (void)state;
    char *fields[] = {"Authorization", NULL};
    pdk_credential a = policy_of(fields, NULL, NULL);
    pdk_credential b = policy_of(NULL, "X-Token", "{token}");
    pdk_headers_credential creds[] = {{&a, PH_A, "real-a"}, {&b, PH_B, "real-b"}};
    const char *text = "GET / HTTP/1.1\r\nHost: api\r\nAuthorization: " PH_A "\r\n\r\n";
    pdk_http_head *h = request(text);
    bool used[2];
    pdk_headers_put put = {.used = used};
    /* plain HTTP: the first that would put a value on is named, and nothing is put on */
    assert_int_equal(pdk_headers_put_credentials(h, creds, 2, false, 1 << 20, &put),
                     PDK_HEADERS_PLAIN_HTTP);
    assert_int_equal(put.refused, 0);
    assert_string_equal(pdk_http_head_get(h, "Authorization"), PH_A);
    assert_null(pdk_http_head_get(h, "X-Token"));
    assert_null(pdk_http_head_get(h, "Accept-Encoding"));
    pdk_headers_put_free(&put);
    /* the placeholder not there: credential a puts nothing on, b still would */
    pdk_http_head *bare = request("GET / HTTP/1.1\r\nHost: api\r\n\r\n");
    assert_int_equal(pdk_headers_put_credentials(bare, creds, 2, false, 1 << 20, &put),
                     PDK_HEADERS_PLAIN_HTTP);
    assert_int_equal(put.refused, 1);
    pdk_headers_put_free(&put);
    /* allowed plain: put on */
    a.allow_plain_http = b.allow_plain_http = true;
    assert_int_equal(pdk_headers_put_credentials(h, creds, 2, false, 1 << 20, &put),
                     PDK_HEADERS_PUT);
    assert_string_equal(pdk_http_head_get(h, "Authorization"), "real-a");
    pdk_headers_put_free(&put);
    pdk_http_head_free(h);
    pdk_http_head_free(bare);

    /* a body to rewrite over the limit: refused, untouched; under it: rewritten */
    a.replace_in_body = true;
    h = request("POST / HTTP/1.1\r\nHost: api\r\nAuthorization: " PH_A
                "\r\nContent-Length: 2000\r\n\r\n");
    assert_int_equal(pdk_headers_put_credentials(h, creds, 1, true, 1000, &put),
                     PDK_HEADERS_BODY_TOO_LARGE);
    assert_string_equal(pdk_http_head_get(h, "Authorization"), PH_A);
    pdk_headers_put_free(&put);
    assert_int_equal(pdk_headers_put_credentials(h, creds, 1, true, 2000, &put), PDK_HEADERS_PUT);
    assert_true(put.rewrite_body);
    pdk_headers_put_free(&put);
    pdk_http_head_free(h);
    /* no body, nothing to rewrite */
    h = request("GET / HTTP/1.1\r\nHost: api\r\n\r\n");
    assert_int_equal(pdk_headers_put_credentials(h, creds, 1, true, 10, &put), PDK_HEADERS_PUT);
    assert_false(put.rewrite_body);
    pdk_headers_put_free(&put);
    pdk_http_head_free(h);
}

static void t_response_where(void **state)
{
    (void)state;
    const char *head = "HTTP/1.1 200 OK\r\nX-Request-Id: abc\r\nSECRETNAME: v\r\n\r\n";
    char where[96];
    pdk_headers_response_where(head, 9, where, sizeof(where));
    assert_string_equal(where, "response status line");
    pdk_headers_response_where(head, (size_t)(strstr(head, "abc") - head), where, sizeof(where));
    assert_string_equal(where, "response field X-Request-Id");
    pdk_headers_response_where(head, (size_t)(strstr(head, "SECRET") - head), where, sizeof(where));
    assert_string_equal(where, "response field name");
    /* a long name is cut */
    pdk_buf b = {0};
    pdk_buf_puts(&b, "HTTP/1.1 200 OK\r\n");
    for (int i = 0; i < 100; i++)
        pdk_buf_puts(&b, "N");
    pdk_buf_puts(&b, ": value\r\n\r\n");
    pdk_headers_response_where(b.data, (size_t)(strstr(b.data, "value") - b.data), where,
                               sizeof(where));
    assert_int_equal(strlen(where), strlen("response field ") + 64);
    pdk_buf_free(&b);
}

static void t_body_encoded(void **state)
{
    (void)state;
    struct {
        const char *text;
        enum http_method method;
        bool encoded;
    } cases[] = {
        {"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\n", HTTP_GET, true},
        {"HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\nContent-Length: 5\r\n\r\n", HTTP_GET,
         false},
        {"HTTP/1.1 200 OK\r\nContent-Encoding: IDENTITY\r\nContent-Length: 5\r\n\r\n", HTTP_GET,
         false},
        {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", HTTP_GET, false},
        /* no body: nothing to mask, whatever it says */
        {"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 0\r\n\r\n", HTTP_GET, false},
        {"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 9\r\n\r\n", HTTP_HEAD, false},
        {"HTTP/1.1 204 No Content\r\nContent-Encoding: br\r\n\r\n", HTTP_GET, false},
        {"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nTransfer-Encoding: chunked\r\n\r\n", HTTP_GET,
         true},
        {"HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\n\r\n", HTTP_GET, true}, /* until close */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        pdk_http_head *h = parse(PDK_HTTP_RESPONSE, cases[i].text, cases[i].method);
        const char *coding = NULL;
        if (pdk_headers_body_encoded(h, &coding) != cases[i].encoded)
            fail_msg("case %zu: %s", i, cases[i].text);
        if (cases[i].encoded)
            assert_non_null(coding);
        pdk_http_head_free(h);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_find_placeholder),
        cmocka_unit_test(t_put_credentials),
        cmocka_unit_test(t_refusals_change_nothing),
        cmocka_unit_test(t_response_where),
        cmocka_unit_test(t_body_encoded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
