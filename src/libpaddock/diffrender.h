/* diffrender.h: a change list (changes.h) as text for a human or JSON for a program.
 *
 * Three renderings:
 *   patch   git's extended unified diff ("diff --git a/P b/P", "new file mode", "deleted
 *           file mode", "old mode"/"new mode", symlinks as mode 120000 with the target as
 *           content, "Binary files a/P and b/P differ"), so that `git apply` on a copy of
 *           the workspace reproduces the session's text files, modes, symlinks, additions
 *           and deletions. Directories and special files have no text of their own (a new
 *           directory appears through the files in it).
 *   stat    like `git diff --stat`: " path | 5 ++---" lines and the
 *           "N files changed, N insertions(+), N deletions(-)" summary. Directories and
 *           special files appear with a count of 0 (directories with a trailing '/').
 *   json    {"changes":[{"path","status","kind","old_kind","old_mode","new_mode","binary",
 *           "too_large","insertions","deletions","target","old_target"}],
 *            "summary":{"files","insertions","deletions"}}; modes are octal strings like
 *           "100644" (null when absent).
 * Contents are read fd-relative beneath lower_dirfd (the real workspace) and upper_dirfd
 * (the session's upper layer) without following symlinks. Files with a NUL byte in their
 * first 8000 bytes are binary; files over 16 MiB are binary "too large to diff".
 */
#ifndef PADDOCK_DIFFRENDER_H
#define PADDOCK_DIFFRENDER_H

#include "changes.h"
#include "error.h"

#include <jansson.h>

typedef struct pdk_diffrender_options {
    int context;        /* lines of context; < 0 means PDK_TEXTDIFF_DEFAULT_CONTEXT */
    char *const *paths; /* NULL: every change; else workspace-relative paths (a directory
                         * selects everything beneath it) */
} pdk_diffrender_options;

/* Append the patch to out (nothing when there is no change to show). */
int pdk_diffrender_patch(const pdk_change_list *changes, int lower_dirfd, int upper_dirfd,
                         const pdk_diffrender_options *opts, pdk_buf *out, pdk_error *err);

/* Append the --stat summary to out (nothing when no change is selected). */
int pdk_diffrender_stat(const pdk_change_list *changes, int lower_dirfd, int upper_dirfd,
                        const pdk_diffrender_options *opts, pdk_buf *out, pdk_error *err);

/* The JSON document described above (a new reference in *out). */
int pdk_diffrender_json(const pdk_change_list *changes, int lower_dirfd, int upper_dirfd,
                        const pdk_diffrender_options *opts, json_t **out, pdk_error *err);

/* Append path as git quotes it (C-style in double quotes when it holds control characters,
 * '"', '\\' or bytes >= 0x80), with prefix ("a/", "b/" or "") inside the quotes. */
void pdk_diffrender_quote_path(pdk_buf *out, const char *prefix, const char *path);

#endif
