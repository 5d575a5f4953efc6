/* Tensors whose bytes are another tensor's values in another dtype, produced on demand in
 * bounded chunks, in parallel on a pool, with the same bytes for any thread count. */
#ifndef FMT_RETYPE_H
#define FMT_RETYPE_H

#include "fmt/model.h"
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

#endif
