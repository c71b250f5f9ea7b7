/* test_home.c: persistent homes (home.c). A home is made 0700 with every protected entry
 * (directories for a trailing '/', empty files else) and their parents listed once,
 * shallowest first; an entry that is a symlink, or a parent that is a file, is refused
 * naming it and the fix, and nothing is followed; absolute or ".." entries are ignored.
 * Kept placeholders: a new home gets new random parts, the same home and secrets keep
 * them, other secrets or another home (made anew) get new ones, entries of other
 * credentials stay; a file that is not one is refused; forgetting a secret drops exactly
 * the placeholders that stand for it, in every home's file. */
#include "fsutil.h"
#include "home.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
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
    char state[64];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    snprintf(f->state, sizeof(f->state), "/tmp/paddock-home-test.XXXXXX");
    if (!mkdtemp(f->state))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    pdk_rm_rf_at(AT_FDCWD, f->state);
    free(f);
    return 0;
}

static mode_t mode_of(const char *dir, const char *rel, bool *is_dir)
{
    _cleanup_free_ char *p = pdk_path_join(dir, rel);
    struct stat st;
    if (lstat(p, &st) < 0)
        return 0;
    *is_dir = S_ISDIR(st.st_mode);
    return st.st_mode;
}

static void t_prepare(void **state)
{
    fixture *f = *state;
    const char *protected[] = {".bashrc",
                               ".config/git/",
                               ".claude/settings.json",
                               ".claude/commands/",
                               "/etc/passwd",
                               "../escape",
                               "",
                               NULL};
    char *dir = NULL, **parents = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_home_prepare(f->state, "agent", protected, &dir, &parents, &err), 0);
    _cleanup_free_ char *want = xasprintf("%s/homes/agent", f->state);
    assert_string_equal(dir, want);
    bool d = false;
    assert_int_equal(mode_of(dir, "", &d) & 0777, 0700);
    assert_true(S_ISREG(mode_of(dir, ".bashrc", &d)) && !d);
    mode_of(dir, ".config/git", &d);
    assert_true(d);
    assert_true(S_ISREG(mode_of(dir, ".claude/settings.json", &d)));
    mode_of(dir, ".claude/commands", &d);
    assert_true(d);
    /* parents once each, shallowest first */
    assert_int_equal(pdk_strv_length(parents), 2);
    assert_string_equal(parents[0], ".config");
    assert_string_equal(parents[1], ".claude");
    pdk_strv_free(parents);
    free(dir);
    /* nothing outside the home */
    _cleanup_free_ char *escape = xasprintf("%s/homes/escape", f->state);
    assert_int_equal(access(escape, F_OK), -1);
    /* again: the same, content kept */
    _cleanup_free_ char *rc = xasprintf("%s/homes/agent/.bashrc", f->state);
    assert_int_equal(pdk_write_file_atomic(AT_FDCWD, rc, "x", 1, 0644, false), 0);
    assert_int_equal(pdk_home_prepare(f->state, "agent", protected, &dir, &parents, &err), 0);
    _cleanup_free_ char *text = NULL;
    assert_int_equal(pdk_read_file_at(AT_FDCWD, rc, &text, NULL, 0), 0);
    assert_string_equal(text, "x");
    pdk_strv_free(parents);
    free(dir);
}

static void t_prepare_refuses(void **state)
{
    fixture *f = *state;
    char *dir = NULL, **parents = NULL;
    pdk_error err = {0};
    const char *none[] = {NULL};
    assert_int_equal(pdk_home_prepare(f->state, "h", none, &dir, &parents, &err), 0);
    pdk_strv_free(parents);
    /* a protected file that is a symlink to something of the host's */
    _cleanup_free_ char *link = pdk_path_join(dir, ".bashrc");
    free(dir);
    assert_int_equal(symlink("/etc/hostname", link), 0);
    const char *rc[] = {".bashrc", NULL};
    assert_int_equal(pdk_home_prepare(f->state, "h", rc, &dir, &parents, &err), -1);
    assert_non_null(strstr(err.message, ".bashrc is a symlink"));
    assert_non_null(strstr(err.message, "rm "));
    /* a parent that is a symlink: never followed, nothing made where it leads */
    _cleanup_free_ char *outside = xasprintf("%s/outside", f->state);
    assert_int_equal(mkdir(outside, 0755), 0);
    _cleanup_free_ char *home = xasprintf("%s/homes/h", f->state);
    _cleanup_free_ char *config = pdk_path_join(home, ".config");
    assert_int_equal(symlink(outside, config), 0);
    const char *git[] = {".config/git/", NULL};
    assert_int_equal(pdk_home_prepare(f->state, "h", git, &dir, &parents, &err), -1);
    assert_non_null(strstr(err.message, ".config is a symlink"));
    _cleanup_free_ char *leaked = xasprintf("%s/git", outside);
    assert_int_equal(access(leaked, F_OK), -1);
    /* a directory where a file must be */
    _cleanup_free_ char *claude = pdk_path_join(home, ".claude.json");
    assert_int_equal(mkdir(claude, 0755), 0);
    const char *json[] = {".claude.json", NULL};
    assert_int_equal(pdk_home_prepare(f->state, "h", json, &dir, &parents, &err), -1);
    assert_non_null(strstr(err.message, "is not a regular file"));
    /* the home itself a symlink */
    _cleanup_free_ char *other = xasprintf("%s/homes/other", f->state);
    assert_int_equal(symlink(outside, other), 0);
    assert_int_equal(pdk_home_prepare(f->state, "other", none, &dir, &parents, &err), -1);
    assert_non_null(strstr(err.message, "is a symlink"));
}

