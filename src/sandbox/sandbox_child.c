/* sandbox_child.c: the child of the clone. It builds the sandbox as pid 1 of the new pid
 * namespace, forks the command, and stays as its init: it reaps orphans, forwards signals
 * from the supervisor, and when the command exits it reports the status and exits, which
 * makes the kernel kill everything left in the namespace. */
#include "sandbox_child.h"

#include "capabilities.h"
#include "fsutil.h"
#include "landlock.h"
#include "log.h"
#include "mounts.h"
#include "namespaces.h"
#include "egress_net.h"
#include "sandbox_protocol.h"
#include "syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/futex.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static int sync_fd = -1;

static PDK_NORETURN PDK_PRINTF(1, 2) void die(const char *fmt, ...)
{
    char text[PDK_MSG_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (sync_fd < 0 || pdk__msg_send(sync_fd, PDK_MSG_ERROR, 0, text, NULL, 0) < 0) {
        char line[PDK_MSG_TEXT_MAX + 32];
        int n = snprintf(line, sizeof(line), "paddock: %s\n", text);
        (void)!write(STDERR_FILENO, line, (size_t)n);
    }
    _exit(PDK_EXIT_PADDOCK_FAILED);
}

static PDK_NORETURN void die_error(const pdk_error *err)
{
    die("%s", err->message);
}

/* Fault injection for the test suite (tests/integration/t_faults.sh): init fails here, with
 * a message, when PADDOCK_TEST_INIT_FAIL names this point. Harmless: the sandbox only ends
 * before its command starts, as any failed setup does. (init is pid 1 of its namespace and
 * cannot kill itself; log.h's pdk_crash_point is for the supervisor.) */
static void failure_point(const char *name)
{
    const char *at = getenv("PADDOCK_TEST_INIT_FAIL");
    if (at && strcmp(at, name) == 0)
        die("failing at %s, as PADDOCK_TEST_INIT_FAIL asks", name);
}

/* The setup thread: while init builds the rest of the tree, it builds /dev and then makes
 * the network namespace (which costs more than all the other namespaces together, so it is
 * not among clone3's flags). A thread of init (CLONE_THREAD, with the kernel clearing
 * tid and waking a futex on it at exit, as pthread_join relies on), made after init's ids
 * are set so that it has them too. It makes only system calls: glibc does not know about
 * it (no locks taken for it), and it shares errno with init, which matters only when one
 * of them fails. */
typedef struct setup_thread {
    bool tty_gid_mapped;
    bool no_nested_userns;
    bool no_loopback;
    volatile int dev_state; /* 0 while building, 1 built, -1 failed */
    int dev_errno;
    const char *dev_what;
    int netns_fd;
    int net_errno;
    const char *net_what;
    volatile pid_t tid;
} setup_thread;

static void futex_wait(volatile int *addr, int value)
{
    pdk_sys_futex(addr, FUTEX_WAIT, value);
}

static int setup_thread_main(void *arg)
{
    setup_thread *t = arg;
    if (pdk_mounts_build_dev(t->tty_gid_mapped, &t->dev_what) < 0) {
        t->dev_errno = errno;
        t->dev_state = -1;
    } else {
        t->dev_state = 1;
    }
    pdk_sys_futex(&t->dev_state, FUTEX_WAKE, 1);
    t->netns_fd = pdk_netns_create(!t->no_loopback, t->no_nested_userns, &t->net_what);
    if (t->netns_fd < 0)
        t->net_errno = errno;
    return 0;
}

static void setup_thread_start(setup_thread *t)
{
    static char stack[32 * 1024] __attribute__((aligned(16)));
    t->netns_fd = -1;
    if (clone(setup_thread_main, stack + sizeof(stack),
              CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
                  CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID,
              t, (pid_t *)&t->tid, NULL, (pid_t *)&t->tid) < 0)
        die("starting the setup thread: %s", strerror(errno));
}

static void setup_thread_wait_dev(setup_thread *t)
{
    while (t->dev_state == 0)
        futex_wait(&t->dev_state, 0);
    if (t->dev_state < 0)
        die("building /dev: %s: %s", t->dev_what, strerror(t->dev_errno));
}

static void setup_thread_join_netns(setup_thread *t)
{
    for (pid_t tid; (tid = t->tid) != 0;)
        futex_wait((volatile int *)&t->tid, tid);
    if (t->netns_fd < 0)
        die("%s: %s", t->net_what, strerror(t->net_errno));
    if (setns(t->netns_fd, CLONE_NEWNET) < 0)
        die("joining the new network namespace (setns): %s", strerror(errno));
    close(t->netns_fd);
}

/* The egress gateway's route and sockets, in the sandbox's network namespace (init holds
 * its capabilities there still: ports below 1024 bind), handed to the supervisor. */
static void make_egress_sockets(const pdk_sandbox_config *cfg)
{
    pdk_egress_socket socks[PDK_EGRESS_MAX_SOCKETS];
    size_t n = 0;
    const char *what = "";
    if (pdk_egress_net_setup(cfg->egress_ports, cfg->egress_port_count, socks, &n, &what) < 0)
        die("egress gateway: %s: %s", what, strerror(errno));
    char text[PDK_MSG_TEXT_MAX];
    pdk_egress_describe(socks, n, text, sizeof(text));
    int fds[PDK_EGRESS_MAX_SOCKETS];
    for (size_t i = 0; i < n; i++)
        fds[i] = socks[i].fd;
    if (pdk__msg_send(sync_fd, PDK_MSG_EGRESS, 0, text, fds, n) < 0)
        die("passing the egress sockets to the supervisor: %s", strerror(errno));
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
    pdk_trace("child: egress sockets made");
}

static void set_rlimits(const pdk_sandbox_config *cfg)
{
    struct rlimit core = {0, 0};
    if (setrlimit(RLIMIT_CORE, &core) < 0)
        die("setrlimit(RLIMIT_CORE): %s", strerror(errno));
    /* Counted per (user namespace, uid): this sandbox's processes only. */
    if (cfg->pids > 0) {
        struct rlimit nproc = {(rlim_t)cfg->pids, (rlim_t)cfg->pids};
        if (setrlimit(RLIMIT_NPROC, &nproc) < 0)
            die("setrlimit(RLIMIT_NPROC): %s", strerror(errno));
    }
}

static int build_landlock(const pdk_sandbox_config *cfg)
{
    if (cfg->landlock_abi <= 0)
        return -1;
    char **write = NULL;
    pdk_strv_push(&write, "/tmp");
    pdk_strv_push(&write, "/dev/shm");
    if (cfg->home && strcmp(cfg->home, "/") != 0)
        pdk_strv_push(&write, cfg->home);
    if (cfg->workspace)
        pdk_strv_push(&write, cfg->workspace);
    for (size_t i = 0; i < cfg->bind_count; i++)
        if (cfg->binds[i].writable)
            pdk_strv_push(&write, cfg->binds[i].target);
    char *read[] = {"/", NULL};
    char *devices[] = {"/dev", "/proc", NULL};
    pdk_landlock_spec spec = {
        .abi = cfg->landlock_abi,
        /* A nested sandbox mounts, which Landlock refuses to any process whose domain
         * handles filesystem rights: the mounts alone hold the filesystem then (locked in a
         * namespace the command holds no capability over, they cannot be undone from a
         * nested one); the scoping and the TCP rules stay. */
        .without_filesystem = cfg->nested_userns,
        .read_paths = read,
        .write_paths = write,
        .device_paths = devices,
        .restrict_tcp_bind = cfg->restrict_tcp_bind,
        .tcp_bind = cfg->tcp_bind,
        .tcp_bind_count = cfg->tcp_bind_count,
        .restrict_tcp_connect = cfg->restrict_tcp_connect,
        .tcp_connect = cfg->tcp_connect,
        .tcp_connect_count = cfg->tcp_connect_count,
    };
    if (!pdk_landlock_spec_restricts(&spec)) {
        pdk_strv_free(write);
        return -1;
    }
    const char *what = "landlock";
    int fd = pdk_landlock_build(&spec, &what);
    int saved = errno;
    pdk_strv_free(write);
    if (fd < 0)
        die("%s: %s", what, strerror(saved));
    return fd;
}

/* --tty: a pty from the sandbox's own devpts; the master goes to the supervisor. */
static int open_pty(char *slave_path, size_t len)
{
    int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0)
        die("opening /dev/ptmx for --tty: %s", strerror(errno));
    if (grantpt(master) < 0 || unlockpt(master) < 0 || ptsname_r(master, slave_path, len) != 0)
        die("setting up the pty for --tty: %s", strerror(errno));
    if (pdk__msg_send(sync_fd, PDK_MSG_PTY, 0, NULL, &master, 1) < 0)
        die("passing the pty to the supervisor: %s", strerror(errno));
    return master;
}

