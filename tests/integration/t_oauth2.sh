#!/usr/bin/env bash
# t_oauth2: the oauth2_refresh provider against the fake Feishu server's OAuth v2 endpoint
# (tests/fixtures/fake_feishu.py), which rotates refresh tokens and revokes a chain whose
# spent refresh token comes back. The gateway refreshes the user token before it expires,
# keeps it across runs, writes each new refresh token back to the vault; two sessions
# refreshing at once keep a working chain; a revoked chain stops a run with one clear
# error and gives a running agent a 502 with the reason; no token is found inside or in
# the audit.
. "$(dirname "$0")/lib.sh"
need_userns
[ -e "$PADDOCK_BUILD/paddock-gateway.so" ] || bail_out "paddock-gateway.so is not built"

feishu_certs open.feishu.cn other.feishu.test

app_secret="real-app-secret-$RANDOM$RANDOM$RANDOM"
first_refresh="ur-first-$RANDOM$RANDOM$RANDOM"
# A user token lasts 3 s: refreshed when less than half of it remains. Each refresh takes
# 0.3 s at the server, so that two sessions' refreshes would overlap without the lock. The
# first lasts 60 s: the run right after the first finds it cached however slow the machine
# is (with 3 s, the 1.5 s it stays fresh were at times gone before that run read).
start_fake_feishu "$app_secret" --refresh-token "$first_refresh" --user-expire 3 \
    --first-user-expire 60 --refresh-delay 0.3 --user-expire-file "$T/user-expire"

set_secret feishu_app_id cli_paddocktest
set_secret feishu_app_secret "$app_secret"
set_secret feishu_user_refresh "$first_refresh"

