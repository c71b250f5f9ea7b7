/* cmd_diff.c: paddock diff SESSION [--stat] [--raw] [--json] [PATH...]
 *
 * Shows what a session's overlay layer changed against the real workspace: a unified diff
 * in git's extended format, for a human (what the sandbox wrote shown escaped where a
 * terminal would obey it) or --raw for git apply, a --stat summary, or JSON. */
#include "cli.h"

#include "changes.h"
#include "diffrender.h"
#include "display.h"
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
            "usage: paddock diff SESSION [--stat] [--raw] [--json] [PATH...]\n\n"
            "Show what session SESSION changed in its copy of the workspace, against the real\n"
            "workspace. PATHs (relative to the workspace) limit the output; a directory\n"
            "selects everything beneath it.\n\n"
            "options:\n"
            "  --stat      a summary: one line per path and the totals, like git diff --stat\n"
            "  --raw       the patch with the session's bytes as they are, for git apply (not\n"
            "              to a terminal)\n"
            "  --json      the changes as JSON on stdout\n"
            "  -h, --help  show this help\n\n"
            "The default output is a unified diff in git's format, made to be read: a line\n"
            "holding control, bidi or invisible characters (or bytes that are not UTF-8) is\n"
            "shown escaped after a '!' (and git apply refuses such a patch), a binary file\n"
            "names its type and size, and directory mode changes have a line of their own.\n"
            "With --raw, 'git apply' in a copy of the workspace reproduces the text files,\n"
            "modes, symlinks, additions and deletions. Prints nothing when there are no\n"
            "changes.\n");
}

int pdk_cmd_diff(int argc, char **argv)
{
    static const struct option options[] = {
        {"stat", no_argument, NULL, 's'},
        {"raw", no_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool stat = false, json = false, raw = false;
    int opt;
    opterr = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (opt) {
        case 's':
            stat = true;
            break;
        case 'r':
            raw = true;
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
    /* What the sandbox wrote, byte for byte, is for programs: a terminal would obey it. */
    if (raw && !json && isatty(STDOUT_FILENO))
        return pdk_cli_usage_error("diff", "--raw writes the session's bytes as they are, which a "
                                           "terminal would obey: pipe it (into git apply, a "
                                           "file), or leave --raw out to read it");
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
        json_array_append_new(
            summary, json_pack("{s:o, s:s}", "path", pdk_session_json_path(changes.items[i].path),
                               "status", pdk_change_status_name(changes.items[i].status)));
    if (pdk_cli_audit(
            session->id, "workspace.diff",
            json_pack("{s:I, s:o}", "changes", (json_int_t)changes.count, "summary", summary),
            &err) < 0) {
        pdk_change_list_free(&changes);
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    }
    size_t escaped = 0;
    pdk_diffrender_options opts = {
        .context = -1, .paths = paths, .raw = raw, .escaped_lines = &escaped};
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
            } else if (escaped > 0) {
                pdk_cli_message("%zu line%s marked '!' hold control, bidi or invisible "
                                "characters or bytes that are not UTF-8, shown escaped (\\x1b, "
                                "\\u202e, \\\\ for a backslash); paddock diff --raw writes "
                                "them as they are, for git apply",
                                escaped, escaped == 1 ? "" : "s");
            }
        }
        pdk_buf_free(&out);
    }
    pdk_change_list_free(&changes);
    return ret;
}
