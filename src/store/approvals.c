/* approvals.c: see approvals.h. */
#include "approvals.h"

#include "display.h"
#include "store_sqlite.h"
#include "util.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static const char *const state_names[] = {"pending", "approved", "denied", "expired"};

const char *pdk_approval_state_name(pdk_approval_state state)
{
    return (unsigned)state < PDK_ARRAY_SIZE(state_names) ? state_names[state] : "?";
}

static pdk_approval_state parse_state(const char *s)
{
    for (size_t i = 0; s && i < PDK_ARRAY_SIZE(state_names); i++)
        if (strcmp(s, state_names[i]) == 0)
            return (pdk_approval_state)i;
    return PDK_APPROVAL_EXPIRED;
}

void pdk_approval_clear(pdk_approval *a)
{
    free(a->session);
    json_decref(a->parents);
    json_decref(a->argv);
    free(a->cwd);
    free(a->rule);
    free(a->reason);
    free(a->answered_by);
    free(a->answer_reason);
    json_decref(a->request);
    memset(a, 0, sizeof(*a));
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *pdk_approval_json(const pdk_approval *a)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(a->id));
    json_object_set_new(o, "session", str_or_null(a->session));
    json_object_set_new(o, "pid", json_integer(a->pid));
    json_object_set_new(o, "parents", a->parents ? json_incref(a->parents) : json_array());
    json_object_set_new(o, "argv", a->argv ? json_incref(a->argv) : json_array());
    json_object_set_new(o, "cwd", str_or_null(a->cwd));
    json_object_set_new(o, "rule", str_or_null(a->rule));
    json_object_set_new(o, "reason", str_or_null(a->reason));
    json_object_set_new(o, "created_ns", json_integer(a->created_ns));
    json_object_set_new(o, "state", json_string(pdk_approval_state_name(a->state)));
    json_object_set_new(o, "answered_ns",
                        a->answered_ns ? json_integer(a->answered_ns) : json_null());
    json_object_set_new(o, "answered_by", str_or_null(a->answered_by));
    json_object_set_new(o, "answer_reason", str_or_null(a->answer_reason));
    json_object_set_new(o, "always", json_boolean(a->always));
    json_object_set_new(o, "waited_seconds", json_integer(pdk_approval_waited_seconds(a)));
    json_object_set_new(o, "request", a->request ? json_incref(a->request) : json_null());
    return o;
}

int64_t pdk_approval_waited_seconds(const pdk_approval *a)
{
    int64_t until = a->state == PDK_APPROVAL_PENDING || a->answered_ns <= 0 ? pdk_now_realtime_ns()
                                                                            : a->answered_ns;
    return until > a->created_ns ? (until - a->created_ns) / 1000000000 : 0;
}

json_t *pdk_approval_parents_of(pid_t pid)
{
    json_t *chain = json_array();
    pdk_proc_stat ps;
    for (int depth = 0; depth < 16 && pid > 1 && pdk_proc_stat_read(pid, &ps); depth++) {
        /* comm is the process's own choice of bytes: kept whole when it is UTF-8 */
        json_array_append_new(chain, json_pack("{s:i, s:o}", "pid", (int)pid, "comm",
                                               pdk_display_json_string(ps.comm)));
        pid = ps.ppid;
    }
    return chain;
}

static void new_id(char out[17])
{
    unsigned char r[8] = {0};
    if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
        int64_t t = pdk_now_realtime_ns();
        memcpy(r, &t, sizeof(r));
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < 8; i++) {
        out[2 * i] = hex[r[i] >> 4];
        out[2 * i + 1] = hex[r[i] & 15];
    }
    out[16] = '\0';
}

