/* net_address.c: IP literals in every notation, and the classes of addresses (see
 * net_address.h).
 *
 * The host parser follows the WHATWG URL Standard (https://url.spec.whatwg.org/), section
 * 3.5 "Host parsing": the host parser, "ends in a number checker", "IPv4 parser", "IPv4
 * number parser" and "IPv6 parser" are transcribed step by step below, with the step
 * numbers of the standard in the comments, because the point is to agree with browsers,
 * node and curl on what is an address, not to be tidier than them. Where this module is
 * stricter (names), the header says so.
 *
 * Nothing here depends on the locale: <ctype.h> is not used, bytes are compared as ASCII.
 */
#include "net_address.h"

#include "util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- Character classes (ASCII only, locale-independent) ---- */

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* WHATWG "forbidden domain code point" (a forbidden host code point, a C0 control, '%' or
 * DEL), plus every non-ASCII byte: IDNA mapping is not done here (net_address.h). Space is
 * a forbidden host code point. */
static bool is_forbidden_domain_byte(unsigned char c)
{
    if (c <= 0x20 || c >= 0x7f)
        return true;
    return strchr("#%/:<>?@[\\]^|", c) != NULL;
}

/* ---- IPv4 (WHATWG "IPv4 parser") ---- */

/* Any part value above 2^32 - 1 is out of range whatever the part; the number parser
 * saturates there so that "0x00000000000000000001" (leading zeros are fine) and a hundred
 * digits (out of range, not a crash) both come out right. */
#define V4_TOO_BIG ((uint64_t)1 << 32)

/* WHATWG "IPv4 number parser". false is failure (not a number at all); a number too large
 * for any part is V4_TOO_BIG. The standard's validation errors (hex, octal) are not
 * failures and are not reported: the caller only needs the value. */
static bool parse_v4_number(const char *s, size_t len, uint64_t *value)
{
    /* 1. If input is the empty string, then return failure. */
    if (len == 0)
        return false;
    unsigned radix = 10;
    if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        /* 4. "0x" or "0X": remove them, R = 16. */
        s += 2;
        len -= 2;
        radix = 16;
    } else if (len >= 2 && s[0] == '0') {
        /* 5. A leading 0 of two or more code points: remove it, R = 8. */
        s++;
        len--;
        radix = 8;
    }
    /* 6. If input is the empty string, then return (0, true): "0x" alone is 0. */
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        /* 7. A code point that is not a radix-R digit: failure ("08", "0xg"). */
        int d = pdk_hex_value((unsigned char)s[i]);
        if (d < 0 || (unsigned)d >= radix)
            return false;
        /* 8. The mathematical value, saturated (v <= 2^32 here, so no overflow). */
        v = v * radix + (unsigned)d;
        if (v > V4_TOO_BIG)
            v = V4_TOO_BIG;
    }
    *value = v;
    return true;
}

/* WHATWG "ends in a number checker": whether the host parser hands s to the IPv4 parser.
 * When it does, s is an IPv4 literal or invalid, never a name. */
static bool ends_in_number(const char *s, size_t len)
{
    /* 1-2. Split on '.'; if the last part is empty, drop it (unless it is the only one). */
    if (len == 0)
        return false;
    if (s[len - 1] == '.')
        len--;
    /* 3. The last part. */
    size_t start = len;
    while (start > 0 && s[start - 1] != '.')
        start--;
    const char *last = s + start;
    size_t last_len = len - start;
    /* 4. Non-empty and only ASCII digits. */
    if (last_len > 0) {
        bool digits = true;
        for (size_t i = 0; i < last_len && digits; i++)
            digits = is_digit((unsigned char)last[i]);
        if (digits)
            return true;
    }
    /* 5. Parses as an IPv4 number: "0x" plus hex digits. */
    uint64_t ignored;
    return parse_v4_number(last, last_len, &ignored);
}

