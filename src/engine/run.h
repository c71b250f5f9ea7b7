/* run.h: `paddock run` as a library call: policy + workspace session -> sandbox config ->
 * sandbox -> session bookkeeping. The CLI only parses arguments and prints the report. */
#ifndef PADDOCK_RUN_H
#define PADDOCK_RUN_H

#include "command_rules.h"
#include "error.h"
#include "log.h"
#include "session.h"

typedef struct pdk_run_options {
    char **argv;
    const char *policy_path; /* NULL: the built-in default */
    const char *workspace;   /* NULL: the current directory */
    pdk_workspace_mode workspace_mode;
    const char *session_name; /* NULL: a generated id */
    bool allow_degraded;
    int *pass_fds;
    size_t pass_fd_count;
    bool tty;
    int64_t timeout_seconds; /* < 0: the policy's */
    /* A built-in profile on top of the policy: NULL or "default" (nothing more),
     * "readonly" (the workspace bound read-only: nothing is written to it, no session),
     * "offline" (no network at all, not even loopback). */
    const char *profile;
    /* Where paddock's notices go while the command runs (log.h): on stderr, or, when the
     * command owns the terminal (a TUI) or with --quiet, to the run's notice file only. */
    pdk_notice_route notices;
    /* How a human at the front end is asked when the policy asks about the command
     * (approvals.h; the CLI's terminal prompt); NULL: only other processes answer
     * (paddock approve). */
    const struct pdk_approval_asker *asker;
} pdk_run_options;

/* The profiles of pdk_run_options.profile, NULL-terminated. */
extern const char *const pdk_run_profiles[];

typedef struct pdk_run_report {
    int exit_status;  /* what `paddock run` exits with (contract) */
    char *session_id; /* NULL when no session was kept or made */
    bool session_kept;
    bool session_removed; /* unnamed and unchanged: removed at the end */
    size_t changes;
    pdk_workspace_mode workspace_mode;
    bool timed_out;
    int64_t timeout_seconds;
    char message[1024]; /* why paddock failed or could not run the command */
    /* The command rules' verdict on the command */
    pdk_decision decision;
    char *decided_by; /* "rule 2 (line 9: [curl] confine)" or "the default (allow)" */
    char reason[512];
    bool denied;   /* not run: the policy denies it (exit 126) */
    bool confined; /* ran without network; its changes were thrown away */
    /* While it ran: what was refused and asked (execs, requests, approvals, warnings). */
    pdk_notice_counts notices;
    pdk_notice_route notice_route;
    /* The command could not be found or executed in the sandbox (127, 126) though the host
     * has it, in a place the sandbox does not see: one line saying why and how to fix it;
     * "" when none. */
    char hint[1024];
} pdk_run_report;

/* Returns 0 when the sandbox ran (report->exit_status says how the command ended) and -1
 * with err when paddock could not start it; then nothing is left behind. */
int pdk_run(const pdk_run_options *options, pdk_run_report *report, pdk_error *err);

void pdk_run_report_free(pdk_run_report *report);

#endif
