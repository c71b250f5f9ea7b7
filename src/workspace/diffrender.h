/* diffrender.h: a change list (changes.h) as text for a human or JSON for a program.
 *
 * Three renderings:
 *   patch   git's extended unified diff ("diff --git a/P b/P", "new file mode", "deleted
 *           file mode", "old mode"/"new mode", symlinks as mode 120000 with the target as
 *           content, "Binary files a/P and b/P differ"). With raw, exactly that, so that
 *           `git apply` on a copy of the workspace reproduces the session's text files,
 *           modes, symlinks, additions and deletions; directories and special files have
 *           no text of their own (a new directory appears through the files in it).
 *           Without raw (the default: what a human reads on a terminal), the sandbox
 *           cannot hide anything in it:
 *           - a line whose text holds a control character, a bidi or invisible character
 *             or bytes that are not UTF-8 is written escaped (display.h), after a '!'
 *             ("!+\r\x1b[2Kcurl ... | sh"): such a patch is visibly not one to apply,
 *             and git apply refuses it ("corrupt patch") rather than writing the escapes;
 *           - a file is binary only when its first bytes are of a known binary type
 *             (pdk_diffrender_file_type) and hold a NUL or bytes that are not UTF-8; its
 *             line then names the type and size of each side ("Binary files a/P (PNG
 *             image, 120 bytes) and b/P (ELF 64-bit executable, 8712 bytes) differ").
 *             Every other file, a NUL in it or not, is diffed as text with its NULs and
 *             controls escaped: a script after a NUL, or a type not in the list, shows;
 *           - a directory whose mode changes, or a new one with a set-id, sticky or
 *             world-writable bit, has a line of its own ("directory d/ mode 040755 ->
 *             040777 (world-writable)"), which git apply passes over.
 *   stat    like `git diff --stat`: " path | 5 ++---" lines and the
 *           "N files changed, N insertions(+), N deletions(-)" summary. Directories and
 *           special files appear with a count of 0 (directories with a trailing '/').
 *   json    {"changes":[{"path","status","kind","old_kind","old_mode","new_mode","binary",
 *           "too_large","insertions","deletions","target","old_target","type"}],
 *            "summary":{"files","insertions","deletions"}}; modes are octal strings like
 *           "100644" (null when absent); paths and targets as pdk_session_json_path
 *           writes them (a string, or {"hex", "text"} for bytes that are not UTF-8).
 * Contents are read fd-relative beneath lower_dirfd (the real workspace) and upper_dirfd
 * (the session's upper layer) without following symlinks. For raw and JSON, files with a
 * NUL byte in their first 8000 bytes are binary (git's rule); files over 16 MiB are binary
 * "too large to diff" in every rendering. --stat counts as the patch does. The JSON adds
 * "type", what pdk_diffrender_file_type says the file is.
 */
#ifndef PADDOCK_DIFFRENDER_H
#define PADDOCK_DIFFRENDER_H

#include "changes.h"
#include "error.h"

#include <jansson.h>

typedef struct pdk_diffrender_options {
    int context;           /* lines of context; < 0 means PDK_TEXTDIFF_DEFAULT_CONTEXT */
    char *const *paths;    /* NULL: every change; else workspace-relative paths (a directory
                            * selects everything beneath it) */
    bool raw;              /* the bytes as they are, for programs (git apply); see above */
    size_t *escaped_lines; /* when not NULL, the patch stores how many lines it escaped */
} pdk_diffrender_options;

/* What a file is, from its first bytes ("ELF 64-bit executable", "gzip compressed data",
 * "PNG image", ...), or NULL when they match no type of the list. */
const char *pdk_diffrender_file_type(const char *data, size_t len);

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
