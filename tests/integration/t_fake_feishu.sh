#!/usr/bin/env bash
# The fake Feishu Open API server (tests/fixtures/fake_feishu.py) itself, with curl on
# 127.0.0.1, no paddock involved: tokens, token errors, Bitable v1 and Base v3 records, im
# messages, bot info, the request log; over plain HTTP, then over TLS with a test CA.
. "$(dirname "$0")/lib.sh"

command -v curl >/dev/null || skip_all "curl is not installed"
command -v openssl >/dev/null || skip_all "openssl is not installed"

FAKE=$PADDOCK_TOP/tests/fixtures/fake_feishu.py
APP_ID=cli_fake0123456789
APP_SECRET=s3cret-app-secret

# start_feishu VAR ARGS...: the fake on 127.0.0.1 (its port in VAR, its pid in FEISHU_PID).
start_feishu() {
    local var=$1 fifo="$T/.feishu.$RANDOM"
    shift
    mkfifo "$fifo"
    "$PYTHON" "$FAKE" --app-id "$APP_ID" --app-secret "$APP_SECRET" "$@" >"$fifo" 2>>"$T/feishu.err" &
    FEISHU_PID=$!
    track_pid "$FEISHU_PID"
    local port=""
    IFS= read -r -t 30 port <"$fifo"
    rm -f "$fifo"
    [[ $port =~ ^[0-9]+$ ]] || bail_out "the fake Feishu server did not start: $(cat "$T/feishu.err")"
    printf -v "$var" '%s' "$port"
}

# call METHOD PATH [BODY]: a request to $BASE with the Authorization header $AUTH (none when
# empty); sets STATUS (HTTP) and RESP (the body). CURL_EXTRA: more curl options (TLS).
AUTH=""
CURL_EXTRA=()
call() {
    local method=$1 path=$2 body=${3-} args=()
    [ -n "$AUTH" ] && args+=(-H "Authorization: $AUTH")
    [ -n "$body" ] && args+=(-H "Content-Type: application/json; charset=utf-8" --data-binary "$body")
    _last_cmd="curl -X $method $path ${body:+-d '$body'}"
    STATUS=$(curl -sS --max-time 10 "${CURL_EXTRA[@]}" -X "$method" "${args[@]}" -o "$T/.resp" \
        -w '%{http_code}' "$BASE$path" 2>"$T/.curl.err")
    RESP=$(cat "$T/.resp" 2>/dev/null)
    # What lib.sh shows under a failing expectation (_diag_last_run).
    # shellcheck disable=SC2034
    OUT=$RESP ERR=$(cat "$T/.curl.err") RC=$STATUS
}

# j EXPR: EXPR evaluated on the last response (as j).
j() {
    json_get "$RESP" "$1" 2>/dev/null
}

# token SECRET: the token endpoint's answer for $APP_ID and SECRET.
token() {
    local saved=$AUTH
    AUTH=""
    call POST /open-apis/auth/v3/tenant_access_token/internal \
        "{\"app_id\":\"$APP_ID\",\"app_secret\":\"$1\"}"
    AUTH=$saved
}

V1=/open-apis/bitable/v1/apps/bascExample/tables/tblExample/records
V3=/open-apis/base/v3/bases/bascExample/tables/tblExample/records

# ---- plain HTTP ----------------------------------------------------------------------------

start_feishu PORT --log "$T/feishu.log"
BASE=http://127.0.0.1:$PORT
ok "the fake prints its port once it listens ($PORT)"

# Tokens.
token "$APP_SECRET"
expect_eq "token: HTTP 200, code 0, msg ok" "200 0 ok" "$STATUS $(j 'j["code"]') $(j 'j["msg"]')"
TOKEN=$(j 'j["tenant_access_token"]')
expect_match "... a tenant token (t-...) at the top level, not under data" '^t-[A-Za-z0-9]{20,}$' "$TOKEN"
expect_eq "... expire: 7200 seconds" 7200 "$(j 'j["expire"]')"
expect_eq "... no data envelope" false "$(j '"data" in j')"
token "$APP_SECRET"
expect_eq "asked again: the same token (more than 30 min left)" "$TOKEN" "$(j 'j["tenant_access_token"]')"
expect_match "... with what remains of its lifetime" '^(71[0-9][0-9]|7200)$' "$(j 'j["expire"]')"
token wrong-secret
expect_eq "a wrong secret: HTTP 200, code 99991543, no token" "200 99991543 false" \
    "$STATUS $(j 'j["code"]') $(j '"tenant_access_token" in j')"
