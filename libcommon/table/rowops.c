/* The row operations (fmt/rowops.h): a view that wraps a table's driver, as the column
 * selection does (table_select.c). Streaming operations filter each batch as it comes; --sort,
 * --shuffle and --sample N pull every row into an external sort first (extsort.c). */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "fmt/xxh3.h"
#include "fmt/cell.h"
#include "fmt/checked.h"
#include "fmt/extsort.h"
#include "fmt/half.h"
#include "fmt/rowops.h"
#include "fmt/textval.h"
#include "rows_internal.h"

#define OUT_BATCH_ROWS 65536u
#define OUT_BATCH_BYTES (16u << 20)

enum { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_NULL, OP_NOT_NULL };

typedef struct where_test {
	size_t col;
	int op;
	fmt_sb key;                  /* the value's ordered key (fmt_row_key) */
} where_test;

typedef struct sort_col { size_t col; int desc; } sort_col;


typedef struct rowops {
	fmt_table_wrap w;
	fmt_rowops_opts o;
	where_test *wheres;
	size_t n_wheres;
	sort_col *sorts;
	size_t n_sorts;
	size_t *dedupe_cols;
	size_t n_dedupe_cols;
	fmt_hash_set seen_rows;
	split_state *split;
	uint64_t passed;             /* rows through --where and --dedupe: their ordinal */
	uint64_t emitted;            /* rows through everything before --rows */
	int finished;                /* --rows reached its end, or the input did */
	fmt_extsort *sample, *order; /* --sample N; --sort/--shuffle/--sample N's output order */
	int drained;
	fmt_rows_out out;
	fmt_sb key, row, scratch;
	fmt_sb range_lo, range_hi;   /* a block's least and greatest keys (skip_blocks) */
} rowops;

int fmt_rowops_any(const fmt_rowops_opts *o)
{
	return o->n_where || o->has_range || o->sample_n || o->sample_fraction > 0 || o->shuffle || o->dedupe ||
	       o->n_sort || o->split;
}

/* ---- parsing ---- */

static fmt_kind no_column(const fmt_schema *s, const char *opt, const char *arg, const char *name, size_t n,
			  fmt_err *e)
{
	char cols[256];
	fmt_schema_names_text(s, cols, sizeof cols);
	return fmt_fail(e, FMT_USAGE, "%s '%s': no column '%.*s' (the columns: %s)", opt, arg, (int)n, name, cols);
}

static long find_column(const fmt_schema *s, const char *name, size_t n)
{
	for (size_t i = 0; i < s->n_fields; i++)
		if (strlen(s->fields[i].name) == n && memcmp(s->fields[i].name, name, n) == 0)
			return (long)i;
	return -1;
}

static int parse_hex(const char *s, size_t n, fmt_sb *out)
{
	if (n % 2)
		return 0;
	for (size_t i = 0; i < n; i += 2) {
		char pair[3] = { s[i], s[i + 1], 0 }, *end;
		if (!isxdigit((unsigned char)s[i]) || !isxdigit((unsigned char)s[i + 1]))
			return 0;
		char c = (char)strtoul(pair, &end, 16);
		fmt_sb_put(out, &c, 1);
	}
	return 1;
}

/* The value text as the little-endian bytes of f's type (one value of a one-row column), or
 * 0 when it is not one. */
