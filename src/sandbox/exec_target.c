/* exec_target.c: see exec_target.h. */
#include "exec_target.h"

#include "util.h"
#include "syscalls.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#define MAX_HOPS         40                  /* symlinks followed, as the kernel (ELOOP) */
#define MAX_NAMES        16                  /* names of one executable */
#define MAX_SCRIPT_LEVEL 4                   /* interpreters of interpreters, as the kernel */
#define MAX_COMPARE      (256 * 1024 * 1024) /* a copy larger than this is not compared */

/* ---- the parsers ---- */

bool pdk_exec_parse_shebang(const char *buf, size_t len, char **interpreter, char **argument)
{
    *interpreter = *argument = NULL;
    if (len < 2 || buf[0] != '#' || buf[1] != '!')
        return false;
    const char *end = memchr(buf, '\n', len);
    bool cut = !end && len >= PDK_EXEC_HEADER_SIZE; /* else the file ends the line */
    if (!end)
        end = buf + len;
    const char *p = buf + 2;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    const char *name = p;
    while (p < end && *p != ' ' && *p != '\t' && *p != '\0')
        p++;
    if (p == name || (cut && p == end))
        return false; /* no interpreter, or its name is cut (the kernel refuses that too) */
    *interpreter = xstrndup(name, (size_t)(p - name));
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    for (const char *c = p; c < end; c++)
        if (*c == '\0') {
            end = c;
            break;
        }
    while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        end--;
    if (end > p)
        *argument = xstrndup(p, (size_t)(end - p));
    return true;
}

bool pdk_exec_is_loader_name(const char *name)
{
    if (strcmp(name, "ld.so") == 0)
        return true;
    if (pdk_str_has_prefix(name, "ld-linux") || pdk_str_has_prefix(name, "ld-musl-"))
        return strstr(name, ".so") != NULL;
    return pdk_str_has_prefix(name, "ld-") && strstr(name, ".so") != NULL;
}

size_t pdk_exec_loader_program(char *const *argv, const char **argv0)
{
    static const char *const with_value[] = {
        "--library-path",        "--inhibit-rpath",     "--audit", "--preload", "--argv0",
        "--glibc-hwcaps-prefix", "--glibc-hwcaps-mask", NULL};
    static const char *const runs_none[] = {"--help", "--version", "--list-tunables",
                                            "--list-diagnostics", NULL};
    *argv0 = NULL;
    if (!argv || !argv[0])
        return 0;
    size_t i = 1;
    for (; argv[i]; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (!pdk_str_has_prefix(a, "--"))
            break;
        bool value = false, none = false;
        for (size_t k = 0; with_value[k]; k++)
            value |= strcmp(a, with_value[k]) == 0;
        for (size_t k = 0; runs_none[k]; k++)
            none |= strcmp(a, runs_none[k]) == 0;
        if (none)
            return 0;
        if (value) {
            if (!argv[i + 1])
                return 0;
            if (strcmp(a, "--argv0") == 0)
                *argv0 = argv[i + 1];
            i++;
            continue;
        }
        if (strcmp(a, "--list") == 0 || strcmp(a, "--verify") == 0 ||
            strcmp(a, "--inhibit-cache") == 0)
            continue;
        break; /* an option ld.so does not know: it takes it for the program's name */
    }
    return argv[i] ? i : 0;
}

/* ---- resolving in the process's view ---- */

static const char *basename_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* A string the target owns. */
static char *own(pdk_exec_target *t, char *s)
{
    pdk_strv_push_take(&t->strings, s);
    return s;
}

/* Append s (not copied) to a NULL-terminated pointer list. */
static void push(char ***list, const char *s)
{
    size_t n = pdk_strv_length(*list);
    if (n >= MAX_NAMES)
        return;
    for (size_t i = 0; i < n; i++)
        if (strcmp((*list)[i], s) == 0)
            return;
    *list = xrealloc(*list, (n + 2) * sizeof(char *));
    (*list)[n] = (char *)s;
    (*list)[n + 1] = NULL;
}

static char *read_link(const char *path)
{
    char buf[4096];
    ssize_t n = readlink(path, buf, sizeof(buf) - 1);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    return xstrdup(buf);
}

