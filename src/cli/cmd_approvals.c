/* cmd_approvals.c: paddock approvals [--watch] [--all] [--json], paddock approve ID
 * [--always], paddock deny ID [--reason TEXT] */
#include "cli.h"

#include "approvals.h"
#include "display.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char approvals_usage[] =
    "usage: paddock approvals [--watch] [--all] [--json]\n"
    "\n"
    "The requests waiting for a human: id, since when and how long it waited, who asked\n"
    "(session, pid and its parents), what (argv, cwd; a network request's method, URL,\n"
    "header names and the body held) and which rule. Answer with paddock approve ID or\n"
    "paddock deny ID; a held network request is refused once it has waited\n"
    "approvals.request_timeout, and a late answer is refused.\n"
    "\n"
    "  --watch     keep printing new requests as they come, and what running sessions have\n"
    "              refused (execs, requests) and warned about, as it happens (until\n"
    "              interrupted); with --json, a refusal is {\"notice\": KIND, ...}\n"
    "  --all       the answered and expired ones too\n"
    "  --json      one JSON object a line\n"
    "  -h, --help  show this help\n";

static const char approve_usage[] = "usage: paddock approve ID [--always] [--json]\n"
                                    "\n"
                                    "Let the command of approval request ID run.\n"
                                    "\n"
                                    "  --always    and the same rule's commands for the rest of "
                                    "that session\n"
                                    "  --json      print {\"id\": ..., \"state\": ...}\n"
                                    "  -h, --help  show this help\n";

static const char deny_usage[] = "usage: paddock deny ID [--reason TEXT] [--json]\n"
                                 "\n"
                                 "Refuse the command of approval request ID; the asker gets the "
                                 "reason.\n"
                                 "\n"
                                 "  --reason TEXT  why (shown to the asker, and in the audit log)\n"
                                 "  --json         print {\"id\": ..., \"state\": ...}\n"
                                 "  -h, --help     show this help\n";

typedef struct list_state {
    bool json;
    int64_t last_created;
    char last_id[17];
    size_t shown;
} list_state;

static int print_request(const pdk_approval *a, void *arg)
{
    list_state *ls = arg;
    if (a->created_ns < ls->last_created ||
        (a->created_ns == ls->last_created && strcmp(a->id, ls->last_id) <= 0))
        return 0; /* shown already (--watch) */
    ls->last_created = a->created_ns;
    snprintf(ls->last_id, sizeof(ls->last_id), "%s", a->id);
    ls->shown++;
    if (ls->json) {
        pdk_cli_print_json_line(stdout, pdk_approval_json(a));
    } else {
        /* Everything but the id, the times and the states came from the sandbox or may
         * have: shown escaped (display.h). argv and the header names as JSON arrays. */
        time_t secs = (time_t)(a->created_ns / 1000000000);
        struct tm tm;
        localtime_r(&secs, &tm);
        char when[32];
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
        _cleanup_free_ char *session = pdk_display(a->session ? a->session : "-");
        _cleanup_free_ char *rule = pdk_display(a->rule ? a->rule : "?");
        _cleanup_free_ char *reason = pdk_display(a->reason ? a->reason : "");
        if (a->request) {
            json_t *r = a->request;
            _cleanup_free_ char *names =
                pdk_display_json_dumps(json_object_get(r, "headers"), JSON_COMPACT);
            _cleanup_free_ char *method =
                pdk_display(json_string_value(json_object_get(r, "method")));
            _cleanup_free_ char *url = pdk_display(json_string_value(json_object_get(r, "url")));
            /* the gateway wrote the preview escaped already (\xHH): its backslashes stay */
            const char *raw_preview = json_string_value(json_object_get(r, "body_preview"));
            _cleanup_free_ char *preview = raw_preview ? pdk_display_message(raw_preview) : NULL;
            const char *raw_note = json_string_value(json_object_get(r, "body_note"));
            _cleanup_free_ char *note = raw_note ? pdk_display_message(raw_note) : NULL;
            json_t *bytes = json_object_get(r, "body_bytes");
            json_int_t limit = json_integer_value(json_object_get(r, "wait_limit_seconds"));
            printf("%s  %s  %s, waited %" PRId64 "s", a->id, when,
                   pdk_approval_state_name(a->state), pdk_approval_waited_seconds(a));
            if (limit > 0)
                printf(" (refused at %" JSON_INTEGER_FORMAT "s)", limit);
            printf("\n  what:  %s %s\n  headers: %s\n", method, url, names ? names : "[]");
            if (bytes)
                printf("  body:  %" JSON_INTEGER_FORMAT " bytes held%s%s\n",
                       json_integer_value(bytes), preview ? ": " : "", preview ? preview : "");
            if (note)
                printf("  note:  %s\n", note);
            printf("  who:   session %s (the gateway)\n  rule:  %s: %s\n", session, rule, reason);
        } else {
            _cleanup_free_ char *argv = pdk_display_json_dumps(a->argv, JSON_COMPACT);
            _cleanup_free_ char *cwd = pdk_display(a->cwd ? a->cwd : "?");
            pdk_buf chain = {0};
            size_t i;
            json_t *p;
            json_array_foreach(a->parents, i, p)
            {
                _cleanup_free_ char *comm =
                    pdk_display(json_string_value(json_object_get(p, "comm")));
                pdk_buf_printf(&chain, "%s%s[%" JSON_INTEGER_FORMAT "]", i ? " < " : "", comm,
                               json_integer_value(json_object_get(p, "pid")));
            }
            printf("%s  %s  %s, waited %" PRId64 "s\n  what:  %s in %s\n  who:   session %s, pid "
                   "%d%s%s\n  rule:  %s: %s\n",
                   a->id, when, pdk_approval_state_name(a->state), pdk_approval_waited_seconds(a),
                   argv ? argv : "[]", cwd, session, (int)a->pid, chain.data ? ", under " : "",
                   chain.data ? chain.data : "", rule, reason);
            pdk_buf_free(&chain);
        }
        if (a->state != PDK_APPROVAL_PENDING && a->answered_by) {
            _cleanup_free_ char *by = pdk_display(a->answered_by);
            _cleanup_free_ char *why = a->answer_reason ? pdk_display(a->answer_reason) : NULL;
            printf("  by:    %s%s%s\n", by, why ? ": " : "", why ? why : "");
        } else if (a->state == PDK_APPROVAL_EXPIRED && a->answer_reason) {
            _cleanup_free_ char *why = pdk_display(a->answer_reason);
            printf("  expired: %s\n", why);
        }
    }
    fflush(stdout);
    return 0;
}

