/* dns_stub.c: the sandbox's DNS answers (see dns_stub.h).
 *
 * The table is an array of names indexed by address offset (addresses are handed out in
 * order, so the array only grows at its end) and an open-addressing hash table of indexes
 * into it, keyed by SipHash-2-4 (libsodium's crypto_shorthash) with a per-table random key:
 * the names come from the sandbox, which must not be able to pick colliding ones and turn
 * every lookup of the supervisor into a scan.
 *
 * The message side reads the query once, front to back, with bounds checked at every step;
 * it never follows a compression pointer (the question must not have any, and the names of
 * other records are only skipped), so there is no loop to bound. The response is built by
 * a writer that refuses to go past its limit, which is how truncation is decided: try the
 * whole response, then smaller ones.
 */
#include "dns_stub.h"

#include "util.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define HEADER_LEN    12
#define WIRE_NAME_MAX 255 /* RFC 1035 3.1: a name's wire form, length bytes included */
#define LABEL_MAX     63
#define UDP_PLAIN_MAX 512 /* RFC 1035 4.2.1: UDP without EDNS */

/* Header flag bits (RFC 1035 4.1.1). */
#define FLAG_QR       0x8000u
#define FLAG_AA       0x0400u
#define FLAG_TC       0x0200u
#define FLAG_RD       0x0100u
#define OPCODE(flags) (((flags) >> 11) & 0xfu)
#define OPCODE_QUERY  0
#define PTR_TO_HEADER 0xc00cu /* a compression pointer to the question's name, at 12 */
#define ESCAPED_MAX   (4 * WIRE_NAME_MAX + 2) /* every byte as \DDD, and a NUL */
#define INITIAL_SLOTS 64u
#define INITIAL_NAMES 64u

/* ---- The table ------------------------------------------------------------------------ */

struct pdk_dns_table {
    char **names;     /* names[i] is the name of PDK_DNS_POOL_FIRST + i */
    size_t count;     /* names used */
    size_t names_cap; /* names allocated */
    size_t capacity;  /* the most names the table will hold */
    uint32_t *slots;  /* 0: empty; otherwise an index into names, plus one */
    size_t slot_mask; /* slot count - 1 (a power of two) */
    unsigned char key[crypto_shorthash_KEYBYTES];
};

static bool is_name_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static unsigned char fold(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c - 'A' + 'a') : c;
}

bool pdk_dns_normalize_name(const char *name, char out[PDK_DNS_NAME_MAX + 1])
{
    out[0] = '\0';
    size_t len = strlen(name);
    if (len > 0 && name[len - 1] == '.')
        len--;
    if (len == 0 || len > PDK_DNS_NAME_MAX)
        return false;
    size_t label = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = fold((unsigned char)name[i]);
        if (c == '.') {
            if (label == 0)
                goto bad; /* an empty label: "a..b", ".a" */
            label = 0;
        } else if (!is_name_byte(c) || ++label > LABEL_MAX) {
            goto bad;
        }
        out[i] = (char)c;
    }
    if (label == 0)
        goto bad; /* "a.." ends in an empty label once the one trailing dot is gone */
    out[len] = '\0';
    return true;
bad:
    out[0] = '\0';
    return false;
}

static uint64_t hash_name(const pdk_dns_table *t, const char *name)
{
    unsigned char h[crypto_shorthash_BYTES];
    crypto_shorthash(h, (const unsigned char *)name, strlen(name), t->key);
    uint64_t v;
    memcpy(&v, h, sizeof(v));
    return v;
}

pdk_dns_table *pdk_dns_table_new_bounded(size_t capacity)
{
    pdk_dns_table *t = xcalloc(1, sizeof(*t));
    if (capacity == 0)
        capacity = 1;
    if (capacity > PDK_DNS_POOL_CAPACITY)
        capacity = PDK_DNS_POOL_CAPACITY;
    t->capacity = capacity;
    t->slots = xcalloc(INITIAL_SLOTS, sizeof(*t->slots));
    t->slot_mask = INITIAL_SLOTS - 1;
    /* The key only spreads the slots; without getrandom (never, on kernels we run on) a
     * clock value still beats a constant an attacker can compute collisions for. */
    if (getrandom(t->key, sizeof(t->key), GRND_NONBLOCK) != (ssize_t)sizeof(t->key)) {
        uint64_t now = pdk_now_monotonic_ns();
        memcpy(t->key, &now, sizeof(now));
    }
    return t;
}

