/* policy_env.c: the "env" section: pass (names let through) and set (values given). */
#include "policy_internal.h"

#include <string.h>

static void handle_env_pass(parse_state *st, const char *field, yaml_node_t *n)
{
    size_t count;
    yaml_node_item_t *items;
    if (!pdk__list_items(st, field, n, &items, &count))
        return;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = pdk__node_at(st, items[i]);
        if (!item)
            continue;
        const char *name = pdk__scalar_text(st, field, item, "a variable name");
        if (!name)
            continue;
        _cleanup_free_ char *q = pdk__quote_str(name);
        if (strcmp(name, "*") == 0)
            pdk__diag_node(st, item,
                           "%s: \"*\" would pass every variable, secrets included (name them, or "
                           "use a prefix such as \"LC_*\")",
                           field);
        else if (!pdk__env_name_valid(name, strlen(name), true))
            pdk__diag_node(
                st, item,
                "%s: %s is not a variable name (letters, digits and _, not starting with "
                "a digit; a trailing * matches a prefix)",
                field, q);
        else
            pdk_strv_push(&st->policy->env_pass, name);
    }
}

static void handle_env_set(parse_state *st, const char *field, yaml_node_t *n)
{
    if (!pdk__expect_type(st, field, n, YAML_MAPPING_NODE))
        return;
    pdk_policy *p = st->policy;
    size_t count = 0;
    _cleanup_free_ map_entry *entries = pdk__map_entries(st, n, field, &count);
    for (size_t i = 0; i < count; i++) {
        map_entry *e = &entries[i];
        if (!e->key || e->duplicate)
            continue;
        if (!pdk__env_name_valid(e->key, e->key_len, false)) {
            _cleanup_free_ char *q = pdk__quote(e->key, e->key_len);
            pdk__diag_node(
                st, e->key_node,
                "%s: %s is not a variable name (letters, digits and _, not starting with "
                "a digit)",
                field, q);
            continue;
        }
        _cleanup_free_ char *value_field = xasprintf("%s.%s", field, e->key);
        if (pdk__node_is_null(e->value)) {
            pdk__diag_node(st, e->value, "%s: missing value (write \"\" for an empty string)",
                           value_field);
            continue;
        }
        const char *value = pdk__scalar_text(st, value_field, e->value, "a value");
        if (!value)
            continue;
        p->env_set = xrealloc(p->env_set, (p->env_set_count + 1) * sizeof(*p->env_set));
        p->env_set[p->env_set_count].name = xstrdup(e->key);
        p->env_set[p->env_set_count].value = xstrdup(value);
        p->env_set_count++;
    }
}

static const key_spec env_keys[] = {
    {"pass", handle_env_pass},
    {"set", handle_env_set},
};

void pdk__section_env(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__walk_section(st, n, field, env_keys, PDK_ARRAY_SIZE(env_keys));
}
