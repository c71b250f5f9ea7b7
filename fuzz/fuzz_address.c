/* fuzz_address.c: libFuzzer target for IP literals and address classes
 * (src/gateway/net_address.c).
 *
 * The input is a host, parsed twice: as its exact bytes (pdk_ip_parse_host_n, so that ASan
 * sees any read past the end) and as a NUL-terminated copy. The invariants of
 * net_address.h are checked:
 *   - both parses agree when the input has no NUL; anything but an address leaves *out zero;
 *   - an address's canonical text fits PDK_IP_TEXT_MAX, re-parses (bare and, for IPv6, in
 *     brackets) to the same address and class, and is a fixed point of formatting;
 *   - the C library agrees: what inet_aton or inet_pton takes is the same address here
 *     (getaddrinfo uses them, so a "name" must never be numeric to glibc), and our text is
 *     inet_ntop's except for IPv4-compatible addresses (net_address.h);
 *   - classification is total, an embedded IPv4 address classifies like its IPv6 form,
 *     the description is one line that starts with the address and fits
 *     PDK_IP_DESCRIBE_MAX, and sockaddr conversions round-trip.
 * The same checks on addresses run over the first 4 and 16 input bytes taken as raw
 * addresses, so that every address is reached, not only those the parser makes.
 * Built with -fsanitize=fuzzer (fuzz/meson.build, -Dfuzz=true) and, without libFuzzer, as
 * fuzz-address-replay (replay.c) for the committed corpus.
 */
#include "net_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Hosts are short; longer inputs only slow the fuzzer down. */
#define MAX_INPUT 1024

static bool is_v4_compatible(const pdk_ip *ip)
{
    static const uint8_t zero[12];
    return ip->family == AF_INET6 && memcmp(ip->bytes, zero, 12) == 0;
}

/* The checks on any address (from the parser or raw bytes). */
static void check_address(const pdk_ip *ip)
{
    if (ip->family != AF_INET && ip->family != AF_INET6)
        abort();
    char text[PDK_IP_TEXT_MAX];
    size_t len = pdk_ip_format(ip, text, sizeof(text));
    if (len == 0 || len >= PDK_IP_TEXT_MAX || strlen(text) != len)
        abort();

    /* Cut formatting is a prefix of the whole. */
    char small[8];
    if (pdk_ip_format(ip, small, sizeof(small)) != len || strncmp(small, text, 7) != 0)
        abort();

    pdk_ip again;
    if (pdk_ip_parse_host(text, &again) != PDK_HOST_ADDRESS || !pdk_ip_equal(ip, &again))
        abort();
    pdk_ip_class cls = pdk_ip_classify(ip);
    if (pdk_ip_classify(&again) != cls)
        abort();
    char text2[PDK_IP_TEXT_MAX];
    pdk_ip_format(&again, text2, sizeof(text2));
    if (strcmp(text, text2) != 0)
        abort();
    if (ip->family == AF_INET6) {
        char bracketed[PDK_IP_TEXT_MAX + 2];
        bracketed[0] = '[';
        memcpy(bracketed + 1, text, len);
        bracketed[len + 1] = ']';
        if (pdk_ip_parse_host_n(bracketed, len + 2, &again) != PDK_HOST_ADDRESS ||
            !pdk_ip_equal(ip, &again))
            abort();
    }

    /* The C library reads our text as the same address and, but for IPv4-compatible
     * addresses, writes the same text. */
    uint8_t bytes[16];
    if (inet_pton(ip->family, text, bytes) != 1 ||
        memcmp(bytes, ip->bytes, ip->family == AF_INET ? 4 : 16) != 0)
        abort();
    if (!is_v4_compatible(ip)) {
        char libc[INET6_ADDRSTRLEN];
        if (!inet_ntop(ip->family, ip->bytes, libc, sizeof(libc)) || strcmp(libc, text) != 0)
            abort();
    }

    /* Classification is total and named. */
    switch (cls) {
    case PDK_IP_PUBLIC:
    case PDK_IP_UNSPECIFIED:
    case PDK_IP_LOOPBACK:
    case PDK_IP_PRIVATE:
    case PDK_IP_LINK_LOCAL:
    case PDK_IP_SHARED:
    case PDK_IP_MULTICAST:
    case PDK_IP_BROADCAST:
    case PDK_IP_RESERVED:
    case PDK_IP_METADATA:
        break;
    default:
        abort();
    }
    const char *name = pdk_ip_class_name(cls);
    if (!name || !name[0])
        abort();
    if (pdk_ip_class_allowed_by_default(cls) != (cls == PDK_IP_PUBLIC))
        abort();

    /* An embedded IPv4 address decides the class. */
    pdk_ip inner;
    pdk_ip_embedding e = pdk_ip_embedded_v4(ip, &inner);
    if (e != PDK_IP_EMBED_NONE) {
        if (ip->family != AF_INET6 || inner.family != AF_INET || pdk_ip_classify(&inner) != cls)
            abort();
    } else if (inner.family != 0) {
        abort();
    }
    if (!pdk_ip_embedding_name(e))
        abort();

    /* Unmapping keeps the class. */
    pdk_ip unmapped = *ip;
    pdk_ip_unmap(&unmapped);
    if (pdk_ip_classify(&unmapped) != cls ||
        (unmapped.family == AF_INET) != (ip->family == AF_INET || e == PDK_IP_EMBED_MAPPED))
        abort();

    /* One line, starting with the address. */
    char why[PDK_IP_DESCRIBE_MAX];
    size_t why_len = pdk_ip_describe(ip, why, sizeof(why));
    if (why_len >= sizeof(why) || strlen(why) != why_len || strchr(why, '\n') ||
        strncmp(why, text, len) != 0 || strncmp(why + len, " is ", 4) != 0)
        abort();

    /* sockaddr and back. */
    struct sockaddr_storage ss;
    socklen_t sl = pdk_ip_to_sockaddr(ip, 4242, &ss);
    if (sl == 0)
        abort();
    pdk_ip back;
    uint16_t port;
    if (!pdk_ip_from_sockaddr((struct sockaddr *)&ss, sl, &back, &port) || port != 4242 ||
        !pdk_ip_equal(ip, &back))
        abort();
}

