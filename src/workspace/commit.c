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
#include "gitconfig.h"
#include "log.h"
#include "policy.h"

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
    /* core.hooksPath of each repository a change lies in, by its working tree */
    struct repo_hooks {
        char *worktree; /* workspace-relative ("" the root) */
        char *hooks;    /* workspace-relative directory git runs hooks from, or NULL */
    } * repos;
    size_t repo_count;
    char *global_hooks; /* core.hooksPath of the user's own configuration, or NULL */
    bool global_read;
    int session_dirfd;    /* the session's directory (O_PATH), or -1 */
    int tmp_dirfd;        /* SESSION/commit-tmp, where temporary entries are made, or -1 */
    bool temp_beside;     /* ... but it is on another mount: beside each target instead */
    bool journal_written; /* SESSION/commit-journal names the directories (see below) */
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

/* ---- what runs outside the sandbox later ---------------------------------------- */

/* Whether path lies at or beneath dir (workspace-relative; "" is the root). */
static bool at_or_beneath(const char *path, const char *dir)
{
    return !*dir || strcmp(path, dir) == 0 || pdk_changes_path_beneath(path, dir);
}

/* base/rel, workspace-relative and normalised ("." and ".." resolved), or NULL when it
 * climbs out of the workspace. */
static char *join_relative(const char *base, const char *rel)
{
    _cleanup_free_ char *joined = *base ? xasprintf("%s/%s", base, rel) : xstrdup(rel);
    char **parts = NULL;
    char *save = NULL;
    for (char *part = strtok_r(joined, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
        if (strcmp(part, ".") == 0)
            continue;
        if (strcmp(part, "..") == 0) {
            size_t n = pdk_strv_length(parts);
            if (n == 0) {
                pdk_strv_free(parts);
                return NULL;
            }
            free(parts[n - 1]);
            parts[n - 1] = NULL;
            continue;
        }
        pdk_strv_push(&parts, part);
    }
    pdk_buf b = {0};
    for (size_t i = 0; parts && parts[i]; i++)
        pdk_buf_printf(&b, "%s%s", i ? "/" : "", parts[i]);
    pdk_strv_free(parts);
    return pdk_buf_steal(&b);
}

/* A path a repository's files name (core.hooksPath, a gitdir: line), seen from dir:
 * workspace-relative, or NULL when it is outside the workspace. */
static char *workspace_path_of(commit_ctx *ctx, const char *dir, const char *value)
{
    if (!value || !*value)
        return NULL;
    _cleanup_free_ char *absolute = NULL;
    if (value[0] == '~' && (value[1] == '/' || value[1] == '\0')) {
        const char *home = getenv("HOME");
        if (!home || home[0] != '/')
            return NULL;
        absolute = xasprintf("%s%s", home, value + 1);
    } else if (value[0] == '/') {
        absolute = xstrdup(value);
    } else {
        return join_relative(dir, value);
    }
    const char *ws = ctx->req->workspace_path;
    _cleanup_free_ char *normal = pdk_path_normalize(absolute);
    if (!ws || !normal || !pdk_path_is_within(normal, ws))
        return NULL;
    return xstrdup(pdk_path_relative(normal, ws));
}

/* dir/name, workspace-relative ("" is the root). */
static char *child_of(const char *dir, const char *name)
{
    return *dir ? xasprintf("%s/%s", dir, name) : xstrdup(name);
}

/* A small file of the real workspace (a configuration, a gitdir: file), or NULL. */
static char *read_real(commit_ctx *ctx, const char *path, size_t limit)
{
    _cleanup_close_ int fd = pdk_open_regular_beneath(ctx->req->lower_dirfd, path);
    char *text = NULL;
    if (fd < 0 || pdk_read_all(fd, &text, NULL, limit) < 0)
        return NULL;
    return text;
}

/* core.hooksPath of a configuration file of the real workspace: 1 and the value, 0 when
 * unset (or the file is missing or is not one git reads). */
static int hooks_path_in(commit_ctx *ctx, const char *config, char **value)
{
    _cleanup_free_ char *text = read_real(ctx, config, 1 << 20);
    *value = NULL;
    if (!text)
        return 0;
    return pdk_git_config_get(text, strlen(text), "core", "hookspath", value) == 1 ? 1 : 0;
}

/* The user's own configuration (~/.gitconfig, then $XDG_CONFIG_HOME/git/config): read
 * with plain paths, it is not the sandbox's. */
static const char *global_hooks_path(commit_ctx *ctx)
{
    if (ctx->global_read)
        return ctx->global_hooks;
    ctx->global_read = true;
    const char *home = getenv("HOME"), *xdg = getenv("XDG_CONFIG_HOME");
    _cleanup_free_ char *user = home ? xasprintf("%s/.gitconfig", home) : NULL;
    _cleanup_free_ char *xdg_config =
        xdg && *xdg ? xasprintf("%s/git/config", xdg)
                    : (home ? xasprintf("%s/.config/git/config", home) : NULL);
    const char *files[] = {xdg_config, user}; /* the latter wins */
    for (size_t i = 0; i < PDK_ARRAY_SIZE(files); i++) {
        char *text = NULL, *value = NULL;
        if (files[i] && pdk_read_file_at(AT_FDCWD, files[i], &text, NULL, 1 << 20) == 0 &&
            pdk_git_config_get(text, strlen(text), "core", "hookspath", &value) == 1) {
            free(ctx->global_hooks);
            ctx->global_hooks = value;
        }
        free(text);
    }
    return ctx->global_hooks;
}

/* When worktree (workspace-relative) is a repository of the real workspace, note it in
 * ctx->repos with the directory (workspace-relative) git runs its hooks from when
 * core.hooksPath names one, from the real repository's configuration (never the session's
 * copy): its .git directory's, or that of the directory a .git file names (a submodule, a
 * linked worktree, with its commondir). */
static void probe_repository(commit_ctx *ctx, const char *worktree)
{
    for (size_t i = 0; i < ctx->repo_count; i++)
        if (strcmp(ctx->repos[i].worktree, worktree) == 0)
            return;
    char *hooks = NULL;
    _cleanup_free_ char *dotgit = child_of(worktree, ".git");
    _cleanup_close_ int fd =
        pdk_open_beneath(ctx->req->lower_dirfd, dotgit, O_PATH | O_NOFOLLOW, 0);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
        return; /* not a repository */
    {
        _cleanup_free_ char *gitdir = NULL;
        if (S_ISDIR(st.st_mode)) {
            gitdir = xstrdup(dotgit);
        } else {
            _cleanup_free_ char *text = read_real(ctx, dotgit, 4096);
            if (text && pdk_str_has_prefix(text, "gitdir:")) {
                char *v = text + 7;
                v += strspn(v, " \t");
                v[strcspn(v, "\r\n")] = '\0';
                gitdir = workspace_path_of(ctx, worktree, v);
            }
        }
        char *value = NULL;
        if (gitdir) {
            /* a linked worktree's configuration is its common directory's */
            _cleanup_free_ char *commondir_file = child_of(gitdir, "commondir");
            _cleanup_free_ char *common_text = read_real(ctx, commondir_file, 4096);
            if (common_text) {
                common_text[strcspn(common_text, "\r\n")] = '\0';
                _cleanup_free_ char *common = workspace_path_of(ctx, gitdir, common_text);
                _cleanup_free_ char *config = common ? child_of(common, "config") : NULL;
                if (config)
                    hooks_path_in(ctx, config, &value);
            }
            _cleanup_free_ char *config = child_of(gitdir, "config");
            char *local = NULL;
            if (hooks_path_in(ctx, config, &local) == 1) {
                free(value);
                value = local;
            }
        }
        if (!value && global_hooks_path(ctx))
            value = xstrdup(global_hooks_path(ctx));
        hooks = workspace_path_of(ctx, worktree, value);
        free(value);
    }
    ctx->repos = xrealloc(ctx->repos, (ctx->repo_count + 1) * sizeof(*ctx->repos));
    ctx->repos[ctx->repo_count++] = (struct repo_hooks){xstrdup(worktree), hooks};
}

/* Whether dir (workspace-relative) holds a HEAD, in the session or the workspace: then it
 * is a git directory (a bare repository, say), whose configuration and hooks git reads. */
static bool has_head(commit_ctx *ctx, const char *dir)
{
    _cleanup_free_ char *head = child_of(dir, "HEAD");
    int fds[] = {ctx->req->upper_dirfd, ctx->req->lower_dirfd};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(fds); i++) {
        _cleanup_close_ int fd = pdk_open_beneath(fds[i], head, O_PATH | O_NOFOLLOW, 0);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
            return true;
    }
    return false;
}

