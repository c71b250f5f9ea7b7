# lib.sh: what every integration test (tests/integration/t_*.sh) shares. Source it first:
#
#   . "$(dirname "$0")/lib.sh"
#
# Output is TAP: "ok N - DESC", "not ok N - DESC", diagnostics as "# ..." lines, and the
# plan "1..N" at the end. Environment (tests/run exports the first two):
#   PADDOCK_BUILD     build dir (default: $PADDOCK_TOP/build)
#   PADDOCK_TOP       source tree (default: two levels above this file)
#   PADDOCK_MUST_WORK 1: a skip is a failure (CI), but for skip_optional
# Every test gets its own temp root $T (under /tmp) holding the state dir $STATE (exported as
# PADDOCK_STATE_DIR), a workspace $WS and a home $TEST_HOME; the EXIT trap kills the
# processes the test started (by pid) and removes $T and whatever else it registered.
#
# Conventions: no sleeps (wait on events: a line on a fifo, a pid's exit); every paddock
# invocation is bounded by timeout; network traffic only to 127.0.0.1 / ::1 on listeners
# the test opened itself.

set -u

PADDOCK_TOP=${PADDOCK_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PADDOCK_BUILD=${PADDOCK_BUILD:-$PADDOCK_TOP/build}
PADDOCK=$PADDOCK_BUILD/paddock
PROBE=$PADDOCK_BUILD/tests/probe/paddock-probe
export PADDOCK_TOP PADDOCK_BUILD

# A python3 that does not depend on $HOME (a pyenv shim would), for the host-side helpers.
if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=$(command -v python3 || echo python3); fi

# What the sandboxed commands get, so that results do not depend on the caller's shell.
SANDBOX_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
SANDBOX_LANG=C.UTF-8

# ---- TAP ---------------------------------------------------------------------------------

_tap_count=0
_tap_failed=0

ok() {
    _tap_count=$((_tap_count + 1))
    echo "ok $_tap_count - $*"
}

not_ok() {
    _tap_count=$((_tap_count + 1))
    _tap_failed=$((_tap_failed + 1))
    echo "not ok $_tap_count - $*"
}

# diag LINE...: each argument (which may hold newlines) as "# " lines.
diag() {
    local arg
    for arg in "$@"; do
        printf '%s\n' "$arg" | sed 's/^/#   /'
    done
}

# check DESC CMD...: ok when CMD exits 0; shows its output otherwise.
check() {
    local desc="$1" out rc
    shift
    out=$("$@" 2>&1)
    rc=$?
    if [ $rc -eq 0 ]; then
        ok "$desc"
    else
        not_ok "$desc"
        diag "command: $*" "exit: $rc" "output: $out"
    fi
    return $rc
}

# check_fails DESC CMD...: ok when CMD exits non-zero.
check_fails() {
    local desc="$1" out rc
    shift
    out=$("$@" 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
        ok "$desc"
    else
        not_ok "$desc"
        diag "command: $*" "exited 0, expected a failure" "output: $out"
    fi
}

# expect_eq DESC EXPECTED ACTUAL
expect_eq() {
    if [ "$2" = "$3" ]; then
        ok "$1"
    else
        not_ok "$1"
        diag "expected: $2" "actual:   $3"
        _diag_last_run
        return 1
    fi
}

# expect_ne DESC UNEXPECTED ACTUAL
expect_ne() {
    if [ "$2" != "$3" ]; then
        ok "$1"
    else
        not_ok "$1"
        diag "expected anything but: $2"
        _diag_last_run
        return 1
    fi
}

# expect_match DESC REGEX ACTUAL (bash ERE, unanchored unless REGEX anchors itself)
expect_match() {
    if [[ $3 =~ $2 ]]; then
        ok "$1"
    else
        not_ok "$1"
        diag "expected to match: $2" "actual: $3"
        _diag_last_run
        return 1
    fi
}

# expect_no_match DESC REGEX ACTUAL
expect_no_match() {
    if [[ $3 =~ $2 ]]; then
        not_ok "$1"
        diag "expected not to match: $2" "actual: $3"
        _diag_last_run
        return 1
    else
        ok "$1"
    fi
}

# skip DESC REASON: a test that cannot run here (a failure under PADDOCK_MUST_WORK=1): a
# missing kernel feature, not being root, a tool scripts/bootstrap installs (curl, openssl,
# git, strace, setpriv, bwrap...), a part of the build.
skip() {
    if [ "${PADDOCK_MUST_WORK:-0}" = 1 ]; then
        not_ok "$1 (PADDOCK_MUST_WORK=1 but: $2)"
    else
        _tap_count=$((_tap_count + 1))
        echo "ok $_tap_count - $1 # SKIP $2"
    fi
}

# skip_all REASON: the whole file cannot run here; reports one skip and exits.
skip_all() {
    skip "$(basename "$0" .sh)" "$1"
    exit 0
}

# skip_optional DESC REASON: a test of an optional client that is not installed (node, npm
# and the packages of tests/node: the agents' CLIs, the official SDKs, axios): a skip even
# under PADDOCK_MUST_WORK=1, since what it tests is the client's behaviour through paddock,
# which paddock's own tests cover without it.
skip_optional() {
    _tap_count=$((_tap_count + 1))
    echo "ok $_tap_count - $1 # SKIP $2"
}

# skip_all_optional REASON: skip_all for a file that needs an optional client.
skip_all_optional() {
    skip_optional "$(basename "$0" .sh)" "$1"
    exit 0
}

# bail_out REASON: something the whole file needs is broken; one failure, then exit.
bail_out() {
    not_ok "$1"
    exit 1
}

# The last paddock run, shown under a failing expectation.
RC=""
OUT=""
ERR=""
_last_cmd=""
_diag_last_run() {
    [ -n "$_last_cmd" ] || return 0
    diag "last run: $_last_cmd" "exit: $RC" "stdout: $(printf '%s' "$OUT" | head -c 2000)" \
        "stderr: $(printf '%s' "$ERR" | head -c 2000)"
}

# ---- temp root and cleanup ---------------------------------------------------------------

T=$(mktemp -d /tmp/paddock-t.XXXXXX) || {
    echo "not ok 1 - mktemp -d under /tmp"
    exit 1
}
chmod 755 "$T"
# A word unique to this test run: put it on the command line of every process a test leaves
# running (e.g. paddock-probe sleep-forever "$TAG"), so that the test can find them.
TAG="pdk-tag-$(basename "$T")"
STATE=$T/state
WS=$T/ws
TEST_HOME=$T/home
mkdir -m 700 "$STATE"
mkdir -m 755 "$WS" "$TEST_HOME"
export PADDOCK_STATE_DIR="$STATE"

_started_pids=()
_cleanup_paths=()

# track_pid PID: kill PID (and wait for it) on exit.
track_pid() {
    _started_pids+=("$1")
}

# cleanup_path PATH: remove PATH (recursively) on exit.
cleanup_path() {
    _cleanup_paths+=("$1")
}

# stop_pid PID [SIGNAL]: signal PID (default TERM), wait up to 10 s for its exit, then KILL.
# Returns the exit status when PID is our child.
stop_pid() {
    local pid="$1" sig="${2:-TERM}"
    kill -0 "$pid" 2>/dev/null || {
        wait "$pid" 2>/dev/null
        return
    }
    kill -s "$sig" "$pid" 2>/dev/null
    # tail --pid waits for the exit (an event), bounded by timeout.
    timeout 10 tail --pid="$pid" -f /dev/null 2>/dev/null
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
}

_cleanup() {
    local rc=$? pid
    set +e
    for pid in "${_started_pids[@]}"; do
        stop_pid "$pid" TERM
    done
    # Processes a test left behind through paddock carry $TAG on their command line.
    for pid in $(_scan_pids all "$TAG" "" 0); do
        kill -KILL "$pid" 2>/dev/null
    done
    for path in "${_cleanup_paths[@]}"; do
        rm -rf "$path"
    done
    rm -rf "$T"
    echo "1..$_tap_count"
    [ $_tap_failed -eq 0 ] || exit 1
    exit $rc
}
trap _cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The probe runs inside sandboxes, where the host's /tmp, /run and $HOME are not visible: a
# build tree there (a clone under /tmp, say) gets its probe copied to a private directory
# under /var/tmp, which the sandbox sees read-only. Removed by the EXIT trap.
case "$PROBE" in
/tmp/* | /run/* | /var/run/* | "$HOME"/*)
    _probe_dir=$(mktemp -d /var/tmp/paddock-probe.XXXXXX) || { echo "Bail out! mktemp"; exit 1; }
    _cleanup_paths+=("$_probe_dir")
    cp "$PROBE" "$_probe_dir/paddock-probe" && chmod 0755 "$_probe_dir" "$_probe_dir/paddock-probe" ||
        { echo "Bail out! cannot copy the probe to $_probe_dir"; exit 1; }
    PROBE=$_probe_dir/paddock-probe
    ;;
esac

# ---- processes ---------------------------------------------------------------------------

# _scan_pids MODE WORD ENVWORD ANCESTOR [PROBE_ONLY]: pids of the processes with an argument
# starting with WORD on their command line or ENVWORD ("NAME=value", may be empty) in their
# environment. MODE "under": only descendants of ANCESTOR; "not-under": only the others;
# "all": any. PROBE_ONLY=1: only paddock-probe processes (argv[0]), not the paddock or shell
# that has the word among its arguments too. The words travel in the environment, so that
# the scanner does not find itself.
_scan_pids() {
    _SCAN_MODE="$1" _SCAN_WORD="$2" _SCAN_ENV="$3" _SCAN_ANCESTOR="$4" _SCAN_PROBE="${5:-0}" \
        "$PYTHON" - <<'EOF'
import os
mode, word = os.environ["_SCAN_MODE"], os.environ["_SCAN_WORD"].encode()
env, ancestor = os.environ["_SCAN_ENV"].encode(), int(os.environ["_SCAN_ANCESTOR"] or 0)
probe_only = os.environ["_SCAN_PROBE"] == "1"
me = os.getpid()
def ppid(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0
def under(pid):
    seen = 0
    while pid > 1 and seen < 4096:
        if pid == ancestor:
            return True
        pid, seen = ppid(pid), seen + 1
    return False
for name in os.listdir("/proc"):
    if not name.isdigit() or int(name) in (me, os.getppid()):
        continue
    pid = int(name)
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
        hit = any(a.startswith(word) for a in args)
        if probe_only and not args[0].endswith(b"paddock-probe"):
            continue
        if not hit and env:
            with open(f"/proc/{pid}/environ", "rb") as f:
                hit = env in f.read().split(b"\0")
    except OSError:
        continue
    if not hit:
        continue
    if mode == "all" or (mode == "under") == under(pid):
        print(pid)
EOF
}

# tagged_pids [WORD]: processes with an argument starting with WORD (default $TAG) that are
# not this shell's descendants: what a paddock run left behind.
tagged_pids() {
    _scan_pids not-under "${1:-$TAG}" "" "$$"
}

# probe_pids_under PID WORD: paddock-probe processes with WORD on their command line below
# PID (e.g. the probe of a paddock run started in the background).
probe_pids_under() {
    _scan_pids under "$2" "" "$1" 1
}

# probe_pids WORD: paddock-probe processes with WORD on their command line, anywhere.
probe_pids() {
    _scan_pids all "$1" "" 0 1
}

# leftover_pids: processes of this test's paddock runs still alive and not ours: those
# carrying $TAG on their command line or PADDOCK_STATE_DIR=$STATE in their environment.
leftover_pids() {
    _scan_pids not-under "$TAG" "PADDOCK_STATE_DIR=$STATE" "$$"
}

# ---- environment checks ------------------------------------------------------------------

is_root() {
    [ "$(id -u)" -eq 0 ]
}

# need_root: skip the file unless running as root.
need_root() {
    is_root || skip_all "needs root"
}

# need_userns: skip the file when unprivileged user namespaces are unavailable.
need_userns() {
    unshare -Ur true >/dev/null 2>&1 || skip_all "user namespaces unavailable (unshare -Ur true failed)"
}

# landlock_abi: the kernel's Landlock ABI version (0 when there is none).
landlock_abi() {
    "$PYTHON" - <<'EOF'
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
# landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION); 444 on every arch
v = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
print(v if v > 0 else 0)
EOF
}

# need_landlock [MIN_ABI]: skip the file without Landlock (of at least MIN_ABI, default 1).
need_landlock() {
    local abi
    abi=$(landlock_abi)
    [ "${abi:-0}" -ge "${1:-1}" ] || skip_all "Landlock ABI ${abi:-0} < ${1:-1}"
}

# need_built: fail the file at once when the binaries under test are missing.
need_built() {
    [ -x "$PADDOCK" ] || bail_out "paddock is built ($PADDOCK)"
    [ -x "$PROBE" ] || bail_out "paddock-probe is built ($PROBE)"
}
need_built

# ---- running paddock ---------------------------------------------------------------------

# pdk_run ARGS...: paddock run ARGS, bounded, with the test's home, PATH and LANG. stdio is
# the caller's. Set TEST_HOME to run with another home.
pdk_run() {
    HOME="$TEST_HOME" PATH="$SANDBOX_PATH" LANG="$SANDBOX_LANG" \
        timeout -k 5 60 "$PADDOCK" run "$@"
}

# A paddock that hangs costs a minute a call: after 3 hangs the file gives up.
_hangs=0
_note_hang() {
    local started="$1"
    [ $((SECONDS - started)) -ge 60 ] || return 0
    _hangs=$((_hangs + 1))
    diag "paddock did not finish within 60 s: $_last_cmd"
    [ $_hangs -lt 3 ] || bail_out "paddock hung $_hangs times; giving up on this file"
}

# prun ARGS...: pdk_run ARGS with stdin from /dev/null and the output captured: sets RC,
# OUT (stdout: the command's) and ERR (stderr: the command's and paddock's).
prun() {
    local started=$SECONDS
    _last_cmd="paddock run $(printf '%q ' "$@")"
    pdk_run "$@" </dev/null >"$T/.out" 2>"$T/.err"
    RC=$?
    OUT=$(cat "$T/.out")
    ERR=$(cat "$T/.err")
    _note_hang "$started"
    return 0
}

# pdk ARGS...: any paddock command (sessions, diff, commit, ...), bounded and captured.
pdk() {
    local started=$SECONDS
    _last_cmd="paddock $(printf '%q ' "$@")"
    HOME="$TEST_HOME" timeout -k 5 60 "$PADDOCK" "$@" </dev/null >"$T/.out" 2>"$T/.err"
    RC=$?
    OUT=$(cat "$T/.out")
    ERR=$(cat "$T/.err")
    _note_hang "$started"
    return 0
}

# as_user UID DIR HOME STATE ARGS...: paddock ARGS as uid and gid UID (setpriv, no other
# groups), from DIR, with that home and state dir; bounded and captured as pdk does.
as_user() {
    local uid="$1" dir="$2" home="$3" state="$4"
    shift 4
    _last_cmd="(uid $uid) paddock $(printf '%q ' "$@")"
    (cd "$dir" && timeout -k 5 60 setpriv --reuid="$uid" --regid="$uid" --clear-groups \
        env HOME="$home" PADDOCK_STATE_DIR="$state" PATH="$SANDBOX_PATH" \
        "$PADDOCK" "$@") </dev/null >"$T/.out" 2>"$T/.err"
    RC=$?
    OUT=$(cat "$T/.out")
    ERR=$(cat "$T/.err")
}

# with_pty CMD...: run CMD as a session leader with a new pty as its controlling terminal
# (its stdin, stdout and stderr); prints what it wrote (CRLF as LF) and exits with its
# status. With PTY_PROMPT and PTY_ANSWER set, ANSWER is typed once PROMPT has shown.
with_pty() {
    timeout -k 5 90 "$PYTHON" -c '
import os, pty, sys
prompt = os.environ.get("PTY_PROMPT", "").encode()
answer = os.environ.get("PTY_ANSWER", "").encode()
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    out += data
    if prompt and prompt in out:
        os.write(fd, answer)
        prompt = b""
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace").replace("\r\n", "\n"))
sys.exit(os.waitstatus_to_exitcode(status))
' "$@"
}

# wrun ARGS...: prun --workspace "$WS" ARGS from the directory $WS.
wrun() {
    cd "$WS" || return 1
    prun --workspace "$WS" "$@"
    cd - >/dev/null || return 1
}

# probe [RUN-OPTIONS...] -- CHECK [ARGS...]: the probe in a sandbox on $WS (cwd $WS).
# Sets RC, OUT, ERR as prun does.
probe() {
    local opts=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        opts+=("$1")
        shift
    done
    [ $# -gt 0 ] && shift
    wrun "${opts[@]}" -- "$PROBE" "$@"
}

# expect_probe DESC REGEX [RUN-OPTIONS...] -- CHECK [ARGS...]: the probe's line must match
# REGEX as a whole (e.g. "errno=(EROFS|EACCES)") and paddock must exit 0.
expect_probe() {
    local desc="$1" want="$2"
    shift 2
    probe "$@"
    if [ "$RC" -eq 0 ] && [[ $OUT =~ ^($want)$ ]]; then
        ok "$desc"
    else
        not_ok "$desc"
        diag "expected: $want (exit 0)"
        _diag_last_run
    fi
}

# report_line: paddock's end-of-run line from the last ERR ("paddock: session ID: ...").
report_line() {
    printf '%s\n' "$ERR" | grep -E '^paddock: session [^ ]+: ' | tail -n 1
}

# report_session: the session id from the last run's report line.
report_session() {
    report_line | sed -nE 's/^paddock: session ([^ ]+): .*/\1/p'
}

# json_report: the last line of ERR that is a JSON object (the report of run --json).
json_report() {
    printf '%s\n' "$ERR" | grep -E '^\{' | tail -n 1
}

# json_get JSON EXPR: evaluate the Python expression EXPR on the parsed JSON (as j); prints
# the result (str as is, other values as JSON). Exits 1 when JSON is invalid or EXPR fails.
json_get() {
    "$PYTHON" -c '
import json, sys
try:
    j = json.loads(sys.argv[1])
    v = eval(sys.argv[2], {"j": j})
except Exception as e:
    print("# json_get: %s" % e, file=sys.stderr)
    sys.exit(1)
print(v if isinstance(v, str) else json.dumps(v, sort_keys=True))
' "$1" "$2"
}

# wait_approval METHOD: the id of the pending approval for a request of METHOD in ID (10 s at
# most); returns 1, with ID empty, when none turns up.
wait_approval() {
    ID=""
    for _ in $(seq 100); do
        pdk approvals --json
        ID=$(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
for l in sys.stdin:
    if l.strip():
        j = json.loads(l)
        if j["state"] == "pending" and (j.get("request") or {}).get("method") == sys.argv[1]:
            print(j["id"]); break' "$1" 2>/dev/null)
        [ -n "$ID" ] && return 0
        sleep 0.1
    done
    return 1
}

# session_dirs: the names under $STATE/sessions (one a line; nothing when there are none).
session_dirs() {
    # Sessions an unnamed run retired (".removing.*", out of sight) are removed by the next
    # run while its sandbox starts; t_session_layer checks that they do not pile up. Spare
    # session directories (".spare.N", made ahead for the next run) are no sessions either,
    # nor a session being made (".claim.PID.N") or the marker of an unnamed run (".running.ID").
    ls -A "$STATE/sessions" 2>/dev/null |
        grep -v -e '^\.removing\.' -e '^\.spare\.[0-9]*$' -e '^\.claim\.' -e '^\.running\.'
}

# start_bg FIFO_NAME ARGS...: paddock run ARGS in the background with stdout on a fifo that
# this shell reads (so the test can wait for the command's first line). Sets BG_PID (the
# paddock process itself), BG_FD (read end) and BG_ERR (file with paddock's stderr).
start_bg() {
    local fifo="$T/$1"
    shift
    mkfifo "$fifo" || return 1
    BG_ERR="$T/$(basename "$fifo").err"
    _last_cmd="paddock run $(printf '%q ' "$@")(background)"
    cd "$WS" || return 1
    HOME="$TEST_HOME" PATH="$SANDBOX_PATH" LANG="$SANDBOX_LANG" \
        "$PADDOCK" run "$@" </dev/null >"$fifo" 2>"$BG_ERR" &
    BG_PID=$!
    cd - >/dev/null || return 1
    track_pid "$BG_PID"
    exec {BG_FD}<"$fifo"
    rm -f "$fifo"
}

# read_bg_line: the next line of the background run's stdout (30 s at most) into BG_LINE.
read_bg_line() {
    BG_LINE=""
    IFS= read -r -t 30 -u "$BG_FD" BG_LINE
}

# ---- listeners on the host's loopback ----------------------------------------------------

# _start_listener KIND ADDRESS: a python3 listener that accepts and closes connections; it
# prints a line when ready (the TCP port) on a fifo, which we read. Sets _LISTENER_LINE and
# LISTEN_PID.
_start_listener() {
    local fifo="$T/.listener.$RANDOM$RANDOM"
    mkfifo "$fifo" || return 1
    "$PYTHON" -c '
import socket, sys
kind, address = sys.argv[1], sys.argv[2]
if kind == "tcp":
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    ready = str(s.getsockname()[1])
elif kind == "unix":
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(address)
    ready = "ready"
else:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("\0" + address)
    ready = "ready"
s.listen(64)
print(ready, flush=True)
sys.stdout.close()
while True:
    c, _ = s.accept()
    c.close()
' "$1" "$2" >"$fifo" &
    LISTEN_PID=$!
    track_pid "$LISTEN_PID"
    _LISTENER_LINE=""
    IFS= read -r -t 30 _LISTENER_LINE <"$fifo"
    rm -f "$fifo"
    [ -n "$_LISTENER_LINE" ]
}

# start_tcp_listener: listener on 127.0.0.1:<ephemeral>; exports LISTEN_PORT and LISTEN_PID.
start_tcp_listener() {
    _start_listener tcp - || return 1
    LISTEN_PORT=$_LISTENER_LINE
    export LISTEN_PORT LISTEN_PID
}

# start_unix_listener PATH: listener on the unix socket PATH (removed on exit).
start_unix_listener() {
    cleanup_path "$1"
    _start_listener unix "$1" || return 1
    export LISTEN_PID
}

# start_abstract_listener NAME: listener on the abstract unix socket "\0NAME".
start_abstract_listener() {
    _start_listener abstract "$1" || return 1
    export LISTEN_PID
}

# start_port_server VAR CMD [ARGS...]: a server of the test (CMD prints the port it
# listens on as its first line, then serves); the port in VAR, its pid in PORT_SERVER_PID
# (tracked: killed on exit).
start_port_server() {
    local var=$1 fifo="$T/.port-server.$RANDOM" port=""
    shift
    mkfifo "$fifo"
    "$@" >"$fifo" &
    PORT_SERVER_PID=$!
    track_pid "$PORT_SERVER_PID"
    IFS= read -r -t 30 port <"$fifo"
    rm -f "$fifo"
    [ -n "$port" ] || bail_out "a server of the test did not start: $1 ${2:0:80}"
    printf -v "$var" '%s' "$port"
}

# ---- workspace helpers -------------------------------------------------------------------

# The snapshot of a directory tree: type, mode, link target and content hash of every entry,
# dot entries at the top (protected files and their placeholders) left out. Runs the same
# inside a sandbox (sh -c "$SNAPSHOT_SH" sh DIR) and outside (snapshot DIR).
SNAPSHOT_SH='cd "$1" || exit 1
find . -mindepth 1 -path "./.*" -prune -o -printf "%P %y %m %l\n" | LC_ALL=C sort
find . -mindepth 1 -path "./.*" -prune -o -type f -printf "%P\n" | LC_ALL=C sort |
    while IFS= read -r f; do printf "%s %s\n" "$(sha256sum <"$f" | cut -c1-64)" "$f"; done'

snapshot() {
    sh -c "$SNAPSHOT_SH" sh "$1"
}

# write_policy FILE TEXT: write a policy file (TEXT is printf'd as is: use real newlines).
write_policy() {
    printf '%s\n' "$2" >"$1"
}

# our_mounts: the mounts of this shell's mount table that are this test's to watch (paddock
# must leave them as it found them), one "MOUNT-POINT ROOT FSTYPE SOURCE" a line, sorted:
# those on or below the temp root $T (its state dir, workspace, home) or whose root is
# there (a bind of them elsewhere), and those where paddock sets a sandbox up (/tmp and its
# stage below it: /tmp/root, /tmp/setup, /tmp/fresh, which a setup outside its own mount
# namespace would leave on the host). Other suites running at once (tests/run -j) mount and
# unmount in their own temp roots: the whole table would change under this test with them.
our_mounts() {
    awk -v t="$T" '
        function ours(p) {
            return p == t || index(p, t "/") == 1 || p == "/tmp" || p ~ "^/tmp/(root|setup|fresh)(/|$)"
        }
        {
            for (sep = 7; sep <= NF && $sep != "-"; sep++) {}
            if (ours($5) || ours($4))
                print $5, $4, $(sep + 1), $(sep + 2)
        }' /proc/self/mountinfo | LC_ALL=C sort
}

# set_secret NAME VALUE: store VALUE in the test's vault (on stdin, as a user would).
set_secret() {
    printf '%s\n' "$2" | HOME="$TEST_HOME" "$PADDOCK" secret set "$1" >/dev/null
}

# ---- the fake Feishu Open API (tests/fixtures/fake_feishu.py) ------------------------------

# test_certs BASE NAME...: a test CA ($T/ca.pem, $T/ca.key) and a certificate signed by it
# for the names (DNS names, or IP:ADDRESS) in $T/BASE.pem, $T/BASE.key: an upstream's TLS
# identity that the sandbox trusts through upstream_ca.
test_certs() {
    local base=$1 san="" n
    shift
    for n in "$@"; do
        case "$n" in IP:*) san+="${san:+,}$n" ;; *) san+="${san:+,}DNS:$n" ;; esac
    done
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=test CA" -keyout "$T/ca.key" -out "$T/ca.pem" >/dev/null 2>&1 &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
            -keyout "$T/$base.key" -out "$T/$base.csr" >/dev/null 2>&1 &&
        printf 'subjectAltName=%s\n' "$san" >"$T/san.ext" &&
        openssl x509 -req -in "$T/$base.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
            -days 2 -extfile "$T/san.ext" -out "$T/$base.pem" >/dev/null 2>&1 ||
        bail_out "openssl could not make the test certificates"
}