static char *read_link_at(int fd)
{
    char buf[4096];
    ssize_t n = readlinkat(fd, "", buf, sizeof(buf) - 1);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    return xstrdup(buf);
}

static int open_in_root(int root, const char *path, bool follow)
{
    struct open_how how = {.flags = O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW),
                           .resolve = RESOLVE_IN_ROOT};
    return pdk_sys_openat2(root, path, &how);
}

/* Open for reading what path names in root, not following a symlink in its last component
 * (ELOOP then): one call for the file and its header. Non-blocking, no controlling
 * terminal: what an exec names is a regular file or fails in the kernel anyway, and
 * reading nothing from anything else has no effect. */
static int open_readable_in_root(int root, const char *path)
{
    struct open_how how = {.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                           .resolve = RESOLVE_IN_ROOT};
    return pdk_sys_openat2(root, path, &how);
}

/* A file found: its O_PATH fd, what it is called, and its names on the way. */
typedef struct found {
    int fd; /* -1 when not found */
    struct stat st;
    char *file;   /* the path reached (owned by the target), NULL when unknown */
    char **names; /* pointer list (strings owned by the target) */
    bool missing;
    const char *nameless;
} found;

/* pid's own number in its pid namespace (the last of NSpid), or 0. */
static long ns_pid(pid_t pid)
{
    char where[64];
    snprintf(where, sizeof(where), "/proc/%d/status", (int)pid);
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    if (pdk_read_file_at(AT_FDCWD, where, &text, &len, 65536) < 0)
        return 0;
    char *line = strstr(text, "\nNSpid:");
    if (!line)
        return 0;
    char *end = strchr(line + 1, '\n');
    if (end)
        *end = '\0';
    char *last = strrchr(line, '\t');
    return last ? strtol(last + 1, NULL, 10) : 0;
}

/* A path through the process's own magic links in /proc: /proc/self/fd/N (and /dev/fd/N,
 * /proc/thread-self/fd/N, /proc/NSPID/fd/N) or /proc/self/exe, which RESOLVE_IN_ROOT does
 * not follow: the same link seen from the supervisor in host. */
static bool proc_magic(pid_t pid, const char *cur, char *host, size_t size)
{
    const char *rest;
    if (pdk_str_has_prefix(cur, "/dev/fd/")) {
        rest = cur + strlen("/dev/");
    } else if (pdk_str_has_prefix(cur, "/proc/self/")) {
        rest = cur + strlen("/proc/self/");
    } else if (pdk_str_has_prefix(cur, "/proc/thread-self/")) {
        rest = cur + strlen("/proc/thread-self/");
    } else if (pdk_str_has_prefix(cur, "/proc/") && cur[6] >= '1' && cur[6] <= '9') {
        char *after;
        long n = strtol(cur + 6, &after, 10);
        if (*after != '/' || n != ns_pid(pid))
            return false;
        rest = after + 1;
    } else {
        return false;
    }
    if (strcmp(rest, "exe") == 0) {
        snprintf(host, size, "/proc/%d/exe", (int)pid);
        return true;
    }
    if (!pdk_str_has_prefix(rest, "fd/") || !rest[3] ||
        strspn(rest + 3, "0123456789") != strlen(rest + 3))
        return false;
    snprintf(host, size, "/proc/%d/fd/%s", (int)pid, rest + 3);
    return true;
}

/* Follow the symlinks of path's last component in root by hand (the directories on the way
 * the kernel resolves), every hop's path a name. */
