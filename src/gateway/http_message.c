/* http_message.c: HTTP/1.1 heads and body framing (see http_message.h).
 *
 * Every byte goes through two parsers, in this order:
 *
 *   1. scan(): this module's scanner, a byte state machine with the strict grammar of
 *      RFC 9112 (request and status lines, field lines, chunk lines with extensions,
 *      trailer sections), the limits, and the collection of the head's parts. It stops
 *      before the last LF of a head (so that the head can be judged as a whole before
 *      libhttp-parser sees its end) and after the last byte of a message.
 *   2. libhttp-parser, given exactly the bytes the scanner accepted. It is paused in
 *      on_headers_complete and on_message_complete, so it never runs past the scanner.
 *
 * An error of either one ends the parser; the first failing byte decides which one reports
 * (libhttp-parser only ever sees bytes before the scanner's failing byte), so the event
 * sequence does not depend on how the input is split. Where both accept, they must agree:
 * libhttp-parser must pause at the head end and at the message end exactly where the
 * scanner stops, with the same method, version, status and framing. A disagreement would be
 * a smuggling vector, so it is an error, not a warning.
 *
 * libhttp-parser quirks this relies on (2.9.4, Debian's non-strict build):
 *   - paused in on_headers_complete, it returns without consuming the head's last LF; fed
 *     that LF again, it carries on (and counts the LF twice toward HTTP_MAX_HEADER_SIZE);
 *   - returning 1 from on_headers_complete means "no body" (HEAD, 1xx, 204, 304: it would
 *     otherwise read a Content-Length body after a 304), 2 means "no body, and the
 *     connection leaves HTTP" (101, 2xx to CONNECT);
 *   - execute() with len 0 means EOF to it, so it is only called with bytes (or at EOF).
 */
#include "http_message.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_MAX_HEAD_BYTES   (64 * 1024)
#define DEFAULT_MAX_HEADERS      100
#define DEFAULT_MAX_TARGET_BYTES (8 * 1024)
/* libhttp-parser's HTTP_MAX_HEADER_SIZE (80 KiB) less the LF it counts twice. */
#define LIBRARY_MAX_HEAD_BYTES (80 * 1024 - 1)
/* A chunk-size line with its extensions. Extensions carry nothing the gateway needs; the
 * bound stops a peer from streaming an endless one. */
#define MAX_CHUNK_LINE_BYTES 4096
/* Longer than any method libhttp-parser knows (UNSUBSCRIBE, 11). */
#define MAX_METHOD_BYTES 32
/* Content-Length and chunk sizes: what fits an int64 (and libhttp-parser's checks). */
#define MAX_LENGTH ((uint64_t)INT64_MAX)

#define DISAGREE_REASON "parsers disagree on the message framing"

enum phase {
    PH_HEAD,     /* reading a head (or blank lines before one) */
    PH_BODY,     /* reading a body */
    PH_COMPLETE, /* the message ended; the next call reports MESSAGE_COMPLETE */
    PH_UPGRADED, /* stopped: the connection left HTTP (unless resumed) */
    PH_CLOSED,   /* stopped: the last message was not keep-alive */
    PH_ENDED,    /* EOF reported */
    PH_ERROR,
};

/* Scanner states. Everything up to LX_END_LF is a head (or trailer section) state: its
 * bytes count toward max_head_bytes. LX_CHUNK_SIZE_FIRST..LX_CHUNK_LINE_LF are chunk-size
 * line states, bounded by MAX_CHUNK_LINE_BYTES. */
enum lex {
    LX_START,      /* before a start line: CRLF may come first */
    LX_START_LF,   /* CR seen there */
    LX_METHOD,     /* request: method token */
    LX_TARGET_1,   /* first byte of the request-target */
    LX_TARGET,     /* request-target */
    LX_VERSION,    /* request: "HTTP/d.d", then CR */
    LX_RVERSION,   /* response: "HTTP/d.d", then SP */
    LX_STATUS,     /* response: three digits */
    LX_STATUS_END, /* SP or CR after them */
    LX_REASON,     /* reason phrase */
    LX_LINE_LF,    /* CR at the end of the start line */
    LX_FIELD_1,    /* start of a field line, or of the empty line */
    LX_NAME,       /* field name */
    LX_VALUE,      /* field value */
    LX_VALUE_LF,   /* CR at its end */
    LX_END_LF,     /* CR of the empty line */
    LX_CHUNK_SIZE_FIRST,
    LX_CHUNK_SIZE,
    LX_CHUNK_BWS, /* whitespace after the size or an extension value */
    LX_EXT_NAME_FIRST,
    LX_EXT_NAME,
    LX_EXT_NAME_BWS,
    LX_EXT_VALUE_FIRST,
    LX_EXT_TOKEN,
    LX_EXT_QUOTED,
    LX_EXT_QUOTED_PAIR,
    LX_CHUNK_LINE_LF,
    LX_CHUNK_DATA,
    LX_CHUNK_DATA_CR,
    LX_CHUNK_DATA_LF,
    LX_BODY_LENGTH,
    LX_BODY_EOF,
};

enum stop {
    STOP_NONE,        /* every byte accepted, more needed */
    STOP_HEAD_END,    /* data[n] is the last LF of a head (not accepted yet) */
    STOP_MESSAGE_END, /* the message ended with data[n - 1] */
    STOP_ERROR,       /* data[n] is refused: scan_status, scan_reason */
};

struct pdk_http_parser {
    http_parser library;
    pdk_http_kind kind;
    size_t max_head_bytes;
    size_t max_headers;
    size_t max_target_bytes;
    bool tls;

    enum phase phase;

    /* Scanner. */
    enum lex lex;
    enum stop stop;
    int scan_status;
    const char *scan_reason;
    unsigned index;       /* position in "HTTP/d.d", digits of the status */
    size_t section_bytes; /* of the head or trailer section */
    size_t section_fields;
    size_t target_bytes;
    size_t chunk_line_bytes;
    uint64_t chunk_size;
    uint64_t remaining; /* of a Content-Length body or a chunk's data */
    bool in_trailers;
    bool seen_content_length;
    bool seen_transfer_encoding;
    bool transfer_encoding_tab; /* an HTAB in a Transfer-Encoding value, before trimming */
    int version_major;
    int version_minor;
    int status;
    /* What the scanner collects of the head being read. */
    pdk_buf method;
    pdk_buf target;
    pdk_buf reason;
    pdk_buf name;
    pdk_buf value;
    pdk_http_head *building;

    /* The last complete head (NULL when taken), and its framing, kept apart so that a
     * taken head does not take the parser's state with it. */
    pdk_http_head *head;
    pdk_http_framing framing;
    uint64_t content_length;
    bool keep_alive;
    bool upgrade;
    bool interim; /* a 1xx response other than 101 */

    /* libhttp-parser callbacks. */
    int skip_body;         /* what on_headers_complete returns */
    bool feeding_head_end; /* the head's last LF is being fed */
    bool library_complete; /* on_message_complete ran */
    bool library_disagrees;

    int request_method; /* responses: the request's method, -1 when none */

    int error_status;
    const char *error_reason;
};

/* ---- Character classes (RFC 9110 5.6.2, 5.5) ---- */

static bool is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool is_vchar(unsigned char c)
{
    return c >= 0x21 && c <= 0x7e;
}

/* field-vchar / SP / HTAB: what a field value or a reason phrase may hold (obs-text
 * included: bytes >= 0x80 are legal, if opaque). */
