/* sandbox_protocol.c: see sandbox_protocol.h. */
#include "sandbox_protocol.h"

#include "util.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int pdk__msg_send(int sock, uint32_t type, int32_t value, const char *text, const int *fds,
                  size_t nfds)
{
    pdk_msg msg;
    msg.type = type;
    msg.value = value;
    size_t tlen = 0;
    if (text) {
        tlen = strnlen(text, PDK_MSG_TEXT_MAX - 1);
        memcpy(msg.text, text, tlen);
    }
    msg.text[tlen] = '\0';
    struct iovec iov = {.iov_base = &msg, .iov_len = offsetof(pdk_msg, text) + tlen + 1};
    union {
        char buf[CMSG_SPACE(sizeof(int) * PDK_MSG_MAX_FDS)];
        struct cmsghdr align;
    } control;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds > 0) {
        if (nfds > PDK_MSG_MAX_FDS) {
            errno = E2BIG;
            return -1;
        }
        memset(control.buf, 0, sizeof(control.buf));
        mh.msg_control = control.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
    }
    ssize_t n;
    do {
        n = sendmsg(sock, &mh, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -1 : 0;
}

int pdk__msg_recv(int sock, pdk_msg *msg, int *fds, size_t *nfds, int flags)
{
    size_t max = nfds ? *nfds : 0;
    if (nfds)
        *nfds = 0;
    union {
        char buf[CMSG_SPACE(sizeof(int) * PDK_MSG_MAX_FDS)];
        struct cmsghdr align;
    } control;
    struct iovec iov = {.iov_base = msg, .iov_len = sizeof(*msg)};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = control.buf,
                        .msg_controllen = sizeof(control.buf)};
    ssize_t n;
    do {
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return -1;
    if (n == 0)
        return 0;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *data = (int *)CMSG_DATA(cm);
        for (size_t i = 0; i < count; i++) {
            if (nfds && *nfds < max)
                fds[(*nfds)++] = data[i];
            else
                close(data[i]);
        }
    }
    if ((size_t)n < offsetof(pdk_msg, text) + 1) {
        errno = EPROTO;
        return -1;
    }
    msg->text[PDK_MSG_TEXT_MAX - 1] = '\0';
    if ((size_t)n < sizeof(*msg))
        ((char *)msg)[n - 1] = '\0';
    return 1;
}
