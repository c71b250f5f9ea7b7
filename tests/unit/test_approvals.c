/* test_approvals.c: requests for a human (approvals.c) in a real store. A request is
 * recorded pending with a fresh id and read back whole (argv, parents, a held request's
 * JSON); answering is a compare-and-set: the first answer wins, the second is told by whom
 * it was answered, and an expired request is too late whatever comes; "always" holds for
 * that session and rule only, and only when approved; listing is oldest first and may stop
 * early; an unknown id is named in the error; a parent chain is read from /proc. */
#include "approvals.h"
#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct fixture {
    char dir[64];
    pdk_store *store;
} fixture;

static int setup(void **state)
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

static int teardown(void **state)
{
    fixture *f = *state;
    pdk_store_close(f->store);
    pdk_rm_rf_at(AT_FDCWD, f->dir);
    free(f);
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
        cmocka_unit_test_setup_teardown(t_create_and_get, setup, teardown),
        cmocka_unit_test_setup_teardown(t_first_answer_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(t_expired_is_too_late, setup, teardown),
        cmocka_unit_test_setup_teardown(t_always, setup, teardown),
        cmocka_unit_test_setup_teardown(t_each, setup, teardown),
        cmocka_unit_test(t_waited_and_parents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