/* execve through the sandbox's PATH, keeping the most telling errno (as execvp does). The
 * search is made with faccessat before one execve, not by trying execve in each directory:
 * with the exec listener, every execve is a decision, and the command's own is made once. */
static int exec_command(char *const *argv, char *const *envp)
{
    const char *cmd = argv[0];
    if (strchr(cmd, '/')) {
        execve(cmd, argv, envp);
        return errno;
    }
    const char *path = NULL;
    for (size_t i = 0; envp[i]; i++)
        if (strncmp(envp[i], "PATH=", 5) == 0)
            path = envp[i] + 5;
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    int best = ENOENT;
    char full[4096];
    for (const char *p = path; p;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (n == 0)
            snprintf(full, sizeof(full), "%s", cmd);
        else
            snprintf(full, sizeof(full), "%.*s/%s", (int)n, p, cmd);
        p = colon ? colon + 1 : NULL;
        struct stat st;
        if (stat(full, &st) < 0) {
            if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE)
                best = errno;
            continue;
        }
        if (!S_ISREG(st.st_mode) || faccessat(AT_FDCWD, full, X_OK, AT_EACCESS) < 0) {
            best = S_ISDIR(st.st_mode) ? EACCES : errno ? errno : EACCES;
            continue;
        }
        execve(full, argv, envp);
        return errno; /* found and executable, yet refused: that is the answer */
    }
    return best;
}

