/* gateway.c: see gateway.h.
 *
 * One gw_conn per accepted connection (explicit proxy or captured). Its life:
 *
 *   HEAD       reading a request head from the client (the parser, http_message.h)
 *   RESOLVING  the request (or CONNECT) is allowed: the upstream's name is being resolved
 *   CONNECTING the checked address is being connected to
 *   FORWARD    the request is on its way: its body streams up, then the response streams
 *              down; when both are complete and keep-alive holds, back to HEAD
 *   TUNNEL     bytes both ways, unread (CONNECT, an upgrade, a passthrough host)
 *   CLOSING    a last answer is being flushed to the client, then the connection ends
 *
 * Pipelined requests wait in the client's input buffer: the next head is read only once
 * the response before it has been sent (one request at a time on a connection).
 */
#include "gateway.h"

#include "gateway_internal.h"

/* ---- events ---- */

void pdk__gw_audit(pdk_gateway *g, const char *kind, json_t *o)
{
    if (!g->spool) {
        json_decref(o);
        return;
    }
    pdk_error err = {0};
    if (pdk_audit_spool_write(g->spool, g->session, kind, o, false, &err) < 0)
        pdk_warn("gateway: %s", err.message);
}

/* An event that must be on record before what it describes happens (fail closed). */
bool pdk__gw_audit_required(pdk_gateway *g, const char *kind, json_t *o, pdk_error *err)
{
    if (!g->spool) {
        json_decref(o);
        return true;
    }
    return pdk_audit_spool_write(g->spool, g->session, kind, o, false, err) == 0;
}

/* ---- connections ---- */

void pdk__gw_conn_free(gw_conn *c)
{
    pdk_gateway *g = c->g;
    pdk_debug("gateway: connection %llu ends (state %d)", (unsigned long long)c->id, (int)c->state);
    if (c->state == ST_WAIT_TOKEN)
        pdk__gw_token_unwait(c);
    free(c->resume_how);
    if (c->state == ST_ASKING) { /* the client went away while a human was asked */
        pdk_error ignored = {0};
        (void)pdk_approval_expire_because(
            g->store, c->approval_id,
            "its connection ended before an answer (the client went away, or the run ended): "
            "nothing was sent",
            &ignored);
        g->asking--;
    }
    if (c->resolving)
        evdns_getaddrinfo_cancel(c->resolving);
    pdk__gw_splice_free(c->splice[0]);
    pdk__gw_splice_free(c->splice[1]);
    if (c->client)
        bufferevent_free(c->client);
    if (c->upstream)
        bufferevent_free(c->upstream);
    pdk_http_parser_free(c->requests);
    pdk_http_parser_free(c->responses);
    pdk_http_head_free(c->req);
    pdk_buf_free(&c->broker_body);
    json_decref(c->credentials_used);
    json_decref(c->placeholders_left);
    pdk__gw_response_free(c);
    pdk_buf_free_secret(&c->rewrite);
    pdk_buf_free_secret(&c->first_line);
    free(c->captured_host);
    free(c->host);
    free(c->path);
    free(c->up_host);
    if (c->prev)
        c->prev->next = c->next;
    else
        g->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    g->open_conns--;
    free(c);
}

/* Every TCP socket of the gateway sends what it is given at once: a head, then its body,
 * then the next request are small writes in a row, and with Nagle's algorithm each would
 * wait for the ACK of the one before, which the peer delays (40 ms) while it waits for the
 * rest of a message. Writes queued in one callback still go out as one (bufferevents write
 * from the loop). */
static void send_at_once(evutil_socket_t fd)
{
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

gw_conn *pdk__gw_conn_new(pdk_gateway *g, conn_kind kind, evutil_socket_t fd)
{
    if (!pdk__gw_conn_admit(g, fd, kind))
        return NULL;
    send_at_once(fd); /* the sandbox's side: proxy, captured and DNS over TCP connections */
    gw_conn *c = xcalloc(1, sizeof(*c));
    c->g = g;
    c->id = ++g->next_conn_id;
    c->kind = kind;
    c->client = bufferevent_socket_new(g->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!c->client) {
        close(fd);
        free(c);
        return NULL;
    }
    bufferevent_set_max_single_read(c->client, MAX_SINGLE_READ);
    /* Idle: reading enabled and nothing comes (a head, a body), or a response queued and
     * nothing of it taken (libevent's timeouts run only while reading is enabled or
     * something waits to be written: a request waiting for its upstream or a human is not
     * idle). The client's events end the connection on BEV_EVENT_TIMEOUT. */
    bufferevent_set_timeouts(c->client, &g->idle, &g->idle);
    c->next = g->conns;
    if (g->conns)
        g->conns->prev = c;
    g->conns = c;
    g->open_conns++;
    g->stats.connections++;
    return c;
}

void pdk__gw_idle_closed(gw_conn *c)
{
    pdk_gateway *g = c->g;
    g->stats.idle_closed++;
    json_t *ev = json_pack("{s:I, s:s, s:s, s:i, s:I}", "conn", (json_int_t)c->id, "via",
                           c->kind == CONN_CAPTURE   ? "capture"
                           : c->kind == CONN_DNS_TCP ? "dns-tcp"
                                                     : "proxy",
                           "host", c->host ? c->host : "", "port", (int)c->port, "idle_timeout_s",
                           (json_int_t)g->idle.tv_sec);
    pdk__gw_audit_counted(g, GW_TALLY_IDLE, ev);
    pdk__gw_conn_free(c);
}

static void free_later(evutil_socket_t fd, short what, void *arg)
{
    pdk__gw_conn_free(arg);
}

/* An intercepted connection's last bytes sit in the TLS layer's socket buffer after the
 * filter's own output is empty: free once that has gone out too. */
static void underlying_drained(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    gw_conn *c = arg;
    if (evbuffer_get_length(buf) > 0 || c->free_scheduled)
        return;
    c->free_scheduled = true;
    static const struct timeval now = {0, 0};
    event_base_once(c->g->base, -1, EV_TIMEOUT, free_later, c, &now);
}

static void on_closing_written(struct bufferevent *bev, void *arg)
{
    gw_conn *c = arg;
    if (evbuffer_get_length(bufferevent_get_output(bev)) > 0 || c->free_scheduled)
        return;
    struct bufferevent *under = bufferevent_get_underlying(bev);
    if (under && evbuffer_get_length(bufferevent_get_output(under)) > 0) {
        evbuffer_add_cb(bufferevent_get_output(under), underlying_drained, c);
        return;
    }
    pdk__gw_conn_free(c);
}

static void on_closing_event(struct bufferevent *bev, short what, void *arg)
{
    gw_conn *c = arg;
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) || c->free_scheduled)
        return;
    pdk__gw_conn_free(c);
}

/* Flush what is queued for the client, then end the connection (10 s at most). */
void pdk__gw_close_after_flush(gw_conn *c)
{
    c->state = ST_CLOSING;
    if (c->resolving) {
        evdns_getaddrinfo_cancel(c->resolving);
        c->resolving = NULL;
    }
    if (c->upstream) {
        bufferevent_free(c->upstream);
        c->upstream = NULL;
    }
    bufferevent_disable(c->client, EV_READ);
    bufferevent_setcb(c->client, NULL, on_closing_written, on_closing_event, c);
    struct timeval limit = {10, 0};
    bufferevent_set_timeouts(c->client, NULL, &limit);
    bufferevent_enable(c->client, EV_WRITE);
    on_closing_written(c->client, c);
}

/* A whole response from the gateway itself, then the connection ends. */
static void reply(gw_conn *c, int status, const char *status_text, const char *decision,
                  json_t *body)
{
    _cleanup_free_ char *json = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(body);
    /* (what paddock says into the sandbox carries no secret: a provider's error may) */
    char *text = json ? pdk__gw_outgoing_text(c->g, json) : NULL;
    size_t len = text ? strlen(text) + 1 : 0;
    evbuffer_add_printf(bufferevent_get_output(c->client),
                        "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                        "Content-Length: %zu\r\nX-Paddock-Decision: %s\r\n"
                        "Connection: close\r\n\r\n%s\n",
                        status, status_text, len, decision, text ? text : "");
    free(text);
    c->status = status;
    pdk__gw_close_after_flush(c);
}

/* ---- the process behind a connection ---- */

