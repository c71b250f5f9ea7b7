/* cmd_secret.c: paddock secret set|list|rm */
#include "cli.h"

#include "home.h"
#include "token_answer.h"
#include "vault.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "usage: paddock secret set NAME [--from-file FILE] [--json]\n"
    "       paddock secret list [--json]\n"
    "       paddock secret rm NAME [--json]\n"
    "\n"
    "The vault: secrets the gateway puts on the wire for credentials, never shown to a\n"
    "sandbox. Encrypted at rest (XChaCha20-Poly1305) in the state dir, under\n"
    "STATE/vault.key, or the key in PADDOCK_VAULT_KEY (64 hex digits) or on the descriptor\n"
    "PADDOCK_VAULT_KEY_FD.\n"
    "\n"
    "set   store NAME; the value comes from stdin (a terminal is asked without echo; one\n"
    "      trailing newline is dropped) or from FILE, never from the command line; a new\n"
    "      value makes the placeholders kept for NAME with persistent homes new\n"
    "list  names, kinds, when made and last used, and when a minted token expires; never\n"
    "      values\n"
    "rm    remove NAME, and the placeholders kept for it with persistent homes\n"
    "\n"
    "  --from-file FILE  read the value from FILE\n"
    "  --json            one JSON object (list: one a line)\n"
    "  -h, --help        show this help\n";

/* The value from stdin: asked without echo on a terminal. */
static int read_value(const char *name, char **out, size_t *len, pdk_error *err)
{
    if (isatty(STDIN_FILENO)) {
        struct termios old, quiet;
        bool echo_off = tcgetattr(STDIN_FILENO, &old) == 0;
        if (echo_off) {
            quiet = old;
            quiet.c_lflag &= ~(tcflag_t)ECHO;
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
        }
        fprintf(stderr, "value for %s (not shown): ", name);
        char *line = NULL;
        size_t cap = 0;
        ssize_t n = getline(&line, &cap, stdin);
        if (echo_off)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
        fputc('\n', stderr);
        if (n < 0) {
            free(line);
            return pdk_error_set(err, EIO, "no value given for %s", name);
        }
        *out = line;
        *len = (size_t)n;
    } else if (pdk_read_all(STDIN_FILENO, out, len, PDK_VAULT_VALUE_MAX + 2) < 0) {
        return pdk_error_set(err, errno,
                             errno == EFBIG ? "the value of %s is over 64 KiB"
                                            : "cannot read the value of %s from stdin",
                             name);
    }
    if (*len > 0 && (*out)[*len - 1] == '\n')
        (*len)--;
    if (*len > 0 && (*out)[*len - 1] == '\r')
        (*len)--;
    return 0;
}

static int open_vault(bool create, pdk_vault **v, char **state_out)
{
    pdk_error err = {0};
    _cleanup_free_ char *state = NULL;
    if (pdk_cli_state_dir(create, &state, &err) < 0 || pdk_vault_open(state, create, v, &err) < 0)
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    if (state_out)
        *state_out = steal_pointer(&state);
    return PDK_EXIT_OK;
}

/* The placeholders kept with persistent homes that stand for secret name: made anew at
 * their next run, since what they stand for changes (home.h). *forgotten: how many. */
static int forget_placeholders(const char *state, const char *name, size_t *forgotten)
{
    pdk_error err = {0};
    if (pdk_home_placeholders_forget(state, name, forgotten, &err) < 0) {
        pdk_error_prefix(&err, "%s is unchanged", name);
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    }
    return PDK_EXIT_OK;
}

static void say_forgotten(size_t forgotten)
{
    if (forgotten > 0)
        printf("(%zu placeholder%s kept with persistent homes made anew at the next run)\n",
               forgotten, forgotten == 1 ? "" : "s");
}

typedef struct list_args {
    bool json;
    pdk_vault *vault;
} list_args;

/* A token a provider minted (NAME.tenant_token, NAME.access_token): when it expires, or 0.
 * The value itself is read only to find that, and never shown. */
static int64_t token_expiry(pdk_vault *v, const pdk_vault_entry *e)
{
    if (!e->kind || strcmp(e->kind, "token") != 0)
        return 0;
    pdk_error ignored = {0};
    const char *value = pdk_vault_get(v, e->name, false, &ignored);
    char *token = NULL;
    int64_t expires = 0, lifetime = 0;
    if (!value || !pdk_token_cache_parse(value, &token, &expires, &lifetime))
        return 0;
    pdk_free_secret(token);
    return expires;
}

static int print_entry(const pdk_vault_entry *e, void *arg)
{
    list_args *la = arg;
    int64_t expires = token_expiry(la->vault, e);
    if (la->json) {
        json_t *o =
            json_pack("{s:s, s:s, s:I, s:I}", "name", e->name, "kind", e->kind ? e->kind : "",
                      "created_ns", (json_int_t)e->created_ns, "length", (json_int_t)e->length);
        json_object_set_new(o, "used_ns", e->used_ns ? json_integer(e->used_ns) : json_null());
        if (expires)
            json_object_set_new(o, "expires_ns", json_integer(expires));
        char *line = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        printf("%s\n", line ? line : "{}");
        free(line);
        json_decref(o);
        return 0;
    }
    char made[32] = "-", used[32] = "never", until[48] = "";
    struct tm tm;
    time_t t = (time_t)(e->created_ns / 1000000000);
    if (e->created_ns && localtime_r(&t, &tm))
        strftime(made, sizeof(made), "%Y-%m-%d %H:%M", &tm);
    t = (time_t)(e->used_ns / 1000000000);
    if (e->used_ns && localtime_r(&t, &tm))
        strftime(used, sizeof(used), "%Y-%m-%d %H:%M", &tm);
    t = (time_t)(expires / 1000000000);
    if (expires && localtime_r(&t, &tm)) {
        char when[32];
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
        snprintf(until, sizeof(until), "  %s %s",
                 expires > pdk_now_realtime_ns() ? "expires" : "expired", when);
    }
    printf("%-32s %-8s %-17s %-17s%s\n", e->name, e->kind ? e->kind : "", made, used, until);
    return 0;
}

