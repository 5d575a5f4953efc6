/* Page compression: SNAPPY (libsnappy's C API), GZIP (zlib), ZSTD, LZ4_RAW (an LZ4 block) and
 * none. Decompression must give exactly the size the page header says. */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_getFrameHeader (libzstd is linked from its archive) */
#include <zstd.h>
#include <zstd_errors.h>
#include "fmt/lazylib.h"
#include "fmt/zstd_thread.h"
#include "pq_internal.h"

/* libsnappy is C++ and brings libstdc++: loaded when a SNAPPY page is first met (fmt/lazylib.h),
 * not linked, so that no tool maps and relocates it at start-up. Called through SN(name). */
#define SNAPPY_FUNCTIONS(X) \
	X(snappy_compress) X(snappy_max_compressed_length) X(snappy_uncompress) X(snappy_uncompressed_length)
static const char *const snappy_names[] = { SNAPPY_FUNCTIONS(FMT_LAZY_NAME) };
static FMT_LAZY_TABLE(SNAPPY_FUNCTIONS) snappy_fns;
FMT_LAZY_CHECK(snappy_fns);
static fmt_lazylib snappy_lib = { "libsnappy.so.1", snappy_names, snappy_fns.slot,
				  sizeof snappy_names / sizeof snappy_names[0], 0 };
#define SN(f) snappy_fns.fn.f

/* A page of column col that does not decompress: "Parquet: column 'COL': a ZSTD page ...", as the
 * reader's other messages name it. */
static fmt_kind __attribute__((format(printf, 4, 5))) page_fail(const char *col, fmt_err *e, fmt_kind kind,
								 const char *format, ...)
{
	char what[FMT_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, format);
	vsnprintf(what, sizeof what, format, ap);
	va_end(ap);
	return fmt_fail(e, kind, "Parquet: column '%s': %s", col, what);
}

static fmt_kind short_page(const char *col, fmt_err *e, const char *codec, size_t got, size_t want)
{
	return page_fail(col, e, FMT_INVALID_FORMAT, "a %s page decompresses to %zu bytes, the header says %zu", codec, got,
			 want);
}

static fmt_kind gunzip(const char *col, const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len, fmt_err *e)
{
	z_stream z = { 0 };
	if (src_len > UINT_MAX || dst_len > UINT_MAX)
		return page_fail(col, e, FMT_UNSUPPORTED, "a GZIP page over 4 GiB");
	if (inflateInit2(&z, 15 + 32) != Z_OK)
		return fmt_fail(e, FMT_IO, "out of memory");
	z.next_in = (Bytef *)src;
	z.avail_in = (uInt)src_len;
	z.next_out = dst;
	z.avail_out = (uInt)dst_len;
	int r = inflate(&z, Z_FINISH);
	size_t got = dst_len - z.avail_out;
	inflateEnd(&z);
	if (r != Z_STREAM_END)
		return r == Z_BUF_ERROR && z.avail_out == 0 ? short_page(col, e, "GZIP", dst_len + 1, dst_len) :
		       page_fail(col, e, FMT_INVALID_FORMAT, "a GZIP page does not inflate (zlib error %d)", r);
	return got == dst_len ? FMT_OK : short_page(col, e, "GZIP", got, dst_len);
}

fmt_kind fmt_pq_decompress(const char *col, int codec, const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
			   fmt_err *e)
{
	switch (codec) {
	case CODEC_NONE:
		if (src_len != dst_len)
			return short_page(col, e, "UNCOMPRESSED", src_len, dst_len);
		memcpy(dst, src, src_len);
		return FMT_OK;
	case CODEC_SNAPPY: {
		size_t n;
		fmt_kind loaded = fmt_lazylib_load(&snappy_lib, e);
		if (loaded != FMT_OK)
			return loaded;
		if (SN(snappy_uncompressed_length)((const char *)src, src_len, &n) != SNAPPY_OK)
			return page_fail(col, e, FMT_INVALID_FORMAT, "a SNAPPY page is malformed");
		if (n != dst_len)
			return short_page(col, e, "SNAPPY", n, dst_len);
		if (SN(snappy_uncompress)((const char *)src, src_len, (char *)dst, &n) != SNAPPY_OK || n != dst_len)
			return page_fail(col, e, FMT_INVALID_FORMAT, "a SNAPPY page is malformed");
		return FMT_OK;
	}
	case CODEC_GZIP:
		return gunzip(col, src, src_len, dst, dst_len, e);
	case CODEC_ZSTD: {
		size_t n = fmt_zstd_decompress(dst, dst_len, src, src_len);
		if (ZSTD_isError(n))
			return page_fail(col, e, fmt_zstd_kind(n, FMT_INVALID_FORMAT), "a ZSTD page: %s", ZSTD_getErrorName(n));
		return n == dst_len ? FMT_OK : short_page(col, e, "ZSTD", n, dst_len);
	}
	case CODEC_LZ4_RAW: {
		if (src_len > INT_MAX || dst_len > INT_MAX)
			return page_fail(col, e, FMT_UNSUPPORTED, "an LZ4_RAW page over 2 GiB");
		int n = LZ4_decompress_safe((const char *)src, (char *)dst, (int)src_len, (int)dst_len);
		if (n < 0)
			return page_fail(col, e, FMT_INVALID_FORMAT, "an LZ4_RAW page is malformed");
		return (size_t)n == dst_len ? FMT_OK : short_page(col, e, "LZ4_RAW", (size_t)n, dst_len);
	}
	default:
		return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: codec %s (%d) is not supported (none, SNAPPY, GZIP, ZSTD, "
				"LZ4_RAW are)", fmt_pq_codec_name(codec), codec);
	}
}

