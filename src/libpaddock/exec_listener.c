/* exec_listener.c: see exec_listener.h. */
#include "exec_listener.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS     4096
#define MAX_ARG_LEN  (128 * 1024)
#define MAX_ARGV_LEN (2 * 1024 * 1024)

struct pdk_exec_listener {
    struct event_base *base;
    int fd;
    struct event *ev;
    pdk_exec_handler handler;
    struct seccomp_notif_sizes sizes;
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

/* argv at addr of pid (NULL-terminated list, new); NULL when unreadable. */
static char **read_argv(pid_t pid, uint64_t addr)
{
    char **argv = xcalloc(1, sizeof(char *));
    size_t total = 0;
    for (size_t i = 0; i < MAX_ARGS; i++) {
        uint64_t ptr = 0;
        struct iovec local = {&ptr, sizeof(ptr)},
                     remote = {(void *)(uintptr_t)(addr + i * sizeof(ptr)), sizeof(ptr)};
        if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(ptr))
            goto fail;
        if (ptr == 0)
            return argv;
        char *arg = read_string(pid, ptr, MAX_ARG_LEN);
        if (!arg)
            goto fail;
        total += strlen(arg);
        if (total > MAX_ARGV_LEN) {
            free(arg);
            goto fail;
        }
        pdk_strv_push_take(&argv, arg);
    }
fail:
    pdk_strv_free(argv);
    return NULL;
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
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd >= 0) {
        fd = (int)syscall(SYS_pidfd_getfd, pidfd, 2, 0);
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
    (void)!write(fd, message, strlen(message));
    close(fd);
}

/* Whether the absolute path names something in pid's view: resolved in its root, its
 * absolute symlinks included (RESOLVE_IN_ROOT). A relative path, or anything uncertain,
 * counts as existing (it is judged). */
static bool exists_for(pid_t pid, const char *path)
{
    if (path[0] != '/')
        return true;
    char where[64];
    snprintf(where, sizeof(where), "/proc/%d/root", (int)pid);
    int root = open(where, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return true;
    struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
    int fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
    int e = errno;
    close(root);
    if (fd >= 0) {
        close(fd);
        return true;
    }
    return e != ENOENT && e != ENOTDIR;
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

bool pdk_exec_request_exists(const pdk_exec_request *req)
{
    return exists_for(req->pid, req->path);
}

static void on_notification(evutil_socket_t fd, short what, void *arg)
{
    pdk_exec_listener *l = arg;
    struct seccomp_notif *req = xcalloc(1, l->sizes.seccomp_notif);
    if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, req) < 0) {
        free(req); /* ENOENT: the target died before we read it */
        return;
    }
    uint64_t t0 = pdk_now_monotonic_ns();
    pid_t pid = (pid_t)req->pid;
    if (req->data.nr == (int)SYS_connect) {
        /* The confined process or a child of it: no network (nested confine). */
        bool ok = !l->handler.connect || l->handler.connect(l->handler.arg, pid);
        respond(l, req->id, ok ? 0 : ECONNREFUSED);
        free(req);
        return;
    }
    bool at = req->data.nr != (int)SYS_execve;
    uint64_t path_addr = at ? req->data.args[1] : req->data.args[0];
    uint64_t argv_addr = at ? req->data.args[2] : req->data.args[1];
    _cleanup_free_ char *path = read_string(pid, path_addr, 4096);
    _cleanup_strv_ char **argv = read_argv(pid, argv_addr);

    /* What was read is what the process asked for only while it still waits. */
    if (ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0) {
        free(req);
        return;
    }
    char message[1024] = "";
    pdk_exec_answer answer;
    if (!argv || !argv[0]) {
        /* unreadable, or argv[0] missing: judged as the path alone */
        pdk_strv_free(argv);
        argv = NULL;
        pdk_strv_push(&argv, path ? path : "");
    }
    pdk_exec_request er = {.pid = pid, .path = path ? path : "", .argv = argv};
    answer = l->handler.judge(l->handler.arg, l, &er, req->id, message, sizeof(message));
    free(er.cwd_buf);
    l->execs++;
    l->busy_ns += pdk_now_monotonic_ns() - t0;
    if (answer == PDK_EXEC_ALLOW) {
        respond(l, req->id, 0);
    } else if (answer == PDK_EXEC_MISSING) {
        respond(l, req->id, ENOENT);
    } else if (answer == PDK_EXEC_DENY) {
        if (pid != l->told_pid || !l->told || strcmp(l->told, message) != 0) {
            tell(pid, message);
            free(l->told);
            l->told = xstrdup(message);
            l->told_pid = pid;
        }
        respond(l, req->id, EACCES);
    }
    free(req);
}

pdk_exec_listener *pdk_exec_listener_new(struct event_base *base, int listener_fd,
                                         const pdk_exec_handler *handler)
{
    pdk_exec_listener *l = xcalloc(1, sizeof(*l));
    l->base = base;
    l->fd = listener_fd;
    l->handler = *handler;
    if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &l->sizes) < 0) {
        pdk_exec_listener_free(l);
        return NULL;
    }
    if (l->sizes.seccomp_notif < sizeof(struct seccomp_notif))
        l->sizes.seccomp_notif = sizeof(struct seccomp_notif);
    /* Not SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (Linux 6.6): measured slower here (bench/exec.py),
     * the supervisor then shares the sandbox's CPU. */
    l->ev = event_new(base, listener_fd, EV_READ | EV_PERSIST, on_notification, l);
    if (!l->ev || event_add(l->ev, NULL) < 0) {
        pdk_exec_listener_free(l);
        return NULL;
    }
    return l;
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
    if (pdk_trace_enabled() && l->execs > 0) {
        char line[96];
        snprintf(line, sizeof(line), "exec listener: %llu execs, %llu us judging each",
                 (unsigned long long)l->execs, (unsigned long long)(l->busy_ns / l->execs / 1000));
        pdk_trace_point(line);
    }
    if (l->ev)
        event_free(l->ev);
    if (l->fd >= 0)
        close(l->fd);
    free(l->told);
    free(l);
}
