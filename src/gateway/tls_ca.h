/* tls_ca.h: paddock's own certificate authority, for TLS interception at the gateway.
 *
 * An ECDSA P-256 key and a self-signed CA certificate in STATE/ca/ (ca.key 0600, ca.pem),
 * made at first use; the state dir is hidden in every sandbox, so the key never enters
 * one. Sandboxes trust the certificate: STATE/ca/bundle.pem (the host's roots plus this
 * CA) is bound over the distribution's bundle inside, and the usual variables name it.
 * Leaf certificates for the hosts the sandbox talks to are minted on demand (one key per
 * gateway, a certificate per host, cached) and never written anywhere.
 *
 * Part of the gateway module (OpenSSL lives only there, gateway.h).
 */
#ifndef PADDOCK_TLS_CA_H
#define PADDOCK_TLS_CA_H

#include "error.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>

typedef struct pdk_tls_ca pdk_tls_ca;

/* The CA of state_dir, made when there is none (two paddocks making it at once agree on
 * one: the directory is made elsewhere and renamed into place). */
int pdk_tls_ca_open(const char *state_dir, pdk_tls_ca **out, pdk_error *err);
void pdk_tls_ca_free(pdk_tls_ca *ca);

/* Paths of the CA certificate and of the bundle for sandboxes (host roots + the CA). The
 * bundle is compared with what it must hold at every call and written only when it
 * differs (the host's bundle changed, a torn file), by one caller at a time and renamed
 * into place: runs that bind it at once each see a whole bundle. */
const char *pdk_tls_ca_cert_path(const pdk_tls_ca *ca);
int pdk_tls_ca_bundle(pdk_tls_ca *ca, const char **path, pdk_error *err);

/* The same without opening the CA's key (the CA made when there is none): *path (new
 * string) for the bundle of state_dir. */
int pdk_tls_ca_bundle_of(const char *state_dir, char **path, pdk_error *err);

/* The CA certificate in PEM (new string). */
char *pdk_tls_ca_pem(const pdk_tls_ca *ca);

/* A leaf certificate for host (a name or an IP literal) and its key, cached: owned by ca,
 * valid while it lives. NULL with err on failure. */
int pdk_tls_ca_leaf(pdk_tls_ca *ca, const char *host, X509 **cert, EVP_PKEY **key, pdk_error *err);

/* The host's CA bundle that bundle.pem is made from. */
#define PDK_TLS_HOST_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

#endif
