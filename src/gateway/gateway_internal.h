/* gateway_internal.h: what the files of the egress gateway module share (gateway.h is
 * its interface): the gateway and connection structs, and the functions one file gives
 * the others.
 *
 *   gateway.c         connections, requests and responses, upstreams, TLS interception
 *   gateway_tunnel.c  tunnels: bufferevents, then splice(2); a passthrough's ClientHello
 *   gateway_ask.c     a request held while a human is asked
 *   gateway_dns.c     the DNS stub's server (UDP and TCP)
 *   gateway_owner.c   the process behind a connection
 *   gateway_credentials.c  credentials put on requests, placeholders kept to their hosts
 *   gateway_providers.c    minted credentials
 *   gateway_mask.c    what goes into the sandbox: real secrets masked
 *   gateway_limits.c  the connection cap, the descriptor limit, repeated events counted
 */
#ifndef PADDOCK_GATEWAY_INTERNAL_H
#define PADDOCK_GATEWAY_INTERNAL_H

#include "gateway.h"

#include "approvals.h"
#include "dns_stub.h"
#include "http_message.h"
#include "log.h"
#include "net_address.h"
#include "net_rules.h"
#include "placeholder_scan.h"
#include "secret_mask.h"
#include "tls_ca.h"
#include "tls_sni.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <dirent.h>
#include <jansson.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

/* Bytes queued toward one side (the client's or the upstream's, TLS layers included)
 * before reading from the other pauses, and the mark below which it resumes: what one
 * connection may make the supervisor hold, whoever does not read. */
#define QUEUE_HIGH_WATER (256u << 10)
#define QUEUE_LOW_WATER  (64u << 10)
#define MAX_SINGLE_READ  (256 * 1024)
#define DNS_TCP_IDLE_SEC 10

/* Events of a kind written one by one in a second; the rest of it is one event, counted
 * (gateway_limits.c). */
#define PDK_GW_EVENTS_PER_SECOND 20
typedef enum gw_tally_kind {
    GW_TALLY_DNS_BLOCKED,     /* dns.blocked */
    GW_TALLY_CONNECT_REFUSED, /* net.connect refused by the rules */
    GW_TALLY_REQUEST_REFUSED, /* net.request refused by the rules */
    GW_TALLY_CONN_LIMIT,      /* net.connect refused: network.limits.connections */
    GW_TALLY_IDLE,            /* net.idle_closed: network.limits.idle_timeout */
    GW_TALLY_KINDS
} gw_tally_kind;
typedef struct gw_tally {
    uint64_t second;    /* the monotonic second counted */
    unsigned written;   /* events written one by one in it */
    uint64_t held;      /* the rest, not written yet */
    json_t *first_held; /* the first of those: the counted event's fields */
} gw_tally;

typedef enum conn_kind { CONN_PROXY, CONN_CAPTURE, CONN_DNS_TCP } conn_kind;
typedef enum conn_state {
    ST_HEAD,
    ST_ASKING,     /* held until a human answers (or the timeout) */
    ST_BROKER,     /* a token request answered by the gateway: its body is being read */
    ST_WAIT_TOKEN, /* waiting for a credential's token, minted in a thread (providers) */
    ST_RESOLVING,
    ST_CONNECTING,
    ST_FORWARD,
    ST_TUNNEL,
    ST_CLOSING,
} conn_state;

typedef struct gw_conn gw_conn;
typedef struct splice_dir splice_dir;
typedef struct gw_refresh gw_refresh;
typedef struct gw_masks gw_masks;
typedef struct gw_response gw_response;
/* What a connection that waited for a token does next: failure is NULL when the token is
 * fresh, else why the provider failed. */
typedef void (*gw_token_resume)(gw_conn *c, const char *failure);

