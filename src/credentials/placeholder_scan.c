/* placeholder_scan.c: see placeholder_scan.h. */
#include "placeholder_scan.h"

#include "util.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALPHABET_HEX, ALPHABET_BASE64 };

/* One form of one placeholder: its text, and how much of it a find needs. */
typedef struct form {
    char *text;
    size_t len;
    int id;
    uint8_t alphabet;
    uint8_t min;
    const char *name;
} form;

/* Where a form's run of min characters ends (end), by the key of its last characters. */
typedef struct slot {
    uint64_t key; /* alphabet << 32 | the last 8 hex digits or 5 base64 characters */
    uint32_t form;
    uint32_t end;
    bool used;
} slot;

#define FILTER_BITS 18 /* 32 KiB: most runs' keys are no form's, and cost one bit */

struct pdk_placeholder_set {
    form *forms;
    size_t form_count;
    slot *table;
    size_t capacity, used;
    uint64_t filter[(1u << FILTER_BITS) / 64];
};

static uint64_t filter_bit(uint64_t key)
{
    return (key * 0xC2B2AE3D27D4EB4FULL) >> (64 - FILTER_BITS);
}

/* Whether key may be a form's (false: surely not). */
static inline bool filtered(const pdk_placeholder_set *s, uint64_t key)
{
    uint64_t bit = filter_bit(key);
    return s->filter[bit / 64] & (1ULL << (bit % 64));
}

/* A byte's value as a hex digit, and as a base64 character (either alphabet), plus one: 0
 * when it is none. */
static const uint8_t hex_digit[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16};
static const uint8_t base64_char[256] = {
    ['A'] = 1,  ['B'] = 2,  ['C'] = 3,  ['D'] = 4,  ['E'] = 5,  ['F'] = 6,  ['G'] = 7,  ['H'] = 8,
    ['I'] = 9,  ['J'] = 10, ['K'] = 11, ['L'] = 12, ['M'] = 13, ['N'] = 14, ['O'] = 15, ['P'] = 16,
    ['Q'] = 17, ['R'] = 18, ['S'] = 19, ['T'] = 20, ['U'] = 21, ['V'] = 22, ['W'] = 23, ['X'] = 24,
    ['Y'] = 25, ['Z'] = 26, ['a'] = 27, ['b'] = 28, ['c'] = 29, ['d'] = 30, ['e'] = 31, ['f'] = 32,
    ['g'] = 33, ['h'] = 34, ['i'] = 35, ['j'] = 36, ['k'] = 37, ['l'] = 38, ['m'] = 39, ['n'] = 40,
    ['o'] = 41, ['p'] = 42, ['q'] = 43, ['r'] = 44, ['s'] = 45, ['t'] = 46, ['u'] = 47, ['v'] = 48,
    ['w'] = 49, ['x'] = 50, ['y'] = 51, ['z'] = 52, ['0'] = 53, ['1'] = 54, ['2'] = 55, ['3'] = 56,
    ['4'] = 57, ['5'] = 58, ['6'] = 59, ['7'] = 60, ['8'] = 61, ['9'] = 62, ['+'] = 63, ['-'] = 63,
    ['/'] = 64, ['_'] = 64};

static int sextet(unsigned char c)
{
    return (int)base64_char[c] - 1;
}

/* A byte as its form's text has it: hex digits in lower case, base64 in the standard
 * alphabet. */
static unsigned char normal(unsigned char c, uint8_t alphabet)
{
    if (alphabet == ALPHABET_HEX)
        return c >= 'A' && c <= 'F' ? (unsigned char)(c - 'A' + 'a') : c;
    return c == '-' ? '+' : c == '_' ? '/' : c;
}

static uint64_t slot_hash(uint64_t key)
{
    key *= 0x9E3779B97F4A7C15ULL;
    return key ^ (key >> 32);
}

static void slot_put(pdk_placeholder_set *s, uint64_t key, uint32_t form_index, uint32_t end);

static void table_grow(pdk_placeholder_set *s)
{
    slot *old = s->table;
    size_t old_capacity = s->capacity;
    s->capacity = old_capacity ? old_capacity * 2 : 512;
    s->table = xcalloc(s->capacity, sizeof(*s->table));
    s->used = 0;
    for (size_t i = 0; i < old_capacity; i++)
        if (old[i].used)
            slot_put(s, old[i].key, old[i].form, old[i].end);
    free(old);
}

