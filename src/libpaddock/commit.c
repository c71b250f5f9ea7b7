/* commit.c: see commit.h.
 *
 * Every operation on the real workspace goes through a parent directory fd opened with
 * openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) right before the operation, and a
 * single-component name: mkdirat, openat(O_CREAT|O_EXCL|O_NOFOLLOW), symlinkat, renameat,
 * unlinkat, none of which follows a symlink in its last component. The upper layer is read
 * the same way. Before an entry is replaced or removed, its type and ctime are compared with
 * what the scan saw, which narrows (it cannot close) the window for another process to
 * change it under us; a change found there stops the commit.
 */
#include "commit.h"

#include "fsutil.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

void (*pdk__commit_before_apply)(void *arg);
void *pdk__commit_before_apply_arg;

typedef struct commit_ctx {
    const pdk_commit_request *req;
    pdk_change_list changes;
    bool *selected;
    bool *applied;
    pdk_commit_result *res;
    char **touched_dirs; /* real directories to fsync at the end ("" is the root) */
    unsigned tmp_counter;
    bool as_root;
    pdk_error *err;
} commit_ctx;

bool pdk_commit_path_protected(const char *path, char *const *protected_paths)
{
    for (size_t i = 0; protected_paths && protected_paths[i]; i++) {
        const char *p = protected_paths[i];
        while (p[0] == '.' && p[1] == '/')
            p += 2;
        while (*p == '/')
            p++;
        size_t n = strlen(p);
        bool dir = n > 0 && p[n - 1] == '/';
        while (n > 0 && p[n - 1] == '/')
            n--;
        if (n == 0) {
            if (dir)
                return true; /* "/" protects everything */
            continue;
        }
        if (strncmp(path, p, n) != 0)
            continue;
        if (path[n] == '\0' || (dir && path[n] == '/'))
            return true;
    }
    return false;
}

/* True when a protected entry lies strictly beneath path ("a" for ".git/config" when path
 * is ".git"): a file or symlink there would take the place of the protected path's
 * directory (a ".git" symlink to a directory the sandbox filled, say). */
static bool path_is_above_protected(const char *path, char *const *protected_paths)
{
    size_t n = strlen(path);
    for (size_t i = 0; protected_paths && protected_paths[i]; i++) {
        const char *p = protected_paths[i];
        while (p[0] == '.' && p[1] == '/')
            p += 2;
        while (*p == '/')
            p++;
        if (strncmp(p, path, n) == 0 && p[n] == '/' && p[n + 1] != '\0')
            return true;
    }
    return false;
}

void pdk_commit_result_free(pdk_commit_result *result)
{
    if (!result)
        return;
    for (size_t i = 0; i < result->applied_count; i++)
        free(result->applied[i].path);
    for (size_t i = 0; i < result->refused_count; i++) {
        free(result->refused[i].path);
        free(result->refused[i].reason);
    }
    free(result->applied);
    free(result->refused);
    memset(result, 0, sizeof(*result));
}

static void refuse(commit_ctx *ctx, const char *path, const char *fmt, ...) PDK_PRINTF(3, 4);
static void refuse(commit_ctx *ctx, const char *path, const char *fmt, ...)
{
    pdk_commit_result *r = ctx->res;
    /* One reason per path: the first found. */
    for (size_t i = 0; i < r->refused_count; i++)
        if (strcmp(r->refused[i].path, path) == 0)
            return;
    va_list ap;
    va_start(ap, fmt);
    char *reason = xvasprintf(fmt, ap);
    va_end(ap);
    r->refused = xrealloc(r->refused, (r->refused_count + 1) * sizeof(*r->refused));
    r->refused[r->refused_count++] = (pdk_commit_refusal){xstrdup(path), reason};
}

static void note_applied(commit_ctx *ctx, size_t index)
{
    const pdk_change *c = &ctx->changes.items[index];
    pdk_commit_result *r = ctx->res;
    r->applied = xrealloc(r->applied, (r->applied_count + 1) * sizeof(*r->applied));
    r->applied[r->applied_count++] = (pdk_commit_entry){
        .path = xstrdup(c->path),
        .status = c->status,
        .kind = c->status == PDK_CHANGE_DELETED ? c->old_kind : c->new_kind,
        .ctime_ns = -1,
    };
    ctx->applied[index] = true;
}

static char *parent_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? xstrndup(path, (size_t)(slash - path)) : xstrdup("");
}

static void touch_dir(commit_ctx *ctx, const char *dir)
{
    if (!pdk_strv_contains(ctx->touched_dirs, dir))
        pdk_strv_push(&ctx->touched_dirs, dir);
}

