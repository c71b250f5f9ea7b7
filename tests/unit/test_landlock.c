/* test_landlock.c: the sandbox's Landlock ruleset (landlock.c). The rights handled follow
 * the ABI (nothing a kernel would reject as unknown: refer from 2, truncate from 3, device
 * ioctls from 5), the attribute's size too (TCP rules from ABI 4 when asked for, scoping
 * from 6); a spec without filesystem rights handles nothing below ABI 6 without TCP rules;
 * the ABI check refuses, names what is missing and the fix, or warns when degraded. Where
 * Landlock is here, a ruleset built from a spec is enforced in a child: writes only beneath
 * the write paths, reads beneath the read paths, a missing path skipped, a TCP connect only
 * to the ports allowed. Includes landlock.c to reach its statics. */
#include "../../src/sandbox/landlock.c"

#include "fsutil.h"
#include "must_work.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "child.h"

static void t_rights_follow_the_abi(void **state)
{
    (void)state;
    uint64_t last = 0;
    for (int abi = 1; abi <= 7; abi++) {
        uint64_t r = fs_rights_for(abi);
        assert_true((r & last) == last); /* a newer ABI never handles less */
        last = r;
        assert_true(r & LL_FS_EXECUTE);
        assert_true(r & LL_FS_MAKE_SYM);
        assert_int_equal(!!(r & LL_FS_REFER), abi >= 2);
        assert_int_equal(!!(r & LL_FS_TRUNCATE), abi >= 3);
        assert_int_equal(!!(r & LL_FS_IOCTL_DEV), abi >= 5);
        assert_int_equal(r & ~((LL_FS_IOCTL_DEV << 1) - 1), 0);
    }
}

static void t_ruleset_attr(void **state)
{
    (void)state;
    struct ll_ruleset_attr attr;
    size_t size;
    uint16_t ports[] = {443};
    pdk_landlock_spec spec = {
        .abi = 3, .restrict_tcp_connect = true, .tcp_connect = ports, .tcp_connect_count = 1};
    /* TCP rules need ABI 4: the attribute stays the ABI 1 size */
    ruleset_attr_for(&spec, &attr, &size);
    assert_int_equal(size, 8);
    assert_int_equal(attr.handled_access_net, 0);
    spec.abi = 4;
    ruleset_attr_for(&spec, &attr, &size);
    assert_int_equal(size, 16);
    assert_int_equal(attr.handled_access_net, LL_NET_CONNECT_TCP);
    spec.restrict_tcp_bind = true;
    ruleset_attr_for(&spec, &attr, &size);
    assert_int_equal(attr.handled_access_net, LL_NET_CONNECT_TCP | LL_NET_BIND_TCP);
    /* no TCP rules asked for on ABI 4: none handled */
    pdk_landlock_spec plain = {.abi = 4};
    ruleset_attr_for(&plain, &attr, &size);
    assert_int_equal(size, 8);
    assert_int_equal(attr.handled_access_net, 0);
    assert_int_equal(attr.handled_access_fs, fs_rights_for(4));
    /* scoping from ABI 6 */
    plain.abi = 6;
    ruleset_attr_for(&plain, &attr, &size);
    assert_int_equal(size, 24);
    assert_int_equal(attr.scoped, LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL);
    /* without filesystem rights: what is left */
    pdk_landlock_spec nofs = {.abi = 5, .without_filesystem = true};
    ruleset_attr_for(&nofs, &attr, &size);
    assert_int_equal(attr.handled_access_fs, 0);
    assert_false(pdk_landlock_spec_restricts(&nofs));
    nofs.restrict_tcp_connect = true;
    assert_true(pdk_landlock_spec_restricts(&nofs));
    nofs.restrict_tcp_connect = false;
    nofs.abi = 6;
    assert_true(pdk_landlock_spec_restricts(&nofs));
    pdk_landlock_spec none = {.abi = 0, .without_filesystem = true};
    assert_false(pdk_landlock_spec_restricts(&none));
}

static void t_check_abi(void **state)
{
    (void)state;
    pdk_error err = {0};
    assert_int_equal(pdk_landlock_check_abi(4, 4, false, &err), 0);
    assert_int_equal(pdk_landlock_check_abi(6, 1, false, &err), 0);
    assert_int_equal(pdk_landlock_check_abi(2, 4, false, &err), -1);
    assert_non_null(strstr(err.message, "landlock ABI 2 < required 4"));
    assert_non_null(strstr(err.message, pdk_landlock_missing(2)));
    assert_non_null(strstr(err.message, "--allow-degraded"));
    /* degraded: allowed (with a warning on stderr) */
    assert_int_equal(pdk_landlock_check_abi(0, 1, true, &err), 0);
    /* each ABI's list of what is missing names the next one, and is its own */
    for (int abi = 0; abi < 7; abi++) {
        assert_string_not_equal(pdk_landlock_missing(abi), pdk_landlock_missing(abi + 1));
        if (abi >= 1) {
            char next[8];
            snprintf(next, sizeof(next), "%d", abi + 1);
            assert_non_null(strstr(pdk_landlock_missing(abi), next));
        }
    }
    assert_string_equal(pdk_landlock_missing(99), "nothing");
}

