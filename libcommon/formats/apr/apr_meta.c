/* APR metadata: the JSON object of both v2 layouts to and from model metadata. The model's
 * vocabulary for well-known facts is GGUF's (general.architecture, <arch>.block_count, ...), so
 * the keys the APR layouts name differently are translated here, both ways, and nowhere else. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/meta_json.h"
#include "fmt/nameset.h"
#include "fmt/version.h"
#include "fmt/out.h"
#include "fmt/strbuf.h"
#include "fmt/tree_budget.h"
#include "apr_internal.h"

/* Values as the reference writer (serde_json) lays them out; its readers stop at 2^63-1. */
static const fmt_meta_json_style APR_JSON = {
	.readers = "APR readers", .max_levels = 16, .key_shown = INT_MAX, .reals = FMT_REAL_SERDE,
};

/* A key of each layout and its model (GGUF) key; per_arch keys are "<arch>.<gguf>". */
typedef struct key_map {
	const char *seed, *aprender, *gguf;
	int per_arch;
	fmt_vtype type;                /* the model type of an in-range value */
} key_map;

static const key_map KEYS[] = {
	{ "arch", "architecture", "general.architecture", 0, FMT_V_STR },
	{ "name", "name", "general.name", 0, FMT_V_STR },
	{ NULL, "description", "general.description", 0, FMT_V_STR },
	{ NULL, "author", "general.author", 0, FMT_V_STR },
	{ NULL, "license", "general.license", 0, FMT_V_STR },
	{ "vocab_size", "vocab_size", "vocab_size", 1, FMT_V_U32 },
	{ "hidden_size", "hidden_size", "embedding_length", 1, FMT_V_U32 },
	{ "num_layers", "num_layers", "block_count", 1, FMT_V_U32 },
	{ "num_heads", "num_heads", "attention.head_count", 1, FMT_V_U32 },
	{ "num_kv_heads", "num_kv_heads", "attention.head_count_kv", 1, FMT_V_U32 },
	{ "intermediate_size", "intermediate_size", "feed_forward_length", 1, FMT_V_U32 },
	{ "context_length", "max_position_embeddings", "context_length", 1, FMT_V_U32 },
	{ "rope_theta", "rope_theta", "rope.freq_base", 1, FMT_V_F32 },
	{ "rms_norm_eps", "rms_norm_eps", "attention.layer_norm_rms_epsilon", 1, FMT_V_F32 },
};
#define N_KEYS (sizeof KEYS / sizeof KEYS[0])

static const char *layout_key(const key_map *k, apr_layout l)
{
	return l == APR_SEED ? k->seed : l == APR_APRENDER ? k->aprender : NULL;
}

/* ---- JSON to values (fmt_value_from_json, keys kept in order) ---- */

/* The model value of a well-known key: counts as u32 (u64 when larger), floats as f32. */
static fmt_kind typed_value(const key_map *km, const char *key, const json_t *j, fmt_value *out, fmt_err *e)
{
	memset(out, 0, sizeof *out);
	if (km->type == FMT_V_STR) {
		if (!json_is_string(j))
			return fmt_fail(e, FMT_INVALID_FORMAT, "metadata '%s' must be a string", key);
		return fmt_value_from_json(j, 0, out, e);
	}
	if (km->type == FMT_V_U32) {
		if (!json_is_integer(j) || json_integer_value(j) < 0)
			return fmt_fail(e, FMT_INVALID_FORMAT, "metadata '%s' must be a non-negative integer", key);
		json_int_t v = json_integer_value(j);
		out->type = (uint64_t)v <= UINT32_MAX ? FMT_V_U32 : FMT_V_U64;
		out->v.u = (uint64_t)v;
		return FMT_OK;
	}
	if (!json_is_number(j))
		return fmt_fail(e, FMT_INVALID_FORMAT, "metadata '%s' must be a number", key);
	/* These are f32 fields (aprender §6.2); the shortest f32 text reads back as that f32. */
	out->type = FMT_V_F32;
	out->v.f = (double)(float)json_number_value(j);
	return FMT_OK;
}

static const key_map *map_by_layout_key(const char *key, apr_layout l)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (layout_key(&KEYS[i], l) && strcmp(layout_key(&KEYS[i], l), key) == 0)
			return &KEYS[i];
	return NULL;
}