json_t *pdk__gw_request_event(gw_conn *c, const char *decided_by)
{
    json_t *o = json_pack("{s:I, s:I, s:s, s:s, s:i}", "conn", (json_int_t)c->id, "seq",
                          (json_int_t)c->seq, "via", c->kind == CONN_CAPTURE ? "capture" : "proxy",
                          "host", c->host ? c->host : "", "port", (int)c->port);
    pdk__gw_conn_owner(c);
    if (c->pid > 0) {
        json_object_set_new(o, "pid", json_integer(c->pid));
        json_object_set_new(o, "comm", json_string(c->comm));
    }
    if (c->req && c->req->method)
        json_object_set_new(o, "method", json_string(c->req->method));
    if (c->req && c->req->scheme)
        json_object_set_new(o, "scheme", json_string(c->req->scheme));
    if (c->path)
        json_object_set_new(o, "path", json_string(c->path));
    if (c->credentials_used)
        json_object_set_new(o, "credentials", json_copy(c->credentials_used));
    if (c->placeholders_left)
        json_object_set_new(o, "placeholder_left_in", json_copy(c->placeholders_left));
    json_object_set_new(o, "decision", json_string(pdk_decision_name(c->verdict.decision)));
    json_object_set_new(o, "rule",
                        c->verdict.rule >= 0 ? json_integer(c->verdict.rule) : json_null());
    json_object_set_new(o, "decided_by", json_string(decided_by));
    json_object_set_new(o, "reason", json_string(c->verdict.reason));
    return o;
}

/* An intercepted connection's event: nothing is decided for it as a whole, each request
 * inside is judged on its own (its net.request). What its host's rules would say of the
 * connection (the strictest for per-request rules) stays as host_decision. */
static void mark_intercepted(const gw_conn *c, json_t *ev)
{
    json_object_set_new(ev, "intercepted", json_true());
    json_object_set_new(ev, "decision", json_string("intercept"));
    json_object_set_new(ev, "host_decision", json_string(pdk_decision_name(c->verdict.decision)));
}

json_t *pdk__gw_done_event(gw_conn *c)
{
    json_t *ev = pdk__gw_request_event(c, "");
    json_object_set_new(ev, "bytes_up", json_integer((json_int_t)c->up_bytes));
    json_object_set_new(ev, "bytes_down", json_integer((json_int_t)c->down_bytes));
    json_object_set_new(ev, "duration_ms",
                        json_real((double)(pdk_now_monotonic_ns() - c->t0_ns) / 1e6));
    return ev;
}

bool pdk__gw_refusal_quiet(gw_conn *c)
{
    const pdk_net_rules *rules = &c->g->policy->network;
    if (!c->host)
        return false;
    /* Judged again: a refusal may come before the rules (a placeholder toward the host),
     * when the connection's verdict is still the last request's. */
    bool connect = !c->req || !c->req->method || c->req->method_id == HTTP_CONNECT;
    pdk_net_request nr = {.scheme = c->req ? c->req->scheme : NULL,
                          .host = c->host,
                          .port = c->port,
                          .method = connect ? NULL : c->req->method,
                          .path = connect ? NULL : c->path};
    pdk_net_verdict v;
    pdk_net_rules_judge(c->g->rules, &nr, &v);
    return v.rule >= 0 && (size_t)v.rule < rules->count &&
           rules->rules[v.rule].decision == PDK_DECISION_DENY && rules->rules[v.rule].quiet;
}

char *pdk__gw_request_line(gw_conn *c)
{
    const char *method = c->req && c->req->method ? c->req->method : "";
    if (!*method || strcmp(method, "CONNECT") == 0)
        return xasprintf("%s%s:%u", *method ? "CONNECT " : "a connection to ",
                         c->host ? c->host : "?", (unsigned)c->port);
    const char *scheme = c->req->scheme ? c->req->scheme : c->tls_client ? "https" : "http";
    return xasprintf("%s %s://%s:%u%s", method, scheme, c->host ? c->host : "?", (unsigned)c->port,
                     c->path ? c->path : "");
}

/* Refuse what the client asked for: 403 for an HTTP request, closing for a connection that
 * is not HTTP; recorded. */
void pdk__gw_refuse(gw_conn *c, int status, const char *status_text, const char *reason)
{
    pdk_gateway *g = c->g;
    g->stats.denied++;
    _cleanup_free_ char *how = pdk_policy_describe_net_rule(g->policy, c->verdict.rule);
    if (!c->refusal_noticed) {
        _cleanup_free_ char *what = pdk__gw_request_line(c);
        pdk_notice(PDK_NOTICE_REQUEST_REFUSED, pdk__gw_refusal_quiet(c) ? PDK_NOTICE_QUIET : 0,
                   "refused: %s (%d): %s (%s)", what, status, reason ? reason : c->verdict.reason,
                   how);
    }
    c->refusal_noticed = false;
    json_t *ev = pdk__gw_request_event(c, how);
    json_object_set_new(ev, "status", json_integer(status));
    if (reason)
        json_object_set_new(ev, "refused", json_string(reason));
    pdk__gw_audit_counted(g,
                          c->req && c->req->method && strcmp(c->req->method, "CONNECT") != 0
                              ? GW_TALLY_REQUEST_REFUSED
                              : GW_TALLY_CONNECT_REFUSED,
                          ev);
    if (!c->req) { /* not HTTP (a captured TLS connection): nothing to answer with */
        pdk__gw_conn_free(c);
        return;
    }
    json_t *body = json_pack("{s:s, s:s, s:s}", "error", "blocked", "reason",
                             reason ? reason : c->verdict.reason, "decided_by", how);
    json_object_set_new(body, "rule",
                        c->verdict.rule >= 0 ? json_integer(c->verdict.rule + 1) : json_null());
    json_object_set_new(body, "host", json_string(c->host ? c->host : ""));
    reply(c, status, status_text, "deny", body);
}

void pdk__gw_upstream_failed(gw_conn *c, const char *what)
{
    c->g->stats.denied++;
    json_t *ev = pdk__gw_request_event(c, "");
    json_object_set_new(ev, "status", json_integer(502));
    json_object_set_new(ev, "upstream_error", json_string(what));
    pdk__gw_audit(c->g, "net.upstream_error", ev);
    if (c->state == ST_TUNNEL || (c->req && c->response_done == false && c->status != 0)) {
        pdk__gw_conn_free(c); /* already streaming: nothing sane to add */
        return;
    }
    if (!c->req) {
        pdk__gw_conn_free(c);
        return;
    }
    json_t *body = json_pack("{s:s, s:s, s:s}", "error", "upstream", "reason", what, "host",
                             c->host ? c->host : "");
    reply(c, 502, "Bad Gateway", "allow", body);
}

/* ---- tunnels ---- */

/* ---- upstream connections ---- */

static void on_upstream_ready(gw_conn *c);
static void forward_response(gw_conn *c);
static char *tls_failure(gw_conn *c, struct bufferevent *bev);
static void intercept(gw_conn *c, const char *host, uint16_t port);
static void client_read(struct bufferevent *bev, void *arg);

/* Whether the upstream's end waits for the client to take what came before it (the queue
 * toward the client is full: client_written goes on). */
static bool upstream_end_waits(gw_conn *c)
{
    return evbuffer_get_length(bufferevent_get_input(c->upstream)) > 0 &&
           evbuffer_get_length(bufferevent_get_output(c->client)) >= QUEUE_HIGH_WATER;
}

/* The upstream's end, once everything it sent before it went on toward the client. */
static void upstream_ended(gw_conn *c)
{
    pdk_http_result r;
    pdk_http_event e = pdk_http_parse_eof(c->responses, &r);
    if (e == PDK_HTTP_MESSAGE_COMPLETE) {
        /* an until-close body ended: so does the client connection */
        c->response_done = true;
        pdk__gw_response_end(c, bufferevent_get_output(c->client));
        json_t *ev = pdk__gw_done_event(c);
        json_object_set_new(ev, "status", json_integer(c->status));
        pdk__gw_audit(c->g, "net.response", ev);
        pdk__gw_close_after_flush(c);
        return;
    }
    if (c->status == 0) {
        pdk__gw_upstream_failed(c, "the upstream closed the connection before answering");
        return;
    }
    pdk__gw_close_after_flush(c); /* cut short: the client sees the end */
}

static void upstream_event(struct bufferevent *bev, short what, void *arg)
{
    gw_conn *c = arg;
    pdk_debug("gateway: connection %llu: upstream event 0x%x (state %d)", (unsigned long long)c->id,
              (unsigned)what, (int)c->state);
    if (what & BEV_EVENT_CONNECTED) {
        on_upstream_ready(c);
        return;
    }
    if (c->state == ST_CONNECTING) {
        int e = EVUTIL_SOCKET_ERROR();
        _cleanup_free_ char *what_s =
            pdk__gw_upstream_tls(c)
                ? tls_failure(c, bev)
                : xasprintf("cannot connect to %s:%u: %s", c->host, (unsigned)c->port,
                            evutil_socket_error_to_string(e));
        pdk__gw_upstream_failed(c, what_s);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        c->upstream_eof = true;
        if (c->state == ST_FORWARD && c->responses) {
            forward_response(c); /* what is buffered */
            if (c->state != ST_FORWARD)
                return;
            if (!upstream_end_waits(c))
                upstream_ended(c);
            return;
        }
        /* idle keep-alive connection gone: forget it */
        bufferevent_free(c->upstream);
        c->upstream = NULL;
        free(c->up_host);
        c->up_host = NULL;
    }
}

