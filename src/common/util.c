/* util.c: see util.h. */
#include "util.h"

#include "output.h"

#include <dirent.h>
#include <errno.h>
#include <sodium.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static PDK_NORETURN void out_of_memory(void)
{
    pdk_output_out_of_memory(NULL);
}

void pdk_freep(void *pp)
{
    free(*(void **)pp);
}

void pdk_closep(int *fdp)
{
    if (*fdp >= 0) {
        int saved = errno;
        close(*fdp);
        errno = saved;
    }
}

void pdk_fclosep(FILE **fp)
{
    if (*fp)
        fclose(*fp);
}

void pdk_strv_freep(char ***strvp)
{
    pdk_strv_free(*strvp);
}

void pdk_closedirp(void *dirpp)
{
    DIR *d = *(DIR **)dirpp;
    if (d)
        closedir(d);
}

void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        out_of_memory();
    return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
    if (!p)
        out_of_memory();
    return p;
}

void *xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);
    if (!p)
        out_of_memory();
    return p;
}

char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        out_of_memory();
    return p;
}

char *xstrndup(const char *s, size_t n)
{
    char *p = strndup(s, n);
    if (!p)
        out_of_memory();
    return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        out_of_memory();
    return s;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

size_t pdk_strv_length(char *const *strv)
{
    size_t n = 0;
    while (strv && strv[n])
        n++;
    return n;
}

void pdk_strv_free(char **strv)
{
    if (!strv)
        return;
    for (size_t i = 0; strv[i]; i++)
        free(strv[i]);
    free(strv);
}

void pdk_strv_push_take(char ***strvp, char *s)
{
    size_t n = pdk_strv_length(*strvp);
    *strvp = xrealloc(*strvp, (n + 2) * sizeof(char *));
    (*strvp)[n] = s;
    (*strvp)[n + 1] = NULL;
}

void pdk_strv_push(char ***strvp, const char *s)
{
    pdk_strv_push_take(strvp, xstrdup(s));
}

bool pdk_strv_contains(char *const *strv, const char *s)
{
    for (size_t i = 0; strv && strv[i]; i++)
        if (strcmp(strv[i], s) == 0)
            return true;
    return false;
}

char **pdk_strv_view(const char *const *head, size_t head_count, char *const *rest)
{
    size_t n = pdk_strv_length(rest), k = 0;
    char **view = xmalloc((head_count + n + 1) * sizeof(char *));
    for (size_t i = 0; i < head_count; i++)
        if (head[i])
            view[k++] = (char *)head[i];
    if (n)
        memcpy(view + k, rest, n * sizeof(char *));
    view[k + n] = NULL;
    return view;
}

char **pdk_strv_copy(char *const *strv)
{
    char **copy = xcalloc(pdk_strv_length(strv) + 1, sizeof(char *));
    for (size_t i = 0; strv && strv[i]; i++)
        copy[i] = xstrdup(strv[i]);
    return copy;
}

bool pdk_str_has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool pdk_str_has_suffix(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && memcmp(s + ls - lx, suffix, lx) == 0;
}

bool pdk_streq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static void buf_reserve(pdk_buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1)
        cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
}

void pdk_buf_append(pdk_buf *b, const void *data, size_t len)
{
    buf_reserve(b, len);
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void pdk_buf_puts(pdk_buf *b, const char *s)
{
    pdk_buf_append(b, s, strlen(s));
}

void pdk_buf_printf(pdk_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        va_end(ap2);
        return;
    }
    buf_reserve(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    b->len += (size_t)n;
}

void pdk_buf_free(pdk_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

bool pdk_name_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

void pdk_buf_free_secret(pdk_buf *b)
{
    if (b->data)
        sodium_memzero(b->data, b->len);
    pdk_buf_free(b);
}

void pdk_free_secret(char *s)
{
    if (s) {
        sodium_memzero(s, strlen(s));
        free(s);
    }
}

size_t pdk_buf_replace_all(pdk_buf *out, const char *s, size_t len, const char *needle,
                           const char *with)
{
    size_t nl = strlen(needle), n = 0;
    const char *end = s + len;
    for (const char *hit; nl && (hit = memmem(s, (size_t)(end - s), needle, nl)); n++) {
        pdk_buf_append(out, s, (size_t)(hit - s));
        pdk_buf_puts(out, with);
        s = hit + nl;
    }
    pdk_buf_append(out, s, (size_t)(end - s));
    return n;
}

char *pdk_buf_steal(pdk_buf *b)
{
    if (!b->data)
        return xstrdup("");
    char *d = b->data;
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

int pdk_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int pdk_read_all(int fd, char **out, size_t *out_len, size_t limit)
{
    if (limit == 0)
        limit = 64u << 20;
    pdk_buf b = {0};
    char chunk[8192];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int saved = errno;
            pdk_buf_free(&b);
            errno = saved;
            return -1;
        }
        if (n == 0)
            break;
        if (b.len + (size_t)n > limit) {
            pdk_buf_free(&b);
            errno = EFBIG;
            return -1;
        }
        pdk_buf_append(&b, chunk, (size_t)n);
    }
    if (out_len)
        *out_len = b.len;
    *out = pdk_buf_steal(&b);
    return 0;
}

int pdk_read_file_at(int dirfd, const char *path, char **out, size_t *out_len, size_t limit)
{
    _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -1;
    return pdk_read_all(fd, out, out_len, limit);
}

int pdk_write_file_at(int dirfd, const char *path, const char *content)
{
    _cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -1;
    return pdk_write_all(fd, content, strlen(content));
}

uint64_t pdk_now_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int64_t pdk_now_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool pdk_proc_stat_read(pid_t pid, pdk_proc_stat *out)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    /* pid (comm) state ppid ...: comm may hold spaces and parentheses */
    char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
    if (!open_paren || !close_paren || close_paren < open_paren)
        return false;
    *close_paren = '\0';
    /* after ") ": state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
     * utime stime cutime cstime priority nice num_threads itrealvalue starttime */
    int ppid = 0;
    unsigned long long start = 0;
    if (sscanf(close_paren + 2,
               "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               &ppid, &start) != 2)
        return false;
    snprintf(out->comm, sizeof(out->comm), "%s", open_paren + 1);
    out->ppid = ppid;
    out->start = start;
    return true;
}

int pdk_parse_int64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s || !*s) {
        errno = EINVAL;
        return -1;
    }
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE || (end && *end) || end == s) {
        if (errno != ERANGE)
            errno = EINVAL;
        return -1;
    }
    if (v < min || v > max) {
        errno = ERANGE;
        return -1;
    }
    *out = v;
    return 0;
}

void pdk_sha256_hex(const void *data, size_t len, char out[65])
{
    /* libsodium's: no library initialisation on the way to the sandbox (OpenSSL 3 loads
     * its configuration and providers at the first digest, about 2 ms). */
    unsigned char md[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(md, data, len);
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
}

int pdk_hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int pdk_errno_in_child(int (*fn)(void *arg), void *arg)
{
    pid_t pid = fork();
    if (pid < 0)
        return errno;
    if (pid == 0)
        _exit(fn(arg) & 0xff);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return errno;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return EINTR;
}
