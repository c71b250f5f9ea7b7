/* run_credentials.c: a run's credentials (values from the vault, placeholders for the
 * sandbox, bound in as files or set in its environment) and its gateway started with them. */
#include "run_internal.h"

#include "approvals.h"
#include "audit.h"
#include "exec_listener.h"
#include "changes.h"
#include "commit.h"
#include "display.h"
#include "environ.h"
#include "fsutil.h"
#include "gateway.h"
#include "home.h"
#include "landlock.h"
#include "log.h"
#include "placeholder_scan.h"
#include "policy.h"
#include "redact.h"
#include "sandbox.h"
#include "vault.h"
#include "visibility.h"
#include "statedir.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* The sockets init made, on the supervisor's loop: the gateway serves them. */
static void serve_gateway(void *arg, struct event_base *base, pid_t init_pid,
                          const pdk_egress_socket *socks, size_t count)
{
    run_state *st = arg;
    if (st->gateway)
        st->gateway_module->serve(st->gateway, base, init_pid, socks, count);
    else
        for (size_t i = 0; i < count; i++)
            close(socks[i].fd);
}

/* The end of the sandbox, on the supervisor's loop: the gateway's connections end. */
static void stop_gateway(void *arg)
{
    run_state *st = arg;
    if (!st->gateway)
        return;
    st->gateway_module->finish(st->gateway); /* what it counted and did not write yet */
    pdk_gateway_stats s;
    st->gateway_module->stats(st->gateway, &s);
    json_t *o = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "connections", (json_int_t)s.connections, "requests",
        (json_int_t)s.requests, "denied", (json_int_t)s.denied, "dns_queries",
        (json_int_t)s.dns_queries, "dns_blocked", (json_int_t)s.dns_blocked, "connections_refused",
        (json_int_t)s.connections_refused, "idle_closed", (json_int_t)s.idle_closed);
    pdk_error err = {0};
    if (pdk_audit_spool_write(st->spool, st->session->id, "net.summary", o, false, &err) < 0)
        pdk_warn("%s", err.message);
    st->gateway_module->destroy(st->gateway);
    st->gateway = NULL;
}

/* A read-only bind of dir/name (or of name alone, an absolute path) at target. */
static void add_bind(pdk_sandbox_config *cfg, const char *dir, const char *name, const char *target)
{
    cfg->binds = xrealloc(cfg->binds, (cfg->bind_count + 1) * sizeof(pdk_bind));
    pdk_bind *b = &cfg->binds[cfg->bind_count++];
    b->source = dir ? pdk_path_join(dir, name) : xstrdup(name);
    b->target = xstrdup(target);
    b->writable = false;
}

#define PDK_HOST_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

/* A placeholder that looks like what it stands for: the policy's prefix (clients that check
 * a key's shape, "sk-proj-"), else "t-" for a Feishu tenant token, else paddock's mark; then
 * 24 random bytes in lowercase hex (random: those kept with a persistent home, or NULL for
 * new ones), which is what the gateway recognises it by (placeholder_scan.h), whatever the
 * prefix. */
static char *make_placeholder(const pdk_credential *c, const char *random)
{
    char hex[PDK_PLACEHOLDER_RANDOM_HEX + 1];
    if (random) {
        snprintf(hex, sizeof(hex), "%s", random);
    } else {
        unsigned char r[PDK_PLACEHOLDER_RANDOM_HEX / 2];
        randombytes_buf(r, sizeof(r));
        sodium_bin2hex(hex, sizeof(hex), r, sizeof(r));
    }
    const char *prefix = c->placeholder_prefix                               ? c->placeholder_prefix
                         : c->provider == PDK_CREDENTIAL_FEISHU_TENANT_TOKEN ? "t-"
                                                                             : "pdk-ph-";
    return xasprintf("%s%s", prefix, hex);
}

/* The vault names credential c is made of (a NULL-terminated view of its fields). */
static char **credential_secrets(const pdk_credential *c)
{
    const char *const fields[] = {c->value_secret,      c->app_id_secret,
                                  c->app_secret_secret, c->refresh_token_secret,
                                  c->client_id_secret,  c->client_secret_secret};
    return pdk_strv_view(fields, PDK_ARRAY_SIZE(fields), (char *const[]){NULL});
}

