/* fuzz_display.c: libFuzzer target for the escaping of text from a sandbox (display.c).
 *
 * The first byte picks the flags (keep tab, keep newline, raw backslash, quote); the rest is the
 * text, any bytes. Checked: the escaped text is valid UTF-8 with no control (but a tab or
 * newline the flags keep), no DEL and no character that hides (escaping it again with raw
 * backslashes changes nothing); pdk_display_is_plain says exactly whether anything was
 * escaped; with backslashes escaped the text reads back (\xHH, \uHHHH, \UHHHHHHHH, \t, \n,
 * \r, \\) to the very input; as a JSON string (when the input is valid UTF-8),
 * pdk_display_json_dumps gives a document that parses back to the same string and has no
 * hiding character left raw. Built with -fsanitize=fuzzer (fuzz/meson.build, -Dfuzz=true)
 * and, without libFuzzer, as fuzz-display-replay.
 */
#include "display.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The UTF-8 of cp. */
static void put_utf8(pdk_buf *b, uint32_t cp)
{
    unsigned char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (unsigned char)cp, n = 1;
    } else if (cp < 0x800) {
        u[0] = (unsigned char)(0xc0 | (cp >> 6)), u[1] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (unsigned char)(0xe0 | (cp >> 12));
        u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u[0] = (unsigned char)(0xf0 | (cp >> 18));
        u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        u[3] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    pdk_buf_append(b, u, n);
}

static uint32_t hex_digits(const char *s, size_t n)
{
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int d = pdk_hex_value((unsigned char)s[i]);
        if (d < 0)
            abort();
        v = v * 16 + (uint32_t)d;
    }
    return v;
}

/* The escaped text read back (every backslash starts an escape). */
static void unescape(pdk_buf *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\') {
            pdk_buf_append(out, &s[i], 1);
            continue;
        }
        if (++i >= len)
            abort();
        char c = s[i];
        if (c == '\\' || c == '"' || c == 't' || c == 'n' || c == 'r') {
            char v = c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : c;
            pdk_buf_append(out, &v, 1);
        } else if (c == 'x' && i + 2 < len) {
            unsigned char v = (unsigned char)hex_digits(s + i + 1, 2);
            pdk_buf_append(out, &v, 1);
            i += 2;
        } else if (c == 'u' && i + 4 < len) {
            put_utf8(out, hex_digits(s + i + 1, 4));
            i += 4;
        } else if (c == 'U' && i + 8 < len) {
            put_utf8(out, hex_digits(s + i + 1, 8));
            i += 8;
        } else {
            abort();
        }
    }
}

/* Valid UTF-8, and no raw control or hiding character (joiners and selectors are left to
 * the re-escaping check). */
static void check_clean(const char *s, size_t len, unsigned flags)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        unsigned char c = u[i];
        uint32_t cp;
        size_t n;
        if (c < 0x80) {
            cp = c, n = 1;
        } else if (c >= 0xc2 && c <= 0xdf) {
            cp = c & 0x1f, n = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            cp = c & 0x0f, n = 3;
        } else if (c >= 0xf0 && c <= 0xf4) {
            cp = c & 0x07, n = 4;
        } else {
            abort();
        }
        if (i + n > len)
            abort();
        for (size_t k = 1; k < n; k++) {
            if ((u[i + k] & 0xc0) != 0x80)
                abort();
            cp = (cp << 6) | (u[i + k] & 0x3f);
        }
        if ((cp == '\t' && (flags & PDK_DISPLAY_KEEP_TAB)) ||
            (cp == '\n' && (flags & PDK_DISPLAY_KEEP_NEWLINE)))
            ;
        else if (pdk_display_code_point_hides(cp))
            abort();
        i += n;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned flags = data[0] & (PDK_DISPLAY_KEEP_TAB | PDK_DISPLAY_KEEP_NEWLINE |
                                PDK_DISPLAY_RAW_BACKSLASH | PDK_DISPLAY_QUOTE);
    const char *in = (const char *)data + 1;
    size_t len = size - 1;

    pdk_buf out = {0}, again = {0}, twice = {0};
    pdk_display_escape(&out, in, len, flags);
    pdk_display_escape(&again, in, len, flags);
    if (out.len != again.len || memcmp(out.data, again.data, out.len) != 0)
        abort();
    check_clean(out.data, out.len, flags);
    bool same = out.len == len && memcmp(out.data, in, len) == 0;
    if (pdk_display_is_plain(in, len, flags) != same)
        abort();
    /* nothing left to escape (the escapes' own backslashes and quotes aside) */
    unsigned raw = (flags | PDK_DISPLAY_RAW_BACKSLASH) & ~(unsigned)PDK_DISPLAY_QUOTE;
    if (!pdk_display_is_plain(out.data, out.len, raw))
        abort();
    pdk_display_escape(&twice, out.data, out.len, raw);
    if (twice.len != out.len || memcmp(twice.data, out.data, out.len) != 0)
        abort();
    if (!(flags & PDK_DISPLAY_RAW_BACKSLASH)) {
        pdk_buf back = {0};
        unescape(&back, out.data, out.len);
        if (back.len != len || (len && memcmp(back.data, in, len) != 0))
            abort();
        pdk_buf_free(&back);
    }

    /* as a JSON string */
    json_t *str = json_stringn(in, len);
    if (str) {
        json_t *doc = json_pack("{s:o}", "v", str);
        char *text = pdk_display_json_dumps(doc, JSON_COMPACT);
        if (!text)
            abort();
        check_clean(text, strlen(text), 0);
        json_error_t jerr;
        json_t *parsed = json_loads(text, JSON_ALLOW_NUL, &jerr);
        if (!parsed || !json_equal(parsed, doc))
            abort();
        json_decref(parsed);
        free(text);
        json_decref(doc);
    }
    /* a cut never splits a character: what it keeps reads back to that much of the input */
    size_t cut = pdk_display_cut(in, len, (size_t)data[0]);
    if (cut > len)
        abort();
    if (!(flags & PDK_DISPLAY_RAW_BACKSLASH)) {
        pdk_buf part = {0}, back = {0};
        pdk_display_escape(&part, in, cut, flags);
        unescape(&back, part.data, part.len);
        if (back.len != cut || (cut && memcmp(back.data, in, cut) != 0))
            abort();
        pdk_buf_free(&part);
        pdk_buf_free(&back);
    }
    pdk_buf_free(&out);
    pdk_buf_free(&again);
    pdk_buf_free(&twice);
    return 0;
}
