/* policy_builtin.c: what paddock knows without a policy file: the built-in lists of protected
 * and hidden paths (policy.h), and the built-in default policy, as YAML text (what `paddock
 * policy default` prints) and as the struct a file's missing keys start from
 * (pdk__policy_new), kept side by side so that they cannot drift apart.
 */
#include "policy_internal.h"

#include <string.h>

#define DEFAULT_MEMORY_BYTES 0
#define DEFAULT_PIDS         1024
#define DEFAULT_LANDLOCK_ABI 1

#define DEFAULT_APPROVAL_TIMEOUT 300
/* A held network request: refused before common clients give up (the MCP SDK's 60 s). */
#define DEFAULT_REQUEST_TIMEOUT 50
#define DEFAULT_MAX_HELD        32

#define BUILTIN_SOURCE "<built-in default>"

const char *const pdk_builtin_protected[] = {
    ".git/hooks/", ".git/config",           ".mcp.json",         ".vscode/",        ".idea/",
    ".codex/",     ".claude/settings.json", ".claude/commands/", ".claude/agents/", NULL,
};

const char *const pdk_builtin_protected_commit[] = {
    /* coding agents and editors: MCP servers, hooks, commands that run on their own */
    ".claude/settings.local.json",
    ".claude/hooks/",
    ".cursor/mcp.json",
    ".cursor/hooks.json",
    ".cursor/hooks/",
    ".gemini/settings.json",
    ".gemini/commands/",
    ".devcontainer/",
    ".devcontainer.json",
    /* run at a cd (direnv), at git operations (submodules, hook managers) */
    ".envrc",
    ".gitmodules",
    ".husky/",
    ".pre-commit-config.yaml",
    "lefthook.yml",
    ".lefthook.yml",
    /* package managers' and build tools' settings that name programs to run */
    ".yarnrc.yml",
    ".yarnrc",
    ".npmrc",
    ".pnpmfile.cjs",
    ".cargo/config.toml",
    ".cargo/config",
    NULL,
};

const char *const pdk_builtin_protected_home[] = {
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".gitconfig",
    ".config/git/",
    /* the agents' own executable configuration */
    ".claude/settings.json",
    ".claude/commands/",
    ".claude/agents/",
    ".claude/hooks/",
    ".claude/skills/",
    ".claude/plugins/",
    ".codex/config.toml",
    ".codex/skills/",
    ".gemini/settings.json",
    ".cursor/mcp.json",
    NULL,
};

/* Whether path has entry at its start (or, any_depth, after any '/'): the entry itself, or
 * for a directory entry ("x/") anything beneath it. */
static bool entry_at(const char *path, const char *entry, bool any_depth)
{
    size_t n = strlen(entry);
    bool dir = n > 0 && entry[n - 1] == '/';
    if (dir)
        n--;
    if (n == 0)
        return false;
    for (const char *at = path; at; at = any_depth ? strchr(at, '/') : NULL) {
        if (at != path)
            at++;
        if (strncmp(at, entry, n) == 0 && (at[n] == '\0' || (dir && at[n] == '/')))
            return true;
        if (!any_depth)
            break;
    }
    return false;
}

/* Whether path ends (at a component boundary) in one of the directories that lead to
 * entry: ".claude" for ".claude/settings.json", ".git" for ".git/hooks/". */
static bool ends_in_entry_dir(const char *path, const char *entry)
{
    size_t plen = strlen(path);
    for (const char *slash = strchr(entry, '/'); slash && slash[1];
         slash = strchr(slash + 1, '/')) {
        size_t n = (size_t)(slash - entry);
        if (plen >= n && strncmp(path + plen - n, entry, n) == 0 &&
            (plen == n || path[plen - n - 1] == '/'))
            return true;
    }
    return false;
}

bool pdk_protected_git_path(const char *path, bool is_dir)
{
    /* the components after the first ".git" one */
    const char *rest = NULL;
    for (const char *at = path; at; at = strchr(at, '/')) {
        if (at != path)
            at++;
        if (strncmp(at, ".git", 4) == 0 && (at[4] == '/' || at[4] == '\0')) {
            rest = at + 4;
            break;
        }
    }
    if (!rest)
        return false;
    if (*rest == '\0')
        return !is_dir; /* a ".git" file or symlink sends git elsewhere */
    rest++;
    const char *leaf = strrchr(rest, '/');
    leaf = leaf ? leaf + 1 : rest;
    static const char *const read_by_git[] = {"config", "config.worktree", "commondir"};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(read_by_git); i++)
        if (strcmp(leaf, read_by_git[i]) == 0)
            return true;
    for (const char *at = rest; at; at = strchr(at, '/')) {
        if (at != rest)
            at++;
        if (strncmp(at, "hooks", 5) == 0 && (at[5] == '/' || at[5] == '\0'))
            return true;
    }
    return false;
}

