/* test_sandbox_protocol.c: the messages between the supervisor and the sandbox's init
 * (sandbox_protocol.c) over a SOCK_SEQPACKET pair. Type, value and text arrive as sent; a
 * text too long is cut and still terminated; fds arrive close-on-exec, naming the same
 * files; fds beyond what the receiver takes are closed, not leaked; more than the maximum
 * is refused before anything is sent; a packet too short to be a message is EPROTO; the
 * peer gone is 0. */
#include "sandbox_protocol.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static void pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

static int open_fd_count(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        n += fcntl(fd, F_GETFD) >= 0;
    return n;
}

static void t_roundtrip(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    pdk_msg m;
    assert_int_equal(pdk__msg_send(sv[0], PDK_MSG_EXIT, -42, "status text", NULL, 0), 0);
    assert_int_equal(pdk__msg_recv(sv[1], &m, NULL, NULL, 0), 1);
    assert_int_equal(m.type, PDK_MSG_EXIT);
    assert_int_equal(m.value, -42);
    assert_string_equal(m.text, "status text");
    /* no text: an empty one, not the last message's */
    assert_int_equal(pdk__msg_send(sv[0], PDK_MSG_GO, 0, NULL, NULL, 0), 0);
    assert_int_equal(pdk__msg_recv(sv[1], &m, NULL, NULL, 0), 1);
    assert_string_equal(m.text, "");
    /* one message per packet: two sends, two receives */
    assert_int_equal(pdk__msg_send(sv[0], 1, 1, "a", NULL, 0), 0);
    assert_int_equal(pdk__msg_send(sv[0], 2, 2, "b", NULL, 0), 0);
    assert_int_equal(pdk__msg_recv(sv[1], &m, NULL, NULL, 0), 1);
    assert_string_equal(m.text, "a");
    assert_int_equal(pdk__msg_recv(sv[1], &m, NULL, NULL, 0), 1);
    assert_string_equal(m.text, "b");
    /* nothing waiting, not blocking: -1 EAGAIN */
    errno = 0;
    assert_int_equal(pdk__msg_recv(sv[1], &m, NULL, NULL, MSG_DONTWAIT), -1);
    assert_int_equal(errno, EAGAIN);
    /* the peer gone: 0 */
    close(sv[0]);
    assert_int_equal(pdk__msg_recv(sv[1], &m, NULL, NULL, 0), 0);
    close(sv[1]);
}

static void t_long_text_cut(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    char *text = xmalloc(PDK_MSG_TEXT_MAX * 2);
    memset(text, 'p', PDK_MSG_TEXT_MAX * 2 - 1);
    text[PDK_MSG_TEXT_MAX * 2 - 1] = '\0';
    pdk_msg m;
    memset(&m, 'X', sizeof(m));
    assert_int_equal(pdk__msg_send(sv[0], PDK_MSG_PLACEHOLDER, 0, text, NULL, 0), 0);
    assert_int_equal(pdk__msg_recv(sv[1], &m, NULL, NULL, 0), 1);
    assert_int_equal(strlen(m.text), PDK_MSG_TEXT_MAX - 1);
    assert_memory_equal(m.text, text, PDK_MSG_TEXT_MAX - 1);
    free(text);
    close(sv[0]);
    close(sv[1]);
}

static void t_fds(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    int files[3];
    struct stat want[3];
    for (int i = 0; i < 3; i++) {
        files[i] = open("/dev/null", O_RDONLY); /* no O_CLOEXEC on purpose */
        assert_true(files[i] >= 0);
        assert_int_equal(fstat(files[i], &want[i]), 0);
    }
    assert_int_equal(pdk__msg_send(sv[0], PDK_MSG_EGRESS, 3, "three", files, 3), 0);
    int got[4] = {-1, -1, -1, -1};
    size_t n = 4;
    pdk_msg m;
    assert_int_equal(pdk__msg_recv(sv[1], &m, got, &n, 0), 1);
    assert_int_equal(n, 3);
    for (int i = 0; i < 3; i++) {
        struct stat st;
        assert_int_equal(fstat(got[i], &st), 0);
        assert_true(st.st_ino == want[i].st_ino && st.st_dev == want[i].st_dev);
        /* close-on-exec, whatever the sender's were */
        assert_true(fcntl(got[i], F_GETFD) & FD_CLOEXEC);
        close(got[i]);
    }

    /* the receiver takes one: the other two are closed, not left open */
    int before = open_fd_count();
    assert_int_equal(pdk__msg_send(sv[0], PDK_MSG_EGRESS, 3, "three", files, 3), 0);
    n = 1;
    assert_int_equal(pdk__msg_recv(sv[1], &m, got, &n, 0), 1);
    assert_int_equal(n, 1);
    assert_int_equal(open_fd_count(), before + 1);
    close(got[0]);
    /* a receiver that takes none */
    assert_int_equal(pdk__msg_send(sv[0], PDK_MSG_EGRESS, 3, "three", files, 3), 0);
    assert_int_equal(pdk__msg_recv(sv[1], &m, NULL, NULL, 0), 1);
    assert_int_equal(open_fd_count(), before);

    /* more than the maximum: refused, nothing sent */
    int many[PDK_MSG_MAX_FDS + 1];
    for (size_t i = 0; i < PDK_MSG_MAX_FDS + 1; i++)
        many[i] = files[0];
    errno = 0;
    assert_int_equal(pdk__msg_send(sv[0], PDK_MSG_EGRESS, 0, NULL, many, PDK_MSG_MAX_FDS + 1), -1);
    assert_int_equal(errno, E2BIG);
    assert_int_equal(pdk__msg_recv(sv[1], &m, NULL, NULL, MSG_DONTWAIT), -1);
    /* the maximum itself goes through */
    assert_int_equal(pdk__msg_send(sv[0], PDK_MSG_EGRESS, 0, NULL, many, PDK_MSG_MAX_FDS), 0);
    int received[PDK_MSG_MAX_FDS];
    n = PDK_MSG_MAX_FDS;
    assert_int_equal(pdk__msg_recv(sv[1], &m, received, &n, 0), 1);
    assert_int_equal(n, PDK_MSG_MAX_FDS);
    for (size_t i = 0; i < n; i++)
        close(received[i]);
    for (int i = 0; i < 3; i++)
        close(files[i]);
    close(sv[0]);
    close(sv[1]);
}

static void t_short_packet(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    /* a packet shorter than a message's header and its text's NUL */
    uint32_t word = PDK_MSG_ERROR;
    assert_int_equal(send(sv[0], &word, sizeof(word), 0), (ssize_t)sizeof(word));
    pdk_msg m;
    errno = 0;
    assert_int_equal(pdk__msg_recv(sv[1], &m, NULL, NULL, 0), -1);
    assert_int_equal(errno, EPROTO);
    /* a text without its NUL is terminated on receipt */
    struct {
        uint32_t type;
        int32_t value;
        char text[4];
    } raw = {PDK_MSG_ERROR, 1, {'a', 'b', 'c', 'd'}};
    assert_int_equal(send(sv[0], &raw, sizeof(raw), 0), (ssize_t)sizeof(raw));
    assert_int_equal(pdk__msg_recv(sv[1], &m, NULL, NULL, 0), 1);
    assert_true(strlen(m.text) < 4);
    close(sv[0]);
    close(sv[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_roundtrip),
        cmocka_unit_test(t_long_text_cut),
        cmocka_unit_test(t_fds),
        cmocka_unit_test(t_short_packet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
