/* visibility.c: see visibility.h. */
#include "visibility.h"

#include "fsutil.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* path, and where it really is when it exists through a symlink (only then is realpath, a
 * walk of every component, worth its cost). */
static void add_hidden(char ***list, const char *path)
{
    pdk_strv_push(list, path);
    struct stat sb;
    if (lstat(path, &sb) < 0)
        return;
    char real[PATH_MAX];
    if (realpath(path, real) && strcmp(real, path) != 0)
        pdk_strv_push(list, real);
}

char **pdk_hidden_paths(char *const *homes, const pdk_policy *policy, const char *state_dir)
{
    char **list = xcalloc(1, sizeof(char *));
    for (size_t h = 0; homes && homes[h]; h++) {
        for (size_t i = 0; pdk_builtin_hidden_home[i]; i++) {
            _cleanup_free_ char *p = pdk_path_join(homes[h], pdk_builtin_hidden_home[i]);
            add_hidden(&list, p);
        }
    }
    for (size_t i = 0; policy->read_deny && policy->read_deny[i]; i++)
        add_hidden(&list, policy->read_deny[i]);
    add_hidden(&list, state_dir);
    return list;
}

static bool within_any(char *const *list, const char *path)
{
    for (size_t i = 0; list && list[i]; i++)
        if (pdk_path_is_within(path, list[i]))
            return true;
    return false;
}

static pdk_unseen check_path(const pdk_visibility *v, const char *path, char *buf, size_t len)
{
    if (within_any(v->hidden, path)) {
        snprintf(buf, len,
                 "paddock hides it: a credential location, the policy's read_deny or "
                 "paddock's state dir");
        return PDK_UNSEEN_HIDDEN;
    }
    if (within_any(v->shown, path))
        return PDK_SEEN;
    if (v->home && strcmp(v->home, "/") != 0 && pdk_path_is_within(path, v->home)) {
        snprintf(buf, len,
                 "~ (%s) inside is the sandbox's own, empty but for the policy's read_allow and "
                 "write",
                 v->home);
        return PDK_UNSEEN_HOME;
    }
    static const char *const own[] = {"/tmp", "/run", "/var/run"};
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
        if (pdk_path_is_within(path, own[i])) {
            snprintf(buf, len, "%s inside is the sandbox's own", own[i]);
            return PDK_UNSEEN_OWN;
        }
    }
    if (!v->privileged)
        return PDK_SEEN;
    /* Inside, root is not the host's root: a directory closed to others stays shut. */
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    for (char *end = dir;;) {
        end = strchr(end + 1, '/');
        if (end)
            *end = '\0';
        struct stat sb;
        if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) && !(sb.st_mode & S_IXOTH)) {
            snprintf(buf, len,
                     "only its owner may enter %s (mode %04o), and the sandbox's root is not "
                     "the host's",
                     dir, (unsigned)(sb.st_mode & 07777));
            return PDK_UNSEEN_CLOSED;
        }
        if (!end)
            return PDK_SEEN;
        *end = '/';
    }
}

pdk_unseen pdk_visibility_check(const pdk_visibility *v, const char *path, char *buf, size_t len)
{
    /* As written (a path through ~ is not there inside, wherever it leads), then where it
     * really is (a symlink into /tmp leads nowhere inside). */
    pdk_unseen unseen = check_path(v, path, buf, len);
    char real[PATH_MAX];
    if (unseen == PDK_SEEN && realpath(path, real) && strcmp(real, path) != 0) {
        char why[512];
        unseen = check_path(v, real, why, sizeof(why));
        if (unseen != PDK_SEEN)
            snprintf(buf, len, "it leads to %s, and %s", real, why);
    }
    return unseen;
}

char *pdk_visibility_advice(const pdk_visibility *v, pdk_unseen why, const char *path)
{
    switch (why) {
    case PDK_UNSEEN_HIDDEN:
        return xstrdup("it stays hidden whatever the policy says: install the tool elsewhere");
    case PDK_UNSEEN_CLOSED:
        return xstrdup("install it where other users may enter (e.g. /usr/local/bin), or run "
                       "paddock as a regular user");
    case PDK_UNSEEN_HOME:
        if (strcmp(path, v->home) != 0) {
            const char *rel = pdk_path_relative(path, v->home);
            return xasprintf("add ~/%.*s to the policy's filesystem.read_allow",
                             (int)strcspn(rel, "/"), rel);
        }
        return xstrdup("add what the command needs under ~ to the policy's filesystem.read_allow");
    case PDK_UNSEEN_OWN:
    case PDK_SEEN:
    default: {
        struct stat sb;
        bool dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
        const char *slash = strrchr(path, '/');
        return dir || !slash || slash == path
                   ? xasprintf("add %s to the policy's filesystem.read_allow", path)
                   : xasprintf("add %.*s to the policy's filesystem.read_allow",
                               (int)(slash - path), path);
    }
    }
}

bool pdk_path_lookup(const char *path_value, const char *name, const char *cwd,
                     const pdk_visibility *v, char **found)
{
    *found = NULL;
    if (!*name || strchr(name, '/'))
        return false;
    for (const char *p = path_value; p;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        _cleanup_free_ char *dir = xstrndup(p, n);
        p = colon ? colon + 1 : NULL;
        _cleanup_free_ char *abs = dir[0] == '/' ? xstrdup(dir) : pdk_path_join(cwd, dir);
        _cleanup_free_ char *full = pdk_path_join(abs, name);
        char buf[512];
        if (v && pdk_visibility_check(v, full, buf, sizeof(buf)) != PDK_SEEN)
            continue;
        struct stat sb;
        if (stat(full, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 0111)) {
            *found = steal_pointer(&full);
            return true;
        }
    }
    return false;
}
