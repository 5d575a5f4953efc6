/* Rows [start, start + count) of a batch as a batch of their own: fixed-width values are
 * pointed into, bitmaps shifted and string offsets rebased into memory the slice owns. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/table.h"
#include "rows_internal.h"

static int get_bit(const uint8_t *bits, uint64_t i)
{
	return (bits[i >> 3] >> (i & 7)) & 1;
}

/* A copy of bits [start, start + n) starting at bit 0, owned by b; NULL on failure. */
static uint8_t *shift_bits(fmt_batch *b, const uint8_t *bits, uint64_t start, uint64_t n, fmt_err *e)
{
	uint8_t *out = calloc((size_t)(n / 8 + 1), 1);
	if (!out) {
		fmt_fail(e, FMT_IO, "out of memory");
		return NULL;
	}
	if (start % 8 == 0)
		memcpy(out, bits + start / 8, (size_t)((n + 7) / 8));
	else
		for (uint64_t i = 0; i < n; i++)
			if (get_bit(bits, start + i))
				out[i >> 3] |= (uint8_t)(1u << (i & 7));
	return fmt_batch_own(b, out, e) == FMT_OK ? out : NULL;
}

static uint64_t zeros(const uint8_t *bits, uint64_t n)
{
	uint64_t z = 0, i = 0;
	for (; i + 8 <= n; i += 8)
		z += 8u - (unsigned)__builtin_popcount(bits[i >> 3]);
	for (; i < n; i++)
		z += !get_bit(bits, i);
	return z;
}

static fmt_kind slice_column(fmt_batch *dst, const fmt_field *f, const fmt_column *c, uint64_t start,
			     uint64_t count, fmt_column *out, fmt_err *e)
{
	memset(out, 0, sizeof *out);
	if (c->validity) {
		uint8_t *v = shift_bits(dst, c->validity, start, count, e);
		if (!v)
			return e->kind;
		out->null_count = zeros(v, count);
		out->validity = out->null_count ? v : NULL;
	}
	switch (f->type) {
	case FMT_C_OTHER: /* left empty by its reader */
		return FMT_OK;
	case FMT_C_BOOL: {
		uint8_t *v = shift_bits(dst, c->values, start, count, e);
		if (!v)
			return e->kind;
		out->values = v;
		out->values_len = (count + 7) / 8;
		return FMT_OK;
	}
	case FMT_C_UTF8: case FMT_C_BINARY: case FMT_C_LARGE_UTF8: {
		int large = f->type == FMT_C_LARGE_UTF8;
		size_t w = large ? 8 : 4;
		const uint8_t *o = c->offsets;
		uint64_t base = large ? fmt_rd_u64(o + 8 * start) : fmt_rd_u32(o + 4 * start);
		uint8_t *no = malloc((size_t)((count + 1) * w));
		if (!no || fmt_batch_own(dst, no, e) != FMT_OK)
			return no ? e->kind : fmt_fail(e, FMT_IO, "out of memory");
		for (uint64_t i = 0; i <= count; i++) {
			if (large)
				fmt_wr_u64(no + 8 * i, fmt_rd_u64(o + 8 * (start + i)) - base);
			else
				fmt_wr_u32(no + 4 * i, fmt_rd_u32(o + 4 * (start + i)) - (uint32_t)base);
		}
		uint64_t end = large ? fmt_rd_u64(no + 8 * count) : fmt_rd_u32(no + 4 * count);
		out->offsets = no;
		out->values = c->values + base;
		out->values_len = end;
		return FMT_OK;
	}
	case FMT_C_FIXED_SIZE_LIST: {
		size_t w = fmt_ctype_width(f->elem);
		uint64_t first = start * f->list_size, items = count * f->list_size;
		out->values = c->values + first * w;
		out->values_len = items * w;
		if (c->elem_validity) {
			uint8_t *v = shift_bits(dst, c->elem_validity, first, items, e);
			if (!v)
				return e->kind;
			out->elem_validity = zeros(v, items) ? v : NULL;
		}
		return FMT_OK;
	}
	default: {
		size_t w = fmt_ctype_width(f->type);
		out->values = c->values + start * w;
		out->values_len = count * w;
		return FMT_OK;
	}
	}
}

