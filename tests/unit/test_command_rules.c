/* test_command_rules.c: the matcher of command rules (argv prefixes, alternatives, globs,
 * executable by basename or path, strictest wins, the default), seeing through shell
 * wrappers and the dynamic loader, the forms of a command (global options of git, npm,
 * pip, uv; python -m), the other names of its executable, and `under`. */
#include "command_rules.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* The tokens "tok", "alt1|alt2", ... of ap, up to NULL: their count. */
static size_t pattern_of(va_list ap, char **tokens[16])
{
    size_t n = 0;
    for (const char *t = va_arg(ap, const char *); t && n < 16; t = va_arg(ap, const char *)) {
        char **alts = NULL;
        _cleanup_free_ char *copy = xstrdup(t);
        char *save = NULL;
        for (char *a = strtok_r(copy, "|", &save); a; a = strtok_r(NULL, "|", &save))
            pdk_strv_push(&alts, a);
        tokens[n++] = alts;
    }
    return n;
}

/* rule(rules, decision, reason, "tok", "alt1|alt2", ...) with NULL at the end. */
static void rule(pdk_command_rules *rules, pdk_decision d, const char *reason, ...)
{
    char **tokens[16];
    va_list ap;
    va_start(ap, reason);
    size_t n = pattern_of(ap, tokens);
    va_end(ap);
    pdk_command_rules_add(rules, (char *const *const *)tokens, n, d, reason);
    for (size_t i = 0; i < n; i++)
        pdk_strv_free(tokens[i]);
}

static pdk_command_verdict judge(const pdk_command_rules *rules, ...)
{
    char *argv[32];
    size_t n = 0;
    va_list ap;
    va_start(ap, rules);
    for (char *a = va_arg(ap, char *); a && n < 31; a = va_arg(ap, char *))
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    pdk_command_verdict v;
    pdk_command_rules_judge(rules, argv, &v);
    return v;
}

static void test_prefix_and_default(void **state)
{
    pdk_command_rules r = {.default_decision = PDK_DECISION_ALLOW};
    rule(&r, PDK_DECISION_ASK, "pushing publishes code", "git", "push", NULL);
    pdk_command_verdict v = judge(&r, "git", "push", "origin", "main", NULL);
    assert_int_equal(v.decision, PDK_DECISION_ASK);
    assert_int_equal(v.rule, 0);
    assert_string_equal(v.reason, "pushing publishes code");
    v = judge(&r, "git", "status", NULL);
    assert_int_equal(v.decision, PDK_DECISION_ALLOW);
    assert_int_equal(v.rule, -1);
    /* shorter than the pattern: no match */
    v = judge(&r, "git", NULL);
    assert_int_equal(v.rule, -1);
    r.default_decision = PDK_DECISION_ASK;
    v = judge(&r, "make", "test", NULL);
    assert_int_equal(v.decision, PDK_DECISION_ASK);
    assert_int_equal(v.rule, -1);
    pdk_command_rules_free(&r);
}

static void test_alternatives_and_globs(void **state)
{
    pdk_command_rules r = {.default_decision = PDK_DECISION_ALLOW};
    rule(&r, PDK_DECISION_ASK, NULL, "lark-cli", "base",
         "+record-delete|+table-delete|+field-delete", NULL);
    rule(&r, PDK_DECISION_ASK, NULL, "lark-cli", "api", "DELETE|PUT|PATCH|POST", NULL);
    rule(&r, PDK_DECISION_CONFINE, NULL, "npm", "run*", NULL);
    assert_int_equal(judge(&r, "lark-cli", "base", "+table-delete", "--id", "x", NULL).decision,
                     PDK_DECISION_ASK);
    assert_int_equal(judge(&r, "lark-cli", "base", "+record-list", NULL).decision,
                     PDK_DECISION_ALLOW);
    assert_int_equal(judge(&r, "lark-cli", "api", "GET", "/x", NULL).decision, PDK_DECISION_ALLOW);
    assert_int_equal(judge(&r, "lark-cli", "api", "POST", "/x", NULL).decision, PDK_DECISION_ASK);
    assert_int_equal(judge(&r, "npm", "run-script", "build", NULL).decision, PDK_DECISION_CONFINE);
    assert_int_equal(judge(&r, "npm", "install", NULL).decision, PDK_DECISION_ALLOW);
    /* no rule has a reason: a fixed phrase, never NULL */
    assert_string_equal(judge(&r, "npm", "run", NULL).reason, "matched a command rule");
    pdk_command_rules_free(&r);
}