/* The git directory path's change would write the configuration or a hook of, when it is
 * one without a ".git" in its name (a bare repository): new string, or NULL. */
static char *bare_repository_of(commit_ctx *ctx, const char *path)
{
    _cleanup_free_ char *parent = parent_of(path);
    const char *leaf = path + (*parent ? strlen(parent) + 1 : 0);
    if ((strcmp(leaf, "config") == 0 || strcmp(leaf, "config.worktree") == 0 ||
         strcmp(leaf, "commondir") == 0) &&
        has_head(ctx, parent))
        return steal_pointer(&parent);
    for (const char *at = path; at; at = strchr(at, '/')) {
        if (at != path)
            at++;
        if (strncmp(at, "hooks", 5) != 0 || (at[5] != '/' && at[5] != '\0'))
            continue;
        _cleanup_free_ char *dir = xstrndup(path, at == path ? 0 : (size_t)(at - path - 1));
        if (has_head(ctx, dir))
            return steal_pointer(&dir);
    }
    return NULL;
}

/* The repositories of the real workspace the selected changes lie in (every directory on
 * their paths that has a .git), with their core.hooksPath. Each directory is probed once
 * as the sorted changes go: the directories probed last stay on a stack of ancestors. */
static void find_repositories(commit_ctx *ctx)
{
    _cleanup_strv_ char **chain = NULL; /* the directories probed last, the root first */
    size_t depth = 0;
    for (size_t i = 0; i < ctx->changes.count; i++) {
        if (!ctx->selected[i])
            continue;
        _cleanup_free_ char *parent = parent_of(ctx->changes.items[i].path);
        while (depth > 0 && !at_or_beneath(parent, chain[depth - 1])) {
            free(chain[--depth]);
            chain[depth] = NULL;
        }
        if (depth == 0) {
            probe_repository(ctx, "");
            pdk_strv_push(&chain, "");
            depth++;
        }
        /* the directories between the deepest one probed and parent, parent included */
        size_t done = strlen(chain[depth - 1]), len = strlen(parent);
        for (size_t k = done ? done + 1 : 0; k <= len && len > 0; k++) {
            if (parent[k] != '/' && parent[k] != '\0')
                continue;
            _cleanup_free_ char *dir = xstrndup(parent, k);
            probe_repository(ctx, dir);
            pdk_strv_push(&chain, dir);
            depth++;
        }
    }
}

