/* audit.c: see audit.h. */
#include "audit.h"

#include "fsutil.h"
#include "redact.h"
#include "store_sqlite.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GENESIS_HASH "0000000000000000000000000000000000000000000000000000000000000000"

/* ---- redaction (redact.c) ---- */

/* Redact every string (keys included) of a JSON value, in place; returns v, or a
 * replacement (the original released). */
static json_t *redact_json(json_t *v)
{
    if (json_is_string(v)) {
        char *r = pdk_redact_text(json_string_value(v));
        if (!r)
            return v;
        json_t *n = json_string(r);
        free(r);
        json_decref(v);
        return n;
    }
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            json_array_set_new(v, i, redact_json(json_incref(json_array_get(v, i))));
        return v;
    }
    if (json_is_object(v)) {
        json_t *out = json_object();
        const char *key;
        json_t *val;
        json_object_foreach(v, key, val)
        {
            char *rk = pdk_redact_text(key);
            json_object_set_new(out, rk ? rk : key, redact_json(json_incref(val)));
            free(rk);
        }
        json_decref(v);
        return out;
    }
    return v;
}

/* ---- the chain ---- */

/* The JSON text of a string or null (new string). */
static char *json_str_or_null(const char *s)
{
    json_t *v = s ? json_string(s) : json_null();
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(v);
    return t ? t : xstrdup("null");
}

static void chain_hash(const char *prev, int64_t seq, int64_t time_ns, const char *session,
                       const char *kind, const char *data, char out[65])
{
    _cleanup_free_ char *js = json_str_or_null(session);
    _cleanup_free_ char *jk = json_str_or_null(kind);
    pdk_buf b = {0};
    pdk_buf_printf(&b, "%s\n%" PRId64 "\n%" PRId64 "\n%s\n%s\n%s", prev, seq, time_ns, js, jk,
                   data);
    pdk_sha256_hex(b.data, b.len, out);
    pdk_buf_free(&b);
}

static int read_head(pdk_store *store, int64_t *seq, char hash[65], pdk_error *err)
{
    sqlite3_stmt *st = NULL;
    *seq = 0;
    snprintf(hash, 65, "%s", GENESIS_HASH);
    if (sqlite3_prepare_v2(pdk_store_db(store),
                           "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1", -1, &st,
                           NULL) != SQLITE_OK)
        return pdk_store_error(store, err, "reading the audit log");
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        *seq = sqlite3_column_int64(st, 0);
        const unsigned char *h = sqlite3_column_text(st, 1);
        snprintf(hash, 65, "%s", h ? (const char *)h : "");
    }
    sqlite3_finalize(st);
    if (r != SQLITE_ROW && r != SQLITE_DONE)
        return pdk_store_error(store, err, "reading the audit log");
    return 0;
}

