#!/usr/bin/env bash
# Faults and bad input around sessions and the sandbox's set-up: a workspace below a
# directory the sandbox's user cannot enter, errors inside the sandbox's init (they reach
# the user with their text, never as "Broken pipe"), read_deny: [/], a workspace path that
# is not UTF-8, sessions left incomplete or empty by killed runs, cgroups left by a kill -9,
# fifos where paddock's files should be, and errors that carry newlines or bytes that are
# not UTF-8 (shown escaped, on one line).
. "$(dirname "$0")/lib.sh"
need_userns

# one_line TEXT: ok when TEXT (stderr) is lines that each start with "paddock: ".
one_line() {
    printf '%s\n' "$1" | grep -v -e '^paddock: ' -e '^$' | head -n 3
}

# ---- a workspace below a directory the sandbox's user cannot enter -----------------------

if is_root; then
    # root's mktemp -d under /var/tmp: mode 0700, owned by root, which the sandbox (mapped
    # to an unprivileged host range) cannot search.
    HIDDEN=$(mktemp -d /var/tmp/paddock-t-hidden.XXXXXX) || bail_out "mktemp -d under /var/tmp"
    cleanup_path "$HIDDEN"
    mkdir -p "$HIDDEN/ws" "$HIDDEN/other"
    mkdir -m 700 "$HIDDEN/state"
    echo "inside" >"$HIDDEN/ws/a.txt"
    echo "secret" >"$HIDDEN/other/b.txt"
    for where in inside elsewhere; do
        state=$HIDDEN/state
        [ $where = elsewhere ] && state=$STATE
        (cd "$HIDDEN/ws" && HOME="$TEST_HOME" PATH="$SANDBOX_PATH" PADDOCK_STATE_DIR="$state" \
            timeout -k 5 60 "$PADDOCK" run --session hid -- sh -c \
            'pwd; cat a.txt; echo new > b.txt; cat ../other/b.txt 2>/dev/null || echo unseen') \
            </dev/null >"$T/.out" 2>"$T/.err"
        RC=$?
        OUT=$(cat "$T/.out")
        ERR=$(cat "$T/.err")
        _last_cmd="paddock run in $HIDDEN/ws (state $where)"
        expect_eq "a workspace below a 0700 directory of root's runs (state dir $where)" \
            "0 $HIDDEN/ws inside unseen" "$RC $(echo $OUT)"
        PADDOCK_STATE_DIR="$state" pdk diff hid --stat
        expect_match "... and its change is in the session" "b.txt" "$OUT"
    done
    expect_eq "... the real workspace is untouched" "no" "$([ -e "$HIDDEN/ws/b.txt" ] && echo yes || echo no)"
else
    skip "a workspace below a 0700 directory of root's runs" "needs root (the sandbox is then mapped to another range)"
fi

# ---- errors inside the sandbox's init reach the user -----------------------------------------

# A bind whose target is a symlink: init refuses it after "go", while the supervisor goes on
# towards "run" (which then met a closed socket: "Broken pipe").
mkdir -p "$TEST_HOME/realdir"
ln -s "$TEST_HOME/realdir" "$TEST_HOME/linkdir"
VT=$(mktemp -d /var/tmp/paddock-t-link.XXXXXX) || bail_out "mktemp -d under /var/tmp"
cleanup_path "$VT"
chmod 755 "$VT"
mkdir "$VT/target"
ln -s "$VT/target" "$VT/link"
write_policy "$T/link.yaml" "version: 1
filesystem:
  write: [$VT/link]"
seen=""
for _ in $(seq 20); do
    wrun --policy "$T/link.yaml" -- true
    seen+="$RC $(printf '%s\n' "$ERR" | grep -v ': no changes$')"$'\n'
done
expect_eq "init's own error reaches the user, 20 of 20 times (never 'Broken pipe')" \
    "20" "$(printf '%s' "$seen" | grep -c "^125 paddock: sandbox setup failed: cannot mount on $VT/link: it is a symlink$")"

