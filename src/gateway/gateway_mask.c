/* gateway_mask.c: what goes into the sandbox, with every real secret masked
 * (gateway_internal.h).
 *
 * The real values are the redaction registry's (redact.h: stored values, minted tokens,
 * refresh tokens, app and client secrets, as they become known), made into one mask set
 * (secret_mask.h) that is made again when the registry changes; a response that began with
 * an older set keeps it to its end.
 *
 * Responses from a host a credential is bound to (the only hosts a value goes to, and so the
 * only ones that can echo it) are masked: the head (a value in a field or a field name:
 * Access-Control-Allow-Origin, X-Request-Id, Location), and the body as it streams, a
 * chunked one's trailer included, byte for byte so that the framing stays as it is. Their
 * requests asked for identity bodies (gateway_credentials.c); a body that comes encoded
 * anyway (gzip, br...) cannot be read for the value, and is refused with a 502 before
 * anything of it is sent. Each response that had a value masked is recorded as
 * credential.reflected, with where (never the value). Paddock's own answers (403 and 502
 * bodies, a provider's error text, the broker's answer) are masked too, whatever the host.
 */
#include "gateway_internal.h"

#include "gateway_headers.h"
#include "redact.h"


struct gw_masks {
    pdk_mask_set *set;
    uint64_t generation;
    unsigned refs; /* the gateway's, while it is the current one, and each response's */
};

struct gw_response {
    gw_masks *masks;
    int status;
    bool body; /* the body is masked as it streams */
    pdk_mask_stream stream;
    bool reported_body, reported_trailer;
};

static void add_value(void *arg, const char *value, const char *label)
{
    pdk_mask_set_add(arg, value, strlen(value), label);
}

static void masks_release(gw_masks *m)
{
    if (m && --m->refs == 0) {
        pdk_mask_set_free(m->set);
        free(m);
    }
}

/* The set of the values the registry has now. */
static gw_masks *current(pdk_gateway *g)
{
    uint64_t generation = pdk_redact_generation();
    if (!g->masks || g->masks->generation != generation) {
        gw_masks *m = xcalloc(1, sizeof(*m));
        m->set = pdk_mask_set_new();
        m->generation = generation;
        m->refs = 1;
        pdk_redact_values(add_value, m->set);
        masks_release(g->masks);
        g->masks = m;
    }
    return g->masks;
}

void pdk__gw_masks_free(pdk_gateway *g)
{
    masks_release(g->masks);
    g->masks = NULL;
}

char *pdk__gw_outgoing_text(pdk_gateway *g, const char *text)
{
    char *t = pdk_redact_values_text(text);                   /* a whole value: [REDACTED] */
    pdk_mask_text(current(g)->set, t, strlen(t), NULL, NULL); /* a part, an encoding: *** */
    return t;
}

static void reflected(gw_conn *c, const gw_response *r, int label, const char *where)
{
    json_t *ev = pdk__gw_request_event(c, "");
    json_object_set_new(ev, "credential", json_string(pdk_mask_set_label(r->masks->set, label)));
    json_object_set_new(ev, "found_in", json_string(where));
    json_object_set_new(ev, "status", json_integer(r->status));
    pdk__gw_audit(c->g, "credential.reflected", ev);
}

void pdk__gw_response_free(gw_conn *c)
{
    gw_response *r = c->response;
    if (!r)
        return;
    pdk_mask_stream_free(&r->stream);
    masks_release(r->masks);
    free(r);
    c->response = NULL;
}

/* The first value masked in a head: the field it was in. */
typedef struct head_find {
    const char *head;
    int label;
    char where[96];
} head_find;

static void head_found(void *arg, size_t offset, int label)
{
    head_find *f = arg;
    if (f->label >= 0)
        return;
    f->label = label;
    pdk_headers_response_where(f->head, offset, f->where, sizeof(f->where));
}

static bool response_has_body(const pdk_http_head *h)
{
    return h->framing == PDK_HTTP_FRAMING_CHUNKED || h->framing == PDK_HTTP_FRAMING_UNTIL_CLOSE ||
           (h->framing == PDK_HTTP_FRAMING_CONTENT_LENGTH && h->content_length > 0);
}

bool pdk__gw_response_head(gw_conn *c, const pdk_http_head *head, pdk_buf *out)
{
    pdk__gw_response_free(c); /* (a 1xx before it) */
    size_t start = out->len;
    pdk_http_head_serialize(head, out);
    if (!pdk__gw_host_bound(c))
        return true;
    gw_masks *m = current(c->g);
    if (pdk_mask_set_empty(m->set))
        return true;
    const char *coding = NULL;
    bool body = response_has_body(head) && !head->upgrade;
    if (pdk_headers_body_encoded(head, &coding)) {
        out->len = start;
        out->data[start] = '\0';
        _cleanup_free_ char *why = xasprintf(
            "%s answered with a %.32s body, which paddock cannot read for a credential's value "
            "(it asked for identity: the upstream should not encode its answer)",
            c->host, coding);
        pdk__gw_upstream_failed(c, why);
        return false;
    }
    gw_response *r = xcalloc(1, sizeof(*r));
    r->masks = m;
    m->refs++;
    r->status = head->status;
    c->response = r;
    head_find f = {.head = out->data + start, .label = -1};
    if (pdk_mask_text(m->set, out->data + start, out->len - start, head_found, &f))
        reflected(c, r, f.label, f.where);
    if (body) {
        r->body = true;
        pdk_mask_stream_init(&r->stream, m->set, head->framing == PDK_HTTP_FRAMING_CHUNKED);
    }
    return true;
}

static void report(gw_conn *c, gw_response *r)
{
    if (r->stream.found_body >= 0 && !r->reported_body) {
        r->reported_body = true;
        reflected(c, r, r->stream.found_body, "response body");
    }
    if (r->stream.found_trailer >= 0 && !r->reported_trailer) {
        r->reported_trailer = true;
        reflected(c, r, r->stream.found_trailer, "response trailer");
    }
}

void pdk__gw_response_body(gw_conn *c, const char *data, size_t len, struct evbuffer *out)
{
    gw_response *r = c->response;
    if (!r || !r->body) {
        evbuffer_add(out, data, len);
        return;
    }
    const char *go;
    size_t n;
    pdk_mask_stream_feed(&r->stream, data, len, &go, &n);
    if (n)
        evbuffer_add(out, go, n);
    report(c, r);
}

void pdk__gw_response_end(gw_conn *c, struct evbuffer *out)
{
    gw_response *r = c->response;
    if (r && r->body) {
        const char *go;
        size_t n;
        pdk_mask_stream_finish(&r->stream, &go, &n);
        if (n)
            evbuffer_add(out, go, n);
        report(c, r);
    }
    pdk__gw_response_free(c);
}
