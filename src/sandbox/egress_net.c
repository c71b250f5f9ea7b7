/* egress_net.c: see egress_net.h. */
#include "egress_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ip route add local 198.18.0.0/15 dev lo table local: connects to a fake address are
 * delivered here, to whichever socket listens on its port. */
static int add_fake_route(void)
{
    int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (s < 0)
        return -1;
    struct {
        struct nlmsghdr nh;
        struct rtmsg rt;
        char attrs[64];
    } req;
    memset(&req, 0, sizeof(req));
    req.nh.nlmsg_type = RTM_NEWROUTE;
    req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
    req.nh.nlmsg_seq = 1;
    req.rt.rtm_family = AF_INET;
    req.rt.rtm_dst_len = PDK_EGRESS_FAKE_BITS;
    req.rt.rtm_table = RT_TABLE_LOCAL;
    req.rt.rtm_protocol = RTPROT_BOOT;
    req.rt.rtm_scope = RT_SCOPE_HOST;
    req.rt.rtm_type = RTN_LOCAL;
    size_t len = NLMSG_LENGTH(sizeof(struct rtmsg));
    uint32_t dst = htonl(PDK_EGRESS_FAKE_NET);
    int oif = (int)if_nametoindex("lo");
    if (oif <= 0)
        oif = 1;
    struct rtattr *a = (struct rtattr *)((char *)&req + NLMSG_ALIGN(len));
    a->rta_type = RTA_DST;
    a->rta_len = RTA_LENGTH(sizeof(dst));
    memcpy(RTA_DATA(a), &dst, sizeof(dst));
    len = NLMSG_ALIGN(len) + RTA_ALIGN(a->rta_len);
    a = (struct rtattr *)((char *)&req + len);
    a->rta_type = RTA_OIF;
    a->rta_len = RTA_LENGTH(sizeof(oif));
    memcpy(RTA_DATA(a), &oif, sizeof(oif));
    len += RTA_ALIGN(a->rta_len);
    req.nh.nlmsg_len = (uint32_t)len;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(s, &req, len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
        int e = errno;
        close(s);
        errno = e;
        return -1;
    }
    char buf[512];
    ssize_t n = recv(s, buf, sizeof(buf), 0);
    int e = n < 0 ? errno : 0;
    close(s);
    if (n < 0) {
        errno = e;
        return -1;
    }
    struct nlmsghdr *h = (struct nlmsghdr *)buf;
    if (!NLMSG_OK(h, (size_t)n) || h->nlmsg_type != NLMSG_ERROR) {
        errno = EPROTO;
        return -1;
    }
    struct nlmsgerr *ne = NLMSG_DATA(h);
    if (ne->error != 0) {
        errno = -ne->error;
        return -1;
    }
    return 0;
}

static int listen_on(int type, uint32_t addr, uint16_t port)
{
    int s = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    int one = 1;
    (void)setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(addr)};
    if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        (type == SOCK_STREAM && listen(s, 4096) < 0)) {
        int e = errno;
        close(s);
        errno = e;
        return -1;
    }
    return s;
}

int pdk_egress_net_setup(const uint16_t *capture_ports, size_t nports, pdk_egress_socket *out,
                         size_t *count, const char **what)
{
    *count = 0;
    if (add_fake_route() < 0) {
        *what = "routing the fake addresses (198.18.0.0/15) to loopback";
        return -1;
    }
    struct {
        pdk_egress_kind kind;
        int type;
        uint32_t addr;
        uint16_t port;
    } want[PDK_EGRESS_MAX_SOCKETS];
    size_t n = 0;
    want[n++] =
        (typeof(want[0])){PDK_EGRESS_PROXY, SOCK_STREAM, INADDR_LOOPBACK, PDK_EGRESS_PROXY_PORT};
    want[n++] =
        (typeof(want[0])){PDK_EGRESS_DNS_UDP, SOCK_DGRAM, INADDR_LOOPBACK, PDK_EGRESS_DNS_PORT};
    want[n++] =
        (typeof(want[0])){PDK_EGRESS_DNS_TCP, SOCK_STREAM, INADDR_LOOPBACK, PDK_EGRESS_DNS_PORT};
    for (size_t i = 0; i < nports && n < PDK_EGRESS_MAX_SOCKETS; i++) {
        uint16_t p = capture_ports[i];
        if (p == 0 || p == PDK_EGRESS_DNS_PORT || p == PDK_EGRESS_PROXY_PORT)
            continue;
        want[n++] = (typeof(want[0])){PDK_EGRESS_CAPTURE, SOCK_STREAM, INADDR_ANY, p};
    }
    for (size_t i = 0; i < n; i++) {
        int fd = listen_on(want[i].type, want[i].addr, want[i].port);
        if (fd < 0) {
            int e = errno;
            for (size_t j = 0; j < *count; j++)
                close(out[j].fd);
            *count = 0;
            errno = e;
            *what = want[i].kind == PDK_EGRESS_PROXY     ? "listening on 127.0.0.1:3128 (the proxy)"
                    : want[i].kind == PDK_EGRESS_CAPTURE ? "listening for captured connections"
                                                         : "listening on 127.0.0.1:53 (DNS)";
            return -1;
        }
        out[(*count)++] = (pdk_egress_socket){want[i].kind, want[i].port, fd};
    }
    /* Optional: without it the process behind a connection stays unknown. */
    int diag = *count < PDK_EGRESS_MAX_SOCKETS
                   ? socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)
                   : -1;
    if (diag >= 0)
        out[(*count)++] = (pdk_egress_socket){PDK_EGRESS_DIAG, 0, diag};
    return 0;
}

static const char *const kind_names[] = {
    [PDK_EGRESS_PROXY] = "proxy",     [PDK_EGRESS_DNS_UDP] = "dns-udp",
    [PDK_EGRESS_DNS_TCP] = "dns-tcp", [PDK_EGRESS_CAPTURE] = "capture",
    [PDK_EGRESS_DIAG] = "diag",
};

void pdk_egress_describe(const pdk_egress_socket *socks, size_t count, char *text, size_t size)
{
    size_t used = 0;
    text[0] = '\0';
    for (size_t i = 0; i < count && used < size; i++) {
        int w = snprintf(text + used, size - used, "%s %u\n", kind_names[socks[i].kind],
                         (unsigned)socks[i].port);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

bool pdk_egress_parse(const char *text, const int *fds, size_t count, pdk_egress_socket *out)
{
    const char *p = text;
    for (size_t i = 0; i < count; i++) {
        const char *nl = strchr(p, '\n');
        const char *sp = strchr(p, ' ');
        if (!nl || !sp || sp > nl)
            return false;
        size_t klen = (size_t)(sp - p);
        int kind = -1;
        for (size_t k = 0; k < sizeof(kind_names) / sizeof(*kind_names); k++)
            if (strlen(kind_names[k]) == klen && strncmp(kind_names[k], p, klen) == 0)
                kind = (int)k;
        char *end = NULL;
        long port = strtol(sp + 1, &end, 10);
        if (kind < 0 || end != nl || port < 0 || port > 65535 ||
            (port == 0) != (kind == PDK_EGRESS_DIAG))
            return false;
        out[i] = (pdk_egress_socket){(pdk_egress_kind)kind, (uint16_t)port, fds[i]};
        p = nl + 1;
    }
    return *p == '\0';
}
