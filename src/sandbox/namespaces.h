/* namespaces.h: one clone3() with every namespace flag but the network's, the network
 * namespace made by a helper thread in parallel, and the uid/gid maps.
 *
 * Started as root, the sandbox's user namespace maps 65536 ids starting at inside 0 to an
 * unprivileged host range (PDK_HOST_ID_BASE, or root's range in /etc/subuid), so nothing in
 * the sandbox is host root. Started by another user, the caller's own uid/gid is mapped to
 * itself (the only mapping an unprivileged user may write).
 */
#ifndef PADDOCK_NAMESPACES_H
#define PADDOCK_NAMESPACES_H

#include "error.h"

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Host uid/gid range for sandboxes started by root when /etc/subuid has no entry. */
#define PDK_HOST_ID_BASE  1879048192u /* 0x70000000 */
#define PDK_HOST_ID_COUNT 65536u

/* The network namespace is not among them: it costs more to set up than all the others
 * together, so the child has a thread of its own make it (pdk_netns_start) while it builds
 * its mounts and the supervisor writes the maps; the child joins it before anything runs. */
#define PDK_NAMESPACE_FLAGS                                                                        \
    (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)

typedef struct pdk_idmap {
    bool privileged;  /* started as root: a range is mapped, layers are idmapped */
    uid_t inside_uid; /* the command's uid inside (the caller's uid) */
    gid_t inside_gid;
    uid_t host_uid_base; /* privileged: inside 0 = host base; else the caller's uid */
    gid_t host_gid_base;
    uint32_t count;
} pdk_idmap;

/* Decide the mapping for the calling process. */
void pdk_idmap_init(pdk_idmap *map);

/* clone3() with flags; returns the child's pid (0 in the child) and a pidfd in *pidfd.
 * cgroup_fd >= 0 adds CLONE_INTO_CGROUP. */
pid_t pdk_clone3(uint64_t flags, int *pidfd, int cgroup_fd);

/* Write uid_map, setgroups and gid_map of pid (the supervisor side). */
int pdk_idmap_write(const pdk_idmap *map, pid_t pid, pdk_error *err);

/* Move the calling thread into a new network namespace (with loopback up when loopback is
 * true, else with no interface up at all) and return an fd of it; with no_nested_userns also set
 * user.max_user_namespaces to 0 in the caller's user namespace. The caller must hold CAP_SYS_ADMIN
 * in its user namespace. System calls only, nothing allocated: it runs in the sandbox's setup
 * thread (sandbox_child.c). -1 with errno and *what naming the step that failed. */
int pdk_netns_create(bool loopback, bool no_nested_userns, const char **what);

/* In a user namespace the caller just made with unshare(CLONE_NEWUSER): map inside 0 to uid
 * and gid, the ids it had before (after the unshare they read as the overflow id); with
 * setgroups denied. 0, or an errno value. */
int pdk_idmap_write_self(uid_t uid, gid_t gid);

/* Whether this process can make a sandbox's namespaces: in a child, unshare a user, mount,
 * pid, net, ipc, uts and cgroup namespace and map its ids. 0, or the errno value of the
 * step that failed. Nothing changes in the caller. */
int pdk_namespaces_probe(void);

#endif
