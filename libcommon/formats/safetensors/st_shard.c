/* Hugging Face sharded safetensors (specs/safetensors.md §8): <prefix>-0000i-of-0000N.safetensors
 * plus <prefix>.safetensors.index.json.
 *
 * Tensors are taken in model order and cut greedily: a new shard starts when the next tensor
 * would push the shard's data past max_bytes or its count past max_tensors; a tensor larger than
 * max_bytes gets a shard of its own. Each shard is written by fmt_st_write (reference layout,
 * the model's string metadata in every shard). All names are checked before anything is
 * written; on failure the files already committed are removed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fmt/checked.h"
#include "fmt/safetensors.h"

/* first[i] = index of shard i's first tensor; first[n] = n_tensors. */
static fmt_kind plan_groups(const fmt_model *m, uint64_t max_bytes, uint32_t max_tensors,
			    size_t **first_out, size_t *n_out, fmt_err *e)
{
	size_t *first = malloc((m->n_tensors + 2) * sizeof *first);
	size_t n = 0;
	uint64_t bytes = 0, count = 0;
	if (!first)
		return fmt_fail(e, FMT_IO, "out of memory");
	first[n++] = 0;
	for (size_t i = 0; i < m->n_tensors; i++) {
		uint64_t next;
		if (fmt_add_u64(bytes, m->tensors[i].nbytes, &next)) {
			free(first);
			return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%.200s': shard size overflows 64 bits",
					m->tensors[i].name);
		}
		int full = (max_tensors && count >= max_tensors) || (max_bytes && next > max_bytes);
		if (count > 0 && full) {
			first[n++] = i;
			next = m->tensors[i].nbytes;
			count = 0;
		}
		bytes = next;
		count++;
	}
	first[n] = m->n_tensors;
	if (n > 99999) {
		free(first);
		return fmt_fail(e, FMT_UNSUPPORTED, "%zu shards exceed the 5-digit shard numbering", n);
	}
	*first_out = first;
	*n_out = n;
	return FMT_OK;
}

static char *shard_path(const char *prefix, size_t no, size_t count)
{
	char *p = NULL;
	if (asprintf(&p, "%s-%05zu-of-%05zu.safetensors", prefix, no, count) < 0)
		return NULL;
	return p;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static fmt_kind refuse_existing(char *const *paths, size_t n, const char *index, fmt_err *e)
{
	struct stat st;
	for (size_t i = 0; i <= n; i++) {
		const char *p = i < n ? paths[i] : index;
		if (lstat(p, &st) == 0) {
			fmt_err_file(e, p);
			return fmt_fail(e, FMT_USAGE, "output exists (use --force to overwrite)");
		}
	}
	return FMT_OK;
}

/* Shard i: a view of m with only its consecutive tensors (sources, metadata shared). */
static fmt_kind write_shard(const fmt_model *m, const char *path, size_t begin, size_t end,
			    unsigned sink_flags, fmt_err *e)
{
	fmt_model view = *m;
	fmt_sink k;
	view.tensors = m->tensors + begin;
	view.n_tensors = end - begin;
	view.cap_tensors = view.n_tensors;
	fmt_kind r = fmt_sink_open(&k, path, sink_flags, e);
	if (r == FMT_OK) {
		r = fmt_st_write(&view, &k, e);
		if (r == FMT_OK)
			r = fmt_sink_commit(&k, e);
		else
			fmt_sink_abort(&k);
	}
	if (r != FMT_OK)
		fmt_err_file(e, path);
	return r;
}

static fmt_kind write_index(const fmt_model *m, const char *index, char *const *paths,
			    const size_t *first, size_t n_shards, unsigned sink_flags, fmt_err *e)
{
	const char **names = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *names);
	const char **files = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *files);
	uint64_t total = 0;
	fmt_kind r = FMT_OK;
	if (!names || !files)
		r = fmt_fail(e, FMT_IO, "out of memory");
	for (size_t s = 0; s < n_shards && r == FMT_OK; s++) {
		for (size_t i = first[s]; i < first[s + 1] && r == FMT_OK; i++) {
			names[i] = m->tensors[i].name;
			files[i] = base_name(paths[s]);
			if (fmt_add_u64(total, m->tensors[i].nbytes, &total))
				r = fmt_fail(e, FMT_UNSUPPORTED, "total tensor size overflows 64 bits");
		}
	}
	if (r == FMT_OK)
		r = fmt_st_index_write(index, names, files, m->n_tensors, total, sink_flags, e);
	if (r != FMT_OK)
		fmt_err_file(e, index);
	free(names);
	free(files);
	return r;
}

fmt_kind fmt_st_write_sharded(const fmt_model *m, const char *prefix, uint64_t max_bytes,
			      uint32_t max_tensors, unsigned sink_flags, char ***out_paths,
			      size_t *n_out, fmt_err *e)
{
	size_t *first = NULL, n_shards = 0, done = 0;
	char *index = NULL;
	*out_paths = NULL;
	*n_out = 0;
	fmt_kind r = plan_groups(m, max_bytes, max_tensors, &first, &n_shards, e);
	if (r != FMT_OK)
		return r;
	/* n_shards paths, then the index: the caller gets n_shards + 1 names. */
	char **paths = calloc(n_shards + 1, sizeof *paths);
	if (!paths || asprintf(&index, "%s.safetensors.index.json", prefix) < 0) {
		index = NULL;
		r = fmt_fail(e, FMT_IO, "out of memory");
	}
	for (size_t i = 0; i < n_shards && r == FMT_OK; i++)
		if (!(paths[i] = shard_path(prefix, i + 1, n_shards)))
			r = fmt_fail(e, FMT_IO, "out of memory");
	if (r == FMT_OK && !(sink_flags & FMT_SINK_FORCE))
		r = refuse_existing(paths, n_shards, index, e);
	for (size_t i = 0; i < n_shards && r == FMT_OK; i++)
		if ((r = write_shard(m, paths[i], first[i], first[i + 1], sink_flags, e)) == FMT_OK)
			done = i + 1;
	if (r == FMT_OK)
		r = write_index(m, index, paths, first, n_shards, sink_flags, e);
	free(first);
	if (r != FMT_OK) {
		for (size_t i = 0; paths && i < n_shards; i++) {
			if (i < done && paths[i])
				unlink(paths[i]);
			free(paths[i]);
		}
		free(paths);
		free(index);
		return r;
	}
	paths[n_shards] = index;
	*out_paths = paths;
	*n_out = n_shards + 1;
	return FMT_OK;
}
