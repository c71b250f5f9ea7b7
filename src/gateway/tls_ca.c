/* tls_ca.c: see tls_ca.h. */
#include "tls_ca.h"
#include "output.h"

#include "fsutil.h"
#include "net_address.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CA_DIR         "ca"
#define CA_YEARS       10
#define LEAF_DAYS      7
#define LEAF_CACHE_MAX 1024

typedef struct leaf {
    char *host;
    X509 *cert;
} leaf;

struct pdk_tls_ca {
    char *dir;
    char *cert_path;
    char *bundle_path;
    X509 *cert;
    EVP_PKEY *key;
    EVP_PKEY *leaf_key; /* one key for every leaf of this gateway */
    leaf *leaves;
    size_t nleaves;
};

/* OpenSSL's first queued error as text, for messages. */
static const char *ssl_error(void)
{
    static char buf[256];
    unsigned long e = ERR_get_error();
    if (!e)
        return "unknown OpenSSL error";
    ERR_error_string_n(e, buf, sizeof(buf));
    ERR_clear_error();
    return buf;
}

static bool random_serial(X509 *x)
{
    unsigned char bytes[16];
    if (RAND_bytes(bytes, sizeof(bytes)) != 1)
        return false;
    bytes[0] &= 0x7f; /* positive */
    BIGNUM *bn = BN_bin2bn(bytes, sizeof(bytes), NULL);
    ASN1_INTEGER *serial = bn ? BN_to_ASN1_INTEGER(bn, NULL) : NULL;
    bool ok = serial && X509_set_serialNumber(x, serial) == 1;
    ASN1_INTEGER_free(serial);
    BN_free(bn);
    return ok;
}

static bool add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext)
        return false;
    bool ok = X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

static X509 *make_ca_cert(EVP_PKEY *key)
{
    X509 *x = X509_new();
    char host[256] = "";
    (void)gethostname(host, sizeof(host) - 1);
    _cleanup_free_ char *cn = xasprintf("paddock local CA (%.40s)", host[0] ? host : "unknown");
    X509_NAME *name = X509_get_subject_name(x);
    bool ok = x && X509_set_version(x, 2) == 1 && random_serial(x) &&
              X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
              X509_gmtime_adj(X509_getm_notAfter(x), (long)CA_YEARS * 365 * 86400) &&
              X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)"paddock",
                                         -1, -1, 0) == 1 &&
              X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1,
                                         -1, 0) == 1 &&
              X509_set_issuer_name(x, name) == 1 && X509_set_pubkey(x, key) == 1 &&
              add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
              add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") &&
              add_ext(x, x, NID_subject_key_identifier, "hash") &&
              X509_sign(x, key, EVP_sha256()) > 0;
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

static char *pem_of(int (*write)(BIO *, void *), void *obj)
{
    BIO *b = BIO_new(BIO_s_mem());
    if (!b || write(b, obj) != 1) {
        BIO_free(b);
        return NULL;
    }
    char *data;
    long n = BIO_get_mem_data(b, &data);
    char *s = xstrndup(data, (size_t)n);
    BIO_free(b);
    return s;
}

static int write_key(BIO *b, void *key)
{
    return PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL);
}

static int write_cert(BIO *b, void *cert)
{
    return PEM_write_bio_X509(b, cert);
}

/* Make the CA in a directory of its own, then rename it into place. */
static int create_ca(const char *state_dir, const char *dir, pdk_error *err)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *cert = key ? make_ca_cert(key) : NULL;
    char *key_pem = cert ? pem_of(write_key, key) : NULL;
    _cleanup_free_ char *cert_pem = cert ? pem_of(write_cert, cert) : NULL;
    X509_free(cert);
    EVP_PKEY_free(key);
    if (!key_pem || !cert_pem) {
        free(key_pem);
        return pdk_error_set(err, EIO, "cannot make paddock's CA: %s", ssl_error());
    }
    _cleanup_free_ char *tmp =
        xasprintf("%s/.ca-%d-%lx", state_dir, (int)getpid(), (unsigned long)random());
    if (mkdir(tmp, 0700) < 0)
        return pdk_error_set(err, errno, "cannot create %s", tmp);
    _cleanup_close_ int fd = open(tmp, O_PATH | O_DIRECTORY | O_CLOEXEC);
    int ret = 0;
    if (fd < 0 || pdk_write_file_atomic(fd, "ca.key", key_pem, strlen(key_pem), 0600, true) < 0 ||
        pdk_write_file_atomic(fd, "ca.pem", cert_pem, strlen(cert_pem), 0644, true) < 0) {
        ret = pdk_error_set(err, errno, "cannot write paddock's CA in %s", tmp);
    } else if (rename(tmp, dir) < 0 && errno != EEXIST && errno != ENOTEMPTY) {
        ret = pdk_error_set(err, errno, "cannot put paddock's CA in place (%s)", dir);
    }
    if (key_pem) { /* (this may run before a sandbox is cloned from this process) */
        sodium_memzero(key_pem, strlen(key_pem));
        free(key_pem);
    }
    /* Lost the race, or failed: what is left of ours goes. */
    if (access(tmp, F_OK) == 0) {
        _cleanup_free_ char *k = pdk_path_join(tmp, "ca.key");
        _cleanup_free_ char *c = pdk_path_join(tmp, "ca.pem");
        unlink(k);
        unlink(c);
        rmdir(tmp);
    }
    return ret;
}

