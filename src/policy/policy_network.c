/* policy_network.c: the "network" section: the default decision, the rules (host, port,
 * scheme, methods, path, decision, ...), passthrough hosts, resolve, upstream_ca and limits;
 * and how a verdict names the network rule that decided it.
 */
#include "policy_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* A word or a list of words, each checked by ok (NULL: any non-empty word); new list, or
 * NULL after a diagnostic. */
static char **word_list(parse_state *st, const char *field, yaml_node_t *n, const char *what,
                        bool (*ok)(const char *word), bool upper)
{
    yaml_node_t **nodes = NULL;
    size_t count = 0;
    yaml_node_t *single[1];
    if (n->type == YAML_SCALAR_NODE) {
        single[0] = n;
        nodes = single;
        count = 1;
    } else if (n->type == YAML_SEQUENCE_NODE) {
        yaml_node_item_t *items;
        pdk__list_items(st, field, n, &items, &count);
        if (count == 0) {
            pdk__diag_node(
                st, n, "%s: an empty list matches nothing (leave the key out to match any)", field);
            return NULL;
        }
        nodes = xcalloc(count, sizeof(*nodes));
        for (size_t i = 0; i < count; i++)
            nodes[i] = pdk__node_at(st, items[i]);
    } else {
        pdk__expected(st, field, n, what);
        return NULL;
    }
    char **words = xcalloc(1, sizeof(char *));
    bool good = true;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = nodes[i];
        const char *v = item ? pdk__scalar_text(st, field, item, what) : NULL;
        if (!v) {
            good = false;
            continue;
        }
        _cleanup_free_ char *w = xstrdup(v);
        for (char *c = w; *c; c++)
            *c = (char)(upper ? toupper((unsigned char)*c) : tolower((unsigned char)*c));
        if (!*w || (ok && !ok(w))) {
            _cleanup_free_ char *q = pdk__quote_str(v);
            pdk__diag_node(st, item, "%s: %s is not %s", field, q, what);
            good = false;
            continue;
        }
        pdk_strv_push(&words, w);
    }
    if (nodes != single)
        free(nodes);
    if (!good) {
        pdk_strv_free(words);
        return NULL;
    }
    return words;
}

static bool is_scheme(const char *w)
{
    return strcmp(w, "http") == 0 || strcmp(w, "https") == 0;
}

static bool is_method(const char *w)
{
    for (const char *c = w; *c; c++)
        if (!isupper((unsigned char)*c) && *c != '-' && *c != '_')
            return false;
    return true;
}

static bool parse_port_value(parse_state *st, const char *field, yaml_node_t *n, uint16_t *out)
{
    const char *v = pdk__scalar_text(st, field, n, "a port number");
    if (!v)
        return false;
    uint64_t port;
    if (pdk__parse_decimal(v, 65535, &port) != 0 || port == 0) {
        _cleanup_free_ char *q = pdk__quote_str(v);
        pdk__diag_node(st, n, "%s: %s is not a port (use a number from 1 to 65535)", field, q);
        return false;
    }
    *out = (uint16_t)port;
    return true;
}
static void handle_network_default(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk_decision d;
    if (!pdk__parse_decision(st, field, n, &d))
        return;
    if (d == PDK_DECISION_CONFINE) {
        pdk__diag_node(st, n, "%s: confine is a decision for commands (use allow, ask or deny)",
                       field);
        return;
    }
    st->policy->network.default_decision = d;
}

