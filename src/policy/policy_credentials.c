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

/* ---- a credential ---- */

/* The credential being read (st->credential): what its keys' handlers fill, and what the
 * checks of their combinations look at once every key is read. */
typedef struct credential_read {
    pdk_credential c;
    int provider; /* -1: not known (missing or unknown, reported) */
    bool ok;      /* nothing wrong so far: the credential is kept */
    yaml_node_t *inject, *placeholder, *fields, *body; /* the values given, or NULL */
    bool body_ok;                                      /* replace_in_body read (or absent) */
} credential_read;

static void credential_name(parse_state *st, const char *field, yaml_node_t *n)
{
    credential_read *r = st->credential;
    const char *name = pdk__scalar_text(st, field, n, "a name");
    if (!name || !pdk_vault_name_valid(name)) {
        if (name) {
            _cleanup_free_ char *q = pdk__quote_str(name);
            pdk__diag_node(st, n, "%s: %s is not a name (letters, digits, '.', '_', '-')", field,
                           q);
        }
        r->ok = false;
        return;
    }
    r->c.name = xstrdup(name);
    for (size_t i = 0; i < st->policy->credential_count; i++)
        if (strcmp(st->policy->credentials[i].name, name) == 0) {
            pdk__diag_node(st, n, "%s: a credential called %s is there already (line %d)", field,
                           name, st->policy->credentials[i].line);
            r->ok = false;
        }
}

/* A vault secret's name into *out ({secret: NAME}). */
static void credential_secret(parse_state *st, const char *field, yaml_node_t *n, char **out)
{
    if (!(*out = secret_ref(st, field, n)))
        st->credential->ok = false;
}

#define SECRET_HANDLER(fn, member)                                                                 \
    static void fn(parse_state *st, const char *field, yaml_node_t *n)                             \
    {                                                                                              \
        credential_secret(st, field, n, &st->credential->c.member);                                \
    }
SECRET_HANDLER(credential_value, value_secret)
SECRET_HANDLER(credential_app_id, app_id_secret)
SECRET_HANDLER(credential_app_secret, app_secret_secret)
SECRET_HANDLER(credential_refresh_token, refresh_token_secret)
SECRET_HANDLER(credential_client_id, client_id_secret)
SECRET_HANDLER(credential_client_secret, client_secret_secret)
#undef SECRET_HANDLER

static void credential_token_url(parse_state *st, const char *field, yaml_node_t *n)
{
    credential_read *r = st->credential;
    const char *u = pdk__scalar_text(st, field, n, "an https:// URL");
    if (u && strncmp(u, "https://", 8) != 0 && strncmp(u, "http://", 7) != 0) {
        _cleanup_free_ char *q = pdk__quote_str(u);
        pdk__diag_node(st, n, "%s: %s is not an http(s) URL", field, q);
        r->ok = false;
    } else if (u) {
        r->c.token_url = xstrdup(u);
    } else {
        r->ok = false;
    }
}

static void credential_hosts(parse_state *st, const char *field, yaml_node_t *n)
{
    credential_read *r = st->credential;
    yaml_node_item_t *items;
    size_t count = 0;
    if (!pdk__list_items(st, field, n, &items, &count)) {
        r->ok = false;
        return;
    }
    r->c.hosts = xcalloc(1, sizeof(char *));
    for (size_t i = 0; i < count; i++) {
        _cleanup_free_ char *f = xasprintf("%s[%zu]", field, i);
        yaml_node_t *item = pdk__node_at(st, items[i]);
        char *h = item ? pdk__host_value(st, f, item, true) : NULL;
        if (h)
            pdk_strv_push_take(&r->c.hosts, h);
        else
            r->ok = false;
    }
    if (count == 0) {
        pdk__diag_node(st, n, "%s: give at least one host", field);
        r->ok = false;
    }
}

