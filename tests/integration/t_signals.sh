#!/usr/bin/env bash
# Signals sent to paddock reach the command (SIGINT, SIGTERM, SIGHUP, SIGUSR1), and the
# command's death by that signal is passed back as 128+N; with the command gone, nothing of
# the sandbox is left. Each case waits on events: the command's first line, then its exit.
. "$(dirname "$0")/lib.sh"
need_userns
MOUNTS_BEFORE=$(our_mounts)

# sig_case SIGNAL CODE: start a sandboxed sleep, send SIGNAL to paddock, expect exit CODE.
sig_case() {
    local sig="$1" want="$2" rc
    start_bg "sig-$sig.fifo" --workspace "$WS" -- "$PROBE" sleep-forever "$TAG-$sig"
    if ! read_bg_line || [ "$BG_LINE" != ok ]; then
        not_ok "SIG$sig: the sandboxed command started"
        return
    fi
    kill -s "$sig" "$BG_PID"
    timeout 20 tail --pid="$BG_PID" -f /dev/null
    wait "$BG_PID"
    rc=$?
    expect_eq "SIG$sig sent to paddock ends the command with it: exit $want" "$want" "$rc"
    expect_eq "SIG$sig: no sandboxed process is left" "" "$(_scan_pids all "$TAG-$sig" "" 0)"
}

sig_case INT 130
sig_case TERM 143
sig_case HUP 129
sig_case USR1 138

# The sandbox dies with its supervisor: SIGKILL to paddock (no chance to clean up) takes
# every sandboxed process with it, and the session it used runs again afterwards.
start_bg kill.fifo --session killed --workspace "$WS" -- "$PROBE" sleep-forever "$TAG-kill"
if read_bg_line && [ "$BG_LINE" = ok ]; then
    victims=$(_scan_pids all "$TAG-kill" "" 0)
    expect_match "the sandboxed command runs (host pids: $victims)" '^[0-9]' "$victims"
    kill -KILL "$BG_PID"
    wait "$BG_PID" 2>/dev/null
    for pid in $victims; do
        timeout 20 tail --pid="$pid" -f /dev/null
    done
    expect_eq "SIGKILL to paddock: every sandboxed process is gone" "" \
        "$(_scan_pids all "$TAG-kill" "" 0)"
    expect_eq "SIGKILL to paddock: the mount table is as before" "$MOUNTS_BEFORE" \
        "$(our_mounts)"
    wrun --session killed -- "$PROBE" write "$WS/after-kill.txt"
    expect_eq "the session of a killed run runs again (exit 0)" 0 "$RC"
    expect_eq "and writes to its layer" ok "$OUT"
else
    not_ok "the sandboxed command started before the SIGKILL"
fi

# stdin, stdout and stderr are the caller's own.
out=$(cd "$WS" && printf 'line one\nline two\n' | HOME="$TEST_HOME" PATH="$SANDBOX_PATH" \
    timeout 60 "$PADDOCK" run --workspace "$WS" -- sh -c 'cat; echo to-stderr >&2' 2>"$T/stdio.err")
expect_eq "stdin reaches the command and its stdout comes back" "$(printf 'line one\nline two')" "$out"
expect_match "the command's stderr is paddock's stderr" '^to-stderr' "$(cat "$T/stdio.err")"

# One run at a time on a session: a second run, and a commit, are refused while the first
# holds it, naming the holder; both work once it is gone.
start_bg busy.fifo --session busy --workspace "$WS" -- "$PROBE" sleep-forever "$TAG-busy"
if read_bg_line && [ "$BG_LINE" = ok ]; then
    wrun --session busy -- true
    expect_eq "a second run on a busy session fails (125)" 125 "$RC"
    expect_match "and names the paddock that holds it" "session busy is in use by paddock pid $BG_PID" "$ERR"
    pdk commit busy
    expect_eq "a commit of a busy session is refused (exit 1)" 1 "$RC"
    kill -TERM "$BG_PID"
    wait "$BG_PID" 2>/dev/null
    wrun --session busy -- true
    expect_eq "once the first run is gone, the session runs again" 0 "$RC"
else
    not_ok "the first run on the session started"
fi