expect_eq "... msg" "app_id or app_secret is invalid" "$(j 'j["msg"]')"
call POST /open-apis/auth/v3/tenant_access_token/internal '{"app_id":"cli_other","app_secret":"x"}'
expect_eq "a wrong app id: 99991543 too" 99991543 "$(j 'j["code"]')"
call POST /open-apis/auth/v3/tenant_access_token/internal '{}'
expect_eq "no credentials at all: HTTP 400, code 10003" "400 10003" "$STATUS $(j 'j["code"]')"
call POST /open-apis/auth/v3/app_access_token/internal \
    "{\"app_id\":\"$APP_ID\",\"app_secret\":\"$APP_SECRET\"}"
expect_eq "app_access_token/internal: code 0, app and tenant token (the current one)" \
    "0 $TOKEN $TOKEN" "$(j 'j["code"]') $(j 'j["app_access_token"]') $(j 'j["tenant_access_token"]')"

# Token errors: HTTP 400 with the token error codes.
AUTH=""
call GET "$V1"
expect_eq "no Authorization header: HTTP 400, code 99991661" "400 99991661" "$STATUS $(j 'j["code"]')"
expect_match "... the error object carries a log id" '^[0-9A-F]{20,}$' "$(j 'j["error"]["log_id"]')"
AUTH="Bearer"
call GET "$V1"
expect_eq "'Bearer' and no token: 99991661" "400 99991661" "$STATUS $(j 'j["code"]')"
AUTH="Basic dXNlcjpwYXNz"
call GET "$V1"
expect_eq "another scheme: 99991671 (bad format)" "400 99991671" "$STATUS $(j 'j["code"]')"
AUTH="Bearer not-a-feishu-token"
call GET "$V1"
expect_eq "a token without t-/u-: 99991671" "400 99991671" "$STATUS $(j 'j["code"]')"
AUTH="Bearer t-madeUpTokenThatThisServerNeverIssued0"
call GET "$V1"
expect_eq "a made-up t- token: 99991663 (invalid)" "400 99991663" "$STATUS $(j 'j["code"]')"
AUTH="Bearer u-madeUpUserToken"
call GET "$V1"
expect_eq "a user token this server did not issue: 99991668" "400 99991668" "$STATUS $(j 'j["code"]')"
AUTH=""
call GET /open-apis/no/such/endpoint
expect_eq "an unknown endpoint without a token: 99991661 (checked first)" "400 99991661" \
    "$STATUS $(j 'j["code"]')"

AUTH="Bearer $TOKEN"
call GET /open-apis/no/such/endpoint
expect_eq "an unknown endpoint with a token: 404" "404 404" "$STATUS $(j 'j["code"]')"
call DELETE /open-apis/bot/v3/info
expect_eq "a known path with another method: 404" 404 "$STATUS"

# Bot info.
call GET /open-apis/bot/v3/info
expect_eq "bot info: code 0, msg ok" "200 0 ok" "$STATUS $(j 'j["code"]') $(j 'j["msg"]')"
expect_match "... the bot at the top level, with an open_id and a name" '^ou_[0-9a-f]{32} .+' \
    "$(j 'j["bot"]["open_id"] + " " + j["bot"]["app_name"]')"

# Bitable v1: list, paging, get.
call GET "$V1"
expect_eq "v1 list: the success envelope" "200 0 success" "$STATUS $(j 'j["code"]') $(j 'j["msg"]')"
expect_eq "... three seeded records, no more pages" "3 3 false" \
    "$(j 'len(j["data"]["items"])') $(j 'j["data"]["total"]') $(j 'j["data"]["has_more"]')"
expect_eq "... items are {record_id, fields}" '["fields", "record_id"]' "$(j 'sorted(j["data"]["items"][0])')"
expect_eq "... the first one" '{"Name": "Write the launch plan", "Owner": "alice", "Priority": 2, "Status": "Todo"}' \
    "$(j 'j["data"]["items"][0]["fields"]')"
