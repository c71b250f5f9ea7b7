/* test_exec_target.c: what an exec really runs (exec_target.h), resolved for this test's own
 * process: symlink chains and their names, relative paths, fds (O_PATH, AT_EMPTY_PATH,
 * /proc/self/fd/N, /dev/fd/N), files with no name (memfd, unlinked), what is missing, the
 * identity of a copy, a script's interpreter and the dynamic loader's program; and the
 * parsers of interpreter lines and of the loader's options. */
#include "exec_target.h"
#include "fsutil.h"
#include "util.h"

#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cmocka.h>

#define ARGV(...) ((char *const[]){__VA_ARGS__, NULL})

static void test_shebang(void **state)
{
    char *interp, *arg;
    const char *s = "#!/bin/sh\necho hi\n";
    assert_true(pdk_exec_parse_shebang(s, strlen(s), &interp, &arg));
    assert_string_equal(interp, "/bin/sh");
    assert_null(arg);
    free(interp);
    s = "#! \t/usr/bin/env  python3 -u \t\r\nprint(1)\n";
    assert_true(pdk_exec_parse_shebang(s, strlen(s), &interp, &arg));
    assert_string_equal(interp, "/usr/bin/env");
    assert_string_equal(arg, "python3 -u"); /* one argument, as the kernel gives it */
    free(interp);
    free(arg);
    /* a short file without a newline: the file ends the line */
    s = "#!/usr/bin/perl";
    assert_true(pdk_exec_parse_shebang(s, strlen(s), &interp, &arg));
    assert_string_equal(interp, "/usr/bin/perl");
    free(interp);
    /* not scripts, or no interpreter */
    static const char *const no[] = {"",
                                     "#",
                                     "#/bin/sh\n",
                                     "\x7f"
                                     "ELF",
                                     "#!\n",
                                     "#!   \n",
                                     NULL};
    for (size_t i = 0; no[i]; i++) {
        assert_false(pdk_exec_parse_shebang(no[i], strlen(no[i]), &interp, &arg));
        assert_null(interp);
        assert_null(arg);
    }
    /* a full header whose interpreter name runs to its end is cut: the kernel refuses it */
    char full[PDK_EXEC_HEADER_SIZE];
    memset(full, 'a', sizeof(full));
    full[0] = '#';
    full[1] = '!';
    assert_false(pdk_exec_parse_shebang(full, sizeof(full), &interp, &arg));
    /* ... but not one whose argument does */
    full[10] = ' ';
    assert_true(pdk_exec_parse_shebang(full, sizeof(full), &interp, &arg));
    assert_int_equal(strlen(interp), 8);
    free(interp);
    free(arg);
}

static void test_loader(void **state)
{
    static const char *const loaders[] = {"ld-linux-x86-64.so.2",
                                          "ld-linux-aarch64.so.1",
                                          "ld-linux.so.2",
                                          "ld-musl-x86_64.so.1",
                                          "ld.so",
                                          "ld-2.36.so",
                                          NULL};
    for (size_t i = 0; loaders[i]; i++)
        assert_true(pdk_exec_is_loader_name(loaders[i]));
    static const char *const others[] = {"ld", "ldd", "ld.bfd", "ld-wrapper", "gold", "bash", NULL};
    for (size_t i = 0; others[i]; i++)
        assert_false(pdk_exec_is_loader_name(others[i]));
    const char *argv0;
    assert_int_equal(pdk_exec_loader_program(ARGV("ld.so", "/usr/bin/touch", "f"), &argv0), 1);
    assert_null(argv0);
    char *const *a =
        ARGV("ld.so", "--library-path", "/x", "--preload", "", "--audit", "a.so", "--inhibit-cache",
             "--argv0", "ls", "--inhibit-rpath", "", "--", "/usr/bin/touch", "f");
    assert_int_equal(pdk_exec_loader_program(a, &argv0), 13);
    assert_string_equal(argv0, "ls");
    /* --list and --verify load the program (judged as running it) */
    assert_int_equal(pdk_exec_loader_program(ARGV("ld.so", "--list", "/bin/ls"), &argv0), 2);
    /* these run none */
    assert_int_equal(pdk_exec_loader_program(ARGV("ld.so"), &argv0), 0);
    assert_int_equal(pdk_exec_loader_program(ARGV("ld.so", "--help"), &argv0), 0);
    assert_int_equal(pdk_exec_loader_program(ARGV("ld.so", "--version", "/bin/ls"), &argv0), 0);
    assert_int_equal(pdk_exec_loader_program(ARGV("ld.so", "--preload"), &argv0), 0);
    /* an option it does not know is the program's name to it */
    assert_int_equal(pdk_exec_loader_program(ARGV("ld.so", "--nope", "/bin/ls"), &argv0), 1);
}

