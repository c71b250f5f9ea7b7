/* run.c: see run.h. The orchestration; run_internal.h names the other files. */
#include "run_internal.h"

#include "output.h"

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

extern char **environ;

/* ---- the audit events of a run ---- */

int pdk__run_open_spool(run_state *st, pdk_error *err)
{
    if (st->spool)
        return 0;
    return pdk_audit_spool_open(st->state_dir, &st->spool, err);
}

json_t *pdk__run_argv_json(char *const *argv)
{
    /* a word that is not UTF-8 is kept, escaped, rather than dropped (display.h) */
    json_t *a = json_array();
    for (size_t i = 0; argv && argv[i]; i++)
        json_array_append_new(a, pdk_display_json_string(argv[i]));
    return a;
}

/* The verdict's fields, added to an event's data. */
void pdk__run_add_verdict(const run_state *st, json_t *o)
{
    const pdk_command_verdict *v = &st->verdict;
    json_object_set_new(o, "decision", json_string(pdk_decision_name(v->decision)));
    json_object_set_new(o, "rule", v->rule >= 0 ? json_integer(v->rule) : json_null());
    _cleanup_free_ char *how = pdk_policy_describe_rule(st->policy, v->rule);
    json_object_set_new(o, "decided_by", json_string(how));
    json_object_set_new(o, "reason", json_string(v->reason));
}

/* Before the command runs (the sandbox builds meanwhile): the session's start. */
static int record_start(void *arg, pdk_error *err)
{
    run_state *st = arg;
    if (pdk__run_open_spool(st, err) < 0)
        return -1;
    json_t *o = json_object();
    json_object_set_new(o, "argv", pdk__run_argv_json(st->opt->argv));
    json_object_set_new(o, "cwd", json_string(st->cfg.cwd ? st->cfg.cwd : ""));
    json_object_set_new(o, "workspace", pdk_session_json_path(st->workspace));
    json_object_set_new(
        o, "mode",
        json_string(st->opt->workspace_mode == PDK_WORKSPACE_DIRECT ? "direct" : "overlay"));
    json_object_set_new(o, "policy", json_string(st->policy->source));
    json_object_set_new(o, "policy_sha256", json_string(st->policy->sha256));
    json_object_set_new(o, "confined", json_boolean(st->confined));
    pdk__run_add_verdict(st, o);
    if (pdk_audit_spool_write(st->spool, st->session->id, "session.start", o, true, err) < 0)
        return pdk_error_prefix(err, "cannot record the session's start in the audit log, so "
                                     "the command does not run");
    return 0;
}

/* The homes whose credential locations are hidden: $HOME, and the passwd entry's home
 * when $HOME points elsewhere (the real one is still on the read-only root). */
static char **homes_of(const run_state *st)
{
    char **homes = NULL;
    pdk_strv_push(&homes, st->home);
    _cleanup_free_ char *pw = pdk_passwd_home(getuid());
    if (pw && !pdk_strv_contains(homes, pw))
        pdk_strv_push(&homes, pw);
    return homes;
}

static int resolve_workspace(run_state *st, pdk_error *err)
{
    const char *given = st->opt->workspace;
    _cleanup_free_ char *cwd = getcwd(NULL, 0);
    if (!given && st->session && !st->session_new)
        given = st->session->workspace;
    if (!given)
        given = cwd;
    if (!given)
        return pdk_error_set(err, errno, "cannot determine the current directory");
    char real[PATH_MAX];
    if (!realpath(given, real))
        return pdk_error_set(
            err, errno, "workspace %s does not exist (create it, or pass --workspace DIR)", given);
    struct stat sb;
    if (stat(real, &sb) < 0 || !S_ISDIR(sb.st_mode))
        return pdk_error_set(err, 0, "workspace %s is not a directory (pass --workspace DIR)",
                             given);
    if (strcmp(real, "/") == 0)
        return pdk_error_set(err, 0,
                             "the workspace cannot be / (pass --workspace DIR with a "
                             "project directory)");
    if (pdk_path_is_within(st->state_dir, real) || pdk_path_is_within(real, st->state_dir))
        return pdk_error_set(err, 0,
                             "workspace %s overlaps paddock's state dir %s (choose another "
                             "workspace, or set PADDOCK_STATE_DIR elsewhere)",
                             real, st->state_dir);
    st->workspace = xstrdup(real);
    return 0;
}

static int open_session(run_state *st, pdk_error *err)
{
    const pdk_run_options *opt = st->opt;
    if (opt->session_name) {
        pdk_error e = {0};
        /* Locked before it is read: its metadata is read, changed and written under the lock
         * (runs of one session at once never lose each other's update). */
        if (pdk_session_open_locked(st->state_dir, opt->session_name, &st->session, &e) == 0)
            return 0;
        if (!strstr(e.message, "no session named")) {
            *err = e;
            return -1;
        }
    }
    return 1; /* create after the workspace is known */
}

