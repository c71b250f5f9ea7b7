/* replay.c: run a fuzz target's LLVMFuzzerTestOneInput over files, without libFuzzer.
 *
 *   fuzz-policy-replay FILE|DIR...
 *
 * A directory stands for every regular file in it (not recursive, dot files skipped). This
 * is how the committed corpus is checked in the normal build (tests/integration/
 * t_fuzz_corpus.sh) and how a crash found by the fuzzer is reproduced under gdb or
 * valgrind. Exits 0 when every input ran, 1 when one could not be read, 2 on bad usage;
 * a bug in the target shows up as a crash or an abort.
 */
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    char *data = NULL;
    size_t len = 0;
    /* 0: pdk_read_all's own bound (64 MiB), well above any fuzz input. */
    if (pdk_read_file_at(AT_FDCWD, path, &data, &len, 0) < 0) {
        fprintf(stderr, "fuzz replay: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)data, len);
    free(data);
    return 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order so that runs are reproducible. */
static int replay_dir(const char *dir, size_t *count)
{
    _cleanup_closedir_ DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "fuzz replay: cannot open %s: %s\n", dir, strerror(errno));
        return -1;
    }
    _cleanup_strv_ char **names = NULL;
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.')
            pdk_strv_push(&names, de->d_name);
    size_t n = pdk_strv_length(names);
    if (n > 1)
        qsort(names, n, sizeof(char *), compare_names);
    int ret = 0;
    for (size_t i = 0; i < n; i++) {
        _cleanup_free_ char *path = xasprintf("%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (replay_file(path) < 0)
            ret = -1;
        else
            (*count)++;
    }
    return ret;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    int ret = 0;
    size_t count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            if (replay_dir(argv[i], &count) < 0)
                ret = 1;
        } else if (replay_file(argv[i]) < 0) {
            ret = 1;
        } else {
            count++;
        }
    }
    fprintf(stderr, "fuzz replay: %zu inputs ran\n", count);
    return ret;
}
