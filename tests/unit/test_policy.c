/* test_policy.c: the policy parser (src/policy/policy.c and its policy_*.c files).
 *
 * Most tests parse a small text and compare either the resulting struct or the exact
 * formatted diagnostics ("policy.yaml:LINE:COLUMN: message"), so that a change of position,
 * wording or count shows up here.
 */
#include "fsutil.h"
#include "policy.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define NAME "policy.yaml"

static const pdk_policy_context ctx = {.home = "/home/u"};

static pdk_policy *parse_ok_ctx(const char *text, const pdk_policy_context *c)
{
    pdk_policy *p = NULL;
    pdk_policy_diags diags = {0};
    pdk_error err = {0};
    int r = pdk_policy_parse(NAME, text, strlen(text), c, &p, &diags, &err);
    if (r != 0) {
        for (size_t i = 0; i < diags.count; i++) {
            char *line = pdk_policy_diag_format(&diags.items[i]);
            print_error("unexpected diagnostic: %s\n", line);
            free(line);
        }
    }
    assert_int_equal(r, 0);
    assert_non_null(p);
    assert_int_equal(diags.count, 0);
    return p;
}

static pdk_policy *parse_ok(const char *text)
{
    return parse_ok_ctx(text, &ctx);
}

/* Parse text that must fail; returns the diagnostics formatted, NULL-terminated. */
static char **parse_fail_ctx(const char *text, const pdk_policy_context *c)
{
    pdk_policy *p = (pdk_policy *)&p; /* must be reset to NULL */
    pdk_policy_diags diags = {0};
    pdk_error err = {0};
    int r = pdk_policy_parse(NAME, text, strlen(text), c, &p, &diags, &err);
    assert_int_equal(r, -1);
    assert_null(p);
    assert_true(diags.count > 0);
    char **lines = NULL;
    for (size_t i = 0; i < diags.count; i++) {
        assert_string_equal(diags.items[i].file, NAME);
        pdk_strv_push_take(&lines, pdk_policy_diag_format(&diags.items[i]));
    }
    /* pdk_error carries the first diagnostic, formatted. */
    assert_string_equal(err.message, lines[0]);
    pdk_policy_diags_free(&diags);
    assert_int_equal(diags.count, 0);
    assert_null(diags.items);
    return lines;
}

static char **parse_fail(const char *text)
{
    return parse_fail_ctx(text, &ctx);
}

/* The text fails with exactly this one diagnostic. */
static void assert_one_diag(const char *text, const char *expected)
{
    char **lines = parse_fail(text);
    if (pdk_strv_length(lines) != 1 || strcmp(lines[0], expected) != 0) {
        for (size_t i = 0; lines[i]; i++)
            print_error("got: %s\n", lines[i]);
        print_error("expected: %s\n", expected);
        fail();
    }
    pdk_strv_free(lines);
}

static void assert_strv_equal(char **got, const char *const *expected)
{
    size_t n = 0;
    while (expected[n])
        n++;
    assert_non_null(got);
    assert_int_equal(pdk_strv_length(got), n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(got[i], expected[i]);
}

/* ---- valid policies ---- */

static const char full_policy[] = "version: 1\n"
                                  "filesystem:\n"
                                  "  read_deny: [~/secrets]\n"
                                  "  read_allow: [~/.gitconfig]\n"
                                  "  write: [~/.cache/pip]\n"
                                  "  protect: [.env, .github/workflows/]\n"
                                  "env:\n"
                                  "  pass: [GOPATH, \"LC_*\"]\n"
                                  "  set: {CI: \"1\"}\n"
                                  "limits:\n"
                                  "  memory: 2G\n"
                                  "  pids: 512\n"
                                  "  cpu: 2\n"
                                  "  timeout: 600\n"
                                  "landlock:\n"
                                  "  min_abi: 1\n"
                                  "  tcp_bind: [8080]\n"
                                  "  tcp_connect: [5432]\n"
                                  "sandbox:\n"
                                  "  nested_userns: false\n";

static void test_full_policy(void **state)
{
    pdk_policy *p = parse_ok(full_policy);
    assert_string_equal(p->source, NAME);
    assert_null(p->base_dir); /* only load_file knows a directory */
    assert_strv_equal(p->read_deny, (const char *[]){"/home/u/secrets", NULL});
    assert_strv_equal(p->read_allow, (const char *[]){"/home/u/.gitconfig", NULL});
    assert_strv_equal(p->write, (const char *[]){"/home/u/.cache/pip", NULL});
    assert_strv_equal(p->protect, (const char *[]){".env", ".github/workflows/", NULL});
    assert_strv_equal(p->env_pass, (const char *[]){"GOPATH", "LC_*", NULL});
    assert_int_equal(p->env_set_count, 1);
    assert_string_equal(p->env_set[0].name, "CI");
    assert_string_equal(p->env_set[0].value, "1");
    assert_int_equal(p->memory_bytes, 2LL << 30);
    assert_int_equal(p->pids, 512);
    assert_int_equal(p->cpu_millicores, 2000);
    assert_int_equal(p->timeout_seconds, 600);
    assert_int_equal(p->landlock_min_abi, 1);
    assert_true(p->has_tcp_bind);
    assert_int_equal(p->tcp_bind_count, 1);
    assert_int_equal(p->tcp_bind[0], 8080);
    assert_true(p->has_tcp_connect);
    assert_int_equal(p->tcp_connect_count, 1);
    assert_int_equal(p->tcp_connect[0], 5432);
    assert_false(p->nested_userns);
    pdk_policy_free(p);
}

static void assert_defaults(const pdk_policy *p)
{
    assert_int_equal(p->memory_bytes, 0);
    assert_int_equal(p->pids, 1024);
    assert_int_equal(p->cpu_millicores, 0);
    assert_int_equal(p->timeout_seconds, 0);
    assert_int_equal(p->landlock_min_abi, 1);
    assert_false(p->nested_userns);
    assert_false(p->has_tcp_bind);
    assert_false(p->has_tcp_connect);
    assert_int_equal(p->tcp_bind_count, 0);
    assert_int_equal(p->tcp_connect_count, 0);
    assert_int_equal(p->env_set_count, 0);
    /* Lists are empty arrays, never NULL. */
    char **lists[] = {p->read_deny, p->read_allow, p->write, p->protect, p->env_pass};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(lists); i++) {
        assert_non_null(lists[i]);
        assert_null(lists[i][0]);
    }
}

static void test_defaults(void **state)
{
    pdk_policy *p = parse_ok("version: 1\n");
    assert_defaults(p);
    pdk_policy_free(p);

    /* Sections present but keys absent: still the defaults. */
    p = parse_ok("version: 1\nlimits: {}\nlandlock: {}\nsandbox: {}\nfilesystem: {}\n");
    assert_defaults(p);
    pdk_policy_free(p);

    /* One key given leaves the others at their default. */
    p = parse_ok("version: 1\nlimits:\n  pids: 7\n");
    assert_int_equal(p->pids, 7);
    assert_int_equal(p->memory_bytes, 0);
    pdk_policy_free(p);
}

static void test_builtin_default(void **state)
{
    pdk_policy *p = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_policy_load_default(&ctx, &p, &err), 0);
    assert_non_null(p);
    assert_string_equal(p->source, "<built-in default>");
    assert_null(p->base_dir);
    assert_defaults(p);
    pdk_policy_free(p);

    /* It does not depend on a home directory. */
    p = NULL;
    assert_int_equal(pdk_policy_load_default(NULL, &p, &err), 0);
    assert_defaults(p);
    pdk_policy_free(p);

    /* The embedded text that documents the default parses to exactly the default. */
    const char *text = pdk_policy_default_text();
    p = NULL;
    pdk_policy_diags diags = {0};
    assert_int_equal(
        pdk_policy_parse("<built-in default>", text, strlen(text), &ctx, &p, &diags, &err), 0);
    assert_int_equal(diags.count, 0);
    assert_defaults(p);
    pdk_policy *direct = NULL;
    assert_int_equal(pdk_policy_load_default(&ctx, &direct, &err), 0);
    assert_int_equal(p->memory_bytes, direct->memory_bytes);
    assert_int_equal(p->pids, direct->pids);
    assert_int_equal(p->cpu_millicores, direct->cpu_millicores);
    assert_int_equal(p->timeout_seconds, direct->timeout_seconds);
    assert_int_equal(p->landlock_min_abi, direct->landlock_min_abi);
    assert_int_equal(p->nested_userns, direct->nested_userns);
    assert_int_equal(p->has_tcp_bind, direct->has_tcp_bind);
    assert_int_equal(p->has_tcp_connect, direct->has_tcp_connect);
    assert_int_equal(pdk_strv_length(p->read_deny) + pdk_strv_length(p->read_allow) +
                         pdk_strv_length(p->write) + pdk_strv_length(p->protect) +
                         pdk_strv_length(p->env_pass) + p->env_set_count,
                     0);
    pdk_policy_free(direct);
    pdk_policy_diags_free(&diags);
    pdk_policy_free(p);
}

static void test_tilde_expansion(void **state)
{
    pdk_policy *p =
        parse_ok("version: 1\n"
                 "filesystem:\n"
                 "  read_deny: [~, ~/, ~/a/../b, \"~/./c//d/\", /etc//x/./y/, /a/../../z]\n"
                 "  write:\n"
                 "    - ~\n"
                 "    - ~/.cache\n"
                 "  protect: [~/notes/, ~/f, /srv/shared/]\n");
    assert_strv_equal(p->read_deny, (const char *[]){"/home/u", "/home/u", "/home/u/b",
                                                     "/home/u/c/d", "/etc/x/y", "/z", NULL});
    assert_strv_equal(p->write, (const char *[]){"/home/u", "/home/u/.cache", NULL});
    assert_strv_equal(p->protect,
                      (const char *[]){"/home/u/notes/", "/home/u/f", "/srv/shared/", NULL});
    pdk_policy_free(p);

    /* The home itself is normalised first. */
    pdk_policy_context messy = {.home = "/home//v/"};
    p = parse_ok_ctx("version: 1\nfilesystem:\n  write: [~/x]\n", &messy);
    assert_strv_equal(p->write, (const char *[]){"/home/v/x", NULL});
    pdk_policy_free(p);
}

