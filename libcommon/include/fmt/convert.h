/* Element decoding to float32 and encoding from it: the bridge between stored tensor bytes
 * (little-endian, any dtype of fmt/dtype.h) and the float arrays tools compute on. */
#ifndef FMT_CONVERT_H
#define FMT_CONVERT_H

#include <stdint.h>
#include "fmt/err.h"
#include "fmt/dtype.h"

/* Decode nelems little-endian elements of type t at src into dst.
 * Plain types: F32, F16, BF16 (exact), F64 (rounded to nearest float; out of range -> ±Inf),
 * BOOL (0 -> 0, anything else -> 1), U8, I8, U16, I16, U32, I32 (exact), U64, I64 (rounded to
 * nearest), F8_E4M3 (OCP E4M3fn: no Inf, S.1111.111 is NaN) and F8_E5M2 (IEEE-like), exact.
 * ggml block types go to fmt_dequant_f32 (fmt/quant.h), nelems a multiple of the block size.
 * Anything else (C64, FNUZ, E8M0, F6, F4, unsupported blocks) is Unsupported. */
fmt_kind fmt_decode_f32(fmt_dtype t, const uint8_t *src, uint64_t nelems, float *dst, fmt_err *e);

/* 1 if fmt_decode_f32 decodes t. */
int fmt_decode_supported(fmt_dtype t);

/* Encode nelems floats as F32, F16, BF16 (round to nearest even, specs/gguf.md §10) or F64
 * (exact), little-endian; any other type is Unsupported. */
fmt_kind fmt_encode_from_f32(fmt_dtype t, const float *src, uint64_t nelems, uint8_t *dst,
			     fmt_err *e);

/* 1 if fmt_encode_from_f32 encodes t. */
int fmt_encode_supported(fmt_dtype t);

#endif
