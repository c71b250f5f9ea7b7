/* commit.h: applying a session's upper layer to the real workspace, safely.
 *
 * pdk_commit_apply() scans the upper layer (changes.h), selects the requested changes and
 * checks EVERY one of them before it writes anything. A change is refused when
 *   - the real entry changed after the session began (ctime > baseline_ns), unless an
 *     earlier commit of this session wrote it and its ctime is still the one it left
 *     (directories are exempt: their ctime moves whenever an entry inside changes);
 *   - the upper entry was copied up from the workspace (overlay.origin) but the real entry
 *     is gone and was not renamed or linked inside the sandbox (deleted outside);
 *   - an added path exists in the real workspace now (created outside);
 *   - a component of the real path is a symlink or not a directory;
 *   - the path is protected (unless allow_protected): in protected_paths (at the workspace
 *     root, as the run recorded them), a built-in entry at any depth
 *     (pdk_builtin_protected_match: nested repositories' and submodules' configuration
 *     and hooks, agents' and editors' settings, ...), under the core.hooksPath the real
 *     configuration of a repository names (of every repository a selected change lies in:
 *     its .git directory, or the directory a .git file names; the user's own configuration
 *     when the repository sets none), or the configuration or a hook of a directory holding
 *     a HEAD
 *     (a bare repository), or a file or symlink where such a path's directory must be;
 *   - it would create a special file (fifo, socket, device), a set-id file, or a directory
 *     with a set-id, sticky or world-writable bit it did not have.
 * One refusal refuses the whole commit: nothing is written, -1 is returned and the error
 * names every refused path (they are also listed in the result).
 *
 * Otherwise the changes are applied: deletions deepest first, then directories and files
 * parents first, then directory modes deepest first. Every file is written whole to a
 * temporary (content, mode, owner when running as root, mtime), fsync'd and renamed over
 * the target, so a crash leaves each file old or new, never torn; symlinks likewise. A
 * file's content goes to an unnamed O_TMPFILE in its real directory: a new file is linked
 * straight into place and never has another name; one that replaces a file is linked to a
 * temporary name in the session's directory (session_dir/commit-tmp, where symlinks and
 * directories swapped in are made too) and renamed over its target. Only where that
 * directory is on another mount than the workspace does such a name go beside the target
 * (".paddock-commit.<pid>.<n>", for the moment of the rename), after
 * session_dir/commit-journal has named the directories. A commit killed at any point
 * leaves nothing in the workspace that the next commit (pdk_commit_recover) does not
 * remove. Every real directory touched is fsync'd at the end.
 * All access to the real workspace is fd-relative beneath lower_dirfd with symlinks refused
 * (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), and each parent directory is opened afresh
 * right before it is written, so a directory swapped for a symlink during the commit stops
 * the commit instead of redirecting it. Nothing is written outside the workspace.
 *
 * Afterwards the committed entries are removed from the upper layer (whiteouts included;
 * an opaque directory committed whole loses its opaque xattr, and is removed when empty),
 * so that a new scan shows only what was not committed. Entries beneath an opaque directory
 * that was committed only in part stay in the upper layer, identical to the real entries
 * (which a scan does not report).
 */
#ifndef PADDOCK_COMMIT_H
#define PADDOCK_COMMIT_H

#include "changes.h"
#include "error.h"
#include "session.h"

#include <stdint.h>

typedef struct pdk_commit_request {
    int lower_dirfd;                     /* the real workspace root */
    const char *workspace_path;          /* its absolute path (for absolute core.hooksPath
                                          * values); may be NULL */
    int upper_dirfd;                     /* the session's upper layer */
    const char *session_dir;             /* the session's directory: temporary entries and
                                          * the journal (see above); NULL: beside each
                                          * target, as O_TMPFILE where it can */
    int64_t baseline_ns;                 /* real files with ctime > this changed after the
                                          * session began */
    const pdk_committed_path *committed; /* paths an earlier commit wrote, with the ctime */
    size_t committed_count;              /* it left */
    char *const *placeholders;           /* ignored entries (mount points paddock made) */
    char *const *protected_paths;        /* workspace-relative; a trailing '/' means a
                                          * directory and everything beneath */
    char *const *select;                 /* NULL: everything; else paths (a directory selects
                                          * what is beneath it) */
    bool allow_protected;
    bool dry_run;
} pdk_commit_request;

typedef struct pdk_commit_entry {
    char *path;
    pdk_change_status status;
    pdk_change_kind kind; /* the new kind; the old one for deletions */
    int64_t ctime_ns;     /* ctime left on the real entry; -1 when it no longer exists
                           * (deletions) and in a dry run */
} pdk_commit_entry;

typedef struct pdk_commit_refusal {
    char *path;
    char *reason;
} pdk_commit_refusal;

typedef struct pdk_commit_result {
    pdk_commit_entry *applied; /* in the order applied (in a dry run: would be applied) */
    size_t applied_count;
    pdk_commit_refusal *refused;
    size_t refused_count;
    bool dry_run;
} pdk_commit_result;

/* Check and apply (see above). Returns 0 when every selected change was applied (or, in a
 * dry run, would be), -1 otherwise. On -1 after writing began (an I/O error, or the
 * workspace changed during the commit), result->applied still lists what was applied:
 * callers must record those with pdk_session_note_committed even then. out is always
 * initialised; free it with pdk_commit_result_free. */
int pdk_commit_apply(const pdk_commit_request *req, pdk_commit_result *out, pdk_error *err);

void pdk_commit_result_free(pdk_commit_result *result);

/* Remove what a commit of the session killed half-way left: everything in
 * session_dir/commit-tmp, and the temporary names its journal says it may have made in the
 * real workspace (lower_dirfd). The number of names removed from the workspace, or -1 with
 * err. A commit does it first; paddock run does it before a run on the session. */
int pdk_commit_recover(int lower_dirfd, const char *session_dir, pdk_error *err);

/* True when path is protected by the list (see protected_paths above). */
bool pdk_commit_path_protected(const char *path, char *const *protected_paths);

/* For tests only: called once the checks passed, right before the first write (to change
 * the workspace under a running commit). NULL in the product. */
extern void (*pdk__commit_before_apply)(void *arg);
extern void *pdk__commit_before_apply_arg;

#endif
