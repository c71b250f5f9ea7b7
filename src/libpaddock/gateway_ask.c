/* gateway_ask.c: a request held while a human is asked (gateway_internal.h). */
#include "gateway_internal.h"

#include "display.h"
#include "redact.h"

static void poll_asks(evutil_socket_t fd, short what, void *arg);
#define ASK_POLL_MS   200
#define PREVIEW_BYTES 1024

/* The URL as shown to a human: query values redacted (names kept). */
static char *shown_url(const gw_conn *c)
{
    const pdk_http_head *h = c->req;
    bool https = h->scheme && strcmp(h->scheme, "https") == 0;
    bool default_port = c->port == (https ? 443 : 80);
    pdk_buf b = {0};
    bool v6 = strchr(c->host, ':') != NULL;
    pdk_buf_printf(&b, "%s://%s%s%s", https ? "https" : "http", v6 ? "[" : "", c->host,
                   v6 ? "]" : "");
    if (!default_port)
        pdk_buf_printf(&b, ":%u", (unsigned)c->port);
    pdk_buf_puts(&b, c->path ? c->path : "/");
    if (h->query) {
        pdk_buf_puts(&b, "?");
        _cleanup_free_ char *q = xstrdup(h->query);
        char *save = NULL;
        bool first = true;
        for (char *part = strtok_r(q, "&", &save); part; part = strtok_r(NULL, "&", &save)) {
            char *eq = strchr(part, '=');
            if (eq)
                *eq = '\0';
            pdk_buf_printf(&b, "%s%s%s", first ? "" : "&", part, eq ? "=..." : "");
            first = false;
        }
    }
    return pdk_buf_steal(&b);
}

/* Up to PREVIEW_BYTES of the body that came with the head, printable, redacted. */
static char *body_preview(gw_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->client);
    size_t n = evbuffer_get_length(in);
    if (n == 0 || c->req->framing == PDK_HTTP_FRAMING_NONE)
        return NULL;
    if (n > PREVIEW_BYTES)
        n = PREVIEW_BYTES;
    char raw[PREVIEW_BYTES];
    ev_ssize_t got = evbuffer_copyout(in, raw, n);
    pdk_buf b = {0};
    for (ev_ssize_t i = 0; i < got; i++) {
        unsigned char ch = (unsigned char)raw[i];
        if (ch >= 0x20 && ch < 0x7f)
            pdk_buf_append(&b, &raw[i], 1);
        else
            pdk_buf_printf(&b, "\\x%02x", ch);
    }
    if (evbuffer_get_length(in) > (size_t)got)
        pdk_buf_puts(&b, "...");
    _cleanup_free_ char *text = pdk_buf_steal(&b);
    return pdk_redacted(text);
}

static void arm_ask_timer(pdk_gateway *g)
{
    struct timeval tv = {0, ASK_POLL_MS * 1000};
    if (!g->ask_timer)
        g->ask_timer = evtimer_new(g->base, poll_asks, g);
    if (g->ask_timer && !evtimer_pending(g->ask_timer, NULL))
        evtimer_add(g->ask_timer, &tv);
}

