/* fuzz_notice.c: libFuzzer target for what paddock shows of the sandbox's text in its
 * notices (display.c: pdk_display_escape; log.c: the notice file's lines). The
 * input is text the sandbox chose (an argv, a URL, a name): escaped, it must come out as
 * one line of valid UTF-8 holding no control character, separator, bidirectional override
 * or other character a terminal would act on, and parse back as a notice line with that
 * text. The input is also parsed as a notice line itself, as `paddock approvals --watch`
 * reads the notice file. */
#include "display.h"
#include "log.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pdk_buf b = {0};
    pdk_display_escape(&b, (const char *)data, size, 0);
    if (pdk_display_utf8_prefix(b.data, b.len) != b.len || memchr(b.data, '\n', b.len) ||
        !pdk_display_is_plain(b.data, b.len, PDK_DISPLAY_RAW_BACKSLASH))
        abort(); /* escaped text is clean UTF-8, one line */
    char *line = xasprintf("2026-12-01 09:30:00 session-1 exec-refused %s", b.data);
    pdk_notice_line parsed;
    if (pdk_notice_line_parse(line, &parsed) < 0 || strcmp(parsed.text, b.data) != 0 ||
        strcmp(parsed.kind, "exec-refused") != 0 || strcmp(parsed.session, "session-1") != 0)
        abort(); /* a line paddock writes reads back as written */
    free(line);
    pdk_buf_free(&b);

    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if (pdk_notice_line_parse(text, &parsed) == 0 &&
        (strlen(parsed.time) != 19 || !parsed.session[0] || !parsed.kind[0] || parsed.text < text ||
         parsed.text > text + size))
        abort();
    free(text);
    return 0;
}
