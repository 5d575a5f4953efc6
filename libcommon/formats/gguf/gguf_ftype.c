/* general.file_type (llama.cpp's llama_ftype) and general.quantization_version: what they are
 * called, and what a model's tensors make them. Values from llama.cpp's include/llama.h. */
#include <string.h>
#include "fmt/gguf.h"

const char *const fmt_gguf_derived_keys[] = { FMT_GGUF_KEY_FILE_TYPE, FMT_GGUF_KEY_QUANT_VERSION, NULL };

typedef struct ftype_row {
	uint32_t value;
	const char *name;
	fmt_dtype dtype;   /* the type most weights have */
	int guess;         /* the value llama.cpp's loader picks for a model mostly of dtype */
} ftype_row;

static const ftype_row ftypes[] = {
	{ 0, "ALL_F32", FMT_DT_F32, 1 },
	{ 1, "MOSTLY_F16", FMT_DT_F16, 1 },
	{ 2, "MOSTLY_Q4_0", FMT_DT_Q4_0, 1 },
	{ 3, "MOSTLY_Q4_1", FMT_DT_Q4_1, 1 },
	{ 4, "MOSTLY_Q4_1_SOME_F16", FMT_DT_Q4_1, 0 },
	{ 7, "MOSTLY_Q8_0", FMT_DT_Q8_0, 1 },
	{ 8, "MOSTLY_Q5_0", FMT_DT_Q5_0, 1 },
	{ 9, "MOSTLY_Q5_1", FMT_DT_Q5_1, 1 },
	{ 10, "MOSTLY_Q2_K", FMT_DT_Q2_K, 1 },
	{ 11, "MOSTLY_Q3_K_S", FMT_DT_Q3_K, 0 },
	{ 12, "MOSTLY_Q3_K_M", FMT_DT_Q3_K, 1 },
	{ 13, "MOSTLY_Q3_K_L", FMT_DT_Q3_K, 0 },
	{ 14, "MOSTLY_Q4_K_S", FMT_DT_Q4_K, 0 },
	{ 15, "MOSTLY_Q4_K_M", FMT_DT_Q4_K, 1 },
	{ 16, "MOSTLY_Q5_K_S", FMT_DT_Q5_K, 0 },
	{ 17, "MOSTLY_Q5_K_M", FMT_DT_Q5_K, 1 },
	{ 18, "MOSTLY_Q6_K", FMT_DT_Q6_K, 1 },
	{ 19, "MOSTLY_IQ2_XXS", FMT_DT_IQ2_XXS, 1 },
	{ 20, "MOSTLY_IQ2_XS", FMT_DT_IQ2_XS, 1 },
	{ 21, "MOSTLY_Q2_K_S", FMT_DT_Q2_K, 0 },
	{ 22, "MOSTLY_IQ3_XS", FMT_DT_IQ3_S, 0 },
	{ 23, "MOSTLY_IQ3_XXS", FMT_DT_IQ3_XXS, 1 },
	{ 24, "MOSTLY_IQ1_S", FMT_DT_IQ1_S, 1 },
	{ 25, "MOSTLY_IQ4_NL", FMT_DT_IQ4_NL, 1 },
	{ 26, "MOSTLY_IQ3_S", FMT_DT_IQ3_S, 1 },
	{ 27, "MOSTLY_IQ3_M", FMT_DT_IQ3_S, 0 },
	{ 28, "MOSTLY_IQ2_S", FMT_DT_IQ2_S, 1 },
	{ 29, "MOSTLY_IQ2_M", FMT_DT_IQ2_S, 0 },
	{ 30, "MOSTLY_IQ4_XS", FMT_DT_IQ4_XS, 1 },
	{ 31, "MOSTLY_IQ1_M", FMT_DT_IQ1_M, 1 },
	{ 32, "MOSTLY_BF16", FMT_DT_BF16, 1 },
	{ 36, "MOSTLY_TQ1_0", FMT_DT_TQ1_0, 1 },
	{ 37, "MOSTLY_TQ2_0", FMT_DT_TQ2_0, 1 },
	{ 38, "MOSTLY_MXFP4_MOE", FMT_DT_MXFP4, 1 },
	{ 39, "MOSTLY_NVFP4", FMT_DT_NVFP4, 1 },
	{ 40, "MOSTLY_Q1_0", FMT_DT_Q1_0, 1 },
};

#define N_FTYPES (sizeof ftypes / sizeof ftypes[0])

static const ftype_row *row_of_value(uint64_t value)
{
	for (size_t i = 0; i < N_FTYPES; i++)
		if (ftypes[i].value == value)
			return &ftypes[i];
	return NULL;
}

const char *fmt_gguf_ftype_name(uint64_t ftype)
{
	const ftype_row *r = row_of_value(ftype);
	return r ? r->name : NULL;
}

