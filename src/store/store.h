/* store.h: the state store, one SQLite database in the state dir (STATE/paddock.db, mode
 * 0600, WAL): the audit log (audit.h) and the approval requests (approvals, later) live
 * there, so that any paddock process can read and answer them. The state dir is hidden
 * in every sandbox, so nothing inside can reach the store.
 *
 * Every commit is durable (synchronous=FULL: the WAL is fsync'd) before the action it
 * records goes on. When another process holds the write lock, a writer waits up to
 * PDK_STORE_BUSY_MS, then fails naming the holder's pid when it can be found. Readers never
 * take the write lock (WAL): they do not hold up a writer.
 *
 * The store's lock, STATE/store.lock (flock'ed, waited for up to PDK_STORE_BUSY_MS), is held
 * for a moment by whoever sets the store up (a new or older database: WAL mode, the tables)
 * and whoever moves the audit log's recorded end (audit.h); a store set up already opens
 * without it.
 */
#ifndef PADDOCK_STORE_H
#define PADDOCK_STORE_H

#include "error.h"

#include <sqlite3.h>

#define PDK_STORE_FILE      "paddock.db"
#define PDK_STORE_LOCK_FILE "store.lock"
#define PDK_STORE_BUSY_MS   5000

typedef struct pdk_store pdk_store;

/* Open (creating when create is true) STATE/paddock.db and its schema. A store of a newer
 * schema than this paddock knows is refused. */
int pdk_store_open(const char *state_dir, bool create, pdk_store **out, pdk_error *err);
void pdk_store_close(pdk_store *store);

sqlite3 *pdk_store_db(const pdk_store *store);
const char *pdk_store_path(const pdk_store *store);
const char *pdk_store_state_dir(const pdk_store *store);

/* Take the store's lock: an fd to close to release it, or -1 with err. Not reentrant: a
 * holder must not take it again. */
int pdk_store_lock(pdk_store *store, pdk_error *err);

/* BEGIN IMMEDIATE (the write lock, waited for), COMMIT, ROLLBACK. The errors name the
 * store and, when the lock is held too long, the process holding it. */
int pdk_store_begin(pdk_store *store, pdk_error *err);
int pdk_store_commit(pdk_store *store, pdk_error *err);
void pdk_store_rollback(pdk_store *store);

/* An error for the last failed SQLite call on the store: "what: message (path)". */
int pdk_store_error(pdk_store *store, pdk_error *err, const char *what);

#endif
