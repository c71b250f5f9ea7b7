/* test_dns_stub.c: the sandbox's DNS answers (src/gateway/dns_stub.c).
 *
 * Queries are built by hand with a small builder and answered by pdk_dns_answer(); the tests
 * compare exact response bytes where the layout matters (the A answer, PTR, EDNS) and the
 * header fields and the outcome elsewhere. The policy is a predicate allowing example.com
 * and its subdomains, counting its calls. No socket is opened.
 */
#include "dns_stub.h"
#include "util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- A query builder ---- */

struct query {
    uint8_t b[1024];
    size_t len;
};

static void q_u8(struct query *q, unsigned v)
{
    assert_true(q->len < sizeof(q->b));
    q->b[q->len++] = (uint8_t)v;
}

static void q_u16(struct query *q, unsigned v)
{
    q_u8(q, v >> 8);
    q_u8(q, v & 0xff);
}

static void q_u32(struct query *q, uint32_t v)
{
    q_u16(q, v >> 16);
    q_u16(q, v & 0xffff);
}

static void q_bytes(struct query *q, const void *data, size_t n)
{
    assert_true(n <= sizeof(q->b) - q->len);
    memcpy(q->b + q->len, data, n);
    q->len += n;
}

static void q_header(struct query *q, unsigned id, unsigned flags, unsigned qd, unsigned an,
                     unsigned ns, unsigned ar)
{
    q->len = 0;
    q_u16(q, id);
    q_u16(q, flags);
    q_u16(q, qd);
    q_u16(q, an);
    q_u16(q, ns);
    q_u16(q, ar);
}

/* A dotted name in wire form ("" is the root); labels may be any length, for the bad ones. */
static void q_name(struct query *q, const char *name)
{
    while (*name) {
        size_t l = strcspn(name, ".");
        q_u8(q, (unsigned)l);
        q_bytes(q, name, l);
        name += l;
        if (*name == '.')
            name++;
    }
    q_u8(q, 0);
}

static void q_question(struct query *q, const char *name, unsigned type, unsigned class)
{
    q_name(q, name);
    q_u16(q, type);
    q_u16(q, class);
}

/* An OPT record without options. */
static void q_opt(struct query *q, unsigned udp_size, unsigned version, unsigned flags)
{
    q_u8(q, 0);
    q_u16(q, PDK_DNS_TYPE_OPT);
    q_u16(q, udp_size);
    q_u32(q, (uint32_t)version << 16 | flags);
    q_u16(q, 0);
}

/* The usual query: ID 0x1234, RD, one question. */
static void q_simple(struct query *q, const char *name, unsigned type)
{
    q_header(q, 0x1234, 0x0100, 1, 0, 0, 0);
    q_question(q, name, type, PDK_DNS_CLASS_IN);
}

/* ---- The policy and the answer ---- */

static unsigned policy_calls;
static char policy_last[PDK_DNS_NAME_MAX + 1];

static bool allow_example(void *arg, const char *name)
{
    assert_ptr_equal(arg, &policy_calls);
    policy_calls++;
    size_t n = strlen(name);
    assert_true(n <= PDK_DNS_NAME_MAX);
    memcpy(policy_last, name, n + 1);
    return strcmp(name, "example.com") == 0 ||
           (n > 12 && strcmp(name + n - 12, ".example.com") == 0);
}

struct response {
    uint8_t b[PDK_DNS_RESPONSE_MAX];
    size_t len;
    pdk_dns_outcome o;
};

static void answer_cap(pdk_dns_table *t, const struct query *q, size_t cap,
                       enum pdk_dns_transport transport, struct response *r)
{
    assert_true(cap <= sizeof(r->b));
    memset(r->b, 0xee, sizeof(r->b));
    r->len =
        pdk_dns_answer(t, allow_example, &policy_calls, transport, q->b, q->len, r->b, cap, &r->o);
    assert_true(r->len <= cap);
    assert_int_equal(r->o.respond, r->len > 0);
}

static void answer(pdk_dns_table *t, const struct query *q, struct response *r)
{
    answer_cap(t, q, sizeof(r->b), PDK_DNS_UDP, r);
}

static unsigned r16(const struct response *r, size_t at)
{
    assert_true(at + 2 <= r->len);
    return (unsigned)(r->b[at] << 8 | r->b[at + 1]);
}

/* Header checks: flags, then QD/AN/NS/AR counts. */
static void assert_header(const struct response *r, unsigned flags, unsigned qd, unsigned an,
                          unsigned ns, unsigned ar)
{
    assert_true(r->len >= 12);
    assert_int_equal(r16(r, 2), flags);
    assert_int_equal(r16(r, 4), qd);
    assert_int_equal(r16(r, 6), an);
    assert_int_equal(r16(r, 8), ns);
    assert_int_equal(r16(r, 10), ar);
}

/* The response is the query's header ID, then the question echoed byte for byte. */
static void assert_echo(const struct query *q, const struct response *r, size_t question_len)
{
    assert_int_equal(r16(r, 0), (unsigned)(q->b[0] << 8 | q->b[1]));
    assert_true(r->len >= 12 + question_len);
    assert_memory_equal(r->b + 12, q->b + 12, question_len);
}

static size_t question_len(const char *name)
{
    return (name[0] ? strlen(name) + 2 : 1) + 4;
}

#define FLAGS_AA_RD 0x8500u /* QR AA RD, NOERROR */

/* ---- Tests ---- */

