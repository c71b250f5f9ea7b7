#!/usr/bin/env bash
# t_agent_home: persistent homes (home.persist), an agent's own state across runs. $HOME
# inside is STATE/homes/NAME: what a run writes there is there at the next run, in any
# session, and never in the workspace's review; the executable configuration in it (shell
# start-up files, .gitconfig, ~/.config/git/, Claude Code's settings, commands and agents,
# Codex's config.toml) stays read-only, missing or not, and cannot be moved aside and made
# anew; what the human puts there on the host is what the agent sees; a symlink planted in
# its place stops the run; confined runs get a fresh home, the readonly profile a read-only
# one; two runs share one home at once; a credential's placeholder is kept with the home
# (the same at every run with it, another elsewhere, new when its secret changes). And a
# `write` path that does not exist stops the run (it was a warning, and what the sandbox
# wrote there was lost).
. "$(dirname "$0")/lib.sh"
need_userns

write_policy "$T/agent.yaml" 'version: 1
home:
  persist: agent'
write_policy "$T/other.yaml" 'version: 1
home:
  persist: other-agent'
H=$STATE/homes/agent

# hrun POLICY SCRIPT: sh -c SCRIPT in a sandbox on $WS with POLICY (RC, OUT, ERR).
hrun() {
    wrun --policy "$1" -- sh -c "$2"
}

# ---- state kept ---------------------------------------------------------------------------
hrun "$T/agent.yaml" 'mkdir -p ~/.agent/sessions && echo "first run" > ~/.agent/sessions/one &&
    echo "{\"onboarded\": true}" > ~/.agent.json && echo ok'
expect_eq "a run with a persistent home writes its state there" "0 ok" "$RC $OUT"
expect_eq "... which is in STATE/homes/NAME on the host" "first run" \
    "$(cat "$H/.agent/sessions/one" 2>/dev/null)"
expect_match "... and no change of the workspace's session" 'no changes' "$(report_line)"
hrun "$T/agent.yaml" 'cat ~/.agent/sessions/one ~/.agent.json'
expect_eq "the next run (another session) finds it" '0 first run
{"onboarded": true}' "$RC $OUT"
hrun "$T/other.yaml" 'cat ~/.agent/sessions/one 2>&1 || echo missing'
expect_match "another persistent home does not have it" 'missing$' "$OUT"
wrun -- sh -c 'cat ~/.agent/sessions/one 2>/dev/null || echo missing'
expect_eq "... nor a run without one (a fresh home)" missing "$OUT"
expect_eq "the home and what the sandbox made are the user's (their real owner)" \
    "$(id -u) $(id -u) 700" "$(stat -c %u "$H") $(stat -c %u "$H/.agent/sessions/one") $(stat -c %a "$H")"

# ---- executable configuration read-only -----------------------------------------------------
for f in .bashrc .profile .gitconfig .config/git/config .claude/settings.json \
    .claude/commands/evil.md .claude/agents/evil.md .codex/config.toml; do
    hrun "$T/agent.yaml" "echo planted > ~/$f && echo written"
    expect_match "~/$f cannot be written (made empty when missing, read-only)" \
        "(Read-only file system|Permission denied)" "$ERR"
done
expect_eq "... none of them changed on the host" "" \
    "$(cat "$H/.bashrc" "$H/.gitconfig" "$H/.claude/settings.json" "$H/.codex/config.toml" 2>&1)$(find "$H/.claude/commands" "$H/.claude/agents" "$H/.config/git" -mindepth 1)"
hrun "$T/agent.yaml" 'mv ~/.claude ~/.claude-aside 2>&1; mv ~/.config ~/.config-aside 2>&1;
    rm -rf ~/.claude 2>&1; mkdir -p ~/.claude/projects/p && echo state > ~/.claude/projects/p/x &&
    echo written'
expect_match "their directories cannot be moved aside or removed (to make them anew)" \
    "cannot move .*\.claude.*busy.*cannot move .*\.config.*busy" "$(printf '%s' "$OUT" | tr '\n' ' ')"
expect_match "... while the rest of ~/.claude is the agent's" 'written$' "$OUT"
expect_eq "... and kept" state "$(cat "$H/.claude/projects/p/x" 2>/dev/null)"

# What the human puts there on the host is what the agent sees (and cannot change).
printf '{"permissions": {"deny": ["Bash(rm:*)"]}}\n' >"$H/.claude/settings.json"
hrun "$T/agent.yaml" 'cat ~/.claude/settings.json; echo "{}" > ~/.claude/settings.json 2>/dev/null || echo refused'
expect_eq "settings the human wrote on the host are seen inside, read-only" \
    '{"permissions": {"deny": ["Bash(rm:*)"]}}
refused' "$OUT"

