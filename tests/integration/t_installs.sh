#!/usr/bin/env bash
# t_installs: package installs under the shipped examples/coding-agent.yaml. `npm install` of a
# package from a local registry (tests/fixtures/npm_registry.py: TLS on the host's loopback,
# its name mapped with `resolve`, its CA as upstream_ca) goes through the gateway and works,
# with --session too; what it wrote is in paddock diff; the package's postinstall script ran
# confined: its network attempts (direct and through the proxy) failed and never reached the
# registry, while an unconfined process reaches it; `npm ci` works on the same session; and
# the policy's own examples (installers allowed, their scripts confined) hold.
. "$(dirname "$0")/lib.sh"
need_userns
command -v npm >/dev/null && command -v node >/dev/null || skip_all_optional "npm and node are not installed"
command -v openssl >/dev/null || skip_all "openssl is not installed"

feishu_certs registry.npmjs.org
fifo=$T/reg.fifo
mkfifo "$fifo"
"$PYTHON" "$PADDOCK_TOP/tests/fixtures/npm_registry.py" --tls "$T/fs.pem" "$T/fs.key" \
    --log "$T/reg.log" >"$fifo" &
track_pid $!
IFS= read -r -t 30 REG_PORT <"$fifo"
[ -n "$REG_PORT" ] || bail_out "the registry fixture did not start"

# The shipped policy, its network section (the last) pointed at the fixture.
CODING=$PADDOCK_TOP/examples/coding-agent.yaml
[ "$(grep '^[a-z]' "$CODING" | tail -n 1)" = "network:" ] ||
    bail_out "the network section is not the last of $CODING"
cp "$CODING" "$T/coding.yaml"
printf '  resolve: {"registry.npmjs.org:443": "127.0.0.1:%s"}\n  upstream_ca: [%s]\n' \
    "$REG_PORT" "$T/ca.pem" >>"$T/coding.yaml"
pdk policy lint "$T/coding.yaml"
expect_eq "the shipped policy, pointed at the fixture, loads (its examples hold)" 0 "$RC"

# npm 11 runs a dependency's install scripts only when the project allows them.
cat >"$WS/package.json" <<'EOF'
{"name": "ws", "version": "1.0.0", "allowScripts": {"paddock-fixture-postinstall": true}}
EOF
wrun --policy "$T/coding.yaml" --session inst -- npm install paddock-fixture-postinstall
expect_eq "npm install through the gateway succeeds, with --session" 0 "$RC"
expect_match "... and says what it added" "added 2 packages" "$OUT"

reg_paths() {
    "$PYTHON" -c '
import json, sys
print(" ".join(json.loads(l)["method"] + ":" + json.loads(l)["path"]
               for l in open(sys.argv[1]) if l.strip()))' "$T/reg.log"
}
paths=$(reg_paths)
expect_match "the registry served the package document" "GET:/paddock-fixture-postinstall( |$)" "$paths"
expect_match "... and both tarballs" \
    "GET:/paddock-fixture-hello/-/paddock-fixture-hello-1.0.0.tgz.*|GET:/paddock-fixture-postinstall/-/" \
    "$paths"
expect_no_match "the postinstall script's requests never reached it" "postinstall-was-here" "$paths"

pdk diff inst
expect_match "paddock diff shows the installed package" \
    "node_modules/paddock-fixture-postinstall/package.json" "$OUT"
expect_match "... its dependency" "node_modules/paddock-fixture-hello/index.js" "$OUT"
expect_match "... and the lock file" "package-lock.json" "$OUT"
expect_match "... and what the postinstall script wrote" "postinstall-result.txt" "$OUT"

wrun --policy "$T/coding.yaml" --session inst -- cat postinstall-result.txt
result=$OUT
expect_eq "the postinstall script ran" 0 "$RC"
expect_match "... its connection through the proxy was refused" '"proxy":"error ECONNREFUSED"' \
    "$result"
expect_match "... and so was its direct one (its name lookup included)" '"direct":"error [A-Z_]+"' \
    "$result"

pdk audit --json
expect_match "the audit log has the script's exec as confined" \
    '"argv":\["sh","-c","node postinstall.js"\][^}]*"decision":"confine"' "$OUT"
expect_match "... and its refused connections" '"kind":"connect.refused"' "$OUT"

# Not vacuous: an unconfined process of the same policy reaches the registry.
cat >"$WS/control.js" <<'EOF'
require('https').get('https://registry.npmjs.org/-/control', { agent: false }, r => {
  console.log('status', r.statusCode);
  process.exit(0);
}).on('error', e => { console.log('error', e.code); process.exit(0); });
EOF
wrun --policy "$T/coding.yaml" --session inst -- node control.js
expect_eq "an unconfined process reaches the registry through the gateway" "status 404" "$OUT"
expect_match "... which logged it" "GET:/-/control" "$(reg_paths)"

# npm ci on the same session: node_modules made again from the lock file.
wrun --policy "$T/coding.yaml" --session inst -- npm ci
expect_eq "npm ci works too" 0 "$RC"
expect_no_match "... and its postinstall script reached nothing either" "postinstall-was-here" \
    "$(reg_paths)"

# What the policy decides, as the shell and npm would run it.
check_decision() {
    local want=$1 under=$2
    shift 2
    if [ -n "$under" ]; then
        pdk policy check --policy "$CODING" --under "$under" -- "$@"
    else
        pdk policy check --policy "$CODING" -- "$@"
    fi
    expect_match "policy check: $* ${under:+(under $under) }is $want" "^$want" "$OUT"
}
check_decision allow "" npm install left-pad
check_decision allow "" npm ci
check_decision allow "" npx prettier --check .
check_decision allow "" yarn add left-pad
check_decision allow "" pnpm install
check_decision allow "" pip install requests
check_decision allow "" python3 -m pip install requests
check_decision allow "" uv pip install requests
check_decision confine "npm install" sh -c "node install.js"
check_decision confine "npm --prefix . install" sh -c "node install.js"
check_decision confine "npx prettier" sh -c prettier
check_decision confine "yarn install" node-gyp rebuild
check_decision confine "pnpm add x" sh -c "node postinstall.js"
check_decision confine "pip install ." python3 setup.py bdist_wheel
check_decision confine "python3 -I -m pip install ." python3 setup.py egg_info
check_decision confine "uv pip install ." python3 -c "import setuptools"
check_decision allow "pip install ." python3 -m pip install setuptools
check_decision allow "npm test" sh -c jest
