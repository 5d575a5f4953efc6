/* Rows as bytes and back, ordered keys of values, and batches built row by row
 * (rows_internal.h, fmt_row_key in fmt/rowops.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/xxh3.h"
#include "fmt/checked.h"
#include "fmt/half.h"
#include "fmt/rowops.h"
#include "rows_internal.h"

static int bit(const uint8_t *bits, uint64_t i)
{
	return (bits[i >> 3] >> (i & 7)) & 1;
}

static int elem_valid(const fmt_column *c, uint64_t i)
{
	return !c->elem_validity || bit(c->elem_validity, i);
}

/* ---- ordered keys ---- */

static void put_be64(fmt_sb *out, uint64_t v, int desc)
{
	char b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (char)((desc ? ~v : v) >> (56 - 8 * i));
	fmt_sb_add(out, b, 8);
}

static double float_value(fmt_ctype t, const uint8_t *p)
{
	if (t == FMT_C_F16)
		return fmt_f16_to_f32(fmt_rd_u16(p));
	if (t == FMT_C_F32)
		return fmt_bits_f32(fmt_rd_u32(p));
	return fmt_bits_f64(fmt_rd_u64(p));
}

static int64_t signed_value(fmt_ctype t, const uint8_t *p)
{
	switch (t) {
	case FMT_C_I8: return (int8_t)p[0];
	case FMT_C_I16: return (int16_t)fmt_rd_u16(p);
	case FMT_C_I32: case FMT_C_DATE32: return (int32_t)fmt_rd_u32(p);
	default: return (int64_t)fmt_rd_u64(p);
	}
}

static uint64_t unsigned_value(fmt_ctype t, const uint8_t *p)
{
	switch (t) {
	case FMT_C_U8: return p[0];
	case FMT_C_U16: return fmt_rd_u16(p);
	case FMT_C_U32: return fmt_rd_u32(p);
	default: return fmt_rd_u64(p);
	}
}

/* The key of a fixed-width value (not BOOL) at p. */
static void key_fixed(fmt_ctype t, const uint8_t *p, int desc, fmt_sb *out)
{
	switch (t) {
	case FMT_C_U8: case FMT_C_U16: case FMT_C_U32: case FMT_C_U64:
		put_be64(out, unsigned_value(t, p), desc);
		return;
	case FMT_C_F16: case FMT_C_F32: case FMT_C_F64: {
		double d = float_value(t, p);
		uint64_t u = isnan(d) ? 0x7ff8000000000000ull : d == 0 ? 0 : fmt_f64_bits(d);
		put_be64(out, u >> 63 ? ~u : u | 1ull << 63, desc);
		return;
	}
	default:
		put_be64(out, (uint64_t)signed_value(t, p) ^ 1ull << 63, desc);
	}
}

/* Bytes with 0x00 escaped as 00 ff, ended by 00 00: memcmp orders them as the bytes. */
static void key_bytes(const uint8_t *p, size_t n, int desc, fmt_sb *out)
{
	uint8_t x = desc ? 0xff : 0;
	char esc[2] = { (char)x, (char)(0xff ^ x) };
	for (size_t i = 0; i < n; i++) {
		char c = (char)(p[i] ^ x);
		if (p[i] == 0)
			fmt_sb_add(out, esc, 2);
		else
			fmt_sb_add(out, &c, 1);
	}
	char end[2] = { (char)x, (char)x };
	fmt_sb_add(out, end, 2);
}

static void key_marker(int is_null, fmt_sb *out)
{
	fmt_sb_add(out, is_null ? "\2" : "\1", 1);
}

