/* session.c: see session.h. */
#include "session.h"

#include "display.h"
#include "fsutil.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define SESSION_FILE   "session.json"
#define SESSION_FORMAT 1

bool pdk_session_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 64 || name[0] == '.' || name[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!pdk_name_char(name[i]))
            return false;
    return true;
}

static char *generate_id(void)
{
    unsigned char rnd[3] = {0};
    if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
        uint64_t t = pdk_now_monotonic_ns();
        memcpy(rnd, &t, sizeof(rnd));
    }
    /* UTC: no time zone to load on the way to the sandbox. */
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    return xasprintf("%04d%02d%02d-%02d%02d%02d-%02x%02x%02x", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, rnd[0], rnd[1], rnd[2]);
}

static pdk_session *session_new(const char *state_dir, const char *id)
{
    pdk_session *s = xcalloc(1, sizeof(*s));
    s->id = xstrdup(id);
    _cleanup_free_ char *sessions = pdk_path_join(state_dir, "sessions");
    s->dir = pdk_path_join(sessions, id);
    s->dir_fd = -1;
    s->lock_fd = -1;
    s->last_exit = -1;
    return s;
}

void pdk_session_freep(pdk_session **s)
{
    pdk_session_free(*s);
}

void pdk_session_free(pdk_session *s)
{
    if (!s)
        return;
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    if (s->dir_fd >= 0)
        close(s->dir_fd);
    free(s->id);
    free(s->workspace);
    free(s->dir);
    free(s->boot_id);
    pdk_strv_free(s->placeholders);
    pdk_strv_free(s->protected_paths);
    for (size_t i = 0; i < s->committed_count; i++)
        free(s->committed[i].path);
    free(s->committed);
    free(s);
}

json_t *pdk_session_json_path(const char *path)
{
    json_t *text = json_string(path);
    if (text)
        return text;
    /* Not UTF-8 (a path is bytes): the bytes in hex, and a rendering to read. */
    static const char digits[] = "0123456789abcdef";
    size_t n = strlen(path);
    _cleanup_free_ char *hex = xmalloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[(unsigned char)path[i] >> 4];
        hex[2 * i + 1] = digits[(unsigned char)path[i] & 15];
    }
    hex[2 * n] = '\0';
    _cleanup_free_ char *shown = pdk_display(path);
    return json_pack("{s:s, s:s}", "hex", hex, "text", shown);
}

/* The path pdk_session_json_path made (new string), or NULL when v is none. */
static char *path_of_json(json_t *v)
{
    if (json_is_string(v))
        return xstrdup(json_string_value(v));
    const char *hex = json_string_value(json_object_get(v, "hex"));
    size_t n = hex ? strlen(hex) : 0;
    if (!hex || n == 0 || n % 2 != 0)
        return NULL;
    _cleanup_free_ char *path = xmalloc(n / 2 + 1);
    for (size_t i = 0; i < n / 2; i++) {
        int hi = pdk_hex_value(hex[2 * i]), lo = pdk_hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
            return NULL;
        path[i] = (char)(hi << 4 | lo);
    }
    path[n / 2] = '\0';
    return steal_pointer(&path);
}

static json_t *strv_to_json(char *const *strv)
{
    json_t *a = json_array();
    for (size_t i = 0; strv && strv[i]; i++)
        json_array_append_new(a, pdk_session_json_path(strv[i]));
    return a;
}

static char **json_to_strv(json_t *a)
{
    char **v = xcalloc(1, sizeof(char *));
    size_t i;
    json_t *item;
    json_array_foreach(a, i, item)
    {
        char *path = path_of_json(item);
        if (path)
            pdk_strv_push_take(&v, path);
    }
    return v;
}

#define SESSION_FILE_NEXT ".session.json.next"
/* A session out of sight, its files being removed (or recycled into a spare). */
#define REMOVED_PREFIX ".removing."
/* Beside an unnamed session while its run goes on (a second name of the session's lock
 * file: no inode made or freed for it): what a run that was killed leaves, for a later run
 * to retire the session when it is empty (else an unnamed run killed before its end would
 * leave its session forever). Whoever holds the lock holds the run. */
#define RUNNING_PREFIX ".running."

/* session.json, replaced atomically without freeing anything: the text goes over the old
 * draft (SESSION_FILE_NEXT, pwrite then ftruncate, within the same block when it fits),
 * which then trades places with session.json (RENAME_EXCHANGE), so that the old file is
 * the next draft. A rename over session.json would free the old file, and its block: with
 * ext4's online discard each freed block waits for the device. The caller holds the
 * session's lock. */
static int write_metadata(int dir_fd, const char *text, size_t len, bool durable)
{
    int fd = pdk_open_regular_at(dir_fd, SESSION_FILE_NEXT, O_WRONLY | O_CREAT, 0600);
    if (fd < 0)
        return -1;
    ssize_t w = pwrite(fd, text, len, 0);
    if (w != (ssize_t)len || ftruncate(fd, (off_t)len) < 0 || (durable && fsync(fd) < 0)) {
        int saved = w >= 0 && w != (ssize_t)len ? EIO : errno;
        close(fd);
        errno = saved;
        return -1;
    }
    if (close(fd) < 0)
        return -1;
    if (renameat2(dir_fd, SESSION_FILE_NEXT, dir_fd, SESSION_FILE, RENAME_EXCHANGE) < 0) {
        if (errno != ENOENT && errno != EINVAL)
            return -1;
        /* The first save, or a filesystem without exchange. */
        if (renameat(dir_fd, SESSION_FILE_NEXT, dir_fd, SESSION_FILE) < 0)
            return -1;
    }
    if (durable && pdk_fsync_dir(dir_fd) < 0)
        return -1;
    return 0;
}

