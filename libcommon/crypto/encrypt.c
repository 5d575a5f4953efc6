/* Dataset encryption primitives (fmt/encrypt.h): Argon2id and X25519 from libsodium, HKDF-SHA256
 * and AES-256-GCM from OpenSSL (libsodium's AES-GCM needs AES-NI), X25519 key files, and the
 * options that name a password or an identity. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "crypto_internal.h"
#include "openssl_fns.h"
#include "fmt/encrypt.h"

#define ARGON2_MEM_KIB 19456u
#define ARGON2_TIME 2u
#define KEY_FILE_MAX 4096u
#define UNTRUSTED "untrusted comment:"

fmt_kind fmt_random(void *p, size_t n, fmt_err *e)
{
	fmt_kind k = fmt_crypto_sodium_init(e);
	if (k == FMT_OK)
		randombytes_buf(p, n);
	return k;
}

void fmt_wipe(void *p, size_t n)
{
	sodium_memzero(p, n);
}

void fmt_password_free(fmt_password *p)
{
	if (p->bytes)
		sodium_free(p->bytes);
	p->bytes = NULL;
	p->len = 0;
}

/* The secret readers fill an fmt_hmac_key (sodium_malloc'd bytes); a password takes them over. */
static fmt_kind take_secret(fmt_kind k, fmt_hmac_key *s, fmt_password *out)
{
	if (k != FMT_OK)
		return k;
	out->bytes = s->bytes;
	out->len = s->len;
	return FMT_OK;
}

fmt_kind fmt_password_from_file(const char *path, fmt_password *out, fmt_err *e)
{
	fmt_hmac_key s;
	memset(out, 0, sizeof *out);
	return take_secret(fmt_secret_from_file(path, &s, e), &s, out);
}

fmt_kind fmt_password_from_env(const char *name, fmt_password *out, fmt_err *e)
{
	fmt_hmac_key s;
	memset(out, 0, sizeof *out);
	return take_secret(fmt_secret_from_env(name, &s, e), &s, out);
}

fmt_kind fmt_argon2id_key(const fmt_password *pw, const uint8_t salt[FMT_ARGON2_SALT],
			  uint8_t key[FMT_AEAD_KEY], fmt_err *e)
{
	fmt_kind k = fmt_crypto_sodium_init(e);
	if (k != FMT_OK)
		return k;
	if (crypto_pwhash(key, FMT_AEAD_KEY, (const char *)pw->bytes, pw->len, salt, ARGON2_TIME,
			  (size_t)ARGON2_MEM_KIB * 1024u, crypto_pwhash_ALG_ARGON2ID13) != 0)
		return fmt_fail(e, FMT_IO, "Argon2id: out of memory (it needs 19 MiB)");
	return FMT_OK;
}

