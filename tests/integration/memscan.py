#!/usr/bin/env python3
"""memscan.py ROOT_PID [--files DIR...] < SECRETS: look for secrets in every process under ROOT_PID (not
ROOT_PID itself: the paddock supervisor, which holds them by design), read from outside:
each process's environ, cmdline and every readable mapping of its memory (through
/proc/PID/mem). The secrets come on stdin, one a line (never in argv). Prints
"SCANNED FOUND": how many processes were read, and in how many a secret was found.
--files DIR...: also every regular file under those directories as the sandbox sees them
(through /proc/PID/root of a sandbox process), files over 16 MiB left out; two more
numbers follow: files read, files holding a secret."""
import os
import sys


def parent(pid):
    try:
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return 0


def under(pid, root):
    while pid > 1:
        if pid == root:
            return True
        pid = parent(pid)
    return False


def blobs_of(pid):
    blobs = [open(f"/proc/{pid}/environ", "rb").read(), open(f"/proc/{pid}/cmdline", "rb").read()]
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            addr, perms = line.split()[:2]
            if "r" not in perms:
                continue
            lo, hi = (int(x, 16) for x in addr.split("-"))
            if hi - lo > (256 << 20):
                continue  # reserved, not used: ASan's shadow, a thread's guard
            try:
                mem.seek(lo)
                blobs.append(mem.read(hi - lo))
            except (OSError, ValueError, OverflowError, MemoryError):
                pass
    return blobs


def scan_files(pid, dirs, secrets):
    read = hits = 0
    base = f"/proc/{pid}/root"
    for top in dirs:
        for dirpath, dirnames, filenames in os.walk(base + top):
            for name in filenames:
                path = os.path.join(dirpath, name)
                try:
                    if not os.path.isfile(path) or os.path.islink(path) or os.path.getsize(path) > (16 << 20):
                        continue
                    data = open(path, "rb").read()
                except OSError:
                    continue
                read += 1
                if any(s in data for s in secrets):
                    hits += 1
                    print("# found in", path[len(base):], file=sys.stderr)
    return read, hits


def main():
    root = int(sys.argv[1])
    dirs = sys.argv[sys.argv.index("--files") + 1:] if "--files" in sys.argv else []
    secrets = [l.rstrip("\n").encode() for l in sys.stdin if l.strip()]
    found, scanned, first = [], 0, None
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == root or not under(int(d), root):
            continue
        try:
            blobs = blobs_of(int(d))
        except OSError:
            continue
        scanned += 1
        first = first or int(d)
        if any(s in b for b in blobs for s in secrets):
            found.append(int(d))
    counts = [scanned, len(found)]
    if dirs:
        counts += scan_files(first, dirs, secrets) if first else [0, 0]
    print(*counts)


if __name__ == "__main__":
    main()
