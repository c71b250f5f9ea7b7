/* vault.c: see vault.h. */
#include "vault.h"

#include "fsutil.h"
#include "log.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC     "PDKVAULT1\n"
#define MAGIC_LEN (sizeof(MAGIC) - 1)
#define NONCE_LEN crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define KEY_LEN   crypto_aead_xchacha20poly1305_ietf_KEYBYTES
#define MAC_LEN   crypto_aead_xchacha20poly1305_ietf_ABYTES
#define FILE_MAX  (64 * 1024 * 1024)
#define VAULT_NEW "vault.new"

struct pdk_vault {
    char *state_dir;
    char *path;
    char *key_path;
    char *lock_path;
    unsigned char key[KEY_LEN];
    bool have_key;   /* false: opened read-only before any key existed */
    json_t *secrets; /* {NAME: {kind, value, created_ns, used_ns}} */
};

/* jansson's free, wiping what it frees: the vault's plaintext passes through jansson (the
 * parser's buffers, the strings of every secret, the encoder's buffers), and memory handed
 * back to malloc keeps its bytes. The cost is a memset of each block JSON frees (about 8%
 * of jansson's own time: bench/bench_json_wipe.c). */
static void wiping_free(void *p)
{
    if (p) {
        sodium_memzero(p, malloc_usable_size(p));
        free(p);
    }
}

static void install_wiping_free(void)
{
    json_set_alloc_funcs(malloc, wiping_free);
}

void pdk_vault_wipe_json_memory(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_wiping_free);
}

bool pdk_vault_name_valid(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > PDK_VAULT_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!pdk_name_char(name[i]))
            return false;
    return true;
}

static bool hex_key(const char *text, size_t len, unsigned char key[KEY_LEN])
{
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        len--;
    size_t bin_len = 0;
    const char *end = NULL;
    return len == 2 * KEY_LEN &&
           sodium_hex2bin(key, KEY_LEN, text, len, NULL, &bin_len, &end) == 0 &&
           bin_len == KEY_LEN && end == text + len;
}

/* Write data (mode 0600, fsynced) to a file that has no name until it is linked as name
 * in dir (O_TMPFILE; where a filesystem lacks it, a temporary name that the next change of
 * the vault removes should this process die first): a process killed before the link
 * leaves no copy behind. 0, or -1 with errno (EEXIST: name exists and was left as it is). */
