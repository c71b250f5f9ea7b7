/* policy_values.c: the kinds of value that several sections share, each read from a node with
 * its own one-line diagnostics: numbers (decimal, sizes, durations, cores, bounded counts and
 * durations), booleans, decisions, paths ("~" expanded, normalised), variable names and host
 * patterns.
 */
#include "policy_internal.h"

#include "fsutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- numbers ---- */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Decimal digits only (no sign, no spaces) in [0, max]. Returns 0, -EINVAL or -ERANGE. */
int pdk__parse_decimal(const char *s, uint64_t max, uint64_t *out)
{
    if (!is_digit(*s))
        return -EINVAL;
    uint64_t v = 0;
    bool overflow = false;
    for (; *s; s++) {
        if (!is_digit(*s))
            return -EINVAL;
        uint64_t d = (uint64_t)(*s - '0');
        if (overflow || v > max / 10 || v * 10 + d > max)
            overflow = true;
        else
            v = v * 10 + d;
    }
    if (overflow)
        return -ERANGE;
    *out = v;
    return 0;
}

/* Leading decimal digits of *sp into *v (saturating at INT64_MAX, *overflow set). */
static bool take_digits(const char **sp, uint64_t *v, bool *overflow)
{
    const char *s = *sp;
    if (!is_digit(*s))
        return false;
    *v = 0;
    *overflow = false;
    for (; is_digit(*s); s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (*overflow || *v > ((uint64_t)INT64_MAX - d) / 10)
            *overflow = true;
        else
            *v = *v * 10 + d;
    }
    *sp = s;
    return true;
}

int pdk_parse_size(const char *s, int64_t *out_bytes)
{
    uint64_t v;
    bool overflow;
    if (!s || !take_digits(&s, &v, &overflow)) {
        errno = EINVAL;
        return -1;
    }
    unsigned shift = 0;
    switch (*s) {
    case 'k':
    case 'K':
        shift = 10;
        break;
    case 'm':
    case 'M':
        shift = 20;
        break;
    case 'g':
    case 'G':
        shift = 30;
        break;
    case 't':
    case 'T':
        shift = 40;
        break;
    default:
        break;
    }
    if (shift) {
        s++;
        if (*s == 'i' || *s == 'I') /* 2Gi, 2GiB */
            s++;
    }
    if (*s == 'B' || *s == 'b')
        s++;
    if (*s) {
        errno = EINVAL;
        return -1;
    }
    if (overflow || v > ((uint64_t)INT64_MAX >> shift)) {
        errno = ERANGE;
        return -1;
    }
    *out_bytes = (int64_t)(v << shift);
    return 0;
}

int pdk_parse_duration(const char *s, int64_t *out_seconds)
{
    uint64_t v;
    bool overflow;
    if (!s || !take_digits(&s, &v, &overflow)) {
        errno = EINVAL;
        return -1;
    }
    uint64_t unit = 1;
    switch (*s) {
    case 's':
        s++;
        break;
    case 'm':
        unit = 60;
        s++;
        break;
    case 'h':
        unit = 3600;
        s++;
        break;
    case 'd':
        unit = 86400;
        s++;
        break;
    default:
        break;
    }
    if (*s) {
        errno = EINVAL;
        return -1;
    }
    if (overflow || v > (uint64_t)INT64_MAX / unit) {
        errno = ERANGE;
        return -1;
    }
    *out_seconds = (int64_t)(v * unit);
    return 0;
}

/* Cores with up to three decimals ("1.5") as millicores. Returns 0, -EINVAL, -ERANGE, or
 * -EDOM when finer than a millicore. */
int pdk__parse_cpu(const char *s, int64_t *millicores)
{
    uint64_t whole = 0;
    bool overflow = false;
    bool have_whole = take_digits(&s, &whole, &overflow);
    uint64_t frac = 0;
    int frac_digits = 0;
    bool too_fine = false;
    if (*s == '.') {
        s++;
        for (; is_digit(*s); s++) {
            if (frac_digits < 3) {
                frac = frac * 10 + (uint64_t)(*s - '0');
                frac_digits++;
            } else if (*s != '0') {
                too_fine = true;
            }
        }
    }
    bool have_frac = frac_digits > 0;
    for (int i = frac_digits; i < 3; i++) /* ".5" -> 500 thousandths */
        frac *= 10;
    if ((!have_whole && !have_frac) || *s)
        return -EINVAL;
    if (overflow || whole > MAX_CPU_CORES)
        return -ERANGE;
    if (too_fine)
        return -EDOM;
    *millicores = (int64_t)(whole * 1000 + frac);
    return 0;
}

