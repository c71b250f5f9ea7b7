/* test_audit.c: the hash-chained audit log in a real SQLite store: events append in order,
 * verify recomputes the chain and names the first row that was edited, deleted, swapped or
 * truncated, an event recorded twice, and a log cut short and written on (until that is
 * acknowledged), its recorded end written in place in two slots (a torn one leaves the
 * other; the single line of earlier versions read); redaction keeps registered values out of every
 * field; batches go in one transaction. The spool: a write cut short leaves no torn line and is
 * told by the next event; a torn line left by a writer is skipped and what follows folded;
 * processes folding one spool at once fold each line once; processes opening a new store at once
 * all open it. */
#include "audit.h"
#include "fsutil.h"
#include "log.h"
#include "redact.h"
#include "store_sqlite.h"

#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* ---- an event recorded twice; a log cut short ---- */

static void test_repeat_detected(void **state)
{
    fixture *f = *state;
    append_five(f);
    /* What two readers folding one spool at once did: the same event (its time kept) twice. */
    pdk_audit_item once = {
        .session = "s1", .kind = "exec", .data = json_pack("{s:i}", "n", 9), .time_ns = 1234567890};
    pdk_audit_item twice = once;
    twice.data = json_pack("{s:i}", "n", 9);
    pdk_error err = {0};
    assert_int_equal(pdk_audit_append_batch(f->store, &once, 1, &err), 0);
    append(f, NULL, "note", NULL);
    assert_int_equal(pdk_audit_append_batch(f->store, &twice, 1, &err), 0);
    pdk_audit_verdict v;
    verify(f, &v);
    assert_false(v.intact);
    assert_int_equal(v.bad_seq, 8);
    assert_string_equal(v.problem, "row 8 repeats row 6 (the same event recorded twice: the "
                                   "spool was folded twice)");
}

static void test_cut_and_written_on_detected(void **state)
{
    fixture *f = *state;
    append_five(f);
    pdk_audit_verdict v;
    verify(f, &v);
    assert_true(v.intact);
    /* The last rows deleted, and the chain's head in the table put back in line. */
    sql(f, "DELETE FROM audit WHERE seq >= 4;"
           "UPDATE meta SET value = (SELECT seq || ' ' || hash FROM audit WHERE seq = 3) "
           "WHERE key = 'audit_head'");
    verify(f, &v);
    assert_false(v.intact);
    assert_int_equal(v.bad_seq, 4);
    assert_non_null(strstr(v.problem, "the log was cut: it reached row 5"));
    /* Written on: the table alone agrees with itself again, the recorded end does not. */
    append(f, "s1", "exec", json_pack("{s:i}", "n", 6));
    append(f, "s1", "exec", json_pack("{s:i}", "n", 7));
    append(f, "s1", "exec", json_pack("{s:i}", "n", 8));
    verify(f, &v);
    assert_false(v.intact);
    assert_int_equal(v.bad_seq, 5);
    assert_non_null(strstr(v.problem, "row 5 is not the row audit-head records"));
    assert_non_null(strstr(v.problem, "paddock audit acknowledge-truncation"));
    char problem[512];
    pdk_error err = {0};
    assert_int_equal(pdk_audit_check_end(f->store, problem, sizeof(problem), &err), 1);
    /* And it stays so, however much is written. */
    append(f, "s1", "exec", json_pack("{s:i}", "n", 9));
    verify(f, &v);
    assert_false(v.intact);

    pdk_audit_acknowledgement ack;
    assert_int_equal(pdk_audit_acknowledge_truncation(f->store, "uid 0 (test)", &ack, &err), 0);
    assert_true(ack.acknowledged);
    assert_int_equal(ack.recorded_seq, 5);
    assert_int_equal(ack.found_seq, 7);
    assert_int_equal(ack.event_seq, 8);
    verify(f, &v);
    assert_true(v.intact);
    assert_int_equal(v.rows, 8);
    assert_int_equal(pdk_audit_check_end(f->store, problem, sizeof(problem), &err), 0);
    collected c = {0};
    pdk_audit_filter last = {.after_seq = 7};
    assert_int_equal(pdk_audit_each(f->store, &last, collect, &c, &err), 0);
    assert_string_equal(c.kinds[0], "audit.truncation_acknowledged");
    assert_non_null(strstr(c.data[0], "{\"by\":\"uid 0 (test)\",\"found_end\":{\"hash\":"));
    /* Once acknowledged, nothing more to acknowledge. */
    assert_int_equal(pdk_audit_acknowledge_truncation(f->store, "uid 0 (test)", &ack, &err), 0);
    assert_false(ack.acknowledged);
}

