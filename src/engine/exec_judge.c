/* exec_judge.c: every exec inside the sandbox judged by the command rules (the exec
 * listener's handler): allowed, confined, refused, or held while a human is asked. */
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

/* ---- every exec inside the sandbox ---- */

#define MAX_ANCESTRY       64        /* parents looked at for `under` */
#define AUDIT_ARGS         16384     /* an argv recorded whole up to this many ... */
#define AUDIT_ARGV_BYTES   (1 << 20) /* ... and bytes; else its first words and counts */
#define AUDIT_ARGS_EXCERPT 1024
#define LINE_MAX_SHOWN     2000      /* of a command line shown on stderr */
#define SOURCED_FILE_MAX   (1 << 20) /* of a file a judged shell script sources */

/* How the rule decided, as pdk_policy_describe_rule says it (owned by w). */
static const char *rule_name(exec_watch *w, ssize_t rule)
{
    size_t count = w->st->policy->commands.count;
    size_t i = rule >= 0 && (size_t)rule < count ? (size_t)rule + 1 : 0;
    pthread_mutex_lock(&w->lock);
    if (!w->rule_names)
        w->rule_names = xcalloc(count + 1, sizeof(char *));
    if (!w->rule_names[i])
        w->rule_names[i] = pdk_policy_describe_rule(w->st->policy, rule);
    const char *name = w->rule_names[i];
    pthread_mutex_unlock(&w->lock);
    return name;
}

/* The literal command names and paths of the rules' first words (their `under` patterns'
 * too): the commands whose files an exec is recognised as, whatever it is called. */
char **pdk__exec_known_command_names(const pdk_command_rules *rules)
{
    char **names = NULL;
    for (size_t r = 0; r < rules->count; r++) {
        const pdk_command_rule *rule = &rules->rules[r];
        for (size_t u = 0; u <= rule->under_count; u++) {
            const pdk_command_rule *pattern = u == 0 ? rule : &rule->under[u - 1];
            if (pattern->token_count == 0)
                continue;
            for (char *const *alt = pattern->tokens[0].alternatives; *alt; alt++)
                if (!strpbrk(*alt, "*?[\\") && !pdk_strv_contains(names, *alt))
                    pdk_strv_push(&names, *alt);
        }
    }
    return names;
}

/* A command line for a human, bounded: its first words (LINE_MAX_SHOWN bytes of them)
 * escaped and shell-quoted (pdk_display_argv), and how many there are when not all. */
static char *exec_line(char *const *argv)
{
    size_t n = 0, bytes = 0;
    for (; argv[n] && bytes < LINE_MAX_SHOWN; n++)
        bytes += strlen(argv[n]) + 1;
    char **head = xcalloc(n + 1, sizeof(char *));
    memcpy(head, argv, n * sizeof(char *));
    char *shown = pdk_display_argv(head);
    free(head);
    if (!argv[n])
        return shown;
    char *more = xasprintf("%s ... (%zu arguments)", shown, n + pdk_strv_length(argv + n));
    free(shown);
    return more;
}

/* argv into o as "argv": whole when it is of a sensible size, else its first words with
 * "argv_truncated", "argv_count", "argv_bytes" and "argv_sha256" of the whole (its words
 * and their NULs): never a shortened argv that looks whole. */
static void add_argv(json_t *o, char *const *argv, size_t argc, size_t bytes)
{
    if (argc <= AUDIT_ARGS && bytes <= AUDIT_ARGV_BYTES) {
        json_object_set_new(o, "argv", pdk__run_argv_json(argv));
        return;
    }
    json_t *a = json_array();
    pdk_buf whole = {0};
    for (size_t i = 0; argv[i]; i++) {
        if (i < AUDIT_ARGS_EXCERPT)
            json_array_append_new(a, json_string(argv[i]));
        pdk_buf_append(&whole, argv[i], strlen(argv[i]) + 1);
    }
    char sha[65];
    pdk_sha256_hex(whole.data ? whole.data : "", whole.len, sha);
    pdk_buf_free(&whole);
    json_object_set_new(o, "argv", a);
    json_object_set_new(o, "argv_truncated", json_true());
    json_object_set_new(o, "argv_count", json_integer((json_int_t)argc));
    json_object_set_new(o, "argv_bytes", json_integer((json_int_t)bytes));
    json_object_set_new(o, "argv_sha256", json_string(sha));
}

