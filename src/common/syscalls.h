/* syscalls.h: every raw system call paddock makes, one small inline wrapper each.
 *
 * The C library has no wrapper for these (or only a newer one than Debian 12's glibc 2.36),
 * so they are made with syscall(2); nothing else in src/ calls syscall() directly. Each
 * returns what the kernel returns: the result, or -1 with errno set. The numbers come from
 * <sys/syscall.h>, with the Landlock ones given here when the C library's headers are older
 * than the running kernel; the uapi structs live with the mechanism that fills them
 * (landlock.c, mounts.c), so the wrappers take them as const void *.
 *
 * Safe between clone and exec: no allocation, no locks, nothing but the system call.
 */
#ifndef PADDOCK_SYSCALLS_H
#define PADDOCK_SYSCALLS_H

#include <linux/openat2.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule       445
#define __NR_landlock_restrict_self  446
#endif

struct clone_args;
struct __user_cap_header_struct;
struct __user_cap_data_struct;

/* ---- processes ---------------------------------------------------------------------- */

/* clone3(2): args is a struct clone_args of size bytes. The child returns 0, on the
 * caller's stack when args has none (fork-like). */
static inline pid_t pdk_sys_clone3(struct clone_args *args, size_t size)
{
    return (pid_t)syscall(SYS_clone3, args, size);
}

static inline int pdk_sys_pidfd_open(pid_t pid, unsigned flags)
{
    return (int)syscall(SYS_pidfd_open, pid, flags);
}

/* A duplicate of the process's fd targetfd (needs ptrace rights over it). */
static inline int pdk_sys_pidfd_getfd(int pidfd, int targetfd, unsigned flags)
{
    return (int)syscall(SYS_pidfd_getfd, pidfd, targetfd, flags);
}

static inline int pdk_sys_pidfd_send_signal(int pidfd, int sig, siginfo_t *info, unsigned flags)
{
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, info, flags);
}

/* exit_group(2) itself, not exit(3): no atexit handlers, no sanitizer hooks (for a child
 * running on a borrowed stack). */
static inline __attribute__((noreturn)) void pdk_sys_exit_group(int status)
{
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

/* FUTEX_WAIT / FUTEX_WAKE on a plain int, no timeout. */
static inline long pdk_sys_futex(volatile int *addr, int op, int value)
{
    return syscall(SYS_futex, addr, op, value, NULL, NULL, 0);
}

static inline long pdk_sys_ptrace(long request, pid_t pid, void *addr, void *data)
{
    return syscall(SYS_ptrace, request, pid, addr, data);
}

/* ---- files -------------------------------------------------------------------------- */

static inline int pdk_sys_openat2(int dirfd, const char *path, const struct open_how *how)
{
    return (int)syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
}

static inline int pdk_sys_close_range(unsigned first, unsigned last, unsigned flags)
{
    return (int)syscall(SYS_close_range, first, last, flags);
}

/* ---- privileges --------------------------------------------------------------------- */

static inline int pdk_sys_capset(struct __user_cap_header_struct *header,
                                 struct __user_cap_data_struct *data)
{
    return (int)syscall(SYS_capset, header, data);
}

static inline int pdk_sys_seccomp(unsigned operation, unsigned flags, void *args)
{
    return (int)syscall(SYS_seccomp, operation, flags, args);
}

static inline int pdk_sys_landlock_create_ruleset(const void *attr, size_t size, uint32_t flags)
{
    return (int)syscall(__NR_landlock_create_ruleset, attr, size, flags);
}

static inline int pdk_sys_landlock_add_rule(int ruleset_fd, int rule_type, const void *attr,
                                            uint32_t flags)
{
    return (int)syscall(__NR_landlock_add_rule, ruleset_fd, rule_type, attr, flags);
}

static inline int pdk_sys_landlock_restrict_self(int ruleset_fd, uint32_t flags)
{
    return (int)syscall(__NR_landlock_restrict_self, ruleset_fd, flags);
}

/* ---- mounts ------------------------------------------------------------------------- */

static inline int pdk_sys_pivot_root(const char *new_root, const char *put_old)
{
    return (int)syscall(SYS_pivot_root, new_root, put_old);
}

static inline int pdk_sys_open_tree(int dirfd, const char *path, unsigned flags)
{
    return (int)syscall(SYS_open_tree, dirfd, path, flags);
}

static inline int pdk_sys_move_mount(int from_dirfd, const char *from, int to_dirfd, const char *to,
                                     unsigned flags)
{
    return (int)syscall(SYS_move_mount, from_dirfd, from, to_dirfd, to, flags);
}

/* attr is a struct mount_attr of size bytes. */
static inline int pdk_sys_mount_setattr(int dirfd, const char *path, unsigned flags,
                                        const void *attr, size_t size)
{
    return (int)syscall(SYS_mount_setattr, dirfd, path, flags, attr, size);
}

static inline int pdk_sys_fsopen(const char *fs, unsigned flags)
{
    return (int)syscall(SYS_fsopen, fs, flags);
}

static inline int pdk_sys_fsconfig(int fs_fd, unsigned cmd, const char *key, const void *value,
                                   int aux)
{
    return (int)syscall(SYS_fsconfig, fs_fd, cmd, key, value, aux);
}

static inline int pdk_sys_fsmount(int fs_fd, unsigned flags, unsigned attrs)
{
    return (int)syscall(SYS_fsmount, fs_fd, flags, attrs);
}

#endif
