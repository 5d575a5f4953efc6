/* Values of table columns as text and JSON. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/cell.h"
#include "fmt/checked.h"
#include "fmt/half.h"
#include "fmt/out.h"
#include "fmt/shortest.h"
#include "fmt/textval.h"

void fmt_shortest_double(double v, fmt_ctype type, char *buf, size_t n)
{
	char text[FMT_SHORTEST_MAX];
	size_t len = type == FMT_C_F16 ? fmt_shortest_f16(fmt_f64_to_f16(v), text)
		     : type == FMT_C_F32 ? fmt_shortest_f32((float)v, text)
					 : fmt_shortest_f64(v, text);
	if (n) {
		len = len < n - 1 ? len : n - 1;
		memcpy(buf, text, len);
		buf[len] = '\0';
	}
}

/* Howard Hinnant's days_from_civil / civil_from_days algorithms. */
void fmt_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t yy = (int64_t)yoe + era * 400;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = yy + (*m <= 2);
}

int64_t fmt_days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

/* a = q b + r with 0 <= r < b (b > 0), without forming q b: near INT64_MIN it does not fit. */
static int64_t floor_div_mod(int64_t a, int64_t b, int64_t *r)
{
	int64_t q = a / b;
	*r = a % b;
	if (*r < 0) {
		*r += b;
		q--;
	}
	return q;
}

/* v as exactly n decimal digits at p (v < 10^n). */
static void put_digits(char *p, uint64_t v, int n)
{
	while (n-- > 0) {
		p[n] = (char)('0' + v % 10);
		v /= 10;
	}
}

/* The date of days as YYYY-MM-DD at buf; years outside 0000..9999 as ISO 8601 expands them
 * and fmt_tv_date reads them back: all their digits, and a '-' and at least 4 digits before
 * 0000 (-0001-01-01). Its length. */
static size_t date_text(char *buf, size_t size, int64_t days)
{
	int64_t y;
	unsigned m, d;
	fmt_civil_from_days(days, &y, &m, &d);
	if (y < 0)
		return (size_t)snprintf(buf, size, "-%04" PRId64 "-%02u-%02u", -y, m, d);
	if (y > 9999)
		return (size_t)snprintf(buf, size, "%" PRId64 "-%02u-%02u", y, m, d);
	put_digits(buf, (uint64_t)y, 4);
	buf[4] = '-';
	put_digits(buf + 5, m, 2);
	buf[7] = '-';
	put_digits(buf + 8, d, 2);
	return 10;
}

static void put_date(fmt_sb *b, int64_t days)
{
	char buf[40];
	fmt_sb_put(b, buf, date_text(buf, sizeof buf, days));
}

static void put_timestamp(fmt_sb *b, int64_t v, fmt_time_unit unit, const char *tz)
{
	static const int64_t per_sec[] = { 1, 1000, 1000000, 1000000000 };
	static const int digits[] = { 0, 3, 6, 9 };
	int64_t frac, sod;
	int64_t secs = floor_div_mod(v, per_sec[unit], &frac), days = floor_div_mod(secs, 86400, &sod);
	char buf[80];
	size_t n = date_text(buf, 40, days);
	buf[n] = 'T';
	put_digits(buf + n + 1, (uint64_t)(sod / 3600), 2);
	buf[n + 3] = ':';
	put_digits(buf + n + 4, (uint64_t)(sod / 60 % 60), 2);
	buf[n + 6] = ':';
	put_digits(buf + n + 7, (uint64_t)(sod % 60), 2);
	n += 9;
	if (digits[unit] && frac) {
		buf[n] = '.';
		put_digits(buf + n + 1, (uint64_t)frac, digits[unit]);
		n += 1 + (size_t)digits[unit];
	}
	if (tz)
		buf[n++] = 'Z';
	fmt_sb_put(b, buf, n);
}

