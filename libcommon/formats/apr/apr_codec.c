/* APR tensor segments: the hashed output every APR writer goes through, and per-tensor LZ4 and
 * zstd frames (specs/apr.md A.4), compressed while streaming and decompressed on demand. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <lz4frame.h>
#include <zlib.h>
#include <zstd.h>
#include "fmt/checked.h"
#include "fmt/retype.h"
#include "fmt/strbuf.h"
#include "fmt/zstd_thread.h"
#include "apr_internal.h"

/* ---- output ---- */

fmt_kind fmt_apr_out_write(apr_out *o, const void *p, size_t n, fmt_err *e)
{
	if (n == 0)
		return FMT_OK;
	if (o->xxh && fmt_xxh3_update(o->xxh, p, n) != XXH_OK)
		return fmt_fail(e, FMT_INTERNAL, "XXH3 update failed");
	if (o->crc_on) {
		const uint8_t *b = p;
		for (size_t left = n; left > 0;) {
			uInt part = left > (1u << 30) ? (1u << 30) : (uInt)left;
			o->crc = crc32(o->crc, b, part);
			b += part;
			left -= part;
		}
	}
	o->pos += n;
	if (o->mem)
		fmt_sb_put(o->mem, p, n);
	return o->k ? fmt_sink_write(o->k, p, n, e) : FMT_OK;
}

fmt_kind fmt_apr_out_zeros(apr_out *o, uint64_t n, fmt_err *e)
{
	static const uint8_t zeros[4096];
	while (n > 0) {
		size_t part = n > sizeof zeros ? sizeof zeros : (size_t)n;
		fmt_kind k = fmt_apr_out_write(o, zeros, part, e);
		if (k != FMT_OK)
			return k;
		n -= part;
	}
	return FMT_OK;
}

fmt_kind fmt_apr_out_pad(apr_out *o, fmt_err *e)
{
	return fmt_apr_out_zeros(o, apr_align64(o->pos) - o->pos, e);
}

/* ---- reading windows ---- */

#define WINDOW (64u << 10)

fmt_kind fmt_apr_window_get(fmt_apr_window *w, uint64_t off, uint64_t n, const uint8_t **p, fmt_err *e)
{
	uint64_t end;
	if (fmt_add_u64(off, n, &end) || end > w->limit)
		return fmt_fail(e, FMT_INVALID_FORMAT, "%llu bytes at offset %llu run past the end",
				(unsigned long long)n, (unsigned long long)off);
	if (off >= w->start && end <= w->start + w->len) {
		*p = w->buf + (off - w->start);
		return FMT_OK;
	}
	/* A stream is not read ahead here (it reads ahead itself, and bytes passed are gone). */
	uint64_t want = n > WINDOW || w->s->sequential ? n : WINDOW;
	if (want > w->limit - off)
		want = w->limit - off;
	if (want > SIZE_MAX)
		return fmt_fail(e, FMT_IO, "out of memory");
	if (want > w->cap) {
		uint8_t *grown = realloc(w->buf, (size_t)want);
		if (!grown)
			return fmt_fail(e, FMT_IO, "out of memory");
		w->buf = grown;
		w->cap = (size_t)want;
	}
	w->len = 0;
	fmt_kind k = fmt_source_read(w->s, off, w->buf, (size_t)want, e);
	if (k != FMT_OK)
		return k;
	w->start = off;
	w->len = (size_t)want;
	*p = w->buf;
	return FMT_OK;
}

#define GROW_STEP (1u << 20)

