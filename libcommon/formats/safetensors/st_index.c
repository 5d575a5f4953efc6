/* The Hugging Face sharded safetensors index (specs/safetensors.md §8):
 * model.safetensors.index.json = {"metadata": {"total_size": N, ...}, "weight_map": {name: file}}.
 *
 * Policy: unknown keys (top level and under "metadata") are ignored; metadata.total_size is
 * optional and may be an integer or an integral real (some writers emit 1234.0); file names
 * must be plain names (no '/', '\', NUL, not "", "." or "..") or the index is InvalidFormat.
 * Set-level problems (missing shard, tensor missing from its shard or from weight_map, in two
 * shards, total_size mismatch) are SchemaMismatch. Shards are opened in file-name order; each
 * becomes one source (sources[0] stays the index); the model's metadata is the first shard's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <jansson.h>
#include "fmt/checked.h"
#include "fmt/json_text.h"
#include "fmt/out.h"
#include "fmt/safetensors.h"
#include "fmt/tree_budget.h"

#define NM "'%.200s'"

typedef struct ix_state {
	int has_total_size;
	uint64_t total_size;
} ix_state;

static int ix_probe(const uint8_t *head, size_t n, uint64_t file_size)
{
	(void)file_size;
	size_t i = fmt_json_skip_ws((const char *)head, n, 0);
	if (i >= n || head[i] != '{')
		return 0;
	return memmem(head, n, "weight_map", 10) ? 80 : 0;
}

void fmt_st_index_free(fmt_st_index *ix)
{
	for (size_t i = 0; i < ix->n_entries; i++) {
		free(ix->entries[i].tensor);
		free(ix->entries[i].file);
	}
	free(ix->entries);
	memset(ix, 0, sizeof *ix);
}

static fmt_kind parse_total_size(json_t *md, fmt_st_index *ix, fmt_err *e)
{
	if (!md)
		return FMT_OK;
	if (!json_is_object(md))
		return fmt_fail(e, FMT_INVALID_FORMAT, "index \"metadata\" is not an object");
	json_t *ts = json_object_get(md, "total_size");
	if (!ts)
		return FMT_OK;
	if (json_is_integer(ts) && json_integer_value(ts) >= 0) {
		ix->total_size = (uint64_t)json_integer_value(ts);
	} else if (json_is_real(ts) && json_real_value(ts) >= 0 && json_real_value(ts) < 0x1p63 &&
		   json_real_value(ts) == (double)(uint64_t)json_real_value(ts)) {
		ix->total_size = (uint64_t)json_real_value(ts);
	} else {
		return fmt_fail(e, FMT_INVALID_FORMAT, "index metadata.total_size is not a non-negative integer");
	}
	ix->has_total_size = 1;
	return FMT_OK;
}

fmt_kind fmt_st_index_each_weight(json_t *wm, fmt_st_weight_fn add, void *ctx, fmt_err *e)
{
	const char *name;
	json_t *v;
	json_object_foreach(wm, name, v) {
		if (!json_is_string(v))
			return fmt_fail(e, FMT_INVALID_FORMAT, "weight_map value for " NM " is not a string", name);
		const char *file = json_string_value(v);
		const char *why = fmt_unsafe_file_name(file, json_string_length(v));
		if (why)
			return fmt_fail(e, FMT_INVALID_FORMAT,
					"weight_map file for " NM " " NM " %s (expected a plain file name)", name, file, why);
		fmt_kind k = add(ctx, name, file, e);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

static fmt_kind add_entry(void *ctx, const char *tensor, const char *file, fmt_err *e)
{
	fmt_st_index *ix = ctx;
	fmt_st_index_entry *en = &ix->entries[ix->n_entries];
	en->tensor = strdup(tensor);
	en->file = strdup(file);
	ix->n_entries++;
	return en->tensor && en->file ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
}

static fmt_kind parse_weight_map(json_t *wm, fmt_st_index *ix, fmt_err *e)
{
	if (!wm)
		return fmt_fail(e, FMT_INVALID_FORMAT, "index has no \"weight_map\"");
	if (!json_is_object(wm))
		return fmt_fail(e, FMT_INVALID_FORMAT, "index \"weight_map\" is not an object");
	size_t n = json_object_size(wm);
	ix->entries = calloc(n ? n : 1, sizeof *ix->entries);
	if (!ix->entries)
		return fmt_fail(e, FMT_IO, "out of memory for %zu index entries", n);
	return fmt_st_index_each_weight(wm, add_entry, ix, e);
}

fmt_kind fmt_st_index_parse(const char *json, size_t len, fmt_st_index *ix, fmt_err *e)
{
	json_error_t je;
	memset(ix, 0, sizeof *ix);
	fmt_kind k = fmt_json_budget("the index", json, len, FMT_TREE_COST_JSON, e);
	if (k != FMT_OK)
		return k;
	json_t *root = fmt_json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root && fmt_json_nomem(&je))
		return fmt_fail_nomem(e, "the index");
	if (!root)
		return fmt_fail(e, FMT_INVALID_FORMAT, "index is not valid JSON at byte %d: %s", je.position,
				je.text);
	if (!json_is_object(root))
		k = fmt_fail(e, FMT_INVALID_FORMAT, "index is not a JSON object");
	if (k == FMT_OK)
		k = parse_total_size(json_object_get(root, "metadata"), ix, e);
	if (k == FMT_OK)
		k = parse_weight_map(json_object_get(root, "weight_map"), ix, e);
	json_decref(root);
	if (k != FMT_OK)
		fmt_st_index_free(ix);
	return k;
}

/* ---- open ---- */

