/* seccomp_filter.h: the sandbox's seccomp filter.
 *
 * Written with libseccomp in seccomp_rules.c and compiled to BPF at build time, for x86_64
 * and aarch64 whatever the build machine (tests/unit/test_seccomp.c runs both in a BPF
 * interpreter), so that nothing is built between start and clone; other architectures'
 * syscalls (i386, arm, x32) kill the process. Denied with EPERM: ptrace, process_vm_readv/writev,
 * pidfd_getfd, io_uring_*, bpf, perf_event_open, userfaultfd, keyctl/add_key/request_key,
 * kexec_*, module loading, syslog, mount/umount2/pivot_root/chroot and the new mount API,
 * unshare/setns and clone with namespace flags (unless nested user namespaces are allowed),
 * personality changes, ioctl TIOCSTI/TIOCLINUX (any upper 32 bits); clone3 gets ENOSYS so
 * that libc falls back to clone, whose flags can be checked; socket families other than
 * AF_UNIX, AF_INET and AF_INET6 get EAFNOSUPPORT. With notify_exec, execve and execveat go
 * to a user-notification listener (the supervisor's exec_listener.c) that judges them by
 * the policy's command rules; with notify_connect, connect too (nested confine).
 */
#ifndef PADDOCK_SECCOMP_FILTER_H
#define PADDOCK_SECCOMP_FILTER_H

#include "error.h"

#include <linux/filter.h>

typedef struct pdk_seccomp_options {
    bool nested_userns;
    bool notify_exec;    /* execve/execveat to a user-notification listener */
    bool notify_connect; /* connect too (with notify_exec): nested confine */
} pdk_seccomp_options;

typedef struct pdk_seccomp_program {
    struct sock_filter *filter;
    unsigned short length;
    bool notify; /* installing it makes a listener */
} pdk_seccomp_program;

/* Variants: bit 0 = nested user namespaces allowed, bit 1 = exec notification, bit 2 =
 * connect notification too. */
#define PDK_SECCOMP_VARIANTS 8

/* The programs of one architecture. */
typedef struct pdk_seccomp_program_set {
    const char *arch; /* "x86_64", "aarch64"; NULL ends the list */
    pdk_seccomp_program programs[PDK_SECCOMP_VARIANTS];
} pdk_seccomp_program_set;

/* Every architecture's (for tests), and the running architecture's. */
extern const pdk_seccomp_program_set pdk__seccomp_program_sets[];
extern const pdk_seccomp_program *const pdk__seccomp_programs;

/* Pick the program for options (no allocation; out points at static data). */
int pdk_seccomp_build(const pdk_seccomp_options *options, pdk_seccomp_program *out, pdk_error *err);
/* Install (sandbox side; no_new_privs must be set). Returns 0, or the listener's fd for a
 * notifying program, or -1 with errno. */
int pdk_seccomp_install(const pdk_seccomp_program *program);
void pdk_seccomp_program_free(pdk_seccomp_program *program);
/* Whether the sandbox's filter works here: in a child, install the plain variant (with
 * no_new_privs) and check that it answers (ptrace denied with EPERM). 0, an errno value of
 * the step that failed, or ENOTSUP when the filter installed but did not deny. */
int pdk_seccomp_probe(void);

#endif