/* The installers among pid's ancestors (their argvs, nearest first; NULL when none), with
 * w->lock held. */
static char ***installer_ancestors(exec_watch *w, pid_t pid)
{
    if (w->ninstallers == 0)
        return NULL;
    char ***found = NULL;
    size_t n = 0;
    pdk_proc_stat ps;
    if (!pdk_proc_stat_read(pid, &ps))
        return NULL;
    pid = ps.ppid;
    pid_t self = getpid(); /* the sandbox's init is our child: stop there */
    for (int depth = 0; depth < MAX_ANCESTRY && pid > 1 && pid != self; depth++) {
        if (!pdk_proc_stat_read(pid, &ps))
            break;
        for (size_t i = 0; i < w->ninstallers; i++)
            if (w->installers[i].pid == pid && w->installers[i].start == ps.start) {
                found = xrealloc(found, (n + 2) * sizeof(*found));
                found[n++] = w->installers[i].argv;
                found[n] = NULL;
            }
        pid = ps.ppid;
    }
    return found;
}

/* A file a shell script the exec runs sources, as that process sees it. */
static int read_sourced_file(void *arg, const char *path, char **text)
{
    const pdk_exec_request *req = arg;
    return pdk_exec_read_text(req->pid, path, SOURCED_FILE_MAX, text);
}

/* Judge every way the exec may be seen (exec_target.h), the strictest winning. */
static void judge_target(exec_watch *w, const pdk_exec_request *req, pdk_command_verdict *v)
{
    const pdk_command_rules *rules = &w->st->policy->commands;
    const pdk_exec_target *t = req->target;
    pthread_mutex_lock(&w->lock);
    _cleanup_free_ char ***ancestors = rules->has_under ? installer_ancestors(w, req->pid) : NULL;
    pdk_command_query q = {.argv = req->argv,
                           .ancestors = (char *const *const *)ancestors,
                           .read_file = read_sourced_file,
                           .read_file_arg = (void *)req,
                           .home = w->st->home};
    if (!t || t->count == 0) {
        pdk_command_rules_judge_query(rules, &q, v);
    } else {
        for (size_t i = 0; i < t->count; i++) {
            q.argv = t->subjects[i].argv;
            q.names = t->subjects[i].names;
            if (i == 0)
                pdk_command_rules_judge_query(rules, &q, v);
            else
                pdk_command_rules_judge_more(rules, &q, v);
        }
    }
    pthread_mutex_unlock(&w->lock);
}

/* The first words of argv when some way of seeing the exec matches an `under` pattern (the
 * processes it starts are under it), else NULL. */
static char **installer_argv(const pdk_command_rules *rules, const pdk_exec_request *req)
{
    if (!rules->has_under)
        return NULL;
    const pdk_exec_target *t = req->target;
    bool hit = false;
    for (size_t i = 0; t && i < t->count && !hit; i++) {
        pdk_command_query q = {.argv = t->subjects[i].argv, .names = t->subjects[i].names};
        hit = pdk_command_rules_starts_under(rules, &q);
    }
    if (!hit && (!t || t->count == 0)) {
        pdk_command_query q = {.argv = req->argv};
        hit = pdk_command_rules_starts_under(rules, &q);
    }
    if (!hit)
        return NULL;
    char **argv = NULL;
    for (size_t i = 0; req->argv[i] && i < INSTALLER_WORDS; i++)
        pdk_strv_push(&argv, req->argv[i]);
    return argv;
}

/* Remember pid as an installer (takes argv). */
static void remember_installer(exec_watch *w, pid_t pid, char **argv)
{
    pdk_proc_stat ps;
    if (!argv || !pdk_proc_stat_read(pid, &ps)) {
        pdk_strv_free(argv);
        return;
    }
    pthread_mutex_lock(&w->lock);
    /* the dead make room */
    for (size_t i = 0; w->ninstallers >= MAX_INSTALLERS / 2 && i < w->ninstallers;) {
        pdk_proc_stat other;
        if (pdk_proc_stat_read(w->installers[i].pid, &other) &&
            other.start == w->installers[i].start) {
            i++;
            continue;
        }
        pdk_strv_free(w->installers[i].argv);
        w->installers[i] = w->installers[--w->ninstallers];
    }
    if (w->ninstallers < MAX_INSTALLERS) {
        w->installers = xrealloc(w->installers, (w->ninstallers + 1) * sizeof(*w->installers));
        w->installers[w->ninstallers++] = (installer_proc){pid, ps.start, steal_pointer(&argv)};
    }
    pthread_mutex_unlock(&w->lock);
    pdk_strv_free(argv);
}