int pdk_session_save(const pdk_session *s, bool durable, pdk_error *err)
{
    json_t *root = json_object();
    json_object_set_new(root, "format", json_integer(SESSION_FORMAT));
    json_object_set_new(root, "id", json_string(s->id));
    json_object_set_new(root, "named", json_boolean(s->named));
    json_object_set_new(root, "workspace", pdk_session_json_path(s->workspace));
    json_object_set_new(root, "mode",
                        json_string(s->mode == PDK_WORKSPACE_DIRECT ? "direct" : "overlay"));
    json_object_set_new(root, "created_ns", json_integer(s->created_ns));
    json_object_set_new(root, "baseline_ns", json_integer(s->baseline_ns));
    json_object_set_new(root, "last_run_ns", json_integer(s->last_run_ns));
    json_object_set_new(root, "runs", json_integer(s->runs));
    json_object_set_new(root, "last_exit", json_integer(s->last_exit));
    json_object_set_new(root, "owner_uid", json_integer(s->owner_uid));
    json_object_set_new(root, "boot_id", json_string(s->boot_id ? s->boot_id : ""));
    json_object_set_new(root, "placeholders", strv_to_json(s->placeholders));
    json_object_set_new(root, "protected", strv_to_json(s->protected_paths));
    json_t *committed = json_array();
    for (size_t i = 0; i < s->committed_count; i++) {
        json_t *c = json_object();
        json_object_set_new(c, "path", pdk_session_json_path(s->committed[i].path));
        json_object_set_new(c, "ctime_ns", json_integer(s->committed[i].ctime_ns));
        json_array_append_new(committed, c);
    }
    json_object_set_new(root, "committed", committed);
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    if (!text)
        return pdk_error_set(err, ENOMEM, "session %s: cannot encode metadata", s->id);
    size_t len = strlen(text);
    int r = write_metadata(s->dir_fd, text, len, durable);
    int saved = errno;
    free(text);
    if (r < 0)
        return pdk_error_set(err, saved, "session %s: cannot write %s/%s", s->id, s->dir,
                             SESSION_FILE);
    return 0;
}

/* Fill s from the text of its session.json. */
static int session_parse(pdk_session *s, const char *text, size_t len, pdk_error *err)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return pdk_error_set(err, 0,
                             "session %s: %s/%s is corrupt (line %d: %s): discard the session",
                             s->id, s->dir ? s->dir : "?", SESSION_FILE, jerr.line, jerr.text);
    }
    _cleanup_free_ char *ws = path_of_json(json_object_get(root, "workspace"));
    const char *mode = json_string_value(json_object_get(root, "mode"));
    if (!ws || ws[0] != '/' || !mode ||
        (strcmp(mode, "direct") != 0 && strcmp(mode, "overlay") != 0)) {
        json_decref(root);
        return pdk_error_set(err, 0,
                             "session %s: %s lacks a workspace or a mode: discard the session",
                             s->id, SESSION_FILE);
    }
    free(s->workspace);
    s->workspace = steal_pointer(&ws);
    s->mode = strcmp(mode, "direct") == 0 ? PDK_WORKSPACE_DIRECT : PDK_WORKSPACE_OVERLAY;
    s->named = json_is_true(json_object_get(root, "named"));
    s->created_ns = json_integer_value(json_object_get(root, "created_ns"));
    s->baseline_ns = json_integer_value(json_object_get(root, "baseline_ns"));
    s->last_run_ns = json_integer_value(json_object_get(root, "last_run_ns"));
    s->runs = (int)json_integer_value(json_object_get(root, "runs"));
    json_t *le = json_object_get(root, "last_exit");
    s->last_exit = le ? (int)json_integer_value(le) : -1;
    s->owner_uid = (uid_t)json_integer_value(json_object_get(root, "owner_uid"));
    const char *boot = json_string_value(json_object_get(root, "boot_id"));
    free(s->boot_id);
    s->boot_id = xstrdup(boot ? boot : "");
    pdk_strv_free(s->placeholders);
    pdk_strv_free(s->protected_paths);
    s->placeholders = json_to_strv(json_object_get(root, "placeholders"));
    s->protected_paths = json_to_strv(json_object_get(root, "protected"));
    json_t *committed = json_object_get(root, "committed");
    size_t i;
    json_t *c;
    json_array_foreach(committed, i, c)
    {
        _cleanup_free_ char *p = path_of_json(json_object_get(c, "path"));
        if (p)
            pdk_session_note_committed(s, p, json_integer_value(json_object_get(c, "ctime_ns")));
    }
    json_decref(root);
    return 0;
}