/* ---- a page body decompressed as it is read ---- */

/* The compressed bytes read from the file at a time. */
#define INFLOW_IN (256u << 10)
#define INFLOW_NONE_IN (16u << 10)
/* The least window (log2) a ZSTD page may ask for, whatever its size. */
#define ZSTD_MIN_WINDOW_LOG 24
/* zstd's default limit (ZSTD_WINDOWLOG_LIMIT_DEFAULT, in its static API only). */
#define ZSTD_MAX_WINDOW_LOG 27

int fmt_pq_can_stream(int codec)
{
	return codec == CODEC_NONE || codec == CODEC_GZIP || codec == CODEC_ZSTD;
}

static fmt_kind inflow_oom(fmt_err *e)
{
	return fmt_fail(e, FMT_IO, "out of memory");
}

/* The largest window (log2) a ZSTD page of ulen bytes may ask for, which the decoder allocates:
 * no more than the page needs, and 16 MiB at least (a writer that streams a frame without its size
 * asks its level's window: 2^21 to 2^23 up to level 19), within zstd's default limit (2^27). */
static int zstd_window_log(uint64_t ulen)
{
	int wlog = ZSTD_MIN_WINDOW_LOG;
	while (wlog < ZSTD_MAX_WINDOW_LOG && (1ull << wlog) < ulen)
		wlog++;
	return wlog;
}

fmt_kind fmt_pq_inflow_open(pq_inflow *s, const char *col, int codec, const pq_file *f, const uint8_t *mem,
			    uint64_t off, uint64_t clen, uint64_t ulen, fmt_err *e)
{
	s->codec = codec;
	s->col = col;
	s->file = f;
	s->mem = mem;
	s->off = off;
	s->in_left = clen;
	s->inp = NULL;
	s->in_pos = s->in_len = 0;
	s->out_size = s->out_left = ulen;
	s->done = 0;
	s->direct = 0;
	if (codec == CODEC_ZSTD) {
		if (!s->zstd && !(s->zstd = ZSTD_createDCtx()))
			return inflow_oom(e);
		ZSTD_DCtx_reset(s->zstd, ZSTD_reset_session_only);
		int wlog = zstd_window_log(ulen);
		if (ZSTD_isError(ZSTD_DCtx_setParameter(s->zstd, ZSTD_d_windowLogMax, wlog)))
			return fmt_fail(e, FMT_INTERNAL, "zstd: windowLogMax %d refused", wlog);
	} else if (codec == CODEC_GZIP) {
		if (!s->gz) {
			z_stream *z = calloc(1, sizeof *z);
			if (!z || inflateInit2(z, 15 + 32) != Z_OK) {
				free(z);
				return inflow_oom(e);
			}
			s->gz = z;
		} else if (inflateReset(s->gz) != Z_OK) {
			return fmt_fail(e, FMT_INTERNAL, "zlib inflateReset failed");
		}
	} else if (codec != CODEC_NONE) {
		return fmt_fail(e, FMT_INTERNAL, "Parquet: codec %d read as a stream", codec);
	} else if (clen != ulen) {
		return short_page(col, e, "UNCOMPRESSED", (size_t)clen, (size_t)ulen);
	}
	return FMT_OK;
}

