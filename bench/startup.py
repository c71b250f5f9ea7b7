#!/usr/bin/env python3
"""Start-up benchmark: `paddock run -- true` against bare `true` and bwrap, interleaved.

Medians over many interleaved runs; prints each median and the ratios. A benchmark, not a
test: it asserts nothing, it reports.
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

def main():
    paddock = sys.argv[1] if len(sys.argv) > 1 else "build/paddock"
    runs = int(os.environ.get("BENCH_RUNS", "200"))
    true = shutil.which("true")
    bwrap = shutil.which("bwrap")
    work = tempfile.mkdtemp(prefix="paddock-bench-")
    state = os.path.join(work, "state")
    ws = os.path.join(work, "ws")
    os.makedirs(ws)
    env = dict(os.environ, PADDOCK_STATE_DIR=state)
    cmds = {
        "bare": [true],
        "paddock": [paddock, "run", "--workspace", ws, "--", true],
    }
    if bwrap:
        cmds["bwrap"] = [bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
                         "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", true]
    samples = {k: [] for k in cmds}
    devnull = subprocess.DEVNULL
    for name, cmd in cmds.items():  # warm up
        subprocess.run(cmd, env=env, stdout=devnull, stderr=devnull, check=True)
    for _ in range(runs):
        for name, cmd in cmds.items():
            t0 = time.perf_counter_ns()
            subprocess.run(cmd, env=env, stdout=devnull, stderr=devnull)
            samples[name].append((time.perf_counter_ns() - t0) / 1e6)
    med = {k: statistics.median(v) for k, v in samples.items()}
    result = {"runs": runs, "median_ms": med}
    if "bwrap" in med:
        result["paddock_over_bwrap"] = med["paddock"] / med["bwrap"]
    result["paddock_over_bare"] = med["paddock"] / med["bare"]
    shutil.rmtree(work, ignore_errors=True)
    for k, v in med.items():
        print(f"startup {k:8s} median {v:7.3f} ms")
    if "bwrap" in med:
        print(f"startup paddock/bwrap = {result['paddock_over_bwrap']:.3f}")
    print(f"startup paddock/bare  = {result['paddock_over_bare']:.3f}")
    print(json.dumps(result))

if __name__ == "__main__":
    main()
