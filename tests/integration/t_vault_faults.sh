#!/usr/bin/env bash
# The vault under kills and in memory: a `paddock secret set` killed at any moment leaves
# no copy of the vault or of its key beside them once the next change is made (the vault is
# written to a file without a name, linked and renamed; the key is linked straight into
# place), and the vault's plaintext (every secret, not only the ones a run needs) is wiped
# before the JSON library's memory goes back to malloc (tests/probe/freescan.c counts the
# blocks freed with a secret still in them).
. "$(dirname "$0")/lib.sh"
need_userns

# set_killed NAME VALUE HOW: `paddock secret set NAME` with VALUE on stdin, killed: HOW is
# "at:POINT" (paddock kills itself there) or "after:SECONDS" (kill -9 from outside).
set_killed() {
    local how="$3"
    case "$how" in
    at:*)
        { printf '%s\n' "$2" | (PADDOCK_TEST_CRASH_AT="${how#at:}" HOME="$TEST_HOME" \
            timeout -k 5 60 "$PADDOCK" secret set "$1" >/dev/null 2>&1); } 2>/dev/null ;;
    after:*)
        printf '%s\n' "$2" | (HOME="$TEST_HOME" exec timeout -s KILL "${how#after:}" "$PADDOCK" \
            secret set "$1" >/dev/null 2>&1) & { wait $!; } 2>/dev/null ;;
    esac
}

# strays DIR: files in DIR that hold the vault (its header) or the key (its 32 bytes), other
# than vault and vault.key themselves.
strays() {
    "$PYTHON" - "$1" <<'PY'
import os, sys
d = sys.argv[1]
key = open(os.path.join(d, "vault.key"), "rb").read() if os.path.exists(os.path.join(d, "vault.key")) else None
for name in sorted(os.listdir(d)):
    p = os.path.join(d, name)
    if name in ("vault", "vault.key") or not os.path.isfile(p) or os.path.islink(p):
        continue
    data = open(p, "rb").read()
    if data.startswith(b"PDKVAULT1\n") or (key and key in data) or len(data) == 32:
        print(name)
PY
}

# ---- kills during secret set ---------------------------------------------------------------

set_secret removed-later "value-that-is-removed-later-0123456789"
set_secret keep "kept-value"
for i in $(seq 20); do
    set_killed "k$i" "killed-value-$i" "at:$([ $((i % 2)) = 0 ] && echo vault-file-written || echo vault-linked)"
done
for i in $(seq 40); do
    set_killed "r$i" "killed-value-$i" "after:$(printf '0.%03d' $((1 + RANDOM % 40)))"
done
printf 'x\n' | HOME="$TEST_HOME" timeout -k 5 60 "$PADDOCK" secret rm removed-later >/dev/null 2>&1
expect_eq "after 60 kills during secret set and one change, no copy of the vault or key is left" \
    "" "$(strays "$STATE")"
expect_eq "... no temporary file at all beside them" "" \
    "$(ls -A "$STATE" | grep -v -x -e vault -e vault.key -e vault.lock -e vault.locks \
        -e .paddock-state -e sessions -e audit-spool)"
pdk secret list --json
expect_eq "... and the vault reads, its secrets whole" "keep" \
    "$(printf '%s\n' "$OUT" | "$PYTHON" -c 'import json,sys; import re; print(" ".join(n for n in (json.loads(l)["name"] for l in sys.stdin) if not re.fullmatch("[kr][0-9]+", n)))')"
expect_eq "... the removed secret nowhere in clear" 0 \
    "$(cat "$STATE"/* 2>/dev/null | grep -a -c 'value-that-is-removed-later')"

# The key, when the first secret of a state dir makes it.
key_strays="" next_strays=""
for i in $(seq 20); do
    fresh=$T/fresh$i
    mkdir -m 700 "$fresh"
    how="after:$(printf '0.%03d' $((1 + RANDOM % 30)))"
    [ $((i % 4)) = 0 ] && how="at:vault-file-written"
    PADDOCK_STATE_DIR="$fresh" set_killed first "first-value" "$how"
    # vault.new (the vault linked, not yet renamed: a kill there leaves it) is the one copy
    # a kill may leave, and the next change removes it; anything else is a stray now.
    left=$(ls -A "$fresh" | grep -v -x -e vault -e vault.key -e vault.lock -e .paddock-state \
        -e vault.new)
    [ -z "$left" ] || key_strays+="$i ($how): $left"$'\n'
    printf 'next\n' | PADDOCK_STATE_DIR="$fresh" HOME="$TEST_HOME" timeout -k 5 60 "$PADDOCK" \
        secret set next >/dev/null 2>&1
    left=$(ls -A "$fresh" | grep -v -x -e vault -e vault.key -e vault.lock -e .paddock-state)
    [ -z "$left" ] || next_strays+="$i ($how): $left"$'\n'
done
expect_eq "20 kills while the first secret makes the key leave no copy of the key" "" "$key_strays"
expect_eq "... and the next change leaves no copy of the vault either" "" "$next_strays"

# ---- the vault's plaintext in freed memory -------------------------------------------------

FREESCAN=${FREESCAN:-$PADDOCK_BUILD/tests/probe/freescan.so}
if [ ! -e "$FREESCAN" ]; then
    bail_out "tests/probe/freescan.so is built"
elif ldd "$PADDOCK" | grep -q -e libasan -e libubsan; then
    # ASan must be the first library in the process, so the scanner cannot be preloaded; the
    # same check runs in the normal build (make test), which CI runs too.
    echo "# the freed-memory scan runs in the normal build only (a sanitizer build cannot preload it)"
else
    unused="never-used-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    set_secret unused_secret "$unused"
    set_secret used_token "used-token-value"
    needle=${unused:12} # a part a freed block keeps (malloc writes over a block's first bytes)
    freed() { # freed ARGS...: how many blocks paddock ARGS freed with the unused secret in them
        HOME="$TEST_HOME" PATH="$SANDBOX_PATH" LD_PRELOAD="$FREESCAN" FREESCAN_NEEDLE="$needle" \
            timeout -k 5 60 "$PADDOCK" "$@" </dev/null 2>&1 >/dev/null |
            sed -n 's/^freescan: //p' | tail -n 1
    }
    expect_eq "paddock secret list frees no block with a secret in it" 0 "$(freed secret list)"
    expect_eq "... nor does paddock secret set (the vault read and written)" 0 \
        "$(printf 'v\n' | HOME="$TEST_HOME" LD_PRELOAD="$FREESCAN" FREESCAN_NEEDLE="$needle" \
            timeout -k 5 60 "$PADDOCK" secret set another 2>&1 >/dev/null | sed -n 's/^freescan: //p')"
    write_policy "$T/cred.yaml" "version: 1
network:
  rules:
    - {host: api.test, methods: [GET], decision: allow}
credentials:
  - name: api
    provider: static
    value: {secret: used_token}
    hosts: [api.test]
    inject: {header: Authorization, value: \"Bearer {token}\"}
    placeholder: {env: API_TOKEN}"
    expect_eq "... nor does a run whose credential reads the vault (holding another secret)" 0 \
        "$(cd "$WS" && freed run --policy "$T/cred.yaml" -- true)"
fi
