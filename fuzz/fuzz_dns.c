/* fuzz_dns.c: libFuzzer target for the DNS stub (src/gateway/dns_stub.c).
 *
 * The input is one DNS query. It is answered against a fresh table holding two names, with
 * a policy that allows names of even length; the query's ID picks the rest, so that every
 * path is reachable from a real-looking query: bit 0 a full table (SERVFAIL) or a roomy
 * one, bit 1 TCP or UDP, bit 2 a cramped output buffer (truncation) or a whole one.
 *
 * Checked with abort(): the response fits the buffer; it is given exactly when the input
 * is a query with a whole header; it parses back (ID, QR=1, the opcode and RD copied, RA
 * and Z clear, at most one question which is the query's own bytes, one answer, no
 * authority, at most one OPT, nothing after); the header's rcode and the outcome agree; an
 * A answer's address is in 198.18.0.0/15 and maps back to the outcome's name, which the
 * policy allows; a PTR answer's name is the table's; a blocked name was refused by the
 * policy (or is unclean); the outcome's name is bounded, printable, and normal when clean;
 * answering again, on the same table and on a fresh one, gives the same bytes. The input is
 * also run through the TCP deframer. The .c is not included: only the public API is used.
 * Built with -fsanitize=fuzzer (fuzz/meson.build, -Dfuzz=true) and, without libFuzzer, as
 * fuzz-dns-replay (replay.c) for the committed corpus.
 */
#include "dns_stub.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct policy {
    unsigned calls;
    bool last_verdict;
    char last[PDK_DNS_NAME_MAX + 1];
};

static bool even_length(void *arg, const char *name)
{
    struct policy *p = arg;
    size_t n = strlen(name);
    char norm[PDK_DNS_NAME_MAX + 1];
    /* The policy only ever sees clean, normal names. */
    if (n > PDK_DNS_NAME_MAX || !pdk_dns_normalize_name(name, norm) || strcmp(norm, name) != 0)
        abort();
    p->calls++;
    memcpy(p->last, name, n + 1);
    p->last_verdict = n % 2 == 0;
    return p->last_verdict;
}

static pdk_dns_table *fresh_table(bool full)
{
    pdk_dns_table *t = pdk_dns_table_new_bounded(full ? 2 : 64);
    uint32_t a;
    if (pdk_dns_table_assign(t, "mapped.example.com", &a) < 0 || a != PDK_DNS_POOL_FIRST ||
        pdk_dns_table_assign(t, "ab", &a) < 0 || a != PDK_DNS_POOL_FIRST + 1)
        abort();
    return t;
}

static unsigned get16(const uint8_t *p)
{
    return (unsigned)(p[0] << 8 | p[1]);
}

/* The wire name at out[*pos], uncompressed, as dotted text. */
static bool read_plain_name(const uint8_t *out, size_t len, size_t *pos, char *text,
                            size_t text_cap)
{
    size_t n = 0;
    size_t p = *pos;
    for (;;) {
        if (p >= len)
            return false;
        unsigned l = out[p++];
        if (l == 0)
            break;
        if (l > 63 || l > len - p || n + l + 2 > text_cap)
            return false;
        if (n)
            text[n++] = '.';
        memcpy(text + n, out + p, l);
        n += l;
        p += l;
    }
    text[n] = '\0';
    *pos = p;
    return true;
}

