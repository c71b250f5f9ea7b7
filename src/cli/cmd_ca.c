/* cmd_ca.c: paddock ca [--pem] [--json] */
#include "cli.h"

#include "gateway.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: paddock ca [--pem] [--json]\n"
    "\n"
    "paddock's own certificate authority, which the egress gateway uses to intercept TLS:\n"
    "sandboxes whose policy has a network section trust it (it is in their CA bundle). It\n"
    "is made at first use in the state dir (STATE/ca/); its key never enters a sandbox.\n"
    "Without options, say where it is; to trust it elsewhere, take its certificate.\n"
    "\n"
    "  --pem       print the CA certificate (PEM) on stdout\n"
    "  --json      one JSON object: the certificate's path and PEM\n"
    "  -h, --help  show this help\n";

int pdk_cmd_ca(int argc, char **argv)
{
    static const struct option options[] = {{"pem", no_argument, NULL, 'p'},
                                            {"json", no_argument, NULL, 'j'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    bool pem = false, json = false;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
        switch (c) {
        case 'p':
            pem = true;
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
        return pdk_cli_usage_error("ca", "unexpected argument '%s'", argv[optind]);
    pdk_error err = {0};
    _cleanup_free_ char *state = NULL;
    if (pdk_cli_state_dir(true, &state, &err) < 0)
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    const pdk_gateway_module *m = pdk_gateway_module_load(&err);
    if (!m)
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    _cleanup_free_ char *text = m->ca_pem(state, &err);
    if (!text)
        return pdk_cli_fail(&err, PDK_EXIT_FAILED);
    _cleanup_free_ char *path = xasprintf("%s/ca/ca.pem", state);
    if (json) {
        pdk_cli_print_json(json_pack("{s:s, s:s}", "path", path, "pem", text));
    } else if (pem) {
        fputs(text, stdout);
    } else {
        printf("paddock's CA: %s (its key beside it, 0600; print it with paddock ca --pem)\n",
               path);
    }
    return PDK_EXIT_OK;
}
