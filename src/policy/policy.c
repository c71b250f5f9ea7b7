/* policy.c: the policy file (YAML, version 1) parsed into a struct pdk_policy. See policy.h;
 * docs/policy.md documents the schema for users.
 *
 * The text goes through libyaml twice:
 *   1. as events (prescan): anchors, aliases, explicit tags, a second document and absurd
 *      nesting are refused here, before anything builds a graph from them (an alias can
 *      turn the tree into a cycle or an exponential walk);
 *   2. as a document (yaml_parser_load), walked against the schema tables below. Every node
 *      keeps its start mark, so each problem becomes a diagnostic FILE:LINE:COLUMN.
 * A problem is never fatal on its own: the walk goes on so that one run shows all of them
 * (up to MAX_DIAGS). The load fails when there is at least one; the partly filled policy is
 * then freed and never reaches the caller.
 */
#include "policy.h"
#include "output.h"

#include "display.h"

#include "fsutil.h"
#include "shell.h"
#include "vault.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yaml.h>

#define MAX_POLICY_BYTES ((size_t)1 << 20)
#define MAX_DEPTH        32
#define MAX_DIAGS        200
#define MAX_PIDS         4194304 /* the kernel's PID_MAX_LIMIT */
#define MAX_CPU_CORES    65536
#define MAX_TIMEOUT      (INT64_MAX / 1000000000) /* still fits in int64 nanoseconds */
#define MAX_LANDLOCK_ABI 64
#define MAX_SHOWN_CHARS  64 /* of a value quoted in a message */

#define DEFAULT_MEMORY_BYTES     0
#define DEFAULT_PIDS             1024
#define DEFAULT_LANDLOCK_ABI     1
#define DEFAULT_APPROVAL_TIMEOUT 300
#define MAX_APPROVAL_TIMEOUT     (30 * 24 * 3600)
/* A held network request: refused before common clients give up (the MCP SDK's 60 s). */
#define DEFAULT_REQUEST_TIMEOUT 50
#define CLIENT_TIMEOUT_COMMON   60
#define DEFAULT_MAX_HELD        32
#define MAX_MAX_HELD            4096

#define BUILTIN_SOURCE    "<built-in default>"
#define TOO_LARGE_MESSAGE "the policy is larger than 1 MiB (is this the right file?)"

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
 * default used when a file leaves the key out (policy_new), so the two cannot drift apart
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

typedef struct parse_state {
    const char *name;
    const char *text;
    size_t len;
    char *home; /* normalised ctx->home, or NULL when none is known */
    yaml_document_t *doc;
    pdk_policy *policy;
    bool saw_version;
    pdk_policy_diag *diags;
    size_t ndiags;
    bool truncated;
    struct pending_example *examples; /* checked after the walk */
    size_t nexamples;
} parse_state;

typedef struct key_spec {
    const char *name;
    void (*handle)(parse_state *st, const char *field, yaml_node_t *value);
} key_spec;

/* One key: value pair of a mapping, as collected by map_entries(). */
typedef struct map_entry {
    const char *key; /* NULL when the key is not a usable scalar (reported) */
    size_t key_len;
    size_t order;
    yaml_node_t *key_node;
    yaml_node_t *value;
    bool duplicate; /* a later repetition of an earlier key (reported) */
} map_entry;

/* ---- diagnostics ---- */

static int clamp_int(size_t v)
{
    return v > INT_MAX ? INT_MAX : (int)v;
}

static void diag_v(parse_state *st, size_t line, size_t column, const char *fmt, va_list ap)
    PDK_PRINTF(4, 0);
static void diag_v(parse_state *st, size_t line, size_t column, const char *fmt, va_list ap)
{
    if (st->ndiags >= MAX_DIAGS) {
        st->truncated = true;
        return;
    }
    if (st->ndiags % 16 == 0)
        st->diags = xrealloc(st->diags, (st->ndiags + 16) * sizeof(*st->diags));
    pdk_policy_diag *d = &st->diags[st->ndiags++];
    d->file = xstrdup(st->name);
    d->line = clamp_int(line);
    d->column = clamp_int(column);
    d->message = xvasprintf(fmt, ap);
}

/* line and column are 1-based; 0 when unknown. */
static void diag_at(parse_state *st, size_t line, size_t column, const char *fmt, ...)
    PDK_PRINTF(4, 5);
static void diag_at(parse_state *st, size_t line, size_t column, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_v(st, line, column, fmt, ap);
    va_end(ap);
}

static void diag_mark(parse_state *st, const yaml_mark_t *mark, const char *fmt, ...)
    PDK_PRINTF(3, 4);
static void diag_mark(parse_state *st, const yaml_mark_t *mark, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_v(st, mark->line + 1, mark->column + 1, fmt, ap);
    va_end(ap);
}

#define diag_node(st, node, ...) diag_mark((st), &(node)->start_mark, __VA_ARGS__)

/* Stable sort by position (insertion sort: at most MAX_DIAGS items); diagnostics without a
 * position come first. */
static void sort_diags(pdk_policy_diag *d, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        pdk_policy_diag cur = d[i];
        size_t j = i;
        while (j > 0 && (d[j - 1].line > cur.line ||
                         (d[j - 1].line == cur.line && d[j - 1].column > cur.column))) {
            d[j] = d[j - 1];
            j--;
        }
        d[j] = cur;
    }
}

/* s quoted for a one-line message: "...", escaped as display.h says (quotes too), and long
 * values cut (between characters) with "...". */
static char *quote(const char *s, size_t len)
{
    size_t shown = pdk_display_cut(s, len, MAX_SHOWN_CHARS);
    pdk_buf b = {0};
    pdk_buf_puts(&b, "\"");
    pdk_display_escape(&b, s, shown, PDK_DISPLAY_QUOTE);
    if (shown < len)
        pdk_buf_puts(&b, "...");
    pdk_buf_puts(&b, "\"");
    return pdk_buf_steal(&b);
}

static char *quote_str(const char *s)
{
    return quote(s, strlen(s));
}

/* ---- nodes ---- */

static bool node_is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    return n->data.scalar.length == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
           strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

static bool plain_is(const yaml_node_t *n, const char *text)
{
    return strcmp((const char *)n->data.scalar.value, text) == 0;
}

/* What a node is, for "expected X, got Y" (new string). */
static char *describe(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_MAPPING_NODE:
        return xstrdup("a mapping");
    case YAML_SEQUENCE_NODE:
        return xstrdup("a list");
    case YAML_SCALAR_NODE:
        if (node_is_null(n))
            return xstrdup("nothing");
        return quote((const char *)n->data.scalar.value, n->data.scalar.length);
    case YAML_NO_NODE:
    default:
        return xstrdup("nothing");
    }
}

static yaml_node_t *node_at(parse_state *st, int index)
{
    return yaml_document_get_node(st->doc, index);
}

static void expected(parse_state *st, const char *field, yaml_node_t *n, const char *what)
{
    _cleanup_free_ char *got = describe(n);
    const char *hint = "";
    if (node_is_null(n)) {
        if (strcmp(what, "a list") == 0)
            hint = " (use [] for an empty list)";
        else if (strcmp(what, "a mapping") == 0)
            hint = " (add entries under it, or remove the key)";
    }
    diag_node(st, n, "%s: expected %s, got %s%s", field, what, got, hint);
}

static bool expect_type(parse_state *st, const char *field, yaml_node_t *n, yaml_node_type_t type)
{
    if (n->type == type && !node_is_null(n))
        return true;
    const char *what = type == YAML_MAPPING_NODE    ? "a mapping"
                       : type == YAML_SEQUENCE_NODE ? "a list"
                                                    : "a value";
    expected(st, field, n, what);
    return false;
}

/* The text of a scalar node (NUL-terminated by libyaml), or NULL after a diagnostic when n
 * is not a non-null scalar or contains a NUL character. what names the expected thing. */
static const char *scalar_text(parse_state *st, const char *field, yaml_node_t *n, const char *what)
{
    if (n->type != YAML_SCALAR_NODE || node_is_null(n)) {
        expected(st, field, n, what);
        return NULL;
    }
    const char *v = (const char *)n->data.scalar.value;
    if (memchr(v, '\0', n->data.scalar.length)) {
        _cleanup_free_ char *q = quote(v, n->data.scalar.length);
        diag_node(st, n, "%s: %s contains a NUL character", field, q);
        return NULL;
    }
    return v;
}

static int compare_entries(const void *a, const void *b)
{
    const map_entry *x = *(const map_entry *const *)a, *y = *(const map_entry *const *)b;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(x->key, y->key, n);
    if (c)
        return c;
    if (x->key_len != y->key_len)
        return x->key_len < y->key_len ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* The pairs of a mapping node, in document order. Keys that are not scalars and repeated
 * keys are reported here (where names the mapping: "limits", "env.set", NULL for the top
 * level) and marked so that callers skip them. */
static map_entry *map_entries(parse_state *st, yaml_node_t *map, const char *where, size_t *count)
{
    yaml_node_pair_t *start = map->data.mapping.pairs.start;
    size_t n = (size_t)(map->data.mapping.pairs.top - start);
    map_entry *entries = xcalloc(n, sizeof(*entries));
    _cleanup_free_ map_entry **sorted = xcalloc(n, sizeof(*sorted));
    size_t nsorted = 0;
    _cleanup_free_ char *in = where ? xasprintf("in \"%s\"", where) : xstrdup("at the top level");

    for (size_t i = 0; i < n; i++) {
        map_entry *e = &entries[i];
        e->order = i;
        e->key_node = node_at(st, start[i].key);
        e->value = node_at(st, start[i].value);
        if (!e->key_node || !e->value)
            continue;
        if (e->key_node->type != YAML_SCALAR_NODE || node_is_null(e->key_node)) {
            _cleanup_free_ char *got = describe(e->key_node);
            diag_node(st, e->key_node, "expected a key name %s, got %s", in, got);
            continue;
        }
        e->key = (const char *)e->key_node->data.scalar.value;
        e->key_len = e->key_node->data.scalar.length;
        sorted[nsorted++] = e;
    }

    /* Sorting finds repeats in O(n log n) even in a mapping with thousands of keys. */
    if (nsorted > 1)
        qsort(sorted, nsorted, sizeof(*sorted), compare_entries);
    map_entry *first = nsorted ? sorted[0] : NULL; /* of the current group of equal keys */
    for (size_t i = 1; i < nsorted; i++) {
        map_entry *e = sorted[i];
        if (e->key_len != first->key_len || memcmp(e->key, first->key, e->key_len) != 0) {
            first = e;
            continue;
        }
        e->duplicate = true;
        _cleanup_free_ char *q = quote(e->key, e->key_len);
        diag_node(st, e->key_node, "duplicate key %s %s (first at line %zu; remove one)", q, in,
                  first->key_node->start_mark.line + 1);
    }
    *count = n;
    return entries;
}

static bool key_is(const map_entry *e, const char *name)
{
    return e->key_len == strlen(name) && memcmp(e->key, name, e->key_len) == 0;
}

/* Levenshtein distance; SIZE_MAX for strings too long to be a misspelt key. */
static size_t edit_distance(const char *a, size_t la, const char *b)
{
    size_t lb = strlen(b);
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    size_t prev[65], cur[65];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t best = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            cur[j] = best;
        }
        memcpy(prev, cur, (lb + 1) * sizeof(size_t));
    }
    return prev[lb];
}

static void unknown_key(parse_state *st, const map_entry *e, const char *section,
                        const key_spec *keys, size_t nkeys)
{
    _cleanup_free_ char *q = quote(e->key, e->key_len);
    _cleanup_free_ char *in =
        section ? xasprintf("in \"%s\"", section) : xstrdup("at the top level");
    const char *best = NULL;
    size_t best_distance = 3; /* suggest only within distance 2 */
    for (size_t i = 0; i < nkeys; i++) {
        size_t d = edit_distance(e->key, e->key_len, keys[i].name);
        if (d < best_distance) {
            best_distance = d;
            best = keys[i].name;
        }
    }
    if (best) {
        diag_node(st, e->key_node, "unknown key %s %s (did you mean \"%s\"?)", q, in, best);
        return;
    }
    pdk_buf known = {0};
    for (size_t i = 0; i < nkeys; i++)
        pdk_buf_printf(&known, "%s%s", i ? ", " : "", keys[i].name);
    diag_node(st, e->key_node, "unknown key %s %s (known keys: %s)", q, in, known.data);
    pdk_buf_free(&known);
}

