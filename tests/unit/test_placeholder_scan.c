/* test_placeholder_scan.c: a placeholder found however a request writes it
 * (placeholder_scan.c): whole, cut, with another prefix, in hex, in base64 (standard and
 * URL-safe, at every alignment), %-encoded, \u-escaped; across slices; only for the ids
 * that count; and ordinary text (digests, UUIDs, base64 blobs) never taken for one.
 */
#include "placeholder_scan.h"
#include "util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#define RANDOM "3f9a0c7e51b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8"
#define PH     "pdk-ph-" RANDOM
#define OTHER  "t-0123456789abcdef0123456789abcdef0123456789abcdef"

static pdk_placeholder_set *set_of_two(void)
{
    pdk_placeholder_set *s = pdk_placeholder_set_new();
    assert_int_equal(pdk_placeholder_set_add(s, PH, 0), 0);
    assert_int_equal(pdk_placeholder_set_add(s, OTHER, 1), 0);
    return s;
}

static int find(const pdk_placeholder_set *s, const char *text, pdk_placeholder_found *f)
{
    pdk_placeholder_found local;
    if (!f)
        f = &local;
    return pdk_placeholder_scan_string(s, NULL, NULL, text, strlen(text), f) ? f->id : -1;
}

static char *base64(const char *in, bool url)
{
    int variant = url ? sodium_base64_VARIANT_URLSAFE : sodium_base64_VARIANT_ORIGINAL;
    size_t cap = sodium_base64_ENCODED_LEN(strlen(in), variant);
    char *out = malloc(cap);
    sodium_bin2base64(out, cap, (const unsigned char *)in, strlen(in), variant);
    return out;
}

static void test_plain_and_cut(void **state)
{
    pdk_placeholder_set *s = set_of_two();
    pdk_placeholder_found f;
    assert_int_equal(find(s, "Bearer " PH, &f), 0);
    assert_string_equal(f.form, "plain");
    assert_int_equal(find(s, "x=" OTHER "&y=1", NULL), 1);
    /* another prefix, upper case, a part of it (16 digits: one half of a placeholder cut in
     * two always has them) */
    assert_int_equal(find(s, "sk-proj-" RANDOM, NULL), 0);
    assert_int_equal(find(s, "KEY 3F9A0C7E51B2D4F6A8C0E2B4", NULL), 0);
    assert_int_equal(find(s,
                          "..."
                          "d6f8a0c2e4b6d8f0"
                          "...",
                          NULL),
                     0);
    /* 15 digits of it: not enough */
    assert_int_equal(find(s, "d6f8a0c2e4b6d8f", NULL), -1);
    /* the 48 digits cut by other text into pieces under 16: not this scan's (worth nothing) */
    assert_int_equal(find(s, "3f9a0c7e51b2 d4f6a8c0e2b4 d6f8a0c2e4b6 d8f0a2c4e6b8", NULL), -1);
    pdk_placeholder_set_free(s);
}

static void test_escapes(void **state)
{
    pdk_placeholder_set *s = set_of_two();
    pdk_placeholder_found f;
    char buf[1024];
    /* every character %-encoded */
    size_t o = 0;
    for (const char *p = PH; *p; p++)
        o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%%%02X", (unsigned char)*p);
    assert_int_equal(find(s, buf, &f), 0);
    char how[96];
    pdk_placeholder_found_describe(&f, how, sizeof(how));
    assert_string_equal(how, "plain, %-encoded");
    /* JSON \u escapes, some characters only */
    o = 0;
    for (const char *p = RANDOM; *p; p++)
        o += (size_t)((p - RANDOM) % 2 ? snprintf(buf + o, sizeof(buf) - o, "\\u%04x", *p)
                                       : snprintf(buf + o, sizeof(buf) - o, "%c", *p));
    assert_int_equal(find(s, buf, &f), 0);
    assert_true(f.escapes & PDK_PLACEHOLDER_JSON);
    /* \x */
    o = 0;
    for (const char *p = RANDOM; *p; p++)
        o += (size_t)snprintf(buf + o, sizeof(buf) - o, "\\x%02x", *p);
    assert_int_equal(find(s, buf, &f), 0);
    /* escapes that are not: literal, and the next one still read */
    assert_int_equal(find(s, "%%zz\\q\\u12%33f9a0c7e51b2d4f6a8c0e2b", NULL), 0);
    pdk_placeholder_set_free(s);
}

