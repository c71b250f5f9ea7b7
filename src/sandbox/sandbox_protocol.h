/* sandbox_protocol.h: messages between the supervisor and the sandbox's init, over a
 * SOCK_SEQPACKET socketpair (one message per packet; fds travel as SCM_RIGHTS). Internal
 * to sandbox.c, sandbox_child.c and supervisor.c. */
#ifndef PADDOCK_SANDBOX_PROTOCOL_H
#define PADDOCK_SANDBOX_PROTOCOL_H

#include <stdint.h>
#include <sys/types.h>

enum pdk_msg_type {
    /* supervisor -> init */
    PDK_MSG_MAPS = 2, /* id maps written: build what depends on nothing else */
    PDK_MSG_GO = 1,   /* everything prepared; fds: the bind sources (privileged mode) */
    PDK_MSG_RUN = 3,  /* what starts the command is recorded: start it */
    /* init -> supervisor */
    PDK_MSG_ERROR = 10,       /* setup failed: text; init then exits */
    PDK_MSG_PLACEHOLDER = 11, /* text: absolute paths created as mount points, one a line */
    PDK_MSG_PTY = 12,         /* fd: the pty master for --tty */
    PDK_MSG_EXEC_FAILED = 13, /* value: errno; text: the command */
    PDK_MSG_STARTED = 14,     /* value: the command's pid inside */
    PDK_MSG_EXIT = 15,        /* value: the command's wait status */
    PDK_MSG_LISTENER = 16,    /* fd: the seccomp listener of execs (notify_exec) */
    PDK_MSG_EGRESS = 17,      /* fds: the egress sockets; text: what each is (egress_net.h) */
};

#define PDK_MSG_TEXT_MAX 4096
#define PDK_MSG_MAX_FDS  200

typedef struct pdk_msg {
    uint32_t type;
    int32_t value;
    char text[PDK_MSG_TEXT_MAX];
} pdk_msg;

/* Send a message with optional fds; returns 0 or -1 with errno. */
int pdk__msg_send(int sock, uint32_t type, int32_t value, const char *text, const int *fds,
                  size_t nfds);
/* Receive one message; fds (up to *nfds) are returned CLOEXEC. Returns 1, 0 on EOF, or
 * -1 with errno. */
int pdk__msg_recv(int sock, pdk_msg *msg, int *fds, size_t *nfds, int flags);

#endif
