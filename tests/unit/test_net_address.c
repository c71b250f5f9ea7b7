/* test_net_address.c: IP literals and address classes (src/gateway/net_address.c).
 *
 * Each notation test parses a host and compares the canonical text of the address (or the
 * exact verdict: invalid, name). Class tests walk every range at its first and last address
 * and one address outside either end. Pure functions only: no socket is ever opened.
 */
#include "net_address.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cmocka.h>

/* ---- Helpers ---- */

static pdk_ip parse_ok(const char *host)
{
    pdk_ip ip;
    pdk_host_kind kind = pdk_ip_parse_host(host, &ip);
    if (kind != PDK_HOST_ADDRESS)
        fail_msg("\"%s\": %s, want an address", host, pdk_host_kind_name(kind));
    return ip;
}

/* host parses to the address whose canonical text is want. */
static void assert_addr(const char *host, const char *want)
{
    pdk_ip ip = parse_ok(host);
    char text[PDK_IP_TEXT_MAX];
    size_t n = pdk_ip_format(&ip, text, sizeof(text));
    if (strcmp(text, want) != 0)
        fail_msg("\"%s\" -> %s, want %s", host, text, want);
    assert_int_equal(n, strlen(want));
    /* The same bytes as the C library makes of the canonical text. */
    uint8_t bytes[16] = {0};
    int family = strchr(want, ':') ? AF_INET6 : AF_INET;
    assert_int_equal(inet_pton(family, want, bytes), 1);
    assert_int_equal(ip.family, family);
    assert_memory_equal(ip.bytes, bytes, 16);
}

static void assert_kind(const char *host, pdk_host_kind want)
{
    pdk_ip ip;
    memset(&ip, 0xa5, sizeof(ip));
    pdk_host_kind kind = pdk_ip_parse_host(host, &ip);
    if (kind != want)
        fail_msg("\"%s\": %s, want %s", host, pdk_host_kind_name(kind), pdk_host_kind_name(want));
    /* Not an address: *out is zeroed, not left half-written. */
    static const pdk_ip zero;
    assert_memory_equal(&ip, &zero, sizeof(ip));
}

static void assert_invalid(const char *host)
{
    assert_kind(host, PDK_HOST_INVALID);
}

static void assert_name(const char *host)
{
    assert_kind(host, PDK_HOST_NAME);
}

static void assert_class(const char *host, pdk_ip_class want)
{
    pdk_ip ip = parse_ok(host);
    pdk_ip_class got = pdk_ip_classify(&ip);
    if (got != want)
        fail_msg("%s: %s, want %s", host, pdk_ip_class_name(got), pdk_ip_class_name(want));
}

static pdk_ip v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
    pdk_ip ip = {.family = AF_INET, .bytes = {a, b, c, d}};
    return ip;
}

/* ---- IPv4 notations ---- */

static void ipv4_notations(void **state)
{
    (void)state;
    assert_addr("127.0.0.1", "127.0.0.1");
    /* Hex, octal, fewer parts: the inet_aton forms, all 127.0.0.1. */
    assert_addr("0x7f.1", "127.0.0.1");
    assert_addr("0X7F.1", "127.0.0.1");
    assert_addr("0x7F.0.0.0X1", "127.0.0.1");
    assert_addr("017700000001", "127.0.0.1");
    assert_addr("0177.0.0.01", "127.0.0.1");
    assert_addr("0177.0.0.1", "127.0.0.1");
    assert_addr("2130706433", "127.0.0.1");
    assert_addr("0x7f000001", "127.0.0.1");
    assert_addr("127.1", "127.0.0.1");
    assert_addr("127.0.1", "127.0.0.1");
    assert_addr("0x7f.0x0.0x1", "127.0.0.1");
    /* One trailing dot (the DNS root). */
    assert_addr("127.0.0.1.", "127.0.0.1");
    assert_addr("2130706433.", "127.0.0.1");
    /* Leading zeros are only a radix, however many. */
    assert_addr("0x000000000000000000000000007f.1", "127.0.0.1");
    assert_addr("0000000000000000000000000177.1", "127.0.0.1");
    assert_addr("127.000000000000000000000000000000000001", "127.0.0.1");
    /* "0x" alone is 0 (WHATWG IPv4 number parser step 6); so is "0" and "00". */
    assert_addr("0x", "0.0.0.0");
    assert_addr("0x.0x.0x.0x", "0.0.0.0");
    assert_addr("0", "0.0.0.0");
    assert_addr("00", "0.0.0.0");
    assert_addr("1.2.3.0x", "1.2.3.0");
    /* The last part fills the remaining bytes. */
    assert_addr("192.168.257", "192.168.1.1");
    assert_addr("1.16777215", "1.255.255.255");
    assert_addr("1.2.65535", "1.2.255.255");
    assert_addr("1.0x10.0.1", "1.16.0.1");
    assert_addr("4294967295", "255.255.255.255");
    assert_addr("0xffffffff", "255.255.255.255");
    assert_addr("0XFFFFFFFF", "255.255.255.255");
    assert_addr("037777777777", "255.255.255.255");
    assert_addr("169.254.43518", "169.254.169.254");
    assert_addr("0xa9fea9fe", "169.254.169.254");
    assert_addr("8.8.8.8", "8.8.8.8");
    assert_addr("255.255.255.255", "255.255.255.255");
}