pdk_dns_table *pdk_dns_table_new(void)
{
    return pdk_dns_table_new_bounded(PDK_DNS_POOL_CAPACITY);
}

void pdk_dns_table_free(pdk_dns_table *table)
{
    if (!table)
        return;
    for (size_t i = 0; i < table->count; i++)
        free(table->names[i]);
    free(table->names);
    free(table->slots);
    free(table);
}

size_t pdk_dns_table_count(const pdk_dns_table *table)
{
    return table->count;
}

size_t pdk_dns_table_capacity(const pdk_dns_table *table)
{
    return table->capacity;
}

bool pdk_dns_address_in_pool(uint32_t address)
{
    return (address >> (32 - PDK_DNS_POOL_PREFIX)) ==
           (PDK_DNS_POOL_BASE >> (32 - PDK_DNS_POOL_PREFIX));
}

/* The slot holding name, or the empty slot where it would go. */
static size_t find_slot(const pdk_dns_table *t, const char *name)
{
    size_t i = (size_t)hash_name(t, name) & t->slot_mask;
    while (t->slots[i] && strcmp(t->names[t->slots[i] - 1], name) != 0)
        i = (i + 1) & t->slot_mask;
    return i;
}

/* Keep the load at or below one half: probes stay short, and there is always an empty
 * slot to end a probe. */
static void grow_slots(pdk_dns_table *t)
{
    size_t n = (t->slot_mask + 1) * 2;
    free(t->slots);
    t->slots = xcalloc(n, sizeof(*t->slots));
    t->slot_mask = n - 1;
    for (size_t k = 0; k < t->count; k++) {
        size_t i = (size_t)hash_name(t, t->names[k]) & t->slot_mask;
        while (t->slots[i])
            i = (i + 1) & t->slot_mask;
        t->slots[i] = (uint32_t)(k + 1);
    }
}

/* The address of an already normalised name, if mapped. */
static bool find(const pdk_dns_table *t, const char *name, uint32_t *address)
{
    size_t i = find_slot(t, name);
    if (!t->slots[i])
        return false;
    *address = PDK_DNS_POOL_FIRST + (t->slots[i] - 1);
    return true;
}

/* The address of an already normalised name, mapped now when new. */
static int assign(pdk_dns_table *t, const char *name, uint32_t *address)
{
    if (find(t, name, address))
        return 0;
    if (t->count >= t->capacity) {
        errno = ENOSPC;
        return -1;
    }
    if (t->count == t->names_cap) {
        t->names_cap = t->names_cap ? t->names_cap * 2 : INITIAL_NAMES;
        if (t->names_cap > t->capacity)
            t->names_cap = t->capacity;
        t->names = xrealloc(t->names, t->names_cap * sizeof(*t->names));
    }
    t->names[t->count] = xstrdup(name);
    t->count++;
    if (t->count * 2 > t->slot_mask + 1)
        grow_slots(t); /* places the new name too */
    else
        t->slots[find_slot(t, name)] = (uint32_t)t->count;
    *address = PDK_DNS_POOL_FIRST + (uint32_t)(t->count - 1);
    return 0;
}

int pdk_dns_table_assign(pdk_dns_table *table, const char *name, uint32_t *address)
{
    char norm[PDK_DNS_NAME_MAX + 1];
    if (!pdk_dns_normalize_name(name, norm)) {
        errno = EINVAL;
        return -1;
    }
    return assign(table, norm, address);
}

int pdk_dns_table_find_address(const pdk_dns_table *table, const char *name, uint32_t *address)
{
    char norm[PDK_DNS_NAME_MAX + 1];
    if (!pdk_dns_normalize_name(name, norm)) {
        errno = EINVAL;
        return -1;
    }
    if (!find(table, norm, address)) {
        errno = ENOENT;
        return -1;
    }
    return 0;
}

const char *pdk_dns_table_find_name(const pdk_dns_table *table, uint32_t address)
{
    if (address < PDK_DNS_POOL_FIRST)
        return NULL;
    uint32_t index = address - PDK_DNS_POOL_FIRST;
    if (index >= table->count)
        return NULL;
    return table->names[index];
}

/* ---- Reading a query ------------------------------------------------------------------ */

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* The question's name at *pos: uncompressed labels of 1..63 bytes, 255 bytes in all.
 * Advances *pos past it. */
