/* The checks of an .ald beyond its structure: the CRC-32 trailer (either variant) and the card's
 * digest of the payload. Signing and licensing check a file with them before they rewrite it. */
#include <string.h>
#include "fmt/dataset.h"
#include "ald_internal.h"

/* One variant's CRC of the file before its trailer, a piece at a time, dropping the pages read. */
static uint32_t crc_of_file(const ald_state *s, uint32_t (*crc32)(uint32_t crc, const void *data, size_t n))
{
	enum { PIECE = 4u << 20 };
	uint32_t c = 0;
	for (uint64_t off = 0; off < s->crc_off; off += PIECE) {
		size_t n = s->crc_off - off < PIECE ? (size_t)(s->crc_off - off) : PIECE;
		c = crc32(c, s->file + off, n);
		fmt_source_drop(s->source, s->file + off, n);
	}
	return c;
}

fmt_kind fmt_ald_check_crc(ald_state *s, fmt_err *e)
{
	if (s->crc_kind)
		return FMT_OK;
	uint32_t ieee = crc_of_file(s, fmt_crc32_ieee);
	if (ieee == s->crc_stored) {
		s->crc_kind = "ieee";
		return FMT_OK;
	}
	uint32_t ali = crc_of_file(s, fmt_crc32_alimentar);
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
