/* test_shell.c: the shell splitter (src/libpaddock/shell.c).
 *
 * Each test splits a script and compares the exact argv (and assignments) of every listed
 * command, or the exact reason of an unreducible script. The .c is included so that the
 * test does not depend on the library's source list.
 */
#include "shell.h"
#include "util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define W(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NONE   ((const char *const[]){NULL})

static void assert_strv(char *const *got, const char *const *want)
{
    assert_non_null(got);
    size_t i = 0;
    for (; want[i]; i++) {
        if (!got[i])
            fail_msg("word %zu: got end of vector, want \"%s\"", i, want[i]);
        assert_string_equal(got[i], want[i]);
    }
    if (got[i])
        fail_msg("word %zu: got extra \"%s\"", i, got[i]);
}

static pdk_shell_split_t split_ok(const char *script, size_t count)
{
    pdk_shell_split_t s;
    pdk_shell_split(script, &s);
    if (!s.reducible)
        fail_msg("not reducible (%s): %s", s.reason, script);
    assert_null(s.reason);
    if (s.count != count) {
        for (size_t i = 0; i < s.count; i++)
            print_error("command %zu: %s\n", i, s.commands[i].argv[0]);
        fail_msg("got %zu commands, want %zu: %s", s.count, count, script);
    }
    return s;
}

static void assert_cmd(const pdk_shell_split_t *s, size_t i, const char *const *argv)
{
    assert_true(i < s->count);
    assert_strv(s->commands[i].argv, argv);
}

static void assert_env(const pdk_shell_split_t *s, size_t i, const char *const *assignments)
{
    assert_true(i < s->count);
    assert_strv(s->commands[i].assignments, assignments);
}

static void assert_unreducible(const char *script, const char *reason)
{
    pdk_shell_split_t s;
    pdk_shell_split(script, &s);
    if (s.reducible)
        fail_msg("reducible (%zu commands), want \"%s\": %s", s.count, reason, script);
    assert_non_null(s.reason);
    if (strcmp(s.reason, reason) != 0)
        fail_msg("reason \"%s\", want \"%s\": %s", s.reason, reason, script);
    assert_int_equal(s.count, 0);
    assert_null(s.commands);
    pdk_shell_split_free(&s);
    assert_null(s.reason);
}

/* One command: split_ok + assert_cmd + free. */
static void assert_one(const char *script, const char *const *argv)
{
    pdk_shell_split_t s = split_ok(script, 1);
    assert_cmd(&s, 0, argv);
    assert_env(&s, 0, NONE);
    pdk_shell_split_free(&s);
}

static void t_simple(void **state)
{
    assert_one("ls -la /tmp", W("ls", "-la", "/tmp"));
    assert_one("  \tgit   status  ", W("git", "status"));
    assert_one("make", W("make"));
    pdk_shell_split_t s = split_ok("", 0);
    assert_true(s.reducible);
    pdk_shell_split_free(&s);
    s = split_ok("  \n\n  ", 0);
    pdk_shell_split_free(&s);
    pdk_shell_split_free(&s); /* idempotent */
    pdk_shell_split_free(NULL);
}

static void t_quoting(void **state)
{
    assert_one("echo 'a b' \"c d\"", W("echo", "a b", "c d"));
    assert_one("echo 'a'\"b\"c", W("echo", "abc"));
    assert_one("echo \"\" ''", W("echo", "", ""));
    assert_one("echo a\\ b \\$HOME \\\\", W("echo", "a b", "$HOME", "\\"));
    assert_one("echo \"\\\" \\\\ \\$ \\` \\n\"", W("echo", "\" \\ $ ` \\n"));
    assert_one("echo 'it'\\''s'", W("echo", "it's"));
    assert_one("echo '$HOME \"x\" \\n'", W("echo", "$HOME \"x\" \\n"));
    assert_one("echo \"a\\\nb\"", W("echo", "ab"));
    /* Quote removal applies to the command name too. */
    assert_one("'r'm -f x", W("rm", "-f", "x"));
    assert_one("r\"\"m -f x", W("rm", "-f", "x"));
    assert_one("\\rm x", W("rm", "x"));
    /* Operators inside quotes are text. */
    assert_one("echo 'a && b | c' \"; d\"", W("echo", "a && b | c", "; d"));
    /* Variables and globs in arguments stay verbatim. */
    assert_one("cp $HOME/x \"${DIR}/y\" *.c ~/z", W("cp", "$HOME/x", "${DIR}/y", "*.c", "~/z"));
    assert_one("echo $((1 + 2)) \"$(( x * 2 ))\"", W("echo", "$((1 + 2))", "$(( x * 2 ))"));
    assert_one("echo $ a$", W("echo", "$", "a$"));
}

