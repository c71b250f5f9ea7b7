/* test_output.c: the output sink (output.c): a registered secret never shows, a control
 * or hiding character is escaped, every line is one write ending in one newline, a prompt
 * has none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "output.h"
#include "redact.h"
#include "util.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What one call of fn wrote on a pipe, and in how many reads. */
static char *written(void (*fn)(int fd), size_t *reads)
{
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    fn(p[1]);
    close(p[1]);
    pdk_buf b = {0};
    char chunk[4096];
    ssize_t n;
    *reads = 0;
    while ((n = read(p[0], chunk, sizeof(chunk))) > 0) {
        pdk_buf_append(&b, chunk, (size_t)n);
        (*reads)++;
    }
    close(p[0]);
    return b.data ? pdk_buf_steal(&b) : xstrdup("");
}

static void write_secret_line(int fd)
{
    pdk_outputf(fd, 0, "paddock: token %s in \x1b[2J%s\n", "s3cr3t-value-1234", "a\xe2\x80\xae" "b");
}

static void write_prompt(int fd)
{
    pdk_output(fd, PDK_OUTPUT_PROMPT, "paddock: run `x`? [y]es: ");
}

static void write_two_lines(int fd)
{
    pdk_output(fd, 0, "one\ntwo");
}

static void test_redacted_escaped_one_line(void **state)
{
    (void)state;
    pdk_redact_add("s3cr3t-value-1234");
    size_t reads;
    char *out = written(write_secret_line, &reads);
    assert_string_equal(out, "paddock: token [REDACTED] in \\x1b[2Ja\\u202eb\n");
    assert_int_equal(reads, 1);
    free(out);
    char *shown = pdk_output_shown("x s3cr3t-value-1234\n");
    assert_string_equal(shown, "x [REDACTED]");
    free(shown);
    pdk_redact_clear();
}

static void test_prompt_and_newlines(void **state)
{
    (void)state;
    size_t reads;
    char *out = written(write_prompt, &reads);
    assert_string_equal(out, "paddock: run `x`? [y]es: ");
    free(out);
    out = written(write_two_lines, &reads);
    assert_string_equal(out, "one\\ntwo\n"); /* one line, whatever it holds */
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redacted_escaped_one_line),
        cmocka_unit_test(test_prompt_and_newlines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
