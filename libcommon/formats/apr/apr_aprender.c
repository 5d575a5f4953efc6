/* The aprender layout (specs/apr.md Part B): 64-byte header with its own CRC32, JSON metadata,
 * a name-sorted tensor index, 64-aligned payloads, a CRC32 footer over everything before it.
 * Written byte for byte as aprender writes it (§10, §20, §21). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <lz4.h>
#include <zstd.h>
#include "fmt/checked.h"
#include "fmt/half.h"
#include "fmt/tree_budget.h"
#include "fmt/zstd_thread.h"
#include "apr_internal.h"

#define AP_MAX_NAME 256                /* aprender's writer cuts longer names */

/* ---- dtype codes (§7.3, the canonical reader's table) ---- */

static const struct { unsigned code; fmt_dtype t; int write; } AP_TYPES[] = {
	{ 0, FMT_DT_F32, 1 }, { 1, FMT_DT_F16, 1 }, { 3, FMT_DT_F64, 0 }, { 4, FMT_DT_I32, 0 },
	{ 5, FMT_DT_I64, 0 }, { 6, FMT_DT_I8, 0 }, { 7, FMT_DT_U8, 0 }, { 12, FMT_DT_Q4_K, 1 },
	{ 14, FMT_DT_Q6_K, 1 }, { 30, FMT_DT_BF16, 1 },
};
#define N_AP_TYPES (sizeof AP_TYPES / sizeof AP_TYPES[0])

fmt_dtype fmt_apr_ap_dtype(unsigned code)
{
	for (size_t i = 0; i < N_AP_TYPES; i++)
		if (AP_TYPES[i].code == code)
			return AP_TYPES[i].t;
	return FMT_DT_INVALID;
}

/* Codes 3..7 are read as other types by aprender's inference loader (§7.3): never written. */
int fmt_apr_ap_code(fmt_dtype t)
{
	for (size_t i = 0; i < N_AP_TYPES; i++)
		if (AP_TYPES[i].t == t && AP_TYPES[i].write)
			return (int)AP_TYPES[i].code;
	return -1;
}

static const char *ap_code_name(unsigned code)
{
	switch (code) {
	case 2: return "BF16 in files before 2026 (no longer read by aprender)";
	default: return "not an aprender dtype";
	}
}

/* ---- APR_Q4 and APR_Q8 (§12): aprender's own quantizations, decoded to F32 on read ---- */

#define APR_Q4_BLOCK 32u
#define APR_Q4_BLOCK_BYTES 18u

typedef struct aprq_reader {
	int q4;                        /* APR_Q4 (codes 8, 128), else APR_Q8 (9, 129) */
	uint64_t start;                /* the payload's absolute offset */
} aprq_reader;

static int is_aprq(unsigned code)
{
	return code == 8 || code == 9 || code == 128 || code == 129;
}

/* The stored size of n elements. */
static uint64_t aprq_size(int q4, uint64_t n)
{
	if (q4)
		return (n / APR_Q4_BLOCK + (n % APR_Q4_BLOCK != 0)) * APR_Q4_BLOCK_BYTES;
	return n ? n + 4 : 0;
}

static void put_f32(uint8_t *dst, float v)
{
	memcpy(dst, &v, 4);
}

/* APR_Q4: f16 scale, then 16 bytes in which element i of the block is byte i/2's low nibble
 * when i is even, its high nibble when odd; value (nibble - 8) x scale, a NaN, infinite or
 * tiny scale read as 0. */
static void q4_block(const uint8_t *b, uint8_t *dst, uint64_t first, uint64_t count)
{
	float scale = fmt_f16_to_f32(fmt_rd_u16(b));
	if (!isfinite(scale) || fabsf(scale) < 6.1e-5f)
		scale = 0.0f;
	for (uint64_t i = first; i < first + count; i++) {
		unsigned byte = b[2 + i / 2], q = i % 2 ? byte >> 4 : byte & 0x0F;
		put_f32(dst + 4 * (i - first), ((float)q - 8.0f) * scale);
	}
}

