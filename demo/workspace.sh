#!/usr/bin/env bash
# paddock demo workspace: the workspace review story on built-in defaults. A command changes a workspace inside
# the sandbox; the real directory is untouched; diff shows the change; commit applies it.
# Everything happens in a temporary directory that is removed at the end.
set -euo pipefail
paddock=${1:-build/paddock}
paddock=$(cd "$(dirname "$paddock")" && pwd)/$(basename "$paddock")

demo=$(mktemp -d /tmp/paddock-demo.XXXXXX)
trap 'rm -rf "$demo"' EXIT
export PADDOCK_STATE_DIR=$demo/state
ws=$demo/project
mkdir -p "$ws"
cd "$ws"
printf 'print("hello")\n' >app.py
printf 'a small project\n' >README
mkdir -p "$demo/home/.ssh" && printf 'not a real key\n' >"$demo/home/.ssh/id_ed25519"
export HOME=$demo/home

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { local shown="$*"; printf '$ %s\n' "${shown/#"$paddock"/paddock}"; "$@"; }

step "1. A command runs in the sandbox and changes the workspace"
cat <<'TXT'
   It edits app.py, adds NOTES.md, deletes README, and tries to read ~/.ssh and to
   write outside the workspace. Its writes land in a session layer, not in the real
   directory.
TXT
show "$paddock" run --session demo -- sh -c '
    printf "print(\"hello, sandbox\")\n" > app.py
    printf "# notes\nwritten inside paddock\n" > NOTES.md
    rm README
    cat ~/.ssh/id_ed25519 2>/dev/null || echo "  (inside) ~/.ssh is not there"
    touch /etc/paddock-demo 2>/dev/null || echo "  (inside) / is read-only"
    id -u | sed "s/^/  (inside) uid /"
'

step "2. The real workspace is untouched"
show ls "$ws"
show cat "$ws/app.py"

step "3. Review: paddock diff"
show "$paddock" diff demo --stat
show "$paddock" diff demo

step "4. Apply: paddock commit"
show "$paddock" commit demo
show ls "$ws"
show cat "$ws/app.py"

step "5. Sessions"
show "$paddock" sessions
show "$paddock" discard demo
printf '\ndone: the sandboxed command could only change the workspace through review.\n'
