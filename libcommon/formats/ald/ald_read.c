/* The .ald container (specs/ald.md): header, MessagePack card, the STREAMING chunk index, the
 * encryption/signature/licence blocks (parsed), the payload's bounds, and the checks of the
 * CRC-32 trailer (either variant) and of the card's payload digest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/crypto.h"
#include "fmt/dataset.h"
#include "ald_internal.h"

#define HEADER 32
#define CHUNK_ENTRY 28
#define SIG_BLOCK 96
#define LICENSE_MIN 75
#define MAX_CHUNKS (1u << 24)

static const uint8_t magic[4] = { 'A', 'L', 'D', 'F' };

static fmt_kind bad(fmt_err *e, const char *what)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "%s", what);
}

int fmt_ald_probe(const uint8_t *head, size_t n, uint64_t size)
{
	(void)size;
	return n >= 4 && memcmp(head, magic, 4) == 0 ? 100 : 0;
}

static fmt_kind parse_chunk_index(ald_state *s, const uint8_t *d, uint64_t *pos, fmt_err *e)
{
	uint64_t at = *pos, bytes, end, rows = 0, bytes_used = 0;
	if (s->crc_off - at < 4)
		return bad(e, "chunk index runs past the end of the file");
	s->n_chunks = fmt_rd_u32(d + at);
	if (s->n_chunks > MAX_CHUNKS)
		return bad(e, "chunk index has more than 2^24 chunks");
	if (fmt_mul_u64(s->n_chunks, CHUNK_ENTRY, &bytes) || fmt_add_u64(at + 4, bytes, &end) || end > s->crc_off)
		return bad(e, "chunk index runs past the end of the file");
	s->chunks = calloc(s->n_chunks ? s->n_chunks : 1, sizeof *s->chunks);
	if (!s->chunks)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (uint32_t i = 0; i < s->n_chunks; i++) {
		const uint8_t *p = d + at + 4 + (uint64_t)CHUNK_ENTRY * i;
		ald_chunk *c = &s->chunks[i];
		c->row_offset = fmt_rd_u64(p);
		c->num_rows = fmt_rd_u32(p + 8);
		c->byte_offset = fmt_rd_u64(p + 12);
		c->csize = fmt_rd_u32(p + 20);
		c->usize = fmt_rd_u32(p + 24);
		if (c->row_offset != rows || c->byte_offset != bytes_used)
			return fmt_fail(e, FMT_INVALID_FORMAT, "chunk %u: row or byte offset out of sequence", i);
		rows += c->num_rows;
		bytes_used += c->csize;
	}
	if (rows != s->num_rows)
		return fmt_fail(e, FMT_INVALID_FORMAT, "chunk index holds %llu rows, the header says %llu",
				(unsigned long long)rows, (unsigned long long)s->num_rows);
	s->chunk_bytes = bytes_used;
	*pos = end;
	return FMT_OK;
}

static fmt_kind parse_trailer(ald_state *s, const uint8_t *d, fmt_err *e)
{
	uint64_t at = s->payload_end;
	if (s->flags & FMT_ALD_SIGNED) {
		if (s->crc_off - at < SIG_BLOCK)
			return bad(e, "signature block runs past the CRC");
		memcpy(s->sig_pub, d + at + 64, 32);
		at += SIG_BLOCK;
	}
	if (s->flags & FMT_ALD_LICENSED) {
		const uint8_t *l = d + at;
		if (s->crc_off - at < LICENSE_MIN)
			return bad(e, "licence block shorter than 75 bytes");
		uint32_t n = fmt_rd_u32(l + 71);
		if (n > s->crc_off - at - LICENSE_MIN)
			return bad(e, "licence terms run past the CRC");
		memcpy(s->license_id, l, 16);
		memcpy(s->licensee_hash, l + 16, 32);
		s->issued_at = fmt_rd_u64(l + 48);
		s->expires_at = fmt_rd_u64(l + 56);
		s->license_flags = l[64];
		s->seat_limit = fmt_rd_u16(l + 65);
		s->query_limit = fmt_rd_u32(l + 67);
		s->terms = l + 75;
		s->terms_len = n;
		at += LICENSE_MIN + (uint64_t)n;
	}
	/* Every byte is accounted for: bytes after the last block are covered by no signature
	 * (upstream ignores them; a flag cleared would leave a block there unnoticed). */
	if (at != s->crc_off)
		return fmt_fail(e, FMT_INVALID_FORMAT, "%llu byte%s after the %s, before the CRC, that no block "
				"accounts for", (unsigned long long)(s->crc_off - at), s->crc_off - at == 1 ? "" : "s",
				(s->flags & FMT_ALD_LICENSED) ? "licence terms" : (s->flags & FMT_ALD_SIGNED)
				? "signature block" : "payload");
	return FMT_OK;
}

