/* policy_credentials.c: the "credentials" section: what the egress gateway puts on the wire for
 * the sandbox, each credential from its provider's vault secrets, toward its hosts, by
 * injection or in place of a placeholder.
 */
#include "policy_internal.h"

#include "vault.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const provider_names[] = {
    [PDK_CREDENTIAL_STATIC] = "static",
    [PDK_CREDENTIAL_FEISHU_TENANT_TOKEN] = "feishu_tenant_token",
    [PDK_CREDENTIAL_OAUTH2_REFRESH] = "oauth2_refresh",
};

const char *pdk_credential_provider_name(pdk_credential_provider provider)
{
    return (unsigned)provider < PDK_ARRAY_SIZE(provider_names) ? provider_names[provider] : "?";
}

/* {secret: NAME}: the name of a vault secret; NULL after a diagnostic. */
static char *secret_ref(parse_state *st, const char *field, yaml_node_t *n)
{
    static const key_spec keys[] = {{"secret", NULL}};
    yaml_node_t *v[1];
    if (n->type != YAML_MAPPING_NODE) {
        pdk__expected(st, field, n,
                      "{secret: NAME} (a value from the vault: paddock secret set NAME)");
        return NULL;
    }
    if (!pdk__mapping_values(st, field, n, keys, 1, v))
        return NULL;
    if (!v[0]) {
        pdk__diag_node(st, n, "%s: give the vault secret as {secret: NAME}", field);
        return NULL;
    }
    _cleanup_free_ char *f = xasprintf("%s.secret", field);
    const char *name = pdk__scalar_text(st, f, v[0], "a secret name");
    if (!name)
        return NULL;
    if (!pdk_vault_name_valid(name)) {
        _cleanup_free_ char *q = pdk__quote_str(name);
        pdk__diag_node(st, v[0], "%s: %s is not a secret name (letters, digits, '.', '_', '-')", f,
                       q);
        return NULL;
    }
    return xstrdup(name);
}

static char *env_name_value(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = pdk__scalar_text(st, field, n, "an environment variable name");
    if (!v)
        return NULL;
    if (!pdk__env_name_valid(v, strlen(v), false)) {
        _cleanup_free_ char *q = pdk__quote_str(v);
        pdk__diag_node(st, n, "%s: %s is not an environment variable name", field, q);
        return NULL;
    }
    return xstrdup(v);
}

void pdk__credential_clear(pdk_credential *c)
{
    free(c->name);
    free(c->value_secret);
    free(c->app_id_secret);
    free(c->app_secret_secret);
    free(c->refresh_token_secret);
    free(c->client_id_secret);
    free(c->client_secret_secret);
    free(c->token_url);
    pdk_strv_free(c->hosts);
    free(c->inject_header);
    free(c->inject_value);
    free(c->placeholder_env);
    free(c->placeholder_app_secret_env);
    free(c->placeholder_file);
    free(c->placeholder_prefix);
    pdk_strv_free(c->replace_in_headers);
    memset(c, 0, sizeof(*c));
}

/* A field name a credential can be set in: a token of letters, digits, '-' and '_'. */
static bool header_name_ok(const char *h)
{
    bool ok = h && *h;
    for (const char *p = h; ok && *p; p++)
        ok = isalnum((unsigned char)*p) || *p == '-' || *p == '_';
    return ok;
}

/* Fields that frame or route a request: never a credential's (the gateway would change what
 * the request is). */
static bool header_is_framing(const char *h)
{
    static const char *const names[] = {
        "Host", "Content-Length", "Transfer-Encoding", "Connection",       "Upgrade",
        "TE",   "Trailer",        "Keep-Alive",        "Proxy-Connection", "Expect"};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(names); i++)
        if (strcasecmp(h, names[i]) == 0)
            return true;
    return false;
}

