/* command_rules.h: judging a command line against command rules (the review layer of the
 * four tiers: allow, confine, ask, deny).
 *
 * A rule is an argv prefix: each token lists one or more alternatives, each an fnmatch(3)
 * glob ("*" matches anything, "/" included). The first token is the executable: an
 * alternative without a "/" is compared with the basename of argv[0], one with a "/" with
 * argv[0] as given. Every rule that matches counts and the strictest decision wins
 * (deny > ask > confine > allow); when none matches, the default applies.
 *
 * A command is judged in every form it may take, the strictest winning:
 *   - with each name of its executable in argv[0]'s place (the names an exec really has:
 *     the path, its symlinks, the file, exec_target.h), not only the caller's argv[0];
 *   - with the global options of well-known tools taken out before the subcommand, so that
 *     [git, push] matches `git -C . -c k=v --no-pager push` (git, npm, npx, yarn, pnpm,
 *     pip, uv; python's options before `-m MODULE`). An option these tables do not know is
 *     tried both as a flag and as taking the next word; `git -c alias.NAME=...` that
 *     defines the subcommand hides what runs and counts as a script that cannot be
 *     reduced (below);
 *   - the dynamic loader's program (`ld.so [OPTIONS] PROGRAM ARGS`) as the command;
 *   - shell wrappers (sh -c SCRIPT, bash -lc SCRIPT, ...) seen through: the script is split
 *     into its simple commands (shell.h) and each is judged; a script that cannot be
 *     reduced is judged as a whole: a rule matching the wrapper itself decides, else ask
 *     when some rule is stricter than the default (what the script hides might match it),
 *     else the default.
 *
 * A rule may hold only under some processes (`under`): then it matches a command only
 * when one of the command's ancestors matched one of its `under` patterns (the caller
 * says which ancestors did), and never a command that matches one itself (an installer's
 * own children that are installers, such as pip's build-dependency pip).
 */
#ifndef PADDOCK_COMMAND_RULES_H
#define PADDOCK_COMMAND_RULES_H

#include "util.h"

#include <sys/types.h>

/* In order of strictness. */
typedef enum pdk_decision {
    PDK_DECISION_ALLOW = 0,
    PDK_DECISION_CONFINE = 1,
    PDK_DECISION_ASK = 2,
    PDK_DECISION_DENY = 3,
} pdk_decision;

const char *pdk_decision_name(pdk_decision decision);
/* "allow", "confine", "ask", "deny"; returns 0, or -1 for anything else. */
int pdk_decision_parse(const char *name, pdk_decision *out);

typedef struct pdk_pattern_token {
    char **alternatives; /* NULL-terminated, at least one */
} pdk_pattern_token;

typedef struct pdk_command_rule {
    pdk_pattern_token *tokens;
    size_t token_count;
    pdk_decision decision;
    char *reason; /* may be NULL */
    bool quiet;   /* a deny rule whose refusals are recorded, not shown (set after _add) */
    /* under: the rule holds only below a process one of these patterns matched (their
     * decision and reason are unused); none: everywhere */
    struct pdk_command_rule *under;
    size_t under_count;
} pdk_command_rule;

typedef struct pdk_command_rule_index pdk_command_rule_index;

typedef struct pdk_command_rules {
    pdk_command_rule *rules;
    size_t count;
    pdk_decision default_decision;
    /* Rules by the literal executable names of their first token, made at the first
     * judgement after a change (so that 1,000 rules cost a lookup, not 1,000 globs). */
    pdk_command_rule_index *index;
    bool has_under; /* some rule has `under` patterns */
} pdk_command_rules;

typedef struct pdk_command_verdict {
    pdk_decision decision;
    ssize_t rule;       /* index of the deciding rule, -1 for the default or the fallback */
    const char *reason; /* the deciding rule's reason, or a fixed phrase; never NULL */
    bool through_shell; /* the command was a shell wrapper whose script was split */
    bool unreducible;   /* ... and the script could not be reduced */
} pdk_command_verdict;

/* Append a rule (copies everything). tokens[i] is a NULL-terminated list of alternatives. */
void pdk_command_rules_add(pdk_command_rules *rules, char *const *const *tokens, size_t token_count,
                           pdk_decision decision, const char *reason);

/* Add an `under` pattern to rule number rule (copies everything). */
void pdk_command_rules_add_under(pdk_command_rules *rules, size_t rule, char *const *const *tokens,
                                 size_t token_count);

/* What is judged: a command and what the caller knows of it. */
typedef struct pdk_command_query {
    char *const *argv;  /* NULL-terminated, at least one word */
    char *const *names; /* other names of its executable (NULL-terminated; NULL: none) */
    /* The argvs of its ancestors that an `under` pattern matched when they started,
     * NULL-terminated (NULL: none): what `under` rules look at. */
    char *const *const *ancestors;
    /* For a shell script that sources a file: the file's text as the process that runs it
     * sees it (shell.h, pdk_shell_options.read_file), and the HOME it starts with. NULL:
     * such a script is judged as a whole. */
    int (*read_file)(void *arg, const char *path, char **text);
    void *read_file_arg;
    const char *home;
} pdk_command_query;

/* Judge argv (NULL-terminated, at least one word), with no other names or ancestors. */
void pdk_command_rules_judge(const pdk_command_rules *rules, char *const *argv,
                             pdk_command_verdict *out);
/* Judge q. */
void pdk_command_rules_judge_query(const pdk_command_rules *rules, const pdk_command_query *q,
                                   pdk_command_verdict *out);
/* Judge q too, folding it into out (judged before): the strictest of both stays. */
void pdk_command_rules_judge_more(const pdk_command_rules *rules, const pdk_command_query *q,
                                  pdk_command_verdict *out);
/* Whether q matches some rule's `under` pattern (in any of its forms): the processes it
 * starts are under it. */
bool pdk_command_rules_starts_under(const pdk_command_rules *rules, const pdk_command_query *q);

/* Whether rule matches argv exactly as a prefix (no shell splitting, no other forms, its
 * `under` patterns not looked at). */
bool pdk_command_rule_matches(const pdk_command_rule *rule, char *const *argv);

void pdk_command_rules_free(pdk_command_rules *rules);

#endif
