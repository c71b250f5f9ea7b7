/* fuzz_home.c: libFuzzer target for the file of placeholders kept with a persistent home
 * (STATE/home-placeholders/NAME.json, src/workspace/home.c). It lives in the state dir,
 * out of every sandbox's reach, but a corrupt or truncated one (a crash, a hand edit) must
 * give an error, never a crash, and never a placeholder that is not 48 random hex digits.
 * Checked: a file read is one that is written again unchanged (what was kept holds, and
 * is not written again); dropping a secret drops exactly the placeholders made of it. The
 * .c files are not included: the target links the library. */
#include "home.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_random(const char *r)
{
    size_t n = strlen(r);
    if (n != PDK_PLACEHOLDER_RANDOM_HEX || strspn(r, "0123456789abcdef") != n)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *const key_secrets[] = {"api_key", NULL};
    char *const app_secrets[] = {"app_id", "app_secret", NULL};
    pdk_home_placeholder list[] = {{.key = "api", .secrets = key_secrets},
                                   {.key = "feishu/app_secret", .secrets = app_secrets},
                                   {.key = "none", .secrets = (char *const[]){NULL}}};
    size_t count = PDK_ARRAY_SIZE(list);
    char *updated = NULL;
    int r = pdk_home_placeholders_apply((const char *)data, size, "1:2", list, count, &updated);
    if (r < 0) {
        if (updated)
            abort(); /* a refused file hands nothing over */
        return 0;
    }
    for (size_t i = 0; i < count; i++)
        check_random(list[i].random);
    /* What it would write, read again: the same placeholders, nothing to write. */
    char *file = updated ? updated : xstrndup((const char *)data, size);
    pdk_home_placeholder again[PDK_ARRAY_SIZE(list)];
    memcpy(again, list, sizeof(again));
    char *rewritten = NULL;
    if (pdk_home_placeholders_apply(file, strlen(file), "1:2", again, count, &rewritten) < 0 ||
        rewritten)
        abort();
    for (size_t i = 0; i < count; i++)
        if (strcmp(again[i].random, list[i].random) != 0)
            abort();
    /* Dropping app_id drops feishu's, keeps the others. */
    size_t dropped = 0;
    char *without = NULL;
    if (pdk_home_placeholders_drop(file, strlen(file), "app_id", &dropped, &without) < 0 ||
        dropped < 1 || !without)
        abort();
    memcpy(again, list, sizeof(again));
    if (pdk_home_placeholders_apply(without, strlen(without), "1:2", again, count, &rewritten) < 0 ||
        !rewritten || strcmp(again[0].random, list[0].random) != 0 ||
        strcmp(again[1].random, list[1].random) == 0)
        abort();
    free(rewritten);
    free(without);
    free(file);
    return 0;
}
