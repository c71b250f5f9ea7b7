#!/usr/bin/env bash
# t_vault: paddock secret set|list|rm and the vault at rest: values come from stdin or a
# file (never argv) and are never printed; the file is encrypted, written whole or not at
# all, under a lock; a wrong key or a damaged file is one clear error and changes nothing;
# the key may come from the environment or a descriptor; the vault is hidden in sandboxes.
. "$(dirname "$0")/lib.sh"

value="s3cr3t-value-$RANDOM$RANDOM"
printf '%s\n' "$value" | HOME="$TEST_HOME" "$PADDOCK" secret set app_secret >"$T/o" 2>"$T/e"
expect_eq "secret set NAME reads the value from stdin" "0 stored app_secret" "$? $(cat "$T/o")"
pdk secret list
expect_match "secret list shows the name and kind" "^app_secret +static " "$OUT"
expect_no_match "... never the value" "$value" "$OUT$ERR"
pdk secret list --json
expect_eq "secret list --json: name, kind, length, never used" "app_secret static ${#value} None" \
    "$(json_get "$OUT" '"%s %s %s %s" % (j["name"], j["kind"], j["length"], j["used_ns"])')"
expect_eq "the vault file does not hold the value in clear" 0 "$(grep -c "$value" "$STATE/vault")"
expect_eq "the vault and its key are private" "600 600" \
    "$(stat -c %a "$STATE/vault") $(stat -c %a "$STATE/vault.key")"

pdk secret set other "$value"
expect_eq "a value on the command line is refused (exit 2)" 2 "$RC"
expect_match "... saying where it goes instead" "never goes on the command line" "$ERR"
printf 'from-a-file\n' >"$T/v"
pdk secret set from_file --from-file "$T/v"
pdk secret list --json
expect_eq "--from-file" "0 2" "$RC $(printf '%s\n' "$OUT" | grep -c '"name"')"
pdk secret set 'bad name'
expect_eq "a bad name is refused (exit 2)" 2 "$RC"
pdk secret rm from_file
expect_eq "secret rm" "0 removed from_file" "$RC $OUT"
pdk secret rm from_file
expect_eq "... of a missing one: exit 1, saying so" "1 yes" \
    "$RC $(printf '%s' "$ERR" | grep -q 'no secret from_file' && echo yes)"

# A wrong key, a damaged file: one clear error, nothing changed.
before=$(sha256sum "$STATE/vault" | cut -d' ' -f1)
wrong=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
PADDOCK_VAULT_KEY=$wrong pdk secret list
expect_eq "another key: exit 1" 1 "$RC"
expect_match "... saying why" "cannot decrypt the vault .*another key" "$ERR"
printf 'x\n' | PADDOCK_VAULT_KEY=$wrong HOME="$TEST_HOME" "$PADDOCK" secret set more >/dev/null 2>&1
expect_eq "... and a set under it leaves the vault as it was" "$before" \
    "$(sha256sum "$STATE/vault" | cut -d' ' -f1)"
cp "$STATE/vault" "$T/vault.good"
"$PYTHON" -c '
import sys
d = bytearray(open(sys.argv[1], "rb").read()); d[-5] ^= 0x40
open(sys.argv[2], "wb").write(bytes(d))' "$T/vault.good" "$STATE/vault"
pdk secret list
expect_match "a damaged vault (one bit flipped): exit 1, saying so" "cannot decrypt the vault" "$ERR"
printf 'garbage' >"$STATE/vault"
pdk secret list
expect_match "not a vault at all: said so" "is not a paddock vault" "$ERR"
cp "$T/vault.good" "$STATE/vault"
mv "$STATE/vault.key" "$T/vault.key"
pdk secret list
expect_match "a vault without its key: the error names the way out" \
    "its key .* does not .*PADDOCK_VAULT_KEY" "$ERR"

# The key from a descriptor, or the environment (for servers).
pdk_fd() { HOME="$TEST_HOME" PADDOCK_VAULT_KEY_FD=9 "$PADDOCK" "$@" 9<"$T/vault.key"; }
expect_match "PADDOCK_VAULT_KEY_FD gives the key" "app_secret" "$(pdk_fd secret list 2>&1)"
hex=$(od -An -tx1 "$T/vault.key" | tr -d ' \n')
PADDOCK_VAULT_KEY=$hex pdk secret list
expect_match "PADDOCK_VAULT_KEY (hex) gives it too" "app_secret" "$OUT"
mv "$T/vault.key" "$STATE/vault.key"

# Many writers at once: none loses another's change (the lock).
for i in $(seq 10); do
    printf 'v%s\n' "$i" | HOME="$TEST_HOME" "$PADDOCK" secret set "n$i" >/dev/null 2>&1 &
done
wait
pdk secret list --json
expect_eq "10 concurrent sets: all 10 stored" 10 "$(printf '%s\n' "$OUT" | grep -c '"name":"n')"

# Inside a sandbox the vault is out of sight.
need_userns
prun -- sh -c "cat '$STATE/vault' '$STATE/vault.key' 2>&1; ls -A '$STATE' 2>&1 | wc -l"
expect_no_match "the vault and its key are hidden in a sandbox" "PDKVAULT" "$OUT"
