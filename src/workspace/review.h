/* review.h: reviewing a session's changes: diff, commit, discard.
 *
 * The workflows every front end calls (the CLI's paddock diff, commit and discard are thin
 * calls of these). Each records what it is about to do in the audit log (an event written
 * through a spool of its own and fdatasync'ed, audit.h) before it acts, as pdk_run does,
 * and does not act when that record cannot be written:
 *   pdk_review_diff      "workspace.diff"      {changes, summary: [{path, status}]}
 *   pdk_review_commit    "workspace.commit"    {workspace, paths, include_protected} before,
 *                        "workspace.committed" {ok, applied: [{path, status}],
 *                                               refused: [{path, reason}]} after
 *                        (neither in a dry run)
 *   pdk_review_discard   "workspace.discard"   {workspace, runs, damaged}
 * Paths in events and results are the sandbox's choice: shown with pdk_display() (or as
 * pdk_session_json_path writes them) by whoever prints them.
 *
 * Nothing here prints. Errors: < 0 and err filled with a one-line message; results are
 * always initialised and freed with their _free function, whatever the return.
 * Not thread-safe per session: a commit takes the session's lock (a running session holds
 * it, and the commit is refused naming its pid).
 */
#ifndef PADDOCK_REVIEW_H
#define PADDOCK_REVIEW_H

#include "commit.h"
#include "error.h"
#include "util.h"

#include <jansson.h>

/* ---- diff ---- */

typedef enum pdk_review_diff_format {
    PDK_REVIEW_DIFF_PATCH = 0, /* git's extended unified diff (diffrender.h) */
    PDK_REVIEW_DIFF_STAT = 1,  /* git diff --stat */
    PDK_REVIEW_DIFF_JSON = 2,  /* the JSON document of pdk_diffrender_json */
} pdk_review_diff_format;

typedef struct pdk_review_diff_options {
    pdk_review_diff_format format;
    char *const *paths; /* NULL: every change; else workspace-relative paths (a directory
                         * selects everything beneath it) */
    bool raw;           /* the patch with the session's bytes as they are (for git apply,
                         * never for a terminal: the caller checks) */
} pdk_review_diff_options;

typedef struct pdk_review_diff_result {
    pdk_buf text;         /* PATCH and STAT: the text (empty when there is no change) */
    json_t *json;         /* JSON: the document (owned) */
    size_t changes;       /* changes the scan found (all of them, whatever paths select) */
    size_t escaped_lines; /* PATCH without raw: lines shown escaped after a '!' */
} pdk_review_diff_result;

/* The session's changes against the real workspace, rendered; "workspace.diff" recorded
 * first. 0, or -1 with err (no such session, its layers unreadable, the record not written:
 * then nothing is rendered). */
int pdk_review_diff(const char *state_dir, const char *session_id,
                    const pdk_review_diff_options *opts, pdk_review_diff_result *out,
                    pdk_error *err);
void pdk_review_diff_result_free(pdk_review_diff_result *result);

/* ---- commit ---- */

typedef struct pdk_review_commit_options {
    char *const *paths;     /* NULL: everything; else the changes to commit */
    bool include_protected; /* commit protected paths too (commit.h) */
    bool dry_run;           /* check and report, write nothing, record nothing */
} pdk_review_commit_options;

typedef struct pdk_review_commit_result {
    char *session;            /* the session's id */
    char *workspace;          /* the real workspace's path */
    pdk_commit_result commit; /* applied and refused (commit.h) */
    bool ok;                  /* every selected change was applied (would be, dry run) */
    pdk_error error;          /* when !ok: why (names every refused path) */
    /* Problems after the commit, which do not undo it: the "workspace.committed" record
     * not written; what was written not recorded in the session (then the next commit may
     * take its own writes for outside changes: the call returns -1). Empty messages when
     * none. */
    pdk_error record_error;
    pdk_error save_error;
} pdk_review_commit_result;

/* Apply the session's reviewed changes to the real workspace (commit.h has the rules) and
 * record in the session what was written, even when the commit stopped half-way.
 * Returns 0 when the commit was done (ok) and recorded; -1 otherwise: with result->session
 * NULL when it did not start (err: no such session, busy, its layers, the
 * "workspace.commit" record), else after it (result->error or result->save_error say why,
 * and err is a copy of the first of them). */
int pdk_review_commit(const char *state_dir, const char *session_id,
                      const pdk_review_commit_options *opts, pdk_review_commit_result *out,
                      pdk_error *err);
void pdk_review_commit_result_free(pdk_review_commit_result *result);

/* ---- discard ---- */

typedef struct pdk_review_discard_result {
    char *session; /* the id discarded */
    bool damaged;  /* its session.json was missing or unreadable (a run killed as it
                    * started): removed all the same */
} pdk_review_discard_result;

/* Throw the session's changes away and remove it (the real workspace is not touched);
 * "workspace.discard" recorded first. A session in use by a run is refused. 0, or -1 with
 * err. */
int pdk_review_discard(const char *state_dir, const char *session_id,
                       pdk_review_discard_result *out, pdk_error *err);
void pdk_review_discard_result_free(pdk_review_discard_result *result);

#endif