int fmt_gguf_ftype_of_dtype(fmt_dtype t, uint32_t *ftype)
{
	for (size_t i = 0; i < N_FTYPES; i++) {
		if (ftypes[i].dtype == t && ftypes[i].guess) {
			*ftype = ftypes[i].value;
			return 1;
		}
	}
	return 0;
}

/* The dtype holding the most bytes among the weights (tensors of two or more dimensions; all
 * tensors when there are none), ties to the lower dtype number. */
static fmt_dtype dominant_dtype(const fmt_model *m)
{
	uint64_t bytes[FMT_DT_COUNT] = { 0 };
	int any_weight = 0;
	for (size_t i = 0; i < m->n_tensors; i++)
		any_weight |= m->tensors[i].ndim >= 2;
	for (size_t i = 0; i < m->n_tensors; i++)
		if ((m->tensors[i].ndim >= 2 || !any_weight) && m->tensors[i].dtype < FMT_DT_COUNT)
			bytes[m->tensors[i].dtype] += m->tensors[i].nbytes;
	fmt_dtype best = FMT_DT_INVALID;
	for (int t = FMT_DT_INVALID + 1; t < FMT_DT_COUNT; t++)
		if (bytes[t] > (best == FMT_DT_INVALID ? 0 : bytes[best]))
			best = (fmt_dtype)t;
	return best;
}

static int has_block_tensor(const fmt_model *m)
{
	for (size_t i = 0; i < m->n_tensors; i++)
		if (fmt_dtype_get(m->tensors[i].dtype)->block_elems > 1)
			return 1;
	return 0;
}

/* An integer value already in the file that names a file type of this dtype (Q4_K_S and
 * Q4_K_M are both "mostly Q4_K": the tensors cannot tell them apart, the file can). */
static int existing_matches(const fmt_model *m, fmt_dtype mostly)
{
	const fmt_value *v = fmt_model_get_meta(m, FMT_GGUF_KEY_FILE_TYPE);
	if (!v || v->type != FMT_V_U32) /* llama.cpp reads it as UINT32 only */
		return 0;
	const ftype_row *r = row_of_value(v->v.u);
	return r && r->dtype == mostly;
}

fmt_kind fmt_gguf_set_type_keys(fmt_model *m, fmt_dtype requested, const char *mix, fmt_err *e)
{
	uint32_t ftype;
	fmt_kind k = FMT_OK;
	/* No tensors (llama.cpp's ggml-vocab-*.gguf): nothing to derive the keys from, so the
	 * values the input carries stay as they are (a key is replaced, never dropped). */
	if (m->n_tensors == 0)
		return FMT_OK;
	if ((mix && fmt_gguf_preset_ftype(mix, &ftype)) ||
	    (requested != FMT_DT_INVALID && fmt_gguf_ftype_of_dtype(requested, &ftype))) {
		fmt_value v = { .type = FMT_V_U32, .v.u = ftype };
		k = fmt_model_put_meta(m, FMT_GGUF_KEY_FILE_TYPE, &v, e);
	} else {
		fmt_dtype mostly = dominant_dtype(m);
		if (existing_matches(m, mostly)) {
			/* kept as it is */
		} else if (fmt_gguf_ftype_of_dtype(mostly, &ftype)) {
			fmt_value v = { .type = FMT_V_U32, .v.u = ftype };
			k = fmt_model_put_meta(m, FMT_GGUF_KEY_FILE_TYPE, &v, e);
		}
		/* else no file type names these tensors: the input's value, if any, stays */
	}
	if (k != FMT_OK)
		return k;
	if (!has_block_tensor(m) && !mix) {   /* llama-quantize writes the version on all it writes */
		/* Tensors converted to a float dtype asked for are no longer quantized; tensors kept
		 * as they are keep the input's value (llama.cpp writes the key on F16 files too). */
		if (requested != FMT_DT_INVALID)
			fmt_model_remove_meta(m, FMT_GGUF_KEY_QUANT_VERSION);
		return FMT_OK;
	}
	fmt_value qv = { .type = FMT_V_U32, .v.u = FMT_GGUF_QUANT_VERSION };
	if (!mix || !fmt_gguf_preset_ftype(mix, &ftype))
		return fmt_model_put_meta(m, FMT_GGUF_KEY_QUANT_VERSION, &qv, e);
	/* A preset: both keys last, the version first (llama-quantize's gguf_set_val_u32 removes a
	 * key and appends it), so that the header is its byte for byte. */
	fmt_value fv = { .type = FMT_V_U32, .v.u = ftype };
	k = fmt_model_put_meta_last(m, FMT_GGUF_KEY_QUANT_VERSION, &qv, e);
	return k == FMT_OK ? fmt_model_put_meta_last(m, FMT_GGUF_KEY_FILE_TYPE, &fv, e) : k;
}