static fmt_kind aprq_read(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst, size_t n,
			  fmt_err *e)
{
	const aprq_reader *r = t->reader_ctx;
	fmt_source *s = &m->sources[t->source];
	uint64_t e0 = off / 4, count = n / 4;
	uint8_t buf[4096];
	fmt_kind k = FMT_OK;
	if (r->q4) {
		uint64_t b = e0 / APR_Q4_BLOCK, skip = e0 % APR_Q4_BLOCK;
		while (k == FMT_OK && count > 0) {
			uint64_t blocks = sizeof buf / APR_Q4_BLOCK_BYTES, want = (skip + count + APR_Q4_BLOCK - 1) / APR_Q4_BLOCK;
			if (blocks > want)
				blocks = want;
			k = fmt_source_read(s, r->start + b * APR_Q4_BLOCK_BYTES, buf, (size_t)(blocks * APR_Q4_BLOCK_BYTES), e);
			for (uint64_t j = 0; k == FMT_OK && j < blocks && count > 0; j++) {
				uint64_t take = APR_Q4_BLOCK - skip < count ? APR_Q4_BLOCK - skip : count;
				q4_block(buf + j * APR_Q4_BLOCK_BYTES, dst, skip, take);
				dst += 4 * take;
				count -= take;
				skip = 0;
			}
			b += blocks;
		}
		return k;
	}
	uint8_t sb[4];
	float scale;
	k = fmt_source_read(s, r->start, sb, 4, e);   /* one f32 scale, then an int8 per element */
	memcpy(&scale, sb, 4);
	for (uint64_t done = 0; k == FMT_OK && done < count;) {
		size_t part = count - done < sizeof buf ? (size_t)(count - done) : sizeof buf;
		k = fmt_source_read(s, r->start + 4 + e0 + done, buf, part, e);
		for (size_t j = 0; k == FMT_OK && j < part; j++)
			put_f32(dst + 4 * (done + j), (float)(int8_t)buf[j] * scale);
		done += part;
	}
	return k;
}

/* Give t (F32, its shape) a reader decoding the APR_Q4/APR_Q8 payload of size bytes at start. */
static fmt_kind attach_aprq(fmt_tensor *t, unsigned code, uint64_t start, uint64_t size, fmt_err *e)
{
	int q4 = code == 8 || code == 128;
	if (size != aprq_size(q4, t->nelems))
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': size %llu, but %llu elements of %s take %llu bytes",
				t->name, (unsigned long long)size, (unsigned long long)t->nelems, q4 ? "APR_Q4" : "APR_Q8",
				(unsigned long long)aprq_size(q4, t->nelems));
	aprq_reader *r = malloc(sizeof *r);
	if (!r)
		return fmt_fail(e, FMT_IO, "out of memory");
	*r = (aprq_reader){ .q4 = q4, .start = start };
	t->reader = aprq_read;
	t->reader_ctx = r;
	t->free_ctx = free;
	t->chunk_align = 4;
	t->stored_bytes = size;
	return FMT_OK;
}

/* ---- CRC32 (zlib's, the same algorithm) ---- */

static uint32_t crc_of(uint32_t crc, const uint8_t *p, size_t n)
{
	return (uint32_t)crc32(crc, p, (uInt)n);
}

uint32_t fmt_apr_ap_header_crc(const uint8_t h[APR_AP_HEADER])
{
	uint32_t c = crc_of(0, h, 40);
	return crc_of(c, h + 44, APR_AP_HEADER - 44);
}

static fmt_kind crc_source(fmt_source *s, uint64_t n, uint32_t *out, fmt_err *e)
{
	enum { CHUNK = 4u << 20 };
	uint8_t *buf = malloc(CHUNK);
	if (!buf)
		return fmt_fail(e, FMT_IO, "out of memory");
	uint32_t c = 0;
	fmt_kind k = FMT_OK;
	for (uint64_t off = 0; k == FMT_OK && off < n;) {
		size_t part = n - off < CHUNK ? (size_t)(n - off) : CHUNK;
		k = fmt_source_read(s, off, buf, part, e);
		c = crc_of(c, buf, part);
		off += part;
	}
	free(buf);
	*out = c;
	return k;
}

