#!/usr/bin/env python3
"""Egress gateway benchmarks, each against its baseline in the same run, on loopback only:

  latency     added latency per request through the explicit proxy with keep-alive: a
              client in the sandbox sends N GETs on one connection through the proxy; the
              same client on the host sends them straight to the upstream (p50 of each)
  inject      in one sandbox, two kept connections through the proxy used in turn: one to
              a host with a credential (its placeholder replaced in a field, its header
              set) and one to a host without (a field of the same size): what injection
              adds to the same gateway at the same moment
  tunnel      a 100 MB download through a CONNECT tunnel (TLS end to end, passthrough)
              against the same download straight from the upstream
  intercept   the same download with TLS intercepted at the gateway (decrypted, judged,
              encrypted again toward the upstream)
  concurrent  1,000 connections through the proxy held open at once, each then used for
              one request: how many failed

The upstream is `openssl s_server -WWW` (TLS) and a small HTTP server in this file (plain).
A benchmark, not a test: it reports. Bounded: BENCH_REQUESTS requests, BENCH_MB megabytes,
BENCH_CONNS connections, each step with a timeout.
"""
import json, os, shutil, signal, socket, statistics, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))

CLIENT = r'''
import json, os, socket, sys, time, ssl, resource
mode = sys.argv[1]
def connect(host, port, proxy, extra=""):
    s = socket.create_connection(proxy or (host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    target = ("http://%s:%d/x" % (host, port)) if proxy else "/x"
    return {"s": s, "req": ("GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (target, host, extra)).encode(),
            "buf": b""}
def one(c):
    """One request on a kept connection: microseconds until its whole response is in."""
    s, buf = c["s"], c["buf"]
    t0 = time.perf_counter_ns()
    s.sendall(c["req"])
    while True:
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            head = buf[:end].decode()
            length = int([l.split(":")[1] for l in head.split("\r\n") if l.lower().startswith("content-length")][0])
            if len(buf) >= end + 4 + length:
                c["buf"] = buf[end + 4 + length:]
                break
        buf += s.recv(65536)
    return (time.perf_counter_ns() - t0) / 1000
def http_latency(host, port, proxy, n):
    c = connect(host, port, proxy)
    return sorted(one(c) for _ in range(n))
if mode == "paired":
    # two kept connections through the proxy, used in turn: to the credential's host with
    # its placeholder in a field (replaced, and the inject header set), and to a host
    # without a credential with a field of the same size: the same sandbox, gateway and
    # moment, so the difference is what injection costs
    with_host, without_host, port, n = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    token = os.environ["BENCH_TOKEN"]
    a = connect(with_host, port, ("127.0.0.1", 3128), "X-Token: %s\r\n" % token)
    b = connect(without_host, port, ("127.0.0.1", 3128), "X-Token: %s\r\n" % ("x" * len(token)))
    ta, tb = [], []
    for i in range(n):
        ta.append(one(a))
        tb.append(one(b))
    ta.sort(); tb.sort()
    print(json.dumps({"with_p50": ta[n // 2], "without_p50": tb[n // 2]}))
elif mode == "latency":
    host, port, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    proxy = ("127.0.0.1", 3128) if len(sys.argv) > 5 else None
    t = http_latency(host, port, proxy, n)
    print(json.dumps({"p50": t[len(t) // 2], "p90": t[len(t) * 9 // 10]}))
elif mode == "concurrent":
    host, port, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    socks, errors = [], 0
    for i in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
            socks.append(s)
        except OSError:
            errors += 1
    req = ("GET http://%s:%d/x HTTP/1.1\r\nHost: %s\r\n\r\n" % (host, port, host)).encode()
    for s in socks:
        try: s.sendall(req)
        except OSError: errors += 1
    ok = 0
    for s in socks:
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk: break
                data += chunk
            ok += data.startswith(b"HTTP/1.1 200")
        except OSError:
            pass
        s.close()
    print(json.dumps({"held": len(socks), "ok": ok, "errors": n - ok}))
'''

SERVER = r'''
import socket, sys, threading
body = b"x" * 100
resp = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: text/plain\r\n\r\n" % len(body) + body
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(4096)
print(s.getsockname()[1], flush=True); sys.stdout.close()
def serve(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(65536)
                if not d: return
                buf += d
            i = buf.index(b"\r\n\r\n"); buf = buf[i + 4:]
            c.sendall(resp)
    except OSError:
        pass
    finally:
        c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
'''