static int session_load(pdk_session *s, pdk_error *err)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    if (pdk_read_regular_file_at(s->dir_fd, SESSION_FILE, &text, &len, 16u << 20) < 0) {
        if (errno == ENXIO || errno == EISDIR || errno == ELOOP)
            return pdk_error_set(err, 0,
                                 "session %s: %s/%s is not a regular file: remove the session "
                                 "with 'paddock discard %s'",
                                 s->id, s->dir, SESSION_FILE, s->id);
        if (errno == ENOENT)
            return pdk_error_set(err, 0,
                                 "session %s is incomplete (%s/%s is missing; a run was "
                                 "interrupted while it started): remove it with 'paddock "
                                 "discard %s'",
                                 s->id, s->dir, SESSION_FILE, s->id);
        return pdk_error_set(err, errno, "session %s: cannot read %s", s->id, SESSION_FILE);
    }
    return session_parse(s, text, len, err);
}

int pdk_session_parse_metadata(const char *id, const char *text, size_t len, pdk_session **out,
                               pdk_error *err)
{
    pdk_session *s = session_new("/nonexistent", id);
    if (session_parse(s, text, len, err) < 0) {
        pdk_session_free(s);
        return -1;
    }
    *out = s;
    return 0;
}

/* The error for a session whose lock another process holds (lock_fd: an fd of its lock
 * file), naming the holder when its pid is there. */
static int busy_error(const char *id, int lock_fd, pdk_error *err)
{
    char buf[32] = {0};
    ssize_t n = lock_fd >= 0 ? pread(lock_fd, buf, sizeof(buf) - 1, 0) : -1;
    int holder = n > 0 ? atoi(buf) : 0;
    if (holder > 0)
        return pdk_error_set(err, 0,
                             "session %s is in use by paddock pid %d (wait for it to end, or "
                             "use another --session)",
                             id, holder);
    return pdk_error_set(err, 0, "session %s is in use by another paddock", id);
}

/* flock the session's lock file without waiting: 0 (s->lock_fd set), or -1 with err and
 * *busy set when another process holds it. */
static int take_lock(pdk_session *s, bool *busy, pdk_error *err)
{
    *busy = false;
    _cleanup_close_ int fd = pdk_open_regular_at(s->dir_fd, "lock", O_RDWR | O_CREAT, 0600);
    if (fd < 0)
        return pdk_error_set(err, errno, "session %s: cannot open its lock", s->id);
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno != EWOULDBLOCK)
            return pdk_error_set(err, errno, "session %s: cannot lock", s->id);
        *busy = true;
        return busy_error(s->id, fd, err);
    }
    /* A fixed width, written over the last holder's: no truncation, so no block of the
     * file is freed and made again (ext4 with online discard waits for the device at every
     * freed block). */
    char pid[32];
    int n = snprintf(pid, sizeof(pid), "%-10d\n", (int)getpid());
    (void)!pwrite(fd, pid, (size_t)n, 0);
    s->lock_fd = steal_fd(&fd);
    return 0;
}

/* Forget what session.json said, before it is read again. */
static void clear_metadata(pdk_session *s)
{
    free(s->workspace);
    s->workspace = NULL;
    free(s->boot_id);
    s->boot_id = NULL;
    pdk_strv_free(s->placeholders);
    s->placeholders = NULL;
    pdk_strv_free(s->protected_paths);
    s->protected_paths = NULL;
    for (size_t i = 0; i < s->committed_count; i++)
        free(s->committed[i].path);
    free(s->committed);
    s->committed = NULL;
    s->committed_count = 0;
}

int pdk_session_lock(pdk_session *s, pdk_error *err)
{
    if (s->lock_fd >= 0)
        return 0;
    bool busy;
    if (take_lock(s, &busy, err) < 0)
        return -1;
    /* What was read before the lock may be stale: a run or a commit may have saved since.
     * Every change is a read-modify-write under the lock, so read it again. */
    if (s->loaded) {
        clear_metadata(s);
        if (session_load(s, err) < 0) {
            pdk_session_unlock(s);
            return -1;
        }
    }
    return 0;
}

void pdk_session_unlock(pdk_session *s)
{
    if (s->lock_fd >= 0) {
        close(s->lock_fd);
        s->lock_fd = -1;
    }
}

/* The line between changes of real files made before the session and after it began: the
 * fine-grained clock now. A file changed before has a ctime at or below it (timestamps are
 * coarse, or fine-grained where the kernel hands those out), so it never counts as changed
 * outside. A file changed after has a ctime above it, except within the first tick of the
 * coarse clock that file timestamps use (4 ms at HZ=250): a change made outside in that
 * window, which the sandbox's setup mostly fills before the command can even read a file,
 * may go unnoticed by commit. Waiting out the tick before starting the command would close
 * the window at a cost of up to a tick per run. */
static int64_t change_baseline(void)
{
    return pdk_now_realtime_ns();
}

