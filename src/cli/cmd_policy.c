/* cmd_policy.c: paddock policy check|lint|default */
#include "cli.h"

#include "fsutil.h"
#include "policy.h"
#include "policy_import.h"
#include "statedir.h"

#include <ctype.h>
#include <errno.h>
#include <http_parser.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: paddock policy check [--policy FILE] [--json] [--under LINE] -- CMD [ARG...]\n"
    "       paddock policy check [--policy FILE] [--json] --url URL [--method METHOD]\n"
    "       paddock policy lint FILE [--json]\n"
    "       paddock policy default\n"
    "       paddock policy import --from srt FILE [--output OUT]\n"
    "\n"
    "check   say what the command rules decide for CMD (allow, confine, ask or deny) and\n"
    "        which rule decided; shell wrappers (sh -c ...) are judged command by command.\n"
    "        With --under: as a descendant of the command line LINE (an installer, for the\n"
    "        rules with \"under\").\n"
    "        With --url: what the network rules decide for that request (method GET\n"
    "        unless --method says otherwise). Without --policy, the built-in default.\n"
    "lint    report every problem of a policy file at once, as FILE:LINE:COLUMN: message;\n"
    "        exits 1 when there is one. Warnings (FILE:LINE: warning: message: valid, but\n"
    "        likely not meant, such as a rule for 127.0.0.1 without host_loopback) do not.\n"
    "default print the built-in default policy (a starting point for a file).\n"
    "import  convert an Anthropic sandbox-runtime settings file into a paddock policy (on\n"
    "        stdout, or written to OUT); what it cannot carry over is said on stderr and kept\n"
    "        as comments.\n"
    "\n"
    "  --policy FILE  the policy to check against\n"
    "  --url URL      a request (http:// or https://) instead of a command\n"
    "  --method M     its method (default GET)\n"
    "  --under LINE   judge CMD as run below LINE (e.g. --under 'npm install')\n"
    "  --json         one JSON object on stdout\n"
    "  -h, --help     show this help\n";

/* Load FILE (or the default), printing every problem on stderr when it is invalid. */
static int load(const char *file, pdk_policy **out)
{
    pdk_error err = {0};
    _cleanup_free_ char *home = pdk_home_dir();
    pdk_policy_context ctx = {.home = home};
    if (!file)
        return pdk_policy_load_default(&ctx, out, &err) < 0 ? pdk_cli_fail(&err, PDK_EXIT_FAILED)
                                                            : PDK_EXIT_OK;
    pdk_policy_diags diags = {0};
    if (pdk_policy_load_file(file, &ctx, out, &diags, &err) == 0)
        return PDK_EXIT_OK;
    if (diags.count == 0)
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    for (size_t i = 0; i < diags.count; i++) {
        _cleanup_free_ char *line = pdk_policy_diag_format(&diags.items[i]);
        fprintf(stderr, "%s\n", line);
    }
    pdk_policy_diags_free(&diags);
    return PDK_EXIT_FAILED;
}

typedef struct check_request {
    const char *url;
    const char *method;
    const char *under;
} check_request;

static int parse_options(int argc, char **argv, const char **policy, bool *json,
                         check_request *request)
{
    static const struct option options[] = {{"policy", required_argument, NULL, 'p'},
                                            {"json", no_argument, NULL, 'j'},
                                            {"url", required_argument, NULL, 'u'},
                                            {"method", required_argument, NULL, 'm'},
                                            {"under", required_argument, NULL, 'U'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (!policy)
                return pdk_cli_usage_error(argv[0], "--policy is for 'policy check' only");
            *policy = optarg;
            break;
        case 'j':
            *json = true;
            break;
        case 'u':
        case 'm':
        case 'U':
            if (!request)
                return pdk_cli_usage_error(argv[0],
                                           "--url, --method and --under are for 'policy check' "
                                           "only");
            if (c == 'u')
                request->url = optarg;
            else if (c == 'm')
                request->method = optarg;
            else
                request->under = optarg;
            break;
        case 'h':
            fputs(usage, stdout);
            return PDK_EXIT_OK;
        default:
            return pdk_cli_bad_option(argv[0], optopt, argv, optind);
        }
    }
    return -1;
}

