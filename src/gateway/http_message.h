/* http_message.h: HTTP/1.1 message heads and body framing for the egress gateway.
 *
 * The gateway sees three kinds of client connections (an explicit proxy: CONNECT and
 * absolute-form requests; transparently captured plain connections and TLS-intercepted
 * connections: origin-form requests with a Host header) and the upstream connections whose
 * responses come back. For every message it needs the head (method, destination, fields),
 * and exactly where the body, and so the message, ends: per-request policy, keep-alive and
 * pipelining depend on it, and so does immunity to request smuggling, which is nothing but
 * two parsers disagreeing on where a message ends.
 *
 * A pdk_http_parser reads one direction of one connection. The caller feeds it bytes as they
 * arrive, split anywhere (one byte at a time works), and gets one event per call:
 *
 *   NEED_MORE         every byte given was used; call again when more arrive
 *   HEAD              a head is complete: result.head
 *   BODY              result.body / body_len: body bytes, a slice of the caller's buffer
 *   MESSAGE_COMPLETE  the message ended (keep-alive: the next one may follow)
 *   END               (pdk_http_parse_eof) the stream ended cleanly between messages
 *   ERROR             result.status is what the gateway should answer, result.reason why
 *
 * result.consumed bytes were used; the caller drops them and calls again with the rest (the
 * same buffer, advanced). Bodies are never copied or buffered. The events do not depend on
 * how the input is split: an error inside a body comes after a BODY event for the bytes
 * before the failing one, as it would had those bytes come in an earlier read.
 *
 * Body bytes are the raw wire bytes. For a chunked body the slices cover the chunked
 * framing itself (chunk-size lines with their extensions, the data, the CRLFs, the last
 * chunk and the trailer section), from the byte after the head to the last byte of the
 * message: the gateway forwards them verbatim and never re-encodes. That is safe because
 * this module has already checked every byte of that framing, strictly (below): what is
 * forwarded is unambiguous to any upstream parser. Content-Length bodies are the N bytes;
 * bytes past them belong to the next message, never to this body.
 *
 * Strictness. Two parsers read every byte: a strict scanner of this module, which also
 * enforces the limits and collects the head, and libhttp-parser 2.9 (Debian's build, which
 * is compiled non-strict: it accepts bare LF, CR without LF, obs-fold, "HTTP/0.9", spaces in
 * field names...), which stays the reference for framing. Either one refusing a byte is an
 * error; the two disagreeing on where a head or a message ends is an error too ("parsers
 * disagree on the message framing", never expected). What is refused, with the status a
 * request gets (a response parser answers 502 Bad Gateway for every error):
 *   400  bare LF or CR without LF anywhere in a head, a chunk line or a trailer section
 *   400  obs-fold (a field line starting with SP or HTAB)
 *   400  whitespace between a field name and its colon; a name that is not a token
 *   400  a control character (NUL, CR, LF, DEL, ...; HTAB allowed) in a field value
 *   400  Content-Length with Transfer-Encoding; several Content-Length fields (even equal);
 *        a Content-Length that is not 1*DIGIT (a list "5, 5" included) or above 2^63-1
 *   400  Transfer-Encoding whose last coding is not chunked (the body length cannot be
 *        known, RFC 9112 6.3), chunked more than once, or any Transfer-Encoding in HTTP/1.0
 *   501  Transfer-Encoding with codings before chunked ("gzip, chunked"): well-formed, but
 *        only chunked is implemented (RFC 9112 6.1: 501 for a coding not understood)
 *   400  any other Transfer-Encoding than one field "chunked" (any case, SP around it):
 *        libhttp-parser reads "chunked," and "chunked<HTAB>" as not chunked
 *   400  a field name that begins with "Transfer-Encoding" (Transfer-Encodingx):
 *        libhttp-parser 2.9.4 takes it for Transfer-Encoding and drops chunked
 *   400  an invalid chunk size, chunk extension (RFC 9112 7.1.1 grammar) or chunk line
 *        over 4 KiB; chunk data not followed by CRLF
 *   400  a malformed request line (one SP between its parts, a request-target of visible
 *        ASCII), Host missing, repeated or invalid, a target of the wrong form for the method
 *   501  a method libhttp-parser does not know (methods are case-sensitive: "get" is one)
 *   505  HTTP/0.9 (no version) and any version but HTTP/1.0 and HTTP/1.1
 *   414  a request-target longer than max_target_bytes
 *   431  a head (or trailer section) longer than max_head_bytes, more fields than
 *        max_headers
 *   417  an Expect other than 100-continue
 *   400  a Connection field that is not a token list or that names Host, Content-Length or
 *        Transfer-Encoding (a proxy would drop them and change the framing upstream)
 *
 * Destination of a request (pdk_http_head.scheme/host/port/path/query):
 *   absolute-form  http://host:port/path?query (https:// too): from the target. The Host
 *                  field is then replaced by the target's authority (added when missing):
 *                  RFC 9112 3.2.2, a proxy MUST ignore the received Host and use the
 *                  target's. A Host field is still checked (one, well-formed) first.
 *   authority-form host:port, [v6]:port; CONNECT only, and CONNECT only takes it. No scheme
 *                  and no path; a Host field is checked but not used.
 *   origin-form    /path?query with the Host field, required for HTTP/1.0 too (the gateway
 *                  judges names, and a request without one has no destination). Scheme
 *                  http, or https on a parser made with config.tls.
 *   asterisk-form  "*", OPTIONS only; host from the Host field.
 * Userinfo (user@host) is refused in the target and in Host, as is a fragment. Hosts are
 * lowercased, IPv6 literals checked and stripped of their brackets; numeric notations are
 * left to net_address.h. The port is the explicit one (1-65535), else 80 or 443.
 *
 * After a message whose head has `upgrade` (CONNECT, an Upgrade request, a 101 response, a
 * 2xx answer to CONNECT), the bytes that follow are another protocol: the parser stops and
 * parses nothing more (an ERROR event, consuming nothing, if it is given bytes) until
 * pdk_http_parser_resume() says the upgrade was refused. After a message that is not
 * keep-alive, it refuses further bytes the same way, for good.
 */
