/* pty.h: --tty. The command gets a pty of the sandbox's own devpts; the supervisor relays
 * between the caller's stdin/stdout and the pty master, in raw mode when the caller's
 * stdin is a terminal, and passes window size changes on. */
#ifndef PADDOCK_PTY_H
#define PADDOCK_PTY_H

#include <event2/event.h>
#include <stdbool.h>

typedef struct pdk_pty_relay pdk_pty_relay;

/* Start relaying on base; takes ownership of master. */
pdk_pty_relay *pdk_pty_relay_start(struct event_base *base, int master);
/* Copy the caller's window size to the pty (on start and SIGWINCH). */
void pdk_pty_relay_resize(pdk_pty_relay *relay);
/* Flush what the command wrote, restore the terminal, free. */
void pdk_pty_relay_stop(pdk_pty_relay *relay);

#endif