/* A connection opened by pid: refused when pid carries the confine mark. */
bool pdk__exec_connect_allowed(void *arg, pid_t pid, const char *call)
{
    exec_watch *w = arg;
    if (!pdk_exec_is_confined(pid))
        return true;
    json_t *o = json_pack("{s:i, s:s}", "pid", (int)pid, "call", call);
    pdk_error err = {0};
    (void)pdk_audit_spool_write(w->st->spool, w->st->session->id, "connect.refused", o, false,
                                &err);
    return false;
}

/* Whether pid's stderr is a terminal (a tty or a pty's slave). */
static bool stderr_is_terminal(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/2", (int)pid);
    struct stat sb;
    if (stat(path, &sb) < 0 || !S_ISCHR(sb.st_mode))
        return false;
    unsigned major_number = major(sb.st_rdev);
    /* the console and virtual terminals (4, 5), pty slaves (136-143), BSD ptys (3) */
    return major_number == 3 || major_number == 4 || major_number == 5 ||
           (major_number >= 136 && major_number <= 143);
}

static void note_refusal(exec_watch *w, pid_t pid, const char *line, const char *message)
{
    pthread_mutex_lock(&w->lock);
    free(w->refused_line);
    free(w->refused_message);
    w->refused_pid = pid;
    w->refused_line = xstrdup(line);
    w->refused_message = xstrdup(message ? message : "");
    pthread_mutex_unlock(&w->lock);
}

/* The held exec p answered (allow or not): recorded, told, let go. */
static void finish_ask(pending_ask *p, bool allow, json_t *event, const char *message)
{
    exec_watch *w = p->w;
    pdk_error err = {0};
    if (pdk_audit_spool_write(w->st->spool, w->st->session->id, "approval.answered", event, true,
                              &err) < 0) {
        pdk_warn("%s: the exec is refused", err.message);
        allow = false;
    }
    /* Noted before the answer: the shell's next try of the same command (the next
     * directory of PATH) is judged on the listener's thread as soon as this one fails. */
    if (!allow)
        note_refusal(w, p->pid, p->line, message);
    else if (p->installer)
        remember_installer(w, p->pid, steal_pointer(&p->installer));
    if (pdk_notices_held() && stderr_is_terminal(p->pid))
        message = NULL; /* the terminal a command that owns it draws on */
    pdk_exec_listener_answer(w->listener, p->token, p->pid, allow, message);
    for (size_t i = 0; i < w->npending; i++)
        if (w->pending[i] == p) {
            w->pending[i] = w->pending[--w->npending];
            break;
        }
    free(p->line);
    pdk_strv_free(p->installer);
    free(p);
}

/* On the loop: the approval of a held exec ended (approvals.h's watch). */
static void ask_done(void *arg, const pdk_approval *a, pdk_approval_outcome outcome)
{
    pending_ask *p = arg;
    exec_watch *w = p->w;
    p->watch = NULL; /* freed by the watch itself */
    json_t *o = json_pack("{s:s, s:s, s:s}", "id", p->id, "line", p->line, "state",
                          pdk_approval_state_name(a->state));
    if (outcome != PDK_APPROVAL_WAIT_ANSWERED) {
        bool allow = w->st->policy->approval_on_timeout == PDK_DECISION_ALLOW;
        json_object_set_new(o, "state", json_string("expired"));
        json_object_set_new(o, "on_timeout", json_string(allow ? "allow" : "deny"));
        _cleanup_free_ char *msg = xasprintf("paddock: no answer to approval %s in time: %s\n",
                                             p->id, allow ? "run" : "denied");
        finish_ask(p, allow, o, msg);
        return;
    }
    bool allow = a->state == PDK_APPROVAL_APPROVED;
    json_object_set_new(o, "by", json_string(a->answered_by ? a->answered_by : ""));
    json_object_set_new(o, "always", json_boolean(a->always));
    json_object_set_new(o, "reason", pdk_display_json_string(a->answer_reason));
    /* on the sandbox's stderr, which may be a terminal */
    _cleanup_free_ char *by = pdk_display(a->answered_by ? a->answered_by : "a human");
    _cleanup_free_ char *why = a->answer_reason ? pdk_display(a->answer_reason) : NULL;
    _cleanup_free_ char *msg = a->state == PDK_APPROVAL_EXPIRED
                                   ? xasprintf("paddock: approval %s expired: denied\n", p->id)
                                   : xasprintf("paddock: denied by %s%s%s (approval %s)\n", by,
                                               why ? ": " : "", why ? why : "", p->id);
    finish_ask(p, allow, o, msg);
}

