/* seccomp_rules.c: the sandbox's seccomp rules, written with libseccomp. This is a
 * build-time generator: it compiles the rules into BPF for every architecture paddock
 * supports (x86_64 and aarch64, whatever the build machine is), one program per variant,
 * and writes them as C arrays (seccomp_programs.c). At run time paddock only picks the
 * program of its architecture and installs it: nothing is built between start and clone,
 * and libseccomp is not loaded at all. seccomp_filter.h lists what is denied;
 * tests/unit/test_seccomp.c runs every program in a BPF interpreter.
 *
 *   paddock-seccomp-gen OUTPUT.c
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define PDK_ARRAY_SIZE(a)    (sizeof(a) / sizeof((a)[0]))
#define PDK_SECCOMP_VARIANTS 8

typedef struct pdk_seccomp_options {
    bool nested_userns;
    bool notify_exec;
    bool notify_connect;
} pdk_seccomp_options;

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define NAMESPACE_CLONE_FLAGS                                                                      \
    (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET |     \
     CLONE_NEWCGROUP | CLONE_NEWTIME)

/* Always denied with EPERM. */
static const char *const denied_always[] = {
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "syslog",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "quotactl",
    "quotactl_fd",
    "open_by_handle_at",
    "lookup_dcookie",
    "uselib",
    "nfsservctl",
    "vhangup",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    NULL,
};

/* Denied unless nested user namespaces are allowed. */
static const char *const denied_unless_nested[] = {
    "mount",    "umount2", "pivot_root", "chroot",        "move_mount", "open_tree", "fsopen",
    "fsconfig", "fsmount", "fspick",     "mount_setattr", "setns",      "unshare",   NULL,
};

/* Syscalls newer than libseccomp may know, by their (arch-independent) numbers. */
static const struct {
    const char *name;
    int nr;
} newer_syscalls[] = {
    {"open_tree_attr", 467},
};

/* The architecture the program being built is for (one architecture a program). */
static uint32_t target_arch;

/* Add a rule for the syscall called name; one this architecture does not have is skipped.
 * Rules are given with the build machine's (native) numbers, which libseccomp translates by
 * name into the target's. raw (when >= 0) is for a syscall libseccomp does not know yet:
 * then the rule can only be added for the native architecture (elsewhere the capability
 * checks of the kernel, with every capability dropped, still refuse it). */
static int rule_raw(scmp_filter_ctx ctx, uint32_t action, const char *name, int raw, unsigned count,
                    const struct scmp_arg_cmp *cmp)
{
    int native = seccomp_syscall_resolve_name(name);
    int target = seccomp_syscall_resolve_name_arch(target_arch, name);
    if (native >= 0 && target >= 0)
        return seccomp_rule_add_array(ctx, action, native, count, cmp);
    if (native == __NR_SCMP_ERROR && raw >= 0 && target_arch == seccomp_arch_native())
        return seccomp_rule_add_exact_array(ctx, action, raw, count, cmp);
    return 0;
}

static int rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned count,
                const struct scmp_arg_cmp *cmp)
{
    return rule_raw(ctx, action, name, -1, count, cmp);
}

static int deny_name(scmp_filter_ctx ctx, const char *name)
{
    return rule(ctx, SCMP_ACT_ERRNO(EPERM), name, 0, NULL);
}

