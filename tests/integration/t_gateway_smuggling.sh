#!/usr/bin/env bash
# t_gateway_smuggling: requests the gateway judges must be the requests an upstream serves,
# even a lax one (tests/integration/lax_upstream.py, on the host's loopback):
#   - a body whose first line reads as a request line is refused (400), whatever the
#     method: a server that ignores this request's body (GET bodies, or an endpoint that
#     ignores Content-Length) would read it as another request, here a denied DELETE
#     /admin/x; a GET (HEAD, OPTIONS, TRACE) with any other body goes upstream with
#     "Connection: close" on a connection never used again;
#   - path parameters in dot segments are dot segments ("/v1/..;/admin/x" is /admin/x, as
#     servers that strip parameters serve it), and a path is judged without its parameters
#     too;
#   - only an Upgrade to WebSocket passes: h2c and any other token are dropped (the request
#     goes on as HTTP/1.1), and a 101 nobody asked for is a 502, never a tunnel;
#   - every gateway socket sends at once (TCP_NODELAY), seen on the supervisor's own
#     sockets (a benchmark, bench/gateway_clients.py, measures what it is for).
. "$(dirname "$0")/lib.sh"
need_userns

[ -e "$PADDOCK_BUILD/paddock-gateway.so" ] || bail_out "paddock-gateway.so is not built"

start_port_server LAX_PORT "$PYTHON" "$PADDOCK_TOP/tests/integration/lax_upstream.py" \
    --log "$T/lax.log"
: >"$T/lax.log"

