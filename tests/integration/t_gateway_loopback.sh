#!/usr/bin/env bash
# t_gateway_loopback: with a gateway, the sandbox's loopback is its own and the host's is
# reached only when a rule says so:
#   - NO_PROXY/no_proxy name the sandbox's loopback in every client's form: a dev server
#     inside on 127.0.0.1 is reached by curl, Python's urllib and Node's axios without the
#     gateway (they all read HTTP_PROXY);
#   - a rule for 127.0.0.1 without host_loopback reaches nothing on the host, through the
#     proxy or captured, and `paddock policy lint` warns about it; with host_loopback: true
#     it reaches the host's service both ways (a captured port on the sandbox's loopback
#     is the host's then), and localhost too when a rule names it;
#   - a connect to the sandbox's 127.0.0.1 on a captured port, where nothing inside can
#     listen, is judged like any request (403 by default), not silently dropped.
# The host's service is a server this test starts on 127.0.0.1.
. "$(dirname "$0")/lib.sh"
need_userns

[ -e "$PADDOCK_BUILD/paddock-gateway.so" ] || bail_out "paddock-gateway.so is not built"
command -v curl >/dev/null || skip_all "curl is not installed"

start_upstream HTTP_PORT --log "$T/upstream.log"
: >"$T/upstream.log"

sdk="$PADDOCK_TOP/tests/node/node_modules"
cat >"$T/bare.yaml" <<EOF
version: 1
network:
  rules:
    - {host: api.test, decision: allow}
    - {host: 127.0.0.1, port: $HTTP_PORT, decision: allow}
  resolve: {"api.test:80": "127.0.0.1:$HTTP_PORT"}
env:
  set: {NODE_PATH: "$sdk"}
filesystem:
  read_allow: ["$sdk"]
EOF
sed "s/{host: 127.0.0.1, port: $HTTP_PORT, decision: allow}/{host: 127.0.0.1, port: $HTTP_PORT, decision: allow, host_loopback: true}\n    - {host: localhost, port: $HTTP_PORT, decision: allow, host_loopback: true}/" \
    "$T/bare.yaml" >"$T/host.yaml"

# A dev server inside, on the sandbox's loopback, and its clients; then the host's service.
cat >"$WS/dev.py" <<EOF
import http.server, os, subprocess, threading, urllib.request
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"inside\n"
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=server.serve_forever, daemon=True).start()
port = server.server_address[1]
def curl(*args, env=None):
    r = subprocess.run(["curl", "-sS", "--max-time", "20", "-w", " %{http_code}"] + list(args),
                       capture_output=True, text=True, env=env)
    return (" ".join(r.stdout.split()) or "none") + " rc=%d" % r.returncode
print("no_proxy", os.environ.get("NO_PROXY"), "|", os.environ.get("no_proxy"))
print("dev curl 127.0.0.1", curl("http://127.0.0.1:%d/" % port))
print("dev curl localhost", curl("http://localhost:%d/" % port))
try:
    print("dev urllib", urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=20).read().decode().strip())
except Exception as e:
    print("dev urllib error", e)
node = subprocess.run(["node", "-e", 'require("axios").get(process.argv[1]).then(r => console.log(r.data.trim())).catch(e => console.log("error", e.response ? e.response.status : e.code))',
                       "http://127.0.0.1:%d/" % port], capture_output=True, text=True)
print("dev axios", node.stdout.strip() or node.stderr.strip().splitlines()[-1:])
print("host captured", curl("-o", "/dev/null", "http://127.0.0.1:$HTTP_PORT/v1/host-captured"))
noenv = {k: v for k, v in os.environ.items() if k.lower() != "no_proxy"}
print("host proxy", curl("http://127.0.0.1:$HTTP_PORT/v1/host-proxy", env=noenv))
print("host localhost", curl("-o", "/dev/null", "http://localhost:$HTTP_PORT/v1/host-localhost", env=noenv))
print("port 80", curl("-i", "--noproxy", "*", "http://127.0.0.1/v1/nothing-listens"))
EOF