static double elem_number(fmt_ctype t, const uint8_t *p)
{
	switch (t) {
	case FMT_C_I8: return (int8_t)p[0];
	case FMT_C_I16: return (int16_t)fmt_rd_u16(p);
	case FMT_C_I32: case FMT_C_DATE32: return (int32_t)fmt_rd_u32(p);
	case FMT_C_I64: case FMT_C_TIMESTAMP: return (double)(int64_t)fmt_rd_u64(p);
	case FMT_C_U8: return p[0];
	case FMT_C_U16: return fmt_rd_u16(p);
	case FMT_C_U32: return fmt_rd_u32(p);
	case FMT_C_U64: return (double)fmt_rd_u64(p);
	case FMT_C_F16: return fmt_f16_to_f32(fmt_rd_u16(p));
	case FMT_C_F32: return fmt_bits_f32(fmt_rd_u32(p));
	case FMT_C_F64: {
		uint64_t u = fmt_rd_u64(p);
		double d;
		memcpy(&d, &u, 8);
		return d;
	}
	default: return 0;
	}
}

/* A fixed-width numeric element as text. */
static void put_number(fmt_sb *b, fmt_ctype t, const uint8_t *p)
{
	char buf[64];
	switch (t) {
	case FMT_C_I8: case FMT_C_I16: case FMT_C_I32: case FMT_C_I64:
		fmt_sb_i64(b, t == FMT_C_I64 ? (int64_t)fmt_rd_u64(p) : (int64_t)elem_number(t, p));
		return;
	case FMT_C_U8: case FMT_C_U16: case FMT_C_U32: case FMT_C_U64:
		fmt_sb_u64(b, t == FMT_C_U64 ? fmt_rd_u64(p) : (uint64_t)elem_number(t, p));
		return;
	case FMT_C_F64:
		fmt_sb_put(b, buf, fmt_shortest_f64(elem_number(t, p), buf));
		return;
	case FMT_C_F32:
		fmt_sb_put(b, buf, fmt_shortest_f32(fmt_bits_f32(fmt_rd_u32(p)), buf));
		return;
	default:
		fmt_shortest_double(elem_number(t, p), t, buf, sizeof buf);
		fmt_sb_puts(b, buf);
	}
}

double fmt_cell_number(const fmt_field *f, const fmt_column *c, uint64_t row)
{
	if (f->type == FMT_C_BOOL)
		return fmt_column_bool(c, row);
	size_t w = fmt_ctype_width(f->type);
	if (!w || f->type == FMT_C_FIXED_SIZE_LIST)
		return 0;
	return elem_number(f->type, c->values + row * w);
}

int64_t fmt_cell_i64(const fmt_field *f, const fmt_column *c, uint64_t row)
{
	return fmt_ctype_width(f->type) == 8 ? (int64_t)fmt_rd_u64(c->values + 8 * row) : (int64_t)fmt_cell_number(f, c, row);
}

uint64_t fmt_cell_u64(const fmt_field *f, const fmt_column *c, uint64_t row)
{
	return f->type == FMT_C_U64 ? fmt_rd_u64(c->values + 8 * row) : (uint64_t)fmt_cell_number(f, c, row);
}

static int elem_null(const fmt_column *c, uint64_t i)
{
	return c->elem_validity && !((c->elem_validity[i >> 3] >> (i & 7)) & 1);
}

