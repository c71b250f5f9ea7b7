/* test_tls_sni.c: the ClientHello server name reader (tls_sni.c), on ClientHellos that
 * OpenSSL itself writes (a client SSL on memory BIOs), cut at every length, split into
 * records, and broken on purpose. */
#include "tls_sni.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/ssl.h>

/* The first flight of a TLS client for sni (NULL: none); *len bytes, malloc'd. */
static uint8_t *client_hello(const char *sni, size_t *len)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *ssl = SSL_new(ctx);
    BIO *rbio = BIO_new(BIO_s_mem()), *wbio = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl, rbio, wbio);
    if (sni)
        SSL_set_tlsext_host_name(ssl, sni);
    SSL_set_connect_state(ssl);
    assert_int_equal(SSL_do_handshake(ssl), -1); /* wants to read the server's answer */
    char *data;
    long n = BIO_get_mem_data(wbio, &data);
    assert_true(n > 0);
    uint8_t *out = malloc((size_t)n);
    memcpy(out, data, (size_t)n);
    *len = (size_t)n;
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    return out;
}

static void test_found(void **state)
{
    size_t len;
    uint8_t *h = client_hello("Open.Feishu.CN", &len);
    char name[PDK_TLS_SNI_MAX + 1];
    assert_int_equal(pdk_tls_client_hello_sni(h, len, name, sizeof(name)), PDK_TLS_SNI_FOUND);
    assert_string_equal(name, "open.feishu.cn");
    /* every prefix: not complete yet */
    for (size_t k = 0; k < len; k++)
        if (pdk_tls_client_hello_sni(h, k, name, sizeof(name)) != PDK_TLS_SNI_NEED_MORE)
            fail_msg("a prefix of %zu bytes (of %zu) is not NEED_MORE", k, len);
    free(h);
}

static void test_absent(void **state)
{
    size_t len;
    uint8_t *h = client_hello(NULL, &len);
    char name[PDK_TLS_SNI_MAX + 1];
    assert_int_equal(pdk_tls_client_hello_sni(h, len, name, sizeof(name)), PDK_TLS_SNI_ABSENT);
    free(h);
}

/* The same handshake message in two records, split at byte cut of the message. */
static void test_fragmented(void **state)
{
    size_t len;
    uint8_t *h = client_hello("a.example", &len);
    uint8_t one[8192], two[8192 + 5];
    assert_true(len > 200 && len <= sizeof(one));
    memcpy(one, h, len);
    free(h);
    size_t msg = len - 5, cut = 100;
    /* record 1: the first cut bytes of the message; record 2: the rest */
    memcpy(two, one, 3);
    two[3] = (uint8_t)(cut >> 8);
    two[4] = (uint8_t)cut;
    memcpy(two + 5, one + 5, cut);
    memcpy(two + 5 + cut, one, 3);
    two[8 + cut] = (uint8_t)((msg - cut) >> 8);
    two[9 + cut] = (uint8_t)(msg - cut);
    memcpy(two + 10 + cut, one + 5 + cut, msg - cut);
    char name[PDK_TLS_SNI_MAX + 1];
    assert_int_equal(pdk_tls_client_hello_sni(two, len + 5, name, sizeof(name)), PDK_TLS_SNI_FOUND);
    assert_string_equal(name, "a.example");
    assert_int_equal(pdk_tls_client_hello_sni(two, 5 + cut, name, sizeof(name)),
                     PDK_TLS_SNI_NEED_MORE);
}

static void test_invalid(void **state)
{
    char name[PDK_TLS_SNI_MAX + 1];
    const uint8_t http[] = "GET / HTTP/1.1\r\n\r\n";
    assert_int_equal(pdk_tls_client_hello_sni(http, sizeof(http) - 1, name, sizeof(name)),
                     PDK_TLS_SNI_INVALID);
    const uint8_t alert[] = {21, 3, 3, 0, 2, 2, 40};
    assert_int_equal(pdk_tls_client_hello_sni(alert, sizeof(alert), name, sizeof(name)),
                     PDK_TLS_SNI_INVALID);
    const uint8_t server_hello[] = {22, 3, 3, 0, 4, 2, 0, 0, 0};
    assert_int_equal(
        pdk_tls_client_hello_sni(server_hello, sizeof(server_hello), name, sizeof(name)),
        PDK_TLS_SNI_INVALID);
    const uint8_t empty_record[] = {22, 3, 1, 0, 0};
    assert_int_equal(
        pdk_tls_client_hello_sni(empty_record, sizeof(empty_record), name, sizeof(name)),
        PDK_TLS_SNI_INVALID);
    /* a name with a byte no host name has */
    size_t len;
    uint8_t *h = client_hello("bad.example", &len);
    uint8_t *p = memmem(h, len, "bad.example", 11);
    assert_non_null(p);
    p[3] = ' ';
    assert_int_equal(pdk_tls_client_hello_sni(h, len, name, sizeof(name)), PDK_TLS_SNI_INVALID);
    /* a length that runs past its container */
    p[-1] = 0xff;
    assert_int_equal(pdk_tls_client_hello_sni(h, len, name, sizeof(name)), PDK_TLS_SNI_INVALID);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_found),
        cmocka_unit_test(test_absent),
        cmocka_unit_test(test_fragmented),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
