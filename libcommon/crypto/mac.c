/* HMAC-SHA256 and constant-time comparison (libsodium), and the key record's memory. */
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include "crypto_internal.h"

fmt_kind fmt_crypto_sodium_init(fmt_err *e)
{
	if (sodium_init() < 0)
		return fmt_fail(e, FMT_INTERNAL, "libsodium could not be initialised");
	return FMT_OK;
}

void fmt_hmac_sha256(const uint8_t *key, size_t key_len, const void *msg, size_t msg_len,
		     uint8_t out[FMT_SHA256_LEN])
{
	crypto_auth_hmacsha256_state st;
	/* HMAC needs no library state, but libsodium asks for sodium_init before any use. */
	int ready = sodium_init();
	(void)ready;
	/* The _init API takes keys of any length (longer ones are hashed, RFC 2104). */
	crypto_auth_hmacsha256_init(&st, key, key_len);
	crypto_auth_hmacsha256_update(&st, msg, msg_len);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof st);
}

int fmt_ct_equal(const void *a, const void *b, size_t n)
{
	return sodium_memcmp(a, b, n) == 0;
}

fmt_kind fmt_crypto_key_alloc(size_t len, fmt_hmac_key *out, fmt_err *e)
{
	memset(out, 0, sizeof *out);
	fmt_kind k = fmt_crypto_sodium_init(e);
	if (k != FMT_OK)
		return k;
	out->bytes = sodium_malloc(len ? len : 1);
	if (!out->bytes)
		return fmt_fail(e, FMT_IO, "out of secure memory for a %zu-byte key", len);
	out->len = len;
	memcpy(out->id, "shared", sizeof "shared");
	return FMT_OK;
}

void fmt_hmac_key_free(fmt_hmac_key *k)
{
	if (!k)
		return;
	if (k->bytes)
		sodium_free(k->bytes); /* wipes before unmapping */
	k->bytes = NULL;
	k->len = 0;
	k->id[0] = '\0';
}

const char *fmt_signer_name(const char *key_id, char *buf, size_t size)
{
	if (!strcmp(key_id, "shared"))
		return "the shared secret";
	snprintf(buf, size, "trusted key %s", key_id);
	return buf;
}

int fmt_keyset_empty(const fmt_keyset *ks)
{
	return !ks || (!ks->hmac && !ks->n_trusted && !ks->ed25519_secret && !ks->password && !ks->x25519);
}

fmt_kind fmt_crypto_user_key_id(fmt_hmac_key *k, fmt_err *e)
{
	uint8_t digest[FMT_SHA256_LEN];
	char hex[FMT_SHA256_HEX + 1];
	fmt_kind r = fmt_sha256_buf(k->bytes, k->len, digest, e);
	if (r != FMT_OK)
		return r;
	fmt_hex(digest, sizeof digest, hex);
	memcpy(k->id, hex, 16);
	k->id[16] = '\0';
	sodium_memzero(digest, sizeof digest);
	sodium_memzero(hex, sizeof hex);
	return FMT_OK;
}