/* WHATWG "IPv4 parser". false is failure. */
static bool parse_v4(const char *s, size_t len, uint8_t out[4])
{
    /* 1-2. Split on '.'; a last empty part is dropped when there are others ("1.2.3.4."). */
    if (len > 0 && s[len - 1] == '.')
        len--;
    uint64_t numbers[4];
    size_t count = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '.')
            continue;
        /* 3. More than 4 parts: failure. */
        if (count == 4)
            return false;
        /* 5. Each part through the IPv4 number parser; a failure fails the whole
         * ("1..2", "1.x"). */
        if (!parse_v4_number(s + start, i - start, &numbers[count]))
            return false;
        count++;
        start = i + 1;
    }
    /* 7. Any but the last part above 255: failure. */
    for (size_t i = 0; i + 1 < count; i++)
        if (numbers[i] > 255)
            return false;
    /* 8. The last part fills the remaining bytes: below 256^(5 - count). */
    uint64_t last = numbers[count - 1];
    if (last >= (uint64_t)1 << (8 * (5 - count)))
        return false;
    /* 9-12. ipv4 = last + sum of numbers[i] * 256^(3 - i). */
    uint32_t ipv4 = (uint32_t)last;
    for (size_t i = 0; i + 1 < count; i++)
        ipv4 += (uint32_t)numbers[i] << (8 * (3 - i));
    out[0] = (uint8_t)(ipv4 >> 24);
    out[1] = (uint8_t)(ipv4 >> 16);
    out[2] = (uint8_t)(ipv4 >> 8);
    out[3] = (uint8_t)ipv4;
    return true;
}

/* ---- IPv6 (WHATWG "IPv6 parser") ---- */

/* The code point at i, or -1 for the standard's EOF. */
static int at(const char *s, size_t len, size_t i)
{
    return i < len ? (unsigned char)s[i] : -1;
}

static bool parse_v6(const char *s, size_t len, uint8_t out[16])
{
    /* 1-4. address: 8 pieces of 0; pieceIndex; compress (-1: null); pointer. */
    uint16_t address[8] = {0};
    int piece = 0;
    int compress = -1;
    size_t p = 0;
    /* 5. A leading ':' must be "::". */
    if (at(s, len, p) == ':') {
        if (at(s, len, p + 1) != ':')
            return false;
        p += 2;
        piece++;
        compress = piece;
    }
    /* 6. While c is not EOF. */
    while (at(s, len, p) != -1) {
        /* 6.1. Nine pieces: failure. */
        if (piece == 8)
            return false;
        /* 6.2. "::" (a second one is a failure). */
        if (at(s, len, p) == ':') {
            if (compress != -1)
                return false;
            p++;
            piece++;
            compress = piece;
            continue;
        }
        /* 6.3-6.4. Up to four hex digits. */
        unsigned value = 0;
        unsigned length = 0;
        while (length < 4 && pdk_hex_value(at(s, len, p)) >= 0) {
            value = value * 0x10 + (unsigned)pdk_hex_value(at(s, len, p));
            p++;
            length++;
        }
        if (at(s, len, p) == '.') {
            /* 6.5. An embedded dotted IPv4: re-read the digits as decimal. */
            if (length == 0)
                return false;
            p -= length;
            /* It needs two pieces. */
            if (piece > 6)
                return false;
            int numbers_seen = 0;
            while (at(s, len, p) != -1) {
                int v4_piece = -1; /* null */
                if (numbers_seen > 0) {
                    if (at(s, len, p) == '.' && numbers_seen < 4)
                        p++;
                    else
                        return false;
                }
                if (!is_digit(at(s, len, p)))
                    return false;
                while (is_digit(at(s, len, p))) {
                    int number = at(s, len, p) - '0';
                    if (v4_piece == -1)
                        v4_piece = number;
                    else if (v4_piece == 0) /* a leading zero: failure ("01") */
                        return false;
                    else
                        v4_piece = v4_piece * 10 + number;
                    if (v4_piece > 255)
                        return false;
                    p++;
                }
                address[piece] = (uint16_t)(address[piece] * 0x100 + v4_piece);
                numbers_seen++;
                if (numbers_seen == 2 || numbers_seen == 4)
                    piece++;
            }
            if (numbers_seen != 4)
                return false;
            break;
        } else if (at(s, len, p) == ':') {
            /* 6.6. A ':' must be followed by something. */
            p++;
            if (at(s, len, p) == -1)
                return false;
        } else if (at(s, len, p) != -1) {
            /* 6.7. Anything else (a fifth hex digit, '%', ']'): failure. */
            return false;
        }
        /* 6.8-6.9. */
        address[piece] = (uint16_t)value;
        piece++;
    }
    if (compress != -1) {
        /* 7. Move the pieces after "::" to the end. */
        int swaps = piece - compress;
        piece = 7;
        while (piece != 0 && swaps > 0) {
            uint16_t t = address[piece];
            address[piece] = address[compress + swaps - 1];
            address[compress + swaps - 1] = t;
            piece--;
            swaps--;
        }
    } else if (piece != 8) {
        /* 8. Without "::", exactly 8 pieces. */
        return false;
    }
    for (int i = 0; i < 8; i++) {
        out[2 * i] = (uint8_t)(address[i] >> 8);
        out[2 * i + 1] = (uint8_t)address[i];
    }
    return true;
}

