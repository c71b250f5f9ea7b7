/* cmd_audit.c: paddock audit [--session S] [--since T] [--follow] [--json] | verify | export |
 * acknowledge-truncation */
#include "cli.h"

#include "audit.h"
#include "display.h"
#include "output.h"
#include "policy.h"

#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "usage: paddock audit [--session ID] [--since WHEN] [--follow] [--json]\n"
    "       paddock audit verify [--json]\n"
    "       paddock audit export [--session ID] [--since WHEN]\n"
    "       paddock audit acknowledge-truncation [--json]\n"
    "\n"
    "The audit log: every session start and end, command decision, approval and workspace\n"
    "review, in the state store, hash-chained.\n"
    "\n"
    "(none)  list the events, oldest first; --json prints one JSON object a line\n"
    "verify  recompute the hash chain; exit 0 only when it is intact, else 1 naming the first\n"
    "        row that was edited, deleted or moved\n"
    "export  the events as JSON lines (as --json)\n"
    "acknowledge-truncation\n"
    "        after verify found the log cut short (rows deleted from its end, whether or\n"
    "        not others were added since) and you know why: record that in the log (an\n"
    "        audit.truncation_acknowledged event, with who and what was found) and take its\n"
    "        present end as the end to hold from now on; until then verify fails\n"
    "\n"
    "  --session ID   only that session's events\n"
    "  --since WHEN   only events from WHEN on: a duration back from now (10m, 2h, 1d) or\n"
    "                 a UTC time (2026-12-01T09:30:00)\n"
    "  --follow       keep printing events as they are written, by any run or command\n"
    "                 (until interrupted); with --json one JSON object a line\n"
    "  --json         JSON output\n"
    "  -h, --help     show this help\n";

typedef struct list_state {
    bool json;
    int64_t last_seq;
} list_state;

static int print_event(const pdk_audit_event *e, void *arg)
{
    list_state *ls = arg;
    ls->last_seq = e->seq;
    json_t *o = pdk_audit_event_json(e);
    if (ls->json) {
        pdk_cli_print_json_line(stdout, o);
    } else {
        /* data holds what sandboxes chose (argv, paths, hosts): its C1, bidi and invisible
         * characters as JSON escapes, as in --json */
        _cleanup_free_ char *data = pdk_display_json_text(e->data ? e->data : "null");
        _cleanup_free_ char *session = pdk_display(e->session ? e->session : "-");
        _cleanup_free_ char *kind = pdk_display(e->kind);
        printf("%6" PRId64 "  %s  %-22s %-18s %s\n", e->seq,
               json_string_value(json_object_get(o, "time")), session, kind, data);
        json_decref(o);
    }
    fflush(stdout);
    return 0;
}

/* "10m" (back from now) or "2026-12-01T09:30:00" (UTC). */
static int parse_since(const char *s, int64_t *out_ns)
{
    int64_t seconds;
    if (pdk_parse_duration(s, &seconds) == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        *out_ns = ((int64_t)ts.tv_sec - seconds) * 1000000000;
        return 0;
    }
    struct tm tm = {0};
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end)
        end = strptime(s, "%Y-%m-%d", &tm);
    if (!end || (*end && strcmp(end, "Z") != 0))
        return -1;
    *out_ns = (int64_t)timegm(&tm) * 1000000000;
    return 0;
}

/* A log cut short is said on stderr by every listing (verify fails on it). */
static void warn_if_cut(pdk_store *store)
{
    char problem[512];
    pdk_error err = {0};
    if (pdk_audit_check_end(store, problem, sizeof(problem), &err) == 1)
        pdk_outputf(STDERR_FILENO, 0, "paddock: warning: %s", problem);
}

/* "uid 1000 (alice) via paddock audit acknowledge-truncation" */
static char *who(void)
{
    struct passwd *pw = getpwuid(getuid());
    return xasprintf("uid %d%s%s%s via paddock audit acknowledge-truncation", (int)getuid(),
                     pw ? " (" : "", pw ? pw->pw_name : "", pw ? ")" : "");
}