fmt_kind fmt_apr_read_grow(fmt_source *s, uint64_t off, uint64_t n, uint8_t **out, fmt_err *e)
{
	uint8_t *buf = NULL;
	uint64_t done = 0;
	*out = NULL;
	if (n >= SIZE_MAX)
		return fmt_fail(e, FMT_IO, "out of memory");
	do {
		uint64_t part = n - done < GROW_STEP ? n - done : GROW_STEP;
		uint8_t *grown = realloc(buf, (size_t)(done + part) + 1);
		if (!grown) {
			free(buf);
			return fmt_fail(e, FMT_IO, "out of memory");
		}
		buf = grown;
		fmt_kind k = fmt_source_read(s, off + done, buf + done, (size_t)part, e);
		if (k != FMT_OK) {
			free(buf);
			return k;
		}
		done += part;
	} while (done < n);
	buf[n] = 0;
	*out = buf;
	return FMT_OK;
}

#define TAIL_CHUNK (1u << 16)

fmt_kind fmt_apr_stream_tail(fmt_source *s, uint64_t end, void (*hash)(void *ctx, const uint8_t *p, size_t n),
			     void *ctx, uint8_t *footer, size_t hold, size_t *footer_len, fmt_err *e)
{
	uint8_t *buf = malloc(TAIL_CHUNK + hold);
	fmt_kind k = buf ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	while (k == FMT_OK && s->pos < end) {          /* bytes no reader asked for */
		size_t part = end - s->pos < TAIL_CHUNK ? (size_t)(end - s->pos) : TAIL_CHUNK;
		k = fmt_source_read(s, s->pos, buf, part, e);
	}
	if (k == FMT_OK)
		k = fmt_source_observe(s, NULL, NULL, e);
	size_t held = 0, got = 1;
	while (k == FMT_OK && got > 0) {
		k = fmt_source_read_upto(s, s->pos, buf + held, TAIL_CHUNK, &got, e);
		held += got;
		if (held > hold) {
			hash(ctx, buf, held - hold);
			memmove(buf, buf + held - hold, hold);
			held = hold;
		}
	}
	*footer_len = held;
	if (k == FMT_OK)
		memcpy(footer, buf, held);
	free(buf);
	return k;
}

void fmt_apr_window_free(fmt_apr_window *w)
{
	free(w->buf);
	w->buf = NULL;
	w->cap = w->len = 0;
}

/* ---- compression ---- */

/* An LZ4 frame, streamed. */
typedef struct frame_writer {
	apr_out *o;
	LZ4F_cctx *l;
	uint8_t *buf;
	size_t cap;
} frame_writer;

static fmt_kind lz4_fail(size_t r, fmt_err *e)
{
	return fmt_fail(e, FMT_INTERNAL, "LZ4: %s", LZ4F_getErrorName(r));
}

#define LZ4_PIECE (256u << 10)

