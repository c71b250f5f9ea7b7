/* policy_import.h: other sandboxes' settings turned into a paddock policy.
 *
 * Anthropic's sandbox-runtime (srt) settings, JSON:
 *   filesystem.denyRead   -> filesystem.read_deny
 *   filesystem.allowRead  -> filesystem.read_allow (bound read-only into the sandbox)
 *   filesystem.allowWrite -> filesystem.write (the workspace itself, "." or the current
 *                            directory, is always writable in paddock: dropped)
 *   filesystem.denyWrite  -> filesystem.protect (relative paths: in the workspace)
 * and what has no counterpart in this version (network.*, credentials.*, unix sockets,
 * local binding) is listed as a note, and kept as comments in the policy so that nothing
 * is lost silently.
 */
#ifndef PADDOCK_POLICY_IMPORT_H
#define PADDOCK_POLICY_IMPORT_H

#include "error.h"

#include <stddef.h>

/* Convert srt settings (text of len bytes, name for messages) into a version 1 policy as
 * YAML (*yaml, new string) and the notes of what could not be carried over (*notes,
 * NULL-terminated, possibly empty). -1 with err (naming the line and column of a JSON
 * error) when the text is not srt settings. */
int pdk_policy_import_srt(const char *name, const char *text, size_t len, char **yaml,
                          char ***notes, pdk_error *err);

#endif