wrun --policy "$T/bare.yaml" -- python3 dev.py
expect_eq "the clients ran" 0 "$RC"
line() { printf '%s\n' "$OUT" | sed -n "s/^$1 //p"; }
expect_eq "NO_PROXY and no_proxy name the sandbox's loopback" \
    "localhost,127.0.0.1,::1,[::1],127.0.0.0/8,0.0.0.0 | localhost,127.0.0.1,::1,[::1],127.0.0.0/8,0.0.0.0" \
    "$(line no_proxy)"
expect_eq "a dev server inside on 127.0.0.1 answers curl" "inside 200 rc=0" "$(line 'dev curl 127.0.0.1')"
expect_eq "... on localhost too" "inside 200 rc=0" "$(line 'dev curl localhost')"
expect_eq "... Python's urllib (HTTP_PROXY set)" "inside" "$(line 'dev urllib')"
if command -v node >/dev/null && [ -d "$sdk/axios" ]; then
    expect_eq "... Node's axios (HTTP_PROXY set)" "inside" "$(line 'dev axios')"
else
    skip_optional "Node's axios reaches the dev server" "node or tests/node/node_modules/axios missing"
fi
expect_eq "a bare 127.0.0.1 rule: a captured connect to the host's port is refused" "403 rc=0" \
    "$(line 'host captured')"
expect_match "... through the proxy too, saying what reaches it" \
    '"reason":"127.0.0.1 is a loopback address of the host, which only a rule with host_loopback: true reaches.* 403 rc=0' \
    "$(line 'host proxy')"
expect_eq "localhost (no rule): refused" "403 rc=0" "$(line 'host localhost')"
expect_match "the sandbox's 127.0.0.1 on a captured port: judged (403 with the reason), not dropped" \
    '^HTTP/1.1 403 Forbidden.*X-Paddock-Decision: deny.*network.default' "$(line 'port 80')"
expect_eq "the host's service saw none of it" 0 "$(grep -c . "$T/upstream.log")"

wrun --policy "$T/host.yaml" -- python3 dev.py
expect_eq "host_loopback: the clients ran" 0 "$RC"
expect_eq "host_loopback: the dev server inside still answers" "inside 200 rc=0" \
    "$(line 'dev curl 127.0.0.1')"
expect_eq "host_loopback: a captured connect reaches the host's service" "200 rc=0" \
    "$(line 'host captured')"
expect_match "... through the proxy too" '"path": "/v1/host-proxy".* 200 rc=0' "$(line 'host proxy')"
expect_eq "... and localhost, named by its own rule" "200 rc=0" "$(line 'host localhost')"
expect_eq "the host's service saw exactly those" "/v1/host-captured /v1/host-localhost /v1/host-proxy" \
    "$("$PYTHON" -c 'import json, sys; print(" ".join(sorted(json.loads(l)["path"] for l in open(sys.argv[1]))))' "$T/upstream.log")"

pdk policy lint "$T/bare.yaml"
expect_eq "lint: a bare loopback rule still loads" 0 "$RC"
expect_match "... with a warning naming the rule and the fix" \
    "bare.yaml:5: warning: network.rules\[1\]: 127.0.0.1 is a loopback host, and this rule reaches nothing.*host_loopback: true" \
    "$OUT"
pdk policy lint --json "$T/bare.yaml"
expect_eq "... in --json as warnings" "1 5" \
    "$(json_get "$OUT" '"%d %d" % (len(j["warnings"]), j["warnings"][0]["line"])')"
pdk policy lint "$T/host.yaml"
expect_eq "lint: with host_loopback, no warning" "0 $T/host.yaml: ok" "$RC $OUT"
printf 'version: 1\nnetwork:\n  rules:\n    - {host: "*", decision: allow, host_loopback: true}\n' >"$T/glob.yaml"
pdk policy lint "$T/glob.yaml"
expect_match "host_loopback on a pattern is an error" \
    'glob.yaml:4:[0-9]+: network.rules\[0\].host_loopback: a rule that reaches the host.s loopback names its host exactly' \
    "$OUT"
