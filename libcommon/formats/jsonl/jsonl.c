/* JSON Lines as a table driver: one object per line; columns are the keys in the order first
 * seen, types inferred over the whole file (a first pass; or over the first objects only, and
 * checked as the rest are read, when fmt_dataset_opts.sample_bytes lets it), missing keys and
 * null as nulls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/cell.h"
#include "fmt/checked.h"
#include "fmt/dataset.h"
#include "fmt/nameset.h"
#include "fmt/registry.h"
#include "fmt/builder.h"
#include "fmt/textio.h"
#include "fmt/textval.h"
#include "fmt/tree_budget.h"

#define MAX_COLUMNS FMT_TABLE_MAX_COLUMNS
#define DEFAULT_BATCH 65536

/* J_INT: an integer of int64; J_BIG: one above int64, up to 2^64-1 (jansson holds int64 only);
 * J_NONFINITE: a string naming a NaN or an infinity (fmt_tv_nonfinite), as the writer puts them */
enum { J_NULL = 1, J_BOOL = 2, J_INT = 4, J_REAL = 8, J_STR = 16, J_ARRAY = 32, J_OTHER = 64, J_BIG = 128,
       J_NONFINITE = 256 };

typedef struct jcol {
	char *name;
	unsigned kinds;
	int negative;          /* an integer below 0 */
	fmt_tv_infer str;          /* the strings: all timestamps? */
	long list_len;         /* arrays: common length, -1 when they differ */
	int list_real;         /* arrays hold a non-integer */
	int list_bad;          /* arrays hold something other than numbers */
	uint64_t rows_seen;
} jcol;

/* A top-level value above int64 in the current line: its member's index, its value, and the
 * placeholder jansson parsed in its place. */
typedef struct big_int {
	size_t member;
	uint64_t value;
	const json_t *at;
} big_int;

typedef struct jsonl_state {
	fmt_text_in in;
	uint64_t line;
	big_int *big;
	size_t n_big, cap_big;
	jcol *cols;
	size_t n_cols, cap_cols;
	fmt_nameset names;         /* cols[i].name -> i */
	uint64_t batch_rows;
	col_builder *build;
	uint64_t rec_off;          /* where the last object's line starts */
	/* The types came from the first objects only (fmt_dataset_opts.sample_bytes): cols[]
	 * infer again over every object as it is read, a key the sample did not have fails at
	 * once, and at the end the schema of the whole file must be the one given. */
	int sampled;
	uint64_t rows_read;
} jsonl_state;

static fmt_kind refill(jsonl_state *s, fmt_err *e)
{
	return fmt_text_in_refill(&s->in, s->line, "longer than 64 MiB", e);
}

static fmt_kind big_add(jsonl_state *s, size_t member, uint64_t value, fmt_err *e)
{
	if (fmt_grow_array(&s->big, &s->cap_big, s->n_big + 1, sizeof *s->big, 8))
		return fmt_fail(e, FMT_IO, "out of memory");
	s->big[s->n_big++] = (big_int){ member, value, NULL };
	return FMT_OK;
}

/* The line p[0..len), which jansson refused for an integer beyond int64: each top-level member
 * value above int64 and up to 2^64-1 into s->big, and overwritten in place (the buffer is read
 * once) by a 0 and spaces, so the line parses with the same columns. Any other integer beyond
 * int64 is an error naming it. */