/* The exec event of req: what really runs (the file, the whole argv, the interpreter or
 * the loader's program) and how it was judged. */
static json_t *exec_event(exec_watch *w, pdk_exec_request *req, const pdk_command_verdict *v,
                          const char *how)
{
    const pdk_exec_target *t = req->target;
    json_t *o =
        json_pack("{s:s, s:i, s:s, s:s, s:s}", "path", req->path, "pid", (int)req->pid, "decision",
                  pdk_decision_name(v->decision), "decided_by", how, "reason", v->reason);
    add_argv(o, req->argv, req->argc, req->argv_bytes);
    const char *file = t && t->count > 0 && t->subjects[0].file[0] ? t->subjects[0].file : NULL;
    json_object_set_new(o, "file", file ? json_string(file) : json_null());
    for (size_t i = 1; t && i < t->count; i++)
        if (!json_object_get(o, t->subjects[i].role))
            json_object_set_new(o, t->subjects[i].role,
                                t->subjects[i].file[0] ? json_string(t->subjects[i].file)
                                                       : json_string(t->subjects[i].argv[0]));
    if (t && t->nameless)
        json_object_set_new(o, "nameless", json_string(t->nameless));
    if (v->decision != PDK_DECISION_ALLOW)
        json_object_set_new(o, "cwd", json_string(pdk_exec_request_cwd(req)));
    json_object_set_new(o, "rule", v->rule >= 0 ? json_integer(v->rule) : json_null());
    return o;
}

/* An exec refused before any rule: recorded, and its reason on the process's stderr. */
static pdk_exec_answer refuse_exec(exec_watch *w, pdk_exec_request *req, const char *reason,
                                   char *message, size_t message_size)
{
    run_state *st = w->st;
    pdk_command_verdict v = {.decision = PDK_DECISION_DENY, .rule = -1, .reason = reason};
    json_t *o = exec_event(w, req, &v, "paddock");
    pdk_error err = {0};
    (void)pdk_audit_spool_write(st->spool, st->session->id, "exec", o, false, &err);
    snprintf(message, message_size, "paddock: refused: %s\n", reason);
    _cleanup_free_ char *shown = exec_line(req->argv);
    pdk_notice(PDK_NOTICE_EXEC_REFUSED, 0, "refused: `%s` (pid %d): %s", shown, (int)req->pid,
               reason);
    if (pdk_notices_held() && stderr_is_terminal(req->pid))
        message[0] = '\0'; /* the terminal a command that owns it draws on */
    return PDK_EXEC_DENY;
}