static fmt_kind frame_chunk(void *ctx, const uint8_t *p, size_t n, fmt_err *e)
{
	frame_writer *w = ctx;
	/* The output buffer is sized for LZ4_PIECE input bytes at a time. */
	for (size_t off = 0; off < n; off += LZ4_PIECE) {
		size_t part = n - off < LZ4_PIECE ? n - off : LZ4_PIECE;
		size_t r = LZ4F_compressUpdate(w->l, w->buf, w->cap, p + off, part, NULL);
		if (LZ4F_isError(r))
			return lz4_fail(r, e);
		fmt_kind k = fmt_apr_out_write(w->o, w->buf, r, e);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

static fmt_kind lz4_begin(frame_writer *w, const fmt_tensor *t, int level, fmt_err *e)
{
	LZ4F_preferences_t prefs;
	memset(&prefs, 0, sizeof prefs);
	prefs.frameInfo.contentSize = t->nbytes;
	prefs.frameInfo.blockSizeID = LZ4F_max4MB;
	prefs.compressionLevel = level;
	size_t r = LZ4F_createCompressionContext(&w->l, LZ4F_VERSION);
	if (LZ4F_isError(r))
		return lz4_fail(r, e);
	w->cap = LZ4F_compressBound(LZ4_PIECE, &prefs);
	if (w->cap < LZ4F_HEADER_SIZE_MAX)
		w->cap = LZ4F_HEADER_SIZE_MAX;
	w->buf = malloc(w->cap);
	if (!w->buf)
		return fmt_fail(e, FMT_IO, "out of memory");
	r = LZ4F_compressBegin(w->l, w->buf, w->cap, &prefs);
	return LZ4F_isError(r) ? lz4_fail(r, e) : fmt_apr_out_write(w->o, w->buf, r, e);
}

static fmt_kind lz4_frame(const fmt_model *m, const fmt_tensor *t, int level, apr_out *o, fmt_err *e)
{
	frame_writer w = { .o = o };
	fmt_kind k = lz4_begin(&w, t, level, e);
	if (k == FMT_OK) {
		/* Read into one reused buffer, not through the input's mapping (see fmt_apr_zstd_frame). */
		const fmt_model *from = m;
		const fmt_tensor *bytes = fmt_tensor_same_bytes(&from, t);
		k = fmt_tensor_each_chunk(from, bytes, frame_chunk, &w, e);
	}
	if (k == FMT_OK) {
		size_t r = LZ4F_compressEnd(w.l, w.buf, w.cap, NULL);
		k = LZ4F_isError(r) ? lz4_fail(r, e) : fmt_apr_out_write(o, w.buf, r, e);
	}
	LZ4F_freeCompressionContext(w.l);
	free(w.buf);
	return k;
}

fmt_kind fmt_apr_compress_tensor(const fmt_model *m, const fmt_tensor *t, apr_codec codec, int level, fmt_pool *pool,
				 apr_zjobs **keep, apr_out *o, uint64_t *stored, fmt_err *e)
{
	const uint64_t start = o->pos;   /* what fmt_apr_out_write adds up */
	fmt_kind k = codec == APR_CODEC_ZSTD ? fmt_apr_zstd_frame(m, t, level, pool, keep, o, e)
					     : lz4_frame(m, t, level, o, e);
	*stored = o->pos - start;
	return k;
}

/* ---- decompression on demand ---- */

/* A compressed tensor read front to back (what writers do) is decoded straight into each
 * range asked for (struct frame_stream: one decoder kept between reads); read any other way, or
 * decoded ahead on other threads, it is decompressed whole and the buffer dropped once every
 * byte was handed out: readers (and the conversion pool's tasks) take disjoint ranges. */
struct frame_stream;
typedef struct frame_reader {
	int src;
	uint64_t off, stored;
	apr_codec codec;
	pthread_mutex_t lock;
	uint8_t *raw;
	uint64_t served;
	struct frame_stream *fs;       /* decoding in order, or NULL */
} frame_reader;

static void stream_free(struct frame_stream *fs);

static void frame_reader_free(void *p)
{
	frame_reader *r = p;
	pthread_mutex_destroy(&r->lock);
	stream_free(r->fs);
	free(r->raw);
	free(r);
}

/* No frame expands beyond this: LZ4 gives at most about 255 to 1, zstd 32768 to 1 (an RLE
 * block of 128 KiB in 4 bytes). A larger claim is refused before anything is allocated. */
static int plausible(apr_codec codec, uint64_t stored, uint64_t raw)
{
	uint64_t bound;
	if (fmt_mul_u64(stored, codec == APR_CODEC_LZ4 ? 256u : 32768u, &bound) ||
	    fmt_add_u64(bound, 1u << 17, &bound))
		return 1;
	return raw <= bound;
}

#define SCRATCH (256u << 10)

/* Where decoded bytes go: dst (raw bytes of room), or a scratch buffer reused when only
 * counting (verifying a frame without holding the tensor). */
typedef struct decode_out {
	uint8_t *dst, *scratch;
	uint64_t raw, done;
} decode_out;

static void next_window(decode_out *d, uint8_t **p, size_t *room)
{
	uint64_t left = d->raw - d->done;
	if (d->dst) {
		*p = d->dst + d->done;
		*room = left > SIZE_MAX ? SIZE_MAX : (size_t)left;
	} else {
		*p = d->scratch;
		*room = left < SCRATCH ? (size_t)left : SCRATCH;
	}
	if (*room == 0) {          /* room for the decoder to show there is more than raw */
		*p = d->scratch;
		*room = 1;
	}
}

static fmt_kind too_much(const decode_out *d, fmt_err *e)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "the frame holds more than the %llu bytes the index says",
			(unsigned long long)d->raw);
}

