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
#include <stdio.h>
#include <stdint.h>
#include "fmt/crypto.h"
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

/* The .minisig text sig (len bytes) over the file at path, checked with the trusted keys
 * (fmt_ms_sig_parse, then fmt_ms_verify_file); id gets the signing key's id. A malformed
 * signature is InvalidFormat, its message prefixed with sig_name. */
fmt_kind fmt_ms_check_detached(const char *sig, size_t len, const char *sig_name, const char *path,
			       const fmt_ms_public *keys, size_t n, char id[FMT_MS_KEY_ID_HEX], fmt_err *e);

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

/* ---- keys from files and options, shared by the tools ---- */

/* A minisign public key file. */
fmt_kind fmt_ms_public_load(const char *path, fmt_ms_public *pub, fmt_err *e);

/* The public keys a user trusts: -p FILE, -P BASE64 and --trusted-keys DIR (every *.pub in
 * it, in name order). NULL members are not given. Their option-table entries and handler:
 * FMT_CLI_TRUST_OPTIONS, fmt/cli_keys.h. */
typedef struct fmt_trust_opts {
	const char *pubkey;
	const char *pubkey_b64;
	const char *trusted_dir;
} fmt_trust_opts;

typedef struct fmt_trust_list {
	fmt_ms_public *keys;
	size_t n;
} fmt_trust_list;

int fmt_trust_opts_given(const fmt_trust_opts *o);

/* Load every key o names; with default_key and none named, $XDG_CONFIG_HOME/fmtkit/ed25519.pub.
 * A directory without any *.pub is a usage error (nothing would be trusted). */
fmt_kind fmt_trust_load(const fmt_trust_opts *o, int default_key, fmt_trust_list *out, fmt_err *e);
void fmt_trust_free(fmt_trust_list *t);
/* UsageError when a file written at dest (an unpacked member) would land in a directory whose
 * key files are trusted: o's --trusted-keys DIR, or the per-user key directory
 * ($XDG_CONFIG_HOME/fmtkit, whose ed25519.pub fmt-sign verify trusts by default and whose
 * hmac.key --hmac-key reads), so that what is written can never plant a key. The directories
 * are compared by device and inode; one that does not exist holds nothing to protect. */
fmt_kind fmt_trust_guard_dest(const fmt_trust_opts *o, const char *dest, fmt_err *e);

/* The keys a check uses (fmt-verify, fmt-shard unpack): the HMAC key the key options name
 * and the Ed25519 keys the trust options name, pointed at from ks (neither given: ks empty).
 * Free with fmt_check_keys_free, also after a failure. */
typedef struct fmt_check_keys {
	fmt_hmac_key hmac;
	fmt_trust_list trust;
} fmt_check_keys;
fmt_kind fmt_check_keys_load(const fmt_key_opts *ko, const fmt_trust_opts *to, fmt_check_keys *ck,
			     fmt_keyset *ks, fmt_err *e);
void fmt_check_keys_free(fmt_check_keys *ck);

/* The trusted key with this key id, or with this public key; NULL when it is not trusted. */
const fmt_ms_public *fmt_trust_find_id(const fmt_ms_public *keys, size_t n, const uint8_t keynum[FMT_MS_KEYNUM]);
const fmt_ms_public *fmt_trust_find_pk(const fmt_ms_public *keys, size_t n, const uint8_t pk[FMT_MS_PK]);

/* A signature block that embeds the signer's bare public key (.ald §6, APR v1 §16.2): pk must be
 * one of the trusted keys (the message names an untrusted one in Base64) and sig its valid
 * signature of msg; id gets the trusted key's minisign id. FMT_SIGNATURE otherwise. */
fmt_kind fmt_trust_check_embedded(const fmt_ms_public *keys, size_t n, const uint8_t pk[FMT_MS_PK],
				  const void *msg, size_t len, const uint8_t sig[FMT_MS_SIG],
				  char id[FMT_MS_KEY_ID_HEX], fmt_err *e);

/* Where a secret key's passphrase comes from: a file, an environment variable, else ask
 * (twice when confirm): the CLI layer's terminal prompt, fmt_prompt_passphrase (fmt/prompt.h;
 * fmt_cli_pass_opts of fmt/cli_keys.h fills the whole struct for a tool). */
typedef struct fmt_pass_opts {
	const char *file;
	const char *env;
	fmt_kind (*ask)(int confirm, fmt_hmac_key *pw, fmt_err *e);   /* NULL: a usage error */
	/* Says "deriving the key from the passphrase…" while scrypt runs (seconds), and text
	 * NULL erases it: on the terminal when the tool shows progress, else NULL. */
	void (*notice)(const char *text);
} fmt_pass_opts;

/* The words of that notice (fmt-sign keygen says them too, while it encrypts a new key). */
#define FMT_PASS_DERIVING "deriving the key from the passphrase\xe2\x80\xa6"

fmt_kind fmt_passphrase(const fmt_pass_opts *o, int confirm, fmt_hmac_key *pw, fmt_err *e);

/* fmt_passphrase for a secret key file being read: *theirs is 1 when it failed in the
 * passphrase's file or variable, which its message names; the loader then leaves the key
 * file's name off the error ("ed.key: cannot open the secret file /nonexistent" was wrong). */
fmt_kind fmt_key_passphrase(const fmt_pass_opts *o, fmt_hmac_key *pw, int *theirs, fmt_err *e);

/* Load a minisign secret key file (path NULL: $XDG_CONFIG_HOME/fmtkit/ed25519.key), asking for
 * its passphrase as o says when it is encrypted. A wrong passphrase is FMT_DECRYPTION; e names
 * the file on failure. */
fmt_kind fmt_ms_secret_load(const char *path, const fmt_pass_opts *o, fmt_ms_secret *sec, fmt_err *e);

/* ---- pure Ed25519 (RFC 8032, no pre-hash) over bytes in memory ---- */

/* The secret key's public half (libsodium keeps it in the last 32 bytes). */
const uint8_t *fmt_ms_secret_pk(const fmt_ms_secret *sec);
fmt_kind fmt_ed25519_sign(const fmt_ms_secret *sec, const void *msg, size_t n, uint8_t sig[FMT_MS_SIG],
			  fmt_err *e);
/* 1 when sig is pk's signature of msg. */
int fmt_ed25519_verify(const uint8_t pk[FMT_MS_PK], const void *msg, size_t n, const uint8_t sig[FMT_MS_SIG]);

/* Standard Base64 with padding: out holds 4*ceil(n/3)+1 bytes. */
void fmt_base64(const uint8_t *bin, size_t n, char *out, size_t out_len);
/* Decode exactly n bytes from text[0..len) (padding required, nothing else); 0 on success. */
int fmt_unbase64(const char *text, size_t len, uint8_t *out, size_t n);
/* Decode standard Base64 with padding of any length from text[0..len) into out (room for
 * len/4*3 bytes); *got: the bytes decoded. 0 on success. */
int fmt_base64_decode(const char *text, size_t len, uint8_t *out, size_t *got);

#endif
