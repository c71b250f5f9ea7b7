#!/usr/bin/env bash
# The line between "before the session" and "after it began" is exact: a file written just
# before paddock starts is never taken for a change made outside (no clock-tick ambiguity),
# and a change made outside just after the session began is always refused.
. "$(dirname "$0")/lib.sh"
need_userns

refused=0
for i in $(seq 1 40); do
    echo "before $i" >"$WS/edit.txt"
    (cd "$WS" && pdk_run --session "tick$i" --workspace "$WS" -- sh -c 'echo inside >> edit.txt') \
        >/dev/null 2>&1
    pdk commit "tick$i"
    [ "$RC" -eq 0 ] || refused=$((refused + 1))
    pdk discard "tick$i" >/dev/null 2>&1
done
expect_eq "40 times: a file written just before the run commits (no false conflict)" 0 "$refused"

missed=0
for i in $(seq 1 10); do
    echo "base" >"$WS/race.txt"
    start_bg "race$i.fifo" --session "race$i" --workspace "$WS" -- sh -c \
        'echo sandbox >> race.txt; echo ok; read x'
    if read_bg_line && [ "$BG_LINE" = ok ]; then
        echo "outside" >>"$WS/race.txt" # changed outside while the session runs
        kill -TERM "$BG_PID"
        wait "$BG_PID" 2>/dev/null
        pdk commit "race$i"
        [ "$RC" -eq 1 ] || missed=$((missed + 1))
    else
        missed=$((missed + 1))
    fi
    pdk discard "race$i" >/dev/null 2>&1
done
expect_eq "10 times: a change made outside during the session is refused" 0 "$missed"