#ifndef PADDOCK_HTTP_MESSAGE_H
#define PADDOCK_HTTP_MESSAGE_H

#include "error.h"
#include "util.h"

#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum pdk_http_kind {
    PDK_HTTP_REQUEST,  /* a client's requests */
    PDK_HTTP_RESPONSE, /* an upstream's responses */
} pdk_http_kind;

typedef struct pdk_http_config {
    /* A head (start line, fields, the empty line, and blank lines before it), and a trailer
     * section. 0: 64 KiB. At most 80 KiB - 1, libhttp-parser's own bound. */
    size_t max_head_bytes;
    /* Fields in a head, and in a trailer section. 0: 100. */
    size_t max_headers;
    /* The request-target. 0: 8 KiB. */
    size_t max_target_bytes;
    /* The connection is TLS (intercepted): origin-form requests are https, port 443. */
    bool tls;
} pdk_http_config;

typedef enum pdk_http_event {
    PDK_HTTP_NEED_MORE,
    PDK_HTTP_HEAD,
    PDK_HTTP_BODY,
    PDK_HTTP_MESSAGE_COMPLETE,
    PDK_HTTP_END,
    PDK_HTTP_ERROR,
} pdk_http_event;

typedef enum pdk_http_framing {
    PDK_HTTP_FRAMING_NONE,           /* no body follows the head */
    PDK_HTTP_FRAMING_CONTENT_LENGTH, /* content_length bytes (0 included) */
    PDK_HTTP_FRAMING_CHUNKED,        /* Transfer-Encoding: chunked */
    PDK_HTTP_FRAMING_UNTIL_CLOSE,    /* responses: the body ends when the connection does */
} pdk_http_framing;

