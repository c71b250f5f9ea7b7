/* log.c: see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
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
    size_t len = strlen(line);
    line[len++] = '\n';
    /* One write per line so concurrent writers do not interleave mid-line. */
    ssize_t r = write(STDERR_FILENO, line, len);
    (void)r;
}
