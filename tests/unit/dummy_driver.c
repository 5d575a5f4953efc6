/* A new format as a newcomer adds one: this file is the whole driver. The unit tests register it
 * at run time (test_new_format.c); tests/cli/new-format.bats copies it into a copy of the tree
 * as libcommon/formats/dummy/dummy.c, adds its one registry line, and drives the tools with it.
 *
 * The "dummy" format: "DUMMYFMT" | u32 tensor count | per tensor: u16 name length, name, u8
 * rank (1..4), u64 dims, then the F32 values (little-endian). Only F32 tensors, no metadata. */
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/registry.h"

#define DUMMY_MAGIC "DUMMYFMT"
#define DUMMY_MAX_RANK 4u

extern const fmt_driver fmt_driver_dummy;

static int dummy_probe(const uint8_t *head, size_t n, uint64_t file_size)
{
	(void)file_size;
	return n >= 8 && memcmp(head, DUMMY_MAGIC, 8) == 0 ? 100 : 0;
}

/* One tensor record at *pos; its data follows it. */
static fmt_kind dummy_tensor(fmt_model *m, uint64_t *pos, fmt_err *e)
{
	fmt_source *s = &m->sources[0];
	uint8_t b[8];
	char name[65536];
	fmt_tensor t = { .name = name, .dtype = FMT_DT_F32, .nelems = 1 };
	if (fmt_source_read(s, *pos, b, 2, e) != FMT_OK)
		return e->kind;
	size_t len = fmt_rd_u16(b);
	if (len == 0 || fmt_source_read(s, *pos + 2, name, len, e) != FMT_OK)
		return len ? e->kind : fmt_fail(e, FMT_INVALID_FORMAT, "empty tensor name");
	name[len] = '\0';
	*pos += 2 + len;
	if (fmt_source_read(s, *pos, b, 1, e) != FMT_OK)
		return e->kind;
	t.ndim = b[0];
	if (t.ndim < 1 || t.ndim > (int)DUMMY_MAX_RANK)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': rank %d", name, t.ndim);
	*pos += 1;
	for (int i = 0; i < t.ndim; i++, *pos += 8) {
		if (fmt_source_read(s, *pos, b, 8, e) != FMT_OK)
			return e->kind;
		t.shape[i] = fmt_rd_u64(b);
		if (fmt_mul_u64(t.nelems, t.shape[i], &t.nelems))
			return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': size overflows", name);
	}
	uint64_t end;
	if (fmt_mul_u64(t.nelems, 4, &t.nbytes) || fmt_add_u64(*pos, t.nbytes, &end) || end > s->size)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': data past the end of the file", name);
	if (fmt_model_find_tensor(m, name))
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s' appears twice", name);
	t.source = 0;
	t.offset = t.file_offset = *pos;
	*pos = end;
	return fmt_model_add_tensor(m, &t, NULL, e);
}

static fmt_kind dummy_open(fmt_model *m, fmt_err *e)
{
	uint8_t b[12];
	uint64_t pos = 12;
	if (fmt_source_read(&m->sources[0], 0, b, 12, e) != FMT_OK)
		return e->kind;
	if (memcmp(b, DUMMY_MAGIC, 8) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "no DUMMYFMT magic");
	uint32_t count = fmt_rd_u32(b + 8);
	for (uint32_t i = 0; i < count; i++)
		if (dummy_tensor(m, &pos, e) != FMT_OK)
			return e->kind;
	if (pos != m->sources[0].size)
		return fmt_fail(e, FMT_INVALID_FORMAT, "%llu bytes after the last tensor",
				(unsigned long long)(m->sources[0].size - pos));
	return FMT_OK;
}

static int dummy_holds(fmt_dtype t)
{
	return t == FMT_DT_F32;
}

static fmt_kind dummy_write(const fmt_model *m, fmt_sink *k, const fmt_write_opts *o, fmt_err *e)
{
	(void)o;
	uint8_t b[12];
	memcpy(b, DUMMY_MAGIC, 8);
	fmt_wr_u32(b + 8, (uint32_t)m->n_tensors);
	if (m->n_tensors > UINT32_MAX || fmt_sink_write(k, b, 12, e) != FMT_OK)
		return m->n_tensors > UINT32_MAX ? fmt_fail(e, FMT_UNSUPPORTED, "too many tensors") : e->kind;
	for (size_t i = 0; i < m->n_tensors; i++) {
		const fmt_tensor *t = &m->tensors[i];
		size_t len = strlen(t->name);
		if (t->dtype != FMT_DT_F32 || len == 0 || len > UINT16_MAX || t->ndim < 1 ||
		    t->ndim > (int)DUMMY_MAX_RANK)
			return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': dummy files hold F32 tensors of rank 1 to 4",
					t->name);
		uint8_t rec[2 + 1 + 8 * DUMMY_MAX_RANK];
		fmt_wr_u16(rec, (uint16_t)len);
		if (fmt_sink_write(k, rec, 2, e) != FMT_OK || fmt_sink_write(k, t->name, len, e) != FMT_OK)
			return e->kind;
		rec[0] = (uint8_t)t->ndim;
		for (int d = 0; d < t->ndim; d++)
			fmt_wr_u64(rec + 1 + 8 * d, t->shape[d]);
		if (fmt_sink_write(k, rec, 1 + 8 * (size_t)t->ndim, e) != FMT_OK ||
		    fmt_tensor_write_to(m, t, k, e) != FMT_OK)
			return e->kind;
	}
	return FMT_OK;
}

const fmt_driver fmt_driver_dummy = {
	.name = "dummy",
	.extension = ".dmy",
	.title = "dummy",
	.probe = dummy_probe,
	.open = dummy_open,
	.holds_dtype = dummy_holds,
	.write = dummy_write,
};
