/* APR seed shard sets (specs/apr.md A.8): NAME-0000i-of-0000N.apr, each a complete file with
 * SHARDED set and its "shard" record. Tensors are cut in model order, a shard taking tensors
 * while its data stays within the limit (a larger tensor gets a shard of its own). Every shard
 * is written to its temporary file first; the set is renamed into place only when all were
 * written, and what was renamed is removed again if a later rename fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "apr_internal.h"

/* First tensor of each shard; *n shards. */
static fmt_kind cut(const fmt_model *m, uint64_t max_bytes, size_t **first, size_t *n, fmt_err *e)
{
	size_t *f = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *f), count = 0;
	if (!f)
		return fmt_fail(e, FMT_IO, "out of memory");
	uint64_t used = 0;
	for (size_t i = 0; i < m->n_tensors; i++) {
		uint64_t b = m->tensors[i].nbytes;
		if (count == 0 || (used > 0 && (b > max_bytes || used > max_bytes - b))) {
			f[count++] = i;
			used = 0;
		}
		used += b;
	}
	if (count == 0)
		f[count++] = 0;   /* a model without tensors is one shard */
	*first = f;
	*n = count;
	return FMT_OK;
}

/* The tensors [from, to) of m as a model of their own (shallow: nothing is copied or freed). */
static fmt_model part_of(const fmt_model *m, size_t from, size_t to)
{
	fmt_model p = *m;
	p.tensors = m->tensors + from;
	p.n_tensors = to - from;
	p.cap_tensors = p.n_tensors;
	return p;
}

fmt_kind apr_write_sharded(const fmt_model *m, const char *prefix, uint64_t max_bytes, const fmt_write_opts *o,
			   char ***out_paths, size_t *n_out, fmt_err *e)
{
	size_t *first = NULL, n = 0;
	if (o->layout && strcmp(o->layout, "seed") != 0)
		return fmt_fail(e, FMT_USAGE, "shard sets are written in the seed layout (aprender has no shard sets)");
	fmt_kind k = cut(m, max_bytes ? max_bytes : UINT64_MAX, &first, &n, e);
	if (k != FMT_OK)
		return k;
	if (n > 99999) {
		free(first);
		return fmt_fail(e, FMT_USAGE, "%zu shards: shard names have room for 99999", n);
	}
	fmt_sink *sinks = calloc(n, sizeof *sinks);
	char **paths = calloc(n + 1, sizeof *paths);
	size_t opened = 0, committed = 0;
	if (!sinks || !paths)
		k = fmt_fail(e, FMT_IO, "out of memory");
	apr_seed_opts so = { .stamp = 1, .level = o->codec_level, .shard_count = n, .tensors_total = m->n_tensors };
	so.codec = o->codec == FMT_CODEC_LZ4 ? APR_CODEC_LZ4 : o->codec == FMT_CODEC_ZSTD ? APR_CODEC_ZSTD : APR_CODEC_NONE;
	if (so.codec == APR_CODEC_ZSTD && so.level == 0)
		so.level = 3;
	if (k == FMT_OK && so.codec != APR_CODEC_NONE && o->threads > 1)
		k = fmt_pool_create(&so.pool, o->threads, e);
	for (size_t i = 0; i < n && k == FMT_OK; i++) {
		if (asprintf(&paths[i], "%s-%05zu-of-%05zu.apr", prefix, i + 1, n) < 0) {
			paths[i] = NULL;
			k = fmt_fail(e, FMT_IO, "out of memory");
			break;
		}
		k = fmt_sink_open(&sinks[i], paths[i], o->sink_flags, e);
		if (k != FMT_OK)
			break;
		opened++;
		fmt_model part = part_of(m, first[i], i + 1 < n ? first[i + 1] : m->n_tensors);
		so.shard_index = i + 1;
		k = apr_seed_write(&part, &sinks[i], &so, e);
		if (k != FMT_OK)
			fmt_err_file(e, paths[i]);
	}
	for (size_t i = 0; i < opened && k == FMT_OK; i++, committed++)
		k = fmt_sink_commit(&sinks[i], e);
	if (k != FMT_OK) {
		for (size_t i = committed; i < opened; i++)
			fmt_sink_abort(&sinks[i]);
		for (size_t i = 0; i < committed; i++)
			unlink(paths[i]);
		for (size_t i = 0; i < n && paths; i++)
			free(paths[i]);
		free(paths);
		paths = NULL;
		n = 0;
	}
	fmt_pool_destroy(so.pool);
	free(sinks);
	free(first);
	*out_paths = paths;
	*n_out = n;
	return k;
}
