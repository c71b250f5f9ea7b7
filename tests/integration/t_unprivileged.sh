#!/usr/bin/env bash
# paddock started by a regular user (most users): the caller's own uid is mapped, no
# idmapped mounts are needed, and the sandbox still isolates. Run as root, the test drops
# to uid/gid 65534 with setpriv for every paddock call.
. "$(dirname "$0")/lib.sh"
need_root
need_userns
command -v setpriv >/dev/null 2>&1 || skip_all "setpriv (util-linux) missing"

U=65534
# Everything the user needs lives beneath a directory it can reach and own.
UT=$(mktemp -d /var/tmp/paddock-user.XXXXXX) && cleanup_path "$UT"
chmod 0755 "$UT"
mkdir -p "$UT/ws/.git" "$UT/home/.ssh"
mkdir -m 700 "$UT/state"
echo "[core]" >"$UT/ws/.git/config"
echo "original" >"$UT/ws/a.txt"
echo "not a key" >"$UT/home/.ssh/id_ed25519"
chown -R "$U:$U" "$UT/ws" "$UT/home" "$UT/state"
UPROBE=$UT/paddock-probe
cp "$PROBE" "$UPROBE" && chmod 0755 "$UPROBE"

# urun ARGS...: paddock as the user; sets RC, OUT, ERR.
urun() {
    as_user "$U" "$UT/ws" "$UT/home" "$UT/state" "$@"
}

urun run --session u -- "$UPROBE" uid
expect_eq "a regular user's run exits 0" 0 "$RC"
expect_eq "inside, the command is the caller's uid and gid" "value=$U,$U,$U,$U" "$OUT"

urun run --session u -- "$UPROBE" caps
expect_match "no capabilities, no_new_privs, seccomp filter" \
    'CapInh:0+,CapPrm:0+,CapEff:0+,CapBnd:0+,CapAmb:0+,NoNewPrivs:1,Seccomp:2' "$OUT"

urun run --session u -- "$UPROBE" read "$UT/home/.ssh/id_ed25519"
expect_eq "~/.ssh is hidden" "errno=ENOENT" "$OUT"

urun run --session u -- "$UPROBE" write "$UT/ws/.git/config"
expect_match ".git/config is read-only" '^errno=(EROFS|EACCES|EPERM)$' "$OUT"

urun run --session u -- "$UPROBE" pids
expect_match "only the sandbox's processes are visible" '^value=1,[0-9]+$' "$OUT"

urun run --session u -- sh -c 'echo changed > a.txt && echo new > b.txt'
expect_eq "a write in the workspace succeeds" 0 "$RC"
expect_eq "the real file is untouched before commit" "original" "$(cat "$UT/ws/a.txt")"
urun diff u --json
expect_eq "diff shows the two changes" '["a.txt", "b.txt"]' \
    "$(json_get "$OUT" 'sorted(c["path"] for c in j["changes"])')"
urun commit u
expect_eq "commit succeeds" 0 "$RC"
expect_eq "the real file has the new content" "changed" "$(cat "$UT/ws/a.txt")"
expect_eq "a new file belongs to the user" "$U" "$(stat -c %u "$UT/ws/b.txt")"
urun discard u
expect_eq "discard removes the session (its overlay work dir included)" \
    "0 " "$RC $(ls -A "$UT/state/sessions" | grep -v '^\.spare\.[0-9]*$')"