/* Walk a mapping against a table of keys; section is NULL for the top level. */
static void walk_section(parse_state *st, yaml_node_t *map, const char *section,
                         const key_spec *keys, size_t nkeys)
{
    if (section && !expect_type(st, section, map, YAML_MAPPING_NODE))
        return;
    size_t n = 0;
    _cleanup_free_ map_entry *entries = map_entries(st, map, section, &n);
    for (size_t i = 0; i < n; i++) {
        map_entry *e = &entries[i];
        if (!e->key || e->duplicate)
            continue;
        const key_spec *spec = NULL;
        for (size_t k = 0; k < nkeys && !spec; k++)
            if (key_is(e, keys[k].name))
                spec = &keys[k];
        if (spec) {
            _cleanup_free_ char *field =
                section ? xasprintf("%s.%s", section, spec->name) : xstrdup(spec->name);
            spec->handle(st, field, e->value);
            continue;
        }
        unknown_key(st, e, section, keys, nkeys);
    }
}

/* The values of a mapping's keys (values[k] for keys[k], NULL when absent; the handlers are
 * not used), any other key reported; false (after a diagnostic) when n is not a mapping. */
static bool mapping_values(parse_state *st, const char *field, yaml_node_t *n, const key_spec *keys,
                           size_t nkeys, yaml_node_t **values)
{
    if (!expect_type(st, field, n, YAML_MAPPING_NODE))
        return false;
    for (size_t k = 0; k < nkeys; k++)
        values[k] = NULL;
    size_t count = 0;
    _cleanup_free_ map_entry *entries = map_entries(st, n, field, &count);
    for (size_t i = 0; i < count; i++) {
        map_entry *e = &entries[i];
        if (!e->key || e->duplicate)
            continue;
        size_t k = 0;
        while (k < nkeys && !key_is(e, keys[k].name))
            k++;
        if (k < nkeys)
            values[k] = e->value;
        else
            unknown_key(st, e, field, keys, nkeys);
    }
    return true;
}

/* The items of a list node; false (after a diagnostic) when n is not a list. */
static bool list_items(parse_state *st, const char *field, yaml_node_t *n, yaml_node_item_t **items,
                       size_t *count)
{
    *items = NULL;
    *count = 0;
    if (n->type != YAML_SEQUENCE_NODE) {
        expected(st, field, n, "a list");
        return false;
    }
    *items = n->data.sequence.items.start;
    *count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    return true;
}

/* fn on each item of a list node (field "FIELD[i]"); a diagnostic when n is not a list. */
static void each_item(parse_state *st, const char *field, yaml_node_t *n,
                      void (*fn)(parse_state *st, const char *field, yaml_node_t *item))
{
    yaml_node_item_t *items;
    size_t count;
    if (!list_items(st, field, n, &items, &count))
        return;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = node_at(st, items[i]);
        _cleanup_free_ char *f = xasprintf("%s[%zu]", field, i);
        if (item)
            fn(st, f, item);
    }
}

/* ---- numbers ---- */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Decimal digits only (no sign, no spaces) in [0, max]. Returns 0, -EINVAL or -ERANGE. */
static int parse_decimal(const char *s, uint64_t max, uint64_t *out)
{
    if (!is_digit(*s))
        return -EINVAL;
    uint64_t v = 0;
    bool overflow = false;
    for (; *s; s++) {
        if (!is_digit(*s))
            return -EINVAL;
        uint64_t d = (uint64_t)(*s - '0');
        if (overflow || v > max / 10 || v * 10 + d > max)
            overflow = true;
        else
            v = v * 10 + d;
    }
    if (overflow)
        return -ERANGE;
    *out = v;
    return 0;
}

/* Leading decimal digits of *sp into *v (saturating at INT64_MAX, *overflow set). */
static bool take_digits(const char **sp, uint64_t *v, bool *overflow)
{
    const char *s = *sp;
    if (!is_digit(*s))
        return false;
    *v = 0;
    *overflow = false;
    for (; is_digit(*s); s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (*overflow || *v > ((uint64_t)INT64_MAX - d) / 10)
            *overflow = true;
        else
            *v = *v * 10 + d;
    }
    *sp = s;
    return true;
}

int pdk_parse_size(const char *s, int64_t *out_bytes)
{
    uint64_t v;
    bool overflow;
    if (!s || !take_digits(&s, &v, &overflow)) {
        errno = EINVAL;
        return -1;
    }
    unsigned shift = 0;
    switch (*s) {
    case 'k':
    case 'K':
        shift = 10;
        break;
    case 'm':
    case 'M':
        shift = 20;
        break;
    case 'g':
    case 'G':
        shift = 30;
        break;
    case 't':
    case 'T':
        shift = 40;
        break;
    default:
        break;
    }
    if (shift) {
        s++;
        if (*s == 'i' || *s == 'I') /* 2Gi, 2GiB */
            s++;
    }
    if (*s == 'B' || *s == 'b')
        s++;
    if (*s) {
        errno = EINVAL;
        return -1;
    }
    if (overflow || v > ((uint64_t)INT64_MAX >> shift)) {
        errno = ERANGE;
        return -1;
    }
    *out_bytes = (int64_t)(v << shift);
    return 0;
}

int pdk_parse_duration(const char *s, int64_t *out_seconds)
{
    uint64_t v;
    bool overflow;
    if (!s || !take_digits(&s, &v, &overflow)) {
        errno = EINVAL;
        return -1;
    }
    uint64_t unit = 1;
    switch (*s) {
    case 's':
        s++;
        break;
    case 'm':
        unit = 60;
        s++;
        break;
    case 'h':
        unit = 3600;
        s++;
        break;
    case 'd':
        unit = 86400;
        s++;
        break;
    default:
        break;
    }
    if (*s) {
        errno = EINVAL;
        return -1;
    }
    if (overflow || v > (uint64_t)INT64_MAX / unit) {
        errno = ERANGE;
        return -1;
    }
    *out_seconds = (int64_t)(v * unit);
    return 0;
}

/* Cores with up to three decimals ("1.5") as millicores. Returns 0, -EINVAL, -ERANGE, or
 * -EDOM when finer than a millicore. */
static int parse_cpu(const char *s, int64_t *millicores)
{
    uint64_t whole = 0;
    bool overflow = false;
    bool have_whole = take_digits(&s, &whole, &overflow);
    uint64_t frac = 0;
    int frac_digits = 0;
    bool too_fine = false;
    if (*s == '.') {
        s++;
        for (; is_digit(*s); s++) {
            if (frac_digits < 3) {
                frac = frac * 10 + (uint64_t)(*s - '0');
                frac_digits++;
            } else if (*s != '0') {
                too_fine = true;
            }
        }
    }
    bool have_frac = frac_digits > 0;
    for (int i = frac_digits; i < 3; i++) /* ".5" -> 500 thousandths */
        frac *= 10;
    if ((!have_whole && !have_frac) || *s)
        return -EINVAL;
    if (overflow || whole > MAX_CPU_CORES)
        return -ERANGE;
    if (too_fine)
        return -EDOM;
    *millicores = (int64_t)(whole * 1000 + frac);
    return 0;
}

/* ---- values ---- */

static void handle_version(parse_state *st, const char *field, yaml_node_t *n)
{
    st->saw_version = true;
    const char *v = scalar_text(st, field, n, "the integer 1");
    if (!v)
        return;
    _cleanup_free_ char *q = quote_str(v);
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
        diag_node(st, n, "version: expected the integer 1, got the string %s (remove the quotes)",
                  q);
        return;
    }
    uint64_t version;
    if (parse_decimal(v, UINT32_MAX, &version) != 0) {
        diag_node(st, n, "version: expected the integer 1, got %s", q);
        return;
    }
    if (version != 1)
        diag_node(st, n,
                  "version: %" PRIu64 " is not supported (this version of paddock reads "
                  "version 1)",
                  version);
}

/* Expand and normalise one path. "~" and "~/x" become absolute under the home directory
 * (and must stay under it); "/x" is normalised; a relative path is accepted only when
 * workspace_relative (protect), normalised and kept relative, and must not climb out with
 * "..". Returns a new string, or NULL after a diagnostic. */
static char *resolve_path(parse_state *st, const char *field, yaml_node_t *n, const char *text,
                          bool workspace_relative)
{
    _cleanup_free_ char *q = quote_str(text);
    _cleanup_free_ char *path = NULL;
    if (!*text) {
        diag_node(st, n, "%s: empty path", field);
        return NULL;
    }
    if (text[0] == '~') {
        if (text[1] != '\0' && text[1] != '/') {
            diag_node(st, n, "%s: %s: \"~user\" paths are not supported (write the absolute path)",
                      field, q);
            return NULL;
        }
        if (!st->home) {
            diag_node(st, n,
                      "%s: %s cannot be expanded: no home directory is known (set $HOME, or "
                      "write an absolute path)",
                      field, q);
            return NULL;
        }
        _cleanup_free_ char *joined = pdk_path_join(st->home, text + 1);
        path = pdk_path_normalize(joined);
        if (!path || !pdk_path_is_within(path, st->home)) {
            diag_node(st, n, "%s: %s leaves the home directory (write the absolute path)", field,
                      q);
            return NULL;
        }
    } else if (text[0] == '/') {
        path = pdk_path_normalize(text);
    } else if (workspace_relative) {
        /* Lexical normalisation of a relative path: drop "." and empty components, resolve
         * ".." inside it; climbing above the start is an escape. */
        size_t len = strlen(text), o = 0;
        path = xmalloc(len + 2);
        const char *p = text;
        while (*p) {
            while (*p == '/')
                p++;
            if (!*p)
                break;
            const char *end = strchrnul(p, '/');
            size_t part = (size_t)(end - p);
            if (part == 1 && p[0] == '.') {
                /* nothing */
            } else if (part == 2 && p[0] == '.' && p[1] == '.') {
                if (o == 0) {
                    diag_node(st, n,
                              "%s: %s leaves the workspace (protect paths are relative to the "
                              "workspace root; remove the \"..\")",
                              field, q);
                    return NULL;
                }
                while (o > 0 && path[o - 1] != '/')
                    o--;
                if (o > 0)
                    o--;
            } else {
                if (o > 0)
                    path[o++] = '/';
                memcpy(path + o, p, part);
                o += part;
            }
            p = end;
        }
        path[o] = '\0';
        if (o == 0) {
            diag_node(st, n, "%s: %s is the workspace itself (name a file or directory inside it)",
                      field, q);
            return NULL;
        }
    } else {
        diag_node(st, n, "%s: %s must be absolute or start with ~/", field, q);
        return NULL;
    }
    if (workspace_relative && pdk_str_has_suffix(text, "/") && !pdk_str_has_suffix(path, "/")) {
        char *with_slash = xasprintf("%s/", path);
        free(path);
        path = with_slash;
    }
    return steal_pointer(&path);
}

static void path_list(parse_state *st, const char *field, yaml_node_t *n, char ***out,
                      bool workspace_relative, bool hides)
{
    size_t count;
    yaml_node_item_t *items;
    if (!list_items(st, field, n, &items, &count))
        return;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = node_at(st, items[i]);
        if (!item)
            continue;
        /* A plain ~ is null to YAML, but in a list of paths it can only mean the home. */
        bool tilde = item->type == YAML_SCALAR_NODE &&
                     item->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && plain_is(item, "~");
        const char *text = tilde ? "~" : scalar_text(st, field, item, "a path");
        if (!text)
            continue;
        char *path = resolve_path(st, field, item, text, workspace_relative);
        if (path && hides && strcmp(path, "/") == 0) {
            /* Hiding / hides everything the command could run. */
            diag_node(st, item,
                      "%s: / would hide the whole system, so nothing could run (name "
                      "the directories to hide)",
                      field);
            free(path);
            continue;
        }
        if (path)
            pdk_strv_push_take(out, path);
    }
}

static void handle_read_deny(parse_state *st, const char *field, yaml_node_t *n)
{
    path_list(st, field, n, &st->policy->read_deny, false, true);
}

static void handle_read_allow(parse_state *st, const char *field, yaml_node_t *n)
{
    path_list(st, field, n, &st->policy->read_allow, false, false);
}

static void handle_write(parse_state *st, const char *field, yaml_node_t *n)
{
    path_list(st, field, n, &st->policy->write, false, false);
}

static void handle_protect(parse_state *st, const char *field, yaml_node_t *n)
{
    path_list(st, field, n, &st->policy->protect, true, false);
}

/* [A-Za-z_][A-Za-z0-9_]*, with a trailing "*" when glob is allowed. */
static bool env_name_valid(const char *s, size_t len, bool glob)
{
    if (glob && len > 1 && s[len - 1] == '*')
        len--;
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        if (!alpha && (i == 0 || !is_digit(c)))
            return false;
    }
    return true;
}

static void handle_env_pass(parse_state *st, const char *field, yaml_node_t *n)
{
    size_t count;
    yaml_node_item_t *items;
    if (!list_items(st, field, n, &items, &count))
        return;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = node_at(st, items[i]);
        if (!item)
            continue;
        const char *name = scalar_text(st, field, item, "a variable name");
        if (!name)
            continue;
        _cleanup_free_ char *q = quote_str(name);
        if (strcmp(name, "*") == 0)
            diag_node(st, item,
                      "%s: \"*\" would pass every variable, secrets included (name them, or "
                      "use a prefix such as \"LC_*\")",
                      field);
        else if (!env_name_valid(name, strlen(name), true))
            diag_node(st, item,
                      "%s: %s is not a variable name (letters, digits and _, not starting with "
                      "a digit; a trailing * matches a prefix)",
                      field, q);
        else
            pdk_strv_push(&st->policy->env_pass, name);
    }
}

