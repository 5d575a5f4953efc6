#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/out.h"
#include "fmt/registry.h"
#include "fmt/stats.h"
#include "inspect.h"

/* ---- facts shared by the text and JSON reports ---- */

typedef struct dtype_total {
	uint64_t tensors, bytes;
} dtype_total;

static void totals_by_dtype(const fmt_model *m, dtype_total totals[FMT_DT_COUNT])
{
	memset(totals, 0, sizeof(dtype_total) * FMT_DT_COUNT);
	for (size_t i = 0; i < m->n_tensors; i++) {
		totals[m->tensors[i].dtype].tensors++;
		totals[m->tensors[i].dtype].bytes += m->tensors[i].nbytes;
	}
}

static uint64_t data_bytes(const fmt_model *m)
{
	uint64_t n = 0;
	for (size_t i = 0; i < m->n_tensors; i++)
		n += m->tensors[i].nbytes;
	return n;
}

static uint64_t file_bytes(const fmt_model *m)
{
	uint64_t n = 0;
	for (size_t i = 0; i < m->n_sources; i++)
		n += m->sources[i].size;
	return n;
}

/* A shard set keeps its tensors in more than one source. */
static int is_multi_file(const fmt_model *m)
{
	int first = -1;
	for (size_t i = 0; i < m->n_tensors; i++) {
		int src = m->tensors[i].source;
		if (src < 0) /* in memory (e.g. scales a driver computed): in no file */
			continue;
		if (first >= 0 && src != first)
			return 1;
		first = src;
	}
	return 0;
}

static const char *tensor_file(const fmt_model *m, const fmt_tensor *t)
{
	if (t->source < 0 || (size_t)t->source >= m->n_sources)
		return "";
	return fmt_base_name(m->sources[t->source].path);
}

/* ---- text ---- */

static void text_summary(FILE *out, const fmt_model *m)
{
	char size[32], data[32];
	dtype_total totals[FMT_DT_COUNT];
	if (fmt_model_sequential(m))   /* a stream's length is known at its end, not read */
		snprintf(size, sizeof size, "unknown (a stream)");
	else
		fmt_format_bytes(size, sizeof size, file_bytes(m));
	fmt_format_bytes(data, sizeof data, data_bytes(m));
	fputs("file:       ", out);
	fmt_out_escaped(out, m->path, strlen(m->path));
	fprintf(out, "\nformat:     %s", m->driver->name);
	if (m->version)
		fprintf(out, " (version %" PRIu32 ")", m->version);
	fprintf(out, "\nfiles:      %zu\n", m->n_sources);
	if (fmt_model_sequential(m))
		fprintf(out, "size:       %s (tensor data %s)\n", size, data);
	else
		fprintf(out, "size:       %s (%" PRIu64 " bytes; tensor data %s)\n", size, file_bytes(m), data);
	fprintf(out, "tensors:    %zu\n", m->n_tensors);
	fprintf(out, "parameters: %" PRIu64 "\n", fmt_model_param_count(m));
	totals_by_dtype(m, totals);
	for (int d = 0; d < FMT_DT_COUNT; d++) {
		if (!totals[d].tensors)
			continue;
		fmt_format_bytes(size, sizeof size, totals[d].bytes);
		fprintf(out, "  %-10s %6" PRIu64 " tensor%-2s %12" PRIu64 " byte%-2s (%s)\n",
			fmt_dtype_name((fmt_dtype)d), totals[d].tensors, totals[d].tensors == 1 ? "" : "s",
			totals[d].bytes, totals[d].bytes == 1 ? "" : "s", size);
	}
}

