/* test_shell.c: the shell splitter (src/policy/shell.c).
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
#include <sys/types.h>

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
    assert_unreducible("a ;; b", "unexpected ';;'");
    assert_unreducible(";; b", "unexpected ';;'");
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
    assert_unreducible("echo $(eval \"$x\")",
                       "eval of a variable or a substitution"); /* inner failures count */
    assert_unreducible("echo $(( $(id) ))", "complex arithmetic expansion");
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
    assert_unreducible("eval \"$x\"", "eval of a variable or a substitution");
    assert_unreducible("command -p $x", "variable in command position");
    assert_unreducible("coproc cat", "coproc as the command");
    assert_unreducible("enable -f ./x.so x", "enable as the command"); /* loads code */
    assert_unreducible("builtin enable -f ./x.so x", "enable as the command");
    assert_unreducible("let 'a[$(rm x)]=1'", "let with a substitution");
    assert_unreducible("mapfile -t -C 'rm x' -c 1 a < f", "mapfile with a callback");
    /* Builtins evaluate the subscripts of the names they are given. */
    assert_unreducible("unset 'a[$(rm x)]'",
                       "a variable name with a substitution in its subscript");
    assert_unreducible("[[ -v 'a[`rm x`]' ]]",
                       "a variable name with a substitution in its subscript");
    assert_unreducible("read 'a[$(rm x)]' < f",
                       "a variable name with a substitution in its subscript");
    assert_unreducible("BASH_ALIASES[ls]='rm -rf ~' true", "an alias defined through BASH_ALIASES");
    assert_unreducible("read BASH_ALIASES[ls] < f", "an alias defined through BASH_ALIASES");
    assert_unreducible("x='$(rm y)'; echo \"${x@P}\"", "prompt expansion ${...@P}");
    assert_unreducible("PS4='$(rm x)' bash -xc true", "PS4 with a substitution");
    assert_unreducible("export PS4='`rm x`'", "PS4 with a substitution");
    /* command and builtin are taken off: the word after them is what runs, quoted or not. */
    assert_one("command ls", W("ls"));
    assert_one("command -p -- git push", W("git", "push"));
    assert_one("\\builtin shopt -u extglob", W("shopt", "-u", "extglob"));
    pdk_shell_split_t s = split_ok("'ev'al x", 2);
    assert_cmd(&s, 0, W("eval", "x"));
    assert_cmd(&s, 1, W("x"));
    pdk_shell_split_free(&s);
    s = split_ok("command eval 'git push'; builtin -- eval x", 4);
    assert_cmd(&s, 1, W("git", "push"));
    assert_cmd(&s, 3, W("x"));
    pdk_shell_split_free(&s);
    /* time runs the pipeline after it. */
    s = split_ok("time -p kill 1 | cat; ! time git push; time", 3);
    assert_cmd(&s, 0, W("kill", "1"));
    assert_cmd(&s, 2, W("git", "push"));
    pdk_shell_split_free(&s);
    assert_unreducible("time -v kill 1", "time with options paddock does not know");
    /* A lookup runs nothing. */
    assert_one("command -v eval", W("command", "-v", "eval"));
    assert_one("command", W("command"));
    assert_one("[ -f x ]", W("[", "-f", "x", "]"));
    assert_one("echo eval", W("echo", "eval"));
}

