/* policy_approvals.c: the "approvals" section: how long an ask waits and what a timeout means,
 * how long a network request is held and how many at once.
 */
#include "policy_internal.h"

#include <string.h>

#define MAX_APPROVAL_TIMEOUT (30 * 24 * 3600)
#define MAX_MAX_HELD         4096

static void handle_approval_timeout(parse_state *st, const char *field, yaml_node_t *n)
{
    int64_t seconds;
    if (pdk__bounded_duration(st, field, n, MAX_APPROVAL_TIMEOUT, "from 1 second to 30 days",
                              ", e.g. 5m", &seconds) == 0)
        st->policy->approval_timeout_seconds = seconds;
}

static void handle_approval_request_timeout(parse_state *st, const char *field, yaml_node_t *n)
{
    int64_t seconds;
    if (pdk__bounded_duration(st, field, n, MAX_APPROVAL_TIMEOUT, "from 1 second to 30 days",
                              ", e.g. 50s; keep it below the client's own timeout", &seconds) == 0)
        st->policy->approval_request_timeout_seconds = seconds;
}

static void handle_approval_max_held(parse_state *st, const char *field, yaml_node_t *n)
{
    uint64_t count;
    if (pdk__bounded_count(st, field, n, "held requests", MAX_MAX_HELD, 0, &count) == 0)
        st->policy->approval_max_held = (size_t)count;
}

static void handle_approval_on_timeout(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = pdk__scalar_text(st, field, n, "deny or allow");
    if (!v)
        return;
    if (strcmp(v, "deny") == 0)
        st->policy->approval_on_timeout = PDK_DECISION_DENY;
    else if (strcmp(v, "allow") == 0)
        st->policy->approval_on_timeout = PDK_DECISION_ALLOW;
    else {
        _cleanup_free_ char *q = pdk__quote_str(v);
        pdk__diag_node(st, n, "%s: %s is not what a timeout can mean (use deny or allow)", field,
                       q);
    }
}

static const key_spec approvals_keys[] = {
    {"timeout", handle_approval_timeout},
    {"on_timeout", handle_approval_on_timeout},
    {"request_timeout", handle_approval_request_timeout},
    {"max_held_requests", handle_approval_max_held},
};

void pdk__section_approvals(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__walk_section(st, n, field, approvals_keys, PDK_ARRAY_SIZE(approvals_keys));
}