static void credential_inject(parse_state *st, const char *field, yaml_node_t *n)
{
    credential_read *r = st->credential;
    r->inject = n;
    static const key_spec keys[] = {{"header", NULL}, {"value", NULL}};
    yaml_node_t *v[2];
    if (!pdk__mapping_values(st, field, n, keys, 2, v)) {
        r->ok = false;
        return;
    }
    _cleanup_free_ char *fh = xasprintf("%s.header", field);
    _cleanup_free_ char *fv = xasprintf("%s.value", field);
    const char *h = v[0] ? pdk__scalar_text(st, fh, v[0], "a header name") : NULL;
    const char *val = v[1] ? pdk__scalar_text(st, fv, v[1], "a value with {token}") : NULL;
    bool name_ok = header_name_ok(h) && !header_is_framing(h);
    if (!name_ok && header_name_ok(h)) {
        pdk__diag_node(st, v[0],
                       "%s: %s frames or routes the request and cannot carry a "
                       "credential (e.g. Authorization)",
                       fh, h);
        r->ok = false;
    } else if (!name_ok) {
        pdk__diag_node(st, v[0] ? v[0] : n, "%s: give the header to set, e.g. Authorization", fh);
        r->ok = false;
    }
    if (!val || !strstr(val, "{token}") || strpbrk(val, "\r\n")) {
        pdk__diag_node(st, v[1] ? v[1] : n,
                       "%s: give the header's value with {token} where the credential goes "
                       "(e.g. \"Bearer {token}\")",
                       fv);
        r->ok = false;
    }
    if (name_ok && val) {
        r->c.inject_header = xstrdup(h);
        r->c.inject_value = xstrdup(val);
    }
}

static void credential_placeholder(parse_state *st, const char *field, yaml_node_t *n)
{
    credential_read *r = st->credential;
    r->placeholder = n;
    static const key_spec keys[] = {
        {"env", NULL}, {"app_secret_env", NULL}, {"file", NULL}, {"prefix", NULL}};
    yaml_node_t *v[4];
    if (!pdk__mapping_values(st, field, n, keys, 4, v)) {
        r->ok = false;
        return;
    }
    _cleanup_free_ char *fe = xasprintf("%s.env", field);
    _cleanup_free_ char *fa = xasprintf("%s.app_secret_env", field);
    _cleanup_free_ char *ff = xasprintf("%s.file", field);
    if (v[0] && !(r->c.placeholder_env = env_name_value(st, fe, v[0])))
        r->ok = false;
    if (v[1] && r->provider != PDK_CREDENTIAL_FEISHU_TENANT_TOKEN) {
        pdk__diag_node(st, v[1],
                       "%s: only a feishu_tenant_token credential has an app "
                       "secret to stand in for (remove it)",
                       fa);
        r->ok = false;
    } else if (v[1] && !(r->c.placeholder_app_secret_env = env_name_value(st, fa, v[1]))) {
        r->ok = false;
    }
    if (v[2]) {
        const char *text = pdk__scalar_text(st, ff, v[2], "a path (~/... or absolute)");
        char *path = text ? pdk__resolve_path(st, ff, v[2], text, false) : NULL;
        if (path && (strcmp(path, "/") == 0 || (st->home && strcmp(path, st->home) == 0))) {
            pdk__diag_node(st, v[2], "%s: name a file, not a directory", ff);
            free(path);
            path = NULL;
        }
        if (path)
            r->c.placeholder_file = path;
        else
            r->ok = false;
    }
    _cleanup_free_ char *fx = xasprintf("%s.prefix", field);
    if (v[3] && !(r->c.placeholder_prefix = placeholder_prefix(st, fx, v[3])))
        r->ok = false;
    if (!v[0] && !v[1] && !v[2]) {
        pdk__diag_node(st, n, "%s: say where the sandbox finds the placeholder (env, file)", field);
        r->ok = false;
    }
}

static void credential_replace_in_headers(parse_state *st, const char *field, yaml_node_t *n)
{
    credential_read *r = st->credential;
    r->fields = n;
    if (!credential_fields(st, field, n, &r->c.replace_in_headers))
        r->ok = false;
}

