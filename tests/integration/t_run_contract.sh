#!/usr/bin/env bash
# t_run_contract: what `paddock run` promises its caller. Exit status (the command's own,
# 125 paddock failed, 126 cannot execute, 127 not found, 128+N killed by signal N, 137 on
# timeout), one-line errors, no debris after a failure (session dirs, mounts, processes),
# every process killed when the command exits, the environment filter, and limits.
. "$(dirname "$0")/lib.sh"
need_userns

MOUNTS_BEFORE=$(our_mounts)

# The check itself, in a mount namespace of its own (what it mounts there nobody else sees,
# and it goes with it): a mount another suite makes in its own temp root is not this test's
# (the whole table counted it: suites running at once failed each other), one left below
# $T is, and so is one where paddock sets a sandbox up.
if unshare --mount true 2>/dev/null; then NS=(unshare --mount --propagation private)
else NS=(unshare --user --map-root-user --mount --propagation private); fi
OTHER=$(mktemp -d /tmp/paddock-other.XXXXXX)
cleanup_path "$OTHER"
mkdir "$T/leak"
export -f our_mounts
seen=$(T="$T" OTHER="$OTHER" "${NS[@]}" bash -c '
    before=$(our_mounts)
    mount -t tmpfs -o size=1m paddock-test "$OTHER" || exit 1
    [ "$(our_mounts)" = "$before" ] && echo "other: not ours"
    umount "$OTHER"
    mount -t tmpfs -o size=1m paddock-test "$T/leak" || exit 1
    [ "$(our_mounts)" != "$before" ] && echo "leak: seen"
    umount "$T/leak"
    mount -t tmpfs -o size=1m paddock-test /tmp || exit 1
    [ "$(our_mounts)" != "$before" ] && echo "stage: seen"' 2>&1)
if [ $? -eq 0 ]; then
    expect_eq "the mount check: another suite's mount is not this test's, a leaked one is" \
        "other: not ours
leak: seen
stage: seen" "$seen"
else
    skip "the mount check" "cannot mount a tmpfs in a mount namespace: $seen"
fi

# expect_clean WHAT: after WHAT, no session dir, no new mount, no process left behind.
expect_clean() {
    expect_eq "after $1: no session dir left" "" "$(session_dirs)"
    expect_eq "after $1: the mount table is as before" "$MOUNTS_BEFORE" "$(our_mounts)"
    local left
    left=$(leftover_pids)
    expect_eq "after $1: no process left" "" "$left"
    for pid in $left; do
        diag "left: $pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
        kill -KILL "$pid" 2>/dev/null
    done
}

# error_lines: the last run's stderr without paddock's end-of-run report.
error_lines() {
    printf '%s\n' "$ERR" | grep -vE '^paddock: session [^ ]+: ' | grep -v '^$'
}

# expect_one_line_error DESC REGEX: stderr holds exactly one line (besides the report) and
# it matches REGEX.
expect_one_line_error() {
    local lines
    lines=$(error_lines)
    if [ "$(printf '%s\n' "$lines" | grep -c .)" -eq 1 ] && [[ $lines =~ $2 ]]; then
        ok "$1"
    else
        not_ok "$1"
        diag "expected one line matching: $2"
        _diag_last_run
    fi
}

# ---- exit status -------------------------------------------------------------------------
probe -- exit 0
expect_eq "exit 0 is passed through" 0 "$RC"
expect_match "a run without changes reports \"no changes\"" \
    '^paddock: session [^ ]+: no changes$' "$(report_line)"
probe -- exit 3
expect_eq "exit 3 is passed through" 3 "$RC"
probe -- kill-self 9
expect_eq "killed by SIGKILL: 137" 137 "$RC"
probe -- kill-self 15
expect_eq "killed by SIGTERM: 143" 143 "$RC"
expect_clean "exits and signals"

wrun -- pwd
expect_eq "the command starts in the caller's directory (the workspace)" "$(realpath "$WS")" "$OUT"

probe --json -- exit 3
report=$(json_report)
expect_eq "--json: the report is one JSON object with the exit status" 3 \
    "$(json_get "$report" 'j["exit"]')"
expect_eq "--json: no changes" 0 "$(json_get "$report" 'j["changes"]')"
expect_match "--json: the session id is a string" '^[^ ]+$' \
    "$(json_get "$report" 'j["session"] if isinstance(j["session"], str) else None')"

# ---- failures to start -------------------------------------------------------------------
missing="paddock-no-such-command-$RANDOM"
wrun -- "$missing" arg
expect_eq "a command not found: 127" 127 "$RC"
expect_one_line_error "a command not found: one line naming it" "$missing"
expect_clean "a command not found"

wrun -- /nonexistent-dir/cmd
expect_eq "a command path that does not exist: 127" 127 "$RC"
expect_clean "a missing command path"

printf '#!/bin/sh\necho should not run\n' >"$WS/notexec.sh"
chmod 644 "$WS/notexec.sh"
wrun -- "$WS/notexec.sh"
expect_eq "a file without the execute bit: 126" 126 "$RC"
expect_one_line_error "a file without the execute bit: one line naming it" "notexec\\.sh"
expect_no_match "it did not run" "should not run" "$OUT"
expect_clean "a non-executable command"

mkdir "$WS/adir"
wrun -- "$WS/adir"
expect_eq "a directory as the command: 126" 126 "$RC"
expect_clean "a directory as the command"

wrun --no-such-option -- true
expect_eq "an unknown option: 125" 125 "$RC"
expect_one_line_error "an unknown option: one line naming it" "no-such-option"
expect_clean "an unknown option"

prun --workspace "$T/missing-workspace" -- true
expect_eq "a missing workspace: 125" 125 "$RC"
expect_one_line_error "a missing workspace: one line naming it" "missing-workspace"
expect_clean "a missing workspace"

BAD_POLICY=$T/policy-bad.yaml
write_policy "$BAD_POLICY" 'version: 1
filesystem:
  bogus_key: [x]'
wrun --policy "$BAD_POLICY" -- true
expect_eq "an invalid policy: 125" 125 "$RC"
expect_match "an invalid policy: the error has file:line:column" \
    "policy-bad\\.yaml:3:3: .*bogus_key" "$(error_lines)"
expect_clean "an invalid policy"

write_policy "$T/policy-v2.yaml" 'version: 2'
wrun --policy "$T/policy-v2.yaml" -- true
expect_eq "an unsupported policy version: 125" 125 "$RC"
expect_clean "an unsupported policy version"

wrun --policy "$T/no-such-policy.yaml" -- true
expect_eq "a missing policy file: 125" 125 "$RC"
expect_one_line_error "a missing policy file: one line naming it" "no-such-policy\\.yaml"
expect_clean "a missing policy file"

# ---- processes are killed when the command exits ----------------------------------------
probe -- spawn-orphan "$TAG-orphan-a"
expect_eq "spawn-orphan: the command itself exits 0" 0 "$RC"
expect_eq "spawn-orphan: the orphan is gone when paddock returns" "" \
    "$(_scan_pids all "$TAG-orphan-a" "" 0)"
wrun -- sh -c '"$0" spawn-orphan "$1"; "$0" spawn-orphan "$1"; exit 5' "$PROBE" "$TAG-orphan-b"
expect_eq "two orphans under a shell: the shell's status" 5 "$RC"
expect_eq "both orphans are gone when paddock returns" "" "$(_scan_pids all "$TAG-orphan-b" "" 0)"
# A background process that keeps the command's stdout (a pipe here) open: paddock kills
# it when the shell exits, so the reader sees EOF at once. (timeout cat bounds the wait
# should it survive.)
start_ns=$(date +%s%N)
piped=$(cd "$WS" && pdk_run --workspace "$WS" -- sh -c '"$0" sleep-forever "$1" & exit 0' \
    "$PROBE" "$TAG-piped" 2>/dev/null </dev/null | timeout 70 cat
    echo "rc=${PIPESTATUS[0]}")
elapsed_ms=$((($(date +%s%N) - start_ns) / 1000000))
expect_eq "a background process holding stdout: the shell's status 0" "rc=0" \
    "$(printf '%s\n' "$piped" | tail -n 1)"
if [ "$elapsed_ms" -lt 30000 ]; then
    ok "a background process holding stdout: the pipe ends when the command does (${elapsed_ms} ms)"
else
    not_ok "a background process holding stdout: the pipe ends when the command does (${elapsed_ms} ms)"
fi
expect_eq "the background process is gone" "" "$(probe_pids "$TAG-piped")"
expect_clean "orphans"

# ---- timeouts ----------------------------------------------------------------------------
start_ns=$(date +%s%N)
probe --timeout 1 -- sleep-forever "$TAG-timeout-a"
elapsed_ms=$((($(date +%s%N) - start_ns) / 1000000))
expect_eq "--timeout 1 on a command that never ends: 137" 137 "$RC"
if [ "$elapsed_ms" -lt 15000 ]; then
    ok "--timeout 1 returns promptly (${elapsed_ms} ms)"
else
    not_ok "--timeout 1 returns promptly (${elapsed_ms} ms)"
fi
expect_eq "the timed-out command is gone" "" "$(_scan_pids all "$TAG-timeout-a" "" 0)"

write_policy "$T/policy-timeout.yaml" 'version: 1
limits:
  timeout: 1'
probe --policy "$T/policy-timeout.yaml" -- sleep-forever "$TAG-timeout-b"
expect_eq "policy limits.timeout 1: 137" 137 "$RC"
expect_clean "timeouts"

# ---- environment -------------------------------------------------------------------------
MY_API_TOKEN=s3cret AWS_SECRET_ACCESS_KEY=s3cret probe -- env MY_API_TOKEN
expect_eq "MY_API_TOKEN is dropped" 'value=unset' "$OUT"
MY_API_TOKEN=s3cret AWS_SECRET_ACCESS_KEY=s3cret probe -- env AWS_SECRET_ACCESS_KEY
expect_eq "AWS_SECRET_ACCESS_KEY is dropped" 'value=unset' "$OUT"
probe -- env PATH
expect_eq "PATH is kept" "value=$SANDBOX_PATH" "$OUT"
probe -- env HOME
expect_eq "HOME is kept" "value=$TEST_HOME" "$OUT"
probe -- env LANG
expect_eq "LANG is kept" "value=$SANDBOX_LANG" "$OUT"

ENV_POLICY=$T/policy-env.yaml
write_policy "$ENV_POLICY" 'version: 1
env:
  pass: [MY_API_TOKEN]
  set: {CI: "1", PADDOCK_TEST_SET: "a b"}'
MY_API_TOKEN=s3cret probe --policy "$ENV_POLICY" -- env CI
expect_eq "env.set CI=1 is applied" 'value=1' "$OUT"
probe --policy "$ENV_POLICY" -- env PADDOCK_TEST_SET
expect_eq "env.set keeps spaces" 'value=a b' "$OUT"
MY_API_TOKEN=s3cret probe --policy "$ENV_POLICY" -- env MY_API_TOKEN
expect_eq "env.pass lets MY_API_TOKEN through" 'value=s3cret' "$OUT"
MY_API_TOKEN=s3cret AWS_SECRET_ACCESS_KEY=s3cret probe --policy "$ENV_POLICY" \
    -- env AWS_SECRET_ACCESS_KEY
expect_eq "env.pass of one name lets no other secret through" 'value=unset' "$OUT"

# ---- limits ------------------------------------------------------------------------------
write_policy "$T/policy-pids.yaml" 'version: 1
limits:
  pids: 64'
probe --policy "$T/policy-pids.yaml" -- fork-bomb
count=$(printf '%s' "$OUT" | sed -nE 's/^value=([0-9]+),.*/\1/p')
expect_eq "fork-bomb under pids: 64 reports (exit 0)" 0 "$RC"
if [ -n "$count" ] && [ "$count" -lt 200 ]; then
    ok "pids: 64 contains the fork bomb ($OUT)"
else
    not_ok "pids: 64 contains the fork bomb ($OUT)"
    _diag_last_run
fi
expect_match "the fork that failed failed with EAGAIN" ',errno=EAGAIN$' "$OUT"

write_policy "$T/policy-mem.yaml" 'version: 1
limits:
  memory: 64M'
probe --policy "$T/policy-mem.yaml" -- alloc 16
expect_eq "memory: 64M lets 16 MiB through" "0 ok" "$RC $OUT"
probe --policy "$T/policy-mem.yaml" -- alloc 512
if [ "$RC" -ne 0 ] && [ "$RC" -ne 125 ]; then
    ok "memory: 64M stops a 512 MiB allocation (exit $RC)"
else
    not_ok "memory: 64M stops a 512 MiB allocation (exit $RC: expected non-zero, not 125)"
    _diag_last_run
fi
expect_ne "the 512 MiB allocation did not complete" ok "$OUT"
expect_clean "limits"

# Every subcommand paddock lists answers --help (exit 0, its usage) and refuses an unknown
# option with exit 2 (run: 125, its contract's "paddock failed").
subs=$("$PADDOCK" --help | sed -n '/^commands:/,/^$/p' | awk 'NF > 1 && $1 != "commands:" {print $1}')
expect_ne "paddock --help lists the subcommands" "" "$subs"
for sub in $subs; do
    pdk "$sub" --help
    expect_eq "paddock $sub --help: exit 0 and its usage" "0 yes" \
        "$RC $(printf '%s\n' "$OUT" | grep -q "usage: paddock $sub" && echo yes)"
    pdk "$sub" --no-such-option
    want=2
    [ "$sub" = run ] && want=125
    expect_eq "paddock $sub --no-such-option: exit $want, saying so" "$want yes" \
        "$RC $(printf '%s\n' "$ERR" | grep -q -- "--no-such-option" && echo yes)"
done
