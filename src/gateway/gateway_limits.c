/* gateway_limits.c: what bounds the gateway's use of the supervisor (gateway_internal.h).
 * The gateway runs in paddock's own process, outside the sandbox's cgroup: whatever the
 * sandbox makes it hold (connections, descriptors, buffers, audit rows) is paddock's.
 *
 *   - at most network.limits.connections connections at once; the next are closed at once
 *     and counted;
 *   - at the descriptor limit (EMFILE, ENFILE) the listeners pause for a while instead of
 *     retrying in a loop, with one warning a pause episode;
 *   - events of a repeated kind (blocked DNS queries, refused connections and requests)
 *     are written one by one up to PDK_GW_EVENTS_PER_SECOND a second; the rest of that
 *     second is one event with a count, written when the second ends (or at the end);
 *   - libevent's own messages go through paddock's logger, at most a few a second.
 * (Buffers are bounded where bytes move: gateway.c, gateway_tunnel.c.)
 */
#include "gateway_internal.h"

#include <event2/event.h>

/* ---- repeated events ---- */

static const char *const tally_event_kind[GW_TALLY_KINDS] = {
    [GW_TALLY_DNS_BLOCKED] = "dns.blocked",     [GW_TALLY_CONNECT_REFUSED] = "net.connect",
    [GW_TALLY_REQUEST_REFUSED] = "net.request", [GW_TALLY_CONN_LIMIT] = "net.connect",
    [GW_TALLY_IDLE] = "net.idle_closed",
};

static uint64_t now_second(void)
{
    return pdk_now_monotonic_ns() / 1000000000ULL;
}

/* The held rest of a kind's second: one event, the first held one's fields with the count
 * of events it stands for. */
static void tally_write(pdk_gateway *g, gw_tally_kind k)
{
    gw_tally *t = &g->tallies[k];
    if (t->held == 0)
        return;
    json_t *o = t->first_held;
    t->first_held = NULL;
    json_object_set_new(o, "count", json_integer((json_int_t)t->held));
    json_object_set_new(o, "aggregated", json_true());
    t->held = 0;
    pdk__gw_audit(g, tally_event_kind[k], o);
}

static void on_tally_second(evutil_socket_t fd, short what, void *arg);

static void arm_tally_timer(pdk_gateway *g)
{
    if (!g->base)
        return;
    if (!g->tally_timer)
        g->tally_timer = evtimer_new(g->base, on_tally_second, g);
    if (!g->tally_timer || evtimer_pending(g->tally_timer, NULL))
        return;
    /* just after the current second ends */
    uint64_t ns = pdk_now_monotonic_ns();
    uint64_t left = 1000000000ULL - ns % 1000000000ULL + 1000000ULL;
    struct timeval tv = {(time_t)(left / 1000000000ULL),
                         (suseconds_t)(left % 1000000000ULL / 1000)};
    evtimer_add(g->tally_timer, &tv);
}

static void on_tally_second(evutil_socket_t fd, short what, void *arg)
{
    pdk_gateway *g = arg;
    uint64_t second = now_second();
    bool pending = false;
    for (int k = 0; k < GW_TALLY_KINDS; k++) {
        if (g->tallies[k].held == 0)
            continue;
        if (g->tallies[k].second != second)
            tally_write(g, (gw_tally_kind)k);
        else
            pending = true; /* (woken early) */
    }
    if (pending)
        arm_tally_timer(g);
}

void pdk__gw_audit_counted(pdk_gateway *g, gw_tally_kind k, json_t *o)
{
    gw_tally *t = &g->tallies[k];
    uint64_t second = now_second();
    if (t->second != second) {
        tally_write(g, k);
        t->second = second;
        t->written = 0;
    }
    if (t->written < PDK_GW_EVENTS_PER_SECOND) {
        t->written++;
        pdk__gw_audit(g, tally_event_kind[k], o);
        return;
    }
    if (t->held++ == 0) {
        t->first_held = o;
        arm_tally_timer(g);
    } else {
        json_decref(o);
    }
}

void pdk__gw_tallies_flush(pdk_gateway *g)
{
    for (int k = 0; k < GW_TALLY_KINDS; k++)
        tally_write(g, (gw_tally_kind)k);
    if (g->tally_timer)
        evtimer_del(g->tally_timer);
}

