/* minisign's key and signature file formats (fmt/minisign.h), with libsodium. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "crypto_internal.h"
#include "fmt/io.h"
#include "fmt/minisign.h"

#define ALG_LEGACY "Ed"
#define ALG_HASHED "ED"
#define KDF_SCRYPT "Sc"
#define CHK_BLAKE2 "B2"
#define UNTRUSTED_PREFIX "untrusted comment: "
#define TRUSTED_PREFIX "trusted comment: "
#define UNTRUSTED_MAX 1024u

/* Secret key record offsets (158 bytes in all). */
enum {
	SK_SIG_ALG = 0, SK_KDF_ALG = 2, SK_CHK_ALG = 4, SK_SALT = 6,
	SK_OPS = SK_SALT + crypto_pwhash_scryptsalsa208sha256_SALTBYTES,
	SK_MEM = SK_OPS + 8, SK_KEYNUM = SK_MEM + 8, SK_SK = SK_KEYNUM + FMT_MS_KEYNUM,
	SK_CHK = SK_SK + FMT_MS_SK, SK_LEN = SK_CHK + crypto_generichash_BYTES
};
#define PK_LEN (2 + FMT_MS_KEYNUM + FMT_MS_PK)
#define SIG_LEN (2 + FMT_MS_KEYNUM + FMT_MS_SIG)
/* A hostile key file must not make scrypt take hours or all memory: twice what minisign writes. */
#define OPS_MAX (2ull * crypto_pwhash_scryptsalsa208sha256_OPSLIMIT_SENSITIVE)
#define MEM_MAX (2ull * crypto_pwhash_scryptsalsa208sha256_MEMLIMIT_SENSITIVE)

static uint64_t load_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void store_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

void fmt_ms_key_id(const uint8_t keynum[FMT_MS_KEYNUM], char out[FMT_MS_KEY_ID_HEX])
{
	snprintf(out, FMT_MS_KEY_ID_HEX, "%016llX", (unsigned long long)load_le64(keynum));
}

void fmt_ms_secret_free(fmt_ms_secret *s)
{
	if (s->sk)
		sodium_free(s->sk);
	s->sk = NULL;
}

/* The lines of a small text file: up to max lines, each without its "\n" (and "\r"). A text
 * with more lines (other than one final newline) is refused. */
typedef struct line { const char *p; size_t n; } line;

static int split_lines(const char *text, size_t len, line *lines, size_t want)
{
	size_t i = 0, start = 0;
	for (size_t pos = 0; pos <= len; pos++) {
		if (pos < len && text[pos] != '\n')
			continue;
		if (pos == len && start == len)
			break; /* after the final newline */
		if (i == want)
			return -1;
		size_t n = pos - start;
		if (n > 0 && text[start + n - 1] == '\r')
			n--;
		lines[i].p = text + start;
		lines[i].n = n;
		i++;
		start = pos + 1;
	}
	return i == want ? 0 : -1;
}

static int has_prefix(const line *l, const char *prefix)
{
	size_t n = strlen(prefix);
	return l->n >= n && memcmp(l->p, prefix, n) == 0;
}

/* Decode a base64 line into exactly n bytes (libsodium refuses stray characters and non-zero
 * padding bits, so every other spelling of the same bytes is refused too). */
static int decode_exact(const line *l, uint8_t *out, size_t n)
{
	size_t got = 0;
	if (l->n == 0 || l->n != sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL) - 1)
		return -1;
	if (sodium_base642bin(out, n, l->p, l->n, NULL, &got, NULL, sodium_base64_VARIANT_ORIGINAL) != 0)
		return -1;
	return got == n ? 0 : -1;
}

/* "untrusted comment: COMMENT\n" + base64(bin) + "\n" into a buffer from alloc. */
static size_t comment_b64_len(const char *comment, size_t bin_len)
{
	return strlen(UNTRUSTED_PREFIX) + strlen(comment) + 1 +
	       sodium_base64_ENCODED_LEN(bin_len, sodium_base64_VARIANT_ORIGINAL) - 1 + 1;
}

