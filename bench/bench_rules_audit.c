/* bench_rules_audit.c: the command rules' decision latency with 1,000 rules, and the audit
 * log's throughput, each against a baseline measured in the same run.
 *
 *   paddock-bench-rules-audit [DIR]      (DIR: where the audit store goes; default a
 *                                         temporary directory, removed afterwards)
 *
 * Decision latency: pdk_command_rules_judge() over a mix of commands (plain, globbed,
 * through sh -c) against 1,000 rules; baseline: the same commands against no rules (what
 * parsing argv and seeing through the shell cost by themselves). Medians of per-call
 * times, in nanoseconds.
 *
 * Audit: events of a typical size appended in fsync'd batches of 100 (one transaction, one
 * WAL fsync each) for a bounded time; baseline: the same bytes written to a plain file with
 * one fdatasync a batch. Events per second.
 *
 * Direct audit appends: one event a call (pdk_audit_append: its own transaction, and the
 * recorded end STATE/audit-head moved with it), what commands outside a run do; baseline:
 * one line and one fdatasync a call to a plain file. Events per second. To compare two
 * builds, run each binary in the same session (the baseline shows how the disk did).
 *
 * A benchmark, not a test: it reports, it asserts nothing. Bounded in count and time.
 */
#include "audit.h"
#include "command_rules.h"
#include "fsutil.h"
#include "util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* 1,000 rules of the shapes policies have: tool + subcommand, alternatives, globs. */
static void make_rules(pdk_command_rules *rules, size_t n)
{
    static const char *const decisions[] = {"allow", "confine", "ask", "deny"};
    for (size_t i = 0; i < n; i++) {
        char tool[32], sub[32], alt1[32], alt2[32];
        snprintf(tool, sizeof(tool), "tool%zu", i % 250);
        snprintf(sub, sizeof(sub), "sub%zu", i);
        snprintf(alt1, sizeof(alt1), "+op%zu-*", i);
        snprintf(alt2, sizeof(alt2), "--flag%zu", i);
        char *t0[] = {tool, NULL};
        char *t1[] = {sub, NULL};
        char *t2[] = {alt1, alt2, NULL};
        char *const *tokens[] = {t0, t1, t2};
        pdk_decision d;
        pdk_decision_parse(decisions[i % 4], &d);
        pdk_command_rules_add(rules, tokens, 1 + i % 3, d, NULL);
    }
}

static int64_t median_judge_ns(const pdk_command_rules *rules, char ***commands, size_t ncmd,
                               size_t rounds)
{
    int64_t *samples = xcalloc(rounds * ncmd, sizeof(*samples));
    size_t k = 0;
    for (size_t r = 0; r < rounds; r++) {
        for (size_t c = 0; c < ncmd; c++) {
            pdk_command_verdict v;
            int64_t t0 = now_ns();
            pdk_command_rules_judge(rules, commands[c], &v);
            samples[k++] = now_ns() - t0;
        }
    }
    qsort(samples, k, sizeof(*samples), compare_i64);
    int64_t m = samples[k / 2];
    free(samples);
    return m;
}

static json_t *typical_event(size_t i)
{
    return json_pack("{s:[s,s,s], s:s, s:s, s:I, s:s}", "argv", "git", "push", "origin", "cwd",
                     "/home/user/src/project", "decision", "allow", "pid", (json_int_t)(1000 + i),
                     "decided_by", "rule 12 (line 40: [git, push] ask)");
}

