/* error.c: see error.h. */
#include "error.h"

#include "display.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A message is one line of text a human reads: a path or name in it that holds a newline, a
 * control or format character, or bytes that are not UTF-8 is shown escaped. Cut to fit at
 * a character's boundary. */
static void make_printable(pdk_error *err)
{
    size_t len = strlen(err->message);
    if (pdk_display_is_plain(err->message, len, PDK_DISPLAY_RAW_BACKSLASH))
        return;
    pdk_buf b = {0};
    pdk_display_escape(&b, err->message, len, PDK_DISPLAY_RAW_BACKSLASH);
    size_t n = b.len < sizeof(err->message) - 1 ? b.len : sizeof(err->message) - 1;
    while (n > 0 && n < b.len && ((unsigned char)b.data[n] & 0xc0) == 0x80)
        n--; /* not inside a UTF-8 sequence */
    memcpy(err->message, b.data, n);
    err->message[n] = '\0';
    pdk_buf_free(&b);
}

int pdk_error_set(pdk_error *err, int errnum, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
    if (n < 0)
        err->message[0] = '\0';
    if (errnum != 0) {
        size_t len = strlen(err->message);
        snprintf(err->message + len, sizeof(err->message) - len, ": %s", strerror(errnum));
    }
    make_printable(err);
    err->code = errnum;
    return -1;
}

int pdk_error_prefix(pdk_error *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    size_t plen = strlen(prefix), mlen = strlen(err->message);
    if (plen + 2 >= sizeof(err->message))
        plen = sizeof(err->message) - 3;
    if (plen + 2 + mlen >= sizeof(err->message))
        mlen = sizeof(err->message) - plen - 3;
    memmove(err->message + plen + 2, err->message, mlen);
    memcpy(err->message, prefix, plen);
    err->message[plen] = ':';
    err->message[plen + 1] = ' ';
    err->message[plen + 2 + mlen] = '\0';
    make_printable(err);
    return -1;
}

void pdk_error_clear(pdk_error *err)
{
    if (err) {
        err->code = 0;
        err->message[0] = '\0';
    }
}