static size_t put_comment_b64(char *out, const char *comment, const uint8_t *bin, size_t bin_len)
{
	size_t n = (size_t)sprintf(out, "%s%s\n", UNTRUSTED_PREFIX, comment);
	size_t b64 = sodium_base64_ENCODED_LEN(bin_len, sodium_base64_VARIANT_ORIGINAL);
	sodium_bin2base64(out + n, b64, bin, bin_len, sodium_base64_VARIANT_ORIGINAL);
	n += b64 - 1;
	out[n++] = '\n';
	out[n] = '\0';
	return n;
}

fmt_kind fmt_ms_keygen(fmt_ms_public *pub, fmt_ms_secret *sec, fmt_err *e)
{
	memset(sec, 0, sizeof *sec);
	fmt_kind k = fmt_crypto_sodium_init(e);
	if (k != FMT_OK)
		return k;
	sec->sk = sodium_malloc(FMT_MS_SK);
	if (!sec->sk)
		return fmt_fail(e, FMT_IO, "out of secure memory for the secret key");
	crypto_sign_keypair(pub->pk, sec->sk);
	randombytes_buf(pub->keynum, sizeof pub->keynum);
	memcpy(sec->keynum, pub->keynum, sizeof sec->keynum);
	return FMT_OK;
}

fmt_kind fmt_ms_public_text(const fmt_ms_public *pub, char **text, size_t *len, fmt_err *e)
{
	uint8_t bin[PK_LEN];
	char id[FMT_MS_KEY_ID_HEX], comment[64];
	memcpy(bin, ALG_LEGACY, 2);
	memcpy(bin + 2, pub->keynum, FMT_MS_KEYNUM);
	memcpy(bin + 2 + FMT_MS_KEYNUM, pub->pk, FMT_MS_PK);
	fmt_ms_key_id(pub->keynum, id);
	snprintf(comment, sizeof comment, "minisign public key %s", id);
	*text = malloc(comment_b64_len(comment, sizeof bin) + 1);
	if (!*text)
		return fmt_fail(e, FMT_IO, "out of memory");
	*len = put_comment_b64(*text, comment, bin, sizeof bin);
	return FMT_OK;
}

static fmt_kind public_from_line(const line *l, fmt_ms_public *out, fmt_err *e)
{
	uint8_t bin[PK_LEN];
	if (decode_exact(l, bin, sizeof bin) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "the public key is not base64 of %d bytes", PK_LEN);
	if (memcmp(bin, ALG_LEGACY, 2) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "the public key is not an Ed25519 key (no \"Ed\")");
	memcpy(out->keynum, bin + 2, FMT_MS_KEYNUM);
	memcpy(out->pk, bin + 2 + FMT_MS_KEYNUM, FMT_MS_PK);
	return FMT_OK;
}

fmt_kind fmt_ms_public_parse(const char *text, size_t len, int base64_only, fmt_ms_public *out,
			     fmt_err *e)
{
	line l[2];
	if (base64_only) {
		l[0].p = text;
		l[0].n = len;
		return public_from_line(&l[0], out, e);
	}
	if (split_lines(text, len, l, 2) != 0 || !has_prefix(&l[0], UNTRUSTED_PREFIX))
		return fmt_fail(e, FMT_INVALID_FORMAT, "not a minisign public key file (expected an "
				"\"untrusted comment:\" line and a base64 line)");
	return public_from_line(&l[1], out, e);
}

/* The checksum minisign keeps in a secret key: BLAKE2b-256(sig_alg || key id || secret key). */
static void secret_checksum(const uint8_t *rec, uint8_t out[crypto_generichash_BYTES])
{
	crypto_generichash_state st;
	crypto_generichash_init(&st, NULL, 0, crypto_generichash_BYTES);
	crypto_generichash_update(&st, rec + SK_SIG_ALG, 2);
	crypto_generichash_update(&st, rec + SK_KEYNUM, FMT_MS_KEYNUM);
	crypto_generichash_update(&st, rec + SK_SK, FMT_MS_SK);
	crypto_generichash_final(&st, out, crypto_generichash_BYTES);
	sodium_memzero(&st, sizeof st);
}