/* Why change c would put in place code that runs outside the sandbox later (new string),
 * or NULL. */
static char *protection(commit_ctx *ctx, const pdk_change *c)
{
    const pdk_commit_request *req = ctx->req;
    if (pdk_commit_path_protected(c->path, req->protected_paths))
        return xstrdup("protected path (read-only in the sandbox)");
    pdk_change_kind kind = c->new_kind != PDK_KIND_NONE ? c->new_kind : c->old_kind;
    if (c->new_kind != PDK_KIND_NONE && c->new_kind != PDK_KIND_DIR &&
        path_is_above_protected(c->path, req->protected_paths))
        return xstrdup("it would replace the directory of a protected path with a file or a "
                       "symlink");
    const char *entry = pdk_builtin_protected_match(c->path, kind == PDK_KIND_DIR);
    if (entry)
        return xasprintf("protected path (%s, at any depth: it runs outside the sandbox later)",
                         entry);
    /* the core.hooksPath of a repository (find_repositories), wherever it points */
    for (size_t i = 0; i < ctx->repo_count; i++) {
        const char *hooks = ctx->repos[i].hooks;
        if (hooks && at_or_beneath(c->path, hooks))
            return xasprintf("it lies in \"%s\", the core.hooksPath of the repository at "
                             "\"%s\": git runs what is there",
                             hooks, *ctx->repos[i].worktree ? ctx->repos[i].worktree : ".");
    }
    _cleanup_free_ char *bare = bare_repository_of(ctx, c->path);
    if (bare)
        return xasprintf("the configuration or a hook of the git directory \"%s\" (it holds a "
                         "HEAD): git reads or runs it",
                         *bare ? bare : ".");
    return NULL;
}

