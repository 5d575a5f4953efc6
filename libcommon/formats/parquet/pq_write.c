/* Writing Parquet: the rows of a table gathered a row group at a time (bounded memory: a group
 * ends at its rows or at its bound of bytes held, whichever comes first), each
 * column chunk as an optional dictionary page and data pages v1 of at most PAGE_ROWS rows,
 * dictionary-encoded when that is smaller than PLAIN, compressed, with min/max/null count
 * statistics; the footer last (schema with logical types, key/value metadata). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* inlined: the dictionary hashes short values, where a call costs more than the hash */
#define XXH_INLINE_ALL
#include <xxhash.h>
#include <zlib.h>
#include "fmt/checked.h"
#include "fmt/io.h"
#include "fmt/version.h"
#include "pq_internal.h"

#define PAGE_ROWS 20000
#define DICT_MAX_BYTES (1u << 20)
/* The footer's RowGroup structs held in memory at most: more go to a temporary file, read back
 * into the footer at the end. A table of 4000 columns ends its row groups (12 MiB held) every
 * 220 rows, 263 KB of structs each: 150 MB of footer for 122,880 rows, held twice at the end. */
#define GROUPS_HELD (256u << 10)

typedef struct dict {
	uint32_t *slots;            /* index + 1 of the entry, 0 for empty */
	size_t n_slots;
	fmt_sb plain;               /* the entries, PLAIN-encoded */
	uint64_t *pos;              /* entry i's bytes in plain (a byte array: after its length) */
	uint32_t *lens;
	uint32_t n, cap;
	int on;                     /* still worth it */
} dict;

typedef struct colw {
	const fmt_field *f;
	fmt_ctype type;             /* the values' type: f's, or a list's element type */
	uint32_t list_size;         /* a fixed_size_list's values a row; 0: a flat column */
	int max_def;                /* a list's: 3 (2 when rows are never null) */
	uint64_t levels;            /* a list's level entries: a row's values, one for a null row */
	int ptype, width;           /* physical type, bytes of a fixed-width PLAIN value */
	int is_bytes;               /* BYTE_ARRAY */
	uint64_t rows, nulls, values;
	uint8_t *defs;              /* per row: 1 = a value, 0 = null; a list's: per level entry, its
				     * definition level (0 null row, max_def - 1 null value) */
	size_t defs_cap;
	fmt_sb plain;               /* non-null values, PLAIN (booleans: one byte each); empty while
				     * in_dict */
	int in_dict;                /* a fixed-width column's values are only in the dictionary (d,
				     * idx), not in plain: while its dictionary is on */
	uint64_t *vpos;             /* byte arrays: where value i starts in plain */
	size_t vpos_cap;
	uint32_t *idx;              /* dictionary index of each value */
	size_t idx_cap;
	uint64_t idx_n;             /* ... of the values before the dictionary went off */
	dict d;
	uint64_t dict_probe;        /* values seen before a dictionary of mostly distinct ones is
				     * given up */
	uint8_t min[8], max[8];     /* fixed-width statistics */
	fmt_sb smin, smax;          /* byte-array statistics */
	int has_minmax;
	/* the chunk as written, for the footer */
	uint64_t start, dict_off, data_off, comp_total, uncomp_total;
	int used_dict;
} colw;

typedef struct chunk_meta {
	uint64_t dict_off, data_off, comp, uncomp, values, nulls;
	int used_dict, has_minmax;
	fmt_sb min, max;
} chunk_meta;

typedef struct writer {
	fmt_sink *k;
	const fmt_schema *s;
	colw *cols;
	size_t n;
	int codec, level;
	uint64_t off;               /* bytes written */
	fmt_sb page, comp, hdr;     /* scratch */
	uint32_t *levels;
	size_t levels_cap;
	fmt_sb groups;              /* the footer's RowGroup structs, as written (those after the spilled) */
	FILE *spill;                /* the structs before them, or NULL */
	uint64_t spilled;           /* their bytes */
	uint32_t n_groups;
	uint64_t total_rows;
} writer;

static fmt_kind oom(fmt_err *e)
{
	return fmt_fail(e, FMT_IO, "out of memory");
}

/* Room for need elements of elem bytes at *p (*cap of them now): doubling from 64, or when tight
 * by an eighth at least, for a buffer every column holds (a wide table's 4,000 columns), so that
 * they hold near what they use. -1: out of memory. */
