/* test_statedir.c: where state lives and which directories paddock refuses (statedir.c).
 * PADDOCK_STATE_DIR wins, then $XDG_STATE_HOME/paddock, then the home's; a relative one is
 * refused; system and shared directories and the home itself are refused before anything
 * touches the disk; a symlink, a file, a directory others may read or write, one of another
 * user, one holding files that are not paddock's are refused with a message naming the fix,
 * and left as they were; a missing one is made 0700 and marked; one holding only paddock's
 * files is adopted. The home comes from $HOME when absolute, else the user database. */
#include "fsutil.h"
#include "statedir.h"

#include <errno.h>
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
    char dir[64];
    char *saved_home;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/paddock-statedir-test.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    chmod(f->dir, 0700);
    const char *home = getenv("HOME");
    f->saved_home = home ? strdup(home) : NULL;
    unsetenv("PADDOCK_STATE_DIR");
    unsetenv("XDG_STATE_HOME");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    pdk_rm_rf_at(AT_FDCWD, f->dir);
    if (f->saved_home)
        setenv("HOME", f->saved_home, 1);
    else
        unsetenv("HOME");
    unsetenv("PADDOCK_STATE_DIR");
    unsetenv("XDG_STATE_HOME");
    free(f->saved_home);
    free(f);
    return 0;
}

static char *in(fixture *f, const char *name)
{
    return xasprintf("%s/%s", f->dir, name);
}

/* pdk_state_dir's error for PADDOCK_STATE_DIR=path (must fail). */
static void expect_refused(const char *path, bool create, const char *says)
{
    setenv("PADDOCK_STATE_DIR", path, 1);
    pdk_error err = {0};
    char *out = NULL;
    assert_int_equal(pdk_state_dir(create, &out, &err), -1);
    assert_null(out);
    if (!strstr(err.message, says))
        fail_msg("state dir %s: expected \"%s\" in \"%s\"", path, says, err.message);
}

static void t_order_of_sources(void **state)
{
    fixture *f = *state;
    _cleanup_free_ char *home = in(f, "home");
    assert_int_equal(mkdir(home, 0700), 0);
    setenv("HOME", home, 1);
    char *out = NULL;
    pdk_error err = {0};
    if (getuid() != 0) {
        assert_int_equal(pdk_state_dir(false, &out, &err), 0);
        _cleanup_free_ char *want = xasprintf("%s/.local/state/paddock", home);
        assert_string_equal(out, want);
        free(out);
    }
    _cleanup_free_ char *xdg = in(f, "xdg");
    setenv("XDG_STATE_HOME", xdg, 1);
    assert_int_equal(pdk_state_dir(false, &out, &err), 0);
    _cleanup_free_ char *want_xdg = xasprintf("%s/paddock", xdg);
    assert_string_equal(out, want_xdg);
    free(out);
    /* a relative XDG_STATE_HOME is ignored, as the spec says */
    setenv("XDG_STATE_HOME", "relative/state", 1);
    assert_int_equal(pdk_state_dir(false, &out, &err), 0);
    assert_true(out[0] == '/');
    free(out);
    setenv("XDG_STATE_HOME", xdg, 1);
    /* PADDOCK_STATE_DIR over both, normalised */
    _cleanup_free_ char *messy = xasprintf("%s//explicit/./", f->dir);
    _cleanup_free_ char *clean = in(f, "explicit");
    setenv("PADDOCK_STATE_DIR", messy, 1);
    assert_int_equal(pdk_state_dir(false, &out, &err), 0);
    assert_string_equal(out, clean);
    free(out);
    /* read-only lookups make nothing */
    struct stat st;
    assert_int_equal(stat(clean, &st), -1);
    expect_refused("relative/state", false, "not an absolute path");
}

static void t_system_directories(void **state)
{
    fixture *f = *state;
    setenv("HOME", f->dir, 1);
    const char *refused[] = {
        "/",    "/tmp",  "/var",  "/var/lib",   "/var/tmp", "/usr/local", "/usr/local/share",
        "/etc", "/home", "/root", "/proc/self", "/dev/shm", "/sys/fs",    "/tmp/"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++)
        expect_refused(refused[i], true, "system or shared directory");
    /* the home itself, but not a directory inside it */
    expect_refused(f->dir, true, "system or shared directory");
    _cleanup_free_ char *inside = in(f, "state");
    setenv("PADDOCK_STATE_DIR", inside, 1);
    char *out = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_state_dir(true, &out, &err), 0);
    free(out);
}

