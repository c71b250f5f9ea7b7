/* sandbox.h: starting a command in a sandbox and supervising it.
 *
 * The caller (cmd_run.c) turns CLI options, the policy and the session into a
 * pdk_sandbox_config; pdk_sandbox_run() does the rest in this order:
 *   1. before the clone: seccomp BPF built, Landlock ABI checked, cgroup created;
 *   2. one clone3() with every namespace flag (and CLONE_INTO_CGROUP on cgroup v2);
 *   3. the supervisor writes the id maps, attaches v1 cgroups, prepares the bind sources
 *      (idmapped when started as root) and sends them with "go" over a socketpair;
 *   4. the child, pid 1 of the new pid namespace, builds the mount tree, pivots into it,
 *      brings up loopback, builds the Landlock ruleset, drops every capability, installs
 *      the seccomp filter and forks the command, then stays as the init that reaps orphans
 *      and forwards signals;
 *   5. the supervisor runs its event loop (supervisor.h) until init exits; when the command
 *      exits, init exits and the kernel kills whatever is left in the namespace.
 * See docs/design.md for the whole picture and SECURITY.md for the threat model.
 */
#ifndef PADDOCK_SANDBOX_H
#define PADDOCK_SANDBOX_H

#include "error.h"
#include "namespaces.h"
#include "seccomp_filter.h"
#include "session.h"

#include <stdint.h>
#include <sys/types.h>

struct event_base;
struct pdk_egress_socket;

/* A host path shown inside the sandbox. */
typedef struct pdk_bind {
    char *source; /* absolute host path */
    char *target; /* absolute path inside (usually the same) */
    bool writable;
} pdk_bind;

typedef struct pdk_sandbox_config {
    char **argv; /* the command */
    char **envp;
    char *cwd;      /* where the command starts (inside) */
    char *home;     /* $HOME, shown as an empty tmpfs */
    char *hostname; /* inside the uts namespace */

    char *workspace; /* real path of the workspace, mounted at the same path; NULL: none */
    pdk_workspace_mode workspace_mode;
    bool workspace_readonly; /* direct mode, bound read-only */
    char *layers_dir;        /* overlay mode: the session dir holding upper/ and work/ */

    pdk_bind *binds; /* policy read_allow / write */
    size_t bind_count;
    char **hide_paths;    /* absolute paths hidden (credential locations, read_deny, state) */
    char **protect_paths; /* absolute paths made read-only inside; a trailing '/' marks a
                           * directory. Missing ones get an empty read-only directory as a
                           * placeholder when make_placeholders is set and the parent
                           * exists. */
    bool make_placeholders;
    char **pin_paths; /* absolute directories bound over themselves (writable), so that they
                       * cannot be renamed or removed inside: the parents of a persistent
                       * home's protected entries. A missing one or a symlink is an error. */

    int *pass_fds;
    size_t pass_fd_count;
    bool tty;

    int landlock_abi; /* probed; 0: Landlock unavailable (only with allow_degraded) */
    bool restrict_tcp_bind;
    const uint16_t *tcp_bind;
    size_t tcp_bind_count;
    bool restrict_tcp_connect;
    const uint16_t *tcp_connect;
    size_t tcp_connect_count;

    bool nested_userns;
    bool no_loopback; /* not even loopback in the network namespace */
    /* The egress gateway: init makes its route and sockets in the network namespace
     * (egress_net.h), capturing these ports, and hands the sockets to egress_sockets on the
     * supervisor's loop before the command starts. */
    bool egress;
    const uint16_t *egress_ports;
    size_t egress_port_count;
    void (*egress_sockets)(void *arg, struct event_base *base, pid_t init_pid,
                           const struct pdk_egress_socket *socks, size_t count);
    /* Called on the loop once the sandbox has ended, before the loop goes: the gateway's
     * connections and sockets end there. */
    void (*egress_stop)(void *arg);
    void *egress_arg;
    int64_t memory_bytes, pids, cpu_millicores;
    bool allow_degraded;
    int64_t timeout_seconds; /* 0: none */
    const char *cgroup_name; /* unique name for this run's cgroup */

    /* Called once the sandbox's namespaces exist, while it builds the part of its tree
     * that depends on nothing (host root, /dev, /proc, /tmp): the caller's own work that
     * the sandbox needs only later (paddock run makes the session's directory here). A
     * failure stops the sandbox before it runs anything. NULL: none. */
    int (*after_clone)(void *arg, pdk_error *err);
    void *after_clone_arg;

    /* Called while the sandbox builds the rest of its tree, before the command starts: the
     * command runs only once this has returned 0 (paddock run writes the audit event of
     * the session's start here). A failure stops the sandbox before anything runs. NULL:
     * none. */
    int (*before_command)(void *arg, pdk_error *err);
    void *before_command_arg;

    /* Every execve/execveat inside the sandbox goes to this handler (the supervisor's exec
     * listener, exec_listener.h). NULL: execs are not watched. */
    const struct pdk_exec_handler *exec_handler;
    bool notify_connect; /* connects to the handler too (for nested confine) */

    /* Background work for the supervisor while the sandbox starts and runs: called again and
     * again between the supervisor's events for as long as it returns true. Each call must
     * be short. NULL: none. */
    bool (*idle_step)(void *arg);
    void *idle_step_arg;
} pdk_sandbox_config;

typedef struct pdk_sandbox_rest pdk_sandbox_rest;

typedef struct pdk_sandbox_result {
    int exit_status; /* the contract: the command's own, 125, 126, 127, 128+N */
    bool timed_out;
    bool started;           /* the command was executed */
    bool released;          /* the command was let start ("run" sent): it may have run, even
                             * when pdk_sandbox_run returned -1 */
    char **placeholders;    /* absolute paths paddock created as mount points */
    char message[1024];     /* why paddock failed (status 125/126/127), else empty */
    pdk_sandbox_rest *rest; /* what pdk_sandbox_result_free() finishes */
} pdk_sandbox_result;

/* Run cfg until the command has ended and every process of the sandbox is dead. Returns 0
 * when the sandbox ran (result says how the command ended, including 125/126/127 for setup
 * and exec failures inside), -1 with err when it could not be started at all. The
 * sandbox's init may still be exiting (the kernel tears its namespaces down meanwhile):
 * do the post-run work, then call pdk_sandbox_result_free(), which reaps it and removes
 * the cgroup, so that the two overlap. */
int pdk_sandbox_run(const pdk_sandbox_config *cfg, pdk_sandbox_result *result, pdk_error *err);

/* Reap the sandbox's init, remove its cgroup, free the result. */
void pdk_sandbox_result_free(pdk_sandbox_result *result);

/* Exit codes of the contract. */
#define PDK_EXIT_PADDOCK_FAILED 125
#define PDK_EXIT_CANNOT_EXECUTE 126
#define PDK_EXIT_NOT_FOUND      127

#endif