def start(cmd, **kw):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         start_new_session=True, **kw)
    return p


def stop(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def main():
    paddock = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/paddock")
    n = int(os.environ.get("BENCH_REQUESTS", "2000"))
    mb = int(os.environ.get("BENCH_MB", "100"))
    conns = int(os.environ.get("BENCH_CONNS", "1000"))
    work = tempfile.mkdtemp(prefix="paddock-bench-gw-")
    procs = []
    try:
        ws = os.path.join(work, "ws")
        os.makedirs(ws)
        env = dict(os.environ, PADDOCK_STATE_DIR=os.path.join(work, "state"))
        with open(os.path.join(ws, "client.py"), "w") as f:
            f.write(CLIENT)
        http = start([sys.executable, "-c", SERVER])
        procs.append(http)
        http_port = int(http.stdout.readline())
        # TLS upstream: openssl s_server serving a file
        sub = lambda *a: subprocess.run(a, check=True, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, cwd=work)
        sub("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-days", "2", "-subj", "/CN=bench CA", "-keyout", "ca.key", "-out", "ca.pem")
        sub("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-subj", "/CN=dl.test", "-keyout", "dl.key", "-out", "dl.csr")
        with open(os.path.join(work, "san.ext"), "w") as f:
            f.write("subjectAltName=DNS:dl.test,DNS:pass.test\n")
        sub("openssl", "x509", "-req", "-in", "dl.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "dl.pem")
        with open(os.path.join(work, "big"), "wb") as f:
            f.truncate(mb << 20)
        shutil.copy(os.path.join(work, "ca.pem"), os.path.join(ws, "ca.pem"))
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        tls_port = s.getsockname()[1]
        s.close()
        tls = start(["openssl", "s_server", "-quiet", "-accept", "127.0.0.1:%d" % tls_port,
                     "-cert", "dl.pem", "-key", "dl.key", "-WWW"], cwd=work)
        procs.append(tls)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", tls_port)).close()
                break
            except OSError:
                time.sleep(0.05)
        policy = os.path.join(work, "p.yaml")
        with open(policy, "w") as f:
            f.write("version: 1\nnetwork:\n  rules:\n"
                    "    - {host: up.test, decision: allow}\n"
                    "    - {host: dl.test, decision: allow}\n"
                    "    - {host: pass.test, decision: allow}\n"
                    "  passthrough: [pass.test]\n"
                    '  resolve: {"up.test:80": "127.0.0.1:%d", "dl.test:443": "127.0.0.1:%d",'
                    ' "pass.test:443": "127.0.0.1:%d"}\n'
                    "  upstream_ca: [%s/ca.pem]\n"
                    # the concurrent step holds more than the default cap (256) at once
                    "  limits: {connections: %d}\n"
                    % (http_port, tls_port, tls_port, work, conns + 64))

        cred_policy = os.path.join(work, "cred.yaml")
        with open(policy) as f, open(cred_policy, "w") as out:
            text = f.read().replace("    - {host: up.test, decision: allow}\n",
                                    "    - {host: up.test, decision: allow}\n"
                                    "    - {host: up2.test, decision: allow}\n")
            text = text.replace('"up.test:80": "127.0.0.1:%d"' % http_port,
                                '"up.test:80": "127.0.0.1:%d", "up2.test:80": "127.0.0.1:%d"'
                                % (http_port, http_port))
            out.write(text + "credentials:\n  - {name: bench, provider: static, value: "
                      "{secret: bench_token}, hosts: [up.test], inject: {header: Authorization, "
                      "value: \"Bearer {token}\"}, replace_in_headers: [X-Token], "
                      "allow_plain_http: true, placeholder: {env: BENCH_TOKEN}}\n")
        # (a token of random characters: one of 40 x would be "reflected" in the upstream's
        # body of x, and masked there)
        subprocess.run([paddock, "secret", "set", "bench_token"],
                       input="t-bench-" + os.urandom(20).hex(),
                       env=env, text=True, check=True, capture_output=True)

        def sandboxed(*cmd, timeout=300, pol=None):
            r = subprocess.run([paddock, "run", "--workspace", ws, "--policy", pol or policy,
                                "--"] + list(cmd), env=env, cwd=ws, capture_output=True,
                               text=True, timeout=timeout)
            return r.stdout

        def curl_speed(url, *extra, inside=False):
            cmd = ["curl", "-sS", "-o", "/dev/null", "-w", "%{speed_download}",
                   "--max-time", "120"] + list(extra) + [url]
            out = sandboxed(*cmd) if inside else subprocess.run(
                cmd, capture_output=True, text=True, cwd=work, timeout=300).stdout
            return float(out.strip() or 0)

        # latency, interleaved rounds
        direct, proxied = [], []
        for _ in range(3):
            out = subprocess.run([sys.executable, os.path.join(ws, "client.py"), "latency",
                                  "127.0.0.1", str(http_port), str(n)], capture_output=True,
                                 text=True, timeout=300).stdout
            direct.append(json.loads(out)["p50"])
            proxied.append(json.loads(sandboxed("python3", "client.py", "latency", "up.test",
                                                "80", str(n), "proxy"))["p50"])
        d, p = statistics.median(direct), statistics.median(proxied)
        print(f"latency direct          p50 {d:8.1f} us a request (keep-alive, {n} requests)")
        print(f"latency through proxy   p50 {p:8.1f} us; added {p - d:6.1f} us (target <= 300 us)")
        # injection: paired in one sandbox (client.py paired), three rounds
        pairs = [json.loads(sandboxed("python3", "client.py", "paired", "up.test", "up2.test",
                                      "80", str(n), pol=cred_policy))
                 for _ in range(int(os.environ.get("BENCH_INJECT_ROUNDS", "3")))]
        ij = statistics.median(p["with_p50"] for p in pairs)
        pl = statistics.median(p["without_p50"] for p in pairs)
        added = statistics.median(p["with_p50"] - p["without_p50"] for p in pairs)
        print(f"latency with injection  p50 {ij:8.1f} us; without {pl:6.1f} us (paired, one "
              f"sandbox); injection adds {added:5.1f} us = {ij / pl:.3f} of the gateway's own")

        url = "https://dl.test:%d/big" % tls_port
        speeds = {"direct": [], "tunnel": [], "intercept": []}
        for _ in range(3):
            speeds["direct"].append(curl_speed(url, "--cacert", "ca.pem", "--resolve",
                                               "dl.test:%d:127.0.0.1" % tls_port))
            speeds["tunnel"].append(curl_speed("https://pass.test/big", "--cacert", "ca.pem",
                                               inside=True))
            speeds["intercept"].append(curl_speed("https://dl.test/big", inside=True))
        sp = {k: statistics.median(v) / (1 << 20) for k, v in speeds.items()}
        print(f"download direct (TLS)   {sp['direct']:8.1f} MiB/s ({mb} MB)")
        print(f"CONNECT tunnel          {sp['tunnel']:8.1f} MiB/s; tunnel/direct = "
              f"{sp['tunnel'] / sp['direct']:.2f} (target >= 0.70)")
        print(f"intercepted TLS         {sp['intercept']:8.1f} MiB/s; intercepted/direct = "
              f"{sp['intercept'] / sp['direct']:.2f} (target >= 0.40)")

        c = json.loads(sandboxed("python3", "client.py", "concurrent", "up.test", "80", str(conns)))
        print(f"concurrent connections  {c['held']} held, {c['ok']} answered, {c['errors']} errors "
              f"(of {conns})")
        print(json.dumps({"latency_direct_p50_us": d, "latency_proxy_p50_us": p,
                          "latency_added_us": p - d, "latency_injected_p50_us": ij,
                          "injection_added_us": added,
                          "latency_not_injected_p50_us": pl, "injection_pairs": pairs, "download_direct_mib_s": sp["direct"],
                          "tunnel_mib_s": sp["tunnel"], "intercept_mib_s": sp["intercept"],
                          "tunnel_ratio": sp["tunnel"] / sp["direct"],
                          "intercept_ratio": sp["intercept"] / sp["direct"],
                          "concurrent": c}))
    finally:
        for p in procs:
            stop(p)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
