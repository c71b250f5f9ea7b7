/* exec_target.h: what an exec inside the sandbox really runs.
 *
 * The command rules must judge what is executed, not what the caller calls it: argv[0] is
 * the caller's word (`exec -a ls touch`), a symlink can have any name, the dynamic loader
 * runs the program it is given, and a script runs its interpreter. For an execve or
 * execveat the exec listener saw, pdk_exec_target_resolve() finds, in the process's own
 * view at notification time (its root, cwd and fds, through /proc/PID):
 *
 *   - the file: the path resolved in the process's root (RESOLVE_IN_ROOT), each symlink of
 *     its last component followed by hand so that every name on the way counts (a link
 *     named ls to /usr/bin/python3 is also python3 and python3.11), or the file of the fd
 *     for execveat (an O_PATH fd or AT_EMPTY_PATH);
 *   - a file with no name to judge (a memfd, an unlinked file): `nameless`, which the
 *     caller refuses;
 *   - its identity: the file is one of the commands the rules name (looked up in the
 *     sandbox's PATH at the first exec): the same inode (a hard link, a bind), or a copy of
 *     the same size and bytes; it gets that command's name too. A copy that differs in one
 *     byte is another program: the review layer cannot tell, the boundaries (Landlock, the
 *     network gateway) still hold;
 *   - a script (`#!`): its interpreter, resolved the same way, with the argv the kernel
 *     gives it (up to four levels, as the kernel allows);
 *   - the dynamic loader (by name, ld-linux*.so*, ld-musl-*, or by identity with the
 *     loader of the sandbox's programs): its program operand and that program's argv
 *     (`--argv0`, `--preload`, `--library-path` and the other options skipped).
 *
 * Each way of seeing the exec is a subject, an argv and the names of its executable; the
 * caller judges every subject with every name and the strictest decision wins. The check
 * is a review layer: the kernel resolves the path again after the supervisor did, so a
 * process that swaps a symlink in between runs something else (exec_listener.h).
 */
#ifndef PADDOCK_EXEC_TARGET_H
#define PADDOCK_EXEC_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct pdk_exec_subject {
    char **argv;      /* what the rules judge (argv[0] as given); pointers into the call's
                       * argv or the target's own strings (free only the array) */
    char **names;     /* the other names of its executable (the same ownership) */
    const char *file; /* the file reached ("" when unknown) */
    const char *role; /* "exec", "interpreter" (of a script), "program" (of the loader) */
} pdk_exec_subject;

#define PDK_EXEC_MAX_SUBJECTS 8

typedef struct pdk_exec_target {
    pdk_exec_subject subjects[PDK_EXEC_MAX_SUBJECTS];
    size_t count;
    bool missing;         /* nothing is there: the kernel will fail it (ENOENT, ENOTDIR) */
    const char *nameless; /* not NULL: the executed file has no name to judge ("memfd:x",
                           * "an unlinked file"); the caller refuses it */
    char **strings;       /* what the subjects point at, owned */
} pdk_exec_target;

/* The commands the rules name, found in the sandbox: their files' identities. */
typedef struct pdk_exec_known pdk_exec_known;

/* names: command names (looked up in each directory of path_list, a PATH value) and
 * absolute paths, as the rules give them. Looked up at the first resolve, in that
 * process's root. */
pdk_exec_known *pdk_exec_known_new(char *const *names, const char *path_list);
void pdk_exec_known_free(pdk_exec_known *known);

/* One exec: execve(path, argv) is execveat(AT_FDCWD, path, argv, 0). */
typedef struct pdk_exec_call {
    pid_t pid; /* in the supervisor's pid namespace */
    int dirfd;
    const char *path;
    int flags;
    char *const *argv; /* whole, NULL-terminated, at least one word */
} pdk_exec_call;

/* The root directory of pid (O_PATH), or -1 with errno. */
int pdk_exec_open_root(pid_t pid);

/* The text of a file as pid sees it (path resolved in its root; symlinks followed there,
 * /proc's magic links not): what a shell that pid runs reads when it sources the file.
 * Returns 0 with *text a new string, or with *text NULL when there is no such file (a path
 * without symlinks that leads nowhere); -1 when it cannot be read, is not a regular file,
 * lives in /proc or /sys, holds a NUL byte or is larger than max, or when a symlink on its
 * way leads nowhere (/dev/stdin: /proc/self is not the caller's there). Non-blocking: a
 * FIFO never holds the caller. */
int pdk_exec_read_text(pid_t pid, const char *path, size_t max, char **text);

/* Fill out (which is overwritten) for call. root_fd: the process's root when the caller
 * knows it (every process of a sandbox without nested user namespaces has its init's), or
 * -1 to open /proc/PID/root. known may be NULL. Never fails: what cannot be found is left
 * out (the exec is then judged by argv and the path given). */
void pdk_exec_target_resolve(const pdk_exec_call *call, int root_fd, pdk_exec_known *known,
                             pdk_exec_target *out);
void pdk_exec_target_free(pdk_exec_target *target);

/* ---- the parsers, exposed for the unit tests and fuzz_exec ---- */

/* What the kernel reads of a file to know its format (BINPRM_BUF_SIZE). */
#define PDK_EXEC_HEADER_SIZE 256

/* The interpreter line of a script (the first len bytes of the file: all of it when len is
 * below PDK_EXEC_HEADER_SIZE), as the kernel reads it: "#!", blanks, the interpreter, and
 * the rest of the line (trailing blanks removed) as one argument. false when buf is not a
 * script or the line is cut before the interpreter's end. *interpreter and *argument (NULL
 * when none) are new strings. */
bool pdk_exec_parse_shebang(const char *buf, size_t len, char **interpreter, char **argument);

/* Whether a file's base name is a dynamic loader's (ld-linux*.so*, ld-musl-*.so*, ld.so,
 * ld-*.so*). */
bool pdk_exec_is_loader_name(const char *basename);

/* For the argv of the dynamic loader (`ld.so [OPTIONS] PROGRAM [ARGS...]`): the index of
 * PROGRAM in argv, or 0 when it runs none (no operand, --help, --version, --list-tunables,
 * --list-diagnostics). *argv0 is --argv0's value (NULL when not given). */
size_t pdk_exec_loader_program(char *const *argv, const char **argv0);

#endif