static void a_for_allowed_name(void **state)
{
    pdk_dns_table *t = pdk_dns_table_new();
    struct query q;
    struct response r;
    q_simple(&q, "www.example.com", PDK_DNS_TYPE_A);
    answer(t, &q, &r);
    static const uint8_t want[] = {
        0x12, 0x34, 0x85, 0x00, 0, 1,   0,   1,   0,   0,   0,   0, /* header */
        3,    'w',  'w',  'w',  7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3,   'c', 'o', 'm', 0, /* */
        0,    1,    0,    1,                                                            /* A IN */
        0xc0, 0x0c, 0,    1,    0, 1,   0,   0,   0,   60,  0,   4,   198, 18,  0,   1, /* answer */
    };
    assert_int_equal(r.len, sizeof(want));
    assert_memory_equal(r.b, want, sizeof(want));
    assert_true(r.o.has_question);
    assert_false(r.o.blocked);
    assert_false(r.o.name_escaped);
    assert_false(r.o.truncated);
    assert_false(r.o.edns);
    assert_string_equal(r.o.name, "www.example.com");
    assert_int_equal(r.o.id, 0x1234);
    assert_int_equal(r.o.qtype, PDK_DNS_TYPE_A);
    assert_int_equal(r.o.qclass, PDK_DNS_CLASS_IN);
    assert_int_equal(r.o.rcode, PDK_DNS_RCODE_NOERROR);
    assert_int_equal(r.o.address, 0xc6120001u);

    /* Stable: the same address again, asked of the policy again. */
    unsigned calls = policy_calls;
    answer(t, &q, &r);
    assert_int_equal(r.len, sizeof(want));
    assert_memory_equal(r.b, want, sizeof(want));
    assert_int_equal(policy_calls, calls + 1);

    /* A second name, the next address. */
    q_simple(&q, "api.example.com", PDK_DNS_TYPE_A);
    answer(t, &q, &r);
    assert_header(&r, FLAGS_AA_RD, 1, 1, 0, 0);
    assert_int_equal(r.o.address, 0xc6120002u);
    assert_memory_equal(r.b + r.len - 4, ((const uint8_t[]){198, 18, 0, 2}), 4);

    /* Back from the address, and from the name. */
    assert_string_equal(pdk_dns_table_find_name(t, 0xc6120001u), "www.example.com");
    assert_string_equal(pdk_dns_table_find_name(t, 0xc6120002u), "api.example.com");
    assert_null(pdk_dns_table_find_name(t, 0xc6120003u));
    assert_null(pdk_dns_table_find_name(t, 0xc6120000u));
    assert_null(pdk_dns_table_find_name(t, 0x7f000001u));
    uint32_t a = 0;
    assert_int_equal(pdk_dns_table_find_address(t, "api.example.com", &a), 0);
    assert_int_equal(a, 0xc6120002u);
    assert_int_equal(pdk_dns_table_count(t), 2);

    /* Without RD, none in the answer. */
    q_header(&q, 0xbeef, 0, 1, 0, 0, 0);
    q_question(&q, "www.example.com", PDK_DNS_TYPE_A, PDK_DNS_CLASS_IN);
    answer(t, &q, &r);
    assert_header(&r, 0x8400, 1, 1, 0, 0);
    assert_int_equal(r16(&r, 0), 0xbeef);
    assert_int_equal(r.o.address, 0xc6120001u);
    pdk_dns_table_free(t);
}

static void other_types_empty(void **state)
{
    pdk_dns_table *t = pdk_dns_table_new();
    static const unsigned types[] = {
        PDK_DNS_TYPE_AAAA,
        PDK_DNS_TYPE_MX,
        PDK_DNS_TYPE_TXT,
        PDK_DNS_TYPE_SRV,
        PDK_DNS_TYPE_SVCB,
        PDK_DNS_TYPE_HTTPS,
        PDK_DNS_TYPE_NS,
        PDK_DNS_TYPE_CNAME,
        PDK_DNS_TYPE_SOA,
        PDK_DNS_TYPE_PTR,
        PDK_DNS_TYPE_OPT,
        0,
        99,
        65535,
    };
    for (size_t i = 0; i < PDK_ARRAY_SIZE(types); i++) {
        struct query q;
        struct response r;
        q_simple(&q, "www.example.com", types[i]);
        answer(t, &q, &r);
        assert_int_equal(r.len, 12 + question_len("www.example.com"));
        assert_header(&r, FLAGS_AA_RD, 1, 0, 0, 0);
        assert_echo(&q, &r, question_len("www.example.com"));
        assert_int_equal(r.o.qtype, types[i]);
        assert_int_equal(r.o.rcode, PDK_DNS_RCODE_NOERROR);
        assert_false(r.o.blocked);
        assert_int_equal(r.o.address, 0);
    }
    /* Only A (and ANY) take an address. */
    assert_int_equal(pdk_dns_table_count(t), 0);
    pdk_dns_table_free(t);
}

static void any_axfr_and_classes(void **state)
{
    pdk_dns_table *t = pdk_dns_table_new();
    struct query q;
    struct response r;

    /* ANY: the A RRset (RFC 8482). */
    q_simple(&q, "example.com", PDK_DNS_TYPE_ANY);
    answer(t, &q, &r);
    assert_header(&r, FLAGS_AA_RD, 1, 1, 0, 0);
    assert_int_equal(r.o.address, 0xc6120001u);
    assert_int_equal(r16(&r, 12 + question_len("example.com") + 2), PDK_DNS_TYPE_A);

    q_simple(&q, "example.com", PDK_DNS_TYPE_AXFR);
    answer(t, &q, &r);
    assert_header(&r, 0x8105, 1, 0, 0, 0); /* REFUSED, not authoritative */
    q_simple(&q, "example.com", PDK_DNS_TYPE_IXFR);
    answer(t, &q, &r);
    assert_int_equal(r.o.rcode, PDK_DNS_RCODE_REFUSED);

    /* Class ANY is IN; CHAOS is refused; a blocked name is NXDOMAIN whatever the class. */
    q_header(&q, 1, 0x0100, 1, 0, 0, 0);
    q_question(&q, "example.com", PDK_DNS_TYPE_A, PDK_DNS_CLASS_ANY);
    answer(t, &q, &r);
    assert_header(&r, FLAGS_AA_RD, 1, 1, 0, 0);
    q_header(&q, 1, 0x0100, 1, 0, 0, 0);
    q_question(&q, "example.com", PDK_DNS_TYPE_TXT, 3);
    answer(t, &q, &r);
    assert_header(&r, 0x8105, 1, 0, 0, 0);
    assert_false(r.o.blocked);
    q_header(&q, 1, 0x0100, 1, 0, 0, 0);
    q_question(&q, "version.bind", PDK_DNS_TYPE_TXT, 3);
    answer(t, &q, &r);
    assert_header(&r, 0x8503, 1, 0, 0, 0);
    assert_true(r.o.blocked);
    assert_int_equal(r.o.qclass, 3);
    pdk_dns_table_free(t);
}