static void test_tilde_without_home(void **state)
{
    static const char text[] = "version: 1\nfilesystem:\n  write: [/tmp/a, ~/x]\n";
    const char *expected = NAME ":3:19: filesystem.write: \"~/x\" cannot be expanded: no home "
                                "directory is known (set $HOME, or write an absolute path)";
    char **lines = parse_fail_ctx(text, NULL);
    assert_strv_equal(lines, (const char *[]){expected, NULL});
    pdk_strv_free(lines);
    pdk_policy_context relative = {.home = "relative/home"};
    lines = parse_fail_ctx(text, &relative);
    assert_strv_equal(lines, (const char *[]){expected, NULL});
    pdk_strv_free(lines);

    /* Absolute paths need no home. */
    pdk_policy *p = parse_ok_ctx("version: 1\nfilesystem:\n  write: [/tmp/a]\n", NULL);
    assert_strv_equal(p->write, (const char *[]){"/tmp/a", NULL});
    pdk_policy_free(p);
}

static void test_protect_normalisation(void **state)
{
    pdk_policy *p = parse_ok("version: 1\n"
                             "filesystem:\n"
                             "  protect: [.env, ./a//b/, a/../c, .github/workflows/, x/./y/., "
                             "\"d/e/..\"]\n");
    assert_strv_equal(
        p->protect, (const char *[]){".env", "a/b/", "c", ".github/workflows/", "x/y", "d", NULL});
    pdk_policy_free(p);
}

static void test_path_errors(void **state)
{
    char **lines = parse_fail("version: 1\n"
                              "filesystem:\n"
                              "  read_deny: [secrets, ~bob/x, \"~/../etc\", \"\"]\n"
                              "  read_allow: [./x]\n"
                              "  protect:\n"
                              "    - ../x\n"
                              "    - a/../../b\n"
                              "    - ./\n");
    assert_strv_equal(
        lines,
        (const char *[]){
            NAME ":3:15: filesystem.read_deny: \"secrets\" must be absolute or start with ~/",
            NAME ":3:24: filesystem.read_deny: \"~bob/x\": \"~user\" paths are not supported "
                 "(write the absolute path)",
            NAME ":3:32: filesystem.read_deny: \"~/../etc\" leaves the home directory (write "
                 "the absolute path)",
            NAME ":3:44: filesystem.read_deny: empty path",
            NAME ":4:16: filesystem.read_allow: \"./x\" must be absolute or start with ~/",
            NAME ":6:7: filesystem.protect: \"../x\" leaves the workspace (protect paths are "
                 "relative to the workspace root; remove the \"..\")",
            NAME ":7:7: filesystem.protect: \"a/../../b\" leaves the workspace (protect paths "
                 "are relative to the workspace root; remove the \"..\")",
            NAME ":8:7: filesystem.protect: \"./\" is the workspace itself (name a file or "
                 "directory inside it)",
            NULL});
    pdk_strv_free(lines);
}

static void test_env(void **state)
{
    pdk_policy *p = parse_ok("version: 1\n"
                             "env:\n"
                             "  pass: [GOPATH, _X9, \"LC_*\"]\n"
                             "  set:\n"
                             "    CI: \"1\"\n"
                             "    N: 42\n"
                             "    B: true\n"
                             "    EMPTY: \"\"\n"
                             "    MULTI: \"a b\\nc\"\n");
    assert_strv_equal(p->env_pass, (const char *[]){"GOPATH", "_X9", "LC_*", NULL});
    assert_int_equal(p->env_set_count, 5);
    const char *names[] = {"CI", "N", "B", "EMPTY", "MULTI"};
    const char *values[] = {"1", "42", "true", "", "a b\nc"};
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(p->env_set[i].name, names[i]);
        assert_string_equal(p->env_set[i].value, values[i]);
    }
    pdk_policy_free(p);

    char **lines = parse_fail("version: 1\n"
                              "env:\n"
                              "  pass: [\"*\", A-B, 1X, \"A*B\", [x]]\n"
                              "  set: {CI: , \"9\": x, L: [1], \"X*\": y}\n");
    assert_strv_equal(
        lines,
        (const char *[]){
            NAME ":3:10: env.pass: \"*\" would pass every variable, secrets included (name "
                 "them, or use a prefix such as \"LC_*\")",
            NAME ":3:15: env.pass: \"A-B\" is not a variable name (letters, digits and _, not "
                 "starting with a digit; a trailing * matches a prefix)",
            NAME ":3:20: env.pass: \"1X\" is not a variable name (letters, digits and _, not "
                 "starting with a digit; a trailing * matches a prefix)",
            NAME ":3:24: env.pass: \"A*B\" is not a variable name (letters, digits and _, not "
                 "starting with a digit; a trailing * matches a prefix)",
            NAME ":3:31: env.pass: expected a variable name, got a list",
            NAME ":4:13: env.set.CI: missing value (write \"\" for an empty string)",
            NAME ":4:15: env.set: \"9\" is not a variable name (letters, digits and _, not "
                 "starting with a digit)",
            NAME ":4:26: env.set.L: expected a value, got a list",
            NAME ":4:31: env.set: \"X*\" is not a variable name (letters, digits and _, not "
                 "starting with a digit)",
            NULL});
    pdk_strv_free(lines);
}

static void test_limits(void **state)
{
    pdk_policy *p = parse_ok("version: 1\nlimits:\n  memory: 512MiB\n  pids: 1\n  cpu: 1.5\n"
                             "  timeout: 2h\n");
    assert_int_equal(p->memory_bytes, 512LL << 20);
    assert_int_equal(p->pids, 1);
    assert_int_equal(p->cpu_millicores, 1500);
    assert_int_equal(p->timeout_seconds, 7200);
    pdk_policy_free(p);

    p = parse_ok("version: 1\nlimits: {memory: unlimited, pids: unlimited, cpu: unlimited, "
                 "timeout: unlimited}\n");
    assert_int_equal(p->memory_bytes, 0);
    assert_int_equal(p->pids, 0);
    assert_int_equal(p->cpu_millicores, 0);
    assert_int_equal(p->timeout_seconds, 0);
    pdk_policy_free(p);

    p = parse_ok("version: 1\nlimits: {memory: 0, pids: 0, cpu: 0, timeout: 0}\n");
    assert_int_equal(p->memory_bytes, 0);
    assert_int_equal(p->pids, 0);
    pdk_policy_free(p);

    /* Quoted values are read by their text too. */
    p = parse_ok(
        "version: 1\nlimits: {memory: \"64K\", pids: '9', cpu: \"0.25\", timeout: '90s'}\n");
    assert_int_equal(p->memory_bytes, 64 << 10);
    assert_int_equal(p->pids, 9);
    assert_int_equal(p->cpu_millicores, 250);
    assert_int_equal(p->timeout_seconds, 90);
    pdk_policy_free(p);
}

static void test_limit_errors(void **state)
{
    assert_one_diag("version: 1\nlimits:\n  memory: 2X\n",
                    NAME ":3:11: limits.memory: \"2X\" is not a size (use a number with K, M, G or "
                         "T, e.g. 2G)");
    char **lines = parse_fail("version: 1\n"
                              "limits:\n"
                              "  memory: 99999999999T\n"
                              "  pids: -1\n"
                              "  cpu: 0.0001\n"
                              "  timeout: 5y\n");
    assert_strv_equal(
        lines, (const char *[]){
                   NAME ":3:11: limits.memory: \"99999999999T\" is too large",
                   NAME ":4:9: limits.pids: \"-1\" is not a number of processes (use a positive "
                        "integer; 0 or unlimited for no limit)",
                   NAME ":5:8: limits.cpu: \"0.0001\" is finer than 0.001 cores (use at most 3 "
                        "decimals)",
                   NAME ":6:12: limits.timeout: \"5y\" is not a duration (use seconds, or a number "
                        "with s, m, h or d, e.g. 10m; 0 for no timeout)",
                   NULL});
    pdk_strv_free(lines);

    lines = parse_fail("version: 1\n"
                       "limits:\n"
                       "  pids: 4194305\n"
                       "  cpu: 65537\n"
                       "  timeout: 106751991167301d\n");
    assert_strv_equal(
        lines,
        (const char *[]){NAME ":3:9: limits.pids: \"4194305\" is too large (at most 4194304)",
                         NAME ":4:8: limits.cpu: \"65537\" is too large (at most 65536 cores)",
                         NAME ":5:12: limits.timeout: \"106751991167301d\" is too long", NULL});
    pdk_strv_free(lines);

    /* The timeout must fit in nanoseconds: 9223372036 s does, one more does not. */
    pdk_policy *p = parse_ok("version: 1\nlimits:\n  timeout: 9223372036\n");
    assert_int_equal(p->timeout_seconds, 9223372036LL);
    pdk_policy_free(p);
    assert_one_diag("version: 1\nlimits:\n  timeout: 9223372037\n",
                    NAME ":3:12: limits.timeout: \"9223372037\" is too long");
}

static void test_cpu_values(void **state)
{
    static const struct {
        const char *text;
        int64_t millicores;
    } ok[] = {{"2", 2000},     {"1.5", 1500},    {"0.25", 250}, {".5", 500},        {"3.", 3000},
              {"1.000", 1000}, {"1.5000", 1500}, {"0.001", 1},  {"65536", 65536000}};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(ok); i++) {
        char *text = xasprintf("version: 1\nlimits:\n  cpu: \"%s\"\n", ok[i].text);
        pdk_policy *p = parse_ok(text);
        assert_int_equal(p->cpu_millicores, ok[i].millicores);
        pdk_policy_free(p);
        free(text);
    }
    static const char *const bad[] = {"abc", "1.2.3", ".", "-1", "1,5", "1.5c", " 1"};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(bad); i++) {
        char *text = xasprintf("version: 1\nlimits:\n  cpu: \"%s\"\n", bad[i]);
        char **lines = parse_fail(text);
        assert_int_equal(pdk_strv_length(lines), 1);
        assert_non_null(strstr(lines[0], "is not a number of cores"));
        pdk_strv_free(lines);
        free(text);
    }
}

static void test_landlock(void **state)
{
    pdk_policy *p = parse_ok("version: 1\nlandlock:\n  min_abi: 0\n  tcp_bind: []\n"
                             "  tcp_connect: [0, 443, 65535]\n");
    assert_int_equal(p->landlock_min_abi, 0);
    assert_true(p->has_tcp_bind); /* an empty list still means "deny every bind" */
    assert_int_equal(p->tcp_bind_count, 0);
    assert_true(p->has_tcp_connect);
    assert_int_equal(p->tcp_connect_count, 3);
    assert_int_equal(p->tcp_connect[0], 0);
    assert_int_equal(p->tcp_connect[1], 443);
    assert_int_equal(p->tcp_connect[2], 65535);
    pdk_policy_free(p);

    p = parse_ok("version: 1\nlandlock:\n  min_abi: 64\n");
    assert_int_equal(p->landlock_min_abi, 64);
    assert_false(p->has_tcp_bind);
    assert_false(p->has_tcp_connect);
    pdk_policy_free(p);

    char **lines = parse_fail("version: 1\n"
                              "landlock:\n"
                              "  min_abi: 65\n"
                              "  tcp_bind: [http, 65536, -1]\n"
                              "  tcp_connect:\n");
    assert_strv_equal(
        lines,
        (const char *[]){
            NAME ":3:12: landlock.min_abi: \"65\" is not a Landlock ABI version (use 0 to 64; 0 "
                 "runs even without Landlock)",
            NAME ":4:14: landlock.tcp_bind: \"http\" is not a port (use a number from 0 to "
                 "65535)",
            NAME ":4:20: landlock.tcp_bind: \"65536\" is not a port (use a number from 0 to "
                 "65535)",
            NAME ":4:27: landlock.tcp_bind: \"-1\" is not a port (use a number from 0 to 65535)",
            NAME ":5:15: landlock.tcp_connect: expected a list, got nothing (use [] for an "
                 "empty list)",
            NULL});
    pdk_strv_free(lines);
}

