/* policy.c: the policy file (YAML, version 1) parsed into a struct pdk_policy. See policy.h;
 * docs/policy.md documents the schema for users.
 *
 * This file reads the document: its version and its top-level keys, each handed to its
 * section's file (policy_internal.h lists them); and it has the entry points (parse, load a
 * file, free, format and hand over the diagnostics, the warnings of a policy that loaded).
 * policy_yaml.c has the libyaml passes and the diagnostics, policy_keys.c the key tables.
 */
#include "policy_internal.h"

#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_POLICY_BYTES      ((size_t)1 << 20)
#define CLIENT_TIMEOUT_COMMON 60
#define TOO_LARGE_MESSAGE     "the policy is larger than 1 MiB (is this the right file?)"

static void handle_version(parse_state *st, const char *field, yaml_node_t *n)
{
    st->saw_version = true;
    const char *v = pdk__scalar_text(st, field, n, "the integer 1");
    if (!v)
        return;
    _cleanup_free_ char *q = pdk__quote_str(v);
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
        pdk__diag_node(st, n,
                       "version: expected the integer 1, got the string %s (remove the quotes)", q);
        return;
    }
    uint64_t version;
    if (pdk__parse_decimal(v, UINT32_MAX, &version) != 0) {
        pdk__diag_node(st, n, "version: expected the integer 1, got %s", q);
        return;
    }
    if (version != 1)
        pdk__diag_node(st, n,
                       "version: %" PRIu64 " is not supported (this version of paddock reads "
                       "version 1)",
                       version);
}

static const key_spec top_keys[] = {
    {"version", handle_version},
    {"filesystem", pdk__section_filesystem},
    {"env", pdk__section_env},
    {"limits", pdk__section_limits},
    {"landlock", pdk__section_landlock},
    {"sandbox", pdk__section_sandbox},
    {"home", pdk__section_home},
    {"commands", pdk__section_commands},
    {"approvals", pdk__section_approvals},
    {"network", pdk__section_network},
    {"credentials", pdk__section_credentials},
};

static void walk_root(parse_state *st, yaml_node_t *root)
{
    if (!root || pdk__node_is_null(root)) {
        pdk__diag_at(st, 1, 1, "missing \"version: 1\" (add it as the first line)");
        return;
    }
    if (root->type != YAML_MAPPING_NODE) {
        _cleanup_free_ char *got = pdk__node_describe(root);
        pdk__diag_node(st, root,
                       "a policy is a mapping of keys (\"version: 1\" on the first line, then "
                       "sections), got %s",
                       got);
        return;
    }
    pdk__walk_section(st, root, NULL, top_keys, PDK_ARRAY_SIZE(top_keys));
    pdk__commands_check_examples(st);
    if (st->policy->credential_count > 0 && !st->policy->network.enabled)
        pdk__diag_at(st, (size_t)st->policy->credentials[0].line, 0,
                     "credentials are put on the wire by the egress gateway, which only a network "
                     "section opens (add one with rules for the credentials' hosts)");
    if (!st->saw_version)
        pdk__diag_at(st, 1, 1, "missing \"version: 1\" (add it as the first line)");
}

static void parse_text(parse_state *st)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!pdk__yaml_load(st, &parser, &doc))
        return;
    st->doc = &doc;
    walk_root(st, yaml_document_get_root_node(&doc));
    st->doc = NULL;
    pdk__commands_free_examples(st);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
}
void pdk_policy_free(pdk_policy *policy)
{
    if (!policy)
        return;
    free(policy->source);
    free(policy->base_dir);
    pdk_strv_free(policy->read_deny);
    pdk_strv_free(policy->read_allow);
    pdk_strv_free(policy->write);
    pdk_strv_free(policy->protect);
    pdk_strv_free(policy->env_pass);
    free(policy->home_persist);
    for (size_t i = 0; i < policy->env_set_count; i++) {
        free(policy->env_set[i].name);
        free(policy->env_set[i].value);
    }
    free(policy->env_set);
    free(policy->tcp_bind);
    free(policy->tcp_connect);
    pdk_command_rules_free(&policy->commands);
    free(policy->rule_lines);
    pdk_net_rules_free(&policy->network);
    free(policy->net_rule_lines);
    for (size_t i = 0; i < policy->credential_count; i++)
        pdk__credential_clear(&policy->credentials[i]);
    free(policy->credentials);
    free(policy);
}

void pdk_policy_diags_free(pdk_policy_diags *diags)
{
    if (!diags)
        return;
    for (size_t i = 0; i < diags->count; i++) {
        free(diags->items[i].file);
        free(diags->items[i].message);
    }
    free(diags->items);
    diags->items = NULL;
    diags->count = 0;
}

