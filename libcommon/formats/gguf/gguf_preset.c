/* llama-quantize's presets (Q4_K_M, Q5_K_S, ...) and its per-tensor overrides
 * (--output-tensor-type, --token-embedding-type, --tensor-type, --leave-output-tensor, --pure):
 * the dtype llama.cpp's src/llama-quant.cpp (at the commit scripts/llama-src pins) gives each
 * tensor, from its name (its role), its layer, its rows, the architecture and hyperparameters.
 * Written from reading those rules; tests/data/llama-quantize holds what llama-quantize chose. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "fmt/gguf.h"
#include "fmt/quant.h"
#include "fmt/strbuf.h"
#include "gguf_internal.h"

/* llama_ftype values (llama.h) of the presets. */
enum {
	FT_Q4_0 = 2, FT_Q4_1 = 3, FT_Q8_0 = 7, FT_Q5_0 = 8, FT_Q5_1 = 9, FT_Q2_K = 10, FT_Q3_K_S = 11,
	FT_Q3_K_M = 12, FT_Q3_K_L = 13, FT_Q4_K_S = 14, FT_Q4_K_M = 15, FT_Q5_K_S = 16, FT_Q5_K_M = 17,
	FT_Q6_K = 18, FT_IQ4_NL = 25, FT_IQ4_XS = 30,
};

typedef struct preset {
	const char *name;
	int ftype;
	fmt_dtype base;     /* llama_ftype_get_default_type */
	int alias;          /* another name of a preset above it (not listed in messages) */
} preset;

/* llama-quantize's names, in the order messages list them; Q3_K, Q4_K and Q5_K are its aliases
 * of the _M mixes. */
