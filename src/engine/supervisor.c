/* supervisor.c: see supervisor.h. */
#include "supervisor.h"

#include "log.h"
#include "pty.h"
#include "sandbox_protocol.h"
#include "syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

static const int forwarded_signals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                                        SIGUSR1, SIGUSR2, SIGWINCH};

struct pdk_supervisor {
    struct event_base *base;
    struct event *signals[PDK_ARRAY_SIZE(forwarded_signals)];
    struct event *sync_ev;
    struct event *pidfd_ev;
    struct event *timeout_ev;
    int init_pidfd;
    int sync_fd;
    bool tty;
    pdk_pty_relay *pty;
    pdk_supervisor_outcome *out;
    struct event *idle_ev;
    bool (*idle_step)(void *arg);
    void *idle_arg;
    pdk_exec_handler exec_handler; /* judge NULL: no listener expected */
    pdk_exec_listener *exec_listener;
    void (*egress_sockets)(void *arg, struct event_base *base, pid_t init_pid,
                           const pdk_egress_socket *socks, size_t count);
    pid_t init_pid;
    void (*egress_stop)(void *arg);
    void *egress_arg;
    bool egress_given;
};

static int send_signal(pdk_supervisor *sup, int sig)
{
    return pdk_sys_pidfd_send_signal(sup->init_pidfd, sig, NULL, 0);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    pdk_supervisor *sup = arg;
    if (sig == SIGWINCH) {
        pdk_pty_relay_resize(sup->pty);
        return;
    }
    if (sup->init_pidfd >= 0)
        send_signal(sup, (int)sig);
}

