/* cmd_run.c: paddock run [options] -- CMD [ARG...] */
#include "cli.h"

#include "display.h"
#include "run.h"
#include "sandbox.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: paddock run [OPTIONS] -- CMD [ARG...]\n"
    "\n"
    "Run CMD in a sandbox. The workspace is mounted copy-on-write: what CMD writes there\n"
    "lands in a session layer, reviewed with 'paddock diff' and applied with\n"
    "'paddock commit' (or dropped with 'paddock discard').\n"
    "\n"
    "options:\n"
    "  --policy FILE            policy file (YAML, version 1); default: built-in\n"
    "  --profile NAME           default, readonly (the workspace read-only, no session) or\n"
    "                           offline (no network at all, not even loopback)\n"
    "  --workspace DIR          the workspace (default: the current directory)\n"
    "  --workspace-mode MODE    overlay (default) or direct (write straight through)\n"
    "  --session NAME           name the session; an existing one is continued\n"
    "  --timeout SECONDS        kill the command after SECONDS (overrides the policy)\n"
    "  --tty                    give the command its own pty (default: no terminal)\n"
    "  --quiet                  print none of paddock's messages while the command runs\n"
    "                           (they are in the audit log, and counted at the end)\n"
    "  --pass-fd N              keep fd N open for the command (repeatable)\n"
    "  --allow-degraded         run even when Landlock or cgroups fall short of the policy\n"
    "  --json                   print the final report as one JSON line on stderr\n"
    "  -h, --help               show this help\n"
    "\n"
    "While the command runs, paddock's messages (refusals, approvals asked, warnings) go to\n"
    "stderr; when the command owns the terminal (--tty, or stdin, stdout and stderr are a\n"
    "terminal) they go to a notice file instead, which 'paddock approvals --watch' follows,\n"
    "and a summary is printed at the end.\n"
    "\n"
    "exit status: the command's own; 125 paddock failed; 126 cannot execute;\n"
    "127 not found; 128+N killed by signal N (a timeout kills with SIGKILL: 137).\n";

/* "3 execs refused" and the like, joined. */
static void add_count(pdk_buf *b, uint64_t n, const char *one, const char *many)
{
    if (n)
        pdk_buf_printf(b, "%s%llu %s", b->len ? ", " : "", (unsigned long long)n,
                       n == 1 ? one : many);
}

/* At the end: what was refused and asked while the command ran, when some of it was not
 * printed as it came (refused execs are told to the process, not on paddock's stderr). */
static void print_notice_summary(const pdk_run_report *report)
{
    const pdk_notice_counts *n = &report->notices;
    bool aside = report->notice_route != PDK_NOTICES_STDERR;
    if (!(n->execs_refused || n->requests_refused || (aside && (n->held || n->quiet))))
        return;
    pdk_buf b = {0};
    add_count(&b, n->execs_refused, "exec refused", "execs refused");
    add_count(&b, n->requests_refused, "request refused", "requests refused");
    add_count(&b, n->approvals, "approval asked", "approvals asked");
    add_count(&b, n->warnings, "warning", "warnings");
    add_count(&b, n->quiet, "quiet refusal", "quiet refusals");
    fprintf(stderr, "paddock: while it ran: %s; see them with: paddock audit --session %s\n",
            b.data, report->session_id ? report->session_id : "ID");
    pdk_buf_free(&b);
}

static int run_usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "paddock run: %s%s%s (see 'paddock run --help')\n", msg, arg ? " " : "",
            arg ? arg : "");
    return PDK_EXIT_PADDOCK_FAILED;
}