int fmt_row_key(const fmt_field *f, const fmt_column *c, uint64_t row, int desc, fmt_sb *out)
{
	if (f->type == FMT_C_OTHER)
		return 0;
	int is_null = fmt_column_is_null(c, row);
	key_marker(is_null, out);
	if (is_null)
		return 1;
	const uint8_t *p;
	size_t n;
	switch (f->type) {
	case FMT_C_BOOL: {
		char v = (char)(fmt_column_bool(c, row) ^ (desc ? 0xff : 0));
		fmt_sb_add(out, &v, 1);
		return 1;
	}
	case FMT_C_UTF8: case FMT_C_LARGE_UTF8: case FMT_C_BINARY:
		fmt_column_bytes(c, f->type, row, &p, &n);
		key_bytes(p, n, desc, out);
		return 1;
	case FMT_C_FIXED_SIZE_LIST: {
		size_t w = fmt_ctype_width(f->elem);
		for (uint32_t i = 0; i < f->list_size; i++) {
			uint64_t at = row * f->list_size + i;
			key_marker(!elem_valid(c, at), out);
			if (elem_valid(c, at))
				key_fixed(f->elem, c->values + at * w, desc, out);
		}
		return 1;
	}
	default:
		key_fixed(f->type, c->values + row * fmt_ctype_width(f->type), desc, out);
		return 1;
	}
}

/* ---- values against a block's statistics ---- */

static int is_defined(const fmt_column *c, uint64_t row)
{
	return !c->validity || bit(c->validity, row);
}

/* The first defined row of [0, n) whose value (W bytes of type TYPE, read by GET as a T) is
 * below the range's least (at b) or above its greatest; n when none. One loop per type, TYPE a
 * constant, so that GET's switch folds away: a verify runs it over every value of a file. */
#define FIRST_OUTSIDE(T, GET, TYPE, W)                                                           \
	do {                                                                                     \
		const T lo_ = GET(TYPE, b), hi_ = GET(TYPE, b + (W));                            \
		const uint8_t *at = c->values;                                                   \
		for (uint64_t row = 0; row < n; row++, at += (W)) {                              \
			T v_ = GET(TYPE, at);                                                    \
			if ((v_ < lo_ || v_ > hi_) && is_defined(c, row))                        \
				return row;                                                      \
		}                                                                                \
		return n;                                                                        \
	} while (0)

static uint64_t first_bytes_outside(fmt_ctype t, const fmt_column *m, const fmt_column *c, uint64_t n)
{
	const uint8_t *lo, *hi;
	size_t nlo, nhi;
	const int32_t *off = c->offsets;
	fmt_column_bytes(m, t, 0, &lo, &nlo);
	fmt_column_bytes(m, t, 1, &hi, &nhi);
	for (uint64_t row = 0; row < n; row++) {
		const uint8_t *p = c->values + off[row];
		size_t len = (size_t)(off[row + 1] - off[row]);
		int above_lo = fmt_bytes_cmp(lo, nlo, p, len) <= 0, below_hi = fmt_bytes_cmp(p, len, hi, nhi) <= 0;
		if (!(above_lo && below_hi) && is_defined(c, row))
			return row;
	}
	return n;
}