static int check_session_workspace(run_state *st, pdk_error *err)
{
    pdk_session *s = st->session;
    if (strcmp(s->workspace, st->workspace) != 0)
        return pdk_error_set(err, 0,
                             "session %s belongs to workspace %s, not %s (run it with "
                             "--workspace %s, or choose another --session)",
                             s->id, s->workspace, st->workspace, s->workspace);
    if (s->mode != st->opt->workspace_mode)
        return pdk_error_set(err, 0,
                             "session %s uses --workspace-mode %s (continue it in that mode, or "
                             "choose another --session)",
                             s->id, s->mode == PDK_WORKSPACE_DIRECT ? "direct" : "overlay");
    return 0;
}

static void add_protected(run_state *st, char ***abs, char ***rel, const char *entry,
                          const char *root, bool record)
{
    if (entry[0] == '/') {
        pdk_strv_push(abs, entry);
        if (record && pdk_path_is_within(entry, root))
            pdk_strv_push(rel, pdk_path_relative(entry, root));
        return;
    }
    char *p = pdk_path_join(root, entry);
    if (pdk_str_has_suffix(entry, "/")) {
        char *q = xasprintf("%s/", p);
        free(p);
        p = q;
    }
    pdk_strv_push_take(abs, p);
    if (record)
        pdk_strv_push(rel, entry);
}

/* While the sandbox runs: remove, one file at a time between the supervisor's other
 * events, the sessions earlier runs retired. */
static bool collect_step(void *arg)
{
    const run_state *st = arg;
    return pdk_session_collect_step(st->state_dir) > 0;
}

/* While the sandbox runs: a spare session directory for the next run, then the removal of
 * what earlier runs retired (or runs that were killed left). */
static bool idle_step(void *arg)
{
    run_state *st = arg;
    if (!st->spare_done) {
        /* A spare first (recycled from a retired session when one is unchanged). */
        st->spare_done = st->opt->workspace_mode != PDK_WORKSPACE_OVERLAY ||
                         pdk_session_spare_step(st->state_dir) <= 0;
        return true;
    }
    return collect_step(arg);
}

/* After the clone, while the sandbox builds its base tree: the new session's directory. */
static int after_clone(void *arg, pdk_error *err);

static int materialize_session(void *arg, pdk_error *err)
{
    run_state *st = arg;
    /* An unnamed direct-mode run has no layer and is never kept: nothing on disk. */
    if (!st->session_new ||
        (st->opt->workspace_mode == PDK_WORKSPACE_DIRECT && !st->session->named))
        return 0;
    if (pdk_session_materialize(st->session, err) < 0)
        return -1;
    st->session_created = true;
    return 0;
}

/* home.persist: STATE/homes/NAME bound at $HOME (read-only under the readonly profile),
 * the parents of its protected entries pinned (bound over themselves: they cannot be
 * renamed or removed inside, so the entries cannot be moved aside and made anew). */
static int bind_persistent_home(run_state *st, pdk_error *err)
{
    pdk_sandbox_config *cfg = &st->cfg;
    const char *name = st->policy->home_persist;
    if (!st->home || strcmp(st->home, "/") == 0)
        return pdk_error_set(err, 0,
                             "home.persist: %s needs a home directory to stand in for (set "
                             "$HOME)",
                             name);
    _cleanup_free_ char *dir = NULL;
    char **parents = NULL;
    if (pdk_home_prepare(st->state_dir, name, pdk_builtin_protected_home, &dir, &parents, err) < 0)
        return -1;
    cfg->binds = xrealloc(cfg->binds, (cfg->bind_count + 1) * sizeof(pdk_bind));
    pdk_bind *b = &cfg->binds[cfg->bind_count++];
    b->source = steal_pointer(&dir);
    b->target = xstrdup(st->home);
    b->writable = !st->readonly;
    for (size_t i = 0; parents[i]; i++)
        pdk_strv_push_take(&cfg->pin_paths, pdk_path_join(st->home, parents[i]));
    pdk_strv_free(parents);
    return 0;
}

