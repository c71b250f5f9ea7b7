/* textdiff.c: see textdiff.h.
 *
 * The core (split and compare) follows xdiff's xdl_split/xdl_recs_cmp, which implements
 * Myers' "An O(ND) Difference Algorithm and Its Variations" (1986), section 4b: find the
 * middle snake of the shortest edit script with a forward and a backward search, then
 * recurse on both halves. kvdf/kvdb hold, per diagonal k = x - y, the furthest x reached.
 */
#include "textdiff.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MIN_MAX_COST 256

bool pdk_textdiff_is_binary(const char *data, size_t len)
{
    size_t n = len < PDK_TEXTDIFF_BINARY_PROBE ? len : PDK_TEXTDIFF_BINARY_PROBE;
    return n > 0 && memchr(data, '\0', n) != NULL;
}

/* A buffer split into lines: line i is data[start[i], start[i + 1]). */
typedef struct lines {
    const char *data;
    size_t count;
    size_t *start; /* count + 1 offsets */
    int32_t *id;   /* equal ids <=> equal lines (including the newline) */
} lines;

static void split_lines(lines *l, const char *data, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (data[i] == '\n')
            n++;
    if (len > 0 && data[len - 1] != '\n')
        n++;
    l->data = data;
    l->count = n;
    l->start = xmalloc((n + 1) * sizeof(size_t));
    l->id = xmalloc((n ? n : 1) * sizeof(int32_t));
    size_t k = 0;
    l->start[0] = 0;
    for (size_t i = 0; i < len; i++)
        if (data[i] == '\n')
            l->start[++k] = i + 1;
    l->start[n] = len;
}

static size_t line_len(const lines *l, size_t i)
{
    return l->start[i + 1] - l->start[i];
}

static const char *line_ptr(const lines *l, size_t i)
{
    return l->data + l->start[i];
}

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ull;
    }
    return h;
}

typedef struct uniq_line {
    const char *p;
    size_t len;
    uint64_t hash;
} uniq_line;

/* Give every distinct line of a and b a small integer id. */
static void assign_ids(lines *a, lines *b)
{
    size_t total = a->count + b->count;
    size_t cap = 16;
    while (cap < total * 2)
        cap *= 2;
    int32_t *slots = xcalloc(cap, sizeof(int32_t)); /* id + 1; 0 is empty */
    uniq_line *uniq = xmalloc((total ? total : 1) * sizeof(uniq_line));
    int32_t nuniq = 0;
    lines *sides[2] = {a, b};
    for (int s = 0; s < 2; s++) {
        lines *l = sides[s];
        for (size_t i = 0; i < l->count; i++) {
            const char *p = line_ptr(l, i);
            size_t n = line_len(l, i);
            uint64_t h = hash_bytes(p, n);
            size_t slot = (size_t)h & (cap - 1);
            for (;;) {
                int32_t v = slots[slot];
                if (v == 0) {
                    uniq[nuniq] = (uniq_line){p, n, h};
                    slots[slot] = ++nuniq;
                    l->id[i] = nuniq - 1;
                    break;
                }
                uniq_line *u = &uniq[v - 1];
                if (u->hash == h && u->len == n && memcmp(u->p, p, n) == 0) {
                    l->id[i] = v - 1;
                    break;
                }
                slot = (slot + 1) & (cap - 1);
            }
        }
    }
    free(slots);
    free(uniq);
}

typedef struct diff_env {
    const int32_t *ha, *hb;
    char *chg_a, *chg_b; /* 1 for a deleted / an inserted line */
    long *kvdf, *kvdb;
    long max_cost;
} diff_env;

/* Find a point (*mx, *my) on a shortest (or, past max_cost, a good) edit path through the
 * box [off1, lim1) x [off2, lim2), whose ends are known to differ. */
