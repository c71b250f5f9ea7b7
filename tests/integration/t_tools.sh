#!/usr/bin/env bash
# t_tools: everyday tools work inside the overlay workspace (sh, git, python3, make, gcc)
# and leave the real workspace untouched until commit.
. "$(dirname "$0")/lib.sh"
need_userns

POLICY=$T/tools-policy.yaml
write_policy "$POLICY" 'version: 1
env:
  set:
    GIT_AUTHOR_NAME: "Paddock Test"
    GIT_AUTHOR_EMAIL: "test@paddock.invalid"
    GIT_COMMITTER_NAME: "Paddock Test"
    GIT_COMMITTER_EMAIL: "test@paddock.invalid"
    GIT_CONFIG_NOSYSTEM: "1"'

echo "hello from the real workspace" >"$WS/README"
printf 'all: out.txt\n\nout.txt:\n\techo made > out.txt\n' >"$WS/Makefile"
cat >"$WS/hello.c" <<'EOF'
#include <stdio.h>
int main(void) { printf("hello, sandbox\n"); return 0; }
EOF
BEFORE=$(snapshot "$WS")

# tool DESC EXPECTED-STDOUT CMD...: CMD runs in the sandbox (session "tools", from the
# workspace) and prints exactly EXPECTED-STDOUT, exit 0.
tool() {
    local desc="$1" want="$2"
    shift 2
    wrun --policy "$POLICY" --session tools -- sh -c 'cd "$0" && exec "$@"' "$WS" "$@"
    if [ "$RC" -eq 0 ] && [ "$OUT" = "$want" ]; then
        ok "$desc"
    else
        not_ok "$desc"
        diag "expected stdout: $want (exit 0)"
        _diag_last_run
    fi
}

tool "sh -c: pipes, redirections, reading the workspace" "HELLO FROM THE REAL WORKSPACE" \
    sh -c 'cat README | tr a-z A-Z > upper.txt && cat upper.txt'

if command -v git >/dev/null; then
    tool "git init, add, commit, status, log" "$(printf '0\n1')" sh -c '
        set -e
        git init -q .
        git add README Makefile hello.c upper.txt
        git commit -q -m "first commit"
        git status --porcelain | wc -l | tr -d " "
        git log --oneline | wc -l | tr -d " "'
    tool "git sees the commit in a later run of the session" "first commit" \
        git log -1 --format=%s
else
    skip "git init, add, commit, status, log" "git is not installed"
fi

if [ -x /usr/bin/python3 ]; then
    tool "python3 -c computes and writes a file" "4" \
        python3 -c 'open("py.txt", "w").write("from python\n"); print(2 + 2)'
    tool "python3 reads what it wrote in the previous run" "from python" \
        python3 -c 'print(open("py.txt").read().strip())'
else
    skip "python3 -c" "no /usr/bin/python3"
fi

if command -v make >/dev/null; then
    tool "make builds a target from the Makefile" "made" sh -c 'make -s && cat out.txt'
    tool "make finds the target up to date" "make: 'out.txt' is up to date." make out.txt
else
    skip "make" "make is not installed"
fi

if command -v gcc >/dev/null; then
    tool "gcc compiles hello.c and the result runs" "hello, sandbox" \
        sh -c 'gcc -O0 -o hello hello.c && ./hello'
else
    skip "gcc" "gcc is not installed"
fi

expect_eq "the real workspace is unchanged after all of it" "$BEFORE" "$(snapshot "$WS")"
expect_eq "no .git appeared in the real workspace" "" "$(ls -d "$WS/.git" 2>/dev/null)"
pdk diff tools --json
expect_match "the session holds the tools' output (hello, out.txt, py.txt, upper.txt)" \
    "^\\['hello', 'out.txt', 'py.txt', 'upper.txt'\\]$" \
    "$(json_get "$OUT" 'str(sorted(c["path"] for c in j["changes"] if "/" not in c["path"] and not c["path"].startswith(".")))')"
