/* test_error.c: the error regime (error.c) and the logger (log.c). An error's message is
 * one line with strerror appended when there is an errno, context added in front, cut to
 * fit at a character's boundary, and a name holding a newline or a control shown escaped;
 * a NULL error is allowed. A log line is one write on stderr, prefixed, below the level
 * dropped, with a registered secret redacted and a control character escaped whatever the
 * arguments held. A notice file's line splits into its fields and a torn one is refused. */
#include "error.h"
#include "log.h"
#include "redact.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static void t_set_and_prefix(void **state)
{
    (void)state;
    pdk_error err = {0};
    assert_int_equal(pdk_error_set(&err, ENOENT, "cannot open %s", "/x"), -1);
    assert_int_equal(err.code, ENOENT);
    char want[256];
    snprintf(want, sizeof(want), "cannot open /x: %s", strerror(ENOENT));
    assert_string_equal(err.message, want);
    assert_int_equal(pdk_error_prefix(&err, "policy %s", "p.yaml"), -1);
    snprintf(want, sizeof(want), "policy p.yaml: cannot open /x: %s", strerror(ENOENT));
    assert_string_equal(err.message, want);
    assert_int_equal(err.code, ENOENT); /* the prefix keeps the code */
    /* no errno: no ": strerror" */
    assert_int_equal(pdk_error_set(&err, 0, "plain"), -1);
    assert_int_equal(err.code, 0);
    assert_string_equal(err.message, "plain");
    pdk_error_clear(&err);
    assert_string_equal(err.message, "");
    /* no error to fill: still -1 */
    assert_int_equal(pdk_error_set(NULL, EIO, "x"), -1);
    assert_int_equal(pdk_error_prefix(NULL, "x"), -1);
    pdk_error_clear(NULL);
}

static void t_one_printable_line(void **state)
{
    (void)state;
    pdk_error err = {0};
    /* a path a sandbox chose, with a newline and an escape sequence in it */
    pdk_error_set(&err, 0, "cannot commit %s", "evil\nfile\x1b[2J");
    assert_null(strchr(err.message, '\n'));
    assert_null(strchr(err.message, '\x1b'));
    assert_non_null(strstr(err.message, "cannot commit evil"));
    assert_non_null(strstr(err.message, "file"));
    /* the prefix is checked too */
    pdk_error_set(&err, 0, "plain");
    pdk_error_prefix(&err, "in %s", "a\rb");
    assert_null(strchr(err.message, '\r'));
    assert_non_null(strstr(err.message, ": plain"));
}

static bool valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = *p < 0x80 ? 0 : (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : 3;
        p++;
        for (int i = 0; i < n; i++, p++)
            if ((*p & 0xc0) != 0x80)
                return false;
    }
    return true;
}

static void t_cut_to_fit(void **state)
{
    (void)state;
    pdk_error err = {0};
    /* far longer than the message: cut, terminated */
    char long_name[3000];
    memset(long_name, 'n', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    pdk_error_set(&err, ENOSPC, "%s", long_name);
    assert_true(strlen(err.message) < sizeof(err.message));
    /* a long prefix on a long message: the prefix first, still terminated */
    pdk_error_prefix(&err, "%s", "context");
    assert_true(pdk_str_has_prefix(err.message, "context: nnn"));
    assert_true(strlen(err.message) < sizeof(err.message));
    pdk_error_set(&err, 0, "short");
    pdk_error_prefix(&err, "%s", long_name);
    assert_true(strlen(err.message) < sizeof(err.message));
    /* escaped text that no longer fits is cut between characters, never inside one */
    pdk_buf b = {0};
    for (int i = 0; i < 600; i++)
        pdk_buf_puts(&b, i % 2 ? "\xe4\xb8\xad" : "\x01");
    pdk_error_set(&err, 0, "%s", b.data);
    assert_true(strlen(err.message) < sizeof(err.message));
    assert_true(valid_utf8(err.message));
    pdk_buf_free(&b);
}

/* stderr while fn runs. */
static char *stderr_of(void (*fn)(void))
{
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    int saved = dup(STDERR_FILENO);
    dup2(p[1], STDERR_FILENO);
    close(p[1]);
    fn();
    dup2(saved, STDERR_FILENO);
    close(saved);
    char *out = NULL;
    assert_int_equal(pdk_read_all(p[0], &out, NULL, 0), 0);
    close(p[0]);
    return out;
}

static void log_levels(void)
{
    pdk_log_set_level(PDK_LOG_WARN);
    pdk_warn("one %d", 1);
    pdk_info("hidden info");
    pdk_debug("hidden debug");
    pdk_log_set_level(PDK_LOG_DEBUG);
    pdk_debug("shown %s", "debug");
    pdk_log_set_level(PDK_LOG_WARN);
}

static void t_log_levels(void **state)
{
    (void)state;
    char *out = stderr_of(log_levels);
    assert_string_equal(out, "paddock: warning: one 1\npaddock: debug: shown debug\n");
    free(out);
}

static void log_secrets(void)
{
    pdk_redact_add("s3cr3t-value-123");
    pdk_warn("token %s sent", "s3cr3t-value-123");
    pdk_error_log("name: %s", "line\nnext\x1b]0;title\x07");
    pdk_redact_clear();
}

static void t_log_redacts_and_escapes(void **state)
{
    (void)state;
    char *out = stderr_of(log_secrets);
    assert_null(strstr(out, "s3cr3t-value-123"));
    assert_non_null(strstr(out, "paddock: warning: token " PDK_REDACTED " sent\n"));
    /* two calls, two lines: the newline inside the name is not a third */
    size_t lines = 0;
    for (const char *p = out; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 2);
    assert_null(strchr(out, '\x1b'));
    assert_null(strchr(out, '\x07'));
    assert_non_null(strstr(out, "paddock: name: line"));
    free(out);
}

static void t_notice_line_parse(void **state)
{
    (void)state;
    pdk_notice_line l;
    assert_int_equal(
        pdk_notice_line_parse("2026-12-01 09:30:00 fix exec-refused rm -rf / (a rule)", &l), 0);
    assert_string_equal(l.time, "2026-12-01 09:30:00");
    assert_string_equal(l.session, "fix");
    assert_string_equal(l.kind, "exec-refused");
    assert_string_equal(l.text, "rm -rf / (a rule)");
    /* an empty text is a line */
    assert_int_equal(pdk_notice_line_parse("2026-12-01 09:30:00 s warning ", &l), 0);
    assert_string_equal(l.text, "");
    /* torn or foreign lines */
    const char *bad[] = {
        "",
        "2026-12-01 09:30:00",
        "2026-12-01 09:30:00 ",
        "2026-12-01 09:30:00 session",
        "2026-12-01 09:30:00 session kind",
        "2026-12-01 09:30:00  kind text",
        "2026-12-01T09:30:00 s k t",
        "garbage line that is long enough",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(pdk_notice_line_parse(bad[i], &l), -1);
    /* a session or kind too long for its field */
    char longer[300];
    snprintf(longer, sizeof(longer), "2026-12-01 09:30:00 %0100d kind text", 0);
    assert_int_equal(pdk_notice_line_parse(longer, &l), -1);
    snprintf(longer, sizeof(longer), "2026-12-01 09:30:00 s %030d text", 0);
    assert_int_equal(pdk_notice_line_parse(longer, &l), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_set_and_prefix),
        cmocka_unit_test(t_one_printable_line),
        cmocka_unit_test(t_cut_to_fit),
        cmocka_unit_test(t_log_levels),
        cmocka_unit_test(t_log_redacts_and_escapes),
        cmocka_unit_test(t_notice_line_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