static void t_operators(void **state)
{
    pdk_shell_split_t s = split_ok("a && b | c", 3);
    assert_cmd(&s, 0, W("a"));
    assert_cmd(&s, 1, W("b"));
    assert_cmd(&s, 2, W("c"));
    pdk_shell_split_free(&s);

    s = split_ok("a||b;c&d|&e\nf", 6);
    assert_cmd(&s, 0, W("a"));
    assert_cmd(&s, 1, W("b"));
    assert_cmd(&s, 2, W("c"));
    assert_cmd(&s, 3, W("d"));
    assert_cmd(&s, 4, W("e"));
    assert_cmd(&s, 5, W("f"));
    pdk_shell_split_free(&s);

    /* Line breaks after && || | and a trailing & or ; */
    s = split_ok("a &&\n\n b ||\n c |\n d &", 4);
    assert_cmd(&s, 3, W("d"));
    pdk_shell_split_free(&s);
    s = split_ok("! grep -q x f; true;", 2);
    assert_cmd(&s, 0, W("grep", "-q", "x", "f"));
    assert_cmd(&s, 1, W("true"));
    pdk_shell_split_free(&s);

    /* Backslash-newline joins lines, also inside a word and between && */
    s = split_ok("make \\\n  -j4 \\\n  all && ec\\\nho ok", 2);
    assert_cmd(&s, 0, W("make", "-j4", "all"));
    assert_cmd(&s, 1, W("echo", "ok"));
    pdk_shell_split_free(&s);

    assert_unreducible("&& a", "syntax error: missing command");
    assert_unreducible("a &&", "syntax error: missing command");
    assert_unreducible("a | | b", "syntax error: missing command");
    assert_unreducible("; a", "syntax error: missing command");
    assert_unreducible("a ;; b", "case statement");
}

static void t_subshell_group(void **state)
{
    pdk_shell_split_t s = split_ok("(cd sub && make) || { echo failed; exit 1; }", 4);
    assert_cmd(&s, 0, W("cd", "sub"));
    assert_cmd(&s, 1, W("make"));
    assert_cmd(&s, 2, W("echo", "failed"));
    assert_cmd(&s, 3, W("exit", "1"));
    pdk_shell_split_free(&s);

    s = split_ok("( ( a ) ; { b\n} ) >log 2>&1 | c", 3);
    assert_cmd(&s, 0, W("a"));
    assert_cmd(&s, 1, W("b"));
    assert_cmd(&s, 2, W("c"));
    pdk_shell_split_free(&s);

    /* { and } are words unless they stand alone in command position. */
    assert_one("echo { } {}", W("echo", "{", "}", "{}"));

    assert_unreducible("(a", "unbalanced parentheses");
    assert_unreducible("a)", "unbalanced parentheses");
    assert_unreducible("{ a; } }", "unexpected '}'");
    assert_unreducible("{ a; }}", "brace in command position"); /* }} is a word */
    assert_unreducible("{ a }", "unbalanced braces");           /* } is an argument of a */
    assert_unreducible("{ a;", "unbalanced braces");
    assert_unreducible("( )", "empty subshell");
    assert_unreducible("(a) b", "syntax error");
    assert_unreducible("((i++))", "arithmetic command");
}