/* With a persistent home: the random parts of the placeholders kept with it (home.h),
 * made when missing (except under the readonly profile, which writes nothing): in
 * value[i] for credential i's, and app_secret[i] for a Feishu app secret's stand-in (both
 * NULL when kept with no home, or when there is none). */
static int kept_placeholders(run_state *st, const char **value, const char **app_secret,
                             pdk_home_placeholder **list_out, pdk_error *err)
{
    *list_out = NULL;
    const pdk_policy *pol = st->policy;
    size_t n = pol->credential_count;
    if (!pol->home_persist || st->confined || n == 0)
        return 0;
    pdk_home_placeholder *list = xcalloc(2 * n, sizeof(*list));
    char **keys = NULL;
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        const pdk_credential *c = &pol->credentials[i];
        pdk_strv_push(&keys, c->name);
        list[count++].secrets = credential_secrets(c);
        if (c->provider == PDK_CREDENTIAL_FEISHU_TENANT_TOKEN) {
            pdk_strv_push_take(&keys, xasprintf("%s/app_secret", c->name));
            list[count++].secrets = credential_secrets(c);
        }
    }
    for (size_t k = 0; k < count; k++)
        list[k].key = keys[k];
    int r =
        pdk_home_placeholders(st->state_dir, pol->home_persist, list, count, !st->readonly, err);
    for (size_t k = 0; k < count; k++)
        free((char **)list[k].secrets);
    st->kept_placeholder_keys = keys;
    if (r < 0) {
        free(list);
        return -1;
    }
    for (size_t i = 0, k = 0; i < n; i++) {
        value[i] = list[k++].random;
        if (pol->credentials[i].provider == PDK_CREDENTIAL_FEISHU_TENANT_TOKEN)
            app_secret[i] = list[k++].random;
    }
    *list_out = list;
    return 0;
}

/* A placeholder for each credential (new every run, or kept with a persistent home), for
 * the sandbox's environment. No secret is touched here: this runs before the sandbox is
 * cloned, and a clone copies the supervisor's memory into the sandbox's init. */
/* A credential's placeholder.file: the placeholder in a file of the state dir (hidden
 * inside), bound read-only at the path the policy names (outside the workspace: a file
 * there would be a change of the session). */
static int placeholder_file(run_state *st, const pdk_credential *c, const char *placeholder,
                            pdk_error *err)
{
    if (pdk_path_is_within(c->placeholder_file, st->workspace))
        return pdk_error_set(err, 0,
                             "credential %s: placeholder.file %s is inside the workspace (put it "
                             "outside, e.g. under ~/)",
                             c->name, c->placeholder_file);
    _cleanup_free_ char *dir = pdk_path_join(st->state_dir, "placeholders");
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return pdk_error_set(err, errno, "cannot make %s", dir);
    _cleanup_free_ char *name = xasprintf("%d.%s", (int)getpid(), c->name);
    _cleanup_free_ char *text = xasprintf("%s\n", placeholder);
    _cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || pdk_write_file_atomic(dfd, name, text, strlen(text), 0644, false) < 0)
        return pdk_error_set(err, errno, "cannot write %s/%s", dir, name);
    pdk_strv_push_take(&st->placeholder_files, pdk_path_join(dir, name));
    add_bind(&st->cfg, dir, name, c->placeholder_file);
    return 0;
}

