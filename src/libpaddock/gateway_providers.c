/* gateway_providers.c: credentials that are minted, not stored (gateway_internal.h).
 *
 * feishu_tenant_token: POST https://HOST/open-apis/auth/v3/tenant_access_token/internal
 * with the app id and secret from the vault (HOST: the credential's first host).
 *
 * oauth2_refresh: the refresh_token grant of RFC 6749 section 6, POST token_url with
 * grant_type=refresh_token, the refresh token and (when given) client_id and client_secret,
 * form-encoded. The answer's access_token is the credential; a refresh_token in it
 * replaces the one in the vault (a rotating, single-use refresh token), in the same write
 * as the cached access token, so the chain is never lost.
 *
 * Either way the token and its expiry are cached in the vault (encrypted like every
 * secret, shared by every session, kept across restarts) as the secret NAME.tenant_token
 * or NAME.access_token ("TOKEN EXPIRES_NS LIFETIME_NS"), and minted again when less than 5
 * minutes remain (half its lifetime, for a short-lived one). A mint is made under the
 * credential's lock (pdk_vault_lock_secret): a session that waited for another's mint finds
 * the new token in the cache and does not mint again, and two sessions never spend the
 * same refresh token. The call goes where the policy's `resolve` says and trusts its
 * `upstream_ca`, like the gateway's own upstream connections. It is made with libcurl,
 * bounded (10 s), and not retried: a failure is the agent's 502 with the reason, and the
 * vault is left as it was.
 */
#include "gateway_internal.h"

#include "vault.h"

#include <curl/curl.h>

#define REFRESH_MARGIN_NS (5 * 60 * 1000000000LL)
#define TOKEN_REPLY_MAX   (64 * 1024)
/* An OAuth answer without expires_in (RFC 6749 only recommends it): assumed to last this. */
#define OAUTH_DEFAULT_LIFETIME_S 3600

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    pdk_buf *b = arg;
    if (b->len + size * n > TOKEN_REPLY_MAX)
        return 0; /* too much: curl fails the transfer */
    pdk_buf_append(b, p, size * n);
    return size * n;
}

/* The policy's upstream_ca, added to the roots libcurl's OpenSSL trusts. */
static CURLcode add_roots(CURL *curl, void *ssl_ctx, void *arg)
{
    (void)curl;
    pdk_gateway *g = arg;
    X509_STORE *store = SSL_CTX_get_cert_store(ssl_ctx);
    for (char **ca = g->rules->upstream_ca; ca && *ca; ca++)
        if (X509_STORE_load_file(store, *ca) != 1)
            return CURLE_SSL_CACERT_BADFILE;
    return CURLE_OK;
}

static void wipe_free(char *s)
{
    if (s) {
        sodium_memzero(s, strlen(s));
        free(s);
    }
}

/* POST body to url; the answer parsed as JSON (*answer, NULL when it is not JSON) and its
 * HTTP status. -1 with err when the endpoint cannot be reached. */
static int post(pdk_gateway *g, const char *name, const char *url, const char *content_type,
                const char *body, json_t **answer, long *status, pdk_error *err)
{
    *answer = NULL;
    *status = 0;
    CURL *curl = curl_easy_init();
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL, *scheme = NULL;
    if (!curl || !u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
        curl_easy_cleanup(curl);
        curl_url_cleanup(u);
        curl_free(host);
        curl_free(port);
        curl_free(scheme);
        return pdk_error_set(err, 0, "credential %s: the token endpoint %s is not a URL", name,
                             url);
    }
    _cleanup_free_ char *ctype = xasprintf("Content-Type: %s", content_type);
    struct curl_slist *headers = curl_slist_append(NULL, ctype);
    headers = curl_slist_append(headers, "Accept: application/json");
    struct curl_slist *connect_to = NULL;
    const pdk_net_resolve *ov = pdk_net_rules_resolve(g->rules, host, (uint16_t)atoi(port));
    if (ov) {
        _cleanup_free_ char *to =
            xasprintf("%s:%s:%s:%u", host, port, ov->to_host, (unsigned)ov->to_port);
        connect_to = curl_slist_append(NULL, to);
    }
    pdk_buf reply = {0};
    char curl_error[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, strcmp(scheme, "http") == 0 ? "http" : "https");
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_error);
    curl_easy_setopt(curl, CURLOPT_SSL_CTX_FUNCTION, add_roots);
    curl_easy_setopt(curl, CURLOPT_SSL_CTX_DATA, g);
    if (connect_to)
        curl_easy_setopt(curl, CURLOPT_CONNECT_TO, connect_to);
    CURLcode r = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(curl);
    curl_url_cleanup(u);
    curl_free(host);
    curl_free(port);
    curl_free(scheme);
    curl_slist_free_all(headers);
    curl_slist_free_all(connect_to);
    int ret = 0;
    if (r != CURLE_OK) {
        ret = pdk_error_set(err, 0, "credential %s: the token endpoint %s cannot be reached: %s",
                            name, url, curl_error[0] ? curl_error : curl_easy_strerror(r));
    } else {
        json_error_t jerr;
        *answer = json_loadb(reply.data ? reply.data : "", reply.len, 0, &jerr);
        if (!json_is_object(*answer)) {
            json_decref(*answer);
            *answer = NULL;
        }
    }
    if (reply.data)
        sodium_memzero(reply.data, reply.len);
    pdk_buf_free(&reply);
    return ret;
}