static void test_executable_by_basename_or_path(void **state)
{
    pdk_command_rules r = {.default_decision = PDK_DECISION_ALLOW};
    rule(&r, PDK_DECISION_DENY, NULL, "git", NULL);
    rule(&r, PDK_DECISION_ASK, NULL, "/usr/bin/curl", NULL);
    assert_int_equal(judge(&r, "/usr/bin/git", "log", NULL).decision, PDK_DECISION_DENY);
    assert_int_equal(judge(&r, "./git", NULL).decision, PDK_DECISION_DENY);
    assert_int_equal(judge(&r, "git-lfs", NULL).decision, PDK_DECISION_ALLOW);
    assert_int_equal(judge(&r, "/usr/bin/curl", "x", NULL).decision, PDK_DECISION_ASK);
    assert_int_equal(judge(&r, "curl", "x", NULL).decision, PDK_DECISION_ALLOW);
    assert_int_equal(judge(&r, "/bin/curl", "x", NULL).decision, PDK_DECISION_ALLOW);
    /* a basename pattern applies to the executable only, not to later words */
    assert_int_equal(judge(&r, "echo", "/usr/bin/git", NULL).decision, PDK_DECISION_ALLOW);
    pdk_command_rules_free(&r);
}

static void test_strictest_wins(void **state)
{
    pdk_command_rules r = {.default_decision = PDK_DECISION_DENY};
    rule(&r, PDK_DECISION_CONFINE, "git is confined", "git", NULL);
    rule(&r, PDK_DECISION_ASK, "pushing", "git", "push", NULL);
    rule(&r, PDK_DECISION_DENY, "no force", "git", "push", "--force|-f", NULL);
    rule(&r, PDK_DECISION_ALLOW, "ls is fine", "ls", NULL);
    pdk_command_verdict v = judge(&r, "git", "push", "--force", NULL);
    assert_int_equal(v.decision, PDK_DECISION_DENY);
    assert_int_equal(v.rule, 2);
    v = judge(&r, "git", "push", "origin", NULL);
    assert_int_equal(v.decision, PDK_DECISION_ASK);
    assert_int_equal(v.rule, 1);
    v = judge(&r, "git", "log", NULL);
    assert_int_equal(v.decision, PDK_DECISION_CONFINE);
    /* a matching rule overrides a stricter default */
    v = judge(&r, "ls", "-l", NULL);
    assert_int_equal(v.decision, PDK_DECISION_ALLOW);
    assert_int_equal(v.rule, 3);
    assert_int_equal(judge(&r, "rm", "x", NULL).decision, PDK_DECISION_DENY);
    pdk_command_rules_free(&r);
}