static int grow_as(void **p, size_t *cap, size_t need, size_t elem, int tight)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 64;
	if (tight)
		n = *cap + *cap / 8 > need ? *cap + *cap / 8 : need;
	while (n < need)
		n = n > SIZE_MAX / 2 ? need : n * 2;
	if (n > SIZE_MAX / elem)
		return -1;
	void *q = realloc(*p, n * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

/* ---- the physical layout of each column type ---- */

static void physical_of(colw *c)
{
	switch (c->type) {
	case FMT_C_BOOL: c->ptype = PT_BOOLEAN; c->width = 1; break;
	case FMT_C_I8: case FMT_C_I16: case FMT_C_I32: case FMT_C_U8: case FMT_C_U16: case FMT_C_U32: case FMT_C_DATE32:
		c->ptype = PT_INT32; c->width = 4; break;
	case FMT_C_I64: case FMT_C_U64: case FMT_C_TIMESTAMP: c->ptype = PT_INT64; c->width = 8; break;
	case FMT_C_F16: c->ptype = PT_FLBA; c->width = 2; break;
	case FMT_C_F32: c->ptype = PT_FLOAT; c->width = 4; break;
	case FMT_C_F64: c->ptype = PT_DOUBLE; c->width = 8; break;
	default: c->ptype = PT_BYTE_ARRAY; c->width = 0; c->is_bytes = 1; break;
	}
}

/* Row r of column col as its PLAIN bytes (fixed width) into out; 0, or -1 when a timestamp
 * in seconds overflows as milliseconds. */
static int fixed_value(const colw *c, const fmt_column *col, uint64_t r, uint8_t *out)
{
	const uint8_t *p = col->values;
	int32_t i32;
	uint32_t u32;
	switch (c->type) {
	case FMT_C_BOOL: out[0] = (uint8_t)(p[r >> 3] >> (r & 7) & 1); return 0;
	case FMT_C_I8: i32 = (int8_t)p[r]; memcpy(out, &i32, 4); return 0;
	case FMT_C_I16: { int16_t v; memcpy(&v, p + r * 2, 2); i32 = v; memcpy(out, &i32, 4); return 0; }
	case FMT_C_U8: u32 = p[r]; memcpy(out, &u32, 4); return 0;
	case FMT_C_U16: { uint16_t v; memcpy(&v, p + r * 2, 2); u32 = v; memcpy(out, &u32, 4); return 0; }
	case FMT_C_TIMESTAMP:
		if (c->f->unit == FMT_TU_S) {
			int64_t v, ms;
			memcpy(&v, p + r * 8, 8);
			if (__builtin_mul_overflow(v, 1000, &ms))
				return -1;
			memcpy(out, &ms, 8);
			return 0;
		}
		memcpy(out, p + r * 8, 8);
		return 0;
	default:
		memcpy(out, p + r * (size_t)c->width, (size_t)c->width);
		return 0;
	}
}

/* ---- statistics ---- */

static int cmp_fixed(const colw *c, const uint8_t *a, const uint8_t *b)
{
	switch (c->type) {
	case FMT_C_U8: case FMT_C_U16: case FMT_C_U32: {
		uint32_t x = fmt_rd_u32(a), y = fmt_rd_u32(b);
		return x < y ? -1 : x > y;
	}
	case FMT_C_U64: {
		uint64_t x = fmt_rd_u64(a), y = fmt_rd_u64(b);
		return x < y ? -1 : x > y;
	}
	case FMT_C_F32: {
		float x, y;
		memcpy(&x, a, 4), memcpy(&y, b, 4);
		return x < y ? -1 : x > y;
	}
	case FMT_C_F64: {
		double x, y;
		memcpy(&x, a, 8), memcpy(&y, b, 8);
		return x < y ? -1 : x > y;
	}
	case FMT_C_BOOL:
		return a[0] < b[0] ? -1 : a[0] > b[0];
	default:
		if (c->width == 4) {
			int32_t x = (int32_t)fmt_rd_u32(a), y = (int32_t)fmt_rd_u32(b);
			return x < y ? -1 : x > y;
		} else {
			int64_t x = (int64_t)fmt_rd_u64(a), y = (int64_t)fmt_rd_u64(b);
			return x < y ? -1 : x > y;
		}
	}
}

static inline int nan_as(fmt_ctype type, const uint8_t *v)
{
	if (type == FMT_C_F32) {
		float x;
		memcpy(&x, v, 4);
		return x != x;
	}
	if (type == FMT_C_F64) {
		double x;
		memcpy(&x, v, 8);
		return x != x;
	}
	return 0;
}

static int is_nan(const colw *c, const uint8_t *v)
{
	return nan_as(c->type, v);
}

static void stat_fixed(colw *c, const uint8_t *v)
{
	if (c->type == FMT_C_F16 || is_nan(c, v))
		return;
	if (!c->has_minmax) {
		memcpy(c->min, v, (size_t)c->width);
		memcpy(c->max, v, (size_t)c->width);
		c->has_minmax = 1;
		return;
	}
	if (cmp_fixed(c, v, c->min) < 0)
		memcpy(c->min, v, (size_t)c->width);
	if (cmp_fixed(c, v, c->max) > 0)
		memcpy(c->max, v, (size_t)c->width);
}

static void stat_bytes(colw *c, const uint8_t *p, size_t n)
{
	/* below the minimum is not above the maximum, nor is the minimum itself */
	int vs_min = c->has_minmax ? fmt_bytes_cmp(p, n, c->smin.p, c->smin.len) : -1;
	if (vs_min < 0) {
		c->smin.len = 0;
		fmt_sb_put(&c->smin, (const char *)p, n);
	}
	if (!c->has_minmax || (vs_min > 0 && fmt_bytes_cmp(p, n, c->smax.p, c->smax.len) > 0)) {
		c->smax.len = 0;
		fmt_sb_put(&c->smax, (const char *)p, n);
	}
	c->has_minmax = 1;
}

/* A key whose unsigned order is the order of the PLAIN value at p (not NaN), or 0 with *none
 * set when the type keeps no statistics (f16). */
static inline uint64_t order_key(fmt_ctype type, int width, const uint8_t *p, int *none)
{
	const uint64_t sign64 = (uint64_t)1 << 63;
	switch (type) {
	case FMT_C_F16: *none = 1; return 0;
	case FMT_C_BOOL: return p[0];
	case FMT_C_U8: case FMT_C_U16: case FMT_C_U32: return fmt_rd_u32(p);
	case FMT_C_U64: return fmt_rd_u64(p);
	case FMT_C_F32: {
		uint32_t b = fmt_rd_u32(p);
		return b >> 31 ? ~b : b | 0x80000000u;
	}
	case FMT_C_F64: {
		uint64_t b = fmt_rd_u64(p);
		return b >> 63 ? ~b : b | sign64;
	}
	default:
		return width == 4 ? fmt_rd_u32(p) ^ 0x80000000u : fmt_rd_u64(p) ^ sign64;
	}
}

/* stat_fixed over count PLAIN values at p, in one pass. -0 and +0 (equal as numbers) get
 * distinct keys here where stat_fixed keeps the first seen, which put_stats makes the same bytes
 * (a zero minimum is written -0, a zero maximum +0). Inlined with type and width constant for
 * the common types: the loop then has no switch. */
static inline __attribute__((always_inline)) void stat_run_as(colw *c, const uint8_t *p, size_t count,
							       fmt_ctype type, int width)
{
	size_t w = (size_t)width;
	int none = 0, is_float = type == FMT_C_F32 || type == FMT_C_F64;
	const uint8_t *lo = NULL, *hi = NULL;
	uint64_t klo = 0, khi = 0;
	order_key(type, width, p, &none);
	if (none || count == 0)
		return;
	if (c->has_minmax) {
		lo = c->min, hi = c->max;
		klo = order_key(type, width, lo, &none);
		khi = order_key(type, width, hi, &none);
	}
	for (size_t i = 0; i < count; i++, p += w) {
		if (is_float && nan_as(type, p))
			continue;
		uint64_t k = order_key(type, width, p, &none);
		if (!lo || k < klo)
			lo = p, klo = k;
		if (!hi || k > khi)
			hi = p, khi = k;
	}
	if (!lo)
		return;
	memmove(c->min, lo, w);
	memmove(c->max, hi, w);
	c->has_minmax = 1;
}

static void stat_run(colw *c, const uint8_t *p, size_t count)
{
	switch (c->type) {
	case FMT_C_F64: stat_run_as(c, p, count, FMT_C_F64, 8); break;
	case FMT_C_I64: stat_run_as(c, p, count, FMT_C_I64, 8); break;
	case FMT_C_TIMESTAMP: stat_run_as(c, p, count, FMT_C_TIMESTAMP, 8); break;
	default: stat_run_as(c, p, count, c->type, c->width);
	}
}

/* ---- the dictionary ---- */

static void dict_off(dict *d)
{
	d->on = 0;
	free(d->slots);
	d->slots = NULL;
	d->n_slots = 0;
}

static void dict_reset(dict *d, int on)
{
	free(d->slots);
	free(d->pos);
	free(d->lens);
	fmt_sb_free(&d->plain);
	memset(d, 0, sizeof *d);
	d->on = on;
}

static int dict_grow_slots(dict *d)
{
	size_t n = d->n_slots ? d->n_slots * 2 : 64;
	uint32_t *s = calloc(n, sizeof *s);
	if (!s)
		return -1;
	for (uint32_t i = 0; i < d->n; i++) {
		const uint8_t *p = (const uint8_t *)d->plain.p + d->pos[i];
		size_t h = (size_t)XXH3_64bits(p, d->lens[i]) & (n - 1);
		while (s[h])
			h = (h + 1) & (n - 1);
		s[h] = i + 1;
	}
	free(d->slots);
	d->slots = s;
	d->n_slots = n;
	return 0;
}

/* Whether a[0..n) == b[0..n): up to 16 bytes by two overlapping loads, no call. */
static inline int same_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
	if (n >= 8 && n <= 16)
		return fmt_rd_u64(a) == fmt_rd_u64(b) && fmt_rd_u64(a + n - 8) == fmt_rd_u64(b + n - 8);
	if (n >= 4 && n < 8)
		return fmt_rd_u32(a) == fmt_rd_u32(b) && fmt_rd_u32(a + n - 4) == fmt_rd_u32(b + n - 4);
	return memcmp(a, b, n) == 0;
}

/* The index of value p[0..n) in the dictionary, added when new; -1: the dictionary is off
 * (too big) or out of memory (then off too: PLAIN is always written). */
static int64_t dict_index(dict *d, const uint8_t *p, size_t n, int is_bytes)
{
	if ((d->n + 1) * 2 > d->n_slots && dict_grow_slots(d)) {
		dict_off(d);
		return -1;
	}
	size_t mask = d->n_slots - 1, h = (size_t)XXH3_64bits(p, n) & mask;
	for (; d->slots[h]; h = (h + 1) & mask) {
		uint32_t i = d->slots[h] - 1;
		const char *q = d->plain.p + d->pos[i];
		if (d->lens[i] == n && same_bytes((const uint8_t *)q, p, n))
			return i;
	}
	if (d->plain.len + n + 4 > DICT_MAX_BYTES || d->n == UINT32_MAX - 1) {
		dict_off(d);
		return -1;
	}
	if (d->n == d->cap) {
		uint32_t cap = d->cap ? d->cap * 2 : 16;
		uint64_t *pos = realloc(d->pos, cap * sizeof *pos);
		if (pos)
			d->pos = pos;
		uint32_t *lens = pos ? realloc(d->lens, cap * sizeof *lens) : NULL;
		if (!lens) {
			dict_off(d);
			return -1;
		}
		d->lens = lens;
		d->cap = cap;
	}
	if (is_bytes) {
		uint8_t l[4];
		fmt_wr_u32(l, (uint32_t)n);
		fmt_sb_put(&d->plain, (const char *)l, 4);
	}
	d->pos[d->n] = d->plain.len;
	d->lens[d->n] = (uint32_t)n;
	fmt_sb_put(&d->plain, (const char *)p, n);
	if (d->plain.oom) {
		dict_off(d);
		return -1;
	}
	d->slots[h] = d->n + 1;
	return d->n++;
}

