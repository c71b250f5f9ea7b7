#!/usr/bin/env bash
# Landlock is in force on its own, not only through read-only mounts: /run is a writable
# tmpfs inside the sandbox, yet not on the Landlock write list, so writes there fail with
# EACCES (Landlock's answer) rather than EROFS (a mount's). Where the sandbox may write,
# it can.
. "$(dirname "$0")/lib.sh"
need_userns
need_landlock

expect_probe "a write to /run (a writable tmpfs) is refused by Landlock" 'errno=EACCES' \
    -- write /run/landlock-probe
expect_probe "a directory under /run cannot be made either" 'errno=EACCES' -- mkdir /run/d
expect_probe "/tmp is writable (on the Landlock list)" 'ok' -- write /tmp/landlock-probe
expect_probe "/dev/shm is writable" 'ok' -- write /dev/shm/landlock-probe
expect_probe "the workspace is writable" 'ok' -- write "$WS/landlock-probe"
expect_probe "/dev/null is writable (devices beneath /dev)" 'ok' -- write /dev/null