static void ipv4_invalid(void **state)
{
    (void)state;
    /* Numeric but out of range: not an address, and not a name either. */
    assert_invalid("999.1.1.1");
    assert_invalid("256.0.0.1");
    assert_invalid("1.2.3.256");
    assert_invalid("1.2.3.999");
    assert_invalid("0x100000000");
    assert_invalid("4294967296");
    assert_invalid("040000000000");
    assert_invalid("1.16777216");
    assert_invalid("1.2.65536");
    assert_invalid("1.0x100.1.1");
    assert_invalid("99999999999999999999999999999999999999999");
    assert_invalid("0x10000000000000000000000000000000000000000");
    /* Too many parts. */
    assert_invalid("1.2.3.4.5");
    assert_invalid("1.2.3.4.5.");
    assert_invalid("0.0.0.0.0");
    /* Not a number in a part of a host that ends in one. */
    assert_invalid("08");
    assert_invalid("0.0.0.09");
    assert_invalid("0x1g.1");
    assert_invalid("1..2");
    assert_invalid(".1.2.3");
    assert_invalid("-1.2.3.4");
    assert_invalid("+1.2.3.4");
    assert_invalid("example.123");
    assert_invalid("example.0x1");
    assert_invalid("example.com.1");
    assert_invalid("1.2.3.example.4");
    /* Two trailing dots: the last label is empty, so not a number; and not a DNS name. */
    assert_invalid("1.2.3.4..");
    /* Forbidden characters, whitespace, ports and URL parts. */
    assert_invalid("127.0.0.1 ");
    assert_invalid(" 127.0.0.1");
    assert_invalid("127.0.0.1\n");
    assert_invalid("127.0.0.1\t");
    assert_invalid("127.0.0.1/");
    assert_invalid("127.0.0.1:80");
    assert_invalid("user@127.0.0.1");
    assert_invalid("127.0.0.1#");
    assert_invalid("127.0.0.1?");
    assert_invalid("127.0.0.1\\");
    /* Percent-encoding is refused, not decoded. */
    assert_invalid("%31%32%37.0.0.1");
    assert_invalid("127.0.0.%31");
    /* Fullwidth digits and the ideographic full stop (IDNA would map them to ASCII). */
    assert_invalid("\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1");
    assert_invalid("127\xe3\x80\x82"
                   "0.0.1");
    assert_invalid("");
    assert_invalid(".");
}

/* An embedded NUL is part of the host, not its end. */
static void embedded_nul(void **state)
{
    (void)state;
    static const char host[] = "127.0.0.1\0.example.com";
    pdk_ip ip;
    assert_int_equal(pdk_ip_parse_host_n(host, sizeof(host) - 1, &ip), PDK_HOST_INVALID);
    assert_int_equal(pdk_ip_parse_host_n(host, 9, &ip), PDK_HOST_ADDRESS);
    pdk_ip want = v4(127, 0, 0, 1);
    assert_true(pdk_ip_equal(&ip, &want));
    /* No NUL needed: the length bounds the read. */
    assert_int_equal(pdk_ip_parse_host_n("10.0.0.1garbage", 8, &ip), PDK_HOST_ADDRESS);
    want = v4(10, 0, 0, 1);
    assert_true(pdk_ip_equal(&ip, &want));
    assert_int_equal(pdk_ip_parse_host_n("[::1]x", 5, &ip), PDK_HOST_ADDRESS);
    assert_int_equal(pdk_ip_parse_host_n("x", 0, &ip), PDK_HOST_INVALID);
    /* out may be NULL. */
    assert_int_equal(pdk_ip_parse_host("0x7f.1", NULL), PDK_HOST_ADDRESS);
    assert_int_equal(pdk_ip_parse_host("example.com", NULL), PDK_HOST_NAME);
}

/* ---- Names ---- */

static void names(void **state)
{
    (void)state;
    assert_name("example.com");
    assert_name("example.com.");
    assert_name("EXAMPLE.COM");
    assert_name("localhost");
    assert_name("1.2.3.example");
    assert_name("0x7f.example");
    assert_name("xn--nxasmq6b.com");
    assert_name("xn--80ak6aa92e.xn--p1ai");
    assert_name("a-b_c.d");
    assert_name("1e2");         /* the last label is not a number in any radix */
    assert_name("0xg");         /* neither */
    assert_name("1.2.3.4a");    /* "4a": not decimal, no 0x */
    assert_name("0x7f.1.com");  /* numbers before a name label do not matter */
    assert_name("123.example"); /* only the last label counts */
    /* Empty labels and DNS lengths. */
    assert_invalid("a..b");
    assert_invalid(".example.com");
    assert_invalid("example.com..");
    char label[70];
    memset(label, 'a', 63);
    label[63] = '\0';
    assert_name(label);
    memset(label, 'a', 64);
    label[64] = '\0';
    assert_invalid(label);
    char name[300];
    /* 4 labels of 63 + 3 dots = 255: too long; 63+1+63+1+63+1+61 = 253: fine. */
    snprintf(name, sizeof(name), "%.63s.%.63s.%.63s.%.61s", label, label, label, label);
    assert_int_equal(strlen(name), 253);
    assert_name(name);
    strcat(name, ".");
    assert_name(name); /* plus one trailing dot */
    snprintf(name, sizeof(name), "%.63s.%.63s.%.63s.%.62s", label, label, label, label);
    assert_invalid(name);
    /* But a long IPv4 literal is still a literal. */
    char longnum[300];
    memset(longnum, '0', 280);
    strcpy(longnum + 280, "1.2.3.4");
    assert_addr(longnum, "1.2.3.4");
    assert_invalid("exa mple.com");
    assert_invalid("exa^mple.com");
    assert_invalid("exa|mple.com");
    assert_invalid("exa<mple.com");
    assert_invalid("ex\x7f"
                   "ample.com");
    assert_invalid("caf\xc3\xa9.com");
}