static void t_assignments(void **state)
{
    pdk_shell_split_t s = split_ok("FOO=1 BAR=\"x y\" make -j4 CC=gcc", 1);
    assert_cmd(&s, 0, W("make", "-j4", "CC=gcc"));
    assert_env(&s, 0, W("FOO=1", "BAR=x y"));
    pdk_shell_split_free(&s);

    /* Assignments only: nothing is listed. */
    s = split_ok("A=1 B=2; C= ls", 1);
    assert_cmd(&s, 0, W("ls"));
    assert_env(&s, 0, W("C="));
    pdk_shell_split_free(&s);

    /* A quoted name is not an assignment: the word is the command. */
    assert_one("'A'=1 x", W("A=1", "x"));
    assert_one("1A=2", W("1A=2"));
    /* Bash-only forms: an assignment to bash, a command to dash. */
    assert_unreducible("A+=1 rm -rf /", "array or append assignment");
    assert_unreducible("a[1]=x rm", "array or append assignment");
    /* A continuation in the name still makes an assignment (it vanishes before tokens). */
    s = split_ok("FO\\\nO=1 rm x", 1);
    assert_cmd(&s, 0, W("rm", "x"));
    assert_env(&s, 0, W("FOO=1"));
    pdk_shell_split_free(&s);
}

static void t_redirections(void **state)
{
    assert_one("make 2>&1 >out < in &>log 3>&- >>app 2>/dev/null <>rw >|clob 10<&0 <<<word x",
               W("make", "x"));
    assert_one(">out echo hi", W("echo", "hi"));
    assert_one("cat <in>out", W("cat"));
    assert_one("cmd &>>log2 arg", W("cmd", "arg"));
    /* digits are an fd only right before the operator */
    assert_one("echo 2 >x a2>y", W("echo", "2", "a2"));
    pdk_shell_split_t s = split_ok("> file", 0);
    pdk_shell_split_free(&s);

    assert_unreducible("cat >", "missing redirection target");
    assert_unreducible("cat > | x", "missing redirection target");
    assert_unreducible("cat <<EOF\nhi\nEOF", "here-document");
    assert_unreducible("cat <<-EOF\n\thi\n\tEOF", "here-document");
    assert_unreducible("diff <(ls a) <(ls b)", "process substitution");
    assert_unreducible("tee >(gzip >x)", "process substitution");
}

static void t_structures(void **state)
{
    pdk_shell_split_t s = split_ok("if test -f x; then rm x; elif [ -d x ]; then rmdir x; "
                                   "else echo none; fi",
                                   5);
    assert_cmd(&s, 0, W("test", "-f", "x"));
    assert_cmd(&s, 1, W("rm", "x"));
    assert_cmd(&s, 2, W("[", "-d", "x", "]"));
    assert_cmd(&s, 3, W("rmdir", "x"));
    assert_cmd(&s, 4, W("echo", "none"));
    pdk_shell_split_free(&s);

    s = split_ok("while read line\ndo\n  echo \"$line\"\ndone < file; until false; do :; done", 4);
    assert_cmd(&s, 0, W("read", "line"));
    assert_cmd(&s, 1, W("echo", "$line"));
    assert_cmd(&s, 2, W("false"));
    assert_cmd(&s, 3, W(":"));
    pdk_shell_split_free(&s);

    /* The for word list is not a command; for NAME; do; for NAME do. */
    s = split_ok("for f in *.c \"a b\"; do gcc -c \"$f\"; done\n"
                 "for a; do echo $a; done; for b do x; done",
                 3);
    assert_cmd(&s, 0, W("gcc", "-c", "$f"));
    assert_cmd(&s, 1, W("echo", "$a"));
    assert_cmd(&s, 2, W("x"));
    pdk_shell_split_free(&s);

    /* Reserved words only count in command position and unquoted. */
    assert_one("echo if then fi done", W("echo", "if", "then", "fi", "done"));
    assert_one("'if' x", W("if", "x"));

    /* [[ ]] is a command named [[, operators included. */
    s = split_ok("[[ -n $x && $a < $b || ( -f y ) ]] && echo yes", 2);
    assert_cmd(&s, 0, W("[[", "-n", "$x", "&&", "$a", "<", "$b", "||", "(", "-f", "y", ")", "]]"));
    assert_cmd(&s, 1, W("echo", "yes"));
    pdk_shell_split_free(&s);

    assert_unreducible("if a; then b", "unterminated if");
    assert_unreducible("if a; then b; done", "unterminated if");
    assert_unreducible("if then b; fi", "empty if condition");
    assert_unreducible("while a; do b", "unterminated loop");
    assert_unreducible("for i in 1 2; echo $i; done", "unterminated for loop");
    assert_unreducible("for $x in 1; do a; done", "bad for loop variable");
    assert_unreducible("for ((i=0; i<3; i++)); do a; done", "arithmetic for loop");
    assert_unreducible("fi", "unexpected 'fi'");
    assert_unreducible("a; done", "unexpected 'done'");
    assert_unreducible("[[ -n x", "unterminated [[");
    assert_unreducible("[[ a; ]]", "unexpected token in [[ ]]");
}