static const preset presets[] = {
	{ "Q2_K", FT_Q2_K, FMT_DT_Q2_K, 0 }, { "Q3_K_S", FT_Q3_K_S, FMT_DT_Q3_K, 0 },
	{ "Q3_K_M", FT_Q3_K_M, FMT_DT_Q3_K, 0 }, { "Q3_K_L", FT_Q3_K_L, FMT_DT_Q3_K, 0 },
	{ "Q4_K_S", FT_Q4_K_S, FMT_DT_Q4_K, 0 }, { "Q4_K_M", FT_Q4_K_M, FMT_DT_Q4_K, 0 },
	{ "Q5_K_S", FT_Q5_K_S, FMT_DT_Q5_K, 0 }, { "Q5_K_M", FT_Q5_K_M, FMT_DT_Q5_K, 0 },
	{ "Q6_K", FT_Q6_K, FMT_DT_Q6_K, 0 }, { "IQ4_NL", FT_IQ4_NL, FMT_DT_IQ4_NL, 0 },
	{ "IQ4_XS", FT_IQ4_XS, FMT_DT_IQ4_XS, 0 }, { "Q4_0", FT_Q4_0, FMT_DT_Q4_0, 0 },
	{ "Q4_1", FT_Q4_1, FMT_DT_Q4_1, 0 }, { "Q5_0", FT_Q5_0, FMT_DT_Q5_0, 0 },
	{ "Q5_1", FT_Q5_1, FMT_DT_Q5_1, 0 }, { "Q8_0", FT_Q8_0, FMT_DT_Q8_0, 0 },
	{ "Q3_K", FT_Q3_K_M, FMT_DT_Q3_K, 1 }, { "Q4_K", FT_Q4_K_M, FMT_DT_Q4_K, 1 },
	{ "Q5_K", FT_Q5_K_M, FMT_DT_Q5_K, 1 },
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

/* llama-quantize's F16, BF16 and F32: the tensors it quantizes get that type, the overrides
 * apply (--output-tensor-type, --token-embedding-type); without an override they are the plain
 * dtypes of those names (no mix), as before. */
static const preset float_presets[] = {
	{ "F16", 1, FMT_DT_F16, 0 }, { "BF16", 32, FMT_DT_BF16, 0 }, { "F32", 0, FMT_DT_F32, 0 },
};
#define N_FLOAT_PRESETS (sizeof float_presets / sizeof float_presets[0])

/* The llama_ftype numbers llama-quantize takes as the type (its QUANT_OPTIONS, whose first
 * name of a number counts: 12 is its alias Q3_K, the same preset as Q3_K_M; 0 is F32, not
 * COPY). 4-6, 33-35 and 39 are ftypes it does not take. */
static const struct { unsigned number; const char *name; } ftype_numbers[] = {
	{ 0, "F32" }, { 1, "F16" }, { 2, "Q4_0" }, { 3, "Q4_1" }, { 7, "Q8_0" }, { 8, "Q5_0" }, { 9, "Q5_1" },
	{ 10, "Q2_K" }, { 11, "Q3_K_S" }, { 12, "Q3_K_M" }, { 13, "Q3_K_L" }, { 14, "Q4_K_S" }, { 15, "Q4_K_M" },
	{ 16, "Q5_K_S" }, { 17, "Q5_K_M" }, { 18, "Q6_K" }, { 19, "IQ2_XXS" }, { 20, "IQ2_XS" }, { 21, "Q2_K_S" },
	{ 22, "IQ3_XS" }, { 23, "IQ3_XXS" }, { 24, "IQ1_S" }, { 25, "IQ4_NL" }, { 26, "IQ3_S" }, { 27, "IQ3_M" },
	{ 28, "IQ2_S" }, { 29, "IQ2_M" }, { 30, "IQ4_XS" }, { 31, "IQ1_M" }, { 32, "BF16" }, { 36, "TQ1_0" },
	{ 37, "TQ2_0" }, { 38, "MXFP4_MOE" }, { 40, "Q1_0" }, { 41, "Q2_0" },
};
#define N_FTYPE_NUMBERS (sizeof ftype_numbers / sizeof ftype_numbers[0])

/* How llama-quantize reads a type number (std::stoi, which is strtol in base 10): blanks
 * skipped, a sign, the decimal digits up to the first other character, the rest ignored ("15x"
 * and "0015" are 15, "0x15" is 0). 1 when name starts so (*n its value, or -1 beyond an int's
 * range, which stoi refuses), 0 when it does not (no digit: a name). */
static int read_number(const char *name, long *n)
{
	char *end;
	if (!name)
		return 0;
	errno = 0;
	long v = strtol(name, &end, 10);
	if (end == name)
		return 0;
	*n = errno == ERANGE || v < INT_MIN || v > INT_MAX ? -1 : v;
	return 1;
}

static int is_number(const char *name)
{
	long n;
	return read_number(name, &n);
}

/* The type llama-quantize's number name stands for, or NULL (not a number, or none it takes). */
static const char *numbered(const char *name)
{
	long n;
	if (!read_number(name, &n) || n < 0)
		return NULL;
	for (size_t i = 0; i < N_FTYPE_NUMBERS; i++)
		if (ftype_numbers[i].number == (unsigned long)n)
			return ftype_numbers[i].name;
	return NULL;
}

static const preset *preset_named(const char *name)
{
	const char *type = numbered(name);
	if (type)
		name = type;
	for (size_t i = 0; name && i < N_PRESETS; i++)
		if (strcasecmp(presets[i].name, name) == 0)
			return &presets[i];
	for (size_t i = 0; name && i < N_FLOAT_PRESETS; i++)
		if (strcasecmp(float_presets[i].name, name) == 0)
			return &float_presets[i];
	return NULL;
}

static int is_float_preset(const preset *p)
{
	return p >= float_presets && p < float_presets + N_FLOAT_PRESETS;
}

const char *fmt_gguf_dtype_alias(const char *name)
{
	const preset *p = is_number(name) ? preset_named(name) : NULL;
	return p ? p->name : NULL;
}

size_t fmt_gguf_dtype_mixes(fmt_drvopt_value *out, size_t max)
{
	static char helps[N_PRESETS][48];
	size_t n = 0;
	for (size_t i = 0; i < N_PRESETS && n < max; i++) {
		snprintf(helps[i], sizeof helps[i], "llama-quantize's mix, mostly %s", fmt_dtype_name(presets[i].base));
		out[n++] = (fmt_drvopt_value){ presets[i].name, helps[i] };
	}
	return n;
}

/* llama-quantize's other type names (tools/quantize/quantize.cpp at the pinned commit): types
 * whose quantizers fmtkit does not have (the IQ1/IQ2/IQ3 ones search grids under an importance
 * matrix; TQ* are ternary, Q1_0/Q2_0 and MXFP4_MOE newer). */
static const char *const unwritten_presets[] = {
	"Q1_0", "Q2_0", "MXFP4_MOE", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ1_S", "IQ1_M", "TQ1_0",
	"TQ2_0", "Q2_K_S", "IQ3_XXS", "IQ3_S", "IQ3_M", "IQ3_XS",
};

/* A number llama-quantize does not take: UsageError naming those it takes, and the types of
 * those fmtkit writes. */
static fmt_kind refuse_number(const char *name, fmt_err *e)
{
	char written[512] = "";
	for (size_t i = 0; i < N_FTYPE_NUMBERS; i++) {
		const preset *p = preset_named(ftype_numbers[i].name);
		size_t used = strlen(written);
		if (p)
			snprintf(written + used, sizeof written - used, "%s%u %s", used ? ", " : "",
				 ftype_numbers[i].number, ftype_numbers[i].name);
	}
	return fmt_fail(e, FMT_USAGE, "--dtype %s: llama-quantize's type numbers (llama_ftype) are 0-3, 7-32, 36-38, "
			"40 and 41; of those fmtkit writes %s", name, written);
}

/* FMT_USAGE naming what to ask instead when name is one of unwritten_presets or llama-quantize's
 * COPY (--dtype keep here), or a number llama-quantize does not take; FMT_OK if not. */
static fmt_kind refuse_unwritten(const char *name, fmt_err *e)
{
	if (!name)
		return FMT_OK;
	if (strcasecmp(name, "COPY") == 0)
		return fmt_fail(e, FMT_USAGE, "--dtype %s: llama-quantize's COPY is --dtype keep here", name);
	const char *type = is_number(name) ? numbered(name) : name;
	if (!type)
		return refuse_number(name, e);
	for (size_t i = 0; i < sizeof unwritten_presets / sizeof unwritten_presets[0]; i++) {
		if (strcasecmp(unwritten_presets[i], type) != 0)
			continue;
		const char *names[N_PRESETS];
		char written[256];
		size_t n = 0;
		for (size_t j = 0; j < N_PRESETS; j++)
			if (!presets[j].alias)
				names[n++] = presets[j].name;
		fmt_join_words(names, n, " and ", written, sizeof written);
		return fmt_fail(e, FMT_USAGE, "--dtype %s: fmtkit does not write llama-quantize's %s; it writes %s",
				name, unwritten_presets[i], written);
	}
	return FMT_OK;
}

int fmt_gguf_preset_ftype(const char *name, uint32_t *ftype)
{
	const preset *p = preset_named(name);
	if (p)
		*ftype = (uint32_t)p->ftype;
	return p != NULL;
}

/* A preset that is also a dtype's name (Q4_0, q4_k): on a model without the hyperparameters
 * the mixture needs, that dtype for every tensor, as before presets. */
static int is_dtype_name(const preset *p)
{
	return strcasecmp(fmt_dtype_name(p->base), p->name) == 0;
}

/* ---- the options (GGUF output) ---- */

/* The options of q given, as "--imatrix and --pure", into buf; how many. */
static size_t quant_opts_named(const fmt_gguf_quant_opts *q, char *buf, size_t size)
{
	static const char *const option[] = { "--output-tensor-type", "--token-embedding-type", "--tensor-type",
					      "--tensor-type-file",
					      "--leave-output-tensor", "--pure", "--imatrix", "--include-weights",
					      "--exclude-weights", "--prune-layers", "--keep-split" };
	const int given[] = { q->output_type != FMT_DT_INVALID, q->embd_type != FMT_DT_INVALID,
			      q->tensor_type_given, q->n_type_files > 0,
			      q->leave_output, q->pure, q->imatrix_file != NULL, q->n_include > 0, q->n_exclude > 0,
			      q->n_prune > 0, q->keep_split };
	const char *names[sizeof option / sizeof option[0]];
	size_t n = 0;
	for (size_t i = 0; i < sizeof option / sizeof option[0]; i++)
		if (given[i])
			names[n++] = option[i];
	fmt_join_words(names, n, " and ", buf, size);
	return n;
}

int fmt_gguf_quant_opts_given(const fmt_gguf_quant_opts *q)
{
	char names[256];
	return q && quant_opts_named(q, names, sizeof names) > 0;
}

/* ---- the model: roles and hyperparameters ---- */

enum role {
	ROLE_TOKEN_EMBD, ROLE_ATTN_Q, ROLE_ATTN_V, ROLE_ATTN_K, ROLE_ATTN_QKV, ROLE_ATTN_KV_B,
	ROLE_ATTN_OUTPUT, ROLE_FFN_UP, ROLE_FFN_GATE, ROLE_FFN_DOWN, ROLE_OUTPUT, ROLE_OTHER
};

static int is_token_embd(const char *name)
{
	return strcmp(name, "token_embd.weight") == 0 || strcmp(name, "per_layer_token_embd.weight") == 0;
}

/* tensor_get_category: the first of these that the name matches. */
static enum role role_of(const char *name)
{
	static const struct { const char *part; enum role role; } parts[] = {
		{ "attn_qkv.weight", ROLE_ATTN_QKV }, { "attn_kv_b.weight", ROLE_ATTN_KV_B },
		{ "attn_v.weight", ROLE_ATTN_V }, { "attn_k.weight", ROLE_ATTN_K }, { "attn_q.weight", ROLE_ATTN_Q },
		{ "attn_output.weight", ROLE_ATTN_OUTPUT }, { "ffn_up", ROLE_FFN_UP }, { "ffn_gate", ROLE_FFN_GATE },
		{ "ffn_down", ROLE_FFN_DOWN },
	};
	if (strcmp(name, "output.weight") == 0)
		return ROLE_OUTPUT;
	if (is_token_embd(name))
		return ROLE_TOKEN_EMBD;
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		if (strstr(name, parts[i].part))
			return parts[i].role;
	return ROLE_OTHER;
}

static int starts_with_any(const char *name, const char *const *prefixes)
{
	for (; *prefixes; prefixes++)
		if (strncmp(name, *prefixes, strlen(*prefixes)) == 0)
			return 1;
	return 0;
}

const char *fmt_gguf_foreign_names(const fmt_model *m, char *why, size_t n)
{
	static const char *const llama_cpp[] = { "token_embd.", "blk.", "output.", "output_norm.", NULL };
	/* transformers' Llama/Mistral/Qwen/Gemma/Phi, GPT-2/Falcon/BLOOM, GPT-NeoX, OPT/BART */
	static const char *const hugging_face[] = { "model.layers.", "model.embed_tokens.", "model.norm.", "lm_head.",
						    "transformer.h.", "transformer.wte.", "gpt_neox.",
						    "model.decoder.", NULL };
	const char *example = NULL;
	for (size_t i = 0; i < m->n_tensors; i++) {
		const char *name = m->tensors[i].name;
		if (starts_with_any(name, llama_cpp))
			return NULL;
		if (!example && starts_with_any(name, hugging_face))
			example = name;
	}
	if (!example)
		return NULL;
	snprintf(why, n,
		 "tensor names are a Hugging Face checkpoint's ('%s'), not llama.cpp's ('token_embd.weight', "
		 "'blk.N.attn_q.weight'): llama.cpp will not find the tensors and a preset sees no tensor roles; "
		 "names are kept as they are (llama.cpp's convert_hf_to_gguf.py renames them)",
		 example);
	return why;
}

static int is_attn_v_like(enum role r)
{
	return r == ROLE_ATTN_V || r == ROLE_ATTN_QKV || r == ROLE_ATTN_KV_B;
}

/* ggml's ne[i] of t (ne[0] the row), 1 past its dimensions. */
static uint64_t ne(const fmt_tensor *t, int i)
{
	return i < t->ndim ? t->shape[t->ndim - 1 - i] : 1;
}

/* ggml_n_dims: trailing dimensions of 1 do not count. */
static int n_dims(const fmt_tensor *t)
{
	int n = t->ndim;
	while (n > 1 && ne(t, n - 1) == 1)
		n--;
	return n < 1 ? 1 : n;
}

/* tensor_allows_quantization: 2-D and 3-D weights, not norms, routers, positional tables and
 * the small tensors of some architectures. */
static int allows_quantization(const fmt_tensor *t, int leave_output)
{
	static const char *const never[] = {
		"_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
		"per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
		"indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight",
		"time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight",
		"time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
		"time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
		"time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.",
		"sam.net_", ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
	};
	const char *name = t->name;
	size_t len = strlen(name);
	if (n_dims(t) < 2 || len < 6 || strcmp(name + len - 6, "weight") != 0)
		return 0;
	if (leave_output && strcmp(name, "output.weight") == 0)
		return 0;
	if (strcmp(name, "position_embd.weight") == 0 || strcmp(name, "token_types.weight") == 0)
		return 0;
	for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
		if (strstr(name, never[i]))
			return 0;
	return 1;
}

/* What llama.cpp's loader reads of the hyperparameters for the rules. */
typedef struct hparams {
	int falcon;
	int is_70b;           /* LLM_TYPE_70B */
	int64_t n_layer;      /* block_count (n_layer_all) */
	int64_t n_expert;
	int64_t n_gqa;        /* head_count / head_count_kv of layer 0; 0 without heads */
} hparams;

/* An integer key "<arch>.<suffix>", or an array's first item (per-layer head counts): 1, or 0
 * when there is none, -1 out of memory (the key is made to its length: a 160-byte buffer cut
 * an architecture name of 136 bytes or more, and head_count_kv went unread). */
static int int_key(const fmt_model *meta, const char *arch, const char *suffix, int64_t *out)
{
	char *key;
	if (asprintf(&key, "%s.%s", arch, suffix) < 0)
		return -1;
	const fmt_value *v = fmt_model_get_meta(meta, key);
	free(key);
	fmt_value item;
	if (v && v->type == FMT_V_ARRAY && v->v.arr.count > 0) {
		item = fmt_array_item(v, 0);
		v = &item;
	}
	if (!v)
		return 0;
	switch (v->type) {
	case FMT_V_U8: case FMT_V_U16: case FMT_V_U32: case FMT_V_U64:
		*out = v->v.u > INT32_MAX ? INT32_MAX : (int64_t)v->v.u;
		return 1;
	case FMT_V_I8: case FMT_V_I16: case FMT_V_I32: case FMT_V_I64:
		*out = v->v.i;
		return 1;
	default:
		return 0;
	}
}

/* The architectures whose loaders call a model of this many layers 70B (src/models/). */
static int is_70b(const char *arch, int64_t n_layer, int64_t n_head, int64_t n_head_kv, int64_t n_expert)
{
	if (strcmp(arch, "llama") == 0)
		return n_expert != 8 && n_layer == 80 && n_head != n_head_kv;
	if (strcmp(arch, "qwen2") == 0 || strcmp(arch, "deci") == 0 || strcmp(arch, "olmo") == 0)
		return n_layer == 80;
	return strcmp(arch, "jais2") == 0 && n_layer == 68;
}

static fmt_kind read_hparams(const fmt_model *meta, const char *asked, hparams *hp, fmt_err *e)
{
	const fmt_value *a = fmt_model_get_meta(meta, "general.architecture");
	int64_t n_head = 0, n_head_kv, nextn = 0;
	memset(hp, 0, sizeof *hp);
	if (!a || a->type != FMT_V_STR)
		return fmt_fail(e, FMT_USAGE, "%s needs the model's general.architecture and its block_count, as "
				"llama-quantize (the mixture depends on the layers)", asked);
	const char *arch = a->v.str.ptr;
	int found = int_key(meta, arch, "block_count", &hp->n_layer);
	if (found == 0 || (found > 0 && (hp->n_layer <= 0 || hp->n_layer > 512)))
		return fmt_fail(e, FMT_USAGE, "%s needs %s.block_count (1 to 512), as llama-quantize", asked, arch);
	int oom = found < 0;
	oom |= int_key(meta, arch, "expert_count", &hp->n_expert) < 0;
	oom |= int_key(meta, arch, "attention.head_count", &n_head) < 0;
	n_head_kv = n_head;
	oom |= int_key(meta, arch, "attention.head_count_kv", &n_head_kv) < 0;
	oom |= int_key(meta, arch, "nextn_predict_layers", &nextn) < 0;
	if (oom)
		return fmt_fail(e, FMT_IO, "out of memory");
	hp->n_gqa = n_head_kv > 0 ? n_head / n_head_kv : 0;
	hp->falcon = strcmp(arch, "falcon") == 0;
	hp->is_70b = is_70b(arch, hp->n_layer - nextn, n_head, n_head_kv, hp->n_expert);
	return FMT_OK;
}

/* ---- the rules ---- */

typedef struct rules {
	const fmt_gguf_quant_opts *o;   /* never NULL */
	const preset *p;
	hparams hp;
	int tied;                       /* no output.weight: token_embd is the output too */
	int has_imatrix;
	regex_t re[FMT_GGUF_MAX_PATTERNS];
	size_t n_re;
	int n_attn_wv, i_attn_wv, i_ffn_down, i_ffn_gate, i_ffn_up;
	/* --prune-layers: the tensors the rules see (renumbered) and the names the importance
	 * matrix knows them by (the input's: llama-quantize's remap_imatrix); NULL without it */
	const fmt_tensor *view;
	const char *const *input_names;
} rules;

static int use_more_bits(int64_t i, int64_t n)
{
	return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* The layer the rules count for tensor name: the running count, or with experts the number
 * in "blk.N." (experts are not stored in layer order). */
static fmt_kind layer_of(const rules *r, const char *name, int count, int64_t *layer, fmt_err *e)
{
	*layer = count;
	if (r->hp.n_expert <= 1)
		return FMT_OK;
	char *end;
	if (strncmp(name, "blk.", 4) != 0 || !isdigit((unsigned char)name[4]))
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': no layer number in its name (the mixture of "
				"a model with experts needs it)", name);
	unsigned long long n = strtoull(name + 4, &end, 10);
	if (n >= (unsigned long long)r->hp.n_layer)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': layer %llu of a model of %" PRId64 " layers",
				name, n, r->hp.n_layer);
	*layer = (int64_t)n;
	return FMT_OK;
}