/* On the listener's thread: every exec of the sandbox. */
pdk_exec_answer pdk__exec_judge(void *arg, pdk_exec_request *req, char *message,
                                size_t message_size)
{
    exec_watch *w = arg;
    run_state *st = w->st;
    const pdk_command_rules *rules = &st->policy->commands;
    /* The command's own exec was judged on its argv before the sandbox was made; judged
     * again here on what it really runs, only a stricter decision counts (and is recorded). */
    bool first = !w->first_seen;
    w->first_seen = true;
    if (first && req->argv_state != PDK_EXEC_ARGV_WHOLE) {
        /* The command's own exec, by init's child, which still shares init's memory: a
         * supervisor without CAP_SYS_PTRACE (paddock run by a regular user) may not read it,
         * init being non-dumpable. What it runs is what paddock asked init to run, judged
         * before the sandbox was made. */
        pdk_exec_request known = *req;
        known.argv = st->opt->argv;
        known.target = NULL;
        remember_installer(w, req->pid, installer_argv(rules, &known));
        return PDK_EXEC_ALLOW;
    }
    if (req->argv_state == PDK_EXEC_ARGV_TOO_LARGE)
        return refuse_exec(w, req,
                           "its arguments are more than an exec can carry, and are not judged "
                           "by a part",
                           message, message_size);
    if (req->argv_state != PDK_EXEC_ARGV_WHOLE)
        return refuse_exec(w, req,
                           "its arguments cannot be read whole, and are not judged by a part",
                           message, message_size);
    _cleanup_free_ char *line = NULL; /* the command as one line, made when needed */
    pthread_mutex_lock(&w->lock);
    if (w->refused_line && req->pid == w->refused_pid) {
        line =
            pdk__run_argv_line(req->argv); /* whole: two commands alike in what is shown differ */
        if (strcmp(line, w->refused_line) == 0) {
            /* refused the same way, and silently: the first refusal told it already */
            message[0] = '\0';
            pthread_mutex_unlock(&w->lock);
            return PDK_EXEC_DENY;
        }
    }
    pthread_mutex_unlock(&w->lock);
    if (!st->policy->nested_userns && !w->nested_said &&
        pdk__run_is_nested_sandbox(req->path, req->argv[0])) {
        w->nested_said = true;
        _cleanup_free_ char *what =
            xasprintf("%s (pid %d)", req->argv[0] ? req->argv[0] : req->path, (int)req->pid);
        pdk__run_say_nested_sandbox(st, what);
    }
    const pdk_exec_target *t = req->target;
    /* A path that does not exist (a shell trying each directory of PATH) is failed as the
     * kernel would fail it, without asking or recording: answered here, so that a file made
     * in between never runs unjudged. */
    if (t && t->missing) {
        message[0] = '\0';
        return PDK_EXEC_MISSING;
    }
    if (t && t->nameless) {
        _cleanup_free_ char *why = xasprintf("it runs %s, which has no name to judge it by "
                                             "(execute a file of the sandbox's tree instead)",
                                             t->nameless);
        return refuse_exec(w, req, why, message, message_size);
    }
    pdk_command_verdict v;
    judge_target(w, req, &v);
    if (first && v.decision <= st->verdict.decision) {
        /* decided (recorded, asked, confined) already, on the same or a stricter ground */
        remember_installer(w, req->pid, installer_argv(rules, req));
        return PDK_EXEC_ALLOW;
    }
    const char *how = rule_name(w, v.rule);
    json_t *o = exec_event(w, req, &v, how);
    if (first)
        json_object_set_new(o, "top_level", json_true());
    pdk_error err = {0};
    /* Written before the exec goes on (fail closed); on the disk with the next durable
     * write. */
    if (pdk_audit_spool_write(st->spool, st->session->id, "exec", o, false, &err) < 0) {
        snprintf(message, message_size, "paddock: %s: the exec is refused\n", err.message);
        return PDK_EXEC_DENY;
    }
    switch (v.decision) {
    case PDK_DECISION_DENY: {
        snprintf(message, message_size, "paddock: denied by the policy: %s (%s)\n", v.reason, how);
        if (!line)
            line = pdk__run_argv_line(req->argv);
        note_refusal(w, req->pid, line, message);
        bool quiet = v.rule >= 0 && st->policy->commands.rules[v.rule].quiet;
        _cleanup_free_ char *shown = exec_line(req->argv);
        pdk_notice(PDK_NOTICE_EXEC_REFUSED, quiet ? PDK_NOTICE_QUIET : 0,
                   "refused: `%s` (pid %d): %s (%s)", shown, (int)req->pid, v.reason, how);
        /* The process is told on its stderr, unless that is the terminal a command that
         * owns it draws on (the notice is aside then). */
        if (pdk_notices_held() && stderr_is_terminal(req->pid))
            message[0] = '\0';
        return PDK_EXEC_DENY;
    }
    case PDK_DECISION_CONFINE:
        /* Inside a running sandbox: no network for it and every process it makes, whatever
         * their parents (their connections are refused); its writes stay in the session
         * layer. */
        if (pdk_exec_confine(req->pid) < 0) {
            snprintf(message, message_size,
                     "paddock: the policy confines this command (%s), and paddock cannot cut "
                     "it off the network (%s): refused\n",
                     how, errno == ENOTSUP ? "RLIMIT_LOCKS is 0 for paddock" : strerror(errno));
            return PDK_EXEC_DENY;
        }
        remember_installer(w, req->pid, installer_argv(rules, req));
        return PDK_EXEC_ALLOW;
    case PDK_DECISION_ASK:
        return PDK_EXEC_ASK;
    case PDK_DECISION_ALLOW:
    default:
        remember_installer(w, req->pid, installer_argv(rules, req));
        return PDK_EXEC_ALLOW;
    }
}

