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

struct pdk_placeholder_set {
    form *forms;
    size_t form_count;
    slot *table;
    size_t capacity, used;
};

static int sextet(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
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
static bool take(pdk_placeholder_scan *sc, unsigned char c, uint8_t escapes,
                 pdk_placeholder_found *found)
{
    sc->history[sc->count % PDK_PLACEHOLDER_HISTORY] = c;
    sc->history_escapes[sc->count % PDK_PLACEHOLDER_HISTORY] = escapes;
    sc->count++;
    int v = pdk_hex_value(c);
    if (v >= 0) {
        sc->hex_run++;
        sc->hex_key = (sc->hex_key << 4) | (uint32_t)v;
    } else {
        sc->hex_run = 0;
    }
    int x = sextet(c);
    if (x >= 0) {
        sc->b64_run++;
        sc->b64_key = ((sc->b64_key << 6) | (uint32_t)x) & 0x3fffffffu;
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
    for (size_t i = 0; i < len; i++)
        if (feed_byte(sc, (unsigned char)data[i], found))
            return true;
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
