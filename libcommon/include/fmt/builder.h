/* Column builders: rows appended one value at a time, then handed to a batch. Part of the
 * table model (libcommon/table); the text readers use them. */
#ifndef FMT_BUILDER_H
#define FMT_BUILDER_H

#include <stdint.h>
#include "fmt/checked.h"
#include "fmt/strbuf.h"
#include "fmt/table.h"

typedef struct col_builder {
	fmt_sb validity, values, offsets;
	uint64_t rows, nulls;
	size_t last_values, last_offsets; /* the sizes of the batch before: the next one's room */
} col_builder;

void fmt_cb_null(col_builder *b, const fmt_field *f);
void fmt_cb_bool(col_builder *b, int v);
void fmt_cb_fixed(col_builder *b, const void *le_bytes, size_t n);   /* one value's bytes */
void fmt_cb_bytes(col_builder *b, const fmt_field *f, const void *p, size_t n);
/* The same appends inline for the text readers' per-cell loops: the usual case (no null so far
 * in the batch, room in the buffers) without a call, else the functions above. */
static inline void fmt_cb_u64(col_builder *b, uint64_t v) /* an 8-byte value */
{
	fmt_sb *sb = &b->values;
	if (b->nulls || sb->oom || sb->cap - sb->len <= 8) {
		uint8_t le[8];
		fmt_wr_u64(le, v);
		fmt_cb_fixed(b, le, 8);
		return;
	}
	fmt_wr_u64((uint8_t *)sb->p + sb->len, v);
	fmt_sb_commit(sb, 8);
	b->rows++;
}

static inline void fmt_cb_bool1(col_builder *b, int v)
{
	fmt_sb *sb = &b->values;
	unsigned bit = (unsigned)(b->rows % 8);
	if (b->nulls || sb->oom || (bit == 0 && sb->cap - sb->len <= 1)) {
		fmt_cb_bool(b, v);
		return;
	}
	if (bit == 0) {
		sb->p[sb->len] = 0;
		fmt_sb_commit(sb, 1);
	}
	sb->p[b->rows / 8] |= (char)((unsigned)(v != 0) << bit);
	b->rows++;
}

/* A value of a utf8 column (32-bit offsets). */
static inline void fmt_cb_utf8(col_builder *b, const fmt_field *f, const char *p, size_t n)
{
	fmt_sb *v = &b->values, *o = &b->offsets;
	if (b->nulls || !o->len || v->oom || o->oom || v->cap - v->len <= n || o->cap - o->len <= 4) {
		fmt_cb_bytes(b, f, p, n);
		return;
	}
	fmt_sb_add(v, p, n);
	fmt_wr_u32((uint8_t *)o->p + o->len, (uint32_t)v->len);
	fmt_sb_commit(o, 4);
	b->rows++;
}

/* Room for as much as the batch before held, at once (not by doubling), before a batch. */
void fmt_cb_prepare(col_builder *b);
/* Move the built column into c, its buffers owned by batch; the builder is empty after. */
fmt_kind fmt_cb_finish(col_builder *b, const fmt_field *f, fmt_batch *batch, fmt_column *c, fmt_err *e);
void fmt_cb_free(col_builder *b);

#endif
