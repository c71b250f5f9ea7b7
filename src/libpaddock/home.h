/* home.h: persistent homes (policy home.persist), an agent's own state across runs.
 *
 * A persistent home is STATE/homes/NAME, a directory paddock owns. A run whose policy
 * names it sees it as $HOME, writable, instead of an empty directory, so that an agent's
 * sign-in, settings and conversations (~/.codex, ~/.claude, ~/.claude.json) are there at
 * its next run, whatever the session or workspace. What would run code later is kept
 * read-only inside: the built-in protected home entries (pdk_builtin_protected_home:
 * shell start-up files, ".gitconfig", ".config/git/", Claude Code's settings, commands and
 * agents, Codex's config.toml). The human edits them on the host, in the home's directory.
 */
#ifndef PADDOCK_HOME_H
#define PADDOCK_HOME_H

#include "error.h"

/* Make STATE/homes/NAME when it is missing (mode 0700, the caller's) and, beneath it,
 * every entry of protected (home-relative; a trailing "/" marks a directory): its parent
 * directories, and the entry itself, a directory or an empty file, so that the sandbox can
 * never create one of its own. Everything fd-relative, following no symlink: a home, an
 * entry or a parent that is a symlink or of another type is refused (one line naming it
 * and the fix) and nothing is made beyond what existed. On success *dir_out is the home's
 * path (new string) and *parents_out the home-relative parent directories of the entries
 * (new NULL-terminated list, each once, shallowest first): the run binds those over
 * themselves, so that they cannot be renamed or removed inside, and the entries
 * read-only. */
int pdk_home_prepare(const char *state_dir, const char *name, const char *const *protected,
                     char **dir_out, char ***parents_out, pdk_error *err);

#endif
