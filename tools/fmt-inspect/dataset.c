/* fmt-inspect for datasets: the format's facts (for .ald: header fields, card, flags, CRC
 * kind, blocks), the schema, rows; --schema, --head N (only the batches, and for a STREAMING
 * .ald the chunks, that hold them are decoded) and --stats per column. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/xxh3.h"
#include "fmt/arrow.h"
#include "fmt/cell.h"
#include "fmt/checked.h"
#include "fmt/out.h"
#include "fmt/quality.h"
#include "fmt/report.h"
#include "fmt/stats.h"
#include "inspect.h"

#define DISTINCT_CAP 10000
#define CELL_WIDTH 32

static void print_schema(FILE *out, const fmt_schema *s)
{
	fprintf(out, "schema (%zu column%s):\n", s->n_fields, s->n_fields == 1 ? "" : "s");
	for (size_t i = 0; i < s->n_fields; i++) {
		char type[256];
		fmt_field_type_name(&s->fields[i], type, sizeof type);
		fprintf(out, "  ");
		fmt_out_escaped(out, s->fields[i].name, strlen(s->fields[i].name));
		fprintf(out, "  %s%s%s\n", type, s->fields[i].nullable ? "" : "  not null",
			s->fields[i].type == FMT_C_OTHER ? "  (not converted by fmtkit)" : "");
	}
}

#define REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD */

/* The columns whose names a JSON key may stand for with U+FFFD in place of their bytes that are
 * not UTF-8 (fmt_json_set), by that key: {KEY: field index}; a later column of the same key
 * wins, as in the describe object. NULL when no name is invalid or has U+FFFD (or out of memory:
 * the keys are then printed as they are). */
static json_t *replaced_names(const fmt_schema *s)
{
	json_t *names = NULL;
	for (size_t i = 0; i < s->n_fields; i++) {
		const char *name = s->fields[i].name;
		size_t n = strlen(name);
		if (fmt_utf8_valid(name, n) && !strstr(name, REPLACEMENT))
			continue;
		if (!names && !(names = json_object()))
			return NULL;
		fmt_json_set(names, name, json_integer((json_int_t)i));
	}
	return names;
}

/* A key of the describe object as the rest of the report writes names: a column's name escaped
 * (its bytes that are not UTF-8 as \xHH, as the schema below shows them), not the U+FFFD its
 * key has in their place. */
static void print_key(FILE *out, const char *key, const fmt_schema *s, json_t *names)
{
	json_t *i = names && strstr(key, REPLACEMENT) ? json_object_get(names, key) : NULL;
	const char *name = i ? s->fields[json_integer_value(i)].name : key;
	fmt_out_escaped(out, name, strlen(name));
}

/* The describe object as "key: value" lines (nested objects indented). */
static void print_facts(FILE *out, json_t *o, int depth, const fmt_schema *s, json_t *names)
{
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v) {
		fprintf(out, "%*s", 2 * depth, "");
		print_key(out, key, s, names);
		fputc(':', out);
		if (json_is_object(v) && json_object_size(v)) {
			fprintf(out, "\n");
			print_facts(out, v, depth + 1, s, names);
			continue;
		}
		char *text = json_is_string(v) ? NULL : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		fprintf(out, " ");
		if (json_is_string(v))
			fmt_out_escaped(out, json_string_value(v), json_string_length(v));
		else if (text)
			fmt_out_escaped(out, text, strlen(text));
		fprintf(out, "\n");
		free(text);
	}
}

/* The format's "warnings" (what fmt-verify would refuse, shown anyway) on stderr; the text
 * report leaves them out, the JSON one keeps them. */
static void warn_facts(const fmt_table *t, json_t *facts, int keep)
{
	size_t i;
	json_t *w;
	json_array_foreach(json_object_get(facts, "warnings"), i, w)
		if (json_is_string(w))
			fmt_report_warning(stderr, TOOL, "%s: %s", t->path, json_string_value(w));
	if (!keep)
		json_object_del(facts, "warnings");
}