static void bind_str(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

static void bind_json(sqlite3_stmt *st, int i, json_t *v)
{
    char *t = v ? json_dumps(v, JSON_COMPACT) : NULL; /* none: an empty list */
    sqlite3_bind_text(st, i, t ? t : "[]", -1, SQLITE_TRANSIENT);
    free(t);
}

int pdk_approval_create(pdk_store *store, pdk_approval *a, pdk_error *err)
{
    new_id(a->id);
    a->created_ns = pdk_now_realtime_ns();
    a->state = PDK_APPROVAL_PENDING;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(pdk_store_db(store),
                           "INSERT INTO approvals (id, session, pid, parents, argv, cwd, rule, "
                           "reason, created_ns, state, request) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
                           "?, 'pending', ?)",
                           -1, &st, NULL) != SQLITE_OK)
        return pdk_store_error(store, err, "recording the approval request");
    sqlite3_bind_text(st, 1, a->id, -1, SQLITE_TRANSIENT);
    bind_str(st, 2, a->session);
    sqlite3_bind_int64(st, 3, a->pid);
    bind_json(st, 4, a->parents);
    bind_json(st, 5, a->argv);
    bind_str(st, 6, a->cwd);
    bind_str(st, 7, a->rule);
    bind_str(st, 8, a->reason);
    sqlite3_bind_int64(st, 9, a->created_ns);
    if (a->request) {
        char *t = json_dumps(a->request, JSON_COMPACT | JSON_SORT_KEYS);
        sqlite3_bind_text(st, 10, t ? t : "{}", -1, SQLITE_TRANSIENT);
        free(t);
    } else {
        sqlite3_bind_null(st, 10);
    }
    int r = sqlite3_step(st);
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        return pdk_store_error(store, err, "recording the approval request");
    return 0;
}

static const char select_columns[] =
    "SELECT id, session, pid, parents, argv, cwd, rule, reason, created_ns, state, "
    "answered_ns, answered_by, answer_reason, always, request FROM approvals";

static char *col_dup(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? xstrdup((const char *)t) : NULL;
}

static json_t *col_json(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    json_error_t jerr;
    json_t *v = t ? json_loads((const char *)t, 0, &jerr) : NULL;
    return v ? v : json_array();
}

static void read_row(sqlite3_stmt *st, pdk_approval *a)
{
    memset(a, 0, sizeof(*a));
    const unsigned char *id = sqlite3_column_text(st, 0);
    snprintf(a->id, sizeof(a->id), "%s", id ? (const char *)id : "");
    a->session = col_dup(st, 1);
    a->pid = (pid_t)sqlite3_column_int64(st, 2);
    a->parents = col_json(st, 3);
    a->argv = col_json(st, 4);
    a->cwd = col_dup(st, 5);
    a->rule = col_dup(st, 6);
    a->reason = col_dup(st, 7);
    a->created_ns = sqlite3_column_int64(st, 8);
    const unsigned char *state = sqlite3_column_text(st, 9);
    a->state = parse_state((const char *)state);
    a->answered_ns = sqlite3_column_int64(st, 10);
    a->answered_by = col_dup(st, 11);
    a->answer_reason = col_dup(st, 12);
    a->always = sqlite3_column_int(st, 13) != 0;
    const unsigned char *request = sqlite3_column_text(st, 14); /* NULL: a command */
    if (request) {
        json_error_t jerr;
        a->request = json_loads((const char *)request, 0, &jerr);
    }
}

int pdk_approval_get(pdk_store *store, const char *id, pdk_approval *out, pdk_error *err)
{
    memset(out, 0, sizeof(*out));
    sqlite3_stmt *st = NULL;
    _cleanup_free_ char *sql = xasprintf("%s WHERE id = ?", select_columns);
    if (sqlite3_prepare_v2(pdk_store_db(store), sql, -1, &st, NULL) != SQLITE_OK)
        return pdk_store_error(store, err, "reading the approval requests");
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW)
        read_row(st, out);
    sqlite3_finalize(st);
    if (r == SQLITE_ROW)
        return 0;
    if (r == SQLITE_DONE)
        return pdk_error_set(err, 0, "no approval request %s (see paddock approvals)", id);
    return pdk_store_error(store, err, "reading the approval requests");
}

