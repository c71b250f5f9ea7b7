/* child.h: what the unit tests that run a step in a child process share. Include after
 * <cmocka.h>. */
#ifndef PADDOCK_TEST_CHILD_H
#define PADDOCK_TEST_CHILD_H

#include <sys/types.h>
#include <sys/wait.h>

/* Wait for the child pid and fail the running test unless it exited with status 0. */
static inline void assert_child_succeeded(pid_t pid)
{
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* Run child() in a forked process (its return value is the exit status) and assert 0. */
static inline void assert_in_child(int (*child)(void))
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(child());
    assert_child_succeeded(pid);
}

#endif
