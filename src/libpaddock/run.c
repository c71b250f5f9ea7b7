/* run.c: see run.h. */
#include "run.h"

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

typedef struct run_state {
    const pdk_run_options *opt;
    pdk_policy *policy;
    char *state_dir;
    char *home;
    char **homes; /* whose credential locations are hidden (homes_of) */
    char *workspace;
    pdk_session *session;
    bool session_new;     /* prepared here, to be made on disk while the sandbox starts */
    bool session_created; /* made on disk by this run (removed again when the run fails) */
    bool command_may_run; /* let start: from here on nothing of the session is removed when
                           * something fails (the command may have written to it) */
    bool spare_done;      /* the idle steps have made the spares there is room for */

    pdk_sandbox_config cfg;
    pdk_command_verdict verdict;
    bool confined;
    bool readonly; /* the readonly profile: nothing written, the persistent home included */
    pdk_audit_spool *spool;   /* where this run's audit events go */
    struct exec_watch *watch; /* judging the execs inside, when the policy has rules */
    const pdk_gateway_module *gateway_module; /* the egress gateway, when the policy has a */
    pdk_gateway *gateway;                     /* network section */
    uint16_t *egress_ports;
    pdk_gateway_credential *credentials; /* values from the vault, placeholders of the run */
    char **credential_env;               /* NAME=placeholder for the sandbox */
    char **kept_placeholder_keys;        /* kept_placeholders()'s keys */
    char **placeholder_files;            /* in the state dir, bound in; removed at the end */
} run_state;

/* ---- the audit events of a run ---- */

static int open_spool(run_state *st, pdk_error *err)
{
    if (st->spool)
        return 0;
    return pdk_audit_spool_open(st->state_dir, &st->spool, err);
}

static json_t *argv_json(char *const *argv)
{
    /* a word that is not UTF-8 is kept, escaped, rather than dropped (display.h) */
    json_t *a = json_array();
    for (size_t i = 0; argv && argv[i]; i++)
        json_array_append_new(a, pdk_display_json_string(argv[i]));
    return a;
}

/* The verdict's fields, added to an event's data. */
static void add_verdict(const run_state *st, json_t *o)
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
    if (open_spool(st, err) < 0)
        return -1;
    json_t *o = json_object();
    json_object_set_new(o, "argv", argv_json(st->opt->argv));
    json_object_set_new(o, "cwd", json_string(st->cfg.cwd ? st->cfg.cwd : ""));
    json_object_set_new(o, "workspace", pdk_session_json_path(st->workspace));
    json_object_set_new(
        o, "mode",
        json_string(st->opt->workspace_mode == PDK_WORKSPACE_DIRECT ? "direct" : "overlay"));
    json_object_set_new(o, "policy", json_string(st->policy->source));
    json_object_set_new(o, "policy_sha256", json_string(st->policy->sha256));
    json_object_set_new(o, "confined", json_boolean(st->confined));
    add_verdict(st, o);
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
static bool is_nested_sandbox(const char *path, const char *argv0)
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
static void say_nested_sandbox(const run_state *st, const char *what)
{
    pdk_warn("%s makes namespaces of its own, which this policy refuses (sandbox.nested_userns "
             "is off): its sandbox fails, and so do the commands it runs; set nested_userns: "
             "true and run paddock as a regular user, or turn the agent's own sandbox off "
             "(docs/policy.md, \"Nested sandboxes\")",
             what);
}

/* The sockets init made, on the supervisor's loop: the gateway serves them. */
static void serve_gateway(void *arg, struct event_base *base, pid_t init_pid,
                          const pdk_egress_socket *socks, size_t count)
{
    run_state *st = arg;
    if (st->gateway)
        st->gateway_module->serve(st->gateway, base, init_pid, socks, count);
    else
        for (size_t i = 0; i < count; i++)
            close(socks[i].fd);
}

/* The end of the sandbox, on the supervisor's loop: the gateway's connections end. */
static void stop_gateway(void *arg)
{
    run_state *st = arg;
    if (!st->gateway)
        return;
    st->gateway_module->finish(st->gateway); /* what it counted and did not write yet */
    pdk_gateway_stats s;
    st->gateway_module->stats(st->gateway, &s);
    json_t *o = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "connections", (json_int_t)s.connections, "requests",
        (json_int_t)s.requests, "denied", (json_int_t)s.denied, "dns_queries",
        (json_int_t)s.dns_queries, "dns_blocked", (json_int_t)s.dns_blocked, "connections_refused",
        (json_int_t)s.connections_refused, "idle_closed", (json_int_t)s.idle_closed);
    pdk_error err = {0};
    if (pdk_audit_spool_write(st->spool, st->session->id, "net.summary", o, false, &err) < 0)
        pdk_warn("%s", err.message);
    st->gateway_module->destroy(st->gateway);
    st->gateway = NULL;
}