static void test_shell_wrappers(void **state)
{
    pdk_command_rules r = {.default_decision = PDK_DECISION_ALLOW};
    rule(&r, PDK_DECISION_ASK, "pushing", "git", "push", NULL);
    rule(&r, PDK_DECISION_DENY, "never", "rm", "-rf", "/", NULL);
    pdk_command_verdict v = judge(&r, "sh", "-c", "git status && git push origin main", NULL);
    assert_int_equal(v.decision, PDK_DECISION_ASK);
    assert_int_equal(v.rule, 0);
    assert_true(v.through_shell);
    assert_false(v.unreducible);
    v = judge(&r, "/bin/bash", "-lc", "cd /tmp; ls | grep x; rm -rf /", NULL);
    assert_int_equal(v.decision, PDK_DECISION_DENY);
    assert_string_equal(v.reason, "never");
    v = judge(&r, "sh", "-c", "git status; ls", NULL);
    assert_int_equal(v.decision, PDK_DECISION_ALLOW);
    /* commands in a substitution are judged too */
    v = judge(&r, "sh", "-c", "echo $(git push)", NULL);
    assert_int_equal(v.decision, PDK_DECISION_ASK);
    /* nested wrappers */
    v = judge(&r, "sh", "-c", "bash -c 'git push'", NULL);
    assert_int_equal(v.decision, PDK_DECISION_ASK);
    /* an unreducible script falls to ask, whatever the default allows */
    v = judge(&r, "sh", "-c", "$CMD --all", NULL);
    assert_int_equal(v.decision, PDK_DECISION_ASK);
    assert_true(v.unreducible);
    assert_int_equal(v.rule, -1);
    /* ... unless a rule about the wrapper itself says otherwise */
    rule(&r, PDK_DECISION_ALLOW, "trusted script", "sh", "-c", "$CMD*", NULL);
    v = judge(&r, "sh", "-c", "$CMD --all", NULL);
    assert_int_equal(v.decision, PDK_DECISION_ALLOW);
    assert_int_equal(v.rule, 2);
    /* ... and a deny default stays deny */
    r.default_decision = PDK_DECISION_DENY;
    v = judge(&r, "bash", "-c", "eval \"$X\"", NULL);
    assert_int_equal(v.decision, PDK_DECISION_DENY);
    pdk_command_rules_free(&r);

    /* With no rule stricter than the default, what a script hides can only get the
     * default: no ask. */
    pdk_command_rules open = {.default_decision = PDK_DECISION_ALLOW};
    v = judge(&open, "sh", "-c", "cd \"$0\" && exec \"$@\"", NULL);
    assert_int_equal(v.decision, PDK_DECISION_ALLOW);
    assert_true(v.unreducible);
    rule(&open, PDK_DECISION_ALLOW, NULL, "make", NULL);
    v = judge(&open, "sh", "-c", "$CMD", NULL);
    assert_int_equal(v.decision, PDK_DECISION_ALLOW);
    /* One stricter rule is enough for ask, even a confine. */
    rule(&open, PDK_DECISION_CONFINE, NULL, "curl", NULL);
    v = judge(&open, "sh", "-c", "$CMD", NULL);
    assert_int_equal(v.decision, PDK_DECISION_ASK);
    open.default_decision = PDK_DECISION_CONFINE;
    v = judge(&open, "sh", "-c", "$CMD", NULL);
    assert_int_equal(v.decision, PDK_DECISION_CONFINE);
    pdk_command_rules_free(&open);
}

static void test_decision_names(void **state)
{
    pdk_decision d;
    assert_int_equal(pdk_decision_parse("confine", &d), 0);
    assert_int_equal(d, PDK_DECISION_CONFINE);
    assert_int_equal(pdk_decision_parse("Deny", &d), -1);
    assert_int_equal(pdk_decision_parse("", &d), -1);
    assert_string_equal(pdk_decision_name(PDK_DECISION_ASK), "ask");
    assert_true(PDK_DECISION_DENY > PDK_DECISION_ASK && PDK_DECISION_ASK > PDK_DECISION_CONFINE &&
                PDK_DECISION_CONFINE > PDK_DECISION_ALLOW);
}

/* The index (rules by literal executable name) decides exactly as trying every rule does:
 * a few hundred rules of every first-token shape, against commands of every shape. */