static bool read_question_name(const uint8_t *msg, size_t len, size_t *pos)
{
    size_t p = *pos;
    size_t wire = 0;
    for (;;) {
        if (p >= len)
            return false;
        unsigned l = msg[p];
        if (l == 0)
            break;
        if (l > LABEL_MAX)
            return false; /* 0xc0: a compression pointer; 0x40, 0x80: RFC 6891's dead
                           * extended label types */
        wire += 1 + l;
        if (wire + 1 > WIRE_NAME_MAX || l > len - p - 1)
            return false;
        p += 1 + l;
    }
    *pos = p + 1;
    return true;
}

/* Skip the owner name of another record. It may end in a compression pointer, which is
 * not followed (nothing here needs the name) but must point backwards, to where a name
 * could have started. */
static bool skip_record_name(const uint8_t *msg, size_t len, size_t *pos)
{
    size_t start = *pos;
    size_t p = start;
    size_t wire = 0;
    for (;;) {
        if (p >= len)
            return false;
        unsigned l = msg[p];
        if (l == 0) {
            p++;
            break;
        }
        if ((l & 0xc0) == 0xc0) {
            if (len - p < 2)
                return false;
            size_t target = ((l & 0x3fu) << 8) | msg[p + 1];
            if (target < HEADER_LEN || target >= start)
                return false;
            p += 2;
            break;
        }
        if (l > LABEL_MAX)
            return false;
        wire += 1 + l;
        if (wire + 1 > WIRE_NAME_MAX || l > len - p - 1)
            return false;
        p += 1 + l;
    }
    *pos = p;
    return true;
}

struct edns {
    bool present;
    uint16_t udp_size;
    uint8_t version;
};

/* Skip count records; an OPT record, allowed only where opt_allowed (the additional
 * section), is read into *edns. */
static bool skip_records(const uint8_t *msg, size_t len, size_t *pos, unsigned count,
                         bool opt_allowed, struct edns *edns)
{
    for (unsigned k = 0; k < count; k++) {
        size_t name_at = *pos;
        if (!skip_record_name(msg, len, pos))
            return false;
        if (len - *pos < 10)
            return false;
        const uint8_t *r = msg + *pos;
        uint16_t type = get16(r);
        uint16_t rdlen = get16(r + 8);
        *pos += 10;
        if (rdlen > len - *pos)
            return false;
        if (type == PDK_DNS_TYPE_OPT) {
            /* RFC 6891 6.1.1: one OPT, in the additional section, owned by the root. */
            if (!opt_allowed || edns->present || msg[name_at] != 0)
                return false;
            /* Its options must tile the data exactly (6.1.2). None is used. */
            size_t o = 0;
            while (o < rdlen) {
                if (rdlen - o < 4)
                    return false;
                size_t olen = get16(msg + *pos + o + 2);
                if (olen > rdlen - o - 4)
                    return false;
                o += 4 + olen;
            }
            edns->present = true;
            edns->udp_size = get16(r + 2);
            edns->version = (uint8_t)(get32(r + 4) >> 16);
        }
        *pos += rdlen;
    }
    return true;
}

/* Render the (already validated) question name at msg for the outcome and the policy.
 * Returns true when it is a clean name; out holds its normal form then, and the escaped
 * rendering otherwise. */
static bool render_name(const uint8_t *msg, char out[PDK_DNS_NAME_MAX + 1])
{
    char text[ESCAPED_MAX];
    size_t n = 0;
    bool clean = true;
    const uint8_t *p = msg;
    if (*p == 0) {
        strcpy(out, ".");
        return false;
    }
    while (*p) {
        unsigned l = *p++;
        if (n)
            text[n++] = '.';
        for (unsigned i = 0; i < l; i++) {
            unsigned char c = fold(p[i]);
            if (is_name_byte(c)) {
                text[n++] = (char)c;
            } else {
                clean = false;
                text[n++] = '\\';
                text[n++] = (char)('0' + c / 100);
                text[n++] = (char)('0' + c / 10 % 10);
                text[n++] = (char)('0' + c % 10);
            }
        }
        p += l;
    }
    text[n] = '\0';
    if (n > PDK_DNS_NAME_MAX) {
        /* Only an escaped rendering gets here: 255 wire bytes make 253 characters. */
        memcpy(out, text, PDK_DNS_NAME_MAX - 3);
        memcpy(out + PDK_DNS_NAME_MAX - 3, "...", 4);
    } else {
        memcpy(out, text, n + 1);
    }
    return clean;
}

