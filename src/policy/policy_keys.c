/* policy_keys.c: the key tables. Every mapping of a policy is read against a table of the
 * keys it may have (key_spec: a name and what reads its value): a key that is not a scalar,
 * a repeated key and an unknown key (with "did you mean" for a near miss, else the known
 * keys) are reported here, the same way for every section.
 */
#include "policy_internal.h"

#include <stdlib.h>
#include <string.h>

static int compare_entries(const void *a, const void *b)
{
    const map_entry *x = *(const map_entry *const *)a, *y = *(const map_entry *const *)b;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(x->key, y->key, n);
    if (c)
        return c;
    if (x->key_len != y->key_len)
        return x->key_len < y->key_len ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* The pairs of a mapping node, in document order. Keys that are not scalars and repeated
 * keys are reported here (where names the mapping: "limits", "env.set", NULL for the top
 * level) and marked so that callers skip them. */
map_entry *pdk__map_entries(parse_state *st, yaml_node_t *map, const char *where, size_t *count)
{
    yaml_node_pair_t *start = map->data.mapping.pairs.start;
    size_t n = (size_t)(map->data.mapping.pairs.top - start);
    map_entry *entries = xcalloc(n, sizeof(*entries));
    _cleanup_free_ map_entry **sorted = xcalloc(n, sizeof(*sorted));
    size_t nsorted = 0;
    _cleanup_free_ char *in = where ? xasprintf("in \"%s\"", where) : xstrdup("at the top level");

    for (size_t i = 0; i < n; i++) {
        map_entry *e = &entries[i];
        e->order = i;
        e->key_node = pdk__node_at(st, start[i].key);
        e->value = pdk__node_at(st, start[i].value);
        if (!e->key_node || !e->value)
            continue;
        if (e->key_node->type != YAML_SCALAR_NODE || pdk__node_is_null(e->key_node)) {
            _cleanup_free_ char *got = pdk__node_describe(e->key_node);
            pdk__diag_node(st, e->key_node, "expected a key name %s, got %s", in, got);
            continue;
        }
        e->key = (const char *)e->key_node->data.scalar.value;
        e->key_len = e->key_node->data.scalar.length;
        sorted[nsorted++] = e;
    }

    /* Sorting finds repeats in O(n log n) even in a mapping with thousands of keys. */
    if (nsorted > 1)
        qsort(sorted, nsorted, sizeof(*sorted), compare_entries);
    map_entry *first = nsorted ? sorted[0] : NULL; /* of the current group of equal keys */
    for (size_t i = 1; i < nsorted; i++) {
        map_entry *e = sorted[i];
        if (e->key_len != first->key_len || memcmp(e->key, first->key, e->key_len) != 0) {
            first = e;
            continue;
        }
        e->duplicate = true;
        _cleanup_free_ char *q = pdk__quote(e->key, e->key_len);
        pdk__diag_node(st, e->key_node, "duplicate key %s %s (first at line %zu; remove one)", q,
                       in, first->key_node->start_mark.line + 1);
    }
    *count = n;
    return entries;
}

static bool key_is(const map_entry *e, const char *name)
{
    return e->key_len == strlen(name) && memcmp(e->key, name, e->key_len) == 0;
}

/* Levenshtein distance; SIZE_MAX for strings too long to be a misspelt key. */
static size_t edit_distance(const char *a, size_t la, const char *b)
{
    size_t lb = strlen(b);
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    size_t prev[65], cur[65];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t best = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            cur[j] = best;
        }
        memcpy(prev, cur, (lb + 1) * sizeof(size_t));
    }
    return prev[lb];
}

