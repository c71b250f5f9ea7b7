#!/usr/bin/env bash
# Sessions under concurrency and kills: parallel runs in one workspace all start (no spare
# session claimed twice, no shared resolv.conf rewritten under a networked run), runs and
# commits of one session never lose each other's update of session.json, and a run killed
# at any point while it makes its session never binds the session's name to another
# workspace's session (a spare recycled from it). Bounded in count and time.
. "$(dirname "$0")/lib.sh"
need_userns
[ -e "$PADDOCK_BUILD/paddock-gateway.so" ] || bail_out "paddock-gateway.so is not built"

# par N OUTDIR ARGS...: N `paddock run ARGS` at once from $WS; each one's exit status,
# stdout and stderr in OUTDIR/N.rc, OUTDIR/N.out, OUTDIR/N.err. Waits for all of them.
par() {
    local n="$1" out="$2" i pids=()
    shift 2
    mkdir -p "$out"
    cd "$WS" || return 1
    for i in $(seq "$n"); do
        (
            HOME="$TEST_HOME" PATH="$SANDBOX_PATH" timeout -k 5 120 "$PADDOCK" run "$@" \
                </dev/null >"$out/$i.out" 2>"$out/$i.err"
            echo $? >"$out/$i.rc"
        ) &
        pids+=($!)
    done
    cd - >/dev/null || return 1
    wait "${pids[@]}"
}