/* ---- gathering rows ---- */

/* A byte-array column's statistics while its dictionary is on are those of the entries (every
 * value is one): taken from them when the dictionary goes off or the chunk is written, not per
 * value. */
static void stat_dict_entries(colw *c)
{
	for (uint32_t i = 0; i < c->d.n; i++)
		stat_bytes(c, (const uint8_t *)c->d.plain.p + c->d.pos[i], c->d.lens[i]);
}

/* The bytes of the PLAIN values held: plain's, or what it would hold while the values are only
 * in the dictionary (the row group's bound counts them so, as when they were copied). */
static uint64_t plain_len(const colw *c)
{
	return c->in_dict ? c->values * (uint64_t)c->width : c->plain.len;
}

/* A fixed-width column's values out of the dictionary into plain (PLAIN, each its entry's
 * bytes), for when the dictionary goes off or is not used: the column holds only the
 * dictionary and its indices until then. Out of memory sets plain.oom. */
static void values_out_of_dict(colw *c)
{
	if (!c->in_dict)
		return;
	c->in_dict = 0;
	size_t w = (size_t)c->width;
	char *at = fmt_sb_reserve_tight(&c->plain, (size_t)c->values * w);
	if (!at)
		return;
	for (uint64_t i = 0; i < c->values; i++)
		memcpy(at + i * w, c->d.plain.p + c->d.pos[c->idx[i]], w);
	fmt_sb_commit(&c->plain, (size_t)c->values * w);
}

/* The dictionary off and freed, a byte array's statistics taken from its entries first, a
 * fixed-width column's values out of it. */
static void give_up_dict(colw *c)
{
	if (c->is_bytes && c->d.on)
		stat_dict_entries(c);
	values_out_of_dict(c);
	dict_reset(&c->d, 0);
	free(c->idx);               /* no page of indices: idx_n stays counted (column_held) */
	c->idx = NULL;
	c->idx_cap = 0;
}

/* Value p[0..n) into the dictionary while it is on: its index into c->idx. */
static fmt_kind add_to_dict(colw *c, const uint8_t *p, size_t n, fmt_err *e)
{
	/* mostly distinct values: a dictionary will not pay, stop hashing them */
	if (c->d.on && c->values >= c->dict_probe && c->d.n > c->values / 4 * 3)
		give_up_dict(c);
	if (c->d.on) {
		int64_t i = dict_index(&c->d, p, n, c->is_bytes);
		if (i >= 0) {
			if (grow_as((void **)&c->idx, &c->idx_cap, c->values + 1, sizeof *c->idx, 0))
				return oom(e);
			c->idx[c->values] = (uint32_t)i;
			c->idx_n = c->values + 1;
		} else {
			values_out_of_dict(c);
		}
	}
	return c->plain.oom ? oom(e) : FMT_OK;
}

/* A byte array's add_to_dict, then its statistics once the dictionary is off (those of the
 * entries when it just went off). */
static fmt_kind dict_or_stat_bytes(colw *c, const uint8_t *p, size_t n, fmt_err *e)
{
	int dict_was_on = c->d.on;
	fmt_kind k = add_to_dict(c, p, n, e);
	if (!c->d.on) {
		if (dict_was_on)
			stat_dict_entries(c);
		stat_bytes(c, p, n);
	}
	return k;
}

static fmt_kind add_value(colw *c, const uint8_t *p, size_t n, fmt_err *e)
{
	fmt_kind k;
	if (c->is_bytes) {
		if (n > INT32_MAX)
			return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': a value over 2 GiB", c->f->name);
		if (grow_as((void **)&c->vpos, &c->vpos_cap, c->values + 2, sizeof *c->vpos, 0))
			return oom(e);
		uint8_t l[4];
		fmt_wr_u32(l, (uint32_t)n);
		fmt_sb_add(&c->plain, (const char *)l, 4);
		c->vpos[c->values] = c->plain.len;
		fmt_sb_add(&c->plain, (const char *)p, n);
		k = dict_or_stat_bytes(c, p, n, e);
	} else {
		stat_fixed(c, p);
		k = add_to_dict(c, p, n, e);
		if (!c->in_dict)
			fmt_sb_add(&c->plain, (const char *)p, n);
	}
	c->values++;
	return k != FMT_OK ? k : c->plain.oom ? oom(e) : FMT_OK;
}

/* Offset i of a utf8, binary (32 bits) or large_utf8 (64 bits) column; fmt_table_next checked
 * them: in order and inside the values. */
static inline uint64_t offset_of(const fmt_column *col, int large, uint64_t i)
{
	if (large)
		return fmt_rd_u64((const uint8_t *)col->offsets + i * 8);
	return fmt_rd_u32((const uint8_t *)col->offsets + i * 4);
}

/* add_rows for a byte-array column without nulls (values under 2 GiB): room for the run at
 * once, each value's length and bytes copied in place, then add_value's dictionary and
 * statistics steps. */
static fmt_kind add_bytes_run(colw *c, const fmt_column *col, uint64_t from, uint64_t count, fmt_err *e)
{
	int large = c->type == FMT_C_LARGE_UTF8;
	uint64_t bytes;
	if (fmt_mul_u64(count, 4, &bytes) ||
	    fmt_add_u64(bytes, offset_of(col, large, from + count) - offset_of(col, large, from), &bytes) ||
	    bytes > SIZE_MAX - 1)
		return oom(e);
	if (grow_as((void **)&c->vpos, &c->vpos_cap, c->values + count + 1, sizeof *c->vpos, 0) ||
	    !fmt_sb_reserve(&c->plain, (size_t)bytes))
		return oom(e);
	memset(c->defs + c->rows, 1, (size_t)count);
	c->rows += count;
	for (uint64_t r = from, a = offset_of(col, large, from); r < from + count; r++) {
		uint64_t z = offset_of(col, large, r + 1);
		size_t n = (size_t)(z - a);
		const uint8_t *p = col->values + a;
		uint8_t *at = (uint8_t *)c->plain.p + c->plain.len;
		fmt_wr_u32(at, (uint32_t)n);
		memcpy(at + 4, p, n);
		c->plain.len += 4 + n;
		c->vpos[c->values] = c->plain.len - n;
		fmt_kind k = dict_or_stat_bytes(c, p, n, e);
		if (k != FMT_OK)
			return k;
		c->values++;
		a = z;
	}
	c->plain.p[c->plain.len] = '\0';
	return FMT_OK;
}

/* add_rows for a boolean column without nulls: one byte a value, the minimum and maximum from
 * whether a false and a true were seen. */
static void add_bool_run(colw *c, const fmt_column *col, uint64_t from, uint64_t count)
{
	unsigned seen = 0; /* bit v: v seen */
	uint8_t *at = (uint8_t *)c->plain.p + c->plain.len;
	for (uint64_t r = from; r < from + count; r++) {
		uint8_t v = (uint8_t)(col->values[r >> 3] >> (r & 7) & 1);
		*at++ = v;
		seen |= 1u << v;
	}
	fmt_sb_commit(&c->plain, (size_t)count);
	memset(c->defs + c->rows, 1, (size_t)count);
	c->rows += count;
	c->values += count;
	if (!seen)
		return;
	uint8_t lo = !(seen & 1), hi = (seen & 2) != 0;
	if (!c->has_minmax || lo < c->min[0])
		c->min[0] = lo;
	if (!c->has_minmax || hi > c->max[0])
		c->max[0] = hi;
	c->has_minmax = 1;
}

