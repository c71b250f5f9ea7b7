/* statedir.c: see statedir.h. */
#include "statedir.h"

#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The home field of uid's line in /etc/passwd, or NULL. */
static char *home_from_etc_passwd(uid_t uid)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    if (pdk_read_file_at(AT_FDCWD, "/etc/passwd", &text, &len, 4u << 20) < 0)
        return NULL;
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        /* name:password:uid:gid:gecos:home:shell */
        char *field[7] = {0};
        size_t n = 0;
        for (char *p = line; n < 7; n++) {
            field[n] = p;
            p = strchr(p, ':');
            if (!p)
                break;
            *p++ = '\0';
        }
        char *end = NULL;
        if (n >= 5 && field[2][0] && strtoul(field[2], &end, 10) == uid && *end == '\0')
            return field[5][0] == '/' ? xstrdup(field[5]) : NULL;
        line = next;
    }
    return NULL;
}

char *pdk_passwd_home(uid_t uid)
{
    /* /etc/passwd first: NSS (getpwuid) costs far more, and most users are there. */
    char *home = home_from_etc_passwd(uid);
    if (!home) {
        struct passwd *pw = getpwuid(uid);
        if (pw && pw->pw_dir && pw->pw_dir[0] == '/')
            home = xstrdup(pw->pw_dir);
    }
    if (!home)
        return NULL;
    char *normal = pdk_path_normalize(home);
    free(home);
    return normal;
}

char *pdk_home_dir(void)
{
    const char *home = getenv("HOME");
    if (home && home[0] == '/')
        return pdk_path_normalize(home);
    char *pw = pdk_passwd_home(getuid());
    return pw ? pw : xstrdup("/");
}

int pdk_state_dir(bool create, char **out, pdk_error *err)
{
    _cleanup_free_ char *path = NULL;
    const char *env = getenv("PADDOCK_STATE_DIR");
    const char *xdg = getenv("XDG_STATE_HOME");
    if (env && *env) {
        if (env[0] != '/')
            return pdk_error_set(
                err, 0, "PADDOCK_STATE_DIR=%s is not an absolute path (set it to one)", env);
        path = pdk_path_normalize(env);
    } else if (xdg && xdg[0] == '/') {
        _cleanup_free_ char *x = pdk_path_normalize(xdg);
        path = pdk_path_join(x, "paddock");
    } else if (getuid() == 0) {
        path = xstrdup("/var/lib/paddock");
    } else {
        _cleanup_free_ char *home = pdk_home_dir();
        path = pdk_path_join(home, ".local/state/paddock");
    }
    if (create) {
        struct stat st;
        /* Usually there already: one lstat. */
        if (lstat(path, &st) < 0) {
            if (errno != ENOENT || pdk_mkdir_p(path, 0700) < 0)
                return pdk_error_set(err, errno, "cannot create state dir %s", path);
            if (lstat(path, &st) < 0)
                return pdk_error_set(err, errno, "state dir %s", path);
        }
        if (!S_ISDIR(st.st_mode))
            return pdk_error_set(err, ENOTDIR, "state dir %s", path);
        if (st.st_uid != getuid())
            return pdk_error_set(err, 0,
                                 "state dir %s belongs to uid %u, not to you (uid %u): set "
                                 "PADDOCK_STATE_DIR to a directory of your own",
                                 path, (unsigned)st.st_uid, (unsigned)getuid());
        if ((st.st_mode & 077) != 0 && chmod(path, 0700) < 0)
            return pdk_error_set(err, errno, "cannot make state dir %s private", path);
    }
    *out = steal_pointer(&path);
    return 0;
}
