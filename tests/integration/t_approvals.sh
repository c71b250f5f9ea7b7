#!/usr/bin/env bash
# t_approvals: a command the policy asks about waits, running nothing, until another process
# answers: approve runs it, deny refuses it with the reason (exit 126), no answer in time
# follows approvals.on_timeout, --always lets the same rule's commands of that session run
# without asking again. A request shows who asked (session, pid, parents), what (argv,
# cwd), which rule and since when; answering one twice, or one that does not exist, is a
# clear error. Every step is in the audit log.
. "$(dirname "$0")/lib.sh"
need_userns

cat >"$T/p.yaml" <<'EOF'
version: 1
commands:
  rules:
    - match: [sh, -c, "echo asked*"]
      decision: ask
      reason: "needs a human"
approvals:
  timeout: 20
EOF
cat >"$T/short.yaml" <<'EOF'
version: 1
commands:
  rules:
    - {match: [sh, -c, "echo asked*"], decision: ask}
approvals:
  timeout: 1
  on_timeout: deny
EOF
cat >"$T/lenient.yaml" <<'EOF'
version: 1
commands:
  rules:
    - {match: [sh, -c, "echo asked*"], decision: ask}
approvals:
  timeout: 1
  on_timeout: allow
EOF

# start_asking POLICY [RUN-ARGS...]: paddock run in the background, its output in $T/bg.*;
# waits until its request is pending and sets ID.
start_asking() {
    local policy="$1"
    shift
    (cd "$WS" && HOME="$TEST_HOME" timeout -k 5 60 "$PADDOCK" run --workspace "$WS" \
        --policy "$policy" "$@" </dev/null >"$T/bg.out" 2>"$T/bg.err"; echo $? >"$T/bg.rc") &
    BG=$!
    track_pid "$BG"
    ID=""
    for _ in $(seq 100); do
        pdk approvals --json
        ID=$(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
for line in sys.stdin:
    if line.strip():
        print(json.loads(line)["id"]); break' 2>/dev/null)
        [ -n "$ID" ] && return 0
        sleep 0.1
    done
    return 1
}

finish_asking() {
    wait "$BG" 2>/dev/null
    BGRC=$(cat "$T/bg.rc" 2>/dev/null)
    BGOUT=$(cat "$T/bg.out")
    BGERR=$(cat "$T/bg.err")
}

start_asking "$T/p.yaml" -- sh -c 'echo asked one > one.txt; echo asked one'
expect_ne "an asked command makes a pending request" "" "$ID"
expect_eq "... and runs nothing meanwhile" "no" "$([ -e "$WS/one.txt" ] && echo yes || echo no)"
pdk approvals --json
expect_eq "the request shows who, what, which rule and since when" \
    "True True sh $WS True needs a human pending" \
    "$(json_get "$OUT" '"%s %s %s %s %s %s %s" % (j["session"] is not None, j["pid"] > 1, j["argv"][0], j["cwd"], "rule 1 (line 4" in j["rule"], j["reason"], j["state"])')"
expect_ne "... with the asker's parent chain" "0" "$(json_get "$OUT" 'len(j["parents"])')"
pdk approvals
expect_match "the text listing names the request" "$ID" "$OUT"
pdk approve "$ID"
expect_eq "approve exits 0" 0 "$RC"
finish_asking
expect_eq "approved: the command runs" "0 asked one" "$BGRC $BGOUT"
pdk approve "$ID"
expect_eq "answering twice is refused (exit 1)" 1 "$RC"
expect_match "... saying how it was answered" "was approved already by uid" "$ERR"
pdk deny ffffffffffffffff
expect_eq "an unknown request is refused (exit 1)" 1 "$RC"
expect_match "... saying so" "no approval request ffffffffffffffff" "$ERR"

start_asking "$T/p.yaml" -- sh -c 'echo asked two'
pdk deny "$ID" --reason "not today"
expect_eq "deny exits 0" 0 "$RC"
finish_asking
expect_eq "denied: exit 126, nothing ran" "126 " "$BGRC $BGOUT"
expect_match "... and the asker reads who denied it and why" "denied by uid .*: not today" "$BGERR"

wrun --policy "$T/short.yaml" -- sh -c 'echo asked three'
expect_eq "no answer in time, on_timeout deny: exit 126" 126 "$RC"
expect_match "... saying so" "no answer to approval [0-9a-f]+ in 1s: denied" "$ERR"
wrun --policy "$T/lenient.yaml" -- sh -c 'echo asked four'
expect_eq "no answer in time, on_timeout allow: it runs" "0 asked four" "$RC $OUT"

start_asking "$T/p.yaml" --session s1 -- sh -c 'echo asked five'
pdk approve "$ID" --always
expect_match "approve --always says so" "always" "$OUT"
finish_asking
expect_eq "approved always: it runs" "0 asked five" "$BGRC $BGOUT"
wrun --policy "$T/p.yaml" --session s1 -- sh -c 'echo asked six'
expect_eq "... and the same rule in that session runs without asking" "0 asked six" "$RC $OUT"
expect_no_match "... (no request made)" "needs a human" "$ERR"

pdk approvals --all --json
expect_eq "--all lists the answered and expired ones too" \
    "approved denied expired expired approved" \
    "$(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
print(" ".join(json.loads(l)["state"] for l in sys.stdin if l.strip()))')"

pdk audit --json
expect_eq "the audit log has every request and answer" \
    "asked:approved asked:denied asked:expired asked:expired asked:approved always:" \
    "$(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
out = []
for l in sys.stdin:
    e = json.loads(l)
    if e["kind"] == "approval.asked": out.append("asked:")
    elif e["kind"] == "approval.answered":
        d = e["data"]
        if "how" in d: out.append("always:")
        else: out[-1] += d["state"]
print(" ".join(out))')"
pdk audit verify
expect_eq "and it verifies" 0 "$RC"

# A state store of an older schema (1: approvals without the request column, nor the index
# on the events' time of 3) is brought to the current one when opened, keeping its rows.
old="$T/old-state"
mkdir -m 700 "$old"
sqlite3 "$old/paddock.db" "PRAGMA journal_mode=WAL;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE audit (seq INTEGER PRIMARY KEY, time_ns INTEGER NOT NULL, session TEXT,
  kind TEXT NOT NULL, data TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
CREATE INDEX audit_session ON audit (session, seq);
CREATE TABLE approvals (id TEXT PRIMARY KEY, session TEXT, pid INTEGER, parents TEXT NOT NULL,
  argv TEXT NOT NULL, cwd TEXT, rule TEXT, reason TEXT, created_ns INTEGER NOT NULL,
  state TEXT NOT NULL, answered_ns INTEGER, answered_by TEXT, answer_reason TEXT,
  always INTEGER NOT NULL DEFAULT 0);
CREATE TABLE spool (name TEXT PRIMARY KEY, offset INTEGER NOT NULL, last_hash TEXT NOT NULL);
INSERT INTO approvals (id, session, pid, parents, argv, cwd, rule, reason, created_ns, state)
  VALUES ('00112233aabbccdd', 's', 7, '[]', '[\"git\",\"push\"]', '/w', 'rule 1', 'r', 1, 'pending');
PRAGMA user_version=1;" >/dev/null
PADDOCK_STATE_DIR="$old" pdk approvals --json
expect_eq "a schema-1 store opens, its requests listed" "0 00112233aabbccdd" \
    "$RC $(json_get "$OUT" 'j["id"]')"
expect_eq "... and is brought to schema 3 (the request column, the index on the events' time)" \
    "3 1 1" \
    "$(sqlite3 "$old/paddock.db" 'PRAGMA user_version') $(sqlite3 "$old/paddock.db" "SELECT count(*) FROM pragma_table_info('approvals') WHERE name = 'request'") $(sqlite3 "$old/paddock.db" "SELECT count(*) FROM sqlite_master WHERE name = 'audit_time'")"