struct pdk_gateway {
    struct event_base *base;
    const pdk_policy *policy;
    const pdk_net_rules *rules;
    pdk_audit_spool *spool;
    char *session;
    struct evdns_base *dns;
    pdk_dns_table *names;
    struct evconnlistener *listeners[PDK_EGRESS_MAX_SOCKETS];
    size_t nlisteners;
    int dns_udp_fd;
    struct event *dns_udp_ev;
    gw_conn *conns;
    size_t open_conns; /* in conns */
    uint64_t next_conn_id;
    pdk_gateway_stats stats;
    /* limits (gateway_limits.c) */
    struct timeval idle;        /* network.limits.idle_timeout */
    bool cap_warned;            /* the connection cap's warning is given */
    struct event *accept_timer; /* resumes paused listeners */
    uint64_t accept_pauses;     /* at the descriptor limit */
    gw_tally tallies[GW_TALLY_KINDS];
    struct event *tally_timer; /* writes what was counted when its second ends */
    /* the process behind a connection */
    pid_t init_pid;
    int diag_fd;
    uint32_t diag_seq;
    uint64_t scanned_ns;
    struct sock_owner *owners; /* inode -> process, from the last scan */
    /* approvals */
    char *state_dir;
    bool session_named;
    pdk_store *store;        /* opened at the first ask */
    struct event *ask_timer; /* polls the answers while a request waits */
    size_t asking;
    /* credentials (gateway_credentials.c) */
    pdk_gateway_credential *credentials;
    size_t credential_count;
    gw_refresh *refresh;               /* [credential_count]: a mint in flight, who waits for it */
    pdk_placeholder_set *placeholders; /* every credential's, by its index */
    gw_masks *masks;                   /* the real values, as the registry has them (mask) */
    /* TLS interception */
    pdk_tls_ca *ca;
    SSL_CTX *server_ctx; /* toward the sandbox: leaves minted by the CA */
    SSL_CTX *client_ctx; /* toward upstreams: the host's roots plus upstream_ca */
};

struct gw_conn {
    pdk_gateway *g;
    gw_conn *prev, *next;
    uint64_t id;
    conn_kind kind;
    conn_state state;
    struct bufferevent *client, *upstream;
    pdk_http_parser *requests, *responses;
    /* A captured connection's destination (the name the fake address stands for), or an
     * intercepted CONNECT's: the connection is pinned to it. */
    char *captured_host;
    uint16_t captured_port;
    bool tls_client;      /* the client side is intercepted TLS; upstreams are TLS too */
    bool sni_check;       /* a passthrough tunnel: the ClientHello must name the host */
    char approval_id[17]; /* ST_ASKING */
    pdk_buf broker_body;  /* ST_BROKER */
    /* ST_ASKING: approval_id is empty while the body is awaited (until body_wait_ns); the
     * wait began at t_asked_ns, and its deadline (ask_deadline_ns) is
     * approvals.request_timeout's (ask_limit_is_hold) or approvals.timeout's */
    uint64_t body_wait_ns;
    uint64_t t_asked_ns;
    bool ask_limit_is_hold;
    /* ST_WAIT_TOKEN: the credential waited for, the next waiting connection, what then */
    size_t token_credential;
    gw_conn *token_next;
    gw_token_resume token_resume;
    char *resume_how;
    /* replace_in_body: the request's body is held whole (rewrite), its placeholders
     * replaced, then sent with its head (Content-Length framing) */
    bool rewrite_body;
    pdk_buf rewrite;
    /* A body toward a host some credential is not bound to is scanned as it streams for
     * that credential's placeholders (gateway_credentials.c): the de-chunking state and
     * the scan, which carries a placeholder split across slices. */
    bool scan_body;
    pdk_body_content scan_content;
    pdk_placeholder_scan scan;
    /* The credentials put on the current request (names), and the fields toward their
     * hosts where a placeholder went on as it was (not named by its credential): part of
     * its events. */
    json_t *credentials_used;
    json_t *placeholders_left;
    /* The current response, masked on its way to the sandbox (gateway_mask.c); NULL when it
     * is not (its host has no credential). */
    gw_response *response;
    bool owner_looked;
    pid_t pid; /* the process whose socket this is, 0: unknown */
    char comm[16];
    uint64_t ask_deadline_ns;
    bool free_scheduled;
    /* A plain tunnel moves its bytes with splice(2), socket to pipe to socket: they never
     * enter the gateway's memory. [0] toward the upstream, [1] toward the client. */
    splice_dir *splice[2];
    /* The current request (or CONNECT). */
    pdk_http_head *req;
    char *host; /* canonical: lower case, an IP literal in its canonical form */
    uint16_t port;
    char *path;
    pdk_net_verdict verdict;
    uint64_t seq; /* requests on this connection */
    uint64_t t0_ns;
    uint64_t up_bytes, down_bytes;
    uint64_t moved_ns;        /* a tunnel's bytes last moved (either way): its idle time */
    uint64_t head_started_ns; /* the current head's first byte came (0: none yet) */
    int status;
    bool request_done, response_done;
    bool websocket; /* the request asks for a WebSocket upgrade: only then may a 101 pass */
    /* a GET (HEAD, OPTIONS, TRACE) with a body: sent with "Connection: close", and its
     * upstream connection never used again */
    bool close_upstream;
    /* A Content-Length body's first line is looked at before anything goes upstream: the
     * serialised head (first_line_head bytes) and the body so far wait in first_line. */
    bool holding_first_line;
    pdk_buf first_line;
    size_t first_line_head;
    /* The upstream connection, kept for the next request to the same host:port. */
    char *up_host;
    uint16_t up_port;
    struct evdns_getaddrinfo_request *resolving;
    bool client_eof, upstream_eof;
    /* DNS over TCP */
    bool dns_tcp;
    bool refusal_noticed; /* the coming refusal's notice is given already */
};

