#!/usr/bin/env bash
# t_workspace: the overlay workspace and its review cycle. Changes stay in the session until
# commit; diff shows exactly them (text, --stat, --json); commit applies them, refuses a
# conflict and never writes outside the workspace; discard drops them; named sessions
# continue across runs; --workspace-mode direct writes straight through.
. "$(dirname "$0")/lib.sh"
need_userns

# ---- the real workspace ------------------------------------------------------------------
echo alpha >"$WS/a.txt"
echo beta >"$WS/b.txt"
echo gamma >"$WS/c.txt"
printf '#!/bin/sh\necho script\n' >"$WS/script.sh"
chmod 644 "$WS/script.sh"
echo "was a file" >"$WS/typechg"
mkdir -p "$WS/dir" "$WS/esc" "$WS/esc2"
echo sub >"$WS/dir/sub.txt"
echo inside >"$WS/esc/f"
echo inside >"$WS/esc2/keep"
ln -s a.txt "$WS/keep-link"
BEFORE=$(snapshot "$WS")

# expect_unchanged DESC: the real workspace is as the test made it.
expect_unchanged() {
    expect_eq "$1" "$BEFORE" "$(snapshot "$WS")"
}

# paths_of JSON: the sorted paths of a diff --json (one a line).
paths_of() {
    json_get "$1" '"\n".join(sorted(c["path"] for c in j["changes"]))'
}

# session_field ID EXPR: EXPR on the entry (as s) of session ID in `paddock sessions --json`,
# into FIELD.
session_field() {
    pdk sessions --json
    FIELD=$(json_get "$OUT" "[$2 for s in j if s['id'] == '$1'][0]")
}

# ---- an unnamed session ------------------------------------------------------------------
probe -- write "$WS/u.txt"
expect_match "a run with a change reports it and how to review it" \
    '^paddock: session ([^ ]+): 1 files? changed \(review: paddock diff \1\)$' "$(report_line)"
unnamed=$(report_session)
expect_unchanged "the change is not in the real workspace"
pdk diff "$unnamed" --json
expect_eq "the unnamed session's diff holds u.txt" "u.txt" "$(paths_of "$OUT")"
session_field "$unnamed" "str(s['named'])"
expect_eq "sessions --json lists it as not named" False "$FIELD"
pdk discard "$unnamed"
expect_eq "discard of the unnamed session: exit 0" 0 "$RC"

probe -- read "$WS/a.txt"
expect_match "a run without change reports \"no changes\"" \
    '^paddock: session [^ ]+: no changes$' "$(report_line)"
nochange=$(report_session)
expect_eq "the session without change is removed" "" \
    "$(ls -d "$STATE/sessions/$nochange" 2>/dev/null)"

probe --json -- write "$WS/j.txt"
report=$(json_report)
expect_eq "--json report: one change, exit 0" "1 0" \
    "$(json_get "$report" 'str(j["changes"]) + " " + str(j["exit"])')"
pdk discard "$(json_get "$report" 'j["session"]')"

# ---- discard -----------------------------------------------------------------------------
probe --session ws2 -- write "$WS/new2.txt"
pdk discard ws2
expect_eq "discard ws2: exit 0" 0 "$RC"
pdk sessions --json
expect_eq "ws2 is no longer listed" "[]" "$(json_get "$OUT" '[s["id"] for s in j if s["id"] == "ws2"]')"
pdk diff ws2
expect_eq "diff of a discarded session: exit 1" 1 "$RC"
expect_unchanged "nothing of ws2 reached the real workspace"

# ---- a named session continues across runs -----------------------------------------------
probe --session cont -- write "$WS/one.txt"
probe --session cont -- read "$WS/one.txt"
expect_eq "the second run of session cont sees the first run's file" ok "$OUT"
probe --session cont -- write "$WS/two.txt"
pdk diff cont --json
expect_eq "diff cont holds both runs' files" "$(printf 'one.txt\ntwo.txt')" "$(paths_of "$OUT")"
session_field cont "'%s %s %s %s' % (s['named'], s['mode'], s['runs'], s['last_exit'])"
expect_eq "sessions --json: cont is named, overlay, 3 runs, last exit 0" "True overlay 3 0" "$FIELD"
session_field cont "s['workspace']"
expect_eq "sessions --json: cont's workspace is the real path" "$(realpath "$WS")" "$FIELD"
expect_unchanged "nothing of cont reached the real workspace"
pdk discard cont

