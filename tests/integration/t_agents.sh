#!/usr/bin/env bash
# t_agents: real coding agents inside paddock, with the shipped policies
# (examples/codex.yaml, examples/claude-code.yaml: their command rules included, a shorter
# approval timeout, so that a run that waits fails fast) and only the test's upstream added: Codex
# CLI (`codex exec`) and Claude Code (`claude -p`), from npm (pinned in tests/node), against
# the fake model API (tests/fixtures/fake_model_api.py) standing for api.openai.com and
# api.anthropic.com on 127.0.0.1 behind TLS with a test CA. The sandbox holds placeholders;
# the gateway injects the real keys from the vault. Each agent completes a task (a file
# written with its own tool, seen in `paddock diff`), over the Responses API's WebSocket
# and over SSE for Codex, the Messages API over SSE for Claude Code; the fake received the
# real keys; no sandbox process, file or output holds them; nothing waited for a human (the
# agents' own shells, their snapshots of the login shell included, are judged command by
# command); a second run of the same agent (another session) continues the first
# conversation from its persistent home, where its placeholders are kept too (Claude Code's
# approval of its key holds). A `git push` Codex runs for the model waits for a human, who
# refuses it, and the model is told.
. "$(dirname "$0")/lib.sh"
need_userns
[ -e "$PADDOCK_BUILD/paddock-gateway.so" ] || bail_out "paddock-gateway.so is not built"

NM=$PADDOCK_TOP/tests/node/node_modules
CODEX=$NM/.bin/codex
# The platform package's binary (npm ci --ignore-scripts skips the wrapper's postinstall,
# which only copies it over the wrapper's placeholder).
CLAUDE=$NM/@anthropic-ai/claude-code-linux-x64/claude
command -v node >/dev/null || skip_all_optional "node is not installed (scripts/bootstrap)"
[ -x "$CODEX" ] && [ -x "$CLAUDE" ] ||
    skip_all_optional "Codex CLI or Claude Code is not in tests/node/node_modules (scripts/bootstrap: npm ci in tests/node)"
"$CODEX" --version >/dev/null 2>&1 && "$CLAUDE" --version >/dev/null 2>&1 ||
    skip_all_optional "Codex CLI or Claude Code does not run here: $("$CODEX" --version 2>&1 | tail -n1) $("$CLAUDE" --version 2>&1 | tail -n1)"

OPENAI_KEY="sk-proj-real-$RANDOM$RANDOM$RANDOM"
ANTHROPIC_KEY="sk-ant-api03-real-$RANDOM$RANDOM$RANDOM"
set_secret openai_api_key "$OPENAI_KEY"
set_secret anthropic_api_key "$ANTHROPIC_KEY"
feishu_certs api.openai.com api.anthropic.com

fifo=$T/.fake.port
mkfifo "$fifo" "$T/held" "$T/release"
FAKE_OPENAI_KEY=$OPENAI_KEY FAKE_ANTHROPIC_KEY=$ANTHROPIC_KEY "$PYTHON" \
    "$PADDOCK_TOP/tests/fixtures/fake_model_api.py" --tls "$T/fs.pem" "$T/fs.key" --log "$T/fake.log" \
    --hold "$T/held" "$T/release" >"$fifo" 2>"$T/fake.err" &
track_pid $!
PORT=""
IFS= read -r -t 30 PORT <"$fifo"
[ -n "$PORT" ] || bail_out "the fake model API did not start: $(cat "$T/fake.err")"

# policy EXAMPLE OUT: the example with the test's upstream (resolve, upstream_ca) and the
# clients bound in (a checkout under /tmp is not visible in a sandbox, whose /tmp is its own).
policy() {
    "$PYTHON" - "$PADDOCK_TOP/examples/$1" "$PORT" "$T/ca.pem" "$NM" >"$2" <<'PY'
import sys
text, port, ca, nm = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3], sys.argv[4]
extra = ('  resolve: {"api.openai.com:443": "127.0.0.1:%s", "api.anthropic.com:443": "127.0.0.1:%s"}\n'
         '  upstream_ca: [%s]\n' % (port, port, ca))
