/* policy_commands.c: the "commands" section: the default decision, the rules (match, decision,
 * reason, under, quiet) and the examples, checked against the rules once every rule is known;
 * and how a verdict names the rule that decided it.
 */
#include "policy_internal.h"

#include "shell.h"

#include <stdlib.h>
#include <string.h>

/* One token of a pattern: a glob, or a list of them (alternatives). NULL after a
 * diagnostic. */
static char **pattern_token(parse_state *st, const char *field, yaml_node_t *n)
{
    char **alts = NULL;
    if (n->type == YAML_SCALAR_NODE) {
        const char *v = pdk__scalar_text(st, field, n, "a word or a list of words");
        if (!v)
            return NULL;
        if (!*v) {
            pdk__diag_node(st, n, "%s: an empty word matches nothing (remove it, or use \"*\")",
                           field);
            return NULL;
        }
        pdk_strv_push(&alts, v);
        return alts;
    }
    yaml_node_item_t *items;
    size_t count;
    if (n->type != YAML_SEQUENCE_NODE) {
        pdk__expected(st, field, n, "a word or a list of words");
        return NULL;
    }
    pdk__list_items(st, field, n, &items, &count);
    if (count == 0) {
        pdk__diag_node(
            st, n, "%s: an empty list of alternatives matches nothing (give at least one)", field);
        return NULL;
    }
    bool ok = true;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = pdk__node_at(st, items[i]);
        _cleanup_free_ char *f = xasprintf("%s[%zu]", field, i);
        const char *v =
            item && item->type == YAML_SCALAR_NODE ? pdk__scalar_text(st, f, item, "a word") : NULL;
        if (item && item->type != YAML_SCALAR_NODE)
            pdk__expected(st, f, item, "a word (alternatives do not nest)");
        if (v && !*v) {
            pdk__diag_node(st, item, "%s: an empty word matches nothing (remove it)", f);
            v = NULL;
        }
        if (!v) {
            ok = false;
            continue;
        }
        pdk_strv_push(&alts, v);
    }
    if (!ok) {
        pdk_strv_free(alts);
        return NULL;
    }
    return alts;
}
static void handle_commands_default(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__parse_decision(st, field, n, &st->policy->commands.default_decision);
}
/* A pattern: a list of tokens, each a word or a list of alternatives (a single word is a
 * pattern of one token). *tokens and *ntokens NULL/0 after a diagnostic. */
static bool command_pattern(parse_state *st, const char *field, yaml_node_t *n, char ****tokens,
                            size_t *ntokens, bool word_alone)
{
    *tokens = NULL;
    *ntokens = 0;
    if (word_alone && n->type == YAML_SCALAR_NODE) {
        char **alts = pattern_token(st, field, n);
        if (!alts)
            return false;
        *tokens = xcalloc(1, sizeof(**tokens));
        (*tokens)[0] = alts;
        *ntokens = 1;
        return true;
    }
    yaml_node_item_t *items;
    size_t nitems = 0;
    if (!pdk__list_items(st, field, n, &items, &nitems))
        return false;
    if (nitems == 0) {
        pdk__diag_node(st, n,
                       "%s: an empty pattern matches nothing (give the command's first words, e.g. "
                       "[git, push])",
                       field);
        return false;
    }
    bool ok = true;
    char ***t = xcalloc(nitems, sizeof(*t));
    for (size_t i = 0; i < nitems; i++) {
        _cleanup_free_ char *tf = xasprintf("%s[%zu]", field, i);
        yaml_node_t *item = pdk__node_at(st, items[i]);
        t[i] = item ? pattern_token(st, tf, item) : NULL;
        if (!t[i])
            ok = false;
    }
    if (!ok) {
        for (size_t i = 0; i < nitems; i++)
            pdk_strv_free(t[i]);
        free(t);
        return false;
    }
    *tokens = t;
    *ntokens = nitems;
    return true;
}