/* The compressed bytes, read by pread in bounded pieces (no mapping: a large model converts in
 * little memory, and the pages are not charged to the process). */
#define IN_PIECE (1u << 20)

typedef struct frame_in {
	fmt_source *s;
	uint64_t off, left;            /* next byte to read, bytes not read yet */
	uint8_t *buf;
	size_t len, pos;               /* bytes in buf, bytes of them consumed */
} frame_in;

/* Refill when everything read was consumed; 0 bytes left in buf means the segment ended. */
static fmt_kind in_fill(frame_in *in, fmt_err *e)
{
	if (in->pos < in->len || in->left == 0)
		return FMT_OK;
	size_t n = in->left < IN_PIECE ? (size_t)in->left : IN_PIECE;
	fmt_kind k = fmt_source_read(in->s, in->off, in->buf, n, e);
	if (k != FMT_OK)
		return k;
	in->off += n;
	in->left -= n;
	in->len = n;
	in->pos = 0;
	return FMT_OK;
}

static int in_done(const frame_in *in)
{
	return in->pos == in->len && in->left == 0;
}

static fmt_kind zstd_decode(frame_in *in, decode_out *d, fmt_err *e)
{
	unsigned long long size = ZSTD_getFrameContentSize(in->buf, in->len);
	if (size == ZSTD_CONTENTSIZE_ERROR)
		return fmt_fail(e, FMT_INVALID_FORMAT, "not a zstd frame");
	if (size == ZSTD_CONTENTSIZE_UNKNOWN)
		return fmt_fail(e, FMT_INVALID_FORMAT, "zstd frame without content size");
	if (size != d->raw)
		return fmt_fail(e, FMT_INVALID_FORMAT, "zstd frame holds %llu bytes, the index says %llu", size,
				(unsigned long long)d->raw);
	ZSTD_DCtx *z = fmt_zstd_dctx_take();
	if (!z)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = FMT_OK;
	size_t r = 1;
	while (k == FMT_OK && r != 0) {
		k = in_fill(in, e);
		if (k != FMT_OK)
			break;
		uint8_t *p;
		size_t room;
		next_window(d, &p, &room);
		ZSTD_inBuffer src = { in->buf, in->len, in->pos };
		ZSTD_outBuffer out = { p, room, 0 };
		r = ZSTD_decompressStream(z, &out, &src);
		int stuck = src.pos == in->pos && out.pos == 0;
		in->pos = src.pos;
		if (ZSTD_isError(r))
			k = fmt_fail(e, fmt_zstd_kind(r, FMT_INVALID_FORMAT), "zstd: %s", ZSTD_getErrorName(r));
		else if (d->done + out.pos > d->raw)
			k = too_much(d, e);
		else if (r != 0 && stuck && in_done(in))
			k = fmt_fail(e, FMT_INVALID_FORMAT, "zstd frame is truncated");
		else
			d->done += out.pos;
	}
	if (k == FMT_OK && (!in_done(in) || d->done != d->raw))
		k = fmt_fail(e, FMT_INVALID_FORMAT, "the segment is not exactly one zstd frame of %llu bytes",
			     (unsigned long long)d->raw);
	fmt_zstd_dctx_give(z);
	return k;
}

