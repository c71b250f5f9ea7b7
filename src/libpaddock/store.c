/* store.c: see store.h. */
#include "store.h"

#include "fsutil.h"
#include "store_sqlite.h"
#include "util.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCHEMA_VERSION 2
#define SQLITE_SONAME  "libsqlite3.so.0"

pdk__sqlite_api pdk__sqlite;

/* Load libsqlite3 and the functions the store uses, once. */
static int load_sqlite(pdk_error *err)
{
    static bool loaded;
    if (loaded)
        return 0;
    void *lib = dlopen(SQLITE_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return pdk_error_set(err, 0,
                             "cannot load SQLite for the state store (%s; install libsqlite3-0, "
                             "or run scripts/bootstrap)",
                             dlerror());
    pdk__sqlite_api api;
#define PDK__SQLITE_LOAD(ret, name, args)                                                          \
    *(void **)&api.name = dlsym(lib, "sqlite3_" #name);                                            \
    if (!api.name)                                                                                 \
        return pdk_error_set(err, 0, "%s lacks sqlite3_%s (SQLite 3.35 or later is needed)",       \
                             SQLITE_SONAME, #name);
    PDK__SQLITE_FUNCTIONS(PDK__SQLITE_LOAD)
#undef PDK__SQLITE_LOAD
    pdk__sqlite = api;
    loaded = true;
    return 0; /* the library stays loaded for the life of the process */
}

struct pdk_store {
    sqlite3 *db;
    char *path;
};

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS audit ("
    "  seq INTEGER PRIMARY KEY,"
    "  time_ns INTEGER NOT NULL,"
    "  session TEXT,"
    "  kind TEXT NOT NULL,"
    "  data TEXT NOT NULL,"
    "  prev_hash TEXT NOT NULL,"
    "  hash TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS audit_session ON audit (session, seq);"
    "CREATE TABLE IF NOT EXISTS approvals ("
    "  id TEXT PRIMARY KEY,"
    "  session TEXT,"
    "  pid INTEGER,"
    "  parents TEXT NOT NULL,"
    "  argv TEXT NOT NULL,"
    "  cwd TEXT,"
    "  rule TEXT,"
    "  reason TEXT,"
    "  created_ns INTEGER NOT NULL,"
    "  state TEXT NOT NULL,"
    "  answered_ns INTEGER,"
    "  answered_by TEXT,"
    "  answer_reason TEXT,"
    "  always INTEGER NOT NULL DEFAULT 0,"
    "  request TEXT);"
    "CREATE TABLE IF NOT EXISTS spool (name TEXT PRIMARY KEY, offset INTEGER NOT NULL,"
    "  last_hash TEXT NOT NULL);";

/* The pid holding a POSIX lock on byte offset of path, or 0. SQLite's unix VFS takes
 * fcntl locks: in WAL mode the writer's lock is a byte of the -shm file. */
static pid_t lock_holder(const char *path, off_t offset)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = offset, .l_len = 1};
    pid_t pid = 0;
    if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK)
        pid = fl.l_pid;
    close(fd);
    return pid;
}

int pdk_store_error(pdk_store *store, pdk_error *err, const char *what)
{
    int code = sqlite3_errcode(store->db);
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
        /* WAL_WRITE_LOCK is byte 120 of the -shm file. */
        _cleanup_free_ char *shm = xasprintf("%s-shm", store->path);
        pid_t holder = lock_holder(shm, 120);
        if (holder > 0)
            return pdk_error_set(err, 0,
                                 "%s: the state store %s is locked by process %d (another "
                                 "paddock?) for more than %d s; wait for it, or end it",
                                 what, store->path, (int)holder, PDK_STORE_BUSY_MS / 1000);
        return pdk_error_set(err, 0,
                             "%s: the state store %s stayed locked by another process for more "
                             "than %d s; try again",
                             what, store->path, PDK_STORE_BUSY_MS / 1000);
    }
    /* A full disk: SQLite says "disk I/O error" when it meets it writing the WAL or its
     * index; the system's errno says what it was. */
    int sys = sqlite3_system_errno(store->db);
    if (code == SQLITE_FULL || (code == SQLITE_IOERR && (sys == ENOSPC || sys == EDQUOT)))
        return pdk_error_set(err, code == SQLITE_FULL ? ENOSPC : sys,
                             "%s: the state store %s cannot grow (free space on its disk, then "
                             "try again)",
                             what, store->path);
    if (code == SQLITE_IOERR && sys != 0)
        return pdk_error_set(err, sys, "%s: %s (%s)", what, sqlite3_errmsg(store->db), store->path);
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
        return pdk_error_set(err, 0,
                             "%s: the state store %s is damaged (%s); move it away to start a "
                             "new one (paddock audit verify says what is left of the log)",
                             what, store->path, sqlite3_errmsg(store->db));
    return pdk_error_set(err, 0, "%s: %s (%s)", what, sqlite3_errmsg(store->db), store->path);
}