assert "network:\n" in text and "  read_allow: [~/.gitconfig]\n" in text
assert "commands:\n" in text and "approvals:\n  timeout: 15m\n" in text
text = text.replace("network:\n", "network:\n" + extra, 1)
text = text.replace("approvals:\n  timeout: 15m\n", "approvals:\n  timeout: 30s\n", 1)
text = text.replace("  read_allow: [~/.gitconfig]\n", "  read_allow: [~/.gitconfig, %s]\n" % nm, 1)
print(text, end="")
PY
}
policy codex.yaml "$T/codex.yaml"
policy claude-code.yaml "$T/claude.yaml"

# The keys must never be shown, not even in a failing test's output: the checks below
# compare, they do not print.
secrets() { printf '%s\n' "$OPENAI_KEY" "$ANTHROPIC_KEY"; }
holds_key() { # holds_key TEXT: yes when TEXT holds a real key
    case "$1" in *"$OPENAI_KEY"* | *"$ANTHROPIC_KEY"*) echo yes ;; *) echo no ;; esac
}
# log_count FILTER: lines of the fake's log for which the Python expression FILTER (on l)
# holds.
log_count() {
    "$PYTHON" - "$T/fake.log" "$1" "$OPENAI_KEY" "$ANTHROPIC_KEY" <<'PY'
import hashlib, json, sys
openai, anthropic = (hashlib.sha256(k.encode()).hexdigest() for k in sys.argv[3:5])
print(sum(1 for line in open(sys.argv[1]) for l in [json.loads(line)] if eval(sys.argv[2])))
PY
}

