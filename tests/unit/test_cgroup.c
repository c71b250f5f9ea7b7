/* test_cgroup.c: cgroup limits (cgroup.c). Its readings of /proc/self/mountinfo,
 * /proc/self/cgroup and cgroup.subtree_control: the right hierarchy's mount point for each
 * controller (a controller's name is a whole word of the options, "cpu" is not "cpuacct" or
 * "cpuset"), the process's own path in it, the v2 line apart; and, where a cgroup is usable
 * here, a real one made with the limits written, a process attached, and removed again.
 * Includes cgroup.c to reach its statics. */
#include "../../src/sandbox/cgroup.c"

#include "must_work.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>

#include <cmocka.h>

static const char mountinfo[] =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "25 22 0:22 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755\n"
    "26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
    "27 25 0:24 / /sys/fs/cgroup/cpuset rw shared:11 - cgroup cgroup rw,cpuset\n"
    "28 25 0:25 / /sys/fs/cgroup/cpu,cpuacct rw shared:12 - cgroup cgroup rw,cpu,cpuacct\n"
    "29 25 0:26 / /sys/fs/cgroup/memory rw shared:13 - cgroup cgroup rw,memory\n"
    "30 25 0:27 / /sys/fs/cgroup/pids rw shared:14 - cgroup cgroup rw,pids\n"
    "31 22 0:28 / /mnt/odd rw shared:15 - cgroup cgroup rw,name=systemd\n"
    "torn line without the separator\n"
    "32 22 0:29 / /mnt/short rw - cgroup\n";

static void t_mount_points(void **state)
{
    (void)state;
    _cleanup_free_ char *v2 = mount_point_in(mountinfo, NULL);
    assert_string_equal(v2, "/sys/fs/cgroup/unified");
    _cleanup_free_ char *mem = mount_point_in(mountinfo, "memory");
    assert_string_equal(mem, "/sys/fs/cgroup/memory");
    _cleanup_free_ char *pids = mount_point_in(mountinfo, "pids");
    assert_string_equal(pids, "/sys/fs/cgroup/pids");
    /* cpu is in "cpu,cpuacct", not in "cpuset" (listed first) */
    _cleanup_free_ char *cpu = mount_point_in(mountinfo, "cpu");
    assert_string_equal(cpu, "/sys/fs/cgroup/cpu,cpuacct");
    assert_null(mount_point_in(mountinfo, "blkio"));
    assert_null(mount_point_in(mountinfo, "systemd"));
    assert_null(mount_point_in("", "memory"));
    /* only v1 mounts: no v2 */
    assert_null(mount_point_in("29 25 0:26 / /m rw - cgroup cgroup rw,memory\n", NULL));
    /* the last line without its newline still counts */
    _cleanup_free_ char *last = mount_point_in("1 2 0:1 / /x rw - cgroup2 cgroup2 rw", NULL);
    assert_string_equal(last, "/x");
}

static const char proc_cgroup[] = "12:pids:/user.slice/u1\n"
                                  "11:cpu,cpuacct:/user.slice\n"
                                  "10:cpuset:/\n"
                                  "9:memory:/user.slice/u1/session-2.scope\n"
                                  "1:name=systemd:/user.slice/u1/session-2.scope\n"
                                  "garbage\n"
                                  "0::/user.slice/u1/session-2.scope";

static void t_own_paths(void **state)
{
    (void)state;
    _cleanup_free_ char *v2 = own_path_in(proc_cgroup, NULL);
    assert_string_equal(v2, "/user.slice/u1/session-2.scope");
    _cleanup_free_ char *mem = own_path_in(proc_cgroup, "memory");
    assert_string_equal(mem, "/user.slice/u1/session-2.scope");
    _cleanup_free_ char *cpu = own_path_in(proc_cgroup, "cpu");
    assert_string_equal(cpu, "/user.slice");
    _cleanup_free_ char *pids = own_path_in(proc_cgroup, "pids");
    assert_string_equal(pids, "/user.slice/u1");
    assert_null(own_path_in(proc_cgroup, "blkio"));
    /* a v1-only system has no "0::" line */
    assert_null(own_path_in("9:memory:/a\n", NULL));
    /* a path with ':' in it is kept whole */
    _cleanup_free_ char *colon = own_path_in("0::/a:b\n", NULL);
    assert_string_equal(colon, "/a:b");
}

