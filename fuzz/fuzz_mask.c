/* fuzz_mask.c: libFuzzer target for masking real values in what goes into a sandbox
 * (secret_mask.c): a body's chunked framing taken off, windows found across reads and
 * chunks, what is held back at the end of a read.
 *
 * The first byte: plain or chunked, and how the body is cut into reads; the second: where a
 * value is put into the content (or none). The rest is the content, framed into chunks of
 * sizes taken from it. Checked: the output is as long as the input, its framing unchanged,
 * each content byte either the same or the mask byte; no window of a value is left; how the
 * body is cut into reads changes nothing; a plain body comes out as pdk_mask_text would make
 * it. Built with -fsanitize=fuzzer (fuzz/meson.build, -Dfuzz=true) and, without libFuzzer,
 * as fuzz-mask-replay.
 */
#include "secret_mask.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define VALUE "u-9Zk3Qm7Rt2Vx8Lp4Wn6Hs1Jd5Fg0Bc"
#define SHORT "k3y-56+/xy"

static const pdk_mask_set *the_set(void)
{
    static pdk_mask_set *set;
    if (!set) {
        set = pdk_mask_set_new();
        pdk_mask_set_add(set, VALUE, strlen(VALUE), "long");
        pdk_mask_set_add(set, SHORT, strlen(SHORT), "short");
    }
    return set;
}

/* The body fed in reads of `step` bytes (step 0: sizes from seed). */
static void stream(const char *raw, size_t len, bool chunked, size_t step, const uint8_t *seed,
                   size_t seeds, pdk_buf *out)
{
    pdk_mask_stream s;
    pdk_mask_stream_init(&s, the_set(), chunked);
    size_t k = 0;
    for (size_t i = 0; i < len;) {
        size_t n = step ? step : (size_t)(seeds ? seed[k++ % seeds] % 17 : 1) + 1;
        if (n > len - i)
            n = len - i;
        const char *o;
        size_t on;
        pdk_mask_stream_feed(&s, raw + i, n, &o, &on);
        pdk_buf_append(out, o, on);
        i += n;
    }
    const char *o;
    size_t on;
    pdk_mask_stream_finish(&s, &o, &on);
    pdk_buf_append(out, o, on);
    pdk_mask_stream_free(&s);
}

/* The content of a raw body (and its trailer), from the same stepper. */
static void content_of(const char *raw, size_t len, bool chunked, pdk_buf *content, pdk_buf *frame)
{
    pdk_body_content k = pdk_body_content_start(chunked);
    const char *p = raw, *end = raw + len;
    while (p < end) {
        const char *before = p, *piece = NULL;
        bool trailer = false;
        size_t n = pdk_body_content_step(&k, &p, end, &piece, &trailer);
        if (n)
            pdk_buf_append(content, piece, n);
        else
            pdk_buf_append(frame, before, (size_t)(p - before));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    bool chunked = data[0] & 1;
    size_t step = (data[0] >> 1) % 8; /* 0: varied */
    const char *text = (const char *)data + 2;
    size_t len = size - 2;
    pdk_buf content = {0};
    size_t at = data[1] < 0xf0 ? data[1] % (len + 1) : len + 1;
    pdk_buf_append(&content, text, at <= len ? at : len);
    if (at <= len) {
        pdk_buf_puts(&content, (data[1] & 1) ? VALUE : SHORT);
        pdk_buf_append(&content, text + at, len - at);
    }
    /* the raw body */
    pdk_buf raw = {0};
    if (chunked) {
        for (size_t i = 0, k = 0; i < content.len; k++) {
            size_t n = (size_t)(len ? (unsigned char)text[k % len] % 23 : 5) + 1;
            if (n > content.len - i)
                n = content.len - i;
            pdk_buf_printf(&raw, "%zx%s\r\n", n, k % 3 ? "" : ";x=1");
            pdk_buf_append(&raw, content.data + i, n);
            pdk_buf_puts(&raw, "\r\n");
            i += n;
        }
        pdk_buf_puts(&raw, "0\r\nX-T: 1\r\n\r\n");
    } else {
        pdk_buf_append(&raw, content.data ? content.data : "", content.len);
    }
    pdk_buf a = {0}, b = {0};
    stream(raw.data ? raw.data : "", raw.len, chunked, step, data, size, &a);
    stream(raw.data ? raw.data : "", raw.len, chunked, 1, NULL, 0, &b);
    if (a.len != raw.len || b.len != raw.len || (raw.len && memcmp(a.data, b.data, a.len)))
        abort();
    pdk_buf in_content = {0}, in_frame = {0}, out_content = {0}, out_frame = {0};
    content_of(raw.data ? raw.data : "", raw.len, chunked, &in_content, &in_frame);
    content_of(a.data ? a.data : "", a.len, chunked, &out_content, &out_frame);
    if (in_content.len != out_content.len || in_frame.len != out_frame.len ||
        (in_frame.len && memcmp(in_frame.data, out_frame.data, in_frame.len)))
        abort();
    for (size_t i = 0; i < in_content.len; i++)
        if (out_content.data[i] != in_content.data[i] && out_content.data[i] != PDK_MASK_BYTE)
            abort();
    for (size_t i = 0; i + PDK_MASK_WINDOW <= strlen(VALUE); i++)
        if (out_content.len &&
            memmem(out_content.data, out_content.len, &VALUE[i], PDK_MASK_WINDOW))
            abort();
    if (out_content.len && memmem(out_content.data, out_content.len, SHORT, strlen(SHORT)))
        abort();
    if (!chunked) {
        char *copy = xmalloc(content.len + 1);
        memcpy(copy, content.data ? content.data : "", content.len);
        pdk_mask_text(the_set(), copy, content.len, NULL, NULL);
        if (content.len && memcmp(copy, a.data, content.len))
            abort();
        free(copy);
    }
    pdk_buf_free(&content);
    pdk_buf_free(&raw);
    pdk_buf_free(&a);
    pdk_buf_free(&b);
    pdk_buf_free(&in_content);
    pdk_buf_free(&in_frame);
    pdk_buf_free(&out_content);
    pdk_buf_free(&out_frame);
    return 0;
}