static void split(diff_env *env, long off1, long lim1, long off2, long lim2, long *mx, long *my)
{
    const int32_t *ha = env->ha, *hb = env->hb;
    long *kvdf = env->kvdf, *kvdb = env->kvdb;
    long dmin = off1 - lim2, dmax = lim1 - off2;
    long fmid = off1 - off2, bmid = lim1 - lim2;
    bool odd = ((fmid - bmid) & 1) != 0;
    long fmin = fmid, fmax = fmid;
    long bmin = bmid, bmax = bmid;

    kvdf[fmid] = off1;
    kvdb[bmid] = lim1;

    for (long ec = 1;; ec++) {
        /* Extend the forward diagonal domain by one, bouncing off the box edges. */
        if (fmin > dmin)
            kvdf[--fmin - 1] = -1;
        else
            ++fmin;
        if (fmax < dmax)
            kvdf[++fmax + 1] = -1;
        else
            --fmax;
        for (long d = fmax; d >= fmin; d -= 2) {
            long i1 = kvdf[d - 1] >= kvdf[d + 1] ? kvdf[d - 1] + 1 : kvdf[d + 1];
            long i2 = i1 - d;
            while (i1 < lim1 && i2 < lim2 && ha[i1] == hb[i2]) {
                i1++;
                i2++;
            }
            kvdf[d] = i1;
            if (odd && bmin <= d && d <= bmax && kvdb[d] <= i1) {
                *mx = i1;
                *my = i2;
                return;
            }
        }

        if (bmin > dmin)
            kvdb[--bmin - 1] = LONG_MAX;
        else
            ++bmin;
        if (bmax < dmax)
            kvdb[++bmax + 1] = LONG_MAX;
        else
            --bmax;
        for (long d = bmax; d >= bmin; d -= 2) {
            long i1 = kvdb[d - 1] < kvdb[d + 1] ? kvdb[d - 1] : kvdb[d + 1] - 1;
            long i2 = i1 - d;
            while (i1 > off1 && i2 > off2 && ha[i1 - 1] == hb[i2 - 1]) {
                i1--;
                i2--;
            }
            kvdb[d] = i1;
            if (!odd && fmin <= d && d <= fmax && i1 <= kvdf[d]) {
                *mx = i1;
                *my = i2;
                return;
            }
        }

        if (ec < env->max_cost)
            continue;
        /* Too expensive to be exact: split at the furthest-reaching forward or backward
         * path, whichever got further. Both make progress, so the recursion ends. */
        long fbest = -1, fbest1 = -1;
        for (long d = fmax; d >= fmin; d -= 2) {
            long i1 = kvdf[d] < lim1 ? kvdf[d] : lim1;
            long i2 = i1 - d;
            if (lim2 < i2) {
                i1 = lim2 + d;
                i2 = lim2;
            }
            if (fbest < i1 + i2) {
                fbest = i1 + i2;
                fbest1 = i1;
            }
        }
        long bbest = LONG_MAX, bbest1 = LONG_MAX;
        for (long d = bmax; d >= bmin; d -= 2) {
            long i1 = kvdb[d] > off1 ? kvdb[d] : off1;
            long i2 = i1 - d;
            if (i2 < off2) {
                i1 = off2 + d;
                i2 = off2;
            }
            if (i1 + i2 < bbest) {
                bbest = i1 + i2;
                bbest1 = i1;
            }
        }
        if ((lim1 + lim2) - bbest < fbest - (off1 + off2)) {
            *mx = fbest1;
            *my = fbest - fbest1;
        } else {
            *mx = bbest1;
            *my = bbest - bbest1;
        }
        return;
    }
}

static void compare(diff_env *env, long off1, long lim1, long off2, long lim2)
{
    /* Shrink the box by the common head and tail. */
    while (off1 < lim1 && off2 < lim2 && env->ha[off1] == env->hb[off2]) {
        off1++;
        off2++;
    }
    while (off1 < lim1 && off2 < lim2 && env->ha[lim1 - 1] == env->hb[lim2 - 1]) {
        lim1--;
        lim2--;
    }
    if (off1 == lim1) {
        for (; off2 < lim2; off2++)
            env->chg_b[off2] = 1;
    } else if (off2 == lim2) {
        for (; off1 < lim1; off1++)
            env->chg_a[off1] = 1;
    } else {
        long mx = 0, my = 0;
        split(env, off1, lim1, off2, lim2, &mx, &my);
        compare(env, off1, mx, off2, my);
        compare(env, mx, lim1, my, lim2);
    }
}

static long isqrt(long v)
{
    long r = 1;
    while (r * r < v)
        r++;
    return r;
}

/* One run of changes: a's lines [a0, a1) replaced by b's lines [b0, b1). */
typedef struct edit {
    size_t a0, a1, b0, b1;
} edit;

