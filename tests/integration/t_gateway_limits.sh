#!/usr/bin/env bash
# t_gateway_limits: the sandbox cannot exhaust or kill its supervisor through the gateway,
# which runs in paddock's own process, outside the sandbox's cgroup. Upstreams are servers
# this test starts on 127.0.0.1 (names mapped with `resolve`); nothing else is contacted.
#   - SIGPIPE: clients that reset their connections mid-response, many times: paddock
#     lives, the exit status is the command's, session.end is recorded;
#   - 20,000 connections opened from inside: those beyond network.limits.connections are
#     refused (closed at once, counted in the audit); the supervisor's descriptors and
#     memory stay bounded and it does not spin (its CPU time, from /proc);
#   - at the descriptor limit the listeners pause: no busy loop, a warning or two, not
#     one a try;
#   - connections that do not read their large responses (plain and intercepted TLS):
#     the supervisor's peak RSS stays bounded (limits.memory: 64M for the sandbox);
#   - a flood of blocked DNS queries: a bounded number of audit rows whose counts add up
#     to the number of queries sent;
#   - idle connections (no head, half a head, after a response, a quiet tunnel, a head
#     trickled a byte at a time) end after network.limits.idle_timeout;
#   - `paddock policy lint` on bad network.limits values.
# The supervisor is the paddock process itself (the gateway is its module); the sandboxed
# script prints a line when it has made its load and waits for the test on a pipe passed
# in (--pass-fd), so that the test measures while the load is there.
. "$(dirname "$0")/lib.sh"
need_userns

[ -e "$PADDOCK_BUILD/paddock-gateway.so" ] || bail_out "paddock-gateway.so is not built"
command -v openssl >/dev/null || skip_all "openssl is not installed"

start_upstream HTTP_PORT 2>>"$T/upstream.err" # (its tracebacks of reset connections)

# A test CA and a certificate for tls.test: intercepted TLS toward a TLS upstream.
test_certs tls tls.test pass.test
start_upstream TLS_PORT --tls "$T/tls.pem" "$T/tls.key" 2>>"$T/upstream.err"

net_policy() { # net_policy FILE [EXTRA YAML LINES under network:]
    cat >"$1" <<EOF
version: 1
network:
  default: deny
  rules:
    - {host: api.test, decision: allow}
    - {host: tls.test, decision: allow}
    - {host: pass.test, decision: allow}
  passthrough: [pass.test]
  resolve:
    "api.test:80": "127.0.0.1:$HTTP_PORT"
    "tls.test:443": "127.0.0.1:$TLS_PORT"
    "pass.test:443": "127.0.0.1:$TLS_PORT"
  upstream_ca: [$T/ca.pem]
${2:-}
EOF
}
net_policy "$T/net.yaml"
cd "$WS" || bail_out "no workspace"

# What every sandboxed script starts with: the proxy's address, and the pipe from the test.
cat >"$WS/common.py" <<'EOF'
import os, resource, socket, sys, time, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
PROXY = (proxy.hostname, proxy.port)
def say(*words):
    print(*words, flush=True)
def wait_for_test():
    os.read(3, 1)  # the test writes a byte when it has measured
def more_files():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard
EOF

# The supervisor's descriptors, resident memory (peak and now, KiB) and CPU time (ticks).
sup_fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
sup_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null; }
sup_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null; }
TICKS=$(getconf CLK_TCK)