/* Whether the address may be connected to for this request. */
static bool address_allowed(gw_conn *c, const struct sockaddr *sa, socklen_t len, bool trusted,
                            char *why, size_t why_size)
{
    pdk_ip ip;
    uint16_t port;
    if (!pdk_ip_from_sockaddr(sa, len, &ip, &port)) {
        snprintf(why, why_size, "an address of an unknown family");
        return false;
    }
    if (trusted)
        return true; /* a `resolve` target: the policy's own choice */
    pdk_ip_class cls = pdk_ip_classify(&ip);
    char desc[PDK_IP_DESCRIBE_MAX];
    if (cls == PDK_IP_LOOPBACK || cls == PDK_IP_UNSPECIFIED) {
        /* The host's loopback: the sandbox's own 127.0.0.1 is another one (NO_PROXY), and a
         * rule reaches the host's only when it says so. */
        bool pinned_request = c->req && c->req->method_id != HTTP_CONNECT;
        pdk_net_request nr = {.scheme = c->req ? c->req->scheme : "https",
                              .host = c->host,
                              .port = c->port,
                              .method = pinned_request ? c->req->method : NULL,
                              .path = pinned_request ? c->path : NULL};
        if (pdk_net_rules_host_loopback(c->g->rules, &nr))
            return true;
        pdk_ip_describe(&ip, desc, sizeof(desc));
        char text[PDK_IP_TEXT_MAX];
        pdk_ip_format(&ip, text, sizeof(text));
        bool literal = strcmp(text, c->host) == 0; /* else a name that resolved to it */
        int w = snprintf(why, why_size,
                         "%.100s%s%s of the host, which only a rule with host_loopback: true "
                         "reaches (the sandbox's own loopback is reached directly, without the "
                         "proxy)",
                         literal ? "" : c->host, literal ? "" : ": ", desc);
        (void)w; /* cut at why_size: one line still */
        return false;
    }
    if (pdk_ip_class_allowed_by_default(cls) || pdk_net_rules_names_exactly(c->g->rules, c->host))
        return true;
    pdk_ip_describe(&ip, desc, sizeof(desc));
    int w = snprintf(why, why_size, "%.200s is %s: only a rule naming this exact host may reach it",
                     c->host, desc);
    (void)w;
    return false;
}

/* An SSL toward the upstream: SNI and the certificate checked for the request's host (not
 * a `resolve` target's). */
static SSL *upstream_ssl(gw_conn *c)
{
    SSL *ssl = SSL_new(c->g->client_ctx);
    if (!ssl)
        return NULL;
    pdk_ip ip;
    if (pdk_ip_parse_host(c->host, &ip) == PDK_HOST_ADDRESS) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), c->host);
    } else {
        SSL_set_tlsext_host_name(ssl, c->host);
        SSL_set1_host(ssl, c->host);
    }
    return ssl;
}

