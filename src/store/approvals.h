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

#endif
