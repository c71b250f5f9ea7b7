/* test_environ.c: the environment a sandboxed command gets (environ.c). Only the harmless
 * variables of the caller pass, and what the policy passes; a name that looks like a secret
 * passes only when the policy names it exactly (never through a prefix glob); paddock's own
 * variables (proxy, CA bundle, HOME, PWD, the session) are set over the caller's, the
 * policy's env.set over those, and the credentials' placeholders last; PATH is always set;
 * a malformed entry of the caller is dropped; no name appears twice. */
#include "environ.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* The value of name in env, or NULL; fails when name is there twice. */
static const char *get(char **env, const char *name)
{
    const char *found = NULL;
    size_t len = strlen(name);
    for (size_t i = 0; env[i]; i++) {
        if (strncmp(env[i], name, len) == 0 && env[i][len] == '=') {
            if (found)
                fail_msg("%s is set twice", name);
            found = env[i] + len + 1;
        }
    }
    return found;
}

static void t_secret_names(void **state)
{
    (void)state;
    const char *secret[] = {"GITHUB_TOKEN",  "token",          "AWS_SECRET_ACCESS_KEY",
                            "api_key",       "MYSQL_PASSWORD", "passwd",
                            "X_CREDENTIALS", "Private_Thing",  "KEYRING"};
    for (size_t i = 0; i < sizeof(secret) / sizeof(*secret); i++)
        assert_true(pdk_environ_name_looks_secret(secret[i]));
    const char *plain[] = {"PATH", "HOME", "LANG", "TERM", "EDITOR", "TOKE", "KE_Y", ""};
    for (size_t i = 0; i < sizeof(plain) / sizeof(*plain); i++)
        assert_false(pdk_environ_name_looks_secret(plain[i]));
}

static void t_allowlist(void **state)
{
    (void)state;
    char *host[] = {"PATH=/host/bin",
                    "LANG=C.UTF-8",
                    "LC_ALL=C",
                    "TERM=xterm",
                    "HOME=/home/u",
                    "SSH_AUTH_SOCK=/run/agent",
                    "LD_PRELOAD=/evil.so",
                    "GITHUB_TOKEN=ghp_x",
                    "OPENAI_API_KEY=sk-x",
                    "NOEQUALS",
                    "=value",
                    "EMPTY=",
                    NULL};
    char **env = pdk_environ_build(host, NULL, NULL);
    assert_string_equal(get(env, "PATH"), "/host/bin");
    assert_string_equal(get(env, "LANG"), "C.UTF-8");
    assert_string_equal(get(env, "LC_ALL"), "C");
    assert_string_equal(get(env, "TERM"), "xterm");
    assert_string_equal(get(env, "HOME"), "/home/u");
    assert_null(get(env, "SSH_AUTH_SOCK"));
    assert_null(get(env, "LD_PRELOAD"));
    assert_null(get(env, "GITHUB_TOKEN"));
    assert_null(get(env, "OPENAI_API_KEY"));
    assert_null(get(env, "EMPTY"));
    for (size_t i = 0; env[i]; i++) {
        assert_non_null(strchr(env[i], '='));
        assert_true(env[i][0] != '=');
    }
    /* paddock's markers are always there */
    assert_string_equal(get(env, "TMPDIR"), "/tmp");
    assert_string_equal(get(env, "PADDOCK_SANDBOX"), "1");
    pdk_strv_free(env);

    /* no PATH from the caller: a default one */
    char *bare[] = {"TERM=dumb", NULL};
    env = pdk_environ_build(bare, NULL, NULL);
    assert_non_null(get(env, "PATH"));
    assert_non_null(strstr(get(env, "PATH"), "/usr/bin"));
    pdk_strv_free(env);
    env = pdk_environ_build(NULL, NULL, NULL);
    assert_non_null(get(env, "PATH"));
    pdk_strv_free(env);
}

