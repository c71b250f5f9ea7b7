/* approvals.h: requests for a human's decision (`ask`), as rows of the state store's
 * approvals table, so that any process can answer them: `paddock approve ID`, `paddock
 * deny ID`, or the terminal prompt of the paddock that asks.
 *
 * A request is pending until it is answered (approved or denied, by whom and how) or
 * expires (its asker gave up waiting). Answering is a compare-and-set on the pending state:
 * of two answers, the first wins and the second gets an error saying so.
 */
#ifndef PADDOCK_APPROVALS_H
#define PADDOCK_APPROVALS_H

#include "store.h"

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum pdk_approval_state {
    PDK_APPROVAL_PENDING,
    PDK_APPROVAL_APPROVED,
    PDK_APPROVAL_DENIED,
    PDK_APPROVAL_EXPIRED,
} pdk_approval_state;

const char *pdk_approval_state_name(pdk_approval_state state);

typedef struct pdk_approval {
    char id[17];
    char *session; /* may be NULL */
    pid_t pid;
    json_t *parents; /* [{pid, comm}], the asker's parent chain */
    json_t *argv;    /* [words] */
    char *cwd;
    char *rule; /* how the rule reads ("rule 1 (line 5: [git, push] ask)") */
    char *reason;
    int64_t created_ns;
    pdk_approval_state state;
    int64_t answered_ns;
    char *answered_by; /* "uid 1000 (alice) via paddock approve", "the terminal of pid 42" */
    char *answer_reason;
    bool always;
    /* A network request held at the gateway (argv empty then): {method, url (query values
     * redacted), host, port, headers: [names], wait_limit_seconds, and when it has a body:
     * body_bytes (held), body_announced (Content-Length; null: chunked), body_complete,
     * body_preview (bounded, escaped, redacted), body_sha256 (of what is held), body_note
     * (what was not received or not shown)}; NULL for a command. */
    json_t *request;
} pdk_approval;

void pdk_approval_clear(pdk_approval *approval);
json_t *pdk_approval_json(const pdk_approval *approval);

/* The parent chain of pid, nearest first, as [{pid, comm}] (up to 16, stopping at 1). */
json_t *pdk_approval_parents_of(pid_t pid);

/* Record a pending request; request->id gets a new id. Steals nothing. */
int pdk_approval_create(pdk_store *store, pdk_approval *request, pdk_error *err);

/* Read request id. 0, or -1 with err ("no approval request ID"). */
int pdk_approval_get(pdk_store *store, const char *id, pdk_approval *out, pdk_error *err);

/* Answer a pending request: approve (always: for the rest of that session) or deny, with an
 * optional reason; by says who and how. Fails when the request does not exist or was
 * answered already (naming how). */
int pdk_approval_answer(pdk_store *store, const char *id, bool approve, bool always,
                        const char *reason, const char *by, pdk_error *err);

/* The asker gave up (timeout): pending -> expired. 1 when it expired it, 0 when an answer
 * came first (read it with pdk_approval_get), -1 on error. */
int pdk_approval_expire(pdk_store *store, const char *id, pdk_error *err);
/* The same, with why (kept as the answer's reason: a late answer is told it). */
int pdk_approval_expire_because(pdk_store *store, const char *id, const char *why, pdk_error *err);

/* How long the request waited: until now while pending, else until its answer (or
 * expiry). Whole seconds. */
int64_t pdk_approval_waited_seconds(const pdk_approval *approval);

/* Every request (pending_only: only the pending ones), oldest first. */
int pdk_approval_each(pdk_store *store, bool pending_only,
                      int (*fn)(const pdk_approval *approval, void *arg), void *arg,
                      pdk_error *err);

/* Whether session has an "always" approval for the rule described by rule. */
bool pdk_approval_always(pdk_store *store, const char *session, const char *rule);

