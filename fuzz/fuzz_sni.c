/* fuzz_sni.c: libFuzzer target for the ClientHello server name reader (tls_sni.c).
 *
 * The input is what a client sends first. Checked: a name found is printable ASCII,
 * lower case, at most 255 bytes; the answer for a prefix of an input whose answer is
 * FOUND is NEED_MORE, INVALID, or the same name (the bytes past a complete ClientHello do
 * not change it); the reader is deterministic. Built with -fsanitize=fuzzer (fuzz/
 * meson.build, -Dfuzz=true) and, without libFuzzer, as fuzz-sni-replay for the corpus.
 */
#include "tls_sni.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char name[PDK_TLS_SNI_MAX + 1], again[PDK_TLS_SNI_MAX + 1];
    pdk_tls_sni_result r = pdk_tls_client_hello_sni(data, size, name, sizeof(name));
    if (pdk_tls_client_hello_sni(data, size, again, sizeof(again)) != r)
        abort();
    if (r == PDK_TLS_SNI_FOUND) {
        size_t n = strlen(name);
        if (n == 0 || n > PDK_TLS_SNI_MAX || strcmp(name, again) != 0)
            abort();
        for (size_t i = 0; i < n; i++)
            if (name[i] <= 0x20 || name[i] >= 0x7f || (name[i] >= 'A' && name[i] <= 'Z'))
                abort();
        if (size > 0) {
            char shorter[PDK_TLS_SNI_MAX + 1];
            pdk_tls_sni_result s =
                pdk_tls_client_hello_sni(data, size - 1, shorter, sizeof(shorter));
            if (s == PDK_TLS_SNI_ABSENT || (s == PDK_TLS_SNI_FOUND && strcmp(shorter, name) != 0))
                abort();
        }
    }
    return 0;
}
