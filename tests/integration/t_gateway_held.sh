#!/usr/bin/env bash
# t_gateway_held: a network request a rule asks for, held at the gateway while a human is
# asked (issue 11 items 8, 9, 22c, 30).
#   - its body is held before the approval is made, and shown (escaped, de-chunked) even
#     when it comes after the head; a body that does not come, or is larger than what is
#     held, is said to be so in the approval;
#   - a held request waits approvals.request_timeout at most: then 504 naming the key, the
#     approval expired, a late approve refused, nothing sent upstream; approvals show how
#     long each waited;
#   - at most approvals.max_held_requests are held at once: the next is refused at once
#     (429), and that is in the audit log;
#   - an intercepted connection's net.connect says intercept, not deny.
# Upstreams are servers this test starts on 127.0.0.1 (names mapped with `resolve`).
. "$(dirname "$0")/lib.sh"
need_userns

[ -e "$PADDOCK_BUILD/paddock-gateway.so" ] || bail_out "paddock-gateway.so is not built"
command -v curl >/dev/null || skip_all "curl is not installed"

start_upstream HTTP_PORT --log "$T/upstream.log"
test_certs tls tls.test
start_upstream TLS_PORT --tls "$T/tls.pem" "$T/tls.key"

# policy NAME APPROVALS: a policy where POSTs to api.test ask
policy() {
    cat >"$T/$1.yaml" <<EOF
version: 1
network:
  rules:
    - {host: api.test, methods: [GET], decision: allow}
    - {host: api.test, methods: [POST], decision: ask, reason: "writes need a human"}
    - {host: tls.test, methods: [GET], decision: allow}
    - {host: tls.test, methods: [DELETE], decision: deny}
  resolve:
    "api.test:80": "127.0.0.1:$HTTP_PORT"
    "tls.test:443": "127.0.0.1:$TLS_PORT"
  upstream_ca: [$T/ca.pem]
approvals: $2
EOF
}
policy held "{timeout: 60}"
policy short "{timeout: 60, request_timeout: 2}"
policy capped "{timeout: 60, request_timeout: 40, max_held_requests: 2}"

# The sandboxed client: raw requests through the proxy, each way of sending a body.
cat >"$WS/held.py" <<'EOF'
import socket, sys

def connect():
    return socket.create_connection(("127.0.0.1", 3128), timeout=50)

def response(s):
    data = b""
    while b"\r\n\r\n" not in data:
        got = s.recv(65536)
        if not got:
            break
        data += got
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    n = 0
    for l in lines[1:]:
        if l.lower().startswith(b"content-length:"):
            n = int(l.split(b":")[1])
    while len(body) < n:
        got = s.recv(65536)
        if not got:
            break
        body += got
    return lines[0].decode() + " " + body.decode(errors="replace").strip()

def sync():
    """A request through the gateway and back: the gateway has read what was sent before."""
    s = connect()
    s.sendall(b"GET http://api.test/v1/sync HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")
    response(s)
    s.close()

def post(path, extra=b"", body=b""):
    s = connect()
    s.sendall(b"POST http://api.test" + path + b" HTTP/1.1\r\nHost: api.test\r\n" + extra + b"\r\n" + body)
    return s

mode = sys.argv[1]
if mode == "late-body":
    body = b"name=late&esc=\x1b[2K!"
    s = post(b"/v1/late", b"Content-Length: %d\r\n" % len(body))
    sync()
    s.sendall(body)
    print(response(s), flush=True)
elif mode == "chunked":
    s = post(b"/v1/chunked", b"Transfer-Encoding: chunked\r\n", b"5\r\nhello\r\n")
    sync()
    s.sendall(b"6\r\n world\r\n0\r\n\r\n")
    print(response(s), flush=True)
elif mode == "no-body":
    s = post(b"/v1/nobody", b"Content-Length: 11\r\n")
    print(response(s), flush=True)
elif mode == "complete":
    s = post(b"/v1/" + sys.argv[2].encode(), b"Content-Length: 2\r\n", b"ok")
    print(response(s), flush=True)
elif mode == "cap":
    held = [post(b"/v1/held1", b"Content-Length: 0\r\n"), post(b"/v1/held2", b"Content-Length: 0\r\n")]
    sync()
    print("third: " + response(post(b"/v1/held3", b"Content-Length: 0\r\n")), flush=True)
    for s in held:
        print(response(s), flush=True)
EOF

# pending_field ID EXPR: a field of approval ID (from approvals --json --all), as JSON
approval_field() {
    pdk approvals --json --all
    printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
for l in sys.stdin:
    if l.strip():
        j = json.loads(l)
        if j["id"] == sys.argv[1]:
            print(json.dumps(eval(sys.argv[2], {"j": j, "r": j.get("request") or {}}), sort_keys=True))' "$1" "$2"
}

