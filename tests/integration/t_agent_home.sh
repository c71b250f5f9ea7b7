#!/usr/bin/env bash
# t_agent_home: persistent homes (home.persist), an agent's own state across runs. $HOME
# inside is STATE/homes/NAME: what a run writes there is there at the next run, in any
# session, and never in the workspace's review; the executable configuration in it (shell
# start-up files, .gitconfig, ~/.config/git/, Claude Code's settings, commands and agents,
# Codex's config.toml) stays read-only, missing or not, and cannot be moved aside and made
# anew; what the human puts there on the host is what the agent sees; a symlink planted in
# its place stops the run; confined runs get a fresh home, the readonly profile a read-only
# one; two runs share one home at once. And a `write` path that does not exist stops the
# run (it was a warning, and what the sandbox wrote there was lost).
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
expect_eq "... nothing made for it" "" "$(ls -A "$STATE/homes" | grep -v -e '^agent$' -e '^other-agent$')"