static int ft(const rules *r, int ftype)
{
	return r->p->ftype == ftype;
}

/* output.weight, and token_embd.weight when it is the output too. */
static fmt_dtype output_type(const rules *r, const fmt_tensor *t, fmt_dtype type)
{
	if (r->o->output_type)
		return r->o->output_type;
	if (r->hp.falcon || ne(t, 0) % fmt_dtype_get(type)->block_elems != 0)
		return FMT_DT_Q8_0;
	return type != FMT_DT_Q8_0 ? FMT_DT_Q6_K : type;
}

static fmt_dtype attn_v_type(rules *r, fmt_dtype type)
{
	int64_t gqa = r->hp.n_gqa;
	if (ft(r, FT_Q2_K))
		type = gqa >= 4 ? FMT_DT_Q4_K : FMT_DT_Q3_K;
	else if (ft(r, FT_Q3_K_M))
		type = r->i_attn_wv < 2 ? FMT_DT_Q5_K : FMT_DT_Q4_K;
	else if (ft(r, FT_Q3_K_L))
		type = FMT_DT_Q5_K;
	else if ((ft(r, FT_IQ4_NL) || ft(r, FT_IQ4_XS)) && gqa >= 4)
		type = FMT_DT_Q5_K;
	else if ((ft(r, FT_Q4_K_M) || ft(r, FT_Q5_K_M)) && use_more_bits(r->i_attn_wv, r->n_attn_wv))
		type = FMT_DT_Q6_K;
	else if (ft(r, FT_Q4_K_S) && r->i_attn_wv < 4)
		type = FMT_DT_Q5_K;
	if (r->hp.is_70b && (type == FMT_DT_Q3_K || type == FMT_DT_Q4_K))
		type = FMT_DT_Q5_K;
	if (r->hp.n_expert == 8)
		type = FMT_DT_Q8_0;
	r->i_attn_wv++;
	return type;
}