for point in after-go before-run; do
    seen=""
    for _ in $(seq 10); do
        PADDOCK_TEST_INIT_FAIL=$point wrun -- true
        seen+="$RC $(printf '%s\n' "$ERR" | grep -v ': no changes$')"$'\n'
    done
    expect_eq "init failing at $point: its message reaches the user, 10 of 10 times" "10" \
        "$(printf '%s' "$seen" | grep -c "^125 paddock: sandbox setup failed: failing at $point, as PADDOCK_TEST_INIT_FAIL asks$")"
done

# ---- read_deny: [/] ---------------------------------------------------------------------------

write_policy "$T/rd.yaml" "version: 1
filesystem:
  read_deny: [/]"
pdk policy lint "$T/rd.yaml"
expect_eq "read_deny: [/] fails lint (exit 1)" 1 "$RC"
expect_match "... naming the file, line and column, and why" \
    "rd.yaml:3:15: filesystem.read_deny: / would hide the whole system" "$OUT$ERR"
wrun --policy "$T/rd.yaml" -- true
expect_eq "... and paddock run refuses it (exit 125)" 125 "$RC"
expect_no_match "... never with 'Broken pipe'" "Broken pipe" "$ERR"
write_policy "$T/rdws.yaml" "version: 1
filesystem:
  read_deny: [$T]"
wrun --policy "$T/rdws.yaml" -- pwd
expect_match "a read_deny that hides the workspace is refused in one line" \
    "^paddock: workspace $WS is hidden by the policy" "$ERR"

# ---- a workspace path that is not UTF-8 -----------------------------------------------------

BAD=$(printf '%s/ws-\xff\xfe-bad' "$T")
mkdir "$BAD"
(cd "$BAD" && HOME="$TEST_HOME" PATH="$SANDBOX_PATH" timeout -k 5 60 "$PADDOCK" run --session nu8 -- \
    sh -c 'echo x > f.txt') </dev/null >/dev/null 2>"$T/.err"
expect_eq "a run in a workspace whose path is not UTF-8 keeps its session" 0 "$?"
pdk sessions --json
expect_eq "... listed, the path given as its bytes" "$(printf '%s' "$BAD" | od -An -tx1 | tr -d ' \n')" \
    "$(json_get "$OUT" '[s["workspace"]["hex"] for s in j if s["id"] == "nu8"][0]')"
pdk sessions
expect_match "... and shown escaped in the listing" 'ws-\\xff\\xfe-bad' "$OUT"
pdk diff nu8 --stat
expect_match "... diffed" "f.txt" "$OUT"
pdk commit nu8
expect_eq "... committed" "0 x" "$RC $(cat "$BAD/f.txt" 2>/dev/null)"
pdk discard nu8
expect_eq "... and discarded" 0 "$RC"

# ---- sessions left incomplete, sessions left empty --------------------------------------------

mkdir -p "$STATE/sessions/broken/upper" "$STATE/sessions/broken/work"
pdk discard broken
expect_eq "a session without its session.json is removed by discard (was refused)" "0 no" \
    "$RC $([ -e "$STATE/sessions/broken" ] && echo yes || echo no)"
mkdir -p "$STATE/sessions/corrupt"
echo "{ not json" >"$STATE/sessions/corrupt/session.json"
pdk discard corrupt
expect_eq "... and so is one whose session.json is corrupt" "0 no" \
    "$RC $([ -e "$STATE/sessions/corrupt" ] && echo yes || echo no)"
expect_match "... saying what it was" "discarded session corrupt \(it was incomplete or damaged\)" "$OUT"

# Unnamed runs killed with kill -9 while their command runs: their sessions (empty) go with
# the next runs, instead of staying forever.
before=$(session_dirs | wc -l)
for i in 1 2 3; do
    start_bg "killed.$i" -- "$PROBE" sleep-forever "$TAG-killed"
    read_bg_line
    [ "$BG_LINE" = ok ] || diag "the killed run $i did not start: $(cat "$BG_ERR")"
    kill -KILL "$BG_PID"
    { wait "$BG_PID"; } 2>/dev/null
    exec {BG_FD}<&-