int pdk__run_make_placeholders(run_state *st, pdk_error *err)
{
    size_t n = st->policy->credential_count;
    st->credentials = xcalloc(n + 1, sizeof(*st->credentials));
    st->credential_env = xcalloc(1, sizeof(char *));
    _cleanup_free_ pdk_home_placeholder *kept = NULL;
    _cleanup_free_ const char **kept_value = xcalloc(n + 1, sizeof(char *));
    _cleanup_free_ const char **kept_app_secret = xcalloc(n + 1, sizeof(char *));
    if (kept_placeholders(st, kept_value, kept_app_secret, &kept, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const pdk_credential *c = &st->policy->credentials[i];
        st->credentials[i].policy = c;
        st->credentials[i].placeholder = make_placeholder(c, kept_value[i]);
        pdk_redact_add_placeholder(st->credentials[i].placeholder);
        if (c->placeholder_env)
            pdk_strv_push_take(&st->credential_env, xasprintf("%s=%s", c->placeholder_env,
                                                              st->credentials[i].placeholder));
        if (c->placeholder_file && placeholder_file(st, c, st->credentials[i].placeholder, err) < 0)
            return -1;
        if (c->provider == PDK_CREDENTIAL_FEISHU_TENANT_TOKEN) {
            /* a stand-in for the app secret too, which the gateway's answer to the token
             * endpoint accepts */
            st->credentials[i].placeholder_app_secret =
                make_placeholder(&(pdk_credential){0}, kept_app_secret[i]);
            pdk_redact_add_placeholder(st->credentials[i].placeholder_app_secret);
            if (c->placeholder_app_secret_env)
                pdk_strv_push_take(&st->credential_env,
                                   xasprintf("%s=%s", c->placeholder_app_secret_env,
                                             st->credentials[i].placeholder_app_secret));
        }
    }
    return 0;
}

/* A minted credential's own secrets (app secret, refresh token, client secret) as real
 * values of the redaction registry, so that nothing sends them into the sandbox (an
 * endpoint's error that quotes them included); the vault's copy is not kept otherwise. A
 * secret not in the vault yet is the provider's error to give, at its first mint. */
static void register_provider_secrets(pdk_vault *vault, const pdk_credential *c)
{
    const struct {
        const char *secret, *what;
    } secrets[] = {{c->app_secret_secret, "app secret"},
                   {c->refresh_token_secret, "refresh token"},
                   {c->client_secret_secret, "client secret"}};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(secrets); i++) {
        pdk_error ignored = {0};
        const char *v =
            secrets[i].secret ? pdk_vault_get(vault, secrets[i].secret, false, &ignored) : NULL;
        _cleanup_free_ char *label = xasprintf("%s (%s)", c->name, secrets[i].what);
        if (v)
            pdk_redact_add_named(v, label);
    }
}

/* The static credentials' values from the vault (after the clone), and the minted ones'
 * secrets registered for redaction. */
static int load_credential_values(run_state *st, pdk_error *err)
{
    size_t n = st->policy->credential_count;
    if (n == 0)
        return 0;
    pdk_vault *vault = NULL;
    if (pdk_vault_open(st->state_dir, false, &vault, err) < 0)
        return -1;
    int ret = 0;
    for (size_t i = 0; i < n && ret == 0; i++) {
        const pdk_credential *c = &st->policy->credentials[i];
        if (c->provider != PDK_CREDENTIAL_STATIC) {
            register_provider_secrets(vault, c);
            continue;
        }
        const char *value = pdk_vault_get(vault, c->value_secret, true, err);
        if (!value) {
            ret = pdk_error_prefix(err, "credential %s", c->name);
            break;
        }
        st->credentials[i].value = xstrdup(value);
        pdk_redact_add_named(value, c->name);
    }
    pdk_vault_close(vault);
    return ret;
}

/* After the clone, in the supervisor: the secrets and the gateway that holds them (its CA
 * key, minted tokens), none of which the sandbox's init got a copy of. */
int pdk__run_start_gateway(run_state *st, pdk_error *err)
{
    if (load_credential_values(st, err) < 0)
        return -1;
    pdk_gateway_config gc = {.policy = st->policy,
                             .credentials = st->credentials,
                             .credential_count = st->policy->credential_count,
                             .spool = st->spool,
                             .session = st->session->id,
                             .state_dir = st->state_dir,
                             .session_named = st->session->named};
    st->gateway = st->gateway_module->create(&gc, err);
    return st->gateway ? 0 : -1;
}

