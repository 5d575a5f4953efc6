/* Schemas, record batches and their checks: what every table driver produces and every tool
 * reads (fmt/table.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/encrypt.h"
#include "fmt/nameset.h"
#include "fmt/out.h"
#include "fmt/table.h"
#include "fmt/thread.h"
#include "rows_internal.h"

static const struct { const char *name; size_t width; } ctypes[] = {
	[FMT_C_BOOL] = { "bool", 0 },
	[FMT_C_I8] = { "int8", 1 }, [FMT_C_I16] = { "int16", 2 },
	[FMT_C_I32] = { "int32", 4 }, [FMT_C_I64] = { "int64", 8 },
	[FMT_C_U8] = { "uint8", 1 }, [FMT_C_U16] = { "uint16", 2 },
	[FMT_C_U32] = { "uint32", 4 }, [FMT_C_U64] = { "uint64", 8 },
	[FMT_C_F16] = { "float16", 2 }, [FMT_C_F32] = { "float32", 4 }, [FMT_C_F64] = { "float64", 8 },
	[FMT_C_UTF8] = { "utf8", 0 }, [FMT_C_LARGE_UTF8] = { "large_utf8", 0 },
	[FMT_C_BINARY] = { "binary", 0 },
	[FMT_C_DATE32] = { "date32", 4 }, [FMT_C_TIMESTAMP] = { "timestamp", 8 },
	[FMT_C_FIXED_SIZE_LIST] = { "fixed_size_list", 0 },
	[FMT_C_OTHER] = { "other", 0 },
};

static int ctype_known(fmt_ctype t)
{
	return (unsigned)t < sizeof ctypes / sizeof ctypes[0];
}

const char *fmt_ctype_name(fmt_ctype t)
{
	return ctype_known(t) ? ctypes[t].name : "?";
}

size_t fmt_ctype_width(fmt_ctype t)
{
	return ctype_known(t) ? ctypes[t].width : 0;
}

static int has_offsets(fmt_ctype t)
{
	return t == FMT_C_UTF8 || t == FMT_C_LARGE_UTF8 || t == FMT_C_BINARY;
}

fmt_kind fmt_field_row_width(const fmt_field *f, uint64_t *width, fmt_err *e)
{
	if (f->type != FMT_C_FIXED_SIZE_LIST) {
		*width = fmt_ctype_width(f->type);
		return FMT_OK;
	}
	if (fmt_mul_u64(fmt_ctype_width(f->elem), f->list_size, width))
		return fmt_fail(e, FMT_INVALID_FORMAT, "column '%s': list size %u overflows", f->name,
				f->list_size);
	return FMT_OK;
}

/* ---- schemas ---- */

void fmt_schema_init(fmt_schema *s)
{
	memset(s, 0, sizeof *s);
}

void fmt_schema_free(fmt_schema *s)
{
	for (size_t i = 0; i < s->n_fields; i++) {
		free(s->fields[i].name);
		free(s->fields[i].timezone);
		free(s->fields[i].type_name);
	}
	for (size_t i = 0; i < s->n_meta; i++) {
		free(s->meta[i].key);
		free(s->meta[i].value);
	}
	free(s->fields);
	free(s->meta);
	fmt_schema_init(s);
}

/* Room for one more item in a growing array of size-byte items. */
static fmt_kind grow(void **items, size_t n, size_t *cap, size_t size, fmt_err *e)
{
	if (n < *cap)
		return FMT_OK;
	size_t want = *cap ? *cap * 2 : 8;
	void *p = want <= SIZE_MAX / size ? realloc(*items, want * size) : NULL;
	if (!p)
		return fmt_fail(e, FMT_IO, "out of memory");
	*items = p;
	*cap = want;
	return FMT_OK;
}

static char *dup_or_null(const char *s, int *failed)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*failed = 1;
	return d;
}

