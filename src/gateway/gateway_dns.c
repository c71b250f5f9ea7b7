/* gateway_dns.c: the DNS stub's server (gateway_internal.h). */
#include "gateway_internal.h"

static bool could_allow(void *arg, const char *name)
{
    pdk_gateway *g = arg;
    return pdk_net_rules_could_reach(g->rules, name);
}

static void dns_outcome(pdk_gateway *g, const pdk_dns_outcome *o, const char *transport)
{
    g->stats.dns_queries++;
    if (!o->blocked)
        return;
    g->stats.dns_blocked++;
    const char *type = pdk_dns_type_name(o->qtype);
    json_t *ev = json_pack("{s:s, s:s, s:s}", "name", o->name, "transport", transport, "rcode",
                           pdk_dns_rcode_name(o->rcode) ? pdk_dns_rcode_name(o->rcode) : "?");
    if (type)
        json_object_set_new(ev, "type", json_string(type));
    else
        json_object_set_new(ev, "type", json_integer(o->qtype));
    pdk__gw_audit_counted(g, GW_TALLY_DNS_BLOCKED, ev); /* a flood is counted, not a row each */
}

void pdk__gw_on_dns_udp(evutil_socket_t fd, short what, void *arg)
{
    pdk_gateway *g = arg;
    for (int i = 0; i < 64; i++) {
        uint8_t query[4096], answer[PDK_DNS_RESPONSE_MAX];
        struct sockaddr_storage from;
        socklen_t flen = sizeof(from);
        ssize_t n = recvfrom(fd, query, sizeof(query), 0, (struct sockaddr *)&from, &flen);
        if (n < 0)
            return;
        pdk_dns_outcome o;
        size_t len = pdk_dns_answer(g->names, could_allow, g, PDK_DNS_UDP, query, (size_t)n, answer,
                                    sizeof(answer), &o);
        dns_outcome(g, &o, "udp");
        if (len > 0)
            (void)sendto(fd, answer, len, 0, (struct sockaddr *)&from, flen);
    }
}

static void dns_tcp_read(struct bufferevent *bev, void *arg)
{
    gw_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        size_t avail = evbuffer_get_length(in);
        const uint8_t *buf = evbuffer_pullup(in, (ev_ssize_t)(avail < 65537 ? avail : 65537));
        const uint8_t *msg;
        size_t mlen, consumed;
        int r = pdk_dns_tcp_deframe(buf, avail < 65537 ? avail : 65537, &msg, &mlen, &consumed);
        if (r < 0) {
            pdk__gw_conn_free(c);
            return;
        }
        if (r == 0)
            return;
        uint8_t out[PDK_DNS_TCP_PREFIX + PDK_DNS_RESPONSE_MAX];
        pdk_dns_outcome o;
        size_t n = pdk_dns_answer(c->g->names, could_allow, c->g, PDK_DNS_TCP, msg, mlen,
                                  out + PDK_DNS_TCP_PREFIX, sizeof(out) - PDK_DNS_TCP_PREFIX, &o);
        dns_outcome(c->g, &o, "tcp");
        if (n)
            n = pdk_dns_tcp_frame(out + PDK_DNS_TCP_PREFIX, n, out, sizeof(out));
        evbuffer_drain(in, consumed);
        if (n)
            bufferevent_write(bev, out, n);
    }
}

static void dns_tcp_event(struct bufferevent *bev, short what, void *arg)
{
    pdk__gw_conn_free(arg);
}

void pdk__gw_on_dns_tcp_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                               int len, void *arg)
{
    pdk_gateway *g = arg;
    gw_conn *c = pdk__gw_conn_new(g, CONN_DNS_TCP, fd);
    if (!c)
        return;
    struct timeval idle = {DNS_TCP_IDLE_SEC, 0};
    bufferevent_set_timeouts(c->client, &idle, &idle);
    bufferevent_setcb(c->client, dns_tcp_read, NULL, dns_tcp_event, c);
    bufferevent_enable(c->client, EV_READ | EV_WRITE);
}
