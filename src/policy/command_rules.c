/* command_rules.c: see command_rules.h. */
#include "command_rules.h"

#include "exec_target.h"
#include "shell.h"

#include <fnmatch.h>
#include <strings.h>
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
    r->under = NULL;
    r->under_count = 0;
}

void pdk_command_rules_add_under(pdk_command_rules *rules, size_t rule, char *const *const *tokens,
                                 size_t token_count)
{
    if (rule >= rules->count)
        return;
    pdk_command_rule *r = &rules->rules[rule];
    r->under = xrealloc(r->under, (r->under_count + 1) * sizeof(*r->under));
    pdk_command_rule *u = &r->under[r->under_count++];
    *u = (pdk_command_rule){.tokens = xcalloc(token_count ? token_count : 1, sizeof(*u->tokens)),
                            .token_count = token_count};
    for (size_t i = 0; i < token_count; i++)
        u->tokens[i].alternatives = pdk_strv_copy(tokens[i]);
    rules->has_under = true;
}

static void rule_free(pdk_command_rule *r)
{
    for (size_t t = 0; t < r->token_count; t++)
        pdk_strv_free(r->tokens[t].alternatives);
    free(r->tokens);
    free(r->reason);
    for (size_t u = 0; u < r->under_count; u++)
        rule_free(&r->under[u]);
    free(r->under);
}

