/* dns_stub.h: the sandbox's DNS answers: from the policy alone, never forwarded.
 *
 * The sandbox's network namespace has loopback only. Programs that ignore the proxy
 * variables are captured transparently: the supervisor serves a DNS stub inside the netns
 * whose answers come from this module. A name the policy could allow gets an address from
 * 198.18.0.0/15 (RFC 2544's benchmarking block: never a real destination) mapped to that
 * name; a connect to that address lands on the gateway, which gets the name back from the
 * same table. Every other name gets NXDOMAIN and is reported as blocked, for the audit: a
 * query is never forwarded anywhere, so DNS cannot leak (nor carry data out in long random
 * labels: such queries end here, recorded).
 *
 * Two parts, both free of I/O:
 *   - pdk_dns_table: the name <-> address map of one session;
 *   - pdk_dns_answer(): one query message (RFC 1035 wire format) in, one response out,
 *     written to the caller's buffer, plus an outcome for the audit.
 * The server (sockets, the event loop) is the supervisor's; for DNS over TCP it uses
 * pdk_dns_tcp_deframe() and pdk_dns_tcp_frame() below. Nothing here is thread-safe: one
 * table belongs to one event loop.
 *
 * Names. A "clean" name is a hostname in normal form: labels of a-z 0-9 '-' '_' (upper case
 * letters are folded to lower case), 1..63 bytes each, 253 characters at most, no trailing
 * dot, not the root. '_' is accepted because real names carry it (_dmarc, SRV owners, some
 * CDN hosts); the policy decides whether such a name is allowed. Any other byte (legal in
 * DNS, never in a hostname) makes the name unclean: it is answered NXDOMAIN and reported
 * blocked without asking the policy, and the outcome holds an escaped rendering instead.
 *
 * Addresses are IPv4 in host byte order (198.18.0.1 is 0xc6120001): for a socket address,
 * ntohl(sin.sin_addr.s_addr).
 */
#ifndef PADDOCK_DNS_STUB_H
#define PADDOCK_DNS_STUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The pool, 198.18.0.0/15. Its first (198.18.0.0) and last (198.19.255.255) addresses are
 * never handed out: they look like a network and a broadcast address to software that
 * guesses a /15 or /16 netmask. Everything in between is, including x.y.z.0 and x.y.z.255,
 * which are ordinary host addresses in a /15. */
#define PDK_DNS_POOL_BASE     0xc6120000u /* 198.18.0.0 */
#define PDK_DNS_POOL_PREFIX   15
#define PDK_DNS_POOL_CAPACITY 131070u                  /* 2^17 - 2 */
#define PDK_DNS_POOL_FIRST    (PDK_DNS_POOL_BASE + 1u) /* 198.18.0.1: the first handed out */
#define PDK_DNS_POOL_LAST     (PDK_DNS_POOL_BASE + PDK_DNS_POOL_CAPACITY) /* 198.19.255.254 */

/* Longest clean name, in characters (a 255-byte wire name less its first length byte and
 * the root label). Name buffers here are PDK_DNS_NAME_MAX + 1 bytes. */
#define PDK_DNS_NAME_MAX 253

/* TTL of every positive answer. The mapping never changes during a session, so this only
 * bounds how long a cache outlives the session's table. Negative answers carry no SOA and
 * are not cached at all (RFC 2308): a name the policy starts allowing works at once. */
#define PDK_DNS_TTL 60

/* The UDP payload size this stub advertises in its EDNS OPT record (the DNS flag day 2020
 * value). Our answers are never near it. */
#define PDK_DNS_EDNS_UDP_SIZE 1232

/* An output buffer of this size always holds the whole response: header, the question (at
 * most 259 bytes), one answer (a PTR: at most 267) and an OPT record. Smaller buffers work;
 * a response that does not fit is truncated (TC) or, below 12 bytes, not given. */
#define PDK_DNS_RESPONSE_MAX 560

