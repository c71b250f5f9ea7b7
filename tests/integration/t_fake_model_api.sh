#!/usr/bin/env bash
# t_fake_model_api: the fake model API (tests/fixtures/fake_model_api.py) itself, no paddock
# involved: the official SDKs (npm openai, @anthropic-ai/sdk, from tests/node) stream
# against it and rebuild every response from its events (Responses API over SSE, JSON and
# WebSocket; Messages API over SSE and JSON; errors in each provider's shape); the wire
# format byte for byte where the SDKs are lenient (SSE framing, sequence numbers, the
# WebSocket handshake, fragments, ping, a client's unmasked frame); the request log (the
# key's hash, never the key); TLS with a test CA; --hold.
. "$(dirname "$0")/lib.sh"

command -v curl >/dev/null || skip_all "curl is not installed"
command -v openssl >/dev/null || skip_all "openssl is not installed"

FAKE=$PADDOCK_TOP/tests/fixtures/fake_model_api.py
OPENAI_KEY="sk-proj-fake-$RANDOM$RANDOM"
ANTHROPIC_KEY="sk-ant-api03-fake-$RANDOM$RANDOM"

# start_fake VAR ARGS...: the fake on 127.0.0.1 (its port in VAR), logging to $T/fake.log.
start_fake() {
    local var=$1 fifo="$T/.fake.$RANDOM"
    shift
    mkfifo "$fifo"
    FAKE_OPENAI_KEY=$OPENAI_KEY FAKE_ANTHROPIC_KEY=$ANTHROPIC_KEY \
        "$PYTHON" "$FAKE" --log "$T/fake.log" "$@" >"$fifo" 2>>"$T/fake.err" &
    track_pid $!
    local port=""
    IFS= read -r -t 30 port <"$fifo"
    rm -f "$fifo"
    [[ $port =~ ^[0-9]+$ ]] || bail_out "the fake model API did not start: $(cat "$T/fake.err")"
    printf -v "$var" '%s' "$port"
}
start_fake PORT
BASE=http://127.0.0.1:$PORT

# ---- the official SDKs ---------------------------------------------------------------------
node_modules=$PADDOCK_TOP/tests/node/node_modules
if command -v node >/dev/null && [ -d "$node_modules/openai" ] && [ -d "$node_modules/@anthropic-ai/sdk" ]; then
    sdk_out=$(cd "$PADDOCK_TOP/tests/node" && BASE=$BASE OPENAI_KEY=$OPENAI_KEY ANTHROPIC_KEY=$ANTHROPIC_KEY \
        timeout 120 node model_sdks.js 2>&1)
    sdk_rc=$?
    for name in openai-stream-tool-call openai-stream-after-tool openai-json openai-previous-response \
        openai-unknown-previous-response openai-wrong-key openai-models openai-websocket \
        openai-websocket-other-connection anthropic-stream-tool-use anthropic-stream-after-tool \
        anthropic-json anthropic-count-tokens anthropic-wrong-key anthropic-bad-request anthropic-models; do
        line=$(printf '%s\n' "$sdk_out" | grep -m1 "^$name ")
        if [ "$line" = "$name ok" ]; then
            ok "official SDK: $name"
        else
            not_ok "official SDK: $name"
            diag "${line:-no line (exit $sdk_rc): $(printf '%s' "$sdk_out" | tail -n 5)}"
        fi
    done
    expect_eq "official SDKs: every check ran and passed" 0 "$sdk_rc"
else
    skip_optional "the official SDKs (tests/node: openai, @anthropic-ai/sdk, installed by scripts/bootstrap)" \
        "node or tests/node/node_modules is missing"
fi