/* Whether the connection's destination is fixed (captured, or an intercepted CONNECT):
 * its requests are origin-form, and their Host must name it. */
static inline bool pdk__gw_pinned(const gw_conn *c)
{
    return c->kind == CONN_CAPTURE || c->tls_client;
}

/* Whether the upstream connection is TLS: an intercepted one, or an absolute-form https://
 * request (clients such as axios send those to a proxy instead of a CONNECT). */
static inline bool pdk__gw_upstream_tls(const gw_conn *c)
{
    return c->tls_client ||
           (c->req && c->req->scheme && strcmp(c->req->scheme, "https") == 0 && !pdk__gw_pinned(c));
}

/* gateway.c */
gw_conn *pdk__gw_conn_new(pdk_gateway *g, conn_kind kind, evutil_socket_t fd);
void pdk__gw_conn_free(gw_conn *c);
/* An event (kind, data o stolen) for the gateway's session. */
void pdk__gw_audit(pdk_gateway *g, const char *kind, json_t *o);
/* The same for an event that must be on record before what it describes (fail closed). */
bool pdk__gw_audit_required(pdk_gateway *g, const char *kind, json_t *o, pdk_error *err);
/* The fields every event of a connection's request carries. */
json_t *pdk__gw_request_event(gw_conn *c, const char *decided_by);
/* The same with what a finished request or tunnel carried: bytes each way, duration. */
json_t *pdk__gw_done_event(gw_conn *c);
/* Whether a refusal of the current request is quiet: the network rule that denies it (or
 * would, for a refusal made before the rules) says `quiet: true`. */
bool pdk__gw_refusal_quiet(gw_conn *c);
/* The current request as one line for a notice: "GET https://host/path" (new string). */
char *pdk__gw_request_line(gw_conn *c);
/* Refuse the current request (status, reason) or end a connection that is not HTTP. */
void pdk__gw_refuse(gw_conn *c, int status, const char *status_text, const char *reason);
/* The current request may go on: recorded, then sent upstream. */
void pdk__gw_proceed(gw_conn *c, const char *how);

/* A connection idle for network.limits.idle_timeout: counted, recorded and ended. */
void pdk__gw_idle_closed(gw_conn *c);
/* The queues of a connection with an upstream bounded both ways (watermarks). */
void pdk__gw_bound_queues(gw_conn *c);

/* gateway_limits.c */
/* An event of a repeated kind (o stolen): written, or counted into its second's event. */
void pdk__gw_audit_counted(pdk_gateway *g, gw_tally_kind k, json_t *o);
/* What is counted and not written yet, written now. */
void pdk__gw_tallies_flush(pdk_gateway *g);
/* Whether a new connection may be served (false: fd is closed and the refusal counted). */
bool pdk__gw_conn_admit(pdk_gateway *g, evutil_socket_t fd, conn_kind kind);
/* A listener's accept failed (evconnlistener's error callback; arg: the gateway). */
void pdk__gw_on_accept_error(struct evconnlistener *l, void *arg);
void pdk__gw_limits_start(pdk_gateway *g);
void pdk__gw_limits_end(pdk_gateway *g);

/* gateway_tunnel.c */
void pdk__gw_start_tunnel(gw_conn *c);
void pdk__gw_splice_free(splice_dir *d);

/* gateway_ask.c: hold the current request and ask a human (answered on a timer). */
void pdk__gw_ask(gw_conn *c, const char *how);

/* gateway_dns.c */
void pdk__gw_on_dns_udp(evutil_socket_t fd, short what, void *arg);
void pdk__gw_on_dns_tcp_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                               int len, void *arg);

/* gateway_credentials.c: put the credentials bound to the request's host on it (inject a
 * header, replace a placeholder): GW_APPLIED; GW_REFUSED when the request was answered
 * (a provider that failed: 502); GW_PARKED when a token is being minted: the connection
 * goes on with pdk__gw_proceed(c, how) once it is there. */
typedef enum gw_apply { GW_APPLIED, GW_REFUSED, GW_PARKED } gw_apply;
gw_apply pdk__gw_apply_credentials(gw_conn *c, const char *how);
/* A request asked for: at most this many bytes of its body are held (and looked at) before
 * the approval is made; the rest waits in the socket (gateway_ask.c). */
