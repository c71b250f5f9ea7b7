/* gateway_credentials.c: credentials the agent never sees (gateway_internal.h).
 *
 * The sandbox holds a placeholder. Toward the hosts a credential is bound to, the gateway
 * puts the real value only where the credential says: it sets the `inject` header itself
 * ("Authorization: Bearer {token}", whatever the request had there), replaces the
 * placeholder in the fields `replace_in_headers` names and, with `replace_in_body`, in the
 * body. A placeholder anywhere else (another field, the URL) goes on as it is, worthless,
 * and the request's event says where (placeholder_left_in): a field the agent chose is
 * what an upstream may echo back (CORS Origin, X-Request-Id, an error page). The value
 * goes only over TLS, unless the credential allows plain HTTP; otherwise the request is
 * refused (403) and recorded. Requests to those hosts ask for identity bodies
 * (Accept-Encoding), so that their answers can be masked (gateway_mask.c).
 *
 * Toward any other host a request that carries a placeholder (in its target, a field name
 * or value, its body or trailer; whole, cut, or encoded: placeholder_scan.h) is refused and
 * recorded as an exfiltration attempt: a placeholder is worth nothing elsewhere, but sending
 * it there is what an agent talked into leaking a token would do.
 */
#include "gateway_internal.h"

#include "display.h"
#include "gateway_headers.h"
#include "redact.h"


int pdk__gw_credentials_copy(pdk_gateway *g, const pdk_gateway_config *cfg, pdk_error *err)
{
    g->credential_count = cfg->credential_count;
    g->credentials = xcalloc(cfg->credential_count + 1, sizeof(*g->credentials));
    g->placeholders = pdk_placeholder_set_new();
    if (cfg->credential_count)
        pdk__gw_providers_init();
    for (size_t i = 0; i < cfg->credential_count; i++) {
        pdk_gateway_credential *gc = &g->credentials[i];
        gc->policy = cfg->credentials[i].policy;
        gc->value = cfg->credentials[i].value ? xstrdup(cfg->credentials[i].value) : NULL;
        gc->placeholder = xstrdup(cfg->credentials[i].placeholder);
        gc->placeholder_app_secret = cfg->credentials[i].placeholder_app_secret
                                         ? xstrdup(cfg->credentials[i].placeholder_app_secret)
                                         : NULL;
        if (pdk_placeholder_set_add(g->placeholders, gc->placeholder, (int)i) < 0 ||
            (gc->placeholder_app_secret &&
             pdk_placeholder_set_add(g->placeholders, gc->placeholder_app_secret, (int)i) < 0))
            return pdk_error_set(err, EINVAL,
                                 "credential %s: a placeholder without its random part",
                                 gc->policy->name);
        if (gc->policy->provider != PDK_CREDENTIAL_STATIC && pdk__gw_token_fresh(g, gc, err) < 0)
            return -1; /* the run stops before anything starts: the provider says why */
    }
    return 0;
}

void pdk__gw_credentials_free(pdk_gateway *g)
{
    pdk__gw_refresh_free(g); /* (its threads read the credentials) */
    pdk_gateway_credentials_free(g->credentials, g->credential_count);
    g->credentials = NULL;
    g->credential_count = 0;
    pdk_placeholder_set_free(g->placeholders);
    g->placeholders = NULL;
}

static bool bound(const pdk_credential *cred, const char *host)
{
    for (char **h = cred->hosts; h && *h; h++)
        if (pdk_net_host_matches(*h, host))
            return true;
    return false;
}

bool pdk__gw_host_bound(const gw_conn *c)
{
    for (size_t i = 0; c->host && i < c->g->credential_count; i++)
        if (bound(c->g->credentials[i].policy, c->host))
            return true;
    return false;
}