cat >"$T/user.yaml" <<EOF2
version: 1
network:
  resolve: {"open.feishu.cn:443": "127.0.0.1:$FS_PORT"}
  upstream_ca: [$T/ca.pem]
  rules:
    - {host: open.feishu.cn, methods: [GET], path: /open-apis/bitable/v1/apps/bascExample/**, decision: allow}
credentials:
  - name: feishu-user
    provider: oauth2_refresh
    token_url: https://open.feishu.cn/open-apis/authen/v2/oauth/token
    refresh_token: {secret: feishu_user_refresh}
    client_id: {secret: feishu_app_id}
    client_secret: {secret: feishu_app_secret}
    hosts: [open.feishu.cn]
    inject: {header: Authorization, value: "Bearer {token}"}
    placeholder: {env: FEISHU_USER_TOKEN}
EOF2
API=https://open.feishu.cn/open-apis/bitable/v1/apps/bascExample/tables/tblExample/records
# secret_kind NAME: the kind of a vault secret (paddock secret list --json, a line each)
secret_kind() {
    pdk secret list --json
    printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
print(*(e["kind"] for e in map(json.loads, filter(str.strip, sys.stdin)) if e["name"] == sys.argv[1]))' "$1"
}
secret_count() {
    pdk secret list --json
    printf '%s\n' "$OUT" | grep -c '"name"'
}
refreshes() { grep -c '"path": "/open-apis/authen/v2/oauth/token"' "$T/fs.log"; }
# codes: the Feishu codes of the fake's answers to the OAuth endpoint, in order
codes() {
    "$PYTHON" -c '
import json, sys
print(" ".join(str(h["code"]) for h in map(json.loads, open(sys.argv[1]))
               if h["path"] == "/open-apis/authen/v2/oauth/token"))' "$T/fs.log"
}

# One read; the user token is injected; the refresh token is rotated in the vault.
wrun --policy "$T/user.yaml" -- sh -c 'printf "%s\n" "${FEISHU_USER_TOKEN%"${FEISHU_USER_TOKEN#pdk-ph-}"}"
    curl -sS --max-time 20 -o /dev/null -w "%{http_code}\n" -H "Authorization: Bearer $FEISHU_USER_TOKEN" '"$API"
expect_eq "a read with the user token works; the sandbox holds a placeholder" "pdk-ph- 200" \
    "$(printf '%s' "$OUT" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... one refresh, answered code 0" "0" "$(codes)"
real=$("$PYTHON" -c '
import json, sys
for h in map(json.loads, open(sys.argv[1])):
    a = h.get("authorization") or ""
    if a.startswith("Bearer u-"): print(a[7:]); break' "$T/fs.log")
expect_match "the server received a real user token" '^u-' "$real"
rotated=$("$PYTHON" -c '
import json, sys
print([h for h in map(json.loads, open(sys.argv[1])) if h["path"].endswith("/oauth/token")][0]["body"])' "$T/fs.log")
expect_match "... the refresh went form-encoded with the first refresh token and the client's id" \
    "^grant_type=refresh_token&refresh_token=$first_refresh&client_id=cli_paddocktest&client_secret=" \
    "$rotated"
expect_eq "the vault holds the rotated refresh token (a token now) and the cached access token" \
    "token token" "$(secret_kind feishu_user_refresh) $(secret_kind feishu-user.access_token)"

# Kept across a restart: a run while the token is valid does not refresh.
wrun --policy "$T/user.yaml" -- curl -sS --max-time 20 -o /dev/null -w '%{http_code}' "$API"
expect_eq "a second run at once reads with the cached token, no refresh" "200 1" "$OUT $(refreshes)"

# Refreshed before it expires, during a run, and the chain goes on: runs reading until the
# token has been refreshed twice see every read work across refreshes (each spends the
# refresh token the last wrote). They read until told to stop on their stdin (and have read
# 5 times at least): the test stops them once the fake has answered two refreshes, not after
# a fixed time (4 s, counted in whole seconds, was at times too short for two refreshes
# 1.8 s apart).
cat >"$WS/reader.sh" <<'EOF2'
n=0; bad=0; stop=0
until [ "$stop" = 1 ] && [ "$n" -ge 5 ]; do
    code=$(curl -sS --max-time 20 -o /dev/null -w '%{http_code}' "$1")
    [ "$code" = 200 ] || bad=$((bad + 1))
    n=$((n + 1))
    [ "$stop" = 1 ] || { IFS= read -r -t 0.2 _ && stop=1; }
done
echo "$n $bad"
EOF2
# wait_refreshes N: until the fake has answered N refreshes in all (60 s at most; tail -f
# follows its log as it grows).
wait_refreshes() {
    timeout 60 tail -n +1 -f "$T/fs.log" |
        grep -m "$1" '"path": "/open-apis/authen/v2/oauth/token"' | [ "$(grep -c .)" -ge "$1" ]
}
# Two sessions at once, each reading: both refresh as the token nears its end. The cached
# token made stale first: from the first refresh on, tokens last 3 s.
set_secret feishu-user.access_token "u-stale-token $(date +%s)000000000 3000000000"
before=$(refreshes)
mkfifo "$T/r1.in" "$T/r2.in"
exec {stop1}<>"$T/r1.in" {stop2}<>"$T/r2.in"
(cd "$WS" && pdk_run --workspace "$WS" --policy "$T/user.yaml" -- bash reader.sh "$API" \
    <"$T/r1.in" >"$T/r1.out" 2>"$T/r1.err") &
r1=$!
(cd "$WS" && pdk_run --workspace "$WS" --policy "$T/user.yaml" -- bash reader.sh "$API" \
    <"$T/r2.in" >"$T/r2.out" 2>"$T/r2.err") &
r2=$!
wait_refreshes $((before + 2)) || diag "the fake did not answer two refreshes within 60 s"
echo stop >&"$stop1"
echo stop >&"$stop2"
wait "$r1"; rc1=$?
wait "$r2"; rc2=$?
exec {stop1}>&- {stop2}>&-
rm -f "$T/r1.in" "$T/r2.in"
n1=$(cut -d' ' -f1 <"$T/r1.out"); n2=$(cut -d' ' -f1 <"$T/r2.out")
expect_eq "two sessions reading at once: both finish, every read answered 200" "0 0 0 0" \
    "$rc1 $rc2 $(cut -d' ' -f2 <"$T/r1.out") $(cut -d' ' -f2 <"$T/r2.out")" ||
    diag "$(cat "$T/r1.err" "$T/r2.err")"
expect_eq "... each made several reads" yes "$([ "${n1:-0}" -ge 5 ] && [ "${n2:-0}" -ge 5 ] && echo yes)"
after=$(refreshes)
expect_eq "... the token was refreshed on the way (twice at least)" yes \
    "$([ $((after - before)) -ge 2 ] && echo yes)"
expect_no_match "... and no refresh token was ever spent twice (the chain holds)" '2007[0-9]|20064' "$(codes)"
wrun --policy "$T/user.yaml" -- curl -sS --max-time 20 -o /dev/null -w '%{http_code}' "$API"
expect_eq "... and the chain works after them" 200 "$OUT"

# Two sessions that start at once with a stale token: one refreshes, the other waits for it
# and takes the new token from the vault. The token the refresh gets lasts 10 minutes, so
# that the second session, however late it looks, finds it fresh (with 3 s, a loaded
# machine let half of it pass first and the second refreshed again, 1 run in 10).
echo 600 >"$T/user-expire"
stale_end=$(( $(date +%s) ))000000000
set_secret feishu-user.access_token "u-stale-token $stale_end 3000000000"
before=$(refreshes)
(cd "$WS" && pdk_run --workspace "$WS" --policy "$T/user.yaml" -- curl -sS --max-time 20 \
    -o /dev/null -w '%{http_code}' "$API" </dev/null >"$T/s1.out" 2>"$T/s1.err") &
s1=$!
(cd "$WS" && pdk_run --workspace "$WS" --policy "$T/user.yaml" -- curl -sS --max-time 20 \
    -o /dev/null -w '%{http_code}' "$API" </dev/null >"$T/s2.out" 2>"$T/s2.err") &
s2=$!
wait "$s1"; wait "$s2"
expect_eq "two sessions starting at once with a stale token: both read" "200 200" \
    "$(cat "$T/s1.out") $(cat "$T/s2.out")"
expect_eq "... with one refresh between them" 1 $(( $(refreshes) - before ))
rm -f "$T/user-expire"

pdk audit --json
audit=$OUT
expect_match "each refresh is recorded, rotated" '"kind":"credential.refreshed".*"rotated":true' "$audit"
tokens=$("$PYTHON" -c '
import json, re, sys
seen = set()
for h in map(json.loads, open(sys.argv[1])):
    seen.update(re.findall(r"u-[A-Za-z0-9]{20,}|ur-[A-Za-z0-9]{20,}", json.dumps(h)))
print("|".join(sorted(seen)))' "$T/fs.log")
expect_no_match "no access or refresh token is in the audit log" "$tokens|$first_refresh|$app_secret" "$audit"
expect_no_match "... nor in what the sandboxes printed" "$tokens|$first_refresh" \
    "$(cat "$T"/r1.* "$T"/r2.* "$T"/s1.* "$T"/s2.*)"

# A revoked chain: the spent first refresh token is replayed (as a thief would), the server
# revokes the whole chain. A run that needs a refresh stops with one clear error; the vault
# keeps what it held.
curl -sS --max-time 10 --cacert "$T/ca.pem" --resolve "open.feishu.cn:$FS_PORT:127.0.0.1" \
    -d grant_type=refresh_token -d client_id=cli_paddocktest --data-urlencode "client_secret=$app_secret" \
    -d "refresh_token=$first_refresh" -o /dev/null "https://open.feishu.cn:$FS_PORT/open-apis/authen/v2/oauth/token"
set_secret feishu-user.access_token "u-stale-token $stale_end 3000000000"
vault_before=$(secret_count)
wrun --policy "$T/user.yaml" -- true
expect_eq "a revoked refresh token: paddock run fails (125)" 125 "$RC"
expect_match "... saying the endpoint refused it, why, and what to do" \
    "credential feishu-user: the token endpoint refused the refresh token \(HTTP 400, invalid_grant, code 20064\): The refresh token has been revoked. \(store a new one: paddock secret set feishu_user_refresh\)" \
    "$ERR"
expect_eq "... in one line" 1 "$(printf '%s\n' "$ERR" | grep -c .)"
expect_eq "... and the vault holds as many secrets as before" "$vault_before" "$(secret_count)"
expect_eq "... the refresh token is still the one it was (kind token: the last rotation's)" token \
    "$(secret_kind feishu_user_refresh)"

# The same during a run: the run starts with a cached token that is fresh for 2 s more, and
# the agent's request after that needs a refresh, which fails: a 502 with the reason. The
# cached token is one the server never issued, so any request that reached it with that
# token would get 400, not 502.
set_secret feishu-user.access_token "u-cached-token $(( $(date +%s) + 7 ))000000000 10000000000"
before=$(refreshes)
wrun --policy "$T/user.yaml" -- sh -c 'sleep 2.5; for i in 1 2; do curl -sS --max-time 20 -w " %{http_code}\n" '"$API"'; done'
answers=$(printf '%s' "$OUT" | paste -sd' ')
expect_match "a refresh that fails during a run: the agent gets a 502 with the reason" \
    '^\{"error":"upstream".*refused the refresh token .*code 20064[^}]*\} +502 ' "$answers"
expect_match "... a retry at once gets the same answer, without asking the provider again" \
    '502 +\{"error":"upstream".*code 20064.*\(the last try, under 10 s ago\)"\} +502$' "$answers"
expect_eq "... which was asked once" 1 $(( $(refreshes) - before ))
pdk audit --json
expect_match "... recorded as credential.provider_failed" '"kind":"credential.provider_failed"' "$OUT"
expect_eq "... and the cached token never went upstream" 0 "$(grep -c u-cached-token "$T/fs.log")"

# A vault the run cannot read (under another key): the run stops with one clear error
# before anything starts, and the vault is not written.
sum_before=$(sha256sum <"$STATE/vault")
PADDOCK_VAULT_KEY=$(printf '%064x' 1) wrun --policy "$T/user.yaml" -- true
expect_eq "a vault under another key: paddock run fails (125)" 125 "$RC"
expect_match "... saying so in one line" "^paddock: .*cannot decrypt the vault" "$ERR"
expect_eq "... one line" 1 "$(printf '%s\n' "$ERR" | grep -c .)"
expect_eq "... and the vault is as it was" "$sum_before" "$(sha256sum <"$STATE/vault")"

# A refresh does not stall the gateway: while one request waits for a slow refresh (3 s at
# a second fake server), a request to another host is answered. The run starts with a
# cached token fresh for 2 s more, so the refresh happens during the run.
start_fake_feishu "$app_secret" --refresh-token ur-slow-first --refresh-delay 3
set_secret feishu_user_refresh ur-slow-first
sed -e "s/127.0.0.1:[0-9]*/127.0.0.1:$FS_PORT/" \
    -e 's|^  rules:|  rules:\n    - {host: other.feishu.test, decision: allow}|' \
    -e "s|^  resolve: {|  resolve: {\"other.feishu.test:443\": \"127.0.0.1:$FS_PORT\", |" \
    "$T/user.yaml" >"$T/slow.yaml"
set_secret feishu-user.access_token "u-cached-token $(( $(date +%s) + 7 ))000000000 10000000000"
cat >"$WS/slow.sh" <<'EOF2'
sleep 2.5
curl -sS --max-time 30 -o /dev/null -w 'A %{http_code}\n' -H "Authorization: Bearer $FEISHU_USER_TOKEN" "$1" >/tmp/a &
curl -sS --max-time 30 -o /dev/null -w 'A2 %{http_code}\n' -H "Authorization: Bearer $FEISHU_USER_TOKEN" "$1" >/tmp/a2 &
sleep 0.3
curl -sS --max-time 30 -o /dev/null -w 'B %{http_code}' https://other.feishu.test/open-apis/bot/v3/info
if [ -s /tmp/a ]; then echo " (A was answered first)"; else echo " (A still waits)"; fi
wait
cat /tmp/a /tmp/a2
EOF2
before=$(refreshes)
wrun --policy "$T/slow.yaml" -- sh slow.sh "$API"
expect_eq "while requests wait for a slow refresh, another host's request is answered" \
    "B 400 (A still waits)|A 200|A2 200" "$(printf '%s' "$OUT" | paste -sd'|')"
expect_eq "... and the two that waited shared one refresh" 1 $(( $(refreshes) - before ))