# run_agent NAME POLICY ARGV...: the agent in the background on $WS, held by the fake after
# its tool call (its authenticated requests made): its memory and files are scanned from
# outside meanwhile (SCAN: "processes found files found"), then it goes on; its stdout in
# AGENT_OUT, paddock's and its stderr in AGENT_ERR, the exit in AGENT_RC.
run_agent() {
    local name=$1 started=$SECONDS
    shift
    start_bg "$name.fifo" --timeout 150 --workspace "$WS" "$@"
    # An agent that ends without being held (it failed early) ends the wait too.
    (timeout 170 tail --pid="$BG_PID" -f /dev/null; echo "ended" >"$T/held") &
    local watcher=$! held=""
    track_pid "$watcher"
    IFS= read -r -t 170 held <"$T/held"
    kill "$watcher" 2>/dev/null
    SCAN=""
    if [ "${held#held }" != "$held" ]; then
        SCAN=$(secrets | "$PYTHON" "$PADDOCK_TOP/tests/integration/memscan.py" "$BG_PID" \
            --files /tmp /run /dev/shm "$TEST_HOME" "$WS" 2>"$T/scan.err")
        echo go >"$T/release"
    fi
    AGENT_OUT=$(timeout 160 cat <&"$BG_FD")
    exec {BG_FD}<&-
    wait "$BG_PID" # (bounded: paddock run --timeout)
    AGENT_RC=$?
    AGENT_ERR=$(cat "$BG_ERR")
    _last_cmd="$name (${held:-never held}, $((SECONDS - started)) s)"
    RC=$AGENT_RC OUT=$AGENT_OUT ERR=$AGENT_ERR
}
# run_plain NAME POLICY ARGV...: the agent, not held (no tool call expected).
run_plain() {
    local name=$1
    shift
    _last_cmd=$name
    cd "$WS" || return 1
    HOME="$TEST_HOME" PATH="$SANDBOX_PATH" LANG="$SANDBOX_LANG" timeout -k 5 180 \
        "$PADDOCK" run --timeout 150 --workspace "$WS" "$@" </dev/null >"$T/plain.out" 2>"$T/plain.err"
    RC=$?
    cd - >/dev/null || return 1
    AGENT_OUT=$(cat "$T/plain.out") AGENT_ERR=$(cat "$T/plain.err")
    OUT=$AGENT_OUT ERR=$AGENT_ERR
}
# session_of TEXT: the session a run's stderr names.
session_of() {
    printf '%s\n' "$1" | sed -nE 's/^paddock: session ([^ ]+): .*/\1/p' | tail -n1
}
# asked SESSION: the command lines the session's approvals asked about, one a line.
asked() {
    HOME="$TEST_HOME" timeout 60 "$PADDOCK" audit --json </dev/null | "$PYTHON" -c '
import json, sys
for line in sys.stdin:
    e = json.loads(line)
    if e["session"] == sys.argv[1] and e["kind"] == "approval.asked":
        print(" ".join(e["data"].get("argv") or []).replace("\n", " "))' "$1"
}
# expect_unasked NAME SESSION: nothing of the session waited for a human.
expect_unasked() {
    expect_eq "... nothing waited for a human (the agent's own shells included)" "" \
        "$(asked "$2" | cut -c1-300)"
}
# expect_task NAME FILE TEXT TOOL API: the agent's run completed its task: exit 0, its last
# line "Done: wrote FILE.", FILE with TEXT in the session's diff, written with the agent's
# own TOOL; every request of API carried the real key; while held, nothing inside held it;
# no approval was asked.
expect_task() {
    local name=$1 file=$2 text=$3 tool=$4 api=$5 session
    expect_eq "$name: the task completes (exit 0, its last message)" "0 Done: wrote $file." \
        "$AGENT_RC $(printf '%s\n' "$AGENT_OUT" | tail -n1)"
    session=$(session_of "$AGENT_ERR")
    expect_unasked "$name" "$session"
    pdk diff "$session"
    expect_match "... its file shows in paddock diff" "\+\+\+ b/$file.*\+$text" "$(printf '%s' "$OUT" | tr '\n' ' ')"
    expect_eq "... written by its own tool ($tool, running inside)" 1 \
        "$(log_count "l['api'] == '$api' and l['turn'] == 'tool_call' and l['tool'] == '$tool'")"
    expect_eq "... the fake never got a request without the real key" 0 "$(log_count 'not l["key_ok"]')"
    read -r procs in_procs files in_files <<<"$SCAN"
    expect_eq "... while it waited: no sandbox process (of $procs) holds a real key in its memory, environment or argv" \
        0 "${in_procs:-unscanned}"
    expect_eq "... nor a file it sees (of $files: /tmp, /run, /dev/shm, its home, the workspace)" 0 "${in_files:-unscanned}"
    expect_eq "... nor its output, nor paddock's" no "$(holds_key "$AGENT_OUT$AGENT_ERR")"
}

CODEX_FLAGS=(exec --skip-git-repo-check --sandbox danger-full-access)
nonce=$RANDOM$RANDOM

# ---- Codex CLI over the Responses API's WebSocket -------------------------------------------
run_agent codex --policy "$T/codex.yaml" -- "$CODEX" "${CODEX_FLAGS[@]}" \
    "Write the file codex.txt containing exactly: codex $nonce"
expect_task "codex exec" codex.txt "codex $nonce" exec openai
expect_eq "... over the Responses API's WebSocket, with the real key (upgrade and every turn)" yes \
    "$([ "$(log_count 'l["api"] == "openai" and l["transport"] == "websocket" and l["key_sha256"] == openai')" -ge 3 ] && echo yes)"
expect_match "... its state is in the persistent home" '^[1-9]' \
    "$(find "$STATE/homes/codex/.codex/sessions" -name '*.jsonl' 2>/dev/null | wc -l)"

run_plain codex-resume --policy "$T/codex.yaml" -- "$CODEX" "${CODEX_FLAGS[@]}" resume --last \
    "Which file did I ask for?"
expect_eq "a second run of codex (another session) resumes the first conversation" \
    "0 Earlier you asked for codex.txt." "$RC $(printf '%s\n' "$AGENT_OUT" | tail -n1)"
expect_unasked codex-resume "$(session_of "$AGENT_ERR")"
expect_eq "... the fake received the first prompt again, from Codex's saved session" 1 \
    "$(log_count "l['api'] == 'openai' and l['turn'] == 'text' and 'codex $nonce' in json.dumps(l['body'])")"