static fmt_kind lz4_decode(frame_in *in, decode_out *d, fmt_err *e)
{
	LZ4F_dctx *z = NULL;
	LZ4F_frameInfo_t info;
	size_t r = LZ4F_createDecompressionContext(&z, LZ4F_VERSION);
	if (LZ4F_isError(r))
		return fmt_fail(e, FMT_IO, "out of memory");
	size_t used = in->len;
	fmt_kind k = FMT_OK;
	r = LZ4F_getFrameInfo(z, &info, in->buf, &used);
	if (LZ4F_isError(r))
		k = fmt_fail(e, FMT_INVALID_FORMAT, "not an LZ4 frame (%s)", LZ4F_getErrorName(r));
	else if (info.contentSize == 0 && d->raw != 0)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "LZ4 frame without content size");
	else if (info.contentSize != d->raw)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "LZ4 frame holds %llu bytes, the index says %llu",
			     (unsigned long long)info.contentSize, (unsigned long long)d->raw);
	in->pos = used;
	while (k == FMT_OK) {
		k = in_fill(in, e);
		if (k != FMT_OK)
			break;
		uint8_t *p;
		size_t room, src = in->len - in->pos;
		next_window(d, &p, &room);
		r = LZ4F_decompress(z, p, &room, in->buf + in->pos, &src, NULL);
		if (LZ4F_isError(r)) {
			k = fmt_fail(e, FMT_INVALID_FORMAT, "LZ4: %s", LZ4F_getErrorName(r));
			break;
		}
		in->pos += src;
		if (d->done + room > d->raw) {
			k = too_much(d, e);
			break;
		}
		d->done += room;
		if (r == 0)
			break;
		if (src == 0 && room == 0 && in_done(in))
			k = fmt_fail(e, FMT_INVALID_FORMAT, "LZ4 frame is truncated");
	}
	if (k == FMT_OK && (!in_done(in) || d->done != d->raw))
		k = fmt_fail(e, FMT_INVALID_FORMAT, "the segment is not exactly one LZ4 frame of %llu bytes",
			     (unsigned long long)d->raw);
	LZ4F_freeDecompressionContext(z);
	return k;
}

/* Decode the frame of stored bytes at off in s into dst (raw bytes), or with dst NULL only
 * check that it holds exactly raw bytes; memory stays bounded either way. */
static fmt_kind frame_decode(fmt_source *s, uint64_t off, uint64_t stored, apr_codec codec, uint8_t *dst,
			     uint64_t raw, fmt_err *e)
{
	decode_out d = { .dst = dst, .raw = raw };
	frame_in in = { .s = s, .off = off, .left = stored };
	if (!plausible(codec, stored, raw))
		return fmt_fail(e, FMT_INVALID_FORMAT, "%llu stored bytes cannot hold %llu raw bytes",
				(unsigned long long)stored, (unsigned long long)raw);
	d.scratch = malloc(SCRATCH);
	in.buf = malloc(IN_PIECE);
	fmt_kind k = d.scratch && in.buf ? in_fill(&in, e) : fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		k = codec == APR_CODEC_ZSTD ? zstd_decode(&in, &d, e) : lz4_decode(&in, &d, e);
	free(d.scratch);
	free(in.buf);
	return k;
}

fmt_kind fmt_apr_check_frame(const fmt_model *m, const fmt_tensor *t, fmt_err *e)
{
	const frame_reader *r = t->reader_ctx;
	fmt_kind k = frame_decode(&m->sources[r->src], r->off, r->stored, r->codec, NULL, t->nbytes, e);
	if (k != FMT_OK)
		fmt_err_prefix(e, "tensor '%s'", t->name);
	return k;
}

