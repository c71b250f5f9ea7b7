/* mounts.c: see mounts.h. */
#include "mounts.h"

#include "fsutil.h"
#include "log.h"
#include "namespaces.h"
#include "sandbox_protocol.h"
#include "syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

/* A tmpfs over the old root's /tmp holds the new root while it is assembled, and a
 * scratch directory beside it (staged overlay layers, the empty file that hides files).
 * Both hang off the old root: the one unmount after pivot_root takes all of it away
 * (each unmount waits for an RCU grace period). */
#define STAGE   "/tmp"
#define NEWROOT STAGE "/root"
#define SCRATCH STAGE "/setup"
/* The directories bound over /tmp, /run, /dev, $HOME, ... */
#define FRESH STAGE "/fresh"

struct mount_attr_v0 {
    uint64_t attr_set;
    uint64_t attr_clr;
    uint64_t propagation;
    uint64_t userns_fd;
};

/* ---- sources ------------------------------------------------------------------------ */

static int open_source(const char *path, bool writable, int userns_fd, const char *what,
                       pdk_error *err)
{
    _cleanup_close_ int fd = pdk_sys_open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (fd < 0)
        return pdk_error_set(err, errno, "%s %s", what, path);
    struct mount_attr_v0 attr = {0};
    if (!writable)
        attr.attr_set |= MOUNT_ATTR_RDONLY;
    attr.attr_set |= MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if (userns_fd >= 0) {
        attr.attr_set |= MOUNT_ATTR_IDMAP;
        attr.userns_fd = (uint64_t)userns_fd;
    }
    if (pdk_sys_mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0) {
        if (userns_fd >= 0 && errno == EINVAL)
            return pdk_error_set(err, 0,
                                 "%s %s: its filesystem does not support idmapped mounts, "
                                 "which paddock needs when started as root (run paddock as "
                                 "a regular user, or use a directory on ext4, xfs, btrfs "
                                 "or tmpfs)",
                                 what, path);
        return pdk_error_set(err, errno, "%s %s: mount_setattr", what, path);
    }
    return steal_fd(&fd);
}

int pdk_mounts_open_sources(const pdk_sandbox_config *cfg, int userns_fd, pdk_mount_sources *out,
                            pdk_error *err)
{
    out->workspace = out->layers = -1;
    out->bind_count = cfg->bind_count;
    out->binds = xcalloc(cfg->bind_count + 1, sizeof(int));
    for (size_t i = 0; i < cfg->bind_count; i++)
        out->binds[i] = -1;
    if (cfg->workspace) {
        bool direct = cfg->workspace_mode == PDK_WORKSPACE_DIRECT;
        out->workspace = open_source(cfg->workspace, direct && !cfg->workspace_readonly, userns_fd,
                                     "workspace", err);
        if (out->workspace < 0)
            goto fail;
        if (!direct) {
            out->layers = open_source(cfg->layers_dir, true, userns_fd, "session layers", err);
            if (out->layers < 0)
                goto fail;
        }
    }
    for (size_t i = 0; i < cfg->bind_count; i++) {
        out->binds[i] = open_source(cfg->binds[i].source, cfg->binds[i].writable, userns_fd,
                                    cfg->binds[i].writable ? "write path" : "read_allow path", err);
        if (out->binds[i] < 0)
            goto fail;
    }
    return 0;
fail:
    pdk_mounts_close_sources(out);
    return -1;
}

void pdk_mounts_close_sources(pdk_mount_sources *src)
{
    if (src->workspace >= 0)
        close(src->workspace);
    if (src->layers >= 0)
        close(src->layers);
    for (size_t i = 0; src->binds && i < src->bind_count; i++)
        if (src->binds[i] >= 0)
            close(src->binds[i]);
    free(src->binds);
    src->binds = NULL;
    src->workspace = src->layers = -1;
}

size_t pdk_mounts_sources_to_fds(const pdk_mount_sources *src, int *fds, size_t max)
{
    size_t n = 0;
    if (src->workspace >= 0 && n < max)
        fds[n++] = src->workspace;
    if (src->layers >= 0 && n < max)
        fds[n++] = src->layers;
    for (size_t i = 0; i < src->bind_count && n < max; i++)
        fds[n++] = src->binds[i];
    return n;
}

