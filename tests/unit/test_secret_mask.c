/* test_secret_mask.c: real values masked on their way into a sandbox (secret_mask.c), and
 * the registry they come from (redact.c: values and placeholders).
 */
#include "redact.h"
#include "secret_mask.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#define SECRET "u-9Zk3Qm7Rt2Vx8Lp4Wn6Hs1Jd5Fg0Bc"

static char *masked_text(const pdk_mask_set *m, const char *s, size_t *count)
{
    char *t = strdup(s);
    *count = pdk_mask_text(m, t, strlen(t), NULL, NULL);
    return t;
}

static pdk_mask_set *one_secret(const char *value)
{
    pdk_mask_set *m = pdk_mask_set_new();
    pdk_mask_set_add(m, value, strlen(value), "api");
    return m;
}

/* n stars */
static char *stars(size_t n)
{
    char *s = malloc(n + 1);
    memset(s, '*', n);
    s[n] = '\0';
    return s;
}

static void test_text(void **state)
{
    pdk_mask_set *m = one_secret(SECRET);
    size_t n;
    char *t = masked_text(m, "Authorization: Bearer " SECRET "\r\nX: 1", &n);
    char *want_stars = stars(strlen(SECRET));
    char want[256];
    snprintf(want, sizeof(want), "Authorization: Bearer %s\r\nX: 1", want_stars);
    assert_string_equal(t, want);
    assert_int_equal(n, 1);
    free(t);
    /* a part of it (an error page that quotes 20 bytes of a field) */
    t = masked_text(m, "value was: u-9Zk3Qm7Rt2Vx8Lp4Wn...", &n);
    assert_string_equal(t, "value was: ********************...");
    free(t);
    /* the end of it */
    t = masked_text(m, "[7Rt2Vx8Lp4Wn6Hs1Jd5Fg0Bc]", &n);
    assert_string_equal(t, "[************************]");
    free(t);
    /* under the window: left (too short to tell from other text) */
    t = masked_text(m, "u-9Zk3Qm7Rt2Vx8", &n);
    assert_string_equal(t, "u-9Zk3Qm7Rt2Vx8");
    assert_int_equal(n, 0);
    free(t);
    /* ordinary text is untouched */
    t = masked_text(m, "{\"ok\": true, \"items\": [1, 2, 3]}", &n);
    assert_string_equal(t, "{\"ok\": true, \"items\": [1, 2, 3]}");
    free(t);
    free(want_stars);
    pdk_mask_set_free(m);
}

static void test_encodings(void **state)
{
    const char *v = "sk-abc/def+ghi=jkl/mnopqrstu";
    pdk_mask_set *m = one_secret(v);
    size_t n;
    /* percent-encoded, JSON-escaped */
    char *t = masked_text(m, "next=sk-abc%2Fdef%2Bghi%3Djkl%2Fmnopqrstu&x=1", &n);
    assert_null(strstr(t, "ghi"));
    assert_non_null(strstr(t, "&x=1"));
    free(t);
    t = masked_text(m, "{\"k\":\"sk-abc\\/def+ghi=jkl\\/mnopqrstu\"}", &n);
    assert_null(strstr(t, "ghi"));
    assert_true(n >= 1);
    free(t);
    /* base64 of it at each alignment, standard and URL-safe */
    const char *prefixes[] = {"", "a", "ab"};
    for (size_t i = 0; i < 3; i++) {
        char plain[128];
        snprintf(plain, sizeof(plain), "%sBearer %s", prefixes[i], v);
        char b64[256];
        sodium_bin2base64(b64, sizeof(b64), (const unsigned char *)plain, strlen(plain),
                          sodium_base64_VARIANT_ORIGINAL);
        char *before = strdup(b64);
        t = masked_text(m, b64, &n);
        assert_true(n >= 1);
        /* most of it masked: what is left is under a window on each side */
        size_t left = 0;
        for (char *p = t; *p; p++)
            left += *p != '*';
        assert_true(left < 2 * PDK_MASK_WINDOW);
        free(t);
        for (char *p = before; *p; p++)
            *p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
        t = masked_text(m, before, &n);
        assert_true(n >= 1);
        free(t);
        free(before);
    }
    pdk_mask_set_free(m);
}

