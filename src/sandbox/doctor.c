/* doctor.c: see doctor.h. */
#include "doctor.h"

#include "cgroup.h"
#include "fsutil.h"
#include "landlock.h"
#include "mounts.h"
#include "namespaces.h"
#include "seccomp_filter.h"
#include "statedir.h"
#include "visibility.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pdk_check *add(pdk_doctor_report *r, const char *name, pdk_check_status status, int value)
{
    pdk_check *c = &r->checks[r->count++];
    memset(c, 0, sizeof(*c));
    c->name = name;
    c->status = status;
    c->value = value;
    if (status == PDK_CHECK_FAIL)
        r->ok = false;
    return c;
}

static PDK_PRINTF(3, 4) void say(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* The PATH of a sandbox of policy in the current directory: each entry, and whether the
 * sandbox sees it (visibility.h), as the check "path". */
static void check_path(pdk_doctor_report *r, const pdk_policy *policy)
{
    _cleanup_free_ char *home = pdk_home_dir();
    _cleanup_free_ char *passwd_home = pdk_passwd_home(getuid());
    _cleanup_free_ char *state = NULL;
    if (pdk_state_dir(false, &state, NULL) < 0)
        state = NULL;
    _cleanup_free_ char *cwd = getcwd(NULL, 0);
    char *homes[3] = {
        home, passwd_home && (!home || strcmp(home, passwd_home) != 0) ? passwd_home : NULL, NULL};
    _cleanup_strv_ char **hidden = pdk_hidden_paths(home ? homes : homes + 1, policy,
                                                    state ? state : "/nonexistent/paddock-state");
    _cleanup_strv_ char **shown = xcalloc(1, sizeof(char *));
    if (cwd)
        pdk_strv_push(&shown, cwd);
    for (int pass = 0; pass < 2; pass++) {
        char **list = pass == 0 ? policy->read_allow : policy->write;
        for (size_t i = 0; list && list[i]; i++) {
            bool is_hidden = false;
            for (size_t h = 0; hidden[h] && !is_hidden; h++)
                is_hidden = pdk_path_is_within(list[i], hidden[h]);
            if (!is_hidden)
                pdk_strv_push(&shown, list[i]);
        }
    }
    pdk_visibility v = {
        .home = home, .shown = shown, .hidden = hidden, .privileged = geteuid() == 0};
    /* The sandbox's PATH: the policy's env.set, else the caller's (environ.c). */
    const char *path_value = getenv("PATH");
    for (size_t i = 0; i < policy->env_set_count; i++)
        if (strcmp(policy->env_set[i].name, "PATH") == 0)
            path_value = policy->env_set[i].value;
    if (!path_value || !*path_value)
        path_value = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

    pdk_buf unseen = {0};
    size_t unseen_count = 0, total = 0;
    for (const char *p = path_value; p;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        r->path = xrealloc(r->path, (r->path_count + 1) * sizeof(*r->path));
        pdk_path_entry *e = &r->path[r->path_count++];
        memset(e, 0, sizeof(*e));
        e->dir = xstrndup(p, n);
        p = colon ? colon + 1 : NULL;
        total++;
        _cleanup_free_ char *abs =
            e->dir[0] == '/' ? xstrdup(e->dir) : pdk_path_join(cwd ? cwd : "/", e->dir);
        for (size_t len = strlen(abs); len > 1 && abs[len - 1] == '/'; len--)
            abs[len - 1] = '\0';
        char why[600];
        struct stat sb;
        e->exists = stat(abs, &sb) == 0 && S_ISDIR(sb.st_mode);
        /* an entry that is not here resolves nothing anywhere: no difference */
        pdk_unseen u = e->exists ? pdk_visibility_check(&v, abs, why, sizeof(why)) : PDK_SEEN;
        e->seen = u == PDK_SEEN;
        if (e->seen)
            continue;
        e->why = xstrdup(why);
        e->advice = pdk_visibility_advice(&v, u, abs);
        pdk_buf_printf(&unseen, "%s%s", unseen_count++ ? ", " : "", e->dir);
    }
    pdk_check *c = add(r, "path", unseen_count ? PDK_CHECK_WARN : PDK_CHECK_OK, (int)unseen_count);
    if (unseen_count) {
        say(c->detail, sizeof(c->detail), "%zu of %zu PATH entries will not resolve inside: %s",
            unseen_count, total, unseen.data);
        say(c->action, sizeof(c->action),
            "commands there are missing in the sandbox (exit 127), or another of the same name "
            "runs instead; each entry below says why and what to do");
    } else {
        say(c->detail, sizeof(c->detail), "every PATH entry (%zu) resolves inside as here", total);
    }
    pdk_buf_free(&unseen);
}

void pdk_doctor_report_free(pdk_doctor_report *r)
{
    for (size_t i = 0; i < r->path_count; i++) {
        free(r->path[i].dir);
        free(r->path[i].why);
        free(r->path[i].advice);
    }
    free(r->path);
    r->path = NULL;
    r->path_count = 0;
}

int pdk_doctor_run(pdk_doctor_report *r, const pdk_doctor_options *options, pdk_error *err)
{
    memset(r, 0, sizeof(*r));
    r->ok = true;
    _cleanup_free_ char *home_for_policy = pdk_home_dir();
    pdk_policy_context ctx = {.home = home_for_policy};
    pdk_policy *policy = NULL;
    if (options && options->policy_path
            ? pdk_policy_load_file(options->policy_path, &ctx, &policy, NULL, err) < 0
            : pdk_policy_load_default(&ctx, &policy, err) < 0)
        return -1;
    pdk_check *c;

    int e = pdk_namespaces_probe();
    c = add(r, "userns", e ? PDK_CHECK_FAIL : PDK_CHECK_OK, -1);
    if (e) {
        say(c->detail, sizeof(c->detail),
            "cannot create user, mount, pid, net, ipc, uts "
            "and cgroup namespaces: %s",
            strerror(e));
        say(c->action, sizeof(c->action),
            "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 "
            "or user.max_user_namespaces > 0; on Ubuntu also the AppArmor userns "
            "restriction): paddock run cannot work without them");
    } else {
        say(c->detail, sizeof(c->detail),
            "user, mount, pid, net, ipc, uts and cgroup "
            "namespaces can be created");
    }

    int abi = pdk_landlock_abi();
    c = add(r, "landlock",
            abi >= 6   ? PDK_CHECK_OK
            : abi >= 1 ? PDK_CHECK_WARN
                       : PDK_CHECK_FAIL,
            abi);
    say(c->detail, sizeof(c->detail), "Landlock ABI %d", abi);
    if (abi < 1)
        say(c->action, sizeof(c->action),
            "the built-in policy needs ABI 1: paddock run refuses unless --allow-degraded "
            "or landlock.min_abi: 0");
    else if (abi < 6)
        say(c->action, sizeof(c->action), "applied without %s", pdk_landlock_missing(abi));
    else
        say(c->action, sizeof(c->action),
            "filesystem rules, TCP port rules when the policy "
            "gives them, abstract-socket and signal scoping");

    e = pdk_seccomp_probe();
    c = add(r, "seccomp", e ? PDK_CHECK_FAIL : PDK_CHECK_OK, -1);
    say(c->detail, sizeof(c->detail),
        e ? "a seccomp filter cannot be installed: %s"
          : "the sandbox's filter installs and denies ptrace",
        e ? strerror(e) : "");
    if (e)
        say(c->action, sizeof(c->action),
            "paddock run refuses (a filter that cannot be "
            "installed never degrades silently)");

    e = pdk_mounts_probe_overlay();
    c = add(r, "overlay", e ? PDK_CHECK_WARN : PDK_CHECK_OK, -1);
    say(c->detail, sizeof(c->detail),
        e ? "overlayfs cannot be mounted in a user namespace: %s"
          : "overlayfs mounts in a user namespace (userxattr)",
        e ? strerror(e) : "");
    if (e)
        say(c->action, sizeof(c->action),
            "use --workspace-mode direct (no review before "
            "changes land)");

    if (geteuid() == 0) {
        _cleanup_free_ char *state = NULL;
        if (pdk_state_dir(false, &state, NULL) < 0)
            state = xstrdup("/var/lib");
        /* The closest existing ancestor of the state dir. */
        _cleanup_free_ char *probe_path = xstrdup(state);
        struct stat st;
        while (stat(probe_path, &st) < 0 && strrchr(probe_path, '/') != probe_path)
            *strrchr(probe_path, '/') = '\0';
        e = pdk_mounts_probe_idmap(probe_path);
        c = add(r, "idmap", e ? PDK_CHECK_WARN : PDK_CHECK_OK, -1);
        say(c->detail, sizeof(c->detail),
            e ? "idmapped mounts on %s fail: %s" : "idmapped mounts work on %s%s", probe_path,
            e ? strerror(e) : "");
        say(c->action, sizeof(c->action),
            e ? "as root, workspaces and the state dir must be on a filesystem with idmapped "
                "mounts (ext4, xfs, btrfs, tmpfs), or run paddock as a regular user"
              : "as root the sandbox runs as host uid %u, files keep their owners",
            (unsigned)PDK_HOST_ID_BASE);
    }

    pdk_cgroup_probe cg;
    pdk_cgroup_probe_run(&cg);
    c = add(r, "cgroup", cg.mode == PDK_CGROUP_NONE ? PDK_CHECK_WARN : PDK_CHECK_OK, (int)cg.mode);
    say(c->detail, sizeof(c->detail), "%s", cg.detail);
    say(c->action, sizeof(c->action), "%s",
        cg.mode == PDK_CGROUP_V2 ? "limits.memory/cpu use cgroup v2 (CLONE_INTO_CGROUP)"
        : cg.mode == PDK_CGROUP_V1
            ? "limits.memory/cpu use the v1 controllers (each attach waits for an RCU grace "
              "period); limits.pids uses RLIMIT_NPROC per sandbox"
            : "limits.memory/cpu cannot be applied (refused unless --allow-degraded); "
              "limits.pids uses RLIMIT_NPROC per sandbox");

    _cleanup_free_ char *tiocsti = NULL;
    bool legacy =
        pdk_read_file_at(AT_FDCWD, "/proc/sys/dev/tty/legacy_tiocsti", &tiocsti, NULL, 64) == 0 &&
        tiocsti[0] == '1';
    c = add(r, "tiocsti", legacy ? PDK_CHECK_WARN : PDK_CHECK_OK, legacy ? 1 : 0);
    say(c->detail, sizeof(c->detail),
        legacy ? "legacy TIOCSTI is enabled (dev.tty.legacy_tiocsti=1)"
               : "legacy TIOCSTI is disabled");
    say(c->action, sizeof(c->action), "%s",
        legacy ? "the seccomp filter denies TIOCSTI and TIOCLINUX (any upper bits), and the "
                 "command has no controlling terminal unless --tty"
               : "the seccomp filter denies TIOCSTI and TIOCLINUX anyway");

    check_path(r, policy);
    pdk_policy_free(policy);
    return 0;
}

const char *pdk_check_status_name(pdk_check_status status)
{
    switch (status) {
    case PDK_CHECK_OK:
        return "ok";
    case PDK_CHECK_WARN:
        return "warn";
    case PDK_CHECK_FAIL:
        return "fail";
    default:
        return "?";
    }
}
