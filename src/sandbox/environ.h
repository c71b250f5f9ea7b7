/* environ.h: the environment a sandboxed command gets.
 *
 * An allowlist of harmless variables from the caller (PATH, LANG, LC_*, TERM, TZ, HOME,
 * USER, SHELL, ...), plus what the policy passes by name or prefix glob, plus what it sets.
 * Names that look like secrets (*TOKEN*, *SECRET*, *KEY*, *PASSWORD*, *PASSWD*,
 * *CREDENTIAL*, *PRIVATE*; any case) are dropped unless the policy passes them by their
 * exact name.
 */
#ifndef PADDOCK_ENVIRON_H
#define PADDOCK_ENVIRON_H

#include "policy.h"

bool pdk_environ_name_looks_secret(const char *name);

/* The sandbox's loopback names and addresses, in the forms curl, Python (urllib and
 * requests), Node's proxy libraries and Go each match. */
#define PDK_ENVIRON_NO_PROXY "localhost,127.0.0.1,::1,[::1],127.0.0.0/8,0.0.0.0"

/* Variables paddock sets itself; NULL fields are left alone. */
typedef struct pdk_environ_extra {
    const char *home;    /* HOME inside */
    const char *pwd;     /* PWD inside */
    const char *session; /* PADDOCK_SESSION */
    /* The egress gateway's proxy: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (and lower case) set
     * to it, NO_PROXY (and no_proxy) to PDK_ENVIRON_NO_PROXY: the sandbox's own loopback
     * is reached directly, everything else through the gateway (a policy's env.set may
     * say otherwise). */
    const char *proxy_url;
    /* The CA bundle inside (the gateway's interception CA among the roots):
     * SSL_CERT_FILE, CURL_CA_BUNDLE, REQUESTS_CA_BUNDLE, NODE_EXTRA_CA_CERTS,
     * GIT_SSL_CAINFO, CARGO_HTTP_CAINFO name it. */
    const char *ca_bundle;
    /* "NAME=VALUE" set last, over everything above and the policy's (the credentials'
     * placeholders); NULL-terminated, may be NULL. */
    char *const *set_last;
} pdk_environ_extra;

/* A new NULL-terminated "NAME=VALUE" vector. */
char **pdk_environ_build(char *const *host_env, const pdk_policy *policy,
                         const pdk_environ_extra *extra);

#endif
