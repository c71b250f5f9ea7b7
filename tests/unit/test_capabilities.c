/* test_capabilities.c: every capability dropped for good (capabilities.c), in a child that
 * holds them (root, or a fresh user namespace of its own): afterwards the effective,
 * permitted, inheritable, bounding and ambient sets are empty, no_new_privs is set, the
 * securebits are locked (uid 0 regains nothing at an exec), and a privileged call fails;
 * a process that may not set securebits is told which step failed. */
#include "capabilities.h"
#include "must_work.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/securebits.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "child.h"

/* The value of a "Name:\tvalue" line of /proc/self/status, or NULL. */
static char *status_field(const char *name)
{
    char *text = NULL;
    if (pdk_read_file_at(AT_FDCWD, "/proc/self/status", &text, NULL, 0) < 0)
        return NULL;
    char *value = NULL;
    size_t n = strlen(name);
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strncmp(line, name, n) == 0 && line[n] == ':') {
            const char *v = line + n + 1;
            while (*v == '\t' || *v == ' ')
                v++;
            value = xstrdup(v);
            break;
        }
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    return value;
}

/* In the child: 0, or the number of what did not hold. */
static int drop_child(void)
{
    /* a UTS namespace of its own: the sethostname below never renames the host */
    if (unshare(geteuid() == 0 ? CLONE_NEWUTS : CLONE_NEWUSER | CLONE_NEWUTS) < 0)
        return 20;
    const char *what = NULL;
    if (pdk_caps_drop_all(&what) < 0) {
        fprintf(stderr, "%s: %s\n", what, strerror(errno));
        return 21;
    }
    const char *sets[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
    for (int i = 0; i < 5; i++) {
        char *v = status_field(sets[i]);
        bool zero = v && strspn(v, "0") == strlen(v);
        free(v);
        if (!zero)
            return 1 + i;
    }
    char *nnp = status_field("NoNewPrivs");
    bool set = nnp && strcmp(nnp, "1") == 0;
    free(nnp);
    if (!set)
        return 6;
    int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
    if (bits < 0 || !(bits & SECBIT_NOROOT_LOCKED) || !(bits & SECBIT_NOROOT) ||
        !(bits & SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED))
        return 7;
    /* nothing to raise again: a capability-needing call fails */
    if (sethostname("x", 1) == 0 || errno != EPERM)
        return 8;
    if (prctl(PR_CAPBSET_READ, 0 /* CAP_CHOWN */, 0, 0, 0) != 0)
        return 9;
    return 0;
}

static void t_dropped_for_good(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        pid_t probe = fork();
        if (probe == 0)
            _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
        int st;
        waitpid(probe, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            skip_or_fail("not root, and no user namespace to hold capabilities in");
    }
    assert_in_child(drop_child);
}

static int unprivileged_child(void)
{
    /* no capabilities and no namespace: the first step is refused, and named */
    if (geteuid() == 0 && setresuid(65534, 65534, 65534) < 0)
        return 30;
    const char *what = NULL;
    if (pdk_caps_drop_all(&what) == 0)
        return 31;
    return what && strcmp(what, "prctl(PR_SET_SECUREBITS)") == 0 && errno == EPERM ? 0 : 32;
}

static void t_refused_step_named(void **state)
{
    (void)state;
    assert_in_child(unprivileged_child);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_dropped_for_good),
        cmocka_unit_test(t_refused_step_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
