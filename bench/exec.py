#!/usr/bin/env python3
"""Exec interception overhead: a loop of N execs of /bin/true inside `paddock run`, with
command rules (every exec goes to the supervisor's seccomp listener and is judged and
recorded) and without (no listener), interleaved. Each is also run with the same loop
doing no exec, so that what a run costs once (loading 1,000 rules, the listener's set-up)
is not counted as a cost of each exec: the added cost of one exec is
((with, N) - (with, 0) - (without, N) + (without, 0)) / N. The rule set is 1,000 rules,
none matching /bin/true. A benchmark, not a test: it reports. Bounded: ROUNDS x 4 runs."""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

def main():
    paddock = sys.argv[1] if len(sys.argv) > 1 else "build/paddock"
    n = int(os.environ.get("BENCH_EXECS", "300"))
    rounds = int(os.environ.get("BENCH_ROUNDS", "9"))
    work = tempfile.mkdtemp(prefix="paddock-bench-exec-")
    ws = os.path.join(work, "ws")
    os.makedirs(ws)
    policy = os.path.join(work, "rules.yaml")
    with open(policy, "w") as f:
        f.write("version: 1\ncommands:\n  rules:\n")
        for i in range(1000):
            f.write(f"    - {{match: [tool{i % 250}, sub{i}], decision: {['allow', 'confine', 'ask', 'deny'][i % 4]}}}\n")
    env = dict(os.environ, PADDOCK_STATE_DIR=os.path.join(work, "state"))
    loop = f"i=0; while [ $i -lt {n} ]; do /bin/true; i=$((i+1)); done"
    idle = f"i=0; while [ $i -lt {n} ]; do :; i=$((i+1)); done"
    plain = [paddock, "run", "--workspace", ws, "--"]
    ruled = [paddock, "run", "--workspace", ws, "--policy", policy, "--"]
    cmds = {
        "without": plain + ["sh", "-c", loop],
        "with": ruled + ["sh", "-c", loop],
        "without_idle": plain + ["sh", "-c", idle],
        "with_idle": ruled + ["sh", "-c", idle],
    }
    times = {k: [] for k in cmds}
    for k, c in cmds.items():  # warm up
        subprocess.run(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    for _ in range(rounds):
        for k, c in cmds.items():
            t0 = time.perf_counter_ns()
            subprocess.run(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[k].append((time.perf_counter_ns() - t0) / 1e3)
    med = {k: statistics.median(v) for k, v in times.items()}
    per_exec_without = (med["without"] - med["without_idle"]) / n
    per_exec_with = (med["with"] - med["with_idle"]) / n
    added = per_exec_with - per_exec_without
    once = med["with_idle"] - med["without_idle"]
    shutil.rmtree(work, ignore_errors=True)
    print(f"exec without listener  {per_exec_without:8.1f} us an exec ({n} execs a run)")
    print(f"exec with listener     {per_exec_with:8.1f} us an exec (1,000 rules)")
    print(f"exec interception adds {added:8.1f} us an exec; with/without = {per_exec_with / per_exec_without:.2f}")
    print(f"once a run (rules, listener) {once / 1000:8.2f} ms")
    print(json.dumps({"execs": n, "rounds": rounds, "us_per_exec_without": per_exec_without,
                      "us_per_exec_with": per_exec_with, "us_added_per_exec": added,
                      "ms_once_a_run": once / 1000}))

if __name__ == "__main__":
    main()
