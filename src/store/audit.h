/* audit.h: the audit log, hash-chained events in the state store (store.h).
 *
 * Each event is a row: seq (1, 2, 3, ...), time_ns, session (or NULL), kind ("session.start",
 * "exec", "approval.answered", ...), data (a JSON object in canonical form: compact, keys
 * sorted), prev_hash and hash. hash is SHA-256, in hex, over
 *
 *     prev_hash "\n" seq "\n" time_ns "\n" json(session) "\n" json(kind) "\n" data
 *
 * (seq and time_ns in decimal, json() a JSON string or null), and prev_hash is the hash of
 * the row before (64 zeros for the first). meta "audit_head" holds the last seq and hash,
 * written in the same transaction; STATE/audit-head holds them too, outside the database,
 * moved after each commit under the store's lock and only forward (never past a row the log
 * no longer holds as it was): two checksummed slots written in turn in place, one
 * fdatasync a move, so that a crash leaves the end before, never a torn one (audit.c).
 * pdk_audit_verify() recomputes all of it and names the first row that was edited, deleted or
 * moved, rows deleted at the end, an event recorded twice, and a log cut short and written on since
 * (the table alone agrees with itself then; audit-head does not, until a human acknowledges it).
 * Someone who can write the state dir can still rewrite the whole chain from some row on and
 * audit-head with it: the chain shows edits, it does not prevent them; export the log (or its head)
 * elsewhere to pin it.
 *
 * Values registered with pdk_redact_add() (redact.h) never reach a row: every string of an event's
 * data, its session and its kind have them replaced by "[REDACTED]" before hashing.
 *
 * An event is committed durably before pdk_audit_append() returns: the caller does what the
 * event describes only after that (fail closed).
 */
#ifndef PADDOCK_AUDIT_H
#define PADDOCK_AUDIT_H

#include "store.h"

#include <jansson.h>
#include <stdint.h>

typedef struct pdk_audit_event {
    int64_t seq;
    int64_t time_ns;
    const char *session; /* may be NULL */
    const char *kind;
    const char *data; /* canonical JSON object text */
    const char *prev_hash;
    const char *hash;
} pdk_audit_event;

typedef struct pdk_audit_item {
    const char *session; /* may be NULL */
    const char *kind;
    json_t *data;    /* a JSON object; the append steals the reference */
    int64_t time_ns; /* when it happened; 0: now */
} pdk_audit_item;

/* Append one event, or several in one transaction (one fsync for all), then move the
 * recorded end. data is stolen (also on failure). */
int pdk_audit_append(pdk_store *store, const char *session, const char *kind, json_t *data,
                     pdk_error *err);
int pdk_audit_append_batch(pdk_store *store, pdk_audit_item *items, size_t count, pdk_error *err);

typedef struct pdk_audit_filter {
    const char *session; /* only this session's events, when not NULL */
    int64_t since_ns;    /* only events at or after this time, when > 0 */
    int64_t after_seq;   /* only events after this seq */
} pdk_audit_filter;

/* Call fn for each event matching filter, in order; fn returns 0 to go on, anything else to
 * stop (returned). */
int pdk_audit_each(pdk_store *store, const pdk_audit_filter *filter,
                   int (*fn)(const pdk_audit_event *event, void *arg), void *arg, pdk_error *err);

/* ---- the spool ----
 *
 * `paddock run` does not open the store on its way to the sandbox (SQLite costs a few
 * milliseconds to load, open and commit): it writes its events to a spool file of its own,
 * STATE/audit-spool/<time>-<pid>-<n>.jsonl, one JSON line an event, each line chained to the
 * one before by the same SHA-256 scheme (the first line to 64 zeros), flock'ed while the
 * run lasts (the file appears locked: made unnamed, linked once locked). A durable write is
 * fdatasync'ed before it returns: the action it records goes on only then. A write that
 * fails (a full disk) is cut off again: it leaves no torn line, the caller refuses what it
 * would have recorded, and the next event that is written is preceded by an
 * "audit.write_failed" event counting, by kind, those that were not.
 *
 * pdk_audit_fold() moves spooled events into the log (in spool order, each keeping its
 * time), checking each file's chain; every reader of the log folds first. It reads how far
 * a file is folded and writes the events with the new progress in one transaction, under
 * the write lock, a step of at most 1 MiB or 1,000 events at a time: two readers never
 * fold a line twice, and a writer waits a moment at most. A file whose writer is gone is
 * removed once folded whole, and its progress forgotten only once it is removed. A torn
 * line (a write cut short, left there) is skipped when what follows goes on with the chain:
 * an "audit.spool_torn" event says where and how many bytes; the lines after it are folded.
 * A spool file whose chain is broken (an edit) is not folded from there on: it is renamed
 * *.damaged and an "audit.spool_damaged" event says where. */
typedef struct pdk_audit_spool pdk_audit_spool;
int pdk_audit_spool_open(const char *state_dir, pdk_audit_spool **out, pdk_error *err);
/* data is stolen (also on failure). Safe from several threads. */
int pdk_audit_spool_write(pdk_audit_spool *spool, const char *session, const char *kind,
                          json_t *data, bool durable, pdk_error *err);
void pdk_audit_spool_close(pdk_audit_spool *spool);