static void follow_path(pdk_exec_target *t, int root, pid_t pid, const char *path, found *f)
{
    _cleanup_free_ char *cur = xstrdup(path);
    for (int hop = 0; hop <= MAX_HOPS; hop++) {
        char host[96];
        bool magic = proc_magic(pid, cur, host, sizeof(host));
        int fd = magic ? open(host, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
                       : open_readable_in_root(root, cur);
        if (fd < 0 && (errno == ELOOP || errno == EACCES || errno == EPERM))
            /* a symlink (its text is read), or a file not readable by paddock */
            fd = magic ? open(host, O_PATH | O_CLOEXEC) : open_in_root(root, cur, false);
        if (fd < 0) {
            f->missing = errno == ENOENT || errno == ENOTDIR;
            if (pdk_str_has_prefix(cur, "/proc/") && !magic) {
                /* another process's links, or the sandbox's /proc seen from outside */
                f->nameless = "a file reached through /proc";
                f->missing = false;
            }
            return;
        }
        struct stat st;
        if (fstat(fd, &st) < 0) {
            close(fd);
            return;
        }
        push(&f->names, own(t, xstrdup(cur)));
        if (!S_ISLNK(st.st_mode)) {
            f->fd = fd;
            f->st = st;
            return;
        }
        _cleanup_free_ char *target = read_link_at(fd);
        close(fd);
        if (!target)
            return;
        if (target[0] == '/') {
            free(cur);
            cur = steal_pointer(&target);
        } else {
            char *slash = strrchr(cur, '/');
            char *next =
                slash ? xasprintf("%.*s/%s", (int)(slash - cur), cur, target) : xstrdup(target);
            free(cur);
            cur = next;
        }
    }
    f->missing = true; /* ELOOP: the kernel fails it too */
}

/* The path text of pid's fd (or cwd) as the process sees it; NULL when it is no directory
 * of its tree that still exists. */
static char *base_of(pid_t pid, int dirfd)
{
    char link[64];
    if (dirfd == AT_FDCWD)
        snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
    else
        snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)pid, dirfd);
    struct stat st;
    if (stat(link, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_nlink == 0)
        return NULL;
    char *text = read_link(link);
    if (text && text[0] != '/') {
        free(text);
        return NULL;
    }
    return text;
}

/* The file an exec of (dirfd, path, flags) by pid reaches, in its root. */
static void find_file(pdk_exec_target *t, int root, pid_t pid, int dirfd, const char *path,
                      int flags, found *f)
{
    memset(f, 0, sizeof(*f));
    f->fd = -1;
    if (!path[0] && (flags & AT_EMPTY_PATH)) {
        /* the fd itself: its file, whatever its name */
        char link[64];
        snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)pid, dirfd);
        f->fd = open(link, O_PATH | O_CLOEXEC);
        if (f->fd < 0 || fstat(f->fd, &f->st) < 0) {
            f->missing = true;
            return;
        }
        char *name = read_link(link);
        if (name && name[0] == '/' && f->st.st_nlink > 0)
            push(&f->names, own(t, name));
        else
            free(name);
    } else if (!path[0]) {
        f->missing = true;
        return;
    } else if (root < 0) {
        return;
    } else if (path[0] == '/') {
        follow_path(t, root, pid, path, f);
    } else {
        _cleanup_free_ char *base = base_of(pid, dirfd);
        if (!base) {
            f->missing = true; /* relative to a directory that is gone, or no directory */
            return;
        }
        _cleanup_free_ char *full = xasprintf("%s/%s", strcmp(base, "/") == 0 ? "" : base, path);
        follow_path(t, root, pid, full, f);
    }
    if (f->fd < 0)
        return;
    char self[64];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", f->fd);
    char *file = read_link(self);
    if (f->st.st_nlink == 0 || !file || file[0] != '/') {
        /* a memfd ("/memfd:NAME (deleted)"), an unlinked or O_TMPFILE file, anything
         * outside every tree: no name to trust */
        f->nameless = file && pdk_str_has_prefix(file, "/memfd:") ? "a memfd" : "an unlinked file";
        free(file);
        return;
    }
    f->file = own(t, file);
    push(&f->names, f->file);
}

/* ---- identity ---- */

struct known_file {
    dev_t dev;
    ino_t ino;
    off_t size;
    char *name; /* as the rules say it */
    char *path; /* where it was found, in the sandbox's view */
    bool loader;
};

struct pdk_exec_known {
    char **names;
    char *path_list;
    bool filled;
    struct known_file *files;
    size_t count;
};

pdk_exec_known *pdk_exec_known_new(char *const *names, const char *path_list)
{
    pdk_exec_known *k = xcalloc(1, sizeof(*k));
    k->names = pdk_strv_copy(names ? names : (char *const[]){NULL});
    k->path_list = xstrdup(path_list && *path_list ? path_list : "/usr/local/bin:/usr/bin:/bin");
    return k;
}

