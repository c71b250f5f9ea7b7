/* util.h: memory helpers that abort on failure, cleanup attributes, small string and fd
 * helpers shared by every module.
 *
 * Ownership conventions (after bubblewrap and crun):
 *   _cleanup_free_ char *s = ...;      freed when s leaves scope
 *   _cleanup_close_ int fd = ...;      closed when fd leaves scope (if >= 0)
 *   return steal_pointer(&s);          hand ownership to the caller
 *   return steal_fd(&fd);
 * Allocation failure is not an error a caller can handle: xmalloc() and friends abort.
 */
#ifndef PADDOCK_UTIL_H
#define PADDOCK_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define PDK_PRINTF(a, b)  __attribute__((format(printf, a, b)))
#define PDK_NORETURN      __attribute__((noreturn))
#define PDK_UNUSED        __attribute__((unused))
#define PDK_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define _cleanup_(f)       __attribute__((cleanup(f)))
#define _cleanup_free_     _cleanup_(pdk_freep)
#define _cleanup_close_    _cleanup_(pdk_closep)
#define _cleanup_fclose_   _cleanup_(pdk_fclosep)
#define _cleanup_strv_     _cleanup_(pdk_strv_freep)
#define _cleanup_closedir_ _cleanup_(pdk_closedirp)

void pdk_freep(void *pp);
void pdk_closep(int *fdp);
void pdk_fclosep(FILE **fp);
void pdk_strv_freep(char ***strvp);
void pdk_closedirp(void *dirpp);

static inline void *pdk_steal_pointer(void *pp)
{
    void **p = (void **)pp;
    void *v = *p;
    *p = NULL;
    return v;
}
#define steal_pointer(pp) ((__typeof__(*(pp)))pdk_steal_pointer(pp))

static inline int steal_fd(int *fdp)
{
    int fd = *fdp;
    *fdp = -1;
    return fd;
}

void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) PDK_PRINTF(1, 2);
char *xvasprintf(const char *fmt, va_list ap) PDK_PRINTF(1, 0);

/* NULL-terminated string vectors. */
size_t pdk_strv_length(char *const *strv);
void pdk_strv_free(char **strv);
/* Append a copy of s; *strvp may be NULL. */
void pdk_strv_push(char ***strvp, const char *s);
/* Append s without copying (takes ownership). */
void pdk_strv_push_take(char ***strvp, char *s);
bool pdk_strv_contains(char *const *strv, const char *s);
char **pdk_strv_copy(char *const *strv);
/* A NULL-terminated array of head's words (the NULL ones left out) then rest's (NULL: none),
 * pointing at the same strings: free the array only. */
char **pdk_strv_view(const char *const *head, size_t head_count, char *const *rest);

/* A letter, digit, '.', '_' or '-': what the names of sessions and secrets are made of. */
bool pdk_name_char(int c);
bool pdk_str_has_prefix(const char *s, const char *prefix);
bool pdk_str_has_suffix(const char *s, const char *suffix);
bool pdk_streq(const char *a, const char *b); /* NULL-safe */

/* A growable byte buffer, always NUL-terminated. */
typedef struct pdk_buf {
    char *data;
    size_t len;
    size_t cap;
} pdk_buf;
void pdk_buf_append(pdk_buf *b, const void *data, size_t len);
void pdk_buf_puts(pdk_buf *b, const char *s);
void pdk_buf_printf(pdk_buf *b, const char *fmt, ...) PDK_PRINTF(2, 3);
void pdk_buf_free(pdk_buf *b);
/* The same for a buffer that held a secret: wiped first. */
void pdk_buf_free_secret(pdk_buf *b);
char *pdk_buf_steal(pdk_buf *b);
/* Append s (len bytes) to out with every needle (not empty) replaced by with; returns how
 * many were replaced. */
size_t pdk_buf_replace_all(pdk_buf *out, const char *s, size_t len, const char *needle,
                           const char *with);
/* Wipe a secret string and free it (NULL-safe). */
void pdk_free_secret(char *s);

/* The value of a hex digit (0-9, a-f, A-F), or -1. */
int pdk_hex_value(int c);

/* Write all of buf, retrying on EINTR and short writes. Returns 0 or -1 with errno. */
int pdk_write_all(int fd, const void *buf, size_t len);
/* Read until EOF into a new NUL-terminated buffer; limit bounds the size (0: 64 MiB).
 * Returns 0 or -1 with errno (EFBIG when over the limit). */
int pdk_read_all(int fd, char **out, size_t *out_len, size_t limit);
/* Read a whole file relative to dirfd (AT_FDCWD for paths). */
int pdk_read_file_at(int dirfd, const char *path, char **out, size_t *out_len, size_t limit);
/* Write a small string to a file that must already exist (procfs, cgroupfs). */
int pdk_write_file_at(int dirfd, const char *path, const char *content);

/* Run fn(arg) in a forked child and return what it returned as the child's exit status: 0,
 * or an errno value (fn returns errno values, not -1). EINTR when the child died of a
 * signal, errno when the fork or the wait failed. For probes that change the calling process
 * (unshare, seccomp) and must not change this one. */
int pdk_errno_in_child(int (*fn)(void *arg), void *arg);

/* Monotonic and wall clocks in nanoseconds. */
uint64_t pdk_now_monotonic_ns(void);
int64_t pdk_now_realtime_ns(void);

/* What /proc/PID/stat says of a process: its name (comm, cut to fit), parent and start
 * time (field 22, in clock ticks since boot: with pid, names one process). */
typedef struct {
    char comm[64];
    pid_t ppid;
    unsigned long long start;
} pdk_proc_stat;
/* false when pid is gone (or its stat unreadable). */
bool pdk_proc_stat_read(pid_t pid, pdk_proc_stat *out);

/* Parse a decimal integer in [min, max]; returns 0 or -1 (errno EINVAL/ERANGE). */
int pdk_parse_int64(const char *s, int64_t min, int64_t max, int64_t *out);

/* SHA-256 of data, as 64 lowercase hex digits and a NUL. */
void pdk_sha256_hex(const void *data, size_t len, char out[65]);

#endif