call GET "$V1?page_size=2"
expect_eq "v1 list, page_size=2: two records and more to come" "2 true" \
    "$(j 'len(j["data"]["items"])') $(j 'j["data"]["has_more"]')"
PAGE=$(j 'j["data"]["page_token"]')
call GET "$V1?page_size=2&page_token=$PAGE"
expect_eq "... the next page (page_token): the last one" "recSeed0003 false" \
    "$(j 'j["data"]["items"][0]["record_id"]') $(j 'j["data"]["has_more"]')"
call GET "$V1?field_names=%5B%22Name%22%5D"
expect_eq "... field_names projects the fields" '{"Name": "Write the launch plan"}' \
    "$(j 'j["data"]["items"][0]["fields"]')"
call GET "$V1?page_size=501"
expect_eq "... page_size over 500: HTTP 400, 99992402 naming the field" "400 99992402 page_size" \
    "$STATUS $(j 'j["code"]') $(j 'j["error"]["field_violations"][0]["field"]')"
call GET "$V1/recSeed0002"
expect_eq "v1 get: {record: {record_id, fields}}" "recSeed0002 Review the budget" \
    "$(j 'j["data"]["record"]["record_id"]') $(j 'j["data"]["record"]["fields"]["Name"]')"
call GET "$V1/recNoSuchRec"
expect_eq "v1 get, unknown record: HTTP 200, 1254043 RecordIdNotFound" "200 1254043 RecordIdNotFound" \
    "$STATUS $(j 'j["code"]') $(j 'j["msg"]')"
call GET /open-apis/bitable/v1/apps/bascNoSuchApp/tables/tblExample/records
expect_eq "unknown app: 1254040 BaseTokenNotFound" "1254040 BaseTokenNotFound" "$(j 'j["code"]') $(j 'j["msg"]')"
call GET /open-apis/bitable/v1/apps/bascExample/tables/tblNoSuchTable/records
expect_eq "unknown table: 1254041 TableIdNotFound" "1254041 TableIdNotFound" "$(j 'j["code"]') $(j 'j["msg"]')"

# Bitable v1: create, update, delete.
call POST "$V1" '{"fields":{"Name":"Created by curl","Status":"Todo","Priority":7}}'
expect_eq "v1 create: code 0" 0 "$(j 'j["code"]')"
NEW=$(j 'j["data"]["record"]["record_id"]')
expect_match "... a new record id (rec...)" '^rec[A-Za-z0-9]{7}$' "$NEW"
expect_eq "... its fields" '{"Name": "Created by curl", "Priority": 7, "Status": "Todo"}' \
    "$(j 'j["data"]["record"]["fields"]')"
call PUT "$V1/$NEW" '{"fields":{"Status":"Done","Owner":"carol"}}'
expect_eq "v1 update (PUT): fields merged" '{"Name": "Created by curl", "Owner": "carol", "Priority": 7, "Status": "Done"}' \
    "$(j 'j["data"]["record"]["fields"]')"
call PUT "$V1/$NEW" '{"fields":{"Owner":null}}'
expect_eq "... null clears a cell" false "$(j '"Owner" in j["data"]["record"]["fields"]')"
call POST "$V1" '{"fields":{"Priority":"high"}}'
expect_eq "a number field given a string: 1254061 NumberFieldConvFail" "1254061" "$(j 'j["code"]')"
call POST "$V1" '{"fields":{"Nope":"x"}}'
expect_eq "an unknown field name: 1254045 FieldNameNotFound" "1254045" "$(j 'j["code"]')"
call POST "$V1" '{"fields":'
expect_eq "a body that is not JSON: HTTP 400, 9499" "400 9499" "$STATUS $(j 'j["code"]')"
call DELETE "$V1/$NEW"
expect_eq "v1 delete: {deleted: true, record_id}" "true $NEW" \
    "$(j 'j["data"]["deleted"]') $(j 'j["data"]["record_id"]')"
call GET "$V1/$NEW"
expect_eq "... then it is gone" 1254043 "$(j 'j["code"]')"

# Bitable v1: search.
call POST "$V1/search" '{"filter":{"conjunction":"and","conditions":[{"field_name":"Status","operator":"is","value":["Done"]}]}}'
expect_eq "v1 search, Status is Done: the one record" "1 recSeed0003" \
    "$(j 'j["data"]["total"]') $(j 'j["data"]["items"][0]["record_id"]')"
