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
 *
 * At the start of a run the token is got before the gateway serves (a failure stops the
 * run). During a run a mint is made in a thread of its own: the requests that need the
 * token wait in the credential's queue (one mint serves them all) while the loop serves
 * every other connection, and go on when the thread is done (an eventfd on the loop).
 */
#include "gateway_internal.h"

#include "redact.h"
#include "token_answer.h"
#include "vault.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

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
    (void)curl;
    pdk_gateway *g = arg;
    X509_STORE *store = SSL_CTX_get_cert_store(ssl_ctx);
    for (char **ca = g->rules->upstream_ca; ca && *ca; ca++)
        if (X509_STORE_load_file(store, *ca) != 1)
            return CURLE_SSL_CACERT_BADFILE;
    return CURLE_OK;
}

/* A minted token: the value, its expiry and lifetime, and (oauth2_refresh) the refresh
 * token to keep for the next time, when the endpoint gave a new one. */
typedef struct minted {
    char *token;
    int64_t expires_ns, lifetime_ns;
    char *next_refresh_token;
} minted;

/* A secret of credential cred read or received here, registered for redaction (redact.h:
 * nothing sends it into the sandbox, nor into the audit log); what says what it is. */
static void register_secret(const pdk_credential *cred, const char *value, const char *what)
{
    _cleanup_free_ char *label =
        what ? xasprintf("%s (%s)", cred->name, what) : xstrdup(cred->name);
    pdk_redact_add_named(value, label);
}

static void minted_clear(minted *m)
{
    pdk_free_secret(m->token);
    pdk_free_secret(m->next_refresh_token);
    *m = (minted){0};
}

/* POST body to url: the answer's body (in reply, which the caller wipes) and its HTTP
 * status, or -1 with err when the endpoint cannot be reached. */
static int post(pdk_gateway *g, const char *name, const char *url, const char *content_type,
                const char *body, pdk_buf *reply, long *status, pdk_error *err)
{
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
    char curl_error[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, strcmp(scheme, "http") == 0 ? "http" : "https");
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, reply);
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
    if (r != CURLE_OK)
        return pdk_error_set(err, 0, "credential %s: the token endpoint %s cannot be reached: %s",
                             name, url, curl_error[0] ? curl_error : curl_easy_strerror(r));
    return 0;
}