fmt_kind fmt_schema_add_field(fmt_schema *s, const fmt_field *f, fmt_err *e)
{
	if (grow((void **)&s->fields, s->n_fields, &s->cap_fields, sizeof *s->fields, e) != FMT_OK)
		return e->kind;
	fmt_field c = *f;
	int failed = 0;
	c.name = dup_or_null(f->name ? f->name : "", &failed);
	c.timezone = dup_or_null(f->timezone, &failed);
	c.type_name = dup_or_null(f->type_name, &failed);
	if (failed) {
		free(c.name);
		free(c.timezone);
		free(c.type_name);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	s->fields[s->n_fields++] = c;
	return FMT_OK;
}

fmt_kind fmt_schema_add_meta(fmt_schema *s, const char *key, const char *value, fmt_err *e)
{
	if (grow((void **)&s->meta, s->n_meta, &s->cap_meta, sizeof *s->meta, e) != FMT_OK)
		return e->kind;
	int failed = 0;
	fmt_kv kv = { dup_or_null(key, &failed), dup_or_null(value ? value : "", &failed) };
	if (failed) {
		free(kv.key);
		free(kv.value);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	s->meta[s->n_meta++] = kv;
	return FMT_OK;
}

long fmt_schema_find(const fmt_schema *s, const char *name)
{
	for (size_t i = 0; i < s->n_fields; i++)
		if (strcmp(s->fields[i].name, name) == 0)
			return (long)i;
	return -1;
}

static int list_elem_ok(fmt_ctype t)
{
	return ctype_known(t) && fmt_ctype_width(t) > 0;
}

static fmt_kind field_check(const fmt_field *f, size_t i, fmt_nameset *seen, fmt_err *e)
{
	if (!f->name[0])
		return fmt_fail(e, FMT_INVALID_FORMAT, "column %zu has an empty name", i + 1);
	if (!ctype_known(f->type))
		return fmt_fail(e, FMT_UNSUPPORTED, "column '%s': unknown type %d", f->name, (int)f->type);
	int added = fmt_nameset_add(seen, f->name);
	if (added < 0)
		return fmt_fail(e, FMT_IO, "out of memory");
	if (!added)
		return fmt_fail(e, FMT_INVALID_FORMAT, "column name '%s' appears twice", f->name);
	if (f->type == FMT_C_TIMESTAMP && (unsigned)f->unit > FMT_TU_NS)
		return fmt_fail(e, FMT_INVALID_FORMAT, "column '%s': unknown time unit %d", f->name, (int)f->unit);
	if (f->type == FMT_C_FIXED_SIZE_LIST && (!list_elem_ok(f->elem) || f->list_size == 0))
		return fmt_fail(e, FMT_UNSUPPORTED,
				"column '%s': a fixed_size_list needs a fixed-width element type and a size >= 1", f->name);
	return FMT_OK;
}

fmt_kind fmt_schema_check(const fmt_schema *s, fmt_err *e)
{
	fmt_nameset seen = { 0 };
	fmt_kind k = FMT_OK;
	if (s->n_fields > FMT_TABLE_MAX_COLUMNS)
		return fmt_fail(e, FMT_INVALID_FORMAT, "%zu columns: more than %d", s->n_fields, FMT_TABLE_MAX_COLUMNS);
	for (size_t i = 0; i < s->n_fields && k == FMT_OK; i++)
		k = field_check(&s->fields[i], i, &seen, e);
	fmt_nameset_free(&seen);
	return k;
}

static const char *unit_name(fmt_time_unit u)
{
	static const char *const names[] = { "s", "ms", "us", "ns" };
	return (unsigned)u <= FMT_TU_NS ? names[u] : "?";
}

static json_t *field_json(const fmt_field *f)
{
	json_t *o = json_object();
	const char *type = f->type == FMT_C_OTHER && f->type_name ? f->type_name : fmt_ctype_name(f->type);
	json_object_set_new(o, "name", fmt_json_string(f->name, strlen(f->name)));
	json_object_set_new(o, "type", fmt_json_string(type, strlen(type)));
	json_object_set_new(o, "nullable", json_boolean(f->nullable));
	if (f->type == FMT_C_TIMESTAMP) {
		json_object_set_new(o, "unit", json_string(unit_name(f->unit)));
		json_object_set_new(o, "timezone", f->timezone ? fmt_json_string(f->timezone, strlen(f->timezone)) : json_null());
	}
	if (f->type == FMT_C_FIXED_SIZE_LIST) {
		json_object_set_new(o, "element", json_string(fmt_ctype_name(f->elem)));
		json_object_set_new(o, "list_size", json_integer(f->list_size));
	}
	return o;
}

json_t *fmt_schema_json(const fmt_schema *s)
{
	json_t *fields = json_array(), *meta = json_object(), *o = json_object();
	if (!fields || !meta || !o) {
		json_decref(fields);
		json_decref(meta);
		json_decref(o);
		return NULL;
	}
	for (size_t i = 0; i < s->n_fields; i++)
		json_array_append_new(fields, field_json(&s->fields[i]));
	for (size_t i = 0; i < s->n_meta; i++)
		fmt_json_set(meta, s->meta[i].key, fmt_json_string(s->meta[i].value, strlen(s->meta[i].value)));
	json_object_set_new(o, "fields", fields);
	json_object_set_new(o, "metadata", meta);
	return o;
}

/* ---- batches ---- */

fmt_kind fmt_batch_init(fmt_batch *b, size_t n_columns, fmt_err *e)
{
	memset(b, 0, sizeof *b);
	b->first_row = FMT_ROWS_UNKNOWN;
	if (n_columns == 0)
		return FMT_OK;
	b->columns = calloc(n_columns, sizeof *b->columns);
	if (!b->columns)
		return fmt_fail(e, FMT_IO, "out of memory");
	b->n_columns = n_columns;
	return FMT_OK;
}

/* The batch buffers kept for the next batches: a few batches of a reader's columns. */
static fmt_keep batch_keep = FMT_KEEP_INIT(FMT_KEEP_SLOTS_MAX, 8u << 20, 48u << 20);

void *fmt_batch_buffer(size_t n)
{
	/* sizes rounded up, so that a kept buffer holds the next batch's slightly larger column; a
	 * small one (below 64 KiB) to 64 bytes only: a batch of 4000 columns of 2 KiB each took
	 * twice its bytes rounded to 4 KiB (and such buffers are malloc's, never kept for long) */
	size_t step = n >= (1u << 20) ? (size_t)1 << 16 : n >= (1u << 16) ? (size_t)1 << 12 : 64;
	return fmt_keep_take(&batch_keep, n > SIZE_MAX - step ? n : (n + step - 1) & ~(step - 1));
}

void fmt_batch_buffer_free(void *p)
{
	fmt_keep_give(&batch_keep, p);
}

/* An owned pointer with its lowest bit set (malloc's alignment leaves it clear) is a kept
 * buffer: it goes back to batch_keep; with its second bit set, a share of a sliced batch. */
static void owned_free(void *p)
{
	if ((uintptr_t)p & 1)
		fmt_batch_buffer_free((char *)p - 1);
	else if ((uintptr_t)p & 2)
		fmt_batch_share_release((char *)p - 2);
	else
		free(p);
}

void fmt_batch_free(fmt_batch *b)
{
	for (size_t i = 0; i < b->n_owned; i++)
		owned_free(b->owned[i]);
	free(b->owned);
	free(b->columns);
	memset(b, 0, sizeof *b);
}

fmt_kind fmt_batch_own(fmt_batch *b, void *p, fmt_err *e)
{
	if (grow((void **)&b->owned, b->n_owned, &b->cap_owned, sizeof *b->owned, e) != FMT_OK) {
		owned_free(p);
		return e->kind;
	}
	b->owned[b->n_owned++] = p;
	return FMT_OK;
}

fmt_kind fmt_batch_own_buffer(fmt_batch *b, void *p, fmt_err *e)
{
	return fmt_batch_own(b, p ? (char *)p + 1 : NULL, e);
}

static int bit(const uint8_t *bits, uint64_t i)
{
	return (bits[i / 8] >> (i % 8)) & 1;
}

/* Bytes holding n bits. */
static uint64_t bitmap_bytes(uint64_t n)
{
	return n / 8 + (n % 8 != 0);
}

static uint64_t count_zero_bits(const uint8_t *bits, uint64_t n)
{
	uint64_t zeros = 0;
	for (uint64_t i = 0; i < n / 8; i++)
		zeros += 8u - (unsigned)__builtin_popcount(bits[i]);
	for (uint64_t i = n / 8 * 8; i < n; i++)
		zeros += !bit(bits, i);
	return zeros;
}

static uint64_t offset_at(const void *offsets, fmt_ctype t, uint64_t i)
{
	if (t == FMT_C_LARGE_UTF8) {
		int64_t v;
		memcpy(&v, (const uint8_t *)offsets + i * 8, 8);
		return v < 0 ? UINT64_MAX : (uint64_t)v;
	}
	int32_t v;
	memcpy(&v, (const uint8_t *)offsets + i * 4, 4);
	return v < 0 ? UINT64_MAX : (uint64_t)v;
}

/* The offsets of a string column: start at 0, never decrease, end within values_len. */
static int ascii_only(const uint8_t *p, size_t n)
{
	uint64_t acc = 0;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		acc |= w;
	}
	for (; i < n; i++)
		acc |= p[i];
	return !(acc & 0x8080808080808080u);
}

/* Rows are named in messages counted from base (the batch's first row in its table). */
static fmt_kind check_offsets(const fmt_field *f, const fmt_column *c, uint64_t rows, uint64_t base, fmt_err *e)
{
	if (!c->offsets)
		return fmt_fail(e, FMT_INVALID_FORMAT, "column '%s': no offsets", f->name);
	if (rows >= UINT64_MAX / 8)
		return fmt_fail(e, FMT_INVALID_FORMAT, "column '%s': %llu rows is too many", f->name,
				(unsigned long long)rows);
	uint64_t prev = offset_at(c->offsets, f->type, 0);
	if (prev != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "column '%s': first offset is not 0", f->name);
	for (uint64_t i = 1; i <= rows; i++) {
		uint64_t o = offset_at(c->offsets, f->type, i);
		if (o < prev || o == UINT64_MAX)
			return fmt_fail(e, FMT_INVALID_FORMAT, "column '%s': offset %llu of row %llu goes backwards",
					f->name, (unsigned long long)o, (unsigned long long)(base + i - 1));
		prev = o;
	}
	if (prev > c->values_len)
		return fmt_fail(e, FMT_INVALID_FORMAT,
				"column '%s': strings end at byte %llu, past the %llu bytes of values", f->name,
				(unsigned long long)prev, (unsigned long long)c->values_len);
	/* all of the values ASCII (the common case): every row is valid UTF-8 */
	if (f->type != FMT_C_BINARY && !ascii_only(c->values, (size_t)prev)) {
		for (uint64_t i = 0; i < rows; i++) {
			uint64_t a = offset_at(c->offsets, f->type, i), z = offset_at(c->offsets, f->type, i + 1);
			if (!fmt_column_is_null(c, i) && !fmt_utf8_valid((const char *)c->values + a, (size_t)(z - a)))
				return fmt_fail(e, FMT_INVALID_FORMAT, "column '%s': row %llu is not valid UTF-8",
						f->name, (unsigned long long)(base + i));
		}
	}
	return FMT_OK;
}

static fmt_kind check_values(const fmt_field *f, const fmt_column *c, uint64_t rows, fmt_err *e)
{
	uint64_t need;
	if (f->type == FMT_C_BOOL) {
		need = bitmap_bytes(rows);
	} else {
		uint64_t width;
		if (fmt_field_row_width(f, &width, e) != FMT_OK)
			return e->kind;
		if (fmt_mul_u64(width, rows, &need))
			return fmt_fail(e, FMT_INVALID_FORMAT, "column '%s': size overflows", f->name);
	}
	if (need > 0 && (!c->values || c->values_len < need))
		return fmt_fail(e, FMT_INVALID_FORMAT, "column '%s': %llu bytes of values for %llu rows, need %llu",
				f->name, (unsigned long long)(c->values ? c->values_len : 0),
				(unsigned long long)rows, (unsigned long long)need);
	return FMT_OK;
}

static fmt_kind check_column(const fmt_field *f, const fmt_column *c, uint64_t rows, uint64_t base, fmt_err *e)
{
	uint64_t nulls = c->validity ? count_zero_bits(c->validity, rows) : 0;
	if (nulls != c->null_count)
		return fmt_fail(e, FMT_INVALID_FORMAT, "column '%s': null count %llu, bitmap says %llu", f->name,
				(unsigned long long)c->null_count, (unsigned long long)nulls);
	if (nulls && !f->nullable)
		return fmt_fail(e, FMT_SCHEMA, "column '%s' is not nullable but has %llu nulls", f->name,
				(unsigned long long)nulls);
	return has_offsets(f->type) ? check_offsets(f, c, rows, base, e) : check_values(f, c, rows, e);
}

static uint64_t named_from(const fmt_batch *b)
{
	return b->first_row == FMT_ROWS_UNKNOWN ? 0 : b->first_row;
}

fmt_kind fmt_batch_check(const fmt_schema *s, const fmt_batch *b, fmt_err *e)
{
	return fmt_batch_check_from(s, b, named_from(b), e);
}

/* other_ok: a column of a type this build does not convert, left empty by its reader, is passed
 * by (fmt-verify reading the columns the tools can take with --exclude). */
static fmt_kind check_batch(const fmt_schema *s, const fmt_batch *b, uint64_t first_row, int other_ok, fmt_err *e)
{
	if (b->n_columns != s->n_fields)
		return fmt_fail(e, FMT_SCHEMA, "a batch has %zu columns, the schema %zu", b->n_columns,
				s->n_fields);
	for (size_t i = 0; i < b->n_columns; i++)
		if (s->fields[i].type == FMT_C_OTHER && !other_ok)
			return fmt_fail(e, FMT_UNSUPPORTED, "column '%s' has type %s, which fmtkit does not convert",
					s->fields[i].name, s->fields[i].type_name ? s->fields[i].type_name : "other");
		else if (s->fields[i].type != FMT_C_OTHER &&
			 check_column(&s->fields[i], &b->columns[i], b->n_rows, first_row, e) != FMT_OK)
			return e->kind;
	return FMT_OK;
}

fmt_kind fmt_batch_check_from(const fmt_schema *s, const fmt_batch *b, uint64_t first_row, fmt_err *e)
{
	return check_batch(s, b, first_row, 0, e);
}

int fmt_column_is_null(const fmt_column *c, uint64_t row)
{
	return c->validity && !bit(c->validity, row);
}

int fmt_column_bool(const fmt_column *c, uint64_t row)
{
	return bit(c->values, row);
}

void fmt_column_bytes(const fmt_column *c, fmt_ctype type, uint64_t row, const uint8_t **p, size_t *n)
{
	uint64_t a = offset_at(c->offsets, type, row), z = offset_at(c->offsets, type, row + 1);
	*p = c->values + a;
	*n = (size_t)(z - a);
}

/* ---- tables ---- */

void fmt_table_init(fmt_table *t)
{
	memset(t, 0, sizeof *t);
	fmt_schema_init(&t->schema);
	t->n_rows = FMT_ROWS_UNKNOWN;
}

void fmt_table_free(fmt_table *t)
{
	if (t->driver && t->driver->close)
		t->driver->close(t);
	if (t->has_source)
		fmt_source_close(&t->source);
	fmt_schema_free(&t->schema);
	free(t->path);
	fmt_table_init(t);
}

/* The reader's hooks (rows_gate, secret, decrypt) take its own state, not a wrapper's: a gate
 * given a wrapper's state read it as the reader's and let the rows of an expired licence by. */
static const fmt_table_driver *reader_of(const fmt_table *t)
{
	return t->reader ? t->reader : t->driver;
}

static void *reader_state_of(const fmt_table *t)
{
	return t->reader_state ? t->reader_state : t->format_state;
}

static void *enter_reader(fmt_table *t)
{
	void *outer = t->format_state;
	t->format_state = reader_state_of(t);
	return outer;
}

fmt_kind fmt_table_rows_gate(fmt_table *t, fmt_err *e)
{
	const fmt_table_driver *d = reader_of(t);
	if (t->rows_gated || !d->rows_gate)
		return FMT_OK;
	void *outer = enter_reader(t);
	fmt_kind k = d->rows_gate(t, e);
	t->format_state = outer;
	if (k != FMT_OK)
		fmt_err_file(e, t->path);
	t->rows_gated = k == FMT_OK;
	return k;
}

/* d's next batch for t; the reader's are placed in the file, unless it placed them itself. */
static fmt_kind driver_next(fmt_table *t, const fmt_table_driver *d, fmt_batch *b, int *done, fmt_err *e)
{
	fmt_kind k = d->next(t, b, done, e);
	if (k != FMT_OK || *done || d != t->reader)
		return k;
	if (b->first_row == FMT_ROWS_UNKNOWN)
		b->first_row = t->rows_passed;
	t->rows_passed = b->first_row + b->n_rows;
	return FMT_OK;
}

fmt_kind fmt_table_names_utf8(fmt_table *t, fmt_err *e)
{
	for (size_t i = 0; !t->names_checked && i < t->schema.n_fields; i++) {
		const char *name = t->schema.fields[i].name;
		if (!fmt_utf8_valid(name, strlen(name)))
			return fmt_fail(e, FMT_INVALID_FORMAT, "column %zu: its name is not valid UTF-8", i + 1);
	}
	t->names_checked = 1;
	return FMT_OK;
}

/* fmt_table_next; other_ok as for check_batch. */
static fmt_kind next_checked(fmt_table *t, fmt_batch *b, int *done, int other_ok, fmt_err *e)
{
	fmt_kind k = fmt_batch_init(b, t->schema.n_fields, e);
	if (k == FMT_OK)
		k = fmt_table_names_utf8(t, e);
	if (k == FMT_OK)
		k = fmt_table_rows_gate(t, e);
	if (k == FMT_OK)
		k = driver_next(t, t->driver, b, done, e);
	if (k == FMT_OK && !*done)
		k = check_batch(&t->schema, b, named_from(b), other_ok, e);
	if (k != FMT_OK) {
		fmt_err_file(e, t->path);
		fmt_batch_free(b);
	}
	return k;
}

fmt_kind fmt_table_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e)
{
	return next_checked(t, b, done, 0, e);
}

