/* log.h: diagnostics on stderr, prefixed "paddock: ". Quiet by default; PADDOCK_DEBUG=1
 * or --verbose enables debug lines. Never pass secret values to these functions. Every
 * line is one line: registered secrets redacted (redact.h), controls, invalid UTF-8 and
 * hiding characters escaped (pdk_display_message), whatever the arguments held. */
#ifndef PADDOCK_LOG_H
#define PADDOCK_LOG_H

#include "error.h"
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
#define pdk_warn(...)   pdk_log(PDK_LOG_WARN, __VA_ARGS__)
#define pdk_info(...)   pdk_log(PDK_LOG_INFO, __VA_ARGS__)
#define pdk_debug(...)                                                                             \
    do {                                                                                           \
        if (pdk_log_get_level() >= PDK_LOG_DEBUG)                                                  \
            pdk_log(PDK_LOG_DEBUG, __VA_ARGS__);                                                   \
    } while (0)

/* ---- running notices ----
 *
 * What paddock says while a command runs: an exec or a request it refused, an approval it
 * asks for, a warning. A command that owns the terminal (a TUI) draws on the terminal
 * paddock would print on, so the notices of a run go where its route says: on stderr as they
 * come (the default), or, when the command owns the terminal or with --quiet, only to the
 * notice file. Every run's notices are also lines of that file (STATE/notices/notices.log,
 * shared by all runs, one write a line; past 4 MiB it becomes notices.log.1), which
 * `paddock approvals --watch` follows; the audit log has each of them anyway, and the
 * counts make the summary at the end. Every notice is one line, its control, bidi and
 * invisible characters and bytes that are not UTF-8 escaped (pdk_display_message); a
 * caller escapes the sandbox's words in it with pdk_display() or pdk_display_argv(), so
 * that their backslashes are unambiguous too. Safe to call from any thread of the
 * supervisor; a no-op in any other process (the sandbox's init). */
typedef enum pdk_notice_route {
    PDK_NOTICES_STDERR, /* printed as they come */
    PDK_NOTICES_ASIDE,  /* the command owns the terminal: the notice file only */
    PDK_NOTICES_QUIET,  /* --quiet: the notice file only */
} pdk_notice_route;

typedef enum pdk_notice_kind {
    PDK_NOTICE_EXEC_REFUSED,    /* an exec inside (the process is told on its own stderr) */
    PDK_NOTICE_REQUEST_REFUSED, /* a request or connection the gateway refused */
    PDK_NOTICE_APPROVAL,        /* a human is asked */
    PDK_NOTICE_WARNING,         /* pdk_warn() while the command runs */
} pdk_notice_kind;

#define PDK_NOTICE_PRINT (1u << 0) /* on stderr too when the route is PDK_NOTICES_STDERR */
#define PDK_NOTICE_QUIET (1u << 1) /* a rule marks it quiet: counted, never shown */

typedef struct pdk_notice_counts {
    uint64_t execs_refused, requests_refused, approvals, warnings;
    uint64_t quiet; /* refusals a rule marked quiet (not in the counts above) */
    uint64_t held;  /* notices not printed because of the route */
} pdk_notice_counts;

#define PDK_NOTICES_FILE "notices.log"

/* Start the notices of a run of session in state_dir; *path (new string) is the notice
 * file's. With a route other than stderr the file is made now (the start line names it),
 * else at the first notice. Returns 0, or -1 with err. */
int pdk_notices_begin(const char *state_dir, const char *session, pdk_notice_route route,
                      char **path, pdk_error *err);
/* One notice (printf-style; a trailing newline is dropped). */
void pdk_notice(pdk_notice_kind kind, unsigned flags, const char *fmt, ...) PDK_PRINTF(3, 4);
/* Whether notices are held from the terminal (route other than stderr, while active). */
bool pdk_notices_held(void);
/* End them: the counts. */
void pdk_notices_end(pdk_notice_counts *counts);

/* The notice file's directory in state_dir (new string), and the fields of one of its
 * lines ("TIME SESSION KIND TEXT"): 0, or -1 for a line that is not one. */
char *pdk_notices_dir(const char *state_dir);
typedef struct pdk_notice_line {
    char time[20]; /* "2026-12-01 09:30:00" */
    char session[64];
    char kind[20];    /* "exec-refused", "request-refused", "approval", "warning" */
    const char *text; /* into the line: escaped already */
} pdk_notice_line;
int pdk_notice_line_parse(const char *line, pdk_notice_line *out);

/* PADDOCK_TRACE=1: "paddock: trace: +MICROSECONDS pid what" on stderr at the phase
 * boundaries of a run, for start-up work (bench/ measures; this explains). */
bool pdk_trace_enabled(void);
void pdk_trace_point(const char *what);
#define pdk_trace(what)                                                                            \
    do {                                                                                           \
        if (pdk_trace_enabled())                                                                   \
            pdk_trace_point(what);                                                                 \
    } while (0)

/* Fault injection for the test suite: when PADDOCK_TEST_CRASH_AT names this point, the
 * process kills itself with SIGKILL here, as a kill -9 from outside at that moment would
 * (tests/integration/t_session_races.sh, t_vault_faults.sh). Harmless: it only does what
 * anyone who can set paddock's environment can do with kill(1). */
void pdk_crash_point(const char *name);

#endif
