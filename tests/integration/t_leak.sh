#!/usr/bin/env bash
# t_leak: one session that uses every kind of credential at once (a static value replaced
# in a header, a Feishu tenant token injected and brokered, an OAuth user token refreshed
# with a rotating refresh token and replaced in a body), against the fake Feishu server.
# While a sandbox process holds on after using them all, the real values are looked for
# from outside in every sandbox process (environment, command line, memory) and in the
# files the sandbox sees; after the session, in the audit store, paddock's logs and the
# command's output. They must be nowhere; the server must have got each of them.
. "$(dirname "$0")/lib.sh"
need_userns
[ -e "$PADDOCK_BUILD/paddock-gateway.so" ] || bail_out "paddock-gateway.so is not built"

feishu_certs open.feishu.cn open.larksuite.com

app_secret="real-app-secret-$RANDOM$RANDOM$RANDOM"
first_refresh="ur-first-$RANDOM$RANDOM$RANDOM"
api_key="real-api-key-$RANDOM$RANDOM$RANDOM"
start_fake_feishu "$app_secret" --refresh-token "$first_refresh"
set_secret feishu_app_id cli_paddocktest
set_secret feishu_app_secret "$app_secret"
set_secret feishu_user_refresh "$first_refresh"
set_secret api_key "$api_key"

cat >"$T/all.yaml" <<EOF2
version: 1
network:
  resolve: {"open.feishu.cn:443": "127.0.0.1:$FS_PORT", "open.larksuite.com:443": "127.0.0.1:$FS_PORT"}
  upstream_ca: [$T/ca.pem]
  rules:
    - {host: open.feishu.cn, decision: allow}
    - {host: open.larksuite.com, decision: allow}
credentials:
  - name: bot
    provider: feishu_tenant_token
    app_id: {secret: feishu_app_id}
    app_secret: {secret: feishu_app_secret}
    hosts: [open.feishu.cn]
    inject: {header: Authorization, value: "Bearer {token}"}
    placeholder: {env: LARKSUITE_CLI_TENANT_ACCESS_TOKEN, app_secret_env: LARKSUITE_CLI_APP_SECRET}
  - name: api
    provider: static
    value: {secret: api_key}
    hosts: [open.feishu.cn]
    replace_in_headers: [X-Api-Key]
    placeholder: {env: API_KEY}
  - name: user
    provider: oauth2_refresh
    token_url: https://open.larksuite.com/open-apis/authen/v2/oauth/token
    refresh_token: {secret: feishu_user_refresh}
    client_id: {secret: feishu_app_id}
    client_secret: {secret: feishu_app_secret}
    hosts: [open.larksuite.com]
    placeholder: {env: USER_TOKEN}
    replace_in_headers: [Authorization]
    replace_in_body: true
EOF2

cat >"$WS/agent.py" <<'EOF2'
import json, os, time, urllib.request
env = os.environ
rec = "/open-apis/bitable/v1/apps/bascExample/tables/tblExample/records"
def call(url, headers, body=None):
    req = urllib.request.Request(url, data=body, headers=headers)
    with urllib.request.urlopen(req) as r:
        return r.status, r.read()
results = []
# the tenant token (injected) and the static key (replaced in its header)
results.append(call("https://open.feishu.cn" + rec, {"X-Api-Key": env["API_KEY"]}))
# a client minting its own tenant token with the stand-in secret (brokered)
results.append(call("https://open.feishu.cn/open-apis/auth/v3/tenant_access_token/internal",
                    {"Content-Type": "application/json"},
                    json.dumps({"app_id": "cli_paddocktest", "app_secret": env["LARKSUITE_CLI_APP_SECRET"]}).encode()))
minted = json.loads(results[-1][1])["tenant_access_token"]
results.append(call("https://open.feishu.cn" + rec, {"Authorization": "Bearer " + minted}))
# the user token (refreshed), replaced in a header and in a body
results.append(call("https://open.larksuite.com" + rec, {"Authorization": "Bearer " + env["USER_TOKEN"]}))
results.append(call("https://open.larksuite.com" + rec + "/search",
                    {"Authorization": "Bearer " + env["USER_TOKEN"], "Content-Type": "application/json"},
                    json.dumps({"field_names": ["Name"], "note": env["USER_TOKEN"]}).encode()))
