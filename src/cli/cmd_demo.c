/* cmd_demo.c: paddock demo [feishu|workspace] */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef PADDOCK_DEMO_DIR
#define PADDOCK_DEMO_DIR "/usr/local/share/paddock/demo"
#endif

static const char usage[] =
    "usage: paddock demo [STORY]\n"
    "\n"
    "Tell one of paddock's stories on built-in defaults, narrating each step, in a\n"
    "temporary directory (state dir, home, workspace) removed at the end. Nothing leaves the\n"
    "machine: every server is started on 127.0.0.1 by the demo itself.\n"
    "\n"
    "stories:\n"
    "  feishu     (the default) credentials the agent never sees: an agent reads a\n"
    "             Feishu/Lark Base table through the egress gateway with only placeholders\n"
    "             inside; the gateway injects the real tenant token, a create waits for a\n"
    "             human, a delete and a leak of the token are refused; the audit trail and\n"
    "             paddock audit verify end it (needs python3, openssl, curl)\n"
    "  workspace  a command changes a workspace in the sandbox; the real directory is\n"
    "             untouched until paddock diff and paddock commit\n"
    "\n"
    "  -h, --help  show this help\n"
    "\n"
    "The stories are shell scripts beside the executable (build/demo/) or in " PADDOCK_DEMO_DIR
    ";\n"
    "PADDOCK_DEMO_DIR names another directory. Exit status: the story's (0 when it ran to\n"
    "its end), 1 when it cannot be started, 2 for a usage error.\n";

static bool has_story(const char *dir, const char *story)
{
    _cleanup_free_ char *path = xasprintf("%s/%s.sh", dir, story);
    return access(path, R_OK) == 0;
}

/* Where the stories are: $PADDOCK_DEMO_DIR, beside the executable, or the installed dir. */
static char *demo_dir(const char *story)
{
    const char *env = getenv("PADDOCK_DEMO_DIR");
    if (env && *env)
        return xstrdup(env);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            _cleanup_free_ char *beside = xasprintf("%s/demo", exe);
            if (has_story(beside, story))
                return xstrdup(beside);
        }
    }
    return xstrdup(PADDOCK_DEMO_DIR);
}

int pdk_cmd_demo(int argc, char **argv)
{
    static const struct option options[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
        switch (c) {
        case 'h':
            fputs(usage, stdout);
            return PDK_EXIT_OK;
        default:
            return pdk_cli_bad_option(argv[0], optopt, argv, optind);
        }
    }
    const char *story = optind < argc ? argv[optind++] : "feishu";
    if (optind < argc)
        return pdk_cli_usage_error("demo", "unexpected argument '%s'", argv[optind]);
    if (strcmp(story, "feishu") != 0 && strcmp(story, "workspace") != 0)
        return pdk_cli_usage_error("demo", "no story called '%s' (feishu or workspace)", story);
    _cleanup_free_ char *dir = demo_dir(story);
    if (!has_story(dir, story)) {
        fprintf(stderr,
                "paddock demo: the story %s is not in %s (install paddock, or set "
                "PADDOCK_DEMO_DIR to the directory with %s.sh)\n",
                story, dir, story);
        return PDK_EXIT_FAILED;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        fprintf(stderr, "paddock demo: cannot read /proc/self/exe: %s\n", strerror(errno));
        return PDK_EXIT_FAILED;
    }
    self[n] = '\0';
    _cleanup_free_ char *script = xasprintf("%s/%s.sh", dir, story);
    fflush(stdout);
    execl("/bin/bash", "bash", script, self, (char *)NULL);
    fprintf(stderr, "paddock demo: cannot run /bin/bash %s: %s\n", script, strerror(errno));
    return PDK_EXIT_FAILED;
}
