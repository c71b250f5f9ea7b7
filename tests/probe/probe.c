/* probe.c: paddock-probe, a small static program run inside the sandbox by the
 * integration tests (tests/integration/) to test one isolation property from within.
 *
 *   paddock-probe CHECK [ARGS...]
 *
 * prints exactly one line on stdout and exits 0 when the check ran:
 *   ok              the operation succeeded
 *   errno=ENAME     it failed with that errno (symbolic name; errno=N when unknown)
 *   value=...       the answer of an informational check
 * Bad usage prints a message on stderr and exits 2. A failing step before the operation
 * under test (e.g. opening the pty for tiocsti) reports its own errno, and says which step
 * on stderr. Nothing crashes on a failing syscall. The exceptions to "one line, exit 0" are
 * the checks about ending: `exit N` prints nothing and exits N; `kill-self SIG` prints
 * nothing when the signal kills it (and value=survived when it does not, e.g. as pid 1 of
 * a pid namespace, where the kernel drops such signals); `sleep-forever` prints "ok" and
 * then waits for a signal; `alloc MB` may be killed by the OOM killer.
 *
 * Checks (see usage() for the list): file access, ptrace, tty injection, io_uring, mounts,
 * namespaces, sockets, fds, /proc, credentials, sessions, dangerous syscalls, environment,
 * exit and signals, process lifetime, limits. The ones that leave processes behind
 * (sleep-forever, spawn-orphan) take an optional TAG that only lands in their command
 * line, so that a test can find exactly its own processes from the host.
 *
 * Kept in one file and free of NSS (no getaddrinfo, no getpwnam) so that the static
 * binary needs nothing from the sandbox's view of the host. Syscalls go through SYS_*
 * constants; a constant missing on an architecture makes its check report ENOSYS.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <linux/perf_event.h>

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef TCP_FASTOPEN_CONNECT
#define TCP_FASTOPEN_CONNECT 30
#endif
#ifndef MSG_FASTOPEN
#define MSG_FASTOPEN 0x20000000
#endif
#ifndef SOCK_CLOEXEC
#define SOCK_CLOEXEC O_CLOEXEC
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* A bound on the processes fork-bomb makes when nothing stops it earlier. */
#define FORK_BOMB_MAX 1000

/* ---- output ------------------------------------------------------------------------ */

#define E(name)                                                                                    \
    {                                                                                              \
        name, #name                                                                                \
    }
static const struct {
    int number;
    const char *name;
} errno_names[] = {
    E(EPERM),        E(ENOENT),          E(ESRCH),           E(EINTR),
    E(EIO),          E(ENXIO),           E(E2BIG),           E(ENOEXEC),
    E(EBADF),        E(ECHILD),          E(EAGAIN),          E(ENOMEM),
    E(EACCES),       E(EFAULT),          E(ENOTBLK),         E(EBUSY),
    E(EEXIST),       E(EXDEV),           E(ENODEV),          E(ENOTDIR),
    E(EISDIR),       E(EINVAL),          E(ENFILE),          E(EMFILE),
    E(ENOTTY),       E(ETXTBSY),         E(EFBIG),           E(ENOSPC),
    E(ESPIPE),       E(EROFS),           E(EMLINK),          E(EPIPE),
    E(EDOM),         E(ERANGE),          E(EDEADLK),         E(ENAMETOOLONG),
    E(ENOLCK),       E(ENOSYS),          E(ENOTEMPTY),       E(ELOOP),
    E(ENOMSG),       E(EIDRM),           E(ENOSTR),          E(ENODATA),
    E(ETIME),        E(ENOSR),           E(ENOLINK),         E(EPROTO),
    E(EBADMSG),      E(EOVERFLOW),       E(EILSEQ),          E(EUSERS),
    E(ENOTSOCK),     E(EDESTADDRREQ),    E(EMSGSIZE),        E(EPROTOTYPE),
    E(ENOPROTOOPT),  E(EPROTONOSUPPORT), E(ESOCKTNOSUPPORT), E(EOPNOTSUPP),
    E(EPFNOSUPPORT), E(EAFNOSUPPORT),    E(EADDRINUSE),      E(EADDRNOTAVAIL),
    E(ENETDOWN),     E(ENETUNREACH),     E(ENETRESET),       E(ECONNABORTED),
    E(ECONNRESET),   E(ENOBUFS),         E(EISCONN),         E(ENOTCONN),
    E(ESHUTDOWN),    E(ETIMEDOUT),       E(ECONNREFUSED),    E(EHOSTDOWN),
    E(EHOSTUNREACH), E(EALREADY),        E(EINPROGRESS),     E(ESTALE),
    E(EDQUOT),       E(ECANCELED),       E(ENOKEY),          E(EKEYEXPIRED),
    E(EKEYREVOKED),  E(EKEYREJECTED),    E(EOWNERDEAD),      E(ENOTRECOVERABLE),
    E(ERFKILL),      E(EHWPOISON),       E(ENOMEDIUM),       E(EMEDIUMTYPE),
    E(EREMOTEIO),    E(EBADFD),          E(EREMCHG),         E(ENOTUNIQ),
    E(ENOPKG),       E(EREMOTE),         E(ENOCSI),          E(EL2HLT),
};
#undef E

