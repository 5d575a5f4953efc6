/* Column builders for the text readers. */
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/builder.h"

/* n bytes onto sb, a fixed-size copy for the common widths when there is room. */
static inline void put_small(fmt_sb *sb, const void *p, size_t n)
{
	if (sb->cap - sb->len > 8 && !sb->oom) {
		char *at = sb->p + sb->len;
		switch (n) {
		case 8: memcpy(at, p, 8); break;
		case 4: memcpy(at, p, 4); break;
		case 2: memcpy(at, p, 2); break;
		case 1: memcpy(at, p, 1); break;
		default: fmt_sb_add(sb, p, n); return;
		}
		sb->len += n;
		sb->p[sb->len] = '\0';
		return;
	}
	fmt_sb_put(sb, p, n);
}

/* The validity bitmap exists only from the first null on (a column without nulls has none):
 * until then every row is valid, and the first null writes the bits of the rows before it. */
static void set_valid(col_builder *b, int valid)
{
	uint64_t i = b->rows;
	if (!b->nulls) {
		if (valid)
			return;
		size_t full = (size_t)(i / 8);
		char *at = fmt_sb_reserve(&b->validity, full + 1);
		if (!at)
			return;
		memset(at, 0xff, full);
		at[full] = (char)((1u << (i % 8)) - 1);
		fmt_sb_commit(&b->validity, full + 1);
		b->nulls++;
		return;
	}
	if (i % 8 == 0)
		fmt_sb_add(&b->validity, "", 1);
	if (b->validity.oom)
		return;
	if (valid)
		b->validity.p[i / 8] |= (char)(1u << (i % 8));
	else
		b->nulls++;
}

static void start_offsets(col_builder *b, const fmt_field *f)
{
	if (b->rows == 0 && b->offsets.len == 0) {
		uint8_t zero[8] = { 0 };
		fmt_sb_put(&b->offsets, (const char *)zero, f->type == FMT_C_LARGE_UTF8 ? 8 : 4);
	}
}

static void end_offset(col_builder *b, const fmt_field *f)
{
	uint8_t o[8];
	if (f->type == FMT_C_LARGE_UTF8) {
		fmt_wr_u64(o, b->values.len);
		put_small(&b->offsets, o, 8);
	} else {
		fmt_wr_u32(o, (uint32_t)b->values.len);
		put_small(&b->offsets, o, 4);
	}
}

void fmt_cb_null(col_builder *b, const fmt_field *f)
{
	static const char zeros[64];
	set_valid(b, 0);
	switch (f->type) {
	case FMT_C_UTF8: case FMT_C_LARGE_UTF8: case FMT_C_BINARY:
		start_offsets(b, f);
		end_offset(b, f);
		break;
	case FMT_C_BOOL:
		if (b->rows % 8 == 0)
			fmt_sb_put(&b->values, "", 1);
		break;
	case FMT_C_FIXED_SIZE_LIST:
		for (uint32_t i = 0; i < f->list_size; i++)
			fmt_sb_put(&b->values, zeros, fmt_ctype_width(f->elem));
		break;
	default:
		fmt_sb_put(&b->values, zeros, fmt_ctype_width(f->type));
	}
	b->rows++;
}

void fmt_cb_bool(col_builder *b, int v)
{
	set_valid(b, 1);
	if (b->rows % 8 == 0)
		fmt_sb_add(&b->values, "", 1);
	if (v && !b->values.oom)
		b->values.p[b->rows / 8] |= (char)(1u << (b->rows % 8));
	b->rows++;
}

void fmt_cb_fixed(col_builder *b, const void *le_bytes, size_t n)
{
	set_valid(b, 1);
	put_small(&b->values, le_bytes, n);
	b->rows++;
}

void fmt_cb_bytes(col_builder *b, const fmt_field *f, const void *p, size_t n)
{
	set_valid(b, 1);
	start_offsets(b, f);
	fmt_sb_add(&b->values, p, n);
	end_offset(b, f);
	b->rows++;
}

void fmt_cb_prepare(col_builder *b)
{
	if (b->last_values && !b->values.cap)
		fmt_sb_reserve(&b->values, b->last_values);
	if (b->last_offsets && !b->offsets.cap)
		fmt_sb_reserve(&b->offsets, b->last_offsets);
}

static fmt_kind give(fmt_sb *sb, fmt_batch *batch, const uint8_t **to, fmt_err *e)
{
	*to = NULL;
	if (!sb->p)
		return FMT_OK;
	*to = (const uint8_t *)sb->p;
	fmt_kind k = fmt_batch_own(batch, sb->p, e);
	memset(sb, 0, sizeof *sb);
	return k;
}

fmt_kind fmt_cb_finish(col_builder *b, const fmt_field *f, fmt_batch *batch, fmt_column *c, fmt_err *e)
{
	static const uint8_t zero_offsets[8];
	static const uint8_t empty[1];
	fmt_kind k;
	if (b->validity.oom || b->values.oom || b->offsets.oom)
		return fmt_fail(e, FMT_IO, "out of memory");
	memset(c, 0, sizeof *c);
	b->last_values = b->values.len;
	b->last_offsets = b->offsets.len;
	c->null_count = b->nulls;
	c->values_len = b->values.len;
	if (b->nulls) {
		if ((k = give(&b->validity, batch, &c->validity, e)) != FMT_OK)
			return k;
	} else {
		fmt_sb_free(&b->validity);
	}
	if ((k = give(&b->values, batch, &c->values, e)) != FMT_OK)
		return k;
	if (!c->values)
		c->values = empty;
	const uint8_t *offs;
	if ((k = give(&b->offsets, batch, &offs, e)) != FMT_OK)
		return k;
	c->offsets = offs ? offs : zero_offsets;
	b->rows = b->nulls = 0;
	(void)f;
	return FMT_OK;
}

void fmt_cb_free(col_builder *b)
{
	fmt_sb_free(&b->validity);
	fmt_sb_free(&b->values);
	fmt_sb_free(&b->offsets);
	memset(b, 0, sizeof *b);
}