static void refuse_exfiltration(gw_conn *c, const pdk_gateway_credential *gc, const char *where,
                                const pdk_placeholder_found *found)
{
    char how[96];
    pdk_placeholder_found_describe(found, how, sizeof(how));
    /* (refused before any rule: none decided it) */
    c->verdict = (pdk_net_verdict){PDK_DECISION_DENY, PDK_NET_DECIDED, -1, ""};
    json_t *ev = pdk__gw_request_event(c, "");
    json_object_set_new(ev, "credential", json_string(gc->policy->name));
    json_object_set_new(ev, "found_in", json_string(where));
    json_object_set_new(ev, "encoding", json_string(how));
    pdk__gw_audit(c->g, "credential.exfiltration", ev);
    _cleanup_free_ char *host = pdk_redacted(c->host ? c->host : "");
    _cleanup_free_ char *host_shown = pdk_display(host);
    pdk_notice(PDK_NOTICE_REQUEST_REFUSED,
               PDK_NOTICE_PRINT | (pdk__gw_refusal_quiet(c) ? PDK_NOTICE_QUIET : 0),
               "blocked: a request to %s carried the placeholder of credential %s (in its %s, "
               "%s), which is bound to other hosts",
               host_shown, gc->policy->name, where, how);
    c->refusal_noticed = true;
    c->verdict.decision = PDK_DECISION_DENY;
    _cleanup_free_ char *why =
        xasprintf("the request carries the placeholder of credential %s, which may only go "
                  "to its own hosts",
                  gc->policy->name);
    pdk__gw_refuse(c, 403, "Forbidden", why);
}

/* ---- placeholders toward other hosts ---- */

/* A scan's ids are credentials' indexes: those not bound to the request's host count. */
static bool not_bound_here(void *arg, int id)
{
    const gw_conn *c = arg;
    return !c->host || !bound(c->g->credentials[id].policy, c->host);
}

void pdk__gw_scan_start(gw_conn *c)
{
    pdk_http_head *h = c->req;
    c->scan_body = false;
    if (h->upgrade || h->framing == PDK_HTTP_FRAMING_NONE ||
        (h->framing == PDK_HTTP_FRAMING_CONTENT_LENGTH && h->content_length == 0))
        return;
    for (size_t i = 0; i < c->g->credential_count && !c->scan_body; i++)
        c->scan_body = !bound(c->g->credentials[i].policy, c->host);
    c->scan_content = pdk_body_content_start(h->framing == PDK_HTTP_FRAMING_CHUNKED);
    pdk_placeholder_scan_start(&c->scan, c->g->placeholders, not_bound_here, c);
}

bool pdk__gw_scan_body(gw_conn *c, const char *data, size_t len)
{
    pdk_placeholder_found found = {-1, "", 0};
    bool hit = false, in_trailer = false;
    const char *p = data, *end = data + len;
    while (p < end && !hit) {
        const char *piece = NULL;
        bool trailer = false;
        size_t n = pdk_body_content_step(&c->scan_content, &p, end, &piece, &trailer);
        if (trailer && !in_trailer) /* (the trailer section is not the content's next bytes) */
            hit = pdk_placeholder_scan_break(&c->scan, &found);
        in_trailer = trailer;
        if (n && !hit)
            hit = pdk_placeholder_scan_feed(&c->scan, piece, n, &found);
    }
    if (!hit)
        return true;
    const pdk_gateway_credential *gc = &c->g->credentials[found.id];
    const char *where = in_trailer ? "trailer" : "body";
    if (c->status == 0) {
        refuse_exfiltration(c, gc, where, &found);
    } else { /* the upstream answered already: nothing to say but the end */
        char how[96];
        pdk_placeholder_found_describe(&found, how, sizeof(how));
        json_t *ev = pdk__gw_request_event(c, "");
        json_object_set_new(ev, "credential", json_string(gc->policy->name));
        json_object_set_new(ev, "found_in", json_string(where));
        json_object_set_new(ev, "encoding", json_string(how));
        pdk__gw_audit(c->g, "credential.exfiltration", ev);
        pdk__gw_conn_free(c);
    }
    return false;
}

/* One string (a field name, the target): a placeholder of a credential not bound here. */
static bool scan_string(gw_conn *c, const char *s, pdk_placeholder_found *found)
{
    return s &&
           pdk_placeholder_scan_string(c->g->placeholders, not_bound_here, c, s, strlen(s), found);
}

bool pdk__gw_check_placeholders(gw_conn *c)
{
    pdk_placeholder_found found = {-1, "", 0};
    _cleanup_free_ char *where = NULL;
    if (c->g->credential_count == 0 ||
        !pdk_headers_find_placeholder(c->req, c->g->placeholders, not_bound_here, c, &found,
                                      &where))
        return true;
    refuse_exfiltration(c, &c->g->credentials[found.id], where, &found);
    return false;
}

bool pdk__gw_check_destination(gw_conn *c, const char *host)
{
    pdk_placeholder_found found = {-1, "", 0};
    if (c->g->credential_count == 0 || !scan_string(c, host, &found))
        return true;
    refuse_exfiltration(c, &c->g->credentials[found.id], "destination", &found);
    return false;
}

