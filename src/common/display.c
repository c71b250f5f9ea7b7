/* display.c: see display.h. */
#include "display.h"

#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (n bytes left, n > 0) and its code point; 0 when
 * the byte at s starts none (an overlong form, a surrogate, beyond U+10FFFF, a stray or
 * missing continuation byte). */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, v = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, v = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

/* Code points that control the terminal, reorder or hide text. Ranges, sorted. */
static const struct {
    uint32_t first, last;
} hiding[] = {
    {0x0000, 0x001f},   /* C0 controls */
    {0x007f, 0x009f},   /* DEL, C1 controls (U+009B is a CSI) */
    {0x00ad, 0x00ad},   /* soft hyphen */
    {0x034f, 0x034f},   /* combining grapheme joiner */
    {0x0600, 0x0605},   /* Arabic format characters */
    {0x061c, 0x061c},   /* Arabic letter mark (bidi) */
    {0x06dd, 0x06dd},   /* Arabic end of ayah */
    {0x070f, 0x070f},   /* Syriac abbreviation mark */
    {0x0890, 0x0891},   /* Arabic pound and piastre marks above */
    {0x08e2, 0x08e2},   /* Arabic disputed end of ayah */
    {0x115f, 0x1160},   /* Hangul choseong and jungseong fillers */
    {0x17b4, 0x17b5},   /* Khmer inherent vowels */
    {0x180b, 0x180f},   /* Mongolian free variation selectors, vowel separator */
    {0x200b, 0x200b},   /* zero width space */
    {0x200e, 0x200f},   /* left-to-right and right-to-left marks */
    {0x2028, 0x202e},   /* line and paragraph separators, bidi embeddings and overrides */
    {0x2060, 0x206f},   /* word joiner, invisible operators, bidi isolates, deprecated */
    {0x3164, 0x3164},   /* Hangul filler */
    {0xfdd0, 0xfdef},   /* noncharacters */
    {0xfeff, 0xfeff},   /* zero width no-break space (BOM) */
    {0xffa0, 0xffa0},   /* halfwidth Hangul filler */
    {0xfff9, 0xfffb},   /* interlinear annotation controls */
    {0x110bd, 0x110bd}, /* Kaithi number sign */
    {0x110cd, 0x110cd}, /* Kaithi number sign above */
    {0x13430, 0x1343f}, /* Egyptian hieroglyph format controls */
    {0x1bca0, 0x1bca3}, /* shorthand format controls */
    {0x1d173, 0x1d17a}, /* musical symbol format controls */
    {0xe0000, 0xe0fff}, /* tags (invisible ASCII), variation selectors supplement */
};

bool pdk_display_code_point_hides(uint32_t cp)
{
    if ((cp & 0xfffe) == 0xfffe)
        return true; /* U+FFFE, U+FFFF of every plane: noncharacters */
    size_t lo = 0, hi = PDK_ARRAY_SIZE(hiding);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < hiding[mid].first)
            hi = mid;
        else if (cp > hiding[mid].last)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

/* Zero width non-joiner and joiner, variation selectors: shown only next to what needs
 * them. */
static bool is_joiner(uint32_t cp)
{
    return cp == 0x200c || cp == 0x200d;
}

static bool is_selector(uint32_t cp)
{
    return cp >= 0xfe00 && cp <= 0xfe0f;
}

/* A non-ASCII character that is always shown as it is. */
static bool visible_non_ascii(uint32_t cp)
{
    return cp >= 0x80 && !pdk_display_code_point_hides(cp) && !is_joiner(cp) && !is_selector(cp);
}

/* Whether the code point cp at s[i] (n bytes) is escaped; prev is the code point before
 * it (0 at the start, and after an invalid byte). */
static bool escaped(const unsigned char *s, size_t i, size_t n, size_t len, uint32_t cp,
                    uint32_t prev, unsigned flags)
{
    if (cp == '\t')
        return !(flags & PDK_DISPLAY_KEEP_TAB);
    if (cp == '\n')
        return !(flags & PDK_DISPLAY_KEEP_NEWLINE);
    if (cp == '\\')
        return !(flags & PDK_DISPLAY_RAW_BACKSLASH);
    if (cp == '"')
        return flags & PDK_DISPLAY_QUOTE;
    if (is_selector(cp))
        return !visible_non_ascii(prev);
    if (is_joiner(cp)) {
        uint32_t next = 0;
        if (i + n >= len || utf8_decode(s + i + n, len - i - n, &next) == 0)
            return true;
        return !visible_non_ascii(prev) || !visible_non_ascii(next);
    }
    return pdk_display_code_point_hides(cp);
}

/* The escape itself for a code point found to need one. */
static void put_escape(pdk_buf *out, uint32_t cp)
{
    switch (cp) {
    case '\t':
        pdk_buf_puts(out, "\\t");
        return;
    case '\n':
        pdk_buf_puts(out, "\\n");
        return;
    case '\r':
        pdk_buf_puts(out, "\\r");
        return;
    case '\\':
        pdk_buf_puts(out, "\\\\");
        return;
    case '"':
        pdk_buf_puts(out, "\\\"");
        return;
    default:
        break;
    }
    if (cp < 0x80)
        pdk_buf_printf(out, "\\x%02x", (unsigned)cp);
    else if (cp <= 0xffff)
        pdk_buf_printf(out, "\\u%04x", (unsigned)cp);
    else
        pdk_buf_printf(out, "\\U%08x", (unsigned)cp);
}

/* The one walk: appends to out (when not NULL) and returns whether anything was escaped;
 * without out it stops at the first escape. */