typedef enum pdk_http_target_form {
    PDK_HTTP_TARGET_ORIGIN,    /* /path?query */
    PDK_HTTP_TARGET_ABSOLUTE,  /* http://host:port/path?query */
    PDK_HTTP_TARGET_AUTHORITY, /* host:port (CONNECT) */
    PDK_HTTP_TARGET_ASTERISK,  /* * (OPTIONS) */
} pdk_http_target_form;

typedef struct pdk_http_header {
    char *name;      /* as sent (case kept); a token */
    char *value;     /* without surrounding whitespace; no CTL but HTAB */
    bool hop_by_hop; /* not forwarded by pdk_http_head_serialize() */
} pdk_http_header;

/* A parsed head. Strings are owned by the head (pdk_http_head_free). */
typedef struct pdk_http_head {
    bool request;
    int version_minor; /* HTTP/1.<version_minor>: 0 or 1 */

    /* Requests. */
    char *method;               /* as sent, e.g. "GET" (case-sensitive, exact) */
    enum http_method method_id; /* the same, as libhttp-parser's enum */
    char *target;               /* the request-target as sent */
    pdk_http_target_form target_form;
    char *scheme;         /* "http" or "https"; NULL in authority-form */
    char *host;           /* lowercase; an IPv6 literal without brackets */
    uint16_t port;        /* explicit, or the scheme's (80/443) */
    char *path;           /* "/..." (without the query); "*"; NULL in authority-form */
    char *query;          /* after '?', NULL when there is no '?' */
    bool expect_continue; /* Expect: 100-continue (HTTP/1.1 only, RFC 9110 10.1.1) */

    /* Responses. */
    int status;   /* 100-599 */
    char *reason; /* the reason phrase, maybe "" */

    /* Both. Fields in the order sent; lookups are case-insensitive. Trailer fields are not
     * collected: they travel inside the body slices. */
    pdk_http_header *headers;
    size_t header_count;
    size_t header_capacity;
    pdk_http_framing framing;
    uint64_t content_length; /* framing CONTENT_LENGTH */
    /* Another message may follow on the connection: HTTP/1.1 without "Connection: close",
     * HTTP/1.0 with "Connection: keep-alive" (Proxy-Connection counts too, as
     * libhttp-parser has it); never after an until-close body. Always true on a 1xx. */
    bool keep_alive;
    /* The connection leaves HTTP after this message: a request asks for it (CONNECT, or an
     * HTTP/1.1 Upgrade field with a Connection "upgrade" option), a response does it (101,
     * or 2xx to CONNECT). */
    bool upgrade;
    char *upgrade_protocol; /* the Upgrade field (e.g. "websocket") of such a message; NULL
                             * for CONNECT */
} pdk_http_head;

typedef struct pdk_http_result {
    size_t consumed; /* bytes of data used by this call (0 for ERROR) */
    /* HEAD, BODY, MESSAGE_COMPLETE: the head of the current message, owned by the parser
     * until the next HEAD event (or pdk_http_parser_take_head()); NULL once taken. */
    pdk_http_head *head;
    const char *body; /* BODY: data, and body_len == consumed */
    size_t body_len;
    int status; /* ERROR: 400, 414, 417, 431, 501, 505 for requests; 502 for responses */
    const char
        *reason; /* ERROR: one static line, e.g. "obs-fold (field line starting with whitespace)" */
} pdk_http_result;

typedef struct pdk_http_parser pdk_http_parser;

/* config may be NULL (defaults). Never fails. */
pdk_http_parser *pdk_http_parser_new(pdk_http_kind kind, const pdk_http_config *config);
/* NULL-safe. Frees the current head unless it was taken. */
void pdk_http_parser_free(pdk_http_parser *parser);

/* Feed len bytes of data (len may be 0). See the top of this file for the events. After an
 * ERROR every call returns the same ERROR, except in the stopped states (upgrade, no
 * keep-alive) where bytes are refused without ending the parser. */
