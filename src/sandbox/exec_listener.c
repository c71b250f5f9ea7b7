/* exec_listener.c: see exec_listener.h. */
#include "exec_listener.h"
#include "output.h"

#include "log.h"
#include "util.h"
#include "syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS /* Linux 6.6; Debian 12's headers are older */
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS      SECCOMP_IOW(4, __u64)
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP 1
#endif

/* What the kernel lets an exec carry (fs/exec.c): argv and envp strings and pointers within
 * 3/4 of the 8 MiB stack limit, each string within MAX_ARG_STRLEN. An argv beyond these
 * cannot be executed anyway (E2BIG); one that cannot be read whole is refused, never
 * judged by a part. */
#define MAX_ARGV_BYTES (6 * 1024 * 1024)
#define MAX_ARGS       (MAX_ARGV_BYTES / (sizeof(uint64_t) + 1))
#define MAX_ARG_LEN    (32 * 4096)
#define MAX_IOV        1024 /* IOV_MAX: iovec elements a call */

struct pdk_exec_listener {
    struct event_base *base;
    int fd;
    pdk_exec_handler handler;
    pdk_exec_known *known; /* the identities of the commands the rules name */
    bool one_root;         /* every process has the sandbox's root: opened once, in root */
    int root;
    pthread_t thread; /* serve() */
    bool thread_started;
    int stop_fd;    /* eventfd: the thread stops */
    int handoff_fd; /* eventfd: requests for the loop (on_handoff) */
    struct event *handoff_ev;
    pthread_mutex_t lock; /* the hand-off list */
    struct handoff *handoff_head, **handoff_tail;
    struct seccomp_notif_sizes sizes;
    struct seccomp_notif *notif; /* sizes.seccomp_notif bytes, reused */
    uint64_t execs;
    uint64_t busy_ns;
    pid_t told_pid; /* the last message, not repeated for the same process (a shell tries */
    char *told;     /* each directory of PATH in turn) */
};

/* Read a NUL-terminated string at addr of pid (new string), page by page; NULL when
 * unreadable or longer than max. */
static char *read_string(pid_t pid, uint64_t addr, size_t max)
{
    pdk_buf b = {0};
    while (b.len < max) {
        size_t chunk = 4096 - (size_t)(addr & 4095);
        char tmp[4096];
        struct iovec local = {tmp, chunk}, remote = {(void *)(uintptr_t)addr, chunk};
        ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n <= 0) {
            pdk_buf_free(&b);
            return NULL;
        }
        char *nul = memchr(tmp, '\0', (size_t)n);
        if (nul) {
            pdk_buf_append(&b, tmp, (size_t)(nul - tmp));
            return b.data ? b.data : xstrdup("");
        }
        pdk_buf_append(&b, tmp, (size_t)n);
        addr += (uint64_t)n;
    }
    pdk_buf_free(&b);
    return NULL;
}

/* The bytes from addr to the end of its page, at most max. */
static size_t to_page_end(uint64_t addr, size_t max)
{
    size_t n = 4096 - (size_t)(addr & 4095);
    return n < max ? n : max;
}

#define FAST_ARGS    32  /* pointers read in the first call */
#define FAST_ARG_LEN 256 /* bytes of each argument read at once */

typedef struct argv_read {
    char *path;         /* NULL when unreadable */
    char **argv;        /* whole, or NULL (state says why) */
    size_t argc, bytes; /* counted as far as read */
    pdk_exec_argv_state state;
} argv_read;

/* The pointers of argv from index have (ptrs holding have of them) on, a page at a time,
 * until its NULL. */
static pdk_exec_argv_state read_pointers(pid_t pid, uint64_t argv_addr, uint64_t **ptrs,
                                         size_t *have, size_t *cap)
{
    for (;;) {
        for (size_t i = 0; i < *have; i++)
            if ((*ptrs)[i] == 0) {
                *have = i;
                return PDK_EXEC_ARGV_WHOLE;
            }
        if (*have >= MAX_ARGS)
            return PDK_EXEC_ARGV_TOO_LARGE;
        uint64_t addr = argv_addr + *have * sizeof(uint64_t);
        size_t n = to_page_end(addr, 4096) / sizeof(uint64_t);
        if (n == 0)
            n = 1; /* a pointer across a page boundary (argv not aligned): one at a time */
        if (*have + n > *cap) {
            *cap = (*have + n) * 2;
            *ptrs = xrealloc(*ptrs, *cap * sizeof(uint64_t));
        }
        struct iovec local = {*ptrs + *have, n * sizeof(uint64_t)};
        struct iovec remote = {(void *)(uintptr_t)addr, local.iov_len};
        if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)local.iov_len)
            return PDK_EXEC_ARGV_UNREADABLE;
        size_t old = *have;
        *have += n;
        for (size_t i = old; i < *have; i++)
            if ((*ptrs)[i] == 0) {
                *have = i;
                return PDK_EXEC_ARGV_WHOLE;
            }
    }
}