static int cmp_str_ptr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_entry_tensor(const void *a, const void *b)
{
	return strcmp(((const fmt_st_index_entry *)a)->tensor, ((const fmt_st_index_entry *)b)->tensor);
}

static int cmp_tensor_ptr_name(const void *a, const void *b)
{
	return strcmp((*(const fmt_tensor *const *)a)->name, (*(const fmt_tensor *const *)b)->name);
}

/* The distinct shard names of the index, sorted. */
static fmt_kind distinct_files(const fmt_st_index *ix, const char ***out, size_t *n_out, fmt_err *e)
{
	const char **f = malloc((ix->n_entries ? ix->n_entries : 1) * sizeof *f);
	if (!f)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < ix->n_entries; i++)
		f[i] = ix->entries[i].file;
	qsort(f, ix->n_entries, sizeof *f, cmp_str_ptr);
	size_t n = 0;
	for (size_t i = 0; i < ix->n_entries; i++)
		if (n == 0 || strcmp(f[n - 1], f[i]) != 0)
			f[n++] = f[i];
	*out = f;
	*n_out = n;
	return FMT_OK;
}

static fmt_kind open_shard(fmt_model *m, const char *dir, const char *file, int with_meta, fmt_err *e)
{
	char *path;
	int idx = -1;
	fmt_kind k = fmt_model_open_shard(m, dir, file, "weight_map", &idx, &path, e);
	if (k == FMT_OK)
		k = fmt_st_open_source(m, idx, with_meta, e);
	if (k != FMT_OK && path)
		fmt_err_file(e, path);
	free(path);
	return k;
}

/* The shard file of a tensor: sources[1 + i] is files[i]. */
static const char *shard_of(const fmt_tensor *t, const char *const *files)
{
	return files[t->source - 1];
}

static fmt_kind check_set(const fmt_model *m, fmt_st_index *ix, const char *const *files, fmt_err *e)
{
	size_t n = m->n_tensors;
	const fmt_tensor **byname = malloc((n ? n : 1) * sizeof *byname);
	fmt_kind k = FMT_OK;
	uint64_t total = 0;
	if (!byname)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < n; i++)
		byname[i] = &m->tensors[i];
	qsort(byname, n, sizeof *byname, cmp_tensor_ptr_name);
	for (size_t i = 1; i < n && k == FMT_OK; i++)
		if (strcmp(byname[i - 1]->name, byname[i]->name) == 0)
			k = fmt_fail(e, FMT_SCHEMA, "tensor " NM " appears in shards " NM " and " NM,
				     byname[i]->name, shard_of(byname[i - 1], files), shard_of(byname[i], files));
	for (size_t i = 0; i < ix->n_entries && k == FMT_OK; i++) {
		const fmt_st_index_entry *en = &ix->entries[i];
		fmt_tensor key = { .name = en->tensor };
		const fmt_tensor *kp = &key;
		const fmt_tensor **hit = bsearch(&kp, byname, n, sizeof *byname, cmp_tensor_ptr_name);
		if (!hit)
			k = fmt_fail(e, FMT_SCHEMA, "tensor " NM " is listed in weight_map for " NM
				     " but is not in that shard", en->tensor, en->file);
		else if (strcmp(shard_of(*hit, files), en->file) != 0)
			k = fmt_fail(e, FMT_SCHEMA, "tensor " NM " is in shard " NM " but weight_map names " NM,
				     en->tensor, shard_of(*hit, files), en->file);
	}
	free(byname);
	qsort(ix->entries, ix->n_entries, sizeof *ix->entries, cmp_entry_tensor);
	for (size_t i = 0; i < n && k == FMT_OK; i++) {
		const fmt_tensor *t = &m->tensors[i];
		fmt_st_index_entry key = { .tensor = t->name };
		if (!bsearch(&key, ix->entries, ix->n_entries, sizeof *ix->entries, cmp_entry_tensor))
			k = fmt_fail(e, FMT_SCHEMA, "tensor " NM " in shard " NM " is not listed in weight_map",
				     t->name, shard_of(t, files));
		else if (fmt_add_u64(total, t->nbytes, &total))
			k = fmt_fail(e, FMT_SCHEMA, "total tensor size overflows 64 bits");
	}
	if (k == FMT_OK && ix->has_total_size && ix->total_size != total)
		k = fmt_fail(e, FMT_SCHEMA, "metadata.total_size %llu differs from the sum of the tensor sizes, %llu bytes",
			     (unsigned long long)ix->total_size, (unsigned long long)total);
	return k;
}