static fmt_kind take_big_integers(jsonl_state *s, char *p, size_t len, uint64_t line, fmt_err *e)
{
	int depth = 0, object = 0;
	size_t member = 0;
	for (size_t i = 0; i < len; i++) {
		char c = p[i];
		if (c == '"') {
			for (i++; i < len && p[i] != '"'; i++)
				i += p[i] == '\\';
		} else if (c == '{' || c == '[') {
			object |= depth == 0 && c == '{';
			depth++;
		} else if (c == '}' || c == ']') {
			depth--;
		} else if (c == ',' && depth == 1) {
			member++;
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			size_t j = i + 1;
			int64_t small;
			uint64_t big;
			while (j < len && ((p[j] >= '0' && p[j] <= '9') || p[j] == '.' || p[j] == 'e' || p[j] == 'E' ||
					   p[j] == '+' || p[j] == '-'))
				j++;
			int real = memchr(p + i, '.', j - i) || memchr(p + i, 'e', j - i) || memchr(p + i, 'E', j - i);
			if (real || fmt_tv_int64(p + i, j - i, &small)) {
				i = j - 1;
				continue;
			}
			if (p[i] == '-' || !fmt_tv_uint64(p + i, j - i, &big))
				return fmt_fail(e, FMT_INVALID_FORMAT, "line %llu, column %zu: the integer %.*s is beyond "
						"int64 and uint64 (write it with a fraction or an exponent for a float)",
						(unsigned long long)line, i + 1, (int)(j - i > 40 ? 40 : j - i), p + i);
			if (!object || depth != 1)
				return fmt_fail(e, FMT_INVALID_FORMAT, "line %llu, column %zu: the integer %.*s is beyond "
						"int64 inside an array or object (only a top-level value can be a uint64)",
						(unsigned long long)line, i + 1, (int)(j - i > 40 ? 40 : j - i), p + i);
			fmt_kind k = big_add(s, member, big, e);
			if (k != FMT_OK)
				return k;
			p[i] = '0';
			memset(p + i + 1, ' ', j - i - 1);
			i = j - 1;
		}
	}
	return FMT_OK;
}

/* The placeholders jansson parsed for s->big (members in the order written: jansson keeps it). */
static void find_placeholders(jsonl_state *s, json_t *obj)
{
	const char *key;
	json_t *v;
	size_t member = 0, b = 0;
	if (!s->n_big || !json_is_object(obj))
		return;
	json_object_foreach(obj, key, v) {
		for (; b < s->n_big && s->big[b].member == member; b++)
			s->big[b].at = v;
		member++;
	}
}

/* The value above int64 that v stands for; 0 when v is not a placeholder. */
static int big_value(const jsonl_state *s, const json_t *v, uint64_t *u)
{
	for (size_t i = 0; i < s->n_big; i++)
		if (s->big[i].at == v) {
			*u = s->big[i].value;
			return 1;
		}
	return 0;
}