static void slot_put(pdk_placeholder_set *s, uint64_t key, uint32_t form_index, uint32_t end)
{
    if ((s->used + 1) * 2 > s->capacity)
        table_grow(s);
    size_t i = slot_hash(key) & (s->capacity - 1);
    while (s->table[i].used)
        i = (i + 1) & (s->capacity - 1);
    s->table[i] = (slot){key, form_index, end, true};
    s->used++;
    s->filter[filter_bit(key) / 64] |= 1ULL << (filter_bit(key) % 64);
}

/* The key of text[end - n, end): n hex digits or base64 characters. */
static uint64_t key_of(const char *text, size_t end, uint8_t alphabet)
{
    uint64_t k = 0;
    if (alphabet == ALPHABET_HEX) {
        for (size_t i = end - 8; i < end; i++)
            k = (k << 4) | (uint64_t)pdk_hex_value((unsigned char)text[i]);
    } else {
        for (size_t i = end - 5; i < end; i++)
            k = (k << 6) | (uint64_t)sextet((unsigned char)text[i]);
    }
    return (uint64_t)alphabet << 32 | k;
}

static void add_form(pdk_placeholder_set *s, char *text, size_t len, int id, uint8_t alphabet,
                     uint8_t min, const char *name)
{
    s->forms = xrealloc(s->forms, (s->form_count + 1) * sizeof(*s->forms));
    uint32_t index = (uint32_t)s->form_count;
    s->forms[s->form_count++] = (form){text, len, id, alphabet, min, name};
    for (size_t end = min; end <= len; end++)
        slot_put(s, key_of(text, end, alphabet), index, (uint32_t)end);
}

pdk_placeholder_set *pdk_placeholder_set_new(void)
{
    return xcalloc(1, sizeof(pdk_placeholder_set));
}

int pdk_placeholder_set_add(pdk_placeholder_set *s, const char *placeholder, int id)
{
    size_t n = placeholder ? strlen(placeholder) : 0;
    if (n < PDK_PLACEHOLDER_RANDOM_HEX || id < 0)
        return -1;
    const char *random = placeholder + n - PDK_PLACEHOLDER_RANDOM_HEX;
    for (size_t i = 0; i < PDK_PLACEHOLDER_RANDOM_HEX; i++)
        if (pdk_hex_value((unsigned char)random[i]) < 0 || (random[i] >= 'A' && random[i] <= 'F'))
            return -1;
    add_form(s, xstrndup(random, PDK_PLACEHOLDER_RANDOM_HEX), PDK_PLACEHOLDER_RANDOM_HEX, id,
             ALPHABET_HEX, PDK_PLACEHOLDER_FRAGMENT, "plain");
    char hex[2 * PDK_PLACEHOLDER_RANDOM_HEX + 1];
    sodium_bin2hex(hex, sizeof(hex), (const unsigned char *)random, PDK_PLACEHOLDER_RANDOM_HEX);
    add_form(s, xstrdup(hex), 2 * PDK_PLACEHOLDER_RANDOM_HEX, id, ALPHABET_HEX,
             2 * PDK_PLACEHOLDER_FRAGMENT, "hex");
    /* base64: the characters that depend on the random part alone, when it starts 0, 1 or 2
     * bytes into the encoded data */
    for (size_t align = 0; align < 3; align++) {
        unsigned char bin[PDK_PLACEHOLDER_RANDOM_HEX + 2] = {0};
        size_t bn = align + PDK_PLACEHOLDER_RANDOM_HEX;
        memcpy(bin + align, random, PDK_PLACEHOLDER_RANDOM_HEX);
        char b64[sodium_base64_ENCODED_LEN(PDK_PLACEHOLDER_RANDOM_HEX + 2,
                                           sodium_base64_VARIANT_ORIGINAL_NO_PADDING)];
        sodium_bin2base64(b64, sizeof(b64), bin, bn, sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
        size_t from = (8 * align + 5) / 6, to = (8 * bn) / 6;
        add_form(s, xstrndup(b64 + from, to - from), to - from, id, ALPHABET_BASE64,
                 PDK_PLACEHOLDER_FRAGMENT_B64, "base64");
    }
    return 0;
}

void pdk_placeholder_set_free(pdk_placeholder_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->form_count; i++)
        free(s->forms[i].text);
    free(s->forms);
    free(s->table);
    free(s);
}

