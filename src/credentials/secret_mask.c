/* secret_mask.c: see secret_mask.h.
 *
 * Every PDK_MASK_WINDOW-byte window of every string (a value or one of its encodings) is a
 * key of one hash table (a value shorter than the window is a key of its own length). A
 * stream keeps its last 16 content bytes in two words: at each byte the window that ends
 * there is looked up (a 64 Kibit filter first, so that most bytes cost a few instructions),
 * and a hit masks those bytes. At the end of a read the longest tail that occurs in some
 * string is held back: a fragment that ends in a later read begins within it (whatever
 * occurs in a string is a tail of what came, and what came before it did not occur, or it
 * would have been held), so its first bytes are still there to be masked.
 */
#include "secret_mask.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

/* ---- a body's content in its raw bytes ---- */

enum { CONTENT_PLAIN, CONTENT_SIZE, CONTENT_EXT, CONTENT_DATA, CONTENT_DATA_END, CONTENT_TRAILER };

pdk_body_content pdk_body_content_start(bool chunked)
{
    return (pdk_body_content){chunked ? CONTENT_SIZE : CONTENT_PLAIN, 0};
}

size_t pdk_body_content_step(pdk_body_content *k, const char **p, const char *end,
                             const char **piece, bool *trailer)
{
    const char *at = *p;
    size_t n = 0;
    *trailer = false;
    switch (k->state) {
    case CONTENT_PLAIN:
        *piece = at;
        n = (size_t)(end - at);
        at = end;
        break;
    case CONTENT_SIZE: {
        int v = pdk_hex_value((unsigned char)*at);
        if (v >= 0)
            k->chunk_left = k->chunk_left * 16 + (uint64_t)v;
        else
            k->state = *at == '\n' ? (k->chunk_left ? CONTENT_DATA : CONTENT_TRAILER) : CONTENT_EXT;
        at++;
        break;
    }
    case CONTENT_EXT:
        if (*at++ == '\n')
            k->state = k->chunk_left ? CONTENT_DATA : CONTENT_TRAILER;
        break;
    case CONTENT_DATA:
        *piece = at;
        n = (size_t)(end - at) < k->chunk_left ? (size_t)(end - at) : (size_t)k->chunk_left;
        at += n;
        k->chunk_left -= n;
        if (!k->chunk_left)
            k->state = CONTENT_DATA_END;
        break;
    case CONTENT_DATA_END:
        if (*at++ == '\n')
            k->state = CONTENT_SIZE;
        break;
    case CONTENT_TRAILER:
    default:
        *piece = at;
        *trailer = true;
        n = (size_t)(end - at);
        at = end;
        break;
    }
    *p = at;
    return n;
}

/* Where a trailer section (its bytes so far: t, n) ends: its length once whole (an empty
 * line ends it; none at all is one empty line), else 0. */
static size_t trailer_section_end(const char *t, size_t n)
{
    if (n >= 2 && t[0] == '\r' && t[1] == '\n')
        return 2;
    const char *e = n >= 4 ? memmem(t, n, "\r\n\r\n", 4) : NULL;
    return e ? (size_t)(e - t) + 4 : 0;
}

pdk_body_prefix pdk_body_prefix_scan(bool chunked, uint64_t content_length, const char *data,
                                     size_t len, pdk_buf *content, size_t content_max)
{
    pdk_body_prefix out = {0};
    if (!chunked) {
        out.complete = len >= content_length;
        out.raw = out.complete ? (size_t)content_length : len;
        out.content = out.raw;
        if (content && out.raw)
            pdk_buf_append(content, data, out.raw < content_max ? out.raw : content_max);
        return out;
    }
    pdk_body_content k = pdk_body_content_start(true);
    pdk_buf trailer = {0};
    const char *p = data, *end = data + len;
    while (p < end) {
        const char *piece = NULL;
        bool in_trailer = false;
        size_t n = pdk_body_content_step(&k, &p, end, &piece, &in_trailer);
        if (!in_trailer) {
            if (n && content && content->len < content_max)
                pdk_buf_append(content, piece,
                               n < content_max - content->len ? n : content_max - content->len);
            out.content += n;
            continue;
        }
        size_t before = trailer.len;
        pdk_buf_append(&trailer, piece, n);
        size_t whole = trailer_section_end(trailer.data, trailer.len);
        if (whole) { /* the body ends in this piece: what follows is not its own */
            out.complete = true;
            out.raw = (size_t)(piece - data) + (whole - before);
            pdk_buf_free(&trailer);
            return out;
        }
    }
    pdk_buf_free(&trailer);
    out.raw = len;
    return out;
}