/* A canonical decimal octet, "0".."255" without leading zeros. */
static bool parse_octet(const char *s, size_t len, uint32_t *v)
{
    if (len == 0 || len > 3 || (len > 1 && s[0] == '0'))
        return false;
    uint32_t x = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        x = x * 10 + (uint32_t)(s[i] - '0');
    }
    if (x > 255)
        return false;
    *v = x;
    return true;
}

/* "d.c.b.a.in-addr.arpa" for an address of the pool: true with *address. */
static bool parse_pool_reverse(const char *name, uint32_t *address)
{
    static const char suffix[] = ".in-addr.arpa";
    size_t len = strlen(name);
    if (len <= sizeof(suffix) - 1 || strcmp(name + len - (sizeof(suffix) - 1), suffix) != 0)
        return false;
    len -= sizeof(suffix) - 1;
    uint32_t octets[4];
    size_t start = 0;
    for (int k = 0; k < 4; k++) {
        size_t end = start;
        while (end < len && name[end] != '.')
            end++;
        if ((k < 3) != (end < len) || !parse_octet(name + start, end - start, &octets[k]))
            return false;
        start = end + 1;
    }
    uint32_t a = (octets[3] << 24) | (octets[2] << 16) | (octets[1] << 8) | octets[0];
    if (!pdk_dns_address_in_pool(a))
        return false;
    *address = a;
    return true;
}

/* ---- Writing a response --------------------------------------------------------------- */

struct writer {
    uint8_t *p;
    size_t cap;
    size_t len;
    bool overflow;
};

static void put(struct writer *w, const void *data, size_t n)
{
    if (w->overflow || n > w->cap - w->len) {
        w->overflow = true;
        return;
    }
    memcpy(w->p + w->len, data, n);
    w->len += n;
}

static void put8(struct writer *w, unsigned v)
{
    uint8_t b = (uint8_t)v;
    put(w, &b, 1);
}

static void put16(struct writer *w, unsigned v)
{
    uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    put(w, b, 2);
}

static void put32(struct writer *w, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    put(w, b, 4);
}

/* A clean name (from the table) in wire form. */
static void put_name(struct writer *w, const char *name)
{
    while (*name) {
        size_t l = strcspn(name, ".");
        put8(w, (unsigned)l);
        put(w, name, l);
        name += l;
        if (*name == '.')
            name++;
    }
    put8(w, 0);
}

static size_t name_wire_len(const char *name)
{
    return strlen(name) + 2;
}

enum answer_kind {
    ANSWER_NONE,
    ANSWER_A,
    ANSWER_PTR,
};

struct reply {
    uint16_t id;
    uint16_t query_flags;
    unsigned rcode; /* extended codes included */
    bool aa;
    const uint8_t *question; /* NULL: none echoed */
    size_t question_len;
    enum answer_kind answer;
    uint32_t address;     /* ANSWER_A */
    const char *ptr_name; /* ANSWER_PTR */
    bool opt;             /* the query had a usable OPT */
};

/* The response with the parts asked for, or 0 when it does not fit cap. */
static size_t write_reply(const struct reply *r, bool with_question, bool with_answer,
                          bool with_opt, bool tc, uint8_t *out, size_t cap)
{
    struct writer w = {.p = out, .cap = cap};
    with_question = with_question && r->question;
    /* The answer's owner is a pointer to the question's name. */
    with_answer = with_answer && with_question && r->answer != ANSWER_NONE;
    with_opt = with_opt && r->opt;
    unsigned flags =
        FLAG_QR | (OPCODE(r->query_flags) << 11) | (r->query_flags & FLAG_RD) | (r->rcode & 0xfu);
    if (r->aa)
        flags |= FLAG_AA;
    if (tc)
        flags |= FLAG_TC;
    put16(&w, r->id);
    put16(&w, flags);
    put16(&w, with_question ? 1 : 0);
    put16(&w, with_answer ? 1 : 0);
    put16(&w, 0);
    put16(&w, with_opt ? 1 : 0);
    if (with_question)
        put(&w, r->question, r->question_len);
    if (with_answer) {
        put16(&w, PTR_TO_HEADER);
        put16(&w, r->answer == ANSWER_A ? PDK_DNS_TYPE_A : PDK_DNS_TYPE_PTR);
        put16(&w, PDK_DNS_CLASS_IN);
        put32(&w, PDK_DNS_TTL);
        if (r->answer == ANSWER_A) {
            put16(&w, 4);
            put32(&w, r->address);
        } else {
            put16(&w, (unsigned)name_wire_len(r->ptr_name));
            put_name(&w, r->ptr_name);
        }
    }
    if (with_opt) {
        put8(&w, 0); /* the root */
        put16(&w, PDK_DNS_TYPE_OPT);
        put16(&w, PDK_DNS_EDNS_UDP_SIZE);
        put32(&w, (uint32_t)(r->rcode >> 4) << 24); /* extended rcode, version 0, no DO */
        put16(&w, 0);
    }
    return w.overflow ? 0 : w.len;
}

