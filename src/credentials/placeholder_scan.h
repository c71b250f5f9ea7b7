/* placeholder_scan.h: a placeholder found in what a request carries, however it is written.
 *
 * A placeholder is worth nothing outside its sandbox, but a request that carries one to a
 * host its credential is not bound to is what an agent talked into leaking "its token"
 * does, so the gateway refuses it and records it (gateway_credentials.c). An agent (or
 * whoever talks it into this) may cut the placeholder, change its prefix or encode it: the
 * scan looks for a fragment of its random part (PDK_PLACEHOLDER_RANDOM_HEX lowercase hex
 * digits after the prefix, 4 bits of chance each), in these forms:
 *   plain   PDK_PLACEHOLDER_FRAGMENT digits of it, in any case (a placeholder cut in two
 *           has one part this long at least; its prefix may be anything)
 *   hex     the hex of those digits' characters (2 * PDK_PLACEHOLDER_FRAGMENT digits)
 *   base64  the base64 of them (standard or URL-safe, at any alignment, padded or not:
 *           PDK_PLACEHOLDER_FRAGMENT_B64 characters that depend on them alone)
 * each also when its characters are escaped: %XX (URLs, forms), \uXXXX (JSON), \xXX. Forms
 * are made once, when a placeholder is added (pdk_placeholder_set_add); the scan decodes
 * nothing but the escapes, and costs a few instructions a byte: each form's characters are
 * looked up by the last 8 (hex) or 5 (base64) of them, then compared.
 *
 * A scan is fed bytes in any slices (a fragment across two slices is found) until a break
 * (pdk_placeholder_scan_break: what follows is not next to what came, another field).
 */
#ifndef PADDOCK_PLACEHOLDER_SCAN_H
#define PADDOCK_PLACEHOLDER_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PDK_PLACEHOLDER_RANDOM_HEX   48 /* 24 random bytes */
#define PDK_PLACEHOLDER_FRAGMENT     16 /* 64 bits of them */
#define PDK_PLACEHOLDER_FRAGMENT_B64 20

typedef struct pdk_placeholder_set pdk_placeholder_set;

pdk_placeholder_set *pdk_placeholder_set_new(void);
/* Add a placeholder (its last PDK_PLACEHOLDER_RANDOM_HEX characters, lowercase hex, are its
 * random part) for the caller's id (>= 0). -1 when it has no such random part. */
int pdk_placeholder_set_add(pdk_placeholder_set *set, const char *placeholder, int id);
/* NULL-safe. */
void pdk_placeholder_set_free(pdk_placeholder_set *set);

/* The escapes a fragment found was written with (bits). */
enum {
    PDK_PLACEHOLDER_PERCENT = 1, /* %XX */
    PDK_PLACEHOLDER_JSON = 2,    /* \uXXXX */
    PDK_PLACEHOLDER_BACKSLASH_X = 4,
};

typedef struct pdk_placeholder_found {
    int id;
    const char *form; /* "plain", "hex", "base64" */
    unsigned escapes;
} pdk_placeholder_found;

/* "base64, percent-encoded": how a found fragment was written, into buf. */
void pdk_placeholder_found_describe(const pdk_placeholder_found *found, char *buf, size_t size);

#define PDK_PLACEHOLDER_HISTORY 64

typedef struct pdk_placeholder_scan {
    const pdk_placeholder_set *set;
    bool (*wanted)(void *arg, int id); /* which ids count (NULL: every one) */
    void *wanted_arg;
    char escape[6]; /* an escape begun and not complete yet */
    uint8_t escape_len;
    unsigned char history[PDK_PLACEHOLDER_HISTORY]; /* the last bytes, escapes decoded */
    uint8_t history_escapes[PDK_PLACEHOLDER_HISTORY];
    uint32_t count;
    uint32_t hex_run, b64_run; /* how many of the last bytes are hex digits, base64 */
    uint32_t hex_key, b64_key; /* the last 8 hex digits, 5 base64 characters */
} pdk_placeholder_scan;

void pdk_placeholder_scan_start(pdk_placeholder_scan *scan, const pdk_placeholder_set *set,
                                bool (*wanted)(void *arg, int id), void *arg);
/* The next bytes: true when a placeholder is found in what came so far (found filled);
 * the scan may go on. */
bool pdk_placeholder_scan_feed(pdk_placeholder_scan *scan, const char *data, size_t len,
                               pdk_placeholder_found *found);
/* What comes next is not next to what came: an escape begun is taken as it is, runs end.
 * true when that completed a find (found filled). */
bool pdk_placeholder_scan_break(pdk_placeholder_scan *scan, pdk_placeholder_found *found);

/* One string, scanned alone: true when it holds a placeholder of a wanted id. */
bool pdk_placeholder_scan_string(const pdk_placeholder_set *set, bool (*wanted)(void *arg, int id),
                                 void *arg, const char *s, size_t len,
                                 pdk_placeholder_found *found);

#endif