/* The driver's own facts (digest, signature, shards), one "key: value" line each. */
static void text_format_info(FILE *out, const fmt_model *m)
{
	if (!m->driver->describe)
		return;
	json_t *info = m->driver->describe(m);
	const char *key;
	json_t *val;
	json_object_foreach(info, key, val) {
		char *text = json_is_string(val) ? NULL : json_dumps(val, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
		const char *shown = text ? text : json_string_value(val);
		fprintf(out, "%s:%*s", key, key && strlen(key) < 11 ? (int)(11 - strlen(key)) : 1, "");
		fmt_out_escaped(out, shown ? shown : "", shown ? strlen(shown) : 0);
		fputc('\n', out);
		free(text);
	}
	json_decref(info);
}

static void text_metadata(FILE *out, const fmt_model *m, size_t max_items)
{
	fprintf(out, "metadata:   %zu key%s\n", m->n_meta, m->n_meta == 1 ? "" : "s");
	for (size_t i = 0; i < m->n_meta; i++) {
		fputs("  ", out);
		fmt_out_escaped(out, m->meta[i].key, strlen(m->meta[i].key));
		fprintf(out, " (%s", fmt_vtype_name(m->meta[i].val.type));
		if (m->meta[i].val.type == FMT_V_ARRAY)
			fprintf(out, " of %s", fmt_vtype_name(m->meta[i].val.v.arr.elem));
		fputs(") = ", out);
		fmt_out_value(out, &m->meta[i].val, max_items);
		fputc('\n', out);
	}
}

static void format_shape(char *buf, size_t n, const fmt_tensor *t)
{
	size_t used = (size_t)snprintf(buf, n, "[");
	for (int d = 0; d < t->ndim && used < n; d++)
		used += (size_t)snprintf(buf + used, n - used, d ? ", %" PRIu64 : "%" PRIu64, t->shape[d]);
	if (used < n)
		snprintf(buf + used, n - used, "]");
}

typedef struct table_widths {
	int name, shape, offset;
	int stored;                    /* some tensor is compressed in the file: STORED and RATIO */
} table_widths;

/* Raw bytes over stored bytes, for a tensor compressed in its file. */
static double ratio_of(const fmt_tensor *t)
{
	return t->stored_bytes ? (double)t->nbytes / (double)t->stored_bytes : 1.0;
}

/* Column widths; names longer than 64 bytes overflow their column rather than widen it. */
static table_widths measure_table(const fmt_model *m)
{
	table_widths w = { 4, 5, 6, 0 };
	char buf[FMT_MAX_DIMS * 24];
	for (size_t i = 0; i < m->n_tensors; i++) {
		const fmt_tensor *t = &m->tensors[i];
		int len = (int)strlen(t->name);
		if (len > w.name && len <= 64)
			w.name = len;
		format_shape(buf, sizeof buf, t);
		if ((int)strlen(buf) > w.shape)
			w.shape = (int)strlen(buf);
		len = snprintf(buf, sizeof buf, "%" PRIu64, t->file_offset);
		if (len > w.offset)
			w.offset = len;
		w.stored |= t->stored_bytes != 0;
	}
	return w;
}

static void text_tensor_line(FILE *out, const fmt_model *m, const fmt_tensor *t, table_widths w, int with_file)
{
	char shape[FMT_MAX_DIMS * 24];
	int len = (int)strlen(t->name);
	format_shape(shape, sizeof shape, t);
	fputs("  ", out);
	fmt_out_escaped(out, t->name, strlen(t->name));
	fprintf(out, "%*s  %-8s %-*s  %*" PRIu64 "  %12" PRIu64, w.name > len ? w.name - len : 0, "",
		fmt_dtype_name(t->dtype), w.shape, shape, w.offset, t->file_offset, t->nbytes);
	if (w.stored)
		fprintf(out, "  %12" PRIu64 "  %6.2fx", t->stored_bytes ? t->stored_bytes : t->nbytes, ratio_of(t));
	if (with_file) {
		fputs("  ", out);
		const char *f = tensor_file(m, t);
		fmt_out_escaped(out, f, strlen(f));
	}
	fputc('\n', out);
}

static void text_tensors(FILE *out, const fmt_model *m, const char *only)
{
	table_widths w = measure_table(m);
	int with_file = is_multi_file(m);
	fprintf(out, "tensors:\n  %-*s  %-8s %-*s  %*s  %12s%s%s\n", w.name, "NAME", "DTYPE", w.shape, "SHAPE",
		w.offset, "OFFSET", "BYTES", w.stored ? "        STORED    RATIO" : "", with_file ? "  FILE" : "");
	for (size_t i = 0; i < m->n_tensors; i++)
		if (!only || strcmp(only, m->tensors[i].name) == 0)
			text_tensor_line(out, m, &m->tensors[i], w, with_file);
}

/* An integer tensor's exact value (fmt_stats.int_kind). */
static void put_int(FILE *out, const fmt_stats *s, uint64_t v)
{
	if (s->int_kind == FMT_STATS_SIGNED)
		fprintf(out, "%" PRId64, (int64_t)v);
	else
		fprintf(out, "%" PRIu64, v);
}

static json_t *json_int(const fmt_stats *s, uint64_t v)
{
	return s->int_kind == FMT_STATS_SIGNED ? json_integer((json_int_t)(int64_t)v) : fmt_json_u64(v);
}

static void text_stats(FILE *out, const fmt_tensor *t, const fmt_stats *s)
{
	fputs("tensor: ", out);
	fmt_out_escaped(out, t->name, strlen(t->name));
	char shape[FMT_MAX_DIMS * 24];
	format_shape(shape, sizeof shape, t);
	fprintf(out, "\ndtype:  %s\nshape:  %s", fmt_dtype_name(t->dtype), shape);
	fprintf(out, "\ncount:  %" PRIu64 " finite, %" PRIu64 " NaN, %" PRIu64 " Inf\n", s->count, s->nan, s->inf);
	if (s->int_kind) {
		fputs("min:    ", out);
		put_int(out, s, s->imin);
		fputs("\nmax:    ", out);
		put_int(out, s, s->imax);
		fprintf(out, "\nmean:   %.9g\nstd:    %.9g\nfirst: ", s->mean, s->std);
	} else {
		int digits = s->f64 ? 17 : 9;   /* enough to read back a float64, a float32 */
		fprintf(out, "min:    %.*g\nmax:    %.*g\nmean:   %.*g\nstd:    %.*g\nfirst: ", digits, s->min, digits,
			s->max, digits, s->mean, digits, s->std);
	}
	for (size_t i = 0; i < s->n_first; i++) {
		fputc(' ', out);
		if (s->int_kind)
			put_int(out, s, s->ifirst[i]);
		else
			fprintf(out, "%.*g", s->f64 ? 17 : 9, s->first[i]);
	}
	fputc('\n', out);
}

/* ---- JSON ---- */

static json_t *json_shape(const fmt_tensor *t)
{
	json_t *a = json_array();
	for (int d = 0; a && d < t->ndim; d++)
		json_array_append_new(a, json_integer((json_int_t)t->shape[d]));
	return a;
}

static json_t *json_metadata_types(const fmt_model *m)
{
	json_t *types = json_object();
	for (size_t i = 0; types && i < m->n_meta; i++) {
		const fmt_value *v = &m->meta[i].val;
		char type[32];
		if (v->type == FMT_V_ARRAY)
			snprintf(type, sizeof type, "array[%s]", fmt_vtype_name(v->v.arr.elem));
		else
			snprintf(type, sizeof type, "%s", fmt_vtype_name(v->type));
		fmt_json_set(types, m->meta[i].key, json_string(type));
	}
	return types;
}

/* "metadata":{...} written value by value (fmt_json_write_value): with --full, a huge array is
 * streamed, not built. */
static int write_json_metadata(FILE *out, const fmt_model *m, size_t max_items)
{
	int r = fputs("\"metadata\":{", out) == EOF ? -1 : 0;
	for (size_t i = 0; r == 0 && i < m->n_meta; i++) {
		json_t *key = fmt_json_string(m->meta[i].key, strlen(m->meta[i].key));
		if (!key || (i && fputc(',', out) == EOF) || fmt_json_write(out, key) || fputc(':', out) == EOF ||
		    fmt_json_write_value(out, &m->meta[i].val, max_items))
			r = -1;
		json_decref(key);
	}
	return r == 0 && fputc('}', out) != EOF ? 0 : -1;
}

/* --full: "metadata_typed":{"KEY":{"type":T,"value":V},...}, what fmt-convert --set-from reads. */
static int write_json_typed_metadata(FILE *out, const fmt_model *m)
{
	int r = fputs(",\"metadata_typed\":{", out) == EOF ? -1 : 0;
	for (size_t i = 0; r == 0 && i < m->n_meta; i++) {
		json_t *key = fmt_json_string(m->meta[i].key, strlen(m->meta[i].key));
		if (!key || (i && fputc(',', out) == EOF) || fmt_json_write(out, key) || fputc(':', out) == EOF ||
		    fmt_json_write_typed(out, &m->meta[i].val))
			r = -1;
		json_decref(key);
	}
	return r == 0 && fputc('}', out) != EOF ? 0 : -1;
}

static json_t *json_tensor(const fmt_model *m, const fmt_tensor *t, int with_file)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "name", fmt_json_string(t->name, strlen(t->name)));
	json_object_set_new(o, "dtype", json_string(fmt_dtype_name(t->dtype)));
	json_object_set_new(o, "shape", json_shape(t));
	json_object_set_new(o, "offset", fmt_json_u64(t->file_offset));
	json_object_set_new(o, "bytes", fmt_json_u64(t->nbytes));
	if (t->stored_bytes) {
		json_object_set_new(o, "stored_bytes", fmt_json_u64(t->stored_bytes));
		json_object_set_new(o, "ratio", json_real(ratio_of(t)));
	}
	if (with_file) {
		const char *f = tensor_file(m, t);
		json_object_set_new(o, "file", fmt_json_string(f, strlen(f)));
	}
	return o;
}