/* Append inside the caller's transaction. */
static int append_in_tx(pdk_store *store, pdk_audit_item *items, size_t count, pdk_error *err)
{
    sqlite3 *db = pdk_store_db(store);
    sqlite3_stmt *ins = NULL, *head = NULL;
    int ret = -1;
    int64_t seq;
    char prev[65];
    if (read_head(store, &seq, prev, err) < 0)
        goto out;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO audit (seq, time_ns, session, kind, data, prev_hash, "
                           "hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
                           -1, &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT INTO meta (key, value) VALUES ('audit_head', ?) ON CONFLICT "
                           "(key) DO UPDATE SET value = excluded.value",
                           -1, &head, NULL) != SQLITE_OK) {
        pdk_store_error(store, err, "writing to the audit log");
        goto out;
    }
    for (size_t i = 0; i < count; i++) {
        json_t *data = items[i].data ? items[i].data : json_object();
        items[i].data = NULL;
        data = redact_json(data);
        char *text = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(data);
        _cleanup_free_ char *session = pdk_redact_text(items[i].session);
        _cleanup_free_ char *kind = pdk_redact_text(items[i].kind);
        const char *s = session ? session : items[i].session;
        const char *k = kind ? kind : items[i].kind;
        int64_t t = items[i].time_ns > 0 ? items[i].time_ns : pdk_now_realtime_ns();
        char hash[65];
        seq++;
        chain_hash(prev, seq, t, s, k, text ? text : "{}", hash);
        sqlite3_reset(ins);
        sqlite3_bind_int64(ins, 1, seq);
        sqlite3_bind_int64(ins, 2, t);
        if (s)
            sqlite3_bind_text(ins, 3, s, -1, SQLITE_TRANSIENT);
        else
            sqlite3_bind_null(ins, 3);
        sqlite3_bind_text(ins, 4, k, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(ins, 5, text ? text : "{}", -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(ins, 6, prev, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(ins, 7, hash, -1, SQLITE_TRANSIENT);
        int r = sqlite3_step(ins);
        free(text);
        if (r != SQLITE_DONE) {
            pdk_store_error(store, err, "writing to the audit log");
            goto out;
        }
        memcpy(prev, hash, sizeof(prev));
    }
    char headval[96];
    snprintf(headval, sizeof(headval), "%" PRId64 " %s", seq, prev);
    sqlite3_bind_text(head, 1, headval, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(head) != SQLITE_DONE) {
        pdk_store_error(store, err, "writing to the audit log");
        goto out;
    }
    ret = 0;
out:
    for (size_t i = 0; i < count; i++) {
        json_decref(items[i].data);
        items[i].data = NULL;
    }
    sqlite3_finalize(ins);
    sqlite3_finalize(head);
    return ret;
}

int pdk_audit_append_batch(pdk_store *store, pdk_audit_item *items, size_t count, pdk_error *err)
{
    if (pdk_store_begin(store, err) < 0) {
        for (size_t i = 0; i < count; i++) {
            json_decref(items[i].data);
            items[i].data = NULL;
        }
        return -1;
    }
    if (append_in_tx(store, items, count, err) < 0) {
        pdk_store_rollback(store);
        return -1;
    }
    return pdk_store_commit(store, err);
}

int pdk_audit_append(pdk_store *store, const char *session, const char *kind, json_t *data,
                     pdk_error *err)
{
    pdk_audit_item item = {.session = session, .kind = kind, .data = data};
    return pdk_audit_append_batch(store, &item, 1, err);
}

static const char *text_col(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

int pdk_audit_each(pdk_store *store, const pdk_audit_filter *filter,
                   int (*fn)(const pdk_audit_event *event, void *arg), void *arg, pdk_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(pdk_store_db(store),
                           "SELECT seq, time_ns, session, kind, data, prev_hash, hash FROM audit "
                           "WHERE seq > ?1 AND (?2 IS NULL OR session = ?2) AND time_ns >= ?3 "
                           "ORDER BY seq",
                           -1, &st, NULL) != SQLITE_OK)
        return pdk_store_error(store, err, "reading the audit log");
    sqlite3_bind_int64(st, 1, filter ? filter->after_seq : 0);
    if (filter && filter->session)
        sqlite3_bind_text(st, 2, filter->session, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 2);
    sqlite3_bind_int64(st, 3, filter ? filter->since_ns : 0);
    int r, ret = 0;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        pdk_audit_event e = {
            .seq = sqlite3_column_int64(st, 0),
            .time_ns = sqlite3_column_int64(st, 1),
            .session = text_col(st, 2),
            .kind = text_col(st, 3),
            .data = text_col(st, 4),
            .prev_hash = text_col(st, 5),
            .hash = text_col(st, 6),
        };
        if (!e.kind)
            e.kind = "";
        if (!e.data)
            e.data = "{}";
        ret = fn(&e, arg);
        if (ret != 0)
            break;
    }
    if (r != SQLITE_ROW && r != SQLITE_DONE) {
        sqlite3_finalize(st);
        return pdk_store_error(store, err, "reading the audit log");
    }
    sqlite3_finalize(st);
    return ret;
}

json_t *pdk_audit_event_json(const pdk_audit_event *e)
{
    json_error_t jerr;
    json_t *data = json_loads(e->data, JSON_DECODE_ANY, &jerr);
    if (!data)
        data = json_string(e->data);
    time_t secs = (time_t)(e->time_ns / 1000000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char when[64];
    snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(e->time_ns % 1000000000 / 1000));
    json_t *o = json_object();
    json_object_set_new(o, "seq", json_integer(e->seq));
    json_object_set_new(o, "time", json_string(when));
    json_object_set_new(o, "time_ns", json_integer(e->time_ns));
    json_object_set_new(o, "session", e->session ? json_string(e->session) : json_null());
    json_object_set_new(o, "kind", json_string(e->kind));
    json_object_set_new(o, "data", data);
    json_object_set_new(o, "hash", json_string(e->hash ? e->hash : ""));
    return o;
}

/* ---- verification ---- */

typedef struct verify_state {
    pdk_audit_verdict *v;
    int64_t expect_seq;
    char prev[65];
} verify_state;

static int verify_row(const pdk_audit_event *e, void *arg)
{
    verify_state *vs = arg;
    pdk_audit_verdict *v = vs->v;
    v->rows++;
    if (e->seq != vs->expect_seq) {
        v->bad_seq = vs->expect_seq;
        if (e->seq > vs->expect_seq)
            snprintf(v->problem, sizeof(v->problem),
                     "row %" PRId64 " is missing: the log goes on at row %" PRId64
                     " (rows were deleted)",
                     vs->expect_seq, e->seq);
        else
            snprintf(v->problem, sizeof(v->problem), "row %" PRId64 " is out of order", e->seq);
        return 1;
    }
    if (!e->prev_hash || strcmp(e->prev_hash, vs->prev) != 0) {
        v->bad_seq = e->seq;
        snprintf(v->problem, sizeof(v->problem),
                 "row %" PRId64 " does not follow row %" PRId64
                 " (its previous-hash differs: rows were edited, swapped or replaced)",
                 e->seq, e->seq - 1);
        return 1;
    }
    char h[65];
    chain_hash(vs->prev, e->seq, e->time_ns, e->session, e->kind, e->data, h);
    if (!e->hash || strcmp(h, e->hash) != 0) {
        v->bad_seq = e->seq;
        snprintf(v->problem, sizeof(v->problem),
                 "row %" PRId64 " was edited (its content does not match its hash)", e->seq);
        return 1;
    }
    memcpy(vs->prev, h, sizeof(vs->prev));
    vs->expect_seq++;
    return 0;
}

int pdk_audit_verify(pdk_store *store, pdk_audit_verdict *v, pdk_error *err)
{
    memset(v, 0, sizeof(*v));
    verify_state vs = {.v = v, .expect_seq = 1};
    snprintf(vs.prev, sizeof(vs.prev), "%s", GENESIS_HASH);
    int r = pdk_audit_each(store, NULL, verify_row, &vs, err);
    if (r < 0)
        return -1;
    if (r > 0)
        return 0;
    /* The head written with the last append: rows deleted at the end. */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(pdk_store_db(store), "SELECT value FROM meta WHERE key = 'audit_head'",
                           -1, &st, NULL) != SQLITE_OK)
        return pdk_store_error(store, err, "reading the audit log");
    int64_t head_seq = 0;
    char head_hash[65] = "";
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *val = text_col(st, 0);
        if (!val || sscanf(val, "%" SCNd64 " %64s", &head_seq, head_hash) != 2)
            head_seq = -1;
    }
    sqlite3_finalize(st);
    int64_t last = vs.expect_seq - 1;
    if (head_seq < 0 || (head_seq == 0 && last > 0)) {
        v->bad_seq = last + 1;
        snprintf(v->problem, sizeof(v->problem),
                 "the log's recorded end is missing or damaged (the meta table was edited)");
        return 0;
    }
    if (head_seq > last) {
        v->bad_seq = last + 1;
        snprintf(v->problem, sizeof(v->problem),
                 "rows %" PRId64 " to %" PRId64 " are missing (deleted from the end)", last + 1,
                 head_seq);
        return 0;
    }
    if (head_seq < last || (last > 0 && strcmp(head_hash, vs.prev) != 0)) {
        v->bad_seq = head_seq + 1;
        snprintf(v->problem, sizeof(v->problem),
                 "row %" PRId64 " on does not match the log's recorded end (rows were added or "
                 "replaced outside paddock)",
                 head_seq + 1);
        return 0;
    }
    v->intact = true;
    return 0;
}