static fmt_kind ix_open(fmt_model *m, fmt_err *e)
{
	char *text = NULL, *dir = NULL;
	const char **files = NULL;
	size_t n_files = 0;
	fmt_st_index ix;
	memset(&ix, 0, sizeof ix);
	m->version = 0;
	fmt_kind k = fmt_source_read_text(&m->sources[0], FMT_ST_INDEX_MAX, &text, e);
	if (k != FMT_OK)
		return k;
	k = fmt_st_index_parse(text, (size_t)m->sources[0].size, &ix, e);
	free(text);
	if (k == FMT_OK)
		k = distinct_files(&ix, &files, &n_files, e);
	if (k == FMT_OK && !(dir = fmt_dir_prefix(m->sources[0].path)))
		k = fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < n_files && k == FMT_OK; i++)
		k = open_shard(m, dir, files[i], i == 0, e);
	if (k == FMT_OK)
		k = check_set(m, &ix, files, e);
	if (k == FMT_OK) {
		ix_state *st = calloc(1, sizeof *st);
		if (!st) {
			k = fmt_fail(e, FMT_IO, "out of memory");
		} else {
			st->has_total_size = ix.has_total_size;
			st->total_size = ix.total_size;
			m->format_state = st;
		}
	}
	free(dir);
	free(files);
	fmt_st_index_free(&ix);
	return k;
}

static void ix_close(fmt_model *m)
{
	free(m->format_state);
	m->format_state = NULL;
}

int fmt_st_index_total_size(const fmt_model *m, uint64_t *total_size)
{
	if (m->driver != &fmt_driver_st_index || !m->format_state)
		return 0;
	const ix_state *st = m->format_state;
	if (st->has_total_size && total_size)
		*total_size = st->total_size;
	return st->has_total_size;
}

/* ---- writer: Python's json.dumps(index, indent=2, sort_keys=True) + "\n" ---- */

typedef struct ix_pair {
	const char *tensor, *file;
} ix_pair;

static int cmp_pair(const void *a, const void *b)
{
	return strcmp(((const ix_pair *)a)->tensor, ((const ix_pair *)b)->tensor);
}

/* Python's ensure_ascii escaping: printable ASCII raw, the short escapes, everything else
 * \uxxxx (lower-case hex; UTF-16 surrogate pairs above U+FFFF). s is valid UTF-8. */
static fmt_kind put_py_string(fmt_sink *k, const char *s, fmt_err *e)
{
	const unsigned char *p = (const unsigned char *)s;
	char out[16];
	fmt_kind r = fmt_sink_write(k, "\"", 1, e);
	while (*p && r == FMT_OK) {
		uint32_t cp = *p;
		int extra = cp < 0x80 ? 0 : cp >= 0xF0 ? 3 : cp >= 0xE0 ? 2 : 1;
		if (extra)
			cp &= 0x3Fu >> extra;
		for (int i = 1; i <= extra; i++)
			cp = (cp << 6) | (p[i] & 0x3Fu);
		p += 1 + extra;
		const char *esc = cp == '"' ? "\\\"" : cp == '\\' ? "\\\\" : cp == '\n' ? "\\n"
				: cp == '\r' ? "\\r" : cp == '\t' ? "\\t" : cp == '\b' ? "\\b"
				: cp == '\f' ? "\\f" : NULL;
		if (esc) {
			r = fmt_sink_write(k, esc, 2, e);
		} else if (cp >= 0x20 && cp < 0x7F) {
			out[0] = (char)cp;
			r = fmt_sink_write(k, out, 1, e);
		} else if (cp < 0x10000) {
			snprintf(out, sizeof out, "\\u%04x", (unsigned)cp);
			r = fmt_sink_write(k, out, 6, e);
		} else {
			uint32_t v = cp - 0x10000;
			snprintf(out, sizeof out, "\\u%04x\\u%04x", (unsigned)(0xD800 + (v >> 10)),
				 (unsigned)(0xDC00 + (v & 0x3FF)));
			r = fmt_sink_write(k, out, 12, e);
		}
	}
	return r == FMT_OK ? fmt_sink_write(k, "\"", 1, e) : r;
}

