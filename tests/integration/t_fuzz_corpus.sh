#!/usr/bin/env bash
# The committed fuzz corpora replay without a crash in the normal build: every input of
# fuzz/corpus/policy goes through fuzz-policy-replay (LLVMFuzzerTestOneInput without
# libFuzzer). Under `make test-asan` this is the corpus under ASan+UBSan. TAP output.
set -u
top=${PADDOCK_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${PADDOCK_BUILD:-$top/build}

echo "1..1"
replay="$build/fuzz/fuzz-policy-replay"
corpus="$top/fuzz/corpus/policy"
if [ ! -x "$replay" ]; then
    echo "not ok 1 - policy corpus replays cleanly # $replay is missing (build first)"
    exit 1
fi
if [ -z "$(ls -A "$corpus" 2>/dev/null)" ]; then
    echo "not ok 1 - policy corpus replays cleanly # no inputs in $corpus"
    exit 1
fi
log=$(mktemp "${TMPDIR:-/tmp}/paddock-replay.XXXXXX")
trap 'rm -f "$log"' EXIT
if "$replay" "$corpus" >"$log" 2>&1; then
    echo "ok 1 - policy corpus replays cleanly"
else
    rc=$?
    echo "not ok 1 - policy corpus replays cleanly"
    echo "# $replay $corpus exited $rc:"
    tail -n 30 "$log" | sed 's/^/#   /'
    exit 1
fi