void pdk_placeholder_found_describe(const pdk_placeholder_found *f, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s%s%s", f->form,
             f->escapes & PDK_PLACEHOLDER_PERCENT ? ", %-encoded" : "",
             f->escapes & PDK_PLACEHOLDER_JSON ? ", \\u-escaped" : "",
             f->escapes & PDK_PLACEHOLDER_BACKSLASH_X ? ", \\x-escaped" : "");
}

void pdk_placeholder_scan_start(pdk_placeholder_scan *sc, const pdk_placeholder_set *set,
                                bool (*wanted)(void *arg, int id), void *arg)
{
    *sc = (pdk_placeholder_scan){.set = set, .wanted = wanted, .wanted_arg = arg};
}

/* Whether the last bytes end a run of a form that the key names. */
static bool lookup(pdk_placeholder_scan *sc, uint8_t alphabet, uint32_t key, uint32_t run,
                   pdk_placeholder_found *found)
{
    const pdk_placeholder_set *s = sc->set;
    uint64_t k = (uint64_t)alphabet << 32 | key;
    if (!filtered(s, k))
        return false;
    for (size_t i = slot_hash(k) & (s->capacity - 1); s->table[i].used;
         i = (i + 1) & (s->capacity - 1)) {
        const slot *sl = &s->table[i];
        if (sl->key != k)
            continue;
        const form *f = &s->forms[sl->form];
        if (run < f->min || (sc->wanted && !sc->wanted(sc->wanted_arg, f->id)))
            continue;
        unsigned escapes = 0;
        bool same = true;
        for (size_t j = 0; j < f->min && same; j++) {
            uint32_t at = (sc->count - 1 - (uint32_t)j) % PDK_PLACEHOLDER_HISTORY;
            same = normal(sc->history[at], alphabet) == (unsigned char)f->text[sl->end - 1 - j];
            escapes |= sc->history_escapes[at];
        }
        if (same) {
            *found = (pdk_placeholder_found){f->id, f->name, escapes};
            return true;
        }
    }
    return false;
}

/* One byte, escapes decoded. */
static inline bool take(pdk_placeholder_scan *sc, unsigned char c, uint8_t escapes,
                        pdk_placeholder_found *found)
{
    sc->history[sc->count % PDK_PLACEHOLDER_HISTORY] = c;
    sc->history_escapes[sc->count % PDK_PLACEHOLDER_HISTORY] = escapes;
    sc->count++;
    unsigned v = hex_digit[c], x = base64_char[c];
    if (v) {
        sc->hex_run++;
        sc->hex_key = (sc->hex_key << 4) | (v - 1);
    } else {
        sc->hex_run = 0;
    }
    if (x) {
        sc->b64_run++;
        sc->b64_key = ((sc->b64_key << 6) | (x - 1)) & 0x3fffffffu;
    } else {
        sc->b64_run = 0;
    }
    if (!sc->set || !sc->set->capacity)
        return false;
    if (sc->hex_run >= PDK_PLACEHOLDER_FRAGMENT &&
        lookup(sc, ALPHABET_HEX, sc->hex_key, sc->hex_run, found))
        return true;
    return sc->b64_run >= PDK_PLACEHOLDER_FRAGMENT_B64 &&
           lookup(sc, ALPHABET_BASE64, sc->b64_key, sc->b64_run, found);
}

static bool feed_byte(pdk_placeholder_scan *sc, unsigned char c, pdk_placeholder_found *found);

/* An escape that turned out not to be one: its first byte as it is, the rest again. */
static bool not_an_escape(pdk_placeholder_scan *sc, pdk_placeholder_found *found)
{
    char pending[sizeof(sc->escape)];
    size_t n = sc->escape_len;
    memcpy(pending, sc->escape, n);
    sc->escape_len = 0;
    if (take(sc, (unsigned char)pending[0], 0, found))
        return true;
    for (size_t i = 1; i < n; i++)
        if (feed_byte(sc, (unsigned char)pending[i], found))
            return true;
    return false;
}