static fmt_kind summary(FILE *out, fmt_table *t, const inspect_opts *o, fmt_err *e)
{
	json_t *facts = t->driver->describe ? t->driver->describe(t) : json_object();
	if (!facts)
		return fmt_fail(e, FMT_IO, "out of memory");
	if (out)
		warn_facts(t, facts, o->json);
	if (o->json) {
		json_t *r = json_object();
		json_object_set_new(r, "file", fmt_json_string(t->path, strlen(t->path)));
		json_object_set_new(r, "format", json_string(t->driver->name));
		if (t->n_rows != FMT_ROWS_UNKNOWN) /* a number or absent, as fmt-verify and fmt-convert say it */
			json_object_set_new(r, "rows", fmt_json_u64(t->n_rows));
		json_object_set_new(r, "columns", json_integer((json_int_t)t->schema.n_fields));
		json_object_set_new(r, "schema", fmt_schema_json(&t->schema));
		json_object_set_new(r, t->driver->name, facts);
		int bad = out ? fmt_json_line(out, r) : 0;
		json_decref(r);
		return bad ? fmt_json_fail(bad, e) : FMT_OK;
	}
	if (out) {
		fprintf(out, "file: ");
		fmt_out_escaped(out, t->path, strlen(t->path));
		fprintf(out, "\nformat: %s\n", t->driver->name);
		if (t->n_rows != FMT_ROWS_UNKNOWN)
			fprintf(out, "rows: %llu\n", (unsigned long long)t->n_rows);
		json_t *names = replaced_names(&t->schema);
		print_facts(out, facts, 0, &t->schema, names);
		json_decref(names);
		print_schema(out, &t->schema);
	}
	json_decref(facts);
	return FMT_OK;
}

static fmt_kind schema_only(FILE *out, fmt_table *t, const inspect_opts *o, fmt_err *e)
{
	if (!out)
		return FMT_OK;
	if (!o->json) {
		print_schema(out, &t->schema);
		return FMT_OK;
	}
	json_t *r = json_object();
	json_object_set_new(r, "file", fmt_json_string(t->path, strlen(t->path)));
	json_object_set_new(r, "format", json_string(t->driver->name));
	json_object_set_new(r, "schema", fmt_schema_json(&t->schema));
	int bad = fmt_json_line(out, r);
	json_decref(r);
	return bad ? fmt_json_fail(bad, e) : FMT_OK;
}

/* Text cells: at most CELL_WIDTH characters shown, control characters escaped by the printer. */
static void print_cell(FILE *out, const char *s, size_t n, int width, int last)
{
	size_t shown = n > CELL_WIDTH ? CELL_WIDTH : n;
	fmt_out_escaped(out, s, shown);
	if (shown < n)
		fputs("…", out);
	if (!last)
		fprintf(out, "%*s", (int)(width - (int)(shown + (shown < n))) + 2, "");
}

/* {"file","format","rows":N,"head":[...]}: "rows" is a number in every report, here of the rows
 * shown; rows holds their objects, "[" and then each row. */
static fmt_kind print_head_json(FILE *out, const fmt_table *t, uint64_t n_rows, fmt_sb *rows, fmt_err *e)
{
	fmt_sb line = { 0 };
	fmt_sb_puts(&line, "{\"file\":");
	fmt_sb_json_str(&line, t->path, strlen(t->path));
	fmt_sb_puts(&line, ",\"format\":");
	fmt_sb_json_str(&line, t->driver->name, strlen(t->driver->name));
	fmt_sb_puts(&line, ",\"rows\":");
	fmt_sb_u64(&line, n_rows);
	fmt_sb_puts(&line, ",\"head\":");
	fmt_sb_put(&line, rows->p, rows->len);
	fmt_sb_puts(&line, "]}\n");
	fmt_kind k = line.oom || rows->oom ? fmt_fail(e, FMT_IO, "out of memory") : FMT_OK;
	if (k == FMT_OK)
		fwrite(line.p, 1, line.len, out);
	fmt_sb_free(&line);
	return k;
}

