/* JSON Lines as a table driver: one object per line; columns are the keys in the order first
 * seen, types inferred over the whole file (a first pass), missing keys and null as nulls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/arrow.h"
#include "fmt/cell.h"
#include "fmt/checked.h"
#include "fmt/dataset.h"
#include "fmt/registry.h"
#include "builder.h"
#include "textio.h"
#include "textval.h"

#define MAX_COLUMNS 10000
#define DEFAULT_BATCH 65536

enum { J_NULL = 1, J_BOOL = 2, J_INT = 4, J_REAL = 8, J_STR = 16, J_ARRAY = 32, J_OTHER = 64 };

typedef struct jcol {
	char *name;
	unsigned kinds;
	fmt_tv_infer str;          /* the strings: all timestamps? */
	long list_len;         /* arrays: common length, -1 when they differ */
	int list_real;         /* arrays hold a non-integer */
	int list_bad;          /* arrays hold something other than numbers */
	uint64_t rows_seen;
} jcol;

typedef struct jsonl_state {
	fmt_text_in in;
	uint64_t line;
	jcol *cols;
	size_t n_cols;
	uint64_t batch_rows;
	col_builder *build;
} jsonl_state;

static fmt_kind refill(jsonl_state *s, fmt_err *e)
{
	return fmt_text_in_refill(&s->in, s->line, "longer than 64 MiB", e);
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
		s->in.start += len + (nl != NULL);
		uint64_t line = s->line++;
		size_t a = 0;
		while (a < len && (p[a] == ' ' || p[a] == '\t' || p[a] == '\r'))
			a++;
		if (a == len)
			continue;
		json_error_t je;
		json_t *v = json_loadb(p, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
		if (!v)
			return fmt_fail(e, FMT_INVALID_FORMAT, "line %llu, column %d: %s", (unsigned long long)line,
					je.column, je.text);
		if (!json_is_object(v)) {
			json_decref(v);
			return fmt_fail(e, FMT_INVALID_FORMAT, "line %llu, column %zu: not a JSON object",
					(unsigned long long)line, a + 1);
		}
		*obj = v;
		return FMT_OK;
	}
}

static jcol *column(jsonl_state *s, const char *name, fmt_err *e)
{
	for (size_t i = 0; i < s->n_cols; i++)
		if (!strcmp(s->cols[i].name, name))
			return &s->cols[i];
	if (s->n_cols >= MAX_COLUMNS) {
		fmt_fail(e, FMT_INVALID_FORMAT, "more than %d distinct keys", MAX_COLUMNS);
		return NULL;
	}
	jcol *p = realloc(s->cols, (s->n_cols + 1) * sizeof *p);
	if (!p) {
		fmt_fail(e, FMT_IO, "out of memory");
		return NULL;
	}
	s->cols = p;
	jcol *c = &s->cols[s->n_cols++];
	memset(c, 0, sizeof *c);
	c->name = strdup(name);
	c->list_len = -2;
	fmt_tv_infer_init(&c->str);
	if (!c->name)
		fmt_fail(e, FMT_IO, "out of memory");
	return c->name ? c : NULL;
}

static void observe(jcol *c, json_t *v)
{
	size_t i;
	json_t *x;
	switch (json_typeof(v)) {
	case JSON_NULL: c->kinds |= J_NULL; break;
	case JSON_TRUE: case JSON_FALSE: c->kinds |= J_BOOL; break;
	case JSON_INTEGER: c->kinds |= J_INT; break;
	case JSON_REAL: c->kinds |= J_REAL; break;
	case JSON_STRING:
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
			else if (!json_is_integer(x))
				c->list_bad = 1;
		}
		break;
	default: c->kinds |= J_OTHER;
	}
}

static void jcol_field(const jcol *c, uint64_t rows, fmt_field *f)
{
	unsigned k = c->kinds & ~(unsigned)J_NULL;
	f->name = c->name;
	f->nullable = (c->kinds & J_NULL) || c->rows_seen < rows;
	if (k == J_BOOL)
		f->type = FMT_C_BOOL;
	else if (k == J_INT)
		f->type = FMT_C_I64;
	else if (k && !(k & ~(unsigned)(J_INT | J_REAL)))
		f->type = FMT_C_F64;
	else if (k == J_STR && (c->str.can & TV_TIME)) {
		f->type = FMT_C_TIMESTAMP;
		f->unit = fmt_tv_unit_for_digits(c->str.digits);
		f->timezone = "UTC";
	} else if (k == J_ARRAY && c->list_len > 0 && !c->list_bad) {
		f->type = FMT_C_FIXED_SIZE_LIST;
		f->list_size = (uint32_t)c->list_len;
		f->elem = c->list_real ? FMT_C_F64 : FMT_C_I64;
	} else
		f->type = FMT_C_UTF8;
}

/* A flat object (no object values: a row, not a document such as an index or a config): what
 * a file of one JSON Lines row holds. */
static int flat_object(const json_t *v)
{
	const char *key;
	json_t *value;
	if (!json_is_object(v) || json_object_size(v) == 0)
		return 0;
	json_object_foreach((json_t *)v, key, value)
		if (json_is_object(value))
			return 0;
	return 1;
}

/* A complete JSON object on the first line and another object starting the second: below the
 * index drivers, above a safetensors length that happens to be followed by '{'. A whole file
 * of one line holding one flat object is a one-row dataset (30); a one-line document with
 * nested objects is not taken for a dataset. */
