/* test_store.c: the state store (store.c). A store that is not there is not made by a
 * reader, and says so; one made is 0600 and in WAL mode, and opens again as it is; a store
 * of a newer schema is refused naming both versions; a file that is not a database is
 * "damaged" with what to do; the store's lock excludes a second holder (which is told
 * after the wait), and a writer held up by another process's transaction is told which
 * process holds it. */
#include "fsutil.h"
#include "store.h"
#include "store_sqlite.h" /* the store loads SQLite itself: its functions through it */

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "child.h"

typedef struct fixture {
    char dir[64];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/paddock-store-test.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    pdk_rm_rf_at(AT_FDCWD, f->dir);
    free(f);
    return 0;
}

static void t_open_and_reopen(void **state)
{
    fixture *f = *state;
    pdk_store *s = NULL;
    pdk_error err = {0};
    /* a reader finds nothing, and makes nothing */
    assert_int_equal(pdk_store_open(f->dir, false, &s, &err), -1);
    assert_null(s);
    assert_non_null(strstr(err.message, "no state store at"));
    _cleanup_free_ char *path = xasprintf("%s/" PDK_STORE_FILE, f->dir);
    struct stat st;
    assert_int_equal(stat(path, &st), -1);

    assert_int_equal(pdk_store_open(f->dir, true, &s, &err), 0);
    assert_string_equal(pdk_store_path(s), path);
    assert_string_equal(pdk_store_state_dir(s), f->dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(pdk_store_db(s), "PRAGMA journal_mode", -1, &q, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "wal");
    sqlite3_finalize(q);
    /* a transaction commits, and a rolled back one leaves nothing */
    assert_int_equal(pdk_store_begin(s, &err), 0);
    assert_int_equal(sqlite3_exec(pdk_store_db(s), "CREATE TABLE t(x)", NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(pdk_store_commit(s, &err), 0);
    assert_int_equal(pdk_store_begin(s, &err), 0);
    sqlite3_exec(pdk_store_db(s), "INSERT INTO t VALUES (1)", NULL, NULL, NULL);
    pdk_store_rollback(s);
    pdk_store_rollback(s); /* outside a transaction: nothing happens */
    assert_int_equal(sqlite3_prepare_v2(pdk_store_db(s), "SELECT count(*) FROM t", -1, &q, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(q, 0), 0);
    sqlite3_finalize(q);
    pdk_store_close(s);
    /* open again, for reading: the same store */
    assert_int_equal(pdk_store_open(f->dir, false, &s, &err), 0);
    pdk_store_close(s);
    pdk_store_close(NULL);
}

static void t_newer_schema_refused(void **state)
{
    fixture *f = *state;
    pdk_store *s = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_store_open(f->dir, true, &s, &err), 0);
    assert_int_equal(sqlite3_exec(pdk_store_db(s), "PRAGMA user_version=999", NULL, NULL, NULL),
                     SQLITE_OK);
    pdk_store_close(s);
    assert_int_equal(pdk_store_open(f->dir, true, &s, &err), -1);
    assert_null(s);
    assert_non_null(strstr(err.message, "of a newer paddock (schema 999; this one knows"));
}

static void t_damaged(void **state)
{
    fixture *f = *state;
    _cleanup_free_ char *path = xasprintf("%s/" PDK_STORE_FILE, f->dir);
    char junk[8192];
    memset(junk, 'j', sizeof(junk));
    assert_int_equal(pdk_write_file_atomic(AT_FDCWD, path, junk, sizeof(junk), 0600, false), 0);
    pdk_store *s = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_store_open(f->dir, true, &s, &err), -1);
    assert_null(s);
    assert_non_null(strstr(err.message, "is damaged"));
    assert_non_null(strstr(err.message, "move it away"));
}

static void t_lock_excludes(void **state)
{
    fixture *f = *state;
    pdk_store *s = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_store_open(f->dir, true, &s, &err), 0);
    int fd = pdk_store_lock(s, &err);
    assert_true(fd >= 0);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    /* another process waits, then is told */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        pdk_store *c = NULL;
        pdk_error e = {0};
        if (pdk_store_open(f->dir, false, &c, &e) < 0)
            _exit(2);
        int r = pdk_store_lock(c, &e);
        _exit(r < 0 && strstr(e.message, "stayed held by another process") ? 0 : 1);
    }
    assert_child_succeeded(pid);
    close(fd);
    /* released: taken again at once */
    fd = pdk_store_lock(s, &err);
    assert_true(fd >= 0);
    close(fd);
    pdk_store_close(s);
}

static void t_busy_writer_names_the_holder(void **state)
{
    fixture *f = *state;
    pdk_store *s = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_store_open(f->dir, true, &s, &err), 0);
    int ready[2], done[2];
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
    assert_int_equal(pipe2(done, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        pdk_store *c = NULL;
        pdk_error e = {0};
        if (pdk_store_open(f->dir, false, &c, &e) < 0 || pdk_store_begin(c, &e) < 0)
            _exit(2);
        (void)!write(ready[1], "r", 1);
        char ch;
        (void)!read(done[0], &ch, 1);
        _exit(0);
    }
    char ch;
    assert_int_equal(read(ready[0], &ch, 1), 1);
    assert_int_equal(pdk_store_begin(s, &err), -1);
    char want[64];
    snprintf(want, sizeof(want), "locked by process %d", (int)pid);
    if (!strstr(err.message, want))
        fail_msg("expected \"%s\" in \"%s\"", want, err.message);
    (void)!write(done[1], "d", 1);
    waitpid(pid, NULL, 0);
    /* the holder gone: writing works */
    assert_int_equal(pdk_store_begin(s, &err), 0);
    assert_int_equal(pdk_store_commit(s, &err), 0);
    pdk_store_close(s);
    close(ready[0]);
    close(ready[1]);
    close(done[0]);
    close(done[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(t_open_and_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(t_newer_schema_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(t_damaged, setup, teardown),
        cmocka_unit_test_setup_teardown(t_lock_excludes, setup, teardown),
        cmocka_unit_test_setup_teardown(t_busy_writer_names_the_holder, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
