/* net_rules.c: see net_rules.h. */
#include "net_rules.h"

#include "net_address.h"
#include "util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---- hosts ---- */

static bool host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
           c == ':'; /* IPv6 literals */
}

char *pdk_net_host_pattern_normalize(const char *text, const char **why)
{
    *why = NULL;
    if (!text || !*text) {
        *why = "an empty host matches nothing";
        return NULL;
    }
    size_t len = strlen(text);
    if (text[0] == '[' && len > 2 && text[len - 1] == ']') { /* [::1] */
        text++;
        len -= 2;
    }
    char *h = xstrndup(text, len);
    for (char *p = h; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    len = strlen(h);
    if (len > 1 && h[len - 1] == '.' && h[len - 2] != '.' && h[len - 2] != '*' && !strchr(h, ':'))
        h[--len] = '\0'; /* "name." is "name"; "*." stays (and is refused below) */
    if (strcmp(h, "*") == 0)
        return h;
    const char *name = h;
    if (strncmp(h, "*.", 2) == 0)
        name = h + 2;
    if (!*name || len > 253) {
        *why =
            len > 253 ? "a host name is at most 253 characters" : "\"*.\" needs a domain after it";
        free(h);
        return NULL;
    }
    for (const char *p = name; *p; p++) {
        if (*p == '*') {
            *why = "\"*\" is allowed only as the whole host or as a leading \"*.\"";
            free(h);
            return NULL;
        }
        if (!host_char(*p)) {
            *why = "a host has only letters, digits, \"-\", \"_\" and dots (no scheme, port "
                   "or path: those are keys of their own)";
            free(h);
            return NULL;
        }
    }
    if (name[0] == '.' || strstr(name, "..")) {
        *why = "a host has no empty labels";
        free(h);
        return NULL;
    }
    return h;
}

bool pdk_net_host_matches(const char *pattern, const char *host)
{
    if (strcmp(pattern, "*") == 0)
        return true;
    if (strncmp(pattern, "*.", 2) == 0) {
        size_t ls = strlen(pattern + 1), lh = strlen(host); /* ".suffix" */
        return lh > ls && strcmp(host + lh - ls, pattern + 1) == 0;
    }
    return strcmp(pattern, host) == 0;
}

/* ---- paths ---- */

/* An escaped slash or backslash (escapes are upper case in a normalised path). */
static bool encoded_separator(const char *p)
{
    return p[0] == '%' && ((p[1] == '2' && p[2] == 'F') || (p[1] == '5' && p[2] == 'C'));
}

/* "*" within a segment, "**" across; an escape such as %2F is an ordinary character, but
 * "*" does not match one that stands for a slash or backslash. */
static bool glob_match(const char *g, const char *p)
{
    while (*g) {
        if (g[0] == '*' && g[1] == '*') {
            g += 2;
            if (!*g)
                return true;
            for (const char *q = p;; q++) {
                if (glob_match(g, q))
                    return true;
                if (!*q)
                    return false;
            }
        }
        if (*g == '*') {
            g++;
            for (const char *q = p;; q++) {
                if (glob_match(g, q))
                    return true;
                if (!*q || *q == '/' || encoded_separator(q))
                    return false;
            }
        }
        if (*g != *p)
            return false;
        g++;
        p++;
    }
    return *p == '\0';
}

bool pdk_net_path_matches(const char *glob, const char *path)
{
    size_t lg = strlen(glob);
    /* "**" as the last segment also matches the directory itself */
    if (lg >= 3 && strcmp(glob + lg - 3, "/**") == 0 && strlen(path) == lg - 3 &&
        strncmp(glob, path, lg - 3) == 0)
        return true;
    return glob_match(glob, path);
}

static bool unreserved(int c)
{
    return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* The length of a segment's name: what comes before its parameters (";" or an escaped
 * one), which servers that take path parameters (Tomcat, Jetty, Spring) strip. */
static size_t segment_name_length(const char *segment, size_t length)
{
    for (size_t i = 0; i < length; i++)
        if (segment[i] == ';' ||
            (segment[i] == '%' && i + 2 < length && segment[i + 1] == '3' && segment[i + 2] == 'B'))
            return i;
    return length;
}

/* Whether a segment (length bytes) is "." (1) or ".." (2), or 0. With parameters too
 * ("..;", "..;jsessionid=1", ".%3Bx"): a server that strips them walks up as for "..". */
static int dot_segment(const char *segment, size_t length)
{
    size_t name = segment_name_length(segment, length);
    if (name == 1 && segment[0] == '.')
        return 1;
    if (name == 2 && segment[0] == '.' && segment[1] == '.')
        return 2;
    return 0;
}

/* RFC 3986 5.2.4, on a path that starts with "/" (in place), dot segments with parameters
 * counted as dot segments. */
static void remove_dot_segments(char *path)
{
    char *out = path;      /* the output so far: "" or "/segment..." */
    const char *in = path; /* at the "/" before the next segment */
    while (*in) {
        const char *segment = in + 1;
        const char *end = strchrnul(segment, '/');
        size_t length = (size_t)(end - segment);
        int dots = dot_segment(segment, length);
        if (dots == 2) {
            while (out > path && *--out != '/') {
            }
        }
        if (dots) {
            if (!*end) { /* "/a/.." and "/a/." end with a "/" */
                *out++ = '/';
                break;
            }
            in = end;
            continue;
        }
        memmove(out, in, length + 1); /* the "/" and the segment; out never passes in */
        out += length + 1;
        in = end;
    }
    if (out == path)
        *out++ = '/';
    *out = '\0';
}

/* Whether path (escapes normalised) has "." or ".." segments once %2F and %5C are read as
 * slashes and backslashes as slashes. */
static bool hidden_dot_segments(const char *path)
{
    pdk_buf b = {0};
    for (const char *p = path; *p; p++) {
        if (p[0] == '%' && p[1] == '2' && p[2] == 'F') {
            pdk_buf_append(&b, "/", 1);
            p += 2;
        } else if (p[0] == '%' && p[1] == '5' && p[2] == 'C') {
            pdk_buf_append(&b, "/", 1);
            p += 2;
        } else if (p[0] == '\\') {
            pdk_buf_append(&b, "/", 1);
        } else {
            pdk_buf_append(&b, p, 1);
        }
    }
    bool found = false;
    const char *s = b.data ? b.data : "";
    for (const char *seg = s; seg && *seg && !found;) {
        const char *slash = strchr(seg, '/');
        size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
        found = dot_segment(seg, n) != 0;
        seg = slash ? slash + 1 : NULL;
    }
    pdk_buf_free(&b);
    return found;
}

char *pdk_net_path_without_parameters(const char *path)
{
    pdk_buf b = {0};
    for (const char *segment = path; *segment;) {
        const char *end = strchrnul(segment + 1, '/');
        size_t length = (size_t)(end - segment) - 1; /* after its "/" */
        pdk_buf_append(&b, segment, 1 + segment_name_length(segment + 1, length));
        segment = end;
    }
    char *out = b.data ? b.data : xstrdup("/");
    remove_dot_segments(out);
    return out;
}

char *pdk_net_path_normalize(const char *target, char **query, const char **why)
{
    *why = NULL;
    if (query)
        *query = NULL;
    if (!target || target[0] != '/') {
        *why = "the path does not start with \"/\"";
        return NULL;
    }
    size_t len = strcspn(target, "?#"); /* the path ends at the query or the fragment */
    const char *q = target[len] == '?' ? target + len : NULL;
    pdk_buf b = {0};
    for (size_t i = 0; i < len; i++) {
        char c = target[i];
        if (c == '%') {
            int hi = i + 1 < len ? pdk_hex_value(target[i + 1]) : -1;
            int lo = i + 2 < len ? pdk_hex_value(target[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                *why = "the path has a \"%\" that is not followed by two hex digits";
                pdk_buf_free(&b);
                return NULL;
            }
            int v = hi * 16 + lo;
            if (v == 0) {
                *why = "the path has an encoded NUL (%00)";
                pdk_buf_free(&b);
                return NULL;
            }
            if (unreserved(v)) {
                char ch = (char)v;
                pdk_buf_append(&b, &ch, 1);
            } else {
                char esc[4] = {'%', "0123456789ABCDEF"[v >> 4], "0123456789ABCDEF"[v & 15], 0};
                pdk_buf_append(&b, esc, 3);
            }
            i += 2;
            continue;
        }
        if ((unsigned char)c <= 0x20 || c == 0x7f) {
            *why = "the path has a space or a control character";
            pdk_buf_free(&b);
            return NULL;
        }
        pdk_buf_append(&b, &c, 1);
    }
    char *path = b.data ? b.data : xstrdup("/");
    remove_dot_segments(path);
    if (hidden_dot_segments(path)) {
        *why = "the path hides \".\" or \"..\" segments behind an encoded slash or a backslash";
        free(path);
        return NULL;
    }
    if (query && q)
        *query = xstrndup(q + 1, strcspn(q + 1, "#"));
    return path;
}

/* ---- judging ---- */

static void judge_path(const pdk_net_rules *rules, const pdk_net_request *req, pdk_net_verdict *out)
{
    /* Connection level: full rules hold for any request; partial ones for some. */
    int full = -1, partial_max = -1, partial_min = 4;
    ssize_t full_rule = -1, partial_rule = -1;
    for (size_t i = 0; i < rules->count; i++) {
        const pdk_net_rule *r = &rules->rules[i];
        if (!pdk_net_host_matches(r->host, req->host) || (r->port && r->port != req->port))
            continue;
        bool scheme_known = !r->schemes || req->scheme;
        if (req->scheme && r->schemes && !pdk_strv_contains(r->schemes, req->scheme))
            continue;
        bool whole = scheme_known;
        if (r->methods) {
            if (req->method) {
                if (!pdk_strv_contains(r->methods, req->method))
                    continue;
            } else {
                whole = false;
            }
        }
        if (r->path) {
            if (req->path) {
                if (!pdk_net_path_matches(r->path, req->path))
                    continue;
            } else {
                whole = false;
            }
        }
        int d = (int)r->decision;
        if (whole) {
            if (d > full) {
                full = d;
                full_rule = (ssize_t)i;
            }
        } else {
            if (d > partial_max) {
                partial_max = d;
                partial_rule = (ssize_t)i;
            }
            if (d < partial_min)
                partial_min = d;
        }
    }
    int lo, hi;
    ssize_t lo_rule, hi_rule;
    if (full >= 0) {
        lo = full;
        lo_rule = full_rule;
        hi = partial_max > full ? partial_max : full;
        hi_rule = partial_max > full ? partial_rule : full_rule;
    } else {
        int def = (int)rules->default_decision;
        lo = partial_max >= 0 && partial_min < def ? partial_min : def;
        lo_rule = -1;
        hi = partial_max > def ? partial_max : def;
        hi_rule = partial_max > def ? partial_rule : -1;
    }
    out->decision = (pdk_decision)hi;
    out->scope = lo == hi ? PDK_NET_DECIDED : PDK_NET_PER_REQUEST;
    out->rule = lo == hi ? (full >= 0 ? lo_rule : hi_rule) : hi_rule;
    if (out->rule >= 0 && rules->rules[out->rule].reason)
        out->reason = rules->rules[out->rule].reason;
    else if (out->rule >= 0)
        out->reason = out->decision == PDK_DECISION_DENY  ? "denied by a network rule"
                      : out->decision == PDK_DECISION_ASK ? "a network rule asks a human"
                                                          : "allowed by a network rule";
    else
        out->reason = out->decision == PDK_DECISION_DENY
                          ? "no network rule allows it (network.default: deny)"
                          : "the network default";
}

void pdk_net_rules_judge(const pdk_net_rules *rules, const pdk_net_request *req,
                         pdk_net_verdict *out)
{
    judge_path(rules, req, out);
    if (!req->path || (!strchr(req->path, ';') && !strstr(req->path, "%3B")))
        return;
    /* Path parameters: a server that strips them serves "/admin;x/y" as "/admin/y". The
     * stricter of the two readings holds. */
    _cleanup_free_ char *bare = pdk_net_path_without_parameters(req->path);
    if (strcmp(bare, req->path) == 0)
        return;
    pdk_net_request stripped = *req;
    stripped.path = bare;
    pdk_net_verdict other;
    judge_path(rules, &stripped, &other);
    if (other.decision > out->decision ||
        (other.decision == out->decision && out->rule < 0 && other.rule >= 0))
        *out = other; /* the stricter; at a tie, a rule's reason over the default's */
}

bool pdk_net_rules_could_reach(const pdk_net_rules *rules, const char *host)
{
    if (rules->default_decision != PDK_DECISION_DENY)
        return true;
    for (size_t i = 0; i < rules->count; i++)
        if (rules->rules[i].decision != PDK_DECISION_DENY &&
            pdk_net_host_matches(rules->rules[i].host, host))
            return true;
    return false;
}

bool pdk_net_rules_names_exactly(const pdk_net_rules *rules, const char *host)
{
    for (size_t i = 0; i < rules->count; i++)
        if (rules->rules[i].decision != PDK_DECISION_DENY && !strchr(rules->rules[i].host, '*') &&
            strcmp(rules->rules[i].host, host) == 0)
            return true;
    return false;
}

bool pdk_net_rules_host_loopback(const pdk_net_rules *rules, const pdk_net_request *req)
{
    for (size_t i = 0; i < rules->count; i++) {
        const pdk_net_rule *r = &rules->rules[i];
        if (!r->host_loopback || r->decision == PDK_DECISION_DENY || strcmp(r->host, req->host) ||
            (r->port && r->port != req->port) ||
            (req->scheme && r->schemes && !pdk_strv_contains(r->schemes, req->scheme)) ||
            (req->method && r->methods && !pdk_strv_contains(r->methods, req->method)) ||
            (req->path && r->path && !pdk_net_path_matches(r->path, req->path)))
            continue;
        return true;
    }
    return false;
}

bool pdk_net_host_is_loopback(const char *host)
{
    pdk_ip ip;
    if (pdk_ip_parse_host(host, &ip) == PDK_HOST_ADDRESS) {
        pdk_ip_class cls = pdk_ip_classify(&ip);
        return cls == PDK_IP_LOOPBACK || cls == PDK_IP_UNSPECIFIED;
    }
    size_t n = strlen(host);
    return strcmp(host, "localhost") == 0 || (n > 10 && strcmp(host + n - 10, ".localhost") == 0);
}

bool pdk_net_rules_is_passthrough(const pdk_net_rules *rules, const char *host)
{
    for (size_t i = 0; rules->passthrough && rules->passthrough[i]; i++)
        if (pdk_net_host_matches(rules->passthrough[i], host))
            return true;
    return false;
}

const pdk_net_resolve *pdk_net_rules_resolve(const pdk_net_rules *rules, const char *host,
                                             uint16_t port)
{
    for (size_t i = 0; i < rules->resolve_count; i++)
        if (rules->resolve[i].port == port && strcmp(rules->resolve[i].host, host) == 0)
            return &rules->resolve[i];
    return NULL;
}

static int compare_ports(const void *a, const void *b)
{
    return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

uint16_t *pdk_net_rules_ports(const pdk_net_rules *rules, size_t *count)
{
    size_t n = 0, cap = 2 + rules->count + rules->resolve_count;
    uint16_t *ports = xcalloc(cap, sizeof(*ports));
    ports[n++] = 80;
    ports[n++] = 443;
    for (size_t i = 0; i < rules->count; i++)
        if (rules->rules[i].port)
            ports[n++] = rules->rules[i].port;
    for (size_t i = 0; i < rules->resolve_count; i++)
        ports[n++] = rules->resolve[i].port;
    qsort(ports, n, sizeof(*ports), compare_ports);
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (w == 0 || ports[w - 1] != ports[i])
            ports[w++] = ports[i];
    *count = w;
    return ports;
}

void pdk_net_rule_clear(pdk_net_rule *r)
{
    free(r->host);
    pdk_strv_free(r->schemes);
    pdk_strv_free(r->methods);
    free(r->path);
    free(r->reason);
    memset(r, 0, sizeof(*r));
}

void pdk_net_rules_free(pdk_net_rules *rules)
{
    for (size_t i = 0; i < rules->count; i++)
        pdk_net_rule_clear(&rules->rules[i]);
    free(rules->rules);
    pdk_strv_free(rules->passthrough);
    for (size_t i = 0; i < rules->resolve_count; i++) {
        free(rules->resolve[i].host);
        free(rules->resolve[i].to_host);
    }
    free(rules->resolve);
    pdk_strv_free(rules->upstream_ca);
    memset(rules, 0, sizeof(*rules));
}
