/* landlock.c: see landlock.h. The uapi structs are declared here because the distribution's
 * kernel headers may be older than the running kernel. */
#include "landlock.h"

#include "log.h"
#include "syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

struct ll_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

struct ll_net_port_attr {
    uint64_t allowed_access;
    uint64_t port;
};

#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH      1
#define LL_RULE_NET_PORT          2

#define LL_FS_EXECUTE                 (1ULL << 0)
#define LL_FS_WRITE_FILE              (1ULL << 1)
#define LL_FS_READ_FILE               (1ULL << 2)
#define LL_FS_READ_DIR                (1ULL << 3)
#define LL_FS_REMOVE_DIR              (1ULL << 4)
#define LL_FS_REMOVE_FILE             (1ULL << 5)
#define LL_FS_MAKE_CHAR               (1ULL << 6)
#define LL_FS_MAKE_DIR                (1ULL << 7)
#define LL_FS_MAKE_REG                (1ULL << 8)
#define LL_FS_MAKE_SOCK               (1ULL << 9)
#define LL_FS_MAKE_FIFO               (1ULL << 10)
#define LL_FS_MAKE_BLOCK              (1ULL << 11)
#define LL_FS_MAKE_SYM                (1ULL << 12)
#define LL_FS_REFER                   (1ULL << 13) /* ABI 2 */
#define LL_FS_TRUNCATE                (1ULL << 14) /* ABI 3 */
#define LL_FS_IOCTL_DEV               (1ULL << 15) /* ABI 5 */
#define LL_NET_BIND_TCP               (1ULL << 0)  /* ABI 4 */
#define LL_NET_CONNECT_TCP            (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL               (1ULL << 1)

static uint64_t fs_rights_for(int abi)
{
    uint64_t all = (LL_FS_MAKE_SYM << 1) - 1; /* ABI 1 */
    if (abi >= 2)
        all |= LL_FS_REFER;
    if (abi >= 3)
        all |= LL_FS_TRUNCATE;
    if (abi >= 5)
        all |= LL_FS_IOCTL_DEV;
    return all;
}

int pdk_landlock_abi(void)
{
    int abi = pdk_sys_landlock_create_ruleset(NULL, 0, LL_CREATE_RULESET_VERSION);
    return abi < 0 ? 0 : abi;
}

const char *pdk_landlock_missing(int abi)
{
    if (abi <= 0)
        return "Landlock itself (kernel < 5.13, or not in the lsm= list)";
    if (abi < 2)
        return "renames across directories (ABI 2), truncate (3), TCP rules (4), device "
               "ioctls (5), socket and signal scoping (6)";
    if (abi < 3)
        return "truncate (ABI 3), TCP rules (4), device ioctls (5), socket and signal "
               "scoping (6)";
    if (abi < 4)
        return "TCP rules (ABI 4), device ioctls (5), socket and signal scoping (6)";
    if (abi < 5)
        return "device ioctls (ABI 5), socket and signal scoping (6)";
    if (abi < 6)
        return "abstract unix socket and signal scoping (ABI 6)";
    if (abi < 7)
        return "audit logging of denials (ABI 7)";
    return "nothing";
}

int pdk_landlock_check_abi(int abi, int min_abi, bool allow_degraded, pdk_error *err)
{
    if (abi >= min_abi)
        return 0;
    if (allow_degraded) {
        pdk_warn("landlock ABI %d < required %d: running degraded without %s", abi, min_abi,
                 pdk_landlock_missing(abi));
        return 0;
    }
    return pdk_error_set(err, 0,
                         "landlock ABI %d < required %d (missing: %s): use a newer kernel, "
                         "lower landlock.min_abi in the policy, or pass --allow-degraded",
                         abi, min_abi, pdk_landlock_missing(abi));
}

static int add_path(int ruleset, const char *path, uint64_t access, uint64_t handled)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    struct ll_path_beneath_attr attr = {.allowed_access = access & handled, .parent_fd = fd};
    /* Rules on files may only carry file rights. */
    int r = pdk_sys_landlock_add_rule(ruleset, LL_RULE_PATH_BENEATH, &attr, 0);
    if (r < 0 && errno == EINVAL) {
        attr.allowed_access &=
            LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV;
        r = pdk_sys_landlock_add_rule(ruleset, LL_RULE_PATH_BENEATH, &attr, 0);
    }
    int saved = errno;
    close(fd);
    errno = saved;
    return r;
}