/* XOR the key id, secret key and checksum with scrypt's stream for pw (its own inverse). */
static fmt_kind scrypt_xor(uint8_t *rec, const uint8_t *pw, size_t pw_len, fmt_err *e)
{
	const size_t n = SK_LEN - SK_KEYNUM;
	uint8_t *stream = sodium_malloc(n);
	if (!stream)
		return fmt_fail(e, FMT_IO, "out of secure memory");
	if (crypto_pwhash_scryptsalsa208sha256(stream, n, (const char *)pw, pw_len, rec + SK_SALT,
					       load_le64(rec + SK_OPS), (size_t)load_le64(rec + SK_MEM)) != 0) {
		sodium_free(stream);
		return fmt_fail(e, FMT_IO, "scrypt: out of memory (the key asks for %llu MiB)",
				(unsigned long long)(load_le64(rec + SK_MEM) >> 20));
	}
	for (size_t i = 0; i < n; i++)
		rec[SK_KEYNUM + i] ^= stream[i];
	sodium_free(stream);
	return FMT_OK;
}

fmt_kind fmt_ms_secret_text(const fmt_ms_secret *sec, const uint8_t *pw, size_t pw_len,
			    uint8_t **text, size_t *len, fmt_err *e)
{
	*text = NULL;
	fmt_kind k = fmt_crypto_sodium_init(e);
	if (k != FMT_OK)
		return k;
	uint8_t *rec = sodium_malloc(SK_LEN);
	if (!rec)
		return fmt_fail(e, FMT_IO, "out of secure memory");
	memset(rec, 0, SK_LEN);
	memcpy(rec + SK_SIG_ALG, ALG_LEGACY, 2);
	memcpy(rec + SK_CHK_ALG, CHK_BLAKE2, 2);
	memcpy(rec + SK_KEYNUM, sec->keynum, FMT_MS_KEYNUM);
	memcpy(rec + SK_SK, sec->sk, FMT_MS_SK);
	secret_checksum(rec, rec + SK_CHK);
	if (pw) {
		memcpy(rec + SK_KDF_ALG, KDF_SCRYPT, 2);
		randombytes_buf(rec + SK_SALT, crypto_pwhash_scryptsalsa208sha256_SALTBYTES);
		store_le64(rec + SK_OPS, crypto_pwhash_scryptsalsa208sha256_OPSLIMIT_SENSITIVE);
		store_le64(rec + SK_MEM, crypto_pwhash_scryptsalsa208sha256_MEMLIMIT_SENSITIVE);
		k = scrypt_xor(rec, pw, pw_len, e);
	}
	const char *comment = pw ? "minisign encrypted secret key" : "minisign secret key (not encrypted)";
	size_t cap = comment_b64_len(comment, SK_LEN) + 1;
	if (k == FMT_OK && !(*text = sodium_malloc(cap)))
		k = fmt_fail(e, FMT_IO, "out of secure memory");
	if (k == FMT_OK)
		*len = put_comment_b64((char *)*text, comment, rec, SK_LEN);
	sodium_free(rec);
	return k;
}

/* Decode a secret key file's record into rec (SK_LEN bytes). */
static int secret_record(const uint8_t *text, size_t len, uint8_t *rec)
{
	line l[2];
	if (split_lines((const char *)text, len, l, 2) != 0 || !has_prefix(&l[0], UNTRUSTED_PREFIX))
		return -1;
	if (decode_exact(&l[1], rec, SK_LEN) != 0)
		return -1;
	return 0;
}

static const uint8_t no_kdf[2] = { 0, 0 };

