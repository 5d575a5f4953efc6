/* gguf-split sets (specs/gguf.md §14): opening <prefix>-00001-of-0000N.gguf as one model, and
 * writing a model as such a set.
 *
 * Reader: any shard opened under a matching name opens the whole set, in shard order, with the
 * first shard's metadata (as APR sets open from any member); the file named is sources[0]. A
 * shard of a set of more than one under another name cannot find the others, and missing
 * shards (all of them named) or an inconsistent set are SchemaMismatch. A set of one opens as
 * itself under any name.
 * Writer: like gguf-split, except that a shard is never left without tensors by the size limit
 * (gguf-split can emit an empty shard when the first tensor alone exceeds the limit). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fmt/checked.h"
#include "fmt/gguf.h"
#include "fmt/shardset.h"
#include "gguf_internal.h"

#define SPLIT_ALIGN 32u

static const char KEY_NO[] = "split.no", KEY_COUNT[] = "split.count",
		  KEY_TENSORS[] = "split.tensors.count";

static int is_split_key(const char *key)
{
	return strcmp(key, KEY_NO) == 0 || strcmp(key, KEY_COUNT) == 0 || strcmp(key, KEY_TENSORS) == 0;
}

/* "<prefix>-NNNNN-of-MMMMM.gguf" -> prefix (malloc'd; not made when prefix is NULL), shard number
 * and count: 1; 0 another name; -1 out of memory. */
static int parse_split_name(const char *path, char **prefix, unsigned *no, unsigned *count)
{
	static const char ext[] = ".gguf";
	size_t n = strlen(path), x = sizeof ext - 1;
	if (n <= x || strcmp(path + n - x, ext) != 0)
		return 0;
	size_t suffix = fmt_shard_name_suffix(path, n - x, no, count);
	if (!suffix)
		return 0;
	if (!prefix)
		return 1;
	*prefix = strndup(path, n - x - suffix);
	return *prefix ? 1 : -1;
}

/* The value of key as the exact type, or fail with SchemaMismatch. */
static fmt_kind split_key(const fmt_model *m, const char *key, fmt_vtype type, int64_t *out, fmt_err *e)
{
	const fmt_value *v = fmt_model_get_meta(m, key);
	if (!v)
		return fmt_fail(e, FMT_SCHEMA, "split key %s is missing", key);
	if (v->type != type)
		return fmt_fail(e, FMT_SCHEMA, "split key %s is %s (expected %s)", key, fmt_vtype_name(v->type),
				fmt_vtype_name(type));
	*out = type == FMT_V_I32 ? v->v.i : (int64_t)v->v.u;
	return FMT_OK;
}

static fmt_kind split_keys(const fmt_model *m, int64_t *no, int64_t *count, int64_t *tensors, fmt_err *e)
{
	fmt_kind k = split_key(m, KEY_NO, FMT_V_U16, no, e);
	if (k == FMT_OK)
		k = split_key(m, KEY_COUNT, FMT_V_U16, count, e);
	if (k == FMT_OK)
		k = split_key(m, KEY_TENSORS, FMT_V_I32, tensors, e);
	return k;
}

/* Open shard no (1-based) of count and append its tensors to m; its metadata goes to *meta
 * when meta is not NULL (shard 1's: the model's), else is only checked. */
static fmt_kind load_shard(fmt_model *m, const char *path, int64_t no, int64_t count, int64_t total,
			   fmt_model *meta, gguf_file_info *info, fmt_err *e)
{
	fmt_source s;
	fmt_model keys;
	int idx;
	fmt_kind k = fmt_source_open_found(&s, path, e);
	if (k != FMT_OK && errno == ENOMEM) /* there, but memory ran out opening it */
		return k;
	if (k != FMT_OK) {
		char why[FMT_ERR_MSG_MAX];
		snprintf(why, sizeof why, "%s", e->msg);
		return fmt_fail_file(e, FMT_SCHEMA, path, "shard %lld of %lld is missing (%s)", (long long)no,
				     (long long)count, why);
	}
	if ((k = fmt_model_add_source(m, &s, &idx, e)) != FMT_OK) {
		fmt_source_close(&s);
		return k;
	}
	fmt_model_init(&keys);
	k = fmt_gguf_parse_file(&keys, m, idx, info, e);
	int64_t s_no = 0, s_count = 0, s_total = 0;
	if (k == FMT_OK)
		k = split_keys(&keys, &s_no, &s_count, &s_total, e);
	if (k == FMT_OK && (s_no != no - 1 || s_count != count || s_total != total))
		k = fmt_fail(e, FMT_SCHEMA,
			     "shard %lld of %lld says split.no = %lld, split.count = %lld, split.tensors.count = %lld (expected %lld, %lld, %lld)",
			     (long long)no, (long long)count, (long long)s_no, (long long)s_count,
			     (long long)s_total, (long long)(no - 1), (long long)count, (long long)total);
	if (k == FMT_OK && meta) {
		fmt_model taken = *meta;   /* swap the metadata arrays; keys frees the old ones */
		meta->meta = keys.meta, meta->n_meta = keys.n_meta, meta->cap_meta = keys.cap_meta;
		keys.meta = taken.meta, keys.n_meta = taken.n_meta, keys.cap_meta = taken.cap_meta;
	}
	fmt_model_free(&keys);
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}