static int build_rules(scmp_filter_ctx ctx, const pdk_seccomp_options *options, const char **what)
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
            if ((r = rule_raw(ctx, SCMP_ACT_ERRNO(EPERM), newer_syscalls[i].name,
                              newer_syscalls[i].nr, 0, NULL)) < 0) {
                *what = newer_syscalls[i].name;
                return r;
            }
        }
        /* clone with a namespace flag: in the prefix (see below). clone3 passes its flags
         * in memory, out of the filter's reach: ENOSYS makes libc fall back to clone. */
        if ((r = rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL)) < 0) {
            *what = "clone3";
            return r;
        }
    }

    /* personality: in the prefix (see below). */

    /* ioctl TIOCSTI / TIOCLINUX: the kernel truncates the command to 32 bits, so compare
     * only the low half. */
    static const unsigned long bad_ioctls[] = {TIOCSTI, TIOCLINUX};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(bad_ioctls); i++) {
        struct scmp_arg_cmp c = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, bad_ioctls[i]);
        if ((r = rule(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, &c)) < 0) {
            *what = "ioctl";
            return r;
        }
    }

    /* socket: AF_UNIX (1), AF_INET (2), AF_INET6 (10) only; with nested user namespaces
     * also AF_NETLINK (16) of protocol NETLINK_ROUTE (0), which a nested sandbox needs to
     * bring up the loopback of its own network namespace (bubblewrap does). */
    {
        struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_GE, AF_INET6 + 1);
        if (options->nested_userns)
            c = SCMP_A0(SCMP_CMP_GE, AF_NETLINK + 1);
        if ((r = rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1, &c)) < 0) {
            *what = "socket";
            return r;
        }
        if (options->nested_userns) {
            for (int family = AF_INET6 + 1; family < AF_NETLINK; family++) {
                struct scmp_arg_cmp e = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)family);
                if ((r = rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1, &e)) < 0) {
                    *what = "socket";
                    return r;
                }
            }
            struct scmp_arg_cmp netlink[2] = {SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
                                              SCMP_A2(SCMP_CMP_NE, NETLINK_ROUTE)};
            if ((r = rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 2, netlink)) < 0) {
                *what = "socket";
                return r;
            }
        }
        static const int others[] = {0, 3, 4, 5, 6, 7, 8, 9};
        for (size_t i = 0; i < PDK_ARRAY_SIZE(others); i++) {
            struct scmp_arg_cmp e = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)others[i]);
            if ((r = rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1, &e)) < 0) {
                *what = "socket";
                return r;
            }
        }
    }
    return 0;
}

/* The rules libseccomp cannot say in few instructions, written by hand as a prefix of its
 * program. libseccomp compares an argument once per rule, so "personality only with 0 or
 * 0xffffffff" took 62 bit-by-bit rules, and "clone without any namespace flag" eight: more
 * than half of the program, and the kernel's cost to load a filter (conversion, JIT, the
 * action cache) grows with its length. The prefix judges those two calls and hands every
 * other one, and every other architecture, to libseccomp's program, which follows it (BPF
 * jumps are relative, so the two concatenate as they are).
 *
 *   personality(x): allowed when the low 32 bits (what the kernel reads) are 0 (the
 *                   default persona) or 0xffffffff (the query); else EPERM.
 *   clone(flags):   EPERM when flags has a namespace flag (unless nested user namespaces
 *                   are allowed); flags are the first argument on x86_64 and aarch64. */
#define ARG0_LOW (offsetof(struct seccomp_data, args[0]))