/* paddock policy check --url URL [--method M]: the network rules on one request. */
static int check_url(const char *file, bool json, const check_request *request)
{
    struct http_parser_url u;
    http_parser_url_init(&u);
    const char *url = request->url;
    if (http_parser_parse_url(url, strlen(url), 0, &u) != 0 || !(u.field_set & (1 << UF_SCHEMA)) ||
        !(u.field_set & (1 << UF_HOST)))
        return pdk_cli_usage_error("policy check",
                                   "--url %s is not an absolute http(s) URL "
                                   "(e.g. https://api.example.com/v1/items)",
                                   url);
    _cleanup_free_ char *scheme =
        xstrndup(url + u.field_data[UF_SCHEMA].off, u.field_data[UF_SCHEMA].len);
    for (char *c = scheme; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)
        return pdk_cli_usage_error("policy check",
                                   "--url %s: the gateway judges http and https "
                                   "only",
                                   url);
    _cleanup_free_ char *raw_host =
        xstrndup(url + u.field_data[UF_HOST].off, u.field_data[UF_HOST].len);
    const char *why = NULL;
    _cleanup_free_ char *host = pdk_net_host_pattern_normalize(raw_host, &why);
    if (!host || strchr(host, '*'))
        return pdk_cli_usage_error("policy check", "--url %s: the host is not valid: %s", url,
                                   why ? why : "a glob is not a host");
    uint16_t port = u.field_set & (1 << UF_PORT) ? u.port : strcmp(scheme, "https") == 0 ? 443 : 80;
    _cleanup_free_ char *target = NULL;
    if (u.field_set & (1 << UF_PATH))
        target = xstrdup(url + u.field_data[UF_PATH].off);
    else
        target = xasprintf(
            "/%s", u.field_set & (1 << UF_QUERY) ? url + u.field_data[UF_QUERY].off - 1 : "");
    _cleanup_free_ char *query = NULL;
    _cleanup_free_ char *path = pdk_net_path_normalize(target, &query, &why);
    if (!path)
        return pdk_cli_usage_error("policy check", "--url %s: %s", url, why);
    _cleanup_free_ char *method = xstrdup(request->method ? request->method : "GET");
    for (char *c = method; *c; c++)
        *c = (char)toupper((unsigned char)*c);
    pdk_policy *policy = NULL;
    int r = load(file, &policy);
    if (r != PDK_EXIT_OK)
        return r;
    pdk_net_request req = {scheme, host, port, method, path};
    pdk_net_verdict v;
    pdk_net_rules_judge(&policy->network, &req, &v);
    _cleanup_free_ char *how = pdk_policy_describe_net_rule(policy, v.rule);
    if (json) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:b}", "decision",
                              pdk_decision_name(v.decision), "reason", v.reason, "decided_by", how,
                              "method", method, "host", host, "port", (int)port, "path", path,
                              "policy", policy->source, "network_section", policy->network.enabled);
        json_object_set_new(o, "rule", v.rule >= 0 ? json_integer(v.rule) : json_null());
        json_object_set_new(o, "line",
                            v.rule >= 0 && policy->net_rule_lines[v.rule] > 0
                                ? json_integer(policy->net_rule_lines[v.rule])
                                : json_null());
        pdk_cli_print_json(o);
    } else if (!policy->network.enabled) {
        printf("deny: the policy has no network section (nothing leaves the sandbox)\n");
    } else if (v.rule >= 0) {
        printf("%s: %s: %s\n", pdk_decision_name(v.decision), how, v.reason);
    } else {
        printf("%s: %s\n", pdk_decision_name(v.decision), v.reason);
    }
    pdk_policy_free(policy);
    return PDK_EXIT_OK;
}