static void print_errno(int err)
{
    /* EWOULDBLOCK == EAGAIN and ENOTSUP == EOPNOTSUPP on Linux: the table has one name. */
    for (size_t i = 0; i < ARRAY_SIZE(errno_names); i++) {
        if (errno_names[i].number == err) {
            printf("errno=%s\n", errno_names[i].name);
            return;
        }
    }
    printf("errno=%d\n", err);
}

/* Print the result of an operation that returned ret (< 0 means failure, errno set). */
static int report(long ret)
{
    if (ret < 0)
        print_errno(errno);
    else
        printf("ok\n");
    return 0;
}

/* A preparatory step failed: say which on stderr, report its errno on stdout. */
static int report_step(const char *step)
{
    int err = errno;
    fprintf(stderr, "paddock-probe: %s: %s\n", step, strerror(err));
    print_errno(err);
    return 0;
}

__attribute__((unused)) static int report_enosys(void)
{
    errno = ENOSYS;
    return report(-1);
}

/* "paddock-probe: WHAT 'ARG'" on stderr; returns the exit status of bad usage. */
static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "paddock-probe: %s '%s' (see paddock-probe --help)\n", what, arg);
    return 2;
}

/* Parse a non-negative decimal integer; false when s is not one. */
static bool parse_long(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0)
        return false;
    *out = v;
    return true;
}

/* ---- files ------------------------------------------------------------------------- */

static int check_read(int argc, char **argv)
{
    const char *path = argv[0];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return report(-1);
    char c;
    ssize_t n = read(fd, &c, 1); /* an empty file reads 0 bytes: still ok */
    int err = errno;
    close(fd);
    errno = err;
    return report(n);
}

static int check_write(int argc, char **argv)
{
    const char *path = argv[0];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd < 0)
        return report(-1);
    static const char text[] = "written by paddock-probe\n";
    ssize_t n = write(fd, text, sizeof(text) - 1);
    int err = errno;
    if (close(fd) < 0 && n >= 0) {
        err = errno;
        n = -1;
    }
    errno = err;
    return report(n);
}

static int check_mkdir(int argc, char **argv)
{
    return report(mkdir(argv[0], 0755));
}

static int check_unlink(int argc, char **argv)
{
    return report(unlink(argv[0]));
}

/* ---- ptrace and ttys --------------------------------------------------------------- */

static int ptrace_report(pid_t pid)
{
    long ret = ptrace(PTRACE_ATTACH, pid, NULL, NULL);
    if (ret == 0) {
        /* It worked (outside a sandbox): let the tracee go again. */
        waitpid(pid, NULL, __WALL);
        ptrace(PTRACE_DETACH, pid, NULL, NULL);
    }
    return report(ret);
}

/* Open a pty pair and issue cmd (optionally with junk in the high 32 bits, which the
 * kernel ignores but a naive seccomp filter comparing 64 bits does not) on the slave, as
 * a process whose controlling terminal the slave is. */
