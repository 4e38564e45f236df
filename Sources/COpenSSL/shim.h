// The system OpenSSL (libssl-dev, OpenSSL 3.0) as one Swift module.
// Functions here wrap OpenSSL *macros*, which Swift cannot call; keep this file to that.
#ifndef YEDI_COPENSSL_SHIM_H
#define YEDI_COPENSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>
#include <openssl/pem.h>

#endif