/* The command's exit before its exec. It runs on a stack of init's (vfork-style), which
 * AddressSanitizer's no-return hook would take for a broken one: exit_group directly. */
static PDK_NORETURN void command_exit(int status)
{
    pdk_sys_exit_group(status);
}

static PDK_NORETURN void command_main(const pdk__child_args *args, int ruleset_fd,
                                      const char *pty_slave, int exec_report_fd)
{
    const pdk_sandbox_config *cfg = args->cfg;
    /* Default dispositions (exec keeps ignored signals ignored) and the caller's mask. */
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &args->original_mask, NULL);

    if (setsid() < 0)
        command_exit(PDK_EXIT_PADDOCK_FAILED);
    if (pty_slave) {
        int slave = open(pty_slave, O_RDWR | O_CLOEXEC);
        if (slave < 0 || ioctl(slave, TIOCSCTTY, 0) < 0 || dup2(slave, 0) < 0 ||
            dup2(slave, 1) < 0 || dup2(slave, 2) < 0)
            command_exit(PDK_EXIT_PADDOCK_FAILED);
        close(slave);
    }
    if (ruleset_fd >= 0) {
        if (pdk_landlock_restrict(ruleset_fd) < 0) {
            int e = errno;
            (void)!write(exec_report_fd, &e, sizeof(e));
            command_exit(PDK_EXIT_PADDOCK_FAILED);
        }
        close(ruleset_fd);
    }
    /* Every fd but 0, 1, 2 and the passed ones is closed at exec. */
    pdk_sys_close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    for (size_t i = 0; i < cfg->pass_fd_count; i++) {
        int fl = fcntl(cfg->pass_fds[i], F_GETFD);
        if (fl >= 0)
            fcntl(cfg->pass_fds[i], F_SETFD, fl & ~FD_CLOEXEC);
    }
    if (chdir(cfg->cwd) < 0 && (!cfg->workspace || chdir(cfg->workspace) < 0) && chdir("/") < 0)
        command_exit(PDK_EXIT_PADDOCK_FAILED);
    pdk_trace("command: exec");
    int e = exec_command(cfg->argv, cfg->envp);
    int report[2] = {-1, e};
    (void)!write(exec_report_fd, report, sizeof(report));
    command_exit(e == ENOENT ? PDK_EXIT_NOT_FOUND : PDK_EXIT_CANNOT_EXECUTE);
}

typedef struct command_start {
    const pdk__child_args *args;
    int ruleset_fd;
    const char *pty_slave;
    int report_fd;
    int close_fds[2]; /* init's ends, not the command's */
} command_start;

static int command_trampoline(void *arg)
{
    const command_start *cs = arg;
    for (size_t i = 0; i < 2; i++)
        if (cs->close_fds[i] >= 0)
            close(cs->close_fds[i]);
    command_main(cs->args, cs->ruleset_fd, cs->pty_slave, cs->report_fd);
}