static int exec_sql(pdk_store *store, const char *sql, pdk_error *err, const char *what)
{
    if (sqlite3_exec(store->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return pdk_store_error(store, err, what);
    return 0;
}

static int schema_version(pdk_store *store, int *version, pdk_error *err)
{
    sqlite3_stmt *st = NULL;
    *version = 0;
    if (sqlite3_prepare_v2(store->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return pdk_store_error(store, err, "reading the state store's version");
    if (sqlite3_step(st) == SQLITE_ROW)
        *version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return 0;
}

int pdk_store_open(const char *state_dir, bool create, pdk_store **out, pdk_error *err)
{
    *out = NULL;
    if (load_sqlite(err) < 0)
        return -1;
    pdk_store *store = xcalloc(1, sizeof(*store));
    store->path = pdk_path_join(state_dir, PDK_STORE_FILE);
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW |
                (create ? SQLITE_OPEN_CREATE : 0);
    if (create) {
        /* Made 0600 before SQLite opens it (SQLite would use the umask). */
        int fd = open(store->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) {
            pdk_error_set(err, errno, "cannot create the state store %s", store->path);
            goto fail;
        }
        close(fd);
    }
    if (sqlite3_open_v2(store->path, &store->db, flags, NULL) != SQLITE_OK) {
        if (!store->db) {
            pdk_error_set(err, ENOMEM, "cannot open the state store %s", store->path);
            goto fail;
        }
        if (!create && access(store->path, F_OK) < 0) {
            pdk_error_set(err, 0, "there is no state store at %s yet (nothing recorded)",
                          store->path);
            goto fail;
        }
        pdk_store_error(store, err, "opening the state store");
        goto fail;
    }
    sqlite3_busy_timeout(store->db, PDK_STORE_BUSY_MS);
    sqlite3_extended_result_codes(store->db, 0);
    /* journal_mode=WAL persists in the file; the others are per connection. */
    if (exec_sql(store, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;",
                 err, "setting up the state store") < 0)
        goto fail;
    int version = 0;
    if (schema_version(store, &version, err) < 0)
        goto fail;
    if (version > SCHEMA_VERSION) {
        pdk_error_set(err, 0,
                      "the state store %s is of a newer paddock (schema %d; this one knows %d): "
                      "use that paddock",
                      store->path, version, SCHEMA_VERSION);
        goto fail;
    }
    if (version < SCHEMA_VERSION) {
        if (pdk_store_begin(store, err) < 0)
            goto fail;
        /* 0: nothing yet. 1 -> 2: approvals of network requests (the request column). */
        const char *step = version == 0 ? schema : "ALTER TABLE approvals ADD COLUMN request TEXT;";
        if (exec_sql(store, step, err, "creating the state store's tables") < 0 ||
            exec_sql(store, "PRAGMA user_version=2", err, "creating the state store's tables") <
                0) {
            pdk_store_rollback(store);
            goto fail;
        }
        if (pdk_store_commit(store, err) < 0)
            goto fail;
    }
    *out = store;
    return 0;
fail:
    pdk_store_close(store);
    return -1;
}

void pdk_store_close(pdk_store *store)
{
    if (!store)
        return;
    if (store->db)
        sqlite3_close(store->db);
    free(store->path);
    free(store);
}

sqlite3 *pdk_store_db(const pdk_store *store)
{
    return store->db;
}

const char *pdk_store_path(const pdk_store *store)
{
    return store->path;
}

int pdk_store_begin(pdk_store *store, pdk_error *err)
{
    return exec_sql(store, "BEGIN IMMEDIATE", err, "writing to the state store");
}

int pdk_store_commit(pdk_store *store, pdk_error *err)
{
    if (exec_sql(store, "COMMIT", err, "writing to the state store") < 0) {
        pdk_store_rollback(store);
        return -1;
    }
    return 0;
}

void pdk_store_rollback(pdk_store *store)
{
    if (!sqlite3_get_autocommit(store->db))
        sqlite3_exec(store->db, "ROLLBACK", NULL, NULL, NULL);
}
