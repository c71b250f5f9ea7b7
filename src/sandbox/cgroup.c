/* cgroup.c: see cgroup.h. */
#include "cgroup.h"

#include "fsutil.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { CTRL_MEMORY, CTRL_PIDS, CTRL_CPU, CTRL_COUNT };
static const char *const controller_names[CTRL_COUNT] = {"memory", "pids", "cpu"};

struct pdk_cgroup {
    pdk_cgroup_mode mode;
    char *v2_dir;
    int v2_fd;
    char *v1_dirs[CTRL_COUNT];
};

/* Does the list of words separated by sep contain token? */
static bool list_has(const char *list, char sep, const char *token)
{
    size_t n = strlen(token);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, sep);
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, token, n) == 0)
            return true;
        p = end ? end + 1 : NULL;
    }
    return false;
}

/* In the text of a mountinfo file: the mount point of the v1 hierarchy carrying controller
 * (or of cgroup2 when controller is NULL), or NULL. */
static char *mount_point_in(const char *mountinfo, const char *controller)
{
    for (const char *line = mountinfo; line && *line;) {
        const char *nl = strchr(line, '\n');
        _cleanup_free_ char *l = nl ? xstrndup(line, (size_t)(nl - line)) : xstrdup(line);
        line = nl ? nl + 1 : NULL;
        char *sep = strstr(l, " - ");
        if (!sep)
            continue;
        char mnt[4096], fstype[64], source[256], opts[1024];
        if (sscanf(l, "%*s %*s %*s %*s %4095s", mnt) != 1)
            continue;
        if (sscanf(sep + 3, "%63s %255s %1023s", fstype, source, opts) != 3)
            continue;
        if (controller == NULL && strcmp(fstype, "cgroup2") == 0)
            return xstrdup(mnt);
        if (controller && strcmp(fstype, "cgroup") == 0 && list_has(opts, ',', controller))
            return xstrdup(mnt);
    }
    return NULL;
}

/* In the text of a /proc/PID/cgroup file: the cgroup's path in the hierarchy with
 * controller (NULL: the v2 "0::" line), or NULL. */
static char *own_path_in(const char *proc_cgroup, const char *controller)
{
    for (const char *line = proc_cgroup; line && *line;) {
        const char *nl = strchr(line, '\n');
        _cleanup_free_ char *l = nl ? xstrndup(line, (size_t)(nl - line)) : xstrdup(line);
        line = nl ? nl + 1 : NULL;
        char *c1 = strchr(l, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        /* "ID:CONTROLLERS:PATH": the fields cut apart (the v2 line is "0::PATH") */
        *c1 = '\0';
        *c2 = '\0';
        const char *ctrls = c1 + 1;
        if (controller == NULL ? (strcmp(l, "0") == 0 && *ctrls == '\0')
                               : list_has(ctrls, ',', controller))
            return xstrdup(c2 + 1);
    }
    return NULL;
}

/* Whether a cgroup.subtree_control's text ("cpuset cpu io memory pids") enables every
 * controller paddock limits: whole words ("cpuset" is not "cpu"). */
static bool controllers_enabled(const char *subtree_control)
{
    _cleanup_free_ char *words = xstrdup(subtree_control);
    for (char *p = words; *p; p++)
        if (*p == '\n' || *p == '\t')
            *p = ' ';
    for (int i = 0; i < CTRL_COUNT; i++)
        if (!list_has(words, ' ', controller_names[i]))
            return false;
    return true;
}

static char *find_mount(const char *controller)
{
    _cleanup_free_ char *text = NULL;
    if (pdk_read_file_at(AT_FDCWD, "/proc/self/mountinfo", &text, NULL, 16u << 20) < 0)
        return NULL;
    return mount_point_in(text, controller);
}

static char *own_path(const char *controller)
{
    _cleanup_free_ char *text = NULL;
    if (pdk_read_file_at(AT_FDCWD, "/proc/self/cgroup", &text, NULL, 1u << 20) < 0)
        return NULL;
    return own_path_in(text, controller);
}

static char *v1_base(const char *controller)
{
    _cleanup_free_ char *mnt = find_mount(controller);
    _cleanup_free_ char *path = own_path(controller);
    if (!mnt || !path)
        return NULL;
    char *dir = pdk_path_join(mnt, path);
    if (access(dir, W_OK) < 0) {
        free(dir);
        return NULL;
    }
    return dir;
}

static bool v2_controllers_ok(const char *dir, bool try_enable)
{
    _cleanup_free_ char *subtree = NULL;
    _cleanup_free_ char *file = pdk_path_join(dir, "cgroup.subtree_control");
    if (pdk_read_file_at(AT_FDCWD, file, &subtree, NULL, 4096) < 0)
        return false;
    bool ok = controllers_enabled(subtree);
    if (ok || !try_enable)
        return ok;
    if (pdk_write_file_at(AT_FDCWD, file, "+memory +pids +cpu") < 0)
        return false;
    return v2_controllers_ok(dir, false);
}

static char *v2_base(bool try_enable)
{
    _cleanup_free_ char *mnt = find_mount(NULL);
    _cleanup_free_ char *path = own_path(NULL);
    if (!mnt || !path)
        return NULL;
    char *dir = pdk_path_join(mnt, path);
    if (access(dir, W_OK) < 0 || !v2_controllers_ok(dir, try_enable)) {
        free(dir);
        return NULL;
    }
    return dir;
}

void pdk_cgroup_probe_run(pdk_cgroup_probe *out)
{
    memset(out, 0, sizeof(*out));
    _cleanup_free_ char *v2mnt = find_mount(NULL);
    out->v2_mounted = v2mnt != NULL;
    _cleanup_free_ char *v2 = v2_base(false);
    out->v2_delegated = v2 != NULL;
    bool *v1[CTRL_COUNT] = {&out->v1_memory, &out->v1_pids, &out->v1_cpu};
    for (int i = 0; i < CTRL_COUNT; i++) {
        _cleanup_free_ char *d = v1_base(controller_names[i]);
        *v1[i] = d != NULL;
    }
    if (out->v2_delegated) {
        out->mode = PDK_CGROUP_V2;
        snprintf(out->detail, sizeof(out->detail), "cgroup v2, delegated at %s", v2);
    } else if (out->v1_memory && out->v1_pids) {
        out->mode = PDK_CGROUP_V1;
        snprintf(out->detail, sizeof(out->detail), "cgroup v1 controllers (memory, pids%s)%s",
                 out->v1_cpu ? ", cpu" : "",
                 out->v2_mounted ? "; cgroup v2 is mounted but not delegated with them" : "");
    } else {
        out->mode = PDK_CGROUP_NONE;
        snprintf(out->detail, sizeof(out->detail),
                 "no usable cgroup (need a delegated v2 cgroup, or root with v1 memory and "
                 "pids controllers): only rlimits apply");
    }
}

/* The cgroups that runs killed before their end left beneath base (paddock-SESSION-PID,
 * whose PID is gone): removed, once empty (rmdir refuses a cgroup with processes in it, and
 * one whose processes are still exiting is removed by a later run). */
static void remove_stale(const char *base)
{
    _cleanup_closedir_ DIR *d = opendir(base);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (!pdk_str_has_prefix(de->d_name, "paddock-") || de->d_type != DT_DIR)
            continue;
        const char *dash = strrchr(de->d_name, '-');
        char *end = NULL;
        long pid = strtol(dash + 1, &end, 10);
        if (pid <= 0 || *end || pid == getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) == 0)
            pdk_debug("removed the cgroup %s/%s of a run that was killed", base, de->d_name);
    }
}