static void test_hex_and_base64(void **state)
{
    pdk_placeholder_set *s = set_of_two();
    pdk_placeholder_found f;
    /* the hex of its characters */
    char hex[256] = "";
    for (const char *p = PH; *p; p++)
        snprintf(hex + strlen(hex), sizeof(hex) - strlen(hex), "%02x", (unsigned char)*p);
    assert_int_equal(find(s, hex, &f), 0);
    assert_string_equal(f.form, "hex");
    /* base64 of it after 0, 1, 2, 3... bytes of something else: every alignment */
    for (int url = 0; url < 2; url++)
        for (size_t before = 0; before < 6; before++) {
            char plain[128];
            snprintf(plain, sizeof(plain), "%.*sBearer %s", (int)before, "xxxxxx", PH);
            char *b = base64(plain, url);
            assert_int_equal(find(s, b, &f), 0);
            assert_string_equal(f.form, "base64");
            /* and %-encoded on top (a base64 value in a URL) */
            char esc[512] = "";
            for (char *p = b; *p; p++)
                if (*p == '+' || *p == '/' || *p == '=')
                    snprintf(esc + strlen(esc), sizeof(esc) - strlen(esc), "%%%02X", *p);
                else
                    snprintf(esc + strlen(esc), sizeof(esc) - strlen(esc), "%c", *p);
            assert_int_equal(find(s, esc, NULL), 0);
            free(b);
        }
    pdk_placeholder_set_free(s);
}

static void test_slices_and_breaks(void **state)
{
    pdk_placeholder_set *s = set_of_two();
    const char *text = "{\"token\": \"%33%669a0c7e51b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8\"}";
    /* cut anywhere, one byte at a time included: found the same */
    for (size_t cut = 0; cut <= strlen(text); cut++) {
        pdk_placeholder_scan sc;
        pdk_placeholder_found f;
        pdk_placeholder_scan_start(&sc, s, NULL, NULL);
        bool hit = pdk_placeholder_scan_feed(&sc, text, cut, &f) ||
                   pdk_placeholder_scan_feed(&sc, text + cut, strlen(text) - cut, &f);
        assert_true(hit);
        assert_int_equal(f.id, 0);
    }
    /* a break between two halves: each half alone has 24 digits, still found */
    pdk_placeholder_scan sc;
    pdk_placeholder_found f;
    pdk_placeholder_scan_start(&sc, s, NULL, NULL);
    assert_false(pdk_placeholder_scan_feed(&sc, "3f9a0c7e51b2d4", 14, &f));
    assert_false(pdk_placeholder_scan_break(&sc, &f));
    assert_false(pdk_placeholder_scan_feed(&sc, "f6a8c0e2b4d6f8", 14, &f)); /* runs ended */
    pdk_placeholder_set_free(s);
}

static bool only_one(void *arg, int id)
{
    return id == 1;
}

static void test_wanted(void **state)
{
    pdk_placeholder_set *s = set_of_two();
    pdk_placeholder_found f;
    assert_false(pdk_placeholder_scan_string(s, only_one, NULL, PH, strlen(PH), &f));
    assert_true(
        pdk_placeholder_scan_string(s, only_one, NULL, PH " " OTHER, strlen(PH " " OTHER), &f));
    assert_int_equal(f.id, 1);
    pdk_placeholder_set_free(s);
}

static void test_not_a_placeholder(void **state)
{
    pdk_placeholder_set *s = set_of_two();
    assert_int_equal(pdk_placeholder_set_add(s, "short", 2), -1);
    assert_int_equal(
        pdk_placeholder_set_add(s, "pdk-ph-3F9A0C7E51B2D4F6A8C0E2B4D6F8A0C2E4B6D8F0A2C4E6B8", 2),
        -1);
    assert_int_equal(pdk_placeholder_set_add(s, PH, -1), -1);
    /* what requests carry every day */
    const char *ordinary[] = {
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "550e8400-e29b-41d4-a716-446655440000",
        "aGVsbG8gd29ybGQsIHRoaXMgaXMgYSBwZXJmZWN0bHkgb3JkaW5hcnkgYmFzZTY0IGJsb2I=",
        "/v1/items?page=2&per_page=100&sort=created_at",
        "0000000000000000000000000000000000000000000000000000000000000000",
        "%00%01%02%ff%zz\\u00e9\\u20ac",
    };
    for (size_t i = 0; i < sizeof(ordinary) / sizeof(*ordinary); i++)
        assert_int_equal(find(s, ordinary[i], NULL), -1);
    /* an empty set finds nothing */
    pdk_placeholder_set *empty = pdk_placeholder_set_new();
    assert_int_equal(find(empty, PH, NULL), -1);
    pdk_placeholder_set_free(empty);
    pdk_placeholder_set_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_and_cut),  cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_hex_and_base64), cmocka_unit_test(test_slices_and_breaks),
        cmocka_unit_test(test_wanted),         cmocka_unit_test(test_not_a_placeholder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
