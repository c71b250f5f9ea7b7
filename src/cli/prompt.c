/* prompt.c: the terminal prompt, the CLI's way of asking the human at its terminal about
 * an approval (approvals.h's asker): "run `CMD` in DIR? [y]es, [n]o, [a]lways for this
 * session: " on /dev/tty when paddock's stdin and stderr are a terminal, answered there or
 * from any other process (paddock approve). SIGINT and SIGTERM while it waits end the wait
 * (interrupted: the command does not run). */
#include "cli.h"

#include "approvals.h"
#include "display.h"
#include "output.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted_by;

static void on_signal(int sig)
{
    interrupted_by = sig;
}

typedef struct terminal_prompt {
    int tty;
    struct sigaction old_int, old_term;
} terminal_prompt;

static terminal_prompt prompt_state = {.tty = -1};

/* What is asked about, for the prompt: the command and its directory, or the request. */
static char *asked_about(const pdk_approval *a)
{
    if (a->request) {
        _cleanup_free_ char *method =
            pdk_display(json_string_value(json_object_get(a->request, "method")));
        _cleanup_free_ char *url =
            pdk_display(json_string_value(json_object_get(a->request, "url")));
        return xasprintf("send %s %s", method, url);
    }
    char **argv = NULL;
    size_t i;
    json_t *word;
    json_array_foreach(a->argv, i, word) pdk_strv_push(&argv, json_string_value(word) ?: "");
    char *none[] = {NULL};
    _cleanup_free_ char *line = pdk_display_argv(argv ? argv : none);
    pdk_strv_free(argv);
    _cleanup_free_ char *cwd = pdk_display(a->cwd ? a->cwd : "");
    return xasprintf("run `%s` in %s", line, cwd);
}

static int prompt_begin(void *arg, const pdk_approval *request)
{
    terminal_prompt *p = arg;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    interrupted_by = 0;
    sigaction(SIGINT, &sa, &p->old_int);
    sigaction(SIGTERM, &sa, &p->old_term);
    /* The terminal paddock runs on, when it has one (the command has not started: it is
     * not using it). */
    p->tty = -1;
    if (isatty(STDIN_FILENO) && isatty(STDERR_FILENO))
        p->tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (p->tty >= 0) {
        _cleanup_free_ char *what = asked_about(request);
        pdk_outputf(p->tty, PDK_OUTPUT_PROMPT,
                    "paddock: %s? [y]es, [n]o, [a]lways for this session: ", what);
    }
    return p->tty;
}

static int prompt_read(void *arg, int fd, pdk_approval_reply *reply)
{
    terminal_prompt *p = arg;
    char buf[64] = "";
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    char c = n > 0 ? buf[0] : 'n';
    if (c == 'y' || c == 'Y' || c == 'a' || c == 'A' || c == 'n' || c == 'N') {
        reply->approve = c != 'n' && c != 'N';
        reply->always = c == 'a' || c == 'A';
        snprintf(reply->by, sizeof(reply->by), "the terminal of paddock pid %d (uid %d)",
                 (int)getpid(), (int)getuid());
        return 1;
    }
    pdk_output(p->tty, PDK_OUTPUT_PROMPT, "y, n or a: ");
    return 0;
}

static bool prompt_interrupted(void *arg)
{
    return interrupted_by != 0;
}

static void prompt_end(void *arg, pdk_approval_outcome outcome, const pdk_approval *answer)
{
    terminal_prompt *p = arg;
    sigaction(SIGINT, &p->old_int, NULL);
    sigaction(SIGTERM, &p->old_term, NULL);
    if (p->tty >= 0) {
        if (answer && outcome != PDK_APPROVAL_WAIT_ANSWERED)
            pdk_output(p->tty, 0, ""); /* the prompt's line ends */
        close(p->tty);
        p->tty = -1;
    }
}

const pdk_approval_asker *pdk_cli_terminal_asker(void)
{
    static const pdk_approval_asker asker = {
        .begin = prompt_begin,
        .read = prompt_read,
        .interrupted = prompt_interrupted,
        .end = prompt_end,
        .arg = &prompt_state,
    };
    return &asker;
}