static fmt_kind head(FILE *out, fmt_table *t, const inspect_opts *o, fmt_err *e)
{
	const fmt_schema *s = &t->schema;
	fmt_sb text = { 0 }, scratch = { 0 };
	uint64_t left = o->head;
	size_t n_cols = s->n_fields;
	char ***cells = NULL;     /* text mode: rows of cell strings */
	uint64_t n_rows = 0;
	fmt_kind k = FMT_OK;
	if (o->json) {
		fmt_sb_puts(&text, "[");     /* the rows; the count goes before them */
	} else {
		cells = calloc(o->head ? o->head : 1, sizeof *cells);
		if (!cells)
			return fmt_fail(e, FMT_IO, "out of memory");
	}
	while (left > 0 && k == FMT_OK) {
		fmt_batch b;
		int done;
		if ((k = fmt_table_next(t, &b, &done, e)) != FMT_OK)
			break;
		if (done) {
			fmt_batch_free(&b);
			break;
		}
		for (uint64_t r = 0; r < b.n_rows && left > 0; r++, left--, n_rows++) {
			if (o->json) {
				if (n_rows)
					fmt_sb_put(&text, ",", 1);
				fmt_row_json_text(s, &b, r, &text, &scratch, FMT_JSON_REPORT);
				continue;
			}
			cells[n_rows] = calloc(n_cols ? n_cols : 1, sizeof **cells);
			for (size_t c = 0; cells[n_rows] && c < n_cols; c++) {
				scratch.len = 0;
				if (fmt_column_is_null(&b.columns[c], r))
					fmt_sb_puts(&scratch, "null");
				else
					fmt_cell_text(&s->fields[c], &b.columns[c], r, &scratch);
				cells[n_rows][c] = strndup(scratch.p ? scratch.p : "", scratch.len);
			}
		}
		fmt_batch_free(&b);
	}
	if (k == FMT_OK && out) {
		if (o->json) {
			k = print_head_json(out, t, n_rows, &text, e);
		} else {
			int *width = calloc(n_cols ? n_cols : 1, sizeof *width);
			for (size_t c = 0; width && c < n_cols; c++) {
				size_t w = strlen(s->fields[c].name);
				for (uint64_t r = 0; r < n_rows; r++)
					if (cells[r] && cells[r][c] && strlen(cells[r][c]) > w)
						w = strlen(cells[r][c]);
				width[c] = (int)(w > CELL_WIDTH ? CELL_WIDTH + 1 : w);
			}
			for (size_t c = 0; width && c < n_cols; c++)
				print_cell(out, s->fields[c].name, strlen(s->fields[c].name), width[c], c + 1 == n_cols);
			fprintf(out, "\n");
			for (uint64_t r = 0; width && r < n_rows; r++) {
				for (size_t c = 0; cells[r] && c < n_cols; c++) {
					const char *v = cells[r][c] ? cells[r][c] : "";
					print_cell(out, v, strlen(v), width[c], c + 1 == n_cols);
				}
				fprintf(out, "\n");
			}
			free(width);
		}
	}
	for (uint64_t r = 0; cells && r < n_rows; r++) {
		for (size_t c = 0; cells[r] && c < n_cols; c++)
			free(cells[r][c]);
		free(cells[r]);
	}
	free(cells);
	fmt_sb_free(&text);
	fmt_sb_free(&scratch);
	return k;
}

/* ---- --stats ---- */

typedef struct col_stats {
	uint64_t count, nulls, n;   /* n: values counted in the numeric aggregates */
	uint64_t nan;               /* floats: NaN values, left out of n, min, max and mean */
	double min, max;
	fmt_running run;            /* floats: their sum, scaled (finite up to DBL_MAX) */
	unsigned __int128 isum;     /* integers: the exact sum (two's complement when signed) */
	int64_t imin, imax;         /* integers, dates and timestamps: exact */
	uint64_t umin, umax;
	uint64_t *hashes;           /* strings: distinct values seen, up to DISTINCT_CAP */
	size_t n_hashes;
	int capped;
	uint64_t min_len, max_len;
} col_stats;

