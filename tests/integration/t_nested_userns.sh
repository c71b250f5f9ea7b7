#!/usr/bin/env bash
# sandbox.nested_userns: an agent's own sandbox (bubblewrap, as Codex's linux sandbox runs it)
# works inside paddock with the flag and is refused without it; what paddock hides and makes
# read-only stays so from inside a nested namespace. Started by a regular user (the test
# drops to uid/gid 65534 with setpriv); as root the flag cannot work, and paddock says why.
. "$(dirname "$0")/lib.sh"
need_root
need_userns
command -v setpriv >/dev/null 2>&1 || skip_all "setpriv (util-linux) missing"
command -v bwrap >/dev/null 2>&1 || skip_all "bubblewrap missing (scripts/bootstrap installs it)"

U=65534
UT=$(mktemp -d /var/tmp/paddock-nested.XXXXXX) && cleanup_path "$UT"
chmod 0755 "$UT"
mkdir -p "$UT/ws" "$UT/home/.ssh" "$UT/hidden"
mkdir -m 700 "$UT/state"
echo "not a key" >"$UT/home/.ssh/id_ed25519"
echo "hidden by read_deny" >"$UT/hidden/file"
chown -R "$U:$U" "$UT/ws" "$UT/home" "$UT/state" "$UT/hidden"
write_policy "$UT/nested.yaml" "version: 1
filesystem:
  read_deny: [$UT/hidden]
sandbox:
  nested_userns: true"
write_policy "$UT/plain.yaml" "version: 1
filesystem:
  read_deny: [$UT/hidden]"
# With a command rule, every exec inside is seen (an agent's bwrap included).
write_policy "$UT/rules.yaml" "version: 1
commands:
  rules:
    - {match: [shutdown], decision: deny}"
chmod 0644 "$UT/nested.yaml" "$UT/plain.yaml" "$UT/rules.yaml"

# urun ARGS...: paddock as the user; sets RC, OUT, ERR.
urun() {
    as_user "$U" "$UT/ws" "$UT/home" "$UT/state" "$@"
}

# The flags Codex's linux sandbox gives bubblewrap (codex-rs/linux-sandbox/src/bwrap.rs):
# a read-only root, a fresh /dev, the writable roots bound back, new pid and network
# namespaces (bwrap makes the user namespace itself, and brings loopback up over rtnetlink),
# a fresh /proc.
codex_bwrap=(bwrap --new-session --die-with-parent --ro-bind / / --dev /dev
    --bind "$UT/ws" "$UT/ws" --unshare-pid --unshare-net --proc /proc --)

urun run --policy "$UT/nested.yaml" --session n -- "${codex_bwrap[@]}" sh -c \
    'echo made inside > nested.txt'
expect_eq "with nested_userns, bubblewrap with Codex's flags runs" 0 "$RC"
urun diff n --json
expect_match "what the nested sandbox wrote is in the session layer" '"nested.txt"' "$OUT"

urun run --policy "$UT/nested.yaml" -- bwrap --unshare-all --die-with-parent --ro-bind / / -- true
expect_eq "with nested_userns, bwrap --unshare-all --die-with-parent --ro-bind / / runs" 0 "$RC"

urun run --policy "$UT/nested.yaml" -- bwrap --unshare-all --die-with-parent --ro-bind / / \
    --proc /proc -- cat /proc/self/uid_map
expect_eq "the nested sandbox maps the user's own uid and mounts its own /proc" "0" \
    "$RC$(printf '%s' "$OUT" | awk '$1 != $2 || $3 != 1 {print "bad map: " $0}')"

urun run --policy "$UT/plain.yaml" -- bwrap --unshare-all --die-with-parent --ro-bind / / -- true
expect_ne "without nested_userns, bubblewrap is refused" 0 "$RC"
expect_match "and it says that no namespace could be made" 'No permissions to create new namespace' \
    "$ERR"
