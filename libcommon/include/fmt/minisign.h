/* Ed25519 keys and detached signatures in minisign's file formats, so that keys and signatures
 * made by minisign work here and ours work there; X25519 key pairs for dataset recipients.
 *
 *   public key   "untrusted comment: ...\n" base64("Ed" || key id (8) || public key (32)) "\n"
 *   secret key   "untrusted comment: ...\n" base64("Ed" || kdf ("Sc", or 0 0 without a
 *                passphrase) || "B2" || salt (32) || opslimit (8, LE) || memlimit (8, LE) ||
 *                [key id (8) || secret key (64) || BLAKE2b-256 checksum (32)] XOR scrypt stream)
 *   signature    "untrusted comment: ...\n" base64("ED" || key id || Ed25519(BLAKE2b-512(file)))
 *                "\ntrusted comment: TEXT\n" base64(Ed25519(signature || TEXT)) "\n"
 *                ("Ed" instead of "ED": the legacy form, signing the file itself; read only).
 * Secrets live in sodium_malloc memory and are wiped when freed. Nothing here prints or exits. */
#ifndef FMT_MINISIGN_H
#define FMT_MINISIGN_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/err.h"

#define FMT_MS_KEYNUM 8
#define FMT_MS_PK 32
#define FMT_MS_SK 64
#define FMT_MS_SIG 64
#define FMT_MS_HASH 64
#define FMT_MS_KEY_ID_HEX 17             /* 16 uppercase hex digits and the NUL */
#define FMT_MS_TRUSTED_MAX 8192          /* minisign's bound on a trusted comment */
#define FMT_MS_FILE_MAX (16u * 1024u)    /* key and signature files are far smaller */

typedef struct fmt_ed25519_public {
	uint8_t keynum[FMT_MS_KEYNUM];
	uint8_t pk[FMT_MS_PK];
} fmt_ms_public;

typedef struct fmt_ed25519_secret {
	uint8_t keynum[FMT_MS_KEYNUM];
	uint8_t *sk;                     /* FMT_MS_SK bytes of sodium_malloc memory */
} fmt_ms_secret;

/* A parsed .minisig. */
typedef struct fmt_ms_sig {
	int prehashed;                   /* "ED" (1) or the legacy "Ed" (0) */
	uint8_t keynum[FMT_MS_KEYNUM];
	uint8_t sig[FMT_MS_SIG];
	char trusted[FMT_MS_TRUSTED_MAX + 1]; /* the trusted comment, NUL-terminated */
	size_t trusted_len;
	uint8_t global_sig[FMT_MS_SIG];
} fmt_ms_sig;

/* The key id as minisign prints it: the 8 bytes read as a little-endian number, 16 uppercase
 * hex digits. */
void fmt_ms_key_id(const uint8_t keynum[FMT_MS_KEYNUM], char out[FMT_MS_KEY_ID_HEX]);

void fmt_ms_secret_free(fmt_ms_secret *s);

/* A new key pair with a random key id. */
fmt_kind fmt_ms_keygen(fmt_ms_public *pub, fmt_ms_secret *sec, fmt_err *e);

/* The public key file's text (malloc'd). */
fmt_kind fmt_ms_public_text(const fmt_ms_public *pub, char **text, size_t *len, fmt_err *e);
/* A public key file's contents, or (base64_only) the bare base64 line as minisign -P takes. */
fmt_kind fmt_ms_public_parse(const char *text, size_t len, int base64_only, fmt_ms_public *out,
			     fmt_err *e);

/* The secret key file's text in sodium_malloc memory (sodium_free it): encrypted with the
 * passphrase (scrypt at libsodium's SENSITIVE limits, as minisign), or without one (pw NULL). */
fmt_kind fmt_ms_secret_text(const fmt_ms_secret *sec, const uint8_t *pw, size_t pw_len,
			    uint8_t **text, size_t *len, fmt_err *e);
/* 1 if a secret key file's text is encrypted (needs a passphrase), 0 if not, -1 if malformed. */
int fmt_ms_secret_encrypted(const uint8_t *text, size_t len);
/* Parse (and decrypt with pw when encrypted) a secret key file's text. A wrong passphrase
 * fails the checksum: FMT_DECRYPTION. */
fmt_kind fmt_ms_secret_parse(const uint8_t *text, size_t len, const uint8_t *pw, size_t pw_len,
			     fmt_ms_secret *out, fmt_err *e);

/* BLAKE2b-512 of a file, read in chunks. */
fmt_kind fmt_ms_hash_file(const char *path, uint8_t out[FMT_MS_HASH], fmt_err *e);

/* A .minisig's text for a file of hash (prehashed) and the trusted comment (no newline,
 * at most FMT_MS_TRUSTED_MAX bytes); malloc'd. */
fmt_kind fmt_ms_sign(const fmt_ms_secret *sec, const uint8_t hash[FMT_MS_HASH], const char *trusted,
		     char **text, size_t *len, fmt_err *e);

/* Parse a .minisig (FMT_INVALID_FORMAT when malformed). */
fmt_kind fmt_ms_sig_parse(const char *text, size_t len, fmt_ms_sig *out, fmt_err *e);

/* Check sig over the file at path with the one of keys[0..n) whose id it names (*which is its
 * index): FMT_SIGNATURE, saying what failed, when no key has that id, the signature is wrong or
 * the global signature (over signature || trusted comment) is wrong. */
fmt_kind fmt_ms_verify_file(const fmt_ms_sig *sig, const fmt_ms_public *keys, size_t n,
			    const char *path, size_t *which, fmt_err *e);

/* X25519 key pairs (dataset recipients): one-line base64 files under a comment line. */
typedef struct fmt_x25519_identity {
	uint8_t pk[32];
	uint8_t *sk;                     /* 32 bytes of sodium_malloc memory */
} fmt_x25519_pair;

fmt_kind fmt_x25519_keygen(fmt_x25519_pair *out, fmt_err *e);
void fmt_x25519_free(fmt_x25519_pair *p);
/* Id of an X25519 public key: the first 8 bytes of BLAKE2b-256(pk), as fmt_ms_key_id prints. */
void fmt_x25519_key_id(const uint8_t pk[32], char out[FMT_MS_KEY_ID_HEX]);
/* File texts: the public one malloc'd, the secret one in sodium_malloc memory. */
fmt_kind fmt_x25519_public_text(const fmt_x25519_pair *p, char **text, size_t *len, fmt_err *e);
fmt_kind fmt_x25519_secret_text(const fmt_x25519_pair *p, uint8_t **text, size_t *len, fmt_err *e);
fmt_kind fmt_x25519_public_parse(const char *text, size_t len, uint8_t pk[32], fmt_err *e);

#endif
