/* pty.c: see pty.h. */
#include "pty.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

struct pdk_pty_relay {
    int master;
    struct event *from_stdin;
    struct event *from_master;
    bool raw;
    struct termios saved;
};

static void relay(int from, int to, struct event *ev)
{
    char buf[16384];
    ssize_t n = read(from, buf, sizeof(buf));
    if (n > 0) {
        if (pdk_write_all(to, buf, (size_t)n) < 0)
            event_del(ev);
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    event_del(ev); /* EOF, or EIO once the command side is closed */
}

static void on_stdin(evutil_socket_t fd, short what, void *arg)
{
    pdk_pty_relay *r = arg;
    relay((int)fd, r->master, r->from_stdin);
}

static void on_master(evutil_socket_t fd, short what, void *arg)
{
    pdk_pty_relay *r = arg;
    relay((int)fd, STDOUT_FILENO, r->from_master);
}

pdk_pty_relay *pdk_pty_relay_start(struct event_base *base, int master)
{
    pdk_pty_relay *r = xcalloc(1, sizeof(*r));
    r->master = master;
    fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &r->saved) == 0) {
        struct termios raw = r->saved;
        cfmakeraw(&raw);
        if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0)
            r->raw = true;
    }
    pdk_pty_relay_resize(r);
    r->from_master = event_new(base, master, EV_READ | EV_PERSIST, on_master, r);
    event_add(r->from_master, NULL);
    r->from_stdin = event_new(base, STDIN_FILENO, EV_READ | EV_PERSIST, on_stdin, r);
    if (r->from_stdin && event_add(r->from_stdin, NULL) < 0) {
        /* stdin that cannot be polled (a regular file, /dev/null): nothing to relay */
        event_free(r->from_stdin);
        r->from_stdin = NULL;
    }
    return r;
}

void pdk_pty_relay_resize(pdk_pty_relay *r)
{
    struct winsize ws;
    if (r && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
        ioctl(r->master, TIOCSWINSZ, &ws);
}

void pdk_pty_relay_stop(pdk_pty_relay *r)
{
    if (!r)
        return;
    /* What the command wrote last is still in the pty. */
    char buf[16384];
    for (;;) {
        ssize_t n = read(r->master, buf, sizeof(buf));
        if (n <= 0 || pdk_write_all(STDOUT_FILENO, buf, (size_t)n) < 0)
            break;
    }
    if (r->from_stdin)
        event_free(r->from_stdin);
    if (r->from_master)
        event_free(r->from_master);
    if (r->raw)
        tcsetattr(STDIN_FILENO, TCSADRAIN, &r->saved);
    close(r->master);
    free(r);
}
