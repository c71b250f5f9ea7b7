/* gateway.h: the egress gateway. Every byte that leaves a sandbox passes through it.
 *
 * It runs on the supervisor's event loop, outside the sandbox, and serves the sockets init
 * made inside the sandbox's network namespace (egress_net.h):
 *   - the explicit proxy (127.0.0.1:3128): CONNECT host:port, and absolute-form requests
 *     (GET http://host/path);
 *   - transparent capture: a connect to a fake address (the DNS stub's answer for a name
 *     the policy could allow) on a captured port; the name comes back from the address;
 *   - the DNS stub (127.0.0.1:53, UDP and TCP): answers from the policy alone
 *     (dns_stub.h), never forwarded; blocked names are audited.
 * Each connection and request is judged by the policy's network rules (net_rules.h):
 * a denied request gets 403 with a JSON body and X-Paddock-Decision, a denied CONNECT or
 * captured connection is closed; both are audited. Upstreams are resolved on the host
 * (evdns) and every address actually connected to is checked (net_address.h): loopback,
 * private, link-local, CGNAT, multicast and metadata addresses only for a host an allow or
 * ask rule names exactly, or a `resolve` target the policy gives.
 *
 * TLS: a CONNECT or captured TLS connection to a host that is not `passthrough` is
 * intercepted (tls_ca.h): the sandbox gets a leaf for the host (the SNI must name it), each
 * request inside is read and judged, and the upstream is a TLS connection of its own,
 * verified against the host's roots and upstream_ca (a bad certificate is a 502 that says
 * why). A passthrough host is tunnelled unread, so its rules must decide on host and port.
 *
 * A request a rule asks for is held (gateway_ask.c: the connection stays open, the first
 * 64 KiB of its body held, or what came of it in 2 s) while an approval request waits in
 * the store (approvals.h), saying what of the body it shows: any process answers it;
 * approved, that one request goes on; denied, it gets 403 saying who denied it and why. It
 * waits approvals.request_timeout at most (or approvals.timeout, when shorter), then
 * approvals.on_timeout applies (deny: 504, or 403); approvals.max_held_requests are held
 * at once at most (429 for more).
 */
#ifndef PADDOCK_GATEWAY_H
#define PADDOCK_GATEWAY_H

#include "audit.h"
#include "egress_net.h"
#include "error.h"
#include "policy.h"

#include <event2/event.h>
#include <sys/types.h>

typedef struct pdk_gateway pdk_gateway;

/* A credential as the gateway uses it (the policy's, with its value from the vault and
 * the run's placeholder). */
typedef struct pdk_gateway_credential {
    const pdk_credential *policy; /* name, hosts, inject */
    const char *value;            /* the real value (static); a minted token is the gateway's */
    const char *placeholder;      /* what the sandbox holds instead */
    const char *placeholder_app_secret; /* feishu_tenant_token: for clients that mint their own */
    int64_t expires_ns;                 /* of a minted value (0: static) */
    int64_t lifetime_ns;                /* what the provider gave it at the mint */
} pdk_gateway_credential;

/* Free n credentials and the array (values wiped); NULL-safe. In paddock's executable
 * (gateway_module.c), for the supervisor's copy and the module's alike. */
void pdk_gateway_credentials_free(pdk_gateway_credential *credentials, size_t n);

typedef struct pdk_gateway_config {
    const pdk_policy *policy; /* network rules; must outlive the gateway */
    pdk_audit_spool *spool;   /* where events go (thread-safe); NULL: none */
    const char *session;      /* for the events */
    const char *state_dir;    /* paddock's CA lives there (tls_ca.h); the approvals store */
    bool session_named;       /* an "always" approval holds for the rest of the session */
    const pdk_gateway_credential *credentials;
    size_t credential_count;
} pdk_gateway_config;

/* A gateway for one sandbox; it starts serving with pdk_gateway_serve(). */
pdk_gateway *pdk_gateway_new(const pdk_gateway_config *cfg, pdk_error *err);

/* Serve the sockets (the fds are the gateway's from now on) on base; init_pid (in the
 * supervisor's pid namespace) roots the processes a connection may come from. */
void pdk_gateway_serve(void *gateway, struct event_base *base, pid_t init_pid,
                       const pdk_egress_socket *socks, size_t count);

typedef struct pdk_gateway_stats {
    uint64_t connections, requests, denied, dns_queries, dns_blocked;
    uint64_t connections_refused; /* beyond network.limits.connections */
    uint64_t idle_closed;         /* network.limits.idle_timeout */
} pdk_gateway_stats;

void pdk_gateway_stats_get(const pdk_gateway *gateway, pdk_gateway_stats *out);

/* The end of serving: events counted and not written yet are written (before the
 * session's summary). */
void pdk_gateway_finish(pdk_gateway *gateway);

/* Close every connection and socket. NULL-safe. */
void pdk_gateway_free(pdk_gateway *gateway);

/* The bundle sandboxes trust (the host's roots plus paddock's CA, the CA made when there is
 * none), made when stale: its path (new string). */
char *pdk_gateway_ca_bundle(const char *state_dir, pdk_error *err);
/* paddock's CA certificate in PEM (new string), the CA made when there is none. */
char *pdk_gateway_ca_pem(const char *state_dir, pdk_error *err);

/* The gateway is a module (paddock-gateway.so) that paddock loads only for a run whose
 * policy has a network section: OpenSSL and libevent's DNS and TLS parts, linked into
 * paddock itself, would add milliseconds to every start. The module uses paddock's own
 * libpaddock, libevent and jansson (exported by the executable), so there is one copy of
 * each. It exports one table: */
typedef struct pdk_gateway_module {
    unsigned abi; /* PDK_GATEWAY_ABI */
    pdk_gateway *(*create)(const pdk_gateway_config *cfg, pdk_error *err);
    void (*serve)(void *gateway, struct event_base *base, pid_t init_pid,
                  const pdk_egress_socket *socks, size_t count);
    void (*stats)(const pdk_gateway *gateway, pdk_gateway_stats *out);
    void (*destroy)(pdk_gateway *gateway);
    char *(*ca_bundle)(const char *state_dir, pdk_error *err);
    char *(*ca_pem)(const char *state_dir, pdk_error *err);
    void (*finish)(pdk_gateway *gateway);
} pdk_gateway_module;

#define PDK_GATEWAY_ABI    6 /* (6: network.limits, finish, stats of the limits) */
#define PDK_GATEWAY_SYMBOL "pdk_gateway_module_v1"

/* In paddock (gateway_module.c): the module next to the executable, or in the installed
 * module directory; loaded once. NULL with err when it cannot be. */
const pdk_gateway_module *pdk_gateway_module_load(pdk_error *err);

#endif
