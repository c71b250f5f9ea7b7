/* policy_sandbox.c: the sections that shape the sandbox itself: "landlock" (the ABI required,
 * TCP port allowlists), "sandbox" (nested_userns) and "home" (persist).
 */
#include "policy_internal.h"

#include <stdlib.h>
#include <string.h>

#define MAX_LANDLOCK_ABI 64

/* ---- landlock ---- */

static void handle_min_abi(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = pdk__scalar_text(st, field, n, "a Landlock ABI version");
    if (!v)
        return;
    uint64_t abi;
    if (pdk__parse_decimal(v, MAX_LANDLOCK_ABI, &abi) == 0) {
        st->policy->landlock_min_abi = (int)abi;
        return;
    }
    _cleanup_free_ char *q = pdk__quote_str(v);
    pdk__diag_node(st, n,
                   "%s: %s is not a Landlock ABI version (use 0 to %d; 0 runs even without "
                   "Landlock)",
                   field, q, MAX_LANDLOCK_ABI);
}

static void port_list(parse_state *st, const char *field, yaml_node_t *n, bool *has,
                      uint16_t **ports, size_t *count)
{
    size_t nitems;
    yaml_node_item_t *items;
    if (!pdk__list_items(st, field, n, &items, &nitems))
        return;
    *has = true;
    for (size_t i = 0; i < nitems; i++) {
        yaml_node_t *item = pdk__node_at(st, items[i]);
        if (!item)
            continue;
        const char *v = pdk__scalar_text(st, field, item, "a port number");
        if (!v)
            continue;
        uint64_t port;
        if (pdk__parse_decimal(v, 65535, &port) != 0) {
            _cleanup_free_ char *q = pdk__quote_str(v);
            pdk__diag_node(st, item, "%s: %s is not a port (use a number from 0 to 65535)", field,
                           q);
            continue;
        }
        *ports = xrealloc(*ports, (*count + 1) * sizeof(**ports));
        (*ports)[(*count)++] = (uint16_t)port;
    }
}

static void handle_tcp_bind(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk_policy *p = st->policy;
    port_list(st, field, n, &p->has_tcp_bind, &p->tcp_bind, &p->tcp_bind_count);
}

static void handle_tcp_connect(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk_policy *p = st->policy;
    port_list(st, field, n, &p->has_tcp_connect, &p->tcp_connect, &p->tcp_connect_count);
}

static const key_spec landlock_keys[] = {
    {"min_abi", handle_min_abi},
    {"tcp_bind", handle_tcp_bind},
    {"tcp_connect", handle_tcp_connect},
};

void pdk__section_landlock(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__walk_section(st, n, field, landlock_keys, PDK_ARRAY_SIZE(landlock_keys));
}

/* ---- sandbox ---- */

static void handle_nested_userns(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__parse_bool(st, field, n, &st->policy->nested_userns);
}

static const key_spec sandbox_keys[] = {
    {"nested_userns", handle_nested_userns},
};

void pdk__section_sandbox(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__walk_section(st, n, field, sandbox_keys, PDK_ARRAY_SIZE(sandbox_keys));
}

/* ---- home ---- */

static void handle_home_persist(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = pdk__scalar_text(st, field, n, "a name");
    if (!v)
        return;
    size_t len = strlen(v);
    bool ok = len > 0 && len <= PDK_HOME_NAME_MAX && v[0] != '.' && v[0] != '-';
    for (size_t i = 0; ok && i < len; i++)
        ok = pdk_name_char((unsigned char)v[i]);
    if (!ok) {
        _cleanup_free_ char *q = pdk__quote_str(v);
        pdk__diag_node(st, n,
                       "%s: %s is not a home name (letters, digits, '.', '_', '-', at most %d, not "
                       "starting with '.' or '-'; e.g. codex)",
                       field, q, PDK_HOME_NAME_MAX);
        return;
    }
    free(st->policy->home_persist);
    st->policy->home_persist = xstrdup(v);
}

static const key_spec home_keys[] = {
    {"persist", handle_home_persist},
};

void pdk__section_home(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__walk_section(st, n, field, home_keys, PDK_ARRAY_SIZE(home_keys));
}
