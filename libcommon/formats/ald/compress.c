/* zstd (one streaming frame, or independent frames of a fixed input size) and LZ4 frame
 * (lz4frame) for the .ald payload. */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <lz4.h>
#include <lz4frame.h>
#include "fmt/zstd_thread.h"
#include "compress.h"

static fmt_kind oom(fmt_err *e)
{
	return fmt_fail(e, FMT_IO, "out of memory");
}

fmt_kind fmt_unlz4_block(const uint8_t *src, size_t n, size_t max, uint8_t **out, size_t *len, fmt_err *e)
{
	if (n < 4)
		return fmt_fail(e, FMT_INVALID_FORMAT, "LZ4 block shorter than its 4-byte size");
	uint32_t want = (uint32_t)src[0] | (uint32_t)src[1] << 8 | (uint32_t)src[2] << 16 | (uint32_t)src[3] << 24;
	/* LZ4 expands a byte to at most 255: a size beyond that is a lie, refused before allocating */
	uint64_t holds = 255 * (uint64_t)(n - 4) + 64;
	if (holds < max)
		max = (size_t)holds;
	if (want > max || want > INT32_MAX || n - 4 > INT32_MAX)
		return fmt_fail(e, FMT_INVALID_FORMAT, "LZ4 block declares %u bytes (at most %zu)", want, max);
	uint8_t *buf = malloc(want ? want : 1);
	if (!buf)
		return oom(e);
	int got = LZ4_decompress_safe((const char *)src + 4, (char *)buf, (int)(n - 4), (int)want);
	if (got < 0 || (uint32_t)got != want) {
		free(buf);
		return fmt_fail(e, FMT_INVALID_FORMAT, "LZ4 block is malformed or not the %u bytes it declares", want);
	}
	*out = buf;
	*len = want;
	return FMT_OK;
}

fmt_kind fmt_compressor_init(fmt_compressor *c, int id, fmt_emit_fn emit, void *ctx, fmt_err *e)
{
	memset(c, 0, sizeof *c);
	c->id = id;
	c->emit = emit;
	c->ctx = ctx;
	c->cap = 1 << 17;
	if (id == 3)
		c->cap = LZ4F_compressBound(1 << 16, NULL) + 64;
	c->buf = malloc(c->cap);
	if (!c->buf)
		return oom(e);
	if (id == 1 || id == 2) {
		c->zc = ZSTD_createCCtx();
		if (!c->zc || ZSTD_isError(ZSTD_CCtx_setParameter(c->zc, ZSTD_c_compressionLevel, id == 1 ? 3 : 19)))
			return oom(e);
	} else if (id == 3) {
		LZ4F_cctx *lz;
		if (LZ4F_isError(LZ4F_createCompressionContext(&lz, LZ4F_VERSION)))
			return oom(e);
		c->lz = lz;
	}
	return FMT_OK;
}

fmt_kind fmt_compressor_split_frames(fmt_compressor *c, size_t input_per_frame, fmt_err *e)
{
	if (c->id != 1 && c->id != 2)
		return FMT_OK;
	size_t cap = ZSTD_compressBound(input_per_frame);
	uint8_t *out = malloc(cap), *in = malloc(input_per_frame);
	if (!out || !in) {
		free(out);
		free(in);
		return oom(e);
	}
	free(c->buf);
	c->buf = out;
	c->cap = cap;
	c->in = in;
	c->frame = input_per_frame;
	return FMT_OK;
}

static fmt_kind emit_frame(fmt_compressor *c, const uint8_t *p, size_t n, fmt_err *e)
{
	size_t w = ZSTD_compress2(c->zc, c->buf, c->cap, p, n);
	if (ZSTD_isError(w))
		return fmt_fail(e, fmt_zstd_kind(w, FMT_INTERNAL), "zstd: %s", ZSTD_getErrorName(w));
	c->framed = 1;
	return c->emit(c->ctx, c->buf, w, e);
}

