/* .ald payload encryption (specs/ald.md §5): the encryption header after the schema block
 * (password mode 0x00: salt and nonce; recipient mode 0x01: ephemeral X25519 key and nonce), the
 * payload as AES-256-GCM ciphertext with the tag appended, no associated data. Reading
 * decrypts the whole stored payload and checks the tag before a byte of it is used: into memory
 * up to DECRYPT_IN_MEMORY bytes, else into an unlinked temporary file (fmt_spill_open) that the
 * payload is then read from as from the file's mapping, so that memory stays bounded whatever the
 * payload's size (the memory rule, issue 26). */
#include <stdlib.h>
#include <string.h>
#include "fmt/dataset.h"
#include "fmt/encrypt.h"
#include "ald_internal.h"

#define HKDF_INFO "ald-v1-encrypt"
#define ENC_BLOCK (64u * 1024u)
/* A decrypted payload of at most this many bytes is kept in memory (no temporary file for a
 * small one); a larger one goes to a spill file, DECRYPT_PIECE bytes at a time. */
#define DECRYPT_IN_MEMORY ((uint64_t)8 << 20)
#define DECRYPT_PIECE ((uint64_t)1 << 20)

/* The AES key of a header: Argon2id of the password, or HKDF of the X25519 agreement. */
static fmt_kind derive_key(uint8_t mode, const uint8_t *param, const uint8_t *secret_x25519,
			   const fmt_password *pw, uint8_t key[FMT_AEAD_KEY], fmt_err *e)
{
	if (mode == 0)
		return fmt_argon2id_key(pw, param, key, e);
	uint8_t shared[FMT_X25519_LEN];
	fmt_kind k = fmt_x25519_agree(secret_x25519, param, shared, e);
	if (k == FMT_OK)
		k = fmt_hkdf_sha256(NULL, 0, shared, sizeof shared, HKDF_INFO, key, FMT_AEAD_KEY, e);
	fmt_wipe(shared, sizeof shared);
	return k;
}

/* A u-coordinate as written: below 2^255 - 19. X25519 ignores the top bit and reduces mod p,
 * so any other spelling of the same key would let a changed header still decrypt. */
static int canonical_u(const uint8_t u[FMT_X25519_LEN])
{
	if (u[31] & 0x80)
		return 0;
	if (u[31] != 0x7f || u[0] < 0xed)
		return 1;
	for (int i = 1; i < 31; i++)
		if (u[i] != 0xff)
			return 1;
	return 0;
}

int fmt_ald_secret_needed(const ald_state *s)
{
	if (!(s->flags & FMT_ALD_ENCRYPTED) || s->payload)
		return FMT_SECRET_NONE;
	return s->enc_mode == 0 ? FMT_SECRET_PASSWORD : FMT_SECRET_IDENTITY;
}

/* The n bytes of ciphertext at the payload's start through g, a piece at a time: into plain, or
 * (plain NULL) into the spill file sp through a bounce buffer that is wiped after. The pieces end
 * at file offsets that are multiples of DECRYPT_PIECE, so that each piece's pages (all but the
 * payload's first) leave the resident set once it is passed. */
static fmt_kind decrypt_pieces(ald_state *s, fmt_gcm *g, uint64_t n, uint8_t *plain, const fmt_source *sp,
			       fmt_err *e)
{
	uint8_t *bounce = plain ? NULL : malloc(DECRYPT_PIECE);
	if (!plain && !bounce)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = FMT_OK;
	uint64_t at = 0;
	while (k == FMT_OK && at < n) {
		uint64_t room = DECRYPT_PIECE - (s->payload_start + at) % DECRYPT_PIECE;
		size_t part = (size_t)(n - at < room ? n - at : room);
		const uint8_t *src = s->file + s->payload_start + at;
		k = fmt_gcm_update(g, src, part, plain ? plain + at : bounce, e);
		if (k == FMT_OK && !plain)
			k = fmt_spill_write(sp, at, bounce, part, e);
		fmt_source_drop(s->source, src, part);
		at += part;
	}
	if (bounce) {
		fmt_wipe(bounce, DECRYPT_PIECE);
		free(bounce);
	}
	return k;
}

