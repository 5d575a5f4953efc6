/* gguf-split sets (specs/gguf.md §14): opening <prefix>-00001-of-0000N.gguf as one model, and
 * writing a model as such a set.
 *
 * Reader: only shard 1 opened under a matching name opens the set; a non-first shard, or a file
 * with split.* keys under another name, opens as a single file with its split keys visible. A
 * missing shard or an inconsistent set is SchemaMismatch naming the shard.
 * Writer: like gguf-split, except that a shard is never left without tensors by the size limit
 * (gguf-split can emit an empty shard when the first tensor alone exceeds the limit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fmt/checked.h"
#include "fmt/gguf.h"
#include "gguf_internal.h"

#define SPLIT_ALIGN 32u

static const char KEY_NO[] = "split.no", KEY_COUNT[] = "split.count",
		  KEY_TENSORS[] = "split.tensors.count";

static int is_split_key(const char *key)
{
	return strcmp(key, KEY_NO) == 0 || strcmp(key, KEY_COUNT) == 0 || strcmp(key, KEY_TENSORS) == 0;
}

/* "<prefix>-NNNNN-of-MMMMM.gguf" -> prefix (malloc'd), shard number and count. */
static int parse_split_name(const char *path, char **prefix, unsigned *no, unsigned *count)
{
	static const char tail[] = "-00000-of-00000.gguf";
	size_t n = strlen(path), t = sizeof tail - 1;
	if (n <= t)
		return 0;
	const char *s = path + n - t;
	unsigned a = 0, b = 0;
	for (size_t i = 0; i < t; i++) {
		if (tail[i] == '0') {
			if (s[i] < '0' || s[i] > '9')
				return 0;
			if (i < 6)
				a = a * 10 + (unsigned)(s[i] - '0');
			else
				b = b * 10 + (unsigned)(s[i] - '0');
		} else if (s[i] != tail[i]) {
			return 0;
		}
	}
	*prefix = strndup(path, n - t);
	*no = a;
	*count = b;
	return *prefix != NULL;
}