static int build_config(run_state *st, pdk_error *err)
{
    const pdk_run_options *opt = st->opt;
    const pdk_policy *pol = st->policy;
    pdk_sandbox_config *cfg = &st->cfg;
    cfg->argv = opt->argv;
    cfg->home = xstrdup(st->home);
    cfg->hostname = xstrdup("paddock");
    cfg->workspace = xstrdup(st->workspace);
    cfg->workspace_mode = opt->workspace_mode;
    if (opt->workspace_mode == PDK_WORKSPACE_OVERLAY)
        cfg->layers_dir = xstrdup(st->session->dir);
    _cleanup_free_ char *cwd = getcwd(NULL, 0);
    cfg->cwd = xstrdup(cwd && pdk_path_is_within(cwd, st->workspace) ? cwd : st->workspace);

    /* Hidden: the credential list, read_deny, the state dir (also where they really are,
     * when they are symlinks). */
    cfg->hide_paths = pdk_hidden_paths(st->homes, pol, st->state_dir);
    /* A hidden directory over the workspace would leave the command nowhere to work. */
    for (size_t h = 0; cfg->hide_paths[h]; h++)
        if (pdk_path_is_within(st->workspace, cfg->hide_paths[h]))
            return pdk_error_set(err, 0,
                                 "workspace %s is hidden by the policy (a credential location, "
                                 "or filesystem.read_deny): choose another workspace, or narrow "
                                 "read_deny",
                                 st->workspace);

    /* Binds: what the policy grants, minus credential locations listed by mistake. */
    for (int pass = 0; pass < 2; pass++) {
        char **list = pass == 0 ? pol->read_allow : pol->write;
        for (size_t i = 0; list && list[i]; i++) {
            bool hidden = false;
            for (size_t h = 0; cfg->hide_paths[h] && !hidden; h++)
                hidden = pdk_path_is_within(list[i], cfg->hide_paths[h]);
            if (hidden) {
                pdk_warn("%s is a credential location and stays hidden (remove it from the "
                         "policy's filesystem.%s)",
                         list[i], pass == 0 ? "read_allow" : "write");
                continue;
            }
            struct stat sb;
            if (stat(list[i], &sb) < 0) {
                if (pass == 1) /* what the sandbox wrote there would be lost without a word */
                    return pdk_error_set(err, 0,
                                         "filesystem.write: %s: %s (create it first, e.g. mkdir "
                                         "-p %s, or remove it from the policy; for an agent's "
                                         "own state see home.persist)",
                                         list[i], strerror(errno), list[i]);
                pdk_warn("filesystem.read_allow: %s does not exist; not bound", list[i]);
                continue;
            }
            cfg->binds = xrealloc(cfg->binds, (cfg->bind_count + 1) * sizeof(pdk_bind));
            pdk_bind *b = &cfg->binds[cfg->bind_count++];
            b->source = xstrdup(list[i]);
            b->target = xstrdup(list[i]);
            b->writable = pass == 1;
        }
    }

    /* Protected: the built-in list and the policy's, in the workspace and in every writable
     * bind; the workspace-relative ones are recorded for commit. */
    char **rel = NULL;
    for (int pass = 0; pass < 2; pass++) {
        char *const *list = pass == 0 ? (char *const *)pdk_builtin_protected : pol->protect;
        for (size_t i = 0; list && list[i]; i++) {
            add_protected(st, &cfg->protect_paths, &rel, list[i], st->workspace, true);
            for (size_t b = 0; b < cfg->bind_count; b++)
                if (cfg->binds[b].writable && list[i][0] != '/')
                    add_protected(st, &cfg->protect_paths, &rel, list[i], cfg->binds[b].target,
                                  false);
        }
    }
    /* A persistent home is a writable bind of $HOME (after the loop above: the workspace's
     * list, ".codex/" among it, is not the home's). */
    if (pol->home_persist && !st->confined && bind_persistent_home(st, err) < 0) {
        pdk_strv_free(rel);
        return -1;
    }
    /* Start-up files and the agents' own configuration in the home directory, wherever
     * the sandbox could write them (a persistent home has them all, made empty when
     * missing). One that is missing in a writable bind of the host's (which writes
     * straight to the host) cannot be made read-only: such a bind is refused. */
    pdk_buf missing = {0};
    const char *missing_bind = NULL;
    for (size_t i = 0; pdk_builtin_protected_home[i]; i++) {
        _cleanup_free_ char *p = pdk_path_join(st->home, pdk_builtin_protected_home[i]);
        _cleanup_free_ char *bare = xstrdup(p); /* without the trailing '/' of a directory */
        for (size_t n = strlen(bare); n > 1 && bare[n - 1] == '/'; n--)
            bare[n - 1] = '\0';
        const pdk_bind *bind = NULL;
        for (size_t b = 0; b < cfg->bind_count && !bind; b++)
            if (cfg->binds[b].writable && pdk_path_is_within(bare, cfg->binds[b].target))
                bind = &cfg->binds[b];
        bool in_workspace = pdk_path_is_within(bare, st->workspace);
        if (!bind && !in_workspace)
            continue;
        /* where it is on the host: beneath the bind's source */
        _cleanup_free_ char *source =
            bind ? pdk_path_join(bind->source, pdk_path_relative(bare, bind->target)) : NULL;
        struct stat sb;
        if (bind && !in_workspace && lstat(source, &sb) < 0 && errno == ENOENT) {
            *strrchr(source, '/') = '\0';
            if (stat(source, &sb) == 0 && S_ISDIR(sb.st_mode)) {
                pdk_buf_printf(&missing, "%s%s", missing.len ? ", " : "", p);
                missing_bind = bind->target;
            }
            continue;
        }
        for (size_t b = 0; b < cfg->bind_count; b++)
            if (cfg->binds[b].writable && pdk_path_is_within(cfg->binds[b].target, bare))
                pdk_warn("filesystem.write: %s is protected (it runs outside the sandbox later) "
                         "and stays read-only",
                         cfg->binds[b].target);
        add_protected(st, &cfg->protect_paths, &rel, p, st->workspace, true);
    }
    if (missing.len) {
        pdk_error_set(
            err, 0,
            "filesystem.write: %s is writable, and the sandbox could create %s there, "
            "which runs outside the sandbox later (see Built-in lists in docs/policy.md): "
            "create %s first (an empty file or directory; {} for a .json file), or make "
            "a narrower path writable",
            missing_bind, missing.data, strchr(missing.data, ',') ? "them" : "it");
        pdk_buf_free(&missing);
        pdk_strv_free(rel);
        return -1;
    }
    pdk_strv_free(st->session->protected_paths);
    st->session->protected_paths = rel ? rel : xcalloc(1, sizeof(char *));
    cfg->make_placeholders = opt->workspace_mode == PDK_WORKSPACE_OVERLAY;

    cfg->pass_fds = opt->pass_fds;
    cfg->pass_fd_count = opt->pass_fd_count;
    cfg->tty = opt->tty;
    cfg->landlock_abi = pdk_landlock_abi();
    if (pdk_landlock_check_abi(cfg->landlock_abi, pol->landlock_min_abi, opt->allow_degraded, err) <
        0)
        return -1;
    cfg->restrict_tcp_bind = pol->has_tcp_bind;
    cfg->tcp_bind = pol->tcp_bind;
    cfg->tcp_bind_count = pol->tcp_bind_count;
    cfg->restrict_tcp_connect = pol->has_tcp_connect;
    cfg->tcp_connect = pol->tcp_connect;
    cfg->tcp_connect_count = pol->tcp_connect_count;
    cfg->nested_userns = pol->nested_userns;
    if (pol->nested_userns && geteuid() == 0)
        pdk_warn("sandbox.nested_userns: paddock runs as root, so the command is root inside "
                 "without capabilities, and Linux maps no ids in a user namespace such a "
                 "process makes (that needs CAP_SETFCAP): nested sandboxes (bubblewrap) fail "
                 "with \"setting up uid map\"; run paddock as a regular user, or turn the "
                 "agent's own sandbox off (docs/policy.md, \"Nested sandboxes\")");
    cfg->memory_bytes = pol->memory_bytes;
    cfg->pids = pol->pids;
    cfg->cpu_millicores = pol->cpu_millicores;
    cfg->allow_degraded = opt->allow_degraded;
    cfg->timeout_seconds = opt->timeout_seconds >= 0 ? opt->timeout_seconds : pol->timeout_seconds;
    cfg->cgroup_name = xasprintf("paddock-%s-%d", st->session->id, (int)getpid());

    cfg->after_clone = after_clone;
    cfg->after_clone_arg = st;
    cfg->before_command = record_start;
    cfg->before_command_arg = st;
    cfg->no_loopback = st->confined;
    cfg->idle_step = idle_step;
    cfg->idle_step_arg = st;

    pdk_environ_extra extra = {.home = st->home, .pwd = cfg->cwd, .session = st->session->id};
    cfg->envp = pdk_environ_build(environ, pol, &extra);
    return 0;
}

