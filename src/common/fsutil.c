/* fsutil.c: see fsutil.h. */
#include "fsutil.h"

#include "syscalls.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int pdk_open_beneath(int dirfd, const char *relpath, int flags, mode_t mode)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC),
        .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    if (!relpath || !*relpath)
        relpath = ".";
    int fd;
    do {
        fd = pdk_sys_openat2(dirfd, relpath, &how);
    } while (fd < 0 && errno == EAGAIN);
    return fd;
}

int pdk_open_regular_beneath(int dirfd, const char *relpath)
{
    int pfd = pdk_open_beneath(dirfd, relpath, O_PATH | O_NOFOLLOW, 0);
    if (pfd < 0)
        return -1;
    struct stat st;
    if (fstat(pfd, &st) < 0) {
        int saved = errno;
        close(pfd);
        errno = saved;
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        close(pfd);
        errno = S_ISDIR(st.st_mode) ? EISDIR : ENXIO;
        return -1;
    }
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
    int fd = open(proc, O_RDONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        /* No /proc: open directly, non-blocking, and check what was opened. */
        fd = pdk_open_beneath(dirfd, relpath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
        if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
            close(fd);
            fd = -1;
            errno = ENXIO;
        }
    }
    int saved = errno;
    close(pfd);
    errno = saved;
    return fd;
}

/* name opened O_PATH without following a symlink and checked to be a regular file, then
 * reopened with flags through /proc/self/fd (opening a fifo or a device by its name can
 * block or have side effects). */
static int reopen_regular(int dirfd, const char *name, int flags)
{
    _cleanup_close_ int pfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0)
        return -1;
    struct stat st;
    if (fstat(pfd, &st) < 0)
        return -1;
    if (!S_ISREG(st.st_mode)) {
        errno = S_ISDIR(st.st_mode) ? EISDIR : S_ISLNK(st.st_mode) ? ELOOP : ENXIO;
        return -1;
    }
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
    int fd = open(proc, flags | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        /* No /proc: by name, non-blocking, and check what was opened. */
        fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
            close(fd);
            errno = ENXIO;
            return -1;
        }
        if (fd >= 0)
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    }
    return fd;
}

int pdk_read_regular_file_at(int dirfd, const char *name, char **out, size_t *out_len, size_t limit)
{
    _cleanup_close_ int fd = reopen_regular(dirfd, name, O_RDONLY);
    if (fd < 0)
        return -1;
    return pdk_read_all(fd, out, out_len, limit);
}

int pdk_open_regular_at(int dirfd, const char *name, int flags, mode_t mode)
{
    /* Non-blocking: a fifo with no reader fails (ENXIO) instead of waiting for one. */
    int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode);
    if (fd < 0)
        return -1;
    struct stat st;
    int e = fstat(fd, &st) < 0 ? errno : S_ISREG(st.st_mode) ? 0 : ENXIO;
    if (e) {
        close(fd);
        errno = e;
        return -1;
    }
    return fd; /* (O_NONBLOCK changes nothing for a regular file) */
}

int pdk_fsync_dir(int dirfd)
{
    _cleanup_close_ int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fsync(fd) < 0 && errno != EINVAL)
        return -1;
    return 0;
}

int pdk_open_parent_beneath(int dirfd, const char *relpath, bool want_read, const char **leaf)
{
    const char *slash = strrchr(relpath, '/');
    int flags = (want_read ? O_RDONLY : O_PATH) | O_DIRECTORY;
    if (!slash) {
        *leaf = relpath;
        return pdk_open_beneath(dirfd, ".", flags, 0);
    }
    *leaf = slash + 1;
    _cleanup_free_ char *parent = xstrndup(relpath, (size_t)(slash - relpath));
    return pdk_open_beneath(dirfd, parent, flags, 0);
}

int pdk_mkdir_p(const char *path, mode_t mode)
{
    _cleanup_free_ char *copy = xstrdup(path);
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(copy, mode) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(copy, mode) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

static int rm_rf_dir_contents(int dfd)
{
    int dupfd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    if (dupfd < 0)
        return -1;
    DIR *d = fdopendir(dupfd);
    if (!d) {
        close(dupfd);
        return -1;
    }
    int ret = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (pdk_rm_rf_at(dfd, de->d_name) < 0)
            ret = -1;
    }
    int saved = errno;
    closedir(d);
    errno = saved;
    return ret;
}

int pdk_rm_rf_at(int dirfd, const char *name)
{
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return -1;
    _cleanup_close_ int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0 && errno == EACCES) {
        /* A directory of ours without permissions (overlayfs makes its work/work with mode
         * 0): give it back to its owner, without following a symlink, and look again. */
        _cleanup_close_ int path =
            openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        char proc[64];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", path);
        if (path >= 0 && chmod(proc, 0700) == 0)
            sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (sub < 0)
        return errno == ENOENT ? 0 : -1;
    if (rm_rf_dir_contents(sub) < 0)
        return -1;
    if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return -1;
    return 0;
}