/* Close every fd from 3 up but keep_a and keep_b. */
static void close_all_but(int keep_a, int keep_b)
{
    int lo = keep_a < keep_b ? keep_a : keep_b, hi = keep_a < keep_b ? keep_b : keep_a;
    unsigned from = 3;
    int keep[2] = {lo, hi};
    for (size_t i = 0; i < 2; i++) {
        if (keep[i] < (int)from)
            continue;
        if (keep[i] > (int)from)
            pdk_sys_close_range(from, (unsigned)keep[i] - 1, 0);
        from = (unsigned)keep[i] + 1;
    }
    pdk_sys_close_range(from, ~0U, 0);
}

/* The init loop: forward signals, reap, report the command's status. */
static PDK_NORETURN void init_loop(pid_t command)
{
    sigset_t all;
    sigfillset(&all);
    for (;;) {
        siginfo_t info;
        int sig = sigwaitinfo(&all, &info);
        if (sig < 0) {
            if (errno == EINTR)
                continue;
            die("sigwaitinfo: %s", strerror(errno));
        }
        if (sig != SIGCHLD) {
            kill(command, sig);
            continue;
        }
        for (;;) {
            int status;
            pid_t pid = waitpid(-1, &status, WNOHANG);
            if (pid <= 0)
                break;
            if (pid == command) {
                pdk_trace("child: command exited");
                /* Kill and reap whatever is left before reporting, so that the supervisor
                 * may look at the workspace at once, while the kernel tears the
                 * namespaces down after our exit. */
                kill(-1, SIGKILL);
                while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
                    ;
                pdk__msg_send(sync_fd, PDK_MSG_EXIT, status, NULL, NULL, 0);
                _exit(0);
            }
        }
    }
}