static void credential_replace_in_body(parse_state *st, const char *field, yaml_node_t *n)
{
    credential_read *r = st->credential;
    r->body = n;
    r->body_ok = pdk__parse_bool(st, field, n, &r->c.replace_in_body);
    if (!r->body_ok)
        r->ok = false;
}

static void credential_allow_plain_http(parse_state *st, const char *field, yaml_node_t *n)
{
    if (!pdk__parse_bool(st, field, n, &st->credential->c.allow_plain_http))
        st->credential->ok = false;
}

/* ---- the key tables: one per provider ---- */

#define PROVIDERS " (use static, feishu_tenant_token or oauth2_refresh)"
#define SECRET    " ({secret: NAME})"

/* The keys of every credential, first (name, provider: read before the others, it says
 * which table they are read against) and last (where the credential goes). */
#define CREDENTIAL_KEYS_FIRST                                                                      \
    {"name", credential_name, "a credential", NULL},                                               \
    {                                                                                              \
        "provider", NULL, "a credential", PROVIDERS                                                \
    }
#define CREDENTIAL_KEYS_LAST                                                                       \
    {"hosts", credential_hosts, "a credential", " (where it may go, e.g. [open.feishu.cn])"},      \
        {"inject", credential_inject}, {"placeholder", credential_placeholder},                    \
        {"replace_in_headers", credential_replace_in_headers},                                     \
        {"replace_in_body", credential_replace_in_body},                                           \
    {                                                                                              \
        "allow_plain_http", credential_allow_plain_http                                            \
    }

static const key_spec static_keys[] = {
    CREDENTIAL_KEYS_FIRST,
    {"value", credential_value, "a static credential", SECRET},
    CREDENTIAL_KEYS_LAST,
};

static const key_spec feishu_tenant_token_keys[] = {
    CREDENTIAL_KEYS_FIRST,
    {"app_id", credential_app_id, "a feishu_tenant_token credential", SECRET},
    {"app_secret", credential_app_secret, "a feishu_tenant_token credential", SECRET},
    CREDENTIAL_KEYS_LAST,
};

static const key_spec oauth2_refresh_keys[] = {
    CREDENTIAL_KEYS_FIRST,
    {"refresh_token", credential_refresh_token, "an oauth2_refresh credential", SECRET},
    {"client_id", credential_client_id},
    {"client_secret", credential_client_secret},
    {"token_url", credential_token_url, "an oauth2_refresh credential", NULL},
    CREDENTIAL_KEYS_LAST,
};

/* Every key a credential of any provider can have, in the order they are read (and listed
 * to an unknown key); also the table of a credential whose provider is not known, so that
 * its other problems are still shown. */
static const key_spec credential_keys[] = {
    CREDENTIAL_KEYS_FIRST,
    {"value", credential_value},
    {"app_id", credential_app_id},
    {"app_secret", credential_app_secret},
    {"refresh_token", credential_refresh_token},
    {"client_id", credential_client_id},
    {"client_secret", credential_client_secret},
    {"token_url", credential_token_url},
    CREDENTIAL_KEYS_LAST,
};

static const struct provider {
    const char *name;
    const char *what; /* whose keys the table has: "not a key of a static credential" */
    const key_spec *keys;
    size_t nkeys;
} providers[] = {
    [PDK_CREDENTIAL_STATIC] = {"static", "a static credential", static_keys,
                               PDK_ARRAY_SIZE(static_keys)},
    [PDK_CREDENTIAL_FEISHU_TENANT_TOKEN] = {"feishu_tenant_token",
                                            "a feishu_tenant_token credential",
                                            feishu_tenant_token_keys,
                                            PDK_ARRAY_SIZE(feishu_tenant_token_keys)},
    [PDK_CREDENTIAL_OAUTH2_REFRESH] = {"oauth2_refresh", "an oauth2_refresh credential",
                                       oauth2_refresh_keys, PDK_ARRAY_SIZE(oauth2_refresh_keys)},
};