cat >"$T/net.yaml" <<EOF
version: 1
network:
  rules:
    - {host: lax.test, methods: [GET, HEAD, OPTIONS, TRACE], path: /v1/**, decision: allow}
    - {host: lax.test, methods: [POST], path: /v1/**, decision: allow}
    - {host: lax.test, path: /admin/**, decision: deny, reason: "not for agents"}
  resolve: {"lax.test:80": "127.0.0.1:$LAX_PORT"}
EOF

# Each exchange on a connection of its own, through the proxy or captured; its answers'
# status lines (and the reason of a refusal) on one output line.
cat >"$WS/smuggle.py" <<'EOF'
import json, socket, sys
SMUGGLED = b"DELETE /admin/x HTTP/1.1\r\nHost: lax.test\r\n\r\n"
SMUGGLED_PROXY = b"DELETE http://lax.test/admin/x HTTP/1.1\r\nHost: lax.test\r\n\r\n"
def exchange(name, *messages, captured=False):
    s = socket.create_connection(("lax.test", 80) if captured else ("127.0.0.1", 3128))
    s.settimeout(20)
    statuses = []
    for m in messages:
        try:
            s.sendall(m)
        except OSError:
            statuses.append("send-failed")
            break
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            while len(rest) < length:
                chunk = s.recv(65536)
                if not chunk:
                    break
                rest += chunk
        except OSError:
            pass
        if not data:
            statuses.append("closed")
            break
        status = data.split(b"\r\n")[0].decode()
        reason = ""
        if rest.startswith(b"{"):
            try:
                reason = json.loads(rest).get("reason", "")
            except ValueError:
                pass
        statuses.append(status.split(" ", 1)[1] + (" (%s)" % reason if reason else ""))
    print(name, "|", " ; ".join(statuses), flush=True)
def req(method, target, extra=b"", body=b"", proxy=True):
    t = (b"http://lax.test" + target) if proxy else target
    return b"%s %s HTTP/1.1\r\nHost: lax.test\r\n%s\r\n%s" % (method, t, extra, body)
cl = b"Content-Length: %d\r\n" % len(SMUGGLED)
exchange("get-body", req(b"GET", b"/v1/x", cl, SMUGGLED), req(b"GET", b"/v1/after"))
exchange("get-body-captured", req(b"GET", b"/v1/x", cl, SMUGGLED, proxy=False),
         req(b"GET", b"/v1/after", proxy=False), captured=True)
exchange("head-body", req(b"HEAD", b"/v1/x", cl, SMUGGLED))
exchange("options-body", req(b"OPTIONS", b"/v1/x", cl, b"\r\n" + SMUGGLED))
exchange("post-static", req(b"POST", b"/v1/static", cl, SMUGGLED))
json_body = b'{"a": 1}'
exchange("get-json-body", req(b"GET", b"/v1/json1", b"Content-Length: 8\r\n", json_body),
         req(b"GET", b"/v1/json2", b"Content-Length: 8\r\n", json_body), req(b"GET", b"/v1/json3"))
later = b"{}\r\n" + SMUGGLED
exchange("get-body-later", req(b"GET", b"/v1/later", b"Content-Length: %d\r\n" % len(later), later))
exchange("get-chunked", req(b"GET", b"/v1/chunked", b"Transfer-Encoding: chunked\r\n",
                            b"%x\r\n%s\r\n0\r\n\r\n" % (len(SMUGGLED), SMUGGLED)))
exchange("get-empty-body", req(b"GET", b"/v1/empty", b"Content-Length: 0\r\n"))
exchange("post-body", req(b"POST", b"/v1/items", b"Content-Length: 5\r\n", b"hello"),
         req(b"POST", b"/v1/items", b"Content-Length: 5\r\n", b"again"))
for name, target in (("dotdot-param", b"/v1/..;/admin/x"), ("dotdot-session", b"/v1/..;jsessionid=1/admin/x"),
                     ("dotdot-encoded", b"/v1/%2e%2e;/admin/x"), ("dot-param", b"/v1/.;x/../../admin/x"),
                     ("param-segment", b"/admin;x=1/x")):
    exchange(name, req(b"GET", target))
exchange("param-allowed", req(b"GET", b"/v1/page;jsessionid=1"))
h2c = b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n"
exchange("h2c", req(b"GET", b"/v1/up", h2c), SMUGGLED_PROXY)
exchange("h2c-captured", req(b"GET", b"/v1/up", h2c, proxy=False), SMUGGLED, captured=True)
exchange("other-token", req(b"GET", b"/v1/up", b"Connection: Upgrade\r\nUpgrade: foo/1\r\n"), SMUGGLED_PROXY)
exchange("unasked-101", req(b"GET", b"/v1/switch"), SMUGGLED_PROXY)
exchange("websocket", req(b"GET", b"/v1/ws", b"Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"))
EOF
wrun --policy "$T/net.yaml" -- python3 smuggle.py
expect_eq "the clients ran" 0 "$RC"
answer() { printf '%s\n' "$OUT" | sed -n "s/^$1 | //p"; }

refused='^400 Bad Request \(the body begins with an HTTP request line: an upstream that does not read this request.s body would take it for another request\)'
expect_match "a GET whose body reads as a request is refused (400), saying why" "$refused" \
    "$(answer get-body)"
expect_match "... and the connection ends there" ' ; closed$' "$(answer get-body)"
expect_match "... captured too" "$refused ; closed\$" "$(answer get-body-captured)"
expect_match "... a HEAD's" "$refused" "$(answer head-body)"
expect_match "... an OPTIONS's, after an empty line" "$refused" "$(answer options-body)"
expect_match "... and a POST's (an endpoint that does not read its body)" "$refused" \
    "$(answer post-static)"
expect_eq "a GET with another body goes through, the client's connection kept" \
    "200 OK ; 200 OK ; 200 OK" "$(answer get-json-body)"
expect_eq "... a body whose later line is a request too (the upstream reads no further)" \
    "200 OK" "$(answer get-body-later)"
expect_eq "... and a chunked one" "200 OK" "$(answer get-chunked)"
expect_eq "a GET with Content-Length: 0 goes through" "200 OK" "$(answer get-empty-body)"
expect_eq "POSTs with their bodies go through" "200 OK ; 200 OK" "$(answer post-body)"
conn_of() { "$PYTHON" -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["path"] == sys.argv[2]: print(r["conn"], r["connection"])' "$T/lax.log" "$1"; }
j1=$(conn_of /v1/json1) j2=$(conn_of /v1/json2) j3=$(conn_of /v1/json3)
expect_eq "a GET with a body goes upstream with Connection: close" "close close" \
    "${j1#* } ${j2#* }"
expect_eq "... each on an upstream connection of its own" "3 distinct" \
    "$(printf '%s\n' "${j1%% *}" "${j2%% *}" "${j3%% *}" | sort -u | wc -l) distinct"
expect_eq "... while other requests keep theirs" "$(conn_of /v1/items | head -n1 | cut -d' ' -f1)" \
    "$(conn_of /v1/items | tail -n1 | cut -d' ' -f1)"

expect_match "/v1/..;/admin/x is /admin/x: denied" '^403 Forbidden \(not for agents\)' \
    "$(answer dotdot-param)"
expect_match "/v1/..;jsessionid=1/admin/x: denied" '^403 Forbidden \(not for agents\)' \
    "$(answer dotdot-session)"
expect_match "/v1/%2e%2e;/admin/x: denied" '^403 Forbidden \(not for agents\)' \
    "$(answer dotdot-encoded)"
expect_match "/v1/.;x/../../admin/x: denied" '^403 Forbidden \(not for agents\)' "$(answer dot-param)"
expect_match "/admin;x=1/x is /admin/x without its parameters: denied" \
    '^403 Forbidden \(not for agents\)' "$(answer param-segment)"
expect_eq "a parameter in an allowed path still passes" "200 OK" "$(answer param-allowed)"

expect_eq "Upgrade: h2c is dropped: a plain 200, then the DELETE is judged (403)" \
    "200 OK ; 403 Forbidden (not for agents)" "$(answer h2c)"
expect_eq "... captured too" "200 OK ; 403 Forbidden (not for agents)" "$(answer h2c-captured)"
expect_eq "... and any other token" "200 OK ; 403 Forbidden (not for agents)" "$(answer other-token)"
expect_match "a 101 nobody asked for: 502, never a tunnel" \
    '^502 Bad Gateway \(the upstream switched protocols \(101, Upgrade: h2c\)' "$(answer unasked-101)"
expect_match "... and the connection ends" ' ; closed$' "$(answer unasked-101)"
expect_eq "a WebSocket upgrade still passes" "101 Switching Protocols" "$(answer websocket)"

served=$(cat "$T/lax.log")
expect_eq "the lax upstream never served the smuggled DELETE" 0 \
    "$(printf '%s\n' "$served" | grep -c '"method": "DELETE"')"
expect_eq "... nor anything under /admin" 0 "$(printf '%s\n' "$served" | grep -c '"path": "/admin')"
expect_eq "... and saw no Upgrade but the WebSocket one" '"websocket"' \
    "$(printf '%s\n' "$served" | grep -o '"upgrade": "[^"]*"' | sed 's/"upgrade": //' | sort -u | paste -sd' ')"
expect_eq "... nor a request after a 101 but the WebSocket's (none)" 0 \
    "$(printf '%s\n' "$served" | grep -c '"upgraded": true')"
pdk audit --json
expect_match "a dropped upgrade is recorded" '"kind":"net.upgrade_dropped"' "$OUT"
expect_ne "... with its token" 0 \
    "$(printf '%s\n' "$OUT" | grep '"kind":"net.upgrade_dropped"' | grep -c '"upgrade":"h2c"')"

# A body held whole to have a credential's placeholders replaced (replace_in_body) is
# looked at the same way before it goes, chunked or not.
set_secret form_token "form-secret-$RANDOM"
cat >>"$T/net.yaml" <<'EOF'
credentials:
  - name: form
    provider: static
    value: {secret: form_token}
    hosts: [lax.test]
    placeholder: {env: FORM_TOKEN}
    replace_in_body: true
EOF
cat >"$WS/rewrite.py" <<'EOF'
import socket
SMUGGLED = b"DELETE /admin/x HTTP/1.1\r\nHost: lax.test\r\n\r\n"
for name, framing, body in (("length", b"Content-Length: %d\r\n" % len(SMUGGLED), SMUGGLED),
                            ("chunked", b"Transfer-Encoding: chunked\r\n",
                             b"%x\r\n%s\r\n0\r\n\r\n" % (len(SMUGGLED), SMUGGLED))):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.settimeout(20)
    s.sendall(b"POST http://lax.test/v1/static HTTP/1.1\r\nHost: lax.test\r\n%s\r\n%s" % (framing, body))
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except OSError:
        pass
    print(name, data.split(b"\r\n")[0].decode() or "closed")
EOF
wrun --policy "$T/net.yaml" -- python3 rewrite.py
expect_eq "replace_in_body: a held body that reads as a request is refused too" \
    "length HTTP/1.1 400 Bad Request|chunked HTTP/1.1 400 Bad Request" "$(printf '%s' "$OUT" | paste -sd'|')"
expect_eq "... and the lax upstream never served it" 0 "$(grep -c '"method": "DELETE"' "$T/lax.log")"

# TCP_NODELAY: a request held at the upstream keeps both of the gateway's sockets open;
# the supervisor's connected TCP sockets are read (pidfd_getfd) while it waits.
if is_root; then
    hold="$T/hold.fifo"
    mkfifo "$hold"
    start_port_server HOLD_PORT "$PYTHON" -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
data = b""
while b"\r\n\r\n" not in data:
    data += c.recv(4096)
with open(sys.argv[1], "w") as f:
    f.write("held\n")
c.recv(1)  # until the gateway lets go' "$hold"
    holder=$PORT_SERVER_PID
    sed "s/lax.test:80\": \"127.0.0.1:$LAX_PORT/held.test:80\": \"127.0.0.1:$HOLD_PORT/; s/host: lax.test, methods: \[POST\]/host: held.test, methods: [POST]/" \
        "$T/net.yaml" >"$T/hold.yaml"
    cd "$WS"
    HOME="$TEST_HOME" timeout -k 5 60 "$PADDOCK" run --workspace "$WS" --policy "$T/hold.yaml" -- \
        curl -sS --max-time 30 -o /dev/null -d x http://held.test/v1/held >/dev/null 2>&1 &
    run_pid=$!
    cd - >/dev/null
    track_pid "$run_pid"
    IFS= read -r -t 30 line <"$hold"
    supervisor=$(cat /proc/"$run_pid"/task/*/children 2>/dev/null | awk '{print $1}')
    nodelay=$("$PYTHON" - "$supervisor" <<'EOF'
import ctypes, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])
pidfd = libc.syscall(434, pid, 0)  # pidfd_open
seen = []
for name in os.listdir("/proc/%d/fd" % pid):
    try:
        if not os.readlink("/proc/%d/fd/%s" % (pid, name)).startswith("socket:"):
            continue
    except OSError:
        continue
    fd = libc.syscall(438, pidfd, int(name), 0)  # pidfd_getfd
    if fd < 0:
        continue
    s = socket.socket(fileno=fd)
    try:
        if (s.family in (socket.AF_INET, socket.AF_INET6) and s.type == socket.SOCK_STREAM
                and not s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)):
            seen.append(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0)
    finally:
        s.close()
print("%d connected, %d with TCP_NODELAY" % (len(seen), sum(seen)))
EOF
)
    expect_eq "every connected socket of the gateway sends at once (TCP_NODELAY)" \
        "2 connected, 2 with TCP_NODELAY" "$nodelay"
    stop_pid "$holder" KILL >/dev/null 2>&1
    wait "$run_pid" 2>/dev/null
else
    skip "TCP_NODELAY on the gateway's sockets" "reading another process's sockets needs root"
fi