/* The next non-blank line parsed as a JSON object (*obj NULL at the end). */
static fmt_kind next_object(jsonl_state *s, json_t **obj, fmt_err *e)
{
	*obj = NULL;
	for (;;) {
		char *nl = s->in.start < s->in.end ? memchr(s->in.buf + s->in.start, '\n', s->in.end - s->in.start) : NULL;
		if (!nl && !s->in.eof) {
			fmt_kind k = refill(s, e);
			if (k != FMT_OK)
				return k;
			continue;
		}
		if (!nl && s->in.start == s->in.end)
			return FMT_OK;
		size_t len = nl ? (size_t)(nl - (s->in.buf + s->in.start)) : s->in.end - s->in.start;
		const char *p = s->in.buf + s->in.start;
		s->rec_off = fmt_text_in_offset(&s->in);
		s->in.start += len + (nl != NULL);
		uint64_t line = s->line++;
		size_t a = 0;
		while (a < len && (p[a] == ' ' || p[a] == '\t' || p[a] == '\r'))
			a++;
		if (a == len)
			continue;
		json_error_t je;
		char what[40];
		snprintf(what, sizeof what, "line %llu", (unsigned long long)line);
		fmt_kind kb = fmt_json_budget(what, p, len, FMT_TREE_COST_JSON, e);
		if (kb != FMT_OK)
			return kb;
		json_t *v = fmt_json_loadb(p, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
		s->n_big = 0;
		if (!v && strncmp(je.text, "too big ", 8) == 0) {
			fmt_kind k = take_big_integers(s, s->in.buf + (p - s->in.buf), len, line, e);
			if (k != FMT_OK)
				return k;
			v = fmt_json_loadb(p, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
		}
		if (!v && fmt_json_nomem(&je))
			return fmt_fail_nomem(e, what);
		if (!v)
			return fmt_fail(e, FMT_INVALID_FORMAT, "line %llu, column %d: %s", (unsigned long long)line,
					je.column, je.text);
		if (!json_is_object(v)) {
			json_decref(v);
			return fmt_fail(e, FMT_INVALID_FORMAT, "line %llu, column %zu: not a JSON object",
					(unsigned long long)line, a + 1);
		}
		find_placeholders(s, v);
		*obj = v;
		return FMT_OK;
	}
}

static jcol *column_named(const jsonl_state *s, const char *name)
{
	long i = fmt_nameset_find(&s->names, name);
	return i >= 0 ? &s->cols[i] : NULL;
}

static jcol *column(jsonl_state *s, const char *name, fmt_err *e)
{
	jcol *known = column_named(s, name);
	if (known)
		return known;
	if (s->n_cols >= MAX_COLUMNS) {
		fmt_fail(e, FMT_INVALID_FORMAT, "more than %d distinct keys", MAX_COLUMNS);
		return NULL;
	}
	char *copy = strdup(name);
	if (!copy || fmt_grow_array(&s->cols, &s->cap_cols, s->n_cols + 1, sizeof *s->cols, 16) ||
	    fmt_nameset_add(&s->names, copy) < 0) {
		free(copy);
		fmt_fail(e, FMT_IO, "out of memory");
		return NULL;
	}
	jcol *c = &s->cols[s->n_cols++];
	memset(c, 0, sizeof *c);
	c->name = copy;
	c->list_len = -2;
	fmt_tv_infer_init(&c->str);
	return c;
}

static void observe(const jsonl_state *s, jcol *c, json_t *v)
{
	size_t i;
	json_t *x;
	uint64_t u;
	double d;
	switch (json_typeof(v)) {
	case JSON_NULL: c->kinds |= J_NULL; break;
	case JSON_TRUE: case JSON_FALSE: c->kinds |= J_BOOL; break;
	case JSON_INTEGER:
		if (big_value(s, v, &u)) {
			c->kinds |= J_BIG;
		} else {
			c->kinds |= J_INT;
			c->negative |= json_integer_value(v) < 0;
		}
		break;
	case JSON_REAL: c->kinds |= J_REAL; break;
	case JSON_STRING:
		if (fmt_tv_nonfinite(json_string_value(v), json_string_length(v), &d)) {
			c->kinds |= J_NONFINITE;
			break;
		}
		c->kinds |= J_STR;
		fmt_tv_infer_add(&c->str, json_string_value(v), json_string_length(v));
		break;
	case JSON_ARRAY:
		c->kinds |= J_ARRAY;
		if (c->list_len == -2)
			c->list_len = (long)json_array_size(v);
		else if (c->list_len != (long)json_array_size(v))
			c->list_len = -1;
		json_array_foreach(v, i, x) {
			if (json_is_real(x))
				c->list_real = 1;
			else if (json_is_string(x) && fmt_tv_nonfinite(json_string_value(x), json_string_length(x), &d))
				c->list_real = 1; /* a NaN or an infinity, as the writer puts one in a list */
			else if (!json_is_integer(x))
				c->list_bad = 1;
		}
		break;
	default: c->kinds |= J_OTHER;
	}
}

/* Integers that fit int64 are int64; with one above int64 and none negative, uint64; with a
 * number written with a fraction or an exponent, or a string naming a NaN or an infinity
 * among numbers (as the writer puts a float column's), float64 (each number read as a float).
 * Anything else is utf8, which keeps each value's JSON: integers are never rounded to a float
 * unless the column holds floats, and those strings alone or among other strings stay text. */
static void jcol_field(const jcol *c, uint64_t rows, fmt_field *f)
{
	unsigned k = c->kinds & ~(unsigned)J_NULL;
	f->name = c->name;
	f->nullable = (c->kinds & J_NULL) || c->rows_seen < rows;
	if (k == J_BOOL)
		f->type = FMT_C_BOOL;
	else if (k == J_INT)
		f->type = FMT_C_I64;
	else if ((k == J_BIG || k == (J_INT | J_BIG)) && !c->negative)
		f->type = FMT_C_U64;
	else if ((k & (J_REAL | J_NONFINITE)) && (k & (J_INT | J_BIG | J_REAL)) &&
		 !(k & ~(unsigned)(J_INT | J_BIG | J_REAL | J_NONFINITE)))
		f->type = FMT_C_F64;
	else if (k == J_STR && (c->str.can & TV_TIME)) {
		f->type = FMT_C_TIMESTAMP;
		f->unit = fmt_tv_unit_for_digits(c->str.digits);
		f->timezone = c->str.zoned ? "UTC" : NULL;
	} else if (k == J_ARRAY && c->list_len > 0 && !c->list_bad) {
		f->type = FMT_C_FIXED_SIZE_LIST;
		f->list_size = (uint32_t)c->list_len;
		f->elem = c->list_real ? FMT_C_F64 : FMT_C_I64;
	} else
		f->type = FMT_C_UTF8;
}

/* A complete JSON object on the first line and another object starting the second: below the
 * index drivers, above a safetensors length that happens to be followed by '{'. A whole file
 * of one line holding one non-empty object is a one-row dataset (30), whatever its values
 * (nested objects and lists too, as a record of chat messages has them): one JSON object is a
 * JSON Lines file of one record (DuckDB's read_json reads it so). The JSON documents fmtkit
 * reads keep their drivers (the safetensors and .apsim indexes score higher, also on one
 * line); a document written over several lines ("{" alone on the first), a top-level array or
 * an empty object is not taken for a dataset. */
static int probe(const uint8_t *head, size_t n, uint64_t size)
{
	size_t i = fmt_text_bom(head, n);
	while (i < n && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t'))
		i++;
	if (i == n || head[i] != '{' || memchr(head, 0, n))
		return 0;
	const uint8_t *nl = memchr(head + i, '\n', n - i);
	if (!nl && n < size)
		return 20;
	const uint8_t *line_end = nl ? nl : head + n;
	/* integers as reals: the shape is what counts, and one above int64 must not fail it */
	json_t *v = fmt_json_loadb((const char *)head + i, (size_t)(line_end - (head + i)),
			       JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, NULL);
	int ok = json_is_object(v), empty = json_object_size(v) == 0;
	json_decref(v);
	if (!ok)
		return 0;
	size_t k = (size_t)(line_end - head) + (nl != NULL);
	while (k < n && (head[k] == ' ' || head[k] == '\n' || head[k] == '\r' || head[k] == '\t'))
		k++;
	if (k == n)
		return n < size ? 40 : empty ? 0 : 30;
	/* a line after the first object that is not one: still JSON Lines (above CSV's scores),
	 * whose reader names the line, rather than an unrecognised file */
	return head[k] == '{' ? 70 : 25;
}

/* What the reads infer again from the first object on (after a sample). */
static void jcol_restart(jcol *c)
{
	c->kinds = 0;
	c->negative = 0;
	fmt_tv_infer_init(&c->str);
	c->list_len = -2;
	c->list_real = c->list_bad = 0;
	c->rows_seen = 0;
}

static fmt_kind jsonl_open(fmt_table *t, fmt_err *e)
{
	const fmt_dataset_opts *o = t->opts;
	jsonl_state *s = calloc(1, sizeof *s);
	if (!s)
		return fmt_fail(e, FMT_IO, "out of memory");
	t->format_state = s;
	s->line = 1;
	s->batch_rows = o && o->batch_rows ? o->batch_rows : DEFAULT_BATCH;
	uint64_t rows = 0;
	/* the types may come from the objects whose lines start in the first sample bytes */
	uint64_t sample = o && !t->source.sequential && !t->source.observe ? o->sample_bytes : 0;
	fmt_kind k;
	if ((k = fmt_text_in_init(&s->in, &t->source, e)) != FMT_OK)
		return k;
	for (;;) {
		json_t *obj;
		const char *key;
		json_t *v;
		if ((k = next_object(s, &obj, e)) != FMT_OK)
			return k;
		if (!obj)
			break;
		if (sample && s->n_cols && s->rec_off >= sample) { /* past the sample, with a column */
			json_decref(obj);
			s->sampled = 1;
			break;
		}
		rows++;
		json_object_foreach(obj, key, v) {
			jcol *c = column(s, key, e);
			if (!c) {
				json_decref(obj);
				return e->kind;
			}
			c->rows_seen++;
			observe(s, c, v);
		}
		json_decref(obj);
	}
	if (s->n_cols == 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "no JSON objects with keys");
	for (size_t i = 0; i < s->n_cols; i++) {
		fmt_field f = { 0 };
		jcol_field(&s->cols[i], rows, &f);
		if ((k = fmt_schema_add_field(&t->schema, &f, e)) != FMT_OK)
			return k;
		if (s->sampled)
			jcol_restart(&s->cols[i]);
	}
	t->n_rows = s->sampled ? FMT_ROWS_UNKNOWN : rows;
	t->types_sampled = s->sampled;
	fmt_text_in_seek(&s->in, s->in.text_off);
	s->line = 1;
	s->batch_rows = fmt_text_batch_rows(s->batch_rows, s->n_cols);
	s->build = calloc(s->n_cols, sizeof *s->build);
	return s->build ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
}

static void put_u64(col_builder *b, uint64_t u)
{
	uint8_t le[8];
	fmt_wr_u64(le, u);
	fmt_cb_fixed(b, le, 8);
}

static void put_f64(col_builder *b, double d)
{
	uint64_t u;
	memcpy(&u, &d, 8);
	put_u64(b, u);
}

static fmt_kind put(jsonl_state *s, const fmt_field *f, json_t *v, col_builder *b, fmt_err *e)
{
	uint8_t le[8];
	uint64_t big = 0;
	int is_big = v && big_value(s, v, &big);
	if (!v || json_is_null(v)) {
		fmt_cb_null(b, f);
		return FMT_OK;
	}
	switch (f->type) {
	case FMT_C_BOOL:
		fmt_cb_bool(b, json_is_true(v));
		return FMT_OK;
	case FMT_C_I64: case FMT_C_U64:
		put_u64(b, is_big ? big : (uint64_t)json_integer_value(v));
		return FMT_OK;
	case FMT_C_F64: {
		double d = is_big ? (double)big : json_number_value(v);
		/* any other string (after a sample) fails the check of the whole file's types at the end */
		if (json_is_string(v))
			fmt_tv_nonfinite(json_string_value(v), json_string_length(v), &d);
		put_f64(b, d);
		return FMT_OK;
	}
	case FMT_C_TIMESTAMP: {
		int64_t out;
		if (!fmt_tv_timestamp_as(json_string_value(v), json_string_length(v), f, &out))
			return fmt_fail(e, FMT_INVALID_FORMAT, "line %llu: key \"%s\": timestamp out of range",
					(unsigned long long)s->line - 1, f->name);
		put_u64(b, (uint64_t)out);
		return FMT_OK;
	}
	case FMT_C_FIXED_SIZE_LIST: {
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x) {
			if (f->elem == FMT_C_F64) {
				double d = json_number_value(x);
				if (json_is_string(x))
					fmt_tv_nonfinite(json_string_value(x), json_string_length(x), &d);
				uint64_t u;
				memcpy(&u, &d, 8);
				fmt_wr_u64(le, u);
			} else {
				fmt_wr_u64(le, (uint64_t)json_integer_value(x));
			}
			fmt_sb_put(&b->values, (const char *)le, 8);
		}
		/* the validity bit and row count: a zero-length value after the items */
		fmt_cb_fixed(b, le, 0);
		return FMT_OK;
	}
	default:
		if (json_is_string(v)) {
			fmt_cb_bytes(b, f, json_string_value(v), json_string_length(v));
		} else if (is_big) {
			char digits[24];
			int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)big);
			fmt_cb_bytes(b, f, digits, (size_t)n);
		} else {
			char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
			if (!text)
				return fmt_fail(e, FMT_IO, "out of memory");
			fmt_cb_bytes(b, f, text, strlen(text));
			free(text);
		}
		return FMT_OK;
	}
}

