/* changes.h: what a session's overlay upper layer changed, against the real workspace.
 *
 * The upper layer is what the sandbox wrote, so it is hostile input: the scan never follows
 * a symlink in it (symlinks are content), opens every entry fd-relative with O_NOFOLLOW and
 * checks the type of what it opened. The real workspace (the overlay's lower layer) is read
 * the same way, since another process may change it during the scan.
 *
 * Upper-layer format (overlayfs, mounted with "userxattr"; the "trusted.overlay." prefix of
 * a root mount is accepted too):
 *   whiteout            character device 0:0: the lower entry of that name is deleted
 *   opaque directory    xattr overlay.opaque = "y": nothing of the lower directory shows
 *   copied-up entry     xattr overlay.origin: a file handle of the lower inode it came from
 * Directories the overlay copied up only because a child changed are not changes; neither
 * are regular files copied up without modification (same content and permission bits).
 */
#ifndef PADDOCK_CHANGES_H
#define PADDOCK_CHANGES_H

#include "error.h"

#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

typedef enum pdk_change_status {
    PDK_CHANGE_ADDED = 0,
    PDK_CHANGE_MODIFIED = 1, /* content, permission bits (07777) or symlink target */
    PDK_CHANGE_DELETED = 2,
    PDK_CHANGE_TYPE_CHANGED = 3, /* file <-> dir <-> symlink <-> other */
} pdk_change_status;

typedef enum pdk_change_kind {
    PDK_KIND_NONE = 0, /* absent on that side */
    PDK_KIND_FILE = 1,
    PDK_KIND_DIR = 2,
    PDK_KIND_SYMLINK = 3,
    PDK_KIND_OTHER = 4, /* fifo, socket, device (other than a whiteout) */
} pdk_change_kind;

typedef struct pdk_change {
    char *path; /* workspace-relative, no leading or trailing '/' */
    pdk_change_status status;
    pdk_change_kind old_kind; /* PDK_KIND_NONE when added */
    pdk_change_kind new_kind; /* PDK_KIND_NONE when deleted */
    mode_t old_mode;          /* full st_mode of the real entry; 0 when absent */
    mode_t new_mode;          /* full st_mode of the upper entry; 0 when absent */
    int64_t old_size;         /* st_size; 0 when absent */
    int64_t new_size;
    char *old_target; /* symlink targets, NULL unless that side is a symlink */
    char *new_target;
    bool content_changed;   /* files: bytes differ; symlinks: target differs */
    bool has_origin;        /* the upper entry carries an overlay.origin xattr */
    bool origin_elsewhere;  /* ... naming a real entry that still exists at another path
                             * (a rename or hard link made in the sandbox). When the
                             * origin is empty (an overlay mounted in a user namespace
                             * cannot encode file handles), see resolve_origins() in
                             * changes.c for the rule used instead. */
    bool whiteout;          /* deleted by a whiteout at this very path (not by an
                             * opaque or deleted ancestor) */
    int64_t lower_ctime_ns; /* ctime of the real entry at scan time; -1 when absent */
    uid_t new_uid;          /* owner of the upper entry */
    gid_t new_gid;
    struct timespec new_mtime;
} pdk_change;

typedef struct pdk_change_list {
    pdk_change *items; /* sorted by path, byte order */
    size_t count;
    char **opaque_dirs; /* upper directories marked opaque (sorted; NULL-terminated or NULL) */
} pdk_change_list;

/* Scan the upper layer against the lower (the real workspace). Both fds are directories
 * (O_PATH is enough). ignore lists workspace-relative paths paddock created as mount points:
 * exactly those entries (and anything beneath them) are skipped on both sides. On success
 * *out holds the changes (free with pdk_change_list_free); on error -1 and err names the
 * path. */
int pdk_changes_scan(int lower_dirfd, int upper_dirfd, char *const *ignore, pdk_change_list *out,
                     pdk_error *err);

void pdk_change_list_free(pdk_change_list *list);

/* The number of changes a person would count: every entry but directories whose only
 * change is their mode or their contents (those show as their children). */
size_t pdk_changes_count(const pdk_change_list *list);

/* The change at exactly path, or NULL. */
const pdk_change *pdk_changes_find(const pdk_change_list *list, const char *path);

/* True when select is NULL or empty, or path equals an entry of select or lies beneath one
 * (entries are workspace-relative; "./" prefixes and trailing '/' are ignored, "" and "."
 * select everything). */
bool pdk_changes_path_selected(const char *path, char *const *select);

/* True when path lies strictly beneath dir ("a/b" beneath "a"; not "ab"). */
bool pdk_changes_path_beneath(const char *path, const char *dir);

/* "added", "modified", "deleted", "type_changed". */
const char *pdk_change_status_name(pdk_change_status status);
/* "file", "dir", "symlink", "other"; NULL for PDK_KIND_NONE. */
const char *pdk_change_kind_name(pdk_change_kind kind);
pdk_change_kind pdk_change_kind_of(mode_t st_mode);

/* The mode as git writes it: 100644/100755-style regular files with their real permission
 * bits, 120000 for symlinks, 040000|perm for directories; 0 for PDK_KIND_NONE. */
unsigned pdk_change_display_mode(pdk_change_kind kind, mode_t st_mode);

#endif
