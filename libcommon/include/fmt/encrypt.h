/* Encryption primitives of the dataset formats (specs/ald.md §5): Argon2id password keys
 * (libsodium), HKDF-SHA256 and AES-256-GCM (OpenSSL, fast on every CPU), X25519 agreement
 * (libsodium); the passwords and identities the key options name. Key material lives in
 * sodium_malloc memory or is wiped after use. Nothing here prints or exits. */
#ifndef FMT_ENCRYPT_H
#define FMT_ENCRYPT_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/crypto.h"
#include "fmt/err.h"
#include "fmt/minisign.h"

#define FMT_AEAD_KEY 32
#define FMT_AEAD_NONCE 12
#define FMT_AEAD_TAG 16
#define FMT_ARGON2_SALT 16
#define FMT_X25519_LEN 32

/* n random bytes (libsodium); wipe n bytes so that the compiler keeps the stores. */
fmt_kind fmt_random(void *p, size_t n, fmt_err *e);
void fmt_wipe(void *p, size_t n);

/* A password: its bytes as given (one trailing newline of a file removed), sodium_malloc'd. */
typedef struct fmt_password {
	uint8_t *bytes;
	size_t len;
} fmt_password;

void fmt_password_free(fmt_password *p);
fmt_kind fmt_password_from_file(const char *path, fmt_password *out, fmt_err *e);
fmt_kind fmt_password_from_env(const char *name, fmt_password *out, fmt_err *e);

/* Argon2id v0x13, m = 19456 KiB, t = 2, p = 1, 32-byte output (alimentar's parameters). */
fmt_kind fmt_argon2id_key(const fmt_password *pw, const uint8_t salt[FMT_ARGON2_SALT],
			  uint8_t key[FMT_AEAD_KEY], fmt_err *e);

/* HKDF-SHA256 (RFC 5869); salt NULL/0 means 32 zero bytes. */
fmt_kind fmt_hkdf_sha256(const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len,
			 const char *info, uint8_t *out, size_t out_len, fmt_err *e);

/* X25519(secret, public); an all-zero result (a small-order public key) is DecryptionFailed. */
fmt_kind fmt_x25519_agree(const uint8_t secret[FMT_X25519_LEN], const uint8_t pub[FMT_X25519_LEN],
			  uint8_t shared[FMT_X25519_LEN], fmt_err *e);
/* The public key of a secret scalar. */
void fmt_x25519_public_of(const uint8_t secret[FMT_X25519_LEN], uint8_t pub[FMT_X25519_LEN]);

/* Streaming AES-256-GCM, 96-bit nonce, no associated data. */
typedef struct fmt_gcm {
	void *ctx;                     /* EVP_CIPHER_CTX */
	int decrypt;
} fmt_gcm;

fmt_kind fmt_gcm_init(fmt_gcm *g, const uint8_t key[FMT_AEAD_KEY], const uint8_t nonce[FMT_AEAD_NONCE],
		      int decrypt, fmt_err *e);
/* n bytes of in to out (the same length; in == out is allowed). */
fmt_kind fmt_gcm_update(fmt_gcm *g, const uint8_t *in, size_t n, uint8_t *out, fmt_err *e);
/* Encrypting: the tag. Decrypting: check tag (DecryptionFailed when it differs). */
fmt_kind fmt_gcm_final(fmt_gcm *g, uint8_t tag[FMT_AEAD_TAG], fmt_err *e);
void fmt_gcm_free(fmt_gcm *g);

/* Key files of `fmt-sign keygen --x25519`. The secret one must not be readable by others;
 * it is unencrypted (the 32 bytes in base64) or encrypted under a passphrase (man fmt-sign,
 * "X25519 keys": Argon2id as fmt_argon2id_key, AES-256-GCM), whose passphrase the loader gets
 * as o says (fmt_passphrase). A wrong passphrase is DecryptionFailed, a malformed file
 * InvalidFormat; e names the file. */
fmt_kind fmt_x25519_public_load(const char *path, uint8_t pk[FMT_X25519_LEN], fmt_err *e);
fmt_kind fmt_x25519_secret_load(const char *path, const fmt_pass_opts *o, fmt_x25519_pair *out,
				fmt_err *e);
/* The encrypted secret key file's text (in sodium_malloc memory), the passphrase asked for as
 * o says (twice at the terminal). */
fmt_kind fmt_x25519_secret_seal(const fmt_x25519_pair *p, const fmt_pass_opts *o, uint8_t **text,
				size_t *len, fmt_err *e);

/* The options that name a password or identity for reading encrypted data:
 *   --password-file FILE   --password-env NAME   --identity SECKEY
 * (their option-table entries: FMT_CLI_DECRYPT_OPTIONS, fmt/cli_keys.h), and how to ask for a
 * password when none is given (fmt_decrypt_keys_prompt): the tool's prompt, the CLI layer's
 * fmt_prompt_password (fmt/prompt.h), which leaves out->bytes NULL when it asked nobody. */
typedef fmt_kind (*fmt_password_ask_fn)(fmt_password *out, fmt_err *e);
typedef struct fmt_decrypt_opts {
	const char *password_file;
	const char *password_env;
	const char *identity;
	fmt_password_ask_fn ask;          /* NULL: never ask */
	/* The identity's passphrase when it is encrypted: --passphrase-file, --passphrase-env,
	 * else the terminal (fmt_cli_decrypt_prompts of fmt/cli_keys.h fills it). */
	fmt_pass_opts passphrase;
} fmt_decrypt_opts;

/* What they load: the keyset's password and x25519 members point into it. */
typedef struct fmt_decrypt_keys {
	fmt_password password;
	fmt_x25519_pair identity;
	int has_password, has_identity;
	fmt_password_ask_fn ask;          /* the options' */
} fmt_decrypt_keys;

/* Load what o names (at most one password source; an identity besides is allowed) and point
 * ks->password / ks->x25519 at it. */
fmt_kind fmt_decrypt_keys_load(const fmt_decrypt_opts *o, fmt_decrypt_keys *dk, fmt_keyset *ks,
			       fmt_err *e);
/* Ask for a password (dk->ask) when none was given; FMT_OK with ks->password still NULL when
 * nobody was asked. */
fmt_kind fmt_decrypt_keys_prompt(fmt_decrypt_keys *dk, fmt_keyset *ks, fmt_err *e);
void fmt_decrypt_keys_free(fmt_decrypt_keys *dk);

#endif
