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
#include "placeholder_scan.h"

#include <stdbool.h>
#include <stddef.h>

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

/* ---- placeholders kept with a persistent home ----
 *
 * A credential's placeholder is new at every run, except with a persistent home: then the
 * random part of each (placeholder_scan.h: PDK_PLACEHOLDER_RANDOM_HEX lowercase hex
 * digits, what the gateway recognises it by) is kept in STATE/home-placeholders/NAME.json
 * (0600, in the state dir, which no sandbox sees; never in the home, which the sandbox
 * writes), so that an agent that approved its key once (Claude Code: by the key's last 20
 * characters) finds it again. A kept one is made anew when the secrets its credential is
 * made of change (`paddock secret set` to another value, `paddock secret rm`:
 * pdk_home_placeholders_forget), when the credential is made of other secrets, and when
 * the home's directory is not the one it was made with (removed and made again). */

/* One placeholder of a run: its key in the file ("CREDENTIAL", or "CREDENTIAL/app_secret"
 * for a Feishu app secret's stand-in) and the vault names it stands for. */
typedef struct pdk_home_placeholder {
    const char *key;
    char *const *secrets;                        /* NULL-terminated */
    char random[PDK_PLACEHOLDER_RANDOM_HEX + 1]; /* out: lowercase hex digits */
} pdk_home_placeholder;

/* Fill each placeholder's random part for persistent home name: the kept one, or a new one
 * (kept from now on, unless write is false). Under a lock, so that runs starting at once
 * agree; the file is written atomically, and entries of credentials this run does not have
 * stay. An unreadable or damaged file is an error naming it (remove it to start anew). */
int pdk_home_placeholders(const char *state_dir, const char *name, pdk_home_placeholder *list,
                          size_t count, bool write, pdk_error *err);

/* Forget every kept placeholder that stands for secret, in every home's file. *forgotten
 * (may be NULL) gets how many. */
int pdk_home_placeholders_forget(const char *state_dir, const char *secret, size_t *forgotten,
                                 pdk_error *err);

/* ---- the file, for fuzz_home ---- */

/* What pdk_home_placeholders does with the file's text (len bytes; NULL: there is none)
 * for the home of identity ("DEV:INO:BIRTH", or "DEV:INO" where the filesystem keeps no birth
 * time; a file written with "DEV:INO" is of the home with that DEV:INO and any birth): list's random parts filled (the kept ones, new
 * ones for the rest), and *updated (a new string) the file to write when it changed, else
 * NULL. -1 when text is not such a file. */
int pdk_home_placeholders_apply(const char *text, size_t len, const char *identity,
                                pdk_home_placeholder *list, size_t count, char **updated);
/* What pdk_home_placeholders_forget does with one file's text: *updated (new, or NULL
 * when nothing changed) without the placeholders that stand for secret, *dropped of them.
 * -1 when text is not such a file. */
int pdk_home_placeholders_drop(const char *text, size_t len, const char *secret, size_t *dropped,
                               char **updated);

#endif