void pdk_command_rules_free(pdk_command_rules *rules)
{
    for (size_t i = 0; i < rules->count; i++)
        rule_free(&rules->rules[i]);
    free(rules->rules);
    rules->rules = NULL;
    rules->count = 0;
    rules->has_under = false;
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

/* ---- the forms of a command ----
 *
 * A command is judged as given and in the forms its tool would see it in: global options
 * before the subcommand taken out (git -C DIR push is git push), python's options before
 * -m MODULE. A form is a pointer array whose strings are the command's own. */

#define MAX_FORMS           8 /* forms of one command, the command as given among them */
#define MAX_UNKNOWN_OPTIONS 3 /* options a table does not know, each tried both ways */

typedef struct forms {
    char **argv[MAX_FORMS]; /* [0]: the command as given (borrowed); the others owned */
    size_t count;
    bool hidden; /* what runs cannot be told (an alias on the command line, too many forms) */
} forms;

static void forms_free(forms *f)
{
    for (size_t i = 1; i < f->count; i++)
        free(f->argv[i]);
    f->count = 0;
}

static bool same_argv(char *const *a, char *const *b)
{
    for (size_t i = 0;; i++) {
        if (!a[i] || !b[i])
            return a[i] == b[i];
        if (a[i] != b[i] && strcmp(a[i], b[i]) != 0)
            return false;
    }
}

/* The form [argv0, w1, w2, rest...] (w1, w2 may be NULL). */
static void add_form(forms *f, const char *argv0, const char *w1, const char *w2, char *const *rest)
{
    char **a = pdk_strv_view((const char *const[]){argv0, w1, w2}, 3, rest);
    for (size_t i = 0; i < f->count; i++)
        if (same_argv(f->argv[i], a)) {
            free(a);
            return;
        }
    if (f->count >= MAX_FORMS) {
        f->hidden = true;
        free(a);
        return;
    }
    f->argv[f->count++] = a;
}

typedef struct tool_syntax {
    const char *const *tools;      /* base names */
    const char *const *with_value; /* options whose value is the next word */
    const char *const *flags;      /* options without a value */
    bool no_flags;                 /* --no-* are flags */
    bool git;                      /* -c alias.NAME=... may define the subcommand */
} tool_syntax;

#define WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})

static const tool_syntax tool_syntaxes[] = {
    {WORDS("git"),
     WORDS("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env",
           "--attr-source"),
     WORDS("-p", "--paginate", "-P", "--no-pager", "--bare", "--no-replace-objects",
           "--no-lazy-fetch", "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs",
           "--icase-pathspecs", "--no-optional-locks", "--no-advice", "--exec-path", "--html-path",
           "--man-path", "--info-path", "-v", "--version", "-h", "--help"),
     false, true},
    {WORDS("npm"),
     WORDS("--prefix", "-C", "--registry", "--cache", "--userconfig", "--globalconfig",
           "--loglevel", "-w", "--workspace", "--tag", "--omit", "--include", "--install-strategy",
           "--before", "--script-shell", "--node-options", "--location", "--otp", "--scope"),
     WORDS("-g", "--global", "-d", "-dd", "-ddd", "-s", "--silent", "-q", "--quiet", "-y", "--yes",
           "-f", "--force", "--json", "--offline", "--prefer-offline", "--prefer-online",
           "--legacy-peer-deps", "--ignore-scripts", "-ws", "--workspaces",
           "--include-workspace-root", "-l", "--long", "-p", "--parseable", "--dry-run",
           "--foreground-scripts", "--verbose", "-D", "--save-dev", "-E", "--save-exact", "-O",
           "--save-optional", "-P", "--save-prod", "-B", "--save-bundle", "-S", "--save",
           "--production", "--audit", "--fund", "--color", "--progress", "-h", "--help", "-v",
           "--version", "--usage"),
     true, false},
    {WORDS("npx"),
     WORDS("-p", "--package", "-c", "--call", "--prefix", "--registry", "--cache", "--userconfig",
           "--loglevel", "-w", "--workspace"),
     WORDS("-y", "--yes", "-q", "--quiet", "-s", "--silent", "--offline", "--prefer-offline",
           "--prefer-online", "--ignore-existing", "-ws", "--workspaces", "-h", "--help", "-v",
           "--version"),
     true, false},
    {WORDS("yarn", "yarnpkg"),
     WORDS("--cwd", "--cache-folder", "--modules-folder", "--registry", "--mutex",
           "--network-timeout", "--global-folder", "--link-folder", "--use-yarnrc",
           "--preferred-cache-folder"),
     WORDS("-s", "--silent", "--offline", "--prefer-offline", "--frozen-lockfile",
           "--pure-lockfile", "--ignore-scripts", "--verbose", "--non-interactive", "--immutable",
           "--json", "--ignore-engines", "--production", "-v", "--version", "-h", "--help"),
     true, false},
    {WORDS("pnpm", "pnpx"),
     WORDS("-C", "--dir", "--filter", "-F", "--reporter", "--store-dir", "--loglevel",
           "--workspace-dir"),
     WORDS("-r", "--recursive", "-w", "--workspace-root", "-s", "--silent", "--offline",
           "--prefer-offline", "--frozen-lockfile", "--ignore-scripts", "-g", "--global", "--color",
           "--stream", "--aggregate-output", "-h", "--help", "-v", "--version"),
     true, false},
    {WORDS("pip", "pip3"),
     WORDS("--python", "--log", "--log-file", "--local-log", "--proxy", "--retries", "--timeout",
           "--exists-action", "--trusted-host", "--cert", "--client-cert", "--cache-dir",
           "--keyring-provider", "--use-feature", "--use-deprecated"),
     WORDS("-v", "--verbose", "-q", "--quiet", "-V", "--version", "-h", "--help", "--isolated",
           "--require-virtualenv", "--no-input", "--disable-pip-version-check", "--no-cache-dir",
           "--no-color", "--debug", "--no-python-version-warning"),
     false, false},
    {WORDS("uv"),
     WORDS("--directory", "--project", "--cache-dir", "--config-file", "--color",
           "--allow-insecure-host"),
     WORDS("-q", "--quiet", "-v", "--verbose", "--offline", "--no-cache", "-n", "--native-tls",
           "--no-progress", "--preview", "--no-preview", "--no-config", "--managed-python",
           "--no-managed-python", "--no-python-downloads", "--isolated", "-h", "--help", "-V",
           "--version"),
     false, false},
};

static bool in_words(const char *const *words, const char *w)
{
    for (size_t i = 0; words[i]; i++)
        if (strcmp(words[i], w) == 0)
            return true;
    return false;
}

/* "-vv", "-gf": short flags run together, each one a known flag. */
static bool is_flag_cluster(const tool_syntax *s, const char *w)
{
    if (w[0] != '-' || w[1] == '-' || !w[1] || !w[2])
        return false;
    for (const char *c = w + 1; *c; c++) {
        char one[3] = {'-', *c, '\0'};
        if (!in_words(s->flags, one))
            return false;
    }
    return true;
}

/* git -c alias.NAME=... (or --config-env alias.NAME=VAR) among argv[1..end) defining sub. */
static bool git_alias_defined(char *const *argv, size_t end, const char *sub)
{
    size_t len = strlen(sub);
    for (size_t i = 1; i + 1 < end; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config-env") == 0)
            v = argv[i + 1];
        if (v && strncasecmp(v, "alias.", 6) == 0 && strncasecmp(v + 6, sub, len) == 0 &&
            (v[6 + len] == '=' || v[6 + len] == '\0'))
            return true;
    }
    for (size_t i = 1; i < end; i++) {
        const char *v = NULL;
        if (pdk_str_has_prefix(argv[i], "--config-env="))
            v = argv[i] + strlen("--config-env=");
        if (v && strncasecmp(v, "alias.", 6) == 0 && strncasecmp(v + 6, sub, len) == 0 &&
            (v[6 + len] == '=' || v[6 + len] == '\0'))
            return true;
    }
    return false;
}

/* The options from argv[i] on taken out, as s says; an option s does not know is tried
 * both as a flag and as taking the next word. */
static void skip_options(const tool_syntax *s, char *const *argv, size_t i, unsigned unknown,
                         forms *f)
{
    while (argv[i] && argv[i][0] == '-' && argv[i][1]) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (in_words(s->flags, a) || is_flag_cluster(s, a) || (a[1] == '-' && strchr(a, '=')) ||
            (s->no_flags && pdk_str_has_prefix(a, "--no-"))) {
            i++;
            continue;
        }
        if (in_words(s->with_value, a)) {
            if (!argv[i + 1])
                return; /* no subcommand */
            i += 2;
            continue;
        }
        if (unknown >= MAX_UNKNOWN_OPTIONS) {
            f->hidden = true;
            return;
        }
        if (argv[i + 1])
            skip_options(s, argv, i + 2, unknown + 1, f); /* as taking a value */
        unknown++;
        i++; /* as a flag */
    }
    if (i <= 1 || !argv[i])
        return;
    if (s->git && git_alias_defined(argv, i, argv[i]))
        f->hidden = true;
    add_form(f, argv[0], NULL, NULL, argv + i);
}

