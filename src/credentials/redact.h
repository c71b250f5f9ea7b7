/* redact.h: secret values that never reach the audit log, paddock's own logs, or a sandbox.
 *
 * Every secret value paddock handles for a run is registered here as soon as it is known,
 * in one of two kinds:
 *   - a real value (a stored credential, a minted token, a refresh token, an app or client
 *     secret): pdk_redact_add() or pdk_redact_add_named(). It never reaches the audit log
 *     or the logs, and nothing paddock sends into a sandbox carries it: paddock's own
 *     answers pass pdk_redact_values_text(), and the gateway masks it in what upstreams
 *     answer (secret_mask.h), from pdk_redact_values() and its generation;
 *   - a placeholder (what a sandbox holds instead): pdk_redact_add_placeholder(). Kept out
 *     of the audit log and the logs like a value, but the sandbox knows it: never masked
 *     in what goes into the sandbox (the gateway's own answers to a client minting a token
 *     carry one).
 * The audit log (audit.c) replaces each occurrence of either kind in every string of an
 * event, and the logs (log.c) in every line, with "[REDACTED]". The registry is shared by
 * the process's threads (locked).
 */
#ifndef PADDOCK_REDACT_H
#define PADDOCK_REDACT_H

#include <stddef.h>
#include <stdint.h>

#define PDK_REDACTED "[REDACTED]"

/* Register a real secret value (4 bytes or longer; shorter ones are not registered: they
 * would redact ordinary text) for the rest of the process. */
void pdk_redact_add(const char *secret);
/* The same, with what it is for the events that say where one was found ("api", "bot (app secret)":
 * a credential's name); never the value. */
void pdk_redact_add_named(const char *secret, const char *label);
/* Register a placeholder: kept out of the audit log and the logs only. */
void pdk_redact_add_placeholder(const char *placeholder);
/* Forget every registered value (tests). The copies are wiped. */
void pdk_redact_clear(void);
/* s with every registered value and placeholder replaced (new string), or NULL when none
 * occurs in s. */
char *pdk_redact_text(const char *s);
/* The same, always a new string (s itself when nothing is replaced). */
char *pdk_redacted(const char *s);
/* s with every real value (not placeholders) replaced: for what goes into a sandbox (new
 * string, s itself when nothing is replaced). */
char *pdk_redact_values_text(const char *s);

/* How many times the real values changed (one more at each value registered): a copy made
 * from pdk_redact_values() is stale when this moved. */
uint64_t pdk_redact_generation(void);
/* Call fn for every real value (and its label, "" when none), under the registry's lock:
 * fn must not call into the registry. */
void pdk_redact_values(void (*fn)(void *arg, const char *value, const char *label), void *arg);

#endif