const char *pdk_credential_provider_name(pdk_credential_provider provider)
{
    return (unsigned)provider < PDK_ARRAY_SIZE(providers) ? providers[provider].name : "?";
}

/* The provider named by n (-1 after a diagnostic). */
static int credential_provider(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *name = pdk__scalar_text(st, field, n, "a provider");
    if (!name)
        return -1;
    for (size_t i = 0; i < PDK_ARRAY_SIZE(providers); i++)
        if (strcmp(name, providers[i].name) == 0)
            return (int)i;
    _cleanup_free_ char *q = pdk__quote_str(name);
    pdk__diag_node(st, n, "%s: unknown provider %s%s", field, q, PROVIDERS);
    return -1;
}

static void credential(parse_state *st, const char *field, yaml_node_t *n)
{
    yaml_node_t *v[PDK_ARRAY_SIZE(credential_keys)];
    if (!pdk__mapping_values(st, field, n, credential_keys, PDK_ARRAY_SIZE(credential_keys), v))
        return;
    credential_read r = {
        .c = {.line = pdk__node_line(n)}, .provider = -1, .ok = true, .body_ok = true};
    yaml_node_t *provider =
        pdk__key_value(credential_keys, PDK_ARRAY_SIZE(credential_keys), v, "provider");
    if (provider) {
        _cleanup_free_ char *f = xasprintf("%s.provider", field);
        r.provider = credential_provider(st, f, provider);
        r.ok = r.provider >= 0;
    }
    r.c.provider = r.provider < 0 ? PDK_CREDENTIAL_STATIC : (pdk_credential_provider)r.provider;
    const struct provider *p = r.provider < 0 ? NULL : &providers[r.provider];
    st->credential = &r;
    if (!pdk__walk_values(st, field, n, credential_keys, PDK_ARRAY_SIZE(credential_keys), v,
                          p ? p->keys : credential_keys,
                          p ? p->nkeys : PDK_ARRAY_SIZE(credential_keys), p ? p->what : NULL))
        r.ok = false;
    st->credential = NULL;

    /* the combinations */
    if (!r.inject && !r.placeholder) {
        pdk__diag_node(st, n,
                       "%s: a credential needs \"inject\" (a header on every request to its "
                       "hosts) or \"placeholder\" (replaced where the sandbox sends it)",
                       field);
        r.ok = false;
    }
    /* A placeholder is replaced only where the credential says: a credential that names no
     * place would never put its value anywhere (the sandbox's placeholder would go on as
     * it is), which is what an older policy relying on "replaced wherever it appears" would
     * silently get. */
    if (r.placeholder && !r.inject && !r.fields && !r.c.replace_in_body && r.body_ok) {
        pdk__diag_node(st, n,
                       "%s: say where the placeholder is replaced by the value: \"inject\" (a "
                       "header the gateway sets), \"replace_in_headers\" (e.g. [X-Api-Key]) or "
                       "\"replace_in_body: true\"",
                       field);
        r.ok = false;
    }
    if (!r.placeholder && (r.fields || r.c.replace_in_body)) {
        _cleanup_free_ char *f =
            xasprintf("%s.%s", field, r.fields ? "replace_in_headers" : "replace_in_body");
        pdk__diag_node(st, r.fields ? r.fields : r.body,
                       "%s: what is replaced is the sandbox's placeholder, and the credential "
                       "gives the sandbox none (add \"placeholder\")",
                       f);
        r.ok = false;
    }
    if (!r.ok) {
        pdk__credential_clear(&r.c);
        return;
    }
    pdk_policy *pol = st->policy;
    pol->credentials =
        xrealloc(pol->credentials, (pol->credential_count + 1) * sizeof(*pol->credentials));
    pol->credentials[pol->credential_count++] = r.c;
}

void pdk__section_credentials(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__each_item(st, field, n, credential);
}