static int literal_value(const fmt_field *f, const char *s, size_t n, uint8_t raw[8], fmt_sb *bytes)
{
	int64_t i;
	uint64_t u;
	double d;
	int32_t days;
	static const int64_t lo[] = { INT8_MIN, INT16_MIN, INT32_MIN, INT64_MIN };
	static const int64_t hi[] = { INT8_MAX, INT16_MAX, INT32_MAX, INT64_MAX };
	static const uint64_t uhi[] = { UINT8_MAX, UINT16_MAX, UINT32_MAX, UINT64_MAX };
	switch (f->type) {
	case FMT_C_BOOL: {
		int b;
		if (!fmt_tv_bool(s, n, &b))
			return 0;
		raw[0] = (uint8_t)(b != 0);
		return 1;
	}
	case FMT_C_I8: case FMT_C_I16: case FMT_C_I32: case FMT_C_I64: {
		int w = f->type - FMT_C_I8;
		if (!fmt_tv_int64(s, n, &i) || i < lo[w] || i > hi[w])
			return 0;
		fmt_wr_u64(raw, (uint64_t)i);
		return 1;
	}
	case FMT_C_U8: case FMT_C_U16: case FMT_C_U32: case FMT_C_U64:
		if (!fmt_tv_uint64(s, n, &u) || u > uhi[f->type - FMT_C_U8])
			return 0;
		fmt_wr_u64(raw, u);
		return 1;
	case FMT_C_F16: case FMT_C_F32: case FMT_C_F64:
		if (!fmt_tv_float(s, n, &d))
			return 0;
		d = fmt_tv_float_narrowable(s, n, d, f->type);   /* one rounding from the text */
		if (f->type == FMT_C_F16)
			fmt_wr_u16(raw, fmt_f64_to_f16(d));
		else if (f->type == FMT_C_F32)
			fmt_wr_u32(raw, fmt_f32_bits((float)d));
		else
			fmt_wr_u64(raw, fmt_f64_bits(d));
		return 1;
	case FMT_C_DATE32:
		if (!fmt_tv_date(s, n, &days))
			return 0;
		fmt_wr_u32(raw, (uint32_t)days);
		return 1;
	case FMT_C_TIMESTAMP:
		if (!fmt_tv_timestamp_as(s, n, f, &i))
			return 0;
		fmt_wr_u64(raw, (uint64_t)i);
		return 1;
	case FMT_C_UTF8: case FMT_C_LARGE_UTF8:
		fmt_sb_put(bytes, s, n);
		return 1;
	case FMT_C_BINARY:
		return parse_hex(s, n, bytes);
	default:
		return 0;
	}
}

/* The value's ordered key, as fmt_row_key gives a row's. */
static int literal_key(const fmt_field *f, const char *s, size_t n, fmt_sb *key)
{
	uint8_t raw[8] = { 0 };
	fmt_sb bytes = { 0 };
	if (!literal_value(f, s, n, raw, &bytes)) {
		fmt_sb_free(&bytes);
		return 0;
	}
	uint8_t offs[16] = { 0 };
	fmt_column c = { .values = bytes.len ? (const uint8_t *)bytes.p : raw, .values_len = bytes.len ? bytes.len : 8,
			 .offsets = offs };
	if (f->type == FMT_C_LARGE_UTF8)
		fmt_wr_u64(offs + 8, bytes.len);
	else
		fmt_wr_u32(offs + 4, (uint32_t)bytes.len);
	if (f->type == FMT_C_UTF8 || f->type == FMT_C_LARGE_UTF8 || f->type == FMT_C_BINARY)
		c.values = (const uint8_t *)(bytes.p ? bytes.p : "");
	fmt_row_key(f, &c, 0, 0, key);
	fmt_sb_free(&bytes);
	return !key->oom;
}

static const char *skip_space(const char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	return p;
}

/* "is null", "is not null" (any case, any spaces), else -1. */
static int null_test(const char *p)
{
	if (strncasecmp(p, "is", 2) != 0 || !isspace((unsigned char)p[2]))
		return -1;
	p = skip_space(p + 2);
	int negated = strncasecmp(p, "not", 3) == 0 && isspace((unsigned char)p[3]);
	if (negated)
		p = skip_space(p + 3);
	if (strncasecmp(p, "null", 4) != 0 || *skip_space(p + 4))
		return -1;
	return negated ? OP_NOT_NULL : OP_NULL;
}

static int comparison(const char **p)
{
	static const struct { const char *text; int op; } ops[] = {
		{ "<=", OP_LE }, { ">=", OP_GE }, { "!=", OP_NE }, { "<>", OP_NE }, { "==", OP_EQ },
		{ "=", OP_EQ }, { "<", OP_LT }, { ">", OP_GT },
	};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (strncmp(*p, ops[i].text, strlen(ops[i].text)) == 0) {
			*p += strlen(ops[i].text);
			return ops[i].op;
		}
	return -1;
}

