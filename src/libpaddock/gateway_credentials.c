/* gateway_credentials.c: credentials the agent never sees (gateway_internal.h).
 *
 * The sandbox holds a placeholder; toward the hosts a credential is bound to, the gateway
 * sets its header ("Authorization: Bearer {token}") and replaces the placeholder wherever
 * it appears in the request's fields. Toward any other host a request that carries a
 * placeholder (in a field, the path or the query) is refused and recorded as an
 * exfiltration attempt: a placeholder is worth nothing elsewhere, but sending it there is
 * what an agent talked into leaking a token would do.
 */
#include "gateway_internal.h"

void pdk__gw_credentials_copy(pdk_gateway *g, const pdk_gateway_config *cfg)
{
    g->credential_count = cfg->credential_count;
    g->credentials = xcalloc(cfg->credential_count + 1, sizeof(*g->credentials));
    for (size_t i = 0; i < cfg->credential_count; i++) {
        g->credentials[i].policy = cfg->credentials[i].policy;
        g->credentials[i].value = xstrdup(cfg->credentials[i].value);
        g->credentials[i].placeholder = xstrdup(cfg->credentials[i].placeholder);
    }
}

void pdk__gw_credentials_free(pdk_gateway *g)
{
    for (size_t i = 0; i < g->credential_count; i++) {
        char *v = (char *)g->credentials[i].value;
        if (v)
            sodium_memzero(v, strlen(v));
        free(v);
        free((char *)g->credentials[i].placeholder);
    }
    free(g->credentials);
    g->credentials = NULL;
    g->credential_count = 0;
}

static bool bound(const pdk_credential *cred, const char *host)
{
    for (char **h = cred->hosts; h && *h; h++)
        if (pdk_net_host_matches(*h, host))
            return true;
    return false;
}

/* s with every needle replaced by with (new string), or NULL when needle is not in s. */
static char *replaced(const char *s, const char *needle, const char *with)
{
    if (!s || !strstr(s, needle))
        return NULL;
    pdk_buf b = {0};
    size_t nl = strlen(needle);
    for (const char *hit; (hit = strstr(s, needle));) {
        pdk_buf_append(&b, s, (size_t)(hit - s));
        pdk_buf_puts(&b, with);
        s = hit + nl;
    }
    pdk_buf_puts(&b, s);
    return pdk_buf_steal(&b);
}

static void refuse_exfiltration(gw_conn *c, const pdk_gateway_credential *gc, const char *where)
{
    json_t *ev = pdk__gw_request_event(c, "");
    json_object_set_new(ev, "credential", json_string(gc->policy->name));
    json_object_set_new(ev, "found_in", json_string(where));
    pdk__gw_audit(c->g, "credential.exfiltration", ev);
    fprintf(stderr,
            "paddock: blocked: a request to %s carried the placeholder of credential %s (in its "
            "%s), which is bound to other hosts\n",
            c->host, gc->policy->name, where);
    c->verdict.decision = PDK_DECISION_DENY;
    _cleanup_free_ char *why =
        xasprintf("the request carries the placeholder of credential %s, which may only go "
                  "to its own hosts",
                  gc->policy->name);
    pdk__gw_refuse(c, 403, "Forbidden", why);
}

bool pdk__gw_apply_credentials(gw_conn *c)
{
    pdk_gateway *g = c->g;
    pdk_http_head *h = c->req;
    for (size_t i = 0; i < g->credential_count; i++) {
        const pdk_gateway_credential *gc = &g->credentials[i];
        if (!bound(gc->policy, c->host)) {
            const char *where = NULL;
            for (size_t k = 0; k < h->header_count && !where; k++)
                if (strstr(h->headers[k].value, gc->placeholder))
                    where = h->headers[k].name;
            if (!where && h->target && strstr(h->target, gc->placeholder))
                where = "URL";
            if (where) {
                refuse_exfiltration(c, gc, where);
                return false;
            }
            continue;
        }
        bool used = false;
        for (size_t k = 0; k < h->header_count; k++) {
            _cleanup_free_ char *v = replaced(h->headers[k].value, gc->placeholder, gc->value);
            if (v) {
                _cleanup_free_ char *name = xstrdup(h->headers[k].name);
                pdk_error err = {0};
                (void)pdk_http_head_set(h, name, v, &err);
                sodium_memzero(v, strlen(v));
                used = true;
            }
        }
        if (gc->policy->inject_header) {
            _cleanup_free_ char *v = replaced(gc->policy->inject_value, "{token}", gc->value);
            pdk_error err = {0};
            if (v && pdk_http_head_set(h, gc->policy->inject_header, v, &err) == 0)
                used = true;
            if (v)
                sodium_memzero(v, strlen(v));
        }
        if (used) {
            json_t *ev = json_pack("{s:I, s:I, s:s, s:s}", "conn", (json_int_t)c->id, "seq",
                                   (json_int_t)c->seq, "credential", gc->policy->name, "host",
                                   c->host);
            pdk__gw_audit(g, "credential.used", ev);
        }
    }
    return true;
}
