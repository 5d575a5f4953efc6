/* Whole-buffer decompression and a streaming compressor for the .ald payload ids (zstd level 3
 * and 19, LZ4 frame). Internal to libcommon/data. */
#ifndef FMT_DATA_COMPRESS_H
#define FMT_DATA_COMPRESS_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/err.h"

/* Decompress src by the compression id into a malloc'd buffer; more than max bytes of output
 * is InvalidFormat (a bomb, or a size field that lies). id 0 copies. */
fmt_kind fmt_decompress(int id, const uint8_t *src, size_t n, size_t max, uint8_t **out,
			size_t *out_len, fmt_err *e);

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
} fmt_compressor;

fmt_kind fmt_compressor_init(fmt_compressor *c, int id, fmt_emit_fn emit, void *ctx, fmt_err *e);
fmt_kind fmt_compressor_feed(fmt_compressor *c, const uint8_t *p, size_t n, fmt_err *e);
/* Flush the frame's end; the compressor can start a new frame after (one per chunk). */
fmt_kind fmt_compressor_end(fmt_compressor *c, fmt_err *e);
void fmt_compressor_free(fmt_compressor *c);

#endif
