/* Streaming decompression (and LZ4 raw blocks) and a streaming compressor for the .ald payload ids (zstd level 3
 * and 19, LZ4 frame). Internal to libcommon/formats/ald. */
#ifndef FMT_ALD_COMPRESS_H
#define FMT_ALD_COMPRESS_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/err.h"
#include "fmt/io.h"

/* A raw LZ4 block after its decompressed size as u32 LE (lz4_flex's compress_prepend_size), the
 * chunks of alimentar's streaming layout (specs/ald.md §11), into a malloc'd buffer: a size
 * above max, or above what the block's bytes can expand to, is InvalidFormat before any
 * allocation. A raw block cannot be decompressed in pieces. */
fmt_kind fmt_unlz4_block(const uint8_t *src, size_t n, size_t max, uint8_t **out, size_t *out_len, fmt_err *e);
/* The chunk codec id of that layout's LZ4 (not an .ald compression id). */
#define FMT_LZ4_SIZE_PREFIXED_BLOCK 0x103

/* Streaming decompression into a window: fmt_dstream_fill makes at least need bytes available
 * from the window's start (compacting and growing it), fewer only at the end of the data;
 * fmt_dstream_consume drops bytes from the start. Memory stays the size of the largest piece
 * asked for. Output past limit (the size the file declares for the data) is InvalidFormat, so
 * neither memory nor work can exceed what the file says it holds. */
typedef struct fmt_dstream {
	int id;
	void *z;               /* ZSTD_DCtx */
	void *l;               /* LZ4F_dctx */
	const uint8_t *src;
	size_t src_len, src_pos;
	uint8_t *buf;
	size_t cap, start, end;
	uint64_t produced;     /* bytes decompressed so far */
	uint64_t limit;
	char what[24];         /* for messages: "payload", "chunk 3" */
	int done;              /* the frame (or the data) ended */
	const fmt_source *mapped; /* src lies in its mapping (or NULL): the pages passed are dropped */
	size_t dropped;        /* src bytes dropped so far */
	fmt_source_observer observe; /* or NULL: shown each src byte once, in order, as it is used */
	void *observe_ctx;
	size_t observed;       /* src bytes shown so far */
	fmt_source_observer on_output; /* or NULL: shown each decompressed byte once, in order */
	void *on_output_ctx;
} fmt_dstream;

fmt_kind fmt_dstream_init(fmt_dstream *d, int id, const uint8_t *src, size_t n, uint64_t limit, fmt_err *e);
fmt_kind fmt_dstream_fill(fmt_dstream *d, size_t need, fmt_err *e);
static inline size_t fmt_dstream_avail(const fmt_dstream *d) { return d->end - d->start; }
static inline const uint8_t *fmt_dstream_data(const fmt_dstream *d) { return d->buf + d->start; }
static inline void fmt_dstream_consume(fmt_dstream *d, size_t n) { d->start += n; }
/* The next n bytes into dst, or dropped when dst is NULL (decompressed a piece at a time);
 * the data ending first is InvalidFormat. */
fmt_kind fmt_dstream_read(fmt_dstream *d, uint8_t *dst, uint64_t n, fmt_err *e);
/* Decompress and drop the rest: d->produced is then the whole data's size. */
fmt_kind fmt_dstream_drain(fmt_dstream *d, fmt_err *e);
void fmt_dstream_free(fmt_dstream *d);

/* Compressed bytes go to emit as they are produced. */
typedef fmt_kind (*fmt_emit_fn)(void *ctx, const uint8_t *p, size_t n, fmt_err *e);

typedef struct fmt_compressor {
	int id;
	void *zc;              /* ZSTD_CCtx */
	void *lz;              /* LZ4F_cctx */
	uint8_t *buf;
	size_t cap;
	fmt_emit_fn emit;
	void *ctx;
	int lz_started;
	size_t frame;          /* zstd input bytes per frame, or 0: the data as one streaming frame */
	uint8_t *in;           /* the frame being gathered (when the input comes in smaller pieces) */
	size_t in_len;
	int framed;            /* a frame was emitted since the data began */
} fmt_compressor;

fmt_kind fmt_compressor_init(fmt_compressor *c, int id, fmt_emit_fn emit, void *ctx, fmt_err *e);
/* zstd only (otherwise nothing changes): compress the data as independent frames of
 * input_per_frame input bytes each (the last one shorter), each in one call on contiguous input.
 * That is faster than one streaming frame, whose window wraps around its buffer every few MiB and
 * sends the match finder down its slower two-segment path (a fifth of its time), and at 1 MiB it
 * costs no size: level 3's window is 2 MiB, and a frame's parameters fit its known size. The
 * frames depend only on the data and the size, not on how the data is fed. Any zstd decoder
 * reads the concatenation (RFC 8878 §3). */
fmt_kind fmt_compressor_split_frames(fmt_compressor *c, size_t input_per_frame, fmt_err *e);
fmt_kind fmt_compressor_feed(fmt_compressor *c, const uint8_t *p, size_t n, fmt_err *e);
/* Flush the frame's end; the compressor can start a new frame after (one per chunk). */
fmt_kind fmt_compressor_end(fmt_compressor *c, fmt_err *e);
void fmt_compressor_free(fmt_compressor *c);

#endif