int pdk_approval_answer(pdk_store *store, const char *id, bool approve, bool always,
                        const char *reason, const char *by, pdk_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(pdk_store_db(store),
                           "UPDATE approvals SET state = ?, answered_ns = ?, answered_by = ?, "
                           "answer_reason = ?, always = ? WHERE id = ? AND state = 'pending'",
                           -1, &st, NULL) != SQLITE_OK)
        return pdk_store_error(store, err, "answering the approval request");
    sqlite3_bind_text(st, 1, approve ? "approved" : "denied", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, pdk_now_realtime_ns());
    bind_str(st, 3, by);
    bind_str(st, 4, reason);
    sqlite3_bind_int64(st, 5, approve && always ? 1 : 0);
    sqlite3_bind_text(st, 6, id, -1, SQLITE_TRANSIENT);
    int r = sqlite3_step(st);
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        return pdk_store_error(store, err, "answering the approval request");
    if (sqlite3_changes(pdk_store_db(store)) == 1)
        return 0;
    pdk_approval a;
    if (pdk_approval_get(store, id, &a, err) < 0)
        return -1;
    if (a.state == PDK_APPROVAL_EXPIRED)
        pdk_error_set(err, 0, "approval request %s expired already, too late to answer: %s", id,
                      a.answer_reason ? a.answer_reason : "its asker stopped waiting");
    else
        pdk_error_set(err, 0, "approval request %s was %s already%s%s", id,
                      pdk_approval_state_name(a.state), a.answered_by ? " by " : "",
                      a.answered_by ? a.answered_by : "");
    pdk_approval_clear(&a);
    return -1;
}

int pdk_approval_expire(pdk_store *store, const char *id, pdk_error *err)
{
    return pdk_approval_expire_because(store, id, NULL, err);
}

int pdk_approval_expire_because(pdk_store *store, const char *id, const char *why, pdk_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(pdk_store_db(store),
                           "UPDATE approvals SET state = 'expired', answered_ns = ?, "
                           "answer_reason = ? WHERE id = ? AND state = 'pending'",
                           -1, &st, NULL) != SQLITE_OK)
        return pdk_store_error(store, err, "expiring the approval request");
    sqlite3_bind_int64(st, 1, pdk_now_realtime_ns());
    bind_str(st, 2, why);
    sqlite3_bind_text(st, 3, id, -1, SQLITE_TRANSIENT);
    int r = sqlite3_step(st);
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        return pdk_store_error(store, err, "expiring the approval request");
    return sqlite3_changes(pdk_store_db(store)) == 1 ? 1 : 0;
}

int pdk_approval_each(pdk_store *store, bool pending_only,
                      int (*fn)(const pdk_approval *approval, void *arg), void *arg, pdk_error *err)
{
    sqlite3_stmt *st = NULL;
    _cleanup_free_ char *sql = xasprintf("%s%s ORDER BY created_ns, id", select_columns,
                                         pending_only ? " WHERE state = 'pending'" : "");
    if (sqlite3_prepare_v2(pdk_store_db(store), sql, -1, &st, NULL) != SQLITE_OK)
        return pdk_store_error(store, err, "reading the approval requests");
    int r, ret = 0;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        pdk_approval a;
        read_row(st, &a);
        ret = fn(&a, arg);
        pdk_approval_clear(&a);
        if (ret != 0)
            break;
    }
    sqlite3_finalize(st);
    if (r != SQLITE_ROW && r != SQLITE_DONE)
        return pdk_store_error(store, err, "reading the approval requests");
    return ret;
}

