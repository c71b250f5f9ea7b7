#!/usr/bin/env bash
# The committed fuzz corpora replay without a crash in the normal build: every input of
# fuzz/corpus/NAME (and of the seed folders fuzz/seeds names) goes through fuzz-NAME-replay (LLVMFuzzerTestOneInput without
# libFuzzer), for every target. Under `make test-asan` this is the corpus under ASan+UBSan.
# TAP output.
set -u
top=${PADDOCK_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${PADDOCK_BUILD:-$top/build}
log=$(mktemp "${TMPDIR:-/tmp}/paddock-replay.XXXXXX")
trap 'rm -f "$log"' EXIT

n=0 failed=0
for corpus in "$top"/fuzz/corpus/*/; do
    name=$(basename "$corpus")
    n=$((n + 1))
    replay="$build/fuzz/fuzz-$name-replay"
    if [ ! -x "$replay" ]; then
        echo "not ok $n - $name corpus replays cleanly # $replay is missing (build first)"
        failed=1
        continue
    fi
    if [ -z "$(ls -A "$corpus" 2>/dev/null)" ]; then
        echo "not ok $n - $name corpus replays cleanly # no inputs in $corpus"
        failed=1
        continue
    fi
    seeds=()
    for dir in $(awk -v n="$name" '$1 == n { print $2 }' "$top/fuzz/seeds"); do
        if [ -z "$(ls -A "$top/$dir" 2>/dev/null)" ]; then
            echo "not ok $n - $name corpus replays cleanly # fuzz/seeds names $dir, which has no inputs"
            failed=1
            continue 2
        fi
        seeds+=("$top/$dir")
    done
    if "$replay" "$corpus" "${seeds[@]}" >"$log" 2>&1; then
        echo "ok $n - $name corpus replays cleanly"
    else
        rc=$?
        echo "not ok $n - $name corpus replays cleanly"
        echo "# $replay $corpus exited $rc:"
        tail -n 30 "$log" | sed 's/^/#   /'
        failed=1
    fi
done
echo "1..$n"
exit $failed
