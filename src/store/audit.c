/* audit.c: see audit.h. */
#include "audit.h"

#include "fsutil.h"
#include "log.h"
#include "redact.h"
#include "store_sqlite.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/inotify.h>
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

/* Append in a transaction of its own, leaving the recorded end where it is. */
static int append_committed(pdk_store *store, pdk_audit_item *items, size_t count, pdk_error *err)
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

static void advance_recorded_end(pdk_store *store);

int pdk_audit_append_batch(pdk_store *store, pdk_audit_item *items, size_t count, pdk_error *err)
{
    if (append_committed(store, items, count, err) < 0)
        return -1;
    advance_recorded_end(store);
    return 0;
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

/* ---- the recorded end (STATE/audit-head) ----
 *
 * The last row the log is known to have reached, moved after rows are committed, under the
 * store's lock, and only forward: when the log still holds the row recorded there with its
 * hash. A log that does not (rows deleted from its end, others appended since) leaves it
 * where it was, so that verify fails until a human acknowledges it
 * (pdk_audit_acknowledge_truncation).
 *
 * The file is two slots of HEAD_SLOT_SIZE bytes, each in a sector of its own:
 *
 *     "paddock-audit-head GEN SEQ HASH CHECK\n" and NULs to the end of the slot
 *
 * GEN counts the writes (slot GEN % 2 holds write GEN), CHECK is the SHA-256 (hex) of the
 * line before " CHECK". The valid slot with the higher GEN is the recorded end. A write
 * goes in place into the other slot (pwrite, fdatasync: the file's size never changes, so
 * nothing but the slot's data has to reach the disk), which leaves the newer end whole
 * until the new one is: a crash that tears the slot being written leaves the one before,
 * never a torn or an older end. The file is made (synced, renamed into place, its
 * directory synced) only when there is none, or when it holds the single line "SEQ HASH\n"
 * of earlier versions (read as such until then). */

#define HEAD_FILE      "audit-head"
#define HEAD_MAGIC     "paddock-audit-head"
#define HEAD_SLOT_SIZE 512

typedef struct audit_end {
    int64_t seq;
    char hash[65];
} audit_end;

/* What audit-head holds: the end, and what the next write needs. */
typedef struct recorded_head {
    audit_end end;
    uint64_t gen; /* of the slot the end is from; 0: the earlier single line */
} recorded_head;

/* The row the log ends with (seq 0 and the genesis hash when it is empty). */
static int read_log_end(pdk_store *store, audit_end *end, pdk_error *err)
{
    return read_head(store, &end->seq, end->hash, err);
}

/* Slot text for write gen of end, NUL-padded to HEAD_SLOT_SIZE. */
static void format_slot(uint64_t gen, const audit_end *end, char slot[HEAD_SLOT_SIZE])
{
    memset(slot, 0, HEAD_SLOT_SIZE);
    int len = snprintf(slot, HEAD_SLOT_SIZE, HEAD_MAGIC " %" PRIu64 " %" PRId64 " %s", gen,
                       end->seq, end->hash);
    char check[65];
    pdk_sha256_hex(slot, (size_t)len, check);
    snprintf(slot + len, HEAD_SLOT_SIZE - (size_t)len, " %s\n", check);
}

/* Whether slot holds a whole write (exactly what format_slot makes of what it says): *gen
 * and *end from it. */
static bool parse_slot(const char *slot, uint64_t *gen, audit_end *end)
{
    char text[HEAD_SLOT_SIZE + 1];
    memcpy(text, slot, HEAD_SLOT_SIZE);
    text[HEAD_SLOT_SIZE] = '\0';
    if (sscanf(text, HEAD_MAGIC " %" SCNu64 " %" SCNd64 " %64[0-9a-f]", gen, &end->seq,
               end->hash) != 3 ||
        *gen == 0 || end->seq < 0 || strlen(end->hash) != 64)
        return false;
    char want[HEAD_SLOT_SIZE];
    format_slot(*gen, end, want);
    return memcmp(want, slot, HEAD_SLOT_SIZE) == 0;
}

/* 1 with *head, 0 when nothing is recorded yet, -1 with err (unreadable or damaged). */
static int read_recorded_end(pdk_store *store, recorded_head *head, pdk_error *err)
{
    _cleanup_close_ int dir = open(pdk_store_state_dir(store), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return pdk_error_set(err, errno, "cannot open the state dir %s",
                             pdk_store_state_dir(store));
    _cleanup_close_ int fd = pdk_open_regular_beneath(dir, HEAD_FILE);
    if (fd < 0 && errno == ENOENT)
        return 0;
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    if (fd < 0 || pdk_read_all(fd, &text, &len, 2 * HEAD_SLOT_SIZE) < 0)
        return pdk_error_set(err, errno, "cannot read the audit log's recorded end %s/%s",
                             pdk_store_state_dir(store), HEAD_FILE);
    if (len == 2 * HEAD_SLOT_SIZE) {
        recorded_head slot[2] = {0};
        bool valid[2];
        for (int i = 0; i < 2; i++)
            valid[i] = parse_slot(text + i * HEAD_SLOT_SIZE, &slot[i].gen, &slot[i].end) &&
                       slot[i].gen % 2 == (uint64_t)i;
        if (valid[0] || valid[1]) {
            int newer = !valid[0] ? 1 : !valid[1] ? 0 : slot[1].gen > slot[0].gen;
            *head = slot[newer];
            return 1;
        }
    } else { /* the single line of earlier versions */
        int consumed = 0;
        head->gen = 0;
        if (memchr(text, '\0', len) == NULL &&
            sscanf(text, "%" SCNd64 " %64[0-9a-f]%n", &head->end.seq, head->end.hash, &consumed) ==
                2 &&
            head->end.seq >= 0 && strlen(head->end.hash) == 64 &&
            strcmp(text + consumed, "\n") == 0)
            return 1;
    }
    return pdk_error_set(err, 0, "the audit log's recorded end %s/%s is damaged",
                         pdk_store_state_dir(store), HEAD_FILE);
}

/* Record end as the next write after head (NULL: none, or one that is not kept: the file is
 * made anew). */
static int write_recorded_end(pdk_store *store, const recorded_head *head, const audit_end *end,
                              pdk_error *err)
{
    _cleanup_close_ int dir = open(pdk_store_state_dir(store), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return pdk_error_set(err, errno, "cannot record the audit log's end in %s/%s",
                             pdk_store_state_dir(store), HEAD_FILE);
    char slot[HEAD_SLOT_SIZE];
    if (head && head->gen > 0) {
        /* In place, into the slot the newer end is not in. */
        uint64_t gen = head->gen + 1;
        format_slot(gen, end, slot);
        _cleanup_close_ int fd =
            openat(dir, HEAD_FILE, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            st.st_size == 2 * HEAD_SLOT_SIZE) {
            if (pwrite(fd, slot, sizeof(slot), (off_t)(gen % 2) * HEAD_SLOT_SIZE) !=
                    (ssize_t)sizeof(slot) ||
                fdatasync(fd) < 0)
                return pdk_error_set(err, errno, "cannot record the audit log's end in %s/%s",
                                     pdk_store_state_dir(store), HEAD_FILE);
            return 0;
        }
        /* (replaced since it was read: made anew, below) */
    }
    /* Made: write 1 in slot 1 and slot 0 empty (no end there yet). */
    char file[2 * HEAD_SLOT_SIZE];
    memset(file, 0, HEAD_SLOT_SIZE);
    format_slot(1, end, slot);
    memcpy(file + HEAD_SLOT_SIZE, slot, HEAD_SLOT_SIZE);
    if (pdk_write_file_atomic(dir, HEAD_FILE, file, sizeof(file), 0600, true) < 0)
        return pdk_error_set(err, errno, "cannot record the audit log's end in %s/%s",
                             pdk_store_state_dir(store), HEAD_FILE);
    return 0;
}

/* Whether the log still holds the recorded end: 1 it does, 0 it was cut (problem says how),
 * -1 with err. */
static int holds_recorded_end(pdk_store *store, const audit_end *last, const audit_end *recorded,
                              char *problem, size_t size, int64_t *bad_seq, pdk_error *err)
{
    if (recorded->seq == 0)
        return 1;
    if (recorded->seq > last->seq) {
        *bad_seq = last->seq + 1;
        snprintf(problem, size,
                 "the log was cut: it reached row %" PRId64 " (as %s records) and ends at row "
                 "%" PRId64 " now; find out why, then run paddock audit acknowledge-truncation",
                 recorded->seq, HEAD_FILE, last->seq);
        return 0;
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(pdk_store_db(store), "SELECT hash FROM audit WHERE seq = ?", -1, &st,
                           NULL) != SQLITE_OK)
        return pdk_store_error(store, err, "reading the audit log");
    sqlite3_bind_int64(st, 1, recorded->seq);
    int r = sqlite3_step(st);
    bool same = r == SQLITE_ROW && sqlite3_column_text(st, 0) &&
                strcmp((const char *)sqlite3_column_text(st, 0), recorded->hash) == 0;
    sqlite3_finalize(st);
    if (r != SQLITE_ROW && r != SQLITE_DONE)
        return pdk_store_error(store, err, "reading the audit log");
    if (same)
        return 1;
    *bad_seq = recorded->seq;
    snprintf(problem, size,
             "the log was cut and written on: row %" PRId64 " is not the row %s records (rows "
             "were deleted from its end, others added); find out why, then run paddock audit "
             "acknowledge-truncation",
             recorded->seq, HEAD_FILE);
    return 0;
}

/* After rows were committed: the recorded end moves to the log's end, when the log still
 * holds it. A failure leaves it behind (the next append moves it), with a warning: the
 * rows are in. */
static void advance_recorded_end(pdk_store *store)
{
    pdk_error err = {0};
    _cleanup_close_ int lock = pdk_store_lock(store, &err);
    audit_end last;
    recorded_head recorded = {0};
    if (lock < 0 || read_log_end(store, &last, &err) < 0)
        goto warn;
    int r = read_recorded_end(store, &recorded, &err);
    if (r < 0)
        return; /* unreadable or damaged: it stays so, and verify says it */
    if (r == 1) {
        if (recorded.end.seq >= last.seq)
            return; /* at the end already (or ahead of it: cut, and verify says it) */
        char problem[512];
        int64_t bad_seq = 0;
        int holds = holds_recorded_end(store, &last, &recorded.end, problem, sizeof(problem),
                                       &bad_seq, &err);
        if (holds < 0)
            goto warn;
        if (holds == 0)
            return; /* cut: it stays where the log was cut, until acknowledged */
    }
    if (last.seq == 0 || write_recorded_end(store, r == 1 ? &recorded : NULL, &last, &err) == 0)
        return;
warn:
    pdk_warn("%s (the events are in the log; its end is recorded with the next ones)", err.message);
}

int pdk_audit_check_end(pdk_store *store, char *problem, size_t size, pdk_error *err)
{
    audit_end last;
    recorded_head recorded;
    int64_t bad_seq = 0;
    if (read_log_end(store, &last, err) < 0)
        return -1;
    pdk_error read_err = {0};
    int r = read_recorded_end(store, &recorded, &read_err);
    if (r < 0) {
        snprintf(problem, size,
                 "%.400s: find out why, then run paddock audit acknowledge-truncation",
                 read_err.message);
        return 1;
    }
    if (r == 0)
        return 0;
    r = holds_recorded_end(store, &last, &recorded.end, problem, size, &bad_seq, err);
    return r < 0 ? -1 : r == 1 ? 0 : 1;
}

/* The first row that repeats an earlier one (same time, session, kind and data: an event
 * recorded twice), 0 when none. */
static int find_repeat(pdk_store *store, int64_t *seq, int64_t *first, pdk_error *err)
{
    sqlite3_stmt *st = NULL;
    *seq = *first = 0;
    if (sqlite3_prepare_v2(pdk_store_db(store),
                           "SELECT b.seq, min(a.seq) FROM audit b JOIN audit a ON a.time_ns = "
                           "b.time_ns AND a.seq < b.seq AND a.kind = b.kind AND a.data = b.data "
                           "AND a.session IS b.session GROUP BY b.seq ORDER BY b.seq LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return pdk_store_error(store, err, "reading the audit log");
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        *seq = sqlite3_column_int64(st, 0);
        *first = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (r != SQLITE_ROW && r != SQLITE_DONE)
        return pdk_store_error(store, err, "reading the audit log");
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
    /* An event recorded twice (two readers folding the same spool, before paddock folded
     * under the write lock) chains like any other: found by its content. */
    int64_t repeat = 0, first = 0;
    if (find_repeat(store, &repeat, &first, err) < 0)
        return -1;
    if (repeat > 0) {
        v->bad_seq = repeat;
        snprintf(v->problem, sizeof(v->problem),
                 "row %" PRId64 " repeats row %" PRId64
                 " (the same event recorded twice: the spool was folded twice)",
                 repeat, first);
        return 0;
    }
    /* The end recorded outside the table: rows deleted from the end and the chain
     * continued from there look intact in the table alone. */
    audit_end log_end = {.seq = last};
    recorded_head recorded;
    memcpy(log_end.hash, vs.prev, sizeof(log_end.hash));
    pdk_error read_err = {0};
    r = read_recorded_end(store, &recorded, &read_err);
    if (r < 0) {
        v->bad_seq = last + 1;
        snprintf(v->problem, sizeof(v->problem),
                 "%.400s: find out why, then run paddock audit acknowledge-truncation",
                 read_err.message);
        return 0;
    }
    if (r == 1) {
        r = holds_recorded_end(store, &log_end, &recorded.end, v->problem, sizeof(v->problem),
                               &v->bad_seq, err);
        if (r < 0)
            return -1;
        if (r == 0)
            return 0;
    }
    if (r == 0 || recorded.end.seq < last)
        advance_recorded_end(store); /* none yet (a log older than the file): from now on */
    v->intact = true;
    return 0;
}

int pdk_audit_acknowledge_truncation(pdk_store *store, const char *by,
                                     pdk_audit_acknowledgement *out, pdk_error *err)
{
    memset(out, 0, sizeof(*out));
    _cleanup_close_ int lock = pdk_store_lock(store, err);
    if (lock < 0)
        return -1;
    audit_end last;
    recorded_head recorded = {0};
    if (read_log_end(store, &last, err) < 0)
        return -1;
    pdk_error read_err = {0};
    int r = read_recorded_end(store, &recorded, &read_err);
    bool readable = r == 1;
    int64_t bad_seq = 0;
    if (r == 1) {
        r = holds_recorded_end(store, &last, &recorded.end, out->problem, sizeof(out->problem),
                               &bad_seq, err);
        if (r < 0)
            return -1;
        if (r == 1)
            return 0; /* nothing to acknowledge */
    } else if (r == 0) {
        return 0;
    } else {
        snprintf(out->problem, sizeof(out->problem), "%.400s", read_err.message);
        recorded.end.seq = -1;
    }
    out->acknowledged = true;
    out->recorded_seq = recorded.end.seq;
    out->found_seq = last.seq;
    json_t *data =
        json_pack("{s:s, s:s, s:{s:I, s:s}}", "by", by ? by : "", "problem", out->problem,
                  "found_end", "seq", (json_int_t)last.seq, "hash", last.hash);
    json_object_set_new(data, "recorded_end",
                        recorded.end.seq < 0
                            ? json_null()
                            : json_pack("{s:I, s:s}", "seq", (json_int_t)recorded.end.seq, "hash",
                                        recorded.end.hash));
    pdk_audit_item item = {.kind = "audit.truncation_acknowledged", .data = data};
    if (append_committed(store, &item, 1, err) < 0 || read_log_end(store, &last, err) < 0)
        return -1;
    out->event_seq = last.seq;
    /* (a damaged file is made anew) */
    return write_recorded_end(store, readable ? &recorded : NULL, &last, err);
}

/* ---- the spool ---- */

#define SPOOL_DIR "audit-spool"

struct pdk_audit_spool {
    pthread_mutex_t lock; /* the exec listener's thread writes too */
    char *dir;
    char *path;
    int fd;     /* -1 until the first write */
    off_t size; /* the end of the last line written whole */
    bool torn;  /* a failed write could not be cut off: the next line starts a line anew */
    char prev[65];
    json_t *failed; /* {kind: count} of the events not written since the last one that was */
    char failed_error[128];
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

/* The file, made at the first write (a run that records nothing leaves nothing), appears
 * flock'ed: a fold removes a file whose lock it can take once it is folded, and must never
 * take that of a file being made. Made unnamed (O_TMPFILE) and linked once locked; where
 * that cannot be done, made by name and given up when a fold took it first. */
static int spool_create(pdk_audit_spool *sp, pdk_error *err)
{
    if (mkdir(sp->dir, 0700) < 0 && errno != EEXIST)
        return pdk_error_set(err, errno, "cannot create the audit spool %s", sp->dir);
    _cleanup_close_ int dir = open(sp->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dir < 0)
        return pdk_error_set(err, errno, "cannot open the audit spool %s", sp->dir);
    for (int attempt = 0; attempt < 100; attempt++) {
        free(sp->path);
        _cleanup_free_ char *name =
            xasprintf("%019" PRId64 "-%d-%d.jsonl", pdk_now_realtime_ns(), (int)getpid(), attempt);
        sp->path = pdk_path_join(sp->dir, name);
        int fd = openat(dir, ".", O_TMPFILE | O_WRONLY | O_APPEND | O_CLOEXEC, 0600);
        bool unnamed = fd >= 0;
        if (fd < 0 && errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
            return pdk_error_set(err, errno, "cannot create an audit spool file in %s", sp->dir);
        if (!unnamed) {
            fd = openat(dir, name, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                        0600);
            if (fd < 0 && errno == EEXIST)
                continue;
            if (fd < 0)
                return pdk_error_set(err, errno, "cannot create an audit spool file in %s",
                                     sp->dir);
        }
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
            int e = errno;
            close(fd);
            if (!unnamed && e == EWOULDBLOCK)
                continue; /* a fold has it: it removes it, empty */
            return pdk_error_set(err, e, "cannot lock the audit spool file %s", sp->path);
        }
        if (unnamed) {
            char proc[64];
            snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
            if (linkat(AT_FDCWD, proc, dir, name, AT_SYMLINK_FOLLOW) < 0) {
                int e = errno;
                close(fd);
                if (e == EEXIST)
                    continue;
                return pdk_error_set(err, e, "cannot create the audit spool file %s", sp->path);
            }
        } else {
            struct stat st;
            if (fstat(fd, &st) < 0 || st.st_nlink == 0) {
                close(fd); /* removed by a fold before it was locked */
                continue;
            }
        }
        sp->fd = fd;
        sp->size = 0;
        return 0;
    }
    return pdk_error_set(err, EEXIST, "cannot create an audit spool file in %s", sp->dir);
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

/* Whole lines at the end of the file, or nothing: a write cut short (a full disk) is cut
 * off again, so that no torn line is left for the next one to follow. When even that
 * fails, the next write ends the torn line first (the fold skips it). */
static int spool_append(pdk_audit_spool *sp, const char *text, size_t len, bool durable)
{
    if (sp->torn) {
        off_t end;
        if (pdk_write_all(sp->fd, "\n", 1) < 0 || (end = lseek(sp->fd, 0, SEEK_END)) < 0)
            return -1;
        sp->size = end;
        sp->torn = false;
    }
    if (pdk_write_all(sp->fd, text, len) == 0 && (!durable || fdatasync(sp->fd) == 0)) {
        sp->size += (off_t)len;
        return 0;
    }
    int saved = errno;
    if (ftruncate(sp->fd, sp->size) < 0)
        sp->torn = true;
    errno = saved;
    return -1;
}

/* The events that could not be written, told by the first that is. */
static char *failed_line(pdk_audit_spool *sp, const char *session, char hash[65])
{
    json_t *data = json_pack("{s:O, s:s}", "kinds", sp->failed, "error", sp->failed_error);
    char *text = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(data);
    char *line = spool_line(sp->prev, pdk_now_realtime_ns(), session, "audit.write_failed",
                            text ? text : "{}", hash);
    free(text);
    return line;
}

static void note_failed(pdk_audit_spool *sp, const char *kind, int errnum)
{
    if (!sp->failed) {
        sp->failed = json_object();
        snprintf(sp->failed_error, sizeof(sp->failed_error), "%s", strerror(errnum));
    }
    json_t *n = json_object_get(sp->failed, kind);
    json_object_set_new(sp->failed, kind, json_integer(n ? json_integer_value(n) + 1 : 1));
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
    const char *s = rs ? rs : session, *k = rk ? rk : kind;
    int ret = 0;
    pthread_mutex_lock(&sp->lock);
    char failed_hash[65], hash[65];
    _cleanup_free_ char *before = sp->failed ? failed_line(sp, s, failed_hash) : NULL;
    _cleanup_free_ char *line =
        spool_line(before ? failed_hash : sp->prev, pdk_now_realtime_ns(), s, k, text, hash);
    free(text);
    _cleanup_free_ char *lines = before ? xasprintf("%s%s", before, line) : NULL;
    const char *out = lines ? lines : line;
    if (sp->fd < 0 && spool_create(sp, err) < 0) {
        ret = -1;
        note_failed(sp, k, err && err->code ? err->code : EIO);
    } else if (spool_append(sp, out, strlen(out), durable) < 0) {
        int e = errno;
        ret = pdk_error_set(err, e, "cannot write to the audit spool %s", sp->path);
        note_failed(sp, k, e);
    } else {
        memcpy(sp->prev, hash, sizeof(sp->prev));
        json_decref(sp->failed);
        sp->failed = NULL;
    }
    pthread_mutex_unlock(&sp->lock);
    return ret;
}

int pdk_audit_record(const char *state_dir, const char *session, const char *kind, json_t *data,
                     pdk_error *err)
{
    pdk_audit_spool *spool = NULL;
    if (pdk_audit_spool_open(state_dir, &spool, err) < 0) {
        json_decref(data);
        return -1;
    }
    int r = pdk_audit_spool_write(spool, session, kind, data, true, err);
    pdk_audit_spool_close(spool);
    if (r < 0)
        return pdk_error_prefix(err, "cannot record %s in the audit log, so it is not done", kind);
    return 0;
}

void pdk_audit_spool_close(pdk_audit_spool *sp)
{
    if (!sp)
        return;
    if (sp->fd >= 0)
        close(sp->fd);
    pthread_mutex_destroy(&sp->lock);
    json_decref(sp->failed);
    free(sp->path);
    free(sp->dir);
    free(sp);
}

/* ---- folding ---- */

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* How far a file is folded: offset, and the hash of the line before it; last_hash is
 * DAMAGED_MARK once the file is set aside (the rename still to be done). */
#define DAMAGED_MARK "damaged"

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
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        p->offset = sqlite3_column_int64(st, 0);
        const char *h = text_col(st, 1);
        snprintf(p->last_hash, sizeof(p->last_hash), "%s", h ? h : "");
    }
    sqlite3_finalize(st);
    if (r != SQLITE_ROW && r != SQLITE_DONE)
        return pdk_store_error(store, err, "reading the audit spool's progress");
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

/* Once the file is gone: its progress is forgotten (kept, a fold would start it again). */
static int forget_progress(pdk_store *store, const char *name, pdk_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(pdk_store_db(store), "DELETE FROM spool WHERE name = ?", -1, &st,
                           NULL) != SQLITE_OK)
        return pdk_store_error(store, err, "recording the audit spool's progress");
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    int r = sqlite3_step(st);
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        return pdk_store_error(store, err, "recording the audit spool's progress");
    return 0;
}

typedef enum line_kind {
    LINE_EVENT,   /* an event that follows the chain */
    LINE_BROKEN,  /* an event (a JSON object) that does not: edited, or out of place */
    LINE_NOT_JSON /* not an event at all: a write cut short */
} line_kind;

static line_kind parse_line(const char *line, const char *prev, pdk_audit_item *item,
                            char hash_out[65], json_t **owner)
{
    json_error_t jerr;
    json_t *o = json_loads(line, 0, &jerr);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        return LINE_NOT_JSON;
    }
    json_t *jt = json_object_get(o, "time_ns"), *js = json_object_get(o, "session");
    json_t *jk = json_object_get(o, "kind"), *jd = json_object_get(o, "data");
    const char *p = json_string_value(json_object_get(o, "prev"));
    const char *h = json_string_value(json_object_get(o, "hash"));
    if (!json_is_integer(jt) || !json_is_string(jk) || !json_is_object(jd) || !p || !h ||
        (!json_is_string(js) && !json_is_null(js)) || strcmp(p, prev) != 0) {
        json_decref(o);
        return LINE_BROKEN;
    }
    char *data = json_dumps(jd, JSON_COMPACT | JSON_SORT_KEYS);
    char check[65];
    chain_hash(prev, 0, json_integer_value(jt), json_string_value(js), json_string_value(jk),
               data ? data : "{}", check);
    free(data);
    if (strcmp(check, h) != 0) {
        json_decref(o);
        return LINE_BROKEN;
    }
    memcpy(hash_out, check, 65);
    item->time_ns = json_integer_value(jt);
    item->session = json_string_value(js);
    item->kind = json_string_value(jk);
    item->data = json_incref(jd);
    *owner = o;
    return LINE_EVENT;
}

bool pdk__audit_spool_parse_line(const char *line, const char *prev, pdk_audit_item *item,
                                 char hash_out[65], json_t **owner)
{
    return parse_line(line, prev, item, hash_out, owner) == LINE_EVENT;
}

static void scan_add(pdk__spool_scan *sc, pdk_audit_item item, json_t *owner)
{
    sc->items = xrealloc(sc->items, (sc->count + 1) * sizeof(*sc->items));
    sc->owners = xrealloc(sc->owners, (sc->count + 1) * sizeof(*sc->owners));
    sc->items[sc->count] = item;
    sc->owners[sc->count] = owner;
    sc->count++;
}

static void scan_add_note(pdk__spool_scan *sc, const char *kind, const char *name, int64_t offset,
                          int64_t bytes)
{
    json_t *data = json_pack("{s:s, s:I}", "file", name, "offset", (json_int_t)offset);
    if (bytes >= 0)
        json_object_set_new(data, "bytes", json_integer(bytes));
    scan_add(sc, (pdk_audit_item){.kind = kind, .data = data}, NULL);
}

/* An event that follows the chain at the end of a torn line (the bytes of a write cut
 * short, then the next line): where it starts, or NULL. */
static char *chained_tail(char *line, const char *prev, pdk_audit_item *item, char hash[65],
                          json_t **owner)
{
    static const char start[] = "{\"data\":";
    if (!line[0])
        return NULL;
    for (char *p = strstr(line + 1, start); p; p = strstr(p + 1, start))
        if (parse_line(p, prev, item, hash, owner) == LINE_EVENT)
            return p;
    return NULL;
}

void pdk__audit_spool_scan(const char *name, int64_t base, char *buf, size_t len, bool at_end,
                           size_t max_events, pdk__spool_scan *sc)
{
    size_t pos = 0;
    while (pos < len && sc->count < max_events) {
        char *line = buf + pos;
        char *nl = memchr(line, '\n', len - pos);
        if (!nl) {
            if (at_end) { /* the writer is gone: bytes of a write cut short, then nothing */
                scan_add_note(sc, "audit.spool_torn", name, base + (int64_t)pos,
                              (int64_t)(len - pos));
                pos = len;
            }
            break;
        }
        *nl = '\0';
        pdk_audit_item item = {0};
        json_t *owner = NULL;
        char hash[65];
        line_kind k = parse_line(line, sc->last_hash, &item, hash, &owner);
        if (k == LINE_BROKEN) {
            sc->damaged = true;
            break;
        }
        if (k == LINE_EVENT) {
            scan_add(sc, item, owner);
            memcpy(sc->last_hash, hash, sizeof(hash));
            pos = (size_t)(nl - buf) + 1;
            continue;
        }
        /* A torn line: the chain goes on in the rest of it, or on the next event line. */
        char *tail = chained_tail(line, sc->last_hash, &item, hash, &owner);
        size_t next = (size_t)(nl - buf) + 1, resume = 0;
        if (tail) {
            resume = next;
        } else {
            for (size_t q = next; q < len;) {
                char *nl2 = memchr(buf + q, '\n', len - q);
                if (!nl2)
                    break;
                *nl2 = '\0';
                k = parse_line(buf + q, sc->last_hash, &item, hash, &owner);
                if (k == LINE_EVENT) {
                    tail = buf + q;
                    resume = (size_t)(nl2 - buf) + 1;
                    break;
                }
                if (k == LINE_BROKEN)
                    break; /* what follows the torn line does not follow the chain */
                q = (size_t)(nl2 - buf) + 1;
            }
            if (!tail && k == LINE_BROKEN) {
                sc->damaged = true;
                break;
            }
        }
        if (tail) {
            scan_add_note(sc, "audit.spool_torn", name, base + (int64_t)pos,
                          (int64_t)(tail - line));
            scan_add(sc, item, owner);
            memcpy(sc->last_hash, hash, sizeof(hash));
            pos = resume;
            continue;
        }
        if (at_end) {
            scan_add_note(sc, "audit.spool_torn", name, base + (int64_t)pos, (int64_t)(len - pos));
            pos = len;
        }
        break; /* the line after it is not written yet */
    }
    sc->folded = pos;
    if (sc->damaged)
        scan_add_note(sc, "audit.spool_damaged", name, base + (int64_t)pos, -1);
}

void pdk__audit_spool_scan_free(pdk__spool_scan *sc)
{
    for (size_t i = 0; i < sc->count; i++) {
        json_decref(sc->items[i].data); /* a reference of its own (NULL once appended) */
        json_decref(sc->owners[i]);
    }
    free(sc->owners);
    free(sc->items);
    sc->owners = NULL;
    sc->items = NULL;
    sc->count = 0;
}

/* A transaction folds at most this much (whole lines, a longer one alone): the write lock
 * is held a moment, never the time a large file takes. */
#define FOLD_STEP_BYTES  (1u << 20)
#define FOLD_STEP_EVENTS 1000
#define SPOOL_LINE_MAX   (64u << 20)

/* A file folded to its end whose writer is gone: removed (or set aside, damaged), then its
 * progress forgotten; not before: a fold that found it still there would start it again.
 * A file that cannot be removed keeps its progress, and is tried again by the next fold. */
static void remove_folded(pdk_store *store, int dirfd, const char *name, bool damaged)
{
    _cleanup_free_ char *to = damaged ? xasprintf("%s.damaged", name) : NULL;
    int r = damaged ? renameat(dirfd, name, dirfd, to) : unlinkat(dirfd, name, 0);
    pdk_error err = {0};
    if (r < 0 && errno != ENOENT)
        pdk_warn("cannot %s the folded audit spool file %s: %s (tried again by the next fold)",
                 damaged ? "set aside" : "remove", name, strerror(errno));
    else if (forget_progress(store, name, &err) < 0)
        pdk_warn("%s", err.message);
}

/* What the step read, scanned: the file's bytes from offset on, as many as a step takes
 * (more when a single line is longer). */
static int scan_step(const char *name, int fd, int64_t offset, int64_t size, bool finished,
                     pdk__spool_scan *sc, char **buf, pdk_error *err)
{
    size_t want =
        (size_t)(size - offset) < FOLD_STEP_BYTES ? (size_t)(size - offset) : FOLD_STEP_BYTES;
    for (;;) {
        *buf = xrealloc(*buf, want + 1);
        size_t got = 0;
        while (got < want) {
            ssize_t n = pread(fd, *buf + got, want - got, offset + (off_t)got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                return pdk_error_set(err, errno, "cannot read the audit spool %s", name);
            if (n == 0)
                break;
            got += (size_t)n;
        }
        (*buf)[got] = '\0';
        bool whole = offset + (int64_t)got == size;
        pdk__audit_spool_scan(name, offset, *buf, got, finished && whole, FOLD_STEP_EVENTS, sc);
        if (sc->count > 0 || whole || got < want)
            return 0;
        if (want >= SPOOL_LINE_MAX) { /* no writer writes such a line */
            sc->damaged = true;
            scan_add_note(sc, "audit.spool_damaged", name, offset, -1);
            return 0;
        }
        want = (size_t)(size - offset) < 2 * want ? (size_t)(size - offset) : 2 * want;
        if (want > SPOOL_LINE_MAX)
            want = SPOOL_LINE_MAX;
    }
}

/* One transaction's worth of the file fd (name): 1 to look again, 0 when the rest is a line
 * still being written, -1 with err. How far the file is folded is read, and the events and
 * the new progress written, under the write lock: two readers never fold a line twice. */
static int fold_step(pdk_store *store, const char *name, int fd, bool finished, int *folded,
                     pdk_error *err)
{
    if (pdk_store_begin(store, err) < 0)
        return -1;
    struct stat st;
    spool_progress prog;
    if (fstat(fd, &st) < 0) {
        pdk_store_rollback(store);
        return pdk_error_set(err, errno, "cannot read the audit spool %s", name);
    }
    if (read_progress(store, name, &prog, err) < 0) {
        pdk_store_rollback(store);
        return -1;
    }
    if (prog.offset > st.st_size)
        prog.offset = st.st_size; /* truncated under us: what was folded stays */
    /* Removed by another reader since it was opened, set aside, or folded meanwhile. */
    if (st.st_nlink == 0 || strcmp(prog.last_hash, DAMAGED_MARK) == 0 ||
        prog.offset == st.st_size) {
        pdk_store_rollback(store);
        return 1;
    }
    pdk__spool_scan sc = {0};
    memcpy(sc.last_hash, prog.last_hash, sizeof(sc.last_hash));
    _cleanup_free_ char *buf = NULL;
    if (scan_step(name, fd, prog.offset, st.st_size, finished, &sc, &buf, err) < 0) {
        pdk__audit_spool_scan_free(&sc);
        pdk_store_rollback(store);
        return -1;
    }
    if (sc.count == 0) { /* a line being written */
        pdk_store_rollback(store);
        return 0;
    }
    prog.offset += (int64_t)sc.folded;
    snprintf(prog.last_hash, sizeof(prog.last_hash), "%s",
             sc.damaged ? DAMAGED_MARK : sc.last_hash);
    size_t count = sc.count;
    int r = append_in_tx(store, sc.items, sc.count, err); /* takes the items' data */
    pdk__audit_spool_scan_free(&sc);
    if (r < 0 || write_progress(store, name, &prog, err) < 0 || pdk_store_commit(store, err) < 0) {
        pdk_store_rollback(store);
        return -1;
    }
    *folded += (int)count;
    return 1;
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
    /* Its writer holds the lock while it lasts: taken, the file is complete. */
    bool finished = flock(fd, LOCK_EX | LOCK_NB) == 0;
    int folded = 0;
    for (;;) {
        /* Looked at without the write lock first: nothing new, nothing taken. */
        struct stat st;
        spool_progress prog;
        if (fstat(fd, &st) < 0)
            return pdk_error_set(err, errno, "cannot read the audit spool %s", name);
        if (st.st_nlink == 0)
            return folded;
        if (read_progress(store, name, &prog, err) < 0)
            return -1;
        bool damaged = strcmp(prog.last_hash, DAMAGED_MARK) == 0;
        if (damaged || prog.offset >= st.st_size) {
            if (damaged || finished)
                remove_folded(store, dirfd, name, damaged);
            return folded;
        }
        int r = fold_step(store, name, fd, finished, &folded, err);
        if (r <= 0)
            return r < 0 ? -1 : folded;
    }
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
    int total = 0, ret = 0;
    for (size_t i = 0; i < n; i++) {
        int r = fold_file(store, dirfd(d), names[i], err);
        if (r < 0) {
            ret = -1;
            break;
        }
        total += r;
    }
    pdk_strv_free(names);
    if (total > 0)
        advance_recorded_end(store);
    return ret < 0 ? -1 : total;
}

/* ---- following the log ---- */

typedef struct follow_state {
    int (*fn)(const pdk_audit_event *event, void *arg);
    void *arg;
    int64_t last_seq;
    int stopped; /* what fn returned, when not 0 */
} follow_state;

static int follow_event(const pdk_audit_event *e, void *arg)
{
    follow_state *fs = arg;
    fs->last_seq = e->seq;
    fs->stopped = fs->fn(e, fs->arg);
    return fs->stopped;
}

/* Whether what inotify read says the log may have grown: a spool file written or made, or
 * the store's database or its write-ahead log written by another process's commit. */
static bool follow_relevant(const char *buf, ssize_t len, int state_wd)
{
    bool relevant = false;
    for (const char *p = buf; p < buf + len;) {
        const struct inotify_event *ev = (const struct inotify_event *)p;
        if (ev->mask & IN_Q_OVERFLOW)
            relevant = true;
        else if (ev->wd != state_wd)
            relevant = true; /* the spool */
        else if (ev->len && (strcmp(ev->name, PDK_STORE_FILE) == 0 ||
                             strcmp(ev->name, PDK_STORE_FILE "-wal") == 0))
            relevant = true;
        p += sizeof(*ev) + ev->len;
    }
    return relevant;
}

int pdk_audit_follow(const char *state_dir, const pdk_audit_follow_options *opts,
                     int (*fn)(const pdk_audit_event *event, void *arg), void *arg, pdk_error *err)
{
    _cleanup_close_ int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (in < 0)
        return pdk_error_set(err, errno, "cannot follow the audit log (inotify)");
    /* Watched before the first read: nothing written in between is missed. */
    uint32_t mask = IN_CREATE | IN_MOVED_TO | IN_MODIFY | IN_CLOSE_WRITE;
    int state_wd = inotify_add_watch(in, state_dir, mask | IN_ONLYDIR);
    if (state_wd < 0)
        return pdk_error_set(err, errno, "cannot follow the audit log: cannot watch %s", state_dir);
    _cleanup_free_ char *spool = pdk_path_join(state_dir, SPOOL_DIR);
    if (mkdir(spool, 0700) < 0 && errno != EEXIST)
        return pdk_error_set(err, errno, "cannot follow the audit log: cannot create %s", spool);
    if (inotify_add_watch(in, spool, mask | IN_ONLYDIR) < 0)
        return pdk_error_set(err, errno, "cannot follow the audit log: cannot watch %s", spool);
    pdk_store *store = NULL;
    if (pdk_store_open(state_dir, true, &store, err) < 0)
        return -1;
    follow_state fs = {.fn = fn, .arg = arg, .last_seq = opts->after_seq};
    pdk_audit_filter filter = {.session = opts->session, .since_ns = opts->since_ns};
    int ret = 0;
    for (;;) {
        if (pdk_audit_fold(store, state_dir, err) < 0) {
            ret = -1;
            break;
        }
        filter.after_seq = fs.last_seq;
        if (pdk_audit_each(store, &filter, follow_event, &fs, err) < 0 && !fs.stopped) {
            ret = -1;
            break;
        }
        if (fs.stopped) {
            ret = fs.stopped;
            break;
        }
        /* Until the log may have grown (or the caller stops the follow). */
        bool again = false;
        while (!again) {
            struct pollfd pfd[2] = {{.fd = in, .events = POLLIN},
                                    {.fd = opts->stop_fd, .events = POLLIN}};
            int n = poll(pfd, opts->stop_fd >= 0 ? 2 : 1, -1);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                ret = pdk_error_set(err, errno, "cannot follow the audit log (poll)");
                goto out;
            }
            if (opts->stop_fd >= 0 && pfd[1].revents)
                goto out;
            char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
            ssize_t len;
            while ((len = read(in, buf, sizeof(buf))) > 0)
                again = follow_relevant(buf, len, state_wd) || again;
        }
    }
out:
    pdk_store_close(store);
    return ret;
}