done
for pid in $(probe_pids "$TAG-killed"); do timeout 10 tail --pid="$pid" -f /dev/null; done
wrun -- true
wrun -- true
expect_eq "the empty sessions of three killed unnamed runs are gone after the next runs" \
    "$before" "$(session_dirs | wc -l)"
pdk sessions --json
expect_eq "... and none is listed" 0 "$(json_get "$OUT" 'len([s for s in j if not s["named"] and s["runs"] == 0])')"

# An unnamed run killed after it changed files keeps its session, for review.
start_bg changed.fifo -- sh -c 'echo change > kept.txt; echo ok; exec sleep 3600'
read_bg_line
kill -KILL "$BG_PID"
{ wait "$BG_PID"; } 2>/dev/null
exec {BG_FD}<&-
wrun -- true
pdk sessions --json
expect_eq "the session of a killed unnamed run that changed files stays" 1 \
    "$(json_get "$OUT" 'len([s for s in j if not s["named"] and s["changes"] == 1])')"

# ---- cgroups of a run killed with kill -9 ------------------------------------------------------

pdk doctor --json
cgmode=$(json_get "$OUT" 'j["checks"]["cgroup"]["mode"]' 2>/dev/null)
if [ "$cgmode" = v1 ] || [ "$cgmode" = v2 ]; then
    write_policy "$T/mem.yaml" "version: 1
limits:
  memory: 256M"
    # cgroup_dir PID: the directory of PID's memory cgroup.
    cgroup_dir() {
        "$PYTHON" - "$1" <<'PY'
import sys
pid = sys.argv[1]
lines = open(f"/proc/{pid}/cgroup").read().splitlines()
want = [l.split(":", 2) for l in lines]
v1 = [p for h, c, p in want if "memory" in c.split(",")]
mounts = [l.split() for l in open("/proc/self/mountinfo")]
def mount_of(fstype, opt):
    for m in mounts:
        sep = m.index("-")
        if m[sep + 1] == fstype and (opt is None or opt in m[sep + 3].split(",")):
            return m[4]
if v1:
    print(mount_of("cgroup", "memory") + v1[0])
else:
    print(mount_of("cgroup2", None) + [p for h, c, p in want if h == "0"][0])
PY
    }
    left=""
    for i in 1 2 3; do
        start_bg "cg.$i" --policy "$T/mem.yaml" -- "$PROBE" sleep-forever "$TAG-cg"
        read_bg_line
        probe=$(probe_pids "$TAG-cg" | head -n 1)
        dir=$(cgroup_dir "$probe")
        kill -KILL "$BG_PID"
        { wait "$BG_PID"; } 2>/dev/null
        exec {BG_FD}<&-
        timeout 10 tail --pid="$probe" -f /dev/null
        left+="$dir "
    done
    wrun --policy "$T/mem.yaml" -- true
    expect_eq "a run with a memory limit after three kill -9'ed ones exits 0" 0 "$RC"
    still=""
    for dir in $left; do [ -d "$dir" ] && still+="$dir "; done
    expect_eq "... and the cgroups the killed runs left are gone (12 of 15 stayed)" "" "$still"
else
    skip "the cgroups of kill -9'ed runs are removed" "no usable cgroup here ($cgmode)"
fi

# ---- fifos where paddock's files should be ----------------------------------------------------

# Each paddock below must end (timeout 10 s), with a one-line error naming the file.
fifo_case() {
    local desc="$1" path="$2" want="$3"
    shift 3
    rm -rf "$path"
    mkfifo "$path"
    _last_cmd="paddock $*"
    HOME="$TEST_HOME" PATH="$SANDBOX_PATH" timeout -k 2 10 "$PADDOCK" "$@" </dev/null \
        >"$T/.out" 2>"$T/.err"
    RC=$?
    ERR=$(cat "$T/.err")
    if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
        not_ok "$desc: paddock ends (it waited on the fifo for 10 s)"
    else
        expect_match "$desc: paddock ends with an error naming it" "$want" "$ERR"
    fi
    rm -f "$path"
}
set_secret keep "a-value"
mv "$STATE/vault" "$T/vault.saved"
fifo_case "a fifo where the vault should be" "$STATE/vault" "vault $STATE/vault is not a regular file" secret list
mv "$T/vault.saved" "$STATE/vault"
mv "$STATE/vault.key" "$T/key.saved"
fifo_case "a fifo where the vault's key should be" "$STATE/vault.key" "$STATE/vault.key is not a regular file" secret list
mv "$T/key.saved" "$STATE/vault.key"
wrun --session fifo -- true
fifo_case "a fifo where session.json should be" "$STATE/sessions/fifo/session.json" \
    "session fifo: .*session.json is not a regular file" sessions