/* ---- Host parser ---- */

/* DNS limits (RFC 1035 2.3.4): a name longer, or with a label longer, resolves to nothing. */
#define MAX_NAME_LENGTH  253
#define MAX_LABEL_LENGTH 63

/* The checks of a name that made it past the IPv4 test (net_address.h: stricter than
 * WHATWG). Forbidden bytes were refused before. */
static bool valid_name(const char *s, size_t len)
{
    /* One trailing dot is the root: "example.com." is example.com. */
    if (len > 0 && s[len - 1] == '.')
        len--;
    if (len == 0 || len > MAX_NAME_LENGTH)
        return false;
    size_t label = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '.') {
            if (++label > MAX_LABEL_LENGTH)
                return false;
            continue;
        }
        if (label == 0) /* ".a", "a..b" */
            return false;
        label = 0;
    }
    return true;
}

pdk_host_kind pdk_ip_parse_host_n(const char *host, size_t len, pdk_ip *out)
{
    pdk_ip ip;
    memset(&ip, 0, sizeof(ip));
    pdk_host_kind kind = PDK_HOST_INVALID;

    if (len > 0 && host[0] == '[') {
        /* Host parser 1: "[" ... "]" is an IPv6 address or a failure. */
        if (len >= 2 && host[len - 1] == ']' && parse_v6(host + 1, len - 2, ip.bytes)) {
            ip.family = AF_INET6;
            kind = PDK_HOST_ADDRESS;
        }
    } else if (memchr(host, ':', len)) {
        /* ':' is a forbidden host code point, so a URL host with one is a failure; a bare
         * host (Host header without port, CONNECT target split by the caller, a policy
         * file) may write IPv6 without brackets (net_address.h). */
        if (parse_v6(host, len, ip.bytes)) {
            ip.family = AF_INET6;
            kind = PDK_HOST_ADDRESS;
        }
    } else {
        /* Host parser 5-7: forbidden domain code points fail the host... */
        bool forbidden = len == 0;
        for (size_t i = 0; i < len && !forbidden; i++)
            forbidden = is_forbidden_domain_byte((unsigned char)host[i]);
        if (forbidden) {
            kind = PDK_HOST_INVALID;
        } else if (ends_in_number(host, len)) {
            /* ...8: a host that ends in a number is an IPv4 address or a failure. */
            if (parse_v4(host, len, ip.bytes)) {
                ip.family = AF_INET;
                kind = PDK_HOST_ADDRESS;
            }
        } else if (valid_name(host, len)) {
            kind = PDK_HOST_NAME;
        }
    }
    if (kind != PDK_HOST_ADDRESS)
        memset(&ip, 0, sizeof(ip));
    if (out)
        *out = ip;
    return kind;
}

pdk_host_kind pdk_ip_parse_host(const char *host, pdk_ip *out)
{
    return pdk_ip_parse_host_n(host, strlen(host), out);
}

const char *pdk_host_kind_name(pdk_host_kind kind)
{
    switch (kind) {
    case PDK_HOST_INVALID:
        return "invalid";
    case PDK_HOST_ADDRESS:
        return "address";
    case PDK_HOST_NAME:
        return "name";
    default:
        return "invalid";
    }
}

/* ---- Text ---- */

/* Copy text into buf snprintf-style; returns strlen(text). */
static size_t copy_out(const char *text, char *buf, size_t size)
{
    size_t len = strlen(text);
    if (size > 0) {
        size_t n = len < size - 1 ? len : size - 1;
        memcpy(buf, text, n);
        buf[n] = '\0';
    }
    return len;
}

static void format_v4(const uint8_t b[4], char text[16])
{
    snprintf(text, 16, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
}

static bool is_mapped(const uint8_t b[16])
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(b, prefix, sizeof(prefix)) == 0;
}