static void add_hash(col_stats *st, uint64_t h)
{
	/* open addressing in a table of 2 * DISTINCT_CAP slots; 0 marks a free slot */
	size_t slots = 2 * DISTINCT_CAP;
	if (!h)
		h = 1;
	for (size_t i = h % slots;; i = (i + 1) % slots) {
		if (st->hashes[i] == h)
			return;
		if (!st->hashes[i]) {
			if (st->n_hashes == DISTINCT_CAP) {
				st->capped = 1;
				return;
			}
			st->hashes[i] = h;
			st->n_hashes++;
			return;
		}
	}
}

static void stats_add(col_stats *st, const fmt_field *f, const fmt_column *c, uint64_t r)
{
	st->count++;
	if (fmt_column_is_null(c, r)) {
		st->nulls++;
		return;
	}
	const uint8_t *p;
	size_t len;
	switch (f->type) {
	case FMT_C_UTF8: case FMT_C_LARGE_UTF8: case FMT_C_BINARY:
		fmt_column_bytes(c, f->type, r, &p, &len);
		if (st->hashes)
			add_hash(st, XXH3_64bits(p, len));
		if (st->n++ == 0 || len < st->min_len)
			st->min_len = len;
		if (len > st->max_len)
			st->max_len = len;
		return;
	case FMT_C_FIXED_SIZE_LIST: case FMT_C_OTHER:
		return;
	case FMT_C_I8: case FMT_C_I16: case FMT_C_I32: case FMT_C_I64: case FMT_C_DATE32: case FMT_C_TIMESTAMP: {
		int64_t v = fmt_cell_i64(f, c, r);
		if (st->n == 0 || v < st->imin)
			st->imin = v;
		if (st->n == 0 || v > st->imax)
			st->imax = v;
		st->isum += (unsigned __int128)(__int128)v;
		st->n++;
		return;
	}
	case FMT_C_U8: case FMT_C_U16: case FMT_C_U32: case FMT_C_U64: {
		uint64_t v = fmt_cell_u64(f, c, r);
		if (st->n == 0 || v < st->umin)
			st->umin = v;
		if (st->n == 0 || v > st->umax)
			st->umax = v;
		st->isum += v;
		st->n++;
		return;
	}
	default: {
		double v = fmt_cell_number(f, c, r);
		if (isnan(v)) {   /* numpy's nanmean: infinities are numbers, NaN is none */
			st->nan++;
			return;
		}
		if (st->n == 0 || v < st->min)
			st->min = v;
		if (st->n == 0 || v > st->max)
			st->max = v;
		fmt_running_add_sum(&st->run, v);
		st->n++;
	}
	}
}

/* A value of f's type from raw little-endian bytes, as text (dates and timestamps). */
static json_t *typed_text(const fmt_field *f, int64_t v)
{
	uint8_t raw[8];
	fmt_wr_u64(raw, (uint64_t)v);
	fmt_column c = { .values = raw, .values_len = 8 };
	fmt_sb b = { 0 };
	fmt_cell_text(f, &c, 0, &b);
	json_t *s = json_stringn(b.p ? b.p : "", b.len);
	fmt_sb_free(&b);
	return s;
}