/* On the loop: an exec pdk__exec_judge said ask for (recorded there). */
pdk_exec_answer pdk__exec_ask(void *arg, pdk_exec_listener *listener, pdk_exec_request *req,
                              uint64_t token, char *message, size_t message_size)
{
    exec_watch *w = arg;
    run_state *st = w->st;
    w->listener = listener;
    pdk_command_verdict v; /* judged again: cheap, and asks are rare */
    judge_target(w, req, &v);
    const char *how = rule_name(w, v.rule);
    pdk_error err = {0};
    if (!w->store && pdk_store_open(st->state_dir, true, &w->store, &err) < 0) {
        snprintf(message, message_size, "paddock: cannot ask for approval (%s): denied\n",
                 err.message);
        return PDK_EXEC_DENY;
    }
    char **installer = installer_argv(&st->policy->commands, req);
    if (st->session->named && pdk_approval_always(w->store, st->session->id, how)) {
        remember_installer(w, req->pid, installer);
        return PDK_EXEC_ALLOW;
    }
    pdk_proc_stat asker; /* its parents only, not the asker itself */
    json_t *argv_record = json_object();
    add_argv(argv_record, req->argv, req->argc, req->argv_bytes);
    pdk_approval a = {
        .session = xstrdup(st->session->id),
        .pid = req->pid,
        .parents = pdk_approval_parents_of(pdk_proc_stat_read(req->pid, &asker) ? asker.ppid : 0),
        .argv = json_incref(json_object_get(argv_record, "argv")),
        .cwd = xstrdup(pdk_exec_request_cwd(req)),
        .rule = xstrdup(how),
        .reason = xstrdup(v.reason),
    };
    json_decref(argv_record);
    if (pdk__run_approval_ask(st, w->store, &a, &err) < 0) {
        snprintf(message, message_size, "paddock: cannot ask for approval (%s): denied\n",
                 err.message);
        pdk_approval_clear(&a);
        pdk_strv_free(installer);
        return PDK_EXEC_DENY;
    }
    pending_ask *p = xcalloc(1, sizeof(*p));
    p->w = w;
    p->token = token;
    p->pid = req->pid;
    snprintf(p->id, sizeof(p->id), "%s", a.id);
    p->line = pdk__run_argv_line(req->argv);
    p->installer = installer;
    pdk_approval_wait_options wait = {.timeout_seconds = st->policy->approval_timeout_seconds};
    if (pdk_approval_watch_start(pdk_exec_listener_base(listener), w->store, a.id, &wait, ask_done,
                                 p, &p->watch, &err) < 0) {
        (void)pdk_approval_expire(w->store, a.id, NULL);
        snprintf(message, message_size, "paddock: cannot wait for approval (%s): denied\n",
                 err.message);
        pdk_approval_clear(&a);
        free(p->line);
        pdk_strv_free(p->installer);
        free(p);
        return PDK_EXEC_DENY;
    }
    w->pending = xrealloc(w->pending, (w->npending + 1) * sizeof(*w->pending));
    w->pending[w->npending++] = p;
    _cleanup_free_ char *shown = exec_line(req->argv);
    pdk_notice(PDK_NOTICE_APPROVAL, PDK_NOTICE_PRINT,
               "approval %s: `%s` (pid %d) needs a human (%s: %s); answer with paddock approve "
               "%s, or paddock deny %s",
               a.id, shown, (int)req->pid, how, v.reason, a.id, a.id);
    pdk_approval_clear(&a);
    return PDK_EXEC_PENDING;
}

void pdk__exec_watch_free(exec_watch *w)
{
    for (size_t i = 0; w->rule_names && i <= w->st->policy->commands.count; i++)
        free(w->rule_names[i]);
    free(w->rule_names);
    for (size_t i = 0; i < w->ninstallers; i++)
        pdk_strv_free(w->installers[i].argv);
    free(w->installers);
    pdk_strv_free(w->known_names);
    free(w->path_list);
    free(w->refused_line);
    free(w->refused_message);
    for (size_t i = 0; i < w->npending; i++) {
        pdk_approval_watch_cancel(w->pending[i]->watch);
        free(w->pending[i]->line);
        pdk_strv_free(w->pending[i]->installer);
        free(w->pending[i]);
    }
    free(w->pending);
    pdk_store_close(w->store);
    memset(w, 0, sizeof(*w));
}