static void t_command_substitution(void **state)
{
    /* In arguments: the argument stays verbatim, the inner commands are listed first. */
    pdk_shell_split_t s = split_ok("echo \"today: $(date +%F)\" `whoami` $(ls | wc -l)", 5);
    assert_cmd(&s, 0, W("date", "+%F"));
    assert_cmd(&s, 1, W("whoami"));
    assert_cmd(&s, 2, W("ls"));
    assert_cmd(&s, 3, W("wc", "-l"));
    assert_cmd(&s, 4, W("echo", "today: $(date +%F)", "`whoami`", "$(ls | wc -l)"));
    pdk_shell_split_free(&s);
    s = split_ok("echo x $(a) y", 2);
    assert_cmd(&s, 1, W("echo", "x", "$(a)", "y"));
    pdk_shell_split_free(&s);

    /* Nested, and backquotes with escaped inner backquotes. */
    s = split_ok("echo $(dirname $(readlink -f \"$0\")) `echo \\`id -u\\``", 5);
    assert_cmd(&s, 0, W("readlink", "-f", "$0"));
    assert_cmd(&s, 1, W("dirname", "$(readlink -f \"$0\")"));
    assert_cmd(&s, 2, W("id", "-u"));
    assert_cmd(&s, 3, W("echo", "`id -u`"));
    assert_cmd(&s, 4, W("echo", "$(dirname $(readlink -f \"$0\"))", "`echo \\`id -u\\``"));
    pdk_shell_split_free(&s);

    /* In assignments: listed even when the command is only assignments. */
    s = split_ok("REV=$(git rev-parse HEAD) V=\"`cat VERSION`\"", 2);
    assert_cmd(&s, 0, W("git", "rev-parse", "HEAD"));
    assert_cmd(&s, 1, W("cat", "VERSION"));
    pdk_shell_split_free(&s);
    s = split_ok("X=$(a) b", 2);
    assert_cmd(&s, 1, W("b"));
    assert_env(&s, 1, W("X=$(a)"));
    pdk_shell_split_free(&s);

    /* In redirection targets and for word lists. */
    s = split_ok("echo hi > $(mktemp); for f in $(find .); do rm $f; done", 4);
    assert_cmd(&s, 0, W("mktemp"));
    assert_cmd(&s, 1, W("echo", "hi"));
    assert_cmd(&s, 2, W("find", "."));
    assert_cmd(&s, 3, W("rm", "$f"));
    pdk_shell_split_free(&s);

    /* A ) inside quotes or a comment does not close $( */
    s = split_ok("echo $(echo ')' # )\n)", 2);
    assert_cmd(&s, 0, W("echo", ")"));
    pdk_shell_split_free(&s);

    assert_unreducible("$(which rm) -rf /", "command substitution in command position");
    assert_unreducible("`echo rm` x", "command substitution in command position");
    assert_unreducible("a$(b)c", "command substitution in command position");
    assert_unreducible("echo $(rm x", "unterminated command substitution");
    assert_unreducible("echo `rm x", "unterminated backquote");
    assert_unreducible("echo $(eval x)", "eval as the command"); /* inner failures count */
    assert_unreducible("echo $(( $(id) ))", "complex arithmetic expansion");
    assert_unreducible("echo ${x:-$(id)}", "complex parameter expansion");
}