static fmt_kind bad_where(const char *expr, fmt_err *e)
{
	return fmt_fail(e, FMT_USAGE, "--where '%s': expected COLUMN OP VALUE (OP: =, !=, <, <=, >, >=; or COLUMN is "
			"null, COLUMN is not null)", expr);
}

static fmt_kind parse_where(const fmt_schema *s, const char *expr, where_test *w, fmt_err *e)
{
	const char *p = skip_space(expr), *name = p, *name_end;
	if (*p == '"') {
		name = ++p;
		while (*p && *p != '"')
			p++;
		if (*p != '"')
			return bad_where(expr, e);
		name_end = p++;
	} else {
		while (*p && !isspace((unsigned char)*p) && !strchr("<>=!", *p))
			p++;
		name_end = p;
	}
	if (name_end == name)
		return bad_where(expr, e);
	p = skip_space(p);
	int op = null_test(p);
	if (op < 0 && (op = comparison(&p)) < 0)
		return bad_where(expr, e);
	long col = find_column(s, name, (size_t)(name_end - name));
	if (col < 0)
		return no_column(s, "--where", expr, name, (size_t)(name_end - name), e);
	w->col = (size_t)col;
	w->op = op;
	if (op == OP_NULL || op == OP_NOT_NULL)
		return FMT_OK;
	const fmt_field *f = &s->fields[col];
	char type[256];
	fmt_field_type_name(f, type, sizeof type);
	if (f->type == FMT_C_FIXED_SIZE_LIST || f->type == FMT_C_OTHER)
		return fmt_fail(e, FMT_USAGE, "--where '%s': column '%s' (%s) has no value to compare with", expr, f->name,
				type);
	const char *v = skip_space(p);
	size_t n = strlen(v);
	while (n && isspace((unsigned char)v[n - 1]))
		n--;
	if (n >= 2 && (v[0] == '\'' || v[0] == '"') && v[n - 1] == v[0])
		v++, n -= 2;
	else if (n == 0)
		return bad_where(expr, e);
	if (!literal_key(f, v, n, &w->key))
		return fmt_fail(e, FMT_USAGE, "--where '%s': '%.*s' is not a value of column '%s' (%s)", expr, (int)n, v,
				f->name, type);
	return FMT_OK;
}

static fmt_kind parse_sort(const fmt_schema *s, const char *arg, sort_col *c, fmt_err *e)
{
	const char *colon = strrchr(arg, ':');
	size_t n = strlen(arg);
	c->desc = 0;
	if (colon && (strcasecmp(colon + 1, "desc") == 0 || strcasecmp(colon + 1, "asc") == 0)) {
		c->desc = strcasecmp(colon + 1, "desc") == 0;
		n = (size_t)(colon - arg);
	}
	long col = find_column(s, arg, n);
	if (col < 0)
		return no_column(s, "--sort", arg, arg, n, e);
	if (s->fields[col].type == FMT_C_OTHER)
		return fmt_fail(e, FMT_USAGE, "--sort '%s': column '%s' has type %s, which has no order", arg,
				s->fields[col].name, s->fields[col].type_name);
	c->col = (size_t)col;
	return FMT_OK;
}

fmt_kind fmt_rows_range_parse(const char *s, uint64_t *start, uint64_t *end, fmt_err *e)
{
	const char *colon = strchr(s, ':');
	char *stop;
	*start = 0;
	*end = UINT64_MAX;
	if (!colon || strchr(colon + 1, ':'))
		goto bad;
	if (colon != s) {
		if (!isdigit((unsigned char)*s))
			goto bad;
		unsigned long long v = strtoull(s, &stop, 10);
		if (stop != colon || v == ULLONG_MAX)
			goto bad;
		*start = v;
	}
	if (colon[1]) {
		if (!isdigit((unsigned char)colon[1]))
			goto bad;
		unsigned long long v = strtoull(colon + 1, &stop, 10);
		if (*stop || v == ULLONG_MAX)
			goto bad;
		*end = v;
	}
	if (*end < *start)
		return fmt_fail(e, FMT_USAGE, "--rows %s: END is before START", s);
	return FMT_OK;
bad:
	return fmt_fail(e, FMT_USAGE, "--rows takes START:END, START: or :END (row numbers from 0, END excluded), not '%s'",
			s);
}