static void test_nested_userns(void **state)
{
    static const struct {
        const char *text;
        bool value;
    } ok[] = {{"true", true},   {"yes", true}, {"True", true}, {"on", true},
              {"false", false}, {"no", false}, {"NO", false},  {"off", false}};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(ok); i++) {
        /* Start from the opposite, so that a value left untouched fails. */
        char *text = xasprintf("version: 1\nsandbox:\n  nested_userns: %s\n", ok[i].text);
        pdk_policy *p = parse_ok(text);
        assert_int_equal(p->nested_userns, ok[i].value);
        pdk_policy_free(p);
        free(text);
    }
    assert_one_diag("version: 1\nsandbox:\n  nested_userns: \"true\"\n",
                    NAME ":3:18: sandbox.nested_userns: expected true or false, got \"true\" "
                         "(remove the quotes)");
    assert_one_diag("version: 1\nsandbox:\n  nested_userns: maybe\n",
                    NAME ":3:18: sandbox.nested_userns: expected true or false, got \"maybe\"");
}

static void test_home_persist(void **state)
{
    pdk_policy *p = parse_ok("version: 1\n");
    assert_null(p->home_persist);
    pdk_policy_free(p);
    p = parse_ok("version: 1\nhome:\n  persist: claude-code\n");
    assert_string_equal(p->home_persist, "claude-code");
    pdk_policy_free(p);
    p = parse_ok("version: 1\nhome: {persist: codex.2_b}\n");
    assert_string_equal(p->home_persist, "codex.2_b");
    pdk_policy_free(p);
    /* Names that could leave STATE/homes, hide themselves or read as an option. */
    static const char *const bad[] = {"../x", "a/b", ".codex", "-x", "a b", "..", "\"\""};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(bad); i++) {
        char *text = xasprintf("version: 1\nhome:\n  persist: %s\n", bad[i]);
        char **lines = parse_fail(text);
        assert_int_equal(pdk_strv_length(lines), 1);
        assert_non_null(strstr(lines[0], NAME ":3:12: home.persist: "));
        assert_non_null(strstr(lines[0], " is not a home name (letters, digits"));
        pdk_strv_free(lines);
        free(text);
    }
    char *long_name = xasprintf("version: 1\nhome: {persist: %0*d}\n", PDK_HOME_NAME_MAX + 1, 0);
    char **lines = parse_fail(long_name);
    assert_int_equal(pdk_strv_length(lines), 1);
    pdk_strv_free(lines);
    free(long_name);
    assert_one_diag("version: 1\nhome:\n  persit: x\n",
                    NAME ":3:3: unknown key \"persit\" in \"home\" (did you mean \"persist\"?)");
    assert_one_diag("version: 1\nhome:\n  persist: [a]\n",
                    NAME ":3:12: home.persist: expected a name, got a list");
}

/* quiet: true on deny rules only, commands and network alike. */
static void test_quiet_rules(void **state)
{
    pdk_policy *p = parse_ok("version: 1\n"
                             "commands:\n"
                             "  rules:\n"
                             "    - {match: [mkdir], decision: deny, quiet: true}\n"
                             "    - {match: [touch], decision: deny}\n"
                             "    - {match: [ls], decision: allow, quiet: false}\n"
                             "network:\n"
                             "  rules:\n"
                             "    - {host: telemetry.test, decision: deny, quiet: yes}\n"
                             "    - {host: api.test, decision: allow}\n");
    assert_int_equal(p->commands.count, 3);
    assert_true(p->commands.rules[0].quiet);
    assert_false(p->commands.rules[1].quiet);
    assert_false(p->commands.rules[2].quiet);
    assert_int_equal(p->network.count, 2);
    assert_true(p->network.rules[0].quiet);
    assert_false(p->network.rules[1].quiet);
    pdk_policy_free(p);
    assert_one_diag("version: 1\ncommands:\n  rules:\n"
                    "    - {match: [git], decision: ask, quiet: true}\n",
                    NAME ":4:44: commands.rules[0].quiet: quiet is for deny rules (their refusals "
                         "are recorded and not shown; a rule that lets something through or asks "
                         "a human is never quiet)");
    assert_one_diag("version: 1\nnetwork:\n  rules:\n"
                    "    - {host: a.test, decision: allow, quiet: true}\n",
                    NAME ":4:46: network.rules[0].quiet: quiet is for deny rules (their refusals "
                         "are recorded and not shown; a rule that lets something through or asks "
                         "a human is never quiet)");
    assert_one_diag("version: 1\nnetwork:\n  rules:\n"
                    "    - {host: a.test, decision: deny, quiet: \"yes\"}\n",
                    NAME ":4:45: network.rules[0].quiet: expected true or false, got \"yes\" "
                         "(remove the quotes)");
}

/* ---- error classes ---- */

static void test_missing_version(void **state)
{
    const char *expected = NAME ":1:1: missing \"version: 1\" (add it as the first line)";
    assert_one_diag("", expected);
    assert_one_diag("# only a comment\n", expected);
    assert_one_diag("---\n", expected);
    assert_one_diag("limits: {}\n", expected);
    /* The missing version comes first, before problems further down. */
    char **lines = parse_fail("limits:\n  pids: x\n");
    assert_int_equal(pdk_strv_length(lines), 2);
    assert_string_equal(lines[0], expected);
    assert_non_null(strstr(lines[1], NAME ":2:9: limits.pids: \"x\""));
    pdk_strv_free(lines);
}

static void test_version_values(void **state)
{
    assert_one_diag("version: 2\n", NAME ":1:10: version: 2 is not supported (this version "
                                         "of paddock reads version 1)");
    assert_one_diag("version: \"1\"\n",
                    NAME ":1:10: version: expected the integer 1, got the string \"1\" (remove "
                         "the quotes)");
    assert_one_diag("version: one\n", NAME ":1:10: version: expected the integer 1, got \"one\"");
    assert_one_diag("version:\n", NAME ":1:9: version: expected the integer 1, got nothing");
    assert_one_diag("version: [1]\n", NAME ":1:10: version: expected the integer 1, got a list");
    /* Anywhere in the file is fine. */
    pdk_policy *p = parse_ok("limits: {}\nversion: 1\n");
    pdk_policy_free(p);
}

static void test_unknown_keys(void **state)
{
    /* 4-space indent so that the key sits at column 5, line 12. */
    assert_one_diag("# comment\n\n\n\n\n\n\n\n\nversion: 1\nfilesystem:\n    wirte: []\n",
                    NAME ":12:5: unknown key \"wirte\" in \"filesystem\" (did you mean "
                         "\"write\"?)");
    char **lines = parse_fail("version: 1\n"
                              "filesystem:\n"
                              "  hosts: [a]\n"
                              "  raed_deny: [~/x]\n"
                              "limits:\n"
                              "  memroy: 1G\n"
                              "Sandbox: {}\n"
                              "limit: {}\n"
                              "xyzzy: 1\n"
                              "env:\n"
                              "  Pass: []\n");
    assert_strv_equal(
        lines,
        (const char *[]){
            NAME ":3:3: unknown key \"hosts\" in \"filesystem\" (known keys: read_deny, "
                 "read_allow, write, protect)",
            NAME ":4:3: unknown key \"raed_deny\" in \"filesystem\" (did you mean "
                 "\"read_deny\"?)",
            NAME ":6:3: unknown key \"memroy\" in \"limits\" (did you mean \"memory\"?)",
            NAME ":7:1: unknown key \"Sandbox\" at the top level (did you mean \"sandbox\"?)",
            NAME ":8:1: unknown key \"limit\" at the top level (did you mean \"limits\"?)",
            NAME ":9:1: unknown key \"xyzzy\" at the top level (known keys: version, "
                 "filesystem, env, limits, landlock, sandbox, home, commands, approvals, network, "
                 "credentials)",
            NAME ":11:3: unknown key \"Pass\" in \"env\" (did you mean \"pass\"?)", NULL});
    pdk_strv_free(lines);

    /* Distance 3 is too far for a suggestion. */
    assert_one_diag("version: 1\nlimits:\n  pidsxyz: 1\n",
                    NAME ":3:3: unknown key \"pidsxyz\" in \"limits\" (known keys: memory, "
                         "pids, cpu, timeout)");
}