static void t_apply(void **state)
{
    (void)state;
    char *secrets_a[] = {"api", NULL}, *secrets_b[] = {"app_id", "app_secret", NULL};
    pdk_home_placeholder list[2] = {{.key = "A", .secrets = secrets_a},
                                    {.key = "B/app_secret", .secrets = secrets_b}};
    char *file = NULL;
    /* no file yet: new ones, and a file to write */
    assert_int_equal(pdk_home_placeholders_apply(NULL, 0, "1:2", list, 2, &file), 0);
    assert_non_null(file);
    assert_int_equal(strlen(list[0].random), PDK_PLACEHOLDER_RANDOM_HEX);
    assert_int_equal(strspn(list[0].random, "0123456789abcdef"), PDK_PLACEHOLDER_RANDOM_HEX);
    assert_string_not_equal(list[0].random, list[1].random);
    char a[PDK_PLACEHOLDER_RANDOM_HEX + 1], b[PDK_PLACEHOLDER_RANDOM_HEX + 1];
    memcpy(a, list[0].random, sizeof(a));
    memcpy(b, list[1].random, sizeof(b));
    /* the same home and secrets: kept, nothing to write */
    char *again = NULL;
    assert_int_equal(pdk_home_placeholders_apply(file, strlen(file), "1:2", list, 2, &again), 0);
    assert_null(again);
    assert_string_equal(list[0].random, a);
    assert_string_equal(list[1].random, b);
    /* A made of another secret: A new, B kept */
    char *other[] = {"api2", NULL};
    list[0].secrets = other;
    assert_int_equal(pdk_home_placeholders_apply(file, strlen(file), "1:2", list, 2, &again), 0);
    assert_non_null(again);
    assert_string_not_equal(list[0].random, a);
    assert_string_equal(list[1].random, b);
    /* only B this run: A's entry stays in the file */
    char *third = NULL;
    assert_int_equal(pdk_home_placeholders_apply(again, strlen(again), "1:2", list + 1, 1, &third),
                     0);
    assert_null(third);
    json_t *root = json_loads(again, 0, NULL);
    assert_non_null(json_object_get(json_object_get(root, "placeholders"), "A"));
    json_decref(root);
    /* another home (made anew): nothing kept */
    assert_int_equal(pdk_home_placeholders_apply(again, strlen(again), "1:3", list + 1, 1, &third),
                     0);
    assert_non_null(third);
    assert_string_not_equal(list[1].random, b);
    free(third);
    /* a file written before the birth time was in the identity: the same home, kept, and
     * written again with the new identity; a birth time that differs: another home */
    char *legacy = NULL;
    char kept_b[PDK_PLACEHOLDER_RANDOM_HEX + 1];
    assert_int_equal(pdk_home_placeholders_apply(NULL, 0, "7:8", list + 1, 1, &legacy), 0);
    memcpy(kept_b, list[1].random, sizeof(kept_b));
    assert_int_equal(pdk_home_placeholders_apply(legacy, strlen(legacy), "7:8:1700000000.5",
                                                 list + 1, 1, &third),
                     0);
    assert_string_equal(list[1].random, kept_b);
    assert_non_null(third);
    assert_non_null(strstr(third, "\"7:8:1700000000.5\""));
    char *born_again = NULL;
    assert_int_equal(pdk_home_placeholders_apply(third, strlen(third), "7:8:1800000000.5", list + 1,
                                                 1, &born_again),
                     0);
    assert_non_null(born_again);
    assert_string_not_equal(list[1].random, kept_b);
    free(born_again);
    free(third);
    assert_int_equal(pdk_home_placeholders_apply(legacy, strlen(legacy), "7:80:1700000000.5",
                                                 list + 1, 1, &third),
                     0);
    assert_string_not_equal(list[1].random, kept_b);
    free(third);
    free(legacy);
    /* a kept random part that is not one paddock makes is replaced */
    const char *forged = "{\"home\":\"1:2\",\"placeholders\":{\"A\":{\"random\":\"XYZ\","
                         "\"secrets\":[\"api2\"]}}}";
    assert_int_equal(pdk_home_placeholders_apply(forged, strlen(forged), "1:2", list, 1, &third),
                     0);
    assert_non_null(third);
    assert_int_equal(strspn(list[0].random, "0123456789abcdef"), PDK_PLACEHOLDER_RANDOM_HEX);
    free(third);
    /* not such a file */
    const char *bad[] = {"[]", "nonsense", "{\"home\":1,\"home\":2}", ""};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(
            pdk_home_placeholders_apply(bad[i], strlen(bad[i]), "1:2", list, 1, &third), -1);
    free(file);
    free(again);
}

