/* gateway_providers.c: credentials that are minted, not stored (gateway_internal.h).
 *
 * feishu_tenant_token: POST https://HOST/open-apis/auth/v3/tenant_access_token/internal
 * with the app id and secret from the vault; the token and its expiry are cached in the
 * vault (encrypted like every secret, shared by every session, kept across restarts) as
 * the secret NAME.tenant_token ("TOKEN EXPIRES_NS LIFETIME_NS"), and minted again when
 * less than 5 minutes remain (half its lifetime, for a short-lived one). The call
 * goes where the policy's `resolve` says and trusts its `upstream_ca`, like the gateway's
 * own upstream connections. It is made with libcurl, bounded (10 s), and not retried: a
 * failure is the agent's 502 with the reason.
 */
#include "gateway_internal.h"

#include "vault.h"

#include <curl/curl.h>

#define REFRESH_MARGIN_NS (5 * 60 * 1000000000LL)
#define TOKEN_REPLY_MAX   (64 * 1024)

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
    pdk_gateway *g = arg;
    X509_STORE *store = SSL_CTX_get_cert_store(ssl_ctx);
    for (char **ca = g->rules->upstream_ca; ca && *ca; ca++)
        if (X509_STORE_load_file(store, *ca) != 1)
            return CURLE_SSL_CACERT_BADFILE;
    return CURLE_OK;
}

static int feishu_mint(pdk_gateway *g, pdk_gateway_credential *gc, char **token,
                       int64_t *expires_ns, int64_t *lifetime_ns, pdk_error *err)
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
    CURL *curl = curl_easy_init();
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    struct curl_slist *connect_to = NULL;
    const pdk_net_resolve *ov = pdk_net_rules_resolve(g->rules, host, 443);
    if (ov) {
        _cleanup_free_ char *to =
            xasprintf("%s:443:%s:%u", host, ov->to_host, (unsigned)ov->to_port);
        connect_to = curl_slist_append(NULL, to);
    }
    pdk_buf reply = {0};
    char curl_error[CURL_ERROR_SIZE] = "";
    long status = 0;
    CURLcode r = CURLE_FAILED_INIT;
    if (curl) {
        curl_easy_setopt(curl, CURLOPT_URL, url);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(curl, CURLOPT_TIMEOUT, 10L);
        curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 5L);
        curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https");
        curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
        curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_error);
        curl_easy_setopt(curl, CURLOPT_SSL_CTX_FUNCTION, add_roots);
        curl_easy_setopt(curl, CURLOPT_SSL_CTX_DATA, g);
        if (connect_to)
            curl_easy_setopt(curl, CURLOPT_CONNECT_TO, connect_to);
        r = curl_easy_perform(curl);
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(curl);
    }
    curl_slist_free_all(headers);
    curl_slist_free_all(connect_to);
    if (body) {
        sodium_memzero(body, strlen(body));
        free(body);
    }
    int ret = 0;
    json_error_t jerr;
    json_t *answer =
        r == CURLE_OK ? json_loadb(reply.data ? reply.data : "", reply.len, 0, &jerr) : NULL;
    json_t *code = json_object_get(answer, "code");
    const char *tok = json_string_value(json_object_get(answer, "tenant_access_token"));
    json_int_t expire = json_integer_value(json_object_get(answer, "expire"));
    if (r != CURLE_OK)
        ret = pdk_error_set(err, 0, "credential %s: the token endpoint %s cannot be reached: %s",
                            cred->name, url, curl_error[0] ? curl_error : curl_easy_strerror(r));
    else if (!json_is_object(answer))
        ret = pdk_error_set(err, 0,
                            "credential %s: the token endpoint answered HTTP %ld with something "
                            "else than JSON",
                            cred->name, status);
    else if (!json_is_integer(code) || json_integer_value(code) != 0)
        ret = pdk_error_set(err, 0, "credential %s: the token endpoint refused: code %lld: %s",
                            cred->name,
                            json_is_integer(code) ? (long long)json_integer_value(code) : -1LL,
                            json_string_value(json_object_get(answer, "msg"))
                                ? json_string_value(json_object_get(answer, "msg"))
                                : "(no message)");
    else if (!tok || !*tok || expire <= 0)
        ret = pdk_error_set(err, 0,
                            "credential %s: the token endpoint's answer has no token or expiry",
                            cred->name);
    if (ret == 0) {
        *token = xstrdup(tok);
        *lifetime_ns = (int64_t)expire * 1000000000LL;
        *expires_ns = pdk_now_realtime_ns() + *lifetime_ns;
    }
    json_decref(answer);
    if (reply.data)
        sodium_memzero(reply.data, reply.len);
    pdk_buf_free(&reply);
    return ret;
}

/* How long before its end a token is minted again. */
static int64_t margin(int64_t lifetime_ns)
{
    return lifetime_ns > 0 && lifetime_ns / 2 < REFRESH_MARGIN_NS ? lifetime_ns / 2
                                                                  : REFRESH_MARGIN_NS;
}

int pdk__gw_token_fresh(pdk_gateway *g, pdk_gateway_credential *gc, pdk_error *err)
{
    int64_t now = pdk_now_realtime_ns();
    if (gc->value && gc->expires_ns - now > margin(gc->lifetime_ns))
        return 0;
    _cleanup_free_ char *cache_name = xasprintf("%s.tenant_token", gc->policy->name);
    char *token = NULL;
    int64_t expires = 0, lifetime = 0;
    /* cached in the vault by this or another session? */
    pdk_vault *vault = NULL;
    pdk_error ignored = {0};
    if (pdk_vault_open(g->state_dir, false, &vault, &ignored) == 0) {
        const char *cached = pdk_vault_get(vault, cache_name, false, &ignored);
        const char *space = cached ? strchr(cached, ' ') : NULL;
        if (space) {
            char *end = NULL;
            int64_t e = strtoll(space + 1, &end, 10);
            int64_t l = end && *end == ' ' ? strtoll(end + 1, NULL, 10) : 0;
            if (e - now > margin(l)) {
                token = xstrndup(cached, (size_t)(space - cached));
                expires = e;
                lifetime = l;
            }
        }
        pdk_vault_close(vault);
    }
    if (!token) {
        if (feishu_mint(g, gc, &token, &expires, &lifetime, err) < 0)
            return -1;
        json_t *ev = json_pack("{s:s, s:I}", "credential", gc->policy->name, "expires_ns",
                               (json_int_t)expires);
        pdk__gw_audit(g, "credential.minted", ev);
        _cleanup_free_ char *entry =
            xasprintf("%s %lld %lld", token, (long long)expires, (long long)lifetime);
        if (pdk_vault_open(g->state_dir, true, &vault, &ignored) == 0) {
            if (pdk_vault_set(vault, cache_name, "token", entry, strlen(entry), &ignored) < 0)
                pdk_warn("credential %s: the token cannot be cached: %s", gc->policy->name,
                         ignored.message);
            pdk_vault_close(vault);
        }
        sodium_memzero(entry, strlen(entry));
    }
    pdk_audit_redact(token);
    if (gc->value) {
        sodium_memzero((char *)gc->value, strlen(gc->value));
        free((char *)gc->value);
    }
    gc->value = token;
    gc->expires_ns = expires;
    gc->lifetime_ns = lifetime;
    return 0;
}