int pdk_tls_ca_open(const char *state_dir, pdk_tls_ca **out, pdk_error *err)
{
    *out = NULL;
    _cleanup_free_ char *dir = pdk_path_join(state_dir, CA_DIR);
    if (access(dir, F_OK) < 0 && create_ca(state_dir, dir, err) < 0)
        return -1;
    pdk_tls_ca *ca = xcalloc(1, sizeof(*ca));
    ca->dir = steal_pointer(&dir);
    ca->cert_path = pdk_path_join(ca->dir, "ca.pem");
    ca->bundle_path = pdk_path_join(ca->dir, "bundle.pem");
    _cleanup_free_ char *key_path = pdk_path_join(ca->dir, "ca.key");
    FILE *kf = fopen(key_path, "re");
    FILE *cf = fopen(ca->cert_path, "re");
    if (kf)
        ca->key = PEM_read_PrivateKey(kf, NULL, NULL, NULL);
    if (cf)
        ca->cert = PEM_read_X509(cf, NULL, NULL, NULL);
    if (kf)
        fclose(kf);
    if (cf)
        fclose(cf);
    if (!ca->key || !ca->cert || X509_check_private_key(ca->cert, ca->key) != 1) {
        pdk_error_set(err, EINVAL,
                      "paddock's CA in %s cannot be read or its key does not match (remove the "
                      "directory to make a new one; sandboxes then trust the new one)",
                      ca->dir);
        pdk_tls_ca_free(ca);
        return -1;
    }
    ca->leaf_key = EVP_EC_gen("P-256");
    if (!ca->leaf_key) {
        pdk_error_set(err, EIO, "cannot make a key for leaf certificates: %s", ssl_error());
        pdk_tls_ca_free(ca);
        return -1;
    }
    *out = ca;
    return 0;
}

void pdk_tls_ca_free(pdk_tls_ca *ca)
{
    if (!ca)
        return;
    for (size_t i = 0; i < ca->nleaves; i++) {
        free(ca->leaves[i].host);
        X509_free(ca->leaves[i].cert);
    }
    free(ca->leaves);
    X509_free(ca->cert);
    EVP_PKEY_free(ca->key);
    EVP_PKEY_free(ca->leaf_key);
    free(ca->dir);
    free(ca->cert_path);
    free(ca->bundle_path);
    free(ca);
}

const char *pdk_tls_ca_cert_path(const pdk_tls_ca *ca)
{
    return ca->cert_path;
}

char *pdk_tls_ca_pem(const pdk_tls_ca *ca)
{
    return pem_of(write_cert, ca->cert);
}

int pdk_tls_ca_bundle(pdk_tls_ca *ca, const char **path, pdk_error *err)
{
    *path = ca->bundle_path;
    /* What it must hold, compared with what it holds (never judged by times: a host bundle
     * put back with an old time, a torn file, another CA would pass): many runs start at
     * once, each binds the file, one writes it when it must change. */
    _cleanup_free_ char *roots = NULL;
    size_t len = 0;
    if (pdk_read_file_at(AT_FDCWD, PDK_TLS_HOST_BUNDLE, &roots, &len, 0) < 0 && errno != ENOENT)
        return pdk_error_set(err, errno, "cannot read %s", PDK_TLS_HOST_BUNDLE);
    _cleanup_free_ char *pem = pdk_tls_ca_pem(ca);
    if (!pem)
        return pdk_error_set(err, EIO, "cannot write paddock's CA as PEM: %s", ssl_error());
    _cleanup_free_ char *all =
        xasprintf("%s%s# paddock's CA (TLS interception at the gateway)\n%s", roots ? roots : "",
                  roots && len && roots[len - 1] != '\n' ? "\n" : "", pem);
    _cleanup_close_ int dir = open(ca->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0 || pdk_write_file_once(dir, "bundle.pem", all, strlen(all), 0644) < 0)
        return pdk_error_set(err, errno, "cannot write %s", ca->bundle_path);
    return 0;
}

