#!/usr/bin/env bash
# t_exec_rules: the command rules at every exec inside the sandbox, for an agent-like script
# that `paddock run` allows as a whole: its allowed commands run, a denied one fails with
# EACCES and the reason on its stderr, an asked one waits until another process approves
# (or denies) it, a confined one runs (its writes stay in the session layer), commands run
# through sh -c inside are split and judged too, and every exec is in the audit log.
. "$(dirname "$0")/lib.sh"
need_userns

cat >"$T/p.yaml" <<'EOF'
version: 1
commands:
  rules:
    - {match: [rm, "-rf", "/"], decision: deny, reason: "never"}
    - {match: [git, push], decision: ask, reason: "publishes code"}
    - {match: [touch], decision: confine}
    - {match: [python3], decision: deny, reason: "no python here"}
approvals:
  timeout: 20
EOF
sed 's/timeout: 20/timeout: 1/' "$T/p.yaml" >"$T/short.yaml"
cat >"$WS/agent.sh" <<'EOF'
/bin/echo allowed
rm -rf /
echo "rm exit $?"
sh -c 'true; python3 -c "print(1)"'
echo "python exit $?"
touch "$PWD/confined.txt"
echo "touch exit $?"
git push origin main
echo "git exit $?"
EOF

wrun --policy "$T/short.yaml" -- sh ./agent.sh
expect_eq "the script as a whole is allowed and runs to its end" 0 "$RC"
expect_match "an asked one nobody answers is denied at the timeout" "git exit 126" "$OUT"
expect_eq "... asked once, though the shell tries each directory of PATH" 1 \
    "$(printf '%s\n' "$ERR" | grep -c 'needs a human')"
expect_match "an allowed command runs" "^allowed$" "$(printf '%s\n' "$OUT" | head -n 1)"
expect_match "a denied one fails with EACCES (exit 126 from the shell)" "rm exit 126" "$OUT"
expect_match "... and its stderr says why, with the rule" \
    "paddock: denied by the policy: never \(rule 1 \(line 4: \[rm, -rf, /\] deny\)\)" "$ERR"
expect_eq "... once" 1 "$(printf '%s\n' "$ERR" | grep -c 'denied by the policy: never')"
expect_match "a command of an sh -c inside is judged too" "python exit 126" "$OUT"
expect_match "a confined one runs" "touch exit 0" "$OUT"

# An asked one waits for the answer of another process.
(cd "$WS" && HOME="$TEST_HOME" timeout -k 5 60 "$PADDOCK" run --workspace "$WS" \
    --policy "$T/p.yaml" -- sh ./agent.sh </dev/null >"$T/bg.out" 2>"$T/bg.err"
 echo $? >"$T/bg.rc") &
