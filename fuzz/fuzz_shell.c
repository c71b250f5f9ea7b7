/* fuzz_shell.c: libFuzzer target for the shell splitter (src/policy/shell.c).
 *
 * The input is a script, and after its first NUL byte (if any) the text of every file the
 * script sources. It is split as an unknown shell runs it, as bash runs it, and as bash
 * runs it with that file to read and HOME known. Besides, its lines go through
 * pdk_shell_wrapper_script as argv words. The invariants of shell.h are checked: a
 * reducible split has no reason and commands whose argv[0] is a non-NULL word; an
 * unreducible one has a reason, a single line, and no commands. Splitting is deterministic.
 * What only bash has never changes a script both can reduce: a script reducible for an
 * unknown shell is reducible for bash, with the same commands; one reducible without
 * files is reducible, the same, with them (it sourced none).
 * The .c is included so that the target does not depend on the library's source list.
 * Built with -fsanitize=fuzzer (fuzz/meson.build, -Dfuzz=true) and, without libFuzzer, as
 * fuzz-shell-replay (replay.c) for the committed corpus.
 */
#include "shell.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t check_split(const pdk_shell_split_t *s)
{
    size_t total = 0;
    if (s->reducible) {
        if (s->reason || (s->count && !s->commands))
            abort();
        for (size_t i = 0; i < s->count; i++) {
            const pdk_shell_command *c = &s->commands[i];
            if (!c->argv || !c->argv[0] || !c->assignments)
                abort();
            for (size_t j = 0; c->argv[j]; j++)
                total += strlen(c->argv[j]) + 1;
            for (size_t j = 0; c->assignments[j]; j++)
                if (!strchr(c->assignments[j], '='))
                    abort();
        }
    } else {
        if (!s->reason || !s->reason[0] || strchr(s->reason, '\n') || s->commands || s->count)
            abort();
    }
    return total;
}

/* Both reducible with the same commands, or a not reducible. */
static void check_same(const pdk_shell_split_t *a, const pdk_shell_split_t *b)
{
    if (!a->reducible)
        return;
    if (!b->reducible || a->count != b->count)
        abort();
    for (size_t i = 0; i < a->count; i++) {
        char *const *x = a->commands[i].argv, *const *y = b->commands[i].argv;
        size_t j = 0;
        for (; x[j] && y[j]; j++)
            if (strcmp(x[j], y[j]) != 0)
                abort();
        if (x[j] || y[j])
            abort();
    }
}

/* Every sourced file holds the text after the input's NUL. */
static int read_file(void *arg, const char *path, char **text)
{
    const char *file = arg;
    if (!path || path[0] != '/')
        abort(); /* only absolute paths are read */
    *text = file ? xstrdup(file) : NULL;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *script = xstrndup((const char *)data, size);
    size_t script_len = strlen(script);
    char *file = script_len < size
                     ? xstrndup((const char *)data + script_len + 1, size - script_len - 1)
                     : NULL;
    pdk_shell_split_t a, b;
    pdk_shell_split(script, &a);
    size_t total = check_split(&a);
    pdk_shell_split(script, &b);
    if (a.reducible != b.reducible || a.count != b.count || check_split(&b) != total)
        abort();
    pdk_shell_split_free(&b);

    pdk_shell_options bash = {.shell = "bash"};
    pdk_shell_split_with(script, &bash, &b);
    check_split(&b);
    check_same(&a, &b);
    pdk_shell_options reading = {
        .shell = "bash", .read_file = read_file, .read_file_arg = file, .home = "/home/fuzz"};
    pdk_shell_split_t c;
    pdk_shell_split_with(script, &reading, &c);
    check_split(&c);
    check_same(&b, &c);
    pdk_shell_split_free(&a);
    pdk_shell_split_free(&b);
    pdk_shell_split_free(&c);
    if (a.commands || a.reason || a.count)
        abort();

    /* Lines as argv words. */
    char **argv = NULL;
    char *save = NULL;
    for (char *line = strtok_r(script, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        pdk_strv_push(&argv, line);
    if (argv) {
        const char *inner = pdk_shell_wrapper_script(argv);
        if (inner) {
            bool inside = false;
            for (size_t i = 1; argv[i]; i++)
                inside |= argv[i] == inner;
            if (!inside || !pdk_shell_wrapper_name(argv))
                abort();
            pdk_shell_split(inner, &a);
            check_split(&a);
            pdk_shell_split_free(&a);
        }
    }
    pdk_strv_free(argv);
    free(file);
    free(script);
    return 0;
}