static void handle_env_set(parse_state *st, const char *field, yaml_node_t *n)
{
    if (!expect_type(st, field, n, YAML_MAPPING_NODE))
        return;
    pdk_policy *p = st->policy;
    size_t count = 0;
    _cleanup_free_ map_entry *entries = map_entries(st, n, field, &count);
    for (size_t i = 0; i < count; i++) {
        map_entry *e = &entries[i];
        if (!e->key || e->duplicate)
            continue;
        if (!env_name_valid(e->key, e->key_len, false)) {
            _cleanup_free_ char *q = quote(e->key, e->key_len);
            diag_node(st, e->key_node,
                      "%s: %s is not a variable name (letters, digits and _, not starting with "
                      "a digit)",
                      field, q);
            continue;
        }
        _cleanup_free_ char *value_field = xasprintf("%s.%s", field, e->key);
        if (node_is_null(e->value)) {
            diag_node(st, e->value, "%s: missing value (write \"\" for an empty string)",
                      value_field);
            continue;
        }
        const char *value = scalar_text(st, value_field, e->value, "a value");
        if (!value)
            continue;
        p->env_set = xrealloc(p->env_set, (p->env_set_count + 1) * sizeof(*p->env_set));
        p->env_set[p->env_set_count].name = xstrdup(e->key);
        p->env_set[p->env_set_count].value = xstrdup(value);
        p->env_set_count++;
    }
}

static bool is_unlimited(const char *text)
{
    return strcmp(text, "unlimited") == 0;
}

static void handle_memory(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = scalar_text(st, field, n, "a size");
    if (!v)
        return;
    int64_t bytes;
    _cleanup_free_ char *q = quote_str(v);
    if (is_unlimited(v))
        st->policy->memory_bytes = 0;
    else if (pdk_parse_size(v, &bytes) == 0)
        st->policy->memory_bytes = bytes;
    else if (errno == ERANGE)
        diag_node(st, n, "%s: %s is too large", field, q);
    else
        diag_node(st, n, "%s: %s is not a size (use a number with K, M, G or T, e.g. 2G)", field,
                  q);
}

static void handle_pids(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = scalar_text(st, field, n, "a number");
    if (!v)
        return;
    _cleanup_free_ char *q = quote_str(v);
    uint64_t pids = 0;
    int r = is_unlimited(v) ? 0 : parse_decimal(v, MAX_PIDS, &pids);
    if (r == 0)
        st->policy->pids = (int64_t)pids;
    else if (r == -ERANGE)
        diag_node(st, n, "%s: %s is too large (at most %d)", field, q, MAX_PIDS);
    else
        diag_node(st, n,
                  "%s: %s is not a number of processes (use a positive integer; 0 or unlimited "
                  "for no limit)",
                  field, q);
}

static void handle_cpu(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = scalar_text(st, field, n, "a number of cores");
    if (!v)
        return;
    _cleanup_free_ char *q = quote_str(v);
    int64_t millicores = 0;
    int r = is_unlimited(v) ? 0 : parse_cpu(v, &millicores);
    if (r == 0)
        st->policy->cpu_millicores = millicores;
    else if (r == -ERANGE)
        diag_node(st, n, "%s: %s is too large (at most %d cores)", field, q, MAX_CPU_CORES);
    else if (r == -EDOM)
        diag_node(st, n, "%s: %s is finer than 0.001 cores (use at most 3 decimals)", field, q);
    else
        diag_node(st, n,
                  "%s: %s is not a number of cores (e.g. 2 or 1.5; 0 or unlimited for no "
                  "limit)",
                  field, q);
}

static void handle_timeout(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = scalar_text(st, field, n, "a duration");
    if (!v)
        return;
    _cleanup_free_ char *q = quote_str(v);
    int64_t seconds = 0;
    int r = is_unlimited(v) ? 0 : pdk_parse_duration(v, &seconds) == 0 ? 0 : -errno;
    if (r == 0 && seconds > MAX_TIMEOUT)
        r = -ERANGE;
    if (r == 0)
        st->policy->timeout_seconds = seconds;
    else if (r == -ERANGE)
        diag_node(st, n, "%s: %s is too long", field, q);
    else
        diag_node(st, n,
                  "%s: %s is not a duration (use seconds, or a number with s, m, h or d, e.g. "
                  "10m; 0 for no timeout)",
                  field, q);
}

static void handle_min_abi(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = scalar_text(st, field, n, "a Landlock ABI version");
    if (!v)
        return;
    uint64_t abi;
    if (parse_decimal(v, MAX_LANDLOCK_ABI, &abi) == 0) {
        st->policy->landlock_min_abi = (int)abi;
        return;
    }
    _cleanup_free_ char *q = quote_str(v);
    diag_node(st, n,
              "%s: %s is not a Landlock ABI version (use 0 to %d; 0 runs even without "
              "Landlock)",
              field, q, MAX_LANDLOCK_ABI);
}

static void port_list(parse_state *st, const char *field, yaml_node_t *n, bool *has,
                      uint16_t **ports, size_t *count)
{
    size_t nitems;
    yaml_node_item_t *items;
    if (!list_items(st, field, n, &items, &nitems))
        return;
    *has = true;
    for (size_t i = 0; i < nitems; i++) {
        yaml_node_t *item = node_at(st, items[i]);
        if (!item)
            continue;
        const char *v = scalar_text(st, field, item, "a port number");
        if (!v)
            continue;
        uint64_t port;
        if (parse_decimal(v, 65535, &port) != 0) {
            _cleanup_free_ char *q = quote_str(v);
            diag_node(st, item, "%s: %s is not a port (use a number from 0 to 65535)", field, q);
            continue;
        }
        *ports = xrealloc(*ports, (*count + 1) * sizeof(**ports));
        (*ports)[(*count)++] = (uint16_t)port;
    }
}

static void handle_tcp_bind(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk_policy *p = st->policy;
    port_list(st, field, n, &p->has_tcp_bind, &p->tcp_bind, &p->tcp_bind_count);
}

static void handle_tcp_connect(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk_policy *p = st->policy;
    port_list(st, field, n, &p->has_tcp_connect, &p->tcp_connect, &p->tcp_connect_count);
}

/* A YAML boolean (plain true/false, yes/no, on/off); false after a diagnostic. */
static bool parse_bool(parse_state *st, const char *field, yaml_node_t *n, bool *out)
{
    const char *v = scalar_text(st, field, n, "true or false");
    if (!v)
        return false;
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes",
                                      "YES",  "on",   "On",   "ON"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No",
                                     "NO",    "off",   "Off",   "OFF"};
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        for (size_t i = 0; i < PDK_ARRAY_SIZE(yes); i++) {
            if (plain_is(n, yes[i]) || plain_is(n, no[i])) {
                *out = plain_is(n, yes[i]);
                return true;
            }
        }
    }
    _cleanup_free_ char *q = quote_str(v);
    diag_node(st, n, "%s: expected true or false, got %s%s", field, q,
              n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? "" : " (remove the quotes)");
    return false;
}

static void handle_nested_userns(parse_state *st, const char *field, yaml_node_t *n)
{
    parse_bool(st, field, n, &st->policy->nested_userns);
}

/* ---- home ---- */

static void handle_home_persist(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = scalar_text(st, field, n, "a name");
    if (!v)
        return;
    size_t len = strlen(v);
    bool ok = len > 0 && len <= PDK_HOME_NAME_MAX && v[0] != '.' && v[0] != '-';
    for (size_t i = 0; ok && i < len; i++)
        ok = pdk_name_char((unsigned char)v[i]);
    if (!ok) {
        _cleanup_free_ char *q = quote_str(v);
        diag_node(st, n,
                  "%s: %s is not a home name (letters, digits, '.', '_', '-', at most %d, not "
                  "starting with '.' or '-'; e.g. codex)",
                  field, q, PDK_HOME_NAME_MAX);
        return;
    }
    free(st->policy->home_persist);
    st->policy->home_persist = xstrdup(v);
}

/* ---- commands ---- */

/* One token of a pattern: a glob, or a list of them (alternatives). NULL after a
 * diagnostic. */
static char **pattern_token(parse_state *st, const char *field, yaml_node_t *n)
{
    char **alts = NULL;
    if (n->type == YAML_SCALAR_NODE) {
        const char *v = scalar_text(st, field, n, "a word or a list of words");
        if (!v)
            return NULL;
        if (!*v) {
            diag_node(st, n, "%s: an empty word matches nothing (remove it, or use \"*\")", field);
            return NULL;
        }
        pdk_strv_push(&alts, v);
        return alts;
    }
    yaml_node_item_t *items;
    size_t count;
    if (n->type != YAML_SEQUENCE_NODE) {
        expected(st, field, n, "a word or a list of words");
        return NULL;
    }
    list_items(st, field, n, &items, &count);
    if (count == 0) {
        diag_node(st, n, "%s: an empty list of alternatives matches nothing (give at least one)",
                  field);
        return NULL;
    }
    bool ok = true;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = node_at(st, items[i]);
        _cleanup_free_ char *f = xasprintf("%s[%zu]", field, i);
        const char *v =
            item && item->type == YAML_SCALAR_NODE ? scalar_text(st, f, item, "a word") : NULL;
        if (item && item->type != YAML_SCALAR_NODE)
            expected(st, f, item, "a word (alternatives do not nest)");
        if (v && !*v) {
            diag_node(st, item, "%s: an empty word matches nothing (remove it)", f);
            v = NULL;
        }
        if (!v) {
            ok = false;
            continue;
        }
        pdk_strv_push(&alts, v);
    }
    if (!ok) {
        pdk_strv_free(alts);
        return NULL;
    }
    return alts;
}

static bool parse_decision(parse_state *st, const char *field, yaml_node_t *n, pdk_decision *out)
{
    const char *v = scalar_text(st, field, n, "a decision");
    if (!v)
        return false;
    if (pdk_decision_parse(v, out) == 0)
        return true;
    _cleanup_free_ char *q = quote_str(v);
    diag_node(st, n, "%s: unknown decision %s (use allow, confine, ask or deny)", field, q);
    return false;
}

static void handle_commands_default(parse_state *st, const char *field, yaml_node_t *n)
{
    parse_decision(st, field, n, &st->policy->commands.default_decision);
}

/* A rule's "quiet": true only on a deny rule (a refusal it decides is recorded, not shown);
 * an ask must reach a human. */
static bool parse_quiet(parse_state *st, const char *field, yaml_node_t *n, bool decided,
                        pdk_decision decision, bool *out)
{
    _cleanup_free_ char *qfield = xasprintf("%s.quiet", field);
    if (!parse_bool(st, qfield, n, out))
        return false;
    if (*out && decided && decision != PDK_DECISION_DENY) {
        diag_node(st, n,
                  "%s: quiet is for deny rules (their refusals are recorded and not shown; a "
                  "rule that lets something through or asks a human is never quiet)",
                  qfield);
        return false;
    }
    return true;
}

/* A pattern: a list of tokens, each a word or a list of alternatives (a single word is a
 * pattern of one token). *tokens and *ntokens NULL/0 after a diagnostic. */
static bool command_pattern(parse_state *st, const char *field, yaml_node_t *n, char ****tokens,
                            size_t *ntokens, bool word_alone)
{
    *tokens = NULL;
    *ntokens = 0;
    if (word_alone && n->type == YAML_SCALAR_NODE) {
        char **alts = pattern_token(st, field, n);
        if (!alts)
            return false;
        *tokens = xcalloc(1, sizeof(**tokens));
        (*tokens)[0] = alts;
        *ntokens = 1;
        return true;
    }
    yaml_node_item_t *items;
    size_t nitems = 0;
    if (!list_items(st, field, n, &items, &nitems))
        return false;
    if (nitems == 0) {
        diag_node(st, n,
                  "%s: an empty pattern matches nothing (give the command's first words, e.g. "
                  "[git, push])",
                  field);
        return false;
    }
    bool ok = true;
    char ***t = xcalloc(nitems, sizeof(*t));
    for (size_t i = 0; i < nitems; i++) {
        _cleanup_free_ char *tf = xasprintf("%s[%zu]", field, i);
        yaml_node_t *item = node_at(st, items[i]);
        t[i] = item ? pattern_token(st, tf, item) : NULL;
        if (!t[i])
            ok = false;
    }
    if (!ok) {
        for (size_t i = 0; i < nitems; i++)
            pdk_strv_free(t[i]);
        free(t);
        return false;
    }
    *tokens = t;
    *ntokens = nitems;
    return true;
}

static void free_pattern(char ***tokens, size_t ntokens)
{
    for (size_t i = 0; i < ntokens; i++)
        pdk_strv_free(tokens[i]);
    free(tokens);
}