/* POST, and the answer parsed (token_answer.c) into m. */
static int ask_endpoint(pdk_gateway *g, const pdk_credential *cred, pdk_token_kind kind,
                        const char *url, const char *content_type, const char *body, minted *m,
                        pdk_error *err)
{
    pdk_buf reply = {0};
    long status = 0;
    int r = post(g, cred->name, url, content_type, body, &reply, &status, err);
    pdk_token_answer a = {0};
    if (r == 0)
        r = pdk_token_answer_parse(kind, status, reply.data, reply.len, cred->name,
                                   cred->refresh_token_secret, &a, err);
    pdk_buf_free_secret(&reply);
    if (r < 0)
        return -1;
    m->token = a.token;
    m->next_refresh_token = a.refresh_token;
    m->lifetime_ns = a.lifetime_s * 1000000000LL;
    m->expires_ns = pdk_now_realtime_ns() + m->lifetime_ns;
    return 0;
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
    if (v)
        register_secret(cred, v, "app secret");
    json_t *req = v ? json_pack("{s:s, s:s}", "app_id", app_id, "app_secret", v) : NULL;
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req); /* (jansson does not wipe its copies: they live a moment) */
    free(app_id);
    pdk_vault_close(vault);
    if (!body)
        return pdk_error_prefix(err, "credential %s", cred->name);
    _cleanup_free_ char *url =
        xasprintf("https://%s/open-apis/auth/v3/tenant_access_token/internal", host);
    int ret = ask_endpoint(g, cred, PDK_TOKEN_FEISHU_TENANT, url, "application/json; charset=utf-8",
                           body, m, err);
    pdk_free_secret(body);
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
    if (refresh) /* (before the endpoint's answer, which may quote it) */
        register_secret(cred, refresh, "refresh token");
    char *client_id = NULL, *client_secret = NULL;
    bool ok = refresh != NULL;
    if (ok && cred->client_id_secret) {
        v = pdk_vault_get(vault, cred->client_id_secret, true, err);
        ok = (client_id = v ? xstrdup(v) : NULL) != NULL;
    }
    if (ok && cred->client_secret_secret) {
        v = pdk_vault_get(vault, cred->client_secret_secret, true, err);
        ok = (client_secret = v ? xstrdup(v) : NULL) != NULL;
        if (ok)
            register_secret(cred, client_secret, "client secret");
    }
    pdk_vault_close(vault);
    pdk_buf body = {0};
    if (ok) {
        form_add(&body, "grant_type", "refresh_token");
        form_add(&body, "refresh_token", refresh);
        form_add(&body, "client_id", client_id);
        form_add(&body, "client_secret", client_secret);
    }
    pdk_free_secret(client_id);
    pdk_free_secret(client_secret);
    if (!ok) {
        pdk_free_secret(refresh);
        return pdk_error_prefix(err, "credential %s", cred->name);
    }
    int ret = ask_endpoint(g, cred, PDK_TOKEN_OAUTH2, cred->token_url,
                           "application/x-www-form-urlencoded", body.data, m, err);
    pdk_buf_free_secret(&body);
    if (ret == 0 && m->next_refresh_token && strcmp(m->next_refresh_token, refresh) == 0) {
        pdk_free_secret(m->next_refresh_token); /* the same one again: not rotated */
        m->next_refresh_token = NULL;
    }
    pdk_free_secret(refresh);
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
    char *token = NULL;
    int64_t e = 0, l = 0;
    bool fresh = false;
    if (entry && pdk_token_cache_parse(entry, &token, &e, &l)) {
        if (e - pdk_now_realtime_ns() > margin(l)) {
            m->token = token;
            m->expires_ns = e;
            m->lifetime_ns = l;
            fresh = true;
        } else {
            pdk_free_secret(token);
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
    register_secret(cred, m->token, NULL);
    if (m->next_refresh_token)
        register_secret(cred, m->next_refresh_token, "refresh token");
    _cleanup_free_ char *entry = pdk_token_cache_format(m->token, m->expires_ns, m->lifetime_ns);
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

/* The token: the vault's cached one, else minted under the lock (after looking again: the
 * session that held the lock may have just cached one). Touches no gateway state but the
 * audit spool (thread-safe): runs in the refresh thread too. */
static int obtain(pdk_gateway *g, pdk_gateway_credential *gc, minted *m, pdk_error *err)
{
    const pdk_credential *cred = gc->policy;
    _cleanup_free_ char *cache_name = xasprintf(
        "%s.%s", cred->name,
        cred->provider == PDK_CREDENTIAL_OAUTH2_REFRESH ? "access_token" : "tenant_token");
    if (cached(g, cache_name, m))
        return 0;
    int lock = pdk_vault_lock_secret(g->state_dir, cache_name, err);
    if (lock < 0)
        return pdk_error_prefix(err, "credential %s", cred->name);
    int r = cached(g, cache_name, m) ? 0 : mint(g, gc, cache_name, m, err);
    close(lock);
    if (r < 0)
        minted_clear(m);
    return r;
}

/* In the loop's thread: the new token replaces the old one (which stays registered: it
 * may be valid until its own end). */
static void install(pdk_gateway_credential *gc, minted *m)
{
    register_secret(gc->policy, m->token, NULL);
    pdk_free_secret((char *)gc->value);
    gc->value = m->token;
    gc->expires_ns = m->expires_ns;
    gc->lifetime_ns = m->lifetime_ns;
    m->token = NULL;
    minted_clear(m);
}

/* The token in memory has its margin left. */
static bool fresh(const pdk_gateway_credential *gc)
{
    return gc->value && gc->expires_ns - pdk_now_realtime_ns() > margin(gc->lifetime_ns);
}

bool pdk__gw_token_usable(const pdk_gateway *g, size_t i)
{
    const pdk_gateway_credential *gc = &g->credentials[i];
    return !gc->expires_ns || fresh(gc);
}

int pdk__gw_token_fresh(pdk_gateway *g, pdk_gateway_credential *gc, pdk_error *err)
{
    if (fresh(gc))
        return 0;
    minted m = {0};
    if (obtain(g, gc, &m, err) < 0)
        return -1;
    install(gc, &m);
    return 0;
}

void pdk__gw_providers_init(void)
{
    /* libcurl's global state, set up here in the main thread: a first curl_easy_init() in
     * a refresh thread would do it there, which libcurl does not allow while other threads
     * run */
    static bool done;
    if (!done && curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK)
        done = true;
}

/* ---- minting off the loop ---- */

struct gw_refresh {
    pdk_gateway *g;
    size_t index;
    bool running;
    pthread_t thread;
    int efd; /* the thread says it is done here */
    struct event *done;
    minted m;      /* the thread's result: a token, or */
    pdk_error err; /* why not */
    int result;
    gw_conn *waiting; /* the connections parked until it is done, in order */
    /* After a failure, requests within FAILURE_HOLD_NS get the same answer at once: an
     * agent that retries in a loop does not make paddock hammer the provider. */
    char *last_failure;
    int64_t failed_at_ns;
};

#define FAILURE_HOLD_NS (10 * 1000000000LL)

static void *refresh_thread(void *arg)
{
    gw_refresh *r = arg;
    r->result = obtain(r->g, &r->g->credentials[r->index], &r->m, &r->err);
    uint64_t one = 1;
    (void)!write(r->efd, &one, sizeof(one));
    return NULL;
}

static void refresh_done(evutil_socket_t fd, short what, void *arg)
{
    gw_refresh *r = arg;
    uint64_t n;
    (void)!read(fd, &n, sizeof(n));
    pthread_join(r->thread, NULL);
    r->running = false;
    pdk_gateway_credential *gc = &r->g->credentials[r->index];
    _cleanup_free_ char *failure = r->result < 0 ? xstrdup(r->err.message) : NULL;
    free(r->last_failure);
    r->last_failure = failure ? xstrdup(failure) : NULL;
    r->failed_at_ns = failure ? pdk_now_monotonic_ns() : 0;
    if (r->result == 0)
        install(gc, &r->m);
    pdk_error_clear(&r->err);
    /* every connection that waited goes on, in the order it came (each may end itself) */
    while (r->waiting) {
        gw_conn *c = r->waiting;
        r->waiting = c->token_next;
        c->token_next = NULL;
        c->state = ST_HEAD;
        c->token_resume(c, failure);
    }
}

static bool refresh_start(gw_refresh *r, pdk_error *err)
{
    if (!r->done) {
        r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (r->efd < 0) {
            pdk_error_set(err, errno, "cannot make an eventfd to mint the token");
            return false;
        }
        r->done = event_new(r->g->base, r->efd, EV_READ | EV_PERSIST, refresh_done, r);
        event_add(r->done, NULL);
    }
    r->result = 0;
    r->m = (minted){0};
    int e = pthread_create(&r->thread, NULL, refresh_thread, r);
    if (e != 0) {
        pdk_error_set(err, e, "cannot start a thread to mint the token");
        return false;
    }
    r->running = true;
    return true;
}

void pdk__gw_token_wait(gw_conn *c, size_t i, gw_token_resume resume)
{
    pdk_gateway *g = c->g;
    if (!g->refresh) {
        g->refresh = xcalloc(g->credential_count, sizeof(*g->refresh));
        for (size_t k = 0; k < g->credential_count; k++)
            g->refresh[k] = (gw_refresh){.g = g, .index = k, .efd = -1};
    }
    gw_refresh *r = &g->refresh[i];
    c->token_credential = i;
    if (!r->running && r->last_failure &&
        (int64_t)pdk_now_monotonic_ns() - r->failed_at_ns < FAILURE_HOLD_NS) {
        _cleanup_free_ char *why = xasprintf("%s (the last try, under 10 s ago)", r->last_failure);
        resume(c, why);
        return;
    }
    pdk_error err = {0};
    if (!r->running && !refresh_start(r, &err)) {
        resume(c, err.message);
        return;
    }
    c->state = ST_WAIT_TOKEN;
    c->token_resume = resume;
    bufferevent_disable(c->client, EV_READ);
    gw_conn **tail = &r->waiting;
    while (*tail)
        tail = &(*tail)->token_next;
    *tail = c;
}

void pdk__gw_token_unwait(gw_conn *c)
{
    gw_refresh *r = c->g->refresh ? &c->g->refresh[c->token_credential] : NULL;
    for (gw_conn **p = r ? &r->waiting : NULL; p && *p; p = &(*p)->token_next)
        if (*p == c) {
            *p = c->token_next;
            break;
        }
    c->token_next = NULL;
}

void pdk__gw_refresh_free(pdk_gateway *g)
{
    for (size_t i = 0; g->refresh && i < g->credential_count; i++) {
        gw_refresh *r = &g->refresh[i];
        if (r->running) /* bounded: the provider's call is (10 s) */
            pthread_join(r->thread, NULL);
        minted_clear(&r->m);
        pdk_error_clear(&r->err);
        free(r->last_failure);
        if (r->done)
            event_free(r->done);
        if (r->efd >= 0)
            close(r->efd);
    }
    free(g->refresh);
    g->refresh = NULL;
}
