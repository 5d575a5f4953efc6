/* ggml block quantization: decoding to float32 and ggml's reference quantizers
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

/* 1 if fmt_quantize writes t: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
 * IQ4_NL and IQ4_XS. */
int fmt_quantize_supported(fmt_dtype t);

/* Quantize nelems floats (a multiple of t's block size) to t, bit-identical to what ggml's
 * ggml_quantize_chunk writes without an importance matrix (llama-quantize --pure; the _ref
 * quantizers, and for IQ4_NL/IQ4_XS quantize_iq4_nl/quantize_iq4_xs) on x86-64.
 * A NaN or infinity in x is InvalidFormat ("tensor has NaN/Inf at element N; cannot
 * quantize"), and so is a block whose F16 scale comes out infinite or NaN (values too large
 * for the type: llama-quantize refuses the same blocks, "quantized data validation failed");
 * dst is then unspecified. A count that is not a multiple of the block is an internal error.
 * first_elem is the index of x[0] in its tensor: the messages count elements from there. */
fmt_kind fmt_quantize(fmt_dtype t, const float *x, uint8_t *dst, uint64_t nelems, uint64_t first_elem,
		      fmt_err *e);

/* fmt_quantize in one pass over x, with the check of fmt_overflow_find (Q8_0, Q4_0) folded in:
 * when x holds no NaN or infinity and no Q8_0/Q4_0 block's F16 scale overflows, *redo is 0
 * and the result is fmt_quantize's. Otherwise *redo is 1, FMT_OK is returned, dst is
 * unspecified and nothing is said: the caller runs the separate checks and fmt_quantize, whose
 * messages name the element. */
fmt_kind fmt_quantize_fused(fmt_dtype t, const float *x, uint8_t *dst, uint64_t nelems, uint64_t first_elem,
			    int *redo, fmt_err *e);

/* 1 if fmt_quantize_row_weighted takes importance weights for t: every type fmt_quantize
 * writes (Q8_0 ignores them, as ggml does). */
int fmt_quantize_weighted_supported(fmt_dtype t);

/* One row of row_elems floats (a multiple of t's block) quantized with importance weights qw
 * (row_elems of them: an imatrix entry), bit-identical to ggml_quantize_chunk with those
 * weights (the quantize_row_*_impl functions llama-quantize --imatrix runs). qw NULL:
 * fmt_quantize. A type without a weighted quantizer here is Unsupported; the checks and
 * messages are fmt_quantize's. */
fmt_kind fmt_quantize_row_weighted(fmt_dtype t, const float *x, uint8_t *dst, uint64_t row_elems, const float *qw,
				   uint64_t first_elem, fmt_err *e);

/* The blocks alone, without any check: nblocks blocks of t from x (t supported). What ggml
 * writes for any finite input, including blocks whose scale overflows F16. */
void fmt_quantize_blocks(fmt_dtype t, const float *x, uint8_t *dst, uint64_t nblocks);

/* The type llama-quantize writes instead of t for a tensor whose rows of row_elems elements
 * do not divide into t's blocks (llama-quant.cpp's tensor_type_fallback): Q2_K and Q3_K ->
 * Q4_0, Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, IQ4_XS -> IQ4_NL, a 32-element type itself;
 * F16 when that does not divide the rows either. t when the rows divide. */
fmt_dtype fmt_quantize_row_fallback(fmt_dtype t, uint64_t row_elems);

/* Caps the SIMD the quantizers use (0 portable C, 1 AVX2, 2 AVX-512: the widest the CPU has);
 * returns the previous cap. Every level writes the same bytes; tests compare them. The
 * environment variable FMTKIT_QUANT_SIMD=portable|avx2|avx512 sets the same cap for a process
 * (fmt/env.h). */
int fmt_quant_use_simd(int level);

#endif
