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
#include <sys/file.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SCHEMA_VERSION 3
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
    char *state_dir;
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
    "CREATE INDEX IF NOT EXISTS audit_time ON audit (time_ns);"
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
 * fcntl locks: in WAL mode the writer's lock is a byte of the -shm file. Read from
 * /proc/locks, not asked with F_GETLK: that needs a descriptor of the file, and closing it
 * would drop every POSIX lock this process holds on it (those of its own connections). */
static pid_t lock_holder(const char *path, off_t offset)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return 0;
    _cleanup_fclose_ FILE *f = fopen("/proc/locks", "re");
    if (!f)
        return 0;
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        char type[16], rw[16], end[32];
        unsigned maj, min;
        unsigned long long ino, start;
        int pid;
        if (strstr(line, "->") || sscanf(line, "%*d: %15s %*s %15s %d %x:%x:%llu %llu %31s", type,
                                         rw, &pid, &maj, &min, &ino, &start, end) != 8)
            continue;
        if (strcmp(type, "POSIX") != 0 || strcmp(rw, "WRITE") != 0 || ino != st.st_ino ||
            maj != major(st.st_dev) || min != minor(st.st_dev))
            continue;
        unsigned long long last = strcmp(end, "EOF") == 0 ? ~0ULL : strtoull(end, NULL, 10);
        if (start <= (unsigned long long)offset && (unsigned long long)offset <= last)
            return (pid_t)pid;
    }
    return 0;
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
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW)
        *version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (r != SQLITE_ROW)
        return pdk_store_error(store, err, "reading the state store's version");
    return 0;
}

/* Whether the database file is in WAL mode (asking changes nothing). */
static int in_wal_mode(pdk_store *store, bool *wal, pdk_error *err)
{
    sqlite3_stmt *st = NULL;
    *wal = false;
    if (sqlite3_prepare_v2(store->db, "PRAGMA journal_mode", -1, &st, NULL) != SQLITE_OK)
        return pdk_store_error(store, err, "reading the state store's journal mode");
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        const unsigned char *mode = sqlite3_column_text(st, 0);
        *wal = mode && strcmp((const char *)mode, "wal") == 0;
    }
    sqlite3_finalize(st);
    if (r != SQLITE_ROW)
        return pdk_store_error(store, err, "reading the state store's journal mode");
    return 0;
}

int pdk_store_lock(pdk_store *store, pdk_error *err)
{
    _cleanup_free_ char *path = pdk_path_join(store->state_dir, PDK_STORE_LOCK_FILE);
    int fd = open(path, O_RDWR | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return pdk_error_set(err, errno, "cannot open the state store's lock %s", path);
    uint64_t deadline = pdk_now_monotonic_ns() + (uint64_t)PDK_STORE_BUSY_MS * 1000000u;
    long pause_ns = 1000000;
    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        if (e == EINTR)
            continue;
        if (e != EWOULDBLOCK || pdk_now_monotonic_ns() >= deadline) {
            close(fd);
            if (e != EWOULDBLOCK)
                return pdk_error_set(err, e, "cannot lock the state store's lock %s", path);
            return pdk_error_set(err, 0,
                                 "the state store's lock %s stayed held by another process for "
                                 "more than %d s; try again",
                                 path, PDK_STORE_BUSY_MS / 1000);
        }
        struct timespec pause = {0, pause_ns};
        nanosleep(&pause, NULL);
        if (pause_ns < 16000000)
            pause_ns *= 2;
    }
    return fd;
}

/* 0 -> 3 (nothing yet: every table), 1 -> 2 (approvals of network requests: the request
 * column), 2 -> 3 (an index on the events' time: verify looks for an event recorded twice). */
static int migrate(pdk_store *store, int version, pdk_error *err)
{
    static const char to_2[] = "ALTER TABLE approvals ADD COLUMN request TEXT;";
    static const char to_3[] = "CREATE INDEX IF NOT EXISTS audit_time ON audit (time_ns);";
    const char *what = "creating the state store's tables";
    if (version == 0)
        return exec_sql(store, schema, err, what);
    if (version < 2 && exec_sql(store, to_2, err, what) < 0)
        return -1;
    return exec_sql(store, to_3, err, what);
}

/* Under the store's lock, so that it is done once, by one process, while the others wait
 * (two processes turning a new database to WAL at once: one fails at once with "database
 * is locked", SQLite's busy handler never called). */
static int set_up(pdk_store *store, pdk_error *err)
{
    _cleanup_close_ int lock = pdk_store_lock(store, err);
    if (lock < 0)
        return pdk_error_prefix(err, "setting up the state store");
    bool wal = false;
    if (in_wal_mode(store, &wal, err) < 0)
        return -1;
    if (!wal) {
        if (exec_sql(store, "PRAGMA journal_mode=WAL", err, "setting up the state store") < 0 ||
            in_wal_mode(store, &wal, err) < 0)
            return -1;
        if (!wal)
            return pdk_error_set(err, 0,
                                 "setting up the state store %s: SQLite cannot use WAL mode "
                                 "there (a file system without shared memory?); use a state "
                                 "dir on a local file system",
                                 store->path);
    }
    if (pdk_store_begin(store, err) < 0)
        return -1;
    int version = 0;
    if (schema_version(store, &version, err) < 0) { /* again: inside the write lock */
        pdk_store_rollback(store);
        return -1;
    }
    if (version < SCHEMA_VERSION) {
        _cleanup_free_ char *bump = xasprintf("PRAGMA user_version=%d", SCHEMA_VERSION);
        if (migrate(store, version, err) < 0 ||
            exec_sql(store, bump, err, "creating the state store's tables") < 0) {
            pdk_store_rollback(store);
            return -1;
        }
    }
    return pdk_store_commit(store, err);
}

int pdk_store_open(const char *state_dir, bool create, pdk_store **out, pdk_error *err)
{
    *out = NULL;
    if (load_sqlite(err) < 0)
        return -1;
    pdk_store *store = xcalloc(1, sizeof(*store));
    store->path = pdk_path_join(state_dir, PDK_STORE_FILE);
    store->state_dir = xstrdup(state_dir);
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW |
                (create ? SQLITE_OPEN_CREATE : 0);
    if (create) {
        /* Made 0600 before SQLite opens it (SQLite would use the umask). Only when it is
         * not there: closing a descriptor of a database this process has open would drop
         * the POSIX locks SQLite holds on it. */
        int fd = open(store->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 && errno != EEXIST) {
            pdk_error_set(err, errno, "cannot create the state store %s", store->path);
            goto fail;
        }
        if (fd >= 0)
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
    /* Per connection: no lock taken. */
    if (exec_sql(store, "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;", err,
                 "setting up the state store") < 0)
        goto fail;
    /* Set up already (WAL mode persists in the file, the schema's version in its header):
     * the usual case, read without any write lock. */
    bool wal = false;
    int version = 0;
    if (in_wal_mode(store, &wal, err) < 0 || schema_version(store, &version, err) < 0)
        goto fail;
    if (version > SCHEMA_VERSION) {
        pdk_error_set(err, 0,
                      "the state store %s is of a newer paddock (schema %d; this one knows %d): "
                      "use that paddock",
                      store->path, version, SCHEMA_VERSION);
        goto fail;
    }
    if ((!wal || version < SCHEMA_VERSION) && set_up(store, err) < 0)
        goto fail;
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
    free(store->state_dir);
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

const char *pdk_store_state_dir(const pdk_store *store)
{
    return store->state_dir;
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
