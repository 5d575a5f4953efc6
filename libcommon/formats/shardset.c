/* Shard sets (fmt/shardset.h): the cut, the namer and the writer every set format uses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fmt/checked.h"
#include "fmt/out.h"
#include "fmt/registry.h"
#include "fmt/shardset.h"
#include "fmt/strbuf.h"

/* ---- the namer ---- */

char *fmt_shard_file_name(const char *prefix, size_t no, size_t count, const char *ext)
{
	char *p = NULL;
	if (asprintf(&p, "%s-%05zu-of-%05zu.%s", prefix, no, count, ext) < 0)
		return NULL;
	return p;
}

/* The suffixes a set's output name may end with: the writer's extension and its index name,
 * and those of its single-file driver (".safetensors" for the index driver). */
char *fmt_shard_prefix(const char *output, const fmt_driver *w)
{
	size_t n = strlen(output);
	const fmt_driver *ds[2] = { w, w->file_driver };
	for (size_t d = 0; d < 2; d++) {
		char index_suffix[64];
		if (!ds[d] || !ds[d]->extension)
			continue;
		snprintf(index_suffix, sizeof index_suffix, "%s.index.json", ds[d]->extension);
		const char *suffixes[] = { index_suffix, ds[d]->extension };
		for (size_t i = 0; i < 2; i++) {
			size_t s = strlen(suffixes[i]);
			if (n > s && output[n - s - 1] != '/' && fmt_ends_with_nocase(output, suffixes[i]))
				return strndup(output, n - s);
		}
	}
	return strdup(output);
}

size_t fmt_shard_name_suffix(const char *name, size_t n, unsigned *no, unsigned *count)
{
	static const char pat[] = "-00000-of-00000";
	size_t t = sizeof pat - 1;
	unsigned a = 0, b = 0;
	if (n <= t)
		return 0;
	const char *s = name + n - t;
	for (size_t i = 0; i < t; i++) {
		if (pat[i] != '0') {
			if (s[i] != pat[i])
				return 0;
		} else if (s[i] < '0' || s[i] > '9') {
			return 0;
		} else if (i < 6) {
			a = a * 10 + (unsigned)(s[i] - '0');
		} else {
			b = b * 10 + (unsigned)(s[i] - '0');
		}
	}
	if (no)
		*no = a;
	if (count)
		*count = b;
	return t;
}

static fmt_kind name_files(fmt_shard_plan *p, const fmt_shard_rules *r, const char *prefix, fmt_err *e)
{
	for (size_t i = 0; i < p->n_shards; i++)
		if (!(p->shards[i].path = fmt_shard_file_name(prefix, i + 1, p->n_shards, r->ext)))
			return fmt_fail(e, FMT_IO, "out of memory");
	if (r->has_index && asprintf(&p->index, "%s.%s.index.json", prefix, r->ext) < 0) {
		p->index = NULL;
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	return FMT_OK;
}

/* ---- the cut ---- */

static fmt_kind take_order(const fmt_model *m, const fmt_shard_rules *r, size_t **order, fmt_err *e)
{
	if (r->order)
		return r->order(m, order, e);
	*order = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof **order);
	if (!*order)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < m->n_tensors; i++)
		(*order)[i] = i;
	return FMT_OK;
}

static int unit_cost(const fmt_model *m, const fmt_shard_rules *r, size_t t, uint64_t *cost)
{
	if (r->cost)
		return r->cost(m, t, cost);
	*cost = m->tensors[t].nbytes;
	return 0;
}

static fmt_kind refuse_limits(const fmt_shard_rules *r, const fmt_shard_limits *l, fmt_err *e)
{
	if (l->max_bytes && !(r->limits & FMT_SHARD_BY_BYTES))
		return fmt_fail(e, FMT_USAGE, "%s sets are not cut by size", r->ext);
	if (l->max_tensors && !(r->limits & FMT_SHARD_BY_TENSORS))
		return fmt_fail(e, FMT_USAGE, "%s sets are not cut by tensor count", r->ext);
	if (l->empty_first && !(r->limits & FMT_SHARD_EMPTY_FIRST))
		return fmt_fail(e, FMT_USAGE, "%s sets cannot have a first shard without tensors", r->ext);
	return FMT_OK;
}

