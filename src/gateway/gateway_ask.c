/* gateway_ask.c: a request held while a human is asked (gateway_internal.h). */
#include "gateway_internal.h"

#include "display.h"
#include "redact.h"

#include <inttypes.h>

static void poll_asks(evutil_socket_t fd, short what, void *arg);
#define ASK_POLL_MS       200
#define PREVIEW_BYTES     4096 /* of a held body's content, in its approval */
#define HELD_BODY_WAIT_MS 2000 /* how long an announced body may take to arrive */

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

/* ---- the body, held before asking ---- */

/* What of the request's body the client's input buffer holds: it stays there (the parser
 * reads it once approved), only looked at. */
typedef struct held_body {
    pdk_body_prefix seen;
    pdk_buf preview; /* the first PREVIEW_BYTES of content */
} held_body;

static void held_body_read(gw_conn *c, held_body *hb)
{
    *hb = (held_body){0};
    struct evbuffer *in = bufferevent_get_input(c->client);
    size_t len = evbuffer_get_length(in);
    if (len > PDK_GW_HELD_BODY_MAX)
        len = PDK_GW_HELD_BODY_MAX;
    const char *data = len ? (const char *)evbuffer_pullup(in, (ev_ssize_t)len) : "";
    hb->seen =
        pdk_body_prefix_scan(c->req->framing == PDK_HTTP_FRAMING_CHUNKED, c->req->content_length,
                             data ? data : "", data ? len : 0, &hb->preview, PREVIEW_BYTES);
}

/* The body's fields of the approval's request (held_body), and what a human should know
 * about what is not shown. */
static void held_body_describe(gw_conn *c, const held_body *hb, json_t *request)
{
    const pdk_http_head *h = c->req;
    bool chunked = h->framing == PDK_HTTP_FRAMING_CHUNKED;
    json_object_set_new(request, "body_bytes", json_integer((json_int_t)hb->seen.content));
    json_object_set_new(request, "body_announced",
                        chunked ? json_null() : json_integer((json_int_t)h->content_length));
    json_object_set_new(request, "body_complete", json_boolean(hb->seen.complete));
    if (hb->preview.len) {
        pdk_buf b = {0};
        for (size_t i = 0; i < hb->preview.len; i++) {
            unsigned char ch = (unsigned char)hb->preview.data[i];
            if (ch >= 0x20 && ch < 0x7f)
                pdk_buf_append(&b, &hb->preview.data[i], 1);
            else
                pdk_buf_printf(&b, "\\x%02x", ch);
        }
        if (hb->seen.content > hb->preview.len)
            pdk_buf_puts(&b, "...");
        _cleanup_free_ char *text = pdk_buf_steal(&b);
        _cleanup_free_ char *redacted = pdk_redacted(text);
        json_object_set_new(request, "body_preview", json_string(redacted));
    }
    _cleanup_free_ char *announced =
        chunked ? xstrdup("chunked, size unknown")
                : xasprintf("%" PRIu64 " bytes announced", h->content_length);
    char *note = NULL;
    if (!hb->seen.complete && hb->seen.raw >= PDK_GW_HELD_BODY_MAX)
        note =
            xasprintf("body not received whole: %s, the first %" PRIu64 " held (paddock holds at "
                      "most %d bytes before asking); the rest is sent unseen if approved",
                      announced, hb->seen.content, PDK_GW_HELD_BODY_MAX);
    else if (!hb->seen.complete)
        note = xasprintf("body not received yet: %s, %" PRIu64 " received in %d ms%s", announced,
                         hb->seen.content, HELD_BODY_WAIT_MS,
                         hb->seen.content ? " (shown); the rest is sent unseen if approved"
                                          : "; it is sent unseen if approved");
    else if (hb->seen.content > hb->preview.len)
        note = xasprintf("body of %" PRIu64 " bytes, the first %d shown", hb->seen.content,
                         PREVIEW_BYTES);
    if (note)
        json_object_set_new(request, "body_note", json_string(note));
    free(note);
}

static void arm_ask_timer(pdk_gateway *g)
{
    struct timeval tv = {0, ASK_POLL_MS * 1000};
    if (!g->ask_timer)
        g->ask_timer = evtimer_new(g->base, poll_asks, g);
    if (g->ask_timer && !evtimer_pending(g->ask_timer, NULL))
        evtimer_add(g->ask_timer, &tv);
}

