/* gateway_headers.h: what the gateway decides about a request's or a response's head, over
 * plain inputs (a parsed head, the credentials bound to the request's host, a placeholder
 * set), apart from the connection that carries them (gateway_credentials.c and
 * gateway_mask.c call these), so that they are unit tested and fuzzed (fuzz_headers.c).
 *
 *   - a placeholder of a credential bound to other hosts, anywhere in a request's head: its
 *     target, a field's name, or the field values read as one text in order (a placeholder
 *     cut across two fields is found), and where, for the refusal;
 *   - the credentials put on a request: the placeholder replaced in the fields each names
 *     (replace_in_headers) and its header set (inject), but none at all when one of them
 *     would go over plain HTTP without allow_plain_http, or when a body to rewrite is over
 *     the limit; which were used, which fields still hold a placeholder of these hosts, and
 *     whether the body is to be rewritten; answers then asked for unencoded;
 *   - in a response head about to go into the sandbox, which part a masked value was in;
 *     whether its body comes encoded (gzip, br...), which paddock cannot mask.
 * Nothing here logs or audits: the callers do, from what these return.
 */
#ifndef PADDOCK_GATEWAY_HEADERS_H
#define PADDOCK_GATEWAY_HEADERS_H

#include "http_message.h"
#include "placeholder_scan.h"
#include "policy.h"

#include <stdbool.h>
#include <stddef.h>

/* Whether h holds a placeholder of set whose id wanted accepts (NULL: any). When it does,
 * *found says which and how it was written, and *where (new string) where it was:
 * "URL" (or "destination" for CONNECT), "field name NAME", "NAME field" (the field where
 * the values' text completed it). */
bool pdk_headers_find_placeholder(const pdk_http_head *h, const pdk_placeholder_set *set,
                                  bool (*wanted)(void *arg, int id), void *arg,
                                  pdk_placeholder_found *found, char **where);

/* A credential bound to the request's host, as pdk_headers_put_credentials sees it. */
typedef struct pdk_headers_credential {
    const pdk_credential *policy; /* inject_header/_value, replace_in_headers, replace_in_body,
                                   * allow_plain_http */
    const char *placeholder;      /* what the sandbox holds */
    const char *value;            /* the real value (NULL: none to put on) */
} pdk_headers_credential;

typedef enum pdk_headers_outcome {
    PDK_HEADERS_PUT,            /* the head is rewritten (or had nothing to rewrite) */
    PDK_HEADERS_PLAIN_HTTP,     /* refused: credential `refused` would go over plain HTTP */
    PDK_HEADERS_BODY_TOO_LARGE, /* refused: a body to rewrite is over body_max */
} pdk_headers_outcome;

typedef struct pdk_headers_put {
    size_t refused;           /* PDK_HEADERS_PLAIN_HTTP: the index of the credential */
    bool *used;               /* the caller's array of count: a value was put on */
    bool rewrite_body;        /* a replace_in_body credential and a body */
    char **placeholders_left; /* new list: fields still holding one of their placeholders */
} pdk_headers_put;

/* Put creds (count of them, each bound to the request's host) on h, which goes over TLS
 * when tls. Nothing is changed unless the outcome is PDK_HEADERS_PUT. The value written into
 * a field is wiped from the temporary copies made on the way. */
pdk_headers_outcome pdk_headers_put_credentials(pdk_http_head *h,
                                                const pdk_headers_credential *creds, size_t count,
                                                bool tls, uint64_t body_max, pdk_headers_put *out);
void pdk_headers_put_free(pdk_headers_put *put);

/* Where offset of a serialised response head (head, its text) lies, for an event:
 * "response status line", "response field name", "response field NAME" (cut to 64). */
void pdk_headers_response_where(const char *head, size_t offset, char *where, size_t size);

/* Whether response has a body that comes encoded (Content-Encoding other than identity),
 * which cannot be read for a value; *coding (may be NULL) gets the coding. */
bool pdk_headers_body_encoded(const pdk_http_head *response, const char **coding);

#endif
