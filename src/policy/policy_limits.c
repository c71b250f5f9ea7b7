/* policy_limits.c: the "limits" section: memory, pids, cpu and timeout. */
#include "policy_internal.h"

#include <errno.h>
#include <string.h>

#define MAX_PIDS    4194304                  /* the kernel's PID_MAX_LIMIT */
#define MAX_TIMEOUT (INT64_MAX / 1000000000) /* still fits in int64 nanoseconds */

static bool is_unlimited(const char *text)
{
    return strcmp(text, "unlimited") == 0;
}

static void handle_memory(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = pdk__scalar_text(st, field, n, "a size");
    if (!v)
        return;
    int64_t bytes;
    _cleanup_free_ char *q = pdk__quote_str(v);
    if (is_unlimited(v))
        st->policy->memory_bytes = 0;
    else if (pdk_parse_size(v, &bytes) == 0)
        st->policy->memory_bytes = bytes;
    else if (errno == ERANGE)
        pdk__diag_node(st, n, "%s: %s is too large", field, q);
    else
        pdk__diag_node(st, n, "%s: %s is not a size (use a number with K, M, G or T, e.g. 2G)",
                       field, q);
}

static void handle_pids(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = pdk__scalar_text(st, field, n, "a number");
    if (!v)
        return;
    _cleanup_free_ char *q = pdk__quote_str(v);
    uint64_t pids = 0;
    int r = is_unlimited(v) ? 0 : pdk__parse_decimal(v, MAX_PIDS, &pids);
    if (r == 0)
        st->policy->pids = (int64_t)pids;
    else if (r == -ERANGE)
        pdk__diag_node(st, n, "%s: %s is too large (at most %d)", field, q, MAX_PIDS);
    else
        pdk__diag_node(
            st, n,
            "%s: %s is not a number of processes (use a positive integer; 0 or unlimited "
            "for no limit)",
            field, q);
}

static void handle_cpu(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = pdk__scalar_text(st, field, n, "a number of cores");
    if (!v)
        return;
    _cleanup_free_ char *q = pdk__quote_str(v);
    int64_t millicores = 0;
    int r = is_unlimited(v) ? 0 : pdk__parse_cpu(v, &millicores);
    if (r == 0)
        st->policy->cpu_millicores = millicores;
    else if (r == -ERANGE)
        pdk__diag_node(st, n, "%s: %s is too large (at most %d cores)", field, q, MAX_CPU_CORES);
    else if (r == -EDOM)
        pdk__diag_node(st, n, "%s: %s is finer than 0.001 cores (use at most 3 decimals)", field,
                       q);
    else
        pdk__diag_node(st, n,
                       "%s: %s is not a number of cores (e.g. 2 or 1.5; 0 or unlimited for no "
                       "limit)",
                       field, q);
}

static void handle_timeout(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = pdk__scalar_text(st, field, n, "a duration");
    if (!v)
        return;
    _cleanup_free_ char *q = pdk__quote_str(v);
    int64_t seconds = 0;
    int r = is_unlimited(v) ? 0 : pdk_parse_duration(v, &seconds) == 0 ? 0 : -errno;
    if (r == 0 && seconds > MAX_TIMEOUT)
        r = -ERANGE;
    if (r == 0)
        st->policy->timeout_seconds = seconds;
    else if (r == -ERANGE)
        pdk__diag_node(st, n, "%s: %s is too long", field, q);
    else
        pdk__diag_node(st, n,
                       "%s: %s is not a duration (use seconds, or a number with s, m, h or d, e.g. "
                       "10m; 0 for no timeout)",
                       field, q);
}

static const key_spec limits_keys[] = {
    {"memory", handle_memory},
    {"pids", handle_pids},
    {"cpu", handle_cpu},
    {"timeout", handle_timeout},
};

void pdk__section_limits(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__walk_section(st, n, field, limits_keys, PDK_ARRAY_SIZE(limits_keys));
}