/* ---- the values ---- */

typedef struct mask_string {
    char *bytes;
    size_t len;
} mask_string;

typedef struct mask_entry {
    uint64_t hi, lo;
    uint8_t len; /* 0: a free slot */
    int label;
} mask_entry;

/* A filter on the last 8 bytes of every key: most bytes of a body cost one multiply and one
 * bit (32 KiB). */
#define FILTER_LOG 18

struct pdk_mask_set {
    mask_string *strings;
    size_t string_count;
    char **labels;
    size_t label_count;
    mask_entry *table;
    size_t capacity, used;
    uint64_t filter[(1u << FILTER_LOG) / 64];
    uint16_t short_lengths; /* bit L: a string of L < PDK_MASK_WINDOW bytes */
    bool has_window;        /* a string of PDK_MASK_WINDOW bytes or more */
    bool byte_in[256];      /* the bytes of every string */
};

static uint64_t low_bytes(size_t n)
{
    return n >= 8 ? ~0ULL : ((1ULL << (8 * n)) - 1);
}

static uint64_t filter_bit(uint64_t lo)
{
    return (lo * 0x9E3779B97F4A7C15ULL) >> (64 - FILTER_LOG);
}

static uint64_t key_hash(uint64_t hi, uint64_t lo, size_t len)
{
    uint64_t h = hi * 0x9E3779B97F4A7C15ULL ^ lo * 0xC2B2AE3D27D4EB4FULL ^ (uint64_t)len;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 29);
}

/* The key of the last len bytes (len <= 16) of what hi:lo holds. */
static void key_of(uint64_t hi, uint64_t lo, size_t len, uint64_t *khi, uint64_t *klo)
{
    *klo = len >= 8 ? lo : lo & low_bytes(len);
    *khi = len > 8 ? hi & low_bytes(len - 8) : 0;
}

static void shift_in(uint64_t *hi, uint64_t *lo, unsigned char b)
{
    *hi = (*hi << 8) | (*lo >> 56);
    *lo = (*lo << 8) | b;
}

static void table_put(pdk_mask_set *m, uint64_t hi, uint64_t lo, size_t len, int label);

static void table_grow(pdk_mask_set *m)
{
    mask_entry *old = m->table;
    size_t old_capacity = m->capacity;
    m->capacity = old_capacity ? old_capacity * 2 : 256;
    m->table = xcalloc(m->capacity, sizeof(*m->table));
    m->used = 0;
    for (size_t i = 0; i < old_capacity; i++)
        if (old[i].len)
            table_put(m, old[i].hi, old[i].lo, old[i].len, old[i].label);
    if (old) {
        sodium_memzero(old, old_capacity * sizeof(*old));
        free(old);
    }
}

static void table_put(pdk_mask_set *m, uint64_t hi, uint64_t lo, size_t len, int label)
{
    if ((m->used + 1) * 2 > m->capacity)
        table_grow(m);
    uint64_t h = key_hash(hi, lo, len);
    for (size_t i = h & (m->capacity - 1);; i = (i + 1) & (m->capacity - 1)) {
        mask_entry *e = &m->table[i];
        if (e->len == len && e->hi == hi && e->lo == lo)
            return; /* (the first label stays) */
        if (!e->len) {
            *e = (mask_entry){hi, lo, (uint8_t)len, label};
            m->used++;
            m->filter[filter_bit(lo) / 64] |= 1ULL << (filter_bit(lo) % 64);
            return;
        }
    }
}