static void test_credentials(void **state)
{
    /* every credential key checked, every problem listed */
    char **lines = parse_fail("version: 1\n"
                              "network: {rules: [{host: open.feishu.cn, decision: allow}]}\n"
                              "credentials:\n"
                              "  - {name: a, provider: magic, hosts: [x.test]}\n"
                              "  - {name: b, provider: static, hosts: [x.test], inject: "
                              "{header: Authorization, value: Bearer}}\n"
                              "  - {name: c, provider: feishu_tenant_token, hosts: []}\n"
                              "  - {name: d, provider: static, value: plain, hosts: [x.test], "
                              "placeholder: {env: 1BAD}}\n"
                              "  - {name: e, provider: static, value: {secret: v}, hosts: "
                              "[x.test], placeholder: {file: relative/token}}\n"
                              "  - {name: f, provider: oauth2_refresh, refresh_token: {secret: r}, "
                              "hosts: [x.test], placeholder: {env: F}, replace_in_body: maybe}\n");
    const char *want[] = {
        "unknown provider \"magic\"",
        "credentials[1]: a static credential needs \"value\"",
        "credentials[1].inject.value: give the header's value with {token}",
        "a feishu_tenant_token credential needs \"app_id\"",
        "credentials[2].hosts: give at least one host",
        "credentials[2]: a credential needs \"inject\"",
        "credentials[3].value: expected {secret: NAME}",
        "credentials[3].placeholder.env: \"1BAD\" is not an environment variable name",
        "credentials[4].placeholder.file: \"relative/token\" must be absolute or start with ~/",
        "credentials[5]: an oauth2_refresh credential needs \"token_url\"",
        "credentials[5].replace_in_body:",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
        bool found = false;
        for (size_t j = 0; lines[j] && !found; j++)
            found = strstr(lines[j], want[i]) != NULL;
        if (!found)
            fail_msg("missing diagnostic: %s", want[i]);
    }
    pdk_strv_free(lines);
    pdk_policy *p =
        parse_ok("version: 1\n"
                 "network: {rules: [{host: open.feishu.cn, decision: allow}]}\n"
                 "credentials:\n"
                 "  - name: feishu-bot\n"
                 "    provider: feishu_tenant_token\n"
                 "    app_id: {secret: feishu_app_id}\n"
                 "    app_secret: {secret: feishu_app_secret}\n"
                 "    hosts: [open.feishu.cn]\n"
                 "    inject: {header: Authorization, value: \"Bearer {token}\"}\n"
                 "    placeholder:\n"
                 "      env: LARKSUITE_CLI_TENANT_ACCESS_TOKEN\n"
                 "      app_secret_env: LARKSUITE_CLI_APP_SECRET\n"
                 "      file: /run/feishu//token\n"
                 "  - name: user\n"
                 "    provider: oauth2_refresh\n"
                 "    token_url: https://open.feishu.cn/open-apis/authen/v2/oauth/token\n"
                 "    refresh_token: {secret: user_refresh}\n"
                 "    client_id: {secret: feishu_app_id}\n"
                 "    hosts: [open.feishu.cn]\n"
                 "    placeholder: {env: USER_TOKEN}\n"
                 "    replace_in_body: true\n");
    assert_int_equal(p->credential_count, 2);
    const pdk_credential *u = &p->credentials[1];
    assert_int_equal(u->provider, PDK_CREDENTIAL_OAUTH2_REFRESH);
    assert_string_equal(u->token_url, "https://open.feishu.cn/open-apis/authen/v2/oauth/token");
    assert_string_equal(u->refresh_token_secret, "user_refresh");
    assert_string_equal(u->client_id_secret, "feishu_app_id");
    assert_null(u->client_secret_secret);
    assert_true(u->replace_in_body);
    assert_null(u->inject_header);
    const pdk_credential *c = &p->credentials[0];
    assert_string_equal(c->name, "feishu-bot");
    assert_int_equal(c->provider, PDK_CREDENTIAL_FEISHU_TENANT_TOKEN);
    assert_string_equal(c->app_id_secret, "feishu_app_id");
    assert_string_equal(c->app_secret_secret, "feishu_app_secret");
    assert_string_equal(c->hosts[0], "open.feishu.cn");
    assert_null(c->hosts[1]);
    assert_string_equal(c->inject_header, "Authorization");
    assert_string_equal(c->inject_value, "Bearer {token}");
    assert_string_equal(c->placeholder_env, "LARKSUITE_CLI_TENANT_ACCESS_TOKEN");
    assert_string_equal(c->placeholder_app_secret_env, "LARKSUITE_CLI_APP_SECRET");
    assert_string_equal(c->placeholder_file, "/run/feishu/token");
    assert_false(c->replace_in_body);
    pdk_policy_free(p);
}

/* Where a credential's value goes: its inject header, the fields it names
 * (replace_in_headers), over TLS unless allow_plain_http; a placeholder of the shape a
 * client checks (placeholder.prefix). */
static void test_credential_places(void **state)
{
    pdk_policy *p = parse_ok("version: 1\n"
                             "network: {rules: [{host: api.test, decision: allow}]}\n"
                             "credentials:\n"
                             "  - name: openai\n"
                             "    provider: static\n"
                             "    value: {secret: openai_key}\n"
                             "    hosts: [api.test]\n"
                             "    replace_in_headers: [X-Api-Key, x-goog-api-key]\n"
                             "    allow_plain_http: true\n"
                             "    placeholder: {env: OPENAI_API_KEY, prefix: \"sk-proj-\"}\n"
                             "  - name: plain\n"
                             "    provider: static\n"
                             "    value: {secret: v}\n"
                             "    hosts: [api.test]\n"
                             "    inject: {header: Authorization, value: \"Bearer {token}\"}\n");
    const pdk_credential *c = &p->credentials[0];
    assert_string_equal(c->replace_in_headers[0], "X-Api-Key");
    assert_string_equal(c->replace_in_headers[1], "x-goog-api-key");
    assert_null(c->replace_in_headers[2]);
    assert_true(c->allow_plain_http);
    assert_string_equal(c->placeholder_prefix, "sk-proj-");
    assert_null(c->inject_header);
    const pdk_credential *d = &p->credentials[1];
    assert_null(d->replace_in_headers);
    assert_false(d->allow_plain_http); /* TLS only, by default */
    assert_null(d->placeholder_prefix);
    pdk_policy_free(p);

    const char *head = "version: 1\n"
                       "network: {rules: [{host: x.test, decision: allow}]}\n"
                       "credentials:\n"
                       "  - name: a\n"
                       "    provider: static\n"
                       "    value: {secret: v}\n"
                       "    hosts: [x.test]\n"
                       "    inject: {header: Authorization, value: \"Bearer {token}\"}\n"
                       "    placeholder: {env: A}\n";
    static const struct {
        const char *line, *diag;
    } cases[] = {
        {"    replace_in_headers: [Host]\n",
         NAME ":10:26: credentials[0].replace_in_headers[0]: Host frames or routes the request "
              "and cannot carry a credential (name the field the API reads its key from, e.g. "
              "X-Api-Key)"},
        {"    replace_in_headers: [transfer-encoding]\n",
         NAME ":10:26: credentials[0].replace_in_headers[0]: transfer-encoding frames or routes "
              "the request and cannot carry a credential (name the field the API reads its key "
              "from, e.g. X-Api-Key)"},
        {"    replace_in_headers: [\"bad name\"]\n",
         NAME ":10:26: credentials[0].replace_in_headers[0]: \"bad name\" is not a header name "
              "(letters, digits, '-', '_')"},
        {"    replace_in_headers: []\n",
         NAME ":10:25: credentials[0].replace_in_headers: give at least one header name, e.g. "
              "[X-Api-Key]"},
        {"    replace_in_headers: X-Api-Key\n",
         NAME ":10:25: credentials[0].replace_in_headers: expected a list, got \"X-Api-Key\""},
        {"    allow_plain_http: maybe\n",
         NAME ":10:23: credentials[0].allow_plain_http: expected true or false, got \"maybe\""},
    };
    for (size_t i = 0; i < PDK_ARRAY_SIZE(cases); i++) {
        char *text = xasprintf("%s%s", head, cases[i].line);
        assert_one_diag(text, cases[i].diag);
        free(text);
    }
    assert_one_diag("version: 1\n"
                    "network: {rules: [{host: x.test, decision: allow}]}\n"
                    "credentials:\n"
                    "  - {name: a, provider: static, value: {secret: v}, hosts: [x.test], "
                    "inject: {header: Authorization, value: \"{token}\"}, placeholder: {env: A, "
                    "prefix: \"has space\"}}\n",
                    NAME ":4:151: credentials[0].placeholder.prefix: \"has space\" is not a prefix "
                         "(1 to 64 letters, digits and '-', '_', '.', '~', '+', '/', ':')");
    /* a placeholder replaced nowhere: what an older policy relying on "replaced wherever it
     * appears" gets, and would otherwise silently lose */
    assert_one_diag("version: 1\n"
                    "network: {rules: [{host: x.test, decision: allow}]}\n"
                    "credentials:\n"
                    "  - {name: b, provider: static, value: {secret: v}, hosts: [x.test], "
                    "placeholder: {env: B}}\n",
                    NAME ":4:5: credentials[0]: say where the placeholder is replaced by the "
                         "value: \"inject\" (a header the gateway sets), \"replace_in_headers\" "
                         "(e.g. [X-Api-Key]) or \"replace_in_body: true\"");
    assert_one_diag("version: 1\n"
                    "network: {rules: [{host: x.test, decision: allow}]}\n"
                    "credentials:\n"
                    "  - {name: c, provider: static, value: {secret: v}, hosts: [x.test], "
                    "replace_in_headers: [X-Key], inject: {header: Authorization, value: "
                    "\"{token}\"}}\n",
                    NAME ":4:90: credentials[0].replace_in_headers: what is replaced is the "
                         "sandbox's placeholder, and the credential gives the sandbox none (add "
                         "\"placeholder\")");
    assert_one_diag("version: 1\n"
                    "network: {rules: [{host: x.test, decision: allow}]}\n"
                    "credentials:\n"
                    "  - {name: c, provider: static, value: {secret: v}, hosts: [x.test], "
                    "inject: {header: Host, value: \"{token}\"}}\n",
                    NAME ":4:87: credentials[0].inject.header: Host frames or routes the request "
                         "and cannot carry a credential (e.g. Authorization)");
}

/* Every key of every provider's table, each way it can be wrong: repeated, of the wrong
 * type, misspelt, missing (when required) and belonging to another provider. One
 * diagnostic each, at its position, worded as in every other section. */
typedef struct key_problem {
    const char *key, *value, *message; /* a wrong value, what is said (after "FIELD: ") */
} key_problem;

typedef struct key_needed {
    const char *key, *needed_by, *hint;
} key_needed;

typedef struct credential_case {
    const char *provider;
    const char *const *lines;   /* "KEY: VALUE", a valid credential */
    const key_needed *required; /* ends with {NULL} */
    const char *const *foreign; /* "KEY: VALUE" of other providers */
} credential_case;

static char *credential_text(const credential_case *k, ssize_t drop, const char *replace_key,
                             const char *replace_value, const char *extra)
{
    pdk_buf b = {0};
    pdk_buf_puts(&b, "version: 1\n"
                     "network: {rules: [{host: x.test, decision: allow}]}\n"
                     "credentials:\n");
    bool first = true;
    for (ssize_t i = 0; k->lines[i]; i++) {
        if (i == drop)
            continue;
        const char *colon = strchr(k->lines[i], ':');
        size_t klen = (size_t)(colon - k->lines[i]);
        pdk_buf_puts(&b, first ? "  - " : "    ");
        first = false;
        if (replace_key && strlen(replace_key) == klen &&
            strncmp(k->lines[i], replace_key, klen) == 0)
            pdk_buf_printf(&b, "%s: %s\n", replace_key, replace_value);
        else
            pdk_buf_printf(&b, "%s\n", k->lines[i]);
    }
    if (extra)
        pdk_buf_printf(&b, "    %s\n", extra);
    return pdk_buf_steal(&b);
}

