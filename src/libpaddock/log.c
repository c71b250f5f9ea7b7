/* log.c: see log.h. */
#include "log.h"

#include "display.h"
#include "redact.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static pdk_log_level current_level = PDK_LOG_WARN;

void pdk_log_set_level(pdk_log_level level)
{
    current_level = level;
}

pdk_log_level pdk_log_get_level(void)
{
    return current_level;
}

void pdk_log(pdk_log_level level, const char *fmt, ...)
{
    if (level > current_level)
        return;
    char line[2048];
    static const char *const prefixes[] = {"", "warning: ", "", "debug: "};
    int n = snprintf(line, sizeof(line), "paddock: %s", prefixes[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    /* a registered secret never reaches stderr either (redact.h), nor a control character
     * of a name the sandbox chose (display.h): the line may be on the terminal the sandbox
     * writes to */
    _cleanup_free_ char *redacted = pdk_redact_text(line);
    _cleanup_free_ char *text = pdk_display_message(redacted ? redacted : line);
    size_t len = strlen(text);
    /* One write per line so concurrent writers do not interleave mid-line. */
    struct iovec iov[2] = {{(void *)text, len}, {(void *)"\n", 1}};
    ssize_t r = writev(STDERR_FILENO, iov, 2);
    (void)r;
}

static int trace_state = -1;
static uint64_t trace_start;

bool pdk_trace_enabled(void)
{
    if (trace_state < 0) {
        const char *v = getenv("PADDOCK_TRACE");
        trace_state = v && *v && strcmp(v, "0") != 0;
        trace_start = pdk_now_monotonic_ns();
    }
    return trace_state == 1;
}

void pdk_trace_point(const char *what)
{
    char line[256];
    int n = snprintf(line, sizeof(line), "paddock: trace: +%lluus %d %s\n",
                     (unsigned long long)((pdk_now_monotonic_ns() - trace_start) / 1000),
                     (int)getpid(), what);
    if (n > 0)
        (void)!write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line));
}
