#!/usr/bin/env bash
# t_profiles: the built-in profiles of `paddock run --profile`: readonly binds the workspace
# read-only (writes fail with EROFS, nothing is kept), offline leaves no network at all (not
# even loopback), default changes nothing; an unknown profile is refused.
. "$(dirname "$0")/lib.sh"
need_userns

echo base >"$WS/base.txt"
wrun --profile readonly -- sh -c 'cat base.txt; echo x > new.txt 2>/dev/null; echo "write exit $?"; echo y > /tmp/t && echo tmp-ok'
expect_eq "readonly: the workspace reads" "base" "$(printf '%s\n' "$OUT" | head -n 1)"
expect_match "... does not write (EROFS)" "write exit [12]" "$OUT"
expect_match "... while /tmp still does" "tmp-ok" "$OUT"
expect_eq "... and nothing lands, nor a session" "no " \
    "$([ -e "$WS/new.txt" ] && echo yes || echo no) $(session_dirs)"
wrun --profile readonly --session keep -- true
expect_eq "readonly with --session is refused (125)" 125 "$RC"

cat >"$WS/lo.py" <<'PY'
import socket
s = socket.socket()
try:
    s.bind(("127.0.0.1", 0)); s.listen()
    socket.create_connection(s.getsockname(), timeout=5); print("connected")
except OSError as e:
    print("errno", e.errno)
PY
wrun --profile offline -- python3 lo.py
expect_eq "offline: no loopback either (ENETUNREACH)" "errno 101" "$OUT"
wrun --profile default -- python3 lo.py
expect_eq "default: loopback works" "connected" "$OUT"
wrun --profile sideways -- true
expect_eq "an unknown profile is refused (125)" 125 "$RC"
expect_match "... naming the profiles" "default, readonly or offline" "$ERR"