#define PDK_GW_HELD_BODY_MAX (64 * 1024)
/* replace_in_body, request bodies held to be rewritten: at most this many bytes (413). */
#define PDK_GW_REWRITE_MAX (1024 * 1024)
/* The held request (c->rewrite complete): its placeholders replaced, the body de-chunked,
 * its head given the new Content-Length; head and body appended to out. false when it was
 * refused instead (a value that may not go over plain HTTP): nothing appended. */
bool pdk__gw_rewritten_request(gw_conn *c, pdk_buf *out);
/* Whether the current request's body is to be scanned for placeholders (sets c->scan_body
 * and resets the scanner). */
void pdk__gw_scan_start(gw_conn *c);
/* The next slice of the body (raw, as it came): false when the content so far holds a
 * placeholder bound elsewhere; the slice is not to be forwarded, and the request was
 * refused and recorded (the connection ends). */
bool pdk__gw_scan_body(gw_conn *c, const char *data, size_t len);
/* Before any rule: a request (its target, field names and values) that carries a
 * placeholder to a host its credential is not bound to is refused and recorded as an
 * exfiltration attempt (false). */
bool pdk__gw_check_placeholders(gw_conn *c);
/* The same for a connection's destination alone (a captured passthrough's name): false
 * when it was refused (the connection ends). */
bool pdk__gw_check_destination(gw_conn *c, const char *host);
/* Whether a credential is bound to the connection's host. */
bool pdk__gw_host_bound(const gw_conn *c);
int pdk__gw_credentials_copy(pdk_gateway *g, const pdk_gateway_config *cfg, pdk_error *err);
void pdk__gw_credentials_free(pdk_gateway *g);
/* A request to a Feishu credential's token endpoint that carries its placeholder app
 * secret: answered here with the placeholder token (true: the request is taken). */
bool pdk__gw_broker(gw_conn *c);
/* Flush what is queued for the client, then end the connection. */
void pdk__gw_close_after_flush(gw_conn *c);
/* The connection's next request (keep-alive). */
void pdk__gw_next_request(gw_conn *c);
/* Answer 502 with a JSON reason and end the connection. */
void pdk__gw_upstream_failed(gw_conn *c, const char *what);

/* gateway_providers.c: a minted credential valid for 5 more minutes at least (the vault's
 * cached token, else a new one from the provider, cached). 0, or -1 with err. This blocks
 * (up to the provider's 10 s): for the start, before the gateway serves. */
int pdk__gw_token_fresh(pdk_gateway *g, pdk_gateway_credential *gc, pdk_error *err);
/* Once, in the main thread, before any provider's call. */
void pdk__gw_providers_init(void);
/* Whether credential i's token (if it has one) can be used now, with no mint. */
bool pdk__gw_token_usable(const pdk_gateway *g, size_t i);
/* Park c until credential i has a fresh token, which a thread of its own gets (one at a
 * time per credential, however many wait); then resume(c, failure). The loop goes on
 * serving meanwhile. */
void pdk__gw_token_wait(gw_conn *c, size_t i, gw_token_resume resume);
/* A parked connection that goes away leaves the queue (pdk__gw_conn_free). */
void pdk__gw_token_unwait(gw_conn *c);
/* Wait for the mints in flight and release what they hold (at the gateway's end). */
void pdk__gw_refresh_free(pdk_gateway *g);

/* gateway_mask.c: what goes into the sandbox (redact.h, secret_mask.h). Responses from a
 * host a credential is bound to are masked: heads and trailers always, bodies unless
 * compressed (the gateway asked for identity: a compressed body is refused with a 502).
 * A response head: serialised into out (masked); false when the response was refused
 * instead (the connection answered and closing: touch nothing more). */
bool pdk__gw_response_head(gw_conn *c, const pdk_http_head *head, pdk_buf *out);
/* Body bytes (raw, as they came) toward the client: what may go now, added to out. */
void pdk__gw_response_body(gw_conn *c, const char *data, size_t len, struct evbuffer *out);
/* The response ended: what was held back, added to out. */
void pdk__gw_response_end(gw_conn *c, struct evbuffer *out);
/* The response state gone (a response cut short: what was held is dropped). */
void pdk__gw_response_free(gw_conn *c);
/* A text paddock itself sends into the sandbox, with every real value masked (new
 * string). */
char *pdk__gw_outgoing_text(pdk_gateway *g, const char *text);
/* At the gateway's end. */
void pdk__gw_masks_free(pdk_gateway *g);

/* gateway_owner.c */
struct sock_owner *pdk__gw_owners_new(void);
void pdk__gw_conn_owner(gw_conn *c);

#endif
