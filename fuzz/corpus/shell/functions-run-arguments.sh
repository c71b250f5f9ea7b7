run() { if command -v "$1" >/dev/null; then "$@"; else command -p "$@"; fi; }
run git push
f() { shift; ${1+"$@"}; }; f a kill 1
function rg { (exec -a rg /opt/x ${1+"$@"}); }
