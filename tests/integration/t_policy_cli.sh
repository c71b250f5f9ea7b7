#!/usr/bin/env bash
# t_policy_cli: `paddock policy check` says what the command rules decide and which rule
# decided (text and JSON); `paddock policy lint` lists every problem of a file at once and
# exits 1; examples that fail make the policy invalid; `paddock policy default` prints a
# policy that lints clean.
. "$(dirname "$0")/lib.sh"

cat >"$T/p.yaml" <<'EOF'
version: 1
commands:
  default: allow
  rules:
    - match: [git, push]
      decision: ask
      reason: "pushing publishes code"
    - match: [lark-cli, base, [+record-delete, +table-delete, +field-delete]]
      decision: ask
    - match: [rm, "-rf", "/"]
      decision: deny
      reason: never
    - match: [curl]
      decision: confine
  examples:
    - {command: "git push origin main", decision: ask}
    - {command: "git status", decision: allow}
EOF

pdk policy check --policy "$T/p.yaml" -- git push origin main
expect_eq "check: exit 0" 0 "$RC"
expect_eq "check: the decision, the rule (with its line) and the reason" \
    "ask: rule 1 (line 5: [git, push] ask): pushing publishes code" "$OUT"

pdk policy check --policy "$T/p.yaml" --json -- /usr/bin/lark-cli base +table-delete --id t1
expect_eq "check --json: decision, rule index and line" "ask 1 8" \
    "$(json_get "$OUT" '"%s %s %s" % (j["decision"], j["rule"], j["line"])')"

pdk policy check --policy "$T/p.yaml" --json -- bash -lc 'cd /tmp && curl -s x | sh'
expect_eq "check: a shell wrapper is judged command by command (curl is confined)" \
    "confine 3 True" \
    "$(json_get "$OUT" '"%s %s %s" % (j["decision"], j["rule"], j["through_shell"])')"

pdk policy check --policy "$T/p.yaml" --json -- sh -c 'git status; rm -rf /'
expect_eq "check: the strictest command of a script wins" "deny never" \
    "$(json_get "$OUT" '"%s %s" % (j["decision"], j["reason"])')"

pdk policy check --policy "$T/p.yaml" --json -- sh -c 'eval "$X"'
expect_eq "check: a script paddock cannot split falls to ask" "ask None True" \
    "$(json_get "$OUT" '"%s %s %s" % (j["decision"], j["rule"], j["unreducible"])')"

pdk policy check --policy "$T/p.yaml" -- ls -l
expect_eq "check: no rule matches, the default decides" "allow: the default for commands" "$OUT"

pdk policy check --policy "$T/p.yaml"
expect_eq "check without a command: usage error (exit 2)" 2 "$RC"
expect_match "... that says what is missing" "no command given" "$ERR"

pdk policy lint "$T/p.yaml"
expect_eq "lint: a valid file exits 0" "0 $T/p.yaml: ok" "$RC $OUT"

cat >"$T/bad.yaml" <<'EOF'
version: 1
commands:
  default: sometimes
  rules:
    - {match: [], decision: ask}
    - {match: [git], decision: maybe}
  examples:
    - {command: "git push", decision: deny}
approvals:
  timeout: forever
EOF
pdk policy lint "$T/bad.yaml"
expect_eq "lint: an invalid file exits 1" 1 "$RC"
expect_eq "lint: every problem, one a line" 5 "$(printf '%s\n' "$OUT" | grep -c "^$T/bad.yaml:")"
expect_match "lint: a bad decision names the valid ones" \
    "bad.yaml:3:12: commands.default: unknown decision \"sometimes\" \(use allow, confine, ask or deny\)" \
    "$OUT"
expect_match "lint: a failing example names the rule that decided" \
    "bad.yaml:8:7: commands.examples\[0\]: \"git push\" is decided allow by the default \(sometimes|allow\)" \
    "$OUT"

pdk policy lint --json "$T/bad.yaml"
expect_eq "lint --json: ok false and the problems with positions" "False 5 3 12" \
    "$(json_get "$OUT" '"%s %d %d %d" % (j["ok"], len(j["problems"]), j["problems"][0]["line"], j["problems"][0]["column"])')"

pdk policy lint "$T/missing.yaml"
expect_eq "lint: a missing file exits 1" 1 "$RC"
expect_match "... naming the file" "missing.yaml" "$ERR"

pdk policy check --policy "$T/bad.yaml" -- ls
expect_eq "check with an invalid policy exits 1" 1 "$RC"
expect_eq "... listing every problem on stderr" 5 "$(printf '%s\n' "$ERR" | grep -c "bad.yaml:")"

pdk run --policy "$T/bad.yaml" -- true
expect_eq "run refuses an invalid policy (exit 125)" 125 "$RC"
expect_match "... with the first problem" "bad.yaml:3:12" "$ERR"

pdk policy default
expect_eq "default: exit 0" 0 "$RC"
printf '%s\n' "$OUT" >"$T/default.yaml"
pdk policy lint "$T/default.yaml"
expect_eq "the default policy lints clean" 0 "$RC"

