/* cmd_discard.c: paddock discard SESSION... */
#include "cli.h"

#include "review.h"

#include <stdio.h>
#include <unistd.h>
#include <string.h>

static const char usage[] = "usage: paddock discard SESSION...\n"
                            "\n"
                            "Throw a session's changes away and remove the session. The real\n"
                            "workspace is not touched. A session in use by a run is refused;\n"
                            "one left incomplete or damaged (a run killed as it started)\n"
                            "is removed too.\n"
                            "\n"
                            "  --json      print {\"discarded\": [...]} on stdout\n"
                            "  -h, --help  show this help\n";

int pdk_cmd_discard(int argc, char **argv)
{
    bool json = false;
    int early = pdk_cli_parse_json_help(argc, argv, usage, &json);
    if (early >= 0)
        return early;
    if (optind >= argc)
        return pdk_cli_usage_error("discard", "no session given");
    pdk_error err = {0};
    _cleanup_free_ char *state = NULL;
    if (pdk_cli_state_dir(false, &state, &err) < 0)
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    int status = PDK_EXIT_OK;
    json_t *done = json_array();
    for (int i = optind; i < argc; i++) {
        pdk_review_discard_result r;
        if (pdk_review_discard(state, argv[i], &r, &err) < 0) {
            pdk_cli_message("%s", err.message);
            status = PDK_EXIT_FAILED;
        } else {
            json_array_append_new(done, json_string(r.session));
            if (!json)
                printf("discarded session %s%s\n", r.session,
                       r.damaged ? " (it was incomplete or damaged)" : "");
        }
        pdk_review_discard_result_free(&r);
    }
    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "discarded", done);
        pdk_cli_print_json(o);
    } else {
        json_decref(done);
    }
    return status;
}