/* ---- credentials put on requests ---- */

static void provider_failed(gw_conn *c, const pdk_gateway_credential *gc, const char *why)
{
    /* never the placeholder upstream: the agent gets 502 and the reason */
    json_t *ev = pdk__gw_request_event(c, "");
    json_object_set_new(ev, "credential", json_string(gc->policy->name));
    json_object_set_new(ev, "provider_error", json_string(why));
    pdk__gw_audit(c->g, "credential.provider_failed", ev);
    pdk__gw_upstream_failed(c, why);
}

/* A request that waited for a token: judged again from where it stopped. */
static void resume_request(gw_conn *c, const char *failure)
{
    _cleanup_free_ char *how = c->resume_how;
    c->resume_how = NULL;
    if (failure)
        provider_failed(c, &c->g->credentials[c->token_credential], failure);
    else
        pdk__gw_proceed(c, how ? how : "");
}

/* Whether credential gc's value may go on this request: over TLS, or allowed plain. */
static bool transport_ok(const gw_conn *c, const pdk_gateway_credential *gc)
{
    return gc->policy->allow_plain_http || pdk__gw_upstream_tls(c);
}

/* The value would go over plain HTTP: refused (403) and recorded. */
static void refuse_plain_http(gw_conn *c, const pdk_gateway_credential *gc)
{
    json_t *ev = pdk__gw_request_event(c, "");
    json_object_set_new(ev, "credential", json_string(gc->policy->name));
    json_object_set_new(ev, "refused", json_string("plain HTTP"));
    pdk__gw_audit(c->g, "credential.refused", ev);
    c->verdict.decision = PDK_DECISION_DENY;
    _cleanup_free_ char *why =
        xasprintf("credential %s is sent only over TLS, and this request to %s is plain HTTP (use "
                  "https://, or set allow_plain_http: true on the credential)",
                  gc->policy->name, c->host);
    pdk__gw_refuse(c, 403, "Forbidden", why);
}

static void note(json_t **list, const char *name)
{
    if (!*list)
        *list = json_array();
    json_t *s = json_string(name);
    for (size_t i = 0; i < json_array_size(*list); i++)
        if (json_equal(json_array_get(*list, i), s)) {
            json_decref(s);
            return;
        }
    json_array_append_new(*list, s);
}

gw_apply pdk__gw_apply_credentials(gw_conn *c, const char *how)
{
    pdk_gateway *g = c->g;
    pdk_http_head *h = c->req;
    /* every token it needs fresh first: none is put on while another is minted */
    for (size_t i = 0; i < g->credential_count; i++)
        if (bound(g->credentials[i].policy, c->host) && !pdk__gw_token_usable(g, i)) {
            free(c->resume_how);
            c->resume_how = xstrdup(how);
            pdk__gw_token_wait(c, i, resume_request);
            return GW_PARKED;
        }
    /* the bound ones, as gateway_headers.c puts them on */
    pdk_headers_credential *bound_creds = xcalloc(g->credential_count + 1, sizeof(*bound_creds));
    size_t *index = xcalloc(g->credential_count + 1, sizeof(*index));
    bool *used = xcalloc(g->credential_count + 1, sizeof(*used));
    size_t n = 0;
    for (size_t i = 0; i < g->credential_count; i++) {
        const pdk_gateway_credential *gc = &g->credentials[i];
        if (!bound(gc->policy, c->host))
            continue;
        bound_creds[n] = (pdk_headers_credential){gc->policy, gc->placeholder, gc->value};
        index[n++] = i;
    }
    pdk_headers_put put = {.used = used};
    pdk_headers_outcome outcome = pdk_headers_put_credentials(
        h, bound_creds, n, pdk__gw_upstream_tls(c), PDK_GW_REWRITE_MAX, &put);
    gw_apply result = GW_APPLIED;
    if (outcome == PDK_HEADERS_PLAIN_HTTP) {
        refuse_plain_http(c, &g->credentials[index[put.refused]]);
        result = GW_REFUSED;
    } else if (outcome == PDK_HEADERS_BODY_TOO_LARGE) {
        c->verdict.decision = PDK_DECISION_DENY;
        pdk__gw_refuse(c, 413, "Payload Too Large",
                       "a body whose placeholders are replaced (replace_in_body) is over 1 MiB");
        result = GW_REFUSED;
    } else {
        for (size_t j = 0; j < n; j++)
            if (used[j]) /* recorded with the request (its net.request event) */
                note(&c->credentials_used, g->credentials[index[j]].policy->name);
        if (put.rewrite_body)
            c->rewrite_body = true;
        for (size_t k = 0; put.placeholders_left && put.placeholders_left[k]; k++)
            note(&c->placeholders_left, put.placeholders_left[k]);
    }
    pdk_headers_put_free(&put);
    free(bound_creds);
    free(index);
    free(used);
    return result;
}