/* Aprender's fields that must be unsigned integers (§6.2): a file breaking this is rejected
 * by aprender's reader, and by ours. */
static const char *const AP_UINT_FIELDS[] = {
	"total_size", "param_count", "hidden_size", "num_layers", "num_heads", "num_kv_heads",
	"vocab_size", "intermediate_size", "max_position_embeddings", "rope_type", "head_dim",
	"num_experts", "num_experts_per_tok", "moe_intermediate_size",
};

static fmt_kind check_aprender_types(const json_t *root, fmt_err *e)
{
	for (size_t i = 0; i < sizeof AP_UINT_FIELDS / sizeof AP_UINT_FIELDS[0]; i++) {
		const json_t *v = json_object_get(root, AP_UINT_FIELDS[i]);
		if (v && !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) >= 0))
			return fmt_fail(e, FMT_INVALID_FORMAT, "metadata '%s' must be an unsigned integer",
					AP_UINT_FIELDS[i]);
	}
	return FMT_OK;
}

fmt_kind fmt_apr_meta_read(fmt_model *m, const char *text, size_t n, apr_layout layout, json_t **raw,
		       fmt_err *e)
{
	json_error_t jerr;
	fmt_kind kb = fmt_json_budget("the metadata", text, n, FMT_TREE_COST_JSON_TYPED, e);
	if (kb != FMT_OK)
		return kb;
	json_t *root = fmt_json_loadb(text, n, JSON_REJECT_DUPLICATES, &jerr);
	if (!root && fmt_json_nomem(&jerr))
		return fmt_fail_nomem(e, "the metadata");
	if (!root)
		return fmt_fail(e, FMT_INVALID_FORMAT, "metadata is not valid JSON (%s at byte %d)", jerr.text,
				jerr.position);
	if (!json_is_object(root)) {
		json_decref(root);
		return fmt_fail(e, FMT_INVALID_FORMAT, "metadata is not a JSON object");
	}
	fmt_kind k = layout == APR_APRENDER ? check_aprender_types(root, e) : FMT_OK;
	const json_t *arch = json_object_get(root, layout == APR_SEED ? "arch" : "architecture");
	const char *arch_name = json_is_string(arch) && json_string_length(arch) ? json_string_value(arch) : NULL;
	const char *key;
	json_t *val;
	json_object_foreach(root, key, val) {
		if (k != FMT_OK)
			break;
		/* About the file, not the model: the seed shard record and writer stamp stay in the
		 * driver's state (fmt-inspect shows them). */
		if (json_is_null(val) || (layout == APR_SEED && (strcmp(key, "shard") == 0 || strcmp(key, "writer") == 0)))
			continue;
		const key_map *km = map_by_layout_key(key, layout);
		char *per_arch = NULL;     /* "<arch>.<gguf>", made to its length */
		const char *name = key;
		fmt_value v;
		if (km && (!km->per_arch || arch_name)) {
			if (km->per_arch && asprintf(&per_arch, "%s.%s", arch_name, km->gguf) < 0) {
				per_arch = NULL;
				k = fmt_fail(e, FMT_IO, "out of memory");
			} else {
				name = km->per_arch ? per_arch : km->gguf;
				k = typed_value(km, key, val, &v, e);
			}
		} else {
			k = fmt_value_from_json(val, 0, &v, e);
		}
		if (k == FMT_OK) {
			k = fmt_model_add_meta(m, name, &v, e);
			fmt_value_free(&v);
		}
		free(per_arch);
	}
	if (k == FMT_OK && raw)
		*raw = root;
	else
		json_decref(root);
	return k;
}

/* ---- model metadata to layout keys ---- */

typedef struct out_entry {
	char *key;                     /* layout key (malloc'd) */
	const fmt_value *val;
} out_entry;

/* The keys to write, in order; names indexes them (each key looked for among all: a model of
 * 60,000 keys took 7 s to write). */
typedef struct out_list {
	out_entry *items;
	size_t n, cap;
	fmt_nameset names;
} out_list;

static out_entry *find_out(out_list *l, const char *key)
{
	long at = fmt_nameset_find(&l->names, key);
	return at >= 0 ? &l->items[at] : NULL;
}

