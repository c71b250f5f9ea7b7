/* test_approvals.c: waiting for an approval (approvals.c): blocking with an asker (its fd
 * answered, an answer from another process, the deadline, an interruption) and watched on
 * a libevent loop (answered from another process, timed out, cancelled). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "approvals.h"
#include "store.h"
#include "util.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct fixture {
    char dir[64];
    pdk_store *store;
    char id[17];
} fixture;

static int setup(void **state)
{
    fixture *f = xcalloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/pdk-test-approvals-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    pdk_error err = {0};
    assert_int_equal(pdk_store_open(f->dir, true, &f->store, &err), 0);
    pdk_approval a = {.session = xstrdup("s1"),
                      .argv = json_pack("[s, s]", "git", "push"),
                      .parents = json_array(),
                      .cwd = xstrdup("/work"),
                      .rule = xstrdup("rule 1"),
                      .reason = xstrdup("pushing")};
    assert_int_equal(pdk_approval_create(f->store, &a, &err), 0);
    memcpy(f->id, a.id, sizeof(f->id));
    pdk_approval_clear(&a);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    pdk_store_close(f->store);
    char *cmd = xasprintf("rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(f);
    return 0;
}

/* An asker reading its answers from a pipe (what a terminal would be). */
typedef struct pipe_asker {
    int fds[2];
    int begun, reads, ended;
    bool interrupt;
    pdk_approval_outcome outcome;
    char asked[64];
} pipe_asker;

static int pa_begin(void *arg, const pdk_approval *request)
{
    pipe_asker *p = arg;
    p->begun++;
    snprintf(p->asked, sizeof(p->asked), "%s", json_string_value(json_array_get(request->argv, 1)));
    return p->fds[0];
}

static int pa_read(void *arg, int fd, pdk_approval_reply *reply)
{
    pipe_asker *p = arg;
    p->reads++;
    char c = 0;
    if (read(fd, &c, 1) != 1)
        return -1;
    if (c != 'y' && c != 'a' && c != 'n')
        return 0;
    reply->approve = c != 'n';
    reply->always = c == 'a';
    snprintf(reply->by, sizeof(reply->by), "the test's pipe");
    return 1;
}

static bool pa_interrupted(void *arg)
{
    return ((pipe_asker *)arg)->interrupt;
}

static void pa_end(void *arg, pdk_approval_outcome outcome, const pdk_approval *answer)
{
    pipe_asker *p = arg;
    p->ended++;
    p->outcome = outcome;
}

static pdk_approval_asker asker_of(pipe_asker *p)
{
    assert_int_equal(pipe(p->fds), 0);
    return (pdk_approval_asker){
        .begin = pa_begin, .read = pa_read, .interrupted = pa_interrupted, .end = pa_end, .arg = p};
}

static void pipe_close(pipe_asker *p)
{
    close(p->fds[0]);
    close(p->fds[1]);
}

static void test_wait_asker_answers(void **state)
{
    fixture *f = *state;
    pipe_asker p = {0};
    pdk_approval_asker k = asker_of(&p);
    assert_int_equal(write(p.fds[1], "?a", 2), 2); /* a wrong key first, then always */
    pdk_approval_wait_options opts = {.timeout_seconds = 30, .asker = &k};
    pdk_approval got;
    pdk_approval_outcome how;
    pdk_error err = {0};
    assert_int_equal(pdk_approval_wait(f->store, f->id, &opts, &got, &how, &err), 0);
    assert_int_equal(how, PDK_APPROVAL_WAIT_ANSWERED);
    assert_int_equal(got.state, PDK_APPROVAL_APPROVED);
    assert_true(got.always);
    assert_string_equal(got.answered_by, "the test's pipe");
    assert_int_equal(p.begun, 1);
    assert_int_equal(p.reads, 2);
    assert_int_equal(p.ended, 1);
    assert_string_equal(p.asked, "push");
    assert_true(pdk_approval_always(f->store, "s1", "rule 1"));
    pdk_approval_clear(&got);
    pipe_close(&p);
}

/* `paddock approve` from another process, while this one waits. */
static void answer_later(const fixture *f, bool approve)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        usleep(300 * 1000);
        pdk_store *store = NULL;
        pdk_error err = {0};
        if (pdk_store_open(f->dir, false, &store, &err) < 0 ||
            pdk_approval_answer(store, f->id, approve, false, "from the child", "another process",
                                &err) < 0)
            _exit(1);
        pdk_store_close(store);
        _exit(0);
    }
}

