/* test_textdiff.c: Myers diff and unified hunks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "textdiff.h"

#include <stdlib.h>
#include <string.h>

static char *diff_of(const char *a, const char *b, unsigned context, pdk_textdiff_stats *st)
{
    pdk_buf out = {0};
    pdk_textdiff_unified(a, strlen(a), b, strlen(b), context, &out, st);
    return pdk_buf_steal(&out);
}

static void t_equal(void **state)
{
    pdk_textdiff_stats st;
    char *d = diff_of("a\nb\n", "a\nb\n", 3, &st);
    assert_string_equal(d, "");
    assert_int_equal(st.insertions, 0);
    assert_int_equal(st.deletions, 0);
    assert_int_equal(st.hunks, 0);
    free(d);
    d = diff_of("", "", 3, &st);
    assert_string_equal(d, "");
    free(d);
}

static void t_middle_change(void **state)
{
    const char *a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
    const char *b = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
    pdk_textdiff_stats st;
    char *d = diff_of(a, b, 3, &st);
    assert_string_equal(d, "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
    assert_int_equal(st.insertions, 1);
    assert_int_equal(st.deletions, 1);
    free(d);
    d = diff_of(a, b, 0, &st);
    assert_string_equal(d, "@@ -5 +5 @@\n-5\n+five\n");
    free(d);
}

static void t_add_delete_all(void **state)
{
    pdk_textdiff_stats st;
    char *d = diff_of("", "a\nb\n", 3, &st);
    assert_string_equal(d, "@@ -0,0 +1,2 @@\n+a\n+b\n");
    assert_int_equal(st.insertions, 2);
    free(d);
    d = diff_of("a\nb\nc\n", "", 3, &st);
    assert_string_equal(d, "@@ -1,3 +0,0 @@\n-a\n-b\n-c\n");
    assert_int_equal(st.deletions, 3);
    free(d);
    /* Pure insertion with no context: the old range is empty after line 2. */
    d = diff_of("a\nb\nc\n", "a\nb\nX\nc\n", 0, &st);
    assert_string_equal(d, "@@ -2,0 +3 @@\n+X\n");
    free(d);
}

static void t_no_newline(void **state)
{
    pdk_textdiff_stats st;
    char *d = diff_of("a\nb", "a\nc", 3, &st);
    assert_string_equal(d, "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"
                           "\\ No newline at end of file\n");
    free(d);
    /* Adding the final newline changes the last line. */
    d = diff_of("a\nb", "a\nb\n", 3, &st);
    assert_string_equal(d, "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n");
    assert_int_equal(st.insertions, 1);
    assert_int_equal(st.deletions, 1);
    free(d);
    /* An unchanged last line without newline shows as context with the marker. */
    d = diff_of("x\ny", "X\ny", 3, &st);
    assert_string_equal(d, "@@ -1,2 +1,2 @@\n-x\n+X\n y\n\\ No newline at end of file\n");
    free(d);
    d = diff_of("", "target", 3, &st);
    assert_string_equal(d, "@@ -0,0 +1 @@\n+target\n\\ No newline at end of file\n");
    free(d);
}

static void t_hunk_merging(void **state)
{
    pdk_buf a = {0}, b = {0};
    for (int i = 1; i <= 30; i++) {
        pdk_buf_printf(&a, "%d\n", i);
        if (i == 5 || i == 11 || i == 25)
            pdk_buf_printf(&b, "changed %d\n", i);
        else
            pdk_buf_printf(&b, "%d\n", i);
    }
    pdk_textdiff_stats st;
    pdk_buf out = {0};
    /* 5 and 11 are 5 unchanged lines apart (<= 2*3): one hunk; 25 is far: another. */
    pdk_textdiff_unified(a.data, a.len, b.data, b.len, 3, &out, &st);
    assert_int_equal(st.hunks, 2);
    assert_non_null(strstr(out.data, "@@ -2,13 +2,13 @@\n"));
    assert_non_null(strstr(out.data, "@@ -22,7 +22,7 @@\n"));
    pdk_buf_free(&out);
    /* With 2 lines of context, 5 and 11 are too far apart (5 > 4). */
    pdk_textdiff_unified(a.data, a.len, b.data, b.len, 2, NULL, &st);
    assert_int_equal(st.hunks, 3);
    pdk_buf_free(&a);
    pdk_buf_free(&b);
}

static void t_binary(void **state)
{
    char buf[9000];
    memset(buf, 'a', sizeof(buf));
    assert_false(pdk_textdiff_is_binary(buf, sizeof(buf)));
    buf[7999] = '\0';
    assert_true(pdk_textdiff_is_binary(buf, sizeof(buf)));
    buf[7999] = 'a';
    buf[8000] = '\0'; /* beyond the probe, as in git */
    assert_false(pdk_textdiff_is_binary(buf, sizeof(buf)));
    assert_false(pdk_textdiff_is_binary("", 0));
}

/* ---- property tests: the hunks turn a into b, and the edit is minimal ------------------ */

typedef struct text_lines {
    char **v;
    size_t n;
} text_lines;

static void lines_push(text_lines *l, const char *p, size_t len)
{
    l->v = realloc(l->v, (l->n + 1) * sizeof(char *));
    l->v[l->n++] = strndup(p, len);
}