int pdk_session_prepare(const char *state_dir, const char *name, const char *workspace,
                        pdk_workspace_mode mode, pdk_session **out, pdk_error *err)
{
    if (name && !pdk_session_name_valid(name))
        return pdk_error_set(err, 0,
                             "invalid session name '%s' (use 1-64 letters, digits, '.', '_' "
                             "or '-', not starting with '.' or '-')",
                             name);
    _cleanup_free_ char *id = name ? xstrdup(name) : generate_id();
    pdk_session *s = session_new(state_dir, id);
    struct stat st;
    if (lstat(s->dir, &st) == 0) {
        pdk_session_free(s);
        return pdk_error_set(err, 0, "session %s already exists", id);
    }
    s->named = name != NULL;
    s->workspace = xstrdup(workspace);
    s->mode = mode;
    s->created_ns = pdk_now_realtime_ns();
    s->baseline_ns = change_baseline();
    s->owner_uid = getuid();
    s->placeholders = xcalloc(1, sizeof(char *));
    s->protected_paths = xcalloc(1, sizeof(char *));
    *out = s;
    return 0;
}

/* Mark the sessions directory as the top of directory hierarchies for ext4's Orlov
 * allocator (chattr +T): each session's directory then goes to a block group of its own,
 * rather than all of them to their parent's, where the inodes that earlier sessions freed
 * slow every new one down (ext4 without a journal skips inodes freed in the last minute,
 * one by one). Only a hint: other filesystems ignore or refuse it. */
static void mark_top_directory(const char *path)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    int flags = 0;
    if (fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && !(flags & FS_TOPDIR_FL)) {
        flags |= FS_TOPDIR_FL;
        (void)ioctl(fd, FS_IOC_SETFLAGS, &flags);
    }
}

/* Spare session directories: made ahead by an earlier run's idle steps (a directory, its
 * lock file, an empty upper and work), so that a new session is one rename away instead of
 * four files to make on the way to the sandbox. Up to SPARE_SLOTS of them. */
#define SPARE_PREFIX ".spare."
#define SPARE_SLOTS  2

/* A session is made under a private name and renamed to its own once its lock is taken
 * and its metadata written: a name never stands for a half-made session, nor for the one a
 * recycled spare used to be, whenever the run making it is killed. The private name holds
 * the maker's pid; the collector removes those whose maker is gone. */
#define CLAIM_PREFIX ".claim."

static bool claim_spare(int sessions_fd, const char *claim)
{
    for (int i = 0; i < SPARE_SLOTS; i++) {
        char name[32];
        snprintf(name, sizeof(name), SPARE_PREFIX "%d", i);
        if (renameat2(sessions_fd, name, sessions_fd, claim, RENAME_NOREPLACE) == 0)
            return true;
    }
    return false;
}

/* The error for a session directory that appeared under our name meanwhile. */
static int exists_error(int sessions_fd, const char *id, pdk_error *err)
{
    _cleanup_free_ char *lock = xasprintf("%s/lock", id);
    _cleanup_close_ int fd =
        openat(sessions_fd, lock, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK)
        return busy_error(id, fd, err);
    return pdk_error_set(err, 0, "session %s already exists", id);
}

