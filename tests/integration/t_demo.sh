#!/usr/bin/env bash
# t_demo: `paddock demo` (the README's main job) tells both stories to their end on
# built-in defaults, leaves nothing behind, and refuses what it does not know.
. "$(dirname "$0")/lib.sh"
need_userns
[ -e "$PADDOCK_BUILD/paddock-gateway.so" ] || bail_out "paddock-gateway.so is not built"
command -v openssl >/dev/null || skip_all "openssl is not installed"

before=$(ls -d /tmp/paddock-demo.* 2>/dev/null | sort)
pdk demo
expect_eq "paddock demo (feishu) runs to its end" 0 "$RC" || diag "$ERR"
story=$OUT
expect_match "the sandbox held a placeholder token" '\(inside\) my token: t-[0-9a-f]{10}\.\.\. \(a placeholder\)' "$story"
expect_match "the read worked" '\(inside\) read the table: code 0, 3 records' "$story"
expect_match "the create waited for a human and was made once approved" \
    'waits for a human.*paddock approve [0-9a-f]{16}.*approved [0-9a-f]{16}.*\(inside\) created: code 0, record rec' \
    "$(printf '%s' "$story" | tr '\n' ' ')"
expect_match "the delete was refused" '\(inside\) delete a record: blocked: deleting records is not for agents' "$story"
expect_match "the token on its way to another host was blocked" \
    '\(inside\) send my token to collector.example: blocked: .*placeholder of credential feishu-bot' "$story"
expect_match "the server saw neither a placeholder nor the delete" \
    'a placeholder reached the server: never.*the delete reached the server: never' "$(printf '%s' "$story" | tr '\n' ' ')"
expect_match "a second run used the kept token" 'read again: HTTP 200.*mints so far: 1' \
    "$(printf '%s' "$story" | tr '\n' ' ')"
expect_match "the audit trail has the exfiltration attempt" 'credential.exfiltration +feishu-bot POST collector.example' "$story"
expect_match "it ends with paddock audit verify" 'audit log intact: [0-9]+ rows' "$story"
expect_no_match "it says nothing unexpected" 'unexpected answer|a bug!|Traceback' "$story$ERR"
expect_eq "it leaves no temporary directory behind" "$before" "$(ls -d /tmp/paddock-demo.* 2>/dev/null | sort)"
expect_eq "... and did not touch the caller's state dir" "" "$(ls -A "$STATE" 2>/dev/null | grep -v '^\.' || true)"

pdk demo workspace
expect_eq "paddock demo workspace runs to its end" 0 "$RC" || diag "$ERR"
expect_match "... the commit applied the reviewed change" 'done: the sandboxed command could only change the workspace through review' "$OUT"

pdk demo nosuch
expect_eq "an unknown story: a usage error (2)" 2 "$RC"
expect_match "... naming the stories" "no story called 'nosuch' \(feishu or workspace\)" "$ERR"
PADDOCK_DEMO_DIR=$T/nowhere pdk demo
expect_eq "stories that cannot be found: 1" 1 "$RC"
expect_match "... saying where it looked and what to do" "the story feishu is not in $T/nowhere .*PADDOCK_DEMO_DIR" "$ERR"
pdk demo --help
expect_match "--help lists the stories" 'feishu .*workspace' "$(printf '%s' "$OUT" | tr '\n' ' ')"