/* The approval for the held request (its body as held_body_read finds it): recorded, then
 * answered in poll_asks. */
static void ask_now(gw_conn *c)
{
    pdk_gateway *g = c->g;
    pdk_error err = {0};
    _cleanup_free_ char *how = pdk_policy_describe_net_rule(g->policy, c->verdict.rule);
    c->body_wait_ns = 0;
    bufferevent_setwatermark(c->client, EV_READ, 0, 0);
    bufferevent_disable(c->client, EV_READ); /* the rest of the body waits in the socket */
    _cleanup_free_ char *url = shown_url(c);
    json_t *names = json_array();
    for (size_t i = 0; i < c->req->header_count; i++)
        json_array_append_new(names, json_string(c->req->headers[i].name));
    uint64_t limit_s = (c->ask_deadline_ns - c->t_asked_ns) / 1000000000ULL;
    json_t *request = json_pack("{s:s, s:s, s:s, s:i, s:o, s:I}", "method", c->req->method, "url",
                                url, "host", c->host, "port", (int)c->port, "headers", names,
                                "wait_limit_seconds", (json_int_t)limit_s);
    if (c->req->framing == PDK_HTTP_FRAMING_CHUNKED ||
        (c->req->framing == PDK_HTTP_FRAMING_CONTENT_LENGTH && c->req->content_length > 0)) {
        held_body hb;
        held_body_read(c, &hb);
        held_body_describe(c, &hb, request);
        pdk_buf_free_secret(&hb.preview);
    }
    pdk_approval a = {
        .session = xstrdup(g->session),
        .parents = json_array(),
        .argv = json_array(),
        .rule = xstrdup(how),
        .reason = xstrdup(c->verdict.reason),
        .request = request,
    };
    c->state = ST_HEAD; /* (a refusal below: not asking any more) */
    g->asking--;
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
    const char *note = json_string_value(json_object_get(request, "body_note"));
    pdk_notice(PDK_NOTICE_APPROVAL, PDK_NOTICE_PRINT,
               "approval %s: %s %s needs a human (%s: %s)%s%s; answer with paddock approve %s, "
               "or paddock deny %s, within %llus",
               a.id, method_shown, url_shown, how, c->verdict.reason, note ? "; " : "",
               note ? note : "", a.id, a.id, (unsigned long long)limit_s);
    snprintf(c->approval_id, sizeof(c->approval_id), "%s", a.id);
    pdk_approval_clear(&a);
    c->state = ST_ASKING;
    g->asking++;
    arm_ask_timer(g);
}

/* The client's bytes while its body is awaited (held, not consumed). */
static void held_body_more(struct bufferevent *bev, void *arg)
{
    gw_conn *c = arg;
    if (c->state != ST_ASKING || c->approval_id[0])
        return;
    held_body hb;
    held_body_read(c, &hb);
    pdk_buf_free_secret(&hb.preview);
    if (hb.seen.complete || hb.seen.raw >= PDK_GW_HELD_BODY_MAX)
        ask_now(c);
}

static void held_event(struct bufferevent *bev, short what, void *arg)
{
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        pdk__gw_conn_free(arg); /* the client went away: its approval (if any) expires */
}

/* Hold the request and ask a human (approvals.h): its body first (up to
 * PDK_GW_HELD_BODY_MAX bytes, for up to HELD_BODY_WAIT_MS), then the approval. At most
 * approvals.max_held_requests are held at once; each for approvals.request_timeout at most,
 * or approvals.timeout when that is shorter (then timed_out). */
