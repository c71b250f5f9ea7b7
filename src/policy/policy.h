/* policy.h: the policy file (YAML, version 1) parsed into a typed struct.
 *
 * Parsing is apart from enforcement: this module only reads, validates and expands; the
 * sandbox modules consume the struct. docs/policy.md documents the schema.
 *
 * Errors: every problem found is collected as a diagnostic "FILE:LINE:COLUMN: message
 * (hint)"; the load fails when there is at least one. pdk_error gets the first one, the
 * list has all of them (for `paddock policy lint`).
 */
#ifndef PADDOCK_POLICY_H
#define PADDOCK_POLICY_H

#include "command_rules.h"
#include "net_rules.h"
#include "error.h"

#include <stdint.h>

typedef struct pdk_policy_diag {
    char *file;
    int line;      /* 1-based; 0 when unknown */
    int column;    /* 1-based; 0 when unknown */
    char *message; /* one line: problem, then the fix in parentheses where there is one */
} pdk_policy_diag;

typedef struct pdk_policy_diags {
    pdk_policy_diag *items;
    size_t count;
} pdk_policy_diags;

void pdk_policy_diags_free(pdk_policy_diags *diags);
/* "FILE:LINE:COLUMN: message" (new string). */
char *pdk_policy_diag_format(const pdk_policy_diag *diag);

/* The longest name of a persistent home (home.persist). */
#define PDK_HOME_NAME_MAX 64

/* Expansion context for paths in the policy. */
typedef struct pdk_policy_context {
    const char *home; /* the caller's $HOME, used to expand "~" and "~/..." */
} pdk_policy_context;

typedef struct pdk_env_assignment {
    char *name;
    char *value;
} pdk_env_assignment;

/* A credential the gateway puts on the wire for the sandbox (docs/policy.md, credentials):
 * the sandbox holds a placeholder, the gateway the value, only toward hosts. */
typedef enum pdk_credential_provider {
    PDK_CREDENTIAL_STATIC,              /* a value stored in the vault */
    PDK_CREDENTIAL_FEISHU_TENANT_TOKEN, /* minted from app_id and app_secret */
    PDK_CREDENTIAL_OAUTH2_REFRESH,      /* refresh_token grant against token_url */
} pdk_credential_provider;

typedef struct pdk_credential {
    char *name;
    pdk_credential_provider provider;
    int line;
    /* vault names: static: value; feishu: app_id, app_secret; oauth2: refresh_token,
     * client_id, client_secret (NULL when not given) */
    char *value_secret;
    char *app_id_secret, *app_secret_secret;
    char *refresh_token_secret, *client_id_secret, *client_secret_secret;
    char *token_url;
    char **hosts; /* host patterns it may go to; NULL-terminated, at least one */
    /* inject: header set on every request to the hosts ("Bearer {token}"), by the gateway
     * whatever the request had there; NULL header: none */
    char *inject_header;
    char *inject_value;
    /* the fields (names, any case) in which the placeholder is replaced; NULL: none */
    char **replace_in_headers;
    bool replace_in_body;  /* replace the placeholder in request bodies too (opt-in) */
    bool allow_plain_http; /* the value may go to its hosts over plain HTTP (else TLS only) */
    /* where the sandbox finds the placeholder */
    char *placeholder_env;
    char *placeholder_app_secret_env;
    char *placeholder_file;   /* absolute (~ expanded): a read-only file holding it */
    char *placeholder_prefix; /* what it starts with, for clients that check a key's shape
                               * (NULL: "t-" for a Feishu tenant token, else "pdk-ph-") */
} pdk_credential;