/* A minted token: the value, its expiry and lifetime, and (oauth2_refresh) the refresh
 * token to keep for the next time, when the endpoint gave a new one. */
typedef struct minted {
    char *token;
    int64_t expires_ns, lifetime_ns;
    char *next_refresh_token;
} minted;

static void minted_clear(minted *m)
{
    wipe_free(m->token);
    wipe_free(m->next_refresh_token);
    *m = (minted){0};
}

static const char *str_or(json_t *o, const char *key, const char *fallback)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s && *s ? s : fallback;
}

static void set_lifetime(minted *m, json_int_t seconds)
{
    m->lifetime_ns = (int64_t)seconds * 1000000000LL;
    m->expires_ns = pdk_now_realtime_ns() + m->lifetime_ns;
}

static int feishu_mint(pdk_gateway *g, pdk_gateway_credential *gc, minted *m, pdk_error *err)
{
    const pdk_credential *cred = gc->policy;
    const char *host = cred->hosts[0];
    if (strchr(host, '*'))
        return pdk_error_set(err, 0,
                             "credential %s: its first host (%s) is where its token is minted, "
                             "and must be a name, not a pattern",
                             cred->name, host);
    pdk_vault *vault = NULL;
    if (pdk_vault_open(g->state_dir, false, &vault, err) < 0)
        return pdk_error_prefix(err, "credential %s", cred->name);
    /* (a value is the vault's until its next write: copied before the next get) */
    const char *v = pdk_vault_get(vault, cred->app_id_secret, true, err);
    char *app_id = v ? xstrdup(v) : NULL;
    v = app_id ? pdk_vault_get(vault, cred->app_secret_secret, true, err) : NULL;
    json_t *req = v ? json_pack("{s:s, s:s}", "app_id", app_id, "app_secret", v) : NULL;
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req); /* (jansson does not wipe its copies: they live a moment) */
    free(app_id);
    pdk_vault_close(vault);
    if (!body)
        return pdk_error_prefix(err, "credential %s", cred->name);
    _cleanup_free_ char *url =
        xasprintf("https://%s/open-apis/auth/v3/tenant_access_token/internal", host);
    json_t *answer = NULL;
    long status = 0;
    int ret =
        post(g, cred->name, url, "application/json; charset=utf-8", body, &answer, &status, err);
    wipe_free(body);
    json_t *code = json_object_get(answer, "code");
    const char *tok = json_string_value(json_object_get(answer, "tenant_access_token"));
    json_int_t expire = json_integer_value(json_object_get(answer, "expire"));
    if (ret < 0)
        ;
    else if (!answer)
        ret = pdk_error_set(err, 0,
                            "credential %s: the token endpoint answered HTTP %ld with something "
                            "else than JSON",
                            cred->name, status);
    else if (!json_is_integer(code) || json_integer_value(code) != 0)
        ret = pdk_error_set(err, 0, "credential %s: the token endpoint refused: code %lld: %s",
                            cred->name,
                            json_is_integer(code) ? (long long)json_integer_value(code) : -1LL,
                            str_or(answer, "msg", "(no message)"));
    else if (!tok || !*tok || expire <= 0)
        ret = pdk_error_set(err, 0,
                            "credential %s: the token endpoint's answer has no token or expiry",
                            cred->name);
    if (ret == 0) {
        m->token = xstrdup(tok);
        set_lifetime(m, expire);
    }
    json_decref(answer);
    return ret;
}

/* name=value&... with each value percent-encoded; a NULL value is left out. */
static void form_add(pdk_buf *b, const char *name, const char *value)
{
    if (!value)
        return;
    char *esc = curl_easy_escape(NULL, value, 0);
    pdk_buf_printf(b, "%s%s=%s", b->len ? "&" : "", name, esc ? esc : "");
    if (esc) {
        sodium_memzero(esc, strlen(esc));
        curl_free(esc);
    }
}

