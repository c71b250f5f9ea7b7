/* test_command_rules.c: the matcher of command rules (argv prefixes, alternatives, globs,
 * executable by basename or path, strictest wins, the default) and seeing through shell
 * wrappers. */
#include "command_rules.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* rule(rules, decision, reason, "tok", "alt1|alt2", ...) with NULL at the end. */
static void rule(pdk_command_rules *rules, pdk_decision d, const char *reason, ...)
{
    char **tokens[16];
    size_t n = 0;
    va_list ap;
    va_start(ap, reason);
    for (const char *t = va_arg(ap, const char *); t; t = va_arg(ap, const char *)) {
        char **alts = NULL;
        _cleanup_free_ char *copy = xstrdup(t);
        char *save = NULL;
        for (char *a = strtok_r(copy, "|", &save); a; a = strtok_r(NULL, "|", &save))
            pdk_strv_push(&alts, a);
        tokens[n++] = alts;
    }
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
