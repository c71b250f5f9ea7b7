/* test_redact.c: the registry of secret values (redact.c). Every occurrence of a real value
 * or a placeholder is replaced in text for logs and the audit log; only real values in what
 * goes into a sandbox; values too short to be secrets are not registered (they would redact
 * ordinary words); a value that holds another registered one is replaced whole, whatever
 * the order they came in; the generation moves when the real values change, not for a
 * placeholder; a value registered as both is a value; the registry is safe from threads. */
#include "redact.h"
#include "util.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int reset(void **state)
{
    (void)state;
    pdk_redact_clear();
    return 0;
}

static void t_values_and_placeholders(void **state)
{
    (void)state;
    assert_null(pdk_redact_text("nothing registered"));
    pdk_redact_add("real-secret-1");
    pdk_redact_add_placeholder("PDK_PLACEHOLDER_abcd");
    char *r = pdk_redact_text("a real-secret-1 b PDK_PLACEHOLDER_abcd c real-secret-1");
    assert_string_equal(r, "a " PDK_REDACTED " b " PDK_REDACTED " c " PDK_REDACTED);
    free(r);
    assert_null(pdk_redact_text("neither here"));
    /* toward the sandbox: the placeholder stays (the sandbox holds it), the value never */
    r = pdk_redact_values_text("real-secret-1 PDK_PLACEHOLDER_abcd");
    assert_string_equal(r, PDK_REDACTED " PDK_PLACEHOLDER_abcd");
    free(r);
    r = pdk_redact_values_text("only PDK_PLACEHOLDER_abcd");
    assert_string_equal(r, "only PDK_PLACEHOLDER_abcd");
    free(r);
    /* the always-a-copy forms, NULL included */
    r = pdk_redacted("plain");
    assert_string_equal(r, "plain");
    free(r);
    r = pdk_redacted(NULL);
    assert_string_equal(r, "");
    free(r);
    r = pdk_redact_values_text(NULL);
    assert_string_equal(r, "");
    free(r);
    assert_null(pdk_redact_text(NULL));
}

static void t_short_values_ignored(void **state)
{
    (void)state;
    pdk_redact_add("abc");
    pdk_redact_add("");
    pdk_redact_add(NULL);
    pdk_redact_add_placeholder("xy");
    assert_null(pdk_redact_text("abc xy: words stay"));
    pdk_redact_add("abcd");
    char *r = pdk_redact_text("abcd");
    assert_string_equal(r, PDK_REDACTED);
    free(r);
}

static void t_contained_values(void **state)
{
    (void)state;
    /* the shorter first: the longer must still go whole */
    pdk_redact_add("SECRET");
    pdk_redact_add("prefix-SECRET-suffix");
    char *r = pdk_redact_text("x prefix-SECRET-suffix y SECRET");
    assert_non_null(r);
    assert_null(strstr(r, "prefix"));
    assert_null(strstr(r, "suffix"));
    assert_string_equal(r, "x " PDK_REDACTED " y " PDK_REDACTED);
    free(r);
    pdk_redact_clear();
    /* the longer first */
    pdk_redact_add("prefix-SECRET-suffix");
    pdk_redact_add("SECRET");
    r = pdk_redact_text("prefix-SECRET-suffix");
    assert_string_equal(r, PDK_REDACTED);
    free(r);
    /* a placeholder holding a value: toward the sandbox the value is still masked */
    pdk_redact_add_placeholder("PH-SECRET-PH");
    r = pdk_redact_values_text("PH-SECRET-PH");
    assert_null(strstr(r, "SECRET"));
    free(r);
}

typedef struct seen {
    int count;
    char labels[8][64];
    char values[8][64];
} seen;

static void collect(void *arg, const char *value, const char *label)
{
    seen *s = arg;
    if (s->count < 8) {
        snprintf(s->values[s->count], 64, "%s", value);
        snprintf(s->labels[s->count], 64, "%s", label);
    }
    s->count++;
}

static void t_generation_and_listing(void **state)
{
    (void)state;
    uint64_t g0 = pdk_redact_generation();
    pdk_redact_add_placeholder("PDK_PLACEHOLDER_x1");
    assert_true(pdk_redact_generation() == g0); /* a placeholder: no value changed */
    pdk_redact_add_named("value-one", "api");
    uint64_t g1 = pdk_redact_generation();
    assert_true(g1 > g0);
    pdk_redact_add("value-one"); /* again: nothing new */
    assert_true(pdk_redact_generation() == g1);
    /* a placeholder that turns out to be a value is a value from now on */
    pdk_redact_add("PDK_PLACEHOLDER_x1");
    assert_true(pdk_redact_generation() > g1);
    char *r = pdk_redact_values_text("PDK_PLACEHOLDER_x1");
    assert_string_equal(r, PDK_REDACTED);
    free(r);
    seen s = {0};
    pdk_redact_values(collect, &s);
    assert_int_equal(s.count, 2);
    int one = strcmp(s.values[0], "value-one") == 0 ? 0 : 1;
    assert_string_equal(s.values[one], "value-one");
    assert_string_equal(s.labels[one], "api");
    assert_string_equal(s.values[1 - one], "PDK_PLACEHOLDER_x1");
    assert_string_equal(s.labels[1 - one], ""); /* no label: "" */
    /* clearing forgets every value and moves the generation */
    uint64_t g2 = pdk_redact_generation();
    pdk_redact_clear();
    assert_true(pdk_redact_generation() > g2);
    assert_null(pdk_redact_text("value-one"));
    s.count = 0;
    pdk_redact_values(collect, &s);
    assert_int_equal(s.count, 0);
}

static void *adder(void *arg)
{
    int base = *(int *)arg;
    for (int i = 0; i < 200; i++) {
        char v[32];
        snprintf(v, sizeof(v), "thread-%d-value-%d", base, i);
        pdk_redact_add(v);
        free(pdk_redact_text(v));
    }
    return NULL;
}

static void t_threads(void **state)
{
    (void)state;
    pthread_t t[4];
    int ids[4] = {0, 1, 2, 3};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, adder, &ids[i]), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    seen s = {0};
    pdk_redact_values(collect, &s);
    assert_int_equal(s.count, 800);
    char *r = pdk_redact_text("thread-3-value-199");
    assert_string_equal(r, PDK_REDACTED);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(t_values_and_placeholders, reset),
        cmocka_unit_test_setup(t_short_values_ignored, reset),
        cmocka_unit_test_setup(t_contained_values, reset),
        cmocka_unit_test_setup(t_generation_and_listing, reset),
        cmocka_unit_test_setup(t_threads, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