static int write_unnamed(int dir, const void *data, size_t len, const char *name)
{
    int fd = openat(dir, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    char fallback[64] = "";
    if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        snprintf(fallback, sizeof(fallback), "%s.%d.tmp", name, (int)getpid());
        (void)unlinkat(dir, fallback, 0);
        fd = openat(dir, fallback, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    }
    if (fd < 0)
        return -1;
    int r = pdk_write_all(fd, data, len) < 0 || fsync(fd) < 0 ? -1 : 0;
    if (r == 0) {
        pdk_crash_point("vault-file-written");
        if (fallback[0]) {
            r = linkat(dir, fallback, dir, name, 0);
        } else {
            char proc[64];
            snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
            r = linkat(AT_FDCWD, proc, dir, name, AT_SYMLINK_FOLLOW);
        }
    }
    int e = errno;
    close(fd);
    if (fallback[0])
        unlinkat(dir, fallback, 0);
    errno = e;
    return r;
}

/* The key from PADDOCK_VAULT_KEY, PADDOCK_VAULT_KEY_FD, or STATE/vault.key (made when
 * create and there is no vault yet). */
static int load_key(pdk_vault *v, bool create, pdk_error *err)
{
    const char *hex = getenv("PADDOCK_VAULT_KEY");
    if (hex && *hex) {
        if (!hex_key(hex, strlen(hex), v->key))
            return pdk_error_set(err, 0,
                                 "PADDOCK_VAULT_KEY is not a key (64 hex digits: 32 bytes)");
        return 0;
    }
    const char *fdname = getenv("PADDOCK_VAULT_KEY_FD");
    if (fdname && *fdname) {
        char *end = NULL;
        long fd = strtol(fdname, &end, 10);
        char buf[2 * KEY_LEN + 4];
        ssize_t n = *end || fd < 0 ? -1 : read((int)fd, buf, sizeof(buf));
        if (n == (ssize_t)KEY_LEN) {
            memcpy(v->key, buf, KEY_LEN);
        } else if (n <= 0 || !hex_key(buf, (size_t)n, v->key)) {
            sodium_memzero(buf, sizeof(buf));
            return pdk_error_set(err, 0,
                                 "PADDOCK_VAULT_KEY_FD=%s does not give a key (32 bytes, or 64 "
                                 "hex digits, on that descriptor)",
                                 fdname);
        }
        sodium_memzero(buf, sizeof(buf));
        return 0;
    }
    int fd = pdk_open_regular_at(AT_FDCWD, v->key_path, O_RDONLY, 0);
    if (fd >= 0) {
        struct stat st;
        ssize_t n = -1;
        if (fstat(fd, &st) == 0 && (st.st_mode & 077) == 0)
            n = read(fd, v->key, KEY_LEN);
        else if (fstat(fd, &st) == 0) {
            close(fd);
            return pdk_error_set(err, 0,
                                 "%s can be read by others (chmod 600 %s, and consider the "
                                 "secrets in the vault exposed)",
                                 v->key_path, v->key_path);
        }
        close(fd);
        if (n != (ssize_t)KEY_LEN)
            return pdk_error_set(err, 0, "%s is not a vault key (32 bytes)", v->key_path);
        return 0;
    }
    if (errno == ENXIO || errno == EISDIR || errno == ELOOP)
        return pdk_error_set(err, 0,
                             "%s is not a regular file, so not a vault key (remove it if you "
                             "made it; the vault cannot be read without its key)",
                             v->key_path);
    if (errno != ENOENT)
        return pdk_error_set(err, errno, "cannot read %s", v->key_path);
    if (access(v->path, F_OK) == 0)
        return pdk_error_set(err, 0,
                             "the vault %s exists but its key %s does not (give the key with "
                             "PADDOCK_VAULT_KEY or PADDOCK_VAULT_KEY_FD)",
                             v->path, v->key_path);
    if (!create)
        return 1; /* no key and no vault: an empty vault, read-only */
    /* Made once: written to a file without a name, then linked into place (a second
     * paddock making one at the same time reads the winner's). A kill at any moment leaves
     * no copy of the key behind. */
    randombytes_buf(v->key, KEY_LEN);
    _cleanup_close_ int dir = open(v->state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0 || write_unnamed(dir, v->key, KEY_LEN, "vault.key") < 0) {
        if (dir >= 0 && errno == EEXIST)
            return load_key(v, false, err); /* someone else's is there now */
        return pdk_error_set(err, errno, "cannot create %s", v->key_path);
    }
    if (pdk_fsync_dir(dir) < 0)
        return pdk_error_set(err, errno, "cannot make %s durable", v->key_path);
    return 0;
}

/* Read and decrypt the vault file into v->secrets (empty when there is none). */
static int load(pdk_vault *v, pdk_error *err)
{
    json_decref(v->secrets);
    v->secrets = NULL;
    _cleanup_free_ char *data = NULL;
    size_t len = 0;
    if (pdk_read_regular_file_at(AT_FDCWD, v->path, &data, &len, FILE_MAX) < 0) {
        if (errno == ENXIO || errno == EISDIR || errno == ELOOP)
            return pdk_error_set(err, 0,
                                 "the vault %s is not a regular file (remove it if you made it; "
                                 "nothing was changed)",
                                 v->path);
        if (errno != ENOENT)
            return pdk_error_set(err, errno, "cannot read the vault %s", v->path);
        v->secrets = json_object();
        return 0;
    }
    if (len < MAGIC_LEN + NONCE_LEN + MAC_LEN || memcmp(data, MAGIC, MAGIC_LEN) != 0)
        return pdk_error_set(err, 0,
                             "%s is not a paddock vault (its header is wrong; nothing was "
                             "changed)",
                             v->path);
    size_t clen = len - MAGIC_LEN - NONCE_LEN;
    unsigned char *plain = xmalloc(clen + 1);
    unsigned long long plen = 0;
    int r = crypto_aead_xchacha20poly1305_ietf_decrypt(
        plain, &plen, NULL, (const unsigned char *)data + MAGIC_LEN + NONCE_LEN, clen,
        (const unsigned char *)MAGIC, MAGIC_LEN, (const unsigned char *)data + MAGIC_LEN, v->key);
    if (r != 0) {
        free(plain);
        return pdk_error_set(err, 0,
                             "cannot decrypt the vault %s: it is encrypted under another key, or "
                             "damaged (nothing was changed)",
                             v->path);
    }
    plain[plen] = '\0';
    json_error_t jerr;
    json_t *root = json_loadb((const char *)plain, (size_t)plen, 0, &jerr);
    sodium_memzero(plain, (size_t)plen);
    free(plain);
    json_t *secrets = root ? json_object_get(root, "secrets") : NULL;
    if (!json_is_object(secrets)) {
        json_decref(root);
        return pdk_error_set(err, 0, "the vault %s decrypts to something else than a vault",
                             v->path);
    }
    v->secrets = json_incref(secrets);
    json_decref(root);
    return 0;
}

static int save(pdk_vault *v, pdk_error *err)
{
    json_t *root = json_pack("{s:O}", "secrets", v->secrets);
    char *text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(root);
    if (!text)
        return pdk_error_set(err, ENOMEM, "cannot encode the vault");
    size_t plen = strlen(text);
    size_t len = MAGIC_LEN + NONCE_LEN + plen + MAC_LEN;
    unsigned char *out = xmalloc(len);
    memcpy(out, MAGIC, MAGIC_LEN);
    randombytes_buf(out + MAGIC_LEN, NONCE_LEN);
    unsigned long long clen = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(
        out + MAGIC_LEN + NONCE_LEN, &clen, (const unsigned char *)text, plen,
        (const unsigned char *)MAGIC, MAGIC_LEN, NULL, out + MAGIC_LEN, v->key);
    sodium_memzero(text, plen);
    free(text);
    /* Written without a name, linked as VAULT_NEW (the one moment a kill leaves a copy:
     * the next change removes it, under the same lock) and renamed over the vault. */
    _cleanup_close_ int dir = open(v->state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    int r = dir < 0 ? -1 : 0;
    if (r == 0 && unlinkat(dir, VAULT_NEW, 0) < 0 && errno != ENOENT)
        r = -1;
    if (r == 0)
        r = write_unnamed(dir, out, MAGIC_LEN + NONCE_LEN + clen, VAULT_NEW);
    free(out);
    if (r == 0) {
        pdk_crash_point("vault-linked");
        r = renameat(dir, VAULT_NEW, dir, "vault");
        if (r < 0) {
            int e = errno;
            unlinkat(dir, VAULT_NEW, 0);
            errno = e;
        }
    }
    if (r < 0)
        return pdk_error_set(err, errno, "cannot write the vault %s (it is as it was)", v->path);
    if (pdk_fsync_dir(dir) < 0)
        return pdk_error_set(err, errno, "the vault %s was written but may not be on the disk yet",
                             v->path);
    return 0;
}

/* What a writer killed half-way left beside the vault (the lock is held): the new vault
 * it had linked but not renamed yet, and the temporary files of earlier versions (a key
 * aside, .paddock.PID.N.tmp) whose process is gone. Each could hold secrets removed
 * since. */
static void remove_leftovers(pdk_vault *v)
{
    _cleanup_close_ int fd = open(v->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d)
        return;
    fd = -1; /* closedir closes it */
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *name = de->d_name;
        long pid = 0;
        if (strcmp(name, VAULT_NEW) == 0) {
            (void)unlinkat(dirfd(d), name, 0);
            continue;
        }
        if (pdk_str_has_prefix(name, "vault.key."))
            pid = strtol(name + strlen("vault.key."), NULL, 10);
        else if (pdk_str_has_prefix(name, ".paddock."))
            pid = strtol(name + strlen(".paddock."), NULL, 10);
        if (pid > 0 && pid != getpid() && pdk_str_has_suffix(name, ".tmp") &&
            kill((pid_t)pid, 0) < 0 && errno == ESRCH)
            (void)unlinkat(dirfd(d), name, 0);
    }
    closedir(d);
}

/* The lock, held while a change is read, made and written. */
static int lock(pdk_vault *v, pdk_error *err)
{
    int fd = open(v->lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return pdk_error_set(err, errno, "cannot open %s", v->lock_path);
    while (flock(fd, LOCK_EX) < 0) {
        if (errno != EINTR) {
            int e = errno;
            close(fd);
            return pdk_error_set(err, e, "cannot lock %s", v->lock_path);
        }
    }
    return fd;
}

int pdk_vault_open(const char *state_dir, bool create, pdk_vault **out, pdk_error *err)
{
    *out = NULL;
    if (sodium_init() < 0)
        return pdk_error_set(err, EIO, "libsodium cannot be initialised");
    pdk_vault_wipe_json_memory();
    pdk_vault *v = xcalloc(1, sizeof(*v));
    v->state_dir = xstrdup(state_dir);
    v->path = pdk_path_join(state_dir, "vault");
    v->key_path = pdk_path_join(state_dir, "vault.key");
    v->lock_path = pdk_path_join(state_dir, "vault.lock");
    int k = load_key(v, create, err);
    if (k < 0 || (k == 0 && load(v, err) < 0)) {
        pdk_vault_close(v);
        return -1;
    }
    v->have_key = k == 0;
    if (k == 1)
        v->secrets = json_object(); /* no key yet, no vault: nothing stored */
    *out = v;
    return 0;
}

void pdk_vault_close(pdk_vault *v)
{
    if (!v)
        return;
    sodium_memzero(v->key, sizeof(v->key));
    json_decref(v->secrets);
    free(v->state_dir);
    free(v->path);
    free(v->key_path);
    free(v->lock_path);
    free(v);
}

/* Apply a change under the lock to what is on disk now, and write it. */
typedef int (*change_fn)(pdk_vault *v, void *arg, pdk_error *err);

static int change(pdk_vault *v, change_fn fn, void *arg, pdk_error *err)
{
    int fd = lock(v, err);
    if (fd < 0)
        return -1;
    remove_leftovers(v);
    int r = load(v, err);
    if (r == 0)
        r = fn(v, arg, err);
    if (r == 0)
        r = save(v, err);
    close(fd);
    return r;
}

typedef struct set_args {
    const pdk_vault_item *items;
    size_t count;
} set_args;

static int do_set(pdk_vault *v, void *arg, pdk_error *err)
{
    (void)err;
    set_args *a = arg;
    for (size_t i = 0; i < a->count; i++) {
        const pdk_vault_item *it = &a->items[i];
        json_t *old = json_object_get(v->secrets, it->name);
        json_t *created = old ? json_object_get(old, "created_ns") : NULL;
        json_t *o = json_pack("{s:s, s:s, s:I, s:I}", "kind", it->kind ? it->kind : "static",
                              "value", it->value, "created_ns",
                              created ? json_integer_value(created) : pdk_now_realtime_ns(),
                              "used_ns", (json_int_t)0);
        json_object_set_new(v->secrets, it->name, o);
    }
    return 0;
}

static int check_item(const char *name, const char *value, size_t len, pdk_error *err)
{
    if (!pdk_vault_name_valid(name))
        return pdk_error_set(err, 0,
                             "\"%.*s\" is not a secret name (1-128 of letters, digits, '.', '_', "
                             "'-')",
                             PDK_VAULT_NAME_MAX, name ? name : "");
    if (len == 0 || len > PDK_VAULT_VALUE_MAX || memchr(value, '\0', len))
        return pdk_error_set(err, 0,
                             len == 0 ? "the value of %s is empty (nothing stored)"
                                      : "the value of %s is over 64 KiB or holds a NUL byte "
                                        "(nothing stored)",
                             name);
    return 0;
}

int pdk_vault_set_many(pdk_vault *v, const pdk_vault_item *items, size_t count, pdk_error *err)
{
    for (size_t i = 0; i < count; i++)
        if (check_item(items[i].name, items[i].value, strlen(items[i].value), err) < 0)
            return -1;
    if (!v->have_key) { /* opened before any key existed: make it now */
        if (load_key(v, true, err) < 0)
            return -1;
        v->have_key = true;
    }
    set_args a = {items, count};
    return change(v, do_set, &a, err);
}

int pdk_vault_set(pdk_vault *v, const char *name, const char *kind, const char *value, size_t len,
                  pdk_error *err)
{
    if (check_item(name, value, len, err) < 0)
        return -1;
    _cleanup_free_ char *copy = xstrndup(value, len);
    pdk_vault_item item = {name, kind, copy};
    int r = pdk_vault_set_many(v, &item, 1, err);
    sodium_memzero(copy, len);
    return r;
}

int pdk_vault_lock_secret(const char *state_dir, const char *name, pdk_error *err)
{
    if (!pdk_vault_name_valid(name))
        return pdk_error_set(err, 0, "\"%.*s\" is not a secret name", PDK_VAULT_NAME_MAX,
                             name ? name : "");
    _cleanup_free_ char *dir = pdk_path_join(state_dir, "vault.locks");
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return pdk_error_set(err, errno, "cannot make %s", dir);
    _cleanup_free_ char *path = pdk_path_join(dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return pdk_error_set(err, errno, "cannot open %s", path);
    while (flock(fd, LOCK_EX) < 0) {
        if (errno != EINTR) {
            int e = errno;
            close(fd);
            return pdk_error_set(err, e, "cannot lock %s", path);
        }
    }
    return fd;
}

static int do_touch(pdk_vault *v, void *arg, pdk_error *err)
{
    json_t *o = json_object_get(v->secrets, (const char *)arg);
    if (o)
        json_object_set_new(o, "used_ns", json_integer(pdk_now_realtime_ns()));
    return 0;
}

const char *pdk_vault_get(pdk_vault *v, const char *name, bool touch, pdk_error *err)
{
    json_t *o = json_object_get(v->secrets, name);
    if (!o) {
        pdk_error_set(err, 0, "no secret %s in the vault (paddock secret set %s)", name, name);
        return NULL;
    }
    if (touch && v->have_key) {
        pdk_error ignored = {0}; /* the use is a note: a failure to write it is not an error */
        (void)change(v, do_touch, (void *)name, &ignored);
        o = json_object_get(v->secrets, name);
        if (!o) {
            pdk_error_set(err, 0, "the secret %s was removed meanwhile", name);
            return NULL;
        }
    }
    return json_string_value(json_object_get(o, "value"));
}

static int do_remove(pdk_vault *v, void *arg, pdk_error *err)
{
    const char *name = arg;
    if (json_object_del(v->secrets, name) < 0)
        return pdk_error_set(err, 0, "no secret %s in the vault (see paddock secret list)", name);
    return 0;
}

int pdk_vault_remove(pdk_vault *v, const char *name, pdk_error *err)
{
    if (!json_object_get(v->secrets, name) && access(v->path, F_OK) < 0)
        return pdk_error_set(err, 0, "no secret %s in the vault (see paddock secret list)", name);
    return change(v, do_remove, (void *)name, err);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int pdk_vault_each(pdk_vault *v, int (*fn)(const pdk_vault_entry *entry, void *arg), void *arg)
{
    size_t n = json_object_size(v->secrets), i = 0;
    const char **names = xcalloc(n + 1, sizeof(*names));
    const char *key;
    json_t *val;
    json_object_foreach(v->secrets, key, val) names[i++] = key;
    qsort(names, n, sizeof(*names), compare_names);
    int r = 0;
    for (i = 0; i < n && r == 0; i++) {
        json_t *o = json_object_get(v->secrets, names[i]);
        const char *value = json_string_value(json_object_get(o, "value"));
        pdk_vault_entry e = {
            .name = names[i],
            .kind = json_string_value(json_object_get(o, "kind")),
            .created_ns = json_integer_value(json_object_get(o, "created_ns")),
            .used_ns = json_integer_value(json_object_get(o, "used_ns")),
            .length = value ? strlen(value) : 0,
        };
        r = fn(&e, arg);
    }
    free(names);
    return r;
}