/* --watch: the notice file (log.h), followed as it grows: what running sessions refuse and
 * warn about (their approvals come from the store, in full). */
typedef struct notice_watch {
    char *dir;
    int inotify_fd;
    int fd;          /* the notice file as last opened (-1: none yet) */
    ino_t inode;     /* of fd */
    pdk_buf partial; /* a line not ended yet */
    bool json;
} notice_watch;

static void print_notice_line(const notice_watch *nw, const char *line)
{
    pdk_notice_line n;
    if (pdk_notice_line_parse(line, &n) < 0 || strcmp(n.kind, "approval") == 0)
        return;
    /* written escaped by paddock (its own backslashes kept); escaped again should anything
     * else have got in */
    _cleanup_free_ char *shown = pdk_display_message(n.text);
    if (nw->json) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:o}", "notice", n.kind, "time", n.time, "session",
                              n.session, "text", pdk_display_json_string(shown));
        pdk_cli_print_json_line(stdout, o);
    } else
        printf("%s  session %s  %s\n", n.time, n.session, shown);
    fflush(stdout);
}

/* Print what fd holds past its offset, line by line. */
static void read_notices(notice_watch *nw)
{
    char buf[8192];
    ssize_t n;
    while ((n = read(nw->fd, buf, sizeof(buf))) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\n') {
                if (nw->partial.len < 65536)
                    pdk_buf_append(&nw->partial, &buf[i], 1);
                continue;
            }
            if (nw->partial.len)
                print_notice_line(nw, nw->partial.data);
            nw->partial.len = 0;
        }
    }
}

/* Follow the file: what the open one got since, and a new one (made, or after a rotation)
 * from its start. */