static void t_command_position(void **state)
{
    assert_unreducible("$CMD arg", "variable in command position");
    assert_unreducible("\"$HOME/bin/x\"", "variable in command position");
    assert_unreducible("${X}", "variable in command position");
    assert_unreducible("a && $1", "variable in command position");
    assert_unreducible("/bin/r? -rf x", "glob in command position");
    assert_unreducible("{rm,-rf,x}", "brace in command position");
    assert_unreducible("=rm x", "tilde or = expansion in command position");
    assert_unreducible("$((1))", "arithmetic in command position");
    assert_unreducible("'' x", "empty command name");
    assert_unreducible("eval \"$x\"", "eval as the command");
    assert_unreducible("exec rm x", "exec as the command");
    assert_unreducible("source ./env.sh", "source as the command");
    assert_unreducible(". ./env.sh", ". as the command");
    assert_unreducible("trap 'rm x' EXIT", "trap as the command");
    assert_unreducible("command eval x", "eval as the command");
    assert_unreducible("builtin -- eval x", "eval as the command");
    assert_unreducible("command -p $x", "variable in command position");
    /* Quoted forms are still the same command. */
    assert_unreducible("'ev'al x", "eval as the command");
    /* A lookup runs nothing. */
    assert_one("command -v eval", W("command", "-v", "eval"));
    assert_one("command ls", W("command", "ls"));
    assert_one("[ -f x ]", W("[", "-f", "x", "]"));
    assert_one("echo eval", W("echo", "eval"));
}

static void t_unreducible_constructs(void **state)
{
    assert_unreducible("f() { rm x; }; f", "function definition");
    assert_unreducible("function f { rm x; }", "function definition");
    assert_unreducible("case $x in a) rm x;; esac", "case statement");
    assert_unreducible("select x in a b; do echo; done", "select loop");
    assert_unreducible("echo 'unterminated", "unterminated single quote");
    assert_unreducible("echo \"unterminated", "unterminated double quote");
    assert_unreducible("echo \"$(a\"", "unterminated double quote");
    assert_unreducible("echo x\\", "backslash at end of script");
    assert_unreducible("echo ${x", "unterminated ${");
    assert_unreducible("echo $((1+2", "unterminated arithmetic expansion");
    assert_unreducible("echo $((1+2)", "ambiguous $((");
    assert_unreducible("echo $'a\\nb'", "shell-dependent quoting $' or $\"");
    assert_unreducible("echo @(a|b)", "unexpected (");
}

static void t_comments(void **state)
{
    pdk_shell_split_t s =
        split_ok("# leading\nls # trailing && rm x\n  # indented\necho a#b '#c' #d", 2);
    assert_cmd(&s, 0, W("ls"));
    assert_cmd(&s, 1, W("echo", "a#b", "#c"));
    pdk_shell_split_free(&s);
    /* A comment ends at the newline, a continuation does not extend it. */
    s = split_ok("# x \\\nrm y", 1);
    assert_cmd(&s, 0, W("rm", "y"));
    pdk_shell_split_free(&s);
}