static json_t *stats_json(const fmt_field *f, const col_stats *st)
{
	json_t *o = json_object();
	char type[256], num[64];
	fmt_field_type_name(f, type, sizeof type);
	json_object_set_new(o, "name", fmt_json_string(f->name, strlen(f->name)));
	json_object_set_new(o, "type", json_string(type));
	json_object_set_new(o, "count", fmt_json_u64(st->count));
	json_object_set_new(o, "nulls", fmt_json_u64(st->nulls));
	if (f->type == FMT_C_F16 || f->type == FMT_C_F32 || f->type == FMT_C_F64) {
		json_object_set_new(o, "nan", fmt_json_u64(st->nan));
	}
	if (!st->n)
		return o;
	switch (f->type) {
	case FMT_C_UTF8: case FMT_C_LARGE_UTF8: case FMT_C_BINARY:
		json_object_set_new(o, "distinct", fmt_json_u64(st->n_hashes));
		if (st->capped)
			json_object_set_new(o, "distinct_capped", json_true());
		json_object_set_new(o, "min_length", fmt_json_u64(st->min_len));
		json_object_set_new(o, "max_length", fmt_json_u64(st->max_len));
		return o;
	case FMT_C_DATE32: case FMT_C_TIMESTAMP:
		json_object_set_new(o, "min", typed_text(f, st->imin));
		json_object_set_new(o, "max", typed_text(f, st->imax));
		return o;
	case FMT_C_I8: case FMT_C_I16: case FMT_C_I32: case FMT_C_I64:
		json_object_set_new(o, "min", json_integer(st->imin));
		json_object_set_new(o, "max", json_integer(st->imax));
		break;
	case FMT_C_U8: case FMT_C_U16: case FMT_C_U32: case FMT_C_U64:
		json_object_set_new(o, "min", fmt_json_u64(st->umin));
		json_object_set_new(o, "max", fmt_json_u64(st->umax));
		break;
	default:
		fmt_shortest_double(st->min, FMT_C_F64, num, sizeof num);
		json_object_set_new(o, "min", isfinite(st->min) ? json_real(strtod(num, NULL)) : fmt_json_double(st->min));
		fmt_shortest_double(st->max, FMT_C_F64, num, sizeof num);
		json_object_set_new(o, "max", isfinite(st->max) ? json_real(strtod(num, NULL)) : fmt_json_double(st->max));
	}
	double mean;
	if (f->type >= FMT_C_I8 && f->type <= FMT_C_U64)
		mean = fmt_int_sum_mean(st->isum, f->type <= FMT_C_I64, st->n);
	else
		mean = fmt_running_sum_mean(&st->run);
	json_object_set_new(o, "mean", fmt_json_double(mean));
	return o;
}

static void print_stats_text(FILE *out, json_t *cols)
{
	size_t i;
	json_t *c;
	json_array_foreach(cols, i, c) {
		const char *key;
		json_t *v;
		json_object_foreach(c, key, v) {
			if (!strcmp(key, "name")) {
				fmt_out_escaped(out, json_string_value(v), json_string_length(v));
				fprintf(out, ":");
				continue;
			}
			char *text = json_is_string(v) ? NULL : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY |
									     JSON_REAL_PRECISION(10));
			fprintf(out, " %s=", key);
			if (json_is_string(v))
				fmt_out_escaped(out, json_string_value(v), json_string_length(v));
			else if (text)
				fputs(text, out);
			free(text);
		}
		fprintf(out, "\n");
	}
}

static fmt_kind stats(FILE *out, fmt_table *t, const inspect_opts *o, fmt_err *e)
{
	const fmt_schema *s = &t->schema;
	size_t n = s->n_fields;
	col_stats *st = calloc(n ? n : 1, sizeof *st);
	fmt_kind k = FMT_OK;
	if (!st)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < n && k == FMT_OK; i++) {
		fmt_ctype ty = s->fields[i].type;
		if ((ty == FMT_C_UTF8 || ty == FMT_C_LARGE_UTF8 || ty == FMT_C_BINARY) &&
		    !(st[i].hashes = calloc(2 * DISTINCT_CAP, sizeof *st[i].hashes)))
			k = fmt_fail(e, FMT_IO, "out of memory");
	}
	while (k == FMT_OK) {
		fmt_batch b;
		int done;
		if ((k = fmt_table_next(t, &b, &done, e)) != FMT_OK || done) {
			fmt_batch_free(&b);
			break;
		}
		for (size_t i = 0; i < n; i++)
			for (uint64_t r = 0; r < b.n_rows; r++)
				stats_add(&st[i], &s->fields[i], &b.columns[i], r);
		fmt_batch_free(&b);
	}
	if (k == FMT_OK && out) {
		json_t *cols = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(cols, stats_json(&s->fields[i], &st[i]));
		if (o->json) {
			json_t *r = json_object();
			json_object_set_new(r, "file", fmt_json_string(t->path, strlen(t->path)));
			json_object_set_new(r, "format", json_string(t->driver->name));
			json_object_set_new(r, "columns", cols);
			int bad = fmt_json_line(out, r);
			if (bad)
				k = fmt_json_fail(bad, e);
			json_decref(r);
		} else {
			print_stats_text(out, cols);
			json_decref(cols);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(st[i].hashes);
	free(st);
	return k;
}

/* ---- --quality ---- */

/* A value of the report for the text table: numbers shortened to 6 significant digits. */
static void quality_cell(json_t *v, char *buf, size_t n)
{
	if (!v || json_is_null(v)) {
		snprintf(buf, n, "-");
	} else if (json_is_boolean(v)) {
		snprintf(buf, n, "%s", json_is_true(v) ? "yes" : "no");
	} else if (json_is_string(v)) {
		snprintf(buf, n, "%s", json_string_value(v));
	} else {
		char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(6));
		snprintf(buf, n, "%s", text ? text : "?");
		free(text);
	}
}

