#!/usr/bin/env bash
# The namespaces not covered elsewhere: ipc (the host's System V objects are out of
# sight) and cgroup (the sandbox sees its own cgroup as the root, not the host's paths).
. "$(dirname "$0")/lib.sh"
need_userns
command -v ipcmk >/dev/null 2>&1 || skip_all "ipcmk (util-linux) missing"

shmid=$(ipcmk -M 4096 | awk '{print $NF}')
if [ -z "$shmid" ]; then
    not_ok "a System V segment is made on the host"
else
    ok "a System V segment is made on the host (id $shmid)"
    ipcs -m | awk '{print $2}' | grep -qx "$shmid" && ok "the host lists it" || not_ok "the host lists it"
    wrun -- sh -c 'ipcs -m | awk "NR > 3 && \$2 ~ /^[0-9]+\$/ {print \$2}"'
    expect_eq "inside, no System V segment of the host is listed" "" "$OUT"
    ipcrm -m "$shmid"
fi

wrun -- cat /proc/self/cgroup
expect_eq "the sandbox's own cgroup runs" 0 "$RC"
expect_eq "every cgroup path inside is the root of its namespace" "" \
    "$(printf '%s\n' "$OUT" | awk -F: '$3 != "/" {print}')"

# With a memory limit the sandbox runs in a cgroup of its own, still seen as the root.
write_policy "$T/mem.yaml" 'version: 1
limits: {memory: 256M}'
wrun --policy "$T/mem.yaml" -- cat /proc/self/cgroup
if [ "$RC" -eq 0 ]; then
    expect_eq "with a cgroup of its own, every cgroup path inside is still the root" "" \
        "$(printf '%s\n' "$OUT" | awk -F: '$3 != "/" {print}')"
else
    skip "cgroup paths with a memory limit" "no usable cgroup here (exit $RC)"
fi