typedef struct dirs {
    char root[64];
    char ro[96], rw[96], missing[96];
} dirs;

static int enforce(const pdk_landlock_spec *spec)
{
    const char *what = NULL;
    int fd = pdk_landlock_build(spec, &what);
    if (fd < 0) {
        fprintf(stderr, "build: %s: %s\n", what, strerror(errno));
        return -1;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || pdk_landlock_restrict(fd) < 0)
        return -1;
    close(fd);
    return 0;
}

/* In the child: 0 when every expectation holds, else the number of the one that failed. */
static int fs_child(const dirs *d, int abi)
{
    char *read_paths[] = {(char *)d->ro, (char *)d->missing, "/proc", NULL};
    char *write_paths[] = {(char *)d->rw, NULL};
    pdk_landlock_spec spec = {.abi = abi, .read_paths = read_paths, .write_paths = write_paths};
    if (enforce(&spec) < 0)
        return 10;
    char p[160];
    snprintf(p, sizeof(p), "%s/new", d->rw);
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return 1; /* writable beneath rw */
    close(fd);
    snprintf(p, sizeof(p), "%s/new", d->ro);
    if (open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) >= 0 || errno != EACCES)
        return 2; /* not beneath ro */
    snprintf(p, sizeof(p), "%s/file", d->ro);
    fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 3; /* readable beneath ro */
    close(fd);
    if (open(p, O_WRONLY | O_CLOEXEC) >= 0 || errno != EACCES)
        return 4;
    snprintf(p, sizeof(p), "%s/outside", d->root);
    if (open(p, O_RDONLY | O_CLOEXEC) >= 0 || errno != EACCES)
        return 5; /* nothing granted beside them */
    return 0;
}

static int run_in_child(int (*fn)(const dirs *, int), const dirs *d, int abi)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(fn(d, abi));
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

static void t_enforced(void **state)
{
    (void)state;
    int abi = pdk_landlock_abi();
    if (abi < 1)
        skip_or_fail("no Landlock here (ABI 0)");
    dirs d;
    snprintf(d.root, sizeof(d.root), "/tmp/paddock-landlock-test.XXXXXX");
    assert_non_null(mkdtemp(d.root));
    snprintf(d.ro, sizeof(d.ro), "%s/ro", d.root);
    snprintf(d.rw, sizeof(d.rw), "%s/rw", d.root);
    snprintf(d.missing, sizeof(d.missing), "%s/missing", d.root);
    assert_int_equal(mkdir(d.ro, 0755), 0);
    assert_int_equal(mkdir(d.rw, 0755), 0);
    char p[160];
    snprintf(p, sizeof(p), "%s/file", d.ro);
    close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    snprintf(p, sizeof(p), "%s/outside", d.root);
    close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    /* the oldest ABI's rights and the kernel's own: both enforce the same */
    assert_int_equal(run_in_child(fs_child, &d, 1), 0);
    assert_int_equal(run_in_child(fs_child, &d, abi), 0);
    pdk_rm_rf_at(AT_FDCWD, d.root);
}

static int port_of(int fd)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    return ntohs(a.sin_port);
}

static int listener(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0)
        return -1;
    return fd;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int r = connect(fd, (struct sockaddr *)&a, sizeof(a));
    int e = errno;
    close(fd);
    errno = e;
    return r;
}

static void t_tcp_connect(void **state)
{
    (void)state;
    int abi = pdk_landlock_abi();
    if (abi < 4)
        skip_or_fail("Landlock ABI < 4: no TCP rules here");
    int allowed = listener(), other = listener();
    assert_true(allowed >= 0 && other >= 0);
    uint16_t ports[] = {(uint16_t)port_of(allowed)};
    pid_t pid = fork();
    if (pid == 0) {
        pdk_landlock_spec spec = {.abi = abi,
                                  .without_filesystem = true,
                                  .restrict_tcp_connect = true,
                                  .tcp_connect = ports,
                                  .tcp_connect_count = 1};
        if (enforce(&spec) < 0)
            _exit(10);
        if (connect_to(ports[0]) < 0)
            _exit(1);
        if (connect_to(port_of(other)) == 0 || errno != EACCES)
            _exit(2);
        _exit(0);
    }
    assert_child_succeeded(pid);
    close(allowed);
    close(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_rights_follow_the_abi),
        cmocka_unit_test(t_ruleset_attr),
        cmocka_unit_test(t_check_abi),
        cmocka_unit_test(t_enforced),
        cmocka_unit_test(t_tcp_connect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