static int tty_ioctl_report(unsigned long cmd, int argc, char **argv)
{
    bool high = false;
    if (argc == 1 && strcmp(argv[0], "high") == 0)
        high = true;
    else if (argc != 0)
        return usage_error("unexpected argument (only \"high\" is known)", argv[0]);
    if (high) {
#if ULONG_MAX > 0xffffffffUL
        cmd |= 0xdead00000000UL;
#else
        fprintf(stderr, "paddock-probe: 32-bit long: \"high\" is the plain ioctl here\n");
#endif
    }

    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0)
        return report_step("posix_openpt");
    if (grantpt(master) < 0 || unlockpt(master) < 0) {
        int r = report_step("grantpt/unlockpt");
        close(master);
        return r;
    }
    char name[128];
    if (ptsname_r(master, name, sizeof(name)) != 0) {
        int r = report_step("ptsname");
        close(master);
        return r;
    }
    int slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0) {
        int r = report_step(name);
        close(master);
        return r;
    }
    /* The ioctl is issued by a child for which the slave is the controlling terminal:
     * the kernel lets a process without capabilities TIOCSTI into its own controlling
     * tty (unless dev.tty.legacy_tiocsti=0), so only a seccomp filter makes that EPERM.
     * On any other tty it is EPERM without CAP_SYS_ADMIN anyway, filter or not. */
    int result[2] = {0, 0}; /* {ioctl's errno or 0, TIOCSCTTY's errno or 0} */
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) < 0) {
        int r = report_step("pipe2");
        close(slave);
        close(master);
        return r;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int child[2] = {0, 0};
        if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0)
            child[1] = errno;
        /* TIOCSTI pushes this byte; for TIOCLINUX it is subcode 0 (invalid, harmless). */
        char c = 0;
        if (syscall(SYS_ioctl, slave, cmd, &c) < 0)
            child[0] = errno;
        ssize_t n = write(pipe_fds[1], child, sizeof(child));
        _exit(n == (ssize_t)sizeof(child) ? 0 : 1);
    }
    int fork_errno = errno;
    close(pipe_fds[1]);
    close(slave);
    close(master);
    if (pid < 0) {
        close(pipe_fds[0]);
        errno = fork_errno;
        return report_step("fork");
    }
    ssize_t n = read(pipe_fds[0], result, sizeof(result));
    close(pipe_fds[0]);
    waitpid(pid, NULL, 0);
    if (n != (ssize_t)sizeof(result)) {
        errno = EIO;
        return report_step("the child issuing the ioctl");
    }
    if (result[1] != 0)
        fprintf(stderr,
                "paddock-probe: cannot make the pty the controlling tty (%s): the "
                "result says little\n",
                strerror(result[1]));
    errno = result[0];
    return report(result[0] ? -1 : 0);
}

static int check_ptrace_parent(int argc, char **argv)
{
    return ptrace_report(getppid());
}

static int check_ptrace_pid(int argc, char **argv)
{
    long pid;
    if (!parse_long(argv[0], &pid) || pid == 0 || pid > INT_MAX)
        return usage_error("bad pid", argv[0]);
    return ptrace_report((pid_t)pid);
}

static int check_tiocsti(int argc, char **argv)
{
    return tty_ioctl_report(TIOCSTI, argc, argv);
}

static int check_tioclinux(int argc, char **argv)
{
    return tty_ioctl_report(TIOCLINUX, argc, argv);
}

/* ---- mounts and namespaces --------------------------------------------------------- */

static int check_io_uring(int argc, char **argv)
{
#ifdef SYS_io_uring_setup
    /* struct io_uring_params is 120 bytes; all zero asks for nothing special. */
    uint64_t params[32];
    memset(params, 0, sizeof(params));
    long fd = syscall(SYS_io_uring_setup, 4, params);
    if (fd >= 0)
        close((int)fd);
    return report(fd);
#else
    return report_enosys();
#endif
}

static int check_mount(int argc, char **argv)
{
    int ret = mount("none", "/tmp", "tmpfs", 0, NULL);
    if (ret == 0)
        umount2("/tmp", MNT_DETACH); /* do not leave it there, wherever we are */
    return report(ret);
}

static int check_fsopen(int argc, char **argv)
{
#ifdef SYS_fsopen
    long fd = syscall(SYS_fsopen, "tmpfs", 0);
    if (fd >= 0)
        close((int)fd);
    return report(fd);
#else
    return report_enosys();
#endif
}

static int check_umount(int argc, char **argv)
{
    return report(umount2(argv[0], 0));
}

static int check_userns(int argc, char **argv)
{
    return report(unshare(CLONE_NEWUSER));
}

