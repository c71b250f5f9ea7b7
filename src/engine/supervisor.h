/* supervisor.h: the supervisor's event loop (libevent).
 *
 * One event_base per supervisor. The sandbox registers on it: the pidfd of the sandbox's
 * init (its exit ends the loop), the control socket to init, the signals forwarded to the
 * command, the timeout, and for --tty the pty relay. Later components (the egress gateway)
 * add their listeners to the same base; nothing here blocks.
 */
#ifndef PADDOCK_SUPERVISOR_H
#define PADDOCK_SUPERVISOR_H

#include "error.h"
#include "egress_net.h"
#include "exec_listener.h"

#include <event2/event.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct pdk_supervisor pdk_supervisor;

typedef struct pdk_supervisor_outcome {
    bool started; /* the command was executed */
    bool exited;  /* init reported the command's wait status */
    int wait_status;
    bool exec_failed;
    int exec_errno;
    char exec_command[256];
    bool setup_failed; /* init reported an error during setup */
    char message[1024];
    bool timed_out;
    int init_wait_status; /* init's own, from waitid */
    char **placeholders;  /* absolute paths init created as mount points */
} pdk_supervisor_outcome;

/* Create the loop; signals are caught from here on (so none is lost while the sandbox
 * starts). Returns NULL with err on failure. */
pdk_supervisor *pdk_supervisor_new(pdk_error *err);
struct event_base *pdk_supervisor_base(pdk_supervisor *sup);

/* Serve the exec listener init sends (PDK_MSG_LISTENER) with handler (exec_listener.h). */
void pdk_supervisor_set_exec_handler(pdk_supervisor *sup, const pdk_exec_handler *handler);

/* Call step(arg) between the loop's other events, again and again while it returns true
 * (one task at a time; a second call replaces the first). */
/* Give the egress sockets init sends (PDK_MSG_EGRESS) to sockets, on the loop; the fds are
 * then its to close. stop runs once the loop has ended, before it is freed. */
void pdk_supervisor_set_egress(pdk_supervisor *sup,
                               void (*sockets)(void *arg, struct event_base *base, pid_t init_pid,
                                               const pdk_egress_socket *socks, size_t count),
                               void (*stop)(void *arg), void *arg);
void pdk_supervisor_add_idle(pdk_supervisor *sup, bool (*step)(void *arg), void *arg);

/* Run until the command has ended: init reports its status once every process in the
 * sandbox is dead (or init itself dies). Init may still be exiting when this returns; reap
 * it with pdk_supervisor_reap(). timeout_seconds 0 means none; tty relays the pty init sends. */
int pdk_supervisor_run(pdk_supervisor *sup, pid_t init_pid, int init_pidfd, int sync_fd,
                       int64_t timeout_seconds, bool tty, pdk_supervisor_outcome *out,
                       pdk_error *err);

/* Wait for init to be gone; its wait status, or -1 when it was reaped already. */
int pdk_supervisor_reap(int init_pidfd);

void pdk_supervisor_free(pdk_supervisor *sup);

#endif
