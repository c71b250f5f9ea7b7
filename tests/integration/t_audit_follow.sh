#!/usr/bin/env bash
# t_audit_follow: paddock audit --follow --json delivers the events of running sessions as
# they are written (pdk_audit_follow: inotify, no polling): every event once, in the log's
# order, none lost, while the runs' spools are folded into the store by other readers in
# between (paddock audit verify); --session keeps one session's; the follower's listing is
# exactly what paddock audit --json lists afterwards.
. "$(dirname "$0")/lib.sh"
need_userns

cat >"$T/p.yaml" <<'EOF2'
version: 1
commands:
  default: allow
  rules:
    - {match: [rm, "-rf", "/"], decision: deny}
EOF2

mkfifo "$T/all" "$T/one"
HOME="$TEST_HOME" timeout -k 5 120 "$PADDOCK" audit --follow --json >"$T/all" 2>"$T/all.err" &
all_pid=$!
track_pid "$all_pid"
HOME="$TEST_HOME" timeout -k 5 120 "$PADDOCK" audit --follow --json --session f2 \
    >"$T/one" 2>"$T/one.err" &
one_pid=$!
track_pid "$one_pid"
exec {all}<"$T/all" {one}<"$T/one"

# read_until FD FILE COUNT: append lines of FD to FILE until COUNT session.end events.
read_until() {
    local fd="$1" file="$2" want="$3" line ends=0
    while [ "$ends" -lt "$want" ] && IFS= read -r -t 60 -u "$fd" line; do
        printf '%s\n' "$line" >>"$file"
        case "$line" in *'"kind":"session.end"'*) ends=$((ends + 1)) ;; esac
    done
    [ "$ends" -eq "$want" ]
}

for r in 1 2 3; do
    wrun --policy "$T/p.yaml" --session "f$r" -- sh -c 'for i in 1 2 3 4; do /bin/true "'"$r"'" $i; done'
    [ "$RC" -eq 0 ] || bail_out "run $r works (exit $RC: $ERR)"
    # the first follower has the run's events before the next run starts
    read_until "$all" "$T/all.jsonl" 1 || bail_out "the follower got run $r's end ($(cat "$T/all.err"))"
    # another reader folds the spool meanwhile (the follower folds too: each event once)
    [ "$r" -eq 2 ] && pdk audit verify
done
read_until "$one" "$T/one.jsonl" 1 || bail_out "the --session follower got f2's end"

summary() {
    "$PYTHON" -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
seqs = [r["seq"] for r in rows]
print(len(rows), seqs == sorted(set(seqs)), sorted({r["session"] for r in rows}),
      " ".join(r["kind"] for r in rows if r["session"] == "f2"))' "$1"
}
expect_eq "the follower: 3 runs of 6 events each, every seq once, in order" \
    "18 True ['f1', 'f2', 'f3'] session.start exec exec exec exec session.end" \
    "$(summary "$T/all.jsonl")"
expect_eq "--session: only that session's events" \
    "6 True ['f2'] session.start exec exec exec exec session.end" "$(summary "$T/one.jsonl")"
pdk audit --json
printf '%s\n' "$OUT" >"$T/listed.jsonl"
expect_eq "what was followed is what the log lists (seqs, hashes)" \
    "$("$PYTHON" -c 'import json,sys; print([(j["seq"], j["hash"]) for j in map(json.loads, open(sys.argv[1]))])' "$T/listed.jsonl")" \
    "$("$PYTHON" -c 'import json,sys; print([(j["seq"], j["hash"]) for j in map(json.loads, open(sys.argv[1]))])' "$T/all.jsonl")"
stop_pid "$all_pid"
stop_pid "$one_pid"
expect_eq "the followers said nothing on stderr" "" "$(cat "$T/all.err" "$T/one.err")"