/* A read-only bind of dir/name (or of name alone, an absolute path) at target. */
static void add_bind(pdk_sandbox_config *cfg, const char *dir, const char *name, const char *target)
{
    cfg->binds = xrealloc(cfg->binds, (cfg->bind_count + 1) * sizeof(pdk_bind));
    pdk_bind *b = &cfg->binds[cfg->bind_count++];
    b->source = dir ? pdk_path_join(dir, name) : xstrdup(name);
    b->target = xstrdup(target);
    b->writable = false;
}

#define PDK_HOST_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

/* A placeholder that looks like what it stands for: the policy's prefix (clients that check
 * a key's shape, "sk-proj-"), else "t-" for a Feishu tenant token, else paddock's mark; then
 * 24 random bytes in lowercase hex (random: those kept with a persistent home, or NULL for
 * new ones), which is what the gateway recognises it by (placeholder_scan.h), whatever the
 * prefix. */
static char *make_placeholder(const pdk_credential *c, const char *random)
{
    char hex[PDK_PLACEHOLDER_RANDOM_HEX + 1];
    if (random) {
        snprintf(hex, sizeof(hex), "%s", random);
    } else {
        unsigned char r[PDK_PLACEHOLDER_RANDOM_HEX / 2];
        randombytes_buf(r, sizeof(r));
        sodium_bin2hex(hex, sizeof(hex), r, sizeof(r));
    }
    const char *prefix = c->placeholder_prefix                               ? c->placeholder_prefix
                         : c->provider == PDK_CREDENTIAL_FEISHU_TENANT_TOKEN ? "t-"
                                                                             : "pdk-ph-";
    return xasprintf("%s%s", prefix, hex);
}

/* The vault names credential c is made of (a NULL-terminated view of its fields). */
static char **credential_secrets(const pdk_credential *c)
{
    const char *const fields[] = {c->value_secret,      c->app_id_secret,
                                  c->app_secret_secret, c->refresh_token_secret,
                                  c->client_id_secret,  c->client_secret_secret};
    return pdk_strv_view(fields, PDK_ARRAY_SIZE(fields), (char *const[]){NULL});
}

/* With a persistent home: the random parts of the placeholders kept with it (home.h),
 * made when missing (except under the readonly profile, which writes nothing): in
 * value[i] for credential i's, and app_secret[i] for a Feishu app secret's stand-in (both
 * NULL when kept with no home, or when there is none). */
static int kept_placeholders(run_state *st, const char **value, const char **app_secret,
                             pdk_home_placeholder **list_out, pdk_error *err)
{
    *list_out = NULL;
    const pdk_policy *pol = st->policy;
    size_t n = pol->credential_count;
    if (!pol->home_persist || st->confined || n == 0)
        return 0;
    pdk_home_placeholder *list = xcalloc(2 * n, sizeof(*list));
    char **keys = NULL;
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        const pdk_credential *c = &pol->credentials[i];
        pdk_strv_push(&keys, c->name);
        list[count++].secrets = credential_secrets(c);
        if (c->provider == PDK_CREDENTIAL_FEISHU_TENANT_TOKEN) {
            pdk_strv_push_take(&keys, xasprintf("%s/app_secret", c->name));
            list[count++].secrets = credential_secrets(c);
        }
    }
    for (size_t k = 0; k < count; k++)
        list[k].key = keys[k];
    int r =
        pdk_home_placeholders(st->state_dir, pol->home_persist, list, count, !st->readonly, err);
    for (size_t k = 0; k < count; k++)
        free((char **)list[k].secrets);
    st->kept_placeholder_keys = keys;
    if (r < 0) {
        free(list);
        return -1;
    }
    for (size_t i = 0, k = 0; i < n; i++) {
        value[i] = list[k++].random;
        if (pol->credentials[i].provider == PDK_CREDENTIAL_FEISHU_TENANT_TOKEN)
            app_secret[i] = list[k++].random;
    }
    *list_out = list;
    return 0;
}

/* A placeholder for each credential (new every run, or kept with a persistent home), for
 * the sandbox's environment. No secret is touched here: this runs before the sandbox is
 * cloned, and a clone copies the supervisor's memory into the sandbox's init. */
