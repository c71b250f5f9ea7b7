#!/usr/bin/env bash
# t_exec_evasion: the command rules judge what an exec really runs, whatever the caller calls
# it, and a nested confine cuts its process off the network whatever call opens the
# connection and whatever becomes of its parents.
#   - a denied binary never runs under another argv[0] (exec -a), through the dynamic loader
#     (inside, and as paddock run's own command), through a renamed symlink or a copy, from
#     a memfd (execveat AT_EMPTY_PATH, /proc/self/fd/N), through an O_PATH fd, as a script's
#     interpreter, or with more arguments than the listener used to read (5,000);
#   - the audit records what ran: the file, the loader's program, the whole argv;
#   - with examples/coding-agent.yaml, `git -C . push` and `exec -a x git push` ask;
#   - a confined process's connect, sendto/sendmsg with MSG_FASTOPEN, TCP_FASTOPEN_CONNECT,
#     and its double-forked grandchild (re-parented, new session) reach nothing: the probes
#     go through the gateway's proxy to an upstream this test runs on the host's loopback,
#     which logs every request; io_uring stays denied.
. "$(dirname "$0")/lib.sh"
need_userns

LOADER=""
for l in /lib64/ld-linux-x86-64.so.2 /lib/ld-linux-aarch64.so.1; do
    [ -x "$l" ] && LOADER=$l && break
done
[ -n "$LOADER" ] || skip_all "no glibc dynamic loader at a known path"

cat >"$T/p.yaml" <<'EOF'
version: 1
commands:
  rules:
    - {match: [touch], decision: deny, reason: "no touch here"}
    - {match: [python3, "-c", "*deny-me*"], decision: deny, reason: "no such python"}
    - {match: [perl], decision: deny, reason: "no perl"}
    - {match: [rm, "-rf"], decision: deny, reason: "no rm -rf"}
EOF

# exec -a, the loader (plain, --argv0, --preload), a renamed link, a copy, a script whose
# interpreter is denied, all inside one allowed shell.
cat >"$WS/evade.sh" <<EOF
(exec -a ls touch by-exec-a); echo "exec-a \$?"
$LOADER /usr/bin/touch by-loader; echo "loader \$?"
$LOADER --argv0 ls --preload '' /usr/bin/touch by-loader-argv0; echo "loader-argv0 \$?"
ln -s /usr/bin/touch ./ls; ./ls by-link; echo "link \$?"
ln -s ./ls ./dir-entry; ./dir-entry by-link2; echo "link2 \$?"
cp /usr/bin/touch ./cat; ./cat by-copy; echo "copy \$?"
printf '#!/usr/bin/perl\nopen(F, ">by-script");\n' >script; chmod +x script; ./script; echo "script \$?"
for f in by-*; do [ -e "\$f" ] && echo "ran: \$f"; done; true
EOF
wrun --policy "$T/p.yaml" -- bash ./evade.sh
expect_eq "the shell is allowed and runs to its end" 0 "$RC"
for w in exec-a loader loader-argv0 link link2 copy script; do
    expect_match "$w: refused (exit 126)" "(^|$(printf '\n'))$w 126($(printf '\n')|$)" "$OUT"
done
expect_no_match "the denied binary never ran (none of its files exists inside)" "ran: " "$OUT"
expect_match "its stderr names the rule that matched what runs" \
    "paddock: denied by the policy: no touch here" "$ERR"

pdk audit --json
audit=$OUT
ev() {
    printf '%s\n' "$audit" | "$PYTHON" -c '
import json, sys
want = sys.argv[1]
for l in sys.stdin:
    if not l.strip(): continue
    e = json.loads(l)
    if e["kind"] != "exec": continue
    d = e["data"]
    if want in " ".join(d["argv"]):
        print(d["decision"], d.get("file"), d["argv"][0], d.get("program"), d.get("interpreter"))
        break' "$1"
}
expect_eq "audit: exec -a is recorded as the file that ran, argv[0] as given" \
    "deny /usr/bin/touch ls None None" "$(ev by-exec-a)"
expect_eq "audit: the loader's program is recorded" \
    "deny $(readlink -f "$LOADER") $LOADER /usr/bin/touch None" "$(ev 'touch by-loader')"