int pdk_cmd_secret(int argc, char **argv)
{
    static const struct option options[] = {{"from-file", required_argument, NULL, 'f'},
                                            {"json", no_argument, NULL, 'j'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    const char *file = NULL;
    bool json = false;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'f':
            file = optarg;
            break;
        case 'j':
            json = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return PDK_EXIT_OK;
        default:
            return pdk_cli_bad_option(argv[0], optopt, argv, optind);
        }
    }
    if (optind >= argc)
        return pdk_cli_usage_error("secret", "say set, list or rm (see paddock secret --help)");
    const char *sub = argv[optind++];
    const char *name = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return pdk_cli_usage_error("secret",
                                   "unexpected argument '%s' (the value never goes on "
                                   "the command line: give it on stdin or with --from-file)",
                                   argv[optind]);
    pdk_error err = {0};
    pdk_vault *v = NULL;
    int r;
    if (strcmp(sub, "list") == 0) {
        if (name)
            return pdk_cli_usage_error("secret list", "unexpected argument '%s'", name);
        if ((r = open_vault(false, &v, NULL)) != PDK_EXIT_OK)
            return r;
        list_args la = {json, v};
        pdk_vault_each(v, print_entry, &la);
        pdk_vault_close(v);
        return PDK_EXIT_OK;
    }
    if (strcmp(sub, "set") != 0 && strcmp(sub, "rm") != 0)
        return pdk_cli_usage_error("secret", "unknown subcommand '%s' (set, list or rm)", sub);
    if (!name)
        return pdk_cli_usage_error(sub[0] == 's' ? "secret set" : "secret rm", "no NAME given");
    if (file && strcmp(sub, "set") != 0)
        return pdk_cli_usage_error("secret rm", "--from-file is for paddock secret set");
    if (!pdk_vault_name_valid(name))
        return pdk_cli_usage_error("secret",
                                   "\"%s\" is not a secret name (letters, digits, '.', "
                                   "'_', '-'; at most 128)",
                                   name);
    _cleanup_free_ char *state = NULL;
    if ((r = open_vault(strcmp(sub, "set") == 0, &v, &state)) != PDK_EXIT_OK)
        return r;
    size_t forgotten = 0;
    if (strcmp(sub, "rm") == 0) {
        /* The placeholders that stood for it first: a failure there changes nothing. */
        r = forget_placeholders(state, name, &forgotten);
        if (r == PDK_EXIT_OK && pdk_vault_remove(v, name, &err) < 0)
            r = pdk_cli_fail(&err, PDK_EXIT_FAILED);
        if (r == PDK_EXIT_OK && json) {
            pdk_cli_print_json(json_pack("{s:s, s:b, s:I}", "name", name, "removed", 1,
                                         "placeholders_forgotten", (json_int_t)forgotten));
        } else if (r == PDK_EXIT_OK) {
            printf("removed %s\n", name);
            say_forgotten(forgotten);
        }
        pdk_vault_close(v);
        return r;
    }
    char *value = NULL;
    size_t len = 0;
    int rr = file ? pdk_read_file_at(AT_FDCWD, file, &value, &len, PDK_VAULT_VALUE_MAX + 2)
                  : read_value(name, &value, &len, &err);
    if (rr < 0 && file)
        pdk_error_set(&err, errno, "cannot read %s", file);
    size_t read_len = len; /* what is wiped: the trailing newline too */
    if (rr == 0 && file && len > 0 && value[len - 1] == '\n')
        len--;
    if (rr == 0) {
        /* A new value: the placeholders that stood for the old one are made anew (first, so
         * that a failure there changes nothing). The same value again keeps them. */
        pdk_error ignored = {0};
        const char *old = pdk_vault_get(v, name, false, &ignored);
        bool same = old && strlen(old) == len && sodium_memcmp(old, value, len) == 0;
        if (!same && forget_placeholders(state, name, &forgotten) != PDK_EXIT_OK) {
            sodium_memzero(value, len);
            free(value);
            pdk_vault_close(v);
            return PDK_EXIT_FAILED;
        }
        rr = pdk_vault_set(v, name, "static", value, len, &err);
    }
    if (value) {
        sodium_memzero(value, read_len > len ? read_len : len);
        free(value);
    }
    pdk_vault_close(v);
    if (rr < 0)
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    if (json) {
        pdk_cli_print_json(json_pack("{s:s, s:b, s:I}", "name", name, "stored", 1,
                                     "placeholders_forgotten", (json_int_t)forgotten));
    } else {
        printf("stored %s\n", name);
        say_forgotten(forgotten);
    }
    return PDK_EXIT_OK;
}