static void check_response(const uint8_t *q, size_t qlen, const uint8_t *out, size_t n,
                           const pdk_dns_outcome *o, const pdk_dns_table *t,
                           const struct policy *pol, unsigned calls_before)
{
    if (n < 12 || get16(out) != get16(q) || o->id != get16(q))
        abort();
    unsigned qflags = get16(q + 2), flags = get16(out + 2);
    if (!(flags & 0x8000) || (flags & 0x7800) != (qflags & 0x7800) ||
        (flags & 0x0100) != (qflags & 0x0100) || (flags & 0x00f0))
        abort(); /* QR, opcode, RD; RA, Z, AD, CD clear */
    unsigned qd = get16(out + 4), an = get16(out + 6), ns = get16(out + 8), ar = get16(out + 10);
    if (qd > 1 || an > 1 || ns != 0 || ar > 1)
        abort();
    if ((flags & 0xf) != (o->rcode & 0xf) || o->rcode > PDK_DNS_RCODE_BADVERS)
        abort();
    if (o->rcode == PDK_DNS_RCODE_BADVERS && !ar && !o->truncated)
        abort(); /* the extended code needs the OPT record */
    if (!!(flags & 0x0200) != o->truncated)
        abort();
    if (ar && !o->edns)
        abort();

    size_t pos = 12;
    if (qd) {
        /* The question is the query's, byte for byte. */
        if (!o->has_question)
            abort();
        size_t qp = 12;
        char text[PDK_DNS_NAME_MAX * 4 + 8];
        if (!read_plain_name(q, qlen, &qp, text, sizeof(text)) || qp + 4 > qlen)
            abort();
        size_t question_len = qp + 4 - 12;
        if (n - pos < question_len || memcmp(out + pos, q + 12, question_len) != 0)
            abort();
        if (get16(q + qp) != o->qtype || get16(q + qp + 2) != o->qclass)
            abort();
        pos += question_len;
    }
    if (an) {
        if (!qd || n - pos < 12 || get16(out + pos) != 0xc00c || get16(out + pos + 4) != 1 ||
            o->rcode != PDK_DNS_RCODE_NOERROR || o->blocked)
            abort();
        unsigned type = get16(out + pos + 2), rdlen = get16(out + pos + 10);
        pos += 12;
        if (n - pos < rdlen)
            abort();
        if (type == PDK_DNS_TYPE_A) {
            if (rdlen != 4)
                abort();
            uint32_t a = (uint32_t)get16(out + pos) << 16 | get16(out + pos + 2);
            if (!pdk_dns_address_in_pool(a) || a != o->address || a < PDK_DNS_POOL_FIRST ||
                a > PDK_DNS_POOL_LAST)
                abort();
            const char *back = pdk_dns_table_find_name(t, a);
            uint32_t again = 0;
            if (!back || strcmp(back, o->name) != 0 ||
                pdk_dns_table_find_address(t, o->name, &again) < 0 || again != a)
                abort();
            /* Allowed by the policy, asked this time. */
            if (pol->calls != calls_before + 1 || !pol->last_verdict ||
                strcmp(pol->last, o->name) != 0)
                abort();
        } else if (type == PDK_DNS_TYPE_PTR) {
            size_t p = pos;
            char text[PDK_DNS_NAME_MAX + 8];
            if (!read_plain_name(out, pos + rdlen, &p, text, sizeof(text)) || p != pos + rdlen)
                abort();
            uint32_t a;
            if (pdk_dns_table_find_address(t, text, &a) < 0)
                abort();
            if (pol->calls != calls_before)
                abort(); /* the reverse of our own addresses is not a policy question */
        } else {
            abort();
        }
        pos += rdlen;
    } else if (o->address) {
        abort();
    }
    if (ar) {
        /* Our OPT: root, type 41, our size, version 0, no options. */
        if (n - pos != 11 || out[pos] != 0 || get16(out + pos + 1) != PDK_DNS_TYPE_OPT ||
            get16(out + pos + 3) != PDK_DNS_EDNS_UDP_SIZE || out[pos + 5] != (o->rcode >> 4) ||
            out[pos + 6] != 0 || get16(out + pos + 9) != 0)
            abort();
        pos += 11;
    }
    if (pos != n)
        abort();
}