static fmt_dtype ffn_down_type(const rules *r, int64_t i, fmt_dtype type)
{
	int64_t n = r->hp.n_layer;
	int falcon = r->hp.falcon;
	if (ft(r, FT_Q2_K))
		type = FMT_DT_Q3_K;
	else if (ft(r, FT_Q3_K_M))
		type = i < n / 16 ? FMT_DT_Q5_K : !falcon || use_more_bits(i, n) ? FMT_DT_Q4_K : FMT_DT_Q3_K;
	else if (ft(r, FT_Q3_K_L))
		type = falcon ? FMT_DT_Q4_K : FMT_DT_Q5_K;
	else if (ft(r, FT_Q4_K_M)) {
		if (falcon)
			type = i < n / 16 ? FMT_DT_Q6_K : use_more_bits(i, n) ? FMT_DT_Q5_K : FMT_DT_Q4_K;
		else if (use_more_bits(i, n))
			type = FMT_DT_Q6_K;
	} else if (i < n / 8 && (ft(r, FT_IQ4_NL) || ft(r, FT_IQ4_XS)) && !r->has_imatrix)
		type = FMT_DT_Q5_K;
	else if (ft(r, FT_Q5_K_M) && use_more_bits(i, n))
		type = FMT_DT_Q6_K;
	else if (ft(r, FT_Q4_K_S) && !falcon && i < n / 8)
		type = FMT_DT_Q5_K;
	else if ((ft(r, FT_Q4_0) || ft(r, FT_Q5_0)) && r->has_imatrix && i < n / 8)
		type = ft(r, FT_Q4_0) ? FMT_DT_Q4_1 : FMT_DT_Q5_1;
	return type;
}

static fmt_dtype attn_output_type(const rules *r, fmt_dtype type)
{
	if (r->hp.falcon)
		return ft(r, FT_Q3_K_L) ? FMT_DT_Q4_K : type;
	if (r->hp.n_expert == 8) {
		int fives = ft(r, FT_Q2_K) || ft(r, FT_Q3_K_S) || ft(r, FT_Q3_K_M) || ft(r, FT_IQ4_NL) ||
			    ft(r, FT_Q4_K_S) || ft(r, FT_Q4_K_M) || ft(r, FT_IQ4_XS);
		return fives ? FMT_DT_Q5_K : type;
	}
	return ft(r, FT_Q2_K) ? FMT_DT_Q3_K : ft(r, FT_Q3_K_M) ? FMT_DT_Q4_K : ft(r, FT_Q3_K_L) ? FMT_DT_Q5_K : type;
}

/* llama_tensor_get_type_impl for the presets above: the mixture's choice by role and layer. */
static fmt_kind mixture_type(rules *r, const fmt_tensor *t, enum role role, fmt_dtype *type, fmt_err *e)
{
	int64_t layer;
	fmt_kind k = FMT_OK;
	if (role == ROLE_OUTPUT || (r->tied && role == ROLE_TOKEN_EMBD))
		*type = output_type(r, t, *type);
	else if (role == ROLE_TOKEN_EMBD)
		return FMT_OK;
	else if (is_attn_v_like(role))
		*type = attn_v_type(r, *type);
	else if (role == ROLE_ATTN_K && r->hp.n_expert == 8)
		*type = FMT_DT_Q8_0;
	else if (role == ROLE_FFN_DOWN) {
		if ((k = layer_of(r, t->name, r->i_ffn_down, &layer, e)) == FMT_OK)
			*type = ffn_down_type(r, layer, *type);
		r->i_ffn_down++;
	} else if (role == ROLE_ATTN_OUTPUT)
		*type = attn_output_type(r, *type);
	else if (role == ROLE_FFN_GATE || role == ROLE_FFN_UP) {
		int *count = role == ROLE_FFN_GATE ? &r->i_ffn_gate : &r->i_ffn_up;
		k = layer_of(r, t->name, *count, &layer, e);
		++*count;
	}
	return k;
}

/* The first --tensor-type pattern found in name, or -1. */
static int pattern_of(const rules *r, const char *name)
{
	for (size_t i = 0; i < r->n_re; i++)
		if (regexec(&r->re[i], name, 0, NULL, 0) == 0)
			return (int)i;
	return -1;
}

static const char *const WHY_KEPT = "llama-quantize keeps it as it is";
static const char *const WHY_PATTERN = "--tensor-type";
static const char *const WHY_FALLBACK = "rows do not divide into the mixture's type: llama-quantize's fallback";

/* The type option asks for tensor t: UsageError when t's rows do not divide into its blocks.
 * llama-quantize gives these two options no fallback (it stops on a failed assertion or "quantized
 * data validation failed"), so the message names the type that holds the rows: the fallback a
 * preset's own type would get. */
static const char *lower_name(fmt_dtype type, char buf[16])
{
	const char *name = fmt_dtype_name(type);
	size_t n = 0;
	for (; name[n] && n + 1 < 16; n++)
		buf[n] = (char)tolower((unsigned char)name[n]);
	buf[n] = '\0';
	return buf;
}

static fmt_kind override_fits(const fmt_tensor *t, fmt_dtype type, const char *option, fmt_err *e)
{
	uint64_t row = ne(t, 0);
	char asked[16], instead[16];
	if (fmt_dtype_row_ok(type, row))
		return FMT_OK;
	return fmt_fail(e, FMT_USAGE, "%s %s: tensor '%s' has rows of %" PRIu64 " elements, which do not divide "
			"into %s blocks of %u (llama-quantize stops there); %s %s holds them", option,
			lower_name(type, asked), t->name, row, fmt_dtype_name(type),
			(unsigned)fmt_dtype_get(type)->block_elems, option,
			lower_name(fmt_quantize_row_fallback(type, row), instead));
}

/* llama_tensor_get_type: the overrides, the mixture, then the fallback for rows a type cannot
 * hold. *type FMT_DT_INVALID: kept. */
static fmt_kind tensor_type(rules *r, const fmt_tensor *t, fmt_dtype *type, const char **why, fmt_err *e)
{
	enum role role = role_of(t->name);
	*type = FMT_DT_INVALID;
	*why = NULL;
	if (!allows_quantization(t, r->o->leave_output)) {
		*why = WHY_KEPT;
		return FMT_OK;
	}
	if (r->o->embd_type && role == ROLE_TOKEN_EMBD &&
	    !(strcmp(t->name, "per_layer_token_embd.weight") == 0 && pattern_of(r, t->name) >= 0)) {
		*type = r->o->embd_type;
		return override_fits(t, *type, "--token-embedding-type", e);
	}
	if (r->o->output_type && role == ROLE_OUTPUT) {
		*type = r->o->output_type;
		return override_fits(t, *type, "--output-tensor-type", e);
	}
	*type = r->p->base;
	if (is_float_preset(r->p))
		return FMT_OK;   /* llama-quantize: no --tensor-type, mixture or fallback for F16, BF16, F32 */
	int pattern = pattern_of(r, t->name);
	if (pattern >= 0) {
		*type = r->o->pattern_type[pattern];
		*why = WHY_PATTERN;
	} else if (!r->o->pure) {
		fmt_kind k = mixture_type(r, t, role, type, e);
		if (k != FMT_OK)
			return k;
	}
	fmt_dtype fell = fmt_quantize_row_fallback(*type, ne(t, 0));
	if (fell != *type) {
		*type = fell;
		*why = WHY_FALLBACK;
	}
	return FMT_OK;
}