void pdk_mounts_sources_from_fds(const pdk_sandbox_config *cfg, const int *fds, size_t nfds,
                                 pdk_mount_sources *out)
{
    size_t n = 0;
    out->workspace = out->layers = -1;
    out->bind_count = cfg->bind_count;
    out->binds = xcalloc(cfg->bind_count + 1, sizeof(int));
    if (cfg->workspace) {
        out->workspace = n < nfds ? fds[n++] : -1;
        if (cfg->workspace_mode == PDK_WORKSPACE_OVERLAY)
            out->layers = n < nfds ? fds[n++] : -1;
    }
    for (size_t i = 0; i < cfg->bind_count; i++)
        out->binds[i] = n < nfds ? fds[n++] : -1;
}

/* ---- building the tree (child side) ---------------------------------------------------- */

typedef struct builder {
    const pdk_sandbox_config *cfg;
    const pdk_idmap *idmap;
    int report_fd;
    pdk_error *err;
    char **covered; /* inside paths mounted over with a fresh directory or a grant */
    unsigned fresh_count;
} builder;

static char *in_root(const char *path)
{
    return xasprintf(NEWROOT "%s", strcmp(path, "/") == 0 ? "" : path);
}

static bool is_covered_by(const builder *b, const char *path)
{
    for (size_t i = 0; b->covered && b->covered[i]; i++)
        if (pdk_path_is_within(path, b->covered[i]))
            return true;
    return false;
}

static int mount_fresh(builder *b, const char *inside_path, mode_t mode, uid_t uid, gid_t gid,
                       unsigned long flags);

/* The deepest ancestor of inside_path that the sandbox's user cannot search (a 0700
 * directory of a user it does not map: root's mktemp -d, with the sandbox mapped to an
 * unprivileged range) gets a fresh directory in its place: nothing below it was reachable
 * from inside anyway, and the mount points below it are made in that. 0 when there is
 * none (or it is covered now), -1 with err. */
static int cover_unsearchable(builder *b, const char *inside_path)
{
    _cleanup_free_ char *prefix = xstrdup(inside_path);
    for (char *p = prefix + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        _cleanup_free_ char *in = in_root(prefix);
        struct stat st;
        if (lstat(in, &st) < 0) {
            if (errno != EACCES)
                return 0; /* missing: for the caller to say */
            char *slash = strrchr(prefix, '/');
            if (slash == prefix)
                return pdk_error_set(b->err, EACCES, "cannot mount on %s", inside_path);
            *slash = '\0';
            pdk_debug("%s cannot be searched from inside: a fresh directory stands in for it",
                      prefix);
            return mount_fresh(b, prefix, 0755, (uid_t)-1, (gid_t)-1, 0);
        }
        *p = saved;
        if (!saved)
            return 0;
    }
}

/* Make sure the mount point inside_path exists in the tree being built: it may be created
 * only where the tree is writable (beneath a tmpfs paddock mounted). */
static int ensure_mountpoint(builder *b, const char *inside_path, bool dir)
{
    _cleanup_free_ char *p = in_root(inside_path);
    struct stat st;
    if (lstat(p, &st) == 0) {
        if (S_ISLNK(st.st_mode))
            return pdk_error_set(b->err, 0, "cannot mount on %s: it is a symlink", inside_path);
        return 0;
    }
    if (errno == EACCES && cover_unsearchable(b, inside_path) < 0)
        return -1;
    if (!is_covered_by(b, inside_path))
        return pdk_error_set(b->err, errno, "cannot mount on %s", inside_path);
    _cleanup_free_ char *parent = xstrdup(p);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        if (pdk_mkdir_p(parent, 0755) < 0)
            return pdk_error_set(b->err, errno, "cannot create %s", parent);
    }
    if (dir) {
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
            return pdk_error_set(b->err, errno, "cannot create mount point %s", inside_path);
    } else {
        int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
            return pdk_error_set(b->err, errno, "cannot create mount point %s", inside_path);
        close(fd);
    }
    return 0;
}

/* A fresh empty directory over inside_path: a directory of the staging tmpfs, bound there.
 * All of them share that one tmpfs (a superblock fewer to make and tear down for each);
 * a bind cannot reach beyond its own directory. */