static void network_rule(parse_state *st, const char *field, yaml_node_t *n)
{
    static const key_spec keys[] = {{"host", NULL},    {"port", NULL},  {"scheme", NULL},
                                    {"methods", NULL}, {"path", NULL},  {"decision", NULL},
                                    {"reason", NULL},  {"quiet", NULL}, {"host_loopback", NULL}};
    yaml_node_t *v[PDK_ARRAY_SIZE(keys)];
    if (!pdk__mapping_values(st, field, n, keys, PDK_ARRAY_SIZE(keys), v))
        return;
    pdk_net_rule r = {0};
    bool ok = true;
    _cleanup_free_ char *fh = xasprintf("%s.host", field), *fp = xasprintf("%s.port", field),
                        *fs = xasprintf("%s.scheme", field), *fm = xasprintf("%s.methods", field),
                        *fpa = xasprintf("%s.path", field), *fd = xasprintf("%s.decision", field),
                        *fr = xasprintf("%s.reason", field);
    if (!v[0]) {
        pdk__diag_node(st, n, "%s: a rule needs \"host\" (a name, \"*.domain\" or \"*\")", field);
        ok = false;
    } else if (!(r.host = pdk__host_value(st, fh, v[0], true))) {
        ok = false;
    }
    if (v[1] && !parse_port_value(st, fp, v[1], &r.port))
        ok = false;
    if (v[2] &&
        !(r.schemes = word_list(st, fs, v[2], "a scheme (http or https)", is_scheme, false)))
        ok = false;
    if (v[3] &&
        !(r.methods = word_list(st, fm, v[3], "an HTTP method (GET, POST, ...)", is_method, true)))
        ok = false;
    if (v[4]) {
        const char *path = pdk__scalar_text(st, fpa, v[4], "a path glob");
        if (!path) {
            ok = false;
        } else if (path[0] != '/') {
            _cleanup_free_ char *q = pdk__quote_str(path);
            pdk__diag_node(st, v[4],
                           "%s: %s does not start with \"/\" (a path glob is matched against "
                           "the request's path, e.g. /api/v1/**)",
                           fpa, q);
            ok = false;
        } else if (strchr(path, '?')) {
            _cleanup_free_ char *q = pdk__quote_str(path);
            pdk__diag_node(st, v[4],
                           "%s: %s has a query (the path is matched without it; remove the "
                           "\"?...\")",
                           fpa, q);
            ok = false;
        } else {
            r.path = xstrdup(path);
        }
    }
    bool decided = false;
    if (!v[5]) {
        pdk__diag_node(st, n, "%s: a rule needs \"decision\" (allow, ask or deny)", field);
        ok = false;
    } else if (!(decided = pdk__parse_decision(st, fd, v[5], &r.decision))) {
        ok = false;
    } else if (r.decision == PDK_DECISION_CONFINE) {
        pdk__diag_node(st, v[5], "%s: confine is a decision for commands (use allow, ask or deny)",
                       fd);
        ok = false;
    }
    const char *why = NULL;
    if (v[6] && !(why = pdk__scalar_text(st, fr, v[6], "a reason (one line of text)")))
        ok = false;
    r.reason = why ? xstrdup(why) : NULL;
    if (v[7] && !pdk__parse_quiet(st, field, v[7], decided, r.decision, &r.quiet))
        ok = false;
    _cleanup_free_ char *fl = xasprintf("%s.host_loopback", field);
    if (v[8] && !pdk__parse_bool(st, fl, v[8], &r.host_loopback))
        ok = false;
    if (r.host_loopback && r.host && strchr(r.host, '*')) {
        pdk__diag_node(st, v[8],
                       "%s: a rule that reaches the host's loopback names its host exactly (e.g. "
                       "127.0.0.1 or localhost), not a pattern",
                       fl);
        ok = false;
    }
    pdk_net_rules *rules = &st->policy->network;
    if (!ok) {
        pdk_net_rule_clear(&r);
        return;
    }
    rules->rules = xrealloc(rules->rules, (rules->count + 1) * sizeof(*rules->rules));
    rules->rules[rules->count++] = r;
    st->policy->net_rule_lines =
        xrealloc(st->policy->net_rule_lines, rules->count * sizeof(*st->policy->net_rule_lines));
    st->policy->net_rule_lines[rules->count - 1] = pdk__node_line(n);
}

static void handle_network_rules(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__each_item(st, field, n, network_rule);
}

static void passthrough_host(parse_state *st, const char *field, yaml_node_t *n)
{
    char *h = pdk__host_value(st, field, n, true);
    if (h)
        pdk_strv_push_take(&st->policy->network.passthrough, h);
}

static void handle_network_passthrough(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__each_item(st, field, n, passthrough_host);
}

/* "host:port" or "[v6]:port". */
static bool split_host_port(const char *text, char **host, uint16_t *port)
{
    const char *colon = NULL;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':')
            return false;
        colon = close + 1;
    } else {
        colon = strrchr(text, ':');
        if (!colon || memchr(text, ':', (size_t)(colon - text)))
            return false;
    }
    uint64_t p;
    if (pdk__parse_decimal(colon + 1, 65535, &p) != 0 || p == 0)
        return false;
    const char *why;
    _cleanup_free_ char *h = xstrndup(text, (size_t)(colon - text));
    *host = pdk_net_host_pattern_normalize(h, &why);
    if (!*host || strchr(*host, '*')) {
        free(*host);
        *host = NULL;
        return false;
    }
    *port = (uint16_t)p;
    return true;
}

static void handle_network_resolve(parse_state *st, const char *field, yaml_node_t *n)
{
    if (!pdk__expect_type(st, field, n, YAML_MAPPING_NODE))
        return;
    size_t count = 0;
    _cleanup_free_ map_entry *entries = pdk__map_entries(st, n, field, &count);
    pdk_net_rules *rules = &st->policy->network;
    for (size_t i = 0; i < count; i++) {
        map_entry *e = &entries[i];
        if (!e->key || e->duplicate)
            continue;
        _cleanup_free_ char *key = xstrndup(e->key, e->key_len);
        _cleanup_free_ char *f = xasprintf("%s.%s", field, key);
        pdk_net_resolve r = {0};
        if (!split_host_port(key, &r.host, &r.port)) {
            _cleanup_free_ char *q = pdk__quote_str(key);
            pdk__diag_node(st, e->key_node,
                           "%s: %s is not host:port (e.g. \"api.example.com:443\")", field, q);
            continue;
        }
        const char *to = pdk__scalar_text(st, f, e->value, "an address (host:port)");
        if (!to || !split_host_port(to, &r.to_host, &r.to_port)) {
            if (to) {
                _cleanup_free_ char *q = pdk__quote_str(to);
                pdk__diag_node(st, e->value, "%s: %s is not host:port (e.g. \"127.0.0.1:18443\")",
                               f, q);
            }
            free(r.host);
            continue;
        }
        rules->resolve =
            xrealloc(rules->resolve, (rules->resolve_count + 1) * sizeof(*rules->resolve));
        rules->resolve[rules->resolve_count++] = r;
    }
}

