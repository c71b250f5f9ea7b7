/* seccomp_filter.c: see seccomp_filter.h. The programs themselves are compiled at build
 * time from seccomp_rules.c into seccomp_programs.c. */
#include "seccomp_filter.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <string.h>
#include <sys/syscall.h>
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
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                        program->notify ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0, &prog);
}

void pdk_seccomp_program_free(pdk_seccomp_program *program)
{
    /* The programs are static. */
    program->filter = NULL;
    program->length = 0;
}
