/* log.h: diagnostics on stderr, prefixed "paddock: ". Quiet by default; PADDOCK_DEBUG=1
 * or --verbose enables debug lines. Never pass secret values to these functions. Every
 * line is one line: registered secrets redacted (redact.h), controls, invalid UTF-8 and
 * hiding characters escaped (pdk_display_message), whatever the arguments held. */
#ifndef PADDOCK_LOG_H
#define PADDOCK_LOG_H

#include "util.h"

typedef enum pdk_log_level {
    PDK_LOG_ERROR = 0,
    PDK_LOG_WARN = 1,
    PDK_LOG_INFO = 2,
    PDK_LOG_DEBUG = 3,
} pdk_log_level;

void pdk_log_set_level(pdk_log_level level);
pdk_log_level pdk_log_get_level(void);
void pdk_log(pdk_log_level level, const char *fmt, ...) PDK_PRINTF(2, 3);

#define pdk_error_log(...) pdk_log(PDK_LOG_ERROR, __VA_ARGS__)
/* A notice that is always shown (an approval waiting, a request refused), not an error. */
#define pdk_notice(...) pdk_log(PDK_LOG_ERROR, __VA_ARGS__)
#define pdk_warn(...)   pdk_log(PDK_LOG_WARN, __VA_ARGS__)
#define pdk_info(...)   pdk_log(PDK_LOG_INFO, __VA_ARGS__)
#define pdk_debug(...)                                                                             \
    do {                                                                                           \
        if (pdk_log_get_level() >= PDK_LOG_DEBUG)                                                  \
            pdk_log(PDK_LOG_DEBUG, __VA_ARGS__);                                                   \
    } while (0)

/* PADDOCK_TRACE=1: "paddock: trace: +MICROSECONDS pid what" on stderr at the phase
 * boundaries of a run, for start-up work (bench/ measures; this explains). */
bool pdk_trace_enabled(void);
void pdk_trace_point(const char *what);
#define pdk_trace(what)                                                                            \
    do {                                                                                           \
        if (pdk_trace_enabled())                                                                   \
            pdk_trace_point(what);                                                                 \
    } while (0)

#endif