static void print_quality_text(FILE *out, json_t *r)
{
	static const char *const keys[] = { "name", "type", "nulls", "null_rate", "distinct", "constant", "min", "max",
					    "mean", "std", "p1", "p50", "p99" };
	enum { N_KEYS = sizeof keys / sizeof keys[0] };
	json_t *cols = json_object_get(r, "columns"), *c;
	size_t n = json_array_size(cols), i, width[N_KEYS];
	char cell[128];
	fprintf(out, "rows: %" JSON_INTEGER_FORMAT "\nduplicate rows: %" JSON_INTEGER_FORMAT "\n",
		json_integer_value(json_object_get(r, "rows")), json_integer_value(json_object_get(r, "duplicate_rows")));
	for (size_t k = 0; k < N_KEYS; k++) {
		width[k] = strlen(keys[k]);
		json_array_foreach(cols, i, c) {
			quality_cell(json_object_get(c, keys[k]), cell, sizeof cell);
			size_t w = strlen(cell) + (k == 4 && json_is_false(json_object_get(c, "distinct_exact")));
			width[k] = w > width[k] ? w : width[k];
		}
	}
	for (size_t row = 0; row <= n; row++) {
		for (size_t k = 0; k < N_KEYS; k++) {
			json_t *col = row ? json_array_get(cols, row - 1) : NULL;
			const char *text = keys[k];
			if (col) {
				quality_cell(json_object_get(col, keys[k]), cell + 1, sizeof cell - 1);
				cell[0] = '~'; /* an estimate */
				text = k == 4 && json_is_false(json_object_get(col, "distinct_exact")) ? cell : cell + 1;
			}
			if (k == 0 && col) {
				fmt_out_escaped(out, text, strlen(text));
				fprintf(out, "%*s", (int)(width[k] - strlen(text)), "");
			} else {
				fprintf(out, "%-*s", k + 1 < N_KEYS ? (int)width[k] : 0, text);
			}
			fputs(k + 1 < N_KEYS ? "  " : "\n", out);
		}
	}
	json_t *m = json_object_get(r, "method");
	fprintf(out, "distinct: %s\nquantiles: %s\nduplicate rows: %s\n", json_string_value(json_object_get(m, "distinct")),
		json_string_value(json_object_get(m, "quantiles")), json_string_value(json_object_get(m, "duplicate_rows")));
}

static fmt_kind quality_add(void *q, const fmt_batch *b, fmt_err *e)
{
	return fmt_quality_add(q, b, e);
}