fmt_kind fmt_batch_slice(const fmt_schema *s, const fmt_batch *src, uint64_t start, uint64_t count,
			 fmt_batch *dst, fmt_err *e)
{
	fmt_kind k = fmt_batch_init(dst, s->n_fields, e);
	if (k != FMT_OK)
		return k;
	dst->n_rows = count;
	for (size_t i = 0; i < s->n_fields && k == FMT_OK; i++)
		k = slice_column(dst, &s->fields[i], &src->columns[i], start, count, &dst->columns[i], e);
	if (k != FMT_OK)
		fmt_batch_free(dst);
	return k;
}

/* ---- a big batch handed on in slices ---- */

/* The batch a slicer cuts, and a reference per slice handed out and the slicer's own. */
typedef struct share {
	atomic_uint refs;
	fmt_batch b;
} share;

void fmt_batch_share_release(void *p)
{
	share *sh = p;
	if (atomic_fetch_sub(&sh->refs, 1) == 1) {
		fmt_batch_free(&sh->b);
		free(sh);
	}
}

/* The bytes of rows [a, b) of column c: its values, offsets, string bytes and bitmaps. */
static uint64_t rows_bytes(const fmt_field *f, const fmt_column *c, uint64_t a, uint64_t b)
{
	uint64_t n = b - a, bits = c->validity ? n / 8 + 1 : 0;
	switch (f->type) {
	case FMT_C_OTHER:
		return 0;
	case FMT_C_BOOL:
		return bits + n / 8 + 1;
	case FMT_C_UTF8: case FMT_C_BINARY:
		return bits + 4 * n + (fmt_rd_u32((const uint8_t *)c->offsets + 4 * b) -
				       fmt_rd_u32((const uint8_t *)c->offsets + 4 * a));
	case FMT_C_LARGE_UTF8:
		return fmt_sat_add_u64(bits + 8 * n, fmt_rd_u64((const uint8_t *)c->offsets + 8 * b) -
				       fmt_rd_u64((const uint8_t *)c->offsets + 8 * a));
	case FMT_C_FIXED_SIZE_LIST: {
		uint64_t items = fmt_sat_mul_u64(n, f->list_size);
		return fmt_sat_add_u64(bits + (c->elem_validity ? items / 8 + 1 : 0),
				       fmt_sat_mul_u64(items, fmt_ctype_width(f->elem)));
	}
	default:
		return bits + fmt_sat_mul_u64(n, fmt_ctype_width(f->type));
	}
}

static uint64_t batch_bytes(const fmt_schema *s, const fmt_batch *b, uint64_t from, uint64_t to)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < s->n_fields; i++)
		sum = fmt_sat_add_u64(sum, rows_bytes(&s->fields[i], &b->columns[i], from, to));
	return sum;
}

/* Where the slice from row sl->at ends: the first multiple of 8 rows past it whose rows reach the
 * target, or one step of 8 before when that passes FMT_SLICE_BYTES (a row of strings far longer
 * than the others), or the batch's end. */
static uint64_t slice_end(const fmt_batch_slicer *sl, const fmt_schema *s, const fmt_batch *b)
{
	uint64_t at = sl->at, n = b->n_rows, steps = (n - at + 7) / 8, lo = 1, hi = steps;
#define END_OF(k) ((k) >= steps ? n : at + 8 * (k))
	if (batch_bytes(s, b, at, n) <= sl->target)
		return n;
	while (lo < hi) {      /* the least k with the rows to END_OF(k) reaching the target */
		uint64_t mid = lo + (hi - lo) / 2;
		if (batch_bytes(s, b, at, END_OF(mid)) >= sl->target)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo > 1 && batch_bytes(s, b, at, END_OF(lo)) > FMT_SLICE_BYTES)
		lo--;
	return END_OF(lo);
#undef END_OF
}

