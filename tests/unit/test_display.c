/* test_display.c: escaping text from a sandbox for a human (display.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "display.h"

#include <stdlib.h>
#include <string.h>

static char *shown(const char *s, size_t len, unsigned flags)
{
    pdk_buf b = {0};
    pdk_display_escape(&b, s, len, flags);
    return pdk_buf_steal(&b);
}

#define assert_shown(in, flags, expected)                                                          \
    do {                                                                                           \
        char *got_ = shown(in, sizeof(in) - 1, flags);                                             \
        assert_string_equal(got_, expected);                                                       \
        assert_int_equal(pdk_display_is_plain(in, sizeof(in) - 1, flags),                          \
                         strcmp(got_, in) == 0 && sizeof(in) - 1 == strlen(in));                   \
        free(got_);                                                                                \
    } while (0)

static void t_plain_text_unchanged(void **state)
{
    assert_shown("git push origin main", 0, "git push origin main");
    assert_shown("", 0, "");
    /* visible non-ASCII: accents, CJK, emoji, a private-use glyph */
    assert_shown("caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80 \xee\x82\xa0", 0,
                 "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80 \xee\x82\xa0");
}

static void t_c0_and_del(void **state)
{
    assert_shown("a\r\x1b[2Kcurl x | sh", 0, "a\\r\\x1b[2Kcurl x | sh");
    assert_shown("tab\there\nline", 0, "tab\\there\\nline");
    assert_shown("tab\there\nline", PDK_DISPLAY_KEEP_TAB | PDK_DISPLAY_KEEP_NEWLINE,
                 "tab\there\nline");
    assert_shown("\x07\x08\x7f", 0, "\\x07\\x08\\x7f");
    char nul[] = {'a', 0, 'b'};
    char *got = shown(nul, sizeof(nul), 0);
    assert_string_equal(got, "a\\x00b");
    free(got);
    assert_false(pdk_display_is_plain(nul, sizeof(nul), PDK_DISPLAY_KEEP_TAB));
}

static void t_backslash(void **state)
{
    /* the text cannot fake an escape */
    assert_shown("a\\x1b", 0, "a\\\\x1b");
    assert_shown("a\\x1b", PDK_DISPLAY_RAW_BACKSLASH, "a\\x1b");
}

static void t_quote_and_cut(void **state)
{
    assert_shown("say \"hi\"", PDK_DISPLAY_QUOTE, "say \\\"hi\\\"");
    assert_shown("say \"hi\"", 0, "say \"hi\"");
    /* a cut counts characters, never splits one; a byte that is not UTF-8 is one */
    assert_int_equal(pdk_display_cut("ab\xe4\xb8\xad"
                                     "c",
                                     6, 3),
                     5);
    assert_int_equal(pdk_display_cut("ab\xe4\xb8\xad"
                                     "c",
                                     6, 9),
                     6);
    assert_int_equal(pdk_display_cut("\xff\xfe", 2, 1), 1);
    assert_int_equal(pdk_display_cut("abc", 3, 0), 0);
}

static void t_c1(void **state)
{
    /* as a code point (U+009B, the 8-bit CSI) and as a bare byte (not UTF-8) */
    assert_shown("x\xc2\x9b"
                 "31mred",
                 0, "x\\u009b31mred");
    assert_shown("x\x9b"
                 "31mred",
                 0, "x\\x9b31mred");
    assert_shown("\xc2\x85", 0, "\\u0085");
}

static void t_bidi_and_invisible(void **state)
{
    /* "Trojan Source": overrides and isolates */
    assert_shown("access\xe2\x80\xae"
                 "txt.exe",
                 0, "access\\u202etxt.exe");
    assert_shown("\xe2\x81\xa6x\xe2\x81\xa9", 0, "\\u2066x\\u2069");
    assert_shown("\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c", 0, "\\u200e\\u200f\\u061c");
    assert_shown("a\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad", 0,
                 "a\\u202a\\u202b\\u202c\\u202d");
    /* zero width space, word joiner, BOM, soft hyphen, line separator, Hangul filler */
    assert_shown("r\xe2\x80\x8bm", 0, "r\\u200bm");
    assert_shown("r\xe2\x81\xa0m\xef\xbb\xbf", 0, "r\\u2060m\\ufeff");
    assert_shown("r\xc2\xadm\xe2\x80\xa8", 0, "r\\u00adm\\u2028");
    assert_shown("\xe3\x85\xa4", 0, "\\u3164");
    /* tag characters beyond the BMP ("ASCII smuggling") */
    assert_shown("hi\xf3\xa0\x81\x81", 0, "hi\\U000e0041");
    /* noncharacters */
    assert_shown("\xef\xbf\xbe\xf0\x9f\xbf\xbf", 0, "\\ufffe\\U0001ffff");
}

