/* test_fsutil.c: pdk_write_file_once, the writer of the files many runs bind at once
 * (resolv.conf, the CA bundle): a file that holds the content is left as it is (the same
 * file, not rewritten), one that does not (missing, other content, torn) is replaced whole
 * with the mode asked for, and while writers replace it readers only ever read one whole
 * content or the other; nothing but its lock is left beside it. */
#include "fsutil.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct fixture {
    char dir[64];
    int dirfd;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/paddock-fsutil-test.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    f->dirfd = open(f->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    *state = f;
    return f->dirfd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    close(f->dirfd);
    pdk_rm_rf_at(AT_FDCWD, f->dir);
    free(f);
    return 0;
}

/* Two contents of the size of a CA bundle, different all along. */
static char *content(char fill, size_t len)
{
    char *s = xmalloc(len);
    for (size_t i = 0; i < len; i++)
        s[i] = i % 64 == 63 ? '\n' : fill;
    return s;
}

static void expect_holds(fixture *f, const char *name, const char *want, size_t len)
{
    _cleanup_free_ char *text = NULL;
    size_t have = 0;
    assert_int_equal(pdk_read_file_at(f->dirfd, name, &text, &have, 0), 0);
    assert_int_equal(have, len);
    assert_memory_equal(text, want, len);
}

/* The names in the directory besides name and its lock, joined by spaces. */
static void expect_nothing_else(fixture *f, const char *name)
{
    DIR *d = opendir(f->dir);
    assert_non_null(d);
    char lock[128], others[512] = "";
    snprintf(lock, sizeof(lock), ".paddock.%s.lock", name);
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, name) &&
            strcmp(de->d_name, lock))
            snprintf(others + strlen(others), sizeof(others) - strlen(others), "%s ", de->d_name);
    closedir(d);
    assert_string_equal(others, "");
}

static void test_written_only_when_different(void **state)
{
    fixture *f = *state;
    enum { LEN = 200000 };
    _cleanup_free_ char *a = content('a', LEN);
    _cleanup_free_ char *b = content('b', LEN);
    mode_t old_mask = umask(077);
    assert_int_equal(pdk_write_file_once(f->dirfd, "bundle.pem", a, LEN, 0644), 0);
    umask(old_mask);
    expect_holds(f, "bundle.pem", a, LEN);
    char path[128];
    snprintf(path, sizeof(path), "%s/bundle.pem", f->dir);
    struct stat first, again;
    assert_int_equal(stat(path, &first), 0);
    assert_int_equal(first.st_mode & 07777, 0644); /* the mode asked for, whatever the umask */

    /* Holding it: left alone (the same file, even with an old time on it). */
    struct timespec old[2] = {{.tv_sec = 946684800}, {.tv_sec = 946684800}};
    assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
    assert_int_equal(pdk_write_file_once(f->dirfd, "bundle.pem", a, LEN, 0644), 0);
    assert_int_equal(stat(path, &again), 0);
    assert_int_equal(again.st_ino, first.st_ino);
    assert_int_equal(again.st_mtim.tv_sec, 946684800);

    /* Torn (the first half, as a crash leaves it): replaced whole. */
    assert_int_equal(truncate(path, LEN / 2), 0);
    assert_int_equal(pdk_write_file_once(f->dirfd, "bundle.pem", a, LEN, 0644), 0);
    expect_holds(f, "bundle.pem", a, LEN);

    /* Other content: replaced. */
    assert_int_equal(pdk_write_file_once(f->dirfd, "bundle.pem", b, LEN, 0644), 0);
    expect_holds(f, "bundle.pem", b, LEN);
    expect_nothing_else(f, "bundle.pem");
}

static void test_readers_see_whole_files(void **state)
{
    fixture *f = *state;
    enum { LEN = 200000, WRITERS = 8, ROUNDS = 40 };
    _cleanup_free_ char *a = content('a', LEN);
    _cleanup_free_ char *b = content('b', LEN);
    assert_int_equal(pdk_write_file_once(f->dirfd, "bundle.pem", a, LEN, 0644), 0);
    int done[2];
    assert_int_equal(pipe(done), 0);
    /* A reader, until the writers are done: every read is a or b, whole. */
    pid_t reader = fork();
    assert_true(reader >= 0);
    if (reader == 0) {
        close(done[1]);
        fcntl(done[0], F_SETFL, fcntl(done[0], F_GETFL) | O_NONBLOCK);
        int bad = 0, reads = 0;
        for (;;) {
            _cleanup_free_ char *text = NULL;
            size_t have = 0;
            if (pdk_read_file_at(f->dirfd, "bundle.pem", &text, &have, 0) < 0 || have != LEN ||
                (memcmp(text, a, LEN) != 0 && memcmp(text, b, LEN) != 0))
                bad++;
            reads++;
            char c;
            if (read(done[0], &c, 1) == 0) /* (non-blocking: -1 while the writers go on) */
                break;
        }
        _exit(bad == 0 && reads > 0 ? 0 : 1);
    }
    close(done[0]);
    /* Writers, each turning it into a or b in turn. */
    pid_t writers[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        writers[w] = fork();
        assert_true(writers[w] >= 0);
        if (writers[w] == 0) {
            for (int r = 0; r < ROUNDS; r++) {
                const char *want = (r + w) % 2 ? a : b;
                if (pdk_write_file_once(f->dirfd, "bundle.pem", want, LEN, 0644) < 0)
                    _exit(1);
            }
            _exit(0);
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        int status = 0;
        assert_int_equal(waitpid(writers[w], &status, 0), writers[w]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    close(done[1]);
    int status = 0;
    assert_int_equal(waitpid(reader, &status, 0), reader);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    expect_nothing_else(f, "bundle.pem");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_written_only_when_different, setup, teardown),
        cmocka_unit_test_setup_teardown(test_readers_see_whole_files, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