/* fmt_table_each_batch; other_ok as for check_batch. */
static fmt_kind each_checked(fmt_table *t, int other_ok, fmt_kind (*fn)(void *ctx, const fmt_batch *b, fmt_err *e),
			     void *ctx, fmt_err *e)
{
	for (;;) {
		fmt_batch b;
		int done = 0;
		fmt_kind k = next_checked(t, &b, &done, other_ok, e);
		if (k == FMT_OK && !done)
			k = fn(ctx, &b, e);
		fmt_batch_free(&b); /* again after next_checked's own error: a no-op */
		if (k != FMT_OK || done)
			return k;
	}
}

fmt_kind fmt_table_each_batch(fmt_table *t, fmt_kind (*fn)(void *ctx, const fmt_batch *b, fmt_err *e), void *ctx,
			      fmt_err *e)
{
	return each_checked(t, 0, fn, ctx, e);
}

static fmt_kind count_rows(void *rows, const fmt_batch *b, fmt_err *e)
{
	(void)e;
	*(uint64_t *)rows += b->n_rows;
	return FMT_OK;
}

fmt_kind fmt_table_count_rows(fmt_table *t, uint64_t *n, fmt_err *e)
{
	*n = 0;
	if (t->n_rows != FMT_ROWS_UNKNOWN) {
		*n = t->n_rows;
		return FMT_OK;
	}
	return fmt_table_each_batch(t, count_rows, n, e);
}