/* More compressed bytes at s->inp when those read are used up (none when there are no more). */
static fmt_kind inflow_fill(pq_inflow *s, fmt_err *e)
{
	if (s->in_pos < s->in_len || s->in_left == 0)
		return FMT_OK;
	/* a page stored as it is: only its small reads (levels) come here (inflow_some) */
	size_t cap = s->codec == CODEC_NONE && !s->mem ? INFLOW_NONE_IN : INFLOW_IN;
	size_t n = s->in_left < cap ? (size_t)s->in_left : cap;
	if (s->mem) {
		s->inp = s->mem;
		s->mem += n;
	} else {
		if (s->in_cap < n) {
			uint8_t *in = realloc(s->in, cap);
			if (!in)
				return inflow_oom(e);
			s->in = in;
			s->in_cap = cap;
		}
		fmt_kind k = fmt_pq_file_read(s->file, s->off, s->in, n, e);
		if (k != FMT_OK)
			return k;
		s->inp = s->in;
	}
	s->off += n;
	s->in_left -= n;
	s->in_pos = 0;
	s->in_len = n;
	return FMT_OK;
}

static int inflow_dry(const pq_inflow *s)
{
	return s->in_pos == s->in_len && s->in_left == 0;
}

/* A read of at least this many bytes of a page stored as it is in a file goes straight to its
 * destination, not through the inflow's buffer (which is then never made for a page read in
 * slices: a row group's columns do not each hold INFLOW_IN). */
#define INFLOW_DIRECT (4u << 10)

/* Up to n decompressed bytes into dst: *got of them (0: the codec's stream gives no more). */
static fmt_kind inflow_some(pq_inflow *s, uint8_t *dst, size_t n, size_t *got, fmt_err *e)
{
	*got = 0;
	if (s->codec == CODEC_NONE && !s->mem && s->in_pos == s->in_len && (n >= INFLOW_DIRECT || s->direct) &&
	    s->in_left) {
		size_t take = s->in_left < n ? (size_t)s->in_left : n;
		fmt_kind k = fmt_pq_file_read(s->file, s->off, dst, take, e);
		if (k != FMT_OK)
			return k;
		s->off += take;
		s->in_left -= take;
		*got = take;
		return FMT_OK;
	}
	for (;;) {
		fmt_kind k = inflow_fill(s, e);
		if (k != FMT_OK)
			return k;
		size_t in_before = s->in_pos;
		if (s->codec == CODEC_NONE) {
			size_t take = s->in_len - s->in_pos < n ? s->in_len - s->in_pos : n;
			memcpy(dst, s->inp + s->in_pos, take);
			s->in_pos += take;
			*got = take;
		} else if (s->codec == CODEC_ZSTD) {
			ZSTD_outBuffer o = { dst, n, 0 };
			ZSTD_inBuffer i = { s->inp, s->in_len, s->in_pos };
			size_t r = ZSTD_decompressStream(s->zstd, &o, &i);
			if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge)
				return page_fail(s->col, e, FMT_INVALID_FORMAT, "a ZSTD page of %llu bytes asks for a window "
						 "of more than %d MiB", (unsigned long long)s->out_size,
						 1 << (zstd_window_log(s->out_size) - 20));
			if (ZSTD_isError(r))
				return page_fail(s->col, e, fmt_zstd_kind(r, FMT_INVALID_FORMAT), "a ZSTD page: %s", ZSTD_getErrorName(r));
			if (r == 0 || o.pos || i.pos != in_before)   /* a call on no input says nothing */
				s->done = r == 0;
			s->in_pos = i.pos;
			*got = o.pos;
		} else {
			z_stream *z = s->gz;
			if (s->done)
				return FMT_OK;
			z->next_in = (Bytef *)(s->inp ? s->inp + s->in_pos : NULL);
			z->avail_in = (uInt)(s->in_len - s->in_pos);
			z->next_out = dst;
			z->avail_out = (uInt)(n < UINT_MAX ? n : UINT_MAX);
			uInt avail = z->avail_out;
			int r = inflate(z, Z_NO_FLUSH);
			if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR)
				return page_fail(s->col, e, FMT_INVALID_FORMAT, "a GZIP page does not inflate (zlib error %d)", r);
			s->in_pos = s->in_len - z->avail_in;
			s->done = r == Z_STREAM_END;
			*got = avail - z->avail_out;
			if (r == Z_BUF_ERROR && *got == 0 && inflow_dry(s))
				return page_fail(s->col, e, FMT_INVALID_FORMAT, "a GZIP page does not inflate (zlib error %d)", r);
		}
		if (*got || (s->in_pos == in_before && inflow_dry(s)) || (s->done && s->codec == CODEC_GZIP))
			return FMT_OK;
		if (s->in_pos == in_before && s->in_pos < s->in_len)  /* no progress: never loop on it */
			return page_fail(s->col, e, FMT_INVALID_FORMAT, "a %s page does not decompress",
					 s->codec == CODEC_ZSTD ? "ZSTD" : "GZIP");
	}
}