static void test_credential_keys(void **state)
{
    static const char *const static_lines[] = {
        "name: a",
        "provider: static",
        "value: {secret: v}",
        "hosts: [x.test]",
        "inject: {header: Authorization, value: \"Bearer {token}\"}",
        "allow_plain_http: true",
        NULL};
    static const char *const feishu_lines[] = {
        "name: f",
        "provider: feishu_tenant_token",
        "app_id: {secret: id}",
        "app_secret: {secret: s}",
        "hosts: [x.test]",
        "inject: {header: Authorization, value: \"Bearer {token}\"}",
        "placeholder: {env: T}",
        NULL};
    static const char *const oauth2_lines[] = {"name: o",
                                               "provider: oauth2_refresh",
                                               "refresh_token: {secret: r}",
                                               "client_id: {secret: c}",
                                               "client_secret: {secret: cs}",
                                               "token_url: https://t.test/token",
                                               "hosts: [x.test]",
                                               "placeholder: {env: U}",
                                               "replace_in_headers: [X-Api-Key]",
                                               "replace_in_body: true",
                                               NULL};
#define SECRET_GOT "expected {secret: NAME} (a value from the vault: paddock secret set NAME), got "
    static const key_problem bad[] = {
        {"name", "[a]", "expected a name, got a list"},
        {"provider", "[static]", "expected a provider, got a list"},
        {"value", "plain", SECRET_GOT "\"plain\""},
        {"app_id", "plain", SECRET_GOT "\"plain\""},
        {"app_secret", "[s]", SECRET_GOT "a list"},
        {"refresh_token", "~", SECRET_GOT "nothing"},
        {"client_id", "1", SECRET_GOT "\"1\""},
        {"client_secret", "[]", SECRET_GOT "a list"},
        {"token_url", "[a]", "expected an https:// URL, got a list"},
        {"hosts", "x.test", "expected a list, got \"x.test\""},
        {"inject", "Bearer", "expected a mapping, got \"Bearer\""},
        {"placeholder", "T", "expected a mapping, got \"T\""},
        {"replace_in_headers", "X-Api-Key", "expected a list, got \"X-Api-Key\""},
        {"replace_in_body", "maybe", "expected true or false, got \"maybe\""},
        {"allow_plain_http", "\"true\"",
         "expected true or false, got \"true\" (remove the quotes)"},
        {NULL},
    };
#undef SECRET_GOT
#define COMMON                                                                                     \
    {"name", "a credential", ""},                                                                  \
    {                                                                                              \
        "provider", "a credential", " (use static, feishu_tenant_token or oauth2_refresh)"         \
    }
#define HOSTS                                                                                      \
    {                                                                                              \
        "hosts", "a credential", " (where it may go, e.g. [open.feishu.cn])"                       \
    }
    static const key_needed static_required[] = {
        COMMON, {"value", "a static credential", " ({secret: NAME})"}, HOSTS, {NULL}};
    static const key_needed feishu_required[] = {
        COMMON,
        {"app_id", "a feishu_tenant_token credential", " ({secret: NAME})"},
        {"app_secret", "a feishu_tenant_token credential", " ({secret: NAME})"},
        HOSTS,
        {NULL}};
    static const key_needed oauth2_required[] = {
        COMMON,
        {"refresh_token", "an oauth2_refresh credential", " ({secret: NAME})"},
        {"token_url", "an oauth2_refresh credential", ""},
        HOSTS,
        {NULL}};
#undef COMMON
#undef HOSTS
    static const char *const static_foreign[] = {"app_id: {secret: x}",
                                                 "app_secret: {secret: x}",
                                                 "refresh_token: {secret: x}",
                                                 "client_id: {secret: x}",
                                                 "client_secret: {secret: x}",
                                                 "token_url: https://t.test/t",
                                                 NULL};
    static const char *const feishu_foreign[] = {
        "value: {secret: x}",         "refresh_token: {secret: x}",  "client_id: {secret: x}",
        "client_secret: {secret: x}", "token_url: https://t.test/t", NULL};
    static const char *const oauth2_foreign[] = {"value: {secret: x}", "app_id: {secret: x}",
                                                 "app_secret: {secret: x}", NULL};
    static const credential_case cases[] = {
        {"static", static_lines, static_required, static_foreign},
        {"feishu_tenant_token", feishu_lines, feishu_required, feishu_foreign},
        {"oauth2_refresh", oauth2_lines, oauth2_required, oauth2_foreign},
    };
    for (size_t c = 0; c < PDK_ARRAY_SIZE(cases); c++) {
        const credential_case *k = &cases[c];
        size_t n = pdk_strv_length((char **)k->lines);
        char *text = credential_text(k, -1, NULL, NULL, NULL);
        pdk_policy_free(parse_ok(text));
        free(text);
        const char *what = strcmp(k->provider, "oauth2_refresh") == 0 ? "an oauth2_refresh" : NULL;
        _cleanup_free_ char *whose =
            what ? xasprintf("%s credential", what) : xasprintf("a %s credential", k->provider);
        for (size_t i = 0; i < n; i++) {
            const char *line = k->lines[i];
            _cleanup_free_ char *key = xstrndup(line, (size_t)(strchr(line, ':') - line));
            /* repeated */
            text = credential_text(k, -1, NULL, NULL, line);
            _cleanup_free_ char *dup = xasprintf(
                NAME ":%zu:5: duplicate key \"%s\" in \"credentials[0]\" (first at line %zu; "
                     "remove one)",
                4 + n, key, 4 + i);
            assert_one_diag(text, dup);
            free(text);
            /* misspelt */
            _cleanup_free_ char *typo = xasprintf("%.*s: x", (int)strlen(key) - 1, key);
            text = credential_text(k, -1, NULL, NULL, typo);
            _cleanup_free_ char *unknown = xasprintf(
                NAME ":%zu:5: unknown key \"%.*s\" in \"credentials[0]\" (did you mean \"%s\"?)",
                4 + n, (int)strlen(key) - 1, key, key);
            assert_one_diag(text, unknown);
            free(text);
            /* of the wrong type */
            const key_problem *w = bad;
            while (w->key && strcmp(w->key, key) != 0)
                w++;
            assert_non_null(w->key);
            text = credential_text(k, -1, key, w->value, NULL);
            _cleanup_free_ char *wrong = xasprintf(NAME ":%zu:%zu: credentials[0].%s: %s", 4 + i,
                                                   5 + strlen(key) + 2, key, w->message);
            assert_one_diag(text, wrong);
            free(text);
        }
        /* missing */
        for (const key_needed *r = k->required; r->key; r++) {
            ssize_t drop = -1;
            for (size_t i = 0; i < n && drop < 0; i++)
                if (strncmp(k->lines[i], r->key, strlen(r->key)) == 0 &&
                    k->lines[i][strlen(r->key)] == ':')
                    drop = (ssize_t)i;
            assert_true(drop >= 0);
            text = credential_text(k, drop, NULL, NULL, NULL);
            _cleanup_free_ char *missing = xasprintf(NAME ":4:5: credentials[0]: %s needs \"%s\"%s",
                                                     r->needed_by, r->key, r->hint);
            assert_one_diag(text, missing);
            free(text);
        }
        /* another provider's */
        for (size_t f = 0; k->foreign[f]; f++) {
            const char *line = k->foreign[f];
            size_t klen = (size_t)(strchr(line, ':') - line);
            text = credential_text(k, -1, NULL, NULL, line);
            _cleanup_free_ char *foreign =
                xasprintf(NAME ":%zu:%zu: credentials[0].%.*s: not a key of %s (remove it)", 4 + n,
                          5 + klen + 2, (int)klen, line, whose);
            assert_one_diag(text, foreign);
            free(text);
        }
    }
}

static const char commands_policy[] =
    "version: 1\n"
    "commands:\n"
    "  default: allow\n"
    "  rules:\n"
    "    - match: [git, push]\n"
    "      decision: ask\n"
    "      reason: \"pushing publishes code\"\n"
    "    - match: [lark-cli, base, [+record-delete, +table-delete]]\n"
    "      decision: ask\n"
    "    - match: [rm, \"-rf\", \"/\"]\n"
    "      decision: deny\n"
    "      reason: never\n"
    "    - match: [curl]\n"
    "      decision: confine\n"
    "  examples:\n"
    "    - {command: \"git push origin main\", decision: ask}\n"
    "    - {command: \"git status\", decision: allow}\n"
    "    - {command: \"cd /tmp && rm -rf /\", decision: deny}\n"
    "    - {argv: [/usr/bin/curl, -s, x], decision: confine}\n"
    "approvals:\n"
    "  timeout: 2m\n"
    "  on_timeout: allow\n";

static void test_commands(void **state)
{
    pdk_policy *p = parse_ok(commands_policy);
    assert_int_equal(p->commands.count, 4);
    assert_int_equal(p->commands.default_decision, PDK_DECISION_ALLOW);
    assert_int_equal(p->commands.rules[0].decision, PDK_DECISION_ASK);
    assert_string_equal(p->commands.rules[0].reason, "pushing publishes code");
    assert_int_equal(p->commands.rules[1].token_count, 3);
    assert_string_equal(p->commands.rules[1].tokens[2].alternatives[1], "+table-delete");
    assert_null(p->commands.rules[1].reason);
    assert_int_equal(p->rule_lines[0], 5);
    assert_int_equal(p->rule_lines[3], 13);
    assert_int_equal(p->approval_timeout_seconds, 120);
    assert_int_equal(p->approval_on_timeout, PDK_DECISION_ALLOW);

    pdk_command_verdict v;
    pdk_command_rules_judge(&p->commands, (char *[]){"git", "push", "-f", NULL}, &v);
    assert_int_equal(v.decision, PDK_DECISION_ASK);
    assert_int_equal(v.rule, 0);
    char *how = pdk_policy_describe_rule(p, v.rule);
    assert_string_equal(how, "rule 1 (line 5: [git, push] ask)");
    free(how);
    how = pdk_policy_describe_rule(p, 1);
    assert_string_equal(how, "rule 2 (line 8: [lark-cli, base, [+record-delete, +table-delete]] "
                             "ask)");
    free(how);
    how = pdk_policy_describe_rule(p, -1);
    assert_string_equal(how, "the default (allow)");
    free(how);
    pdk_policy_free(p);

    /* The defaults when the sections are left out. */
    p = parse_ok("version: 1\n");
    assert_int_equal(p->commands.count, 0);
    assert_int_equal(p->commands.default_decision, PDK_DECISION_ALLOW);
    assert_int_equal(p->approval_timeout_seconds, 300);
    assert_int_equal(p->approval_on_timeout, PDK_DECISION_DENY);
    pdk_policy_free(p);

    /* Examples may come before the rules they test. */
    p = parse_ok("version: 1\ncommands:\n  examples: [{command: \"make\", decision: deny}]\n"
                 "  default: deny\n");
    pdk_policy_free(p);
}

