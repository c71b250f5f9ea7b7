/* policy_internal.h: what the files of the policy parser share (not an API; policy.h is).
 *
 * policy.c reads the document (version, the top-level keys) and holds the entry points;
 * policy_yaml.c the two libyaml passes, the diagnostics and the node helpers; policy_keys.c
 * the key tables every mapping is read against; policy_values.c the kinds of value several
 * sections share; one file per section reads that section (policy_filesystem.c, policy_env.c,
 * policy_limits.c, policy_sandbox.c for landlock, sandbox and home, policy_commands.c,
 * policy_approvals.c, policy_network.c, policy_credentials.c); policy_builtin.c has the
 * built-in lists and the built-in default.
 *
 * A problem is never fatal on its own: the walk goes on so that one run shows all of them
 * (up to MAX_DIAGS). Every reader below reports what it finds wrong as a diagnostic at the
 * node's position and returns NULL, false or -1; the load fails when there is at least one
 * diagnostic, and the partly filled policy is then freed and never reaches the caller.
 */
#ifndef PADDOCK_POLICY_INTERNAL_H
#define PADDOCK_POLICY_INTERNAL_H

#include "policy.h"

#include "util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#define MAX_DIAGS     200 /* kept; then "too many problems" */
#define MAX_CPU_CORES 65536

typedef struct parse_state {
    const char *name;
    const char *text;
    size_t len;
    char *home; /* normalised ctx->home, or NULL when none is known */
    yaml_document_t *doc;
    pdk_policy *policy;
    bool saw_version;
    pdk_policy_diag *diags;
    size_t ndiags;
    bool truncated;
    struct pending_example *examples; /* checked after the walk (policy_commands.c) */
    size_t nexamples;
    struct credential_read *credential; /* the one being read (policy_credentials.c) */
} parse_state;

/* One key a mapping may have, and what reads its value (field: its dotted name, such as
 * "limits.memory" or "credentials[0].hosts"). A required key names what needs it, for the
 * message when it is missing: "FIELD: NEEDED_BY needs "NAME"HINT" ("credentials[0]: a
 * static credential needs "value" ({secret: NAME})"). */
typedef struct key_spec {
    const char *name;
    void (*handle)(parse_state *st, const char *field, yaml_node_t *value);
    const char *needed_by; /* NULL: optional */
    const char *hint;      /* NULL or " (...)" */
} key_spec;

/* One key: value pair of a mapping, as collected by pdk__map_entries(). */
typedef struct map_entry {
    const char *key; /* NULL when the key is not a usable scalar (reported) */
    size_t key_len;
    size_t order;
    yaml_node_t *key_node;
    yaml_node_t *value;
    bool duplicate; /* a later repetition of an earlier key (reported) */
} map_entry;

/* ---- policy_yaml.c: diagnostics ---- */

/* line and column are 1-based; 0 when unknown. */
void pdk__diag_at(parse_state *st, size_t line, size_t column, const char *fmt, ...)
    PDK_PRINTF(4, 5);
void pdk__diag_mark(parse_state *st, const yaml_mark_t *mark, const char *fmt, ...)
    PDK_PRINTF(3, 4);
#define pdk__diag_node(st, node, ...) pdk__diag_mark((st), &(node)->start_mark, __VA_ARGS__)
/* Stable sort by position; diagnostics without a position come first. */
void pdk__diag_sort(pdk_policy_diag *d, size_t n);
/* The 1-based line of a node, for what remembers where it came from (rule_lines). */
int pdk__node_line(const yaml_node_t *n);

/* s quoted for a one-line message: "...", escaped, long values cut with "..." (new). */
char *pdk__quote(const char *s, size_t len);
char *pdk__quote_str(const char *s);

/* ---- policy_yaml.c: nodes ---- */

bool pdk__node_is_null(const yaml_node_t *n);
bool pdk__plain_is(const yaml_node_t *n, const char *text);
/* What a node is, for "expected X, got Y" (new string). */
char *pdk__node_describe(const yaml_node_t *n);
yaml_node_t *pdk__node_at(parse_state *st, int index);
/* "FIELD: expected WHAT, got ..." (with a hint for an empty value). */
void pdk__expected(parse_state *st, const char *field, yaml_node_t *n, const char *what);
bool pdk__expect_type(parse_state *st, const char *field, yaml_node_t *n, yaml_node_type_t type);
/* The text of a non-null scalar without NUL characters, or NULL after a diagnostic; what
 * names the expected thing ("a size"). */
const char *pdk__scalar_text(parse_state *st, const char *field, yaml_node_t *n, const char *what);
/* The items of a list node; false (after a diagnostic) when n is not a list. */
bool pdk__list_items(parse_state *st, const char *field, yaml_node_t *n, yaml_node_item_t **items,
                     size_t *count);
/* fn on each item of a list node (field "FIELD[i]"); a diagnostic when n is not a list. */
void pdk__each_item(parse_state *st, const char *field, yaml_node_t *n,
                    void (*fn)(parse_state *st, const char *field, yaml_node_t *item));

/* ---- policy_yaml.c: libyaml ---- */

/* Both passes over st->text: true with *doc loaded (the caller deletes it, then parser),
 * false after diagnostics (nothing to delete). */
bool pdk__yaml_load(parse_state *st, yaml_parser_t *parser, yaml_document_t *doc);

/* ---- policy_keys.c: key tables ---- */