static void connect_to(gw_conn *c, const struct sockaddr *sa, socklen_t len)
{
    c->state = ST_CONNECTING;
    if (pdk__gw_upstream_tls(c)) {
        SSL *ssl = upstream_ssl(c);
        c->upstream =
            ssl ? bufferevent_openssl_socket_new(c->g->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                 BEV_OPT_CLOSE_ON_FREE)
                : NULL;
        if (!c->upstream)
            SSL_free(ssl);
        else
            bufferevent_openssl_set_allow_dirty_shutdown(c->upstream, 1);
    } else {
        c->upstream = bufferevent_socket_new(c->g->base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    if (!c->upstream) {
        pdk__gw_upstream_failed(c, "out of sockets");
        return;
    }
    bufferevent_set_max_single_read(c->upstream, MAX_SINGLE_READ);
    bufferevent_setcb(c->upstream, NULL, NULL, upstream_event, c);
    if (bufferevent_socket_connect(c->upstream, sa, (int)len) < 0) {
        _cleanup_free_ char *what =
            xasprintf("cannot connect to %s:%u", c->host, (unsigned)c->port);
        pdk__gw_upstream_failed(c, what);
        return;
    }
    send_at_once(bufferevent_getfd(c->upstream)); /* the upstream's side (tunnels too) */
}

static void on_resolved(int result, struct evutil_addrinfo *res, void *arg)
{
    if (result == EVUTIL_EAI_CANCEL)
        return; /* the connection is gone: arg is not to be touched */
    gw_conn *c = arg;
    c->resolving = NULL;
    if (result != 0) {
        _cleanup_free_ char *what =
            xasprintf("cannot resolve %s: %s", c->host, evutil_gai_strerror(result));
        pdk__gw_upstream_failed(c, what);
        return;
    }
    const pdk_net_resolve *ov = pdk_net_rules_resolve(c->g->rules, c->host, c->port);
    char why[512] = "";
    for (struct evutil_addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (address_allowed(c, ai->ai_addr, (socklen_t)ai->ai_addrlen, ov != NULL, why,
                            sizeof(why))) {
            connect_to(c, ai->ai_addr, (socklen_t)ai->ai_addrlen);
            evutil_freeaddrinfo(res);
            return;
        }
    }
    evutil_freeaddrinfo(res);
    pdk__gw_refuse(c, 403, "Forbidden", why[0] ? why : "no address to connect to");
}

/* Connect to the request's host:port (or what `resolve` says instead), checking every
 * address; reuses a kept connection to the same place. */
static void connect_upstream(gw_conn *c)
{
    if (c->upstream && c->up_host && strcmp(c->up_host, c->host) == 0 && c->up_port == c->port &&
        !c->upstream_eof) {
        on_upstream_ready(c);
        return;
    }
    if (c->upstream) {
        bufferevent_free(c->upstream);
        c->upstream = NULL;
    }
    c->upstream_eof = false;
    free(c->up_host);
    c->up_host = NULL;
    const pdk_net_resolve *ov = pdk_net_rules_resolve(c->g->rules, c->host, c->port);
    const char *name = ov ? ov->to_host : c->host;
    uint16_t port = ov ? ov->to_port : c->port;
    pdk_ip ip;
    if (pdk_ip_parse_host(name, &ip) == PDK_HOST_ADDRESS) {
        struct sockaddr_storage ss;
        socklen_t len = pdk_ip_to_sockaddr(&ip, port, &ss);
        char why[512];
        if (!address_allowed(c, (struct sockaddr *)&ss, len, ov != NULL, why, sizeof(why))) {
            pdk__gw_refuse(c, 403, "Forbidden", why);
            return;
        }
        connect_to(c, (struct sockaddr *)&ss, len);
        return;
    }
    c->state = ST_RESOLVING;
    char service[8];
    snprintf(service, sizeof(service), "%u", (unsigned)port);
    struct evutil_addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_protocol = IPPROTO_TCP};
    /* The callback may run at once (a hosts-file name): c->resolving is set only when the
     * lookup is pending. */
    c->resolving = NULL;
    struct evdns_getaddrinfo_request *r =
        evdns_getaddrinfo(c->g->dns, name, service, &hints, on_resolved, c);
    if (r && c->state == ST_RESOLVING)
        c->resolving = r;
}

/* ---- TLS interception ---- */

static void client_read(struct bufferevent *bev, void *arg);
static void client_head_event(struct bufferevent *bev, short what, void *arg);

/* The SNI a client sends must name the host its connection is pinned to. */
static int check_sni(SSL *ssl, int *alert, void *arg)
{
    gw_conn *c = SSL_get_app_data(ssl);
    const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (!c || !sni)
        return SSL_TLSEXT_ERR_OK; /* no SNI (an IP literal): nothing to compare */
    char name[PDK_DNS_NAME_MAX + 1];
    const char *n = pdk_dns_normalize_name(sni, name) ? name : sni;
    if (strcmp(n, c->captured_host) == 0)
        return SSL_TLSEXT_ERR_OK;
    json_t *ev =
        json_pack("{s:I, s:s, s:s, s:s}", "conn", (json_int_t)c->id, "host", c->captured_host,
                  "sni", n, "refused", "the TLS server name is not the host of the connection");
    pdk__gw_audit(c->g, "net.connect", ev);
    *alert = SSL_AD_UNRECOGNIZED_NAME;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/* Only HTTP/1.1 toward the sandbox. */
static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    for (unsigned int i = 0; i < inlen;) {
        unsigned int n = in[i];
        if (i + 1 + n > inlen)
            break;
        if (n == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
            *out = in + i + 1;
            *outlen = 8;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + n;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

/* Terminate the client's TLS with a leaf for host: its requests are read from here on. */
static void intercept(gw_conn *c, const char *host, uint16_t port)
{
    pdk_gateway *g = c->g;
    X509 *cert;
    EVP_PKEY *key;
    pdk_error err = {0};
    if (!g->server_ctx || pdk_tls_ca_leaf(g->ca, host, &cert, &key, &err) < 0) {
        pdk_warn("gateway: %s", g->server_ctx ? err.message : "no TLS interception");
        pdk__gw_conn_free(c);
        return;
    }
    SSL *ssl = SSL_new(g->server_ctx);
    if (!ssl || SSL_use_certificate(ssl, cert) != 1 || SSL_use_PrivateKey(ssl, key) != 1) {
        SSL_free(ssl);
        pdk__gw_conn_free(c);
        return;
    }
    if (host != c->captured_host) {
        free(c->captured_host);
        c->captured_host = xstrdup(host);
    }
    c->captured_port = port;
    SSL_set_app_data(ssl, c);
    struct bufferevent *tls = bufferevent_openssl_filter_new(
        g->base, c->client, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (!tls) {
        SSL_free(ssl);
        pdk__gw_conn_free(c);
        return;
    }
    bufferevent_openssl_set_allow_dirty_shutdown(tls, 1);
    /* The idle timeouts move to the TLS layer (the socket's would stop it reading for
     * good); the layer passes bytes down only while the socket's queue is under the high
     * mark, so that the queue toward the client is bounded: the layer's own queue fills,
     * and reading from the upstream pauses on that. */
    bufferevent_set_timeouts(c->client, NULL, NULL);
    bufferevent_setwatermark(c->client, EV_WRITE, QUEUE_LOW_WATER, QUEUE_HIGH_WATER);
    bufferevent_set_timeouts(tls, &g->idle, &g->idle);
    c->client = tls;
    c->tls_client = true;
    pdk_http_parser_free(c->requests);
    pdk_http_config hc = {.tls = true};
    c->requests = pdk_http_parser_new(PDK_HTTP_REQUEST, &hc);
    pdk_http_head_free(c->req);
    c->req = NULL;
    c->state = ST_HEAD;
    bufferevent_set_max_single_read(c->client, MAX_SINGLE_READ);
    bufferevent_setcb(c->client, client_read, NULL, client_head_event, c);
    bufferevent_enable(c->client, EV_READ | EV_WRITE);
}

/* Why a TLS connection to an upstream failed, in one line. */
static char *tls_failure(gw_conn *c, struct bufferevent *bev)
{
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
    if (v != X509_V_OK)
        return xasprintf("the certificate of %s is not trusted: %s (give its CA in the policy's "
                         "network.upstream_ca if it is yours)",
                         c->host, X509_verify_cert_error_string(v));
    unsigned long e = bufferevent_get_openssl_error(bev);
    char buf[256] = "";
    if (e)
        ERR_error_string_n(e, buf, sizeof(buf));
    int se = EVUTIL_SOCKET_ERROR();
    return xasprintf("cannot connect to %s:%u over TLS: %s", c->host, (unsigned)c->port,
                     e ? buf : evutil_socket_error_to_string(se));
}

/* ---- requests ---- */

static void start_request(gw_conn *c);

/* The client's next request, if one is already buffered (pipelining), else wait. */
void pdk__gw_next_request(gw_conn *c)
{
    pdk_http_head_free(c->req);
    c->req = NULL;
    free(c->path);
    c->path = NULL;
    c->state = ST_HEAD;
    c->request_done = c->response_done = false;
    c->status = 0;
    c->rewrite_body = false;
    c->websocket = false;
    c->close_upstream = false;
    c->holding_first_line = false;
    pdk_buf_free_secret(&c->first_line);
    json_decref(c->credentials_used);
    c->credentials_used = NULL;
    json_decref(c->placeholders_left);
    c->placeholders_left = NULL;
    pdk__gw_response_free(c);
    pdk_buf_free_secret(&c->rewrite);
    bufferevent_setcb(c->client, client_read, NULL, client_head_event, c);
    bufferevent_enable(c->client, EV_READ);
    if (evbuffer_get_length(bufferevent_get_input(c->client)) > 0)
        client_read(c->client, c);
}

static void request_complete(gw_conn *c)
{
    if (!c->request_done || !c->response_done)
        return;
    json_t *ev = pdk__gw_done_event(c);
    json_object_set_new(ev, "status", json_integer(c->status));
    pdk__gw_audit(c->g, "net.response", ev);
    pdk_http_head *resp = pdk_http_parser_head(c->responses);
    /* A request sent with "Connection: close" (close_upstream) ends its upstream connection,
     * not the client's. */
    bool keep = c->req->keep_alive && resp && (resp->keep_alive || c->close_upstream) &&
                (!c->upstream_eof || c->close_upstream);
    /* An upgrade the upstream did not take (no 101): the connection stays HTTP. */
    if (keep && c->req->upgrade && pdk_http_parser_resume(c->requests) < 0)
        keep = false;
    if (!keep) {
        pdk__gw_close_after_flush(c);
        return;
    }
    if (c->close_upstream) {
        bufferevent_free(c->upstream); /* the next request gets a connection of its own */
        c->upstream = NULL;
        free(c->up_host);
        c->up_host = NULL;
        pdk_http_parser_free(c->responses);
        c->responses = NULL;
    }
    pdk__gw_next_request(c);
}

/* A body whose first line reads as a request line is refused (false): an upstream that
 * does not read this request's body (an endpoint that ignores Content-Length) would take it
 * for its next request, one no rule judged. Nothing of the request has gone upstream. */
static bool body_first_line_safe(gw_conn *c, const char *body, size_t len)
{
    if (pdk_http_looks_like_request_line(body, len, true) != 1)
        return true;
    c->verdict.decision = PDK_DECISION_DENY;
    pdk__gw_refuse(c, 400, "Bad Request",
                   "the body begins with an HTTP request line: an upstream that does not read "
                   "this request's body would take it for another request");
    return false;
}

/* The held head and first body bytes (holding_first_line): decided once the first line is
 * whole, the body ended, or the bound is reached; then sent upstream in one write, or
 * refused. False when the request was refused. */
static bool release_first_line(gw_conn *c, bool complete)
{
    const char *body = c->first_line.data + c->first_line_head;
    size_t len = c->first_line.len - c->first_line_head;
    int verdict = pdk_http_looks_like_request_line(body, len, complete);
    if (verdict < 0)
        return true; /* more to come */
    if (!body_first_line_safe(c, body, len))
        return false;
    evbuffer_add(bufferevent_get_output(c->upstream), c->first_line.data, c->first_line.len);
    c->up_bytes += c->first_line.len;
    pdk_buf_free_secret(&c->first_line);
    c->holding_first_line = false;
    return true;
}

/* Request body bytes and the end of the request, from the client's buffer. */
static void forward_request_body(gw_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->client);
    while (!c->request_done) {
        size_t avail = evbuffer_get_contiguous_space(in);
        const char *data = avail ? (const char *)evbuffer_pullup(in, (ev_ssize_t)avail) : "";
        pdk_http_result r;
        pdk_http_event e = pdk_http_parse(c->requests, data, avail, &r);
        if (e == PDK_HTTP_BODY && c->scan_body && !pdk__gw_scan_body(c, r.body, r.body_len))
            return; /* a placeholder bound elsewhere: refused, and this slice not sent */
        if (e == PDK_HTTP_BODY && c->rewrite_body) {
            if (c->rewrite.len + r.body_len > PDK_GW_REWRITE_MAX) {
                c->verdict.decision = PDK_DECISION_DENY;
                pdk__gw_refuse(c, 413, "Payload Too Large",
                               "a body whose placeholders are replaced (replace_in_body) is "
                               "over 1 MiB");
                return;
            }
            pdk_buf_append(&c->rewrite, r.body, r.body_len);
        } else if (e == PDK_HTTP_BODY && c->holding_first_line) {
            pdk_buf_append(&c->first_line, r.body, r.body_len);
            if (!release_first_line(c, false))
                return;
        } else if (e == PDK_HTTP_BODY) {
            struct evbuffer *up = bufferevent_get_output(c->upstream);
            evbuffer_add(up, r.body, r.body_len);
            c->up_bytes += r.body_len;
            if (evbuffer_get_length(up) >= QUEUE_HIGH_WATER) {
                /* the upstream is slower: stop reading until it drains (upstream_written) */
                evbuffer_drain(in, r.consumed);
                bufferevent_disable(c->client, EV_READ);
                return;
            }
        } else if (e == PDK_HTTP_MESSAGE_COMPLETE) {
            c->request_done = true;
            if (c->holding_first_line && !release_first_line(c, true))
                return;
            if (c->rewrite_body) { /* the whole body is here: now the head, and it */
                pdk_buf msg = {0};
                if (!pdk__gw_rewritten_request(c, &msg))
                    return; /* refused (and answered) instead */
                const char *end = msg.data ? memmem(msg.data, msg.len, "\r\n\r\n", 4) : NULL;
                if (end &&
                    !body_first_line_safe(c, end + 4, msg.len - (size_t)(end + 4 - msg.data))) {
                    pdk_buf_free_secret(&msg);
                    return;
                }
                evbuffer_add(bufferevent_get_output(c->upstream), msg.data, msg.len);
                c->up_bytes += msg.len;
                pdk_buf_free_secret(&msg);
            }
        } else if (e == PDK_HTTP_ERROR) {
            pdk__gw_conn_free(c); /* a broken body cannot be answered cleanly any more */
            return;
        }
        evbuffer_drain(in, r.consumed);
        if (e == PDK_HTTP_NEED_MORE)
            break;
    }
    if (c->request_done) {
        /* the next pipelined request waits until this response is done */
        bufferevent_disable(c->client, EV_READ);
        request_complete(c);
    }
}

static void forward_response(gw_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->upstream);
    struct evbuffer *out = bufferevent_get_output(c->client);
    while (!c->response_done) {
        size_t avail = evbuffer_get_contiguous_space(in);
        const char *data = avail ? (const char *)evbuffer_pullup(in, (ev_ssize_t)avail) : "";
        pdk_http_result r;
        pdk_http_event e = pdk_http_parse(c->responses, data, avail, &r);
        if (e == PDK_HTTP_HEAD && r.head->upgrade &&
            !(c->websocket && r.head->upgrade_protocol &&
              strcasecmp(r.head->upgrade_protocol, "websocket") == 0)) {
            /* a 101 that is not the WebSocket upgrade asked for: what follows would be
             * another protocol, never judged */
            _cleanup_free_ char *what = xasprintf(
                "the upstream switched protocols (%d, Upgrade: %.100s), and only a WebSocket "
                "upgrade the request asked for passes the gateway",
                r.head->status, r.head->upgrade_protocol ? r.head->upgrade_protocol : "none");
            pdk__gw_upstream_failed(c, what);
            return;
        }
        if (e == PDK_HTTP_HEAD) {
            pdk_buf head = {0};
            if (!pdk__gw_response_head(c, r.head, &head)) { /* refused: answered, closing */
                pdk_buf_free(&head);
                return;
            }
            evbuffer_add(out, head.data, head.len);
            c->down_bytes += head.len;
            pdk_buf_free(&head);
            if (r.head->status >= 200 || r.head->upgrade)
                c->status = r.head->status;
        } else if (e == PDK_HTTP_BODY) {
            pdk__gw_response_body(c, r.body, r.body_len, out);
            c->down_bytes += r.body_len;
            if (evbuffer_get_length(bufferevent_get_output(c->client)) >= QUEUE_HIGH_WATER) {
                evbuffer_drain(in, r.consumed);
                bufferevent_disable(c->upstream, EV_READ); /* until client_written */
                return;
            }
        } else if (e == PDK_HTTP_MESSAGE_COMPLETE) {
            pdk_http_head *h = pdk_http_parser_head(c->responses);
            if (h && (h->status >= 200 || h->upgrade)) { /* final (101 included), not 1xx */
                evbuffer_drain(in, r.consumed);
                c->response_done = true;
                pdk__gw_response_end(c, out);
                if (h->upgrade) { /* 101: the protocol changes, bytes flow unread */
                    json_t *ev = pdk__gw_request_event(c, "");
                    json_object_set_new(ev, "status", json_integer(h->status));
                    json_object_set_new(
                        ev, "upgrade", json_string(h->upgrade_protocol ? h->upgrade_protocol : ""));
                    pdk__gw_audit(c->g, "net.response", ev);
                    pdk__gw_start_tunnel(c);
                    return;
                }
                break;
            }
        } else if (e == PDK_HTTP_ERROR) {
            _cleanup_free_ char *what = xasprintf("the upstream's response is not valid HTTP: %s",
                                                  r.reason ? r.reason : "?");
            if (c->status == 0)
                pdk__gw_upstream_failed(c, what);
            else
                pdk__gw_conn_free(c);
            return;
        }
        evbuffer_drain(in, r.consumed);
        if (e == PDK_HTTP_NEED_MORE)
            break;
    }
    if (c->response_done)
        request_complete(c);
}

static void upstream_read(struct bufferevent *bev, void *arg)
{
    gw_conn *c = arg;
    if (c->state != ST_FORWARD) {
        /* bytes from a kept connection between requests: not HTTP we can place */
        bufferevent_free(c->upstream);
        c->upstream = NULL;
        free(c->up_host);
        c->up_host = NULL;
        return;
    }
    forward_response(c);
}

/* Backpressure released: what was queued toward one side drained below the low mark. */
static void upstream_written(struct bufferevent *bev, void *arg)
{
    gw_conn *c = arg;
    if (c->state == ST_FORWARD && !c->request_done) {
        bufferevent_enable(c->client, EV_READ);
        forward_request_body(c);
    }
}

static void client_written(struct bufferevent *bev, void *arg)
{
    gw_conn *c = arg;
    if (c->state == ST_FORWARD && !c->response_done && c->upstream) {
        if (!c->upstream_eof)
            bufferevent_enable(c->upstream, EV_READ);
        forward_response(c);
        if (c->state == ST_FORWARD && !c->response_done && c->upstream_eof &&
            !upstream_end_waits(c))
            upstream_ended(c);
    }
}

void pdk__gw_bound_queues(gw_conn *c)
{
    /* The written callbacks come below the low mark; reading from one side stops while
     * its input holds the high mark (what reads it drains it as it goes, unless the other
     * side's queue is full). */
    bufferevent_setwatermark(c->upstream, EV_WRITE, QUEUE_LOW_WATER, 0);
    bufferevent_setwatermark(c->upstream, EV_READ, 0, QUEUE_HIGH_WATER);
    bufferevent_setwatermark(c->client, EV_WRITE, QUEUE_LOW_WATER, 0);
    bufferevent_setwatermark(c->client, EV_READ, 0, QUEUE_HIGH_WATER);
}

static void forward_client_read(struct bufferevent *bev, void *arg)
{
    gw_conn *c = arg;
    if (!c->request_done)
        forward_request_body(c);
}

static void client_event(struct bufferevent *bev, short what, void *arg)
{
    gw_conn *c = arg;
    if (what & BEV_EVENT_TIMEOUT) {
        pdk__gw_idle_closed(c);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        if (c->state == ST_FORWARD && c->request_done && !c->response_done &&
            (what & BEV_EVENT_EOF)) {
            c->client_eof = true; /* a half-closed client still gets its response */
            return;
        }
        pdk__gw_conn_free(c);
    }
}

/* The upstream is connected (or kept): send the request. */
static void on_upstream_ready(gw_conn *c)
{
    if (!c->up_host) {
        c->up_host = xstrdup(c->host);
        c->up_port = c->port;
    }
    if (!c->req) { /* a captured TLS connection to a passthrough host */
        c->sni_check = true;
        pdk__gw_start_tunnel(c);
        return;
    }
    if (c->req->method_id == HTTP_CONNECT) { /* to a passthrough host */
        evbuffer_add_printf(bufferevent_get_output(c->client),
                            "HTTP/1.1 200 Connection established\r\n\r\n");
        c->sni_check = true;
        pdk__gw_start_tunnel(c);
        return;
    }
    c->state = ST_FORWARD;
    if (!c->responses)
        c->responses = pdk_http_parser_new(PDK_HTTP_RESPONSE, NULL);
    pdk_http_parser_set_request_method(c->responses, c->req->method_id);
    if (c->rewrite_body) {
        /* the head goes with the rewritten body; a client waiting for 100 gets it here */
        if (c->req->expect_continue) {
            pdk_http_head_remove(c->req, "Expect");
            evbuffer_add_printf(bufferevent_get_output(c->client), "HTTP/1.1 100 Continue\r\n\r\n");
        }
    } else {
        /* A Content-Length body: its first line is looked at before anything goes up
         * (forward_request_body), the head held with it; a client waiting for 100 gets it
         * here. A chunked body cannot read as a request line: it starts with hex digits. */
        bool hold =
            c->req->framing == PDK_HTTP_FRAMING_CONTENT_LENGTH && c->req->content_length > 0;
        if (hold && c->req->expect_continue) {
            pdk_http_head_remove(c->req, "Expect");
            evbuffer_add_printf(bufferevent_get_output(c->client), "HTTP/1.1 100 Continue\r\n\r\n");
        }
        pdk_buf head = {0};
        pdk_http_head_serialize(c->req, &head);
        /* (the credentials went on in pdk__gw_proceed, before the head was recorded) */
        if (hold) {
            pdk_buf_free_secret(&c->first_line);
            c->first_line = head;
            c->first_line_head = head.len;
            c->holding_first_line = true;
        } else {
            evbuffer_add(bufferevent_get_output(c->upstream), head.data, head.len);
            c->up_bytes += head.len;
            pdk_buf_free_secret(&head);
        }
    }
    bufferevent_setcb(c->upstream, upstream_read, upstream_written, upstream_event, c);
    pdk__gw_bound_queues(c);
    bufferevent_enable(c->upstream, EV_READ | EV_WRITE);
    bufferevent_setcb(c->client, forward_client_read, client_written, client_event, c);
    bufferevent_enable(c->client, EV_READ);
    forward_request_body(c); /* what came with the head, or the end of a bodiless one */
}

/* Whether a method's content has no meaning an upstream is bound to read: RFC 9110 gives
 * GET, HEAD and OPTIONS content no defined semantics and forbids it in TRACE. */
static bool body_unexpected(const char *method)
{
    static const char *const methods[] = {"GET", "HEAD", "OPTIONS", "TRACE"};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(methods); i++)
        if (strcmp(method, methods[i]) == 0)
            return true;
    return false;
}

/* What an upstream could read otherwise than the gateway is made plain (a body whose first
 * line reads as a request is refused later, in forward_request_body).
 * A GET (HEAD, OPTIONS, TRACE) with a body, which clients such as the Lark SDK send, goes
 * upstream with "Connection: close" on an upstream connection never used again: a server
 * that ignores such bodies reads nothing after them as a request. An Upgrade other than
 * WebSocket (h2c above all: HTTP/2 frames after a 101, never read) is dropped and the
 * request goes on as HTTP/1.1; only a WebSocket upgrade may end in a tunnel. */
static void make_request_plain(gw_conn *c)
{
    pdk_http_head *h = c->req;
    bool has_body = h->framing == PDK_HTTP_FRAMING_CHUNKED ||
                    (h->framing == PDK_HTTP_FRAMING_CONTENT_LENGTH && h->content_length > 0);
    c->close_upstream = has_body && body_unexpected(h->method);
    if (c->close_upstream) {
        pdk_error ignored = {0};
        (void)pdk_http_head_set(h, "Connection", "close", &ignored);
    }
    c->websocket = false;
    if (h->upgrade && h->upgrade_protocol) {
        if (strcasecmp(h->upgrade_protocol, "websocket") == 0) {
            c->websocket = true;
        } else {
            /* (h->upgrade stays: the parser stopped after this message and is resumed) */
            json_t *ev =
                json_pack("{s:I, s:I, s:s, s:s}", "conn", (json_int_t)c->id, "seq",
                          (json_int_t)c->seq, "host", c->host, "upgrade", h->upgrade_protocol);
            json_object_set_new(ev, "dropped",
                                json_string("only a WebSocket upgrade passes the gateway"));
            pdk__gw_audit(c->g, "net.upgrade_dropped", ev);
            pdk_http_head_remove(h, "Upgrade");
            free(h->upgrade_protocol);
            h->upgrade_protocol = NULL;
        }
    }
}

/* The request head is read: judge it and act. */
static void start_request(gw_conn *c)
{
    pdk_gateway *g = c->g;
    pdk_http_head *h = c->req;
    g->stats.requests++;
    c->seq++;
    c->t0_ns = pdk_now_monotonic_ns();
    c->up_bytes = c->down_bytes = 0;
    bool connect = h->method_id == HTTP_CONNECT;
    if (!pdk__gw_pinned(c) && !connect && h->target_form != PDK_HTTP_TARGET_ABSOLUTE) {
        free(c->host);
        c->host = xstrdup(h->host ? h->host : "");
        c->verdict = (pdk_net_verdict){PDK_DECISION_DENY, PDK_NET_DECIDED, -1, ""};
        pdk__gw_refuse(c, 400, "Bad Request",
                       "the proxy takes CONNECT and absolute-form requests (GET http://host/path)");
        return;
    }
    if (pdk__gw_pinned(c) && connect) {
        c->verdict = (pdk_net_verdict){PDK_DECISION_DENY, PDK_NET_DECIDED, -1, ""};
        pdk__gw_refuse(c, 400, "Bad Request", "CONNECT is for the proxy (127.0.0.1:3128), once");
        return;
    }
    /* The host: an IP literal in any notation is judged in its canonical form. */
    const char *raw = pdk__gw_pinned(c) ? c->captured_host : h->host;
    pdk_ip ip;
    pdk_host_kind hk = pdk_ip_parse_host(raw ? raw : "", &ip);
    free(c->host);
    if (hk == PDK_HOST_ADDRESS) {
        char text[PDK_IP_TEXT_MAX];
        pdk_ip_format(&ip, text, sizeof(text));
        c->host = xstrdup(text);
    } else {
        char name[PDK_DNS_NAME_MAX + 1];
        c->host = xstrdup(pdk_dns_normalize_name(raw ? raw : "", name) ? name : (raw ? raw : ""));
    }
    c->port = pdk__gw_pinned(c) ? c->captured_port : h->port;
    if (hk == PDK_HOST_INVALID) {
        c->verdict = (pdk_net_verdict){PDK_DECISION_DENY, PDK_NET_DECIDED, -1, ""};
        pdk__gw_refuse(c, 400, "Bad Request", "the host is not a valid name or address");
        return;
    }
    if (pdk__gw_pinned(c) && h->host) {
        /* the connection's destination is the captured name: a Host naming another one is
         * domain fronting, or a confused client */
        char name[PDK_DNS_NAME_MAX + 1];
        const char *hh = pdk_dns_normalize_name(h->host, name) ? name : h->host;
        if (strcmp(hh, c->host) != 0) {
            c->verdict = (pdk_net_verdict){PDK_DECISION_DENY, PDK_NET_DECIDED, -1, ""};
            pdk__gw_refuse(c, 403, "Forbidden",
                           "the Host field names another host than the connection's destination");
            return;
        }
    }
    if (!connect)
        make_request_plain(c);
    pdk_net_request nr = {.scheme = h->scheme, .host = c->host, .port = c->port};
    if (!connect) {
        const char *why = NULL;
        free(c->path);
        c->path = pdk_net_path_normalize(h->path ? h->path : "/", NULL, &why);
        if (!c->path) {
            c->verdict = (pdk_net_verdict){PDK_DECISION_DENY, PDK_NET_DECIDED, -1, ""};
            pdk__gw_refuse(c, 400, "Bad Request", why);
            return;
        }
        nr.method = h->method;
        nr.path = c->path;
        if (h->path && strcmp(h->path, "*") == 0)
            nr.path = "*";
    }
    /* A placeholder on its way to another host; a client minting its own token with the
     * placeholder secret (answered here). Before any rule. */
    if (!pdk__gw_check_placeholders(c))
        return;
    if (!connect)
        pdk__gw_scan_start(c);
    if (!connect && pdk__gw_broker(c))
        return;
    pdk_net_rules_judge(g->rules, &nr, &c->verdict);
    _cleanup_free_ char *how = pdk_policy_describe_net_rule(g->policy, c->verdict.rule);
    if (connect) {
        bool passthrough = pdk_net_rules_is_passthrough(g->rules, c->host);
        /* With credentials, a denied host is read too: a request carrying a placeholder
         * there is an exfiltration attempt, and recorded as one. */
        bool denied =
            c->verdict.scope == PDK_NET_DECIDED && c->verdict.decision == PDK_DECISION_DENY;
        if (!passthrough && (!denied || g->credential_count > 0)) {
            /* every request inside is read and judged: TLS interception */
            pdk_error e2 = {0};
            json_t *ev = pdk__gw_request_event(c, how);
            mark_intercepted(c, ev);
            if (!pdk__gw_audit_required(g, "net.connect", ev, &e2)) {
                c->verdict.decision = PDK_DECISION_DENY;
                pdk__gw_refuse(c, 503, "Service Unavailable", e2.message);
                return;
            }
            evbuffer_add_printf(bufferevent_get_output(c->client),
                                "HTTP/1.1 200 Connection established\r\n\r\n");
            intercept(c, c->host, c->port);
            return;
        }
        if (passthrough && c->verdict.scope == PDK_NET_PER_REQUEST) {
            /* a passthrough host is never read: the strictest its rules could say holds */
            c->verdict.decision = PDK_DECISION_DENY;
            pdk__gw_refuse(
                c, 403, "Forbidden",
                "a passthrough host's requests are not read, and its rules depend on the "
                "method or path (remove it from passthrough, or give it host-wide rules)");
            return;
        }
    }
    if (c->verdict.decision == PDK_DECISION_DENY) {
        pdk__gw_refuse(c, 403, "Forbidden", NULL);
        return;
    }
    if (c->verdict.decision == PDK_DECISION_ASK && !connect) {
        pdk__gw_ask(c, how);
        return;
    }
    if (c->verdict.decision == PDK_DECISION_ASK) {
        c->verdict.decision = PDK_DECISION_DENY;
        pdk__gw_refuse(
            c, 403, "Forbidden",
            "a rule asks a human for every connection to this passthrough host, whose "
            "requests are not read (remove it from passthrough to be asked per request)");
        return;
    }
    pdk__gw_proceed(c, how);
}

/* The request may go on: recorded (fail closed), then to the upstream. */
void pdk__gw_proceed(gw_conn *c, const char *how)
{
    pdk_gateway *g = c->g;
    pdk_http_head *h = c->req;
    bool connect = h->method_id == HTTP_CONNECT;
    pdk_error err = {0};
    if (!connect && pdk__gw_apply_credentials(c, how) != GW_APPLIED)
        return; /* answered (a provider failed), or waiting for a token: resumed here */
    pdk_debug("gateway: connection %llu: %s %s:%u allowed", (unsigned long long)c->id, h->method,
              c->host, (unsigned)c->port);
    if (!pdk__gw_audit_required(g, connect ? "net.connect" : "net.request",
                                pdk__gw_request_event(c, how), &err)) {
        c->verdict.decision = PDK_DECISION_DENY;
        pdk__gw_refuse(c, 503, "Service Unavailable", err.message);
        return;
    }
    bufferevent_disable(c->client, EV_READ); /* until the upstream is there */
    connect_upstream(c);
}

/* ---- approval of single requests ---- */

static void client_read(struct bufferevent *bev, void *arg)
{
    gw_conn *c = arg;
    if (c->state != ST_HEAD)
        return;
    struct evbuffer *in = bufferevent_get_input(bev);
    /* A head has network.limits.idle_timeout to arrive whole from its first byte: one
     * trickled a byte at a time is never idle, and would hold its connection forever. */
    uint64_t now = pdk_now_monotonic_ns();
    if (c->head_started_ns == 0 && evbuffer_get_length(in) > 0) {
        c->head_started_ns = now;
    } else if (c->head_started_ns &&
               now - c->head_started_ns > (uint64_t)c->g->idle.tv_sec * 1000000000ULL) {
        pdk__gw_idle_closed(c);
        return;
    }
    while (evbuffer_get_length(in) > 0 && c->state == ST_HEAD) {
        size_t avail = evbuffer_get_contiguous_space(in);
        const char *data = (const char *)evbuffer_pullup(in, (ev_ssize_t)avail);
        pdk_http_result r;
        pdk_http_event e = pdk_http_parse(c->requests, data, avail, &r);
        if (e == PDK_HTTP_ERROR) {
            c->verdict = (pdk_net_verdict){PDK_DECISION_DENY, PDK_NET_DECIDED, -1, ""};
            const char *text = r.status == 431   ? "Request Header Fields Too Large"
                               : r.status == 414 ? "URI Too Long"
                               : r.status == 501 ? "Not Implemented"
                               : r.status == 505 ? "HTTP Version Not Supported"
                               : r.status == 417 ? "Expectation Failed"
                                                 : "Bad Request";
            json_t *body = json_pack("{s:s, s:s}", "error", "bad request", "reason",
                                     r.reason ? r.reason : "malformed request");
            json_t *ev = json_pack("{s:I, s:i, s:s}", "conn", (json_int_t)c->id, "status", r.status,
                                   "reason", r.reason ? r.reason : "");
            pdk__gw_audit(c->g, "net.bad_request", ev);
            reply(c, r.status ? r.status : 400, text, "deny", body);
            return;
        }
        evbuffer_drain(in, r.consumed);
        if (e == PDK_HTTP_HEAD) {
            c->head_started_ns = 0;
            c->req = pdk_http_parser_take_head(c->requests);
            start_request(c);
            return;
        }
        if (e == PDK_HTTP_NEED_MORE)
            break;
    }
}

static void client_head_event(struct bufferevent *bev, short what, void *arg)
{
    gw_conn *c = arg;
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)))
        return; /* BEV_EVENT_CONNECTED: the TLS handshake with the client is done */
    if (what & BEV_EVENT_TIMEOUT) { /* no head (or no rest of one) in time */
        pdk__gw_idle_closed(c);
        return;
    }
    pdk_debug("gateway: connection %llu: client event 0x%x", (unsigned long long)c->id,
              (unsigned)what);
    if (c->tls_client && (what & BEV_EVENT_ERROR)) {
        unsigned long e = bufferevent_get_openssl_error(bev);
        char buf[256] = "";
        if (e)
            ERR_error_string_n(e, buf, sizeof(buf));
        pdk_debug("gateway: connection %llu: TLS toward the sandbox: %s", (unsigned long long)c->id,
                  e ? buf : "closed");
    }
    pdk__gw_conn_free(c);
}