/* The greedy cut over order into p (shards and members allocated for every tensor). */
static fmt_kind cut(const fmt_model *m, const fmt_shard_rules *r, const size_t *order,
		    const fmt_shard_limits *l, fmt_shard_plan *p, fmt_err *e)
{
	size_t n = m->n_tensors, used = 0;
	unsigned char *placed = calloc(n ? n : 1, 1);
	if (!placed)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_shard *s = &p->shards[0];
	s->members = p->members;
	p->n_shards = 1;
	if (l->empty_first) {
		s = &p->shards[p->n_shards++];
		s->members = p->members;
	}
	uint64_t filled = 0;
	fmt_kind k = FMT_OK;
	for (size_t i = 0; i < n && k == FMT_OK; i++) {
		size_t t = order[i], partner = r->partner ? r->partner(m, t) : SIZE_MAX;
		if (placed[t])
			continue;
		if (partner != SIZE_MAX && (partner >= n || partner == t || placed[partner]))
			partner = SIZE_MAX;
		uint64_t cost, other = 0, next;
		if (unit_cost(m, r, t, &cost) || (partner != SIZE_MAX && unit_cost(m, r, partner, &other)) ||
		    fmt_add_u64(cost, other, &cost) || fmt_add_u64(filled, cost, &next)) {
			k = fmt_fail(e, FMT_UNSUPPORTED, "tensor '%.200s': shard size overflows 64 bits",
				     m->tensors[t].name);
			break;
		}
		size_t units = partner != SIZE_MAX ? 2 : 1;
		int full = (l->max_tensors && s->count + units > l->max_tensors) || (l->max_bytes && next > l->max_bytes);
		if (s->count > 0 && full) {
			s = &p->shards[p->n_shards++];
			s->members = p->members + used;
			next = cost;
		}
		filled = next;
		for (size_t u = 0; u < units; u++) {
			size_t idx = u ? partner : t;
			placed[idx] = 1;
			p->members[used++] = idx;
			s->count++;
			s->bytes += m->tensors[idx].nbytes; /* <= the sum of costs, checked above */
		}
	}
	free(placed);
	return k;
}

fmt_kind fmt_shard_plan_make(const fmt_model *m, const fmt_shard_rules *r, const char *prefix,
			     const fmt_shard_limits *l, fmt_shard_plan *p, fmt_err *e)
{
	memset(p, 0, sizeof *p);
	fmt_kind k = refuse_limits(r, l, e);
	if (k != FMT_OK)
		return k;
	size_t *order = NULL, n = m->n_tensors;
	p->shards = calloc(n + 2, sizeof *p->shards);
	p->members = malloc((n ? n : 1) * sizeof *p->members);
	if (!p->shards || !p->members)
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		k = take_order(m, r, &order, e);
	if (k == FMT_OK)
		k = cut(m, r, order, l, p, e);
	free(order);
	size_t most = r->max_shards && r->max_shards < FMT_SHARD_MAX_FILES ? r->max_shards : FMT_SHARD_MAX_FILES;
	if (k == FMT_OK && p->n_shards > most)
		k = fmt_fail(e, FMT_UNSUPPORTED, "%zu shards are more than %s sets can number (%zu)", p->n_shards,
			     r->ext, most);
	if (k == FMT_OK)
		k = name_files(p, r, prefix, e);
	if (k != FMT_OK)
		fmt_shard_plan_free(p);
	return k;
}

void fmt_shard_plan_free(fmt_shard_plan *p)
{
	for (size_t i = 0; p->shards && i < p->n_shards; i++)
		free(p->shards[i].path);
	free(p->shards);
	free(p->members);
	free(p->index);
	memset(p, 0, sizeof *p);
}

