/* error.h: the error regime of long-lived code.
 *
 * Functions that can fail return < 0 and fill a caller-provided pdk_error with an errno
 * value (0 when none applies) and a one-line message that names the thing and, where one
 * exists, the fix. Callers add context on the way up with pdk_error_prefix(); only the CLI
 * prints. The short-lived child between clone and exec uses its own die path instead
 * (see sandbox_child.c). docs/error-handling.md has the rules.
 */
#ifndef PADDOCK_ERROR_H
#define PADDOCK_ERROR_H

#include "util.h"

typedef struct pdk_error {
    int code; /* errno value, or 0 */
    char message[1024];
} pdk_error;

/* Set the message; when errnum != 0 ": strerror(errnum)" is appended. Returns -1. */
int pdk_error_set(pdk_error *err, int errnum, const char *fmt, ...) PDK_PRINTF(3, 4);
/* Prepend "context: " to the existing message. Returns -1. */
int pdk_error_prefix(pdk_error *err, const char *fmt, ...) PDK_PRINTF(2, 3);
void pdk_error_clear(pdk_error *err);

#endif
