/* The element-type table: safetensors dtypes (specs/safetensors.md §4) and ggml tensor types
 * (specs/gguf.md §9), one row per fmt_dtype. */
#include <string.h>
#include "fmt/checked.h"
#include "fmt/dtype.h"

/* name, in_safetensors, st_rank, ggml_id, block_elems, block_bits, is_float, is_int */
#define PLAIN_FLOAT(name, rank, ggml, bits) { name, 1, rank, ggml, 1, bits, 1, 0 }
#define PLAIN_INT(name, rank, ggml, bits) { name, 1, rank, ggml, 1, bits, 0, 1 }
#define ST_OTHER(name, rank, bits) { name, 1, rank, -1, 1, bits, 0, 0 }
#define GGML_BLOCK(name, ggml, elems, type_size) { name, 0, -1, ggml, elems, (type_size) * 8, 0, 0 }

static const fmt_dtype_info dtype_table[FMT_DT_COUNT] = {
	[FMT_DT_INVALID] = { "INVALID", 0, -1, -1, 0, 0, 0, 0 },
	[FMT_DT_BOOL] = PLAIN_INT("BOOL", 0, -1, 8),
	[FMT_DT_U8] = PLAIN_INT("U8", 4, -1, 8),
	[FMT_DT_I8] = PLAIN_INT("I8", 5, 24, 8),
	[FMT_DT_I16] = PLAIN_INT("I16", 11, 25, 16),
	[FMT_DT_U16] = PLAIN_INT("U16", 12, -1, 16),
	[FMT_DT_I32] = PLAIN_INT("I32", 15, 26, 32),
	[FMT_DT_U32] = PLAIN_INT("U32", 16, -1, 32),
	[FMT_DT_I64] = PLAIN_INT("I64", 20, 27, 64),
	[FMT_DT_U64] = PLAIN_INT("U64", 21, -1, 64),
	[FMT_DT_F16] = PLAIN_FLOAT("F16", 13, 1, 16),
	[FMT_DT_BF16] = PLAIN_FLOAT("BF16", 14, 30, 16),
	[FMT_DT_F32] = PLAIN_FLOAT("F32", 17, 0, 32),
	[FMT_DT_F64] = PLAIN_FLOAT("F64", 19, 28, 64),
	/* complex: two F32, not a single float element */
	[FMT_DT_C64] = ST_OTHER("C64", 18, 64),
	[FMT_DT_F8_E4M3] = PLAIN_FLOAT("F8_E4M3", 7, -1, 8),
	[FMT_DT_F8_E5M2] = PLAIN_FLOAT("F8_E5M2", 6, -1, 8),
	[FMT_DT_F8_E4M3FNUZ] = PLAIN_FLOAT("F8_E4M3FNUZ", 9, -1, 8),
	[FMT_DT_F8_E5M2FNUZ] = PLAIN_FLOAT("F8_E5M2FNUZ", 10, -1, 8),
	[FMT_DT_F8_E8M0] = PLAIN_FLOAT("F8_E8M0", 8, -1, 8),
	[FMT_DT_F6_E2M3] = PLAIN_FLOAT("F6_E2M3", 2, -1, 6),
	[FMT_DT_F6_E3M2] = PLAIN_FLOAT("F6_E3M2", 3, -1, 6),
	[FMT_DT_F4] = PLAIN_FLOAT("F4", 1, -1, 4),
	[FMT_DT_Q4_0] = GGML_BLOCK("Q4_0", 2, 32, 18),
	[FMT_DT_Q4_1] = GGML_BLOCK("Q4_1", 3, 32, 20),
	[FMT_DT_Q5_0] = GGML_BLOCK("Q5_0", 6, 32, 22),
	[FMT_DT_Q5_1] = GGML_BLOCK("Q5_1", 7, 32, 24),
	[FMT_DT_Q8_0] = GGML_BLOCK("Q8_0", 8, 32, 34),
	[FMT_DT_Q8_1] = GGML_BLOCK("Q8_1", 9, 32, 36),
	[FMT_DT_Q2_K] = GGML_BLOCK("Q2_K", 10, 256, 84),
	[FMT_DT_Q3_K] = GGML_BLOCK("Q3_K", 11, 256, 110),
	[FMT_DT_Q4_K] = GGML_BLOCK("Q4_K", 12, 256, 144),
	[FMT_DT_Q5_K] = GGML_BLOCK("Q5_K", 13, 256, 176),
	[FMT_DT_Q6_K] = GGML_BLOCK("Q6_K", 14, 256, 210),
	[FMT_DT_Q8_K] = GGML_BLOCK("Q8_K", 15, 256, 292),
	[FMT_DT_IQ2_XXS] = GGML_BLOCK("IQ2_XXS", 16, 256, 66),
	[FMT_DT_IQ2_XS] = GGML_BLOCK("IQ2_XS", 17, 256, 74),
	[FMT_DT_IQ3_XXS] = GGML_BLOCK("IQ3_XXS", 18, 256, 98),
	[FMT_DT_IQ1_S] = GGML_BLOCK("IQ1_S", 19, 256, 50),
	[FMT_DT_IQ4_NL] = GGML_BLOCK("IQ4_NL", 20, 32, 18),
	[FMT_DT_IQ3_S] = GGML_BLOCK("IQ3_S", 21, 256, 110),
	[FMT_DT_IQ2_S] = GGML_BLOCK("IQ2_S", 22, 256, 82),
	[FMT_DT_IQ4_XS] = GGML_BLOCK("IQ4_XS", 23, 256, 136),
	[FMT_DT_IQ1_M] = GGML_BLOCK("IQ1_M", 29, 256, 56),
	[FMT_DT_TQ1_0] = GGML_BLOCK("TQ1_0", 34, 256, 54),
	[FMT_DT_TQ2_0] = GGML_BLOCK("TQ2_0", 35, 256, 66),
	[FMT_DT_MXFP4] = GGML_BLOCK("MXFP4", 39, 32, 17),
	[FMT_DT_NVFP4] = GGML_BLOCK("NVFP4", 40, 64, 36),
	[FMT_DT_Q1_0] = GGML_BLOCK("Q1_0", 41, 128, 18),
	[FMT_DT_Q2_0] = GGML_BLOCK("Q2_0", 42, 64, 18),
};

