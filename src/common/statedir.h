/* statedir.h: where paddock keeps its state (contract in docs/design.md):
 *   $PADDOCK_STATE_DIR, else $XDG_STATE_HOME/paddock, else ~/.local/state/paddock
 *   (root: /var/lib/paddock).
 * The directory is 0700 and is hidden from every sandbox.
 *
 * paddock never takes over a directory that is not its own: a system or shared directory
 * (/, /tmp, /var, /usr, /etc, /home, the home directory itself...), a symlink, one that
 * belongs to another user, that others can read or write, or that holds files paddock did
 * not put there is refused with a message naming the fix, before anything is changed.
 * A state dir paddock made (or adopted empty) carries the marker file below. */
#ifndef PADDOCK_STATEDIR_H
#define PADDOCK_STATEDIR_H

#include "error.h"

#define PDK_STATE_DIR_MARKER ".paddock-state"

/* Resolve, check (see above) and, when create is true, create with mode 0700 the state
 * dir (an existing one is never changed but for the marker). The returned
 * path is absolute and normalised. */
int pdk_state_dir(bool create, char **out, pdk_error *err);

/* The caller's home directory: $HOME when set and absolute, else the passwd entry. */
/* The home directory of uid in the user database, normalized (new string), or NULL. */
char *pdk_passwd_home(uid_t uid);
char *pdk_home_dir(void);

#endif
