/* cmd_diff.c: paddock diff SESSION [--stat] [--raw] [--json] [PATH...]
 *
 * Shows what a session's overlay layer changed against the real workspace: a unified diff
 * in git's extended format, for a human (what the sandbox wrote shown escaped where a
 * terminal would obey it) or --raw for git apply, a --stat summary, or JSON. */
#include "cli.h"

#include "review.h"

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
    if (optind >= argc)
        return pdk_cli_usage_error("diff", "missing SESSION");
    const char *id = argv[optind];
    pdk_error err = {0};
    _cleanup_free_ char *state = NULL;
    if (pdk_cli_state_dir(false, &state, &err) < 0)
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    pdk_review_diff_options opts = {
        .format = json   ? PDK_REVIEW_DIFF_JSON
                  : stat ? PDK_REVIEW_DIFF_STAT
                         : PDK_REVIEW_DIFF_PATCH,
        .paths = optind + 1 < argc ? argv + optind + 1 : NULL,
        .raw = raw,
    };
    pdk_review_diff_result res;
    if (pdk_review_diff(state, id, &opts, &res, &err) < 0) {
        pdk_review_diff_result_free(&res);
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    }
    int ret = PDK_EXIT_OK;
    if (json) {
        pdk_cli_print_json(steal_pointer(&res.json));
    } else if (res.text.len > 0) {
        fwrite(res.text.data, 1, res.text.len, stdout);
        if (fflush(stdout) != 0) {
            pdk_error_set(&err, errno, "cannot write the diff");
            ret = pdk_cli_fail(&err, PDK_EXIT_FAILED);
        } else if (res.escaped_lines > 0) {
            size_t escaped = res.escaped_lines;
            pdk_cli_message("%zu line%s marked '!' hold control, bidi or invisible "
                            "characters or bytes that are not UTF-8, shown escaped (\\x1b, "
                            "\\u202e, \\\\ for a backslash); paddock diff --raw writes "
                            "them as they are, for git apply",
                            escaped, escaped == 1 ? "" : "s");
        }
    }
    pdk_review_diff_result_free(&res);
    return ret;
}