static void test_recorded_end_damaged(void **state)
{
    fixture *f = *state;
    append_five(f);
    char path[128];
    snprintf(path, sizeof(path), "%s/audit-head", f->dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("5 not-a-hash\n", fp);
    fclose(fp);
    append(f, "s1", "exec", NULL);
    pdk_audit_verdict v;
    verify(f, &v);
    assert_false(v.intact);
    assert_non_null(strstr(v.problem, "audit-head is damaged"));
    pdk_audit_acknowledgement ack;
    pdk_error err = {0};
    assert_int_equal(pdk_audit_acknowledge_truncation(f->store, "t", &ack, &err), 0);
    assert_true(ack.acknowledged);
    assert_int_equal(ack.recorded_seq, -1);
    verify(f, &v);
    assert_true(v.intact);
}

/* ---- the recorded end's file (STATE/audit-head: two slots, written in place) ---- */

#define HEAD_SLOT 512

static void head_path(fixture *f, char *path, size_t size)
{
    snprintf(path, size, "%s/audit-head", f->dir);
}

/* The write count of each slot (0 when a slot does not parse). */
static void head_gens(fixture *f, unsigned long long gen[2])
{
    char path[128], file[2 * HEAD_SLOT + 1] = "";
    head_path(f, path, sizeof(path));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, file, 2 * HEAD_SLOT), 2 * HEAD_SLOT);
    close(fd);
    for (int i = 0; i < 2; i++) {
        gen[i] = 0;
        char slot[HEAD_SLOT + 1];
        memcpy(slot, file + i * HEAD_SLOT, HEAD_SLOT);
        slot[HEAD_SLOT] = '\0';
        if (sscanf(slot, "paddock-audit-head %llu", &gen[i]) != 1)
            gen[i] = 0;
    }
}

/* Overwrite the second half of slot i, as a write cut short by a crash leaves it. */
static void tear_slot(fixture *f, int i)
{
    char path[128], junk[HEAD_SLOT / 2];
    head_path(f, path, sizeof(path));
    memset(junk, 'x', sizeof(junk));
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, junk, sizeof(junk), (off_t)i * HEAD_SLOT + HEAD_SLOT / 2),
                     (ssize_t)sizeof(junk));
    close(fd);
}

static void test_recorded_end_written_in_place(void **state)
{
    fixture *f = *state;
    append_five(f);
    char path[128];
    head_path(f, path, sizeof(path));
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    assert_int_equal(before.st_size, 2 * HEAD_SLOT);
    /* Each append moves it in place: the same file (no new one renamed over it, no
     * directory to sync), the same size, the newer slot the other one each time. */
    unsigned long long gen[2], next[2];
    head_gens(f, gen);
    for (int i = 6; i <= 9; i++) {
        append(f, "s1", "exec", json_pack("{s:i}", "n", i));
        head_gens(f, next);
        assert_int_equal(next[0] + next[1], gen[0] + gen[1] + 2); /* one slot, one more */
        memcpy(gen, next, sizeof(gen));
    }
    assert_int_equal(stat(path, &after), 0);
    assert_int_equal(after.st_ino, before.st_ino);
    assert_int_equal(after.st_size, 2 * HEAD_SLOT);
    pdk_audit_verdict v;
    verify(f, &v);
    assert_true(v.intact);
}

static void test_recorded_end_torn_slot(void **state)
{
    fixture *f = *state;
    append_five(f);
    /* A crash while the end moved to row 5 tore that slot: the other still says row 4,
     * whole; the end is row 4 (not damaged, not lost), and moves on from there. */
    unsigned long long gen[2];
    head_gens(f, gen);
    int newer = gen[1] > gen[0];
    tear_slot(f, newer);
    char problem[512] = "";
    pdk_error err = {0};
    assert_int_equal(pdk_audit_check_end(f->store, problem, sizeof(problem), &err), 0);
    /* Cut at row 3 with the table put in line: the end it still records (row 4) finds it. */
    sql(f, "DELETE FROM audit WHERE seq >= 4;"
           "UPDATE meta SET value = (SELECT seq || ' ' || hash FROM audit WHERE seq = 3) "
           "WHERE key = 'audit_head'");
    pdk_audit_verdict v;
    verify(f, &v);
    assert_false(v.intact);
    assert_non_null(strstr(v.problem, "the log was cut: it reached row 4"));
    /* Both slots torn (not what one write cut short leaves): damaged, and said so. */
    tear_slot(f, !newer);
    verify(f, &v);
    assert_false(v.intact);
    assert_non_null(strstr(v.problem, "audit-head is damaged"));
}

