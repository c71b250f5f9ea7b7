/* policy_filesystem.c: the "filesystem" section: read_deny, read_allow, write and protect. */
#include "policy_internal.h"

#include <string.h>

static void path_list(parse_state *st, const char *field, yaml_node_t *n, char ***out,
                      bool workspace_relative, bool hides)
{
    size_t count;
    yaml_node_item_t *items;
    if (!pdk__list_items(st, field, n, &items, &count))
        return;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = pdk__node_at(st, items[i]);
        if (!item)
            continue;
        /* A plain ~ is null to YAML, but in a list of paths it can only mean the home. */
        bool tilde = item->type == YAML_SCALAR_NODE &&
                     item->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && pdk__plain_is(item, "~");
        const char *text = tilde ? "~" : pdk__scalar_text(st, field, item, "a path");
        if (!text)
            continue;
        char *path = pdk__resolve_path(st, field, item, text, workspace_relative);
        if (path && hides && strcmp(path, "/") == 0) {
            /* Hiding / hides everything the command could run. */
            pdk__diag_node(st, item,
                           "%s: / would hide the whole system, so nothing could run (name "
                           "the directories to hide)",
                           field);
            free(path);
            continue;
        }
        if (path)
            pdk_strv_push_take(out, path);
    }
}

static void handle_read_deny(parse_state *st, const char *field, yaml_node_t *n)
{
    path_list(st, field, n, &st->policy->read_deny, false, true);
}

static void handle_read_allow(parse_state *st, const char *field, yaml_node_t *n)
{
    path_list(st, field, n, &st->policy->read_allow, false, false);
}

static void handle_write(parse_state *st, const char *field, yaml_node_t *n)
{
    path_list(st, field, n, &st->policy->write, false, false);
}

static void handle_protect(parse_state *st, const char *field, yaml_node_t *n)
{
    path_list(st, field, n, &st->policy->protect, true, false);
}

static const key_spec filesystem_keys[] = {
    {"read_deny", handle_read_deny},
    {"read_allow", handle_read_allow},
    {"write", handle_write},
    {"protect", handle_protect},
};

void pdk__section_filesystem(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__walk_section(st, n, field, filesystem_keys, PDK_ARRAY_SIZE(filesystem_keys));
}