static fmt_kind check_names_across(const fmt_model *m, fmt_err *e)
{
	fmt_nameset seen = { 0 };
	fmt_kind k = FMT_OK;
	for (size_t i = 0; i < m->n_tensors && k == FMT_OK; i++) {
		int added = fmt_nameset_add(&seen, m->tensors[i].name);
		if (added < 0) {
			k = fmt_fail(e, FMT_IO, "out of memory");
		} else if (added == 0) {
			k = fmt_fail_file(e, FMT_SCHEMA, m->sources[m->tensors[i].source].path,
					  "tensor '%s' appears in more than one shard", m->tensors[i].name);
		}
	}
	fmt_nameset_free(&seen);
	return k;
}

static void drop_split_keys(fmt_model *m)
{
	size_t out = 0;
	for (size_t i = 0; i < m->n_meta; i++) {
		if (is_split_key(m->meta[i].key)) {
			free(m->meta[i].key);
			fmt_value_free(&m->meta[i].val);
		} else {
			m->meta[out++] = m->meta[i];
		}
	}
	m->n_meta = out;
}

/* The keys of the file opened (shard no of the set its name says) agree with its name. */
static fmt_kind check_opened(const fmt_model *m, unsigned name_no, unsigned name_count, int64_t *count,
			     int64_t *total, fmt_err *e)
{
	int64_t no;
	fmt_kind k = split_keys(m, &no, count, total, e);
	if (k == FMT_OK && no != (int64_t)name_no - 1)
		k = name_no == 1 ? fmt_fail(e, FMT_SCHEMA, "first shard has split.no = %lld (expected 0)", (long long)no)
				 : fmt_fail(e, FMT_SCHEMA, "shard %u of %u has split.no = %lld (expected %u)", name_no,
					    name_count, (long long)no, name_no - 1);
	if (k == FMT_OK && (*count < 1 || (unsigned)*count != name_count))
		k = fmt_fail(e, FMT_SCHEMA, "file name says %u shards, split.count says %lld", name_count,
			     (long long)*count);
	return k;
}

/* Every other shard of the set exists; else SchemaMismatch naming all that do not. */
static fmt_kind check_all_present(const char *prefix, unsigned opened, int64_t count, fmt_err *e)
{
	char names[FMT_ERR_MSG_MAX / 2] = "";
	size_t missing = 0, used = 0;
	for (int64_t i = 1; i <= count; i++) {
		struct stat st;
		char *path = (unsigned)i == opened ? NULL : fmt_shard_file_name(prefix, (size_t)i, (size_t)count, "gguf");
		if ((unsigned)i != opened && !path)
			return fmt_fail(e, FMT_IO, "out of memory");
		if (path && stat(path, &st) != 0 && errno == ENOENT) {
			missing++;
			if (used < sizeof names)
				used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", path);
		}
		free(path);
	}
	if (used >= sizeof names && sizeof names > 4)
		memcpy(names + sizeof names - 4, "...", 4);
	if (missing)
		return fmt_fail(e, FMT_SCHEMA, "%zu of the set's %lld shards %s missing: %s", missing, (long long)count,
				missing == 1 ? "is" : "are", names);
	return FMT_OK;
}

/* Move the first n tensors (those of the file opened) behind the others. */
static fmt_kind front_to_back(fmt_model *m, size_t n, fmt_err *e)
{
	if (n == 0 || n == m->n_tensors)
		return FMT_OK;
	fmt_tensor *held = malloc(n * sizeof *held);
	if (!held)
		return fmt_fail(e, FMT_IO, "out of memory");
	memcpy(held, m->tensors, n * sizeof *held);
	memmove(m->tensors, m->tensors + n, (m->n_tensors - n) * sizeof *held);
	memcpy(m->tensors + m->n_tensors - n, held, n * sizeof *held);
	free(held);
	return FMT_OK;
}

