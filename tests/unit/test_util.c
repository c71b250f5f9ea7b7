/* test_util.c: the small helpers every module leans on. Integers parse whole or not at all
 * and out of range is ERANGE; buffers stay NUL-terminated whatever they grow by; a replace
 * finds every needle, overlapping neighbours included, and an empty needle changes nothing;
 * string vectors copy, view and push as they say; reading stops at the limit with EFBIG;
 * a process's stat is read right when its name holds spaces and parentheses; a probe in a
 * child reports its errno and leaves the caller as it was. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static void t_parse_int64(void **state)
{
    (void)state;
    int64_t v = 7;
    assert_int_equal(pdk_parse_int64("42", 0, 100, &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(pdk_parse_int64("-5", -10, 10, &v), 0);
    assert_int_equal(v, -5);
    /* the bounds are inclusive */
    assert_int_equal(pdk_parse_int64("100", 0, 100, &v), 0);
    assert_int_equal(pdk_parse_int64("0", 0, 100, &v), 0);
    /* not a number, or a number with something after it: EINVAL, *out untouched */
    v = 7;
    const char *bad[] = {"", "abc", "12x", "1 2", "0x10", "-", "1.5", "12 "};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        errno = 0;
        assert_int_equal(pdk_parse_int64(bad[i], 0, 100, &v), -1);
        assert_int_equal(errno, EINVAL);
        assert_int_equal(v, 7);
    }
    errno = 0;
    assert_int_equal(pdk_parse_int64(NULL, 0, 100, &v), -1);
    assert_int_equal(errno, EINVAL);
    /* out of the range asked for, or of int64 itself: ERANGE */
    const char *far[] = {"101", "-1", "99999999999999999999", "-99999999999999999999"};
    for (size_t i = 0; i < sizeof(far) / sizeof(far[0]); i++) {
        errno = 0;
        assert_int_equal(pdk_parse_int64(far[i], 0, 100, &v), -1);
        assert_int_equal(errno, ERANGE);
        assert_int_equal(v, 7);
    }
    assert_int_equal(pdk_parse_int64("9223372036854775807", 0, INT64_MAX, &v), 0);
    assert_true(v == INT64_MAX);
}

static void t_buf_grows_and_stays_terminated(void **state)
{
    (void)state;
    pdk_buf b = {0};
    /* an empty append still gives a string */
    pdk_buf_append(&b, "", 0);
    assert_non_null(b.data);
    assert_string_equal(b.data, "");
    /* many small and one big growth: every byte kept, one NUL after them */
    for (int i = 0; i < 1000; i++)
        pdk_buf_printf(&b, "%d,", i % 10);
    assert_int_equal(b.len, 2000);
    assert_int_equal(strlen(b.data), b.len);
    assert_true(b.cap > b.len);
    char big[70000];
    memset(big, 'x', sizeof(big));
    pdk_buf_append(&b, big, sizeof(big));
    assert_int_equal(b.len, 2000 + sizeof(big));
    assert_int_equal(b.data[b.len], '\0');
    assert_memory_equal(b.data, "0,1,2,", 6);
    /* bytes with a NUL among them are appended whole */
    pdk_buf c = {0};
    pdk_buf_append(&c, "a\0b", 3);
    assert_int_equal(c.len, 3);
    assert_memory_equal(c.data, "a\0b", 4);
    char *s = pdk_buf_steal(&c);
    assert_null(c.data);
    assert_int_equal(c.len, 0);
    free(s);
    /* stealing an empty buffer is an empty string, not NULL */
    s = pdk_buf_steal(&c);
    assert_string_equal(s, "");
    free(s);
    pdk_buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
}

static char *replaced(const char *s, const char *needle, const char *with, size_t *count)
{
    pdk_buf out = {0};
    *count = pdk_buf_replace_all(&out, s, strlen(s), needle, with);
    return pdk_buf_steal(&out);
}