static bool is_field_char(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static bool is_ows(unsigned char c)
{
    return c == ' ' || c == '\t';
}

static char ascii_lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* Case-insensitive ASCII equality of s[0..len) and the NUL-terminated lowercase word. */
static bool ieq_n(const char *s, size_t len, const char *word)
{
    size_t i = 0;
    for (; i < len; i++)
        if (word[i] == '\0' || ascii_lower(s[i]) != word[i])
            return false;
    return word[i] == '\0';
}

static bool ieq(const char *s, const char *word)
{
    return ieq_n(s, strlen(s), word);
}

/* Case-insensitive ASCII equality of two byte strings of length len. */
static bool ieq_mem(const char *a, const char *b, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (ascii_lower(a[i]) != ascii_lower(b[i]))
            return false;
    return true;
}

static bool ieq_both(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (ascii_lower(*a) != ascii_lower(*b))
            return false;
    return *a == *b;
}

static char *lowercase_dup(const char *s, size_t len)
{
    char *out = xstrndup(s, len);
    for (size_t i = 0; i < len; i++)
        out[i] = ascii_lower(out[i]);
    return out;
}

/* The next element of a comma-separated list (RFC 9110 5.6.1) at *cursor, without OWS;
 * empty elements are skipped. Returns false at the end. */
static bool next_element(const char **cursor, const char **start, size_t *len)
{
    const char *s = *cursor;
    for (;;) {
        while (is_ows((unsigned char)*s) || *s == ',')
            s++;
        if (*s == '\0') {
            *cursor = s;
            return false;
        }
        const char *begin = s;
        while (*s && *s != ',')
            s++;
        const char *end = s;
        while (end > begin && is_ows((unsigned char)end[-1]))
            end--;
        *cursor = s;
        *start = begin;
        *len = (size_t)(end - begin);
        return true;
    }
}

static bool all_tchar(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_tchar((unsigned char)s[i]))
            return false;
    return true;
}

/* ---- Heads ---- */

static void head_push(pdk_http_head *h, const char *name, size_t name_len, const char *value,
                      size_t value_len)
{
    if (h->header_count == h->header_capacity) {
        h->header_capacity = h->header_capacity ? 2 * h->header_capacity : 16;
        h->headers = xrealloc(h->headers, h->header_capacity * sizeof(*h->headers));
    }
    pdk_http_header *f = &h->headers[h->header_count++];
    f->name = xstrndup(name, name_len);
    f->value = xstrndup(value, value_len);
    f->hop_by_hop = false;
}

void pdk_http_head_free(pdk_http_head *head)
{
    if (!head)
        return;
    for (size_t i = 0; i < head->header_count; i++) {
        free(head->headers[i].name);
        free(head->headers[i].value);
    }
    free(head->headers);
    free(head->method);
    free(head->target);
    free(head->scheme);
    free(head->host);
    free(head->path);
    free(head->query);
    free(head->reason);
    free(head->upgrade_protocol);
    free(head);
}

const char *pdk_http_head_get(const pdk_http_head *head, const char *name)
{
    for (size_t i = 0; i < head->header_count; i++)
        if (ieq_both(head->headers[i].name, name))
            return head->headers[i].value;
    return NULL;
}

size_t pdk_http_head_remove(pdk_http_head *head, const char *name)
{
    size_t kept = 0;
    size_t removed = 0;
    for (size_t i = 0; i < head->header_count; i++) {
        pdk_http_header *f = &head->headers[i];
        if (ieq_both(f->name, name)) {
            free(f->name);
            free(f->value);
            removed++;
        } else {
            head->headers[kept++] = *f;
        }
    }
    head->header_count = kept;
    return removed;
}

int pdk_http_head_set(pdk_http_head *head, const char *name, const char *value, pdk_error *err)
{
    size_t name_len = strlen(name);
    size_t value_len = strlen(value);
    if (!all_tchar(name, name_len))
        return pdk_error_set(err, EINVAL, "header name \"%s\" is not a token", name);
    for (size_t i = 0; i < value_len; i++)
        if (!is_field_char((unsigned char)value[i]))
            return pdk_error_set(
                err, EINVAL, "value of header %s has a control character (at byte %zu)", name, i);
    if (value_len &&
        (is_ows((unsigned char)value[0]) || is_ows((unsigned char)value[value_len - 1])))
        return pdk_error_set(err, EINVAL, "value of header %s has surrounding whitespace", name);

    for (size_t i = 0; i < head->header_count; i++) {
        pdk_http_header *f = &head->headers[i];
        if (!ieq_both(f->name, name))
            continue;
        char *new_name = xstrdup(name);
        char *new_value = xstrdup(value);
        /* Later fields of the name go first: removing by name would take this one too. */
        for (size_t j = head->header_count; j-- > i + 1;) {
            if (ieq_both(head->headers[j].name, name)) {
                free(head->headers[j].name);
                free(head->headers[j].value);
                memmove(&head->headers[j], &head->headers[j + 1],
                        (head->header_count - j - 1) * sizeof(*head->headers));
                head->header_count--;
            }
        }
        free(f->name);
        free(f->value);
        f->name = new_name;
        f->value = new_value;
        f->hop_by_hop = false;
        return 0;
    }
    head_push(head, name, name_len, value, value_len);
    return 0;
}

/* ---- Destinations ---- */

enum authority_error {
    AUTHORITY_OK,
    AUTHORITY_USERINFO,
    AUTHORITY_BAD_HOST,
    AUTHORITY_BAD_PORT,
    AUTHORITY_NO_PORT,
};

/* host [":" port] (RFC 3986 3.2), the way the gateway accepts it: a reg-name of letters,
 * digits, '-', '.', '_', '~' (no percent-encoding, no sub-delims: none occurs in a DNS name
 * and each is a way to make two parsers read different hosts), or an IPv6 literal in
 * brackets (no zone, no IPvFuture). *host gets the lowercase host without brackets. */
static enum authority_error parse_authority(const char *s, size_t len, bool port_required,
                                            char **host, uint16_t *port, bool *has_port)
{
    *host = NULL;
    *has_port = false;
    if (memchr(s, '@', len))
        return AUTHORITY_USERINFO;
    size_t host_end;
    const char *host_start;
    size_t host_len;
    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close)
            return AUTHORITY_BAD_HOST;
        host_start = s + 1;
        host_len = (size_t)(close - host_start);
        char literal[INET6_ADDRSTRLEN + 1];
        struct in6_addr address;
        if (host_len == 0 || host_len >= sizeof(literal))
            return AUTHORITY_BAD_HOST;
        memcpy(literal, host_start, host_len);
        literal[host_len] = '\0';
        if (inet_pton(AF_INET6, literal, &address) != 1)
            return AUTHORITY_BAD_HOST;
        host_end = (size_t)(close - s) + 1;
    } else {
        host_end = 0;
        while (host_end < len && s[host_end] != ':') {
            unsigned char c = (unsigned char)s[host_end];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.' || c == '_' || c == '~'))
                return AUTHORITY_BAD_HOST;
            host_end++;
        }
        host_start = s;
        host_len = host_end;
        if (host_len == 0 || host_len > 255)
            return AUTHORITY_BAD_HOST;
    }
    if (host_end < len) {
        if (s[host_end] != ':')
            return AUTHORITY_BAD_HOST;
        size_t digits = len - host_end - 1;
        if (digits == 0 || digits > 5)
            return AUTHORITY_BAD_PORT;
        unsigned value = 0;
        for (size_t i = host_end + 1; i < len; i++) {
            if (s[i] < '0' || s[i] > '9')
                return AUTHORITY_BAD_PORT;
            value = value * 10 + (unsigned)(s[i] - '0');
        }
        if (value == 0 || value > 65535)
            return AUTHORITY_BAD_PORT;
        *port = (uint16_t)value;
        *has_port = true;
    } else if (port_required) {
        return AUTHORITY_NO_PORT;
    }
    *host = lowercase_dup(host_start, host_len);
    return AUTHORITY_OK;
}

static const char *target_authority_reason(enum authority_error e)
{
    switch (e) {
    case AUTHORITY_USERINFO:
        return "userinfo (user@host) in the request target";
    case AUTHORITY_BAD_PORT:
        return "invalid port in the request target";
    case AUTHORITY_NO_PORT:
        return "CONNECT target without a port";
    case AUTHORITY_BAD_HOST:
    case AUTHORITY_OK:
    default:
        return "invalid host in the request target";
    }
}

static const char *host_field_reason(enum authority_error e)
{
    switch (e) {
    case AUTHORITY_USERINFO:
        return "userinfo (user@host) in the Host header";
    case AUTHORITY_BAD_PORT:
        return "invalid port in the Host header";
    case AUTHORITY_BAD_HOST:
    case AUTHORITY_NO_PORT:
    case AUTHORITY_OK:
    default:
        return "invalid Host header";
    }
}

static uint16_t default_port(const char *scheme)
{
    return strcmp(scheme, "https") == 0 ? 443 : 80;
}