static int check_clone_userns(int argc, char **argv)
{
    /* Raw clone without a new stack: the child runs on a copy of ours, as with fork.
     * With every pointer argument 0 the argument orders of the architectures agree, but
     * for s390's (stack first). */
#if defined(__s390__) || defined(__CRIS__)
    long pid = syscall(SYS_clone, 0UL, (unsigned long)(CLONE_NEWUSER | SIGCHLD), 0UL, 0UL, 0UL);
#else
    long pid = syscall(SYS_clone, (unsigned long)(CLONE_NEWUSER | SIGCHLD), 0UL, 0UL, 0UL, 0UL);
#endif
    if (pid == 0)
        _exit(0);
    if (pid > 0)
        waitpid((pid_t)pid, NULL, 0);
    return report(pid);
}

static int check_setns(int argc, char **argv)
{
    int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return report_step("/proc/self/ns/net");
    int ret = setns(fd, CLONE_NEWNET);
    int err = errno;
    close(fd);
    errno = err;
    return report(ret);
}

/* ---- sockets ----------------------------------------------------------------------- */

static int connect_report(int fd, const struct sockaddr *addr, socklen_t len)
{
    /* Bound the wait: a connect that hangs is a failure of its own (ETIMEDOUT). */
    struct timeval tv = {.tv_sec = 10, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int ret = connect(fd, addr, len);
    int err = errno;
    close(fd);
    if (ret < 0 && err == EINPROGRESS)
        err = ETIMEDOUT;
    errno = err;
    return report(ret);
}

static int check_connect_tcp(int argc, char **argv)
{
    const char *host = argv[0], *port_text = argv[1];
    long port;
    if (!parse_long(port_text, &port) || port == 0 || port > 65535)
        return usage_error("bad port", port_text);
    struct sockaddr_in v4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in6 v6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    const char *h = strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
    if (inet_pton(AF_INET, h, &v4.sin_addr) == 1) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return report_step("socket(AF_INET)");
        return connect_report(fd, (struct sockaddr *)&v4, sizeof(v4));
    }
    if (inet_pton(AF_INET6, h, &v6.sin6_addr) == 1) {
        int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return report_step("socket(AF_INET6)");
        return connect_report(fd, (struct sockaddr *)&v6, sizeof(v6));
    }
    return usage_error("not a numeric IPv4 or IPv6 address:", host);
}

static int connect_unix_report(const char *name, bool abstract)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t len = strlen(name);
    size_t offset = abstract ? 1 : 0; /* abstract: "\0NAME", not NUL-terminated */
    if (len == 0 || len + offset >= sizeof(addr.sun_path))
        return usage_error("socket name empty or too long:", name);
    memcpy(addr.sun_path + offset, name, len);
    socklen_t addr_len =
        (socklen_t)(offsetof(struct sockaddr_un, sun_path) + offset + len + (abstract ? 0 : 1));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return report_step("socket(AF_UNIX)");
    return connect_report(fd, (struct sockaddr *)&addr, addr_len);
}

static int check_connect_unix(int argc, char **argv)
{
    return connect_unix_report(argv[0], false);
}

static int check_connect_abstract(int argc, char **argv)
{
    return connect_unix_report(argv[0], true);
}

/* ---- opening a TCP connection every way the kernel offers ---- */

static int parse_ipv4_port(const char *host, const char *port_text, struct sockaddr_in *out)
{
    long port;
    if (!parse_long(port_text, &port) || port == 0 || port > 65535)
        return usage_error("bad port", port_text);
    *out = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &out->sin_addr) != 1)
        return usage_error("not a numeric IPv4 address:", host);
    return 0;
}

/* net-get MODE HOST PORT URL: "GET URL HTTP/1.1" (a proxy's absolute form) to HOST:PORT,
 * the connection opened by MODE: connect (connect, then send), sendto-fastopen and
 * sendmsg-fastopen (the request as the SYN's data, MSG_FASTOPEN, no connect),
 * fastopen-connect (TCP_FASTOPEN_CONNECT, connect, write). Prints value=STATUS-LINE, or
 * errno= of the step that failed. */