/* After a sample: obj into the inference that goes on; a key the sample did not have fails. */
static fmt_kind sample_object(jsonl_state *s, json_t *obj, fmt_err *e)
{
	const char *key;
	json_t *v;
	size_t known = 0;
	for (size_t i = 0; i < s->n_cols; i++) {
		jcol *c = &s->cols[i];
		if ((v = json_object_get(obj, c->name)) != NULL) {
			c->rows_seen++;
			observe(s, c, v);
			known++;
		}
	}
	s->rows_read++;
	if (known == json_object_size(obj))
		return FMT_OK;
	json_object_foreach(obj, key, v)
		if (!column_named(s, key))
			break;
	return fmt_fail(e, FMT_SCHEMA, "line %llu: key \"%s\", which the first objects did not have",
			(unsigned long long)s->line - 1, key);
}

/* One object onto the column builders (fmt_text_row_fn). */
static fmt_kind jsonl_row(void *ctx, const fmt_schema *schema, int *got, fmt_err *e)
{
	jsonl_state *s = ctx;
	json_t *obj;
	fmt_kind k = next_object(s, &obj, e);
	*got = obj != NULL;
	if (obj && s->sampled)
		k = sample_object(s, obj, e);
	for (size_t i = 0; obj && i < s->n_cols && k == FMT_OK; i++)
		k = put(s, &schema->fields[i], json_object_get(obj, s->cols[i].name), &s->build[i], e);
	json_decref(obj);
	return k;
}

