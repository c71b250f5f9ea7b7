#!/usr/bin/env bash
# The line between "before the session" and "after it began": a file written just before
# paddock starts is never taken for a change made outside (no clock-tick ambiguity), and a
# change made outside once the first tick of the coarse clock after the session's baseline
# has passed (the documented window; see session.c) is always refused.
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
        'echo sandbox >> race.txt; echo ok'
    if read_bg_line && [ "$BG_LINE" = ok ]; then
        # Past the documented window: the coarse clock beyond the session's baseline.
        "$PYTHON" - "$STATE/sessions/race$i/session.json" <<'PY'
import ctypes, json, sys, time
base = json.load(open(sys.argv[1]))["baseline_ns"]
class TS(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]
libc = ctypes.CDLL(None)
ts = TS()
for _ in range(1000):  # at most 1 s; a tick is 1-10 ms
    libc.clock_gettime(5, ctypes.byref(ts))  # CLOCK_REALTIME_COARSE
    if ts.s * 1000000000 + ts.ns > base:
        break
    time.sleep(0.001)
PY
        wait "$BG_PID" 2>/dev/null
        echo "outside" >>"$WS/race.txt" # changed outside after the sandbox copied it up
        pdk commit "race$i"
        [ "$RC" -eq 1 ] || missed=$((missed + 1))
    else
        missed=$((missed + 1))
    fi
    pdk discard "race$i" >/dev/null 2>&1
done
expect_eq "10 times: a change made outside after the sandbox wrote the file is refused" 0 "$missed"