/* llama.cpp's weights_map order (its loader's weight_name_comparer): by layer (sscanf "blk.%d.",
 * -1 when that reads no number), then by name. */
static int layer_key(const char *name)
{
	if (strncmp(name, "blk.", 4) != 0)
		return -1;
	char *end;
	long n = strtol(name + 4, &end, 10);
	return end == name + 4 ? -1 : n > INT32_MAX ? INT32_MAX : n < INT32_MIN ? INT32_MIN : (int)n;
}

static int llama_name_order(const char *x, const char *y)
{
	int lx = layer_key(x), ly = layer_key(y);
	return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x, y);
}

static const fmt_model *sort_model;

static int by_layer_then_name(const void *a, const void *b)
{
	return llama_name_order(sort_model->tensors[*(const size_t *)a].name, sort_model->tensors[*(const size_t *)b].name);
}

/* pattern (llama-quantize's ECMAScript syntax, lower case) compiled; re is set only on FMT_OK. */
static fmt_kind compile_pattern(regex_t *re, const char *pattern, const char *where, fmt_err *e)
{
	char ere[8 * sizeof ((fmt_gguf_quant_opts *)0)->pattern[0]];
	const char *why;
	if (fmt_gguf_pattern_to_ere(pattern, ere, sizeof ere, &why) != 0)
		return fmt_fail(e, FMT_USAGE, "%s: '%s' has %s", where, pattern, why);
	if (regcomp(re, ere, REG_EXTENDED | REG_NOSUB) != 0)
		return fmt_fail(e, FMT_USAGE, "%s: '%s' is not a regular expression", where, pattern);
	return FMT_OK;
}

static fmt_kind compile_patterns(rules *r, fmt_err *e)
{
	for (; r->n_re < r->o->n_patterns; r->n_re++)
		if (compile_pattern(&r->re[r->n_re], r->o->pattern[r->n_re], "--tensor-type", e) != FMT_OK)
			return FMT_USAGE;
	return FMT_OK;
}

/* The imatrix entry of a tensor quantized to type, as llama-quantize looks it up: by name; an
 * entry of another size than a row times the experts is an error (token_embd's is ignored). */
static fmt_kind weights_of(const rules *r, const fmt_tensor *t, fmt_mix_entry *me, fmt_err *e)
{
	const char *name = r->input_names ? r->input_names[t - r->view] : t->name;
	const fmt_gguf_imatrix_entry *w = fmt_gguf_imatrix_find(r->o->imatrix, name);
	if (!w || me->type == FMT_DT_INVALID || me->type == t->dtype || fmt_dtype_get(me->type)->block_elems == 1)
		return FMT_OK;
	if (w->n != ne(t, 0) * ne(t, 2)) {
		if (is_token_embd(t->name))
			return FMT_OK;
		return fmt_fail(e, FMT_INVALID_FORMAT, "--imatrix %s: entry '%s' holds %llu values; the tensor's rows "
				"need %llu (a matrix of another model?)", r->o->imatrix_file, t->name,
				(unsigned long long)w->n, (unsigned long long)(ne(t, 0) * ne(t, 2)));
	}
	if (!fmt_quantize_weighted_supported(me->type))
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': cannot quantize to %s", t->name, fmt_dtype_name(me->type));
	me->weights = w->values;
	me->rows_per_set = ne(t, 1);
	return FMT_OK;
}

/* m's tensors in llama.cpp's loader's order (indices), malloc'd; NULL on out of memory. */
static size_t *llama_ordered(const fmt_model *m)
{
	size_t *order = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *order);
	if (!order)
		return NULL;
	for (size_t i = 0; i < m->n_tensors; i++)
		order[i] = i;
	sort_model = m;
	qsort(order, m->n_tensors, sizeof *order, by_layer_then_name);
	return order;
}

static fmt_kind plan_all(rules *r, const fmt_model *m, fmt_mix_entry *entries, fmt_err *e)
{
	size_t *order = llama_ordered(m);
	if (!order)
		return fmt_fail(e, FMT_IO, "out of memory");
	r->tied = 1;
	for (size_t i = 0; i < m->n_tensors; i++) {
		enum role role = role_of(m->tensors[i].name);
		r->n_attn_wv += is_attn_v_like(role);
		r->tied &= role != ROLE_OUTPUT;
	}
	fmt_kind k = FMT_OK;
	for (size_t i = 0; i < m->n_tensors && k == FMT_OK; i++) {
		fmt_mix_entry *me = &entries[order[i]];
		k = tensor_type(r, &m->tensors[order[i]], &me->type, &me->why, e);
		if (k == FMT_OK && r->has_imatrix)
			k = weights_of(r, &m->tensors[order[i]], me, e);
	}
	free(order);
	return k;
}

/* The tensors --prune-layers leaves, renumbered: view (copies of m's tensors, with the new
 * names), from[j] the place in m of view's tensor j, input_names[j] its name in m. */
typedef struct pruned_view {
	fmt_model view;
	size_t *from;
	const char **input_names;
	char **names;                  /* per tensor of m: its new name, or NULL */
	unsigned char *dropped;        /* per tensor of m */
} pruned_view;

static void pruned_view_free(pruned_view *pv, size_t n)
{
	for (size_t i = 0; pv->names && i < n; i++)
		free(pv->names[i]);
	free(pv->names);
	free(pv->dropped);
	free(pv->from);
	free(pv->input_names);
	free(pv->view.tensors);   /* copies: what they point to is m's */
}

static fmt_kind make_pruned_view(const fmt_model *m, const fmt_gguf_quant_opts *o, pruned_view *pv, fmt_err *e)
{
	size_t n = m->n_tensors ? m->n_tensors : 1, kept = 0;
	memset(pv, 0, sizeof *pv);
	fmt_model_init(&pv->view);
	size_t *order = llama_ordered(m);
	pv->names = calloc(n, sizeof *pv->names);
	pv->dropped = calloc(n, 1);
	pv->from = malloc(n * sizeof *pv->from);
	pv->input_names = malloc(n * sizeof *pv->input_names);
	pv->view.tensors = malloc(n * sizeof *pv->view.tensors);
	fmt_kind k = order && pv->names && pv->dropped && pv->from && pv->input_names && pv->view.tensors
		? fmt_gguf_prune_names(m, o, order, pv->names, pv->dropped, e) : fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; k == FMT_OK && i < m->n_tensors; i++) {
		if (pv->dropped[i])
			continue;
		pv->view.tensors[kept] = m->tensors[i];
		if (pv->names[i])
			pv->view.tensors[kept].name = pv->names[i];
		pv->input_names[kept] = m->tensors[i].name;
		pv->from[kept++] = i;
	}
	pv->view.n_tensors = kept;
	free(order);
	return k;
}

/* The mix of the tensors --prune-layers leaves, as llama-quantize plans them: renumbered
 * before its rules count layers (the model's block_count as it was), the importance matrix
 * read by the input's names. */
static fmt_kind plan_pruned(rules *r, const fmt_model *m, fmt_mix_entry *entries, char *note, size_t note_n,
			    fmt_err *e);

/* Append to the text in note[0..n), cut at its end. */
__attribute__((format(printf, 3, 4))) static void note_add(char *note, size_t n, const char *format, ...)
{
	size_t used = strnlen(note, n);
	va_list ap;
	va_start(ap, format);
	if (used + 1 < n)
		vsnprintf(note + used, n - used, format, ap);
	va_end(ap);
}

