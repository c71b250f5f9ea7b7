#!/usr/bin/env bash
# One output path (src/common/output.h): no library file prints to stdout, stderr or a
# terminal except through the sink, which redacts registered secrets and escapes control
# characters. scripts/check-output-sink reads src/ (outside src/cli) for the stdio
# printers, raw writes to fd 0-2, uses of stdout/stderr and /dev/tty, with an allowlist
# (the sink, the sandbox's child before exec, the seccomp generator). TAP output.
set -u
top=${PADDOCK_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
check="$top/scripts/check-output-sink"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/paddock-sink.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "1..4"
if out=$("$check" "$top/src" 2>&1); then
    echo "ok 1 - no library file prints around the output sink"
else
    echo "not ok 1 - no library file prints around the output sink"
    printf '%s\n' "$out" | sed 's/^/# /'
fi

# The check can fail: a copy of src/ with a file that prints around the sink, one that
# opens the terminal, one that writes to fd 2; the CLI and the allowlisted files may.
cp -r "$top/src" "$tmp/src"
cat > "$tmp/src/engine/planted.c" <<'C'
/* fprintf(stderr, "in a comment: fine") */
static void planted(const char *s)
{
    fprintf(stderr, "paddock: %s\n", s);
    int fd = open("/dev/tty", 0);
    (void)!write(2, s, 1);
    puts("a string with stderr in it is fine");
}
C
out=$("$check" "$tmp/src" 2>&1); rc=$?
n=$(printf '%s\n' "$out" | grep -c '^src/engine/planted.c:')
if [ "$rc" -eq 1 ] && [ "$n" -eq 5 ] &&
    printf '%s\n' "$out" | grep -q '^src/engine/planted.c:4: prints fprintf(' &&
    printf '%s\n' "$out" | grep -q '^src/engine/planted.c:5: opens /dev/tty' &&
    printf '%s\n' "$out" | grep -q '^src/engine/planted.c:6: writes to fd 0-2'; then
    echo "ok 2 - a file printing around the sink is named, line by line"
else
    echo "not ok 2 - a file printing around the sink is named, line by line (rc $rc, $n lines)"
    printf '%s\n' "$out" | sed 's/^/# /'
fi
rm "$tmp/src/engine/planted.c"
printf 'static void f(void) { fprintf(stderr, "x"); }\n' > "$tmp/src/cli/cmd_planted.c"
if "$check" "$tmp/src" >/dev/null 2>&1; then
    echo "ok 3 - the CLI's own output and the allowlist are not flagged"
else
    echo "not ok 3 - the CLI's own output and the allowlist are not flagged"
fi
"$check" --help >/dev/null 2>&1
rc=$?
if [ "$rc" -eq 2 ]; then
    echo "ok 4 - bad usage exits 2"
else
    echo "not ok 4 - bad usage exits 2 (got $rc)"
fi
