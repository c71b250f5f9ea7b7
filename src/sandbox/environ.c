/* environ.c: see environ.h. */
#include "environ.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const allowed_names[] = {
    "PATH",  "LANG",     "LANGUAGE",    "TERM",    "COLORTERM", "TZ",
    "HOME",  "USER",     "LOGNAME",     "SHELL",   "EDITOR",    "VISUAL",
    "PAGER", "NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES",     "CLICOLOR",
    "LESS",  "MANPAGER", "HOSTTYPE",    NULL,
};
static const char *const allowed_prefixes[] = {"LC_", NULL};
static const char *const secret_words[] = {"TOKEN",  "SECRET",     "KEY",     "PASSWORD",
                                           "PASSWD", "CREDENTIAL", "PRIVATE", NULL};

bool pdk_environ_name_looks_secret(const char *name)
{
    for (size_t i = 0; secret_words[i]; i++) {
        size_t n = strlen(secret_words[i]);
        for (const char *p = name; *p; p++)
            if (strncasecmp(p, secret_words[i], n) == 0)
                return true;
    }
    return false;
}

static size_t name_length(const char *entry)
{
    const char *eq = strchr(entry, '=');
    return eq ? (size_t)(eq - entry) : strlen(entry);
}

static bool name_in(const char *name, size_t len, const char *const *names)
{
    for (size_t i = 0; names && names[i]; i++)
        if (strlen(names[i]) == len && strncmp(names[i], name, len) == 0)
            return true;
    return false;
}

static bool prefix_in(const char *name, size_t len, const char *const *prefixes)
{
    for (size_t i = 0; prefixes && prefixes[i]; i++) {
        size_t n = strlen(prefixes[i]);
        if (n <= len && strncmp(prefixes[i], name, n) == 0)
            return true;
    }
    return false;
}

/* Policy pass entries: exact names, or "PREFIX*". */
static bool policy_passes(const pdk_policy *policy, const char *name, size_t len, bool *exact)
{
    *exact = false;
    for (size_t i = 0; policy && policy->env_pass && policy->env_pass[i]; i++) {
        const char *p = policy->env_pass[i];
        size_t n = strlen(p);
        if (n > 0 && p[n - 1] == '*') {
            if (n - 1 <= len && strncmp(p, name, n - 1) == 0)
                return true;
        } else if (n == len && strncmp(p, name, len) == 0) {
            *exact = true;
            return true;
        }
    }
    return false;
}

static void env_set(char ***env, const char *name, const char *value)
{
    size_t len = strlen(name);
    for (size_t i = 0; *env && (*env)[i]; i++) {
        if (name_length((*env)[i]) == len && strncmp((*env)[i], name, len) == 0) {
            free((*env)[i]);
            (*env)[i] = xasprintf("%s=%s", name, value);
            return;
        }
    }
    pdk_strv_push_take(env, xasprintf("%s=%s", name, value));
}

char **pdk_environ_build(char *const *host_env, const pdk_policy *policy,
                         const pdk_environ_extra *extra)
{
    char **env = xcalloc(1, sizeof(char *));
    for (size_t i = 0; host_env && host_env[i]; i++) {
        const char *entry = host_env[i];
        size_t len = name_length(entry);
        if (len == 0 || !entry[len])
            continue;
        _cleanup_free_ char *name = xstrndup(entry, len);
        bool exact = false;
        bool passed = policy_passes(policy, name, len, &exact);
        bool allowed = name_in(name, len, allowed_names) || prefix_in(name, len, allowed_prefixes);
        if (!passed && !allowed)
            continue;
        if (pdk_environ_name_looks_secret(name) && !exact)
            continue;
        env_set(&env, name, entry + len + 1);
    }
    if (extra) {
        if (extra->home)
            env_set(&env, "HOME", extra->home);
        if (extra->pwd)
            env_set(&env, "PWD", extra->pwd);
        if (extra->session)
            env_set(&env, "PADDOCK_SESSION", extra->session);
        if (extra->proxy_url) {
            static const char *const proxies[] = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                                                  "http_proxy", "https_proxy", "all_proxy"};
            for (size_t i = 0; i < sizeof(proxies) / sizeof(*proxies); i++)
                env_set(&env, proxies[i], extra->proxy_url);
            /* The sandbox's loopback is its own (a dev server, its tests): never through
             * the gateway. Each form for the clients that read it: curl and Go take the
             * CIDR, Python's urllib "[::1]", requests and Go "::1". */
            env_set(&env, "NO_PROXY", PDK_ENVIRON_NO_PROXY);
            env_set(&env, "no_proxy", PDK_ENVIRON_NO_PROXY);
        }
        if (extra->ca_bundle) {
            static const char *const cas[] = {"SSL_CERT_FILE",      "CURL_CA_BUNDLE",
                                              "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                                              "GIT_SSL_CAINFO",     "CARGO_HTTP_CAINFO"};
            for (size_t i = 0; i < sizeof(cas) / sizeof(*cas); i++)
                env_set(&env, cas[i], extra->ca_bundle);
        }
    }
    env_set(&env, "TMPDIR", "/tmp");
    env_set(&env, "PADDOCK_SANDBOX", "1");
    bool has_path = false;
    for (size_t i = 0; env[i]; i++)
        if (strncmp(env[i], "PATH=", 5) == 0)
            has_path = true;
    if (!has_path)
        env_set(&env, "PATH", "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin");
    for (size_t i = 0; policy && i < policy->env_set_count; i++)
        env_set(&env, policy->env_set[i].name, policy->env_set[i].value);
    for (size_t i = 0; extra && extra->set_last && extra->set_last[i]; i++) {
        const char *eq = strchr(extra->set_last[i], '=');
        if (!eq)
            continue;
        _cleanup_free_ char *name = xstrndup(extra->set_last[i], (size_t)(eq - extra->set_last[i]));
        env_set(&env, name, eq + 1);
    }
    return env;
}