fmt_kind fmt_ald_decrypt(ald_state *s, const fmt_keyset *ks, fmt_err *e)
{
	const uint8_t *h = s->file + s->enc_start;
	const uint8_t *nonce = h + (s->enc_mode == 0 ? 1 + FMT_ARGON2_SALT : 1 + FMT_X25519_LEN);
	uint8_t key[FMT_AEAD_KEY];
	fmt_gcm g = { 0 };
	uint8_t *plain = NULL;
	if (s->payload)
		return FMT_OK;
	if (s->enc_mode > 1)
		return fmt_fail(e, FMT_UNSUPPORTED, "encryption mode 0x%02x (0x00 password and 0x01 recipient are defined)",
				s->enc_mode);
	if (s->payload_size < FMT_AEAD_TAG)
		return fmt_fail(e, FMT_INVALID_FORMAT, "the encrypted payload is %u bytes, shorter than its 16-byte tag",
				s->payload_size);
	if (s->enc_mode == 0 && !(ks && ks->password))
		return fmt_fail(e, FMT_DECRYPTION, "the payload is encrypted with a password: give --password-file "
				"or --password-env, or run on a terminal%s", ks && ks->x25519 ? " (an identity was given)" : "");
	if (s->enc_mode == 1 && !(ks && ks->x25519 && ks->x25519->sk))
		return fmt_fail(e, FMT_DECRYPTION, "the payload is encrypted to an X25519 recipient: give "
				"--identity SECKEY%s", ks && ks->password ? " (a password was given)" : "");
	if (s->enc_mode == 1 && !canonical_u(h + 1))
		return fmt_fail(e, FMT_INVALID_FORMAT, "the ephemeral X25519 key is not in canonical form (below 2^255-19)");
	size_t n = s->payload_size - FMT_AEAD_TAG;
	fmt_kind k = derive_key(s->enc_mode, h + 1, s->enc_mode ? ks->x25519->sk : NULL, ks->password, key, e);
	if (k == FMT_OK)
		k = fmt_gcm_init(&g, key, nonce, 1, e);
	fmt_wipe(key, sizeof key);
	if (k == FMT_OK && n <= DECRYPT_IN_MEMORY && !(plain = malloc(n ? n : 1)))
		k = fmt_fail(e, FMT_IO, "out of memory for the %zu-byte payload", n);
	if (k == FMT_OK && !plain)
		k = fmt_spill_open(&s->dec, "a temporary file for the decrypted payload", e);
	if (k == FMT_OK)
		k = decrypt_pieces(s, &g, n, plain, &s->dec, e);
	if (k == FMT_OK) {
		uint8_t tag[FMT_AEAD_TAG];
		memcpy(tag, s->file + s->payload_start + n, FMT_AEAD_TAG);
		k = fmt_gcm_final(&g, tag, e);
	}
	fmt_gcm_free(&g);
	if (k == FMT_OK && (s->flags & FMT_ALD_STREAMING) && s->chunk_bytes != n)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "chunk sizes do not add up to the decrypted payload size");
	/* authenticated: only now is the spill file mapped, and s->payload set */
	const uint8_t *mapped = NULL;
	if (k == FMT_OK && !plain)
		k = fmt_spill_map(&s->dec, n, &mapped, e);
	if (k != FMT_OK) {
		if (plain)
			fmt_wipe(plain, n);
		free(plain);
		fmt_spill_close(&s->dec);
		return k;
	}
	s->decrypted = plain;
	s->payload = plain ? plain : mapped;
	s->payload_len = n;
	return FMT_OK;
}

fmt_kind fmt_ald_enc_begin(ald_enc *c, const fmt_keyset *ks, int *on, fmt_err *e)
{
	uint8_t key[FMT_AEAD_KEY], *nonce;
	fmt_kind k;
	memset(c, 0, sizeof *c);
	*on = ks && (ks->password || ks->x25519);
	if (!*on)
		return FMT_OK;
	if (ks->password && ks->x25519)
		return fmt_fail(e, FMT_USAGE, "encrypt with a password or to a recipient, not both");
	if (ks->password) {
		c->header[0] = 0x00;
		c->header_len = 1 + FMT_ARGON2_SALT + FMT_AEAD_NONCE;
		k = fmt_random(c->header + 1, FMT_ARGON2_SALT, e);
		if (k == FMT_OK)
			k = fmt_argon2id_key(ks->password, c->header + 1, key, e);
	} else {
		uint8_t eph[FMT_X25519_LEN];
		c->header[0] = 0x01;
		c->header_len = 1 + FMT_X25519_LEN + FMT_AEAD_NONCE;
		k = fmt_random(eph, sizeof eph, e);
		fmt_x25519_public_of(eph, c->header + 1);
		if (k == FMT_OK)
			k = derive_key(1, ks->x25519->pk, eph, NULL, key, e);
		fmt_wipe(eph, sizeof eph);
	}
	nonce = c->header + c->header_len - FMT_AEAD_NONCE;
	if (k == FMT_OK)
		k = fmt_random(nonce, FMT_AEAD_NONCE, e);
	if (k == FMT_OK)
		k = fmt_gcm_init(&c->gcm, key, nonce, 0, e);
	fmt_wipe(key, sizeof key);
	if (k == FMT_OK && !(c->buf = malloc(ENC_BLOCK)))
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k != FMT_OK)
		fmt_ald_enc_free(c);
	return k;
}

fmt_kind fmt_ald_enc_write(ald_enc *c, fmt_sink *k, const uint8_t *p, size_t n, fmt_err *e)
{
	while (n > 0) {
		size_t step = n < ENC_BLOCK ? n : ENC_BLOCK;
		fmt_kind r = fmt_gcm_update(&c->gcm, p, step, c->buf, e);
		if (r == FMT_OK)
			r = fmt_sink_write(k, c->buf, step, e);
		if (r != FMT_OK)
			return r;
		p += step;
		n -= step;
	}
	return FMT_OK;
}

fmt_kind fmt_ald_enc_end(ald_enc *c, fmt_sink *k, fmt_err *e)
{
	uint8_t tag[FMT_AEAD_TAG];
	fmt_kind r = fmt_gcm_final(&c->gcm, tag, e);
	return r == FMT_OK ? fmt_sink_write(k, tag, sizeof tag, e) : r;
}

void fmt_ald_enc_free(ald_enc *c)
{
	fmt_gcm_free(&c->gcm);
	free(c->buf);
	c->buf = NULL;
}