const char *pdk_builtin_protected_match(const char *path, bool is_dir)
{
    const char *const *lists[] = {pdk_builtin_protected, pdk_builtin_protected_commit};
    for (size_t l = 0; l < PDK_ARRAY_SIZE(lists); l++)
        for (size_t i = 0; lists[l][i]; i++)
            if (entry_at(path, lists[l][i], true) ||
                (!is_dir && ends_in_entry_dir(path, lists[l][i])))
                return lists[l][i];
    if (pdk_protected_git_path(path, is_dir))
        return ".git/";
    return NULL;
}

const char *const pdk_builtin_hidden_home[] = {
    ".ssh",
    ".aws",
    ".config/gh",
    ".lark-cli",
    ".local/share/lark-cli",
    ".local/share/keyrings",
    ".gnupg",
    ".netrc",
    ".docker",
    ".kube",
    ".password-store",
    ".config/gcloud",
    ".azure",
    ".git-credentials",
    ".config/git/credentials",
    NULL,
};
/* The built-in default, parsed by the same code as a file. Every value here is also the
 * default used when a file leaves the key out (pdk__policy_new), so the two cannot drift apart
 * without test_policy noticing. */
static const char default_policy_yaml[] =
    "# paddock's built-in default policy: what runs when no --policy is given.\n"
    "# docs/policy.md describes every key.\n"
    "version: 1\n"
    "filesystem:\n"
    "  read_deny: []   # hidden, in addition to the built-in credential list\n"
    "  read_allow: []  # bound read-only\n"
    "  write: []       # bound writable (the workspace always is, as an overlay)\n"
    "  protect: []     # read-only in the workspace, in addition to the built-in list\n"
    "env:\n"
    "  pass: []        # passed through even when the name looks like a secret\n"
    "  set: {}\n"
    "limits:\n"
    "  memory: 0       # no memory cgroup (a cgroup v1 attach costs an RCU grace period)\n"
    "  pids: 1024      # RLIMIT_NPROC in the sandbox's own user namespace\n"
    "  cpu: 0          # no CPU limit\n"
    "  timeout: 0      # no timeout\n"
    "landlock:\n"
    "  min_abi: 1      # refuse to run on a kernel without Landlock\n"
    "sandbox:\n"
    "  nested_userns: false\n"
    "commands:\n"
    "  default: allow  # allow, confine, ask or deny, for a command no rule matches\n"
    "  rules: []\n"
    "  examples: []    # checked when the policy loads\n"
    "approvals:\n"
    "  timeout: 300    # how long an ask waits for a human\n"
    "  on_timeout: deny\n"
    "  request_timeout: 50     # how long a held network request waits (then 504)\n"
    "  max_held_requests: 32   # held network requests at once (more: 429)\n";
pdk_policy *pdk__policy_new(const char *source)
{
    pdk_policy *p = xcalloc(1, sizeof(*p));
    p->source = xstrdup(source);
    p->read_deny = xcalloc(1, sizeof(char *));
    p->read_allow = xcalloc(1, sizeof(char *));
    p->write = xcalloc(1, sizeof(char *));
    p->protect = xcalloc(1, sizeof(char *));
    p->env_pass = xcalloc(1, sizeof(char *));
    p->memory_bytes = DEFAULT_MEMORY_BYTES;
    p->pids = DEFAULT_PIDS;
    p->cpu_millicores = 0;
    p->timeout_seconds = 0;
    p->landlock_min_abi = DEFAULT_LANDLOCK_ABI;
    p->nested_userns = false;
    p->commands.default_decision = PDK_DECISION_ALLOW;
    p->approval_timeout_seconds = DEFAULT_APPROVAL_TIMEOUT;
    p->approval_on_timeout = PDK_DECISION_DENY;
    p->approval_request_timeout_seconds = DEFAULT_REQUEST_TIMEOUT;
    p->approval_max_held = DEFAULT_MAX_HELD;
    p->network.default_decision = PDK_DECISION_DENY;
    p->network.passthrough = xcalloc(1, sizeof(char *));
    p->network.upstream_ca = xcalloc(1, sizeof(char *));
    p->network.max_connections = PDK_NET_DEFAULT_MAX_CONNECTIONS;
    p->network.idle_timeout_s = PDK_NET_DEFAULT_IDLE_TIMEOUT_S;
    return p;
}
int pdk_policy_load_default(const pdk_policy_context *ctx, pdk_policy **out, pdk_error *err)
{
    /* The defaults themselves (pdk__policy_new): the embedded text documents them, and
     * test_policy checks that parsing it gives exactly this. No YAML on the start path. */
    (void)ctx;
    (void)err;
    *out = pdk__policy_new(BUILTIN_SOURCE);
    pdk_sha256_hex(default_policy_yaml, sizeof(default_policy_yaml) - 1, (*out)->sha256);
    return 0;
}
const char *pdk_policy_default_text(void)
{
    return default_policy_yaml;
}
