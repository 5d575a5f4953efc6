/* The checks of an .ald beyond its structure: the CRC-32 trailer (either variant) and the card's
 * digest of the payload. Signing and licensing check a file with them before they rewrite it. */
#include <string.h>
#include "fmt/dataset.h"
#include "ald_internal.h"

/* One variant's CRC of the file's bytes [from, to) after c, a piece at a time, dropping the
 * pages read. */
static uint32_t crc_of_range(const ald_state *s, uint32_t (*crc32)(uint32_t crc, const void *data, size_t n),
			     uint32_t c, uint64_t from, uint64_t to)
{
	enum { PIECE = 4u << 20 };
	for (uint64_t off = from; off < to; off += PIECE) {
		size_t n = to - off < PIECE ? (size_t)(to - off) : PIECE;
		c = crc32(c, s->file + off, n);
		fmt_source_drop(s->source, s->file + off, n);
	}
	return c;
}

/* The stored CRC against ieee (the standard CRC-32 of the file before its trailer), else
 * against alimentar 0.2's. */
static fmt_kind crc_settle(ald_state *s, uint32_t ieee, fmt_err *e)
{
	if (ieee == s->crc_stored) {
		s->crc_kind = "ieee";
		return FMT_OK;
	}
	uint32_t ali = crc_of_range(s, fmt_crc32_alimentar, 0, 0, s->crc_off);
	if (ali == s->crc_stored) {
		s->crc_kind = "alimentar-0.2";
		return FMT_OK;
	}
	return fmt_fail(e, FMT_CHECKSUM, "CRC-32 mismatch: stored %08x, computed %08x (standard) and %08x (alimentar 0.2)",
			s->crc_stored, ieee, ali);
}

fmt_kind fmt_ald_check_crc(ald_state *s, fmt_err *e)
{
	if (s->crc_kind)
		return FMT_OK;
	return crc_settle(s, crc_of_range(s, fmt_crc32_ieee, 0, 0, s->crc_off), e);
}

fmt_kind fmt_ald_crc_as_read(ald_state *s, fmt_err *e)
{
	if ((s->flags & (FMT_ALD_ENCRYPTED | FMT_ALD_TRUENO_NATIVE)) || s->upstream_streaming || !s->payload)
		return fmt_fail(e, FMT_UNSUPPORTED, "checked before it is read");
	s->crc_run = crc_of_range(s, fmt_crc32_ieee, 0, 0, s->payload_start);
	s->crc_pos = s->payload_start;
	s->crc_lost = 0;
	s->crc_as_read = 1;
	return FMT_OK;
}

void fmt_ald_crc_observe(void *ctx, const uint8_t *p, size_t n)
{
	ald_state *s = ctx;
	if (s->crc_lost || p != s->file + s->crc_pos) {
		s->crc_lost = 1;
		return;
	}
	s->crc_run = fmt_crc32_ieee(s->crc_run, p, n);
	s->crc_pos += n;
}

fmt_kind fmt_ald_crc_as_read_end(ald_state *s, fmt_err *e)
{
	s->crc_as_read = 0;
	if (s->crc_kind)
		return FMT_OK;
	if (s->crc_lost)
		return fmt_ald_check_crc(s, e);
	return crc_settle(s, crc_of_range(s, fmt_crc32_ieee, s->crc_run, s->crc_pos, s->crc_off), e);
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