fmt_kind fmt_sample_parse(const char *s, uint64_t *n, double *fraction, fmt_err *e)
{
	char *stop;
	*n = 0;
	*fraction = 0;
	if (!isdigit((unsigned char)*s) && *s != '.')
		goto bad;
	if (strchr(s, '.')) {
		double f = strtod(s, &stop);
		if (*stop || !(f > 0 && f < 1))
			goto bad;
		*fraction = f;
		return FMT_OK;
	}
	unsigned long long v = strtoull(s, &stop, 10);
	if (*stop || v == 0 || v == ULLONG_MAX)
		goto bad;
	*n = v;
	return FMT_OK;
bad:
	return fmt_fail(e, FMT_USAGE, "--sample takes a row count N (above 0) or a fraction (0 < F < 1), not '%s'", s);
}

/* ---- the rows ---- */

static int key_cmp(const fmt_sb *a, const fmt_sb *b)
{
	return fmt_bytes_cmp(a->p, a->len, b->p, b->len);
}

/* Whether a row of a block with range r can pass w (a test on r's column); 1 when unsure.
 * Floats: NaN, above every number in the key order, is not in a range, so only the least value
 * bounds them (< and <=, and = as far as the least goes). */
static int range_may_hold(const where_test *w, const fmt_col_range *r, fmt_sb *lo, fmt_sb *hi)
{
	int all_null = r->nulls >= 0 && (uint64_t)r->nulls == r->rows;
	if (w->op == OP_NULL)
		return r->nulls != 0;
	if (all_null)
		return 0; /* a null passes no comparison nor is not null */
	if (w->op == OP_NOT_NULL || !r->has_range)
		return 1;
	fmt_ctype t = r->field->type;
	int is_float = t == FMT_C_F16 || t == FMT_C_F32 || t == FMT_C_F64;
	lo->len = hi->len = 0;
	fmt_row_key(r->field, &r->minmax, 0, 0, lo);
	fmt_row_key(r->field, &r->minmax, 1, 0, hi);
	if (lo->oom || hi->oom)
		return 1;
	int at_lo = key_cmp(lo, &w->key), at_hi = key_cmp(hi, &w->key);
	switch (w->op) {
	case OP_EQ: return !(at_lo > 0 || (!is_float && at_hi < 0));
	case OP_NE: return is_float || !(at_lo == 0 && at_hi == 0);
	case OP_LT: return at_lo < 0;
	case OP_LE: return at_lo <= 0;
	case OP_GT: return is_float || at_hi > 0;
	default: return is_float || at_hi >= 0;
	}
}

/* fmt_range_test_fn: 0 when a --where on col excludes every row of the block. */
static int block_may_pass(void *ctx, size_t col, const fmt_col_range *r)
{
	rowops *v = ctx;
	for (size_t i = 0; i < v->n_wheres; i++)
		if (v->wheres[i].col == col && !range_may_hold(&v->wheres[i], r, &v->range_lo, &v->range_hi))
			return 0;
	return 1;
}

static int where_holds(const where_test *w, const fmt_schema *s, const fmt_batch *b, uint64_t row, fmt_sb *scratch)
{
	const fmt_column *c = &b->columns[w->col];
	int is_null = fmt_column_is_null(c, row);
	if (w->op == OP_NULL || w->op == OP_NOT_NULL)
		return is_null == (w->op == OP_NULL);
	if (is_null)
		return 0;
	scratch->len = 0;
	fmt_row_key(&s->fields[w->col], c, row, 0, scratch);
	int cmp = key_cmp(scratch, &w->key);
	switch (w->op) {
	case OP_EQ: return cmp == 0;
	case OP_NE: return cmp != 0;
	case OP_LT: return cmp < 0;
	case OP_LE: return cmp <= 0;
	case OP_GT: return cmp > 0;
	default: return cmp >= 0;
	}
}

/* A uniform 64-bit draw for row ordinal i, in the stream named by tag. */
static uint64_t draw(uint64_t seed, char tag, uint64_t i)
{
	uint8_t in[9];
	in[0] = (uint8_t)tag;
	fmt_wr_u64(in + 1, i);
	return XXH3_64bits_withSeed(in, sizeof in, seed);
}