# ---- Codex CLI over SSE (a provider without the WebSocket mode) -------------------------------
run_plain codex-sse --policy "$T/codex.yaml" -- "$CODEX" "${CODEX_FLAGS[@]}" \
    -c 'model_providers.openai-sse={name="OpenAI over SSE", base_url="https://api.openai.com/v1", env_key="CODEX_API_KEY", supports_websockets=false}' \
    -c model_provider=openai-sse "Write the file sse.txt containing exactly: sse $nonce"
expect_eq "codex exec over SSE: the task completes" "0 Done: wrote sse.txt." \
    "$RC $(printf '%s\n' "$AGENT_OUT" | tail -n1)"
expect_eq "... over POST /v1/responses as server-sent events, with the real key" yes \
    "$([ "$(log_count 'l["transport"] == "sse" and l["path"] == "/v1/responses" and l["key_sha256"] == openai')" -ge 2 ] && echo yes)"
sse_session=$(session_of "$AGENT_ERR")
expect_unasked codex-sse "$sse_session"
pdk diff "$sse_session"
expect_match "... its file shows in paddock diff" "\+sse $nonce" "$OUT"

# ---- Codex runs a git push the model asks for: the rule holds it for a human ----------------
start_bg codex-push.fifo --timeout 150 --workspace "$WS" --policy "$T/codex.yaml" -- \
    "$CODEX" "${CODEX_FLAGS[@]}" "Run the command: git push origin main"
# The approval's notice on paddock's stderr (an event: bounded by the run's own timeout).
notice=$(timeout 170 grep -m1 -E 'approval [0-9a-f]+: ' < <(tail -n +1 --pid="$BG_PID" -f "$BG_ERR"))
ID=$(printf '%s\n' "$notice" | sed -nE 's/.*approval ([0-9a-f]+): .*/\1/p')
[ -n "$ID" ] && pdk deny "$ID" --reason "not before review $nonce"
AGENT_OUT=$(timeout 160 cat <&"$BG_FD")
exec {BG_FD}<&-
wait "$BG_PID" # (bounded: paddock run --timeout)
AGENT_RC=$?
AGENT_ERR=$(cat "$BG_ERR")
_last_cmd="codex git push" RC=$AGENT_RC OUT=$AGENT_OUT ERR=$AGENT_ERR
# (Codex runs it through its shell snapshot once it has one: a long bash -c script that
# sources the snapshot and ends in exec bash -c COMMAND, judged command by command.)
expect_match "codex exec running git push: it waits for a human, for the rule about pushes" \
    'git push origin main.*` \(pid [0-9]+\) needs a human \(rule [0-9]+ \(line [0-9]+: \[git, \[push, send-email\]\] ask\): publishes code\)' \
    "$notice"
push_session=$(session_of "$AGENT_ERR")
asked_lines=$(asked "$push_session")
expect_eq "... the only approval of its run (Codex's own shells asked nothing)" "1 yes" \
    "$(printf '%s\n' "$asked_lines" | grep -c .) $(case "$asked_lines" in *"git push origin main"*) echo yes ;; esac)"
expect_eq "... refused by a human, the agent goes on and ends" "0 Done: ran the command." \
    "$AGENT_RC $(printf '%s\n' "$AGENT_OUT" | tail -n1)"
# Codex reports a command it could not start as the error alone, without what the process
# was told on its stderr (paddock's reason): the model sees the refusal, not why.
expect_eq "... the model was told its command was refused (in the tool's result it got back)" 1 \
    "$([ "$(log_count "l['api'] == 'openai' and 'Permission denied' in json.dumps(l['body'])")" -ge 1 ] && echo 1)"
expect_eq "... and git never ran" 0 "$(HOME="$TEST_HOME" timeout 60 "$PADDOCK" audit --json </dev/null |
    "$PYTHON" -c '
import json, sys
print(sum(1 for line in sys.stdin for e in [json.loads(line)]
          if e["session"] == sys.argv[1] and e["kind"] == "exec" and e["data"]["argv"][0].endswith("git")
          and "push" in e["data"]["argv"]))' "$push_session")"