static void test_index_agrees_with_every_rule(void **state)
{
    pdk_command_rules r = {.default_decision = PDK_DECISION_ALLOW};
    static const char *const firsts[] = {"git",           "lark-cli", "git|hg",
                                         "/usr/bin/curl", "cur*",     "*",
                                         "make",          "[mn]ake",  "python3|/usr/bin/python3"};
    static const char *const seconds[] = {"push", "*", "status|log", "+record-*", "-rf"};
    size_t n = 0;
    for (size_t f = 0; f < PDK_ARRAY_SIZE(firsts); f++)
        for (size_t g = 0; g < PDK_ARRAY_SIZE(seconds); g++, n++)
            rule(&r, (pdk_decision)(n % 4), NULL, firsts[f], seconds[g], NULL);
    char *cmds[][4] = {
        {"git", "push", NULL},
        {"/usr/bin/git", "status", NULL},
        {"hg", "log", NULL},
        {"lark-cli", "+record-delete", NULL},
        {"/usr/bin/curl", "-rf", NULL},
        {"curl", "x", NULL},
        {"/opt/curl", "push", NULL},
        {"make", "-rf", NULL},
        {"nake", "all", NULL},
        {"/usr/bin/python3", "log", NULL},
        {"python3", "push", NULL},
        {"ls", NULL},
    };
    for (size_t c = 0; c < PDK_ARRAY_SIZE(cmds); c++) {
        ssize_t naive = -1;
        for (size_t i = 0; i < r.count; i++)
            if (pdk_command_rule_matches(&r.rules[i], cmds[c]) &&
                (naive < 0 || r.rules[i].decision > r.rules[naive].decision))
                naive = (ssize_t)i;
        pdk_command_verdict v;
        pdk_command_rules_judge(&r, cmds[c], &v);
        assert_int_equal(v.rule, naive);
    }
    /* Adding a rule drops the index: the new rule counts at once. */
    rule(&r, PDK_DECISION_DENY, "added", "ls", NULL);
    pdk_command_verdict v;
    pdk_command_rules_judge(&r, (char *[]){"ls", NULL}, &v);
    assert_int_equal(v.decision, PDK_DECISION_DENY);
    assert_string_equal(v.reason, "added");
    pdk_command_rules_free(&r);
}

/* An `under` pattern for the last rule added: "tok", "alt1|alt2", ..., NULL. */
static void under(pdk_command_rules *rules, ...)
{
    char **tokens[16];
    va_list ap;
    va_start(ap, rules);
    size_t n = pattern_of(ap, tokens);
    va_end(ap);
    pdk_command_rules_add_under(rules, rules->count - 1, (char *const *const *)tokens, n);
    for (size_t i = 0; i < n; i++)
        pdk_strv_free(tokens[i]);
}

static pdk_decision decide(const pdk_command_rules *rules, char *const *argv, char *const *names,
                           char *const *ancestor)
{
    char *const *ancestors[] = {ancestor, NULL};
    pdk_command_query q = {.argv = argv,
                           .names = names,
                           .ancestors = ancestor ? (char *const *const *)ancestors : NULL};
    pdk_command_verdict v;
    pdk_command_rules_judge_query(rules, &q, &v);
    return v.decision;
}

#define ARGV(...) ((char *const[]){__VA_ARGS__, NULL})