/* ---- IPv6 notations ---- */

static void ipv6_notations(void **state)
{
    (void)state;
    assert_addr("::1", "::1");
    assert_addr("[::1]", "::1");
    assert_addr("[::]", "::");
    assert_addr("::", "::");
    assert_addr("0:0:0:0:0:0:0:1", "::1");
    assert_addr("0000:0000:0000:0000:0000:0000:0000:0001", "::1");
    assert_addr("[::ffff:7f00:1]", "::ffff:127.0.0.1");
    assert_addr("::ffff:127.0.0.1", "::ffff:127.0.0.1");
    assert_addr("[0:0:0:0:0:ffff:127.0.0.1]", "::ffff:127.0.0.1");
    assert_addr("::FFFF:7F00:0001", "::ffff:127.0.0.1");
    assert_addr("::ffff:0:0", "::ffff:0.0.0.0");
    assert_addr("FE80::1", "fe80::1");
    assert_addr("2001:DB8::1", "2001:db8::1");
    assert_addr("1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0");
    assert_addr("::2:3:4:5:6:7:8", "0:2:3:4:5:6:7:8");
    assert_addr("1::", "1::");
    assert_addr("1::8", "1::8");
    assert_addr("1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304");
    assert_addr("1::1.2.3.4", "1::102:304");
    assert_addr("::1.2.3.4", "::102:304"); /* IPv4-compatible: hex, as RFC 5952 */
    assert_addr("64:ff9b::169.254.169.254", "64:ff9b::a9fe:a9fe");
    assert_addr("::ffff:0.0.0.0", "::ffff:0.0.0.0");
    assert_addr("::ffff:255.255.255.255", "::ffff:255.255.255.255");
    /* RFC 5952 section 4: the longest run, the first of equal runs, never a single 0. */
    assert_addr("2001:0db8:0:0:0:0:2:1", "2001:db8::2:1");
    assert_addr("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1");
    assert_addr("2001:0:0:1:0:0:0:1", "2001:0:0:1::1");
    assert_addr("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1");
    assert_addr("2001:db8::1:1:1:1:1", "2001:db8:0:1:1:1:1:1");
    assert_addr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
    assert_addr("fd00:ec2::254", "fd00:ec2::254");
}

static void ipv6_invalid(void **state)
{
    (void)state;
    /* The embedded IPv4 is strict: 4 decimal parts, no leading zeros. */
    assert_invalid("::ffff:127.0.0.01");
    assert_invalid("::ffff:127.0.1");
    assert_invalid("::ffff:0x7f.0.0.1");
    assert_invalid("::ffff:127.0.0.256");
    assert_invalid("::ffff:127.0.0.1.");
    assert_invalid("::1.2.3.4:5");
    assert_invalid("::.1.2.3");
    assert_invalid("1:2:3:4:5:6:7:1.2.3.4");
    /* Zone ids. */
    assert_invalid("fe80::1%eth0");
    assert_invalid("[fe80::1%25eth0]");
    assert_invalid("[fe80::1%eth0]");
    /* Groups. */
    assert_invalid("1:2:3:4:5:6:7:8:9");
    assert_invalid("1:2:3:4:5:6:7");
    assert_invalid("1:2:3:4:5:6:7:8::");
    assert_invalid("::1:2:3:4:5:6:7:8");
    assert_invalid("1::2::3");
    assert_invalid(":1::");
    assert_invalid(":");
    assert_invalid(":::");
    assert_invalid("1:");
    assert_invalid("1:::2");
    assert_invalid("12345::");
    assert_invalid("::g");
    assert_invalid("::-1");
    /* Brackets and ports. */
    assert_invalid("[::1");
    assert_invalid("::1]");
    assert_invalid("[]");
    assert_invalid("[");
    assert_invalid("[[::1]]");
    assert_invalid("[::1]:443");
    assert_invalid("[1.2.3.4]");
    assert_invalid("[example.com]");
    assert_invalid("[ ::1]");
    assert_invalid("::1 ");
}

/* Whatever the C library takes as a numeric host (getaddrinfo uses inet_aton and
 * inet_pton) is an address here too, the same one: a string never connects to an address
 * while the policy thinks it is a name. */
