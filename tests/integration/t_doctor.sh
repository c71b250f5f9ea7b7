#!/usr/bin/env bash
# t_doctor: `paddock doctor` says what this kernel offers. Here (user namespaces work) it
# exits 0; --json is valid JSON naming userns, landlock (with its ABI), seccomp, overlay,
# cgroup and tiocsti.
. "$(dirname "$0")/lib.sh"
need_userns

pdk doctor
expect_eq "doctor exits 0" 0 "$RC"
expect_ne "doctor prints a report" "" "$OUT$ERR"

pdk doctor --json
expect_eq "doctor --json exits 0" 0 "$RC"
JSON=$OUT
if json_get "$JSON" 'True' >/dev/null 2>&1; then
    ok "doctor --json is valid JSON"
else
    not_ok "doctor --json is valid JSON"
    _diag_last_run
fi

# find KEY: the first value under KEY anywhere in the document (an object key, or an item
# of a list of checks whose "name" is KEY), as JSON; nothing when there is none.
find_key() {
    "$PYTHON" -c '
import json, sys
def find(node, key):
    if isinstance(node, dict):
        if key in node:
            return node[key], True
        if node.get("name") == key:
            return node, True
        for v in node.values():
            r, hit = find(v, key)
            if hit:
                return r, True
    elif isinstance(node, list):
        for v in node:
            r, hit = find(v, key)
            if hit:
                return r, True
    return None, False
value, hit = find(json.loads(sys.argv[1]), sys.argv[2])
if hit:
    print(json.dumps(value, sort_keys=True))
' "$JSON" "$1" 2>/dev/null
}

for key in userns landlock seccomp overlay cgroup tiocsti; do
    expect_ne "doctor --json reports $key" "" "$(find_key "$key")"
done

abi=$(landlock_abi)
landlock=$(find_key landlock)
reported_abi=$("$PYTHON" -c '
import json, sys
v = json.loads(sys.argv[1])
if isinstance(v, dict):
    v = v.get("abi")
print(v if isinstance(v, int) and not isinstance(v, bool) else "")
' "${landlock:-null}" 2>/dev/null)
if [ "$abi" -gt 0 ]; then
    expect_eq "doctor --json: the Landlock ABI is the kernel's" "$abi" "$reported_abi"
else
    expect_match "doctor --json: no Landlock here, ABI 0 or none" '^0?$' "$reported_abi"
fi
