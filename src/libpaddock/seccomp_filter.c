/* seccomp_filter.c: see seccomp_filter.h. */
#include "seccomp_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define NAMESPACE_CLONE_FLAGS                                                              \
    (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |            \
     CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME)

/* Always denied with EPERM. */
static const char *const denied_always[] = {
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "bpf", "perf_event_open", "userfaultfd",
    "keyctl", "add_key", "request_key",
    "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module",
    "syslog", "acct", "swapon", "swapoff", "reboot", "quotactl", "quotactl_fd",
    "open_by_handle_at", "lookup_dcookie", "uselib", "nfsservctl", "vhangup",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    NULL,
};

/* Denied unless nested user namespaces are allowed. */
static const char *const denied_unless_nested[] = {
    "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "setns", "unshare", NULL,
};

/* Syscalls newer than libseccomp may know, by their (arch-independent) numbers. */
static const struct {
    const char *name;
    int nr;
} newer_syscalls[] = {
    {"open_tree_attr", 467},
};

static int rule(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned count,
                const struct scmp_arg_cmp *cmp)
{
    return seccomp_rule_add_array(ctx, action, nr, count, cmp);
}

static int deny_name(scmp_filter_ctx ctx, const char *name)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR)
        return 0; /* not on this architecture */
    return rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0, NULL);
}

static int build_rules(scmp_filter_ctx ctx, const pdk_seccomp_options *options,
                       const char **what)
{
    int r;
    for (size_t i = 0; denied_always[i]; i++) {
        if ((r = deny_name(ctx, denied_always[i])) < 0) {
            *what = denied_always[i];
            return r;
        }
    }
    if (!options->nested_userns) {
        for (size_t i = 0; denied_unless_nested[i]; i++) {
            if ((r = deny_name(ctx, denied_unless_nested[i])) < 0) {
                *what = denied_unless_nested[i];
                return r;
            }
        }
        for (size_t i = 0; i < PDK_ARRAY_SIZE(newer_syscalls); i++) {
            if (seccomp_syscall_resolve_name(newer_syscalls[i].name) != __NR_SCMP_ERROR)
                continue;
            if ((r = rule(ctx, SCMP_ACT_ERRNO(EPERM), newer_syscalls[i].nr, 0, NULL)) < 0) {
                *what = newer_syscalls[i].name;
                return r;
            }
        }
        /* clone with any namespace flag (flags are the first argument on x86_64 and
         * aarch64). clone3 passes its flags in memory, out of the filter's reach: ENOSYS
         * makes libc fall back to clone. */
        for (unsigned bit = 0; bit < 32; bit++) {
            uint64_t flag = 1ull << bit;
            if (!(NAMESPACE_CLONE_FLAGS & flag))
                continue;
            struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag);
            if ((r = rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, &c)) < 0) {
                *what = "clone";
                return r;
            }
        }
        if ((r = rule(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0, NULL)) < 0) {
            *what = "clone3";
            return r;
        }
    }

    /* personality: only the query (0xffffffff) and the default persona (0). The kernel
     * reads the low 32 bits; libseccomp allows one comparison per argument per rule, so
     * the two ranges are covered bit by bit: bit 31 clear and another bit set, or bit 31
     * set and another bit clear. */
    for (unsigned bit = 0; bit < 31; bit++) {
        const uint64_t b = 1ull << bit, top = 1ull << 31;
        struct scmp_arg_cmp low = SCMP_A0(SCMP_CMP_MASKED_EQ, top | b, b);
        struct scmp_arg_cmp high = SCMP_A0(SCMP_CMP_MASKED_EQ, top | b, top);
        if ((r = rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1, &low)) < 0 ||
            (r = rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1, &high)) < 0) {
            *what = "personality";
            return r;
        }
    }

    /* ioctl TIOCSTI / TIOCLINUX: the kernel truncates the command to 32 bits, so compare
     * only the low half. */
    static const unsigned long bad_ioctls[] = {TIOCSTI, TIOCLINUX};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(bad_ioctls); i++) {
        struct scmp_arg_cmp c = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, bad_ioctls[i]);
        if ((r = rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1, &c)) < 0) {
            *what = "ioctl";
            return r;
        }
    }

    /* socket: AF_UNIX (1), AF_INET (2), AF_INET6 (10) only. */
    {
        struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_GE, AF_INET6 + 1);
        if ((r = rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1, &c)) < 0) {
            *what = "socket";
            return r;
        }
        static const int others[] = {0, 3, 4, 5, 6, 7, 8, 9};
        for (size_t i = 0; i < PDK_ARRAY_SIZE(others); i++) {
            struct scmp_arg_cmp e = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)others[i]);
            if ((r = rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1, &e)) < 0) {
                *what = "socket";
                return r;
            }
        }
    }
    return 0;
}

int pdk_seccomp_build(const pdk_seccomp_options *options, pdk_seccomp_program *out,
                      pdk_error *err)
{
    memset(out, 0, sizeof(*out));
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return pdk_error_set(err, ENOMEM, "seccomp_init");
    const char *what = "setup";
    int r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (r == 0)
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
    if (r == 0)
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (r == 0)
        r = build_rules(ctx, options, &what);
    if (r < 0) {
        seccomp_release(ctx);
        return pdk_error_set(err, -r, "seccomp rule for %s", what);
    }
    int mfd = memfd_create("paddock-seccomp", MFD_CLOEXEC);
    if (mfd < 0) {
        seccomp_release(ctx);
        return pdk_error_set(err, errno, "memfd_create");
    }
    r = seccomp_export_bpf(ctx, mfd);
    seccomp_release(ctx);
    if (r < 0) {
        close(mfd);
        return pdk_error_set(err, -r, "seccomp_export_bpf");
    }
    struct stat st;
    if (fstat(mfd, &st) < 0 || st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) ||
        st.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS) {
        close(mfd);
        return pdk_error_set(err, EINVAL, "seccomp: unexpected BPF program size");
    }
    out->filter = xmalloc((size_t)st.st_size);
    if (pread(mfd, out->filter, (size_t)st.st_size, 0) != st.st_size) {
        int saved = errno;
        close(mfd);
        pdk_seccomp_program_free(out);
        return pdk_error_set(err, saved, "seccomp: reading the BPF program");
    }
    close(mfd);
    out->length = (unsigned short)(st.st_size / sizeof(struct sock_filter));
    return 0;
}

int pdk_seccomp_install(const pdk_seccomp_program *program)
{
    struct sock_fprog prog = {.len = program->length, .filter = program->filter};
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

void pdk_seccomp_program_free(pdk_seccomp_program *program)
{
    free(program->filter);
    program->filter = NULL;
    program->length = 0;
}
