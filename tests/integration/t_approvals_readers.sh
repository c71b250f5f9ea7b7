#!/usr/bin/env bash
# t_approvals_readers: readers never lock out an asking run. A run whose command asks for
# approval, on a fresh state dir, while `paddock approvals --json` polls the store every
# 50 ms (what a human, a script or a web page does) and approves what it finds, always gets
# its request recorded and answered: 50 asks, the run's own command and a command inside
# the sandbox in turn, every one exits 0. (Both used to set the new store up at once, and
# one of them failed at once with "the state store ... stayed locked by another process for
# more than 5 s".)
. "$(dirname "$0")/lib.sh"
need_userns

cat >"$T/p.yaml" <<'EOF'
version: 1
commands:
  rules:
    - match: [sh, -c, "echo asked*"]
      decision: ask
      reason: "needs a human"
approvals:
  timeout: 30
EOF

lanes=5 asks=10 # 5 lanes at once, 10 asks each: 50 fresh state dirs

# poll STATE PID: until PID ends, list the pending requests of STATE every 50 ms and approve
# each. The 50 ms is the load under test (the poll of a watching human or page), not a wait
# for an event: the test waits on the run's exit.
poll() {
    local state="$1" pid="$2" out id
    while kill -0 "$pid" 2>/dev/null; do
        out=$(PADDOCK_STATE_DIR="$state" HOME="$TEST_HOME" timeout 10 "$PADDOCK" approvals --json 2>&1)
        id=$(printf '%s\n' "$out" | sed -n 's/.*"id": *"\([0-9a-f]\{16\}\)".*/\1/p' | head -n 1)
        [ -n "$id" ] && PADDOCK_STATE_DIR="$state" HOME="$TEST_HOME" timeout 10 "$PADDOCK" approve "$id" \
            >/dev/null 2>&1
        sleep 0.05
    done
}

# lane L: its asks one after the other, each on a state dir of its own; a line a failure
# in $T/lane.L.failures.
lane() {
    local l="$1" i state ws="$T/ws$1" cmd rc
    mkdir -p "$ws"
    : >"$T/lane.$l.failures"
    for i in $(seq "$asks"); do
        state="$T/state.$l.$i"
        mkdir -m 700 "$state"
        if [ $((i % 2)) -eq 1 ]; then
            cmd=(sh -c "echo asked $l.$i")      # the run's own command
        else
            cmd=(env sh -c "echo asked $l.$i")  # a command inside the sandbox
        fi
        (cd "$ws" && PADDOCK_STATE_DIR="$state" HOME="$TEST_HOME" PATH="$SANDBOX_PATH" \
            LANG="$SANDBOX_LANG" timeout -k 5 60 "$PADDOCK" run --workspace "$ws" \
            --policy "$T/p.yaml" -- "${cmd[@]}" </dev/null >"$state.out" 2>"$state.err") &
        local run=$!
        poll "$state" "$run"
        wait "$run"
        rc=$?
        if [ "$rc" -ne 0 ] || [ "$(cat "$state.out")" != "asked $l.$i" ]; then
            printf 'ask %s.%s (%s): exit %s, stdout %s, stderr %s\n' "$l" "$i" "${cmd[0]}" \
                "$rc" "$(cat "$state.out")" "$(tr '\n' ' ' <"$state.err")" >>"$T/lane.$l.failures"
        fi
    done
}

pids=()
for l in $(seq "$lanes"); do
    lane "$l" &
    pids+=("$!")
    track_pid "$!"
done
for pid in "${pids[@]}"; do
    wait "$pid"
done

failures=$(cat "$T"/lane.*.failures)
expect_eq "50 asking runs on fresh state dirs, polled every 50 ms by a reader: none fails" \
    "0" "$(printf '%s' "$failures" | grep -c .)" || diag "$failures"
expect_eq "... and every one of them was asked and approved (50 approved requests)" "$((lanes * asks))" \
    "$(for d in "$T"/state.*; do [ -d "$d" ] || continue
        PADDOCK_STATE_DIR="$d" timeout 10 "$PADDOCK" approvals --all --json 2>/dev/null |
            grep -c '"state": *"approved"'; done | awk '{ n += $1 } END { print n + 0 }')"
