#!/usr/bin/env python3
"""Memory per running sandbox: N sandboxes held open at once, for paddock and for bwrap in
the same run. Each sandbox runs `sleep`; a byte on an inherited pipe says it has started.
Memory is the PSS of every process of the sandboxes (launcher, init, command) plus the
rise of kernel memory (slab, page tables, kernel stacks), divided by N.
Bounded: every process is started and killed by this script, by pid."""
import json, os, shutil, signal, subprocess, sys, tempfile, time

def kernel_kib():
    """Kernel memory that sandboxes add: slab (namespaces, mounts, tmpfs and overlay
    inodes, sockets), page tables and kernel stacks."""
    info = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":")
            info[k] = int(v.split()[0])
    return info["Slab"] + info["PageTables"] + info["KernelStack"]

def tree_pss_kib(roots):
    """Proportional set size of every process under roots (the launcher included)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d))
        except (OSError, ValueError, IndexError):
            pass
    total, todo = 0, list(roots)
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total

def measure(name, argv_for, n, env):
    r, w = os.pipe()
    os.set_inheritable(w, True)
    time.sleep(0.2)
    before = kernel_kib()
    procs = []
    try:
        for i in range(n):
            procs.append(subprocess.Popen(argv_for(i, w), env=env, pass_fds=[w],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True))
        os.close(w)
        w = -1
        got = 0
        deadline = time.time() + 60
        while got < n and time.time() < deadline:
            chunk = os.read(r, n - got)
            if not chunk:
                break
            got += len(chunk)
        time.sleep(0.3)
        kernel = kernel_kib() - before
        pss = tree_pss_kib([p.pid for p in procs])
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        if w >= 0:
            os.close(w)
        os.close(r)
    return got, (kernel + pss) / max(got, 1) / 1024.0

def main():
    paddock = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/paddock")
    n = int(os.environ.get("BENCH_SANDBOXES", "50"))
    work = tempfile.mkdtemp(prefix="paddock-bench-mem-")
    ws = os.path.join(work, "ws")
    os.makedirs(ws)
    env = dict(os.environ, PADDOCK_STATE_DIR=os.path.join(work, "state"))
    cmd = lambda fd: ["sh", "-c", "printf x >&%d; exec sleep 120" % fd]
    results = {}
    started, mib = measure("paddock", lambda i, fd: [paddock, "run", "--pass-fd",
                                                     str(fd), "--workspace", ws, "--"] + cmd(fd),
                            n, env)
    results["paddock"] = {"started": started, "mib_per_sandbox": mib}
    bwrap = shutil.which("bwrap")
    if bwrap:
        started, mib = measure("bwrap", lambda i, fd: [bwrap, "--unshare-all",
                                                       "--die-with-parent", "--ro-bind", "/",
                                                       "/", "--dev", "/dev", "--proc", "/proc",
                                                       "--tmpfs", "/tmp"] + cmd(fd),
                               n, env)
        results["bwrap"] = {"started": started, "mib_per_sandbox": mib}
    shutil.rmtree(work, ignore_errors=True)
    for k, v in results.items():
        print(f"memory {k:8s} {v['mib_per_sandbox']:.2f} MiB per sandbox ({v['started']} running)")
    if "bwrap" in results and results["bwrap"]["mib_per_sandbox"] > 0:
        ratio = results["paddock"]["mib_per_sandbox"] / results["bwrap"]["mib_per_sandbox"]
        results["paddock_over_bwrap"] = ratio
        print(f"memory paddock/bwrap = {ratio:.3f}")
    print(json.dumps(results))

if __name__ == "__main__":
    main()