static fmt_kind check_footer(fmt_source *s, const apr_state *st, fmt_err *e)
{
	if (!st->has_footer)
		return fmt_fail(e, FMT_CHECKSUM, "no footer CRC (the file ends with its tensor data)");
	uint32_t got;
	fmt_kind k = crc_source(s, s->size - 4, &got, e);
	if (k == FMT_OK && got != (uint32_t)st->checksum)
		k = fmt_fail(e, FMT_CHECKSUM, "footer CRC mismatch: CRC32 of the file is %08x, the footer says %08x", got,
			     (unsigned)st->checksum);
	return k;
}

/* ---- reading ---- */

static fmt_kind read_header(fmt_source *s, apr_state *st, fmt_err *e)
{
	uint8_t h[APR_AP_HEADER];
	if (!s->sequential && s->size < APR_AP_HEADER)
		return fmt_fail(e, FMT_INVALID_FORMAT, "truncated: %llu bytes, an aprender APR file has a 64-byte header",
				(unsigned long long)s->size);
	fmt_kind k = fmt_source_read(s, 0, h, sizeof h, e);
	if (k != FMT_OK)
		return k;
	st->layout = APR_APRENDER;
	st->header_crc = fmt_rd_u32(h + 40);
	uint32_t crc = fmt_apr_ap_header_crc(h);
	if (crc != st->header_crc)
		return fmt_fail(e, FMT_CHECKSUM, "header CRC mismatch: CRC32 of the header is %08x, it says %08x", crc,
				st->header_crc);
	st->version_major = h[4];
	st->version_minor = h[5];
	st->flags = fmt_rd_u16(h + 6);
	st->metadata_size = fmt_rd_u32(h + 20);
	st->index_offset = fmt_rd_u64(h + 24);
	st->data_offset = fmt_rd_u64(h + 32);
	if (st->version_major != 2)
		return fmt_fail(e, FMT_UNSUPPORTED, "aprender APR version %u.%u (this build reads 2.x)", h[4], h[5]);
	if (st->flags & APR_AF_COLUMN_MAJOR)
		return fmt_fail(e, FMT_UNSUPPORTED, "flag LAYOUT_COLUMN_MAJOR is set (aprender refuses such files too)");
	if (st->flags & APR_AF_ENCRYPTED)
		return fmt_fail(e, FMT_UNSUPPORTED, "flag ENCRYPTED is set; aprender v2 has no encryption scheme to read");
	uint64_t meta_off = fmt_rd_u64(h + 12), end;
	if (st->metadata_size == 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "metadata_size is 0 (aprender's smallest metadata is {})");
	if (fmt_add_u64(meta_off, st->metadata_size, &end) || end > s->size || meta_off < APR_AP_HEADER)
		return fmt_fail(e, FMT_INVALID_FORMAT, "metadata at %llu of %llu bytes lies outside the file",
				(unsigned long long)meta_off, (unsigned long long)st->metadata_size);
	if (st->index_offset < APR_AP_HEADER || st->index_offset > s->size || st->data_offset < st->index_offset ||
	    st->data_offset > s->size)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor_index_offset %llu and data_offset %llu do not fit a %llu-byte file",
				(unsigned long long)st->index_offset, (unsigned long long)st->data_offset,
				(unsigned long long)s->size);
	/* A stream is read in the order of its sections. */
	if (s->sequential && !(end <= st->index_offset && st->index_offset <= st->data_offset))
		return fmt_fail(e, FMT_UNSUPPORTED, "metadata, index and data are not in file order: such a file cannot "
				"be read from a stream (read it from a file)");
	return FMT_OK;
}

static fmt_kind index_short(const char *what, uint32_t i, fmt_err *e)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "tensor index entry %u: %s runs past data_offset", i, what);
}