/* The path and argv of an exec in pid's memory. process_vm_readv costs most in its fixed
 * part (finding the mm, the ptrace check), and it moves whole iovec elements only, so: one
 * call for the path and the first argv pointers, the rest of the pointers a page a call,
 * then the first bytes of up to 1,024 arguments a call; an argument longer than that is
 * read on its own. */
static void read_exec(pid_t pid, uint64_t path_addr, uint64_t argv_addr, argv_read *out)
{
    memset(out, 0, sizeof(*out));
    char path_buf[4096];
    size_t cap = FAST_ARGS;
    _cleanup_free_ uint64_t *ptrs = xmalloc(cap * sizeof(uint64_t));
    struct iovec local[2] = {{path_buf, to_page_end(path_addr, sizeof(path_buf))},
                             {ptrs, to_page_end(argv_addr, FAST_ARGS * sizeof(uint64_t))}};
    struct iovec remote[2] = {{(void *)(uintptr_t)path_addr, local[0].iov_len},
                              {(void *)(uintptr_t)argv_addr, local[1].iov_len}};
    ssize_t n = process_vm_readv(pid, local, 2, remote, 2, 0);
    char *nul = n >= (ssize_t)local[0].iov_len ? memchr(path_buf, '\0', local[0].iov_len) : NULL;
    out->path = nul ? xstrdup(path_buf) : read_string(pid, path_addr, 4096);

    if (argv_addr == 0) {
        /* no argv at all: the kernel runs it with an empty one */
        out->argv = xcalloc(1, sizeof(char *));
        out->state = PDK_EXEC_ARGV_WHOLE;
        return;
    }
    size_t have = n == (ssize_t)(local[0].iov_len + local[1].iov_len)
                      ? local[1].iov_len / sizeof(uint64_t)
                      : 0;
    out->state = read_pointers(pid, argv_addr, &ptrs, &have, &cap);
    if (out->state != PDK_EXEC_ARGV_WHOLE) {
        out->argc = have;
        return;
    }
    char **argv = xmalloc((have + 1) * sizeof(char *));
    size_t got_args = 0;
    _cleanup_free_ char *bufs = xmalloc((size_t)MAX_IOV * FAST_ARG_LEN);
    struct iovec *l = xmalloc(MAX_IOV * sizeof(*l)), *r = xmalloc(MAX_IOV * sizeof(*r));
    out->bytes = have * sizeof(uint64_t);
    for (size_t start = 0; start < have && out->state == PDK_EXEC_ARGV_WHOLE;) {
        size_t batch = have - start < MAX_IOV ? have - start : MAX_IOV;
        for (size_t i = 0; i < batch; i++) {
            l[i] =
                (struct iovec){bufs + i * FAST_ARG_LEN, to_page_end(ptrs[start + i], FAST_ARG_LEN)};
            r[i] = (struct iovec){(void *)(uintptr_t)ptrs[start + i], l[i].iov_len};
        }
        ssize_t got = process_vm_readv(pid, l, batch, r, batch, 0);
        size_t done = 0; /* bytes of got accounted for */
        for (size_t i = 0; i < batch; i++) {
            char *arg = NULL;
            if (got >= 0 && done + l[i].iov_len <= (size_t)got) {
                char *end = memchr(l[i].iov_base, '\0', l[i].iov_len);
                if (end)
                    arg = xstrndup(l[i].iov_base, (size_t)(end - (char *)l[i].iov_base));
            }
            done += l[i].iov_len;
            if (!arg)
                arg = read_string(pid, ptrs[start + i], MAX_ARG_LEN);
            if (!arg) {
                out->state = PDK_EXEC_ARGV_UNREADABLE;
                break;
            }
            out->bytes += strlen(arg) + 1;
            argv[got_args++] = arg;
            if (out->bytes > MAX_ARGV_BYTES) {
                out->state = PDK_EXEC_ARGV_TOO_LARGE;
                break;
            }
        }
        start += batch;
    }
    free(l);
    free(r);
    argv[got_args] = NULL;
    out->argc = out->state == PDK_EXEC_ARGV_WHOLE ? got_args : have;
    if (out->state == PDK_EXEC_ARGV_WHOLE) {
        out->argv = argv;
    } else {
        pdk_strv_free(argv);
    }
}

