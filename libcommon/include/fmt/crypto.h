/* Digests, MACs, secrets and the per-user HMAC key. SHA-256 is OpenSSL's (it uses the CPU's
 * SHA instructions); HMAC, secure memory and constant-time comparison are libsodium's. */
#ifndef FMT_CRYPTO_H
#define FMT_CRYPTO_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/err.h"
#include "fmt/io.h"

#define FMT_SHA256_LEN 32
#define FMT_SHA256_HEX (2 * FMT_SHA256_LEN)

/* Streaming SHA-256. */
typedef struct fmt_sha256 {
	void *ctx;                     /* EVP_MD_CTX */
} fmt_sha256;

fmt_kind fmt_sha256_init(fmt_sha256 *h, fmt_err *e);
fmt_kind fmt_sha256_update(fmt_sha256 *h, const void *data, size_t n, fmt_err *e);
fmt_kind fmt_sha256_final(fmt_sha256 *h, uint8_t out[FMT_SHA256_LEN], fmt_err *e);
void fmt_sha256_free(fmt_sha256 *h);

/* SHA-256 of n bytes of a source from off, read in bounded chunks by pread (no mapping). */
fmt_kind fmt_sha256_source(fmt_sha256 *h, fmt_source *s, uint64_t off, uint64_t n, fmt_err *e);

/* One-shot SHA-256 of a buffer. */
fmt_kind fmt_sha256_buf(const void *data, size_t n, uint8_t out[FMT_SHA256_LEN], fmt_err *e);

/* Lowercase hex of n bytes into out (2n+1 bytes, NUL-terminated). */
void fmt_hex(const uint8_t *bytes, size_t n, char *out);
/* Parse exactly 2n lowercase hex digits; returns 0 on success. */
int fmt_unhex(const char *hex, size_t hex_len, uint8_t *out, size_t n);

/* HMAC-SHA256. */
void fmt_hmac_sha256(const uint8_t *key, size_t key_len, const void *msg, size_t msg_len,
		     uint8_t out[FMT_SHA256_LEN]);

/* Constant-time comparison: 1 if equal. */
int fmt_ct_equal(const void *a, const void *b, size_t n);

/* A key for HMAC signatures (specs/apsim.md §6): a per-user 32-byte key (id = first 16 hex
 * digits of SHA-256(K)) or a team shared secret (id "shared"). The bytes live in sodium_malloc
 * memory and are wiped by fmt_hmac_key_free. */
typedef struct fmt_hmac_key {
	uint8_t *bytes;
	size_t len;
	char id[17];
} fmt_hmac_key;

void fmt_hmac_key_free(fmt_hmac_key *k);

/* The keys a write or a verification may use; a driver takes those its format has and
 * ignores the others. NULL members are absent. */
struct fmt_ed25519_public;
struct fmt_ed25519_secret;
struct fmt_password;
struct fmt_x25519_identity;
typedef struct fmt_keyset {
	const fmt_hmac_key *hmac;                       /* HMAC-SHA256 shared secret */
	/* The Ed25519 public keys the user trusts (-p, -P, --trusted-keys): a signature by any
	 * other key is refused, naming its key id. */
	const struct fmt_ed25519_public *trusted;
	size_t n_trusted;
	const struct fmt_ed25519_secret *ed25519_secret; /* makes Ed25519 signatures */
	const struct fmt_password *password;            /* encrypts and decrypts */
	const struct fmt_x25519_identity *x25519;       /* a recipient's identity */
} fmt_keyset;

/* Who signed what a verification checked, filled by the driver (fmt_verify_opts.signer). */
typedef struct fmt_signer {
	const char *kind;       /* "hmac-sha256", "ed25519", or NULL when nothing was checked */
	char key_id[24];        /* the HMAC key id, or the Ed25519 key's minisign id */
	/* The kind of a signature the file carries that no key given could check ("hmac-sha256",
	 * "ed25519"), or NULL. */
	const char *unchecked;
} fmt_signer;

/* Who made a checked signature, for an ok line: "trusted key ID", or "the shared secret" for a
 * team secret's HMAC (its key id is "shared"). */
const char *fmt_signer_name(const char *key_id, char *buf, size_t size);

/* 1 if ks holds no key at all (NULL counts as empty). */
int fmt_keyset_empty(const fmt_keyset *ks);

/* Where the per-user key lives: $XDG_CONFIG_HOME/fmtkit/hmac.key, else ~/.config/fmtkit/hmac.key
 * (malloc'd). */
fmt_kind fmt_hmac_key_path(char **path, fmt_err *e);
/* The same directory for another key file name ("ed25519.pub"). */
fmt_kind fmt_key_file_path(const char *name, char **path, fmt_err *e);

