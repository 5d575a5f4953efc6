/* FlatBuffers reader (every offset, vtable and length checked) and back-to-front builder. */
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "flatbuf.h"

/* ---- reader ---- */

static int table_at(const uint8_t *buf, size_t len, size_t pos, fmt_fb_table *out)
{
	if (len < 4 || pos > len - 4)
		return -1;
	int32_t soff = (int32_t)fmt_rd_u32(buf + pos);
	int64_t vt = (int64_t)pos - (int64_t)soff;
	if (vt < 0 || (uint64_t)vt > len - 4)
		return -1;
	uint16_t vt_len = fmt_rd_u16(buf + vt), size = fmt_rd_u16(buf + vt + 2);
	if (vt_len < 4 || (vt_len & 1) || (uint64_t)vt + vt_len > len)
		return -1;
	if (size < 4 || size > len - pos)
		return -1;
	*out = (fmt_fb_table){ buf, len, pos, (size_t)vt, vt_len, size };
	return 0;
}

int fmt_fb_root(const uint8_t *buf, size_t len, fmt_fb_table *out)
{
	if (len < 8)
		return -1;
	return table_at(buf, len, fmt_rd_u32(buf), out);
}

int fmt_fb_field_pos(const fmt_fb_table *t, unsigned id, size_t width, size_t *pos)
{
	size_t slot = 4 + 2 * (size_t)id;
	if (slot + 2 > t->vt_len)
		return 0;
	uint16_t voff = fmt_rd_u16(t->buf + t->vt + slot);
	if (voff == 0)
		return 0;
	if ((size_t)voff + width > t->size)
		return -1;
	*pos = t->pos + voff;
	return 1;
}

int fmt_fb_u8(const fmt_fb_table *t, unsigned id, uint8_t def, uint8_t *out)
{
	size_t p;
	int r = fmt_fb_field_pos(t, id, 1, &p);
	*out = r == 1 ? t->buf[p] : def;
	return r < 0 ? -1 : 0;
}

int fmt_fb_i16(const fmt_fb_table *t, unsigned id, int16_t def, int16_t *out)
{
	size_t p;
	int r = fmt_fb_field_pos(t, id, 2, &p);
	*out = r == 1 ? (int16_t)fmt_rd_u16(t->buf + p) : def;
	return r < 0 ? -1 : 0;
}

int fmt_fb_i32(const fmt_fb_table *t, unsigned id, int32_t def, int32_t *out)
{
	size_t p;
	int r = fmt_fb_field_pos(t, id, 4, &p);
	*out = r == 1 ? (int32_t)fmt_rd_u32(t->buf + p) : def;
	return r < 0 ? -1 : 0;
}

int fmt_fb_i64(const fmt_fb_table *t, unsigned id, int64_t def, int64_t *out)
{
	size_t p;
	int r = fmt_fb_field_pos(t, id, 8, &p);
	*out = r == 1 ? (int64_t)fmt_rd_u64(t->buf + p) : def;
	return r < 0 ? -1 : 0;
}

/* The absolute position an offset field points to. */
static int follow(const fmt_fb_table *t, unsigned id, size_t *target)
{
	size_t p;
	int r = fmt_fb_field_pos(t, id, 4, &p);
	if (r <= 0)
		return r;
	uint64_t to = (uint64_t)p + fmt_rd_u32(t->buf + p);
	if (to >= t->len)
		return -1;
	*target = (size_t)to;
	return 1;
}

int fmt_fb_table_field(const fmt_fb_table *t, unsigned id, fmt_fb_table *out)
{
	size_t to;
	int r = follow(t, id, &to);
	if (r <= 0)
		return r;
	return table_at(t->buf, t->len, to, out) ? -1 : 1;
}

int fmt_fb_vector(const fmt_fb_table *t, unsigned id, size_t elem_size, size_t *at, uint32_t *n)
{
	size_t to;
	int r = follow(t, id, &to);
	if (r <= 0)
		return r;
	if (to > t->len - 4)
		return -1;
	uint32_t count = fmt_rd_u32(t->buf + to);
	uint64_t bytes;
	if (fmt_mul_u64(count, elem_size, &bytes) || bytes > t->len - to - 4)
		return -1;
	*at = to + 4;
	*n = count;
	return 1;
}

