/* redact.h: secret values that never reach the audit log or paddock's own logs.
 *
 * Every secret value paddock handles for a run (a credential's value, a minted token, a
 * placeholder) is registered here as soon as it is known; the audit log (audit.c) replaces
 * each occurrence in every string of an event, and the logs (log.c) in every line, with
 * "[REDACTED]". The registry is shared by the process's threads (locked).
 */
#ifndef PADDOCK_REDACT_H
#define PADDOCK_REDACT_H

#define PDK_REDACTED "[REDACTED]"

/* Register a secret value (4 bytes or longer; shorter ones are not registered: they would
 * redact ordinary text) for the rest of the process. */
void pdk_redact_add(const char *secret);
/* Forget every registered value (tests). */
void pdk_redact_clear(void);
/* s with every registered value replaced (new string), or NULL when none occurs in s. */
char *pdk_redact_text(const char *s);
/* The same, always a new string (s itself when nothing is replaced). */
char *pdk_redacted(const char *s);

#endif