# ---- diff shows exactly the changes ------------------------------------------------------
CHANGES_SH='cd "$1" || exit 1
set -e
echo changed > a.txt
rm b.txt
echo new > new.txt
chmod 755 script.sh
ln -s a.txt newlink
rm typechg && ln -s c.txt typechg
mkdir newdir && echo f > newdir/f
'
wrun --session ws1 -- sh -c "$CHANGES_SH$SNAPSHOT_SH" sh "$WS"
SANDBOX_VIEW=$OUT
expect_eq "the changing run exits 0" 0 "$RC"
expect_match "the report names ws1 and its diff command" \
    '^paddock: session ws1: [78] files changed \(review: paddock diff ws1\)$' "$(report_line)"
expect_unchanged "the real workspace is untouched before commit"

pdk diff ws1
DIFF=$OUT
expect_eq "diff ws1: exit 0" 0 "$RC"
expect_eq "diff ws1 names exactly the changed paths" \
    "$(printf '%s\n' a.txt b.txt new.txt newdir/f newlink script.sh typechg)" \
    "$(printf '%s\n' "$DIFF" | sed -nE 's|^diff --git a/(.*) b/.*$|\1|p' | LC_ALL=C sort -u)"
expect_match "the modification is a unified diff" $'\n-alpha\n\\+changed' "$DIFF"
expect_match "the deletion says so" $'diff --git a/b.txt b/b.txt\ndeleted file mode 100644' "$DIFF"
expect_match "the addition says so" $'diff --git a/new.txt b/new.txt\nnew file mode 100644' "$DIFF"
expect_match "the mode change says so" $'diff --git a/script.sh b/script.sh\nold mode 100644\nnew mode 100755' "$DIFF"
expect_match "the new symlink is mode 120000" $'diff --git a/newlink b/newlink\nnew file mode 120000' "$DIFF"
expect_no_match "unchanged files are not in the diff" '(c\.txt|dir/sub\.txt|keep-link) b/' "$DIFF"

pdk diff ws1 a.txt
expect_eq "diff ws1 a.txt shows only a.txt" "a.txt" \
    "$(printf '%s\n' "$OUT" | sed -nE 's|^diff --git a/(.*) b/.*$|\1|p' | sort -u)"

pdk diff ws1 --stat
STAT=$OUT
expect_eq "diff --stat: exit 0" 0 "$RC"
for path in a.txt b.txt new.txt newdir/f newlink script.sh typechg; do
    expect_match "diff --stat lists $path" "(^|[[:space:]/])${path//./\\.}[[:space:]]" "$STAT"
done
expect_no_match "diff --stat does not list c.txt" 'c\.txt' "$STAT"
expect_match "diff --stat ends with a summary" '[0-9]+ files? changed[^'$'\n'']*$' "$STAT"

pdk diff ws1 --json
JSON=$OUT
expect_eq "diff --json statuses" \
    "a.txt=modified b.txt=deleted new.txt=added newdir/f=added newlink=added script.sh=modified typechg=type_changed" \
    "$(json_get "$JSON" '" ".join("%s=%s" % (c["path"], c["status"]) for c in sorted(j["changes"], key=lambda c: c["path"]) if c["path"] != "newdir")')"
expect_match "diff --json: newlink is a symlink" 'link' \
    "$(json_get "$JSON" '[c["kind"] for c in j["changes"] if c["path"] == "newlink"][0]')"
expect_eq "diff --json has a summary object" dict "$(json_get "$JSON" 'type(j["summary"]).__name__')"

pdk sessions --json
expect_eq "sessions --json is a list with ws1 in it" true \
    "$(json_get "$OUT" 'isinstance(j, list) and any(s["id"] == "ws1" for s in j)')"
expect_eq "sessions --json entries have every documented key" true \
    "$(json_get "$OUT" 'all({"id","named","workspace","mode","created","runs","last_exit","changes"} <= set(s) for s in j)')"

# ---- commit ------------------------------------------------------------------------------
pdk commit ws1 --dry-run
expect_eq "commit --dry-run: exit 0" 0 "$RC"
expect_unchanged "commit --dry-run writes nothing"
pdk commit ws1
expect_eq "commit ws1: exit 0" 0 "$RC"
AFTER_COMMIT=$(snapshot "$WS")
expect_eq "after commit the real workspace is what the sandbox saw" "$SANDBOX_VIEW" "$AFTER_COMMIT"