int fmt_ms_secret_encrypted(const uint8_t *text, size_t len)
{
	if (sodium_init() < 0)
		return -1;
	uint8_t *rec = sodium_malloc(SK_LEN);
	int r = -1;
	if (rec && secret_record(text, len, rec) == 0)
		r = memcmp(rec + SK_KDF_ALG, KDF_SCRYPT, 2) == 0 ? 1
		  : memcmp(rec + SK_KDF_ALG, no_kdf, 2) == 0 ? 0 : -1;
	if (rec)
		sodium_free(rec);
	return r;
}

static fmt_kind check_secret_record(uint8_t *rec, const uint8_t *pw, size_t pw_len, fmt_err *e)
{
	if (memcmp(rec + SK_SIG_ALG, ALG_LEGACY, 2) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "not an Ed25519 secret key (no \"Ed\")");
	if (memcmp(rec + SK_CHK_ALG, CHK_BLAKE2, 2) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "unknown checksum algorithm in the secret key");
	int encrypted = memcmp(rec + SK_KDF_ALG, KDF_SCRYPT, 2) == 0;
	if (!encrypted && memcmp(rec + SK_KDF_ALG, no_kdf, 2) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "unknown key derivation in the secret key");
	if (encrypted) {
		if (!pw)
			return fmt_fail(e, FMT_USAGE, "the secret key is encrypted: a passphrase is needed");
		uint64_t ops = load_le64(rec + SK_OPS), mem = load_le64(rec + SK_MEM);
		if (ops == 0 || mem == 0 || ops > OPS_MAX || mem > MEM_MAX)
			return fmt_fail(e, FMT_INVALID_FORMAT, "the secret key's scrypt limits (ops %llu, "
					"memory %llu) are out of range", (unsigned long long)ops,
					(unsigned long long)mem);
		fmt_kind k = scrypt_xor(rec, pw, pw_len, e);
		if (k != FMT_OK)
			return k;
	}
	uint8_t chk[crypto_generichash_BYTES];
	secret_checksum(rec, chk);
	/* minisign 0.11 leaves the checksum of a key made without a passphrase zero. */
	int ok = sodium_memcmp(chk, rec + SK_CHK, sizeof chk) == 0 ||
		 (!encrypted && sodium_is_zero(rec + SK_CHK, sizeof chk));
	sodium_memzero(chk, sizeof chk);
	if (!ok)
		return encrypted ? fmt_fail(e, FMT_DECRYPTION, "wrong passphrase for the secret key "
					    "(its checksum does not match)")
				 : fmt_fail(e, FMT_INVALID_FORMAT, "the secret key's checksum does not match");
	return FMT_OK;
}

fmt_kind fmt_ms_secret_parse(const uint8_t *text, size_t len, const uint8_t *pw, size_t pw_len,
			     fmt_ms_secret *out, fmt_err *e)
{
	memset(out, 0, sizeof *out);
	fmt_kind k = fmt_crypto_sodium_init(e);
	if (k != FMT_OK)
		return k;
	uint8_t *rec = sodium_malloc(SK_LEN);
	if (!rec)
		return fmt_fail(e, FMT_IO, "out of secure memory");
	if (secret_record(text, len, rec) != 0)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "not a minisign secret key file (expected an "
			     "\"untrusted comment:\" line and base64 of %d bytes)", SK_LEN);
	if (k == FMT_OK)
		k = check_secret_record(rec, pw, pw_len, e);
	if (k == FMT_OK && !(out->sk = sodium_malloc(FMT_MS_SK)))
		k = fmt_fail(e, FMT_IO, "out of secure memory");
	if (k == FMT_OK) {
		memcpy(out->keynum, rec + SK_KEYNUM, FMT_MS_KEYNUM);
		memcpy(out->sk, rec + SK_SK, FMT_MS_SK);
	}
	sodium_free(rec);
	return k;
}

