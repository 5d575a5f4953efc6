/* ggml block quantization: decoding to float32 and the two reference quantizers fmtkit writes
 * (specs/gguf.md §9, §11, §12). Every function is pure: a row of blocks in, bytes out. */
#ifndef FMT_QUANT_H
#define FMT_QUANT_H

#include <stdint.h>
#include "fmt/err.h"
#include "fmt/dtype.h"

/* Decode nelems elements of type t at src into dst (nelems a multiple of the block size).
 * Decodes F32, F16, BF16 and the ggml blocks Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K,
 * Q5_K, Q6_K, Q8_K, TQ1_0, TQ2_0, Q1_0, Q2_0, MXFP4 and NVFP4 exactly as ggml's
 * dequantize_row_* (and gguf-py's dequantize, which has no Q2_0 yet), and Q8_1 as code x d
 * (ggml has no decoder for that internal type); the IQ types, whose decoding needs codebook
 * tables, are Unsupported ("cannot decode IQ4_XS data"). */
fmt_kind fmt_dequant_f32(fmt_dtype t, const uint8_t *src, uint64_t nelems, float *dst, fmt_err *e);

/* 1 if fmt_dequant_f32 decodes t. */
int fmt_dequant_supported(fmt_dtype t);

/* Quantize nelems floats (a multiple of 32) to Q8_0 (34 bytes per block) or Q4_0 (18 bytes per
 * block), bit-identical to ggml's quantize_row_q8_0_ref / quantize_row_q4_0_ref on x86-64.
 * A NaN or infinity is InvalidFormat ("tensor has NaN/Inf at element N; cannot quantize") and
 * dst is then unspecified; a count that is not a multiple of 32 is an internal error. */
fmt_kind fmt_quantize_q8_0(const float *x, uint8_t *dst, uint64_t nelems, fmt_err *e);
fmt_kind fmt_quantize_q4_0(const float *x, uint8_t *dst, uint64_t nelems, fmt_err *e);

#endif