bool pdk__gw_rewritten_request(gw_conn *c, pdk_buf *out)
{
    pdk_http_head *h = c->req;
    /* the content alone (a chunked body's framing and trailers left out) */
    pdk_buf plain = {0};
    if (h->framing != PDK_HTTP_FRAMING_CHUNKED) {
        plain = c->rewrite;
        c->rewrite = (pdk_buf){0};
    }
    pdk_body_content k = pdk_body_content_start(h->framing == PDK_HTTP_FRAMING_CHUNKED);
    for (const char *p = c->rewrite.data, *end = p + c->rewrite.len; p && p < end;) {
        const char *piece = NULL;
        bool trailer = false;
        size_t n = pdk_body_content_step(&k, &p, end, &piece, &trailer);
        if (n && !trailer)
            pdk_buf_append(&plain, piece, n);
    }
    pdk_buf_free_secret(&c->rewrite);
    for (size_t i = 0; i < c->g->credential_count; i++) {
        const pdk_gateway_credential *gc = &c->g->credentials[i];
        if (!gc->policy->replace_in_body || !bound(gc->policy, c->host) || !gc->value ||
            !plain.data || !memmem(plain.data, plain.len, gc->placeholder, strlen(gc->placeholder)))
            continue;
        if (!transport_ok(c, gc)) {
            pdk_buf_free_secret(&plain);
            refuse_plain_http(c, gc);
            return false;
        }
        /* (bodies are bytes: a NUL in one ends no string here) */
        pdk_buf next = {0};
        pdk_buf_replace_all(&next, plain.data, plain.len, gc->placeholder, gc->value);
        pdk_buf_free_secret(&plain);
        plain = next;
        json_t *ev = json_pack("{s:I, s:I, s:s, s:s, s:s}", "conn", (json_int_t)c->id, "seq",
                               (json_int_t)c->seq, "credential", gc->policy->name, "host", c->host,
                               "in", "body");
        pdk__gw_audit(c->g, "credential.used", ev);
    }
    pdk_http_head_remove(h, "Transfer-Encoding");
    _cleanup_free_ char *len = xasprintf("%zu", plain.len);
    pdk_error err = {0};
    (void)pdk_http_head_set(h, "Content-Length", len, &err);
    pdk_http_head_serialize(h, out);
    pdk_buf_append(out, plain.data ? plain.data : "", plain.len);
    pdk_buf_free_secret(&plain);
    return true;
}

/* ---- token brokering ---- */

#define BROKER_BODY_MAX (64 * 1024)

static bool token_path(const char *path)
{
    return path && (strcmp(path, "/open-apis/auth/v3/tenant_access_token/internal") == 0 ||
                    strcmp(path, "/open-apis/auth/v3/app_access_token/internal") == 0);
}

static pdk_gateway_credential *broker_for(gw_conn *c)
{
    if (!c->req || strcmp(c->req->method, "POST") != 0 || !token_path(c->path))
        return NULL;
    for (size_t i = 0; i < c->g->credential_count; i++) {
        pdk_gateway_credential *gc = &c->g->credentials[i];
        if (gc->policy->provider == PDK_CREDENTIAL_FEISHU_TENANT_TOKEN &&
            gc->placeholder_app_secret && bound(gc->policy, c->host))
            return gc;
    }
    return NULL;
}

static void broker_reply(gw_conn *c, pdk_gateway_credential *gc);

/* A token request that waited for the real token. */
static void broker_resume(gw_conn *c, const char *failure)
{
    if (failure) {
        pdk__gw_upstream_failed(c, failure);
        return;
    }
    c->state = ST_BROKER;
    broker_reply(c, &c->g->credentials[c->token_credential]);
}