static bool walk(pdk_buf *out, const char *s, size_t len, unsigned flags)
{
    const unsigned char *u = (const unsigned char *)s;
    bool any = false;
    uint32_t prev = 0;
    size_t i = 0, plain_from = 0;
    while (i < len) {
        uint32_t cp = 0;
        size_t n = utf8_decode(u + i, len - i, &cp);
        bool invalid = n == 0;
        if (!invalid && !escaped(u, i, n, len, cp, prev, flags)) {
            prev = cp;
            i += n;
            continue;
        }
        any = true;
        if (!out)
            return true;
        pdk_buf_append(out, s + plain_from, i - plain_from);
        if (invalid) {
            pdk_buf_printf(out, "\\x%02x", u[i]);
            n = 1;
            cp = 0;
        } else {
            put_escape(out, cp);
        }
        prev = cp;
        i += n;
        plain_from = i;
    }
    if (out)
        pdk_buf_append(out, s + plain_from, len - plain_from);
    return any;
}

size_t pdk_display_cut(const char *s, size_t len, size_t max_chars)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    uint32_t cp;
    for (size_t chars = 0; i < len && chars < max_chars; chars++) {
        size_t n = utf8_decode(u + i, len - i, &cp);
        i += n ? n : 1;
    }
    return i;
}

size_t pdk_display_utf8_prefix(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    uint32_t cp;
    for (size_t n; i < len && (n = utf8_decode(u + i, len - i, &cp)) > 0; i += n)
        ;
    return i;
}

bool pdk_display_is_plain(const char *s, size_t len, unsigned flags)
{
    return !walk(NULL, s, len, flags);
}

void pdk_display_escape(pdk_buf *out, const char *s, size_t len, unsigned flags)
{
    if (len == 0) {
        pdk_buf_append(out, "", 0);
        return;
    }
    walk(out, s, len, flags);
}

char *pdk_display(const char *s)
{
    pdk_buf b = {0};
    if (s)
        pdk_display_escape(&b, s, strlen(s), 0);
    return pdk_buf_steal(&b);
}

static bool shell_plain(const char *s)
{
    if (!*s)
        return false;
    for (const char *p = s; *p; p++)
        if (!pdk_name_char((unsigned char)*p) && !strchr("@%+=:,/", *p))
            return false;
    return true;
}

char *pdk_display_argv(char *const *argv)
{
    pdk_buf b = {0};
    for (size_t i = 0; argv && argv[i]; i++) {
        _cleanup_free_ char *word = pdk_display(argv[i]);
        if (i)
            pdk_buf_puts(&b, " ");
        if (shell_plain(word)) {
            pdk_buf_puts(&b, word);
            continue;
        }
        pdk_buf_puts(&b, "'");
        for (const char *p = word; *p; p++) {
            if (*p == '\'')
                pdk_buf_puts(&b, "'\\''");
            else
                pdk_buf_append(&b, p, 1);
        }
        pdk_buf_puts(&b, "'");
    }
    return pdk_buf_steal(&b);
}

char *pdk_display_message(const char *s)
{
    pdk_buf b = {0};
    if (s)
        pdk_display_escape(&b, s, strlen(s), PDK_DISPLAY_RAW_BACKSLASH);
    return pdk_buf_steal(&b);
}

char *pdk_display_json_text(const char *text)
{
    /* jansson writes valid UTF-8 with C0 controls, '"' and '\\' escaped; a byte >= 0x7f
     * only ever stands inside a string, where a \u escape means the same character. A
     * raw control or a byte that is not UTF-8 is never in jansson's output; should a text
     * hold one all the same, it is escaped too (the latter as \xHH, visibly not JSON). */
    size_t len = strlen(text);
    const unsigned char *u = (const unsigned char *)text;
    pdk_buf b = {0};
    uint32_t prev = 0;
    size_t i = 0, plain_from = 0;
    while (i < len) {
        uint32_t cp = 0;
        size_t n = utf8_decode(u + i, len - i, &cp);
        /* a newline or tab is the document's own layout (JSON_INDENT): strings never
         * hold one raw */
        bool control = n == 1 && ((cp < 0x20 && cp != '\n' && cp != '\t') || cp == 0x7f);
        if (n != 0 && !control && (cp < 0x80 || !escaped(u, i, n, len, cp, prev, 0))) {
            prev = cp;
            i += n;
            continue;
        }
        pdk_buf_append(&b, text + plain_from, i - plain_from);
        if (n == 0) {
            pdk_buf_printf(&b, "\\x%02x", u[i]);
            n = 1;
        } else if (cp <= 0xffff) {
            pdk_buf_printf(&b, "\\u%04x", (unsigned)cp);
        } else {
            uint32_t v = cp - 0x10000;
            pdk_buf_printf(&b, "\\u%04x\\u%04x", (unsigned)(0xd800 + (v >> 10)),
                           (unsigned)(0xdc00 + (v & 0x3ff)));
        }
        prev = cp;
        i += n;
        plain_from = i;
    }
    pdk_buf_append(&b, text + plain_from, len - plain_from);
    return pdk_buf_steal(&b);
}

char *pdk_display_json_dumps(const json_t *value, size_t flags)
{
    char *text = json_dumps(value, flags);
    if (!text)
        return NULL;
    char *shown = pdk_display_json_text(text);
    free(text);
    return shown;
}

json_t *pdk_display_json_string(const char *s)
{
    if (!s)
        return json_null();
    json_t *v = json_string(s);
    if (v)
        return v;
    _cleanup_free_ char *shown = pdk_display(s);
    return json_string(shown);
}
