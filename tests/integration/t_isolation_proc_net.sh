#!/usr/bin/env bash
# t_isolation_proc_net: pid, uts and net namespaces, inherited fds and the terminal. The
# sandbox sees only its own processes, its own hostname, a loopback-only network (no host
# listener reachable: TCP, unix under /run, abstract), no fds but 0-2 unless --pass-fd, and
# no controlling terminal unless --tty.
. "$(dirname "$0")/lib.sh"
need_userns

# ---- pid namespace -----------------------------------------------------------------------
probe -- pids
expect_match "/proc lists only the sandbox's own processes (1 and the probe)" \
    '^value=1(,[0-9]+)?$' "$OUT"
expect_no_match "this test's pid ($$) is not among them" "(=|,)$$(,|\$)" "$OUT"

# ---- uts namespace -----------------------------------------------------------------------
probe -- hostname
inside_host=${OUT#value=}
if [ "$RC" -eq 0 ] && [[ $OUT == value=* ]] &&
    { [ "$inside_host" = paddock ] || [ "$inside_host" != "$(uname -n)" ]; }; then
    ok "the hostname inside ($inside_host) is not the host's ($(uname -n))"
else
    not_ok "the hostname inside ($inside_host) is not the host's ($(uname -n))"
    _diag_last_run
fi

# ---- network -----------------------------------------------------------------------------
if start_tcp_listener; then
    expect_eq "(host) the test's listener on 127.0.0.1:$LISTEN_PORT accepts" ok \
        "$("$PROBE" connect-tcp 127.0.0.1 "$LISTEN_PORT")"
    expect_probe "the host's 127.0.0.1:$LISTEN_PORT is unreachable from inside" \
        'errno=ECONNREFUSED' -- connect-tcp 127.0.0.1 "$LISTEN_PORT"
else
    not_ok "a TCP listener on the host's 127.0.0.1 starts"
fi

wrun -- python3 -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
c = socket.create_connection(s.getsockname(), timeout=10)
a, _ = s.accept()
c.sendall(b"x")
print("ok" if a.recv(1) == b"x" else "bad")'
expect_eq "loopback works inside the sandbox" ok "$OUT"

wrun -- sh -c 'sed -n "3,\$p" /proc/net/dev | cut -d: -f1 | tr -d " "'
expect_eq "the only network interface is lo" lo "$OUT"
wrun -- sh -c 'sed -n "2,\$p" /proc/net/route | wc -l'
expect_eq "there is no IPv4 route (no default route)" 0 "$(echo "$OUT" | tr -d ' ')"

RUN_DIR=$(mktemp -d /run/paddock-test.XXXXXX 2>/dev/null)
if [ -n "$RUN_DIR" ]; then
    cleanup_path "$RUN_DIR"
    if start_unix_listener "$RUN_DIR/agent.sock"; then
        expect_eq "(host) the unix socket under /run accepts" ok \
            "$("$PROBE" connect-unix "$RUN_DIR/agent.sock")"
        expect_probe "a unix socket under the host's /run is not there inside" 'errno=ENOENT' \
            -- connect-unix "$RUN_DIR/agent.sock"
    else
        not_ok "a unix listener under /run starts"
    fi
else
    skip "a unix socket under the host's /run is not there inside" "/run is not writable here"
fi

if start_unix_listener "$T/host.sock"; then
    expect_eq "(host) the unix socket under /tmp accepts" ok "$("$PROBE" connect-unix "$T/host.sock")"
    expect_probe "a unix socket in the host's /tmp is not there inside" 'errno=ENOENT' \
        -- connect-unix "$T/host.sock"
else
    not_ok "a unix listener under /tmp starts"
fi

ABSTRACT="$TAG-abstract"
if start_abstract_listener "$ABSTRACT"; then
    expect_eq "(host) the abstract socket @$ABSTRACT accepts" ok \
        "$("$PROBE" connect-abstract "$ABSTRACT")"
    expect_probe "the host's abstract socket @$ABSTRACT is unreachable from inside" \
        'errno=ECONNREFUSED' -- connect-abstract "$ABSTRACT"
else
    not_ok "an abstract unix listener starts"
fi

# ---- inherited fds -----------------------------------------------------------------------
exec 7>"$T/fd7" 9>"$T/fd9"
expect_eq "(host) fd 7 is open in the test" ok "$("$PROBE" fd 7)"
expect_probe "an inherited fd 7 is closed inside" 'errno=EBADF' -- fd 7
expect_probe "with --pass-fd 7, fd 7 is open inside" 'ok' --pass-fd 7 -- fd 7
expect_probe "with --pass-fd 7, fd 9 is still closed" 'errno=EBADF' --pass-fd 7 -- fd 9
expect_probe "fds 0-2 are open" 'ok' -- fd 2
exec 7>&- 9>&-

# ---- terminal and session ----------------------------------------------------------------
expect_probe "no controlling terminal (no tty around)" 'errno=ENXIO' -- ctty

# pty_probe [RUN-OPTIONS...] -- CHECK [ARGS...]: the probe in a sandbox started from a
# terminal; sets OUT to the probe's line and RC.
pty_probe() {
    local opts=() all
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        opts+=("$1")
        shift
    done
    [ $# -gt 0 ] && shift
    _last_cmd="(on a pty) paddock run ${opts[*]} -- probe $*"
    cd "$WS" || return 1
    all=$(HOME="$TEST_HOME" PATH="$SANDBOX_PATH" LANG="$SANDBOX_LANG" with_pty \
        timeout --foreground -k 5 60 "$PADDOCK" run --workspace "$WS" "${opts[@]}" -- \
        "$PROBE" "$@")
    RC=$?
    cd - >/dev/null || return 1
    OUT=$(printf '%s\n' "$all" | grep -E '^(ok|errno=|value=)' | head -n 1)
    ERR=$all
}

pty_out=$(with_pty "$PROBE" ctty)
if [ "$pty_out" = ok ]; then
    pty_probe -- ctty
    expect_eq "started from a terminal, the sandbox has no controlling terminal" \
        'errno=ENXIO' "$OUT"
    pty_probe --tty -- ctty
    expect_eq "with --tty the sandbox has a controlling terminal" ok "$OUT"
    pty_probe --tty -- tiocsti
    expect_eq "with --tty, TIOCSTI is still EPERM" 'errno=EPERM' "$OUT"
    pty_probe -- setsid-check
    sid=$(echo "${OUT#value=}" | cut -d, -f1)
    expect_match "started from a terminal, the command runs in a session of the sandbox" \
        '^[1-9][0-9]*$' "$sid"
else
    skip "the controlling terminal checks" "python3's pty.fork gives no controlling tty ($pty_out)"
fi

probe -- setsid-check
sid=$(echo "${OUT#value=}" | cut -d, -f1)
pgid=$(echo "${OUT#value=}" | cut -d, -f2)
expect_match "the command runs in a new session led inside the sandbox" '^[1-9][0-9]*$' "$sid"
expect_eq "its process group is that session's" "$sid" "$pgid"
