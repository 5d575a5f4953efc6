/* Keys from files and options (fmt/minisign.h): the public keys a user trusts, secret keys
 * with their passphrase, pure Ed25519 over bytes in memory. Shared by fmt-sign, fmt-verify and
 * fmt-convert, so each loads keys the same way. */
#include <dirent.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "crypto_internal.h"
#include "fmt/io.h"
#include "fmt/minisign.h"

/* flags: FMT_SMALL_NAMED for -p's file; a key found in --trusted-keys DIR or at the default
 * path is read only when it is a regular file (a FIFO planted there must not hang a check). */
static fmt_kind public_load(const char *path, unsigned flags, fmt_ms_public *pub, fmt_err *e)
{
	char *text;
	size_t len;
	fmt_kind k = fmt_read_small(path, flags, FMT_MS_FILE_MAX, &text, &len, e);
	if (k == FMT_OK) {
		k = fmt_ms_public_parse(text, len, 0, pub, e);
		uint8_t x25519[32];
		fmt_err ignored;
		if (k != FMT_OK && fmt_x25519_public_parse(text, len, x25519, &ignored) == FMT_OK)
			k = fmt_fail(e, FMT_USAGE, "an X25519 encryption key (fmt-sign keygen --x25519, for --encrypt-to), "
				     "not an Ed25519 key that signatures are checked with");
		free(text);
	}
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}

fmt_kind fmt_ms_public_load(const char *path, fmt_ms_public *pub, fmt_err *e)
{
	return public_load(path, FMT_SMALL_NAMED, pub, e);
}

int fmt_trust_opts_given(const fmt_trust_opts *o)
{
	return o && (o->pubkey || o->pubkey_b64 || o->trusted_dir);
}

static fmt_kind trust_add(fmt_trust_list *t, fmt_ms_public **slot, fmt_err *e)
{
	fmt_ms_public *grown = realloc(t->keys, (t->n + 1) * sizeof *t->keys);
	if (!grown)
		return fmt_fail(e, FMT_IO, "out of memory");
	t->keys = grown;
	*slot = &t->keys[t->n];
	return FMT_OK;
}

static int is_pub_name(const char *name)
{
	size_t len = strlen(name);
	return len >= 5 && name[0] != '.' && strcmp(name + len - 4, ".pub") == 0;
}