/* network.limits: the gateway's connection cap and idle timeout. */
static void test_network_limits(void **state)
{
    pdk_policy *p = parse_ok("version: 1\nnetwork:\n  default: deny\n");
    assert_int_equal(p->network.max_connections, PDK_NET_DEFAULT_MAX_CONNECTIONS);
    assert_int_equal(p->network.idle_timeout_s, PDK_NET_DEFAULT_IDLE_TIMEOUT_S);
    pdk_policy_free(p);
    p = parse_ok("version: 1\nnetwork:\n  limits: {connections: 1000, idle_timeout: 5m}\n");
    assert_int_equal(p->network.max_connections, 1000);
    assert_int_equal(p->network.idle_timeout_s, 300);
    pdk_policy_free(p);
    assert_one_diag(
        "version: 1\nnetwork:\n  limits: {connections: 0}\n",
        "policy.yaml:3:25: network.limits.connections: \"0\" is not a number of connections "
        "from 1 to 65536 (the default is 256)");
    assert_one_diag(
        "version: 1\nnetwork:\n  limits: {idle_timeout: 2d}\n",
        "policy.yaml:3:26: network.limits.idle_timeout: \"2d\" is not a duration from 1 second "
        "to 1 day (use seconds, or a number with s, m, h or d, e.g. 2m; the default "
        "is 120s)");
}

static void test_example_argv(void **state)
{
    char **argv = pdk_policy_example_argv("git push 'origin' \"main\"");
    assert_strv_equal(argv, (const char *[]){"git", "push", "origin", "main", NULL});
    pdk_strv_free(argv);
    /* More than one command, or one with assignments: as sh -c would run it. */
    argv = pdk_policy_example_argv("make && make test");
    assert_strv_equal(argv, (const char *[]){"sh", "-c", "make && make test", NULL});
    pdk_strv_free(argv);
    argv = pdk_policy_example_argv("CC=clang make");
    assert_strv_equal(argv, (const char *[]){"sh", "-c", "CC=clang make", NULL});
    pdk_strv_free(argv);
}

static void test_failing_examples(void **state)
{
    /* The error names the rule that decided. */
    assert_one_diag("version: 1\n"
                    "commands:\n"
                    "  rules:\n"
                    "    - {match: [git, \"*\"], decision: ask}\n"
                    "  examples:\n"
                    "    - {command: \"git status\", decision: allow}\n",
                    NAME ":6:7: commands.examples[0]: \"git status\" is decided ask by rule 1 "
                         "(line 4: [git, *] ask), not allow (fix the rule or the example)");
    assert_one_diag("version: 1\n"
                    "commands:\n"
                    "  default: confine\n"
                    "  examples:\n"
                    "    - {argv: [ls], decision: allow}\n",
                    NAME ":5:7: commands.examples[0]: \"ls\" is decided confine by the default "
                         "(confine), not allow (fix the rule or the example)");
    /* A script paddock cannot split falls to ask (a rule is stricter than the default). */
    assert_one_diag("version: 1\n"
                    "commands:\n"
                    "  rules: [{match: [rm], decision: deny}]\n"
                    "  examples:\n"
                    "    - {command: \"$CMD arg\", decision: allow}\n",
                    NAME ":5:7: commands.examples[0]: \"$CMD arg\" is decided ask by the fallback "
                         "for scripts paddock cannot split into commands, not allow (fix the rule "
                         "or the example)");
}

static void test_command_errors(void **state)
{
    char **lines = parse_fail("version: 1\n"
                              "commands:\n"
                              "  default: maybe\n"
                              "  rules:\n"
                              "    - {match: [], decision: ask}\n"
                              "    - {match: [git, \"\"], decision: ask}\n"
                              "    - {match: [git, []], decision: ask}\n"
                              "    - {match: [git], decision: sometimes}\n"
                              "    - {decision: deny}\n"
                              "    - {match: [git]}\n"
                              "    - {match: git, decision: deny}\n"
                              "    - {match: [git], decision: deny, because: x}\n"
                              "    - {match: [[a, [b]]], decision: deny}\n"
                              "  examples:\n"
                              "    - {command: \"x\"}\n"
                              "    - {command: \"x\", argv: [x], decision: ask}\n"
                              "    - {command: \"\", decision: ask}\n"
                              "approvals:\n"
                              "  timeout: 0\n"
                              "  on_timeout: ask\n");
    assert_strv_equal(
        lines,
        (const char *[]){
            NAME
            ":3:12: commands.default: unknown decision \"maybe\" (use allow, confine, ask or deny)",
            NAME ":5:15: commands.rules[0].match: an empty pattern matches nothing (give the "
                 "command's first words, e.g. [git, push])",
            NAME ":6:21: commands.rules[1].match[1]: an empty word matches nothing (remove it, or "
                 "use \"*\")",
            NAME ":7:21: commands.rules[2].match[1]: an empty list of alternatives matches nothing "
                 "(give at least one)",
            NAME ":8:32: commands.rules[3].decision: unknown decision \"sometimes\" (use allow, "
                 "confine, ask or deny)",
            NAME
            ":9:7: commands.rules[4]: a rule needs \"match\" (an argv prefix, e.g. [git, push])",
            NAME
            ":10:7: commands.rules[5]: a rule needs \"decision\" (allow, confine, ask or deny)",
            NAME ":11:15: commands.rules[6].match: expected a list, got \"git\"",
            NAME ":12:38: unknown key \"because\" in \"commands.rules[7]\" (known keys: match, "
                 "decision, reason, under, quiet)",
            NAME ":13:20: commands.rules[8].match[0][1]: expected a word (alternatives do not "
                 "nest), got a list",
            NAME ":15:7: commands.examples[0]: an example needs \"decision\" (what the rules must "
                 "decide)",
            NAME ":16:7: commands.examples[1]: an example needs either \"command\" (a command "
                 "line) or \"argv\" (a list of words)",
            NAME ":17:17: commands.examples[2].command: the command line is empty (give the "
                 "command to check)",
            NAME ":19:12: approvals.timeout: \"0\" is not a duration from 1 second to 30 days (use "
                 "seconds, or a number with s, m, h or d, e.g. 5m)",
            NAME ":20:15: approvals.on_timeout: \"ask\" is not what a timeout can mean (use deny "
                 "or allow)",
            NULL});
    pdk_strv_free(lines);
}

static void test_wrong_types(void **state)
{
    char **lines = parse_fail("version: 1\n"
                              "filesystem:\n"
                              "  read_deny: {a: b}\n"
                              "  write: ~/x\n"
                              "  protect:\n"
                              "env: [a]\n"
                              "limits:\n"
                              "  memory: [1G]\n"
                              "landlock: 3\n"
                              "sandbox:\n");
    assert_strv_equal(
        lines,
        (const char *[]){
            NAME ":3:14: filesystem.read_deny: expected a list, got a mapping",
            NAME ":4:10: filesystem.write: expected a list, got \"~/x\"",
            NAME ":5:11: filesystem.protect: expected a list, got nothing (use [] for an empty "
                 "list)",
            NAME ":6:6: env: expected a mapping, got a list",
            NAME ":8:11: limits.memory: expected a size, got a list",
            NAME ":9:11: landlock: expected a mapping, got \"3\"",
            NAME ":10:9: sandbox: expected a mapping, got nothing (add entries under it, or "
                 "remove the key)",
            NULL});
    pdk_strv_free(lines);

    assert_one_diag("- version: 1\n",
                    NAME ":1:1: a policy is a mapping of keys (\"version: 1\" on the first line, "
                         "then sections), got a list");
    assert_one_diag("version 1\n",
                    NAME ":1:1: a policy is a mapping of keys (\"version: 1\" on the first line, "
                         "then sections), got \"version 1\"");
    assert_one_diag("version: 1\n? [a, b]\n: c\n",
                    NAME ":2:3: expected a key name at the top level, got a list");
}

static void test_duplicate_keys(void **state)
{
    char **lines = parse_fail("version: 1\n"
                              "limits:\n"
                              "  memory: 1G\n"
                              "  memory: 2G\n"
                              "env:\n"
                              "  set:\n"
                              "    A: \"1\"\n"
                              "    B: \"2\"\n"
                              "    A: \"3\"\n"
                              "    A: \"4\"\n"
                              "version: 1\n");
    assert_strv_equal(
        lines,
        (const char *[]){
            NAME ":4:3: duplicate key \"memory\" in \"limits\" (first at line 3; remove one)",
            NAME ":9:5: duplicate key \"A\" in \"env.set\" (first at line 7; remove one)",
            NAME ":10:5: duplicate key \"A\" in \"env.set\" (first at line 7; remove one)",
            NAME ":11:1: duplicate key \"version\" at the top level (first at line 1; remove "
                 "one)",
            NULL});
    pdk_strv_free(lines);
}

static void test_yaml_syntax_errors(void **state)
{
    assert_one_diag("version: 1\nlimits:\n memory: 1G\n  pids: 2\n",
                    NAME ":4:7: YAML syntax error: mapping values are not allowed in this "
                         "context");
    assert_one_diag("version: 1\nlimits:\n  memory: [1\n",
                    NAME ":4:1: YAML syntax error: did not find expected ',' or ']', while "
                         "parsing a flow sequence that starts at line 3, column 11");
    assert_one_diag("version: 1\nfoo: \"\xff\"\n",
                    NAME ":2:7: not valid UTF-8 text: invalid leading UTF-8 octet (byte 0xff)");
    assert_one_diag("version: 1\n\x01\n",
                    NAME ":2:1: not valid UTF-8 text: control characters are not allowed (byte "
                         "0x01)");
    /* A UTF-8 byte order mark and CRLF line ends are fine. */
    pdk_policy *p = parse_ok("\xef\xbb\xbfversion: 1\r\nlimits:\r\n  pids: 3\r\n");
    assert_int_equal(p->pids, 3);
    pdk_policy_free(p);
}