char *pdk_path_normalize(const char *path)
{
    if (!path || path[0] != '/')
        return NULL;
    size_t len = strlen(path);
    char *out = xmalloc(len + 2);
    size_t o = 0;
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 1 && p[0] == '.') {
            /* skip */
        } else if (n == 2 && p[0] == '.' && p[1] == '.') {
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--;
        } else {
            out[o++] = '/';
            memcpy(out + o, p, n);
            o += n;
        }
        p += n;
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    return out;
}

char *pdk_path_join(const char *a, const char *b)
{
    size_t la = strlen(a);
    while (la > 0 && a[la - 1] == '/')
        la--;
    while (*b == '/')
        b++;
    if (!*b)
        return la ? xstrndup(a, la) : xstrdup("/");
    return xasprintf("%.*s/%s", (int)la, a, b);
}

bool pdk_path_is_within(const char *path, const char *dir)
{
    if (strcmp(dir, "/") == 0)
        return path[0] == '/';
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

const char *pdk_path_relative(const char *path, const char *dir)
{
    if (strcmp(dir, "/") == 0)
        return path + 1;
    const char *rest = path + strlen(dir);
    while (*rest == '/')
        rest++;
    return rest;
}

int pdk_write_file_atomic_ex(int dirfd, const char *name, const void *content, size_t len,
                             mode_t mode, bool durable, bool *renamed)
{
    if (renamed)
        *renamed = false;
    char tmp[64];
    for (int attempt = 0;; attempt++) {
        snprintf(tmp, sizeof(tmp), ".%s.%d.%d.tmp", name[0] ? "paddock" : "x", (int)getpid(),
                 attempt);
        int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0) {
            if (errno == EEXIST && attempt < 100)
                continue;
            return -1;
        }
        if (pdk_write_all(fd, content, len) < 0 || (durable && fsync(fd) < 0)) {
            int saved = errno;
            close(fd);
            unlinkat(dirfd, tmp, 0);
            errno = saved;
            return -1;
        }
        if (close(fd) < 0) {
            int saved = errno;
            unlinkat(dirfd, tmp, 0);
            errno = saved;
            return -1;
        }
        break;
    }
    if (renameat(dirfd, tmp, dirfd, name) < 0) {
        int saved = errno;
        unlinkat(dirfd, tmp, 0);
        errno = saved;
        return -1;
    }
    if (renamed)
        *renamed = true;
    if (durable && pdk_fsync_dir(dirfd) < 0)
        return -1;
    return 0;
}

int pdk_write_file_atomic(int dirfd, const char *name, const void *content, size_t len, mode_t mode,
                          bool durable)
{
    return pdk_write_file_atomic_ex(dirfd, name, content, len, mode, durable, NULL);
}

/* Whether dirfd/name is a regular file holding exactly content. */
static bool file_holds(int dirfd, const char *name, const void *content, size_t len)
{
    _cleanup_free_ char *text = NULL;
    size_t have = 0;
    return pdk_read_regular_file_at(dirfd, name, &text, &have, len + 1) == 0 && have == len &&
           memcmp(text, content, len) == 0;
}

int pdk_write_file_once(int dirfd, const char *name, const void *content, size_t len, mode_t mode)
{
    if (file_holds(dirfd, name, content, len))
        return 0; /* the common case: read, compared, nothing written, no lock */
    /* Missing or other content (a host's bundle that changed, a file a crash tore): one
     * writer at a time, under .paddock.NAME.lock, and only when it still does not hold
     * content once the lock is ours (who waited finds the work done). Written aside,
     * synced, renamed over name: readers (and binds) see the old file or the new one,
     * whole. */
    char lock_name[PATH_MAX], tmp[PATH_MAX];
    if ((size_t)snprintf(lock_name, sizeof(lock_name), ".paddock.%s.lock", name) >=
            sizeof(lock_name) ||
        (size_t)snprintf(tmp, sizeof(tmp), ".paddock.%s.tmp", name) >= sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    _cleanup_close_ int lock =
        openat(dirfd, lock_name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lock < 0)
        return -1;
    while (flock(lock, LOCK_EX) < 0)
        if (errno != EINTR)
            return -1;
    if (file_holds(dirfd, name, content, len))
        return 0;
    (void)unlinkat(dirfd, tmp, 0); /* left by a writer killed before its rename */
    _cleanup_close_ int fd =
        openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return -1;
    if (fchmod(fd, mode) < 0 || pdk_write_all(fd, content, len) < 0 || fdatasync(fd) < 0 ||
        renameat(dirfd, tmp, dirfd, name) < 0) {
        int saved = errno;
        unlinkat(dirfd, tmp, 0);
        errno = saved;
        return -1;
    }
    return pdk_fsync_dir(dirfd);
}