static int name_order(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int pub_filter(const struct dirent *d)
{
	return is_pub_name(d->d_name);
}

/* Every *.pub in dir, in name order (messages and results do not depend on readdir's order). */
static fmt_kind trust_dir(const char *dir, fmt_trust_list *t, fmt_err *e)
{
	struct dirent **names = NULL;
	int n = scandir(dir, &names, pub_filter, name_order);
	if (n < 0) {
		fmt_fail(e, FMT_IO, "cannot read the trusted keys directory: %s", strerror(errno));
		fmt_err_file(e, dir);
		return FMT_IO;
	}
	fmt_kind k = n == 0 ? fmt_fail(e, FMT_USAGE, "no *.pub key file in the trusted keys directory %s", dir)
			    : FMT_OK;
	for (int i = 0; i < n; i++) {
		if (k == FMT_OK) {
			size_t plen = strlen(dir) + strlen(names[i]->d_name) + 2;
			char *p = malloc(plen);
			fmt_ms_public *slot = NULL;
			k = p ? trust_add(t, &slot, e) : fmt_fail(e, FMT_IO, "out of memory");
			if (k == FMT_OK) {
				snprintf(p, plen, "%s/%s", dir, names[i]->d_name);
				k = public_load(p, 0, slot, e);
				if (k == FMT_OK)
					t->n++;
			}
			free(p);
		}
		free(names[i]);
	}
	free(names);
	return k;
}

fmt_kind fmt_trust_load(const fmt_trust_opts *o, int default_key, fmt_trust_list *out, fmt_err *e)
{
	fmt_ms_public *slot = NULL;
	fmt_kind k = FMT_OK;
	out->keys = NULL;
	out->n = 0;
	if (o->pubkey_b64) {
		if ((k = trust_add(out, &slot, e)) != FMT_OK)
			return k;
		if ((k = fmt_ms_public_parse(o->pubkey_b64, strlen(o->pubkey_b64), 1, slot, e)) != FMT_OK)
			return k;
		out->n++;
	}
	if (o->pubkey || (default_key && !fmt_trust_opts_given(o))) {
		char *path = NULL;
		if ((k = trust_add(out, &slot, e)) != FMT_OK)
			return k;
		k = o->pubkey ? ((path = strdup(o->pubkey)) ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory"))
			      : fmt_key_file_path("ed25519.pub", &path, e);
		if (k == FMT_OK)
			k = public_load(path, o->pubkey ? FMT_SMALL_NAMED : 0, slot, e);
		free(path);
		if (k != FMT_OK)
			return k;
		out->n++;
	}
	if (o->trusted_dir)
		k = trust_dir(o->trusted_dir, out, e);
	return k;
}

fmt_kind fmt_trust_guard_dest(const fmt_trust_opts *o, const char *dest, fmt_err *e)
{
	char *dir = fmt_dir_prefix(dest), *own = NULL;
	if (!dir)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_err ignored;        /* no HOME: no per-user key directory to protect */
	if (fmt_key_file_path("", &own, &ignored) != FMT_OK)
		own = NULL;
	const char *here = dir[0] ? dir : ".";
	fmt_kind k = FMT_OK;
	if (o && o->trusted_dir && fmt_same_file(here, o->trusted_dir))
		k = fmt_fail(e, FMT_USAGE, "%s would be written into the trusted keys directory %s (--trusted-keys): "
			     "a file there could become a trusted key", dest, o->trusted_dir);
	else if (own && fmt_same_file(here, own))
		k = fmt_fail(e, FMT_USAGE, "%s would be written into the per-user key directory %s: a file there "
			     "could become a trusted key", dest, own);
	free(own);
	free(dir);
	return k;
}

void fmt_trust_free(fmt_trust_list *t)
{
	free(t->keys);
	t->keys = NULL;
	t->n = 0;
}

fmt_kind fmt_check_keys_load(const fmt_key_opts *ko, const fmt_trust_opts *to, fmt_check_keys *ck,
			     fmt_keyset *ks, fmt_err *e)
{
	memset(ck, 0, sizeof *ck);
	if (fmt_key_opts_given(ko)) {
		fmt_kind k = fmt_key_from_opts(ko, &ck->hmac, e);
		if (k != FMT_OK)
			return k;
		ks->hmac = &ck->hmac;
	}
	if (fmt_trust_opts_given(to)) {
		fmt_kind k = fmt_trust_load(to, 0, &ck->trust, e);
		if (k != FMT_OK)
			return k;
		ks->trusted = ck->trust.keys;
		ks->n_trusted = ck->trust.n;
	}
	return FMT_OK;
}

void fmt_check_keys_free(fmt_check_keys *ck)
{
	fmt_hmac_key_free(&ck->hmac);
	fmt_trust_free(&ck->trust);
}

fmt_kind fmt_ms_check_detached(const char *sig, size_t len, const char *sig_name, const char *path,
			       const fmt_ms_public *keys, size_t n, char id[FMT_MS_KEY_ID_HEX], fmt_err *e)
{
	size_t which = 0;
	fmt_ms_sig *parsed = malloc(sizeof *parsed);
	if (!parsed)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = fmt_ms_sig_parse(sig, len, parsed, e);
	if (k != FMT_OK)
		fmt_err_prefix(e, "%s", sig_name);
	if (k == FMT_OK)
		k = fmt_ms_verify_file(parsed, keys, n, path, &which, e);
	if (k == FMT_OK)
		fmt_ms_key_id(parsed->keynum, id);
	free(parsed);
	return k;
}

const fmt_ms_public *fmt_trust_find_id(const fmt_ms_public *keys, size_t n, const uint8_t keynum[FMT_MS_KEYNUM])
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(keys[i].keynum, keynum, FMT_MS_KEYNUM) == 0)
			return &keys[i];
	return NULL;
}

const fmt_ms_public *fmt_trust_find_pk(const fmt_ms_public *keys, size_t n, const uint8_t pk[FMT_MS_PK])
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(keys[i].pk, pk, FMT_MS_PK) == 0)
			return &keys[i];
	return NULL;
}

fmt_kind fmt_trust_check_embedded(const fmt_ms_public *keys, size_t n, const uint8_t pk[FMT_MS_PK],
				  const void *msg, size_t len, const uint8_t sig[FMT_MS_SIG],
				  char id[FMT_MS_KEY_ID_HEX], fmt_err *e)
{
	char b64[45];
	const fmt_ms_public *pub = fmt_trust_find_pk(keys, n, pk);
	if (!pub) {
		fmt_base64(pk, FMT_MS_PK, b64, sizeof b64);
		return fmt_fail(e, FMT_SIGNATURE, "signed by Ed25519 public key %s, which is not a trusted key "
				"(the block embeds the bare key, without a minisign key id)", b64);
	}
	fmt_ms_key_id(pub->keynum, id);
	if (!fmt_ed25519_verify(pub->pk, msg, len, sig))
		return fmt_fail(e, FMT_SIGNATURE, "bad signature by trusted key %s: the file was changed after "
				"signing", id);
	return FMT_OK;
}

fmt_kind fmt_passphrase(const fmt_pass_opts *o, int confirm, fmt_hmac_key *pw, fmt_err *e)
{
	if (o && o->file)
		return fmt_secret_from_file(o->file, pw, e);
	if (o && o->env)
		return fmt_secret_from_env(o->env, pw, e);
	if (o && o->ask)
		return o->ask(confirm, pw, e);
	memset(pw, 0, sizeof *pw);
	return fmt_fail(e, FMT_USAGE, "the secret key is encrypted: give its passphrase with "
			"--passphrase-file FILE or --passphrase-env NAME");
}

