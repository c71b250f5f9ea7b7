/* fuzz_session.c: libFuzzer target for session.json (src/workspace/session.c). The file
 * lives in the state dir, out of every sandbox's reach, but a corrupt or truncated one
 * (a crash, a full disk, a hand edit) must give an error, never a crash. */
#include "session.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pdk_session *s = NULL;
    pdk_error err = {0};
    int r = pdk_session_parse_metadata("fuzz", (const char *)data, size, &s, &err);
    if (r == 0) {
        if (!s || !s->workspace || s->workspace[0] != '/' || !s->placeholders ||
            !s->protected_paths)
            abort(); /* a parsed session has a workspace and its lists */
        pdk_session_free(s);
    } else if (s || err.message[0] == '\0') {
        abort(); /* failure must explain itself and hand nothing over */
    }
    return 0;
}