/* ---- listeners ---- */

static void on_proxy_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                            int len, void *arg)
{
    pdk_gateway *g = arg;
    gw_conn *c = pdk__gw_conn_new(g, CONN_PROXY, fd);
    if (!c)
        return;
    c->requests = pdk_http_parser_new(PDK_HTTP_REQUEST, NULL);
    bufferevent_setcb(c->client, client_read, NULL, client_head_event, c);
    bufferevent_enable(c->client, EV_READ | EV_WRITE);
}

/* A captured connection's first bytes: TLS (a ClientHello) or plain HTTP. */
static void capture_first_read(struct bufferevent *bev, void *arg)
{
    gw_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    unsigned char first;
    if (evbuffer_copyout(in, &first, 1) != 1)
        return;
    if (first == 0x16) {
        /* TLS: without interception the connection can only be judged as a whole */
        free(c->host);
        c->host = xstrdup(c->captured_host);
        c->port = c->captured_port;
        c->t0_ns = pdk_now_monotonic_ns();
        pdk_net_request nr = {.scheme = "https", .host = c->host, .port = c->port};
        pdk_net_rules_judge(c->g->rules, &nr, &c->verdict);
        bool passthrough = pdk_net_rules_is_passthrough(c->g->rules, c->host);
        if (c->verdict.scope == PDK_NET_DECIDED && c->verdict.decision == PDK_DECISION_DENY &&
            (passthrough || c->g->credential_count == 0)) {
            pdk__gw_refuse(c, 0, NULL, NULL);
            return;
        }
        if (!passthrough) {
            _cleanup_free_ char *how0 = pdk_policy_describe_net_rule(c->g->policy, c->verdict.rule);
            json_t *ev = pdk__gw_request_event(c, how0);
            mark_intercepted(c, ev);
            pdk__gw_audit(c->g, "net.connect", ev);
            intercept(c, c->captured_host, c->captured_port);
            return;
        }
        if (c->verdict.decision != PDK_DECISION_ALLOW || c->verdict.scope != PDK_NET_DECIDED) {
            c->verdict.decision = PDK_DECISION_DENY;
            pdk__gw_refuse(c, 0, NULL,
                           "a passthrough host's rules must decide without reading requests");
            return;
        }
        if (!pdk__gw_check_destination(c, c->host))
            return; /* (its name is resolved on the host: it would leave there) */
        _cleanup_free_ char *how = pdk_policy_describe_net_rule(c->g->policy, c->verdict.rule);
        pdk_error err = {0};
        if (!pdk__gw_audit_required(c->g, "net.connect", pdk__gw_request_event(c, how), &err)) {
            pdk__gw_conn_free(c);
            return;
        }
        bufferevent_disable(c->client, EV_READ);
        connect_upstream(c);
        return;
    }
    c->requests = pdk_http_parser_new(PDK_HTTP_REQUEST, NULL);
    bufferevent_setcb(c->client, client_read, NULL, client_head_event, c);
    client_read(bev, c);
}