# ---- the wire, by hand -----------------------------------------------------------------------
# req API-KEY-HEADER PATH BODY: a POST; the response head in $T/head, the body in $T/body.
req() {
    curl -sS --max-time 20 -D "$T/head" -o "$T/body" -H "$1" -H 'Content-Type: application/json' \
        --data-binary "$3" "$BASE$2"
}
# sse_check API: the SSE body in $T/body, event names against data.type, sequence numbers,
# the framing; prints "ok" or what is wrong.
sse_check() {
    "$PYTHON" - "$1" "$T/body" <<'PY'
import json, sys
api, raw = sys.argv[1], open(sys.argv[2], "rb").read().decode()
if not raw.endswith("\n\n"):
    sys.exit(print("does not end with a blank line"))
events = []
for block in raw[:-2].split("\n\n"):
    lines = block.split("\n")
    if len(lines) != 2 or not lines[0].startswith("event: ") or not lines[1].startswith("data: "):
        sys.exit(print("a block that is not one event and one data line: %r" % block[:80]))
    name, data = lines[0][7:], json.loads(lines[1][6:])
    if data.get("type") != name:
        sys.exit(print("event %s carries type %s" % (name, data.get("type"))))
    events.append(data)
if api == "openai":
    if [e["sequence_number"] for e in events] != list(range(len(events))):
        sys.exit(print("sequence numbers are not 0, 1, 2, ..."))
    if events[0]["type"] != "response.created" or events[-1]["type"] != "response.completed":
        sys.exit(print("not created ... completed"))
else:
    if events[0]["type"] != "message_start" or events[-1]["type"] != "message_stop":
        sys.exit(print("not message_start ... message_stop"))
print("ok")
PY
}
head_has() { tr -d '\r' <"$T/head" | grep -qi "^$1"; }

req "Authorization: Bearer $OPENAI_KEY" /v1/responses \
    '{"model":"gpt-5","input":"write the file a.txt containing exactly: x y","stream":true,"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}]}'
expect_eq "Responses API over SSE: every event framed as event + data, in sequence" ok "$(sse_check openai)"
expect_eq "... text/event-stream, chunked, with a request id" "yes yes yes" \
    "$(head_has 'content-type: text/event-stream' && echo yes) $(head_has 'transfer-encoding: chunked' && echo yes) $(head_has 'x-request-id: req_' && echo yes)"
expect_match "... an exec_command call takes its command as cmd" \
    'response.function_call_arguments.done.*"arguments": "\{\\"cmd\\": \\"printf .*x y.* > a.txt\\"\}"' "$(cat "$T/body")"

req "Authorization: Bearer $OPENAI_KEY" /v1/responses \
    '{"model":"gpt-5","input":"Run the command: git push origin main","tools":[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}]}'
expect_match "\"run the command: C\": the shell tool runs C as it is" \
    '"arguments": "\{\\"cmd\\": \\"git push origin main\\"\}"' "$(cat "$T/body")"
call_id=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["output"][0]["call_id"])' "$T/body")
req "Authorization: Bearer $OPENAI_KEY" /v1/responses \
    '{"model":"gpt-5","input":[{"type":"message","role":"user","content":"Run the command: git push origin main"},{"type":"function_call_output","call_id":"'"$call_id"'","output":"refused"}]}'
expect_match "... and once its result comes back, says so" '"text": "Done: ran the command."' "$(cat "$T/body")"
req "x-api-key: $ANTHROPIC_KEY" /v1/messages \
    '{"model":"c","max_tokens":9,"messages":[{"role":"user","content":"run the command: ls -l"}],"tools":[{"name":"Bash","input_schema":{}}]}'
expect_match "... with Anthropic's Bash tool too" '"name": "Bash", "input": \{"command": "ls -l"' "$(cat "$T/body")"

req "x-api-key: $ANTHROPIC_KEY" /v1/messages \
    '{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Hi"}]}'
expect_eq "Messages API over SSE: framed, message_start ... message_stop" ok "$(sse_check anthropic)"
expect_match "... with its ping and text deltas" '"type": "ping".*"type": "text_delta"' "$(cat "$T/body")"

