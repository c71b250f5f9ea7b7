/* cmd_diff.c: paddock diff SESSION [--stat] [--json] [PATH...]
 *
 * Shows what a session's overlay layer changed against the real workspace: a unified diff
 * in git's extended format (git apply can replay it), a --stat summary, or JSON. */
#include "cli.h"

#include "../libpaddock/changes.h"
#include "../libpaddock/diffrender.h"
#include "../libpaddock/session.h"

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
            "usage: paddock diff SESSION [--stat] [--json] [PATH...]\n\n"
            "Show what session SESSION changed in its copy of the workspace, against the real\n"
            "workspace. PATHs (relative to the workspace) limit the output; a directory\n"
            "selects everything beneath it.\n\n"
            "options:\n"
            "  --stat      a summary: one line per path and the totals, like git diff --stat\n"
            "  --json      the changes as JSON on stdout\n"
            "  -h, --help  show this help\n\n"
            "The default output is a unified diff in git's format: 'git apply' in a copy of\n"
            "the workspace reproduces the text files, modes, symlinks, additions and\n"
            "deletions. Prints nothing when there are no changes.\n");
}

int pdk_cmd_diff(int argc, char **argv)
{
    static const struct option options[] = {
        {"stat", no_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool stat = false, json = false;
    int opt;
    opterr = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (opt) {
        case 's':
            stat = true;
            break;
        case 'j':
            json = true;
            break;
        case 'h':
            usage(stdout);
            return PDK_EXIT_OK;
        case '?':
        default:
            return pdk_cli_bad_option("diff", optopt, argv, optind);
        }
    }
    _cleanup_(pdk_session_freep) pdk_session *session = NULL;
    _cleanup_strv_ char **paths = NULL;
    int early = pdk_cli_open_session_operand("diff", argc, argv, &session, &paths);
    if (early != PDK_EXIT_OK)
        return early;
    pdk_error err = {0};
    _cleanup_close_ int lower = -1;
    _cleanup_close_ int upper = -1;
    if (pdk_session_open_layers(session, &lower, &upper, &err) < 0)
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);

    pdk_change_list changes = {0};
    if (pdk_changes_scan(lower, upper, session->placeholders, &changes, &err) < 0) {
        pdk_error_prefix(&err, "session %s", session->id);
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    }
    json_t *summary = json_array();
    for (size_t i = 0; i < changes.count; i++)
        json_array_append_new(summary,
                              json_pack("{s:s, s:s}", "path", changes.items[i].path, "status",
                                        pdk_change_status_name(changes.items[i].status)));
    if (pdk_cli_audit(
            session->id, "workspace.diff",
            json_pack("{s:I, s:o}", "changes", (json_int_t)changes.count, "summary", summary),
            &err) < 0) {
        pdk_change_list_free(&changes);
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    }
    pdk_diffrender_options opts = {.context = -1, .paths = paths};
    int ret = PDK_EXIT_OK;
    if (json) {
        json_t *doc = NULL;
        if (pdk_diffrender_json(&changes, lower, upper, &opts, &doc, &err) < 0)
            ret = pdk_cli_fail(&err, PDK_EXIT_FAILED);
        else
            pdk_cli_print_json(doc);
    } else {
        pdk_buf out = {0};
        int r = stat ? pdk_diffrender_stat(&changes, lower, upper, &opts, &out, &err)
                     : pdk_diffrender_patch(&changes, lower, upper, &opts, &out, &err);
        if (r < 0) {
            ret = pdk_cli_fail(&err, PDK_EXIT_FAILED);
        } else if (out.len > 0) {
            fwrite(out.data, 1, out.len, stdout);
            if (fflush(stdout) != 0) {
                pdk_error_set(&err, errno, "cannot write the diff");
                ret = pdk_cli_fail(&err, PDK_EXIT_FAILED);
            }
        }
        pdk_buf_free(&out);
    }
    pdk_change_list_free(&changes);
    return ret;
}