int fmt_fb_string(const fmt_fb_table *t, unsigned id, const char **s, uint32_t *n)
{
	size_t at;
	int r = fmt_fb_vector(t, id, 1, &at, n);
	if (r == 1)
		*s = (const char *)t->buf + at;
	return r;
}

int fmt_fb_vector_table(const fmt_fb_table *t, size_t at, uint32_t i, fmt_fb_table *out)
{
	size_t p = at + 4 * (size_t)i;
	if (p > t->len - 4)
		return -1;
	uint64_t to = (uint64_t)p + fmt_rd_u32(t->buf + p);
	if (to >= t->len)
		return -1;
	return table_at(t->buf, t->len, (size_t)to, out);
}

/* ---- builder ---- */

void fmt_fb_builder_init(fmt_fb_builder *b)
{
	memset(b, 0, sizeof *b);
	b->min_align = 1;
}

void fmt_fb_builder_free(fmt_fb_builder *b)
{
	free(b->buf);
	free(b->vtables);
	memset(b, 0, sizeof *b);
}

void fmt_fb_builder_reset(fmt_fb_builder *b)
{
	b->used = 0;
	b->min_align = 1;
	b->n_fields = 0;
	b->n_vtables = 0;
	b->oom = 0;
}

/* Room for n more bytes at the front; the data moves to the end of a larger buffer. */
static int reserve(fmt_fb_builder *b, size_t n)
{
	if (b->oom)
		return -1;
	if (b->cap - b->used >= n)
		return 0;
	size_t cap = b->cap ? b->cap : 1024;
	while (cap - b->used < n) {
		if (cap > SIZE_MAX / 2) {
			b->oom = 1;
			return -1;
		}
		cap *= 2;
	}
	uint8_t *p = malloc(cap);
	if (!p) {
		b->oom = 1;
		return -1;
	}
	if (b->used)
		memcpy(p + cap - b->used, b->buf + b->cap - b->used, b->used);
	free(b->buf);
	b->buf = p;
	b->cap = cap;
	return 0;
}

static uint8_t *front(fmt_fb_builder *b)
{
	return b->buf + b->cap - b->used;
}

static void push_bytes(fmt_fb_builder *b, const void *data, size_t n)
{
	if (n == 0 || reserve(b, n))
		return;
	b->used += n;
	if (n)
		memcpy(front(b), data, n);
}

static void push_zeros(fmt_fb_builder *b, size_t n)
{
	if (n == 0 || reserve(b, n))
		return;
	b->used += n;
	memset(front(b), 0, n);
}

/* Pad so that after len more bytes the used size is a multiple of align. */
static void align_for(fmt_fb_builder *b, size_t len, size_t align)
{
	if (align > b->min_align)
		b->min_align = align;
	push_zeros(b, (~(b->used + len) + 1) & (align - 1));
}

static void push_le(fmt_fb_builder *b, uint64_t v, size_t size)
{
	uint8_t tmp[8];
	for (size_t i = 0; i < size; i++)
		tmp[i] = (uint8_t)(v >> (8 * i));
	align_for(b, size, size);
	push_bytes(b, tmp, size);
}

static void push_ref(fmt_fb_builder *b, fmt_fb_ref r)
{
	align_for(b, 4, 4);
	push_le(b, (uint32_t)(b->used + 4 - r), 4);
}

fmt_fb_ref fmt_fb_create_string(fmt_fb_builder *b, const char *s, size_t n)
{
	align_for(b, n + 1, 4);
	push_zeros(b, 1);
	push_bytes(b, s, n);
	push_le(b, (uint32_t)n, 4);
	return (fmt_fb_ref)b->used;
}

fmt_fb_ref fmt_fb_create_struct_vector(fmt_fb_builder *b, const void *data, uint32_t n, size_t elem_size,
			       size_t align)
{
	align_for(b, (size_t)n * elem_size, align > 4 ? align : 4);
	push_bytes(b, data, (size_t)n * elem_size);
	push_le(b, n, 4);
	return (fmt_fb_ref)b->used;
}