static void t_replace_all(void **state)
{
    (void)state;
    size_t n;
    char *r = replaced("a-SECRET-b-SECRET", "SECRET", "[X]", &n);
    assert_string_equal(r, "a-[X]-b-[X]");
    assert_int_equal(n, 2);
    free(r);
    /* needles back to back, at both ends */
    r = replaced("SSSS", "SS", "t", &n);
    assert_string_equal(r, "tt");
    assert_int_equal(n, 2);
    free(r);
    /* an overlap is replaced once, from the left */
    r = replaced("aaa", "aa", "b", &n);
    assert_string_equal(r, "ba");
    assert_int_equal(n, 1);
    free(r);
    /* the replacement holding the needle is not replaced again */
    r = replaced("xy", "x", "xx", &n);
    assert_string_equal(r, "xxy");
    assert_int_equal(n, 1);
    free(r);
    /* an empty needle replaces nothing (it would match everywhere) */
    r = replaced("abc", "", "Z", &n);
    assert_string_equal(r, "abc");
    assert_int_equal(n, 0);
    free(r);
    /* a needle after a NUL within len is found: the input is bytes */
    pdk_buf out = {0};
    n = pdk_buf_replace_all(&out, "a\0key", 5, "key", "K");
    assert_int_equal(n, 1);
    assert_int_equal(out.len, 3);
    assert_memory_equal(out.data, "a\0K", 3);
    pdk_buf_free(&out);
}

static void t_strv(void **state)
{
    (void)state;
    char **v = NULL;
    assert_int_equal(pdk_strv_length(v), 0);
    assert_false(pdk_strv_contains(v, "a"));
    pdk_strv_push(&v, "a");
    pdk_strv_push_take(&v, xstrdup("b"));
    char s[] = "c";
    pdk_strv_push(&v, s);
    s[0] = 'z'; /* push copied it */
    assert_int_equal(pdk_strv_length(v), 3);
    assert_string_equal(v[2], "c");
    assert_null(v[3]);
    assert_true(pdk_strv_contains(v, "b"));
    assert_false(pdk_strv_contains(v, "z"));
    char **copy = pdk_strv_copy(v);
    assert_int_equal(pdk_strv_length(copy), 3);
    assert_ptr_not_equal(copy[0], v[0]);
    assert_string_equal(copy[1], "b");
    /* a view: head's non-NULL words, then rest's, the same pointers */
    const char *head[] = {"env", NULL, "-i"};
    char **view = pdk_strv_view(head, 3, v);
    assert_int_equal(pdk_strv_length(view), 5);
    assert_ptr_equal(view[0], head[0]);
    assert_ptr_equal(view[1], head[2]);
    assert_ptr_equal(view[2], v[0]);
    assert_ptr_equal(view[4], v[2]);
    free(view);
    char **empty_view = pdk_strv_view(head, 0, NULL);
    assert_null(empty_view[0]);
    free(empty_view);
    char **none = pdk_strv_copy(NULL);
    assert_non_null(none);
    assert_null(none[0]);
    pdk_strv_free(none);
    pdk_strv_free(copy);
    pdk_strv_free(v);
}

static void t_strings(void **state)
{
    (void)state;
    assert_true(pdk_str_has_prefix("abc", ""));
    assert_true(pdk_str_has_prefix("abc", "abc"));
    assert_false(pdk_str_has_prefix("ab", "abc"));
    assert_true(pdk_str_has_suffix("abc", "bc"));
    assert_true(pdk_str_has_suffix("abc", ""));
    assert_false(pdk_str_has_suffix("c", "bc"));
    assert_true(pdk_streq(NULL, NULL));
    assert_false(pdk_streq("a", NULL));
    assert_false(pdk_streq(NULL, "a"));
    assert_true(pdk_streq("a", "a"));
    /* the characters of session and secret names: nothing a path or shell treats specially */
    const char *ok = "azAZ09._-";
    for (const char *p = ok; *p; p++)
        assert_true(pdk_name_char(*p));
    const char *bad = "/ \t\n:;$`'\"\\*?[]{}~!@#%^&()=+,<>|";
    for (const char *p = bad; *p; p++)
        assert_false(pdk_name_char(*p));
    assert_false(pdk_name_char(0x80));
    assert_false(pdk_name_char(0));
    for (int c = 0; c < 256; c++) {
        int v = pdk_hex_value(c);
        const char *digits = "0123456789abcdef";
        const char *at = c ? strchr(digits, c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c) : NULL;
        assert_int_equal(v, at ? (int)(at - digits) : -1);
    }
    char *s = xasprintf("%s-%d", "x", 5);
    assert_string_equal(s, "x-5");
    free(s);
    s = xstrndup("abcdef", 3);
    assert_string_equal(s, "abc");
    free(s);
    s = xstrndup("ab", 10);
    assert_string_equal(s, "ab");
    free(s);
}