static void check_outcome(const pdk_dns_outcome *o, const struct policy *pol, unsigned calls_before)
{
    size_t len = strnlen(o->name, sizeof(o->name));
    if (len > PDK_DNS_NAME_MAX)
        abort();
    for (size_t i = 0; i < len; i++)
        if (o->name[i] <= ' ' || o->name[i] >= 127)
            abort();
    if (!o->has_question && (len || o->qtype || o->qclass || o->blocked || o->name_escaped))
        abort();
    if (o->has_question && !len)
        abort();
    if (o->has_question && !o->name_escaped) {
        char norm[PDK_DNS_NAME_MAX + 1];
        if (!pdk_dns_normalize_name(o->name, norm) || strcmp(norm, o->name) != 0)
            abort();
    }
    if (pol->calls > calls_before + 1)
        abort(); /* the policy is asked once per query at most */
    if (o->blocked) {
        if (o->rcode != PDK_DNS_RCODE_NXDOMAIN)
            abort();
        if (!o->name_escaped &&
            (pol->calls != calls_before + 1 || pol->last_verdict || strcmp(pol->last, o->name)))
            abort();
        if (o->name_escaped && pol->calls != calls_before)
            abort(); /* an unclean name never reaches the policy */
    }
}

static void check_deframe(const uint8_t *data, size_t size)
{
    const uint8_t *m = NULL;
    size_t mlen = 0, used = 0;
    int r = pdk_dns_tcp_deframe(data, size, &m, &mlen, &used);
    if (r == 1) {
        if (m != data + PDK_DNS_TCP_PREFIX || mlen == 0 || used != mlen + PDK_DNS_TCP_PREFIX ||
            used > size || mlen != get16(data))
            abort();
        uint8_t framed[65535 + PDK_DNS_TCP_PREFIX];
        if (pdk_dns_tcp_frame(m, mlen, framed, sizeof(framed)) != used ||
            memcmp(framed, data, used) != 0)
            abort();
    } else if (r == 0) {
        if (size >= PDK_DNS_TCP_PREFIX && size - PDK_DNS_TCP_PREFIX >= get16(data))
            abort();
    } else if (r != -1 || size < PDK_DNS_TCP_PREFIX || get16(data) != 0) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_deframe(data, size);

    unsigned id = size >= 2 ? get16(data) : 0;
    bool full = id & 1;
    enum pdk_dns_transport transport = (id & 2) ? PDK_DNS_TCP : PDK_DNS_UDP;
    size_t cap = (id & 4) ? 12 + (id >> 3) % 64 : PDK_DNS_RESPONSE_MAX;

    pdk_dns_table *t = fresh_table(full);
    struct policy pol = {0};
    uint8_t out[PDK_DNS_RESPONSE_MAX + 16];
    memset(out, 0xa5, sizeof(out));
    pdk_dns_outcome o;
    size_t n = pdk_dns_answer(t, even_length, &pol, transport, data, size, out, cap, &o);
    if (n > cap || out[cap] != 0xa5 || o.respond != (n > 0))
        abort();
    bool is_query = size >= 12 && !(data[2] & 0x80);
    if ((n > 0) != is_query)
        abort();
    check_outcome(&o, &pol, 0);
    if (n)
        check_response(data, size, out, n, &o, t, &pol, 0);

    /* Again, on the same table: the same bytes (a name mapped the first time keeps its
     * address); and on a fresh table prepared the same way. */
    uint8_t again[sizeof(out)];
    pdk_dns_outcome o2;
    unsigned calls = pol.calls;
    size_t n2 = pdk_dns_answer(t, even_length, &pol, transport, data, size, again, cap, &o2);
    if (n2 != n || memcmp(again, out, n) != 0 || memcmp(&o2, &o, sizeof(o)) != 0)
        abort();
    check_outcome(&o2, &pol, calls);
    pdk_dns_table_free(t);

    t = fresh_table(full);
    n2 = pdk_dns_answer(t, even_length, &pol, transport, data, size, again, cap, &o2);
    if (n2 != n || memcmp(again, out, n) != 0 || memcmp(&o2, &o, sizeof(o)) != 0)
        abort();
    pdk_dns_table_free(t);
    return 0;
}
