/* cmd_doctor.c: paddock doctor [--json] */
#include "cli.h"

#include "../libpaddock/doctor.h"

#include <stdio.h>
#include <unistd.h>
#include <string.h>

static const char usage[] = "usage: paddock doctor [--json]\n"
                            "\n"
                            "Probe user namespaces, Landlock, seccomp, overlayfs in a user\n"
                            "namespace, idmapped mounts (as root), cgroups and TIOCSTI; say what\n"
                            "works and what paddock does about what does not. Exits 1 when a hard\n"
                            "requirement is missing.\n"
                            "\n"
                            "  --json      one JSON object on stdout\n"
                            "  -h, --help  show this help\n";

int pdk_cmd_doctor(int argc, char **argv)
{
    bool json = false;
    int early = pdk_cli_parse_json_help(argc, argv, usage, &json);
    if (early >= 0)
        return early;
    if (optind < argc)
        return pdk_cli_usage_error("doctor", "unexpected argument '%s'", argv[optind]);

    pdk_doctor_report report;
    pdk_doctor_run(&report);
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
        }
        printf(report.ok ? "paddock can run here.\n"
                         : "paddock cannot run here: fix the 'fail' lines above.\n");
    }
    return report.ok ? PDK_EXIT_OK : PDK_EXIT_FAILED;
}