uint64_t fmt_range_first_outside(const fmt_col_range *r, const fmt_column *c, uint64_t n)
{
	const fmt_column *m = &r->minmax;
	const uint8_t *b = m->values;
	fmt_ctype t = r->field->type;
	if (!r->has_range)
		return n;
	switch (t) {
	case FMT_C_BOOL:
		for (uint64_t row = 0; row < n; row++) {
			int v = fmt_column_bool(c, row);
			if ((v < fmt_column_bool(m, 0) || v > fmt_column_bool(m, 1)) && is_defined(c, row))
				return row;
		}
		return n;
	case FMT_C_UTF8: case FMT_C_BINARY:
		return first_bytes_outside(t, m, c, n);
	case FMT_C_I8: FIRST_OUTSIDE(int64_t, signed_value, FMT_C_I8, 1);
	case FMT_C_I16: FIRST_OUTSIDE(int64_t, signed_value, FMT_C_I16, 2);
	case FMT_C_I32: FIRST_OUTSIDE(int64_t, signed_value, FMT_C_I32, 4);
	case FMT_C_DATE32: FIRST_OUTSIDE(int64_t, signed_value, FMT_C_DATE32, 4);
	case FMT_C_I64: FIRST_OUTSIDE(int64_t, signed_value, FMT_C_I64, 8);
	case FMT_C_TIMESTAMP: FIRST_OUTSIDE(int64_t, signed_value, FMT_C_TIMESTAMP, 8);
	case FMT_C_U8: FIRST_OUTSIDE(uint64_t, unsigned_value, FMT_C_U8, 1);
	case FMT_C_U16: FIRST_OUTSIDE(uint64_t, unsigned_value, FMT_C_U16, 2);
	case FMT_C_U32: FIRST_OUTSIDE(uint64_t, unsigned_value, FMT_C_U32, 4);
	case FMT_C_U64: FIRST_OUTSIDE(uint64_t, unsigned_value, FMT_C_U64, 8);
	/* NaN compares false both ways: within; -0 == 0 */
	case FMT_C_F16: FIRST_OUTSIDE(double, float_value, FMT_C_F16, 2);
	case FMT_C_F32: FIRST_OUTSIDE(double, float_value, FMT_C_F32, 4);
	case FMT_C_F64: FIRST_OUTSIDE(double, float_value, FMT_C_F64, 8);
	default:
		return n;
	}
}

void fmt_row_keys(const fmt_schema *s, const fmt_batch *b, uint64_t row, const size_t *cols, size_t n, fmt_sb *out)
{
	for (size_t i = 0; i < n; i++)
		fmt_row_key(&s->fields[cols[i]], &b->columns[cols[i]], row, 0, out);
}

/* ---- rows as bytes ---- */

static uint64_t fixed_width(const fmt_field *f)
{
	uint64_t w = 0;
	fmt_field_row_width(f, &w, NULL);
	return w;
}

void fmt_row_encode(const fmt_schema *s, const fmt_batch *b, uint64_t row, fmt_sb *out)
{
	for (size_t i = 0; i < s->n_fields; i++) {
		const fmt_field *f = &s->fields[i];
		const fmt_column *c = &b->columns[i];
		if (f->type == FMT_C_OTHER || fmt_column_is_null(c, row)) {
			fmt_sb_add(out, "\0", 1);
			continue;
		}
		fmt_sb_add(out, "\1", 1);
		const uint8_t *p;
		size_t n;
		uint8_t len[8];
		switch (f->type) {
		case FMT_C_BOOL: {
			char v = (char)fmt_column_bool(c, row);
			fmt_sb_add(out, &v, 1);
			break;
		}
		case FMT_C_UTF8: case FMT_C_LARGE_UTF8: case FMT_C_BINARY:
			fmt_column_bytes(c, f->type, row, &p, &n);
			fmt_wr_u64(len, n);
			fmt_sb_add(out, (const char *)len, 8);
			fmt_sb_add(out, (const char *)p, n);
			break;
		case FMT_C_FIXED_SIZE_LIST: {
			uint64_t w = fixed_width(f);
			fmt_sb_add(out, (const char *)c->values + row * w, (size_t)w);
			for (uint32_t e = 0; e < f->list_size; e++) {
				char v = (char)elem_valid(c, row * f->list_size + e);
				fmt_sb_add(out, &v, 1);
			}
			break;
		}
		default: {
			size_t w = fmt_ctype_width(f->type);
			fmt_sb_add(out, (const char *)c->values + row * w, w);
		}
		}
	}
}

/* ---- batches built row by row ---- */