void pdk_policy_warnings(const pdk_policy *policy, pdk_policy_diags *out)
{
    *out = (pdk_policy_diags){0};
    const pdk_net_rules *net = &policy->network;
    for (size_t i = 0; i < net->count; i++) {
        const pdk_net_rule *r = &net->rules[i];
        if (r->host_loopback || r->decision == PDK_DECISION_DENY ||
            !pdk_net_host_is_loopback(r->host))
            continue;
        out->items = xrealloc(out->items, (out->count + 1) * sizeof(*out->items));
        out->items[out->count++] = (pdk_policy_diag){
            .file = xstrdup(policy->source ? policy->source : "<policy>"),
            .line = policy->net_rule_lines ? policy->net_rule_lines[i] : 0,
            .message = xasprintf(
                "network.rules[%zu]: %s is a loopback host, and this rule reaches nothing: "
                "the sandbox's own loopback is reached directly (NO_PROXY), never through "
                "the gateway (add host_loopback: true for a service on the host's loopback, "
                "or map a name to it with resolve)",
                i, r->host),
        };
    }
    if (policy->network.enabled &&
        policy->approval_request_timeout_seconds >= CLIENT_TIMEOUT_COMMON &&
        policy->approval_timeout_seconds >= CLIENT_TIMEOUT_COMMON) {
        out->items = xrealloc(out->items, (out->count + 1) * sizeof(*out->items));
        out->items[out->count++] = (pdk_policy_diag){
            .file = xstrdup(policy->source ? policy->source : "<policy>"),
            .message = xasprintf(
                "approvals.request_timeout: a held network request waits %llds, and common "
                "clients give up after %ds (the MCP SDK): an approval after that would send a "
                "request its client no longer waits for (keep it below the client's timeout)",
                (long long)policy->approval_request_timeout_seconds, CLIENT_TIMEOUT_COMMON),
        };
    }
}

char *pdk_policy_diag_format(const pdk_policy_diag *diag)
{
    const char *file = diag->file ? diag->file : "<policy>";
    const char *message = diag->message ? diag->message : "";
    if (diag->line > 0 && diag->column > 0)
        return xasprintf("%s:%d:%d: %s", file, diag->line, diag->column, message);
    if (diag->line > 0)
        return xasprintf("%s:%d: %s", file, diag->line, message);
    return xasprintf("%s: %s", file, message);
}

/* Hand the collected diagnostics over (or drop them); fill err with the first. */
static int finish_failed(parse_state *st, pdk_policy_diags *diags, pdk_error *err)
{
    pdk__diag_sort(st->diags, st->ndiags);
    /* pdk__diag_at() refuses once MAX_DIAGS are stored: the note goes last, by hand. */
    if (st->truncated) {
        st->diags = xrealloc(st->diags, (st->ndiags + 1) * sizeof(*st->diags));
        st->diags[st->ndiags++] = (pdk_policy_diag){
            .file = xstrdup(st->name),
            .message = xasprintf("too many problems; only the first %d are shown", MAX_DIAGS),
        };
    }
    _cleanup_free_ char *first = pdk_policy_diag_format(&st->diags[0]);
    pdk_error_set(err, 0, "%s", first);
    pdk_policy_diags local = {.items = st->diags, .count = st->ndiags};
    st->diags = NULL;
    st->ndiags = 0;
    if (diags)
        *diags = local;
    else
        pdk_policy_diags_free(&local);
    return -1;
}

int pdk_policy_parse(const char *name, const char *text, size_t len, const pdk_policy_context *ctx,
                     pdk_policy **out, pdk_policy_diags *diags, pdk_error *err)
{
    *out = NULL;
    if (diags)
        *diags = (pdk_policy_diags){0};
    if (!name)
        name = "<policy>";
    if (!text) {
        text = "";
        len = 0;
    }
    _cleanup_free_ char *home = NULL;
    if (ctx && ctx->home && ctx->home[0] == '/')
        home = pdk_path_normalize(ctx->home);
    parse_state st = {
        .name = name,
        .text = text,
        .len = len,
        .home = home,
        .policy = pdk__policy_new(name),
    };
    if (len > MAX_POLICY_BYTES)
        pdk__diag_at(&st, 0, 0, TOO_LARGE_MESSAGE);
    else
        parse_text(&st);
    if (st.ndiags > 0 || st.truncated) {
        pdk_policy_free(st.policy);
        return finish_failed(&st, diags, err);
    }
    *out = st.policy;
    return 0;
}
/* The directory of path, absolute (lexically) when the cwd can be found. */
static char *base_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    _cleanup_free_ char *dir =
        slash ? (slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path)))
              : xstrdup(".");
    if (dir[0] != '/') {
        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        if (!cwd)
            return steal_pointer(&dir);
        _cleanup_free_ char *joined = pdk_path_join(cwd, dir);
        return pdk_path_normalize(joined);
    }
    return pdk_path_normalize(dir);
}

int pdk_policy_load_file(const char *path, const pdk_policy_context *ctx, pdk_policy **out,
                         pdk_policy_diags *diags, pdk_error *err)
{
    *out = NULL;
    if (diags)
        *diags = (pdk_policy_diags){0};
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    if (pdk_read_file_at(AT_FDCWD, path, &text, &len, MAX_POLICY_BYTES) < 0) {
        if (errno != EFBIG)
            return pdk_error_set(err, errno, "cannot read policy file %s", path);
        /* Same diagnostic as for text that is too large. */
        parse_state st = {.name = path};
        pdk__diag_at(&st, 0, 0, TOO_LARGE_MESSAGE);
        return finish_failed(&st, diags, err);
    }
    if (pdk_policy_parse(path, text, len, ctx, out, diags, err) < 0)
        return -1;
    (*out)->base_dir = base_dir_of(path);
    /* Relative CA paths are relative to the policy file. */
    for (char **ca = (*out)->network.upstream_ca; ca && *ca; ca++) {
        if ((*ca)[0] != '/') {
            _cleanup_free_ char *joined = pdk_path_join((*out)->base_dir, *ca);
            free(*ca);
            *ca = pdk_path_normalize(joined);
        }
    }
    pdk_sha256_hex(text, len, (*out)->sha256);
    return 0;
}
