/* The .ald signature block (specs/ald.md §6, flag bit 1): Ed25519 (RFC 8032, no pre-hash)
 * over every byte from 0 to the end of the payload, header flags included, then the signer's
 * 32-byte public key; 96 bytes between the payload and the licence block, not covered by
 * itself, covered by the CRC. Verification trusts the embedded key only when it is one of the
 * keys the user gave (-p, -P, --trusted-keys); upstream's reader with no trusted keys checks
 * nothing, and so do we (reported as not checked). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/dataset.h"
#include "fmt/minisign.h"
#include "ald_internal.h"

#define SIG_BLOCK 96
#define FLAGS_AT 21

fmt_kind fmt_ald_check_signature(const ald_state *s, const fmt_verify_opts *o, fmt_err *e)
{
	if (o->keys.hmac && !o->keys.n_trusted)
		return fmt_fail(e, FMT_SIGNATURE, ".ald datasets are signed with Ed25519 keys: check them with -p, -P "
				"or --trusted-keys, not an HMAC key");
	return fmt_verify_signature_block(o, (s->flags & FMT_ALD_SIGNED) != 0, s->sig_pub, s->file,
					  (size_t)s->payload_end, s->file + s->payload_end, e);
}

/* The signed copy (secret: the fmt_ms_secret): [0, payload_end) with SIGNED set, the new
 * block, the licence block as it was; fmt_ald_rewrite_in_place adds the CRC. */
static fmt_kind write_signed(const ald_state *s, fmt_sink *k, const void *secret, fmt_err *e)
{
	const fmt_ms_secret *sec = secret;
	uint8_t flags = (uint8_t)(s->flags | FMT_ALD_SIGNED);
	uint64_t lic = s->payload_end + ((s->flags & FMT_ALD_SIGNED) ? SIG_BLOCK : 0);
	fmt_kind r = fmt_sink_write(k, s->file, FLAGS_AT, e);
	if (r == FMT_OK)
		r = fmt_sink_write(k, &flags, 1, e);
	if (r == FMT_OK)
		r = fmt_sink_write(k, s->file + FLAGS_AT + 1, (size_t)(s->payload_end - FLAGS_AT - 1), e);
	if (r == FMT_OK)
		r = fmt_ald_append_signature(k, sec, e);
	if (r == FMT_OK && (s->flags & FMT_ALD_LICENSED))
		r = fmt_sink_write(k, s->file + lic, (size_t)(s->crc_off - lic), e);
	return r;
}

/* A licence block's seller signature covers the file's signature (ald.md, decisions table): a
 * re-signature that changes it would leave the licence unverifiable, so it is refused. Ed25519
 * is deterministic: the same key over the same bytes gives the same signature, which is kept. */
static fmt_kind licence_allows(const ald_state *s, const fmt_ms_secret *sec, fmt_err *e)
{
	uint8_t sig[64];
	if (!(s->flags & FMT_ALD_LICENSED))
		return FMT_OK;
	if (s->flags & FMT_ALD_SIGNED) {
		fmt_kind k = fmt_ed25519_sign(sec, s->file, (size_t)s->payload_end, sig, e);
		if (k != FMT_OK)
			return k;
		if (memcmp(sig, s->file + s->payload_end, sizeof sig) == 0 &&
		    memcmp(fmt_ms_secret_pk(sec), s->file + s->payload_end + 64, 32) == 0)
			return FMT_OK;
	}
	return fmt_fail(e, FMT_USAGE, "the licence block's seller signature covers the file's signature: "
			"signing would invalidate it (sign the dataset before issuing its licence)");
}

/* What may be signed (secret: the fmt_ms_secret): a payload, and a licence that stays valid. */
static fmt_kind sign_allowed(const ald_state *s, const void *secret, fmt_err *e)
{
	if (s->payload_end < FLAGS_AT + 1)
		return fmt_fail(e, FMT_INVALID_FORMAT, "no payload to sign");
	return licence_allows(s, secret, e);
}

fmt_kind fmt_ald_sign_with(const fmt_table_driver *d, const char *path, const fmt_keyset *keys, int threads,
			   fmt_err *e)
{
	(void)threads;
	if (!keys->ed25519_secret)
		return fmt_fail(e, FMT_USAGE, ".ald datasets are signed with Ed25519 keys (fmt-sign sign --embed "
				"-s SECKEY), not HMAC keys");
	/* The licence is the seller's, checked by fmt-verify: licence_allows keeps it as it is. */
	return fmt_ald_rewrite_checked(d, path, 0, sign_allowed, write_signed, keys->ed25519_secret, e);
}

json_t *fmt_ald_signer_b64(const ald_state *s)
{
	char b64[45];
	fmt_base64(s->sig_pub, 32, b64, sizeof b64);
	return json_string(b64);
}
