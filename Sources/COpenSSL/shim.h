// The system OpenSSL (libssl-dev, OpenSSL 3.0) as one Swift module.
// Functions here wrap OpenSSL *macros*, which Swift cannot call; keep this file to that.
#ifndef YEDI_COPENSSL_SHIM_H
#define YEDI_COPENSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>

// MARK: SSL_CTX settings that are macros over SSL_CTX_ctrl.

static inline int yedi_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

static inline int yedi_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}

static inline long yedi_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

static inline void yedi_SSL_CTX_set_read_ahead(SSL_CTX *ctx, int yes) {
    SSL_CTX_set_read_ahead(ctx, yes);
}

static inline int yedi_SSL_CTX_set1_groups_list(SSL_CTX *ctx, const char *list) {
    return (int)SSL_CTX_set1_groups_list(ctx, list);
}

static inline long yedi_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}

// SSL_OP_* are built with the function-like macro SSL_OP_BIT, which Swift does not import.
static inline uint64_t yedi_SSL_OP_NO_COMPRESSION(void) { return SSL_OP_NO_COMPRESSION; }
static inline uint64_t yedi_SSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }
static inline uint64_t yedi_SSL_OP_NO_TICKET(void) { return SSL_OP_NO_TICKET; }
static inline uint64_t yedi_SSL_OP_CIPHER_SERVER_PREFERENCE(void) { return SSL_OP_CIPHER_SERVER_PREFERENCE; }

// MARK: Per-connection settings.

static inline int yedi_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

// MARK: BIO retry flags (macros over BIO_set_flags / BIO_clear_flags).

static inline void yedi_BIO_set_retry_read(BIO *bio) {
    BIO_set_retry_read(bio);
}

static inline void yedi_BIO_clear_retry_flags(BIO *bio) {
    BIO_clear_retry_flags(bio);
}

// MARK: Certificate inspection.

static inline int yedi_sk_GENERAL_NAME_num(const GENERAL_NAMES *names) {
    return sk_GENERAL_NAME_num(names);
}

static inline const GENERAL_NAME *yedi_sk_GENERAL_NAME_value(const GENERAL_NAMES *names, int index) {
    return sk_GENERAL_NAME_value(names, index);
}

static inline void yedi_OPENSSL_free(void *pointer) {
    OPENSSL_free(pointer);
}

#endif
