/* fuzz_spool.c: libFuzzer target for the audit spool's lines (src/libpaddock/audit.c). The
 * spool lives in the state dir, out of every sandbox's reach, but a damaged or edited file
 * (a crash half-way through a line, a full disk, a hand edit) must be refused line by line,
 * never crash the fold, and never pass a line that does not follow its chain. */
#include "audit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char prev[65];
    memset(prev, '0', 64);
    prev[64] = '\0';
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        pdk_audit_item item = {0};
        json_t *owner = NULL;
        char hash[65];
        if (!pdk__audit_spool_parse_line(line, prev, &item, hash, &owner))
            break; /* the fold stops a file at its first bad line */
        if (!item.kind || !json_is_object(item.data) || strlen(hash) != 64 ||
            strcmp(hash, prev) == 0)
            abort(); /* a passed line has a kind, object data and a new hash */
        json_decref(item.data);
        json_decref(owner);
        memcpy(prev, hash, sizeof(prev));
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    return 0;
}