/* The whole body is read: answer with the placeholder token, or refuse. */
static void broker_answer(gw_conn *c, pdk_gateway_credential *gc)
{
    json_error_t jerr;
    json_t *req =
        json_loadb(c->broker_body.data ? c->broker_body.data : "", c->broker_body.len, 0, &jerr);
    const char *secret = json_string_value(json_object_get(req, "app_secret"));
    bool ours = secret && strcmp(secret, gc->placeholder_app_secret) == 0;
    json_decref(req);
    pdk_buf_free_secret(&c->broker_body);
    c->verdict = (pdk_net_verdict){ours ? PDK_DECISION_ALLOW : PDK_DECISION_DENY, PDK_NET_DECIDED,
                                   -1, "paddock answers this token endpoint"};
    if (!ours) {
        _cleanup_free_ char *why =
            xasprintf("paddock answers this token endpoint for credential %s, and the app "
                      "secret given is not the sandbox's placeholder",
                      gc->policy->name);
        pdk__gw_refuse(c, 403, "Forbidden", why);
        return;
    }
    size_t index = (size_t)(gc - c->g->credentials);
    if (!pdk__gw_token_usable(c->g, index)) {
        pdk__gw_token_wait(c, index, broker_resume);
        return;
    }
    broker_reply(c, gc);
}

/* The answer: the placeholder token, with what remains of the real one's lifetime. */
static void broker_reply(gw_conn *c, pdk_gateway_credential *gc)
{
    int64_t left = (gc->expires_ns - pdk_now_realtime_ns()) / 1000000000LL;
    json_t *answer = json_pack("{s:i, s:s, s:s, s:s, s:I}", "code", 0, "msg", "ok",
                               "tenant_access_token", gc->placeholder, "app_access_token",
                               gc->placeholder, "expire", (json_int_t)(left > 0 ? left : 0));
    _cleanup_free_ char *json = json_dumps(answer, JSON_COMPACT);
    json_decref(answer);
    char *text = pdk__gw_outgoing_text(c->g, json ? json : "");
    json_t *ev = pdk__gw_request_event(c, "");
    json_object_set_new(ev, "credential", json_string(gc->policy->name));
    json_object_set_new(ev, "expire", json_integer(left));
    pdk__gw_audit(c->g, "credential.brokered", ev);
    bool keep = c->req->keep_alive;
    evbuffer_add_printf(bufferevent_get_output(c->client),
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\n"
                        "Content-Length: %zu\r\nX-Paddock-Decision: brokered\r\n%s\r\n%s",
                        strlen(text), keep ? "" : "Connection: close\r\n", text);
    free(text);
    if (keep)
        pdk__gw_next_request(c);
    else
        pdk__gw_close_after_flush(c);
}

static void broker_read(struct bufferevent *bev, void *arg)
{
    gw_conn *c = arg;
    pdk_gateway_credential *gc = broker_for(c);
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        size_t avail = evbuffer_get_contiguous_space(in);
        const char *data = avail ? (const char *)evbuffer_pullup(in, (ev_ssize_t)avail) : "";
        pdk_http_result r;
        pdk_http_event e = pdk_http_parse(c->requests, data, avail, &r);
        if (e == PDK_HTTP_BODY) {
            if (c->broker_body.len + r.body_len > BROKER_BODY_MAX) {
                c->verdict.decision = PDK_DECISION_DENY;
                pdk__gw_refuse(c, 413, "Payload Too Large", "a token request over 64 KiB");
                return;
            }
            pdk_buf_append(&c->broker_body, r.body, r.body_len);
        } else if (e == PDK_HTTP_ERROR) {
            pdk__gw_conn_free(c);
            return;
        }
        evbuffer_drain(in, r.consumed);
        if (e == PDK_HTTP_MESSAGE_COMPLETE) {
            broker_answer(c, gc);
            return;
        }
        if (e == PDK_HTTP_NEED_MORE)
            return;
    }
}

static void broker_event(struct bufferevent *bev, short what, void *arg)
{
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        pdk__gw_conn_free(arg);
}

bool pdk__gw_broker(gw_conn *c)
{
    if (!broker_for(c))
        return false;
    if (c->req->framing == PDK_HTTP_FRAMING_CHUNKED) {
        /* the chunk framing would be in the body: not what a token client sends */
        c->verdict = (pdk_net_verdict){PDK_DECISION_DENY, PDK_NET_DECIDED, -1, ""};
        pdk__gw_refuse(c, 400, "Bad Request", "a chunked token request");
        return true;
    }
    c->state = ST_BROKER;
    bufferevent_setcb(c->client, broker_read, NULL, broker_event, c);
    bufferevent_enable(c->client, EV_READ);
    broker_read(c->client, c);
    return true;
}