/* What of the host the sandbox of cfg sees (v's lists are cfg's; *shown is new). */
static void sandbox_visibility(const pdk_sandbox_config *cfg, pdk_visibility *v, char ***shown)
{
    *shown = xcalloc(1, sizeof(char *));
    if (cfg->workspace)
        pdk_strv_push(shown, cfg->workspace);
    for (size_t i = 0; i < cfg->bind_count; i++)
        pdk_strv_push(shown, cfg->binds[i].target);
    *v = (pdk_visibility){.home = cfg->home,
                          .shown = *shown,
                          .hidden = cfg->hide_paths,
                          .privileged = geteuid() == 0};
}

/* The command where the host finds it, when the sandbox does not see it there (a pyenv
 * shim under ~, a tool in /tmp): said now when another of its name runs instead, else kept
 * in hint for the end (the command is not found: 127). */
static void check_command_visible(const run_state *st, char *hint, size_t hint_size)
{
    const pdk_sandbox_config *cfg = &st->cfg;
    const char *name = st->opt->argv[0];
    const char *path_value = "/usr/local/bin:/usr/bin:/bin"; /* as init's, when none */
    for (size_t i = 0; cfg->envp && cfg->envp[i]; i++)
        if (strncmp(cfg->envp[i], "PATH=", 5) == 0 && cfg->envp[i][5])
            path_value = cfg->envp[i] + 5;
    _cleanup_free_ char *host = NULL;
    struct stat sb;
    if (strchr(name, '/')) {
        host = name[0] == '/' ? xstrdup(name) : pdk_path_join(cfg->cwd, name);
        if (stat(host, &sb) < 0)
            return; /* missing on the host too */
    } else if (!pdk_path_lookup(path_value, name, cfg->cwd, NULL, &host)) {
        return;
    }
    _cleanup_strv_ char **shown = NULL;
    pdk_visibility v;
    sandbox_visibility(cfg, &v, &shown);
    char why[600];
    pdk_unseen unseen = pdk_visibility_check(&v, host, why, sizeof(why));
    if (unseen == PDK_SEEN)
        return;
    _cleanup_free_ char *advice = pdk_visibility_advice(&v, unseen, host);
    _cleanup_free_ char *inside = NULL;
    if (!strchr(name, '/') && pdk_path_lookup(path_value, name, cfg->cwd, &v, &inside))
        pdk_warn("%s is %s here, but the sandbox does not see it (%s): %s runs instead (to run "
                 "the same one, %s)",
                 name, host, why, inside, advice);
    else if (strchr(name, '/'))
        snprintf(hint, hint_size, "%s is on the host, but the sandbox does not see it (%s): %s",
                 host, why, advice);
    else
        snprintf(hint, hint_size, "%s is %s on the host, but the sandbox does not see it (%s): %s",
                 name, host, why, advice);
}

