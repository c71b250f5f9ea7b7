/* test_seccomp.c: every seccomp program paddock ships (x86_64 and aarch64, both variants)
 * run in a classic-BPF interpreter against seccomp_data built from libseccomp's syscall
 * tables. So the aarch64 filter is tested on any build machine, and a rule that stops
 * matching (a wrong number, a missing variant) fails here before it reaches a sandbox. */
#include "seccomp_filter.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdint.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>

#include <cmocka.h>

#ifndef AUDIT_ARCH_AARCH64
#define AUDIT_ARCH_AARCH64 0xC00000B7u
#endif

/* A classic BPF interpreter for seccomp programs (the subset libseccomp emits, and a little
 * more). Returns the filter's action value; aborts the test on a malformed program. */
static uint32_t run_bpf(const pdk_seccomp_program *prog, const struct seccomp_data *data)
{
    uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = {0};
    const uint8_t *bytes = (const uint8_t *)data;
    for (size_t pc = 0; pc < prog->length; pc++) {
        const struct sock_filter *f = &prog->filter[pc];
        uint32_t k = f->k;
        switch (f->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            assert_true(k + 4 <= sizeof(*data) && k % 4 == 0);
            memcpy(&A, bytes + k, 4);
            break;
        case BPF_LD | BPF_IMM:
            A = k;
            break;
        case BPF_LDX | BPF_IMM:
            X = k;
            break;
        case BPF_LD | BPF_MEM:
            assert_true(k < BPF_MEMWORDS);
            A = M[k];
            break;
        case BPF_LDX | BPF_MEM:
            assert_true(k < BPF_MEMWORDS);
            X = M[k];
            break;
        case BPF_ST:
            assert_true(k < BPF_MEMWORDS);
            M[k] = A;
            break;
        case BPF_STX:
            assert_true(k < BPF_MEMWORDS);
            M[k] = X;
            break;
        case BPF_ALU | BPF_AND | BPF_K:
            A &= k;
            break;
        case BPF_ALU | BPF_OR | BPF_K:
            A |= k;
            break;
        case BPF_ALU | BPF_ADD | BPF_K:
            A += k;
            break;
        case BPF_ALU | BPF_SUB | BPF_K:
            A -= k;
            break;
        case BPF_ALU | BPF_LSH | BPF_K:
            A <<= k;
            break;
        case BPF_ALU | BPF_RSH | BPF_K:
            A >>= k;
            break;
        case BPF_MISC | BPF_TAX:
            X = A;
            break;
        case BPF_MISC | BPF_TXA:
            A = X;
            break;
        case BPF_JMP | BPF_JA:
            pc += k;
            break;
        case BPF_JMP | BPF_JEQ | BPF_K:
            pc += (A == k) ? f->jt : f->jf;
            break;
        case BPF_JMP | BPF_JGT | BPF_K:
            pc += (A > k) ? f->jt : f->jf;
            break;
        case BPF_JMP | BPF_JGE | BPF_K:
            pc += (A >= k) ? f->jt : f->jf;
            break;
        case BPF_JMP | BPF_JSET | BPF_K:
            pc += (A & k) ? f->jt : f->jf;
            break;
        case BPF_JMP | BPF_JEQ | BPF_X:
            pc += (A == X) ? f->jt : f->jf;
            break;
        case BPF_JMP | BPF_JGT | BPF_X:
            pc += (A > X) ? f->jt : f->jf;
            break;
        case BPF_JMP | BPF_JGE | BPF_X:
            pc += (A >= X) ? f->jt : f->jf;
            break;
        case BPF_RET | BPF_K:
            return k;
        case BPF_RET | BPF_A:
            return A;
        default:
            fail_msg("unknown BPF instruction 0x%04x at %zu", f->code, pc);
        }
    }
    fail_msg("the program ran off its end");
    return 0;
}

typedef struct arch_case {
    const char *name;
    uint32_t audit;
    uint32_t scmp;
} arch_case;

static const arch_case arches[] = {
    {"x86_64", AUDIT_ARCH_X86_64, SCMP_ARCH_X86_64},
    {"aarch64", AUDIT_ARCH_AARCH64, SCMP_ARCH_AARCH64},
};