# ---- Claude Code over the Messages API's SSE ------------------------------------------------
run_agent claude --policy "$T/claude.yaml" -- "$CLAUDE" -p --dangerously-skip-permissions \
    "Write the file claude.txt containing exactly: claude $nonce"
expect_task "claude -p" claude.txt "claude $nonce" Bash anthropic
expect_eq "... over SSE, with the real key (x-api-key)" yes \
    "$([ "$(log_count 'l["api"] == "anthropic" and l["transport"] == "sse" and l["key_sha256"] == anthropic')" -ge 2 ] && echo yes)"
expect_eq "... its telemetry was refused by the policy, never reached the API" 0 \
    "$(log_count '"/api/event_logging" in l["path"]')"

run_plain claude-continue --policy "$T/claude.yaml" -- "$CLAUDE" -p --continue \
    --dangerously-skip-permissions "Which file did I ask for?"
expect_eq "a second run of claude --continue (another session) finds the first conversation" \
    "0 Earlier you asked for claude.txt." "$RC $(printf '%s\n' "$AGENT_OUT" | tail -n1)"
expect_unasked claude-continue "$(session_of "$AGENT_ERR")"

# ---- Claude Code's approval of its key holds across runs --------------------------------------
# Interactive Claude Code asks "use this API key?" for a key it does not know, and keeps the
# answer in ~/.claude.json: customApiKeyResponses.approved (or .rejected) holds the key's
# last 20 characters (its code: key.trim().slice(-20); a key is "approved", "rejected" or
# else "new", which asks). Its persistent home keeps the placeholder too, so one approval
# holds: a run records it as Claude Code's own approval writes it, and a later run (another
# session) finds its key approved, as Claude Code's check reads it; another home does not.
approve_py='
import json, os, sys
path = os.path.expanduser("~/.claude.json")
config = json.load(open(path)) if os.path.exists(path) else {}
key = os.environ["ANTHROPIC_API_KEY"].strip()[-20:]
answers = config.get("customApiKeyResponses") or {}
approved, rejected = answers.get("approved") or [], answers.get("rejected") or []
if sys.argv[1] == "approve":
    config["customApiKeyResponses"] = {"approved": approved + [key] * (key not in approved), "rejected": rejected}
    json.dump(config, open(path, "w"), indent=2)
print("approved" if key in approved or sys.argv[1] == "approve" else "rejected" if key in rejected else "new")'
run_plain claude-approve --policy "$T/claude.yaml" -- /usr/bin/python3 -c "$approve_py" approve
expect_eq "Claude Code's key approved in its home (as its approval writes it)" "0 approved" "$RC $AGENT_OUT"
run_plain claude-approved --policy "$T/claude.yaml" -- /usr/bin/python3 -c "$approve_py" check
expect_eq "... a later run (another session) finds its key approved: Claude Code does not ask again" \
    "0 approved" "$RC $AGENT_OUT"
sed 's/^  persist: claude-code$/  persist: claude-code-elsewhere/' "$T/claude.yaml" >"$T/claude-elsewhere.yaml"
run_plain claude-elsewhere --policy "$T/claude-elsewhere.yaml" -- /usr/bin/python3 -c "$approve_py" check
expect_eq "... with another home it is another key, not approved there" "0 new" "$RC $AGENT_OUT"

# ---- what is left ---------------------------------------------------------------------------
expect_eq "no persistent home holds a real key" 0 \
    "$(grep -rlF -e "$OPENAI_KEY" -e "$ANTHROPIC_KEY" "$STATE/homes" 2>/dev/null | wc -l)"
pdk audit --json
expect_eq "the audit log holds no real key" no "$(holds_key "$OUT")"
expect_eq "... and no agent touched its own executable configuration" \
    "$(printf '%s' "")" "$(cat "$STATE/homes/codex/.codex/config.toml" "$STATE/homes/claude-code/.claude/settings.json")"
# (every example passes policy lint: t_policy_cli)