static int acknowledge(int argc, char **argv)
{
    bool json = false;
    int early = pdk_cli_parse_json_help(argc, argv, usage, &json);
    if (early >= 0)
        return early;
    if (optind < argc)
        return pdk_cli_usage_error("audit acknowledge-truncation", "unexpected argument '%s'",
                                   argv[optind]);
    pdk_store *store = NULL;
    int r = pdk_cli_open_store(true, &store);
    if (r != PDK_EXIT_OK)
        return r;
    pdk_audit_acknowledgement ack;
    pdk_error err = {0};
    _cleanup_free_ char *by = who();
    if (pdk_audit_acknowledge_truncation(store, by, &ack, &err) < 0) {
        pdk_store_close(store);
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    }
    if (json) {
        json_t *o = json_pack("{s:b}", "acknowledged", ack.acknowledged);
        json_object_set_new(o, "recorded_end",
                            ack.acknowledged && ack.recorded_seq >= 0
                                ? json_integer(ack.recorded_seq)
                                : json_null());
        json_object_set_new(o, "found_end",
                            ack.acknowledged ? json_integer(ack.found_seq) : json_null());
        json_object_set_new(o, "event_seq",
                            ack.acknowledged ? json_integer(ack.event_seq) : json_null());
        json_object_set_new(o, "problem",
                            ack.acknowledged ? json_string(ack.problem) : json_null());
        pdk_cli_print_json(o);
    } else if (!ack.acknowledged) {
        printf("the audit log reaches its recorded end: nothing to acknowledge\n");
    } else {
        printf("acknowledged: %s\n", ack.problem);
        printf("recorded as row %" PRId64 " (audit.truncation_acknowledged); the log's end is "
               "held from there on\n",
               ack.event_seq);
    }
    pdk_store_close(store);
    return PDK_EXIT_OK;
}

/* The store, with what runs spooled folded in. */
static int verify(int argc, char **argv)
{
    bool json = false;
    int early = pdk_cli_parse_json_help(argc, argv, usage, &json);
    if (early >= 0)
        return early;
    if (optind < argc)
        return pdk_cli_usage_error("audit verify", "unexpected argument '%s'", argv[optind]);
    pdk_store *store = NULL;
    int r = pdk_cli_open_store(true, &store);
    if (r != PDK_EXIT_OK)
        return r;
    pdk_audit_verdict v;
    pdk_error err = {0};
    if (pdk_audit_verify(store, &v, &err) < 0) {
        pdk_store_close(store);
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    }
    if (json) {
        json_t *o = json_pack("{s:b, s:I}", "intact", v.intact, "rows", (json_int_t)v.rows);
        json_object_set_new(o, "first_bad_row", v.intact ? json_null() : json_integer(v.bad_seq));
        json_object_set_new(o, "problem", v.intact ? json_null() : json_string(v.problem));
        pdk_cli_print_json(o);
    } else if (v.intact) {
        printf("audit log intact: %" PRId64 " rows (%s)\n", v.rows, pdk_store_path(store));
    } else {
        printf("audit log NOT intact: %s\n", v.problem);
    }
    pdk_store_close(store);
    return v.intact ? PDK_EXIT_OK : PDK_EXIT_FAILED;
}

static int list(int argc, char **argv, bool force_json)
{
    static const struct option options[] = {
        {"session", required_argument, NULL, 's'}, {"since", required_argument, NULL, 't'},
        {"follow", no_argument, NULL, 'f'},        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
    pdk_audit_filter filter = {0};
    list_state ls = {.json = force_json};
    bool follow = false;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 's':
            filter.session = optarg;
            break;
        case 't':
            if (parse_since(optarg, &filter.since_ns) < 0)
                return pdk_cli_usage_error(argv[0],
                                           "--since takes a duration (10m, 2h) or a UTC time "
                                           "(2026-12-01T09:30:00), not '%s'",
                                           optarg);
            break;
        case 'f':
            follow = true;
            break;
        case 'j':
            ls.json = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return PDK_EXIT_OK;
        default:
            return pdk_cli_bad_option(argv[0], optopt, argv, optind);
        }
    }
    if (optind < argc)
        return pdk_cli_usage_error(argv[0], "unexpected argument '%s' (see paddock audit --help)",
                                   argv[optind]);
    pdk_store *store = NULL;
    int r = pdk_cli_open_store(true, &store);
    if (r != PDK_EXIT_OK)
        return r;
    warn_if_cut(store);
    pdk_error err = {0};
    if (follow) {
        /* every event as it is written, by any process (audit.h), until interrupted */
        pdk_store_close(store);
        _cleanup_free_ char *state = NULL;
        pdk_audit_follow_options fo = {
            .session = filter.session, .since_ns = filter.since_ns, .after_seq = 0, .stop_fd = -1};
        if (pdk_cli_state_dir(false, &state, &err) < 0 ||
            pdk_audit_follow(state, &fo, print_event, &ls, &err) < 0)
            return pdk_cli_fail(&err, PDK_EXIT_FAILED);
        return PDK_EXIT_OK;
    }
    if (pdk_audit_each(store, &filter, print_event, &ls, &err) < 0) {
        pdk_store_close(store);
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    }
    pdk_store_close(store);
    return PDK_EXIT_OK;
}

int pdk_cmd_audit(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "verify") == 0)
        return verify(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "export") == 0)
        return list(argc - 1, argv + 1, true);
    if (argc >= 2 && strcmp(argv[1], "acknowledge-truncation") == 0)
        return acknowledge(argc - 1, argv + 1);
    return list(argc, argv, false);
}
