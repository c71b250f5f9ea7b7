#!/usr/bin/env bash
# t_audit: the command rules on the command of `paddock run` (allow, confine, deny; ask is in
# t_approvals) and the audit log they write: every case shows up in `paddock audit` with its decision and
# rule; `paddock audit verify` passes on the untouched log and names the row after editing,
# deleting or swapping rows with the sqlite3 CLI, or truncating the log; a log cut short
# and written on by another run stays found (STATE/audit-head) until acknowledged with
# `paddock audit acknowledge-truncation`; a spool file edited before it is folded is set
# aside, not folded.
. "$(dirname "$0")/lib.sh"
need_userns
command -v sqlite3 >/dev/null 2>&1 || bail_out "sqlite3 is missing (scripts/bootstrap installs it)"

cat >"$T/p.yaml" <<'EOF'
version: 1
commands:
  default: allow
  rules:
    - match: [rm, "-rf", "/"]
      decision: deny
      reason: "never"
    - match: [touch]
      decision: confine
      reason: "throwaway writes"
    - match: [python3]
      decision: confine
EOF
echo base >"$WS/base.txt"

wrun --policy "$T/p.yaml" -- sh -c 'echo kept > kept.txt'
expect_eq "an allowed command runs" 0 "$RC"
allowed_session=$(report_session)

wrun --policy "$T/p.yaml" -- rm -rf /
expect_eq "a denied command does not run: exit 126" 126 "$RC"
expect_match "... and stderr says why, with the rule" \
    "denied by the policy: never \(rule 1 \(line 5: \[rm, -rf, /\] deny\)\)" "$ERR"
expect_eq "... and no session is made for it" "$allowed_session" "$(session_dirs)"

wrun --policy "$T/p.yaml" -- touch "$WS/confined.txt"
expect_eq "a confined command runs" 0 "$RC"
expect_match "... and paddock says its writes were thrown away" \
    "confined by the policy .*: ran without network; 1 change thrown away" "$ERR"
expect_eq "... and they never reach the workspace, nor a session" "no $allowed_session" \
    "$([ -e "$WS/confined.txt" ] && echo yes || echo no) $(session_dirs)"

cat >"$WS/lo.py" <<'EOF'
import socket
s = socket.socket()
try:
    s.bind(("127.0.0.1", 0)); s.listen()
    socket.create_connection(s.getsockname(), timeout=5); print("connected")
except OSError as e:
    print("errno", e.errno)
EOF
wrun --policy "$T/p.yaml" -- python3 lo.py
expect_eq "a confined command has no network at all, not even loopback (ENETUNREACH)" \
    "errno 101" "$OUT"
wrun -- python3 lo.py
expect_eq "... where an allowed one has loopback" "connected" "$OUT"

wrun --policy "$T/p.yaml" --session keep -- touch x
expect_eq "a confined command with --session is refused (exit 125)" 125 "$RC"
expect_match "... saying why" "thrown away, so --session keep cannot keep it" "$ERR"

pdk audit --json
expect_eq "paddock audit exits 0" 0 "$RC"
events=$OUT
expect_eq "the events, in order: the allowed session, the denied exec, the confined ones, the allowed python" \
    "session.start:allow session.end exec:deny session.start:confine session.end session.start:confine session.end session.start:allow session.end" \
    "$(printf '%s\n' "$events" | "$PYTHON" -c '
import json, sys
out = []
for line in sys.stdin:
    e = json.loads(line)
    d = e["data"].get("decision")
    out.append(e["kind"] + (":" + d if d else ""))
print(" ".join(out))')"
expect_eq "the deny names its rule and reason" "0 never" \
    "$(printf '%s\n' "$events" | sed -n 3p | "$PYTHON" -c '
import json, sys; e = json.loads(sys.stdin.read()); print(e["data"]["rule"], e["data"]["reason"])')"
expect_eq "a session's start holds the policy's hash, its end the exit status" "64 0" \
    "$(printf '%s\n' "$events" | sed -n '1p;2p' | "$PYTHON" -c '
import json, sys
a, b = [json.loads(l) for l in sys.stdin]
print(len(a["data"]["policy_sha256"]), b["data"]["exit_status"])')"
expect_eq "the spool is folded away" "" "$(ls -A "$STATE/audit-spool" 2>/dev/null)"

pdk audit --session "$allowed_session" --json
expect_eq "--session keeps that session's events" 2 "$(printf '%s\n' "$OUT" | grep -c .)"

pdk audit
expect_match "the text listing has one line an event" "session.start" "$OUT"

pdk audit verify
expect_eq "verify: the untouched log is intact (exit 0)" 0 "$RC"
expect_match "... and says how many rows" "intact: 9 rows" "$OUT"

# Tamper with copies of the state dir.
tamper() {
    local name="$1" sql="$2"
    rm -rf "$T/$name"
    cp -a "$STATE" "$T/$name"
    sqlite3 "$T/$name/paddock.db" "$sql" || bail_out "sqlite3 failed: $sql"
    PADDOCK_STATE_DIR="$T/$name" pdk audit verify --json
}

tamper edited "UPDATE audit SET data = replace(data, 'never', 'fine') WHERE seq = 3"
expect_eq "verify: an edited row fails (exit 1) and is named" "1 False 3" \
    "$RC $(json_get "$OUT" '"%s %s" % (j["intact"], j["first_bad_row"])')"
expect_match "... as edited" "row 3 was edited" "$OUT"

tamper deleted "DELETE FROM audit WHERE seq = 5"
expect_eq "verify: a deleted row is named" "1 5" "$RC $(json_get "$OUT" 'j["first_bad_row"]')"
expect_match "... as missing" "row 5 is missing" "$OUT"