# start_load NAME POLICY SCRIPT [ENV...]: paddock run -- python3 SCRIPT in the background, a
# pipe on fd 3 of the sandbox (written with release_load), stdout read with read_bg_line.
start_load() {
    local name=$1 policy=$2 script=$3
    shift 3
    mkfifo "$T/$name.out" "$T/$name.go" || return 1
    BG_ERR="$T/$name.err"
    cd "$WS" || return 1
    env "$@" HOME="$TEST_HOME" PATH="$SANDBOX_PATH" LANG="$SANDBOX_LANG" \
        timeout -k 5 120 "$PADDOCK" run --policy "$policy" --pass-fd 3 -- python3 "$script" \
        3<"$T/$name.go" </dev/null >"$T/$name.out" 2>"$BG_ERR" &
    BG_PID=$!
    cd - >/dev/null || return 1
    track_pid "$BG_PID"
    exec {GO_FD}>"$T/$name.go"
    exec {BG_FD}<"$T/$name.out"
}
# The supervisor: the first paddock process below the background job (under timeout).
load_pid() {
    local p q
    for _ in $(seq 1 50); do
        for p in $BG_PID $(pgrep -P "$BG_PID"); do
            [ "$(cat "/proc/$p/comm" 2>/dev/null)" = paddock ] && { echo "$p"; return 0; }
            for q in $(pgrep -P "$p"); do
                [ "$(cat "/proc/$q/comm" 2>/dev/null)" = paddock ] && { echo "$q"; return 0; }
            done
        done
        sleep 0.1
    done
    return 1
}
release_load() { # (in a subshell: a run that ended early makes it a SIGPIPE there)
    (printf 'g' >&"$GO_FD") 2>/dev/null
    exec {GO_FD}>&-
}
finish_load() { # sets RC: the run's exit status
    wait "$BG_PID"
    RC=$?
    exec {BG_FD}<&-
}

audit_rows() { # audit_rows KIND: the audit's rows of that kind, as JSON lines
    pdk audit --json
    printf '%s\n' "$OUT" | "$PYTHON" -c '
import json, sys
for l in sys.stdin:
    if l.strip():
        e = json.loads(l)
        if e["kind"] == sys.argv[1]:
            print(json.dumps(e))' "$1"
}

# ---- 1. clients that hang up mid-response never kill paddock --------------------------

cat >"$WS/hangup.py" <<'EOF'
exec(open("common.py").read())
import ssl, struct
def reset(s):  # a reset, with bytes still coming: the gateway's next write meets a dead socket
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
ctx = ssl.create_default_context()
n = 0
for i in range(60):
    for how in ("plain", "half", "ws", "wshalf", "tls"):
        s = socket.create_connection(PROXY)
        if how == "tls":
            s.sendall(b"CONNECT tls.test:443 HTTP/1.1\r\nHost: tls.test:443\r\n\r\n")
            head = b""
            while b"\r\n\r\n" not in head:
                head += s.recv(1)
            t = ctx.wrap_socket(s, server_hostname="tls.test")
            t.sendall(b"GET /big/4000000 HTTP/1.1\r\nHost: tls.test\r\n\r\n")
            t.recv(2000)
            s = t.unwrap() if False else t
        elif how.startswith("ws"):
            s.sendall(b"GET http://api.test/ws HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\n"
                      b"Connection: Upgrade\r\n\r\n")
            head = b""
            while b"\r\n\r\n" not in head:
                head += s.recv(1)
            s.sendall(b"x" * 200000)
            if how == "wshalf":
                s.shutdown(socket.SHUT_WR)
            s.recv(1000)
        else:
            s.sendall(b"GET http://api.test/big/4000000 HTTP/1.1\r\nHost: api.test\r\n\r\n")
            if how == "half":
                s.shutdown(socket.SHUT_WR)
            s.recv(2000)
        reset(s)
        n += 1
say("hung up", n, "times")
sys.exit(7)
EOF
prun --policy "$T/net.yaml" -- python3 hangup.py
expect_eq "sigpipe: 300 hang-ups mid-response, and the command's exit status is paddock's" \
    "7 hung up 300 times" "$RC $OUT"
expect_no_match "sigpipe: paddock reports nothing wrong" 'Broken pipe|signal' "$ERR"
ends=$(audit_rows session.end | grep -c '"exit_status": 7')
expect_eq "sigpipe: the session's end is recorded" 1 "$ends"