static const pdk_seccomp_program *program_for(const char *arch, unsigned variant)
{
    for (const pdk_seccomp_program_set *s = pdk__seccomp_program_sets; s->arch; s++)
        if (strcmp(s->arch, arch) == 0)
            return &s->programs[variant];
    fail_msg("no seccomp programs for %s", arch);
    abort(); /* fail_msg does not return */
}

/* The action for syscall name with args on arch. */
static uint32_t verdict_args(const arch_case *a, unsigned variant, const char *name,
                             const uint64_t args[6])
{
    int nr = seccomp_syscall_resolve_name_arch(a->scmp, name);
    if (nr < 0)
        fail_msg("%s has no syscall %s", a->name, name);
    struct seccomp_data d;
    memset(&d, 0, sizeof(d));
    d.nr = nr;
    d.arch = a->audit;
    memcpy(d.args, args, sizeof(d.args));
    return run_bpf(program_for(a->name, variant), &d);
}

static uint32_t verdict(const arch_case *a, unsigned variant, const char *name, uint64_t a0,
                        uint64_t a1)
{
    return verdict_args(a, variant, name, (const uint64_t[6]){a0, a1});
}

#define ERRNO(e) (SECCOMP_RET_ERRNO | (uint32_t)(e))

static void check_denied(const arch_case *a, unsigned v, const char *name, int e)
{
    uint32_t got = verdict(a, v, name, 0, 0);
    if (got != ERRNO(e))
        fail_msg("%s variant %u: %s gives 0x%08x, want ERRNO(%d)", a->name, v, name, got, e);
}

static void check_allowed(const arch_case *a, unsigned v, const char *name, uint64_t a0,
                          uint64_t a1)
{
    uint32_t got = verdict(a, v, name, a0, a1);
    if (got != SECCOMP_RET_ALLOW)
        fail_msg("%s variant %u: %s(0x%llx, 0x%llx) gives 0x%08x, want ALLOW", a->name, v, name,
                 (unsigned long long)a0, (unsigned long long)a1, got);
}

static void test_denied_everywhere(void **state)
{
    static const char *const denied[] = {
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
        NULL,
    };
    for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++)
        for (unsigned v = 0; v < PDK_SECCOMP_VARIANTS; v++)
            for (size_t k = 0; denied[k]; k++)
                check_denied(&arches[i], v, denied[k], EPERM);
}

static void test_mounts_and_namespaces(void **state)
{
    static const char *const mountish[] = {
        "mount",   "umount2", "pivot_root",    "move_mount", "open_tree", "fsopen", "fsconfig",
        "fsmount", "fspick",  "mount_setattr", "setns",      "unshare",   NULL};
    for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++) {
        const arch_case *a = &arches[i];
        for (size_t k = 0; mountish[k]; k++) {
            check_denied(a, 0, mountish[k], EPERM);
            /* nested user namespaces allowed: the mount family is left to the kernel */
            check_allowed(a, 1, mountish[k], 0, 0);
        }
        /* clone: any namespace flag is refused, a thread or fork is not */
        check_allowed(a, 0, "clone", SIGCHLD, 0);
        check_allowed(
            a, 0, "clone",
            CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM, 0);
        static const uint64_t ns[] = {CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,   CLONE_NEWNET,
                                      CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP};
        for (size_t f = 0; f < sizeof(ns) / sizeof(ns[0]); f++) {
            assert_int_equal(verdict(a, 0, "clone", ns[f] | SIGCHLD, 0), ERRNO(EPERM));
            assert_int_equal(verdict(a, 1, "clone", ns[f] | SIGCHLD, 0), SECCOMP_RET_ALLOW);
        }
        /* clone3 hides its flags in memory: ENOSYS, so that libc falls back to clone */
        check_denied(a, 0, "clone3", ENOSYS);
        check_allowed(a, 1, "clone3", 0, 0);
    }
}