int main(int argc, char **argv)
{
    /* ---- decisions ---- */
    char **commands[] = {
        (char *[]){"tool7", "sub7", "+op7-x", NULL},
        (char *[]){"/usr/bin/tool42", "sub542", "--flag542", "file", NULL},
        (char *[]){"git", "status", NULL},
        (char *[]){"sh", "-c", "cd /tmp && tool3 sub3 | grep x; make -j4", NULL},
        (char *[]){"bash", "-lc", "tool100 sub100 +op100-y --verbose", NULL},
        (char *[]){"ls", "-la", "/", NULL},
    };
    size_t ncmd = PDK_ARRAY_SIZE(commands);
    pdk_command_rules none = {.default_decision = PDK_DECISION_ALLOW};
    pdk_command_rules many = {.default_decision = PDK_DECISION_ALLOW};
    make_rules(&many, 1000);
    /* warm up, then interleave the two */
    median_judge_ns(&many, commands, ncmd, 200);
    int64_t base = 0, rules = 0;
    for (int rep = 0; rep < 5; rep++) {
        base += median_judge_ns(&none, commands, ncmd, 2000);
        rules += median_judge_ns(&many, commands, ncmd, 2000);
    }
    base /= 5;
    rules /= 5;
    printf("decision baseline (no rules)  median %8.2f us\n", (double)base / 1000);
    printf("decision 1000 rules           median %8.2f us\n", (double)rules / 1000);
    printf("decision 1000 rules / baseline = %.2f\n", base ? (double)rules / (double)base : 0);
    pdk_command_rules_free(&many);

    /* ---- audit ---- */
    char dir[128];
    bool own = argc < 2;
    if (own) {
        snprintf(dir, sizeof(dir), "/tmp/paddock-bench-audit.XXXXXX");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            return 1;
        }
    } else {
        snprintf(dir, sizeof(dir), "%s", argv[1]);
    }
    pdk_store *store = NULL;
    pdk_error err = {0};
    if (pdk_store_open(dir, true, &store, &err) < 0) {
        fprintf(stderr, "bench: %s\n", err.message);
        return 1;
    }
    enum { BATCH = 100, MAX_BATCHES = 400 };
    const int64_t budget = 2000000000; /* 2 s each */
    size_t events = 0;
    int64_t t0 = now_ns();
    for (int b = 0; b < MAX_BATCHES && now_ns() - t0 < budget; b++) {
        pdk_audit_item items[BATCH];
        for (size_t i = 0; i < BATCH; i++)
            items[i] = (pdk_audit_item){.session = "bench", .kind = "exec",
                                        .data = typical_event(events + i)};
        if (pdk_audit_append_batch(store, items, BATCH, &err) < 0) {
            fprintf(stderr, "bench: %s\n", err.message);
            return 1;
        }
        events += BATCH;
    }
    double audit_s = (double)(now_ns() - t0) / 1e9;

    /* baseline: the same bytes, a plain file, one fdatasync a batch */
    char path[160];
    snprintf(path, sizeof(path), "%s/baseline.jsonl", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    char *line = json_dumps(typical_event(0), JSON_COMPACT | JSON_SORT_KEYS);
    size_t len = strlen(line);
    size_t base_events = 0;
    t0 = now_ns();
    for (int b = 0; b < MAX_BATCHES && now_ns() - t0 < budget; b++) {
        for (size_t i = 0; i < BATCH; i++)
            if (write(fd, line, len) < 0 || write(fd, "\n", 1) < 0)
                return 1;
        fdatasync(fd);
        base_events += BATCH;
    }
    double base_s = (double)(now_ns() - t0) / 1e9;
    free(line);
    close(fd);

    /* ---- direct appends: one event a call ---- */
    enum { MAX_DIRECT = 3000 };
    size_t direct = 0;
    t0 = now_ns();
    for (; direct < MAX_DIRECT && now_ns() - t0 < budget; direct++) {
        if (pdk_audit_append(store, "bench", "exec", typical_event(direct), &err) < 0) {
            fprintf(stderr, "bench: %s\n", err.message);
            return 1;
        }
    }
    double direct_s = (double)(now_ns() - t0) / 1e9;
    snprintf(path, sizeof(path), "%s/baseline-direct.jsonl", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    line = json_dumps(typical_event(0), JSON_COMPACT | JSON_SORT_KEYS);
    len = strlen(line);
    size_t base_direct = 0;
    t0 = now_ns();
    for (; base_direct < MAX_DIRECT && now_ns() - t0 < budget; base_direct++)
        if (write(fd, line, len) < 0 || write(fd, "\n", 1) < 0 || fdatasync(fd) < 0)
            return 1;
    double base_direct_s = (double)(now_ns() - t0) / 1e9;
    free(line);
    close(fd);

    pdk_audit_verdict v;
    pdk_audit_verify(store, &v, &err);
    pdk_store_close(store);
    double eps = (double)events / audit_s, beps = (double)base_events / base_s;
    double deps = (double)direct / direct_s, bdeps = (double)base_direct / base_direct_s;
    printf("audit baseline (file+fdatasync)  %9.0f events/s\n", beps);
    printf("audit log (SQLite, chained)      %9.0f events/s (%zu events, batches of %d, "
           "chain %s)\n",
           eps, events, BATCH, v.intact ? "intact" : "BROKEN");
    printf("audit log / baseline = %.2f\n", eps / beps);
    printf("direct baseline (file+fdatasync) %9.0f events/s\n", bdeps);
    printf("audit direct appends (one a call)%9.0f events/s (%zu events)\n", deps, direct);
    printf("audit direct appends / baseline = %.2f\n", deps / bdeps);
    printf("{\"decision_median_us\": %.3f, \"decision_baseline_median_us\": %.3f, "
           "\"audit_events_per_s\": %.0f, \"audit_baseline_events_per_s\": %.0f, "
           "\"audit_direct_events_per_s\": %.0f, \"audit_direct_baseline_events_per_s\": %.0f}\n",
           (double)rules / 1000, (double)base / 1000, eps, beps, deps, bdeps);
    if (own)
        pdk_rm_rf_at(AT_FDCWD, dir);
    return 0;
}