/* A credential's placeholder.file: the placeholder in a file of the state dir (hidden
 * inside), bound read-only at the path the policy names (outside the workspace: a file
 * there would be a change of the session). */
static int placeholder_file(run_state *st, const pdk_credential *c, const char *placeholder,
                            pdk_error *err)
{
    if (pdk_path_is_within(c->placeholder_file, st->workspace))
        return pdk_error_set(err, 0,
                             "credential %s: placeholder.file %s is inside the workspace (put it "
                             "outside, e.g. under ~/)",
                             c->name, c->placeholder_file);
    _cleanup_free_ char *dir = pdk_path_join(st->state_dir, "placeholders");
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return pdk_error_set(err, errno, "cannot make %s", dir);
    _cleanup_free_ char *name = xasprintf("%d.%s", (int)getpid(), c->name);
    _cleanup_free_ char *text = xasprintf("%s\n", placeholder);
    _cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || pdk_write_file_atomic(dfd, name, text, strlen(text), 0644, false) < 0)
        return pdk_error_set(err, errno, "cannot write %s/%s", dir, name);
    pdk_strv_push_take(&st->placeholder_files, pdk_path_join(dir, name));
    add_bind(&st->cfg, dir, name, c->placeholder_file);
    return 0;
}

static int make_placeholders(run_state *st, pdk_error *err)
{
    size_t n = st->policy->credential_count;
    st->credentials = xcalloc(n + 1, sizeof(*st->credentials));
    st->credential_env = xcalloc(1, sizeof(char *));
    _cleanup_free_ pdk_home_placeholder *kept = NULL;
    _cleanup_free_ const char **kept_value = xcalloc(n + 1, sizeof(char *));
    _cleanup_free_ const char **kept_app_secret = xcalloc(n + 1, sizeof(char *));
    if (kept_placeholders(st, kept_value, kept_app_secret, &kept, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const pdk_credential *c = &st->policy->credentials[i];
        st->credentials[i].policy = c;
        st->credentials[i].placeholder = make_placeholder(c, kept_value[i]);
        pdk_redact_add_placeholder(st->credentials[i].placeholder);
        if (c->placeholder_env)
            pdk_strv_push_take(&st->credential_env, xasprintf("%s=%s", c->placeholder_env,
                                                              st->credentials[i].placeholder));
        if (c->placeholder_file && placeholder_file(st, c, st->credentials[i].placeholder, err) < 0)
            return -1;
        if (c->provider == PDK_CREDENTIAL_FEISHU_TENANT_TOKEN) {
            /* a stand-in for the app secret too, which the gateway's answer to the token
             * endpoint accepts */
            st->credentials[i].placeholder_app_secret =
                make_placeholder(&(pdk_credential){0}, kept_app_secret[i]);
            pdk_redact_add_placeholder(st->credentials[i].placeholder_app_secret);
            if (c->placeholder_app_secret_env)
                pdk_strv_push_take(&st->credential_env,
                                   xasprintf("%s=%s", c->placeholder_app_secret_env,
                                             st->credentials[i].placeholder_app_secret));
        }
    }
    return 0;
}

/* A minted credential's own secrets (app secret, refresh token, client secret) as real
 * values of the redaction registry, so that nothing sends them into the sandbox (an
 * endpoint's error that quotes them included); the vault's copy is not kept otherwise. A
 * secret not in the vault yet is the provider's error to give, at its first mint. */
static void register_provider_secrets(pdk_vault *vault, const pdk_credential *c)
{
    const struct {
        const char *secret, *what;
    } secrets[] = {{c->app_secret_secret, "app secret"},
                   {c->refresh_token_secret, "refresh token"},
                   {c->client_secret_secret, "client secret"}};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(secrets); i++) {
        pdk_error ignored = {0};
        const char *v =
            secrets[i].secret ? pdk_vault_get(vault, secrets[i].secret, false, &ignored) : NULL;
        _cleanup_free_ char *label = xasprintf("%s (%s)", c->name, secrets[i].what);
        if (v)
            pdk_redact_add_named(v, label);
    }
}

/* The static credentials' values from the vault (after the clone), and the minted ones'
 * secrets registered for redaction. */
