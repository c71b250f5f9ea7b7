/* test_audit_follow.c: following the audit log (pdk_audit_follow, audit.c): the events
 * another process writes through its spool while the follow waits arrive in order, none
 * lost and none twice, while the spool is folded into the store by a third party
 * (checkpointed) part of the way; events appended to the store directly too; a session's
 * filter; a stop_fd ends it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "audit.h"
#include "store.h"
#include "util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define EVENTS 60

static char *current_dir; /* removed by the teardown, also when a test fails */

static char *new_state_dir(void)
{
    char *dir = xstrdup("/tmp/pdk-test-follow-XXXXXX");
    assert_non_null(mkdtemp(dir));
    current_dir = dir;
    return dir;
}

static void remove_dir(char *dir)
{
    (void)dir; /* the teardown does */
}

static int teardown(void **state)
{
    if (current_dir) {
        char *cmd = xasprintf("rm -rf '%s'", current_dir);
        int r = system(cmd);
        free(cmd);
        free(current_dir);
        current_dir = NULL;
        return r == 0 ? 0 : -1;
    }
    return 0;
}

/* The writer: EVENTS events of session "s1" numbered 1.., through a spool (as a run
 * writes them), each third one also a "s2" event; every 10 events the spool is folded
 * into the store by a store of its own (as another reader would); every 15th event is
 * appended to the store directly instead (as a commit does). go: read one byte first. */
static void writer(const char *state, int go)
{
    char c;
    if (read(go, &c, 1) != 1)
        _exit(2);
    pdk_audit_spool *spool = NULL;
    pdk_error err = {0};
    if (pdk_audit_spool_open(state, &spool, &err) < 0)
        _exit(1);
    for (int i = 1; i <= EVENTS; i++) {
        if (i % 15 == 0) {
            pdk_store *store = NULL;
            if (pdk_store_open(state, true, &store, &err) < 0 ||
                pdk_audit_append(store, "s1", "test.direct", json_pack("{s:i}", "n", i), &err) < 0)
                _exit(1);
            pdk_store_close(store);
        } else if (pdk_audit_spool_write(spool, "s1", "test.spooled", json_pack("{s:i}", "n", i),
                                         i % 2 == 0, &err) < 0) {
            _exit(1);
        }
        if (i % 3 == 0 && pdk_audit_spool_write(spool, "s2", "test.other",
                                                json_pack("{s:i}", "n", i), false, &err) < 0)
            _exit(1);
        if (i % 10 == 0) {
            pdk_store *store = NULL;
            if (pdk_store_open(state, true, &store, &err) < 0 ||
                pdk_audit_fold(store, state, &err) < 0)
                _exit(1);
            pdk_store_close(store);
        }
        if (i % 7 == 0)
            usleep(20 * 1000); /* the follow waits in between */
    }
    pdk_audit_spool_close(spool);
    _exit(0);
}

typedef struct seen {
    int count;
    int numbers[EVENTS + 1]; /* the spooled events' */
    int direct[EVENTS + 1];
    int ndirect;
    int64_t last_seq;
    bool out_of_order;
    int go; /* written to once the follow has delivered what was there */
} seen;

static int on_event(const pdk_audit_event *e, void *arg)
{
    seen *s = arg;
    if (e->seq <= s->last_seq)
        s->out_of_order = true;
    s->last_seq = e->seq;
    json_t *data = json_loads(e->data, 0, NULL);
    int n = (int)json_integer_value(json_object_get(data, "n"));
    json_decref(data);
    if (strcmp(e->kind, "test.start") == 0) {
        assert_int_equal(write(s->go, "g", 1), 1); /* the writer starts now */
        return 0;
    }
    assert_true(n >= 1 && n <= EVENTS);
    assert_string_equal(e->session, "s1");
    if (strcmp(e->kind, "test.direct") == 0)
        s->direct[s->ndirect++] = n; /* its seq is its place: spooled events get theirs when
                                      * folded, so it may come before one spooled earlier */
    else
        s->numbers[s->count++] = n;
    return s->count + s->ndirect == EVENTS ? 42 : 0;
}

static void test_follow_in_order(void **state)
{
    (void)state;
    char *dir = new_state_dir();
    pdk_error err = {0};
    pdk_store *store = NULL;
    assert_int_equal(pdk_store_open(dir, true, &store, &err), 0);
    assert_int_equal(pdk_audit_append(store, "s1", "test.start", json_object(), &err), 0);
    pdk_store_close(store);
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(go[1]);
        writer(dir, go[0]);
    }
    close(go[0]);
    seen s = {.go = go[1]};
    pdk_audit_follow_options opts = {.session = "s1", .stop_fd = -1};
    int r = pdk_audit_follow(dir, &opts, on_event, &s, &err);
    close(go[1]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(r, 42);
    assert_false(s.out_of_order);
    /* none lost, none twice, each writer's in the order written */
    assert_int_equal(s.ndirect, EVENTS / 15);
    for (int i = 0; i < s.ndirect; i++)
        assert_int_equal(s.direct[i], 15 * (i + 1));
    assert_int_equal(s.count, EVENTS - EVENTS / 15);
    for (int i = 0, want = 1; i < s.count; i++, want++) {
        if (want % 15 == 0)
            want++;
        assert_int_equal(s.numbers[i], want);
    }
    remove_dir(dir);
}

static int count_event(const pdk_audit_event *e, void *arg)
{
    (*(int *)arg)++;
    return 0;
}

static void test_follow_after_seq_and_stop(void **state)
{
    (void)state;
    char *dir = new_state_dir();
    pdk_error err = {0};
    pdk_store *store = NULL;
    assert_int_equal(pdk_store_open(dir, true, &store, &err), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(pdk_audit_append(store, NULL, "test.x", json_object(), &err), 0);
    pdk_store_close(store);
    int stop[2];
    assert_int_equal(pipe(stop), 0);
    assert_int_equal(write(stop[1], "x", 1), 1); /* stops once what is there is delivered */
    int count = 0;
    pdk_audit_follow_options opts = {.after_seq = 3, .stop_fd = stop[0]};
    assert_int_equal(pdk_audit_follow(dir, &opts, count_event, &count, &err), 0);
    assert_int_equal(count, 2);
    close(stop[0]);
    close(stop[1]);
    remove_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_follow_in_order, teardown),
        cmocka_unit_test_teardown(test_follow_after_seq_and_stop, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