static int mount_fresh(builder *b, const char *inside_path, mode_t mode, uid_t uid, gid_t gid,
                       unsigned long flags)
{
    _cleanup_free_ char *p = in_root(inside_path);
    char src[64];
    snprintf(src, sizeof(src), FRESH "/%u", b->fresh_count++);
    if (mkdir(src, 0700) < 0 || (uid != (uid_t)-1 && chown(src, uid, gid) < 0) ||
        chmod(src, mode) < 0)
        return pdk_error_set(b->err, errno, "making a fresh directory for %s", inside_path);
    if (mount(src, p, NULL, MS_BIND, NULL) < 0 ||
        (flags &&
         mount(NULL, p, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | flags, NULL) < 0))
        return pdk_error_set(b->err, errno, "mounting a fresh directory on %s", inside_path);
    pdk_strv_push(&b->covered, inside_path);
    return 0;
}

/* Owned by whoever builds the sandbox: root inside, or the user. */
static int mount_fresh_root(builder *b, const char *inside_path, mode_t mode)
{
    return mount_fresh(b, inside_path, mode, (uid_t)-1, (gid_t)-1, 0);
}

int pdk_mounts_build_dev(bool tty_gid_mapped, const char **what)
{
    char src[64], dst[128];
    *what = "making /dev";
    if (mkdir(FRESH "/dev", 0700) < 0 || chmod(FRESH "/dev", 0755) < 0 ||
        mount(FRESH "/dev", NEWROOT "/dev", NULL, MS_BIND, NULL) < 0 ||
        mount(NULL, NEWROOT "/dev", NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              NULL) < 0)
        return -1;
    static const char *const devices[] = {"null", "zero", "full", "random", "urandom", "tty"};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(devices); i++) {
        snprintf(src, sizeof(src), "/dev/%s", devices[i]);
        snprintf(dst, sizeof(dst), NEWROOT "/dev/%s", devices[i]);
        *what = devices[i];
        int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0)
            return -1;
        close(fd);
        if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
            return -1;
    }
    *what = "creating /dev/pts and /dev/shm";
    if (mkdir(NEWROOT "/dev/pts", 0755) < 0 || mkdir(NEWROOT "/dev/shm", 01777) < 0)
        return -1;
    *what = "mounting a new devpts instance on /dev/pts";
    if (mount("devpts", NEWROOT "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
              tty_gid_mapped ? "newinstance,ptmxmode=0666,mode=620,gid=5"
                             : "newinstance,ptmxmode=0666,mode=620") < 0)
        return -1;
    *what = "making /dev/shm";
    if (mkdir(FRESH "/shm", 0700) < 0 || chmod(FRESH "/shm", 01777) < 0 ||
        mount(FRESH "/shm", NEWROOT "/dev/shm", NULL, MS_BIND, NULL) < 0)
        return -1;
    static const char *const links[][2] = {
        {"pts/ptmx", "ptmx"},          {"/proc/self/fd", "fd"},       {"/proc/self/fd/0", "stdin"},
        {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"},
    };
    *what = "creating the links in /dev";
    for (size_t i = 0; i < PDK_ARRAY_SIZE(links); i++) {
        snprintf(dst, sizeof(dst), NEWROOT "/dev/%s", links[i][1]);
        if (symlink(links[i][0], dst) < 0)
            return -1;
    }
    /* Nothing may be added to /dev once it is built. */
    *what = "making /dev read-only";
    if (mount(NULL, NEWROOT "/dev", NULL,
              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        return -1;
    return 0;
}

static int attach(builder *b, int tree_fd, const char *inside_path, const char *what)
{
    _cleanup_free_ char *p = in_root(inside_path);
    if (pdk_sys_move_mount(tree_fd, "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return pdk_error_set(b->err, errno, "mounting %s on %s", what, inside_path);
    pdk_strv_push(&b->covered, inside_path);
    return 0;
}

/* The error of a failed overlayfs configuration, with the first line of its log. */
static int overlay_error(builder *b, int fs, int e)
{
    char log[512] = "";
    ssize_t n = read(fs, log, sizeof(log) - 1);
    if (n > 0) {
        log[n] = '\0';
        log[strcspn(log, "\n")] = '\0';
    }
    return pdk_error_set(b->err, e, "mounting the workspace overlay%s%s", n > 0 ? ": " : "",
                         n > 0 ? log : "");
}

/* The owner to give a placeholder directory: its real counterpart's, when the sandbox's
 * user namespace maps it, else the sandbox user's. */
static void placeholder_owner(const builder *b, const struct stat *st, uid_t *uid, gid_t *gid)
{
    const pdk_idmap *m = b->idmap;
    bool uid_ok = m->privileged ? st->st_uid < m->count : st->st_uid == m->inside_uid;
    bool gid_ok = m->privileged ? st->st_gid < m->count : st->st_gid == m->inside_gid;
    *uid = uid_ok ? st->st_uid : m->inside_uid;
    *gid = gid_ok ? st->st_gid : m->inside_gid;
}

/* A layer of placeholders, on top of the real workspace in the overlay: an empty
 * directory for every protected path that is missing (but whose parent exists), so that
 * it cannot be created, while the session layer (upper) stays untouched. Its directories
 * carry the mode and owner of their real counterparts. The layer is SCRATCH/placeholders:
 * returns 1 when it was made, 0 when none is needed, -1 on error. */
static int make_placeholder_layer(builder *b, int lower, int layers)
{
    const pdk_sandbox_config *cfg = b->cfg;
    if (!cfg->make_placeholders)
        return 0;
    _cleanup_close_ int layer = -1;
    for (size_t i = 0; cfg->protect_paths && cfg->protect_paths[i]; i++) {
        if (!pdk_path_is_within(cfg->protect_paths[i], cfg->workspace))
            continue;
        _cleanup_free_ char *rel =
            xstrdup(pdk_path_relative(cfg->protect_paths[i], cfg->workspace));
        size_t len = strlen(rel);
        while (len > 0 && rel[len - 1] == '/')
            rel[--len] = '\0';
        if (len == 0 || strstr(rel, ".."))
            continue;
        _cleanup_free_ char *in_upper = xasprintf("upper/%s", rel);
        struct stat st;
        if (fstatat(layers, in_upper, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
            fstatat(lower, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
            continue; /* exists (or was deleted in the session: handled later) */
        char *slash = strrchr(rel, '/');
        struct stat pst;
        if (slash) {
            *slash = '\0';
            bool parent_ok =
                fstatat(lower, rel, &pst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(pst.st_mode);
            *slash = '/';
            if (!parent_ok)
                continue;
        }
        if (layer < 0) {
            struct stat root;
            uid_t uid;
            gid_t gid;
            if (fstat(lower, &root) < 0 || mkdir(SCRATCH "/placeholders", 0700) < 0)
                return pdk_error_set(b->err, errno, "making the placeholder layer");
            placeholder_owner(b, &root, &uid, &gid);
            layer = open(SCRATCH "/placeholders", O_PATH | O_DIRECTORY | O_CLOEXEC);
            if (layer < 0 || chown(SCRATCH "/placeholders", uid, gid) < 0 ||
                chmod(SCRATCH "/placeholders", root.st_mode & 07777) < 0)
                return pdk_error_set(b->err, errno, "making the placeholder layer");
        }
        /* Every component, parents with their real counterpart's mode and owner. */
        for (char *p = rel;; p++) {
            if (*p != '/' && *p != '\0')
                continue;
            char saved = *p;
            *p = '\0';
            if (mkdirat(layer, rel, 0755) < 0 && errno != EEXIST)
                return pdk_error_set(b->err, errno, "placeholder %s", rel);
            struct stat rs;
            if (saved != '\0' && fstatat(lower, rel, &rs, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISDIR(rs.st_mode)) {
                uid_t uid;
                gid_t gid;
                placeholder_owner(b, &rs, &uid, &gid);
                (void)!fchownat(layer, rel, uid, gid, AT_SYMLINK_NOFOLLOW);
                (void)!fchmodat(layer, rel, rs.st_mode & 07777, 0);
            }
            *p = saved;
            if (saved == '\0')
                break;
        }
    }
    return layer >= 0 ? 1 : 0;
}

/* The layers, attached at paths in the scratch directory (overlayfs clones them; the
 * scratch directory goes with the old root, in the same one unmount). They cannot go
 * by fd: overlayfs takes a detached mount only from a namespace whose owner the caller
 * has CAP_SYS_ADMIN over, and the sources come from the supervisor's. */
static int stage_overlay_layers(builder *b, int fs, bool placeholders, int lower, int layers)
{
    if (mkdir(SCRATCH "/lower", 0700) < 0 || mkdir(SCRATCH "/layers", 0700) < 0)
        return pdk_error_set(b->err, errno, "creating the overlay staging directories");
    if (pdk_sys_move_mount(lower, "", AT_FDCWD, SCRATCH "/lower", MOVE_MOUNT_F_EMPTY_PATH) < 0 ||
        pdk_sys_move_mount(layers, "", AT_FDCWD, SCRATCH "/layers", MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return pdk_error_set(b->err, errno, "staging the overlay layers");
    const char *lowerdir =
        placeholders ? SCRATCH "/placeholders:" SCRATCH "/lower" : SCRATCH "/lower";
    if (pdk_sys_fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", lowerdir, 0) < 0 ||
        pdk_sys_fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", SCRATCH "/layers/upper", 0) < 0 ||
        pdk_sys_fsconfig(fs, FSCONFIG_SET_STRING, "workdir", SCRATCH "/layers/work", 0) < 0)
        return overlay_error(b, fs, errno);
    return 0;
}

static int setup_workspace(builder *b, pdk_mount_sources *src)
{
    const pdk_sandbox_config *cfg = b->cfg;
    if (!cfg->workspace)
        return 0;
    if (ensure_mountpoint(b, cfg->workspace, true) < 0)
        return pdk_error_prefix(b->err, "workspace");
    if (cfg->workspace_mode == PDK_WORKSPACE_DIRECT) {
        if (attach(b, src->workspace, cfg->workspace, "the workspace") < 0)
            return -1;
        close(src->workspace);
        src->workspace = -1;
        return 0;
    }
    int placeholders = make_placeholder_layer(b, src->workspace, src->layers);
    if (placeholders < 0)
        return -1;
    _cleanup_close_ int fs = pdk_sys_fsopen("overlay", FSOPEN_CLOEXEC);
    if (fs < 0)
        return pdk_error_set(b->err, errno,
                             "overlayfs is not available (the kernel needs CONFIG_OVERLAY_FS; "
                             "or use --workspace-mode direct)");
    if (stage_overlay_layers(b, fs, placeholders > 0, src->workspace, src->layers) < 0)
        return -1;
    close(src->workspace);
    close(src->layers);
    src->workspace = src->layers = -1;
    if (pdk_sys_fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0 ||
        /* No syncfs of the whole upper filesystem at every unmount (and no-op fsyncs
         * inside): the session layer is a draft; run.c makes a kept layer durable with
         * one syncfs, and clears overlayfs's volatile marker once the overlay is gone. */
        pdk_sys_fsconfig(fs, FSCONFIG_SET_FLAG, "volatile", NULL, 0) < 0 ||
        pdk_sys_fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        return overlay_error(b, fs, errno);
    _cleanup_close_ int mnt =
        pdk_sys_fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    if (mnt < 0)
        return pdk_error_set(b->err, errno, "fsmount of the workspace overlay");
    return attach(b, mnt, cfg->workspace, "the workspace overlay");
}

static int compare_bind_targets(const void *a, const void *b)
{
    const pdk_bind *x = *(const pdk_bind *const *)a, *y = *(const pdk_bind *const *)b;
    size_t lx = strlen(x->target), ly = strlen(y->target);
    return lx < ly ? -1 : lx > ly ? 1 : strcmp(x->target, y->target);
}

static int setup_binds(builder *b, pdk_mount_sources *src)
{
    const pdk_sandbox_config *cfg = b->cfg;
    if (cfg->bind_count == 0)
        return 0;
    /* Shallow targets first, so that a bind inside another lands on top of it. */
    const pdk_bind **order = xcalloc(cfg->bind_count, sizeof(*order));
    for (size_t i = 0; i < cfg->bind_count; i++)
        order[i] = &cfg->binds[i];
    qsort(order, cfg->bind_count, sizeof(*order), compare_bind_targets);
    int ret = 0;
    for (size_t k = 0; k < cfg->bind_count && ret == 0; k++) {
        size_t i = (size_t)(order[k] - cfg->binds);
        struct stat st;
        if (fstat(src->binds[i], &st) < 0) {
            ret = pdk_error_set(b->err, errno, "bind source %s", cfg->binds[i].source);
            break;
        }
        if (ensure_mountpoint(b, cfg->binds[i].target, S_ISDIR(st.st_mode)) < 0 ||
            attach(b, src->binds[i], cfg->binds[i].target, cfg->binds[i].source) < 0) {
            ret = -1;
            break;
        }
        close(src->binds[i]);
        src->binds[i] = -1;
    }
    free(order);
    return ret;
}

/* A read-only empty directory or file over path (which exists in the tree). */
static int mask_path(builder *b, const char *inside_path)
{
    _cleanup_free_ char *p = in_root(inside_path);
    struct stat st;
    if (lstat(p, &st) < 0 || S_ISLNK(st.st_mode))
        return 0; /* nothing there to hide (a symlink's target is hidden on its own) */
    if (S_ISDIR(st.st_mode)) {
        if ((mkdir(SCRATCH "/emptydir", 0500) < 0 && errno != EEXIST) ||
            mount(SCRATCH "/emptydir", p, NULL, MS_BIND, NULL) < 0 ||
            mount(NULL, p, NULL,
                  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
            return pdk_error_set(b->err, errno, "hiding %s", inside_path);
        return 0;
    }
    int fd = open(SCRATCH "/empty", O_WRONLY | O_CREAT | O_CLOEXEC, 0400);
    if (fd < 0)
        return pdk_error_set(b->err, errno, "creating the empty file for hiding");
    close(fd);
    if (mount(SCRATCH "/empty", p, NULL, MS_BIND, NULL) < 0 ||
        mount(NULL, p, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              NULL) < 0)
        return pdk_error_set(b->err, errno, "hiding %s", inside_path);
    return 0;
}

static int setup_hidden(builder *b)
{
    for (size_t i = 0; b->cfg->hide_paths && b->cfg->hide_paths[i]; i++)
        if (mask_path(b, b->cfg->hide_paths[i]) < 0)
            return -1;
    return 0;
}

/* Read-only bind of path over itself, with what is mounted beneath it (a credential
 * file hidden in a protected directory, "~/.config/git/credentials", stays hidden). */
static int make_readonly(builder *b, const char *p, const char *inside_path)
{
    if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) < 0 ||
        mount(NULL, p, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
        return pdk_error_set(b->err, errno, "protecting %s", inside_path);
    return 0;
}

/* Directories bound over themselves: mount points, which cannot be renamed or removed. */
static int setup_pinned(builder *b)
{
    for (size_t i = 0; b->cfg->pin_paths && b->cfg->pin_paths[i]; i++) {
        const char *inside = b->cfg->pin_paths[i];
        _cleanup_free_ char *p = in_root(inside);
        struct stat st;
        if (lstat(p, &st) < 0)
            return pdk_error_set(b->err, errno, "pinning %s", inside);
        if (!S_ISDIR(st.st_mode))
            return pdk_error_set(b->err, 0, "pinning %s: not a directory", inside);
        if (mount(p, p, NULL, MS_BIND, NULL) < 0)
            return pdk_error_set(b->err, errno, "pinning %s", inside);
    }
    return 0;
}

static int setup_protected(builder *b)
{
    pdk_buf made = {0};
    int ret = -1;
    for (size_t i = 0; b->cfg->protect_paths && b->cfg->protect_paths[i]; i++) {
        _cleanup_free_ char *inside = xstrdup(b->cfg->protect_paths[i]);
        size_t len = strlen(inside);
        while (len > 1 && inside[len - 1] == '/')
            inside[--len] = '\0';
        _cleanup_free_ char *p = in_root(inside);
        struct stat st;
        if (lstat(p, &st) == 0) {
            if (S_ISLNK(st.st_mode)) {
                pdk_debug("not protecting %s: it is a symlink", inside);
                continue;
            }
            if (make_readonly(b, p, inside) < 0)
                goto out;
            continue;
        }
        if (errno != ENOENT || !b->cfg->make_placeholders || !b->cfg->workspace ||
            !pdk_path_is_within(inside, b->cfg->workspace))
            continue;
        /* Missing: an empty read-only directory stands in its place, so it cannot be
         * created, and git ignores it. Only where the parent exists. */
        _cleanup_free_ char *parent = xstrdup(p);
        *strrchr(parent, '/') = '\0';
        struct stat pst;
        if (lstat(parent, &pst) < 0 || !S_ISDIR(pst.st_mode))
            continue;
        if (mkdir(p, 0755) < 0) {
            if (errno == EROFS || errno == EACCES || errno == EPERM)
                continue; /* a read-only place: nothing can be created there anyway */
            pdk_error_set(b->err, errno, "creating a placeholder for %s", inside);
            goto out;
        }
        pdk_buf_printf(&made, "%s\n", inside);
        if (make_readonly(b, p, inside) < 0)
            goto out;
    }
    /* One message for all of them (newline-separated). */
    if (made.len > 0 &&
        pdk__msg_send(b->report_fd, PDK_MSG_PLACEHOLDER, 0, made.data, NULL, 0) < 0) {
        pdk_error_set(b->err, errno, "reporting the placeholders");
        goto out;
    }
    ret = 0;
out:
    pdk_buf_free(&made);
    return ret;
}

static int pivot(builder *b)
{
    if (chdir(NEWROOT) < 0)
        return pdk_error_set(b->err, errno, "chdir to the new root");
    if (pdk_sys_pivot_root(".", ".") < 0)
        return pdk_error_set(b->err, errno, "pivot_root");
    if (umount2(".", MNT_DETACH) < 0)
        return pdk_error_set(b->err, errno, "detaching the old root");
    if (chdir("/") < 0)
        return pdk_error_set(b->err, errno, "chdir /");
    return 0;
}

struct pdk_mount_builder {
    builder b;
    int root; /* the host root, cloned, read-only, until it is attached */
};

/* The host root, read-only, private, as a detached recursive clone. */
static int clone_root(builder *b)
{
    _cleanup_close_ int root =
        pdk_sys_open_tree(AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (root < 0)
        return pdk_error_set(b->err, errno, "cloning the host root (open_tree)");
    struct mount_attr_v0 attr = {.attr_set =
                                     MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                                 .propagation = MS_PRIVATE};
    if (pdk_sys_mount_setattr(root, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0)
        return pdk_error_set(b->err, errno, "making the host root read-only (mount_setattr)");
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return pdk_error_set(b->err, errno, "making the mount namespace private");
    return steal_fd(&root);
}

/* The part of the tree that depends on no policy, no workspace and no session: the host
 * root, /proc, /tmp, /run (/dev: pdk_mounts_build_dev). */
static int build_base(builder *b, int root)
{
    pdk_error *err = b->err;
    if (mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") < 0 ||
        mkdir(NEWROOT, 0700) < 0 || mkdir(SCRATCH, 0700) < 0 || mkdir(FRESH, 0700) < 0)
        return pdk_error_set(err, errno, "making the staging area on %s", STAGE);
    if (pdk_sys_move_mount(root, "", AT_FDCWD, NEWROOT, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return pdk_error_set(err, errno, "attaching the new root");
    pdk_trace("child: root attached");
    if (mount("proc", NEWROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        return pdk_error_set(err, errno, "mounting /proc");
    if (mount_fresh_root(b, "/tmp", 01777) < 0 || mount_fresh_root(b, "/run", 0755) < 0)
        return -1;
    struct stat st;
    if (lstat(NEWROOT "/var/run", &st) == 0 && S_ISDIR(st.st_mode) &&
        mount_fresh_root(b, "/var/run", 0755) < 0)
        return -1;
    pdk_trace("child: base tree built");
    return 0;
}

/* The rest: $HOME, the workspace, the binds, what is hidden and protected. */
static int build_rest(builder *b, pdk_mount_sources *src)
{
    const pdk_sandbox_config *cfg = b->cfg;
    pdk_error *err = b->err;
    if (cfg->home && strcmp(cfg->home, "/") != 0) {
        if (ensure_mountpoint(b, cfg->home, true) < 0) {
            pdk_warn("%s: $HOME stays hidden only by what hides its parts", err->message);
            pdk_error_clear(err);
        } else if (mount_fresh(b, cfg->home, 0700, b->idmap->inside_uid, b->idmap->inside_gid, 0) <
                   0) {
            return -1;
        }
    }
    pdk_trace("child: home");
    if (setup_workspace(b, src) < 0)
        return -1;
    pdk_trace("child: workspace mounted");
    if (setup_binds(b, src) < 0 || setup_hidden(b) < 0 || setup_pinned(b) < 0 ||
        setup_protected(b) < 0)
        return -1;
    pdk_trace("child: binds hidden protected");
    return 0;
}

pdk_mount_builder *pdk_mounts_new(const pdk_sandbox_config *cfg, const pdk_idmap *idmap,
                                  int report_fd, pdk_error *err)
{
    pdk_mount_builder *mb = xcalloc(1, sizeof(*mb));
    mb->b = (builder){.cfg = cfg, .idmap = idmap, .report_fd = report_fd, .err = err};
    mb->root = clone_root(&mb->b);
    if (mb->root < 0) {
        pdk_mounts_builder_free(mb);
        return NULL;
    }
    return mb;
}

int pdk_mounts_begin(pdk_mount_builder *mb)
{
    int r = build_base(&mb->b, mb->root);
    close(mb->root);
    mb->root = -1;
    return r;
}

int pdk_mounts_finish(pdk_mount_builder *mb, pdk_mount_sources *src)
{
    return build_rest(&mb->b, src);
}

int pdk_mounts_enter(pdk_mount_builder *mb)
{
    if (pivot(&mb->b) < 0)
        return -1;
    pdk_trace("child: pivoted");
    return 0;
}

void pdk_mounts_builder_free(pdk_mount_builder *mb)
{
    if (!mb)
        return;
    if (mb->root >= 0)
        close(mb->root);
    pdk_strv_free(mb->b.covered);
    free(mb);
}

/* ---- probes ------------------------------------------------------------------------- */

typedef struct overlay_probe {
    const char *dir;
    uid_t uid;
    gid_t gid;
} overlay_probe;

static int probe_overlay_child(void *arg)
{
    const overlay_probe *p = arg;
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
        return errno;
    int e = pdk_idmap_write_self(p->uid, p->gid);
    if (e)
        return e;
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return errno;
    char opts[512];
    snprintf(opts, sizeof(opts), "lowerdir=%s/l,upperdir=%s/u,workdir=%s/w,userxattr", p->dir,
             p->dir, p->dir);
    char target[256];
    snprintf(target, sizeof(target), "%s/m", p->dir);
    if (mount("overlay", target, "overlay", 0, opts) < 0)
        return errno;
    char file[300];
    snprintf(file, sizeof(file), "%s/m/probe", p->dir);
    int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno;
    close(fd);
    return 0;
}

int pdk_mounts_probe_overlay(void)
{
    char tmpl[] = "/tmp/paddock-doctor.XXXXXX";
    char *dir = mkdtemp(tmpl);
    if (!dir)
        return ENOENT;
    char p[300];
    const char *subs[] = {"l", "u", "w", "m"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, subs[i]);
        mkdir(p, 0700);
    }
    overlay_probe probe = {.dir = dir, .uid = getuid(), .gid = getgid()};
    int e = pdk_errno_in_child(probe_overlay_child, &probe);
    pdk_rm_rf_at(AT_FDCWD, dir);
    return e;
}

int pdk_mounts_probe_idmap(const char *path)
{
    int sync[2];
    if (pipe2(sync, O_CLOEXEC) < 0)
        return errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(sync[0]);
        close(sync[1]);
        return e;
    }
    if (pid == 0) {
        close(sync[1]);
        if (unshare(CLONE_NEWUSER) < 0)
            _exit(1);
        char c;
        (void)!read(sync[0], &c, 1);
        _exit(0);
    }
    close(sync[0]);
    int ret = 0;
    /* Wait until the child is in its namespace: poll its ns link. */
    char nspath[64], linkbuf[64], selfbuf[64];
    snprintf(nspath, sizeof(nspath), "/proc/%d/ns/user", (int)pid);
    ssize_t ls = readlink("/proc/self/ns/user", selfbuf, sizeof(selfbuf) - 1);
    for (int i = 0; i < 100000; i++) {
        ssize_t n = readlink(nspath, linkbuf, sizeof(linkbuf) - 1);
        if (n > 0 && (n != ls || memcmp(linkbuf, selfbuf, (size_t)n) != 0))
            break;
        sched_yield();
    }
    char map[64];
    snprintf(map, sizeof(map), "/proc/%d/uid_map", (int)pid);
    char line[64];
    snprintf(line, sizeof(line), "0 %u 1\n", PDK_HOST_ID_BASE);
    int nsfd = -1, tree = -1;
    if (pdk_write_file_at(AT_FDCWD, map, line) < 0) {
        ret = errno;
        goto out;
    }
    snprintf(map, sizeof(map), "/proc/%d/gid_map", (int)pid);
    if (pdk_write_file_at(AT_FDCWD, map, line) < 0) {
        ret = errno;
        goto out;
    }
    nsfd = open(nspath, O_RDONLY | O_CLOEXEC);
    tree = pdk_sys_open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (nsfd < 0 || tree < 0) {
        ret = errno;
        goto out;
    }
    struct mount_attr_v0 attr = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)nsfd};
    if (pdk_sys_mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
        ret = errno;
out:
    if (nsfd >= 0)
        close(nsfd);
    if (tree >= 0)
        close(tree);
    close(sync[1]);
    waitpid(pid, NULL, 0);
    return ret;
}