static size_t prefix_program(struct sock_filter *out, uint32_t arch, bool nested_userns,
                             bool notify_exec, bool notify_connect)
{
    int personality = seccomp_syscall_resolve_name_arch(arch, "personality");
    int clone = seccomp_syscall_resolve_name_arch(arch, "clone");
    int execve = seccomp_syscall_resolve_name_arch(arch, "execve");
    int execveat = seccomp_syscall_resolve_name_arch(arch, "execveat");
    int connect = seccomp_syscall_resolve_name_arch(arch, "connect");
    int sendto = seccomp_syscall_resolve_name_arch(arch, "sendto");
    int sendmsg = seccomp_syscall_resolve_name_arch(arch, "sendmsg");
    int sendmmsg = seccomp_syscall_resolve_name_arch(arch, "sendmmsg");
    if (personality < 0 || clone < 0 || execve < 0 || execveat < 0 || connect < 0 || sendto < 0 ||
        sendmsg < 0 || sendmmsg < 0)
        return 0;
    const uint32_t eperm = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
    /* Indices: 0-3 dispatch, 4-6 personality, 7-9 clone, 10 allow, 11 eperm; 12 is the
     * first instruction of libseccomp's program. */
    struct sock_filter p[] = {
        /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, 12 - 2),
        /* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)personality, 0, 7 - 4),
        /* 4 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LOW),
        /* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 10 - 6, 0),
        /* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, 10 - 7, 11 - 7),
        /* 7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)clone, 0, 12 - 8),
        /* 8 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LOW),
        /* 9 */
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, nested_userns ? 0 : NAMESPACE_CLONE_FLAGS, 11 - 10,
                 10 - 10),
        /* 10 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* 11 */ BPF_STMT(BPF_RET | BPF_K, eperm),
    };
    if (!notify_exec) {
        memcpy(out, p, sizeof(p));
        return PDK_ARRAY_SIZE(p);
    }
    /* To the listener, after "ld nr": execve and execveat; with notify_connect also
     * connect, and sendto, sendmsg and sendmmsg when their flags have MSG_FASTOPEN (a TCP
     * connection opened without connect; their flags are the fourth, third and fourth
     * argument, an int: the low half). Without notify_connect the same code with a number
     * no syscall has in their places. The dispatch's jumps over it are stretched by its
     * length. */
    uint32_t none = 0xffffffffu;
    uint32_t c_nr = notify_connect ? (uint32_t)connect : none;
    uint32_t st_nr = notify_connect ? (uint32_t)sendto : none;
    uint32_t sm_nr = notify_connect ? (uint32_t)sendmsg : none;
    uint32_t smm_nr = notify_connect ? (uint32_t)sendmmsg : none;
#define ARG_LOW(i) (offsetof(struct seccomp_data, args[i]))
    /* The block: 0-5 by number, 6-7 arg 3, 8 arg 2, 9 MSG_FASTOPEN?, 10-11 reload nr and
     * go on, 12 notify; 13 is the dispatch's next instruction. */
    const struct sock_filter block[] = {
        /* 0 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)execve, 12 - 1, 0),
        /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)execveat, 12 - 2, 0),
        /* 2 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, c_nr, 12 - 3, 0),
        /* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, st_nr, 6 - 4, 0),
        /* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, smm_nr, 6 - 5, 0),
        /* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, sm_nr, 8 - 6, 13 - 6),
        /* 6 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(3)),
        /* 7 */ BPF_JUMP(BPF_JMP | BPF_JA, 9 - 8, 0, 0),
        /* 8 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(2)),
        /* 9 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MSG_FASTOPEN, 12 - 10, 0),
        /* 10 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* 11 */ BPF_JUMP(BPF_JMP | BPF_JA, 13 - 12, 0, 0),
        /* 12 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
    };
#undef ARG_LOW
    size_t extra = PDK_ARRAY_SIZE(block), k = 0;
    struct sock_filter n[PDK_ARRAY_SIZE(p) + PDK_ARRAY_SIZE(block)];
    for (size_t i = 0; i < PDK_ARRAY_SIZE(p); i++) {
        struct sock_filter ins = p[i];
        if (i == 1)
            ins.jf += extra; /* arch mismatch: to libseccomp's program */
        n[k++] = ins;
        if (i == 2)
            for (size_t j = 0; j < extra; j++)
                n[k++] = block[j];
    }
    memcpy(out, n, sizeof(n));
    return k;
}

static const struct {
    const char *name; /* as in the generated names */
    const char *cpp;  /* the compiler's macro for it */
    uint32_t token;   /* libseccomp's */
} arches[] = {
    {"x86_64", "__x86_64__", SCMP_ARCH_X86_64},
    {"aarch64", "__aarch64__", SCMP_ARCH_AARCH64},
};