static void lines_split(text_lines *l, const char *s)
{
    memset(l, 0, sizeof(*l));
    while (*s) {
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) + 1 : strlen(s);
        lines_push(l, s, len);
        s += len;
    }
}

static void lines_free(text_lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

/* Apply unified hunks to a; returns the result (NULL when the hunks do not fit a). */
static char *apply_hunks(const char *a, const char *diff)
{
    text_lines old;
    lines_split(&old, a);
    pdk_buf out = {0};
    size_t pos = 0; /* next old line to copy */
    bool ok = true;
    for (const char *p = diff; *p && ok;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        /* A "\ No newline" line after this one means its newline is not part of it. */
        size_t body = len - 1 - (strncmp(p + len, "\\ No newline", 12) == 0 ? 1 : 0);
        if (strncmp(p, "@@ -", 4) == 0) {
            unsigned long a0 = strtoul(p + 4, NULL, 10), cnt = 1;
            const char *comma = p + 4 + strspn(p + 4, "0123456789");
            if (*comma == ',')
                cnt = strtoul(comma + 1, NULL, 10);
            size_t start = cnt == 0 ? a0 : a0 - 1;
            if (start < pos || start > old.n)
                ok = false;
            for (; ok && pos < start; pos++)
                pdk_buf_puts(&out, old.v[pos]);
        } else if (p[0] == ' ' || p[0] == '-') {
            if (pos >= old.n || strlen(old.v[pos]) != body || memcmp(old.v[pos], p + 1, body) != 0)
                ok = false;
            else if (p[0] == ' ')
                pdk_buf_append(&out, p + 1, body);
            pos++;
        } else if (p[0] == '+') {
            pdk_buf_append(&out, p + 1, body);
        } else if (p[0] != '\\') {
            ok = false;
        }
        p += len;
    }
    for (; ok && pos < old.n; pos++)
        pdk_buf_puts(&out, old.v[pos]);
    lines_free(&old);
    if (!ok) {
        pdk_buf_free(&out);
        return NULL;
    }
    return pdk_buf_steal(&out);
}

static size_t lcs_length(const text_lines *a, const text_lines *b)
{
    size_t *prev = calloc(b->n + 1, sizeof(size_t)), *cur = calloc(b->n + 1, sizeof(size_t));
    for (size_t i = 1; i <= a->n; i++) {
        for (size_t j = 1; j <= b->n; j++) {
            if (strcmp(a->v[i - 1], b->v[j - 1]) == 0)
                cur[j] = prev[j - 1] + 1;
            else
                cur[j] = prev[j] > cur[j - 1] ? prev[j] : cur[j - 1];
        }
        size_t *t = prev;
        prev = cur;
        cur = t;
    }
    size_t r = prev[b->n];
    free(prev);
    free(cur);
    return r;
}

static char *random_text(unsigned *seed, size_t lines, int alphabet, bool final_newline)
{
    pdk_buf b = {0};
    for (size_t i = 0; i < lines; i++) {
        pdk_buf_printf(&b, "line %d", rand_r(seed) % alphabet);
        if (i + 1 < lines || final_newline)
            pdk_buf_puts(&b, "\n");
    }
    return pdk_buf_steal(&b);
}

static void t_random_roundtrip(void **state)
{
    unsigned seed = 12345;
    for (int round = 0; round < 400; round++) {
        size_t na = (size_t)(rand_r(&seed) % 40), nb = (size_t)(rand_r(&seed) % 40);
        int alphabet = 2 + rand_r(&seed) % 8;
        char *a = random_text(&seed, na, alphabet, rand_r(&seed) % 4 != 0);
        char *b = random_text(&seed, nb, alphabet, rand_r(&seed) % 4 != 0);
        unsigned context = (unsigned)(rand_r(&seed) % 5);
        pdk_textdiff_stats st;
        char *d = diff_of(a, b, context, &st);
        char *back = apply_hunks(a, d);
        if (!back || strcmp(back, b) != 0)
            fail_msg("round %d: the hunks do not turn a into b\n--a--\n%s\n--b--\n%s\n--diff--\n%s",
                     round, a, b, d);
        text_lines la, lb;
        lines_split(&la, a);
        lines_split(&lb, b);
        size_t lcs = lcs_length(&la, &lb);
        assert_int_equal(st.deletions, la.n - lcs);
        assert_int_equal(st.insertions, lb.n - lcs);
        lines_free(&la);
        lines_free(&lb);
        free(back);
        free(d);
        free(a);
        free(b);
    }
}

static void t_large_inputs(void **state)
{
    /* Many differences: the cost heuristic keeps this fast; the result must still apply. */
    unsigned seed = 99;
    char *a = random_text(&seed, 30000, 1000, true);
    char *b = random_text(&seed, 30000, 1000, true);
    pdk_textdiff_stats st;
    char *d = diff_of(a, b, 3, &st);
    char *back = apply_hunks(a, d);
    assert_non_null(back);
    assert_true(strcmp(back, b) == 0);
    assert_true(st.insertions > 0 && st.deletions > 0);
    free(back);
    free(d);
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_equal),
        cmocka_unit_test(t_middle_change),
        cmocka_unit_test(t_add_delete_all),
        cmocka_unit_test(t_no_newline),
        cmocka_unit_test(t_hunk_merging),
        cmocka_unit_test(t_binary),
        cmocka_unit_test(t_random_roundtrip),
        cmocka_unit_test(t_large_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