/* Record types and response codes the stub uses or reports. */
enum {
    PDK_DNS_TYPE_A = 1,
    PDK_DNS_TYPE_NS = 2,
    PDK_DNS_TYPE_CNAME = 5,
    PDK_DNS_TYPE_SOA = 6,
    PDK_DNS_TYPE_PTR = 12,
    PDK_DNS_TYPE_MX = 15,
    PDK_DNS_TYPE_TXT = 16,
    PDK_DNS_TYPE_AAAA = 28,
    PDK_DNS_TYPE_SRV = 33,
    PDK_DNS_TYPE_OPT = 41,
    PDK_DNS_TYPE_SVCB = 64,
    PDK_DNS_TYPE_HTTPS = 65,
    PDK_DNS_TYPE_IXFR = 251,
    PDK_DNS_TYPE_AXFR = 252,
    PDK_DNS_TYPE_ANY = 255,
};
enum {
    PDK_DNS_CLASS_IN = 1,
    PDK_DNS_CLASS_ANY = 255,
};
enum {
    PDK_DNS_RCODE_NOERROR = 0,
    PDK_DNS_RCODE_FORMERR = 1,
    PDK_DNS_RCODE_SERVFAIL = 2,
    PDK_DNS_RCODE_NXDOMAIN = 3,
    PDK_DNS_RCODE_NOTIMP = 4,
    PDK_DNS_RCODE_REFUSED = 5,
    PDK_DNS_RCODE_BADVERS = 16, /* extended (EDNS): carried in the OPT record */
};

/* ---- The name <-> address table ------------------------------------------------------- */

/* One session's map. Names get addresses in order (198.18.0.1, .0.2, ...) at their first
 * pdk_dns_table_assign() and keep them for the table's life; an address is never reused,
 * and a full table refuses new names (the stub answers SERVFAIL) rather than remap an
 * address a process may still hold: a stale connect would reach a different name.
 * Lookups are O(1) on average both ways (a hash table keyed with a random SipHash key, so
 * that names chosen by the sandbox cannot be made to collide; an array by address). */
typedef struct pdk_dns_table pdk_dns_table;

/* A table for the whole pool. Never NULL (allocation failure aborts). */
pdk_dns_table *pdk_dns_table_new(void);
/* A table of at most capacity names (clamped to 1..PDK_DNS_POOL_CAPACITY): for tests, or to
 * bound more tightly what a session may make the supervisor remember. */
pdk_dns_table *pdk_dns_table_new_bounded(size_t capacity);
/* NULL-safe. */
void pdk_dns_table_free(pdk_dns_table *table);

/* Names mapped so far, and the most the table will hold. */
size_t pdk_dns_table_count(const pdk_dns_table *table);
size_t pdk_dns_table_capacity(const pdk_dns_table *table);

/* The address of name, given one on first use. name is normalised first (case folded, one
 * trailing dot dropped). Returns 0 and sets *address, or -1 with errno: EINVAL when name is
 * not a clean name, ENOSPC when it is new and the table is full. */
int pdk_dns_table_assign(pdk_dns_table *table, const char *name, uint32_t *address);
/* The address of name without assigning one: 0, or -1 with errno EINVAL (not a clean name)
 * or ENOENT (not mapped). */
int pdk_dns_table_find_address(const pdk_dns_table *table, const char *name, uint32_t *address);
/* The normalised name mapped to address (host byte order), or NULL when the address is not
 * one the table handed out. The string lives as long as the table. This is the gateway's
 * lookup for a captured connection. */
const char *pdk_dns_table_find_name(const pdk_dns_table *table, uint32_t address);

/* True when address lies in 198.18.0.0/15 (handed out or not): a connect to it is meant
 * for the gateway. */
bool pdk_dns_address_in_pool(uint32_t address);

/* Write the normal form of name (ASCII case folded, one trailing dot dropped) to out.
 * Returns false, with out set to "", when name is not a clean name. */
bool pdk_dns_normalize_name(const char *name, char out[PDK_DNS_NAME_MAX + 1]);

/* ---- Answering a query ---------------------------------------------------------------- */

/* The policy, asked once per query with a clean, normalised name: could some rule allow a
 * connection to it (any port, any method)? It must not block: it runs on the event loop.
 * A NULL predicate allows nothing. */
typedef bool (*pdk_dns_could_allow_fn)(void *arg, const char *name);

enum pdk_dns_transport {
    PDK_DNS_UDP, /* the response is bounded by 512 bytes, or the client's EDNS size */
    PDK_DNS_TCP, /* bounded by the output buffer only (the caller frames it) */
};

/* What happened, for the audit. */
typedef struct pdk_dns_outcome {
    bool respond;      /* a response was written (the return value is its length) */
    bool has_question; /* the question parsed: name, qtype and qclass are set */
    bool name_escaped; /* name is not clean: the field holds an escaped rendering */
    bool blocked;      /* NXDOMAIN because no rule could allow the name (or it is unclean) */
    bool truncated;    /* TC was set: the response did not fit */
    bool edns;         /* the query carried an OPT record (and so does the response) */
    uint16_t id;
    uint16_t qtype;
    uint16_t qclass;
    uint16_t rcode;   /* PDK_DNS_RCODE_*, extended codes included */
    uint32_t address; /* the A answer's address, 0 when there is none */
    /* The queried name: normalised when clean; otherwise lower-cased with every byte outside
     * a-z 0-9 '-' '_' written \DDD (a '.' inside a label too), "." for the root, and cut to
     * PDK_DNS_NAME_MAX characters ending in "..." when longer. Printable ASCII either way,
     * safe to log. "" when there is no question. */
    char name[PDK_DNS_NAME_MAX + 1];
} pdk_dns_outcome;