/* The tensor list is written one tensor at a time: a JSON tree of a million tensors would take
 * gigabytes (a hostile header is cheap to make). */
static int write_json_tensors(FILE *out, const fmt_model *m, const char *only)
{
	int with_file = is_multi_file(m), first = 1, r = fputs("\"tensors\":[", out) == EOF ? -1 : 0;
	for (size_t i = 0; r == 0 && i < m->n_tensors; i++) {
		if (only && strcmp(only, m->tensors[i].name) != 0)
			continue;
		json_t *o = json_tensor(m, &m->tensors[i], with_file);
		if (!o || (!first && fputc(',', out) == EOF) || fmt_json_write(out, o))
			r = -1;
		json_decref(o);
		first = 0;
	}
	return r == 0 && fputc(']', out) != EOF ? 0 : -1;
}

/* One JSON line: head's members, then the metadata and its types, and the tensor list, when
 * asked, written as they are made, then tail's members. */
static int json_line_to(FILE *out, json_t *head, const fmt_model *m, const inspect_opts *o, json_t *tail)
{
	char *h = fmt_json_text(head);
	char *t = json_object_size(tail) ? fmt_json_text(tail) : NULL;
	int r = h && (t || !json_object_size(tail)) ? 0 : -1;
	size_t hn = h ? strlen(h) : 0;
	if (r == 0 && fwrite(h, 1, hn - 1, out) != hn - 1) /* without its closing brace */
		r = -1;
	if (r == 0 && (o->sections & SECTION_METADATA)) {
		json_t *types = json_metadata_types(m);
		if (!types || fputc(',', out) == EOF || write_json_metadata(out, m, o->full ? 0 : INSPECT_ARRAY_ITEMS) ||
		    fputs(",\"metadata_types\":", out) == EOF || fmt_json_write(out, types) ||
		    (o->full && write_json_typed_metadata(out, m)))
			r = -1;
		json_decref(types);
	}
	if (r == 0 && (o->sections & SECTION_TENSORS) && (fputc(',', out) == EOF || write_json_tensors(out, m, o->tensor)))
		r = -1;
	if (r == 0 && t && (fputc(',', out) == EOF || fputs(t + 1, out) == EOF))
		r = -1;
	else if (r == 0 && !t && fputc('}', out) == EOF)
		r = -1;
	if (r == 0 && fputc('\n', out) == EOF)
		r = -1;
	free(h);
	free(t);
	return r;
}

