/* fuzz_placeholder.c: libFuzzer target for the placeholder scan (placeholder_scan.c): its
 * escape decoding (%XX, \uXXXX, \xXX) and its hex and base64 runs, over request bytes.
 *
 * The first byte picks where the input is cut in two (the scan must find the same, fed in
 * one piece or two), the second an encoding of a placeholder and the third where it is put
 * into the rest of the input (then it must be found, whatever bytes surround it). Built with
 * -fsanitize=fuzzer (fuzz/meson.build, -Dfuzz=true) and, without libFuzzer, as
 * fuzz-placeholder-replay.
 */
#include "placeholder_scan.h"
#include "util.h"

#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PH1 "pdk-ph-3f9a0c7e51b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8"
#define PH2 "t-0123456789abcdef0123456789abcdef0123456789abcdef"

static pdk_placeholder_set *the_set(void)
{
    static pdk_placeholder_set *set;
    if (!set) {
        set = pdk_placeholder_set_new();
        if (pdk_placeholder_set_add(set, PH1, 0) < 0 || pdk_placeholder_set_add(set, PH2, 1) < 0)
            abort();
    }
    return set;
}

typedef struct result {
    bool hit;
    pdk_placeholder_found found;
} result;

static result scan(const char *a, size_t alen, const char *b, size_t blen)
{
    pdk_placeholder_scan sc;
    result r = {0};
    pdk_placeholder_scan_start(&sc, the_set(), NULL, NULL);
    r.hit = pdk_placeholder_scan_feed(&sc, a, alen, &r.found) ||
            pdk_placeholder_scan_feed(&sc, b, blen, &r.found) ||
            pdk_placeholder_scan_break(&sc, &r.found);
    if (r.hit && (r.found.id < 0 || r.found.id > 1 || !r.found.form))
        abort();
    return r;
}

static void base64(pdk_buf *out, const char *in, bool url)
{
    int variant = url ? sodium_base64_VARIANT_URLSAFE : sodium_base64_VARIANT_ORIGINAL;
    char b64[256];
    sodium_bin2base64(b64, sizeof(b64), (const unsigned char *)in, strlen(in), variant);
    pdk_buf_puts(out, b64);
}

/* Placeholder PH1 written the way `how` says. */
static void encoded(pdk_buf *out, unsigned how)
{
    const char *ph = PH1;
    switch (how % 9) {
    case 0:
        pdk_buf_puts(out, ph);
        break;
    case 1:
        for (const char *p = ph; *p; p++)
            pdk_buf_printf(out, "%c", *p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        break;
    case 2:
        for (const char *p = ph; *p; p++)
            pdk_buf_printf(out, "%02x", (unsigned char)*p);
        break;
    case 3:
    case 4:
    case 5: {
        char in[128];
        snprintf(in, sizeof(in), "%.*s%s", (int)(how % 9 - 3), "ab", ph);
        base64(out, in, how & 16);
        break;
    }
    case 6:
        for (const char *p = ph; *p; p++)
            pdk_buf_printf(out, "%%%02X", (unsigned char)*p);
        break;
    case 7:
        for (const char *p = ph; *p; p++)
            pdk_buf_printf(out, "\\u%04x", (unsigned char)*p);
        break;
    default:
        pdk_buf_puts(out, "sk-live-");
        pdk_buf_puts(out, ph + 7);
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    const char *text = (const char *)data + 3;
    size_t len = size - 3;
    size_t cut = len ? data[0] % (len + 1) : 0;
    result whole = scan(text, len, "", 0);
    result two = scan(text, cut, text + cut, len - cut);
    if (whole.hit != two.hit ||
        (whole.hit && (whole.found.id != two.found.id || strcmp(whole.found.form, two.found.form) ||
                       whole.found.escapes != two.found.escapes)))
        abort();
    char how[96];
    if (whole.hit)
        pdk_placeholder_found_describe(&whole.found, how, sizeof(how));
    /* a placeholder put in anywhere is found */
    size_t at = len ? data[2] % (len + 1) : 0;
    pdk_buf in = {0};
    pdk_buf_append(&in, text, at);
    pdk_buf_puts(&in, " ");
    encoded(&in, data[1]);
    pdk_buf_puts(&in, " ");
    pdk_buf_append(&in, text + at, len - at);
    result planted = scan(in.data, in.len, "", 0);
    if (!planted.hit)
        abort();
    pdk_buf_free(&in);
    return 0;
}