/* Whether path or argv0 names an agent's own sandbox that makes namespaces: bubblewrap,
 * or Codex's linux sandbox (a bubblewrap of its own, called by that name). */
bool pdk__run_is_nested_sandbox(const char *path, const char *argv0)
{
    static const char *const names[] = {"bwrap", "codex-linux-sandbox"};
    for (size_t n = 0; n < 2; n++) {
        const char *name = n == 0 ? path : argv0;
        const char *base = name ? strrchr(name, '/') : NULL;
        base = base ? base + 1 : name;
        for (size_t i = 0; base && i < sizeof(names) / sizeof(names[0]); i++)
            if (strcmp(base, names[i]) == 0)
                return true;
    }
    return false;
}

/* Said once a run: such a sandbox fails here, and why (docs/policy.md, Nested sandboxes). */
void pdk__run_say_nested_sandbox(const run_state *st, const char *what)
{
    pdk_warn("%s makes namespaces of its own, which this policy refuses (sandbox.nested_userns "
             "is off): its sandbox fails, and so do the commands it runs; set nested_userns: "
             "true and run paddock as a regular user, or turn the agent's own sandbox off "
             "(docs/policy.md, \"Nested sandboxes\")",
             what);
}

/* Once the sandbox is cloned (in the supervisor): the session on disk, and the gateway. */
static int after_clone(void *arg, pdk_error *err)
{
    run_state *st = arg;
    if (materialize_session(st, err) < 0)
        return -1;
    return st->cfg.egress ? pdk__run_start_gateway(st, err) : 0;
}

static void free_config(pdk_sandbox_config *cfg)
{
    free(cfg->cwd);
    free(cfg->home);
    free(cfg->hostname);
    free(cfg->workspace);
    free(cfg->layers_dir);
    for (size_t i = 0; i < cfg->bind_count; i++) {
        free(cfg->binds[i].source);
        free(cfg->binds[i].target);
    }
    free(cfg->binds);
    pdk_strv_free(cfg->hide_paths);
    pdk_strv_free(cfg->protect_paths);
    pdk_strv_free(cfg->pin_paths);
    pdk_strv_free(cfg->envp);
    free((char *)cfg->cgroup_name);
    memset(cfg, 0, sizeof(*cfg));
}

static size_t count_changes(run_state *st)
{
    pdk_error err = {0};
    _cleanup_close_ int lower = -1;
    _cleanup_close_ int upper = -1;
    pdk_change_list list = {0};
    if (pdk_session_open_layers(st->session, &lower, &upper, &err) < 0 ||
        pdk_changes_scan(lower, upper, st->session->placeholders, &list, &err) < 0) {
        pdk_warn("session %s: cannot count the changes: %s", st->session->id, err.message);
        return 0;
    }
    size_t n = pdk_changes_count(&list);
    pdk_change_list_free(&list);
    return n;
}

