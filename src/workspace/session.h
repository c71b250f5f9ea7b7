/* session.h: workspace sessions in the state dir.
 *
 * A session is a directory STATE/sessions/<id>/ holding
 *   session.json   metadata (this struct), written atomically
 *   lock           flock()ed while a run or a commit uses the session
 *   upper/ work/   the overlayfs layers (overlay mode only)
 * Sessions survive restarts: a later run with the same name continues on its layer, and
 * diff/commit work from the files alone.
 */
#ifndef PADDOCK_SESSION_H
#define PADDOCK_SESSION_H

#include "error.h"

#include <stdint.h>
#include <sys/types.h>

typedef enum pdk_workspace_mode {
    PDK_WORKSPACE_OVERLAY = 0,
    PDK_WORKSPACE_DIRECT = 1,
} pdk_workspace_mode;

/* A path committed by `paddock commit`, with the ctime the commit left on the real file:
 * such a path's later change of ctime is ours, not a conflicting outside change. */
typedef struct pdk_committed_path {
    char *path; /* workspace-relative */
    int64_t ctime_ns;
} pdk_committed_path;

typedef struct pdk_session {
    char *id;
    bool named;      /* given with --session, rather than generated */
    char *workspace; /* absolute, canonical path of the real workspace */
    pdk_workspace_mode mode;
    int64_t created_ns;  /* wall clock */
    int64_t baseline_ns; /* real files with ctime > baseline changed after the session began
                          * (the fine-grained clock at creation; see session.c) */
    int64_t last_run_ns;
    int runs;
    int last_exit; /* -1 when no run has finished */
    uid_t owner_uid;
    char **placeholders;    /* workspace-relative paths paddock made as mount points */
    char **protected_paths; /* workspace-relative paths read-only in the sandbox (built-in
                             * list plus the policy's); commit refuses them by default */
    pdk_committed_path *committed;
    size_t committed_count;

    char *boot_id; /* the boot a run last used the layer in (/proc/sys/kernel/random/boot_id) */

    bool loaded;         /* its metadata was read from session.json (read again under the lock) */
    bool damaged;        /* opened for removal only: session.json is missing or unreadable */
    bool marked_running; /* an unnamed session this process made: its run is marked */

    char *dir;   /* STATE/sessions/<id> */
    int dir_fd;  /* O_PATH fd of dir */
    int lock_fd; /* >= 0 while locked */
} pdk_session;

/* Names: 1-64 of [A-Za-z0-9._-], not starting with '.' or '-'. */
bool pdk_session_name_valid(const char *name);

/* A new session in memory only (id generated when name is NULL), to be made on disk by
 * pdk_session_materialize(): paddock run decides everything before the clone and lets the
 * disk work overlap the sandbox's start. Fails when a session of that name exists. */
int pdk_session_prepare(const char *state_dir, const char *name, const char *workspace,
                        pdk_workspace_mode mode, pdk_session **out, pdk_error *err);
/* Make the prepared session's directory, lock it, make its layers and write its metadata,
 * all under a private name, then give it its own name (so that a kill at any point never
 * leaves the name on a half-made session, nor on the session a recycled spare was made
 * from); on failure nothing is left on disk. */
int pdk_session_materialize(pdk_session *session, pdk_error *err);

/* Open an existing session by id. */
int pdk_session_open(const char *state_dir, const char *id, pdk_session **out, pdk_error *err);
/* The same, its lock taken (without waiting) before its metadata is read. */
int pdk_session_open_locked(const char *state_dir, const char *id, pdk_session **out,
                            pdk_error *err);
/* Open a session to remove it: locked, and even when its session.json is missing or
 * unreadable (then damaged is set and the metadata is empty). Fails when there is no such
 * session or a run holds it. */
int pdk_session_open_for_removal(const char *state_dir, const char *id, pdk_session **out,
                                 pdk_error *err);

/* Take the session's lock without waiting; fails naming the holder's pid when it is busy.
 * A session read from disk is read again once locked: what another run or a commit saved
 * in between is never written over. */