fmt_kind fmt_rows_out_init(fmt_rows_out *o, const fmt_schema *s, fmt_err *e)
{
	size_t n = s->n_fields ? s->n_fields : 1;
	memset(o, 0, sizeof *o);
	o->schema = s;
	o->cols = calloc(n, sizeof *o->cols);
	o->elem_valid = calloc(n, sizeof *o->elem_valid);
	o->elem_nulls = calloc(n, sizeof *o->elem_nulls);
	if (!o->cols || !o->elem_valid || !o->elem_nulls) {
		fmt_rows_out_free(o);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	return FMT_OK;
}

static void put_elem_bit(fmt_rows_out *o, size_t col, uint64_t at, int valid)
{
	fmt_sb *v = &o->elem_valid[col];
	if (at % 8 == 0)
		fmt_sb_put(v, "", 1);
	if (v->oom)
		return;
	if (valid)
		v->p[at / 8] |= (char)(1u << (at % 8));
	else
		o->elem_nulls[col]++;
}

/* A fixed-size list's row: its bytes and its element flags (1 valid). */
static void put_list(fmt_rows_out *o, size_t col, const uint8_t *bytes, const uint8_t *flags)
{
	const fmt_field *f = &o->schema->fields[col];
	fmt_cb_fixed(&o->cols[col], bytes, (size_t)fixed_width(f));
	for (uint32_t e = 0; e < f->list_size; e++)
		put_elem_bit(o, col, o->rows * f->list_size + e, flags[e]);
}

static void put_null(fmt_rows_out *o, size_t col)
{
	const fmt_field *f = &o->schema->fields[col];
	fmt_cb_null(&o->cols[col], f);
	for (uint32_t e = 0; f->type == FMT_C_FIXED_SIZE_LIST && e < f->list_size; e++)
		put_elem_bit(o, col, o->rows * f->list_size + e, 1);
}

void fmt_rows_out_copy(fmt_rows_out *o, const fmt_batch *b, uint64_t row)
{
	for (size_t i = 0; i < o->schema->n_fields; i++) {
		const fmt_field *f = &o->schema->fields[i];
		const fmt_column *c = &b->columns[i];
		col_builder *cb = &o->cols[i];
		const uint8_t *p;
		size_t n;
		if (f->type == FMT_C_OTHER || fmt_column_is_null(c, row)) {
			put_null(o, i);
			continue;
		}
		switch (f->type) {
		case FMT_C_BOOL:
			fmt_cb_bool(cb, fmt_column_bool(c, row));
			break;
		case FMT_C_UTF8: case FMT_C_LARGE_UTF8: case FMT_C_BINARY:
			fmt_column_bytes(c, f->type, row, &p, &n);
			fmt_cb_bytes(cb, f, p, n);
			break;
		case FMT_C_FIXED_SIZE_LIST: {
			uint64_t w = fixed_width(f);
			fmt_cb_fixed(cb, c->values + row * w, (size_t)w);
			for (uint32_t e = 0; e < f->list_size; e++)
				put_elem_bit(o, i, o->rows * f->list_size + e, elem_valid(c, row * f->list_size + e));
			break;
		}
		default: {
			size_t w = fmt_ctype_width(f->type);
			fmt_cb_fixed(cb, c->values + row * w, w);
		}
		}
	}
	o->rows++;
}

fmt_kind fmt_rows_out_decode(fmt_rows_out *o, const uint8_t *p, size_t n, fmt_err *e)
{
	size_t at = 0;
	for (size_t i = 0; i < o->schema->n_fields; i++) {
		const fmt_field *f = &o->schema->fields[i];
		uint64_t w = 0, len;
		if (at >= n)
			goto bad;
		if (p[at++] == 0) {
			put_null(o, i);
			continue;
		}
		switch (f->type) {
		case FMT_C_BOOL:
			if (at >= n)
				goto bad;
			fmt_cb_bool(&o->cols[i], p[at++]);
			break;
		case FMT_C_UTF8: case FMT_C_LARGE_UTF8: case FMT_C_BINARY:
			if (n - at < 8 || (len = fmt_rd_u64(p + at)) > n - at - 8)
				goto bad;
			fmt_cb_bytes(&o->cols[i], f, p + at + 8, (size_t)len);
			at += 8 + (size_t)len;
			break;
		case FMT_C_FIXED_SIZE_LIST:
			w = fixed_width(f);
			if (n - at < w + f->list_size)
				goto bad;
			put_list(o, i, p + at, p + at + w);
			at += (size_t)w + f->list_size;
			break;
		default:
			w = fmt_ctype_width(f->type);
			if (n - at < w)
				goto bad;
			fmt_cb_fixed(&o->cols[i], p + at, (size_t)w);
			at += (size_t)w;
		}
	}
	if (at != n)
		goto bad;
	o->rows++;
	return FMT_OK;
bad:
	return fmt_fail(e, FMT_INTERNAL, "a sorted row does not decode");
}

fmt_kind fmt_rows_out_finish(fmt_rows_out *o, fmt_batch *b, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	for (size_t i = 0; k == FMT_OK && i < o->schema->n_fields; i++) {
		k = fmt_cb_finish(&o->cols[i], &o->schema->fields[i], b, &b->columns[i], e);
		fmt_sb *v = &o->elem_valid[i];
		if (k == FMT_OK && v->oom)
			k = fmt_fail(e, FMT_IO, "out of memory");
		if (k == FMT_OK && o->elem_nulls[i]) {
			b->columns[i].elem_validity = (const uint8_t *)v->p;
			k = fmt_batch_own(b, v->p, e);
			memset(v, 0, sizeof *v);
		}
		fmt_sb_free(v);
		o->elem_nulls[i] = 0;
	}
	b->n_rows = o->rows;
	o->rows = 0;
	return k;
}

void fmt_rows_out_free(fmt_rows_out *o)
{
	for (size_t i = 0; o->cols && i < o->schema->n_fields; i++) {
		fmt_cb_free(&o->cols[i]);
		if (o->elem_valid)
			fmt_sb_free(&o->elem_valid[i]);
	}
	free(o->cols);
	free(o->elem_valid);
	free(o->elem_nulls);
	memset(o, 0, sizeof *o);
}

/* ---- hash sets ---- */

static int set_put(uint64_t *slots, size_t cap, uint64_t lo, uint64_t hi)
{
	if (!lo && !hi)
		lo = 1;
	for (size_t i = (size_t)(lo & (cap - 1));; i = (i + 1) & (cap - 1)) {
		if (slots[2 * i] == lo && slots[2 * i + 1] == hi)
			return 0;
		if (!slots[2 * i] && !slots[2 * i + 1]) {
			slots[2 * i] = lo;
			slots[2 * i + 1] = hi;
			return 1;
		}
	}
}

static int set_grow(fmt_hash_set *h)
{
	size_t cap = h->cap ? 2 * h->cap : 1024;
	uint64_t *s = calloc(cap, 2 * sizeof *s);
	if (!s)
		return -1;
	for (size_t i = 0; i < h->cap; i++)
		if (h->slots[2 * i] || h->slots[2 * i + 1])
			set_put(s, cap, h->slots[2 * i], h->slots[2 * i + 1]);
	free(h->slots);
	h->slots = s;
	h->cap = cap;
	return 0;
}

int fmt_hash_set_insert(fmt_hash_set *h, const void *bytes, size_t n)
{
	if (2 * (h->n + 1) > h->cap && set_grow(h) != 0)
		return -1;
	XXH128_hash_t x = XXH3_128bits(bytes, n);
	int added = set_put(h->slots, h->cap, x.low64, x.high64);
	h->n += (size_t)added;
	return added;
}

void fmt_hash_set_free(fmt_hash_set *h)
{
	free(h->slots);
	memset(h, 0, sizeof *h);
}

void fmt_schema_names_text(const fmt_schema *s, char *buf, size_t n)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < s->n_fields && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", s->fields[i].name);
	if (used >= n && n > 4)
		memcpy(buf + n - 4, "...", 4);
}
