/* cmd_doctor.c: paddock doctor [--policy FILE] [--json] */
#include "cli.h"

#include "doctor.h"

#include <getopt.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>

static const char usage[] =
    "usage: paddock doctor [--policy FILE] [--json]\n"
    "\n"
    "Probe user namespaces, Landlock, seccomp, overlayfs in a user\n"
    "namespace, idmapped mounts (as root), cgroups and TIOCSTI; say what\n"
    "works and what paddock does about what does not. List the PATH entries a\n"
    "sandbox will not see (under ~, /tmp, /run, hidden, or, as root, closed to\n"
    "others), so that their commands would be missing inside, with what to do.\n"
    "Exits 1 when a hard requirement is missing.\n"
    "\n"
    "  --policy FILE  the policy the PATH is judged for (its read_allow, write,\n"
    "                 read_deny and env.set PATH); default: built-in\n"
    "  --json         one JSON object on stdout\n"
    "  -h, --help     show this help\n";

int pdk_cmd_doctor(int argc, char **argv)
{
    static const struct option options[] = {{"policy", required_argument, NULL, 'p'},
                                            {"json", no_argument, NULL, 'j'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    bool json = false;
    pdk_doctor_options opt = {0};
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'p':
            opt.policy_path = optarg;
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
    if (optind < argc)
        return pdk_cli_usage_error("doctor", "unexpected argument '%s'", argv[optind]);

    pdk_doctor_report report;
    pdk_error err = {0};
    if (pdk_doctor_run(&report, &opt, &err) < 0)
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    if (json) {
        json_t *root = json_object();
        json_t *checks = json_object();
        for (size_t i = 0; i < report.count; i++) {
            const pdk_check *k = &report.checks[i];
            json_t *o = json_pack("{s:s, s:s, s:s}", "status", pdk_check_status_name(k->status),
                                  "detail", k->detail, "action", k->action);
            if (strcmp(k->name, "landlock") == 0)
                json_object_set_new(o, "abi", json_integer(k->value));
            else if (strcmp(k->name, "cgroup") == 0)
                json_object_set_new(o, "mode",
                                    json_string(k->value == 2   ? "v2"
                                                : k->value == 1 ? "v1"
                                                                : "none"));
            else if (strcmp(k->name, "tiocsti") == 0)
                json_object_set_new(o, "legacy_enabled", json_boolean(k->value == 1));
            else if (strcmp(k->name, "path") == 0) {
                json_t *entries = json_array();
                for (size_t e = 0; e < report.path_count; e++) {
                    const pdk_path_entry *p = &report.path[e];
                    json_t *entry = json_pack("{s:s, s:b, s:b}", "dir", p->dir, "exists", p->exists,
                                              "resolves", p->seen);
                    if (!p->seen) {
                        json_object_set_new(entry, "why", json_string(p->why));
                        json_object_set_new(entry, "fix", json_string(p->advice));
                    }
                    json_array_append_new(entries, entry);
                }
                json_object_set_new(o, "entries", entries);
            }
            json_object_set_new(checks, k->name, o);
        }
        json_object_set_new(root, "checks", checks);
        json_object_set_new(root, "ok", json_boolean(report.ok));
        pdk_cli_print_json(root);
    } else {
        for (size_t i = 0; i < report.count; i++) {
            const pdk_check *k = &report.checks[i];
            printf("%-4s  %-8s %s\n", pdk_check_status_name(k->status), k->name, k->detail);
            if (k->action[0])
                printf("      %-8s -> %s\n", "", k->action);
            if (strcmp(k->name, "path") != 0)
                continue;
            for (size_t e = 0; e < report.path_count; e++) {
                const pdk_path_entry *p = &report.path[e];
                if (!p->seen)
                    printf("      %-8s    %s: %s; %s\n", "", p->dir[0] ? p->dir : "(empty)", p->why,
                           p->advice);
            }
        }
        printf(report.ok ? "paddock can run here.\n"
                         : "paddock cannot run here: fix the 'fail' lines above.\n");
    }
    int status = report.ok ? PDK_EXIT_OK : PDK_EXIT_FAILED;
    pdk_doctor_report_free(&report);
    return status;
}