static void blocked_nxdomain(void **state)
{
    pdk_dns_table *t = pdk_dns_table_new();
    struct query q;
    struct response r;
    static const unsigned types[] = {PDK_DNS_TYPE_A, PDK_DNS_TYPE_AAAA, PDK_DNS_TYPE_TXT,
                                     PDK_DNS_TYPE_ANY, PDK_DNS_TYPE_HTTPS};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(types); i++) {
        unsigned calls = policy_calls;
        q_simple(&q, "evil.test", types[i]);
        answer(t, &q, &r);
        assert_int_equal(r.len, 12 + question_len("evil.test"));
        assert_header(&r, 0x8503, 1, 0, 0, 0); /* AA RD NXDOMAIN, no SOA */
        assert_echo(&q, &r, question_len("evil.test"));
        assert_true(r.o.blocked);
        assert_false(r.o.name_escaped);
        assert_string_equal(r.o.name, "evil.test");
        assert_int_equal(r.o.rcode, PDK_DNS_RCODE_NXDOMAIN);
        assert_int_equal(r.o.address, 0);
        assert_int_equal(policy_calls, calls + 1);
        assert_string_equal(policy_last, "evil.test");
    }
    /* notexample.com is not a subdomain of example.com. */
    q_simple(&q, "notexample.com", PDK_DNS_TYPE_A);
    answer(t, &q, &r);
    assert_true(r.o.blocked);
    /* Neither is the root. */
    q_simple(&q, "", PDK_DNS_TYPE_NS);
    answer(t, &q, &r);
    assert_true(r.o.blocked);
    assert_true(r.o.name_escaped);
    assert_string_equal(r.o.name, ".");
    assert_int_equal(r.o.rcode, PDK_DNS_RCODE_NXDOMAIN);
    assert_int_equal(pdk_dns_table_count(t), 0);

    /* No predicate: nothing is allowed. */
    q_simple(&q, "www.example.com", PDK_DNS_TYPE_A);
    r.len = pdk_dns_answer(t, NULL, NULL, PDK_DNS_UDP, q.b, q.len, r.b, sizeof(r.b), &r.o);
    assert_int_equal(r.o.rcode, PDK_DNS_RCODE_NXDOMAIN);
    assert_true(r.o.blocked);
    pdk_dns_table_free(t);
}

static void case_insensitive(void **state)
{
    pdk_dns_table *t = pdk_dns_table_new();
    struct query q;
    struct response r;
    q_simple(&q, "www.example.com", PDK_DNS_TYPE_A);
    answer(t, &q, &r);
    uint32_t first = r.o.address;
    q_simple(&q, "WWW.Example.COM", PDK_DNS_TYPE_A);
    answer(t, &q, &r);
    assert_string_equal(r.o.name, "www.example.com");
    assert_string_equal(policy_last, "www.example.com");
    assert_int_equal(r.o.address, first);
    /* The question is echoed as asked (0x20 randomisation). */
    assert_echo(&q, &r, question_len("WWW.Example.COM"));
    assert_memory_equal(r.b + 13, "WWW", 3);
    assert_int_equal(pdk_dns_table_count(t), 1);
    pdk_dns_table_free(t);
}

static void table_names(void **state)
{
    pdk_dns_table *t = pdk_dns_table_new();
    uint32_t a = 0, b = 0;
    assert_int_equal(pdk_dns_table_assign(t, "Example.COM.", &a), 0);
    assert_int_equal(a, PDK_DNS_POOL_FIRST);
    assert_int_equal(pdk_dns_table_assign(t, "example.com", &b), 0);
    assert_int_equal(a, b);
    assert_int_equal(pdk_dns_table_find_address(t, "EXAMPLE.com.", &b), 0);
    assert_int_equal(a, b);
    assert_string_equal(pdk_dns_table_find_name(t, a), "example.com");
    errno = 0;
    assert_int_equal(pdk_dns_table_find_address(t, "other.com", &b), -1);
    assert_int_equal(errno, ENOENT);

    char norm[PDK_DNS_NAME_MAX + 1];
    assert_true(pdk_dns_normalize_name("A-b_C.d9.", norm));
    assert_string_equal(norm, "a-b_c.d9");
    static const char *const bad[] = {
        "", ".", "..", "a..b", ".a", "a..", "a b", "a/b", "caf\xc3\xa9.fr", "a\\.b", "*.a",
    };
    for (size_t i = 0; i < PDK_ARRAY_SIZE(bad); i++) {
        if (pdk_dns_normalize_name(bad[i], norm))
            fail_msg("\"%s\" normalised to \"%s\"", bad[i], norm);
        assert_string_equal(norm, "");
        errno = 0;
        assert_int_equal(pdk_dns_table_assign(t, bad[i], &b), -1);
        assert_int_equal(errno, EINVAL);
        errno = 0;
        assert_int_equal(pdk_dns_table_find_address(t, bad[i], &b), -1);
        assert_int_equal(errno, EINVAL);
    }
    /* Labels up to 63, names up to 253 (one trailing dot besides). */
    char name[300];
    memset(name, 'a', 63);
    strcpy(name + 63, ".b");
    assert_true(pdk_dns_normalize_name(name, norm));
    memset(name, 'a', 64);
    strcpy(name + 64, ".b");
    assert_false(pdk_dns_normalize_name(name, norm));
    for (size_t i = 0; i < 253; i++)
        name[i] = i % 2 ? '.' : 'x';
    name[253] = '\0';
    assert_true(pdk_dns_normalize_name(name, norm));
    strcat(name, ".");
    assert_true(pdk_dns_normalize_name(name, norm));
    assert_int_equal(strlen(norm), 253);
    strcat(name, "x");
    assert_false(pdk_dns_normalize_name(name, norm));
    assert_int_equal(pdk_dns_table_count(t), 1);
    pdk_dns_table_free(t);
}

