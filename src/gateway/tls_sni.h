/* tls_sni.h: the server name of a TLS ClientHello, read from the first bytes a client
 * sends, without terminating TLS: a passthrough tunnel (tunnelled unread) is checked to be
 * going to the host it was allowed for (a CONNECT to an allowed host carrying a
 * ClientHello for another is domain fronting).
 *
 * A pure function on the caller's bytes: TLS records of content type handshake, whose
 * fragments are put together (a ClientHello may span records), up to
 * PDK_TLS_HELLO_MAX bytes of handshake message.
 */
#ifndef PADDOCK_TLS_SNI_H
#define PADDOCK_TLS_SNI_H

#include <stddef.h>
#include <stdint.h>

#define PDK_TLS_HELLO_MAX (64 * 1024)
#define PDK_TLS_SNI_MAX   255

typedef enum pdk_tls_sni_result {
    PDK_TLS_SNI_NEED_MORE, /* the ClientHello is not complete yet: read more */
    PDK_TLS_SNI_FOUND,     /* out holds the host name (lower case, as sent otherwise) */
    PDK_TLS_SNI_ABSENT,    /* a ClientHello without a server name (an IP literal host) */
    PDK_TLS_SNI_INVALID,   /* not TLS, not a ClientHello, malformed, or over the bound */
} pdk_tls_sni_result;

/* Look at the first len bytes a client sent. out (out_size >= PDK_TLS_SNI_MAX + 1) gets
 * the name for FOUND; a name with bytes outside printable ASCII (or a NUL) is INVALID. */
pdk_tls_sni_result pdk_tls_client_hello_sni(const uint8_t *data, size_t len, char *out,
                                            size_t out_size);

#endif