/* The pairs of a mapping node, in document order (*count of them; free the array). Keys that
 * are not scalars and repeated keys are reported (where names the mapping: "limits",
 * "env.set", NULL for the top level) and marked so that callers skip them. */
map_entry *pdk__map_entries(parse_state *st, yaml_node_t *map, const char *where, size_t *count);
/* Walk a mapping against a table of keys, each handler in document order; section is NULL
 * for the top level. */
void pdk__walk_section(parse_state *st, yaml_node_t *map, const char *section, const key_spec *keys,
                       size_t nkeys);
/* The values of a mapping's keys (values[k] for keys[k], NULL when absent; the handlers are
 * not used), any other key reported; false (after a diagnostic) when n is not a mapping. */
bool pdk__mapping_values(parse_state *st, const char *field, yaml_node_t *n, const key_spec *keys,
                         size_t nkeys, yaml_node_t **values);
/* The value pdk__mapping_values collected for the key called name (of keys), or NULL. */
yaml_node_t *pdk__key_value(const key_spec *keys, size_t nkeys, yaml_node_t *const *values,
                            const char *name);
/* A mapping n (an item such as a credential) whose keys depend on its kind: values were
 * collected by pdk__mapping_values against all (every key an item of any kind can have, so
 * that an unknown key is told all of them), and are read against keys, the table of this
 * item's kind, in the order of all: each value to its handler; a required key that is
 * missing reported as "FIELD: NEEDED_BY needs "KEY"HINT"; a key of all that keys does not
 * have as "FIELD.KEY: not a key of WHAT (remove it)". False when one of those was reported
 * (the item is not usable), true otherwise (its handlers report their own problems). */
bool pdk__walk_values(parse_state *st, const char *field, yaml_node_t *n, const key_spec *all,
                      size_t nall, yaml_node_t *const *values, const key_spec *keys, size_t nkeys,
                      const char *what);

/* ---- policy_values.c ---- */

/* Decimal digits only (no sign, no spaces) in [0, max]. Returns 0, -EINVAL or -ERANGE. */
int pdk__parse_decimal(const char *s, uint64_t max, uint64_t *out);
/* Cores with up to three decimals ("1.5") as millicores. Returns 0, -EINVAL, -ERANGE, or
 * -EDOM when finer than a millicore. */
int pdk__parse_cpu(const char *s, int64_t *millicores);
/* A duration of 1 second to max_seconds: 0 with *out set, or -1 after a diagnostic naming
 * the range ("from 1 second to 30 days") and a hint (", e.g. 5m"). */
int pdk__bounded_duration(parse_state *st, const char *field, yaml_node_t *n, int64_t max_seconds,
                          const char *range, const char *hint, int64_t *out);
/* A count of 1 to max, named what ("held requests"): 0 with *out set, or -1 after a
 * diagnostic (naming the default, when default_count is not 0). */
int pdk__bounded_count(parse_state *st, const char *field, yaml_node_t *n, const char *what,
                       uint64_t max, uint64_t default_count, uint64_t *out);
/* A YAML boolean (plain true/false, yes/no, on/off); false after a diagnostic. */
bool pdk__parse_bool(parse_state *st, const char *field, yaml_node_t *n, bool *out);
bool pdk__parse_decision(parse_state *st, const char *field, yaml_node_t *n, pdk_decision *out);
/* A rule's "quiet" (FIELD.quiet): true only on a deny rule. */
bool pdk__parse_quiet(parse_state *st, const char *field, yaml_node_t *n, bool decided,
                      pdk_decision decision, bool *out);
/* One path expanded and normalised ("~" under the home; relative only when
 * workspace_relative, for protect); new string, or NULL after a diagnostic. */
char *pdk__resolve_path(parse_state *st, const char *field, yaml_node_t *n, const char *text,
                        bool workspace_relative);
/* [A-Za-z_][A-Za-z0-9_]*, with a trailing "*" when glob is allowed. */
bool pdk__env_name_valid(const char *s, size_t len, bool glob);
/* A host pattern, normalised (globs: "*.domain" and "*" allowed); NULL after a diagnostic. */
char *pdk__host_value(parse_state *st, const char *field, yaml_node_t *n, bool globs);

/* ---- the sections: handlers of the top-level keys (policy.c's table) ---- */

void pdk__section_filesystem(parse_state *st, const char *field, yaml_node_t *n);
void pdk__section_env(parse_state *st, const char *field, yaml_node_t *n);
void pdk__section_limits(parse_state *st, const char *field, yaml_node_t *n);
void pdk__section_landlock(parse_state *st, const char *field, yaml_node_t *n);
void pdk__section_sandbox(parse_state *st, const char *field, yaml_node_t *n);
void pdk__section_home(parse_state *st, const char *field, yaml_node_t *n);
void pdk__section_commands(parse_state *st, const char *field, yaml_node_t *n);
void pdk__section_approvals(parse_state *st, const char *field, yaml_node_t *n);
void pdk__section_network(parse_state *st, const char *field, yaml_node_t *n);
void pdk__section_credentials(parse_state *st, const char *field, yaml_node_t *n);

/* policy_commands.c: the examples, checked once every rule is known, then freed. */
void pdk__commands_check_examples(parse_state *st);
void pdk__commands_free_examples(parse_state *st);

/* policy_credentials.c: frees what a credential holds and zeroes it. */
void pdk__credential_clear(pdk_credential *c);

/* policy_builtin.c: a policy with every default (what a file's missing keys keep). */
pdk_policy *pdk__policy_new(const char *source);

#endif
