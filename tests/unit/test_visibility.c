/* test_visibility.c: which host paths a sandbox sees (visibility.c). Hidden wins over
 * shown; under the sandbox's $HOME only what is bound in is seen; /tmp, /run and /var/run
 * are its own (but not a path that merely starts with their names); started as root, a
 * directory closed to others stays shut; a symlink that leads to an unseen place is unseen,
 * saying where it leads; the advice names the first directory below ~, or the file's
 * directory; a PATH lookup skips what the sandbox does not see and files that cannot run;
 * the hidden list has each home's credential locations, read_deny, the state dir, and where
 * a symlinked one really is. */
#include "fsutil.h"
#include "visibility.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct fixture {
    char base[64];
    char tmp_target[64]; /* a directory under /tmp, for a symlink to lead to */
} fixture;

static char *at(fixture *f, const char *rel)
{
    return xasprintf("%s/%s", f->base, rel);
}

static void mkdirs(fixture *f, const char *rel, mode_t mode)
{
    _cleanup_free_ char *p = at(f, rel);
    assert_int_equal(pdk_mkdir_p(p, 0755), 0);
    chmod(p, mode);
}

static void file(fixture *f, const char *rel, mode_t mode)
{
    _cleanup_free_ char *p = at(f, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, mode);
    assert_true(fd >= 0);
    close(fd);
    chmod(p, mode);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    /* not under /tmp: that is the sandbox's own whatever the test wants to see */
    snprintf(f->base, sizeof(f->base), "/var/tmp/paddock-visibility-test.XXXXXX");
    snprintf(f->tmp_target, sizeof(f->tmp_target), "/tmp/paddock-visibility-target.XXXXXX");
    if (!mkdtemp(f->base) || !mkdtemp(f->tmp_target))
        return -1;
    chmod(f->base, 0755);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    pdk_rm_rf_at(AT_FDCWD, f->base);
    pdk_rm_rf_at(AT_FDCWD, f->tmp_target);
    free(f);
    return 0;
}

static pdk_unseen check(const pdk_visibility *v, const char *path, char *why)
{
    why[0] = '\0';
    return pdk_visibility_check(v, path, why, 600);
}

static void t_reasons(void **state)
{
    fixture *f = *state;
    mkdirs(f, "home/.pyenv/shims", 0755);
    mkdirs(f, "home/.cargo/bin", 0755);
    mkdirs(f, "home/.ssh", 0700);
    mkdirs(f, "opt/bin", 0755);
    _cleanup_free_ char *home = at(f, "home");
    _cleanup_free_ char *cargo = at(f, "home/.cargo");
    _cleanup_free_ char *ssh = at(f, "home/.ssh");
    char *shown[] = {cargo, ssh, NULL};
    char *hidden[] = {ssh, NULL};
    pdk_visibility v = {.home = home, .shown = shown, .hidden = hidden};
    char why[600];

    _cleanup_free_ char *shims = at(f, "home/.pyenv/shims");
    assert_int_equal(check(&v, shims, why), PDK_UNSEEN_HOME);
    assert_non_null(strstr(why, home));
    _cleanup_free_ char *advice = pdk_visibility_advice(&v, PDK_UNSEEN_HOME, shims);
    assert_string_equal(advice, "add ~/.pyenv to the policy's filesystem.read_allow");
    free(advice);
    advice = pdk_visibility_advice(&v, PDK_UNSEEN_HOME, home);
    assert_non_null(strstr(advice, "read_allow"));

    /* bound in: seen; hidden wins even over shown */
    _cleanup_free_ char *cargo_bin = at(f, "home/.cargo/bin");
    assert_int_equal(check(&v, cargo_bin, why), PDK_SEEN);
    _cleanup_free_ char *ssh_key = at(f, "home/.ssh/id_ed25519");
    assert_int_equal(check(&v, ssh_key, why), PDK_UNSEEN_HIDDEN);
    assert_non_null(strstr(why, "hides it"));
    free(advice);
    advice = pdk_visibility_advice(&v, PDK_UNSEEN_HIDDEN, ssh_key);
    assert_non_null(strstr(advice, "whatever the policy says"));

    /* the sandbox's own directories, and names that only start like them */
    assert_int_equal(check(&v, "/tmp/tool/bin", why), PDK_UNSEEN_OWN);
    assert_non_null(strstr(why, "/tmp inside is the sandbox's own"));
    assert_int_equal(check(&v, "/run/user/1000/bin", why), PDK_UNSEEN_OWN);
    assert_int_equal(check(&v, "/var/run/x", why), PDK_UNSEEN_OWN);
    assert_int_equal(check(&v, "/tmpfoo/bin", why), PDK_SEEN);
    assert_int_equal(check(&v, "/runner", why), PDK_SEEN);
    _cleanup_free_ char *opt = at(f, "opt/bin");
    assert_int_equal(check(&v, opt, why), PDK_SEEN);

    /* a home of "/" is no home to hide under */
    pdk_visibility rooted = {.home = "/"};
    assert_int_equal(check(&rooted, opt, why), PDK_SEEN);
}

