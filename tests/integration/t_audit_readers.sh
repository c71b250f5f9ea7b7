#!/usr/bin/env bash
# t_audit_readers: readers of the audit log at once fold the spool once. Several runs leave
# their events spooled; then 10 readers (paddock audit --json and paddock audit verify, each
# of which folds the spool first) start together: every listing holds exactly the events
# written, each once, and the log verifies. (They used to fold the same spool two or three
# times, and verify called the doubled log intact.)
. "$(dirname "$0")/lib.sh"
need_userns

cat >"$T/p.yaml" <<'EOF'
version: 1
commands:
  default: allow
  rules:
    - {match: [rm, "-rf", "/"], decision: deny}
EOF

# 8 runs; each records its start, the 5 execs of its loop and its end.
for r in $(seq 8); do
    wrun --policy "$T/p.yaml" -- sh -c 'for i in 1 2 3 4 5; do /bin/true "run '"$r"'" $i; done'
    [ "$RC" -eq 0 ] || bail_out "run $r works (exit $RC: $ERR)"
done
written=$(cat "$STATE"/audit-spool/*.jsonl | grep -c .)
expect_eq "the runs' events wait in the spool, none folded yet" "56 no" \
    "$written $([ -e "$STATE/paddock.db" ] && echo yes || echo no)"

# The readers wait on a fifo, then go at once.
mkfifo "$T/go"
exec {go}<>"$T/go"
readers=()
for i in $(seq 10); do
    (
        read -r _ <"$T/go"
        if [ $((i % 3)) -eq 0 ]; then
            timeout 60 "$PADDOCK" audit verify --json
        else
            timeout 60 "$PADDOCK" audit --json
        fi >"$T/reader.$i.out" 2>"$T/reader.$i.err"
        echo $? >"$T/reader.$i.rc"
    ) &
    readers+=("$!")
    track_pid "$!"
done
printf '\n\n\n\n\n\n\n\n\n\n' >&"$go"
for pid in "${readers[@]}"; do
    wait "$pid"
done
exec {go}>&-

expect_eq "the 10 readers all exit 0" "0 0 0 0 0 0 0 0 0 0" \
    "$(for i in $(seq 10); do printf '%s ' "$(cat "$T/reader.$i.rc")"; done | sed 's/ $//')" ||
    diag "$(cat "$T"/reader.*.err)"
expect_eq "each listing holds exactly the events written" "56 56 56 56 56 56 56" \
    "$(for i in $(seq 10); do [ $((i % 3)) -eq 0 ] || printf '%s ' "$(grep -c . "$T/reader.$i.out")"; done | sed 's/ $//')"

pdk audit --json
expect_eq "the log holds each event once (time, session, kind, data)" "56 56" \
    "$(printf '%s\n' "$OUT" | grep -c .) $(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
print(len({(e["time_ns"], e["session"], e["kind"], json.dumps(e["data"], sort_keys=True))
           for e in map(json.loads, filter(str.strip, sys.stdin))}))')"
expect_eq "... every run's 5 execs among them, in order" "8 runs: 1 2 3 4 5" \
    "$(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
runs = {}
for e in map(json.loads, filter(str.strip, sys.stdin)):
    if e["kind"] == "exec":
        runs.setdefault(e["data"]["argv"][1], []).append(e["data"]["argv"][2])
seen = {" ".join(v) for v in runs.values()}
print("%d runs: %s" % (len(runs), seen.pop() if len(seen) == 1 else sorted(runs.items())))')"
pdk audit verify --json
expect_eq "verify: intact, 56 rows" "0 True 56" "$RC $(json_get "$OUT" '"%s %s" % (j["intact"], j["rows"])')"
expect_eq "the spool is folded away" "" "$(ls -A "$STATE/audit-spool" 2>/dev/null)"