static int check_net_get(int argc, char **argv)
{
    const char *mode = argv[0], *url = argv[3];
    struct sockaddr_in addr;
    int bad = parse_ipv4_port(argv[1], argv[2], &addr);
    if (bad)
        return bad;
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    size_t host_len = strcspn(host, "/");
    char request[2048];
    int len = snprintf(request, sizeof(request),
                       "GET %s HTTP/1.1\r\nHost: %.*s\r\nConnection: close\r\n\r\n", url,
                       (int)host_len, host);
    if (len < 0 || (size_t)len >= sizeof(request))
        return usage_error("URL too long:", url);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return report_step("socket(AF_INET)");
    struct timeval tv = {.tv_sec = 10, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ssize_t sent;
    if (strcmp(mode, "connect") == 0 || strcmp(mode, "fastopen-connect") == 0) {
        int one = 1;
        if (strcmp(mode, "fastopen-connect") == 0 &&
            setsockopt(fd, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &one, sizeof(one)) < 0)
            return report_step("setsockopt(TCP_FASTOPEN_CONNECT)");
        if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
            int err = errno;
            close(fd);
            errno = err;
            return report(-1);
        }
        sent = write(fd, request, (size_t)len);
    } else if (strcmp(mode, "sendto-fastopen") == 0) {
        sent = sendto(fd, request, (size_t)len, MSG_FASTOPEN | MSG_NOSIGNAL,
                      (struct sockaddr *)&addr, sizeof(addr));
    } else if (strcmp(mode, "sendmsg-fastopen") == 0) {
        struct iovec iov = {request, (size_t)len};
        struct msghdr msg = {
            .msg_name = &addr, .msg_namelen = sizeof(addr), .msg_iov = &iov, .msg_iovlen = 1};
        sent = sendmsg(fd, &msg, MSG_FASTOPEN | MSG_NOSIGNAL);
    } else {
        close(fd);
        return usage_error("unknown mode", mode);
    }
    if (sent < 0) {
        int err = errno;
        close(fd);
        errno = err;
        return report(-1);
    }
    char answer[512];
    ssize_t n = read(fd, answer, sizeof(answer) - 1);
    int err = errno;
    close(fd);
    if (n < 0) {
        errno = err;
        return report(-1);
    }
    answer[n > 0 ? n : 0] = '\0';
    answer[strcspn(answer, "\r\n")] = '\0';
    printf("value=%s\n", n > 0 ? answer : "(closed)");
    return 0;
}

static const struct check *find_check(const char *name);

/* orphan CHECK [ARGS...]: CHECK run in a grandchild whose parent has exited and been reaped
 * (so that it is re-parented to the namespace's init, or a subreaper), in a new session;
 * its line printed by this process. */
static int check_orphan(int argc, char **argv);

static const struct {
    const char *name;
    int family;
    int type;
} socket_families[] = {
    {"AF_UNIX", AF_UNIX, SOCK_STREAM},
    {"AF_INET", AF_INET, SOCK_STREAM},
    {"AF_INET6", AF_INET6, SOCK_STREAM},
    {"AF_NETLINK", AF_NETLINK, SOCK_RAW},
    {"AF_PACKET", AF_PACKET, SOCK_DGRAM},
    {"AF_VSOCK", AF_VSOCK, SOCK_STREAM},
    {"AF_ALG", AF_ALG, SOCK_SEQPACKET},
    {"AF_KEY", AF_KEY, SOCK_RAW},
    {"AF_BLUETOOTH", AF_BLUETOOTH, SOCK_RAW},
    {"AF_CAN", AF_CAN, SOCK_RAW},
    {"AF_TIPC", AF_TIPC, SOCK_RDM},
    {"AF_XDP", AF_XDP, SOCK_RAW},
    {"AF_APPLETALK", AF_APPLETALK, SOCK_DGRAM},
};

static int check_socket(int argc, char **argv)
{
    const char *family_name = argv[0];
    for (size_t i = 0; i < ARRAY_SIZE(socket_families); i++) {
        if (strcmp(family_name, socket_families[i].name) != 0)
            continue;
        int fd = socket(socket_families[i].family, socket_families[i].type | SOCK_CLOEXEC, 0);
        if (fd >= 0)
            close(fd);
        return report(fd);
    }
    long number; /* a numeric family, for families without a name here */
    if (parse_long(family_name, &number) && number <= INT_MAX) {
        int fd = socket((int)number, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0)
            close(fd);
        return report(fd);
    }
    return usage_error("unknown socket family", family_name);
}

/* ---- /proc and credentials --------------------------------------------------------- */

static int check_fd(int argc, char **argv)
{
    long fd;
    if (!parse_long(argv[0], &fd) || fd > INT_MAX)
        return usage_error("bad fd", argv[0]);
    return report(fcntl((int)fd, F_GETFD));
}