/* That line made whole in memory first, then written at once (0 or a failure of fmt_json_line):
 * out of memory on the way left half a record on stdout. The tensors are still not a JSON tree:
 * their text is some 100 bytes a tensor. */
static int write_json_line(FILE *out, json_t *head, const fmt_model *m, const inspect_opts *o, json_t *tail)
{
	char *text = NULL;
	size_t n = 0;
	FILE *mem = open_memstream(&text, &n);
	int r = mem ? json_line_to(mem, head, m, o, tail) : -1;
	if (mem && fclose(mem) != 0)
		r = -1;
	if (r != 0 || !text) { /* a write to memory fails for want of memory only */
		free(text);
		return FMT_JSON_NO_MEMORY;
	}
	r = fwrite(text, 1, n, out) == n ? 0 : FMT_JSON_WRITE_FAILED;
	free(text);
	return r;
}

static void json_summary(json_t *o, const fmt_model *m)
{
	dtype_total totals[FMT_DT_COUNT];
	json_t *by = json_object();
	totals_by_dtype(m, totals);
	for (int d = 0; by && d < FMT_DT_COUNT; d++)
		if (totals[d].tensors)
			json_object_set_new(by, fmt_dtype_name((fmt_dtype)d),
					    json_pack("{s:o,s:o}", "tensors", fmt_json_u64(totals[d].tensors),
						      "bytes", fmt_json_u64(totals[d].bytes)));
	json_object_set_new(o, "version", m->version ? json_integer(m->version) : json_null());
	json_object_set_new(o, "files", json_integer((json_int_t)m->n_sources));
	json_object_set_new(o, "file_bytes", fmt_model_sequential(m) ? json_null() : fmt_json_u64(file_bytes(m)));
	json_object_set_new(o, "data_bytes", fmt_json_u64(data_bytes(m)));
	json_object_set_new(o, "tensor_count", json_integer((json_int_t)m->n_tensors));
	json_object_set_new(o, "parameter_count", fmt_json_u64(fmt_model_param_count(m)));
	json_object_set_new(o, "dtypes", by);
}