void pdk_exec_known_free(pdk_exec_known *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->count; i++) {
        free(k->files[i].name);
        free(k->files[i].path);
    }
    free(k->files);
    pdk_strv_free(k->names);
    free(k->path_list);
    free(k);
}

static void known_add(pdk_exec_known *k, int root, const char *name, const char *path, bool loader)
{
    int fd = open_in_root(root, path, true);
    struct stat st;
    if (fd < 0)
        return;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        for (size_t i = 0; i < k->count; i++)
            if (k->files[i].dev == st.st_dev && k->files[i].ino == st.st_ino &&
                strcmp(k->files[i].name, name) == 0)
                goto out;
        k->files = xrealloc(k->files, (k->count + 1) * sizeof(*k->files));
        k->files[k->count++] = (struct known_file){st.st_dev,     st.st_ino,     st.st_size,
                                                   xstrdup(name), xstrdup(path), loader};
    }
out:
    close(fd);
}

/* The interpreter (PT_INTERP) of paddock itself: the dynamic loader of the programs of the
 * host root the sandbox shows. */
static int find_interp(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const char **out = arg;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_INTERP)
            *out = (const char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    return 1; /* the first object is the program */
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names the rules give, looked up in each directory of PATH: each directory is read
 * once (a few getdents), so that a thousand names cost what its listing costs, not a
 * thousand lookups. */
static void known_fill(pdk_exec_known *k, int root)
{
    k->filled = true;
    size_t count = 0;
    _cleanup_free_ char **sorted = xcalloc(pdk_strv_length(k->names) + 1, sizeof(char *));
    for (size_t n = 0; k->names[n]; n++) {
        const char *name = k->names[n];
        if (!strchr(name, '/'))
            sorted[count++] = k->names[n];
        else if (name[0] == '/')
            known_add(k, root, name, name, false);
    }
    qsort(sorted, count, sizeof(char *), compare_names);
    struct stat seen[32]; /* directories listed already (/bin is /usr/bin on merged /usr) */
    size_t nseen = 0;
    for (const char *p = k->path_list; p && count > 0;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        _cleanup_free_ char *dir = len > 0 && p[0] == '/' ? xstrndup(p, len) : NULL;
        p = colon ? colon + 1 : NULL;
        if (!dir)
            continue;
        struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
                               .resolve = RESOLVE_IN_ROOT};
        int fd = pdk_sys_openat2(root, dir, &how);
        struct stat st;
        bool again = false;
        if (fd >= 0 && fstat(fd, &st) == 0) {
            for (size_t i = 0; i < nseen && !again; i++)
                again = seen[i].st_dev == st.st_dev && seen[i].st_ino == st.st_ino;
            if (!again && nseen < PDK_ARRAY_SIZE(seen))
                seen[nseen++] = st;
        }
        if (again) {
            close(fd);
            continue;
        }
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        for (struct dirent *e; (e = readdir(d));) {
            const char *key = e->d_name;
            if (!bsearch(&key, sorted, count, sizeof(char *), compare_names))
                continue;
            _cleanup_free_ char *path = xasprintf("%s/%s", dir, e->d_name);
            known_add(k, root, e->d_name, path, false);
        }
        closedir(d);
    }
    const char *interp = NULL;
    dl_iterate_phdr(find_interp, &interp);
    if (interp && interp[0] == '/')
        known_add(k, root, basename_of(interp), interp, true);
}

