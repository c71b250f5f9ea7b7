/* fuzz_policy.c: libFuzzer target for the policy parser (src/policy/policy.c).
 *
 * The input is a policy text. Besides pdk_policy_parse, it goes through pdk_parse_size and
 * pdk_parse_duration as a string, and every diagnostic is formatted, so that the whole
 * error path runs too. Built with -fsanitize=fuzzer (fuzz/meson.build, -Dfuzz=true) and,
 * without libFuzzer, as fuzz-policy-replay (replay.c) for the committed corpus.
 */
#include "policy.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const pdk_policy_context ctx = {.home = "/home/fuzz"};
    pdk_policy *policy = NULL;
    pdk_policy_diags diags = {0};
    pdk_error err = {0};

    int r = pdk_policy_parse("fuzz.yaml", (const char *)data, size, &ctx, &policy, &diags, &err);
    if (r == 0 && (!policy || diags.count != 0))
        abort(); /* success must hand over a policy and no diagnostics */
    if (r < 0 && (policy || diags.count == 0 || err.message[0] == '\0'))
        abort(); /* failure must explain itself */
    for (size_t i = 0; i < diags.count; i++) {
        char *line = pdk_policy_diag_format(&diags.items[i]);
        if (strchr(line, '\n'))
            abort(); /* a diagnostic is one line */
        free(line);
    }
    if (policy) {
        /* Touch every list, so ASan sees a bad terminator or a short allocation. */
        char **lists[] = {policy->read_deny, policy->read_allow, policy->write, policy->protect,
                          policy->env_pass};
        size_t total = 0;
        for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++)
            for (size_t i = 0; lists[l][i]; i++)
                total += strlen(lists[l][i]);
        for (size_t i = 0; i < policy->env_set_count; i++)
            total += strlen(policy->env_set[i].name) + strlen(policy->env_set[i].value);
        for (size_t i = 0; i < policy->tcp_bind_count; i++)
            total += policy->tcp_bind[i];
        for (size_t i = 0; i < policy->tcp_connect_count; i++)
            total += policy->tcp_connect[i];
        (void)total;
    }
    pdk_policy_free(policy);
    pdk_policy_diags_free(&diags);

    if (size < 64) {
        char text[64];
        memcpy(text, data, size);
        text[size] = '\0';
        int64_t v;
        if (pdk_parse_size(text, &v) == 0 && v < 0)
            abort();
        if (pdk_parse_duration(text, &v) == 0 && v < 0)
            abort();
    }
    return 0;
}
