/* test_namespaces.c: namespaces and id maps (namespaces.c). Root's subordinate range is the
 * first of at least 65536 ids given to "root" (or "0") in /etc/subuid-style files, never a
 * short one, a malformed line or 0; without one the built-in base; a regular user maps only
 * itself. The probe says whether this process can make a sandbox's namespaces and leaves
 * it as it was; a network namespace made in a child has loopback up only when asked. Includes
 * namespaces.c to reach its statics. */
#include "../../src/sandbox/namespaces.c"

#include "must_work.h"

#include <net/if.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "child.h"

static uint32_t base_of(const char *text)
{
    char path[] = "/tmp/paddock-subid-test.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(pdk_write_all(fd, text, strlen(text)), 0);
    close(fd);
    uint32_t base = subid_base(path);
    unlink(path);
    return base;
}

static void t_subid(void **state)
{
    (void)state;
    assert_int_equal(base_of("root:100000:65536\n"), 100000);
    assert_int_equal(base_of("0:200000:70000\n"), 200000);
    /* another user's, a short range, a zero start, junk: passed over */
    assert_int_equal(base_of("alice:100000:65536\nroot:300000:1000\nroot:0:65536\njunk\n"
                             "rootx:400000:65536\nroot:500000:65536\n"),
                     500000);
    assert_int_equal(base_of("alice:100000:65536\n"), 0);
    assert_int_equal(base_of(""), 0);
    assert_int_equal(base_of("root:4294901760:65536\n"), 0); /* would wrap */
    assert_int_equal(subid_base("/nonexistent/subuid"), 0);
}

static void t_idmap_init(void **state)
{
    (void)state;
    pdk_idmap m;
    pdk_idmap_init(&m);
    if (geteuid() == 0) {
        assert_true(m.privileged);
        assert_int_equal(m.count, PDK_HOST_ID_COUNT);
        assert_true(m.host_uid_base > 0);
        assert_true(m.inside_uid < m.count);
    } else {
        assert_false(m.privileged);
        assert_int_equal(m.count, 1);
        assert_int_equal(m.host_uid_base, getuid());
        assert_int_equal(m.inside_uid, getuid());
    }
}

static int loopback_flags(void)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, "lo", 3);
    int r = ioctl(s, SIOCGIFFLAGS, &ifr);
    close(s);
    return r < 0 ? -1 : ifr.ifr_flags;
}

static int netns_child(bool loopback)
{
    if (geteuid() != 0 && unshare(CLONE_NEWUSER) < 0)
        return 20;
    struct stat before, after;
    stat("/proc/thread-self/ns/net", &before);
    const char *what = NULL;
    int fd = pdk_netns_create(loopback, false, &what);
    if (fd < 0)
        return 21;
    if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC))
        return 1;
    stat("/proc/thread-self/ns/net", &after);
    if (before.st_ino == after.st_ino)
        return 2; /* a new one */
    int flags = loopback_flags();
    if (flags < 0 || !!(flags & IFF_UP) != loopback)
        return 3;
    return 0;
}

static void t_probe_and_netns(void **state)
{
    (void)state;
    struct stat before, after;
    assert_int_equal(stat("/proc/self/ns/user", &before), 0);
    int e = pdk_namespaces_probe();
    assert_int_equal(stat("/proc/self/ns/user", &after), 0);
    assert_true(before.st_ino == after.st_ino); /* the caller is where it was */
    if (e != 0)
        skip_or_fail("the sandbox's namespaces cannot be made here");
    for (int loopback = 0; loopback < 2; loopback++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(netns_child(loopback));
        assert_child_succeeded(pid);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_subid),
        cmocka_unit_test(t_idmap_init),
        cmocka_unit_test(t_probe_and_netns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
