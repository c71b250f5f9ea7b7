/* net_rules.h: judging a network request against the policy's network rules (the egress
 * gateway's decisions: allow, ask, deny).
 *
 * A rule matches on host, port, scheme, method and path; what a rule leaves out matches
 * anything. Every rule that matches counts and the strictest decision wins (deny > ask >
 * allow); when none matches, the default applies (deny unless the policy says otherwise).
 *
 * Hosts: an exact name or IP literal ("open.feishu.cn", "127.0.0.1", "::1"), "*.suffix"
 * (any name that ends in ".suffix", with at least one label before it: "*.npmjs.org"
 * matches "registry.npmjs.org", not "npmjs.org"), or "*" (any host). Compared in lower
 * case, without a trailing dot.
 * Paths: a glob over the request's normalised path (pdk_net_path_normalize), without the
 * query: "*" matches within one segment, "**" matches across segments, and "**" as the
 * whole last segment also matches the directory itself (the glob "/a/" + "**" matches
 * "/a", "/a/" and "/a/b/c").
 *
 * Before the request is known (a CONNECT, a captured connection, a passthrough host), a
 * connection is judged on host, port and scheme alone: when every request it could carry
 * would be denied it is refused, when every one would be allowed it may go through
 * unread, otherwise each request is judged once it has been read (TLS interception).
 */
#ifndef PADDOCK_NET_RULES_H
#define PADDOCK_NET_RULES_H

#include "command_rules.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct pdk_net_rule {
    char *host;     /* the pattern, lower case */
    uint16_t port;  /* 0: any */
    char **schemes; /* "http", "https"; NULL: any */
    char **methods; /* upper case; NULL: any */
    char *path;     /* glob; NULL: any */
    pdk_decision decision;
    char *reason; /* may be NULL */
    bool quiet;   /* a deny rule whose refusals are recorded, not shown */
    /* The rule reaches the loopback of the machine paddock runs on (host_loopback: true):
     * only such a rule lets a request to 127.0.0.0/8, ::1, 0.0.0.0 or a name resolving to
     * one of them (localhost) leave the sandbox; host is exact, never a pattern. */
    bool host_loopback;
} pdk_net_rule;

/* An upstream override: connections for host:port go to to_host:to_port instead (tests,
 * mirrors). The request keeps its host name (SNI, Host header, certificate checks). */
typedef struct pdk_net_resolve {
    char *host;
    uint16_t port;
    char *to_host;
    uint16_t to_port;
} pdk_net_resolve;

typedef struct pdk_net_rules {
    bool enabled; /* the policy has a network section: the gateway runs */
    pdk_net_rule *rules;
    size_t count;
    pdk_decision default_decision;
    char **passthrough; /* host patterns tunnelled without interception; NULL-terminated */
    pdk_net_resolve *resolve;
    size_t resolve_count;
    char **upstream_ca; /* absolute paths of extra roots for upstreams; NULL-terminated */
    /* network.limits: what one session may hold open in the gateway (the supervisor) */
    uint32_t max_connections; /* at once, every kind; beyond it new ones are refused */
    uint32_t idle_timeout_s;  /* a client connection with nothing moving either way ends */
} pdk_net_rules;

#define PDK_NET_DEFAULT_MAX_CONNECTIONS 256
#define PDK_NET_MAX_MAX_CONNECTIONS     65536
#define PDK_NET_DEFAULT_IDLE_TIMEOUT_S  120
#define PDK_NET_MAX_IDLE_TIMEOUT_S      (24 * 3600)

/* What is known of a request. method and path are NULL at the connection level. */
typedef struct pdk_net_request {
    const char *scheme; /* "http" or "https"; NULL when unknown */
    const char *host;   /* lower case, no trailing dot, no brackets */
    uint16_t port;
    const char *method; /* upper case */
    const char *path;   /* normalised, without the query */
} pdk_net_request;