static void on_capture_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                              int len, void *arg)
{
    pdk_gateway *g = arg;
    struct sockaddr_in local;
    socklen_t llen = sizeof(local);
    if (getsockname(fd, (struct sockaddr *)&local, &llen) < 0 || local.sin_family != AF_INET) {
        close(fd);
        return;
    }
    uint32_t addr = ntohl(local.sin_addr.s_addr);
    const char *name = pdk_dns_table_find_name(g->names, addr);
    char text[INET_ADDRSTRLEN] = "";
    inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
    if (!name && (addr >> 24) == 127) {
        /* The sandbox's own loopback on a captured port, where nothing inside can listen
         * (the capture listener holds the port): a connection for the host's loopback,
         * which only a rule with host_loopback reaches; judged like any other. */
        name = text;
    }
    if (!name) {
        /* a fake address never handed out */
        json_t *ev =
            json_pack("{s:s, s:i, s:s}", "address", text, "port", (int)ntohs(local.sin_port),
                      "refused", "not an address the DNS stub handed out");
        pdk__gw_audit_counted(g, GW_TALLY_CONNECT_REFUSED, ev);
        g->stats.denied++;
        close(fd);
        return;
    }
    gw_conn *c = pdk__gw_conn_new(g, CONN_CAPTURE, fd);
    if (!c)
        return;
    c->captured_host = xstrdup(name);
    c->captured_port = ntohs(local.sin_port);
    bufferevent_setcb(c->client, capture_first_read, NULL, client_head_event, c);
    bufferevent_enable(c->client, EV_READ | EV_WRITE);
}