int pdk_session_materialize(pdk_session *s, pdk_error *err)
{
    static unsigned claims;
    _cleanup_free_ char *sessions = xstrdup(s->dir);
    *strrchr(sessions, '/') = '\0';
    if (mkdir(sessions, 0700) < 0) {
        if (errno != EEXIST)
            return pdk_error_set(err, errno, "cannot create %s", sessions);
    } else {
        mark_top_directory(sessions);
    }
    _cleanup_close_ int sessions_fd = open(sessions, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (sessions_fd < 0)
        return pdk_error_set(err, errno, "cannot open %s", sessions);
    char claim[64];
    snprintf(claim, sizeof(claim), CLAIM_PREFIX "%d.%u", (int)getpid(), claims++);
    bool spare = s->mode == PDK_WORKSPACE_OVERLAY && claim_spare(sessions_fd, claim);
    pdk_crash_point("session-claimed");
    for (;;) {
        if (!spare && mkdirat(sessions_fd, claim, 0700) < 0)
            return pdk_error_set(err, errno, "cannot create a session directory in %s", sessions);
        s->dir_fd = openat(sessions_fd, claim, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (s->dir_fd < 0) {
            pdk_error_set(err, errno, "cannot open %s/%s", sessions, claim);
            goto fail;
        }
        bool busy = false;
        if (take_lock(s, &busy, err) == 0)
            break;
        if (!busy || !spare)
            goto fail;
        /* A spare whose last holder has not let go of it yet: leave it to the collector
         * and make a directory of our own. */
        pdk_error_clear(err);
        close(s->dir_fd);
        s->dir_fd = -1;
        char busy_name[80];
        snprintf(busy_name, sizeof(busy_name), REMOVED_PREFIX "busy.%s", claim + 1);
        if (renameat(sessions_fd, claim, sessions_fd, busy_name) < 0)
            pdk_rm_rf_at(sessions_fd, claim);
        spare = false;
    }
    if (s->mode == PDK_WORKSPACE_OVERLAY &&
        ((mkdirat(s->dir_fd, "upper", 0755) < 0 && (!spare || errno != EEXIST)) ||
         (mkdirat(s->dir_fd, "work", 0700) < 0 && (!spare || errno != EEXIST)))) {
        pdk_error_set(err, errno, "cannot create the layers of session %s", s->id);
        goto fail;
    }
    if (!s->boot_id)
        s->boot_id = pdk_session_current_boot_id();
    if (pdk_session_save(s, false, err) < 0)
        goto fail;
    pdk_crash_point("session-written");
    if (!s->named) {
        char marker[96];
        snprintf(marker, sizeof(marker), RUNNING_PREFIX "%s", s->id);
        if (linkat(s->dir_fd, "lock", sessions_fd, marker, 0) < 0) {
            pdk_error_set(err, errno, "cannot create %s/%s", sessions, marker);
            goto fail;
        }
        s->marked_running = true;
    }
    if (renameat2(sessions_fd, claim, sessions_fd, s->id, RENAME_NOREPLACE) < 0) {
        if (errno == EEXIST)
            exists_error(sessions_fd, s->id, err);
        else
            pdk_error_set(err, errno, "cannot create session directory %s", s->dir);
        goto fail;
    }
    pdk_crash_point("session-bound");
    return 0;
fail:
    pdk_session_run_ended(s);
    pdk_session_unlock(s);
    if (s->dir_fd >= 0) {
        close(s->dir_fd);
        s->dir_fd = -1;
    }
    pdk_rm_rf_at(sessions_fd, claim);
    return -1;
}

/* The session's directory opened (no metadata read yet). */
static int open_dir(const char *state_dir, const char *id, pdk_session **out, pdk_error *err)
{
    if (!pdk_session_name_valid(id))
        return pdk_error_set(err, 0, "'%s' is not a session id (see 'paddock sessions')", id);
    pdk_session *s = session_new(state_dir, id);
    s->dir_fd = open(s->dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (s->dir_fd < 0) {
        int e = errno;
        pdk_session_free(s);
        if (e == ENOENT)
            return pdk_error_set(err, 0, "no session named '%s' (see 'paddock sessions')", id);
        return pdk_error_set(err, e, "cannot open session %s", id);
    }
    *out = s;
    return 0;
}

/* The session opened and its metadata read, after its lock is taken when lock. */
static int open_and_load(const char *state_dir, const char *id, bool lock, pdk_session **out,
                         pdk_error *err)
{
    pdk_session *s = NULL;
    bool busy;
    if (open_dir(state_dir, id, &s, err) < 0)
        return -1;
    if ((lock && take_lock(s, &busy, err) < 0) || session_load(s, err) < 0) {
        pdk_session_free(s);
        return -1;
    }
    s->loaded = true;
    *out = s;
    return 0;
}

int pdk_session_open(const char *state_dir, const char *id, pdk_session **out, pdk_error *err)
{
    return open_and_load(state_dir, id, false, out, err);
}

int pdk_session_open_locked(const char *state_dir, const char *id, pdk_session **out,
                            pdk_error *err)
{
    return open_and_load(state_dir, id, true, out, err);
}

int pdk_session_open_for_removal(const char *state_dir, const char *id, pdk_session **out,
                                 pdk_error *err)
{
    pdk_session *s = NULL;
    bool busy;
    if (open_dir(state_dir, id, &s, err) < 0)
        return -1;
    if (take_lock(s, &busy, err) < 0) {
        /* Held by a run: refused. Not to be had for another reason (an incomplete session's
         * lock that cannot be made): no run holds it either. */
        if (busy) {
            pdk_session_free(s);
            return -1;
        }
        pdk_error_clear(err);
    }
    pdk_error problem = {0};
    if (session_load(s, &problem) == 0) {
        s->loaded = true;
    } else {
        clear_metadata(s);
        s->damaged = true;
    }
    *out = s;
    return 0;
}

char *pdk_session_current_boot_id(void)
{
    char *id = NULL;
    if (pdk_read_file_at(AT_FDCWD, "/proc/sys/kernel/random/boot_id", &id, NULL, 128) < 0)
        return xstrdup("");
    id[strcspn(id, "\n")] = '\0';
    return id;
}

#define VOLATILE_MARKER "work/work/incompat/volatile"

int pdk_session_clear_volatile(pdk_session *s, pdk_error *err)
{
    if (s->mode != PDK_WORKSPACE_OVERLAY)
        return 0;
    /* work/work holds nothing once the overlay is unmounted (overlayfs makes it anew at
     * every mount), so the marker goes with it. */
    _cleanup_close_ int work = pdk_open_beneath(s->dir_fd, "work", O_RDONLY | O_DIRECTORY, 0);
    if (work < 0)
        return errno == ENOENT ? 0
                               : pdk_error_set(err, errno, "session %s: %s/work", s->id, s->dir);
    if (pdk_rm_rf_at(work, "work") < 0)
        return pdk_error_set(err, errno, "session %s: cannot remove %s/%s", s->id, s->dir,
                             VOLATILE_MARKER);
    return 0;
}

int pdk_session_recover_layer(pdk_session *s, bool *across_reboot, pdk_error *err)
{
    *across_reboot = false;
    if (s->mode != PDK_WORKSPACE_OVERLAY)
        return 0;
    struct stat st;
    if (fstatat(s->dir_fd, VOLATILE_MARKER, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return 0; /* the last run ended cleanly */
    _cleanup_free_ char *now = pdk_session_current_boot_id();
    *across_reboot = s->boot_id && s->boot_id[0] && now[0] && strcmp(s->boot_id, now) != 0;
    return pdk_session_clear_volatile(s, err);
}

int pdk_session_open_upper(const pdk_session *s, pdk_error *err)
{
    int fd = openat(s->dir_fd, "upper", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return pdk_error_set(err, errno, "session %s: cannot open its layer %s/upper", s->id,
                             s->dir);
    return fd;
}

int pdk_session_open_layers(const pdk_session *s, int *lower, int *upper, pdk_error *err)
{
    *lower = *upper = -1;
    if (s->mode == PDK_WORKSPACE_DIRECT)
        return pdk_error_set(err, 0,
                             "session %s wrote straight to the workspace (direct mode): it has "
                             "no layer to review or commit",
                             s->id);
    _cleanup_close_ int l = open(s->workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (l < 0)
        return pdk_error_set(err, errno, "cannot open the workspace %s of session %s", s->workspace,
                             s->id);
    int u = pdk_session_open_upper(s, err);
    if (u < 0)
        return -1;
    *lower = steal_fd(&l);
    *upper = u;
    return 0;
}

/* Rename the session out of sight (a crash half-way through removing it never leaves a
 * half-removed session that still looks like one); *doomed gets the new name. */
static int retire(pdk_session *s, int *parent_fd, char **doomed, pdk_error *err)
{
    _cleanup_free_ char *parent = xstrdup(s->dir);
    char *slash = strrchr(parent, '/');
    if (!slash)
        return pdk_error_set(err, EINVAL, "session %s: bad directory %s", s->id, s->dir);
    *slash = '\0';
    _cleanup_close_ int pfd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0)
        return pdk_error_set(err, errno, "cannot open %s", parent);
    _cleanup_free_ char *name = xasprintf(REMOVED_PREFIX "%s.%d", s->id, (int)getpid());
    if (renameat(pfd, s->id, pfd, name) < 0)
        return pdk_error_set(err, errno, "cannot remove session %s", s->id);
    *parent_fd = steal_fd(&pfd);
    *doomed = steal_pointer(&name);
    return 0;
}

int pdk_session_retire(pdk_session *s, pdk_error *err)
{
    int pfd = -1;
    _cleanup_free_ char *doomed = NULL;
    if (retire(s, &pfd, &doomed, err) < 0)
        return -1;
    close(pfd);
    return 0;
}

int pdk_session_remove(pdk_session *s, pdk_error *err)
{
    _cleanup_close_ int pfd = -1;
    _cleanup_free_ char *doomed = NULL;
    if (retire(s, &pfd, &doomed, err) < 0)
        return -1;
    if (pdk_rm_rf_at(pfd, doomed) < 0)
        return pdk_error_set(err, errno, "session %s: cannot remove %s", s->id, doomed);
    return 0;
}

/* Remove one entry beneath dirfd/name, deepest first: 1 when something was removed and
 * more may remain, 0 when name itself was removed (or is gone), -1 on error. */
static int remove_one(int dirfd, const char *name, int depth)
{
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if ((errno != EISDIR && errno != EPERM) || depth > 64)
        return -1;
    if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
        return 0;
    if (errno != ENOTEMPTY && errno != EEXIST)
        return -1;
    _cleanup_close_ int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0 && errno == EACCES) {
        /* overlayfs makes work/work with mode 0: as its owner, open it up */
        if (pdk_rm_rf_at(dirfd, name) < 0)
            return -1;
        return 0;
    }
    if (sub < 0)
        return errno == ENOENT ? 0 : -1;
    int dupfd = fcntl(sub, F_DUPFD_CLOEXEC, 0);
    DIR *d = dupfd >= 0 ? fdopendir(dupfd) : NULL;
    if (!d) {
        if (dupfd >= 0)
            close(dupfd);
        return -1;
    }
    struct dirent *de;
    int r = 0;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        r = remove_one(sub, de->d_name, depth + 1) < 0 ? -1 : 1;
        break;
    }
    closedir(d);
    return r;
}

/* True when the upper layer of the session directory dfd/name is as a new one's: empty,
 * and without extended attributes but the uuid overlayfs gives it. */
static bool upper_is_pristine(int dfd, const char *name)
{
    _cleanup_free_ char *path = xasprintf("%s/upper", name);
    _cleanup_close_ int fd = openat(dfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || (st.st_mode & 07777) != 0755 || st.st_uid != getuid())
        return false;
    char names[256];
    ssize_t n = flistxattr(fd, names, sizeof(names));
    if (n < 0)
        return false;
    for (ssize_t at = 0; at < n; at += (ssize_t)strlen(names + at) + 1)
        if (strcmp(names + at, "user.overlay.uuid") != 0 &&
            strcmp(names + at, "trusted.overlay.uuid") != 0)
            return false;
    int dupfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    DIR *d = dupfd >= 0 ? fdopendir(dupfd) : NULL;
    if (!d) {
        if (dupfd >= 0)
            close(dupfd);
        return false;
    }
    bool empty = true;
    struct dirent *de;
    while (empty && (de = readdir(d)))
        empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
    closedir(d);
    return empty;
}

/* A retired session that changed nothing becomes a spare: its overlay work directory (with
 * the volatile marker) goes, the rest stays. Cheaper than removing it and making a spare
 * anew (directories cost most to make and to remove, and every inode freed slows the next
 * one made). Its old session.json is written over before the spare gets a name (see
 * pdk_session_materialize). Only once the run that retired it has let go of its lock. 1
 * when one was recycled. */
static int recycle_retired(int dfd, const char *slot)
{
    _cleanup_closedir_ DIR *d = NULL;
    int dupfd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    if (dupfd < 0 || !(d = fdopendir(dupfd))) {
        if (dupfd >= 0)
            close(dupfd);
        return 0;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!pdk_str_has_prefix(de->d_name, REMOVED_PREFIX) ||
            pdk_str_has_prefix(de->d_name, REMOVED_PREFIX "spare."))
            continue;
        if (!upper_is_pristine(dfd, de->d_name))
            continue;
        _cleanup_close_ int sfd = pdk_open_beneath(dfd, de->d_name, O_RDONLY | O_DIRECTORY, 0);
        if (sfd < 0)
            continue;
        _cleanup_close_ int lock = pdk_open_regular_at(sfd, "lock", O_RDWR, 0);
        if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0)
            continue; /* still held by the run that retired it (or no lock: not a spare) */
        _cleanup_close_ int w =
            openat(sfd, "work", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (w < 0 || pdk_rm_rf_at(w, "work") < 0)
            continue;
        if (renameat2(dfd, de->d_name, dfd, slot, RENAME_NOREPLACE) == 0)
            return 1;
    }
    return 0;
}

int pdk_session_spare_step(const char *state_dir)
{
    _cleanup_free_ char *sessions = pdk_path_join(state_dir, "sessions");
    /* Readable (not O_PATH): recycle_retired() lists it. */
    _cleanup_close_ int dfd = open(sessions, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return 0;
    int free_slot = -1;
    for (int i = 0; i < SPARE_SLOTS && free_slot < 0; i++) {
        char name[32];
        snprintf(name, sizeof(name), SPARE_PREFIX "%d", i);
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
            free_slot = i;
    }
    if (free_slot < 0)
        return 0;
    char slot[32];
    snprintf(slot, sizeof(slot), SPARE_PREFIX "%d", free_slot);
    if (recycle_retired(dfd, slot) > 0)
        return 1;
    /* Made under a name the collector removes, should this process die half-way. */
    char tmp[64], name[32];
    snprintf(tmp, sizeof(tmp), REMOVED_PREFIX "spare.%d", (int)getpid());
    snprintf(name, sizeof(name), SPARE_PREFIX "%d", free_slot);
    if (mkdirat(dfd, tmp, 0700) < 0)
        return -1;
    _cleanup_close_ int sfd = openat(dfd, tmp, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    int lock = sfd < 0 ? -1 : openat(sfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    bool made = lock >= 0 && mkdirat(sfd, "upper", 0755) == 0 && mkdirat(sfd, "work", 0700) == 0;
    if (lock >= 0)
        close(lock);
    if (made && renameat2(dfd, tmp, dfd, name, RENAME_NOREPLACE) == 0)
        return 1;
    pdk_rm_rf_at(dfd, tmp);
    return made ? 0 : -1;
}

size_t pdk_session_retired_count(const char *state_dir)
{
    _cleanup_free_ char *sessions = pdk_path_join(state_dir, "sessions");
    _cleanup_closedir_ DIR *d = opendir(sessions);
    size_t n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (pdk_str_has_prefix(de->d_name, REMOVED_PREFIX))
            n++;
    return n;
}

/* Whether pid is gone (a name made by a process that was killed). */
static bool process_gone(long pid)
{
    return pid > 0 && pid != getpid() && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* A session directory a run was making (CLAIM_PREFIX PID.N) when it was killed. */
static bool is_abandoned_claim(const char *name)
{
    if (!pdk_str_has_prefix(name, CLAIM_PREFIX))
        return false;
    char *end = NULL;
    long pid = strtol(name + strlen(CLAIM_PREFIX), &end, 10);
    return *end == '.' && process_gone(pid);
}

/* Whether the session directory dfd/id is what an unnamed run killed before its end left:
 * it never finished a run, and its layer is as a new one's. The caller holds its lock
 * (lock_fd, an fd of the lock file): no run holds it. */
static bool is_abandoned_session(int dfd, const char *id, const char *state_dir, int lock_fd)
{
    if (!pdk_session_name_valid(id) || !upper_is_pristine(dfd, id))
        return false;
    pdk_session *s = session_new(state_dir, id);
    s->dir_fd = pdk_open_beneath(dfd, id, O_PATH | O_DIRECTORY, 0);
    struct stat mine, theirs;
    pdk_error ignored = {0};
    bool abandoned = s->dir_fd >= 0 && fstat(lock_fd, &mine) == 0 &&
                     fstatat(s->dir_fd, "lock", &theirs, AT_SYMLINK_NOFOLLOW) == 0 &&
                     mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev &&
                     session_load(s, &ignored) == 0 && !s->named && s->runs == 0;
    pdk_session_free(s);
    return abandoned;
}

/* A RUNNING_PREFIX marker whose run is gone (no one holds the lock it names): the session
 * it marks is retired when the run left it empty (else it stays, for review), and the
 * marker goes. 1 when it was one. */
static int end_abandoned_run(int dfd, const char *name, const char *state_dir)
{
    _cleanup_close_ int lock = pdk_open_regular_at(dfd, name, O_RDWR, 0);
    if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0)
        return 0; /* its run goes on (or it is no marker) */
    const char *id = name + strlen(RUNNING_PREFIX);
    if (is_abandoned_session(dfd, id, state_dir, lock)) {
        _cleanup_free_ char *doomed = xasprintf(REMOVED_PREFIX "%s.%d", id, (int)getpid());
        if (renameat(dfd, id, dfd, doomed) == 0)
            pdk_debug("retired session %s, left empty by a run that was killed", id);
    }
    (void)unlinkat(dfd, name, 0);
    return 1;
}

/* What a killed run left under name (a half-made session, the marker of its unnamed
 * session) dealt with: 1 when it was such a thing, 0 when not, -1 on an error. */
static int collect_abandoned(int dfd, const char *name, const char *state_dir)
{
    if (is_abandoned_claim(name)) {
        /* Out of sight like a retired session: recycled or removed from here on. */
        _cleanup_free_ char *doomed = xasprintf(REMOVED_PREFIX "%s", name + 1);
        if (renameat(dfd, name, dfd, doomed) < 0 && errno != ENOENT)
            return -1;
        return 1;
    }
    if (pdk_str_has_prefix(name, RUNNING_PREFIX))
        return end_abandoned_run(dfd, name, state_dir);
    return 0;
}

int pdk_session_collect_abandoned(const char *state_dir)
{
    _cleanup_free_ char *sessions = pdk_path_join(state_dir, "sessions");
    _cleanup_closedir_ DIR *d = opendir(sessions);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) && n < 64)
        if (de->d_name[0] == '.' && collect_abandoned(dirfd(d), de->d_name, state_dir) > 0)
            n++;
    return n;
}

int pdk_session_collect_step(const char *state_dir)
{
    _cleanup_free_ char *sessions = pdk_path_join(state_dir, "sessions");
    _cleanup_closedir_ DIR *d = opendir(sessions);
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        int done = collect_abandoned(dirfd(d), de->d_name, state_dir);
        if (done != 0)
            return done;
        if (!pdk_str_has_prefix(de->d_name, REMOVED_PREFIX))
            continue;
        int r = remove_one(dirfd(d), de->d_name, 0);
        if (r < 0) {
            pdk_debug("removing %s/%s: %s", sessions, de->d_name, strerror(errno));
            return -1;
        }
        return 1;
    }
    return 0;
}

void pdk_session_run_ended(pdk_session *s)
{
    if (!s->marked_running)
        return;
    _cleanup_free_ char *marker = xstrdup(s->dir);
    char *slash = strrchr(marker, '/');
    _cleanup_free_ char *path =
        xasprintf("%.*s/" RUNNING_PREFIX "%s", (int)(slash - marker), marker, s->id);
    (void)unlink(path);
    s->marked_running = false;
}

static int compare_created(const void *a, const void *b)
{
    const pdk_session *x = *(pdk_session *const *)a, *y = *(pdk_session *const *)b;
    if (x->created_ns != y->created_ns)
        return x->created_ns < y->created_ns ? -1 : 1;
    return strcmp(x->id, y->id);
}

int pdk_session_list(const char *state_dir, pdk_session ***out, size_t *count, pdk_error *err)
{
    *out = NULL;
    *count = 0;
    _cleanup_free_ char *sessions = pdk_path_join(state_dir, "sessions");
    _cleanup_closedir_ DIR *d = opendir(sessions);
    if (!d) {
        if (errno == ENOENT)
            return 0;
        return pdk_error_set(err, errno, "cannot list %s", sessions);
    }
    pdk_session **list = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        pdk_session *s = NULL;
        pdk_error e = {0};
        if (pdk_session_open(state_dir, de->d_name, &s, &e) < 0) {
            pdk_warn("%s", e.message);
            continue;
        }
        list = xrealloc(list, (n + 1) * sizeof(*list));
        list[n++] = s;
    }
    if (n > 1)
        qsort(list, n, sizeof(*list), compare_created);
    *out = list;
    *count = n;
    return 0;
}

void pdk_session_list_free(pdk_session **list, size_t count)
{
    for (size_t i = 0; i < count; i++)
        pdk_session_free(list[i]);
    free(list);
}

void pdk_session_note_committed(pdk_session *s, const char *path, int64_t ctime_ns)
{
    for (size_t i = 0; i < s->committed_count; i++) {
        if (strcmp(s->committed[i].path, path) == 0) {
            s->committed[i].ctime_ns = ctime_ns;
            return;
        }
    }
    s->committed = xrealloc(s->committed, (s->committed_count + 1) * sizeof(*s->committed));
    s->committed[s->committed_count].path = xstrdup(path);
    s->committed[s->committed_count].ctime_ns = ctime_ns;
    s->committed_count++;
}
