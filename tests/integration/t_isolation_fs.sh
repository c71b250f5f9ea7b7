#!/usr/bin/env bash
# t_isolation_fs: what the sandbox can see and write of the file system. Credentials in the
# home stay hidden even when a policy lists them; the host is read-only; /tmp, /run and the
# state dir are private; protected workspace files are read-only (missing ones become
# read-only placeholders); workspace writes land in the session layer only.
. "$(dirname "$0")/lib.sh"
need_userns

RO='errno=(EROFS|EACCES|EPERM)'
HIDDEN='errno=(ENOENT|EACCES)'

# ---- a fake home with credentials --------------------------------------------------------
mkdir -m 700 "$TEST_HOME/.ssh" "$TEST_HOME/.aws" "$TEST_HOME/.gnupg"
mkdir -p "$TEST_HOME/.gnupg/private-keys-v1.d" "$TEST_HOME/data/private" "$TEST_HOME/.cache/x"
echo "-----BEGIN OPENSSH PRIVATE KEY----- fake" >"$TEST_HOME/.ssh/id_ed25519"
chmod 600 "$TEST_HOME/.ssh/id_ed25519"
printf '[default]\naws_secret_access_key = fake\n' >"$TEST_HOME/.aws/credentials"
echo "machine example.invalid login me password fake" >"$TEST_HOME/.netrc"
echo "fake key" >"$TEST_HOME/.gnupg/private-keys-v1.d/key.key"
printf '[user]\n\tname = Test\n' >"$TEST_HOME/.gitconfig"
echo public >"$TEST_HOME/data/public"
echo private >"$TEST_HOME/data/private/key"

CRED_POLICY=$T/cred-policy.yaml
write_policy "$CRED_POLICY" 'version: 1
filesystem:
  read_allow: [~/.ssh, ~/.aws, ~/.gnupg, ~/.netrc]
  write: [~/.ssh, ~/.aws]'

HOME_POLICY=$T/home-policy.yaml
write_policy "$HOME_POLICY" 'version: 1
filesystem:
  read_allow: [~/.gitconfig, ~/data]
  read_deny: [~/data/private]
  write: [~/.cache/x]'

expect_probe "without a policy ~/.ssh/id_ed25519 is hidden" 'errno=ENOENT' \
    -- read "$TEST_HOME/.ssh/id_ed25519"
expect_probe "with ~/.ssh in read_allow and write, ~/.ssh/id_ed25519 is still hidden" \
    'errno=ENOENT' --policy "$CRED_POLICY" -- read "$TEST_HOME/.ssh/id_ed25519"