static int load_credential_values(run_state *st, pdk_error *err)
{
    size_t n = st->policy->credential_count;
    if (n == 0)
        return 0;
    pdk_vault *vault = NULL;
    if (pdk_vault_open(st->state_dir, false, &vault, err) < 0)
        return -1;
    int ret = 0;
    for (size_t i = 0; i < n && ret == 0; i++) {
        const pdk_credential *c = &st->policy->credentials[i];
        if (c->provider != PDK_CREDENTIAL_STATIC) {
            register_provider_secrets(vault, c);
            continue;
        }
        const char *value = pdk_vault_get(vault, c->value_secret, true, err);
        if (!value) {
            ret = pdk_error_prefix(err, "credential %s", c->name);
            break;
        }
        st->credentials[i].value = xstrdup(value);
        pdk_redact_add_named(value, c->name);
    }
    pdk_vault_close(vault);
    return ret;
}

/* After the clone, in the supervisor: the secrets and the gateway that holds them (its CA
 * key, minted tokens), none of which the sandbox's init got a copy of. */
static int start_gateway(run_state *st, pdk_error *err)
{
    if (load_credential_values(st, err) < 0)
        return -1;
    pdk_gateway_config gc = {.policy = st->policy,
                             .credentials = st->credentials,
                             .credential_count = st->policy->credential_count,
                             .spool = st->spool,
                             .session = st->session->id,
                             .state_dir = st->state_dir,
                             .session_named = st->session->named};
    st->gateway = st->gateway_module->create(&gc, err);
    return st->gateway ? 0 : -1;
}

static void free_credentials(run_state *st)
{
    if (st->credentials) /* (made with the policy: no policy, no credentials) */
        pdk_gateway_credentials_free(st->credentials, st->policy->credential_count);
    st->credentials = NULL;
    pdk_strv_free(st->credential_env);
    st->credential_env = NULL;
    pdk_strv_free(st->kept_placeholder_keys);
    st->kept_placeholder_keys = NULL;
    for (char **f = st->placeholder_files; f && *f; f++)
        (void)unlink(*f);
    pdk_strv_free(st->placeholder_files);
    st->placeholder_files = NULL;
}

/* Once the sandbox is cloned (in the supervisor): the session on disk, and the gateway. */
static int after_clone(void *arg, pdk_error *err)
{
    run_state *st = arg;
    if (materialize_session(st, err) < 0)
        return -1;
    return st->cfg.egress ? start_gateway(st, err) : 0;
}

/* The egress gateway for a policy with a network section: the module, the sockets init
 * makes for it, the proxy variables, and a resolv.conf that names the DNS stub. */