/* path [ "?" query ] of origin-form and of absolute-form after the authority. */
static void split_path(pdk_http_head *h, const char *s, size_t len)
{
    const char *question = memchr(s, '?', len);
    size_t path_len = question ? (size_t)(question - s) : len;
    h->path = path_len ? xstrndup(s, path_len) : xstrdup("/");
    if (question)
        h->query = xstrndup(question + 1, len - path_len - 1);
}

/* ---- Errors ---- */

static pdk_http_event fail(pdk_http_parser *p, pdk_http_result *out, int status, const char *reason)
{
    p->phase = PH_ERROR;
    /* Whatever is wrong with an upstream's response, the client gets 502. */
    p->error_status = p->kind == PDK_HTTP_RESPONSE ? 502 : status;
    p->error_reason = reason;
    out->consumed = 0;
    out->status = p->error_status;
    out->reason = p->error_reason;
    return PDK_HTTP_ERROR;
}

/* A refusal that does not end the parser (stopped states). */
static pdk_http_event refuse(pdk_http_parser *p, pdk_http_result *out, const char *reason)
{
    out->consumed = 0;
    out->status = p->kind == PDK_HTTP_RESPONSE ? 502 : 400;
    out->reason = reason;
    return PDK_HTTP_ERROR;
}

struct library_error {
    enum http_errno code;
    int status;
    const char *reason;
};

static const struct library_error library_errors[] = {
    {HPE_INVALID_METHOD, 501, "unknown method"},
    {HPE_INVALID_VERSION, 505, "unsupported HTTP version"},
    {HPE_HEADER_OVERFLOW, 431, "head too large"},
    {HPE_INVALID_CONTENT_LENGTH, 400, "invalid Content-Length"},
    {HPE_UNEXPECTED_CONTENT_LENGTH, 400,
     "several Content-Length headers, or Content-Length with Transfer-Encoding"},
    {HPE_INVALID_TRANSFER_ENCODING, 400, "invalid Transfer-Encoding"},
    {HPE_INVALID_CHUNK_SIZE, 400, "invalid chunk size"},
    {HPE_INVALID_URL, 400, "invalid request target"},
    {HPE_INVALID_HOST, 400, "invalid request target"},
    {HPE_INVALID_PORT, 400, "invalid request target"},
    {HPE_INVALID_PATH, 400, "invalid request target"},
    {HPE_INVALID_QUERY_STRING, 400, "invalid request target"},
    {HPE_INVALID_FRAGMENT, 400, "invalid request target"},
    {HPE_INVALID_HEADER_TOKEN, 400, "invalid character in a header"},
    {HPE_INVALID_STATUS, 400, "invalid status code"},
};

/* libhttp-parser stopped with an error, or paused where the scanner saw no end. */
static pdk_http_event fail_library(pdk_http_parser *p, pdk_http_result *out)
{
    enum http_errno code = HTTP_PARSER_ERRNO(&p->library);
    if (code == HPE_PAUSED || p->library_disagrees)
        return fail(p, out, 400, DISAGREE_REASON);
    for (size_t i = 0; i < PDK_ARRAY_SIZE(library_errors); i++)
        if (library_errors[i].code == code)
            return fail(p, out, library_errors[i].status, library_errors[i].reason);
    /* A static string of the library's own ("invalid constant string", ...). */
    return fail(p, out, 400, http_errno_description(code));
}

/* ---- Scanner ---- */

static size_t scan_fail(pdk_http_parser *p, size_t at, int status, const char *reason)
{
    p->stop = STOP_ERROR;
    p->scan_status = status;
    p->scan_reason = reason;
    return at;
}

/* One byte of "HTTP/d.d" at p->index: 1 when it completes the version, 0 when more are due,
 * -1 when it does not fit. */
static int version_byte(pdk_http_parser *p, unsigned char c)
{
    static const char prefix[] = "HTTP/";
    unsigned i = p->index++;
    if (i < 5)
        return c == (unsigned char)prefix[i] ? 0 : -1;
    if (i == 6)
        return c == '.' ? 0 : -1;
    if (c < '0' || c > '9')
        return -1;
    if (i == 5) {
        p->version_major = c - '0';
        return 0;
    }
    p->version_minor = c - '0';
    return 1;
}

static bool version_supported(const pdk_http_parser *p)
{
    return p->version_major == 1 && (p->version_minor == 0 || p->version_minor == 1);
}

/* The colon of a field line of the head: the name is complete. Content-Length and
 * Transfer-Encoding are judged here, at the colon, so that this module (not the library,
 * which fails a repeated Content-Length on its first digit) names the smuggling attempt. */
static bool field_name_done(pdk_http_parser *p)
{
    const char *name = p->name.data;
    size_t len = p->name.len;
    if (ieq_n(name, len, "content-length")) {
        if (p->seen_content_length) {
            p->scan_reason = "several Content-Length headers";
            return false;
        }
        if (p->seen_transfer_encoding) {
            p->scan_reason = "Content-Length with Transfer-Encoding";
            return false;
        }
        p->seen_content_length = true;
    } else if (ieq_n(name, len, "transfer-encoding")) {
        if (p->seen_content_length) {
            p->scan_reason = "Content-Length with Transfer-Encoding";
            return false;
        }
        p->seen_transfer_encoding = true;
    } else if (len > 17 && ieq_n(name, 17, "transfer-encoding")) {
        /* libhttp-parser 2.9.4 takes any name that begins with "Transfer-Encoding" for it:
         * it then clears its chunked flag (a response would be read until close instead
         * of chunked) or refuses the request. No such field is worth that ambiguity. */
        p->scan_reason = "header name beginning with Transfer-Encoding";
        return false;
    }
    return true;
}

/* The field line just ended (its LF): add it to the head, value without OWS. */
static void field_done(pdk_http_parser *p)
{
    const char *v = p->value.data ? p->value.data : "";
    size_t start = 0, end = p->value.len;
    while (start < end && is_ows((unsigned char)v[start]))
        start++;
    while (end > start && is_ows((unsigned char)v[end - 1]))
        end--;
    if (ieq_n(p->name.data, p->name.len, "transfer-encoding") && memchr(v, '\t', p->value.len))
        p->transfer_encoding_tab = true;
    head_push(p->building, p->name.data, p->name.len, v + start, end - start);
}

/* Run the scanner over data[0..len). Returns how many bytes it accepted; p->stop says why
 * it stopped. */