/* Whether row passes --where, --dedupe, the split and --sample FRACTION (the stages that keep
 * or drop a row alone); -1 out of memory. */
static int row_passes(rowops *v, const fmt_schema *s, const fmt_batch *b, uint64_t row)
{
	for (size_t i = 0; i < v->n_wheres; i++)
		if (!where_holds(&v->wheres[i], s, b, row, &v->scratch))
			return 0;
	if (v->o.dedupe) {
		v->key.len = 0;
		fmt_row_keys(s, b, row, v->dedupe_cols, v->n_dedupe_cols, &v->key);
		int added = v->key.oom ? -1 : fmt_hash_set_insert(&v->seen_rows, v->key.p, v->key.len);
		if (added <= 0)
			return added;
	}
	if (v->split && fmt_split_state_part(v->split, s, b, row) != v->o.split_part)
		return 0;
	uint64_t ordinal = v->passed++;
	if (v->o.sample_fraction > 0)
		return (double)(draw(v->o.seed, 'f', ordinal) >> 11) * 0x1p-53 < v->o.sample_fraction;
	return 1;
}

static int buffered(const rowops *v)
{
	return v->o.n_sort || v->o.shuffle || v->o.sample_n;
}

/* The key of the output order of a row: the sort columns, the shuffle's draw, or the ordinal. */
static void order_key(rowops *v, const fmt_schema *s, const fmt_batch *b, uint64_t row, uint64_t ordinal)
{
	v->key.len = 0;
	if (v->n_sorts) {
		for (size_t i = 0; i < v->n_sorts; i++)
			fmt_row_key(&s->fields[v->sorts[i].col], &b->columns[v->sorts[i].col], row, v->sorts[i].desc, &v->key);
		return;
	}
	uint64_t k = v->o.shuffle ? draw(v->o.seed, 'h', ordinal) : ordinal;
	uint8_t be[8];
	for (int i = 0; i < 8; i++)
		be[i] = (uint8_t)(k >> (56 - 8 * i));
	fmt_sb_put(&v->key, (const char *)be, 8);
}

/* A kept row into the sort(s): with --sample N first into the sample's, keyed by a draw, its
 * order key travelling in front of its bytes. */
static fmt_kind buffer_row(rowops *v, const fmt_schema *s, const fmt_batch *b, uint64_t row, fmt_err *e)
{
	uint64_t ordinal = v->passed - 1;
	order_key(v, s, b, row, ordinal);
	v->row.len = 0;
	if (v->sample) {
		uint8_t len[4];
		fmt_wr_u32(len, (uint32_t)v->key.len);
		fmt_sb_put(&v->row, (const char *)len, 4);
		fmt_sb_put(&v->row, v->key.p, v->key.len);
	}
	fmt_row_encode(s, b, row, &v->row);
	if (v->key.oom || v->row.oom)
		return fmt_fail(e, FMT_IO, "out of memory");
	if (!v->sample)
		return fmt_extsort_add(v->order, v->key.p, v->key.len, v->row.p, v->row.len, e);
	uint64_t d = draw(v->o.seed, 's', ordinal);
	uint8_t be[8];
	for (int i = 0; i < 8; i++)
		be[i] = (uint8_t)(d >> (56 - 8 * i));
	return fmt_extsort_add(v->sample, be, 8, v->row.p, v->row.len, e);
}

/* The inner driver's next batch, checked. */
static fmt_kind inner_next(fmt_table *t, rowops *v, fmt_batch *b, int *done, fmt_err *e)
{
	fmt_kind k = fmt_batch_init(b, t->schema.n_fields, e);
	if (k != FMT_OK)
		return k;
	k = fmt_table_wrap_next(t, &v->w, b, done, e);
	if (k == FMT_OK && !*done)
		k = fmt_batch_check(&t->schema, b, e);
	if (k != FMT_OK || *done)
		fmt_batch_free(b);
	return k;
}