# A symlink where the configuration is kept (planted on the host: inside, the directory
# is a mount point and cannot be replaced) stops the run before anything runs.
mv "$H/.codex" "$T/codex-aside"
mkdir "$T/elsewhere"
ln -s "$T/elsewhere" "$H/.codex"
hrun "$T/agent.yaml" 'echo ran'
expect_eq "a symlink in place of ~/.codex: the run stops (125), nothing ran" "125 " "$RC $OUT"
expect_match "... saying what and how to fix it" \
    "persistent home .*/homes/agent: \.codex is a symlink, where paddock keeps an agent's configuration read-only \(remove it: rm .*/homes/agent/\.codex\)" \
    "$ERR"
expect_eq "... and nothing was made through it" "" "$(ls -A "$T/elsewhere")"
rm "$H/.codex"
mv "$T/codex-aside" "$H/.codex"

# ---- confined and readonly runs ---------------------------------------------------------------
write_policy "$T/confine.yaml" 'version: 1
home:
  persist: agent
commands:
  rules:
    - match: [sh, -c, "*confined*"]
      decision: confine'
hrun "$T/confine.yaml" ': confined; cat ~/.agent.json 2>/dev/null || echo fresh; echo x > ~/confined-write'
expect_eq "a confined run gets a fresh home (its writes are thrown away)" "0 fresh" "$RC $OUT"
expect_eq "... nothing of it in the persistent home" "" "$(ls "$H/confined-write" 2>/dev/null)"
wrun --profile readonly --policy "$T/agent.yaml" -- sh -c 'cat ~/.agent.json; echo x > ~/ro-write || echo refused'
expect_eq "the readonly profile: the persistent home is read, not written" \
    '{"onboarded": true}
refused' "$OUT"

# ---- two runs at once ---------------------------------------------------------------------------
cd "$WS" || bail_out "cd $WS"
for i in 1 2; do
    HOME="$TEST_HOME" PATH="$SANDBOX_PATH" timeout -k 5 60 "$PADDOCK" run --policy "$T/agent.yaml" -- \
        sh -c "echo $i > ~/.agent/sessions/run$i" </dev/null >"$T/par$i.out" 2>&1 &
    eval "par$i=\$!"
done
wait "$par1"
rc1=$?
wait "$par2"
rc2=$?
cd - >/dev/null || true
expect_eq "two runs of one persistent home at once both work" "0 0 1 2" \
    "$rc1 $rc2 $(cat "$H/.agent/sessions/run1" "$H/.agent/sessions/run2" 2>/dev/null | paste -sd' ')"

# ---- placeholders kept with the home --------------------------------------------------------
# A credential's placeholder is the same at every run with one persistent home (so that what
# an agent approved by its key holds: Claude Code approves a key by its last 20 characters),
# another with another home or none; kept in the state dir, never in the home; made anew
# when its secret gets another value or is removed, or when the home is made anew.
set_secret api_key "first-value-$RANDOM"
cred='network:
  default: deny
  rules:
    - {host: api.example.test, decision: allow}
credentials:
  - name: api
    provider: static
    value: {secret: api_key}
    hosts: [api.example.test]
    inject: {header: x-api-key, value: "{token}"}
    placeholder: {env: API_KEY, prefix: sk-test-}'
write_policy "$T/cred.yaml" "version: 1
home:
  persist: agent
$cred"
write_policy "$T/cred-other.yaml" "version: 1
home:
  persist: other-agent
$cred"
write_policy "$T/cred-none.yaml" "version: 1
$cred"
# key POLICY: the placeholder a run with POLICY sees, in KEY.
key() {
    wrun --policy "$1" -- sh -c 'echo "$API_KEY"'
    KEY=$OUT
}
key "$T/cred.yaml"
p1=$KEY
expect_match "with a persistent home, a credential's placeholder: its prefix and 48 random hex digits" \
    '^sk-test-[0-9a-f]{48}$' "$p1"
key "$T/cred.yaml"
expect_eq "... the same at the next run with that home (another session)" "$p1" "$KEY"
key "$T/cred-other.yaml"
expect_ne "... another with another home" "$p1" "$KEY"
key "$T/cred-none.yaml"
none1=$KEY
key "$T/cred-none.yaml"
expect_eq "... and without one, new at every run" "no no" \
    "$([ "$none1" = "$p1" ] && echo yes || echo no) $([ "$KEY" = "$none1" ] && echo yes || echo no)"
