/* cmd_commit.c: paddock commit SESSION [PATH...] [--include-protected] [--dry-run] [--json]
 *
 * Applies a session's reviewed changes to the real workspace (commit.h has the rules) and
 * records what it wrote in the session, so that a later commit of the same session does
 * not mistake its own writes for outside changes. */
#include "cli.h"

#include "display.h"
#include "output.h"
#include "review.h"
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *out)
{
    fprintf(out,
            "usage: paddock commit SESSION [PATH...] [--include-protected] [--dry-run] [--json]\n\n"
            "Apply what session SESSION changed to the real workspace. PATHs (relative to the\n"
            "workspace) commit only those changes; a directory selects everything beneath it.\n"
            "Uncommitted changes stay in the session.\n\n"
            "Every change is checked before anything is written; the commit is refused as a\n"
            "whole when a path changed in the workspace after the session began, was deleted\n"
            "or created there meanwhile, lies behind a symlink, is protected, or is a special\n"
            "file.\n\n"
            "options:\n"
            "  --include-protected  commit protected paths too (e.g. .git/)\n"
            "  --dry-run            check and report, write nothing\n"
            "  --json               the outcome as JSON on stdout\n"
            "  -h, --help           show this help\n");
}

static json_t *result_json(const pdk_review_commit_result *r)
{
    const pdk_commit_result *res = &r->commit;
    json_t *applied = json_array();
    for (size_t i = 0; i < res->applied_count; i++) {
        const pdk_commit_entry *e = &res->applied[i];
        json_t *o = json_object();
        json_object_set_new(o, "path", pdk_session_json_path(e->path));
        json_object_set_new(o, "status", json_string(pdk_change_status_name(e->status)));
        const char *kind = pdk_change_kind_name(e->kind);
        json_object_set_new(o, "kind", kind ? json_string(kind) : json_null());
        json_array_append_new(applied, o);
    }
    json_t *refused = json_array();
    for (size_t i = 0; i < res->refused_count; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "path", pdk_session_json_path(res->refused[i].path));
        json_object_set_new(o, "reason", pdk_display_json_string(res->refused[i].reason));
        json_array_append_new(refused, o);
    }
    json_t *doc = json_object();
    json_object_set_new(doc, "session", json_string(r->session));
    json_object_set_new(doc, "workspace", pdk_session_json_path(r->workspace));
    json_object_set_new(doc, "dry_run", json_boolean(res->dry_run));
    json_object_set_new(doc, "ok", json_boolean(r->ok));
    json_object_set_new(doc, "applied", applied);
    json_object_set_new(doc, "refused", refused);
    json_object_set_new(doc, "error",
                        r->ok ? json_null() : pdk_display_json_string(r->error.message));
    return doc;
}

int pdk_cmd_commit(int argc, char **argv)
{
    static const struct option options[] = {
        {"include-protected", no_argument, NULL, 'p'},
        {"dry-run", no_argument, NULL, 'n'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool include_protected = false, dry_run = false, json = false;
    int opt;
    opterr = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (opt) {
        case 'p':
            include_protected = true;
            break;
        case 'n':
            dry_run = true;
            break;
        case 'j':
            json = true;
            break;
        case 'h':
            usage(stdout);
            return PDK_EXIT_OK;
        case '?':
        default:
            return pdk_cli_bad_option("commit", optopt, argv, optind);
        }
    }
    if (optind >= argc)
        return pdk_cli_usage_error("commit", "missing SESSION");
    const char *id = argv[optind];
    pdk_error err = {0};
    _cleanup_free_ char *state = NULL;
    if (pdk_cli_state_dir(false, &state, &err) < 0)
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    pdk_review_commit_options opts = {
        .paths = optind + 1 < argc ? argv + optind + 1 : NULL,
        .include_protected = include_protected,
        .dry_run = dry_run,
    };
    pdk_review_commit_result r;
    int ret = pdk_review_commit(state, id, &opts, &r, &err) == 0 ? PDK_EXIT_OK : PDK_EXIT_FAILED;
    if (!r.session) {
        pdk_review_commit_result_free(&r);
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    }
    if (r.record_error.message[0])
        pdk_cli_fail(&r.record_error, PDK_EXIT_FAILED);
    if (r.save_error.message[0])
        pdk_cli_fail(&r.save_error, PDK_EXIT_FAILED);

    /* Paths are the sandbox's choice: every one shown escaped (display.h). */
    const pdk_commit_result *res = &r.commit;
    _cleanup_free_ char *workspace = pdk_display(r.workspace);
    if (json) {
        pdk_cli_print_json(result_json(&r));
    } else if (r.ok) {
        size_t n = res->applied_count;
        if (n == 0) {
            printf("nothing to commit: session %s has no changes\n", r.session);
        } else if (dry_run) {
            for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = pdk_display(res->applied[i].path);
                printf("  %-12s %s\n", pdk_change_status_name(res->applied[i].status), path);
            }
            printf("would commit %zu change%s to %s (dry run: nothing was written)\n", n,
                   n == 1 ? "" : "s", workspace);
        } else {
            printf("committed %zu change%s to %s\n", n, n == 1 ? "" : "s", workspace);
        }
    } else if (res->refused_count > 0) {
        pdk_cli_message("commit of session %s refused; nothing was written to %s:", r.session,
                        workspace);
        for (size_t i = 0; i < res->refused_count; i++) {
            _cleanup_free_ char *path = pdk_display(res->refused[i].path);
            _cleanup_free_ char *reason = pdk_display_message(res->refused[i].reason);
            pdk_outputf(STDERR_FILENO, 0, "  %s: %s", path, reason);
        }
        pdk_cli_message("commit the other paths by naming them, or resolve the conflicts and "
                        "commit again");
    } else {
        pdk_cli_fail(&r.error, PDK_EXIT_FAILED);
        if (res->applied_count > 0 && !dry_run)
            pdk_cli_message("%zu change%s had been committed before the error and were "
                            "recorded in the session",
                            res->applied_count, res->applied_count == 1 ? "" : "s");
    }
    pdk_review_commit_result_free(&r);
    return ret;
}