/* replace_in_headers: the field names; false after a diagnostic. */
static bool credential_fields(parse_state *st, const char *field, yaml_node_t *n, char ***out)
{
    yaml_node_item_t *items;
    size_t count = 0;
    if (!pdk__list_items(st, field, n, &items, &count))
        return false;
    bool ok = true;
    *out = xcalloc(1, sizeof(char *));
    for (size_t i = 0; i < count; i++) {
        _cleanup_free_ char *f = xasprintf("%s[%zu]", field, i);
        yaml_node_t *item = pdk__node_at(st, items[i]);
        const char *h = item ? pdk__scalar_text(st, f, item, "a header name") : NULL;
        if (!h) {
            ok = false;
        } else if (!header_name_ok(h)) {
            _cleanup_free_ char *q = pdk__quote_str(h);
            pdk__diag_node(st, item, "%s: %s is not a header name (letters, digits, '-', '_')", f,
                           q);
            ok = false;
        } else if (header_is_framing(h)) {
            pdk__diag_node(st, item,
                           "%s: %s frames or routes the request and cannot carry a credential "
                           "(name the field the API reads its key from, e.g. X-Api-Key)",
                           f, h);
            ok = false;
        } else {
            pdk_strv_push(out, h);
        }
    }
    if (count == 0) {
        pdk__diag_node(st, n, "%s: give at least one header name, e.g. [X-Api-Key]", field);
        ok = false;
    }
    return ok;
}

/* placeholder.prefix: what a placeholder starts with; NULL after a diagnostic. */
static char *placeholder_prefix(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = pdk__scalar_text(st, field, n, "a prefix such as \"sk-proj-\"");
    if (!v)
        return NULL;
    bool ok = *v && strlen(v) <= 64;
    for (const char *p = v; ok && *p; p++)
        ok = isalnum((unsigned char)*p) || strchr("-_.~+/:", *p);
    if (!ok) {
        _cleanup_free_ char *q = pdk__quote_str(v);
        pdk__diag_node(
            st, n,
            "%s: %s is not a prefix (1 to 64 letters, digits and '-', '_', '.', '~', '+', "
            "'/', ':')",
            field, q);
        return NULL;
    }
    return xstrdup(v);
}