# ---- a conflicting change outside is refused ---------------------------------------------
wrun --session ws3 -- sh -c 'cd "$1" && echo sandbox > c.txt && echo three > new3.txt' sh "$WS"
echo outside >"$WS/c.txt"
expect_eq "the run changing c.txt exits 0" 0 "$RC"
pdk commit ws3
expect_eq "commit with an outside change to the same file: refused (exit 1)" 1 "$RC"
expect_match "the refusal names the file" 'c\.txt' "$ERR$OUT"
expect_eq "the refused commit wrote nothing (c.txt is the outside version)" outside \
    "$(cat "$WS/c.txt")"
expect_eq "the refused commit wrote nothing (no new3.txt)" "" "$(ls "$WS/new3.txt" 2>/dev/null)"
pdk commit ws3 new3.txt
expect_eq "commit of only the unconflicted path: exit 0" 0 "$RC"
expect_eq "new3.txt is committed" three "$(cat "$WS/new3.txt" 2>&1)"
expect_eq "c.txt still has the outside version" outside "$(cat "$WS/c.txt")"
pdk discard ws3

# ---- symlinks planted in the sandbox do not lead commit outside --------------------------
OUT1=$(mktemp -d /tmp/paddock-outside1.XXXXXX)
OUT2=$(mktemp -d /tmp/paddock-outside2.XXXXXX)
cleanup_path "$OUT1"
cleanup_path "$OUT2"
echo sentinel >"$OUT2/keep"
ETC_TARGET="/etc/paddock-ws-escape-$TAG"
cleanup_path "$ETC_TARGET"
wrun --session ws4 -- sh -c '
    cd "$1" || exit 1
    rm -rf esc && ln -s "$2" esc
    rm -rf esc2 && ln -s "$3" esc2
    ln -s "$4" link
    echo x > link 2>/dev/null
    echo x > esc/planted 2>/dev/null
    exit 0' sh "$WS" "$OUT1" "$OUT2" "$ETC_TARGET"
expect_eq "the run planting symlinks exits 0" 0 "$RC"
pdk commit ws4
commit_rc=$RC
expect_eq "commit of planted symlinks (exit $commit_rc): the outside dir stays empty" "" \
    "$(ls -A "$OUT1")"
expect_eq "the outside dir with a file of the replaced dir's name keeps exactly it" \
    "keep sentinel" "$(ls -A "$OUT2") $(cat "$OUT2/keep")"
expect_eq "nothing was written at the symlink's /etc target" "" "$(ls -d "$ETC_TARGET" 2>/dev/null)"
if [ "$commit_rc" -eq 0 ]; then
    expect_eq "the committed esc is the symlink itself" "$OUT1" "$(readlink "$WS/esc")"
fi

# ---- direct mode -------------------------------------------------------------------------
probe --workspace-mode direct -- write "$WS/direct.txt"
expect_eq "direct mode: the write succeeds" ok "$OUT"
expect_eq "direct mode: it is in the real workspace at once" "written by paddock-probe" \
    "$(cat "$WS/direct.txt" 2>&1)"

# A symlink (or file) where a protected path's directory must be (".git" -> a directory the
# sandbox filled) would hand the real workspace a git config of the sandbox's making:
# commit refuses it unless --include-protected, and commits the rest when named.
GL=$(mktemp -d /tmp/paddock-gitlink.XXXXXX) && cleanup_path "$GL"
(cd "$GL" && pdk_run --session gitlink --workspace "$GL" -- sh -c \
    'mkdir -p /tmp/evil && ln -s /tmp/evil .git && echo data > data.txt' >/dev/null 2>&1)
pdk commit gitlink
expect_eq "commit refuses a .git symlink (exit 1)" 1 "$RC"
expect_match "and says why" '\.git: it would replace the directory of a protected path' "$ERR"
if [ -e "$GL/.git" ] || [ -L "$GL/.git" ]; then
    not_ok "no .git appeared in the real workspace"
else
    ok "no .git appeared in the real workspace"
fi
pdk commit gitlink data.txt
expect_eq "the other path commits when named" "0 data" "$RC $(cat "$GL/data.txt" 2>/dev/null)"