static int setup_egress(run_state *st, pdk_error *err)
{
    pdk_sandbox_config *cfg = &st->cfg;
    st->gateway_module = pdk_gateway_module_load(err);
    if (!st->gateway_module || open_spool(st, err) < 0)
        return -1;
    if (make_placeholders(st, err) < 0)
        return -1;
    cfg->egress = true;
    st->egress_ports = pdk_net_rules_ports(&st->policy->network, &cfg->egress_port_count);
    cfg->egress_ports = st->egress_ports;
    cfg->egress_sockets = serve_gateway;
    cfg->egress_stop = stop_gateway;
    cfg->egress_arg = st;

    /* resolv.conf: one file in the state dir (hidden inside), bound over the host's. Many
     * runs bind it at once: written once, never replaced while they do. */
    static const char resolv[] = "# paddock: the egress gateway's DNS stub\nnameserver 127.0.0.1\n";
    _cleanup_close_ int dir = open(st->state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0 || pdk_write_file_once(dir, "resolv.conf", resolv, sizeof(resolv) - 1, 0644) < 0)
        return pdk_error_set(err, errno, "cannot write %s/resolv.conf", st->state_dir);
    char real[PATH_MAX];
    const char *target = realpath("/etc/resolv.conf", real) ? real : "/etc/resolv.conf";
    add_bind(cfg, st->state_dir, "resolv.conf", target);

    /* The trusted roots inside: the host's plus paddock's CA, over the distribution's
     * bundle when there is one, else beside the proxy's other files in /run. */
    _cleanup_free_ char *bundle = st->gateway_module->ca_bundle(st->state_dir, err);
    if (!bundle)
        return -1;
    struct stat sb;
    const char *inside =
        stat(PDK_HOST_CA_BUNDLE, &sb) == 0 ? PDK_HOST_CA_BUNDLE : "/run/paddock-ca-bundle.pem";
    add_bind(cfg, NULL, bundle, inside);

    pdk_strv_free(cfg->envp);
    pdk_environ_extra extra = {.home = st->home,
                               .pwd = cfg->cwd,
                               .session = st->session->id,
                               .proxy_url = "http://127.0.0.1:3128",
                               .ca_bundle = inside,
                               .set_last = st->credential_env};
    cfg->envp = pdk_environ_build(environ, st->policy, &extra);
    return 0;
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

/* Placeholders live in the session layer only while the sandbox runs: remove them, and
 * forget the ones that are gone (the others stay on the list that diff and commit
 * ignore). */
static void remove_placeholders(run_state *st)
{
    pdk_session *s = st->session;
    _cleanup_close_ int upper = openat(s->dir_fd, "upper", O_PATH | O_DIRECTORY | O_CLOEXEC);
    char **kept = xcalloc(1, sizeof(char *));
    for (size_t i = 0; s->placeholders && s->placeholders[i]; i++) {
        const char *rel = s->placeholders[i];
        const char *leaf = NULL;
        _cleanup_close_ int parent =
            upper >= 0 ? pdk_open_parent_beneath(upper, rel, false, &leaf) : -1;
        if (parent >= 0 && unlinkat(parent, leaf, AT_REMOVEDIR) == 0)
            continue;
        if (errno == ENOENT)
            continue;
        pdk_strv_push(&kept, rel);
    }
    pdk_strv_free(s->placeholders);
    s->placeholders = kept;
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

/* A command the policy denies: recorded, not run (exit 126, as for a command that cannot
 * be executed). */
static int refuse_denied(run_state *st, pdk_run_report *report, pdk_error *err)
{
    report->denied = true;
    report->exit_status = PDK_EXIT_CANNOT_EXECUTE;
    snprintf(report->message, sizeof(report->message), "denied by the policy: %s (%s)",
             st->verdict.reason, report->decided_by);
    if (open_spool(st, err) < 0)
        return -1;
    json_t *o = json_object();
    json_object_set_new(o, "argv", argv_json(st->opt->argv));
    _cleanup_free_ char *cwd = getcwd(NULL, 0);
    json_object_set_new(o, "cwd", json_string(cwd ? cwd : ""));
    json_object_set_new(o, "top_level", json_true());
    json_object_set_new(o, "policy", json_string(st->policy->source));
    add_verdict(st, o);
    if (pdk_audit_spool_write(st->spool, NULL, "exec", o, true, err) < 0)
        return pdk_error_prefix(err, "the command is denied, and cannot be recorded");
    return 0;
}

/* ---- asking a human ---- */

static volatile sig_atomic_t ask_interrupted;

static void on_ask_signal(int sig)
{
    ask_interrupted = sig;
}

/* The terminal paddock runs on, when it has one (the command has not started: it is not
 * using it), for the prompt; -1 when none. */
static int open_prompt_tty(void)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO))
        return -1;
    return open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
}

static char *argv_line(char *const *argv)
{
    pdk_buf b = {0};
    for (size_t i = 0; argv[i]; i++)
        pdk_buf_printf(&b, "%s%s", i ? " " : "", argv[i]);
    return b.data ? b.data : xstrdup("");
}

/* Record the request a (filled by the caller; given its id here) in store, and
 * approval.asked in the run's audit spool. */
static int approval_ask(run_state *st, pdk_store *store, pdk_approval *a, pdk_error *err)
{
    if (pdk_approval_create(store, a, err) < 0)
        return -1;
    json_t *asked = json_pack("{s:s, s:O, s:s, s:s, s:s, s:O}", "id", a->id, "argv", a->argv, "cwd",
                              a->cwd, "rule", a->rule, "reason", a->reason, "parents", a->parents);
    return pdk_audit_spool_write(st->spool, a->session, "approval.asked", asked, true, err);
}

/* What the policy's ask means for this run: 1 approved, 0 denied (reported, recorded), -1
 * with err when it could not be asked. */