static void t_subtree_control(void **state)
{
    (void)state;
    assert_true(controllers_enabled("cpuset cpu io memory pids\n"));
    assert_true(controllers_enabled("memory pids cpu"));
    /* each must be there as a word of its own */
    assert_false(controllers_enabled("cpuset io memory pids\n"));
    assert_false(controllers_enabled("cpu memory\n"));
    assert_false(controllers_enabled("cpu memory hugetlb pids_extra\n"));
    assert_false(controllers_enabled(""));
    assert_true(list_has("rw,cpu,cpuacct", ',', "cpuacct"));
    assert_false(list_has("rw,cpuacct", ',', "cpu"));
    assert_false(list_has(NULL, ',', "cpu"));
}

static void t_pids_alone_needs_none(void **state)
{
    (void)state;
    pdk_cgroup_limits limits = {.pids = 100};
    pdk_cgroup *cg = (pdk_cgroup *)1;
    pdk_error err = {0};
    assert_int_equal(pdk_cgroup_create("paddock-test-none", &limits, false, &cg, &err), 0);
    assert_null(cg);
    assert_int_equal(pdk_cgroup_mode_of(NULL), PDK_CGROUP_NONE);
    assert_int_equal(pdk_cgroup_clone_fd(NULL), -1);
    assert_int_equal(pdk_cgroup_attach(NULL, getpid(), &err), 0);
    pdk_cgroup_destroy(NULL);
}

static void t_probe_is_consistent(void **state)
{
    (void)state;
    pdk_cgroup_probe p;
    pdk_cgroup_probe_run(&p);
    assert_true(p.detail[0] != '\0');
    if (p.mode == PDK_CGROUP_V2)
        assert_true(p.v2_mounted && p.v2_delegated);
    if (p.mode == PDK_CGROUP_V1)
        assert_true(!p.v2_delegated && p.v1_memory && p.v1_pids);
    if (p.mode == PDK_CGROUP_NONE)
        assert_true(!p.v2_delegated && !(p.v1_memory && p.v1_pids));
}

static int64_t read_number(const char *dir, const char *file)
{
    _cleanup_free_ char *path = pdk_path_join(dir, file);
    _cleanup_free_ char *text = NULL;
    if (pdk_read_file_at(AT_FDCWD, path, &text, NULL, 4096) < 0)
        return -1;
    return strtoll(text, NULL, 10);
}

static void t_real_cgroup(void **state)
{
    (void)state;
    pdk_cgroup_probe p;
    pdk_cgroup_probe_run(&p);
    if (p.mode == PDK_CGROUP_NONE)
        skip_or_fail(p.detail);
    char name[64];
    snprintf(name, sizeof(name), "paddock-unittest-%d", (int)getpid());
    pdk_cgroup_limits limits = {.memory_bytes = 64 << 20, .pids = 50};
    pdk_cgroup *cg = NULL;
    pdk_error err = {0};
    if (pdk_cgroup_create(name, &limits, false, &cg, &err) < 0)
        fail_msg("%s", err.message);
    assert_non_null(cg);
    assert_int_equal(pdk_cgroup_mode_of(cg), p.mode);
    char *dir = cg->mode == PDK_CGROUP_V2 ? cg->v2_dir : cg->v1_dirs[CTRL_MEMORY];
    assert_non_null(dir);
    _cleanup_free_ char *kept = xstrdup(dir);
    if (cg->mode == PDK_CGROUP_V2) {
        assert_true(pdk_cgroup_clone_fd(cg) >= 0);
        assert_int_equal(read_number(dir, "memory.max"), 64 << 20);
        assert_int_equal(read_number(dir, "pids.max"), 50);
    } else {
        assert_int_equal(pdk_cgroup_clone_fd(cg), -1);
        assert_int_equal(read_number(dir, "memory.limit_in_bytes"), 64 << 20);
        /* a child attached is in it */
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            pause();
            _exit(0);
        }
        assert_int_equal(pdk_cgroup_attach(cg, pid, &err), 0);
        _cleanup_free_ char *procs_path = pdk_path_join(dir, "cgroup.procs");
        _cleanup_free_ char *procs = NULL;
        assert_int_equal(pdk_read_file_at(AT_FDCWD, procs_path, &procs, NULL, 4096), 0);
        char want[32];
        snprintf(want, sizeof(want), "%d\n", (int)pid);
        assert_non_null(strstr(procs, want));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    pdk_cgroup_destroy(cg);
    struct stat st;
    assert_int_equal(stat(kept, &st), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_mount_points),        cmocka_unit_test(t_own_paths),
        cmocka_unit_test(t_subtree_control),     cmocka_unit_test(t_pids_alone_needs_none),
        cmocka_unit_test(t_probe_is_consistent), cmocka_unit_test(t_real_cgroup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