/* Shards 1..count in order around the file opened (shard opened, its tensors first in m): shard
 * 1's metadata becomes the model's, and the tensors end up in set order. */
static fmt_kind load_others(fmt_model *m, fmt_gguf_info *st, const char *prefix, unsigned opened, int64_t count,
			    int64_t total, fmt_err *e)
{
	size_t own = m->n_tensors;
	fmt_kind k = FMT_OK;
	for (int64_t i = 1; i <= count && k == FMT_OK; i++) {
		gguf_file_info info;
		if ((unsigned)i == opened) {
			k = front_to_back(m, own, e);
			continue;
		}
		char *path = fmt_shard_file_name(prefix, (size_t)i, (size_t)count, "gguf");
		k = path ? load_shard(m, path, i, count, total, i == 1 ? m : NULL, &info, e)
			 : fmt_fail(e, FMT_IO, "out of memory");
		free(path);
		if (k == FMT_OK && i == 1) {   /* the set is described by its first file */
			m->version = info.version;
			st->alignment = info.alignment;
			st->data_start = info.data_start;
		}
	}
	return k;
}

fmt_kind fmt_gguf_open_split_set(fmt_model *m, fmt_gguf_info *st, fmt_err *e)
{
	char *prefix = NULL;
	unsigned name_no, name_count;
	int64_t no, count, total;
	if (!fmt_model_get_meta(m, KEY_COUNT))
		return FMT_OK;
	int named = parse_split_name(m->sources[0].path, &prefix, &name_no, &name_count);
	if (named < 0)
		return fmt_fail(e, FMT_IO, "out of memory");
	if (!named) {
		/* A set of one under any name is the whole model; a shard of more cannot find the rest. */
		if (split_keys(m, &no, &count, &total, e) != FMT_OK || count <= 1)
			return FMT_OK;
		return fmt_fail(e, FMT_SCHEMA, "shard %lld of %lld of a gguf-split set, but its name is not "
				"NAME-%05lld-of-%05lld.gguf, so the other shards cannot be found", (long long)no + 1,
				(long long)count, (long long)no + 1, (long long)count);
	}
	fmt_kind k = check_opened(m, name_no, name_count, &count, &total, e);
	if (k == FMT_OK)
		k = check_all_present(prefix, name_no, count, e);
	if (k == FMT_OK)
		k = load_others(m, st, prefix, name_no, count, total, e);
	if (k == FMT_OK && (total < 0 || (uint64_t)total != m->n_tensors))
		k = fmt_fail(e, FMT_SCHEMA, "the set holds %zu tensors, split.tensors.count says %lld",
			     m->n_tensors, (long long)total);
	if (k == FMT_OK)
		k = check_names_across(m, e);
	free(prefix);
	if (k != FMT_OK)
		return k;
	drop_split_keys(m);
	st->n_shards = (size_t)count;
	return FMT_OK;
}

/* ---- llama-quantize --keep-split: the output in the input's shards ---- */

/* The shard (from 1) of the input set each tensor of m comes from, into entries[i].shard. m
 * must be a GGUF split set of two shards or more whose tensors each shard lists in the order of
 * their data (llama-quantize writes a shard's tensors in data order; fmt-shard and gguf-split
 * sets are so); the kept tensors (not dropped) must leave no shard but the first empty. */