typedef struct pdk_policy {
    char *source;    /* file path as given, or "<built-in default>" */
    char sha256[65]; /* of the file's bytes (of the default's text for the built-in) */
    char *base_dir;  /* directory of the file (NULL for built-in) */

    /* filesystem: absolute, normalised paths ("~" expanded) except protect */
    char **read_deny;  /* hidden in addition to the built-in credential list */
    char **read_allow; /* bound read-only (into the sandbox home when under ~) */
    char **write;      /* bound writable */
    /* protect: entries relative to the workspace root ("." components removed, no "..");
     * entries written as "~/x" are absolute (expanded) and protect that home path. A
     * trailing "/" in the file marks a directory; it is kept in the string. */
    char **protect;

    /* env */
    char **env_pass; /* names passed through even when they look like secrets */
    pdk_env_assignment *env_set;
    size_t env_set_count;

    /* limits; 0 means "no limit" */
    int64_t memory_bytes;
    int64_t pids;
    int64_t cpu_millicores; /* cpu: 1.5 -> 1500 */
    int64_t timeout_seconds;

    /* landlock */
    int landlock_min_abi; /* 0: run on any kernel, even without Landlock */
    /* Optional TCP port allowlists (Landlock ABI >= 4). When has_tcp_* is false the
     * corresponding access is left to the network namespace. */
    bool has_tcp_bind;
    uint16_t *tcp_bind;
    size_t tcp_bind_count;
    bool has_tcp_connect;
    uint16_t *tcp_connect;
    size_t tcp_connect_count;

    /* sandbox */
    bool nested_userns; /* allow user namespaces (and mounts) inside the sandbox */

    /* home.persist: the name of a persistent home (STATE/homes/NAME shown as $HOME, kept
     * across runs: an agent's own state); NULL: $HOME is a fresh empty directory */
    char *home_persist;

    /* commands: the rules (default decision included); rule_lines[i] is the line of rule
     * i in the file (0 for the built-in). */
    pdk_command_rules commands;
    int *rule_lines;

    /* network: the egress gateway's rules (network.enabled: the section is there);
     * net_rule_lines[i] is the line of network rule i */
    pdk_net_rules network;
    int *net_rule_lines;

    /* credentials */
    pdk_credential *credentials;
    size_t credential_count;

    /* approvals: how long an `ask` waits, and what a timeout means (deny or allow);
     * request_timeout: how long a network request is held at most (then on_timeout: deny
     * refuses it with 504, before its client gives up); max_held: how many network
     * requests one gateway holds at once (more are refused with 429) */
    int64_t approval_timeout_seconds;
    pdk_decision approval_on_timeout;
    int64_t approval_request_timeout_seconds;
    size_t approval_max_held;
} pdk_policy;

/* The argv an example's command line stands for: its one simple command when the line is
 * one (split as the shell would), else `sh -c LINE`. New NULL-terminated list. */
char **pdk_policy_example_argv(const char *command_line);

/* "rule 3 (line 12: [git, push])", "the default (allow)" or similar: how a verdict came
 * about, for messages. New string. */
char *pdk_policy_describe_rule(const pdk_policy *policy, ssize_t rule);
/* The same for a network rule: "network rule 2 (line 9: open.feishu.cn POST,PUT ask)". */
char *pdk_policy_describe_net_rule(const pdk_policy *policy, ssize_t rule);

/* Protected paths: files that run code outside the sandbox later (git's configuration and
 * hooks, coding agents' and editors' settings, MCP servers, hooks and commands, direnv,
 * dev containers, package managers' settings naming programs, shell start-up files).
 * docs/policy.md ("Built-in lists") is the one description; every writable place a
 * sandbox has (the workspace, a writable bind, an agent's home layer) must apply them.
 * Entries are relative, a trailing "/" marks a directory and everything beneath it.
 *
 * pdk_builtin_protected: read-only in every sandbox at the workspace root and at the root
 * of every writable bind (a missing one gets an empty read-only directory in an overlay
 * workspace), and refused by `paddock commit` at every depth ("sub/.git/config",
 * "pkg/.mcp.json").
 * pdk_builtin_protected_commit: refused by commit at every depth, and left writable in the
 * sandbox, where the tools of a run read and write them (".npmrc", ".envrc",
 * ".claude/settings.local.json", ...).
 * Beyond the lists, what git reads or runs from a repository's directory at any depth
 * (pdk_protected_git_path), and in commit.c what core.hooksPath of the real repository's
 * configuration names and the configuration and hooks of a bare repository. */