probe --policy "$CRED_POLICY" -- env HOME
inside_home=${OUT#value=}
wrun --policy "$CRED_POLICY" -- sh -c '"$0" read "$HOME/.ssh/id_ed25519"' "$PROBE"
expect_eq "the sandbox's own \$HOME/.ssh/id_ed25519 ($inside_home) is hidden too" \
    'errno=ENOENT' "$OUT"
expect_probe "~/.aws/credentials is hidden though listed" 'errno=ENOENT' \
    --policy "$CRED_POLICY" -- read "$TEST_HOME/.aws/credentials"
expect_probe "~/.netrc is hidden though listed" 'errno=ENOENT' \
    --policy "$CRED_POLICY" -- read "$TEST_HOME/.netrc"
expect_probe "~/.gnupg keys are hidden though listed" 'errno=ENOENT' \
    --policy "$CRED_POLICY" -- read "$TEST_HOME/.gnupg/private-keys-v1.d/key.key"
expect_probe "~/.ssh is not writable though listed in write" 'errno=[A-Z]+' \
    --policy "$CRED_POLICY" -- write "$TEST_HOME/.ssh/authorized_keys"
if [ -e "$TEST_HOME/.ssh/authorized_keys" ]; then
    not_ok "no ~/.ssh/authorized_keys appeared on the host"
else
    ok "no ~/.ssh/authorized_keys appeared on the host"
fi

# ---- the home is an empty tmpfs; policy binds ----------------------------------------------
wrun -- sh -c 'ls -A "$HOME"'
expect_eq "\$HOME is empty inside without a policy" "" "$OUT"
expect_probe "~/.gitconfig is hidden without a policy" 'errno=ENOENT' \
    -- read "$TEST_HOME/.gitconfig"
expect_probe "\$HOME is writable inside (tmpfs)" 'ok' -- write "$TEST_HOME/scratch"
if [ -e "$TEST_HOME/scratch" ]; then
    not_ok "a file written to the sandbox's \$HOME does not reach the real home"
else
    ok "a file written to the sandbox's \$HOME does not reach the real home"
fi
expect_probe "read_allow ~/.gitconfig is readable" 'ok' \
    --policy "$HOME_POLICY" -- read "$TEST_HOME/.gitconfig"
expect_probe "read_allow ~/.gitconfig is read-only" "$RO" \
    --policy "$HOME_POLICY" -- write "$TEST_HOME/.gitconfig"
expect_eq "the real ~/.gitconfig is unchanged" "$(printf '[user]\n\tname = Test')" \
    "$(cat "$TEST_HOME/.gitconfig")"
expect_probe "read_allow ~/data/public is readable" 'ok' \
    --policy "$HOME_POLICY" -- read "$TEST_HOME/data/public"
expect_probe "read_deny ~/data/private wins over read_allow ~/data" "$HIDDEN" \
    --policy "$HOME_POLICY" -- read "$TEST_HOME/data/private/key"
expect_probe "write ~/.cache/x is writable" 'ok' \
    --policy "$HOME_POLICY" -- write "$TEST_HOME/.cache/x/out"
expect_eq "a write to ~/.cache/x reaches the real home" "written by paddock-probe" \
    "$(cat "$TEST_HOME/.cache/x/out" 2>&1)"

# ---- the host is read-only ---------------------------------------------------------------
# A host directory the sandbox can see (read-only): /var/tmp is not replaced inside.
OUTSIDE=$(mktemp -d /var/tmp/paddock-outside.XXXXXX) && cleanup_path "$OUTSIDE"
cleanup_path "/etc/paddock-escape-$TAG"
cleanup_path "/usr/paddock-escape-$TAG"
cleanup_path "$PADDOCK_TOP/.paddock-escape-$TAG"
expect_probe "a directory of the host outside the workspace is not writable" "$RO" \
    -- write "$OUTSIDE/f"
# (ENOENT when the tree lies under the host's /tmp, which the sandbox does not see at all)
expect_probe "the source tree is not writable" 'errno=(EROFS|EACCES|EPERM|ENOENT)' \
    -- write "$PADDOCK_TOP/.paddock-escape-$TAG"
expect_probe "/etc is not writable" "$RO" -- write "/etc/paddock-escape-$TAG"
expect_probe "/usr is not writable" "$RO" -- mkdir "/usr/paddock-escape-$TAG"
expect_eq "nothing appeared outside the workspace" "" \
    "$(ls -A "$OUTSIDE"; ls -d "/etc/paddock-escape-$TAG" "/usr/paddock-escape-$TAG" \
        "$PADDOCK_TOP/.paddock-escape-$TAG" 2>/dev/null)"
expect_probe "the host root is readable" 'ok' -- read /etc/passwd

# ---- private /tmp ------------------------------------------------------------------------
HOST_TMP_FILE=$(mktemp /tmp/paddock-visible.XXXXXX)
cleanup_path "$HOST_TMP_FILE"
echo host >"$HOST_TMP_FILE"
echo sibling >"$T/sibling"
expect_probe "a file in the host's /tmp is not visible" 'errno=ENOENT' -- read "$HOST_TMP_FILE"
expect_probe "the workspace's sibling in the host's /tmp is not visible" 'errno=ENOENT' \
    -- read "$T/sibling"
expect_probe "/tmp is writable inside" 'ok' -- write "/tmp/paddock-inside-$TAG"
if [ -e "/tmp/paddock-inside-$TAG" ]; then
    rm -f "/tmp/paddock-inside-$TAG"
    not_ok "a file written to the sandbox's /tmp does not reach the host's"
else
    ok "a file written to the sandbox's /tmp does not reach the host's"
fi

# ---- /run is empty -----------------------------------------------------------------------
RUN_DIR=$(mktemp -d /run/paddock-test.XXXXXX 2>/dev/null)
if [ -n "$RUN_DIR" ]; then
    cleanup_path "$RUN_DIR"
    echo host >"$RUN_DIR/file"
    if start_unix_listener "$RUN_DIR/host.sock"; then
        expect_eq "(host) the socket under /run accepts" ok \
            "$("$PROBE" connect-unix "$RUN_DIR/host.sock")"
        expect_probe "a socket under the host's /run is hidden" 'errno=ENOENT' \
            -- connect-unix "$RUN_DIR/host.sock"
    else
        not_ok "a unix listener under /run starts"
    fi
    expect_probe "a file under the host's /run is hidden" 'errno=ENOENT' -- read "$RUN_DIR/file"
    wrun -- sh -c 'ls -A /run'
    expect_eq "/run is empty inside" "" "$OUT"
else
    skip "a socket under the host's /run is hidden" "/run is not writable here"
fi

# ---- the state dir -----------------------------------------------------------------------
expect_probe "the state dir is not visible" "$HIDDEN" --session vis -- read "$STATE"
expect_probe "the session's own metadata is not visible" "$HIDDEN" \
    --session vis -- read "$STATE/sessions/vis/session.json"
expect_probe "the session's upper layer is not visible" "$HIDDEN" \
    --session vis -- read "$STATE/sessions/vis/upper"

# ---- protected workspace files -----------------------------------------------------------
git init -q "$WS" || bail_out "git init of the workspace"
git_config_before=$(cat "$WS/.git/config")
echo "PS1=safe" >"$WS/.bashrc"
echo "SECRET=1" >"$WS/.env"
echo "existing" >"$WS/existing.txt"
PROTECT_POLICY=$T/protect-policy.yaml
write_policy "$PROTECT_POLICY" 'version: 1
filesystem:
  protect: [.env]'
P=(--session prot --policy "$PROTECT_POLICY")

expect_probe ".git/config is read-only" "$RO" "${P[@]}" -- write "$WS/.git/config"
expect_probe ".git/config cannot be removed" 'errno=[A-Z]+' "${P[@]}" -- unlink "$WS/.git/config"
expect_eq "the real .git/config is unchanged" "$git_config_before" "$(cat "$WS/.git/config")"
expect_probe ".git/hooks/ is read-only" "$RO" "${P[@]}" -- write "$WS/.git/hooks/pre-commit"
expect_probe "a missing .mcp.json is an empty placeholder (a directory)" 'errno=EISDIR' \
    "${P[@]}" -- read "$WS/.mcp.json"
expect_probe "the .mcp.json placeholder cannot be written" 'errno=(EISDIR|EROFS|EACCES|EPERM)' \
    "${P[@]}" -- write "$WS/.mcp.json"
expect_probe "nothing can be created inside the .mcp.json placeholder" "$RO" "${P[@]}" \
    -- write "$WS/.mcp.json/x"
expect_probe ".vscode/ cannot be written" 'errno=[A-Z]+' "${P[@]}" \
    -- write "$WS/.vscode/settings.json"
expect_probe ".idea/ cannot be written" 'errno=[A-Z]+' "${P[@]}" -- write "$WS/.idea/workspace.xml"
expect_probe "policy protect .env is read-only" "$RO" "${P[@]}" -- write "$WS/.env"
expect_probe "policy protect .env cannot be removed" 'errno=[A-Z]+' "${P[@]}" -- unlink "$WS/.env"
expect_probe "an ordinary workspace file is writable next to them" 'ok' "${P[@]}" \
    -- write "$WS/notes.txt"
expect_eq "no placeholder or protected change reached the real workspace" \
    "$(printf '%s\n' .bashrc .env .git existing.txt)" "$(ls -A "$WS")"
pdk diff prot --json
expect_eq "the session's diff holds only notes.txt (no placeholders)" '["notes.txt"]' \
    "$(json_get "$OUT" 'sorted(c["path"] for c in j["changes"])')"

# ---- shell start-up files: protected where the sandbox could write them (home as workspace)
echo "PS1=safe" >"$TEST_HOME/.bashrc"
H=(--session homews --workspace "$TEST_HOME")
expect_probe "~/.bashrc is read-only when the workspace is the home" "$RO" "${H[@]}" \
    -- write "$TEST_HOME/.bashrc"
expect_probe "a missing ~/.zshrc cannot be created when the workspace is the home" \
    'errno=(EISDIR|EROFS|EACCES|EPERM)' "${H[@]}" -- write "$TEST_HOME/.zshrc"
expect_probe "~/.ssh stays hidden when the workspace is the home" 'errno=ENOENT' "${H[@]}" \
    -- read "$TEST_HOME/.ssh/id_ed25519"
expect_eq "the real ~/.bashrc is unchanged" "PS1=safe" "$(cat "$TEST_HOME/.bashrc")"
rm -f "$TEST_HOME/.bashrc"

# ---- workspace writes --------------------------------------------------------------------
expect_probe "a new workspace file can be written" 'ok' -- write "$WS/new.txt"
if [ -e "$WS/new.txt" ]; then
    not_ok "the new file is not in the real workspace before commit"
else
    ok "the new file is not in the real workspace before commit"
fi
expect_probe "an existing workspace file can be overwritten" 'ok' -- write "$WS/existing.txt"
expect_eq "the real file is unchanged before commit" existing "$(cat "$WS/existing.txt")"
expect_probe "a workspace directory can be made" 'ok' -- mkdir "$WS/newdir"
expect_eq "the directory is not in the real workspace" "" "$(ls -d "$WS/newdir" 2>/dev/null)"