static X509 *mint(pdk_tls_ca *ca, const char *host)
{
    X509 *x = X509_new();
    if (!x)
        return NULL;
    pdk_ip ip;
    bool literal = pdk_ip_parse_host(host, &ip) == PDK_HOST_ADDRESS;
    char text[PDK_IP_TEXT_MAX] = "";
    if (literal)
        pdk_ip_format(&ip, text, sizeof(text));
    _cleanup_free_ char *san = literal ? xasprintf("IP:%s", text) : xasprintf("DNS:%s", host);
    X509_NAME *name = X509_get_subject_name(x);
    bool ok = X509_set_version(x, 2) == 1 && random_serial(x) &&
              X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
              X509_gmtime_adj(X509_getm_notAfter(x), (long)LEAF_DAYS * 86400) &&
              (strlen(host) > 64 ||
               X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)host,
                                          -1, -1, 0) == 1) &&
              X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) == 1 &&
              X509_set_pubkey(x, ca->leaf_key) == 1 &&
              add_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") &&
              add_ext(x, ca->cert, NID_key_usage, "critical,digitalSignature") &&
              add_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") &&
              add_ext(x, ca->cert, NID_subject_alt_name, san) &&
              add_ext(x, ca->cert, NID_authority_key_identifier, "keyid") &&
              X509_sign(x, ca->key, EVP_sha256()) > 0;
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

int pdk_tls_ca_leaf(pdk_tls_ca *ca, const char *host, X509 **cert, EVP_PKEY **key, pdk_error *err)
{
    for (size_t i = 0; i < ca->nleaves; i++) {
        if (strcmp(ca->leaves[i].host, host) == 0) {
            *cert = ca->leaves[i].cert;
            *key = ca->leaf_key;
            return 0;
        }
    }
    X509 *x = mint(ca, host);
    if (!x)
        return pdk_error_set(err, EIO, "cannot mint a certificate for %s: %s", host, ssl_error());
    if (ca->nleaves == LEAF_CACHE_MAX) { /* the oldest goes */
        free(ca->leaves[0].host);
        X509_free(ca->leaves[0].cert);
        memmove(ca->leaves, ca->leaves + 1, (ca->nleaves - 1) * sizeof(*ca->leaves));
        ca->nleaves--;
    }
    ca->leaves = xrealloc(ca->leaves, (ca->nleaves + 1) * sizeof(*ca->leaves));
    ca->leaves[ca->nleaves++] = (leaf){xstrdup(host), x};
    *cert = x;
    *key = ca->leaf_key;
    return 0;
}

int pdk_tls_ca_bundle_of(const char *state_dir, char **path, pdk_error *err)
{
    *path = NULL;
    _cleanup_free_ char *dir = pdk_path_join(state_dir, CA_DIR);
    if (access(dir, F_OK) < 0) {
        /* Made in a child of its own: this runs before a sandbox is cloned from this
         * process, and a clone would copy whatever the key left in its memory. */
        pid_t pid = fork();
        if (pid == 0) {
            pdk_error e = {0};
            int r = create_ca(state_dir, dir, &e);
            if (r < 0)
                pdk_outputf(STDERR_FILENO, 0, "paddock: %s", e.message);
            _exit(r < 0 ? 1 : 0);
        }
        int status = 0;
        while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return pdk_error_set(err, pid < 0 ? errno : 0, "cannot make paddock's CA in %s", dir);
    }
    /* The certificate only: the key is not read here (this runs before a sandbox is
     * cloned from this process, which would copy it). */
    pdk_tls_ca ca = {.dir = dir};
    ca.cert_path = pdk_path_join(dir, "ca.pem");
    ca.bundle_path = pdk_path_join(dir, "bundle.pem");
    FILE *cf = fopen(ca.cert_path, "re");
    if (cf) {
        ca.cert = PEM_read_X509(cf, NULL, NULL, NULL);
        fclose(cf);
    }
    const char *bundle = NULL;
    int r = ca.cert ? pdk_tls_ca_bundle(&ca, &bundle, err)
                    : pdk_error_set(err, 0, "%s cannot be read (remove %s to make a new CA)",
                                    ca.cert_path, dir);
    if (r == 0)
        *path = xstrdup(bundle);
    X509_free(ca.cert);
    free(ca.cert_path);
    free(ca.bundle_path);
    return r;
}
