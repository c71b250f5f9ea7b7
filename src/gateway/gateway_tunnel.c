/* gateway_tunnel.c: tunnels (gateway_internal.h). */
#include "gateway_internal.h"

static void tunnel_finish(gw_conn *c);
static void tunnel_idle_finish(gw_conn *c);

/* Whether a tunnel's bytes have not moved either way for network.limits.idle_timeout. */
static bool tunnel_idle(const gw_conn *c)
{
    return pdk_now_monotonic_ns() - c->moved_ns >= (uint64_t)c->g->idle.tv_sec * 1000000000ULL;
}
#define SPLICE_PIPE_SIZE (1 << 20)
#define SPLICE_ROUNDS    16 /* pipe-fulls a callback moves before it lets others run */

struct splice_dir {
    gw_conn *c;
    int from, to;
    int pipe_r, pipe_w;
    size_t in_pipe;
    bool eof, shut;
    struct event *read_ev, *write_ev;
    uint64_t *count;
};

void pdk__gw_splice_free(splice_dir *d)
{
    if (!d)
        return;
    if (d->read_ev)
        event_free(d->read_ev);
    if (d->write_ev)
        event_free(d->write_ev);
    if (d->pipe_r >= 0)
        close(d->pipe_r);
    if (d->pipe_w >= 0)
        close(d->pipe_w);
    free(d);
}

/* Move what can be moved one way; false when the tunnel is over (an error). */
static bool splice_pump(splice_dir *d)
{
    for (int round = 0; round < SPLICE_ROUNDS; round++) {
        while (d->in_pipe > 0) {
            ssize_t n =
                splice(d->pipe_r, NULL, d->to, NULL, d->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                d->in_pipe -= (size_t)n;
                *d->count += (uint64_t)n;
                d->c->moved_ns = pdk_now_monotonic_ns();
                continue;
            }
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && errno == EAGAIN) { /* the receiver is slower: wait for it */
                event_del(d->read_ev);
                event_add(d->write_ev, &d->c->g->idle);
                return true;
            }
            return false;
        }
        event_del(d->write_ev);
        if (d->eof) {
            if (!d->shut) {
                shutdown(d->to, SHUT_WR);
                d->shut = true;
            }
            event_del(d->read_ev);
            return true;
        }
        ssize_t n = splice(d->from, NULL, d->pipe_w, NULL, SPLICE_PIPE_SIZE,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            d->in_pipe += (size_t)n;
            continue;
        }
        if (n == 0) {
            d->eof = true;
            continue;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN) {
            event_add(d->read_ev, &d->c->g->idle);
            return true;
        }
        return false;
    }
    event_add(d->read_ev, &d->c->g->idle); /* more to come: after the others had their turn */
    return true;
}

static void on_splice(evutil_socket_t fd, short what, void *arg)
{
    splice_dir *d = arg;
    gw_conn *c = d->c;
    if (what == EV_TIMEOUT) { /* (a persistent event's timeout is set again by itself) */
        if (tunnel_idle(c))
            tunnel_idle_finish(c);
        return;
    }
    if (!splice_pump(d) || (c->splice[0]->shut && c->splice[1]->shut))
        tunnel_finish(c);
}

static splice_dir *splice_new(gw_conn *c, int from, int to, uint64_t *count)
{
    int p[2];
    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
        return NULL;
    (void)fcntl(p[1], F_SETPIPE_SZ, SPLICE_PIPE_SIZE);
    splice_dir *d = xcalloc(1, sizeof(*d));
    *d = (splice_dir){
        .c = c, .from = from, .to = to, .pipe_r = p[0], .pipe_w = p[1], .count = count};
    d->read_ev = event_new(c->g->base, from, EV_READ | EV_PERSIST, on_splice, d);
    d->write_ev = event_new(c->g->base, to, EV_WRITE | EV_PERSIST, on_splice, d);
    if (!d->read_ev || !d->write_ev) {
        pdk__gw_splice_free(d);
        return NULL;
    }
    return d;
}

