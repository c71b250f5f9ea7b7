/* vault.h: secrets at rest, for credentials the agent never sees.
 *
 * One file, STATE/vault, encrypted with libsodium's XChaCha20-Poly1305 (IETF) under a
 * 32-byte key: STATE/vault.key (0600, made with the first secret), or, for servers, a key
 * given in PADDOCK_VAULT_KEY (64 hex digits) or read from the descriptor named by
 * PADDOCK_VAULT_KEY_FD. The state dir (vault and key) is hidden in every sandbox.
 *
 * File format: "PDKVAULT1\n", a 24-byte nonce, then the ciphertext of a JSON object
 * {"secrets": {NAME: {"kind", "value", "created_ns", "used_ns"}}}, the header being the
 * additional data. Every change is a read-modify-write under an exclusive lock of
 * STATE/vault.lock, written to a file without a name (O_TMPFILE), fsynced, linked as
 * STATE/vault.new and renamed over the vault: a crash leaves the old vault or the new
 * one, a kill leaves at most vault.new (removed by the next change), and a vault that
 * cannot be read (corrupt, another key) is never written over. The key is made the same
 * way, linked straight into place. Memory jansson frees is wiped.
 */
#ifndef PADDOCK_VAULT_H
#define PADDOCK_VAULT_H

#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PDK_VAULT_VALUE_MAX (64 * 1024)
#define PDK_VAULT_NAME_MAX  128

typedef struct pdk_vault pdk_vault;

/* Open (and read) the vault of state_dir. create: make the key when there is none yet (a
 * vault without a key is an error either way). An absent vault is empty. */
int pdk_vault_open(const char *state_dir, bool create, pdk_vault **out, pdk_error *err);
void pdk_vault_close(pdk_vault *vault);

/* From here on, every block jansson frees is wiped first (the vault's plaintext passes
 * through its buffers). Once per process, before any thread but the caller uses jansson
 * (paddock's main does it first; pdk_vault_open does it too). */
void pdk_vault_wipe_json_memory(void);

/* Whether name is a valid secret name: 1-128 of A-Z a-z 0-9 . _ - */
bool pdk_vault_name_valid(const char *name);

/* Store a secret (replacing one of that name); written at once. kind: "static" for a
 * value the user gave, "token" for one a provider minted. */
int pdk_vault_set(pdk_vault *vault, const char *name, const char *kind, const char *value,
                  size_t len, pdk_error *err);
/* Several secrets stored in one write: all of them, or (an error) none. */
typedef struct pdk_vault_item {
    const char *name;
    const char *kind;  /* NULL: "static" */
    const char *value; /* NUL-terminated */
} pdk_vault_item;
int pdk_vault_set_many(pdk_vault *vault, const pdk_vault_item *items, size_t count, pdk_error *err);

/* An exclusive lock of STATE/vault.locks/NAME, for a change that spans more than one
 * write (a provider's call between reading a refresh token and storing the next one):
 * the fd, closed to release it, or -1 with err. Blocks while another process holds it. */
int pdk_vault_lock_secret(const char *state_dir, const char *name, pdk_error *err);

/* The value of name (owned by the vault, NUL-terminated, valid until the vault's next
 * write: set, remove, or a get with touch), or NULL with err when there is none. touch:
 * record the use (written at once). */
const char *pdk_vault_get(pdk_vault *vault, const char *name, bool touch, pdk_error *err);
/* Remove name; -1 with err when there is none. */
int pdk_vault_remove(pdk_vault *vault, const char *name, pdk_error *err);

typedef struct pdk_vault_entry {
    const char *name;
    const char *kind;
    int64_t created_ns;
    int64_t used_ns; /* 0: never */
    size_t length;
} pdk_vault_entry;

/* Every secret, sorted by name, without values. */
int pdk_vault_each(pdk_vault *vault, int (*fn)(const pdk_vault_entry *entry, void *arg), void *arg);

#endif