int pdk_session_lock(pdk_session *session, pdk_error *err);
void pdk_session_unlock(pdk_session *session);

/* Write session.json atomically (fsync'd when durable). */
int pdk_session_save(const pdk_session *session, bool durable, pdk_error *err);

/* Open the upper layer (O_RDONLY|O_DIRECTORY) of an overlay session. */
int pdk_session_open_upper(const pdk_session *session, pdk_error *err);

/* The overlay is mounted "volatile" (no syncfs at unmount): overlayfs then leaves
 * work/work/incompat/volatile behind and refuses the layer until it is gone. Call after
 * the sandbox that used the layer has ended. Returns 0 or -1 with err. */
int pdk_session_clear_volatile(pdk_session *session, pdk_error *err);

/* Before a run on an existing layer: clear a marker left by a run that did not end cleanly
 * (paddock killed). *across_reboot is set when that run was in an earlier boot, so that
 * files it wrote last may be missing. */
int pdk_session_recover_layer(pdk_session *session, bool *across_reboot, pdk_error *err);

/* This boot's id (new string; "" when unknown). */
char *pdk_session_current_boot_id(void);

/* The real workspace (an O_PATH directory fd) and the upper layer of an overlay session,
 * for scanning; a direct-mode session has no layer (error saying so). */
int pdk_session_open_layers(const pdk_session *session, int *lower, int *upper, pdk_error *err);

/* Remove the session directory entirely (the session must be locked by the caller). */
int pdk_session_remove(pdk_session *session, pdk_error *err);

/* Take the session out of sight at once (one rename) and leave the removal of its files to
 * pdk_session_collect_step(), which a later run calls while its sandbox starts. */
int pdk_session_retire(pdk_session *session, pdk_error *err);

/* Make a spare session directory for a later run to take (see session.c) when fewer than
 * two are ready: 1 when one was made, 0 when none was needed, -1 on an error. */
int pdk_session_spare_step(const char *state_dir);

/* Remove one file or directory of the sessions retired (or left half-removed by a crash),
 * or deal with one thing a killed run left (a half-made session, the empty session of an
 * unnamed run): 1 when one was done (call again), 0 when none is left, -1 on an error.
 * Small steps, so that an event loop can interleave them with its other work. */
int pdk_session_collect_step(const char *state_dir);
/* Deal with everything killed runs left (as the collect steps do), in one pass: how many
 * there were. Cheap: one listing, and a look at each leftover. */
int pdk_session_collect_abandoned(const char *state_dir);
/* How many retired sessions (or leftovers being removed) there are. */
size_t pdk_session_retired_count(const char *state_dir);

/* The run of an unnamed session that pdk_session_materialize() made has ended (whatever
 * became of the session): its in-progress marker goes. A marker that outlives its run
 * (paddock killed) is how pdk_session_collect_step() finds the session the run left, and
 * retires it when it is empty. */
void pdk_session_run_ended(pdk_session *session);

/* All sessions, sorted by creation time. Unreadable entries are skipped with a warning. */
int pdk_session_list(const char *state_dir, pdk_session ***out, size_t *count, pdk_error *err);
void pdk_session_list_free(pdk_session **list, size_t count);

/* Record that path was committed leaving ctime_ns on the real file. */
void pdk_session_note_committed(pdk_session *session, const char *path, int64_t ctime_ns);

/* A path as session.json (and the listings) write it: a JSON string when it is UTF-8, else
 * {"hex": its bytes in hex, "text": a rendering to read}. */
typedef struct json_t json_t;
json_t *pdk_session_json_path(const char *path);

/* Parse the text of a session.json into a session that has no directory (for tests and
 * the fuzz target; pdk_session_open reads the file and does the same). */
int pdk_session_parse_metadata(const char *id, const char *text, size_t len, pdk_session **out,
                               pdk_error *err);

void pdk_session_free(pdk_session *session);
void pdk_session_freep(pdk_session **session); /* for _cleanup_() */

#endif