static int check(int argc, char **argv)
{
    const char *file = NULL;
    bool json = false;
    check_request request = {0};
    int early = parse_options(argc, argv, &file, &json, &request);
    if (early >= 0)
        return early;
    if (request.method && !request.url)
        return pdk_cli_usage_error("policy check", "--method goes with --url");
    if (request.url) {
        if (optind < argc)
            return pdk_cli_usage_error("policy check", "give --url or a command, not both");
        if (request.under)
            return pdk_cli_usage_error("policy check", "--under goes with a command, not --url");
        return check_url(file, json, &request);
    }
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (optind >= argc)
        return pdk_cli_usage_error("policy check",
                                   "no command given: paddock policy check -- CMD [ARG...]");
    pdk_policy *policy = NULL;
    int r = load(file, &policy);
    if (r != PDK_EXIT_OK)
        return r;
    pdk_command_verdict v;
    _cleanup_strv_ char **under = request.under ? pdk_policy_example_argv(request.under) : NULL;
    char *const *ancestors[] = {under, NULL};
    pdk_command_query q = {.argv = argv + optind,
                           .ancestors = under ? (char *const *const *)ancestors : NULL};
    pdk_command_rules_judge_query(&policy->commands, &q, &v);
    _cleanup_free_ char *how = pdk_policy_describe_rule(policy, v.rule);
    if (json) {
        json_t *o =
            json_pack("{s:s, s:s, s:b, s:b}", "decision", pdk_decision_name(v.decision), "reason",
                      v.reason, "through_shell", v.through_shell, "unreducible", v.unreducible);
        json_object_set_new(o, "rule", v.rule >= 0 ? json_integer(v.rule) : json_null());
        json_object_set_new(o, "line",
                            v.rule >= 0 && policy->rule_lines[v.rule] > 0
                                ? json_integer(policy->rule_lines[v.rule])
                                : json_null());
        json_object_set_new(o, "decided_by", json_string(how));
        json_object_set_new(o, "under", request.under ? json_string(request.under) : json_null());
        json_object_set_new(o, "policy", json_string(policy->source));
        pdk_cli_print_json(o);
    } else {
        const char *note = v.unreducible     ? " (a shell script judged as a whole)"
                           : v.through_shell ? " (judged command by command through the shell)"
                                             : "";
        if (v.rule >= 0)
            printf("%s: %s: %s%s\n", pdk_decision_name(v.decision), how, v.reason, note);
        else
            printf("%s: %s%s\n", pdk_decision_name(v.decision), v.reason, note);
    }
    pdk_policy_free(policy);
    return PDK_EXIT_OK;
}

static int lint(int argc, char **argv)
{
    bool json = false;
    int early = parse_options(argc, argv, NULL, &json, NULL);
    if (early >= 0)
        return early;
    if (optind >= argc)
        return pdk_cli_usage_error("policy lint", "no policy file given");
    if (optind + 1 < argc)
        return pdk_cli_usage_error("policy lint", "one file at a time ('%s' is one too many)",
                                   argv[optind + 1]);
    const char *file = argv[optind];
    _cleanup_free_ char *home = pdk_home_dir();
    pdk_policy_context ctx = {.home = home};
    pdk_policy *policy = NULL;
    pdk_policy_diags diags = {0};
    pdk_error err = {0};
    int r = pdk_policy_load_file(file, &ctx, &policy, &diags, &err);
    pdk_policy_diags warnings = {0};
    if (r == 0)
        pdk_policy_warnings(policy, &warnings);
    pdk_policy_free(policy);
    if (r < 0 && diags.count == 0)
        return pdk_cli_fail(&err, PDK_EXIT_FAILED); /* unreadable */
    if (json) {
        json_t *lists[2] = {json_array(), json_array()};
        const pdk_policy_diags *from[2] = {&diags, &warnings};
        for (size_t l = 0; l < 2; l++)
            for (size_t i = 0; i < from[l]->count; i++) {
                const pdk_policy_diag *d = &from[l]->items[i];
                json_array_append_new(lists[l],
                                      json_pack("{s:i, s:i, s:s}", "line", d->line, "column",
                                                d->column, "message", d->message));
            }
        pdk_cli_print_json(json_pack("{s:s, s:b, s:o, s:o}", "file", file, "ok", r == 0, "problems",
                                     lists[0], "warnings", lists[1]));
    } else {
        for (size_t i = 0; i < diags.count; i++) {
            _cleanup_free_ char *line = pdk_policy_diag_format(&diags.items[i]);
            printf("%s\n", line);
        }
        for (size_t i = 0; i < warnings.count; i++) {
            /* "FILE:LINE: warning: message": the policy still loads */
            pdk_policy_diag w = warnings.items[i];
            _cleanup_free_ char *message = xasprintf("warning: %s", w.message);
            w.message = message;
            _cleanup_free_ char *line = pdk_policy_diag_format(&w);
            printf("%s\n", line);
        }
        if (r == 0)
            printf("%s: ok%s\n", file, warnings.count ? " (with warnings)" : "");
    }
    pdk_policy_diags_free(&diags);
    pdk_policy_diags_free(&warnings);
    return r == 0 ? PDK_EXIT_OK : PDK_EXIT_FAILED;
}