static void credential(parse_state *st, const char *field, yaml_node_t *n)
{
    enum {
        K_NAME,
        K_PROVIDER,
        K_VALUE,
        K_APP_ID,
        K_APP_SECRET,
        K_REFRESH,
        K_CLIENT_ID,
        K_CLIENT_SECRET,
        K_TOKEN_URL,
        K_HOSTS,
        K_INJECT,
        K_PLACEHOLDER,
        K_FIELDS,
        K_BODY,
        K_PLAIN_HTTP,
        K_COUNT
    };
    static const key_spec keys[] = {
        {"name", NULL},
        {"provider", NULL},
        {"value", NULL},
        {"app_id", NULL},
        {"app_secret", NULL},
        {"refresh_token", NULL},
        {"client_id", NULL},
        {"client_secret", NULL},
        {"token_url", NULL},
        {"hosts", NULL},
        {"inject", NULL},
        {"placeholder", NULL},
        {"replace_in_headers", NULL},
        {"replace_in_body", NULL},
        {"allow_plain_http", NULL},
    };
    yaml_node_t *v[K_COUNT];
    if (!pdk__mapping_values(st, field, n, keys, K_COUNT, v))
        return;
    pdk_credential c = {.line = pdk__node_line(n)};
    bool ok = true;
#define SUBFIELD(k) _cleanup_free_ char *f_##k = xasprintf("%s.%s", field, keys[k].name)
    SUBFIELD(K_NAME);
    SUBFIELD(K_PROVIDER);
    SUBFIELD(K_HOSTS);
    SUBFIELD(K_TOKEN_URL);
    SUBFIELD(K_BODY);
    SUBFIELD(K_FIELDS);
    SUBFIELD(K_PLAIN_HTTP);
#undef SUBFIELD
    const char *name = v[K_NAME] ? pdk__scalar_text(st, f_K_NAME, v[K_NAME], "a name") : NULL;
    if (!v[K_NAME]) {
        pdk__diag_node(st, n, "%s: a credential needs \"name\"", field);
        ok = false;
    } else if (!name || !pdk_vault_name_valid(name)) {
        if (name) {
            _cleanup_free_ char *q = pdk__quote_str(name);
            pdk__diag_node(st, v[K_NAME], "%s: %s is not a name (letters, digits, '.', '_', '-')",
                           f_K_NAME, q);
        }
        ok = false;
    } else {
        c.name = xstrdup(name);
        for (size_t i = 0; i < st->policy->credential_count; i++)
            if (strcmp(st->policy->credentials[i].name, name) == 0) {
                pdk__diag_node(st, v[K_NAME],
                               "%s: a credential called %s is there already (line %d)", f_K_NAME,
                               name, st->policy->credentials[i].line);
                ok = false;
            }
    }
    const char *prov =
        v[K_PROVIDER] ? pdk__scalar_text(st, f_K_PROVIDER, v[K_PROVIDER], "a provider") : NULL;
    int provider = -1;
    for (size_t i = 0; prov && i < PDK_ARRAY_SIZE(provider_names); i++)
        if (strcmp(prov, provider_names[i]) == 0)
            provider = (int)i;
    if (!v[K_PROVIDER] || (prov && provider < 0)) {
        _cleanup_free_ char *q = prov ? pdk__quote_str(prov) : NULL;
        pdk__diag_node(st, v[K_PROVIDER] ? v[K_PROVIDER] : n,
                       "%s: %s%s (use static, feishu_tenant_token or oauth2_refresh)",
                       v[K_PROVIDER] ? f_K_PROVIDER : field,
                       v[K_PROVIDER] ? "unknown provider " : "a credential needs \"provider\"",
                       q ? q : "");
        ok = false;
    } else if (!prov) {
        ok = false;
    }
    c.provider = provider < 0 ? PDK_CREDENTIAL_STATIC : (pdk_credential_provider)provider;
    /* the vault secrets each provider takes */
    struct {
        int key;
        char **out;
        bool needed;
    } refs[] = {
        {K_VALUE, &c.value_secret, provider == PDK_CREDENTIAL_STATIC},
        {K_APP_ID, &c.app_id_secret, provider == PDK_CREDENTIAL_FEISHU_TENANT_TOKEN},
        {K_APP_SECRET, &c.app_secret_secret, provider == PDK_CREDENTIAL_FEISHU_TENANT_TOKEN},
        {K_REFRESH, &c.refresh_token_secret, provider == PDK_CREDENTIAL_OAUTH2_REFRESH},
        {K_CLIENT_ID, &c.client_id_secret, false},
        {K_CLIENT_SECRET, &c.client_secret_secret, false},
    };
    for (size_t i = 0; i < PDK_ARRAY_SIZE(refs); i++) {
        _cleanup_free_ char *f = xasprintf("%s.%s", field, keys[refs[i].key].name);
        yaml_node_t *node = v[refs[i].key];
        if (node && provider >= 0 && !refs[i].needed &&
            !(provider == PDK_CREDENTIAL_OAUTH2_REFRESH &&
              (refs[i].key == K_CLIENT_ID || refs[i].key == K_CLIENT_SECRET))) {
            pdk__diag_node(st, node, "%s: not a key of a %s credential (remove it)", f, prov);
            ok = false;
        } else if (node && !(*refs[i].out = secret_ref(st, f, node))) {
            ok = false;
        } else if (!node && refs[i].needed) {
            pdk__diag_node(st, n, "%s: a %s credential needs \"%s\" ({secret: NAME})", field, prov,
                           keys[refs[i].key].name);
            ok = false;
        }
    }
    if (v[K_TOKEN_URL]) {
        const char *u = pdk__scalar_text(st, f_K_TOKEN_URL, v[K_TOKEN_URL], "an https:// URL");
        if (u && strncmp(u, "https://", 8) != 0 && strncmp(u, "http://", 7) != 0) {
            _cleanup_free_ char *q = pdk__quote_str(u);
            pdk__diag_node(st, v[K_TOKEN_URL], "%s: %s is not an http(s) URL", f_K_TOKEN_URL, q);
            ok = false;
        } else if (u) {
            c.token_url = xstrdup(u);
        } else {
            ok = false;
        }
    } else if (provider == PDK_CREDENTIAL_OAUTH2_REFRESH) {
        pdk__diag_node(st, n, "%s: an oauth2_refresh credential needs \"token_url\"", field);
        ok = false;
    }
    /* hosts */
    yaml_node_item_t *items;
    size_t count = 0;
    if (!v[K_HOSTS]) {
        pdk__diag_node(st, n,
                       "%s: a credential needs \"hosts\" (where it may go, e.g. "
                       "[open.feishu.cn])",
                       field);
        ok = false;
    } else if (pdk__list_items(st, f_K_HOSTS, v[K_HOSTS], &items, &count)) {
        c.hosts = xcalloc(1, sizeof(char *));
        for (size_t i = 0; i < count; i++) {
            _cleanup_free_ char *f = xasprintf("%s[%zu]", f_K_HOSTS, i);
            yaml_node_t *item = pdk__node_at(st, items[i]);
            char *h = item ? pdk__host_value(st, f, item, true) : NULL;
            if (h)
                pdk_strv_push_take(&c.hosts, h);
            else
                ok = false;
        }
        if (count == 0) {
            pdk__diag_node(st, v[K_HOSTS], "%s: give at least one host", f_K_HOSTS);
            ok = false;
        }
    } else {
        ok = false;
    }
    /* inject */
    if (v[K_INJECT]) {
        static const key_spec ikeys[] = {{"header", NULL}, {"value", NULL}};
        yaml_node_t *iv[2];
        _cleanup_free_ char *fi = xasprintf("%s.inject", field);
        if (!pdk__mapping_values(st, fi, v[K_INJECT], ikeys, 2, iv)) {
            ok = false;
        } else {
            _cleanup_free_ char *fh = xasprintf("%s.header", fi);
            _cleanup_free_ char *fv = xasprintf("%s.value", fi);
            const char *h = iv[0] ? pdk__scalar_text(st, fh, iv[0], "a header name") : NULL;
            const char *val =
                iv[1] ? pdk__scalar_text(st, fv, iv[1], "a value with {token}") : NULL;
            bool name_ok = header_name_ok(h) && !header_is_framing(h);
            if (!name_ok && header_name_ok(h)) {
                pdk__diag_node(st, iv[0],
                               "%s: %s frames or routes the request and cannot carry a "
                               "credential (e.g. Authorization)",
                               fh, h);
                ok = false;
            } else if (!name_ok) {
                pdk__diag_node(st, iv[0] ? iv[0] : v[K_INJECT],
                               "%s: give the header to set, e.g. Authorization", fh);
                ok = false;
            }
            if (!val || !strstr(val, "{token}") || strpbrk(val, "\r\n")) {
                pdk__diag_node(st, iv[1] ? iv[1] : v[K_INJECT],
                               "%s: give the header's value with {token} where the credential goes "
                               "(e.g. \"Bearer {token}\")",
                               fv);
                ok = false;
            }
            if (name_ok && val) {
                c.inject_header = xstrdup(h);
                c.inject_value = xstrdup(val);
            }
        }
    }
    /* placeholder */
    if (v[K_PLACEHOLDER]) {
        static const key_spec pkeys[] = {
            {"env", NULL}, {"app_secret_env", NULL}, {"file", NULL}, {"prefix", NULL}};
        yaml_node_t *pv[4];
        _cleanup_free_ char *fp = xasprintf("%s.placeholder", field);
        if (!pdk__mapping_values(st, fp, v[K_PLACEHOLDER], pkeys, 4, pv)) {
            ok = false;
        } else {
            _cleanup_free_ char *fe = xasprintf("%s.env", fp);
            _cleanup_free_ char *fa = xasprintf("%s.app_secret_env", fp);
            _cleanup_free_ char *ff = xasprintf("%s.file", fp);
            if (pv[0] && !(c.placeholder_env = env_name_value(st, fe, pv[0])))
                ok = false;
            if (pv[1] && provider != PDK_CREDENTIAL_FEISHU_TENANT_TOKEN) {
                pdk__diag_node(st, pv[1],
                               "%s: only a feishu_tenant_token credential has an app "
                               "secret to stand in for (remove it)",
                               fa);
                ok = false;
            } else if (pv[1] && !(c.placeholder_app_secret_env = env_name_value(st, fa, pv[1]))) {
                ok = false;
            }
            if (pv[2]) {
                const char *text = pdk__scalar_text(st, ff, pv[2], "a path (~/... or absolute)");
                char *path = text ? pdk__resolve_path(st, ff, pv[2], text, false) : NULL;
                if (path && (strcmp(path, "/") == 0 || (st->home && strcmp(path, st->home) == 0))) {
                    pdk__diag_node(st, pv[2], "%s: name a file, not a directory", ff);
                    free(path);
                    path = NULL;
                }
                if (path)
                    c.placeholder_file = path;
                else
                    ok = false;
            }
            _cleanup_free_ char *fx = xasprintf("%s.prefix", fp);
            if (pv[3] && !(c.placeholder_prefix = placeholder_prefix(st, fx, pv[3])))
                ok = false;
            if (!pv[0] && !pv[1] && !pv[2]) {
                pdk__diag_node(st, v[K_PLACEHOLDER],
                               "%s: say where the sandbox finds the "
                               "placeholder (env, file)",
                               fp);
                ok = false;
            }
        }
    }
    if (!v[K_INJECT] && !v[K_PLACEHOLDER]) {
        pdk__diag_node(st, n,
                       "%s: a credential needs \"inject\" (a header on every request to its "
                       "hosts) or \"placeholder\" (replaced where the sandbox sends it)",
                       field);
        ok = false;
    }
    bool body_ok = !v[K_BODY] || pdk__parse_bool(st, f_K_BODY, v[K_BODY], &c.replace_in_body);
    if (!body_ok)
        ok = false;
    if (v[K_FIELDS] && !credential_fields(st, f_K_FIELDS, v[K_FIELDS], &c.replace_in_headers))
        ok = false;
    if (v[K_PLAIN_HTTP] &&
        !pdk__parse_bool(st, f_K_PLAIN_HTTP, v[K_PLAIN_HTTP], &c.allow_plain_http))
        ok = false;
    /* A placeholder is replaced only where the credential says: a credential that names no
     * place would never put its value anywhere (the sandbox's placeholder would go on as
     * it is), which is what an older policy relying on "replaced wherever it appears" would
     * silently get. */
    if (v[K_PLACEHOLDER] && !v[K_INJECT] && !v[K_FIELDS] && !c.replace_in_body && body_ok) {
        pdk__diag_node(st, n,
                       "%s: say where the placeholder is replaced by the value: \"inject\" (a "
                       "header the gateway sets), \"replace_in_headers\" (e.g. [X-Api-Key]) or "
                       "\"replace_in_body: true\"",
                       field);
        ok = false;
    }
    if (!v[K_PLACEHOLDER] && (v[K_FIELDS] || c.replace_in_body)) {
        pdk__diag_node(
            st, v[K_FIELDS] ? v[K_FIELDS] : v[K_BODY],
            "%s: what is replaced is the sandbox's placeholder, and the credential gives "
            "the sandbox none (add \"placeholder\")",
            v[K_FIELDS] ? f_K_FIELDS : f_K_BODY);
        ok = false;
    }
    if (!ok) {
        pdk__credential_clear(&c);
        return;
    }
    pdk_policy *p = st->policy;
    p->credentials = xrealloc(p->credentials, (p->credential_count + 1) * sizeof(*p->credentials));
    p->credentials[p->credential_count++] = c;
}

void pdk__section_credentials(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__each_item(st, field, n, credential);
}
