#!/usr/bin/env bash
# The test harness itself: PADDOCK_MUST_WORK=1 (CI) turns a skip for a missing kernel
# feature or for not being root into a failure, in lib.sh and in the unit tests
# (tests/unit/must_work.h), while a skip for an optional client stays a skip; and
# tests/run counts cmocka's skips ("not ok N # SKIP") as skips. TAP output.
. "$(dirname "$0")/lib.sh"

# One lib.sh call in a shell of its own; its TAP lines.
lib_says() {
    PADDOCK_MUST_WORK=$1 bash -c '. "$PADDOCK_TOP/tests/integration/lib.sh"; '"$2" 2>&1 | head -n 1
}
expect_match "lib.sh: skip is a skip" '^ok 1 - a kernel feature # SKIP missing$' \
    "$(lib_says 0 'skip "a kernel feature" missing')"
expect_match "lib.sh: skip fails under PADDOCK_MUST_WORK=1" \
    '^not ok 1 - a kernel feature \(PADDOCK_MUST_WORK=1 but: missing\)$' \
    "$(lib_says 1 'skip "a kernel feature" missing')"
expect_match "lib.sh: skip_optional stays a skip under PADDOCK_MUST_WORK=1" \
    '^ok 1 - an npm package # SKIP not installed$' \
    "$(lib_says 1 'skip_optional "an npm package" "not installed"')"
expect_match "lib.sh: skip_all fails the file under PADDOCK_MUST_WORK=1" \
    '^not ok 1 - .* \(PADDOCK_MUST_WORK=1 but: needs root\)$' \
    "$(lib_says 1 'skip_all "needs root"; ok "not reached"')"

# A unit test that needs root, run as another user: skipped, or failed under MUST_WORK.
unit=$PADDOCK_BUILD/tests/unit/test_changes
as_nobody=()
if is_root; then
    command -v setpriv >/dev/null || bail_out "setpriv (util-linux) missing"
    as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
out=$(cd /tmp && CMOCKA_MESSAGE_OUTPUT=TAP PADDOCK_MUST_WORK=0 timeout 60 "${as_nobody[@]}" "$unit" 2>&1)
expect_match "unit: a test that needs root is skipped when not root" '(^|'$'\n'')not ok 1 # SKIP t_scan_basic' "$out"
out=$(cd /tmp && CMOCKA_MESSAGE_OUTPUT=TAP PADDOCK_MUST_WORK=1 timeout 60 "${as_nobody[@]}" "$unit" 2>&1)
expect_match "unit: ... and fails under PADDOCK_MUST_WORK=1" '(^|'$'\n'')not ok 1 - t_scan_basic' "$out"
expect_match "unit: ... saying why" 'PADDOCK_MUST_WORK=1 but: not root' "$out"
expect_no_match "unit: ... none skipped" '# SKIP' "$out"