expect_eq "audit: a renamed link is recorded as its file" "deny /usr/bin/touch ./ls None None" \
    "$(ev by-link)"
expect_eq "audit: a script's interpreter is recorded" \
    "deny $WS/script ./script None $(readlink -f /usr/bin/perl)" "$(ev ./script)"

# The loader as paddock run's own command: refused before or at its exec (direct mode, so
# that what touch would make lands in the real workspace).
wrun --workspace-mode direct --policy "$T/p.yaml" -- "$LOADER" /usr/bin/touch by-top-loader
expect_eq "the loader as the command itself: exit 126" 126 "$RC"
[ ! -e "$WS/by-top-loader" ] && ok "... and touch never ran" || not_ok "... touch ran"
ln -s /usr/bin/touch "$WS/top-ls"
wrun --workspace-mode direct --policy "$T/p.yaml" -- ./top-ls by-top-link
expect_eq "a renamed link as the command itself: exit 126" 126 "$RC"
[ ! -e "$WS/by-top-link" ] && ok "... and touch never ran" || not_ok "... touch ran"

# Files with no name, and fds.
cat >"$WS/fds.py" <<'EOF'
import os, sys
def run(what, fn):
    pid = os.fork()
    if pid == 0:
        try:
            fn()
        except OSError as e:
            print(what, "errno", e.errno, flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
data = open("/usr/bin/touch", "rb").read()
m = os.memfd_create("innocent", 0)
os.write(m, data)
run("memfd", lambda: os.execve(m, ["ls", "by-memfd"], {}))
run("memfd-path", lambda: os.execv("/proc/self/fd/%d" % m, ["ls", "by-memfd-path"]))
run("devfd-path", lambda: os.execv("/dev/fd/%d" % m, ["ls", "by-devfd-path"]))
p = os.open("/usr/bin/touch", os.O_PATH)
run("opath", lambda: os.execve(p, ["ls", "by-opath"], {}))
for f in sorted(os.listdir(".")):
    if f.startswith("by-"):
        print("ran:", f)
EOF
wrun --policy "$T/p.yaml" -- python3 fds.py
for w in memfd memfd-path devfd-path opath; do
    expect_match "$w: refused (EACCES)" "(^|$(printf '\n'))$w errno 13($(printf '\n')|$)" "$OUT"
done
expect_no_match "none of them ran" "ran: " "$OUT"
expect_match "a memfd is refused with the reason" "paddock: refused: it runs a memfd" "$ERR"
pdk audit --json
expect_match "audit: the memfd's exec is recorded as nameless" '"nameless":"a memfd"' "$OUT"

# 5,000 arguments: judged whole (the old listener gave up after 4,096 and judged the path
# alone), recorded whole.
mkdir "$WS/victim"
cat >"$WS/many.py" <<'EOF'
import os
pid = os.fork()
if pid == 0:
    try:
        os.execv("/bin/rm", ["rm", "-rf", "victim"] + ["pad%d" % i for i in range(4997)])
    except OSError as e:
        print("errno", e.errno, flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print("victim", os.path.isdir("victim"))
EOF
wrun --policy "$T/p.yaml" -- python3 many.py
expect_eq "an exec of 5,000 arguments that a rule denies is refused" "errno 13" \
    "$(printf '%s\n' "$OUT" | sed -n 1p)"
expect_eq "... and rm never ran" "victim True" "$(printf '%s\n' "$OUT" | sed -n 2p)"
pdk audit --json
expect_eq "... and its argv is recorded whole" "5000 rm -rf victim pad4996 False" \
    "$(printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
for l in sys.stdin:
    if not l.strip(): continue
    e = json.loads(l)
    d = e["data"]
    if e["kind"] == "exec" and d["argv"][:3] == ["rm", "-rf", "victim"]:
        print(len(d["argv"]), " ".join(d["argv"][:3]), d["argv"][-1], d.get("argv_truncated", False))')"

# The shipped coding-agent policy: git's global options and exec -a do not hide a push.
CODING=$PADDOCK_TOP/examples/coding-agent.yaml
for cmd in "git -C . push" "git -c core.pager=cat --no-pager push origin" \
    "git --git-dir=.git push" "git -c alias.p=push p"; do
    # shellcheck disable=SC2086
    pdk policy check --policy "$CODING" -- $cmd
    expect_match "policy check: $cmd asks" "^ask" "$OUT"
done
sed 's/^  timeout: .*/  timeout: 1/' "$CODING" >"$T/coding.yaml"
git -C "$WS" init -q 2>/dev/null
printf 'git -C . push; echo "git-C $?"\n(exec -a x git push); echo "exec-a-git $?"\n' >"$WS/push.sh"
wrun --policy "$T/coding.yaml" -- bash ./push.sh
expect_eq "under coding-agent.yaml, git -C . push asks (unanswered: refused)" 2 \
    "$(printf '%s\n' "$ERR" | grep -c 'needs a human (rule 1 ')"
expect_match "... it did not run" "git-C 126" "$OUT"
expect_match "... nor did exec -a x git push" "exec-a-git 126" "$OUT"

# ---- nested confine and the network ----
fifo=$T/up.fifo
mkfifo "$fifo"
"$PYTHON" "$PADDOCK_TOP/tests/integration/upstream.py" --log "$T/up.log" >"$fifo" &
track_pid $!
IFS= read -r -t 30 UP_PORT <"$fifo"
[ -n "$UP_PORT" ] || bail_out "the test upstream did not start"
cat >"$T/net.yaml" <<EOF
version: 1
commands:
  rules:
    - {match: [sh, -c, "*confined*"], decision: confine}
network:
  default: deny
  rules:
    - {host: api.test, decision: allow}
  resolve: {"api.test:80": "127.0.0.1:$UP_PORT"}
EOF
cat >"$WS/net.sh" <<EOF
for m in connect sendto-fastopen sendmsg-fastopen fastopen-connect; do
    echo "open \$m: \$($PROBE net-get \$m 127.0.0.1 3128 http://api.test/open-\$m)"
    echo "confined \$m: \$(sh -c "$PROBE net-get \$m 127.0.0.1 3128 http://api.test/confined-\$m # confined")"
done
echo "open orphan: \$($PROBE orphan net-get connect 127.0.0.1 3128 http://api.test/open-orphan)"
echo "confined orphan: \$(sh -c "$PROBE orphan net-get connect 127.0.0.1 3128 http://api.test/confined-orphan # confined")"
echo "confined orphan tfo: \$(sh -c "$PROBE orphan net-get sendto-fastopen 127.0.0.1 3128 http://api.test/confined-orphan-tfo # confined")"
echo "confined io_uring: \$(sh -c "$PROBE io_uring # confined")"
EOF
wrun --policy "$T/net.yaml" -- sh ./net.sh
expect_eq "the script runs" 0 "$RC"
line() { printf '%s\n' "$OUT" | sed -n "s/^$1: //p"; }
for m in connect sendto-fastopen sendmsg-fastopen fastopen-connect orphan; do
    expect_eq "an unconfined process reaches the upstream ($m)" "value=HTTP/1.1 200 OK" \
        "$(line "open $m")"
done
for m in connect sendto-fastopen sendmsg-fastopen fastopen-connect orphan "orphan tfo"; do
    expect_eq "a confined one does not ($m)" "errno=ECONNREFUSED" "$(line "confined $m")"
done
expect_eq "io_uring stays denied to it" "errno=EPERM" "$(line "confined io_uring")"
paths=$("$PYTHON" -c '
import json, sys
print(" ".join(sorted(json.loads(l)["path"] for l in open(sys.argv[1]) if l.strip())))' "$T/up.log")
expect_no_match "the upstream never saw a confined request" "confined" "$paths"
expect_match "... and saw every unconfined one" \
    "/open-connect /open-fastopen-connect /open-orphan /open-sendmsg-fastopen /open-sendto-fastopen" \
    "$paths"
pdk audit --json
expect_match "a refused TCP Fast Open is in the audit log" \
    '"kind":"connect.refused".*"call":"sendto"|"call":"sendto".*"kind":"connect.refused"' "$OUT"