/* Whether the open files a and b (O_PATH) hold the same bytes (size bytes each). */
static bool same_content(int a, int b, off_t size)
{
    char pa[64], pb[64];
    snprintf(pa, sizeof(pa), "/proc/self/fd/%d", a);
    snprintf(pb, sizeof(pb), "/proc/self/fd/%d", b);
    _cleanup_close_ int ra = open(pa, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    _cleanup_close_ int rb = open(pb, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (ra < 0 || rb < 0)
        return false;
    _cleanup_free_ char *ba = xmalloc(65536), *bb = xmalloc(65536);
    for (off_t off = 0; off < size;) {
        ssize_t na = pread(ra, ba, 65536, off), nb = pread(rb, bb, 65536, off);
        if (na <= 0 || na != nb || memcmp(ba, bb, (size_t)na) != 0)
            return false;
        off += na;
    }
    return true;
}

/* The names the rules know this file by (the same inode, or the same bytes); whether it is
 * the dynamic loader. */
static bool known_names(pdk_exec_known *k, int root, pdk_exec_target *t, found *f)
{
    bool loader = false;
    if (!k || f->fd < 0 || !S_ISREG(f->st.st_mode))
        return false;
    for (size_t i = 0; i < k->count; i++) {
        struct known_file *kf = &k->files[i];
        bool same = kf->dev == f->st.st_dev && kf->ino == f->st.st_ino;
        if (!same && kf->size == f->st.st_size && f->st.st_size <= MAX_COMPARE && root >= 0) {
            int fd = open_in_root(root, kf->path, true);
            if (fd >= 0) {
                same = same_content(fd, f->fd, f->st.st_size);
                close(fd);
            }
        }
        if (same) {
            push(&f->names, own(t, xstrdup(kf->name)));
            loader |= kf->loader;
        }
    }
    return loader;
}

/* ---- subjects ---- */

/* A subject: argv from words and the rest of from, the file's names. */
static size_t add_subject(pdk_exec_target *t, char **argv, char **names, const char *file,
                          const char *role)
{
    if (t->count >= PDK_EXEC_MAX_SUBJECTS) {
        free(argv);
        free(names);
        return SIZE_MAX;
    }
    t->subjects[t->count] =
        (pdk_exec_subject){.argv = argv, .names = names, .file = file ? file : "", .role = role};
    return t->count++;
}

static bool any_loader_name(char *const *names)
{
    for (size_t i = 0; names && names[i]; i++)
        if (pdk_exec_is_loader_name(basename_of(names[i])))
            return true;
    return false;
}

static void add_found(pdk_exec_target *t, const pdk_exec_call *call, pdk_exec_known *known,
                      int root, char **argv, found *f, const char *role, const char *filename,
                      int level);

/* What subject s (its file open as f) runs besides itself: a script's interpreter, the
 * loader's program. filename is what the kernel calls the file (bprm->filename). */
static void expand(pdk_exec_target *t, const pdk_exec_call *call, pdk_exec_known *known, int root,
                   size_t s, found *f, const char *filename, int level)
{
    if (s == SIZE_MAX)
        return;
    bool loader = known_names(known, root, t, f) || any_loader_name(f->names);
    t->subjects[s].names = steal_pointer(&f->names);
    if (level > MAX_SCRIPT_LEVEL || f->fd < 0 || !S_ISREG(f->st.st_mode))
        return;

    char header[PDK_EXEC_HEADER_SIZE];
    ssize_t n = pread(f->fd, header, sizeof(header), 0);
    if (n < 0 && errno == EBADF) {
        /* an O_PATH fd (a file paddock may not read, or reached through an fd) */
        char self[64];
        snprintf(self, sizeof(self), "/proc/self/fd/%d", f->fd);
        int rfd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (rfd >= 0) {
            n = pread(rfd, header, sizeof(header), 0);
            close(rfd);
        }
    }
    char *interp = NULL, *arg = NULL;
    if (n > 0 && pdk_exec_parse_shebang(header, (size_t)n, &interp, &arg)) {
        /* the kernel runs [INTERPRETER, ARGUMENT, FILENAME, argv[1]...] */
        own(t, interp);
        if (arg)
            own(t, arg);
        found i;
        find_file(t, root, call->pid, AT_FDCWD, interp, 0, &i);
        push(&i.names, interp);
        char *const *argv = t->subjects[s].argv;
        char **iargv = pdk_strv_view((const char *const[]){interp, arg, filename}, 3,
                                     argv[0] ? argv + 1 : argv);
        add_found(t, call, known, root, iargv, &i, "interpreter", interp, level + 1);
        return;
    }
    if (!loader)
        return;
    /* the dynamic loader runs [--argv0's value or PROGRAM, ARGS...] */
    const char *argv0 = NULL;
    char *const *argv = t->subjects[s].argv;
    size_t p = pdk_exec_loader_program(argv, &argv0);
    if (p == 0)
        return;
    const char *program = argv[p];
    found pf;
    memset(&pf, 0, sizeof(pf));
    pf.fd = -1;
    if (strchr(program, '/')) /* else ld.so looks in the library path: judged by its name */
        find_file(t, root, call->pid, AT_FDCWD, program, 0, &pf);
    push(&pf.names, program);
    if (argv0)
        push(&pf.names, argv0);
    char **pargv = pdk_strv_view((const char *const[]){argv0 ? argv0 : program}, 1, argv + p + 1);
    add_found(t, call, known, root, pargv, &pf, "program", program, level + 1);
}

/* A subject for argv run from the file f found (taken), and what it runs in turn. */
static void add_found(pdk_exec_target *t, const pdk_exec_call *call, pdk_exec_known *known,
                      int root, char **argv, found *f, const char *role, const char *filename,
                      int level)
{
    size_t k = add_subject(t, argv, NULL, f->file, role);
    if (f->nameless && !t->nameless)
        t->nameless = f->nameless;
    expand(t, call, known, root, k, f, filename, level);
    free(f->names);
    f->names = NULL;
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}

int pdk_exec_open_root(pid_t pid)
{
    char where[64];
    snprintf(where, sizeof(where), "/proc/%d/root", (int)pid);
    return open(where, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int pdk_exec_read_text(pid_t pid, const char *path, size_t max, char **text)
{
    *text = NULL;
    _cleanup_close_ int root = pdk_exec_open_root(pid);
    if (root < 0)
        return -1;
    /* Only a path without symlinks that leads nowhere is missing: through a symlink,
     * /proc/self (and so /dev/stdin, /dev/fd/N) is the supervisor's, which is not in the
     * sandbox's pid namespace (ENOENT, where the shell reads its stdin). Magic links
     * (/proc/PID/fd/N) are never followed. */
    struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS};
    _cleanup_close_ int fd = pdk_sys_openat2(root, path, &how);
    if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
        return 0;
    if (fd < 0 && errno == ELOOP) {
        how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
        fd = pdk_sys_openat2(root, path, &how);
    }
    if (fd < 0)
        return -1;
    struct stat st;
    struct statfs fs;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max ||
        fstatfs(fd, &fs) < 0 || fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC)
        return -1;
    char *buf;
    size_t len;
    if (pdk_read_all(fd, &buf, &len, max) < 0)
        return -1;
    if (memchr(buf, '\0', len)) {
        free(buf);
        return -1;
    }
    *text = buf;
    return 0;
}

void pdk_exec_target_resolve(const pdk_exec_call *call, int root_fd, pdk_exec_known *known,
                             pdk_exec_target *out)
{
    memset(out, 0, sizeof(*out));
    _cleanup_close_ int own_root = root_fd < 0 ? pdk_exec_open_root(call->pid) : -1;
    int root = root_fd >= 0 ? root_fd : own_root;
    if (known && !known->filled && root >= 0)
        known_fill(known, root);

    found f;
    find_file(out, root, call->pid, call->dirfd, call->path, call->flags, &f);
    if (call->path[0]) {
        /* the path given counts as a name first */
        char **names = NULL;
        push(&names, call->path);
        for (size_t i = 0; f.names && f.names[i]; i++)
            push(&names, f.names[i]);
        free(f.names);
        f.names = names;
    }
    out->missing = f.missing;
    out->nameless = f.nameless;
    /* what the kernel calls the file (a script's interpreter gets it as its operand) */
    const char *filename = call->path;
    if (!call->path[0] || (call->path[0] != '/' && call->dirfd != AT_FDCWD))
        filename = own(out, call->path[0] ? xasprintf("/dev/fd/%d/%s", call->dirfd, call->path)
                                          : xasprintf("/dev/fd/%d", call->dirfd));
    size_t s = add_subject(out, pdk_strv_view(NULL, 0, call->argv), NULL, f.file, "exec");
    expand(out, call, known, root, s, &f, filename, 1);
    free(f.names);
    if (f.fd >= 0)
        close(f.fd);
}

void pdk_exec_target_free(pdk_exec_target *t)
{
    for (size_t i = 0; i < t->count; i++) {
        free(t->subjects[i].argv);
        free(t->subjects[i].names);
    }
    pdk_strv_free(t->strings);
    memset(t, 0, sizeof(*t));
}