/* The label of the key of the last len bytes, or -1. */
static int table_get(const pdk_mask_set *m, uint64_t hi, uint64_t lo, size_t len)
{
    uint64_t khi, klo;
    key_of(hi, lo, len, &khi, &klo);
    uint64_t h = key_hash(khi, klo, len);
    for (size_t i = h & (m->capacity - 1);; i = (i + 1) & (m->capacity - 1)) {
        const mask_entry *e = &m->table[i];
        if (!e->len)
            return -1;
        if (e->len == len && e->hi == khi && e->lo == klo)
            return e->label;
    }
}

static void add_string(pdk_mask_set *m, const char *s, size_t len, int label)
{
    if (len < PDK_MASK_MIN)
        return;
    for (size_t i = 0; i < m->string_count; i++)
        if (m->strings[i].len == len && memcmp(m->strings[i].bytes, s, len) == 0)
            return;
    m->strings = xrealloc(m->strings, (m->string_count + 1) * sizeof(*m->strings));
    char *copy = xmalloc(len + 1);
    memcpy(copy, s, len);
    copy[len] = '\0';
    m->strings[m->string_count++] = (mask_string){copy, len};
    for (size_t i = 0; i < len; i++)
        m->byte_in[(unsigned char)s[i]] = true;
    size_t window = len < PDK_MASK_WINDOW ? len : PDK_MASK_WINDOW;
    if (window < PDK_MASK_WINDOW)
        m->short_lengths |= (uint16_t)(1u << window);
    else
        m->has_window = true;
    uint64_t hi = 0, lo = 0;
    for (size_t i = 0; i < len; i++) {
        shift_in(&hi, &lo, (unsigned char)s[i]);
        if (i + 1 >= window) {
            uint64_t khi, klo;
            key_of(hi, lo, window, &khi, &klo);
            table_put(m, khi, klo, window, label);
        }
    }
    hi = lo = 0;
}

pdk_mask_set *pdk_mask_set_new(void)
{
    return xcalloc(1, sizeof(pdk_mask_set));
}

static int label_index(pdk_mask_set *m, const char *label)
{
    for (size_t i = 0; i < m->label_count; i++)
        if (strcmp(m->labels[i], label) == 0)
            return (int)i;
    m->labels = xrealloc(m->labels, (m->label_count + 1) * sizeof(char *));
    m->labels[m->label_count] = xstrdup(label);
    return (int)m->label_count++;
}

/* Percent-encoded as encodeURIComponent would, with upper (or lower) case hex digits. */
static void percent_encoded(pdk_buf *out, const char *s, size_t len, bool upper)
{
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~') {
            pdk_buf_append(out, &s[i], 1);
        } else {
            char esc[3] = {'%', digits[ch >> 4], digits[ch & 15]};
            pdk_buf_append(out, esc, 3);
        }
    }
}

/* As a JSON encoder may write it in a string ("\/" included). */
static void json_escaped(pdk_buf *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '/' || s[i] == '"' || s[i] == '\\')
            pdk_buf_append(out, "\\", 1);
        pdk_buf_append(out, &s[i], 1);
    }
}

/* The base64 characters that depend on s alone when s starts `align` bytes into the
 * encoded data (0, 1, 2): the same whatever comes before and after it. */
static void base64_core(pdk_buf *out, const char *s, size_t len, size_t align, int variant)
{
    size_t n = align + len;
    unsigned char *bin = xcalloc(n, 1);
    memcpy(bin + align, s, len);
    size_t cap = sodium_base64_ENCODED_LEN(n, variant);
    char *text = xmalloc(cap);
    sodium_bin2base64(text, cap, bin, n, variant);
    size_t from = (8 * align + 5) / 6, to = (8 * n) / 6;
    if (to > from)
        pdk_buf_append(out, text + from, to - from);
    sodium_memzero(bin, n);
    sodium_memzero(text, cap);
    free(bin);
    free(text);
}

