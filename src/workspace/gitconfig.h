/* gitconfig.h: what paddock reads of a git repository's configuration.
 *
 * `paddock commit` refuses to write the hooks git would run: those under the
 * core.hooksPath a repository's configuration names (husky's ".husky/_", say). The value
 * is read from the real workspace's files (never from what the sandbox wrote), with git's
 * own syntax (git-config(1), "CONFIGURATION FILE"):
 *   [section] and [section "subsection"] headers (section names and keys are
 *   case-insensitive, subsections are not; the old [section.subsection] form too), a key
 *   right after a header on its line, "#" and ";" comments, values with leading and
 *   trailing whitespace dropped, "..." quoting, the escapes \n \t \b \" \\ and a
 *   backslash-newline continuation; a key without "=" is a boolean true (no string).
 * The last assignment wins. Includes are not followed.
 */
#ifndef PADDOCK_GITCONFIG_H
#define PADDOCK_GITCONFIG_H

#include "util.h"

/* The value of section.key (no subsection) in the configuration text (len bytes): 1 and a
 * new string in *value, 0 when it is not set (or set without a value), -1 when the text is
 * not a configuration git would read (git refuses such a file; *value NULL). */
int pdk_git_config_get(const char *text, size_t len, const char *section, const char *key,
                       char **value);

#endif