/* ---- the DNS stub ---- */

/* ---- the gateway ---- */

/* The two TLS contexts: toward the sandbox (leaves of paddock's CA, HTTP/1.1) and toward
 * upstreams (the host's roots plus upstream_ca, verified, never a silent downgrade). */
static int make_tls(pdk_gateway *g, const char *state_dir, pdk_error *err)
{
    if (pdk_tls_ca_open(state_dir, &g->ca, err) < 0)
        return -1;
    g->server_ctx = SSL_CTX_new(TLS_server_method());
    g->client_ctx = SSL_CTX_new(TLS_client_method());
    if (!g->server_ctx || !g->client_ctx)
        return pdk_error_set(err, ENOMEM, "cannot make the gateway's TLS contexts");
    SSL_CTX_set_min_proto_version(g->server_ctx, TLS1_2_VERSION);
    SSL_CTX_set_min_proto_version(g->client_ctx, TLS1_2_VERSION);
    SSL_CTX_set_tlsext_servername_callback(g->server_ctx, check_sni);
    SSL_CTX_set_alpn_select_cb(g->server_ctx, select_alpn, NULL);
    SSL_CTX_set_session_cache_mode(g->server_ctx, SSL_SESS_CACHE_SERVER);
    SSL_CTX_set_verify(g->client_ctx, SSL_VERIFY_PEER, NULL);
    static const unsigned char alpn[] = "\x08http/1.1";
    SSL_CTX_set_alpn_protos(g->client_ctx, alpn, sizeof(alpn) - 1);
    if (SSL_CTX_set_default_verify_paths(g->client_ctx) != 1)
        return pdk_error_set(err, EIO, "cannot load the host's trusted roots");
    for (char **ca = g->rules->upstream_ca; ca && *ca; ca++)
        if (SSL_CTX_load_verify_locations(g->client_ctx, *ca, NULL) != 1)
            return pdk_error_set(err, EINVAL,
                                 "network.upstream_ca: %s is not a readable PEM file of "
                                 "certificates",
                                 *ca);
    return 0;
}

