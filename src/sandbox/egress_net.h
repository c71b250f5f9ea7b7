/* egress_net.h: the sandbox's side of the egress gateway, made inside its network
 * namespace by init (before it drops its capabilities): a route that delivers the fake
 * addresses of the DNS stub (198.18.0.0/15) to loopback, and the listening sockets the
 * supervisor serves from outside. A socket stays in the namespace it was made in, so the
 * supervisor serves them from its own event loop with no process, socat or bridge inside,
 * and they listen before the command starts (connections wait in the backlog).
 *
 *   127.0.0.1:3128  the explicit proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY)
 *   127.0.0.1:53    the DNS stub, UDP and TCP (the sandbox's /etc/resolv.conf names it)
 *   0.0.0.0:PORT    transparent capture of connects to fake addresses, one per captured
 *                   port (80, 443 and the ports the rules name); the original destination
 *                   is the accepted socket's getsockname()
 *
 * and a sock_diag netlink socket of the namespace, through which the supervisor finds the
 * socket (and so the process) a connection comes from.
 *
 * Everything else has no route: the namespace has loopback only, so a connect to any other
 * address fails (ENETUNREACH), and UDP other than to the stub, raw sockets and IPv6 have
 * nowhere to go.
 */
#ifndef PADDOCK_EGRESS_NET_H
#define PADDOCK_EGRESS_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PDK_EGRESS_PROXY_PORT  3128
#define PDK_EGRESS_DNS_PORT    53
#define PDK_EGRESS_FAKE_NET    0xC6120000u /* 198.18.0.0 */
#define PDK_EGRESS_FAKE_BITS   15
#define PDK_EGRESS_MAX_SOCKETS 64

typedef enum pdk_egress_kind {
    PDK_EGRESS_PROXY,
    PDK_EGRESS_DNS_UDP,
    PDK_EGRESS_DNS_TCP,
    PDK_EGRESS_CAPTURE,
    PDK_EGRESS_DIAG, /* a NETLINK_SOCK_DIAG socket: which socket (and so which process) a
                      * connection came from */
} pdk_egress_kind;

typedef struct pdk_egress_socket {
    pdk_egress_kind kind;
    uint16_t port;
    int fd; /* non-blocking, close-on-exec */
} pdk_egress_socket;

/* Whether the IPv4 address (host order) is one of the fake addresses. */
static inline bool pdk_egress_is_fake(uint32_t addr)
{
    return (addr >> (32 - PDK_EGRESS_FAKE_BITS)) ==
           (PDK_EGRESS_FAKE_NET >> (32 - PDK_EGRESS_FAKE_BITS));
}

/* In the sandbox's network namespace: the route and the sockets, capturing the given
 * ports (ports 53 and 3128 cannot be captured: they are the stub's and the proxy's).
 * out gets *count entries (at most PDK_EGRESS_MAX_SOCKETS). Returns 0, or -1 with errno and
 * *what saying which step failed (the sockets made so far are closed). */
int pdk_egress_net_setup(const uint16_t *capture_ports, size_t nports, pdk_egress_socket *out,
                         size_t *count, const char **what);

/* The text of the message that carries the sockets to the supervisor: one line a socket,
 * in fd order ("proxy 3128", "dns-udp 53", "dns-tcp 53", "capture 443"); and back. */
void pdk_egress_describe(const pdk_egress_socket *socks, size_t count, char *text, size_t size);
/* Parse text into kinds and ports for count fds; false when it does not describe them. */
bool pdk_egress_parse(const char *text, const int *fds, size_t count, pdk_egress_socket *out);

#endif