static void t_policy_pass_and_set(void **state)
{
    (void)state;
    char *pass[] = {"MY_TOOL_*", "GITHUB_TOKEN", "AWS_*", NULL};
    pdk_env_assignment set[] = {{.name = "TERM", .value = "vt100"},
                                {.name = "NEW_ONE", .value = "1"}};
    pdk_policy policy = {.env_pass = pass, .env_set = set, .env_set_count = 2};
    char *host[] = {"MY_TOOL_MODE=fast",
                    "MY_TOOL_SECRET=s",
                    "GITHUB_TOKEN=ghp_exact",
                    "AWS_REGION=eu",
                    "AWS_SECRET_ACCESS_KEY=aws",
                    "MY_TOOLX=no",
                    "TERM=xterm",
                    NULL};
    char **env = pdk_environ_build(host, &policy, NULL);
    assert_string_equal(get(env, "MY_TOOL_MODE"), "fast");
    assert_string_equal(get(env, "AWS_REGION"), "eu");
    /* a secret-looking name passes by its exact name only, never through a glob */
    assert_string_equal(get(env, "GITHUB_TOKEN"), "ghp_exact");
    assert_null(get(env, "MY_TOOL_SECRET"));
    assert_null(get(env, "AWS_SECRET_ACCESS_KEY"));
    assert_null(get(env, "MY_TOOLX"));
    /* env.set wins over the caller's */
    assert_string_equal(get(env, "TERM"), "vt100");
    assert_string_equal(get(env, "NEW_ONE"), "1");
    pdk_strv_free(env);
}

static void t_extra_and_order(void **state)
{
    (void)state;
    pdk_env_assignment set[] = {{.name = "NO_PROXY", .value = "policy-says"},
                                {.name = "OPENAI_API_KEY", .value = "from-policy"}};
    pdk_policy policy = {.env_set = set, .env_set_count = 2};
    char *last[] = {"OPENAI_API_KEY=PDK_PLACEHOLDER_1", "not-an-assignment", NULL};
    pdk_environ_extra extra = {.home = "/home/inside",
                               .pwd = "/ws",
                               .session = "fix",
                               .proxy_url = "http://127.0.0.1:3128",
                               .ca_bundle = "/etc/ssl/paddock.pem",
                               .set_last = last};
    char *host[] = {"HOME=/home/host", "HTTP_PROXY=http://corp:8080", "PWD=/host", NULL};
    char **env = pdk_environ_build(host, &policy, &extra);
    assert_string_equal(get(env, "HOME"), "/home/inside");
    assert_string_equal(get(env, "PWD"), "/ws");
    assert_string_equal(get(env, "PADDOCK_SESSION"), "fix");
    const char *proxies[] = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                             "http_proxy", "https_proxy", "all_proxy"};
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(get(env, proxies[i]), "http://127.0.0.1:3128");
    /* the sandbox's loopback never goes through the gateway, in each client's form */
    const char *no_proxy = get(env, "no_proxy");
    assert_non_null(strstr(no_proxy, "127.0.0.1"));
    assert_non_null(strstr(no_proxy, "::1"));
    assert_non_null(strstr(no_proxy, "localhost"));
    /* but the policy's env.set may say otherwise */
    assert_string_equal(get(env, "NO_PROXY"), "policy-says");
    const char *cas[] = {"SSL_CERT_FILE",       "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE",
                         "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "CARGO_HTTP_CAINFO"};
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(get(env, cas[i]), "/etc/ssl/paddock.pem");
    /* the placeholders come last, over the policy's own */
    assert_string_equal(get(env, "OPENAI_API_KEY"), "PDK_PLACEHOLDER_1");
    assert_null(get(env, "not-an-assignment"));
    pdk_strv_free(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_secret_names),
        cmocka_unit_test(t_allowlist),
        cmocka_unit_test(t_policy_pass_and_set),
        cmocka_unit_test(t_extra_and_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
