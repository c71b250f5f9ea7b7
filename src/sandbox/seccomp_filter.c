/* seccomp_filter.c: see seccomp_filter.h. The programs themselves are compiled at build
 * time from seccomp_rules.c into seccomp_programs.c. */
#include "seccomp_filter.h"

#include "syscalls.h"
#include "util.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int pdk_seccomp_build(const pdk_seccomp_options *options, pdk_seccomp_program *out, pdk_error *err)
{
    unsigned variant = (options->nested_userns ? 1 : 0) | (options->notify_exec ? 2 : 0) |
                       (options->notify_exec && options->notify_connect ? 4 : 0);
    if (variant >= PDK_SECCOMP_VARIANTS || pdk__seccomp_programs[variant].length == 0)
        return pdk_error_set(err, EINVAL, "no seccomp program for variant %u", variant);
    *out = pdk__seccomp_programs[variant];
    return 0;
}

int pdk_seccomp_install(const pdk_seccomp_program *program)
{
    struct sock_fprog prog = {.len = program->length, .filter = program->filter};
    return pdk_sys_seccomp(SECCOMP_SET_MODE_FILTER,
                           program->notify ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0, &prog);
}

void pdk_seccomp_program_free(pdk_seccomp_program *program)
{
    /* The programs are static. */
    program->filter = NULL;
    program->length = 0;
}

static int probe_child(void *arg)
{
    (void)arg;
    pdk_seccomp_program prog;
    pdk_seccomp_options opts = {0};
    if (pdk_seccomp_build(&opts, &prog, NULL) < 0)
        return EINVAL;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return errno;
    if (pdk_seccomp_install(&prog) < 0)
        return errno;
    /* The filter must answer: ptrace is denied with EPERM. */
    if (pdk_sys_ptrace(0x4206 /* PTRACE_SEIZE */, getppid(), NULL, NULL) == 0 || errno != EPERM)
        return ENOTSUP;
    return 0;
}

int pdk_seccomp_probe(void)
{
    return pdk_errno_in_child(probe_child, NULL);
}