static void exfiltration_shaped(void **state)
{
    pdk_dns_table *t = pdk_dns_table_new();
    struct query q;
    struct response r;
    /* Three random 63-byte labels and a 51-byte one under evil.test: 255 wire bytes. */
    char name[300];
    size_t n = 0;
    unsigned seed = 7;
    static const size_t labels[] = {63, 63, 63, 51};
    for (size_t l = 0; l < PDK_ARRAY_SIZE(labels); l++) {
        for (size_t i = 0; i < labels[l]; i++) {
            seed = seed * 1103515245u + 12345u;
            name[n++] = "abcdefghijklmnopqrstuvwxyz234567"[(seed >> 16) % 32];
        }
        name[n++] = '.';
    }
    strcpy(name + n, "evil.test");
    assert_int_equal(strlen(name), 253);
    q_simple(&q, name, PDK_DNS_TYPE_TXT);
    assert_int_equal(q.len, 12 + 255 + 4);
    answer(t, &q, &r);
    assert_header(&r, 0x8503, 1, 0, 0, 0);
    assert_echo(&q, &r, 255 + 4);
    assert_true(r.o.blocked);
    assert_false(r.o.name_escaped);
    assert_string_equal(r.o.name, name);

    /* Binary labels (base256 exfiltration): never shown to the policy, rendered escaped,
     * bounded. */
    q_header(&q, 9, 0x0100, 1, 0, 0, 0);
    for (int l = 0; l < 4; l++) {
        int len = l < 3 ? 63 : 61; /* 255 wire bytes */
        q_u8(&q, (unsigned)len);
        for (int i = 0; i < len; i++)
            q_u8(&q, (unsigned)(l * 63 + i) & 0xff);
    }
    q_u8(&q, 0);
    q_u16(&q, PDK_DNS_TYPE_A);
    q_u16(&q, PDK_DNS_CLASS_IN);
    unsigned calls = policy_calls;
    answer(t, &q, &r);
    assert_int_equal(policy_calls, calls);
    assert_header(&r, 0x8503, 1, 0, 0, 0);
    assert_true(r.o.blocked);
    assert_true(r.o.name_escaped);
    assert_int_equal(strlen(r.o.name), PDK_DNS_NAME_MAX);
    assert_string_equal(r.o.name + PDK_DNS_NAME_MAX - 3, "...");
    assert_true(strncmp(r.o.name, "\\000\\001\\002", 12) == 0);
    for (const char *p = r.o.name; *p; p++)
        assert_true(*p > ' ' && *p < 127);

    /* A short one: every unclean byte escaped, letters folded. */
    q_header(&q, 9, 0x0100, 1, 0, 0, 0);
    q_bytes(&q,
            "\x05"
            "A.b c"
            "\x03"
            "com"
            "\x00",
            11);
    q_u16(&q, PDK_DNS_TYPE_A);
    q_u16(&q, PDK_DNS_CLASS_IN);
    answer(t, &q, &r);
    assert_true(r.o.blocked);
    assert_true(r.o.name_escaped);
    assert_string_equal(r.o.name, "a\\046b\\032c.com");
    assert_int_equal(pdk_dns_table_count(t), 0);
    pdk_dns_table_free(t);
}

static void formerr_qdcount(void **state)
{
    pdk_dns_table *t = pdk_dns_table_new();
    struct query q;
    struct response r;
    q_header(&q, 0x4242, 0x0100, 0, 0, 0, 0);
    answer(t, &q, &r);
    assert_int_equal(r.len, 12);
    assert_header(&r, 0x8101, 0, 0, 0, 0);
    assert_int_equal(r16(&r, 0), 0x4242);
    assert_false(r.o.has_question);
    assert_string_equal(r.o.name, "");

    q_header(&q, 0x4242, 0x0100, 2, 0, 0, 0);
    q_question(&q, "www.example.com", PDK_DNS_TYPE_A, PDK_DNS_CLASS_IN);
    q_question(&q, "evil.test", PDK_DNS_TYPE_A, PDK_DNS_CLASS_IN);
    unsigned calls = policy_calls;
    answer(t, &q, &r);
    assert_int_equal(r.len, 12);
    assert_header(&r, 0x8101, 0, 0, 0, 0);
    assert_int_equal(r.o.rcode, PDK_DNS_RCODE_FORMERR);
    assert_int_equal(policy_calls, calls);

    /* An answer or authority record in a query; trailing bytes. The question parsed, so it
     * is echoed (and reported). */
    q_header(&q, 1, 0x0100, 1, 1, 0, 0);
    q_question(&q, "www.example.com", PDK_DNS_TYPE_A, PDK_DNS_CLASS_IN);
    q_name(&q, "www.example.com");
    q_u16(&q, PDK_DNS_TYPE_A);
    q_u16(&q, PDK_DNS_CLASS_IN);
    q_u32(&q, 60);
    q_u16(&q, 4);
    q_u32(&q, 0x01020304);
    answer(t, &q, &r);
    assert_header(&r, 0x8101, 1, 0, 0, 0);
    assert_echo(&q, &r, question_len("www.example.com"));
    assert_string_equal(r.o.name, "www.example.com");
    q.b[7] = 0;
    q.b[9] = 1; /* the same record as authority */
    answer(t, &q, &r);
    assert_header(&r, 0x8101, 1, 0, 0, 0);

    q_simple(&q, "www.example.com", PDK_DNS_TYPE_A);
    q_u8(&q, 0);
    answer(t, &q, &r);
    assert_header(&r, 0x8101, 1, 0, 0, 0);
    assert_int_equal(pdk_dns_table_count(t), 0);
    pdk_dns_table_free(t);
}