static int compare_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static int check_pids(int argc, char **argv)
{
    DIR *dir = opendir("/proc");
    if (!dir)
        return report_step("/proc");
    long *pids = NULL;
    size_t count = 0, cap = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        long pid;
        if (!parse_long(entry->d_name, &pid))
            continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 64;
            long *grown = realloc(pids, cap * sizeof(*pids));
            if (!grown) {
                free(pids);
                closedir(dir);
                errno = ENOMEM;
                return report(-1);
            }
            pids = grown;
        }
        pids[count++] = pid;
    }
    closedir(dir);
    qsort(pids, count, sizeof(*pids), compare_long);
    printf("value=");
    for (size_t i = 0; i < count; i++)
        printf("%s%ld", i ? "," : "", pids[i]);
    printf("\n");
    free(pids);
    return 0;
}

static int check_caps(int argc, char **argv)
{
    static const char *const keys[] = {"CapInh", "CapPrm",     "CapEff", "CapBnd",
                                       "CapAmb", "NoNewPrivs", "Seccomp"};
    char values[ARRAY_SIZE(keys)][64];
    for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
        strcpy(values[i], "?");

    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return report_step("/proc/self/status");
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
            if (strcmp(line, keys[i]) != 0)
                continue;
            char *v = colon + 1;
            v += strspn(v, " \t");
            v[strcspn(v, " \t\n")] = '\0';
            snprintf(values[i], sizeof(values[i]), "%s", v);
        }
    }
    fclose(f);
    printf("value=");
    for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
        printf("%s%s:%s", i ? "," : "", keys[i], values[i]);
    printf("\n");
    return 0;
}

static int check_uid(int argc, char **argv)
{
    printf("value=%u,%u,%u,%u\n", (unsigned)getuid(), (unsigned)getgid(), (unsigned)geteuid(),
           (unsigned)getegid());
    return 0;
}

static int check_hostname(int argc, char **argv)
{
    struct utsname u;
    if (uname(&u) < 0)
        return report(-1);
    printf("value=%s\n", u.nodename);
    return 0;
}

static int check_ctty(int argc, char **argv)
{
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
    if (fd >= 0)
        close(fd);
    return report(fd);
}

static int check_setsid(int argc, char **argv)
{
    printf("value=%ld,%ld,%ld\n", (long)getsid(0), (long)getpgrp(), (long)getpid());
    return 0;
}

/* ---- dangerous syscalls ------------------------------------------------------------ */

static int check_bpf(int argc, char **argv)
{
#ifdef SYS_bpf
    /* BPF_MAP_CREATE (0) with an all-zero attr: EINVAL where bpf is allowed at all. */
    uint64_t attr[16];
    memset(attr, 0, sizeof(attr));
    long fd = syscall(SYS_bpf, 0, attr, (unsigned)sizeof(attr));
    if (fd >= 0)
        close((int)fd);
    return report(fd);
#else
    return report_enosys();
#endif
}

static int check_perf(int argc, char **argv)
{
#ifdef SYS_perf_event_open
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.type = PERF_TYPE_SOFTWARE;
    attr.size = sizeof(attr);
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0UL);
    if (fd >= 0)
        close((int)fd);
    return report(fd);
#else
    return report_enosys();
#endif
}

static int check_userfaultfd(int argc, char **argv)
{
#ifdef SYS_userfaultfd
    long fd = syscall(SYS_userfaultfd, O_CLOEXEC);
    if (fd >= 0)
        close((int)fd);
    return report(fd);
#else
    return report_enosys();
#endif
}

static int check_keyctl(int argc, char **argv)
{
#ifdef SYS_add_key
    /* Into the process keyring (-2, KEY_SPEC_PROCESS_KEYRING): gone when we exit. */
    long ret = syscall(SYS_add_key, "user", "paddock-probe", "x", (size_t)1, -2);
    return report(ret);
#else
    return report_enosys();
#endif
}

static int check_personality(int argc, char **argv)
{
    long ret = syscall(SYS_personality, (unsigned long)ADDR_NO_RANDOMIZE);
    return report(ret);
}

static int check_kexec(int argc, char **argv)
{
#ifdef SYS_kexec_load
    /* The permission check comes first; where it passes, this call is refused (EINVAL:
     * a foreign architecture in the flags, too many segments) instead of unloading the
     * loaded kexec image as a call with 0 segments would. */
    long ret = syscall(SYS_kexec_load, 0UL, 1000UL, NULL, 0x7fff0000UL);
    return report(ret);
#else
    return report_enosys();
#endif
}