static size_t scan(pdk_http_parser *p, const unsigned char *d, size_t len)
{
    const bool request = p->kind == PDK_HTTP_REQUEST;
    size_t i = 0;
    p->stop = STOP_NONE;
    while (i < len) {
        unsigned char c = d[i];
        if (p->lex <= LX_END_LF) {
            if (++p->section_bytes > p->max_head_bytes)
                return scan_fail(p, i, 431,
                                 p->in_trailers ? "trailer section too large" : "head too large");
        } else if (p->lex <= LX_CHUNK_LINE_LF) {
            if (++p->chunk_line_bytes > MAX_CHUNK_LINE_BYTES)
                return scan_fail(p, i, 400, "chunk line too long");
        }
        switch (p->lex) {
        case LX_START:
            if (c == '\r') {
                p->lex = LX_START_LF;
            } else if (c == '\n') {
                return scan_fail(p, i, 400, "bare LF (line not ended by CRLF)");
            } else if (request) {
                if (!is_tchar(c))
                    return scan_fail(p, i, 400, "invalid character in the method");
                pdk_buf_append(&p->method, &c, 1);
                p->lex = LX_METHOD;
            } else {
                if (c != 'H')
                    return scan_fail(p, i, 400, "not an HTTP response");
                p->index = 1;
                p->lex = LX_RVERSION;
            }
            break;
        case LX_START_LF:
            if (c != '\n')
                return scan_fail(p, i, 400, "CR not followed by LF");
            p->lex = LX_START;
            break;
        case LX_METHOD:
            if (c == ' ') {
                p->lex = LX_TARGET_1;
            } else if (is_tchar(c)) {
                if (p->method.len >= MAX_METHOD_BYTES)
                    return scan_fail(p, i, 501, "unknown method");
                pdk_buf_append(&p->method, &c, 1);
            } else {
                return scan_fail(p, i, 400, "malformed request line");
            }
            break;
        case LX_TARGET_1:
            if (!is_vchar(c))
                return scan_fail(p, i, 400, "malformed request line");
            pdk_buf_append(&p->target, &c, 1);
            p->target_bytes = 1;
            p->lex = LX_TARGET;
            break;
        case LX_TARGET: {
            size_t run = 0;
            while (i + run < len && is_vchar(d[i + run]))
                run++;
            if (run) {
                /* Fail on the very byte that a byte-at-a-time scan fails on, whatever the
                 * split: the head bound first (it is checked first for each byte). */
                size_t head_room = p->max_head_bytes - p->section_bytes + 1;
                size_t target_room = p->max_target_bytes - p->target_bytes;
                if (run > head_room && head_room <= target_room)
                    return scan_fail(p, i + head_room, 431, "head too large");
                if (run > target_room)
                    return scan_fail(p, i + target_room, 414, "request target too long");
                pdk_buf_append(&p->target, d + i, run);
                p->target_bytes += run;
                /* d[i] was counted above, the rest of the run was not. */
                p->section_bytes += run - 1;
                i += run;
                continue;
            }
            if (c == ' ') {
                p->index = 0;
                p->lex = LX_VERSION;
            } else if (c == '\r' || c == '\n') {
                return scan_fail(p, i, 505, "HTTP/0.9 request (no HTTP version)");
            } else {
                return scan_fail(p, i, 400, "invalid character in the request target");
            }
            break;
        }
        case LX_VERSION:
            if (p->index < 8) {
                if (version_byte(p, c) < 0)
                    return scan_fail(p, i, 400, "malformed HTTP version");
            } else if (c == '\r') {
                if (!version_supported(p))
                    return scan_fail(p, i, 505, "unsupported HTTP version");
                p->lex = LX_LINE_LF;
            } else if (c == '\n') {
                return scan_fail(p, i, 400, "bare LF (line not ended by CRLF)");
            } else {
                return scan_fail(p, i, 400, "malformed request line");
            }
            break;
        case LX_RVERSION:
            if (p->index < 8) {
                if (version_byte(p, c) < 0)
                    return scan_fail(p, i, 502, "malformed HTTP version");
            } else if (c == ' ') {
                if (!version_supported(p))
                    return scan_fail(p, i, 502, "unsupported HTTP version");
                p->index = 0;
                p->status = 0;
                p->lex = LX_STATUS;
            } else {
                return scan_fail(p, i, 502, "malformed status line");
            }
            break;
        case LX_STATUS:
            if (c < '0' || c > '9')
                return scan_fail(p, i, 502, "invalid status code");
            p->status = p->status * 10 + (c - '0');
            if (++p->index == 3)
                p->lex = LX_STATUS_END;
            break;
        case LX_STATUS_END:
            if (c == ' ')
                p->lex = LX_REASON;
            else if (c == '\r')
                p->lex = LX_LINE_LF;
            else
                return scan_fail(p, i, 502, "invalid status code");
            break;
        case LX_REASON:
            if (c == '\r') {
                p->lex = LX_LINE_LF;
            } else if (c == '\n') {
                return scan_fail(p, i, 400, "bare LF (line not ended by CRLF)");
            } else if (is_field_char(c)) {
                pdk_buf_append(&p->reason, &c, 1);
            } else {
                return scan_fail(p, i, 400, "control character in the reason phrase");
            }
            break;
        case LX_LINE_LF:
        case LX_VALUE_LF:
            if (c != '\n')
                return scan_fail(p, i, 400, "CR not followed by LF");
            if (p->lex == LX_VALUE_LF && !p->in_trailers)
                field_done(p);
            p->lex = LX_FIELD_1;
            break;
        case LX_FIELD_1:
            if (c == '\r') {
                p->lex = LX_END_LF;
            } else if (c == '\n') {
                return scan_fail(p, i, 400, "bare LF (line not ended by CRLF)");
            } else if (is_ows(c)) {
                return scan_fail(p, i, 400, "obs-fold (field line starting with whitespace)");
            } else if (c == ':') {
                return scan_fail(p, i, 400, "empty header name");
            } else if (!is_tchar(c)) {
                return scan_fail(p, i, 400, "invalid character in a header name");
            } else {
                if (++p->section_fields > p->max_headers)
                    return scan_fail(p, i, 431,
                                     p->in_trailers ? "too many trailer fields"
                                                    : "too many header fields");
                p->name.len = 0;
                pdk_buf_append(&p->name, &c, 1);
                p->lex = LX_NAME;
            }
            break;
        case LX_NAME:
            if (c == ':') {
                if (!p->in_trailers && !field_name_done(p))
                    return scan_fail(p, i, 400, p->scan_reason);
                p->value.len = 0;
                p->lex = LX_VALUE;
            } else if (is_tchar(c)) {
                pdk_buf_append(&p->name, &c, 1);
            } else if (is_ows(c)) {
                return scan_fail(p, i, 400, "whitespace between a header name and its colon");
            } else if (c == '\r' || c == '\n') {
                return scan_fail(p, i, 400, "header line without a colon");
            } else {
                return scan_fail(p, i, 400, "invalid character in a header name");
            }
            break;
        case LX_VALUE: {
            size_t run = 0;
            while (i + run < len && is_field_char(d[i + run]))
                run++;
            if (run) {
                size_t head_room = p->max_head_bytes - p->section_bytes + 1;
                if (run > head_room)
                    return scan_fail(p, i + head_room, 431,
                                     p->in_trailers ? "trailer section too large"
                                                    : "head too large");
                p->section_bytes += run - 1;
                if (!p->in_trailers)
                    pdk_buf_append(&p->value, d + i, run);
                i += run;
                continue;
            }
            if (c == '\r')
                p->lex = LX_VALUE_LF;
            else if (c == '\n')
                return scan_fail(p, i, 400, "bare LF (line not ended by CRLF)");
            else
                return scan_fail(p, i, 400, "control character in a header value");
            break;
        }
        case LX_END_LF:
            if (c != '\n')
                return scan_fail(p, i, 400, "CR not followed by LF");
            if (p->in_trailers) {
                p->stop = STOP_MESSAGE_END;
                return i + 1;
            }
            p->stop = STOP_HEAD_END;
            return i;
        case LX_CHUNK_SIZE_FIRST: {
            int v = pdk_hex_value(c);
            if (v < 0)
                return scan_fail(p, i, 400, "invalid chunk size");
            p->chunk_size = (uint64_t)v;
            p->lex = LX_CHUNK_SIZE;
            break;
        }
        case LX_CHUNK_SIZE: {
            int v = pdk_hex_value(c);
            if (v >= 0) {
                if (p->chunk_size > (MAX_LENGTH >> 4))
                    return scan_fail(p, i, 400, "chunk size too large");
                p->chunk_size = p->chunk_size * 16 + (uint64_t)v;
            } else if (c == ';') {
                p->lex = LX_EXT_NAME_FIRST;
            } else if (is_ows(c)) {
                p->lex = LX_CHUNK_BWS;
            } else if (c == '\r') {
                p->lex = LX_CHUNK_LINE_LF;
            } else if (c == '\n') {
                return scan_fail(p, i, 400, "bare LF (line not ended by CRLF)");
            } else {
                return scan_fail(p, i, 400, "invalid chunk size");
            }
            break;
        }
        /* chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] ),
         * ext-val = token / quoted-string (RFC 9112 7.1.1). */
        case LX_CHUNK_BWS:
            if (c == ';')
                p->lex = LX_EXT_NAME_FIRST;
            else if (c == '\r')
                p->lex = LX_CHUNK_LINE_LF;
            else if (!is_ows(c))
                return scan_fail(p, i, 400, "invalid chunk extension");
            break;
        case LX_EXT_NAME_FIRST:
            if (is_tchar(c))
                p->lex = LX_EXT_NAME;
            else if (!is_ows(c))
                return scan_fail(p, i, 400, "invalid chunk extension");
            break;
        case LX_EXT_NAME:
        case LX_EXT_NAME_BWS:
            if (is_tchar(c) && p->lex == LX_EXT_NAME)
                break;
            if (is_ows(c))
                p->lex = LX_EXT_NAME_BWS;
            else if (c == '=')
                p->lex = LX_EXT_VALUE_FIRST;
            else if (c == ';')
                p->lex = LX_EXT_NAME_FIRST;
            else if (c == '\r')
                p->lex = LX_CHUNK_LINE_LF;
            else
                return scan_fail(p, i, 400, "invalid chunk extension");
            break;
        case LX_EXT_VALUE_FIRST:
            if (c == '"')
                p->lex = LX_EXT_QUOTED;
            else if (is_tchar(c))
                p->lex = LX_EXT_TOKEN;
            else if (!is_ows(c))
                return scan_fail(p, i, 400, "invalid chunk extension");
            break;
        case LX_EXT_TOKEN:
            if (is_tchar(c))
                break;
            if (is_ows(c))
                p->lex = LX_CHUNK_BWS;
            else if (c == ';')
                p->lex = LX_EXT_NAME_FIRST;
            else if (c == '\r')
                p->lex = LX_CHUNK_LINE_LF;
            else
                return scan_fail(p, i, 400, "invalid chunk extension");
            break;
        case LX_EXT_QUOTED:
            /* qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text */
            if (c == '"')
                p->lex = LX_CHUNK_BWS;
            else if (c == '\\')
                p->lex = LX_EXT_QUOTED_PAIR;
            else if (!is_field_char(c))
                return scan_fail(p, i, 400, "invalid chunk extension");
            break;
        case LX_EXT_QUOTED_PAIR:
            if (!is_field_char(c))
                return scan_fail(p, i, 400, "invalid chunk extension");
            p->lex = LX_EXT_QUOTED;
            break;
        case LX_CHUNK_LINE_LF:
            if (c != '\n')
                return scan_fail(p, i, 400, "CR not followed by LF");
            if (p->chunk_size == 0) {
                /* The last chunk: a trailer section follows, as strict as a head. */
                p->in_trailers = true;
                p->section_bytes = 0;
                p->section_fields = 0;
                p->lex = LX_FIELD_1;
            } else {
                p->remaining = p->chunk_size;
                p->lex = LX_CHUNK_DATA;
            }
            break;
        case LX_CHUNK_DATA:
        case LX_BODY_LENGTH: {
            uint64_t take = len - i;
            if (take > p->remaining)
                take = p->remaining;
            p->remaining -= take;
            i += (size_t)take;
            if (p->remaining == 0) {
                if (p->lex == LX_BODY_LENGTH) {
                    p->stop = STOP_MESSAGE_END;
                    return i;
                }
                p->lex = LX_CHUNK_DATA_CR;
            }
            continue;
        }
        case LX_CHUNK_DATA_CR:
            if (c != '\r')
                return scan_fail(p, i, 400, "chunk data not followed by CRLF");
            p->lex = LX_CHUNK_DATA_LF;
            break;
        case LX_CHUNK_DATA_LF:
            if (c != '\n')
                return scan_fail(p, i, 400, "CR not followed by LF");
            p->chunk_line_bytes = 0;
            p->lex = LX_CHUNK_SIZE_FIRST;
            break;
        case LX_BODY_EOF:
            return len;
        default:
            abort();
        }
        i++;
    }
    return len;
}