static void test_arguments(void **state)
{
    for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++) {
        const arch_case *a = &arches[i];
        for (unsigned v = 0; v < PDK_SECCOMP_VARIANTS; v++) {
            /* terminal injection, with and without garbage in the upper 32 bits */
            assert_int_equal(verdict(a, v, "ioctl", 0, TIOCSTI), ERRNO(EPERM));
            assert_int_equal(verdict(a, v, "ioctl", 0, TIOCSTI | 0xdead00000000ull), ERRNO(EPERM));
            assert_int_equal(verdict(a, v, "ioctl", 0, TIOCLINUX), ERRNO(EPERM));
            assert_int_equal(verdict(a, v, "ioctl", 0, TIOCLINUX | 0x100000000ull), ERRNO(EPERM));
            check_allowed(a, v, "ioctl", 0, TCGETS);
            check_allowed(a, v, "ioctl", 0, TIOCGWINSZ);
            /* socket families */
            check_allowed(a, v, "socket", AF_UNIX, 0);
            check_allowed(a, v, "socket", AF_INET, 0);
            check_allowed(a, v, "socket", AF_INET6, 0);
            static const uint64_t bad[] = {
                AF_UNSPEC, AF_PACKET, AF_VSOCK, AF_ALG, AF_BLUETOOTH,   3,
                9,         11,        15,       17,     0x100000002ull, 0x100000010ull};
            for (size_t f = 0; f < sizeof(bad) / sizeof(bad[0]); f++)
                assert_int_equal(verdict(a, v, "socket", bad[f], 0), ERRNO(EAFNOSUPPORT));
            /* netlink: only NETLINK_ROUTE, and only with nested user namespaces (a nested
             * sandbox brings its loopback up over rtnetlink) */
            uint32_t route = (v & 1) ? SECCOMP_RET_ALLOW : ERRNO(EAFNOSUPPORT);
            assert_int_equal(verdict_args(a, v, "socket",
                                          (const uint64_t[6]){AF_NETLINK, SOCK_RAW, NETLINK_ROUTE}),
                             route);
            assert_int_equal(
                verdict_args(a, v, "socket",
                             (const uint64_t[6]){AF_NETLINK, SOCK_DGRAM, NETLINK_ROUTE}),
                route);
            static const uint64_t netlink_others[] = {NETLINK_SOCK_DIAG, NETLINK_NETFILTER,
                                                      NETLINK_AUDIT, NETLINK_KOBJECT_UEVENT,
                                                      0x100000000ull};
            for (size_t p = 0; p < sizeof(netlink_others) / sizeof(netlink_others[0]); p++)
                assert_int_equal(
                    verdict_args(a, v, "socket",
                                 (const uint64_t[6]){AF_NETLINK, SOCK_RAW, netlink_others[p]}),
                    ERRNO(EAFNOSUPPORT));
            /* personality: the query and the default only */
            check_allowed(a, v, "personality", 0, 0);
            check_allowed(a, v, "personality", 0xffffffffu, 0);
            assert_int_equal(verdict(a, v, "personality", ADDR_NO_RANDOMIZE, 0), ERRNO(EPERM));
            assert_int_equal(verdict(a, v, "personality", READ_IMPLIES_EXEC, 0), ERRNO(EPERM));
            assert_int_equal(verdict(a, v, "personality", 0xfffffffeu, 0), ERRNO(EPERM));
            /* everyday syscalls */
            static const char *const ok[] = {
                "read", "write", "openat", "mmap", "exit_group", "wait4", "landlock_restrict_self",
                NULL};
            for (size_t k = 0; ok[k]; k++)
                check_allowed(a, v, ok[k], 0, 0);
            /* exec: to the listener in the notifying variants (bits 1, 2), else allowed;
             * connect only in those of bit 2 */
            uint32_t exec = (v & 6) ? SECCOMP_RET_USER_NOTIF : SECCOMP_RET_ALLOW;
            assert_int_equal(verdict(a, v, "execve", 0, 0), exec);
            assert_int_equal(verdict(a, v, "execveat", 0, 0), exec);
            uint32_t conn = (v & 4) ? SECCOMP_RET_USER_NOTIF : SECCOMP_RET_ALLOW;
            assert_int_equal(verdict(a, v, "connect", 0, 0), conn);
            /* a TCP connection opened by sendto/sendmsg/sendmmsg with MSG_FASTOPEN (flags:
             * their fourth, third, fourth argument), with any other flags beside it and
             * garbage in the upper half; without it they are everyday calls */
            static const uint64_t flags[] = {MSG_FASTOPEN, MSG_FASTOPEN | MSG_NOSIGNAL,
                                             MSG_FASTOPEN | 0xdead00000000ull};
            for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
                assert_int_equal(verdict_args(a, v, "sendto", (uint64_t[6]){3, 0, 10, flags[f]}),
                                 conn);
                assert_int_equal(verdict_args(a, v, "sendmsg", (uint64_t[6]){3, 0, flags[f]}),
                                 conn);
                assert_int_equal(verdict_args(a, v, "sendmmsg", (uint64_t[6]){3, 0, 1, flags[f]}),
                                 conn);
            }
            static const uint64_t plain[] = {0, MSG_NOSIGNAL, MSG_DONTWAIT | MSG_MORE};
            for (size_t f = 0; f < sizeof(plain) / sizeof(plain[0]); f++) {
                assert_int_equal(verdict_args(a, v, "sendto", (uint64_t[6]){3, 0, 10, plain[f]}),
                                 SECCOMP_RET_ALLOW);
                assert_int_equal(verdict_args(a, v, "sendmsg", (uint64_t[6]){3, 0, plain[f]}),
                                 SECCOMP_RET_ALLOW);
                assert_int_equal(verdict_args(a, v, "sendmmsg", (uint64_t[6]){3, 0, 1, plain[f]}),
                                 SECCOMP_RET_ALLOW);
            }
            /* MSG_FASTOPEN in another argument than the flags is nothing */
            assert_int_equal(verdict_args(a, v, "sendto", (uint64_t[6]){3, 0, MSG_FASTOPEN, 0}),
                             SECCOMP_RET_ALLOW);
            assert_int_equal(verdict_args(a, v, "sendmsg", (uint64_t[6]){3, 0, 0, MSG_FASTOPEN}),
                             SECCOMP_RET_ALLOW);
            /* after the check the rest of the program still sees the syscall: recvfrom,
             * read and a clone with a namespace flag judged as before */
            check_allowed(a, v, "recvfrom", 0, 0);
            assert_int_equal(verdict(a, v, "clone", CLONE_NEWUSER | SIGCHLD, 0),
                             (v & 1) ? SECCOMP_RET_ALLOW : ERRNO(EPERM));
            check_denied(a, v, "ptrace", EPERM);
        }
    }
}