static void reap(void)
{
    int status = 0;
    assert_true(wait(&status) > 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_wait_other_process_answers(void **state)
{
    fixture *f = *state;
    answer_later(f, false);
    pdk_approval_wait_options opts = {.timeout_seconds = 30}; /* no asker */
    pdk_approval got;
    pdk_approval_outcome how;
    pdk_error err = {0};
    assert_int_equal(pdk_approval_wait(f->store, f->id, &opts, &got, &how, &err), 0);
    reap();
    assert_int_equal(how, PDK_APPROVAL_WAIT_ANSWERED);
    assert_int_equal(got.state, PDK_APPROVAL_DENIED);
    assert_string_equal(got.answer_reason, "from the child");
    pdk_approval_clear(&got);
}

static void test_wait_timeout(void **state)
{
    fixture *f = *state;
    pipe_asker p = {0};
    pdk_approval_asker k = asker_of(&p);
    pdk_approval_wait_options opts = {
        .timeout_seconds = 0, .expire_reason = "no answer within 0s", .asker = &k};
    pdk_approval got;
    pdk_approval_outcome how;
    pdk_error err = {0};
    assert_int_equal(pdk_approval_wait(f->store, f->id, &opts, &got, &how, &err), 0);
    assert_int_equal(how, PDK_APPROVAL_WAIT_TIMED_OUT);
    assert_int_equal(got.state, PDK_APPROVAL_EXPIRED);
    assert_string_equal(got.answer_reason, "no answer within 0s");
    assert_int_equal(p.ended, 1);
    assert_int_equal(p.outcome, PDK_APPROVAL_WAIT_TIMED_OUT);
    pdk_approval_clear(&got);
    /* a late answer is refused */
    assert_int_equal(pdk_approval_answer(f->store, f->id, true, false, NULL, "late", &err), -1);
    pipe_close(&p);
}

static void test_wait_interrupted(void **state)
{
    fixture *f = *state;
    pipe_asker p = {.interrupt = true};
    pdk_approval_asker k = asker_of(&p);
    pdk_approval_wait_options opts = {.timeout_seconds = -1, .asker = &k};
    pdk_approval got;
    pdk_approval_outcome how;
    pdk_error err = {0};
    assert_int_equal(pdk_approval_wait(f->store, f->id, &opts, &got, &how, &err), 0);
    assert_int_equal(how, PDK_APPROVAL_WAIT_INTERRUPTED);
    assert_int_equal(got.state, PDK_APPROVAL_EXPIRED);
    pdk_approval_clear(&got);
    pipe_close(&p);
}

static void test_wait_answered_before(void **state)
{
    fixture *f = *state;
    pdk_error err = {0};
    assert_int_equal(pdk_approval_answer(f->store, f->id, true, false, NULL, "first", &err), 0);
    pipe_asker p = {.interrupt = true}; /* an answer that came first wins */
    pdk_approval_asker k = asker_of(&p);
    pdk_approval_wait_options opts = {.timeout_seconds = 0, .asker = &k};
    pdk_approval got;
    pdk_approval_outcome how;
    assert_int_equal(pdk_approval_wait(f->store, f->id, &opts, &got, &how, &err), 0);
    assert_int_equal(how, PDK_APPROVAL_WAIT_ANSWERED);
    assert_int_equal(got.state, PDK_APPROVAL_APPROVED);
    pdk_approval_clear(&got);
    pipe_close(&p);
}

/* ---- on a loop ---- */

typedef struct watch_seen {
    int calls;
    pdk_approval_outcome outcome;
    pdk_approval_state state;
    struct event_base *base;
} watch_seen;

static void on_done(void *arg, const pdk_approval *answer, pdk_approval_outcome outcome)
{
    watch_seen *s = arg;
    s->calls++;
    s->outcome = outcome;
    s->state = answer->state;
    event_base_loopbreak(s->base);
}

static void test_watch_answered(void **state)
{
    fixture *f = *state;
    struct event_base *base = event_base_new();
    watch_seen seen = {.base = base};
    pdk_approval_wait_options opts = {.timeout_seconds = 30};
    pdk_approval_watch *w = NULL;
    pdk_error err = {0};
    assert_int_equal(
        pdk_approval_watch_start(base, f->store, f->id, &opts, on_done, &seen, &w, &err), 0);
    answer_later(f, true);
    event_base_dispatch(base);
    reap();
    assert_int_equal(seen.calls, 1);
    assert_int_equal(seen.outcome, PDK_APPROVAL_WAIT_ANSWERED);
    assert_int_equal(seen.state, PDK_APPROVAL_APPROVED);
    event_base_free(base);
}

static void test_watch_asker_and_timeout(void **state)
{
    fixture *f = *state;
    struct event_base *base = event_base_new();
    watch_seen seen = {.base = base};
    pipe_asker p = {0};
    pdk_approval_asker k = asker_of(&p);
    assert_int_equal(write(p.fds[1], "x", 1), 1); /* read, not an answer */
    pdk_approval_wait_options opts = {.timeout_seconds = 0, .asker = &k};
    pdk_approval_watch *w = NULL;
    pdk_error err = {0};
    assert_int_equal(
        pdk_approval_watch_start(base, f->store, f->id, &opts, on_done, &seen, &w, &err), 0);
    event_base_dispatch(base);
    assert_int_equal(seen.calls, 1);
    assert_int_equal(seen.outcome, PDK_APPROVAL_WAIT_TIMED_OUT);
    assert_int_equal(seen.state, PDK_APPROVAL_EXPIRED);
    assert_int_equal(p.reads, 1);
    assert_int_equal(p.ended, 1);
    event_base_free(base);
    pipe_close(&p);
}

static void stop_loop(evutil_socket_t fd, short what, void *arg)
{
    event_base_loopbreak(arg);
}

static void test_watch_cancelled(void **state)
{
    fixture *f = *state;
    struct event_base *base = event_base_new();
    watch_seen seen = {.base = base};
    pdk_approval_wait_options opts = {.timeout_seconds = 0};
    pdk_approval_watch *w = NULL;
    pdk_error err = {0};
    assert_int_equal(
        pdk_approval_watch_start(base, f->store, f->id, &opts, on_done, &seen, &w, &err), 0);
    pdk_approval_watch_cancel(w);
    struct timeval tv = {0, 2 * PDK_APPROVAL_POLL_MS * 1000};
    struct event *stop = evtimer_new(base, stop_loop, base);
    evtimer_add(stop, &tv);
    event_base_dispatch(base);
    assert_int_equal(seen.calls, 0);
    pdk_approval a = {0};
    assert_int_equal(pdk_approval_get(f->store, f->id, &a, &err), 0);
    assert_int_equal(a.state, PDK_APPROVAL_PENDING); /* left as it was */
    pdk_approval_clear(&a);
    event_free(stop);
    event_base_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wait_asker_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_other_process_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_interrupted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_answered_before, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_answered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_asker_and_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_cancelled, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