/* RFC 5952 section 4: lower-case hex without leading zeros; the longest run of two or more
 * zero groups becomes "::" (the first of equal runs); section 5: the dotted form for
 * IPv4-mapped addresses only. */
static void format_v6(const uint8_t b[16], char text[PDK_IP_TEXT_MAX])
{
    uint16_t w[8];
    for (int i = 0; i < 8; i++)
        w[i] = (uint16_t)(b[2 * i] << 8 | b[2 * i + 1]);
    int best = -1, best_len = 0;
    for (int i = 0; i < 8;) {
        if (w[i] != 0) {
            i++;
            continue;
        }
        int j = i;
        while (j < 8 && w[j] == 0)
            j++;
        if (j - i > best_len) {
            best = i;
            best_len = j - i;
        }
        i = j;
    }
    if (best_len < 2)
        best = -1;

    bool mapped = is_mapped(b);
    int groups = mapped ? 6 : 8; /* the last two groups are the dotted IPv4 */
    size_t n = 0;
    for (int i = 0; i < groups; i++) {
        if (i == best) {
            text[n++] = ':';
            text[n++] = ':';
            i += best_len - 1;
            continue;
        }
        if (i > 0 && i != best + best_len)
            text[n++] = ':';
        n += (size_t)snprintf(text + n, PDK_IP_TEXT_MAX - n, "%x", w[i]);
    }
    if (mapped) {
        /* After "::ffff" (best is 0, covering groups 0-4). */
        text[n++] = ':';
        format_v4(b + 12, text + n);
    } else {
        text[n] = '\0';
    }
}

size_t pdk_ip_format(const pdk_ip *ip, char *buf, size_t size)
{
    char text[PDK_IP_TEXT_MAX] = "";
    if (ip->family == AF_INET)
        format_v4(ip->bytes, text);
    else if (ip->family == AF_INET6)
        format_v6(ip->bytes, text);
    return copy_out(text, buf, size);
}

/* ---- Sockets ---- */

bool pdk_ip_from_sockaddr(const struct sockaddr *sa, socklen_t len, pdk_ip *out, uint16_t *port)
{
    memset(out, 0, sizeof(*out));
    if (port)
        *port = 0;
    sa_family_t family;
    if (!sa || len < (socklen_t)(offsetof(struct sockaddr, sa_family) + sizeof(family)))
        return false;
    /* memcpy: sa may point into a byte buffer with no particular alignment. */
    memcpy(&family, (const char *)sa + offsetof(struct sockaddr, sa_family), sizeof(family));
    if (family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in sin;
        memcpy(&sin, sa, sizeof(sin));
        out->family = AF_INET;
        memcpy(out->bytes, &sin.sin_addr, 4);
        if (port)
            *port = ntohs(sin.sin_port);
        return true;
    }
    if (family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 sin6;
        memcpy(&sin6, sa, sizeof(sin6));
        out->family = AF_INET6;
        memcpy(out->bytes, &sin6.sin6_addr, 16);
        if (port)
            *port = ntohs(sin6.sin6_port);
        return true;
    }
    return false;
}

socklen_t pdk_ip_to_sockaddr(const pdk_ip *ip, uint16_t port, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof(*out));
    if (ip->family == AF_INET) {
        struct sockaddr_in sin;
        memset(&sin, 0, sizeof(sin));
        sin.sin_family = AF_INET;
        sin.sin_port = htons(port);
        memcpy(&sin.sin_addr, ip->bytes, 4);
        memcpy(out, &sin, sizeof(sin));
        return (socklen_t)sizeof(sin);
    }
    if (ip->family == AF_INET6) {
        struct sockaddr_in6 sin6;
        memset(&sin6, 0, sizeof(sin6));
        sin6.sin6_family = AF_INET6;
        sin6.sin6_port = htons(port);
        memcpy(&sin6.sin6_addr, ip->bytes, 16);
        memcpy(out, &sin6, sizeof(sin6));
        return (socklen_t)sizeof(sin6);
    }
    return 0;
}

/* ---- Comparing ---- */

bool pdk_ip_equal(const pdk_ip *a, const pdk_ip *b)
{
    if (a->family != b->family)
        return false;
    if (a->family == AF_INET)
        return memcmp(a->bytes, b->bytes, 4) == 0;
    return memcmp(a->bytes, b->bytes, 16) == 0;
}