/* ---- resolving for this process ---- */

static char dir[PATH_MAX];

static int setup_dir(void **state)
{
    char tmpl[] = "/tmp/paddock-exec-target.XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    assert_non_null(realpath(tmpl, dir));
    return 0;
}

static int teardown_dir(void **state)
{
    pdk_rm_rf_at(AT_FDCWD, dir);
    return 0;
}

static char *in_dir(const char *name)
{
    return xasprintf("%s/%s", dir, name);
}

static void write_file(const char *name, const char *content, mode_t mode)
{
    _cleanup_free_ char *p = in_dir(name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    assert_true(fd >= 0);
    assert_int_equal(pdk_write_all(fd, content, strlen(content)), 0);
    close(fd);
}

static bool has_name(const pdk_exec_subject *s, const char *name)
{
    for (size_t i = 0; s->names && s->names[i]; i++)
        if (strcmp(s->names[i], name) == 0)
            return true;
    return false;
}

static void resolve(int dirfd, const char *path, int flags, char *const *argv,
                    pdk_exec_known *known, pdk_exec_target *t)
{
    pdk_exec_call c = {.pid = getpid(), .dirfd = dirfd, .path = path, .flags = flags, .argv = argv};
    pdk_exec_target_resolve(&c, -1, known, t);
}

static void test_symlinks_and_paths(void **state)
{
    write_file("real",
               "\x7f"
               "ELF not really\n",
               0755);
    _cleanup_free_ char *real = in_dir("real"), *link = in_dir("link"), *link2 = in_dir("link2");
    assert_int_equal(symlink(real, link), 0);    /* absolute */
    assert_int_equal(symlink("link", link2), 0); /* relative */
    pdk_exec_target t;
    resolve(AT_FDCWD, link2, 0, ARGV("ls", "x"), NULL, &t);
    assert_int_equal(t.count, 1);
    assert_false(t.missing);
    assert_null(t.nameless);
    assert_string_equal(t.subjects[0].file, real);
    assert_string_equal(t.subjects[0].argv[0], "ls");
    assert_string_equal(t.subjects[0].argv[1], "x");
    assert_true(has_name(&t.subjects[0], link2));
    assert_true(has_name(&t.subjects[0], link));
    assert_true(has_name(&t.subjects[0], real));
    pdk_exec_target_free(&t);

    /* relative to the cwd, and to a directory fd */
    _cleanup_free_ char *cwd = getcwd(NULL, 0);
    assert_int_equal(chdir(dir), 0);
    resolve(AT_FDCWD, "./link2", 0, ARGV("x"), NULL, &t);
    assert_string_equal(t.subjects[0].file, real);
    assert_true(has_name(&t.subjects[0], "./link2"));
    pdk_exec_target_free(&t);
    assert_int_equal(chdir(cwd), 0);
    int d = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    resolve(d, "link", 0, ARGV("x"), NULL, &t);
    assert_string_equal(t.subjects[0].file, real);
    pdk_exec_target_free(&t);

    /* the fd itself (an O_PATH fd, AT_EMPTY_PATH), /proc/self/fd/N, /dev/fd/N */
    int p = open(link2, O_PATH | O_CLOEXEC);
    resolve(p, "", AT_EMPTY_PATH, ARGV("x"), NULL, &t);
    assert_string_equal(t.subjects[0].file, real);
    pdk_exec_target_free(&t);
    _cleanup_free_ char *via_proc = xasprintf("/proc/self/fd/%d", p);
    resolve(AT_FDCWD, via_proc, 0, ARGV("x"), NULL, &t);
    assert_string_equal(t.subjects[0].file, real);
    pdk_exec_target_free(&t);
    _cleanup_free_ char *via_dev = xasprintf("/dev/fd/%d", p);
    resolve(AT_FDCWD, via_dev, 0, ARGV("x"), NULL, &t);
    assert_string_equal(t.subjects[0].file, real);
    pdk_exec_target_free(&t);
    close(p);
    close(d);

    /* nothing there: missing, as the kernel would say */
    _cleanup_free_ char *none = in_dir("none"), *dangling = in_dir("dangling");
    assert_int_equal(symlink(none, dangling), 0);
    resolve(AT_FDCWD, none, 0, ARGV("x"), NULL, &t);
    assert_true(t.missing);
    pdk_exec_target_free(&t);
    resolve(AT_FDCWD, dangling, 0, ARGV("x"), NULL, &t);
    assert_true(t.missing);
    pdk_exec_target_free(&t);
}

static void test_nameless(void **state)
{
    int m = memfd_create("innocent", MFD_CLOEXEC);
    assert_true(m >= 0);
    pdk_exec_target t;
    resolve(m, "", AT_EMPTY_PATH, ARGV("ls"), NULL, &t);
    assert_non_null(t.nameless);
    assert_string_equal(t.nameless, "a memfd");
    pdk_exec_target_free(&t);
    _cleanup_free_ char *via_proc = xasprintf("/proc/self/fd/%d", m);
    resolve(AT_FDCWD, via_proc, 0, ARGV("ls"), NULL, &t);
    assert_non_null(t.nameless);
    pdk_exec_target_free(&t);
    close(m);
    /* an unlinked file, through its fd */
    write_file("gone", "x", 0755);
    _cleanup_free_ char *gone = in_dir("gone");
    int g = open(gone, O_RDONLY | O_CLOEXEC);
    assert_int_equal(unlink(gone), 0);
    resolve(g, "", AT_EMPTY_PATH, ARGV("ls"), NULL, &t);
    assert_non_null(t.nameless);
    assert_string_equal(t.nameless, "an unlinked file");
    pdk_exec_target_free(&t);
    close(g);
    /* a path through a magic link of /proc (the kernel would follow it, RESOLVE_IN_ROOT
     * does not): no name to judge */
    _cleanup_free_ char *through = xasprintf("/proc/self/root%s/real", dir);
    write_file("real", "x", 0755);
    resolve(AT_FDCWD, through, 0, ARGV("ls"), NULL, &t);
    assert_non_null(t.nameless);
    assert_false(t.missing);
    pdk_exec_target_free(&t);
}

static void test_identity(void **state)
{
    write_file("tool", "#!/bin/sh\necho the real tool\n", 0755);
    write_file("copy", "#!/bin/sh\necho the real tool\n", 0755);
    write_file("other", "#!/bin/sh\necho the real tooL\n", 0755); /* same size, other bytes */
    _cleanup_free_ char *tool = in_dir("tool"), *copy = in_dir("copy"), *other = in_dir("other"),
                        *hard = in_dir("hard");
    assert_int_equal(link(tool, hard), 0);
    pdk_exec_known *known = pdk_exec_known_new(ARGV("tool", "missing-tool"), dir);
    pdk_exec_target t;
    resolve(AT_FDCWD, copy, 0, ARGV("copy"), known, &t);
    assert_true(has_name(&t.subjects[0], "tool")); /* the same bytes */
    pdk_exec_target_free(&t);
    resolve(AT_FDCWD, hard, 0, ARGV("hard"), known, &t);
    assert_true(has_name(&t.subjects[0], "tool")); /* the same inode */
    pdk_exec_target_free(&t);
    resolve(AT_FDCWD, other, 0, ARGV("other"), known, &t);
    assert_false(has_name(&t.subjects[0], "tool"));
    pdk_exec_target_free(&t);
    pdk_exec_known_free(known);
}

static void test_interpreter_and_loader(void **state)
{
    write_file("interp",
               "\x7f"
               "ELF\n",
               0755);
    _cleanup_free_ char *interp = in_dir("interp"), *script = in_dir("script"),
                        *script2 = in_dir("script2"), *loader = in_dir("ld-linux-x86-64.so.2"),
                        *prog = in_dir("prog");
    _cleanup_free_ char *line = xasprintf("#!%s -x\nbody\n", interp);
    write_file("script", line, 0755);
    _cleanup_free_ char *line2 = xasprintf("#!%s\n", script); /* a script's script */
    write_file("script2", line2, 0755);
    pdk_exec_target t;
    resolve(AT_FDCWD, script, 0, ARGV("s", "a", "b"), NULL, &t);
    assert_int_equal(t.count, 2);
    assert_string_equal(t.subjects[1].role, "interpreter");
    assert_string_equal(t.subjects[1].file, interp);
    char *const *want = ARGV(interp, "-x", script, "a", "b");
    for (size_t i = 0; want[i]; i++)
        assert_string_equal(t.subjects[1].argv[i], want[i]);
    assert_null(t.subjects[1].argv[5]);
    pdk_exec_target_free(&t);
    resolve(AT_FDCWD, script2, 0, ARGV("s2"), NULL, &t);
    assert_int_equal(t.count, 3);
    assert_string_equal(t.subjects[2].file, interp);
    pdk_exec_target_free(&t);

    /* the loader, recognised by its name: its program and --argv0 */
    write_file("ld-linux-x86-64.so.2",
               "\x7f"
               "ELF loader\n",
               0755);
    write_file("prog",
               "\x7f"
               "ELF prog\n",
               0755);
    resolve(AT_FDCWD, loader, 0, ARGV("ls", "--argv0", "cat", prog, "f"), NULL, &t);
    assert_int_equal(t.count, 2);
    assert_string_equal(t.subjects[1].role, "program");
    assert_string_equal(t.subjects[1].file, prog);
    assert_string_equal(t.subjects[1].argv[0], "cat");
    assert_string_equal(t.subjects[1].argv[1], "f");
    assert_true(has_name(&t.subjects[1], prog));
    pdk_exec_target_free(&t);
}

/* A sourced file's text as a process sees it (pdk_exec_read_text), for this process. */
static void test_read_text(void **state)
{
    pid_t self = getpid();
    char *text = NULL;
    write_file("sourced-env.sh", "export A=1\n", 0644);
    _cleanup_free_ char *env = in_dir("sourced-env.sh"), *link = in_dir("sourced-env-link"),
                        *none = in_dir("sourced-none.sh"), *dangling = in_dir("sourced-dangling"),
                        *fifo = in_dir("sourced-fifo"), *stdin_link = in_dir("sourced-stdin-link"),
                        *nul = in_dir("sourced-nul"), *big = in_dir("sourced-big");
    assert_int_equal(symlink(env, link), 0);
    assert_int_equal(pdk_exec_read_text(self, env, 1024, &text), 0);
    assert_string_equal(text, "export A=1\n");
    free(text);
    assert_int_equal(pdk_exec_read_text(self, link, 1024, &text), 0);
    assert_string_equal(text, "export A=1\n");
    free(text);
    /* No such file: the shell's source fails, nothing runs. */
    assert_int_equal(pdk_exec_read_text(self, none, 1024, &text), 0);
    assert_null(text);
    /* A symlink that leads nowhere is not that: through /proc/self (/dev/stdin, a link to
     * /proc/self/fd/0) it is the caller's view, not the process's. */
    assert_int_equal(symlink(none, dangling), 0);
    assert_int_equal(pdk_exec_read_text(self, dangling, 1024, &text), -1);
    assert_int_equal(symlink("/proc/self/fd/0", stdin_link), 0);
    assert_int_equal(pdk_exec_read_text(self, stdin_link, 1024, &text), -1);
    assert_int_equal(pdk_exec_read_text(self, "/dev/stdin", 1024, &text), -1);
    assert_int_equal(pdk_exec_read_text(self, "/proc/self/status", 1024, &text), -1);
    /* Not a regular file (never blocks on a FIFO), a NUL byte, too large. */
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(pdk_exec_read_text(self, fifo, 1024, &text), -1);
    assert_int_equal(pdk_exec_read_text(self, dir, 1024, &text), -1);
    write_file("sourced-nul", "a", 0644);
    int fd = open(nul, O_WRONLY | O_APPEND | O_CLOEXEC);
    assert_int_equal(write(fd, "\0b", 2), 2);
    close(fd);
    assert_int_equal(pdk_exec_read_text(self, nul, 1024, &text), -1);
    write_file("sourced-big", "0123456789", 0644);
    assert_int_equal(pdk_exec_read_text(self, big, 9, &text), -1);
    assert_int_equal(pdk_exec_read_text(self, big, 10, &text), 0);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shebang),
        cmocka_unit_test(test_loader),
        cmocka_unit_test(test_symlinks_and_paths),
        cmocka_unit_test(test_nameless),
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_interpreter_and_loader),
        cmocka_unit_test(test_read_text),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