static void test_foreign_architectures_are_killed(void **state)
{
    for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++) {
        struct seccomp_data d;
        memset(&d, 0, sizeof(d));
        d.arch = arches[i].audit == AUDIT_ARCH_X86_64 ? AUDIT_ARCH_I386 : AUDIT_ARCH_ARM;
        d.nr = 3;
        uint32_t got = run_bpf(program_for(arches[i].name, 0), &d);
        assert_int_equal(got & SECCOMP_RET_ACTION_FULL, SECCOMP_RET_KILL_PROCESS);
    }
    /* x32 syscalls (x86_64's arch with the x32 bit) are killed too */
    struct seccomp_data d;
    memset(&d, 0, sizeof(d));
    d.arch = AUDIT_ARCH_X86_64;
    d.nr = 0x40000000 | 0; /* x32 read */
    assert_int_equal(run_bpf(program_for("x86_64", 0), &d) & SECCOMP_RET_ACTION_FULL,
                     SECCOMP_RET_KILL_PROCESS);
}

static void test_running_arch_program(void **state)
{
    pdk_seccomp_program prog;
    pdk_seccomp_options opts = {.nested_userns = false};
    pdk_error err = {0};
    assert_int_equal(pdk_seccomp_build(&opts, &prog, &err), 0);
#if defined(__x86_64__)
    assert_ptr_equal(prog.filter, program_for("x86_64", 0)->filter);
#elif defined(__aarch64__)
    assert_ptr_equal(prog.filter, program_for("aarch64", 0)->filter);
#endif
    opts.nested_userns = true;
    assert_int_equal(pdk_seccomp_build(&opts, &prog, &err), 0);
#if defined(__x86_64__)
    assert_ptr_equal(prog.filter, program_for("x86_64", 1)->filter);
#elif defined(__aarch64__)
    assert_ptr_equal(prog.filter, program_for("aarch64", 1)->filter);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_denied_everywhere),
        cmocka_unit_test(test_mounts_and_namespaces),
        cmocka_unit_test(test_arguments),
        cmocka_unit_test(test_foreign_architectures_are_killed),
        cmocka_unit_test(test_running_arch_program),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