# feishu_certs [NAME...]: test_certs for the fake Feishu's TLS identity, $T/fs.pem and
# $T/fs.key, for the names (default: open.feishu.cn).
feishu_certs() {
    test_certs fs "${@:-open.feishu.cn}"
}

# start_fake_feishu SECRET [ARGS...]: the fake for app cli_paddocktest with app secret SECRET,
# over TLS ($T/fs.pem), logging to $T/fs.log; its port in FS_PORT, its pid in FS_PID.
start_fake_feishu() {
    local secret=$1 fifo="$T/.fs.$RANDOM"
    shift
    mkfifo "$fifo"
    "$PYTHON" "$PADDOCK_TOP/tests/fixtures/fake_feishu.py" --app-id cli_paddocktest \
        --app-secret "$secret" --tls "$T/fs.pem" "$T/fs.key" --log "$T/fs.log" "$@" >"$fifo" &
    FS_PID=$!
    track_pid "$FS_PID"
    FS_PORT=""
    IFS= read -r -t 30 FS_PORT <"$fifo"
    rm -f "$fifo"
    [ -n "$FS_PORT" ] || bail_out "the fake Feishu server did not start"
}

# start_until_asked NAME [RUN-ARGS...]: paddock run RUN-ARGS in the background from
# ${ASK_DIR:-$WS}, with paddock's stderr read through a fifo until its notice says that an
# approval request waits (an event: the request is in the store by then). Sets ID (empty
# when none came within 30 s) and BG; the command's stdout goes to $T/NAME.out, the stderr
# read so far to $T/NAME.err. finish_asked NAME adds the rest of the stderr and waits.
start_until_asked() {
    local name="$1" line
    shift
    mkfifo "$T/$name.fifo" || return 1
    (cd "${ASK_DIR:-$WS}" && HOME="$TEST_HOME" PATH="$SANDBOX_PATH" LANG="$SANDBOX_LANG" \
        timeout -k 5 60 "$PADDOCK" run "$@" </dev/null >"$T/$name.out" 2>"$T/$name.fifo") &
    BG=$!
    track_pid "$BG"
    exec {ASK_FD}<"$T/$name.fifo"
    rm -f "$T/$name.fifo"
    : >"$T/$name.err"
    ID=""
    while IFS= read -r -t 30 -u "$ASK_FD" line; do
        printf '%s\n' "$line" >>"$T/$name.err"
        if [[ $line =~ ^paddock:\ approval\ ([0-9a-f]{16}):.*needs\ a\ human ]]; then
            ID=${BASH_REMATCH[1]}
            return 0
        fi
    done
    return 1
}

finish_asked() {
    timeout 30 cat <&"$ASK_FD" >>"$T/$1.err"
    exec {ASK_FD}<&-
    wait "$BG" 2>/dev/null
}

# ---- the test upstream (tests/integration/upstream.py) -----------------------------------

# start_upstream VAR [ARGS...]: upstream.py on 127.0.0.1 (ARGS: --tls CERT KEY, --log FILE,
# --git ROOT); its port in VAR.
start_upstream() {
    local var=$1
    shift
    start_port_server "$var" "$PYTHON" "$PADDOCK_TOP/tests/integration/upstream.py" "$@"
}