/* ---- durations and counts with bounds ---- */

/* A duration of 1 second to max_seconds in field: 0 with *out set, or -1 with a diagnostic
 * naming the range ("from 1 second to 30 days") and a hint (", e.g. 5m"). */
int pdk__bounded_duration(parse_state *st, const char *field, yaml_node_t *n, int64_t max_seconds,
                          const char *range, const char *hint, int64_t *out)
{
    const char *v = pdk__scalar_text(st, field, n, "a duration");
    if (!v)
        return -1;
    int64_t seconds = 0;
    if (pdk_parse_duration(v, &seconds) < 0 || seconds <= 0 || seconds > max_seconds) {
        _cleanup_free_ char *q = pdk__quote_str(v);
        pdk__diag_node(st, n,
                       "%s: %s is not a duration %s (use seconds, or a number with s, m, h or d%s)",
                       field, q, range, hint);
        return -1;
    }
    *out = seconds;
    return 0;
}

/* A count of 1 to max in field, named what ("held requests"): 0 with *out set, or -1 with a
 * diagnostic (and the default, when default_count is not 0). */
int pdk__bounded_count(parse_state *st, const char *field, yaml_node_t *n, const char *what,
                       uint64_t max, uint64_t default_count, uint64_t *out)
{
    _cleanup_free_ char *expected = xasprintf("a number of %s", what);
    const char *v = pdk__scalar_text(st, field, n, expected);
    if (!v)
        return -1;
    uint64_t count = 0;
    if (pdk__parse_decimal(v, max, &count) < 0 || count == 0) {
        _cleanup_free_ char *q = pdk__quote_str(v);
        _cleanup_free_ char *dflt =
            default_count ? xasprintf(" (the default is %llu)", (unsigned long long)default_count)
                          : xstrdup("");
        pdk__diag_node(st, n, "%s: %s is not a number of %s from 1 to %llu%s", field, q, what,
                       (unsigned long long)max, dflt);
        return -1;
    }
    *out = count;
    return 0;
}

/* ---- words ---- */

/* A YAML boolean (plain true/false, yes/no, on/off); false after a diagnostic. */
bool pdk__parse_bool(parse_state *st, const char *field, yaml_node_t *n, bool *out)
{
    const char *v = pdk__scalar_text(st, field, n, "true or false");
    if (!v)
        return false;
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes",
                                      "YES",  "on",   "On",   "ON"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No",
                                     "NO",    "off",   "Off",   "OFF"};
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        for (size_t i = 0; i < PDK_ARRAY_SIZE(yes); i++) {
            if (pdk__plain_is(n, yes[i]) || pdk__plain_is(n, no[i])) {
                *out = pdk__plain_is(n, yes[i]);
                return true;
            }
        }
    }
    _cleanup_free_ char *q = pdk__quote_str(v);
    pdk__diag_node(st, n, "%s: expected true or false, got %s%s", field, q,
                   n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? "" : " (remove the quotes)");
    return false;
}
bool pdk__parse_decision(parse_state *st, const char *field, yaml_node_t *n, pdk_decision *out)
{
    const char *v = pdk__scalar_text(st, field, n, "a decision");
    if (!v)
        return false;
    if (pdk_decision_parse(v, out) == 0)
        return true;
    _cleanup_free_ char *q = pdk__quote_str(v);
    pdk__diag_node(st, n, "%s: unknown decision %s (use allow, confine, ask or deny)", field, q);
    return false;
}
/* A rule's "quiet": true only on a deny rule (a refusal it decides is recorded, not shown);
 * an ask must reach a human. */
bool pdk__parse_quiet(parse_state *st, const char *field, yaml_node_t *n, bool decided,
                      pdk_decision decision, bool *out)
{
    _cleanup_free_ char *qfield = xasprintf("%s.quiet", field);
    if (!pdk__parse_bool(st, qfield, n, out))
        return false;
    if (*out && decided && decision != PDK_DECISION_DENY) {
        pdk__diag_node(st, n,
                       "%s: quiet is for deny rules (their refusals are recorded and not shown; a "
                       "rule that lets something through or asks a human is never quiet)",
                       qfield);
        return false;
    }
    return true;
}

