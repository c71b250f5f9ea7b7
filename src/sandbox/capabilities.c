/* capabilities.c: see capabilities.h. */
#include "capabilities.h"

#include "syscalls.h"

#include <errno.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int pdk_caps_drop_all(const char **what)
{
    unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                         SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                         SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0) {
        *what = "prctl(PR_SET_SECUREBITS)";
        return -1;
    }
    /* Up to the kernel's last capability: it answers EINVAL past it (cheaper than reading
     * /proc/sys/kernel/cap_last_cap). */
    for (int cap = 0; cap < 64; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
            if (errno == EINVAL && cap > 0)
                break;
            *what = "prctl(PR_CAPBSET_DROP)";
            return -1;
        }
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) {
        *what = "prctl(PR_CAP_AMBIENT_CLEAR_ALL)";
        return -1;
    }
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof(data));
    if (pdk_sys_capset(&header, data) < 0) {
        *what = "capset";
        return -1;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        *what = "prctl(PR_SET_NO_NEW_PRIVS)";
        return -1;
    }
    return 0;
}