/* ---- Answering ------------------------------------------------------------------------ */

/* Decide the reply to a query whose header is there and is a query (QR=0). */
static void decide(pdk_dns_table *table, pdk_dns_could_allow_fn could_allow, void *arg,
                   const uint8_t *msg, size_t len, struct reply *r, struct edns *edns,
                   pdk_dns_outcome *o)
{
    r->rcode = PDK_DNS_RCODE_FORMERR;
    if (OPCODE(r->query_flags) != OPCODE_QUERY) {
        r->rcode = PDK_DNS_RCODE_NOTIMP;
        return;
    }
    if (get16(msg + 4) != 1)
        return;
    size_t pos = HEADER_LEN;
    if (!read_question_name(msg, len, &pos) || len - pos < 4)
        return;
    o->qtype = get16(msg + pos);
    o->qclass = get16(msg + pos + 2);
    pos += 4;
    o->has_question = true;
    r->question = msg + HEADER_LEN;
    r->question_len = pos - HEADER_LEN;
    bool clean = render_name(msg + HEADER_LEN, o->name);
    o->name_escaped = !clean;

    unsigned ancount = get16(msg + 6), nscount = get16(msg + 8), arcount = get16(msg + 10);
    if (!skip_records(msg, len, &pos, ancount + nscount, false, edns))
        return;
    if (!skip_records(msg, len, &pos, arcount, true, edns)) {
        edns->present = false; /* a broken OPT is not answered with one */
        return;
    }
    r->opt = edns->present;
    if (ancount || nscount || pos != len)
        return;
    if (edns->present && edns->version != 0) {
        r->rcode = PDK_DNS_RCODE_BADVERS;
        return;
    }

    r->aa = true;
    r->rcode = PDK_DNS_RCODE_NOERROR;
    bool in = o->qclass == PDK_DNS_CLASS_IN || o->qclass == PDK_DNS_CLASS_ANY;
    uint32_t reverse;
    if (clean && parse_pool_reverse(o->name, &reverse)) {
        /* Our own addresses: no policy question, the table knows. */
        const char *mapped = pdk_dns_table_find_name(table, reverse);
        if (!mapped) {
            r->rcode = PDK_DNS_RCODE_NXDOMAIN;
        } else if (!in) {
            r->aa = false;
            r->rcode = PDK_DNS_RCODE_REFUSED;
        } else if (o->qtype == PDK_DNS_TYPE_PTR || o->qtype == PDK_DNS_TYPE_ANY) {
            r->answer = ANSWER_PTR;
            r->ptr_name = mapped;
        }
        return;
    }
    if (!clean || !could_allow || !could_allow(arg, o->name)) {
        r->rcode = PDK_DNS_RCODE_NXDOMAIN;
        o->blocked = true;
        return;
    }
    if (!in) {
        r->aa = false;
        r->rcode = PDK_DNS_RCODE_REFUSED;
        return;
    }
    switch (o->qtype) {
    case PDK_DNS_TYPE_A:
    case PDK_DNS_TYPE_ANY:
        if (assign(table, o->name, &r->address) < 0) {
            r->aa = false;
            r->rcode = PDK_DNS_RCODE_SERVFAIL;
        } else {
            r->answer = ANSWER_A;
        }
        break;
    case PDK_DNS_TYPE_AXFR:
    case PDK_DNS_TYPE_IXFR:
        r->aa = false;
        r->rcode = PDK_DNS_RCODE_REFUSED;
        break;
    default:
        break; /* AAAA, MX, TXT, HTTPS...: the name exists, with no such record */
    }
}