fmt_kind fmt_hkdf_sha256(const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len,
			 const char *info, uint8_t *out, size_t out_len, fmt_err *e)
{
	static const uint8_t zero_salt[32];
	fmt_kind loaded = fmt_openssl_load(e);
	if (loaded != FMT_OK)
		return loaded;
	EVP_KDF *kdf = OSSL(EVP_KDF_fetch)(NULL, "HKDF", NULL);
	EVP_KDF_CTX *ctx = kdf ? OSSL(EVP_KDF_CTX_new)(kdf) : NULL;
	OSSL_PARAM params[5], *p = params;
	fmt_kind k = FMT_OK;
	if (!salt || !salt_len) {
		salt = zero_salt;
		salt_len = sizeof zero_salt;
	}
	*p++ = OSSL(OSSL_PARAM_construct_utf8_string)(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
	*p++ = OSSL(OSSL_PARAM_construct_octet_string)(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len);
	*p++ = OSSL(OSSL_PARAM_construct_octet_string)(OSSL_KDF_PARAM_KEY, (void *)ikm, ikm_len);
	*p++ = OSSL(OSSL_PARAM_construct_octet_string)(OSSL_KDF_PARAM_INFO, (void *)info, strlen(info));
	*p = OSSL(OSSL_PARAM_construct_end)();
	if (!ctx || OSSL(EVP_KDF_derive)(ctx, out, out_len, params) != 1)
		k = fmt_fail(e, FMT_INTERNAL, "HKDF-SHA256 failed in OpenSSL");
	OSSL(EVP_KDF_CTX_free)(ctx);
	OSSL(EVP_KDF_free)(kdf);
	return k;
}

fmt_kind fmt_x25519_agree(const uint8_t secret[FMT_X25519_LEN], const uint8_t pub[FMT_X25519_LEN],
			  uint8_t shared[FMT_X25519_LEN], fmt_err *e)
{
	fmt_kind k = fmt_crypto_sodium_init(e);
	if (k != FMT_OK)
		return k;
	/* libsodium refuses an all-zero result: the other key was of small order. */
	if (crypto_scalarmult(shared, secret, pub) != 0)
		return fmt_fail(e, FMT_DECRYPTION, "the X25519 public key is of small order (no shared secret)");
	return FMT_OK;
}

void fmt_x25519_public_of(const uint8_t secret[FMT_X25519_LEN], uint8_t pub[FMT_X25519_LEN])
{
	crypto_scalarmult_base(pub, secret);
}

fmt_kind fmt_gcm_init(fmt_gcm *g, const uint8_t key[FMT_AEAD_KEY], const uint8_t nonce[FMT_AEAD_NONCE],
		      int decrypt, fmt_err *e)
{
	g->ctx = NULL;
	g->decrypt = decrypt;
	fmt_kind loaded = fmt_openssl_load(e);
	if (loaded != FMT_OK)
		return loaded;
	EVP_CIPHER_CTX *c = OSSL(EVP_CIPHER_CTX_new)();
	g->ctx = c;
	if (!c)
		return fmt_fail(e, FMT_IO, "out of memory");
	/* The default IV length of GCM in OpenSSL is the 96 bits used here. */
	if (OSSL(EVP_CipherInit_ex)(c, OSSL(EVP_aes_256_gcm)(), NULL, key, nonce, decrypt ? 0 : 1) != 1)
		return fmt_fail(e, FMT_INTERNAL, "AES-256-GCM could not be set up");
	return FMT_OK;
}

fmt_kind fmt_gcm_update(fmt_gcm *g, const uint8_t *in, size_t n, uint8_t *out, fmt_err *e)
{
	while (n > 0) {
		int step = n > (1u << 30) ? 1 << 30 : (int)n, got = 0;
		if (OSSL(EVP_CipherUpdate)(g->ctx, out, &got, in, step) != 1 || got != step)
			return fmt_fail(e, FMT_INTERNAL, "AES-256-GCM failed");
		in += step;
		out += step;
		n -= (size_t)step;
	}
	return FMT_OK;
}

fmt_kind fmt_gcm_final(fmt_gcm *g, uint8_t tag[FMT_AEAD_TAG], fmt_err *e)
{
	uint8_t none[16];
	int got = 0;
	if (g->decrypt) {
		if (OSSL(EVP_CIPHER_CTX_ctrl)(g->ctx, EVP_CTRL_GCM_SET_TAG, FMT_AEAD_TAG, tag) != 1)
			return fmt_fail(e, FMT_INTERNAL, "AES-256-GCM: cannot set the tag");
		if (OSSL(EVP_CipherFinal_ex)(g->ctx, none, &got) != 1)
			return fmt_fail(e, FMT_DECRYPTION, "authentication failed: wrong password or key, or the "
					"encrypted payload was altered");
		return FMT_OK;
	}
	if (OSSL(EVP_CipherFinal_ex)(g->ctx, none, &got) != 1 ||
	    OSSL(EVP_CIPHER_CTX_ctrl)(g->ctx, EVP_CTRL_GCM_GET_TAG, FMT_AEAD_TAG, tag) != 1)
		return fmt_fail(e, FMT_INTERNAL, "AES-256-GCM: cannot finish");
	return FMT_OK;
}

void fmt_gcm_free(fmt_gcm *g)
{
	if (g->ctx)
		OSSL(EVP_CIPHER_CTX_free)(g->ctx); /* clears the key schedule */
	g->ctx = NULL;
}

fmt_kind fmt_x25519_public_load(const char *path, uint8_t pk[FMT_X25519_LEN], fmt_err *e)
{
	char *text;
	size_t n;
	fmt_kind k = fmt_read_file(path, KEY_FILE_MAX, &text, &n, e);
	if (k != FMT_OK)
		return k;
	const char *nl = memchr(text, '\n', n);
	if (nl && memmem(text, (size_t)(nl - text), "secret key", 10))
		k = fmt_fail(e, FMT_USAGE, "a secret key; --encrypt-to takes the recipient's public key");
	else
		k = fmt_x25519_public_parse(text, n, pk, e);
	free(text);
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}

/* An encrypted X25519 secret key (man fmt-sign, "X25519 keys"), the bytes under the comment
 * line: magic, version, Argon2id salt (fmt_argon2id_key's parameters), AES-256-GCM nonce, the
 * encrypted 32-byte key and its tag. */
static const uint8_t X25519_ENC_MAGIC[4] = { 'X', '2', '5', 'K' };
#define X25519_ENC_VERSION 1u
#define X25519_ENC_SALT 5u
#define X25519_ENC_NONCE (X25519_ENC_SALT + FMT_ARGON2_SALT)
#define X25519_ENC_KEY (X25519_ENC_NONCE + FMT_AEAD_NONCE)
#define X25519_ENC_TAG (X25519_ENC_KEY + FMT_X25519_LEN)
#define X25519_ENC_LEN (X25519_ENC_TAG + FMT_AEAD_TAG)
#define X25519_ENC_COMMENT "untrusted comment: fmtkit x25519 secret key, encrypted (Argon2id, AES-256-GCM)"

/* The key of an encrypted file from the passphrase and salt (Argon2id, o's notice while it runs). */
static fmt_kind enc_key(const fmt_pass_opts *o, const fmt_hmac_key *pw, const uint8_t *salt,
			uint8_t key[FMT_AEAD_KEY], fmt_err *e)
{
	fmt_password view = { pw->bytes, pw->len };
	if (o && o->notice)
		o->notice(FMT_PASS_DERIVING);
	fmt_kind k = fmt_argon2id_key(&view, salt, key, e);
	if (o && o->notice)
		o->notice(NULL);
	return k;
}

/* AES-256-GCM of the 32 bytes in to out; decrypting, tag is checked, else written. */
static fmt_kind enc_gcm(const uint8_t key[FMT_AEAD_KEY], const uint8_t *nonce, int decrypt,
			const uint8_t *in, uint8_t *out, uint8_t *tag, fmt_err *e)
{
	fmt_gcm g;
	fmt_kind k = fmt_gcm_init(&g, key, nonce, decrypt, e);
	if (k != FMT_OK)
		return k;
	k = fmt_gcm_update(&g, in, FMT_X25519_LEN, out, e);
	if (k == FMT_OK)
		k = fmt_gcm_final(&g, tag, e);
	fmt_gcm_free(&g);
	return k;
}

fmt_kind fmt_x25519_secret_seal(const fmt_x25519_pair *p, const fmt_pass_opts *o, uint8_t **text,
				size_t *len, fmt_err *e)
{
	fmt_hmac_key pw = { 0 };
	uint8_t blob[X25519_ENC_LEN], key[FMT_AEAD_KEY];
	size_t b64 = sodium_base64_ENCODED_LEN(X25519_ENC_LEN, sodium_base64_VARIANT_ORIGINAL);
	size_t cap = strlen(X25519_ENC_COMMENT) + 1 + b64 + 1;
	*text = NULL;
	fmt_kind k = fmt_passphrase(o, 1, &pw, e);
	memcpy(blob, X25519_ENC_MAGIC, sizeof X25519_ENC_MAGIC);
	blob[4] = X25519_ENC_VERSION;
	if (k == FMT_OK)
		k = fmt_random(blob + X25519_ENC_SALT, FMT_ARGON2_SALT + FMT_AEAD_NONCE, e);
	if (k == FMT_OK)
		k = enc_key(o, &pw, blob + X25519_ENC_SALT, key, e);
	if (k == FMT_OK)
		k = enc_gcm(key, blob + X25519_ENC_NONCE, 0, p->sk, blob + X25519_ENC_KEY, blob + X25519_ENC_TAG, e);
	if (k == FMT_OK && !(*text = sodium_malloc(cap)))
		k = fmt_fail(e, FMT_IO, "out of secure memory");
	if (k == FMT_OK) {
		int n = snprintf((char *)*text, cap, "%s\n", X25519_ENC_COMMENT);
		fmt_base64(blob, sizeof blob, (char *)*text + n, cap - (size_t)n);
		*len = strlen((char *)*text);
		(*text)[(*len)++] = '\n';
	}
	fmt_wipe(key, sizeof key);
	fmt_hmac_key_free(&pw);
	return k;
}

/* The encrypted bytes of an X25519 secret key file: its passphrase as o says, then the key. */
static fmt_kind open_sealed(const uint8_t *blob, size_t n, const fmt_pass_opts *o, uint8_t *sk, int *theirs,
			    fmt_err *e)
{
	fmt_hmac_key pw = { 0 };
	uint8_t key[FMT_AEAD_KEY], tag[FMT_AEAD_TAG];
	if (blob[4] != X25519_ENC_VERSION)
		return fmt_fail(e, FMT_UNSUPPORTED, "an encrypted X25519 secret key of version %u; this "
				"build reads version %u", blob[4], X25519_ENC_VERSION);
	if (n != X25519_ENC_LEN)
		return fmt_fail(e, FMT_INVALID_FORMAT, "an encrypted X25519 secret key holds %u bytes, this "
				"one %zu (truncated or altered)", (unsigned)X25519_ENC_LEN, n);
	fmt_kind k = fmt_key_passphrase(o, &pw, theirs, e);
	if (k == FMT_OK)
		k = enc_key(o, &pw, blob + X25519_ENC_SALT, key, e);
	memcpy(tag, blob + X25519_ENC_TAG, sizeof tag);
	if (k == FMT_OK && enc_gcm(key, blob + X25519_ENC_NONCE, 1, blob + X25519_ENC_KEY, sk, tag, e) != FMT_OK)
		k = fmt_fail(e, FMT_DECRYPTION, "wrong passphrase for the X25519 secret key (or the key "
			     "file was altered)");
	fmt_wipe(key, sizeof key);
	fmt_hmac_key_free(&pw);
	return k;
}

/* "untrusted comment: ...\n" then base64 of exactly 32 bytes (unencrypted), or of an encrypted
 * key (X25519_ENC_MAGIC...). */
static fmt_kind parse_secret(const uint8_t *text, size_t n, const fmt_pass_opts *o, uint8_t *sk, int *theirs,
			     fmt_err *e)
{
	const uint8_t *nl = memchr(text, '\n', n);
	uint8_t blob[2 * X25519_ENC_LEN];
	size_t b64_len, got = 0;
	if (!nl || (size_t)(nl - text) < strlen(UNTRUSTED) || memcmp(text, UNTRUSTED, strlen(UNTRUSTED)) != 0)
		goto bad;
	b64_len = n - (size_t)(nl + 1 - text);
	if (sodium_base642bin(blob, sizeof blob, (const char *)nl + 1, b64_len, "\r\n", &got, NULL,
			      sodium_base64_VARIANT_ORIGINAL) != 0)
		goto bad;
	fmt_kind k = FMT_OK;
	if (got == FMT_X25519_LEN)
		memcpy(sk, blob, FMT_X25519_LEN);
	else if (got > 4 && memcmp(blob, X25519_ENC_MAGIC, sizeof X25519_ENC_MAGIC) == 0)
		k = open_sealed(blob, got, o, sk, theirs, e);
	else
		k = fmt_fail(e, FMT_INVALID_FORMAT, "not an X25519 secret key file (%zu bytes under the "
			     "comment, neither a 32-byte key nor an encrypted one)", got);
	fmt_wipe(blob, sizeof blob);
	return k;
bad:
	return fmt_fail(e, FMT_INVALID_FORMAT, "not an X25519 secret key file (fmt-sign keygen --x25519 makes one)");
}

fmt_kind fmt_x25519_secret_load(const char *path, const fmt_pass_opts *o, fmt_x25519_pair *out,
				fmt_err *e)
{
	struct stat st;
	uint8_t *text = NULL;
	size_t got = 0;
	int theirs = 0; /* the passphrase's file or variable failed */
	memset(out, 0, sizeof *out);
	fmt_kind k = fmt_crypto_sodium_init(e);
	if (k != FMT_OK)
		return k;
	if (fmt_key_path_check(path, "the identity", e) != FMT_OK)
		return e->kind;
	k = FMT_INVALID_FORMAT; /* until the key is read */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		fmt_fail(e, FMT_IO, "cannot open the identity: %s", strerror(errno));
		goto out;
	}
	if (fmt_small_check(fd, 0, "the identity", &st, e) != FMT_OK)
		goto out;
	if (fmt_key_mode_check(&st, "the identity", e) != FMT_OK)
		goto out;
	text = sodium_malloc(KEY_FILE_MAX);
	out->sk = sodium_malloc(FMT_X25519_LEN);
	if (!text || !out->sk) {
		fmt_fail(e, FMT_IO, "out of secure memory");
		goto out;
	}
	if (fmt_small_read(fd, text, KEY_FILE_MAX, &got, e) != FMT_OK)
		goto out;
	if (got == KEY_FILE_MAX) {
		fmt_fail(e, FMT_INVALID_FORMAT, "not an X25519 secret key file (too long)");
		goto out;
	}
	if (parse_secret(text, got, o, out->sk, &theirs, e) == FMT_OK) {
		fmt_x25519_public_of(out->sk, out->pk);
		k = FMT_OK;
	}
out:
	if (fd >= 0)
		close(fd);
	if (text)
		sodium_free(text);
	if (k != FMT_OK) {
		fmt_x25519_free(out);
		if (!theirs)
			fmt_err_file(e, path);
		return e->kind;
	}
	return FMT_OK;
}

