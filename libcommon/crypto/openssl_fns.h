/* libcrypto, loaded on the first digest, HKDF or AES-GCM (fmt/lazylib.h) rather than linked: it
 * is a large library that tools asked for their --version, --help or a check that needs no
 * digest never map. Its functions are called through these slots, OSSL(name). Internal to
 * libcommon/crypto. */
#ifndef FMT_OPENSSL_FNS_H
#define FMT_OPENSSL_FNS_H

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include "fmt/err.h"
#include "fmt/lazylib.h"

#define OPENSSL_FUNCTIONS(X) \
	X(EVP_MD_CTX_new) X(EVP_MD_CTX_free) X(EVP_DigestInit_ex) X(EVP_DigestUpdate) \
	X(EVP_DigestFinal_ex) X(EVP_sha256) X(EVP_KDF_fetch) X(EVP_KDF_CTX_new) X(EVP_KDF_derive) \
	X(EVP_KDF_CTX_free) X(EVP_KDF_free) X(OSSL_PARAM_construct_utf8_string) \
	X(OSSL_PARAM_construct_octet_string) X(OSSL_PARAM_construct_end) X(EVP_CIPHER_CTX_new) \
	X(EVP_CipherInit_ex) X(EVP_aes_256_gcm) X(EVP_CipherUpdate) X(EVP_CIPHER_CTX_ctrl) \
	X(EVP_CipherFinal_ex) X(EVP_CIPHER_CTX_free) X(OPENSSL_init_crypto) X(OSSL_LIB_CTX_get0_global_default)

typedef FMT_LAZY_TABLE(OPENSSL_FUNCTIONS) fmt_openssl_fns;
extern fmt_openssl_fns fmt_openssl;
#define OSSL(f) fmt_openssl.fn.f

/* libcrypto loaded, once: before the first OSSL call of a digest, a KDF or a cipher. */
fmt_kind fmt_openssl_load(fmt_err *e);

#endif
