/* test_egress_net.c: the gateway's sockets inside the sandbox's network namespace
 * (egress_net.c). The description that carries them to the supervisor parses back to the
 * same kinds and ports; anything else (an unknown kind, a port out of range or missing, a
 * diag socket with a port or another without one, fewer or more lines than fds, a line
 * without its end) is refused. The fake addresses are 198.18.0.0/15 and nothing beside. In
 * a network namespace of a child's own: the proxy, both DNS sockets and one listener per
 * captured port (never 53 or 3128 again), non-blocking and close-on-exec, and a connection
 * to a fake address lands on the capture listener. */
#include "egress_net.h"
#include "must_work.h"
#include "namespaces.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "child.h"

static void t_describe_parse(void **state)
{
    (void)state;
    pdk_egress_socket socks[] = {{PDK_EGRESS_PROXY, 3128, 10},   {PDK_EGRESS_DNS_UDP, 53, 11},
                                 {PDK_EGRESS_DNS_TCP, 53, 12},   {PDK_EGRESS_CAPTURE, 443, 13},
                                 {PDK_EGRESS_CAPTURE, 8080, 14}, {PDK_EGRESS_DIAG, 0, 15}};
    char text[512];
    pdk_egress_describe(socks, 6, text, sizeof(text));
    assert_string_equal(text,
                        "proxy 3128\ndns-udp 53\ndns-tcp 53\ncapture 443\ncapture 8080\ndiag 0\n");
    int fds[] = {20, 21, 22, 23, 24, 25};
    pdk_egress_socket back[6];
    assert_true(pdk_egress_parse(text, fds, 6, back));
    for (int i = 0; i < 6; i++) {
        assert_int_equal(back[i].kind, socks[i].kind);
        assert_int_equal(back[i].port, socks[i].port);
        assert_int_equal(back[i].fd, fds[i]); /* the fds received, not the sender's */
    }
    /* nothing to carry */
    pdk_egress_describe(socks, 0, text, sizeof(text));
    assert_string_equal(text, "");
    assert_true(pdk_egress_parse("", fds, 0, back));
}

static void t_parse_refuses(void **state)
{
    (void)state;
    int fds[4] = {3, 4, 5, 6};
    pdk_egress_socket out[4];
    const char *one[] = {
        "",               /* fewer lines than fds */
        "proxy 3128",     /* no end of line */
        "tunnel 443\n",   /* unknown kind */
        "proxy 65536\n",  /* out of range */
        "proxy -1\n",     /* negative */
        "proxy\n",        /* no port */
        "proxy 31x\n",    /* not a number */
        "capture 0\n",    /* a listener without a port */
        "diag 5\n",       /* a diag socket with one */
        "proxy 3128\nx",  /* more than the fds */
        "proxy 3128\n\n", /* trailing text */
        "proxy3128\n",    /* no space */
        "proxy 3128 x\n", /* more after the port */
    };
    for (size_t i = 0; i < sizeof(one) / sizeof(*one); i++)
        if (pdk_egress_parse(one[i], fds, 1, out))
            fail_msg("accepted \"%s\"", one[i]);
    assert_false(pdk_egress_parse("proxy 3128\n", fds, 2, out));
    /* a truncated description never parses as a shorter one */
    pdk_egress_socket socks[] = {{PDK_EGRESS_PROXY, 3128, 1}, {PDK_EGRESS_CAPTURE, 443, 2}};
    char small[16];
    pdk_egress_describe(socks, 2, small, sizeof(small));
    assert_true(strlen(small) < sizeof(small));
    assert_false(pdk_egress_parse(small, fds, 2, out));
}

static void t_fake_addresses(void **state)
{
    (void)state;
    assert_true(pdk_egress_is_fake(0xC6120000u));  /* 198.18.0.0 */
    assert_true(pdk_egress_is_fake(0xC613FFFFu));  /* 198.19.255.255 */
    assert_false(pdk_egress_is_fake(0xC611FFFFu)); /* 198.17.255.255 */
    assert_false(pdk_egress_is_fake(0xC6140000u)); /* 198.20.0.0 */
    assert_false(pdk_egress_is_fake(0x7F000001u)); /* 127.0.0.1 */
}

