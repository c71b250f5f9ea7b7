/* sandbox.c: the supervisor side of starting a sandbox. See sandbox.h for the sequence. */
#include "sandbox.h"

#include "cgroup.h"
#include "display.h"
#include "log.h"
#include "mounts.h"
#include "sandbox_child.h"
#include "sandbox_protocol.h"
#include "supervisor.h"
#include "syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct pdk_sandbox_rest {
    int pidfd;
    pdk_supervisor *sup;
    pdk_cgroup *cgroup;
};

static void kill_and_reap_status(pid_t pid, int pidfd, int *status)
{
    if (pidfd >= 0)
        pdk_sys_pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
    else
        kill(pid, SIGKILL);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
}

static void kill_and_reap(pid_t pid, int pidfd)
{
    int status;
    kill_and_reap_status(pid, pidfd, &status);
}

/* Why the sandbox's init stopped, when a message to it met a closed socket: what it sent
 * before it exited (its own error) replaces the supervisor's view ("Broken pipe"); with no
 * message, its exit status. Reaps it. */
static void explain_init_failure(int sock, pid_t pid, int pidfd, pdk_error *err)
{
    for (int i = 0; i < 64; i++) {
        pdk_msg msg;
        int fds[PDK_MSG_MAX_FDS];
        size_t nfds = PDK_MSG_MAX_FDS;
        int r = pdk__msg_recv(sock, &msg, fds, &nfds, MSG_DONTWAIT);
        for (size_t k = 0; k < nfds; k++)
            close(fds[k]);
        if (r <= 0)
            break;
        if (msg.type == PDK_MSG_ERROR) {
            pdk_error_set(err, 0, "sandbox setup failed: %s", msg.text);
            return;
        }
    }
    int status = 0;
    kill_and_reap_status(pid, pidfd, &status);
    if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
        pdk_error_set(err, 0, "the sandbox's init was killed by signal %d during its setup",
                      WTERMSIG(status));
    else if (WIFEXITED(status))
        pdk_error_set(err, 0, "the sandbox's init ended during its setup (exit status %d)",
                      WEXITSTATUS(status));
}

static void exec_failure_message(const pdk_supervisor_outcome *o, pdk_sandbox_result *res)
{
    /* (shown on one line, whatever the name holds) */
    _cleanup_free_ char *cmd = pdk_display(o->exec_command);
    switch (o->exec_errno) {
    case ENOENT:
    case ENOTDIR:
        res->exit_status = PDK_EXIT_NOT_FOUND;
        if (strchr(cmd, '/'))
            snprintf(res->message, sizeof(res->message),
                     "cannot run '%s': no such file in the sandbox (check the path; only the "
                     "workspace and the host's read-only root are visible)",
                     cmd);
        else
            snprintf(res->message, sizeof(res->message),
                     "cannot run '%s': command not found in the sandbox's PATH (install it, "
                     "or give its full path)",
                     cmd);
        break;
    case EACCES:
        res->exit_status = PDK_EXIT_CANNOT_EXECUTE;
        snprintf(res->message, sizeof(res->message),
                 "cannot run '%s': permission denied (is it executable? files under /tmp "
                 "and $HOME inside the sandbox are not)",
                 cmd);
        break;
    case ENOEXEC:
        res->exit_status = PDK_EXIT_CANNOT_EXECUTE;
        snprintf(res->message, sizeof(res->message),
                 "cannot run '%s': not an executable format (add a #! line, or run it with "
                 "its interpreter)",
                 cmd);
        break;
    default:
        res->exit_status = PDK_EXIT_CANNOT_EXECUTE;
        snprintf(res->message, sizeof(res->message), "cannot run '%s': %s", cmd,
                 strerror(o->exec_errno));
        break;
    }
}

static void fill_result(const pdk_supervisor_outcome *o, pdk_sandbox_result *res)
{
    res->started = o->started;
    res->timed_out = o->timed_out;
    if (o->exec_failed) {
        exec_failure_message(o, res);
    } else if (o->exited) {
        int s = o->wait_status;
        res->exit_status = WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s);
    } else if (o->timed_out) {
        res->exit_status = 128 + SIGKILL;
    } else if (o->setup_failed) {
        res->exit_status = PDK_EXIT_PADDOCK_FAILED;
        _cleanup_free_ char *text = pdk_display(o->message);
        snprintf(res->message, sizeof(res->message), "sandbox setup failed: %.990s", text);
    } else {
        int s = o->init_wait_status;
        res->exit_status = PDK_EXIT_PADDOCK_FAILED;
        if (WIFSIGNALED(s))
            snprintf(res->message, sizeof(res->message),
                     "the sandbox's init was killed by signal %d before the command finished",
                     WTERMSIG(s));
        else
            snprintf(res->message, sizeof(res->message),
                     "the sandbox's init exited (status %d) before the command finished",
                     WEXITSTATUS(s));
    }
}