# wait_request PATH: the approval (in any state: a short wait limit may pass before a poll
# sees it pending) of the request to http://api.test PATH, into ID.
wait_request() {
    ID=""
    for _ in $(seq 100); do
        pdk approvals --json --all
        ID=$(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
for l in sys.stdin:
    if l.strip():
        j = json.loads(l)
        if (j.get("request") or {}).get("url") == "http://api.test" + sys.argv[1]:
            print(j["id"]); break' "$1" 2>/dev/null)
        [ -n "$ID" ] && return 0
        sleep 0.1
    done
    return 1
}

# ---- item 9: the body is held before asking ----------------------------------------------

start_bg late.fifo --workspace "$WS" --policy "$T/held.yaml" -- python3 held.py late-body
wait_approval POST
expect_ne "a POST whose body comes after its head is held as an approval" "" "$ID"
expect_eq "... with its body, received after the head, shown escaped" \
    '["name=late&esc=\\x1b[2K!", 19, 19, true]' \
    "$(approval_field "$ID" '[r.get("body_preview"), r.get("body_bytes"), r.get("body_announced"), r.get("body_complete")]')"
pdk approvals
expect_match "paddock approvals shows the body held" 'body:  19 bytes held: name=late&esc=\\x1b\[2K!' "$OUT"
pdk approve "$ID"
read_bg_line
expect_match "approved: 200" "^HTTP/1.1 200 " "$BG_LINE"
expect_match "... and the upstream got the whole body" '"path": "/v1/late".*"body_len": 19' \
    "$(cat "$T/upstream.log")"
wait "$BG_PID" 2>/dev/null

start_bg chunked.fifo --workspace "$WS" --policy "$T/held.yaml" -- python3 held.py chunked
wait_approval POST
expect_eq "a chunked body sent in two parts is held whole and shown de-chunked" \
    '["hello world", 11, null, true]' \
    "$(approval_field "$ID" '[r.get("body_preview"), r.get("body_bytes"), r.get("body_announced"), r.get("body_complete")]')"
pdk approve "$ID"
read_bg_line
expect_match "approved: 200" "^HTTP/1.1 200 " "$BG_LINE"
expect_match "... the upstream got it" '"path": "/v1/chunked".*"body": "hello world"' \
    "$(cat "$T/upstream.log")"
wait "$BG_PID" 2>/dev/null

start_bg nobody.fifo --workspace "$WS" --policy "$T/held.yaml" -- python3 held.py no-body
wait_approval POST
expect_eq "a body that does not come: the approval says so, and how large it was announced" \
    '["body not received yet: 11 bytes announced, 0 received in 2000 ms; it is sent unseen if approved", false]' \
    "$(approval_field "$ID" '[r.get("body_note"), r.get("body_complete")]')"
pdk approvals
expect_match "paddock approvals shows the note" "note:  body not received yet: 11 bytes announced" "$OUT"
pdk deny "$ID"
read_bg_line
expect_match "denied: 403" "^HTTP/1.1 403 " "$BG_LINE"
wait "$BG_PID" 2>/dev/null

head -c 100000 /dev/zero | tr '\0' 'b' >"$WS/big.txt"
start_bg big.fifo --workspace "$WS" --policy "$T/held.yaml" -- \
    curl -sS --max-time 50 -o /dev/null -w '%{http_code}\n' -H 'Expect: 100-continue' \
    --data-binary @big.txt http://api.test/v1/big
wait_approval POST
expect_eq "a body larger than what is held: the approval says what was held of how much" \
    '[65536, 100000, false, "body not received whole: 100000 bytes announced, the first 65536 held (paddock holds at most 65536 bytes before asking); the rest is sent unseen if approved"]' \
    "$(approval_field "$ID" '[r.get("body_bytes"), r.get("body_announced"), r.get("body_complete"), r.get("body_note")]')"
pdk approve "$ID"
read_bg_line
expect_eq "approved: 200" 200 "$BG_LINE"
expect_match "... the upstream got all of it" '"path": "/v1/big".*"body_len": 100000' \
    "$(cat "$T/upstream.log")"
wait "$BG_PID" 2>/dev/null

# ---- item 30: a held request's wait limit --------------------------------------------------

start_bg short.fifo --workspace "$WS" --policy "$T/short.yaml" -- python3 held.py complete timeout
wait_request /v1/timeout
expect_eq "an approval shows its wait limit and how long it waited" "[2, true]" \
    "$(approval_field "$ID" '[r.get("wait_limit_seconds"), isinstance(j.get("waited_seconds"), int)]')"
read_bg_line
expect_match "no answer within approvals.request_timeout: 504 naming the key" \
    '^HTTP/1.1 504 .*within 2s.*approvals.request_timeout' "$BG_LINE"
wait "$BG_PID" 2>/dev/null
expect_eq "... the approval is expired, having waited the limit" "[\"expired\", true]" \
    "$(approval_field "$ID" '[j["state"], j["waited_seconds"] >= 2]')"
pdk approve "$ID"
expect_ne "a late approve fails" 0 "$RC"
expect_match "... saying it is too late and that nothing was sent" \
    "expired already, too late to answer: .*refused with 504 and never sent" "$ERR"
pdk approvals --all
expect_match "paddock approvals --all shows why it expired" \
    "expired: no answer within 2s \(approvals.request_timeout\)" "$OUT"
expect_eq "nothing reached the upstream" 0 "$(grep -c '"path": "/v1/timeout"' "$T/upstream.log")"
pdk audit --json
expect_match "the refusal is in the audit log" \
    '"kind":"net.request".*"path":"/v1/timeout".*"status":504|"path":"/v1/timeout".*"status":504.*"kind":"net.request"' \
    "$OUT"

policy short-allow "{timeout: 60, request_timeout: 2, on_timeout: allow}"
start_bg allow.fifo --workspace "$WS" --policy "$T/short-allow.yaml" -- python3 held.py complete let-go
wait_request /v1/let-go
read_bg_line
expect_match "with on_timeout: allow, the request goes at its wait limit, its client waiting" \
    "^HTTP/1.1 200 " "$BG_LINE"
expect_eq "... the upstream got it" 1 "$(grep -c '"path": "/v1/let-go"' "$T/upstream.log")"
expect_eq "... and its approval is expired" '"expired"' "$(approval_field "$ID" 'j["state"]')"
wait "$BG_PID" 2>/dev/null

pdk policy lint "$T/short.yaml"
expect_eq "policy lint takes approvals.request_timeout" 0 "$RC"
policy bad "{request_timeout: soon, max_held_requests: 0}"
pdk policy lint "$T/bad.yaml"
expect_ne "policy lint refuses a bad request_timeout and max_held_requests" 0 "$RC"
expect_match "... naming request_timeout" "approvals.request_timeout: \"soon\" is not a duration" "$OUT$ERR"
expect_match "... and max_held_requests" "approvals.max_held_requests: \"0\" is not a number of held requests from 1 to 4096" "$OUT$ERR"
policy long "{request_timeout: 90}"
pdk policy lint "$T/long.yaml"
expect_match "policy lint warns about a wait limit above common client timeouts" \
    "approvals.request_timeout: a held network request waits 90s, and common clients give up after 60s" "$OUT$ERR"

# ---- item 8: at most max_held_requests held -------------------------------------------------

start_bg cap.fifo --workspace "$WS" --policy "$T/capped.yaml" -- python3 held.py cap
read_bg_line
expect_match "over approvals.max_held_requests: refused at once with 429" \
    '^third: HTTP/1.1 429 .*approvals.max_held_requests' "$BG_LINE"
pdk approvals --json
expect_eq "... and only the ones under the cap wait" 2 \
    "$(printf '%s\n' "$OUT" | grep -c '"state":"pending"')"
expect_eq "... each with how long it has waited" 2 \
    "$(printf '%s\n' "$OUT" | grep -c '"waited_seconds":[0-9]')"
held_ids=$(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
for l in sys.stdin:
    if l.strip(): print(json.loads(l)["id"])')
pdk approvals
expect_eq "paddock approvals shows how long each has waited, and its limit" 2 \
    "$(printf '%s\n' "$OUT" | grep -cE '  pending, waited [0-9]+s \(refused at 40s\)$')"
for id in $held_ids; do
    pdk deny "$id"
done
read_bg_line
expect_match "the held ones are answered" "^HTTP/1.1 403 " "$BG_LINE"
read_bg_line
wait "$BG_PID" 2>/dev/null
pdk audit --json
expect_eq "the refusal over the cap is in the audit log" 1 \
    "$(printf '%s\n' "$OUT" | grep '"kind":"net.request"' | grep '"path":"/v1/held3"' | grep -c '"status":429')"

# ---- item 22c: an intercepted connection is not "denied" ------------------------------------

wrun --policy "$T/held.yaml" -- curl -sS --max-time 20 -o /dev/null -w '%{http_code}\n' https://tls.test/v1/x
expect_eq "a request inside intercepted TLS is allowed" 200 "$OUT"
pdk audit --json
connect=$(printf '%s\n' "$OUT" | grep '"kind":"net.connect"' | grep '"host":"tls.test"' | tail -1)
expect_match "its net.connect says the connection is intercepted" '"decision":"intercept"' "$connect"
expect_match "... with what the host's rules say at most" '"host_decision":"deny"' "$connect"
expect_match "... and its request says allow" '"decision":"allow"' \
    "$(printf '%s\n' "$OUT" | grep '"kind":"net.request"' | grep '"host":"tls.test"' | tail -1)"

