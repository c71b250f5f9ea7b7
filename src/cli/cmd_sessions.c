/* cmd_sessions.c: paddock sessions [--json] */
#include "cli.h"

#include "changes.h"
#include "display.h"
#include "session.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] = "usage: paddock sessions [--json]\n"
                            "\n"
                            "List the workspace sessions in the state dir, oldest first, with\n"
                            "their workspace, mode, runs, last exit status and number of changes.\n"
                            "\n"
                            "  --json      a JSON array on stdout\n"
                            "  -h, --help  show this help\n";

/* Number of changed paths in the session's layer; -1 when it cannot be read. */
static long count_changes(const pdk_session *s)
{
    if (s->mode != PDK_WORKSPACE_OVERLAY)
        return 0;
    pdk_error err = {0};
    _cleanup_close_ int lower = -1;
    _cleanup_close_ int upper = -1;
    pdk_change_list list = {0};
    if (pdk_session_open_layers(s, &lower, &upper, &err) < 0 ||
        pdk_changes_scan(lower, upper, s->placeholders, &list, &err) < 0)
        return -1;
    long n = (long)pdk_changes_count(&list);
    pdk_change_list_free(&list);
    return n;
}

static void format_time(int64_t ns, char *buf, size_t len)
{
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

int pdk_cmd_sessions(int argc, char **argv)
{
    bool json = false;
    int early = pdk_cli_parse_json_help(argc, argv, usage, &json);
    if (early >= 0)
        return early;
    if (optind < argc)
        return pdk_cli_usage_error("sessions", "unexpected argument '%s'", argv[optind]);
    pdk_error err = {0};
    _cleanup_free_ char *state = NULL;
    if (pdk_cli_state_dir(false, &state, &err) < 0)
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    pdk_session **list = NULL;
    size_t n = 0;
    if (pdk_session_list(state, &list, &n, &err) < 0)
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    if (json) {
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++) {
            const pdk_session *s = list[i];
            char created[64];
            format_time(s->created_ns, created, sizeof(created));
            json_t *o = json_object();
            json_object_set_new(o, "id", json_string(s->id));
            json_object_set_new(o, "named", json_boolean(s->named));
            json_object_set_new(o, "workspace", pdk_session_json_path(s->workspace));
            json_object_set_new(
                o, "mode", json_string(s->mode == PDK_WORKSPACE_DIRECT ? "direct" : "overlay"));
            json_object_set_new(o, "created", json_string(created));
            json_object_set_new(o, "created_ns", json_integer(s->created_ns));
            json_object_set_new(o, "runs", json_integer(s->runs));
            json_object_set_new(o, "last_exit",
                                s->runs > 0 ? json_integer(s->last_exit) : json_null());
            long changes = count_changes(s);
            json_object_set_new(o, "changes", changes >= 0 ? json_integer(changes) : json_null());
            json_array_append_new(a, o);
        }
        pdk_cli_print_json(a);
    } else if (n == 0) {
        printf("no sessions (paddock run makes one)\n");
    } else {
        printf("%-28s %-19s %-7s %5s %5s %7s  %s\n", "SESSION", "CREATED", "MODE", "RUNS", "EXIT",
               "CHANGES", "WORKSPACE");
        for (size_t i = 0; i < n; i++) {
            const pdk_session *s = list[i];
            char created[64], exitbuf[16], changes[16];
            format_time(s->created_ns, created, sizeof(created));
            snprintf(exitbuf, sizeof(exitbuf), s->runs > 0 ? "%d" : "-", s->last_exit);
            long ch = count_changes(s);
            snprintf(changes, sizeof(changes), ch >= 0 ? "%ld" : "?", ch);
            _cleanup_free_ char *id = pdk_display(s->id);
            _cleanup_free_ char *workspace = pdk_display(s->workspace);
            printf("%-28s %-19s %-7s %5d %5s %7s  %s\n", id, created,
                   s->mode == PDK_WORKSPACE_DIRECT ? "direct" : "overlay", s->runs, exitbuf,
                   changes, workspace);
        }
    }
    pdk_session_list_free(list, n);
    return PDK_EXIT_OK;
}