/* Once nothing is left in the bufferevents' buffers, a plain tunnel goes on with splice. */
static void maybe_splice(gw_conn *c)
{
    if (c->tls_client || c->sni_check || c->splice[0] || c->client_eof || c->upstream_eof ||
        !c->upstream)
        return;
    if (evbuffer_get_length(bufferevent_get_input(c->client)) ||
        evbuffer_get_length(bufferevent_get_output(c->client)) ||
        evbuffer_get_length(bufferevent_get_input(c->upstream)) ||
        evbuffer_get_length(bufferevent_get_output(c->upstream)))
        return;
    int cfd = bufferevent_getfd(c->client), ufd = bufferevent_getfd(c->upstream);
    splice_dir *up = splice_new(c, cfd, ufd, &c->up_bytes);
    splice_dir *down = up ? splice_new(c, ufd, cfd, &c->down_bytes) : NULL;
    if (!down) {
        pdk__gw_splice_free(up);
        return; /* the bufferevents go on */
    }
    bufferevent_disable(c->client, EV_READ | EV_WRITE);
    bufferevent_disable(c->upstream, EV_READ | EV_WRITE);
    c->splice[0] = up;
    c->splice[1] = down;
    event_add(up->read_ev, &c->g->idle);
    event_add(down->read_ev, &c->g->idle);
}

static void tunnel_pump(gw_conn *c, struct bufferevent *from, struct bufferevent *to,
                        uint64_t *count)
{
    struct evbuffer *in = bufferevent_get_input(from);
    size_t n = evbuffer_get_length(in);
    if (n == 0)
        return;
    *count += n;
    c->moved_ns = pdk_now_monotonic_ns();
    evbuffer_add_buffer(bufferevent_get_output(to), in);
    if (evbuffer_get_length(bufferevent_get_output(to)) >= QUEUE_HIGH_WATER)
        bufferevent_disable(from, EV_READ);
}

static void tunnel_finish(gw_conn *c)
{
    pdk__gw_audit(c->g, "net.tunnel_closed", pdk__gw_done_event(c));
    pdk__gw_conn_free(c);
}

/* Nothing moved either way for network.limits.idle_timeout. */
static void tunnel_idle_finish(gw_conn *c)
{
    c->g->stats.idle_closed++;
    json_t *ev = pdk__gw_done_event(c);
    json_object_set_new(ev, "idle_timeout_s", json_integer((json_int_t)c->g->idle.tv_sec));
    pdk__gw_audit(c->g, "net.tunnel_closed", ev);
    pdk__gw_conn_free(c);
}

/* One side has ended: pass the end on once what it sent is delivered. */
static void tunnel_half_close(gw_conn *c)
{
    /* (TLS has no half close: an intercepted tunnel ends when both sides have.) */
    if (!c->tls_client && c->client_eof && c->upstream &&
        evbuffer_get_length(bufferevent_get_output(c->upstream)) == 0)
        shutdown(bufferevent_getfd(c->upstream), SHUT_WR);
    if (!c->tls_client && c->upstream_eof &&
        evbuffer_get_length(bufferevent_get_output(c->client)) == 0)
        shutdown(bufferevent_getfd(c->client), SHUT_WR);
    bool client_flushed = evbuffer_get_length(bufferevent_get_output(c->client)) == 0;
    bool upstream_flushed =
        !c->upstream || evbuffer_get_length(bufferevent_get_output(c->upstream)) == 0;
    if (c->client_eof && c->upstream_eof && client_flushed && upstream_flushed)
        tunnel_finish(c);
}

/* A passthrough tunnel's first bytes: a ClientHello for the host it was allowed for, else
 * it ends (a CONNECT to an allowed host carrying TLS for another is domain fronting).
 * False when the connection is gone. */