static void command_rule(parse_state *st, const char *field, yaml_node_t *n)
{
    static const key_spec keys[] = {
        {"match", NULL}, {"decision", NULL}, {"reason", NULL}, {"under", NULL}, {"quiet", NULL}};
    yaml_node_t *values[PDK_ARRAY_SIZE(keys)];
    if (!mapping_values(st, field, n, keys, PDK_ARRAY_SIZE(keys), values))
        return;
    yaml_node_t *match = values[0], *decision = values[1], *reason = values[2], *under = values[3];
    bool ok = true;
    if (!match) {
        diag_node(st, n, "%s: a rule needs \"match\" (an argv prefix, e.g. [git, push])", field);
        ok = false;
    }
    if (!decision) {
        diag_node(st, n, "%s: a rule needs \"decision\" (allow, confine, ask or deny)", field);
        ok = false;
    }
    pdk_decision d = PDK_DECISION_ALLOW;
    _cleanup_free_ char *dfield = xasprintf("%s.decision", field);
    _cleanup_free_ char *rfield = xasprintf("%s.reason", field);
    bool decided = decision && parse_decision(st, dfield, decision, &d);
    if (decision && !decided)
        ok = false;
    const char *why = NULL;
    if (reason && !(why = scalar_text(st, rfield, reason, "a reason (one line of text)")))
        ok = false;
    bool quiet = false;
    if (values[4] && !parse_quiet(st, field, values[4], decided, d, &quiet))
        ok = false;
    char ***tokens = NULL;
    size_t ntokens = 0;
    _cleanup_free_ char *mfield = xasprintf("%s.match", field);
    if (match && !command_pattern(st, mfield, match, &tokens, &ntokens, false))
        ok = false;
    /* under: a list of patterns (each a word, or a list of words and alternatives) */
    char ****under_tokens = NULL;
    size_t *under_counts = NULL, nunder = 0;
    _cleanup_free_ char *ufield = xasprintf("%s.under", field);
    if (under) {
        yaml_node_item_t *items;
        size_t nitems = 0;
        if (!list_items(st, ufield, under, &items, &nitems)) {
            ok = false;
        } else if (nitems == 0) {
            diag_node(st, under,
                      "%s: an empty list holds under no process (give the commands whose "
                      "children the rule is for, e.g. [[npm, install], npx])",
                      ufield);
            ok = false;
        } else {
            under_tokens = xcalloc(nitems, sizeof(*under_tokens));
            under_counts = xcalloc(nitems, sizeof(*under_counts));
            nunder = nitems;
            for (size_t i = 0; i < nitems; i++) {
                _cleanup_free_ char *pf = xasprintf("%s[%zu]", ufield, i);
                yaml_node_t *item = node_at(st, items[i]);
                if (!item ||
                    !command_pattern(st, pf, item, &under_tokens[i], &under_counts[i], true))
                    ok = false;
            }
        }
    }
    if (ok) {
        pdk_command_rules *rules = &st->policy->commands;
        pdk_command_rules_add(rules, (char *const *const *)tokens, ntokens, d, why);
        rules->rules[rules->count - 1].quiet = quiet;
        for (size_t i = 0; i < nunder; i++)
            pdk_command_rules_add_under(rules, rules->count - 1,
                                        (char *const *const *)under_tokens[i], under_counts[i]);
        st->policy->rule_lines =
            xrealloc(st->policy->rule_lines, rules->count * sizeof(*st->policy->rule_lines));
        st->policy->rule_lines[rules->count - 1] = clamp_int(n->start_mark.line + 1);
    }
    free_pattern(tokens, ntokens);
    for (size_t i = 0; i < nunder; i++)
        free_pattern(under_tokens[i], under_counts[i]);
    free(under_tokens);
    free(under_counts);
}

static void handle_commands_rules(parse_state *st, const char *field, yaml_node_t *n)
{
    each_item(st, field, n, command_rule);
}

/* Examples are checked once every rule is known (the rules may come after them). */
typedef struct pending_example {
    char **argv;
    char **under; /* the argv of the installer it runs under, or NULL */
    char *shown;  /* the command as written */
    pdk_decision expected;
    yaml_node_t *node;
    char *field;
} pending_example;

static void example(parse_state *st, const char *field, yaml_node_t *n)
{
    static const key_spec keys[] = {
        {"command", NULL}, {"argv", NULL}, {"decision", NULL}, {"under", NULL}};
    yaml_node_t *values[PDK_ARRAY_SIZE(keys)];
    if (!mapping_values(st, field, n, keys, PDK_ARRAY_SIZE(keys), values))
        return;
    yaml_node_t *command = values[0], *argv = values[1], *decision = values[2], *under = values[3];
    _cleanup_strv_ char **under_argv = NULL;
    if (under) {
        _cleanup_free_ char *ufield = xasprintf("%s.under", field);
        const char *line = scalar_text(st, ufield, under, "a command line (of the installer)");
        if (!line)
            return;
        if (!*line) {
            diag_node(st, under, "%s: the command line is empty (give the installer's)", ufield);
            return;
        }
        under_argv = pdk_policy_example_argv(line);
    }
    pdk_decision d;
    if (!decision) {
        diag_node(st, n, "%s: an example needs \"decision\" (what the rules must decide)", field);
        return;
    }
    _cleanup_free_ char *dfield = xasprintf("%s.decision", field);
    if (!parse_decision(st, dfield, decision, &d)) {
        return;
    }
    if ((command != NULL) == (argv != NULL)) {
        diag_node(st, n,
                  "%s: an example needs either \"command\" (a command line) or \"argv\" (a "
                  "list of words)",
                  field);
        return;
    }
    char **words = NULL;
    char *shown = NULL;
    if (command) {
        _cleanup_free_ char *cfield = xasprintf("%s.command", field);
        const char *line = scalar_text(st, cfield, command, "a command line");
        if (!line)
            return;
        if (!*line) {
            diag_node(st, command, "%s: the command line is empty (give the command to check)",
                      cfield);
            return;
        }
        words = pdk_policy_example_argv(line);
        shown = xstrdup(line);
    } else {
        yaml_node_item_t *items;
        size_t nitems = 0;
        _cleanup_free_ char *afield = xasprintf("%s.argv", field);
        if (!list_items(st, afield, argv, &items, &nitems))
            return;
        if (nitems == 0) {
            diag_node(st, argv, "%s: the list is empty (give at least the command)", afield);
            return;
        }
        pdk_buf b = {0};
        for (size_t i = 0; i < nitems; i++) {
            yaml_node_t *item = node_at(st, items[i]);
            _cleanup_free_ char *wfield = xasprintf("%s.argv[%zu]", field, i);
            const char *w = item ? scalar_text(st, wfield, item, "a word") : NULL;
            if (!w) {
                pdk_strv_free(words);
                pdk_buf_free(&b);
                return;
            }
            pdk_strv_push(&words, w);
            pdk_buf_printf(&b, "%s%s", i ? " " : "", w);
        }
        shown = xstrdup(b.data ? b.data : "");
        pdk_buf_free(&b);
    }
    st->examples = xrealloc(st->examples, (st->nexamples + 1) * sizeof(*st->examples));
    st->examples[st->nexamples++] = (pending_example){.argv = words,
                                                      .under = steal_pointer(&under_argv),
                                                      .shown = shown,
                                                      .expected = d,
                                                      .node = n,
                                                      .field = xstrdup(field)};
}

static void handle_commands_examples(parse_state *st, const char *field, yaml_node_t *n)
{
    each_item(st, field, n, example);
}

static void check_examples(parse_state *st)
{
    for (size_t i = 0; i < st->nexamples; i++) {
        pending_example *x = &st->examples[i];
        pdk_command_verdict v;
        char *const *ancestors[] = {x->under, NULL};
        pdk_command_query query = {.argv = x->argv,
                                   .ancestors = x->under ? (char *const *const *)ancestors : NULL};
        pdk_command_rules_judge_query(&st->policy->commands, &query, &v);
        if (v.decision != x->expected) {
            _cleanup_free_ char *q = quote_str(x->shown);
            _cleanup_free_ char *how =
                v.rule < 0 && v.unreducible
                    ? xstrdup("the fallback for scripts paddock cannot split into commands")
                    : pdk_policy_describe_rule(st->policy, v.rule);
            diag_node(st, x->node,
                      "%s: %s is decided %s by %s, not %s (fix the rule or the example)", x->field,
                      q, pdk_decision_name(v.decision), how, pdk_decision_name(x->expected));
        }
    }
}

static void free_examples(parse_state *st)
{
    for (size_t i = 0; i < st->nexamples; i++) {
        pdk_strv_free(st->examples[i].argv);
        pdk_strv_free(st->examples[i].under);
        free(st->examples[i].shown);
        free(st->examples[i].field);
    }
    free(st->examples);
    st->examples = NULL;
    st->nexamples = 0;
}

/* ---- approvals ---- */

/* A duration of 1 second to max_seconds in field: 0 with *out set, or -1 with a diagnostic
 * naming the range ("from 1 second to 30 days") and a hint (", e.g. 5m"). */
static int bounded_duration(parse_state *st, const char *field, yaml_node_t *n, int64_t max_seconds,
                            const char *range, const char *hint, int64_t *out)
{
    const char *v = scalar_text(st, field, n, "a duration");
    if (!v)
        return -1;
    int64_t seconds = 0;
    if (pdk_parse_duration(v, &seconds) < 0 || seconds <= 0 || seconds > max_seconds) {
        _cleanup_free_ char *q = quote_str(v);
        diag_node(st, n,
                  "%s: %s is not a duration %s (use seconds, or a number with s, m, h or d%s)",
                  field, q, range, hint);
        return -1;
    }
    *out = seconds;
    return 0;
}

/* A count of 1 to max in field, named what ("held requests"): 0 with *out set, or -1 with a
 * diagnostic (and the default, when default_count is not 0). */
static int bounded_count(parse_state *st, const char *field, yaml_node_t *n, const char *what,
                         uint64_t max, uint64_t default_count, uint64_t *out)
{
    _cleanup_free_ char *expected = xasprintf("a number of %s", what);
    const char *v = scalar_text(st, field, n, expected);
    if (!v)
        return -1;
    uint64_t count = 0;
    if (parse_decimal(v, max, &count) < 0 || count == 0) {
        _cleanup_free_ char *q = quote_str(v);
        _cleanup_free_ char *dflt =
            default_count ? xasprintf(" (the default is %llu)", (unsigned long long)default_count)
                          : xstrdup("");
        diag_node(st, n, "%s: %s is not a number of %s from 1 to %llu%s", field, q, what,
                  (unsigned long long)max, dflt);
        return -1;
    }
    *out = count;
    return 0;
}

static void handle_approval_timeout(parse_state *st, const char *field, yaml_node_t *n)
{
    int64_t seconds;
    if (bounded_duration(st, field, n, MAX_APPROVAL_TIMEOUT, "from 1 second to 30 days",
                         ", e.g. 5m", &seconds) == 0)
        st->policy->approval_timeout_seconds = seconds;
}

static void handle_approval_request_timeout(parse_state *st, const char *field, yaml_node_t *n)
{
    int64_t seconds;
    if (bounded_duration(st, field, n, MAX_APPROVAL_TIMEOUT, "from 1 second to 30 days",
                         ", e.g. 50s; keep it below the client's own timeout", &seconds) == 0)
        st->policy->approval_request_timeout_seconds = seconds;
}

static void handle_approval_max_held(parse_state *st, const char *field, yaml_node_t *n)
{
    uint64_t count;
    if (bounded_count(st, field, n, "held requests", MAX_MAX_HELD, 0, &count) == 0)
        st->policy->approval_max_held = (size_t)count;
}

static void handle_approval_on_timeout(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = scalar_text(st, field, n, "deny or allow");
    if (!v)
        return;
    if (strcmp(v, "deny") == 0)
        st->policy->approval_on_timeout = PDK_DECISION_DENY;
    else if (strcmp(v, "allow") == 0)
        st->policy->approval_on_timeout = PDK_DECISION_ALLOW;
    else {
        _cleanup_free_ char *q = quote_str(v);
        diag_node(st, n, "%s: %s is not what a timeout can mean (use deny or allow)", field, q);
    }
}

/* ---- network ---- */

/* A word or a list of words, each checked by ok (NULL: any non-empty word); new list, or
 * NULL after a diagnostic. */