static int nonblocking_cloexec(int fd)
{
    return (fcntl(fd, F_GETFL) & O_NONBLOCK) && (fcntl(fd, F_GETFD) & FD_CLOEXEC);
}

/* In the child, in a namespace of its own: 0, or what failed. */
static int setup_child(void)
{
    if (geteuid() != 0 && unshare(CLONE_NEWUSER) < 0)
        return 20;
    const char *what = NULL;
    int ns = pdk_netns_create(true, false, &what);
    if (ns < 0) {
        fprintf(stderr, "%s: %s\n", what, strerror(errno));
        return 21;
    }
    uint16_t ports[] = {443, 53, 3128, 0, 8443};
    pdk_egress_socket socks[PDK_EGRESS_MAX_SOCKETS];
    size_t n = 0;
    if (pdk_egress_net_setup(ports, 5, socks, &n, &what) < 0) {
        fprintf(stderr, "%s: %s\n", what, strerror(errno));
        return 22;
    }
    int captures = 0, proxies = 0, dns = 0, listener_443 = -1;
    for (size_t i = 0; i < n; i++) {
        if (!(fcntl(socks[i].fd, F_GETFD) & FD_CLOEXEC))
            return 1;
        if (socks[i].kind != PDK_EGRESS_DIAG && !nonblocking_cloexec(socks[i].fd))
            return 2;
        if (socks[i].kind == PDK_EGRESS_CAPTURE) {
            captures++;
            if (socks[i].port == 53 || socks[i].port == 3128 || socks[i].port == 0)
                return 3;
            if (socks[i].port == 443)
                listener_443 = socks[i].fd;
        }
        proxies += socks[i].kind == PDK_EGRESS_PROXY && socks[i].port == PDK_EGRESS_PROXY_PORT;
        dns += (socks[i].kind == PDK_EGRESS_DNS_UDP || socks[i].kind == PDK_EGRESS_DNS_TCP) &&
               socks[i].port == PDK_EGRESS_DNS_PORT;
    }
    if (captures != 2 || proxies != 1 || dns != 2 || listener_443 < 0)
        return 4;
    /* a connection to any fake address and a captured port reaches that port's listener */
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in to = {
        .sin_family = AF_INET, .sin_port = htons(443), .sin_addr.s_addr = htonl(0xC6120007u)};
    if (connect(c, (struct sockaddr *)&to, sizeof(to)) < 0) {
        fprintf(stderr, "connect: %s\n", strerror(errno));
        return 5;
    }
    struct sockaddr_in local;
    socklen_t len = sizeof(local);
    struct pollfd pfd = {.fd = listener_443, .events = POLLIN};
    if (poll(&pfd, 1, 10000) != 1)
        return 6;
    int a = accept4(listener_443, (struct sockaddr *)&local, &len, SOCK_CLOEXEC);
    if (a < 0)
        return 7;
    /* the address it was sent to is the fake one, for the gateway to look up */
    len = sizeof(local);
    getsockname(a, (struct sockaddr *)&local, &len);
    if (ntohl(local.sin_addr.s_addr) != 0xC6120007u)
        return 8;
    char text[1024];
    pdk_egress_describe(socks, n, text, sizeof(text));
    int fds[PDK_EGRESS_MAX_SOCKETS];
    for (size_t i = 0; i < n; i++)
        fds[i] = socks[i].fd;
    pdk_egress_socket back[PDK_EGRESS_MAX_SOCKETS];
    if (!pdk_egress_parse(text, fds, n, back))
        return 9;
    return 0;
}

static void t_setup_in_a_namespace(void **state)
{
    (void)state;
    pid_t probe = fork();
    if (probe == 0)
        _exit(unshare(geteuid() == 0 ? CLONE_NEWNET : CLONE_NEWUSER | CLONE_NEWNET) == 0 ? 0 : 1);
    int st;
    waitpid(probe, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        skip_or_fail("no network namespace can be made here");
    assert_in_child(setup_child);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_describe_parse),
        cmocka_unit_test(t_parse_refuses),
        cmocka_unit_test(t_fake_addresses),
        cmocka_unit_test(t_setup_in_a_namespace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