# ---- 2. 20,000 connections: the cap holds, the supervisor stays bounded -----------------

cat >"$WS/many.py" <<'EOF'
exec(open("common.py").read())
import select
more_files()
IP_BIND_ADDRESS_NO_PORT = 24
socks = []
def connections(first_source, count):
    """count connections to the proxy, from sources 127.0.0.N (N from first_source, 4,000
    a source: the ports of one source are not all quick to find), and how many are still
    open once 3 seconds pass with none closed (they stay open in socks)."""
    for i in range(count):
        s = socket.socket()
        s.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
        s.bind(("127.0.0.%d" % (first_source + i // 4000), 0))
        try:
            s.connect(PROXY)
        except OSError:
            s.close()
            break
        socks.append(s)
    p = select.poll()
    for s in socks:
        p.register(s.fileno(), select.POLLIN | select.POLLRDHUP)
    alive = len(socks)
    while True:
        events = p.poll(3000)
        if not events:
            break
        for fd, ev in events:
            p.unregister(fd)
            alive -= 1
    return len(socks), alive
# 2 processes of 10,000 (the sandbox has 20,000 descriptors a process)
r, w = os.pipe()
hold_r, hold_w = os.pipe()
kids = []
for k in range(2):
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.close(hold_w)
        made, alive = connections(2 + 3 * k, 10000)
        os.write(w, b"%d %d\n" % (made, alive))
        os.read(hold_r, 1)  # until the parent is done
        os._exit(0)
    kids.append(pid)
os.close(w)
os.close(hold_r)
made = alive = 0
with os.fdopen(r) as f:
    for _ in kids:
        m, a = f.readline().split()
        made += int(m)
        alive += int(a)
say("opened", made, "alive", alive)
time.sleep(3)  # the test measures the supervisor's CPU time over this
say("measured")
wait_for_test()
os.close(hold_w)
for pid in kids:
    os.waitpid(pid, 0)
EOF
start_load many "$T/net.yaml" many.py
sup=$(load_pid)
read -r -t 110 -u "$BG_FD" line1
t0=$(sup_ticks "$sup")

read -r -t 30 -u "$BG_FD" line2
t1=$(sup_ticks "$sup")
fds=$(sup_fds "$sup")
rss=$(sup_kib "$sup" VmHWM)
release_load
finish_load
diag "many: $line1; supervisor: $fds fds, peak RSS $rss KiB, $((t1 - t0)) ticks over 3 s"
opened=$(echo "$line1" | awk '{print $2}')
alive=$(echo "$line1" | awk '{print $4}')
expect_eq "many: 20,000 connections made from inside" 20000 "$opened"
check "many: at most network.limits.connections (256) stay open" \
    test "${alive:-99999}" -le 256 -a "${alive:-0}" -ge 200
check "many: the supervisor's descriptors stay bounded (under 400)" test "${fds:-99999}" -lt 400
check "many: the supervisor's peak RSS stays under 200 MB" test "${rss:-999999}" -lt 204800
check "many: the supervisor does not spin (under 1 s of CPU over 3 s)" \
    test $((t1 - t0)) -lt "$TICKS"
expect_eq "many: the run ends as the command did" 0 "$RC"
refused=$(audit_rows net.connect | "$PYTHON" -c '
import json, sys
n = rows = 0
times = []
for l in sys.stdin:
    e = json.loads(l)
    if "network.limits.connections" in e["data"].get("refused", ""):
        rows += 1
        n += e["data"].get("count", 1)
        times.append(e["time_ns"])
print(n, rows, (max(times) - min(times)) // 10**9 + 1 if times else 0)')
read -r rcount rrows rsecs <<<"$refused"
diag "many: refused connections in the audit: $rcount in $rrows rows over $rsecs s"
check "many: every refused connection is counted in the audit" test "$rcount" -ge $((20000 - 256))
check "many: ... in a bounded number of rows (at most 21 a second)" \
    test "$rrows" -le $(((rsecs + 2) * 21)) -a "$rrows" -lt $((rcount / 10))
summary=$(audit_rows net.summary | tail -n1)
diag "many: $summary"
expect_match "many: the summary has the refused connections" '"connections_refused": [1-9]' "$summary"

# ---- 3. the descriptor limit: accepting pauses, nothing spins ---------------------------

# paddock with 160 descriptors (soft and hard: the sandbox has them too); the script forks
# 5 processes of 140 connections each, beyond what the gateway can accept.
cat >"$WS/fdlimit.py" <<'EOF'
exec(open("common.py").read())
r, w = os.pipe()
kids = []
for k in range(5):
    pid = os.fork()
    if pid == 0:
        os.close(r)
        socks = []
        for i in range(140):
            try:
                socks.append(socket.create_connection(PROXY, timeout=5))
            except OSError:
                break
        os.write(w, b"%d\n" % len(socks))
        os.read(3, 1)
        os._exit(0)
    kids.append(pid)
os.close(w)
made = 0
f = os.fdopen(r)
for _ in kids:
    made += int(f.readline())
say("made", made)
time.sleep(3)
say("measured")
wait_for_test()
for p in kids:
    os.waitpid(p, 0)
EOF
mkfifo "$T/fd.out" "$T/fd.go"
(cd "$WS" && HOME="$TEST_HOME" PATH="$SANDBOX_PATH" LANG="$SANDBOX_LANG" \
    timeout -k 5 120 prlimit --nofile=160:160 "$PADDOCK" run --policy "$T/net.yaml" \
    --pass-fd 3 -- python3 fdlimit.py 3<"$T/fd.go" </dev/null >"$T/fd.out" 2>"$T/fd.err") &
BG_PID=$!
track_pid "$BG_PID"
exec {GO_FD}>"$T/fd.go"
exec {BG_FD}<"$T/fd.out"
sup=$(load_pid)
read -r -t 60 -u "$BG_FD" line1
t0=$(sup_ticks "$sup")
read -r -t 30 -u "$BG_FD" line2
t1=$(sup_ticks "$sup")
release_load
finish_load
errbytes=$(stat -c %s "$T/fd.err")
warns=$(grep -c 'accept' "$T/fd.err")
diag "fd limit: $line1; supervisor $((t1 - t0)) ticks over 3 s; stderr $errbytes bytes, $warns lines on accept"
check "fd limit: the supervisor does not spin (under 1 s of CPU over 3 s)" \
    test -n "$sup" -a $((t1 - t0)) -lt "$TICKS"
check "fd limit: one warning, not one a try (at most 3 lines, under 4 KiB)" \
    test "$warns" -ge 1 -a "$warns" -le 3 -a "$errbytes" -lt 4096
expect_eq "fd limit: the run ends as the command did" 0 "$RC"

# ---- 4. unread large responses: the supervisor's memory stays bounded -------------------

net_policy "$T/mem.yaml"
printf 'limits:\n  memory: 64M\n' >>"$T/mem.yaml"
cat >"$WS/unread.py" <<'EOF'
exec(open("common.py").read())
import ssl
socks = []
for i in range(170):  # plain, through the proxy
    s = socket.create_connection(PROXY)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"GET http://api.test/big/20000000 HTTP/1.1\r\nHost: api.test\r\n\r\n")
    socks.append(s)
ctx = ssl.create_default_context()
for i in range(30):  # intercepted TLS, through CONNECT
    s = socket.create_connection(PROXY)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"CONNECT tls.test:443 HTTP/1.1\r\nHost: tls.test:443\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    t = ctx.wrap_socket(s, server_hostname="tls.test")
    t.sendall(b"GET /big/20000000 HTTP/1.1\r\nHost: tls.test\r\n\r\n")
    socks.append(t)
say("requested", len(socks))  # and nothing here reads
wait_for_test()
EOF
# Under ASan, freed memory waits in a quarantine (256 MB by default) before it is reused, which
# counts in the RSS whatever the gateway keeps: a small quarantine for this run.
asan_env=()
ldd "$PADDOCK" | grep -q libasan &&
    asan_env=(ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8")
start_load unread "$T/mem.yaml" unread.py "${asan_env[@]}"
sup=$(load_pid)
read -r -t 60 -u "$BG_FD" line1
# The gateway takes what the upstreams send until its queues are full: wait until the
# supervisor's memory has stopped growing (2 s unchanged within 1 MiB), or is over the bound.
last=0 same=0
for _ in $(seq 1 240); do
    now=$(sup_kib "$sup" VmRSS)
    [ "${now:-0}" -ge 204800 ] && break
    if [ $((${now:-0} - last)) -lt 1024 ] && [ $((last - ${now:-0})) -lt 1024 ]; then
        same=$((same + 1))
        [ $same -ge 4 ] && break
    else
        same=0
    fi
    last=${now:-0}
    sleep 0.5
done
rss=$(sup_kib "$sup" VmHWM)
release_load
finish_load
diag "unread: $line1; supervisor peak RSS $rss KiB"
expect_eq "unread: 200 connections asked for 20 MB each" "requested 200" "$line1"
check "unread: the supervisor's peak RSS stays under 200 MB" test "${rss:-999999}" -lt 204800
expect_eq "unread: the run ends as the command did" 0 "$RC"

# ---- 5. a flood of blocked DNS queries: bounded rows, the count right -------------------

cat >"$WS/dnsflood.py" <<'EOF'
import random, socket, struct, time
ns = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
sent = answered = 0
t0 = time.monotonic()
for i in range(6000):
    name = b"q%d.blocked.test" % i
    q = struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(p)]) + p for p in name.split(b".")) + b"\0" + struct.pack(">HH", 1, 1)
    s.sendto(q, (ns, 53))
    sent += 1
    try:
        s.recv(512)
        answered += 1
    except socket.timeout:
        pass
print("sent", sent, "answered", answered, "seconds", int(time.monotonic() - t0) + 1, flush=True)
EOF
prun --policy "$T/net.yaml" -- python3 dnsflood.py
diag "dns: $OUT"
sent=$(echo "$OUT" | awk '{print $2}')
answered=$(echo "$OUT" | awk '{print $4}')
secs=$(echo "$OUT" | awk '{print $6}')
expect_eq "dns: 6,000 blocked queries sent, each answered" "6000 6000" "$sent $answered"
counts=$(audit_rows dns.blocked | "$PYTHON" -c '
import json, sys
n = rows = agg = 0
for l in sys.stdin:
    d = json.loads(l)["data"]
    rows += 1
    n += d.get("count", 1)
    agg += 1 if d.get("aggregated") else 0
print(n, rows, agg)')
diag "dns: audit rows (sum of counts, rows, aggregated rows): $counts"
read -r dsum drows dagg <<<"$counts"
expect_eq "dns: the counts in the audit add up to the queries sent" 6000 "$dsum"
check "dns: a bounded number of rows (at most 21 a second)" \
    test "$drows" -le $(((secs + 2) * 21)) -a "$dagg" -ge 1
agg=$(audit_rows dns.blocked | grep -m1 '"aggregated": true')
expect_match "dns: a counted row keeps the fields of a row (name, type, rcode)" \
    '"name": "q[0-9]+\.blocked\.test".*"rcode"' "$agg"

# ---- 6. idle connections end after network.limits.idle_timeout --------------------------

net_policy "$T/idle.yaml" '  limits: {idle_timeout: 2s, connections: 64}'
cat >"$WS/idle.py" <<'EOF'
exec(open("common.py").read())
import select
def ends(s, what):
    s.settimeout(30)
    t0 = time.monotonic()
    try:
        while s.recv(65536):
            pass
        how = "closed"
    except socket.timeout:
        how = "open"
    except OSError:
        how = "closed"
    say(what, how, "within 30 s" if how == "closed" and time.monotonic() - t0 < 30 else "")
ends(socket.create_connection(PROXY), "nothing sent:")
s = socket.create_connection(PROXY)
s.sendall(b"GET http://api.test/x HTTP/1.1\r\nHost: api")
ends(s, "half a head:")
s = socket.create_connection(PROXY)
s.sendall(b"GET http://api.test/x HTTP/1.1\r\nHost: api.test\r\n\r\n")
s.settimeout(10)
got = b""
while b"\r\n\r\n" not in got:
    got += s.recv(4096)
ends(s, "after a response:")
s = socket.create_connection(PROXY)
s.sendall(b"CONNECT pass.test:443 HTTP/1.1\r\nHost: pass.test:443\r\n\r\n")
ends(s, "a quiet tunnel:")
s = socket.create_connection(PROXY)  # a head trickled a byte every 0.2 s: never idle
s.sendall(b"GET http://api.test/x HTTP/1.1\r\nX-Slow: ")
t0 = time.monotonic()
how = "open"
while time.monotonic() - t0 < 30:
    try:
        s.send(b"a")
        r, _, _ = select.select([s], [], [], 0.2)
        if r and not s.recv(100):
            how = "closed"
            break
    except OSError:
        how = "closed"
        break
say("a trickled head:", how, "within 30 s" if how == "closed" else "")
EOF
prun --policy "$T/idle.yaml" -- python3 idle.py
expect_eq "idle: a connection that sends nothing is closed" "nothing sent: closed within 30 s" \
    "$(echo "$OUT" | sed -n 1p)"
expect_eq "idle: half a head is closed" "half a head: closed within 30 s" "$(echo "$OUT" | sed -n 2p)"
expect_eq "idle: a kept-alive connection is closed" "after a response: closed within 30 s" \
    "$(echo "$OUT" | sed -n 3p)"
expect_eq "idle: a quiet tunnel is closed" "a quiet tunnel: closed within 30 s" \
    "$(echo "$OUT" | sed -n 4p)"
expect_eq "idle: a head trickled a byte at a time is closed" "a trickled head: closed within 30 s" \
    "$(echo "$OUT" | sed -n 5p)"
idle_rows=$(audit_rows net.idle_closed | grep -c '"idle_timeout_s": 2')
check "idle: the closes are in the audit" test "$idle_rows" -ge 4
tunnel_idle=$(audit_rows net.tunnel_closed | grep -c '"idle_timeout_s": 2')
expect_eq "idle: the tunnel's end says it was idle" 1 "$tunnel_idle"

# ---- 7. lint ---------------------------------------------------------------------------

for bad in 'connections: 0' 'connections: many' 'connections: 70000' 'idle_timeout: 0' \
    'idle_timeout: soon' 'idle_timeout: 2d' 'buffers: 1M'; do
    printf 'version: 1\nnetwork:\n  limits: {%s}\n' "$bad" >"$T/bad.yaml"
    pdk policy lint "$T/bad.yaml"
    lines=$(printf '%s\n' "$OUT" | grep -c "^$T/bad.yaml:")
    check "lint: network.limits {$bad} is one error (exit 1)" test "$RC" -eq 1 -a "$lines" -eq 1
done
expect_match "lint: the error names the range and the default" \
    'network.limits.idle_timeout: "2d" is not a duration from 1 second to 1 day .*default is 120s' \
    "$(printf 'version: 1\nnetwork:\n  limits: {idle_timeout: 2d}\n' >"$T/bad.yaml"; pdk policy lint "$T/bad.yaml"; echo "$OUT")"
printf 'version: 1\nnetwork:\n  limits: {connections: 1000, idle_timeout: 5m}\n' >"$T/good.yaml"
pdk policy lint "$T/good.yaml"
expect_eq "lint: good values pass" 0 "$RC"

