#!/usr/bin/env bash
# Tools in places the sandbox does not see (~, /tmp, as root a directory closed to others):
# a command that is missing inside for that reason (exit 127) gets one line naming the
# cause and the fix, a command of which another one runs inside (pyenv's shim under ~ ->
# /usr/bin/python3) is said at the start, and `paddock doctor` lists the PATH entries that
# will not resolve inside. The fix it names works.
. "$(dirname "$0")/lib.sh"
need_userns

# A tool in /tmp, a shim under ~ (as pyenv's), and, for root, one below a 0700 directory.
mkdir -p "$T/tools/bin" "$TEST_HOME/.pyenv/shims"
printf '#!/bin/sh\necho tool ran\n' >"$T/tools/bin/mytool"
printf '#!/bin/sh\necho shim ran\n' >"$TEST_HOME/.pyenv/shims/python3"
chmod 0755 "$T/tools/bin/mytool" "$TEST_HOME/.pyenv/shims/python3"
CLOSED=$(mktemp -d /var/tmp/paddock-closed.XXXXXX) && cleanup_path "$CLOSED"
mkdir -p "$CLOSED/bin"
printf '#!/bin/sh\necho closed ran\n' >"$CLOSED/bin/closedtool"
chmod 0755 "$CLOSED/bin" "$CLOSED/bin/closedtool"
chmod 0700 "$CLOSED"

# hrun PATH ARGS...: paddock run ARGS with that PATH, from $WS; sets RC, OUT, ERR.
hrun() {
    local path="$1"
    shift
    _last_cmd="PATH=$path paddock run $(printf '%q ' "$@")"
    (cd "$WS" && HOME="$TEST_HOME" PATH="$path" LANG="$SANDBOX_LANG" \
        timeout -k 5 60 "$PADDOCK" run "$@") </dev/null >"$T/.out" 2>"$T/.err"
    RC=$?
    OUT=$(cat "$T/.out")
    ERR=$(cat "$T/.err")
}

hrun "$T/tools/bin:$SANDBOX_PATH" -- mytool
expect_eq "a tool found in /tmp on the host is not found inside" 127 "$RC"
expect_match "one line names where it is, why the sandbox does not see it, and the fix" \
    "paddock: mytool is $T/tools/bin/mytool on the host, but the sandbox does not see it \\(/tmp inside is the sandbox's own\\): add $T/tools/bin to the policy's filesystem.read_allow" \
    "$ERR"
expect_eq "it is one line" 1 "$(printf '%s\n' "$ERR" | grep -c 'does not see it')"

hrun "$SANDBOX_PATH" -- "$T/tools/bin/mytool"
expect_eq "a tool given by its path in /tmp is not found inside" 127 "$RC"
expect_match "the line says so for the path too" \
    "paddock: $T/tools/bin/mytool is on the host, but the sandbox does not see it \\(/tmp inside is the sandbox's own\\): add $T/tools/bin to the policy's filesystem.read_allow" \
    "$ERR"

write_policy "$T/allow-tools.yaml" "version: 1
filesystem:
  read_allow: [$T/tools/bin, ~/.pyenv]"
hrun "$T/tools/bin:$SANDBOX_PATH" --policy "$T/allow-tools.yaml" -- mytool
expect_eq "with the fix it names, the tool runs" "0 tool ran" "$RC $OUT"
expect_no_match "and nothing is said" 'does not see it' "$ERR"

hrun "$SANDBOX_PATH" -- nosuchtool-anywhere
expect_eq "a command missing on the host too is not found" 127 "$RC"
expect_no_match "and gets no such line" 'does not see it' "$ERR"

# pyenv: the shim under ~ is not there inside, /usr/bin/python3 would run instead.
if [ -x /usr/bin/python3 ]; then
    hrun "$TEST_HOME/.pyenv/shims:$SANDBOX_PATH" -- python3 -c 'import sys; print(sys.executable)'
    expect_eq "without ~/.pyenv, another python3 runs inside" "0 /usr/bin/python3" "$RC $OUT"
    expect_match "and paddock says so at the start, with the fix" \
        "paddock: warning: python3 is $TEST_HOME/.pyenv/shims/python3 here, but the sandbox does not see it \\(~ \\($TEST_HOME\\) inside is the sandbox's own, empty but for the policy's read_allow and write\\): /usr/bin/python3 runs instead \\(to run the same one, add ~/.pyenv to the policy's filesystem.read_allow\\)" \
        "$ERR"
    hrun "$TEST_HOME/.pyenv/shims:$SANDBOX_PATH" --policy "$T/allow-tools.yaml" -- python3 -V
    expect_eq "with ~/.pyenv bound in, the shim runs" "0 shim ran" "$RC $OUT"
    expect_no_match "and nothing is said" 'does not see it' "$ERR"
else
    skip "a shim replaced by /usr/bin/python3" "no /usr/bin/python3"
fi

# As root the sandbox's root is not the host's: a directory closed to others stays shut.
if is_root; then
    hrun "$CLOSED/bin:$SANDBOX_PATH" -- closedtool
    expect_eq "as root, a tool below a 0700 directory cannot be run inside" 126 "$RC"
    expect_match "the line says the directory is closed, and what helps" \
        "paddock: closedtool is $CLOSED/bin/closedtool on the host, but the sandbox does not see it \\(only its owner may enter $CLOSED \\(mode 0700\\), and the sandbox's root is not the host's\\): install it where other users may enter" \
        "$ERR"
else
    skip "a tool below a directory closed to others" "needs root"
fi

# paddock doctor lists the PATH entries that will not resolve inside, with --json.
doctor_path() {
    (cd "$WS" && HOME="$TEST_HOME" PATH="$1" timeout -k 5 60 "$PADDOCK" doctor --json "${@:2}") \
        2>/dev/null | "$PYTHON" -c '
import json, sys
for e in json.load(sys.stdin)["checks"]["path"]["entries"]:
    print("%s %s %s" % (e["dir"], "resolves" if e["resolves"] else "unseen", e.get("fix", "-")))'
}
entries=$(doctor_path "$TEST_HOME/.pyenv/shims:$T/tools/bin:/usr/bin:$T/no-such-dir")
expect_eq "doctor --json lists each PATH entry, whether it resolves inside, and the fix" \
    "$TEST_HOME/.pyenv/shims unseen add ~/.pyenv to the policy's filesystem.read_allow
$T/tools/bin unseen add $T/tools/bin to the policy's filesystem.read_allow
/usr/bin resolves -
$T/no-such-dir resolves -" "$entries"
entries=$(doctor_path "$TEST_HOME/.pyenv/shims:$T/tools/bin:/usr/bin" --policy "$T/allow-tools.yaml")
expect_eq "doctor --policy judges the PATH for that policy's read_allow" \
    "$TEST_HOME/.pyenv/shims resolves -
$T/tools/bin resolves -
/usr/bin resolves -" "$entries"
(cd "$WS" && HOME="$TEST_HOME" PATH="$T/tools/bin:/usr/bin" timeout -k 5 60 "$PADDOCK" doctor) \
    >"$T/.out" 2>&1
expect_match "doctor says it in words too" \
    "warn  path     1 of 2 PATH entries will not resolve inside: $T/tools/bin" "$(cat "$T/.out")"
