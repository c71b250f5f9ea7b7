/* command_rules.h: judging a command line against command rules (the review layer of the
 * four tiers: allow, confine, ask, deny).
 *
 * A rule is an argv prefix: each token lists one or more alternatives, each an fnmatch(3)
 * glob ("*" matches anything, "/" included). The first token is the executable: an
 * alternative without a "/" is compared with the basename of argv[0], one with a "/" with
 * argv[0] as given. Every rule that matches counts and the strictest decision wins
 * (deny > ask > confine > allow); when none matches, the default applies. Shell wrappers
 * (sh -c SCRIPT, bash -lc SCRIPT, ...) are seen through: the script is split into its simple
 * commands (shell.h) and each is judged; a script that cannot be reduced is judged as a
 * whole: a rule matching the wrapper itself decides, else ask when some rule is stricter
 * than the default (what the script hides might match it), else the default.
 *
 * This module judges; the policy file's `commands` section and the enforcement at exec
 * come with the release that uses it.
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
} pdk_command_rule;

typedef struct pdk_command_rule_index pdk_command_rule_index;

typedef struct pdk_command_rules {
    pdk_command_rule *rules;
    size_t count;
    pdk_decision default_decision;
    /* Rules by the literal executable names of their first token, made at the first
     * judgement after a change (so that 1,000 rules cost a lookup, not 1,000 globs). */
    pdk_command_rule_index *index;
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

/* Judge argv (NULL-terminated, at least one word). */
void pdk_command_rules_judge(const pdk_command_rules *rules, char *const *argv,
                             pdk_command_verdict *out);

/* Whether rule matches argv exactly as a prefix (no shell splitting). */
bool pdk_command_rule_matches(const pdk_command_rule *rule, char *const *argv);

void pdk_command_rules_free(pdk_command_rules *rules);

#endif