static bool is_python(const char *name)
{
    if (!pdk_str_has_prefix(name, "python"))
        return false;
    for (const char *c = name + 6; *c; c++)
        if (!((*c >= '0' && *c <= '9') || *c == '.'))
            return false;
    return true;
}

/* python [OPTIONS] -m MODULE ARGS: the form [python, -m, MODULE, ARGS]. */
static void python_module_form(char *const *argv, forms *f)
{
    for (size_t i = 1; argv[i] && argv[i][0] == '-' && argv[i][1]; i++) {
        const char *a = argv[i];
        if (a[1] == '-') {
            if (strcmp(a, "--") == 0)
                return;
            if (strcmp(a, "--check-hash-based-pycs") == 0 && argv[i + 1])
                i++;
            continue;
        }
        for (const char *c = a + 1; *c; c++) {
            if (*c == 'c')
                return; /* a program as a string */
            if (*c == 'm' || *c == 'X' || *c == 'W') {
                const char *value = c[1] ? c + 1 : argv[i + 1];
                if (!value)
                    return;
                if (*c == 'm') {
                    if (i > 1 || c > a + 1 || c[1])
                        add_form(f, argv[0], "-m", value, argv + i + (c[1] ? 1 : 2));
                    return;
                }
                if (!c[1])
                    i++;
                break;
            }
        }
    }
}

static void make_forms(char *const *argv, forms *f)
{
    f->argv[0] = (char **)argv;
    f->count = 1;
    f->hidden = false;
    const char *name = basename_of(argv[0]);
    for (size_t t = 0; t < PDK_ARRAY_SIZE(tool_syntaxes); t++)
        if (in_words(tool_syntaxes[t].tools, name)) {
            skip_options(&tool_syntaxes[t], argv, 1, 0, f);
            return;
        }
    if (is_python(name))
        python_module_form(argv, f);
}

/* ---- judging ---- */

typedef struct judge_context {
    const pdk_command_rules *rules;
    char *const *const *ancestors;
    const pdk_command_query *query; /* its reader of sourced files */
} judge_context;