void pdk__gw_ask(gw_conn *c, const char *how)
{
    pdk_gateway *g = c->g;
    const pdk_policy *p = g->policy;
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
    if (g->asking >= p->approval_max_held) {
        c->verdict.decision = PDK_DECISION_DENY;
        _cleanup_free_ char *why = xasprintf(
            "%zu requests are held for a human already, the most one sandbox may have "
            "(approvals.max_held_requests): answer those first (paddock approvals), or raise "
            "the key",
            g->asking);
        pdk__gw_refuse(c, 429, "Too Many Requests", why);
        return;
    }
    uint64_t now = pdk_now_monotonic_ns();
    c->ask_limit_is_hold = p->approval_request_timeout_seconds <= p->approval_timeout_seconds;
    int64_t limit_s =
        c->ask_limit_is_hold ? p->approval_request_timeout_seconds : p->approval_timeout_seconds;
    c->t_asked_ns = now;
    c->ask_deadline_ns = now + (uint64_t)limit_s * 1000000000ULL;
    c->approval_id[0] = '\0';
    c->state = ST_ASKING;
    g->asking++;
    bool has_body =
        c->req->framing == PDK_HTTP_FRAMING_CHUNKED ||
        (c->req->framing == PDK_HTTP_FRAMING_CONTENT_LENGTH && c->req->content_length > 0);
    if (!has_body) {
        ask_now(c);
        return;
    }
    /* The body first: a client that waits for 100 Continue gets it now (not again when
     * the request goes upstream). */
    if (c->req->expect_continue) {
        pdk_http_head_remove(c->req, "Expect");
        c->req->expect_continue = false;
        evbuffer_add_printf(bufferevent_get_output(c->client), "HTTP/1.1 100 Continue\r\n\r\n");
    }
    c->body_wait_ns = now + HELD_BODY_WAIT_MS * 1000000ULL;
    bufferevent_setcb(c->client, held_body_more, NULL, held_event, c);
    bufferevent_setwatermark(c->client, EV_READ, 0, PDK_GW_HELD_BODY_MAX);
    bufferevent_enable(c->client, EV_READ);
    arm_ask_timer(g);
    held_body_more(c->client, c); /* what came with the head */
}

/* reason: the answer's own (paddock deny --reason), NULL when it gave none; a refusal
 * answers status */
static void answered_status(gw_conn *c, bool allow, const char *state, const char *by,
                            const char *reason, const char *why, int status,
                            const char *status_text)
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
    pdk__gw_refuse(c, status, status_text, why);
}

static void answered(gw_conn *c, bool allow, const char *state, const char *by, const char *reason,
                     const char *why)
{
    answered_status(c, allow, state, by, reason, why, 403, "Forbidden");
}

/* No answer within the request's limit: approvals.request_timeout (its client gives up
 * soon: refused with 504, never sent later), or approvals.timeout when that is shorter
 * (403); approvals.on_timeout: allow lets it go on instead, its client still waiting. */
static void timed_out(gw_conn *c)
{
    pdk_gateway *g = c->g;
    const pdk_policy *p = g->policy;
    bool allow = p->approval_on_timeout == PDK_DECISION_ALLOW;
    bool hold = c->ask_limit_is_hold;
    const char *key = hold ? "approvals.request_timeout" : "approvals.timeout";
    long long limit =
        (long long)(hold ? p->approval_request_timeout_seconds : p->approval_timeout_seconds);
    _cleanup_free_ char *expiry =
        xasprintf("no answer within %llds (%s): %s", limit, key,
                  allow  ? "allowed (approvals.on_timeout)"
                  : hold ? "the request was refused with 504 and never sent"
                         : "denied (approvals.on_timeout), never sent");
    pdk_error err = {0};
    if (pdk_approval_expire_because(g->store, c->approval_id, expiry, &err) != 1)
        return; /* an answer came first: the next poll reads it */
    if (allow) {
        answered(c, true, "expired", NULL, "approvals.on_timeout: allow", NULL);
        return;
    }
    if (!hold) {
        _cleanup_free_ char *why = xasprintf(
            "no answer to approval %s in time: denied (approvals.on_timeout)", c->approval_id);
        answered(c, false, "expired", NULL, NULL, why);
        return;
    }
    _cleanup_free_ char *why =
        xasprintf("no answer to approval %s within %llds, the most a held request waits "
                  "(approvals.request_timeout; raise it if the client waits longer): refused, "
                  "never sent",
                  c->approval_id, limit);
    answered_status(c, false, "expired", NULL, "approvals.request_timeout", why, 504,
                    "Gateway Timeout");
}

static void poll_asks(evutil_socket_t fd, short what, void *arg)
{
    pdk_gateway *g = arg;
    uint64_t now = pdk_now_monotonic_ns();
    for (gw_conn *c = g->conns, *next; c; c = next) {
        next = c->next; /* c may end here */
        if (c->state != ST_ASKING)
            continue;
        if (!c->approval_id[0]) { /* its body is awaited */
            if (now >= c->body_wait_ns)
                ask_now(c);
            continue;
        }
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
        } else if (a.state == PDK_APPROVAL_PENDING && now >= c->ask_deadline_ns) {
            timed_out(c);
        }
        pdk_approval_clear(&a);
    }
    if (g->asking > 0)
        arm_ask_timer(g);
}