static void agrees_with_libc(void **state)
{
    (void)state;
    static const char *const hosts4[] = {
        "127.0.0.1", "0x7f.1",  "017700000001", "0177.0.0.01", "2130706433",  "127.1",
        "127.0.1",   "0",       "0xffffffff",   "1.0x10.0.1",  "192.168.257", "0x0.0",
        "00.00",     "1.2.3.4", "037777777777",
    };
    for (size_t i = 0; i < sizeof(hosts4) / sizeof(hosts4[0]); i++) {
        struct in_addr in;
        assert_int_equal(inet_aton(hosts4[i], &in), 1);
        pdk_ip ip = parse_ok(hosts4[i]);
        assert_int_equal(ip.family, AF_INET);
        assert_memory_equal(ip.bytes, &in, 4);
    }
    static const char *const hosts6[] = {
        "::1",
        "::",
        "::ffff:127.0.0.1",
        "1:2:3:4:5:6:7::",
        "::2:3:4:5:6:7:8",
        "1:2:3:4:5:6:1.2.3.4",
        "fe80::1",
        "2001:db8::",
        "64:ff9b::1.2.3.4",
    };
    for (size_t i = 0; i < sizeof(hosts6) / sizeof(hosts6[0]); i++) {
        struct in6_addr in6;
        assert_int_equal(inet_pton(AF_INET6, hosts6[i], &in6), 1);
        pdk_ip ip = parse_ok(hosts6[i]);
        assert_int_equal(ip.family, AF_INET6);
        assert_memory_equal(ip.bytes, &in6, 16);
    }
}

/* ---- Text ---- */

static void format_round_trip(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "0.0.0.0",
        "127.0.0.1",
        "255.255.255.255",
        "10.1.2.3",
        "::",
        "::1",
        "::ffff:127.0.0.1",
        "fe80::1",
        "2001:db8::1:0:0:1",
        "1:2:3:4:5:6:7:8",
        "1::",
        "0:1:2:3:4:5:6:7",
        "64:ff9b::a9fe:a9fe",
        "2002:a9fe:a9fe::",
        "::2",
        "::ffff:0.0.0.0",
        "ff02::1",
        "1:0:1:0:1:0:1:0",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        pdk_ip ip = parse_ok(texts[i]);
        char text[PDK_IP_TEXT_MAX];
        pdk_ip_format(&ip, text, sizeof(text));
        assert_string_equal(text, texts[i]);
        pdk_ip again = parse_ok(text);
        assert_true(pdk_ip_equal(&ip, &again));
        /* Same text as glibc's inet_ntop (no IPv4-compatible address in this list). */
        char libc[INET6_ADDRSTRLEN];
        assert_non_null(inet_ntop(ip.family, ip.bytes, libc, sizeof(libc)));
        assert_string_equal(text, libc);
    }
}