/* Whether the column's values are their PLAIN bytes as they are (same width, no conversion). */
static int plain_as_is(const colw *c)
{
	if (c->is_bytes || c->ptype == PT_BOOLEAN)
		return 0;
	if (c->type == FMT_C_TIMESTAMP)
		return c->f->unit != FMT_TU_S;
	return fmt_ctype_width(c->type) == (size_t)c->width;
}

/* add_rows for a column without nulls whose values are already PLAIN: statistics in one pass,
 * the dictionary while it is on, then the values it did not take in one copy. */
static fmt_kind add_plain_values(colw *c, const uint8_t *src, uint64_t count, fmt_err *e)
{
	size_t w = (size_t)c->width;
	stat_run(c, src, (size_t)count);
	uint64_t i = 0;
	while (i < count && c->in_dict) {
		fmt_kind k = add_to_dict(c, src + i * w, w, e);
		if (k != FMT_OK)
			return k;
		if (!c->in_dict)
			break;  /* value i went to no dictionary */
		c->values++;
		i++;
	}
	if (i == count)
		return FMT_OK;
	size_t bytes = (size_t)(count - i) * w;
	char *at = fmt_sb_reserve_tight(&c->plain, bytes);
	if (!at)
		return oom(e);
	memcpy(at, src + i * w, bytes);
	fmt_sb_commit(&c->plain, bytes);
	c->values += count - i;
	return FMT_OK;
}

static fmt_kind add_plain_run(colw *c, const fmt_column *col, uint64_t from, uint64_t count, fmt_err *e)
{
	memset(c->defs + c->rows, 1, (size_t)count);
	c->rows += count;
	return add_plain_values(c, col->values + (size_t)from * (size_t)c->width, count, e);
}

static int elem_null(const fmt_column *col, uint64_t i)
{
	return col->elem_validity && !(col->elem_validity[i >> 3] >> (i & 7) & 1);
}

