/* test_approvals.c: requests for a human (approvals.c). A request is recorded pending with
 * a fresh id and read back whole (argv, parents, a held request's JSON); answering is a
 * compare-and-set: the first answer wins, the second is told by whom it was answered, and
 * an expired request is too late whatever comes; "always" holds for that session and rule
 * only, and only when approved; listing is oldest first and may stop early; an unknown id
 * is named in the error; a parent chain is read from /proc. Waiting for an approval:
 * blocking with an asker (its fd answered, an answer from another process, the deadline,
 * an interruption) and watched on a libevent loop (answered from another process, timed
 * out, cancelled). */
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

/* ---- the requests themselves ---- */

/* A store with no request in it (the tests of requests themselves). */
static int setup_empty(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/paddock-approvals-test.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    pdk_error err = {0};
    if (pdk_store_open(f->dir, true, &f->store, &err) < 0) {
        print_message("# %s\n", err.message);
        return -1;
    }
    *state = f;
    return 0;
}

static void make(fixture *f, pdk_approval *a, const char *session, const char *rule)
{
    memset(a, 0, sizeof(*a));
    a->session = session ? xstrdup(session) : NULL;
    a->pid = 4242;
    a->argv = json_pack("[sss]", "git", "push", "--force");
    a->parents = json_pack("[{s:i,s:s}]", "pid", 1, "comm", "sh");
    a->cwd = xstrdup("/ws");
    a->rule = rule ? xstrdup(rule) : NULL;
    a->reason = xstrdup("pushes need a human");
    pdk_error err = {0};
    assert_int_equal(pdk_approval_create(f->store, a, &err), 0);
}

static void t_create_and_get(void **state)
{
    fixture *f = *state;
    pdk_approval a, b;
    make(f, &a, "fix", "rule 1");
    make(f, &b, "fix", "rule 1");
    assert_int_equal(strlen(a.id), 16);
    assert_string_not_equal(a.id, b.id);
    assert_int_equal(a.state, PDK_APPROVAL_PENDING);
    pdk_approval got;
    pdk_error err = {0};
    assert_int_equal(pdk_approval_get(f->store, a.id, &got, &err), 0);
    assert_string_equal(got.id, a.id);
    assert_string_equal(got.session, "fix");
    assert_int_equal(got.pid, 4242);
    assert_true(json_equal(got.argv, a.argv));
    assert_true(json_equal(got.parents, a.parents));
    assert_string_equal(got.cwd, "/ws");
    assert_string_equal(got.reason, "pushes need a human");
    assert_int_equal(got.state, PDK_APPROVAL_PENDING);
    assert_null(got.answered_by);
    assert_null(got.request); /* a command, not a request */
    assert_true(got.created_ns == a.created_ns);
    json_t *j = pdk_approval_json(&got);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "pending");
    assert_true(json_is_null(json_object_get(j, "answered_by")));
    assert_true(json_is_null(json_object_get(j, "request")));
    json_decref(j);
    pdk_approval_clear(&got);
    /* an unknown id: named */
    assert_int_equal(pdk_approval_get(f->store, "0000000000000000", &got, &err), -1);
    assert_non_null(strstr(err.message, "no approval request 0000000000000000"));
    /* a held network request keeps its JSON */
    pdk_approval r = {0};
    r.session = xstrdup("net");
    r.request = json_pack("{s:s,s:s,s:i}", "method", "POST", "host", "api.example", "port", 443);
    assert_int_equal(pdk_approval_create(f->store, &r, &err), 0);
    assert_int_equal(pdk_approval_get(f->store, r.id, &got, &err), 0);
    assert_true(json_equal(got.request, r.request));
    assert_int_equal(json_array_size(got.argv), 0);
    pdk_approval_clear(&got);
    pdk_approval_clear(&r);
    pdk_approval_clear(&a);
    pdk_approval_clear(&b);
}

static void t_first_answer_wins(void **state)
{
    fixture *f = *state;
    pdk_approval a;
    make(f, &a, "fix", "rule 1");
    pdk_error err = {0};
    assert_int_equal(pdk_approval_answer(f->store, a.id, true, false, "ok",
                                         "uid 1000 via paddock approve", &err),
                     0);
    /* the second is told who answered */
    assert_int_equal(pdk_approval_answer(f->store, a.id, false, false, NULL, "the terminal", &err),
                     -1);
    assert_non_null(strstr(err.message, "was approved already by uid 1000 via paddock approve"));
    pdk_approval got;
    assert_int_equal(pdk_approval_get(f->store, a.id, &got, &err), 0);
    assert_int_equal(got.state, PDK_APPROVAL_APPROVED);
    assert_string_equal(got.answer_reason, "ok");
    assert_true(got.answered_ns >= got.created_ns);
    /* an answered request does not expire */
    assert_int_equal(pdk_approval_expire(f->store, a.id, &err), 0);
    pdk_approval_clear(&got);
    /* an unknown id cannot be answered */
    assert_int_equal(
        pdk_approval_answer(f->store, "ffffffffffffffff", true, false, NULL, "x", &err), -1);
    assert_non_null(strstr(err.message, "no approval request ffffffffffffffff"));
    pdk_approval_clear(&a);
}

