#!/usr/bin/env bash
# A full disk while a command runs (the state dir on a small tmpfs the command fills): once
# the command has started nothing of its session is deleted. The session is kept as it is,
# a one-line warning says how to recover it, and paddock run exits with the command's own
# status. The state store says its disk is full (not "disk I/O error"). The tmpfs lives in
# a mount namespace of the test's own (held by one process), gone with it.
. "$(dirname "$0")/lib.sh"
need_userns
need_root

# A mount namespace holding an 8 MiB tmpfs at $SMALL, the state dir in it.
SMALL=$T/small
mkdir -p "$SMALL"
mkfifo "$T/.holder"
unshare -m --propagation private sh -c \
    'mount -t tmpfs -o size=8m,mode=755 tmpfs "$1" && mkdir -m 700 "$1/state" && echo ready &&
     exec sleep 3600' sh "$SMALL" >"$T/.holder" 2>"$T/.holder.err" &
HOLDER=$!
track_pid "$HOLDER"
IFS= read -r -t 30 ready <"$T/.holder"
[ "$ready" = ready ] || skip_all "cannot mount a tmpfs in a mount namespace: $(cat "$T/.holder.err")"
SSTATE=$SMALL/state

# inns ARGS...: ARGS in the holder's mount namespace, from $WS, with the small state dir;
# sets RC, OUT, ERR.
inns() {
    _last_cmd="(small state dir) $(printf '%q ' "$@")"
    HOME="$TEST_HOME" PATH="$SANDBOX_PATH" PADDOCK_STATE_DIR="$SSTATE" \
        timeout -k 5 60 nsenter -t "$HOLDER" -m --wd="$WS" "$@" </dev/null >"$T/.out" 2>"$T/.err"
    RC=$?
    OUT=$(cat "$T/.out")
    ERR=$(cat "$T/.err")
}
# full [KEEP]: the tmpfs filled by a ballast file but for KEEP (e.g. 1M) that the next command
# fills; free: the ballast removed.
full() {
    inns sh -c 'head -c 64M /dev/zero >"$1/ballast" 2>/dev/null; [ -z "$2" ] || truncate -s "-$2" "$1/ballast"' \
        sh "$SMALL" "${1:-}"
}
free() { inns rm -f "$SMALL/ballast"; }

FILL='echo kept >note.txt; head -c 64M /dev/zero >big 2>/dev/null; exit'

# A named session, the command filling the disk and exiting 0.
full 1M
inns "$PADDOCK" run --session fill -- sh -c "$FILL 0"
expect_eq "a command that fills the disk and exits 0: paddock run exits 0 (was 125)" 0 "$RC"
expect_match "... with a one-line warning that the session is kept and how to recover it" \
    "paddock: warning: session fill is kept with what the command wrote, but its record could not be updated \(.*No space left on device\): free space in $SSTATE, then review it with paddock diff fill" \
    "$ERR"
expect_eq "... and the session is there (was deleted, with everything the command wrote)" "kept" \
    "$(inns cat "$SSTATE/sessions/fill/upper/note.txt"; echo "$OUT")"
free
inns "$PADDOCK" diff fill --stat
expect_match "once space is freed, the session's changes are reviewable" "note.txt" "$OUT"
inns "$PADDOCK" run --session fill -- cat note.txt
expect_eq "... and the session continues" "0 kept" "$RC $OUT"
inns "$PADDOCK" discard fill
expect_eq "... and can be discarded" 0 "$RC"

# The command's own status, whatever it is.
full 1M
inns "$PADDOCK" run --session fill3 -- sh -c "$FILL 3"
expect_eq "a command that fills the disk and exits 3: paddock run exits 3" 3 "$RC"
free
inns "$PADDOCK" discard fill3

# An unnamed run: its session (it changed files) is kept as well.
full 1M
inns "$PADDOCK" run -- sh -c "$FILL 0"
expect_eq "an unnamed run that fills the disk exits 0" 0 "$RC"
id=$(printf '%s\n' "$ERR" | sed -nE 's/^paddock: session ([^ ]+): .*/\1/p' | tail -n 1)
free
inns "$PADDOCK" sessions --json
expect_eq "... and its session is listed, with its changes" "2" \
    "$(json_get "$OUT" '[s["changes"] for s in j if s["id"] == "'"$id"'"][0]')"
inns "$PADDOCK" discard "$id"

# The state store, with the disk full: it says the disk is full.
inns "$PADDOCK" run -- true
inns "$PADDOCK" audit --json
expect_eq "the audit log folds while there is space" 0 "$RC"
inns "$PADDOCK" run -- true
full
inns "$PADDOCK" audit
expect_eq "with the disk full, paddock audit fails (exit 1)" 1 "$RC"
expect_match "... saying the state store cannot grow and what to do" \
    "the state store $SSTATE/paddock.db cannot grow \(free space on its disk, then try again\)" "$ERR"
expect_no_match "... not 'disk I/O error'" "disk I/O error" "$ERR"
free
inns "$PADDOCK" audit verify
expect_eq "once space is freed, the log verifies" 0 "$RC"