static int oauth2_refresh(pdk_gateway *g, pdk_gateway_credential *gc, minted *m, pdk_error *err)
{
    const pdk_credential *cred = gc->policy;
    pdk_vault *vault = NULL;
    if (pdk_vault_open(g->state_dir, false, &vault, err) < 0)
        return pdk_error_prefix(err, "credential %s", cred->name);
    /* read under the credential's lock: the refresh token now in the vault, which another
     * session may have just replaced */
    const char *v = pdk_vault_get(vault, cred->refresh_token_secret, true, err);
    char *refresh = v ? xstrdup(v) : NULL;
    char *client_id = NULL, *client_secret = NULL;
    bool ok = refresh != NULL;
    if (ok && cred->client_id_secret) {
        v = pdk_vault_get(vault, cred->client_id_secret, true, err);
        ok = (client_id = v ? xstrdup(v) : NULL) != NULL;
    }
    if (ok && cred->client_secret_secret) {
        v = pdk_vault_get(vault, cred->client_secret_secret, true, err);
        ok = (client_secret = v ? xstrdup(v) : NULL) != NULL;
    }
    pdk_vault_close(vault);
    pdk_buf body = {0};
    if (ok) {
        form_add(&body, "grant_type", "refresh_token");
        form_add(&body, "refresh_token", refresh);
        form_add(&body, "client_id", client_id);
        form_add(&body, "client_secret", client_secret);
    }
    wipe_free(client_id);
    wipe_free(client_secret);
    if (!ok) {
        wipe_free(refresh);
        return pdk_error_prefix(err, "credential %s", cred->name);
    }
    json_t *answer = NULL;
    long status = 0;
    int ret = post(g, cred->name, cred->token_url, "application/x-www-form-urlencoded", body.data,
                   &answer, &status, err);
    sodium_memzero(body.data, body.len);
    pdk_buf_free(&body);
    /* An error is RFC 6749's {"error", "error_description"}, or a provider's own {code,
     * msg} (Feishu answers both), or a status that is not 2xx. */
    json_t *code = json_object_get(answer, "code");
    const char *error = json_string_value(json_object_get(answer, "error"));
    const char *tok = json_string_value(json_object_get(answer, "access_token"));
    json_t *expires_in = json_object_get(answer, "expires_in");
    const char *next = json_string_value(json_object_get(answer, "refresh_token"));
    if (ret < 0)
        ;
    else if (!answer)
        ret = pdk_error_set(err, 0,
                            "credential %s: the token endpoint answered HTTP %ld with something "
                            "else than JSON",
                            cred->name, status);
    else if (error || (json_is_integer(code) && json_integer_value(code) != 0) || status < 200 ||
             status > 299) {
        _cleanup_free_ char *what =
            json_is_integer(code)
                ? xasprintf("%s%s%scode %lld", error ? ", " : "", error ? error : "", ", ",
                            (long long)json_integer_value(code))
                : xasprintf("%s%s", error ? ", " : "", error ? error : "");
        ret = pdk_error_set(err, 0,
                            "credential %s: the token endpoint refused the refresh token (HTTP "
                            "%ld%s): %s (store a new one: paddock secret set %s)",
                            cred->name, status, what,
                            str_or(answer, "error_description", str_or(answer, "msg", "no reason")),
                            cred->refresh_token_secret);
    } else if (!tok || !*tok ||
               (expires_in &&
                (!json_is_integer(expires_in) || json_integer_value(expires_in) <= 0)))
        ret = pdk_error_set(err, 0,
                            "credential %s: the token endpoint's answer has no access_token or a "
                            "bad expires_in",
                            cred->name);
    if (ret == 0) {
        m->token = xstrdup(tok);
        set_lifetime(m, expires_in ? json_integer_value(expires_in) : OAUTH_DEFAULT_LIFETIME_S);
        if (next && *next && strcmp(next, refresh) != 0)
            m->next_refresh_token = xstrdup(next);
    }
    wipe_free(refresh);
    json_decref(answer);
    return ret;
}

/* How long before its end a token is minted again. */
static int64_t margin(int64_t lifetime_ns)
{
    return lifetime_ns > 0 && lifetime_ns / 2 < REFRESH_MARGIN_NS ? lifetime_ns / 2
                                                                  : REFRESH_MARGIN_NS;
}