fmt_kind fmt_pq_inflow_read(pq_inflow *s, uint8_t *dst, size_t n, fmt_err *e)
{
	static const char *const names[] = { [CODEC_NONE] = "UNCOMPRESSED", [CODEC_GZIP] = "GZIP", [CODEC_ZSTD] = "ZSTD" };
	if (n > s->out_left)
		return fmt_fail(e, FMT_INTERNAL, "Parquet: read past a page's end");
	while (n) {
		size_t got;
		fmt_kind k = inflow_some(s, dst, n, &got, e);
		if (k != FMT_OK)
			return k;
		if (!got)
			return short_page(s->col, e, names[s->codec], (size_t)(s->out_size - s->out_left), (size_t)s->out_size);
		dst += got;
		n -= got;
		s->out_left -= got;
	}
	return FMT_OK;
}

fmt_kind fmt_pq_inflow_end(pq_inflow *s, fmt_err *e)
{
	uint8_t rest[4096];
	while (s->out_left) {
		size_t n = s->out_left < sizeof rest ? (size_t)s->out_left : sizeof rest;
		fmt_kind k = fmt_pq_inflow_read(s, rest, n, e);
		if (k != FMT_OK)
			return k;
	}
	if (s->codec == CODEC_NONE)
		return FMT_OK;
	/* the codec's stream ends here: no byte more, and (ZSTD) its frame complete */
	for (;;) {
		size_t got;
		fmt_kind k = inflow_some(s, rest, 1, &got, e);
		if (k != FMT_OK)
			return k;
		if (got)
			return short_page(s->col, e, s->codec == CODEC_ZSTD ? "ZSTD" : "GZIP", (size_t)s->out_size + 1,
					  (size_t)s->out_size);
		if (s->done && (s->codec == CODEC_GZIP || inflow_dry(s)))
			return FMT_OK;
		if (inflow_dry(s))
			return s->codec == CODEC_ZSTD ?
			       page_fail(s->col, e, FMT_INVALID_FORMAT, "a ZSTD page ends within its frame") :
			       page_fail(s->col, e, FMT_INVALID_FORMAT, "a GZIP page does not inflate (zlib error %d)", Z_BUF_ERROR);
	}
}

void fmt_pq_inflow_free(pq_inflow *s)
{
	ZSTD_freeDCtx(s->zstd);
	if (s->gz) {
		inflateEnd(s->gz);
		free(s->gz);
	}
	free(s->in);
	memset(s, 0, sizeof *s);
}

int fmt_pq_inflow_in_memory(const pq_inflow *s)
{
	return s->mem && (s->in_left || s->in_pos < s->in_len);
}

const uint8_t *fmt_pq_inflow_unread(const pq_inflow *s)
{
	/* the bytes taken from memory and not read, then those not taken: one run */
	return s->in_pos < s->in_len ? s->inp + s->in_pos : s->mem;
}

void fmt_pq_inflow_move(pq_inflow *s, const pq_file *f, uint64_t off)
{
	s->file = f;
	s->mem = NULL;
	s->off = off;
	s->in_left = s->out_left;
	s->inp = NULL;
	s->in_pos = s->in_len = 0;
	s->direct = 1;
}

uint64_t fmt_pq_inflow_bytes(const pq_inflow *s)
{
	/* zlib's inflate state: its 32 KiB window and about 7 KiB of tables */
	return s->in_cap + (s->zstd ? ZSTD_sizeof_DCtx(s->zstd) : 0) + (s->gz ? 40u << 10 : 0);
}

/* Whether each ZSTD frame of the clen bytes at src asks for no more window than a stream of ulen
 * bytes allows (fmt_pq_inflow_open's windowLogMax; a frame decompressed in one pass, as a whole page
 * into room for all of it is, is not held to it): 0 too when a frame is not one zstd reads. The
 * window is libzstd's reading of the frame header (ZSTD_getFrameHeader): a skippable frame has
 * none, a single-segment frame's is its content size (over the limit only when that is more than
 * a page of at most 2^ZSTD_MAX_WINDOW_LOG bytes, which then does not decompress whole either). */
static int zstd_windows_fit(const uint8_t *src, size_t clen, uint64_t ulen)
{
	uint64_t most = 1ull << zstd_window_log(ulen);
	while (clen) {
		ZSTD_frameHeader h;
		size_t f = ZSTD_findFrameCompressedSize(src, clen);
		if (ZSTD_isError(f) || f > clen || ZSTD_getFrameHeader(&h, src, f) != 0)
			return 0;
		if (h.frameType != ZSTD_skippableFrame && h.windowSize > most)
			return 0;
		src += f;
		clen -= f;
	}
	return 1;
}

