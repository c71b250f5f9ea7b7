/* test_session.c: what session metadata and messages do with bytes that are not text: a
 * path that is not UTF-8 goes to session.json as its bytes and comes back the same
 * (session.c); a message shows C0/C1 controls, bidirectional controls and bytes that are
 * not UTF-8 escaped, on one line, and stays as it is when escaped again (util.c, error.c). */
#include "display.h"
#include "error.h"
#include "session.h"
#include "util.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_escape(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain text/ok", "plain text/ok"},
        {"a\nb\tc\rd", "a\\nb\\tc\\rd"},
        {"esc\x1b[2Jx\x7f", "esc\\x1b[2Jx\\x7f"},
        {"bad\xff\xfe", "bad\\xff\\xfe"},
        {"c1\xc2\x9b"
         "2J",
         "c1\\u009b2J"},                                 /* U+009B, CSI */
        {"rlo\xe2\x80\xaegnp.exe", "rlo\\u202egnp.exe"}, /* U+202E */
        {"iso\xe2\x81\xa6x\xe2\x81\xa9", "iso\\u2066x\\u2069"},
        {"ls\xe2\x80\xa8", "ls\\u2028"}, /* line separator */
        {"caf\xc3\xa9 \xe6\xbc\xa2\xf0\x9f\x99\x82", "caf\xc3\xa9 \xe6\xbc\xa2\xf0\x9f\x99\x82"},
        {"over\xc0\xaf", "over\\xc0\\xaf"},          /* overlong "/" */
        {"surr\xed\xa0\x80", "surr\\xed\\xa0\\x80"}, /* a surrogate */
        {"cut\xe6\xbc", "cut\\xe6\\xbc"},            /* a sequence cut short */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = pdk_display(cases[i].in);
        assert_string_equal(got, cases[i].out);
        assert_true(pdk_display_is_plain(got, strlen(got), PDK_DISPLAY_RAW_BACKSLASH));
        assert_int_equal(pdk_display_is_plain(cases[i].in, strlen(cases[i].in), 0),
                         strcmp(cases[i].in, cases[i].out) == 0);
        free(got);
    }
}

static void test_error_one_line(void **state)
{
    (void)state;
    pdk_error err = {0};
    pdk_error_set(&err, 0, "workspace %s does not exist", "/tmp/a\nb\xff");
    assert_string_equal(err.message, "workspace /tmp/a\\nb\\xff does not exist");
    pdk_error_prefix(&err, "session %s", "x\x1b");
    assert_string_equal(err.message, "session x\\x1b: workspace /tmp/a\\nb\\xff does not exist");
    /* A long message is cut at a character's boundary. */
    char big[2000];
    memset(big, 'a', sizeof(big));
    memcpy(big + 1019, "\xe6\xbc\xa2", 3);
    big[sizeof(big) - 1] = '\0';
    pdk_error_set(&err, 0, "%s\n", big);
    assert_true(pdk_display_is_plain(err.message, strlen(err.message), PDK_DISPLAY_RAW_BACKSLASH));
}

static void test_path_bytes(void **state)
{
    (void)state;
    const char *path = "/tmp/ws-\xff\xfe-x";
    json_t *j = pdk_session_json_path(path);
    assert_non_null(j);
    assert_true(json_is_object(j));
    assert_string_equal(json_string_value(json_object_get(j, "hex")), "2f746d702f77732dfffe2d78");
    assert_string_equal(json_string_value(json_object_get(j, "text")), "/tmp/ws-\\xff\\xfe-x");
    json_t *root =
        json_pack("{s:i, s:o, s:s, s:[o, s], s:[{s:o, s:i}]}", "format", 1, "workspace", j, "mode",
                  "overlay", "placeholders", pdk_session_json_path(".a\xff"), ".b", "committed",
                  "path", pdk_session_json_path("c\xfe"), "ctime_ns", 7);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    pdk_session *s = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_session_parse_metadata("nu8", text, strlen(text), &s, &err), 0);
    free(text);
    assert_string_equal(s->workspace, path);
    assert_string_equal(s->placeholders[0], ".a\xff");
    assert_string_equal(s->placeholders[1], ".b");
    assert_int_equal(s->committed_count, 1);
    assert_string_equal(s->committed[0].path, "c\xfe");
    pdk_session_free(s);

    /* A UTF-8 path stays a plain string. */
    j = pdk_session_json_path("/home/\xc3\xa9t\xc3\xa9");
    assert_true(json_is_string(j));
    json_decref(j);

    /* Bad hex, or a NUL inside: no path. */
    static const char *bad[] = {
        "{\"format\":1,\"workspace\":{\"hex\":\"2f7g\"},\"mode\":\"overlay\"}",
        "{\"format\":1,\"workspace\":{\"hex\":\"2f00\"},\"mode\":\"overlay\"}",
        "{\"format\":1,\"workspace\":{\"hex\":\"2f7\"},\"mode\":\"overlay\"}",
        "{\"format\":1,\"workspace\":{\"text\":\"/x\"},\"mode\":\"overlay\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        s = NULL;
        assert_int_equal(pdk_session_parse_metadata("b", bad[i], strlen(bad[i]), &s, &err), -1);
        assert_null(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_error_one_line),
        cmocka_unit_test(test_path_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