static void test_recorded_end_earlier_format(void **state)
{
    fixture *f = *state;
    append_five(f);
    /* What earlier versions wrote: the single line "SEQ HASH". */
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(pdk_store_db(f->store),
                                        "SELECT hash FROM audit WHERE seq = 5", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    char path[128];
    head_path(f, path, sizeof(path));
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp, "5 %s\n", (const char *)sqlite3_column_text(st, 0));
    fclose(fp);
    sqlite3_finalize(st);
    pdk_audit_verdict v;
    verify(f, &v);
    assert_true(v.intact);
    /* Read as the end it records, then made into slots by the next move. */
    sql(f, "DELETE FROM audit WHERE seq >= 5;"
           "UPDATE meta SET value = (SELECT seq || ' ' || hash FROM audit WHERE seq = 4) "
           "WHERE key = 'audit_head'");
    verify(f, &v);
    assert_false(v.intact);
    assert_non_null(strstr(v.problem, "the log was cut: it reached row 5"));
    pdk_audit_acknowledgement ack;
    pdk_error err = {0};
    assert_int_equal(pdk_audit_acknowledge_truncation(f->store, "t", &ack, &err), 0);
    assert_true(ack.acknowledged);
    assert_int_equal(ack.recorded_seq, 5);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_size, 2 * HEAD_SLOT);
    append(f, "s1", "exec", NULL);
    verify(f, &v);
    assert_true(v.intact);
}

/* ---- the spool ---- */

typedef struct folded {
    char kinds[64][32];
    size_t n;
} folded;

static int collect_kind(const pdk_audit_event *e, void *arg)
{
    folded *fo = arg;
    if (fo->n < 64)
        snprintf(fo->kinds[fo->n++], sizeof(fo->kinds[0]), "%s", e->kind);
    return 0;
}

static void kinds_of(fixture *f, char *out, size_t size)
{
    folded fo = {0};
    pdk_error err = {0};
    assert_int_equal(pdk_audit_each(f->store, NULL, collect_kind, &fo, &err), 0);
    out[0] = '\0';
    for (size_t i = 0; i < fo.n; i++)
        snprintf(out + strlen(out), size - strlen(out), "%s%s", i ? " " : "", fo.kinds[i]);
}

static void spool_write(pdk_audit_spool *sp, const char *kind, bool want_ok)
{
    pdk_error err = {0};
    int r = pdk_audit_spool_write(sp, "s", kind, json_pack("{s:s}", "pad", "0123456789abcdef"),
                                  true, &err);
    if (want_ok && r < 0)
        print_error("%s\n", err.message);
    assert_int_equal(r, want_ok ? 0 : -1);
}

/* The one spool file under f's state dir (its path in out); false when there is none. */
static bool spool_file(fixture *f, char *out, size_t size)
{
    char dir[128];
    snprintf(dir, sizeof(dir), "%s/audit-spool", f->dir);
    DIR *d = opendir(dir);
    if (!d)
        return false;
    struct dirent *de;
    bool found = false;
    while ((de = readdir(d)))
        if (strstr(de->d_name, ".jsonl")) {
            snprintf(out, size, "%.100s/%.150s", dir, de->d_name);
            found = true;
        }
    closedir(d);
    return found;
}

static off_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_size;
}

static void append_raw(const char *path, const char *bytes)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bytes, strlen(bytes)), (ssize_t)strlen(bytes));
    close(fd);
}

static int fold(fixture *f)
{
    pdk_error err = {0};
    int n = pdk_audit_fold(f->store, f->dir, &err);
    if (n < 0)
        print_error("%s\n", err.message);
    return n;
}