call POST "$V1/search" '{"filter":{"conjunction":"and","conditions":[{"field_name":"Owner","operator":"is","value":["alice"]},{"field_name":"Status","operator":"isNot","value":["Done"]}]}}'
expect_eq "... and: Owner is alice and Status isNot Done" '["recSeed0001"]' \
    "$(j '[i["record_id"] for i in j["data"]["items"]]')"
call POST "$V1/search" '{"filter":{"conjunction":"or","conditions":[{"field_name":"Name","operator":"contains","value":["budget"]},{"field_name":"Status","operator":"is","value":["Done"]}]}}'
expect_eq "... or: Name contains budget or Status is Done" '["recSeed0002", "recSeed0003"]' \
    "$(j '[i["record_id"] for i in j["data"]["items"]]')"
call POST "$V1/search" '{"field_names":["Name"],"sort":[{"field_name":"Priority","desc":true}]}'
expect_eq "... sort by Priority desc, field_names projects" '[["recSeed0003", {"Name": "Ship the release"}], ["recSeed0001", {"Name": "Write the launch plan"}], ["recSeed0002", {"Name": "Review the budget"}]]' \
    "$(j '[[i["record_id"], i["fields"]] for i in j["data"]["items"]]')"
call POST "$V1/search?page_size=1" '{}'
expect_eq "... paged like list" "1 true 3" \
    "$(j 'len(j["data"]["items"])') $(j 'j["data"]["has_more"]') $(j 'j["data"]["total"]')"
call POST "$V1/search" '{"filter":{"conjunction":"and","conditions":[{"field_name":"Nope","operator":"is","value":["x"]}]}}'
expect_eq "... an unknown field: 1254045" 1254045 "$(j 'j["code"]')"

# Bitable v1: batches.
call POST "$V1/batch_create" '{"records":[{"fields":{"Name":"Batch one"}},{"fields":{"Name":"Batch two","Priority":4}}]}'
expect_eq "v1 batch_create: {records: [{record_id, fields}]}" '["Batch one", "Batch two"]' \
    "$(j '[r["fields"]["Name"] for r in j["data"]["records"]]')"
B1=$(j 'j["data"]["records"][0]["record_id"]')
B2=$(j 'j["data"]["records"][1]["record_id"]')
call POST "$V1/batch_update" "{\"records\":[{\"record_id\":\"$B1\",\"fields\":{\"Status\":\"Todo\"}},{\"record_id\":\"$B2\",\"fields\":{\"Status\":\"Done\"}}]}"
expect_eq "v1 batch_update: the updated records" "[\"$B1\", \"$B2\"] [\"Todo\", \"Done\"]" \
    "$(j '[r["record_id"] for r in j["data"]["records"]]') $(j '[r["fields"]["Status"] for r in j["data"]["records"]]')"
call POST "$V1/batch_update" '{"records":[{"record_id":"recNoSuchRec","fields":{"Status":"Todo"}}]}'
expect_eq "... an unknown record: 1254043" 1254043 "$(j 'j["code"]')"
call POST "$V1/batch_get" "{\"record_ids\":[\"$B1\",\"recNoSuchRec\"]}"
expect_eq "v1 batch_get: records, absent_record_ids, forbidden_record_ids" "[\"$B1\"] [\"recNoSuchRec\"] []" \
    "$(j '[r["record_id"] for r in j["data"]["records"]]') $(j 'j["data"]["absent_record_ids"]') $(j 'j["data"]["forbidden_record_ids"]')"
call POST "$V1/batch_delete" "{\"records\":[\"$B1\",\"$B2\"]}"
expect_eq "v1 batch_delete: {records: [{deleted, record_id}]}" "[[true, \"$B1\"], [true, \"$B2\"]]" \
    "$(j '[[r["deleted"], r["record_id"]] for r in j["data"]["records"]]')"
call GET "$V1"
expect_eq "... the table is back to its three records" 3 "$(j 'j["data"]["total"]')"

