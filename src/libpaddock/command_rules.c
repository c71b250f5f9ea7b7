/* command_rules.c: see command_rules.h. */
#include "command_rules.h"

#include "shell.h"

#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* How deep shell wrappers may nest (sh -c "bash -c '...'") before the rest is judged as a
 * whole. */
#define MAX_SHELL_DEPTH 8

static const char *const decision_names[] = {"allow", "confine", "ask", "deny"};

const char *pdk_decision_name(pdk_decision decision)
{
    if ((unsigned)decision < PDK_ARRAY_SIZE(decision_names))
        return decision_names[decision];
    return "?";
}

int pdk_decision_parse(const char *name, pdk_decision *out)
{
    for (size_t i = 0; i < PDK_ARRAY_SIZE(decision_names); i++) {
        if (strcmp(name, decision_names[i]) == 0) {
            *out = (pdk_decision)i;
            return 0;
        }
    }
    return -1;
}

/* ---- the index ----
 *
 * A rule whose first token's alternatives are all literal basenames (no glob character, no
 * "/") can match only a command whose argv[0] has one of those basenames: it is listed
 * under each of them in a hash table. Every other rule (a glob or a path in the first
 * token) is on the "always" list and tried for every command. */

struct pdk_command_rule_index {
    size_t nbuckets;
    struct index_entry {
        char *name;
        size_t *rules;
        size_t count;
    } * buckets; /* open addressing, nbuckets a power of two */
    size_t *always;
    size_t always_count;
};

static bool is_literal(const char *s)
{
    return !strpbrk(s, "*?[\\/");
}

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static struct index_entry *index_slot(pdk_command_rule_index *ix, const char *name)
{
    size_t mask = ix->nbuckets - 1;
    for (size_t i = hash_name(name) & mask;; i = (i + 1) & mask)
        if (!ix->buckets[i].name || strcmp(ix->buckets[i].name, name) == 0)
            return &ix->buckets[i];
}

static void push_index(size_t **list, size_t *count, size_t rule)
{
    if (*count > 0 && (*list)[*count - 1] == rule)
        return; /* the same name twice in one rule's alternatives */
    *list = xrealloc(*list, (*count + 1) * sizeof(**list));
    (*list)[(*count)++] = rule;
}

static void index_free(pdk_command_rule_index *ix)
{
    if (!ix)
        return;
    for (size_t i = 0; i < ix->nbuckets; i++) {
        free(ix->buckets[i].name);
        free(ix->buckets[i].rules);
    }
    free(ix->buckets);
    free(ix->always);
    free(ix);
}

static pdk_command_rule_index *index_build(const pdk_command_rules *rules)
{
    pdk_command_rule_index *ix = xcalloc(1, sizeof(*ix));
    ix->nbuckets = 16;
    while (ix->nbuckets < rules->count * 4)
        ix->nbuckets *= 2;
    ix->buckets = xcalloc(ix->nbuckets, sizeof(*ix->buckets));
    for (size_t r = 0; r < rules->count; r++) {
        const pdk_command_rule *rule = &rules->rules[r];
        if (rule->token_count == 0)
            continue;
        char *const *alts = rule->tokens[0].alternatives;
        bool literal = true;
        for (size_t a = 0; alts[a] && literal; a++)
            literal = is_literal(alts[a]);
        if (!literal) {
            push_index(&ix->always, &ix->always_count, r);
            continue;
        }
        for (size_t a = 0; alts[a]; a++) {
            struct index_entry *e = index_slot(ix, alts[a]);
            if (!e->name)
                e->name = xstrdup(alts[a]);
            push_index(&e->rules, &e->count, r);
        }
    }
    return ix;
}

void pdk_command_rules_add(pdk_command_rules *rules, char *const *const *tokens, size_t token_count,
                           pdk_decision decision, const char *reason)
{
    index_free(rules->index);
    rules->index = NULL;
    rules->rules = xrealloc(rules->rules, (rules->count + 1) * sizeof(*rules->rules));
    pdk_command_rule *r = &rules->rules[rules->count++];
    r->tokens = xcalloc(token_count ? token_count : 1, sizeof(*r->tokens));
    r->token_count = token_count;
    for (size_t i = 0; i < token_count; i++)
        r->tokens[i].alternatives = pdk_strv_copy(tokens[i]);
    r->decision = decision;
    r->reason = reason ? xstrdup(reason) : NULL;
    r->quiet = false;
}

void pdk_command_rules_free(pdk_command_rules *rules)
{
    for (size_t i = 0; i < rules->count; i++) {
        for (size_t t = 0; t < rules->rules[i].token_count; t++)
            pdk_strv_free(rules->rules[i].tokens[t].alternatives);
        free(rules->rules[i].tokens);
        free(rules->rules[i].reason);
    }
    free(rules->rules);
    rules->rules = NULL;
    rules->count = 0;
    index_free(rules->index);
    rules->index = NULL;
}