/* n bytes at p of the batch being sliced: p itself, or when they lie in src's mapping a copy read
 * from the file that the slice owns (*out NULL: out of memory or a read error, in e). */
static fmt_kind fetch(const fmt_source *src, fmt_batch *slice, const uint8_t *p, uint64_t n, const uint8_t **out,
		      fmt_err *e)
{
	uint64_t off = src && p && n ? fmt_source_mapped_at(src, p, (size_t)n) : UINT64_MAX;
	*out = p;
	if (off == UINT64_MAX)
		return FMT_OK;
	uint8_t *copy = fmt_batch_buffer((size_t)n);
	fmt_kind k = copy ? fmt_batch_own_buffer(slice, copy, e) : fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		k = fmt_source_pread(src, off, copy, (size_t)n, e);
	*out = copy;
	return k;
}

/* Offsets o of n rows (w bytes each) starting at row 0: o itself when they do, else rebased into
 * the copy fetch made (owned when it differs from from) or a new one; NULL: out of memory. */
static const uint8_t *rebased(fmt_batch *slice, const uint8_t *o, const uint8_t *from, uint64_t w, uint64_t n,
			      fmt_err *e)
{
	uint64_t first = w == 8 ? fmt_rd_u64(o) : fmt_rd_u32(o);
	if (first == 0)
		return o;
	uint8_t *r = o != from ? (uint8_t *)o : malloc((size_t)(w * (n + 1)));
	if (!r || (o == from && fmt_batch_own(slice, r, e) != FMT_OK)) {
		if (!r)
			fmt_fail(e, FMT_IO, "out of memory");
		return NULL;
	}
	for (uint64_t i = 0; i <= n; i++) {
		if (w == 8)
			fmt_wr_u64(r + 8 * i, fmt_rd_u64(o + 8 * i) - first);
		else
			fmt_wr_u32(r + 4 * i, fmt_rd_u32(o + 4 * i) - (uint32_t)first);
	}
	return r;
}

/* Rows [at, at + n) of column c (at a multiple of 8, so that bitmaps start at a byte) as out, a
 * column of the slice: its buffers fetched, string offsets rebased. */
static fmt_kind cut_column(const fmt_source *src, fmt_batch *slice, const fmt_field *f, const fmt_column *c,
			   uint64_t at, uint64_t n, fmt_column *out, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	memset(out, 0, sizeof *out);
	if (c->validity) {
		if ((k = fetch(src, slice, c->validity + at / 8, (n + 7) / 8, &out->validity, e)) != FMT_OK)
			return k;
		out->null_count = zeros(out->validity, n);
		if (!out->null_count)
			out->validity = NULL;
	}
	switch (f->type) {
	case FMT_C_OTHER: /* left empty by its reader */
		return FMT_OK;
	case FMT_C_BOOL:
		out->values_len = (n + 7) / 8;
		return fetch(src, slice, c->values + at / 8, out->values_len, &out->values, e);
	case FMT_C_UTF8: case FMT_C_BINARY: case FMT_C_LARGE_UTF8: {
		uint64_t w = f->type == FMT_C_LARGE_UTF8 ? 8 : 4, first, last;
		const uint8_t *from = (const uint8_t *)c->offsets + w * at, *o;
		if ((k = fetch(src, slice, from, w * (n + 1), &o, e)) != FMT_OK)
			return k;
		first = w == 8 ? fmt_rd_u64(o) : fmt_rd_u32(o);
		last = w == 8 ? fmt_rd_u64(o + 8 * n) : fmt_rd_u32(o + 4 * n);
		if (!(out->offsets = rebased(slice, o, from, w, n, e)))
			return e->kind;
		out->values_len = last - first;
		return fetch(src, slice, c->values + first, out->values_len, &out->values, e);
	}
	case FMT_C_FIXED_SIZE_LIST: {
		uint64_t w = fmt_ctype_width(f->elem), items = n * f->list_size, first = at * f->list_size;
		if (c->elem_validity) {
			if ((k = fetch(src, slice, c->elem_validity + first / 8, (items + 7) / 8, &out->elem_validity, e)) != FMT_OK)
				return k;
			if (!zeros(out->elem_validity, items))
				out->elem_validity = NULL;
		}
		out->values_len = items * w;
		return fetch(src, slice, c->values + first * w, out->values_len, &out->values, e);
	}
	default:
		out->values_len = n * fmt_ctype_width(f->type);
		return fetch(src, slice, c->values + at * fmt_ctype_width(f->type), out->values_len, &out->values, e);
	}
}