void pdk__run_free_credentials(run_state *st)
{
    if (st->credentials) /* (made with the policy: no policy, no credentials) */
        pdk_gateway_credentials_free(st->credentials, st->policy->credential_count);
    st->credentials = NULL;
    pdk_strv_free(st->credential_env);
    st->credential_env = NULL;
    pdk_strv_free(st->kept_placeholder_keys);
    st->kept_placeholder_keys = NULL;
    for (char **f = st->placeholder_files; f && *f; f++)
        (void)unlink(*f);
    pdk_strv_free(st->placeholder_files);
    st->placeholder_files = NULL;
}

/* The egress gateway for a policy with a network section: the module, the sockets init
 * makes for it, the proxy variables, and a resolv.conf that names the DNS stub. */
int pdk__run_setup_egress(run_state *st, pdk_error *err)
{
    pdk_sandbox_config *cfg = &st->cfg;
    st->gateway_module = pdk_gateway_module_load(err);
    if (!st->gateway_module || pdk__run_open_spool(st, err) < 0)
        return -1;
    if (pdk__run_make_placeholders(st, err) < 0)
        return -1;
    cfg->egress = true;
    st->egress_ports = pdk_net_rules_ports(&st->policy->network, &cfg->egress_port_count);
    cfg->egress_ports = st->egress_ports;
    cfg->egress_sockets = serve_gateway;
    cfg->egress_stop = stop_gateway;
    cfg->egress_arg = st;

    /* resolv.conf: one file in the state dir (hidden inside), bound over the host's. Many
     * runs bind it at once: written once, never replaced while they do. */
    static const char resolv[] = "# paddock: the egress gateway's DNS stub\nnameserver 127.0.0.1\n";
    _cleanup_close_ int dir = open(st->state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0 || pdk_write_file_once(dir, "resolv.conf", resolv, sizeof(resolv) - 1, 0644) < 0)
        return pdk_error_set(err, errno, "cannot write %s/resolv.conf", st->state_dir);
    char real[PATH_MAX];
    const char *target = realpath("/etc/resolv.conf", real) ? real : "/etc/resolv.conf";
    add_bind(cfg, st->state_dir, "resolv.conf", target);

    /* The trusted roots inside: the host's plus paddock's CA, over the distribution's
     * bundle when there is one, else beside the proxy's other files in /run. */
    _cleanup_free_ char *bundle = st->gateway_module->ca_bundle(st->state_dir, err);
    if (!bundle)
        return -1;
    struct stat sb;
    const char *inside =
        stat(PDK_HOST_CA_BUNDLE, &sb) == 0 ? PDK_HOST_CA_BUNDLE : "/run/paddock-ca-bundle.pem";
    add_bind(cfg, NULL, bundle, inside);

    pdk_strv_free(cfg->envp);
    pdk_environ_extra extra = {.home = st->home,
                               .pwd = cfg->cwd,
                               .session = st->session->id,
                               .proxy_url = "http://127.0.0.1:3128",
                               .ca_bundle = inside,
                               .set_last = st->credential_env};
    cfg->envp = pdk_environ_build(environ, st->policy, &extra);
    return 0;
}

/* Placeholders live in the session layer only while the sandbox runs: remove them, and
 * forget the ones that are gone (the others stay on the list that diff and commit
 * ignore). */
void pdk__run_remove_placeholders(run_state *st)
{
    pdk_session *s = st->session;
    _cleanup_close_ int upper = openat(s->dir_fd, "upper", O_PATH | O_DIRECTORY | O_CLOEXEC);
    char **kept = xcalloc(1, sizeof(char *));
    for (size_t i = 0; s->placeholders && s->placeholders[i]; i++) {
        const char *rel = s->placeholders[i];
        const char *leaf = NULL;
        _cleanup_close_ int parent =
            upper >= 0 ? pdk_open_parent_beneath(upper, rel, false, &leaf) : -1;
        if (parent >= 0 && unlinkat(parent, leaf, AT_REMOVEDIR) == 0)
            continue;
        if (errno == ENOENT)
            continue;
        pdk_strv_push(&kept, rel);
    }
    pdk_strv_free(s->placeholders);
    s->placeholders = kept;
}