/* error.c: see error.h. */
#include "error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

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
    char old[sizeof(err->message)];
    memcpy(old, err->message, sizeof(old));
    snprintf(err->message, sizeof(err->message), "%s: %s", prefix, old);
    return -1;
}

void pdk_error_clear(pdk_error *err)
{
    if (err) {
        err->code = 0;
        err->message[0] = '\0';
    }
}