static fmt_kind check_index_input(ix_pair *pairs, size_t n, fmt_err *e)
{
	for (size_t i = 0; i < n; i++) {
		const char *why = fmt_unsafe_file_name(pairs[i].file, strlen(pairs[i].file));
		if (why)
			return fmt_fail(e, FMT_USAGE, "shard file name " NM " %s", pairs[i].file, why);
		if (!fmt_utf8_valid(pairs[i].tensor, strlen(pairs[i].tensor)) ||
		    !fmt_utf8_valid(pairs[i].file, strlen(pairs[i].file)))
			return fmt_fail(e, FMT_UNSUPPORTED, "tensor " NM ": name or file name is not valid UTF-8",
					pairs[i].tensor);
	}
	qsort(pairs, n, sizeof *pairs, cmp_pair);
	for (size_t i = 1; i < n; i++)
		if (strcmp(pairs[i - 1].tensor, pairs[i].tensor) == 0)
			return fmt_fail(e, FMT_INVALID_FORMAT, "duplicate tensor name " NM " in the index",
					pairs[i].tensor);
	return FMT_OK;
}

static fmt_kind write_index_body(fmt_sink *k, const ix_pair *pairs, size_t n, uint64_t total_size,
				 fmt_err *e)
{
	char head[128];
	int len = snprintf(head, sizeof head, "{\n  \"metadata\": {\n    \"total_size\": %llu\n  },\n  \"weight_map\": {",
			   (unsigned long long)total_size);
	fmt_kind r = fmt_sink_write(k, head, (size_t)len, e);
	for (size_t i = 0; i < n && r == FMT_OK; i++) {
		r = fmt_sink_write(k, i ? ",\n    " : "\n    ", i ? 6 : 5, e);
		if (r == FMT_OK)
			r = put_py_string(k, pairs[i].tensor, e);
		if (r == FMT_OK)
			r = fmt_sink_write(k, ": ", 2, e);
		if (r == FMT_OK)
			r = put_py_string(k, pairs[i].file, e);
	}
	if (r == FMT_OK)
		r = n ? fmt_sink_write(k, "\n  }\n}\n", 7, e) : fmt_sink_write(k, "}\n}\n", 4, e);
	return r;
}

fmt_kind fmt_st_index_write_to(fmt_sink *k, const char *const *tensor_names, const char *const *files,
			       size_t n, uint64_t total_size, fmt_err *e)
{
	ix_pair *pairs = malloc((n ? n : 1) * sizeof *pairs);
	if (!pairs)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < n; i++)
		pairs[i] = (ix_pair){ tensor_names[i], files[i] };
	fmt_kind r = check_index_input(pairs, n, e);
	if (r == FMT_OK)
		r = write_index_body(k, pairs, n, total_size, e);
	free(pairs);
	return r;
}

fmt_kind fmt_st_index_write(const char *path, const char *const *tensor_names,
			    const char *const *files, size_t n, uint64_t total_size,
			    unsigned sink_flags, fmt_err *e)
{
	fmt_sink k;
	fmt_kind r = fmt_sink_open(&k, path, sink_flags, e);
	if (r != FMT_OK)
		return r;
	r = fmt_st_index_write_to(&k, tensor_names, files, n, total_size, e);
	if (r == FMT_OK)
		return fmt_sink_commit(&k, e);
	fmt_sink_abort(&k);
	return r;
}

const fmt_driver fmt_driver_st_index = {
	.name = "safetensors-index",
	.extension = ".safetensors.index.json",
	.title = "safetensors",
	.probe = ix_probe,
	.open = ix_open,
	.text_max = FMT_ST_INDEX_MAX,
	.verify = NULL,
	.file_driver = &fmt_driver_safetensors,
	.write = NULL,
	.close = ix_close,
};