fifo_case "... and a run of that session" "$STATE/sessions/fifo/session.json" \
    "session fifo: .*session.json is not a regular file" run --workspace "$WS" --session fifo -- true
mkfifo "$STATE/sessions/fifo/session.json"
pdk discard fifo
expect_eq "... which discard removes" 0 "$RC"
pdk audit verify
fifo_case "a fifo where a spool file should be" "$STATE/audit-spool/0000-fifo.jsonl" \
    "the audit spool 0000-fifo.jsonl is not a regular file" audit verify

# ---- errors with newlines and bytes that are not UTF-8 ----------------------------------------

prun --workspace "$T/no"$'\n'"such" -- true
expect_eq "an error about a path with a newline is one line" "" "$(one_line "$ERR")"
expect_match "... the newline shown as \\n" 'workspace .*/no\\nsuch does not exist' "$ERR"
wrun -- $'no-such-\x1b[2J\xffcommand'
expect_eq "a command name with an escape sequence and a bad byte: one line" "" "$(one_line "$ERR")"
expect_match "... shown escaped" "cannot run 'no-such-\\\\x1b\[2J\\\\xffcommand'" "$ERR"
pdk diff $'ab\ncd'
expect_eq "a session name with a newline: one line" "" "$(one_line "$ERR")"
expect_no_match "... with no byte that is not UTF-8 or a control" $'[\x01-\x08\x0b-\x1f\x7f]' "$ERR"

# ---- directory syncs on durable writes --------------------------------------------------------

# ssync ARGS...: paddock ARGS with its second fsync(2) failing with EIO (strace's fault
# injection): the sync of the directory a durable write renamed into. RC, OUT, ERR.
ssync() {
    _last_cmd="(2nd fsync fails) paddock $*"
    # (LeakSanitizer cannot work under ptrace: no leak check in a sanitizer build)
    (cd "$WS" && ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 HOME="$TEST_HOME" \
        PATH="$SANDBOX_PATH" timeout -k 5 60 strace -qq -o /dev/null \
        -e trace=fsync -e inject=fsync:error=EIO:when=2 "$PADDOCK" "$@") </dev/null \
        >"$T/.out" 2>"$T/.err"
    RC=$?
    OUT=$(cat "$T/.out")
    ERR=$(cat "$T/.err")
}
if command -v strace >/dev/null 2>&1 && strace -qq -o /dev/null -e inject=fsync:error=EIO true 2>/dev/null; then
    set_secret first "first-value"
    printf 'second-value\n' >"$T/second"
    ssync secret set second --from-file "$T/second"
    expect_eq "secret set whose directory sync fails says so (exit 1; was 'stored')" 1 "$RC"
    expect_match "... naming the vault and the error" "the vault $STATE/vault was written but may not be on the disk yet: Input/output error" "$ERR"
    ssync run --workspace "$WS" --session dsync -- sh -c 'echo x > dsync.txt'
    expect_match "a run whose session record's directory sync fails warns, keeping the session" \
        "warning: session dsync is kept with what the command wrote, but its record could not be updated \(.*Input/output error\): check the disk" "$ERR"
    ssync commit dsync
    expect_eq "a commit whose workspace directory sync fails says so (exit 1; was 0)" 1 "$RC"
    expect_match "... naming the directory" 'the directory "." of the workspace could not be synced to the disk: Input/output error' "$ERR"
    rm -f "$WS/dsync.txt"
else
    skip "directory sync failures are reported" "strace with fault injection is not installed"
fi
