/* review.c: see review.h. */
#include "review.h"

#include "audit.h"
#include "changes.h"
#include "diffrender.h"
#include "display.h"
#include "session.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- diff ---- */

void pdk_review_diff_result_free(pdk_review_diff_result *r)
{
    pdk_buf_free(&r->text);
    json_decref(r->json);
    memset(r, 0, sizeof(*r));
}

int pdk_review_diff(const char *state_dir, const char *session_id,
                    const pdk_review_diff_options *opts, pdk_review_diff_result *out,
                    pdk_error *err)
{
    memset(out, 0, sizeof(*out));
    _cleanup_(pdk_session_freep) pdk_session *session = NULL;
    if (pdk_session_open(state_dir, session_id, &session, err) < 0)
        return -1;
    _cleanup_close_ int lower = -1;
    _cleanup_close_ int upper = -1;
    if (pdk_session_open_layers(session, &lower, &upper, err) < 0)
        return -1;
    pdk_change_list changes = {0};
    if (pdk_changes_scan(lower, upper, session->placeholders, &changes, err) < 0)
        return pdk_error_prefix(err, "session %s", session->id);
    json_t *summary = json_array();
    for (size_t i = 0; i < changes.count; i++)
        json_array_append_new(
            summary, json_pack("{s:o, s:s}", "path", pdk_session_json_path(changes.items[i].path),
                               "status", pdk_change_status_name(changes.items[i].status)));
    out->changes = changes.count;
    int ret = pdk_audit_record(
        state_dir, session->id, "workspace.diff",
        json_pack("{s:I, s:o}", "changes", (json_int_t)changes.count, "summary", summary), err);
    if (ret == 0) {
        pdk_diffrender_options render = {.context = -1,
                                         .paths = opts->paths,
                                         .raw = opts->raw,
                                         .escaped_lines = &out->escaped_lines};
        switch (opts->format) {
        case PDK_REVIEW_DIFF_JSON:
            ret = pdk_diffrender_json(&changes, lower, upper, &render, &out->json, err);
            break;
        case PDK_REVIEW_DIFF_STAT:
            ret = pdk_diffrender_stat(&changes, lower, upper, &render, &out->text, err);
            break;
        case PDK_REVIEW_DIFF_PATCH:
        default:
            ret = pdk_diffrender_patch(&changes, lower, upper, &render, &out->text, err);
            break;
        }
    }
    pdk_change_list_free(&changes);
    if (ret < 0) {
        size_t n = out->changes;
        pdk_review_diff_result_free(out);
        out->changes = n;
        return -1;
    }
    return 0;
}

/* ---- commit ---- */

void pdk_review_commit_result_free(pdk_review_commit_result *r)
{
    free(r->session);
    free(r->workspace);
    pdk_commit_result_free(&r->commit);
    memset(r, 0, sizeof(*r));
}

static json_t *paths_json(char *const *paths)
{
    json_t *a = json_array();
    for (size_t i = 0; paths && paths[i]; i++)
        json_array_append_new(a, pdk_session_json_path(paths[i]));
    return a;
}

/* "workspace.committed": what was applied and refused. */
static json_t *committed_event(const pdk_commit_result *res, bool ok)
{
    json_t *applied = json_array(), *refused = json_array();
    for (size_t i = 0; i < res->applied_count; i++)
        json_array_append_new(
            applied, json_pack("{s:o, s:s}", "path", pdk_session_json_path(res->applied[i].path),
                               "status", pdk_change_status_name(res->applied[i].status)));
    for (size_t i = 0; i < res->refused_count; i++)
        json_array_append_new(
            refused, json_pack("{s:o, s:o}", "path", pdk_session_json_path(res->refused[i].path),
                               "reason", pdk_display_json_string(res->refused[i].reason)));
    return json_pack("{s:b, s:o, s:o}", "ok", ok, "applied", applied, "refused", refused);
}

int pdk_review_commit(const char *state_dir, const char *session_id,
                      const pdk_review_commit_options *opts, pdk_review_commit_result *out,
                      pdk_error *err)
{
    memset(out, 0, sizeof(*out));
    _cleanup_(pdk_session_freep) pdk_session *session = NULL;
    if (pdk_session_open(state_dir, session_id, &session, err) < 0)
        return -1;
    /* A running session holds this lock: its layer is still being written. */
    if (pdk_session_lock(session, err) < 0)
        return -1;
    _cleanup_close_ int lower = -1;
    _cleanup_close_ int upper = -1;
    if (pdk_session_open_layers(session, &lower, &upper, err) < 0)
        return -1;
    pdk_commit_request req = {
        .lower_dirfd = lower,
        .workspace_path = session->workspace,
        .session_dir = session->dir,
        .upper_dirfd = upper,
        .baseline_ns = session->baseline_ns,
        .committed = session->committed,
        .committed_count = session->committed_count,
        .placeholders = session->placeholders,
        .protected_paths = session->protected_paths,
        .select = opts->paths,
        .allow_protected = opts->include_protected,
        .dry_run = opts->dry_run,
    };
    if (!opts->dry_run && pdk_audit_record(state_dir, session->id, "workspace.commit",
                                           json_pack("{s:o, s:o, s:b}", "workspace",
                                                     pdk_session_json_path(session->workspace),
                                                     "paths", paths_json(opts->paths),
                                                     "include_protected", opts->include_protected),
                                           err) < 0)
        return -1;
    out->session = xstrdup(session->id);
    out->workspace = xstrdup(session->workspace);
    out->ok = pdk_commit_apply(&req, &out->commit, &out->error) == 0;
    if (!opts->dry_run)
        (void)pdk_audit_record(state_dir, session->id, "workspace.committed",
                               committed_event(&out->commit, out->ok), &out->record_error);

    /* Record what was written, even when the commit stopped half-way. */
    int ret = out->ok ? 0 : -1;
    if (!out->ok)
        *err = out->error;
    if (!opts->dry_run && out->commit.applied_count > 0) {
        for (size_t i = 0; i < out->commit.applied_count; i++)
            if (out->commit.applied[i].ctime_ns >= 0)
                pdk_session_note_committed(session, out->commit.applied[i].path,
                                           out->commit.applied[i].ctime_ns);
        if (pdk_session_save(session, true, &out->save_error) < 0) {
            pdk_error_prefix(&out->save_error, "the changes were committed but the session "
                                               "could not record them");
            if (ret == 0)
                *err = out->save_error;
            ret = -1;
        }
    }
    return ret;
}

/* ---- discard ---- */

void pdk_review_discard_result_free(pdk_review_discard_result *r)
{
    free(r->session);
    memset(r, 0, sizeof(*r));
}

int pdk_review_discard(const char *state_dir, const char *session_id,
                       pdk_review_discard_result *out, pdk_error *err)
{
    memset(out, 0, sizeof(*out));
    _cleanup_(pdk_session_freep) pdk_session *s = NULL;
    /* Also a session whose session.json is missing or damaged (a run killed while it
     * started, a full disk): discard is how such a session goes. */
    if (pdk_session_open_for_removal(state_dir, session_id, &s, err) < 0)
        return -1;
    if (pdk_audit_record(state_dir, s->id, "workspace.discard",
                         json_pack("{s:o, s:i, s:b}", "workspace",
                                   s->workspace ? pdk_session_json_path(s->workspace) : json_null(),
                                   "runs", s->runs, "damaged", s->damaged),
                         err) < 0 ||
        pdk_session_remove(s, err) < 0)
        return -1;
    out->session = xstrdup(s->id);
    out->damaged = s->damaged;
    return 0;
}