# Base v3.
call GET "$V3?offset=0&limit=2"
expect_eq "v3 list: the record matrix" '["Name", "Status", "Owner", "Priority"] ["recSeed0001", "recSeed0002"] true 3' \
    "$(j 'j["data"]["fields"]') $(j 'j["data"]["record_id_list"]') $(j 'j["data"]["has_more"]') $(j 'j["data"]["total"]')"
expect_eq "... one row of cells a record" '["Write the launch plan", "Todo", "alice", 2]' "$(j 'j["data"]["data"][0]')"
expect_eq "... and the field ids" '["fldName0001", "fldStatus01", "fldOwner001", "fldPrio0001"]' \
    "$(j 'j["data"]["field_id_list"]')"
call GET "$V3?offset=2&limit=2&field_id=Name&field_id=fldPrio0001"
expect_eq "... offset, and field_id (by name or id) selects fields" '["Name", "Priority"] [["Ship the release", 3]] false' \
    "$(j 'j["data"]["fields"]') $(j 'j["data"]["data"]') $(j 'j["data"]["has_more"]')"
call GET "$V3?limit=201"
expect_eq "... limit over 200: HTTP 400, 99992402" "400 99992402" "$STATUS $(j 'j["code"]')"
call GET "$V3/recSeed0002"
expect_eq "v3 get one: a matrix of one row" '["recSeed0002"] [["Review the budget", "In progress", "bob", 1]]' \
    "$(j 'j["data"]["record_id_list"]') $(j 'j["data"]["data"]')"
call GET "$V3/recNoSuchRec"
expect_eq "... an unknown record: 1254043" 1254043 "$(j 'j["code"]')"
call POST "$V3" '{"Name":"Made in v3","Status":"Todo"}'
R3=$(j 'j["data"]["record_id"]')
expect_eq "v3 create (cells without a fields wrapper): {record_id, fields}" '{"Name": "Made in v3", "Status": "Todo"}' \
    "$(j 'j["data"]["fields"]')"
expect_match "... a new record id" '^rec' "$R3"
call GET "$V1/$R3"
expect_eq "... the same store: v1 sees it" "Made in v3" "$(j 'j["data"]["record"]["fields"]["Name"]')"
call PATCH "$V3/$R3" '{"Status":"Done","Priority":9}'
expect_eq "v3 update (PATCH): merged" '{"Name": "Made in v3", "Priority": 9, "Status": "Done"}' "$(j 'j["data"]["fields"]')"
call POST "$V3/search" '{"filter":{"logic":"and","conditions":[["Status","==","Done"]]},"select_fields":["Name"],"sort":[{"field":"Priority","desc":false}]}'
expect_eq "v3 search: filter, select_fields, sort" "[\"Name\"] [\"recSeed0003\", \"$R3\"] [[\"Ship the release\"], [\"Made in v3\"]]" \
    "$(j 'j["data"]["fields"]') $(j 'j["data"]["record_id_list"]') $(j 'j["data"]["data"]')"
call POST "$V3/search" '{"keyword":"release","search_fields":["Name"]}'
expect_eq "... keyword in search_fields" '["recSeed0003"]' "$(j 'j["data"]["record_id_list"]')"
call POST "$V3/search" '{"filter":{"logic":"or","conditions":[["Owner","==","bob"],["Priority",">=",3]]},"limit":1}'
expect_eq "... or, >=, limit" "[\"recSeed0002\"] true 3" \
    "$(j 'j["data"]["record_id_list"]') $(j 'j["data"]["has_more"]') $(j 'j["data"]["total"]')"
call POST "$V3/batch_create" '{"fields":["Name","Priority"],"rows":[["Row one",1],["Row two",2]]}'
expect_eq "v3 batch_create {fields, rows}: a matrix of the new records" '["Name", "Priority"] [["Row one", 1], ["Row two", 2]] 2' \
    "$(j 'j["data"]["fields"]') $(j 'j["data"]["data"]') $(j 'len(j["data"]["record_id_list"])')"
ROWS=$(j 'j["data"]["record_id_list"]')
call POST "$V3/batch_update" "{\"record_id_list\":$ROWS,\"patch\":{\"Status\":\"Done\"}}"
expect_eq "v3 batch_update {record_id_list, patch}: {record_id_list, update}" "$ROWS {\"Status\": \"Done\"}" \
    "$(j 'j["data"]["record_id_list"]') $(j 'j["data"]["update"]')"