static void test_anchors_aliases_tags(void **state)
{
    const char *refused = "anchors and aliases are not allowed in a policy (write the value out)";
    char **lines = parse_fail("version: 1\nbase: &b {memory: 1G}\nlimits: *b\n");
    char *e1 = xasprintf(NAME ":2:7: %s", refused), *e2 = xasprintf(NAME ":3:9: %s", refused);
    assert_strv_equal(lines, (const char *[]){e1, e2, NULL});
    pdk_strv_free(lines);
    free(e1);
    free(e2);

    /* A self-referencing alias is refused before anything walks the cycle. */
    lines = parse_fail("version: 1\na: &a [*a, *a]\n");
    assert_int_equal(pdk_strv_length(lines), 3);
    pdk_strv_free(lines);

    /* An anchor alone is refused, and the rest is still checked. */
    lines = parse_fail("version: 1\nlimits: &l\n  pids: x\n");
    assert_int_equal(pdk_strv_length(lines), 2);
    assert_string_equal(lines[0], NAME ":2:9: anchors and aliases are not allowed in a policy "
                                       "(write the value out)");
    assert_non_null(strstr(lines[1], NAME ":3:9: limits.pids:"));
    pdk_strv_free(lines);

    assert_one_diag("version: 1\nlimits:\n  memory: !!str 1G\n",
                    NAME ":3:11: tags (\"!!str\") are not allowed in a policy (remove it)");
    assert_one_diag("version: 1\nlimits: !custom {}\n",
                    NAME ":2:9: tags (\"!custom\") are not allowed in a policy (remove it)");
}

static void test_document_shape(void **state)
{
    assert_one_diag("version: 1\n---\nversion: 1\n",
                    NAME ":2:1: a policy is a single YAML document (remove this \"---\" and "
                         "what follows)");
    /* Deep nesting is cut off early. */
    pdk_buf deep = {0};
    pdk_buf_puts(&deep, "version: 1\nx: ");
    for (int i = 0; i < 100; i++)
        pdk_buf_puts(&deep, "[");
    for (int i = 0; i < 100; i++)
        pdk_buf_puts(&deep, "]");
    assert_one_diag(deep.data,
                    NAME ":2:35: nested more than 32 levels deep (a policy is at most 3)");
    pdk_buf_free(&deep);
}

static void test_nul_and_escapes(void **state)
{
    assert_one_diag("version: 1\nenv:\n  set:\n    X: \"a\\0b\"\n",
                    NAME ":4:8: env.set.X: \"a\\x00b\" contains a NUL character");
    /* Control, separator and bidi characters are escaped in messages; long keys are cut. */
    assert_one_diag("version: 1\n\"a\\tb\\u2028c\\u202ed\": 1\n",
                    NAME ":2:1: unknown key \"a\\tb\\u2028c\\u202ed\" at the top level (known "
                         "keys: version, filesystem, env, limits, landlock, sandbox, home, "
                         "commands, approvals, network, credentials)");
    pdk_buf text = {0};
    pdk_buf_puts(&text, "version: 1\n");
    for (int i = 0; i < 100; i++)
        pdk_buf_puts(&text, "k");
    pdk_buf_puts(&text, ": 1\n");
    char **lines = parse_fail(text.data);
    assert_int_equal(pdk_strv_length(lines), 1);
    char *expected =
        xasprintf(NAME ":2:1: unknown key \"%.64s...\" at the top level", text.data + 11);
    assert_true(pdk_str_has_prefix(lines[0], expected));
    free(expected);
    pdk_strv_free(lines);
    pdk_buf_free(&text);
}

static void test_all_errors_reported(void **state)
{
    /* Seven mistakes in different sections, reported together and in file order. */
    char **lines = parse_fail("version: 2\n" /* 1 */
                              "filesystem:\n"
                              "  read_deny: [relative]\n" /* 2 */
                              "  hosts: []\n"             /* 3 */
                              "limits:\n"
                              "  memory: 2X\n" /* 4 */
                              "  pids: lots\n" /* 5 */
                              "landlock:\n"
                              "  tcp_bind: [99999]\n"   /* 6 */
                              "network: {bogus: 1}\n"); /* 7 */
    assert_int_equal(pdk_strv_length(lines), 7);
    static const char *const starts[] = {
        NAME ":1:10: version:",
        NAME ":3:15: filesystem.read_deny:",
        NAME ":4:3: unknown key",
        NAME ":6:11: limits.memory:",
        NAME ":7:9: limits.pids:",
        NAME ":9:14: landlock.tcp_bind:",
        NAME ":10:11: unknown key \"bogus\" in \"network\"",
    };
    for (size_t i = 0; i < PDK_ARRAY_SIZE(starts); i++)
        assert_true(pdk_str_has_prefix(lines[i], starts[i]));
    pdk_strv_free(lines);
}

static void test_too_many_problems(void **state)
{
    pdk_buf text = {0};
    pdk_buf_puts(&text, "version: 1\n");
    for (int i = 0; i < 300; i++)
        pdk_buf_printf(&text, "k%d: 1\n", i);
    char **lines = parse_fail(text.data);
    assert_int_equal(pdk_strv_length(lines), 201);
    assert_true(pdk_str_has_prefix(lines[0], NAME ":2:1: unknown key \"k0\""));
    assert_true(pdk_str_has_prefix(lines[199], NAME ":201:1: unknown key \"k199\""));
    assert_string_equal(lines[200], NAME ": too many problems; only the first 200 are shown");
    pdk_strv_free(lines);
    pdk_buf_free(&text);
}

static void test_too_large(void **state)
{
    size_t len = (1u << 20) + 1;
    char *text = xmalloc(len + 1);
    memset(text, '#', len);
    text[len] = '\0';
    char **lines = parse_fail(text);
    assert_strv_equal(lines, (const char *[]){NAME ": the policy is larger than 1 MiB (is this "
                                                   "the right file?)",
                                              NULL});
    pdk_strv_free(lines);
    /* Exactly 1 MiB is still read (and here fails only for the missing version). */
    text[len - 1] = '\0';
    lines = parse_fail(text);
    assert_strv_equal(lines,
                      (const char *[]){NAME ":1:1: missing \"version: 1\" (add it as the first "
                                            "line)",
                                       NULL});
    pdk_strv_free(lines);
    free(text);
}

static void test_diags_optional(void **state)
{
    pdk_policy *p = (pdk_policy *)&p;
    pdk_error err = {0};
    static const char text[] = "version: 1\nlimits:\n  memory: 2X\n";
    assert_int_equal(pdk_policy_parse(NAME, text, strlen(text), &ctx, &p, NULL, &err), -1);
    assert_null(p);
    assert_true(pdk_str_has_prefix(err.message, NAME ":3:11: limits.memory: \"2X\""));
    /* And no pdk_error either. */
    assert_int_equal(pdk_policy_parse(NAME, text, strlen(text), &ctx, &p, NULL, NULL), -1);
    /* The length is what counts, not a NUL: the tail past len is never read. */
    assert_int_equal(pdk_policy_parse(NAME, "version: 1\nxx", 11, &ctx, &p, NULL, &err), 0);
    pdk_policy_free(p);
}

static void test_diag_format(void **state)
{
    pdk_policy_diag d = {.file = "p.yaml", .line = 3, .column = 7, .message = "bad"};
    char *s = pdk_policy_diag_format(&d);
    assert_string_equal(s, "p.yaml:3:7: bad");
    free(s);
    d.column = 0;
    s = pdk_policy_diag_format(&d);
    assert_string_equal(s, "p.yaml:3: bad");
    free(s);
    d.line = 0;
    s = pdk_policy_diag_format(&d);
    assert_string_equal(s, "p.yaml: bad");
    free(s);
    pdk_policy_diags_free(NULL); /* harmless */
}

/* ---- files ---- */

static void test_load_file(void **state)
{
    char dir[] = "/tmp/test_policy.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = xasprintf("%s/p.yaml", dir);
    static const char text[] = "version: 1\nlimits:\n  pids: 5\n";
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(pdk_write_all(fd, text, strlen(text)), 0);
    close(fd);

    pdk_policy *p = NULL;
    pdk_policy_diags diags = {0};
    pdk_error err = {0};
    assert_int_equal(pdk_policy_load_file(path, &ctx, &p, &diags, &err), 0);
    assert_string_equal(p->source, path);
    assert_string_equal(p->base_dir, dir);
    assert_int_equal(p->pids, 5);
    pdk_policy_free(p);

    /* A relative path gets an absolute base_dir. */
    char *cwd = getcwd(NULL, 0);
    assert_non_null(cwd);
    assert_int_equal(chdir(dir), 0);
    assert_int_equal(pdk_policy_load_file("./p.yaml", &ctx, &p, &diags, &err), 0);
    assert_string_equal(p->source, "./p.yaml");
    assert_string_equal(p->base_dir, dir);
    pdk_policy_free(p);
    assert_int_equal(chdir(cwd), 0);
    free(cwd);

    /* Diagnostics name the file as given. */
    fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(pdk_write_all(fd, "version: 1\nlimts: {}\n", 21), 0);
    close(fd);
    assert_int_equal(pdk_policy_load_file(path, &ctx, &p, &diags, &err), -1);
    assert_null(p);
    assert_int_equal(diags.count, 1);
    char *expected = xasprintf("%s:2:1: unknown key \"limts\" at the top level (did you mean "
                               "\"limits\"?)",
                               path);
    assert_string_equal(err.message, expected);
    free(expected);
    pdk_policy_diags_free(&diags);

    /* Over 1 MiB: refused without parsing. */
    fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    assert_true(fd >= 0);
    char *big = xmalloc((1u << 20) + 10);
    memset(big, '#', (1u << 20) + 10);
    assert_int_equal(pdk_write_all(fd, big, (1u << 20) + 10), 0);
    free(big);
    close(fd);
    assert_int_equal(pdk_policy_load_file(path, &ctx, &p, &diags, &err), -1);
    assert_int_equal(diags.count, 1);
    assert_int_equal(diags.items[0].line, 0);
    expected = xasprintf("%s: the policy is larger than 1 MiB (is this the right file?)", path);
    assert_string_equal(err.message, expected);
    free(expected);
    pdk_policy_diags_free(&diags);

    /* Unreadable: names the file and the cause; no diagnostics. */
    char *missing = xasprintf("%s/missing.yaml", dir);
    assert_int_equal(pdk_policy_load_file(missing, &ctx, &p, &diags, &err), -1);
    assert_null(p);
    assert_int_equal(diags.count, 0);
    assert_int_equal(err.code, ENOENT);
    expected = xasprintf("cannot read policy file %s: %s", missing, strerror(ENOENT));
    assert_string_equal(err.message, expected);
    free(expected);
    free(missing);
    assert_int_equal(pdk_policy_load_file(dir, &ctx, &p, &diags, &err), -1);
    assert_int_equal(err.code, EISDIR);

    assert_int_equal(pdk_rm_rf_at(AT_FDCWD, dir), 0);
    free(path);
}

/* ---- built-in lists ---- */

