/* gateway_owner.c: the process behind a connection (gateway_internal.h). */
#include "gateway_internal.h"

#include <dirent.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

#define OWNERS     4096 /* slots of the inode -> process table (a power of two) */
#define SCAN_MAX   512  /* processes looked at in one scan */
#define SCAN_EVERY (20 * 1000000ULL)

struct sock_owner {
    unsigned long inode;
    pid_t pid;
    char comm[16];
};

/* The inode of the sandbox's socket at the other end of connection fd (sock_diag in the
 * sandbox's netns), or 0. */
static unsigned long peer_inode(pdk_gateway *g, int fd)
{
    struct sockaddr_in local, peer;
    socklen_t ll = sizeof(local), pl = sizeof(peer);
    if (g->diag_fd < 0 || getsockname(fd, (struct sockaddr *)&local, &ll) < 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 || local.sin_family != AF_INET ||
        peer.sin_family != AF_INET)
        return 0;
    struct {
        struct nlmsghdr nh;
        struct inet_diag_req_v2 r;
    } req;
    memset(&req, 0, sizeof(req));
    req.nh.nlmsg_len = sizeof(req);
    req.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.nh.nlmsg_flags = NLM_F_REQUEST;
    req.nh.nlmsg_seq = ++g->diag_seq;
    req.r.sdiag_family = AF_INET;
    req.r.sdiag_protocol = IPPROTO_TCP;
    req.r.idiag_states = ~0U;
    req.r.id.idiag_sport = peer.sin_port; /* the sandbox's socket: from its port to ours */
    req.r.id.idiag_dport = local.sin_port;
    req.r.id.idiag_src[0] = peer.sin_addr.s_addr;
    req.r.id.idiag_dst[0] = local.sin_addr.s_addr;
    req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    if (send(g->diag_fd, &req, sizeof(req), 0) < 0)
        return 0;
    char buf[1024];
    ssize_t n = recv(g->diag_fd, buf, sizeof(buf), 0);
    struct nlmsghdr *h = (struct nlmsghdr *)buf;
    if (n <= 0 || !NLMSG_OK(h, (size_t)n) || h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
        h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
        return 0;
    return ((struct inet_diag_msg *)NLMSG_DATA(h))->idiag_inode;
}

static struct sock_owner *owner_slot(struct sock_owner *t, unsigned long inode)
{
    size_t i = (size_t)(inode * 2654435761u) & (OWNERS - 1);
    for (size_t k = 0; k < OWNERS; k++, i = (i + 1) & (OWNERS - 1))
        if (t[i].inode == inode || t[i].inode == 0)
            return &t[i];
    return NULL;
}

/* Every socket of the sandbox's processes (init's descendants), into the table. */
static void scan_owners(pdk_gateway *g)
{
    memset(g->owners, 0, OWNERS * sizeof(*g->owners));
    pid_t queue[SCAN_MAX];
    size_t head = 0, tail = 0;
    queue[tail++] = g->init_pid;
    while (head < tail) {
        pid_t pid = queue[head++];
        char path[64], comm[16] = "";
        snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
        int cf = open(path, O_RDONLY | O_CLOEXEC);
        if (cf >= 0) {
            ssize_t r = read(cf, comm, sizeof(comm) - 1);
            comm[r > 0 ? r : 0] = '\0';
            char *nl = strchr(comm, '\n');
            if (nl)
                *nl = '\0';
            close(cf);
        }
        snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
        DIR *d = opendir(path);
        for (struct dirent *e; d && (e = readdir(d));) {
            char link[300], target[64];
            if (e->d_name[0] == '.')
                continue;
            snprintf(link, sizeof(link), "/proc/%d/fd/%s", (int)pid, e->d_name);
            ssize_t len = readlink(link, target, sizeof(target) - 1);
            unsigned long inode;
            if (len <= 0)
                continue;
            target[len] = '\0';
            if (sscanf(target, "socket:[%lu]", &inode) != 1)
                continue;
            struct sock_owner *o = owner_slot(g->owners, inode);
            if (o && o->inode == 0) {
                *o = (struct sock_owner){.inode = inode, .pid = pid};
                snprintf(o->comm, sizeof(o->comm), "%s", comm);
            }
        }
        if (d)
            closedir(d);
        /* children of every thread */
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        DIR *tasks = opendir(path);
        for (struct dirent *t; tasks && (t = readdir(tasks));) {
            if (t->d_name[0] == '.')
                continue;
            char cpath[320], kids[4096];
            snprintf(cpath, sizeof(cpath), "/proc/%d/task/%s/children", (int)pid, t->d_name);
            int kf = open(cpath, O_RDONLY | O_CLOEXEC);
            if (kf < 0)
                continue;
            ssize_t r = read(kf, kids, sizeof(kids) - 1);
            close(kf);
            kids[r > 0 ? r : 0] = '\0';
            for (char *p = kids, *end; *p && tail < SCAN_MAX; p = end) {
                long k = strtol(p, &end, 10);
                if (end == p)
                    break;
                if (k > 0)
                    queue[tail++] = (pid_t)k;
            }
        }
        if (tasks)
            closedir(tasks);
    }
    g->scanned_ns = pdk_now_monotonic_ns();
}

/* Which process of the sandbox made the connection (once a connection; unknown when the
 * socket was made since the last scan and another scan is too recent). */
struct sock_owner *pdk__gw_owners_new(void)
{
    return xcalloc(OWNERS, sizeof(struct sock_owner));
}

void pdk__gw_conn_owner(gw_conn *c)
{
    pdk_gateway *g = c->g;
    if (c->owner_looked)
        return;
    c->owner_looked = true;
    if (!g->owners || g->init_pid <= 0)
        return;
    struct bufferevent *raw = bufferevent_get_underlying(c->client);
    unsigned long inode = peer_inode(g, bufferevent_getfd(raw ? raw : c->client));
    if (!inode)
        return;
    struct sock_owner *o = owner_slot(g->owners, inode);
    if ((!o || o->inode != inode) && pdk_now_monotonic_ns() - g->scanned_ns >= SCAN_EVERY) {
        scan_owners(g);
        o = owner_slot(g->owners, inode);
    }
    if (o && o->inode == inode) {
        c->pid = o->pid;
        snprintf(c->comm, sizeof(c->comm), "%s", o->comm);
    }
}