/* Let the system call go on (error 0) or fail it with error. */
static void respond(pdk_exec_listener *l, uint64_t id, int error)
{
    struct seccomp_notif_resp resp = {.id = id, .error = -error};
    if (!error)
        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    if (ioctl(l->fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
        pdk_debug("seccomp notification %llu: %s", (unsigned long long)id, strerror(errno));
}

/* A line on the process's stderr, without ever blocking the loop. */
static void tell(pid_t pid, const char *message)
{
    if (!message || !*message)
        return;
    /* A file: the process's own stderr (the same open file, so that the offset moves for
     * it too). A pipe or socket, which could be full: a new open of it that does not block
     * (pipes have no offset), so that a full pipe costs this line, never the loop. */
    int fd = -1;
    int pidfd = pdk_sys_pidfd_open(pid, 0);
    if (pidfd >= 0) {
        fd = pdk_sys_pidfd_getfd(pidfd, 2, 0);
        close(pidfd);
    }
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
        close(fd);
        fd = -1;
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/fd/2", (int)pid);
        fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    }
    if (fd < 0)
        return;
    pdk_output(fd, 0, message); /* redacted, escaped, one write (output.h) */
    close(fd);
}

const char *pdk_exec_request_cwd(pdk_exec_request *req)
{
    if (!req->cwd_buf) {
        char link[64], cwd[4096];
        snprintf(link, sizeof(link), "/proc/%d/cwd", (int)req->pid);
        ssize_t n = readlink(link, cwd, sizeof(cwd) - 1);
        cwd[n > 0 ? n : 0] = '\0';
        req->cwd_buf = xstrdup(cwd);
    }
    return req->cwd_buf;
}

/* Answer what the handler said; the told line is not repeated to the same process (a shell
 * tries each directory of PATH in turn). Called on the listener's thread only. */
static void answer_request(pdk_exec_listener *l, uint64_t id, pid_t pid, pdk_exec_answer answer,
                           const char *message)
{
    switch (answer) {
    case PDK_EXEC_ALLOW:
        respond(l, id, 0);
        break;
    case PDK_EXEC_MISSING:
        respond(l, id, ENOENT);
        break;
    case PDK_EXEC_DENY:
        if (pid != l->told_pid || !l->told || strcmp(l->told, message) != 0) {
            tell(pid, message);
            free(l->told);
            l->told = xstrdup(message);
            l->told_pid = pid;
        }
        respond(l, id, EACCES);
        break;
    case PDK_EXEC_ASK:
    case PDK_EXEC_PENDING:
    default:
        break;
    }
}

/* A request the judge sent to the loop (PDK_EXEC_ASK). */
typedef struct handoff {
    struct handoff *next;
    uint64_t id;
    pid_t pid;
    char *path;
    char **argv;
    size_t argc, argv_bytes;
    pdk_exec_target target;
} handoff;

static void handoff_free(handoff *h)
{
    free(h->path);
    pdk_strv_free(h->argv);
    pdk_exec_target_free(&h->target);
    free(h);
}

static const char *network_call(int nr)
{
    if (nr == (int)SYS_connect)
        return "connect";
    if (nr == (int)SYS_sendto)
        return "sendto";
    if (nr == (int)SYS_sendmsg)
        return "sendmsg";
    if (nr == (int)SYS_sendmmsg)
        return "sendmmsg";
    return NULL;
}

/* One notification, on the listener's thread. */
static void serve_notification(pdk_exec_listener *l)
{
    struct seccomp_notif *req = l->notif;
    memset(req, 0, l->sizes.seccomp_notif); /* RECV wants it zeroed */
    if (ioctl(l->fd, SECCOMP_IOCTL_NOTIF_RECV, req) < 0)
        return; /* ENOENT: the target died before we read it */
    uint64_t t0 = pdk_now_monotonic_ns();
    pid_t pid = (pid_t)req->pid;
    const char *call = network_call(req->data.nr);
    if (call) {
        /* A connection opened by a confined process or a descendant: no network (nested
         * confine). The filter sends sendto and friends only with MSG_FASTOPEN. */
        bool ok = !l->handler.connect || l->handler.connect(l->handler.arg, pid, call);
        respond(l, req->id, ok ? 0 : ECONNREFUSED);
        return;
    }
    bool at = req->data.nr != (int)SYS_execve;
    uint64_t path_addr = at ? req->data.args[1] : req->data.args[0];
    uint64_t argv_addr = at ? req->data.args[2] : req->data.args[1];
    argv_read r;
    read_exec(pid, path_addr, argv_addr, &r);
    _cleanup_free_ char *path = r.path ? r.path : xstrdup("");
    _cleanup_strv_ char **argv = r.argv;
    if (!argv || !argv[0]) {
        /* unreadable, or argv[0] missing: the path stands for it (an argv that is not
         * whole is refused by the handler, never judged) */
        pdk_strv_free(argv);
        argv = NULL;
        pdk_strv_push(&argv, path);
    }
    pdk_exec_call c = {.pid = pid,
                       .dirfd = at ? (int)req->data.args[0] : AT_FDCWD,
                       .path = path,
                       .flags = at ? (int)req->data.args[4] : 0,
                       .argv = argv};
    if (l->one_root && l->root < 0)
        l->root = pdk_exec_open_root(pid); /* the command's: the sandbox's root */
    pdk_exec_target target;
    pdk_exec_target_resolve(&c, l->one_root ? l->root : -1, l->known, &target);

    /* What was read is what the process asked for only while it still waits. */
    if (ioctl(l->fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0) {
        pdk_exec_target_free(&target);
        return;
    }
    char message[1024] = "";
    pdk_exec_request er = {.pid = pid,
                           .path = path,
                           .argv = argv,
                           .argc = r.argc,
                           .argv_bytes = r.bytes,
                           .argv_state = r.state,
                           .target = &target};
    pdk_exec_answer answer = l->handler.judge(l->handler.arg, &er, message, sizeof(message));
    free(er.cwd_buf);
    l->execs++;
    l->busy_ns += pdk_now_monotonic_ns() - t0;
    if (answer == PDK_EXEC_ASK) {
        handoff *h = xcalloc(1, sizeof(*h));
        *h = (handoff){.id = req->id,
                       .pid = pid,
                       .path = steal_pointer(&path),
                       .argv = steal_pointer(&argv),
                       .argc = r.argc,
                       .argv_bytes = r.bytes,
                       .target = target};
        pthread_mutex_lock(&l->lock);
        *l->handoff_tail = h;
        l->handoff_tail = &h->next;
        pthread_mutex_unlock(&l->lock);
        uint64_t one = 1;
        if (write(l->handoff_fd, &one, sizeof(one)) < 0)
            pdk_debug("exec listener: cannot wake the loop: %s", strerror(errno));
        return;
    }
    pdk_exec_target_free(&target);
    answer_request(l, req->id, pid, answer, message);
}

/* The listener's thread: it waits in poll(2) (not the loop's epoll, which would not pass
 * SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP's wake-up on the current CPU on), until stopped or
 * every process of the sandbox is gone. */
static void *serve(void *arg)
{
    pdk_exec_listener *l = arg;
    struct pollfd p[2] = {{.fd = l->fd, .events = POLLIN}, {.fd = l->stop_fd, .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            pdk_warn("exec listener: poll: %s", strerror(errno));
            break;
        }
        if (p[1].revents)
            break;
        if (p[0].revents & POLLIN)
            serve_notification(l);
        else if (p[0].revents & (POLLHUP | POLLERR | POLLNVAL))
            break; /* every process of the sandbox has exited */
    }
    return NULL;
}

/* On the loop: the requests the judge handed over, to the handler's ask. */
static void on_handoff(evutil_socket_t fd, short what, void *arg)
{
    pdk_exec_listener *l = arg;
    uint64_t n;
    (void)!read(fd, &n, sizeof(n));
    pthread_mutex_lock(&l->lock);
    handoff *list = l->handoff_head;
    l->handoff_head = NULL;
    l->handoff_tail = &l->handoff_head;
    pthread_mutex_unlock(&l->lock);
    while (list) {
        handoff *h = list;
        list = h->next;
        if (ioctl(l->fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &h->id) == 0) {
            char message[1024] = "";
            pdk_exec_request er = {.pid = h->pid,
                                   .path = h->path,
                                   .argv = h->argv,
                                   .argc = h->argc,
                                   .argv_bytes = h->argv_bytes,
                                   .argv_state = PDK_EXEC_ARGV_WHOLE,
                                   .target = &h->target};
            pdk_exec_answer answer =
                l->handler.ask(l->handler.arg, l, &er, h->id, message, sizeof(message));
            free(er.cwd_buf);
            if (answer == PDK_EXEC_DENY)
                tell(h->pid, message);
            if (answer == PDK_EXEC_ALLOW || answer == PDK_EXEC_DENY || answer == PDK_EXEC_MISSING)
                respond(l, h->id,
                        answer == PDK_EXEC_ALLOW  ? 0
                        : answer == PDK_EXEC_DENY ? EACCES
                                                  : ENOENT);
        }
        handoff_free(h);
    }
}

pdk_exec_listener *pdk_exec_listener_new(struct event_base *base, int listener_fd,
                                         const pdk_exec_handler *handler)
{
    pdk_exec_listener *l = xcalloc(1, sizeof(*l));
    l->base = base;
    l->fd = listener_fd;
    l->stop_fd = l->handoff_fd = l->root = -1;
    l->handler = *handler;
    l->one_root = handler->one_root;
    l->known = pdk_exec_known_new(handler->known_names, handler->path_list);
    l->handler.known_names = NULL; /* copied into known */
    l->handler.path_list = NULL;
    l->handoff_tail = &l->handoff_head;
    pthread_mutex_init(&l->lock, NULL);
    if (pdk_sys_seccomp(SECCOMP_GET_NOTIF_SIZES, 0, &l->sizes) < 0)
        goto fail;
    if (l->sizes.seccomp_notif < sizeof(struct seccomp_notif))
        l->sizes.seccomp_notif = sizeof(struct seccomp_notif);
    l->notif = xcalloc(1, l->sizes.seccomp_notif);
    /* The target waits while the listener works: wake the listener on the target's CPU and
     * the target on the listener's, which saves two cross-CPU wake-ups an exec (Linux 6.6;
     * older kernels refuse the flag and work as before). */
    if (ioctl(l->fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0) < 0)
        pdk_debug("exec listener: no synchronous wake-up: %s", strerror(errno));
    l->stop_fd = eventfd(0, EFD_CLOEXEC);
    l->handoff_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (l->stop_fd < 0 || l->handoff_fd < 0)
        goto fail;
    l->handoff_ev = event_new(base, l->handoff_fd, EV_READ | EV_PERSIST, on_handoff, l);
    if (!l->handoff_ev || event_add(l->handoff_ev, NULL) < 0)
        goto fail;
    /* The thread takes no signal: they are the loop's. */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 512 * 1024);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = pthread_create(&l->thread, &attr, serve, l);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (e != 0) {
        errno = e;
        goto fail;
    }
    l->thread_started = true;
    return l;
fail:
    pdk_debug("exec listener: %s", strerror(errno));
    pdk_exec_listener_free(l);
    return NULL;
}

void pdk_exec_listener_answer(pdk_exec_listener *l, uint64_t token, pid_t pid, bool allow,
                              const char *message)
{
    if (!allow && ioctl(l->fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &token) == 0)
        tell(pid, message);
    respond(l, token, allow ? 0 : EACCES);
}

struct event_base *pdk_exec_listener_base(const pdk_exec_listener *l)
{
    return l->base;
}

void pdk_exec_listener_free(pdk_exec_listener *l)
{
    if (!l)
        return;
    if (l->thread_started) {
        uint64_t one = 1;
        if (write(l->stop_fd, &one, sizeof(one)) < 0)
            pdk_warn("exec listener: cannot stop its thread: %s", strerror(errno));
        pthread_join(l->thread, NULL);
    }
    if (pdk_trace_enabled() && l->execs > 0) {
        char line[96];
        snprintf(line, sizeof(line), "exec listener: %llu execs, %llu us judging each",
                 (unsigned long long)l->execs, (unsigned long long)(l->busy_ns / l->execs / 1000));
        pdk_trace_point(line);
    }
    if (l->handoff_ev)
        event_free(l->handoff_ev);
    while (l->handoff_head) {
        handoff *h = l->handoff_head;
        l->handoff_head = h->next;
        handoff_free(h);
    }
    if (l->fd >= 0)
        close(l->fd);
    if (l->stop_fd >= 0)
        close(l->stop_fd);
    if (l->root >= 0)
        close(l->root);
    if (l->handoff_fd >= 0)
        close(l->handoff_fd);
    pthread_mutex_destroy(&l->lock);
    pdk_exec_known_free(l->known);
    free(l->told);
    free(l->notif);
    free(l);
}

/* ---- nested confine ---- */

/* The supervisor's own hard limit: every process of the sandbox starts with it. */
static rlim_t confine_baseline(void)
{
    struct rlimit own;
    if (getrlimit(RLIMIT_LOCKS, &own) < 0)
        return 0;
    return own.rlim_max;
}

int pdk_exec_confine(pid_t pid)
{
    if (confine_baseline() == 0) {
        errno = ENOTSUP;
        return -1;
    }
    struct rlimit mark = {0, 0};
    return prlimit(pid, RLIMIT_LOCKS, &mark, NULL);
}

bool pdk_exec_is_confined(pid_t pid)
{
    struct rlimit now;
    if (prlimit(pid, RLIMIT_LOCKS, NULL, &now) < 0)
        return true;
    return now.rlim_max < confine_baseline();
}