void fmt_cell_text(const fmt_field *f, const fmt_column *c, uint64_t row, fmt_sb *b)
{
	static const char hex[] = "0123456789abcdef";
	size_t w = fmt_ctype_width(f->type);
	const uint8_t *p;
	size_t n;
	if (fmt_column_is_null(c, row))
		return;
	switch (f->type) {
	case FMT_C_BOOL:
		fmt_sb_puts(b, fmt_column_bool(c, row) ? "true" : "false");
		return;
	case FMT_C_UTF8: case FMT_C_LARGE_UTF8:
		fmt_column_bytes(c, f->type, row, &p, &n);
		fmt_sb_put(b, (const char *)p, n);
		return;
	case FMT_C_BINARY:
		fmt_column_bytes(c, f->type, row, &p, &n);
		for (size_t i = 0; i < n; i++) {
			char h[2] = { hex[p[i] >> 4], hex[p[i] & 15] };
			fmt_sb_put(b, h, 2);
		}
		return;
	case FMT_C_DATE32:
		put_date(b, (int32_t)fmt_rd_u32(c->values + 4 * row));
		return;
	case FMT_C_TIMESTAMP:
		put_timestamp(b, (int64_t)fmt_rd_u64(c->values + 8 * row), f->unit, f->timezone);
		return;
	case FMT_C_FIXED_SIZE_LIST: {
		size_t ew = fmt_ctype_width(f->elem);
		fmt_sb_puts(b, "[");
		for (uint32_t i = 0; i < f->list_size; i++) {
			uint64_t at = row * f->list_size + i;
			if (i)
				fmt_sb_puts(b, ",");
			if (elem_null(c, at))
				fmt_sb_puts(b, "null");
			else
				put_number(b, f->elem, c->values + at * ew);
		}
		fmt_sb_puts(b, "]");
		return;
	}
	case FMT_C_OTHER:
		return;
	default:
		put_number(b, f->type, c->values + row * w);
	}
}

/* A float's shortest text p[0..n) as JSON: a number, or for NaN and the infinities (JSON has no
 * such numbers) a string spelled as style says. */
static void float_json_text(fmt_sb *out, const char *p, size_t n, fmt_json_style style)
{
	double nonfinite;
	if (!fmt_tv_nonfinite(p, n, &nonfinite))
		fmt_sb_put(out, p, n);
	else if (style == FMT_JSON_REPORT && isnan(nonfinite))
		fmt_sb_puts(out, "\"nan\"");
	else
		fmt_sb_json_str(out, p, n);
}

static void list_json_text(fmt_sb *out, const char *p, size_t n, fmt_json_style style)
{
	size_t from = 1;
	fmt_sb_put(out, "[", 1);
	for (size_t i = 1; i < n; i++) {
		if (p[i] != ',' && p[i] != ']')
			continue;
		float_json_text(out, p + from, i - from, style);
		fmt_sb_put(out, p + i, 1);
		from = i + 1;
	}
}

void fmt_cell_json_text(const fmt_field *f, const fmt_column *c, uint64_t row, fmt_sb *out, fmt_sb *scratch,
			fmt_json_style style)
{
	if (fmt_column_is_null(c, row)) {
		fmt_sb_puts(out, "null");
		return;
	}
	scratch->len = 0;
	fmt_cell_text(f, c, row, scratch);
	const char *p = scratch->p ? scratch->p : "";
	switch (f->type) {
	case FMT_C_UTF8: case FMT_C_LARGE_UTF8: case FMT_C_BINARY: case FMT_C_DATE32: case FMT_C_TIMESTAMP:
		fmt_sb_json_str(out, p, scratch->len);
		return;
	case FMT_C_F16: case FMT_C_F32: case FMT_C_F64:
		float_json_text(out, p, scratch->len, style);
		return;
	case FMT_C_FIXED_SIZE_LIST:
		list_json_text(out, p, scratch->len, style);
		return;
	default:
		fmt_sb_put(out, p, scratch->len); /* integers, true/false */
	}
}

void fmt_row_json_text(const fmt_schema *s, const fmt_batch *b, uint64_t row, fmt_sb *out, fmt_sb *scratch,
		       fmt_json_style style)
{
	fmt_sb_put(out, "{", 1);
	for (size_t i = 0; i < s->n_fields; i++) {
		if (i)
			fmt_sb_put(out, ",", 1);
		fmt_sb_json_str(out, s->fields[i].name, strlen(s->fields[i].name));
		fmt_sb_put(out, ":", 1);
		fmt_cell_json_text(&s->fields[i], &b->columns[i], row, out, scratch, style);
	}
	fmt_sb_put(out, "}", 1);
}