# what came back, kept in files the sandbox can see
open("/tmp/responses.json", "wb").write(b"\n".join(b for _, b in results))
open("responses.json", "wb").write(b"\n".join(b for _, b in results))
print("ready", " ".join(str(s) for s, _ in results), flush=True)
time.sleep(60)
EOF2
start_bg agent.fifo --workspace "$WS" --policy "$T/all.yaml" -- python3 agent.py
read_bg_line
expect_eq "a sandbox process used every credential (five requests answered 200) and holds on" \
    "ready 200 200 200 200 200" "$BG_LINE" || diag "$(cat "$BG_ERR")"

# What the server got: every real value, never a placeholder.
server_got() { # server_got PYTHON-EXPR-ON-h: the distinct values over the log
    "$PYTHON" -c '
import json, sys
vals = set()
for h in map(json.loads, open(sys.argv[1])):
    v = eval(sys.argv[2])
    if v: vals.add(v)
print("\n".join(sorted(vals)))' "$T/fs.log" "$1"
}
tenant=$(server_got '(h["authorization"] or "")[7:] if (h["authorization"] or "").startswith("Bearer t-") else None')
user=$(server_got '(h["authorization"] or "")[7:] if (h["authorization"] or "").startswith("Bearer u-") else None')
rotated=$("$PYTHON" -c '
import json, re, sys
print("\n".join(sorted(set(re.findall(r"ur-[A-Za-z0-9]{20,}", open(sys.argv[1]).read())))))' "$T/fs.log")
expect_match "the server got the real tenant token" '^t-' "$tenant"
expect_match "... the real user token" '^u-' "$user"
expect_eq "... the static key, in its header" "$api_key" "$(server_got 'h["headers"].get("X-Api-Key")')"
expect_eq "... the user token in the body" "$user" "$(server_got '(h["body"] or {}).get("note") if isinstance(h["body"], dict) else None')"
expect_eq "... and never a placeholder" 0 "$(grep -c 'pdk-ph-' "$T/fs.log")"
expect_ne "the refresh token was rotated" "" "$rotated"

ca_key_line=$(sed -n 2p "$STATE/ca/ca.key")
secrets=$(printf '%s\n' "$tenant" "$user" "$app_secret" "$first_refresh" "$api_key" "$ca_key_line" $rotated)
scan=$(printf '%s\n' "$secrets" | "$PYTHON" "$PADDOCK_TOP/tests/integration/memscan.py" "$BG_PID" \
    --files /tmp /run /dev/shm /etc /home /root "$WS" 2>"$T/scan.err")
read -r procs in_procs files in_files <<<"$scan"
expect_eq "no real value in the environment, command line or memory of any sandbox process" \
    "yes 0" "$([ "${procs:-0}" -ge 2 ] && echo yes) $in_procs" || diag "$scan"
expect_eq "... nor in any file the sandbox sees (/tmp, /run, /dev/shm, /etc, homes, workspace)" \
    "yes 0" "$([ "${files:-0}" -ge 10 ] && echo yes) $in_files" || diag "$scan" "$(cat "$T/scan.err")"
stop_pid "$BG_PID"
out=$(cat "$BG_ERR")
pattern=$(printf '%s\n' "$secrets" | paste -sd'|')
expect_no_match "... nor in paddock's output" "$pattern" "$BG_LINE$out"
pdk audit --json
expect_match "the audit log records each use" \
    'credential.minted.*credential.refreshed|credential.refreshed.*credential.minted' "$(printf '%s' "$OUT" | tr '\n' ' ')"
expect_no_match "the audit log holds none of the values" "$pattern" "$OUT"
expect_eq "... nor does the store's file or the spool" 0 \
    "$(cat "$STATE/paddock.db" "$STATE"/audit-spool/* 2>/dev/null | grep -a -c -E "$pattern")"
expect_eq "the vault file holds none of them in clear" 0 "$(grep -a -c -E "$pattern" "$STATE/vault")"