void pdk_ip_unmap(pdk_ip *ip)
{
    if (ip->family != AF_INET6 || !is_mapped(ip->bytes))
        return;
    uint8_t v4[4];
    memcpy(v4, ip->bytes + 12, 4);
    memset(ip->bytes, 0, sizeof(ip->bytes));
    memcpy(ip->bytes, v4, 4);
    ip->family = AF_INET;
}

/* ---- Classification ---- */

/* The ranges, from the IANA special-purpose address registries (RFC 6890 and updates).
 * First match wins; the exact addresses come first so that metadata beats link-local,
 * private and shared, and broadcast beats 240/4. */
struct range4 {
    uint32_t net;
    unsigned bits;
    pdk_ip_class cls;
};

#define V4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))

static const struct range4 ranges4[] = {
    {V4(169, 254, 169, 254), 32, PDK_IP_METADATA}, /* AWS, GCP, Azure, OCI, OpenStack... */
    {V4(100, 100, 100, 200), 32, PDK_IP_METADATA}, /* Alibaba Cloud */
    {V4(255, 255, 255, 255), 32, PDK_IP_BROADCAST},
    {V4(0, 0, 0, 0), 8, PDK_IP_UNSPECIFIED}, /* "this network"; Linux connects 0.0.0.0 to
                                              * the local host */
    {V4(10, 0, 0, 0), 8, PDK_IP_PRIVATE},    /* RFC 1918 */
    {V4(100, 64, 0, 0), 10, PDK_IP_SHARED},  /* RFC 6598 */
    {V4(127, 0, 0, 0), 8, PDK_IP_LOOPBACK},  /* the whole /8, not just 127.0.0.1 */
    {V4(169, 254, 0, 0), 16, PDK_IP_LINK_LOCAL},
    {V4(172, 16, 0, 0), 12, PDK_IP_PRIVATE},    /* RFC 1918 */
    {V4(192, 0, 0, 0), 24, PDK_IP_RESERVED},    /* IETF protocol assignments (DS-Lite...) */
    {V4(192, 0, 2, 0), 24, PDK_IP_RESERVED},    /* TEST-NET-1 */
    {V4(192, 88, 99, 0), 24, PDK_IP_RESERVED},  /* 6to4 relay anycast, deprecated (RFC 7526) */
    {V4(192, 168, 0, 0), 16, PDK_IP_PRIVATE},   /* RFC 1918 */
    {V4(198, 18, 0, 0), 15, PDK_IP_RESERVED},   /* benchmarking (RFC 2544) */
    {V4(198, 51, 100, 0), 24, PDK_IP_RESERVED}, /* TEST-NET-2 */
    {V4(203, 0, 113, 0), 24, PDK_IP_RESERVED},  /* TEST-NET-3 */
    {V4(224, 0, 0, 0), 4, PDK_IP_MULTICAST},
    {V4(240, 0, 0, 0), 4, PDK_IP_RESERVED}, /* future use */
};

static pdk_ip_class classify_v4(const uint8_t b[4])
{
    uint32_t a = V4(b[0], b[1], b[2], b[3]);
    for (size_t i = 0; i < PDK_ARRAY_SIZE(ranges4); i++) {
        uint32_t mask = ranges4[i].bits == 0 ? 0 : ~(uint32_t)0 << (32 - ranges4[i].bits);
        if ((a & mask) == ranges4[i].net)
            return ranges4[i].cls;
    }
    return PDK_IP_PUBLIC;
}

struct range6 {
    uint8_t net[16];
    unsigned bits;
    pdk_ip_class cls;
};

/* Single addresses, checked before the addresses that embed IPv4: :: and ::1 would
 * otherwise read as the IPv4-compatible 0.0.0.0 and 0.0.0.1, and fd00:ec2::254 as private. */
static const struct range6 exact6[] = {
    {{0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54}, 128, PDK_IP_METADATA}, /* AWS */
    {{0}, 128, PDK_IP_UNSPECIFIED},                                             /* :: */
    {{[15] = 1}, 128, PDK_IP_LOOPBACK},                                         /* ::1 */
};

