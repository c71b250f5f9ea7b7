/* test_review.c: diff, commit and discard of a session as the library does them (review.c):
 * each records its event before it acts, and does not act when the record cannot be
 * written; a commit records what it wrote in the session. A session is made on disk in a
 * temporary state dir, its upper layer written directly (added files only: no whiteouts,
 * so no root needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "audit.h"
#include "review.h"
#include "session.h"
#include "store.h"
#include "util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fixture {
    char root[64];
    char *state, *workspace, *upper;
} fixture;

static void put(const char *dir, const char *name, const char *content)
{
    char *path = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "we");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
    free(path);
}

static bool exists(const char *dir, const char *name)
{
    char *path = xasprintf("%s/%s", dir, name);
    bool yes = access(path, F_OK) == 0;
    free(path);
    return yes;
}

static int setup(void **state)
{
    fixture *f = xcalloc(1, sizeof(*f));
    snprintf(f->root, sizeof(f->root), "/tmp/pdk-test-review-XXXXXX");
    assert_non_null(mkdtemp(f->root));
    f->state = xasprintf("%s/state", f->root);
    f->workspace = xasprintf("%s/ws", f->root);
    assert_int_equal(mkdir(f->state, 0700), 0);
    assert_int_equal(mkdir(f->workspace, 0700), 0);
    put(f->workspace, "kept.txt", "as it was\n");
    pdk_error err = {0};
    pdk_session *s = NULL;
    char *ws = realpath(f->workspace, NULL);
    assert_int_equal(pdk_session_prepare(f->state, "rev", ws, PDK_WORKSPACE_OVERLAY, &s, &err), 0);
    free(ws);
    assert_int_equal(pdk_session_materialize(s, &err), 0);
    f->upper = xasprintf("%s/upper", s->dir);
    pdk_session_free(s); /* its lock goes with it */
    put(f->upper, "new.txt", "hello from the sandbox\n");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char *cmd = xasprintf("rm -rf '%s'", f->root);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(f->state);
    free(f->workspace);
    free(f->upper);
    free(f);
    return 0;
}

static int add_kind(const pdk_audit_event *e, void *arg)
{
    pdk_buf *k = arg; /* "kind kind ..." */
    pdk_buf_printf(k, "%s%s", k->len ? " " : "", e->kind);
    return 0;
}

/* The kinds of the events recorded so far (folded into the store), space-separated. */
static char *recorded(const fixture *f)
{
    pdk_store *store = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_store_open(f->state, true, &store, &err), 0);
    assert_true(pdk_audit_fold(store, f->state, &err) >= 0);
    pdk_buf k = {0};
    pdk_audit_filter filter = {.session = "rev"};
    assert_int_equal(pdk_audit_each(store, &filter, add_kind, &k, &err), 0);
    pdk_store_close(store);
    return k.data ? pdk_buf_steal(&k) : xstrdup("");
}

/* The audit spool made impossible to write: a file where its directory goes. */
static void block_audit(const fixture *f)
{
    put(f->state, "audit-spool", "not a directory");
}

static void test_diff_records_then_renders(void **state)
{
    fixture *f = *state;
    pdk_error err = {0};
    pdk_review_diff_result r;
    pdk_review_diff_options opts = {.format = PDK_REVIEW_DIFF_PATCH};
    assert_int_equal(pdk_review_diff(f->state, "rev", &opts, &r, &err), 0);
    assert_int_equal(r.changes, 1);
    assert_non_null(strstr(r.text.data, "+hello from the sandbox"));
    pdk_review_diff_result_free(&r);

    opts.format = PDK_REVIEW_DIFF_JSON;
    assert_int_equal(pdk_review_diff(f->state, "rev", &opts, &r, &err), 0);
    json_t *c = json_array_get(json_object_get(r.json, "changes"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "path")), "new.txt");
    pdk_review_diff_result_free(&r);

    opts.format = PDK_REVIEW_DIFF_STAT;
    char *only[] = {"elsewhere", NULL};
    opts.paths = only;
    assert_int_equal(pdk_review_diff(f->state, "rev", &opts, &r, &err), 0);
    assert_int_equal(r.text.len, 0); /* nothing selected */
    pdk_review_diff_result_free(&r);

    char *kinds = recorded(f);
    assert_string_equal(kinds, "workspace.diff workspace.diff workspace.diff");
    free(kinds);
}

static void test_diff_unrecorded_renders_nothing(void **state)
{
    fixture *f = *state;
    block_audit(f);
    pdk_error err = {0};
    pdk_review_diff_result r;
    pdk_review_diff_options opts = {.format = PDK_REVIEW_DIFF_PATCH};
    assert_int_equal(pdk_review_diff(f->state, "rev", &opts, &r, &err), -1);
    assert_non_null(strstr(err.message, "cannot record workspace.diff"));
    assert_int_equal(r.text.len, 0);
    assert_null(r.json);
    pdk_review_diff_result_free(&r);
}

