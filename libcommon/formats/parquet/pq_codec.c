/* Page compression: SNAPPY (libsnappy's C API), GZIP (zlib), ZSTD, LZ4_RAW (an LZ4 block) and
 * none. Decompression must give exactly the size the page header says. */
#include <limits.h>
#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>
#include "fmt/lazylib.h"
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

static fmt_kind short_page(fmt_err *e, const char *codec, size_t got, size_t want)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: a %s page decompresses to %zu bytes, the header says %zu",
			codec, got, want);
}

static fmt_kind gunzip(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len, fmt_err *e)
{
	z_stream z = { 0 };
	if (src_len > UINT_MAX || dst_len > UINT_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: a GZIP page over 4 GiB");
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
		return r == Z_BUF_ERROR && z.avail_out == 0 ? short_page(e, "GZIP", dst_len + 1, dst_len) :
		       fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: a GZIP page does not inflate (zlib error %d)", r);
	return got == dst_len ? FMT_OK : short_page(e, "GZIP", got, dst_len);
}

fmt_kind fmt_pq_decompress(int codec, const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len, fmt_err *e)
{
	switch (codec) {
	case CODEC_NONE:
		if (src_len != dst_len)
			return short_page(e, "UNCOMPRESSED", src_len, dst_len);
		memcpy(dst, src, src_len);
		return FMT_OK;
	case CODEC_SNAPPY: {
		size_t n;
		fmt_kind loaded = fmt_lazylib_load(&snappy_lib, e);
		if (loaded != FMT_OK)
			return loaded;
		if (SN(snappy_uncompressed_length)((const char *)src, src_len, &n) != SNAPPY_OK)
			return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: a SNAPPY page is malformed");
		if (n != dst_len)
			return short_page(e, "SNAPPY", n, dst_len);
		if (SN(snappy_uncompress)((const char *)src, src_len, (char *)dst, &n) != SNAPPY_OK || n != dst_len)
			return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: a SNAPPY page is malformed");
		return FMT_OK;
	}
	case CODEC_GZIP:
		return gunzip(src, src_len, dst, dst_len, e);
	case CODEC_ZSTD: {
		size_t n = ZSTD_decompress(dst, dst_len, src, src_len);
		if (ZSTD_isError(n))
			return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: a ZSTD page: %s", ZSTD_getErrorName(n));
		return n == dst_len ? FMT_OK : short_page(e, "ZSTD", n, dst_len);
	}
	case CODEC_LZ4_RAW: {
		if (src_len > INT_MAX || dst_len > INT_MAX)
			return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: an LZ4_RAW page over 2 GiB");
		int n = LZ4_decompress_safe((const char *)src, (char *)dst, (int)src_len, (int)dst_len);
		if (n < 0)
			return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: an LZ4_RAW page is malformed");
		return (size_t)n == dst_len ? FMT_OK : short_page(e, "LZ4_RAW", (size_t)n, dst_len);
	}
	default:
		return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: codec %s (%d) is not supported (none, SNAPPY, GZIP, ZSTD, "
				"LZ4_RAW are)", fmt_pq_codec_name(codec), codec);
	}
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
			return fmt_fail(e, FMT_INTERNAL, "zstd: %s", ZSTD_getErrorName(got));
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