void pdk__sandbox_child_main(const pdk__child_args *args)
{
    const pdk_sandbox_config *cfg = args->cfg;
    const pdk_idmap *idmap = args->idmap;
    sync_fd = args->sync_fd;

    /* Everything is blocked: init takes signals with sigwaitinfo. */
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        die("prctl(PR_SET_PDEATHSIG): %s", strerror(errno));

    /* The host root's clone needs no id maps: made while the supervisor writes them. */
    pdk_error err = {0};
    pdk_mount_builder *builder = pdk_mounts_new(cfg, idmap, sync_fd, &err);
    if (!builder)
        die_error(&err);

    pdk_msg msg;
    int fds[PDK_MSG_MAX_FDS];
    size_t nfds = 0;
    int r = pdk__msg_recv(sync_fd, &msg, fds, &nfds, 0);
    if (r <= 0 || msg.type != PDK_MSG_MAPS)
        _exit(PDK_EXIT_PADDOCK_FAILED); /* the supervisor is gone or gave up */
    pdk_trace("child: maps written");
    /* Not dumpable from here on: the command cannot open our /proc files. Only now, as the
     * supervisor (a regular user's) must open our uid_map and gid_map first. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        die("prctl(PR_SET_DUMPABLE): %s", strerror(errno));

    if (idmap->privileged) {
        if (setgroups(0, NULL) < 0)
            die("setgroups: %s", strerror(errno));
        if (setresgid(idmap->inside_gid, idmap->inside_gid, idmap->inside_gid) < 0 ||
            setresuid(0, 0, 0) < 0)
            die("switching to the sandbox's ids: %s", strerror(errno));
        /* A change of ids clears the parent-death signal: arm it again. Should the
         * supervisor have died in between, the receive of "go" below sees it. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
            die("prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
        /* While the supervisor prepares the session and the bind sources. */
        if (pdk_mounts_begin(builder) < 0)
            die_error(&err);
    }

    nfds = PDK_MSG_MAX_FDS;
    r = pdk__msg_recv(sync_fd, &msg, fds, &nfds, 0);
    if (r <= 0 || msg.type != PDK_MSG_GO)
        _exit(PDK_EXIT_PADDOCK_FAILED);
    pdk_trace("child: go received");
    failure_point("after-go");
    if (args->v1_cgroup && unshare(CLONE_NEWCGROUP) < 0)
        die("entering a cgroup namespace rooted at the sandbox's cgroup: %s", strerror(errno));

    pdk_mount_sources src;
    if (idmap->privileged) {
        pdk_mounts_sources_from_fds(cfg, fds, nfds, &src);
    } else {
        /* Unprivileged: the sources are opened here by path, before anything covers them. */
        if (pdk_mounts_open_sources(cfg, -1, &src, &err) < 0 || pdk_mounts_begin(builder) < 0)
            die_error(&err);
    }
    /* /dev and the network namespace, by a thread, while this one builds the rest of the
     * tree (until go, the supervisor kept the other processor busy). */
    setup_thread helper = {
        .tty_gid_mapped = idmap->privileged || idmap->inside_gid == 5,
        .no_nested_userns = !cfg->nested_userns,
        .no_loopback = cfg->no_loopback,
    };
    setup_thread_start(&helper);
    if (pdk_mounts_finish(builder, &src) < 0)
        die_error(&err);
    setup_thread_wait_dev(&helper);
    if (pdk_mounts_enter(builder) < 0)
        die_error(&err);
    pdk_mounts_builder_free(builder);
    pdk_mounts_close_sources(&src);
    pdk_trace("child: mounts built");

    if (cfg->hostname && sethostname(cfg->hostname, strlen(cfg->hostname)) < 0)
        die("sethostname: %s", strerror(errno));
    setup_thread_join_netns(&helper);
    if (cfg->egress)
        make_egress_sockets(cfg);

    int ruleset = build_landlock(cfg);
    pdk_trace("child: landlock ruleset built");
    char slave[128] = "";
    int master = cfg->tty ? open_pty(slave, sizeof(slave)) : -1;
    set_rlimits(cfg);

    const char *what = "";
    if (pdk_caps_drop_all(&what) < 0)
        die("%s: %s", what, strerror(errno));
    int listener = pdk_seccomp_install(args->seccomp);
    if (listener < 0)
        die("installing the seccomp filter: %s", strerror(errno));
    if (args->seccomp->notify) {
        /* The supervisor judges every exec from here on (the command's own first). */
        if (pdk__msg_send(sync_fd, PDK_MSG_LISTENER, 0, NULL, &listener, 1) < 0)
            die("passing the exec listener to the supervisor: %s", strerror(errno));
        close(listener);
    }
    pdk_trace("child: privileges dropped");

    failure_point("before-run");
    /* Nothing starts before the supervisor has recorded it. */
    nfds = 0;
    r = pdk__msg_recv(sync_fd, &msg, fds, &nfds, 0);
    if (r <= 0 || msg.type != PDK_MSG_RUN)
        _exit(PDK_EXIT_PADDOCK_FAILED);

    int report[2];
    if (pipe2(report, O_CLOEXEC) < 0)
        die("pipe: %s", strerror(errno));
    /* The command starts as a vfork-style child on its own stack (as posix_spawn does):
     * no copy of init's address space to make and tear down again at exec. init waits,
     * suspended, until the command has exec'd or failed. */
    command_start cs = {.args = args,
                        .ruleset_fd = ruleset,
                        .pty_slave = cfg->tty ? slave : NULL,
                        .report_fd = report[1],
                        .close_fds = {report[0], master}};
    static char command_stack[64 * 1024] __attribute__((aligned(16)));
    pid_t command = clone(command_trampoline, command_stack + sizeof(command_stack),
                          CLONE_VM | CLONE_VFORK | SIGCHLD, &cs);
    if (command < 0)
        die("starting the command (clone): %s", strerror(errno));
    close(report[1]);
    if (ruleset >= 0)
        close(ruleset);
    if (master >= 0)
        close(master);
    /* init keeps nothing the caller left open (the command has its own copies). */
    close_all_but(sync_fd, report[0]);

    int rep[2] = {0, 0};
    ssize_t n;
    do {
        n = read(report[0], rep, sizeof(rep));
    } while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n == (ssize_t)sizeof(rep)) {
        pdk__msg_send(sync_fd, PDK_MSG_EXEC_FAILED, rep[1], cfg->argv[0], NULL, 0);
        _exit(rep[1] == ENOENT ? PDK_EXIT_NOT_FOUND : PDK_EXIT_CANNOT_EXECUTE);
    } else if (n == (ssize_t)sizeof(int)) {
        die("landlock_restrict_self: %s", strerror(rep[0]));
    }
    pdk_trace("child: command started");
    pdk__msg_send(sync_fd, PDK_MSG_STARTED, command, NULL, NULL, 0);
    init_loop(command);
}