# failures OUTDIR: "rc: first line of stderr" of each run that did not exit 0.
failures() {
    local f
    for f in "$1"/*.rc; do
        [ "$(cat "$f")" = 0 ] && continue
        printf '%s: %s\n' "$(cat "$f")" "$(head -n 1 "${f%.rc}.err")"
    done
}

# record NAME EXPR: EXPR (Python, on the parsed session.json of NAME as j) printed.
record() {
    "$PYTHON" -c '
import json, sys
j = json.load(open(sys.argv[1]))
v = eval(sys.argv[2], {"j": j})
print(v if isinstance(v, str) else json.dumps(v))' "$STATE/sessions/$1/session.json" "$2"
}

# big_record NAME: 2,000 committed paths in NAME's session.json (what many commits leave):
# reading the record then takes long enough for a run that read it before another saved to
# write over that save, were it read before the session's lock is taken.
big_record() {
    "$PYTHON" - "$STATE/sessions/$1/session.json" <<'PY'
import json, sys
p = sys.argv[1]
j = json.load(open(p))
j["committed"] = [{"path": "old/file-%05d.txt" % i, "ctime_ns": i} for i in range(2000)]
json.dump(j, open(p, "w"))
PY
}

# ---- concurrent unnamed runs in one workspace --------------------------------------------

bad=""
for round in 1 2 3 4 5 6 7 8 9 10; do
    par 16 "$T/plain.$round" -- true
    bad+=$(failures "$T/plain.$round")
done
expect_eq "160 unnamed runs, 16 at a time in one workspace, all start and exit 0" "" "$bad"

cat >"$T/net.yaml" <<'EOF'
version: 1
network:
  rules:
    - {host: api.test, methods: [GET], decision: allow}
EOF
bad=""
for round in 1 2 3; do
    par 25 "$T/net.$round" --policy "$T/net.yaml" -- true
    bad+=$(failures "$T/net.$round")
done
expect_eq "75 networked runs, 25 at a time, all start (one resolv.conf, never rewritten)" "" "$bad"
expect_no_match "... none of them told of a session in use, a missing resolv.conf or a broken pipe" \
    "in use|resolv.conf|Broken pipe" "$bad"

# ---- the CA bundle under concurrent networked runs -----------------------------------------

# Every networked run binds STATE/ca/bundle.pem (the host's roots, then paddock's CA) over
# the distribution's bundle. Many at once: each sees the whole bundle, the file is written
# only when what it holds must change (an old time on it is no reason: each rewrite is a new
# file under runs that bind it), and a torn one (what a crash before its data reached the
# disk leaves) is made whole by the next runs, never bound as it is.
BUNDLE=$STATE/ca/bundle.pem
INSIDE=/etc/ssl/certs/ca-certificates.crt
[ -e "$INSIDE" ] || INSIDE=/run/paddock-ca-bundle.pem
SEEN='stat -c "%i %Y" "$1" && sha256sum <"$1" | cut -c1-64'
# bundle_hash: the hash of what bundle.pem must hold.
bundle_hash() {
    "$PYTHON" - "$STATE/ca/ca.pem" <<'PY'
import hashlib, os, sys
host = "/etc/ssl/certs/ca-certificates.crt"
roots = open(host, "rb").read() if os.path.exists(host) else b""
sep = b"\n" if roots and not roots.endswith(b"\n") else b""
pem = open(sys.argv[1], "rb").read()
print(hashlib.sha256(roots + sep + b"# paddock's CA (TLS interception at the gateway)\n" + pem).hexdigest())
PY
}
# bundle_round NAME: 16 networked runs at once, each printing the inode, time and hash of
# the bundle it sees; sets seen (the distinct "inode time<TAB>hash" lines) and bad (failed
# runs).
bundle_round() {
    par 16 "$T/$1" --policy "$T/net.yaml" -- sh -c "$SEEN" sh "$INSIDE"
    bad=$(failures "$T/$1")
    seen=$(cat "$T/$1"/*.out | paste - - | sort -u)
}
wrun --policy "$T/net.yaml" -- true
want=$(bundle_hash)
touch -d 2000-01-01 "$BUNDLE"
inode=$(stat -c "%i %Y" "$BUNDLE")
bundle_round bundle.old
expect_eq "16 networked runs with an old time on a whole bundle all start" "" "$bad"
expect_eq "... all see that bundle, not rewritten (inode and time $inode)" "$inode	$want" "$seen"
torn_bad=""
for round in 1 2 3 4 5; do
    size=$(stat -c %s "$BUNDLE")
    truncate -s $((size / 2)) "$BUNDLE"
    bundle_round "bundle.torn.$round"
    [ -z "$bad" ] || torn_bad+="round $round: $bad"$'\n'
    # One bundle for all 16 (written once) and whole.
    [ "$(printf '%s\n' "$seen" | wc -l)" = 1 ] && [ "${seen#*	}" = "$want" ] ||
        torn_bad+="round $round saw: $(printf '%s' "$seen" | tr '\n' ' ')"$'\n'
done
expect_eq "5 times a torn bundle then 16 networked runs: all start and see one whole bundle" \
    "" "$torn_bad"
expect_eq "... which is what bundle.pem holds now" "$want" "$(sha256sum <"$BUNDLE" | cut -c1-64)"

# ---- lost updates of session.json ----------------------------------------------------------

wrun --session par -- true
big_record par
ok_runs=0
for round in 1 2 3; do
    par 50 "$T/named.$round" --session par -- true
    ok_runs=$((ok_runs + $(cat "$T/named.$round"/*.rc | grep -c '^0$')))
    others=$(failures "$T/named.$round" | grep -v 'is in use by paddock pid')
    [ -z "$others" ] || diag "unexpected failures: $others"
done
expect_eq "150 parallel runs of one named session: runs counts every run that ran ($ok_runs + 1)" \
    "$((ok_runs + 1))" "$(record par 'j["runs"]')"
expect_eq "... and the commits it recorded are all still there" 2000 \
    "$(record par 'len(j["committed"])')"

# Commits and runs of one session at once: every path a commit reported committed stays
# recorded (a run that read the record before the commit saved would drop it, and the
# other way round). Commits try again while a run holds the session.
wrun --session cr -- sh -c 'for i in $(seq 12); do echo "$i" > "c$i.txt"; done'
big_record cr
mkdir -p "$T/cr"
pids=()
for i in $(seq 12); do
    (
        cd "$WS" || exit 1
        for _ in $(seq 300); do
            HOME="$TEST_HOME" timeout -k 5 120 "$PADDOCK" commit cr "c$i.txt" \
                </dev/null >/dev/null 2>"$T/cr/commit.$i.err"
            rc=$?
            [ $rc -ne 0 ] && grep -q 'is in use by' "$T/cr/commit.$i.err" && continue
            break
        done
        echo $rc >"$T/cr/commit.$i.rc"
    ) &
    pids+=($!)
done
for _ in 1 2 3 4; do
    (
        cd "$WS" || exit 1
        for _ in $(seq 8); do
            HOME="$TEST_HOME" PATH="$SANDBOX_PATH" timeout -k 5 120 "$PADDOCK" run \
                --session cr -- true </dev/null >/dev/null 2>&1
        done
    ) &
    pids+=($!)
done
wait "${pids[@]}"
committed_ok=$(for i in $(seq 12); do [ "$(cat "$T/cr/commit.$i.rc")" = 0 ] && echo "c$i.txt"; done | sort)
expect_eq "12 commits of one file each, while runs of the session go on, all succeed" 12 \
    "$(printf '%s\n' "$committed_ok" | grep -c .)"
expect_eq "... and every committed path stays recorded in the session" "$committed_ok" \
    "$(record cr '"\n".join(sorted(c["path"] for c in j["committed"] if c["path"].startswith("c")))')"

# ---- kills around the session claim --------------------------------------------------------

# Spares are recycled from sessions another workspace's runs retired: a kill between the
# claim of one and the writing of the new session's record must never leave the name bound
# to the other workspace's session.
WA=$T/wa
WB=$T/wb
mkdir -p "$WA" "$WB"
echo a >"$WA/a.txt"
echo b >"$WB/b.txt"
arun() { (cd "$WA" && HOME="$TEST_HOME" PATH="$SANDBOX_PATH" timeout -k 5 60 "$PADDOCK" run -- true </dev/null >/dev/null 2>&1); }
for _ in 1 2 3; do arun; done

# check_name NAME: a run of NAME from $WB without --workspace must work in $WB, never in
# $WA (appends what went wrong to $wrong).
wrong=""
check_name() {
    local name="$1" out
    [ -d "$STATE/sessions/$name" ] || return 0
    out=$(cd "$WB" && HOME="$TEST_HOME" PATH="$SANDBOX_PATH" timeout -k 5 60 "$PADDOCK" run \
        --session "$name" -- pwd </dev/null 2>"$T/.kill.err")
    if [ "$out" = "$WA" ] || grep -q -- "$WA" "$T/.kill.err"; then
        wrong+="$name: ran in $out: $(head -n 1 "$T/.kill.err")"$'\n'
    fi
}

# kill_at NAME POINT: `paddock run --session NAME -- true` from $WB, killed by itself at a
# named point (PADDOCK_TEST_CRASH_AT); then NAME is checked.
kills=0
kill_at() {
    (cd "$WB" && exec env HOME="$TEST_HOME" PATH="$SANDBOX_PATH" PADDOCK_TEST_CRASH_AT="$2" \
        timeout -k 5 60 "$PADDOCK" run --session "$1" -- true </dev/null >/dev/null 2>&1)
    [ $? -eq 137 ] && kills=$((kills + 1))
    check_name "$1"
    arun # recycles a session of $WA into a spare for the next kill
}

# kill_near NAME: the same run, killed from outside as soon as its trace says the sandbox is
# cloned (the session is claimed right after), after a spin of a random length: the kill
# lands anywhere around the claim. Works with any paddock (no hook needed).
kill_near() {
    local fifo="$T/.trace.fifo" pid line fd spin
    rm -f "$fifo"
    mkfifo "$fifo"
    (cd "$WB" && exec env HOME="$TEST_HOME" PATH="$SANDBOX_PATH" PADDOCK_TRACE=1 \
        timeout -k 5 60 "$PADDOCK" run --session "$1" -- true </dev/null >/dev/null 2>"$fifo") &
    pid=$!
    exec {fd}<"$fifo"
    while IFS= read -r -t 30 -u "$fd" line; do
        case "$line" in
        *" cloned") ;;
        *) continue ;;
        esac
        for ((spin = RANDOM % 400; spin > 0; spin--)); do :; done
        # "paddock: trace: +TIMEus PID cloned": the supervisor's pid
        read -r _ _ _ victim _ <<<"$line"
        kill -KILL "$victim" 2>/dev/null && kills=$((kills + 1))
        break
    done
    exec {fd}<&-
    { wait "$pid"; } 2>/dev/null
    check_name "$1"
    arun
}

points=(session-claimed session-written session-bound)
for i in $(seq 150); do
    kill_at "hook$i" "${points[$((i % 3))]}"
done
for i in $(seq 150); do
    kill_near "kill$i"
done
expect_eq "300 kills around the session claim never bind a name to $WA" "" "$wrong"
diag "$kills of the 300 runs were killed before they ended"

pdk sessions --json
expect_eq "no session of a name given in $WB belongs to $WA" "[]" \
    "$(json_get "$OUT" '[s["id"] for s in j if s["id"].startswith(("hook", "kill")) and s["workspace"] != "'"$WB"'"]')"
expect_eq "no half-made session is listed" "" "$(printf '%s\n' "$ERR" | grep -i 'incomplete')"

# What the killed runs left is collected: after a few more runs no half-made session
# directory of a dead run is left.
for _ in 1 2 3 4; do arun; done
left=$(ls -A "$STATE/sessions" | grep -c '^\.claim\.')
expect_eq "half-made session directories of killed runs are collected" 0 "$left"
