/* test_gitconfig.c: reading a value of a git configuration (gitconfig.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gitconfig.h"

#include <stdlib.h>
#include <string.h>

/* core.hooksPath of text: the value, "(unset)" or "(error)". */
static char *hooks_path(const char *text)
{
    char *v = NULL;
    int r = pdk_git_config_get(text, strlen(text), "core", "hookspath", &v);
    if (r < 0) {
        assert_null(v);
        return xstrdup("(error)");
    }
    if (r == 0) {
        assert_null(v);
        return xstrdup("(unset)");
    }
    return v;
}

#define assert_hooks(text, want)                                                                   \
    do {                                                                                           \
        char *got_ = hooks_path(text);                                                             \
        assert_string_equal(got_, want);                                                           \
        free(got_);                                                                                \
    } while (0)

static void t_plain(void **state)
{
    assert_hooks("[core]\n\thooksPath = .husky/_\n", ".husky/_");
    assert_hooks("[CORE]\n\tHOOKSPATH=hooks\n", "hooks");
    assert_hooks("[core] hooksPath = on-the-header-line\n", "on-the-header-line");
    assert_hooks("", "(unset)");
    assert_hooks("[core]\n\tbare = false\n", "(unset)");
    /* the last one wins; a boolean (no "=") is no string */
    assert_hooks("[core]\nhooksPath = a\n[core]\nhooksPath = b\n", "b");
    assert_hooks("[core]\nhooksPath = a\nhooksPath\n", "(unset)");
    /* CRLF lines */
    assert_hooks("[core]\r\n\thooksPath = crlf\r\n", "crlf");
}

static void t_sections(void **state)
{
    /* a subsection is not the section */
    assert_hooks("[core \"x\"]\nhooksPath = no\n", "(unset)");
    assert_hooks("[core.x]\nhooksPath = no\n", "(unset)");
    assert_hooks("[remote \"origin\"]\nhooksPath = no\n[core]\nhooksPath = yes\n", "yes");
    assert_hooks("[user]\nhooksPath = no\n", "(unset)");
    assert_hooks("[core \"a\\\"b\"]\nhooksPath = no\n[core]\nhooksPath = yes", "yes");
}

static void t_values(void **state)
{
    assert_hooks("[core]\nhooksPath = \"  spaced  \" # comment\n", "  spaced  ");
    assert_hooks("[core]\nhooksPath = a  b\t c ; comment\n", "a  b  c");
    assert_hooks("[core]\nhooksPath = \"a#b;c\"\n", "a#b;c");
    assert_hooks("[core]\nhooksPath = a\\\nb\n", "ab");
    assert_hooks("[core]\nhooksPath = \"q\\\"\\\\\\tx\"\n", "q\"\\\tx");
    /* comments and blank lines anywhere */
    assert_hooks("# top\n; also\n\n[core] ; here\n  # there\n  hooksPath = h # after\n", "h");
}

static void t_malformed(void **state)
{
    assert_hooks("[core\nhooksPath = x\n", "(error)");
    assert_hooks("[core]\nhooksPath = \"open\n", "(error)");
    assert_hooks("[core]\nhooksPath = bad\\q\n", "(error)");
    assert_hooks("[core]\n1key = x\n", "(error)");
    assert_hooks("[core]\nhooksPath x\n", "(error)");
    assert_hooks("[co re]\n", "(error)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_plain),
        cmocka_unit_test(t_sections),
        cmocka_unit_test(t_values),
        cmocka_unit_test(t_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