/* ---- the spool ---- */

#define SPOOL_DIR "audit-spool"

struct pdk_audit_spool {
    pthread_mutex_t lock; /* the exec listener's thread writes too */
    char *dir;
    char *path;
    int fd; /* -1 until the first write */
    char prev[65];
};

int pdk_audit_spool_open(const char *state_dir, pdk_audit_spool **out, pdk_error *err)
{
    pdk_audit_spool *sp = xcalloc(1, sizeof(*sp));
    pthread_mutex_init(&sp->lock, NULL);
    sp->dir = pdk_path_join(state_dir, SPOOL_DIR);
    sp->fd = -1;
    snprintf(sp->prev, sizeof(sp->prev), "%s", GENESIS_HASH);
    *out = sp;
    (void)err;
    return 0;
}

/* The file is made at the first write: a run that records nothing leaves nothing. */
static int spool_create(pdk_audit_spool *sp, pdk_error *err)
{
    if (mkdir(sp->dir, 0700) < 0 && errno != EEXIST)
        return pdk_error_set(err, errno, "cannot create the audit spool %s", sp->dir);
    for (int attempt = 0; attempt < 100; attempt++) {
        free(sp->path);
        sp->path = xasprintf("%s/%019" PRId64 "-%d-%d.jsonl", sp->dir, pdk_now_realtime_ns(),
                             (int)getpid(), attempt);
        sp->fd =
            open(sp->path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (sp->fd >= 0)
            break;
        if (errno != EEXIST)
            return pdk_error_set(err, errno, "cannot create an audit spool file in %s", sp->dir);
    }
    if (sp->fd < 0)
        return pdk_error_set(err, EEXIST, "cannot create an audit spool file in %s", sp->dir);
    /* Held while this process writes: the fold removes the file only once it is free. */
    if (flock(sp->fd, LOCK_EX | LOCK_NB) < 0)
        return pdk_error_set(err, errno, "cannot lock the audit spool file %s", sp->path);
    return 0;
}

/* The line of a spooled event (new string, newline included). */
static char *spool_line(const char *prev, int64_t t, const char *session, const char *kind,
                        const char *data, char hash[65])
{
    /* Written out directly (the data is canonical JSON already): keys in sorted order. */
    chain_hash(prev, 0, t, session, kind, data, hash);
    _cleanup_free_ char *js = json_str_or_null(session);
    _cleanup_free_ char *jk = json_str_or_null(kind);
    return xasprintf("{\"data\":%s,\"hash\":\"%s\",\"kind\":%s,\"prev\":\"%s\",\"session\":%s,"
                     "\"time_ns\":%" PRId64 "}\n",
                     data, hash, jk, prev, js, t);
}

int pdk_audit_spool_write(pdk_audit_spool *sp, const char *session, const char *kind, json_t *data,
                          bool durable, pdk_error *err)
{
    json_t *d = redact_json(data ? data : json_object());
    char *text = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(d);
    if (!text)
        return pdk_error_set(err, ENOMEM, "cannot encode an audit event");
    _cleanup_free_ char *rs = pdk_redact_text(session);
    _cleanup_free_ char *rk = pdk_redact_text(kind);
    char hash[65];
    int ret = 0;
    pthread_mutex_lock(&sp->lock);
    _cleanup_free_ char *line =
        spool_line(sp->prev, pdk_now_realtime_ns(), rs ? rs : session, rk ? rk : kind, text, hash);
    free(text);
    if (sp->fd < 0 && spool_create(sp, err) < 0)
        ret = -1;
    else if (pdk_write_all(sp->fd, line, strlen(line)) < 0 || (durable && fdatasync(sp->fd) < 0))
        ret = pdk_error_set(err, errno, "cannot write to the audit spool %s", sp->path);
    else
        memcpy(sp->prev, hash, sizeof(sp->prev));
    pthread_mutex_unlock(&sp->lock);
    return ret;
}

void pdk_audit_spool_close(pdk_audit_spool *sp)
{
    if (!sp)
        return;
    if (sp->fd >= 0)
        close(sp->fd);
    pthread_mutex_destroy(&sp->lock);
    free(sp->path);
    free(sp->dir);
    free(sp);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct spool_progress {
    int64_t offset;
    char last_hash[65];
} spool_progress;

static int read_progress(pdk_store *store, const char *name, spool_progress *p, pdk_error *err)
{
    p->offset = 0;
    snprintf(p->last_hash, sizeof(p->last_hash), "%s", GENESIS_HASH);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(pdk_store_db(store),
                           "SELECT offset, last_hash FROM spool WHERE name = ?", -1, &st,
                           NULL) != SQLITE_OK)
        return pdk_store_error(store, err, "reading the audit spool's progress");
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW) {
        p->offset = sqlite3_column_int64(st, 0);
        const char *h = text_col(st, 1);
        snprintf(p->last_hash, sizeof(p->last_hash), "%s", h ? h : "");
    }
    sqlite3_finalize(st);
    return 0;
}