/* ---- names ---- */

/* Expand and normalise one path. "~" and "~/x" become absolute under the home directory
 * (and must stay under it); "/x" is normalised; a relative path is accepted only when
 * workspace_relative (protect), normalised and kept relative, and must not climb out with
 * "..". Returns a new string, or NULL after a diagnostic. */
char *pdk__resolve_path(parse_state *st, const char *field, yaml_node_t *n, const char *text,
                        bool workspace_relative)
{
    _cleanup_free_ char *q = pdk__quote_str(text);
    _cleanup_free_ char *path = NULL;
    if (!*text) {
        pdk__diag_node(st, n, "%s: empty path", field);
        return NULL;
    }
    if (text[0] == '~') {
        if (text[1] != '\0' && text[1] != '/') {
            pdk__diag_node(st, n,
                           "%s: %s: \"~user\" paths are not supported (write the absolute path)",
                           field, q);
            return NULL;
        }
        if (!st->home) {
            pdk__diag_node(st, n,
                           "%s: %s cannot be expanded: no home directory is known (set $HOME, or "
                           "write an absolute path)",
                           field, q);
            return NULL;
        }
        _cleanup_free_ char *joined = pdk_path_join(st->home, text + 1);
        path = pdk_path_normalize(joined);
        if (!path || !pdk_path_is_within(path, st->home)) {
            pdk__diag_node(st, n, "%s: %s leaves the home directory (write the absolute path)",
                           field, q);
            return NULL;
        }
    } else if (text[0] == '/') {
        path = pdk_path_normalize(text);
    } else if (workspace_relative) {
        /* Lexical normalisation of a relative path: drop "." and empty components, resolve
         * ".." inside it; climbing above the start is an escape. */
        size_t len = strlen(text), o = 0;
        path = xmalloc(len + 2);
        const char *p = text;
        while (*p) {
            while (*p == '/')
                p++;
            if (!*p)
                break;
            const char *end = strchrnul(p, '/');
            size_t part = (size_t)(end - p);
            if (part == 1 && p[0] == '.') {
                /* nothing */
            } else if (part == 2 && p[0] == '.' && p[1] == '.') {
                if (o == 0) {
                    pdk__diag_node(st, n,
                                   "%s: %s leaves the workspace (protect paths are relative to the "
                                   "workspace root; remove the \"..\")",
                                   field, q);
                    return NULL;
                }
                while (o > 0 && path[o - 1] != '/')
                    o--;
                if (o > 0)
                    o--;
            } else {
                if (o > 0)
                    path[o++] = '/';
                memcpy(path + o, p, part);
                o += part;
            }
            p = end;
        }
        path[o] = '\0';
        if (o == 0) {
            pdk__diag_node(st, n,
                           "%s: %s is the workspace itself (name a file or directory inside it)",
                           field, q);
            return NULL;
        }
    } else {
        pdk__diag_node(st, n, "%s: %s must be absolute or start with ~/", field, q);
        return NULL;
    }
    if (workspace_relative && pdk_str_has_suffix(text, "/") && !pdk_str_has_suffix(path, "/")) {
        char *with_slash = xasprintf("%s/", path);
        free(path);
        path = with_slash;
    }
    return steal_pointer(&path);
}
/* [A-Za-z_][A-Za-z0-9_]*, with a trailing "*" when glob is allowed. */
bool pdk__env_name_valid(const char *s, size_t len, bool glob)
{
    if (glob && len > 1 && s[len - 1] == '*')
        len--;
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        if (!alpha && (i == 0 || !is_digit(c)))
            return false;
    }
    return true;
}
/* "host" from a YAML scalar as a normalised host pattern; NULL after a diagnostic. */
char *pdk__host_value(parse_state *st, const char *field, yaml_node_t *n, bool globs)
{
    const char *v = pdk__scalar_text(st, field, n, "a host name");
    if (!v)
        return NULL;
    const char *why = NULL;
    char *h = pdk_net_host_pattern_normalize(v, &why);
    if (h && !globs && strchr(h, '*')) {
        why = "a glob cannot be used here (name the host)";
        free(h);
        h = NULL;
    }
    if (!h) {
        _cleanup_free_ char *q = pdk__quote_str(v);
        pdk__diag_node(st, n, "%s: %s is not a host: %s", field, q, why);
    }
    return h;
}