/* The next slice of sl's batch into b (empty, or not initialised), which holds a reference to it. */
static fmt_kind next_slice(fmt_batch_slicer *sl, const fmt_schema *s, const fmt_source *src, fmt_batch *b,
			   fmt_err *e)
{
	share *sh = sl->whole;
	uint64_t at = sl->at, end = slice_end(sl, s, &sh->b);
	fmt_batch_free(b);
	fmt_kind k = fmt_batch_init(b, s->n_fields, e);
	if (k != FMT_OK)
		return k;
	b->n_rows = end - at;
	atomic_fetch_add(&sh->refs, 1);
	k = fmt_batch_own(b, (char *)sh + 2, e);
	for (size_t i = 0; i < s->n_fields && k == FMT_OK; i++)
		k = cut_column(src, b, &s->fields[i], &sh->b.columns[i], at, end - at, &b->columns[i], e);
	if (k != FMT_OK) {
		fmt_batch_free(b);
		return k;
	}
	if (sh->b.first_row != FMT_ROWS_UNKNOWN)
		b->first_row = sh->b.first_row + at;
	sl->at = end;
	if (end == sh->b.n_rows)
		fmt_batch_slicer_free(sl);
	return FMT_OK;
}

/* sl takes b, whose slices aim at target bytes, and b becomes the first. */
static fmt_kind take(fmt_batch_slicer *sl, const fmt_schema *s, const fmt_source *src, fmt_batch *b, uint64_t target,
		     fmt_err *e)
{
	share *sh = malloc(sizeof *sh);
	if (!sh)
		return fmt_fail(e, FMT_IO, "out of memory");
	atomic_init(&sh->refs, 1);
	sh->b = *b;
	memset(b, 0, sizeof *b);
	*sl = (fmt_batch_slicer){ .whole = sh, .target = target };
	return next_slice(sl, s, src, b, e);
}

fmt_kind fmt_batch_slicer_take(fmt_batch_slicer *sl, const fmt_schema *s, const fmt_source *src, fmt_batch *b,
			       fmt_err *e)
{
	uint64_t total = b->n_rows > 8 ? batch_bytes(s, b, 0, b->n_rows) : 0;
	if (total <= FMT_SLICE_OVER)
		return FMT_OK;
	uint64_t slices = (total + FMT_SLICE_BYTES - 1) / FMT_SLICE_BYTES;
	return take(sl, s, src, b, (total + slices - 1) / slices, e);
}

fmt_kind fmt_batch_slicer_take_out_of(fmt_batch_slicer *sl, const fmt_schema *s, const fmt_source *src,
				      fmt_batch *b, fmt_err *e)
{
	uint64_t total = b->n_rows > 8 ? batch_bytes(s, b, 0, b->n_rows) : 0;
	if (total > FMT_SLICE_OVER)
		return fmt_batch_slicer_take(sl, s, src, b, e);
	return b->n_rows ? take(sl, s, src, b, UINT64_MAX, e) : FMT_OK;
}

fmt_kind fmt_batch_slicer_next(fmt_batch_slicer *sl, const fmt_schema *s, const fmt_source *src, fmt_batch *b,
			       int *got, fmt_err *e)
{
	*got = sl->whole != NULL;
	return *got ? next_slice(sl, s, src, b, e) : FMT_OK;
}

void fmt_batch_slicer_free(fmt_batch_slicer *sl)
{
	if (sl->whole)
		fmt_batch_share_release(sl->whole);
	memset(sl, 0, sizeof *sl);
}