static int write_progress(pdk_store *store, const char *name, const spool_progress *p,
                          pdk_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(pdk_store_db(store),
                           "INSERT INTO spool (name, offset, last_hash) VALUES (?1, ?2, ?3) ON "
                           "CONFLICT (name) DO UPDATE SET offset = ?2, last_hash = ?3",
                           -1, &st, NULL) != SQLITE_OK)
        return pdk_store_error(store, err, "recording the audit spool's progress");
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, p->offset);
    sqlite3_bind_text(st, 3, p->last_hash, -1, SQLITE_TRANSIENT);
    int r = sqlite3_step(st);
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        return pdk_store_error(store, err, "recording the audit spool's progress");
    return 0;
}

static void forget_progress(pdk_store *store, const char *name)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(pdk_store_db(store), "DELETE FROM spool WHERE name = ?", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
        sqlite3_step(st);
    }
    sqlite3_finalize(st);
}

bool pdk__audit_spool_parse_line(const char *line, const char *prev, pdk_audit_item *item,
                                 char hash_out[65], json_t **owner)
{
    json_error_t jerr;
    json_t *o = json_loads(line, 0, &jerr);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        return false;
    }
    json_t *jt = json_object_get(o, "time_ns"), *js = json_object_get(o, "session");
    json_t *jk = json_object_get(o, "kind"), *jd = json_object_get(o, "data");
    const char *p = json_string_value(json_object_get(o, "prev"));
    const char *h = json_string_value(json_object_get(o, "hash"));
    if (!json_is_integer(jt) || !json_is_string(jk) || !json_is_object(jd) || !p || !h ||
        (!json_is_string(js) && !json_is_null(js)) || strcmp(p, prev) != 0) {
        json_decref(o);
        return false;
    }
    char *data = json_dumps(jd, JSON_COMPACT | JSON_SORT_KEYS);
    char check[65];
    chain_hash(prev, 0, json_integer_value(jt), json_string_value(js), json_string_value(jk),
               data ? data : "{}", check);
    free(data);
    if (strcmp(check, h) != 0) {
        json_decref(o);
        return false;
    }
    memcpy(hash_out, check, 65);
    item->time_ns = json_integer_value(jt);
    item->session = json_string_value(js);
    item->kind = json_string_value(jk);
    item->data = json_incref(jd);
    *owner = o;
    return true;
}