fmt_kind fmt_gguf_keep_split(const fmt_model *m, fmt_mix_entry *entries, fmt_err *e)
{
	unsigned last = 0, top = 0;
	uint64_t last_offset = 0;
	if (m->driver != &fmt_driver_gguf || m->n_sources < 2)
		return fmt_fail_file(e, FMT_USAGE, m->path, "--keep-split: the input is not a GGUF split set "
				     "(NAME-00001-of-0000N.gguf, N of 2 or more)");
	unsigned char *used = calloc(m->n_sources + 1, 1);
	fmt_kind k = used ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < m->n_tensors && k == FMT_OK; i++) {
		const fmt_tensor *t = &m->tensors[i];
		unsigned no = 0, count = 0;
		/* the shard number only: nothing allocated, so out of memory is not "no shard" (exit 70) */
		if (t->source < 0 || (size_t)t->source >= m->n_sources ||
		    parse_split_name(m->sources[t->source].path, NULL, &no, &count) != 1 || no < 1 ||
		    no > m->n_sources) {
			k = fmt_fail(e, FMT_INTERNAL, "tensor '%s': no shard of the input set", t->name);
			break;
		}
		if (no == last && t->offset < last_offset)
			k = fmt_fail_file(e, FMT_UNSUPPORTED, m->sources[t->source].path, "--keep-split: tensor '%s' "
					  "is listed after a tensor whose data follows its own; llama-quantize writes "
					  "a shard's tensors in the order of their data, fmtkit in the order listed",
					  t->name);
		last = no, last_offset = t->offset;
		entries[i].shard = no;
		if (!entries[i].dropped) {
			used[no] = 1;
			top = no > top ? no : top;
		}
	}
	for (unsigned s = 2; s < top && k == FMT_OK; s++)
		if (!used[s])
			k = fmt_fail_file(e, FMT_UNSUPPORTED, m->path, "--keep-split: shard %u of the input would "
					  "hold no tensor (llama-quantize cannot write such a set either)", s);
	free(used);
	return k;
}

/* ---- writer ---- */

/* gguf-split's cut: model order, each tensor counted padded to 32 bytes; 128 tensors per shard
 * when no limit is given; up to 65535 shards (split.count is a u16). */
static int padded_cost(const fmt_model *m, size_t t, uint64_t *cost)
{
	return fmt_align_up_u64(m->tensors[t].nbytes, SPLIT_ALIGN, cost);
}

static const fmt_shard_rules gguf_rules = {
	.ext = "gguf",
	.has_index = 0,
	.max_shards = 65535,
	.limits = FMT_GGUF_SHARD_LIMITS,
	.cost = padded_cost,
};

/* Shard i (from 0) of a laid-out set: its tensors in model order. The first shard may hold
 * none (its metadata only), as llama-quantize writes it; an empty later one is a bug of the
 * mix (llama-quantize cannot write it either). */
static fmt_kind plan_laid_out(const fmt_model *m, const char *prefix, fmt_shard_plan *p, fmt_err *e)
{
	size_t n = 0, at = 0;
	memset(p, 0, sizeof *p);
	for (size_t i = 0; i < m->n_tensors; i++) {
		if (m->tensors[i].out_shard == 0)
			return fmt_fail(e, FMT_INTERNAL, "tensor '%s' has no shard of the output", m->tensors[i].name);
		if (m->tensors[i].out_shard > n)
			n = m->tensors[i].out_shard;
	}
	if (n > 65535 || m->n_tensors > INT32_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "%zu shards of %zu tensors: beyond split.count (u16) or "
				"split.tensors.count (i32)", n, m->n_tensors);
	p->shards = calloc(n, sizeof *p->shards);
	p->members = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *p->members);
	fmt_kind k = p->shards && p->members ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		p->n_shards = n;
	/* each shard's tensors counted, its place in members after the shards before it, then
	 * filled in model order: one pass over the tensors each */
	for (size_t i = 0; i < m->n_tensors && k == FMT_OK; i++) {
		fmt_shard *sh = &p->shards[m->tensors[i].out_shard - 1];
		sh->count++;
		if (fmt_add_u64(sh->bytes, m->tensors[i].nbytes, &sh->bytes))
			k = fmt_fail(e, FMT_UNSUPPORTED, "shard %u: tensor data beyond 2^64 bytes", m->tensors[i].out_shard);
	}
	for (size_t s = 0; s < n && k == FMT_OK; s++) {
		p->shards[s].members = p->members + at;
		at += p->shards[s].count;
		p->shards[s].count = 0;
	}
	for (size_t i = 0; i < m->n_tensors && k == FMT_OK; i++) {
		fmt_shard *sh = &p->shards[m->tensors[i].out_shard - 1];
		sh->members[sh->count++] = i;
	}
	for (size_t s = 0; s < n && k == FMT_OK; s++) {
		fmt_shard *sh = &p->shards[s];
		if (s > 0 && sh->count == 0)
			k = fmt_fail(e, FMT_UNSUPPORTED, "shard %zu of %zu would hold no tensor (llama-quantize "
				     "--keep-split cannot write such a set either)", s + 1, n);
		else if (!(sh->path = fmt_shard_file_name(prefix, s + 1, n, "gguf")))
			k = fmt_fail(e, FMT_IO, "out of memory");
	}
	if (k != FMT_OK)
		fmt_shard_plan_free(p);
	return k;
}