static fmt_kind read_entry(fmt_model *m, const apr_state *st, const uint8_t *p, uint64_t n, uint64_t *at,
			   uint32_t i, char *prev, uint64_t *extent, fmt_err *e)
{
	char name[65536];
	if (n - *at < 2)
		return index_short("name_len", i, e);
	uint16_t len = fmt_rd_u16(p + *at);
	*at += 2;
	if (n - *at < (uint64_t)len + 2)
		return index_short("name", i, e);
	if (len == 0 || memchr(p + *at, 0, len))
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor index entry %u: empty name or a NUL byte in it", i);
	memcpy(name, p + *at, len);
	name[len] = '\0';
	*at += len;
	unsigned code = p[*at], ndim = p[*at + 1];
	*at += 2;
	fmt_dtype t = is_aprq(code) ? FMT_DT_F32 : fmt_apr_ap_dtype(code);
	if (t == FMT_DT_INVALID)
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': dtype code %u (%s)", name, code, ap_code_name(code));
	if (ndim > FMT_MAX_DIMS)
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': %u dimensions (this build holds %d)", name, ndim, FMT_MAX_DIMS);
	if (n - *at < 8ull * ndim + 16)
		return index_short("dims, offset and size", i, e);
	if (i > 0 && strcmp(prev, name) >= 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor index not sorted by name: '%s' after '%s'", name, prev);
	fmt_tensor tt;
	memset(&tt, 0, sizeof tt);
	tt.name = name;
	tt.dtype = t;
	tt.ndim = (int)ndim;
	for (unsigned d = 0; d < ndim; d++)
		tt.shape[d] = fmt_rd_u64(p + *at + 8 * d);
	uint64_t rel = fmt_rd_u64(p + *at + 8 * ndim), size = fmt_rd_u64(p + *at + 8 * ndim + 8), start, end;
	*at += 8ull * ndim + 16;
	fmt_kind k = fmt_dtype_nbytes(t, tt.shape, tt.ndim, &tt.nelems, &tt.nbytes, e);
	if (k != FMT_OK) {
		fmt_err_prefix(e, "tensor '%s'", name);
		return k;
	}
	if (size != tt.nbytes && !is_aprq(code))
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': size %llu, but its shape needs %llu bytes of %s", name,
				(unsigned long long)size, (unsigned long long)tt.nbytes, fmt_dtype_name(t));
	if (fmt_add_u64(st->data_offset, rel, &start) || fmt_add_u64(start, size, &end) ||
	    end > m->sources[0].size || (m->sources[0].sequential && end > FMT_SIZE_UNKNOWN - 4))
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': payload at %llu of %llu bytes runs past the end of the file",
				name, (unsigned long long)rel, (unsigned long long)size);
	if (end > *extent)
		*extent = end;
	tt.source = 0;
	tt.offset = start;
	tt.file_offset = rel;
	if (m->sources[0].sequential)
		tt.seq_pos = start + 1;
	memcpy(prev, name, (size_t)len + 1);
	fmt_tensor *added = NULL;
	k = fmt_model_add_tensor(m, &tt, &added, e);
	if (k == FMT_OK && is_aprq(code))
		k = attach_aprq(added, code, start, size, e);
	return k;
}

static fmt_kind read_index(fmt_model *m, apr_state *st, uint32_t count, fmt_err *e)
{
	uint8_t *p = NULL;
	uint64_t n = st->data_offset - st->index_offset, at = 0, extent = st->data_offset;
	fmt_kind k = FMT_OK;
	if (count > n / 20)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor_count %u cannot fit between the index and the data", count);
	char *prev = malloc(65536);
	if (!prev)
		return fmt_fail(e, FMT_IO, "out of memory");
	k = fmt_apr_read_grow(&m->sources[0], st->index_offset, n, &p, e);
	for (uint32_t i = 0; i < count && k == FMT_OK; i++)
		k = read_entry(m, st, p, n, &at, i, prev, &extent, e);
	free(prev);
	free(p);
	st->data_end = extent;
	/* The footer is the 4 bytes after the data; some old files have none. */
	st->has_footer = k == FMT_OK && !m->sources[0].sequential && m->sources[0].size >= 4 &&
			 m->sources[0].size - 4 >= extent;
	return k;
}

static void crc_observe(void *ctx, const uint8_t *p, size_t n)
{
	apr_state *st = ctx;
	st->stream_crc = crc_of(st->stream_crc, p, n);
}

/* ---- the whole-file-compressed variant (§13) ---- */