fmt_kind fmt_table_verify_rows(fmt_table *t, const struct fmt_verify_opts *o, fmt_err *e)
{
	uint64_t rows = 0;
	if (!o)
		return FMT_OK;
	fmt_kind k = each_checked(t, 1, count_rows, &rows, e);
	if (k == FMT_OK)
		t->n_rows = rows;
	return k;
}

int fmt_table_secret(const fmt_table *t)
{
	const fmt_table_driver *d = reader_of(t);
	if (!d->secret)
		return FMT_SECRET_NONE;
	fmt_table as_read = *t;
	as_read.format_state = reader_state_of(t);
	return d->secret(&as_read);
}

fmt_kind fmt_table_unlock(fmt_table *t, struct fmt_decrypt_keys *dk, struct fmt_keyset *ks, int now,
			  fmt_err *e)
{
	fmt_kind k = FMT_OK;
	t->keys = ks;
	if (fmt_table_secret(t) == FMT_SECRET_PASSWORD && !ks->password && dk)
		k = fmt_decrypt_keys_prompt(dk, ks, e);
	if (k == FMT_OK && now && fmt_table_secret(t) != FMT_SECRET_NONE && reader_of(t)->decrypt) {
		void *outer = enter_reader(t);
		k = reader_of(t)->decrypt(t, e);
		t->format_state = outer;
	}
	if (k != FMT_OK)
		fmt_err_file(e, t->path);
	return k;
}

