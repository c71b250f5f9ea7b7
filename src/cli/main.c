/* main.c: dispatch to subcommands. Nothing else lives here. */
#include "cli.h"

#include "audit.h"
#include "display.h"
#include "log.h"
#include "output.h"
#include "statedir.h"
#include "vault.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const pdk_cli_command commands[] = {
    {"run", "run a command in a sandbox", pdk_cmd_run},
    {"sessions", "list workspace sessions", pdk_cmd_sessions},
    {"diff", "show what a session changed", pdk_cmd_diff},
    {"commit", "apply a session's changes to the real workspace", pdk_cmd_commit},
    {"discard", "throw a session's changes away", pdk_cmd_discard},
    {"doctor", "check what this kernel offers and what paddock will do", pdk_cmd_doctor},
    {"policy", "check commands against a policy, lint a policy file", pdk_cmd_policy},
    {"audit", "the audit log: list, follow, verify, export", pdk_cmd_audit},
    {"approvals", "the requests waiting for a human's decision", pdk_cmd_approvals},
    {"approve", "let the command of an approval request run", pdk_cmd_approve},
    {"deny", "refuse the command of an approval request", pdk_cmd_deny},
    {"ca", "paddock's CA for TLS interception at the gateway", pdk_cmd_ca},
    {"secret", "the vault: secrets the gateway injects, never shown to a sandbox", pdk_cmd_secret},
    {"demo", "tell paddock's story on built-in defaults (credentials, workspace review)",
     pdk_cmd_demo},
};

static void print_usage(FILE *out)
{
    fprintf(out, "usage: paddock COMMAND [OPTIONS] [ARGS]\n\n"
                 "paddock runs commands in a sandbox whose workspace changes are reviewed\n"
                 "before they land.\n\ncommands:\n");
    for (size_t i = 0; i < PDK_ARRAY_SIZE(commands); i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nglobal options:\n"
                 "  -h, --help     show this help\n"
                 "  --version      print the version\n"
                 "\n'paddock COMMAND --help' describes a command; man paddock has it all.\n");
}

int pdk_cli_parse_json_help(int argc, char **argv, const char *usage, bool *json)
{
    static const struct option options[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    *json = false;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'j':
            *json = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return PDK_EXIT_OK;
        default:
            return pdk_cli_bad_option(argv[0], optopt, argv, optind);
        }
    }
    return -1;
}

int pdk_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    pdk_outputf(STDERR_FILENO, 0, "paddock %s: %s (see 'paddock %s --help')", cmd, msg, cmd);
    return PDK_EXIT_USAGE;
}

int pdk_cli_bad_option(const char *cmd, int optopt_value, char *const *argv, int index)
{
    const char *arg = (index > 0) ? argv[index - 1] : "?";
    if (optopt_value && strchr(arg, '-') == arg && arg[1] != '-')
        return pdk_cli_usage_error(cmd, "unknown option or missing argument for '-%c'",
                                   optopt_value);
    return pdk_cli_usage_error(cmd, "unknown option or missing argument: '%s'", arg);
}

int pdk_cli_fail(const pdk_error *err, int code)
{
    pdk_cli_message("%s", err->message);
    return code;
}

void pdk_cli_message(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    _cleanup_free_ char *msg = xvasprintf(fmt, ap);
    va_end(ap);
    pdk_outputf(STDERR_FILENO, 0, "paddock: %s", msg); /* redacted, escaped (output.h) */
}

int pdk_cli_state_dir(bool create, char **out, pdk_error *err)
{
    return pdk_state_dir(create, out, err);
}

int pdk_cli_open_store(bool fold, pdk_store **store)
{
    pdk_error err = {0};
    _cleanup_free_ char *state = NULL;
    if (pdk_cli_state_dir(true, &state, &err) < 0 || pdk_store_open(state, true, store, &err) < 0)
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    if (fold && pdk_audit_fold(*store, state, &err) < 0) {
        pdk_store_close(*store);
        *store = NULL;
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    }
    return PDK_EXIT_OK;
}

void pdk_cli_print_json(json_t *value)
{
    char *s = pdk_display_json_dumps(value, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (s) {
        fputs(s, stdout);
        fputc('\n', stdout);
        free(s);
    }
    json_decref(value);
}

void pdk_cli_print_json_line(FILE *out, json_t *value)
{
    char *s = pdk_display_json_dumps(value, JSON_COMPACT | JSON_SORT_KEYS);
    fprintf(out, "%s\n", s ? s : "{}");
    free(s);
    json_decref(value);
}

int main(int argc, char **argv)
{
    pdk_trace("start");
    /* Before any thread: JSON's freed memory is wiped (the vault's plaintext passes there). */
    pdk_vault_wipe_json_memory();
    const char *debug = getenv("PADDOCK_DEBUG");
    if (debug && *debug && strcmp(debug, "0") != 0)
        pdk_log_set_level(PDK_LOG_DEBUG);

    if (argc < 2) {
        print_usage(stderr);
        return PDK_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "help") == 0) {
        print_usage(stdout);
        return PDK_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("paddock %s\n", PADDOCK_VERSION);
        return PDK_EXIT_OK;
    }
    for (size_t i = 0; i < PDK_ARRAY_SIZE(commands); i++) {
        if (strcmp(name, commands[i].name) == 0) {
            /* Subcommands see argv[0] = their own name, as getopt expects. */
            return commands[i].main(argc - 1, argv + 1);
        }
    }
    pdk_outputf(STDERR_FILENO, 0, "paddock: unknown command '%s' (see 'paddock --help')", name);
    return PDK_EXIT_USAGE;
}