/* Whether the last object's line ends its batch (fmt_text_cuts_fn). */
static int line_cuts(const void *ctx)
{
	const jsonl_state *s = ctx;
	return fmt_text_record_cuts(s->rec_off, fmt_text_in_offset(&s->in));
}

static fmt_kind jsonl_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e)
{
	jsonl_state *s = t->format_state;
	fmt_kind k = fmt_text_next_batch(jsonl_row, line_cuts, s, s->batch_rows, s->build, &t->schema, b, done, e);
	if (k != FMT_OK || !*done || !s->sampled)
		return k;
	for (size_t i = 0; i < s->n_cols; i++) { /* the schema of the whole file is the one given */
		fmt_field all = { 0 };
		jcol_field(&s->cols[i], s->rows_read, &all);
		if ((k = fmt_field_expect(&t->schema.fields[i], &all, e)) != FMT_OK)
			return k;
	}
	t->n_rows = s->rows_read;
	return FMT_OK;
}

static void jsonl_close(fmt_table *t)
{
	jsonl_state *s = t->format_state;
	if (!s)
		return;
	for (size_t i = 0; i < s->n_cols; i++) {
		free(s->cols[i].name);
		if (s->build)
			fmt_cb_free(&s->build[i]);
	}
	fmt_nameset_free(&s->names);
	free(s->cols);
	free(s->build);
	free(s->big);
	fmt_text_in_free(&s->in);
	free(s);
	t->format_state = NULL;
}

