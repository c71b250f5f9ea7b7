/* namespaces.c: see namespaces.h. */
#include "namespaces.h"

#include "syscalls.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* The first range of at least PDK_HOST_ID_COUNT ids given to "root" in an /etc/sub[ug]id
 * style file, else 0. */
static uint32_t subid_base(const char *file)
{
    FILE *f = fopen(file, "re");
    if (!f)
        return 0;
    char line[256];
    uint32_t base = 0;
    while (fgets(line, sizeof(line), f)) {
        char name[128];
        unsigned long start, count;
        if (sscanf(line, "%127[^:]:%lu:%lu", name, &start, &count) != 3)
            continue;
        if ((strcmp(name, "root") == 0 || strcmp(name, "0") == 0) && count >= PDK_HOST_ID_COUNT &&
            start > 0 && start < 0xffff0000ul) {
            base = (uint32_t)start;
            break;
        }
    }
    fclose(f);
    return base;
}

void pdk_idmap_init(pdk_idmap *map)
{
    memset(map, 0, sizeof(*map));
    map->inside_uid = getuid();
    map->inside_gid = getgid();
    if (geteuid() == 0) {
        map->privileged = true;
        uint32_t ubase = subid_base("/etc/subuid");
        uint32_t gbase = subid_base("/etc/subgid");
        map->host_uid_base = ubase ? ubase : PDK_HOST_ID_BASE;
        map->host_gid_base = gbase ? gbase : PDK_HOST_ID_BASE;
        map->count = PDK_HOST_ID_COUNT;
        if (map->inside_uid >= map->count)
            map->inside_uid = 0;
        if (map->inside_gid >= map->count)
            map->inside_gid = 0;
    } else {
        map->host_uid_base = getuid();
        map->host_gid_base = getgid();
        map->count = 1;
    }
}

pid_t pdk_clone3(uint64_t flags, int *pidfd, int cgroup_fd)
{
    struct clone_args args;
    memset(&args, 0, sizeof(args));
    args.flags = flags | CLONE_PIDFD;
    args.pidfd = (uint64_t)(uintptr_t)pidfd;
    args.exit_signal = SIGCHLD;
    if (cgroup_fd >= 0) {
        args.flags |= CLONE_INTO_CGROUP;
        args.cgroup = (uint64_t)cgroup_fd;
    }
    return pdk_sys_clone3(&args, sizeof(args));
}

static int write_proc(pid_t pid, const char *file, const char *content, pdk_error *err)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    if (pdk_write_file_at(AT_FDCWD, path, content) < 0)
        return pdk_error_set(err, errno, "cannot write %s (\"%s\")", path, content);
    return 0;
}

int pdk_idmap_write(const pdk_idmap *map, pid_t pid, pdk_error *err)
{
    char buf[128];
    if (map->privileged) {
        snprintf(buf, sizeof(buf), "0 %u %u\n", (unsigned)map->host_uid_base, (unsigned)map->count);
        if (write_proc(pid, "uid_map", buf, err) < 0)
            return -1;
        snprintf(buf, sizeof(buf), "0 %u %u\n", (unsigned)map->host_gid_base, (unsigned)map->count);
        return write_proc(pid, "gid_map", buf, err);
    }
    snprintf(buf, sizeof(buf), "%u %u 1\n", (unsigned)map->inside_uid,
             (unsigned)map->host_uid_base);
    if (write_proc(pid, "uid_map", buf, err) < 0)
        return -1;
    if (write_proc(pid, "setgroups", "deny", err) < 0)
        return -1;
    snprintf(buf, sizeof(buf), "%u %u 1\n", (unsigned)map->inside_gid,
             (unsigned)map->host_gid_base);
    return write_proc(pid, "gid_map", buf, err);
}

/* Bring up lo in the current network namespace; -1 with errno set. */
static int loopback_up(void)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, "lo", 3);
    int r = ioctl(s, SIOCGIFFLAGS, &ifr);
    if (r == 0) {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        r = ioctl(s, SIOCSIFFLAGS, &ifr);
    }
    int e = errno;
    close(s);
    errno = e;
    return r;
}

int pdk_netns_create(bool loopback, bool no_nested_userns, const char **what)
{
    if (unshare(CLONE_NEWNET) < 0) {
        *what = "creating the network namespace (unshare)";
        return -1;
    }
    int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *what = "opening the new network namespace";
        return -1;
    }
    if (loopback && loopback_up() < 0) {
        int e = errno;
        close(fd);
        errno = e;
        *what = "bringing up loopback";
        return -1;
    }
    if (no_nested_userns) {
        /* Belt and braces: the seccomp filter refuses new user namespaces already. */
        int m = open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC);
        if (m >= 0) {
            (void)!write(m, "0", 1);
            close(m);
        }
    }
    return fd;
}

int pdk_idmap_write_self(uid_t uid, gid_t gid)
{
    char buf[64];
    (void)pdk_write_file_at(AT_FDCWD, "/proc/self/setgroups", "deny");
    snprintf(buf, sizeof(buf), "0 %u 1\n", (unsigned)uid);
    if (pdk_write_file_at(AT_FDCWD, "/proc/self/uid_map", buf) < 0)
        return errno;
    snprintf(buf, sizeof(buf), "0 %u 1\n", (unsigned)gid);
    if (pdk_write_file_at(AT_FDCWD, "/proc/self/gid_map", buf) < 0)
        return errno;
    return 0;
}

typedef struct probe_ids {
    uid_t uid;
    gid_t gid;
} probe_ids;

static int probe_namespaces_child(void *arg)
{
    const probe_ids *ids = arg;
    if (unshare(PDK_NAMESPACE_FLAGS | CLONE_NEWNET) < 0)
        return errno;
    return pdk_idmap_write_self(ids->uid, ids->gid);
}

int pdk_namespaces_probe(void)
{
    probe_ids ids = {getuid(), getgid()};
    return pdk_errno_in_child(probe_namespaces_child, &ids);
}