static int write_limit(const char *dir, const char *file, const char *value, pdk_error *err)
{
    _cleanup_free_ char *path = pdk_path_join(dir, file);
    if (pdk_write_file_at(AT_FDCWD, path, value) < 0)
        return pdk_error_set(err, errno, "cannot set %s to %s", path, value);
    return 0;
}

static int setup_v2(pdk_cgroup *cg, const char *base, const char *name,
                    const pdk_cgroup_limits *limits, pdk_error *err)
{
    remove_stale(base);
    cg->v2_dir = pdk_path_join(base, name);
    if (mkdir(cg->v2_dir, 0755) < 0)
        return pdk_error_set(err, errno, "cannot create cgroup %s", cg->v2_dir);
    char v[64];
    if (limits->memory_bytes > 0) {
        snprintf(v, sizeof(v), "%lld", (long long)limits->memory_bytes);
        if (write_limit(cg->v2_dir, "memory.max", v, err) < 0)
            return -1;
        _cleanup_free_ char *swap = pdk_path_join(cg->v2_dir, "memory.swap.max");
        if (access(swap, F_OK) == 0)
            (void)pdk_write_file_at(AT_FDCWD, swap, "0");
    }
    if (limits->pids > 0) {
        snprintf(v, sizeof(v), "%lld", (long long)limits->pids);
        if (write_limit(cg->v2_dir, "pids.max", v, err) < 0)
            return -1;
    }
    if (limits->cpu_millicores > 0) {
        snprintf(v, sizeof(v), "%lld 100000", (long long)limits->cpu_millicores * 100);
        if (write_limit(cg->v2_dir, "cpu.max", v, err) < 0)
            return -1;
    }
    cg->v2_fd = open(cg->v2_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cg->v2_fd < 0)
        return pdk_error_set(err, errno, "cannot open cgroup %s", cg->v2_dir);
    cg->mode = PDK_CGROUP_V2;
    return 0;
}