static void test_global_options(void **state)
{
    pdk_command_rules r = {.default_decision = PDK_DECISION_ALLOW};
    rule(&r, PDK_DECISION_ASK, NULL, "git", "push", NULL);
    rule(&r, PDK_DECISION_ASK, NULL, "npm|pnpm|yarn", "publish", NULL);
    rule(&r, PDK_DECISION_DENY, NULL, "pip", "uninstall", NULL);
    rule(&r, PDK_DECISION_DENY, NULL, "python3", "-m", "http.server", NULL);
    rule(&r, PDK_DECISION_DENY, NULL, "uv", "pip", "uninstall", NULL);
    /* git's global options before the subcommand, in every form git takes them */
    char *const *const asks[] = {
        ARGV("git", "-C", ".", "push"),
        ARGV("git", "-c", "core.pager=cat", "--no-pager", "push", "origin"),
        ARGV("git", "--git-dir=.git", "--work-tree", ".", "push"),
        ARGV("git", "-P", "--bare", "--namespace", "x", "--no-optional-locks", "push"),
        ARGV("git", "--exec-path=/usr/lib/git-core", "--literal-pathspecs", "push"),
        ARGV("git", "--", "push"),
        /* an option git gained later: tried both ways */
        ARGV("git", "--new-option", "value", "push"),
        ARGV("git", "--new-flag", "push"),
        /* an alias defined on the command line hides what runs */
        ARGV("git", "-c", "alias.p=push", "p"),
        ARGV("git", "-c", "ALIAS.P=!sh -c true", "p"),
        ARGV("git", "--config-env=alias.p=VAR", "p"),
        ARGV("npm", "--registry=https://x", "-g", "publish"),
        ARGV("npm", "--prefix", "dir", "publish"),
        ARGV("yarn", "--cwd", "dir", "publish"),
        ARGV("pnpm", "-C", "dir", "-r", "publish"),
    };
    for (size_t i = 0; i < sizeof(asks) / sizeof(asks[0]); i++) {
        if (decide(&r, asks[i], NULL, NULL) != PDK_DECISION_ASK)
            fail_msg("case %zu (%s %s ...) is not ask", i, asks[i][1], asks[i][2]);
    }
    char *const *const denies[] = {
        ARGV("pip", "--no-input", "--timeout", "5", "uninstall", "x"),
        ARGV("python3", "-I", "-m", "http.server"),
        ARGV("python3", "-Im", "http.server"),
        ARGV("python3", "-X", "dev", "-W", "ignore", "-mhttp.server", "8000"),
        ARGV("uv", "--directory", "d", "-q", "pip", "uninstall", "x"),
    };
    for (size_t i = 0; i < sizeof(denies) / sizeof(denies[0]); i++)
        if (decide(&r, denies[i], NULL, NULL) != PDK_DECISION_DENY)
            fail_msg("case %zu (%s %s ...) is not deny", i, denies[i][0], denies[i][1]);
    char *const *const allows[] = {
        ARGV("git", "-C", "push", "status"), /* push is -C's directory */
        ARGV("git", "status"),
        ARGV("git", "-c", "alias.s=status", "log"),
        ARGV("python3", "-c", "import x", "-m", "http.server"),
        ARGV("npm", "test"),
    };
    for (size_t i = 0; i < sizeof(allows) / sizeof(allows[0]); i++)
        if (decide(&r, allows[i], NULL, NULL) != PDK_DECISION_ALLOW)
            fail_msg("case %zu (%s %s ...) is not allow", i, allows[i][0], allows[i][1]);
    /* many options a table does not know: what runs cannot be told */
    assert_int_equal(
        decide(&r, ARGV("git", "--a", "--b", "--c", "--d", "--e", "status"), NULL, NULL),
        PDK_DECISION_ASK);
    pdk_command_rules_free(&r);
}

static void test_names_and_loader(void **state)
{
    pdk_command_rules r = {.default_decision = PDK_DECISION_ALLOW};
    rule(&r, PDK_DECISION_DENY, "no touch", "touch", NULL);
    rule(&r, PDK_DECISION_ASK, NULL, "git", "push", NULL);
    rule(&r, PDK_DECISION_DENY, NULL, "/opt/tool/bin/*", NULL);
    /* exec -a: argv[0] is the caller's word, the names are the file's */
    assert_int_equal(decide(&r, ARGV("ls", "x"), NULL, NULL), PDK_DECISION_ALLOW);
    assert_int_equal(decide(&r, ARGV("ls", "x"), ARGV("/usr/bin/touch"), NULL), PDK_DECISION_DENY);
    assert_int_equal(decide(&r, ARGV("x", "push"), ARGV("/usr/bin/git"), NULL), PDK_DECISION_ASK);
    assert_int_equal(decide(&r, ARGV("./ls", "x"), ARGV("./ls", "/opt/tool/bin/t"), NULL),
                     PDK_DECISION_DENY);
    /* the dynamic loader's program, with and without --argv0 */
    assert_int_equal(
        decide(&r, ARGV("/lib64/ld-linux-x86-64.so.2", "/usr/bin/touch", "f"), NULL, NULL),
        PDK_DECISION_DENY);
    assert_int_equal(decide(&r,
                            ARGV("ld-linux-x86-64.so.2", "--preload", "", "--library-path", "/x",
                                 "--argv0", "ls", "/usr/bin/touch"),
                            NULL, NULL),
                     PDK_DECISION_DENY);
    assert_int_equal(decide(&r, ARGV("/lib/ld-musl-x86_64.so.1", "--", "git", "push"), NULL, NULL),
                     PDK_DECISION_ASK);
    assert_int_equal(
        decide(&r, ARGV("/lib64/ld-linux-x86-64.so.2", "--list", "/usr/bin/ls"), NULL, NULL),
        PDK_DECISION_ALLOW);
    /* the loader through a shell */
    assert_int_equal(
        decide(&r, ARGV("sh", "-c", "/lib64/ld-linux-x86-64.so.2 /usr/bin/touch f"), NULL, NULL),
        PDK_DECISION_DENY);
    pdk_command_rules_free(&r);
}