req "Authorization: Bearer sk-wrong" /v1/responses '{"model":"gpt-5","input":"x"}'
expect_eq "OpenAI: a wrong key gets 401 in OpenAI's shape" \
    '401 {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}' \
    "$(tr -d '\r' <"$T/head" | head -n1 | cut -d' ' -f2) $(cat "$T/body")"
req "x-api-key: sk-ant-wrong" /v1/messages '{"model":"c","max_tokens":1,"messages":[{"role":"user","content":"x"}]}'
expect_eq "Anthropic: a wrong key gets 401 in Anthropic's shape, with a request-id" \
    '401 {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}} yes' \
    "$(tr -d '\r' <"$T/head" | head -n1 | cut -d' ' -f2) $(cat "$T/body") $(head_has 'request-id: req_' && echo yes)"
req "x-api-key: $ANTHROPIC_KEY" /v1/messages 'not json'
expect_eq "a body that is not JSON: 400" 400 "$(tr -d '\r' <"$T/head" | head -n1 | cut -d' ' -f2)"
req "x-api-key: $ANTHROPIC_KEY" /v1/nothing-here '{}'
expect_eq "an unknown path: 404" 404 "$(tr -d '\r' <"$T/head" | head -n1 | cut -d' ' -f2)"
curl -sS --max-time 20 -o /dev/null -w '%{http_code}' -H "x-api-key: $ANTHROPIC_KEY" "$BASE/v1/messages" >"$T/code"
expect_eq "a GET of /v1/messages: 405" 405 "$(cat "$T/code")"

# ---- the WebSocket, by hand --------------------------------------------------------------------
ws_out=$(OPENAI_KEY=$OPENAI_KEY "$PYTHON" - "$PORT" <<'PY'
import base64, hashlib, json, os, socket, struct, sys
port = int(sys.argv[1])

def connect(extra=""):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET /v1/responses HTTP/1.1\r\nHost: api.openai.com\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n"
               "Authorization: Bearer %s\r\n%s\r\n" % (key, os.environ["OPENAI_KEY"], extra)).encode())
    f = s.makefile("rb")
    head = []
    while True:
        line = f.readline().decode().rstrip("\r\n")
        if not line:
            break
        head.append(line)
    want = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    return s, f, head, want

def frame(opcode, payload, fin=True, mask=True):
    b0 = (0x80 if fin else 0) | opcode
    m = os.urandom(4) if mask else b""
    n = len(payload)
    head = struct.pack("!BB", b0, (0x80 if mask else 0) | (n if n < 126 else 126))
    if n >= 126:
        head += struct.pack("!H", n)
    body = bytes(c ^ m[i % 4] for i, c in enumerate(payload)) if mask else payload
    return head + m + body

def read(f):
    b0, b1 = f.read(2)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", f.read(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", f.read(8))[0]
    assert not b1 & 0x80, "a server frame is masked"
    return b0 & 0x0F, f.read(n)

s, f, head, want = connect("Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n")
print("status", head[0].split(" ", 2)[1])
print("accept", ("Sec-WebSocket-Accept: " + want) in head)
print("extensions", any(h.lower().startswith("sec-websocket-extensions") for h in head))
s.sendall(frame(0x9, b"are you there"))
print("pong", read(f))
msg = json.dumps({"type": "response.create", "model": "gpt-5", "input": "Hello"}).encode()
s.sendall(frame(0x1, msg[:10], fin=False) + frame(0x9, b"between") + frame(0x0, msg[10:]))
print("pong-between", read(f))
types = []
while True:
    op, data = read(f)
    e = json.loads(data)
    types.append(e["type"])
    if e["type"] == "response.completed":
        print("text", e["response"]["output"][0]["content"][0]["text"])
        break