tamper swapped "UPDATE audit SET seq = -1 WHERE seq = 2; UPDATE audit SET seq = 2 WHERE seq = 4; UPDATE audit SET seq = 4 WHERE seq = -1"
expect_eq "verify: swapped rows are named at the first" "1 2" \
    "$RC $(json_get "$OUT" 'j["first_bad_row"]')"

tamper truncated "DELETE FROM audit WHERE seq >= 8"
expect_eq "verify: rows deleted at the end are named" "1 8" \
    "$RC $(json_get "$OUT" 'j["first_bad_row"]')"

pdk audit verify
expect_eq "the original stays intact" 0 "$RC"

# Rows deleted from the end and the table's own record of its end edited to match: the end
# recorded outside the table still finds it, and goes on finding it after another run has
# written on from the cut, until a human acknowledges it.
cut="$T/cut"
cp -a "$STATE" "$cut"
sqlite3 "$cut/paddock.db" "DELETE FROM audit WHERE seq >= 8; UPDATE meta SET value =
    (SELECT seq || ' ' || hash FROM audit WHERE seq = 7) WHERE key = 'audit_head'" ||
    bail_out "sqlite3 failed to cut the log"
PADDOCK_STATE_DIR="$cut" pdk audit verify --json
expect_eq "verify: a cut log whose table agrees with itself is found (exit 1, at row 8)" "1 8" \
    "$RC $(json_get "$OUT" 'j["first_bad_row"]')"
expect_match "... as cut, saying what to do" \
    "the log was cut: it reached row 9 .* and ends at row 7 now; .*paddock audit acknowledge-truncation" \
    "$OUT"
PADDOCK_STATE_DIR="$cut" wrun -- true
expect_eq "a run after the cut works" 0 "$RC"
PADDOCK_STATE_DIR="$cut" pdk audit verify --json
expect_eq "verify: still found after that run wrote on from the cut (rows 8, 9 anew)" "1 False 9" \
    "$RC $(json_get "$OUT" '"%s %s" % (j["intact"], j["first_bad_row"])')"
expect_match "... as cut and written on" "row 9 is not the row audit-head records" "$OUT"
PADDOCK_STATE_DIR="$cut" pdk audit --json
expect_eq "paddock audit still lists the events (exit 0)" "0 9" "$RC $(printf '%s\n' "$OUT" | grep -c .)"
expect_match "... and warns on stderr that the log was cut" "^paddock: warning: the log was cut" "$ERR"
PADDOCK_STATE_DIR="$cut" pdk audit acknowledge-truncation --json
expect_eq "acknowledge-truncation records what it found (exit 0)" "0 True 9 9 10" \
    "$RC $(json_get "$OUT" '"%s %s %s %s" % (j["acknowledged"], j["recorded_end"], j["found_end"], j["event_seq"])')"
PADDOCK_STATE_DIR="$cut" pdk audit verify
expect_eq "verify: intact once acknowledged" "0" "$RC"
PADDOCK_STATE_DIR="$cut" pdk audit --json
expect_match "... the acknowledgement is in the log, with who made it" \
    '"by":"uid [0-9]+[^"]* via paddock audit acknowledge-truncation".*"kind":"audit.truncation_acknowledged"' \
    "$(printf '%s\n' "$OUT" | tail -n 1)"
PADDOCK_STATE_DIR="$cut" wrun -- true
PADDOCK_STATE_DIR="$cut" pdk audit verify
expect_eq "... and the log goes on intact after it" "0" "$RC"
PADDOCK_STATE_DIR="$cut" pdk audit acknowledge-truncation
expect_match "acknowledging a log that is not cut does nothing" "nothing to acknowledge" "$OUT"
pdk audit acknowledge-truncation --help
expect_match "acknowledge-truncation --help says what it does (exit 0)" \
    "^0 .*paddock audit acknowledge-truncation \[--json\]" "$RC $OUT"
pdk audit acknowledge-truncation now
expect_eq "... and refuses an operand (exit 2)" 2 "$RC"

# A spool file edited before it is folded.
wrun -- true
spool=$(ls "$STATE/audit-spool"/*.jsonl)
sed -i 's/"true"/"evil"/' "$spool"
pdk audit --json
expect_match "an edited spool file is not folded: an audit.spool_damaged event says so" \
    '"kind":"audit.spool_damaged"' "$OUT"
expect_no_match "... and none of its events enters the log" '"evil"' "$OUT"
expect_eq "... and the file is set aside" 1 "$(ls "$STATE/audit-spool" | grep -c '\.damaged$')"
pdk audit verify
expect_eq "the log itself stays intact" 0 "$RC"

# Reviews are recorded too: diff, commit (before and after), discard.
pdk diff "$allowed_session"
pdk commit "$allowed_session"
expect_eq "commit of the allowed session works" "0 kept" "$RC $(cat "$WS/kept.txt")"
wrun --session todiscard -- sh -c 'echo y > y.txt'
pdk discard todiscard
pdk audit --json --session "$allowed_session"
expect_eq "the review of a session is in its events" \
    "session.start session.end workspace.diff workspace.commit workspace.committed" \
    "$(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys; print(" ".join(json.loads(l)["kind"] for l in sys.stdin if l.strip()))')"
expect_eq "the commit lists what it applied" '[{"path": "kept.txt", "status": "added"}]' \
    "$(printf '%s\n' "$OUT" | tail -n 1 | "$PYTHON" -c '
import json, sys; print(json.dumps(json.loads(sys.stdin.read())["data"]["applied"]))')"
pdk audit --json --session todiscard
expect_match "a discard is recorded before the session goes" '"kind":"workspace.discard"' "$OUT"
pdk audit verify
expect_eq "the log verifies after all of it" 0 "$RC"