fmt_kind fmt_key_passphrase(const fmt_pass_opts *o, fmt_hmac_key *pw, int *theirs, fmt_err *e)
{
	fmt_kind k = fmt_passphrase(o, 0, pw, e);
	*theirs = k != FMT_OK && o && (o->file || o->env);
	return k;
}

fmt_kind fmt_ms_secret_load(const char *given, const fmt_pass_opts *o, fmt_ms_secret *sec, fmt_err *e)
{
	fmt_hmac_key text = { 0 }, pw = { 0 };
	char *path = NULL;
	int theirs = 0;
	memset(sec, 0, sizeof *sec);
	fmt_kind k = given ? ((path = strdup(given)) ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory"))
			   : fmt_key_file_path("ed25519.key", &path, e);
	/* - : the key piped in (its mode is not checked, as for <(...)) */
	if (k == FMT_OK && strcmp(path, "-") != 0 && access(path, R_OK) != 0)
		k = fmt_fail(e, FMT_IO, "cannot open the secret key: %s", strerror(errno));
	struct stat st;
	if (k == FMT_OK)
		k = fmt_secret_from_file_st(path, &text, &st, e);
	int enc = k == FMT_OK ? fmt_ms_secret_encrypted(text.bytes, text.len) : 0;
	if (k == FMT_OK && enc < 0)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "not a minisign Ed25519 secret key file");
	/* Readable by its owner only, encrypted or not, as every other secret key file (an
	 * encrypted one readable by others is open to offline guessing of its passphrase),
	 * checked on the descriptor that was read, before any passphrase is asked. A pipe (<(...))
	 * and - (piped in) are not checked. */
	if (k == FMT_OK && S_ISREG(st.st_mode) && strcmp(path, "-") != 0)
		k = fmt_key_mode_check(&st, "the secret key", e);
	if (k == FMT_OK && enc == 1)
		k = fmt_key_passphrase(o, &pw, &theirs, e);
	void (*notice)(const char *) = k == FMT_OK && enc == 1 && o ? o->notice : NULL; /* scrypt takes seconds */
	if (notice)
		notice(FMT_PASS_DERIVING);
	if (k == FMT_OK)
		k = fmt_ms_secret_parse(text.bytes, text.len, enc == 1 ? pw.bytes : NULL, pw.len, sec, e);
	if (notice)
		notice(NULL);
	fmt_hmac_key_free(&pw);
	fmt_hmac_key_free(&text);
	if (k != FMT_OK && path && !theirs)
		fmt_err_file(e, path);
	free(path);
	return k;
}

const uint8_t *fmt_ms_secret_pk(const fmt_ms_secret *sec)
{
	return sec->sk + crypto_sign_SECRETKEYBYTES - crypto_sign_PUBLICKEYBYTES;
}

fmt_kind fmt_ed25519_sign(const fmt_ms_secret *sec, const void *msg, size_t n, uint8_t sig[FMT_MS_SIG],
			  fmt_err *e)
{
	fmt_kind k = fmt_crypto_sodium_init(e);
	if (k != FMT_OK)
		return k;
	if (crypto_sign_detached(sig, NULL, msg, n, sec->sk) != 0)
		return fmt_fail(e, FMT_INTERNAL, "Ed25519 signing failed");
	return FMT_OK;
}

int fmt_ed25519_verify(const uint8_t pk[FMT_MS_PK], const void *msg, size_t n, const uint8_t sig[FMT_MS_SIG])
{
	fmt_err e;
	if (fmt_crypto_sodium_init(&e) != FMT_OK)
		return 0;
	return crypto_sign_verify_detached(sig, msg, n, pk) == 0;
}

void fmt_base64(const uint8_t *bin, size_t n, char *out, size_t out_len)
{
	sodium_bin2base64(out, out_len, bin, n, sodium_base64_VARIANT_ORIGINAL);
}

int fmt_unbase64(const char *text, size_t len, uint8_t *out, size_t n)
{
	size_t got = 0;
	const char *end = NULL;
	if (len != sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL) - 1)
		return -1;
	if (sodium_base642bin(out, n, text, len, NULL, &got, &end, sodium_base64_VARIANT_ORIGINAL) != 0)
		return -1;
	if (got != n || end != text + len)
		return -1;
	/* One encoding per value: re-encode and compare (unused low bits of the last group set). */
	char again[256];
	if (len + 1 > sizeof again)
		return -1;
	fmt_base64(out, n, again, sizeof again);
	return memcmp(again, text, len) == 0 ? 0 : -1;
}

int fmt_base64_decode(const char *text, size_t len, uint8_t *out, size_t *got)
{
	const char *end = NULL;
	*got = 0;
	if (sodium_base642bin(out, len / 4 * 3, text, len, NULL, got, &end, sodium_base64_VARIANT_ORIGINAL) != 0)
		return -1;
	return end == text + len ? 0 : -1;
}
