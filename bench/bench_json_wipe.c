/* bench_json_wipe.c: what wiping every block jansson frees costs (vault.c installs it for
 * the whole process: the vault's plaintext passes through jansson's buffers), against
 * jansson with plain free in the same run.
 *
 *   paddock-bench-json-wipe
 *
 * The work is what paddock does with JSON on its busy paths: an audit event of a typical
 * shape (a network request's) built, encoded canonically, parsed again and freed.
 * Interleaved rounds of each allocator; the median nanoseconds an event of each, and
 * their ratio. A benchmark, not a test: it reports, it asserts nothing. Bounded in count.
 */
#include "vault.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 15
#define EVENTS 20000

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ns an event: built, encoded, parsed, freed. */
static double one_round(void)
{
    double start = now_ns();
    for (int i = 0; i < EVENTS; i++) {
        json_t *o = json_pack(
            "{s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:I, s:I, s:[s, s]}", "kind", "net.request",
            "method", "POST", "url", "https://api.example.com/v1/items?page=2&q=redacted", "pid",
            4242 + i, "comm", "python3", "decision", "allow", "decided_by",
            "rule 3 (line 12: api.example.com POST /v1/items)", "bytes_in", (json_int_t)1234,
            "time_ns", (json_int_t)1796175189994628665LL, "credentials", "api", "feishu");
        char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        json_t *back = json_loads(text, 0, NULL);
        free(text);
        json_decref(back);
        json_decref(o);
    }
    return (now_ns() - start) / EVENTS;
}

int main(void)
{
    json_malloc_t plain_malloc;
    json_free_t plain_free, wiping_free;
    json_get_alloc_funcs(&plain_malloc, &plain_free);
    pdk_vault_wipe_json_memory();
    json_get_alloc_funcs(&plain_malloc, &wiping_free);
    double plain[ROUNDS], wiped[ROUNDS];
    one_round(); /* warm-up */
    for (int r = 0; r < ROUNDS; r++) {
        json_set_alloc_funcs(plain_malloc, plain_free);
        plain[r] = one_round();
        json_set_alloc_funcs(plain_malloc, wiping_free);
        wiped[r] = one_round();
    }
    qsort(plain, ROUNDS, sizeof(double), compare_double);
    qsort(wiped, ROUNDS, sizeof(double), compare_double);
    double p = plain[ROUNDS / 2], w = wiped[ROUNDS / 2];
    printf("json wipe: an audit event built, encoded, parsed and freed: %.0f ns with plain "
           "free, %.0f ns wiping what is freed (%.2fx)\n",
           p, w, w / p);
    return 0;
}
