/* Hugging Face sharded safetensors (specs/safetensors.md §8): <prefix>-0000i-of-0000N.safetensors
 * plus <prefix>.safetensors.index.json, cut and committed by the shard-set module.
 *
 * Tensors are taken in model order: a new shard starts when the next tensor would push the
 * shard's data past max_bytes or its count past max_tensors; a tensor larger than max_bytes
 * gets a shard of its own. Each shard is written by fmt_st_write (reference layout, the model's
 * string metadata in every shard). */
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/io.h"
#include "fmt/safetensors.h"

static const fmt_shard_rules st_rules = {
	.ext = "safetensors",
	.has_index = 1,
	.max_shards = FMT_SHARD_MAX_FILES,
	.limits = FMT_ST_SHARD_LIMITS,
};

/* Shard i's whole file bytes, as write_shard writes it, into the plan (fmt_shard_count_fn). */
static fmt_kind count_shard_bytes(const void *ctx, fmt_shard_plan *p, size_t i, fmt_err *e)
{
	const fmt_model *m = ctx;
	fmt_shard *s = &p->shards[i];
	fmt_model view;
	fmt_tensor *tensors;
	fmt_kind r = fmt_shard_view(m, s, &view, &tensors, e);
	if (r == FMT_OK)
		r = fmt_st_file_bytes(&view, &s->file_bytes, e);
	free(tensors);
	if (r != FMT_OK)
		fmt_err_file(e, s->path);
	return r;
}

static fmt_kind cut_shards(const fmt_model *m, const char *prefix, const fmt_shard_limits *l, fmt_shard_plan *p,
			   fmt_err *e)
{
	return fmt_shard_plan_make(m, &st_rules, prefix, l, p, e);
}

fmt_kind fmt_st_plan_shards(const fmt_model *m, const char *prefix, const fmt_shard_limits *l,
			    fmt_shard_plan *p, fmt_err *e)
{
	return fmt_shard_plan_count(cut_shards(m, prefix, l, p, e), p, count_shard_bytes, m, e);
}

static fmt_kind write_shard(const fmt_model *m, const fmt_shard *s, fmt_sink *k, fmt_err *e)
{
	fmt_model view;
	fmt_tensor *tensors;
	fmt_kind r = fmt_shard_view(m, s, &view, &tensors, e);
	if (r == FMT_OK)
		r = fmt_st_write(&view, k, e);
	free(tensors);
	if (r != FMT_OK)
		fmt_err_file(e, s->path);
	return r;
}

static fmt_kind write_index(const fmt_model *m, const fmt_shard_plan *p, fmt_sink *k, fmt_err *e)
{
	const char **names = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *names);
	const char **files = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *files);
	uint64_t total = 0;
	size_t n = 0;
	fmt_kind r = names && files ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	for (size_t s = 0; s < p->n_shards && r == FMT_OK; s++) {
		for (size_t i = 0; i < p->shards[s].count && r == FMT_OK; i++) {
			const fmt_tensor *t = &m->tensors[p->shards[s].members[i]];
			names[n] = t->name;
			files[n++] = fmt_base_name(p->shards[s].path);
			if (fmt_add_u64(total, t->nbytes, &total))
				r = fmt_fail(e, FMT_UNSUPPORTED, "total tensor size overflows 64 bits");
		}
	}
	if (r == FMT_OK)
		r = fmt_st_index_write_to(k, names, files, n, total, e);
	if (r != FMT_OK)
		fmt_err_file(e, p->index);
	free(names);
	free(files);
	return r;
}

static fmt_kind write_file(void *ctx, size_t i, fmt_sink *k, fmt_err *e)
{
	const fmt_shard_set *set = ctx;
	if (i < set->p->n_shards)
		return write_shard(set->m, &set->p->shards[i], k, e);
	return write_index(set->m, set->p, k, e);
}

fmt_kind fmt_st_write_sharded(const fmt_model *m, const char *prefix, const fmt_shard_limits *l,
			      const fmt_write_opts *o, char ***out_paths, size_t *n_out, fmt_err *e)
{
	return fmt_shard_write_model(m, prefix, l, o, cut_shards, write_file, out_paths,
				     n_out, e);
}