static bool matches_some_form(const pdk_command_rule *pattern, const forms *f)
{
    for (size_t i = 0; i < f->count; i++)
        if (pdk_command_rule_matches(pattern, f->argv[i]))
            return true;
    return false;
}

static bool under_pattern_matches(const pdk_command_rule *rule, const forms *f)
{
    for (size_t u = 0; u < rule->under_count; u++)
        if (matches_some_form(&rule->under[u], f))
            return true;
    return false;
}

/* A rule with `under` holds for a command that is not itself one of its patterns, below
 * an ancestor that is. */
static bool under_holds(const judge_context *c, const pdk_command_rule *rule, const forms *self)
{
    if (under_pattern_matches(rule, self))
        return false;
    for (size_t a = 0; c->ancestors && c->ancestors[a]; a++) {
        if (!c->ancestors[a][0])
            continue;
        forms af;
        make_forms(c->ancestors[a], &af);
        bool hit = under_pattern_matches(rule, &af);
        forms_free(&af);
        if (hit)
            return true;
    }
    return false;
}

static void consider_rule(const judge_context *c, size_t i, char *const *argv, const forms *self,
                          ssize_t *best)
{
    const pdk_command_rules *rules = c->rules;
    const pdk_command_rule *r = &rules->rules[i];
    /* strictest first; of equals, the first in the file */
    if (*best >= 0 && (r->decision < rules->rules[*best].decision ||
                       (r->decision == rules->rules[*best].decision && (ssize_t)i > *best)))
        return;
    if (!pdk_command_rule_matches(r, argv))
        return;
    if (r->under_count > 0 && !under_holds(c, r, self))
        return;
    *best = (ssize_t)i;
}

