/* output.c: see output.h. */
#include "output.h"

#include "display.h"
#include "redact.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *pdk_output_shown(const char *text)
{
    _cleanup_free_ char *redacted = pdk_redact_text(text ? text : "");
    const char *t = redacted ? redacted : text ? text : "";
    size_t len = strlen(t);
    if (len > 0 && t[len - 1] == '\n')
        len--;
    pdk_buf b = {0};
    pdk_display_escape(&b, t, len, PDK_DISPLAY_RAW_BACKSLASH);
    return b.data ? pdk_buf_steal(&b) : xstrdup("");
}

void pdk_output(int fd, unsigned flags, const char *text)
{
    _cleanup_free_ char *shown = pdk_output_shown(text);
    size_t len = strlen(shown);
    if (!(flags & PDK_OUTPUT_PROMPT)) {
        shown = xrealloc(shown, len + 2);
        shown[len++] = '\n';
        shown[len] = '\0';
    }
    /* one write: a line shorter than PIPE_BUF is never split by another writer's */
    const char *p = shown;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        p += n;
        len -= (size_t)n;
    }
}

void pdk_outputf(int fd, unsigned flags, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    _cleanup_free_ char *text = xvasprintf(fmt, ap);
    va_end(ap);
    pdk_output(fd, flags, text);
}

void pdk_output_out_of_memory(const char *what)
{
    char line[128] = "paddock: out of memory";
    size_t len = strlen(line);
    size_t wlen = what ? strnlen(what, 64) : 0;
    if (wlen) {
        memcpy(line + len, " (", 2);
        memcpy(line + len + 2, what, wlen);
        len += 2 + wlen;
        line[len++] = ')';
    }
    line[len++] = '\n';
    (void)!write(STDERR_FILENO, line, len);
    abort();
}