extern const char *const pdk_builtin_protected[];
extern const char *const pdk_builtin_protected_commit[];

/* Home-relative: shell start-up files, ".gitconfig" and ".config/git/", and the agents'
 * own executable configuration ("~/.claude/settings.json", "~/.claude/commands/",
 * "~/.claude/agents/", "~/.claude/hooks/", "~/.codex/config.toml", ...). Read-only
 * wherever the sandbox could otherwise write them: when the workspace or a writable bind
 * contains them, whatever else of ~/.claude or ~/.codex a policy makes writable, and
 * always in a persistent home (home.persist), where the missing ones are made empty first
 * so that they cannot be created. A missing one inside a writable bind of the host's
 * (which writes straight to the host) cannot be made read-only: paddock run refuses such
 * a bind, naming it. A trailing "/" marks a directory. NULL-terminated. */
extern const char *const pdk_builtin_protected_home[];

/* True when path (workspace-relative) is something git reads or runs from a repository's
 * directory, at any depth: beneath a ".git" component, a "config", "config.worktree" or
 * "commondir" file or anything under "hooks" (".git/modules/x/hooks/y" included); or a
 * ".git" that is not a directory (is_dir false), which sends git elsewhere. */
bool pdk_protected_git_path(const char *path, bool is_dir);

/* The built-in entry that protects path (workspace-relative) at any depth, or NULL: an
 * entry of either list at the start of path or after any '/', a file or symlink (is_dir
 * false) where the directory of such an entry must be ("sub/.claude" as a symlink), or a
 * path of pdk_protected_git_path (".git/" then). */
const char *pdk_builtin_protected_match(const char *path, bool is_dir);

/* Home-relative credential locations hidden in every sandbox (".ssh", ".aws", ".gnupg",
 * ".config/gh", ...), in addition to the policy's filesystem.read_deny. NULL-terminated. */
extern const char *const pdk_builtin_hidden_home[];

const char *pdk_credential_provider_name(pdk_credential_provider provider);

/* The built-in default policy (what runs when no --policy is given). */
int pdk_policy_load_default(const pdk_policy_context *ctx, pdk_policy **out, pdk_error *err);

/* The built-in default as YAML text (documentation; parsing it gives the default). */
const char *pdk_policy_default_text(void);

/* Parse text (name is used in diagnostics). diags may be NULL; when given it is reset and,
 * on failure, holds every problem sorted by position (free with pdk_policy_diags_free).
 * On success every char ** list of the policy is a NULL-terminated array (possibly empty,
 * never NULL). Text over 1 MiB is refused. */
int pdk_policy_parse(const char *name, const char *text, size_t len, const pdk_policy_context *ctx,
                     pdk_policy **out, pdk_policy_diags *diags, pdk_error *err);

/* Read and parse a file. An unreadable file is an error naming the file and the cause. */
int pdk_policy_load_file(const char *path, const pdk_policy_context *ctx, pdk_policy **out,
                         pdk_policy_diags *diags, pdk_error *err);

void pdk_policy_free(pdk_policy *policy);

/* What a policy that loaded says that is likely not what its author means (for `paddock
 * policy lint`): out is reset and gets one diagnostic each, in file order (free with
 * pdk_policy_diags_free). Now: a network rule naming a loopback host (127.0.0.1, ::1,
 * localhost...) without host_loopback, which reaches nothing: the sandbox's own loopback
 * never goes through the gateway, and the host's needs host_loopback: true. */
void pdk_policy_warnings(const pdk_policy *policy, pdk_policy_diags *out);

/* Size with optional unit: "512", "64K", "2M", "2G", "1T" (powers of 1024), "2GiB", "2GB"
 * also accepted. Returns 0 or -1 (EINVAL, ERANGE). */
int pdk_parse_size(const char *s, int64_t *out_bytes);
/* Duration: "600" (seconds), "90s", "10m", "2h", "1d". */
int pdk_parse_duration(const char *s, int64_t *out_seconds);

#endif
