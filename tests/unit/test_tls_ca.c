/* test_tls_ca.c: paddock's CA for TLS interception (tls_ca.c). Made at first use (the key
 * 0600, the certificate a CA's), the same at the next open; a key that does not match its
 * certificate is refused with the fix; leaves are signed by the CA for exactly the host
 * asked (a DNS name, or an IP address as one, normalised), not CAs themselves, valid now,
 * cached per host; a host too long for a CN still gets its name; the bundle holds the
 * host's roots and the CA, is written once, and mended when torn; the bundle is made
 * without reading the key too. */
#include "fsutil.h"
#include "tls_ca.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct fixture {
    char state[64];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    snprintf(f->state, sizeof(f->state), "/tmp/paddock-tls-ca-test.XXXXXX");
    if (!mkdtemp(f->state))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    pdk_rm_rf_at(AT_FDCWD, f->state);
    free(f);
    return 0;
}

static void t_made_once(void **state)
{
    fixture *f = *state;
    pdk_tls_ca *ca = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_tls_ca_open(f->state, &ca, &err), 0);
    _cleanup_free_ char *key = xasprintf("%s/ca/ca.key", f->state);
    struct stat st;
    assert_int_equal(stat(key, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    _cleanup_free_ char *first = pdk_tls_ca_pem(ca);
    assert_non_null(strstr(first, "-----BEGIN CERTIFICATE-----"));
    /* a CA certificate */
    FILE *cf = fopen(pdk_tls_ca_cert_path(ca), "re");
    X509 *cert = PEM_read_X509(cf, NULL, NULL, NULL);
    fclose(cf);
    assert_non_null(cert);
    assert_int_equal(X509_check_ca(cert), 1);
    X509_free(cert);
    pdk_tls_ca_free(ca);
    /* the next open: the same CA */
    assert_int_equal(pdk_tls_ca_open(f->state, &ca, &err), 0);
    _cleanup_free_ char *second = pdk_tls_ca_pem(ca);
    assert_string_equal(first, second);
    pdk_tls_ca_free(ca);
    /* a key that is not the certificate's: refused, with the fix */
    _cleanup_free_ char *other = xasprintf("%s/other", f->state);
    assert_int_equal(mkdir(other, 0700), 0);
    assert_int_equal(pdk_tls_ca_open(other, &ca, &err), 0);
    pdk_tls_ca_free(ca);
    _cleanup_free_ char *other_key = xasprintf("%s/ca/ca.key", other);
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    assert_int_equal(pdk_read_file_at(AT_FDCWD, other_key, &text, &len, 0), 0);
    assert_int_equal(pdk_write_file_atomic(AT_FDCWD, key, text, len, 0600, false), 0);
    assert_int_equal(pdk_tls_ca_open(f->state, &ca, &err), -1);
    assert_null(ca);
    assert_non_null(strstr(err.message, "its key does not match (remove the directory"));
}

static bool names_host(X509 *x, const char *dns, const char *ip)
{
    GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    bool found = false;
    int n = sk_GENERAL_NAME_num(names);
    for (int i = 0; i < n; i++) {
        GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
        if (dns && g->type == GEN_DNS) {
            const char *s = (const char *)ASN1_STRING_get0_data(g->d.dNSName);
            found = found || strcmp(s, dns) == 0;
        }
        if (ip && g->type == GEN_IPADD) {
            unsigned char want[16];
            ASN1_OCTET_STRING *a = a2i_IPADDRESS(ip);
            if (a) {
                memcpy(want, ASN1_STRING_get0_data(a), (size_t)ASN1_STRING_length(a));
                found = found || (ASN1_STRING_length(a) == ASN1_STRING_length(g->d.iPAddress) &&
                                  memcmp(want, ASN1_STRING_get0_data(g->d.iPAddress),
                                         (size_t)ASN1_STRING_length(a)) == 0);
                ASN1_OCTET_STRING_free(a);
            }
        }
    }
    int count = n;
    GENERAL_NAMES_free(names);
    return found && count == 1;
}

static void t_leaves(void **state)
{
    fixture *f = *state;
    pdk_tls_ca *ca = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_tls_ca_open(f->state, &ca, &err), 0);
    FILE *cf = fopen(pdk_tls_ca_cert_path(ca), "re");
    X509 *root = PEM_read_X509(cf, NULL, NULL, NULL);
    fclose(cf);
    EVP_PKEY *root_key = X509_get0_pubkey(root);

    X509 *a = NULL, *again = NULL, *b = NULL;
    EVP_PKEY *ka = NULL, *kb = NULL;
    assert_int_equal(pdk_tls_ca_leaf(ca, "api.example.com", &a, &ka, &err), 0);
    assert_int_equal(X509_verify(a, root_key), 1);
    assert_int_equal(X509_check_private_key(a, ka), 1);
    assert_int_equal(X509_check_ca(a), 0);
    assert_true(names_host(a, "api.example.com", NULL));
    assert_int_equal(X509_check_host(a, "api.example.com", 0, 0, NULL), 1);
    assert_int_equal(X509_check_host(a, "other.example.com", 0, 0, NULL), 0);
    /* valid now */
    assert_true(X509_cmp_current_time(X509_get0_notBefore(a)) < 0);
    assert_true(X509_cmp_current_time(X509_get0_notAfter(a)) > 0);
    /* cached: the same certificate for the same host */
    assert_int_equal(pdk_tls_ca_leaf(ca, "api.example.com", &again, &kb, &err), 0);
    assert_ptr_equal(a, again);
    /* an IP literal is an IP name, normalised */
    assert_int_equal(pdk_tls_ca_leaf(ca, "127.0.0.1", &b, &kb, &err), 0);
    assert_true(names_host(b, NULL, "127.0.0.1"));
    assert_int_equal(X509_check_ip_asc(b, "127.0.0.1", 0), 1);
    assert_int_equal(pdk_tls_ca_leaf(ca, "0:0:0:0:0:0:0:1", &b, &kb, &err), 0);
    assert_int_equal(X509_check_ip_asc(b, "::1", 0), 1);
    /* a name longer than a CN may be: still the certificate's name */
    char longname[200];
    memset(longname, 'a', 70);
    strcpy(longname + 70, ".example.com");
    assert_int_equal(pdk_tls_ca_leaf(ca, longname, &b, &kb, &err), 0);
    assert_int_equal(X509_check_host(b, longname, 0, 0, NULL), 1);
    X509_free(root);
    pdk_tls_ca_free(ca);
}

