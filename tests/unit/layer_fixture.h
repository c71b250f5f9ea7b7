/* layer_fixture.h: tree helpers shared by the unit tests that work on synthetic layers
 * (test_changes.c, test_commit.c): a "lower" (the real workspace), an "upper" written in
 * overlayfs' format (whiteouts are 0:0 character devices, which needs root) and an "expect"
 * tree holding the merged view the overlay would show.
 *
 * The helpers fail the current cmocka test on error. */
#ifndef PDK_TEST_LAYER_FIXTURE_H
#define PDK_TEST_LAYER_FIXTURE_H

#include "changes.h"
#include "diffrender.h"
#include "fsutil.h"

#include <stdbool.h>
#include <sys/types.h>

typedef struct ws {
    char *root, *lower, *upper, *expect;
    int lower_fd, upper_fd;
} ws;

/* dir/rel, malloc'd. */
char *at(const char *dir, const char *rel);
void put(const char *dir, const char *rel, const char *content, mode_t mode);
void mkd(const char *dir, const char *rel, mode_t mode);
void sym(const char *dir, const char *rel, const char *target);
void whiteout(const char *dir, const char *rel);
void set_opaque(const char *dir, const char *rel);
/* Give upper/rel the origin xattr overlayfs writes on copy-up of lower/lower_rel. */
void set_origin(const char *upper, const char *rel, const char *lower, const char *lower_rel);
/* system(cmd): its exit status, -1 if it did not exit. */
int run(const char *cmd);
void rm_rf(const char *path);

/* The workspace of the running test, removed by the test's teardown, also when a test fails. */
extern ws *current_ws;

/* A new workspace with empty lower and upper under a mkdtemp(template) root. */
ws *ws_new_in(const char *template);
void ws_open(ws *w);
/* The expected merged view starts as a copy of the lower. */
void ws_snapshot(ws *w);
void ws_free(ws *w);

/* Overlay-style helpers: change the upper, and the expected merged view the same way.
 * Parent directories are "copied up" with the lower's mode. */
void copy_up_parents(ws *w, const char *rel);
void o_put(ws *w, const char *rel, const char *content, mode_t mode);
void o_sym(ws *w, const char *rel, const char *target);
void o_rm(ws *w, const char *rel);
/* rm -r DIR; mkdir DIR: an opaque directory. */
void o_fresh_dir(ws *w, const char *rel, mode_t mode);
void o_mkdir(ws *w, const char *rel, mode_t mode);
/* chmod of a lower file: copy-up with the same content, new mode. */
void o_chmod(ws *w, const char *rel, mode_t mode);

bool need_root(void);
const pdk_change *get(const pdk_change_list *l, const char *path);
void scan(ws *w, char *const *ignore, pdk_change_list *out);
bool have_git(void);
/* Every non-directory entry of a tree, "path kind x|-|target content" lines, sorted. */
void list_tree(const char *root, const char *rel, pdk_buf *out, bool exec_bit_only);

#endif
