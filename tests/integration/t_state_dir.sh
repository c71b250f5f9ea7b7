#!/usr/bin/env bash
# The state dir: paddock never takes over a directory that is not its own, and never
# changes the mode of one it did not make. A system directory (/, /tmp), a directory of
# another user, one others can read or write, a symlink, or one holding other files is
# refused in one line naming the fix, before anything is touched; a missing one is made
# private, an empty private one is adopted. The system directories are tried only in a
# private mount namespace where / is read-only, under strace: paddock must refuse before
# any call that could change them (and could not change them if it tried).
. "$(dirname "$0")/lib.sh"
need_userns

# srun DIR ARGS...: paddock run ARGS with PADDOCK_STATE_DIR=DIR (RC, OUT, ERR as prun).
srun() {
    local dir="$1"
    shift
    PADDOCK_STATE_DIR="$dir" prun --workspace "$WS" "$@"
}

mode_of() { stat -c %a "$1"; }

# ---- directories the test made with the properties that matter ---------------------------

mkdir -m 1777 "$T/shared"
srun "$T/shared" -- true
expect_eq "a world-writable (sticky) state dir is refused (exit 125)" 125 "$RC"
expect_match "... in one line that says why and what to do" \
    "^paddock: state dir $T/shared can be written by other users \(mode 1777\): set PADDOCK_STATE_DIR" "$ERR"
expect_eq "... and its mode is left as it was" 1777 "$(mode_of "$T/shared")"
expect_eq "... and nothing was made in it" "" "$(ls -A "$T/shared")"

mkdir -m 775 "$T/group"
srun "$T/group" -- true
expect_eq "a group-writable state dir is refused" "125 775" "$RC $(mode_of "$T/group")"

mkdir -m 755 "$T/readable"
srun "$T/readable" -- true
expect_eq "a state dir others can read is refused, its mode untouched (was chmod'ed to 700)" \
    "125 755" "$RC $(mode_of "$T/readable")"
expect_match "... and the message names the fix" "make it private \(chmod 700 $T/readable\)" "$ERR"
expect_eq "... nothing was made in it" "" "$(ls -A "$T/readable")"

if is_root; then
    mkdir -m 700 "$T/theirs"
    chown 65534:65534 "$T/theirs"
    srun "$T/theirs" -- true
    expect_match "a state dir of another user is refused" "^paddock: state dir $T/theirs belongs to uid 65534" "$ERR"
    expect_eq "... and left as it was" "125 700 65534" "$RC $(stat -c '%a %u' "$T/theirs")"
else
    skip "a state dir of another user is refused" "needs root to make one"
fi

mkdir -m 700 "$T/target"
ln -s "$T/target" "$T/link"
srun "$T/link" -- true
expect_match "a symlink as state dir is refused" "^paddock: state dir $T/link is a symlink" "$ERR"
expect_eq "... and what it points to is left empty" "125 " "$RC $(ls -A "$T/target")"

mkdir -m 700 "$T/project"
echo "notes" >"$T/project/notes.txt"
srun "$T/project" -- true
expect_eq "a private directory holding other files is refused (exit 125)" 125 "$RC"
expect_match "... naming one of them" "holds files that are not paddock's \(notes.txt, \.\.\.\)" "$ERR"
expect_eq "... and nothing was added to it" "notes.txt" "$(ls -A "$T/project")"

# A home directory (private, holding the user's files) is never the state dir.
mkdir -m 700 "$T/myhome"
touch "$T/myhome/.bashrc"
HOME="$T/myhome" PADDOCK_STATE_DIR="$T/myhome" timeout -k 5 60 "$PADDOCK" sessions \
    </dev/null >"$T/.out" 2>"$T/.err"
expect_match "the home directory is refused as state dir" "state dir $T/myhome is a system or shared directory" \
    "$(cat "$T/.err")"

# ---- what paddock may use ------------------------------------------------------------------

srun "$T/new/deeper/state" -- true
expect_eq "a missing state dir is made (the run exits 0)" 0 "$RC"
expect_eq "... private" 700 "$(mode_of "$T/new/deeper/state")"
expect_eq "... and marked as paddock's" "yes" \
    "$([ -f "$T/new/deeper/state/.paddock-state" ] && echo yes)"