static char *shard_name(const char *prefix, size_t no, size_t count)
{
	size_t len = strlen(prefix) + 32;
	char *p = malloc(len);
	if (p)
		snprintf(p, len, "%s-%05zu-of-%05zu.gguf", prefix, no, count);
	return p;
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

/* Open shard no (1-based) of count and append its tensors to m. */
static fmt_kind load_shard(fmt_model *m, const char *path, int64_t no, int64_t count, int64_t total,
			   fmt_err *e)
{
	fmt_source s;
	fmt_model keys;
	gguf_file_info info;
	int idx;
	fmt_kind k = fmt_source_open(&s, path, e);
	if (k != FMT_OK) {
		char why[FMT_ERR_MSG_MAX];
		snprintf(why, sizeof why, "%s", e->msg);
		fmt_err_file(e, path);
		return fmt_fail(e, FMT_SCHEMA, "shard %lld of %lld is missing (%s)", (long long)no,
				(long long)count, why);
	}
	if ((k = fmt_model_add_source(m, &s, &idx, e)) != FMT_OK) {
		fmt_source_close(&s);
		return k;
	}
	fmt_model_init(&keys);
	k = fmt_gguf_parse_file(&keys, m, idx, &info, e);
	int64_t s_no = 0, s_count = 0, s_total = 0;
	if (k == FMT_OK)
		k = split_keys(&keys, &s_no, &s_count, &s_total, e);
	if (k == FMT_OK && (s_no != no - 1 || s_count != count || s_total != total))
		k = fmt_fail(e, FMT_SCHEMA,
			     "shard %lld of %lld says split.no = %lld, split.count = %lld, split.tensors.count = %lld (expected %lld, %lld, %lld)",
			     (long long)no, (long long)count, (long long)s_no, (long long)s_count,
			     (long long)s_total, (long long)(no - 1), (long long)count, (long long)total);
	fmt_model_free(&keys);
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}

static fmt_kind check_names_across(const fmt_model *m, fmt_err *e)
{
	gguf_nameset seen = { 0 };
	fmt_kind k = FMT_OK;
	for (size_t i = 0; i < m->n_tensors && k == FMT_OK; i++) {
		int added = fmt_gguf_nameset_add(&seen, m->tensors[i].name);
		if (added < 0) {
			k = fmt_fail(e, FMT_IO, "out of memory");
		} else if (added == 0) {
			fmt_err_file(e, m->sources[m->tensors[i].source].path);
			k = fmt_fail(e, FMT_SCHEMA, "tensor '%s' appears in more than one shard", m->tensors[i].name);
		}
	}
	fmt_gguf_nameset_free(&seen);
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

fmt_kind fmt_gguf_open_split_set(fmt_model *m, fmt_gguf_info *st, fmt_err *e)
{
	char *prefix = NULL;
	unsigned name_no, name_count;
	if (!fmt_model_get_meta(m, KEY_COUNT) ||
	    !parse_split_name(m->sources[0].path, &prefix, &name_no, &name_count))
		return FMT_OK;
	if (name_no != 1) {
		free(prefix);
		return FMT_OK;
	}
	int64_t no, count, total;
	fmt_kind k = split_keys(m, &no, &count, &total, e);
	if (k == FMT_OK && no != 0)
		k = fmt_fail(e, FMT_SCHEMA, "first shard has split.no = %lld (expected 0)", (long long)no);
	if (k == FMT_OK && (count < 1 || (unsigned)count != name_count))
		k = fmt_fail(e, FMT_SCHEMA, "file name says %u shards, split.count says %lld", name_count,
			     (long long)count);
	for (int64_t i = 2; i <= count && k == FMT_OK; i++) {
		char *path = shard_name(prefix, (size_t)i, (size_t)count);
		k = path ? load_shard(m, path, i, count, total, e) : fmt_fail(e, FMT_IO, "out of memory");
		free(path);
	}
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

/* ---- writer ---- */

/* Cut the tensors into consecutive groups; first[i] is the index of shard i's first tensor,
 * first[n] = n_tensors. */
static fmt_kind plan_shards(const fmt_model *m, uint64_t max_bytes, uint32_t max_tensors, int empty_first,
			    size_t **first_out, size_t *n_out, fmt_err *e)
{
	if (max_bytes == 0 && max_tensors == 0)
		max_tensors = FMT_GGUF_SPLIT_TENSORS;
	size_t cap = m->n_tensors + 3, n = 0;
	size_t *first = malloc(cap * sizeof *first);
	if (!first)
		return fmt_fail(e, FMT_IO, "out of memory");
	first[n++] = 0;
	if (empty_first)
		first[n++] = 0;
	uint64_t bytes = 0, count = 0;
	for (size_t i = 0; i < m->n_tensors; i++) {
		uint64_t padded, next;
		if (fmt_align_up_u64(m->tensors[i].nbytes, SPLIT_ALIGN, &padded) || fmt_add_u64(bytes, padded, &next)) {
			free(first);
			return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': size overflows", m->tensors[i].name);
		}
		int full = (max_tensors && count >= max_tensors) || (max_bytes && next > max_bytes);
		if (count > 0 && full) {
			first[n++] = i;
			bytes = 0, count = 0, next = padded;
		}
		bytes = next;
		count++;
	}
	first[n] = m->n_tensors;
	if (n > 65535) {
		free(first);
		return fmt_fail(e, FMT_UNSUPPORTED, "%zu shards exceed the split.count limit of 65535", n);
	}
	*first_out = first;
	*n_out = n;
	return FMT_OK;
}

/* The metadata of shard i: (shard 0 only) every key but split.*, then the three split keys. */
static fmt_kind shard_meta(const fmt_model *m, size_t i, size_t n_shards, fmt_meta **out, size_t *n_out,
			   fmt_err *e)
{
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
	meta[n].key = (char *)KEY_TENSORS;
	meta[n].val.type = FMT_V_I32;
	meta[n++].val.v.i = (int64_t)m->n_tensors;
	meta[n].key = (char *)KEY_COUNT;
	meta[n].val.type = FMT_V_U16;
	meta[n++].val.v.u = n_shards;
	*out = meta;
	*n_out = n;
	return FMT_OK;
}

static fmt_kind write_shard(const fmt_model *m, const char *path, size_t i, size_t n_shards,
			    const size_t *first, unsigned sink_flags, fmt_err *e)
{
	fmt_meta *meta = NULL;
	size_t n_meta = 0;
	fmt_sink k;
	fmt_kind r = shard_meta(m, i, n_shards, &meta, &n_meta, e);
	if (r != FMT_OK)
		return r;
	r = fmt_sink_open(&k, path, sink_flags, e);
	if (r == FMT_OK) {
		r = fmt_gguf_write_file(m, meta, n_meta, m->tensors + first[i], first[i + 1] - first[i], 0, &k, e);
		if (r == FMT_OK)
			r = fmt_sink_commit(&k, e);
		else
			fmt_sink_abort(&k);
	}
	free(meta);
	if (r != FMT_OK)
		fmt_err_file(e, path);
	return r;
}

fmt_kind fmt_gguf_write_split(const fmt_model *m, const char *prefix, uint64_t max_bytes,
			      uint32_t max_tensors, int no_tensor_first_split, unsigned sink_flags,
			      char ***out_paths, size_t *n_out, fmt_err *e)
{
	size_t *first = NULL, n_shards = 0;
	*out_paths = NULL;
	*n_out = 0;
	if (m->n_tensors > INT32_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "%zu tensors exceed split.tensors.count (INT32)", m->n_tensors);
	fmt_kind r = plan_shards(m, max_bytes, max_tensors, no_tensor_first_split, &first, &n_shards, e);
	if (r != FMT_OK)
		return r;
	char **paths = calloc(n_shards, sizeof *paths);
	if (!paths) {
		free(first);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	size_t done = 0;
	for (size_t i = 0; i < n_shards && r == FMT_OK; i++) {
		paths[i] = shard_name(prefix, i + 1, n_shards);
		if (!paths[i])
			r = fmt_fail(e, FMT_IO, "out of memory");
		else if ((r = write_shard(m, paths[i], i, n_shards, first, sink_flags, e)) == FMT_OK)
			done = i + 1;
	}
	free(first);
	if (r != FMT_OK) {
		for (size_t i = 0; i < n_shards; i++) {
			if (i < done)
				unlink(paths[i]);
			free(paths[i]);
		}
		free(paths);
		return r;
	}
	*out_paths = paths;
	*n_out = n_shards;
	return FMT_OK;
}

fmt_kind fmt_gguf_write_sharded(const fmt_model *m, const char *prefix, uint64_t max_bytes,
				const fmt_write_opts *o, char ***paths, size_t *n_paths, fmt_err *e)
{
	return fmt_gguf_write_split(m, prefix, max_bytes, 0, 0, o->sink_flags, paths, n_paths, e);
}