static void test_diff_no_session(void **state)
{
    fixture *f = *state;
    pdk_error err = {0};
    pdk_review_diff_result r;
    pdk_review_diff_options opts = {0};
    assert_int_equal(pdk_review_diff(f->state, "nope", &opts, &r, &err), -1);
    assert_non_null(strstr(err.message, "nope"));
    pdk_review_diff_result_free(&r);
}

static void test_commit_records_around_and_saves(void **state)
{
    fixture *f = *state;
    pdk_error err = {0};
    pdk_review_commit_result r;
    pdk_review_commit_options dry = {.dry_run = true};
    assert_int_equal(pdk_review_commit(f->state, "rev", &dry, &r, &err), 0);
    assert_true(r.ok);
    assert_int_equal(r.commit.applied_count, 1);
    assert_false(exists(f->workspace, "new.txt"));
    pdk_review_commit_result_free(&r);
    char *kinds = recorded(f);
    assert_string_equal(kinds, ""); /* a dry run records nothing */
    free(kinds);

    pdk_review_commit_options opts = {0};
    assert_int_equal(pdk_review_commit(f->state, "rev", &opts, &r, &err), 0);
    assert_true(r.ok);
    assert_string_equal(r.session, "rev");
    assert_int_equal(r.commit.applied_count, 1);
    assert_string_equal(r.commit.applied[0].path, "new.txt");
    assert_string_equal(r.record_error.message, "");
    assert_string_equal(r.save_error.message, "");
    assert_true(exists(f->workspace, "new.txt"));
    pdk_review_commit_result_free(&r);
    kinds = recorded(f);
    assert_string_equal(kinds, "workspace.commit workspace.committed");
    free(kinds);

    /* what was written is in the session: the next commit has nothing to do */
    pdk_session *s = NULL;
    assert_int_equal(pdk_session_open(f->state, "rev", &s, &err), 0);
    assert_int_equal(s->committed_count, 1);
    assert_string_equal(s->committed[0].path, "new.txt");
    pdk_session_free(s);
    assert_int_equal(pdk_review_commit(f->state, "rev", &opts, &r, &err), 0);
    assert_int_equal(r.commit.applied_count, 0);
    pdk_review_commit_result_free(&r);
}

static void test_commit_unrecorded_writes_nothing(void **state)
{
    fixture *f = *state;
    block_audit(f);
    pdk_error err = {0};
    pdk_review_commit_result r;
    pdk_review_commit_options opts = {0};
    assert_int_equal(pdk_review_commit(f->state, "rev", &opts, &r, &err), -1);
    assert_null(r.session); /* it did not start */
    assert_non_null(strstr(err.message, "cannot record workspace.commit"));
    assert_false(exists(f->workspace, "new.txt"));
    pdk_review_commit_result_free(&r);
}

static void test_commit_refused_busy(void **state)
{
    fixture *f = *state;
    pdk_error err = {0};
    pdk_session *running = NULL;
    assert_int_equal(pdk_session_open_locked(f->state, "rev", &running, &err), 0);
    pdk_review_commit_result r;
    pdk_review_commit_options opts = {0};
    assert_int_equal(pdk_review_commit(f->state, "rev", &opts, &r, &err), -1);
    assert_null(r.session);
    assert_false(exists(f->workspace, "new.txt"));
    pdk_review_commit_result_free(&r);
    pdk_session_free(running);
    char *kinds = recorded(f);
    assert_string_equal(kinds, "");
    free(kinds);
}

static void test_discard(void **state)
{
    fixture *f = *state;
    pdk_error err = {0};
    pdk_review_discard_result r;
    block_audit(f);
    assert_int_equal(pdk_review_discard(f->state, "rev", &r, &err), -1);
    assert_non_null(strstr(err.message, "cannot record workspace.discard"));
    assert_true(exists(f->state, "sessions/rev/session.json")); /* kept */
    pdk_review_discard_result_free(&r);

    char *spool = xasprintf("%s/audit-spool", f->state);
    assert_int_equal(unlink(spool), 0);
    free(spool);
    assert_int_equal(pdk_review_discard(f->state, "rev", &r, &err), 0);
    assert_string_equal(r.session, "rev");
    assert_false(r.damaged);
    assert_false(exists(f->state, "sessions/rev"));
    assert_true(exists(f->workspace, "kept.txt"));
    pdk_review_discard_result_free(&r);
    char *kinds = recorded(f);
    assert_string_equal(kinds, "workspace.discard");
    free(kinds);
    assert_int_equal(pdk_review_discard(f->state, "rev", &r, &err), -1);
    pdk_review_discard_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_diff_records_then_renders, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diff_unrecorded_renders_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diff_no_session, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_records_around_and_saves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_unrecorded_writes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_refused_busy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_discard, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