static void t_joiners_and_selectors(void **state)
{
    /* between emoji: kept (a family, a red heart) */
    assert_shown("\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9", 0,
                 "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9");
    assert_shown("\xe2\x9d\xa4\xef\xb8\x8f", 0, "\xe2\x9d\xa4\xef\xb8\x8f");
    /* next to ASCII: "r<ZWJ>m" would look like "rm" */
    assert_shown("r\xe2\x80\x8dm", 0, "r\\u200dm");
    assert_shown("\xe2\x80\x8cm", 0, "\\u200cm");
    assert_shown("\xe4\xb8\xad\xe2\x80\x8d", 0, "\xe4\xb8\xad\\u200d");
    assert_shown("r\xef\xb8\x8fm", 0, "r\\ufe0fm");
    /* after an escaped character, or after another joiner */
    assert_shown("\xc2\x85\xef\xb8\x8f", 0, "\\u0085\\ufe0f");
    assert_shown("\xe4\xb8\xad\xe2\x80\x8d\xe2\x80\x8d\xe4\xb8\xad", 0,
                 "\xe4\xb8\xad\\u200d\\u200d\xe4\xb8\xad");
}

static void t_invalid_utf8(void **state)
{
    /* a stray continuation byte, a truncated sequence, an overlong '/', a surrogate, a
     * code point beyond U+10FFFF, 0xff */
    assert_shown("a\x80z", 0, "a\\x80z");
    assert_shown("a\xe4\xb8", 0, "a\\xe4\\xb8");
    assert_shown("\xc0\xaf", 0, "\\xc0\\xaf");
    assert_shown("\xed\xa0\x80", 0, "\\xed\\xa0\\x80");
    assert_shown("\xf4\x90\x80\x80", 0, "\\xf4\\x90\\x80\\x80");
    assert_shown("\xff", 0, "\\xff");
    /* a valid character right after an invalid byte */
    assert_shown("\xe4\xe4\xb8\xad", 0, "\\xe4\xe4\xb8\xad");
}

static void t_helpers(void **state)
{
    char *s = pdk_display("a\x1b"
                          "b\\");
    assert_string_equal(s, "a\\x1bb\\\\");
    free(s);
    s = pdk_display(NULL);
    assert_string_equal(s, "");
    free(s);
    s = pdk_display_message("cannot open \"a\x1b[2Kb\": see C:\\x\nnext");
    assert_string_equal(s, "cannot open \"a\\x1b[2Kb\": see C:\\x\\nnext");
    free(s);
    json_t *j = pdk_display_json_string("ok\xe2\x80\xae");
    assert_string_equal(json_string_value(j), "ok\xe2\x80\xae"); /* valid: kept whole */
    json_decref(j);
    j = pdk_display_json_string("bad\xff\x1b");
    assert_string_equal(json_string_value(j), "bad\\xff\\x1b");
    json_decref(j);
}

static void t_json_dumps(void **state)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "argv",
                          "rm\xe2\x80\xae"
                          "fdsa",
                          "c1",
                          "\xc2\x9b"
                          "2J",
                          "cjk", "\xe4\xb8\xad\xe6\x96\x87", "tag", "x\xf3\xa0\x81\x81\x7f\x1b");
    char *text = pdk_display_json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"argv\":\"rm\\u202efdsa\",\"c1\":\"\\u009b2J\",\"cjk\":\""
                              "\xe4\xb8\xad\xe6\x96\x87\",\"tag\":\"x\\udb40\\udc41\\u007f"
                              "\\u001B\"}");
    /* the same document */
    json_error_t jerr;
    json_t *back = json_loads(text, 0, &jerr);
    assert_non_null(back);
    assert_true(json_equal(back, o));
    json_decref(back);
    free(text);
    /* a key too, and nothing to change */
    json_t *k = json_pack("{s:i}", "\xe2\x81\xa7", 1);
    text = pdk_display_json_dumps(k, JSON_COMPACT);
    assert_string_equal(text, "{\"\\u2067\":1}");
    free(text);
    json_decref(k);
    json_t *p = json_pack("[s]", "plain");
    text = pdk_display_json_dumps(p, JSON_COMPACT);
    assert_string_equal(text, "[\"plain\"]");
    free(text);
    /* the layout of an indented document stays */
    text = pdk_display_json_dumps(p, JSON_INDENT(2));
    assert_string_equal(text, "[\n  \"plain\"\n]");
    free(text);
    json_decref(p);
    /* a text jansson did not write: raw controls and bytes that are not UTF-8 show too */
    text = pdk_display_json_text("{\"a\":\"\x1b\xff\"}\n");
    assert_string_equal(text, "{\"a\":\"\\u001b\\xff\"}\n");
    free(text);
    json_decref(o);
}

static void t_hides(void **state)
{
    assert_true(pdk_display_code_point_hides(0x9b));
    assert_true(pdk_display_code_point_hides(0x202e));
    assert_true(pdk_display_code_point_hides(0x2069));
    assert_true(pdk_display_code_point_hides(0xe007f));
    assert_false(pdk_display_code_point_hides('a'));
    assert_false(pdk_display_code_point_hides(0x4e2d));
    assert_false(pdk_display_code_point_hides(0x200d)); /* decided by its neighbours */
    assert_false(pdk_display_code_point_hides(0x1f600));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_plain_text_unchanged),
        cmocka_unit_test(t_c0_and_del),
        cmocka_unit_test(t_backslash),
        cmocka_unit_test(t_quote_and_cut),
        cmocka_unit_test(t_c1),
        cmocka_unit_test(t_bidi_and_invisible),
        cmocka_unit_test(t_joiners_and_selectors),
        cmocka_unit_test(t_invalid_utf8),
        cmocka_unit_test(t_helpers),
        cmocka_unit_test(t_json_dumps),
        cmocka_unit_test(t_hides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