static fmt_kind decompress_whole(const fmt_model *m, const fmt_tensor *t, frame_reader *r, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	if (t->nbytes > SIZE_MAX)
		return fmt_fail(e, FMT_IO, "tensor too large for memory");
	if (!plausible(r->codec, r->stored, t->nbytes))
		k = fmt_fail(e, FMT_INVALID_FORMAT, "%llu stored bytes cannot hold %llu raw bytes",
			     (unsigned long long)r->stored, (unsigned long long)t->nbytes);
	if (k == FMT_OK && !(r->raw = malloc(t->nbytes ? (size_t)t->nbytes : 1)))
		k = fmt_fail(e, FMT_IO, "out of memory for tensor '%s' (%llu bytes)", t->name,
			     (unsigned long long)t->nbytes);
	if (k == FMT_OK)
		k = frame_decode(&m->sources[r->src], r->off, r->stored, r->codec, r->raw, t->nbytes, e);
	if (k != FMT_OK) {
		free(r->raw);
		r->raw = NULL;
		fmt_err_prefix(e, "tensor '%s'", t->name);
		fmt_err_file(e, m->sources[r->src].path);
	}
	return k;
}

static fmt_kind frame_read(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst, size_t n,
			   fmt_err *e);

/* ---- decoding in order, straight into the destination ---- */

typedef struct frame_stream {
	ZSTD_DCtx *z;
	LZ4F_dctx *l;
	frame_in in;
	uint64_t done, raw;            /* bytes produced, bytes the frame must hold */
} frame_stream;

static void stream_free(frame_stream *fs)
{
	if (!fs)
		return;
	fmt_zstd_dctx_give(fs->z);
	LZ4F_freeDecompressionContext(fs->l);
	free(fs->in.buf);
	free(fs);
}

static fmt_kind stream_begin(fmt_source *s, const frame_reader *r, uint64_t raw, frame_stream **out,
			     fmt_err *e)
{
	frame_stream *fs = calloc(1, sizeof *fs);
	*out = NULL;
	if (!fs)
		return fmt_fail(e, FMT_IO, "out of memory");
	fs->in = (frame_in){ .s = s, .off = r->off, .left = r->stored };
	fs->raw = raw;
	fmt_kind k = plausible(r->codec, r->stored, raw) ? FMT_OK
		: fmt_fail(e, FMT_INVALID_FORMAT, "%llu stored bytes cannot hold %llu raw bytes",
			   (unsigned long long)r->stored, (unsigned long long)raw);
	if (k == FMT_OK && !(fs->in.buf = malloc(IN_PIECE)))
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		k = in_fill(&fs->in, e);
	if (k == FMT_OK && r->codec == APR_CODEC_ZSTD) {
		unsigned long long size = ZSTD_getFrameContentSize(fs->in.buf, fs->in.len);
		if (size == ZSTD_CONTENTSIZE_ERROR)
			k = fmt_fail(e, FMT_INVALID_FORMAT, "not a zstd frame");
		else if (size == ZSTD_CONTENTSIZE_UNKNOWN)
			k = fmt_fail(e, FMT_INVALID_FORMAT, "zstd frame without content size");
		else if (size != raw)
			k = fmt_fail(e, FMT_INVALID_FORMAT, "zstd frame holds %llu bytes, the index says %llu", size,
				     (unsigned long long)raw);
		else if (!(fs->z = fmt_zstd_dctx_take()))
			k = fmt_fail(e, FMT_IO, "out of memory");
	} else if (k == FMT_OK) {
		LZ4F_frameInfo_t info;
		size_t used = fs->in.len, rc = LZ4F_createDecompressionContext(&fs->l, LZ4F_VERSION);
		if (LZ4F_isError(rc))
			k = fmt_fail(e, FMT_IO, "out of memory");
		else if (LZ4F_isError(rc = LZ4F_getFrameInfo(fs->l, &info, fs->in.buf, &used)))
			k = fmt_fail(e, FMT_INVALID_FORMAT, "not an LZ4 frame (%s)", LZ4F_getErrorName(rc));
		else if (info.contentSize != raw || (info.contentSize == 0 && raw != 0))
			k = fmt_fail(e, FMT_INVALID_FORMAT, "LZ4 frame holds %llu bytes, the index says %llu",
				     (unsigned long long)info.contentSize, (unsigned long long)raw);
		fs->in.pos = used;
	}
	if (k != FMT_OK) {
		stream_free(fs);
		return k;
	}
	*out = fs;
	return FMT_OK;
}