/* The metadata of shard i: (shard 0 only) every key but split.*, then the three split keys,
 * in gguf-split's order (no, tensors.count, count), or llama-quantize --keep-split's (no,
 * count, tensors.count) when the set is laid out. */
static fmt_kind shard_meta(const fmt_model *m, size_t i, size_t n_shards, fmt_meta **out, size_t *n_out,
			   fmt_err *e)
{
	const int quantize_order = fmt_model_laid_out(m);
	fmt_meta *meta = malloc((m->n_meta + 3) * sizeof *meta);
	size_t n = 0;
	if (!meta)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t j = 0; i == 0 && j < m->n_meta; j++)
		if (!is_split_key(m->meta[j].key))
			meta[n++] = m->meta[j]; /* borrowed */
	memset(meta + n, 0, 3 * sizeof *meta);
	meta[n].key = (char *)KEY_NO;
	meta[n].val.type = FMT_V_U16;
	meta[n++].val.v.u = i;
	meta[n + quantize_order].key = (char *)KEY_TENSORS;
	meta[n + quantize_order].val.type = FMT_V_I32;
	meta[n + quantize_order].val.v.i = (int64_t)m->n_tensors;
	meta[n + !quantize_order].key = (char *)KEY_COUNT;
	meta[n + !quantize_order].val.type = FMT_V_U16;
	meta[n + !quantize_order].val.v.u = n_shards;
	n += 2;
	*out = meta;
	*n_out = n;
	return FMT_OK;
}

/* Shard i's whole file bytes, as write_shard writes it, into the plan (fmt_shard_count_fn). */
static fmt_kind count_shard_bytes(const void *ctx, fmt_shard_plan *p, size_t i, fmt_err *e)
{
	const fmt_model *m = ctx;
	fmt_meta *meta = NULL;
	size_t n_meta = 0;
	fmt_model view;
	fmt_tensor *tensors = NULL;
	fmt_kind r = shard_meta(m, i, p->n_shards, &meta, &n_meta, e);
	if (r == FMT_OK)
		r = fmt_shard_view(m, &p->shards[i], &view, &tensors, e);
	if (r == FMT_OK)
		r = fmt_gguf_file_bytes(meta, n_meta, view.tensors, view.n_tensors, 0, &p->shards[i].file_bytes, e);
	free(tensors);
	free(meta);
	return r;
}

static fmt_kind cut_shards(const fmt_model *m, const char *prefix, const fmt_shard_limits *l, fmt_shard_plan *p,
			   fmt_err *e)
{
	if (fmt_model_laid_out(m))   /* the set llama-quantize writes, not one cut by limits */
		return plan_laid_out(m, prefix, p, e);
	if (m->n_tensors > INT32_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "%zu tensors exceed split.tensors.count (INT32)", m->n_tensors);
	fmt_shard_limits lim = *l;
	if (!lim.max_bytes && !lim.max_tensors)
		lim.max_tensors = FMT_GGUF_SPLIT_TENSORS;
	return fmt_shard_plan_make(m, &gguf_rules, prefix, &lim, p, e);
}

fmt_kind fmt_gguf_plan_shards(const fmt_model *m, const char *prefix, const fmt_shard_limits *l,
			      fmt_shard_plan *p, fmt_err *e)
{
	return fmt_shard_plan_count(cut_shards(m, prefix, l, p, e), p, count_shard_bytes, m, e);
}

static fmt_kind write_shard(void *ctx, size_t i, fmt_sink *k, fmt_err *e)
{
	const fmt_shard_set *set = ctx;
	const fmt_shard *s = &set->p->shards[i];
	fmt_meta *meta = NULL;
	size_t n_meta = 0;
	fmt_model view;
	fmt_tensor *tensors = NULL;
	fmt_kind r = shard_meta(set->m, i, set->p->n_shards, &meta, &n_meta, e);
	if (r == FMT_OK)
		r = fmt_shard_view(set->m, s, &view, &tensors, e);
	if (r == FMT_OK)
		r = fmt_gguf_write_file(set->m, meta, n_meta, view.tensors, view.n_tensors, 0, k, e);
	free(tensors);
	free(meta);
	if (r != FMT_OK)
		fmt_err_file(e, s->path);
	return r;
}

fmt_kind fmt_gguf_write_sharded(const fmt_model *m, const char *prefix, const fmt_shard_limits *l,
				const fmt_write_opts *o, char ***paths, size_t *n_paths, fmt_err *e)
{
	return fmt_shard_write_model(m, prefix, l, o, cut_shards, write_shard, paths,
				     n_paths, e);
}