size_t pdk_dns_answer(pdk_dns_table *table, pdk_dns_could_allow_fn could_allow, void *arg,
                      enum pdk_dns_transport transport, const uint8_t *query, size_t query_len,
                      uint8_t *out, size_t out_cap, pdk_dns_outcome *outcome)
{
    pdk_dns_outcome scratch;
    pdk_dns_outcome *o = outcome ? outcome : &scratch;
    memset(o, 0, sizeof(*o));
    if (query_len < HEADER_LEN)
        return 0;
    o->id = get16(query);
    uint16_t flags = get16(query + 2);
    if (flags & FLAG_QR)
        return 0;

    struct reply r = {.id = o->id, .query_flags = flags};
    struct edns edns = {0};
    decide(table, could_allow, arg, query, query_len, &r, &edns, o);
    o->rcode = (uint16_t)r.rcode;
    o->edns = r.opt;

    size_t limit = out_cap;
    if (transport == PDK_DNS_UDP) {
        size_t udp = UDP_PLAIN_MAX;
        if (r.opt && edns.udp_size > udp)
            udp = edns.udp_size; /* RFC 6891 6.2.5: below 512 means 512 */
        if (udp < limit)
            limit = udp;
    } else if (limit > 65535) {
        limit = 65535; /* what a TCP length prefix can say */
    }

    size_t n = write_reply(&r, true, true, true, false, out, limit);
    if (n) {
        if (r.answer == ANSWER_A)
            o->address = r.address;
    } else {
        /* Too big: the client retries over TCP (or with a larger buffer). Keep what fits. */
        o->truncated = true;
        n = write_reply(&r, true, false, true, true, out, limit);
        if (!n)
            n = write_reply(&r, true, false, false, true, out, limit);
        if (!n)
            n = write_reply(&r, false, false, false, true, out, limit);
        if (!n)
            o->truncated = false;
    }
    o->respond = n > 0;
    return n;
}

const char *pdk_dns_rcode_name(unsigned rcode)
{
    switch (rcode) {
    case PDK_DNS_RCODE_NOERROR:
        return "NOERROR";
    case PDK_DNS_RCODE_FORMERR:
        return "FORMERR";
    case PDK_DNS_RCODE_SERVFAIL:
        return "SERVFAIL";
    case PDK_DNS_RCODE_NXDOMAIN:
        return "NXDOMAIN";
    case PDK_DNS_RCODE_NOTIMP:
        return "NOTIMP";
    case PDK_DNS_RCODE_REFUSED:
        return "REFUSED";
    case PDK_DNS_RCODE_BADVERS:
        return "BADVERS";
    default:
        return NULL;
    }
}

const char *pdk_dns_type_name(unsigned type)
{
    switch (type) {
    case PDK_DNS_TYPE_A:
        return "A";
    case PDK_DNS_TYPE_NS:
        return "NS";
    case PDK_DNS_TYPE_CNAME:
        return "CNAME";
    case PDK_DNS_TYPE_SOA:
        return "SOA";
    case PDK_DNS_TYPE_PTR:
        return "PTR";
    case PDK_DNS_TYPE_MX:
        return "MX";
    case PDK_DNS_TYPE_TXT:
        return "TXT";
    case PDK_DNS_TYPE_AAAA:
        return "AAAA";
    case PDK_DNS_TYPE_SRV:
        return "SRV";
    case PDK_DNS_TYPE_OPT:
        return "OPT";
    case PDK_DNS_TYPE_SVCB:
        return "SVCB";
    case PDK_DNS_TYPE_HTTPS:
        return "HTTPS";
    case PDK_DNS_TYPE_IXFR:
        return "IXFR";
    case PDK_DNS_TYPE_AXFR:
        return "AXFR";
    case PDK_DNS_TYPE_ANY:
        return "ANY";
    default:
        return NULL;
    }
}

/* ---- TCP framing ---------------------------------------------------------------------- */

int pdk_dns_tcp_deframe(const uint8_t *buf, size_t len, const uint8_t **message,
                        size_t *message_len, size_t *consumed)
{
    if (len < PDK_DNS_TCP_PREFIX)
        return 0;
    size_t n = get16(buf);
    if (n == 0)
        return -1;
    if (len - PDK_DNS_TCP_PREFIX < n)
        return 0;
    *message = buf + PDK_DNS_TCP_PREFIX;
    *message_len = n;
    *consumed = PDK_DNS_TCP_PREFIX + n;
    return 1;
}

size_t pdk_dns_tcp_frame(const uint8_t *message, size_t message_len, uint8_t *out, size_t out_cap)
{
    if (message_len == 0 || message_len > 65535 || out_cap < PDK_DNS_TCP_PREFIX ||
        message_len > out_cap - PDK_DNS_TCP_PREFIX)
        return 0;
    memmove(out + PDK_DNS_TCP_PREFIX, message, message_len);
    out[0] = (uint8_t)(message_len >> 8);
    out[1] = (uint8_t)message_len;
    return PDK_DNS_TCP_PREFIX + message_len;
}
