#!/usr/bin/env bash
# t_commit_kill: a commit killed (SIGKILL) while it writes a large file never leaves a
# temporary file in the real workspace, nor a torn file, and the next commit completes.
# 25 kills, each when the file being written has reached a different share of its size
# (seen through /proc/PID/fd of the commit: an event, not a delay). Twice: with the state
# dir on the workspace's filesystem (a replaced file renamed from a name in the session's
# directory), and on another one, a tmpfs (names beside the target only for the moment of a
# rename, journaled).
. "$(dirname "$0")/lib.sh"
need_userns

SIZE=$((32 << 20))
KILLS=25

# commit_killed_when_written SIZE SHARE DIR...: paddock commit big, SIGKILLed once a regular
# file it has open under one of DIRs (what it is writing) holds SHARE (0..1) of SIZE bytes
# (the watcher starts it, so that it sees the very first write); prints "killed at N" or
# "finished" (it ended first). Bounded: 30 s, then killed.
commit_killed_when_written() {
    HOME="$TEST_HOME" "$PYTHON" - "$PADDOCK" "$@" <<'EOF'
import os, signal, stat, subprocess, sys, time
paddock, size, share = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
dirs = [d.rstrip("/") + "/" for d in sys.argv[4:]]
p = subprocess.Popen([paddock, "commit", "big"], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
fddir = "/proc/%d/fd" % p.pid
deadline = time.monotonic() + 30
how = "finished"
while p.poll() is None:
    if time.monotonic() > deadline:
        how = "hung"
        break
    try:
        fds = os.listdir(fddir)
    except OSError:
        continue
    for fd in fds:
        try:
            link = os.readlink(fddir + "/" + fd)
            if not any(link.startswith(d) for d in dirs):
                continue
            st = os.stat(fddir + "/" + fd)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and share * size <= st.st_size < size:
            how = "killed at %d" % st.st_size
            break
    if how != "finished":
        break
if p.poll() is None:
    p.send_signal(signal.SIGKILL)
p.wait()
print(how)
EOF
}

# temp_files: the names a commit's temporaries have, anywhere in the real workspace.
temp_files() {
    find "$WS" -name '.paddock-commit.*' 2>/dev/null
}

# plant: a session "big" that rewrites big.bin and adds new.bin ($SIZE bytes each).
plant() {
    wrun --session big -- sh -c "head -c $SIZE /dev/urandom >big.bin; head -c $SIZE /dev/urandom >new.bin"
    [ "$RC" -eq 0 ] || return 1
    NEW_BIG=$(sha256sum <"$STATE/sessions/big/upper/big.bin")
    NEW_NEW=$(sha256sum <"$STATE/sessions/big/upper/new.bin")
}

kill_commits() {
    local label="$1" killed=0 finished=0 left="" torn="" i
    head -c $SIZE /dev/urandom >"$WS/big.bin"
    OLD_BIG=$(sha256sum <"$WS/big.bin")
    rm -f "$WS/new.bin"
    plant || bail_out "$label: the planting run failed: $ERR"
    for i in $(seq $KILLS); do
        if [ ! -e "$STATE/sessions/big/upper/big.bin" ] && [ ! -e "$STATE/sessions/big/upper/new.bin" ]; then
            # an earlier commit got through before its kill: make the changes again
            rm -f "$WS/new.bin"
            head -c $SIZE /dev/urandom >"$WS/big.bin"
            OLD_BIG=$(sha256sum <"$WS/big.bin")
            pdk discard big
            plant || bail_out "$label: the planting run failed: $ERR"
        fi
        local how
        how=$(commit_killed_when_written "$SIZE" \
            "$(awk -v i="$i" -v n="$KILLS" 'BEGIN { print i / (n + 1) }')" \
            "$WS" "$STATE/sessions/big/commit-tmp")
        case "$how" in killed*) killed=$((killed + 1)) ;; *) finished=$((finished + 1)) ;; esac
        [ -z "$(temp_files)" ] || left="$left $i:$(temp_files | tr '\n' ' ')"
        local now
        now=$(sha256sum <"$WS/big.bin")
        [ "$now" = "$OLD_BIG" ] || [ "$now" = "$NEW_BIG" ] || torn="$torn big.bin@$i"
        if [ -e "$WS/new.bin" ] && [ "$(sha256sum <"$WS/new.bin")" != "$NEW_NEW" ]; then
            torn="$torn new.bin@$i"
        fi
    done
    diag "$label: $killed commits killed while writing, $finished finished first"
    expect_eq "$label: commits were killed while writing (at least 5 of $KILLS)" yes \
        "$([ "$killed" -ge 5 ] && echo yes || echo "no: $killed")"
    expect_eq "$label: no temporary file was ever left in the workspace" "" "$left"
    expect_eq "$label: no file was ever torn" "" "$torn"
    pdk commit big
    expect_eq "$label: the next commit completes" 0 "$RC"
    expect_eq "$label: ... with the session's files" "$NEW_BIG $NEW_NEW" \
        "$(sha256sum <"$WS/big.bin") $(sha256sum <"$WS/new.bin")"
    expect_eq "$label: ... and nothing of its own left behind" "" \
        "$(temp_files; ls -d "$STATE/sessions/big/commit-tmp" "$STATE/sessions/big/commit-journal" 2>/dev/null)"
    pdk discard big
}

kill_commits "state dir beside the workspace"

# The state dir on another filesystem (a tmpfs): a rename cannot cross.
SHM=$(mktemp -d /dev/shm/paddock-t.XXXXXX) || skip_all "no /dev/shm"
cleanup_path "$SHM"
STATE="$SHM/state"
mkdir -m 700 "$STATE"
export PADDOCK_STATE_DIR="$STATE"
kill_commits "state dir on another filesystem"