print("first-last", types[0], types[-1], len(types))
s.sendall(frame(0x8, struct.pack("!H", 1000)))
print("close", read(f))
s.close()
s, f, head, want = connect()
s.sendall(frame(0x1, b"{}", mask=False))
op, data = read(f)
print("unmasked", op, struct.unpack("!H", data[:2])[0])
PY
)
expect_eq "WebSocket: 101 with the right Sec-WebSocket-Accept" "status 101
accept True" "$(printf '%s\n' "$ws_out" | sed -n 1,2p)"
expect_eq "... permessage-deflate offered, none agreed (the client sends plain frames)" "extensions False" \
    "$(printf '%s\n' "$ws_out" | sed -n 3p)"
expect_eq "... a ping gets its pong, even between two fragments of a message" "pong (10, b'are you there')
pong-between (10, b'between')" "$(printf '%s\n' "$ws_out" | sed -n 4,5p)"
expect_eq "... a fragmented response.create gets its events, created to completed" \
    "text Hello from the fake model API.
first-last response.created response.completed 12" "$(printf '%s\n' "$ws_out" | sed -n 6,7p)"
expect_eq "... a close is answered with a close" "close (8, b'\\x03\\xe8')" "$(printf '%s\n' "$ws_out" | sed -n 8p)"
expect_eq "... a client's unmasked frame: close 1002 (protocol error)" "unmasked 8 1002" \
    "$(printf '%s\n' "$ws_out" | sed -n 9p)"

# ---- the log ---------------------------------------------------------------------------------
expect_eq "the log never holds a key" 0 "$(grep -c -e "$OPENAI_KEY" -e "$ANTHROPIC_KEY" "$T/fake.log")"
log_check=$("$PYTHON" - "$T/fake.log" "$OPENAI_KEY" "$ANTHROPIC_KEY" <<'PY'
import hashlib, json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
digest = {k: hashlib.sha256(k.encode()).hexdigest() for k in sys.argv[2:]}
good = [l for l in lines if l["key_ok"]]
bad = [l for l in lines if not l["key_ok"]]
print(all(l["key_sha256"] in digest.values() for l in good) and len(good) > 0,
      all(l["key_sha256"] not in digest.values() for l in bad) and len(bad) >= 2,
      all(v == "<redacted>" for l in lines for k, v in l["headers"].items()
          if k.lower() in ("authorization", "x-api-key")),
      any(l["transport"] == "websocket" and l["method"] == "WS" for l in lines))
PY
)
expect_eq "... it holds the SHA-256 of the right key, another for a wrong one, headers redacted, WebSocket messages" \
    "True True True True" "$log_check"

# ---- TLS with a test CA, and --hold ---------------------------------------------------------------
feishu_certs api.openai.com api.anthropic.com
mkfifo "$T/held" "$T/release"
start_fake TLS_PORT --tls "$T/fs.pem" "$T/fs.key" --hold "$T/held" "$T/release"
curl -sS --max-time 30 --cacert "$T/ca.pem" --resolve "api.anthropic.com:$TLS_PORT:127.0.0.1" \
    -H "x-api-key: $ANTHROPIC_KEY" -H 'Content-Type: application/json' -o "$T/held.body" \
    --data-binary '{"model":"c","max_tokens":9,"messages":[{"role":"user","content":"write the file a containing exactly: b"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}]}' \
    "https://api.anthropic.com:$TLS_PORT/v1/messages" &
curl_pid=$!
track_pid "$curl_pid"
held=""
IFS= read -r -t 30 held <"$T/held"
expect_eq "--hold: the answer after a tool call waits, and says so" "held anthropic" "$held"
expect_eq "... the client is still waiting" yes "$(kill -0 "$curl_pid" 2>/dev/null && echo yes)"
echo go >"$T/release"
wait "$curl_pid"
expect_eq "... and gets it over TLS (the test CA) once released" 0 "$?"
expect_match "... the final message" '"text": "Done: wrote the file."' "$(cat "$T/held.body")"