static void t_sha256(void **state)
{
    (void)state;
    char a[65], b[65], c[65];
    pdk_sha256_hex("abc", 3, a);
    pdk_sha256_hex("abd", 3, b);
    pdk_sha256_hex("abc", 3, c);
    assert_int_equal(strlen(a), 64);
    assert_string_equal(a, c);
    assert_string_not_equal(a, b);
    for (size_t i = 0; i < 64; i++)
        assert_non_null(strchr("0123456789abcdef", a[i]));
    /* the standard's test vector for "abc" (a digest of the wrong algorithm differs) */
    assert_string_equal(a, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void t_read_all_limit(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    char data[10000];
    memset(data, 'q', sizeof(data));
    assert_int_equal(pdk_write_all(p[1], data, sizeof(data)), 0);
    close(p[1]);
    char *out = NULL;
    size_t len = 0;
    errno = 0;
    assert_int_equal(pdk_read_all(p[0], &out, &len, 9999), -1);
    assert_int_equal(errno, EFBIG);
    assert_null(out);
    close(p[0]);

    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    assert_int_equal(pdk_write_all(p[1], data, sizeof(data)), 0);
    close(p[1]);
    /* exactly at the limit is fine */
    assert_int_equal(pdk_read_all(p[0], &out, &len, sizeof(data)), 0);
    assert_int_equal(len, sizeof(data));
    assert_int_equal(out[len], '\0');
    free(out);
    close(p[0]);

    /* a file that is not there: -1 with ENOENT, nothing allocated */
    out = NULL;
    errno = 0;
    assert_int_equal(pdk_read_file_at(AT_FDCWD, "/nonexistent/paddock-test", &out, NULL, 0), -1);
    assert_int_equal(errno, ENOENT);
    assert_null(out);
    /* pdk_write_file_at never creates a file */
    char dir[] = "/tmp/paddock-util-test.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/new", dir);
    assert_int_equal(pdk_write_file_at(AT_FDCWD, path, "x"), -1);
    assert_int_equal(access(path, F_OK), -1);
    rmdir(dir);
}

static void t_proc_stat_odd_names(void **state)
{
    (void)state;
    /* a name with ") " and "(" in it: the stat's fields after it still parse */
    int ready[2], go[2];
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
    assert_int_equal(pipe2(go, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_NAME, "a) 1 2 (b) x", 0, 0, 0);
        (void)!write(ready[1], "r", 1);
        char c;
        (void)!read(go[0], &c, 1);
        _exit(0);
    }
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    pdk_proc_stat st;
    assert_true(pdk_proc_stat_read(pid, &st));
    assert_string_equal(st.comm, "a) 1 2 (b) x");
    assert_int_equal(st.ppid, getpid());
    assert_true(st.start > 0);
    pdk_proc_stat self;
    assert_true(pdk_proc_stat_read(getpid(), &self));
    assert_true(st.start >= self.start);
    (void)!write(go[1], "g", 1);
    waitpid(pid, NULL, 0);
    /* gone: false */
    assert_false(pdk_proc_stat_read(pid, &st));
    close(ready[0]);
    close(ready[1]);
    close(go[0]);
    close(go[1]);
}

static int returns_errno(void *arg)
{
    return *(int *)arg;
}

static int changes_itself(void *arg)
{
    (void)arg;
    /* what a probe does to the process it runs in must not reach the caller */
    signal(SIGUSR1, SIG_IGN);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    return 0;
}

static int dies(void *arg)
{
    (void)arg;
    raise(SIGKILL);
    return 0;
}

static void t_errno_in_child(void **state)
{
    (void)state;
    int e = EPERM;
    assert_int_equal(pdk_errno_in_child(returns_errno, &e), EPERM);
    e = 0;
    assert_int_equal(pdk_errno_in_child(returns_errno, &e), 0);
    assert_int_equal(pdk_errno_in_child(changes_itself, NULL), 0);
    assert_int_equal(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 0);
    /* a child killed by a signal is a failure, never success */
    assert_int_equal(pdk_errno_in_child(dies, NULL), EINTR);
}

static void t_clocks(void **state)
{
    (void)state;
    uint64_t a = pdk_now_monotonic_ns(), b = pdk_now_monotonic_ns();
    assert_true(b >= a);
    /* the wall clock is in nanoseconds since 1970: after 2020, before 2200 */
    int64_t now = pdk_now_realtime_ns();
    assert_true(now > INT64_C(1577836800) * 1000000000);
    assert_true(now < INT64_C(7258118400) * 1000000000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_parse_int64),    cmocka_unit_test(t_buf_grows_and_stays_terminated),
        cmocka_unit_test(t_replace_all),    cmocka_unit_test(t_strv),
        cmocka_unit_test(t_strings),        cmocka_unit_test(t_sha256),
        cmocka_unit_test(t_read_all_limit), cmocka_unit_test(t_proc_stat_odd_names),
        cmocka_unit_test(t_errno_in_child), cmocka_unit_test(t_clocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