/* Fold one spool file; returns the events folded, or -1. */
static int fold_file(pdk_store *store, int dirfd, const char *name, pdk_error *err)
{
    /* (never a fifo or a device: opening one would wait, or worse) */
    _cleanup_close_ int fd = pdk_open_regular_at(dirfd, name, O_RDONLY, 0);
    if (fd < 0 && (errno == ENXIO || errno == EISDIR || errno == ELOOP))
        return pdk_error_set(err, 0,
                             "the audit spool %s is not a regular file, so not paddock's (remove "
                             "it)",
                             name);
    if (fd < 0)
        return errno == ENOENT ? 0
                               : pdk_error_set(err, errno, "cannot open the audit spool %s", name);
    bool finished = flock(fd, LOCK_EX | LOCK_NB) == 0;
    spool_progress prog;
    if (read_progress(store, name, &prog, err) < 0)
        return -1;
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    if (pdk_read_all(fd, &text, &len, 256u << 20) < 0)
        return pdk_error_set(err, errno, "cannot read the audit spool %s", name);
    if ((size_t)prog.offset > len)
        prog.offset = (int64_t)len; /* truncated under us: what was folded stays */
    pdk_audit_item *items = NULL;
    json_t **owners = NULL;
    size_t n = 0;
    bool damaged = false;
    size_t pos = (size_t)prog.offset;
    while (pos < len) {
        char *nl = memchr(text + pos, '\n', len - pos);
        if (!nl)
            break; /* a line being written */
        *nl = '\0';
        pdk_audit_item item = {0};
        json_t *owner = NULL;
        char hash[65];
        if (!pdk__audit_spool_parse_line(text + pos, prog.last_hash, &item, hash, &owner)) {
            damaged = true;
            break;
        }
        items = xrealloc(items, (n + 1) * sizeof(*items));
        owners = xrealloc(owners, (n + 1) * sizeof(*owners));
        items[n] = item;
        owners[n] = owner;
        n++;
        memcpy(prog.last_hash, hash, sizeof(prog.last_hash));
        pos = (size_t)(nl - text) + 1;
    }
    if (damaged) {
        items = xrealloc(items, (n + 1) * sizeof(*items));
        owners = xrealloc(owners, (n + 1) * sizeof(*owners));
        owners[n] = NULL;
        items[n] = (pdk_audit_item){
            .kind = "audit.spool_damaged",
            .data = json_pack("{s:s, s:I}", "file", name, "offset", (json_int_t)pos),
        };
        n++;
    }
    prog.offset = (int64_t)pos;
    int ret = -1;
    /* The events and how far the file is folded, in one transaction: a crash between the
     * two never folds a line twice. */
    if (pdk_store_begin(store, err) < 0)
        goto out;
    if ((n > 0 && append_in_tx(store, items, n, err) < 0) ||
        write_progress(store, name, &prog, err) < 0 || pdk_store_commit(store, err) < 0) {
        pdk_store_rollback(store);
        goto out;
    }
    ret = (int)n;
    if (damaged) {
        _cleanup_free_ char *to = xasprintf("%s.damaged", name);
        renameat(dirfd, name, dirfd, to);
        forget_progress(store, name);
    } else if (finished && pos == len) {
        unlinkat(dirfd, name, 0);
        forget_progress(store, name);
    }
out:
    for (size_t i = 0; i < n; i++)
        json_decref(owners[i]);
    free(owners);
    free(items);
    return ret;
}

int pdk_audit_fold(pdk_store *store, const char *state_dir, pdk_error *err)
{
    _cleanup_free_ char *dir = pdk_path_join(state_dir, SPOOL_DIR);
    _cleanup_closedir_ DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0
                               : pdk_error_set(err, errno, "cannot read the audit spool %s", dir);
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l > 6 && strcmp(de->d_name + l - 6, ".jsonl") == 0) {
            pdk_strv_push(&names, de->d_name);
            n++;
        }
    }
    if (n > 1)
        qsort(names, n, sizeof(*names), compare_names);
    int total = 0;
    for (size_t i = 0; i < n; i++) {
        int r = fold_file(store, dirfd(d), names[i], err);
        if (r < 0) {
            pdk_strv_free(names);
            return -1;
        }
        total += r;
    }
    pdk_strv_free(names);
    return total;
}
