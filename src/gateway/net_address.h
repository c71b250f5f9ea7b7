/* net_address.h: IP literals in every notation, and which addresses an upstream may not be.
 *
 * The egress gateway refuses upstreams that reach into the machine or its networks
 * (loopback, private, link-local, CGNAT, multicast, cloud metadata...) unless a policy rule
 * names that exact host. Two places need this module:
 *
 *   - the host a client wrote (URL, Host header, CONNECT target): it may be an IP literal in
 *     a notation no policy author thinks of ("0x7f.1", "2130706433", "[::ffff:7f00:1]").
 *     pdk_ip_parse_host() turns every notation that curl, browsers, node or glibc accept
 *     into one pdk_ip, so that the policy compares canonical forms
 *     (pdk_ip_format()) and never mistakes a literal for a name;
 *   - the address actually connected to (pdk_ip_from_sockaddr()), after DNS: a name that
 *     resolves to 127.0.0.1 (DNS rebinding) is caught there by pdk_ip_classify().
 *
 * Everything here is a pure function on caller memory: no allocation, no I/O, no locale.
 */
#ifndef PADDOCK_NET_ADDRESS_H
#define PADDOCK_NET_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* An IPv4 or IPv6 address. v4 in bytes[0..3] with family AF_INET. Addresses made by this
 * module have the unused bytes zero; pdk_ip_equal() does not rely on it. */
typedef struct pdk_ip {
    int family; /* AF_INET or AF_INET6 */
    uint8_t bytes[16];
} pdk_ip;

/* Buffer size that holds any pdk_ip_format() text with its NUL (INET6_ADDRSTRLEN). */
#define PDK_IP_TEXT_MAX 46
/* Buffer size that holds any pdk_ip_describe() sentence with its NUL. */
#define PDK_IP_DESCRIBE_MAX 192

/* ---- Parsing ---- */

typedef enum pdk_host_kind {
    PDK_HOST_INVALID, /* neither: numeric but out of range, bad IPv6, forbidden characters */
    PDK_HOST_ADDRESS, /* an IP literal; *out holds it */
    PDK_HOST_NAME,    /* a name, to be resolved (or matched against the policy) */
} pdk_host_kind;

/* What host (len bytes, no NUL needed) is, filling *out (when not NULL) for
 * PDK_HOST_ADDRESS, zeroed otherwise. host is a bare host: no scheme, userinfo, port or path
 * ("[::1]:443" is invalid: split the port off first). The rules are the WHATWG URL Standard's host
 * parser (https://url.spec.whatwg.org/#host-parsing), which is what browsers, node and curl follow:
 *
 *   IPv6: starts with '[' (then must end with ']') or contains ':'. RFC 4291 text: up to 8
 *     groups of 1-4 hex digits, one "::", a trailing dotted IPv4 (::ffff:127.0.0.1, strict
 *     decimal, no leading zeros). A zone id ("fe80::1%eth0", "%25eth0") is invalid: it names
 *     an interface of the gateway's machine, not an upstream.
 *   IPv4: when the last label (after one optional trailing dot) is all decimal digits or
 *     0x/0X plus hex digits, the host is an IPv4 literal or invalid, never a name
 *     ("1.2.3.999", "example.123" are invalid; "1.2.3.example" is a name). 1 to 4 parts as
 *     inet_aton takes them (127.1, 127.0.1, 2130706433); each part decimal, hex (0x7f, 0X7F,
 *     "0x" alone is 0) or octal (0177); one trailing dot allowed ("127.0.0.1."). A part out
 *     of range (999.1.1.1, 0x100000000, 1.16777216) or a fifth part makes it invalid.
 *   Names: ASCII letters, digits and the characters WHATWG allows in a domain. Stricter
 *     than WHATWG, on purpose (fail closed): non-ASCII bytes are invalid (WHATWG maps
 *     fullwidth digits and dots to ASCII through IDNA, which is not done here: pass A-labels,
 *     "xn--..."), '%' is invalid (no percent-decoding: "%31%32%37.0.0.1" is refused, not
 *     decoded), and so are empty labels ("a..b", ".a"), labels over 63 and names over 253
 *     characters (plus one trailing dot): no DNS name looks like that.
 */
pdk_host_kind pdk_ip_parse_host_n(const char *host, size_t len, pdk_ip *out);
/* The same for a NUL-terminated host. */
pdk_host_kind pdk_ip_parse_host(const char *host, pdk_ip *out);
/* "invalid", "address", "name". */
const char *pdk_host_kind_name(pdk_host_kind kind);

/* ---- Text ---- */

/* The canonical text of ip into buf (size bytes, NUL-terminated when size > 0), as
 * inet_ntop writes it: dotted quad for IPv4; for IPv6 RFC 5952 (lower case, no leading
 * zeros, the longest run of two or more zero groups as "::", the first on a tie), with the
 * dotted form for IPv4-mapped addresses (::ffff:127.0.0.1). Unlike glibc, IPv4-compatible
 * addresses (::a.b.c.d, deprecated) are written in hex, as musl and RFC 5952 do. A family
 * other than AF_INET/AF_INET6 gives "". Returns the length of the full text (snprintf-like:
 * >= size means it was cut); PDK_IP_TEXT_MAX always suffices. The text re-parses with
 * pdk_ip_parse_host() to the same address. */