static void notimp_and_responses(void **state)
{
    pdk_dns_table *t = pdk_dns_table_new();
    struct query q;
    struct response r;
    for (unsigned opcode = 1; opcode < 16; opcode++) {
        q_header(&q, 7, opcode << 11 | 0x0100, 1, 0, 0, 0);
        q_question(&q, "www.example.com", PDK_DNS_TYPE_A, PDK_DNS_CLASS_IN);
        answer(t, &q, &r);
        assert_int_equal(r.len, 12);
        assert_header(&r, 0x8000 | opcode << 11 | 0x0100 | PDK_DNS_RCODE_NOTIMP, 0, 0, 0, 0);
        assert_int_equal(r.o.rcode, PDK_DNS_RCODE_NOTIMP);
    }
    /* QR=1: a response is never answered, whatever it holds. */
    q_header(&q, 7, 0x8180, 1, 1, 0, 0);
    q_question(&q, "www.example.com", PDK_DNS_TYPE_A, PDK_DNS_CLASS_IN);
    answer(t, &q, &r);
    assert_int_equal(r.len, 0);
    assert_false(r.o.respond);
    assert_int_equal(r.b[0], 0xee); /* nothing written */
    /* Shorter than a header. */
    for (size_t len = 0; len < 12; len++) {
        q_simple(&q, "www.example.com", PDK_DNS_TYPE_A);
        q.len = len;
        answer(t, &q, &r);
        assert_int_equal(r.len, 0);
    }
    assert_int_equal(pdk_dns_table_count(t), 0);
    pdk_dns_table_free(t);
}

static void every_truncation(void **state)
{
    pdk_dns_table *t = pdk_dns_table_new();
    struct query q;
    struct response r;
    q_header(&q, 0x5555, 0x0100, 1, 0, 0, 1);
    q_question(&q, "www.example.com", PDK_DNS_TYPE_A, PDK_DNS_CLASS_IN);
    q_name(&q, "");
    q_u16(&q, PDK_DNS_TYPE_OPT);
    q_u16(&q, 1232);
    q_u32(&q, 0);
    q_u16(&q, 8);
    q_u16(&q, 10); /* COOKIE */
    q_u16(&q, 4);
    q_u32(&q, 0xdeadbeef);
    size_t full = q.len;
    for (size_t len = 0; len < full; len++) {
        q.len = len;
        answer(t, &q, &r);
        if (len < 12) {
            assert_int_equal(r.len, 0);
            continue;
        }
        assert_int_equal(r.o.rcode, PDK_DNS_RCODE_FORMERR);
        assert_int_equal(r16(&r, 0), 0x5555);
        assert_int_equal(r16(&r, 2) & 0x800f, 0x8001);
        assert_int_equal(r16(&r, 6), 0);
        assert_int_equal(r16(&r, 10), 0); /* the OPT was not whole: none back */
        assert_int_equal(r.o.address, 0);
    }
    q.len = full;
    answer(t, &q, &r);
    assert_header(&r, FLAGS_AA_RD, 1, 1, 0, 1);
    assert_int_equal(r.o.address, PDK_DNS_POOL_FIRST);
    pdk_dns_table_free(t);
}

static void compression_and_labels(void **state)
{
    pdk_dns_table *t = pdk_dns_table_new();
    struct query q;
    struct response r;
    /* A pointer to itself; forwards; backwards into the header; after a label; the
     * extended label types 0x40 and 0x80; a label of 64. */
    static const uint8_t names[][8] = {
        {0xc0, 0x0c}, {0xc0, 0x20},       {0xc0, 0x00}, {3, 'w', 'w', 'w', 0xc0, 0x0c},
        {0x40, 0x00}, {0x80, 0x00, 0x00}, {64, 'a'},
    };
    static const size_t lens[] = {2, 2, 2, 6, 2, 3, 2};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(names); i++) {
        q_header(&q, 3, 0x0100, 1, 0, 0, 0);
        q_bytes(&q, names[i], lens[i]);
        q_u16(&q, PDK_DNS_TYPE_A);
        q_u16(&q, PDK_DNS_CLASS_IN);
        for (int pad = 0; pad < 80; pad++)
            q_u8(&q, 0xc0); /* more pointer bytes to chase, if anything chased them */
        answer(t, &q, &r);
        assert_int_equal(r.len, 12);
        assert_header(&r, 0x8101, 0, 0, 0, 0);
        assert_false(r.o.has_question);
    }

    /* A label of 63 is fine; 255 wire bytes are, 257 are not (4 labels of 63). */
    char name[300];
    memset(name, 'a', 63);
    strcpy(name + 63, ".example.com");
    q_simple(&q, name, PDK_DNS_TYPE_A);
    answer(t, &q, &r);
    assert_header(&r, FLAGS_AA_RD, 1, 1, 0, 0);
    for (int l = 0; l < 4; l++) {
        memset(name + 64 * l, 'a', 63);
        name[64 * l + 63] = '.';
    }
    name[255] = '\0';
    q_simple(&q, name, PDK_DNS_TYPE_A);
    answer(t, &q, &r);
    assert_header(&r, 0x8101, 0, 0, 0, 0);

    /* Additional records may point back at the question; not forwards, not at themselves. */
    q_header(&q, 3, 0x0100, 1, 0, 0, 1);
    q_question(&q, "www.example.com", PDK_DNS_TYPE_A, PDK_DNS_CLASS_IN);
    size_t rec = q.len;
    q_u16(&q, 0xc00c);
    q_u16(&q, 250); /* TSIG-shaped: ignored */
    q_u16(&q, 255);
    q_u32(&q, 0);
    q_u16(&q, 0);
    answer(t, &q, &r);
    assert_header(&r, FLAGS_AA_RD, 1, 1, 0, 0);
    q.b[rec] = (uint8_t)(0xc0 | rec >> 8);
    q.b[rec + 1] = (uint8_t)rec;
    answer(t, &q, &r);
    assert_header(&r, 0x8101, 1, 0, 0, 0);
    q.b[rec + 1] = (uint8_t)(rec + 2);
    answer(t, &q, &r);
    assert_header(&r, 0x8101, 1, 0, 0, 0);
    pdk_dns_table_free(t);
}