/* A new key file: the directory made (0700), written to PATH.new (O_EXCL|O_NOFOLLOW, mode 0600
 * for a secret key, 0644 for a public one; removed on failure and on a signal, as the atomic
 * sinks' temporary files), then a previous file kept as PATH.old when rotate (an existing one
 * refused otherwise) and PATH.new renamed to path. On failure the directories it made are
 * removed again (only those, and only while empty). */
fmt_kind fmt_key_file_create(const char *path, const void *bytes, size_t len, int rotate,
			     int secret, fmt_err *e);
/* A new key pair, both files or neither: an existing one refused (UsageError) unless rotate,
 * and with rotate anything but a regular file refused before anything is written; each written
 * to PATH.new as by fmt_key_file_create (removed on a signal too), then the previous keys kept
 * as PATH.old and the new ones renamed in place; when a step fails, what was done is undone
 * (the directories made for them removed too).
 * *failed: the path the error is about (NULL on success). */
fmt_kind fmt_key_pair_create(const char *pub_path, const void *pub, size_t pub_len,
			     const char *sec_path, const void *sec, size_t sec_len, int rotate,
			     const char **failed, fmt_err *e);

/* Create a new per-user key (32 random bytes, written by fmt_key_file_create: 0600).
 * With rotate, an existing key is kept as hmac.key.old (replacing an older one) first;
 * without, an existing key is refused (UsageError). */
fmt_kind fmt_hmac_keygen(const char *path, int rotate, fmt_hmac_key *out, fmt_err *e);
/* The two halves of it, for a caller with something to do between (a report made before the
 * file exists): a new random key with its id, and that key stored at path (the file named in
 * e on failure; the key stays the caller's to free). */
fmt_kind fmt_hmac_key_random(fmt_hmac_key *key, fmt_err *e);
fmt_kind fmt_hmac_key_store(const char *path, int rotate, const fmt_hmac_key *key, fmt_err *e);

/* A secret key file (st: its fstat or stat) that its group or others may read or write:
 * UsageError "WHAT is readable by others (mode 0644); chmod 600 it". Every secret key loader
 * (HMAC, Ed25519 and X25519 encrypted or not, watermark) asks this, before any passphrase. */
struct stat;
fmt_kind fmt_key_mode_check(const struct stat *st, const char *what, fmt_err *e);
/* A key file whose mode is checked is a file: path - is UsageError "WHAT is read from a file
 * (its mode is checked), not standard input". */
fmt_kind fmt_key_path_check(const char *path, const char *what, fmt_err *e);

/* Load the per-user key; a missing file, wrong size or a mode readable by others is refused. */
fmt_kind fmt_hmac_key_load(const char *path, fmt_hmac_key *out, fmt_err *e);

/* A shared secret, never from the command line: from a file (one trailing newline removed),
 * an environment variable the user names, or a no-echo prompt on the terminal (the CLI
 * layer's fmt_secret_from_prompt, fmt/prompt.h, which tools hand in as a hook). */
fmt_kind fmt_secret_from_file(const char *path, fmt_hmac_key *out, fmt_err *e);
/* The same, giving the fstat of the descriptor that was read in *st (a key file's mode is
 * checked on what was read, not on whatever the path names afterwards). */
fmt_kind fmt_secret_from_file_st(const char *path, fmt_hmac_key *out, struct stat *st, fmt_err *e);
fmt_kind fmt_secret_from_env(const char *name, fmt_hmac_key *out, fmt_err *e);
/* A secret of len bytes in fresh sodium_malloc memory, for the caller to fill (id "shared"). */
fmt_kind fmt_secret_alloc(size_t len, fmt_hmac_key *out, fmt_err *e);

/* How a secret is asked for at the terminal (fmt_secret_from_prompt of the CLI layer): fills
 * out with what was typed after prompt. */
typedef fmt_kind (*fmt_secret_prompt_fn)(const char *prompt, fmt_hmac_key *out, fmt_err *e);

/* The key options shared by fmt-verify, fmt-convert --sign and fmt-sign sign:
 *   --hmac-key            the per-user key
 *   --secret-file FILE    a shared secret from a file (--key-secret-file is an alias)
 *   --secret-env NAME     a shared secret from an environment variable
 *   --secret-prompt       a shared secret typed at a no-echo prompt
 * At most one may be given (UsageError otherwise). */
typedef struct fmt_key_opts {
	int hmac_key;
	const char *secret_file;
	const char *secret_env;
	fmt_secret_prompt_fn secret_prompt;  /* --secret-prompt: how to ask (fmt_cli_key_option sets it) */
} fmt_key_opts;

/* 1 if any key option was given. */
int fmt_key_opts_given(const fmt_key_opts *o);
/* Load the key the options name. */
fmt_kind fmt_key_from_opts(const fmt_key_opts *o, fmt_hmac_key *out, fmt_err *e);

#endif