/* Add or (a later entry for the same key) replace. */
static fmt_kind put_out(out_list *l, const char *key, const fmt_value *v, fmt_err *e)
{
	out_entry *o = find_out(l, key);
	if (o) {
		o->val = v;
		return FMT_OK;
	}
	if (fmt_grow_array(&l->items, &l->cap, l->n + 1, sizeof *l->items, 16))
		return fmt_fail(e, FMT_IO, "out of memory");
	char *copy = strdup(key);
	if (!copy || fmt_nameset_add(&l->names, copy) < 0) {
		free(copy);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	l->items[l->n++] = (out_entry){ copy, v };
	return FMT_OK;
}

static void free_out(out_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->items[i].key);
	free(l->items);
	fmt_nameset_free(&l->names);
}

/* Aprender's inference loader fails on a canonical key next to one of its aliases (§6.4), so
 * aliases are written under the canonical name, or dropped when that is present too. */
static const struct { const char *alias, *canonical; } AP_ALIASES[] = {
	{ "hidden_dim", "hidden_size" }, { "d_model", "hidden_size" }, { "n_embd", "hidden_size" },
	{ "n_layers", "num_layers" }, { "num_hidden_layers", "num_layers" }, { "n_layer", "num_layers" },
	{ "n_heads", "num_heads" }, { "num_attention_heads", "num_heads" }, { "n_head", "num_heads" },
	{ "n_kv_heads", "num_kv_heads" }, { "num_key_value_heads", "num_kv_heads" },
	{ "n_vocab", "vocab_size" }, { "ffn_dim", "intermediate_size" },
	{ "intermediate_dim", "intermediate_size" }, { "n_inner", "intermediate_size" },
	{ "max_seq_len", "max_position_embeddings" }, { "context_length", "max_position_embeddings" },
	{ "n_ctx", "max_position_embeddings" }, { "layer_norm_eps", "rms_norm_eps" },
	{ "norm_eps", "rms_norm_eps" },
};

static const char *ap_canonical(const char *key)
{
	for (size_t i = 0; i < sizeof AP_ALIASES / sizeof AP_ALIASES[0]; i++)
		if (strcmp(AP_ALIASES[i].alias, key) == 0)
			return AP_ALIASES[i].canonical;
	return NULL;
}

static const char *model_arch(const fmt_model *m)
{
	const fmt_value *v = fmt_model_get_meta(m, "general.architecture");
	return v && v->type == FMT_V_STR && v->v.str.len ? v->v.str.ptr : NULL;
}

/* The layout key a model key is written under: its own when the layout has none for it. */
static const char *out_key(const char *key, const char *arch, apr_layout l)
{
	size_t arch_len = arch ? strlen(arch) : 0;
	for (size_t i = 0; i < N_KEYS; i++) {
		const key_map *km = &KEYS[i];
		if (!layout_key(km, l))
			continue;
		if (!km->per_arch && strcmp(key, km->gguf) == 0)
			return layout_key(km, l);
		if (km->per_arch && arch && strncmp(key, arch, arch_len) == 0 && key[arch_len] == '.' &&
		    strcmp(key + arch_len + 1, km->gguf) == 0)
			return layout_key(km, l);
	}
	return key;   /* whole: a copy into 512 bytes cut longer keys */
}

