#!/usr/bin/env python3
"""Keep-alive request rates of real client patterns through the egress gateway, each against
the same client straight to the same upstream in the same run (loopback only):

  python-get      http.client, one kept connection through the proxy (absolute-form, what
                  urllib and requests send to an HTTP_PROXY), GET
  python-post     the same, POST with a 512-byte body
  python-chunked  the same, POST with a chunked body of four chunks (each chunk its own
                  send: the client's writes arrive one by one)
  node-get        node's http module with a keep-alive agent, one socket, to the upstream's
                  name (captured: node ignores the proxy variables), GET
  node-post       the same, POST with a 512-byte body
  curl-get        one curl process given N URLs (it keeps its connection), through the proxy
  curl-post       the same, each a POST with a 512-byte body

The upstream answers every request with a head and a 100-byte body written in two sends
(as http.server and many frameworks do), with TCP_NODELAY, so that a direct client never
waits and a gateway that delays small writes (Nagle's algorithm against a delayed ACK) shows
it. Rates are requests per second of one client; the ratio is through/direct, the median of
interleaved rounds. Each ratio is expected at least 0.25 (issue 11, item 25).

A benchmark, not a test: it reports. Bounded: BENCH_CLIENT_REQUESTS requests a round
(default 1000), BENCH_CLIENT_ROUNDS rounds (default 3), every step with a timeout.
Usage: gateway_clients.py [PADDOCK] [PATTERN...]
"""
import json, os, shutil, signal, statistics, subprocess, sys, tempfile

# The upstream: a head and a body in two sends, request bodies read whole (Content-Length
# or chunked), keep-alive.
SERVER = r'''
import socket, sys, threading
body = b"x" * 100
head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: text/plain\r\n\r\n" % len(body)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(128)
print(s.getsockname()[1], flush=True); sys.stdout.close()
def serve(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    f = c.makefile("rb")
    try:
        while True:
            line = f.readline()
            if not line:
                return
            length, chunked = 0, False
            while True:
                h = f.readline()
                if h in (b"\r\n", b""):
                    break
                name, _, value = h.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"transfer-encoding" and b"chunked" in value.lower():
                    chunked = True
            if chunked:
                while True:
                    size = int(f.readline().split(b";")[0], 16)
                    if size == 0:
                        while f.readline() not in (b"\r\n", b""):
                            pass
                        break
                    f.read(size + 2)
            elif length:
                f.read(length)
            c.sendall(head)
            c.sendall(body)
    except OSError:
        pass
    finally:
        c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
'''

PY_CLIENT = r'''
import http.client, json, sys, time
pattern, host, port, n, via_proxy = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "proxy"
conn = http.client.HTTPConnection("127.0.0.1", 3128) if via_proxy else http.client.HTTPConnection(host, port)
url = ("http://%s:%d/x" % (host, port)) if via_proxy else "/x"
body = b"b" * 512
def chunks():
    for i in range(4):
        yield b"c" * 128
def one():
    if pattern == "get":
        conn.request("GET", url)
    elif pattern == "post":
        conn.request("POST", url, body=body, headers={"Content-Type": "application/octet-stream"})
    else:
        conn.request("POST", url, body=chunks(), encode_chunked=True,
                     headers={"Content-Type": "application/octet-stream"})
    r = conn.getresponse()
    r.read()
    if r.status != 200:
        raise SystemExit("status %d" % r.status)
for _ in range(20):
    one()
t0 = time.perf_counter()
for _ in range(n):
    one()
print(json.dumps({"rate": n / (time.perf_counter() - t0)}))
'''

NODE_CLIENT = r'''
const http = require("http");
const [pattern, host, port, n] = [process.argv[2], process.argv[3], +process.argv[4], +process.argv[5]];
const agent = new http.Agent({keepAlive: true, maxSockets: 1});
const body = Buffer.alloc(512, "b");
function one() {
    return new Promise((resolve, reject) => {
        const opts = {host, port, path: "/x", agent, method: pattern === "get" ? "GET" : "POST"};
        if (pattern !== "get")
            opts.headers = {"Content-Type": "application/octet-stream", "Content-Length": body.length};
        const req = http.request(opts, res => {
            res.on("data", () => {});
            res.on("end", () => res.statusCode === 200 ? resolve() : reject(new Error("status " + res.statusCode)));
        });
        req.on("error", reject);
        req.end(pattern === "get" ? undefined : body);
    });
}
(async () => {
    for (let i = 0; i < 20; i++) await one();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await one();
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    console.log(JSON.stringify({rate: n / s}));
    agent.destroy();
})().catch(e => { console.error(String(e)); process.exit(1); });
'''

