#!/usr/bin/env bash
# t_isolation_kernel: the kernel surface left to the sandbox. seccomp answers EPERM for
# ptrace, tty injection, io_uring, the mount family, namespaces, bpf, perf, userfaultfd,
# keys, kexec, modules and personality changes, and EAFNOSUPPORT for socket families other
# than unix/inet/inet6; no capabilities, no_new_privs, seccomp mode 2; as root the sandbox
# runs under an unprivileged host uid.
. "$(dirname "$0")/lib.sh"
need_userns

# ---- ptrace ------------------------------------------------------------------------------
expect_probe "ptrace(PTRACE_ATTACH) of the parent: EPERM" 'errno=EPERM' -- ptrace-parent
# Through sh, so that the parent is an ordinary process of the sandbox (the trailing ":"
# keeps sh from exec'ing the probe in its place).
wrun -- sh -c '"$0" ptrace-parent; :' "$PROBE"
expect_eq "ptrace(PTRACE_ATTACH) of a parent shell in the sandbox: EPERM" 'errno=EPERM' "$OUT"
expect_probe "ptrace(PTRACE_ATTACH) of pid 1: EPERM" 'errno=EPERM' -- ptrace-pid 1

# ---- tty injection -----------------------------------------------------------------------
expect_probe "TIOCSTI: EPERM" 'errno=EPERM' -- tiocsti
expect_probe "TIOCSTI with junk in the high 32 bits: EPERM" 'errno=EPERM' -- tiocsti high
expect_probe "TIOCLINUX: EPERM" 'errno=EPERM' -- tioclinux
expect_probe "TIOCLINUX with junk in the high 32 bits: EPERM" 'errno=EPERM' -- tioclinux high

# ---- io_uring, mounts, namespaces --------------------------------------------------------
expect_probe "io_uring_setup: EPERM" 'errno=EPERM' -- io_uring
expect_probe "mount(tmpfs on /tmp): EPERM" 'errno=EPERM' -- mount
expect_probe "fsopen(tmpfs): EPERM" 'errno=EPERM' -- fsopen
expect_probe "umount(/tmp): EPERM" 'errno=EPERM' -- umount /tmp
expect_probe "unshare(CLONE_NEWUSER): EPERM" 'errno=EPERM' -- userns
expect_probe "clone(CLONE_NEWUSER): EPERM" 'errno=EPERM' -- clone-userns
expect_probe "setns(net): EPERM" 'errno=EPERM' -- setns

# ---- other dangerous syscalls ------------------------------------------------------------
expect_probe "bpf: EPERM" 'errno=EPERM' -- bpf
expect_probe "perf_event_open: EPERM" 'errno=EPERM' -- perf
expect_probe "userfaultfd: EPERM" 'errno=EPERM' -- userfaultfd
expect_probe "add_key: EPERM" 'errno=EPERM' -- keyctl
expect_probe "kexec_load: EPERM" 'errno=EPERM' -- kexec
expect_probe "init_module: EPERM" 'errno=EPERM' -- init-module
expect_probe "personality(ADDR_NO_RANDOMIZE): EPERM" 'errno=EPERM' -- personality

# ---- socket families ---------------------------------------------------------------------
for family in AF_NETLINK AF_PACKET AF_VSOCK AF_ALG AF_KEY; do
    expect_probe "socket($family): EAFNOSUPPORT" 'errno=EAFNOSUPPORT' -- socket "$family"
done
for family in AF_INET AF_INET6 AF_UNIX; do
    expect_probe "socket($family): allowed" 'ok' -- socket "$family"
done

# ---- credentials -------------------------------------------------------------------------
Z=0000000000000000
CAPS_WANT="value=CapInh:$Z,CapPrm:$Z,CapEff:$Z,CapBnd:$Z,CapAmb:$Z,NoNewPrivs:1,Seccomp:2"
expect_probe "no capabilities (bounding set included), no_new_privs, seccomp filter" \
    "$CAPS_WANT" -- caps
wrun -- sh -c '"$0" caps' "$PROBE"
expect_eq "the same after another exec (through sh)" "$CAPS_WANT" "$OUT"

if is_root; then
    expect_probe "as root, the command is uid 0 inside" 'value=0,0,0,0' -- uid

    # The host's view: start a probe that waits forever, find it below the paddock process
    # we started, look at its uid, then stop paddock and see the probe go.
    start_bg sleep.fifo --workspace "$WS" -- "$PROBE" sleep-forever "$TAG-sleep"
    if read_bg_line && [ "$BG_LINE" = ok ]; then
        ok "a sandboxed sleep-forever is up"
        sandboxed=$(probe_pids_under "$BG_PID" "$TAG-sleep")
        if [ -z "$sandboxed" ]; then
            not_ok "the sandboxed probe is found below paddock (pid $BG_PID)"
        else
            ok "the sandboxed probe is found below paddock (pid $BG_PID)"
            for pid in $sandboxed; do
                host_uid=$(ps -o uid= -p "$pid" | tr -d ' ')
                expect_match "the host sees sandboxed pid $pid under a non-zero uid" \
                    '^[1-9][0-9]*$' "$host_uid"
                expect_match "all of pid $pid's host uids are non-zero" \
                    '^Uid:[[:space:]]+[1-9][0-9]*[[:space:]]+[1-9][0-9]*[[:space:]]+[1-9][0-9]*[[:space:]]+[1-9][0-9]*$' \
                    "$(grep '^Uid:' "/proc/$pid/status")"
                expect_match "pid $pid is in a pid namespace of its own" \
                    '^NSpid:[[:space:]]+[0-9]+([[:space:]]+[0-9]+)+$' \
                    "$(grep '^NSpid:' "/proc/$pid/status")"
            done
        fi
    else
        not_ok "a sandboxed sleep-forever is up"
        diag "stderr: $(cat "$BG_ERR")"
    fi
    stop_pid "$BG_PID" TERM
    expect_eq "stopping paddock (SIGTERM) ends the sandboxed probe" "" "$(probe_pids "$TAG-sleep")"
    expect_eq "stopping paddock (SIGTERM) leaves no process of the run" "" \
        "$(_scan_pids all "$TAG-sleep" "" 0)"
    exec {BG_FD}<&-
else
    skip "as root, the command is uid 0 inside and unprivileged on the host" "not root"
fi