/* The C library's notion of numeric, without inet_aton's trailing-whitespace leniency. */
static void check_against_libc(const char *host, pdk_host_kind kind, const pdk_ip *ip)
{
    bool blank = false;
    for (const char *p = host; *p; p++)
        blank |= *p == ' ' || (*p >= '\t' && *p <= '\r');
    struct in_addr in;
    if (!blank && inet_aton(host, &in) == 1) {
        if (kind != PDK_HOST_ADDRESS || ip->family != AF_INET || memcmp(ip->bytes, &in, 4) != 0)
            abort();
    }
    uint8_t bytes[16];
    if (inet_pton(AF_INET, host, bytes) == 1) {
        if (kind != PDK_HOST_ADDRESS || ip->family != AF_INET || memcmp(ip->bytes, bytes, 4) != 0)
            abort();
    }
    if (inet_pton(AF_INET6, host, bytes) == 1) {
        if (kind != PDK_HOST_ADDRESS || ip->family != AF_INET6 || memcmp(ip->bytes, bytes, 16) != 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT)
        size = MAX_INPUT;

    /* The exact bytes, with nothing after them. */
    pdk_ip exact;
    pdk_host_kind exact_kind = pdk_ip_parse_host_n((const char *)data, size, &exact);

    char host[MAX_INPUT + 1];
    memcpy(host, data, size);
    host[size] = '\0';
    pdk_ip ip;
    pdk_host_kind kind = pdk_ip_parse_host(host, &ip);

    if (!memchr(data, '\0', size)) {
        if (kind != exact_kind || memcmp(&ip, &exact, sizeof(ip)) != 0)
            abort();
    } else if (exact_kind != PDK_HOST_INVALID) {
        abort(); /* a NUL is never part of a host */
    }

    static const pdk_ip zero;
    switch (kind) {
    case PDK_HOST_ADDRESS:
        check_address(&ip);
        if (ip.family == AF_INET && memcmp(ip.bytes + 4, zero.bytes, 12) != 0)
            abort();
        break;
    case PDK_HOST_NAME:
        /* A name has no ':' (that would be IPv6 or invalid) and is not empty. */
        if (!host[0] || strchr(host, ':') || strchr(host, '%') || host[0] == '[' ||
            memcmp(&ip, &zero, sizeof(ip)) != 0)
            abort();
        break;
    case PDK_HOST_INVALID:
        if (memcmp(&ip, &zero, sizeof(ip)) != 0)
            abort();
        break;
    default:
        abort();
    }
    if (!pdk_host_kind_name(kind))
        abort();
    check_against_libc(host, kind, &ip);

    /* Raw bytes as addresses: reaches every address, not only parseable ones. */
    if (size >= 4) {
        pdk_ip raw = {.family = AF_INET};
        memcpy(raw.bytes, data, 4);
        check_address(&raw);
    }
    if (size >= 16) {
        pdk_ip raw = {.family = AF_INET6};
        memcpy(raw.bytes, data, 16);
        check_address(&raw);
    }

    /* A garbage family is refused, not crashed on. */
    pdk_ip bad = {.family = size > 0 ? data[0] + 100 : 100};
    if (pdk_ip_classify(&bad) != PDK_IP_RESERVED ||
        pdk_ip_class_allowed_by_default(pdk_ip_classify(&bad)))
        abort();
    char buf[PDK_IP_DESCRIBE_MAX];
    if (pdk_ip_format(&bad, buf, sizeof(buf)) != 0 ||
        pdk_ip_describe(&bad, buf, sizeof(buf)) >= sizeof(buf))
        abort();
    return 0;
}