/* ---- waiting for the answer ----
 *
 * One way to wait, for a command asked about before it starts, an exec held inside the
 * sandbox and a request held at the gateway: the request is read from the store until it
 * is answered (by any process: paddock approve, a web page, the asker below), or its
 * deadline passes or the front end gives up, when the waiter expires it itself. Expiring
 * is a compare-and-set like answering: an answer that came first wins, and the wait ends
 * answered. What a timeout means (approvals.on_timeout), and an "always" answer given
 * before (pdk_approval_always), are the caller's: it decides before it asks and after the
 * wait. The store is read every PDK_APPROVAL_POLL_MS.
 *
 * How a human at the front end is asked is the front end's: the CLI's terminal prompt is
 * one asker (src/cli/prompt.c); a front end with nobody at hand passes none, and only
 * other processes answer. */
#define PDK_APPROVAL_POLL_MS 200

typedef enum pdk_approval_outcome {
    PDK_APPROVAL_WAIT_ANSWERED = 0,    /* approved or denied: the answer's state says which */
    PDK_APPROVAL_WAIT_TIMED_OUT = 1,   /* no answer by the deadline: expired */
    PDK_APPROVAL_WAIT_INTERRUPTED = 2, /* the front end gave up (a SIGINT): expired */
} pdk_approval_outcome;

/* An answer the asker got from its human. */
typedef struct pdk_approval_reply {
    bool approve;
    bool always;  /* for the rest of the session */
    char by[256]; /* who and how ("the terminal of paddock pid 42 (uid 1000)") */
} pdk_approval_reply;

typedef struct pdk_approval_asker {
    /* The wait begins (the request is recorded): start asking. Returns an fd the waiter
     * watches for the human's input (the asker owns it), or -1 when there is none. */
    int (*begin)(void *arg, const pdk_approval *request);
    /* That fd is readable: 1 with *reply filled (given to pdk_approval_answer: the first
     * answer wins), 0 when it holds no answer yet, -1 when it is gone (not watched any
     * more). */
    int (*read)(void *arg, int fd, pdk_approval_reply *reply);
    /* Whether the human gave up waiting (interrupted: SIGINT or SIGTERM while waiting),
     * asked at every turn; NULL: never. */
    bool (*interrupted)(void *arg);
    /* The wait is over (how; the answer's state when answered): end what begin started. */
    void (*end)(void *arg, pdk_approval_outcome outcome, const pdk_approval *answer);
    void *arg;
} pdk_approval_asker;

typedef struct pdk_approval_wait_options {
    int64_t timeout_seconds;         /* from the start of the wait; < 0: none */
    const char *expire_reason;       /* kept as the answer's reason of an expiry at the
                                      * deadline (a late answer is told it); may be NULL */
    const pdk_approval_asker *asker; /* NULL: only other processes answer */
} pdk_approval_wait_options;

/* Wait for request id (pending, created with pdk_approval_create): blocks. On 0, *outcome
 * says how it ended and *answer holds the request as it ended (approved, denied, or
 * expired by this wait; clear it with pdk_approval_clear). -1 with err when the store
 * cannot be read (the request may still be pending then). */
int pdk_approval_wait(pdk_store *store, const char *id, const pdk_approval_wait_options *opts,
                      pdk_approval *answer, pdk_approval_outcome *outcome, pdk_error *err);

/* The same without blocking, on a libevent loop (the supervisor's, the gateway's): done is
 * called once, on the loop, with the request as it ended; the watch is freed after it
 * returns. Returns 0 with *out, or -1 with err (done never fires then). Cancelling a watch
 * whose done has not fired means it never fires (the asker's end is called, without an
 * answer; the request stays as it is: expire it
 * with pdk_approval_expire when nobody waits for it any more). The store must outlive the
 * watch; opts are copied. */
struct event_base;
typedef struct pdk_approval_watch pdk_approval_watch;
typedef void (*pdk_approval_done_fn)(void *arg, const pdk_approval *answer,
                                     pdk_approval_outcome outcome);
int pdk_approval_watch_start(struct event_base *base, pdk_store *store, const char *id,
                             const pdk_approval_wait_options *opts, pdk_approval_done_fn done,
                             void *arg, pdk_approval_watch **out, pdk_error *err);
void pdk_approval_watch_cancel(pdk_approval_watch *watch);

#endif
