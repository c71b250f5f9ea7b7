/* shell.h: splitting a shell script into its simple commands, for the command policy.
 *
 * `sh -c "a && b | c"` is judged command by command: pdk_shell_split() lists a, b and c.
 * The splitter is conservative. It understands a POSIX sh subset (quoting, comments,
 * ; & && || | |& and newlines, ( ) and { }, if/while/until/for/case, function definitions,
 * redirections and here-documents, assignments, $( ) ` ` and <( ) >( ) substitutions,
 * ${...} expansions, [[ ]]) and, for bash only, bash's own syntax ($'...', (( )), arrays);
 * anything else, and anything whose meaning depends on run-time state or on which shell
 * runs it, makes the script "not reducible", with a reason, and the caller judges the
 * script as a whole. It never guesses: where it is not sure how the shell reads a text,
 * the script is not reducible.
 *
 * What runs is listed, never less: each command the script can run is listed (those it
 * runs only in some branch, those of functions it defines whether called or not, those of
 * substitutions, here-documents, `eval`, `trap` actions, aliases and sourced files), and
 * listing more than runs is allowed (a command after `exec`, both the alias and what it
 * stands for).
 *
 * What a listed command holds:
 *   - argv: the words after quote removal, redirections and their targets dropped, from the
 *     word that names what runs (`command` and `builtin` before it are taken off, `command
 *     -v NAME`, which runs nothing, stays whole). argv[0] is never NULL and is a literal:
 *     no $VAR, no substitution, no glob. Later words are kept verbatim where they expand
 *     ($HOME/x, *.c, $(...), "$@").
 *   - assignments: NAME=VALUE words before argv[0] (after quote removal).
 * A command of assignments (or redirections) only is not listed; the commands of its
 * substitutions are. Commands of a substitution are listed before the command that
 * contains it, in the order the shell would run them.
 *
 * Commands that run other text are followed into it, and listed themselves too:
 *   - `eval WORDS` whose words are literal text: that text, as a script;
 *   - `. FILE`, `source FILE`: the file's text (options->read_file), when its path is
 *     absolute, or $HOME/..., ${HOME}/..., ~/... while nothing before could have changed
 *     HOME (options->home);
 *   - `exec [-cl] [-a NAME] COMMAND...`: COMMAND (and COMMAND named NAME);
 *   - `trap ACTION SIGNAL...` with a literal action: the action, as a script;
 *   - an alias defined in the script (`alias NAME=VALUE`, literal): a later command NAME
 *     is listed both as itself and as what it expands to;
 *   - a function defined in the script is listed where it is defined, its body's commands
 *     with it; a function whose body runs its arguments ("$@" in command position) makes
 *     each later call list its arguments as a command. A function or alias defined after a
 *     command of its name was listed (a loop, an eval run later) makes the script
 *     unreducible.
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

typedef struct pdk_shell_options {
    /* The shell that runs the script: the basename of its executable ("bash", "sh",
     * "dash", "zsh", ...; NULL when unknown). bash's own syntax ($'...', (( )), arrays,
     * NAME+=) is reduced for "bash" only: for another shell it means something else or
     * nothing, and makes the script unreducible. */
    const char *shell;
    /* The text of a file the script sources, by its absolute path, as the shell would
     * read it. Returns 0 with *text a new NUL-terminated string, or with *text NULL when
     * there is no such file (the shell's source fails, nothing of it runs); -1 when it
     * cannot be read (the script is then unreducible). NULL: every sourced file makes the
     * script unreducible. */
    int (*read_file)(void *arg, const char *path, char **text);
    void *read_file_arg;
    /* $HOME (and ~) for a sourced path: the HOME the shell starts with. NULL: unknown. */
    const char *home;
} pdk_shell_options;

/* Split script (NUL-terminated) as the shell of options runs it (options may be NULL: an
 * unknown shell, no files read). Never fails; an unreducible script sets reducible =
 * false and reason. out is overwritten (not freed first). */
void pdk_shell_split_with(const char *script, const pdk_shell_options *options,
                          struct pdk_shell_split *out);
/* pdk_shell_split_with(script, NULL, out). */
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

/* The shell of a wrapper pdk_shell_wrapper_script() accepts: the basename of argv[0], or
 * "sh" for busybox. */
const char *pdk_shell_wrapper_name(char *const *argv);

#endif