static char **word_list(parse_state *st, const char *field, yaml_node_t *n, const char *what,
                        bool (*ok)(const char *word), bool upper)
{
    yaml_node_t **nodes = NULL;
    size_t count = 0;
    yaml_node_t *single[1];
    if (n->type == YAML_SCALAR_NODE) {
        single[0] = n;
        nodes = single;
        count = 1;
    } else if (n->type == YAML_SEQUENCE_NODE) {
        yaml_node_item_t *items;
        list_items(st, field, n, &items, &count);
        if (count == 0) {
            diag_node(st, n, "%s: an empty list matches nothing (leave the key out to match any)",
                      field);
            return NULL;
        }
        nodes = xcalloc(count, sizeof(*nodes));
        for (size_t i = 0; i < count; i++)
            nodes[i] = node_at(st, items[i]);
    } else {
        expected(st, field, n, what);
        return NULL;
    }
    char **words = xcalloc(1, sizeof(char *));
    bool good = true;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = nodes[i];
        const char *v = item ? scalar_text(st, field, item, what) : NULL;
        if (!v) {
            good = false;
            continue;
        }
        _cleanup_free_ char *w = xstrdup(v);
        for (char *c = w; *c; c++)
            *c = (char)(upper ? toupper((unsigned char)*c) : tolower((unsigned char)*c));
        if (!*w || (ok && !ok(w))) {
            _cleanup_free_ char *q = quote_str(v);
            diag_node(st, item, "%s: %s is not %s", field, q, what);
            good = false;
            continue;
        }
        pdk_strv_push(&words, w);
    }
    if (nodes != single)
        free(nodes);
    if (!good) {
        pdk_strv_free(words);
        return NULL;
    }
    return words;
}

static bool is_scheme(const char *w)
{
    return strcmp(w, "http") == 0 || strcmp(w, "https") == 0;
}

static bool is_method(const char *w)
{
    for (const char *c = w; *c; c++)
        if (!isupper((unsigned char)*c) && *c != '-' && *c != '_')
            return false;
    return true;
}

static bool parse_port_value(parse_state *st, const char *field, yaml_node_t *n, uint16_t *out)
{
    const char *v = scalar_text(st, field, n, "a port number");
    if (!v)
        return false;
    uint64_t port;
    if (parse_decimal(v, 65535, &port) != 0 || port == 0) {
        _cleanup_free_ char *q = quote_str(v);
        diag_node(st, n, "%s: %s is not a port (use a number from 1 to 65535)", field, q);
        return false;
    }
    *out = (uint16_t)port;
    return true;
}

/* "host" from a YAML scalar as a normalised host pattern; NULL after a diagnostic. */
static char *host_value(parse_state *st, const char *field, yaml_node_t *n, bool globs)
{
    const char *v = scalar_text(st, field, n, "a host name");
    if (!v)
        return NULL;
    const char *why = NULL;
    char *h = pdk_net_host_pattern_normalize(v, &why);
    if (h && !globs && strchr(h, '*')) {
        why = "a glob cannot be used here (name the host)";
        free(h);
        h = NULL;
    }
    if (!h) {
        _cleanup_free_ char *q = quote_str(v);
        diag_node(st, n, "%s: %s is not a host: %s", field, q, why);
    }
    return h;
}

static void handle_network_default(parse_state *st, const char *field, yaml_node_t *n)
{
    pdk_decision d;
    if (!parse_decision(st, field, n, &d))
        return;
    if (d == PDK_DECISION_CONFINE) {
        diag_node(st, n, "%s: confine is a decision for commands (use allow, ask or deny)", field);
        return;
    }
    st->policy->network.default_decision = d;
}

static void network_rule(parse_state *st, const char *field, yaml_node_t *n)
{
    static const key_spec keys[] = {{"host", NULL},    {"port", NULL},  {"scheme", NULL},
                                    {"methods", NULL}, {"path", NULL},  {"decision", NULL},
                                    {"reason", NULL},  {"quiet", NULL}, {"host_loopback", NULL}};
    yaml_node_t *v[PDK_ARRAY_SIZE(keys)];
    if (!mapping_values(st, field, n, keys, PDK_ARRAY_SIZE(keys), v))
        return;
    pdk_net_rule r = {0};
    bool ok = true;
    _cleanup_free_ char *fh = xasprintf("%s.host", field), *fp = xasprintf("%s.port", field),
                        *fs = xasprintf("%s.scheme", field), *fm = xasprintf("%s.methods", field),
                        *fpa = xasprintf("%s.path", field), *fd = xasprintf("%s.decision", field),
                        *fr = xasprintf("%s.reason", field);
    if (!v[0]) {
        diag_node(st, n, "%s: a rule needs \"host\" (a name, \"*.domain\" or \"*\")", field);
        ok = false;
    } else if (!(r.host = host_value(st, fh, v[0], true))) {
        ok = false;
    }
    if (v[1] && !parse_port_value(st, fp, v[1], &r.port))
        ok = false;
    if (v[2] &&
        !(r.schemes = word_list(st, fs, v[2], "a scheme (http or https)", is_scheme, false)))
        ok = false;
    if (v[3] &&
        !(r.methods = word_list(st, fm, v[3], "an HTTP method (GET, POST, ...)", is_method, true)))
        ok = false;
    if (v[4]) {
        const char *path = scalar_text(st, fpa, v[4], "a path glob");
        if (!path) {
            ok = false;
        } else if (path[0] != '/') {
            _cleanup_free_ char *q = quote_str(path);
            diag_node(st, v[4],
                      "%s: %s does not start with \"/\" (a path glob is matched against "
                      "the request's path, e.g. /api/v1/**)",
                      fpa, q);
            ok = false;
        } else if (strchr(path, '?')) {
            _cleanup_free_ char *q = quote_str(path);
            diag_node(st, v[4],
                      "%s: %s has a query (the path is matched without it; remove the "
                      "\"?...\")",
                      fpa, q);
            ok = false;
        } else {
            r.path = xstrdup(path);
        }
    }
    bool decided = false;
    if (!v[5]) {
        diag_node(st, n, "%s: a rule needs \"decision\" (allow, ask or deny)", field);
        ok = false;
    } else if (!(decided = parse_decision(st, fd, v[5], &r.decision))) {
        ok = false;
    } else if (r.decision == PDK_DECISION_CONFINE) {
        diag_node(st, v[5], "%s: confine is a decision for commands (use allow, ask or deny)", fd);
        ok = false;
    }
    const char *why = NULL;
    if (v[6] && !(why = scalar_text(st, fr, v[6], "a reason (one line of text)")))
        ok = false;
    r.reason = why ? xstrdup(why) : NULL;
    if (v[7] && !parse_quiet(st, field, v[7], decided, r.decision, &r.quiet))
        ok = false;
    _cleanup_free_ char *fl = xasprintf("%s.host_loopback", field);
    if (v[8] && !parse_bool(st, fl, v[8], &r.host_loopback))
        ok = false;
    if (r.host_loopback && r.host && strchr(r.host, '*')) {
        diag_node(st, v[8],
                  "%s: a rule that reaches the host's loopback names its host exactly (e.g. "
                  "127.0.0.1 or localhost), not a pattern",
                  fl);
        ok = false;
    }
    pdk_net_rules *rules = &st->policy->network;
    if (!ok) {
        pdk_net_rule_clear(&r);
        return;
    }
    rules->rules = xrealloc(rules->rules, (rules->count + 1) * sizeof(*rules->rules));
    rules->rules[rules->count++] = r;
    st->policy->net_rule_lines =
        xrealloc(st->policy->net_rule_lines, rules->count * sizeof(*st->policy->net_rule_lines));
    st->policy->net_rule_lines[rules->count - 1] = clamp_int(n->start_mark.line + 1);
}

static void handle_network_rules(parse_state *st, const char *field, yaml_node_t *n)
{
    each_item(st, field, n, network_rule);
}

static void passthrough_host(parse_state *st, const char *field, yaml_node_t *n)
{
    char *h = host_value(st, field, n, true);
    if (h)
        pdk_strv_push_take(&st->policy->network.passthrough, h);
}

static void handle_network_passthrough(parse_state *st, const char *field, yaml_node_t *n)
{
    each_item(st, field, n, passthrough_host);
}

/* "host:port" or "[v6]:port". */
static bool split_host_port(const char *text, char **host, uint16_t *port)
{
    const char *colon = NULL;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':')
            return false;
        colon = close + 1;
    } else {
        colon = strrchr(text, ':');
        if (!colon || memchr(text, ':', (size_t)(colon - text)))
            return false;
    }
    uint64_t p;
    if (parse_decimal(colon + 1, 65535, &p) != 0 || p == 0)
        return false;
    const char *why;
    _cleanup_free_ char *h = xstrndup(text, (size_t)(colon - text));
    *host = pdk_net_host_pattern_normalize(h, &why);
    if (!*host || strchr(*host, '*')) {
        free(*host);
        *host = NULL;
        return false;
    }
    *port = (uint16_t)p;
    return true;
}

static void handle_network_resolve(parse_state *st, const char *field, yaml_node_t *n)
{
    if (!expect_type(st, field, n, YAML_MAPPING_NODE))
        return;
    size_t count = 0;
    _cleanup_free_ map_entry *entries = map_entries(st, n, field, &count);
    pdk_net_rules *rules = &st->policy->network;
    for (size_t i = 0; i < count; i++) {
        map_entry *e = &entries[i];
        if (!e->key || e->duplicate)
            continue;
        _cleanup_free_ char *key = xstrndup(e->key, e->key_len);
        _cleanup_free_ char *f = xasprintf("%s.%s", field, key);
        pdk_net_resolve r = {0};
        if (!split_host_port(key, &r.host, &r.port)) {
            _cleanup_free_ char *q = quote_str(key);
            diag_node(st, e->key_node, "%s: %s is not host:port (e.g. \"api.example.com:443\")",
                      field, q);
            continue;
        }
        const char *to = scalar_text(st, f, e->value, "an address (host:port)");
        if (!to || !split_host_port(to, &r.to_host, &r.to_port)) {
            if (to) {
                _cleanup_free_ char *q = quote_str(to);
                diag_node(st, e->value, "%s: %s is not host:port (e.g. \"127.0.0.1:18443\")", f, q);
            }
            free(r.host);
            continue;
        }
        rules->resolve =
            xrealloc(rules->resolve, (rules->resolve_count + 1) * sizeof(*rules->resolve));
        rules->resolve[rules->resolve_count++] = r;
    }
}

static void upstream_ca_path(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = scalar_text(st, field, n, "a path to PEM certificates");
    if (!v)
        return;
    if (!*v) {
        diag_node(st, n, "%s: empty path", field);
        return;
    }
    /* absolute, or relative to the policy file (load_file) */
    char *path = v[0] == '~' ? resolve_path(st, field, n, v, false) : xstrdup(v);
    if (path)
        pdk_strv_push_take(&st->policy->network.upstream_ca, path);
}

static void handle_network_upstream_ca(parse_state *st, const char *field, yaml_node_t *n)
{
    each_item(st, field, n, upstream_ca_path);
}

static void handle_network_connections(parse_state *st, const char *field, yaml_node_t *n)
{
    uint64_t count;
    if (bounded_count(st, field, n, "connections", PDK_NET_MAX_MAX_CONNECTIONS,
                      PDK_NET_DEFAULT_MAX_CONNECTIONS, &count) == 0)
        st->policy->network.max_connections = (uint32_t)count;
}

static void handle_network_idle_timeout(parse_state *st, const char *field, yaml_node_t *n)
{
    _cleanup_free_ char *hint =
        xasprintf(", e.g. 2m; the default is %ds", PDK_NET_DEFAULT_IDLE_TIMEOUT_S);
    int64_t seconds;
    if (bounded_duration(st, field, n, PDK_NET_MAX_IDLE_TIMEOUT_S, "from 1 second to 1 day", hint,
                         &seconds) == 0)
        st->policy->network.idle_timeout_s = (uint32_t)seconds;
}

/* ---- credentials ---- */

static const char *const provider_names[] = {
    [PDK_CREDENTIAL_STATIC] = "static",
    [PDK_CREDENTIAL_FEISHU_TENANT_TOKEN] = "feishu_tenant_token",
    [PDK_CREDENTIAL_OAUTH2_REFRESH] = "oauth2_refresh",
};

const char *pdk_credential_provider_name(pdk_credential_provider provider)
{
    return (unsigned)provider < PDK_ARRAY_SIZE(provider_names) ? provider_names[provider] : "?";
}

/* {secret: NAME}: the name of a vault secret; NULL after a diagnostic. */
static char *secret_ref(parse_state *st, const char *field, yaml_node_t *n)
{
    static const key_spec keys[] = {{"secret", NULL}};
    yaml_node_t *v[1];
    if (n->type != YAML_MAPPING_NODE) {
        expected(st, field, n, "{secret: NAME} (a value from the vault: paddock secret set NAME)");
        return NULL;
    }
    if (!mapping_values(st, field, n, keys, 1, v))
        return NULL;
    if (!v[0]) {
        diag_node(st, n, "%s: give the vault secret as {secret: NAME}", field);
        return NULL;
    }
    _cleanup_free_ char *f = xasprintf("%s.secret", field);
    const char *name = scalar_text(st, f, v[0], "a secret name");
    if (!name)
        return NULL;
    if (!pdk_vault_name_valid(name)) {
        _cleanup_free_ char *q = quote_str(name);
        diag_node(st, v[0], "%s: %s is not a secret name (letters, digits, '.', '_', '-')", f, q);
        return NULL;
    }
    return xstrdup(name);
}

