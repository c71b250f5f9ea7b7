/* log.c: see log.h. */
#include "log.h"

#include "output.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static bool notice_diverts(void);
static void notice_record(pdk_notice_kind kind, unsigned flags, const char *text);

static pdk_log_level current_level = PDK_LOG_WARN;

void pdk_log_set_level(pdk_log_level level)
{
    current_level = level;
}

pdk_log_level pdk_log_get_level(void)
{
    return current_level;
}

void pdk_log(pdk_log_level level, const char *fmt, ...)
{
    if (level > current_level)
        return;
    char line[2048];
    static const char *const prefixes[] = {"", "warning: ", "", "debug: "};
    int n = snprintf(line, sizeof(line), "paddock: %s", prefixes[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    /* While a command that owns the terminal runs, a warning is a notice (log.h). */
    if (level <= PDK_LOG_WARN && notice_diverts()) {
        notice_record(PDK_NOTICE_WARNING, PDK_NOTICE_PRINT, line + strlen("paddock: "));
        return;
    }
    /* a registered secret never reaches stderr either (redact.h), nor a control character
     * of a name the sandbox chose (display.h): the line may be on the terminal the sandbox
     * writes to (output.h) */
    pdk_output(STDERR_FILENO, 0, line);
}

static int trace_state = -1;
static uint64_t trace_start;

bool pdk_trace_enabled(void)
{
    if (trace_state < 0) {
        const char *v = getenv("PADDOCK_TRACE");
        trace_state = v && *v && strcmp(v, "0") != 0;
        trace_start = pdk_now_monotonic_ns();
    }
    return trace_state == 1;
}

void pdk_trace_point(const char *what)
{
    pdk_outputf(STDERR_FILENO, 0, "paddock: trace: +%lluus %d %s",
                (unsigned long long)((pdk_now_monotonic_ns() - trace_start) / 1000), (int)getpid(),
                what);
}

void pdk_crash_point(const char *name)
{
    static int armed = -1;
    static const char *at;
    if (armed < 0) {
        at = getenv("PADDOCK_TEST_CRASH_AT");
        armed = at && *at;
    }
    if (armed && strcmp(at, name) == 0)
        kill(getpid(), SIGKILL);
}

/* ---- running notices ---- */

#define NOTICES_PRINTED_MAX 200       /* a run's notices on stderr; the rest: the audit log */
#define NOTICES_WRITTEN_MAX 20000     /* a run's lines in the notice file */
#define NOTICES_FILE_MAX    (4 << 20) /* then notices.log becomes notices.log.1 */

static struct {
    pthread_mutex_t lock;
    bool active;
    pid_t owner; /* the supervisor; any other process prints as before */
    pdk_notice_route route;
    char *dir, *session;
    bool file_failed; /* said once */
    uint64_t printed, written;
    pdk_notice_counts counts;
} notices = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const char *const notice_kind_names[] = {"exec-refused", "request-refused", "approval",
                                                "warning"};

char *pdk_notices_dir(const char *state_dir)
{
    return xasprintf("%s/notices", state_dir);
}

/* The notice file, opened for one line (under the lock): a rotation by another run (a
 * rename) is followed at once. -1 when it cannot be. */
static int open_notice_file(int *dirfd_out)
{
    if (mkdir(notices.dir, 0700) < 0 && errno != EEXIST)
        return -1;
    int dirfd = open(notices.dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dirfd < 0)
        return -1;
    int fd = openat(dirfd, PDK_NOTICES_FILE, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
                    0600);
    if (fd < 0) {
        close(dirfd);
        return -1;
    }
    *dirfd_out = dirfd;
    return fd;
}

int pdk_notices_begin(const char *state_dir, const char *session, pdk_notice_route route,
                      char **path, pdk_error *err)
{
    pthread_mutex_lock(&notices.lock);
    free(notices.dir);
    free(notices.session);
    notices.dir = pdk_notices_dir(state_dir);
    notices.session = xstrdup(session);
    notices.route = route;
    notices.owner = getpid();
    notices.file_failed = false;
    notices.printed = notices.written = 0;
    memset(&notices.counts, 0, sizeof(notices.counts));
    int ret = 0;
    if (route != PDK_NOTICES_STDERR) {
        /* made now: the start line names it, and a watcher can follow it from there */
        int dirfd = -1;
        int fd = open_notice_file(&dirfd);
        if (fd < 0)
            ret = pdk_error_set(err, errno, "cannot open the notice file %s/%s", notices.dir,
                                PDK_NOTICES_FILE);
        else {
            close(fd);
            close(dirfd);
        }
    }
    notices.active = ret == 0;
    if (ret == 0 && path)
        *path = xasprintf("%s/%s", notices.dir, PDK_NOTICES_FILE);
    pthread_mutex_unlock(&notices.lock);
    return ret;
}

bool pdk_notices_held(void)
{
    pthread_mutex_lock(&notices.lock);
    bool held = notices.active && notices.route != PDK_NOTICES_STDERR && notices.owner == getpid();
    pthread_mutex_unlock(&notices.lock);
    return held;
}

static bool notice_diverts(void)
{
    return pdk_notices_held();
}

/* One line into the notice file (under the lock). */
static void notice_write_line(const char *kind, const char *text)
{
    if (notices.file_failed)
        return;
    int dirfd = -1;
    int fd = open_notice_file(&dirfd);
    if (fd < 0) {
        notices.file_failed = true;
        return;
    }
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
    _cleanup_free_ char *line = xasprintf("%s %s %s %s\n", when, notices.session, kind, text);
    (void)pdk_write_all(fd, line, strlen(line));
    struct stat sb;
    if (fstat(fd, &sb) == 0 && sb.st_size > NOTICES_FILE_MAX)
        (void)renameat(dirfd, PDK_NOTICES_FILE, dirfd, PDK_NOTICES_FILE ".1");
    close(fd);
    close(dirfd);
}

static void print_line(const char *shown)
{
    pdk_outputf(STDERR_FILENO, 0, "paddock: %s", shown);
}

static void notice_record(pdk_notice_kind kind, unsigned flags, const char *text)
{
    /* a registered secret is shown nowhere (redact.h); one line, shown as it is (output.h) */
    _cleanup_free_ char *shown = pdk_output_shown(text);

    pthread_mutex_lock(&notices.lock);
    if (!notices.active || notices.owner != getpid()) {
        pthread_mutex_unlock(&notices.lock);
        if (!(flags & PDK_NOTICE_QUIET) && (flags & PDK_NOTICE_PRINT))
            print_line(shown);
        return;
    }
    pdk_notice_counts *c = &notices.counts;
    if (flags & PDK_NOTICE_QUIET) {
        c->quiet++;
        pthread_mutex_unlock(&notices.lock);
        return;
    }
    switch (kind) {
    case PDK_NOTICE_EXEC_REFUSED:
        c->execs_refused++;
        break;
    case PDK_NOTICE_REQUEST_REFUSED:
        c->requests_refused++;
        break;
    case PDK_NOTICE_APPROVAL:
        c->approvals++;
        break;
    case PDK_NOTICE_WARNING:
    default:
        c->warnings++;
        break;
    }
    if (notices.written < NOTICES_WRITTEN_MAX)
        notice_write_line(notice_kind_names[kind], shown);
    else if (notices.written == NOTICES_WRITTEN_MAX)
        notice_write_line("warning", "more notices of this run are in the audit log only");
    notices.written++;
    if (flags & PDK_NOTICE_PRINT) {
        if (notices.route != PDK_NOTICES_STDERR) {
            c->held++;
        } else if (notices.printed < NOTICES_PRINTED_MAX) {
            print_line(shown);
            notices.printed++;
        } else if (notices.printed++ == NOTICES_PRINTED_MAX) {
            _cleanup_free_ char *more =
                xasprintf("more notices of this run are not printed (paddock audit --session %s)",
                          notices.session);
            print_line(more);
        }
    }
    pthread_mutex_unlock(&notices.lock);
}

void pdk_notice(pdk_notice_kind kind, unsigned flags, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    _cleanup_free_ char *text = xvasprintf(fmt, ap);
    va_end(ap);
    notice_record(kind, flags, text);
}

void pdk_notices_end(pdk_notice_counts *counts)
{
    pthread_mutex_lock(&notices.lock);
    if (counts)
        *counts = notices.counts;
    notices.active = false;
    free(notices.dir);
    free(notices.session);
    notices.dir = notices.session = NULL;
    pthread_mutex_unlock(&notices.lock);
}

int pdk_notice_line_parse(const char *line, pdk_notice_line *out)
{
    memset(out, 0, sizeof(*out));
    /* "YYYY-MM-DD HH:MM:SS SESSION KIND TEXT" */
    if (strlen(line) < 20 || line[10] != ' ' || line[19] != ' ')
        return -1;
    memcpy(out->time, line, 19);
    const char *p = line + 20;
    const char *sp = strchr(p, ' ');
    if (!sp || sp == p || (size_t)(sp - p) >= sizeof(out->session))
        return -1;
    memcpy(out->session, p, (size_t)(sp - p));
    p = sp + 1;
    sp = strchr(p, ' ');
    if (!sp || sp == p || (size_t)(sp - p) >= sizeof(out->kind))
        return -1;
    memcpy(out->kind, p, (size_t)(sp - p));
    out->text = sp + 1;
    return 0;
}
