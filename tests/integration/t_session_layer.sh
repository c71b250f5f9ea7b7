#!/usr/bin/env bash
# The session layer across runs: the overlay is mounted "volatile" (no syncfs of the whole
# filesystem at every unmount), so overlayfs leaves a marker that paddock clears once the
# sandbox has ended, or at the next run when paddock was killed before it could; a kept
# layer is durable (synced once) and continues where it was.
. "$(dirname "$0")/lib.sh"
need_userns

marker() { echo "$STATE/sessions/$1/work/work/incompat/volatile"; }

echo one >"$WS/base.txt"
wrun --session lay -- sh -c 'echo from-run-1 > run1.txt'
expect_eq "a first run on a named session exits 0" 0 "$RC"
if [ -e "$(marker lay)" ]; then
    not_ok "no volatile marker is left after a clean run"
else
    ok "no volatile marker is left after a clean run"
fi

# A run that was killed before it could clear the marker (simulated): the next run
# clears it and continues on the layer, silently within the same boot.
mkdir -p "$(marker lay)"
wrun --session lay -- cat run1.txt
expect_eq "after a leftover marker the next run still starts (exit 0)" 0 "$RC"
expect_eq "and sees the layer of the earlier run" "from-run-1" "$OUT"
expect_eq "and says nothing about it within the same boot" "" \
    "$(printf '%s\n' "$ERR" | grep -c 'went down' | sed 's/^0$//')"

# The same, when the marker dates from another boot: a warning names the session.
mkdir -p "$(marker lay)"
"$PYTHON" - "$STATE/sessions/lay/session.json" <<'PY'
import json, sys
p = sys.argv[1]
j = json.load(open(p))
j["boot_id"] = "00000000-0000-0000-0000-000000000000"
json.dump(j, open(p, "w"))
PY
wrun --session lay -- cat run1.txt
expect_eq "a layer left over from another boot still runs (exit 0)" 0 "$RC"
expect_match "and a warning says files written last may be missing" \
    "session lay was in use when the system went down" "$ERR"

pdk diff lay --json
expect_eq "the layer's change survives all of it" '["run1.txt"]' \
    "$(json_get "$OUT" 'sorted(c["path"] for c in j["changes"])')"
pdk discard lay
expect_eq "discard removes the session" 0 "$RC"

# Unnamed runs without changes retire their session with one rename; the next run removes
# what earlier runs retired, so they never pile up.
for i in 1 2 3 4 5; do
    wrun -- true
done
expect_eq "five unchanged unnamed runs exit 0" 0 "$RC"
retired=$(ls -A "$STATE/sessions" | grep -c '^\.removing\.')
if [ "$retired" -le 2 ]; then
    ok "retired sessions are collected by later runs: at most two are left (left: $retired)"
else
    not_ok "retired sessions are collected by later runs: at most two are left (left: $retired)"
fi
expect_eq "none of them shows as a session" "" "$(session_dirs)"
spares=$(ls -A "$STATE/sessions" | grep -c '^\.spare\.[0-9]*$')
if [ "$spares" -ge 1 ] && [ "$spares" -le 2 ]; then
    ok "the idle steps keep spare session directories ready, at most two ($spares)"
else
    not_ok "the idle steps keep spare session directories ready, at most two ($spares)"
fi
expect_eq "paddock sessions lists none of them" "" \
    "$(pdk sessions --json; json_get "$OUT" '" ".join(s["id"] for s in j)')"