static int check_init_module(int argc, char **argv)
{
#ifdef SYS_init_module
    long ret = syscall(SYS_init_module, NULL, 0UL, "");
    return report(ret);
#else
    return report_enosys();
#endif
}

/* ---- processes --------------------------------------------------------------------- */

static int check_env(int argc, char **argv)
{
    const char *v = getenv(argv[0]);
    printf("value=%s\n", v ? v : "unset");
    return 0;
}

static int check_exit(int argc, char **argv)
{
    long status;
    if (!parse_long(argv[0], &status) || status > 255)
        return usage_error("bad exit status (0-255)", argv[0]);
    return (int)status;
}

static void pause_forever(void)
{
    for (;;)
        pause();
}

static int check_kill_self(int argc, char **argv)
{
    const char *sig_text = argv[0];
    long sig;
    if (!parse_long(sig_text, &sig) || sig < 1 || sig >= NSIG)
        return usage_error("bad signal number", sig_text);
    signal((int)sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, (int)sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    fflush(stdout);
    if (raise((int)sig) != 0)
        return report(-1);
    /* Still here: the signal's default action is not to terminate (e.g. SIGCHLD). */
    printf("value=survived\n");
    return 0;
}

static int check_sleep_forever(int argc, char **argv)
{
    /* The line tells a waiting test that the probe is up. */
    printf("ok\n");
    fflush(stdout);
    pause_forever();
    return 0;
}

static int check_spawn_orphan(int argc, char **argv)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return report(-1);
    if (pid == 0) {
        /* Be as hard to reap as a plain process can be: own session, deaf to the usual
         * signals, stdio closed so nobody waits on our pipes. Only SIGKILL (or the end of
         * the pid namespace) ends this. */
        setsid();
        signal(SIGHUP, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        signal(SIGINT, SIG_IGN);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
            if (null > 2)
                close(null);
        } else {
            close(0);
            close(1);
            close(2);
        }
        pause_forever();
    }
    printf("ok\n");
    return 0;
}