/* The patterns that match no tensor's name, added to note as "'a', 'b'"; how many. */
static size_t unmatched_patterns(const rules *r, const fmt_model *m, char *note, size_t note_n)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_re; i++) {
		size_t j = 0;
		while (j < m->n_tensors && regexec(&r->re[i], m->tensors[j].name, 0, NULL, 0) != 0)
			j++;
		if (j == m->n_tensors)
			note_add(note, note_n, "%s'%s'", n++ ? ", " : "--tensor-type ", r->o->pattern[i]);
	}
	return n;
}

/* An importance matrix none of whose (selected) entries is a tensor of m: from another model,
 * or --include-weights chose nothing. */
static int imatrix_unused(const fmt_gguf_quant_opts *o, const fmt_model *m)
{
	if (!o->imatrix)
		return 0;
	for (size_t i = 0; i < o->imatrix->n; i++)
		if (fmt_model_find_tensor(m, o->imatrix->entries[i].name))
			return 0;
	return 1;
}

/* --tensor-type with F16, BF16 or F32, which llama-quantize applies to its quantized types
 * only: the patterns added to note; how many. */
static size_t ignored_patterns(const rules *r, char *note, size_t note_n)
{
	for (size_t i = 0; i < r->n_re; i++)
		note_add(note, note_n, "%s'%s'", i ? ", " : "--tensor-type ", r->o->pattern[i]);
	if (r->n_re)
		note_add(note, note_n, ": no tensor changed: llama-quantize applies --tensor-type with its quantized "
			 "types only, not with %s (--output-tensor-type and --token-embedding-type apply)", r->p->name);
	return r->n_re;
}

static void mix_note(const rules *r, const fmt_model *m, char *note, size_t note_n)
{
	const fmt_gguf_quant_opts *o = r->o;
	size_t n = is_float_preset(r->p) ? ignored_patterns(r, note, note_n) : unmatched_patterns(r, m, note, note_n);
	if (n && !is_float_preset(r->p))
		note_add(note, note_n, ": %s no tensor's name (none of them changed)", n == 1 ? "matches" : "match");
	if (!imatrix_unused(o, m))
		return;
	if (o->imatrix->n)
		note_add(note, note_n, "%s--imatrix %s: none of its %zu entries names a tensor of this model (the "
			 "first: '%s'; a matrix of another model?): quantized without importance weights",
			 n ? "; " : "", o->imatrix_file, o->imatrix->n, o->imatrix->entries[0].name);
	else
		note_add(note, note_n, "%s--imatrix %s: --%s-weights left none of its entries: quantized without "
			 "importance weights", n ? "; " : "", o->imatrix_file, o->n_include ? "include" : "exclude");
}

static fmt_kind plan_pruned(rules *r, const fmt_model *m, fmt_mix_entry *entries, char *note, size_t note_n,
			    fmt_err *e)
{
	pruned_view pv;
	fmt_mix_entry *kept = NULL;
	fmt_kind k = make_pruned_view(m, r->o, &pv, e);
	if (k == FMT_OK && !(kept = calloc(pv.view.n_tensors ? pv.view.n_tensors : 1, sizeof *kept)))
		k = fmt_fail(e, FMT_IO, "out of memory");
	r->view = pv.view.tensors;
	r->input_names = pv.input_names;
	if (k == FMT_OK)
		k = plan_all(r, &pv.view, kept, e);
	for (size_t i = 0; k == FMT_OK && i < m->n_tensors; i++)
		entries[i].dropped = pv.dropped[i];
	for (size_t j = 0; k == FMT_OK && j < pv.view.n_tensors; j++) {
		entries[pv.from[j]] = kept[j];
		entries[pv.from[j]].name = pv.names[pv.from[j]];   /* the planner's now */
		pv.names[pv.from[j]] = NULL;
	}
	if (k == FMT_OK)
		mix_note(r, &pv.view, note, note_n);
	r->view = NULL;
	r->input_names = NULL;
	free(kept);
	pruned_view_free(&pv, m->n_tensors);
	return k;
}

fmt_kind fmt_gguf_mix_dtypes(const fmt_model *m, const fmt_model *meta, const char *name, const void *options,
			     fmt_mix_entry *entries, const char **mix, char *note, size_t note_n, fmt_err *e)
{
	static fmt_gguf_quant_opts none;   /* not const: 130 KB of zeros in .bss, not in the file */
	const fmt_gguf_quant_opts *o = options ? options : &none;
	const preset *p = preset_named(name);
	char asked[64];
	*mix = NULL;
	if (note_n)
		note[0] = '\0';
	if (!p && refuse_unwritten(name, e) != FMT_OK)
		return FMT_USAGE;
	if ((!p || is_float_preset(p)) && !fmt_gguf_quant_opts_given(o))
		return FMT_OK;   /* f16 without an override: the plain dtype */
	if (!p) {
		char given[256];
		size_t n = quant_opts_named(o, given, sizeof given);
		if (!name)
			return fmt_fail(e, FMT_USAGE, "%s %s with --dtype naming a llama-quantize type (Q4_K_M, "
					"Q8_0, ...), which is not given", given, n == 1 ? "goes" : "go");
		return fmt_fail(e, FMT_USAGE, "%s %s with --dtype naming a llama-quantize type (Q4_K_M, Q8_0, ...), "
				"not '%s'", given, n == 1 ? "goes" : "go", name);
	}
	snprintf(asked, sizeof asked, "--dtype %s", name);
	rules *r = calloc(1, sizeof *r);
	if (!r)
		return fmt_fail(e, FMT_IO, "out of memory");
	r->o = o;
	r->p = p;
	r->has_imatrix = o->imatrix && o->imatrix->n > 0;
	fmt_kind k = read_hparams(meta, asked, &r->hp, e);
	if (k != FMT_OK && is_dtype_name(p) && !fmt_gguf_quant_opts_given(o)) {
		k = FMT_OK;   /* not a llama.cpp model: the dtype for every tensor */
	} else {
		if (k == FMT_OK)
			k = compile_patterns(r, e);
		if (k == FMT_OK && o->n_prune)
			k = plan_pruned(r, m, entries, note, note_n, e);
		else if (k == FMT_OK && (k = plan_all(r, m, entries, e)) == FMT_OK)
			mix_note(r, m, note, note_n);
		if (k == FMT_OK && o->keep_split)
			k = fmt_gguf_keep_split(m, entries, e);
		if (k == FMT_OK)
			*mix = p->name;
	}
	for (size_t i = 0; i < r->n_re; i++)
		regfree(&r->re[i]);
	free(r);
	return k;
}

/* ---- the keys that record the matrix (quantize.cpp's kv overrides) ---- */