static void t_expired_is_too_late(void **state)
{
    fixture *f = *state;
    pdk_approval a, b;
    make(f, &a, "fix", "rule 1");
    make(f, &b, "fix", "rule 1");
    pdk_error err = {0};
    assert_int_equal(pdk_approval_expire(f->store, a.id, &err), 1);
    assert_int_equal(pdk_approval_answer(f->store, a.id, true, false, NULL, "late", &err), -1);
    assert_non_null(strstr(err.message, "expired already, too late to answer"));
    assert_int_equal(pdk_approval_expire_because(f->store, b.id, "the run ended", &err), 1);
    assert_int_equal(pdk_approval_answer(f->store, b.id, false, false, NULL, "late", &err), -1);
    assert_non_null(strstr(err.message, "too late to answer: the run ended"));
    /* expiring twice: the second finds it expired already */
    assert_int_equal(pdk_approval_expire(f->store, b.id, &err), 0);
    pdk_approval got;
    assert_int_equal(pdk_approval_get(f->store, b.id, &got, &err), 0);
    assert_int_equal(got.state, PDK_APPROVAL_EXPIRED);
    assert_string_equal(pdk_approval_state_name(got.state), "expired");
    pdk_approval_clear(&got);
    pdk_approval_clear(&a);
    pdk_approval_clear(&b);
}

static void t_always(void **state)
{
    fixture *f = *state;
    pdk_approval a, b, c;
    make(f, &a, "fix", "rule 1");
    make(f, &b, "fix", "rule 2");
    make(f, &c, NULL, "rule 3");
    pdk_error err = {0};
    assert_false(pdk_approval_always(f->store, "fix", "rule 1"));
    assert_int_equal(pdk_approval_answer(f->store, a.id, true, true, NULL, "me", &err), 0);
    assert_true(pdk_approval_always(f->store, "fix", "rule 1"));
    /* another session, another rule: no */
    assert_false(pdk_approval_always(f->store, "other", "rule 1"));
    assert_false(pdk_approval_always(f->store, "fix", "rule 2"));
    /* a denial is never "always" */
    assert_int_equal(pdk_approval_answer(f->store, b.id, false, true, NULL, "me", &err), 0);
    assert_false(pdk_approval_always(f->store, "fix", "rule 2"));
    pdk_approval got;
    assert_int_equal(pdk_approval_get(f->store, b.id, &got, &err), 0);
    assert_false(got.always);
    pdk_approval_clear(&got);
    /* without a session there is nothing to remember it for */
    assert_int_equal(pdk_approval_answer(f->store, c.id, true, true, NULL, "me", &err), 0);
    assert_false(pdk_approval_always(f->store, NULL, "rule 3"));
    assert_false(pdk_approval_always(f->store, "fix", NULL));
    pdk_approval_clear(&a);
    pdk_approval_clear(&b);
    pdk_approval_clear(&c);
}

typedef struct listing {
    int count, stop_after;
    char ids[8][17];
} listing;

static int each(const pdk_approval *a, void *arg)
{
    listing *l = arg;
    if (l->count < 8)
        memcpy(l->ids[l->count], a->id, 17);
    l->count++;
    return l->stop_after && l->count >= l->stop_after ? 7 : 0;
}

static void t_each(void **state)
{
    fixture *f = *state;
    pdk_approval a[3];
    for (int i = 0; i < 3; i++)
        make(f, &a[i], "fix", "rule");
    pdk_error err = {0};
    assert_int_equal(pdk_approval_answer(f->store, a[1].id, false, false, NULL, "me", &err), 0);
    listing all = {0}, pending = {0}, stopped = {.stop_after = 2};
    assert_int_equal(pdk_approval_each(f->store, false, each, &all, &err), 0);
    assert_int_equal(all.count, 3);
    for (int i = 0; i < 3; i++)
        assert_string_equal(all.ids[i], a[i].id); /* oldest first */
    assert_int_equal(pdk_approval_each(f->store, true, each, &pending, &err), 0);
    assert_int_equal(pending.count, 2);
    assert_string_equal(pending.ids[0], a[0].id);
    assert_string_equal(pending.ids[1], a[2].id);
    /* the callback's non-zero stops the listing and is returned */
    assert_int_equal(pdk_approval_each(f->store, false, each, &stopped, &err), 7);
    assert_int_equal(stopped.count, 2);
    for (int i = 0; i < 3; i++)
        pdk_approval_clear(&a[i]);
}

static void t_waited_and_parents(void **state)
{
    (void)state;
    pdk_approval a = {0};
    a.state = PDK_APPROVAL_DENIED;
    a.created_ns = INT64_C(1000) * 1000000000;
    a.answered_ns = INT64_C(1090) * 1000000000 + 999999999;
    assert_int_equal(pdk_approval_waited_seconds(&a), 90);
    /* pending: until now */
    a.state = PDK_APPROVAL_PENDING;
    a.created_ns = pdk_now_realtime_ns() - INT64_C(5) * 1000000000;
    int64_t w = pdk_approval_waited_seconds(&a);
    assert_true(w >= 5 && w < 60);
    /* a clock that went back: never negative */
    a.created_ns = pdk_now_realtime_ns() + INT64_C(100) * 1000000000;
    assert_int_equal(pdk_approval_waited_seconds(&a), 0);

    json_t *chain = pdk_approval_parents_of(getpid());
    assert_true(json_array_size(chain) >= 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(chain, 0), "pid")),
                     getpid());
    assert_true(json_array_size(chain) <= 16);
    /* each one's parent follows it */
    if (json_array_size(chain) >= 2)
        assert_int_equal(json_integer_value(json_object_get(json_array_get(chain, 1), "pid")),
                         getppid());
    json_decref(chain);
    chain = pdk_approval_parents_of(1);
    assert_int_equal(json_array_size(chain), 0);
    json_decref(chain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(t_create_and_get, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(t_first_answer_wins, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(t_expired_is_too_late, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(t_always, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(t_each, setup_empty, teardown),
        cmocka_unit_test(t_waited_and_parents),
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