srun "$T/new/deeper/state" -- true
expect_eq "... and used again by the next run" 0 "$RC"

mkdir -m 700 "$T/empty"
srun "$T/empty" -- true
expect_eq "an empty private directory is adopted" "0 700" "$RC $(mode_of "$T/empty")"

# A state dir of an earlier version: paddock's own files, no marker yet.
mkdir -m 700 "$T/older" "$T/older/sessions" "$T/older/audit-spool"
: >"$T/older/vault.lock"
srun "$T/older" -- true
expect_eq "a state dir with only paddock's files (an earlier version's) is used" 0 "$RC"

# ---- system directories, where nothing could be changed ------------------------------------

# sys_try DIR: paddock run with PADDOCK_STATE_DIR=DIR in a private mount namespace whose / is
# read-only, traced for every call that changes a file's mode, owner or existence. Sets RC,
# ERR and TRACE (the calls seen).
sys_try() {
    local dir="$1"
    : >"$T/.trace"
    exec 3>"$T/.trace"
    # (LeakSanitizer cannot work under ptrace: no leak check in a sanitizer build)
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
        HOME="$TEST_HOME" PADDOCK_STATE_DIR="$dir" timeout -k 5 60 unshare -m --propagation private \
        sh -c 'mount -o remount,bind,ro / || exit 99
               exec strace -f -qq -o /proc/self/fd/3 \
                   -e trace=chmod,fchmod,fchmodat,chown,fchown,lchown,fchownat,mkdir,mkdirat,rmdir,unlink,unlinkat,rename,renameat,renameat2,creat,link,linkat,symlink,symlinkat \
                   "$0" run --workspace "$1" -- true' "$PADDOCK" "$WS" </dev/null >/dev/null 2>"$T/.err"
    RC=$?
    exec 3>&-
    ERR=$(cat "$T/.err")
    TRACE=$(grep -v -e '^[0-9]* +++ ' -e '^[0-9]* --- ' "$T/.trace")
    _last_cmd="(ro /, strace) PADDOCK_STATE_DIR=$dir paddock run -- true"
}

if ! is_root; then
    skip "/ and /tmp as state dir are refused before anything is touched" "needs root for a private mount namespace"
elif ! command -v strace >/dev/null 2>&1; then
    skip "/ and /tmp as state dir are refused before anything is touched" "strace is not installed (scripts/bootstrap)"
else
    root_mode=$(mode_of /)
    tmp_mode=$(mode_of /tmp)
    sys_try /
    if [ "$RC" -eq 99 ]; then
        skip "/ as state dir is refused before anything is touched" "cannot remount / read-only in a mount namespace"
    else
        expect_eq "PADDOCK_STATE_DIR=/ is refused (exit 125)" 125 "$RC"
        expect_match "... in one line naming the fix" \
            "^paddock: state dir / is a system or shared directory, which paddock never takes over: set PADDOCK_STATE_DIR" "$ERR"
        expect_eq "... before any call that changes a mode, an owner or an entry (was chmod 0700 /)" "" "$TRACE"
        expect_eq "... and / keeps its mode" "$root_mode" "$(mode_of /)"
        sys_try /tmp
        expect_eq "PADDOCK_STATE_DIR=/tmp is refused the same way, nothing touched" "125 " "$RC $TRACE"
        expect_eq "... and /tmp keeps its sticky bit and mode" "$tmp_mode" "$(mode_of /tmp)"
        sys_try /var//tmp/
        expect_eq "... and so is /var/tmp, however it is written" "125 " "$RC $TRACE"
    fi
fi

# Reading commands refuse the same directories (and never create one).
PADDOCK_STATE_DIR="$T/readable" pdk sessions
expect_eq "paddock sessions refuses a state dir others can read (exit 1)" 1 "$RC"
PADDOCK_STATE_DIR="$T/not-there" pdk sessions
expect_eq "... and lists nothing from a missing one, without making it" "0 no" \
    "$RC $([ -e "$T/not-there" ] && echo yes || echo no)"
