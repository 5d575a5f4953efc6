/* One table of element types: the safetensors dtypes and the ggml tensor types. */
#ifndef FMT_DTYPE_H
#define FMT_DTYPE_H

#include <stdint.h>
#include "fmt/err.h"

typedef enum fmt_dtype {
	FMT_DT_INVALID = 0,
	/* safetensors dtypes (several are ggml types too) */
	FMT_DT_BOOL, FMT_DT_U8, FMT_DT_I8, FMT_DT_I16, FMT_DT_U16, FMT_DT_I32, FMT_DT_U32,
	FMT_DT_I64, FMT_DT_U64, FMT_DT_F16, FMT_DT_BF16, FMT_DT_F32, FMT_DT_F64, FMT_DT_C64,
	FMT_DT_F8_E4M3, FMT_DT_F8_E5M2, FMT_DT_F8_E4M3FNUZ, FMT_DT_F8_E5M2FNUZ, FMT_DT_F8_E8M0,
	FMT_DT_F6_E2M3, FMT_DT_F6_E3M2, FMT_DT_F4,
	/* ggml block types */
	FMT_DT_Q4_0, FMT_DT_Q4_1, FMT_DT_Q5_0, FMT_DT_Q5_1, FMT_DT_Q8_0, FMT_DT_Q8_1,
	FMT_DT_Q2_K, FMT_DT_Q3_K, FMT_DT_Q4_K, FMT_DT_Q5_K, FMT_DT_Q6_K, FMT_DT_Q8_K,
	FMT_DT_IQ2_XXS, FMT_DT_IQ2_XS, FMT_DT_IQ3_XXS, FMT_DT_IQ1_S, FMT_DT_IQ4_NL, FMT_DT_IQ3_S,
	FMT_DT_IQ2_S, FMT_DT_IQ4_XS, FMT_DT_IQ1_M, FMT_DT_TQ1_0, FMT_DT_TQ2_0, FMT_DT_MXFP4,
	FMT_DT_NVFP4, FMT_DT_Q1_0, FMT_DT_Q2_0,
	FMT_DT_COUNT
} fmt_dtype;

typedef struct fmt_dtype_info {
	const char *name;        /* "F32", "Q4_0", ... (safetensors spelling where it has one) */
	int in_safetensors;      /* a safetensors dtype string */
	int st_rank;             /* safetensors writer sort rank (specs/safetensors.md §4), -1 if none */
	int ggml_id;             /* ggml type id, -1 if none */
	uint32_t block_elems;    /* elements per block (1 for plain types) */
	uint32_t block_bits;     /* bits per block: 32 for F32, 4 for F4, 144 for Q4_0 */
	int is_float;            /* plain floating-point element */
	int is_int;              /* plain integer or bool element */
} fmt_dtype_info;

const fmt_dtype_info *fmt_dtype_get(fmt_dtype t);
const char *fmt_dtype_name(fmt_dtype t);
fmt_dtype fmt_dtype_from_name(const char *name);      /* FMT_DT_INVALID if unknown */
fmt_dtype fmt_dtype_from_st_name(const char *name);   /* safetensors strings only */
fmt_dtype fmt_dtype_from_ggml(int64_t id);            /* FMT_DT_INVALID if unknown or removed */

/* Elements and bytes of a tensor with this shape, overflow-checked. Fails with InvalidFormat
 * on overflow, and when the bit count is not a multiple of 8 or the element count not a
 * multiple of the block size (the message names which). */
fmt_kind fmt_dtype_nbytes(fmt_dtype t, const uint64_t *shape, int ndim, uint64_t *nelems,
			  uint64_t *nbytes, fmt_err *e);

/* 1 if a row of `innermost` elements (shape[ndim-1], GGUF ne[0]) is a whole number of blocks;
 * GGUF requires it so that no block straddles two rows. 0 for an invalid dtype. */
int fmt_dtype_row_ok(fmt_dtype t, uint64_t innermost);

#endif