fmt_kind fmt_ald_parse(fmt_table *t, ald_state *s, fmt_err *e)
{
	const uint8_t *d;
	uint64_t size = t->source.size, pos;
	if (size < HEADER + 4)
		return bad(e, "shorter than the 32-byte header and the CRC");
	fmt_kind k = fmt_source_view(&t->source, 0, size, &d, e);
	if (k != FMT_OK)
		return k;
	s->file = d;
	if (memcmp(d, magic, 4) != 0)
		return bad(e, "bad magic (not ALDF)");
	if (fmt_ald_is_upstream_streaming(d, size))
		return fmt_ald_upstream_parse(t, s, e);
	s->major = d[4];
	s->minor = d[5];
	s->type = fmt_rd_u16(d + 6);
	s->meta_size = fmt_rd_u32(d + 8);
	s->payload_size = fmt_rd_u32(d + 12);
	s->raw_size = fmt_rd_u32(d + 16);
	s->compression = d[20];
	s->flags = d[21];
	s->schema_size = fmt_rd_u16(d + 22);
	s->num_rows = fmt_rd_u64(d + 24);
	s->crc_off = size - 4;
	s->crc_stored = fmt_rd_u32(d + s->crc_off);
	if (s->major > 1)
		return fmt_fail(e, FMT_UNSUPPORTED, "format version %u.%u (1.x is supported)", s->major, s->minor);
	if (s->compression > 3)
		return fmt_fail(e, FMT_UNSUPPORTED, "compression id %u (0-3 are defined)", s->compression);
	if ((uint64_t)HEADER + s->meta_size > s->crc_off)
		return bad(e, "metadata runs past the end of the file");
	if ((k = fmt_card_decode(d + HEADER, s->meta_size, &s->card, &s->card_form, e)) != FMT_OK)
		return k;
	s->schema_start = HEADER + (uint64_t)s->meta_size;
	if (s->schema_start + s->schema_size > s->crc_off)
		return bad(e, "schema block runs past the end of the file");
	if ((k = fmt_ald_parse_schema_block(t, s, e)) != FMT_OK)
		return k;
	pos = s->schema_start + s->schema_size;
	if ((s->flags & FMT_ALD_STREAMING) && (k = parse_chunk_index(s, d, &pos, e)) != FMT_OK)
		return k;
	if ((s->flags & FMT_ALD_TRUENO_NATIVE) && (k = fmt_ald_native_parse(t, s, &pos, e)) != FMT_OK)
		return k;
	if (s->flags & FMT_ALD_ENCRYPTED) {
		if (pos >= s->crc_off)
			return bad(e, "encryption header runs past the end of the file");
		s->enc_mode = d[pos];
		uint64_t n = s->enc_mode == 0 ? 29 : 45;
		if (s->crc_off - pos < n)
			return bad(e, "encryption header runs past the end of the file");
		s->enc_start = pos;
		pos += n;
	}
	s->payload_start = pos;
	if (s->payload_size > s->crc_off - pos)
		return bad(e, "payload runs past the CRC");
	s->payload_end = pos + s->payload_size;
	if (!(s->flags & FMT_ALD_ENCRYPTED)) {
		s->payload = d + pos;
		s->payload_len = s->payload_size;
	}
	if ((s->flags & FMT_ALD_STREAMING) && !(s->flags & FMT_ALD_ENCRYPTED) && s->chunk_bytes != s->payload_size)
		return bad(e, "chunk sizes do not add up to the payload size");
	if ((k = parse_trailer(s, d, e)) != FMT_OK)
		return k;
	t->n_rows = s->num_rows;
	return FMT_OK;
}

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
