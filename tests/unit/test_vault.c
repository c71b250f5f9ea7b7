/* test_vault.c: the vault (vault.c) in a temporary state dir: several secrets in one
 * write, all or none; a value that is the vault's only until its next write; another key
 * refused without a write; the per-secret lock excluding a second holder. */
#include "fsutil.h"
#include "vault.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static int setup(void **state)
{
    char *dir = strdup("/tmp/paddock-vault-test.XXXXXX");
    assert_non_null(mkdtemp(dir));
    unsetenv("PADDOCK_VAULT_KEY");
    unsetenv("PADDOCK_VAULT_KEY_FD");
    *state = dir;
    return 0;
}

static int teardown(void **state)
{
    pdk_rm_rf_at(AT_FDCWD, *state);
    free(*state);
    return 0;
}

static pdk_vault *open_vault(const char *dir)
{
    pdk_vault *v = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_vault_open(dir, true, &v, &err), 0);
    return v;
}

static void test_set_many(void **state)
{
    const char *dir = *state;
    pdk_vault *v = open_vault(dir);
    pdk_error err = {0};
    pdk_vault_item items[] = {{"a.access_token", "token", "tok-1 100 200"},
                              {"a_refresh", NULL, "refresh-2"}};
    assert_int_equal(pdk_vault_set_many(v, items, 2, &err), 0);
    pdk_vault_close(v);
    /* read back from disk, by another handle */
    v = open_vault(dir);
    assert_string_equal(pdk_vault_get(v, "a.access_token", false, &err), "tok-1 100 200");
    assert_string_equal(pdk_vault_get(v, "a_refresh", false, &err), "refresh-2");
    /* one bad item (an invalid name, an empty value): nothing of the batch is stored */
    pdk_vault_item bad[] = {{"a_refresh", "token", "refresh-3"}, {"no spaces", NULL, "x"}};
    assert_int_equal(pdk_vault_set_many(v, bad, 2, &err), -1);
    assert_non_null(strstr(err.message, "not a secret name"));
    pdk_vault_item empty[] = {{"a_refresh", "token", "refresh-3"}, {"b", NULL, ""}};
    assert_int_equal(pdk_vault_set_many(v, empty, 2, &err), -1);
    assert_non_null(strstr(err.message, "empty"));
    pdk_vault_close(v);
    v = open_vault(dir);
    assert_string_equal(pdk_vault_get(v, "a_refresh", false, &err), "refresh-2");
    assert_null(pdk_vault_get(v, "b", false, &err));
    pdk_vault_close(v);
}

static void test_another_key(void **state)
{
    const char *dir = *state;
    pdk_vault *v = open_vault(dir);
    pdk_error err = {0};
    assert_int_equal(pdk_vault_set(v, "s", NULL, "value", 5, &err), 0);
    pdk_vault_close(v);
    struct stat before, after;
    char *path = NULL;
    assert_true(asprintf(&path, "%s/vault", dir) > 0);
    assert_int_equal(stat(path, &before), 0);
    /* the same vault under another key: one error, and the file is not written */
    setenv("PADDOCK_VAULT_KEY", "00000000000000000000000000000000000000000000000000000000000000ff",
           1);
    v = NULL;
    assert_int_equal(pdk_vault_open(dir, true, &v, &err), -1);
    assert_null(v);
    unsetenv("PADDOCK_VAULT_KEY");
    assert_int_equal(stat(path, &after), 0);
    assert_int_equal(before.st_ino, after.st_ino);
    assert_int_equal(before.st_size, after.st_size);
    free(path);
}

static void test_lock_secret(void **state)
{
    const char *dir = *state;
    pdk_error err = {0};
    int fd = pdk_vault_lock_secret(dir, "cred.access_token", &err);
    assert_true(fd >= 0);
    char *path = NULL;
    assert_true(asprintf(&path, "%s/vault.locks/cred.access_token", dir) > 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* a second open file description cannot take it while the first holds it */
    int other = open(path, O_RDWR | O_CLOEXEC);
    assert_true(other >= 0);
    assert_int_equal(flock(other, LOCK_EX | LOCK_NB), -1);
    assert_int_equal(errno, EWOULDBLOCK);
    close(fd);
    assert_int_equal(flock(other, LOCK_EX | LOCK_NB), 0);
    close(other);
    /* another secret's lock is another file */
    fd = pdk_vault_lock_secret(dir, "other", &err);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(pdk_vault_lock_secret(dir, "../escape", &err), -1);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_set_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_another_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_secret, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