static void test_short(void **state)
{
    /* a value shorter than the window is masked whole only; under PDK_MASK_MIN, never */
    pdk_mask_set *m = pdk_mask_set_new();
    pdk_mask_set_add(m, "k3y-5678xy", 10, "short");
    pdk_mask_set_add(m, "1234", 4, "tiny");
    size_t n;
    char *t = masked_text(m, "a=k3y-5678xy b=k3y-5678 c=1234", &n);
    assert_string_equal(t, "a=********** b=k3y-5678 c=1234");
    assert_string_equal(pdk_mask_set_label(m, 0), "short");
    free(t);
    pdk_mask_set_free(m);
    pdk_mask_set *empty = pdk_mask_set_new();
    assert_true(pdk_mask_set_empty(empty));
    assert_int_equal(pdk_mask_text(empty, (char[]){"x"}, 1, NULL, NULL), 0);
    pdk_mask_set_free(empty);
}

/* feed a raw body in slices of `step` bytes; returns what went out */
static char *stream_all(const pdk_mask_set *m, const char *raw, bool chunked, size_t step,
                        int *found)
{
    pdk_mask_stream s;
    pdk_mask_stream_init(&s, m, chunked);
    pdk_buf out = {0};
    size_t len = strlen(raw);
    for (size_t i = 0; i < len; i += step) {
        size_t n = len - i < step ? len - i : step;
        const char *o;
        size_t on;
        pdk_mask_stream_feed(&s, raw + i, n, &o, &on);
        pdk_buf_append(&out, o, on);
    }
    const char *o;
    size_t on;
    pdk_mask_stream_finish(&s, &o, &on);
    pdk_buf_append(&out, o, on);
    if (found)
        *found = s.found_body >= 0 ? 1 : s.found_trailer >= 0 ? 2 : 0;
    pdk_mask_stream_free(&s);
    return pdk_buf_steal(&out);
}

static void test_stream(void **state)
{
    pdk_mask_set *m = one_secret(SECRET);
    const char *plain = "{\"headers\": {\"Authorization\": \"Bearer " SECRET "\"}}\n";
    char *want = strdup(plain);
    char *at = strstr(want, SECRET);
    memset(at, '*', strlen(SECRET));
    /* every slice size: a value cut anywhere is masked, the length is the same */
    for (size_t step = 1; step <= strlen(plain); step++) {
        int found = 0;
        char *got = stream_all(m, plain, false, step, &found);
        assert_string_equal(got, want);
        assert_int_equal(found, 1);
        free(got);
    }
    /* chunked: the value split across chunks of 5 bytes, the framing as it was */
    pdk_buf raw = {0}, chunked_want = {0};
    for (size_t i = 0; i < strlen(plain); i += 5) {
        size_t n = strlen(plain) - i < 5 ? strlen(plain) - i : 5;
        pdk_buf_printf(&raw, "%zx;ext=1\r\n%.*s\r\n", n, (int)n, plain + i);
        pdk_buf_printf(&chunked_want, "%zx;ext=1\r\n%.*s\r\n", n, (int)n, want + i);
    }
    pdk_buf_puts(&raw, "0\r\nX-Trailer: " SECRET "\r\n\r\n");
    char *trailer_stars = stars(strlen(SECRET));
    pdk_buf_printf(&chunked_want, "0\r\nX-Trailer: %s\r\n\r\n", trailer_stars);
    for (size_t step = 1; step <= raw.len; step += 3) {
        char *got = stream_all(m, raw.data, true, step, NULL);
        assert_string_equal(got, chunked_want.data);
        free(got);
    }
    /* only a trailer */
    int found = 0;
    char *got = stream_all(m, "4\r\nabcd\r\n0\r\nX-Echo: " SECRET "\r\n\r\n", true, 7, &found);
    assert_int_equal(found, 2);
    assert_null(strstr(got, "Zk3Qm7"));
    free(got);
    pdk_buf_free(&raw);
    pdk_buf_free(&chunked_want);
    free(trailer_stars);
    free(want);
    pdk_mask_set_free(m);
}

static void test_stream_holds_little(void **state)
{
    /* a read ending in a byte no value has goes on whole, at once; one ending in what could
     * begin a value is held back, and no more than that */
    pdk_mask_set *m = one_secret(SECRET);
    pdk_mask_stream s;
    pdk_mask_stream_init(&s, m, false);
    const char *o;
    size_t n;
    const char *event = "data: {\"delta\": \"hello\"}\n\n";
    pdk_mask_stream_feed(&s, event, strlen(event), &o, &n);
    assert_int_equal(n, strlen(event));
    assert_ptr_equal(o, event); /* not copied */
    pdk_mask_stream_feed(&s, "token: u-9Zk", 12, &o, &n);
    assert_int_equal(n, 7); /* "u-9Zk" waits */
    assert_memory_equal(o, "token: ", 7);
    pdk_mask_stream_feed(&s, "3Qm7Rt2Vx8Lp4Wn6Hs1Jd5Fg0Bc.\n", 29, &o, &n);
    assert_int_equal(n, strlen(SECRET) + 2);
    for (size_t i = 0; i < strlen(SECRET); i++)
        assert_int_equal(o[i], '*');
    assert_memory_equal(o + strlen(SECRET), ".\n", 2);
    /* what is held at the end goes out as it is: too short to be a value's */
    pdk_mask_stream_feed(&s, "u-9Zk3", 6, &o, &n);
    assert_int_equal(n, 0);
    pdk_mask_stream_finish(&s, &o, &n);
    assert_int_equal(n, 6);
    assert_memory_equal(o, "u-9Zk3", 6);
    pdk_mask_stream_free(&s);
    /* nothing to mask: the input itself */
    pdk_mask_set *empty = pdk_mask_set_new();
    pdk_mask_stream_init(&s, empty, true);
    pdk_mask_stream_feed(&s, "5\r\nhello\r\n", 10, &o, &n);
    assert_int_equal(n, 10);
    pdk_mask_stream_free(&s);
    pdk_mask_set_free(empty);
    pdk_mask_set_free(m);
}