static void free_pattern(char ***tokens, size_t ntokens)
{
    for (size_t i = 0; i < ntokens; i++)
        pdk_strv_free(tokens[i]);
    free(tokens);
}

static void command_rule(parse_state *st, const char *field, yaml_node_t *n)
{
    static const key_spec keys[] = {
        {"match", NULL}, {"decision", NULL}, {"reason", NULL}, {"under", NULL}, {"quiet", NULL}};
    yaml_node_t *values[PDK_ARRAY_SIZE(keys)];
    if (!pdk__mapping_values(st, field, n, keys, PDK_ARRAY_SIZE(keys), values))
        return;
    yaml_node_t *match = values[0], *decision = values[1], *reason = values[2], *under = values[3];
    bool ok = true;
    if (!match) {
        pdk__diag_node(st, n, "%s: a rule needs \"match\" (an argv prefix, e.g. [git, push])",
                       field);
        ok = false;
    }
    if (!decision) {
        pdk__diag_node(st, n, "%s: a rule needs \"decision\" (allow, confine, ask or deny)", field);
        ok = false;
    }
    pdk_decision d = PDK_DECISION_ALLOW;
    _cleanup_free_ char *dfield = xasprintf("%s.decision", field);
    _cleanup_free_ char *rfield = xasprintf("%s.reason", field);
    bool decided = decision && pdk__parse_decision(st, dfield, decision, &d);
    if (decision && !decided)
        ok = false;
    const char *why = NULL;
    if (reason && !(why = pdk__scalar_text(st, rfield, reason, "a reason (one line of text)")))
        ok = false;
    bool quiet = false;
    if (values[4] && !pdk__parse_quiet(st, field, values[4], decided, d, &quiet))
        ok = false;
    char ***tokens = NULL;
    size_t ntokens = 0;
    _cleanup_free_ char *mfield = xasprintf("%s.match", field);
    if (match && !command_pattern(st, mfield, match, &tokens, &ntokens, false))
        ok = false;
    /* under: a list of patterns (each a word, or a list of words and alternatives) */
    char ****under_tokens = NULL;
    size_t *under_counts = NULL, nunder = 0;
    _cleanup_free_ char *ufield = xasprintf("%s.under", field);
    if (under) {
        yaml_node_item_t *items;
        size_t nitems = 0;
        if (!pdk__list_items(st, ufield, under, &items, &nitems)) {
            ok = false;
        } else if (nitems == 0) {
            pdk__diag_node(st, under,
                           "%s: an empty list holds under no process (give the commands whose "
                           "children the rule is for, e.g. [[npm, install], npx])",
                           ufield);
            ok = false;
        } else {
            under_tokens = xcalloc(nitems, sizeof(*under_tokens));
            under_counts = xcalloc(nitems, sizeof(*under_counts));
            nunder = nitems;
            for (size_t i = 0; i < nitems; i++) {
                _cleanup_free_ char *pf = xasprintf("%s[%zu]", ufield, i);
                yaml_node_t *item = pdk__node_at(st, items[i]);
                if (!item ||
                    !command_pattern(st, pf, item, &under_tokens[i], &under_counts[i], true))
                    ok = false;
            }
        }
    }
    if (ok) {
        pdk_command_rules *rules = &st->policy->commands;
        pdk_command_rules_add(rules, (char *const *const *)tokens, ntokens, d, why);
        rules->rules[rules->count - 1].quiet = quiet;
        for (size_t i = 0; i < nunder; i++)
            pdk_command_rules_add_under(rules, rules->count - 1,
                                        (char *const *const *)under_tokens[i], under_counts[i]);
        st->policy->rule_lines =
            xrealloc(st->policy->rule_lines, rules->count * sizeof(*st->policy->rule_lines));
        st->policy->rule_lines[rules->count - 1] = pdk__node_line(n);
    }
    free_pattern(tokens, ntokens);
    for (size_t i = 0; i < nunder; i++)
        free_pattern(under_tokens[i], under_counts[i]);
    free(under_tokens);
    free(under_counts);
}