static char *env_name_value(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = scalar_text(st, field, n, "an environment variable name");
    if (!v)
        return NULL;
    if (!env_name_valid(v, strlen(v), false)) {
        _cleanup_free_ char *q = quote_str(v);
        diag_node(st, n, "%s: %s is not an environment variable name", field, q);
        return NULL;
    }
    return xstrdup(v);
}

static void credential_clear(pdk_credential *c)
{
    free(c->name);
    free(c->value_secret);
    free(c->app_id_secret);
    free(c->app_secret_secret);
    free(c->refresh_token_secret);
    free(c->client_id_secret);
    free(c->client_secret_secret);
    free(c->token_url);
    pdk_strv_free(c->hosts);
    free(c->inject_header);
    free(c->inject_value);
    free(c->placeholder_env);
    free(c->placeholder_app_secret_env);
    free(c->placeholder_file);
    free(c->placeholder_prefix);
    pdk_strv_free(c->replace_in_headers);
    memset(c, 0, sizeof(*c));
}

/* A field name a credential can be set in: a token of letters, digits, '-' and '_'. */
static bool header_name_ok(const char *h)
{
    bool ok = h && *h;
    for (const char *p = h; ok && *p; p++)
        ok = isalnum((unsigned char)*p) || *p == '-' || *p == '_';
    return ok;
}

/* Fields that frame or route a request: never a credential's (the gateway would change what
 * the request is). */
static bool header_is_framing(const char *h)
{
    static const char *const names[] = {
        "Host", "Content-Length", "Transfer-Encoding", "Connection",       "Upgrade",
        "TE",   "Trailer",        "Keep-Alive",        "Proxy-Connection", "Expect"};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(names); i++)
        if (strcasecmp(h, names[i]) == 0)
            return true;
    return false;
}

/* replace_in_headers: the field names; false after a diagnostic. */
static bool credential_fields(parse_state *st, const char *field, yaml_node_t *n, char ***out)
{
    yaml_node_item_t *items;
    size_t count = 0;
    if (!list_items(st, field, n, &items, &count))
        return false;
    bool ok = true;
    *out = xcalloc(1, sizeof(char *));
    for (size_t i = 0; i < count; i++) {
        _cleanup_free_ char *f = xasprintf("%s[%zu]", field, i);
        yaml_node_t *item = node_at(st, items[i]);
        const char *h = item ? scalar_text(st, f, item, "a header name") : NULL;
        if (!h) {
            ok = false;
        } else if (!header_name_ok(h)) {
            _cleanup_free_ char *q = quote_str(h);
            diag_node(st, item, "%s: %s is not a header name (letters, digits, '-', '_')", f, q);
            ok = false;
        } else if (header_is_framing(h)) {
            diag_node(st, item,
                      "%s: %s frames or routes the request and cannot carry a credential "
                      "(name the field the API reads its key from, e.g. X-Api-Key)",
                      f, h);
            ok = false;
        } else {
            pdk_strv_push(out, h);
        }
    }
    if (count == 0) {
        diag_node(st, n, "%s: give at least one header name, e.g. [X-Api-Key]", field);
        ok = false;
    }
    return ok;
}

/* placeholder.prefix: what a placeholder starts with; NULL after a diagnostic. */
static char *placeholder_prefix(parse_state *st, const char *field, yaml_node_t *n)
{
    const char *v = scalar_text(st, field, n, "a prefix such as \"sk-proj-\"");
    if (!v)
        return NULL;
    bool ok = *v && strlen(v) <= 64;
    for (const char *p = v; ok && *p; p++)
        ok = isalnum((unsigned char)*p) || strchr("-_.~+/:", *p);
    if (!ok) {
        _cleanup_free_ char *q = quote_str(v);
        diag_node(st, n,
                  "%s: %s is not a prefix (1 to 64 letters, digits and '-', '_', '.', '~', '+', "
                  "'/', ':')",
                  field, q);
        return NULL;
    }
    return xstrdup(v);
}

static void credential(parse_state *st, const char *field, yaml_node_t *n)
{
    enum {
        K_NAME,
        K_PROVIDER,
        K_VALUE,
        K_APP_ID,
        K_APP_SECRET,
        K_REFRESH,
        K_CLIENT_ID,
        K_CLIENT_SECRET,
        K_TOKEN_URL,
        K_HOSTS,
        K_INJECT,
        K_PLACEHOLDER,
        K_FIELDS,
        K_BODY,
        K_PLAIN_HTTP,
        K_COUNT
    };
    static const key_spec keys[] = {
        {"name", NULL},
        {"provider", NULL},
        {"value", NULL},
        {"app_id", NULL},
        {"app_secret", NULL},
        {"refresh_token", NULL},
        {"client_id", NULL},
        {"client_secret", NULL},
        {"token_url", NULL},
        {"hosts", NULL},
        {"inject", NULL},
        {"placeholder", NULL},
        {"replace_in_headers", NULL},
        {"replace_in_body", NULL},
        {"allow_plain_http", NULL},
    };
    yaml_node_t *v[K_COUNT];
    if (!mapping_values(st, field, n, keys, K_COUNT, v))
        return;
    pdk_credential c = {.line = clamp_int(n->start_mark.line + 1)};
    bool ok = true;
#define SUBFIELD(k) _cleanup_free_ char *f_##k = xasprintf("%s.%s", field, keys[k].name)
    SUBFIELD(K_NAME);
    SUBFIELD(K_PROVIDER);
    SUBFIELD(K_HOSTS);
    SUBFIELD(K_TOKEN_URL);
    SUBFIELD(K_BODY);
    SUBFIELD(K_FIELDS);
    SUBFIELD(K_PLAIN_HTTP);
#undef SUBFIELD
    const char *name = v[K_NAME] ? scalar_text(st, f_K_NAME, v[K_NAME], "a name") : NULL;
    if (!v[K_NAME]) {
        diag_node(st, n, "%s: a credential needs \"name\"", field);
        ok = false;
    } else if (!name || !pdk_vault_name_valid(name)) {
        if (name) {
            _cleanup_free_ char *q = quote_str(name);
            diag_node(st, v[K_NAME], "%s: %s is not a name (letters, digits, '.', '_', '-')",
                      f_K_NAME, q);
        }
        ok = false;
    } else {
        c.name = xstrdup(name);
        for (size_t i = 0; i < st->policy->credential_count; i++)
            if (strcmp(st->policy->credentials[i].name, name) == 0) {
                diag_node(st, v[K_NAME], "%s: a credential called %s is there already (line %d)",
                          f_K_NAME, name, st->policy->credentials[i].line);
                ok = false;
            }
    }
    const char *prov =
        v[K_PROVIDER] ? scalar_text(st, f_K_PROVIDER, v[K_PROVIDER], "a provider") : NULL;
    int provider = -1;
    for (size_t i = 0; prov && i < PDK_ARRAY_SIZE(provider_names); i++)
        if (strcmp(prov, provider_names[i]) == 0)
            provider = (int)i;
    if (!v[K_PROVIDER] || (prov && provider < 0)) {
        _cleanup_free_ char *q = prov ? quote_str(prov) : NULL;
        diag_node(st, v[K_PROVIDER] ? v[K_PROVIDER] : n,
                  "%s: %s%s (use static, feishu_tenant_token or oauth2_refresh)",
                  v[K_PROVIDER] ? f_K_PROVIDER : field,
                  v[K_PROVIDER] ? "unknown provider " : "a credential needs \"provider\"",
                  q ? q : "");
        ok = false;
    } else if (!prov) {
        ok = false;
    }
    c.provider = provider < 0 ? PDK_CREDENTIAL_STATIC : (pdk_credential_provider)provider;
    /* the vault secrets each provider takes */
    struct {
        int key;
        char **out;
        bool needed;
    } refs[] = {
        {K_VALUE, &c.value_secret, provider == PDK_CREDENTIAL_STATIC},
        {K_APP_ID, &c.app_id_secret, provider == PDK_CREDENTIAL_FEISHU_TENANT_TOKEN},
        {K_APP_SECRET, &c.app_secret_secret, provider == PDK_CREDENTIAL_FEISHU_TENANT_TOKEN},
        {K_REFRESH, &c.refresh_token_secret, provider == PDK_CREDENTIAL_OAUTH2_REFRESH},
        {K_CLIENT_ID, &c.client_id_secret, false},
        {K_CLIENT_SECRET, &c.client_secret_secret, false},
    };
    for (size_t i = 0; i < PDK_ARRAY_SIZE(refs); i++) {
        _cleanup_free_ char *f = xasprintf("%s.%s", field, keys[refs[i].key].name);
        yaml_node_t *node = v[refs[i].key];
        if (node && provider >= 0 && !refs[i].needed &&
            !(provider == PDK_CREDENTIAL_OAUTH2_REFRESH &&
              (refs[i].key == K_CLIENT_ID || refs[i].key == K_CLIENT_SECRET))) {
            diag_node(st, node, "%s: not a key of a %s credential (remove it)", f, prov);
            ok = false;
        } else if (node && !(*refs[i].out = secret_ref(st, f, node))) {
            ok = false;
        } else if (!node && refs[i].needed) {
            diag_node(st, n, "%s: a %s credential needs \"%s\" ({secret: NAME})", field, prov,
                      keys[refs[i].key].name);
            ok = false;
        }
    }
    if (v[K_TOKEN_URL]) {
        const char *u = scalar_text(st, f_K_TOKEN_URL, v[K_TOKEN_URL], "an https:// URL");
        if (u && strncmp(u, "https://", 8) != 0 && strncmp(u, "http://", 7) != 0) {
            _cleanup_free_ char *q = quote_str(u);
            diag_node(st, v[K_TOKEN_URL], "%s: %s is not an http(s) URL", f_K_TOKEN_URL, q);
            ok = false;
        } else if (u) {
            c.token_url = xstrdup(u);
        } else {
            ok = false;
        }
    } else if (provider == PDK_CREDENTIAL_OAUTH2_REFRESH) {
        diag_node(st, n, "%s: an oauth2_refresh credential needs \"token_url\"", field);
        ok = false;
    }
    /* hosts */
    yaml_node_item_t *items;
    size_t count = 0;
    if (!v[K_HOSTS]) {
        diag_node(st, n,
                  "%s: a credential needs \"hosts\" (where it may go, e.g. "
                  "[open.feishu.cn])",
                  field);
        ok = false;
    } else if (list_items(st, f_K_HOSTS, v[K_HOSTS], &items, &count)) {
        c.hosts = xcalloc(1, sizeof(char *));
        for (size_t i = 0; i < count; i++) {
            _cleanup_free_ char *f = xasprintf("%s[%zu]", f_K_HOSTS, i);
            yaml_node_t *item = node_at(st, items[i]);
            char *h = item ? host_value(st, f, item, true) : NULL;
            if (h)
                pdk_strv_push_take(&c.hosts, h);
            else
                ok = false;
        }
        if (count == 0) {
            diag_node(st, v[K_HOSTS], "%s: give at least one host", f_K_HOSTS);
            ok = false;
        }
    } else {
        ok = false;
    }
    /* inject */
    if (v[K_INJECT]) {
        static const key_spec ikeys[] = {{"header", NULL}, {"value", NULL}};
        yaml_node_t *iv[2];
        _cleanup_free_ char *fi = xasprintf("%s.inject", field);
        if (!mapping_values(st, fi, v[K_INJECT], ikeys, 2, iv)) {
            ok = false;
        } else {
            _cleanup_free_ char *fh = xasprintf("%s.header", fi);
            _cleanup_free_ char *fv = xasprintf("%s.value", fi);
            const char *h = iv[0] ? scalar_text(st, fh, iv[0], "a header name") : NULL;
            const char *val = iv[1] ? scalar_text(st, fv, iv[1], "a value with {token}") : NULL;
            bool name_ok = header_name_ok(h) && !header_is_framing(h);
            if (!name_ok && header_name_ok(h)) {
                diag_node(st, iv[0],
                          "%s: %s frames or routes the request and cannot carry a "
                          "credential (e.g. Authorization)",
                          fh, h);
                ok = false;
            } else if (!name_ok) {
                diag_node(st, iv[0] ? iv[0] : v[K_INJECT],
                          "%s: give the header to set, e.g. Authorization", fh);
                ok = false;
            }
            if (!val || !strstr(val, "{token}") || strpbrk(val, "\r\n")) {
                diag_node(st, iv[1] ? iv[1] : v[K_INJECT],
                          "%s: give the header's value with {token} where the credential goes "
                          "(e.g. \"Bearer {token}\")",
                          fv);
                ok = false;
            }
            if (name_ok && val) {
                c.inject_header = xstrdup(h);
                c.inject_value = xstrdup(val);
            }
        }
    }
    /* placeholder */
    if (v[K_PLACEHOLDER]) {
        static const key_spec pkeys[] = {
            {"env", NULL}, {"app_secret_env", NULL}, {"file", NULL}, {"prefix", NULL}};
        yaml_node_t *pv[4];
        _cleanup_free_ char *fp = xasprintf("%s.placeholder", field);
        if (!mapping_values(st, fp, v[K_PLACEHOLDER], pkeys, 4, pv)) {
            ok = false;
        } else {
            _cleanup_free_ char *fe = xasprintf("%s.env", fp);
            _cleanup_free_ char *fa = xasprintf("%s.app_secret_env", fp);
            _cleanup_free_ char *ff = xasprintf("%s.file", fp);
            if (pv[0] && !(c.placeholder_env = env_name_value(st, fe, pv[0])))
                ok = false;
            if (pv[1] && provider != PDK_CREDENTIAL_FEISHU_TENANT_TOKEN) {
                diag_node(st, pv[1],
                          "%s: only a feishu_tenant_token credential has an app "
                          "secret to stand in for (remove it)",
                          fa);
                ok = false;
            } else if (pv[1] && !(c.placeholder_app_secret_env = env_name_value(st, fa, pv[1]))) {
                ok = false;
            }
            if (pv[2]) {
                const char *text = scalar_text(st, ff, pv[2], "a path (~/... or absolute)");
                char *path = text ? resolve_path(st, ff, pv[2], text, false) : NULL;
                if (path && (strcmp(path, "/") == 0 || (st->home && strcmp(path, st->home) == 0))) {
                    diag_node(st, pv[2], "%s: name a file, not a directory", ff);
                    free(path);
                    path = NULL;
                }
                if (path)
                    c.placeholder_file = path;
                else
                    ok = false;
            }
            _cleanup_free_ char *fx = xasprintf("%s.prefix", fp);
            if (pv[3] && !(c.placeholder_prefix = placeholder_prefix(st, fx, pv[3])))
                ok = false;
            if (!pv[0] && !pv[1] && !pv[2]) {
                diag_node(st, v[K_PLACEHOLDER],
                          "%s: say where the sandbox finds the "
                          "placeholder (env, file)",
                          fp);
                ok = false;
            }
        }
    }
    if (!v[K_INJECT] && !v[K_PLACEHOLDER]) {
        diag_node(st, n,
                  "%s: a credential needs \"inject\" (a header on every request to its "
                  "hosts) or \"placeholder\" (replaced where the sandbox sends it)",
                  field);
        ok = false;
    }
    bool body_ok = !v[K_BODY] || parse_bool(st, f_K_BODY, v[K_BODY], &c.replace_in_body);
    if (!body_ok)
        ok = false;
    if (v[K_FIELDS] && !credential_fields(st, f_K_FIELDS, v[K_FIELDS], &c.replace_in_headers))
        ok = false;
    if (v[K_PLAIN_HTTP] && !parse_bool(st, f_K_PLAIN_HTTP, v[K_PLAIN_HTTP], &c.allow_plain_http))
        ok = false;
    /* A placeholder is replaced only where the credential says: a credential that names no
     * place would never put its value anywhere (the sandbox's placeholder would go on as
     * it is), which is what an older policy relying on "replaced wherever it appears" would
     * silently get. */
    if (v[K_PLACEHOLDER] && !v[K_INJECT] && !v[K_FIELDS] && !c.replace_in_body && body_ok) {
        diag_node(st, n,
                  "%s: say where the placeholder is replaced by the value: \"inject\" (a "
                  "header the gateway sets), \"replace_in_headers\" (e.g. [X-Api-Key]) or "
                  "\"replace_in_body: true\"",
                  field);
        ok = false;
    }
    if (!v[K_PLACEHOLDER] && (v[K_FIELDS] || c.replace_in_body)) {
        diag_node(st, v[K_FIELDS] ? v[K_FIELDS] : v[K_BODY],
                  "%s: what is replaced is the sandbox's placeholder, and the credential gives "
                  "the sandbox none (add \"placeholder\")",
                  v[K_FIELDS] ? f_K_FIELDS : f_K_BODY);
        ok = false;
    }
    if (!ok) {
        credential_clear(&c);
        return;
    }
    pdk_policy *p = st->policy;
    p->credentials = xrealloc(p->credentials, (p->credential_count + 1) * sizeof(*p->credentials));
    p->credentials[p->credential_count++] = c;
}

