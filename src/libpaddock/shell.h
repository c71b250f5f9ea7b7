/* shell.h: splitting a shell script into its simple commands, for the command policy.
 *
 * `sh -c "a && b | c"` is judged command by command: pdk_shell_split() lists a, b and c.
 * The splitter is conservative. It understands a POSIX sh subset (quoting, comments,
 * ; & && || | |& and newlines, ( ) and { }, if/while/until/for, redirections, assignments,
 * $( ) and ` ` substitutions, [[ ]]); anything else, and anything whose meaning depends on
 * run-time state or on which shell runs it, makes the script "not reducible", with a
 * reason, and the caller judges the script as a whole. It never guesses.
 *
 * What a listed command holds:
 *   - argv: the words after quote removal, redirections and their targets dropped.
 *     argv[0] is never NULL and is a literal: no $VAR, no substitution, no glob, no
 *     eval/exec/source/./trap (behind command/builtin too): those make the script
 *     unreducible. Later words are kept verbatim where they expand ($HOME/x, *.c, $(...)).
 *   - assignments: NAME=VALUE words before argv[0] (after quote removal).
 * A command of assignments (or redirections) only is not listed; the commands of its
 * substitutions are. Commands of a substitution are listed before the command that
 * contains it, in the order the shell would run them.
 */
#ifndef PADDOCK_SHELL_H
#define PADDOCK_SHELL_H

#include <stdbool.h>
#include <stddef.h>

typedef struct pdk_shell_command {
    char **argv;        /* NULL-terminated words after quote removal; argv[0] != NULL */
    char **assignments; /* NAME=VALUE words before the command, NULL-terminated (may be empty) */
} pdk_shell_command;

/* The type is `struct pdk_shell_split` (or pdk_shell_split_t): a typedef named
 * pdk_shell_split would clash with the function of that name. */
typedef struct pdk_shell_split {
    pdk_shell_command *commands; /* NULL and count 0 when not reducible */
    size_t count;
    bool reducible; /* false: judge the script as a whole */
    char *reason;   /* when not reducible: a short phrase, e.g. "variable in command position";
                     * NULL when reducible */
} pdk_shell_split_t;

/* Split script (NUL-terminated). Never fails; an unreducible script sets reducible = false
 * and reason. out is overwritten (not freed first). */
void pdk_shell_split(const char *script, struct pdk_shell_split *out);
/* Free what pdk_shell_split() filled in and zero *split. NULL-safe, idempotent. */
void pdk_shell_split_free(struct pdk_shell_split *split);

/* For argv of a shell wrapper (basename sh, bash, dash, zsh, ksh, ash, or busybox sh), return
 * the script of "SHELL [OPTIONS...] -c [OPTIONS...] SCRIPT [ARGS...]", pointing into argv.
 * Options may be combined (-lc, -ec, -xc), separate (bash -l -c), long (--login, --norc), or
 * take an argument (-o pipefail, -O extglob, +o posix). Returns NULL when argv is not that
 * form: no -c, no script word, an option not understood, or -s / -i (stdin script,
 * interactive shell: aliases and rc files make the script mean something else). */
const char *pdk_shell_wrapper_script(char *const *argv);

#endif
