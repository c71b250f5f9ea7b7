/* fuzz_path.c: libFuzzer target for request paths as the network rules see them
 * (pdk_net_path_normalize, pdk_net_path_without_parameters, src/policy/net_rules.c).
 *
 * The input is a request-target (NULs end it). The invariants of net_rules.h are checked:
 *   - a normalised path starts with "/", has no space, control character, "?" or "#", only
 *     upper-case escapes of two hex digits and none of an unreserved character, and no "."
 *     or ".." segment (with or without parameters: "..;x" is one), also once %2F, %5C and
 *     backslashes are read as slashes;
 *   - it is a fixed point: normalising it again gives it back, with no query;
 *   - the query is what follows the first "?" of the target, up to a "#";
 *   - without its parameters it still starts with "/", has no ";" nor "%3B", no dot
 *     segment, and is a fixed point of both functions;
 *   - "/" + "**" matches every normalised path.
 * Built with -fsanitize=fuzzer (fuzz/meson.build, -Dfuzz=true) and, without libFuzzer, as
 * fuzz-path-replay (replay.c) for the committed corpus.
 */
#include "net_rules.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 4096

static bool is_upper_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

static int hex(char c)
{
    return c <= '9' ? c - '0' : c - 'A' + 10;
}

static bool unreserved(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

/* No "." or ".." segment, parameters or not, with separators read as net_rules.c does. */
static void check_no_dot_segments(const char *path)
{
    size_t n = strlen(path);
    char *s = malloc(n + 1);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (path[i] == '%' &&
            (strncmp(path + i, "%2F", 3) == 0 || strncmp(path + i, "%5C", 3) == 0)) {
            s[w++] = '/';
            i += 2;
        } else {
            s[w++] = path[i] == '\\' ? '/' : path[i];
        }
    }
    s[w] = '\0';
    for (char *segment = s; segment;) {
        char *slash = strchr(segment, '/');
        size_t length = slash ? (size_t)(slash - segment) : strlen(segment);
        size_t name = 0;
        while (name < length && segment[name] != ';' && strncmp(segment + name, "%3B", 3) != 0)
            name++;
        if ((name == 1 && segment[0] == '.') ||
            (name == 2 && segment[0] == '.' && segment[1] == '.'))
            abort();
        segment = slash ? slash + 1 : NULL;
    }
    free(s);
}

static void check_normalised(const char *path)
{
    if (path[0] != '/')
        abort();
    for (const char *p = path; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c <= 0x20 || c == 0x7f || c == '?' || c == '#')
            abort();
        if (c == '%') {
            if (!is_upper_hex(p[1]) || !is_upper_hex(p[2]))
                abort();
            int v = hex(p[1]) * 16 + hex(p[2]);
            if (v == 0 || unreserved(v))
                abort();
            p += 2;
        }
    }
    check_no_dot_segments(path);
    const char *why = NULL;
    char *query = NULL;
    char *again = pdk_net_path_normalize(path, &query, &why);
    if (!again || strcmp(again, path) != 0 || query)
        abort();
    free(again);
    if (!pdk_net_path_matches("/**", path))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT)
        size = MAX_INPUT;
    char target[MAX_INPUT + 1];
    memcpy(target, data, size);
    target[size] = '\0';

    const char *why = NULL;
    char *query = NULL;
    char *path = pdk_net_path_normalize(target, &query, &why);
    if (!path) {
        if (!why || query)
            abort();
        return 0;
    }
    if (why)
        abort();
    check_normalised(path);
    const char *q = target + strcspn(target, "?#");
    if (*q == '?') {
        if (!query || strncmp(query, q + 1, strlen(query)) != 0 ||
            (q[1 + strlen(query)] != '\0' && q[1 + strlen(query)] != '#'))
            abort();
    } else if (query) {
        abort();
    }
    free(query);

    char *bare = pdk_net_path_without_parameters(path);
    if (strchr(bare, ';') || strstr(bare, "%3B"))
        abort();
    check_normalised(bare);
    char *twice = pdk_net_path_without_parameters(bare);
    if (strcmp(twice, bare) != 0)
        abort();
    free(twice);
    free(bare);
    free(path);
    return 0;
}