/* Row r of a list column that is not null: a level and a value per element. */
static fmt_kind add_list_row(colw *c, const fmt_column *col, uint64_t r, fmt_err *e)
{
	uint64_t first = r * c->list_size;
	if (!col->elem_validity && plain_as_is(c)) {
		memset(c->defs + c->levels, c->max_def, c->list_size);
		c->levels += c->list_size;
		return add_plain_values(c, col->values + (size_t)first * (size_t)c->width, c->list_size, e);
	}
	for (uint64_t i = first; i < first + c->list_size; i++) {
		uint8_t v[8];
		int null = elem_null(col, i);
		c->defs[c->levels++] = (uint8_t)(c->max_def - null);
		c->nulls += (uint64_t)null;
		if (null)
			continue;
		if (fixed_value(c, col, i, v))
			return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': a timestamp in seconds that "
					"milliseconds cannot hold", c->f->name);
		fmt_kind k = add_value(c, v, (size_t)c->width, e);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

/* add_rows for a list column: its level entries, its values as a flat column's. */
static fmt_kind add_list_rows(colw *c, const fmt_column *col, uint64_t from, uint64_t count, fmt_err *e)
{
	uint64_t items, need;
	if (fmt_mul_u64(count, c->list_size, &items) || fmt_add_u64(c->levels, items, &need) || need > SIZE_MAX / 2 ||
	    grow_as((void **)&c->defs, &c->defs_cap, (size_t)need, 1, 0))
		return oom(e);
	for (uint64_t r = from; r < from + count; r++) {
		c->rows++;
		if (fmt_column_is_null(col, r)) {
			c->defs[c->levels++] = 0;
			c->nulls++;
			continue;
		}
		fmt_kind k = add_list_row(c, col, r, e);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

static fmt_kind add_rows(colw *c, const fmt_column *col, uint64_t from, uint64_t count, fmt_err *e)
{
	if (c->list_size)
		return add_list_rows(c, col, from, count, e);
	if (grow_as((void **)&c->defs, &c->defs_cap, c->rows + count, 1, 1))
		return oom(e);
	if (!col->validity && plain_as_is(c))
		return add_plain_run(c, col, from, count, e);
	fmt_ctype t = c->type;
	if (!col->validity && (t == FMT_C_UTF8 || t == FMT_C_LARGE_UTF8 || t == FMT_C_BINARY) &&
	    offset_of(col, t == FMT_C_LARGE_UTF8, from + count) - offset_of(col, t == FMT_C_LARGE_UTF8, from) <= INT32_MAX)
		return add_bytes_run(c, col, from, count, e);
	if (!col->validity && c->ptype == PT_BOOLEAN) {
		if (!fmt_sb_reserve(&c->plain, (size_t)count))
			return oom(e);
		add_bool_run(c, col, from, count);
		return FMT_OK;
	}
	for (uint64_t r = from; r < from + count; r++) {
		int def = !fmt_column_is_null(col, r);
		c->defs[c->rows++] = (uint8_t)def;
		fmt_kind k = FMT_OK;
		if (!def) {
			c->nulls++;
			continue;
		}
		if (c->is_bytes) {
			const uint8_t *p;
			size_t n;
			fmt_column_bytes(col, c->type, r, &p, &n);
			k = add_value(c, p, n, e);
		} else {
			uint8_t v[8];
			if (fixed_value(c, col, r, v))
				return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': a timestamp in seconds that "
						"milliseconds cannot hold", c->f->name);
			k = add_value(c, v, (size_t)c->width, e);
		}
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

/* ---- pages ---- */

static fmt_kind put(writer *w, const void *p, size_t n, fmt_err *e)
{
	fmt_kind k = fmt_sink_write(w->k, p, n, e);
	w->off += n;
	return k;
}

/* A page: its header (type-specific struct by the caller in sub), then its body compressed. */
static fmt_kind emit_body(writer *w, colw *c, int type, const fmt_sb *sub, int16_t sub_id, const char *body,
			  size_t body_len, fmt_err *e)
{
	w->comp.len = 0;
	fmt_kind k = fmt_pq_compress(w->codec, w->level, (const uint8_t *)body, body_len, &w->comp, e);
	if (k != FMT_OK)
		return k;
	if (body_len > INT32_MAX || w->comp.len > INT32_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': a page over 2 GiB; use fewer --row-group-rows",
				c->f->name);
	int16_t last = 0;
	w->hdr.len = 0;
	fmt_pq_tw_i32(&w->hdr, &last, 1, type);
	fmt_pq_tw_i32(&w->hdr, &last, 2, (int32_t)body_len);
	fmt_pq_tw_i32(&w->hdr, &last, 3, (int32_t)w->comp.len);
	fmt_pq_tw_i32(&w->hdr, &last, 4, (int32_t)crc32(0, (const Bytef *)w->comp.p, (uInt)w->comp.len));
	fmt_pq_tw_field(&w->hdr, &last, sub_id, TC_STRUCT);
	fmt_sb_put(&w->hdr, sub->p, sub->len);
	fmt_pq_tw_stop(&w->hdr);
	if (w->hdr.oom || w->comp.oom)
		return oom(e);
	c->comp_total += w->hdr.len + w->comp.len;
	c->uncomp_total += w->hdr.len + body_len;
	k = put(w, w->hdr.p, w->hdr.len, e);
	return k == FMT_OK ? put(w, w->comp.p, w->comp.len, e) : k;
}

/* emit_body of the page built in w->page. */
static fmt_kind emit_page(writer *w, colw *c, int type, const fmt_sb *sub, int16_t sub_id, fmt_err *e)
{
	return emit_body(w, c, type, sub, sub_id, w->page.p, w->page.len, e);
}

static fmt_kind write_dict_page(writer *w, colw *c, fmt_err *e)
{
	fmt_sb sub = { 0 };
	int16_t last = 0;
	fmt_pq_tw_i32(&sub, &last, 1, (int32_t)c->d.n);
	fmt_pq_tw_i32(&sub, &last, 2, ENC_PLAIN);
	fmt_pq_tw_stop(&sub);
	w->page.len = 0;
	fmt_sb_put(&w->page, c->d.plain.p, c->d.plain.len);
	c->dict_off = w->off;
	fmt_kind k = sub.oom || w->page.oom ? oom(e) : emit_page(w, c, PAGE_DICTIONARY, &sub, 7, e);
	fmt_sb_free(&sub);
	return k;
}

/* n levels of w->levels, RLE of width bits after their length, to the page. */
static fmt_kind put_levels(writer *w, size_t n, int width, fmt_err *e)
{
	size_t at = w->page.len;
	fmt_sb_put(&w->page, "\0\0\0\0", 4);
	fmt_pq_rle_encode(&w->page, w->levels, n, width);
	if (w->page.oom)
		return oom(e);
	fmt_wr_u32((uint8_t *)w->page.p + at, (uint32_t)(w->page.len - at - 4));
	return FMT_OK;
}

/* A list's repetition levels of entries [l0, l1) (l0 a row's first) into w->levels: 0 where a
 * row begins (a null row is one entry, another list_size). */
static void list_reps(writer *w, const colw *c, uint64_t l0, uint64_t l1)
{
	uint64_t left = 0;
	for (uint64_t i = l0; i < l1; i++) {
		w->levels[i - l0] = left != 0;
		if (left == 0)
			left = c->defs[i] == 0 && c->f->nullable ? 1 : c->list_size;
		left--;
	}
}

/* The levels of entries [r0, r1) to the page: a list's repetition then definition levels, a
 * nullable column's definition levels, none for a required one. */
static fmt_kind write_levels(writer *w, colw *c, uint64_t r0, size_t rows, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	if (c->list_size) {
		list_reps(w, c, r0, r0 + rows);
		k = put_levels(w, rows, 1, e);
	}
	if (k != FMT_OK || (!c->f->nullable && !c->list_size))
		return k;
	for (size_t i = 0; i < rows; i++)
		w->levels[i] = c->defs[r0 + i];
	return put_levels(w, rows, c->list_size ? fmt_pq_bit_width((uint64_t)c->max_def) : 1, e);
}

/* Level entries (a flat column's rows) [r0, r1) holding values [v0, v1) as one data page v1. */
static fmt_kind write_data_page(writer *w, colw *c, uint64_t r0, uint64_t r1, uint64_t v0, uint64_t v1, fmt_err *e)
{
	w->page.len = 0;
	size_t rows = (size_t)(r1 - r0), vals = (size_t)(v1 - v0);
	if (grow_as((void **)&w->levels, &w->levels_cap, (rows > vals ? rows : vals) + 1, sizeof *w->levels, 0))
		return oom(e);
	fmt_kind lk = write_levels(w, c, r0, rows, e);
	if (lk != FMT_OK)
		return lk;
	int enc = ENC_PLAIN;
	const char *body = NULL;  /* the page's bytes in place, not copied to w->page */
	size_t body_len = 0;
	if (c->used_dict) {
		enc = ENC_RLE_DICTIONARY;
		int width = fmt_pq_bit_width(c->d.n ? c->d.n - 1 : 0);
		if (width == 0)
			width = 1;
		char b = (char)width;
		fmt_sb_put(&w->page, &b, 1);
		fmt_pq_rle_encode(&w->page, c->idx + v0, vals, width);
	} else if (c->ptype == PT_BOOLEAN) {
		size_t bytes = (vals + 7) / 8;
		uint8_t *dst = (uint8_t *)fmt_sb_reserve(&w->page, bytes);
		if (!dst)
			return oom(e);
		memset(dst, 0, bytes);
		for (size_t i = 0; i < vals; i++)
			dst[i >> 3] |= (uint8_t)(c->plain.p[v0 + i] << (i & 7));
		fmt_sb_commit(&w->page, bytes);
	} else if (!c->plain.p) {
		/* no value held (an empty or all-null column): the page is its levels */
	} else if (c->is_bytes) {
		size_t a = v0 ? (size_t)c->vpos[v0] - 4 : 0, z = v1 < c->values ? (size_t)c->vpos[v1] - 4 : c->plain.len;
		body = c->plain.p + a, body_len = z - a;
	} else {
		body = c->plain.p + v0 * (size_t)c->width, body_len = vals * (size_t)c->width;
	}
	if (body && w->page.len) {
		fmt_sb_put(&w->page, body, body_len);
		body = NULL;
	}
	if (w->page.oom)
		return oom(e);
	fmt_sb sub = { 0 };
	int16_t last = 0;
	fmt_pq_tw_i32(&sub, &last, 1, (int32_t)rows);
	fmt_pq_tw_i32(&sub, &last, 2, enc);
	fmt_pq_tw_i32(&sub, &last, 3, ENC_RLE);
	fmt_pq_tw_i32(&sub, &last, 4, ENC_RLE);
	fmt_pq_tw_stop(&sub);
	fmt_kind k = sub.oom ? oom(e) : body ? emit_body(w, c, PAGE_DATA, &sub, 5, body, body_len, e)
		: emit_page(w, c, PAGE_DATA, &sub, 5, e);
	fmt_sb_free(&sub);
	return k;
}

/* Dictionary encoding pays when the dictionary and the indices are smaller than PLAIN. */
static int dict_pays(const colw *c)
{
	if (!c->d.on || c->values == 0 || c->ptype == PT_BOOLEAN)
		return 0;
	uint64_t idx_bytes = c->values * (uint64_t)fmt_pq_bit_width(c->d.n) / 8 + 16;
	return c->d.plain.len + idx_bytes < plain_len(c);
}

/* A list's data pages, whole rows each: as many as make about PAGE_ROWS values (one at least). */
static fmt_kind write_list_pages(writer *w, colw *c, fmt_err *e)
{
	uint64_t per_page = PAGE_ROWS / c->list_size ? PAGE_ROWS / c->list_size : 1, l = 0, v = 0;
	fmt_kind k = FMT_OK;
	do {
		uint64_t l1 = l, v1 = v;
		for (uint64_t rows = 0; rows < per_page && l1 < c->levels; rows++) {
			uint64_t n = c->defs[l1] == 0 && c->f->nullable ? 1 : c->list_size;
			for (uint64_t i = l1; i < l1 + n; i++)
				v1 += c->defs[i] == c->max_def;
			l1 += n;
		}
		k = write_data_page(w, c, l, l1, v, v1, e);
		l = l1, v = v1;
	} while (k == FMT_OK && l < c->levels);
	return k;
}

static fmt_kind write_chunk(writer *w, colw *c, fmt_err *e)
{
	c->start = w->off;
	c->comp_total = c->uncomp_total = 0;
	if (c->is_bytes && c->d.on)
		stat_dict_entries(c);
	c->used_dict = dict_pays(c);
	if (!c->used_dict)
		values_out_of_dict(c);
	/* the byte-array statistics too: a minimum or maximum that could not be copied is missing */
	fmt_kind k = c->plain.oom || c->smin.oom || c->smax.oom ? oom(e) : FMT_OK;
	if (c->used_dict)
		k = write_dict_page(w, c, e);
	c->data_off = w->off;
	if (c->list_size)
		return k == FMT_OK ? write_list_pages(w, c, e) : k;
	uint64_t r = 0, v = 0;
	do {
		uint64_t r1 = c->rows - r > PAGE_ROWS ? r + PAGE_ROWS : c->rows, v1 = v + (r1 - r);
		if (c->nulls) { /* else every row holds a value */
			v1 = v;
			for (uint64_t i = r; i < r1; i++)
				v1 += c->defs[i];
		}
		if (k == FMT_OK)
			k = write_data_page(w, c, r, r1, v, v1, e);
		r = r1, v = v1;
	} while (k == FMT_OK && r < c->rows);
	return k;
}

/* ---- the footer's structs ---- */

static void put_stats(fmt_sb *o, const colw *c)
{
	int16_t last = 0;
	fmt_pq_tw_i64(o, &last, 3, (int64_t)c->nulls);
	if (c->has_minmax) {
		const void *mx = c->is_bytes ? (const void *)c->smax.p : c->max;
		const void *mn = c->is_bytes ? (const void *)c->smin.p : c->min;
		size_t mxn = c->is_bytes ? c->smax.len : (size_t)c->width, mnn = c->is_bytes ? c->smin.len : (size_t)c->width;
		uint8_t zmin[8], zmax[8];
		if (!c->is_bytes && (c->type == FMT_C_F32 || c->type == FMT_C_F64)) {
			/* the spec's rule for zeros: a minimum of +0 is written -0, a maximum of -0 as +0 */
			memcpy(zmin, mn, mnn), memcpy(zmax, mx, mxn);
			double a = c->type == FMT_C_F32 ? (double)*(const float *)(const void *)zmin : *(const double *)(const void *)zmin;
			double b = c->type == FMT_C_F32 ? (double)*(const float *)(const void *)zmax : *(const double *)(const void *)zmax;
			if (a == 0)
				zmin[mnn - 1] |= 0x80;
			if (b == 0)
				zmax[mxn - 1] &= 0x7f;
			mn = zmin, mx = zmax;
		}
		fmt_pq_tw_bin(o, &last, 5, mx, mxn);
		fmt_pq_tw_bin(o, &last, 6, mn, mnn);
	}
	fmt_pq_tw_stop(o);
}

static void put_column_chunk(fmt_sb *o, const colw *c, int codec)
{
	int16_t last = 0, ml = 0;
	fmt_pq_tw_i64(o, &last, 2, (int64_t)c->start);
	fmt_pq_tw_field(o, &last, 3, TC_STRUCT);
	fmt_pq_tw_i32(o, &ml, 1, c->ptype);
	fmt_pq_tw_field(o, &ml, 2, TC_LIST);
	int encs[3], n = 0;
	encs[n++] = c->used_dict ? ENC_RLE_DICTIONARY : ENC_PLAIN;
	if (c->used_dict)
		encs[n++] = ENC_PLAIN;
	encs[n++] = ENC_RLE;
	fmt_pq_tw_list(o, TC_I32, (uint32_t)n);
	for (int i = 0; i < n; i++)
		fmt_pq_tw_varint(o, (uint64_t)encs[i] << 1);
	fmt_pq_tw_field(o, &ml, 3, TC_LIST);
	fmt_pq_tw_list(o, TC_BINARY, c->list_size ? 3 : 1);
	fmt_pq_tw_varint(o, strlen(c->f->name));
	fmt_sb_puts(o, c->f->name);
	if (c->list_size) {
		fmt_pq_tw_varint(o, 4);
		fmt_sb_puts(o, "list");
		fmt_pq_tw_varint(o, 7);
		fmt_sb_puts(o, "element");
	}
	fmt_pq_tw_i32(o, &ml, 4, codec);
	fmt_pq_tw_i64(o, &ml, 5, (int64_t)(c->list_size ? c->levels : c->rows));
	fmt_pq_tw_i64(o, &ml, 6, (int64_t)c->uncomp_total);
	fmt_pq_tw_i64(o, &ml, 7, (int64_t)c->comp_total);
	fmt_pq_tw_i64(o, &ml, 9, (int64_t)c->data_off);
	if (c->used_dict)
		fmt_pq_tw_i64(o, &ml, 11, (int64_t)c->dict_off);
	fmt_pq_tw_field(o, &ml, 12, TC_STRUCT);
	put_stats(o, c);
	fmt_pq_tw_stop(o);   /* ColumnMetaData */
	fmt_pq_tw_stop(o);   /* ColumnChunk */
}

static void put_row_group(writer *w, uint64_t rows)
{
	fmt_sb *o = &w->groups;
	int16_t last = 0;
	uint64_t comp = 0, uncomp = 0;
	fmt_pq_tw_field(o, &last, 1, TC_LIST);
	fmt_pq_tw_list(o, TC_STRUCT, (uint32_t)w->n);
	for (size_t i = 0; i < w->n; i++) {
		put_column_chunk(o, &w->cols[i], w->codec);
		comp += w->cols[i].comp_total;
		uncomp += w->cols[i].uncomp_total;
	}
	fmt_pq_tw_i64(o, &last, 2, (int64_t)uncomp);
	fmt_pq_tw_i64(o, &last, 3, (int64_t)rows);
	fmt_pq_tw_i64(o, &last, 5, (int64_t)(w->n ? w->cols[0].start : w->off));
	fmt_pq_tw_i64(o, &last, 6, (int64_t)comp);
	fmt_pq_tw_field(o, &last, 7, TC_I16);
	fmt_pq_tw_varint(o, ((uint64_t)w->n_groups << 1));
	fmt_pq_tw_stop(o);
}

static void reset_column(colw *c)
{
	c->rows = c->nulls = c->values = c->levels = c->idx_n = 0;
	c->plain.len = 0;
	c->smin.len = c->smax.len = 0;
	c->has_minmax = 0;
	dict_reset(&c->d, c->ptype != PT_BOOLEAN);
	c->in_dict = c->d.on && !c->is_bytes;
}

#define GROUPS_SPILL "a temporary file for the footer's row groups"

/* The RowGroup structs held so far to the spill file (made at the first). */
static fmt_kind spill_groups(writer *w, fmt_err *e)
{
	if (!w->spill && !(w->spill = fmt_temp_file(GROUPS_SPILL, e)))
		return e->kind;
	fmt_kind k = fmt_temp_file_write(w->spill, GROUPS_SPILL, w->groups.p, w->groups.len, e);
	if (k != FMT_OK)
		return k;
	w->spilled += w->groups.len;
	w->groups.len = 0;
	return FMT_OK;
}

static fmt_kind put_replayed(void *ctx, const void *p, size_t n, fmt_err *e)
{
	return put(ctx, p, n, e);
}

/* The spilled structs, then those held, to the output. */
static fmt_kind put_groups(writer *w, fmt_err *e)
{
	fmt_kind k = w->spill ? fmt_temp_file_replay(w->spill, GROUPS_SPILL,
						     put_replayed, w, e)
			      : FMT_OK;
	return k == FMT_OK ? put(w, w->groups.p, w->groups.len, e) : k;
}

static fmt_kind flush_group(writer *w, fmt_err *e)
{
	uint64_t rows = w->n ? w->cols[0].rows : 0;
	if (rows == 0)
		return FMT_OK;
	for (size_t i = 0; i < w->n; i++) {
		fmt_kind k = write_chunk(w, &w->cols[i], e);
		if (k != FMT_OK)
			return k;
	}
	if (w->n_groups == INT16_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: more than 32767 row groups; use more --row-group-rows or "
				"--row-group-bytes");
	put_row_group(w, rows);
	w->n_groups++;
	w->total_rows += rows;
	for (size_t i = 0; i < w->n; i++)
		reset_column(&w->cols[i]);
	if (w->groups.oom)
		return oom(e);
	return w->groups.len >= GROUPS_HELD ? spill_groups(w, e) : FMT_OK;
}

/* The schema element of a column's values: type, repetition, name, converted and logical
 * types. */
static void put_leaf(fmt_sb *o, const colw *c, const char *name, int repetition)
{
	const fmt_field *f = c->f;
	int16_t last = 0;
	fmt_pq_tw_i32(o, &last, 1, c->ptype);
	if (c->ptype == PT_FLBA)
		fmt_pq_tw_i32(o, &last, 2, c->width);
	fmt_pq_tw_i32(o, &last, 3, repetition);
	fmt_pq_tw_bin(o, &last, 4, name, strlen(name));
	int converted = -1, bits = 0, is_signed = 1;
	switch (c->type) {
	case FMT_C_I8: converted = 15; bits = 8; break;
	case FMT_C_I16: converted = 16; bits = 16; break;
	case FMT_C_U8: converted = 11; bits = 8; is_signed = 0; break;
	case FMT_C_U16: converted = 12; bits = 16; is_signed = 0; break;
	case FMT_C_U32: converted = 13; bits = 32; is_signed = 0; break;
	case FMT_C_U64: converted = 14; bits = 64; is_signed = 0; break;
	case FMT_C_UTF8: case FMT_C_LARGE_UTF8: converted = 0; break;
	case FMT_C_DATE32: converted = 6; break;
	case FMT_C_TIMESTAMP:
		if (f->timezone && f->unit != FMT_TU_NS)
			converted = f->unit == FMT_TU_US ? 10 : 9;
		break;
	default: break;
	}
	if (converted >= 0)
		fmt_pq_tw_i32(o, &last, 6, converted);
	int16_t ll = 0, pl = 0;
	if (bits) {
		fmt_pq_tw_field(o, &last, 10, TC_STRUCT);
		fmt_pq_tw_field(o, &ll, 10, TC_STRUCT);
		fmt_pq_tw_field(o, &pl, 1, TC_BYTE);
		fmt_sb_put(o, (const char *)&(int8_t){ (int8_t)bits }, 1);
		fmt_pq_tw_bool(o, &pl, 2, is_signed);
		fmt_pq_tw_stop(o);
		fmt_pq_tw_stop(o);
	} else if (c->type == FMT_C_UTF8 || c->type == FMT_C_LARGE_UTF8 || c->type == FMT_C_DATE32 ||
		   c->type == FMT_C_F16) {
		int16_t id = c->type == FMT_C_DATE32 ? 6 : c->type == FMT_C_F16 ? 15 : 1;
		fmt_pq_tw_field(o, &last, 10, TC_STRUCT);
		fmt_pq_tw_field(o, &ll, id, TC_STRUCT);
		fmt_pq_tw_stop(o);
		fmt_pq_tw_stop(o);
	} else if (c->type == FMT_C_TIMESTAMP) {
		int16_t ul = 0;
		fmt_pq_tw_field(o, &last, 10, TC_STRUCT);
		fmt_pq_tw_field(o, &ll, 8, TC_STRUCT);
		fmt_pq_tw_bool(o, &pl, 1, f->timezone != NULL);
		fmt_pq_tw_field(o, &pl, 2, TC_STRUCT);
		fmt_pq_tw_field(o, &ul, f->unit == FMT_TU_US ? 2 : f->unit == FMT_TU_NS ? 3 : 1, TC_STRUCT);
		fmt_pq_tw_stop(o);   /* the unit's empty struct */
		fmt_pq_tw_stop(o);   /* TimeUnit */
		fmt_pq_tw_stop(o);   /* TimestampType */
		fmt_pq_tw_stop(o);   /* LogicalType */
	}
	fmt_pq_tw_stop(o);
}

/* A group of one child: its repetition, name, and for a LIST its converted and logical types. */
static void put_group(fmt_sb *o, const char *name, int repetition, int is_list)
{
	int16_t last = 0, ll = 0;
	fmt_pq_tw_i32(o, &last, 3, repetition);
	fmt_pq_tw_bin(o, &last, 4, name, strlen(name));
	fmt_pq_tw_i32(o, &last, 5, 1);
	if (is_list) {
		fmt_pq_tw_i32(o, &last, 6, 3);           /* ConvertedType LIST */
		fmt_pq_tw_field(o, &last, 10, TC_STRUCT);
		fmt_pq_tw_field(o, &ll, 3, TC_STRUCT);   /* LogicalType LIST: an empty struct */
		fmt_pq_tw_stop(o);
		fmt_pq_tw_stop(o);
	}
	fmt_pq_tw_stop(o);
}

/* A column's schema elements: a flat one's leaf, or a list's three levels (a LIST group, its
 * repeated group "list", an optional "element"), as Arrow and DuckDB write them. */
static void put_element(fmt_sb *o, const colw *c)
{
	int rep = c->f->nullable ? REP_OPTIONAL : REP_REQUIRED;
	if (!c->list_size) {
		put_leaf(o, c, c->f->name, rep);
		return;
	}
	put_group(o, c->f->name, rep, 1);
	put_group(o, "list", REP_REPEATED, 0);
	put_leaf(o, c, "element", REP_OPTIONAL);
}

static void put_key_value(fmt_sb *o, const char *key, const char *value)
{
	int16_t kl = 0;
	fmt_pq_tw_bin(o, &kl, 1, key, strlen(key));
	fmt_pq_tw_bin(o, &kl, 2, value, strlen(value));
	fmt_pq_tw_stop(o);
}

static fmt_kind write_footer(writer *w, fmt_err *e)
{
	fmt_sb o = { 0 };
	int16_t last = 0;
	char *arrow_schema;
	fmt_kind k = fmt_pq_arrow_schema_value(w->s, &arrow_schema, e);
	if (k != FMT_OK)
		return k;
	fmt_pq_tw_i32(&o, &last, 1, 1);
	fmt_pq_tw_field(&o, &last, 2, TC_LIST);
	size_t lists = 0;
	for (size_t i = 0; i < w->n; i++)
		lists += w->cols[i].list_size != 0;
	fmt_pq_tw_list(&o, TC_STRUCT, (uint32_t)(w->n + 1 + 2 * lists));
	int16_t rl = 0;
	fmt_pq_tw_bin(&o, &rl, 4, "schema", 6);
	fmt_pq_tw_i32(&o, &rl, 5, (int32_t)w->n);
	fmt_pq_tw_stop(&o);
	for (size_t i = 0; i < w->n; i++)
		put_element(&o, &w->cols[i]);
	fmt_pq_tw_i64(&o, &last, 3, (int64_t)w->total_rows);
	fmt_pq_tw_field(&o, &last, 4, TC_LIST);
	fmt_pq_tw_list(&o, TC_STRUCT, w->n_groups);
	size_t head = o.len;        /* the row groups' structs come after these bytes */
	size_t n_kv = arrow_schema != NULL;
	for (size_t i = 0; i < w->s->n_meta; i++)
		n_kv += strcmp(w->s->meta[i].key, FMT_PQ_ARROW_SCHEMA) != 0;
	if (n_kv) {
		fmt_pq_tw_field(&o, &last, 5, TC_LIST);
		fmt_pq_tw_list(&o, TC_STRUCT, (uint32_t)n_kv);
		for (size_t i = 0; i < w->s->n_meta; i++) {
			/* Arrow's own schema would describe the file pyarrow wrote, not this one */
			if (strcmp(w->s->meta[i].key, FMT_PQ_ARROW_SCHEMA) == 0)
				continue;
			put_key_value(&o, w->s->meta[i].key, w->s->meta[i].value);
		}
		if (arrow_schema)
			put_key_value(&o, FMT_PQ_ARROW_SCHEMA, arrow_schema);
	}
	const char *by = "fmtkit version " FMTKIT_VERSION;
	fmt_pq_tw_bin(&o, &last, 6, by, strlen(by));
	fmt_pq_tw_field(&o, &last, 7, TC_LIST);
	fmt_pq_tw_list(&o, TC_STRUCT, (uint32_t)w->n);
	for (size_t i = 0; i < w->n; i++) {
		int16_t cl = 0;
		fmt_pq_tw_field(&o, &cl, 1, TC_STRUCT);  /* TYPE_ORDER: an empty struct */
		fmt_pq_tw_stop(&o);
		fmt_pq_tw_stop(&o);
	}
	fmt_pq_tw_stop(&o);
	uint8_t tail[8];
	uint64_t len = (uint64_t)o.len + w->spilled + w->groups.len;
	fmt_wr_u32(tail, (uint32_t)len);
	memcpy(tail + 4, "PAR1", 4);
	if (o.oom)
		k = oom(e);
	else if (len > UINT32_MAX)
		k = fmt_fail(e, FMT_UNSUPPORTED, "Parquet: a footer over 4 GiB; use more --row-group-bytes");
	else
		k = put(w, o.p, head, e);
	if (k == FMT_OK)
		k = put_groups(w, e);
	if (k == FMT_OK)
		k = put(w, o.p + head, o.len - head, e);
	if (k == FMT_OK)
		k = put(w, tail, 8, e);
	fmt_sb_free(&o);
	free(arrow_schema);
	return k;
}

/* The columns' buffers of values (their schema stays, for the footer). */
static void columns_free(writer *w)
{
	for (size_t i = 0; w->cols && i < w->n; i++) {
		colw *c = &w->cols[i];
		free(c->defs), free(c->vpos), free(c->idx);
		c->defs = NULL, c->vpos = NULL, c->idx = NULL;
		c->defs_cap = c->vpos_cap = c->idx_cap = 0;
		fmt_sb_free(&c->plain), fmt_sb_free(&c->smin), fmt_sb_free(&c->smax);
		dict_reset(&c->d, 0);
	}
}

static void writer_free(writer *w)
{
	columns_free(w);
	free(w->cols);
	free(w->levels);
	fmt_sb_free(&w->page), fmt_sb_free(&w->comp), fmt_sb_free(&w->hdr), fmt_sb_free(&w->groups);
	if (w->spill)
		fclose(w->spill);
}

/* ---- the row group's bound in bytes ---- */

/* What column c holds for the open row group: its levels, values (and where byte arrays
 * start), dictionary indices and dictionary (entries, where each starts and its length, the
 * hash slots). */
static uint64_t column_held(const colw *c)
{
	uint64_t n = (c->list_size ? c->levels : c->rows) + plain_len(c) + c->idx_n * 4;
	if (c->is_bytes)
		n += c->values * 8;
	return n + c->d.plain.len + (uint64_t)c->d.n * 12 + c->d.n_slots * 4;
}

static uint64_t group_held(const writer *w)
{
	uint64_t n = 0;
	for (size_t i = 0; i < w->n; i++)
		n += column_held(&w->cols[i]);
	return n;
}

/* What a row from position at of b on adds, about: its levels and values (byte arrays: their
 * mean length in the rest of b, their length and where each starts), and while a dictionary is
 * on, its index and a new entry (the value, where it starts and its length, two hash slots). */
static uint64_t row_cost(const writer *w, const fmt_batch *b, uint64_t at)
{
	uint64_t n = 0;
	for (size_t i = 0; i < w->n; i++) {
		const colw *c = &w->cols[i];
		uint64_t each = (uint64_t)c->width, per = c->list_size ? c->list_size : 1;
		if (c->is_bytes) {
			int large = c->type == FMT_C_LARGE_UTF8;
			const fmt_column *col = &b->columns[i];
			each = 12 + (offset_of(col, large, b->n_rows) - offset_of(col, large, at)) / (b->n_rows - at);
		}
		n += per * (1 + each + (c->d.on ? 4 + each + 20 : 0));
	}
	return n;
}

/* The rows of b from at on to add before the row group is checked against its bound of bytes:
 * half of what the bound leaves, at the group's mean bytes a row (or row_cost's when more),
 * one at least. */
static uint64_t rows_within(const writer *w, const fmt_batch *b, uint64_t at, uint64_t bound)
{
	uint64_t held = group_held(w), rows = w->cols[0].rows, per = row_cost(w, b, at);
	if (rows && held / rows > per)
		per = held / rows;
	uint64_t n = held < bound ? (bound - held) / per / 2 : 0;
	return n ? n : 1;
}

/* A dictionary given up to make room: give_up_dict, and the values' indices no longer counted. */
static void drop_dict(colw *c)
{
	give_up_dict(c);
	c->idx_n = 0;
}

/* The dictionaries of the row group that do not pay so far (or went off already) dropped;
 * whether any was. */
static int drop_dicts(writer *w)
{
	int any = 0;
	for (size_t i = 0; i < w->n; i++) {
		colw *c = &w->cols[i];
		if ((c->d.on && !dict_pays(c)) || (!c->d.on && (c->d.n || c->idx_n))) {
			drop_dict(c);
			any = 1;
		}
	}
	return any;
}

/* Whether the row group holds its bound of bytes, or as near as another row (at its mean) would
 * pass it, once the dictionaries that do not pay are dropped: a table of many columns of
 * distinct values would otherwise end its groups at a few hundred rows, its dictionaries
 * holding 4 times its values. */
static int group_full(writer *w, uint64_t bound)
{
	uint64_t rows = w->cols[0].rows, held = group_held(w);
	if (!rows || held + held / rows < bound)
		return 0;
	if (!drop_dicts(w))
		return 1;
	held = group_held(w);
	return held + held / rows >= bound;
}

static fmt_kind add_batch(writer *w, const fmt_batch *b, uint64_t group_rows, uint64_t group_bytes, fmt_err *e)
{
	uint64_t at = 0;
	while (at < b->n_rows) {
		uint64_t room = group_rows - w->cols[0].rows, take = b->n_rows - at < room ? b->n_rows - at : room;
		if (group_bytes) {
			uint64_t fit = rows_within(w, b, at, group_bytes);
			take = take < fit ? take : fit;
		}
		for (size_t i = 0; i < w->n; i++) {
			fmt_kind k = add_rows(&w->cols[i], &b->columns[i], at, take, e);
			if (k != FMT_OK)
				return k;
		}
		at += take;
		if (w->cols[0].rows == group_rows || (group_bytes && group_full(w, group_bytes))) {
			fmt_kind k = flush_group(w, e);
			if (k != FMT_OK)
				return k;
		}
	}
	return FMT_OK;
}

fmt_kind fmt_pq_write(fmt_table *in, fmt_sink *k, int codec, int level, uint64_t group_rows, uint64_t group_bytes,
		      fmt_err *e)
{
	writer w = { .k = k, .s = &in->schema, .n = in->schema.n_fields, .codec = codec, .level = level };
	const fmt_field *u = fmt_schema_unsupported(&in->schema);
	if (u)
		return fmt_fail(e, FMT_UNSUPPORTED, "column '%s' has type %s, which fmtkit does not convert", u->name,
				u->type_name);
	if (w.n == 0)
		return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: a table without columns");
	if (!(w.cols = calloc(w.n, sizeof *w.cols)))
		return oom(e);
	/* A dictionary of mostly distinct values is given up after 4096 values, or fewer when the
	 * columns' dictionaries would hold more than a quarter of the row group's bound of bytes by
	 * then (about 48 bytes an entry of 8: the value, where it starts, its length, hash slots),
	 * 16 at least: a narrow table's (up to 16 columns at the default bound) as before */
	uint64_t probe = group_bytes ? group_bytes / 4 / 48 / w.n : 4096;
	probe = probe > 4096 ? 4096 : probe < 16 ? 16 : probe;
	for (size_t i = 0; i < w.n; i++) {
		const fmt_field *f = &in->schema.fields[i];
		if (f->type == FMT_C_FIXED_SIZE_LIST && f->list_size > PQ_MAX_LIST) {
			writer_free(&w);
			return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': lists of %u values (fmtkit writes up to %u "
					"a row)", f->name, f->list_size, PQ_MAX_LIST);
		}
		w.cols[i].f = f;
		w.cols[i].type = f->type == FMT_C_FIXED_SIZE_LIST ? f->elem : f->type;
		w.cols[i].list_size = f->type == FMT_C_FIXED_SIZE_LIST ? f->list_size : 0;
		w.cols[i].max_def = f->nullable ? 3 : 2;
		w.cols[i].dict_probe = probe;
		physical_of(&w.cols[i]);
		reset_column(&w.cols[i]);
	}
	fmt_kind r = put(&w, "PAR1", 4, e);
	while (r == FMT_OK) {
		fmt_batch b;
		int done;
		if ((r = fmt_table_next(in, &b, &done, e)) != FMT_OK)
			break;
		if (!done)
			r = add_batch(&w, &b, group_rows, group_bytes, e);
		fmt_batch_free(&b);
		if (done)
			break;
	}
	if (r == FMT_OK)
		r = flush_group(&w, e);
	columns_free(&w);           /* not held beside the footer */
	if (r == FMT_OK)
		r = write_footer(&w, e);
	writer_free(&w);
	return r;
}
