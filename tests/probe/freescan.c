/* freescan.so: LD_PRELOADed into a paddock command by t_vault_faults.sh. Every block handed
 * back to malloc (free, and the old block of a realloc that moves) is searched for the
 * bytes of $FREESCAN_NEEDLE before it goes; at exit "freescan: N" on stderr says how many
 * held them: memory freed with a secret still in it, which anything reusing that memory
 * (or a core dump, or a read of the process's memory) could see. */
#include <dlfcn.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *needle;
static size_t needle_len;
static unsigned long hits;
static void (*real_free)(void *);
static void *(*real_realloc)(void *, size_t);
static __thread bool inside;

static void resolve(void)
{
    if (!real_free) {
        inside = true;
        *(void **)&real_free = dlsym(RTLD_NEXT, "free");
        *(void **)&real_realloc = dlsym(RTLD_NEXT, "realloc");
        inside = false;
        needle = getenv("FREESCAN_NEEDLE");
        needle_len = needle ? strlen(needle) : 0;
    }
}

static bool holds_needle(void *p)
{
    return p && needle_len && !inside && memmem(p, malloc_usable_size(p), needle, needle_len);
}

void free(void *p)
{
    resolve();
    if (holds_needle(p))
        __atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED);
    if (real_free)
        real_free(p);
}

void *realloc(void *p, size_t size)
{
    resolve();
    bool had = holds_needle(p);
    void *q = real_realloc(p, size);
    if (had && q && q != p)
        __atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED);
    return q;
}

__attribute__((destructor)) static void report(void)
{
    if (!needle_len)
        return;
    char line[64];
    int n = snprintf(line, sizeof(line), "freescan: %lu\n", hits);
    if (n > 0)
        (void)!write(STDERR_FILENO, line, (size_t)n);
}
