#!/usr/bin/env bash
# t_commit_kill: a commit killed (SIGKILL) while it writes never leaves a temporary file in
# the real workspace, nor a torn file, and the next commit completes. 25 kills, each while
# the commit has a file open that it writes (seen through /proc/PID/fd of the commit: an
# event, not a delay), the first, second, ... tenth one it opens, so that the kills land
# at different points of its work; a session of 120 files (some replacing real ones) keeps
# every commit busy long enough, whatever the load. Twice: with the state dir on the
# workspace's filesystem (a replaced file renamed from a name in the session's directory):
# nothing is ever left; and on another one, a tmpfs (a rename cannot cross): a replaced
# file has a name beside its target for the moment of its rename, journaled, and what a
# kill left there is gone once the session runs again.
. "$(dirname "$0")/lib.sh"
need_userns

IN_NS=() # how to look at the state dir (in the test's mount namespace, for the tmpfs)
FILES=120
SIZE=$((256 << 10)) # each
KILLS=25

# commit_killed_at N DIR...: paddock commit big, SIGKILLed while it has open for writing the
# Nth distinct regular file under one of DIRs it opens (the watcher starts it, so that it
# sees every one); prints "killed" or "finished" (it ended first). Bounded: 30 s.
commit_killed_at() {
    HOME="$TEST_HOME" "$PYTHON" - "$PADDOCK" "$@" <<'EOF'
import os, signal, stat, subprocess, sys, time
paddock, nth = sys.argv[1], int(sys.argv[2])
dirs = [d.rstrip("/") + "/" for d in sys.argv[3:]]
p = subprocess.Popen([paddock, "commit", "big"], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
fddir = "/proc/%d/fd" % p.pid
deadline = time.monotonic() + 30
seen, how = set(), "finished"
while p.poll() is None and how == "finished":
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
            with open("%s/../fdinfo/%s" % (fddir, fd)) as f:
                flags = int(f.read().split("flags:")[1].split()[0], 8)
            st = os.stat(fddir + "/" + fd)
        except (OSError, IndexError, ValueError):
            continue
        if not stat.S_ISREG(st.st_mode) or flags & 3 == 0:
            continue  # a directory, or a file it only reads
        seen.add((st.st_dev, st.st_ino))
        if len(seen) >= nth:
            p.send_signal(signal.SIGKILL)
            how = "killed"
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

# plant: a session "big" that writes f1..fFILES (a third of them exist in the workspace,
# as "old"): each file's content is its name repeated, $SIZE bytes.
plant() {
    local i
    for i in $(seq 1 3 $FILES); do printf 'old\n' >"$WS/f$i"; done
    wrun --session big -- sh -c "for i in \$(seq $FILES); do yes f\$i | head -c $SIZE >f\$i; done"
    [ "$RC" -eq 0 ]
}

# torn_files: the files of the workspace that are neither the real one nor the session's.
torn_files() {
    "$PYTHON" - "$WS" "$FILES" "$SIZE" <<'EOF'
import os, sys
ws, files, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(1, files + 1):
    path = os.path.join(ws, "f%d" % i)
    try:
        data = open(path, "rb").read()
    except FileNotFoundError:
        continue
    new = (("f%d\n" % i).encode() * size)[:size]
    if data != new and data != b"old\n":
        print("f%d" % i, end=" ")
EOF
}

# kill_commits LABEL STRICT: STRICT "yes": nothing left after any kill; else what a kill
# left is removed by the next run of the session.
kill_commits() {
    local label="$1" strict="$2" killed=0 finished=0 left="" seen=0 torn="" i how
    rm -f "$WS"/f*
    plant || bail_out "$label: the planting run failed: $ERR"
    for i in $(seq $KILLS); do
        pdk diff big --json
        if [ "$(json_get "$OUT" 'j["summary"]["files"]' 2>/dev/null || echo 0)" -le 10 ]; then
            # the commits got through (or nearly): make the changes again
            pdk discard big
            rm -f "$WS"/f*
            plant || bail_out "$label: the planting run failed: $ERR"
        fi
        how=$(commit_killed_at $(( (i - 1) % 10 + 1 )) "$WS" "$STATE/sessions/big/commit-tmp")
        case "$how" in killed) killed=$((killed + 1)) ;; *) finished=$((finished + 1)) ;; esac
        if [ -n "$(temp_files)" ] && [ "$strict" != yes ]; then
            seen=$((seen + 1))
            wrun --session big -- true # a run of the session removes them
        fi
        [ -z "$(temp_files)" ] || left="$left $i:$(temp_files | tr '\n' ' ')"
        local t
        t=$(torn_files)
        [ -z "$t" ] || torn="$torn $i:$t"
    done
    diag "$label: $killed commits killed while writing, $finished finished first" \
        "$label: $seen kills left a journaled name, removed by the next run"
    expect_eq "$label: commits were killed while writing (at least 20 of $KILLS)" yes \
        "$([ "$killed" -ge 20 ] && echo yes || echo "no: $killed")"
    if [ "$strict" = yes ]; then
        expect_eq "$label: no temporary file was ever left in the workspace" "" "$left"
    else
        expect_eq "$label: no temporary file outlived the next run of the session" "" "$left"
    fi
    expect_eq "$label: no file was ever torn" "" "$torn"
    pdk commit big
    expect_eq "$label: the next commit completes" 0 "$RC"
    expect_eq "$label: ... with the session's files" "$FILES 0" \
        "$(ls "$WS" | grep -c '^f[0-9]*$') $(grep -l '^old$' "$WS"/f* 2>/dev/null | wc -l)"
    expect_eq "$label: ... and nothing of its own left behind" "" \
        "$(temp_files; "${IN_NS[@]}" ls -d "$STATE/sessions/big/commit-tmp" \
            "$STATE/sessions/big/commit-journal" 2>/dev/null)"
    pdk discard big
}

kill_commits "state dir beside the workspace" yes

# The state dir on another filesystem: a tmpfs in a mount namespace of this test's own
# (held by a process it started), which every paddock of this part runs in.
unshare -m true 2>/dev/null || skip_all "no mount namespaces (unshare -m)"
mkdir "$T/tmpfs"
unshare -m --propagation private sleep infinity &
NS_PID=$!
track_pid "$NS_PID"
nsenter -t "$NS_PID" -m -- mount -t tmpfs -o size=512m,mode=0700 paddock-test "$T/tmpfs" ||
    bail_out "cannot mount a tmpfs in the test's own mount namespace"
printf '#!/bin/sh\nexec nsenter -t %s -m -- "%s" "$@"\n' "$NS_PID" "$PADDOCK" >"$T/paddock-in-ns"
chmod 755 "$T/paddock-in-ns"
PADDOCK="$T/paddock-in-ns"
STATE="$T/tmpfs/state"
export PADDOCK_STATE_DIR="$STATE"
IN_NS=(nsenter -t "$NS_PID" -m --)
kill_commits "state dir on another filesystem" no
