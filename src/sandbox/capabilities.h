/* capabilities.h: drop every capability set for good (sandbox side).
 *
 * Bounding set emptied, ambient and inheritable cleared, effective and permitted zero,
 * securebits locked so that an execve as uid 0 inside the user namespace regains nothing,
 * and no_new_privs set. Runs in the sandbox's init after setup; the command inherits. */
#ifndef PADDOCK_CAPABILITIES_H
#define PADDOCK_CAPABILITIES_H

/* Returns 0, or -1 with errno and *what naming the step that failed. */
int pdk_caps_drop_all(const char **what);

#endif
