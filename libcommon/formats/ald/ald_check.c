/* The checks of an .ald beyond its structure: the CRC-32 trailer (either variant) and the card's
 * digest of the payload. Signing and licensing check a file with them before they rewrite it. */
#include <string.h>
#include "fmt/dataset.h"
#include "ald_internal.h"

fmt_kind fmt_ald_check_crc(ald_state *s, fmt_err *e)
{
	if (s->crc_kind)
		return FMT_OK;
	uint32_t ieee = fmt_crc32_ieee(0, s->file, s->crc_off);
	if (ieee == s->crc_stored) {
		s->crc_kind = "ieee";
		return FMT_OK;
	}
	uint32_t ali = fmt_crc32_alimentar(0, s->file, s->crc_off);
	if (ali == s->crc_stored) {
		s->crc_kind = "alimentar-0.2";
		return FMT_OK;
	}
	return fmt_fail(e, FMT_CHECKSUM, "CRC-32 mismatch: stored %08x, computed %08x (standard) and %08x (alimentar 0.2)",
			s->crc_stored, ieee, ali);
}

/* Every part decompressed (at most what the file declares for it) and its size checked, as the
 * readers do; the card's sha256 against the whole, when the card has one. */
fmt_kind fmt_ald_check_digest(ald_state *s, fmt_err *e)
{
	const json_t *want = json_object_get(s->card, "sha256");
	if (!s->payload)
		return FMT_OK;
	if (s->flags & FMT_ALD_TRUENO_NATIVE)
		return json_is_string(want) ? fmt_ald_native_check_digest(s, json_string_value(want), e) : FMT_OK;
	/* upstream's streaming card has no digest and its LZ4 chunks are not frames: sizes only */
	return fmt_ald_payload_check(s, json_is_string(want) && !s->upstream_streaming ? json_string_value(want) : NULL,
				     e);
}