/* One event recorded before the action it describes, by a process that records little
 * (paddock diff, commit, discard): through a spool of its own, fdatasync'ed. data is
 * stolen. 0, or -1 with err ("cannot record KIND in the audit log, so it is not done: ..."):
 * the caller does not act. */
int pdk_audit_record(const char *state_dir, const char *session, const char *kind, json_t *data,
                     pdk_error *err);

/* One spooled line (NUL-terminated, without its newline) checked against prev, the hash of
 * the line before (64 zeros for the first): on success item points into *owner (release it
 * with json_decref; item->data is a reference of its own) and hash_out gets the line's
 * hash. false when the line is not a well-formed event linked to prev. (For fold, tests
 * and the fuzzer.) */
bool pdk__audit_spool_parse_line(const char *line, const char *prev, pdk_audit_item *item,
                                 char hash_out[65], json_t **owner);

/* What a fold reads of a spool file, scanned (for fold, tests and the fuzzer). */
typedef struct pdk__spool_scan {
    pdk_audit_item *items; /* the events, with the notes (spool_torn, spool_damaged); each
                            * data a reference of its own */
    json_t **owners;       /* what an event's item points into; NULL for a note */
    size_t count;
    size_t folded;      /* bytes of the buffer taken */
    char last_hash[65]; /* in: the hash of the line before the buffer; out: of the last taken */
    bool damaged;       /* stopped at a line that breaks the chain (at folded) */
} pdk__spool_scan;

/* Scan len bytes (buf[len] is '\0'; newlines are overwritten) of spool file name from offset
 * base on, following the chain from sc->last_hash, up to about max_events. at_end: nothing
 * more will be written (its writer is gone, and buf reaches the end): a torn tail is taken
 * too. sc starts zeroed but for last_hash. */
void pdk__audit_spool_scan(const char *name, int64_t base, char *buf, size_t len, bool at_end,
                           size_t max_events, pdk__spool_scan *sc);
void pdk__audit_spool_scan_free(pdk__spool_scan *sc);

/* Fold what is spooled under state_dir into the store's log; spool files of finished
 * writers go once folded. Returns the number of events folded, or -1 with err. */
int pdk_audit_fold(pdk_store *store, const char *state_dir, pdk_error *err);

/* ---- following the log ----
 *
 * Every event matching the options, as it is written by any process: first those
 * recorded already, then each new one, in order (seq), none twice and none left out,
 * whether it was appended to the store or spooled by a run (folded in here, as every
 * reader does, or by another reader: either way it is delivered once, with the seq it got
 * in the log). The follow sleeps on inotify (the state store's files and the spool
 * directory) between events, never polling. It ends when fn returns non-zero (returned),
 * when stop_fd is readable or hung up (0), or on an error (-1 with err). Blocks: run it on
 * a thread of its own, or give a stop_fd to end it from elsewhere. */
typedef struct pdk_audit_follow_options {
    const char *session; /* only this session's events, when not NULL */
    int64_t since_ns;    /* only events at or after this time, when > 0 */
    int64_t after_seq;   /* only events after this seq (0: from the first) */
    int stop_fd;         /* >= 0: the follow ends when it is readable; -1: none */
} pdk_audit_follow_options;

int pdk_audit_follow(const char *state_dir, const pdk_audit_follow_options *opts,
                     int (*fn)(const pdk_audit_event *event, void *arg), void *arg, pdk_error *err);

/* The event as a JSON object (seq, time, time_ns, session, kind, data, hash). */
json_t *pdk_audit_event_json(const pdk_audit_event *event);

typedef struct pdk_audit_verdict {
    bool intact;
    int64_t rows;    /* rows checked */
    int64_t bad_seq; /* the first bad row (0 when intact) */
    char problem[512];
} pdk_audit_verdict;

/* Recompute the chain, look for an event recorded twice, compare the end with
 * STATE/audit-head (which it starts, for a log older than it). Returns 0 with the verdict
 * filled in (intact or not), -1 with err when the store cannot be read. */
int pdk_audit_verify(pdk_store *store, pdk_audit_verdict *verdict, pdk_error *err);

/* Whether the log still reaches the end STATE/audit-head records (cheap: one row): 0 it
 * does (or nothing is recorded), 1 it was cut (problem says how and what to do), -1 with
 * err. */
int pdk_audit_check_end(pdk_store *store, char *problem, size_t size, pdk_error *err);

typedef struct pdk_audit_acknowledgement {
    bool acknowledged;    /* false: the log reaches its recorded end, nothing done */
    int64_t recorded_seq; /* where the log had reached (-1: audit-head was damaged) */
    int64_t found_seq;    /* where it ended when acknowledged */
    int64_t event_seq;    /* the row of the audit.truncation_acknowledged event */
    char problem[512];
} pdk_audit_acknowledgement;

/* A human has looked at a log cut short (pdk_audit_check_end): an
 * "audit.truncation_acknowledged" event records what was recorded, what was found and by
 * whom (by), and STATE/audit-head starts again at the log's end. Nothing when the log
 * reaches its recorded end. 0, or -1 with err. */
int pdk_audit_acknowledge_truncation(pdk_store *store, const char *by,
                                     pdk_audit_acknowledgement *out, pdk_error *err);

#endif