static void test_under(void **state)
{
    pdk_command_rules r = {.default_decision = PDK_DECISION_ALLOW};
    rule(&r, PDK_DECISION_CONFINE, "install script", "*", NULL);
    under(&r, "npm", "install|ci", NULL);
    under(&r, "python3", "-m", "pip", "install", NULL);
    under(&r, "npx", NULL);
    assert_true(r.has_under);
    char *const *npm = ARGV("npm", "install", "left-pad");
    /* no installer above: the rule does not hold */
    assert_int_equal(decide(&r, ARGV("sh", "-c", "node install.js"), NULL, NULL),
                     PDK_DECISION_ALLOW);
    /* below one: it does, through the shell too */
    assert_int_equal(decide(&r, ARGV("sh", "-c", "node install.js"), NULL, npm),
                     PDK_DECISION_CONFINE);
    assert_int_equal(
        decide(&r, ARGV("node-gyp", "rebuild"), NULL, ARGV("npm", "--prefix", "d", "ci")),
        PDK_DECISION_CONFINE);
    /* below an npm that installs nothing: not */
    assert_int_equal(decide(&r, ARGV("sh", "-c", "jest"), NULL, ARGV("npm", "test")),
                     PDK_DECISION_ALLOW);
    /* an installer's own child that is an installer: not confined */
    assert_int_equal(decide(&r, ARGV("python3", "-m", "pip", "install", "setuptools"), NULL,
                            ARGV("python3", "-m", "pip", "install", ".")),
                     PDK_DECISION_ALLOW);
    assert_int_equal(decide(&r, ARGV("python3", "-I", "-m", "pip", "install", "wheel"), NULL,
                            ARGV("python3", "-m", "pip", "install", ".")),
                     PDK_DECISION_ALLOW);
    /* ... but a script run by it is */
    assert_int_equal(decide(&r, ARGV("python3", "setup.py", "egg_info"), NULL,
                            ARGV("python3", "-m", "pip", "install", ".")),
                     PDK_DECISION_CONFINE);
    /* which commands start something under them, by any name */
    pdk_command_query q = {.argv = npm};
    assert_true(pdk_command_rules_starts_under(&r, &q));
    q.argv = ARGV("npm", "test");
    assert_false(pdk_command_rules_starts_under(&r, &q));
    q.argv = ARGV("x", "install");
    q.names = ARGV("/usr/bin/npm");
    assert_true(pdk_command_rules_starts_under(&r, &q));
    q = (pdk_command_query){.argv = ARGV("npx", "-y", "cowsay")};
    assert_true(pdk_command_rules_starts_under(&r, &q));
    pdk_command_rules_free(&r);
    assert_false(r.has_under);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix_and_default),
        cmocka_unit_test(test_alternatives_and_globs),
        cmocka_unit_test(test_executable_by_basename_or_path),
        cmocka_unit_test(test_strictest_wins),
        cmocka_unit_test(test_shell_wrappers),
        cmocka_unit_test(test_decision_names),
        cmocka_unit_test(test_index_agrees_with_every_rule),
        cmocka_unit_test(test_global_options),
        cmocka_unit_test(test_names_and_loader),
        cmocka_unit_test(test_under),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