/* Decode into dst (room bytes); *made = bytes produced, *ended when the frame is complete. */
static fmt_kind stream_step(frame_stream *fs, uint8_t *dst, size_t room, size_t *made, int *ended, fmt_err *e)
{
	fmt_kind k = in_fill(&fs->in, e);
	*made = 0;
	*ended = 0;
	if (k != FMT_OK)
		return k;
	size_t before = fs->in.pos;
	if (fs->z) {
		ZSTD_inBuffer src = { fs->in.buf, fs->in.len, fs->in.pos };
		ZSTD_outBuffer out = { dst, room, 0 };
		size_t r = ZSTD_decompressStream(fs->z, &out, &src);
		if (ZSTD_isError(r))
			return fmt_fail(e, fmt_zstd_kind(r, FMT_INVALID_FORMAT), "zstd: %s", ZSTD_getErrorName(r));
		fs->in.pos = src.pos;
		*made = out.pos;
		*ended = r == 0;
	} else {
		size_t src = fs->in.len - fs->in.pos, out = room;
		size_t r = LZ4F_decompress(fs->l, dst, &out, fs->in.buf + fs->in.pos, &src, NULL);
		if (LZ4F_isError(r))
			return fmt_fail(e, FMT_INVALID_FORMAT, "LZ4: %s", LZ4F_getErrorName(r));
		fs->in.pos += src;
		*made = out;
		*ended = r == 0;
	}
	if (!*ended && *made == 0 && fs->in.pos == before && in_done(&fs->in))
		return fmt_fail(e, FMT_INVALID_FORMAT, "%s frame is truncated", fs->z ? "zstd" : "LZ4");
	return FMT_OK;
}

/* The next n bytes of the frame into dst; after the last, the frame must end exactly there. */
static fmt_kind stream_read(frame_stream *fs, uint8_t *dst, size_t n, fmt_err *e)
{
	size_t made;
	int ended = 0;
	fmt_kind k = FMT_OK;
	for (size_t got = 0; k == FMT_OK && got < n; got += made) {
		k = stream_step(fs, dst + got, n - got, &made, &ended, e);
		if (k == FMT_OK && ended && got + made < n)
			k = fmt_fail(e, FMT_INVALID_FORMAT, "the frame holds %llu bytes, fewer than the %llu the index says",
				     (unsigned long long)(fs->done + got + made), (unsigned long long)fs->raw);
	}
	fs->done += n;
	while (k == FMT_OK && fs->done == fs->raw && !ended) {   /* the end of the frame, and nothing more */
		uint8_t one;
		k = stream_step(fs, &one, 1, &made, &ended, e);
		if (k == FMT_OK && made)
			k = fmt_fail(e, FMT_INVALID_FORMAT, "the frame holds more than the %llu bytes the index says",
				     (unsigned long long)fs->raw);
	}
	if (k == FMT_OK && fs->done == fs->raw && !in_done(&fs->in))
		k = fmt_fail(e, FMT_INVALID_FORMAT, "the segment is not exactly one %s frame of %llu bytes",
			     fs->z ? "zstd" : "LZ4", (unsigned long long)fs->raw);
	return k;
}

/* ---- decoding ahead ---- */

#define AHEAD_MAX 16

typedef struct ahead {
	const fmt_model *m;
	const fmt_tensor *ts[AHEAD_MAX];
	size_t n;
} ahead;

static void decode_ahead_task(void *ctx, size_t i)
{
	ahead *a = ctx;
	frame_reader *r = a->ts[i]->reader_ctx;
	fmt_err e;
	pthread_mutex_lock(&r->lock);
	if (!r->raw)   /* a failure is reported by the read itself, which decodes again */
		(void)decompress_whole(a->m, a->ts[i], r, &e);
	pthread_mutex_unlock(&r->lock);
}