/* ---- writing ---- */

/* One row as a JSON object line (fmt_text_put_row_fn). */
static int jsonl_put_row(const void *ctx, const fmt_batch *b, uint64_t row, fmt_sb *line, fmt_sb *scratch)
{
	const fmt_schema *s = ctx;
	fmt_row_json_text(s, b, row, line, scratch, FMT_JSON_DATA);
	fmt_sb_put(line, "\n", 1);
	return !scratch->oom;
}

static fmt_kind jsonl_write(fmt_table *in, fmt_sink *k, const fmt_write_opts *wo, fmt_err *e)
{
	const fmt_field *u = fmt_schema_unsupported(&in->schema);
	if (u)
		return fmt_fail(e, FMT_UNSUPPORTED, "column '%s' has type %s, which fmtkit does not convert",
				u->name, u->type_name);
	const fmt_schema cols = in->schema; /* not &in->schema: fmt_text_write's note */
	return fmt_text_write(in, k, "", 0, jsonl_put_row, &cols, wo ? wo->threads : 1, e);
}

static int can_hold(const fmt_field *f)
{
	return f->type != FMT_C_OTHER;
}

const fmt_table_driver fmt_table_driver_jsonl = {
	.name = "jsonl",
	.writes_text = 1,
	.extension = ".jsonl",
	.probe = probe,
	.open = jsonl_open,
	.next = jsonl_next,
	.verify = fmt_table_verify_rows,
	.write = jsonl_write,
	.can_hold = can_hold,
	.close = jsonl_close,
};
