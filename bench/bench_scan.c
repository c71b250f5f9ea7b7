/* bench_scan.c: what finding credentials costs the gateway, per byte, each against a
 * baseline measured in the same run.
 *
 *   paddock-bench-scan
 *
 * Mask: a 16 MiB JSON-like body (text, numbers, base64 and hex values, no credential) fed
 * through pdk_mask_stream in 64 KiB reads, plain and chunked, with three values of typical
 * shapes registered (a Feishu tenant token, a 40-character API key, a 900-character JWT);
 * baseline: memcpy of the same bytes (what forwarding them costs at the least).
 * Placeholder scan: the same body through pdk_placeholder_scan with three placeholders;
 * baseline: the same memcpy. MiB/s, the median of 5 passes.
 *
 * A benchmark, not a test: it reports, it asserts nothing. Bounded (5 passes of 16 MiB).
 */
#include "placeholder_scan.h"
#include "secret_mask.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BODY   (16u << 20)
#define READ   (64u << 10)
#define PASSES 5

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* (the machine may be busy: CPU time) */
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A body of JSON records: words, numbers, a base64 blob, a hex digest per record. */
static char *make_body(size_t len)
{
    char *b = xmalloc(len);
    size_t o = 0;
    unsigned seed = 12345;
    static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    while (o < len) {
        char rec[512];
        char blob[65], hex[65];
        for (int i = 0; i < 64; i++) {
            seed = seed * 1103515245 + 12345;
            blob[i] = alnum[(seed >> 16) % 62];
            hex[i] = "0123456789abcdef"[(seed >> 8) & 15];
        }
        blob[64] = hex[64] = '\0';
        int n = snprintf(rec, sizeof(rec),
                         "{\"id\": %u, \"name\": \"record number %u\", \"ok\": true, \"blob\": "
                         "\"%s\", \"sha\": \"%s\", \"text\": \"the quick brown fox jumps\"},\n",
                         seed % 100000, seed % 997, blob, hex);
        size_t take = (size_t)n < len - o ? (size_t)n : len - o;
        memcpy(b + o, rec, take);
        o += take;
    }
    return b;
}

static char *chunked(const char *body, size_t len, size_t *out_len)
{
    pdk_buf b = {0};
    for (size_t i = 0; i < len; i += 4000) {
        size_t n = len - i < 4000 ? len - i : 4000;
        pdk_buf_printf(&b, "%zx\r\n", n);
        pdk_buf_append(&b, body + i, n);
        pdk_buf_puts(&b, "\r\n");
    }
    pdk_buf_puts(&b, "0\r\n\r\n");
    *out_len = b.len;
    return pdk_buf_steal(&b);
}

static double mib_s(double seconds, size_t bytes)
{
    return (double)bytes / (1 << 20) / seconds;
}

static double median(double *v)
{
    qsort(v, PASSES, sizeof(*v), compare_double);
    return v[PASSES / 2];
}

int main(void)
{
    char *body = make_body(BODY);
    size_t raw_len = 0;
    char *raw = chunked(body, BODY, &raw_len);
    char *copy = xmalloc(raw_len);
    pdk_mask_set *set = pdk_mask_set_new();
    const char *values[] = {"t-g1045fJKlmNOpqRstUVwxYZab12CD34ef56GH78ij",
                            "sk-9f8e7d6c5b4a39281706f5e4d3c2b1a0ZyXwVuTs", NULL};
    pdk_buf jwt = {0};
    pdk_buf_puts(&jwt, "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.");
    for (int i = 0; i < 800; i++)
        pdk_buf_printf(
            &jwt, "%c",
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[(i * 37 + 11) % 64]);
    for (size_t i = 0; values[i]; i++)
        pdk_mask_set_add(set, values[i], strlen(values[i]), "bench");
    pdk_mask_set_add(set, jwt.data, jwt.len, "jwt");
    pdk_placeholder_set *phs = pdk_placeholder_set_new();
    (void)pdk_placeholder_set_add(phs, "pdk-ph-3f9a0c7e51b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8",
                                  0);
    (void)pdk_placeholder_set_add(phs, "t-0123456789abcdef0123456789abcdef0123456789abcdef", 1);
    (void)pdk_placeholder_set_add(phs, "sk-proj-9a8b7c6d5e4f30211203f4e5d6c7b8a99a8b7c6d5e4f3021",
                                  2);

    double base[PASSES], plain[PASSES], framed[PASSES], scan[PASSES];
    size_t sink = 0;
    for (int p = 0; p < PASSES; p++) {
        double t0 = now_s();
        for (size_t i = 0; i < BODY; i += READ)
            memcpy(copy + i, body + i, BODY - i < READ ? BODY - i : READ);
        base[p] = now_s() - t0;
        sink += (unsigned char)copy[p];

        for (int mode = 0; mode < 2; mode++) {
            const char *in = mode ? raw : body;
            size_t len = mode ? raw_len : BODY;
            pdk_mask_stream s;
            pdk_mask_stream_init(&s, set, mode == 1);
            t0 = now_s();
            for (size_t i = 0; i < len; i += READ) {
                const char *o;
                size_t n;
                pdk_mask_stream_feed(&s, in + i, len - i < READ ? len - i : READ, &o, &n);
                memcpy(copy, o, n < READ ? n : READ);
                sink += n;
            }
            (mode ? framed : plain)[p] = now_s() - t0;
            pdk_mask_stream_free(&s);
        }

        pdk_placeholder_scan sc;
        pdk_placeholder_found f;
        pdk_placeholder_scan_start(&sc, phs, NULL, NULL);
        t0 = now_s();
        for (size_t i = 0; i < BODY; i += READ)
            sink += pdk_placeholder_scan_feed(&sc, body + i, BODY - i < READ ? BODY - i : READ, &f);
        scan[p] = now_s() - t0;
    }
    double b = mib_s(median(base), BODY);
    double m = mib_s(median(plain), BODY), c = mib_s(median(framed), raw_len);
    double s = mib_s(median(scan), BODY);
    printf("memcpy (baseline)        %9.1f MiB/s\n", b);
    printf("mask, plain body         %9.1f MiB/s = %.3f of the baseline\n", m, m / b);
    printf("mask, chunked body       %9.1f MiB/s = %.3f of the baseline\n", c, c / b);
    printf("placeholder scan         %9.1f MiB/s = %.3f of the baseline\n", s, s / b);
    printf("{\"memcpy_mib_s\": %.1f, \"mask_plain_mib_s\": %.1f, \"mask_chunked_mib_s\": %.1f, "
           "\"placeholder_scan_mib_s\": %.1f, \"sink\": %zu}\n",
           b, m, c, s, sink % 2);
    pdk_mask_set_free(set);
    pdk_placeholder_set_free(phs);
    pdk_buf_free(&jwt);
    free(body);
    free(raw);
    free(copy);
    return 0;
}