/* The sample's first N rows (the N least draws) into the output order. */
static fmt_kind take_sample(rowops *v, fmt_err *e)
{
	fmt_kind k = fmt_extsort_finish(v->sample, e);
	for (uint64_t taken = 0; k == FMT_OK && taken < v->o.sample_n; taken++) {
		const uint8_t *key, *p;
		size_t kl, n;
		int done;
		if ((k = fmt_extsort_next(v->sample, &key, &kl, &p, &n, &done, e)) != FMT_OK || done)
			break;
		uint32_t ol = n >= 4 ? fmt_rd_u32(p) : UINT32_MAX;
		if (ol > n - 4)
			return fmt_fail(e, FMT_INTERNAL, "a sampled row does not decode");
		k = fmt_extsort_add(v->order, p + 4, ol, p + 4 + ol, n - 4 - ol, e);
	}
	fmt_extsort_free(v->sample);
	v->sample = NULL;
	return k;
}

/* Pull every row of the input into the sort(s). */
static fmt_kind drain(fmt_table *t, rowops *v, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	for (;;) {
		fmt_batch b;
		int done = 0;
		if ((k = inner_next(t, v, &b, &done, e)) != FMT_OK || done)
			break;
		for (uint64_t r = 0; k == FMT_OK && r < b.n_rows; r++) {
			int pass = row_passes(v, &t->schema, &b, r);
			if (pass < 0)
				k = fmt_fail(e, FMT_IO, "out of memory");
			else if (pass)
				k = buffer_row(v, &t->schema, &b, r, e);
		}
		fmt_batch_free(&b);
		if (k != FMT_OK)
			break;
	}
	if (k == FMT_OK && v->sample)
		k = take_sample(v, e);
	if (k == FMT_OK)
		k = fmt_extsort_finish(v->order, e);
	v->drained = 1;
	return k;
}

/* --rows: 1 when the row of this ordinal is in the range; marks the end once past it. */
static int in_range(rowops *v)
{
	uint64_t i = v->emitted++;
	if (!v->o.has_range)
		return 1;
	if (v->emitted >= v->o.row_end)
		v->finished = 1;
	return i >= v->o.row_start && i < v->o.row_end;
}

static fmt_kind next_sorted(fmt_table *t, rowops *v, fmt_batch *b, fmt_err *e)
{
	fmt_kind k = v->drained ? FMT_OK : drain(t, v, e);
	uint64_t bytes = 0;
	while (k == FMT_OK && !v->finished && v->out.rows < OUT_BATCH_ROWS && bytes < OUT_BATCH_BYTES) {
		const uint8_t *key, *p;
		size_t kl, n;
		int done;
		if ((k = fmt_extsort_next(v->order, &key, &kl, &p, &n, &done, e)) != FMT_OK)
			break;
		if (done) {
			v->finished = 1;
			break;
		}
		if (in_range(v)) {
			k = fmt_rows_out_decode(&v->out, p, n, e);
			bytes += n;
		}
	}
	return k == FMT_OK ? fmt_rows_out_finish(&v->out, b, e) : k;
}

static fmt_kind next_streamed(fmt_table *t, rowops *v, fmt_batch *b, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	while (k == FMT_OK && !v->finished && v->out.rows == 0) {
		fmt_batch in;
		int done = 0;
		if ((k = inner_next(t, v, &in, &done, e)) != FMT_OK)
			break;
		if (done) {
			v->finished = 1;
			break;
		}
		for (uint64_t r = 0; k == FMT_OK && !v->finished && r < in.n_rows; r++) {
			int pass = row_passes(v, &t->schema, &in, r);
			if (pass < 0)
				k = fmt_fail(e, FMT_IO, "out of memory");
			else if (pass && in_range(v))
				fmt_rows_out_copy(&v->out, &in, r);
		}
		fmt_batch_free(&in);
	}
	return k == FMT_OK ? fmt_rows_out_finish(&v->out, b, e) : k;
}

static fmt_kind rowops_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e)
{
	rowops *v = t->format_state;
	fmt_kind k = buffered(v) ? next_sorted(t, v, b, e) : next_streamed(t, v, b, e);
	*done = k == FMT_OK && b->n_rows == 0 && v->finished;
	return k;
}