void pdk_mask_set_add(pdk_mask_set *m, const char *value, size_t len, const char *label)
{
    if (!value || len < PDK_MASK_MIN)
        return;
    int id = label_index(m, label ? label : "");
    add_string(m, value, len, id);
    pdk_buf b = {0};
    for (int upper = 0; upper < 2; upper++) {
        percent_encoded(&b, value, len, upper);
        add_string(m, b.data, b.len, id);
        pdk_buf_free_secret(&b);
    }
    json_escaped(&b, value, len);
    add_string(m, b.data, b.len, id);
    pdk_buf_free_secret(&b);
    if (len < PDK_MASK_WINDOW)
        return; /* a short value's encodings would be too short to tell from other text */
    for (size_t align = 0; align < 3; align++) {
        base64_core(&b, value, len, align, sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
        add_string(m, b.data, b.len, id);
        pdk_buf_free_secret(&b);
        base64_core(&b, value, len, align, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
        add_string(m, b.data, b.len, id);
        pdk_buf_free_secret(&b);
    }
}

bool pdk_mask_set_empty(const pdk_mask_set *m)
{
    return !m || m->string_count == 0;
}

const char *pdk_mask_set_label(const pdk_mask_set *m, int label)
{
    return m && label >= 0 && (size_t)label < m->label_count ? m->labels[label] : "";
}

void pdk_mask_set_free(pdk_mask_set *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->string_count; i++) {
        sodium_memzero(m->strings[i].bytes, m->strings[i].len);
        free(m->strings[i].bytes);
    }
    free(m->strings);
    for (size_t i = 0; i < m->label_count; i++)
        free(m->labels[i]);
    free(m->labels);
    if (m->table) {
        sodium_memzero(m->table, m->capacity * sizeof(*m->table));
        free(m->table);
    }
    sodium_memzero(m, sizeof(*m));
    free(m);
}

/* The byte b comes after what hi:lo holds (seen bytes so far, b included): the length of a
 * fragment that ends with it (0: none), its label in *label. */
static inline size_t step(const pdk_mask_set *m, uint64_t *hi, uint64_t *lo, uint64_t *seen,
                          unsigned char b, int *label)
{
    shift_in(hi, lo, b);
    (*seen)++;
    /* (every key is 8 bytes or more: its last 8 are the filter's) */
    if (!m->byte_in[b] || !(m->filter[filter_bit(*lo) / 64] & (1ULL << (filter_bit(*lo) % 64))))
        return 0;
    if (m->has_window && *seen >= PDK_MASK_WINDOW &&
        (*label = table_get(m, *hi, *lo, PDK_MASK_WINDOW)) >= 0)
        return PDK_MASK_WINDOW;
    for (size_t len = PDK_MASK_WINDOW - 1; m->short_lengths && len >= PDK_MASK_MIN; len--)
        if ((m->short_lengths & (1u << len)) && *seen >= len &&
            (*label = table_get(m, *hi, *lo, len)) >= 0)
            return len;
    return 0;
}

/* Whether s occurs in one of the strings. */
static bool occurs(const pdk_mask_set *m, const unsigned char *s, size_t len)
{
    for (size_t i = 0; i < m->string_count; i++)
        if (m->strings[i].len >= len && memmem(m->strings[i].bytes, m->strings[i].len, s, len))
            return true;
    return false;
}

/* How many of the last bytes to hold back: the longest tail (under the window) that occurs
 * in a string, and so could begin a fragment that ends later. */
static size_t hold_depth(const pdk_mask_set *m, uint64_t hi, uint64_t lo, uint64_t seen)
{
    unsigned char last[16];
    for (size_t i = 0; i < 8; i++) {
        last[15 - i] = (unsigned char)(lo >> (8 * i));
        last[7 - i] = (unsigned char)(hi >> (8 * i));
    }
    size_t max = seen < PDK_MASK_WINDOW - 1 ? (size_t)seen : PDK_MASK_WINDOW - 1, depth = 0;
    for (size_t k = 1; k <= max; k++) {
        if (k == 1 ? !m->byte_in[last[15]] : !occurs(m, last + 16 - k, k))
            break;
        depth = k;
    }
    sodium_memzero(last, sizeof(last));
    return depth;
}

size_t pdk_mask_text(const pdk_mask_set *m, char *data, size_t len,
                     void (*found)(void *arg, size_t offset, int label), void *arg)
{
    if (pdk_mask_set_empty(m))
        return 0;
    uint64_t hi = 0, lo = 0, seen = 0;
    size_t masked = 0, masked_end = 0;
    for (size_t i = 0; i < len; i++) {
        int label = -1;
        size_t n = step(m, &hi, &lo, &seen, (unsigned char)data[i], &label);
        if (!n)
            continue;
        size_t first = i + 1 - n;
        /* (a fragment overlapping the one before continues it: one found) */
        bool continues = masked && first < masked_end;
        memset(data + first, PDK_MASK_BYTE, n);
        masked_end = i + 1;
        if (!continues) {
            masked++;
            if (found)
                found(arg, first, label);
        }
    }
    hi = lo = 0;
    return masked;
}

/* ---- a body, as it streams ---- */

void pdk_mask_stream_init(pdk_mask_stream *s, const pdk_mask_set *set, bool chunked)
{
    *s = (pdk_mask_stream){.set = set, .found_body = -1, .found_trailer = -1};
    s->content = pdk_body_content_start(chunked);
}

void pdk_mask_stream_feed(pdk_mask_stream *s, const char *data, size_t len, const char **out,
                          size_t *out_len)
{
    const pdk_mask_set *m = s->set;
    if (pdk_mask_set_empty(m)) {
        *out = data;
        *out_len = len;
        return;
    }
    /* The bytes worked on: hold + data, in s->work when anything was held (or once a
     * fragment must be masked), else data itself. */
    size_t base = s->hold.len, total = base + len;
    char *buf = NULL;
    s->work.len = 0;
    if (base) {
        pdk_buf_append(&s->work, s->hold.data, base);
        pdk_buf_append(&s->work, data ? data : "", len);
        buf = s->work.data;
    }
    const char *p = data, *end = data + len;
    /* (the state in locals: through s, every byte would be a store and a load) */
    uint64_t hi = s->hi, lo = s->lo, seen = s->seen;
    unsigned pos_next = s->pos_next;
    while (p && p < end) {
        const char *piece = NULL;
        bool trailer = false;
        size_t n = pdk_body_content_step(&s->content, &p, end, &piece, &trailer);
        size_t at = base + (size_t)(piece - data);
        for (size_t i = 0; i < n; i++, at++) {
            s->pos[pos_next++ % PDK_MASK_WINDOW] = at;
            int label = -1;
            size_t hit = step(m, &hi, &lo, &seen, (unsigned char)piece[i], &label);
            if (!hit)
                continue;
            if (!buf) { /* from now on the output is a copy */
                pdk_buf_append(&s->work, data, len);
                buf = s->work.data;
            }
            for (size_t j = 1; j <= hit; j++)
                buf[s->pos[(pos_next - j) % PDK_MASK_WINDOW]] = PDK_MASK_BYTE;
            int *first = trailer ? &s->found_trailer : &s->found_body;
            if (*first < 0)
                *first = label;
        }
    }
    s->hi = hi;
    s->lo = lo;
    s->seen = seen;
    s->pos_next = pos_next;
    hi = lo = 0;
    size_t depth = hold_depth(m, s->hi, s->lo, s->seen);
    size_t emit = depth ? s->pos[(s->pos_next - depth) % PDK_MASK_WINDOW] : total;
    const char *from = buf ? buf : data; /* (nothing was held when buf is NULL) */
    /* the new hold: what is not emitted (never the same bytes as the old hold's buffer) */
    pdk_buf next = {0};
    if (total > emit)
        pdk_buf_append(&next, from + emit, total - emit);
    pdk_buf_free_secret(&s->hold);
    s->hold = next;
    for (size_t j = 1; j <= depth; j++)
        s->pos[(s->pos_next - j) % PDK_MASK_WINDOW] -= emit;
    *out = from;
    *out_len = emit;
}

void pdk_mask_stream_finish(pdk_mask_stream *s, const char **out, size_t *out_len)
{
    /* what was held ends the body: a tail too short to be a fragment of anything */
    pdk_buf_free_secret(&s->work);
    s->work = s->hold;
    s->hold = (pdk_buf){0};
    *out = s->work.data ? s->work.data : "";
    *out_len = s->work.len;
}

void pdk_mask_stream_free(pdk_mask_stream *s)
{
    pdk_buf_free_secret(&s->hold);
    pdk_buf_free_secret(&s->work);
    s->hi = s->lo = 0;
}