bg=$!
track_pid "$bg"
id=""
for _ in $(seq 200); do
    pdk approvals --json
    id=$(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
for l in sys.stdin:
    if l.strip():
        j = json.loads(l)
        if j["argv"][:2] == ["git", "push"]: print(j["id"]); break' 2>/dev/null)
    [ -n "$id" ] && break
    sleep 0.1
done
expect_ne "an asked exec makes a request" "" "$id"
pdk approvals --json
expect_eq "... naming the exec's argv, its pid and its parents" "git push True True" \
    "$(json_get "$OUT" '"%s %s %s %s" % (j["argv"][0], j["argv"][1], j["pid"] > 1, len(j["parents"]) > 0)')"
pdk deny "$id" --reason "not from here"
wait "$bg" 2>/dev/null
expect_match "denied: the exec fails" "git exit 126" "$(cat "$T/bg.out")"
expect_match "... and the process's stderr says who and why" "denied by uid .*: not from here" \
    "$(cat "$T/bg.err")"

pdk audit --json
expect_eq "every exec is in the audit log with its decision" \
    "True True True True" \
    "$(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
ex = [json.loads(l) for l in sys.stdin if l.strip()]
ex = [e["data"] for e in ex if e["kind"] == "exec"]
def has(word, decision):
    return any(word in " ".join(d["argv"]) and d["decision"] == decision for d in ex)
print(has("allowed", "allow"), has("rm -rf /", "deny"), has("touch", "confine"), has("git push", "ask"))')"
pdk audit verify
expect_eq "and the log verifies" 0 "$RC"

# Without command rules there is no listener: nothing is judged or recorded per exec.
wrun -- sh -c '/bin/true; /bin/true'
pdk audit --json
expect_eq "no rules, no exec events" 0 \
    "$(printf '%s\n' "$OUT" | tail -n 2 | grep -c '"kind":"exec"')"

# A nested confine: that process and its descendants lose the network (connects refused),
# others keep it.
cat >"$T/confine.yaml" <<'YAML'
version: 1
commands:
  rules:
    - {match: [sh, -c, "python3*"], decision: confine}
YAML
cat >"$WS/lo.py" <<'PY'
import socket
s = socket.socket()
try:
    s.bind(("127.0.0.1", 0)); s.listen()
    socket.create_connection(s.getsockname(), timeout=5); print("connected")
except OSError as e:
    print("errno", e.errno)
PY
printf 'python3 lo.py\nsh -c "python3 lo.py"\nsh -c "python3 lo.py; true"\n' >"$WS/net.sh"
wrun --policy "$T/confine.yaml" -- sh ./net.sh
expect_eq "a process outside the confined one keeps loopback" "connected" \
    "$(printf '%s\n' "$OUT" | sed -n 1p)"
expect_eq "the confined one is refused (ECONNREFUSED)" "errno 111" "$(printf '%s\n' "$OUT" | sed -n 2p)"
expect_eq "... and so is its child" "errno 111" "$(printf '%s\n' "$OUT" | sed -n 3p)"
pdk audit --json
expect_match "a refused connect is in the audit log" '"kind":"connect.refused"' "$OUT"

# The listener reads argv in full: more arguments than its first read takes, and ones
# longer than it reads at once, crossing pages; recorded as given.
cat >"$T/any.yaml" <<'YAML'
version: 1
commands:
  rules:
    - {match: [no-such-tool], decision: deny}
YAML
"$PYTHON" -c '
import json, sys
args = ["/bin/true"] + ["a%d" % i for i in range(40)] + ["x" * 5000, "", "y" * 300, "end"]
json.dump(args, open(sys.argv[1], "w"))' "$WS/argv.json"
cat >"$WS/many.py" <<'PY'
import json, os
args = json.load(open("argv.json"))
os.execv(args[0], args)
PY
wrun --policy "$T/any.yaml" -- python3 many.py
expect_eq "an exec with 45 arguments, long ones among them, runs" 0 "$RC"
pdk audit --json
expect_eq "... and its argv is recorded exactly" "True" "$(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
want = json.load(open(sys.argv[1]))
ex = [json.loads(l)["data"] for l in sys.stdin if l.strip()]
print(any(e.get("argv") == want for e in ex))' "$WS/argv.json")"

# A shell script run inside that sources a file is judged with the file's text as the
# sandbox sees it: a builtin the file runs (which no exec would show) counts like the
# script's own; a file paddock cannot read for it (/dev/stdin: the script's input) leaves
# the script to be judged as a whole.
cat >"$T/sourced.yaml" <<'YAML'
version: 1
commands:
  rules:
    - {match: [kill], decision: deny, reason: "no signals"}
approvals:
  timeout: 1
YAML
printf 'true\n' >"$WS/quiet.sh"
printf 'kill -0 $$\n' >"$WS/signal.sh"
cat >"$WS/outer.sh" <<EOF
bash -c '. $WS/quiet.sh && echo sourced'
echo "quiet exit \$?"
bash -c 'source "$WS/signal.sh"; echo signalled'
echo "signal exit \$?"
echo true | bash -c '. /dev/stdin && echo stdin'
echo "stdin exit \$?"
EOF
wrun --policy "$T/sourced.yaml" -- sh ./outer.sh
expect_match "a script sourcing a file of harmless commands runs, unasked" \
    "^sourced
quiet exit 0" "$OUT"
expect_match "one sourcing a file that runs a denied builtin is refused by that rule" \
    "signal exit 126" "$OUT"
expect_match "... its stderr says which" "paddock: denied by the policy: no signals \(rule 1 " "$ERR"
expect_match "one sourcing its stdin is judged as a whole: it asks (here: nobody answers)" \
    "stdin exit 126" "$OUT"
expect_eq "... the only approval asked" 1 "$(printf '%s\n' "$ERR" | grep -c 'needs a human')"