static void upstream_ca_path(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = pdk__scalar_text(st, field, n, "a path to PEM certificates");
    if (!v)
        return;
    if (!*v) {
        pdk__diag_node(st, n, "%s: empty path", field);
        return;
    }
    /* absolute, or relative to the policy file (load_file) */
    char *path = v[0] == '~' ? pdk__resolve_path(st, field, n, v, false) : xstrdup(v);
    if (path)
        pdk_strv_push_take(&st->policy->network.upstream_ca, path);
}

static void handle_network_upstream_ca(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__each_item(st, field, n, upstream_ca_path);
}

static void handle_network_connections(parse_state *st, const char *field, yaml_node_t *n)
{
    uint64_t count;
    if (pdk__bounded_count(st, field, n, "connections", PDK_NET_MAX_MAX_CONNECTIONS,
                           PDK_NET_DEFAULT_MAX_CONNECTIONS, &count) == 0)
        st->policy->network.max_connections = (uint32_t)count;
}

static void handle_network_idle_timeout(parse_state *st, const char *field, yaml_node_t *n)
{
    _cleanup_free_ char *hint =
        xasprintf(", e.g. 2m; the default is %ds", PDK_NET_DEFAULT_IDLE_TIMEOUT_S);
    int64_t seconds;
    if (pdk__bounded_duration(st, field, n, PDK_NET_MAX_IDLE_TIMEOUT_S, "from 1 second to 1 day",
                              hint, &seconds) == 0)
        st->policy->network.idle_timeout_s = (uint32_t)seconds;
}

static const key_spec network_limits_keys[] = {
    {"connections", handle_network_connections},
    {"idle_timeout", handle_network_idle_timeout},
};

static void handle_network_limits(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__walk_section(st, n, field, network_limits_keys, PDK_ARRAY_SIZE(network_limits_keys));
}

static const key_spec network_keys[] = {
    {"default", handle_network_default},         {"rules", handle_network_rules},
    {"passthrough", handle_network_passthrough}, {"resolve", handle_network_resolve},
    {"upstream_ca", handle_network_upstream_ca}, {"limits", handle_network_limits},
};

void pdk__section_network(parse_state *st, const char *field, yaml_node_t *n)
{
    st->policy->network.enabled = true;
    pdk__walk_section(st, n, field, network_keys, PDK_ARRAY_SIZE(network_keys));
    /* A passthrough host is tunnelled unread: rules on its methods or paths could never
     * apply (the gateway would refuse its connections). */
    const pdk_net_rules *net = &st->policy->network;
    for (size_t i = 0; i < net->count; i++) {
        const pdk_net_rule *r = &net->rules[i];
        if ((r->methods || r->path) && pdk_net_rules_is_passthrough(net, r->host)) {
            pdk__diag_at(st, (size_t)st->policy->net_rule_lines[i], 0,
                         "network.rules[%zu]: %s is a passthrough host, whose requests are never "
                         "read, so a rule on their methods or path cannot apply (remove the host "
                         "from passthrough, or the rule's methods and path)",
                         i, r->host);
        }
    }
}

char *pdk_policy_describe_net_rule(const pdk_policy *policy, ssize_t rule)
{
    const pdk_net_rules *rules = &policy->network;
    if (rule < 0 || (size_t)rule >= rules->count)
        return xasprintf("the network default (%s)", pdk_decision_name(rules->default_decision));
    const pdk_net_rule *r = &rules->rules[rule];
    pdk_buf b = {0};
    pdk_buf_printf(&b, "network rule %zd (", rule + 1);
    if (policy->net_rule_lines && policy->net_rule_lines[rule] > 0)
        pdk_buf_printf(&b, "line %d: ", policy->net_rule_lines[rule]);
    pdk_buf_printf(&b, "%s", r->host);
    if (r->port)
        pdk_buf_printf(&b, ":%u", (unsigned)r->port);
    for (size_t i = 0; r->schemes && r->schemes[i]; i++)
        pdk_buf_printf(&b, "%s%s", i ? "," : " ", r->schemes[i]);
    for (size_t i = 0; r->methods && r->methods[i]; i++)
        pdk_buf_printf(&b, "%s%s", i ? "," : " ", r->methods[i]);
    if (r->path)
        pdk_buf_printf(&b, " %s", r->path);
    pdk_buf_printf(&b, " %s)", pdk_decision_name(r->decision));
    return steal_pointer(&b.data);
}