/* ggml ids 0..42 (GGML_TYPE_COUNT 43); removed ids (4, 5, 31-33, 36-38) stay FMT_DT_INVALID. */
#define GGML_ID_COUNT 43

static int valid(fmt_dtype t)
{
	return t > FMT_DT_INVALID && t < FMT_DT_COUNT;
}

const fmt_dtype_info *fmt_dtype_get(fmt_dtype t)
{
	return valid(t) ? &dtype_table[t] : &dtype_table[FMT_DT_INVALID];
}

const char *fmt_dtype_name(fmt_dtype t)
{
	return fmt_dtype_get(t)->name;
}

fmt_dtype fmt_dtype_from_name(const char *name)
{
	for (int t = FMT_DT_INVALID + 1; t < FMT_DT_COUNT; t++)
		if (strcmp(dtype_table[t].name, name) == 0)
			return (fmt_dtype)t;
	return FMT_DT_INVALID;
}

fmt_dtype fmt_dtype_from_st_name(const char *name)
{
	fmt_dtype t = fmt_dtype_from_name(name);
	return dtype_table[t].in_safetensors ? t : FMT_DT_INVALID;
}

fmt_dtype fmt_dtype_from_ggml(int64_t id)
{
	if (id < 0 || id >= GGML_ID_COUNT)
		return FMT_DT_INVALID;
	for (int t = FMT_DT_INVALID + 1; t < FMT_DT_COUNT; t++)
		if (dtype_table[t].ggml_id == id)
			return (fmt_dtype)t;
	return FMT_DT_INVALID;
}

int fmt_dtype_row_ok(fmt_dtype t, uint64_t innermost)
{
	if (!valid(t))
		return 0;
	return innermost % dtype_table[t].block_elems == 0;
}

static fmt_kind count_elements(const uint64_t *shape, int ndim, uint64_t *nelems, fmt_err *e)
{
	uint64_t count = 1;
	for (int i = 0; i < ndim; i++)
		if (shape[i] == 0) {
			*nelems = 0; /* an empty tensor, whatever the other dimensions */
			return FMT_OK;
		}
	for (int i = 0; i < ndim; i++)
		if (fmt_mul_u64(count, shape[i], &count))
			return fmt_fail(e, FMT_INVALID_FORMAT, "element count overflows 64 bits");
	*nelems = count;
	return FMT_OK;
}

/* Bytes of nblocks blocks of block_bits bits each, without forming the (possibly overflowing)
 * bit count: whole groups of 8 blocks are whole bytes. */
static fmt_kind blocks_to_bytes(const fmt_dtype_info *info, uint64_t nelems, uint64_t *nbytes,
				fmt_err *e)
{
	uint64_t nblocks = nelems / info->block_elems;
	uint64_t bits = info->block_bits;
	uint64_t tail_bits = (nblocks % 8) * bits;
	uint64_t bytes;
	if (tail_bits % 8 != 0) {
		uint64_t total_bits;
		if (fmt_mul_u64(nblocks, bits, &total_bits))
			return fmt_fail(e, FMT_INVALID_FORMAT,
					"misaligned: %llu %s elements is not a whole number of bytes",
					(unsigned long long)nelems, info->name);
		return fmt_fail(e, FMT_INVALID_FORMAT, "misaligned: %llu %s elements is %llu bits, not whole bytes",
				(unsigned long long)nelems, info->name, (unsigned long long)total_bits);
	}
	if (fmt_mul_u64(nblocks / 8, bits, &bytes) || fmt_add_u64(bytes, tail_bits / 8, &bytes))
		return fmt_fail(e, FMT_INVALID_FORMAT, "byte size of %llu %s elements overflows 64 bits",
				(unsigned long long)nelems, info->name);
	*nbytes = bytes;
	return FMT_OK;
}

fmt_kind fmt_dtype_nbytes(fmt_dtype t, const uint64_t *shape, int ndim, uint64_t *nelems,
			  uint64_t *nbytes, fmt_err *e)
{
	uint64_t count;
	fmt_kind k;
	if (!valid(t))
		return fmt_fail(e, FMT_INVALID_FORMAT, "invalid dtype %d", (int)t);
	if (ndim < 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "negative dimension count %d", ndim);
	k = count_elements(shape, ndim, &count, e);
	if (k != FMT_OK)
		return k;
	const fmt_dtype_info *info = &dtype_table[t];
	if (count % info->block_elems != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "%llu elements is not a multiple of the %s block size %u",
				(unsigned long long)count, info->name, (unsigned)info->block_elems);
	k = blocks_to_bytes(info, count, nbytes, e);
	if (k != FMT_OK)
		return k;
	*nelems = count;
	return FMT_OK;
}
