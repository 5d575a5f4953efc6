/* alimentar's separate streaming layout (specs/ald.md §11, feature format-streaming): its own
 * 32-byte header (flags at byte 6, compression at 7), the metadata, the schema block, a
 * MessagePack chunk index [[[row_offset, num_rows, byte_offset, compressed, uncompressed], ...],
 * total_rows], then the chunks (each a complete Arrow IPC stream, compressed on its own; LZ4 as
 * a raw block after its u32 LE size), and no CRC trailer. Read into the same state as the
 * standard container's STREAMING chunks, so the batches come from ald.c's chunk reader. */
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/dataset.h"
#include "ald_internal.h"

#define HEADER 32
#define MIN_ENTRY 6                /* a 5-element array of fixints */

int fmt_ald_is_upstream_streaming(const uint8_t *h, size_t n)
{
	return n >= 12 && h[6] == FMT_ALD_STREAMING && h[7] <= 3 && h[8] == 1 && h[9] == 0 && h[10] == 0 &&
	       h[11] == 0;
}

/* The chunk index has a fixed shape (arrays of unsigned integers), so it is decoded here
 * directly: every count is checked against the bytes left and nothing is allocated for a count
 * before that. */
typedef struct mp {
	const uint8_t *d;
	size_t n, at;
} mp;

static int mp_array(mp *m, uint32_t *count)
{
	if (m->at >= m->n)
		return -1;
	uint8_t t = m->d[m->at++];
	if ((t & 0xf0) == 0x90) {
		*count = t & 0x0f;
		return 0;
	}
	size_t w = t == 0xdc ? 2 : t == 0xdd ? 4 : 0;
	if (!w || m->n - m->at < w)
		return -1;
	*count = 0;
	for (size_t i = 0; i < w; i++)
		*count = *count << 8 | m->d[m->at++];
	return 0;
}

static int mp_uint(mp *m, uint64_t *v)
{
	if (m->at >= m->n)
		return -1;
	uint8_t t = m->d[m->at++];
	if (t <= 0x7f) {
		*v = t;
		return 0;
	}
	size_t w = t == 0xcc ? 1 : t == 0xcd ? 2 : t == 0xce ? 4 : t == 0xcf ? 8 : 0;
	if (!w || m->n - m->at < w)
		return -1;
	*v = 0;
	for (size_t i = 0; i < w; i++)
		*v = *v << 8 | m->d[m->at++];
	return 0;
}

static fmt_kind bad_index(fmt_err *e, const char *what)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "streaming layout: chunk index %s", what);
}

/* One entry: sizes within u32 (upstream's types), offsets in sequence, the chunk in the file. */
static fmt_kind read_entry(mp *m, ald_state *s, uint32_t i, uint64_t *rows, uint64_t *bytes, fmt_err *e)
{
	uint32_t n;
	uint64_t v[5], end;
	if (mp_array(m, &n) || n != 5)
		return bad_index(e, "entry is not a 5-element array");
	for (int j = 0; j < 5; j++)
		if (mp_uint(m, &v[j]))
			return bad_index(e, "entry holds something other than an unsigned integer");
	if (v[1] > UINT32_MAX || v[3] > UINT32_MAX || v[4] > UINT32_MAX)
		return bad_index(e, "entry has a count or size above 2^32");
	if (v[0] != *rows || v[2] != *bytes)
		return fmt_fail(e, FMT_INVALID_FORMAT, "streaming layout: chunk %u: row or byte offset out of sequence", i);
	ald_chunk *c = &s->chunks[i];
	c->row_offset = v[0];
	c->num_rows = (uint32_t)v[1];
	c->byte_offset = v[2];
	c->csize = (uint32_t)v[3];
	c->usize = (uint32_t)v[4];
	if (fmt_add_u64(*rows, c->num_rows, rows) || fmt_add_u64(*bytes, c->csize, bytes) ||
	    fmt_add_u64(s->payload_start, *bytes, &end) || end > s->crc_off)
		return fmt_fail(e, FMT_INVALID_FORMAT, "streaming layout: chunk %u runs past the end of the file", i);
	return FMT_OK;
}

