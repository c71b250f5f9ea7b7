#!/usr/bin/env bash
# t_agents: real coding agents inside paddock, with the shipped policies
# (examples/codex.yaml, examples/claude-code.yaml) and only the test's upstream added: Codex
# CLI (`codex exec`) and Claude Code (`claude -p`), from npm (pinned in tests/node), against
# the fake model API (tests/fixtures/fake_model_api.py) standing for api.openai.com and
# api.anthropic.com on 127.0.0.1 behind TLS with a test CA. The sandbox holds placeholders;
# the gateway injects the real keys from the vault. Each agent completes a task (a file
# written with its own tool, seen in `paddock diff`), over the Responses API's WebSocket
# and over SSE for Codex, the Messages API over SSE for Claude Code; the fake received the
# real keys; no sandbox process, file or output holds them; a second run of the same agent
# (another session) continues the first conversation from its persistent home.
. "$(dirname "$0")/lib.sh"
need_userns
[ -e "$PADDOCK_BUILD/paddock-gateway.so" ] || bail_out "paddock-gateway.so is not built"

NM=$PADDOCK_TOP/tests/node/node_modules
CODEX=$NM/.bin/codex
# The platform package's binary (npm ci --ignore-scripts skips the wrapper's postinstall,
# which only copies it over the wrapper's placeholder).
CLAUDE=$NM/@anthropic-ai/claude-code-linux-x64/claude
command -v node >/dev/null || skip_all "node is not installed (scripts/bootstrap)"
[ -x "$CODEX" ] && [ -x "$CLAUDE" ] ||
    skip_all "Codex CLI or Claude Code is not in tests/node/node_modules (scripts/bootstrap: npm ci in tests/node)"
"$CODEX" --version >/dev/null 2>&1 && "$CLAUDE" --version >/dev/null 2>&1 ||
    skip_all "Codex CLI or Claude Code does not run here: $("$CODEX" --version 2>&1 | tail -n1) $("$CLAUDE" --version 2>&1 | tail -n1)"

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
text = text.replace("network:\n", "network:\n" + extra, 1)
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
# expect_task NAME FILE TEXT TOOL API: the agent's run completed its task: exit 0, its last
# line "Done: wrote FILE.", FILE with TEXT in the session's diff, written with the agent's
# own TOOL; every request of API carried the real key; while held, nothing inside held it.
expect_task() {
    local name=$1 file=$2 text=$3 tool=$4 api=$5 session
    expect_eq "$name: the task completes (exit 0, its last message)" "0 Done: wrote $file." \
        "$AGENT_RC $(printf '%s\n' "$AGENT_OUT" | tail -n1)"
    session=$(printf '%s\n' "$AGENT_ERR" | sed -nE 's/^paddock: session ([^ ]+): .*/\1/p' | tail -n1)
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
pdk diff "$(printf '%s\n' "$AGENT_ERR" | sed -nE 's/^paddock: session ([^ ]+): .*/\1/p' | tail -n1)"
expect_match "... its file shows in paddock diff" "\+sse $nonce" "$OUT"

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

# ---- what is left ---------------------------------------------------------------------------
expect_eq "no persistent home holds a real key" 0 \
    "$(grep -rlF -e "$OPENAI_KEY" -e "$ANTHROPIC_KEY" "$STATE/homes" 2>/dev/null | wc -l)"
pdk audit --json
expect_eq "the audit log holds no real key" no "$(holds_key "$OUT")"
expect_eq "... and no agent touched its own executable configuration" \
    "$(printf '%s' "")" "$(cat "$STATE/homes/codex/.codex/config.toml" "$STATE/homes/claude-code/.claude/settings.json")"
# (every example passes policy lint: t_policy_cli)