static int check_fork_bomb(int argc, char **argv)
{
    long max = FORK_BOMB_MAX;
    if (argc == 1 && (!parse_long(argv[0], &max) || max < 1))
        return usage_error("bad bound", argv[0]);
    pid_t parent = getpid();
    long count = 0;
    int err = 0;
    fflush(stdout);
    while (count < max) {
        pid_t pid = fork();
        if (pid < 0) {
            err = errno;
            break;
        }
        if (pid == 0) {
            /* Die with the parent, so the probe cleans up after itself anywhere. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(0);
            pause_forever();
        }
        count++;
    }
    printf("value=%ld", count);
    if (err) {
        printf(",");
        print_errno(err);
    } else {
        printf(",errno=none\n");
    }
    return 0;
}

static int check_alloc(int argc, char **argv)
{
    const char *mb_text = argv[0];
    long mb;
    if (!parse_long(mb_text, &mb) || mb > 1024L * 1024)
        return usage_error("bad size in MiB", mb_text);
    size_t size = (size_t)mb * 1024 * 1024;
    if (size == 0) {
        printf("ok\n");
        return 0;
    }
    unsigned char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return report(-1);
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    for (size_t off = 0; off < size; off += (size_t)page)
        p[off] = (unsigned char)(off / (size_t)page + 1); /* really touch every page */
    printf("ok\n");
    munmap(p, size);
    return 0;
}

/* ---- dispatch ---------------------------------------------------------------------- */

static const struct check {
    const char *name;
    const char *args; /* for usage */
    int min_args, max_args;
    int (*run)(int argc, char **argv); /* argv: the arguments after the check's name */
} checks[] = {
    {"read", "PATH", 1, 1, check_read},
    {"write", "PATH", 1, 1, check_write},
    {"mkdir", "PATH", 1, 1, check_mkdir},
    {"unlink", "PATH", 1, 1, check_unlink},
    {"ptrace-parent", "", 0, 0, check_ptrace_parent},
    {"ptrace-pid", "PID", 1, 1, check_ptrace_pid},
    {"tiocsti", "[high]", 0, 1, check_tiocsti},
    {"tioclinux", "[high]", 0, 1, check_tioclinux},
    {"io_uring", "", 0, 0, check_io_uring},
    {"mount", "", 0, 0, check_mount},
    {"fsopen", "", 0, 0, check_fsopen},
    {"umount", "PATH", 1, 1, check_umount},
    {"userns", "", 0, 0, check_userns},
    {"clone-userns", "", 0, 0, check_clone_userns},
    {"setns", "", 0, 0, check_setns},
    {"connect-tcp", "HOST PORT", 2, 2, check_connect_tcp},
    {"connect-unix", "PATH", 1, 1, check_connect_unix},
    {"connect-abstract", "NAME", 1, 1, check_connect_abstract},
    {"socket", "AF_NAME|NUMBER", 1, 1, check_socket},
    {"fd", "N", 1, 1, check_fd},
    {"pids", "", 0, 0, check_pids},
    {"caps", "", 0, 0, check_caps},
    {"uid", "", 0, 0, check_uid},
    {"hostname", "", 0, 0, check_hostname},
    {"ctty", "", 0, 0, check_ctty},
    {"setsid-check", "", 0, 0, check_setsid},
    {"bpf", "", 0, 0, check_bpf},
    {"perf", "", 0, 0, check_perf},
    {"userfaultfd", "", 0, 0, check_userfaultfd},
    {"keyctl", "", 0, 0, check_keyctl},
    {"personality", "", 0, 0, check_personality},
    {"kexec", "", 0, 0, check_kexec},
    {"init-module", "", 0, 0, check_init_module},
    {"env", "NAME", 1, 1, check_env},
    {"exit", "N", 1, 1, check_exit},
    {"kill-self", "SIG", 1, 1, check_kill_self},
    {"sleep-forever", "[TAG]", 0, 1, check_sleep_forever},
    {"spawn-orphan", "[TAG]", 0, 1, check_spawn_orphan},
    {"fork-bomb", "[MAX]", 0, 1, check_fork_bomb},
    {"alloc", "MB", 1, 1, check_alloc},
    {"net-get", "MODE HOST PORT URL", 4, 4, check_net_get},
    {"orphan", "CHECK [ARGS...]", 1, 8, check_orphan},
};

static const struct check *find_check(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(checks); i++)
        if (strcmp(name, checks[i].name) == 0)
            return &checks[i];
    return NULL;
}

static int check_orphan(int argc, char **argv)
{
    const struct check *c = find_check(argv[0]);
    if (!c || c->run == check_orphan)
        return usage_error("unknown check", argv[0]);
    if (argc - 1 < c->min_args || argc - 1 > c->max_args)
        return usage_error("wrong number of arguments for", argv[0]);
    int out[2], go[2];
    if (pipe(out) < 0 || pipe(go) < 0)
        return report_step("pipe");
    fflush(stdout);
    pid_t child = fork();
    if (child < 0)
        return report_step("fork");
    if (child == 0) {
        pid_t grandchild = fork();
        if (grandchild < 0)
            _exit(1);
        if (grandchild == 0) {
            /* wait until the middle process is reaped: re-parented by then */
            close(go[1]);
            char b;
            while (read(go[0], &b, 1) < 0 && errno == EINTR)
                ;
            setsid();
            dup2(out[1], 1);
            close(out[0]);
            int status = c->run(argc - 1, argv + 1);
            fflush(stdout);
            _exit(status);
        }
        _exit(0);
    }
    close(go[0]);
    close(out[1]);
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    close(go[1]); /* the grandchild goes on */
    char line[1024];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(out[0], line + n, sizeof(line) - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || (n += (size_t)r) >= sizeof(line) - 1)
            break;
    }
    line[n] = '\0';
    fputs(n ? line : "value=(no line)\n", stdout);
    return 0;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: paddock-probe CHECK [ARGS...]\n"
                 "Prints one line (ok, errno=ENAME or value=...) and exits 0; 2 on bad usage.\n"
                 "A TAG only marks the command line, for finding the process from outside.\n"
                 "checks:\n");
    for (size_t i = 0; i < ARRAY_SIZE(checks); i++)
        fprintf(out, "  %s%s%s\n", checks[i].name, checks[i].args[0] ? " " : "", checks[i].args);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < ARRAY_SIZE(checks); i++) {
        if (strcmp(name, checks[i].name) != 0)
            continue;
        int nargs = argc - 2;
        if (nargs < checks[i].min_args || nargs > checks[i].max_args)
            return usage_error("wrong number of arguments for", name);
        int status = checks[i].run(nargs, argv + 2);
        fflush(stdout);
        return status;
    }
    return usage_error("unknown check", name);
}