/* ---- Judging a complete head ---- */

/* Headers every hop removes (RFC 9110 7.6.1, and the older Keep-Alive, Proxy-Connection,
 * Proxy-Authorization/Authenticate of proxies). Upgrade is one unless upgrading. */
static const char *const hop_by_hop_names[] = {
    "connection",         "keep-alive", "proxy-connection", "proxy-authorization",
    "proxy-authenticate", "te",         "trailer",          "upgrade",
};

/* Fields a Connection option may not name: dropping them would change the framing or the
 * destination of what the gateway forwards. */
static const char *const essential_names[] = {"host", "content-length", "transfer-encoding"};

static bool in_list(const char *s, size_t len, const char *const *words, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (ieq_n(s, len, words[i]))
            return true;
    return false;
}

/* What the fields of a head say, for both directions. */
struct fields {
    const pdk_http_header *host;
    size_t host_count;
    const pdk_http_header *content_length;
    const pdk_http_header *upgrade;
    bool transfer_encoding;
    bool close;
    bool keep_alive;
    bool upgrade_option;
    bool expect_continue;
    bool expect_other;
};

/* Read the fields; returns NULL or the reason (status 400) they are refused. */
static const char *read_fields(pdk_http_head *h, struct fields *f)
{
    memset(f, 0, sizeof(*f));
    for (size_t i = 0; i < h->header_count; i++) {
        pdk_http_header *field = &h->headers[i];
        const char *name = field->name;
        const char *cursor = field->value;
        const char *element;
        size_t len;
        if (ieq(name, "host")) {
            f->host = field;
            f->host_count++;
        } else if (ieq(name, "content-length")) {
            f->content_length = field;
        } else if (ieq(name, "transfer-encoding")) {
            f->transfer_encoding = true;
        } else if (ieq(name, "connection") || ieq(name, "proxy-connection")) {
            bool connection = ieq(name, "connection");
            while (next_element(&cursor, &element, &len)) {
                if (!all_tchar(element, len))
                    return "invalid Connection header";
                if (ieq_n(element, len, "close"))
                    f->close = true;
                else if (ieq_n(element, len, "keep-alive"))
                    f->keep_alive = true;
                else if (connection && ieq_n(element, len, "upgrade"))
                    f->upgrade_option = true;
                if (connection &&
                    in_list(element, len, essential_names, PDK_ARRAY_SIZE(essential_names)))
                    return "Connection header names Host, Content-Length or Transfer-Encoding";
            }
        } else if (ieq(name, "upgrade")) {
            if (!f->upgrade)
                f->upgrade = field;
        } else if (ieq(name, "expect")) {
            while (next_element(&cursor, &element, &len)) {
                if (ieq_n(element, len, "100-continue"))
                    f->expect_continue = true;
                else
                    f->expect_other = true;
            }
        }
    }
    return NULL;
}

/* Transfer-Encoding, all its fields as one list, must be exactly "chunked". Returns 0, or
 * the status (400/501) with *reason. */
static int check_transfer_encoding(const pdk_http_parser *p, const pdk_http_head *h,
                                   const char **reason)
{
    size_t codings = 0, chunked = 0, fields = 0;
    bool last_chunked = false;
    bool exact = false;
    for (size_t i = 0; i < h->header_count; i++) {
        if (!ieq(h->headers[i].name, "transfer-encoding"))
            continue;
        fields++;
        exact = ieq(h->headers[i].value, "chunked");
        const char *cursor = h->headers[i].value;
        const char *element;
        size_t len;
        while (next_element(&cursor, &element, &len)) {
            codings++;
            last_chunked = ieq_n(element, len, "chunked");
            chunked += last_chunked;
        }
    }
    if (codings == 0) {
        *reason = "empty Transfer-Encoding";
        return 400;
    }
    if (!last_chunked) {
        *reason = "Transfer-Encoding does not end with chunked: the body length is unknown";
        return 400;
    }
    if (chunked > 1) {
        *reason = "chunked applied more than once";
        return 400;
    }
    if (codings > 1) {
        *reason = "transfer codings other than chunked are not implemented";
        return 501;
    }
    /* One coding, chunked, but not written "chunked" in one field with spaces around it:
     * libhttp-parser reads "chunked,", ",chunked" and "chunked<HTAB>" as not chunked, and
     * a message two parsers frame differently is not forwarded. */
    if (fields != 1 || !exact || p->transfer_encoding_tab) {
        *reason = "Transfer-Encoding other than a single \"chunked\"";
        return 400;
    }
    return 0;
}

/* 1*DIGIT, at most MAX_LENGTH. */
static bool parse_content_length(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        unsigned digit = (unsigned)(*s - '0');
        if (v > (MAX_LENGTH - digit) / 10)
            return false;
        v = v * 10 + digit;
    }
    *out = v;
    return true;
}

static void mark_hop_by_hop(pdk_http_head *h)
{
    for (size_t i = 0; i < h->header_count; i++) {
        pdk_http_header *field = &h->headers[i];
        if (in_list(field->name, strlen(field->name), hop_by_hop_names,
                    PDK_ARRAY_SIZE(hop_by_hop_names)))
            field->hop_by_hop = true;
        if (!ieq(field->name, "connection"))
            continue;
        const char *cursor = field->value;
        const char *element;
        size_t len;
        while (next_element(&cursor, &element, &len))
            for (size_t j = 0; j < h->header_count; j++)
                if (strlen(h->headers[j].name) == len && ieq_mem(h->headers[j].name, element, len))
                    h->headers[j].hop_by_hop = true;
    }
}

