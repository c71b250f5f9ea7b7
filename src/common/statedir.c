/* statedir.c: see statedir.h. */
#include "statedir.h"

#include "display.h"
#include "fsutil.h"

#include <dirent.h>
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

/* Directories every user of the machine shares or the system owns: never a state dir,
 * whatever their mode says (as root, / and /root look private). Checked on the path alone,
 * before anything touches the disk. */
static bool is_system_directory(const char *path)
{
    static const char *const top[] = {"/",    "/bin",   "/boot",  "/dev",    "/etc",   "/home",
                                      "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt",
                                      "/opt", "/proc",  "/root",  "/run",    "/sbin",  "/snap",
                                      "/srv", "/sys",   "/tmp",   "/usr",    "/var",   NULL};
    static const char *const local[] = {"bin", "etc",  "games", "include", "lib",
                                        "man", "sbin", "share", "src",     NULL};
    for (size_t i = 0; top[i]; i++)
        if (strcmp(path, top[i]) == 0)
            return true;
    if (pdk_path_is_within(path, "/proc") || pdk_path_is_within(path, "/sys") ||
        pdk_path_is_within(path, "/dev"))
        return true;
    /* /usr/X and /var/X (/var/lib, /var/tmp, /usr/local...), /usr/local/X. */
    for (size_t i = 0; i < 2; i++) {
        const char *base = i == 0 ? "/usr/" : "/var/";
        if (pdk_str_has_prefix(path, base) && !strchr(path + 5, '/'))
            return true;
    }
    if (pdk_str_has_prefix(path, "/usr/local/"))
        for (size_t i = 0; local[i]; i++)
            if (strcmp(path + strlen("/usr/local/"), local[i]) == 0)
                return true;
    /* The home directory itself (a state dir inside it is fine). */
    _cleanup_free_ char *home = pdk_home_dir();
    _cleanup_free_ char *passwd = pdk_passwd_home(getuid());
    return (home && strcmp(path, home) == 0) || (passwd && strcmp(path, passwd) == 0);
}

/* What paddock itself puts in a state dir (and earlier versions did, before they marked
 * their state dirs): a directory that holds only these is paddock's own. */
static bool is_paddock_entry(const char *name)
{
    static const char *const names[] = {
        PDK_STATE_DIR_MARKER, "sessions",     "audit-spool", "vault", "vault.key",
        "vault.lock",         "vault.locks",  "vault.new",   "ca",    "placeholders",
        "resolv.conf",        "paddock.sock", "notices",     "homes", NULL};
    for (size_t i = 0; names[i]; i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return pdk_str_has_prefix(name, "paddock.db") || pdk_str_has_prefix(name, ".paddock.") ||
           pdk_str_has_prefix(name, "vault.key.") || strcmp(name, "store.lock") == 0 ||
           strcmp(name, "audit-head") == 0 ||      /* store.h, audit.c */
           strcmp(name, "home-placeholders") == 0; /* home.h */
}

/* 1 when the state dir holds only what paddock puts there (*foreign: NULL), 0 when it holds
 * something else (*foreign: its name), -1 with errno. */
static int only_paddock_entries(const char *path, char **foreign)
{
    *foreign = NULL;
    _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d)
        return -1;
    fd = -1; /* closedir closes it */
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            is_paddock_entry(de->d_name))
            continue;
        *foreign = xstrdup(de->d_name);
        break;
    }
    closedir(d);
    return *foreign ? 0 : 1;
}

/* Mark a state dir as paddock's (made or adopted by it); a failure only means the next
 * run looks at its entries again. */
static void write_marker(const char *path)
{
    _cleanup_free_ char *marker = pdk_path_join(path, PDK_STATE_DIR_MARKER);
    static const char text[] = "paddock's state directory (sessions, audit log, vault): keep "
                               "it private; see paddock(1)\n";
    _cleanup_close_ int fd =
        open(marker, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0)
        (void)pdk_write_all(fd, text, sizeof(text) - 1);
}

/* A state dir paddock may use: a private directory of the caller's that paddock made, or
 * one that holds nothing but what paddock puts there. Nothing is ever changed on a
 * directory that fails the checks (no chmod: a state dir at / once made every other user's
 * processes fail). create: make it (0700) when it is missing, and mark it. */
static int check_state_dir(const char *path, bool create, pdk_error *err)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (errno != ENOENT)
            return pdk_error_set(err, errno, "state dir %s", path);
        if (!create)
            return 0; /* nothing there yet: read as empty */
        _cleanup_free_ char *parent = xstrdup(path);
        *strrchr(parent, '/') = '\0';
        if ((parent[0] && pdk_mkdir_p(parent, 0700) < 0) ||
            (mkdir(path, 0700) < 0 && errno != EEXIST))
            return pdk_error_set(err, errno, "cannot create state dir %s", path);
        if (lstat(path, &st) < 0)
            return pdk_error_set(err, errno, "state dir %s", path);
    }
    if (S_ISLNK(st.st_mode))
        return pdk_error_set(err, 0,
                             "state dir %s is a symlink: set PADDOCK_STATE_DIR to the directory "
                             "itself",
                             path);
    if (!S_ISDIR(st.st_mode))
        return pdk_error_set(err, 0,
                             "state dir %s is not a directory (remove it, or set "
                             "PADDOCK_STATE_DIR elsewhere)",
                             path);
    if (st.st_uid != getuid())
        return pdk_error_set(err, 0,
                             "state dir %s belongs to uid %u, not to you (uid %u): set "
                             "PADDOCK_STATE_DIR to a directory of your own",
                             path, (unsigned)st.st_uid, (unsigned)getuid());
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return pdk_error_set(err, 0,
                             "state dir %s can be written by other users (mode %04o): set "
                             "PADDOCK_STATE_DIR to a directory of your own (a path that does "
                             "not exist yet is made private)",
                             path, (unsigned)(st.st_mode & 07777));
    if (st.st_mode & (S_IRWXG | S_IRWXO))
        return pdk_error_set(err, 0,
                             "state dir %s can be read by other users (mode %04o): make it "
                             "private (chmod 700 %s), or set PADDOCK_STATE_DIR to a new path",
                             path, (unsigned)(st.st_mode & 07777), path);
    /* Usually marked: one more stat. */
    _cleanup_free_ char *marker = pdk_path_join(path, PDK_STATE_DIR_MARKER);
    struct stat ms;
    if (lstat(marker, &ms) == 0 && S_ISREG(ms.st_mode))
        return 0;
    _cleanup_free_ char *foreign = NULL;
    int only = only_paddock_entries(path, &foreign);
    if (only < 0)
        return pdk_error_set(err, errno, "cannot read state dir %s", path);
    if (only == 0) {
        _cleanup_free_ char *shown = pdk_display(foreign);
        return pdk_error_set(err, 0,
                             "state dir %s holds files that are not paddock's (%s, ...): set "
                             "PADDOCK_STATE_DIR to an empty directory or to a new path",
                             path, shown);
    }
    if (create)
        write_marker(path);
    return 0;
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
    if (is_system_directory(path))
        return pdk_error_set(err, 0,
                             "state dir %s is a system or shared directory, which paddock never "
                             "takes over: set PADDOCK_STATE_DIR to a path of its own (paddock "
                             "creates it)",
                             path);
    if (check_state_dir(path, create, err) < 0)
        return -1;
    *out = steal_pointer(&path);
    return 0;
}
