/* layer_fixture.c: tree helpers shared by test_changes.c and test_commit.c (see
 * layer_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "layer_fixture.h"
#include "must_work.h"

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

char *at(const char *dir, const char *rel)
{
    return xasprintf("%s/%s", dir, rel);
}

void put(const char *dir, const char *rel, const char *content, mode_t mode)
{
    _cleanup_free_ char *p = at(dir, rel);
    unlink(p);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        fail_msg("create %s: %s", p, strerror(errno));
    assert_int_equal(pdk_write_all(fd, content, strlen(content)), 0);
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

void mkd(const char *dir, const char *rel, mode_t mode)
{
    _cleanup_free_ char *p = at(dir, rel);
    if (mkdir(p, mode) < 0 && errno != EEXIST)
        fail_msg("mkdir %s: %s", p, strerror(errno));
    assert_int_equal(chmod(p, mode), 0);
}

void sym(const char *dir, const char *rel, const char *target)
{
    _cleanup_free_ char *p = at(dir, rel);
    unlink(p);
    assert_int_equal(symlink(target, p), 0);
}

void whiteout(const char *dir, const char *rel)
{
    _cleanup_free_ char *p = at(dir, rel);
    pdk_rm_rf_at(AT_FDCWD, p);
    if (mknod(p, S_IFCHR | 0, makedev(0, 0)) < 0)
        fail_msg("mknod %s: %s", p, strerror(errno));
}

void set_opaque(const char *dir, const char *rel)
{
    _cleanup_free_ char *p = at(dir, rel);
    assert_int_equal(lsetxattr(p, "user.overlay.opaque", "y", 1, 0), 0);
}

/* Give upper/rel the origin xattr overlayfs writes on copy-up of lower/lower_rel. */
void set_origin(const char *upper, const char *rel, const char *lower, const char *lower_rel)
{
    _cleanup_free_ char *lp = at(lower, lower_rel);
    _cleanup_free_ char *up = at(upper, rel);
    struct file_handle *fh = xmalloc(sizeof(*fh) + MAX_HANDLE_SZ);
    fh->handle_bytes = MAX_HANDLE_SZ;
    int mount_id;
    assert_int_equal(name_to_handle_at(AT_FDCWD, lp, fh, &mount_id, 0), 0);
    unsigned char fb[21 + MAX_HANDLE_SZ] = {0};
    fb[0] = 0;
    fb[1] = 0xfb;
    fb[2] = (unsigned char)(21 + fh->handle_bytes);
    fb[3] = 0;
    fb[4] = (unsigned char)fh->handle_type;
    memcpy(fb + 21, fh->f_handle, fh->handle_bytes);
    assert_int_equal(lsetxattr(up, "user.overlay.origin", fb, 21 + fh->handle_bytes, 0), 0);
    free(fh);
}