int fmt_pq_inflow_whole(const char *col, int codec, const uint8_t *src, size_t clen, uint8_t *dst, size_t ulen)
{
	fmt_err ignored = { 0 };
	pq_inflow s = { 0 };
	if ((codec != CODEC_ZSTD && codec != CODEC_GZIP) || (codec == CODEC_ZSTD && !zstd_windows_fit(src, clen, ulen)))
		return -1;
	ZSTD_DCtx *lent = codec == CODEC_ZSTD ? fmt_zstd_dctx_take() : NULL;
	s.zstd = lent;
	int ok = fmt_pq_inflow_open(&s, col, codec, NULL, src, 0, clen, ulen, &ignored) == FMT_OK &&
		 fmt_pq_inflow_read(&s, dst, ulen, &ignored) == FMT_OK && fmt_pq_inflow_end(&s, &ignored) == FMT_OK;
	if (s.zstd == lent) {
		fmt_zstd_dctx_give(lent);   /* kept for the next page */
		s.zstd = NULL;
	}
	fmt_pq_inflow_free(&s);
	return ok ? 0 : -1;
}

static fmt_kind gzip(int level, const uint8_t *src, size_t n, fmt_sb *o, fmt_err *e)
{
	z_stream z = { 0 };
	if (n > UINT_MAX / 2)
		return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: a GZIP page over 2 GiB");
	if (deflateInit2(&z, level ? level : 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return fmt_fail(e, FMT_IO, "out of memory");
	uLong bound = deflateBound(&z, (uLong)n);
	uint8_t *dst = (uint8_t *)fmt_sb_reserve(o, bound);
	if (!dst) {
		deflateEnd(&z);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	z.next_in = (Bytef *)src;
	z.avail_in = (uInt)n;
	z.next_out = dst;
	z.avail_out = (uInt)bound;
	int r = deflate(&z, Z_FINISH);
	size_t got = bound - z.avail_out;
	deflateEnd(&z);
	if (r != Z_STREAM_END)
		return fmt_fail(e, FMT_INTERNAL, "zlib deflate failed (%d)", r);
	fmt_sb_commit(o, got);
	return FMT_OK;
}

fmt_kind fmt_pq_compress(int codec, int level, const uint8_t *src, size_t n, fmt_sb *o, fmt_err *e)
{
	switch (codec) {
	case CODEC_NONE:
		fmt_sb_put(o, (const char *)src, n);
		return o->oom ? fmt_fail(e, FMT_IO, "out of memory") : FMT_OK;
	case CODEC_SNAPPY: {
		fmt_kind loaded = fmt_lazylib_load(&snappy_lib, e);
		if (loaded != FMT_OK)
			return loaded;
		size_t cap = SN(snappy_max_compressed_length)(n);
		char *dst = fmt_sb_reserve(o, cap);
		if (!dst)
			return fmt_fail(e, FMT_IO, "out of memory");
		if (SN(snappy_compress)((const char *)src, n, dst, &cap) != SNAPPY_OK)
			return fmt_fail(e, FMT_INTERNAL, "snappy_compress failed");
		fmt_sb_commit(o, cap);
		return FMT_OK;
	}
	case CODEC_GZIP:
		return gzip(level, src, n, o, e);
	case CODEC_ZSTD: {
		size_t cap = ZSTD_compressBound(n);
		char *dst = fmt_sb_reserve(o, cap);
		if (!dst)
			return fmt_fail(e, FMT_IO, "out of memory");
		size_t got = ZSTD_compress(dst, cap, src, n, level ? level : 3);
		if (ZSTD_isError(got))
			return fmt_fail(e, fmt_zstd_kind(got, FMT_INTERNAL), "zstd: %s", ZSTD_getErrorName(got));
		fmt_sb_commit(o, got);
		return FMT_OK;
	}
	case CODEC_LZ4_RAW: {
		if (n > LZ4_MAX_INPUT_SIZE)
			return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: an LZ4_RAW page over 2 GiB");
		int cap = LZ4_compressBound((int)n);
		char *dst = fmt_sb_reserve(o, (size_t)cap);
		if (!dst)
			return fmt_fail(e, FMT_IO, "out of memory");
		int got = LZ4_compress_default((const char *)src, dst, (int)n, cap);
		if (got <= 0)
			return fmt_fail(e, FMT_INTERNAL, "LZ4 compression failed");
		fmt_sb_commit(o, (size_t)got);
		return FMT_OK;
	}
	default:
		return fmt_fail(e, FMT_INTERNAL, "codec %d", codec);
	}
}
