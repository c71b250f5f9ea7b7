/* landlock.h: Landlock ABI probe and the sandbox's ruleset.
 *
 * The strongest ruleset the kernel offers is applied: filesystem access rights of the
 * probed ABI (read-only everywhere, writable only where the sandbox may write); on ABI >= 4
 * TCP bind/connect port allowlists when the policy gives them; on ABI >= 6 scoping of
 * abstract unix sockets and signals to the sandbox. The caller checks the policy's minimum
 * ABI before starting (pdk_landlock_check_abi).
 */
#ifndef PADDOCK_LANDLOCK_H
#define PADDOCK_LANDLOCK_H

#include "error.h"

#include <stdint.h>

/* The kernel's Landlock ABI version: 0 when Landlock is unsupported or disabled. */
int pdk_landlock_abi(void);

/* Human-readable list of what ABI abi lacks compared with the newest paddock knows. */
const char *pdk_landlock_missing(int abi);

/* Refuse when abi < min_abi unless allow_degraded (then warn). */
int pdk_landlock_check_abi(int abi, int min_abi, bool allow_degraded, pdk_error *err);

typedef struct pdk_landlock_spec {
    int abi;
    /* No filesystem rights handled (the paths below are ignored): Landlock refuses every
     * mount(2) to a process whose domain handles any, and a nested sandbox must mount. */
    bool without_filesystem;
    char **read_paths;   /* read + execute beneath */
    char **write_paths;  /* full access beneath */
    char **device_paths; /* read, write, truncate, ioctl on devices beneath */
    bool restrict_tcp_bind;
    const uint16_t *tcp_bind;
    size_t tcp_bind_count;
    bool restrict_tcp_connect;
    const uint16_t *tcp_connect;
    size_t tcp_connect_count;
} pdk_landlock_spec;

/* Whether spec handles anything at all on this ABI (a ruleset that handles nothing cannot
 * be made: without_filesystem below ABI 6 and without TCP rules). */
bool pdk_landlock_spec_restricts(const pdk_landlock_spec *spec);

/* Build a ruleset fd from spec (paths must exist; missing ones are skipped). Returns the
 * fd or -1 with errno and *what set. Sandbox side, after the mounts are final. */
int pdk_landlock_build(const pdk_landlock_spec *spec, const char **what);

/* Enforce the ruleset on the calling thread (no_new_privs must be set). */
int pdk_landlock_restrict(int ruleset_fd);

#endif
