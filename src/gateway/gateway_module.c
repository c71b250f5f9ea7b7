/* gateway_module.c: loading the egress gateway module (gateway.h). */
#include "gateway.h"

#include "util.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef PADDOCK_MODULE_DIR
#define PADDOCK_MODULE_DIR "/usr/local/lib/paddock"
#endif
#define MODULE_NAME "paddock-gateway.so"

static const pdk_gateway_module *loaded;

/* The module beside the executable (a build tree), else in the installed module
 * directory. Never from a path the environment names: that would be a way to run code in
 * the supervisor. */
static char *module_path(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char *beside = xasprintf("%s/" MODULE_NAME, exe);
            if (access(beside, R_OK) == 0)
                return beside;
            free(beside);
        }
    }
    return xstrdup(PADDOCK_MODULE_DIR "/" MODULE_NAME);
}

const pdk_gateway_module *pdk_gateway_module_load(pdk_error *err)
{
    if (loaded)
        return loaded;
    _cleanup_free_ char *path = module_path();
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        pdk_error_set(err, ENOENT,
                      "cannot load the egress gateway (%s): %s (reinstall paddock, or remove "
                      "the policy's network section)",
                      path, why ? why : "unknown error");
        return NULL;
    }
    const pdk_gateway_module *m = dlsym(handle, PDK_GATEWAY_SYMBOL);
    if (!m || m->abi != PDK_GATEWAY_ABI) {
        pdk_error_set(err, EINVAL,
                      "%s is not this paddock's gateway module (ABI %u, want %u): reinstall "
                      "paddock",
                      path, m ? m->abi : 0, PDK_GATEWAY_ABI);
        dlclose(handle);
        return NULL;
    }
    loaded = m;
    return m;
}

void pdk_gateway_credentials_free(pdk_gateway_credential *credentials, size_t n)
{
    for (size_t i = 0; credentials && i < n; i++) {
        pdk_free_secret((char *)credentials[i].value);
        free((char *)credentials[i].placeholder);
        free((char *)credentials[i].placeholder_app_secret);
    }
    free(credentials);
}