static void touch_parent(commit_ctx *ctx, const char *path)
{
    _cleanup_free_ char *p = parent_of(path);
    touch_dir(ctx, p);
}

static int64_t ctime_ns(const struct stat *st)
{
    return (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

static int64_t statx_ns(const struct statx_timestamp *t)
{
    return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static bool committed_with_ctime(const pdk_commit_request *req, const char *path, int64_t ct)
{
    for (size_t i = 0; i < req->committed_count; i++)
        if (req->committed[i].path && strcmp(req->committed[i].path, path) == 0 &&
            req->committed[i].ctime_ns == ct)
            return true;
    return false;
}

static bool creates_dir(const pdk_change *c)
{
    return c->new_kind == PDK_KIND_DIR &&
           (c->status == PDK_CHANGE_ADDED || c->status == PDK_CHANGE_TYPE_CHANGED);
}

/* The nearest proper ancestor of change i that this commit creates as a directory, or
 * NULL. Beneath it the real workspace has nothing yet. */
static const pdk_change *created_ancestor(commit_ctx *ctx, size_t i)
{
    _cleanup_free_ char *p = xstrdup(ctx->changes.items[i].path);
    for (char *slash = strrchr(p, '/'); slash; slash = strrchr(p, '/')) {
        *slash = '\0';
        const pdk_change *a = pdk_changes_find(&ctx->changes, p);
        if (a && creates_dir(a) && ctx->selected[a - ctx->changes.items])
            return a;
    }
    return NULL;
}

/* Select the changes the request names; an added directory some selected change lies in
 * is selected too (its files cannot be written without it). */
static int select_changes(commit_ctx *ctx)
{
    const pdk_commit_request *req = ctx->req;
    pdk_change_list *cl = &ctx->changes;
    for (size_t s = 0; req->select && req->select[s]; s++) {
        char *const one[] = {req->select[s], NULL};
        bool any = false;
        for (size_t i = 0; i < cl->count && !any; i++)
            any = pdk_changes_path_selected(cl->items[i].path, one);
        if (!any)
            return pdk_error_set(ctx->err, 0,
                                 "\"%s\": the session has no change at or beneath this path "
                                 "(see 'paddock diff')",
                                 req->select[s]);
    }
    for (size_t i = 0; i < cl->count; i++)
        ctx->selected[i] = pdk_changes_path_selected(cl->items[i].path, req->select);
    if (!req->select || !req->select[0])
        return 0;
    for (size_t i = 0; i < cl->count; i++) {
        if (!ctx->selected[i])
            continue;
        _cleanup_free_ char *p = xstrdup(cl->items[i].path);
        for (char *slash = strrchr(p, '/'); slash; slash = strrchr(p, '/')) {
            *slash = '\0';
            const pdk_change *a = pdk_changes_find(cl, p);
            if (!a || ctx->selected[a - cl->items])
                continue;
            if (a->status == PDK_CHANGE_ADDED && a->new_kind == PDK_KIND_DIR)
                ctx->selected[a - cl->items] = true;
            else if (a->new_kind == PDK_KIND_DIR && a->status == PDK_CHANGE_TYPE_CHANGED)
                refuse(ctx, cl->items[i].path,
                       "its parent \"%s\" becomes a directory in the session: select \"%s\" "
                       "too",
                       a->path, a->path);
        }
    }
    return 0;
}

static void check_change(commit_ctx *ctx, size_t i)
{
    const pdk_commit_request *req = ctx->req;
    const pdk_change *c = &ctx->changes.items[i];

    if (c->new_kind == PDK_KIND_OTHER) {
        refuse(ctx, c->path,
               "special file (fifo, socket or device): paddock commits only files, "
               "directories and symlinks");
        return;
    }
    if (c->new_kind == PDK_KIND_FILE && (c->new_mode & (S_ISUID | S_ISGID))) {
        refuse(ctx, c->path,
               "set-user-ID or set-group-ID file (mode %o): clear the bit in the "
               "session before committing it",
               (unsigned)(c->new_mode & 07777));
        return;
    }
    if (!req->allow_protected && pdk_commit_path_protected(c->path, req->protected_paths)) {
        refuse(ctx, c->path,
               "protected path (read-only in the sandbox); add "
               "--include-protected to commit it anyway");
        return;
    }
    if (!req->allow_protected && c->new_kind != PDK_KIND_NONE && c->new_kind != PDK_KIND_DIR &&
        path_is_above_protected(c->path, req->protected_paths)) {
        refuse(ctx, c->path,
               "it would replace the directory of a protected path with a file or a symlink; "
               "add --include-protected to commit it anyway");
        return;
    }
    bool deleted_outside = c->status == PDK_CHANGE_ADDED && c->has_origin && !c->origin_elsewhere;
    if (created_ancestor(ctx, i)) {
        /* Its directory is new: there is no real entry to conflict with. */
        if (deleted_outside)
            refuse(ctx, c->path,
                   "it existed in the workspace when the session first changed "
                   "it and was deleted outside the sandbox since");
        return;
    }

    const char *leaf = NULL;
    _cleanup_close_ int parent = pdk_open_parent_beneath(req->lower_dirfd, c->path, false, &leaf);
    if (parent < 0) {
        switch (errno) {
        case ELOOP:
        case EXDEV:
            refuse(ctx, c->path,
                   "a directory on its path in the workspace is a symlink; "
                   "paddock never writes through symlinks");
            break;
        case ENOTDIR:
            refuse(ctx, c->path,
                   "a component of its path in the workspace is not a directory "
                   "(changed outside the sandbox)");
            break;
        case ENOENT:
            refuse(ctx, c->path,
                   "its directory no longer exists in the workspace (deleted "
                   "outside the sandbox)");
            break;
        default:
            refuse(ctx, c->path, "cannot open its directory in the workspace: %s", strerror(errno));
            break;
        }
        return;
    }
    struct statx stx;
    bool exists =
        statx(parent, leaf, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_CTIME | STATX_BTIME, &stx) == 0;
    if (!exists && errno != ENOENT) {
        refuse(ctx, c->path, "cannot stat it in the workspace: %s", strerror(errno));
        return;
    }
    if (c->status == PDK_CHANGE_ADDED) {
        if (exists)
            refuse(ctx, c->path,
                   "created in the workspace after the session began (outside "
                   "the sandbox)");
        else if (deleted_outside)
            refuse(ctx, c->path,
                   "it existed in the workspace when the session first changed "
                   "it and was deleted outside the sandbox since");
        return;
    }
    if (!exists || pdk_change_kind_of(stx.stx_mode) != c->old_kind) {
        refuse(ctx, c->path, "changed in the workspace during the commit; run it again");
        return;
    }
    if (c->old_kind == PDK_KIND_DIR)
        return; /* a directory's ctime moves with every entry created or removed in it */
    int64_t ct = statx_ns(&stx.stx_ctime);
    if (ct <= req->baseline_ns || committed_with_ctime(req, c->path, ct))
        return;
    /* The scan ran just now, so a path the session added that was created outside in the
     * meantime shows as modified: the birth time tells the two apart where it is known. */
    if ((stx.stx_mask & STATX_BTIME) && statx_ns(&stx.stx_btime) > req->baseline_ns &&
        !c->has_origin)
        refuse(ctx, c->path,
               "created in the workspace after the session began (outside the "
               "sandbox)");
    else
        refuse(ctx, c->path,
               "changed in the workspace after the session began (outside the "
               "sandbox)");
}

static void refusal_message(commit_ctx *ctx)
{
    pdk_commit_result *r = ctx->res;
    pdk_buf b = {0};
    pdk_buf_printf(&b, "nothing was committed: %zu %s refused: ", r->refused_count,
                   r->refused_count == 1 ? "change was" : "changes were");
    for (size_t i = 0; i < r->refused_count; i++) {
        _cleanup_free_ char *item =
            xasprintf("%s\"%s\" (%s)", i ? "; " : "", r->refused[i].path, r->refused[i].reason);
        if (b.len + strlen(item) > sizeof(ctx->err->message) - 40) {
            pdk_buf_printf(&b, "; and %zu more", r->refused_count - i);
            break;
        }
        pdk_buf_puts(&b, item);
    }
    pdk_error_set(ctx->err, 0, "%s", b.data);
    pdk_buf_free(&b);
}

/* ---- applying ---------------------------------------------------------------------- */

static int open_real_parent(commit_ctx *ctx, const char *path, const char **leaf)
{
    int fd = pdk_open_parent_beneath(ctx->req->lower_dirfd, path, false, leaf);
    if (fd >= 0)
        return fd;
    if (errno == ELOOP || errno == EXDEV)
        return pdk_error_set(ctx->err, 0,
                             "\"%s\": a directory on its path in the workspace became a symlink "
                             "during the commit; paddock never writes through symlinks",
                             path);
    return pdk_error_set(ctx->err, errno,
                         "\"%s\": cannot open its directory in the workspace (it changed during "
                         "the commit?)",
                         path);
}

static void temp_name(commit_ctx *ctx, char *buf, size_t len)
{
    snprintf(buf, len, ".paddock-commit.%d.%u", (int)getpid(), ctx->tmp_counter++);
}

/* Check that the real entry is still what the scan saw before replacing or removing it. */
static int verify_target(commit_ctx *ctx, int parent, const char *leaf, const pdk_change *c,
                         bool expect_absent)
{
    struct stat st;
    if (fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno == ENOENT && expect_absent)
            return 0;
        return pdk_error_set(ctx->err, errno == ENOENT ? 0 : errno,
                             "\"%s\": changed in the workspace during the commit; run it again",
                             c->path);
    }
    if (expect_absent)
        return pdk_error_set(ctx->err, 0,
                             "\"%s\": created in the workspace during the commit; run it again",
                             c->path);
    if (pdk_change_kind_of(st.st_mode) != c->old_kind ||
        (c->old_kind != PDK_KIND_DIR && ctime_ns(&st) != c->lower_ctime_ns))
        return pdk_error_set(ctx->err, 0,
                             "\"%s\": changed in the workspace during the commit; run it again",
                             c->path);
    return 0;
}

static int copy_data(int in, int out)
{
    bool use_cfr = true;
    for (;;) {
        if (use_cfr) {
            ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
            if (n > 0)
                continue;
            if (n == 0)
                return 0;
            if (errno == EINTR)
                continue;
            if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP &&
                errno != EBADF && errno != EPERM && errno != ETXTBSY)
                return -1;
            use_cfr = false;
        }
        char buf[65536];
        ssize_t n = read(in, buf, sizeof(buf));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            return 0;
        if (pdk_write_all(out, buf, (size_t)n) < 0)
            return -1;
    }
}

/* Rename the temporary over the target: no-replace for an added path (atomically refusing
 * one created meanwhile), plain rename otherwise. */
static int replace_with(commit_ctx *ctx, int parent, const char *tmp, const char *leaf,
                        const pdk_change *c, bool expect_absent)
{
    if (expect_absent) {
        if (renameat2(parent, tmp, parent, leaf, RENAME_NOREPLACE) == 0)
            return 0;
        if (errno == EEXIST)
            return pdk_error_set(ctx->err, 0,
                                 "\"%s\": created in the workspace during the commit; run it "
                                 "again",
                                 c->path);
        if (errno != EINVAL && errno != ENOSYS)
            return pdk_error_set(ctx->err, errno, "\"%s\": cannot rename into place", c->path);
    }
    if (renameat(parent, tmp, parent, leaf) < 0)
        return pdk_error_set(ctx->err, errno, "\"%s\": cannot rename into place", c->path);
    return 0;
}

static bool target_absent(const pdk_change *c)
{
    return c->status == PDK_CHANGE_ADDED ||
           (c->status == PDK_CHANGE_TYPE_CHANGED && c->old_kind == PDK_KIND_DIR);
}

/* Put the finished temporary entry tmp in place of leaf (checked again just before), or
 * remove it. */
static int install_temp(commit_ctx *ctx, int parent, const char *tmp, const char *leaf,
                        const pdk_change *c)
{
    bool absent = target_absent(c);
    if (verify_target(ctx, parent, leaf, c, absent) < 0 ||
        replace_with(ctx, parent, tmp, leaf, c, absent) < 0) {
        unlinkat(parent, tmp, 0);
        return -1;
    }
    touch_parent(ctx, c->path);
    return 0;
}

static int write_file(commit_ctx *ctx, const pdk_change *c)
{
    const char *leaf = NULL;
    _cleanup_close_ int parent = open_real_parent(ctx, c->path, &leaf);
    if (parent < 0)
        return -1;
    _cleanup_close_ int src = pdk_open_regular_beneath(ctx->req->upper_dirfd, c->path);
    if (src < 0)
        return pdk_error_set(ctx->err, errno, "\"%s\": cannot open the session's copy", c->path);
    struct stat st;
    if (fstat(src, &st) < 0)
        return pdk_error_set(ctx->err, errno, "\"%s\": cannot stat the session's copy", c->path);
    if (!S_ISREG(st.st_mode))
        return pdk_error_set(ctx->err, 0, "\"%s\": the session's copy is no longer a regular file",
                             c->path);
    if (st.st_mode & (S_ISUID | S_ISGID))
        return pdk_error_set(ctx->err, 0, "\"%s\": the session's copy became set-id", c->path);

    char tmp[64];
    int dst = -1;
    for (int attempt = 0; attempt < 100; attempt++) {
        temp_name(ctx, tmp, sizeof(tmp));
        dst = openat(parent, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (dst >= 0 || errno != EEXIST)
            break;
    }
    if (dst < 0)
        return pdk_error_set(ctx->err, errno, "\"%s\": cannot create a temporary file next to it",
                             c->path);
    const char *what = NULL;
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    if (copy_data(src, dst) < 0)
        what = "cannot copy the content";
    else if (ctx->as_root && fchown(dst, st.st_uid, st.st_gid) < 0)
        what = "cannot set the owner";
    else if (fchmod(dst, st.st_mode & 07777) < 0)
        what = "cannot set the mode";
    else if (futimens(dst, times) < 0)
        what = "cannot set the modification time";
    else if (fsync(dst) < 0)
        what = "cannot fsync";
    int saved = errno;
    if (close(dst) < 0 && !what) {
        saved = errno;
        what = "cannot close";
    }
    if (what) {
        unlinkat(parent, tmp, 0);
        return pdk_error_set(ctx->err, saved, "\"%s\": %s", c->path, what);
    }
    return install_temp(ctx, parent, tmp, leaf, c);
}

static int write_symlink(commit_ctx *ctx, const pdk_change *c)
{
    const char *leaf = NULL;
    _cleanup_close_ int parent = open_real_parent(ctx, c->path, &leaf);
    if (parent < 0)
        return -1;
    char tmp[64];
    int r = -1;
    for (int attempt = 0; attempt < 100; attempt++) {
        temp_name(ctx, tmp, sizeof(tmp));
        r = symlinkat(c->new_target, parent, tmp);
        if (r == 0 || errno != EEXIST)
            break;
    }
    if (r < 0)
        return pdk_error_set(ctx->err, errno,
                             "\"%s\": cannot create a temporary symlink next to it", c->path);
    struct timespec times[2] = {c->new_mtime, c->new_mtime};
    if (ctx->as_root && fchownat(parent, tmp, c->new_uid, c->new_gid, AT_SYMLINK_NOFOLLOW) < 0) {
        int saved = errno;
        unlinkat(parent, tmp, 0);
        return pdk_error_set(ctx->err, saved, "\"%s\": cannot set the owner", c->path);
    }
    utimensat(parent, tmp, times, AT_SYMLINK_NOFOLLOW); /* best effort */
    return install_temp(ctx, parent, tmp, leaf, c);
}

/* Directories are made 0700 (so that we can fill them whatever their final mode) and get
 * their mode once everything beneath them is written. */
static int make_dir(commit_ctx *ctx, const pdk_change *c)
{
    const char *leaf = NULL;
    _cleanup_close_ int parent = open_real_parent(ctx, c->path, &leaf);
    if (parent < 0)
        return -1;
    if (c->status == PDK_CHANGE_ADDED) {
        if (mkdirat(parent, leaf, 0700) < 0)
            return pdk_error_set(ctx->err, errno == EEXIST ? 0 : errno,
                                 errno == EEXIST ? "\"%s\": created in the workspace during the "
                                                   "commit; run it again"
                                                 : "\"%s\": cannot create the directory",
                                 c->path);
        if (ctx->as_root) {
            _cleanup_close_ int dfd =
                openat(parent, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (dfd < 0 || fchown(dfd, c->new_uid, c->new_gid) < 0)
                return pdk_error_set(ctx->err, errno, "\"%s\": cannot set the owner", c->path);
        }
        touch_parent(ctx, c->path);
        touch_dir(ctx, c->path);
        return 0;
    }
    /* A file, symlink or special file becomes a directory: swap a new directory in. */
    if (verify_target(ctx, parent, leaf, c, false) < 0)
        return -1;
    char tmp[64];
    int r = -1;
    for (int attempt = 0; attempt < 100; attempt++) {
        temp_name(ctx, tmp, sizeof(tmp));
        r = mkdirat(parent, tmp, 0700);
        if (r == 0 || errno != EEXIST)
            break;
    }
    if (r < 0)
        return pdk_error_set(ctx->err, errno, "\"%s\": cannot create a temporary directory",
                             c->path);
    if (ctx->as_root) {
        _cleanup_close_ int dfd =
            openat(parent, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0 || fchown(dfd, c->new_uid, c->new_gid) < 0) {
            int saved = errno;
            unlinkat(parent, tmp, AT_REMOVEDIR);
            return pdk_error_set(ctx->err, saved, "\"%s\": cannot set the owner", c->path);
        }
    }
    if (renameat2(parent, tmp, parent, leaf, RENAME_EXCHANGE) == 0) {
        /* The old entry now has the temporary name. */
        if (unlinkat(parent, tmp, 0) < 0)
            return pdk_error_set(ctx->err, errno, "\"%s\": cannot remove the replaced entry",
                                 c->path);
    } else if (errno == EINVAL || errno == ENOSYS) {
        if (unlinkat(parent, leaf, 0) < 0 || renameat(parent, tmp, parent, leaf) < 0) {
            int saved = errno;
            unlinkat(parent, tmp, AT_REMOVEDIR);
            return pdk_error_set(ctx->err, saved, "\"%s\": cannot replace it with a directory",
                                 c->path);
        }
    } else {
        int saved = errno;
        unlinkat(parent, tmp, AT_REMOVEDIR);
        return pdk_error_set(ctx->err, saved, "\"%s\": cannot replace it with a directory",
                             c->path);
    }
    touch_parent(ctx, c->path);
    touch_dir(ctx, c->path);
    return 0;
}

static int set_dir_mode(commit_ctx *ctx, const pdk_change *c)
{
    mode_t mode = c->new_mode & 07777;
    _cleanup_close_ int dfd =
        pdk_open_beneath(ctx->req->lower_dirfd, c->path, O_RDONLY | O_DIRECTORY, 0);
    if (dfd >= 0) {
        if (fchmod(dfd, mode) < 0)
            return pdk_error_set(ctx->err, errno, "\"%s\": cannot set the mode", c->path);
        return 0;
    }
    if (errno != EACCES)
        return pdk_error_set(ctx->err, errno, "\"%s\": cannot open the directory in the workspace",
                             c->path);
    /* Not readable by us: chmod through an O_PATH fd of exactly this directory. */
    _cleanup_close_ int pfd =
        pdk_open_beneath(ctx->req->lower_dirfd, c->path, O_PATH | O_DIRECTORY, 0);
    if (pfd < 0)
        return pdk_error_set(ctx->err, errno, "\"%s\": cannot open the directory in the workspace",
                             c->path);
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
    if (chmod(proc, mode) < 0)
        return pdk_error_set(ctx->err, errno, "\"%s\": cannot set the mode", c->path);
    return 0;
}

static int remove_real(commit_ctx *ctx, const pdk_change *c)
{
    const char *leaf = NULL;
    _cleanup_close_ int parent = open_real_parent(ctx, c->path, &leaf);
    if (parent < 0)
        return -1;
    if (verify_target(ctx, parent, leaf, c, false) < 0)
        return -1;
    bool dir = c->old_kind == PDK_KIND_DIR;
    if (unlinkat(parent, leaf, dir ? AT_REMOVEDIR : 0) < 0) {
        if (dir && (errno == ENOTEMPTY || errno == EEXIST))
            return pdk_error_set(ctx->err, 0,
                                 "\"%s\": the directory in the workspace holds entries the "
                                 "session did not see (created during the commit?); run it again",
                                 c->path);
        return pdk_error_set(ctx->err, errno, "\"%s\": cannot remove it from the workspace",
                             c->path);
    }
    touch_parent(ctx, c->path);
    return 0;
}

static int apply_all(commit_ctx *ctx)
{
    pdk_change_list *cl = &ctx->changes;
    /* 1. Deletions, deepest first (reverse byte order puts "a/b" before "a"). The old
     *    directory of a directory that becomes something else goes here too. */
    for (size_t k = cl->count; k-- > 0;) {
        const pdk_change *c = &cl->items[k];
        if (!ctx->selected[k])
            continue;
        bool del = c->status == PDK_CHANGE_DELETED;
        bool dir_goes = c->status == PDK_CHANGE_TYPE_CHANGED && c->old_kind == PDK_KIND_DIR;
        if (!del && !dir_goes)
            continue;
        if (remove_real(ctx, c) < 0)
            return -1;
        if (del)
            note_applied(ctx, k);
    }
    /* 2. Directories and files, parents first. */
    for (size_t k = 0; k < cl->count; k++) {
        const pdk_change *c = &cl->items[k];
        if (!ctx->selected[k] || c->status == PDK_CHANGE_DELETED)
            continue;
        int r = 0;
        switch (c->new_kind) {
        case PDK_KIND_DIR:
            if (c->status != PDK_CHANGE_MODIFIED)
                r = make_dir(ctx, c);
            break;
        case PDK_KIND_FILE:
            r = write_file(ctx, c);
            break;
        case PDK_KIND_SYMLINK:
            r = write_symlink(ctx, c);
            break;
        case PDK_KIND_OTHER:
        case PDK_KIND_NONE:
        default:
            r = pdk_error_set(ctx->err, 0, "\"%s\": cannot commit a special file", c->path);
            break;
        }
        if (r < 0)
            return -1;
        if (c->new_kind != PDK_KIND_DIR)
            note_applied(ctx, k);
    }
    /* 3. Directory modes, deepest first, now that everything beneath is written. */
    for (size_t k = cl->count; k-- > 0;) {
        const pdk_change *c = &cl->items[k];
        if (!ctx->selected[k] || c->status == PDK_CHANGE_DELETED || c->new_kind != PDK_KIND_DIR)
            continue;
        if (set_dir_mode(ctx, c) < 0)
            return -1;
        touch_dir(ctx, c->path);
        note_applied(ctx, k);
    }
    return 0;
}

/* The directories whose entries changed, synced: what makes the renames durable. A failure
 * is an error (the files are written, but may not survive a crash). */
static int sync_dirs(commit_ctx *ctx, pdk_error *err)
{
    int ret = 0;
    for (size_t i = 0; ctx->touched_dirs && ctx->touched_dirs[i]; i++) {
        _cleanup_close_ int fd =
            pdk_open_beneath(ctx->req->lower_dirfd, ctx->touched_dirs[i], O_PATH | O_DIRECTORY, 0);
        if (fd < 0) {
            /* gone (deleted by this commit: its parent is synced) or no longer one to write
             * through (a symlink now: refused on its own) */
            pdk_debug("not syncing \"%s\" in the workspace: %s", ctx->touched_dirs[i],
                      strerror(errno));
            continue;
        }
        if (pdk_fsync_dir(fd) < 0 && ret == 0)
            ret = pdk_error_set(err, errno,
                                "the changes were written, but the directory \"%s\" of the "
                                "workspace could not be synced to the disk",
                                ctx->touched_dirs[i][0] ? ctx->touched_dirs[i] : ".");
    }
    return ret;
}

static void record_ctimes(commit_ctx *ctx)
{
    pdk_commit_result *r = ctx->res;
    for (size_t i = 0; i < r->applied_count; i++) {
        pdk_commit_entry *e = &r->applied[i];
        if (e->status == PDK_CHANGE_DELETED)
            continue;
        const char *leaf = NULL;
        _cleanup_close_ int parent =
            pdk_open_parent_beneath(ctx->req->lower_dirfd, e->path, false, &leaf);
        struct stat st;
        if (parent >= 0 && fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0)
            e->ctime_ns = ctime_ns(&st);
    }
}

/* ---- cleaning the upper layer --------------------------------------------------------- */

/* True when the change at or beneath dir were all applied, and at least one was. */
static bool committed_whole(commit_ctx *ctx, const char *dir)
{
    bool any = false;
    for (size_t i = 0; i < ctx->changes.count; i++) {
        const char *p = ctx->changes.items[i].path;
        if (strcmp(p, dir) != 0 && !pdk_changes_path_beneath(p, dir))
            continue;
        if (!ctx->applied[i])
            return false;
        any = true;
    }
    return any;
}

static bool drop_opaque(commit_ctx *ctx, const char *dir)
{
    _cleanup_close_ int fd =
        pdk_open_beneath(ctx->req->upper_dirfd, dir, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return false;
    static const char *const names[] = {"user.overlay.opaque", "trusted.overlay.opaque"};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(names); i++) {
        if (fremovexattr(fd, names[i]) < 0 && errno != ENODATA && errno != EOPNOTSUPP &&
            !(errno == EPERM && i == 1)) {
            pdk_warn("cannot clear the opaque mark of \"%s\" in the session: %s", dir,
                     strerror(errno));
            return false;
        }
    }
    return true;
}

static bool under_opaque(char *const *opaque, const char *path)
{
    for (size_t i = 0; opaque && opaque[i]; i++)
        if (pdk_changes_path_beneath(path, opaque[i]))
            return true;
    return false;
}

static void remove_upper_entry(commit_ctx *ctx, const pdk_change *c, char *const *still_opaque)
{
    const char *leaf = NULL;
    _cleanup_close_ int parent =
        pdk_open_parent_beneath(ctx->req->upper_dirfd, c->path, false, &leaf);
    if (parent < 0)
        return; /* e.g. beneath a whiteout: nothing of it is in the upper layer */
    struct stat st;
    if (fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return;
    bool whiteout = S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0);
    int flags = 0;
    if (c->status == PDK_CHANGE_DELETED) {
        /* The real entry is gone, so its whiteout hides nothing any more. */
        if (!whiteout)
            return;
    } else {
        if (whiteout || pdk_change_kind_of(st.st_mode) != c->new_kind)
            return;
        /* Beneath an opaque directory the entry must stay: without it the merged view
         * would lose it. It is identical to the real entry now. */
        if (under_opaque(still_opaque, c->path) || pdk_strv_contains(still_opaque, c->path))
            return;
        if (c->new_kind == PDK_KIND_DIR)
            flags = AT_REMOVEDIR;
    }
    if (unlinkat(parent, leaf, flags) < 0 && errno != ENOTEMPTY && errno != EEXIST &&
        errno != ENOENT)
        pdk_warn("cannot remove the committed \"%s\" from the session: %s", c->path,
                 strerror(errno));
}

/* Remove the upper entry name (at path) and everything beneath it, except placeholders
 * (mount points paddock made) and what leads to them. Returns true when it is gone. */
static bool wipe_upper(commit_ctx *ctx, int parent, const char *name, const char *path,
                       unsigned depth)
{
    if (pdk_strv_contains(ctx->req->placeholders, path))
        return false;
    struct stat st;
    if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT;
    if (S_ISDIR(st.st_mode)) {
        if (depth > 256)
            return false;
        int dfd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
            return false;
        DIR *d = fdopendir(dfd);
        if (!d) {
            close(dfd);
            return false;
        }
        char **names = NULL;
        struct dirent *de;
        while ((de = readdir(d)))
            if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                pdk_strv_push(&names, de->d_name);
        bool all = true;
        for (size_t i = 0; names && names[i]; i++) {
            _cleanup_free_ char *sub = xasprintf("%s/%s", path, names[i]);
            if (!wipe_upper(ctx, dirfd(d), names[i], sub, depth + 1))
                all = false;
        }
        pdk_strv_free(names);
        closedir(d);
        if (!all)
            return false;
        return unlinkat(parent, name, AT_REMOVEDIR) == 0;
    }
    return unlinkat(parent, name, 0) == 0;
}

static void clean_upper(commit_ctx *ctx)
{
    char **opaque = ctx->changes.opaque_dirs;
    _cleanup_strv_ char **still = NULL;
    _cleanup_strv_ char **wiped = NULL;
    /* An opaque directory committed whole: the real directory now holds exactly what it
     * showed, so nothing of it needs to stay in the upper layer (what was not a change is
     * an identical copy; its whiteouts hide nothing). Outermost first. */
    for (size_t i = 0; opaque && opaque[i]; i++) {
        if (under_opaque(wiped, opaque[i]))
            continue;
        if (!committed_whole(ctx, opaque[i]) || !drop_opaque(ctx, opaque[i])) {
            pdk_strv_push(&still, opaque[i]);
            continue;
        }
        pdk_strv_push(&wiped, opaque[i]);
        const char *leaf = NULL;
        _cleanup_close_ int parent =
            pdk_open_parent_beneath(ctx->req->upper_dirfd, opaque[i], false, &leaf);
        if (parent >= 0)
            wipe_upper(ctx, parent, leaf, opaque[i], 0);
    }
    for (size_t k = ctx->changes.count; k-- > 0;) {
        const pdk_change *c = &ctx->changes.items[k];
        if (ctx->applied[k] && !under_opaque(wiped, c->path) && !pdk_strv_contains(wiped, c->path))
            remove_upper_entry(ctx, c, still);
    }
}

int pdk_commit_apply(const pdk_commit_request *req, pdk_commit_result *out, pdk_error *err)
{
    memset(out, 0, sizeof(*out));
    out->dry_run = req->dry_run;
    commit_ctx ctx = {.req = req, .res = out, .err = err, .as_root = geteuid() == 0};
    if (pdk_changes_scan(req->lower_dirfd, req->upper_dirfd, req->placeholders, &ctx.changes, err) <
        0)
        return pdk_error_prefix(err, "cannot scan the session's changes");
    int ret = -1;
    size_t n = ctx.changes.count;
    ctx.selected = xcalloc(n + 1, sizeof(bool));
    ctx.applied = xcalloc(n + 1, sizeof(bool));
    if (select_changes(&ctx) < 0)
        goto out;

    for (size_t i = 0; i < n; i++)
        if (ctx.selected[i])
            check_change(&ctx, i);
    if (out->refused_count > 0) {
        refusal_message(&ctx);
        goto out;
    }

    if (req->dry_run) {
        for (size_t i = 0; i < n; i++)
            if (ctx.selected[i])
                note_applied(&ctx, i);
        ret = 0;
        goto out;
    }

    if (pdk__commit_before_apply)
        pdk__commit_before_apply(pdk__commit_before_apply_arg);

    ret = apply_all(&ctx);
    if (ret < 0)
        pdk_error_prefix(err, "commit stopped after %zu of the selected changes",
                         out->applied_count);
    pdk_error sync_err = {0};
    if (sync_dirs(&ctx, &sync_err) < 0 && ret == 0) {
        *err = sync_err; /* (an error of apply_all's is told first) */
        ret = -1;
    }
    record_ctimes(&ctx);
    clean_upper(&ctx);

out:
    free(ctx.selected);
    free(ctx.applied);
    pdk_strv_free(ctx.touched_dirs);
    pdk_change_list_free(&ctx.changes);
    return ret;
}