static void t_closed_when_privileged(void **state)
{
    fixture *f = *state;
    mkdirs(f, "closed/tools/bin", 0755);
    _cleanup_free_ char *closed = at(f, "closed");
    chmod(closed, 0700);
    _cleanup_free_ char *bin = at(f, "closed/tools/bin");
    pdk_visibility user = {.privileged = false}, root = {.privileged = true};
    char why[600];
    assert_int_equal(check(&user, bin, why), PDK_SEEN);
    assert_int_equal(check(&root, bin, why), PDK_UNSEEN_CLOSED);
    char want[200];
    snprintf(want, sizeof(want), "only its owner may enter %s (mode 0700)", closed);
    assert_non_null(strstr(why, want));
    _cleanup_free_ char *advice = pdk_visibility_advice(&root, PDK_UNSEEN_CLOSED, bin);
    assert_non_null(strstr(advice, "regular user"));
    /* open to others: seen as root too */
    chmod(closed, 0711);
    assert_int_equal(check(&root, bin, why), PDK_SEEN);
}

static void t_symlink_into_the_own(void **state)
{
    fixture *f = *state;
    _cleanup_free_ char *link = at(f, "link");
    assert_int_equal(symlink(f->tmp_target, link), 0);
    pdk_visibility v = {0};
    char why[600];
    assert_int_equal(check(&v, link, why), PDK_UNSEEN_OWN);
    char want[200];
    snprintf(want, sizeof(want), "it leads to %s, and /tmp inside", f->tmp_target);
    assert_non_null(strstr(why, want));
    /* the advice for a file names its directory, for a directory itself */
    _cleanup_free_ char *advice = pdk_visibility_advice(&v, PDK_UNSEEN_OWN, "/tmp/x/tool");
    assert_string_equal(advice, "add /tmp/x to the policy's filesystem.read_allow");
    free(advice);
    advice = pdk_visibility_advice(&v, PDK_UNSEEN_OWN, f->tmp_target);
    _cleanup_free_ char *dir_advice =
        xasprintf("add %s to the policy's filesystem.read_allow", f->tmp_target);
    assert_string_equal(advice, dir_advice);
}

static void t_path_lookup(void **state)
{
    fixture *f = *state;
    mkdirs(f, "a", 0755);
    mkdirs(f, "b", 0755);
    mkdirs(f, "hidden", 0755);
    file(f, "a/tool", 0644); /* not executable */
    file(f, "b/tool", 0755);
    file(f, "hidden/other", 0755);
    file(f, "b/other", 0755);
    _cleanup_free_ char *a = at(f, "a"), *b = at(f, "b"), *hid = at(f, "hidden");
    _cleanup_free_ char *path = xasprintf("%s:%s:%s", a, hid, b);
    char *found = NULL;
    assert_true(pdk_path_lookup(path, "tool", "/", NULL, &found));
    _cleanup_free_ char *want = at(f, "b/tool");
    assert_string_equal(found, want);
    free(found);
    /* without a view: the first; with one that hides it: the next seen */
    assert_true(pdk_path_lookup(path, "other", "/", NULL, &found));
    _cleanup_free_ char *first = at(f, "hidden/other");
    assert_string_equal(found, first);
    free(found);
    char *hidden[] = {hid, NULL};
    pdk_visibility v = {.hidden = hidden};
    assert_true(pdk_path_lookup(path, "other", "/", &v, &found));
    _cleanup_free_ char *next = at(f, "b/other");
    assert_string_equal(found, next);
    free(found);
    /* relative entries against cwd; names with a slash are not looked up */
    assert_true(pdk_path_lookup("b", "tool", f->base, NULL, &found));
    assert_string_equal(found, want);
    free(found);
    assert_false(pdk_path_lookup(path, "b/tool", "/", NULL, &found));
    assert_null(found);
    assert_false(pdk_path_lookup(path, "", "/", NULL, &found));
    assert_false(pdk_path_lookup(path, "missing", "/", NULL, &found));
}

static void t_hidden_paths(void **state)
{
    fixture *f = *state;
    mkdirs(f, "h1", 0755);
    mkdirs(f, "real-aws", 0700);
    _cleanup_free_ char *h1 = at(f, "h1");
    _cleanup_free_ char *aws = at(f, "h1/.aws");
    _cleanup_free_ char *real = at(f, "real-aws");
    assert_int_equal(symlink(real, aws), 0);
    char *deny[] = {"/srv/secret", NULL};
    pdk_policy policy = {.read_deny = deny};
    char *homes[] = {h1, "/home/other", NULL};
    char **list = pdk_hidden_paths(homes, &policy, "/var/lib/paddock-test-state");
    _cleanup_free_ char *ssh1 = at(f, "h1/.ssh");
    assert_true(pdk_strv_contains(list, ssh1));
    assert_true(pdk_strv_contains(list, "/home/other/.ssh"));
    assert_true(pdk_strv_contains(list, "/home/other/.gnupg"));
    assert_true(pdk_strv_contains(list, "/srv/secret"));
    assert_true(pdk_strv_contains(list, "/var/lib/paddock-test-state"));
    /* a symlinked credential location: hidden where it is, and where it leads */
    assert_true(pdk_strv_contains(list, aws));
    assert_true(pdk_strv_contains(list, real));
    pdk_strv_free(list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(t_reasons, setup, teardown),
        cmocka_unit_test_setup_teardown(t_closed_when_privileged, setup, teardown),
        cmocka_unit_test_setup_teardown(t_symlink_into_the_own, setup, teardown),
        cmocka_unit_test_setup_teardown(t_path_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(t_hidden_paths, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