/* A directory's bits beyond its owner's that the session adds: set-user-ID, set-group-ID,
 * sticky, world-writable. */
static mode_t new_special_bits(const pdk_change *c)
{
    const mode_t special = S_ISUID | S_ISGID | S_ISVTX | S_IWOTH;
    if (c->new_kind != PDK_KIND_DIR)
        return 0;
    mode_t before = c->status == PDK_CHANGE_MODIFIED ? c->old_mode & special : 0;
    return (c->new_mode & special) & ~before;
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
    if (new_special_bits(c)) {
        refuse(ctx, c->path,
               "directory of mode %o (set-id, sticky or world-writable): change it in the "
               "session before committing it",
               (unsigned)(c->new_mode & 07777));
        return;
    }
    if (!req->allow_protected) {
        _cleanup_free_ char *why = protection(ctx, c);
        if (why) {
            refuse(ctx, c->path, "%s; add --include-protected to commit it anyway", why);
            return;
        }
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

/* ---- temporary entries ---------------------------------------------------------------
 *
 * Each entry is made whole, then put in place with one link or rename (commit.h). What a
 * temporary name is needed for is made in the session's own directory (SESSION/commit-tmp)
 * when it shares the workspace's mount, so that a commit killed half-way leaves nothing
 * in the user's tree: the next commit (or run) of the session removes what is there. A
 * file's content is an O_TMPFILE in its real directory: it has no name until it is linked,
 * straight to its own for a new file. Where the session's directory is on another mount (a
 * rename cannot cross), a name goes beside its target for the moment of a rename, once the
 * directories are in SESSION/commit-journal, which the next commit reads to remove such
 * names. */

#define TEMP_DIR       "commit-tmp"
#define JOURNAL        "commit-journal"
#define JOURNAL_HEADER "paddock commit temporary files 1\n"

static void temp_name(commit_ctx *ctx, char *buf, size_t len)
{
    snprintf(buf, len, ".paddock-commit.%d.%u", (int)getpid(), ctx->tmp_counter++);
}

/* Before the first temporary name beside a target: the directories this commit writes in,
 * and its pid (the names' prefix), in the session's journal, on the disk. */
static int journal_beside(commit_ctx *ctx)
{
    if (ctx->journal_written || ctx->session_dirfd < 0)
        return 0;
    pdk_buf b = {0};
    pdk_buf_printf(&b, JOURNAL_HEADER "%d\n", (int)getpid());
    _cleanup_strv_ char **dirs = NULL;
    for (size_t i = 0; i < ctx->changes.count; i++) {
        if (!ctx->selected[i])
            continue;
        _cleanup_free_ char *dir = parent_of(ctx->changes.items[i].path);
        if (!pdk_strv_contains(dirs, dir)) {
            pdk_strv_push(&dirs, dir);
            pdk_buf_append(&b, dir, strlen(dir) + 1);
        }
    }
    int r = pdk_write_file_atomic(ctx->session_dirfd, JOURNAL, b.data, b.len, 0600, true);
    pdk_buf_free(&b);
    if (r < 0)
        return pdk_error_set(ctx->err, errno, "cannot write the commit's journal in the session");
    ctx->journal_written = true;
    return 0;
}

/* Where the next temporary entry is made: the session's directory for them, or (-1 there,
 * or beside) the target's own directory parent. */
static int temp_dirfd(commit_ctx *ctx, int parent)
{
    return ctx->tmp_dirfd >= 0 && !ctx->temp_beside ? ctx->tmp_dirfd : parent;
}

int pdk_commit_recover(int lower_dirfd, const char *session_dir, pdk_error *err)
{
    _cleanup_close_ int sd = open(session_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (sd < 0)
        return errno == ENOENT
                   ? 0
                   : pdk_error_set(err, errno, "cannot open the session directory %s", session_dir);
    if (pdk_rm_rf_at(sd, TEMP_DIR) < 0)
        return pdk_error_set(err, errno, "cannot remove %s/" TEMP_DIR, session_dir);
    char *text = NULL;
    size_t len = 0;
    if (pdk_read_file_at(sd, JOURNAL, &text, &len, 64u << 20) < 0)
        return errno == ENOENT ? 0
                               : pdk_error_set(err, errno, "cannot read %s/" JOURNAL, session_dir);
    int removed = 0;
    const char *p = text, *end = text + len;
    char *nl = pdk_str_has_prefix(text, JOURNAL_HEADER)
                   ? strchr(text + strlen(JOURNAL_HEADER), '\n')
                   : NULL;
    int64_t pid = 0;
    if (nl) {
        *nl = '\0';
        if (pdk_parse_int64(text + strlen(JOURNAL_HEADER), 1, INT32_MAX, &pid) < 0)
            nl = NULL;
    }
    if (nl) {
        char prefix[64];
        snprintf(prefix, sizeof(prefix), ".paddock-commit.%d.", (int)pid);
        for (p = nl + 1; p < end; p += strlen(p) + 1) {
            _cleanup_close_ int dfd =
                *p ? pdk_open_beneath(lower_dirfd, p, O_RDONLY | O_DIRECTORY, 0)
                   : openat(lower_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dfd < 0)
                continue; /* gone, or a symlink now: nothing of ours to remove there */
            DIR *d = fdopendir(dup(dfd));
            if (!d)
                continue;
            _cleanup_strv_ char **names = NULL;
            for (struct dirent *de; (de = readdir(d));)
                if (pdk_str_has_prefix(de->d_name, prefix))
                    pdk_strv_push(&names, de->d_name);
            closedir(d);
            for (size_t i = 0; names && names[i]; i++) {
                if (unlinkat(dfd, names[i], 0) == 0 ||
                    (errno == EISDIR && unlinkat(dfd, names[i], AT_REMOVEDIR) == 0))
                    removed++;
                else
                    pdk_warn("cannot remove \"%s/%s\" a killed commit left in the workspace: %s",
                             *p ? p : ".", names[i], strerror(errno));
            }
        }
    }
    free(text);
    if (unlinkat(sd, JOURNAL, 0) < 0 && errno != ENOENT)
        return pdk_error_set(err, errno, "cannot remove %s/" JOURNAL, session_dir);
    return removed;
}

/* The session's directory for temporary entries, made afresh (what an earlier commit
 * killed half-way left is removed first), and whether it shares the workspace's mount. */
static int open_temp_dir(commit_ctx *ctx)
{
    const pdk_commit_request *req = ctx->req;
    if (!req->session_dir)
        return 0;
    if (pdk_commit_recover(req->lower_dirfd, req->session_dir, ctx->err) < 0)
        return pdk_error_prefix(ctx->err, "cleaning up after an earlier commit");
    ctx->session_dirfd = open(req->session_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (ctx->session_dirfd < 0 ||
        (mkdirat(ctx->session_dirfd, TEMP_DIR, 0700) < 0 && errno != EEXIST))
        return pdk_error_set(ctx->err, errno, "cannot make %s/" TEMP_DIR, req->session_dir);
    ctx->tmp_dirfd =
        openat(ctx->session_dirfd, TEMP_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (ctx->tmp_dirfd < 0)
        return pdk_error_set(ctx->err, errno, "cannot open %s/" TEMP_DIR, req->session_dir);
    struct statx a, b;
    ctx->temp_beside = statx(ctx->tmp_dirfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &a) < 0 ||
                       statx(req->lower_dirfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &b) < 0 ||
                       !(a.stx_mask & b.stx_mask & STATX_MNT_ID) || a.stx_mnt_id != b.stx_mnt_id;
    return 0;
}

static void close_temp_dir(commit_ctx *ctx)
{
    if (ctx->tmp_dirfd >= 0) {
        close(ctx->tmp_dirfd);
        ctx->tmp_dirfd = -1;
        if (ctx->session_dirfd >= 0 && pdk_rm_rf_at(ctx->session_dirfd, TEMP_DIR) < 0)
            pdk_debug("cannot remove the session's " TEMP_DIR ": %s", strerror(errno));
    }
    /* every name beside a target was renamed or removed: the journal has done its work */
    if (ctx->journal_written && unlinkat(ctx->session_dirfd, JOURNAL, 0) < 0)
        pdk_debug("cannot remove the session's " JOURNAL ": %s", strerror(errno));
    if (ctx->session_dirfd >= 0) {
        close(ctx->session_dirfd);
        ctx->session_dirfd = -1;
    }
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

/* Rename the temporary from/tmp over the target: no-replace for an added path (atomically
 * refusing one created meanwhile), plain rename otherwise. -2 (no error set) when from and
 * parent are on two mounts (EXDEV): the caller makes it beside the target instead. */
static int replace_with(commit_ctx *ctx, int from, const char *tmp, int parent, const char *leaf,
                        const pdk_change *c, bool expect_absent)
{
    if (expect_absent) {
        if (renameat2(from, tmp, parent, leaf, RENAME_NOREPLACE) == 0)
            return 0;
        if (errno == EEXIST)
            return pdk_error_set(ctx->err, 0,
                                 "\"%s\": created in the workspace during the commit; run it "
                                 "again",
                                 c->path);
        if (errno == EXDEV)
            return -2;
        if (errno != EINVAL && errno != ENOSYS)
            return pdk_error_set(ctx->err, errno, "\"%s\": cannot rename into place", c->path);
    }
    if (renameat(from, tmp, parent, leaf) < 0) {
        if (errno == EXDEV)
            return -2;
        return pdk_error_set(ctx->err, errno, "\"%s\": cannot rename into place", c->path);
    }
    return 0;
}

static bool target_absent(const pdk_change *c)
{
    return c->status == PDK_CHANGE_ADDED ||
           (c->status == PDK_CHANGE_TYPE_CHANGED && c->old_kind == PDK_KIND_DIR);
}

/* Put the finished temporary entry from/tmp in place of leaf (checked again just before),
 * or remove it. -2 as replace_with says. */
static int install_temp(commit_ctx *ctx, int from, const char *tmp, int parent, const char *leaf,
                        const pdk_change *c)
{
    bool absent = target_absent(c);
    int r = verify_target(ctx, parent, leaf, c, absent);
    if (r == 0)
        r = replace_with(ctx, from, tmp, parent, leaf, c, absent);
    if (r < 0) {
        unlinkat(from, tmp, 0);
        return r;
    }
    touch_parent(ctx, c->path);
    return 0;
}

/* Copy src (stat st) into dst with its owner (as root), mode and times, fsync'd and
 * closed. NULL, or what failed (errno set). */
static const char *fill_file(commit_ctx *ctx, int src, const struct stat *st, int dst)
{
    const char *what = NULL;
    struct timespec times[2] = {st->st_atim, st->st_mtim};
    if (lseek(src, 0, SEEK_SET) < 0 || copy_data(src, dst) < 0)
        what = "cannot copy the content";
    else if (ctx->as_root && fchown(dst, st->st_uid, st->st_gid) < 0)
        what = "cannot set the owner";
    else if (fchmod(dst, st->st_mode & 07777) < 0)
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
    errno = saved;
    return what;
}

/* A named temporary file in dirfd, filled from src. 0 and its name in tmp, or -1. */
static int named_temp_file(commit_ctx *ctx, const pdk_change *c, int dirfd, int src,
                           const struct stat *st, char *tmp, size_t tmp_size)
{
    int dst = -1;
    for (int attempt = 0; attempt < 100; attempt++) {
        temp_name(ctx, tmp, tmp_size);
        dst = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (dst >= 0 || errno != EEXIST)
            break;
    }
    if (dst < 0)
        return pdk_error_set(ctx->err, errno, "\"%s\": cannot create a temporary file", c->path);
    const char *what = fill_file(ctx, src, st, dst);
    if (what) {
        int saved = errno;
        unlinkat(dirfd, tmp, 0);
        return pdk_error_set(ctx->err, saved, "\"%s\": %s", c->path, what);
    }
    return 0;
}

/* Link the filled O_TMPFILE (open as keep) under a temporary name in from: 0 and the name
 * in tmp, or -1; -2 (no error set) when from is on another mount. */
static int link_temp(commit_ctx *ctx, const pdk_change *c, int keep, int from, char *tmp,
                     size_t tmp_size)
{
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", keep);
    for (int attempt = 0; attempt < 100; attempt++) {
        temp_name(ctx, tmp, tmp_size);
        if (linkat(AT_FDCWD, proc, from, tmp, AT_SYMLINK_FOLLOW) == 0)
            return 0;
        if (errno == EXDEV)
            return -2;
        if (errno != EEXIST)
            break;
    }
    return pdk_error_set(ctx->err, errno, "\"%s\": cannot link a temporary file", c->path);
}

/* The content of a file goes to an unnamed O_TMPFILE in its real directory (so that its
 * inode is the workspace's, where the filesystem places it), linked straight into place
 * when the file is new: no name but its own, ever. A file it replaces is renamed over
 * from a temporary name in the session's directory (on the workspace's mount), else
 * beside it after the journal. Without O_TMPFILE, a named temporary file there. */
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
    int dst = openat(parent, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (dst < 0) {
        if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL && errno != ENOENT)
            return pdk_error_set(ctx->err, errno, "\"%s\": cannot create a temporary file",
                                 c->path);
        for (;;) {
            int from = temp_dirfd(ctx, parent);
            if ((from == parent && journal_beside(ctx) < 0) ||
                named_temp_file(ctx, c, from, src, &st, tmp, sizeof(tmp)) < 0)
                return -1;
            int r = install_temp(ctx, from, tmp, parent, leaf, c);
            if (r != -2)
                return r;
            ctx->temp_beside = true; /* a rename cannot cross here after all */
        }
    }
    /* linkat needs it open: fill_file closes dst, keep stays until the link is made */
    _cleanup_close_ int keep = fcntl(dst, F_DUPFD_CLOEXEC, 0);
    if (keep < 0) {
        close(dst);
        return pdk_error_set(ctx->err, errno, "\"%s\": cannot keep the temporary file", c->path);
    }
    const char *what = fill_file(ctx, src, &st, dst);
    if (what)
        return pdk_error_set(ctx->err, errno, "\"%s\": %s", c->path, what);
    if (target_absent(c)) {
        char proc[64];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", keep);
        if (verify_target(ctx, parent, leaf, c, true) < 0)
            return -1;
        if (linkat(AT_FDCWD, proc, parent, leaf, AT_SYMLINK_FOLLOW) < 0)
            return pdk_error_set(ctx->err, errno == EEXIST ? 0 : errno,
                                 errno == EEXIST ? "\"%s\": created in the workspace during the "
                                                   "commit; run it again"
                                                 : "\"%s\": cannot link the file into place",
                                 c->path);
        touch_parent(ctx, c->path);
        return 0;
    }
    for (;;) {
        int from = temp_dirfd(ctx, parent);
        if (from == parent && journal_beside(ctx) < 0)
            return -1;
        int r = link_temp(ctx, c, keep, from, tmp, sizeof(tmp));
        if (r == 0)
            r = install_temp(ctx, from, tmp, parent, leaf, c);
        if (r != -2)
            return r;
        ctx->temp_beside = true;
    }
}

static int write_symlink(commit_ctx *ctx, const pdk_change *c)
{
    const char *leaf = NULL;
    _cleanup_close_ int parent = open_real_parent(ctx, c->path, &leaf);
    if (parent < 0)
        return -1;
    for (;;) {
        int from = temp_dirfd(ctx, parent);
        if (from == parent && journal_beside(ctx) < 0)
            return -1;
        char tmp[64];
        int r = -1;
        for (int attempt = 0; attempt < 100; attempt++) {
            temp_name(ctx, tmp, sizeof(tmp));
            r = symlinkat(c->new_target, from, tmp);
            if (r == 0 || errno != EEXIST)
                break;
        }
        if (r < 0)
            return pdk_error_set(ctx->err, errno, "\"%s\": cannot create a temporary symlink",
                                 c->path);
        struct timespec times[2] = {c->new_mtime, c->new_mtime};
        if (ctx->as_root && fchownat(from, tmp, c->new_uid, c->new_gid, AT_SYMLINK_NOFOLLOW) < 0) {
            int saved = errno;
            unlinkat(from, tmp, 0);
            return pdk_error_set(ctx->err, saved, "\"%s\": cannot set the owner", c->path);
        }
        utimensat(from, tmp, times, AT_SYMLINK_NOFOLLOW); /* best effort */
        r = install_temp(ctx, from, tmp, parent, leaf, c);
        if (r != -2)
            return r;
        ctx->temp_beside = true;
    }
}

/* A new directory made as a temporary entry (mode 0700, owner as root): 0, or -1. */
static int temp_dir(commit_ctx *ctx, const pdk_change *c, int from, char *tmp, size_t tmp_size)
{
    int r = -1;
    for (int attempt = 0; attempt < 100; attempt++) {
        temp_name(ctx, tmp, tmp_size);
        r = mkdirat(from, tmp, 0700);
        if (r == 0 || errno != EEXIST)
            break;
    }
    if (r < 0)
        return pdk_error_set(ctx->err, errno, "\"%s\": cannot create a temporary directory",
                             c->path);
    if (ctx->as_root) {
        _cleanup_close_ int dfd =
            openat(from, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0 || fchown(dfd, c->new_uid, c->new_gid) < 0) {
            int saved = errno;
            unlinkat(from, tmp, AT_REMOVEDIR);
            return pdk_error_set(ctx->err, saved, "\"%s\": cannot set the owner", c->path);
        }
    }
    return 0;
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
    int from = temp_dirfd(ctx, parent);
    if ((from == parent && journal_beside(ctx) < 0) || temp_dir(ctx, c, from, tmp, sizeof(tmp)) < 0)
        return -1;
    int r = renameat2(from, tmp, parent, leaf, RENAME_EXCHANGE);
    if (r < 0 && errno == EXDEV && from != parent) {
        /* a rename cannot cross here after all: beside it */
        unlinkat(from, tmp, AT_REMOVEDIR);
        ctx->temp_beside = true;
        from = parent;
        if (journal_beside(ctx) < 0 || temp_dir(ctx, c, from, tmp, sizeof(tmp)) < 0)
            return -1;
        r = renameat2(from, tmp, parent, leaf, RENAME_EXCHANGE);
    }
    if (r == 0) {
        /* The old entry now has the temporary name. */
        if (unlinkat(from, tmp, 0) < 0)
            return pdk_error_set(ctx->err, errno, "\"%s\": cannot remove the replaced entry",
                                 c->path);
    } else if (errno == EINVAL || errno == ENOSYS) {
        if (unlinkat(parent, leaf, 0) < 0 || renameat(from, tmp, parent, leaf) < 0) {
            int saved = errno;
            unlinkat(from, tmp, AT_REMOVEDIR);
            return pdk_error_set(ctx->err, saved, "\"%s\": cannot replace it with a directory",
                                 c->path);
        }
    } else {
        int saved = errno;
        unlinkat(from, tmp, AT_REMOVEDIR);
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
    commit_ctx ctx = {.req = req,
                      .res = out,
                      .err = err,
                      .as_root = geteuid() == 0,
                      .session_dirfd = -1,
                      .tmp_dirfd = -1};
    if (pdk_changes_scan(req->lower_dirfd, req->upper_dirfd, req->placeholders, &ctx.changes, err) <
        0)
        return pdk_error_prefix(err, "cannot scan the session's changes");
    int ret = -1;
    size_t n = ctx.changes.count;
    ctx.selected = xcalloc(n + 1, sizeof(bool));
    ctx.applied = xcalloc(n + 1, sizeof(bool));
    if (select_changes(&ctx) < 0)
        goto out;

    if (!req->allow_protected)
        find_repositories(&ctx);
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

    if (open_temp_dir(&ctx) < 0)
        goto out;
    if (pdk__commit_before_apply)
        pdk__commit_before_apply(pdk__commit_before_apply_arg);

    ret = apply_all(&ctx);
    close_temp_dir(&ctx);
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
    if (ctx.tmp_dirfd >= 0 || ctx.session_dirfd >= 0)
        close_temp_dir(&ctx);
    free(ctx.selected);
    free(ctx.applied);
    pdk_strv_free(ctx.touched_dirs);
    for (size_t i = 0; i < ctx.repo_count; i++) {
        free(ctx.repos[i].worktree);
        free(ctx.repos[i].hooks);
    }
    free(ctx.repos);
    free(ctx.global_hooks);
    pdk_change_list_free(&ctx.changes);
    return ret;
}