static void unknown_key(parse_state *st, const map_entry *e, const char *section,
                        const key_spec *keys, size_t nkeys)
{
    _cleanup_free_ char *q = pdk__quote(e->key, e->key_len);
    _cleanup_free_ char *in =
        section ? xasprintf("in \"%s\"", section) : xstrdup("at the top level");
    const char *best = NULL;
    size_t best_distance = 3; /* suggest only within distance 2 */
    for (size_t i = 0; i < nkeys; i++) {
        size_t d = edit_distance(e->key, e->key_len, keys[i].name);
        if (d < best_distance) {
            best_distance = d;
            best = keys[i].name;
        }
    }
    if (best) {
        pdk__diag_node(st, e->key_node, "unknown key %s %s (did you mean \"%s\"?)", q, in, best);
        return;
    }
    pdk_buf known = {0};
    for (size_t i = 0; i < nkeys; i++)
        pdk_buf_printf(&known, "%s%s", i ? ", " : "", keys[i].name);
    pdk__diag_node(st, e->key_node, "unknown key %s %s (known keys: %s)", q, in, known.data);
    pdk_buf_free(&known);
}

/* Walk a mapping against a table of keys; section is NULL for the top level. */
void pdk__walk_section(parse_state *st, yaml_node_t *map, const char *section, const key_spec *keys,
                       size_t nkeys)
{
    if (section && !pdk__expect_type(st, section, map, YAML_MAPPING_NODE))
        return;
    size_t n = 0;
    _cleanup_free_ map_entry *entries = pdk__map_entries(st, map, section, &n);
    for (size_t i = 0; i < n; i++) {
        map_entry *e = &entries[i];
        if (!e->key || e->duplicate)
            continue;
        const key_spec *spec = NULL;
        for (size_t k = 0; k < nkeys && !spec; k++)
            if (key_is(e, keys[k].name))
                spec = &keys[k];
        if (spec) {
            _cleanup_free_ char *field =
                section ? xasprintf("%s.%s", section, spec->name) : xstrdup(spec->name);
            spec->handle(st, field, e->value);
            continue;
        }
        unknown_key(st, e, section, keys, nkeys);
    }
}

/* The values of a mapping's keys (values[k] for keys[k], NULL when absent; the handlers are
 * not used), any other key reported; false (after a diagnostic) when n is not a mapping. */
bool pdk__mapping_values(parse_state *st, const char *field, yaml_node_t *n, const key_spec *keys,
                         size_t nkeys, yaml_node_t **values)
{
    if (!pdk__expect_type(st, field, n, YAML_MAPPING_NODE))
        return false;
    for (size_t k = 0; k < nkeys; k++)
        values[k] = NULL;
    size_t count = 0;
    _cleanup_free_ map_entry *entries = pdk__map_entries(st, n, field, &count);
    for (size_t i = 0; i < count; i++) {
        map_entry *e = &entries[i];
        if (!e->key || e->duplicate)
            continue;
        size_t k = 0;
        while (k < nkeys && !key_is(e, keys[k].name))
            k++;
        if (k < nkeys)
            values[k] = e->value;
        else
            unknown_key(st, e, field, keys, nkeys);
    }
    return true;
}

yaml_node_t *pdk__key_value(const key_spec *keys, size_t nkeys, yaml_node_t *const *values,
                            const char *name)
{
    for (size_t k = 0; k < nkeys; k++)
        if (strcmp(keys[k].name, name) == 0)
            return values[k];
    return NULL;
}

bool pdk__walk_values(parse_state *st, const char *field, yaml_node_t *n, const key_spec *all,
                      size_t nall, yaml_node_t *const *values, const key_spec *keys, size_t nkeys,
                      const char *what)
{
    bool ok = true;
    for (size_t a = 0; a < nall; a++) {
        const key_spec *spec = NULL;
        for (size_t k = 0; k < nkeys && !spec; k++)
            if (strcmp(keys[k].name, all[a].name) == 0)
                spec = &keys[k];
        if (values[a] && (!spec || spec->handle)) {
            _cleanup_free_ char *f = xasprintf("%s.%s", field, all[a].name);
            if (spec) {
                spec->handle(st, f, values[a]);
            } else {
                pdk__diag_node(st, values[a], "%s: not a key of %s (remove it)", f, what);
                ok = false;
            }
        } else if (!values[a] && spec && spec->needed_by) {
            pdk__diag_node(st, n, "%s: %s needs \"%s\"%s", field, spec->needed_by, spec->name,
                           spec->hint ? spec->hint : "");
            ok = false;
        }
    }
    return ok;
}
