/* Tensors whose bytes are another tensor's values in another dtype, produced on demand in
 * bounded chunks, in parallel on a pool, with the same bytes for any thread count. */
#ifndef FMT_RETYPE_H
#define FMT_RETYPE_H

#include "fmt/model.h"
#include "fmt/overflow.h"
#include "fmt/thread.h"

/* 1 if values of dtype from can be converted to dtype to (decode to float32, then encode or
 * quantize). Same dtype is always possible (a copy). */
int fmt_retype_possible(fmt_dtype from, fmt_dtype to);

/* Append to out a tensor named name with src's shape whose bytes are src's values (src belongs
 * to in, which must outlive out) converted to dtype to. Fails with Unsupported when the
 * conversion is impossible, InvalidFormat when the shape does not fit the target's blocks.
 * pool may be NULL (one thread). Errors in the data (NaN for a quantizer) surface when the
 * bytes are read. */
fmt_kind fmt_model_add_retyped(fmt_model *out, const fmt_model *in, const fmt_tensor *src,
			       const char *name, fmt_dtype to, fmt_pool *pool, fmt_err *e);

/* The same, with values to cannot hold (fmt/overflow.h) handled as overflow says: REFUSE fails
 * the read with InvalidFormat naming the tensor, the element and the value; SATURATE clamps
 * F16 and BF16 values (Q8_0/Q4_0 overflow is still refused: widen them to F16 or F32 first,
 * fmt_tensor_find_overflow tells which); WIDEN is REFUSE here. fmt_model_add_retyped is
 * REFUSE. */
fmt_kind fmt_model_add_retyped_mode(fmt_model *out, const fmt_model *in, const fmt_tensor *src,
				    const char *name, fmt_dtype to, fmt_overflow_mode overflow,
				    fmt_pool *pool, fmt_err *e);

/* Read src's values once (decoded in chunks) and find the first one that dtype to cannot hold:
 * *found = 1 with its element and value, or 0. */
fmt_kind fmt_tensor_find_overflow(const fmt_model *in, const fmt_tensor *src, fmt_dtype to,
				  int *found, uint64_t *elem, float *value, fmt_err *e);

/* fmt_model_add_retyped quantizing to to with importance weights (llama-quantize --imatrix):
 * weights holds a row's count of floats for each set of rows_per_set rows (an imatrix entry:
 * one set per expert of a 3-D tensor); it must outlive the output's reads. */
fmt_kind fmt_model_add_retyped_weighted(fmt_model *out, const fmt_model *in, const fmt_tensor *src,
					const char *name, fmt_dtype to, const float *weights, uint64_t rows_per_set,
					fmt_pool *pool, fmt_err *e);

/* The tensor whose bytes t's are unchanged (t itself, or the source of a retype to the same
 * dtype, followed down), with its model in *m: a writer can then read them straight from the
 * input file, not through the conversion's copy. */
const fmt_tensor *fmt_tensor_same_bytes(const fmt_model **m, const fmt_tensor *t);

/* 1 when t's bytes can be read in any range, by several threads at once and in any order: plain
 * bytes (a file's or in memory) and conversions of them, whose readers keep no state between
 * reads (a parallel writer then cuts t in pieces). 0 for other readers (a compressed stream, a
 * watermark's marking, which also keep statistics in read order). */
int fmt_tensor_reads_any_range(const fmt_tensor *t);

#endif