static int decoded(frame_reader *r)
{
	pthread_mutex_lock(&r->lock);
	int has = r->raw != NULL;
	pthread_mutex_unlock(&r->lock);
	return has;
}

/* Before t's first read, decode t and the next compressed tensors (in model order: the order
 * writers read them) in parallel, one per reader thread: frames are independent, so a model
 * decompresses about as many times faster as there are threads. */
static void decode_ahead(const fmt_model *m, const fmt_tensor *t)
{
	apr_state *st = m->format_state;
	int threads = m->reader_threads;
	fmt_err e;
	if (threads < 2 || !st || t < m->tensors || t >= m->tensors + m->n_tensors || fmt_model_sequential(m) ||
	    fmt_tensor_reads_in_parallel())
		return;
	pthread_mutex_lock(&st->prefetch_lock);
	if (!st->pool && fmt_pool_create(&st->pool, threads, &e) != FMT_OK)
		st->pool = NULL;
	ahead a = { .m = m };
	for (size_t j = (size_t)(t - m->tensors); st->pool && j < m->n_tensors && a.n < (size_t)threads && a.n < AHEAD_MAX; j++) {
		const fmt_tensor *u = &m->tensors[j];
		if (u->reader == frame_read && !decoded(u->reader_ctx))
			a.ts[a.n++] = u;
	}
	if (a.n > 1)
		fmt_pool_run(st->pool, a.n, decode_ahead_task, &a);
	pthread_mutex_unlock(&st->prefetch_lock);
}

static fmt_kind frame_read(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst, size_t n,
			   fmt_err *e)
{
	frame_reader *r = t->reader_ctx;
	fmt_kind k = FMT_OK;
	if (off == 0 && !decoded(r))
		decode_ahead(m, t);
	pthread_mutex_lock(&r->lock);
	if (!r->raw && off == 0 && !r->fs)
		k = stream_begin(&m->sources[r->src], r, t->nbytes, &r->fs, e);
	if (k == FMT_OK && !r->raw && r->fs && off == r->fs->done) {
		k = stream_read(r->fs, dst, n, e);
		if (k != FMT_OK || r->fs->done == t->nbytes) {
			stream_free(r->fs);
			r->fs = NULL;
		}
		if (k != FMT_OK) {
			fmt_err_prefix(e, "tensor '%s'", t->name);
			fmt_err_file(e, m->sources[r->src].path);
		}
		pthread_mutex_unlock(&r->lock);
		return k;
	}
	if (k != FMT_OK) {
		fmt_err_prefix(e, "tensor '%s'", t->name);
		fmt_err_file(e, m->sources[r->src].path);
	}
	stream_free(r->fs);              /* read out of order: decode it whole */
	r->fs = NULL;
	if (k == FMT_OK && !r->raw)
		k = decompress_whole(m, t, r, e);
	if (k == FMT_OK) {
		memcpy(dst, r->raw + off, n);
		r->served += n;
		if (r->served >= t->nbytes) {
			free(r->raw);
			r->raw = NULL;
			r->served = 0;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return k;
}

fmt_kind fmt_apr_attach_frame(fmt_model *m, fmt_tensor *t, int src, uint64_t off, uint64_t stored,
			  apr_codec codec, fmt_err *e)
{
	(void)m;
	frame_reader *r = calloc(1, sizeof *r);
	if (!r)
		return fmt_fail(e, FMT_IO, "out of memory");
	*r = (frame_reader){ .src = src, .off = off, .stored = stored, .codec = codec };
	pthread_mutex_init(&r->lock, NULL);
	t->source = src;               /* for reporting; the reader takes precedence */
	t->reader = frame_read;
	t->reader_ctx = r;
	t->free_ctx = frame_reader_free;
	t->chunk_align = 0;
	return FMT_OK;
}