fmt_kind fmt_decrypt_keys_load(const fmt_decrypt_opts *o, fmt_decrypt_keys *dk, fmt_keyset *ks,
			       fmt_err *e)
{
	fmt_kind k = FMT_OK;
	memset(dk, 0, sizeof *dk);
	dk->ask = o->ask;
	if (o->password_file && o->password_env)
		return fmt_fail(e, FMT_USAGE, "give only one of --password-file and --password-env");
	if (o->password_file)
		k = fmt_password_from_file(o->password_file, &dk->password, e);
	else if (o->password_env)
		k = fmt_password_from_env(o->password_env, &dk->password, e);
	dk->has_password = k == FMT_OK && (o->password_file || o->password_env);
	if (k == FMT_OK && o->identity) {
		k = fmt_x25519_secret_load(o->identity, &o->passphrase, &dk->identity, e);
		dk->has_identity = k == FMT_OK;
	}
	if (k != FMT_OK) {
		fmt_decrypt_keys_free(dk);
		return k;
	}
	if (dk->has_password)
		ks->password = &dk->password;
	if (dk->has_identity)
		ks->x25519 = &dk->identity;
	return FMT_OK;
}

fmt_kind fmt_decrypt_keys_prompt(fmt_decrypt_keys *dk, fmt_keyset *ks, fmt_err *e)
{
	if (dk->has_password) {
		ks->password = &dk->password;
		return FMT_OK;
	}
	fmt_kind k = dk->ask ? dk->ask(&dk->password, e) : FMT_OK;
	if (k != FMT_OK || !dk->password.bytes)
		return k;
	dk->has_password = 1;
	ks->password = &dk->password;
	return FMT_OK;
}

void fmt_decrypt_keys_free(fmt_decrypt_keys *dk)
{
	fmt_password_free(&dk->password);
	fmt_x25519_free(&dk->identity);
	dk->has_password = dk->has_identity = 0;
}
