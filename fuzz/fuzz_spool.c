/* fuzz_spool.c: libFuzzer target for the audit spool's lines and the fold's scan of a spool
 * file (src/store/audit.c). The spool lives in the state dir, out of every sandbox's
 * reach, but a damaged or edited file (a crash half-way through a line, a full disk, a hand
 * edit) must be refused line by line, never crash the fold, and never pass a line that does
 * not follow its chain; a torn line is skipped only when what follows goes on with the
 * chain. Scanned twice: with the file's writer still there, and gone (the scan takes a
 * torn tail then). */
#include "audit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char genesis[] = "0000000000000000000000000000000000000000000000000000000000000000";

/* Line by line, as the fold did before it skipped torn lines: stops at the first bad one. */
static void lines(const char *input, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return;
    memcpy(text, input, size);
    text[size] = '\0';
    char prev[65];
    memcpy(prev, genesis, sizeof(prev));
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        pdk_audit_item item = {0};
        json_t *owner = NULL;
        char hash[65];
        if (!pdk__audit_spool_parse_line(line, prev, &item, hash, &owner))
            break;
        if (!item.kind || !json_is_object(item.data) || strlen(hash) != 64 ||
            strcmp(hash, prev) == 0)
            abort(); /* a passed line has a kind, object data and a new hash */
        json_decref(item.data);
        json_decref(owner);
        memcpy(prev, hash, sizeof(prev));
        line = nl ? nl + 1 : NULL;
    }
    free(text);
}

/* The fold's scan of the whole input. */
static void scan(const char *input, size_t size, bool at_end)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return;
    memcpy(buf, input, size);
    buf[size] = '\0';
    pdk__spool_scan sc = {0};
    memcpy(sc.last_hash, genesis, sizeof(sc.last_hash));
    pdk__audit_spool_scan("f.jsonl", 0, buf, size, at_end, SIZE_MAX, &sc);
    if (sc.folded > size || (at_end && !sc.damaged && sc.folded != size))
        abort(); /* whatever its writer left is taken once it is gone, unless damaged */
    for (size_t i = 0; i < sc.count; i++) {
        const pdk_audit_item *it = &sc.items[i];
        if (!it->kind || !json_is_object(it->data))
            abort();
        if (!sc.owners[i] && strcmp(it->kind, "audit.spool_torn") != 0 &&
            strcmp(it->kind, "audit.spool_damaged") != 0)
            abort(); /* the scan's own notes are these two */
    }
    pdk__audit_spool_scan_free(&sc);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lines((const char *)data, size);
    scan((const char *)data, size, false);
    scan((const char *)data, size, true);
    return 0;
}
