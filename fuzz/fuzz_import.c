/* fuzz_import.c: libFuzzer target for `paddock policy import --from srt`
 * (src/policy/policy_import.c): settings files come from elsewhere. Whatever the
 * input, the importer either refuses it with a message or makes a policy that paddock's
 * own parser accepts. */
#include "policy.h"
#include "policy_import.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *yaml = NULL;
    char **notes = NULL;
    pdk_error err = {0};
    if (pdk_policy_import_srt("fuzz.json", (const char *)data, size, &yaml, &notes, &err) < 0) {
        if (yaml || notes || err.message[0] == '\0')
            abort(); /* a refusal explains itself and hands nothing over */
        return 0;
    }
    pdk_policy_context ctx = {.home = "/home/fuzz"};
    pdk_policy *p = NULL;
    pdk_policy_diags diags = {0};
    pdk_error perr = {0};
    if (!yaml || !notes ||
        pdk_policy_parse("imported", yaml, strlen(yaml), &ctx, &p, &diags, &perr) < 0)
        abort(); /* what the importer makes, paddock loads */
    pdk_policy_free(p);
    pdk_strv_free(notes);
    free(yaml);
    return 0;
}