pdk policy frobnicate
expect_eq "an unknown subcommand is a usage error" 2 "$RC"
pdk policy check --help
expect_match "policy check --help prints the usage" "usage: paddock policy check" "$OUT"


# The example policies in examples/ are valid, their examples included.
for f in "$(dirname "$0")"/../../examples/*.yaml; do
    pdk policy lint "$f"
    expect_eq "examples/$(basename "$f") lints clean" 0 "$RC"
done

# Importing sandbox-runtime settings: what maps is carried over, the rest is said.
cat >"$T/srt.json" <<'JSON'
{
  "network": {"allowedDomains": ["github.com", "*.npmjs.org", "git.example:8443", "bad host"],
              "deniedDomains": ["evil.example"], "allowLocalBinding": true},
  "credentials": {"envVars": []},
  "filesystem": {
    "denyRead": ["~/.ssh", "/etc/secret", "relative/dir"],
    "allowRead": ["~/.gitconfig"],
    "allowWrite": [".", "/tmp", "build"],
    "denyWrite": [".env", "./secrets/", ".", "/etc"]
  }
}
JSON
pdk policy import --from srt "$T/srt.json"
expect_eq "import: exit 0" 0 "$RC"
printf '%s\n' "$OUT" >"$T/imported.yaml"
pdk policy lint "$T/imported.yaml"
expect_eq "... a policy that lints clean" 0 "$RC"
pdk policy import --from srt "$T/srt.json"
expect_match "denyRead becomes read_deny" 'read_deny:
    - "~/.ssh"
    - "/etc/secret"' "$OUT"
expect_match "denyWrite in the workspace becomes protect" 'protect:
    - ".env"
    - "secrets/"' "$OUT"
expect_match "allowWrite outside the workspace becomes write" 'write:
    - "/tmp"' "$OUT"
expect_eq "allowedDomains and deniedDomains become network rules" '  rules:
    - {host: "evil.example", decision: deny}
    - {host: "github.com", decision: allow}
    - {host: "*.npmjs.org", decision: allow}
    - {host: "git.example", port: 8443, decision: allow}' "$(printf '%s\n' "$OUT" | sed -n '/^  rules:/,$p')"
expect_match "what cannot be carried over is said on stderr (a bad host)" \
    "not carried over: network.allowedDomains bad host: a host has only letters" "$ERR"
expect_match "... (a network setting without counterpart)" \
    "not carried over: network.allowLocalBinding has no counterpart" "$ERR"
expect_match "... (credentials)" \
    "not carried over: credentials \(this version of paddock has no credentials section yet\)" "$ERR"
expect_match "... (a relative denyRead)" "not carried over: filesystem.denyRead relative/dir" "$ERR"
expect_match "... and kept as comments in the policy" "#   was: credentials: " "$OUT"

# The network rules on a request.
cat >"$T/net.yaml" <<'YAML'
version: 1
network:
  rules:
    - {host: api.example.com, methods: [GET], path: /v1/**, decision: allow}
    - {host: api.example.com, methods: [POST], decision: ask, reason: "writes need a human"}
YAML
pdk policy check --policy "$T/net.yaml" --url "https://API.example.com/v1/items?limit=5"
expect_eq "policy check --url: allowed by a rule" \
    "allow: network rule 1 (line 4: api.example.com GET /v1/** allow): allowed by a network rule" "$OUT"
pdk policy check --policy "$T/net.yaml" --json --url https://api.example.com/v1/x --method post
expect_eq "... --method, --json: decision, rule, reason" "ask 1 writes need a human" \
    "$(json_get "$OUT" '"%s %s %s" % (j["decision"], j["rule"], j["reason"])')"
pdk policy check --policy "$T/net.yaml" --url https://api.example.com/v2/x
expect_match "... the default for what no rule matches" "^deny: no network rule allows it" "$OUT"
pdk policy check --policy "$T/net.yaml" --url 'https://api.example.com/v1/a%2f..%2f..%2fadmin'
expect_eq "... a path hiding dot segments is refused (exit 2)" 2 "$RC"
expect_match "... saying why" "hides \"\.\" or \"\.\.\" segments" "$ERR"
pdk policy check --url ftp://api.example.com/
expect_eq "... a non-http URL is a usage error" 2 "$RC"
pdk policy import --from srt "$T/srt.json" --output "$T/out.yaml"
expect_eq "--output writes the file" "0 yes" "$RC $([ -s "$T/out.yaml" ] && echo yes)"
printf '[1' >"$T/bad.json"
pdk policy import --from srt "$T/bad.json"
expect_eq "import: bad JSON is refused (exit 1)" 1 "$RC"
expect_match "... naming the line and column" "bad.json:1:[0-9]+: not JSON" "$ERR"
pdk policy import --from docker "$T/srt.json"
expect_eq "an unknown --from is a usage error" 2 "$RC"
