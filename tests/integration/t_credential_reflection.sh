#!/usr/bin/env bash
# t_credential_reflection: a credential's real value never comes back into the sandbox.
# The test upstream (upstream.py, /reflect/...) does what careless or debugging servers do
# with what they are sent: echoes request fields in its body, in CORS and request-id fields,
# in an error page, in a chunked body cut into 7-byte chunks, in a trailer, in a field name,
# in part, in base64, in a redirect's Location, in a body without a length, gzip-encoded.
#   - toward the credential's host the gateway puts the value only in its `inject` header and
#     the fields `replace_in_headers` names: a placeholder the agent moves into another field
#     (Origin, X-Request-Id, Referer) goes on as it is, and the event says where;
#   - what those hosts answer is masked (the value and a fragment of it, plain,
#     %-encoded, base64), byte for byte (Content-Length and chunks stay right), recorded as
#     credential.reflected with where; a gzip answer is asked as identity, one that comes
#     encoded anyway is refused (502);
#   - the value goes over TLS only, unless the credential allows plain HTTP (403, recorded);
#   - an OAuth endpoint whose error quotes the refresh token: the 502 the agent gets does not;
#   - placeholder.prefix: a placeholder of the shape a client checks;
#   - and the normal injection still works.
# Upstreams are this test's servers on 127.0.0.1 (names mapped with `resolve`).
. "$(dirname "$0")/lib.sh"
need_userns
[ -e "$PADDOCK_BUILD/paddock-gateway.so" ] || bail_out "paddock-gateway.so is not built"

feishu_certs api.test other.test open.feishu.cn
start_upstream TLS_PORT --tls "$T/fs.pem" "$T/fs.key" --log "$T/up.log"
start_upstream HTTP_PORT --log "$T/up.log"

real="real-$RANDOM$RANDOM-$RANDOM$RANDOM-$RANDOM$RANDOM-$RANDOM"
set_secret api_token "$real"

