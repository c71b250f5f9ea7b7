/* mounts.h: the sandbox's mount tree.
 *
 * Sources (the workspace, the session's layers, the policy's binds) are detached mount
 * trees made with open_tree(OPEN_TREE_CLONE). Started as root they are made by the
 * supervisor and idmapped onto the sandbox's user namespace (so that files keep their real
 * owners on disk while the sandbox's uid 0 is an unprivileged host uid); otherwise the child
 * makes them itself. The child then builds the tree:
 *   host root, read-only, nosuid, nodev (a recursive clone of /)
 *   /dev      tmpfs with null zero full random urandom tty, a new devpts, shm
 *   /proc     fresh, of the new pid namespace
 *   /tmp /run tmpfs (host sockets under /run and the host's /tmp are out of sight)
 *   $HOME     empty tmpfs; the policy's binds inside it
 *   workspace overlayfs (session layer as upper) or a direct bind
 *   hidden    credential locations, read_deny and the state dir: empty and read-only
 *   protected read-only binds over themselves; missing ones: empty read-only directories
 * and pivots into it.
 */
#ifndef PADDOCK_MOUNTS_H
#define PADDOCK_MOUNTS_H

#include "sandbox.h"

typedef struct pdk_mount_sources {
    int workspace; /* -1: none */
    int layers;    /* -1: none (direct mode) */
    int *binds;    /* cfg->bind_count entries */
    size_t bind_count;
} pdk_mount_sources;

/* Make the source trees. userns_fd >= 0 idmaps them onto that user namespace. */
int pdk_mounts_open_sources(const pdk_sandbox_config *cfg, int userns_fd, pdk_mount_sources *out,
                            pdk_error *err);
void pdk_mounts_close_sources(pdk_mount_sources *src);
/* Flatten into fds[] (for SCM_RIGHTS) and back. */
size_t pdk_mounts_sources_to_fds(const pdk_mount_sources *src, int *fds, size_t max);
void pdk_mounts_sources_from_fds(const pdk_sandbox_config *cfg, const int *fds, size_t nfds,
                                 pdk_mount_sources *out);

/* Child side, in steps, so that each runs as early as it can while the supervisor still
 * prepares the rest: new clones the host root (it needs nothing, not even the id maps);
 * begin builds what depends on no policy (the root attached, /proc, /tmp, /run) once the
 * ids are set; build_dev makes /dev (below); finish builds the rest from src ($HOME, the
 * workspace, binds, hidden and protected paths); enter pivots into the tree once /dev is
 * built too. new returns NULL and the others -1 with err on failure. report_fd receives
 * PDK_MSG_PLACEHOLDER messages. */
typedef struct pdk_mount_builder pdk_mount_builder;
pdk_mount_builder *pdk_mounts_new(const pdk_sandbox_config *cfg, const pdk_idmap *idmap,
                                  int report_fd, pdk_error *err);
int pdk_mounts_begin(pdk_mount_builder *builder);
int pdk_mounts_finish(pdk_mount_builder *builder, pdk_mount_sources *src);
int pdk_mounts_enter(pdk_mount_builder *builder);
/* /dev (a fresh directory with the usual devices bound in, a new devpts, shm, the fd links;
 * then read-only), between begin and enter. System calls and stack buffers only: it runs
 * in the sandbox's setup thread while init goes on (sandbox_child.c). 0, or -1 with errno
 * and *what naming the step. */
int pdk_mounts_build_dev(bool tty_gid_mapped, const char **what);
void pdk_mounts_builder_free(pdk_mount_builder *builder);

/* Probes (paddock doctor). Each runs what it needs in a child and changes nothing here;
 * 0, or the errno value of the step that failed. */
/* overlayfs in a user namespace of one's own (userxattr), with a file written through it,
 * in a temp dir under /tmp removed again. */
int pdk_mounts_probe_overlay(void);
/* An idmapped clone of the mount holding path (what the sources get when paddock is started
 * as root), onto a user namespace mapping 0 to PDK_HOST_ID_BASE. */
int pdk_mounts_probe_idmap(const char *path);

#endif
