/* run_ask.c: before the command starts: a denied command refused, an asked one put to a
 * human (the terminal, or any process through paddock approvals). */
#include "run_internal.h"

#include "approvals.h"
#include "audit.h"
#include "exec_listener.h"
#include "changes.h"
#include "commit.h"
#include "display.h"
#include "environ.h"
#include "fsutil.h"
#include "gateway.h"
#include "home.h"
#include "landlock.h"
#include "log.h"
#include "placeholder_scan.h"
#include "policy.h"
#include "redact.h"
#include "sandbox.h"
#include "vault.h"
#include "visibility.h"
#include "statedir.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* A command the policy denies: recorded, not run (exit 126, as for a command that cannot
 * be executed). */
int pdk__run_refuse_denied(run_state *st, pdk_run_report *report, pdk_error *err)
{
    report->denied = true;
    report->exit_status = PDK_EXIT_CANNOT_EXECUTE;
    snprintf(report->message, sizeof(report->message), "denied by the policy: %s (%s)",
             st->verdict.reason, report->decided_by);
    if (pdk__run_open_spool(st, err) < 0)
        return -1;
    json_t *o = json_object();
    json_object_set_new(o, "argv", pdk__run_argv_json(st->opt->argv));
    _cleanup_free_ char *cwd = getcwd(NULL, 0);
    json_object_set_new(o, "cwd", json_string(cwd ? cwd : ""));
    json_object_set_new(o, "top_level", json_true());
    json_object_set_new(o, "policy", json_string(st->policy->source));
    pdk__run_add_verdict(st, o);
    if (pdk_audit_spool_write(st->spool, NULL, "exec", o, true, err) < 0)
        return pdk_error_prefix(err, "the command is denied, and cannot be recorded");
    return 0;
}

/* ---- asking a human ---- */

char *pdk__run_argv_line(char *const *argv)
{
    pdk_buf b = {0};
    for (size_t i = 0; argv[i]; i++)
        pdk_buf_printf(&b, "%s%s", i ? " " : "", argv[i]);
    return b.data ? b.data : xstrdup("");
}

/* Record the request a (filled by the caller; given its id here) in store, and
 * approval.asked in the run's audit spool. */
int pdk__run_approval_ask(run_state *st, pdk_store *store, pdk_approval *a, pdk_error *err)
{
    if (pdk_approval_create(store, a, err) < 0)
        return -1;
    json_t *asked = json_pack("{s:s, s:O, s:s, s:s, s:s, s:O}", "id", a->id, "argv", a->argv, "cwd",
                              a->cwd, "rule", a->rule, "reason", a->reason, "parents", a->parents);
    return pdk_audit_spool_write(st->spool, a->session, "approval.asked", asked, true, err);
}

/* What the policy's ask means for this run: 1 approved, 0 denied (reported, recorded), -1
 * with err when it could not be asked. */
int pdk__run_ask_human(run_state *st, pdk_run_report *report, pdk_error *err)
{
    _cleanup_free_ char *cwd = getcwd(NULL, 0);
    _cleanup_free_ char *line = pdk_display_argv(st->opt->argv);
    _cleanup_free_ char *cwd_shown = pdk_display(cwd ? cwd : "");
    if (pdk__run_open_spool(st, err) < 0)
        return -1;
    pdk_store *store = NULL;
    if (pdk_store_open(st->state_dir, true, &store, err) < 0)
        return pdk_error_prefix(err, "cannot ask for approval");
    int ret = -1;
    pdk_approval a = {0};
    /* Approved "always" for this session before: no need to ask again. */
    if (st->session->named && pdk_approval_always(store, st->session->id, report->decided_by)) {
        json_t *o = json_pack("{s:o, s:s, s:s}", "argv", pdk__run_argv_json(st->opt->argv), "rule",
                              report->decided_by, "how", "always, answered before");
        ret =
            pdk_audit_spool_write(st->spool, st->session->id, "approval.answered", o, true, err) < 0
                ? -1
                : 1;
        goto out;
    }
    a.session = xstrdup(st->session->id);
    a.pid = getpid();
    a.parents = pdk_approval_parents_of(getppid());
    a.argv = pdk__run_argv_json(st->opt->argv);
    a.cwd = xstrdup(cwd ? cwd : "");
    a.rule = xstrdup(report->decided_by);
    a.reason = xstrdup(st->verdict.reason);
    if (pdk__run_approval_ask(st, store, &a, err) < 0)
        goto out;
    int64_t timeout = st->policy->approval_timeout_seconds;
    pdk_notice(PDK_NOTICE_APPROVAL, PDK_NOTICE_PRINT,
               "approval %s: `%s` in %s needs a human (%s: %s); answer with paddock approve %s, "
               "or paddock deny %s (waiting up to %llds)",
               a.id, line, cwd_shown, a.rule, a.reason, a.id, a.id, (long long)timeout);
    pdk_approval_wait_options wait = {.timeout_seconds = timeout, .asker = st->opt->asker};
    pdk_approval got = {0};
    pdk_approval_outcome outcome;
    if (pdk_approval_wait(store, a.id, &wait, &got, &outcome, err) < 0) {
        pdk_approval_clear(&got);
        goto out;
    }
    bool approved;
    json_t *o = json_pack("{s:s, s:s}", "id", a.id, "rule", a.rule);
    if (outcome == PDK_APPROVAL_WAIT_ANSWERED) {
        approved = got.state == PDK_APPROVAL_APPROVED;
        json_object_set_new(o, "state", json_string(pdk_approval_state_name(got.state)));
        json_object_set_new(o, "by", json_string(got.answered_by ? got.answered_by : ""));
        json_object_set_new(o, "always", json_boolean(got.always));
        json_object_set_new(o, "reason", pdk_display_json_string(got.answer_reason));
        if (!approved)
            snprintf(report->message, sizeof(report->message), "denied by %s%s%s (approval %s)",
                     got.answered_by ? got.answered_by : "a human", got.answer_reason ? ": " : "",
                     got.answer_reason ? got.answer_reason : "", a.id);
    } else if (outcome == PDK_APPROVAL_WAIT_TIMED_OUT) {
        approved = st->policy->approval_on_timeout == PDK_DECISION_ALLOW;
        json_object_set_new(o, "state", json_string("expired"));
        json_object_set_new(o, "on_timeout", json_string(approved ? "allow" : "deny"));
        if (!approved)
            snprintf(report->message, sizeof(report->message),
                     "no answer to approval %s in %llds: denied (approvals.on_timeout)", a.id,
                     (long long)timeout);
        else
            pdk_notice(PDK_NOTICE_APPROVAL, PDK_NOTICE_PRINT,
                       "no answer to approval %s in %llds: allowed (approvals.on_timeout)", a.id,
                       (long long)timeout);
    } else {
        approved = false;
        json_object_set_new(o, "state", json_string("expired"));
        json_object_set_new(o, "interrupted", json_true());
        snprintf(report->message, sizeof(report->message),
                 "interrupted while waiting for approval %s: not run", a.id);
    }
    pdk_approval_clear(&got);
    if (pdk_audit_spool_write(st->spool, a.session, "approval.answered", o, true, err) < 0)
        goto out;
    if (!approved) {
        report->denied = true;
        report->exit_status = PDK_EXIT_CANNOT_EXECUTE;
    }
    ret = approved ? 1 : 0;
out:
    pdk_approval_clear(&a);
    pdk_store_close(store);
    return ret;
}