# leaks FILE...: the forms of the real value found in the files (a fragment of 16 bytes of
# it, plain, %-encoded or base64 at any alignment), or nothing
leaks() {
    REAL="$real" "$PYTHON" - "$@" <<'PY'
import base64, os, sys, urllib.parse
real = os.environ["REAL"].encode()
text = b"".join(open(f, "rb").read() for f in sys.argv[1:])
forms = {"plain": real, "percent": urllib.parse.quote(real, safe="").encode()}
for a in range(3):
    enc = base64.b64encode(b"\0" * a + real)[(8 * a + 5) // 6:(8 * (a + len(real))) // 6]
    forms["base64/%d" % a] = enc
    forms["base64url/%d" % a] = enc.replace(b"+", b"-").replace(b"/", b"_")
found = sorted({name for name, f in forms.items()
                for i in range(len(f) - 15) if f[i:i + 16] in text})
print(" ".join(found))
PY
}

cat >"$T/inject.yaml" <<EOF
version: 1
network:
  rules:
    - {host: api.test, decision: allow}
    - {host: other.test, decision: allow}
  resolve:
    "api.test:443": "127.0.0.1:$TLS_PORT"
    "api.test:80": "127.0.0.1:$HTTP_PORT"
    "other.test:443": "127.0.0.1:$TLS_PORT"
  upstream_ca: [$T/ca.pem]
credentials:
  - name: api
    provider: static
    value: {secret: api_token}
    hosts: [api.test]
    inject: {header: Authorization, value: "Bearer {token}"}
    placeholder: {env: API_TOKEN}
EOF

# The client: raw requests through the proxy (CONNECT, then TLS with the sandbox's CA
# bundle), so that every byte of each answer is seen (chunk framing, trailers); each answer
# printed as a block "== NAME", its bytes as they came (a gzip body decoded after them).
cat >"$WS/reflect.py" <<'EOF'
import gzip, os, socket, ssl, sys
ph = os.environ["API_TOKEN"]
def ask(name, path, fields=(), host="api.test", scheme="https"):
    s = socket.create_connection(("127.0.0.1", 3128))
    if scheme == "https":
        s.sendall(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (host.encode(), host.encode()))
        got = b""
        while b"\r\n\r\n" not in got:
            got += s.recv(1)
        s = ssl.create_default_context().wrap_socket(s, server_hostname=host)
        target = path
    else:
        target = "http://%s%s" % (host, path)
    head = "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n" % (target, host)
    head += "".join("%s: %s\r\n" % f for f in fields) + "\r\n"
    s.sendall(head.encode())
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except (ssl.SSLError, OSError):
            break
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
    framing = "length-ok" if length and int(length[0]) == len(body) else "length-bad" if length else "no-length"
    if b"chunked" in head.lower():  # the chunk sizes must add up to what came
        rest, content, ok = body, b"", False
        while rest:
            line, _, rest = rest.partition(b"\r\n")
            n = int(line.split(b";")[0], 16)
            if n == 0:
                ok = rest.endswith(b"\r\n")
                break
            content, rest = content + rest[:n], rest[n + 2:]
        framing = "chunks-ok" if ok else "chunks-bad"
    print("== %s %s %s" % (name, head.split(b"\r\n")[0].decode(), framing))
    sys.stdout.flush()
    sys.stdout.buffer.write(data + b"\n")
    if b"content-encoding: gzip" in head.lower():
        sys.stdout.buffer.write(gzip.decompress(body) + b"\n")
    sys.stdout.flush()
mode = sys.argv[1]
if mode == "inject":
    ask("echo", "/v1/echo")
    ask("cors", "/reflect/cors", [("Origin", ph), ("Access-Control-Request-Headers", "authorization")])
    ask("request-id", "/reflect/request-id", [("X-Request-Id", ph)])
    ask("error", "/reflect/error", [("Referer", "https://app.test/?key=" + ph)])
    ask("chunked", "/reflect/chunked")
    ask("trailer", "/reflect/trailer")
    ask("header-name", "/reflect/header-name")
    ask("partial", "/reflect/partial")
    ask("base64", "/reflect/base64")
    ask("location", "/reflect/location")
    ask("until-close", "/reflect/until-close")
    ask("gzip", "/reflect/gzip", [("Accept-Encoding", "gzip, br")])
    ask("gzip-always", "/reflect/gzip-always")
    ask("other-host", "/v1/echo", host="other.test")
    ask("plain-http", "/v1/plain-inject", scheme="http")
elif mode == "fields":
    ask("named", "/v1/named", [("X-Api-Key", ph)])
    ask("unnamed", "/v1/unnamed", [("X-Debug-Token", ph)])
    ask("plain-http", "/v1/plain", [("X-Api-Key", ph)], scheme="http")
    ask("plain-http-none", "/v1/plain-none", scheme="http")
    ask("prefix", "/v1/prefix")
    ask("prefix-elsewhere", "/v1/prefix-elsewhere", [("Authorization", "Bearer " + ph)], host="other.test")
    print("shape", ph[:8], len(ph) - 8)
EOF

: >"$T/up.log"
wrun --policy "$T/inject.yaml" -- python3 reflect.py inject
printf '%s\n' "$OUT" >"$T/inject.out"
printf '%s\n' "$ERR" >"$T/inject.err"
expect_eq "the client runs to its end" "0 15" "$RC $(grep -c '^== ' "$T/inject.out")"
# block NAME: the block of that answer
block() { sed -n "/^== $1 /,/^== /p" "$T/inject.out"; }
first() { block "$1" | head -n 1; }

expect_match "the normal injection works: the upstream got the real value" \
    "\"path\": \"/v1/echo\".*\"Authorization\": \"Bearer $real\"" "$(cat "$T/up.log")"
expect_eq "the real value is nowhere in what the sandbox saw, in any form" "" \
    "$(leaks "$T/inject.out" "$T/inject.err")"
expect_match "an echo of the request's fields: 200, the value masked, Content-Length right" \
    '^== echo HTTP/1.1 200 OK length-ok$' "$(first echo)"
expect_match "... where the value was, asterisks of its length" \
    "\"Authorization\": \"Bearer \*{${#real}}\"" "$(block echo)"
ph_re='pdk-ph-[0-9a-f]{48}'
expect_match "CORS: an Origin carrying the placeholder is not replaced (the placeholder comes back)" \
    "Access-Control-Allow-Origin: $ph_re" "$(block cors)"
expect_match "... and the upstream got the placeholder in it, not the value" \
    "\"path\": \"/reflect/cors\".*\"Origin\": \"$ph_re\"" "$(cat "$T/up.log")"
expect_match "X-Request-Id carrying the placeholder: not replaced" "X-Request-Id: $ph_re" \
    "$(block request-id)"
expect_match "an error page quoting the request: masked, its status kept" \
    '^== error HTTP/1.1 400 Bad Request length-ok$' "$(first error)"
expect_match "... the Referer's placeholder as it was" "Referer: https://app.test/\?key=$ph_re" \
    "$(block error)"
expect_match "a chunked body cut into 7-byte chunks: masked, chunk sizes right" \
    '^== chunked HTTP/1.1 200 OK chunks-ok$' "$(first chunked)"
expect_match "a trailer echoing the value: masked" \
    "X-Echo-Authorization: Bearer \*{${#real}}" "$(block trailer)"
expect_match "... the chunked framing right" '^== trailer HTTP/1.1 200 OK chunks-ok$' \
    "$(first trailer)"
expect_match "a field named after the value: masked" "X-Seen-\*{${#real}}: 1" "$(block header-name)"
expect_match "the value without its last byte: masked too" \
    "ending in: Bearer \*{$((${#real} - 1))}" "$(block partial)"
expect_match "base64 of the fields: 200, length right (and no form of the value, above)" \
    '^== base64 HTTP/1.1 200 OK length-ok$' "$(first base64)"
expect_match "a redirect's Location quoting the value: masked" \
    "Location: /login\?next=Bearer%20\*{${#real}}" "$(block location)"
expect_match "a body that ends with the connection: masked" "Authorization: Bearer \*{${#real}}" \
    "$(block until-close)"
expect_match "a gzip-capable upstream: asked for identity, masked" \
    "Authorization: Bearer \*{${#real}}" "$(block gzip)"
expect_match "... the upstream was asked for identity" \
    '"path": "/reflect/gzip".*"Accept-Encoding": "identity"' "$(cat "$T/up.log")"
expect_match "an upstream that gzips anyway: 502, saying why" \
    '^== gzip-always HTTP/1.1 502 Bad Gateway.*answered with a gzip body, which paddock cannot read' \
    "$(block gzip-always | tr '\n' ' ')"
expect_match "a host without the credential: nothing injected, nothing to mask" \
    '"Host": "other.test"' "$(block other-host)"
expect_no_match "... and no Authorization reached it" '"path": "/v1/echo".*"Host": "other.test".*Authorization' \
    "$(grep '"Host": "other.test"' "$T/up.log")"
expect_match "plain HTTP to the credential's host: refused (403), saying why" \
    '^== plain-http HTTP/1.1 403 Forbidden.*credential api is sent only over TLS.*allow_plain_http: true' \
    "$(block plain-http | tr '\n' ' ')"
expect_eq "... and it never reached the upstream" 0 "$(grep -c '/v1/plain-inject' "$T/up.log")"

pdk audit --json
printf '%s\n' "$OUT" >"$T/audit.json"
where_found() {
    "$PYTHON" -c '
import json, sys
print(" ".join(sorted({json.loads(l)["data"]["found_in"] for l in open(sys.argv[1]) if l.strip()
    and json.loads(l)["kind"] == "credential.reflected" and json.loads(l)["data"].get("path") == sys.argv[2]})))' \
        "$T/audit.json" "$1"
}
expect_eq "audit: the echo recorded as credential.reflected, in the body" "response body" \
    "$(where_found /v1/echo)"
expect_eq "audit: the trailer, as a trailer (its body quotes the fields too)" \
    "response body response trailer" "$(where_found /reflect/trailer)"
expect_eq "audit: the field name" "response field name" "$(where_found /reflect/header-name)"
expect_eq "audit: the Location field" "response field Location" "$(where_found /reflect/location)"
expect_eq "audit: the chunked body" "response body" "$(where_found /reflect/chunked)"
expect_match "audit: the credential named, never the value" \
    '"kind":"credential.reflected".*"credential":"api"' "$(cat "$T/audit.json")"
expect_eq "audit: the value is nowhere in it" "" "$(leaks "$T/audit.json")"

# Fields a credential names; a placeholder elsewhere; plain HTTP; a prefix.
cat >"$T/fields.yaml" <<EOF
version: 1
network:
  rules:
    - {host: api.test, decision: allow}
    - {host: other.test, decision: allow}
  resolve:
    "api.test:443": "127.0.0.1:$TLS_PORT"
    "api.test:80": "127.0.0.1:$HTTP_PORT"
    "other.test:443": "127.0.0.1:$TLS_PORT"
  upstream_ca: [$T/ca.pem]
credentials:
  - name: api
    provider: static
    value: {secret: api_token}
    hosts: [api.test]
    replace_in_headers: [X-Api-Key]
    placeholder: {env: API_TOKEN, prefix: "sk-proj-"}
EOF
: >"$T/up.log"
wrun --policy "$T/fields.yaml" -- python3 reflect.py fields
printf '%s\n' "$OUT" >"$T/inject.out"
expect_match "a field the credential names: the placeholder replaced by the value" \
    "\"path\": \"/v1/named\".*\"X-Api-Key\": \"$real\"" "$(cat "$T/up.log")"
expect_match "... and its echo masked" "\"X-Api-Key\": \"\*{${#real}}\"" "$(block named)"
expect_match "a field it does not name: the placeholder goes on as it is" \
    "\"path\": \"/v1/unnamed\".*\"X-Debug-Token\": \"sk-proj-[0-9a-f]{48}\"" "$(cat "$T/up.log")"
expect_match "plain HTTP with the placeholder in a named field: refused (403)" \
    '^== plain-http HTTP/1.1 403 Forbidden.*sent only over TLS.*allow_plain_http' \
    "$(block plain-http | tr '\n' ' ')"
expect_eq "... and it never reached the upstream" 0 "$(grep -c '"/v1/plain"' "$T/up.log")"
expect_match "plain HTTP that carries no value of the credential: goes on" \
    '^== plain-http-none HTTP/1.1 200 OK' "$(first plain-http-none)"
expect_eq "placeholder.prefix: the placeholder has the shape a client checks" "shape sk-proj- 48" \
    "$(printf '%s\n' "$OUT" | grep '^shape')"
expect_match "... and toward another host it is refused like any placeholder" \
    '^== prefix-elsewhere HTTP/1.1 403 Forbidden.*placeholder of credential api' \
    "$(block prefix-elsewhere | tr '\n' ' ')"
expect_eq "the real value is nowhere in what the sandbox saw" "" "$(leaks "$T/inject.out")"
pdk audit --json
expect_match "audit: where a placeholder went on unreplaced" \
    '"path":"/v1/unnamed".*"placeholder_left_in":\["X-Debug-Token"\]' "$OUT"
expect_match "audit: the plain HTTP refusal, as credential.refused" \
    '"kind":"credential.refused".*"refused":"plain HTTP"|"refused":"plain HTTP".*"kind":"credential.refused"' \
    "$OUT"

# An OAuth endpoint whose error quotes the refresh token (fake_feishu --quote-refresh-token):
# the agent's 502 says why without it. The run starts with a cached access token fresh for
# 2 s more (kept from a refresh); the request after that needs a refresh, which the
# endpoint refuses (it never issued this refresh token).
refresh="ur-quoted-$RANDOM$RANDOM$RANDOM$RANDOM$RANDOM$RANDOM"
start_fake_feishu app-secret-of-the-test --quote-refresh-token
set_secret feishu_app_id cli_paddocktest
set_secret feishu_app_secret app-secret-of-the-test
set_secret user_refresh "$refresh"
set_secret feishu-user.access_token "u-cached-token-$RANDOM $(( $(date +%s) + 7 ))000000000 10000000000"
cat >"$T/oauth.yaml" <<EOF
version: 1
network:
  resolve: {"open.feishu.cn:443": "127.0.0.1:$FS_PORT"}
  upstream_ca: [$T/ca.pem]
  rules:
    - {host: open.feishu.cn, decision: allow}
credentials:
  - name: feishu-user
    provider: oauth2_refresh
    token_url: https://open.feishu.cn/open-apis/authen/v2/oauth/token
    refresh_token: {secret: user_refresh}
    client_id: {secret: feishu_app_id}
    client_secret: {secret: feishu_app_secret}
    hosts: [open.feishu.cn]
    inject: {header: Authorization, value: "Bearer {token}"}
    placeholder: {env: FEISHU_USER_TOKEN}
EOF
wrun --policy "$T/oauth.yaml" -- sh -c 'sleep 2.5; curl -sS --max-time 20 -w " %{http_code}" https://open.feishu.cn/open-apis/bot/v3/info'
expect_match "an endpoint's error that quotes the refresh token: the agent gets a 502 with the reason" \
    '"error":"upstream".*refused the refresh token.*\[REDACTED\].* 502$' "$OUT"
real=$refresh
printf '%s\n' "$OUT$ERR" >"$T/oauth.out"
expect_eq "... and no part of the refresh token" "" "$(leaks "$T/oauth.out")"
expect_match "... though the endpoint did quote it" "refresh token sent was $refresh" \
    "$(grep -o 'refresh token sent was [^ "]*' "$T/fs.log" 2>/dev/null || cat "$T/fs.log")"
pdk audit --json
printf '%s\n' "$OUT" >"$T/audit.json"
expect_match "... recorded as credential.provider_failed" '"kind":"credential.provider_failed"' "$OUT"
expect_eq "... and the audit has no part of it either" "" "$(leaks "$T/audit.json")"