static void format_truncates(void **state)
{
    (void)state;
    pdk_ip ip = v4(127, 0, 0, 1);
    char buf[8];
    memset(buf, 'x', sizeof(buf));
    assert_int_equal(pdk_ip_format(&ip, buf, 5), 9);
    assert_string_equal(buf, "127.");
    assert_int_equal(buf[5], 'x');
    assert_int_equal(pdk_ip_format(&ip, buf, 0), 9);
    assert_int_equal(buf[0], '1');
    /* The longest text fits in PDK_IP_TEXT_MAX. */
    ip = parse_ok("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255");
    char text[PDK_IP_TEXT_MAX];
    assert_true(pdk_ip_format(&ip, text, sizeof(text)) < PDK_IP_TEXT_MAX);
    ip = parse_ok("::ffff:255.255.255.255");
    assert_true(pdk_ip_format(&ip, text, sizeof(text)) < PDK_IP_TEXT_MAX);
    /* An unknown family is "". */
    pdk_ip bad = {.family = AF_UNIX};
    memset(buf, 'x', sizeof(buf));
    assert_int_equal(pdk_ip_format(&bad, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "");
}

/* ---- Sockets ---- */

static void sockaddr_conversions(void **state)
{
    (void)state;
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(8080)};
    inet_pton(AF_INET, "10.1.2.3", &sin.sin_addr);
    pdk_ip ip;
    uint16_t port = 0;
    assert_true(pdk_ip_from_sockaddr((struct sockaddr *)&sin, sizeof(sin), &ip, &port));
    pdk_ip want = v4(10, 1, 2, 3);
    assert_true(pdk_ip_equal(&ip, &want));
    assert_int_equal(port, 8080);
    assert_true(pdk_ip_from_sockaddr((struct sockaddr *)&sin, sizeof(sin), &ip, NULL));

    struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(443)};
    sin6.sin6_scope_id = 2;
    sin6.sin6_flowinfo = htonl(7);
    inet_pton(AF_INET6, "fe80::1", &sin6.sin6_addr);
    assert_true(pdk_ip_from_sockaddr((struct sockaddr *)&sin6, sizeof(sin6), &ip, &port));
    want = parse_ok("fe80::1");
    assert_true(pdk_ip_equal(&ip, &want));
    assert_int_equal(port, 443);
    assert_int_equal(pdk_ip_classify(&ip), PDK_IP_LINK_LOCAL);

    /* A dual-stack socket's IPv4 peer, unmapped. */
    inet_pton(AF_INET6, "::ffff:169.254.169.254", &sin6.sin6_addr);
    assert_true(pdk_ip_from_sockaddr((struct sockaddr *)&sin6, sizeof(sin6), &ip, &port));
    assert_int_equal(ip.family, AF_INET6);
    assert_int_equal(pdk_ip_classify(&ip), PDK_IP_METADATA);
    pdk_ip_unmap(&ip);
    want = v4(169, 254, 169, 254);
    assert_true(pdk_ip_equal(&ip, &want));
    assert_int_equal(pdk_ip_classify(&ip), PDK_IP_METADATA);

    /* Short lengths and other families. */
    port = 9;
    assert_false(pdk_ip_from_sockaddr((struct sockaddr *)&sin, sizeof(sin) - 1, &ip, &port));
    assert_int_equal(ip.family, 0);
    assert_int_equal(port, 0);
    assert_false(pdk_ip_from_sockaddr((struct sockaddr *)&sin6, sizeof(sin6) - 1, &ip, NULL));
    assert_false(pdk_ip_from_sockaddr((struct sockaddr *)&sin6, 1, &ip, NULL));
    assert_false(pdk_ip_from_sockaddr(NULL, 0, &ip, NULL));
    struct sockaddr_un sun = {.sun_family = AF_UNIX, .sun_path = "/x"};
    assert_false(pdk_ip_from_sockaddr((struct sockaddr *)&sun, sizeof(sun), &ip, NULL));

    /* And back. */
    struct sockaddr_storage ss;
    pdk_ip a = v4(192, 0, 2, 1);
    assert_int_equal(pdk_ip_to_sockaddr(&a, 80, &ss), sizeof(struct sockaddr_in));
    struct sockaddr_in *out4 = (struct sockaddr_in *)&ss;
    assert_int_equal(out4->sin_family, AF_INET);
    assert_int_equal(ntohs(out4->sin_port), 80);
    assert_int_equal(ntohl(out4->sin_addr.s_addr), 0xc0000201);
    assert_true(pdk_ip_from_sockaddr((struct sockaddr *)&ss, sizeof(ss), &ip, &port));
    assert_true(pdk_ip_equal(&ip, &a));
    assert_int_equal(port, 80);

    pdk_ip b = parse_ok("2001:db8::5");
    assert_int_equal(pdk_ip_to_sockaddr(&b, 65535, &ss), sizeof(struct sockaddr_in6));
    struct sockaddr_in6 *out6 = (struct sockaddr_in6 *)&ss;
    assert_int_equal(out6->sin6_family, AF_INET6);
    assert_int_equal(ntohs(out6->sin6_port), 65535);
    assert_int_equal(out6->sin6_scope_id, 0);
    assert_memory_equal(&out6->sin6_addr, b.bytes, 16);
    assert_true(
        pdk_ip_from_sockaddr((struct sockaddr *)&ss, sizeof(struct sockaddr_in6), &ip, &port));
    assert_true(pdk_ip_equal(&ip, &b));
    assert_int_equal(port, 65535);

    pdk_ip bad = {.family = AF_UNIX};
    assert_int_equal(pdk_ip_to_sockaddr(&bad, 1, &ss), 0);
}

/* ---- Comparing ---- */

static void equal_and_unmap(void **state)
{
    (void)state;
    pdk_ip a = v4(1, 2, 3, 4);
    pdk_ip b = a;
    b.bytes[7] = 9; /* beyond an IPv4 address: not compared */
    assert_true(pdk_ip_equal(&a, &b));
    b.bytes[3] = 5;
    assert_false(pdk_ip_equal(&a, &b));

    pdk_ip m = parse_ok("::ffff:1.2.3.4");
    assert_false(pdk_ip_equal(&a, &m));
    pdk_ip_unmap(&m);
    assert_true(pdk_ip_equal(&a, &m));
    static const uint8_t want[16] = {1, 2, 3, 4};
    assert_memory_equal(m.bytes, want, 16);
    /* Only IPv4-mapped is unmapped. */
    pdk_ip c = parse_ok("::1.2.3.4");
    pdk_ip c2 = c;
    pdk_ip_unmap(&c2);
    assert_true(pdk_ip_equal(&c, &c2));
    pdk_ip_unmap(&a);
    assert_int_equal(a.family, AF_INET);
    pdk_ip n = parse_ok("64:ff9b::1.2.3.4");
    pdk_ip_unmap(&n);
    assert_int_equal(n.family, AF_INET6);
}

/* ---- Classes ---- */

#define PUB  PDK_IP_PUBLIC
#define UNSP PDK_IP_UNSPECIFIED
#define LOOP PDK_IP_LOOPBACK
#define PRIV PDK_IP_PRIVATE
#define LINK PDK_IP_LINK_LOCAL
#define SHAR PDK_IP_SHARED
#define MCST PDK_IP_MULTICAST
#define BCST PDK_IP_BROADCAST
#define RSVD PDK_IP_RESERVED
#define META PDK_IP_METADATA

struct class_case {
    const char *host;
    pdk_ip_class cls;
};

static void check_cases(const struct class_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_class(cases[i].host, cases[i].cls);
}

