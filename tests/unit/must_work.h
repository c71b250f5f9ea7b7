/* must_work.h: a unit test that cannot run here. Like lib.sh's skip for the integration
 * tests: under PADDOCK_MUST_WORK=1 (CI, .ci/run) a test skipped for a missing kernel
 * feature or for not being root fails instead, so that CI never passes by skipping.
 * Include after <cmocka.h>.
 */
#ifndef PADDOCK_TEST_MUST_WORK_H
#define PADDOCK_TEST_MUST_WORK_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static inline bool must_work(void)
{
    const char *v = getenv("PADDOCK_MUST_WORK");
    return v && strcmp(v, "1") == 0;
}

/* Skip the running test because of why (a missing kernel feature, not root), or fail it
 * under PADDOCK_MUST_WORK=1. Does not return. */
#define skip_or_fail(why)                                                                          \
    do {                                                                                           \
        if (must_work())                                                                           \
            fail_msg("PADDOCK_MUST_WORK=1 but: %s", (why));                                        \
        print_message("# %s\n", (why));                                                            \
        skip();                                                                                    \
    } while (0)

#endif
