/* fsutil.h: fd-relative, race-free filesystem helpers.
 *
 * Everything that touches a tree another party may write to (a session layer the sandbox
 * wrote, a workspace another process may change) goes through these: paths are resolved
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) so that no
 * symlink, ".." or magic link can lead outside the directory fd they start from.
 */
#ifndef PADDOCK_FSUTIL_H
#define PADDOCK_FSUTIL_H

#include "error.h"

#include <sys/stat.h>

/* openat2 confined beneath dirfd, never following any symlink (including the last
 * component, unless flags has O_PATH|O_NOFOLLOW semantics wanted by the caller).
 * Returns an fd or -1 with errno (ELOOP/EXDEV when a symlink or escape was refused). */
int pdk_open_beneath(int dirfd, const char *relpath, int flags, mode_t mode);

/* Open the parent directory of relpath beneath dirfd (O_PATH|O_DIRECTORY unless
 * want_read, then O_RDONLY|O_DIRECTORY) and return the last component in *leaf
 * (pointing into relpath). relpath must be relative and must not end in "/". */
int pdk_open_parent_beneath(int dirfd, const char *relpath, bool want_read, const char **leaf);

/* Open the regular file relpath beneath dirfd for reading, as pdk_open_beneath does, but
 * never open anything else: the entry is first opened O_PATH and checked, then reopened
 * through /proc/self/fd, so a fifo or device swapped in meanwhile is never opened (opening
 * one can block or have side effects). Returns an fd or -1 with errno (EISDIR or ENXIO
 * when the entry is not a regular file). */
int pdk_open_regular_beneath(int dirfd, const char *relpath);

/* Read the whole regular file name (relative to dirfd, or absolute) into a new
 * NUL-terminated buffer, as pdk_read_file_at does, but never open anything else: a fifo
 * or device where a state file should be is an error (errno EISDIR or ENXIO), not a read
 * that waits forever. A symlink is not followed (ELOOP). */
int pdk_read_regular_file_at(int dirfd, const char *name, char **out, size_t *out_len,
                             size_t limit);

/* Open name relative to dirfd with flags (access mode, O_CREAT...) and mode, without
 * following a symlink and without waiting on a fifo: anything but a regular file there is
 * an error (errno ENXIO, EISDIR or ELOOP). For the state dir's own files (locks, drafts). */
int pdk_open_regular_at(int dirfd, const char *name, int flags, mode_t mode);

/* fsync a directory given by any fd of it (O_PATH included): what makes a rename or a new
 * entry in it durable. Returns 0 or -1 with errno; a filesystem that cannot sync a
 * directory (EINVAL) counts as done. */
int pdk_fsync_dir(int dirfd);

/* mkdir -p for an absolute or relative path (plain paths; for trusted locations such as
 * the state dir). Missing parents are created with mode. */
int pdk_mkdir_p(const char *path, mode_t mode);

/* Remove name (file, symlink or whole directory tree) inside dirfd without following
 * symlinks. Missing is not an error. Returns 0 or -1 with errno. */
int pdk_rm_rf_at(int dirfd, const char *name);

/* Lexically normalise an absolute path: collapse "//", "/./" and resolve ".." without
 * touching the filesystem. Returns a new string, or NULL when path is not absolute. */
char *pdk_path_normalize(const char *path);

/* Join two path pieces with exactly one "/" between them. */
char *pdk_path_join(const char *a, const char *b);

/* True when path equals dir or lies beneath it (both normalised, absolute). */
bool pdk_path_is_within(const char *path, const char *dir);

/* Return path relative to dir when pdk_path_is_within(path, dir): "" for dir itself. */
const char *pdk_path_relative(const char *path, const char *dir);

/* Write content to dirfd/name atomically: temporary file in the same directory, fsync when
 * durable, rename over name (and, when durable, the directory synced). Returns 0 or -1
 * with errno; nothing is left behind on error, but when only the directory's sync failed
 * (*renamed, when given, is then true) name already holds the new content, not yet known
 * to be on the disk. */
int pdk_write_file_atomic(int dirfd, const char *name, const void *content, size_t len, mode_t mode,
                          bool durable);
/* Make dirfd/name hold content, writing only when it does not already: a file that many
 * runs bind into their sandboxes at once (resolv.conf, the CA bundle) is read and compared
 * by each, and written by one (under dirfd/.paddock.NAME.lock) only when missing or
 * different; the new content is synced and renamed over name, so readers and binds see a
 * whole file, old or new, and a crash never leaves a torn one. Returns 0 or -1 with errno. */
int pdk_write_file_once(int dirfd, const char *name, const void *content, size_t len, mode_t mode);
int pdk_write_file_atomic_ex(int dirfd, const char *name, const void *content, size_t len,
                             mode_t mode, bool durable, bool *renamed);

#endif
