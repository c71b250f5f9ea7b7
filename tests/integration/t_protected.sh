#!/usr/bin/env bash
# t_protected: what runs later on the host does not land with a plain commit, wherever it
# lies: a nested repository's .git/config (a core.fsmonitor) and hooks, a submodule's
# hooks, the hooks under the core.hooksPath the real configuration names (husky),
# .claude/settings.local.json, .mcp.json one level down, .envrc, .gitmodules; in a home
# that is the workspace, ~/.claude/settings.json, ~/.codex/config.toml and ~/.config/git/;
# in a home directory made writable, the agents' executable configuration stays read-only
# (and a writable bind where it could be created is refused). Directories given set-gid,
# sticky or world-writable bits show in diff and are refused by commit. Nothing planted
# is ever run on the host: the test reads the files, it never runs git in them.
. "$(dirname "$0")/lib.sh"
need_userns
command -v git >/dev/null || skip_all "git is not installed"

export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_CEILING_DIRECTORIES="$T"
git -C "$WS" init -q .
git -C "$WS" config core.hooksPath tools/githooks
mkdir -p "$WS/sub" "$WS/tools/githooks" "$WS/.git/modules/m/hooks" "$WS/shared"
git -C "$WS/sub" init -q .
printf '[core]\n\tbare = false\n' >"$WS/.git/modules/m/config"
printf 'v1\n' >"$WS/ok.txt"

cat >"$WS/plant.sh" <<EOF
set -e
printf '[core]\\n\\tfsmonitor = "touch $T/pwned"\\n' >>sub/.git/config
printf '#!/bin/sh\\ntouch $T/pwned\\n' >sub/.git/hooks/pre-commit
printf '#!/bin/sh\\ntouch $T/pwned\\n' >.git/modules/m/hooks/post-checkout
printf '#!/bin/sh\\ntouch $T/pwned\\n' >tools/githooks/pre-commit
mkdir -p .claude pkg .husky
printf '{"hooks": {}}\\n' >.claude/settings.local.json
printf '{"mcpServers": {}}\\n' >pkg/.mcp.json
printf 'touch $T/pwned\\n' >pkg/.envrc
printf '[submodule "m"]\\n\\tpath = m\\n' >.gitmodules
printf 'touch $T/pwned\\n' >.husky/pre-commit
mkdir -m 1777 drop
chmod 2775 shared
printf 'v2\\n' >ok.txt
EOF
wrun --session planted -- sh ./plant.sh
expect_eq "the planting run exits 0" 0 "$RC"

pdk diff planted
expect_match "diff shows a new world-writable sticky directory" \
    'new directory drop/ mode 041777 \(sticky, world-writable\)' "$OUT"
expect_match "diff shows a directory that becomes set-gid" \
    'directory shared/ mode 040755 -> 042775 \(set-group-ID\)' "$OUT"
pdk diff planted --stat
expect_match "diff --stat lists the directories too" 'drop/ +\| +0' "$OUT"

pdk commit planted
expect_eq "a plain commit is refused (exit 1)" 1 "$RC"
for path in sub/.git/config sub/.git/hooks/pre-commit .git/modules/m/hooks/post-checkout \
    tools/githooks/pre-commit .claude/settings.local.json pkg/.mcp.json pkg/.envrc .gitmodules \
    .husky/pre-commit; do
    expect_match "... refusing $path" "  ${path//./\\.}: " "$ERR"
done
expect_match "... naming the core.hooksPath" 'tools/githooks/pre-commit: it lies in "tools/githooks", the core.hooksPath' "$ERR"
expect_match "... refusing the directory made world-writable" '  drop: directory of mode 1777' "$ERR"
expect_match "... and the one made set-gid" '  shared: directory of mode 2775' "$ERR"
expect_eq "nothing was written (ok.txt is the real one)" v1 "$(cat "$WS/ok.txt")"
pdk commit planted sub/.git/config
expect_eq "the fsmonitor is refused when named too" 1 "$RC"
if grep -q fsmonitor "$WS/sub/.git/config"; then
    not_ok "the real sub/.git/config has no core.fsmonitor"