fmt_kind fmt_ms_hash_file(const char *path, uint8_t out[FMT_MS_HASH], fmt_err *e)
{
	fmt_kind k = fmt_crypto_sodium_init(e);
	if (k != FMT_OK)
		return k;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	if (fd < 0)
		return fmt_fail(e, FMT_IO, "cannot open: %s", strerror(errno));
	if ((k = fstat(fd, &sb) != 0 ? fmt_fail(e, FMT_IO, "cannot stat: %s", strerror(errno))
				     : fmt_input_check(&sb, e)) != FMT_OK) {
		close(fd);
		return k;
	}
	crypto_generichash_state st;
	crypto_generichash_init(&st, NULL, 0, FMT_MS_HASH);
	uint8_t *buf = malloc(1u << 16);
	if (!buf) {
		close(fd);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	for (;;) {
		ssize_t got = read(fd, buf, 1u << 16);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			k = fmt_fail(e, FMT_IO, "read: %s", strerror(errno));
			break;
		}
		if (got == 0)
			break;
		crypto_generichash_update(&st, buf, (size_t)got);
	}
	free(buf);
	close(fd);
	if (k == FMT_OK)
		crypto_generichash_final(&st, out, FMT_MS_HASH);
	return k;
}

fmt_kind fmt_ms_sign(const fmt_ms_secret *sec, const uint8_t hash[FMT_MS_HASH], const char *trusted,
		     char **text, size_t *len, fmt_err *e)
{
	size_t tlen = strlen(trusted);
	*text = NULL;
	if (tlen > FMT_MS_TRUSTED_MAX || memchr(trusted, '\n', tlen) || memchr(trusted, '\r', tlen))
		return fmt_fail(e, FMT_USAGE, "a trusted comment is one line of at most %u bytes",
				FMT_MS_TRUSTED_MAX);
	uint8_t bin[SIG_LEN];
	memcpy(bin, ALG_HASHED, 2);
	memcpy(bin + 2, sec->keynum, FMT_MS_KEYNUM);
	crypto_sign_detached(bin + 2 + FMT_MS_KEYNUM, NULL, hash, FMT_MS_HASH, sec->sk);
	uint8_t *global_msg = malloc(FMT_MS_SIG + tlen);
	if (!global_msg)
		return fmt_fail(e, FMT_IO, "out of memory");
	memcpy(global_msg, bin + 2 + FMT_MS_KEYNUM, FMT_MS_SIG);
	memcpy(global_msg + FMT_MS_SIG, trusted, tlen);
	uint8_t global[FMT_MS_SIG];
	crypto_sign_detached(global, NULL, global_msg, FMT_MS_SIG + tlen, sec->sk);
	free(global_msg);
	const char *comment = "signature from fmtkit (minisign format) secret key";
	size_t cap = comment_b64_len(comment, SIG_LEN) + strlen(TRUSTED_PREFIX) + tlen + 1 +
		     sodium_base64_ENCODED_LEN(FMT_MS_SIG, sodium_base64_VARIANT_ORIGINAL) + 1;
	char *out = malloc(cap);
	if (!out)
		return fmt_fail(e, FMT_IO, "out of memory");
	size_t n = put_comment_b64(out, comment, bin, SIG_LEN);
	n += (size_t)sprintf(out + n, "%s%s\n", TRUSTED_PREFIX, trusted);
	size_t b64 = sodium_base64_ENCODED_LEN(FMT_MS_SIG, sodium_base64_VARIANT_ORIGINAL);
	sodium_bin2base64(out + n, b64, global, FMT_MS_SIG, sodium_base64_VARIANT_ORIGINAL);
	n += b64 - 1;
	out[n++] = '\n';
	out[n] = '\0';
	*text = out;
	*len = n;
	return FMT_OK;
}