static int probe(const uint8_t *head, size_t n, uint64_t size)
{
	size_t i = 0;
	while (i < n && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t'))
		i++;
	if (i == n || head[i] != '{' || memchr(head, 0, n))
		return 0;
	const uint8_t *nl = memchr(head + i, '\n', n - i);
	if (!nl && n < size)
		return 20;
	const uint8_t *line_end = nl ? nl : head + n;
	json_t *v = json_loadb((const char *)head + i, (size_t)(line_end - (head + i)), JSON_REJECT_DUPLICATES, NULL);
	int ok = json_is_object(v), flat = flat_object(v);
	json_decref(v);
	if (!ok)
		return 0;
	size_t k = (size_t)(line_end - head) + (nl != NULL);
	while (k < n && (head[k] == ' ' || head[k] == '\n' || head[k] == '\r' || head[k] == '\t'))
		k++;
	if (k == n)
		return n < size ? 40 : flat ? 30 : 0;
	return head[k] == '{' ? 70 : 0;
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
		rows++;
		json_object_foreach(obj, key, v) {
			jcol *c = column(s, key, e);
			if (!c) {
				json_decref(obj);
				return e->kind;
			}
			c->rows_seen++;
			observe(c, v);
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
	}
	t->n_rows = rows;
	fmt_text_in_seek(&s->in, 0);
	s->line = 1;
	s->build = calloc(s->n_cols, sizeof *s->build);
	return s->build ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
}

static fmt_kind put(jsonl_state *s, const fmt_field *f, json_t *v, col_builder *b, fmt_err *e)
{
	uint8_t le[8];
	if (!v || json_is_null(v)) {
		fmt_cb_null(b, f);
		return FMT_OK;
	}
	switch (f->type) {
	case FMT_C_BOOL:
		fmt_cb_bool(b, json_is_true(v));
		return FMT_OK;
	case FMT_C_I64:
		fmt_wr_u64(le, (uint64_t)json_integer_value(v));
		fmt_cb_fixed(b, le, 8);
		return FMT_OK;
	case FMT_C_F64: {
		double d = json_number_value(v);
		uint64_t u;
		memcpy(&u, &d, 8);
		fmt_wr_u64(le, u);
		fmt_cb_fixed(b, le, 8);
		return FMT_OK;
	}
	case FMT_C_TIMESTAMP: {
		int64_t secs, out;
		uint32_t ns;
		int nd;
		if (!fmt_tv_rfc3339(json_string_value(v), json_string_length(v), &secs, &ns, &nd) ||
		    !fmt_tv_to_unit(secs, ns, f->unit, &out))
			return fmt_fail(e, FMT_INVALID_FORMAT, "line %llu: key \"%s\": timestamp out of range",
					(unsigned long long)s->line - 1, f->name);
		fmt_wr_u64(le, (uint64_t)out);
		fmt_cb_fixed(b, le, 8);
		return FMT_OK;
	}
	case FMT_C_FIXED_SIZE_LIST: {
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x) {
			if (f->elem == FMT_C_F64) {
				double d = json_number_value(x);
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

/* One object onto the column builders (fmt_text_row_fn). */
static fmt_kind jsonl_row(void *ctx, const fmt_schema *schema, int *got, fmt_err *e)
{
	jsonl_state *s = ctx;
	json_t *obj;
	fmt_kind k = next_object(s, &obj, e);
	*got = obj != NULL;
	for (size_t i = 0; obj && i < s->n_cols && k == FMT_OK; i++)
		k = put(s, &schema->fields[i], json_object_get(obj, s->cols[i].name), &s->build[i], e);
	json_decref(obj);
	return k;
}

static fmt_kind jsonl_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e)
{
	jsonl_state *s = t->format_state;
	return fmt_text_next_batch(jsonl_row, s, s->batch_rows, s->build, &t->schema, b, done, e);
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
	free(s->cols);
	free(s->build);
	fmt_text_in_free(&s->in);
	free(s);
	t->format_state = NULL;
}

/* ---- writing ---- */

typedef struct jsonl_out {
	const fmt_schema *s;
	fmt_sb cell;
} jsonl_out;

/* One row as a JSON object line (fmt_text_put_row_fn). */
static int jsonl_put_row(void *ctx, const fmt_batch *b, uint64_t row, fmt_sb *line)
{
	jsonl_out *o = ctx;
	fmt_row_json_text(o->s, b, row, line, &o->cell);
	fmt_sb_put(line, "\n", 1);
	return !o->cell.oom;
}

static fmt_kind jsonl_write(fmt_table *in, fmt_sink *k, const fmt_write_opts *wo, fmt_err *e)
{
	(void)wo;
	jsonl_out o = { &in->schema, { 0 } };
	const fmt_field *u = fmt_schema_unsupported(&in->schema);
	if (u)
		return fmt_fail(e, FMT_UNSUPPORTED, "column '%s' has type %s, which fmtkit does not convert",
				u->name, u->type_name);
	fmt_kind r = fmt_text_write(in, k, "", 0, jsonl_put_row, &o, e);
	fmt_sb_free(&o.cell);
	return r;
}

static int can_hold(const fmt_field *f)
{
	return f->type != FMT_C_OTHER;
}

const fmt_table_driver fmt_table_driver_jsonl = {
	.name = "jsonl",
	.extension = ".jsonl",
	.probe = probe,
	.open = jsonl_open,
	.next = jsonl_next,
	.write = jsonl_write,
	.can_hold = can_hold,
	.close = jsonl_close,
};