# curl: one process, N URLs on one kept connection; the rate from its own clock.
CURL_CLIENT = r'''
import json, os, subprocess, sys, time
pattern, host, port, n, via_proxy = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "proxy"
url = "http://%s:%d/x" % (host, port)
with open("/tmp/curl-urls", "w") as f:
    for _ in range(n):
        f.write('url = "%s"\noutput = "/dev/null"\n' % url)
cmd = ["curl", "-sS", "--fail", "-K", "/tmp/curl-urls"]
if pattern == "post":
    with open("/tmp/curl-body", "wb") as f:
        f.write(b"b" * 512)
    cmd += ["--data-binary", "@/tmp/curl-body", "-H", "Content-Type: application/octet-stream"]
env = dict(os.environ)
if not via_proxy:
    for k in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        env.pop(k, None)
t0 = time.perf_counter()
subprocess.run(cmd, check=True, env=env, timeout=300)
print(json.dumps({"rate": n / (time.perf_counter() - t0)}))
'''

PATTERNS = {
    # name: (client file, its pattern argument, through the gateway via "proxy" or "capture")
    "python-get": ("client_py.py", "get", "proxy"),
    "python-post": ("client_py.py", "post", "proxy"),
    "python-chunked": ("client_py.py", "chunked", "proxy"),
    "node-get": ("client_node.js", "get", "capture"),
    "node-post": ("client_node.js", "post", "capture"),
    "curl-get": ("client_curl.py", "get", "proxy"),
    "curl-post": ("client_curl.py", "post", "proxy"),
}


def main():
    paddock = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/paddock")
    wanted = sys.argv[2:] or list(PATTERNS)
    if shutil.which("node") is None:
        wanted = [w for w in wanted if not w.startswith("node-")]
        print("gateway clients: node is not installed; its rows are skipped", file=sys.stderr)
    n = int(os.environ.get("BENCH_CLIENT_REQUESTS", "1000"))
    rounds = int(os.environ.get("BENCH_CLIENT_ROUNDS", "3"))
    work = tempfile.mkdtemp(prefix="paddock-bench-clients-")
    server = None
    try:
        ws = os.path.join(work, "ws")
        os.makedirs(ws)
        for name, text in (("client_py.py", PY_CLIENT), ("client_node.js", NODE_CLIENT),
                           ("client_curl.py", CURL_CLIENT)):
            with open(os.path.join(ws, name), "w") as f:
                f.write(text)
        server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        port = int(server.stdout.readline())
        policy = os.path.join(work, "p.yaml")
        with open(policy, "w") as f:
            f.write("version: 1\nnetwork:\n  rules:\n    - {host: up.test, decision: allow}\n"
                    '  resolve: {"up.test:80": "127.0.0.1:%d"}\n' % port)
        env = dict(os.environ, PADDOCK_STATE_DIR=os.path.join(work, "state"))

        def interpreter(client):
            return ["node"] if client.endswith(".js") else [sys.executable]

        def direct(client, arg):
            out = subprocess.run(interpreter(client) + [os.path.join(ws, client), arg,
                                                        "127.0.0.1", str(port), str(n), "direct"],
                                 capture_output=True, text=True, timeout=300, cwd=ws)
            if out.returncode != 0:
                raise SystemExit("direct %s %s failed: %s" % (client, arg, out.stderr.strip()))
            return json.loads(out.stdout)["rate"]

        def through(client, arg, via):
            inside = "node" if client.endswith(".js") else "python3"
            out = subprocess.run([paddock, "run", "--workspace", ws, "--policy", policy, "--",
                                  inside, client, arg, "up.test", "80", str(n), via],
                                 capture_output=True, text=True, timeout=300, cwd=ws, env=env)
            if out.returncode != 0:
                raise SystemExit("through the gateway %s %s failed: %s" %
                                 (client, arg, out.stderr.strip()))
            return json.loads(out.stdout)["rate"]

        results = {}
        for name in wanted:
            client, arg, via = PATTERNS[name]
            d, t = [], []
            for _ in range(rounds):
                d.append(direct(client, arg))
                t.append(through(client, arg, via))
            dm, tm = statistics.median(d), statistics.median(t)
            results[name] = {"direct_per_s": dm, "gateway_per_s": tm, "ratio": tm / dm}
            print(f"{name:15s} direct {dm:8.0f}/s  through the gateway {tm:8.0f}/s  "
                  f"ratio {tm / dm:5.2f} (target >= 0.25)", flush=True)
        print(json.dumps({"requests": n, "rounds": rounds, "clients": results}))
    finally:
        if server:
            try:
                os.killpg(server.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