call POST "$V3/batch_get" "{\"record_id_list\":[\"$R3\",\"recNoSuchRec\"],\"select_fields\":[\"Status\"]}"
expect_eq "v3 batch_get: rows (nulls for a missing one), record_not_found" '[["Done"], [null]] ["recNoSuchRec"]' \
    "$(j 'j["data"]["data"]') $(j 'j["data"]["record_not_found"]')"
call POST "$V3/batch_delete" "{\"record_id_list\":$ROWS}"
expect_eq "v3 batch_delete: {record_id_list}" "$ROWS" "$(j 'j["data"]["record_id_list"]')"
call DELETE "$V3/$R3"
expect_eq "v3 delete: {record_id, deleted: true}" "$R3 true" "$(j 'j["data"]["record_id"]') $(j 'j["data"]["deleted"]')"
call GET "$V3"
expect_eq "... the table is back to its three records" 3 "$(j 'j["data"]["total"]')"
call GET /open-apis/base/v3/bases/bascNoSuchApp/tables/tblExample/records
expect_eq "v3, unknown base: 1254040" 1254040 "$(j 'j["code"]')"

# im: send a message.
call POST "/open-apis/im/v1/messages?receive_id_type=chat_id" \
    '{"receive_id":"oc_0123456789abcdef","msg_type":"text","content":"{\"text\":\"hello from the test\"}"}'
expect_eq "im send: code 0" "200 0" "$STATUS $(j 'j["code"]')"
expect_match "... data: message_id, chat_id, msg_type, create_time (ms)" \
    '^om_[0-9a-f]{32} oc_0123456789abcdef text [0-9]{13}$' \
    "$(j 'j["data"]["message_id"] + " " + j["data"]["chat_id"] + " " + j["data"]["msg_type"] + " " + j["data"]["create_time"]')"
expect_eq "... body.content: the JSON string as sent" '{"text":"hello from the test"}' "$(j 'j["data"]["body"]["content"]')"
call POST "/open-apis/im/v1/messages?receive_id_type=open_id" \
    '{"receive_id":"ou_someone","msg_type":"interactive","content":"{\"elements\":[]}"}'
expect_match "... to an open_id: a chat id of its own" '^0 oc_[0-9a-f]{32}$' "$(j 'j["code"]') $(j 'j["data"]["chat_id"]')"
call POST /open-apis/im/v1/messages '{"receive_id":"oc_x","msg_type":"text","content":"{\"text\":\"hi\"}"}'
expect_eq "... no receive_id_type: HTTP 400, 99992402" "400 99992402 receive_id_type" \
    "$STATUS $(j 'j["code"]') $(j 'j["error"]["field_violations"][0]["field"]')"
call POST "/open-apis/im/v1/messages?receive_id_type=chat_id" '{"receive_id":"oc_x","msg_type":"text","content":"not json"}'
expect_eq "... content that is not JSON: HTTP 400, 230001" "400 230001" "$STATUS $(j 'j["code"]')"

# Keep-alive: two requests on one connection.
conns=$(curl -sS --max-time 10 -H "Authorization: Bearer $TOKEN" -o /dev/null -o /dev/null \
    -w '%{num_connects}\n' "$BASE/open-apis/bot/v3/info" "$BASE$V1/recSeed0001" | tr '\n' ' ')
expect_eq "keep-alive: the second request reuses the connection" "1 0 " "$conns"

# The log.
expect_eq "the log: every line is a JSON object" "" \
    "$("$PYTHON" -c 'import json,sys
for n, l in enumerate(open(sys.argv[1]), 1):
    if not isinstance(json.loads(l), dict): print(n)' "$T/feishu.log" 2>&1)"
logged() {
    "$PYTHON" -c 'import json,sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    if eval(sys.argv[2]): print(eval(sys.argv[3]))' "$T/feishu.log" "$1" "$2" | tail -n 1
}
expect_eq "... the real token arrived in the Authorization header" "Bearer $TOKEN" \
    "$(logged 'j["method"] == "GET" and j["path"] == "/open-apis/bot/v3/info" and j["status"] == 200' 'j["authorization"]')"