/* The vault's cached token when it has margin left (m filled, true). */
static bool cached(pdk_gateway *g, const char *cache_name, minted *m)
{
    pdk_vault *vault = NULL;
    pdk_error ignored = {0};
    if (pdk_vault_open(g->state_dir, false, &vault, &ignored) < 0)
        return false;
    const char *entry = pdk_vault_get(vault, cache_name, false, &ignored);
    const char *space = entry ? strchr(entry, ' ') : NULL;
    bool fresh = false;
    if (space) {
        char *end = NULL;
        int64_t e = strtoll(space + 1, &end, 10);
        int64_t l = end && *end == ' ' ? strtoll(end + 1, NULL, 10) : 0;
        if (e - pdk_now_realtime_ns() > margin(l)) {
            m->token = xstrndup(entry, (size_t)(space - entry));
            m->expires_ns = e;
            m->lifetime_ns = l;
            fresh = true;
        }
    }
    pdk_vault_close(vault);
    return fresh;
}

/* A new token from the provider, and the vault written: the rotated refresh token and the
 * cached token in one write. */
static int mint(pdk_gateway *g, pdk_gateway_credential *gc, const char *cache_name, minted *m,
                pdk_error *err)
{
    const pdk_credential *cred = gc->policy;
    int r = cred->provider == PDK_CREDENTIAL_OAUTH2_REFRESH ? oauth2_refresh(g, gc, m, err)
                                                            : feishu_mint(g, gc, m, err);
    if (r < 0)
        return -1;
    _cleanup_free_ char *entry =
        xasprintf("%s %lld %lld", m->token, (long long)m->expires_ns, (long long)m->lifetime_ns);
    pdk_vault_item items[2] = {{cache_name, "token", entry},
                               {cred->refresh_token_secret, "token", m->next_refresh_token}};
    size_t n = m->next_refresh_token ? 2 : 1;
    pdk_vault *vault = NULL;
    pdk_error werr = {0};
    r = pdk_vault_open(g->state_dir, true, &vault, &werr);
    if (r == 0)
        r = pdk_vault_set_many(vault, items, n, &werr);
    pdk_vault_close(vault);
    sodium_memzero(entry, strlen(entry));
    if (r < 0 && m->next_refresh_token) {
        /* the provider has spent the old refresh token: without the new one stored, the
         * chain ends here; say so, and use this token while it lasts */
        pdk_warn("credential %s: the new refresh token cannot be stored (%s); this run's token "
                 "works until it expires, then store a new refresh token with paddock secret "
                 "set %s",
                 cred->name, werr.message, cred->refresh_token_secret);
    } else if (r < 0) {
        pdk_warn("credential %s: the token cannot be cached: %s", cred->name, werr.message);
    }
    json_t *ev = json_pack("{s:s, s:s, s:I, s:b}", "credential", cred->name, "provider",
                           pdk_credential_provider_name(cred->provider), "expires_ns",
                           (json_int_t)m->expires_ns, "rotated", m->next_refresh_token != NULL);
    pdk__gw_audit(g,
                  cred->provider == PDK_CREDENTIAL_OAUTH2_REFRESH ? "credential.refreshed"
                                                                  : "credential.minted",
                  ev);
    return 0;
}

int pdk__gw_token_fresh(pdk_gateway *g, pdk_gateway_credential *gc, pdk_error *err)
{
    if (gc->value && gc->expires_ns - pdk_now_realtime_ns() > margin(gc->lifetime_ns))
        return 0;
    const pdk_credential *cred = gc->policy;
    _cleanup_free_ char *cache_name = xasprintf(
        "%s.%s", cred->name,
        cred->provider == PDK_CREDENTIAL_OAUTH2_REFRESH ? "access_token" : "tenant_token");
    minted m = {0};
    /* minted by this or another session and cached? If not, mint under the lock, after
     * looking again: the session that held the lock may have just cached one. */
    if (!cached(g, cache_name, &m)) {
        int lock = pdk_vault_lock_secret(g->state_dir, cache_name, err);
        if (lock < 0)
            return pdk_error_prefix(err, "credential %s", cred->name);
        int r = cached(g, cache_name, &m) ? 0 : mint(g, gc, cache_name, &m, err);
        close(lock);
        if (r < 0) {
            minted_clear(&m);
            return -1;
        }
    }
    pdk_audit_redact(m.token);
    wipe_free((char *)gc->value);
    gc->value = m.token;
    gc->expires_ns = m.expires_ns;
    gc->lifetime_ns = m.lifetime_ns;
    m.token = NULL;
    minted_clear(&m);
    return 0;
}
