/* output.h: the one path of every line paddock prints for a human.
 *
 * paddock's messages on stderr (log.h's diagnostics and notices, the CLI's errors and
 * summaries), the terminal prompt of an approval, the refusal told on a sandboxed process's
 * stderr: all of them are written by pdk_output(), which
 *   - replaces every registered secret value and placeholder with "[REDACTED]" (redact.h),
 *   - escapes control, bidi and invisible characters and bytes that are not UTF-8
 *     (pdk_display_message: backslashes are left alone, so a caller escapes the sandbox's
 *     words in the text with pdk_display() first, to make them unambiguous), so that a
 *     name a sandbox chose cannot move the cursor or hide itself on the terminal,
 *   - writes the line with one write() (a newline appended), so that the lines of several
 *     threads or processes on the same stderr never interleave.
 * What a program reads is not a message and does not pass here: a diff on stdout, JSON,
 * the command's own output relayed from its terminal.
 *
 * No library file writes to stderr, stdout or a terminal in any other way:
 * tests/integration/t_output_sink.sh fails when one does (its allowlist: this file, the
 * sandbox's child before exec, which dies with a message, and the seccomp generator that
 * runs at build time). Safe from any thread. */
#ifndef PADDOCK_OUTPUT_H
#define PADDOCK_OUTPUT_H

#include "util.h"

#include <unistd.h> /* STDERR_FILENO */

#define PDK_OUTPUT_PROMPT (1u << 0) /* no newline: the cursor stays after the text */

/* text as one line on fd: a trailing newline of text is dropped (the line gets its own),
 * newlines within it are escaped. */
void pdk_output(int fd, unsigned flags, const char *text);
void pdk_outputf(int fd, unsigned flags, const char *fmt, ...) PDK_PRINTF(3, 4);

/* text as pdk_output would write it, without the newline (new string): for the notice
 * file, which holds what stderr would have shown. */
char *pdk_output_shown(const char *text);

/* "paddock: out of memory (what)" on stderr without allocating, then abort(). */
PDK_NORETURN void pdk_output_out_of_memory(const char *what);

#endif
