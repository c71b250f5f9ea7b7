/* tls_sni.c: see tls_sni.h. RFC 8446 4.1.2 (ClientHello), RFC 6066 3 (server_name). */
#include "tls_sni.h"

#include <stdbool.h>
#include <string.h>

#define RECORD_HANDSHAKE   22
#define HANDSHAKE_HELLO    1
#define EXT_SERVER_NAME    0
#define NAME_TYPE_HOSTNAME 0
#define RECORD_MAX         (16384 + 2048) /* TLSCiphertext bound; plaintext ones are smaller */

typedef struct reader {
    const uint8_t *p;
    size_t left;
    bool bad;
} reader;

static uint32_t take(reader *r, size_t n)
{
    uint32_t v = 0;
    if (r->left < n) {
        r->bad = true;
        r->left = 0;
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        v = v << 8 | r->p[i];
    r->p += n;
    r->left -= n;
    return v;
}

static reader sub(reader *r, size_t n)
{
    reader s = {r->p, n, false};
    if (r->left < n) {
        r->bad = true;
        s.left = 0;
        s.bad = true;
        r->left = 0;
        return s;
    }
    r->p += n;
    r->left -= n;
    return s;
}

/* The ClientHello body (after the 4-byte handshake header). */
static pdk_tls_sni_result parse_hello(reader h, char *out, size_t out_size)
{
    take(&h, 2);  /* legacy_version */
    take(&h, 32); /* random */
    reader session = sub(&h, take(&h, 1));
    reader suites = sub(&h, take(&h, 2));
    reader compression = sub(&h, take(&h, 1));
    (void)session;
    (void)compression;
    if (h.bad || suites.left == 0 || suites.left % 2)
        return PDK_TLS_SNI_INVALID;
    if (h.left == 0)
        return PDK_TLS_SNI_ABSENT; /* no extensions at all */
    reader exts = sub(&h, take(&h, 2));
    if (h.bad || h.left != 0)
        return PDK_TLS_SNI_INVALID;
    bool seen = false;
    pdk_tls_sni_result result = PDK_TLS_SNI_ABSENT;
    while (exts.left > 0) {
        uint32_t type = take(&exts, 2);
        reader ext = sub(&exts, take(&exts, 2));
        if (exts.bad)
            return PDK_TLS_SNI_INVALID;
        if (type != EXT_SERVER_NAME)
            continue;
        if (seen)
            return PDK_TLS_SNI_INVALID; /* one extension of a type (RFC 8446 4.2) */
        seen = true;
        reader list = sub(&ext, take(&ext, 2));
        if (ext.bad || ext.left != 0 || list.left == 0)
            return PDK_TLS_SNI_INVALID;
        while (list.left > 0) {
            uint32_t name_type = take(&list, 1);
            reader name = sub(&list, take(&list, 2));
            if (list.bad || name.left == 0)
                return PDK_TLS_SNI_INVALID;
            if (name_type != NAME_TYPE_HOSTNAME)
                continue;
            if (result == PDK_TLS_SNI_FOUND || name.left > PDK_TLS_SNI_MAX || name.left >= out_size)
                return PDK_TLS_SNI_INVALID; /* one host_name (RFC 6066 3) */
            for (size_t i = 0; i < name.left; i++) {
                uint8_t c = name.p[i];
                if (c <= 0x20 || c >= 0x7f)
                    return PDK_TLS_SNI_INVALID;
                out[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
            }
            out[name.left] = '\0';
            result = PDK_TLS_SNI_FOUND;
        }
    }
    return result;
}

pdk_tls_sni_result pdk_tls_client_hello_sni(const uint8_t *data, size_t len, char *out,
                                            size_t out_size)
{
    if (out_size > 0)
        out[0] = '\0';
    /* Put the handshake fragments of the records together until the ClientHello is whole. */
    uint8_t hello[PDK_TLS_HELLO_MAX + 4];
    size_t have = 0, want = 0;
    reader r = {data, len, false};
    while (r.left > 0) {
        if (r.left < 5)
            return r.p[0] == RECORD_HANDSHAKE ? PDK_TLS_SNI_NEED_MORE : PDK_TLS_SNI_INVALID;
        uint32_t type = take(&r, 1);
        uint32_t major = take(&r, 1);
        take(&r, 1); /* minor: 1..4 seen in the wild */
        uint32_t length = take(&r, 2);
        if (type != RECORD_HANDSHAKE || major != 3 || length == 0 || length > RECORD_MAX)
            return PDK_TLS_SNI_INVALID;
        if (r.left < length)
            return PDK_TLS_SNI_NEED_MORE;
        reader frag = sub(&r, length);
        size_t n = frag.left;
        if (have + n > sizeof(hello))
            return PDK_TLS_SNI_INVALID;
        memcpy(hello + have, frag.p, n);
        have += n;
        if (have >= 4 && want == 0) {
            if (hello[0] != HANDSHAKE_HELLO)
                return PDK_TLS_SNI_INVALID;
            want = 4 + ((size_t)hello[1] << 16 | (size_t)hello[2] << 8 | hello[3]);
            if (want > sizeof(hello))
                return PDK_TLS_SNI_INVALID;
        }
        if (want && have >= want) {
            if (have > want)
                return PDK_TLS_SNI_INVALID; /* another message in the same flight first */
            reader h = {hello + 4, want - 4, false};
            return parse_hello(h, out, out_size);
        }
    }
    return len == 0 || want == 0 || have < want ? PDK_TLS_SNI_NEED_MORE : PDK_TLS_SNI_INVALID;
}
