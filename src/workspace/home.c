/* home.c: see home.h. */
#include "home.h"

#include "fsutil.h"
#include "policy.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sodium.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory name beneath dirfd, made when missing; an fd of it (O_PATH), or -1 with
 * errno (ELOOP: a symlink, ENOTDIR: something else). */
static int make_dir_at(int dirfd, const char *name, mode_t mode)
{
    if (mkdirat(dirfd, name, mode) < 0 && errno != EEXIST)
        return -1;
    int fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 && errno == ENOTDIR && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(st.st_mode))
        errno = ELOOP;
    return fd;
}

/* The empty file name beneath dirfd, made when missing; 0, or -1 with errno. */
static int make_file_at(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    if (errno != EEXIST)
        return -1;
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -1;
    if (S_ISLNK(st.st_mode))
        return errno = ELOOP, -1;
    if (!S_ISREG(st.st_mode))
        return errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL, -1;
    return 0;
}

static int refuse(pdk_error *err, int e, const char *dir, const char *rel)
{
    if (e == ELOOP)
        return pdk_error_set(err, 0,
                             "persistent home %s: %s is a symlink, where paddock keeps an "
                             "agent's configuration read-only (remove it: rm %s/%s)",
                             dir, rel, dir, rel);
    if (e == ENOTDIR || e == EISDIR || e == EINVAL)
        return pdk_error_set(err, 0, "persistent home %s: %s is not a %s (remove it: rm -r %s/%s)",
                             dir, rel, e == EISDIR || e == EINVAL ? "regular file" : "directory",
                             dir, rel);
    return pdk_error_set(err, e, "persistent home %s: making %s", dir, rel);
}

static void push_parent(char ***parents, const char *rel)
{
    if (!pdk_strv_contains(*parents, rel))
        pdk_strv_push(parents, rel);
}

int pdk_home_prepare(const char *state_dir, const char *name, const char *const *protected,
                     char **dir_out, char ***parents_out, pdk_error *err)
{
    *dir_out = NULL;
    *parents_out = NULL;
    _cleanup_free_ char *homes = pdk_path_join(state_dir, "homes");
    _cleanup_free_ char *dir = pdk_path_join(homes, name);
    _cleanup_close_ int state_fd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (state_fd < 0)
        return pdk_error_set(err, errno, "state dir %s", state_dir);
    _cleanup_close_ int homes_fd = make_dir_at(state_fd, "homes", 0700);
    if (homes_fd < 0)
        return pdk_error_set(err, errno == ELOOP ? 0 : errno, "%s%s", homes,
                             errno == ELOOP ? " is a symlink (remove it)" : "");
    _cleanup_close_ int home_fd = make_dir_at(homes_fd, name, 0700);
    if (home_fd < 0)
        return refuse(err, errno, homes, name);

    char **parents = NULL;
    for (size_t i = 0; protected && protected[i]; i++) {
        _cleanup_free_ char *rel = xstrdup(protected[i]);
        size_t len = strlen(rel);
        bool is_dir = len > 0 && rel[len - 1] == '/';
        while (len > 0 && rel[len - 1] == '/')
            rel[--len] = '\0';
        if (len == 0 || rel[0] == '/' || strstr(rel, ".."))
            continue;
        /* Every parent, then the entry, one component at a time from the home. */
        _cleanup_close_ int at = dup(home_fd);
        if (at < 0) {
            pdk_strv_free(parents);
            return pdk_error_set(err, errno, "dup");
        }
        for (char *p = rel;; p++) {
            if (*p != '/' && *p != '\0')
                continue;
            char saved = *p;
            *p = '\0';
            const char *leaf = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
            if (saved == '/' || is_dir) {
                int next = make_dir_at(at, leaf, 0755);
                if (next < 0) {
                    pdk_strv_free(parents);
                    return refuse(err, errno, dir, rel);
                }
                close(at);
                at = next;
                if (saved == '/')
                    push_parent(&parents, rel);
            } else if (make_file_at(at, leaf) < 0) {
                pdk_strv_free(parents);
                return refuse(err, errno, dir, rel);
            }
            *p = saved;
            if (saved == '\0')
                break;
        }
    }
    if (!parents)
        parents = xcalloc(1, sizeof(char *));
    *parents_out = parents;
    *dir_out = steal_pointer(&dir);
    return 0;
}