static int add_ports(int ruleset, const uint16_t *ports, size_t count, uint64_t access)
{
    for (size_t i = 0; i < count; i++) {
        struct ll_net_port_attr attr = {.allowed_access = access, .port = ports[i]};
        if (pdk_sys_landlock_add_rule(ruleset, LL_RULE_NET_PORT, &attr, 0) < 0)
            return -1;
    }
    return 0;
}

static int add_path_rules(int ruleset, const pdk_landlock_spec *spec, uint64_t handled,
                          const char **what)
{
    const uint64_t read = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
    const uint64_t device = read | LL_FS_WRITE_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV;
    for (size_t i = 0; spec->read_paths && spec->read_paths[i]; i++) {
        if (add_path(ruleset, spec->read_paths[i], read, handled) < 0) {
            *what = "landlock_add_rule (read)";
            return -1;
        }
    }
    for (size_t i = 0; spec->write_paths && spec->write_paths[i]; i++) {
        if (add_path(ruleset, spec->write_paths[i], handled & ~LL_FS_IOCTL_DEV, handled) < 0) {
            *what = "landlock_add_rule (write)";
            return -1;
        }
    }
    for (size_t i = 0; spec->device_paths && spec->device_paths[i]; i++) {
        if (add_path(ruleset, spec->device_paths[i], device, handled) < 0) {
            *what = "landlock_add_rule (devices)";
            return -1;
        }
    }
    return 0;
}

static void ruleset_attr_for(const pdk_landlock_spec *spec, struct ll_ruleset_attr *attr,
                             size_t *attr_size)
{
    int abi = spec->abi;
    memset(attr, 0, sizeof(*attr));
    attr->handled_access_fs = spec->without_filesystem ? 0 : fs_rights_for(abi);
    *attr_size = 8;
    if (abi >= 4 && (spec->restrict_tcp_bind || spec->restrict_tcp_connect)) {
        if (spec->restrict_tcp_bind)
            attr->handled_access_net |= LL_NET_BIND_TCP;
        if (spec->restrict_tcp_connect)
            attr->handled_access_net |= LL_NET_CONNECT_TCP;
        *attr_size = 16;
    }
    if (abi >= 6) {
        attr->scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
        *attr_size = 24;
    }
}

bool pdk_landlock_spec_restricts(const pdk_landlock_spec *spec)
{
    struct ll_ruleset_attr attr;
    size_t attr_size;
    ruleset_attr_for(spec, &attr, &attr_size);
    return attr.handled_access_fs || attr.handled_access_net || attr.scoped;
}

int pdk_landlock_build(const pdk_landlock_spec *spec, const char **what)
{
    struct ll_ruleset_attr attr;
    size_t attr_size;
    ruleset_attr_for(spec, &attr, &attr_size);
    int ruleset = pdk_sys_landlock_create_ruleset(&attr, attr_size, 0);
    if (ruleset < 0) {
        *what = "landlock_create_ruleset";
        return -1;
    }
    if (attr.handled_access_fs && add_path_rules(ruleset, spec, attr.handled_access_fs, what) < 0)
        goto fail;
    if (attr.handled_access_net & LL_NET_BIND_TCP) {
        if (add_ports(ruleset, spec->tcp_bind, spec->tcp_bind_count, LL_NET_BIND_TCP) < 0) {
            *what = "landlock_add_rule (tcp bind)";
            goto fail;
        }
    }
    if (attr.handled_access_net & LL_NET_CONNECT_TCP) {
        if (add_ports(ruleset, spec->tcp_connect, spec->tcp_connect_count, LL_NET_CONNECT_TCP) <
            0) {
            *what = "landlock_add_rule (tcp connect)";
            goto fail;
        }
    }
    return ruleset;
fail : {
    int saved = errno;
    close(ruleset);
    errno = saved;
    return -1;
}
}

int pdk_landlock_restrict(int ruleset_fd)
{
    return pdk_sys_landlock_restrict_self(ruleset_fd, 0);
}
