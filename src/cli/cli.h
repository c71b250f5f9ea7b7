/* cli.h: what every subcommand of the thin CLI shares.
 *
 * Each subcommand lives in its own file (cmd_<name>.c), parses its own options with
 * getopt_long, calls the library, and prints. Exit codes of every subcommand but `run`:
 *   0 success, 1 the operation failed or was refused, 2 bad usage.
 * `run` follows the contract in docs/design.md (the command's own status, 125, 126, 127,
 * 128+N).
 */
#ifndef PADDOCK_CLI_H
#define PADDOCK_CLI_H

#include "error.h"
#include "store.h"
#include "util.h"

#include <jansson.h>

#define PDK_EXIT_OK     0
#define PDK_EXIT_FAILED 1
#define PDK_EXIT_USAGE  2

typedef struct pdk_cli_command {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv);
} pdk_cli_command;

int pdk_cmd_run(int argc, char **argv);
int pdk_cmd_sessions(int argc, char **argv);
int pdk_cmd_diff(int argc, char **argv);
int pdk_cmd_commit(int argc, char **argv);
int pdk_cmd_discard(int argc, char **argv);
int pdk_cmd_doctor(int argc, char **argv);
int pdk_cmd_policy(int argc, char **argv);
int pdk_cmd_audit(int argc, char **argv);
int pdk_cmd_approvals(int argc, char **argv);
int pdk_cmd_approve(int argc, char **argv);
int pdk_cmd_deny(int argc, char **argv);
int pdk_cmd_ca(int argc, char **argv);
int pdk_cmd_secret(int argc, char **argv);
int pdk_cmd_demo(int argc, char **argv);

/* Options of the subcommands that take only --json and --help: parses argv, leaves optind
 * at the first operand. Returns -1 to go on, else the exit status to return at once
 * (after --help, or a bad option). */
int pdk_cli_parse_json_help(int argc, char **argv, const char *usage, bool *json);

/* Print "paddock CMD: message" and a hint to stderr; returns PDK_EXIT_USAGE. */
int pdk_cli_usage_error(const char *cmd, const char *fmt, ...) PDK_PRINTF(2, 3);
/* The message for getopt's '?' result (unknown option or missing argument). */
int pdk_cli_bad_option(const char *cmd, int optopt_value, char *const *argv, int index);
/* Print "paddock: message" for a library error; returns code. */
int pdk_cli_fail(const pdk_error *err, int code);
/* Print "paddock: message" on stderr, one line: controls and hiding characters of what
 * the arguments hold (names a sandbox chose) escaped (display.h). */
void pdk_cli_message(const char *fmt, ...) PDK_PRINTF(1, 2);

/* The state dir per the contract, created (0700) when create is true. */
int pdk_cli_state_dir(bool create, char **out, pdk_error *err);

/* The state dir's store (created when missing), with the runs' audit spools folded into it
 * first when fold is true; an exit code, the error already printed. */
int pdk_cli_open_store(bool fold, pdk_store **store);

/* The terminal prompt (prompt.c): how the CLI asks the human at its terminal about an
 * approval, for pdk_run_options.asker. */
struct pdk_approval_asker;
const struct pdk_approval_asker *pdk_cli_terminal_asker(void);

/* Print a JSON value on stdout followed by a newline; frees it. Every JSON paddock prints
 * goes through pdk_display_json_dumps: C1 controls, bidi and invisible characters of its
 * strings as \u escapes. */
void pdk_cli_print_json(json_t *value);
/* The same, compact, as one line on out (JSON lines: --json of lists, --follow). */
void pdk_cli_print_json_line(FILE *out, json_t *value);

#endif