fmt_kind fmt_shard_plan_count(fmt_kind k, fmt_shard_plan *p, fmt_shard_count_fn count, const void *ctx, fmt_err *e)
{
	for (size_t i = 0; k == FMT_OK && i < p->n_shards; i++)
		k = count(ctx, p, i, e);
	if (k != FMT_OK && p->shards)
		fmt_shard_plan_free(p);
	return k;
}

void fmt_shard_plan_stat(fmt_shard_plan *p)
{
	for (size_t i = 0; i < p->n_shards; i++) {
		struct stat st;
		p->shards[i].file_bytes = stat(p->shards[i].path, &st) == 0 ? (uint64_t)st.st_size : 0;
	}
}

void fmt_shard_plan_json(json_t *obj, const fmt_shard_plan *p)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < p->n_shards; i++) {
		const fmt_shard *s = &p->shards[i];
		json_array_append_new(a, json_pack("{s:o,s:I,s:o,s:o}", "file", fmt_json_string(s->path, strlen(s->path)),
						   "tensors", (json_int_t)s->count, "bytes", fmt_json_u64(s->bytes),
						   "file_bytes", s->file_bytes ? fmt_json_u64(s->file_bytes) : json_null()));
	}
	json_object_set_new(obj, "shards", a);
	json_object_set_new(obj, "index", p->index ? fmt_json_string(p->index, strlen(p->index)) : json_null());
}

static fmt_kind check_output(const char *path, const fmt_model *in, unsigned sink_flags, fmt_err *e)
{
	fmt_kind k = in && in->path ? fmt_check_distinct(in->path, path, e) : FMT_OK;
	for (size_t i = 0; in && i < in->n_sources && k == FMT_OK; i++)
		k = fmt_check_distinct(in->sources[i].path, path, e);
	return k == FMT_OK ? fmt_sink_may_create(path, sink_flags | FMT_SINK_FILE, e) : k;
}

fmt_kind fmt_shard_plan_check_outputs(const fmt_shard_plan *p, const fmt_model *in, unsigned sink_flags,
				      fmt_err *e)
{
	fmt_kind k = FMT_OK;
	for (size_t i = 0; i < p->n_shards && k == FMT_OK; i++)
		k = check_output(p->shards[i].path, in, sink_flags, e);
	if (k == FMT_OK && p->index)
		k = check_output(p->index, in, sink_flags, e);
	return k;
}

fmt_kind fmt_shard_view(const fmt_model *m, const fmt_shard *s, fmt_model *view, fmt_tensor **tensors,
			fmt_err *e)
{
	*view = *m;
	*tensors = malloc((s->count ? s->count : 1) * sizeof **tensors);
	if (!*tensors)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < s->count; i++)
		(*tensors)[i] = m->tensors[s->members[i]];
	view->tensors = *tensors;
	view->n_tensors = view->cap_tensors = s->count;
	view->tensor_names = (fmt_nameset){ 0 };   /* the model's: not the view's to use or free */
	return FMT_OK;
}

fmt_kind fmt_shard_plan_paths(const fmt_shard_plan *p, char ***paths, size_t *n, fmt_err *e)
{
	size_t total = p->n_shards + (p->index != NULL);
	char **out = calloc(total ? total : 1, sizeof *out);
	*paths = NULL;
	*n = 0;
	if (!out)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < total; i++) {
		out[i] = strdup(i < p->n_shards ? p->shards[i].path : p->index);
		if (!out[i]) {
			for (size_t j = 0; j < i; j++)
				free(out[j]);
			free(out);
			return fmt_fail(e, FMT_IO, "out of memory");
		}
	}
	*paths = out;
	*n = total;
	return FMT_OK;
}

/* ---- the writer ---- */