static const char *basename_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static bool token_matches(const pdk_pattern_token *token, const char *word, bool executable)
{
    for (size_t i = 0; token->alternatives[i]; i++) {
        const char *alt = token->alternatives[i];
        const char *subject = word;
        if (executable && !strchr(alt, '/'))
            subject = basename_of(word);
        /* fnmatch() without a glob character is strcmp(), only slower */
        if (strpbrk(alt, "*?[\\") ? fnmatch(alt, subject, 0) == 0 : strcmp(alt, subject) == 0)
            return true;
    }
    return false;
}

bool pdk_command_rule_matches(const pdk_command_rule *rule, char *const *argv)
{
    if (rule->token_count == 0)
        return false;
    for (size_t i = 0; i < rule->token_count; i++) {
        if (!argv[i])
            return false; /* the command is shorter than the pattern */
        if (!token_matches(&rule->tokens[i], argv[i], i == 0))
            return false;
    }
    return true;
}

static void consider_rule(const pdk_command_rules *rules, size_t i, char *const *argv,
                          ssize_t *best)
{
    if (!pdk_command_rule_matches(&rules->rules[i], argv))
        return;
    /* strictest first; of equals, the first in the file */
    if (*best < 0 || rules->rules[i].decision > rules->rules[*best].decision ||
        (rules->rules[i].decision == rules->rules[*best].decision && (ssize_t)i < *best))
        *best = (ssize_t)i;
}

/* The strictest rule matching argv itself: its index, or -1. */
static ssize_t strictest_rule(const pdk_command_rules *rules, char *const *argv)
{
    if (!rules->index)
        ((pdk_command_rules *)rules)->index = index_build(rules); /* a cache, made once */
    pdk_command_rule_index *ix = rules->index;
    ssize_t best = -1;
    struct index_entry *e = index_slot(ix, basename_of(argv[0]));
    for (size_t i = 0; e->name && i < e->count; i++)
        consider_rule(rules, e->rules[i], argv, &best);
    for (size_t i = 0; i < ix->always_count; i++)
        consider_rule(rules, ix->always[i], argv, &best);
    return best;
}

/* Fold a candidate into the verdict when it is stricter (the first of equals stays). */
static void consider(pdk_command_verdict *v, pdk_decision d, ssize_t rule, const char *reason)
{
    if (d > v->decision || (v->rule < 0 && rule >= 0 && d == v->decision)) {
        v->decision = d;
        v->rule = rule;
        v->reason = reason;
    }
}

static const char *rule_reason(const pdk_command_rules *rules, ssize_t i)
{
    const char *r = rules->rules[i].reason;
    return r && *r ? r : "matched a command rule";
}

static void judge(const pdk_command_rules *rules, char *const *argv, int depth,
                  pdk_command_verdict *v)
{
    /* Rules about the command itself (the wrapper too, when it is one). */
    ssize_t own = strictest_rule(rules, argv);
    if (own >= 0)
        consider(v, rules->rules[own].decision, own, rule_reason(rules, own));

    const char *script = depth < MAX_SHELL_DEPTH ? pdk_shell_wrapper_script(argv) : NULL;
    if (!script) {
        if (own < 0)
            consider(v, rules->default_decision, -1, "the default for commands");
        return;
    }
    v->through_shell = true;
    pdk_shell_split_t split;
    pdk_shell_split(script, &split);
    if (!split.reducible) {
        v->unreducible = true;
        /* Judged as a whole: a rule about the wrapper decides, else ask (or a stricter
         * default). */
        if (own < 0) {
            /* What the script runs cannot be seen: ask, when some rule is stricter than the
             * default (the hidden commands might match it); else they can only get the
             * default. */
            pdk_decision d = rules->default_decision;
            bool stricter = false;
            for (size_t i = 0; i < rules->count && !stricter; i++)
                stricter = rules->rules[i].decision > d;
            if (stricter && d < PDK_DECISION_ASK)
                d = PDK_DECISION_ASK;
            consider(v, d, -1, "a shell script paddock cannot split into its commands");
        }
    } else if (split.count == 0) {
        if (own < 0)
            consider(v, rules->default_decision, -1, "the default for commands");
    } else {
        for (size_t i = 0; i < split.count; i++)
            if (split.commands[i].argv && split.commands[i].argv[0])
                judge(rules, split.commands[i].argv, depth + 1, v);
    }
    pdk_shell_split_free(&split);
}

void pdk_command_rules_judge(const pdk_command_rules *rules, char *const *argv,
                             pdk_command_verdict *out)
{
    /* Start below every candidate, so that the first one sets the verdict. */
    memset(out, 0, sizeof(*out));
    out->decision = PDK_DECISION_ALLOW;
    out->rule = -1;
    out->reason = "the default for commands";
    if (!argv || !argv[0]) {
        out->decision = rules->default_decision;
        return;
    }
    judge(rules, argv, 0, out);
}