int pdk_cmd_run(int argc, char **argv)
{
    enum {
        OPT_POLICY = 256,
        OPT_WORKSPACE,
        OPT_MODE,
        OPT_SESSION,
        OPT_TIMEOUT,
        OPT_TTY,
        OPT_PASS_FD,
        OPT_DEGRADED,
        OPT_JSON,
        OPT_PROFILE,
        OPT_QUIET
    };
    static const struct option options[] = {
        {"policy", required_argument, NULL, OPT_POLICY},
        {"workspace", required_argument, NULL, OPT_WORKSPACE},
        {"workspace-mode", required_argument, NULL, OPT_MODE},
        {"session", required_argument, NULL, OPT_SESSION},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"tty", no_argument, NULL, OPT_TTY},
        {"pass-fd", required_argument, NULL, OPT_PASS_FD},
        {"allow-degraded", no_argument, NULL, OPT_DEGRADED},
        {"json", no_argument, NULL, OPT_JSON},
        {"profile", required_argument, NULL, OPT_PROFILE},
        {"quiet", no_argument, NULL, OPT_QUIET},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    pdk_run_options opt = {.timeout_seconds = -1,
                           .workspace_mode = PDK_WORKSPACE_OVERLAY,
                           .asker = pdk_cli_terminal_asker()};
    bool json = false, quiet = false;
    _cleanup_free_ int *pass_fds = NULL;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
        switch (c) {
        case OPT_POLICY:
            opt.policy_path = optarg;
            break;
        case OPT_WORKSPACE:
            opt.workspace = optarg;
            break;
        case OPT_MODE:
            if (strcmp(optarg, "overlay") == 0)
                opt.workspace_mode = PDK_WORKSPACE_OVERLAY;
            else if (strcmp(optarg, "direct") == 0)
                opt.workspace_mode = PDK_WORKSPACE_DIRECT;
            else
                return run_usage_error("--workspace-mode takes overlay or direct, not", optarg);
            break;
        case OPT_SESSION:
            opt.session_name = optarg;
            break;
        case OPT_TIMEOUT: {
            int64_t v;
            if (pdk_parse_int64(optarg, 0, 365LL * 24 * 3600, &v) < 0)
                return run_usage_error("--timeout takes a number of seconds, not", optarg);
            opt.timeout_seconds = v;
            break;
        }
        case OPT_TTY:
            opt.tty = true;
            break;
        case OPT_PASS_FD: {
            int64_t v;
            if (pdk_parse_int64(optarg, 3, 1 << 20, &v) < 0)
                return run_usage_error("--pass-fd takes an fd number >= 3, not", optarg);
            pass_fds = xrealloc(pass_fds, (opt.pass_fd_count + 1) * sizeof(int));
            pass_fds[opt.pass_fd_count++] = (int)v;
            break;
        }
        case OPT_DEGRADED:
            opt.allow_degraded = true;
            break;
        case OPT_JSON:
            json = true;
            break;
        case OPT_QUIET:
            quiet = true;
            break;
        case OPT_PROFILE: {
            bool known = false;
            for (size_t i = 0; pdk_run_profiles[i]; i++)
                known = known || strcmp(optarg, pdk_run_profiles[i]) == 0;
            if (!known)
                return run_usage_error("--profile takes default, readonly or offline, not", optarg);
            opt.profile = optarg;
            break;
        }
        case 'h':
            fputs(usage, stdout);
            return PDK_EXIT_OK;
        case '?':
        default:
            return run_usage_error("unknown option or missing argument:", argv[optind - 1]);
        }
    }
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (optind >= argc)
        return run_usage_error("no command given: paddock run [OPTIONS] -- CMD [ARG...]", NULL);
    opt.argv = argv + optind;
    opt.pass_fds = pass_fds;
    /* The command owns the terminal paddock would print on: a TUI draws there. */
    if (quiet)
        opt.notices = PDK_NOTICES_QUIET;
    else if (isatty(STDERR_FILENO) && (opt.tty || (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))))
        opt.notices = PDK_NOTICES_ASIDE;
    else
        opt.notices = PDK_NOTICES_STDERR;

    pdk_run_report report;
    pdk_error err = {0};
    if (pdk_run(&opt, &report, &err) < 0) {
        pdk_cli_fail(&err, PDK_EXIT_PADDOCK_FAILED);
        if (json)
            pdk_cli_print_json_line(stderr, json_pack("{s:o, s:i}", "error",
                                                      pdk_display_json_string(err.message), "exit",
                                                      PDK_EXIT_PADDOCK_FAILED));
        return PDK_EXIT_PADDOCK_FAILED;
    }
    if (report.message[0])
        pdk_cli_message("%s", report.message);
    if (report.hint[0])
        pdk_cli_message("%s", report.hint);
    print_notice_summary(&report);
    if (report.timed_out)
        fprintf(stderr, "paddock: timeout after %llds: the command was killed\n",
                (long long)report.timeout_seconds);
    if (json) {
        json_t *j = json_object();
        json_object_set_new(j, "session",
                            report.session_id && report.session_kept
                                ? json_string(report.session_id)
                                : json_null());
        json_object_set_new(j, "changes", json_integer((json_int_t)report.changes));
        json_object_set_new(j, "exit", json_integer(report.exit_status));
        json_object_set_new(j, "timed_out", json_boolean(report.timed_out));
        json_object_set_new(j, "decision", json_string(pdk_decision_name(report.decision)));
        json_object_set_new(j, "decided_by",
                            json_string(report.decided_by ? report.decided_by : ""));
        json_object_set_new(j, "confined", json_boolean(report.confined));
        json_object_set_new(j, "denied", json_boolean(report.denied));
        json_object_set_new(
            j, "workspace_mode",
            json_string(report.workspace_mode == PDK_WORKSPACE_DIRECT ? "direct" : "overlay"));
        const pdk_notice_counts *n = &report.notices;
        json_object_set_new(j, "notices",
                            json_pack("{s:I, s:I, s:I, s:I, s:I}", "execs_refused",
                                      (json_int_t)n->execs_refused, "requests_refused",
                                      (json_int_t)n->requests_refused, "approvals",
                                      (json_int_t)n->approvals, "warnings", (json_int_t)n->warnings,
                                      "quiet", (json_int_t)n->quiet));
        if (report.hint[0])
            json_object_set_new(j, "hint", json_string(report.hint));
        if (report.message[0])
            json_object_set_new(j, "error", pdk_display_json_string(report.message));
        pdk_cli_print_json_line(stderr, j);
    } else if (report.confined) {
        fprintf(stderr,
                "paddock: confined by the policy (%s): ran without network; %zu change%s "
                "thrown away\n",
                report.decided_by, report.changes, report.changes == 1 ? "" : "s");
    } else if (report.session_id && report.session_kept) {
        if (report.changes > 0)
            fprintf(stderr, "paddock: session %s: %zu file%s changed (review: paddock diff %s)\n",
                    report.session_id, report.changes, report.changes == 1 ? "" : "s",
                    report.session_id);
        else if (report.workspace_mode == PDK_WORKSPACE_DIRECT)
            fprintf(stderr, "paddock: session %s: direct mode, written straight through\n",
                    report.session_id);
        else
            fprintf(stderr, "paddock: session %s: no changes\n", report.session_id);
    } else if (report.session_id && report.session_removed &&
               report.workspace_mode == PDK_WORKSPACE_OVERLAY) {
        fprintf(stderr, "paddock: session %s: no changes\n", report.session_id);
    }
    int status = report.exit_status;
    pdk_run_report_free(&report);
    return status;
}