static void t_unreducible_constructs(void **state)
{
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

/* Split with options; the same checks as split_ok. */
static pdk_shell_split_t split_with_ok(const char *script, const pdk_shell_options *o, size_t count)
{
    pdk_shell_split_t s;
    pdk_shell_split_with(script, o, &s);
    if (!s.reducible)
        fail_msg("not reducible (%s): %s", s.reason, script);
    if (s.count != count) {
        for (size_t i = 0; i < s.count; i++)
            print_error("command %zu: %s\n", i, s.commands[i].argv[0]);
        fail_msg("got %zu commands, want %zu: %s", s.count, count, script);
    }
    return s;
}

static void assert_unreducible_with(const char *script, const pdk_shell_options *o,
                                    const char *reason)
{
    pdk_shell_split_t s;
    pdk_shell_split_with(script, o, &s);
    if (s.reducible)
        fail_msg("reducible (%zu commands), want \"%s\": %s", s.count, reason, script);
    if (strcmp(s.reason, reason) != 0)
        fail_msg("reason \"%s\", want \"%s\": %s", s.reason, reason, script);
    assert_int_equal(s.count, 0);
    pdk_shell_split_free(&s);
}

/* The index of the listed command whose argv is exactly argv, or -1. */
static ssize_t find_cmd(const pdk_shell_split_t *s, const char *const *argv)
{
    for (size_t i = 0; i < s->count; i++) {
        size_t j = 0;
        while (argv[j] && s->commands[i].argv[j] && strcmp(argv[j], s->commands[i].argv[j]) == 0)
            j++;
        if (!argv[j] && !s->commands[i].argv[j])
            return (ssize_t)i;
    }
    return -1;
}

/* Whether some listed command is named name. */
static bool has_name(const pdk_shell_split_t *s, const char *name)
{
    for (size_t i = 0; i < s->count; i++)
        if (strcmp(s->commands[i].argv[0], name) == 0)
            return true;
    return false;
}

static const pdk_shell_options bash_options = {.shell = "bash"};

static void t_process_substitution(void **state)
{
    /* Like $( ): its commands run, the word is a /dev/fd path. */
    pdk_shell_split_t s = split_ok("diff <(ls a) <(ls b)", 3);
    assert_cmd(&s, 0, W("ls", "a"));
    assert_cmd(&s, 1, W("ls", "b"));
    assert_cmd(&s, 2, W("diff", "<(ls a)", "<(ls b)"));
    pdk_shell_split_free(&s);
    s = split_ok("tee >(gzip >x) | cat", 3);
    assert_cmd(&s, 0, W("gzip"));
    assert_cmd(&s, 1, W("tee", ">(gzip >x)"));
    assert_cmd(&s, 2, W("cat"));
    pdk_shell_split_free(&s);
    /* As a redirection's target: the loop Codex's shell snapshot ends with. */
    s = split_ok("while IFS= read -r n; do declare -xp \"$n\"; done < <(compgen -e)", 3);
    assert_cmd(&s, 0, W("read", "-r", "n"));
    assert_env(&s, 0, W("IFS="));
    assert_cmd(&s, 1, W("declare", "-xp", "$n"));
    assert_cmd(&s, 2, W("compgen", "-e"));
    pdk_shell_split_free(&s);
    /* Part of a word, as bash reads it (digits before it too), and nested. */
    s = split_ok("echo x<(true)y 2>(false)", 3);
    assert_cmd(&s, 0, W("true"));
    assert_cmd(&s, 1, W("false"));
    assert_cmd(&s, 2, W("echo", "x<(true)y", "2>(false)"));
    pdk_shell_split_free(&s);
    s = split_ok("cat <(sort <(uniq f))", 3);
    assert_cmd(&s, 0, W("uniq", "f"));
    assert_cmd(&s, 1, W("sort", "<(uniq f)"));
    pdk_shell_split_free(&s);

    assert_unreducible("<(rm x) arg", "process substitution in command position");
    assert_unreducible("cat <(rm x", "unterminated command substitution");
    assert_unreducible("cat <(eval \"$x\")", "eval of a variable or a substitution");
    assert_unreducible("cat <(rm x) >)", "missing redirection target");
}

static void t_heredoc(void **state)
{
    /* A quoted delimiter: the body is text, whatever it says. */
    pdk_shell_split_t s =
        split_ok("cat > f <<'EOF'\nrm -rf /\n$(reboot) `halt`\nEOF\necho done", 2);
    assert_cmd(&s, 0, W("cat"));
    assert_cmd(&s, 1, W("echo", "done"));
    pdk_shell_split_free(&s);
    s = split_ok("cat <<\"E\"F\n EF\n$(x)\nEF\n", 1); /* quoted in part; a line only like it */
    pdk_shell_split_free(&s);
    /* Unquoted: its substitutions run, escaped ones do not. */
    s = split_ok("cat <<EOF\nuser: $(whoami) `id -u` ${HOME}\n\\$(not) \\`not\\` \"$(date)\"\nEOF",
                 4);
    assert_cmd(&s, 0, W("whoami"));
    assert_cmd(&s, 1, W("id", "-u"));
    assert_cmd(&s, 2, W("date"));
    assert_cmd(&s, 3, W("cat"));
    pdk_shell_split_free(&s);
    /* <<- strips tabs; two on a line, read in order after it; a pipe after. */
    s = split_ok("cat <<-A <<B | grep x\n\tbody\n\tA\nb $(date)\nB\nls", 4);
    assert_cmd(&s, 0, W("cat"));
    assert_cmd(&s, 1, W("date"));
    assert_cmd(&s, 2, W("grep", "x"));
    assert_cmd(&s, 3, W("ls"));
    pdk_shell_split_free(&s);
    /* Inside a substitution, and on a compound command. */
    s = split_ok("x=$(cat <<E\n$(id)\nE\n)\nwhile read l; do echo \"$l\"; done <<E\n$(ls)\nE", 5);
    assert_cmd(&s, 0, W("id"));
    assert_cmd(&s, 1, W("cat"));
    assert_cmd(&s, 4, W("ls"));
    pdk_shell_split_free(&s);

    assert_unreducible("cat <<EOF\nhi", "unterminated here-document");
    assert_unreducible("cat <<EOF", "unterminated here-document");
    assert_unreducible("x=$(cat <<E)", "unterminated here-document");
    /* Where the shell's reading of the end is not sure: refused, never guessed. */
    assert_unreducible("x=$(cat <<EOF\nEOF)\nrm x\nEOF",
                       "a here-document line that begins with its delimiter");
    assert_unreducible("cat <<EOF\na\\\nEOF\nrm x\nEOF",
                       "a here-document line continued with a backslash");
    assert_unreducible("cat <<$(x)\nb\n$(x)", "complex here-document delimiter");
    assert_unreducible("cat <<EOF; echo 'a\nb'\nEOF",
                       "a line break inside quotes before a here-document's body");
    assert_unreducible("cat <<E $(echo\n)\nb\nE",
                       "a here-document inside a substitution that spans lines");
    assert_unreducible("cat <<EOF\n$(rm\nEOF", "unterminated command substitution");
    assert_unreducible("cat <<EOF\n$(eval \"$x\")\nEOF", "eval of a variable or a substitution");
}

static void t_case(void **state)
{
    pdk_shell_split_t s = split_ok("case \"$1\" in\n  start|run) exec daemon ;;\n"
                                   "  (stop) kill \"$(cat pid)\";;\n  *.txt) ;&\n"
                                   "  *) echo usage; exit 1;;&\nesac >log",
                                   6);
    assert_cmd(&s, 0, W("exec", "daemon"));
    assert_cmd(&s, 1, W("daemon"));
    assert_cmd(&s, 2, W("cat", "pid"));
    assert_cmd(&s, 3, W("kill", "$(cat pid)"));
    assert_cmd(&s, 5, W("exit", "1"));
    pdk_shell_split_free(&s);
    /* The patterns' substitutions run; Codex's filter of names; an empty case. */
    s = split_ok("case x in $(pattern)) a;; esac; case \"$n\" in \"\"|[0-9]*|*[!A-Za-z0-9_]*|PWD) "
                 "continue ;; esac; case y in esac",
                 3);
    assert_cmd(&s, 0, W("pattern"));
    assert_cmd(&s, 1, W("a"));
    assert_cmd(&s, 2, W("continue"));
    pdk_shell_split_free(&s);

    assert_unreducible("case x in a) b", "unterminated case statement");
    assert_unreducible("case x in a b) c;; esac", "bad case pattern");
    assert_unreducible("case x a) b;; esac", "bad case statement");
    assert_unreducible("case x in a) eval \"$y\";; esac", "eval of a variable or a substitution");
}

static void t_functions(void **state)
{
    /* Listed where they are defined, called or not; a call is listed as itself. */
    pdk_shell_split_t s = split_ok("f() { rm x; }; f; g () (cd y && make)\nfunction h { ls; }\n"
                                   "function i() if true; then :; fi",
                                   7);
    assert_cmd(&s, 0, W("rm", "x"));
    assert_cmd(&s, 1, W("f"));
    assert_cmd(&s, 2, W("cd", "y"));
    assert_cmd(&s, 4, W("ls"));
    assert_cmd(&s, 6, W(":"));
    pdk_shell_split_free(&s);
    /* A function that runs its arguments (Codex's __codex_snapshot_command): each call's
     * arguments are a command. */
    s = split_ok("run() {\n  if command -v \"$1\" >/dev/null 2>&1; then\n    \"$@\"\n  else\n"
                 "    command -p \"$@\"\n  fi\n}\nx=$(set -o | run awk '$2==\"on\"')\n"
                 "run git push origin",
                 6);
    assert_cmd(&s, 0, W("command", "-v", "$1"));
    assert_cmd(&s, 1, W("set", "-o"));
    assert_cmd(&s, 2, W("run", "awk", "$2==\"on\""));
    assert_cmd(&s, 3, W("awk", "$2==\"on\""));
    assert_cmd(&s, 5, W("git", "push", "origin"));
    pdk_shell_split_free(&s);
    /* ... through another function that passes them on, and ${1+"$@"} */
    s = split_ok("f() { ${1+\"$@\"}; }; g() { f \"$@\"; }; g rm -rf x", 3);
    assert_cmd(&s, 0, W("f", "$@"));
    assert_cmd(&s, 1, W("g", "rm", "-rf", "x"));
    assert_cmd(&s, 2, W("rm", "-rf", "x"));
    pdk_shell_split_free(&s);
    /* Claude Code's shadowing function: exec -a runs its file under another name. */
    s = split_ok("function rg { (exec -a rg /opt/claude ${1+\"$@\"}); }; rg -n x", 4);
    assert_cmd(&s, 1, W("/opt/claude", "${1+\"$@\"}"));
    assert_cmd(&s, 2, W("rg", "${1+\"$@\"}"));
    assert_cmd(&s, 3, W("rg", "-n", "x"));
    pdk_shell_split_free(&s);

    /* Called before the definition made it run its arguments (a loop, a caller defined
     * earlier): what ran then is not known. */
    assert_unreducible("f x; f() { \"$@\"; }",
                       "a function that runs its arguments, called before it is defined");
    assert_unreducible("while :; do g rm; g() { \"$@\"; }; done",
                       "a function that runs its arguments, called before it is defined");
    /* shift: any tail of the arguments may run; set: what runs is not the arguments. */
    s = split_ok("f() { local a=$1; shift; \"$@\"; }; f x kill 1", 6);
    assert_cmd(&s, 2, W("f", "x", "kill", "1"));
    assert_cmd(&s, 3, W("x", "kill", "1"));
    assert_cmd(&s, 4, W("kill", "1"));
    assert_cmd(&s, 5, W("1"));
    pdk_shell_split_free(&s);
    assert_unreducible("f() { set -- rm -rf x; \"$@\"; }; f",
                       "a function that runs its arguments after setting them");
    assert_unreducible("f() { \"$@\"; f a; shift; }", /* the call listed before the shift */
                       "a function that runs its arguments, called before it is defined");
    assert_unreducible("command_not_found_handle() { shift; \"$@\"; }",
                       "a command_not_found_handle that runs its arguments");
    /* A trap's action and a file sourced with arguments have other arguments. */
    assert_unreducible("f() { trap '\"$@\"' EXIT; }", "variable in command position");
    assert_unreducible("f() { \"$1\" x; }", "variable in command position");
    assert_unreducible("\"$@\"", "variable in command position");
    assert_unreducible("f() rm x", "a function body that is not a compound command");
    assert_unreducible("'f'() { :; }", "function definition");
    assert_unreducible("f(x) { :; }", "function definition");
    assert_unreducible("function $x { :; }", "function definition");
    assert_unreducible("f() { eval \"$1\"; }", "eval of a variable or a substitution");
}

static void t_eval_exec_trap(void **state)
{
    /* eval of literal words: their text is a script. */
    pdk_shell_split_t s = split_ok("eval 'git push' \"origin\"", 2);
    assert_cmd(&s, 0, W("eval", "git push", "origin"));
    assert_cmd(&s, 1, W("git", "push", "origin"));
    pdk_shell_split_free(&s);
    /* Claude Code's form: the model's command quoted for eval. */
    s = split_ok("eval 'printf '\"'\"'%s\\n'\"'\"' x > f' < /dev/null", 2);
    assert_cmd(&s, 1, W("printf", "%s\\n", "x"));
    pdk_shell_split_free(&s);
    s = split_ok("eval -- 'a; b'", 3);
    assert_cmd(&s, 2, W("b"));
    pdk_shell_split_free(&s);
    assert_unreducible("eval \"$cmd\"", "eval of a variable or a substitution");
    assert_unreducible("eval $(get)", "eval of a variable or a substitution");
    assert_unreducible("eval echo *", "eval of a variable or a substitution");
    assert_unreducible("eval 'echo $(eval \"$y\")'", "eval of a variable or a substitution");
    assert_unreducible("eval 'f() {'", "empty group");

    /* exec: its command runs (also under the name -a gives it). */
    s = split_ok("exec 3>&1; exec -a name /bin/prog --x; exec -cl env FOO=1 sh", 6);
    assert_cmd(&s, 0, W("exec"));
    assert_cmd(&s, 2, W("/bin/prog", "--x"));
    assert_cmd(&s, 3, W("name", "--x"));
    assert_cmd(&s, 5, W("env", "FOO=1", "sh"));
    pdk_shell_split_free(&s);
    assert_unreducible("exec \"$@\"", "variable in command position");
    assert_unreducible("exec -a \"$n\" x", "exec with options paddock cannot read");
    assert_unreducible("exec -z x", "exec with options paddock cannot read");
    assert_unreducible("exec eval \"$x\"", "eval of a variable or a substitution");

    /* trap: a literal action is a script; resets, ignores and listings run nothing. */
    s = split_ok("trap 'rm -f \"$tmp\"' EXIT INT; trap - DEBUG; trap '' HUP; trap -p; trap INT; "
                 "trap 0 1",
                 7);
    assert_cmd(&s, 1, W("rm", "-f", "$tmp"));
    assert_cmd(&s, 2, W("trap", "-", "DEBUG"));
    pdk_shell_split_free(&s);
    assert_unreducible("trap \"$handler\" EXIT", "trap with an action paddock cannot read");
    assert_unreducible("trap 'eval \"$x\"' EXIT", "eval of a variable or a substitution");
}

/* The files a test's sourcing finds: path, text (NULL: no such file), or unreadable. */
struct fake_file {
    const char *path;
    const char *text;
    bool unreadable;
};

static int read_fake(void *arg, const char *path, char **text)
{
    const struct fake_file *f = arg;
    *text = NULL;
    for (; f->path; f++) {
        if (strcmp(f->path, path) != 0)
            continue;
        if (f->unreadable)
            return -1;
        *text = f->text ? xstrdup(f->text) : NULL;
        return 0;
    }
    return 0;
}

static void t_source(void **state)
{
    static const struct fake_file files[] = {
        {"/etc/env.sh", "export A=1\nsetup() { git fetch; }\nalias mk='make -j4'\n", false},
        {"/home/u/.bashrc", "ls /\n", false},
        {"/secret", NULL, true},
        {"/loop.sh", ". /loop.sh\n", false},
        {"/eval.sh", "eval \"$x\"\n", false},
        {"/push.sh", "true && git push\n", false},
        {NULL, NULL, false},
    };
    pdk_shell_options o = {
        .shell = "bash", .read_file = read_fake, .read_file_arg = (void *)files, .home = "/home/u"};
    /* The file's commands, its functions and aliases as the script's own. */
    pdk_shell_split_t s = split_with_ok(". /etc/env.sh && mk all", &o, 6);
    assert_cmd(&s, 0, W(".", "/etc/env.sh"));
    assert_cmd(&s, 1, W("export", "A=1"));
    assert_cmd(&s, 2, W("git", "fetch"));
    assert_cmd(&s, 3, W("alias", "mk=make -j4"));
    assert_cmd(&s, 4, W("make", "-j4", "all"));
    assert_cmd(&s, 5, W("mk", "all"));
    pdk_shell_split_free(&s);
    s = split_with_ok("source /push.sh 2>/dev/null || true", &o, 4);
    assert_true(find_cmd(&s, W("git", "push")) >= 0); /* judged like the script's own */
    pdk_shell_split_free(&s);
    /* No such file: the shell's source fails, nothing of it runs. */
    s = split_with_ok(". /nope; ls", &o, 2);
    pdk_shell_split_free(&s);
    /* $HOME and ~ are the shell's HOME while nothing could have changed it. */
    s = split_with_ok("if [ -z \"${BASH_ENV-}\" ] && [ -r \"$HOME/.bashrc\" ]; then\n"
                      "  . \"$HOME/.bashrc\"\nfi",
                      &o, 4);
    assert_cmd(&s, 3, W("ls", "/"));
    pdk_shell_split_free(&s);
    s = split_with_ok(". ~/.bashrc", &o, 2);
    pdk_shell_split_free(&s);
    s = split_with_ok("source ${HOME}/.bashrc", &o, 2);
    pdk_shell_split_free(&s);
    /* ... and after a sourced file ran commands, it is no longer known */
    assert_unreducible_with(". ~/.bashrc; . ~/.bashrc", &o,
                            "a sourced file under $HOME, which the script may have changed");
    assert_unreducible_with("HOME=/tmp/x; . \"$HOME/.bashrc\"", &o,
                            "a sourced file under $HOME, which the script may have changed");
    assert_unreducible_with("cd /; . ~/.bashrc", &o,
                            "a sourced file under $HOME, which the script may have changed");
    assert_unreducible_with("[ -n \"${HOME:=/x}\" ]; . ~/.bashrc", &o,
                            "a sourced file under $HOME, which the script may have changed");
    assert_unreducible_with(". \"$HOME/$f\"", &o,
                            "a sourced file named by a variable or a relative path");
    assert_unreducible_with(". ./env.sh", &o,
                            "a sourced file named by a variable or a relative path");
    assert_unreducible_with("source env.sh", &o, /* looked up in PATH */
                            "a sourced file named by a variable or a relative path");
    assert_unreducible_with("source \"$F\"", &o,
                            "a sourced file named by a variable or a relative path");
    assert_unreducible_with(". /secret", &o, "a sourced file paddock cannot read");
    assert_unreducible_with(". /loop.sh", &o, "sourced files nested too deep");
    assert_unreducible_with(". /eval.sh", &o, "eval of a variable or a substitution");
    /* What the script writes before (or after: a loop) sourcing it is not what was read. */
    assert_unreducible_with("echo 'rm x' > /push.sh; . /push.sh", &o,
                            "a sourced file the script writes");
    assert_unreducible_with("cd /; while :; do . /push.sh; echo x >>push.sh; done", &o,
                            "a sourced file the script writes");
    s = split_with_ok(". /push.sh > /push.sh.log 2>&1", &o, 3);
    pdk_shell_split_free(&s);
    /* A file sourced with arguments: its "$@" is those, not the function's. */
    static const struct fake_file runs[] = {{"/runs.sh", "\"$@\"\n", false}, {NULL, NULL, false}};
    pdk_shell_options ro = {.shell = "bash", .read_file = read_fake, .read_file_arg = (void *)runs};
    assert_unreducible_with("f() { . /runs.sh rm x; }", &ro, "variable in command position");
    s = split_with_ok("f() { . /runs.sh; }; f rm x", &ro, 3);
    assert_cmd(&s, 2, W("rm", "x"));
    pdk_shell_split_free(&s);
    /* Without a reader, or without HOME: nothing is assumed. */
    assert_unreducible(". /etc/env.sh", "a sourced file paddock cannot read");
    pdk_shell_options no_home = {
        .shell = "bash", .read_file = read_fake, .read_file_arg = (void *)files};
    assert_unreducible_with(". ~/.bashrc", &no_home,
                            "a sourced file under $HOME, which paddock does not know");
}

static void t_alias(void **state)
{
    /* An alias used later is listed as what it stands for and as itself. */
    pdk_shell_split_t s = split_ok("alias ll='ls -la' g=git; ll /tmp; g push; \\ll", 6);
    assert_cmd(&s, 0, W("alias", "ll=ls -la", "g=git"));
    assert_cmd(&s, 1, W("ls", "-la", "/tmp"));
    assert_cmd(&s, 2, W("ll", "/tmp"));
    assert_cmd(&s, 3, W("git", "push"));
    assert_cmd(&s, 4, W("g", "push"));
    assert_cmd(&s, 5, W("ll")); /* quoted: no alias */
    pdk_shell_split_free(&s);
    /* A value ending in a blank expands the next word too; an alias within its own value
     * is not expanded again. */
    s = split_ok("alias sudo='sudo ' ll='rm -rf'; sudo ll x", 3);
    assert_cmd(&s, 1, W("sudo", "rm", "-rf", "x"));
    assert_cmd(&s, 2, W("sudo", "ll", "x"));
    pdk_shell_split_free(&s);
    s = split_ok("alias ls='ls -F' a=b b=a; ls; a", 6);
    assert_cmd(&s, 1, W("ls", "-F"));
    assert_cmd(&s, 2, W("ls"));
    assert_cmd(&s, 3, W("a")); /* a -> b -> a, not expanded again */
    assert_cmd(&s, 4, W("b"));
    assert_cmd(&s, 5, W("a"));
    pdk_shell_split_free(&s);

    assert_unreducible("alias if='rm x'", "alias of a reserved word");
    assert_unreducible("ls; alias ls='rm -rf ~'", "alias defined after a command of its name");
    assert_unreducible("alias x=\"$y\"", "alias with a value paddock cannot read");
    /* Each alias standing for 16 uses of the next: the text grows 16 times a level. */
    pdk_buf b = {0};
    pdk_buf_puts(&b, "alias");
    for (int i = 0; i < 8; i++) {
        pdk_buf_printf(&b, " a%d='", i);
        for (int j = 0; j < 16; j++)
            pdk_buf_printf(&b, "a%d;", i + 1);
        pdk_buf_puts(&b, "'");
    }
    pdk_buf_puts(&b, "; a0");
    assert_unreducible(b.data, "too much text to expand");
    pdk_buf_free(&b);
}

static void t_bash_syntax(void **state)
{
    const pdk_shell_options *o = &bash_options;
    /* $'...': decoded as bash does (a NUL ends the text). */
    pdk_shell_split_t s = split_with_ok(
        "IFS=$'\\037' read -r a; echo $'a\\0b'c $'\\x41\\101\\'' $'\\q'; $'rm' -f x", o, 3);
    assert_env(&s, 0, W("IFS=\037"));
    assert_cmd(&s, 1, W("echo", "ac", "AA'", "\\q"));
    assert_cmd(&s, 2, W("rm", "-f", "x"));
    pdk_shell_split_free(&s);
    assert_unreducible_with("echo $'\\u00e9'", o, "an escape of $'...' paddock does not decode");
    assert_unreducible_with("echo $'abc", o, "unterminated $'");
    assert_unreducible("echo $'x'", "shell-dependent quoting $' or $\""); /* not bash */

    /* (( )): arithmetic, nothing runs (for sh, ((a)) is two subshells running a). */
    s = split_with_ok("(( i++ )) && ((x = BASH_VERSINFO[0] * 100 >= 501)) && (($#)) && echo ok", o,
                      1);
    pdk_shell_split_free(&s);
    assert_unreducible_with("(( $(id) ))", o, "complex arithmetic expansion");
    assert_unreducible("((rm x))", "arithmetic command");

    /* Arrays and +=: assignments, their substitutions listed. */
    s = split_with_ok(
        "a=(x \"$(date)\" [3]=y\n # c\n); a+=(z); local -a b=(); b+=(\"$c\"); A+=1 rm -rf x; "
        "echo \"${a[@]}\" \"${b[@]+\"${b[@]}\"}\"",
        o, 4);
    assert_cmd(&s, 0, W("date"));
    assert_cmd(&s, 1, W("local", "-a", "b=()"));
    assert_cmd(&s, 2, W("rm", "-rf", "x"));
    assert_env(&s, 2, W("A+=1"));
    pdk_shell_split_free(&s);
    assert_unreducible("A+=1 rm -rf /", "array or append assignment"); /* a command to dash */
    assert_unreducible_with("x=( $(ls) ", o, "unterminated array");
    assert_unreducible_with("x=(a;b)", o, "unexpected token in an array");
    assert_unreducible("x=(a)", "unexpected ("); /* not bash */
}

static void t_parameter_expansion(void **state)
{
    /* What ${...} holds is read: its substitutions run. */
    pdk_shell_split_t s = split_ok("echo ${x:-$(id)} \"${1+\"$@\"}\" ${a[@]+\"${a[@]}\"} "
                                   "\"${@:1:$# - 1}\" \"${@%$'\\n'}\" ${!#} ${f##* } ${y:-`pwd`}",
                                   3);
    assert_cmd(&s, 0, W("id"));
    assert_cmd(&s, 1, W("pwd"));
    assert_cmd(&s, 2,
               W("echo", "${x:-$(id)}", "${1+\"$@\"}", "${a[@]+\"${a[@]}\"}", "${@:1:$# - 1}",
                 "${@%$'\\n'}", "${!#}", "${f##* }", "${y:-`pwd`}"));
    pdk_shell_split_free(&s);
    /* Where the end or the quoting is not sure. */
    assert_unreducible("echo ${x:-'}'}", "complex parameter expansion");
    assert_unreducible("echo \"${x:-'$(id)'}\"", "complex parameter expansion");
    assert_unreducible("echo ${x:-{a}}", "complex parameter expansion");
    assert_unreducible("echo ${x:-$(eval \"$y\")}", "eval of a variable or a substitution");
    assert_unreducible("echo ${}", "bad substitution ${}");
    pdk_buf d = {0};
    for (int i = 0; i < 200; i++)
        pdk_buf_puts(&d, "${x:-");
    assert_unreducible(d.data, "nesting too deep");
    pdk_buf_free(&d);
}

/* ---- the agents' own scripts (tests/fixtures/agent-shell, as Codex CLI 0.171 and Claude
 * Code 2.1.332 ran them inside paddock; paths made generic) ---- */

static char *read_fixture(const char *name)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/agent-shell/%s", PDK_TEST_FIXTURES, name);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s", path);
    pdk_buf b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        pdk_buf_append(&b, chunk, n);
    fclose(f);
    return pdk_buf_steal(&b);
}