static void handle_message(pdk_supervisor *sup, const pdk_msg *msg, int *fds, size_t nfds)
{
    pdk_supervisor_outcome *out = sup->out;
    switch ((enum pdk_msg_type)msg->type) {
    case PDK_MSG_ERROR:
        out->setup_failed = true;
        snprintf(out->message, sizeof(out->message), "%.*s", (int)sizeof(out->message) - 1,
                 msg->text);
        break;
    case PDK_MSG_PLACEHOLDER: {
        _cleanup_free_ char *copy = xstrdup(msg->text);
        char *save = NULL;
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
            pdk_strv_push(&out->placeholders, line);
        break;
    }
    case PDK_MSG_LISTENER:
        if (nfds == 1 && sup->exec_handler.judge && !sup->exec_listener) {
            sup->exec_listener = pdk_exec_listener_new(sup->base, fds[0], &sup->exec_handler);
            if (sup->exec_listener)
                fds[0] = -1;
        }
        break;
    case PDK_MSG_EGRESS:
        if (sup->egress_sockets && nfds > 0 && nfds <= PDK_EGRESS_MAX_SOCKETS &&
            !sup->egress_given) {
            pdk_egress_socket socks[PDK_EGRESS_MAX_SOCKETS];
            if (pdk_egress_parse(msg->text, fds, nfds, socks)) {
                sup->egress_given = true;
                sup->egress_sockets(sup->egress_arg, sup->base, sup->init_pid, socks, nfds);
                for (size_t i = 0; i < nfds; i++)
                    fds[i] = -1; /* the handler's now */
            } else {
                pdk_debug("egress sockets: a message that does not describe them");
            }
        }
        break;
    case PDK_MSG_PTY:
        if (nfds == 1 && sup->tty && !sup->pty) {
            sup->pty = pdk_pty_relay_start(sup->base, fds[0]);
            fds[0] = -1;
        }
        break;
    case PDK_MSG_EXEC_FAILED:
        out->exec_failed = true;
        out->exec_errno = msg->value;
        snprintf(out->exec_command, sizeof(out->exec_command), "%.*s",
                 (int)sizeof(out->exec_command) - 1, msg->text);
        break;
    case PDK_MSG_STARTED:
        pdk_trace("supervisor: started");
        out->started = true;
        break;
    case PDK_MSG_EXIT:
        /* Everything in the sandbox is dead; init is exiting. */
        out->exited = true;
        out->wait_status = msg->value;
        event_base_loopbreak(sup->base);
        break;
    case PDK_MSG_GO:
    case PDK_MSG_MAPS:
    case PDK_MSG_RUN:
    default:
        pdk_debug("unexpected message %u from the sandbox", msg->type);
        break;
    }
    for (size_t i = 0; i < nfds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

static void drain_messages(pdk_supervisor *sup)
{
    for (;;) {
        pdk_msg msg;
        int fds[PDK_EGRESS_MAX_SOCKETS];
        size_t nfds = PDK_ARRAY_SIZE(fds);
        int r = pdk__msg_recv(sup->sync_fd, &msg, fds, &nfds, MSG_DONTWAIT);
        if (r <= 0) {
            if (r == 0 && sup->sync_ev)
                event_del(sup->sync_ev);
            return;
        }
        handle_message(sup, &msg, fds, nfds);
    }
}

static void on_sync(evutil_socket_t fd, short what, void *arg)
{
    drain_messages(arg);
}

static void on_init_exit(evutil_socket_t fd, short what, void *arg)
{
    pdk_supervisor *sup = arg;
    pdk_trace("supervisor: init exited");
    drain_messages(sup);
    if (!sup->out->exited)
        sup->out->init_wait_status = pdk_supervisor_reap(sup->init_pidfd);
    event_base_loopbreak(sup->base);
}

int pdk_supervisor_reap(int init_pidfd)
{
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    while (waitid((idtype_t)P_PIDFD, (id_t)init_pidfd, &info, WEXITED) < 0) {
        if (errno != EINTR)
            return -1; /* already reaped */
    }
    if (info.si_code == CLD_EXITED)
        return (info.si_status & 0xff) << 8;
    return info.si_status & 0x7f;
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    pdk_supervisor *sup = arg;
    sup->out->timed_out = true;
    send_signal(sup, SIGKILL);
}

static void on_idle(evutil_socket_t fd, short what, void *arg)
{
    pdk_supervisor *sup = arg;
    static const struct timeval now = {0, 0};
    if (sup->idle_step && sup->idle_step(sup->idle_arg))
        evtimer_add(sup->idle_ev, &now);
}

void pdk_supervisor_set_exec_handler(pdk_supervisor *sup, const pdk_exec_handler *handler)
{
    sup->exec_handler = *handler;
}

void pdk_supervisor_set_egress(pdk_supervisor *sup,
                               void (*sockets)(void *arg, struct event_base *base, pid_t init_pid,
                                               const pdk_egress_socket *socks, size_t count),
                               void (*stop)(void *arg), void *arg)
{
    sup->egress_sockets = sockets;
    sup->egress_stop = stop;
    sup->egress_arg = arg;
}

void pdk_supervisor_add_idle(pdk_supervisor *sup, bool (*step)(void *arg), void *arg)
{
    static const struct timeval now = {0, 0};
    if (!sup->idle_ev)
        sup->idle_ev = evtimer_new(sup->base, on_idle, sup);
    if (!sup->idle_ev)
        return;
    sup->idle_step = step;
    sup->idle_arg = arg;
    evtimer_add(sup->idle_ev, &now);
}

pdk_supervisor *pdk_supervisor_new(pdk_error *err)
{
    pdk_supervisor *sup = xcalloc(1, sizeof(*sup));
    sup->init_pidfd = -1;
    sup->sync_fd = -1;
    struct event_config *config = event_config_new();
    if (config) {
        /* Only epoll: no signal-handling backends we do not use. */
        event_config_avoid_method(config, "select");
        event_config_avoid_method(config, "poll");
        sup->base = event_base_new_with_config(config);
        event_config_free(config);
    }
    if (!sup->base)
        sup->base = event_base_new();
    if (!sup->base) {
        free(sup);
        pdk_error_set(err, errno, "cannot create the supervisor's event loop");
        return NULL;
    }
    for (size_t i = 0; i < PDK_ARRAY_SIZE(forwarded_signals); i++) {
        sup->signals[i] = evsignal_new(sup->base, forwarded_signals[i], on_signal, sup);
        if (!sup->signals[i] || event_add(sup->signals[i], NULL) < 0) {
            pdk_supervisor_free(sup);
            pdk_error_set(err, errno, "cannot catch signal %d", forwarded_signals[i]);
            return NULL;
        }
    }
    return sup;
}

struct event_base *pdk_supervisor_base(pdk_supervisor *sup)
{
    return sup->base;
}

int pdk_supervisor_run(pdk_supervisor *sup, pid_t init_pid, int init_pidfd, int sync_fd,
                       int64_t timeout_seconds, bool tty, pdk_supervisor_outcome *out,
                       pdk_error *err)
{
    sup->init_pid = init_pid;
    sup->init_pidfd = init_pidfd;
    sup->sync_fd = sync_fd;
    sup->tty = tty;
    sup->out = out;
    sup->sync_ev = event_new(sup->base, sync_fd, EV_READ | EV_PERSIST, on_sync, sup);
    sup->pidfd_ev = event_new(sup->base, init_pidfd, EV_READ, on_init_exit, sup);
    if (!sup->sync_ev || !sup->pidfd_ev || event_add(sup->sync_ev, NULL) < 0 ||
        event_add(sup->pidfd_ev, NULL) < 0)
        return pdk_error_set(err, errno, "cannot watch the sandbox");
    if (timeout_seconds > 0) {
        struct timeval tv = {.tv_sec = (time_t)timeout_seconds};
        sup->timeout_ev = evtimer_new(sup->base, on_timeout, sup);
        if (!sup->timeout_ev || evtimer_add(sup->timeout_ev, &tv) < 0)
            return pdk_error_set(err, errno, "cannot arm the timeout");
    }
    if (event_base_dispatch(sup->base) < 0)
        return pdk_error_set(err, errno, "the supervisor's event loop failed");
    /* Its thread ends here: nothing is left in the sandbox to ask. */
    pdk_exec_listener_free(sup->exec_listener);
    sup->exec_listener = NULL;
    if (sup->egress_stop) {
        sup->egress_stop(sup->egress_arg);
        sup->egress_stop = NULL;
    }
    if (sup->pty) {
        pdk_pty_relay_stop(sup->pty);
        sup->pty = NULL;
    }
    return 0;
}

void pdk_supervisor_free(pdk_supervisor *sup)
{
    if (!sup)
        return;
    pdk_exec_listener_free(sup->exec_listener);
    if (sup->pty)
        pdk_pty_relay_stop(sup->pty);
    for (size_t i = 0; i < PDK_ARRAY_SIZE(forwarded_signals); i++)
        if (sup->signals[i])
            event_free(sup->signals[i]);
    if (sup->sync_ev)
        event_free(sup->sync_ev);
    if (sup->pidfd_ev)
        event_free(sup->pidfd_ev);
    if (sup->timeout_ev)
        event_free(sup->timeout_ev);
    if (sup->idle_ev)
        event_free(sup->idle_ev);
    if (sup->base)
        event_base_free(sup->base);
    free(sup);
}