static fmt_kind quality(FILE *out, fmt_table *t, const inspect_opts *o, fmt_err *e)
{
	fmt_quality *q;
	fmt_kind k = fmt_quality_new(&t->schema, &q, e);
	if (k == FMT_OK)
		k = fmt_table_each_batch(t, quality_add, q, e);
	json_t *r = k == FMT_OK ? fmt_quality_json(q) : NULL;
	if (k == FMT_OK && !r)
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK && out && o->json) {
		json_t *line = json_object();
		json_object_set_new(line, "file", fmt_json_string(t->path, strlen(t->path)));
		json_object_set_new(line, "format", json_string(t->driver->name));
		json_object_update(line, r);
		int bad = fmt_json_line(out, line);
		if (bad)
			k = fmt_json_fail(bad, e);
		json_decref(line);
	} else if (k == FMT_OK && out) {
		print_quality_text(out, r);
	}
	json_decref(r);
	fmt_quality_free(q);
	return k;
}

/* Rows are shown of the columns fmtkit converts: the others are left out, named on standard
 * error (the first few), instead of refusing the table. */
static fmt_kind leave_out_unconverted(FILE *out, fmt_table *t, fmt_err *e)
{
	enum { NAMED = 6 };
	const fmt_schema *s = &t->schema;
	fmt_sb names = { 0 };
	size_t n = 0;
	for (size_t i = 0; i < s->n_fields; i++) {
		if (s->fields[i].type != FMT_C_OTHER || n++ >= NAMED)
			continue;
		fmt_sb_puts(&names, n > 1 ? ", '" : "'");
		fmt_sb_puts(&names, s->fields[i].name);
		fmt_sb_puts(&names, "' (");
		fmt_sb_puts(&names, s->fields[i].type_name);
		fmt_sb_puts(&names, ")");
	}
	if (n == 0 || n == s->n_fields) { /* nothing left to show: the error alone says so */
		fmt_sb_free(&names);
		return n ? fmt_table_select_converted(t, e) : FMT_OK;
	}
	if (n > NAMED) {
		fmt_sb_puts(&names, " and ");
		fmt_sb_u64(&names, n - NAMED);
		fmt_sb_puts(&names, " more");
	}
	if (out && !names.oom)
		fmt_report_warning(stderr, TOOL, "%s: %zu column%s of a type fmtkit does not convert left out: %s", t->path,
				   n, n > 1 ? "s" : "", names.p);
	fmt_sb_free(&names);
	return fmt_table_select_converted(t, e);
}

fmt_kind inspect_dataset(FILE *out, fmt_table *t, const inspect_opts *o, fmt_err *e)
{
	if (o->tensor || o->model_sections)
		return fmt_fail(e, FMT_USAGE, "--tensor, --tensors, --metadata and --tree are for models, not datasets");
	if (o->schema)
		return schema_only(out, t, o, e);
	fmt_kind k;
	/* reading rows: an expired licence stops them; the rows of an encrypted file need its key,
	 * decrypted (and authenticated) first */
	t->allow_expired = o->allow_expired;
	int rows = o->head_given || o->stats || o->quality;
	if (rows && (k = fmt_table_rows_gate(t, e)) != FMT_OK)
		return k;
	if (t->rows_note[0] && out)
		fmt_report_warning(stderr, TOOL, "%s: %s", t->path, t->rows_note);
	if (rows && (k = fmt_table_unlock(t, o->dk, o->keys, 1, e)) != FMT_OK)
		return k;
	if (o->head_given)
		return (k = leave_out_unconverted(out, t, e)) != FMT_OK ? k : head(out, t, o, e);
	/* The report names what checking the integrity layers finds (the CRC variant of an .ald,
	 * its payload's authentication), when the format has such facts; otherwise it is read from
	 * the metadata alone (a Parquet file's footer: its pages were all read and checked, 101 MB
	 * for a 6 M-row file; fmt-verify checks them). Reading rows checks first in any case. */
	if ((rows || t->driver->verify_facts) && (k = fmt_table_verify(t, NULL, e)) != FMT_OK)
		return k;
	if (rows && (k = leave_out_unconverted(out, t, e)) != FMT_OK) /* after: verify reads the file's own */
		return k;
	if (o->quality)
		return quality(out, t, o, e);
	if (o->stats)
		return stats(out, t, o, e);
	return summary(out, t, o, e);
}