static void classes_ipv4(void **state)
{
    (void)state;
    static const struct class_case cases[] = {
        {"0.0.0.0", UNSP},
        {"0.255.255.255", UNSP},
        {"1.0.0.0", PUB},
        {"9.255.255.255", PUB},
        {"10.0.0.0", PRIV},
        {"10.255.255.255", PRIV},
        {"11.0.0.0", PUB},
        {"100.63.255.255", PUB},
        {"100.64.0.0", SHAR},
        {"100.127.255.255", SHAR},
        {"100.128.0.0", PUB},
        {"100.100.100.199", SHAR},
        {"100.100.100.200", META},
        {"100.100.100.201", SHAR},
        {"126.255.255.255", PUB},
        {"127.0.0.0", LOOP},
        {"127.0.0.1", LOOP},
        {"127.255.255.255", LOOP},
        {"128.0.0.0", PUB},
        {"169.253.255.255", PUB},
        {"169.254.0.0", LINK},
        {"169.254.255.255", LINK},
        {"169.255.0.0", PUB},
        {"169.254.169.253", LINK},
        {"169.254.169.254", META},
        {"169.254.169.255", LINK},
        {"172.15.255.255", PUB},
        {"172.16.0.0", PRIV},
        {"172.31.255.255", PRIV},
        {"172.32.0.0", PUB},
        {"191.255.255.255", PUB},
        {"192.0.0.0", RSVD},
        {"192.0.0.255", RSVD},
        {"192.0.1.0", PUB},
        {"192.0.1.255", PUB},
        {"192.0.2.0", RSVD},
        {"192.0.2.255", RSVD},
        {"192.0.3.0", PUB},
        {"192.88.98.255", PUB},
        {"192.88.99.0", RSVD},
        {"192.88.99.255", RSVD},
        {"192.88.100.0", PUB},
        {"192.167.255.255", PUB},
        {"192.168.0.0", PRIV},
        {"192.168.255.255", PRIV},
        {"192.169.0.0", PUB},
        {"198.17.255.255", PUB},
        {"198.18.0.0", RSVD},
        {"198.19.255.255", RSVD},
        {"198.20.0.0", PUB},
        {"198.51.99.255", PUB},
        {"198.51.100.0", RSVD},
        {"198.51.100.255", RSVD},
        {"198.51.101.0", PUB},
        {"203.0.112.255", PUB},
        {"203.0.113.0", RSVD},
        {"203.0.113.255", RSVD},
        {"203.0.114.0", PUB},
        {"223.255.255.255", PUB},
        {"224.0.0.0", MCST},
        {"239.255.255.255", MCST},
        {"240.0.0.0", RSVD},
        {"255.255.255.254", RSVD},
        {"255.255.255.255", BCST},
        {"8.8.8.8", PUB},
        {"1.1.1.1", PUB},
        /* Other notations of the same addresses classify the same. */
        {"0x7f.1", LOOP},
        {"2130706433", LOOP},
        {"0xa9fea9fe", META},
        {"169.254.43518", META},
        {"0", UNSP},
        {"0xffffffff", BCST},
        {"012.1", PRIV},
        {"0xac.0x1f.0xff.0xff", PRIV},
    };
    check_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

static void classes_ipv6(void **state)
{
    (void)state;
    static const struct class_case cases[] = {
        {"::", UNSP},
        {"::1", LOOP},
        {"[::1]", LOOP},
        {"0:0:0:0:0:0:0:1", LOOP},
        /* fc00::/7 (including fd00::/8), with the AWS metadata address inside. */
        {"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", RSVD},
        {"fc00::", PRIV},
        {"fd00::", PRIV},
        {"fd12:3456::1", PRIV},
        {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", PRIV},
        {"fd00:ec2::253", PRIV},
        {"fd00:ec2::254", META},
        {"fd00:ec2::255", PRIV},
        {"fe00::", RSVD},
        {"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", RSVD},
        {"fe80::", LINK},
        {"fe80::1", LINK},
        {"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", LINK},
        {"fec0::", PRIV},
        {"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", PRIV},
        {"ff00::", MCST},
        {"ff02::1", MCST},
        {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", MCST},
        /* 2000::/3 is global unicast; outside it, unallocated. */
        {"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", RSVD},
        {"2000::", PUB},
        {"2606:4700:4700::1111", PUB},
        {"2a00:1450:4001::1", PUB},
        {"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", PUB},
        {"3fff::", RSVD},
        {"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", RSVD},
        {"3fff:1000::", PUB},
        {"4000::", RSVD},
        {"::1:0:0:0", RSVD},
        /* 100::/64 discard. */
        {"100::", RSVD},
        {"100::ffff:ffff:ffff:ffff", RSVD},
        {"100:0:0:1::", RSVD},
        /* 2001:db8::/32 documentation. */
        {"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", PUB},
        {"2001:db8::", RSVD},
        {"2001:db8::1", RSVD},
        {"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", RSVD},
        {"2001:db9::", PUB},
        /* 2001:2::/48 benchmarking, 2001:10::/28 and 2001:20::/28 ORCHID. */
        {"2001:1:ffff:ffff:ffff:ffff:ffff:ffff", PUB},
        {"2001:2::", RSVD},
        {"2001:2:0:ffff:ffff:ffff:ffff:ffff", RSVD},
        {"2001:2:1::", PUB},
        {"2001:f:ffff:ffff:ffff:ffff:ffff:ffff", PUB},
        {"2001:10::", RSVD},
        {"2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", RSVD},
        {"2001:30::", PUB},
        /* IPv4-mapped: the IPv4 address's class. */
        {"::ffff:0.0.0.0", UNSP},
        {"::ffff:8.8.8.8", PUB},
        {"::ffff:127.0.0.1", LOOP},
        {"[::ffff:7f00:1]", LOOP},
        {"[0:0:0:0:0:ffff:127.0.0.1]", LOOP},
        {"::ffff:10.0.0.1", PRIV},
        {"::ffff:169.254.169.254", META},
        {"::ffff:100.64.0.1", SHAR},
        {"::ffff:224.0.0.1", MCST},
        {"::ffff:255.255.255.255", BCST},
        {"::ffff:192.0.2.1", RSVD},
        {"::fffe:808:808", RSVD},   /* not mapped: ::/8 unallocated */
        {"::ffff:0:808:808", RSVD}, /* SIIT IPv4-translated: unallocated here, refused */
        /* IPv4-compatible ::a.b.c.d (but :: and ::1 are themselves). */
        {"::8.8.8.8", PUB},
        {"::127.0.0.1", LOOP},
        {"::a9fe:a9fe", META},
        {"::10.0.0.1", PRIV},
        {"::2", UNSP},
        {"::ffff", UNSP},
        /* NAT64. */
        {"64:ff9b::808:808", PUB},
        {"64:ff9b::8.8.8.8", PUB},
        {"64:ff9b::a9fe:a9fe", META},
        {"64:ff9b::169.254.169.254", META},
        {"64:ff9b::7f00:1", LOOP},
        {"64:ff9b::c0a8:1", PRIV},
        {"64:ff9b::1:808:808", RSVD}, /* not the /96: unallocated */
        {"64:ff9b:1::808:808", PUB},
        {"64:ff9b:1:ffff:ffff:ffff:a9fe:a9fe", META},
        {"64:ff9b:1::a00:1", PRIV},
        {"64:ff9b:2::808:808", RSVD},
        /* 6to4: bits 16-47. */
        {"2002:808:808::", PUB},
        {"2002:a9fe:a9fe::", META},
        {"2002:a9fe:a9fe:1:2:3:4:5", META},
        {"2002:7f00:1::", LOOP},
        {"2002:c0a8:101::1", PRIV},
        {"2002::", UNSP},
        {"2002:ffff:ffff::", BCST},
        {"2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", PUB},
        {"2003::", PUB},
        /* Teredo: the client address is NOT the last 32 bits (RFC 4380 example: server
         * 65.54.227.120, client 192.0.2.45). */
        {"2001:0:4136:e378:8000:63bf:3fff:fdd2", RSVD},
        {"2001:0:4136:e378:8000:63bf:f7f7:f7f7", PUB},
        {"2001:0:4136:e378:8000:63bf:5601:5601", META},
        {"2001:0:4136:e378:8000:63bf:80ff:fffe", LOOP},
        {"2001:0:4136:e378:8000:63bf:f5ff:fffe", PRIV},
        {"2001::", BCST},
        {"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", UNSP},
        {"2001:1::", PUB},
    };
    check_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

static void embedding(void **state)
{
    (void)state;
    static const struct {
        const char *host;
        pdk_ip_embedding e;
        const char *name;
        const char *v4;
    } cases[] = {
        {"::ffff:127.0.0.1", PDK_IP_EMBED_MAPPED, "IPv4-mapped", "127.0.0.1"},
        {"::1.2.3.4", PDK_IP_EMBED_COMPATIBLE, "IPv4-compatible", "1.2.3.4"},
        {"64:ff9b::a9fe:a9fe", PDK_IP_EMBED_NAT64, "NAT64", "169.254.169.254"},
        {"64:ff9b:1:2:3:4:808:808", PDK_IP_EMBED_NAT64, "NAT64", "8.8.8.8"},
        {"2002:a9fe:a9fe::", PDK_IP_EMBED_6TO4, "6to4", "169.254.169.254"},
        {"2001:0:4136:e378:8000:63bf:3fff:fdd2", PDK_IP_EMBED_TEREDO, "Teredo", "192.0.2.45"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pdk_ip ip = parse_ok(cases[i].host);
        pdk_ip inner;
        assert_int_equal(pdk_ip_embedded_v4(&ip, &inner), cases[i].e);
        assert_string_equal(pdk_ip_embedding_name(cases[i].e), cases[i].name);
        char text[PDK_IP_TEXT_MAX];
        pdk_ip_format(&inner, text, sizeof(text));
        assert_string_equal(text, cases[i].v4);
        assert_int_equal(pdk_ip_embedded_v4(&ip, NULL), cases[i].e);
    }
    static const char *const none[] = {
        "::", "::1", "1.2.3.4", "2001:db8::1", "fe80::1", "64:ff9b::1:1.2.3.4", "2001:1::1"};
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        pdk_ip ip = parse_ok(none[i]);
        pdk_ip inner;
        memset(&inner, 0xa5, sizeof(inner));
        assert_int_equal(pdk_ip_embedded_v4(&ip, &inner), PDK_IP_EMBED_NONE);
        assert_int_equal(inner.family, 0);
    }
    assert_string_equal(pdk_ip_embedding_name(PDK_IP_EMBED_NONE), "none");
}

static void class_names_and_defaults(void **state)
{
    (void)state;
    static const struct {
        pdk_ip_class cls;
        const char *name;
    } names[] = {
        {PUB, "public"},      {UNSP, "unspecified"}, {LOOP, "loopback"},  {PRIV, "private"},
        {LINK, "link-local"}, {SHAR, "shared"},      {MCST, "multicast"}, {BCST, "broadcast"},
        {RSVD, "reserved"},   {META, "metadata"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        assert_string_equal(pdk_ip_class_name(names[i].cls), names[i].name);
        assert_int_equal(pdk_ip_class_allowed_by_default(names[i].cls), names[i].cls == PUB);
    }
    assert_string_equal(pdk_host_kind_name(PDK_HOST_INVALID), "invalid");
    assert_string_equal(pdk_host_kind_name(PDK_HOST_ADDRESS), "address");
    assert_string_equal(pdk_host_kind_name(PDK_HOST_NAME), "name");
    /* An unknown family is refused. */
    pdk_ip bad = {.family = AF_UNIX};
    assert_int_equal(pdk_ip_classify(&bad), RSVD);
    assert_false(pdk_ip_class_allowed_by_default(pdk_ip_classify(&bad)));
}

static void assert_describe(const char *host, const char *want)
{
    pdk_ip ip = parse_ok(host);
    char buf[PDK_IP_DESCRIBE_MAX];
    size_t n = pdk_ip_describe(&ip, buf, sizeof(buf));
    assert_string_equal(buf, want);
    assert_int_equal(n, strlen(want));
}

static void describe(void **state)
{
    (void)state;
    assert_describe("169.254.169.254", "169.254.169.254 is a cloud metadata address");
    assert_describe("0xa9fea9fe", "169.254.169.254 is a cloud metadata address");
    assert_describe("8.8.8.8", "8.8.8.8 is a public address");
    assert_describe("127.1", "127.0.0.1 is a loopback address");
    assert_describe("[::ffff:7f00:1]",
                    "::ffff:127.0.0.1 is a loopback address (IPv4-mapped address of 127.0.0.1)");
    assert_describe("64:ff9b::a9fe:a9fe", "64:ff9b::a9fe:a9fe is a cloud metadata address "
                                          "(NAT64 address of 169.254.169.254)");
    assert_describe("2001:0:4136:e378:8000:63bf:3fff:fdd2",
                    "2001:0:4136:e378:8000:63bf:3fff:fdd2 is a reserved (documentation, "
                    "benchmarking or unallocated) address (Teredo address of 192.0.2.45)");
    assert_describe("10.0.0.1", "10.0.0.1 is a private-network address");
    assert_describe("fe80::1", "fe80::1 is a link-local address");
    assert_describe("100.64.0.1", "100.64.0.1 is a carrier-grade NAT (shared) address");
    assert_describe("255.255.255.255", "255.255.255.255 is the broadcast address");
    assert_describe("ff02::1", "ff02::1 is a multicast address");
    assert_describe("0.0.0.0", "0.0.0.0 is an unspecified address (this host)");

    /* The longest sentences fit. */
    static const char *const long_ones[] = {
        "2002:f0ff:ffff:ffff:ffff:ffff:ffff:ffff",
        "2001:0:ffff:ffff:ffff:ffff:0f00:0000",
        "64:ff9b:1:ffff:ffff:ffff:f0ff:ffff",
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        "::ffff:240.255.255.255",
        "::f0ff:ffff",
        "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff",
    };
    for (size_t i = 0; i < sizeof(long_ones) / sizeof(long_ones[0]); i++) {
        pdk_ip ip = parse_ok(long_ones[i]);
        char buf[PDK_IP_DESCRIBE_MAX];
        assert_true(pdk_ip_describe(&ip, buf, sizeof(buf)) < PDK_IP_DESCRIBE_MAX);
        assert_null(strchr(buf, '\n'));
    }
    /* Truncation is snprintf's. */
    pdk_ip ip = v4(127, 0, 0, 1);
    char small[10];
    assert_int_equal(pdk_ip_describe(&ip, small, sizeof(small)),
                     strlen("127.0.0.1 is a loopback address"));
    assert_string_equal(small, "127.0.0.1");
    pdk_ip bad = {.family = 77};
    char buf[PDK_IP_DESCRIBE_MAX];
    pdk_ip_describe(&bad, buf, sizeof(buf));
    assert_string_equal(buf, "an address of unknown family 77 is a reserved (documentation, "
                             "benchmarking or unallocated) address");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ipv4_notations),
        cmocka_unit_test(ipv4_invalid),
        cmocka_unit_test(embedded_nul),
        cmocka_unit_test(names),
        cmocka_unit_test(ipv6_notations),
        cmocka_unit_test(ipv6_invalid),
        cmocka_unit_test(agrees_with_libc),
        cmocka_unit_test(format_round_trip),
        cmocka_unit_test(format_truncates),
        cmocka_unit_test(sockaddr_conversions),
        cmocka_unit_test(equal_and_unmap),
        cmocka_unit_test(classes_ipv4),
        cmocka_unit_test(classes_ipv6),
        cmocka_unit_test(embedding),
        cmocka_unit_test(class_names_and_defaults),
        cmocka_unit_test(describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