/* The framing fields, common to requests and responses; status 0 or the refusal. */
static int check_framing_fields(pdk_http_parser *p, const struct fields *f, uint64_t *length,
                                const char **reason)
{
    pdk_http_head *h = p->building;
    if (f->transfer_encoding) {
        if (h->version_minor == 0) {
            *reason = "Transfer-Encoding in an HTTP/1.0 message";
            return 400;
        }
        int status = check_transfer_encoding(p, h, reason);
        if (status)
            return status;
    }
    if (f->content_length && !parse_content_length(f->content_length->value, length)) {
        *reason = "invalid Content-Length";
        return 400;
    }
    return 0;
}

static int finish_request(pdk_http_parser *p, const char **reason)
{
    pdk_http_head *h = p->building;
    h->request = true;
    h->version_minor = p->version_minor;
    h->method = xstrndup(p->method.data, p->method.len);
    h->method_id = (enum http_method)p->library.method;
    h->target = xstrndup(p->target.data, p->target.len);
    /* The library matched the method byte by byte: the same word or a disagreement. */
    if (strcmp(http_method_str(h->method_id), h->method) != 0 || p->library.http_major != 1 ||
        p->library.http_minor != p->version_minor) {
        *reason = DISAGREE_REASON;
        return 400;
    }

    struct fields f;
    if ((*reason = read_fields(h, &f)))
        return 400;
    uint64_t length = 0;
    int status = check_framing_fields(p, &f, &length, reason);
    if (status)
        return status;
    if (f.expect_other) {
        *reason = "unsupported expectation (only 100-continue is)";
        return 417;
    }
    if (f.host_count > 1) {
        *reason = "several Host headers";
        return 400;
    }
    char *host_field_host = NULL;
    char *target_authority = NULL;
    uint16_t host_field_port = 0;
    bool host_field_has_port = false;
    if (f.host) {
        enum authority_error e =
            parse_authority(f.host->value, strlen(f.host->value), false, &host_field_host,
                            &host_field_port, &host_field_has_port);
        if (e != AUTHORITY_OK) {
            *reason = host_field_reason(e);
            return 400;
        }
    }

    const char *t = h->target;
    size_t len = strlen(t);
    status = 400;
    if (memchr(t, '#', len)) {
        *reason = "fragment in the request target";
        goto out;
    }
    if (h->method_id == HTTP_CONNECT) {
        h->target_form = PDK_HTTP_TARGET_AUTHORITY;
        bool has_port;
        enum authority_error e = parse_authority(t, len, true, &h->host, &h->port, &has_port);
        if (e != AUTHORITY_OK) {
            *reason = target_authority_reason(e);
            goto out;
        }
        /* A CONNECT body has no defined meaning (RFC 9110 9.3.6); a request with one is
         * either broken or smuggling bytes past the tunnel's start. */
        if (f.transfer_encoding || length > 0) {
            *reason = "CONNECT with a body";
            goto out;
        }
    } else if (t[0] == '/' || strcmp(t, "*") == 0) {
        if (t[0] == '*') {
            if (h->method_id != HTTP_OPTIONS) {
                *reason = "asterisk-form target for a method other than OPTIONS";
                goto out;
            }
            h->target_form = PDK_HTTP_TARGET_ASTERISK;
            h->path = xstrdup("*");
        } else {
            h->target_form = PDK_HTTP_TARGET_ORIGIN;
            split_path(h, t, len);
        }
        if (!f.host) {
            *reason = "no Host header";
            goto out;
        }
        h->scheme = xstrdup(p->tls ? "https" : "http");
        h->host = steal_pointer(&host_field_host);
        h->port = host_field_has_port ? host_field_port : default_port(h->scheme);
    } else {
        const char *colon = strchr(t, ':');
        size_t scheme_len = colon ? (size_t)(colon - t) : 0;
        if (!colon || !(ieq_n(t, scheme_len, "http") || ieq_n(t, scheme_len, "https"))) {
            *reason = "request target is not origin-form or an http(s) URL";
            goto out;
        }
        if (strncmp(colon, "://", 3) != 0) {
            *reason = "invalid request target";
            goto out;
        }
        h->target_form = PDK_HTTP_TARGET_ABSOLUTE;
        h->scheme = lowercase_dup(t, scheme_len);
        const char *authority = colon + 3;
        size_t authority_len = strcspn(authority, "/?");
        bool has_port;
        enum authority_error e =
            parse_authority(authority, authority_len, false, &h->host, &h->port, &has_port);
        if (e != AUTHORITY_OK) {
            *reason = target_authority_reason(e);
            goto out;
        }
        if (!has_port)
            h->port = default_port(h->scheme);
        const char *rest = authority + authority_len;
        split_path(h, rest, strlen(rest));
        target_authority = lowercase_dup(authority, authority_len);
    }

    p->framing = f.transfer_encoding ? PDK_HTTP_FRAMING_CHUNKED
                 : f.content_length  ? PDK_HTTP_FRAMING_CONTENT_LENGTH
                                     : PDK_HTTP_FRAMING_NONE;
    if (h->method_id == HTTP_CONNECT)
        p->framing = PDK_HTTP_FRAMING_NONE;
    p->content_length = p->framing == PDK_HTTP_FRAMING_CONTENT_LENGTH ? length : 0;
    p->keep_alive = h->version_minor == 1 ? !f.close : (f.keep_alive && !f.close);
    /* RFC 9110 7.8: Upgrade counts only with the "upgrade" option, and never in HTTP/1.0. */
    p->upgrade =
        h->method_id == HTTP_CONNECT || (f.upgrade && f.upgrade_option && h->version_minor == 1);
    if (p->upgrade && f.upgrade && h->method_id != HTTP_CONNECT)
        h->upgrade_protocol = xstrdup(f.upgrade->value);
    h->expect_continue = f.expect_continue && h->version_minor == 1;
    p->skip_body = 0;

    /* RFC 9112 3.2.2: a proxy replaces Host with the absolute-form target's authority.
     * Last, because adding a field may move the array f points into. */
    if (target_authority) {
        if (!f.host)
            head_push(h, "Host", 4, target_authority, strlen(target_authority));
        else if (!ieq_both(f.host->value, target_authority)) {
            pdk_http_header *field = &h->headers[f.host - h->headers];
            free(field->value);
            field->value = steal_pointer(&target_authority);
        }
    }
    status = 0;
out:
    free(host_field_host);
    free(target_authority);
    return status;
}

static int finish_response(pdk_http_parser *p, const char **reason)
{
    pdk_http_head *h = p->building;
    h->request = false;
    h->version_minor = p->version_minor;
    h->status = p->status;
    h->reason = xstrndup(p->reason.data ? p->reason.data : "", p->reason.len);
    if (p->library.status_code != (unsigned)p->status || p->library.http_major != 1 ||
        p->library.http_minor != p->version_minor) {
        *reason = DISAGREE_REASON;
        return 502;
    }
    if (h->status < 100 || h->status > 599) {
        *reason = "invalid status code";
        return 502;
    }
    if (p->request_method < 0) {
        *reason = "response to no request";
        return 502;
    }
    if (h->status < 200 && h->version_minor == 0) {
        *reason = "1xx response in HTTP/1.0";
        return 502;
    }
    struct fields f;
    if ((*reason = read_fields(h, &f)))
        return 502;
    uint64_t length = 0;
    int status = check_framing_fields(p, &f, &length, reason);
    if (status)
        return status;

    /* RFC 9112 6.3, in its order. */
    enum http_method method = (enum http_method)p->request_method;
    p->interim = h->status < 200 && h->status != 101;
    p->upgrade = false;
    p->content_length = 0;
    if (h->status == 101 || (method == HTTP_CONNECT && h->status / 100 == 2)) {
        p->framing = PDK_HTTP_FRAMING_NONE;
        p->upgrade = true;
        p->skip_body = 2;
        if (h->status == 101 && f.upgrade)
            h->upgrade_protocol = xstrdup(f.upgrade->value);
    } else if (method == HTTP_HEAD || h->status < 200 || h->status == 204 || h->status == 304) {
        p->framing = PDK_HTTP_FRAMING_NONE;
        p->skip_body = 1;
    } else if (f.transfer_encoding) {
        p->framing = PDK_HTTP_FRAMING_CHUNKED;
        p->skip_body = 0;
    } else if (f.content_length) {
        p->framing = PDK_HTTP_FRAMING_CONTENT_LENGTH;
        p->content_length = length;
        p->skip_body = 0;
    } else {
        p->framing = PDK_HTTP_FRAMING_UNTIL_CLOSE;
        p->skip_body = 0;
    }
    p->keep_alive = h->version_minor == 1 ? !f.close : (f.keep_alive && !f.close);
    if (p->framing == PDK_HTTP_FRAMING_UNTIL_CLOSE)
        p->keep_alive = false;
    if (p->interim)
        p->keep_alive = true;
    return 0;
}