static void t_create_and_adopt(void **state)
{
    fixture *f = *state;
    setenv("HOME", "/nonexistent-home", 1);
    _cleanup_free_ char *fresh = in(f, "a/b/state");
    setenv("PADDOCK_STATE_DIR", fresh, 1);
    char *out = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_state_dir(true, &out, &err), 0);
    free(out);
    struct stat st;
    assert_int_equal(stat(fresh, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0700);
    _cleanup_free_ char *marker = xasprintf("%s/" PDK_STATE_DIR_MARKER, fresh);
    assert_int_equal(stat(marker, &st), 0);
    /* again: the same, nothing changed */
    assert_int_equal(pdk_state_dir(true, &out, &err), 0);
    free(out);

    /* an unmarked private directory with only paddock's files in it: adopted and marked */
    _cleanup_free_ char *old = in(f, "old");
    assert_int_equal(mkdir(old, 0700), 0);
    _cleanup_free_ char *db = xasprintf("%s/paddock.db", old);
    close(open(db, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
    _cleanup_free_ char *sessions = xasprintf("%s/sessions", old);
    assert_int_equal(mkdir(sessions, 0700), 0);
    setenv("PADDOCK_STATE_DIR", old, 1);
    assert_int_equal(pdk_state_dir(true, &out, &err), 0);
    free(out);
    _cleanup_free_ char *old_marker = xasprintf("%s/" PDK_STATE_DIR_MARKER, old);
    assert_int_equal(stat(old_marker, &st), 0);
}

static void t_refused_and_untouched(void **state)
{
    fixture *f = *state;
    setenv("HOME", "/nonexistent-home", 1);
    struct stat st;
    /* a symlink to a good directory */
    _cleanup_free_ char *target = in(f, "target");
    _cleanup_free_ char *link = in(f, "link");
    assert_int_equal(mkdir(target, 0700), 0);
    assert_int_equal(symlink(target, link), 0);
    expect_refused(link, true, "is a symlink");
    /* a file */
    _cleanup_free_ char *file = in(f, "file");
    close(open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
    expect_refused(file, true, "is not a directory");
    /* others may write, or read: refused, the mode left alone */
    _cleanup_free_ char *open_dir = in(f, "open");
    assert_int_equal(mkdir(open_dir, 0700), 0);
    assert_int_equal(chmod(open_dir, 0777), 0);
    expect_refused(open_dir, true, "can be written by other users (mode 0777)");
    assert_int_equal(stat(open_dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0777);
    assert_int_equal(chmod(open_dir, 0755), 0);
    expect_refused(open_dir, true, "can be read by other users (mode 0755)");
    expect_refused(open_dir, true, "chmod 700");
    /* someone else's files in it: refused, named, and no marker written */
    _cleanup_free_ char *busy = in(f, "busy");
    assert_int_equal(mkdir(busy, 0700), 0);
    _cleanup_free_ char *thesis = xasprintf("%s/thesis.tex", busy);
    close(open(thesis, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
    expect_refused(busy, true, "not paddock's (thesis.tex");
    _cleanup_free_ char *busy_marker = xasprintf("%s/" PDK_STATE_DIR_MARKER, busy);
    assert_int_equal(stat(busy_marker, &st), -1);
    /* a name with a newline is shown escaped, the message one line */
    _cleanup_free_ char *odd = xasprintf("%s/evil\nname", busy);
    unlink(thesis);
    close(open(odd, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
    setenv("PADDOCK_STATE_DIR", busy, 1);
    pdk_error err = {0};
    char *out = NULL;
    assert_int_equal(pdk_state_dir(true, &out, &err), -1);
    assert_null(strchr(err.message, '\n'));
    /* another user's directory (as root we can make one) */
    if (getuid() == 0) {
        _cleanup_free_ char *theirs = in(f, "theirs");
        assert_int_equal(mkdir(theirs, 0700), 0);
        assert_int_equal(chown(theirs, 65534, 65534), 0);
        expect_refused(theirs, true, "belongs to uid 65534, not to you");
    }
}

static void t_home(void **state)
{
    fixture *f = *state;
    _cleanup_free_ char *messy = xasprintf("%s/./h//", f->dir);
    setenv("HOME", messy, 1);
    _cleanup_free_ char *home = pdk_home_dir();
    _cleanup_free_ char *want = xasprintf("%s/h", f->dir);
    assert_string_equal(home, want);
    /* a relative or empty $HOME is not a home: the user database's */
    _cleanup_free_ char *passwd = pdk_passwd_home(getuid());
    setenv("HOME", "relative", 1);
    _cleanup_free_ char *fallback = pdk_home_dir();
    assert_string_equal(fallback, passwd ? passwd : "/");
    unsetenv("HOME");
    _cleanup_free_ char *unset = pdk_home_dir();
    assert_string_equal(unset, passwd ? passwd : "/");
    /* root's entry is there on any system; a uid nobody has is NULL */
    _cleanup_free_ char *root = pdk_passwd_home(0);
    assert_non_null(root);
    assert_true(root[0] == '/');
    assert_null(pdk_passwd_home(4000000000u));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(t_order_of_sources, setup, teardown),
        cmocka_unit_test_setup_teardown(t_system_directories, setup, teardown),
        cmocka_unit_test_setup_teardown(t_create_and_adopt, setup, teardown),
        cmocka_unit_test_setup_teardown(t_refused_and_untouched, setup, teardown),
        cmocka_unit_test_setup_teardown(t_home, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