static int ask_human(run_state *st, pdk_run_report *report, pdk_error *err)
{
    _cleanup_free_ char *cwd = getcwd(NULL, 0);
    _cleanup_free_ char *line = pdk_display_argv(st->opt->argv);
    _cleanup_free_ char *cwd_shown = pdk_display(cwd ? cwd : "");
    if (open_spool(st, err) < 0)
        return -1;
    pdk_store *store = NULL;
    if (pdk_store_open(st->state_dir, true, &store, err) < 0)
        return pdk_error_prefix(err, "cannot ask for approval");
    int ret = -1;
    pdk_approval a = {0};
    /* Approved "always" for this session before: no need to ask again. */
    if (st->session->named && pdk_approval_always(store, st->session->id, report->decided_by)) {
        json_t *o = json_pack("{s:o, s:s, s:s}", "argv", argv_json(st->opt->argv), "rule",
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
    a.argv = argv_json(st->opt->argv);
    a.cwd = xstrdup(cwd ? cwd : "");
    a.rule = xstrdup(report->decided_by);
    a.reason = xstrdup(st->verdict.reason);
    if (approval_ask(st, store, &a, err) < 0)
        goto out;
    int64_t timeout = st->policy->approval_timeout_seconds;
    pdk_notice(PDK_NOTICE_APPROVAL, PDK_NOTICE_PRINT,
               "approval %s: `%s` in %s needs a human (%s: %s); answer with paddock approve %s, "
               "or paddock deny %s (waiting up to %llds)",
               a.id, line, cwd_shown, a.rule, a.reason, a.id, a.id, (long long)timeout);
    int tty = open_prompt_tty();
    if (tty >= 0)
        dprintf(tty, "paddock: run `%s` in %s? [y]es, [n]o, [a]lways for this session: ", line,
                cwd_shown);
    struct sigaction sa = {.sa_handler = on_ask_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    ask_interrupted = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    uint64_t deadline = pdk_now_monotonic_ns() + (uint64_t)timeout * 1000000000ULL;
    const char *how = NULL;
    pdk_approval got = {0};
    for (;;) {
        if (pdk_approval_get(store, a.id, &got, err) < 0)
            break;
        if (got.state != PDK_APPROVAL_PENDING) {
            how = "answered";
            break;
        }
        pdk_approval_clear(&got);
        if (ask_interrupted || pdk_now_monotonic_ns() >= deadline) {
            int e = pdk_approval_expire(store, a.id, err);
            if (e < 0)
                break;
            if (e == 0)
                continue; /* an answer came in the meantime */
            how = ask_interrupted ? "interrupted" : "timeout";
            break;
        }
        struct pollfd pfd = {.fd = tty, .events = POLLIN};
        int r = poll(&pfd, tty >= 0 ? 1 : 0, 200);
        if (r > 0 && (pfd.revents & POLLIN)) {
            char buf[64] = "";
            ssize_t n = read(tty, buf, sizeof(buf) - 1);
            char c = n > 0 ? buf[0] : 'n';
            if (c == 'y' || c == 'Y' || c == 'a' || c == 'A' || c == 'n' || c == 'N') {
                _cleanup_free_ char *by = xasprintf("the terminal of paddock pid %d (uid %d)",
                                                    (int)getpid(), (int)getuid());
                pdk_error ignored = {0};
                (void)pdk_approval_answer(store, a.id, c != 'n' && c != 'N', c == 'a' || c == 'A',
                                          NULL, by, &ignored);
            } else {
                dprintf(tty, "y, n or a: ");
            }
        } else if (r > 0 && (pfd.revents & (POLLHUP | POLLERR))) {
            close(tty);
            tty = -1;
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (tty >= 0) {
        if (how && strcmp(how, "answered") != 0)
            dprintf(tty, "\n");
        close(tty);
    }
    if (!how) {
        pdk_approval_clear(&got);
        goto out;
    }
    bool approved;
    json_t *o = json_pack("{s:s, s:s}", "id", a.id, "rule", a.rule);
    if (strcmp(how, "answered") == 0) {
        approved = got.state == PDK_APPROVAL_APPROVED;
        json_object_set_new(o, "state", json_string(pdk_approval_state_name(got.state)));
        json_object_set_new(o, "by", json_string(got.answered_by ? got.answered_by : ""));
        json_object_set_new(o, "always", json_boolean(got.always));
        json_object_set_new(o, "reason", pdk_display_json_string(got.answer_reason));
        if (!approved)
            snprintf(report->message, sizeof(report->message), "denied by %s%s%s (approval %s)",
                     got.answered_by ? got.answered_by : "a human", got.answer_reason ? ": " : "",
                     got.answer_reason ? got.answer_reason : "", a.id);
    } else if (strcmp(how, "timeout") == 0) {
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

/* ---- every exec inside the sandbox ---- */

typedef struct pending_ask {
    uint64_t token;
    pid_t pid;
    char id[17];
    uint64_t deadline_ns;
    char *line;
    char **installer; /* the argv to remember as an installer's when approved, or NULL */
} pending_ask;

/* A process an `under` pattern matched when it started: its descendants are under it. */
typedef struct installer_proc {
    pid_t pid;
    unsigned long long start; /* a pid is reused */
    char **argv;              /* its first words */
} installer_proc;

#define MAX_INSTALLERS     256       /* alive at once; the oldest dead ones make room */
#define INSTALLER_WORDS    64        /* of an installer's argv kept for `under` */
#define MAX_ANCESTRY       64        /* parents looked at for `under` */
#define AUDIT_ARGS         16384     /* an argv recorded whole up to this many ... */
#define AUDIT_ARGV_BYTES   (1 << 20) /* ... and bytes; else its first words and counts */
#define AUDIT_ARGS_EXCERPT 1024
#define LINE_MAX_SHOWN     2000      /* of a command line shown on stderr */
#define SOURCED_FILE_MAX   (1 << 20) /* of a file a judged shell script sources */

/* What the run keeps for the exec listener: judge_exec and connect_allowed run on the
 * listener's thread, ask_exec and the approvals' polling on the loop; lock guards what both
 * touch (the last refusal, the rule names, the installers). */
typedef struct exec_watch {
    run_state *st;
    pthread_mutex_t lock;
    pdk_exec_handler handler;
    bool first_seen;  /* the command's own exec, judged before the sandbox was made */
    bool nested_said; /* an agent's own sandbox was said to need nested_userns */
    pdk_exec_listener *listener;
    pdk_store *store; /* for approvals, opened at the first ask */
    pending_ask *pending;
    size_t npending;
    struct event *poll_ev;
    /* The last refusal: a shell tries each directory of PATH in turn, and the same command of
     * the same process right after is refused the same way, not asked again. */
    pid_t refused_pid;
    char *refused_line;
    char *refused_message;
    installer_proc *installers;
    size_t ninstallers;
    char **known_names; /* the commands the rules name (exec_target.h's identities) */
    char *path_list;    /* the sandbox's PATH */
    char **rule_names;  /* pdk_policy_describe_rule's, by rule + 1 (0: the default), made once */
} exec_watch;

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
static char **known_command_names(const pdk_command_rules *rules)
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
        json_object_set_new(o, "argv", argv_json(argv));
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
static bool connect_allowed(void *arg, pid_t pid, const char *call)
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

static void poll_asks(evutil_socket_t fd, short what, void *arg);

static void arm_poll(exec_watch *w)
{
    struct timeval tv = {0, 200 * 1000};
    if (!w->poll_ev)
        w->poll_ev = evtimer_new(pdk_exec_listener_base(w->listener), poll_asks, w);
    if (w->poll_ev)
        evtimer_add(w->poll_ev, &tv);
}

static void finish_ask(exec_watch *w, size_t i, bool allow, json_t *event, const char *message)
{
    pending_ask *p = &w->pending[i];
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
    free(p->line);
    pdk_strv_free(p->installer);
    w->pending[i] = w->pending[--w->npending];
}

static void poll_asks(evutil_socket_t fd, short what, void *arg)
{
    exec_watch *w = arg;
    uint64_t now = pdk_now_monotonic_ns();
    for (size_t i = 0; i < w->npending;) {
        pending_ask *p = &w->pending[i];
        pdk_approval a = {0};
        pdk_error err = {0};
        if (pdk_approval_get(w->store, p->id, &a, &err) < 0) {
            i++;
            continue;
        }
        json_t *o = json_pack("{s:s, s:s, s:s}", "id", p->id, "line", p->line, "state",
                              pdk_approval_state_name(a.state));
        if (a.state == PDK_APPROVAL_PENDING && now >= p->deadline_ns &&
            pdk_approval_expire(w->store, p->id, &err) == 1) {
            bool allow = w->st->policy->approval_on_timeout == PDK_DECISION_ALLOW;
            json_object_set_new(o, "state", json_string("expired"));
            json_object_set_new(o, "on_timeout", json_string(allow ? "allow" : "deny"));
            _cleanup_free_ char *msg = xasprintf("paddock: no answer to approval %s in time: %s\n",
                                                 p->id, allow ? "run" : "denied");
            finish_ask(w, i, allow, o, msg);
        } else if (a.state == PDK_APPROVAL_APPROVED || a.state == PDK_APPROVAL_DENIED) {
            bool allow = a.state == PDK_APPROVAL_APPROVED;
            json_object_set_new(o, "by", json_string(a.answered_by ? a.answered_by : ""));
            json_object_set_new(o, "always", json_boolean(a.always));
            json_object_set_new(o, "reason", pdk_display_json_string(a.answer_reason));
            /* on the sandbox's stderr, which may be a terminal */
            _cleanup_free_ char *by = pdk_display(a.answered_by ? a.answered_by : "a human");
            _cleanup_free_ char *why = a.answer_reason ? pdk_display(a.answer_reason) : NULL;
            _cleanup_free_ char *msg = xasprintf("paddock: denied by %s%s%s (approval %s)\n", by,
                                                 why ? ": " : "", why ? why : "", p->id);
            finish_ask(w, i, allow, o, msg);
        } else {
            json_decref(o);
            i++;
        }
        pdk_approval_clear(&a);
    }
    if (w->npending > 0)
        arm_poll(w);
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
static pdk_exec_answer judge_exec(void *arg, pdk_exec_request *req, char *message,
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
        line = argv_line(req->argv); /* whole: two commands alike in what is shown differ */
        if (strcmp(line, w->refused_line) == 0) {
            /* refused the same way, and silently: the first refusal told it already */
            message[0] = '\0';
            pthread_mutex_unlock(&w->lock);
            return PDK_EXEC_DENY;
        }
    }
    pthread_mutex_unlock(&w->lock);
    if (!st->policy->nested_userns && !w->nested_said &&
        is_nested_sandbox(req->path, req->argv[0])) {
        w->nested_said = true;
        _cleanup_free_ char *what =
            xasprintf("%s (pid %d)", req->argv[0] ? req->argv[0] : req->path, (int)req->pid);
        say_nested_sandbox(st, what);
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
            line = argv_line(req->argv);
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

/* On the loop: an exec judge_exec said ask for (recorded there). */
static pdk_exec_answer ask_exec(void *arg, pdk_exec_listener *listener, pdk_exec_request *req,
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
    if (approval_ask(st, w->store, &a, &err) < 0) {
        snprintf(message, message_size, "paddock: cannot ask for approval (%s): denied\n",
                 err.message);
        pdk_approval_clear(&a);
        pdk_strv_free(installer);
        return PDK_EXEC_DENY;
    }
    w->pending = xrealloc(w->pending, (w->npending + 1) * sizeof(*w->pending));
    pending_ask *p = &w->pending[w->npending++];
    p->token = token;
    p->pid = req->pid;
    snprintf(p->id, sizeof(p->id), "%s", a.id);
    p->deadline_ns =
        pdk_now_monotonic_ns() + (uint64_t)st->policy->approval_timeout_seconds * 1000000000ULL;
    p->line = argv_line(req->argv);
    p->installer = installer;
    _cleanup_free_ char *shown = exec_line(req->argv);
    pdk_notice(PDK_NOTICE_APPROVAL, PDK_NOTICE_PRINT,
               "approval %s: `%s` (pid %d) needs a human (%s: %s); answer with paddock approve "
               "%s, or paddock deny %s",
               a.id, shown, (int)req->pid, how, v.reason, a.id, a.id);
    pdk_approval_clear(&a);
    arm_poll(w);
    return PDK_EXEC_PENDING;
}

static void exec_watch_free(exec_watch *w)
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
        free(w->pending[i].line);
        pdk_strv_free(w->pending[i].installer);
    }
    free(w->pending);
    if (w->poll_ev)
        event_free(w->poll_ev);
    pdk_store_close(w->store);
    memset(w, 0, sizeof(*w));
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
        ret = refuse_denied(&st, report, err);
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
        int a = ask_human(&st, report, err);
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
        watch.handler = (pdk_exec_handler){
            .judge = judge_exec, .ask = ask_exec, .connect = connect_allowed, .arg = &watch};
        st.watch = &watch;
    }
    st.readonly = readonly;
    if (build_config(&st, err) < 0)
        goto out;
    if (st.watch) {
        watch.known_names = known_command_names(&st.policy->commands);
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
    if (st.policy->network.enabled && !st.cfg.no_loopback && setup_egress(&st, err) < 0)
        goto out;
    char unseen_hint[sizeof(report->hint)] = "";
    check_command_visible(&st, unseen_hint, sizeof(unseen_hint));
    if (!st.policy->nested_userns && is_nested_sandbox(opt->argv[0], opt->argv[0]))
        say_nested_sandbox(&st, opt->argv[0]);
    pdk_trace("config built");

    /* While the command runs, paddock's notices go where the options say (log.h). */
    char *notice_path = NULL;
    if (pdk_notices_begin(st.state_dir, st.session->id, opt->notices, &notice_path, err) < 0)
        goto out;
    report->notice_route = opt->notices;
    if (opt->notices == PDK_NOTICES_ASIDE)
        fprintf(stderr,
                "paddock: the command has the terminal: paddock's messages go to %s while it "
                "runs (follow them with paddock approvals --watch), and a summary at the end\n",
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
            remove_placeholders(&st);
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
        exec_watch_free(st.watch);
    if (st.gateway) /* the sandbox never ran */
        st.gateway_module->destroy(st.gateway);
    free(st.egress_ports);
    free_credentials(&st);
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