fmt_kind fmt_ms_sig_parse(const char *text, size_t len, fmt_ms_sig *out, fmt_err *e)
{
	line l[4];
	uint8_t bin[SIG_LEN];
	memset(out, 0, sizeof *out);
	fmt_kind k = fmt_crypto_sodium_init(e);
	if (k != FMT_OK)
		return k;
	if (split_lines(text, len, l, 4) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "a signature file has exactly four lines");
	/* minisign reads lines as C strings: a NUL byte would cut a comment where we would not. */
	if (memchr(text, '\0', len))
		return fmt_fail(e, FMT_INVALID_FORMAT, "a signature file is text: it holds a NUL byte");
	if (!has_prefix(&l[0], UNTRUSTED_PREFIX) || l[0].n > strlen(UNTRUSTED_PREFIX) + UNTRUSTED_MAX)
		return fmt_fail(e, FMT_INVALID_FORMAT, "line 1 is not an \"untrusted comment:\" line "
				"of at most %u bytes", UNTRUSTED_MAX);
	if (decode_exact(&l[1], bin, sizeof bin) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "line 2 is not base64 of %d bytes", SIG_LEN);
	if (memcmp(bin, ALG_HASHED, 2) == 0)
		out->prehashed = 1;
	else if (memcmp(bin, ALG_LEGACY, 2) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "unknown signature algorithm (expected \"ED\" or \"Ed\")");
	memcpy(out->keynum, bin + 2, FMT_MS_KEYNUM);
	memcpy(out->sig, bin + 2 + FMT_MS_KEYNUM, FMT_MS_SIG);
	size_t tp = strlen(TRUSTED_PREFIX);
	if (!has_prefix(&l[2], TRUSTED_PREFIX) || l[2].n - tp > FMT_MS_TRUSTED_MAX)
		return fmt_fail(e, FMT_INVALID_FORMAT, "line 3 is not a \"trusted comment:\" line of at "
				"most %u bytes", FMT_MS_TRUSTED_MAX);
	out->trusted_len = l[2].n - tp;
	memcpy(out->trusted, l[2].p + tp, out->trusted_len);
	out->trusted[out->trusted_len] = '\0';
	if (decode_exact(&l[3], out->global_sig, FMT_MS_SIG) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "line 4 is not base64 of %d bytes", FMT_MS_SIG);
	return FMT_OK;
}

/* Ed25519 over the whole file (the legacy "Ed" form): the file is mapped. */
static int verify_legacy(const fmt_ms_sig *sig, const fmt_ms_public *pub, const char *path, fmt_err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		fmt_fail(e, FMT_IO, "cannot open: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		if (fmt_input_check(&st, e) == FMT_OK)
			fmt_fail(e, FMT_UNSUPPORTED, "a legacy (\"Ed\") signature covers the whole file, mapped: "
				 "not a pipe");
		close(fd);
		return -1;
	}
	size_t n = (size_t)st.st_size;
	const uint8_t *msg = (const uint8_t *)"";
	void *map = NULL;
	if (n > 0) {
		map = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			fmt_fail(e, FMT_IO, "cannot map: %s", strerror(errno));
			close(fd);
			return -1;
		}
		msg = map;
		fmt_map_watch(map, n, path);
	}
	close(fd);
	int r = crypto_sign_verify_detached(sig->sig, msg, n, pub->pk) == 0 ? 1 : 0;
	if (map) {
		fmt_map_unwatch(map);
		munmap(map, n);
	}
	return r;
}

