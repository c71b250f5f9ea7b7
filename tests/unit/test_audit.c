/* test_audit.c: the hash-chained audit log in a real SQLite store: events append in order,
 * verify recomputes the chain and names the first row that was edited, deleted, swapped or
 * truncated; redaction keeps registered values out of every field; batches go in one
 * transaction. */
#include "audit.h"
#include "fsutil.h"
#include "log.h"
#include "redact.h"
#include "store_sqlite.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct fixture {
    char dir[64];
    pdk_store *store;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/paddock-audit-test.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    pdk_error err = {0};
    if (pdk_store_open(f->dir, true, &f->store, &err) < 0) {
        print_error("%s\n", err.message);
        return -1;
    }
    pdk_redact_clear();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    pdk_store_close(f->store);
    pdk_rm_rf_at(AT_FDCWD, f->dir);
    pdk_redact_clear();
    free(f);
    return 0;
}

static void append(fixture *f, const char *session, const char *kind, json_t *data)
{
    pdk_error err = {0};
    if (pdk_audit_append(f->store, session, kind, data, &err) < 0)
        print_error("%s\n", err.message);
    assert_string_equal(err.message, "");
}

static void append_five(fixture *f)
{
    for (int i = 1; i <= 5; i++)
        append(f, i % 2 ? "s1" : NULL, "exec", json_pack("{s:i, s:s}", "n", i, "argv", "ls"));
}

static void sql(fixture *f, const char *statement)
{
    char *msg = NULL;
    int r = sqlite3_exec(pdk_store_db(f->store), statement, NULL, NULL, &msg);
    if (r != SQLITE_OK)
        print_error("%s: %s\n", statement, msg ? msg : "?");
    assert_int_equal(r, SQLITE_OK);
}

static void verify(fixture *f, pdk_audit_verdict *v)
{
    pdk_error err = {0};
    assert_int_equal(pdk_audit_verify(f->store, v, &err), 0);
}

typedef struct collected {
    int64_t seqs[16];
    char kinds[16][32];
    char data[16][256];
    size_t n;
} collected;

static int collect(const pdk_audit_event *e, void *arg)
{
    collected *c = arg;
    if (c->n < 16) {
        c->seqs[c->n] = e->seq;
        snprintf(c->kinds[c->n], sizeof(c->kinds[0]), "%s", e->kind);
        snprintf(c->data[c->n], sizeof(c->data[0]), "%s", e->data);
        c->n++;
    }
    return 0;
}

static void test_append_and_read(void **state)
{
    fixture *f = *state;
    append_five(f);
    collected c = {0};
    pdk_error err = {0};
    assert_int_equal(pdk_audit_each(f->store, NULL, collect, &c, &err), 0);
    assert_int_equal(c.n, 5);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(c.seqs[i], (int64_t)i + 1);
    /* Canonical data: compact, keys sorted. */
    assert_string_equal(c.data[0], "{\"argv\":\"ls\",\"n\":1}");

    /* Filters: a session, and after a seq. */
    collected s = {0};
    pdk_audit_filter by_session = {.session = "s1"};
    assert_int_equal(pdk_audit_each(f->store, &by_session, collect, &s, &err), 0);
    assert_int_equal(s.n, 3);
    collected a = {0};
    pdk_audit_filter after = {.after_seq = 3};
    assert_int_equal(pdk_audit_each(f->store, &after, collect, &a, &err), 0);
    assert_int_equal(a.n, 2);
    assert_int_equal(a.seqs[0], 4);

    pdk_audit_verdict v;
    verify(f, &v);
    assert_true(v.intact);
    assert_int_equal(v.rows, 5);

    /* A second connection (another process would be the same) continues the chain. */
    pdk_store *other = NULL;
    assert_int_equal(pdk_store_open(f->dir, false, &other, &err), 0);
    assert_int_equal(pdk_audit_append(other, "s2", "session.end", json_object(), &err), 0);
    pdk_store_close(other);
    verify(f, &v);
    assert_true(v.intact);
    assert_int_equal(v.rows, 6);
}

static void test_empty_log_is_intact(void **state)
{
    fixture *f = *state;
    pdk_audit_verdict v;
    verify(f, &v);
    assert_true(v.intact);
    assert_int_equal(v.rows, 0);
}

static void test_edit_detected(void **state)
{
    fixture *f = *state;
    append_five(f);
    sql(f, "UPDATE audit SET data = '{\"argv\":\"rm -rf /\",\"n\":3}' WHERE seq = 3");
    pdk_audit_verdict v;
    verify(f, &v);
    assert_false(v.intact);
    assert_int_equal(v.bad_seq, 3);
    assert_string_equal(v.problem, "row 3 was edited (its content does not match its hash)");
}

static void test_edit_with_new_hash_detected(void **state)
{
    fixture *f = *state;
    append_five(f);
    /* Whoever edits row 2 and gives it a fresh hash breaks the link of row 3. */
    sql(f, "UPDATE audit SET kind = 'approval', hash = 'ab' || substr(hash, 3) WHERE seq = 2");
    pdk_audit_verdict v;
    verify(f, &v);
    assert_false(v.intact);
    assert_int_equal(v.bad_seq, 2);
}