static int import(int argc, char **argv)
{
    static const struct option options[] = {{"from", required_argument, NULL, 'f'},
                                            {"output", required_argument, NULL, 'o'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    const char *from = NULL, *output = NULL;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "ho:", options, NULL)) != -1) {
        switch (c) {
        case 'f':
            from = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'h':
            fputs(usage, stdout);
            return PDK_EXIT_OK;
        default:
            return pdk_cli_bad_option(argv[0], optopt, argv, optind);
        }
    }
    if (!from)
        return pdk_cli_usage_error("policy import", "say what to import with --from srt");
    if (strcmp(from, "srt") != 0)
        return pdk_cli_usage_error("policy import", "--from takes srt, not '%s'", from);
    if (optind >= argc)
        return pdk_cli_usage_error("policy import", "no settings file given");
    if (optind + 1 < argc)
        return pdk_cli_usage_error("policy import", "one file at a time ('%s' is one too many)",
                                   argv[optind + 1]);
    const char *file = argv[optind];
    pdk_error err = {0};
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    if (pdk_read_file_at(AT_FDCWD, file, &text, &len, 4u << 20) < 0) {
        pdk_error_set(&err, errno, "cannot read %s", file);
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    }
    _cleanup_free_ char *yaml = NULL;
    _cleanup_strv_ char **notes = NULL;
    if (pdk_policy_import_srt(file, text, len, &yaml, &notes, &err) < 0)
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    /* What it made must be a policy paddock loads. */
    _cleanup_free_ char *home = pdk_home_dir();
    pdk_policy_context ctx = {.home = home};
    pdk_policy *check = NULL;
    pdk_policy_diags diags = {0};
    if (pdk_policy_parse("imported", yaml, strlen(yaml), &ctx, &check, &diags, &err) < 0) {
        pdk_policy_diags_free(&diags);
        pdk_error_prefix(&err, "the imported policy is not valid (a bug: please report it)");
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    }
    pdk_policy_free(check);
    for (size_t i = 0; notes && notes[i]; i++)
        fprintf(stderr, "paddock: not carried over: %s\n", notes[i]);
    if (!output) {
        fputs(yaml, stdout);
        return fflush(stdout) == 0 ? PDK_EXIT_OK : PDK_EXIT_FAILED;
    }
    if (pdk_write_file_atomic(AT_FDCWD, output, yaml, strlen(yaml), 0644, true) < 0) {
        pdk_error_set(&err, errno, "cannot write %s", output);
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    }
    fprintf(stderr, "paddock: wrote %s\n", output);
    return PDK_EXIT_OK;
}

int pdk_cmd_policy(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return PDK_EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0) {
        fputs(usage, stdout);
        return PDK_EXIT_OK;
    }
    if (strcmp(sub, "check") == 0)
        return check(argc - 1, argv + 1);
    if (strcmp(sub, "lint") == 0)
        return lint(argc - 1, argv + 1);
    if (strcmp(sub, "import") == 0)
        return import(argc - 1, argv + 1);
    if (strcmp(sub, "default") == 0) {
        if (argc > 2 && (strcmp(argv[2], "-h") == 0 || strcmp(argv[2], "--help") == 0)) {
            fputs(usage, stdout);
            return PDK_EXIT_OK;
        }
        if (argc > 2)
            return pdk_cli_usage_error("policy default", "unexpected argument '%s'", argv[2]);
        fputs(pdk_policy_default_text(), stdout);
        return PDK_EXIT_OK;
    }
    return pdk_cli_usage_error("policy", "unknown subcommand '%s' (check, lint, default or import)",
                               sub);
}