pdk_gateway *pdk_gateway_new(const pdk_gateway_config *cfg, pdk_error *err)
{
    pdk_gateway *g = xcalloc(1, sizeof(*g));
    g->policy = cfg->policy;
    g->rules = &cfg->policy->network;
    g->spool = cfg->spool;
    g->session = xstrdup(cfg->session ? cfg->session : "");
    g->names = pdk_dns_table_new();
    g->idle.tv_sec = g->rules->idle_timeout_s ? (time_t)g->rules->idle_timeout_s
                                              : PDK_NET_DEFAULT_IDLE_TIMEOUT_S;
    g->dns_udp_fd = -1;
    g->diag_fd = -1;
    g->state_dir = xstrdup(cfg->state_dir);
    g->session_named = cfg->session_named;
    if (pdk__gw_credentials_copy(g, cfg, err) < 0) {
        pdk_gateway_free(g);
        return NULL;
    }
    if (make_tls(g, cfg->state_dir, err) < 0) {
        pdk_gateway_free(g);
        return NULL;
    }
    return g;
}

char *pdk_gateway_ca_bundle(const char *state_dir, pdk_error *err)
{
    char *path = NULL;
    return pdk_tls_ca_bundle_of(state_dir, &path, err) < 0 ? NULL : path;
}

char *pdk_gateway_ca_pem(const char *state_dir, pdk_error *err)
{
    pdk_tls_ca *ca = NULL;
    if (pdk_tls_ca_open(state_dir, &ca, err) < 0)
        return NULL;
    char *pem = pdk_tls_ca_pem(ca);
    pdk_tls_ca_free(ca);
    return pem;
}

void pdk_gateway_serve(void *gateway, struct event_base *base, pid_t init_pid,
                       const pdk_egress_socket *socks, size_t count)
{
    pdk_gateway *g = gateway;
    g->base = base;
    g->init_pid = init_pid;
    pdk__gw_limits_start(g);
    /* Two descriptors a connection (the sandbox's side and the upstream's): the soft limit
     * goes up to the hard one. */
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &nofile);
    }
    /* Upstream names are resolved the way the host resolves them (its resolv.conf and
     * hosts file), never by the sandbox's stub. */
    g->dns =
        evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_DISABLE_WHEN_INACTIVE);
    if (!g->dns)
        g->dns = evdns_base_new(base, 0); /* no resolv.conf: names from the hosts file only */
    for (size_t i = 0; i < count; i++) {
        const pdk_egress_socket *s = &socks[i];
        if (s->kind == PDK_EGRESS_DIAG) {
            /* the kernel answers at once; never wait long on the loop if it does not */
            struct timeval limit = {0, 100 * 1000};
            (void)setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
            g->diag_fd = s->fd;
            g->owners = pdk__gw_owners_new();
            continue;
        }
        if (s->kind == PDK_EGRESS_DNS_UDP) {
            g->dns_udp_fd = s->fd;
            g->dns_udp_ev = event_new(base, s->fd, EV_READ | EV_PERSIST, pdk__gw_on_dns_udp, g);
            if (g->dns_udp_ev)
                event_add(g->dns_udp_ev, NULL);
            continue;
        }
        evconnlistener_cb cb = s->kind == PDK_EGRESS_PROXY     ? on_proxy_accept
                               : s->kind == PDK_EGRESS_DNS_TCP ? pdk__gw_on_dns_tcp_accept
                                                               : on_capture_accept;
        struct evconnlistener *l = evconnlistener_new(
            base, cb, g, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, s->fd);
        if (!l) {
            pdk_warn("gateway: cannot serve a socket: %s", strerror(errno));
            close(s->fd);
            continue;
        }
        evconnlistener_set_error_cb(l, pdk__gw_on_accept_error);
        g->listeners[g->nlisteners++] = l;
    }
}

void pdk_gateway_finish(pdk_gateway *g)
{
    pdk__gw_tallies_flush(g);
}

void pdk_gateway_stats_get(const pdk_gateway *g, pdk_gateway_stats *out)
{
    *out = g->stats;
}

void pdk_gateway_free(pdk_gateway *g)
{
    if (!g)
        return;
    pdk__gw_tallies_flush(g);
    while (g->conns)
        pdk__gw_conn_free(g->conns);
    for (size_t i = 0; i < g->nlisteners; i++)
        evconnlistener_free(g->listeners[i]);
    if (g->dns_udp_ev)
        event_free(g->dns_udp_ev);
    if (g->dns_udp_fd >= 0)
        close(g->dns_udp_fd);
    if (g->diag_fd >= 0)
        close(g->diag_fd);
    free(g->owners);
    if (g->dns)
        evdns_base_free(g->dns, 1);
    pdk_dns_table_free(g->names);
    if (g->ask_timer)
        event_free(g->ask_timer);
    pdk_store_close(g->store);
    pdk__gw_limits_end(g);
    pdk__gw_masks_free(g);
    pdk__gw_credentials_free(g);
    free(g->state_dir);
    SSL_CTX_free(g->server_ctx);
    SSL_CTX_free(g->client_ctx);
    pdk_tls_ca_free(g->ca);
    free(g->session);
    free(g);
}

/* What paddock finds with dlsym (gateway.h). */
extern const pdk_gateway_module pdk_gateway_module_v1;
const pdk_gateway_module pdk_gateway_module_v1 = {
    .abi = PDK_GATEWAY_ABI,
    .create = pdk_gateway_new,
    .serve = pdk_gateway_serve,
    .stats = pdk_gateway_stats_get,
    .destroy = pdk_gateway_free,
    .ca_bundle = pdk_gateway_ca_bundle,
    .ca_pem = pdk_gateway_ca_pem,
    .finish = pdk_gateway_finish,
};