static void follow_notices(notice_watch *nw, bool from_end)
{
    if (nw->fd >= 0)
        read_notices(nw);
    _cleanup_close_ int dirfd = open(nw->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat sb;
    if (dirfd < 0 || fstatat(dirfd, PDK_NOTICES_FILE, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
        !S_ISREG(sb.st_mode) || (nw->fd >= 0 && sb.st_ino == nw->inode))
        return;
    int fd = openat(dirfd, PDK_NOTICES_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return;
    if (nw->fd >= 0)
        close(nw->fd);
    nw->fd = fd;
    nw->inode = fstat(fd, &sb) == 0 ? sb.st_ino : 0;
    nw->partial.len = 0;
    if (from_end)
        (void)lseek(fd, 0, SEEK_END);
    read_notices(nw);
}

static int notice_watch_start(notice_watch *nw, bool json, pdk_error *err)
{
    *nw = (notice_watch){.json = json, .inotify_fd = -1, .fd = -1};
    _cleanup_free_ char *state = NULL;
    if (pdk_cli_state_dir(true, &state, err) < 0)
        return -1;
    nw->dir = pdk_notices_dir(state);
    if (mkdir(nw->dir, 0700) < 0 && errno != EEXIST)
        return pdk_error_set(err, errno, "cannot make %s", nw->dir);
    nw->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (nw->inotify_fd < 0 ||
        inotify_add_watch(nw->inotify_fd, nw->dir, IN_CREATE | IN_MODIFY | IN_MOVED_TO) < 0)
        return pdk_error_set(err, errno, "cannot watch %s", nw->dir);
    follow_notices(nw, true); /* what is there already was shown as it happened */
    return 0;
}

/* Until the notice file changes, or timeout_ms; then what it got. */
static void notice_watch_wait(notice_watch *nw, int timeout_ms)
{
    struct pollfd p = {.fd = nw->inotify_fd, .events = POLLIN};
    if (poll(&p, 1, timeout_ms) > 0) {
        char events[4096];
        while (read(nw->inotify_fd, events, sizeof(events)) > 0)
            ;
    }
    follow_notices(nw, false);
}

static void notice_watch_free(notice_watch *nw)
{
    pdk_buf_free(&nw->partial);
    free(nw->dir);
    if (nw->inotify_fd >= 0)
        close(nw->inotify_fd);
    if (nw->fd >= 0)
        close(nw->fd);
}

int pdk_cmd_approvals(int argc, char **argv)
{
    static const struct option options[] = {{"watch", no_argument, NULL, 'w'},
                                            {"all", no_argument, NULL, 'a'},
                                            {"json", no_argument, NULL, 'j'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    list_state ls = {0};
    bool watch = false, all = false;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'w':
            watch = true;
            break;
        case 'a':
            all = true;
            break;
        case 'j':
            ls.json = true;
            break;
        case 'h':
            fputs(approvals_usage, stdout);
            return PDK_EXIT_OK;
        default:
            return pdk_cli_bad_option(argv[0], optopt, argv, optind);
        }
    }
    if (optind < argc)
        return pdk_cli_usage_error("approvals", "unexpected argument '%s'", argv[optind]);
    pdk_store *store = NULL;
    int r = pdk_cli_open_store(false, &store);
    if (r != PDK_EXIT_OK)
        return r;
    pdk_error err = {0};
    notice_watch nw = {.inotify_fd = -1, .fd = -1};
    if (watch && notice_watch_start(&nw, ls.json, &err) < 0) {
        notice_watch_free(&nw);
        pdk_store_close(store);
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    }
    for (;;) {
        if (pdk_approval_each(store, !all, print_request, &ls, &err) < 0) {
            notice_watch_free(&nw);
            pdk_store_close(store);
            return pdk_cli_fail(&err, PDK_EXIT_FAILED);
        }
        if (!watch)
            break;
        notice_watch_wait(&nw, 200); /* the store is asked again every 200 ms */
    }
    notice_watch_free(&nw);
    if (!ls.json && ls.shown == 0)
        printf("no approval request is waiting\n");
    pdk_store_close(store);
    return PDK_EXIT_OK;
}

/* "uid 1000 (alice) via paddock approve" */
static char *who(const char *via)
{
    struct passwd *pw = getpwuid(getuid());
    return xasprintf("uid %d%s%s%s via %s", (int)getuid(), pw ? " (" : "", pw ? pw->pw_name : "",
                     pw ? ")" : "", via);
}

static int answer(int argc, char **argv, bool approve)
{
    static const struct option options[] = {{"always", no_argument, NULL, 'a'},
                                            {"reason", required_argument, NULL, 'r'},
                                            {"json", no_argument, NULL, 'j'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    const char *cmd = approve ? "approve" : "deny";
    bool always = false, json = false;
    const char *reason = NULL;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'a':
            if (!approve)
                return pdk_cli_usage_error(cmd, "--always is for paddock approve");
            always = true;
            break;
        case 'r':
            if (approve)
                return pdk_cli_usage_error(cmd, "--reason is for paddock deny");
            reason = optarg;
            break;
        case 'j':
            json = true;
            break;
        case 'h':
            fputs(approve ? approve_usage : deny_usage, stdout);
            return PDK_EXIT_OK;
        default:
            return pdk_cli_bad_option(argv[0], optopt, argv, optind);
        }
    }
    if (optind >= argc)
        return pdk_cli_usage_error(cmd, "no approval request given (see paddock approvals)");
    if (optind + 1 < argc)
        return pdk_cli_usage_error(cmd, "one request at a time ('%s' is one too many)",
                                   argv[optind + 1]);
    const char *id = argv[optind];
    pdk_store *store = NULL;
    int r = pdk_cli_open_store(false, &store);
    if (r != PDK_EXIT_OK)
        return r;
    pdk_error err = {0};
    _cleanup_free_ char *by = who(approve ? "paddock approve" : "paddock deny");
    if (pdk_approval_answer(store, id, approve, always, reason, by, &err) < 0) {
        pdk_store_close(store);
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    }
    pdk_store_close(store);
    const char *state = approve ? "approved" : "denied";
    if (json)
        pdk_cli_print_json(
            json_pack("{s:s, s:s, s:b}", "id", id, "state", state, "always", always));
    else
        printf("%s %s%s\n", state, id, always ? " (always, for the rest of that session)" : "");
    return PDK_EXIT_OK;
}

int pdk_cmd_approve(int argc, char **argv)
{
    return answer(argc, argv, true);
}

int pdk_cmd_deny(int argc, char **argv)
{
    return answer(argc, argv, false);
}