static fmt_kind put_str(fmt_model *m, const char *key, const char *s, size_t max, fmt_err *e)
{
	size_t n = strnlen(s, max);
	while (n < strlen(s) && n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;   /* not inside a UTF-8 character */
	fmt_value v = fmt_value_str(s, n);
	if (!v.v.str.ptr)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = fmt_model_put_meta_last(m, key, &v, e);
	fmt_value_free(&v);
	return k;
}

static fmt_kind put_u32(fmt_model *m, const char *key, uint64_t n, fmt_err *e)
{
	fmt_value v = { .type = FMT_V_U32, .v.u = n > UINT32_MAX ? UINT32_MAX : n };
	return fmt_model_put_meta_last(m, key, &v, e);
}

static int llama_order(const void *a, const void *b)
{
	return llama_name_order(((const fmt_tensor *)a)->name, ((const fmt_tensor *)b)->name);
}

static const char *const imatrix_keys[] = {
	"quantize.imatrix.file", "quantize.imatrix.dataset", "quantize.imatrix.entries_count",
	"quantize.imatrix.chunks_count",
};

/* The keys quantize.cpp records the matrix by, each set as the last key (its --override-kv
 * entries, added after the user's: the matrix's value and place win over the user's). */
static fmt_kind put_imatrix_keys(fmt_model *m, const fmt_gguf_quant_opts *o, fmt_err *e)
{
	const fmt_gguf_imatrix *im = o->imatrix;
	fmt_kind k = put_str(m, imatrix_keys[0], o->imatrix_file, 127, e);
	if (k == FMT_OK && im->dataset)
		k = put_str(m, imatrix_keys[1], im->dataset, 127, e);
	if (k == FMT_OK)
		k = put_u32(m, imatrix_keys[2], im->n, e);
	if (k == FMT_OK && im->chunks > 0)
		k = put_u32(m, imatrix_keys[3], (uint64_t)im->chunks, e);
	return k;
}

fmt_kind fmt_gguf_derive_meta(fmt_model *m, fmt_dtype requested, const char *mix, const void *options, fmt_err *e)
{
	const fmt_gguf_quant_opts *o = options;
	/* A preset writes the tensors as llama-quantize does: those outside the layers by name,
	 * then layer by layer (its loader's map), so that the file is its byte for byte; with
	 * --keep-split in the input's order (its shards', each in the order of its data). */
	if (mix && m->n_tensors > 1 && !(o && o->keep_split))
		qsort(m->tensors, m->n_tensors, sizeof *m->tensors, llama_order);
	return fmt_gguf_set_type_keys(m, requested, mix, e);
}

fmt_kind fmt_gguf_finish_meta(fmt_model *m, const char *mix, const void *options, fmt_err *e)
{
	const fmt_gguf_quant_opts *o = options;
	fmt_kind k = FMT_OK;
	if (!mix || !o)
		return FMT_OK;
	/* quantize.cpp adds the matrix's keys to the --override-kv ones, after them: set after
	 * the user's keys (--set, --override-kv, --unset of the same key lose), last */
	if (o->imatrix && o->imatrix->n > 0)
		k = put_imatrix_keys(m, o, e);
	return k == FMT_OK && o->n_prune ? fmt_gguf_prune_block_count(m, e) : k;
}

/* ---- the options' parsing ---- */

/* A ggml type name in any case (llama-quantize's parse_ggml_type), or FMT_DT_INVALID. */
static fmt_dtype ggml_type_named(const char *name)
{
	for (int t = FMT_DT_INVALID + 1; t < FMT_DT_COUNT; t++)
		if (fmt_dtype_get((fmt_dtype)t)->ggml_id >= 0 && strcasecmp(fmt_dtype_name((fmt_dtype)t), name) == 0)
			return (fmt_dtype)t;
	return FMT_DT_INVALID;
}

static int parse_type_of(const char *where, const char *arg, fmt_dtype *out, fmt_err *e)
{
	if (!(*out = ggml_type_named(arg)))
		return fmt_fail(e, FMT_USAGE, "%s takes a ggml type (q8_0, q6_k, q4_k, iq4_nl, f16, ...), not '%s'",
				where, arg), -1;
	return FMT_DRVOPT_GIVEN;
}

static int parse_output_type(void *v, const char *arg, fmt_err *e)
{
	return parse_type_of("--output-tensor-type", arg, &((fmt_gguf_quant_opts *)v)->output_type, e);
}

static int parse_embd_type(void *v, const char *arg, fmt_err *e)
{
	return parse_type_of("--token-embedding-type", arg, &((fmt_gguf_quant_opts *)v)->embd_type, e);
}

/* PATTERN=TYPE added to o's patterns (where names it in messages: "--tensor-type", or a line
 * of a --tensor-type-file): the pattern in lower case (as llama-quantize), a regular expression
 * in llama-quantize's syntax (gguf_pattern.c) found anywhere in the tensor's name. */
static int add_tensor_type(fmt_gguf_quant_opts *o, const char *arg, const char *where, fmt_err *e)
{
	const char *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : 0;
	regex_t re;
	if (!eq || len == 0 || !eq[1])
		return fmt_fail(e, FMT_USAGE, "%s takes PATTERN=TYPE (attn_v=q8_0), not '%s'", where, arg), -1;
	if (o->n_patterns == FMT_GGUF_MAX_PATTERNS || len >= sizeof o->pattern[0])
		return fmt_fail(e, FMT_USAGE, "%s: at most %d patterns of %zu characters", where,
				FMT_GGUF_MAX_PATTERNS, sizeof o->pattern[0] - 1), -1;
	char *pattern = o->pattern[o->n_patterns];
	for (size_t i = 0; i < len; i++)
		pattern[i] = (char)tolower((unsigned char)arg[i]);
	pattern[len] = '\0';
	if (compile_pattern(&re, pattern, where, e) != FMT_OK)
		return -1;
	regfree(&re);
	if (parse_type_of(where, eq + 1, &o->pattern_type[o->n_patterns], e) < 0)
		return -1;
	o->n_patterns++;
	return FMT_DRVOPT_GIVEN;
}

static int parse_tensor_type(void *v, const char *arg, fmt_err *e)
{
	((fmt_gguf_quant_opts *)v)->tensor_type_given = 1;
	return add_tensor_type(v, arg, "--tensor-type", e);
}

static int parse_tensor_type_file(void *v, const char *arg, fmt_err *e)
{
	fmt_gguf_quant_opts *o = v;
	if (o->n_type_files == FMT_GGUF_MAX_TYPE_FILES)
		return fmt_fail(e, FMT_USAGE, "--tensor-type-file: at most %d files", FMT_GGUF_MAX_TYPE_FILES), -1;
	o->type_file[o->n_type_files].path = arg;
	o->type_file[o->n_type_files++].at = o->n_patterns;
	return FMT_DRVOPT_GIVEN;
}

/* A --tensor-type-file's size limit: 1024 patterns of a line each fit with room to spare. */
#define TYPE_FILE_MAX ((size_t)1 << 20)

/* The PATTERN=TYPE words of text (llama-quantize reads the file with `>>`: words between
 * spaces, tabs and newlines; no comments) added to o. */
static fmt_kind add_type_words(fmt_gguf_quant_opts *o, const char *path, const char *text, size_t len, fmt_err *e)
{
	size_t line = 1;
	for (size_t i = 0; i < len;) {
		if (isspace((unsigned char)text[i])) {
			line += text[i++] == '\n';
			continue;
		}
		size_t n = 0;
		while (i + n < len && !isspace((unsigned char)text[i + n]))
			n++;
		char word[2 * sizeof o->pattern[0]], where[4200];
		snprintf(where, sizeof where, "--tensor-type-file %s, line %zu", path, line);
		if (n >= sizeof word)
			return fmt_fail(e, FMT_USAGE, "%s: a word of %zu bytes (PATTERN=TYPE, the pattern at most %zu "
					"characters)", where, n, sizeof o->pattern[0] - 1);
		memcpy(word, text + i, n);
		word[n] = '\0';
		if (add_tensor_type(o, word, where, e) < 0)
			return FMT_USAGE;
		i += n;
	}
	return FMT_OK;
}

static fmt_kind read_type_file(fmt_gguf_quant_opts *o, const char *path, fmt_err *e)
{
	char *text;
	size_t len;
	fmt_kind k = fmt_read_file(path, TYPE_FILE_MAX, &text, &len, e);
	if (k != FMT_OK) {
		fmt_err_prefix(e, "--tensor-type-file");
		fmt_err_file(e, path);
		return k;
	}
	const char *nul = memchr(text, '\0', len);
	if (nul) {
		size_t line = 1;
		for (const char *c = text; c < nul; c++)
			line += *c == '\n';
		k = fmt_fail_file(e, FMT_INVALID_FORMAT, path, "--tensor-type-file: a NUL byte on line %zu (a text "
				  "file of PATTERN=TYPE words was expected)", line);
	} else {
		k = add_type_words(o, path, text, len, e);
	}
	free(text);
	return k;
}

/* Each --tensor-type-file's patterns, put where the option was among the --tensor-type ones
 * (llama-quantize reads both in the order given, and the first pattern that matches counts). */
static fmt_kind read_type_files(fmt_gguf_quant_opts *o, fmt_err *e)
{
	size_t n = o->n_patterns, f = 0;
	if (!o->n_type_files || o->type_files_read)
		return FMT_OK;
	char (*given)[sizeof o->pattern[0]] = malloc((n ? n : 1) * sizeof *given);
	fmt_dtype *types = malloc((n ? n : 1) * sizeof *types);
	fmt_kind k = given && types ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK) {
		memcpy(given, o->pattern, n * sizeof *given);
		memcpy(types, o->pattern_type, n * sizeof *types);
		o->n_patterns = 0;
	}
	for (size_t i = 0; k == FMT_OK && i <= n; i++) {
		while (k == FMT_OK && f < o->n_type_files && o->type_file[f].at == i)
			k = read_type_file(o, o->type_file[f++].path, e);
		if (k != FMT_OK || i == n)
			continue;
		if (o->n_patterns == FMT_GGUF_MAX_PATTERNS)
			k = fmt_fail(e, FMT_USAGE, "--tensor-type and --tensor-type-file: at most %d patterns",
				     FMT_GGUF_MAX_PATTERNS);
		else {
			memcpy(o->pattern[o->n_patterns], given[i], sizeof *given);
			o->pattern_type[o->n_patterns++] = types[i];
		}
	}
	free(given);
	free(types);
	o->type_files_read = k == FMT_OK;
	return k;
}