static fmt_kind read_index(ald_state *s, const uint8_t *d, uint64_t at, uint32_t size, fmt_err *e)
{
	mp m = { d + at, size, 0 };
	uint32_t outer, n;
	uint64_t rows = 0, bytes = 0, total;
	if (mp_array(&m, &outer) || outer != 2 || mp_array(&m, &n))
		return bad_index(e, "is not [[entries...], total_rows]");
	if (n > size / MIN_ENTRY)
		return bad_index(e, "lists more chunks than its bytes hold");
	s->n_chunks = n;
	s->chunks = calloc(n ? n : 1, sizeof *s->chunks);
	if (!s->chunks)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		fmt_kind k = read_entry(&m, s, i, &rows, &bytes, e);
		if (k != FMT_OK)
			return k;
	}
	if (mp_uint(&m, &total))
		return bad_index(e, "has no total row count");
	if (m.at != m.n)
		return bad_index(e, "has bytes after its end");
	if (total != rows)
		return fmt_fail(e, FMT_INVALID_FORMAT, "streaming layout: the chunks hold %llu rows, the index says %llu",
				(unsigned long long)rows, (unsigned long long)total);
	if (s->payload_start + bytes != s->crc_off)
		return fmt_fail(e, FMT_INVALID_FORMAT, "streaming layout: %llu bytes after the last chunk",
				(unsigned long long)(s->crc_off - s->payload_start - bytes));
	uint64_t raw = 0;
	for (uint32_t i = 0; i < n; i++)
		raw += s->chunks[i].usize;    /* at most 2^32 chunks of 2^32 bytes: no overflow */
	s->raw_size = raw > UINT32_MAX ? UINT32_MAX : (uint32_t)raw;
	s->num_rows = rows;
	s->chunk_bytes = bytes;
	return FMT_OK;
}

fmt_kind fmt_ald_upstream_parse(fmt_table *t, ald_state *s, fmt_err *e)
{
	const uint8_t *d = s->file;
	uint64_t size = t->source.size, pos;
	uint32_t schema_size, index_size;
	fmt_kind k;
	s->upstream_streaming = 1;
	s->major = d[4];
	s->minor = d[5];
	s->flags = d[6];
	s->compression = d[7];
	s->type = fmt_rd_u16(d + 8);
	s->meta_size = fmt_rd_u32(d + 12);
	schema_size = fmt_rd_u32(d + 16);
	index_size = fmt_rd_u32(d + 20);
	s->crc_off = size;         /* no trailer: the chunks run to the end */
	s->crc_kind = "none";      /* the layout has no CRC */
	if (s->compression == FMT_ALD_LZ4)
		s->chunk_codec = FMT_LZ4_SIZE_PREFIXED_BLOCK;
	if ((uint64_t)HEADER + s->meta_size > size)
		return fmt_fail(e, FMT_INVALID_FORMAT, "metadata runs past the end of the file");
	if ((k = fmt_card_decode(d + HEADER, s->meta_size, &s->card, &s->card_form, &s->card_nonfinite, e)) != FMT_OK)
		return k;
	s->schema_start = HEADER + (uint64_t)s->meta_size;
	if (schema_size > UINT16_MAX || s->schema_start + schema_size > size)
		return fmt_fail(e, FMT_INVALID_FORMAT, "schema block runs past the end of the file");
	s->schema_size = (uint16_t)schema_size;
	if ((k = fmt_ald_parse_schema_block(t, s, e)) != FMT_OK)
		return k;
	pos = s->schema_start + schema_size;
	if (index_size > size - pos)
		return fmt_fail(e, FMT_INVALID_FORMAT, "streaming layout: chunk index runs past the end of the file");
	s->payload_start = pos + index_size;
	if ((k = read_index(s, d, pos, index_size, e)) != FMT_OK)
		return k;
	s->payload_end = size;
	s->payload = d + s->payload_start; /* never encrypted: the layout has no such block */
	s->payload_len = s->chunk_bytes;
	s->payload_size = s->chunk_bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)s->chunk_bytes;
	t->n_rows = s->num_rows;
	return FMT_OK;
}
