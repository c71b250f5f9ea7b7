/* exec_listener.h: the supervisor's side of the seccomp user notifications for execve and
 * execveat inside the sandbox (seccomp_filter.h, notify_exec).
 *
 * For each exec the listener reads what is executed (the path and the whole argv, from the
 * target's memory with process_vm_readv, as far as the kernel allows an exec to carry),
 * finds the file it runs in the process's own view (exec_target.h: the path resolved, its
 * symlinks, the fd of an execveat, a script's interpreter, the dynamic loader's program),
 * checks the notification is still valid (SECCOMP_IOCTL_NOTIF_ID_VALID), and asks the
 * handler: allow lets the exec go on (SECCOMP_USER_NOTIF_FLAG_CONTINUE),
 * deny fails it (EACCES, or ENOENT with an empty message) and writes the handler's message
 * to the process's stderr, ask hands it to the event loop (an approval), where it may stay
 * pending until pdk_exec_listener_answer(). Nothing else waits meanwhile.
 *
 * The listener serves on a thread of its own, which waits in poll(2) and is woken on the
 * CPU of the exec that waits for it (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP): an exec costs
 * two same-CPU switches, not two wake-ups of an idle CPU, and never waits for the loop.
 * So the handler's judge and connect run on that thread: what they share with the loop
 * they share under a lock. ask runs on the loop.
 *
 * The check is a review layer, not a boundary: with CONTINUE the kernel reads the path and
 * argv again after the supervisor did, so a second thread of the target that rewrites them
 * in between runs something else (seccomp_unotify(2)). The boundaries stay the kernel's
 * (namespaces, Landlock, seccomp's own denials).
 */
#ifndef PADDOCK_EXEC_LISTENER_H
#define PADDOCK_EXEC_LISTENER_H

#include "exec_target.h"

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum pdk_exec_argv_state {
    PDK_EXEC_ARGV_WHOLE,      /* read whole */
    PDK_EXEC_ARGV_TOO_LARGE,  /* more than the kernel lets an exec carry */
    PDK_EXEC_ARGV_UNREADABLE, /* some of it could not be read */
} pdk_exec_argv_state;

typedef struct pdk_exec_request {
    pid_t pid;         /* in the supervisor's pid namespace */
    const char *path;  /* as given to execve ("" when unreadable, or for AT_EMPTY_PATH) */
    char *const *argv; /* NULL-terminated: whole when argv_state is WHOLE, else only the
                        * path (the caller refuses it) */
    size_t argc;       /* the arguments counted (as far as they could be) */
    size_t argv_bytes; /* their bytes, pointers and NULs included */
    pdk_exec_argv_state argv_state;
    const pdk_exec_target *target; /* what it runs */
    char *cwd_buf;                 /* pdk_exec_request_cwd()'s */
} pdk_exec_request;

/* The process's cwd as the supervisor sees it ("" when unknown), read when asked for. */
const char *pdk_exec_request_cwd(pdk_exec_request *req);

typedef enum pdk_exec_answer {
    PDK_EXEC_ALLOW,
    PDK_EXEC_DENY,
    PDK_EXEC_MISSING, /* fail with ENOENT, as the kernel would */
    PDK_EXEC_ASK,     /* judge only: decided on the loop, by ask */
    PDK_EXEC_PENDING, /* ask only: answered later, with pdk_exec_listener_answer() */
} pdk_exec_answer;

typedef struct pdk_exec_listener pdk_exec_listener;

typedef struct pdk_exec_handler {
    /* On the listener's thread: allow, deny, missing, or ask. message (for deny) gets a line
     * for the process's stderr. */
    pdk_exec_answer (*judge)(void *arg, pdk_exec_request *req, char *message, size_t message_size);
    /* On the loop, for what judge said ask: allow, deny, missing, or pending. token
     * identifies a pending request for pdk_exec_listener_answer(). */
    pdk_exec_answer (*ask)(void *arg, pdk_exec_listener *listener, pdk_exec_request *req,
                           uint64_t token, char *message, size_t message_size);
    /* On the listener's thread: pid opens a connection (with the connect notification:
     * connect(2), and sendto/sendmsg/sendmmsg with MSG_FASTOPEN); call names the system
     * call. true lets it go on, false refuses it (ECONNREFUSED). NULL: every one goes on. */
    bool (*connect)(void *arg, pid_t pid, const char *call);
    void *arg;
    /* The commands the rules name and the sandbox's PATH, for the identity of what an exec
     * runs (exec_target.h); both may be NULL. */
    char *const *known_names;
    const char *path_list;
    /* No process of the sandbox can have a root of its own (no nested user namespaces: no
     * mount namespace, chroot or pivot_root): the sandbox's root is opened once. */
    bool one_root;
} pdk_exec_handler;

/* Serve the notifications of listener_fd (taken over) on a thread of its own, and the asks
 * on base. NULL when it cannot. */
pdk_exec_listener *pdk_exec_listener_new(struct event_base *base, int listener_fd,
                                         const pdk_exec_handler *handler);
/* Answer a request ask left pending (from the loop); message as for deny. */
void pdk_exec_listener_answer(pdk_exec_listener *listener, uint64_t token, pid_t pid, bool allow,
                              const char *message);
/* The loop it is served on (for the handler's own timers). */
struct event_base *pdk_exec_listener_base(const pdk_exec_listener *listener);
void pdk_exec_listener_free(pdk_exec_listener *listener);

/* Nested confine: a mark the kernel keeps on pid and hands to every process it makes,
 * whatever becomes of its parents (double forks, setsid, re-parenting to init) and across
 * every exec. The mark is the hard limit of RLIMIT_LOCKS, which Linux has not enforced
 * since 2.4: lowered below the supervisor's own, it can never be raised again inside the
 * sandbox (that needs CAP_SYS_RESOURCE in the host's user namespace, not the sandbox's).
 * pdk_exec_confine returns 0, or -1 with errno (ENOTSUP when the supervisor's own limit
 * is 0, so that no mark is possible). */
int pdk_exec_confine(pid_t pid);
/* Whether pid carries the mark (true when it cannot be told: fail closed). */
bool pdk_exec_is_confined(pid_t pid);

#endif