static void handle_credentials(parse_state *st, const char *field, yaml_node_t *n)
{
    each_item(st, field, n, credential);
}

/* ---- the schema ---- */

static const key_spec filesystem_keys[] = {
    {"read_deny", handle_read_deny},
    {"read_allow", handle_read_allow},
    {"write", handle_write},
    {"protect", handle_protect},
};

static const key_spec env_keys[] = {
    {"pass", handle_env_pass},
    {"set", handle_env_set},
};

static const key_spec limits_keys[] = {
    {"memory", handle_memory},
    {"pids", handle_pids},
    {"cpu", handle_cpu},
    {"timeout", handle_timeout},
};

static const key_spec landlock_keys[] = {
    {"min_abi", handle_min_abi},
    {"tcp_bind", handle_tcp_bind},
    {"tcp_connect", handle_tcp_connect},
};

static const key_spec sandbox_keys[] = {
    {"nested_userns", handle_nested_userns},
};

static const key_spec home_keys[] = {
    {"persist", handle_home_persist},
};

static const key_spec commands_keys[] = {
    {"default", handle_commands_default},
    {"rules", handle_commands_rules},
    {"examples", handle_commands_examples},
};

static const key_spec network_limits_keys[] = {
    {"connections", handle_network_connections},
    {"idle_timeout", handle_network_idle_timeout},
};

static void handle_network_limits(parse_state *st, const char *field, yaml_node_t *n)
{
    walk_section(st, n, field, network_limits_keys, PDK_ARRAY_SIZE(network_limits_keys));
}

static const key_spec network_keys[] = {
    {"default", handle_network_default},         {"rules", handle_network_rules},
    {"passthrough", handle_network_passthrough}, {"resolve", handle_network_resolve},
    {"upstream_ca", handle_network_upstream_ca}, {"limits", handle_network_limits},
};

static const key_spec approvals_keys[] = {
    {"timeout", handle_approval_timeout},
    {"on_timeout", handle_approval_on_timeout},
    {"request_timeout", handle_approval_request_timeout},
    {"max_held_requests", handle_approval_max_held},
};

#define SECTION_HANDLER(fn, table)                                                                 \
    static void fn(parse_state *st, const char *field, yaml_node_t *n)                             \
    {                                                                                              \
        walk_section(st, n, field, table, PDK_ARRAY_SIZE(table));                                  \
    }
SECTION_HANDLER(handle_filesystem, filesystem_keys)
SECTION_HANDLER(handle_env, env_keys)
SECTION_HANDLER(handle_limits, limits_keys)
SECTION_HANDLER(handle_landlock, landlock_keys)
SECTION_HANDLER(handle_sandbox, sandbox_keys)
SECTION_HANDLER(handle_home, home_keys)
SECTION_HANDLER(handle_commands, commands_keys)
SECTION_HANDLER(handle_approvals, approvals_keys)

static void handle_network(parse_state *st, const char *field, yaml_node_t *n)
{
    st->policy->network.enabled = true;
    walk_section(st, n, field, network_keys, PDK_ARRAY_SIZE(network_keys));
    /* A passthrough host is tunnelled unread: rules on its methods or paths could never
     * apply (the gateway would refuse its connections). */
    const pdk_net_rules *net = &st->policy->network;
    for (size_t i = 0; i < net->count; i++) {
        const pdk_net_rule *r = &net->rules[i];
        if ((r->methods || r->path) && pdk_net_rules_is_passthrough(net, r->host)) {
            diag_at(st, (size_t)st->policy->net_rule_lines[i], 0,
                    "network.rules[%zu]: %s is a passthrough host, whose requests are never "
                    "read, so a rule on their methods or path cannot apply (remove the host "
                    "from passthrough, or the rule's methods and path)",
                    i, r->host);
        }
    }
}

static const key_spec top_keys[] = {
    {"version", handle_version},
    {"filesystem", handle_filesystem},
    {"env", handle_env},
    {"limits", handle_limits},
    {"landlock", handle_landlock},
    {"sandbox", handle_sandbox},
    {"home", handle_home},
    {"commands", handle_commands},
    {"approvals", handle_approvals},
    {"network", handle_network},
    {"credentials", handle_credentials},
};

/* ---- libyaml ---- */

static PDK_NORETURN void yaml_out_of_memory(void)
{
    pdk_output_out_of_memory("libyaml");
}

static void syntax_diag(parse_state *st, const yaml_parser_t *parser)
{
    const char *problem = parser->problem ? parser->problem : "invalid YAML";
    switch (parser->error) {
    case YAML_MEMORY_ERROR:
        yaml_out_of_memory();
    case YAML_READER_ERROR: {
        /* The reader reports a byte offset, not a mark. */
        size_t line = 1, column = 1;
        for (size_t i = 0; i < parser->problem_offset && i < st->len; i++) {
            if (st->text[i] == '\n') {
                line++;
                column = 1;
            } else {
                column++;
            }
        }
        if (parser->problem_value >= 0)
            diag_at(st, line, column, "not valid UTF-8 text: %s (byte 0x%02x)", problem,
                    (unsigned)parser->problem_value & 0xffu);
        else
            diag_at(st, line, column, "not valid UTF-8 text: %s", problem);
        return;
    }
    case YAML_SCANNER_ERROR:
    case YAML_PARSER_ERROR:
    case YAML_COMPOSER_ERROR:
        if (parser->context)
            diag_mark(st, &parser->problem_mark,
                      "YAML syntax error: %s, %s that starts at line %zu, column %zu", problem,
                      parser->context, parser->context_mark.line + 1,
                      parser->context_mark.column + 1);
        else
            diag_mark(st, &parser->problem_mark, "YAML syntax error: %s", problem);
        return;
    case YAML_NO_ERROR:
    case YAML_WRITER_ERROR:
    case YAML_EMITTER_ERROR:
    default:
        diag_at(st, 0, 0, "YAML error: %s", problem);
        return;
    }
}

static void parser_init(parse_state *st, yaml_parser_t *parser)
{
    if (!yaml_parser_initialize(parser))
        yaml_out_of_memory();
    /* The encoding is detected (UTF-8 with or without a BOM, or UTF-16 with one). */
    yaml_parser_set_input_string(parser, (const unsigned char *)st->text, st->len);
}

static void refuse_anchor_tag(parse_state *st, const yaml_event_t *ev, const yaml_char_t *anchor,
                              const yaml_char_t *tag)
{
    if (anchor)
        diag_mark(st, &ev->start_mark,
                  "anchors and aliases are not allowed in a policy (write the value out)");
    if (tag) {
        /* libyaml expands "!!str" to the full tag; show it the way it was written. */
        static const char core[] = "tag:yaml.org,2002:";
        const char *t = (const char *)tag;
        _cleanup_free_ char *shown =
            pdk_str_has_prefix(t, core) ? xasprintf("!!%s", t + strlen(core)) : xstrdup(t);
        _cleanup_free_ char *q = quote_str(shown);
        diag_mark(st, &ev->start_mark, "tags (%s) are not allowed in a policy (remove it)", q);
    }
}

/* The event pass. Returns true when the first document is safe to load and walk. */
static bool prescan(parse_state *st)
{
    yaml_parser_t parser;
    parser_init(st, &parser);
    bool ok = true, done = false;
    int depth = 0, documents = 0;
    while (!done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            syntax_diag(st, &parser);
            ok = false;
            break;
        }
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++documents > 1) {
                /* The first document was scanned completely: it can still be walked. */
                diag_mark(st, &ev.start_mark,
                          "a policy is a single YAML document (remove this \"---\" and what "
                          "follows)");
                done = true;
            }
            break;
        case YAML_ALIAS_EVENT:
            diag_mark(st, &ev.start_mark,
                      "anchors and aliases are not allowed in a policy (write the value out)");
            ok = false;
            break;
        case YAML_SCALAR_EVENT:
            refuse_anchor_tag(st, &ev, ev.data.scalar.anchor, ev.data.scalar.tag);
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (ev.type == YAML_SEQUENCE_START_EVENT)
                refuse_anchor_tag(st, &ev, ev.data.sequence_start.anchor,
                                  ev.data.sequence_start.tag);
            else
                refuse_anchor_tag(st, &ev, ev.data.mapping_start.anchor, ev.data.mapping_start.tag);
            if (++depth > MAX_DEPTH) {
                diag_mark(st, &ev.start_mark,
                          "nested more than %d levels deep (a policy is at most 3)", MAX_DEPTH);
                ok = false;
                done = true;
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        case YAML_NO_EVENT:
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_END_EVENT:
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return ok;
}