expect_eq "... kept in the state dir, which the sandbox never sees (0600), never in the home" \
    "600 0" "$(stat -c %a "$STATE/home-placeholders/agent.json") $(grep -rlF "${p1#sk-test-}" "$STATE/homes" | wc -l)"
wrun --policy "$T/cred.yaml" -- sh -c 'ls ~/.. "$PADDOCK_STATE_DIR" 2>&1; cat '"$STATE"'/home-placeholders/agent.json 2>&1'
expect_eq "... (not even under the state dir's path inside)" 0 "$(printf '%s' "$OUT" | grep -c "${p1#sk-test-}")"
wrun --policy "$T/cred.yaml" -- true "$p1"
pdk audit --json
expect_eq "... and redacted from the audit log like any placeholder (here in an argv)" "0 yes" \
    "$(printf '%s' "$OUT" | grep -c "${p1#sk-test-}") $(printf '%s' "$OUT" | grep -q '"true",' && echo yes)"
# Two first runs of a home at once agree on it.
write_policy "$T/cred-race.yaml" "version: 1
home:
  persist: racer
$cred"
cd "$WS" || bail_out "cd $WS"
for i in 1 2; do
    HOME="$TEST_HOME" PATH="$SANDBOX_PATH" timeout -k 5 60 "$PADDOCK" run --policy "$T/cred-race.yaml" -- \
        sh -c 'echo "$API_KEY"' </dev/null >"$T/race$i.out" 2>/dev/null &
    eval "race$i=\$!"
done
wait "$race1"
wait "$race2"
cd - >/dev/null || true
expect_eq "two first runs of a home at once see one placeholder" "$(cat "$T/race1.out")" "$(cat "$T/race2.out")"
# The secret set to another value, or removed: made anew. The same value again: kept.
printf '%s\n' "first-value-again" | HOME="$TEST_HOME" "$PADDOCK" secret set api_key >"$T/set.out"
key "$T/cred.yaml"
p2=$KEY
expect_ne "the secret set to another value: a new placeholder" "$p1" "$p2"
expect_match "... which paddock secret set says" 'placeholders? kept with persistent homes made anew' "$(cat "$T/set.out")"
printf '%s\n' "first-value-again" | HOME="$TEST_HOME" "$PADDOCK" secret set api_key >/dev/null
key "$T/cred.yaml"
expect_eq "... set to the same value again: kept" "$p2" "$KEY"
HOME="$TEST_HOME" "$PADDOCK" secret rm api_key >/dev/null
set_secret api_key "first-value-again"
key "$T/cred.yaml"
expect_ne "... removed (and set again): a new one" "$p2" "$KEY"
p3=$KEY
mv "$H" "$T/home-aside"
key "$T/cred.yaml"
expect_ne "the home's directory made anew: a new one" "$p3" "$KEY"
rm -rf "$H"
mv "$T/home-aside" "$H"
# Under the readonly profile nothing is written: a kept one is used, none is made.
rm -f "$STATE/home-placeholders/agent.json"
wrun --profile readonly --policy "$T/cred.yaml" -- sh -c 'echo "$API_KEY"'
expect_eq "the readonly profile makes none" "0 no" \
    "$RC $([ -e "$STATE/home-placeholders/agent.json" ] && echo yes || echo no)"
key "$T/cred.yaml"
p4=$KEY
wrun --profile readonly --policy "$T/cred.yaml" -- sh -c 'echo "$API_KEY"'
expect_eq "... and uses the one kept" "$p4" "$OUT"
# A damaged file stops the run, naming it and the fix.
printf 'not json' >"$STATE/home-placeholders/agent.json"
key "$T/cred.yaml"
expect_match "a damaged file of kept placeholders: the run stops, saying which and what to do" \
    "^paddock: .*/home-placeholders/agent.json is damaged \(remove it: its credentials get new placeholders\)$" "$ERR"
expect_eq "... (exit 125, nothing ran)" "125 " "$RC $OUT"
rm -f "$STATE/home-placeholders/agent.json"

# ---- a write path that does not exist ---------------------------------------------------------
write_policy "$T/missing-write.yaml" "version: 1
filesystem:
  write: [$T/no-such-dir]"
wrun --policy "$T/missing-write.yaml" -- sh -c 'echo ran'
expect_eq "a write path that does not exist: the run stops (125), nothing ran" "125 " "$RC $OUT"
expect_match "... in one line naming it and the fix" \
    "^paddock: filesystem.write: $T/no-such-dir: No such file or directory \(create it first, e.g. mkdir -p $T/no-such-dir, or remove it from the policy; for an agent's own state see home.persist\)$" \
    "$ERR"
expect_eq "... and nothing was made there" "" "$(ls -d "$T/no-such-dir" 2>/dev/null)"

pdk policy lint "$T/agent.yaml"
expect_eq "policy lint accepts home.persist" 0 "$RC"
write_policy "$T/bad.yaml" 'version: 1
home:
  persist: ../escape'
pdk policy lint "$T/bad.yaml"
expect_match "... and refuses a name that would leave STATE/homes" \
    'bad.yaml:3:12: home.persist: "../escape" is not a home name' "$OUT$ERR"
expect_eq "... nothing made for it" "" "$(ls -A "$STATE/homes" | grep -v -e '^agent$' -e '^other-agent$' -e '^racer$')"
