/* sandbox_child.h: the sandbox side of pdk_sandbox_run(), internal to sandbox.c.
 *
 * Error regime: between clone and exec there is no caller to return to. Failures are sent
 * to the supervisor as PDK_MSG_ERROR (one line naming what failed) and the process exits
 * with 125; see docs/error-handling.md. */
#ifndef PADDOCK_SANDBOX_CHILD_H
#define PADDOCK_SANDBOX_CHILD_H

#include "sandbox.h"

#include <signal.h>

typedef struct pdk__child_args {
    const pdk_sandbox_config *cfg;
    const pdk_idmap *idmap;
    const pdk_seccomp_program *seccomp;
    int sync_fd;
    bool v1_cgroup;         /* re-enter a cgroup namespace once attached */
    sigset_t original_mask; /* the caller's signal mask, restored for the command */
} pdk__child_args;

/* Runs as pid 1 of the new pid namespace; never returns. */
PDK_NORETURN void pdk__sandbox_child_main(const pdk__child_args *args);

#endif
