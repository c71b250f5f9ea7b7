#!/usr/bin/env bash
# Signals sent to paddock reach the command (SIGINT, SIGTERM, SIGHUP, SIGUSR1), and the
# command's death by that signal is passed back as 128+N; with the command gone, nothing of
# the sandbox is left. Each case waits on events: the command's first line, then its exit.
. "$(dirname "$0")/lib.sh"
need_userns

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