int run(const char *cmd)
{
    int r = system(cmd);
    return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

void rm_rf(const char *path)
{
    pdk_rm_rf_at(AT_FDCWD, path);
}

ws *current_ws;

ws *ws_new_in(const char *template)
{
    ws *w = xcalloc(1, sizeof(ws));
    current_ws = w;
    _cleanup_free_ char *tmpl = xstrdup(template);
    assert_non_null(mkdtemp(tmpl));
    w->root = xstrdup(tmpl);
    w->lower = at(w->root, "lower");
    w->upper = at(w->root, "upper");
    w->expect = at(w->root, "expect");
    assert_int_equal(mkdir(w->lower, 0755), 0);
    assert_int_equal(mkdir(w->upper, 0755), 0);
    w->lower_fd = w->upper_fd = -1;
    return w;
}

void ws_open(ws *w)
{
    if (w->lower_fd < 0)
        w->lower_fd = open(w->lower, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (w->upper_fd < 0)
        w->upper_fd = open(w->upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(w->lower_fd >= 0 && w->upper_fd >= 0);
}

/* The expected merged view starts as a copy of the lower. */
void ws_snapshot(ws *w)
{
    _cleanup_free_ char *cmd = xasprintf("cp -a '%s' '%s'", w->lower, w->expect);
    assert_int_equal(run(cmd), 0);
}

void ws_free(ws *w)
{
    if (!w)
        return;
    if (current_ws == w)
        current_ws = NULL;
    if (w->lower_fd >= 0)
        close(w->lower_fd);
    if (w->upper_fd >= 0)
        close(w->upper_fd);
    rm_rf(w->root);
    free(w->root);
    free(w->lower);
    free(w->upper);
    free(w->expect);
    free(w);
}

/* Overlay-style helpers: change the upper, and the expected merged view the same way.
 * Parent directories are "copied up" with the lower's mode. */
void copy_up_parents(ws *w, const char *rel)
{
    _cleanup_free_ char *p = xstrdup(rel);
    for (char *s = strchr(p, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        _cleanup_free_ char *up = at(w->upper, p);
        struct stat st;
        if (lstat(up, &st) < 0) {
            _cleanup_free_ char *lp = at(w->lower, p);
            mode_t mode = lstat(lp, &st) == 0 ? st.st_mode & 07777 : 0755;
            mkd(w->upper, p, mode);
        }
        *s = '/';
    }
}

void o_put(ws *w, const char *rel, const char *content, mode_t mode)
{
    copy_up_parents(w, rel);
    put(w->upper, rel, content, mode);
    _cleanup_free_ char *e = at(w->expect, rel);
    rm_rf(e);
    put(w->expect, rel, content, mode);
}

void o_sym(ws *w, const char *rel, const char *target)
{
    copy_up_parents(w, rel);
    _cleanup_free_ char *u = at(w->upper, rel);
    rm_rf(u);
    sym(w->upper, rel, target);
    _cleanup_free_ char *e = at(w->expect, rel);
    rm_rf(e);
    sym(w->expect, rel, target);
}

void o_rm(ws *w, const char *rel)
{
    copy_up_parents(w, rel);
    whiteout(w->upper, rel);
    _cleanup_free_ char *e = at(w->expect, rel);
    rm_rf(e);
}

/* rm -r DIR; mkdir DIR: an opaque directory. */
void o_fresh_dir(ws *w, const char *rel, mode_t mode)
{
    copy_up_parents(w, rel);
    _cleanup_free_ char *u = at(w->upper, rel);
    rm_rf(u);
    mkd(w->upper, rel, mode);
    set_opaque(w->upper, rel);
    _cleanup_free_ char *e = at(w->expect, rel);
    rm_rf(e);
    mkd(w->expect, rel, mode);
}

void o_mkdir(ws *w, const char *rel, mode_t mode)
{
    copy_up_parents(w, rel);
    mkd(w->upper, rel, mode);
    mkd(w->expect, rel, mode);
}

/* chmod of a lower file: copy-up with the same content, new mode. */
void o_chmod(ws *w, const char *rel, mode_t mode)
{
    copy_up_parents(w, rel);
    _cleanup_free_ char *lp = at(w->lower, rel);
    _cleanup_free_ char *up = at(w->upper, rel);
    _cleanup_free_ char *cmd = xasprintf("cp -a '%s' '%s'", lp, up);
    assert_int_equal(run(cmd), 0);
    assert_int_equal(chmod(up, mode), 0);
    _cleanup_free_ char *e = at(w->expect, rel);
    assert_int_equal(chmod(e, mode), 0);
}

bool need_root(void)
{
    /* skips (or fails under PADDOCK_MUST_WORK=1) without returning */
    if (geteuid() != 0)
        skip_or_fail("not root: whiteouts (mknod 0:0) need root");
    return true;
}

const pdk_change *get(const pdk_change_list *l, const char *path)
{
    const pdk_change *c = pdk_changes_find(l, path);
    if (!c) {
        for (size_t i = 0; i < l->count; i++)
            print_message("#   have %s (%s)\n", l->items[i].path,
                          pdk_change_status_name(l->items[i].status));
        fail_msg("no change for \"%s\"", path);
    }
    return c;
}

void scan(ws *w, char *const *ignore, pdk_change_list *out)
{
    ws_open(w);
    pdk_error err = {0};
    if (pdk_changes_scan(w->lower_fd, w->upper_fd, ignore, out, &err) < 0)
        fail_msg("scan: %s", err.message);
}

bool have_git(void)
{
    if (run("git --version >/dev/null 2>&1") != 0) {
        print_message("# git is not installed\n");
        return false;
    }
    return true;
}

/* Every non-directory entry of a tree, "path kind x|-|target content" lines, sorted. */
void list_tree(const char *root, const char *rel, pdk_buf *out, bool exec_bit_only)
{
    _cleanup_free_ char *dir = rel[0] ? at(root, rel) : xstrdup(root);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    char **names = NULL;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            pdk_strv_push(&names, de->d_name);
    closedir(d);
    size_t n = pdk_strv_length(names);
    for (size_t i = 0; i + 1 < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(names[i], names[j]) > 0) {
                char *t = names[i];
                names[i] = names[j];
                names[j] = t;
            }
    for (size_t i = 0; i < n; i++) {
        _cleanup_free_ char *sub = rel[0] ? xasprintf("%s/%s", rel, names[i]) : xstrdup(names[i]);
        _cleanup_free_ char *full = at(root, sub);
        struct stat st;
        assert_int_equal(lstat(full, &st), 0);
        if (S_ISDIR(st.st_mode)) {
            if (!exec_bit_only)
                pdk_buf_printf(out, "%s/ dir %o\n", sub, st.st_mode & 07777);
            list_tree(root, sub, out, exec_bit_only);
        } else if (S_ISLNK(st.st_mode)) {
            char t[4096];
            ssize_t len = readlink(full, t, sizeof(t) - 1);
            assert_true(len >= 0);
            t[len] = '\0';
            pdk_buf_printf(out, "%s symlink %s\n", sub, t);
        } else if (S_ISREG(st.st_mode)) {
            char *content = NULL;
            size_t len = 0;
            assert_int_equal(pdk_read_file_at(AT_FDCWD, full, &content, &len, 0), 0);
            if (exec_bit_only)
                pdk_buf_printf(out, "%s file %s [", sub, (st.st_mode & 0100) ? "x" : "-");
            else
                pdk_buf_printf(out, "%s file %o [", sub, st.st_mode & 07777);
            pdk_buf_append(out, content, len);
            pdk_buf_puts(out, "]\n");
            free(content);
        } else {
            pdk_buf_printf(out, "%s other %o\n", sub, st.st_mode);
        }
    }
    pdk_strv_free(names);
}