/* Checked after the addresses that embed IPv4 (pdk_ip_embedded_v4()). */
static const struct range6 ranges6[] = {
    {{0x01, 0x00}, 64, PDK_IP_RESERVED},             /* 100::/64 discard (RFC 6666) */
    {{0x20, 0x01, 0x00, 0x02}, 48, PDK_IP_RESERVED}, /* 2001:2::/48 benchmarking (RFC 5180) */
    {{0x20, 0x01, 0x00, 0x10}, 28, PDK_IP_RESERVED}, /* 2001:10::/28 ORCHID, deprecated */
    {{0x20, 0x01, 0x00, 0x20}, 28, PDK_IP_RESERVED}, /* 2001:20::/28 ORCHIDv2 (RFC 7343) */
    {{0x20, 0x01, 0x0d, 0xb8}, 32, PDK_IP_RESERVED}, /* 2001:db8::/32 documentation */
    {{0x3f, 0xff}, 20, PDK_IP_RESERVED},             /* 3fff::/20 documentation (RFC 9637) */
    {{0xfc}, 7, PDK_IP_PRIVATE},                     /* unique local (RFC 4193) */
    {{0xfe, 0x80}, 10, PDK_IP_LINK_LOCAL},           /* fe80::/10 */
    {{0xfe, 0xc0}, 10, PDK_IP_PRIVATE},              /* site-local, deprecated (RFC 3879) */
    {{0xff}, 8, PDK_IP_MULTICAST},                   /* ff00::/8 */
};

static bool in_prefix6(const uint8_t a[16], const uint8_t net[16], unsigned bits)
{
    unsigned whole = bits / 8;
    if (memcmp(a, net, whole) != 0)
        return false;
    if (bits % 8 == 0)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - bits % 8));
    return (a[whole] & mask) == net[whole];
}

pdk_ip_embedding pdk_ip_embedded_v4(const pdk_ip *ip, pdk_ip *v4)
{
    static const uint8_t zero[12] = {0};
    static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b};
    static const uint8_t nat64_local[6] = {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01};
    pdk_ip_embedding e = PDK_IP_EMBED_NONE;
    uint8_t b[4] = {0};
    if (ip->family == AF_INET6) {
        const uint8_t *a = ip->bytes;
        if (is_mapped(a)) {
            e = PDK_IP_EMBED_MAPPED;
            memcpy(b, a + 12, 4);
        } else if (memcmp(a, zero, 12) == 0) {
            /* :: and ::1 are themselves, not 0.0.0.0 and 0.0.0.1. */
            static const uint8_t one[4] = {0, 0, 0, 1};
            if (memcmp(a + 12, zero, 4) != 0 && memcmp(a + 12, one, 4) != 0) {
                e = PDK_IP_EMBED_COMPATIBLE;
                memcpy(b, a + 12, 4);
            }
        } else if (memcmp(a, nat64, 12) == 0 || memcmp(a, nat64_local, 6) == 0) {
            /* RFC 6052 allows prefixes from /32 to /96 with the IPv4 address at other
             * offsets; the well-known /96 format is the one decoded (also for the
             * local-use /48, where the operator picks the length). */
            e = PDK_IP_EMBED_NAT64;
            memcpy(b, a + 12, 4);
        } else if (a[0] == 0x20 && a[1] == 0x02) {
            e = PDK_IP_EMBED_6TO4;
            memcpy(b, a + 2, 4);
        } else if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0) {
            /* RFC 4380 section 4: the client's address is obfuscated by inverting it. */
            e = PDK_IP_EMBED_TEREDO;
            for (int i = 0; i < 4; i++)
                b[i] = (uint8_t)~a[12 + i];
        }
    }
    if (v4) {
        memset(v4, 0, sizeof(*v4));
        if (e != PDK_IP_EMBED_NONE) {
            v4->family = AF_INET;
            memcpy(v4->bytes, b, 4);
        }
    }
    return e;
}

const char *pdk_ip_embedding_name(pdk_ip_embedding embedding)
{
    switch (embedding) {
    case PDK_IP_EMBED_NONE:
        return "none";
    case PDK_IP_EMBED_MAPPED:
        return "IPv4-mapped";
    case PDK_IP_EMBED_COMPATIBLE:
        return "IPv4-compatible";
    case PDK_IP_EMBED_NAT64:
        return "NAT64";
    case PDK_IP_EMBED_6TO4:
        return "6to4";
    case PDK_IP_EMBED_TEREDO:
        return "Teredo";
    default:
        return "none";
    }
}