/* ---- placeholders kept with a persistent home ----
 *
 * The file: {"home": "DEV:INO:BIRTH", "placeholders": {KEY: {"random": HEX, "secrets": [NAME]}}}.
 * The pure part (pdk_home_placeholders_apply, _drop) works on its text; the rest reads and
 * writes it under its lock. */

#define PLACEHOLDERS_DIR      "home-placeholders"
#define PLACEHOLDERS_FILE_MAX (1 << 20)

/* text (len bytes, NULL: no file) as the file's object (new), NULL when it is not one. */
static json_t *parse_placeholders(const char *text, size_t len)
{
    if (!text)
        return json_object();
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    if (json_is_object(root))
        return root;
    json_decref(root);
    return NULL;
}

static char *dump_placeholders(json_t *root)
{
    char *text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    if (!text)
        abort(); /* allocation failure */
    return text;
}

/* Whether s is a random part as paddock makes them. */
static bool is_random_part(const char *s)
{
    size_t n = 0;
    for (; s && s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return false;
    return n == PDK_PLACEHOLDER_RANDOM_HEX;
}

/* Whether the JSON array a holds exactly the names of secrets, in order. */
static bool same_secrets(const json_t *a, char *const *secrets)
{
    size_t n = pdk_strv_length(secrets);
    if (!json_is_array(a) || json_array_size(a) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!pdk_streq(json_string_value(json_array_get(a, i)), secrets[i]))
            return false;
    return true;
}

static void new_random_part(char out[PDK_PLACEHOLDER_RANDOM_HEX + 1])
{
    unsigned char r[PDK_PLACEHOLDER_RANDOM_HEX / 2];
    randombytes_buf(r, sizeof(r));
    sodium_bin2hex(out, PDK_PLACEHOLDER_RANDOM_HEX + 1, r, sizeof(r));
}

/* Whether stored, an identity as files written before the birth time was in it have it
 * ("DEV:INO"), is identity's home ("DEV:INO:BIRTH"). */
static bool same_legacy_home(const char *stored, const char *identity)
{
    const char *colon = strchr(stored, ':');
    size_t n = strlen(stored);
    return colon && !strchr(colon + 1, ':') && strncmp(identity, stored, n) == 0 &&
           identity[n] == ':';
}

int pdk_home_placeholders_apply(const char *text, size_t len, const char *identity,
                                pdk_home_placeholder *list, size_t count, char **updated)
{
    *updated = NULL;
    for (size_t i = 0; i < count; i++)
        new_random_part(list[i].random);
    json_t *root = parse_placeholders(text, len);
    if (!root)
        return -1;
    json_t *kept = json_object_get(root, "placeholders");
    bool changed = false;
    const char *home = json_string_value(json_object_get(root, "home"));
    if (home && !pdk_streq(home, identity) && json_is_object(kept) &&
        same_legacy_home(home, identity)) {
        /* written before the identity had the birth time: the same home, now with it */
        json_object_set_new(root, "home", json_string(identity));
        changed = true;
    } else if (!pdk_streq(home, identity) || !json_is_object(kept)) {
        /* another home (made anew), or no file yet: nothing of it holds */
        json_object_set_new(root, "home", json_string(identity));
        kept = json_object();
        json_object_set_new(root, "placeholders", kept);
        changed = true;
    }
    for (size_t i = 0; i < count; i++) {
        json_t *entry = json_object_get(kept, list[i].key);
        const char *random = json_string_value(json_object_get(entry, "random"));
        if (is_random_part(random) &&
            same_secrets(json_object_get(entry, "secrets"), list[i].secrets)) {
            memcpy(list[i].random, random, PDK_PLACEHOLDER_RANDOM_HEX + 1);
            continue;
        }
        json_t *secrets = json_array();
        for (size_t j = 0; list[i].secrets && list[i].secrets[j]; j++)
            json_array_append_new(secrets, json_string(list[i].secrets[j]));
        json_object_set_new(kept, list[i].key,
                            json_pack("{s:s, s:o}", "random", list[i].random, "secrets", secrets));
        changed = true;
    }
    if (changed)
        *updated = dump_placeholders(root);
    json_decref(root);
    return 0;
}

int pdk_home_placeholders_drop(const char *text, size_t len, const char *secret, size_t *dropped,
                               char **updated)
{
    *updated = NULL;
    *dropped = 0;
    json_t *root = parse_placeholders(text, len);
    if (!root)
        return -1;
    json_t *kept = json_object_get(root, "placeholders");
    const char *key;
    json_t *entry, *tmp;
    json_object_foreach_safe(kept, tmp, key, entry)
    {
        size_t j;
        json_t *name;
        bool uses = false;
        json_array_foreach(json_object_get(entry, "secrets"), j, name) uses |=
            pdk_streq(json_string_value(name), secret);
        if (uses) {
            json_object_del(kept, key);
            (*dropped)++;
        }
    }
    if (*dropped > 0)
        *updated = dump_placeholders(root);
    json_decref(root);
    return 0;
}

/* STATE/home-placeholders, made when missing and create: an fd (O_PATH), -1 with errno
 * (ENOENT when it is missing and not to be made). */
static int placeholders_dir(const char *state_dir, bool create)
{
    _cleanup_close_ int state_fd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (state_fd < 0)
        return -1;
    if (create)
        return make_dir_at(state_fd, PLACEHOLDERS_DIR, 0700);
    return openat(state_fd, PLACEHOLDERS_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* The lock of home name's file, held while it is read, changed and written. */
static int lock_placeholders(int dir, const char *name, pdk_error *err)
{
    _cleanup_free_ char *lock_name = xasprintf("%s.lock", name);
    int fd = openat(dir, lock_name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0)
        return pdk_error_set(err, errno, "cannot open %s/%s", PLACEHOLDERS_DIR, lock_name);
    while (flock(fd, LOCK_EX) < 0) {
        if (errno != EINTR) {
            int e = errno;
            close(fd);
            return pdk_error_set(err, e, "cannot lock %s/%s", PLACEHOLDERS_DIR, lock_name);
        }
    }
    return fd;
}

/* The file's text (*text NULL when there is none; a FIFO or anything but a regular file
 * is an error, never opened). */
static int read_placeholders(int dir, const char *file, const char *state_dir, char **text,
                             size_t *len, pdk_error *err)
{
    *text = NULL;
    *len = 0;
    int fd = pdk_open_regular_beneath(dir, file);
    if (fd < 0 && errno == ENOENT)
        return 0;
    int r = fd < 0 ? -1 : pdk_read_all(fd, text, len, PLACEHOLDERS_FILE_MAX);
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (r < 0)
        return pdk_error_set(err, e,
                             "cannot read %s/%s/%s (remove it: its credentials get new "
                             "placeholders)",
                             state_dir, PLACEHOLDERS_DIR, file);
    return 0;
}

static int damaged(pdk_error *err, const char *state_dir, const char *file)
{
    return pdk_error_set(err, 0,
                         "%s/%s/%s is damaged (remove it: its credentials get new "
                         "placeholders)",
                         state_dir, PLACEHOLDERS_DIR, file);
}

static int write_placeholders(int dir, const char *file, const char *state_dir, const char *text,
                              pdk_error *err)
{
    if (pdk_write_file_atomic(dir, file, text, strlen(text), 0600, true) < 0)
        return pdk_error_set(err, errno, "cannot write %s/%s/%s", state_dir, PLACEHOLDERS_DIR,
                             file);
    return 0;
}

int pdk_home_placeholders(const char *state_dir, const char *name, pdk_home_placeholder *list,
                          size_t count, bool write, pdk_error *err)
{
    /* What is not kept gets a fresh one, whatever happens below. */
    for (size_t i = 0; i < count; i++)
        new_random_part(list[i].random);
    /* The home's directory, by identity: one made anew is another home. */
    _cleanup_free_ char *homes = pdk_path_join(state_dir, "homes");
    struct stat hs;
    _cleanup_close_ int homes_fd = open(homes, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (homes_fd < 0 || fstatat(homes_fd, name, &hs, AT_SYMLINK_NOFOLLOW) < 0)
        return pdk_error_set(err, errno, "persistent home %s/%s", homes, name);
    if (!S_ISDIR(hs.st_mode))
        return pdk_error_set(err, ENOTDIR, "persistent home %s/%s", homes, name);
    /* "DEV:INO:BIRTH": a home removed and made again may get the same inode number, never
     * the same birth time (where the filesystem keeps one; else "DEV:INO" alone). */
    char identity[96];
    struct statx sx;
    if (statx(homes_fd, name, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) == 0 &&
        (sx.stx_mask & STATX_BTIME))
        snprintf(identity, sizeof(identity), "%llu:%llu:%lld.%09u", (unsigned long long)hs.st_dev,
                 (unsigned long long)hs.st_ino, (long long)sx.stx_btime.tv_sec,
                 (unsigned)sx.stx_btime.tv_nsec);
    else
        snprintf(identity, sizeof(identity), "%llu:%llu", (unsigned long long)hs.st_dev,
                 (unsigned long long)hs.st_ino);
    _cleanup_close_ int dir = placeholders_dir(state_dir, write);
    if (dir < 0) {
        if (!write && errno == ENOENT)
            return 0;
        return pdk_error_set(err, errno == ELOOP ? 0 : errno, "%s/%s%s", state_dir,
                             PLACEHOLDERS_DIR, errno == ELOOP ? " is a symlink (remove it)" : "");
    }
    _cleanup_close_ int lock = write ? lock_placeholders(dir, name, err) : -1;
    if (write && lock < 0)
        return -1;
    _cleanup_free_ char *file = xasprintf("%s.json", name);
    _cleanup_free_ char *text = NULL, *updated = NULL;
    size_t len;
    if (read_placeholders(dir, file, state_dir, &text, &len, err) < 0)
        return -1;
    if (pdk_home_placeholders_apply(text, len, identity, list, count, &updated) < 0)
        return damaged(err, state_dir, file);
    return updated && write ? write_placeholders(dir, file, state_dir, updated, err) : 0;
}

int pdk_home_placeholders_forget(const char *state_dir, const char *secret, size_t *forgotten,
                                 pdk_error *err)
{
    if (forgotten)
        *forgotten = 0;
    _cleanup_close_ int dir = placeholders_dir(state_dir, false);
    if (dir < 0)
        return errno == ENOENT ? 0
                               : pdk_error_set(err, errno, "%s/%s", state_dir, PLACEHOLDERS_DIR);
    int list_fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = list_fd < 0 ? NULL : fdopendir(list_fd);
    if (!d) {
        if (list_fd >= 0)
            close(list_fd);
        return pdk_error_set(err, errno, "cannot list %s/%s", state_dir, PLACEHOLDERS_DIR);
    }
    char **files = NULL;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.' && pdk_str_has_suffix(e->d_name, ".json"))
            pdk_strv_push(&files, e->d_name);
    closedir(d);
    int r = 0;
    for (size_t i = 0; files && files[i] && r == 0; i++) {
        _cleanup_free_ char *name = xstrndup(files[i], strlen(files[i]) - strlen(".json"));
        _cleanup_close_ int lock = lock_placeholders(dir, name, err);
        _cleanup_free_ char *text = NULL, *updated = NULL;
        size_t len, dropped = 0;
        if (lock < 0 || read_placeholders(dir, files[i], state_dir, &text, &len, err) < 0)
            r = -1;
        else if (text && pdk_home_placeholders_drop(text, len, secret, &dropped, &updated) < 0)
            r = damaged(err, state_dir, files[i]);
        else if (updated)
            r = write_placeholders(dir, files[i], state_dir, updated, err);
        if (r == 0 && forgotten)
            *forgotten += dropped;
    }
    pdk_strv_free(files);
    return r;
}