static bool feed_byte(pdk_placeholder_scan *sc, unsigned char c, pdk_placeholder_found *found)
{
    if (!sc->escape_len) {
        if (c == '%' || c == '\\') {
            sc->escape[sc->escape_len++] = (char)c;
            return false;
        }
        return take(sc, c, 0, found);
    }
    sc->escape[sc->escape_len++] = (char)c;
    const char *e = sc->escape;
    size_t n = sc->escape_len;
    /* the digits so far, and how many the escape has */
    size_t digits_from = e[0] == '%' ? 1 : 2, digits = e[0] == '%' ? 2 : e[1] == 'u' ? 4 : 2;
    if (e[0] == '\\' && n == 2)
        return e[1] == 'u' || e[1] == 'x' ? false : not_an_escape(sc, found);
    if (pdk_hex_value((unsigned char)c) < 0)
        return not_an_escape(sc, found);
    if (n < digits_from + digits)
        return false;
    unsigned v = 0;
    for (size_t i = digits_from; i < n; i++)
        v = v * 16 + (unsigned)pdk_hex_value((unsigned char)e[i]);
    sc->escape_len = 0;
    uint8_t kind = e[0] == '%'   ? PDK_PLACEHOLDER_PERCENT
                   : e[1] == 'u' ? PDK_PLACEHOLDER_JSON
                                 : PDK_PLACEHOLDER_BACKSLASH_X;
    /* (a character beyond ASCII is in no form: it ends a run) */
    return take(sc, v < 0x80 ? (unsigned char)v : 0x80, kind, found);
}

bool pdk_placeholder_scan_feed(pdk_placeholder_scan *sc, const char *data, size_t len,
                               pdk_placeholder_found *found)
{
    /* take() inline, its state in locals (through sc, every byte would be stores and loads),
     * stored back before anything that reads it */
    uint32_t count = sc->count, hex_run = sc->hex_run, b64_run = sc->b64_run;
    uint32_t hex_key = sc->hex_key, b64_key = sc->b64_key;
    const pdk_placeholder_set *s = sc->set;
    bool any = s && s->capacity;
#define STORE_BACK()                                                                               \
    (sc->count = count, sc->hex_run = hex_run, sc->b64_run = b64_run, sc->hex_key = hex_key,       \
     sc->b64_key = b64_key)
#define LOAD()                                                                                     \
    (count = sc->count, hex_run = sc->hex_run, b64_run = sc->b64_run, hex_key = sc->hex_key,       \
     b64_key = sc->b64_key)
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)data[i];
        if (sc->escape_len || c == '%' || c == '\\') {
            STORE_BACK();
            if (feed_byte(sc, c, found))
                return true;
            LOAD();
            continue;
        }
        sc->history[count % PDK_PLACEHOLDER_HISTORY] = c;
        sc->history_escapes[count % PDK_PLACEHOLDER_HISTORY] = 0;
        count++;
        unsigned v = hex_digit[c], x = base64_char[c];
        hex_run = v ? hex_run + 1 : 0;
        hex_key = (hex_key << 4) | (v ? v - 1 : 0);
        b64_run = x ? b64_run + 1 : 0;
        b64_key = ((b64_key << 6) | (x ? x - 1 : 0)) & 0x3fffffffu;
        bool hex = any && hex_run >= PDK_PLACEHOLDER_FRAGMENT &&
                   filtered(s, (uint64_t)ALPHABET_HEX << 32 | hex_key);
        bool b64 = any && b64_run >= PDK_PLACEHOLDER_FRAGMENT_B64 &&
                   filtered(s, (uint64_t)ALPHABET_BASE64 << 32 | b64_key);
        if (!hex && !b64)
            continue;
        STORE_BACK();
        if ((hex && lookup(sc, ALPHABET_HEX, hex_key, hex_run, found)) ||
            (b64 && lookup(sc, ALPHABET_BASE64, b64_key, b64_run, found)))
            return true;
    }
    STORE_BACK();
#undef STORE_BACK
#undef LOAD
    return false;
}

bool pdk_placeholder_scan_break(pdk_placeholder_scan *sc, pdk_placeholder_found *found)
{
    bool hit = sc->escape_len && not_an_escape(sc, found);
    sc->escape_len = 0;
    sc->hex_run = sc->b64_run = 0;
    return hit;
}

bool pdk_placeholder_scan_string(const pdk_placeholder_set *set, bool (*wanted)(void *arg, int id),
                                 void *arg, const char *s, size_t len, pdk_placeholder_found *found)
{
    pdk_placeholder_scan sc;
    pdk_placeholder_scan_start(&sc, set, wanted, arg);
    return pdk_placeholder_scan_feed(&sc, s, len, found) || pdk_placeholder_scan_break(&sc, found);
}