/* Answer one query message. The response goes to out (at most out_cap bytes; see
 * PDK_DNS_RESPONSE_MAX) and its length is returned; 0 means send nothing: the message is
 * shorter than a header, or it is a response (QR=1; answering those could loop two
 * servers), or out_cap < 12. outcome (may be NULL) is filled in either way.
 *
 * The answer, always with the query's ID and RD bit, RA=0 (nothing is recursed to), AA=1
 * on NOERROR and NXDOMAIN (this is the only authority the sandbox has; and Go's resolver,
 * like libresolv by its account, golang.org/issue/15434, takes an empty NOERROR with
 * neither AA nor RA for a lame referral and fails the lookup), the opcode copied, and the
 * question echoed byte for byte (clients match it, 0x20 case randomisation included):
 *   - opcode other than QUERY: NOTIMP; QDCOUNT != 1, an answer or authority record, a
 *     malformed question or additional record, a compressed question name (real clients
 *     never compress it; refusing needs no pointer following at all), trailing bytes:
 *     FORMERR. The question is echoed when it parsed.
 *   - EDNS: an OPT record is answered with ours (PDK_DNS_EDNS_UDP_SIZE, no options, DO
 *     clear); a version other than 0 gets BADVERS; the client's payload size (at least
 *     512) bounds a UDP response.
 *   - a PTR query for an address of the pool (d.c.{18,19}.198.in-addr.arpa): the mapped
 *     name, or NXDOMAIN when not handed out (not "blocked": no policy question).
 *   - a name that is unclean, or for which could_allow() says false: NXDOMAIN, blocked,
 *     with empty answer and authority sections (no SOA), whatever the type and class.
 *   - an allowed name, class IN (or ANY): A and ANY (RFC 8482: one RRset) get one A record
 *     with the table's address (SERVFAIL when the table is full); AXFR and IXFR get
 *     REFUSED; every other type (AAAA: there is no IPv6 path out; MX, TXT, SRV, HTTPS...)
 *     gets NOERROR with no answer. Another class: REFUSED.
 * A response that does not fit the bound keeps the header, the question and the OPT record
 * if they fit, drops the answer and sets TC.
 */
size_t pdk_dns_answer(pdk_dns_table *table, pdk_dns_could_allow_fn could_allow, void *arg,
                      enum pdk_dns_transport transport, const uint8_t *query, size_t query_len,
                      uint8_t *out, size_t out_cap, pdk_dns_outcome *outcome);

/* "NOERROR", "NXDOMAIN", ... for the audit; NULL for a code without a name here. */
const char *pdk_dns_rcode_name(unsigned rcode);
/* "A", "AAAA", "HTTPS", ...; NULL for a type without a name here. */
const char *pdk_dns_type_name(unsigned type);

/* ---- DNS over TCP (RFC 1035 4.2.2, RFC 7766) ------------------------------------------ */

/* Every message on a TCP connection is preceded by its length, 2 bytes big-endian. */
#define PDK_DNS_TCP_PREFIX 2

/* Find the first message of a TCP stream buffer. Returns 1 with *message and *message_len
 * set (pointing into buf) and *consumed the bytes to drop from buf afterwards; 0 when buf
 * does not hold a whole message yet (keep reading); -1 on a zero length prefix, which no
 * client sends: close the connection. */
int pdk_dns_tcp_deframe(const uint8_t *buf, size_t len, const uint8_t **message,
                        size_t *message_len, size_t *consumed);

/* Prefix a message with its length, in out: returns PDK_DNS_TCP_PREFIX + message_len, or
 * 0 when it does not fit out_cap or message_len is not in 1..65535. message may be
 * out + PDK_DNS_TCP_PREFIX: answer there, then frame in place:
 *     n = pdk_dns_answer(..., out + 2, sizeof(out) - 2, &o);
 *     if (n) n = pdk_dns_tcp_frame(out + 2, n, out, sizeof(out));
 */
size_t pdk_dns_tcp_frame(const uint8_t *message, size_t message_len, uint8_t *out, size_t out_cap);

#endif
