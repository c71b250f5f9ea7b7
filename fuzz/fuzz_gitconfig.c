/* fuzz_gitconfig.c: libFuzzer target for reading a git configuration value (gitconfig.c).
 *
 * The input is a configuration file, any bytes. Checked: the answer is deterministic; a
 * value found is a C string that no later "[core]" section setting it again changes
 * (the last assignment wins: appending one gives that one); and the input's bytes (up to
 * a NUL) written as a quoted, escaped value in a fresh [core] section read back as
 * exactly those bytes. Built with -fsanitize=fuzzer (fuzz/meson.build, -Dfuzz=true) and,
 * without libFuzzer, as fuzz-gitconfig-replay.
 */
#include "gitconfig.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    char *a = NULL, *b = NULL;
    int ra = pdk_git_config_get(text, size, "core", "hookspath", &a);
    int rb = pdk_git_config_get(text, size, "core", "hookspath", &b);
    if (ra != rb || (ra == 1) != (a != NULL) || (a && strcmp(a, b) != 0))
        abort();
    free(a);
    free(b);

    /* appended: the last assignment wins, whatever came before (unless the text before is
     * not one git reads, or leaves a quote or a header open) */
    if (ra >= 0) {
        pdk_buf t = {0};
        pdk_buf_append(&t, text, size);
        pdk_buf_puts(&t, "\n[core]\n\thooksPath = last\n");
        char *v = NULL;
        int r = pdk_git_config_get(t.data, t.len, "core", "hookspath", &v);
        if (r == 1 && strcmp(v, "last") != 0)
            abort();
        free(v);
        pdk_buf_free(&t);
    }

    /* the bytes as a value, quoted and escaped */
    size_t n = strnlen(text, size);
    pdk_buf cfg = {0};
    pdk_buf_puts(&cfg, "[core]\n\thooksPath = \"");
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (c == '"' || c == '\\')
            pdk_buf_printf(&cfg, "\\%c", c);
        else if (c == '\n')
            pdk_buf_puts(&cfg, "\\n");
        else if (c == '\t')
            pdk_buf_puts(&cfg, "\\t");
        else if (c == '\b')
            pdk_buf_puts(&cfg, "\\b");
        else /* a CR too: never before a raw newline here */
            pdk_buf_append(&cfg, &c, 1);
    }
    pdk_buf_puts(&cfg, "\"\n");
    char *v = NULL;
    if (pdk_git_config_get(cfg.data, cfg.len, "core", "hookspath", &v) != 1 || strlen(v) != n ||
        memcmp(v, text, n) != 0)
        abort();
    free(v);
    pdk_buf_free(&cfg);
    return 0;
}