static void t_long_script(void **state)
{
    pdk_buf b = {0};
    for (int i = 0; i < 1000; i++)
        pdk_buf_printf(&b, "%s cmd%d --n=%d",
                       i ? (i % 3 == 0   ? "\n"
                            : i % 3 == 1 ? " && "
                                         : " | ")
                         : "",
                       i, i);
    pdk_shell_split_t s = split_ok(b.data, 1000);
    for (int i = 0; i < 1000; i += 97) {
        char name[16], arg[16];
        snprintf(name, sizeof(name), "cmd%d", i);
        snprintf(arg, sizeof(arg), "--n=%d", i);
        assert_cmd(&s, (size_t)i, W(name, arg));
    }
    assert_cmd(&s, 999, W("cmd999", "--n=999"));
    pdk_shell_split_free(&s);
    pdk_buf_free(&b);

    /* Deep nesting is bounded, not a stack overflow. */
    pdk_buf d = {0};
    for (int i = 0; i < 200; i++)
        pdk_buf_puts(&d, "( ");
    pdk_buf_puts(&d, "a");
    for (int i = 0; i < 200; i++)
        pdk_buf_puts(&d, ")");
    assert_unreducible(d.data, "nesting too deep");
    pdk_buf_free(&d);
}

static void t_wrapper(void **state)
{
#define WRAP(...) pdk_shell_wrapper_script((char *const[]){__VA_ARGS__, NULL})
    assert_string_equal(WRAP("sh", "-c", "ls -l"), "ls -l");
    assert_string_equal(WRAP("bash", "-lc", "make"), "make");
    assert_string_equal(WRAP("bash", "-l", "-c", "make", "arg0", "arg1"), "make");
    assert_string_equal(WRAP("/bin/sh", "-ec", "x"), "x");
    assert_string_equal(WRAP("/usr/bin/zsh", "-c", "y"), "y");
    assert_string_equal(WRAP("busybox", "sh", "-c", "z"), "z");
    assert_string_equal(WRAP("dash", "-xc", "a"), "a");
    assert_string_equal(WRAP("ksh", "-c", "-e", "b"), "b");
    assert_string_equal(WRAP("ash", "-c", "--", "-dash"), "-dash");
    assert_string_equal(WRAP("bash", "-o", "pipefail", "-c", "p"), "p");
    assert_string_equal(WRAP("bash", "--norc", "+x", "-c", "q"), "q");
    /* the script pointer is the argv word itself */
    char *argv[] = {"sh", "-c", "w", NULL};
    assert_ptr_equal(pdk_shell_wrapper_script(argv), argv[2]);

    assert_null(WRAP("sh", "script.sh"));
    assert_null(WRAP("sh", "-e", "script.sh"));
    assert_null(WRAP("bash", "-c"));
    assert_null(WRAP("bash", "-lc"));
    assert_null(WRAP("python", "-c", "print(1)"));
    assert_null(WRAP("shell", "-c", "x"));
    assert_null(WRAP("busybox", "ls", "-c", "x"));
    assert_null(WRAP("busybox"));
    assert_null(WRAP("bash", "-ic", "ls"));
    assert_null(WRAP("bash", "-s", "-c", "ls"));
    assert_null(WRAP("bash", "--unknown", "-c", "ls"));
    assert_null(WRAP("bash", "-o"));
    assert_null(WRAP("sh", "+c", "ls"));
    assert_null(WRAP("sh", "-c5", "ls"));
    assert_null(pdk_shell_wrapper_script((char *const[]){NULL}));
    assert_null(pdk_shell_wrapper_script(NULL));
#undef WRAP
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_simple),           cmocka_unit_test(t_quoting),
        cmocka_unit_test(t_operators),        cmocka_unit_test(t_subshell_group),
        cmocka_unit_test(t_assignments),      cmocka_unit_test(t_redirections),
        cmocka_unit_test(t_structures),       cmocka_unit_test(t_command_substitution),
        cmocka_unit_test(t_command_position), cmocka_unit_test(t_unreducible_constructs),
        cmocka_unit_test(t_comments),         cmocka_unit_test(t_long_script),
        cmocka_unit_test(t_wrapper),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
