/* Compressed tensors (specs/apsim.md §4): quantizing float rows into codes and scales,
 * decoding them back, and the lossless correspondence with GGUF Q8_0 / Q4_0 blocks. */
#ifndef FMT_QTENSOR_H
#define FMT_QTENSOR_H

#include "fmt/model.h"
#include "fmt/thread.h"

const char *fmt_qformat_name(fmt_qformat f);            /* "int8", "int4", ... */
int fmt_qformat_from_name(const char *name, fmt_qformat *out); /* 1 if known */
fmt_dtype fmt_qformat_codes_dtype(fmt_qformat f);        /* I8, U8, F8_E4M3, F6_E3M2, F4, BF16 */
const char *fmt_qformat_packing(fmt_qformat f);          /* "none", "nibble-lo-first", "4-in-3" */

/* The descriptor the writer's quantizer uses by default for a float tensor of this shape:
 * int8 per-row (axis 0), int4/fp6/fp4 blocks of 32 along the last dimension (a shorter last
 * dimension is one block), fp8 per-row, bf16 no scales. Fails (Usage) for shapes the format
 * cannot hold (fp6 element count not a multiple of 4, fp4 odd), naming the tensor. */
fmt_kind fmt_qtensor_plan(const fmt_tensor *t, fmt_qformat f, fmt_qtensor *out, fmt_err *e);

/* The name the quantizers give the scales of an encoded tensor NAME: NAME__qscale, as Apsi
 * checkpoints store them (malloc'd; NULL when out of memory). */
char *fmt_qtensor_scales_name(const char *name);

/* 1 when name is the scales tensor of one of m's compressed tensors (named by its q->scales,
 * or by default, fmt_qtensor_scales_name, when that is NULL and it has scales), else 0. */
int fmt_qtensor_is_scales(const fmt_model *m, const char *name);

/* 1 when q has the form every encoded-tensor writer stores: no zero point, scales named by
 * fmt_qtensor_scales_name (or NULL, meaning that; none for BF16). Others are decoded before
 * writing. */
int fmt_qtensor_canonical(const fmt_qtensor *q);

/* Shape checks of §4 on a descriptor read from a file, against its codes and scales tensors
 * (dtype, shape, divisibility, rank), and its zero point (INT8/INT4 only, within the codes).
 * InvalidFormat naming the rule. */
fmt_kind fmt_qtensor_check(const fmt_qtensor *q, const fmt_tensor *codes, const fmt_tensor *scales,
			   fmt_err *e);

/* Append to out the codes tensor (named q->name) and, except for bf16, the scales tensor
 * (q->name + "__qscale") that quantize src's values per q, produced on demand (readers), and
 * the descriptor itself. src belongs to in (which outlives out). */
fmt_kind fmt_model_add_quantized(fmt_model *out, const fmt_model *in, const fmt_tensor *src,
				 const fmt_qtensor *q, fmt_pool *pool, fmt_err *e);

/* Append to out an F32 tensor named q->name with the decoded values of a compressed tensor
 * of in (codes and scales looked up by name). NaN or infinite scales are InvalidFormat when
 * read. */
fmt_kind fmt_model_add_dequantized(fmt_model *out, const fmt_model *in, const fmt_qtensor *q,
				   fmt_pool *pool, fmt_err *e);

/* Lossless mappings. GGUF Q8_0 -> int8 with block-32 scales along the last dimension (scale =
 * fp32 of the block's fp16 d), Q4_0 -> int4 likewise (codes = nibble - 8, repacked to
 * nibble-lo-first): fmt_model_add_from_ggml appends codes, scales and descriptor. The
 * reverse, fmt_model_add_to_ggml, works when the descriptor is int8/int4 with block-32 scales
 * along the last dimension and every scale is exactly representable in fp16 (checked when the
 * bytes are produced: InvalidFormat naming the tensor otherwise); *possible says whether the
 * shape and format allow it at all (without reading data). */
fmt_kind fmt_model_add_from_ggml(fmt_model *out, const fmt_model *in, const fmt_tensor *src,
				 fmt_pool *pool, fmt_err *e);
int fmt_qtensor_ggml_compatible(const fmt_qtensor *q, fmt_dtype *ggml_type);
fmt_kind fmt_model_add_to_ggml(fmt_model *out, const fmt_model *in, const fmt_qtensor *q,
			       fmt_pool *pool, fmt_err *e);

/* OCP minifloats of the fp8 (E4M3fn), fp6 (E3M2) and fp4 (E2M1) formats: encode rounds to the
 * nearest representable value, ties to even, saturating at +-max (NaN -> E4M3 NaN, or 0 for the
 * formats without NaN); decode is exact (E4M3 S.1111.111 -> NaN). Other formats: 0 / NaN. */
unsigned fmt_minifloat_encode(fmt_qformat f, float x);
float fmt_minifloat_decode(fmt_qformat f, unsigned code);

#endif