static void walk_root(parse_state *st, yaml_node_t *root)
{
    if (!root || node_is_null(root)) {
        diag_at(st, 1, 1, "missing \"version: 1\" (add it as the first line)");
        return;
    }
    if (root->type != YAML_MAPPING_NODE) {
        _cleanup_free_ char *got = describe(root);
        diag_node(st, root,
                  "a policy is a mapping of keys (\"version: 1\" on the first line, then "
                  "sections), got %s",
                  got);
        return;
    }
    walk_section(st, root, NULL, top_keys, PDK_ARRAY_SIZE(top_keys));
    check_examples(st);
    if (st->policy->credential_count > 0 && !st->policy->network.enabled)
        diag_at(st, (size_t)st->policy->credentials[0].line, 0,
                "credentials are put on the wire by the egress gateway, which only a network "
                "section opens (add one with rules for the credentials' hosts)");
    if (!st->saw_version)
        diag_at(st, 1, 1, "missing \"version: 1\" (add it as the first line)");
}

static void parse_text(parse_state *st)
{
    if (!prescan(st))
        return;
    yaml_parser_t parser;
    parser_init(st, &parser);
    yaml_document_t doc;
    if (!yaml_parser_load(&parser, &doc)) {
        syntax_diag(st, &parser);
        yaml_parser_delete(&parser);
        return;
    }
    st->doc = &doc;
    walk_root(st, yaml_document_get_root_node(&doc));
    st->doc = NULL;
    free_examples(st);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
}

/* ---- the API ---- */

static pdk_policy *policy_new(const char *source)
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

void pdk_policy_free(pdk_policy *policy)
{
    if (!policy)
        return;
    free(policy->source);
    free(policy->base_dir);
    pdk_strv_free(policy->read_deny);
    pdk_strv_free(policy->read_allow);
    pdk_strv_free(policy->write);
    pdk_strv_free(policy->protect);
    pdk_strv_free(policy->env_pass);
    free(policy->home_persist);
    for (size_t i = 0; i < policy->env_set_count; i++) {
        free(policy->env_set[i].name);
        free(policy->env_set[i].value);
    }
    free(policy->env_set);
    free(policy->tcp_bind);
    free(policy->tcp_connect);
    pdk_command_rules_free(&policy->commands);
    free(policy->rule_lines);
    pdk_net_rules_free(&policy->network);
    free(policy->net_rule_lines);
    for (size_t i = 0; i < policy->credential_count; i++)
        credential_clear(&policy->credentials[i]);
    free(policy->credentials);
    free(policy);
}

void pdk_policy_diags_free(pdk_policy_diags *diags)
{
    if (!diags)
        return;
    for (size_t i = 0; i < diags->count; i++) {
        free(diags->items[i].file);
        free(diags->items[i].message);
    }
    free(diags->items);
    diags->items = NULL;
    diags->count = 0;
}

void pdk_policy_warnings(const pdk_policy *policy, pdk_policy_diags *out)
{
    *out = (pdk_policy_diags){0};
    const pdk_net_rules *net = &policy->network;
    for (size_t i = 0; i < net->count; i++) {
        const pdk_net_rule *r = &net->rules[i];
        if (r->host_loopback || r->decision == PDK_DECISION_DENY ||
            !pdk_net_host_is_loopback(r->host))
            continue;
        out->items = xrealloc(out->items, (out->count + 1) * sizeof(*out->items));
        out->items[out->count++] = (pdk_policy_diag){
            .file = xstrdup(policy->source ? policy->source : "<policy>"),
            .line = policy->net_rule_lines ? policy->net_rule_lines[i] : 0,
            .message = xasprintf(
                "network.rules[%zu]: %s is a loopback host, and this rule reaches nothing: "
                "the sandbox's own loopback is reached directly (NO_PROXY), never through "
                "the gateway (add host_loopback: true for a service on the host's loopback, "
                "or map a name to it with resolve)",
                i, r->host),
        };
    }
    if (policy->network.enabled &&
        policy->approval_request_timeout_seconds >= CLIENT_TIMEOUT_COMMON &&
        policy->approval_timeout_seconds >= CLIENT_TIMEOUT_COMMON) {
        out->items = xrealloc(out->items, (out->count + 1) * sizeof(*out->items));
        out->items[out->count++] = (pdk_policy_diag){
            .file = xstrdup(policy->source ? policy->source : "<policy>"),
            .message = xasprintf(
                "approvals.request_timeout: a held network request waits %llds, and common "
                "clients give up after %ds (the MCP SDK): an approval after that would send a "
                "request its client no longer waits for (keep it below the client's timeout)",
                (long long)policy->approval_request_timeout_seconds, CLIENT_TIMEOUT_COMMON),
        };
    }
}

char *pdk_policy_diag_format(const pdk_policy_diag *diag)
{
    const char *file = diag->file ? diag->file : "<policy>";
    const char *message = diag->message ? diag->message : "";
    if (diag->line > 0 && diag->column > 0)
        return xasprintf("%s:%d:%d: %s", file, diag->line, diag->column, message);
    if (diag->line > 0)
        return xasprintf("%s:%d: %s", file, diag->line, message);
    return xasprintf("%s: %s", file, message);
}

/* Hand the collected diagnostics over (or drop them); fill err with the first. */
static int finish_failed(parse_state *st, pdk_policy_diags *diags, pdk_error *err)
{
    sort_diags(st->diags, st->ndiags);
    /* diag_at() refuses once MAX_DIAGS are stored: the note goes last, by hand. */
    if (st->truncated) {
        st->diags = xrealloc(st->diags, (st->ndiags + 1) * sizeof(*st->diags));
        st->diags[st->ndiags++] = (pdk_policy_diag){
            .file = xstrdup(st->name),
            .message = xasprintf("too many problems; only the first %d are shown", MAX_DIAGS),
        };
    }
    _cleanup_free_ char *first = pdk_policy_diag_format(&st->diags[0]);
    pdk_error_set(err, 0, "%s", first);
    pdk_policy_diags local = {.items = st->diags, .count = st->ndiags};
    st->diags = NULL;
    st->ndiags = 0;
    if (diags)
        *diags = local;
    else
        pdk_policy_diags_free(&local);
    return -1;
}

int pdk_policy_parse(const char *name, const char *text, size_t len, const pdk_policy_context *ctx,
                     pdk_policy **out, pdk_policy_diags *diags, pdk_error *err)
{
    *out = NULL;
    if (diags)
        *diags = (pdk_policy_diags){0};
    if (!name)
        name = "<policy>";
    if (!text) {
        text = "";
        len = 0;
    }
    _cleanup_free_ char *home = NULL;
    if (ctx && ctx->home && ctx->home[0] == '/')
        home = pdk_path_normalize(ctx->home);
    parse_state st = {
        .name = name,
        .text = text,
        .len = len,
        .home = home,
        .policy = policy_new(name),
    };
    if (len > MAX_POLICY_BYTES)
        diag_at(&st, 0, 0, TOO_LARGE_MESSAGE);
    else
        parse_text(&st);
    if (st.ndiags > 0 || st.truncated) {
        pdk_policy_free(st.policy);
        return finish_failed(&st, diags, err);
    }
    *out = st.policy;
    return 0;
}

int pdk_policy_load_default(const pdk_policy_context *ctx, pdk_policy **out, pdk_error *err)
{
    /* The defaults themselves (policy_new): the embedded text documents them, and
     * test_policy checks that parsing it gives exactly this. No YAML on the start path. */
    (void)ctx;
    (void)err;
    *out = policy_new(BUILTIN_SOURCE);
    pdk_sha256_hex(default_policy_yaml, sizeof(default_policy_yaml) - 1, (*out)->sha256);
    return 0;
}

const char *pdk_policy_default_text(void)
{
    return default_policy_yaml;
}

/* The directory of path, absolute (lexically) when the cwd can be found. */
static char *base_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    _cleanup_free_ char *dir =
        slash ? (slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path)))
              : xstrdup(".");
    if (dir[0] != '/') {
        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        if (!cwd)
            return steal_pointer(&dir);
        _cleanup_free_ char *joined = pdk_path_join(cwd, dir);
        return pdk_path_normalize(joined);
    }
    return pdk_path_normalize(dir);
}

int pdk_policy_load_file(const char *path, const pdk_policy_context *ctx, pdk_policy **out,
                         pdk_policy_diags *diags, pdk_error *err)
{
    *out = NULL;
    if (diags)
        *diags = (pdk_policy_diags){0};
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    if (pdk_read_file_at(AT_FDCWD, path, &text, &len, MAX_POLICY_BYTES) < 0) {
        if (errno != EFBIG)
            return pdk_error_set(err, errno, "cannot read policy file %s", path);
        /* Same diagnostic as for text that is too large. */
        parse_state st = {.name = path};
        diag_at(&st, 0, 0, TOO_LARGE_MESSAGE);
        return finish_failed(&st, diags, err);
    }
    if (pdk_policy_parse(path, text, len, ctx, out, diags, err) < 0)
        return -1;
    (*out)->base_dir = base_dir_of(path);
    /* Relative CA paths are relative to the policy file. */
    for (char **ca = (*out)->network.upstream_ca; ca && *ca; ca++) {
        if ((*ca)[0] != '/') {
            _cleanup_free_ char *joined = pdk_path_join((*out)->base_dir, *ca);
            free(*ca);
            *ca = pdk_path_normalize(joined);
        }
    }
    pdk_sha256_hex(text, len, (*out)->sha256);
    return 0;
}

char **pdk_policy_example_argv(const char *command_line)
{
    pdk_shell_split_t split;
    pdk_shell_split(command_line, &split);
    char **argv = NULL;
    if (split.reducible && split.count == 1 && !split.commands[0].assignments[0]) {
        argv = pdk_strv_copy(split.commands[0].argv);
    } else {
        pdk_strv_push(&argv, "sh");
        pdk_strv_push(&argv, "-c");
        pdk_strv_push(&argv, command_line);
    }
    pdk_shell_split_free(&split);
    return argv;
}

char *pdk_policy_describe_rule(const pdk_policy *policy, ssize_t rule)
{
    const pdk_command_rules *rules = &policy->commands;
    if (rule < 0 || (size_t)rule >= rules->count)
        return xasprintf("the default (%s)", pdk_decision_name(rules->default_decision));
    const pdk_command_rule *r = &rules->rules[rule];
    pdk_buf b = {0};
    pdk_buf_printf(&b, "rule %zd", rule + 1);
    if (policy->rule_lines && policy->rule_lines[rule] > 0)
        pdk_buf_printf(&b, " (line %d", policy->rule_lines[rule]);
    else
        pdk_buf_printf(&b, " (");
    pdk_buf_printf(&b, "%s[", policy->rule_lines && policy->rule_lines[rule] > 0 ? ": " : "");
    for (size_t t = 0; t < r->token_count; t++) {
        char *const *alts = r->tokens[t].alternatives;
        bool many = alts[0] && alts[1];
        pdk_buf_printf(&b, "%s%s", t ? ", " : "", many ? "[" : "");
        for (size_t a = 0; alts[a]; a++)
            pdk_buf_printf(&b, "%s%s", a ? ", " : "", alts[a]);
        if (many)
            pdk_buf_printf(&b, "]");
    }
    pdk_buf_printf(&b, "]");
    if (r->under_count > 0)
        pdk_buf_printf(&b, " under %s%s", r->under[0].tokens[0].alternatives[0],
                       r->under_count > 1 || r->under[0].token_count > 1 ? "..." : "");
    pdk_buf_printf(&b, " %s)", pdk_decision_name(r->decision));
    return steal_pointer(&b.data);
}

char *pdk_policy_describe_net_rule(const pdk_policy *policy, ssize_t rule)
{
    const pdk_net_rules *rules = &policy->network;
    if (rule < 0 || (size_t)rule >= rules->count)
        return xasprintf("the network default (%s)", pdk_decision_name(rules->default_decision));
    const pdk_net_rule *r = &rules->rules[rule];
    pdk_buf b = {0};
    pdk_buf_printf(&b, "network rule %zd (", rule + 1);
    if (policy->net_rule_lines && policy->net_rule_lines[rule] > 0)
        pdk_buf_printf(&b, "line %d: ", policy->net_rule_lines[rule]);
    pdk_buf_printf(&b, "%s", r->host);
    if (r->port)
        pdk_buf_printf(&b, ":%u", (unsigned)r->port);
    for (size_t i = 0; r->schemes && r->schemes[i]; i++)
        pdk_buf_printf(&b, "%s%s", i ? "," : " ", r->schemes[i]);
    for (size_t i = 0; r->methods && r->methods[i]; i++)
        pdk_buf_printf(&b, "%s%s", i ? "," : " ", r->methods[i]);
    if (r->path)
        pdk_buf_printf(&b, " %s", r->path);
    pdk_buf_printf(&b, " %s)", pdk_decision_name(r->decision));
    return steal_pointer(&b.data);
}
