/* cgroup.h: memory, pids and cpu limits for a sandbox.
 *
 * cgroup v2 is used where a delegated cgroup with those controllers is available (the
 * child is then cloned straight into it with CLONE_INTO_CGROUP); else the v1 controllers
 * when paddock runs as root (the supervisor attaches the child before it runs anything).
 * Each sandbox gets its own cgroup beneath paddock's current one, removed at the end.
 */
#ifndef PADDOCK_CGROUP_H
#define PADDOCK_CGROUP_H

#include "error.h"

#include <stdint.h>
#include <sys/types.h>

typedef enum pdk_cgroup_mode {
    PDK_CGROUP_NONE = 0,
    PDK_CGROUP_V2 = 2,
    PDK_CGROUP_V1 = 1,
} pdk_cgroup_mode;

typedef struct pdk_cgroup_probe {
    pdk_cgroup_mode mode; /* what paddock will use */
    bool v2_mounted;
    bool v2_delegated;               /* memory, pids and cpu usable beneath our v2 cgroup */
    bool v1_memory, v1_pids, v1_cpu; /* controllers mounted and writable by us */
    char detail[256];                /* one line for doctor */
} pdk_cgroup_probe;

void pdk_cgroup_probe_run(pdk_cgroup_probe *out);

typedef struct pdk_cgroup pdk_cgroup;

typedef struct pdk_cgroup_limits {
    int64_t memory_bytes;   /* 0: none */
    int64_t pids;           /* 0: none */
    int64_t cpu_millicores; /* 0: none */
} pdk_cgroup_limits;

/* Create the sandbox's cgroup named name. *out is NULL (and 0 returned) when neither memory
 * nor cpu is limited: pids alone is enforced with RLIMIT_NPROC, which counts per user
 * namespace and so per sandbox, and costs nothing (on cgroup v1 every attach waits for an
 * RCU grace period, milliseconds). When memory is asked for but no cgroup can be had, fails
 * unless allow_missing, in which case a warning is printed and *out is NULL. */
int pdk_cgroup_create(const char *name, const pdk_cgroup_limits *limits, bool allow_missing,
                      pdk_cgroup **out, pdk_error *err);

/* v2: an fd of the cgroup directory for CLONE_INTO_CGROUP; v1: -1. */
int pdk_cgroup_clone_fd(const pdk_cgroup *cg);

/* v1: move pid into every controller's cgroup. v2: nothing to do. */
int pdk_cgroup_attach(pdk_cgroup *cg, pid_t pid, pdk_error *err);

pdk_cgroup_mode pdk_cgroup_mode_of(const pdk_cgroup *cg);

/* Remove the cgroup (every process in it must be gone). */
void pdk_cgroup_destroy(pdk_cgroup *cg);

#endif
