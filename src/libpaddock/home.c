/* home.c: see home.h. */
#include "home.h"

#include "fsutil.h"
#include "policy.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory name beneath dirfd, made when missing; an fd of it (O_PATH), or -1 with
 * errno (ELOOP: a symlink, ENOTDIR: something else). */
static int make_dir_at(int dirfd, const char *name, mode_t mode)
{
    if (mkdirat(dirfd, name, mode) < 0 && errno != EEXIST)
        return -1;
    int fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 && errno == ENOTDIR && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(st.st_mode))
        errno = ELOOP;
    return fd;
}

/* The empty file name beneath dirfd, made when missing; 0, or -1 with errno. */
static int make_file_at(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    if (errno != EEXIST)
        return -1;
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -1;
    if (S_ISLNK(st.st_mode))
        return errno = ELOOP, -1;
    if (!S_ISREG(st.st_mode))
        return errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL, -1;
    return 0;
}

static int refuse(pdk_error *err, int e, const char *dir, const char *rel)
{
    if (e == ELOOP)
        return pdk_error_set(err, 0,
                             "persistent home %s: %s is a symlink, where paddock keeps an "
                             "agent's configuration read-only (remove it: rm %s/%s)",
                             dir, rel, dir, rel);
    if (e == ENOTDIR || e == EISDIR || e == EINVAL)
        return pdk_error_set(err, 0, "persistent home %s: %s is not a %s (remove it: rm -r %s/%s)",
                             dir, rel, e == EISDIR || e == EINVAL ? "regular file" : "directory",
                             dir, rel);
    return pdk_error_set(err, e, "persistent home %s: making %s", dir, rel);
}

static void push_parent(char ***parents, const char *rel)
{
    if (!pdk_strv_contains(*parents, rel))
        pdk_strv_push(parents, rel);
}

int pdk_home_prepare(const char *state_dir, const char *name, const char *const *protected,
                     char **dir_out, char ***parents_out, pdk_error *err)
{
    *dir_out = NULL;
    *parents_out = NULL;
    _cleanup_free_ char *homes = pdk_path_join(state_dir, "homes");
    _cleanup_free_ char *dir = pdk_path_join(homes, name);
    _cleanup_close_ int state_fd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (state_fd < 0)
        return pdk_error_set(err, errno, "state dir %s", state_dir);
    _cleanup_close_ int homes_fd = make_dir_at(state_fd, "homes", 0700);
    if (homes_fd < 0)
        return pdk_error_set(err, errno == ELOOP ? 0 : errno, "%s%s", homes,
                             errno == ELOOP ? " is a symlink (remove it)" : "");
    _cleanup_close_ int home_fd = make_dir_at(homes_fd, name, 0700);
    if (home_fd < 0)
        return refuse(err, errno, homes, name);

    char **parents = NULL;
    for (size_t i = 0; protected && protected[i]; i++) {
        _cleanup_free_ char *rel = xstrdup(protected[i]);
        size_t len = strlen(rel);
        bool is_dir = len > 0 && rel[len - 1] == '/';
        while (len > 0 && rel[len - 1] == '/')
            rel[--len] = '\0';
        if (len == 0 || rel[0] == '/' || strstr(rel, ".."))
            continue;
        /* Every parent, then the entry, one component at a time from the home. */
        _cleanup_close_ int at = dup(home_fd);
        if (at < 0) {
            pdk_strv_free(parents);
            return pdk_error_set(err, errno, "dup");
        }
        for (char *p = rel;; p++) {
            if (*p != '/' && *p != '\0')
                continue;
            char saved = *p;
            *p = '\0';
            const char *leaf = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
            if (saved == '/' || is_dir) {
                int next = make_dir_at(at, leaf, 0755);
                if (next < 0) {
                    pdk_strv_free(parents);
                    return refuse(err, errno, dir, rel);
                }
                close(at);
                at = next;
                if (saved == '/')
                    push_parent(&parents, rel);
            } else if (make_file_at(at, leaf) < 0) {
                pdk_strv_free(parents);
                return refuse(err, errno, dir, rel);
            }
            *p = saved;
            if (saved == '\0')
                break;
        }
    }
    if (!parents)
        parents = xcalloc(1, sizeof(char *));
    *parents_out = parents;
    *dir_out = steal_pointer(&dir);
    return 0;
}