static bool check_passthrough_sni(gw_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->client);
    size_t n = evbuffer_get_length(in);
    const uint8_t *p = n ? evbuffer_pullup(in, (ev_ssize_t)n) : NULL;
    char name[PDK_TLS_SNI_MAX + 1];
    pdk_tls_sni_result r = n > PDK_TLS_HELLO_MAX + 4096
                               ? PDK_TLS_SNI_INVALID
                               : pdk_tls_client_hello_sni(p, n, name, sizeof(name));
    if (r == PDK_TLS_SNI_NEED_MORE)
        return true;
    pdk_ip ip;
    bool literal = pdk_ip_parse_host(c->host, &ip) == PDK_HOST_ADDRESS;
    char norm[PDK_DNS_NAME_MAX + 1];
    const char *why = NULL;
    if (r == PDK_TLS_SNI_INVALID)
        why = "a passthrough tunnel carries TLS, and this is not a ClientHello";
    else if (r == PDK_TLS_SNI_ABSENT && !literal)
        why = "the ClientHello names no server, and the host is a name";
    else if (r == PDK_TLS_SNI_FOUND &&
             strcmp(pdk_dns_normalize_name(name, norm) ? norm : name, c->host) != 0)
        why = "the TLS server name is not the host the tunnel was allowed for";
    if (!why) {
        c->sni_check = false;
        return true;
    }
    json_t *ev = pdk__gw_request_event(c, "");
    json_object_set_new(ev, "sni", json_string(r == PDK_TLS_SNI_FOUND ? name : ""));
    json_object_set_new(ev, "refused", json_string(why));
    pdk__gw_audit(c->g, "net.connect", ev);
    c->g->stats.denied++;
    pdk__gw_conn_free(c);
    return false;
}

static void tunnel_read(struct bufferevent *bev, void *arg)
{
    gw_conn *c = arg;
    if (bev == c->client && c->sni_check && !check_passthrough_sni(c))
        return;
    if (bev == c->client && c->sni_check)
        return; /* the rest of the ClientHello first */
    if (bev == c->client)
        tunnel_pump(c, c->client, c->upstream, &c->up_bytes);
    else
        tunnel_pump(c, c->upstream, c->client, &c->down_bytes);
}

static void tunnel_write(struct bufferevent *bev, void *arg)
{
    gw_conn *c = arg;
    /* Drained below the low-water mark: the other side may read again. */
    struct bufferevent *other = bev == c->client ? c->upstream : c->client;
    bool other_eof = bev == c->client ? c->upstream_eof : c->client_eof;
    if (!other_eof)
        bufferevent_enable(other, EV_READ);
    tunnel_half_close(c);
    maybe_splice(c);
}

static void tunnel_event(struct bufferevent *bev, short what, void *arg)
{
    gw_conn *c = arg;
    if (what & BEV_EVENT_TIMEOUT) {
        /* One side was quiet that long; the tunnel is idle only if the other was too.
         * (libevent stopped what timed out: it goes on.) */
        if (tunnel_idle(c)) {
            tunnel_idle_finish(c);
            return;
        }
        bufferevent_enable(bev, (what & BEV_EVENT_READING) ? EV_READ : EV_WRITE);
        return;
    }
    if (what & BEV_EVENT_ERROR) {
        tunnel_finish(c);
        return;
    }
    if (what & BEV_EVENT_EOF) {
        if (bev == c->client)
            c->client_eof = true;
        else
            c->upstream_eof = true;
        tunnel_read(bev, c); /* what came before the end */
        bufferevent_disable(bev, EV_READ);
        tunnel_half_close(c);
    }
}

void pdk__gw_start_tunnel(gw_conn *c)
{
    c->state = ST_TUNNEL;
    bufferevent_setcb(c->client, tunnel_read, tunnel_write, tunnel_event, c);
    bufferevent_setcb(c->upstream, tunnel_read, tunnel_write, tunnel_event, c);
    pdk__gw_bound_queues(c);
    /* Idle: neither side's bytes moved (tunnel_event; the spliced tunnel's events too). */
    c->moved_ns = pdk_now_monotonic_ns();
    bufferevent_set_timeouts(c->upstream, &c->g->idle, &c->g->idle);
    bufferevent_enable(c->client, EV_READ | EV_WRITE);
    bufferevent_enable(c->upstream, EV_READ | EV_WRITE);
    /* Bytes the client sent along with its head (pipelined after CONNECT). */
    if (evbuffer_get_length(bufferevent_get_input(c->client)) > 0) {
        if (c->sni_check && !check_passthrough_sni(c))
            return;
        if (!c->sni_check)
            tunnel_pump(c, c->client, c->upstream, &c->up_bytes);
    }
    if (evbuffer_get_length(bufferevent_get_input(c->upstream)) > 0)
        tunnel_pump(c, c->upstream, c->client, &c->down_bytes);
    maybe_splice(c);
}