static void handle_commands_rules(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__each_item(st, field, n, command_rule);
}

/* Examples are checked once every rule is known (the rules may come after them). */
typedef struct pending_example {
    char **argv;
    char **under; /* the argv of the installer it runs under, or NULL */
    char *shown;  /* the command as written */
    pdk_decision expected;
    yaml_node_t *node;
    char *field;
} pending_example;

static void example(parse_state *st, const char *field, yaml_node_t *n)
{
    static const key_spec keys[] = {
        {"command", NULL}, {"argv", NULL}, {"decision", NULL}, {"under", NULL}};
    yaml_node_t *values[PDK_ARRAY_SIZE(keys)];
    if (!pdk__mapping_values(st, field, n, keys, PDK_ARRAY_SIZE(keys), values))
        return;
    yaml_node_t *command = values[0], *argv = values[1], *decision = values[2], *under = values[3];
    _cleanup_strv_ char **under_argv = NULL;
    if (under) {
        _cleanup_free_ char *ufield = xasprintf("%s.under", field);
        const char *line = pdk__scalar_text(st, ufield, under, "a command line (of the installer)");
        if (!line)
            return;
        if (!*line) {
            pdk__diag_node(st, under, "%s: the command line is empty (give the installer's)",
                           ufield);
            return;
        }
        under_argv = pdk_policy_example_argv(line);
    }
    pdk_decision d;
    if (!decision) {
        pdk__diag_node(st, n, "%s: an example needs \"decision\" (what the rules must decide)",
                       field);
        return;
    }
    _cleanup_free_ char *dfield = xasprintf("%s.decision", field);
    if (!pdk__parse_decision(st, dfield, decision, &d)) {
        return;
    }
    if ((command != NULL) == (argv != NULL)) {
        pdk__diag_node(st, n,
                       "%s: an example needs either \"command\" (a command line) or \"argv\" (a "
                       "list of words)",
                       field);
        return;
    }
    char **words = NULL;
    char *shown = NULL;
    if (command) {
        _cleanup_free_ char *cfield = xasprintf("%s.command", field);
        const char *line = pdk__scalar_text(st, cfield, command, "a command line");
        if (!line)
            return;
        if (!*line) {
            pdk__diag_node(st, command, "%s: the command line is empty (give the command to check)",
                           cfield);
            return;
        }
        words = pdk_policy_example_argv(line);
        shown = xstrdup(line);
    } else {
        yaml_node_item_t *items;
        size_t nitems = 0;
        _cleanup_free_ char *afield = xasprintf("%s.argv", field);
        if (!pdk__list_items(st, afield, argv, &items, &nitems))
            return;
        if (nitems == 0) {
            pdk__diag_node(st, argv, "%s: the list is empty (give at least the command)", afield);
            return;
        }
        pdk_buf b = {0};
        for (size_t i = 0; i < nitems; i++) {
            yaml_node_t *item = pdk__node_at(st, items[i]);
            _cleanup_free_ char *wfield = xasprintf("%s.argv[%zu]", field, i);
            const char *w = item ? pdk__scalar_text(st, wfield, item, "a word") : NULL;
            if (!w) {
                pdk_strv_free(words);
                pdk_buf_free(&b);
                return;
            }
            pdk_strv_push(&words, w);
            pdk_buf_printf(&b, "%s%s", i ? " " : "", w);
        }
        shown = xstrdup(b.data ? b.data : "");
        pdk_buf_free(&b);
    }
    st->examples = xrealloc(st->examples, (st->nexamples + 1) * sizeof(*st->examples));
    st->examples[st->nexamples++] = (pending_example){.argv = words,
                                                      .under = steal_pointer(&under_argv),
                                                      .shown = shown,
                                                      .expected = d,
                                                      .node = n,
                                                      .field = xstrdup(field)};
}

static void handle_commands_examples(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__each_item(st, field, n, example);
}