static int parse_leave_output(void *v, const char *arg, fmt_err *e)
{
	(void)arg;
	(void)e;
	((fmt_gguf_quant_opts *)v)->leave_output = 1;
	return FMT_DRVOPT_GIVEN;
}

static int parse_imatrix(void *v, const char *arg, fmt_err *e)
{
	(void)e;
	((fmt_gguf_quant_opts *)v)->imatrix_file = arg;
	return FMT_DRVOPT_GIVEN;
}

static int push_name(const char *option, const char **list, size_t *n, const char *arg, fmt_err *e)
{
	if (*n == FMT_GGUF_MAX_TENSOR_TYPES)
		return fmt_fail(e, FMT_USAGE, "--%s: at most %d names", option, FMT_GGUF_MAX_TENSOR_TYPES), -1;
	list[(*n)++] = arg;
	return FMT_DRVOPT_GIVEN;
}

static int parse_include(void *v, const char *arg, fmt_err *e)
{
	fmt_gguf_quant_opts *o = v;
	return push_name("include-weights", o->include, &o->n_include, arg, e);
}

static int parse_exclude(void *v, const char *arg, fmt_err *e)
{
	fmt_gguf_quant_opts *o = v;
	return push_name("exclude-weights", o->exclude, &o->n_exclude, arg, e);
}

static fmt_kind load_quant_opts(void *v, fmt_err *e)
{
	fmt_gguf_quant_opts *o = v;
	if (o->n_include && o->n_exclude)
		return fmt_fail(e, FMT_USAGE, "--include-weights and --exclude-weights cannot be used together");
	if ((o->n_include || o->n_exclude) && !o->imatrix_file)
		return fmt_fail(e, FMT_USAGE, "--%s-weights chooses entries of --imatrix FILE, which is not given",
				o->n_include ? "include" : "exclude");
	fmt_kind k = read_type_files(o, e);
	if (k != FMT_OK || !o->imatrix_file || o->imatrix)
		return k;
	fmt_gguf_imatrix *im = malloc(sizeof *im);
	if (!im)
		return fmt_fail(e, FMT_IO, "out of memory");
	k = fmt_gguf_imatrix_load(im, o->imatrix_file, o, e);
	if (k != FMT_OK) {
		free(im);
		return k;
	}
	o->imatrix = im;
	return FMT_OK;
}

static void free_quant_opts(void *v)
{
	fmt_gguf_quant_opts *o = v;
	if (o->imatrix) {
		fmt_gguf_imatrix_free(o->imatrix);
		free(o->imatrix);
		o->imatrix = NULL;
	}
}

static int parse_prune_layers(void *v, const char *arg, fmt_err *e)
{
	return fmt_gguf_parse_prune(v, arg, e);
}

static int parse_keep_split(void *v, const char *arg, fmt_err *e)
{
	(void)arg;
	(void)e;
	((fmt_gguf_quant_opts *)v)->keep_split = 1;
	return FMT_DRVOPT_GIVEN;
}

static int parse_pure(void *v, const char *arg, fmt_err *e)
{
	(void)arg;
	(void)e;
	((fmt_gguf_quant_opts *)v)->pure = 1;
	return FMT_DRVOPT_GIVEN;
}

#define QUANT_TYPES "q8_0 q6_k q5_k q4_k q3_k q2_k q5_1 q5_0 q4_1 q4_0 iq4_nl iq4_xs f16 bf16 f32"

static const fmt_drvopt quant_option_list[] = {
	{ "output-tensor-type", "TYPE", "with a llama-quantize --dtype (Q4_K_M...): output.weight's type",
	  FMT_DRVOPT_WRITE, FMT_DRVOPT_WORDS, QUANT_TYPES, .parse = parse_output_type },
	{ "token-embedding-type", "TYPE", "... token_embd.weight's type", FMT_DRVOPT_WRITE, FMT_DRVOPT_WORDS,
	  QUANT_TYPES, .parse = parse_embd_type },
	{ "tensor-type", "PATTERN=TYPE", "... the type of tensors whose name the regular expression\n"
	  "PATTERN finds (repeatable; the first that matches counts)", FMT_DRVOPT_WRITE, FMT_DRVOPT_FREE,
	  .parse = parse_tensor_type, .flags = FMT_DRVOPT_REPEAT },
	{ "tensor-type-file", "FILE", "... --tensor-type's PATTERN=TYPE words in FILE, between\n"
	  "spaces or newlines (llama-quantize's file)", FMT_DRVOPT_WRITE, FMT_DRVOPT_FILE,
	  .parse = parse_tensor_type_file, .flags = FMT_DRVOPT_REPEAT },
	{ "leave-output-tensor", NULL, "... output.weight not quantized", FMT_DRVOPT_WRITE, FMT_DRVOPT_FREE,
	  .parse = parse_leave_output },
	{ "pure", NULL, "... every quantized tensor of the preset's one type (no mixture)", FMT_DRVOPT_WRITE,
	  FMT_DRVOPT_FREE, .parse = parse_pure },
	{ "imatrix", "FILE", "... an importance matrix (llama-imatrix's GGUF or legacy .dat)\n"
	  "weighting the quantizers", FMT_DRVOPT_WRITE, FMT_DRVOPT_FILE, .parse = parse_imatrix },
	{ "include-weights", "NAME", "... use only the --imatrix entries whose name holds NAME\n"
	  "(repeatable)", FMT_DRVOPT_WRITE, FMT_DRVOPT_FREE, .parse = parse_include, .flags = FMT_DRVOPT_REPEAT },
	{ "exclude-weights", "NAME", "... leave out the --imatrix entries whose name holds NAME\n"
	  "(repeatable)", FMT_DRVOPT_WRITE, FMT_DRVOPT_FREE, .parse = parse_exclude, .flags = FMT_DRVOPT_REPEAT },
	{ "prune-layers", "L0,L1,...", "... leave out these layers (blk.N), renumber the others and\n"
	  "set <arch>.block_count (repeatable)", FMT_DRVOPT_WRITE, FMT_DRVOPT_FREE, .parse = parse_prune_layers,
	  .flags = FMT_DRVOPT_REPEAT },
	{ "keep-split", NULL, "... the output in the input's shards: a split set as\n"
	  "llama-quantize --keep-split writes it (a GGUF split set input)", FMT_DRVOPT_WRITE, FMT_DRVOPT_FREE,
	  .parse = parse_keep_split },
	{ .name = NULL }
};

const fmt_drvopts fmt_gguf_quant_options = { .list = quant_option_list, .size = sizeof(fmt_gguf_quant_opts),
					     .load = load_quant_opts, .free = free_quant_opts };