expect_eq "... as a header too" "Bearer $TOKEN" \
    "$(logged 'j["path"] == "/open-apis/bot/v3/info" and j["status"] == 200' 'j["headers"]["Authorization"]')"
expect_eq "... the made-up one, with the answer's status and code" "Bearer t-madeUpTokenThatThisServerNeverIssued0 400 99991663" \
    "$(logged 'j["code"] == 99991663' 'j["authorization"] + " " + str(j["status"]) + " " + str(j["code"])')"
expect_eq "... no header: authorization null" "None" \
    "$(logged 'j["code"] == 99991661' 'j["authorization"]')"
expect_eq "... the token request's body" "$APP_ID" \
    "$(logged 'j["path"].endswith("/tenant_access_token/internal") and j["code"] == 0' 'j["body"]["app_id"]')"
expect_eq "... a message's body and query" 'hello from the test receive_id_type=chat_id chat_id' \
    "$(logged 'j["path"] == "/open-apis/im/v1/messages" and j["code"] == 0' 'json.loads(j["body"]["content"])["text"] + " " + j["query"] + " " + j["params"]["receive_id_type"][0]')"
expect_eq "... a body that is not JSON, as text" '{"fields":' \
    "$(logged 'j["code"] == 9499' 'j["body"]')"

# Token expiry: a token is refused once it expired, and the next call to the token endpoint
# mints a new one. The fake's clock is moved on through --clock-file, not waited for.
start_feishu SHORT_PORT --expire 60 --clock-file "$T/clock" --log "$T/short.log"
BASE=http://127.0.0.1:$SHORT_PORT
token "$APP_SECRET"
OLD=$(j 'j["tenant_access_token"]')
expect_eq "--expire 60: expire is 60" "60" "$(j 'j["expire"]')"
AUTH="Bearer $OLD"
call GET /open-apis/bot/v3/info
first_code=$(j 'j["code"]')
echo 30 >"$T/clock"
call GET /open-apis/bot/v3/info
before_code=$(j 'j["code"]')
echo 61 >"$T/clock"
call GET /open-apis/bot/v3/info
expect_eq "... valid before its expiry" "0 0" "$first_code $before_code"
expect_eq "... valid at first, then refused: HTTP 400, 99991663" "0 400 99991663" "$first_code $STATUS $(j 'j["code"]')"
token "$APP_SECRET"
NEWTOK=$(j 'j["tenant_access_token"]')
expect_ne "... the token endpoint then mints a new token" "$OLD" "$NEWTOK"
AUTH="Bearer $NEWTOK"
call GET /open-apis/bot/v3/info
expect_eq "... which works" 0 "$(j 'j["code"]')"
stop_pid "$FEISHU_PID"

# ---- user tokens: the refresh_token grant, rotating -----------------------------------------

start_feishu OAUTH_PORT --refresh-token ur-first-refresh-token --user-expire 600
BASE=http://127.0.0.1:$OAUTH_PORT
AUTH=""
OAUTH=/open-apis/authen/v2/oauth/token
# refresh TOKEN [SECRET]: the refresh_token grant, form-encoded as RFC 6749 has it
refresh() {
    _last_cmd="curl -d grant_type=refresh_token... $OAUTH"
    STATUS=$(curl -sS --max-time 10 -o "$T/.resp" -w '%{http_code}' \
        --data-urlencode grant_type=refresh_token --data-urlencode "client_id=$APP_ID" \
        --data-urlencode "client_secret=${2:-$APP_SECRET}" --data-urlencode "refresh_token=$1" \
        "$BASE$OAUTH" 2>"$T/.curl.err")
    RESP=$(cat "$T/.resp" 2>/dev/null)
    # shellcheck disable=SC2034
    OUT=$RESP ERR=$(cat "$T/.curl.err") RC=$STATUS
}
refresh ur-first-refresh-token
expect_eq "oauth: the first refresh token gives code 0, a u- token and its lifetime" \
    "200 0 u- 600 Bearer" \
    "$STATUS $(j 'j["code"]') $(j 'j["access_token"][:2]') $(j 'j["expires_in"]') $(j 'j["token_type"]')"
