/* APR seed shard sets (specs/apr.md A.8): NAME-0000i-of-0000N.apr, each a complete file with
 * SHARDED set and its "shard" record, cut, named and committed all or nothing by the shared
 * shard-set module (fmt/shardset.h); reading a set is the seed reader's (apr_seed.c). */
#include <stdlib.h>
#include <string.h>
#include "fmt/shardset.h"
#include "apr_internal.h"

static const fmt_shard_rules apr_rules = {
	.ext = "apr",
	.has_index = 0,
	.max_shards = FMT_SHARD_MAX_FILES,
	.limits = APR_SHARD_LIMITS,
};

fmt_kind fmt_apr_plan_shards(const fmt_model *m, const char *prefix, const fmt_shard_limits *l, fmt_shard_plan *p,
			 fmt_err *e)
{
	return fmt_shard_plan_make(m, &apr_rules, prefix, l, p, e);
}

typedef struct set_ctx {
	const fmt_model *m;
	const fmt_shard_plan *plan;
	apr_seed_opts so;
} set_ctx;

static fmt_kind write_file(void *ctx, size_t i, fmt_sink *k, fmt_err *e)
{
	set_ctx *c = ctx;
	fmt_model view;
	fmt_tensor *tensors = NULL;
	fmt_kind r = fmt_shard_view(c->m, &c->plan->shards[i], &view, &tensors, e);
	c->so.shard_index = i + 1;
	if (r == FMT_OK)
		r = fmt_apr_seed_write(&view, k, &c->so, e);
	if (r != FMT_OK)
		fmt_err_file(e, c->plan->shards[i].path);
	free(tensors);
	return r;
}

fmt_kind fmt_apr_write_sharded(const fmt_model *m, const char *prefix, const fmt_shard_limits *l, const fmt_write_opts *o,
			   char ***paths, size_t *n_paths, fmt_err *e)
{
	fmt_shard_plan plan;
	set_ctx c = { .m = m, .plan = &plan };
	memset(&plan, 0, sizeof plan);
	if (fmt_apr_aprender_asked(o))
		return fmt_fail(e, FMT_USAGE, "shard sets are written in the seed layout (aprender has no shard sets)");
	fmt_kind k = fmt_apr_seed_opts_from(m, o, &c.so, e);
	if (k == FMT_OK)
		k = fmt_apr_plan_shards(m, prefix, l, &plan, e);
	c.so.shard_count = plan.n_shards;
	c.so.tensors_total = m->n_tensors;
	if (k == FMT_OK)
		k = fmt_shard_write_plan(&plan, o, write_file, &c, paths, n_paths, e);
	fmt_pool_destroy(c.so.pool);
	fmt_shard_plan_free(&plan);
	return k;
}