static void test_body_content(void **state)
{
    const char *raw = "3;a=b\r\nabc\r\n2\r\nde\r\n0\r\nT: v\r\n\r\n";
    pdk_body_content k = pdk_body_content_start(true);
    pdk_buf content = {0}, trailer = {0};
    const char *p = raw, *end = raw + strlen(raw);
    while (p < end) {
        const char *piece = NULL;
        bool is_trailer = false;
        size_t n = pdk_body_content_step(&k, &p, end, &piece, &is_trailer);
        if (n)
            pdk_buf_append(is_trailer ? &trailer : &content, piece, n);
    }
    assert_string_equal(content.data, "abcde");
    assert_string_equal(trailer.data, "T: v\r\n\r\n");
    pdk_buf_free(&content);
    pdk_buf_free(&trailer);
}

/* A body looked at before the parser reads it (a request held for a human). */
static void test_body_prefix(void **state)
{
    const char *raw = "3;a=b\r\nabc\r\n2\r\nde\r\n0\r\nT: v\r\n\r\nGET / HTTP/1.1\r\n";
    size_t body = strlen("3;a=b\r\nabc\r\n2\r\nde\r\n0\r\nT: v\r\n\r\n");
    pdk_buf content = {0};
    pdk_body_prefix p = pdk_body_prefix_scan(true, 0, raw, strlen(raw), &content, 4);
    assert_true(p.complete);
    assert_int_equal(p.raw, body); /* the next request is not the body's */
    assert_int_equal(p.content, 5);
    assert_int_equal(content.len, 4); /* the first content_max bytes */
    assert_memory_equal(content.data, "abcd", 4);
    pdk_buf_free(&content);
    for (size_t n = 0; n < body; n++) { /* every shorter prefix: not whole yet */
        p = pdk_body_prefix_scan(true, 0, raw, n, NULL, 0);
        assert_false(p.complete);
        assert_int_equal(p.raw, n);
    }
    p = pdk_body_prefix_scan(true, 0, "0\r\n\r\n", 5, NULL, 0); /* no trailer fields */
    assert_true(p.complete);
    assert_int_equal(p.raw, 5);
    assert_int_equal(p.content, 0);
    p = pdk_body_prefix_scan(false, 5, "helloGET", 8, NULL, 0);
    assert_true(p.complete);
    assert_int_equal(p.raw, 5);
    p = pdk_body_prefix_scan(false, 11, "hello", 5, NULL, 0);
    assert_false(p.complete);
    assert_int_equal(p.content, 5);
}

static void test_registry(void **state)
{
    pdk_redact_clear();
    uint64_t g0 = pdk_redact_generation();
    pdk_redact_add_placeholder("pdk-ph-0123456789abcdef");
    assert_int_equal(pdk_redact_generation(), g0); /* a placeholder is not a value */
    pdk_redact_add_named("real-secret-value-42", "api");
    assert_true(pdk_redact_generation() > g0);
    /* the audit log loses both; what goes into a sandbox loses the value only */
    char *a = pdk_redact_text("pdk-ph-0123456789abcdef real-secret-value-42");
    assert_string_equal(a, "[REDACTED] [REDACTED]");
    free(a);
    char *v = pdk_redact_values_text("pdk-ph-0123456789abcdef real-secret-value-42");
    assert_string_equal(v, "pdk-ph-0123456789abcdef [REDACTED]");
    free(v);
    pdk_redact_clear();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_encodings),
        cmocka_unit_test(test_short),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_stream_holds_little),
        cmocka_unit_test(test_body_content),
        cmocka_unit_test(test_body_prefix),
        cmocka_unit_test(test_registry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
