/* changes.c: see changes.h. */
#include "changes.h"

#include "fsutil.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

/* Deeper trees are refused: each level holds two directory fds. */
#define MAX_DEPTH 256

#define OVL_FB_MAGIC  0xfb
#define OVL_FB_HEADER 21 /* version, magic, len, flags, type, uuid[16] */
#define MAX_FID_BYTES 128

/* An added upper entry with an origin xattr, waiting to learn whether the origin still
 * exists elsewhere in the real workspace. */
typedef struct origin_ref {
    size_t item; /* index into items (before sorting) */
    int type;    /* fid type; -1 when the xattr is empty or could not be parsed */
    unsigned len;
    unsigned char fid[MAX_FID_BYTES];
    ino_t upper_ino; /* the upper entry's inode when it has other links, else 0 */
} origin_ref;

typedef struct scan_ctx {
    int lower_root;
    char *const *ignore;
    pdk_change *items;
    size_t count, cap;
    char **opaque_dirs;
    char **handle_candidates; /* real paths whose file handle an origin may name */
    origin_ref *origins;
    size_t origin_count;
    ino_t *linked_inos; /* upper files with other links that have their real counterpart */
    size_t linked_count;
    pdk_error *err;
} scan_ctx;

const char *pdk_change_status_name(pdk_change_status status)
{
    switch (status) {
    case PDK_CHANGE_ADDED:
        return "added";
    case PDK_CHANGE_MODIFIED:
        return "modified";
    case PDK_CHANGE_DELETED:
        return "deleted";
    case PDK_CHANGE_TYPE_CHANGED:
        return "type_changed";
    default:
        return "unknown";
    }
}

const char *pdk_change_kind_name(pdk_change_kind kind)
{
    switch (kind) {
    case PDK_KIND_FILE:
        return "file";
    case PDK_KIND_DIR:
        return "dir";
    case PDK_KIND_SYMLINK:
        return "symlink";
    case PDK_KIND_OTHER:
        return "other";
    case PDK_KIND_NONE:
    default:
        return NULL;
    }
}

pdk_change_kind pdk_change_kind_of(mode_t st_mode)
{
    if (S_ISREG(st_mode))
        return PDK_KIND_FILE;
    if (S_ISDIR(st_mode))
        return PDK_KIND_DIR;
    if (S_ISLNK(st_mode))
        return PDK_KIND_SYMLINK;
    return PDK_KIND_OTHER;
}

unsigned pdk_change_display_mode(pdk_change_kind kind, mode_t st_mode)
{
    switch (kind) {
    case PDK_KIND_FILE:
        return 0100000u | (st_mode & 07777);
    case PDK_KIND_SYMLINK:
        return 0120000u;
    case PDK_KIND_DIR:
        return 0040000u | (st_mode & 07777);
    case PDK_KIND_OTHER:
        return (unsigned)st_mode;
    case PDK_KIND_NONE:
    default:
        return 0;
    }
}

bool pdk_changes_path_beneath(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return n > 0 && strncmp(path, dir, n) == 0 && path[n] == '/';
}

bool pdk_changes_path_selected(const char *path, char *const *select)
{
    if (!select || !select[0])
        return true;
    for (size_t i = 0; select[i]; i++) {
        const char *s = select[i];
        while (s[0] == '.' && s[1] == '/')
            s += 2;
        while (*s == '/')
            s++;
        size_t n = strlen(s);
        while (n > 0 && s[n - 1] == '/')
            n--;
        if (n == 0 || (n == 1 && s[0] == '.'))
            return true;
        if (strncmp(path, s, n) == 0 && (path[n] == '\0' || path[n] == '/'))
            return true;
    }
    return false;
}