fmt_fb_ref fmt_fb_create_ref_vector(fmt_fb_builder *b, const fmt_fb_ref *refs, uint32_t n)
{
	align_for(b, (size_t)n * 4, 4);
	for (uint32_t i = n; i-- > 0;)
		push_ref(b, refs[i]);
	push_le(b, n, 4);
	return (fmt_fb_ref)b->used;
}

void fmt_fb_start_table(fmt_fb_builder *b)
{
	b->n_fields = 0;
	b->table_start = (uint32_t)b->used;
}

static void track(fmt_fb_builder *b, unsigned id)
{
	if (b->n_fields >= FB_MAX_FIELDS) {
		b->oom = 1;
		return;
	}
	b->fields[b->n_fields].voff = (uint16_t)(4 + 2 * id);
	b->fields[b->n_fields].rev = (uint32_t)b->used;
	b->n_fields++;
}

void fmt_fb_slot_u8(fmt_fb_builder *b, unsigned id, uint8_t v, uint8_t def)
{
	if (v != def) {
		push_le(b, v, 1);
		track(b, id);
	}
}

void fmt_fb_slot_i16(fmt_fb_builder *b, unsigned id, int16_t v, int16_t def)
{
	if (v != def) {
		push_le(b, (uint16_t)v, 2);
		track(b, id);
	}
}

void fmt_fb_slot_i32(fmt_fb_builder *b, unsigned id, int32_t v, int32_t def)
{
	if (v != def) {
		push_le(b, (uint32_t)v, 4);
		track(b, id);
	}
}

void fmt_fb_slot_i64(fmt_fb_builder *b, unsigned id, int64_t v, int64_t def)
{
	if (v != def) {
		push_le(b, (uint64_t)v, 8);
		track(b, id);
	}
}

void fmt_fb_slot_ref(fmt_fb_builder *b, unsigned id, fmt_fb_ref r)
{
	push_ref(b, r);
	track(b, id);
}

/* The soffset, then the vtable in front of it, or a pointer to an identical earlier one. */
fmt_fb_ref fmt_fb_end_table(fmt_fb_builder *b)
{
	push_le(b, 0, 4);
	uint32_t table_rev = (uint32_t)b->used;
	uint16_t vt_len = 4;
	for (size_t i = 0; i < b->n_fields; i++)
		if (b->fields[i].voff + 2 > vt_len)
			vt_len = (uint16_t)(b->fields[i].voff + 2);
	uint8_t vt[4 + 2 * 64];
	memset(vt, 0, sizeof vt);
	fmt_wr_u16(vt, vt_len);
	fmt_wr_u16(vt + 2, (uint16_t)(table_rev - b->table_start));
	for (size_t i = 0; i < b->n_fields; i++)
		fmt_wr_u16(vt + b->fields[i].voff, (uint16_t)(table_rev - b->fields[i].rev));
	b->n_fields = 0;
	if (b->oom)
		return 0;
	uint32_t vt_rev = 0;
	for (size_t i = 0; i < b->n_vtables; i++) {
		const uint8_t *old = b->buf + b->cap - b->vtables[i];
		if (fmt_rd_u16(old) == vt_len && memcmp(old, vt, vt_len) == 0) {
			vt_rev = b->vtables[i];
			break;
		}
	}
	if (!vt_rev) {
		push_bytes(b, vt, vt_len);
		vt_rev = (uint32_t)b->used;
		if (b->n_vtables == b->cap_vtables) {
			size_t cap = b->cap_vtables ? 2 * b->cap_vtables : 16;
			uint32_t *p = realloc(b->vtables, cap * sizeof *p);
			if (!p) {
				b->oom = 1;
				return 0;
			}
			b->vtables = p;
			b->cap_vtables = cap;
		}
		b->vtables[b->n_vtables++] = vt_rev;
	}
	if (b->oom)
		return 0;
	fmt_wr_u32(b->buf + b->cap - table_rev, (uint32_t)((int32_t)vt_rev - (int32_t)table_rev));
	return table_rev;
}

int fmt_fb_finish(fmt_fb_builder *b, fmt_fb_ref root, const uint8_t **data, size_t *len)
{
	align_for(b, 4, b->min_align);
	push_ref(b, root);
	if (b->oom)
		return -1;
	*data = front(b);
	*len = b->used;
	return 0;
}
