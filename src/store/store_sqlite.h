/* store_sqlite.h: SQLite, as loaded by store.c (internal to the store and the audit log).
 *
 * libsqlite3 is opened with dlopen() when the state store is first used, not linked: linked
 * in, it would bring libm and thousands of relocations to every paddock process, the ones
 * on the way to a sandbox included. The calls below go through a table of the functions
 * the store uses; sqlite3.h still gives the types and constants. Include it only after
 * sqlite3.h, in files that call SQLite.
 */
#ifndef PADDOCK_STORE_SQLITE_H
#define PADDOCK_STORE_SQLITE_H

#include <sqlite3.h>

#define PDK__SQLITE_FUNCTIONS(X)                                                                   \
    X(int, bind_int64, (sqlite3_stmt *, int, sqlite3_int64))                                       \
    X(int, bind_null, (sqlite3_stmt *, int))                                                       \
    X(int, bind_text, (sqlite3_stmt *, int, const char *, int, void (*)(void *)))                  \
    X(int, busy_timeout, (sqlite3 *, int))                                                         \
    X(int, changes, (sqlite3 *))                                                                   \
    X(int, close, (sqlite3 *))                                                                     \
    X(int, column_int, (sqlite3_stmt *, int))                                                      \
    X(sqlite3_int64, column_int64, (sqlite3_stmt *, int))                                          \
    X(const unsigned char *, column_text, (sqlite3_stmt *, int))                                   \
    X(int, errcode, (sqlite3 *))                                                                   \
    X(const char *, errmsg, (sqlite3 *))                                                           \
    X(int, exec,                                                                                   \
      (sqlite3 *, const char *, int (*)(void *, int, char **, char **), void *, char **))          \
    X(int, extended_result_codes, (sqlite3 *, int))                                                \
    X(int, finalize, (sqlite3_stmt *))                                                             \
    X(int, get_autocommit, (sqlite3 *))                                                            \
    X(int, open_v2, (const char *, sqlite3 **, int, const char *))                                 \
    X(int, prepare_v2, (sqlite3 *, const char *, int, sqlite3_stmt **, const char **))             \
    X(int, reset, (sqlite3_stmt *))                                                                \
    X(int, step, (sqlite3_stmt *))                                                                 \
    X(int, system_errno, (sqlite3 *))

typedef struct pdk__sqlite_api {
#define PDK__SQLITE_FIELD(ret, name, args) ret(*name) args;
    PDK__SQLITE_FUNCTIONS(PDK__SQLITE_FIELD)
#undef PDK__SQLITE_FIELD
} pdk__sqlite_api;

extern pdk__sqlite_api pdk__sqlite;

#define sqlite3_bind_int64            pdk__sqlite.bind_int64
#define sqlite3_bind_null             pdk__sqlite.bind_null
#define sqlite3_bind_text             pdk__sqlite.bind_text
#define sqlite3_busy_timeout          pdk__sqlite.busy_timeout
#define sqlite3_changes               pdk__sqlite.changes
#define sqlite3_close                 pdk__sqlite.close
#define sqlite3_column_int            pdk__sqlite.column_int
#define sqlite3_column_int64          pdk__sqlite.column_int64
#define sqlite3_column_text           pdk__sqlite.column_text
#define sqlite3_errcode               pdk__sqlite.errcode
#define sqlite3_errmsg                pdk__sqlite.errmsg
#define sqlite3_exec                  pdk__sqlite.exec
#define sqlite3_extended_result_codes pdk__sqlite.extended_result_codes
#define sqlite3_finalize              pdk__sqlite.finalize
#define sqlite3_get_autocommit        pdk__sqlite.get_autocommit
#define sqlite3_open_v2               pdk__sqlite.open_v2
#define sqlite3_prepare_v2            pdk__sqlite.prepare_v2
#define sqlite3_reset                 pdk__sqlite.reset
#define sqlite3_step                  pdk__sqlite.step
#define sqlite3_system_errno          pdk__sqlite.system_errno

#endif