static void t_bundle(void **state)
{
    fixture *f = *state;
    pdk_tls_ca *ca = NULL;
    pdk_error err = {0};
    assert_int_equal(pdk_tls_ca_open(f->state, &ca, &err), 0);
    const char *path = NULL;
    assert_int_equal(pdk_tls_ca_bundle(ca, &path, &err), 0);
    _cleanup_free_ char *bundle = NULL;
    assert_int_equal(pdk_read_file_at(AT_FDCWD, path, &bundle, NULL, 0), 0);
    _cleanup_free_ char *pem = pdk_tls_ca_pem(ca);
    assert_true(pdk_str_has_suffix(bundle, pem));
    _cleanup_free_ char *roots = NULL;
    if (pdk_read_file_at(AT_FDCWD, PDK_TLS_HOST_BUNDLE, &roots, NULL, 0) == 0)
        assert_true(pdk_str_has_prefix(bundle, roots));
    /* written once: the same file when nothing changed */
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    assert_int_equal(pdk_tls_ca_bundle(ca, &path, &err), 0);
    assert_int_equal(stat(path, &after), 0);
    assert_true(before.st_ino == after.st_ino);
    /* torn: mended */
    assert_int_equal(truncate(path, 100), 0);
    assert_int_equal(pdk_tls_ca_bundle(ca, &path, &err), 0);
    _cleanup_free_ char *mended = NULL;
    assert_int_equal(pdk_read_file_at(AT_FDCWD, path, &mended, NULL, 0), 0);
    assert_string_equal(mended, bundle);
    _cleanup_free_ char *kept_path = xstrdup(path); /* path is ca's */
    pdk_tls_ca_free(ca);
    /* without the key: the same bundle, at the same path */
    char *of = NULL;
    assert_int_equal(pdk_tls_ca_bundle_of(f->state, &of, &err), 0);
    assert_string_equal(of, kept_path);
    free(of);
    /* a state dir without a CA: made, in a child */
    _cleanup_free_ char *fresh = xasprintf("%s/fresh", f->state);
    assert_int_equal(mkdir(fresh, 0700), 0);
    assert_int_equal(pdk_tls_ca_bundle_of(fresh, &of, &err), 0);
    assert_int_equal(access(of, R_OK), 0);
    free(of);
    _cleanup_free_ char *fresh_key = xasprintf("%s/ca/ca.key", fresh);
    assert_int_equal(access(fresh_key, R_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(t_made_once, setup, teardown),
        cmocka_unit_test_setup_teardown(t_leaves, setup, teardown),
        cmocka_unit_test_setup_teardown(t_bundle, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