static json_t *json_stats(const fmt_tensor *t, const fmt_stats *s)
{
	json_t *first = json_array();
	for (size_t i = 0; first && i < s->n_first; i++) {
		fmt_value v = { .type = s->f64 ? FMT_V_F64 : FMT_V_F32, .v.f = s->first[i] };
		json_array_append_new(first, s->int_kind ? json_int(s, s->ifirst[i]) : fmt_json_value(&v, 0));
	}
	fmt_value vals[4] = {
		{ .type = FMT_V_F64, .v.f = s->min }, { .type = FMT_V_F64, .v.f = s->max },
		{ .type = FMT_V_F64, .v.f = s->mean }, { .type = FMT_V_F64, .v.f = s->std },
	};
	return json_pack("{s:o,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
			 "name", fmt_json_string(t->name, strlen(t->name)), "dtype", fmt_dtype_name(t->dtype),
			 "shape", json_shape(t), "count", fmt_json_u64(s->count), "nan", fmt_json_u64(s->nan),
			 "inf", fmt_json_u64(s->inf),
			 "min", s->int_kind ? json_int(s, s->imin) : fmt_json_value(&vals[0], 0),
			 "max", s->int_kind ? json_int(s, s->imax) : fmt_json_value(&vals[1], 0),
			 "mean", fmt_json_value(&vals[2], 0), "std", fmt_json_value(&vals[3], 0), "first", first);
}

/* ---- the report ---- */

static fmt_kind report_json(FILE *out, const fmt_model *m, const inspect_opts *o,
			    const fmt_tensor *t, const fmt_stats *stats, fmt_err *e)
{
	json_t *obj = json_object();
	if (!obj)
		return fmt_fail(e, FMT_IO, "out of memory");
	json_object_set_new(obj, "file", fmt_json_string(m->path, strlen(m->path)));
	json_object_set_new(obj, "format", json_string(m->driver->name));
	if (o->sections & SECTION_SUMMARY) {
		json_summary(obj, m);
		if (m->driver->describe)
			json_object_set_new(obj, "format_info", m->driver->describe(m));
	}
	json_t *tail = json_object();
	if (!tail) {
		json_decref(obj);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	if (o->sections & SECTION_TREE)
		json_object_set_new(tail, "tree", tree_json(m));
	if (stats)
		json_object_set_new(tail, "stats", json_stats(t, stats));
	int r = out ? write_json_line(out, obj, m, o, tail) : 0;
	json_decref(obj);
	json_decref(tail);
	return r ? fmt_json_fail(r, e) : FMT_OK;
}

static void report_text(FILE *out, const fmt_model *m, const inspect_opts *o,
			const fmt_tensor *t, const fmt_stats *stats)
{
	if (stats) {
		text_stats(out, t, stats);
		return;
	}
	if (o->sections == SECTION_ALL && m->driver->text_summary) {
		m->driver->text_summary(m, out);
		return;
	}
	if (o->sections & SECTION_SUMMARY) {
		text_summary(out, m);
		text_format_info(out, m);
	}
	if (o->sections & SECTION_METADATA)
		text_metadata(out, m, o->full ? 0 : INSPECT_ARRAY_ITEMS);
	if (o->sections & SECTION_TENSORS)
		text_tensors(out, m, o->tensor);
	if (o->sections & SECTION_TREE)
		tree_print_text(out, m);
}

fmt_kind inspect_report(FILE *out, const fmt_model *m, const inspect_opts *o, fmt_err *e)
{
	const fmt_tensor *t = NULL;
	fmt_stats stats;
	inspect_opts eff = *o;
	if (o->tensor) {
		t = fmt_model_find_tensor(m, o->tensor);
		if (!t)
			return fmt_fail(e, FMT_USAGE, "no tensor named '%s'", o->tensor);
		/* --tensor alone shows that tensor's line; with --stats, its statistics. */
		if (eff.sections == SECTION_ALL)
			eff.sections = o->stats ? 0 : SECTION_TENSORS;
	}
	if (o->stats) {
		fmt_kind k = fmt_tensor_stats(m, t, &stats, e);
		if (k != FMT_OK)
			return k;
	}
	if (o->json)
		return report_json(out, m, &eff, t, o->stats ? &stats : NULL, e);
	if (out)
		report_text(out, m, &eff, t, o->stats ? &stats : NULL);
	return FMT_OK;
}