bool pdk_approval_always(pdk_store *store, const char *session, const char *rule)
{
    if (!session || !rule)
        return false;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(pdk_store_db(store),
                           "SELECT 1 FROM approvals WHERE session = ? AND rule = ? AND state = "
                           "'approved' AND always = 1 LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(st, 1, session, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, rule, -1, SQLITE_TRANSIENT);
    bool found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

/* ---- waiting for the answer ---- */

static uint64_t deadline_of(const pdk_approval_wait_options *opts)
{
    if (opts->timeout_seconds < 0)
        return 0;
    return pdk_now_monotonic_ns() + (uint64_t)opts->timeout_seconds * 1000000000ULL;
}

/* One look at the request: 1 when the wait is over (*outcome, *answer filled), 0 to go on
 * (*answer empty), -1 with err. */
static int wait_turn(pdk_store *store, const char *id, const char *expire_reason,
                     uint64_t deadline_ns, bool interrupted, pdk_approval *answer,
                     pdk_approval_outcome *outcome, pdk_error *err)
{
    for (;;) {
        if (pdk_approval_get(store, id, answer, err) < 0)
            return -1;
        if (answer->state != PDK_APPROVAL_PENDING) {
            *outcome = PDK_APPROVAL_WAIT_ANSWERED; /* (or expired by another process) */
            return 1;
        }
        pdk_approval_clear(answer);
        bool late = deadline_ns && pdk_now_monotonic_ns() >= deadline_ns;
        if (!interrupted && !late)
            return 0;
        int e = interrupted ? pdk_approval_expire(store, id, err)
                            : pdk_approval_expire_because(store, id, expire_reason, err);
        if (e < 0)
            return -1;
        if (e == 0)
            continue; /* an answer came in the meantime */
        if (pdk_approval_get(store, id, answer, err) < 0)
            return -1;
        *outcome = interrupted ? PDK_APPROVAL_WAIT_INTERRUPTED : PDK_APPROVAL_WAIT_TIMED_OUT;
        return 1;
    }
}

static bool asker_interrupted(const pdk_approval_asker *k)
{
    return k && k->interrupted && k->interrupted(k->arg);
}

/* The asker's answer, given like any other (the first answer wins). */
static void asker_answer(pdk_store *store, const char *id, const pdk_approval_reply *reply)
{
    pdk_error ignored = {0};
    (void)pdk_approval_answer(store, id, reply->approve, reply->always, NULL,
                              reply->by[0] ? reply->by : NULL, &ignored);
}

static int asker_begin(pdk_store *store, const char *id, const pdk_approval_asker *k,
                       pdk_error *err)
{
    if (!k || !k->begin)
        return -1;
    pdk_approval request = {0};
    if (pdk_approval_get(store, id, &request, err) < 0)
        return -2;
    int fd = k->begin(k->arg, &request);
    pdk_approval_clear(&request);
    return fd;
}

int pdk_approval_wait(pdk_store *store, const char *id, const pdk_approval_wait_options *opts,
                      pdk_approval *answer, pdk_approval_outcome *outcome, pdk_error *err)
{
    memset(answer, 0, sizeof(*answer));
    *outcome = PDK_APPROVAL_WAIT_ANSWERED;
    const pdk_approval_asker *k = opts->asker;
    uint64_t deadline = deadline_of(opts);
    int fd = asker_begin(store, id, k, err);
    if (fd == -2)
        return -1;
    int ret;
    for (;;) {
        int r = wait_turn(store, id, opts->expire_reason, deadline, asker_interrupted(k), answer,
                          outcome, err);
        if (r != 0) {
            ret = r < 0 ? -1 : 0;
            break;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int n = poll(&pfd, fd >= 0 ? 1 : 0, PDK_APPROVAL_POLL_MS);
        if (n > 0 && (pfd.revents & POLLIN)) {
            pdk_approval_reply reply = {0};
            int got = k->read(k->arg, fd, &reply);
            if (got > 0)
                asker_answer(store, id, &reply);
            else if (got < 0)
                fd = -1;
        } else if (n > 0 && (pfd.revents & (POLLHUP | POLLERR | POLLNVAL))) {
            fd = -1;
        }
    }
    if (k && k->end)
        k->end(k->arg, *outcome, ret == 0 ? answer : NULL);
    return ret;
}

struct pdk_approval_watch {
    pdk_store *store;
    char id[17];
    char *expire_reason;
    const pdk_approval_asker *asker;
    uint64_t deadline_ns;
    struct event *timer;
    struct event *input; /* the asker's fd, when it has one */
    pdk_approval_done_fn done;
    void *arg;
};

static void watch_free(pdk_approval_watch *w)
{
    if (w->timer)
        event_free(w->timer);
    if (w->input)
        event_free(w->input);
    free(w->expire_reason);
    free(w);
}

void pdk_approval_watch_cancel(pdk_approval_watch *w)
{
    if (!w)
        return;
    if (w->asker && w->asker->end)
        w->asker->end(w->asker->arg, PDK_APPROVAL_WAIT_INTERRUPTED, NULL);
    watch_free(w);
}

static void watch_tick(evutil_socket_t fd, short what, void *arg)
{
    pdk_approval_watch *w = arg;
    pdk_approval answer = {0};
    pdk_approval_outcome outcome = PDK_APPROVAL_WAIT_ANSWERED;
    pdk_error err = {0};
    /* An error reading the store: tried again at the next turn. */
    if (wait_turn(w->store, w->id, w->expire_reason, w->deadline_ns, asker_interrupted(w->asker),
                  &answer, &outcome, &err) == 1) {
        const pdk_approval_asker *k = w->asker;
        if (k && k->end)
            k->end(k->arg, outcome, &answer);
        w->done(w->arg, &answer, outcome);
        pdk_approval_clear(&answer);
        watch_free(w);
        return;
    }
    pdk_approval_clear(&answer);
    struct timeval tv = {0, PDK_APPROVAL_POLL_MS * 1000};
    evtimer_add(w->timer, &tv);
}

static void watch_input(evutil_socket_t fd, short what, void *arg)
{
    pdk_approval_watch *w = arg;
    pdk_approval_reply reply = {0};
    int got = w->asker->read(w->asker->arg, (int)fd, &reply);
    if (got < 0) {
        event_free(w->input);
        w->input = NULL;
    } else if (got > 0) {
        asker_answer(w->store, w->id, &reply);
        event_active(w->timer, EV_TIMEOUT, 0); /* read at once */
    }
}

int pdk_approval_watch_start(struct event_base *base, pdk_store *store, const char *id,
                             const pdk_approval_wait_options *opts, pdk_approval_done_fn done,
                             void *arg, pdk_approval_watch **out, pdk_error *err)
{
    *out = NULL;
    pdk_approval_watch *w = xcalloc(1, sizeof(*w));
    w->store = store;
    snprintf(w->id, sizeof(w->id), "%s", id);
    w->expire_reason = opts->expire_reason ? xstrdup(opts->expire_reason) : NULL;
    w->asker = opts->asker;
    w->deadline_ns = deadline_of(opts);
    w->done = done;
    w->arg = arg;
    w->timer = evtimer_new(base, watch_tick, w);
    if (!w->timer) {
        watch_free(w);
        return pdk_error_set(err, ENOMEM, "cannot wait for approval %s", id);
    }
    int fd = asker_begin(store, id, w->asker, err);
    if (fd == -2) {
        watch_free(w);
        return -1;
    }
    if (fd >= 0) {
        w->input = event_new(base, fd, EV_READ | EV_PERSIST, watch_input, w);
        if (!w->input || event_add(w->input, NULL) < 0) {
            if (w->asker->end)
                w->asker->end(w->asker->arg, PDK_APPROVAL_WAIT_INTERRUPTED, NULL);
            watch_free(w);
            return pdk_error_set(err, ENOMEM, "cannot wait for approval %s", id);
        }
    }
    struct timeval tv = {0, PDK_APPROVAL_POLL_MS * 1000};
    evtimer_add(w->timer, &tv);
    *out = w;
    return 0;
}