static int setup_v1(pdk_cgroup *cg, const char *name, const pdk_cgroup_limits *limits,
                    pdk_error *err)
{
    cg->mode = PDK_CGROUP_V1;
    const int64_t wanted[CTRL_COUNT] = {limits->memory_bytes, limits->pids, limits->cpu_millicores};
    for (int i = 0; i < CTRL_COUNT; i++) {
        if (wanted[i] <= 0)
            continue;
        _cleanup_free_ char *base = v1_base(controller_names[i]);
        if (!base) {
            if (i == CTRL_CPU) {
                pdk_warn("no cgroup v1 cpu controller: the cpu limit is not applied");
                continue;
            }
            if (i == CTRL_PIDS)
                continue; /* RLIMIT_NPROC still applies */
            return pdk_error_set(err, 0, "no writable cgroup v1 %s controller",
                                 controller_names[i]);
        }
        remove_stale(base);
        cg->v1_dirs[i] = pdk_path_join(base, name);
        if (mkdir(cg->v1_dirs[i], 0755) < 0) {
            int e = errno;
            free(cg->v1_dirs[i]);
            cg->v1_dirs[i] = NULL;
            return pdk_error_set(err, e, "cannot create cgroup %s/%s", base, name);
        }
        char v[64];
        switch (i) {
        case CTRL_MEMORY: {
            snprintf(v, sizeof(v), "%lld", (long long)wanted[i]);
            if (write_limit(cg->v1_dirs[i], "memory.limit_in_bytes", v, err) < 0)
                return -1;
            _cleanup_free_ char *memsw =
                pdk_path_join(cg->v1_dirs[i], "memory.memsw.limit_in_bytes");
            if (access(memsw, F_OK) == 0 &&
                write_limit(cg->v1_dirs[i], "memory.memsw.limit_in_bytes", v, err) < 0)
                return -1;
            break;
        }
        case CTRL_PIDS:
            snprintf(v, sizeof(v), "%lld", (long long)wanted[i]);
            if (write_limit(cg->v1_dirs[i], "pids.max", v, err) < 0)
                return -1;
            break;
        case CTRL_CPU:
            if (write_limit(cg->v1_dirs[i], "cpu.cfs_period_us", "100000", err) < 0)
                return -1;
            snprintf(v, sizeof(v), "%lld", (long long)wanted[i] * 100);
            if (write_limit(cg->v1_dirs[i], "cpu.cfs_quota_us", v, err) < 0)
                return -1;
            break;
        default:
            break;
        }
    }
    return 0;
}

int pdk_cgroup_create(const char *name, const pdk_cgroup_limits *limits, bool allow_missing,
                      pdk_cgroup **out, pdk_error *err)
{
    *out = NULL;
    /* pids alone is enforced by RLIMIT_NPROC in the sandbox's user namespace; a cgroup is
     * made when memory or cpu needs one (and then carries pids too). */
    if (limits->memory_bytes <= 0 && limits->cpu_millicores <= 0)
        return 0;
    pdk_cgroup *cg = xcalloc(1, sizeof(*cg));
    cg->v2_fd = -1;
    _cleanup_free_ char *v2 = v2_base(geteuid() == 0);
    int r;
    if (v2) {
        r = setup_v2(cg, v2, name, limits, err);
    } else {
        _cleanup_free_ char *mem = v1_base("memory");
        if (limits->memory_bytes > 0 && !mem) {
            free(cg);
            if (allow_missing) {
                pdk_warn("no usable cgroup for limits.memory: not applied (see 'paddock "
                         "doctor')");
                return 0;
            }
            return pdk_error_set(err, 0,
                                 "the policy sets limits.memory but no cgroup is usable (see "
                                 "'paddock doctor'): set limits.memory to 0, or pass "
                                 "--allow-degraded");
        }
        r = setup_v1(cg, name, limits, err);
    }
    if (r < 0) {
        pdk_cgroup_destroy(cg);
        return -1;
    }
    *out = cg;
    return 0;
}

int pdk_cgroup_clone_fd(const pdk_cgroup *cg)
{
    return cg && cg->mode == PDK_CGROUP_V2 ? cg->v2_fd : -1;
}

pdk_cgroup_mode pdk_cgroup_mode_of(const pdk_cgroup *cg)
{
    return cg ? cg->mode : PDK_CGROUP_NONE;
}

int pdk_cgroup_attach(pdk_cgroup *cg, pid_t pid, pdk_error *err)
{
    if (!cg || cg->mode != PDK_CGROUP_V1)
        return 0;
    char v[32];
    snprintf(v, sizeof(v), "%d", (int)pid);
    for (int i = 0; i < CTRL_COUNT; i++) {
        if (!cg->v1_dirs[i])
            continue;
        if (write_limit(cg->v1_dirs[i], "cgroup.procs", v, err) < 0)
            return -1;
    }
    return 0;
}

void pdk_cgroup_destroy(pdk_cgroup *cg)
{
    if (!cg)
        return;
    if (cg->v2_fd >= 0)
        close(cg->v2_fd);
    if (cg->v2_dir && rmdir(cg->v2_dir) < 0 && errno != ENOENT)
        pdk_warn("cannot remove cgroup %s: %s", cg->v2_dir, strerror(errno));
    free(cg->v2_dir);
    for (int i = 0; i < CTRL_COUNT; i++) {
        if (cg->v1_dirs[i] && rmdir(cg->v1_dirs[i]) < 0 && errno != ENOENT)
            pdk_warn("cannot remove cgroup %s: %s", cg->v1_dirs[i], strerror(errno));
        free(cg->v1_dirs[i]);
    }
    free(cg);
}
