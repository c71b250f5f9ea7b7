/* policy_import.c: see policy_import.h. */
#include "policy_import.h"

#include "policy.h"
#include "util.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A YAML double-quoted scalar for s (new string): every byte outside printable ASCII, the
 * quote and the backslash escaped, so that any string survives. */
static char *yaml_quote(const char *s)
{
    pdk_buf b = {0};
    pdk_buf_printf(&b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            pdk_buf_printf(&b, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            pdk_buf_printf(&b, "\\x%02x", *p);
        else
            pdk_buf_printf(&b, "%c", *p);
    }
    pdk_buf_printf(&b, "\"");
    return b.data;
}

/* A comment line's text for s: printable ASCII only. */
static char *comment_safe(const char *s)
{
    char *c = xstrdup(s);
    for (char *p = c; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            *p = '?';
    return c;
}

static bool is_workspace_itself(const char *p)
{
    return strcmp(p, ".") == 0 || strcmp(p, "./") == 0 || strcmp(p, "") == 0;
}

/* Whether a path can go into read_deny/read_allow/write: absolute or under ~ (relative
 * ones are relative to where srt ran, which paddock cannot know). */
static bool is_anchored(const char *p)
{
    return p[0] == '/' || strcmp(p, "~") == 0 || strncmp(p, "~/", 2) == 0;
}

/* Whether paddock's own parser takes p as an entry of filesystem.key: the importer keeps
 * only what the policy it writes will load with (*why gets the parser's message). */
static bool entry_valid(const char *key, const char *p, char **why)
{
    _cleanup_free_ char *q = yaml_quote(p);
    _cleanup_free_ char *text = xasprintf("version: 1\nfilesystem:\n  %s: [%s]\n", key, q);
    pdk_policy_context ctx = {.home = "/nonexistent-home"};
    pdk_policy *pol = NULL;
    pdk_error err = {0};
    if (pdk_policy_parse("entry", text, strlen(text), &ctx, &pol, NULL, &err) == 0) {
        pdk_policy_free(pol);
        return true;
    }
    const char *m = strstr(err.message, ": ");
    m = m ? strstr(m + 2, ": ") : NULL;
    *why = xstrdup(m ? m + 2 : err.message);
    return false;
}

typedef struct import_state {
    pdk_buf yaml;
    char **notes;
    char **comments;
    pdk_error *err;
    const char *name;
} import_state;

static void note(import_state *st, const char *fmt, ...) PDK_PRINTF(2, 3);
static void note(import_state *st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *n = xvasprintf(fmt, ap);
    va_end(ap);
    pdk_strv_push_take(&st->notes, n);
}

/* The strings of list key in object o (NULL-terminated, new), skipping (with a note) what
 * is not a string; NULL when the key is absent. false (with err) when it is not a list. */
static bool strings(import_state *st, json_t *o, const char *section, const char *key, char ***out)
{
    *out = NULL;
    json_t *v = json_object_get(o, key);
    if (!v)
        return true;
    if (!json_is_array(v)) {
        pdk_error_set(st->err, 0, "%s: %s.%s is not a list (srt settings expect a list of paths)",
                      st->name, section, key);
        return false;
    }
    *out = xcalloc(1, sizeof(char *));
    size_t i;
    json_t *item;
    json_array_foreach(v, i, item)
    {
        if (!json_is_string(item) || strlen(json_string_value(item)) != json_string_length(item)) {
            note(st, "%s.%s[%zu] is not a path string: left out", section, key, i);
            continue;
        }
        pdk_strv_push(out, json_string_value(item));
    }
    return true;
}

static void emit_list(import_state *st, const char *key, char **items)
{
    pdk_buf_printf(&st->yaml, "  %s:", key);
    size_t n = 0;
    for (size_t i = 0; items && items[i]; i++) {
        _cleanup_free_ char *why = NULL;
        if (!entry_valid(key, items[i], &why)) {
            _cleanup_free_ char *c = comment_safe(items[i]);
            note(st, "filesystem.%s %s: %s", key, c, why);
            continue;
        }
        _cleanup_free_ char *q = yaml_quote(items[i]);
        pdk_buf_printf(&st->yaml, "%s    - %s\n", n++ == 0 ? "\n" : "", q);
    }
    if (n == 0)
        pdk_buf_printf(&st->yaml, " []\n");
}

int pdk_policy_import_srt(const char *name, const char *text, size_t len, char **yaml,
                          char ***notes, pdk_error *err)
{
    *yaml = NULL;
    *notes = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return pdk_error_set(err, 0, "%s:%d:%d: not JSON: %s (srt settings are a JSON object)",
                             name, jerr.line, jerr.column, jerr.text);
    if (!json_is_object(root)) {
        const char *what = json_is_array(root) ? "a list" : "a single value";
        json_decref(root); /* after the last look at it */
        return pdk_error_set(err, 0, "%s: srt settings are a JSON object, not %s", name, what);
    }
    import_state st = {.err = err, .name = name};
    _cleanup_free_ char *src = comment_safe(name);
    st.notes = xcalloc(1, sizeof(char *));
    int ret = -1;
    char **deny_read = NULL, **allow_read = NULL, **allow_write = NULL, **deny_write = NULL;
    char **read_deny = NULL, **read_allow = NULL, **write = NULL, **protect = NULL;
    json_t *fs = json_object_get(root, "filesystem");
    if (fs && !json_is_object(fs)) {
        pdk_error_set(err, 0, "%s: filesystem is not an object (srt settings expect one)", name);
        goto out;
    }
    if (fs && (!strings(&st, fs, "filesystem", "denyRead", &deny_read) ||
               !strings(&st, fs, "filesystem", "allowRead", &allow_read) ||
               !strings(&st, fs, "filesystem", "allowWrite", &allow_write) ||
               !strings(&st, fs, "filesystem", "denyWrite", &deny_write)))
        goto out;
    read_deny = xcalloc(1, sizeof(char *));
    read_allow = xcalloc(1, sizeof(char *));
    write = xcalloc(1, sizeof(char *));
    protect = xcalloc(1, sizeof(char *));
    for (size_t i = 0; deny_read && deny_read[i]; i++) {
        if (is_anchored(deny_read[i]))
            pdk_strv_push(&read_deny, deny_read[i]);
        else
            note(&st, "filesystem.denyRead %s is relative: give it as an absolute or ~/ path",
                 deny_read[i]);
    }
    for (size_t i = 0; allow_read && allow_read[i]; i++) {
        if (is_anchored(allow_read[i]))
            pdk_strv_push(&read_allow, allow_read[i]);
        else
            note(&st, "filesystem.allowRead %s is relative: the workspace is readable anyway",
                 allow_read[i]);
    }
    for (size_t i = 0; allow_write && allow_write[i]; i++) {
        if (is_workspace_itself(allow_write[i]))
            continue; /* the workspace: always writable (as a reviewed overlay) */
        if (is_anchored(allow_write[i]))
            pdk_strv_push(&write, allow_write[i]);
        else
            note(&st,
                 "filesystem.allowWrite %s is relative: paths in the workspace are writable "
                 "anyway; give others as absolute or ~/ paths",
                 allow_write[i]);
    }
    for (size_t i = 0; deny_write && deny_write[i]; i++) {
        const char *p = deny_write[i];
        if (p[0] == '/' || p[0] == '~') {
            note(&st,
                 "filesystem.denyWrite %s is outside the workspace: only the workspace and "
                 "filesystem.write are writable in paddock, so it is read-only already",
                 p);
            continue;
        }
        if (strncmp(p, "./", 2) == 0)
            p += 2;
        if (!*p || strstr(p, "..")) {
            note(&st, "filesystem.denyWrite %s: not a path in the workspace, left out",
                 deny_write[i]);
            continue;
        }
        pdk_strv_push(&protect, p);
    }
    /* network: allowedDomains and deniedDomains become host rules (srt's "*.x" globs mean
     * what paddock's do: names under x, not x itself); the rest has no counterpart. */
    json_t *net = json_object_get(root, "network");
    char **allowed = NULL, **denied = NULL;
    if (net && !json_is_object(net)) {
        pdk_error_set(err, 0, "%s: network is not an object (srt settings expect one)", name);
        goto out;
    }
    if (net && (!strings(&st, net, "network", "allowedDomains", &allowed) ||
                !strings(&st, net, "network", "deniedDomains", &denied))) {
        pdk_strv_free(allowed);
        pdk_strv_free(denied);
        goto out;
    }
    pdk_buf net_rules = {0};
    for (int pass = 0; pass < 2; pass++) {
        char **list = pass == 0 ? denied : allowed;
        for (size_t i = 0; list && list[i]; i++) {
            _cleanup_free_ char *host = xstrdup(list[i]);
            char *colon = strrchr(host, ':');
            long port = 0;
            if (colon && !strchr(host, ']') && colon == strchr(host, ':')) {
                char *end = NULL;
                port = strtol(colon + 1, &end, 10);
                if (!*(colon + 1) || *end || port < 1 || port > 65535) {
                    _cleanup_free_ char *c = comment_safe(list[i]);
                    note(&st, "network.%s %s: not a host or host:port, left out",
                         pass ? "allowedDomains" : "deniedDomains", c);
                    continue;
                }
                *colon = '\0';
            }
            const char *why = NULL;
            _cleanup_free_ char *h = pdk_net_host_pattern_normalize(host, &why);
            if (!h) {
                _cleanup_free_ char *c = comment_safe(list[i]);
                note(&st, "network.%s %s: %s, left out", pass ? "allowedDomains" : "deniedDomains",
                     c, why);
                continue;
            }
            _cleanup_free_ char *q = yaml_quote(h);
            if (port)
                pdk_buf_printf(&net_rules, "    - {host: %s, port: %ld, decision: %s}\n", q, port,
                               pass ? "allow" : "deny");
            else
                pdk_buf_printf(&net_rules, "    - {host: %s, decision: %s}\n", q,
                               pass ? "allow" : "deny");
        }
    }
    pdk_strv_free(allowed);
    pdk_strv_free(denied);
    const char *net_key;
    json_t *net_value;
    json_object_foreach(net, net_key, net_value)
    {
        if (strcmp(net_key, "allowedDomains") != 0 && strcmp(net_key, "deniedDomains") != 0) {
            _cleanup_free_ char *k = comment_safe(net_key);
            note(&st, "network.%s has no counterpart (paddock's gateway decides per request)", k);
        }
    }
    const char *ignored[] = {"credentials", NULL};
    for (size_t i = 0; ignored[i]; i++) {
        json_t *v = json_object_get(root, ignored[i]);
        if (!v)
            continue;
        char *dump = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
        note(&st, "%s (this version of paddock has no %s section yet)", ignored[i], ignored[i]);
        pdk_strv_push_take(&st.comments, xasprintf("%s: %s", ignored[i], dump ? dump : "?"));
        free(dump);
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        if (strcmp(key, "filesystem") != 0 && strcmp(key, "network") != 0 &&
            strcmp(key, "credentials") != 0) {
            _cleanup_free_ char *k = comment_safe(key);
            note(&st, "%s is not an srt setting paddock knows: left out", k);
        }
    }
    json_object_foreach(fs, key, v)
    {
        if (strcmp(key, "denyRead") != 0 && strcmp(key, "allowRead") != 0 &&
            strcmp(key, "allowWrite") != 0 && strcmp(key, "denyWrite") != 0) {
            _cleanup_free_ char *k = comment_safe(key);
            note(&st, "filesystem.%s is not carried over", k);
        }
    }

    pdk_buf body = st.yaml; /* the lists first: emitting them may add notes */
    st.yaml = (pdk_buf){0};
    pdk_buf_printf(&st.yaml, "version: 1\nfilesystem:\n");
    emit_list(&st, "read_deny", read_deny);
    emit_list(&st, "read_allow", read_allow);
    emit_list(&st, "write", write);
    emit_list(&st, "protect", protect);
    pdk_buf lists = st.yaml;
    st.yaml = body;
    pdk_buf_printf(&st.yaml,
                   "# paddock policy imported from the sandbox-runtime settings %s\n"
                   "# (paddock policy import --from srt). Check it: paddock policy lint FILE\n",
                   src);
    for (size_t i = 0; st.notes[i]; i++) {
        _cleanup_free_ char *c = comment_safe(st.notes[i]);
        pdk_buf_printf(&st.yaml, "# not carried over: %s\n", c);
    }
    for (size_t i = 0; st.comments && st.comments[i]; i++) {
        _cleanup_free_ char *c = comment_safe(st.comments[i]);
        pdk_buf_printf(&st.yaml, "#   was: %s\n", c);
    }
    pdk_buf_printf(&st.yaml, "%s", lists.data ? lists.data : "");
    pdk_buf_free(&lists);
    if (net)
        pdk_buf_printf(&st.yaml, "network:\n  default: deny\n  rules:%s\n%s",
                       net_rules.data ? "" : " []", net_rules.data ? net_rules.data : "");
    pdk_buf_free(&net_rules);
    *yaml = steal_pointer(&st.yaml.data);
    *notes = steal_pointer(&st.notes);
    ret = 0;
out:
    json_decref(root);
    pdk_buf_free(&st.yaml);
    pdk_strv_free(st.notes);
    pdk_strv_free(st.comments);
    pdk_strv_free(deny_read);
    pdk_strv_free(allow_read);
    pdk_strv_free(allow_write);
    pdk_strv_free(deny_write);
    pdk_strv_free(read_deny);
    pdk_strv_free(read_allow);
    pdk_strv_free(write);
    pdk_strv_free(protect);
    return ret;
}