fmt_kind fmt_shard_writer_init(fmt_shard_writer *w, size_t n_files, unsigned sink_flags, fmt_err *e)
{
	memset(w, 0, sizeof *w);
	w->sinks = calloc(n_files ? n_files : 1, sizeof *w->sinks);
	if (!w->sinks)
		return fmt_fail(e, FMT_IO, "out of memory");
	w->cap = n_files;
	w->sink_flags = sink_flags | FMT_SINK_FILE;
	return FMT_OK;
}

fmt_kind fmt_shard_writer_add(fmt_shard_writer *w, const char *path, fmt_sink **k, fmt_err *e)
{
	fmt_kind r = FMT_OK;
	if (w->n == w->cap)
		return fmt_fail(e, FMT_INTERNAL, "more files than the set was opened for");
	if (w->n > 0 && (r = fmt_sink_finish(&w->sinks[w->n - 1], e)) != FMT_OK)
		return r;
	r = fmt_sink_open(&w->sinks[w->n], path, w->sink_flags, e);
	if (r != FMT_OK)
		return r;
	*k = &w->sinks[w->n++];
	return FMT_OK;
}

fmt_kind fmt_shard_writer_commit(fmt_shard_writer *w, fmt_err *e)
{
	fmt_kind r = fmt_sinks_commit(w->sinks, w->n, e);
	free(w->sinks);
	memset(w, 0, sizeof *w);
	return r;
}

void fmt_shard_writer_abort(fmt_shard_writer *w)
{
	for (size_t i = 0; i < w->n; i++)
		fmt_sink_abort(&w->sinks[i]);
	free(w->sinks);
	memset(w, 0, sizeof *w);
}

fmt_kind fmt_shard_write_plan(const fmt_shard_plan *p, const fmt_write_opts *wo, fmt_shard_file_fn write_file,
			      void *ctx, char ***paths, size_t *n_paths, fmt_err *e)
{
	fmt_shard_writer w;
	fmt_sink *k = NULL;
	unsigned sink_flags = wo ? wo->sink_flags : 0;
	size_t n_files = p->n_shards + (p->index != NULL);
	fmt_kind r = fmt_shard_plan_check_outputs(p, NULL, sink_flags, e);
	if (r == FMT_OK)
		r = fmt_shard_plan_paths(p, paths, n_paths, e);
	if (r != FMT_OK)
		return r;
	r = fmt_shard_writer_init(&w, n_files, sink_flags, e);
	for (size_t i = 0; i < n_files && r == FMT_OK; i++) {
		const char *path = i < p->n_shards ? p->shards[i].path : p->index;
		if ((r = fmt_shard_writer_add(&w, path, &k, e)) == FMT_OK)
			r = write_file(ctx, i, k, e);
	}
	for (size_t i = 0; r == FMT_OK && wo && wo->file_bytes && i < w.n && i < wo->n_file_bytes; i++)
		wo->file_bytes[i] = w.sinks[i].written;
	if (r == FMT_OK)
		r = fmt_write_gate(wo, e);
	if (r == FMT_OK)
		r = fmt_shard_writer_commit(&w, e);
	else if (w.sinks)
		fmt_shard_writer_abort(&w);
	if (r != FMT_OK) {
		for (size_t i = 0; i < *n_paths; i++)
			free((*paths)[i]);
		free(*paths);
		*paths = NULL;
		*n_paths = 0;
	}
	return r;
}

fmt_kind fmt_shard_write_model(const fmt_model *m, const char *prefix, const fmt_shard_limits *l,
			       const fmt_write_opts *wo, fmt_shard_plan_fn plan_shards, fmt_shard_file_fn write_file,
			       char ***paths, size_t *n_paths, fmt_err *e)
{
	fmt_shard_plan p;
	*paths = NULL;
	*n_paths = 0;
	fmt_kind r = plan_shards(m, prefix, l, &p, e);
	if (r != FMT_OK)
		return r;
	fmt_shard_set set = { m, &p };
	r = fmt_shard_write_plan(&p, wo, write_file, &set, paths, n_paths, e);
	fmt_shard_plan_free(&p);
	return r;
}