static pdk_ip_class classify_v6(const pdk_ip *ip)
{
    const uint8_t *a = ip->bytes;
    for (size_t i = 0; i < PDK_ARRAY_SIZE(exact6); i++)
        if (in_prefix6(a, exact6[i].net, exact6[i].bits))
            return exact6[i].cls;
    pdk_ip v4;
    if (pdk_ip_embedded_v4(ip, &v4) != PDK_IP_EMBED_NONE)
        return classify_v4(v4.bytes);
    for (size_t i = 0; i < PDK_ARRAY_SIZE(ranges6); i++)
        if (in_prefix6(a, ranges6[i].net, ranges6[i].bits))
            return ranges6[i].cls;
    /* Global unicast is 2000::/3 (RFC 4291 2.4); the rest is reserved by the IETF or
     * unallocated: nothing there is a legitimate upstream (fail closed). */
    if ((a[0] & 0xe0) != 0x20)
        return PDK_IP_RESERVED;
    return PDK_IP_PUBLIC;
}

pdk_ip_class pdk_ip_classify(const pdk_ip *ip)
{
    if (ip->family == AF_INET)
        return classify_v4(ip->bytes);
    if (ip->family == AF_INET6)
        return classify_v6(ip);
    return PDK_IP_RESERVED;
}

const char *pdk_ip_class_name(pdk_ip_class cls)
{
    switch (cls) {
    case PDK_IP_PUBLIC:
        return "public";
    case PDK_IP_UNSPECIFIED:
        return "unspecified";
    case PDK_IP_LOOPBACK:
        return "loopback";
    case PDK_IP_PRIVATE:
        return "private";
    case PDK_IP_LINK_LOCAL:
        return "link-local";
    case PDK_IP_SHARED:
        return "shared";
    case PDK_IP_MULTICAST:
        return "multicast";
    case PDK_IP_BROADCAST:
        return "broadcast";
    case PDK_IP_RESERVED:
        return "reserved";
    case PDK_IP_METADATA:
        return "metadata";
    default:
        return "reserved";
    }
}

bool pdk_ip_class_allowed_by_default(pdk_ip_class cls)
{
    return cls == PDK_IP_PUBLIC;
}

/* The noun phrase of a class in pdk_ip_describe(). */
static const char *class_phrase(pdk_ip_class cls)
{
    switch (cls) {
    case PDK_IP_PUBLIC:
        return "a public address";
    case PDK_IP_UNSPECIFIED:
        return "an unspecified address (this host)";
    case PDK_IP_LOOPBACK:
        return "a loopback address";
    case PDK_IP_PRIVATE:
        return "a private-network address";
    case PDK_IP_LINK_LOCAL:
        return "a link-local address";
    case PDK_IP_SHARED:
        return "a carrier-grade NAT (shared) address";
    case PDK_IP_MULTICAST:
        return "a multicast address";
    case PDK_IP_BROADCAST:
        return "the broadcast address";
    case PDK_IP_RESERVED:
        return "a reserved (documentation, benchmarking or unallocated) address";
    case PDK_IP_METADATA:
        return "a cloud metadata address";
    default:
        return "a reserved (documentation, benchmarking or unallocated) address";
    }
}

size_t pdk_ip_describe(const pdk_ip *ip, char *buf, size_t size)
{
    char text[PDK_IP_DESCRIBE_MAX];
    if (ip->family != AF_INET && ip->family != AF_INET6) {
        snprintf(text, sizeof(text), "an address of unknown family %d is %s", ip->family,
                 class_phrase(PDK_IP_RESERVED));
        return copy_out(text, buf, size);
    }
    char addr[PDK_IP_TEXT_MAX];
    pdk_ip_format(ip, addr, sizeof(addr));
    pdk_ip v4;
    pdk_ip_embedding e = pdk_ip_embedded_v4(ip, &v4);
    const char *phrase = class_phrase(pdk_ip_classify(ip));
    if (e == PDK_IP_EMBED_NONE) {
        snprintf(text, sizeof(text), "%s is %s", addr, phrase);
    } else {
        char inner[PDK_IP_TEXT_MAX];
        pdk_ip_format(&v4, inner, sizeof(inner));
        snprintf(text, sizeof(text), "%s is %s (%s address of %s)", addr, phrase,
                 pdk_ip_embedding_name(e), inner);
    }
    return copy_out(text, buf, size);
}
