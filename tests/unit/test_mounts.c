/* test_mounts.c: the mount tree's parts that need no new namespace (mounts.c). The source
 * trees travel as fds and come back in the same places whatever is present (workspace,
 * layers in overlay mode only, binds), a short list leaving the rest -1; binds are ordered
 * shallowest first, so that one inside another lands on top of it; the probes (overlayfs in
 * a user namespace, idmapped mounts) answer without changing the caller and leave nothing
 * behind. Includes mounts.c to reach its statics. */
#include "../../src/sandbox/mounts.c"

#include "must_work.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static void roundtrip(const char *workspace, pdk_workspace_mode mode, size_t binds)
{
    pdk_bind b[4] = {{0}};
    pdk_sandbox_config cfg = {
        .workspace = (char *)workspace, .workspace_mode = mode, .binds = b, .bind_count = binds};
    int bind_fds[4] = {30, 31, 32, 33};
    pdk_mount_sources src = {.workspace = workspace ? 10 : -1,
                             .layers = workspace && mode == PDK_WORKSPACE_OVERLAY ? 11 : -1,
                             .binds = bind_fds,
                             .bind_count = binds};
    int fds[8];
    size_t n = pdk_mounts_sources_to_fds(&src, fds, 8);
    assert_int_equal(n, (workspace ? 1 : 0) + (src.layers >= 0 ? 1 : 0) + binds);
    pdk_mount_sources back;
    pdk_mounts_sources_from_fds(&cfg, fds, n, &back);
    assert_int_equal(back.workspace, src.workspace);
    assert_int_equal(back.layers, src.layers);
    assert_int_equal(back.bind_count, binds);
    for (size_t i = 0; i < binds; i++)
        assert_int_equal(back.binds[i], bind_fds[i]);
    free(back.binds);
    /* fewer fds than expected: the rest -1, never another's */
    pdk_mounts_sources_from_fds(&cfg, fds, n ? n - 1 : 0, &back);
    if (binds)
        assert_int_equal(back.binds[binds - 1], -1);
    free(back.binds);
}

static void t_sources_travel(void **state)
{
    (void)state;
    roundtrip("/ws", PDK_WORKSPACE_OVERLAY, 3);
    roundtrip("/ws", PDK_WORKSPACE_DIRECT, 2);
    roundtrip(NULL, PDK_WORKSPACE_OVERLAY, 1);
    roundtrip("/ws", PDK_WORKSPACE_OVERLAY, 0);
    /* the room given bounds what is written */
    int bind_fds[3] = {1, 2, 3};
    pdk_mount_sources src = {.workspace = 9, .layers = 8, .binds = bind_fds, .bind_count = 3};
    int fds[2];
    assert_int_equal(pdk_mounts_sources_to_fds(&src, fds, 2), 2);
    assert_int_equal(fds[0], 9);
    assert_int_equal(fds[1], 8);
}

static void t_binds_shallowest_first(void **state)
{
    (void)state;
    pdk_bind b[] = {{.target = "/home/u/.cargo/bin"},
                    {.target = "/home/u"},
                    {.target = "/opt"},
                    {.target = "/home/u/.cargo"}};
    const pdk_bind *order[] = {&b[0], &b[1], &b[2], &b[3]};
    qsort(order, 4, sizeof(*order), compare_bind_targets);
    for (size_t i = 0; i < 4; i++)
        for (size_t j = i + 1; j < 4; j++)
            assert_false(pdk_path_is_within(order[i]->target, order[j]->target) &&
                         strcmp(order[i]->target, order[j]->target) != 0);
    assert_string_equal(order[0]->target, "/opt");
    assert_string_equal(order[3]->target, "/home/u/.cargo/bin");
    char *r = in_root("/");
    assert_string_equal(r, NEWROOT);
    free(r);
    r = in_root("/etc");
    assert_string_equal(r, NEWROOT "/etc");
    free(r);
}

static int count_doctor_dirs(void)
{
    DIR *d = opendir("/tmp");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strncmp(e->d_name, "paddock-doctor.", 15) == 0;
    if (d)
        closedir(d);
    return n;
}

static void t_probes(void **state)
{
    (void)state;
    struct stat before, after;
    assert_int_equal(stat("/proc/self/ns/mnt", &before), 0);
    int e = pdk_mounts_probe_overlay();
    assert_int_equal(stat("/proc/self/ns/mnt", &after), 0);
    assert_true(before.st_ino == after.st_ino);
    if (e != 0)
        skip_or_fail("overlayfs cannot be mounted in a user namespace here");
    /* (another doctor may run at once: only what this one made must be gone) */
    int left = count_doctor_dirs();
    assert_int_equal(pdk_mounts_probe_overlay(), 0);
    assert_true(count_doctor_dirs() <= left);
    if (geteuid() == 0) {
        e = pdk_mounts_probe_idmap("/tmp");
        /* 0 where the filesystem supports idmapped mounts, else an errno, never a crash */
        assert_true(e >= 0);
        assert_int_equal(pdk_mounts_probe_idmap("/nonexistent/path"), ENOENT);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_sources_travel),
        cmocka_unit_test(t_binds_shallowest_first),
        cmocka_unit_test(t_probes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