#define CODEX_SNAPSHOT                                                                             \
    "/home/agent/.codex/shell_snapshots/01a23491-90c6-7513-81fa-dcc57a936d57.tmp-"                 \
    "1796178284778300850"
#define CODEX_SNAPSHOT_DONE                                                                        \
    "/home/agent/.codex/shell_snapshots/"                                                          \
    "01a234b1-adbe-7df0-96e9-1d809fe038df.1796180389351608616.sh"
#define CLAUDE_SNAPSHOT "/home/agent/.claude/shell-snapshots/snapshot-bash-1796178293004-wpikl2.sh"
#define CLAUDE          "/opt/agent/node_modules/@anthropic-ai/claude-code-linux-x64/claude"

static void t_agent_scripts(void **state)
{
    _cleanup_free_ char *codex_file = read_fixture("codex-snapshot-file.sh");
    _cleanup_free_ char *claude_file = read_fixture("claude-snapshot-file.sh");
    struct fake_file files[] = {
        {"/home/agent/.bashrc", "", false},
        {CODEX_SNAPSHOT, codex_file, false},
        {CODEX_SNAPSHOT_DONE, codex_file, false},
        {CLAUDE_SNAPSHOT, claude_file, false},
        {NULL, NULL, false},
    };
    pdk_shell_options o = {
        .shell = "bash", .read_file = read_fake, .read_file_arg = files, .home = "/home/agent"};
    pdk_shell_split_t s;

    /* Codex: the snapshot it takes of its login shell, then checks by sourcing it. */
    _cleanup_free_ char *codex = read_fixture("codex-snapshot.sh");
    pdk_shell_split_with(codex, &o, &s);
    if (!s.reducible)
        fail_msg("codex-snapshot.sh: %s", s.reason);
    assert_true(find_cmd(&s, W("awk", "$2==\"on\"{print $1}")) >= 0); /* by its helper */
    assert_true(find_cmd(&s, W("tr", "-d", " ")) >= 0);
    assert_true(find_cmd(&s, W("compgen", "-e")) >= 0);
    assert_true(find_cmd(&s, W("declare", "-xp", "$__codex_snapshot_export_name")) >= 0);
    pdk_shell_split_free(&s);
    _cleanup_free_ char *validate = read_fixture("codex-validate.sh");
    pdk_shell_split_with(validate, &o, &s);
    if (!s.reducible)
        fail_msg("codex-validate.sh: %s", s.reason);
    assert_true(find_cmd(&s, W("shopt", "-s", "login_shell")) >= 0);
    assert_true(find_cmd(&s, W("set", "-o", "hashall")) >= 0);
    assert_true(find_cmd(&s, W("declare", "-x", "LANG=C.UTF-8")) >= 0);
    pdk_shell_split_free(&s);
    /* ... and each command once it has one: the snapshot sourced, its environment put back,
     * then exec of the model's command (a git push here). */
    _cleanup_free_ char *codex_command = read_fixture("codex-command.sh");
    pdk_shell_split_with(codex_command, &o, &s);
    if (!s.reducible)
        fail_msg("codex-command.sh: %s", s.reason);
    assert_true(find_cmd(&s, W(".", CODEX_SNAPSHOT_DONE)) >= 0);
    assert_true(find_cmd(&s, W("shopt", "-s", "login_shell")) >= 0); /* from the snapshot */
    assert_true(find_cmd(&s, W("/bin/bash", "-c", "git push origin main")) >= 0);
    assert_int_equal(s.commands[s.count - 1].argv[0][0], '/'); /* the exec's command, last */
    pdk_shell_split_free(&s);
    assert_unreducible_with(codex_command, &(pdk_shell_options){.shell = "bash"},
                            "a sourced file paddock cannot read");

    /* Claude Code: the snapshot it writes (its own functions as a quoted here-document:
     * text, not commands), then each command, which sources it and evals the model's. */
    _cleanup_free_ char *claude = read_fixture("claude-snapshot.sh");
    pdk_shell_split_with(claude, &o, &s);
    if (!s.reducible)
        fail_msg("claude-snapshot.sh: %s", s.reason);
    assert_true(find_cmd(&s, W("source", "/home/agent/.bashrc")) >= 0);
    assert_true(find_cmd(&s, W("trap", "-", "DEBUG")) >= 0);
    assert_true(find_cmd(&s, W("declare", "-f", "$func")) >= 0);
    assert_true(find_cmd(&s, W("cat")) >= 0);
    assert_false(has_name(&s, "pgrep")); /* in the here-document */
    assert_false(has_name(&s, CLAUDE));
    pdk_shell_split_free(&s);
    _cleanup_free_ char *command = read_fixture("claude-command.sh");
    pdk_shell_split_with(command, &o, &s);
    if (!s.reducible)
        fail_msg("claude-command.sh: %s", s.reason);
    assert_true(find_cmd(&s, W(CLAUDE, "-S", "dfs", "-regextype", "findutils-default",
                               "${1+\"$@\"}")) >= 0);
    assert_true(
        find_cmd(&s, W("bfs", "-S", "dfs", "-regextype", "findutils-default", "${1+\"$@\"}")) >= 0);
    assert_true(has_name(&s, "pgrep"));
    assert_true(find_cmd(&s, W("echo", "== $f")) >= 0); /* the model's command, from eval */
    assert_true(find_cmd(&s, W("cat", "$f")) >= 0);
    assert_true(find_cmd(&s, W("pwd", "-P")) >= 0);
    pdk_shell_split_free(&s);

    /* What the sourced snapshot says is judged: a changed one is seen. */
    _cleanup_free_ char *pushing = xasprintf("%s\ngit push --force\n", claude_file);
    files[3].text = pushing;
    pdk_shell_split_with(command, &o, &s);
    assert_true(s.reducible);
    assert_true(find_cmd(&s, W("git", "push", "--force")) >= 0);
    pdk_shell_split_free(&s);
    _cleanup_free_ char *hiding = xasprintf("%s\neval \"$(cat /tmp/x)\"\n", claude_file);
    files[3].text = hiding;
    assert_unreducible_with(command, &o, "eval of a variable or a substitution");
    files[3].text = claude_file;

    /* Without the files, or for another shell, nothing is assumed. */
    pdk_shell_options blind = {.shell = "bash", .home = "/home/agent"};
    assert_unreducible_with(validate, &blind, "a sourced file paddock cannot read");
    assert_unreducible_with(command, &blind, "a sourced file paddock cannot read");
    pdk_shell_options sh = o;
    sh.shell = "sh";
    pdk_shell_split_with(claude, &sh, &s);
    assert_false(s.reducible);
    pdk_shell_split_free(&s);
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
        cmocka_unit_test(t_wrapper),          cmocka_unit_test(t_process_substitution),
        cmocka_unit_test(t_heredoc),          cmocka_unit_test(t_case),
        cmocka_unit_test(t_functions),        cmocka_unit_test(t_eval_exec_trap),
        cmocka_unit_test(t_source),           cmocka_unit_test(t_alias),
        cmocka_unit_test(t_bash_syntax),      cmocka_unit_test(t_parameter_expansion),
        cmocka_unit_test(t_agent_scripts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