static void put_line(pdk_buf *out, char prefix, const lines *l, size_t i)
{
    const char *p = line_ptr(l, i);
    size_t n = line_len(l, i);
    pdk_buf_append(out, &prefix, 1);
    pdk_buf_append(out, p, n);
    if (n == 0 || p[n - 1] != '\n')
        pdk_buf_puts(out, "\n\\ No newline at end of file\n");
}

static void put_range(pdk_buf *out, size_t start, size_t count)
{
    if (count == 1)
        pdk_buf_printf(out, "%zu", start + 1);
    else if (count == 0)
        pdk_buf_printf(out, "%zu,0", start);
    else
        pdk_buf_printf(out, "%zu,%zu", start + 1, count);
}

void pdk_textdiff_unified(const char *a, size_t alen, const char *b, size_t blen, unsigned context,
                          pdk_buf *out, pdk_textdiff_stats *stats)
{
    pdk_textdiff_stats local = {0};
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof(*stats));
    if (alen == blen && (alen == 0 || memcmp(a, b, alen) == 0))
        return;

    lines la, lb;
    split_lines(&la, a, alen);
    split_lines(&lb, b, blen);
    assign_ids(&la, &lb);

    size_t n = la.count, m = lb.count;
    size_t ndiags = n + m + 3;
    long *kvd = xmalloc((2 * ndiags + 2) * sizeof(long));
    diff_env env = {
        .ha = la.id,
        .hb = lb.id,
        .chg_a = xcalloc(n + 1, 1),
        .chg_b = xcalloc(m + 1, 1),
        .kvdf = kvd + m + 1,
        .kvdb = kvd + ndiags + m + 1,
        .max_cost = isqrt((long)ndiags),
    };
    if (env.max_cost < MIN_MAX_COST)
        env.max_cost = MIN_MAX_COST;
    compare(&env, 0, (long)n, 0, (long)m);
    free(kvd);

    /* Collect runs of changes, walking both sides in step over the unchanged lines. */
    edit *edits = NULL;
    size_t nedits = 0, cap = 0;
    size_t i = 0, j = 0;
    while (i < n || j < m) {
        bool ca = i < n && env.chg_a[i], cb = j < m && env.chg_b[j];
        if (!ca && !cb) {
            if (i >= n || j >= m)
                break; /* cannot happen: both sides have as many unchanged lines */
            i++;
            j++;
            continue;
        }
        edit e = {.a0 = i, .b0 = j};
        while (i < n && env.chg_a[i])
            i++;
        while (j < m && env.chg_b[j])
            j++;
        e.a1 = i;
        e.b1 = j;
        if (nedits == cap) {
            cap = cap ? cap * 2 : 16;
            edits = xrealloc(edits, cap * sizeof(edit));
        }
        edits[nedits++] = e;
        stats->deletions += e.a1 - e.a0;
        stats->insertions += e.b1 - e.b0;
    }

    for (size_t h = 0; h < nedits;) {
        size_t last = h;
        while (last + 1 < nedits && edits[last + 1].a0 - edits[last].a1 <= 2 * (size_t)context)
            last++;
        stats->hunks++;
        if (out) {
            const edit *first = &edits[h], *end = &edits[last];
            size_t astart = first->a0 > context ? first->a0 - context : 0;
            size_t bstart = first->b0 - (first->a0 - astart);
            size_t aend = end->a1 + context < n ? end->a1 + context : n;
            size_t bend = end->b1 + (aend - end->a1);
            pdk_buf_puts(out, "@@ -");
            put_range(out, astart, aend - astart);
            pdk_buf_puts(out, " +");
            put_range(out, bstart, bend - bstart);
            pdk_buf_puts(out, " @@\n");
            size_t ai = astart;
            for (size_t k = h; k <= last; k++) {
                const edit *e = &edits[k];
                for (; ai < e->a0; ai++)
                    put_line(out, ' ', &la, ai);
                for (size_t x = e->a0; x < e->a1; x++)
                    put_line(out, '-', &la, x);
                for (size_t y = e->b0; y < e->b1; y++)
                    put_line(out, '+', &lb, y);
                ai = e->a1;
            }
            for (; ai < aend; ai++)
                put_line(out, ' ', &la, ai);
        }
        h = last + 1;
    }

    free(edits);
    free(env.chg_a);
    free(env.chg_b);
    free(la.start);
    free(la.id);
    free(lb.start);
    free(lb.id);
}