static fmt_kind collect(const fmt_model *m, apr_layout l, out_list *out, fmt_err *e)
{
	const char *arch = model_arch(m);
	/* Canonical keys first, so that an alias met later knows whether to yield. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < m->n_meta; i++) {
			const char *key = out_key(m->meta[i].key, arch, l);
			const char *canonical = l == APR_APRENDER ? ap_canonical(key) : NULL;
			if ((pass == 0) != (canonical == NULL))
				continue;
			if (canonical && find_out(out, canonical))
				continue;
			fmt_kind k = put_out(out, canonical ? canonical : key, &m->meta[i].val, e);
			if (k != FMT_OK)
				return k;
		}
	}
	return FMT_OK;
}

/* ---- emitting ---- */

/* Known keys in the order each layout writes them (A.2; aprender §6.2). */
static const char *const SEED_ORDER[] = {
	"arch", "vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads",
	"intermediate_size", "context_length", "rope_theta", "rms_norm_eps", "name", "source", NULL
};
static const char *const AP_ORDER[] = {
	"model_type", "name", "description", "author", "license", "data_source", "data_license",
	"version", "source", "original_format", "created_at", "total_size", "param_count",
	"quantization", "sharding", "chat_template", "chat_format", "special_tokens", "architecture",
	"hf_architecture", "hf_model_type", "hidden_size", "num_layers", "num_heads", "num_kv_heads",
	"vocab_size", "intermediate_size", "max_position_embeddings", "rope_theta", "rope_type",
	"rms_norm_eps", "head_dim", "num_experts", "num_experts_per_tok", "moe_intermediate_size", NULL
};
/* Aprender fields written even when absent, and their default. */
static const struct { const char *key, *json; } AP_ALWAYS[] = {
	{ "model_type", "\"\"" }, { "license", "null" }, { "data_source", "null" },
	{ "data_license", "null" }, { "total_size", "0" }, { "param_count", "0" },
};
/* Aprender fields holding objects, kept in the model as JSON text. */
static const char *const AP_OBJECTS[] = { "quantization", "sharding", "special_tokens", "source_metadata",
					  "tensor_shapes", NULL };

static int in_list(const char *const *list, const char *key)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(list[i], key) == 0)
			return 1;
	return 0;
}

/* A string holding a JSON object, for a field whose type is an object. */
static int is_object_text(const fmt_value *v)
{
	if (v->type != FMT_V_STR || v->v.str.len == 0 || v->v.str.ptr[0] != '{')
		return 0;
	json_t *j = fmt_json_loadb(v->v.str.ptr, v->v.str.len, JSON_REJECT_DUPLICATES, NULL);
	int ok = json_is_object(j);
	json_decref(j);
	return ok;
}

static fmt_kind emit_entry(fmt_sb *b, int *first, const char *key, const fmt_value *v, apr_layout l,
			   fmt_err *e)
{
	int raw = l == APR_APRENDER && in_list(AP_OBJECTS, key) && is_object_text(v);
	return fmt_meta_json_member(b, first, key, v, raw ? FMT_META_JSON_RAW : 0, &APR_JSON, e);
}

fmt_kind fmt_apr_meta_write(const fmt_model *m, apr_layout l, int stamp, const char *extra, char **text,
			size_t *len, fmt_err *e)
{
	out_list out = { 0 };
	fmt_sb b = { 0 };
	fmt_kind k = collect(m, l, &out, e);
	const char *const *order = l == APR_SEED ? SEED_ORDER : AP_ORDER;
	int first = 1;
	fmt_sb_put(&b, "{", 1);
	for (size_t i = 0; k == FMT_OK && order[i]; i++) {
		out_entry *o = find_out(&out, order[i]);
		if (o) {
			k = emit_entry(&b, &first, o->key, o->val, l, e);
			continue;
		}
		for (size_t j = 0; l == APR_APRENDER && j < sizeof AP_ALWAYS / sizeof AP_ALWAYS[0]; j++) {
			if (strcmp(AP_ALWAYS[j].key, order[i]) != 0)
				continue;
			fmt_sb_puts(&b, first ? "\"" : ",\"");
			fmt_sb_puts(&b, order[i]);
			fmt_sb_puts(&b, "\":");
			fmt_sb_puts(&b, AP_ALWAYS[j].json);
			first = 0;
		}
	}
	for (size_t i = 0; k == FMT_OK && i < out.n; i++) {
		if (in_list(order, out.items[i].key) || (l == APR_SEED && (strcmp(out.items[i].key, "writer") == 0 ||
									 strcmp(out.items[i].key, "shard") == 0)))
			continue;
		k = emit_entry(&b, &first, out.items[i].key, out.items[i].val, l, e);
	}
	if (l == APR_SEED && stamp) {
		fmt_sb_puts(&b, first ? "" : ",");
		first = 0;
		fmt_sb_puts(&b, "\"writer\":\"fmtkit " FMTKIT_VERSION "\"");
	}
	if (extra) {
		fmt_sb_puts(&b, first ? "" : ",");
		fmt_sb_puts(&b, extra);
	}
	fmt_sb_put(&b, "}", 1);
	free_out(&out);
	if (k == FMT_OK && b.oom)
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k != FMT_OK) {
		free(b.p);
		return k;
	}
	*text = b.p;
	*len = b.len;
	return FMT_OK;
}