static void t_drop(void **state)
{
    (void)state;
    const char *text = "{\"home\":\"1:2\",\"placeholders\":{"
                       "\"A\":{\"random\":\"a\",\"secrets\":[\"api\"]},"
                       "\"B\":{\"random\":\"b\",\"secrets\":[\"id\",\"api\"]},"
                       "\"C\":{\"random\":\"c\",\"secrets\":[\"other\"]}}}";
    size_t dropped = 99;
    char *updated = NULL;
    assert_int_equal(pdk_home_placeholders_drop(text, strlen(text), "api", &dropped, &updated), 0);
    assert_int_equal(dropped, 2);
    json_t *root = json_loads(updated, 0, NULL);
    json_t *kept = json_object_get(root, "placeholders");
    assert_int_equal(json_object_size(kept), 1);
    assert_non_null(json_object_get(kept, "C"));
    json_decref(root);
    free(updated);
    /* a secret no placeholder stands for: nothing to write */
    assert_int_equal(pdk_home_placeholders_drop(text, strlen(text), "ap", &dropped, &updated), 0);
    assert_int_equal(dropped, 0);
    assert_null(updated);
    assert_int_equal(pdk_home_placeholders_drop("x", 1, "api", &dropped, &updated), -1);
}

static void t_kept_on_disk(void **state)
{
    fixture *f = *state;
    char *dir = NULL, **parents = NULL;
    pdk_error err = {0};
    const char *none[] = {NULL};
    assert_int_equal(pdk_home_prepare(f->state, "h", none, &dir, &parents, &err), 0);
    pdk_strv_free(parents);
    char *secrets[] = {"api", NULL};
    pdk_home_placeholder p = {.key = "A", .secrets = secrets};
    /* read-only first: nothing written, nothing made */
    assert_int_equal(pdk_home_placeholders(f->state, "h", &p, 1, false, &err), 0);
    _cleanup_free_ char *kept_dir = xasprintf("%s/home-placeholders", f->state);
    assert_int_equal(access(kept_dir, F_OK), -1);
    assert_int_equal(pdk_home_placeholders(f->state, "h", &p, 1, true, &err), 0);
    char first[PDK_PLACEHOLDER_RANDOM_HEX + 1];
    memcpy(first, p.random, sizeof(first));
    _cleanup_free_ char *file = xasprintf("%s/h.json", kept_dir);
    struct stat st;
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(pdk_home_placeholders(f->state, "h", &p, 1, true, &err), 0);
    assert_string_equal(p.random, first);
    /* forgetting the secret: a new one next time */
    size_t n = 0;
    assert_int_equal(pdk_home_placeholders_forget(f->state, "api", &n, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(pdk_home_placeholders(f->state, "h", &p, 1, true, &err), 0);
    assert_string_not_equal(p.random, first);
    /* the home removed and made again: another home */
    memcpy(first, p.random, sizeof(first));
    pdk_rm_rf_at(AT_FDCWD, dir);
    free(dir);
    assert_int_equal(pdk_home_prepare(f->state, "h", none, &dir, &parents, &err), 0);
    pdk_strv_free(parents);
    free(dir);
    assert_int_equal(pdk_home_placeholders(f->state, "h", &p, 1, true, &err), 0);
    assert_string_not_equal(p.random, first);
    /* a damaged file: named, with the fix */
    assert_int_equal(pdk_write_file_atomic(AT_FDCWD, file, "garbage", 7, 0600, false), 0);
    assert_int_equal(pdk_home_placeholders(f->state, "h", &p, 1, true, &err), -1);
    assert_non_null(strstr(err.message, "h.json is damaged (remove it"));
    /* a home that is not there */
    assert_int_equal(pdk_home_placeholders(f->state, "nope", &p, 1, true, &err), -1);
    assert_non_null(strstr(err.message, "persistent home"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(t_prepare, setup, teardown),
        cmocka_unit_test_setup_teardown(t_prepare_refuses, setup, teardown),
        cmocka_unit_test(t_apply),
        cmocka_unit_test(t_drop),
        cmocka_unit_test_setup_teardown(t_kept_on_disk, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
