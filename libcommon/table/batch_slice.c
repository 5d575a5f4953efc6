/* Rows [start, start + count) of a batch as a batch of their own: fixed-width values are
 * pointed into, bitmaps shifted and string offsets rebased into memory the slice owns. */
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/table.h"

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
	uint64_t z = 0;
	for (uint64_t i = 0; i < n; i++)
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