static void edns(void **state)
{
    pdk_dns_table *t = pdk_dns_table_new();
    struct query q;
    struct response r;
    q_header(&q, 0x0a0b, 0x0100, 1, 0, 0, 1);
    q_question(&q, "example.com", PDK_DNS_TYPE_A, PDK_DNS_CLASS_IN);
    q_opt(&q, 4096, 0, 0x8000); /* DO */
    answer(t, &q, &r);
    static const uint8_t want[] = {
        0x0a, 0x0b, 0x85, 0x00, 0,    1,   0,   1,   0, 0,   0,   1, /* header */
        7,    'e',  'x',  'a',  'm',  'p', 'l', 'e', 3, 'c', 'o', 'm', 0,   0,  1, 0, 1, /* */
        0xc0, 0x0c, 0,    1,    0,    1,   0,   0,   0, 60,  0,   4,   198, 18, 0, 1, /* answer */
        0,    0,    41,   0x04, 0xd0, 0,   0,   0,   0, 0,   0, /* OPT: 1232, no DO, no options */
    };
    assert_int_equal(r.len, sizeof(want));
    assert_memory_equal(r.b, want, sizeof(want));
    assert_true(r.o.edns);

    /* Version 1: BADVERS, the upper bits in our OPT. */
    q_header(&q, 0x0a0b, 0x0100, 1, 0, 0, 1);
    q_question(&q, "example.com", PDK_DNS_TYPE_A, PDK_DNS_CLASS_IN);
    q_opt(&q, 4096, 1, 0);
    answer(t, &q, &r);
    assert_header(&r, 0x8100, 1, 0, 0, 1);
    assert_int_equal(r.o.rcode, PDK_DNS_RCODE_BADVERS);
    assert_memory_equal(r.b + r.len - 11, ((const uint8_t[]){0, 0, 41, 4, 0xd0, 1, 0, 0, 0, 0, 0}),
                        11);

    /* Two OPTs; an OPT not owned by the root; options that do not tile the data. */
    q_header(&q, 1, 0x0100, 1, 0, 0, 2);
    q_question(&q, "example.com", PDK_DNS_TYPE_A, PDK_DNS_CLASS_IN);
    q_opt(&q, 4096, 0, 0);
    q_opt(&q, 4096, 0, 0);
    answer(t, &q, &r);
    assert_header(&r, 0x8101, 1, 0, 0, 0);
    q_header(&q, 1, 0x0100, 1, 0, 0, 1);
    q_question(&q, "example.com", PDK_DNS_TYPE_A, PDK_DNS_CLASS_IN);
    q_u16(&q, 0xc00c);
    q_u16(&q, PDK_DNS_TYPE_OPT);
    q_u16(&q, 4096);
    q_u32(&q, 0);
    q_u16(&q, 0);
    answer(t, &q, &r);
    assert_header(&r, 0x8101, 1, 0, 0, 0);
    q_header(&q, 1, 0x0100, 1, 0, 0, 1);
    q_question(&q, "example.com", PDK_DNS_TYPE_A, PDK_DNS_CLASS_IN);
    q_u8(&q, 0);
    q_u16(&q, PDK_DNS_TYPE_OPT);
    q_u16(&q, 4096);
    q_u32(&q, 0);
    q_u16(&q, 6);
    q_u16(&q, 10);
    q_u16(&q, 8); /* says 8, has 2 */
    q_u16(&q, 0);
    answer(t, &q, &r);
    assert_header(&r, 0x8101, 1, 0, 0, 0);
    assert_false(r.o.edns);

    /* A FORMERR for another reason still carries our OPT. */
    q_header(&q, 1, 0x0100, 1, 1, 0, 1);
    q_question(&q, "example.com", PDK_DNS_TYPE_A, PDK_DNS_CLASS_IN);
    q_u16(&q, 0xc00c);
    q_u16(&q, PDK_DNS_TYPE_A);
    q_u16(&q, PDK_DNS_CLASS_IN);
    q_u32(&q, 0);
    q_u16(&q, 0);
    q_opt(&q, 512, 0, 0);
    answer(t, &q, &r);
    assert_header(&r, 0x8101, 1, 0, 0, 1);

    /* An advertised size below 512 means 512 (RFC 6891 6.2.5). */
    q_header(&q, 1, 0x0100, 1, 0, 0, 1);
    q_question(&q, "example.com", PDK_DNS_TYPE_A, PDK_DNS_CLASS_IN);
    q_opt(&q, 0, 0, 0);
    answer(t, &q, &r);
    assert_header(&r, FLAGS_AA_RD, 1, 1, 0, 1);
    assert_false(r.o.truncated);
    pdk_dns_table_free(t);
}

static void truncation(void **state)
{
    pdk_dns_table *t = pdk_dns_table_new();
    struct query q;
    struct response r;
    q_header(&q, 1, 0x0100, 1, 0, 0, 1);
    q_question(&q, "example.com", PDK_DNS_TYPE_A, PDK_DNS_CLASS_IN);
    q_opt(&q, 4096, 0, 0);
    size_t qlen = question_len("example.com");
    size_t full = 12 + qlen + 16 + 11;
    answer_cap(t, &q, full, PDK_DNS_UDP, &r);
    assert_int_equal(r.len, full);
    assert_false(r.o.truncated);
    /* One byte short: the answer goes, TC; then the OPT; then the question. */
    answer_cap(t, &q, full - 1, PDK_DNS_TCP, &r);
    assert_int_equal(r.len, 12 + qlen + 11);
    assert_header(&r, FLAGS_AA_RD | 0x0200, 1, 0, 0, 1);
    assert_true(r.o.truncated);
    assert_int_equal(r.o.address, 0);
    answer_cap(t, &q, 12 + qlen + 10, PDK_DNS_UDP, &r);
    assert_header(&r, FLAGS_AA_RD | 0x0200, 1, 0, 0, 0);
    answer_cap(t, &q, 12 + qlen - 1, PDK_DNS_UDP, &r);
    assert_int_equal(r.len, 12);
    assert_header(&r, FLAGS_AA_RD | 0x0200, 0, 0, 0, 0);
    answer_cap(t, &q, 11, PDK_DNS_UDP, &r);
    assert_int_equal(r.len, 0);
    assert_false(r.o.respond);
    assert_false(r.o.truncated);
    /* The address stays the one given first. */
    answer(t, &q, &r);
    assert_int_equal(r.o.address, PDK_DNS_POOL_FIRST);
    pdk_dns_table_free(t);
}