/* Hold the request and ask a human (approvals.h); answered in poll_asks. */
void pdk__gw_ask(gw_conn *c, const char *how)
{
    pdk_gateway *g = c->g;
    pdk_error err = {0};
    if (!g->store && pdk_store_open(g->state_dir, true, &g->store, &err) < 0) {
        c->verdict.decision = PDK_DECISION_DENY;
        _cleanup_free_ char *why = xasprintf("cannot ask for approval: %s", err.message);
        pdk__gw_refuse(c, 403, "Forbidden", why);
        return;
    }
    if (g->session_named && pdk_approval_always(g->store, g->session, how)) {
        json_t *o = json_pack("{s:I, s:s, s:s}", "conn", (json_int_t)c->id, "rule", how, "how",
                              "always, answered before");
        pdk__gw_audit(g, "approval.answered", o);
        pdk__gw_proceed(c, how);
        return;
    }
    _cleanup_free_ char *url = shown_url(c);
    json_t *names = json_array();
    for (size_t i = 0; i < c->req->header_count; i++)
        json_array_append_new(names, json_string(c->req->headers[i].name));
    json_t *request = json_pack("{s:s, s:s, s:s, s:i, s:o}", "method", c->req->method, "url", url,
                                "host", c->host, "port", (int)c->port, "headers", names);
    char *preview = body_preview(c);
    if (preview)
        json_object_set_new(request, "body_preview", json_string(preview));
    free(preview);
    pdk_approval a = {
        .session = xstrdup(g->session),
        .parents = json_array(),
        .argv = json_array(),
        .rule = xstrdup(how),
        .reason = xstrdup(c->verdict.reason),
        .request = request,
    };
    if (pdk_approval_create(g->store, &a, &err) < 0) {
        pdk_approval_clear(&a);
        c->verdict.decision = PDK_DECISION_DENY;
        _cleanup_free_ char *why = xasprintf("cannot ask for approval: %s", err.message);
        pdk__gw_refuse(c, 403, "Forbidden", why);
        return;
    }
    json_t *asked = json_pack("{s:s, s:I, s:O, s:s, s:s}", "id", a.id, "conn", (json_int_t)c->id,
                              "request", a.request, "rule", how, "reason", c->verdict.reason);
    if (!pdk__gw_audit_required(g, "approval.asked", asked, &err)) {
        (void)pdk_approval_expire(g->store, a.id, &err);
        pdk_approval_clear(&a);
        c->verdict.decision = PDK_DECISION_DENY;
        pdk__gw_refuse(c, 503, "Service Unavailable", "the request cannot be recorded");
        return;
    }
    _cleanup_free_ char *method_shown = pdk_display(c->req->method);
    _cleanup_free_ char *url_shown = pdk_display(url);
    pdk_notice(PDK_NOTICE_APPROVAL, PDK_NOTICE_PRINT,
               "approval %s: %s %s needs a human (%s: %s); answer with paddock approve %s, or "
               "paddock deny %s",
               a.id, method_shown, url_shown, how, c->verdict.reason, a.id, a.id);
    snprintf(c->approval_id, sizeof(c->approval_id), "%s", a.id);
    pdk_approval_clear(&a);
    c->state = ST_ASKING;
    c->ask_deadline_ns =
        pdk_now_monotonic_ns() + (uint64_t)g->policy->approval_timeout_seconds * 1000000000ULL;
    bufferevent_disable(c->client, EV_READ); /* the body waits in the socket */
    g->asking++;
    arm_ask_timer(g);
}

/* reason: the answer's own (paddock deny --reason), NULL when it gave none */
static void answered(gw_conn *c, bool allow, const char *state, const char *by, const char *reason,
                     const char *why)
{
    pdk_gateway *g = c->g;
    g->asking--;
    c->state = ST_HEAD; /* no longer asking (conn_free would expire it) */
    json_t *o =
        json_pack("{s:s, s:I, s:s, s:s, s:o}", "id", c->approval_id, "conn", (json_int_t)c->id,
                  "state", state, "by", by ? by : "", "reason", pdk_display_json_string(reason));
    pdk_error err = {0};
    if (!pdk__gw_audit_required(g, "approval.answered", o, &err))
        allow = false;
    _cleanup_free_ char *how = pdk_policy_describe_net_rule(g->policy, c->verdict.rule);
    if (allow) {
        c->verdict.decision = PDK_DECISION_ALLOW;
        pdk__gw_proceed(c, how);
        return;
    }
    c->verdict.decision = PDK_DECISION_DENY;
    pdk__gw_refuse(c, 403, "Forbidden", why);
}

static void poll_asks(evutil_socket_t fd, short what, void *arg)
{
    pdk_gateway *g = arg;
    uint64_t now = pdk_now_monotonic_ns();
    for (gw_conn *c = g->conns, *next; c; c = next) {
        next = c->next; /* c may end here */
        if (c->state != ST_ASKING)
            continue;
        pdk_approval a = {0};
        pdk_error err = {0};
        if (pdk_approval_get(g->store, c->approval_id, &a, &err) < 0)
            continue;
        if (a.state == PDK_APPROVAL_APPROVED) {
            answered(c, true, "approved", a.answered_by, a.answer_reason, NULL);
        } else if (a.state == PDK_APPROVAL_DENIED) {
            _cleanup_free_ char *why =
                xasprintf("denied by %s%s%s (approval %s)",
                          a.answered_by ? a.answered_by : "a human", a.answer_reason ? ": " : "",
                          a.answer_reason ? a.answer_reason : "", c->approval_id);
            answered(c, false, "denied", a.answered_by, a.answer_reason, why);
        } else if (a.state == PDK_APPROVAL_PENDING && now >= c->ask_deadline_ns &&
                   pdk_approval_expire(g->store, c->approval_id, &err) == 1) {
            bool allow = g->policy->approval_on_timeout == PDK_DECISION_ALLOW;
            _cleanup_free_ char *why = xasprintf(
                "no answer to approval %s in time: denied (approvals.on_timeout)", c->approval_id);
            answered(c, allow, "expired", NULL, NULL, why);
        }
        pdk_approval_clear(&a);
    }
    if (g->asking > 0)
        arm_ask_timer(g);
}