expect_match "paddock says why, and what to do, in one line" \
    'paddock: warning: bwrap makes namespaces of its own, which this policy refuses \(sandbox.nested_userns is off\): .*set nested_userns: true and run paddock as a regular user, or turn the agent.s own sandbox off' \
    "$ERR"
printf 'bwrap --unshare-all --die-with-parent --ro-bind / / -- true\necho after: $?\n' >"$UT/ws/agent.sh"
chown "$U:$U" "$UT/ws/agent.sh"
urun run --policy "$UT/rules.yaml" -- sh agent.sh
expect_eq "an agent's bwrap inside fails without the flag" "after: 1" "$OUT"
expect_match "and paddock names it when it runs" \
    'paddock: warning: bwrap \(pid [0-9]+\) makes namespaces of its own, which this policy refuses' \
    "$ERR"
expect_eq "once a run" 1 "$(printf '%s\n' "$ERR" | grep -c 'makes namespaces of its own')"

# rtnetlink, which bwrap needs for its loopback: allowed with the flag, and only
# NETLINK_ROUTE; no netlink at all without it.
netlink_py='import socket, sys
out = []
for proto in (0, 4, 12):
    try:
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto).close()
        out.append("%d:ok" % proto)
    except OSError as e:
        out.append("%d:%d" % (proto, e.errno))
print(" ".join(out))'
urun run --policy "$UT/nested.yaml" -- python3 -c "$netlink_py"
expect_eq "with nested_userns, NETLINK_ROUTE opens and sock_diag, netfilter are refused" \
    "0:ok 4:97 12:97" "$OUT"
urun run --policy "$UT/plain.yaml" -- python3 -c "$netlink_py"
expect_eq "without nested_userns, no netlink socket opens" "0:97 4:97 12:97" "$OUT"

# From a nested user and mount namespace (root there, every capability in it), what paddock
# hides and makes read-only stays so: its mounts are locked in the sandbox's namespace.
cat >"$UT/ws/escape.sh" <<EOF
try() { if "\$@" >/dev/null 2>&1; then echo "\$1:done"; else echo "\$1:refused"; fi; }
try umount -l "$UT/home"
try umount -l "$UT/hidden"
try umount -l "$UT/state"
try mount -o remount,rw /
try mount -o remount,bind,rw /
mkdir -p /tmp/view
try mount --bind / /tmp/view
try cat "$UT/home/.ssh/id_ed25519"
try cat "$UT/hidden/file"
try ls "$UT/state/sessions"
try cat /tmp/view$UT/home/.ssh/id_ed25519
try touch /etc/paddock-nested-write
try touch "$UT/home/.ssh/planted"
EOF
chown "$U:$U" "$UT/ws/escape.sh"
urun run --policy "$UT/nested.yaml" -- unshare -Urm sh escape.sh
expect_eq "a nested namespace undoes none of paddock's mounts and reads nothing hidden" \
    "umount:refused umount:refused umount:refused mount:refused mount:refused mount:refused cat:refused cat:refused ls:refused cat:refused touch:refused touch:refused" \
    "$(printf '%s' "$OUT" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "nothing was written on the host" "no no" \
    "$([ -e /etc/paddock-nested-write ] && echo yes || echo no) $([ -e "$UT/home/.ssh/planted" ] && echo yes || echo no)"

# As root the command is root inside without capabilities, and Linux maps no ids in a user
# namespace it makes: paddock says so at the start, in one line naming the fix.
wrun --policy "$UT/nested.yaml" -- bwrap --unshare-all --die-with-parent --ro-bind / / -- true
expect_ne "as root, bubblewrap cannot map its ids" 0 "$RC"
expect_match "paddock says why and what to do, in one line" \
    'paddock: warning: sandbox.nested_userns: paddock runs as root.*CAP_SETFCAP.*run paddock as a regular user' \
    "$ERR"
wrun --policy "$UT/plain.yaml" -- true
expect_no_match "without the flag, no such warning" 'nested_userns' "$ERR"
