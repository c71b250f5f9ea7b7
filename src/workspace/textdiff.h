/* textdiff.h: line diffs of two buffers as unified hunks.
 *
 * Myers' O(ND) algorithm in its linear-space form (the middle-snake divide and conquer, as
 * in xdiff and GNU diff), with the xdiff cost heuristic that bounds the run time on inputs
 * with very many differences (the result stays a correct diff, if not always a minimal
 * one). Lines are compared with their trailing newline, so a last line that lacks one
 * differs from the same line with one; such a line is followed by
 * "\ No newline at end of file" in the output, as diff and git write it.
 */
#ifndef PADDOCK_TEXTDIFF_H
#define PADDOCK_TEXTDIFF_H

#include "util.h"

#define PDK_TEXTDIFF_DEFAULT_CONTEXT 3
/* Files larger than this are not diffed: they are reported as binary, "too large to diff". */
#define PDK_TEXTDIFF_MAX_SIZE ((size_t)16 << 20)
/* Binary detection looks at this many leading bytes for a NUL, as git does. */
#define PDK_TEXTDIFF_BINARY_PROBE 8000

typedef struct pdk_textdiff_stats {
    size_t insertions; /* lines only in b */
    size_t deletions;  /* lines only in a */
    size_t hunks;
} pdk_textdiff_stats;

/* True when a NUL byte occurs in the first PDK_TEXTDIFF_BINARY_PROBE bytes. */
bool pdk_textdiff_is_binary(const char *data, size_t len);

/* Diff a against b and append the unified hunks ("@@ -l,n +l,n @@" and the lines) to out,
 * with context lines of context around each change; out may be NULL to count only. Nothing
 * is appended when the buffers are equal. stats (may be NULL) receives the counts. */
void pdk_textdiff_unified(const char *a, size_t alen, const char *b, size_t blen, unsigned context,
                          pdk_buf *out, pdk_textdiff_stats *stats);

#endif
