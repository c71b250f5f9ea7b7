/* token_answer.h: what a token endpoint answers, and the vault's cache of a minted token.
 *
 * Two kinds of answer, both JSON objects (at most 64 KiB, from outside: parsed strictly):
 *   Feishu's tenant token endpoint: {"code": 0, "tenant_access_token": "t-...",
 *     "expire": SECONDS}; a code other than 0 (with "msg") is a refusal.
 *   OAuth 2 (RFC 6749 5.1, 5.2): {"access_token", "expires_in", "refresh_token"}; an
 *     "error" (with "error_description"), a provider's "code" other than 0 (Feishu's v2
 *     endpoint sends both), or an HTTP status other than 2xx is a refusal.
 * A refusal, an answer that is not JSON, and one without a token or with a bad lifetime
 * are errors whose one-line message names the credential, the status and the reason.
 *
 * The cache entry is "TOKEN EXPIRES_NS LIFETIME_NS" (a vault secret, kind "token").
 */
#ifndef PADDOCK_TOKEN_ANSWER_H
#define PADDOCK_TOKEN_ANSWER_H

#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum pdk_token_kind {
    PDK_TOKEN_FEISHU_TENANT,
    PDK_TOKEN_OAUTH2,
} pdk_token_kind;

/* An OAuth answer without expires_in (RFC 6749 only recommends it) lasts this long. */
#define PDK_TOKEN_DEFAULT_LIFETIME_S 3600

typedef struct pdk_token_answer {
    char *token;
    int64_t lifetime_s;  /* > 0 */
    char *refresh_token; /* OAuth: a new refresh token the answer gave, else NULL */
} pdk_token_answer;

/* Parse an answer (data, len: its body; status: the HTTP status). credential names the
 * credential in errors; refresh_secret (OAuth) the vault secret to set anew when the
 * endpoint refuses the refresh token. 0 with out filled, or -1 with err. */
int pdk_token_answer_parse(pdk_token_kind kind, long status, const char *data, size_t len,
                           const char *credential, const char *refresh_secret,
                           pdk_token_answer *out, pdk_error *err);
/* Wipe and free what out holds. */
void pdk_token_answer_clear(pdk_token_answer *answer);

/* The cache entry for a token (new string). */
char *pdk_token_cache_format(const char *token, int64_t expires_ns, int64_t lifetime_ns);
/* Parse a cache entry: true with *token (new string) and the times, false when it is not
 * one (no token, times missing or not numbers, a lifetime not > 0). */
bool pdk_token_cache_parse(const char *entry, char **token, int64_t *expires_ns,
                           int64_t *lifetime_ns);

#endif