/* ---- wrappers ---- */

/* A wrapper's verify: the reader's would be given the wrapper's state. */
static fmt_kind verify_wrapped(fmt_table *t, const struct fmt_verify_opts *o, fmt_err *e)
{
	(void)t;
	(void)o;
	return fmt_fail(e, FMT_INTERNAL, "a table verified under a wrapper (verify it before --include, --where...)");
}

void fmt_table_wrap_put(fmt_table *t, fmt_table_wrap *w, void *state,
			fmt_kind (*next)(fmt_table *, fmt_batch *, int *, fmt_err *), void (*close)(fmt_table *))
{
	w->d = *t->driver;
	w->d.next = next;
	/* the inner driver's hooks take its own state, not the wrapper's */
	w->d.columns_used = NULL;
	w->d.skip_blocks = NULL;
	w->d.verify_as_read = NULL;
	w->d.describe = NULL;       /* the tools describe a table before they wrap it */
	w->d.verify_facts = NULL;
	w->d.rows_gate = NULL;      /* these three: fmt_table_* call the reader's with its state */
	w->d.secret = NULL;
	w->d.decrypt = NULL;
	if (w->d.verify)
		w->d.verify = verify_wrapped;
	if (close)
		w->d.close = close;
	w->inner = t->driver;
	w->inner_state = t->format_state;
	if (!t->reader_state)
		t->reader_state = t->format_state;
	t->driver = &w->d;
	t->format_state = state;
}

fmt_kind fmt_table_wrap_next(fmt_table *t, fmt_table_wrap *w, fmt_batch *b, int *done, fmt_err *e)
{
	void *state = t->format_state;
	t->format_state = w->inner_state;
	fmt_kind k = driver_next(t, w->inner, b, done, e);
	t->format_state = state;
	return k;
}

void fmt_table_wrap_remove(fmt_table *t, fmt_table_wrap *w, int close)
{
	t->driver = w->inner;
	t->format_state = w->inner_state;
	if (close && w->inner->close)
		w->inner->close(t);
}