/* ---- the connection cap ---- */

bool pdk__gw_conn_admit(pdk_gateway *g, evutil_socket_t fd, conn_kind kind)
{
    uint32_t cap = g->rules->max_connections;
    if (cap == 0 || g->open_conns < cap)
        return true;
    /* Closed at once: nothing is read or answered (an answer would be written into a
     * socket whose peer may never read it). */
    g->stats.connections_refused++;
    json_t *ev =
        json_pack("{s:s, s:s, s:i}", "via",
                  kind == CONN_CAPTURE   ? "capture"
                  : kind == CONN_DNS_TCP ? "dns-tcp"
                                         : "proxy",
                  "refused", "the session's connections at once reached network.limits.connections",
                  "limit", (int)cap);
    pdk__gw_audit_counted(g, GW_TALLY_CONN_LIMIT, ev);
    if (!g->cap_warned) {
        g->cap_warned = true;
        pdk_warn("gateway: the sandbox holds %u connections at once (network.limits.connections): "
                 "new ones are refused until some end",
                 (unsigned)cap);
    }
    close(fd);
    return false;
}

/* ---- the descriptor limit ---- */

#define ACCEPT_PAUSE_MS 100

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
    pdk_gateway *g = arg;
    for (size_t i = 0; i < g->nlisteners; i++)
        evconnlistener_enable(g->listeners[i]);
}

void pdk__gw_on_accept_error(struct evconnlistener *l, void *arg)
{
    pdk_gateway *g = arg;
    int e = EVUTIL_SOCKET_ERROR();
    if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM) {
        pdk_debug("gateway: accept: %s", evutil_socket_error_to_string(e));
        return; /* (a connection reset before it was accepted, and the like: the next) */
    }
    /* The pending connection stays in the backlog, so accepting again at once fails again:
     * every listener pauses, and a timer resumes them. */
    for (size_t i = 0; i < g->nlisteners; i++)
        evconnlistener_disable(g->listeners[i]);
    if (!g->accept_timer)
        g->accept_timer = evtimer_new(g->base, on_accept_resume, g);
    struct timeval pause = {0, ACCEPT_PAUSE_MS * 1000};
    if (g->accept_timer)
        evtimer_add(g->accept_timer, &pause);
    else
        on_accept_resume(-1, 0, g); /* (no timer: no pause rather than no listener) */
    if (g->accept_pauses++ == 0)
        pdk_warn("gateway: cannot accept a connection: %s (%zu open); accepting pauses %d ms at a "
                 "time while it lasts",
                 evutil_socket_error_to_string(e), (size_t)g->open_conns, ACCEPT_PAUSE_MS);
}

/* ---- libevent's messages ---- */

#define LIBEVENT_MESSAGES_PER_SECOND 5

static uint64_t log_second;
static unsigned log_written;
static uint64_t log_dropped;

static void libevent_log(int severity, const char *msg)
{
    uint64_t second = now_second();
    if (second != log_second) {
        if (log_dropped > 0)
            pdk_warn("libevent: %llu more messages like the last in a second, not shown",
                     (unsigned long long)log_dropped);
        log_second = second;
        log_written = 0;
        log_dropped = 0;
    }
    if (severity < EVENT_LOG_WARN) {
        pdk_debug("libevent: %s", msg);
        return;
    }
    if (log_written >= LIBEVENT_MESSAGES_PER_SECOND) {
        log_dropped++;
        return;
    }
    log_written++;
    pdk_warn("libevent: %s", msg);
}

void pdk__gw_limits_start(pdk_gateway *g)
{
    event_set_log_callback(libevent_log);
    (void)g;
}

void pdk__gw_limits_end(pdk_gateway *g)
{
    if (g->accept_pauses > 1)
        pdk_warn("gateway: accepting paused %llu times at the descriptor limit",
                 (unsigned long long)g->accept_pauses);
    if (g->tally_timer)
        event_free(g->tally_timer);
    g->tally_timer = NULL;
    for (int k = 0; k < GW_TALLY_KINDS; k++) {
        json_decref(g->tallies[k].first_held);
        g->tallies[k].first_held = NULL;
    }
    if (g->accept_timer)
        event_free(g->accept_timer);
    g->accept_timer = NULL;
    event_set_log_callback(NULL); /* (the callback is the module's) */
}