static void table_full(void **state)
{
    pdk_dns_table *t = pdk_dns_table_new_bounded(2);
    assert_int_equal(pdk_dns_table_capacity(t), 2);
    struct query q;
    struct response r;
    q_simple(&q, "a.example.com", PDK_DNS_TYPE_A);
    answer(t, &q, &r);
    assert_int_equal(r.o.address, 0xc6120001u);
    q_simple(&q, "b.example.com", PDK_DNS_TYPE_A);
    answer(t, &q, &r);
    assert_int_equal(r.o.address, 0xc6120002u);
    q_simple(&q, "c.example.com", PDK_DNS_TYPE_A);
    answer(t, &q, &r);
    assert_header(&r, 0x8102, 1, 0, 0, 0); /* SERVFAIL, not authoritative */
    assert_int_equal(r.o.rcode, PDK_DNS_RCODE_SERVFAIL);
    assert_false(r.o.blocked);
    assert_int_equal(r.o.address, 0);
    /* A name without an address can still be answered for other types. */
    q_simple(&q, "c.example.com", PDK_DNS_TYPE_AAAA);
    answer(t, &q, &r);
    assert_int_equal(r.o.rcode, PDK_DNS_RCODE_NOERROR);
    /* Known names keep working. */
    q_simple(&q, "A.example.com", PDK_DNS_TYPE_A);
    answer(t, &q, &r);
    assert_int_equal(r.o.address, 0xc6120001u);
    uint32_t a;
    errno = 0;
    assert_int_equal(pdk_dns_table_assign(t, "d.example.com", &a), -1);
    assert_int_equal(errno, ENOSPC);
    assert_int_equal(pdk_dns_table_count(t), 2);
    pdk_dns_table_free(t);

    t = pdk_dns_table_new_bounded(0); /* at least one */
    assert_int_equal(pdk_dns_table_capacity(t), 1);
    pdk_dns_table_free(t);
}

static void whole_pool(void **state)
{
    pdk_dns_table *t = pdk_dns_table_new_bounded(SIZE_MAX);
    assert_int_equal(pdk_dns_table_capacity(t), PDK_DNS_POOL_CAPACITY);
    char name[32];
    uint32_t a = 0;
    for (uint32_t i = 0; i < PDK_DNS_POOL_CAPACITY; i++) {
        snprintf(name, sizeof(name), "h%u.example.com", i);
        assert_int_equal(pdk_dns_table_assign(t, name, &a), 0);
        assert_int_equal(a, PDK_DNS_POOL_FIRST + i);
    }
    assert_int_equal(a, 0xc613fffeu); /* 198.19.255.254 */
    assert_int_equal(a, PDK_DNS_POOL_LAST);
    assert_int_equal(pdk_dns_table_assign(t, "one.more.example.com", &a), -1);
    assert_int_equal(errno, ENOSPC);
    assert_null(pdk_dns_table_find_name(t, 0xc613ffffu));
    assert_null(pdk_dns_table_find_name(t, 0xc6120000u));
    for (uint32_t i = 0; i < PDK_DNS_POOL_CAPACITY; i += 997) {
        snprintf(name, sizeof(name), "h%u.example.com", i);
        assert_string_equal(pdk_dns_table_find_name(t, PDK_DNS_POOL_FIRST + i), name);
        assert_int_equal(pdk_dns_table_find_address(t, name, &a), 0);
        assert_int_equal(a, PDK_DNS_POOL_FIRST + i);
    }
    pdk_dns_table_free(t);

    assert_false(pdk_dns_address_in_pool(0xc611ffffu));
    assert_true(pdk_dns_address_in_pool(0xc6120000u));
    assert_true(pdk_dns_address_in_pool(0xc613ffffu));
    assert_false(pdk_dns_address_in_pool(0xc6140000u));
    assert_false(pdk_dns_address_in_pool(0x7f000001u));
}

static void ptr_for_pool(void **state)
{
    pdk_dns_table *t = pdk_dns_table_new();
    struct query q;
    struct response r;
    for (int i = 0; i < 256; i++) {
        char name[32];
        snprintf(name, sizeof(name), "h%d.example.com", i);
        uint32_t a;
        assert_int_equal(pdk_dns_table_assign(t, name, &a), 0);
    }
    q_simple(&q, "1.1.18.198.in-addr.arpa", PDK_DNS_TYPE_PTR); /* 198.18.1.1: the 257th */
    uint32_t a;
    assert_int_equal(pdk_dns_table_assign(t, "www.example.com", &a), 0);
    assert_int_equal(a, 0xc6120101u);
    unsigned calls = policy_calls;
    answer(t, &q, &r);
    assert_int_equal(policy_calls, calls);
    size_t ql = question_len("1.1.18.198.in-addr.arpa");
    assert_header(&r, FLAGS_AA_RD, 1, 1, 0, 0);
    assert_echo(&q, &r, ql);
    static const uint8_t want[] = {
        0xc0, 0x0c, 0,   12,  0, 1,   0,   0,   0,   60,  0,   17, /* PTR IN 60, 17 bytes */
        3,    'w',  'w', 'w', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0,
    };
    assert_int_equal(r.len, 12 + ql + sizeof(want));
    assert_memory_equal(r.b + 12 + ql, want, sizeof(want));
    assert_false(r.o.blocked);

    /* Not handed out: NXDOMAIN, not a blocked name. */
    q_simple(&q, "9.9.19.198.in-addr.arpa", PDK_DNS_TYPE_PTR);
    answer(t, &q, &r);
    assert_header(&r, 0x8503, 1, 0, 0, 0);
    assert_false(r.o.blocked);
    /* Other types on a mapped reverse name: empty. */
    q_simple(&q, "1.1.18.198.in-addr.arpa", PDK_DNS_TYPE_A);
    answer(t, &q, &r);
    assert_header(&r, FLAGS_AA_RD, 1, 0, 0, 0);
    /* Outside the pool, or not canonical: an ordinary name, for the policy. */
    static const char *const others[] = {"1.0.0.127.in-addr.arpa", "01.1.18.198.in-addr.arpa",
                                         "1.18.198.in-addr.arpa", "1.1.1.18.198.in-addr.arpa",
                                         "256.1.18.198.in-addr.arpa"};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(others); i++) {
        calls = policy_calls;
        q_simple(&q, others[i], PDK_DNS_TYPE_PTR);
        answer(t, &q, &r);
        assert_int_equal(policy_calls, calls + 1);
        assert_true(r.o.blocked);
    }
    pdk_dns_table_free(t);
}

