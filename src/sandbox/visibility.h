/* visibility.h: which of the host's paths a sandbox sees, and why not.
 *
 * The sandbox sees the host's root read-only, but not all of it: its /tmp and /run are its
 * own, its $HOME is an empty directory with only the policy's read_allow and write bound in,
 * credential locations, the policy's read_deny and the state dir are hidden, and, started
 * as root, its root is not the host's, so a directory only its owner may enter (/root,
 * 0700) stays shut. A tool installed in one of those places (pyenv's shims under ~, a
 * binary in /tmp) is missing inside, or another one of the same name runs instead: run.c
 * says so, and `paddock doctor` lists the PATH entries that will not resolve.
 */
#ifndef PADDOCK_VISIBILITY_H
#define PADDOCK_VISIBILITY_H

#include "policy.h"
#include "util.h"

typedef struct pdk_visibility {
    const char *home;    /* the sandbox's $HOME (an empty directory inside); NULL: none */
    char *const *shown;  /* bound in at their own paths: the workspace, read_allow, write */
    char *const *hidden; /* hidden: credential locations, read_deny, the state dir */
    bool privileged;     /* root-started: directories closed to others stay shut */
} pdk_visibility;

/* The paths a sandbox hides: every credential location of each of homes, the policy's
 * read_deny, the state dir, and where each really is when it is a symlink. New
 * NULL-terminated list (what run.c binds an empty directory or file over). */
char **pdk_hidden_paths(char *const *homes, const pdk_policy *policy, const char *state_dir);

typedef enum pdk_unseen {
    PDK_SEEN = 0,      /* seen inside as on the host */
    PDK_UNSEEN_HIDDEN, /* a credential location, read_deny, the state dir: stays hidden */
    PDK_UNSEEN_HOME,   /* under $HOME, not bound in */
    PDK_UNSEEN_OWN,    /* under /tmp or /run, the sandbox's own */
    PDK_UNSEEN_CLOSED, /* root-started: below a directory closed to others */
} pdk_unseen;

/* Whether path (absolute, normalised) is seen inside as on the host; when not, why, in buf
 * as a phrase ("/tmp inside is the sandbox's own"). */
pdk_unseen pdk_visibility_check(const pdk_visibility *v, const char *path, char *buf, size_t len);

/* What makes path seen inside, as the end of a sentence (new string): "add ~/.pyenv to the
 * policy's filesystem.read_allow" (the first directory below the home for a path under it,
 * else the path's directory), or, where read_allow cannot help, what can. */
char *pdk_visibility_advice(const pdk_visibility *v, pdk_unseen why, const char *path);

/* The first executable called name in the PATH value path_value, as the host resolves it
 * (relative entries against cwd), in *found (new string). With v, only entries the sandbox
 * sees count. Returns whether one was found. */
bool pdk_path_lookup(const char *path_value, const char *name, const char *cwd,
                     const pdk_visibility *v, char **found);

#endif