static int generate(FILE *out, size_t arch, unsigned variant)
{
    pdk_seccomp_options options = {.nested_userns = (variant & 1) != 0,
                                   .notify_exec = (variant & 6) != 0,
                                   .notify_connect = (variant & 4) != 0};
    target_arch = arches[arch].token;
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return -ENOMEM;
    const char *what = "setup";
    int r = 0;
    if (arches[arch].token != seccomp_arch_native()) {
        r = seccomp_arch_add(ctx, arches[arch].token);
        if (r == 0)
            r = seccomp_arch_remove(ctx, SCMP_ARCH_NATIVE);
    }
    if (r == 0)
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (r == 0)
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
    if (r == 0)
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (r == 0)
        r = build_rules(ctx, &options, &what);
    if (r < 0) {
        fprintf(stderr, "paddock-seccomp-gen: %s: rule for %s: %s\n", arches[arch].name, what,
                strerror(-r));
        seccomp_release(ctx);
        return r;
    }
    int mfd = memfd_create("paddock-seccomp", MFD_CLOEXEC);
    if (mfd < 0 || (r = seccomp_export_bpf(ctx, mfd)) < 0) {
        seccomp_release(ctx);
        return mfd < 0 ? -errno : r;
    }
    seccomp_release(ctx);
    struct stat st;
    if (fstat(mfd, &st) < 0 || st.st_size % sizeof(struct sock_filter) != 0)
        return -EINVAL;
    size_t n = (size_t)st.st_size / sizeof(struct sock_filter);
    struct sock_filter *prog = malloc((size_t)st.st_size + 32 * sizeof(struct sock_filter));
    if (!prog)
        return -ENOMEM;
    size_t pre = prefix_program(prog, arches[arch].token, options.nested_userns,
                                options.notify_exec, options.notify_connect);
    if (pre == 0 || pread(mfd, prog + pre, (size_t)st.st_size, 0) != st.st_size)
        return -EIO;
    n += pre;
    close(mfd);
    fprintf(out, "static const struct sock_filter program_%s_%u[%zu] = {\n", arches[arch].name,
            variant, n);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "    {0x%04x, %u, %u, 0x%08x},\n", prog[i].code, prog[i].jt, prog[i].jf,
                prog[i].k);
    fprintf(out, "};\n\n");
    free(prog);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: paddock-seccomp-gen OUTPUT.c\n");
        return 2;
    }
    FILE *out = fopen(argv[1], "w");
    if (!out) {
        perror(argv[1]);
        return 1;
    }
    fprintf(out, "/* Generated by paddock-seccomp-gen from seccomp_rules.c; do not edit. */\n"
                 "#include \"seccomp_filter.h\"\n\n");
    for (size_t a = 0; a < PDK_ARRAY_SIZE(arches); a++)
        for (unsigned v = 0; v < PDK_SECCOMP_VARIANTS; v++)
            if (generate(out, a, v) < 0) {
                fclose(out);
                unlink(argv[1]);
                return 1;
            }
    /* Every architecture's programs, for the tests ... */
    fprintf(out, "const pdk_seccomp_program_set pdk__seccomp_program_sets[] = {\n");
    for (size_t a = 0; a < PDK_ARRAY_SIZE(arches); a++) {
        fprintf(out, "    {\"%s\", {", arches[a].name);
        for (unsigned v = 0; v < PDK_SECCOMP_VARIANTS; v++)
            fprintf(out,
                    "{(struct sock_filter *)program_%s_%u, PDK_ARRAY_SIZE(program_%s_%u), %s}, ",
                    arches[a].name, v, arches[a].name, v, (v & 6) ? "true" : "false");
        fprintf(out, "}},\n");
    }
    fprintf(out, "    {NULL, {{NULL, 0}}},\n};\n\n");
    /* ... and the running one's, for paddock. */
    for (size_t a = 0; a < PDK_ARRAY_SIZE(arches); a++) {
        fprintf(out, "%s defined(%s)\n", a == 0 ? "#if" : "#elif", arches[a].cpp);
        fprintf(out,
                "const pdk_seccomp_program *const pdk__seccomp_programs = "
                "pdk__seccomp_program_sets[%zu].programs;\n",
                a);
    }
    fprintf(out, "#else\n#error \"paddock's seccomp filter is built for x86_64 and aarch64\"\n"
                 "#endif\n");
    if (fclose(out) != 0) {
        unlink(argv[1]);
        return 1;
    }
    return 0;
}
