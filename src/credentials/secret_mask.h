/* secret_mask.h: real secret values masked in bytes on their way into a sandbox.
 *
 * An upstream may answer with what it was sent: an echo or debug endpoint, an error page
 * quoting the request's fields, a CORS or request-id field. The gateway passes what hosts a
 * credential is bound to answer through a mask set made of every real value it knows
 * (redact.h): each value, and its common encodings (percent-encoded, JSON-escaped "\/",
 * base64 standard and URL-safe at any alignment), is masked wherever a fragment of
 * PDK_MASK_WINDOW bytes of it appears, byte for byte (PDK_MASK_BYTE), so that a body's
 * Content-Length and chunk sizes stay right and a value cut short (a field quoted up to so
 * many bytes) is masked too. A value shorter than PDK_MASK_WINDOW is masked whole only.
 * Values shorter than PDK_MASK_MIN are not masked (they would mask ordinary text).
 *
 * A body is masked as it streams (pdk_mask_stream): its chunked framing (if any) is left as
 * it is and only the content (and a trailer section) is read; a fragment split across two
 * reads or two chunks is found, because the bytes at the end of a read that could begin one
 * are held back until the next read (or the end) says. Nothing is held otherwise: a read
 * that ends in a byte no value contains (a newline, a brace) goes on whole and at once.
 * What stays unmasked: fragments shorter than PDK_MASK_WINDOW (a value returned in such
 * pieces, or shown only in part), encodings other than those above, compressed content.
 */
#ifndef PADDOCK_SECRET_MASK_H
#define PADDOCK_SECRET_MASK_H

#include "util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PDK_MASK_WINDOW 16
#define PDK_MASK_MIN    8
#define PDK_MASK_BYTE   '*'

/* ---- a body's content in its raw bytes ---- */

/* The state of taking a chunked body's framing off, slice by slice (the bytes are the
 * HTTP parser's, already checked strictly: http_message.h). */
typedef struct pdk_body_content {
    uint8_t state;
    uint64_t chunk_left;
} pdk_body_content;

pdk_body_content pdk_body_content_start(bool chunked);
/* One step through raw bytes [*p, end): *p advances; returns how many bytes of content
 * start at *piece (0 for framing). *trailer: those bytes are the trailer section (after the
 * last chunk), not content. */
size_t pdk_body_content_step(pdk_body_content *k, const char **p, const char *end,
                             const char **piece, bool *trailer);

/* What the first bytes of a body hold before the HTTP parser has read them (a request held
 * while a human is asked, gateway_ask.c): data is what came after the head, so far. For a
 * chunked body, the content stepper finds where the last chunk's trailer section ends;
 * else the body is content_length bytes. raw: how many bytes of data are the body's (all
 * of them while it has not ended); content: its content bytes among them (the first
 * content_max appended to *content when content is not NULL); complete: the body ends
 * within data. On bytes the parser accepts, this agrees with it (fuzz_http.c); on others it
 * promises nothing but to stay within data (the parser refuses them later). */
typedef struct pdk_body_prefix {
    size_t raw;
    uint64_t content;
    bool complete;
} pdk_body_prefix;
pdk_body_prefix pdk_body_prefix_scan(bool chunked, uint64_t content_length, const char *data,
                                     size_t len, pdk_buf *content, size_t content_max);

/* ---- the values ---- */

typedef struct pdk_mask_set pdk_mask_set;

pdk_mask_set *pdk_mask_set_new(void);
/* Add a value (len bytes; shorter than PDK_MASK_MIN: ignored) with its encodings; label
 * says what it is in events (a credential's name), never the value. */
void pdk_mask_set_add(pdk_mask_set *set, const char *value, size_t len, const char *label);
/* Nothing to mask. */
bool pdk_mask_set_empty(const pdk_mask_set *set);
/* The label of a value found (its index from pdk_mask_text or pdk_mask_stream). */
const char *pdk_mask_set_label(const pdk_mask_set *set, int label);
/* Wiped and freed; NULL-safe. */
void pdk_mask_set_free(pdk_mask_set *set);

/* Mask a whole text in place (a response head). For each fragment masked, found(arg, offset
 * of its first byte, its label), if found is not NULL. Returns how many were masked. */
size_t pdk_mask_text(const pdk_mask_set *set, char *data, size_t len,
                     void (*found)(void *arg, size_t offset, int label), void *arg);

/* ---- a body, as it streams ---- */

typedef struct pdk_mask_stream {
    const pdk_mask_set *set;
    pdk_body_content content;
    uint64_t hi, lo;             /* the last 16 content bytes, the newest lowest */
    uint64_t seen;               /* content bytes so far */
    size_t pos[PDK_MASK_WINDOW]; /* where the last content bytes are in hold + input */
    unsigned pos_next;
    pdk_buf hold;                  /* raw bytes held back */
    pdk_buf work;                  /* the output, when it is not the input itself */
    int found_body, found_trailer; /* the first label found in each, -1: none yet */
} pdk_mask_stream;

void pdk_mask_stream_init(pdk_mask_stream *s, const pdk_mask_set *set, bool chunked);
/* Raw body bytes, as they came: what may go on now is *out, *out_len (the input itself, or
 * the stream's own buffer, valid until the next call); the rest is held. */
void pdk_mask_stream_feed(pdk_mask_stream *s, const char *data, size_t len, const char **out,
                          size_t *out_len);
/* The body ended: what was held, in *out, *out_len (valid until the next call). */
void pdk_mask_stream_finish(pdk_mask_stream *s, const char **out, size_t *out_len);
/* What it holds, wiped; the stream can be started again. */
void pdk_mask_stream_free(pdk_mask_stream *s);

#endif