/* The strictest rule matching one of the forms: its index, or -1. */
static ssize_t strictest_rule(const judge_context *c, const forms *f)
{
    const pdk_command_rules *rules = c->rules;
    if (!rules->index)
        ((pdk_command_rules *)rules)->index = index_build(rules); /* a cache, made once */
    pdk_command_rule_index *ix = rules->index;
    ssize_t best = -1;
    for (size_t k = 0; k < f->count; k++) {
        char *const *argv = f->argv[k];
        struct index_entry *e = index_slot(ix, basename_of(argv[0]));
        for (size_t i = 0; e->name && i < e->count; i++)
            consider_rule(c, e->rules[i], argv, f, &best);
        for (size_t i = 0; i < ix->always_count; i++)
            consider_rule(c, ix->always[i], argv, f, &best);
    }
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

/* What a command hides (a script not reduced, an alias) may match any rule: ask when some
 * rule is stricter than the default, else the default. */
static void consider_hidden(const pdk_command_rules *rules, pdk_command_verdict *v,
                            const char *reason)
{
    pdk_decision d = rules->default_decision;
    bool stricter = false;
    for (size_t i = 0; i < rules->count && !stricter; i++)
        stricter = rules->rules[i].decision > d;
    if (stricter && d < PDK_DECISION_ASK)
        d = PDK_DECISION_ASK;
    consider(v, d, -1, reason);
}

static void judge(const judge_context *c, char *const *argv, int depth, pdk_command_verdict *v)
{
    const pdk_command_rules *rules = c->rules;
    forms f;
    make_forms(argv, &f);
    /* Rules about the command itself (the wrapper too, when it is one). */
    ssize_t own = strictest_rule(c, &f);
    if (own >= 0)
        consider(v, rules->rules[own].decision, own, rule_reason(rules, own));
    if (f.hidden && own < 0)
        consider_hidden(rules, v,
                        "a command whose subcommand paddock cannot tell (an alias "
                        "defined on its command line, or options it does not know)");
    forms_free(&f);

    /* The dynamic loader runs its operand. */
    const char *argv0 = NULL;
    size_t program = depth < MAX_SHELL_DEPTH && pdk_exec_is_loader_name(basename_of(argv[0]))
                         ? pdk_exec_loader_program(argv, &argv0)
                         : 0;
    if (program > 0) {
        char **p = pdk_strv_view(NULL, 0, argv + program);
        if (argv0) {
            /* judged under both names: the file and what it is told it is */
            judge(c, p, depth + 1, v);
            p[0] = (char *)argv0;
        }
        judge(c, p, depth + 1, v);
        free(p);
        return;
    }

    const char *script = depth < MAX_SHELL_DEPTH ? pdk_shell_wrapper_script(argv) : NULL;
    if (!script) {
        if (own < 0)
            consider(v, rules->default_decision, -1, "the default for commands");
        return;
    }
    v->through_shell = true;
    const pdk_command_query *q = c->query;
    pdk_shell_options options = {.shell = pdk_shell_wrapper_name(argv),
                                 .read_file = q ? q->read_file : NULL,
                                 .read_file_arg = q ? q->read_file_arg : NULL,
                                 .home = q ? q->home : NULL};
    pdk_shell_split_t split;
    pdk_shell_split_with(script, &options, &split);
    if (!split.reducible) {
        v->unreducible = true;
        /* Judged as a whole: a rule about the wrapper decides, else what the script runs
         * cannot be seen. */
        if (own < 0)
            consider_hidden(rules, v, "a shell script paddock cannot split into its commands");
    } else if (split.count == 0) {
        if (own < 0)
            consider(v, rules->default_decision, -1, "the default for commands");
    } else {
        for (size_t i = 0; i < split.count; i++)
            if (split.commands[i].argv && split.commands[i].argv[0])
                judge(c, split.commands[i].argv, depth + 1, v);
    }
    pdk_shell_split_free(&split);
}

/* argv with each name of its executable in argv[0]'s place, argv[0] itself first; fn's
 * result ends the walk when true. */
static bool each_name(const pdk_command_query *q, bool (*fn)(char *const *argv, void *arg),
                      void *arg)
{
    if (fn(q->argv, arg))
        return true;
    if (!q->names || !q->names[0])
        return false;
    char **a = pdk_strv_view(NULL, 0, q->argv);
    bool stop = false;
    for (size_t i = 0; q->names[i] && !stop; i++) {
        bool seen = strcmp(q->names[i], q->argv[0]) == 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(q->names[i], q->names[j]) == 0;
        if (seen || !q->names[i][0])
            continue;
        a[0] = q->names[i];
        stop = fn(a, arg);
    }
    free(a);
    return stop;
}

typedef struct judge_walk {
    judge_context c;
    pdk_command_verdict *v;
} judge_walk;

static bool judge_one(char *const *argv, void *arg)
{
    judge_walk *w = arg;
    judge(&w->c, argv, 0, w->v);
    return false;
}

void pdk_command_rules_judge_more(const pdk_command_rules *rules, const pdk_command_query *q,
                                  pdk_command_verdict *out)
{
    if (!q->argv || !q->argv[0]) {
        consider(out, rules->default_decision, -1, "the default for commands");
        return;
    }
    judge_walk w = {{rules, q->ancestors, q}, out};
    each_name(q, judge_one, &w);
}

void pdk_command_rules_judge_query(const pdk_command_rules *rules, const pdk_command_query *q,
                                   pdk_command_verdict *out)
{
    /* Start below every candidate, so that the first one sets the verdict. */
    memset(out, 0, sizeof(*out));
    out->decision = PDK_DECISION_ALLOW;
    out->rule = -1;
    out->reason = "the default for commands";
    if (!q->argv || !q->argv[0]) {
        out->decision = rules->default_decision;
        return;
    }
    pdk_command_rules_judge_more(rules, q, out);
}

void pdk_command_rules_judge(const pdk_command_rules *rules, char *const *argv,
                             pdk_command_verdict *out)
{
    pdk_command_query q = {.argv = argv};
    pdk_command_rules_judge_query(rules, &q, out);
}

static bool starts_under_one(char *const *argv, void *arg)
{
    const pdk_command_rules *rules = arg;
    forms f;
    make_forms(argv, &f);
    bool hit = false;
    for (size_t i = 0; i < rules->count && !hit; i++)
        hit = under_pattern_matches(&rules->rules[i], &f);
    forms_free(&f);
    return hit;
}

bool pdk_command_rules_starts_under(const pdk_command_rules *rules, const pdk_command_query *q)
{
    if (!rules->has_under || !q->argv || !q->argv[0])
        return false;
    return each_name(q, starts_under_one, (void *)rules);
}
