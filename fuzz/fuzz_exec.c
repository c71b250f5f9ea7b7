/* fuzz_exec.c: libFuzzer target for what paddock reads of an exec from inside the sandbox:
 * the interpreter line of a script and the dynamic loader's options (exec_target.c), and the
 * forms the command rules see a command in (command_rules.c: global options of git, npm,
 * pip, uv, python -m, names of the executable, `under` ancestors).
 *
 * The input's first 256 bytes are an interpreter line; its lines are an argv, then, after
 * a line "--names", other names of its executable, and after "--under", an ancestor's
 * argv. Invariants: an interpreter is a non-empty word, its argument has no blank at either
 * end and no newline; the loader's program index lies inside argv and --argv0 is one of
 * argv's words; judging is deterministic and its decision one of the four; a command is
 * never judged less strictly with more names. Built with -fsanitize=fuzzer
 * (fuzz/meson.build, -Dfuzz=true) and, without libFuzzer, as fuzz-exec-replay (replay.c).
 */
#include "command_rules.h"
#include "exec_target.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static pdk_command_rules rules;

static void add(pdk_decision d, char **words, size_t n)
{
    char **tokens[8];
    for (size_t i = 0; i < n; i++) {
        tokens[i] = NULL;
        char *save = NULL;
        char *copy = xstrdup(words[i]);
        for (char *a = strtok_r(copy, "|", &save); a; a = strtok_r(NULL, "|", &save))
            pdk_strv_push(&tokens[i], a);
        free(copy);
    }
    pdk_command_rules_add(&rules, (char *const *const *)tokens, n, d, NULL);
    for (size_t i = 0; i < n; i++)
        pdk_strv_free(tokens[i]);
}

static void add_under(char **words, size_t n)
{
    char **tokens[8];
    for (size_t i = 0; i < n; i++) {
        tokens[i] = NULL;
        pdk_strv_push(&tokens[i], words[i]);
    }
    pdk_command_rules_add_under(&rules, rules.count - 1, (char *const *const *)tokens, n);
    for (size_t i = 0; i < n; i++)
        pdk_strv_free(tokens[i]);
}

static void setup(void)
{
    if (rules.count)
        return;
    add(PDK_DECISION_ASK, (char *[]){"git", "push"}, 2);
    add(PDK_DECISION_ASK, (char *[]){"npm|yarn|pnpm", "publish"}, 2);
    add(PDK_DECISION_DENY, (char *[]){"touch"}, 1);
    add(PDK_DECISION_DENY, (char *[]){"python*", "-m", "http.server"}, 3);
    add(PDK_DECISION_DENY, (char *[]){"/opt/*"}, 1);
    add(PDK_DECISION_CONFINE, (char *[]){"*"}, 1);
    add_under((char *[]){"npm", "install"}, 2);
    add_under((char *[]){"pip"}, 1);
}

static pdk_decision judged(char *const *argv, char *const *names, char *const *under)
{
    char *const *ancestors[] = {under, NULL};
    pdk_command_query q = {
        .argv = argv, .names = names, .ancestors = under ? (char *const *const *)ancestors : NULL};
    pdk_command_verdict a, b;
    pdk_command_rules_judge_query(&rules, &q, &a);
    pdk_command_rules_judge_query(&rules, &q, &b);
    if (a.decision != b.decision || a.rule != b.rule || a.decision > PDK_DECISION_DENY || !a.reason)
        abort();
    if (pdk_command_rules_starts_under(&rules, &q) != pdk_command_rules_starts_under(&rules, &q))
        abort();
    return a.decision;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    char *interp, *arg;
    size_t head = size < PDK_EXEC_HEADER_SIZE ? size : PDK_EXEC_HEADER_SIZE;
    if (pdk_exec_parse_shebang((const char *)data, head, &interp, &arg)) {
        if (!interp[0] || strpbrk(interp, " \t\n"))
            abort();
        if (arg && (!arg[0] || strchr(arg, '\n') || arg[0] == ' ' || arg[0] == '\t' ||
                    strchr(" \t\r", arg[strlen(arg) - 1])))
            abort();
        free(interp);
        free(arg);
    } else if (interp || arg) {
        abort();
    }

    char *text = xstrndup((const char *)data, size);
    char **argv = NULL, **names = NULL, **under = NULL, ***into = &argv;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strcmp(line, "--names") == 0)
            into = &names;
        else if (strcmp(line, "--under") == 0)
            into = &under;
        else
            pdk_strv_push(into, line);
    }
    if (argv) {
        const char *argv0 = NULL;
        size_t p = pdk_exec_loader_program(argv, &argv0);
        size_t n = pdk_strv_length(argv);
        if (p >= n && p != 0)
            abort();
        bool among = !argv0;
        for (size_t i = 0; argv0 && i < n; i++)
            among |= argv[i] == argv0;
        if (!among)
            abort();
        pdk_decision alone = judged(argv, NULL, under);
        pdk_decision more = judged(argv, names, under);
        if (more < alone)
            abort();
    }
    pdk_strv_free(argv);
    pdk_strv_free(names);
    pdk_strv_free(under);
    free(text);
    return 0;
}
