#!/usr/bin/env bash
# t_approval_answers: how an approval was answered is in the audit log whole, the reason
# of `paddock deny --reason` included, for a command asked about as a whole, for an exec
# inside the sandbox and for a network request held at the gateway; and an answer that
# did not come in time is told once.
. "$(dirname "$0")/lib.sh"
need_userns

cat >"$T/p.yaml" <<'EOF'
version: 1
commands:
  rules:
    - {match: [git, push], decision: ask, reason: "publishes code"}
    - {match: [sh, -c, "echo asked*"], decision: ask}
approvals:
  timeout: 30
EOF
sed 's/timeout: 30/timeout: 1/' "$T/p.yaml" >"$T/short.yaml"
# a script: its commands are judged at their exec inside the sandbox, not before
printf 'git push origin main\necho "git exit $?"\n' >"$WS/agent.sh"

# answered_reason ID: the reason of the approval.answered event of request ID ("null" when
# it has none, "missing" when the event lacks the field).
answered_reason() {
    pdk audit --json
    printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
for l in sys.stdin:
    if l.strip():
        e = json.loads(l)
        if e["kind"] == "approval.answered" and e["data"].get("id") == sys.argv[1]:
            d = e["data"]
            print(json.dumps(d["reason"]) if "reason" in d else "missing")' "$1"
}

# An exec inside the sandbox, denied with a reason.
start_until_asked exec --workspace "$WS" --policy "$T/p.yaml" -- sh ./agent.sh
expect_ne "an exec asked about waits" "" "$ID"
pdk deny "$ID" --reason "not from a sandbox"
finish_asked exec
expect_match "denied: the exec fails" "git exit 126" "$(cat "$T/exec.out")"
expect_eq "approval.answered of the exec has the deny's reason" '"not from a sandbox"' \
    "$(answered_reason "$ID")"

# The command as a whole, denied with a reason.
start_until_asked top --workspace "$WS" --policy "$T/p.yaml" -- sh -c 'echo asked'
expect_ne "a command asked about waits" "" "$ID"
pdk deny "$ID" --reason "not today"
finish_asked top
expect_eq "approval.answered of the command has the deny's reason" '"not today"' \
    "$(answered_reason "$ID")"

# No answer in time: told once, whichever way the shell looks for the command.
wrun --policy "$T/short.yaml" -- sh ./agent.sh
expect_match "no answer in time: the exec is denied" "git exit 126" "$OUT"
expect_eq "... and that is told once" 1 "$(printf '%s\n' "$ERR" | grep -c 'no answer to approval')"
wrun --policy "$T/short.yaml" -- sh -c 'echo asked'
expect_eq "no answer in time for the command: exit 126" 126 "$RC"
expect_eq "... told once" 1 "$(printf '%s\n' "$ERR" | grep -c 'no answer to approval')"

# A request held at the gateway, denied with a reason.
if ! command -v curl >/dev/null || [ ! -e "$PADDOCK_BUILD/paddock-gateway.so" ]; then
    skip "a held request's answer in the audit log" "curl or the gateway module is missing"
    exit 0
fi
mkfifo "$T/up.fifo"
"$PYTHON" "$PADDOCK_TOP/tests/integration/upstream.py" >"$T/up.fifo" &
track_pid $!
IFS= read -r -t 30 PORT <"$T/up.fifo"
[ -n "$PORT" ] || bail_out "the test upstream did not start"
cat >"$T/net.yaml" <<EOF
version: 1
network:
  rules:
    - {host: api.test, methods: [PUT], decision: ask, reason: "writes need a human"}
  resolve:
    "api.test:80": "127.0.0.1:$PORT"
approvals: {timeout: 30}
EOF
start_until_asked net --workspace "$WS" --policy "$T/net.yaml" -- \
    sh -c 'curl -sS --max-time 30 -o /dev/null -w "%{http_code}\n" -X PUT -d x http://api.test/v1/a'
expect_ne "a request asked about waits" "" "$ID"
pdk deny "$ID" --reason "no writes today"
finish_asked net
expect_eq "denied: 403" 403 "$(cat "$T/net.out")"
expect_eq "approval.answered of the request has the deny's reason" '"no writes today"' \
    "$(answered_reason "$ID")"