size_t pdk_ip_format(const pdk_ip *ip, char *buf, size_t size);

/* ---- Sockets ---- */

/* The address (and, when port != NULL, the port in host order) of a sockaddr_in or
 * sockaddr_in6 of len bytes. false (and *out zeroed) for another family or a short len.
 * sin6_scope_id and sin6_flowinfo are dropped; an IPv4-mapped IPv6 address stays IPv6
 * (pdk_ip_unmap() turns it into IPv4). */
bool pdk_ip_from_sockaddr(const struct sockaddr *sa, socklen_t len, pdk_ip *out, uint16_t *port);
/* Fill *out (zeroed first) with ip and port (host order) as a sockaddr_in or sockaddr_in6,
 * returning its length for connect(); 0 when ip's family is neither. */
socklen_t pdk_ip_to_sockaddr(const pdk_ip *ip, uint16_t port, struct sockaddr_storage *out);

/* ---- Comparing ---- */

/* Same family and same address bytes (4 for IPv4, 16 for IPv6). ::ffff:127.0.0.1 and
 * 127.0.0.1 differ: unmap both first to compare them as one host. */
bool pdk_ip_equal(const pdk_ip *a, const pdk_ip *b);
/* Turn an IPv4-mapped IPv6 address (::ffff:a.b.c.d, what a dual-stack socket reports for
 * an IPv4 peer) into the IPv4 address; anything else is left as it is. */
void pdk_ip_unmap(pdk_ip *ip);

/* ---- Classification ---- */

typedef enum pdk_ip_class {
    PDK_IP_PUBLIC,      /* none of the below: a globally routed unicast address */
    PDK_IP_UNSPECIFIED, /* 0.0.0.0/8, ::  (connect() to 0.0.0.0 reaches this host) */
    PDK_IP_LOOPBACK,    /* 127.0.0.0/8, ::1 */
    PDK_IP_PRIVATE,     /* 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10 (site-local) */
    PDK_IP_LINK_LOCAL,  /* 169.254/16, fe80::/10 */
    PDK_IP_SHARED,      /* 100.64/10: carrier-grade NAT (RFC 6598) */
    PDK_IP_MULTICAST,   /* 224/4, ff00::/8 */
    PDK_IP_BROADCAST,   /* 255.255.255.255 */
    PDK_IP_RESERVED,    /* documentation, benchmarking, discard, future use, unallocated */
    PDK_IP_METADATA,    /* cloud instance metadata: 169.254.169.254, fd00:ec2::254,
                         * 100.100.100.200; wins over link-local, private, shared */
} pdk_ip_class;

/* How an IPv6 address carries an IPv4 address that the packets end up at. */
typedef enum pdk_ip_embedding {
    PDK_IP_EMBED_NONE,
    PDK_IP_EMBED_MAPPED,     /* ::ffff:a.b.c.d (RFC 4291) */
    PDK_IP_EMBED_COMPATIBLE, /* ::a.b.c.d, other than :: and ::1 (RFC 4291, deprecated) */
    PDK_IP_EMBED_NAT64,      /* 64:ff9b::/96 and 64:ff9b:1::/48, last 32 bits (RFC 6052,
                              * RFC 8215) */
    PDK_IP_EMBED_6TO4,       /* 2002:AABB:CCDD::/48 (RFC 3056) */
    PDK_IP_EMBED_TEREDO,     /* 2001::/32, client = NOT of the last 32 bits (RFC 4380) */
} pdk_ip_embedding;

/* The IPv4 address that ip (IPv6) embeds, into *v4 when v4 != NULL; PDK_IP_EMBED_NONE for
 * IPv4 and for IPv6 addresses that embed none. */
pdk_ip_embedding pdk_ip_embedded_v4(const pdk_ip *ip, pdk_ip *v4);
/* "IPv4-mapped", "IPv4-compatible", "NAT64", "6to4", "Teredo"; "none". */
const char *pdk_ip_embedding_name(pdk_ip_embedding embedding);

/* The class of ip. Total: every pdk_ip has one; a family other than AF_INET/AF_INET6 is
 * PDK_IP_RESERVED. IPv6 addresses that embed IPv4 (pdk_ip_embedded_v4()) take the class of
 * the embedded address, so 64:ff9b::a9fe:a9fe is metadata and ::ffff:8.8.8.8 public. IPv6
 * outside 2000::/3 that no rule names (unallocated space) is reserved: fail closed. */
pdk_ip_class pdk_ip_classify(const pdk_ip *ip);
/* A short token for logs and JSON: "public", "unspecified", "loopback", "private",
 * "link-local", "shared", "multicast", "broadcast", "reserved", "metadata". */
const char *pdk_ip_class_name(pdk_ip_class cls);
/* Whether an upstream of this class is allowed when no policy rule names the host: only
 * PDK_IP_PUBLIC is. */
bool pdk_ip_class_allowed_by_default(pdk_ip_class cls);

/* One line saying what ip is, for refusals and the audit log, into buf like
 * pdk_ip_format() (returns the full length; PDK_IP_DESCRIBE_MAX suffices):
 *   "169.254.169.254 is a cloud metadata address"
 *   "::ffff:127.0.0.1 is a loopback address (IPv4-mapped 127.0.0.1)"
 *   "8.8.8.8 is a public address" */
size_t pdk_ip_describe(const pdk_ip *ip, char *buf, size_t size);

#endif