const pdk_change *pdk_changes_find(const pdk_change_list *list, const char *path)
{
    size_t lo = 0, hi = list->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(list->items[mid].path, path);
        if (c == 0)
            return &list->items[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static void change_free(pdk_change *c)
{
    free(c->path);
    free(c->old_target);
    free(c->new_target);
}

void pdk_change_list_free(pdk_change_list *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->count; i++)
        change_free(&list->items[i]);
    free(list->items);
    pdk_strv_free(list->opaque_dirs);
    list->items = NULL;
    list->count = 0;
    list->opaque_dirs = NULL;
}

static bool is_whiteout(const struct stat *st)
{
    return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
}

static int64_t ctime_ns(const struct stat *st)
{
    return (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

static char *child_path(const char *rel, const char *name)
{
    return rel[0] ? xasprintf("%s/%s", rel, name) : xstrdup(name);
}

/* Read an overlay xattr ("user.overlay.<attr>", else "trusted.overlay.<attr>") of the entry
 * name in dirfd without following it (it may be a symlink). Returns the length, or -1
 * (errno ENODATA when absent). */
static ssize_t overlay_xattr(int dirfd, const char *name, const char *attr, void *buf, size_t len)
{
    char path[64 + 256];
    int n = snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dirfd, name);
    if (n < 0 || (size_t)n >= sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    static const char *const prefixes[] = {"user.overlay.", "trusted.overlay."};
    ssize_t r = -1;
    for (size_t i = 0; i < PDK_ARRAY_SIZE(prefixes); i++) {
        char key[64];
        snprintf(key, sizeof(key), "%s%s", prefixes[i], attr);
        r = lgetxattr(path, key, buf, len);
        if (r >= 0 || (errno != ENODATA && errno != EOPNOTSUPP && errno != EPERM))
            return r;
    }
    errno = ENODATA;
    return -1;
}

static bool is_opaque(int dirfd, const char *name)
{
    char v[4];
    ssize_t n = overlay_xattr(dirfd, name, "opaque", v, sizeof(v));
    return n == 1 && v[0] == 'y';
}

static pdk_change *push_change(scan_ctx *ctx, const char *path, pdk_change_status status)
{
    if (ctx->count == ctx->cap) {
        ctx->cap = ctx->cap ? ctx->cap * 2 : 64;
        ctx->items = xrealloc(ctx->items, ctx->cap * sizeof(*ctx->items));
    }
    pdk_change *c = &ctx->items[ctx->count++];
    memset(c, 0, sizeof(*c));
    c->path = xstrdup(path);
    c->status = status;
    c->lower_ctime_ns = -1;
    return c;
}

static void set_old(pdk_change *c, const struct stat *lst)
{
    c->old_kind = pdk_change_kind_of(lst->st_mode);
    c->old_mode = lst->st_mode;
    c->old_size = lst->st_size;
    c->lower_ctime_ns = ctime_ns(lst);
}

static void set_new(pdk_change *c, const struct stat *ust)
{
    c->new_kind = pdk_change_kind_of(ust->st_mode);
    c->new_mode = ust->st_mode;
    c->new_size = ust->st_size;
    c->new_uid = ust->st_uid;
    c->new_gid = ust->st_gid;
    c->new_mtime = ust->st_mtim;
}

static int sort_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in directory fd (any kind of fd to a directory), sorted, without "." and "..". */
static int read_names(int fd, char ***out, size_t *count)
{
    int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    DIR *d = fdopendir(dfd);
    if (!d) {
        int saved = errno;
        close(dfd);
        errno = saved;
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (n + 1 >= cap) {
            cap = cap ? cap * 2 : 16;
            names = xrealloc(names, cap * sizeof(char *));
        }
        names[n++] = xstrdup(de->d_name);
        errno = 0;
    }
    int saved = errno;
    closedir(d);
    if (saved) {
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
        errno = saved;
        return -1;
    }
    if (n)
        qsort(names, n, sizeof(char *), sort_names);
    if (!names)
        names = xcalloc(1, sizeof(char *));
    names[n] = NULL;
    *out = names;
    *count = n;
    return 0;
}

static bool names_contain(char *const *names, size_t count, const char *name)
{
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(names[mid], name);
        if (c == 0)
            return true;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* Open a directory entry without following a symlink and check that a directory was
 * opened; regular files go through pdk_open_regular_beneath, which never opens a fifo or
 * device swapped in after the stat. */
static int open_entry(int dirfd, const char *name, bool directory)
{
    if (!directory)
        return pdk_open_regular_beneath(dirfd, name);
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_DIRECTORY);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
        close(fd);
        errno = ESTALE;
        return -1;
    }
    return fd;
}

static ssize_t read_full(int fd, char *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* 1 when the two regular files hold the same bytes, 0 when not, -1 on error. */
static int same_content(int udir, int ldir, const char *name)
{
    _cleanup_close_ int ufd = open_entry(udir, name, false);
    if (ufd < 0)
        return -1;
    _cleanup_close_ int lfd = open_entry(ldir, name, false);
    if (lfd < 0)
        return -1;
    enum { CHUNK = 64 * 1024 };
    _cleanup_free_ char *ubuf = xmalloc(CHUNK);
    _cleanup_free_ char *lbuf = xmalloc(CHUNK);
    for (;;) {
        ssize_t un = read_full(ufd, ubuf, CHUNK);
        ssize_t ln = read_full(lfd, lbuf, CHUNK);
        if (un < 0 || ln < 0)
            return -1;
        if (un != ln || memcmp(ubuf, lbuf, (size_t)un) != 0)
            return 0;
        if (un == 0)
            return 1;
    }
}

static char *read_target(int dirfd, const char *name, const struct stat *st)
{
    size_t size = st->st_size > 0 ? (size_t)st->st_size + 1 : 256;
    for (;;) {
        char *buf = xmalloc(size);
        ssize_t n = readlinkat(dirfd, name, buf, size);
        if (n < 0) {
            free(buf);
            return NULL;
        }
        if ((size_t)n < size) {
            buf[n] = '\0';
            return buf;
        }
        free(buf);
        if (size > 65536) {
            errno = ENAMETOOLONG;
            return NULL;
        }
        size *= 2;
    }
}

static int scan_fail(scan_ctx *ctx, const char *path, const char *what)
{
    return pdk_error_set(ctx->err, errno, "%s \"%s\"", what, path[0] ? path : ".");
}

/* Every lower entry at and beneath path (lst describes it) becomes a deletion. */
static int add_deleted_children(scan_ctx *ctx, int lower_parent, const char *name, const char *path,
                                unsigned depth);

static int add_deleted(scan_ctx *ctx, int lower_parent, const char *name, const char *path,
                       const struct stat *lst, bool whiteout, unsigned depth)
{
    pdk_change *c = push_change(ctx, path, PDK_CHANGE_DELETED);
    set_old(c, lst);
    c->whiteout = whiteout;
    if (S_ISLNK(lst->st_mode)) {
        c->old_target = read_target(lower_parent, name, lst);
        if (!c->old_target)
            return scan_fail(ctx, path, "cannot read the real symlink");
    }
    if (!S_ISDIR(lst->st_mode)) {
        pdk_strv_push(&ctx->handle_candidates, path);
        return 0;
    }
    if (depth >= MAX_DEPTH)
        return pdk_error_set(ctx->err, 0,
                             "\"%s\": directory tree deeper than %d levels; paddock does not "
                             "review trees that deep",
                             path, MAX_DEPTH);
    return add_deleted_children(ctx, lower_parent, name, path, depth);
}

/* Deletions for everything beneath the lower directory name (not the directory itself). */
static int add_deleted_children(scan_ctx *ctx, int lower_parent, const char *name, const char *path,
                                unsigned depth)
{
    _cleanup_close_ int dfd = open_entry(lower_parent, name, true);
    if (dfd < 0)
        return scan_fail(ctx, path, "cannot open the real directory");
    _cleanup_strv_ char **names = NULL;
    size_t count = 0;
    if (read_names(dfd, &names, &count) < 0)
        return scan_fail(ctx, path, "cannot read the real directory");
    for (size_t i = 0; i < count; i++) {
        _cleanup_free_ char *sub = child_path(path, names[i]);
        if (pdk_strv_contains(ctx->ignore, sub))
            continue;
        struct stat st;
        if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT)
                continue;
            return scan_fail(ctx, sub, "cannot stat the real entry");
        }
        if (add_deleted(ctx, dfd, names[i], sub, &st, false, depth + 1) < 0)
            return -1;
    }
    return 0;
}

static void note_origin(scan_ctx *ctx, int upper_dir, const char *name, pdk_change *c,
                        const struct stat *ust)
{
    unsigned char buf[OVL_FB_HEADER + MAX_FID_BYTES];
    ssize_t n = overlay_xattr(upper_dir, name, "origin", buf, sizeof(buf));
    if (n < 0 && errno == ERANGE)
        n = 0; /* present, but too long to be one we understand */
    if (n < 0)
        return;
    c->has_origin = true;
    if (c->status != PDK_CHANGE_ADDED)
        return;
    ctx->origins = xrealloc(ctx->origins, (ctx->origin_count + 1) * sizeof(*ctx->origins));
    origin_ref *o = &ctx->origins[ctx->origin_count++];
    memset(o, 0, sizeof(*o));
    o->item = (size_t)(c - ctx->items);
    o->type = -1;
    o->upper_ino = (S_ISREG(ust->st_mode) && ust->st_nlink > 1) ? ust->st_ino : 0;
    if (n > OVL_FB_HEADER && buf[1] == OVL_FB_MAGIC && buf[2] == (unsigned char)n) {
        o->type = buf[4];
        o->len = (unsigned)(n - OVL_FB_HEADER);
        memcpy(o->fid, buf + OVL_FB_HEADER, o->len);
    }
}

static int scan_dir(scan_ctx *ctx, const char *rel, int upper_fd, int lower_fd, bool opaque,
                    unsigned depth);

/* Recurse into the upper directory name (rel is its path). lower_parent is the lower
 * directory holding name when the lower entry is a directory to compare with, else -1. */
static int descend(scan_ctx *ctx, const char *rel, int upper_parent, int lower_parent,
                   const char *name, bool opaque, unsigned depth)
{
    if (depth >= MAX_DEPTH)
        return pdk_error_set(ctx->err, 0,
                             "\"%s\": directory tree deeper than %d levels; paddock does not "
                             "review trees that deep",
                             rel, MAX_DEPTH);
    _cleanup_close_ int ufd = open_entry(upper_parent, name, true);
    if (ufd < 0)
        return scan_fail(ctx, rel, "cannot open the session's directory");
    _cleanup_close_ int lfd = -1;
    if (lower_parent >= 0) {
        lfd = open_entry(lower_parent, name, true);
        if (lfd < 0)
            return scan_fail(ctx, rel, "cannot open the real directory");
    }
    return scan_dir(ctx, rel, ufd, lfd, opaque, depth + 1);
}

static int scan_entry(scan_ctx *ctx, const char *path, int upper_fd, int lower_fd, const char *name,
                      bool opaque, unsigned depth)
{
    struct stat ust, lst;
    if (fstatat(upper_fd, name, &ust, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno == ENOENT)
            return 0;
        return scan_fail(ctx, path, "cannot stat the session's entry");
    }
    bool have_lower = false;
    if (lower_fd >= 0) {
        if (fstatat(lower_fd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0)
            have_lower = true;
        else if (errno != ENOENT && errno != ENOTDIR)
            return scan_fail(ctx, path, "cannot stat the real entry");
    }

    if (is_whiteout(&ust))
        return have_lower ? add_deleted(ctx, lower_fd, name, path, &lst, true, depth) : 0;

    pdk_change_kind ukind = pdk_change_kind_of(ust.st_mode);
    bool uopaque = ukind == PDK_KIND_DIR && is_opaque(upper_fd, name);
    if (uopaque)
        pdk_strv_push(&ctx->opaque_dirs, path);

    if (!have_lower) {
        pdk_change *c = push_change(ctx, path, PDK_CHANGE_ADDED);
        set_new(c, &ust);
        if (ukind == PDK_KIND_SYMLINK) {
            c->new_target = read_target(upper_fd, name, &ust);
            if (!c->new_target)
                return scan_fail(ctx, path, "cannot read the session's symlink");
        }
        c->content_changed = ukind == PDK_KIND_FILE || ukind == PDK_KIND_SYMLINK;
        note_origin(ctx, upper_fd, name, c, &ust);
        if (ukind == PDK_KIND_DIR)
            return descend(ctx, path, upper_fd, -1, name, true, depth);
        return 0;
    }

    pdk_change_kind lkind = pdk_change_kind_of(lst.st_mode);
    if (ukind != lkind) {
        pdk_change *c = push_change(ctx, path, PDK_CHANGE_TYPE_CHANGED);
        set_old(c, &lst);
        set_new(c, &ust);
        c->content_changed = true;
        if (lkind == PDK_KIND_SYMLINK) {
            c->old_target = read_target(lower_fd, name, &lst);
            if (!c->old_target)
                return scan_fail(ctx, path, "cannot read the real symlink");
        }
        if (ukind == PDK_KIND_SYMLINK) {
            c->new_target = read_target(upper_fd, name, &ust);
            if (!c->new_target)
                return scan_fail(ctx, path, "cannot read the session's symlink");
        }
        note_origin(ctx, upper_fd, name, c, &ust);
        if (lkind == PDK_KIND_DIR) {
            if (depth >= MAX_DEPTH)
                return pdk_error_set(ctx->err, 0, "\"%s\": directory tree too deep", path);
            if (add_deleted_children(ctx, lower_fd, name, path, depth) < 0)
                return -1;
        }
        if (ukind == PDK_KIND_DIR)
            return descend(ctx, path, upper_fd, -1, name, true, depth);
        return 0;
    }

    bool mode_changed = (ust.st_mode & 07777) != (lst.st_mode & 07777);
    switch (ukind) {
    case PDK_KIND_DIR: {
        if (mode_changed) {
            pdk_change *c = push_change(ctx, path, PDK_CHANGE_MODIFIED);
            set_old(c, &lst);
            set_new(c, &ust);
            note_origin(ctx, upper_fd, name, c, &ust);
        }
        return descend(ctx, path, upper_fd, lower_fd, name, opaque || uopaque, depth);
    }
    case PDK_KIND_FILE: {
        bool content_changed = ust.st_size != lst.st_size;
        if (!content_changed) {
            int same = same_content(upper_fd, lower_fd, name);
            if (same < 0) {
                if (errno == ENOENT)
                    return 0; /* vanished during the scan */
                pdk_debug("cannot compare \"%s\" (%s): reporting it as modified", path,
                          strerror(errno));
            }
            content_changed = same != 1;
        }
        pdk_change *c = NULL;
        if (content_changed || mode_changed) {
            c = push_change(ctx, path, PDK_CHANGE_MODIFIED);
            set_old(c, &lst);
            set_new(c, &ust);
            c->content_changed = content_changed;
            note_origin(ctx, upper_fd, name, c, &ust);
        }
        /* A hard link made in the sandbox names this lower file as its origin. */
        if (ust.st_nlink > 1) {
            pdk_strv_push(&ctx->handle_candidates, path);
            ctx->linked_inos = xrealloc(ctx->linked_inos, (ctx->linked_count + 1) * sizeof(ino_t));
            ctx->linked_inos[ctx->linked_count++] = ust.st_ino;
        }
        return 0;
    }
    case PDK_KIND_SYMLINK: {
        _cleanup_free_ char *ut = read_target(upper_fd, name, &ust);
        if (!ut)
            return scan_fail(ctx, path, "cannot read the session's symlink");
        _cleanup_free_ char *lt = read_target(lower_fd, name, &lst);
        if (!lt)
            return scan_fail(ctx, path, "cannot read the real symlink");
        if (strcmp(ut, lt) != 0) {
            pdk_change *c = push_change(ctx, path, PDK_CHANGE_MODIFIED);
            set_old(c, &lst);
            set_new(c, &ust);
            c->content_changed = true;
            c->old_target = steal_pointer(&lt);
            c->new_target = steal_pointer(&ut);
            note_origin(ctx, upper_fd, name, c, &ust);
        }
        return 0;
    }
    case PDK_KIND_OTHER: {
        if (ust.st_mode != lst.st_mode || ust.st_rdev != lst.st_rdev) {
            pdk_change *c = push_change(ctx, path, PDK_CHANGE_MODIFIED);
            set_old(c, &lst);
            set_new(c, &ust);
            c->content_changed =
                (ust.st_mode & S_IFMT) != (lst.st_mode & S_IFMT) || ust.st_rdev != lst.st_rdev;
            note_origin(ctx, upper_fd, name, c, &ust);
        }
        return 0;
    }
    case PDK_KIND_NONE:
    default:
        return 0;
    }
}

/* upper_fd: the upper directory at rel. lower_fd: the lower directory at rel, or -1 when the
 * lower has none to compare with. opaque: the merged view of this directory is the upper
 * alone, so lower entries absent from the upper are deletions. */
static int scan_dir(scan_ctx *ctx, const char *rel, int upper_fd, int lower_fd, bool opaque,
                    unsigned depth)
{
    _cleanup_strv_ char **unames = NULL;
    size_t ucount = 0;
    if (read_names(upper_fd, &unames, &ucount) < 0)
        return scan_fail(ctx, rel, "cannot read the session's directory");
    for (size_t i = 0; i < ucount; i++) {
        _cleanup_free_ char *path = child_path(rel, unames[i]);
        if (pdk_strv_contains(ctx->ignore, path))
            continue;
        if (scan_entry(ctx, path, upper_fd, lower_fd, unames[i], opaque, depth) < 0)
            return -1;
    }
    if (!opaque || lower_fd < 0)
        return 0;
    _cleanup_strv_ char **lnames = NULL;
    size_t lcount = 0;
    if (read_names(lower_fd, &lnames, &lcount) < 0)
        return scan_fail(ctx, rel, "cannot read the real directory");
    for (size_t i = 0; i < lcount; i++) {
        if (names_contain(unames, ucount, lnames[i]))
            continue;
        _cleanup_free_ char *path = child_path(rel, lnames[i]);
        if (pdk_strv_contains(ctx->ignore, path))
            continue;
        struct stat lst;
        if (fstatat(lower_fd, lnames[i], &lst, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT)
                continue;
            return scan_fail(ctx, path, "cannot stat the real entry");
        }
        if (add_deleted(ctx, lower_fd, lnames[i], path, &lst, false, depth) < 0)
            return -1;
    }
    return 0;
}

/* For each added entry with an origin, look for that origin among the real entries the
 * session deleted or hard-linked: a match means a rename or link made in the sandbox, not
 * an entry deleted outside.
 *
 * An overlay mounted in a user namespace cannot encode file handles and writes an empty
 * origin ("copied up from somewhere"). Then a non-directory counts as renamed or linked
 * when the session removed or replaced some real entry of the same kind, or when it is a
 * hard link of a copied-up file whose real counterpart exists; otherwise the real entry it
 * came from is taken to have been deleted outside. (Directories are never renamed in the
 * sandbox: without redirect_dir the overlay refuses it and mv copies.) */
static void resolve_origins(scan_ctx *ctx)
{
    for (size_t j = 0; j < ctx->origin_count; j++) {
        origin_ref *o = &ctx->origins[j];
        pdk_change *c = &ctx->items[o->item];
        for (size_t k = 0; k < ctx->linked_count && o->upper_ino; k++)
            if (ctx->linked_inos[k] == o->upper_ino)
                c->origin_elsewhere = true;
        if (o->type >= 0 || c->new_kind == PDK_KIND_DIR || c->origin_elsewhere)
            continue;
        for (size_t i = 0; i < ctx->count; i++) {
            const pdk_change *d = &ctx->items[i];
            if ((d->status == PDK_CHANGE_DELETED || d->status == PDK_CHANGE_TYPE_CHANGED) &&
                d->old_kind == c->new_kind) {
                c->origin_elsewhere = true;
                break;
            }
        }
    }
    if (ctx->origin_count == 0 || !ctx->handle_candidates)
        return;
    struct file_handle *fh = xmalloc(sizeof(*fh) + MAX_HANDLE_SZ);
    for (size_t i = 0; ctx->handle_candidates[i]; i++) {
        const char *leaf = NULL;
        _cleanup_close_ int parent =
            pdk_open_parent_beneath(ctx->lower_root, ctx->handle_candidates[i], false, &leaf);
        if (parent < 0)
            continue;
        fh->handle_bytes = MAX_HANDLE_SZ;
        int mount_id;
        if (name_to_handle_at(parent, leaf, fh, &mount_id, 0) < 0)
            continue;
        for (size_t j = 0; j < ctx->origin_count; j++) {
            origin_ref *o = &ctx->origins[j];
            if (o->type == fh->handle_type && o->len == fh->handle_bytes &&
                memcmp(o->fid, fh->f_handle, o->len) == 0)
                ctx->items[o->item].origin_elsewhere = true;
        }
    }
    free(fh);
}

static int sort_changes(const void *a, const void *b)
{
    return strcmp(((const pdk_change *)a)->path, ((const pdk_change *)b)->path);
}

int pdk_changes_scan(int lower_dirfd, int upper_dirfd, char *const *ignore, pdk_change_list *out,
                     pdk_error *err)
{
    memset(out, 0, sizeof(*out));
    scan_ctx ctx = {.lower_root = lower_dirfd, .ignore = ignore, .err = err};
    _cleanup_close_ int ufd = pdk_open_beneath(upper_dirfd, ".", O_RDONLY | O_DIRECTORY, 0);
    if (ufd < 0)
        return pdk_error_set(err, errno, "cannot open the session's upper layer");
    _cleanup_close_ int lfd = pdk_open_beneath(lower_dirfd, ".", O_RDONLY | O_DIRECTORY, 0);
    if (lfd < 0)
        return pdk_error_set(err, errno, "cannot open the workspace");
    int r = scan_dir(&ctx, "", ufd, lfd, false, 0);
    if (r == 0)
        resolve_origins(&ctx);
    free(ctx.origins);
    free(ctx.linked_inos);
    pdk_strv_free(ctx.handle_candidates);
    if (r < 0) {
        pdk_change_list list = {
            .items = ctx.items, .count = ctx.count, .opaque_dirs = ctx.opaque_dirs};
        pdk_change_list_free(&list);
        return -1;
    }
    if (ctx.count)
        qsort(ctx.items, ctx.count, sizeof(*ctx.items), sort_changes);
    size_t nopaque = pdk_strv_length(ctx.opaque_dirs);
    if (nopaque)
        qsort(ctx.opaque_dirs, nopaque, sizeof(char *), sort_names);
    out->items = ctx.items;
    out->count = ctx.count;
    out->opaque_dirs = ctx.opaque_dirs;
    return 0;
}

size_t pdk_changes_count(const pdk_change_list *list)
{
    size_t n = 0;
    for (size_t i = 0; i < list->count; i++) {
        const pdk_change *c = &list->items[i];
        if (!(c->status == PDK_CHANGE_MODIFIED && c->new_kind == PDK_KIND_DIR))
            n++;
    }
    return n;
}