static void test_spool_write_cut_short(void **state)
{
    fixture *f = *state;
    pdk_audit_spool *sp = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_audit_spool_open(f->dir, &sp, &err), 0);
    spool_write(sp, "first", true);
    char path[300];
    assert_true(spool_file(f, path, sizeof(path)));
    off_t before = file_size(path);
    /* A file size limit a little above: the next line is written in part, then EFBIG (a
     * full disk does the same). */
    struct rlimit old, small = {.rlim_cur = (rlim_t)before + 40, .rlim_max = RLIM_INFINITY};
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    small.rlim_max = old.rlim_max;
    void (*previous)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    spool_write(sp, "lost", false);
    spool_write(sp, "lost", false);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, previous);
    assert_int_equal(file_size(path), before); /* cut off again: no torn line */
    spool_write(sp, "after", true);
    pdk_audit_spool_close(sp);
    assert_int_equal(fold(f), 3);
    char kinds[512];
    kinds_of(f, kinds, sizeof(kinds));
    assert_string_equal(kinds, "first audit.write_failed after");
    collected c = {0};
    pdk_audit_filter second = {.after_seq = 1};
    assert_int_equal(pdk_audit_each(f->store, &second, collect, &c, &err), 0);
    assert_string_equal(c.data[0], "{\"error\":\"File too large\",\"kinds\":{\"lost\":2}}");
    assert_false(spool_file(f, path, sizeof(path))); /* folded whole, its writer gone */
    pdk_audit_verdict v;
    verify(f, &v);
    assert_true(v.intact);
}

/* A torn line (what an older writer, or one that could not cut its write off, left) does
 * not end the log: the lines after it that go on with the chain are folded. */
static void test_fold_after_torn_line(void **state)
{
    fixture *f = *state;
    pdk_audit_spool *sp = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_audit_spool_open(f->dir, &sp, &err), 0);
    spool_write(sp, "one", true);
    char path[300];
    assert_true(spool_file(f, path, sizeof(path)));
    append_raw(path, "{\"data\":{\"pad\":\"01"); /* torn, the next line right after it */
    spool_write(sp, "two", true);
    assert_int_equal(fold(f), 3); /* folded while its writer is there */
    append_raw(path, "{\"data\":{\"pad\":\"0123\"},\"hash\":\"ab\n"); /* torn, on its own */
    spool_write(sp, "three", true);
    spool_write(sp, "four", true);
    append_raw(path, "{\"data\":{\"pa"); /* torn, at the very end */
    assert_int_equal(fold(f), 3);
    assert_true(spool_file(f, path, sizeof(path))); /* the writer may finish that line */
    pdk_audit_spool_close(sp);
    assert_int_equal(fold(f), 1); /* its writer gone: a torn tail */
    char kinds[512];
    kinds_of(f, kinds, sizeof(kinds));
    assert_string_equal(kinds, "one audit.spool_torn two audit.spool_torn three four "
                               "audit.spool_torn");
    collected c = {0};
    assert_int_equal(pdk_audit_each(f->store, NULL, collect, &c, &err), 0);
    assert_non_null(strstr(c.data[1], "\"bytes\":18"));
    assert_false(spool_file(f, path, sizeof(path)));
    pdk_audit_verdict v;
    verify(f, &v);
    assert_true(v.intact);
}

/* A line that is an event but not the chain's next (an edit) is not skipped: the file is
 * set aside from there on. */
static void test_fold_stops_at_edited_line(void **state)
{
    fixture *f = *state;
    pdk_audit_spool *sp = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_audit_spool_open(f->dir, &sp, &err), 0);
    spool_write(sp, "one", true);
    char path[300];
    assert_true(spool_file(f, path, sizeof(path)));
    append_raw(path, "garbage\n"); /* torn, on its own */
    pdk_audit_spool_close(sp);
    /* The line after the torn one an edit: not folded. */
    append_raw(path, "{\"data\":{},\"hash\":\"00\",\"kind\":\"x\",\"prev\":\"00\",\"session\":null,"
                     "\"time_ns\":1}\n");
    assert_int_equal(fold(f), 2);
    char kinds[512];
    kinds_of(f, kinds, sizeof(kinds));
    assert_string_equal(kinds, "one audit.spool_damaged");
    char damaged[320];
    snprintf(damaged, sizeof(damaged), "%s.damaged", path);
    assert_int_equal(access(damaged, F_OK), 0);
    assert_int_equal(fold(f), 0);
}