static void tcp_framing(void **state)
{
    const uint8_t *m = NULL;
    size_t mlen = 0, used = 0;
    static const uint8_t stream[] = {0, 3, 'a', 'b', 'c', 0, 1, 'd', 0, 2, 'e'};
    assert_int_equal(pdk_dns_tcp_deframe(stream, 0, &m, &mlen, &used), 0);
    assert_int_equal(pdk_dns_tcp_deframe(stream, 1, &m, &mlen, &used), 0);
    assert_int_equal(pdk_dns_tcp_deframe(stream, 4, &m, &mlen, &used), 0);
    assert_int_equal(pdk_dns_tcp_deframe(stream, sizeof(stream), &m, &mlen, &used), 1);
    assert_ptr_equal(m, stream + 2);
    assert_int_equal(mlen, 3);
    assert_int_equal(used, 5);
    assert_int_equal(pdk_dns_tcp_deframe(stream + 5, sizeof(stream) - 5, &m, &mlen, &used), 1);
    assert_int_equal(mlen, 1);
    assert_int_equal(m[0], 'd');
    assert_int_equal(pdk_dns_tcp_deframe(stream + 8, sizeof(stream) - 8, &m, &mlen, &used), 0);
    static const uint8_t zero[] = {0, 0, 1};
    assert_int_equal(pdk_dns_tcp_deframe(zero, sizeof(zero), &m, &mlen, &used), -1);

    /* A query over TCP, answered in place and framed. */
    pdk_dns_table *t = pdk_dns_table_new();
    struct query q;
    q_simple(&q, "www.example.com", PDK_DNS_TYPE_A);
    uint8_t in[600];
    size_t inlen = pdk_dns_tcp_frame(q.b, q.len, in, sizeof(in));
    assert_int_equal(inlen, q.len + 2);
    assert_int_equal(in[0] << 8 | in[1], q.len);
    assert_int_equal(pdk_dns_tcp_deframe(in, inlen, &m, &mlen, &used), 1);
    assert_int_equal(used, inlen);
    uint8_t out[PDK_DNS_RESPONSE_MAX + PDK_DNS_TCP_PREFIX];
    pdk_dns_outcome o;
    size_t n = pdk_dns_answer(t, allow_example, &policy_calls, PDK_DNS_TCP, m, mlen,
                              out + PDK_DNS_TCP_PREFIX, sizeof(out) - PDK_DNS_TCP_PREFIX, &o);
    assert_int_equal(n, q.len + 16);
    size_t framed = pdk_dns_tcp_frame(out + PDK_DNS_TCP_PREFIX, n, out, sizeof(out));
    assert_int_equal(framed, n + 2);
    assert_int_equal(out[0] << 8 | out[1], n);
    assert_int_equal(out[2] << 8 | out[3], 0x1234);
    assert_memory_equal(out + framed - 4, ((const uint8_t[]){198, 18, 0, 1}), 4);

    /* Does not fit; nothing to frame; more than a prefix can say. */
    assert_int_equal(pdk_dns_tcp_frame(q.b, q.len, in, q.len + 1), 0);
    assert_int_equal(pdk_dns_tcp_frame(q.b, 0, in, sizeof(in)), 0);
    assert_int_equal(pdk_dns_tcp_frame(q.b, 65536, in, SIZE_MAX), 0);
    assert_int_equal(pdk_dns_tcp_frame(q.b, q.len, in, 1), 0);
    pdk_dns_table_free(t);
}

static void names_for_audit(void **state)
{
    assert_string_equal(pdk_dns_rcode_name(PDK_DNS_RCODE_NXDOMAIN), "NXDOMAIN");
    assert_string_equal(pdk_dns_rcode_name(PDK_DNS_RCODE_BADVERS), "BADVERS");
    assert_null(pdk_dns_rcode_name(11));
    assert_string_equal(pdk_dns_type_name(PDK_DNS_TYPE_HTTPS), "HTTPS");
    assert_string_equal(pdk_dns_type_name(PDK_DNS_TYPE_AAAA), "AAAA");
    assert_null(pdk_dns_type_name(99));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_for_allowed_name),
        cmocka_unit_test(other_types_empty),
        cmocka_unit_test(any_axfr_and_classes),
        cmocka_unit_test(blocked_nxdomain),
        cmocka_unit_test(case_insensitive),
        cmocka_unit_test(table_names),
        cmocka_unit_test(exfiltration_shaped),
        cmocka_unit_test(formerr_qdcount),
        cmocka_unit_test(notimp_and_responses),
        cmocka_unit_test(every_truncation),
        cmocka_unit_test(compression_and_labels),
        cmocka_unit_test(edns),
        cmocka_unit_test(truncation),
        cmocka_unit_test(table_full),
        cmocka_unit_test(whole_pool),
        cmocka_unit_test(ptr_for_pool),
        cmocka_unit_test(tcp_framing),
        cmocka_unit_test(names_for_audit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