typedef enum pdk_net_scope {
    PDK_NET_DECIDED,     /* decision holds for everything on the connection */
    PDK_NET_PER_REQUEST, /* depends on the method or path: read each request */
} pdk_net_scope;

typedef struct pdk_net_verdict {
    pdk_decision decision; /* for PDK_NET_PER_REQUEST, the strictest possible one */
    pdk_net_scope scope;
    ssize_t rule;       /* the deciding rule, -1 for the default */
    const char *reason; /* the rule's reason or a fixed phrase; never NULL */
} pdk_net_verdict;

/* A host or host pattern as written (lower-cased copy, trailing dot removed), or NULL when
 * it is not one; *why says what is wrong. */
char *pdk_net_host_pattern_normalize(const char *text, const char **why);

/* Whether host (lower case) matches pattern (normalised). */
bool pdk_net_host_matches(const char *pattern, const char *host);

/* Whether path (normalised) matches the glob. */
bool pdk_net_path_matches(const char *glob, const char *path);

/* The path of a request target for matching (new string): "%XX" of unreserved characters
 * decoded, other escapes upper-cased, "." and ".." segments removed (RFC 3986 5.2.4), the
 * query cut off into *query (new string, or NULL). A segment whose name before its
 * parameters (";...", "%3B...") is "." or ".." is a dot segment too: "/v1/..;/admin/x" is
 * "/admin/x", as servers that strip path parameters serve it. NULL when the path is not
 * acceptable, with *why: not starting with "/", a bad or NUL escape, or dot segments hidden
 * behind an encoded slash or backslash ("/a/%2e%2e%2fb"), which an upstream that decodes
 * them would route elsewhere than the rules saw. */
char *pdk_net_path_normalize(const char *target, char **query, const char **why);

/* A normalised path with every segment's parameters (from ";" or "%3B" to the end of the
 * segment) removed, then its dot segments: "/admin;x/y" is "/admin/y" (new string). */
char *pdk_net_path_without_parameters(const char *path);

/* Judge a request (method and path given) or a connection (both NULL). A path with
 * parameters is judged as it is and without them (pdk_net_path_without_parameters): the
 * stricter decision holds. */
void pdk_net_rules_judge(const pdk_net_rules *rules, const pdk_net_request *req,
                         pdk_net_verdict *out);

/* Whether some request to host (any port) could be allowed or asked for: the DNS stub
 * answers only those names. */
bool pdk_net_rules_could_reach(const pdk_net_rules *rules, const char *host);

/* Whether an allow or ask rule names host exactly (not by a glob): only then may the host's
 * address be private, link-local or metadata (loopback: pdk_net_rules_host_loopback). */
bool pdk_net_rules_names_exactly(const pdk_net_rules *rules, const char *host);

/* Whether an allow or ask rule with host_loopback names req's host exactly and matches the
 * rest of what is known of req (port, scheme, method, path): only then may a connection
 * for req go to the host's loopback (a loopback or unspecified address). */
bool pdk_net_rules_host_loopback(const pdk_net_rules *rules, const pdk_net_request *req);

/* Whether a host as a rule writes it stands for the host's loopback when the gateway
 * connects to it: a loopback or unspecified address literal, "localhost" or a name under
 * ".localhost". For `paddock policy lint`: such a rule without host_loopback reaches
 * nothing. */
bool pdk_net_host_is_loopback(const char *host);

/* Whether host is to be tunnelled without interception. */
bool pdk_net_rules_is_passthrough(const pdk_net_rules *rules, const char *host);

/* The override for host:port, or NULL. */
const pdk_net_resolve *pdk_net_rules_resolve(const pdk_net_rules *rules, const char *host,
                                             uint16_t port);

/* The TCP ports captured inside the sandbox: 80, 443 and every port a rule names; sorted,
 * without repeats (new array, *count entries). */
uint16_t *pdk_net_rules_ports(const pdk_net_rules *rules, size_t *count);

void pdk_net_rule_clear(pdk_net_rule *rule);
void pdk_net_rules_free(pdk_net_rules *rules);

#endif