fmt_kind fmt_ms_verify_file(const fmt_ms_sig *sig, const fmt_ms_public *keys, size_t n,
			    const char *path, size_t *which, fmt_err *e)
{
	char id[FMT_MS_KEY_ID_HEX];
	fmt_kind k = fmt_crypto_sodium_init(e);
	if (k != FMT_OK)
		return k;
	size_t i = 0;
	while (i < n && sodium_memcmp(keys[i].keynum, sig->keynum, FMT_MS_KEYNUM) != 0)
		i++;
	fmt_ms_key_id(sig->keynum, id);
	if (i == n)
		return fmt_fail(e, FMT_SIGNATURE, n == 1 ? "signed by key %s, not by the key given "
				"(wrong key id)" : "signed by key %s, which is not a trusted key", id);
	*which = i;
	int good;
	if (sig->prehashed) {
		uint8_t hash[FMT_MS_HASH];
		k = fmt_ms_hash_file(path, hash, e);
		if (k != FMT_OK)
			return k;
		good = crypto_sign_verify_detached(sig->sig, hash, sizeof hash, keys[i].pk) == 0;
	} else {
		good = verify_legacy(sig, &keys[i], path, e);
		if (good < 0)
			return e->kind;
	}
	if (!good)
		return fmt_fail(e, FMT_SIGNATURE, "bad signature by key %s: the file or the signature "
				"was altered", id);
	uint8_t *global_msg = malloc(FMT_MS_SIG + sig->trusted_len);
	if (!global_msg)
		return fmt_fail(e, FMT_IO, "out of memory");
	memcpy(global_msg, sig->sig, FMT_MS_SIG);
	memcpy(global_msg + FMT_MS_SIG, sig->trusted, sig->trusted_len);
	good = crypto_sign_verify_detached(sig->global_sig, global_msg, FMT_MS_SIG + sig->trusted_len,
					   keys[i].pk) == 0;
	free(global_msg);
	if (!good)
		return fmt_fail(e, FMT_SIGNATURE, "bad global signature by key %s: the trusted comment "
				"was altered", id);
	return FMT_OK;
}

fmt_kind fmt_x25519_keygen(fmt_x25519_pair *out, fmt_err *e)
{
	memset(out, 0, sizeof *out);
	fmt_kind k = fmt_crypto_sodium_init(e);
	if (k != FMT_OK)
		return k;
	out->sk = sodium_malloc(crypto_box_SECRETKEYBYTES);
	if (!out->sk)
		return fmt_fail(e, FMT_IO, "out of secure memory");
	crypto_box_keypair(out->pk, out->sk);
	return FMT_OK;
}

void fmt_x25519_free(fmt_x25519_pair *p)
{
	if (p->sk)
		sodium_free(p->sk);
	p->sk = NULL;
}

void fmt_x25519_key_id(const uint8_t pk[32], char out[FMT_MS_KEY_ID_HEX])
{
	uint8_t h[crypto_generichash_BYTES];
	crypto_generichash(h, sizeof h, pk, 32, NULL, 0);
	fmt_ms_key_id(h, out);
}

fmt_kind fmt_x25519_public_text(const fmt_x25519_pair *p, char **text, size_t *len, fmt_err *e)
{
	char id[FMT_MS_KEY_ID_HEX], comment[64];
	fmt_x25519_key_id(p->pk, id);
	snprintf(comment, sizeof comment, "fmtkit x25519 public key %s", id);
	*text = malloc(comment_b64_len(comment, 32) + 1);
	if (!*text)
		return fmt_fail(e, FMT_IO, "out of memory");
	*len = put_comment_b64(*text, comment, p->pk, 32);
	return FMT_OK;
}

fmt_kind fmt_x25519_secret_text(const fmt_x25519_pair *p, uint8_t **text, size_t *len, fmt_err *e)
{
	const char *comment = "fmtkit x25519 secret key";
	size_t cap = comment_b64_len(comment, 32) + 1;
	*text = sodium_malloc(cap);
	if (!*text)
		return fmt_fail(e, FMT_IO, "out of secure memory");
	*len = put_comment_b64((char *)*text, comment, p->sk, 32);
	return FMT_OK;
}

fmt_kind fmt_x25519_public_parse(const char *text, size_t len, uint8_t pk[32], fmt_err *e)
{
	line l[2];
	if (fmt_crypto_sodium_init(e) != FMT_OK)
		return e->kind;
	if (split_lines(text, len, l, 2) != 0 || !has_prefix(&l[0], UNTRUSTED_PREFIX) ||
	    decode_exact(&l[1], pk, 32) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "not an X25519 public key file (an \"untrusted "
				"comment:\" line and base64 of 32 bytes)");
	return FMT_OK;
}