/* Run fn(i, arg) in n processes at once (n at most 16); how many of them failed. */
static int in_processes(int n, bool (*fn)(int i, void *arg), void *arg)
{
    pid_t pids[16];
    assert_true(n <= 16);
    for (int i = 0; i < n; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0)
            _exit(fn(i, arg) ? 0 : 1);
    }
    int failed = 0;
    for (int i = 0; i < n; i++) {
        int status = 0;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    return failed;
}

/* Open the store of the state dir arg (and fold its spool, when fold). */
static bool open_store(const char *dir, bool fold_too, int i)
{
    pdk_store *store = NULL;
    pdk_error err = {0};
    bool ok = pdk_store_open(dir, true, &store, &err) == 0 &&
              (!fold_too || pdk_audit_fold(store, dir, &err) >= 0);
    if (!ok)
        fprintf(stderr, "process %d: %s\n", i, err.message);
    pdk_store_close(store);
    return ok;
}

static bool open_and_fold(int i, void *arg)
{
    return open_store(arg, true, i);
}

static bool open_only(int i, void *arg)
{
    return open_store(arg, false, i);
}

/* Readers folding one spool at once fold each line once. */
static void test_concurrent_folds(void **state)
{
    fixture *f = *state;
    enum { events = 300 };
    pdk_audit_spool *sp = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_audit_spool_open(f->dir, &sp, &err), 0);
    for (int i = 0; i < events; i++) {
        assert_int_equal(
            pdk_audit_spool_write(sp, "s", "exec", json_pack("{s:i}", "i", i), false, &err), 0);
        if (i == events / 2)
            pdk_audit_spool_close(sp), pdk_audit_spool_open(f->dir, &sp, &err); /* 2 files */
    }
    pdk_audit_spool_close(sp);
    assert_int_equal(in_processes(8, open_and_fold, f->dir), 0);
    assert_int_equal(fold(f), 0);
    pdk_audit_verdict v;
    verify(f, &v);
    assert_true(v.intact);
    assert_int_equal(v.rows, events);
}

/* Processes opening a new store at once (a run asking, a reader polling) all open it: one
 * sets it up, the others wait for it, none fails at once with "database is locked". */
static void test_concurrent_set_up(void **state)
{
    fixture *f = *state;
    for (int round = 0; round < 50; round++) {
        char dir[128];
        snprintf(dir, sizeof(dir), "%s/r%d", f->dir, round);
        assert_int_equal(mkdir(dir, 0700), 0);
        assert_int_equal(in_processes(6, open_only, dir), 0);
    }
}

/* A writer that waits too long is told which process holds the write lock. */
static void test_busy_names_the_holder(void **state)
{
    fixture *f = *state;
    int ready[2], done[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(done), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        pdk_store *store = NULL;
        pdk_error child_err = {0};
        char c = 'x';
        if (pdk_store_open(f->dir, true, &store, &child_err) < 0 ||
            pdk_store_begin(store, &child_err) < 0)
            _exit(1);
        if (write(ready[1], &c, 1) != 1 || read(done[0], &c, 1) != 1)
            _exit(1);
        pdk_store_rollback(store);
        _exit(0);
    }
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    sqlite3_busy_timeout(pdk_store_db(f->store), 50); /* not the 5 s of a real writer */
    pdk_error err = {0};
    assert_int_equal(pdk_store_begin(f->store, &err), -1);
    char want[64];
    snprintf(want, sizeof(want), "is locked by process %d", (int)child);
    if (!strstr(err.message, want))
        print_error("%s\n", err.message);
    assert_non_null(strstr(err.message, want));
    assert_int_equal(write(done[1], "x", 1), 1);
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(ready[0]), close(ready[1]), close(done[0]), close(done[1]);
    /* And this process's connection works on. */
    sqlite3_busy_timeout(pdk_store_db(f->store), PDK_STORE_BUSY_MS);
    append_five(f);
    pdk_audit_verdict v;
    verify(f, &v);
    assert_true(v.intact);
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
        cmocka_unit_test_setup_teardown(test_repeat_detected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cut_and_written_on_detected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recorded_end_damaged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recorded_end_written_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recorded_end_torn_slot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recorded_end_earlier_format, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spool_write_cut_short, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fold_after_torn_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fold_stops_at_edited_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_folds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_set_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_busy_names_the_holder, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