else
    ok "the real sub/.git/config has no core.fsmonitor"
fi
expect_eq "no hook landed" "" \
    "$(ls "$WS/sub/.git/hooks/pre-commit" "$WS/tools/githooks/pre-commit" \
        "$WS/.git/modules/m/hooks/post-checkout" 2>/dev/null)"
pdk commit planted ok.txt
expect_eq "the plain file commits when named" "0 v2" "$RC $(cat "$WS/ok.txt")"
expect_eq "nothing planted ran" "" "$(ls "$T/pwned" 2>/dev/null)"

# A home that is the workspace: the agents' own configuration, made where it did not exist.
HOMEWS="$T/homews"
mkdir -p "$HOMEWS"
(cd "$HOMEWS" && HOME="$HOMEWS" PATH="$SANDBOX_PATH" timeout -k 5 60 "$PADDOCK" run \
    --workspace "$HOMEWS" --session home -- sh -c '
mkdir -p .claude .codex .config/git .claude/commands
printf "{}\n" >.claude/settings.json
printf "x\n" >.claude/commands/deploy.md
printf "notify = [\"sh\"]\n" >.codex/config.toml
printf "[core]\n\tfsmonitor = x\n" >.config/git/config
printf "fine\n" >notes.txt' </dev/null >/dev/null 2>"$T/home.err")
pdk commit home
expect_eq "commit of the home's agent configuration: refused (exit 1)" 1 "$RC"
for path in .claude/settings.json .claude/commands/deploy.md .config/git/config; do
    expect_match "... refusing ~/$path" "  ${path//./\\.}: " "$ERR"
done
pdk diff home --stat
expect_no_match "... ~/.codex/ was read-only inside: not even in the session" 'codex' "$OUT"
expect_eq "... and writing none of it" "" "$(ls -A "$HOMEWS")"

# A home directory made writable: its agent configuration stays read-only, hidden files
# under it stay hidden.
mkdir -p "$TEST_HOME/.claude/commands" "$TEST_HOME/.claude/agents" "$TEST_HOME/.claude/hooks" \
    "$TEST_HOME/.claude/skills" "$TEST_HOME/.claude/plugins" "$TEST_HOME/.config/git"
printf '{"theme": "dark"}\n' >"$TEST_HOME/.claude/settings.json"
printf '[user]\n\tname = u\n' >"$TEST_HOME/.config/git/config"
printf 'https://u:secret@example.invalid\n' >"$TEST_HOME/.config/git/credentials"
cat >"$T/home.yaml" <<'EOF'
version: 1
filesystem:
  write: [~/.claude, ~/.config]
EOF
wrun --policy "$T/home.yaml" -- sh -c '
w() { if (printf "$2" >>"$1") 2>/dev/null; then echo written; else echo refused; fi; }
w "$HOME/.claude/settings.json" "{\"hooks\": 1}\n"
w "$HOME/.claude/commands/x.md" x
w "$HOME/.claude/skills/SKILL.md" x
w "$HOME/.claude/plugins/known.json" x
w "$HOME/.config/git/config" "[core]\n\tfsmonitor = x\n"
w "$HOME/.claude/history.jsonl" "state\n"
cat "$HOME/.config/git/credentials" 2>/dev/null | wc -c'
expect_eq "~/.claude/settings.json, ~/.claude/commands/, skills/, plugins/ and ~/.config/git/ stay read-only; the rest of ~/.claude is writable; the credentials stay hidden" \
    "refused refused refused refused refused written 0" "$(printf '%s' "$OUT" | tr '\n' ' ')"
expect_eq "... the real settings are untouched" '{"theme": "dark"}' \
    "$(cat "$TEST_HOME/.claude/settings.json")"
rmdir "$TEST_HOME/.claude/agents"
wrun --policy "$T/home.yaml" -- true
expect_eq "a writable bind where a missing one could be created is refused (exit 125)" 125 "$RC"
expect_match "... naming it and the fix" "could create $TEST_HOME/\\.claude/agents/ there.*create it first" "$ERR"
expect_eq "... creating nothing" "" "$(ls -d "$TEST_HOME/.claude/agents" 2>/dev/null)"