/* After the run: the session's end. */
static void record_end(run_state *st, const pdk_run_report *report)
{
    if (!st->spool)
        return; /* the start was never recorded: nothing ran */
    json_t *o = json_object();
    json_object_set_new(o, "exit_status", json_integer(report->exit_status));
    json_object_set_new(o, "timed_out", json_boolean(report->timed_out));
    json_object_set_new(o, "changes", json_integer((json_int_t)report->changes));
    json_object_set_new(o, "kept", json_boolean(report->session_kept));
    json_object_set_new(o, "confined", json_boolean(st->confined));
    pdk_error err = {0};
    /* Not waited for on the disk: what it records has happened; the next durable write of
     * the spool (or the fold) carries it. */
    if (pdk_audit_spool_write(st->spool, st->session->id, "session.end", o, false, &err) < 0)
        pdk_warn("%s (the command has ended; its end is not in the audit log)", err.message);
}

const char *const pdk_run_profiles[] = {"default", "readonly", "offline", NULL};

int pdk_run(const pdk_run_options *given, pdk_run_report *report, pdk_error *err)
{
    pdk_run_options profiled = *given;
    const pdk_run_options *opt = &profiled;
    bool readonly = false, offline = false;
    if (given->profile && strcmp(given->profile, "default") != 0) {
        readonly = strcmp(given->profile, "readonly") == 0;
        offline = strcmp(given->profile, "offline") == 0;
        if (!readonly && !offline)
            return pdk_error_set(err, 0,
                                 "unknown profile '%s' (the profiles are default, readonly and "
                                 "offline)",
                                 given->profile);
        if (readonly && given->session_name)
            return pdk_error_set(err, 0,
                                 "the readonly profile writes nothing to the workspace, so it "
                                 "has no session to keep (drop --session)");
        if (readonly)
            profiled.workspace_mode = PDK_WORKSPACE_DIRECT;
    }
    memset(report, 0, sizeof(*report));
    report->exit_status = PDK_EXIT_PADDOCK_FAILED;
    report->workspace_mode = opt->workspace_mode;
    run_state st = {.opt = opt};
    int ret = -1;
    st.home = pdk_home_dir();
    st.homes = homes_of(&st);
    pdk_policy_context ctx = {.home = st.home};
    if (opt->policy_path) {
        if (pdk_policy_load_file(opt->policy_path, &ctx, &st.policy, NULL, err) < 0)
            goto out;
    } else if (pdk_policy_load_default(&ctx, &st.policy, err) < 0) {
        goto out;
    }
    if (pdk_state_dir(true, &st.state_dir, err) < 0)
        goto out;
    pdk_trace("policy loaded");

    /* The command rules on the command itself. */
    pdk_command_rules_judge(&st.policy->commands, opt->argv, &st.verdict);
    report->decision = st.verdict.decision;
    report->decided_by = pdk_policy_describe_rule(st.policy, st.verdict.rule);
    snprintf(report->reason, sizeof(report->reason), "%s", st.verdict.reason);
    if (st.verdict.decision == PDK_DECISION_DENY) {
        ret = pdk__run_refuse_denied(&st, report, err);
        goto out;
    }

    if (st.verdict.decision == PDK_DECISION_CONFINE) {
        if (opt->session_name) {
            pdk_error_set(err, 0,
                          "the policy confines this command (%s): it runs on a layer that is "
                          "thrown away, so --session %s cannot keep it (drop --session)",
                          report->decided_by, opt->session_name);
            goto out;
        }
        if (opt->workspace_mode == PDK_WORKSPACE_DIRECT) {
            pdk_error_set(err, 0,
                          "the policy confines this command (%s): its writes must be thrown "
                          "away, which --workspace-mode direct cannot do (drop it)",
                          report->decided_by);
            goto out;
        }
        st.confined = true;
        report->confined = true;
    }
    int r = open_session(&st, err);
    if (r < 0)
        goto out;
    if (resolve_workspace(&st, err) < 0)
        goto out;
    if (r == 0) {
        if (check_session_workspace(&st, err) < 0)
            goto out;
        bool across_reboot = false;
        if (pdk_session_recover_layer(st.session, &across_reboot, err) < 0)
            goto out;
        if (across_reboot)
            pdk_warn("session %s was in use when the system went down: files written just "
                     "before may be missing from its layer (check with paddock diff %s)",
                     st.session->id, st.session->id);
        /* A commit of the session killed half-way: its temporaries go before the sandbox
         * sees the workspace. */
        _cleanup_close_ int real = open(st.workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
        pdk_error recover_err = {0};
        if (real >= 0 && pdk_commit_recover(real, st.session->dir, &recover_err) < 0)
            pdk_warn("session %s: %s", st.session->id, recover_err.message);
        free(st.session->boot_id);
        st.session->boot_id = pdk_session_current_boot_id();
    } else {
        /* Decided now, made on disk while the sandbox starts (materialize_session). */
        if (pdk_session_prepare(st.state_dir, opt->session_name, st.workspace, opt->workspace_mode,
                                &st.session, err) < 0)
            goto out;
        st.session_new = true;
    }
    if (st.verdict.decision == PDK_DECISION_ASK) {
        int a = pdk__run_ask_human(&st, report, err);
        if (a < 0)
            goto out;
        if (a == 0) {
            ret = 0; /* denied: recorded, reported, nothing ran */
            goto out;
        }
    }
    exec_watch watch = {.st = &st, .lock = PTHREAD_MUTEX_INITIALIZER};
    if (st.policy->commands.count > 0 ||
        st.policy->commands.default_decision != PDK_DECISION_ALLOW) {
        watch.handler = (pdk_exec_handler){.judge = pdk__exec_judge,
                                           .ask = pdk__exec_ask,
                                           .connect = pdk__exec_connect_allowed,
                                           .arg = &watch};
        st.watch = &watch;
    }
    st.readonly = readonly;
    if (build_config(&st, err) < 0)
        goto out;
    if (st.watch) {
        watch.known_names = pdk__exec_known_command_names(&st.policy->commands);
        for (size_t i = 0; st.cfg.envp && st.cfg.envp[i]; i++)
            if (pdk_str_has_prefix(st.cfg.envp[i], "PATH="))
                watch.path_list = xstrdup(st.cfg.envp[i] + 5);
        watch.handler.known_names = watch.known_names;
        watch.handler.path_list = watch.path_list;
        watch.handler.one_root = !st.cfg.nested_userns;
        st.cfg.exec_handler = &watch.handler;
        /* Connects are watched only when some rule confines. */
        for (size_t i = 0; i < st.policy->commands.count; i++)
            if (st.policy->commands.rules[i].decision == PDK_DECISION_CONFINE)
                st.cfg.notify_connect = true;
    }
    if (readonly)
        st.cfg.workspace_readonly = true;
    if (offline)
        st.cfg.no_loopback = true;
    if (st.policy->network.enabled && !st.cfg.no_loopback && pdk__run_setup_egress(&st, err) < 0)
        goto out;
    char unseen_hint[sizeof(report->hint)] = "";
    check_command_visible(&st, unseen_hint, sizeof(unseen_hint));
    if (!st.policy->nested_userns && pdk__run_is_nested_sandbox(opt->argv[0], opt->argv[0]))
        pdk__run_say_nested_sandbox(&st, opt->argv[0]);
    pdk_trace("config built");

    /* While the command runs, paddock's notices go where the options say (log.h). */
    char *notice_path = NULL;
    if (pdk_notices_begin(st.state_dir, st.session->id, opt->notices, &notice_path, err) < 0)
        goto out;
    report->notice_route = opt->notices;
    if (opt->notices == PDK_NOTICES_ASIDE)
        pdk_outputf(STDERR_FILENO, 0,
                    "paddock: the command has the terminal: paddock's messages go to %s while "
                    "it runs (follow them with paddock approvals --watch), and a summary at the "
                    "end",
                    notice_path);
    free(notice_path);
    pdk_sandbox_result result;
    int sandbox_ran = pdk_sandbox_run(&st.cfg, &result, err);
    st.command_may_run = result.released;
    pdk_notices_end(&report->notices);
    if (sandbox_ran < 0)
        goto out;
    report->exit_status = result.exit_status;
    pdk_trace("sandbox ended");
    /* When runs are too short for the idle steps, what they left goes now (while the
     * sandbox's init exits), up to a bound, until one retired session at most is left for
     * the next run's idle steps: retired sessions never pile up. */
    (void)pdk_session_collect_abandoned(st.state_dir); /* what killed runs left */
    if (opt->workspace_mode == PDK_WORKSPACE_OVERLAY && pdk_session_retired_count(st.state_dir) > 1)
        (void)pdk_session_spare_step(st.state_dir); /* a recycle costs least */
    for (int step = 0;
         step < 256 && pdk_session_retired_count(st.state_dir) > 1 && collect_step(&st); step++)
        ;
    report->timed_out = result.timed_out;
    report->timeout_seconds = st.cfg.timeout_seconds;
    snprintf(report->message, sizeof(report->message), "%s", result.message);
    if (!result.started &&
        (result.exit_status == PDK_EXIT_NOT_FOUND || result.exit_status == PDK_EXIT_CANNOT_EXECUTE))
        snprintf(report->hint, sizeof(report->hint), "%s", unseen_hint);

    /* Every process of the sandbox is dead; its init may still be exiting while this
     * runs (pdk_sandbox_result_free reaps it). */
    pdk_session *s = st.session;
    s->runs++;
    s->last_exit = result.exit_status;
    s->last_run_ns = pdk_now_realtime_ns();
    if (opt->workspace_mode == PDK_WORKSPACE_OVERLAY) {
        for (size_t i = 0; result.placeholders && result.placeholders[i]; i++)
            if (pdk_path_is_within(result.placeholders[i], st.workspace) &&
                !pdk_strv_contains(s->placeholders,
                                   pdk_path_relative(result.placeholders[i], st.workspace)))
                pdk_strv_push(&s->placeholders,
                              pdk_path_relative(result.placeholders[i], st.workspace));
        report->changes = count_changes(&st);
        pdk_trace("changes counted");
    }
    report->session_id = xstrdup(s->id);
    bool keep = !st.confined && (s->named || report->changes > 0 ||
                                 (opt->workspace_mode == PDK_WORKSPACE_OVERLAY && !st.session_new));
    int saved = 0;
    /* Once the command has run, nothing of its session is removed because of a failure
     * here (a full disk, say): the session stays as it is, and a warning says how to
     * recover it; the exit status stays the command's. */
    pdk_error post = {0};
    if (st.session_new && !st.session_created) {
        report->session_removed = true; /* it never was on disk */
    } else if (!keep || (opt->workspace_mode == PDK_WORKSPACE_DIRECT && !s->named)) {
        /* After a run: out of sight now, its files go while a later run starts. When the
         * command never ran, nothing is left behind at all. */
        if (result.started) {
            report->session_removed = pdk_session_retire(s, &post) == 0;
            if (!report->session_removed)
                pdk_warn("%s (the session is left as it is; paddock discard %s removes it)",
                         post.message, s->id);
        } else {
            saved = pdk_session_remove(s, err);
            report->session_removed = saved == 0;
        }
    } else {
        if (opt->workspace_mode == PDK_WORKSPACE_OVERLAY) {
            pdk__run_remove_placeholders(&st);
            /* The overlay is volatile: make the kept layer durable here, once. */
            _cleanup_close_ int dfd = openat(s->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dfd < 0 || syncfs(dfd) < 0)
                pdk_warn("session %s: syncfs: %s", s->id, strerror(errno));
        }
        report->session_kept = true;
        if (pdk_session_save(s, true, &post) < 0)
            pdk_warn("session %s is kept with what the command wrote, but its record could not "
                     "be updated (%s): %s %s, then review it with paddock diff %s",
                     s->id, post.message,
                     post.code == ENOSPC || post.code == EDQUOT ? "free space in"
                                                                : "check the disk holding",
                     st.state_dir, s->id);
    }
    pdk_trace("session saved");
    pdk_sandbox_result_free(&result);
    pdk_trace("init reaped");
    if (saved < 0)
        goto out;
    /* The overlay is gone with the sandbox: its volatile marker may go too (or, when that
     * fails, at the next run on the layer). */
    pdk_error_clear(&post);
    if (report->session_kept && pdk_session_clear_volatile(s, &post) < 0)
        pdk_warn("%s (the next run on the session clears it)", post.message);
    st.session_created = false;
    record_end(&st, report);
    ret = 0;
    pdk_trace("session saved");
out:
    if (ret < 0) {
        free(report->decided_by);
        report->decided_by = NULL;
    }
    if (ret < 0 && st.session_created && st.session) {
        if (!st.command_may_run) {
            pdk_error ignored = {0};
            pdk_session_remove(st.session, &ignored);
        } else {
            /* The command may have written to its layer before paddock failed. */
            pdk_warn("session %s is kept as it is (review it with paddock diff %s, or remove it "
                     "with paddock discard %s)",
                     st.session->id, st.session->id, st.session->id);
        }
    }
    if (st.session)
        pdk_session_run_ended(st.session);
    if (st.watch)
        pdk__exec_watch_free(st.watch);
    if (st.gateway) /* the sandbox never ran */
        st.gateway_module->destroy(st.gateway);
    free(st.egress_ports);
    pdk__run_free_credentials(&st);
    free_config(&st.cfg);
    pdk_audit_spool_close(st.spool);
    pdk_session_free(st.session);
    pdk_policy_free(st.policy);
    free(st.state_dir);
    free(st.home);
    pdk_strv_free(st.homes);
    free(st.workspace);
    return ret;
}

void pdk_run_report_free(pdk_run_report *report)
{
    free(report->session_id);
    report->session_id = NULL;
    free(report->decided_by);
    report->decided_by = NULL;
}