USER_TOKEN=$(j 'j["access_token"]')
R1=$(j 'j["refresh_token"]')
expect_match "... and a new refresh token (rotating)" '^ur-[A-Za-z0-9]{20,}$' "$R1"
AUTH="Bearer $USER_TOKEN"
call GET "$V1?page_size=1"
expect_eq "the user token reads records" "200 0" "$STATUS $(j 'j["code"]')"
AUTH=""
refresh "$R1" wrong-secret
expect_eq "a wrong client secret: 401, invalid_client, 20002" "401 invalid_client 20002" \
    "$STATUS $(j 'j["error"]') $(j 'j["code"]')"
refresh ur-never-issued
expect_eq "a refresh token never issued: 400, invalid_grant, 20026" "400 invalid_grant 20026" \
    "$STATUS $(j 'j["error"]') $(j 'j["code"]')"
AUTH=""
call POST "$OAUTH" "{\"grant_type\":\"refresh_token\",\"client_id\":\"$APP_ID\",\"client_secret\":\"$APP_SECRET\",\"refresh_token\":\"$R1\"}"
expect_eq "the same grant as JSON works too (Feishu's own form)" "200 0" "$STATUS $(j 'j["code"]')"
R2=$(j 'j["refresh_token"]')
refresh "$R1"
expect_eq "a spent refresh token again: 20073, and the chain is revoked" "400 invalid_grant 20073" \
    "$STATUS $(j 'j["error"]') $(j 'j["code"]')"
refresh "$R2"
expect_eq "... its newest refresh token is refused after that: 20064" "400 20064" \
    "$STATUS $(j 'j["code"]')"
call POST "$OAUTH" '{"grant_type":"authorization_code","code":"x"}'
expect_eq "another grant type: 20048" "400 unsupported_grant_type" "$STATUS $(j 'j["error"]')"
AUTH="Bearer u-madeUpUserToken"
call GET "$V1"
expect_eq "a u- token this server did not issue: 99991668" "400 99991668" "$STATUS $(j 'j["code"]')"

# ---- TLS, with a test CA -------------------------------------------------------------------

test_certs feishu open.feishu.test IP:127.0.0.1
start_feishu TLS_PORT --tls "$T/feishu.pem" "$T/feishu.key" --log "$T/tls.log"
BASE=https://127.0.0.1:$TLS_PORT
CURL_EXTRA=(--cacert "$T/ca.pem")
AUTH=""
token "$APP_SECRET"
expect_eq "TLS: the token endpoint (curl --cacert the test CA)" "200 0" "$STATUS $(j 'j["code"]')"
TLS_TOKEN=$(j 'j["tenant_access_token"]')
AUTH="Bearer $TLS_TOKEN"
call GET "$V1?page_size=1"
expect_eq "TLS: v1 list" "0 recSeed0001" "$(j 'j["code"]') $(j 'j["data"]["items"][0]["record_id"]')"
call POST "$V3" '{"Name":"Over TLS"}'
expect_eq "TLS: v3 create" "0 Over TLS" "$(j 'j["code"]') $(j 'j["data"]["fields"]["Name"]')"
AUTH="Bearer t-madeUpTokenThatThisServerNeverIssued0"
call GET /open-apis/bot/v3/info
expect_eq "TLS: a made-up token: 400, 99991663" "400 99991663" "$STATUS $(j 'j["code"]')"
conns=$(curl -sS --max-time 10 --cacert "$T/ca.pem" -H "Authorization: Bearer $TLS_TOKEN" -o /dev/null \
    -o /dev/null -w '%{num_connects}\n' "$BASE/open-apis/bot/v3/info" "$BASE$V1/recSeed0001" | tr '\n' ' ')
expect_eq "TLS: keep-alive" "1 0 " "$conns"
check_fails "TLS: a client that does not trust the CA is refused" \
    curl -sS --max-time 10 -o /dev/null "$BASE/open-apis/bot/v3/info"
T_LOG=$T/tls.log
expect_eq "TLS: the log records the token that arrived" "Bearer $TLS_TOKEN" \
    "$("$PYTHON" -c 'import json,sys
hits = [json.loads(l) for l in open(sys.argv[1])]
print([h["authorization"] for h in hits if h["path"] == "/open-apis/bot/v3/info" and h["code"] == 0][0])' "$T_LOG")"
expect_eq "the fake wrote nothing to stderr" "" "$(cat "$T/feishu.err")"