pdk_http_event pdk_http_parse(pdk_http_parser *parser, const char *data, size_t len,
                              pdk_http_result *out);
/* The stream ended (EOF from the peer). Returns MESSAGE_COMPLETE for an until-close body
 * (call again: END), END when nothing was cut short (between messages, or stopped), ERROR
 * for a message cut in the middle. */
pdk_http_event pdk_http_parse_eof(pdk_http_parser *parser, pdk_http_result *out);

/* Response parsers: the method of the request the next response answers. It decides the
 * framing (HEAD: no body; CONNECT: 2xx is a tunnel) and lasts until a final (non-1xx)
 * response completes, so 100 Continue and its final response share it. A response head that
 * arrives with no method set is an ERROR (502: a response to no request). No-op on request
 * parsers. */
void pdk_http_parser_set_request_method(pdk_http_parser *parser, enum http_method method);

/* The upgrade the last message asked for did not happen (CONNECT refused, no 101): parse
 * HTTP again. Returns 0, or -1 when the parser is not stopped by an upgrade (or the message
 * was not keep-alive). */
int pdk_http_parser_resume(pdk_http_parser *parser);

/* The head of the current (last complete) message, or NULL. */
pdk_http_head *pdk_http_parser_head(pdk_http_parser *parser);
/* The same, handed to the caller (free with pdk_http_head_free); the parser forgets it. */
pdk_http_head *pdk_http_parser_take_head(pdk_http_parser *parser);

/* NULL-safe. */
void pdk_http_head_free(pdk_http_head *head);

/* The value of the first field called name (case-insensitive), or NULL. */
const char *pdk_http_head_get(const pdk_http_head *head, const char *name);
/* Set field name to value: the first field of that name (case-insensitive) takes the new
 * name and value, later ones are removed; appended when there is none. A field set here is
 * end-to-end: it is serialised even if the sender's Connection field named it (a client
 * cannot strip a header the gateway injects). Returns -1 (EINVAL) when name is not a token
 * or value has a control character (HTAB allowed) or surrounding whitespace. */
int pdk_http_head_set(pdk_http_head *head, const char *name, const char *value, pdk_error *err);
/* Remove every field called name (case-insensitive); returns how many. */
size_t pdk_http_head_remove(pdk_http_head *head, const char *name);

/* Append the head as it is forwarded: a request in origin-form ("*" for OPTIONS *,
 * host:port for CONNECT) as HTTP/1.1, a response as HTTP/1.1, then the fields in order
 * without the hop-by-hop ones: Connection and the fields it names, Keep-Alive,
 * Proxy-Connection, Proxy-Authorization, Proxy-Authenticate, TE, Trailer, and Upgrade
 * (except on an upgrading message, which keeps Upgrade and gets "Connection: upgrade" unless
 * the caller set a Connection field). Content-Length and Transfer-Encoding stay: the body
 * is forwarded as it came. Ends with the empty line. */
void pdk_http_head_serialize(const pdk_http_head *head, pdk_buf *out);

/* Whether a request body's first bytes read as an HTTP request line, which an upstream that
 * does not read this body (an endpoint ignoring Content-Length) would take for its next
 * request: after any CR and LF, a token, blanks (SP or HTAB), a target starting with "/",
 * "*" or "http", and a line that ends in blanks and "HTTP/..." (or, HTTP/0.9, a GET with
 * nothing after its target). 1: it does; 0: it does not; -1: not known yet (the line is
 * not complete in these len bytes and complete is false: give more; a complete body ends
 * its line). Decides as soon as it
 * can (a body starting with "{" at its first byte); a line longer than
 * PDK_HTTP_REQUEST_LINE_SNIFF_MAX is not a request line. */
#define PDK_HTTP_REQUEST_LINE_SNIFF_MAX (64 * 1024)
int pdk_http_looks_like_request_line(const char *data, size_t len, bool complete);

#endif