static void test_delete_detected(void **state)
{
    fixture *f = *state;
    append_five(f);
    sql(f, "DELETE FROM audit WHERE seq = 2");
    pdk_audit_verdict v;
    verify(f, &v);
    assert_false(v.intact);
    assert_int_equal(v.bad_seq, 2);
    assert_string_equal(v.problem,
                        "row 2 is missing: the log goes on at row 3 (rows were deleted)");
}

static void test_truncation_detected(void **state)
{
    fixture *f = *state;
    append_five(f);
    sql(f, "DELETE FROM audit WHERE seq >= 4");
    pdk_audit_verdict v;
    verify(f, &v);
    assert_false(v.intact);
    assert_int_equal(v.bad_seq, 4);
    assert_string_equal(v.problem, "rows 4 to 5 are missing (deleted from the end)");
}

static void test_swap_detected(void **state)
{
    fixture *f = *state;
    append_five(f);
    /* Exchange rows 2 and 4 wholesale (content and hashes). */
    sql(f, "UPDATE audit SET seq = -2 WHERE seq = 2;"
           "UPDATE audit SET seq = 2 WHERE seq = 4;"
           "UPDATE audit SET seq = 4 WHERE seq = -2;");
    pdk_audit_verdict v;
    verify(f, &v);
    assert_false(v.intact);
    assert_int_equal(v.bad_seq, 2);
}

static void test_redaction(void **state)
{
    fixture *f = *state;
    pdk_redact_add("t-g1045fSECRETvalue");
    pdk_redact_add("abc"); /* too short to redact: ignored */
    append(f, "s1", "exec",
           json_pack("{s:[s,s], s:s, s:{s:s}}", "argv", "curl",
                     "-HAuthorization: Bearer t-g1045fSECRETvalue", "cwd", "/w", "env",
                     "t-g1045fSECRETvalue", "x"));
    collected c = {0};
    pdk_error err = {0};
    assert_int_equal(pdk_audit_each(f->store, NULL, collect, &c, &err), 0);
    assert_int_equal(c.n, 1);
    assert_null(strstr(c.data[0], "SECRET"));
    assert_non_null(strstr(c.data[0], "Bearer [REDACTED]"));
    assert_non_null(strstr(c.data[0], "\"[REDACTED]\":\"x\""));
    pdk_audit_verdict v;
    verify(f, &v);
    assert_true(v.intact);
}

/* The logs redact the same values: a warning that quotes one shows [REDACTED]. */
static void test_log_redaction(void **state)
{
    pdk_redact_add("u-LOGGEDsecret42");
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_int_equal(dup2(pipefd[1], STDERR_FILENO), STDERR_FILENO);
    pdk_warn("the endpoint said: token u-LOGGEDsecret42 is u-LOGGEDsecret42");
    pdk_warn("nothing secret here");
    assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
    close(saved);
    close(pipefd[1]);
    char buf[512] = "";
    ssize_t n = read(pipefd[0], buf, sizeof(buf) - 1);
    close(pipefd[0]);
    assert_true(n > 0);
    assert_string_equal(buf, "paddock: warning: the endpoint said: token [REDACTED] is [REDACTED]\n"
                             "paddock: warning: nothing secret here\n");
    char *r = pdk_redacted("x u-LOGGEDsecret42");
    assert_string_equal(r, "x [REDACTED]");
    free(r);
    assert_null(pdk_redact_text("plain"));
}

static void test_batch(void **state)
{
    fixture *f = *state;
    pdk_audit_item items[3] = {
        {.session = "b", .kind = "exec", .data = json_pack("{s:i}", "i", 1)},
        {.session = "b", .kind = "exec", .data = json_pack("{s:i}", "i", 2)},
        {.session = NULL, .kind = "note", .data = NULL},
    };
    pdk_error err = {0};
    assert_int_equal(pdk_audit_append_batch(f->store, items, 3, &err), 0);
    collected c = {0};
    assert_int_equal(pdk_audit_each(f->store, NULL, collect, &c, &err), 0);
    assert_int_equal(c.n, 3);
    assert_string_equal(c.kinds[2], "note");
    assert_string_equal(c.data[2], "{}");
    pdk_audit_verdict v;
    verify(f, &v);
    assert_true(v.intact);
}

static void test_store_errors(void **state)
{
    fixture *f = *state;
    pdk_error err = {0};
    pdk_store *none = NULL;
    char missing[128];
    snprintf(missing, sizeof(missing), "%s/nowhere", f->dir);
    assert_int_equal(pdk_store_open(missing, false, &none, &err), -1);
    assert_null(none);
    assert_non_null(strstr(err.message, "no state store"));

    /* Not a database: a clear error, nothing overwritten. */
    char bad[128];
    snprintf(bad, sizeof(bad), "%s/bad", f->dir);
    assert_int_equal(mkdir(bad, 0700), 0);
    char path[160];
    snprintf(path, sizeof(path), "%s/" PDK_STORE_FILE, bad);
    FILE *fp = fopen(path, "w");
    fputs("this is not sqlite, but long enough to look like a header of something", fp);
    fclose(fp);
    memset(&err, 0, sizeof(err));
    assert_int_equal(pdk_store_open(bad, true, &none, &err), -1);
    assert_non_null(strstr(err.message, "damaged"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_append_and_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_log_is_intact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_edit_detected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_edit_with_new_hash_detected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_detected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncation_detected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_swap_detected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_redaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