static void rowops_free(rowops *v)
{
	for (size_t i = 0; i < v->n_wheres; i++)
		fmt_sb_free(&v->wheres[i].key);
	free(v->wheres);
	free(v->sorts);
	free(v->dedupe_cols);
	fmt_hash_set_free(&v->seen_rows);
	fmt_split_state_free(v->split);
	fmt_extsort_free(v->sample);
	fmt_extsort_free(v->order);
	if (v->out.cols)
		fmt_rows_out_free(&v->out);
	fmt_sb_free(&v->key);
	fmt_sb_free(&v->row);
	fmt_sb_free(&v->scratch);
	fmt_sb_free(&v->range_lo);
	fmt_sb_free(&v->range_hi);
	free(v);
}

static void rowops_close(fmt_table *t)
{
	rowops *v = t->format_state;
	fmt_table_wrap_remove(t, &v->w, 1);
	rowops_free(v);
}

static fmt_kind parse_all(const fmt_schema *s, rowops *v, fmt_err *e)
{
	const fmt_rowops_opts *o = &v->o;
	fmt_kind k = FMT_OK;
	v->wheres = calloc(o->n_where + 1, sizeof *v->wheres);
	v->sorts = calloc(o->n_sort + 1, sizeof *v->sorts);
	v->dedupe_cols = calloc((o->n_dedupe_cols ? o->n_dedupe_cols : s->n_fields) + 1, sizeof *v->dedupe_cols);
	if (!v->wheres || !v->sorts || !v->dedupe_cols)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; k == FMT_OK && i < o->n_where; i++, v->n_wheres++)
		k = parse_where(s, o->where[i], &v->wheres[i], e);
	for (size_t i = 0; k == FMT_OK && i < o->n_sort; i++, v->n_sorts++)
		k = parse_sort(s, o->sort[i], &v->sorts[i], e);
	for (size_t i = 0; k == FMT_OK && i < o->n_dedupe_cols; i++) {
		long col = find_column(s, o->dedupe_cols[i], strlen(o->dedupe_cols[i]));
		if (col < 0)
			k = no_column(s, "--dedupe-on", o->dedupe_cols[i], o->dedupe_cols[i], strlen(o->dedupe_cols[i]), e);
		else
			v->dedupe_cols[v->n_dedupe_cols++] = (size_t)col;
	}
	for (size_t i = 0; o->dedupe && !o->n_dedupe_cols && i < s->n_fields; i++)
		v->dedupe_cols[v->n_dedupe_cols++] = i;
	if (k == FMT_OK && o->shuffle && o->n_sort)
		k = fmt_fail(e, FMT_USAGE, "--shuffle and --sort exclude each other");
	if (k == FMT_OK && o->sample_n && o->sample_fraction > 0)
		k = fmt_fail(e, FMT_USAGE, "--sample takes a count or a fraction, not both");
	return k;
}

fmt_kind fmt_table_rowops(fmt_table *t, const fmt_rowops_opts *o, fmt_err *e)
{
	if (!fmt_rowops_any(o))
		return FMT_OK;
	rowops *v = calloc(1, sizeof *v);
	if (!v)
		return fmt_fail(e, FMT_IO, "out of memory");
	v->o = *o;
	uint64_t memory = o->memory ? o->memory : FMT_ROWOPS_MEMORY_DEFAULT;
	fmt_kind k = parse_all(&t->schema, v, e);
	if (k == FMT_OK)
		k = fmt_rows_out_init(&v->out, &t->schema, e);
	if (k == FMT_OK && o->split && !(v->split = fmt_split_state_new(o->split)))
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK && buffered(v))
		k = fmt_extsort_new(o->sample_n ? memory / 2 : memory, &v->order, e);
	if (k == FMT_OK && o->sample_n)
		k = fmt_extsort_new(memory / 2, &v->sample, e);
	if (k != FMT_OK) {
		rowops_free(v);
		return k;
	}
	if (v->n_wheres && t->driver->skip_blocks)
		t->driver->skip_blocks(t, block_may_pass, v);
	fmt_table_wrap_put(t, &v->w, v, rowops_next, rowops_close);
	t->n_rows = FMT_ROWS_UNKNOWN;
	return FMT_OK;
}