/* ---- libhttp-parser ---- */

static int on_headers_complete(http_parser *library)
{
    pdk_http_parser *p = library->data;
    bool chunked = (library->flags & F_CHUNKED) != 0;
    bool agrees = p->feeding_head_end;
    if (agrees && p->skip_body == 0) {
        switch (p->framing) {
        case PDK_HTTP_FRAMING_CHUNKED:
            agrees = chunked;
            break;
        case PDK_HTTP_FRAMING_CONTENT_LENGTH:
            agrees = !chunked && library->content_length == p->content_length;
            break;
        case PDK_HTTP_FRAMING_NONE:
            agrees = !chunked;
            break;
        case PDK_HTTP_FRAMING_UNTIL_CLOSE:
            agrees = !chunked && library->content_length == UINT64_MAX;
            break;
        default:
            agrees = false;
            break;
        }
    }
    if (!agrees) {
        p->library_disagrees = true;
        return -1;
    }
    http_parser_pause(library, 1);
    return p->skip_body;
}

static int on_message_complete(http_parser *library)
{
    pdk_http_parser *p = library->data;
    p->library_complete = true;
    http_parser_pause(library, 1);
    return 0;
}

static const http_parser_settings library_settings = {
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

/* Feed the library data[0..len); returns false on an error (or a pause not asked for),
 * true with *complete when it paused in on_message_complete. */
static bool library_feed(pdk_http_parser *p, const char *data, size_t len, size_t *used)
{
    p->library_complete = false;
    *used = http_parser_execute(&p->library, &library_settings, data, len);
    enum http_errno code = HTTP_PARSER_ERRNO(&p->library);
    if (code == HPE_PAUSED && p->library_complete) {
        http_parser_pause(&p->library, 0);
        return true;
    }
    return code == HPE_OK;
}

/* ---- The parser ---- */

static void start_message(pdk_http_parser *p)
{
    p->phase = PH_HEAD;
    p->lex = LX_START;
    p->section_bytes = 0;
    p->section_fields = 0;
    p->target_bytes = 0;
    p->in_trailers = false;
    p->seen_content_length = false;
    p->seen_transfer_encoding = false;
    p->transfer_encoding_tab = false;
    p->method.len = 0;
    p->target.len = 0;
    p->reason.len = 0;
    p->name.len = 0;
    p->value.len = 0;
    pdk_http_head_free(p->building);
    p->building = xcalloc(1, sizeof(*p->building));
}

static size_t limit_or(size_t value, size_t fallback)
{
    return value ? value : fallback;
}

pdk_http_parser *pdk_http_parser_new(pdk_http_kind kind, const pdk_http_config *config)
{
    pdk_http_config defaults = {0};
    if (!config)
        config = &defaults;
    pdk_http_parser *p = xcalloc(1, sizeof(*p));
    p->kind = kind;
    p->max_head_bytes = limit_or(config->max_head_bytes, DEFAULT_MAX_HEAD_BYTES);
    if (p->max_head_bytes > LIBRARY_MAX_HEAD_BYTES)
        p->max_head_bytes = LIBRARY_MAX_HEAD_BYTES;
    p->max_headers = limit_or(config->max_headers, DEFAULT_MAX_HEADERS);
    p->max_target_bytes = limit_or(config->max_target_bytes, DEFAULT_MAX_TARGET_BYTES);
    p->tls = config->tls;
    p->request_method = -1;
    http_parser_init(&p->library, kind == PDK_HTTP_REQUEST ? HTTP_REQUEST : HTTP_RESPONSE);
    p->library.data = p;
    start_message(p);
    return p;
}

void pdk_http_parser_free(pdk_http_parser *p)
{
    if (!p)
        return;
    pdk_http_head_free(p->building);
    pdk_http_head_free(p->head);
    pdk_buf_free(&p->method);
    pdk_buf_free(&p->target);
    pdk_buf_free(&p->reason);
    pdk_buf_free(&p->name);
    pdk_buf_free(&p->value);
    free(p);
}

void pdk_http_parser_set_request_method(pdk_http_parser *p, enum http_method method)
{
    if (p->kind == PDK_HTTP_RESPONSE)
        p->request_method = (int)method;
}

int pdk_http_parser_resume(pdk_http_parser *p)
{
    if (p->phase != PH_UPGRADED || !p->keep_alive)
        return -1;
    start_message(p);
    return 0;
}

pdk_http_head *pdk_http_parser_head(pdk_http_parser *p)
{
    return p->head;
}

pdk_http_head *pdk_http_parser_take_head(pdk_http_parser *p)
{
    return steal_pointer(&p->head);
}

static pdk_http_event message_complete(pdk_http_parser *p, pdk_http_result *out)
{
    out->consumed = 0;
    if (p->kind == PDK_HTTP_RESPONSE && !p->interim)
        p->request_method = -1;
    if (p->upgrade)
        p->phase = PH_UPGRADED;
    else if (!p->keep_alive)
        p->phase = PH_CLOSED;
    else
        start_message(p);
    return PDK_HTTP_MESSAGE_COMPLETE;
}

static pdk_http_event parse_head(pdk_http_parser *p, const char *data, size_t len,
                                 pdk_http_result *out)
{
    size_t n = scan(p, (const unsigned char *)data, len);
    size_t used;
    if (n > 0) {
        if (!library_feed(p, data, n, &used))
            return fail_library(p, out);
        /* No end before the scanner's. */
        if (p->library_complete || used != n)
            return fail(p, out, 400, DISAGREE_REASON);
    }
    if (p->stop == STOP_ERROR)
        return fail(p, out, p->scan_status, p->scan_reason);
    if (p->stop != STOP_HEAD_END) {
        out->consumed = n;
        return PDK_HTTP_NEED_MORE;
    }

    const char *reason = NULL;
    int status =
        p->kind == PDK_HTTP_REQUEST ? finish_request(p, &reason) : finish_response(p, &reason);
    if (status)
        return fail(p, out, status, reason);

    /* The last LF: the library pauses in on_headers_complete without consuming it, then
     * takes it again and may complete a message without body. */
    p->feeding_head_end = true;
    used = http_parser_execute(&p->library, &library_settings, data + n, 1);
    p->feeding_head_end = false;
    if (HTTP_PARSER_ERRNO(&p->library) != HPE_PAUSED || p->library_disagrees || used != 0)
        return fail_library(p, out);
    http_parser_pause(&p->library, 0);
    if (!library_feed(p, data + n, 1, &used) || used != 1)
        return fail_library(p, out);
    bool empty = p->framing == PDK_HTTP_FRAMING_NONE ||
                 (p->framing == PDK_HTTP_FRAMING_CONTENT_LENGTH && p->content_length == 0);
    if (p->library_complete != empty)
        return fail(p, out, 400, DISAGREE_REASON);

    pdk_http_head *h = p->building;
    h->framing = p->framing;
    h->content_length = p->content_length;
    h->keep_alive = p->keep_alive;
    h->upgrade = p->upgrade;
    mark_hop_by_hop(h);
    pdk_http_head_free(p->head);
    p->head = steal_pointer(&p->building);

    if (empty) {
        p->phase = PH_COMPLETE;
    } else {
        p->phase = PH_BODY;
        switch (p->framing) {
        case PDK_HTTP_FRAMING_CONTENT_LENGTH:
            p->remaining = p->content_length;
            p->lex = LX_BODY_LENGTH;
            break;
        case PDK_HTTP_FRAMING_CHUNKED:
            p->chunk_line_bytes = 0;
            p->lex = LX_CHUNK_SIZE_FIRST;
            break;
        case PDK_HTTP_FRAMING_UNTIL_CLOSE:
            p->lex = LX_BODY_EOF;
            break;
        case PDK_HTTP_FRAMING_NONE:
        default:
            abort();
        }
    }
    out->head = p->head;
    out->consumed = n + 1;
    return PDK_HTTP_HEAD;
}

/* Body bytes before a failing one are delivered first (the error comes with the next call),
 * as they would have been had the failing byte come in a later read: the events do not
 * depend on how the input is split. */
static pdk_http_event body_then_fail(pdk_http_parser *p, const char *data, size_t used,
                                     pdk_http_result *out, pdk_http_event error)
{
    if (used == 0)
        return error;
    out->consumed = used;
    out->body = data;
    out->body_len = used;
    out->status = 0;
    out->reason = NULL;
    return PDK_HTTP_BODY;
}

static pdk_http_event parse_body(pdk_http_parser *p, const char *data, size_t len,
                                 pdk_http_result *out)
{
    size_t n = scan(p, (const unsigned char *)data, len);
    size_t used = 0;
    bool complete = false;
    if (n > 0) {
        if (!library_feed(p, data, n, &used)) {
            bool disagrees = HTTP_PARSER_ERRNO(&p->library) == HPE_PAUSED;
            pdk_http_event error = fail_library(p, out);
            return disagrees ? error : body_then_fail(p, data, used, out, error);
        }
        complete = p->library_complete;
    }
    if (p->stop == STOP_ERROR) {
        /* The library must have taken the accepted bytes without ending the message. */
        if (used != n || complete)
            return fail(p, out, 400, DISAGREE_REASON);
        return body_then_fail(p, data, n, out, fail(p, out, p->scan_status, p->scan_reason));
    }
    if (used != n || complete != (p->stop == STOP_MESSAGE_END))
        return fail(p, out, 400, DISAGREE_REASON);
    if (complete)
        p->phase = PH_COMPLETE;
    out->consumed = n;
    out->body = data;
    out->body_len = n;
    return PDK_HTTP_BODY;
}

pdk_http_event pdk_http_parse(pdk_http_parser *p, const char *data, size_t len,
                              pdk_http_result *out)
{
    memset(out, 0, sizeof(*out));
    out->head = p->head;
    switch (p->phase) {
    case PH_HEAD:
        if (len == 0)
            return PDK_HTTP_NEED_MORE;
        out->head = NULL;
        return parse_head(p, data, len, out);
    case PH_BODY:
        if (len == 0)
            return PDK_HTTP_NEED_MORE;
        return parse_body(p, data, len, out);
    case PH_COMPLETE:
        return message_complete(p, out);
    case PH_UPGRADED:
        if (len == 0)
            return PDK_HTTP_NEED_MORE;
        return refuse(p, out, "bytes after an upgrade (pdk_http_parser_resume if it was refused)");
    case PH_CLOSED:
        if (len == 0)
            return PDK_HTTP_NEED_MORE;
        return refuse(p, out, "data after the last message of the connection");
    case PH_ENDED:
        return refuse(p, out, "data after the end of the stream");
    case PH_ERROR:
        out->status = p->error_status;
        out->reason = p->error_reason;
        return PDK_HTTP_ERROR;
    default:
        abort();
    }
}

pdk_http_event pdk_http_parse_eof(pdk_http_parser *p, pdk_http_result *out)
{
    memset(out, 0, sizeof(*out));
    out->head = p->head;
    switch (p->phase) {
    case PH_HEAD:
        if (p->lex != LX_START)
            return fail(p, out, 400, "connection closed in the middle of a head");
        p->phase = PH_ENDED;
        return PDK_HTTP_END;
    case PH_BODY: {
        if (p->framing != PDK_HTTP_FRAMING_UNTIL_CLOSE)
            return fail(p, out, 400, "connection closed in the middle of a body");
        size_t used;
        if (!library_feed(p, NULL, 0, &used) || !p->library_complete)
            return fail(p, out, 400, DISAGREE_REASON);
        p->phase = PH_COMPLETE;
        return message_complete(p, out);
    }
    case PH_COMPLETE:
        return message_complete(p, out);
    case PH_UPGRADED:
    case PH_CLOSED:
    case PH_ENDED:
        p->phase = PH_ENDED;
        return PDK_HTTP_END;
    case PH_ERROR:
        out->status = p->error_status;
        out->reason = p->error_reason;
        return PDK_HTTP_ERROR;
    default:
        abort();
    }
}

/* ---- Bodies that read as requests ---- */

static bool is_blank(unsigned char c)
{
    return c == ' ' || c == '\t';
}

int pdk_http_looks_like_request_line(const char *data, size_t len, bool complete)
{
    const unsigned char *p = (const unsigned char *)data;
    bool cut = len >= PDK_HTTP_REQUEST_LINE_SNIFF_MAX; /* what follows never counts */
    if (cut) {
        len = PDK_HTTP_REQUEST_LINE_SNIFF_MAX;
        complete = true;
    }
    size_t i = 0;
    while (i < len && (p[i] == '\r' || p[i] == '\n'))
        i++;
    size_t method = i;
    while (i < len && is_tchar(p[i]))
        i++;
    size_t method_len = i - method;
    if (i == len) /* a token so far, or nothing but line ends */
        return complete ? 0 : -1;
    if (method_len == 0 || !is_blank(p[i]))
        return 0;
    while (i < len && is_blank(p[i]))
        i++;
    if (i == len)
        return complete ? 0 : -1;
    if (p[i] != '/' && p[i] != '*' && p[i] != 'h' && p[i] != 'H')
        return 0;
    const unsigned char *lf = memchr(p + i, '\n', len - i);
    if (!lf && (!complete || cut))
        return complete ? 0 : -1;             /* a line over the bound is none a server takes */
    size_t end = lf ? (size_t)(lf - p) : len; /* a whole body ends its line */
    if (end > i && p[end - 1] == '\r')
        end--;
    while (end > i && is_blank(p[end - 1]))
        end--;
    /* the target and whatever follows it: words separated by blanks */
    size_t last = end;
    while (last > i && !is_blank(p[last - 1]))
        last--;
    if (last > i) /* several words: the request line of HTTP/1.x ends in its version */
        return end - last >= 5 && strncasecmp((const char *)p + last, "HTTP/", 5) == 0;
    return method_len == 3 && memcmp(p + method, "GET", 3) == 0; /* HTTP/0.9 */
}

/* ---- Serialising ---- */

void pdk_http_head_serialize(const pdk_http_head *h, pdk_buf *out)
{
    if (h->request) {
        pdk_buf_puts(out, h->method);
        pdk_buf_puts(out, " ");
        switch (h->target_form) {
        case PDK_HTTP_TARGET_AUTHORITY:
            if (strchr(h->host, ':'))
                pdk_buf_printf(out, "[%s]:%u", h->host, (unsigned)h->port);
            else
                pdk_buf_printf(out, "%s:%u", h->host, (unsigned)h->port);
            break;
        case PDK_HTTP_TARGET_ASTERISK:
            pdk_buf_puts(out, "*");
            break;
        case PDK_HTTP_TARGET_ORIGIN:
        case PDK_HTTP_TARGET_ABSOLUTE:
        default:
            pdk_buf_puts(out, h->path);
            if (h->query) {
                pdk_buf_puts(out, "?");
                pdk_buf_puts(out, h->query);
            }
            break;
        }
        pdk_buf_puts(out, " HTTP/1.1\r\n");
    } else {
        pdk_buf_printf(out, "HTTP/1.1 %03d %s\r\n", h->status, h->reason ? h->reason : "");
    }
    /* An upgrading message keeps its Upgrade field, and its Connection is reduced to the
     * one option the next hop needs. */
    bool upgrading = h->upgrade && h->upgrade_protocol;
    bool connection_set = false;
    for (size_t i = 0; i < h->header_count; i++) {
        const pdk_http_header *f = &h->headers[i];
        if (f->hop_by_hop && !(upgrading && ieq(f->name, "upgrade")))
            continue;
        if (!f->hop_by_hop && ieq(f->name, "connection"))
            connection_set = true;
        pdk_buf_puts(out, f->name);
        pdk_buf_puts(out, ": ");
        pdk_buf_puts(out, f->value);
        pdk_buf_puts(out, "\r\n");
    }
    if (upgrading && !connection_set)
        pdk_buf_puts(out, "Connection: upgrade\r\n");
    pdk_buf_puts(out, "\r\n");
}
