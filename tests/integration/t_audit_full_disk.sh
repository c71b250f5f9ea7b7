#!/usr/bin/env bash
# t_audit_full_disk: a full disk mid-run loses no audit event after it. The state dir is a
# small tmpfs (mounted in a private mount namespace: it goes with the test). A run's
# command runs commands one at a time as the test sends them; the test fills the tmpfs up,
# sends a command whose exec event is longer than the room left (the event's write is cut
# short), frees the space and sends another: the command whose event could not be written
# did not run, and every event after it (the next command, the session's end) is in the log
# with an audit.write_failed event saying what was not written; verify passes. A run
# started on the full disk runs nothing (exit 125, one line).
if [ -z "${PDK_FULL_DISK_NS:-}" ] && [ "$(id -u)" -eq 0 ] && unshare --mount true 2>/dev/null; then
    PDK_FULL_DISK_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
need_root
need_userns
[ -n "${PDK_FULL_DISK_NS:-}" ] || skip_all "needs a private mount namespace (unshare --mount)"
mount -t tmpfs -o size=8m,mode=0700 paddock-test "$STATE" || skip_all "cannot mount a tmpfs"
# The tmpfs goes before lib.sh removes $T (and with the namespace anyway).
trap '_rc=$?; umount "$STATE" 2>/dev/null; (exit $_rc); _cleanup' EXIT

cat >"$T/p.yaml" <<'EOF'
version: 1
commands:
  default: allow
  rules:
    - {match: [rm, "-rf", "/"], decision: deny}
EOF

# fill: the tmpfs full to its last byte (dd stops at ENOSPC).
fill() {
    dd if=/dev/zero of="$STATE/filler" bs=4096 2>/dev/null
    dd if=/dev/zero of="$STATE/filler.tail" bs=1 2>/dev/null
    [ "$(stat -f -c %a "$STATE")" -eq 0 ]
}

# The run: each line on its stdin is run with sh -c, and answered on its stdout with
# "done STATUS" and whether the file named by $MARK exists afterwards.
cat >"$WS/loop.sh" <<'EOF'
while IFS=" " read -r mark line; do
    sh -c "$line" 2>/dev/null
    rc=$?
    if [ -e "$mark" ]; then echo "done $rc ran"; else echo "done $rc not-ran"; fi
done
EOF
mkfifo "$T/in" "$T/out"
cd "$WS" || bail_out "cd $WS"
HOME="$TEST_HOME" PATH="$SANDBOX_PATH" LANG="$SANDBOX_LANG" timeout -k 5 120 "$PADDOCK" run \
    --workspace "$WS" --session disk --policy "$T/p.yaml" -- sh loop.sh \
    <"$T/in" >"$T/out" 2>"$T/run.err" &
run=$!
track_pid "$run"
cd - >/dev/null || bail_out "cd -"
exec {to_run}>"$T/in" {from_run}<"$T/out"
ask() {
    printf '%s %s\n' "$1" "$2" >&"$to_run"
    REPLY_LINE=""
    IFS= read -r -t 60 -u "$from_run" REPLY_LINE
}

ask before.txt "touch before.txt"
expect_eq "the run runs a command" "done 0 ran" "$REPLY_LINE"

# Full, with room for less than the next event: what is left of the spool file's last page
# (tmpfs hands out whole pages), or a page when none is left.
fill || bail_out "the tmpfs could not be filled"
spool=$(ls "$STATE"/audit-spool/*.jsonl)
room=$(( (4096 - $(stat -c %s "$spool") % 4096) % 4096 ))
if [ "$room" -eq 0 ]; then
    truncate -s -4096 "$STATE/filler" && room=4096
fi
pad=$(head -c $((room + 300)) /dev/zero | tr '\0' x)
ask blocked.txt "touch blocked.txt; : $pad"
expect_eq "a command whose exec event cannot be written (full disk) does not run" \
    "not-ran" "${REPLY_LINE##* }" || diag "$(cat "$T/run.err")"

rm -f "$STATE/filler" "$STATE/filler.tail"
ask after.txt "touch after.txt"
expect_eq "once there is room again, the next command runs" "done 0 ran" "$REPLY_LINE"
exec {to_run}>&-
wait "$run"
rc=$?
exec {from_run}<&-
expect_eq "the run ends as its command did (exit 0)" 0 "$rc" || diag "$(cat "$T/run.err")"

pdk audit --json
events=$OUT
kinds=$(printf '%s\n' "$events" | "$PYTHON" -c '
import json, sys
out = []
for e in map(json.loads, filter(str.strip, sys.stdin)):
    d = e["data"]
    if e["kind"] == "exec":
        out.append("exec:" + d["argv"][-1].split(";")[0].split()[-1])
    elif e["kind"] == "audit.write_failed":
        out.append("write_failed:" + ",".join("%s=%d" % kv for kv in sorted(d["kinds"].items())))
    else:
        out.append(e["kind"])
print(" ".join(out))')
expect_match "every event after the failed write is in the log: the next command and the session's end" \
    "exec:after.txt .*session.end$" "$kinds"
expect_match "... after an audit.write_failed event counting the exec event not written" \
    "write_failed:exec=[0-9]+ exec:after.txt" "$kinds"
expect_no_match "... and no event of the refused command" "exec:blocked.txt" "$kinds"
expect_no_match "the spool was not set aside as damaged" '"kind":"audit.spool_damaged"' "$events"
pdk audit verify
expect_eq "the log verifies" 0 "$RC"
pdk diff disk
expect_match "the session keeps what ran" "after.txt" "$OUT"
expect_no_match "... and nothing of the refused command" "blocked.txt" "$OUT"

# A run started on a full disk: nothing runs.
fill || bail_out "the tmpfs could not be filled again"
prun --workspace "$WS" -- sh -c 'echo ran'
expect_eq "a run on a full state dir runs nothing: exit 125" "125 " "$RC $OUT"
expect_eq "... with one line saying why" 1 "$(printf '%s\n' "$ERR" | grep -c .)"
rm -f "$STATE/filler" "$STATE/filler.tail"
pdk audit verify
expect_eq "the log verifies after it" 0 "$RC"