int pdk_sandbox_run(const pdk_sandbox_config *cfg, pdk_sandbox_result *res, pdk_error *err)
{
    memset(res, 0, sizeof(*res));
    res->exit_status = PDK_EXIT_PADDOCK_FAILED;

    for (size_t i = 0; i < cfg->pass_fd_count; i++)
        if (fcntl(cfg->pass_fds[i], F_GETFD) < 0)
            return pdk_error_set(err, 0, "--pass-fd %d: fd %d is not open in paddock",
                                 cfg->pass_fds[i], cfg->pass_fds[i]);

    pdk_idmap idmap;
    pdk_idmap_init(&idmap);

    /* 1. Everything that can be prepared before the clone. The supervisor writes to sockets
     * and pipes whose other end the sandbox holds (the gateway's clients, the pty): a peer
     * that goes away is an EPIPE to handle, never a signal that kills paddock. Ignored for
     * the rest of the process's life (the gateway and the pty outlive this function); the
     * command starts with every disposition at its default (sandbox_child.c). */
    struct sigaction ignore_pipe = {.sa_handler = SIG_IGN};
    sigemptyset(&ignore_pipe.sa_mask);
    (void)sigaction(SIGPIPE, &ignore_pipe, NULL);
    pdk_seccomp_program seccomp;
    pdk_seccomp_options sopts = {.nested_userns = cfg->nested_userns,
                                 .notify_exec = cfg->exec_handler != NULL,
                                 .notify_connect = cfg->notify_connect};
    if (pdk_seccomp_build(&sopts, &seccomp, err) < 0)
        return -1;
    pdk_trace("seccomp built");
    pdk_cgroup *cgroup = NULL;
    pdk_cgroup_limits limits = {cfg->memory_bytes, cfg->pids, cfg->cpu_millicores};
    if (pdk_cgroup_create(cfg->cgroup_name, &limits, cfg->allow_degraded, &cgroup, err) < 0) {
        pdk_seccomp_program_free(&seccomp);
        return -1;
    }
    pdk_supervisor *sup = NULL;
    bool masked = false; /* signals blocked (args.original_mask holds the caller's) */
    int sock[2] = {-1, -1};
    int pidfd = -1;
    pid_t pid = -1;
    int ret = -1;
    pdk_mount_sources sources = {.workspace = -1, .layers = -1};
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock) < 0) {
        pdk_error_set(err, errno, "socketpair");
        goto out;
    }

    pdk__child_args args = {
        .cfg = cfg,
        .idmap = &idmap,
        .seccomp = &seccomp,
        .sync_fd = sock[1],
        .v1_cgroup = pdk_cgroup_mode_of(cgroup) == PDK_CGROUP_V1,
    };

    /* 2. One clone3 with every namespace; all signals blocked across it so that the child
     * starts with none pending and no handler of ours runs in it. */
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &args.original_mask);
    masked = true;
    pid = pdk_clone3(PDK_NAMESPACE_FLAGS, &pidfd, pdk_cgroup_clone_fd(cgroup));
    if (pid == 0) {
        close(sock[0]);
        pdk__sandbox_child_main(&args);
    }
    int clone_errno = errno;
    pdk_trace("cloned");
    close(sock[1]);
    sock[1] = -1;
    if (pid < 0) {
        if (clone_errno == EPERM || clone_errno == ENOSPC || clone_errno == EINVAL)
            pdk_error_set(err, clone_errno,
                          "cannot create the sandbox's namespaces (clone3); are user "
                          "namespaces enabled? see 'paddock doctor'");
        else
            pdk_error_set(err, clone_errno, "clone3");
        goto out;
    }

    /* 3. Maps (the child then builds the part of its tree that depends on nothing else),
     * the caller's own preparation, the cgroup, the bind sources, go. */
    if (pdk_idmap_write(&idmap, pid, err) < 0)
        goto init_failed;
    if (pdk__msg_send(sock[0], PDK_MSG_MAPS, 0, NULL, NULL, 0) < 0) {
        pdk_error_set(err, errno, "starting the sandbox");
        goto init_failed;
    }
    if (cfg->after_clone && cfg->after_clone(cfg->after_clone_arg, err) < 0)
        goto kill;
    pdk_trace("prepared after the clone");
    if (pdk_cgroup_attach(cgroup, pid, err) < 0)
        goto kill;
    if (idmap.privileged) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
        _cleanup_close_ int userns = open(path, O_RDONLY | O_CLOEXEC);
        if (userns < 0) {
            pdk_error_set(err, errno, "opening %s", path);
            goto kill;
        }
        if (pdk_mounts_open_sources(cfg, userns, &sources, err) < 0)
            goto kill;
    }
    int fds[PDK_MSG_MAX_FDS];
    size_t nfds = idmap.privileged ? pdk_mounts_sources_to_fds(&sources, fds, PDK_MSG_MAX_FDS) : 0;
    if (pdk__msg_send(sock[0], PDK_MSG_GO, 0, NULL, fds, nfds) < 0) {
        pdk_error_set(err, errno, "starting the sandbox");
        goto init_failed;
    }
    pdk_mounts_close_sources(&sources);

    /* 5. Supervise (the event loop is made while the sandbox builds its tree). */
    pdk_trace("go sent");
    sup = pdk_supervisor_new(err);
    /* Signals stayed blocked since the clone: one that came meanwhile is delivered now, to
     * the loop's handlers, and forwarded. */
    sigprocmask(SIG_SETMASK, &args.original_mask, NULL);
    masked = false;
    if (!sup)
        goto kill;
    if (cfg->exec_handler)
        pdk_supervisor_set_exec_handler(sup, cfg->exec_handler);
    if (cfg->egress && cfg->egress_sockets)
        pdk_supervisor_set_egress(sup, cfg->egress_sockets, cfg->egress_stop, cfg->egress_arg);
    if (cfg->before_command && cfg->before_command(cfg->before_command_arg, err) < 0)
        goto kill;
    if (pdk__msg_send(sock[0], PDK_MSG_RUN, 0, NULL, NULL, 0) < 0) {
        pdk_error_set(err, errno, "starting the command");
        goto init_failed;
    }
    res->released = true;
    if (cfg->idle_step)
        pdk_supervisor_add_idle(sup, cfg->idle_step, cfg->idle_step_arg);
    pdk_supervisor_outcome outcome;
    memset(&outcome, 0, sizeof(outcome));
    if (pdk_supervisor_run(sup, pid, pidfd, sock[0], cfg->timeout_seconds, cfg->tty, &outcome,
                           err) < 0) {
        pdk_strv_free(outcome.placeholders);
        goto kill;
    }
    fill_result(&outcome, res);
    res->placeholders = outcome.placeholders;
    /* Init may still be exiting: pdk_sandbox_result_free() reaps it. */
    res->rest = xcalloc(1, sizeof(*res->rest));
    res->rest->pidfd = steal_fd(&pidfd);
    res->rest->sup = steal_pointer(&sup);
    res->rest->cgroup = steal_pointer(&cgroup);
    ret = 0;
    goto out;

init_failed:
    /* (reaps init) */
    explain_init_failure(sock[0], pid, pidfd, err);
    goto out;
kill:
    kill_and_reap(pid, pidfd);
out:
    if (masked)
        sigprocmask(SIG_SETMASK, &args.original_mask, NULL);
    pdk_mounts_close_sources(&sources);
    if (sock[0] >= 0)
        close(sock[0]);
    if (sock[1] >= 0)
        close(sock[1]);
    if (pidfd >= 0)
        close(pidfd);
    pdk_supervisor_free(sup);
    pdk_cgroup_destroy(cgroup);
    pdk_seccomp_program_free(&seccomp);
    return ret;
}

void pdk_sandbox_result_free(pdk_sandbox_result *res)
{
    pdk_strv_free(res->placeholders);
    res->placeholders = NULL;
    pdk_sandbox_rest *rest = res->rest;
    if (!rest)
        return;
    pdk_supervisor_reap(rest->pidfd);
    close(rest->pidfd);
    pdk_supervisor_free(rest->sup);
    pdk_cgroup_destroy(rest->cgroup);
    free(rest);
    res->rest = NULL;
}