/* Whole frames straight from p while nothing is gathered; a partial one into c->in. */
static fmt_kind feed_frames(fmt_compressor *c, const uint8_t *p, size_t n, fmt_err *e)
{
	while (n) {
		fmt_kind k = FMT_OK;
		if (c->in_len == 0 && n >= c->frame) {
			k = emit_frame(c, p, c->frame, e);
			p += c->frame;
			n -= c->frame;
		} else {
			size_t take = c->frame - c->in_len < n ? c->frame - c->in_len : n;
			memcpy(c->in + c->in_len, p, take);
			c->in_len += take;
			p += take;
			n -= take;
			if (c->in_len == c->frame) {
				c->in_len = 0;
				k = emit_frame(c, c->in, c->frame, e);
			}
		}
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

/* The last (or only) frame: even empty data is one frame. */
static fmt_kind end_frames(fmt_compressor *c, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	if (c->in_len || !c->framed)
		k = emit_frame(c, c->in, c->in_len, e);
	c->in_len = 0;
	c->framed = 0;
	return k;
}

static const LZ4F_preferences_t lz4_prefs = {
	.frameInfo = { .blockSizeID = LZ4F_max64KB, .blockMode = LZ4F_blockIndependent },
};

static fmt_kind lz4_begin(fmt_compressor *c, fmt_err *e)
{
	size_t n = LZ4F_compressBegin(c->lz, c->buf, c->cap, &lz4_prefs);
	if (LZ4F_isError(n))
		return fmt_fail(e, FMT_INTERNAL, "LZ4: %s", LZ4F_getErrorName(n));
	c->lz_started = 1;
	return c->emit(c->ctx, c->buf, n, e);
}

fmt_kind fmt_compressor_feed(fmt_compressor *c, const uint8_t *p, size_t n, fmt_err *e)
{
	fmt_kind k;
	if (c->id == 0)
		return n ? c->emit(c->ctx, p, n, e) : FMT_OK;
	if (c->id == 3) {
		if (!c->lz_started && (k = lz4_begin(c, e)) != FMT_OK)
			return k;
		while (n) {
			size_t take = n < (1 << 16) ? n : (1 << 16);
			size_t w = LZ4F_compressUpdate(c->lz, c->buf, c->cap, p, take, NULL);
			if (LZ4F_isError(w))
				return fmt_fail(e, FMT_INTERNAL, "LZ4: %s", LZ4F_getErrorName(w));
			if (w && (k = c->emit(c->ctx, c->buf, w, e)) != FMT_OK)
				return k;
			p += take;
			n -= take;
		}
		return FMT_OK;
	}
	if (c->frame)
		return feed_frames(c, p, n, e);
	ZSTD_inBuffer in = { p, n, 0 };
	while (in.pos < in.size) {
		ZSTD_outBuffer o = { c->buf, c->cap, 0 };
		size_t r = ZSTD_compressStream2(c->zc, &o, &in, ZSTD_e_continue);
		if (ZSTD_isError(r))
			return fmt_fail(e, fmt_zstd_kind(r, FMT_INTERNAL), "zstd: %s", ZSTD_getErrorName(r));
		if (o.pos && (k = c->emit(c->ctx, c->buf, o.pos, e)) != FMT_OK)
			return k;
	}
	return FMT_OK;
}

fmt_kind fmt_compressor_end(fmt_compressor *c, fmt_err *e)
{
	fmt_kind k;
	if (c->id == 0)
		return FMT_OK;
	if (c->id == 3) {
		if (!c->lz_started && (k = lz4_begin(c, e)) != FMT_OK)
			return k;
		size_t w = LZ4F_compressEnd(c->lz, c->buf, c->cap, NULL);
		if (LZ4F_isError(w))
			return fmt_fail(e, FMT_INTERNAL, "LZ4: %s", LZ4F_getErrorName(w));
		c->lz_started = 0;
		return c->emit(c->ctx, c->buf, w, e);
	}
	if (c->frame)
		return end_frames(c, e);
	size_t r;
	do {
		ZSTD_inBuffer in = { NULL, 0, 0 };
		ZSTD_outBuffer o = { c->buf, c->cap, 0 };
		r = ZSTD_compressStream2(c->zc, &o, &in, ZSTD_e_end);
		if (ZSTD_isError(r))
			return fmt_fail(e, fmt_zstd_kind(r, FMT_INTERNAL), "zstd: %s", ZSTD_getErrorName(r));
		if (o.pos && (k = c->emit(c->ctx, c->buf, o.pos, e)) != FMT_OK)
			return k;
	} while (r != 0);
	return FMT_OK;
}

void fmt_compressor_free(fmt_compressor *c)
{
	ZSTD_freeCCtx(c->zc);
	if (c->lz)
		LZ4F_freeCompressionContext(c->lz);
	free(c->buf);
	free(c->in);
	memset(c, 0, sizeof *c);
}

/* ---- streaming decompression ---- */

fmt_kind fmt_dstream_init(fmt_dstream *d, int id, const uint8_t *src, size_t n, uint64_t limit, fmt_err *e)
{
	memset(d, 0, sizeof *d);
	d->id = id;
	d->limit = limit;
	d->src = src;
	d->src_len = n;
	if (id == 1 || id == 2) {
		if (!(d->z = fmt_zstd_dctx_take()))
			return oom(e);
	} else if (id == 3) {
		LZ4F_dctx *l;
		if (LZ4F_isError(LZ4F_createDecompressionContext(&l, LZ4F_VERSION)))
			return oom(e);
		d->l = l;
	} else if (id != 0) {
		return fmt_fail(e, FMT_UNSUPPORTED, "compression id %d", id);
	}
	return FMT_OK;
}

/* Decompress at most room_left bytes into buf[end, ...). */
static fmt_kind produce_into(fmt_dstream *d, size_t room_left, fmt_err *e)
{
	if (d->id == 0) {
		size_t n = d->src_len - d->src_pos < room_left ? d->src_len - d->src_pos : room_left;
		memcpy(d->buf + d->end, d->src + d->src_pos, n);
		d->src_pos += n;
		d->end += n;
		d->done = d->src_pos == d->src_len;
		return FMT_OK;
	}
	if (d->id == 3) {
		size_t out_n = room_left, in_n = d->src_len - d->src_pos;
		size_t hint = LZ4F_decompress(d->l, d->buf + d->end, &out_n, d->src + d->src_pos, &in_n, NULL);
		if (LZ4F_isError(hint))
			return fmt_fail(e, FMT_INVALID_FORMAT, "LZ4 payload: %s", LZ4F_getErrorName(hint));
		d->src_pos += in_n;
		d->end += out_n;
		if (hint == 0) {
			if (d->src_pos != d->src_len)
				return fmt_fail(e, FMT_INVALID_FORMAT, "LZ4 payload has %zu bytes after the frame",
						d->src_len - d->src_pos);
			d->done = 1;
		} else if (out_n == 0 && in_n == 0 && d->src_pos == d->src_len) {
			return fmt_fail(e, FMT_INVALID_FORMAT, "LZ4 payload is truncated");
		}
		return FMT_OK;
	}
	ZSTD_inBuffer in = { d->src, d->src_len, d->src_pos };
	ZSTD_outBuffer o = { d->buf + d->end, room_left, 0 };
	size_t r = ZSTD_decompressStream(d->z, &o, &in);
	if (ZSTD_isError(r))
		return fmt_fail(e, fmt_zstd_kind(r, FMT_INVALID_FORMAT), "zstd payload: %s", ZSTD_getErrorName(r));
	int stuck = o.pos == 0 && in.pos == d->src_pos;
	d->src_pos = in.pos;
	d->end += o.pos;
	if (r == 0 && d->src_pos == d->src_len)
		d->done = 1;
	else if (stuck && d->src_pos == d->src_len)
		return fmt_fail(e, FMT_INVALID_FORMAT, "zstd payload is truncated");
	return FMT_OK;
}

/* A mapped source's pages leave the resident set this many bytes at a time. */
#define DROP_STEP (4u << 20)

/* Decompress what fits into buf[end, cap), at most one byte past the limit (to tell it). */
static fmt_kind produce(fmt_dstream *d, fmt_err *e)
{
	size_t room_left = d->cap - d->end, before = d->end;
	uint64_t left = d->limit - d->produced;
	if (left < room_left)
		room_left = (size_t)left + 1;
	fmt_kind k = produce_into(d, room_left, e);
	if (d->observe && d->src_pos > d->observed) { /* while those bytes are still in the cache */
		d->observe(d->observe_ctx, d->src + d->observed, d->src_pos - d->observed);
		d->observed = d->src_pos;
	}
	if (d->mapped && (d->src_pos - d->dropped >= DROP_STEP || d->done)) {
		fmt_source_drop(d->mapped, d->src + d->dropped, d->src_pos - d->dropped);
		d->dropped = d->src_pos;
	}
	d->produced += d->end - before;
	if (d->on_output && d->end > before)
		d->on_output(d->on_output_ctx, d->buf + before, d->end - before);
	if (k == FMT_OK && d->produced > d->limit)
		return fmt_fail(e, FMT_INVALID_FORMAT, "%s decompresses to more than the %llu bytes declared",
				d->what[0] ? d->what : "the data", (unsigned long long)d->limit);
	return k;
}

fmt_kind fmt_dstream_fill(fmt_dstream *d, size_t need, fmt_err *e)
{
	/* never a window larger than the declared size allows (one byte more tells a lie) */
	if (need > fmt_dstream_avail(d) && need - fmt_dstream_avail(d) > d->limit - d->produced)
		need = fmt_dstream_avail(d) + (size_t)(d->limit - d->produced) + 1;
	while (d->end - d->start < need && !d->done) {
		if (d->start > 0) {
			memmove(d->buf, d->buf + d->start, d->end - d->start);
			d->end -= d->start;
			d->start = 0;
		}
		if (d->cap - d->end < (1u << 16) || d->cap < need) {
			size_t cap = d->cap ? d->cap : 1 << 20;
			while (cap < need + (1u << 16))
				cap *= 2;
			if (cap > d->cap) {
				uint8_t *p = realloc(d->buf, cap);
				if (!p)
					return oom(e);
				d->buf = p;
				d->cap = cap;
			}
		}
		fmt_kind k = produce(d, e);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

/* Decompress up to n bytes straight into dst while the window is empty: a large read (a
 * batch's column) then skips the copy through the window. */
static fmt_kind produce_to(fmt_dstream *d, uint8_t *dst, size_t n, size_t *got, fmt_err *e)
{
	uint8_t *buf = d->buf;
	size_t cap = d->cap;
	d->buf = dst;
	d->cap = n;
	d->start = d->end = 0;
	fmt_kind k = produce(d, e);
	*got = d->end;
	d->buf = buf;
	d->cap = cap;
	d->start = d->end = 0;
	return k;
}

fmt_kind fmt_dstream_read(fmt_dstream *d, uint8_t *dst, uint64_t n, fmt_err *e)
{
	while (n) {
		size_t piece = n < (1u << 20) ? (size_t)n : 1u << 20;
		if (dst && piece >= (64u << 10) && !d->done) {
			/* what the window holds first, then the rest without it */
			size_t got = fmt_dstream_avail(d) < piece ? fmt_dstream_avail(d) : piece;
			fmt_kind k = FMT_OK;
			if (got) {
				memcpy(dst, fmt_dstream_data(d), got);
				fmt_dstream_consume(d, got);
			} else {
				k = produce_to(d, dst, piece, &got, e);
			}
			if (k != FMT_OK)
				return k;
			dst += got;
			n -= got;
			continue;
		}
		fmt_kind k = fmt_dstream_fill(d, piece, e);
		if (k != FMT_OK)
			return k;
		size_t got = fmt_dstream_avail(d) < piece ? fmt_dstream_avail(d) : piece;
		if (got == 0)
			return fmt_fail(e, FMT_INVALID_FORMAT, "the data ends %llu bytes early", (unsigned long long)n);
		if (dst) {
			memcpy(dst, fmt_dstream_data(d), got);
			dst += got;
		}
		fmt_dstream_consume(d, got);
		n -= got;
	}
	return FMT_OK;
}

fmt_kind fmt_dstream_drain(fmt_dstream *d, fmt_err *e)
{
	for (;;) {
		fmt_dstream_consume(d, fmt_dstream_avail(d));
		if (d->done)
			return FMT_OK;
		fmt_kind k = fmt_dstream_fill(d, 1u << 20, e);
		if (k != FMT_OK)
			return k;
	}
}

void fmt_dstream_free(fmt_dstream *d)
{
	fmt_zstd_dctx_give(d->z);
	if (d->l)
		LZ4F_freeDecompressionContext(d->l);
	free(d->buf);
	memset(d, 0, sizeof *d);
}