void pdk__commands_check_examples(parse_state *st)
{
    for (size_t i = 0; i < st->nexamples; i++) {
        pending_example *x = &st->examples[i];
        pdk_command_verdict v;
        char *const *ancestors[] = {x->under, NULL};
        pdk_command_query query = {.argv = x->argv,
                                   .ancestors = x->under ? (char *const *const *)ancestors : NULL};
        pdk_command_rules_judge_query(&st->policy->commands, &query, &v);
        if (v.decision != x->expected) {
            _cleanup_free_ char *q = pdk__quote_str(x->shown);
            _cleanup_free_ char *how =
                v.rule < 0 && v.unreducible
                    ? xstrdup("the fallback for scripts paddock cannot split into commands")
                    : pdk_policy_describe_rule(st->policy, v.rule);
            pdk__diag_node(
                st, x->node, "%s: %s is decided %s by %s, not %s (fix the rule or the example)",
                x->field, q, pdk_decision_name(v.decision), how, pdk_decision_name(x->expected));
        }
    }
}

void pdk__commands_free_examples(parse_state *st)
{
    for (size_t i = 0; i < st->nexamples; i++) {
        pdk_strv_free(st->examples[i].argv);
        pdk_strv_free(st->examples[i].under);
        free(st->examples[i].shown);
        free(st->examples[i].field);
    }
    free(st->examples);
    st->examples = NULL;
    st->nexamples = 0;
}

static const key_spec commands_keys[] = {
    {"default", handle_commands_default},
    {"rules", handle_commands_rules},
    {"examples", handle_commands_examples},
};

void pdk__section_commands(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk__walk_section(st, n, field, commands_keys, PDK_ARRAY_SIZE(commands_keys));
}

char **pdk_policy_example_argv(const char *command_line)
{
    pdk_shell_split_t split;
    pdk_shell_split(command_line, &split);
    char **argv = NULL;
    if (split.reducible && split.count == 1 && !split.commands[0].assignments[0]) {
        argv = pdk_strv_copy(split.commands[0].argv);
    } else {
        pdk_strv_push(&argv, "sh");
        pdk_strv_push(&argv, "-c");
        pdk_strv_push(&argv, command_line);
    }
    pdk_shell_split_free(&split);
    return argv;
}

char *pdk_policy_describe_rule(const pdk_policy *policy, ssize_t rule)
{
    const pdk_command_rules *rules = &policy->commands;
    if (rule < 0 || (size_t)rule >= rules->count)
        return xasprintf("the default (%s)", pdk_decision_name(rules->default_decision));
    const pdk_command_rule *r = &rules->rules[rule];
    pdk_buf b = {0};
    pdk_buf_printf(&b, "rule %zd", rule + 1);
    if (policy->rule_lines && policy->rule_lines[rule] > 0)
        pdk_buf_printf(&b, " (line %d", policy->rule_lines[rule]);
    else
        pdk_buf_printf(&b, " (");
    pdk_buf_printf(&b, "%s[", policy->rule_lines && policy->rule_lines[rule] > 0 ? ": " : "");
    for (size_t t = 0; t < r->token_count; t++) {
        char *const *alts = r->tokens[t].alternatives;
        bool many = alts[0] && alts[1];
        pdk_buf_printf(&b, "%s%s", t ? ", " : "", many ? "[" : "");
        for (size_t a = 0; alts[a]; a++)
            pdk_buf_printf(&b, "%s%s", a ? ", " : "", alts[a]);
        if (many)
            pdk_buf_printf(&b, "]");
    }
    pdk_buf_printf(&b, "]");
    if (r->under_count > 0)
        pdk_buf_printf(&b, " under %s%s", r->under[0].tokens[0].alternatives[0],
                       r->under_count > 1 || r->under[0].token_count > 1 ? "..." : "");
    pdk_buf_printf(&b, " %s)", pdk_decision_name(r->decision));
    return steal_pointer(&b.data);
}