/* Whether the metadata the header points at is a JSON object in the file as it is: then the
 * compression flags are set on an uncompressed file (the common upstream case). */
static int metadata_in_place(fmt_source *s, const uint8_t *h)
{
	uint64_t off = fmt_rd_u64(h + 12), n = fmt_rd_u32(h + 20), end;
	uint8_t *text = NULL;
	fmt_err e;
	if (n == 0 || fmt_add_u64(off, n, &end) || end > s->size || fmt_apr_read_grow(s, off, n, &text, &e) != FMT_OK)
		return 0;
	if (fmt_json_budget("the metadata", (const char *)text, (size_t)n, FMT_TREE_COST_JSON, &e) != FMT_OK) {
		free(text);
		return 0;
	}
	json_t *j = fmt_json_loadb((const char *)text, (size_t)n, 0, NULL);
	int ok = json_is_object(j);
	json_decref(j);
	free(text);
	return ok;
}

/* The file with everything after its header decompressed (aprender's inference loader's reading
 * of the flags): a new in-memory source in place of the file. */
static fmt_kind decompress_image(fmt_model *m, apr_state *st, const uint8_t *h, fmt_err *e)
{
	fmt_source *s = &m->sources[0];
	int zstd = (fmt_rd_u16(h + 6) & APR_AF_ZSTD) != 0;
	uint64_t stored = s->size - APR_AP_HEADER, raw = 0;
	uint8_t *in = NULL, *image = NULL;
	fmt_kind k = fmt_apr_read_grow(s, APR_AP_HEADER, stored, &in, e);
	if (k == FMT_OK && zstd) {
		size_t frame = ZSTD_findFrameCompressedSize(in, (size_t)stored);
		unsigned long long size = ZSTD_getFrameContentSize(in, (size_t)stored);
		if (ZSTD_isError(frame) || size == ZSTD_CONTENTSIZE_ERROR)
			k = fmt_fail(e, FMT_INVALID_FORMAT, "flag ZSTD_COMPRESSED: neither metadata at the header's offset "
				     "nor one zstd frame after the header");
		else if (size == ZSTD_CONTENTSIZE_UNKNOWN)
			k = fmt_fail(e, FMT_UNSUPPORTED, "flag ZSTD_COMPRESSED: the zstd frame does not say its size");
		else if (stored - frame != 0 && stored - frame != 4)
			k = fmt_fail(e, FMT_INVALID_FORMAT, "flag ZSTD_COMPRESSED: %llu bytes follow the zstd frame",
				     (unsigned long long)(stored - frame));
		st->whole_stored = frame;
		raw = size;
	} else if (k == FMT_OK) {
		if (stored < 4)
			k = fmt_fail(e, FMT_INVALID_FORMAT, "flag LZ4_COMPRESSED: no size-prepended LZ4 block after the header");
		raw = stored >= 4 ? fmt_rd_u32(in) : 0;
		st->whole_stored = stored;
	}
	/* No LZ4 block expands beyond 255 to 1, no zstd frame beyond 32768 to 1. */
	uint64_t bound, total = 0;
	if (k == FMT_OK && (fmt_mul_u64(st->whole_stored, zstd ? 32768u : 256u, &bound) || raw > bound + (1u << 17) ||
			    fmt_add_u64(raw, APR_AP_HEADER, &total) || total > SIZE_MAX / 2))
		k = fmt_fail(e, FMT_INVALID_FORMAT, "%llu compressed bytes cannot hold %llu", (unsigned long long)st->whole_stored,
			     (unsigned long long)raw);
	if (k == FMT_OK && !(image = malloc((size_t)total)))
		k = fmt_fail(e, FMT_IO, "out of memory for the %llu-byte decompressed file", (unsigned long long)total);
	if (k == FMT_OK) {
		memcpy(image, h, APR_AP_HEADER);
		if (zstd) {
			size_t r = fmt_zstd_decompress(image + APR_AP_HEADER, (size_t)raw, in, (size_t)st->whole_stored);
			if (ZSTD_isError(r) || r != raw)
				k = fmt_fail(e, FMT_INVALID_FORMAT, "flag ZSTD_COMPRESSED: %s",
					     ZSTD_isError(r) ? ZSTD_getErrorName(r) : "the frame holds fewer bytes than it says");
		} else if (stored - 4 > INT32_MAX || raw > INT32_MAX ||
			   LZ4_decompress_safe((const char *)in + 4, (char *)image + APR_AP_HEADER, (int)(stored - 4), (int)raw) != (int)raw) {
			k = fmt_fail(e, FMT_INVALID_FORMAT, "flag LZ4_COMPRESSED: the bytes after the header are not one "
				     "size-prepended LZ4 block of %llu bytes", (unsigned long long)raw);
		}
	}
	if (k == FMT_OK && zstd && stored - st->whole_stored == 4) {  /* a footer after the frame */
		st->whole_footer = 1;
		st->whole_crc_stored = fmt_rd_u32(in + st->whole_stored);
		st->whole_crc = crc_of(crc_of(0, h, APR_AP_HEADER), in, (size_t)st->whole_stored);
	}
	free(in);
	if (k != FMT_OK) {
		free(image);
		return k;
	}
	char *path = strdup(s->path);
	if (!path) {
		free(image);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	fmt_source_close(s);
	s->path = path;
	s->buf = image;
	s->size = total;
	st->whole_codec = zstd ? APR_CODEC_ZSTD : APR_CODEC_LZ4;
	return FMT_OK;
}

fmt_kind fmt_apr_ap_open(fmt_model *m, apr_state *st, fmt_err *e)
{
	fmt_source *s = &m->sources[0];
	uint8_t h[APR_AP_HEADER];
	fmt_kind k = fmt_source_read(s, 0, h, sizeof h, e);
	uint8_t *meta = NULL;
	if (k == FMT_OK && (fmt_rd_u16(h + 6) & (APR_AF_LZ4 | APR_AF_ZSTD)) && fmt_apr_ap_header_crc(h) == fmt_rd_u32(h + 40)) {
		/* Compression flags: usually set on an uncompressed file; else the whole file after the
		 * header is one compressed unit, read whole (also from a stream). */
		k = fmt_source_make_whole(s, e);
		if (k == FMT_OK && !metadata_in_place(s, h))
			k = decompress_image(m, st, h, e);
	}
	if (k == FMT_OK && s->sequential)
		k = fmt_source_observe(s, crc_observe, st, e);
	if (k == FMT_OK)
		k = read_header(s, st, e);
	if (k == FMT_OK)
		k = fmt_apr_read_grow(s, fmt_rd_u64(h + 12), st->metadata_size, &meta, e);
	if (k == FMT_OK)
		k = fmt_apr_meta_read(m, (const char *)meta, (size_t)st->metadata_size, APR_APRENDER, NULL, e);
	free(meta);
	if (k == FMT_OK)
		k = read_index(m, st, fmt_rd_u32(h + 8), e);
	m->version = 2;
	if (s->sequential)
		return k;              /* the footer comes at the end: verify */
	if (k == FMT_OK && st->has_footer) {
		uint8_t f[4];
		k = fmt_source_read(s, s->size - 4, f, 4, e);
		st->checksum = fmt_rd_u32(f);
	}
	/* An unknown dtype code in a file whose footer CRC fails is damage, not a new type. */
	if (k == FMT_UNSUPPORTED && s->size >= 4) {
		fmt_err why = *e;
		uint8_t f[4];
		uint32_t got;
		if (fmt_source_read(s, s->size - 4, f, 4, e) == FMT_OK && crc_source(s, s->size - 4, &got, e) == FMT_OK &&
		    got != fmt_rd_u32(f)) {
			*e = why;
			e->kind = FMT_CHECKSUM;
			fmt_err_prefix(e, "footer CRC mismatch; and");
		} else {
			*e = why;
		}
		return e->kind;
	}
	return k;
}

static void crc_hash(void *ctx, const uint8_t *p, size_t n)
{
	crc_observe(ctx, p, n);
}

/* A stream: payloads may lie in any order (aprender's streaming writer); they were read in
 * ascending offset, and the CRC has seen every byte but the footer's. */
static fmt_kind stream_verify(fmt_model *m, apr_state *st, fmt_err *e)
{
	uint8_t f[4];
	size_t flen;
	fmt_kind k = fmt_apr_stream_tail(&m->sources[0], st->data_end, crc_hash, st, f, sizeof f, &flen, e);
	if (k != FMT_OK)
		return k;
	st->has_footer = flen == 4;
	if (!st->has_footer)
		return fmt_fail(e, FMT_CHECKSUM, "no footer CRC (the file ends with its tensor data)");
	st->checksum = fmt_rd_u32(f);
	if (st->stream_crc != (uint32_t)st->checksum)
		return fmt_fail(e, FMT_CHECKSUM, "footer CRC mismatch: CRC32 of the file is %08x, the footer says %08x",
				st->stream_crc, (unsigned)st->checksum);
	return FMT_OK;
}

fmt_kind fmt_apr_ap_verify(fmt_model *m, const apr_state *st, fmt_err *e)
{
	if (m->sources[0].sequential)
		return stream_verify(m, (apr_state *)st, e);
	if (st->whole_codec != APR_CODEC_NONE) {
		/* A CRC32 after the compressed unit covers the file; one at the end of the decompressed
		 * image covers the image; with neither, the header CRC and the decoding are the checks. */
		if (st->whole_footer && st->whole_crc != st->whole_crc_stored)
			return fmt_fail(e, FMT_CHECKSUM, "footer CRC mismatch: CRC32 of the file is %08x, the footer says %08x",
					st->whole_crc, st->whole_crc_stored);
		if (st->whole_footer || !st->has_footer)
			return FMT_OK;
	}
	return check_footer(&m->sources[0], st, e);
}

/* ---- writing (§10) ---- */

static int cmp_tensor_ptr(const void *a, const void *b)
{
	return strcmp((*(const fmt_tensor *const *)a)->name, (*(const fmt_tensor *const *)b)->name);
}

static fmt_kind check_writable(const fmt_tensor *t, const fmt_tensor *prev, fmt_err *e)
{
	size_t len = strlen(t->name);
	if (fmt_apr_ap_code(t->dtype) < 0)
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': %s cannot be written in the aprender layout (it holds F32, F16, "
				"BF16, Q4_K and Q6_K; codes 3-7 are read differently by aprender's two readers); use "
				"--dtype or the seed layout", t->name, fmt_dtype_name(t->dtype));
	if (t->ndim > APR_MAX_DIMS)
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': %d dimensions (aprender writes at most 8)", t->name, t->ndim);
	if (len == 0 || len > AP_MAX_NAME)
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': aprender names have 1 to %d bytes", t->name, AP_MAX_NAME);
	if (prev && strcmp(prev->name, t->name) == 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s' appears twice", t->name);
	return FMT_OK;
}

static int has_vocab(const fmt_model *m)
{
	return fmt_model_get_meta(m, "tokenizer.vocabulary") != NULL;
}

static fmt_kind build_index(const fmt_tensor *const *ts, size_t n, uint8_t **out, uint64_t *len, fmt_err *e)
{
	uint64_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += 2 + strlen(ts[i]->name) + 2 + 8ull * (unsigned)ts[i]->ndim + 16;
	uint8_t *b = malloc(bytes ? (size_t)bytes : 1), *q = b;
	if (!b)
		return fmt_fail(e, FMT_IO, "out of memory");
	uint64_t rel = 0;
	for (size_t i = 0; i < n; i++) {
		size_t nl = strlen(ts[i]->name);
		fmt_wr_u16(q, (uint16_t)nl);
		memcpy(q + 2, ts[i]->name, nl);
		q += 2 + nl;
		*q++ = (uint8_t)fmt_apr_ap_code(ts[i]->dtype);
		*q++ = (uint8_t)ts[i]->ndim;
		for (int d = 0; d < ts[i]->ndim; d++, q += 8)
			fmt_wr_u64(q, ts[i]->shape[d]);
		fmt_wr_u64(q, rel);
		fmt_wr_u64(q + 8, ts[i]->nbytes);
		q += 16;
		rel += apr_align64(ts[i]->nbytes);
	}
	*out = b;
	*len = bytes;
	return FMT_OK;
}

static void make_header(uint8_t h[APR_AP_HEADER], uint16_t flags, size_t n, size_t meta_len, uint64_t index_off,
			uint64_t data_off)
{
	memset(h, 0, APR_AP_HEADER);
	memcpy(h, "APR\0", 4);
	h[4] = 2;
	h[5] = 0;
	fmt_wr_u16(h + 6, flags);
	fmt_wr_u32(h + 8, (uint32_t)n);
	fmt_wr_u64(h + 12, APR_AP_HEADER);
	fmt_wr_u32(h + 20, (uint32_t)meta_len);
	fmt_wr_u64(h + 24, index_off);
	fmt_wr_u64(h + 32, data_off);
	fmt_wr_u32(h + 40, fmt_apr_ap_header_crc(h));
}

static fmt_kind out_chunk(void *ctx, const uint8_t *bytes, size_t n, fmt_err *e)
{
	return fmt_apr_out_write(ctx, bytes, n, e);
}

static fmt_kind emit(const fmt_model *m, fmt_sink *k, const fmt_tensor *const *ts, size_t n, const char *meta,
		     size_t meta_len, fmt_err *e)
{
	uint8_t h[APR_AP_HEADER], *index = NULL;
	uint64_t index_len = 0;
	fmt_kind r = build_index(ts, n, &index, &index_len, e);
	if (r != FMT_OK)
		return r;
	uint64_t index_off = APR_AP_HEADER + apr_align64(meta_len);
	uint16_t flags = (uint16_t)(APR_AF_ROW_MAJOR | (has_vocab(m) ? APR_AF_HAS_VOCAB : 0));
	make_header(h, flags, n, meta_len, index_off, index_off + apr_align64(index_len));
	apr_out o = { .k = k, .crc_on = 1, .crc = 0 };
	r = fmt_apr_out_write(&o, h, sizeof h, e);
	if (r == FMT_OK)
		r = fmt_apr_out_write(&o, meta, meta_len, e);
	if (r == FMT_OK)
		r = fmt_apr_out_pad(&o, e);
	if (r == FMT_OK)
		r = fmt_apr_out_write(&o, index, (size_t)index_len, e);
	if (r == FMT_OK)
		r = fmt_apr_out_pad(&o, e);
	for (size_t i = 0; i < n && r == FMT_OK; i++) {
		r = fmt_tensor_each_chunk(m, ts[i], out_chunk, &o, e);
		if (r == FMT_OK)
			r = fmt_apr_out_pad(&o, e);
	}
	free(index);
	if (r == FMT_OK) {
		uint8_t f[4];
		fmt_wr_u32(f, (uint32_t)o.crc);
		r = fmt_sink_write(k, f, 4, e);
	}
	return r;
}

fmt_kind fmt_apr_ap_write(const fmt_model *m, fmt_sink *k, fmt_err *e)
{
	if (m->n_tensors > UINT32_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "more than 2^32-1 tensors");
	const fmt_tensor **ts = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *ts);
	if (!ts)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < m->n_tensors; i++)
		ts[i] = &m->tensors[i];
	qsort(ts, m->n_tensors, sizeof *ts, cmp_tensor_ptr);
	fmt_kind r = FMT_OK;
	for (size_t i = 0; i < m->n_tensors && r == FMT_OK; i++)
		r = check_writable(ts[i], i ? ts[i - 1] : NULL, e);
	char *meta = NULL;
	size_t meta_len = 0;
	if (r == FMT_OK)
		r = fmt_apr_meta_write(m, APR_APRENDER, 0, NULL, &meta, &meta_len, e);
	if (r == FMT_OK && meta_len > UINT32_MAX)
		r = fmt_fail(e, FMT_UNSUPPORTED, "metadata of %zu bytes (aprender holds up to 4 GiB)", meta_len);
	if (r == FMT_OK)
		r = emit(m, k, ts, m->n_tensors, meta, meta_len, e);
	free(meta);
	free(ts);
	return r;
}