static void test_builtin_lists(void **state)
{
    static const char *const protected_paths[] = {
        ".git/hooks/", ".git/config",           ".mcp.json",         ".vscode/",        ".idea/",
        ".codex/",     ".claude/settings.json", ".claude/commands/", ".claude/agents/", NULL};
    assert_strv_equal((char **)pdk_builtin_protected, protected_paths);
    static const char *const protected_commit[] = {".claude/settings.local.json",
                                                   ".claude/hooks/",
                                                   ".cursor/mcp.json",
                                                   ".cursor/hooks.json",
                                                   ".cursor/hooks/",
                                                   ".gemini/settings.json",
                                                   ".gemini/commands/",
                                                   ".devcontainer/",
                                                   ".devcontainer.json",
                                                   ".envrc",
                                                   ".gitmodules",
                                                   ".husky/",
                                                   ".pre-commit-config.yaml",
                                                   "lefthook.yml",
                                                   ".lefthook.yml",
                                                   ".yarnrc.yml",
                                                   ".yarnrc",
                                                   ".npmrc",
                                                   ".pnpmfile.cjs",
                                                   ".cargo/config.toml",
                                                   ".cargo/config",
                                                   NULL};
    assert_strv_equal((char **)pdk_builtin_protected_commit, protected_commit);
    static const char *const protected_home[] = {".bashrc",
                                                 ".bash_profile",
                                                 ".bash_login",
                                                 ".bash_logout",
                                                 ".profile",
                                                 ".zshrc",
                                                 ".zprofile",
                                                 ".zshenv",
                                                 ".zlogin",
                                                 ".gitconfig",
                                                 ".config/git/",
                                                 ".claude/settings.json",
                                                 ".claude/commands/",
                                                 ".claude/agents/",
                                                 ".claude/hooks/",
                                                 ".claude/skills/",
                                                 ".claude/plugins/",
                                                 ".codex/config.toml",
                                                 ".codex/skills/",
                                                 ".gemini/settings.json",
                                                 ".cursor/mcp.json",
                                                 NULL};
    assert_strv_equal((char **)pdk_builtin_protected_home, protected_home);
    static const char *const hidden[] = {".ssh",
                                         ".aws",
                                         ".config/gh",
                                         ".lark-cli",
                                         ".local/share/lark-cli",
                                         ".local/share/keyrings",
                                         ".gnupg",
                                         ".netrc",
                                         ".docker",
                                         ".kube",
                                         ".password-store",
                                         ".config/gcloud",
                                         ".azure",
                                         ".git-credentials",
                                         ".config/git/credentials",
                                         NULL};
    assert_strv_equal((char **)pdk_builtin_hidden_home, hidden);
    /* Every entry is relative and already normalised. */
    for (size_t i = 0; pdk_builtin_hidden_home[i]; i++) {
        char *abs = xasprintf("/%s", pdk_builtin_hidden_home[i]);
        char *norm = pdk_path_normalize(abs);
        assert_string_equal(norm, abs);
        free(norm);
        free(abs);
    }
}

/* The built-in protected entries match at every depth; git's own files at any depth. */
static void test_protected_match(void **state)
{
    static const char *const yes[][2] = {
        {".git/config", ".git/config"},
        {"sub/.git/config", ".git/config"},
        {"a/b/.git/hooks/pre-commit", ".git/hooks/"},
        {".git/modules/m/config", ".git/"},
        {".git/modules/m/hooks/post-checkout", ".git/"},
        {".git/worktrees/w/config.worktree", ".git/"},
        {"sub/.git/commondir", ".git/"},
        {"pkg/.mcp.json", ".mcp.json"},
        {"pkg/.claude/settings.local.json", ".claude/settings.local.json"},
        {".claude/commands/x.md", ".claude/commands/"},
        {"x/.vscode/tasks.json", ".vscode/"},
        {"svc/.envrc", ".envrc"},
        {".husky/_/h", ".husky/"},
        {"js/.yarnrc.yml", ".yarnrc.yml"},
        {".devcontainer/devcontainer.json", ".devcontainer/"},
    };
    for (size_t i = 0; i < PDK_ARRAY_SIZE(yes); i++) {
        const char *e = pdk_builtin_protected_match(yes[i][0], false);
        if (!e || strcmp(e, yes[i][1]) != 0)
            fail_msg("%s: %s, not %s", yes[i][0], e ? e : "(none)", yes[i][1]);
    }
    static const char *const no[] = {
        "README.md",
        "src/config",
        "docs/hooks.md",
        ".gitignore",
        ".github/workflows/ci.yml",
        "x.mcp.json",
        "a/b.envrc",
        ".git/objects/ab/cdef",
        ".git/refs/heads/main",
        ".git/HEAD",
        ".claudex/settings.json",
        "notes/.claude",
    };
    for (size_t i = 0; i < PDK_ARRAY_SIZE(no); i++) {
        bool is_dir = strcmp(no[i], "notes/.claude") == 0;
        const char *e = pdk_builtin_protected_match(no[i], is_dir);
        if (e)
            fail_msg("%s matched %s", no[i], e);
    }
    /* a file or symlink where such an entry's directory must be, or a .git file */
    assert_non_null(pdk_builtin_protected_match("notes/.claude", false));
    assert_non_null(pdk_builtin_protected_match("sub/.git", false));
    assert_null(pdk_builtin_protected_match("sub/.git", true));
    assert_true(pdk_protected_git_path("x/.git/hooks", true));
    assert_false(pdk_protected_git_path("x/.gitmodules", false));
    assert_false(pdk_protected_git_path("x/git/config", false));
}

/* ---- sizes and durations ---- */

static void test_parse_size(void **state)
{
    static const struct {
        const char *text;
        int64_t bytes;
    } ok[] = {
        {"0", 0},
        {"512", 512},
        {"512B", 512},
        {"64K", 64LL << 10},
        {"64k", 64LL << 10},
        {"2M", 2LL << 20},
        {"2G", 2LL << 30},
        {"2GiB", 2LL << 30},
        {"2GB", 2LL << 30},
        {"2Gi", 2LL << 30},
        {"2gb", 2LL << 30},
        {"1T", 1LL << 40},
        {"8388607T", 8388607LL << 40},
        {"9223372036854775807", INT64_MAX},
        {"007", 7},
    };
    for (size_t i = 0; i < PDK_ARRAY_SIZE(ok); i++) {
        int64_t v = -1;
        assert_int_equal(pdk_parse_size(ok[i].text, &v), 0);
        assert_int_equal(v, ok[i].bytes);
    }
    static const struct {
        const char *text;
        int err;
    } bad[] = {
        {"", EINVAL},
        {"G", EINVAL},
        {"-1", EINVAL},
        {"+1", EINVAL},
        {" 1", EINVAL},
        {"1 G", EINVAL},
        {"1G ", EINVAL},
        {"1.5G", EINVAL},
        {"1X", EINVAL},
        {"1KK", EINVAL},
        {"1iB", EINVAL},
        {"1P", EINVAL},
        {"0x10", EINVAL},
        {"1GiBB", EINVAL},
        {"8388608T", ERANGE},
        {"9223372036854775808", ERANGE},
        {"8589934592G", ERANGE},
        {"99999999999999999999999999", ERANGE},
    };
    for (size_t i = 0; i < PDK_ARRAY_SIZE(bad); i++) {
        int64_t v = 12345;
        errno = 0;
        if (pdk_parse_size(bad[i].text, &v) != -1 || errno != bad[i].err)
            fail_msg("pdk_parse_size(\"%s\"): expected errno %d, got %d", bad[i].text, bad[i].err,
                     errno);
        assert_int_equal(v, 12345); /* untouched on error */
    }
    int64_t v;
    errno = 0;
    assert_int_equal(pdk_parse_size(NULL, &v), -1);
    assert_int_equal(errno, EINVAL);
}

static void test_parse_duration(void **state)
{
    static const struct {
        const char *text;
        int64_t seconds;
    } ok[] = {
        {"0", 0},
        {"600", 600},
        {"90s", 90},
        {"10m", 600},
        {"2h", 7200},
        {"1d", 86400},
        {"9223372036854775807", INT64_MAX},
        {"106751991167300d", 106751991167300LL * 86400},
    };
    for (size_t i = 0; i < PDK_ARRAY_SIZE(ok); i++) {
        int64_t v = -1;
        assert_int_equal(pdk_parse_duration(ok[i].text, &v), 0);
        assert_int_equal(v, ok[i].seconds);
    }
    static const struct {
        const char *text;
        int err;
    } bad[] = {
        {"", EINVAL},
        {"s", EINVAL},
        {"-1", EINVAL},
        {"1x", EINVAL},
        {"1ms", EINVAL},
        {"1h30m", EINVAL},
        {"1.5h", EINVAL},
        {"10M", EINVAL},
        {" 5", EINVAL},
        {"5 s", EINVAL},
        {"106751991167301d", ERANGE},
        {"9223372036854775808", ERANGE},
        {"153722867280912931m", ERANGE},
    };
    for (size_t i = 0; i < PDK_ARRAY_SIZE(bad); i++) {
        int64_t v = 12345;
        errno = 0;
        if (pdk_parse_duration(bad[i].text, &v) != -1 || errno != bad[i].err)
            fail_msg("pdk_parse_duration(\"%s\"): expected errno %d, got %d", bad[i].text,
                     bad[i].err, errno);
        assert_int_equal(v, 12345);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_policy),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_builtin_default),
        cmocka_unit_test(test_tilde_expansion),
        cmocka_unit_test(test_tilde_without_home),
        cmocka_unit_test(test_protect_normalisation),
        cmocka_unit_test(test_path_errors),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_limit_errors),
        cmocka_unit_test(test_cpu_values),
        cmocka_unit_test(test_landlock),
        cmocka_unit_test(test_nested_userns),
        cmocka_unit_test(test_home_persist),
        cmocka_unit_test(test_quiet_rules),
        cmocka_unit_test(test_missing_version),
        cmocka_unit_test(test_version_values),
        cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_credentials),
        cmocka_unit_test(test_credential_places),
        cmocka_unit_test(test_credential_keys),
        cmocka_unit_test(test_commands),
        cmocka_unit_test(test_example_argv),
        cmocka_unit_test(test_network_limits),
        cmocka_unit_test(test_failing_examples),
        cmocka_unit_test(test_command_errors),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_duplicate_keys),
        cmocka_unit_test(test_yaml_syntax_errors),
        cmocka_unit_test(test_anchors_aliases_tags),
        cmocka_unit_test(test_document_shape),
        cmocka_unit_test(test_nul_and_escapes),
        cmocka_unit_test(test_all_errors_reported),
        cmocka_unit_test(test_too_many_problems),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_diags_optional),
        cmocka_unit_test(test_diag_format),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_builtin_lists),
        cmocka_unit_test(test_protected_match),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_parse_duration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
