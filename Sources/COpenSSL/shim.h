// The system OpenSSL (libssl-dev, OpenSSL 3.0) as one Swift module.
// Functions here wrap OpenSSL *macros*, which Swift cannot call, and one deprecated call that has no
// allocation-free replacement (SHA-256 below); keep this file to that.
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
#include <openssl/sha.h>

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

// MARK: SHA-256 with its context on the stack.

// EVP_Digest, and OpenSSL 3's SHA256(), allocate a context per call (three mallocs); the low-level
// functions, deprecated in 3.0 but still provided, keep it on the stack. Used for the access-token
// cache's key, on every authenticated call. Returns 1 on success.
static inline int yedi_SHA256(const void *data, size_t length, unsigned char *digest) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    SHA256_CTX context;
    int ok = SHA256_Init(&context) && SHA256_Update(&context, data, length) && SHA256_Final(digest, &context);
#pragma GCC diagnostic pop
    return ok;
}

#endif
