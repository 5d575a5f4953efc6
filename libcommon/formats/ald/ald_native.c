/* .ald TRUENO_NATIVE (flag 0x10; specs/ald.md decisions table, design document §10): numeric
 * columns stored as raw little-endian arrays at 64-byte-aligned file offsets, read in place
 * through the mapping. The project's layout (OPEN-4 of the upstream part, settled here):
 *
 *   after the schema block: array index = u32 count, then per array 31 packed LE bytes
 *     column_idx u32, dtype u8, length u64, alignment u8, backend_hint u8, offset u64, size u64
 *   zero padding to the next 64-byte file offset; the arrays in index order, each at the 64-byte
 *   aligned end of the one before (offsets are from the start of the file), zero-padded; the
 *   payload at the 64-byte aligned end of the last array: an uncompressed Arrow IPC stream of
 *   the other columns (a zero-column batch carries the row count when every column is an array).
 *
 * dtype: 0 f32, 1 f64, 2 i32, 3 i64, 4 u8 (design document), 5 i8, 6 i16, 7 u16, 8 u32, 9 u64,
 * 10 f16 (the project's, so that every numeric column is an array), 0x80 the validity bitmap
 * (LSB first, 1 = value) of a column with nulls, after that column's values. The card's sha256
 * covers the bytes from the first array to the end of the payload. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/arrow.h"
#include "fmt/checked.h"
#include "fmt/crypto.h"
#include "fmt/dataset.h"
#include "fmt/out.h"
#include "ald_internal.h"

#define ENTRY 31
#define ALIGN 64
#define DT_VALIDITY 0x80
#define MAX_ARRAY_COLUMNS 512      /* one temporary file each while writing */

static const struct { uint8_t code; fmt_ctype type; } dtypes[] = {
	{ 0, FMT_C_F32 }, { 1, FMT_C_F64 }, { 2, FMT_C_I32 }, { 3, FMT_C_I64 }, { 4, FMT_C_U8 },
	{ 5, FMT_C_I8 }, { 6, FMT_C_I16 }, { 7, FMT_C_U16 }, { 8, FMT_C_U32 }, { 9, FMT_C_U64 },
	{ 10, FMT_C_F16 },
};

/* The dtype code of a field stored as an array, or -1 when it stays in the IPC payload. */
static int dtype_of(const fmt_field *f)
{
	for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
		if (dtypes[i].type == f->type)
			return dtypes[i].code;
	return -1;
}

typedef struct native_array {
	uint32_t column;
	uint8_t dtype, alignment, backend;
	uint64_t length, offset, size;
} native_array;

typedef struct native_col {
	const uint8_t *values;     /* in the mapping; NULL: the column is in the payload */
	const uint8_t *validity;   /* in the mapping; NULL: no nulls */
	size_t width;
	size_t payload_index;      /* the column's index in the payload schema */
} native_col;

struct ald_native {
	native_array *arrays;
	uint32_t n_arrays;
	uint64_t index_start, data_start;
	native_col *cols;          /* one per schema field */
	fmt_schema rest;           /* the payload's columns */
	uint64_t row;              /* rows handed out so far */
};

static fmt_kind bad(fmt_err *e, const char *what, uint32_t i)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "TRUENO_NATIVE array %u: %s", i, what);
}

static fmt_kind check_array(const fmt_table *t, const ald_state *s, struct ald_native *n, uint32_t i,
			    uint64_t *expect, fmt_err *e)
{
	const native_array *a = &n->arrays[i];
	uint64_t width, size, end;
	if (a->column >= t->schema.n_fields)
		return bad(e, "column index past the schema", i);
	const fmt_field *f = &t->schema.fields[a->column];
	native_col *c = &n->cols[a->column];
	if (a->dtype == DT_VALIDITY) {
		if (!c->values || c->validity || !f->nullable)
			return bad(e, "a validity bitmap without the column's values before it, twice, or for a "
				   "non-nullable column", i);
		width = 0;
		size = a->length / 8 + (a->length % 8 != 0);
	} else {
		if (c->values || dtype_of(f) != a->dtype)
			return fmt_fail(e, FMT_INVALID_FORMAT, "TRUENO_NATIVE array %u: dtype %u does not match "
					"column '%s' (%s), or the column has two arrays", i, a->dtype, f->name,
					fmt_ctype_name(f->type));
		width = fmt_ctype_width(f->type);
		if (fmt_mul_u64(a->length, width, &size))
			return bad(e, "size overflows", i);
	}
	if (a->length != s->num_rows)
		return fmt_fail(e, FMT_INVALID_FORMAT, "TRUENO_NATIVE array %u: %llu values, the header says %llu rows",
				i, (unsigned long long)a->length, (unsigned long long)s->num_rows);
	if (a->alignment != ALIGN || a->backend > 8)
		return bad(e, "alignment is not 64 or the backend hint is past 8", i);
	if (a->size != size)
		return bad(e, "size_bytes differs from length x the dtype's width", i);
	if (a->offset != *expect)
		return fmt_fail(e, FMT_INVALID_FORMAT, "TRUENO_NATIVE array %u: offset %llu, expected %llu (the "
				"64-byte aligned end of what precedes it)", i, (unsigned long long)a->offset,
				(unsigned long long)*expect);
	if (fmt_add_u64(a->offset, a->size, &end) || end > s->crc_off || fmt_align_up_u64(end, ALIGN, expect))
		return bad(e, "runs past the end of the file", i);
	if (a->dtype == DT_VALIDITY) {
		c->validity = s->file + a->offset;
	} else {
		c->values = s->file + a->offset;
		c->width = (size_t)width;
	}
	return FMT_OK;
}

static fmt_kind payload_schema(fmt_table *t, struct ald_native *n, fmt_err *e)
{
	for (size_t i = 0; i < t->schema.n_fields; i++) {
		if (n->cols[i].values)
			continue;
		n->cols[i].payload_index = n->rest.n_fields;
		fmt_kind k = fmt_schema_add_field(&n->rest, &t->schema.fields[i], e);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

fmt_kind fmt_ald_native_parse(fmt_table *t, ald_state *s, uint64_t *pos, fmt_err *e)
{
	const uint8_t *d = s->file;
	uint64_t at = *pos, bytes, end, expect;
	if (s->flags & (FMT_ALD_STREAMING | FMT_ALD_ENCRYPTED))
		return fmt_fail(e, FMT_UNSUPPORTED, "TRUENO_NATIVE together with STREAMING or ENCRYPTED");
	if (s->compression != FMT_ALD_NONE)
		return fmt_fail(e, FMT_INVALID_FORMAT, "TRUENO_NATIVE with compression %s (arrays are stored "
				"uncompressed: the id must be 0, none)", fmt_ald_compression_name(s->compression));
	struct ald_native *n = calloc(1, sizeof *n);
	if (!n)
		return fmt_fail(e, FMT_IO, "out of memory");
	s->native = n;
	fmt_schema_init(&n->rest);
	n->index_start = at;
	if (s->crc_off - at < 4)
		return fmt_fail(e, FMT_INVALID_FORMAT, "TRUENO_NATIVE array index runs past the end of the file");
	n->n_arrays = fmt_rd_u32(d + at);
	if ((uint64_t)n->n_arrays > 2 * (uint64_t)t->schema.n_fields)
		return fmt_fail(e, FMT_INVALID_FORMAT, "TRUENO_NATIVE array index lists %u arrays for %zu columns",
				n->n_arrays, t->schema.n_fields);
	if (fmt_mul_u64(n->n_arrays, ENTRY, &bytes) || fmt_add_u64(at + 4, bytes, &end) || end > s->crc_off)
		return fmt_fail(e, FMT_INVALID_FORMAT, "TRUENO_NATIVE array index runs past the end of the file");
	n->arrays = calloc(n->n_arrays ? n->n_arrays : 1, sizeof *n->arrays);
	n->cols = calloc(t->schema.n_fields ? t->schema.n_fields : 1, sizeof *n->cols);
	if (!n->arrays || !n->cols)
		return fmt_fail(e, FMT_IO, "out of memory");
	if (fmt_align_up_u64(end, ALIGN, &expect))
		return fmt_fail(e, FMT_INVALID_FORMAT, "TRUENO_NATIVE array index runs past the end of the file");
	n->data_start = expect;
	for (uint32_t i = 0; i < n->n_arrays; i++) {
		const uint8_t *p = d + at + 4 + (uint64_t)ENTRY * i;
		native_array *a = &n->arrays[i];
		a->column = fmt_rd_u32(p);
		a->dtype = p[4];
		a->length = fmt_rd_u64(p + 5);
		a->alignment = p[13];
		a->backend = p[14];
		a->offset = fmt_rd_u64(p + 15);
		a->size = fmt_rd_u64(p + 23);
		fmt_kind k = check_array(t, s, n, i, &expect, e);
		if (k != FMT_OK)
			return k;
	}
	if (expect > s->crc_off)
		return fmt_fail(e, FMT_INVALID_FORMAT, "TRUENO_NATIVE arrays run past the end of the file");
	*pos = expect;
	return payload_schema(t, n, e);
}

/* The card's digest covers the bytes from the first array to the end of the payload. */
fmt_kind fmt_ald_native_check_digest(ald_state *s, const char *want, fmt_err *e)
{
	uint8_t digest[FMT_SHA256_LEN];
	char hex[FMT_SHA256_HEX + 1];
	uint64_t from = s->native->data_start;
	fmt_kind k = fmt_sha256_buf(s->file + from, (size_t)(s->payload_end - from), digest, e);
	if (k != FMT_OK)
		return k;
	fmt_hex(digest, FMT_SHA256_LEN, hex);
	if (strcmp(hex, want) != 0)
		return fmt_fail(e, FMT_CHECKSUM, "SHA-256 of the arrays and payload %s differs from the card's %s", hex,
				want);
	return FMT_OK;
}

void fmt_ald_native_free(ald_state *s)
{
	if (!s->native)
		return;
	fmt_schema_free(&s->native->rest);
	free(s->native->arrays);
	free(s->native->cols);
	free(s->native);
	s->native = NULL;
}

json_t *fmt_ald_native_json(const ald_state *s)
{
	json_t *a = json_array();
	for (uint32_t i = 0; s->native && i < s->native->n_arrays; i++) {
		const native_array *r = &s->native->arrays[i];
		json_t *o = json_object();
		json_object_set_new(o, "column", json_integer(r->column));
		json_object_set_new(o, "dtype", json_integer(r->dtype));
		json_object_set_new(o, "kind", json_string(r->dtype == DT_VALIDITY ? "validity" : "values"));
		json_object_set_new(o, "length", fmt_json_u64(r->length));
		json_object_set_new(o, "alignment", json_integer(r->alignment));
		json_object_set_new(o, "backend_hint", json_integer(r->backend));
		json_object_set_new(o, "offset", fmt_json_u64(r->offset));
		json_object_set_new(o, "size_bytes", fmt_json_u64(r->size));
		json_array_append_new(a, o);
	}
	return a;
}

static int bit_at(const uint8_t *bits, uint64_t i)
{
	return (bits[i / 8] >> (i % 8)) & 1;
}

/* Rows [row, row + rows) of a validity bitmap in the mapping: in place when row is a multiple
 * of 8, else shifted into a copy the batch owns (1/64 of an f64 column's bytes). */
static fmt_kind validity_slice(const uint8_t *bits, uint64_t row, uint64_t rows, fmt_batch *b, fmt_column *c,
			       fmt_err *e)
{
	uint64_t nulls = 0;
	for (uint64_t i = 0; i < rows; i++)
		nulls += !bit_at(bits, row + i);
	c->null_count = nulls;
	if (nulls == 0)
		return FMT_OK;
	if (row % 8 == 0) {
		c->validity = bits + row / 8;
		return FMT_OK;
	}
	uint8_t *copy = calloc((size_t)(rows / 8 + 1), 1);
	if (!copy)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (uint64_t i = 0; i < rows; i++)
		if (bit_at(bits, row + i))
			copy[i / 8] |= (uint8_t)(1u << (i % 8));
	c->validity = copy;
	return fmt_batch_own(b, copy, e);
}

/* The payload's next batch, completed with the array columns' rows in place (no copy). */
fmt_kind fmt_ald_native_next(ald_state *s, fmt_batch *b, int *done, fmt_err *e)
{
	struct ald_native *n = s->native;
	fmt_batch part;
	fmt_kind k = fmt_batch_init(&part, n->rest.n_fields, e);
	if (k == FMT_OK)
		k = fmt_ald_next_plain(s, &n->rest, &part, done, e);
	if (k == FMT_OK && *done && n->row != s->num_rows)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "the payload holds %llu rows, the arrays %llu",
			     (unsigned long long)n->row, (unsigned long long)s->num_rows);
	if (k == FMT_OK && !*done && part.n_rows > s->num_rows - n->row)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "the payload holds more rows than the arrays (%llu)",
			     (unsigned long long)s->num_rows);
	if (k != FMT_OK || *done) {
		fmt_batch_free(&part);
		return k;
	}
	b->n_rows = part.n_rows;
	for (size_t i = 0; i < b->n_columns && k == FMT_OK; i++) {
		const native_col *c = &n->cols[i];
		if (!c->values) {
			b->columns[i] = part.columns[c->payload_index];
			continue;
		}
		fmt_column *col = &b->columns[i];
		col->values = c->values + n->row * c->width;
		col->values_len = part.n_rows * c->width;
		if (c->validity)
			k = validity_slice(c->validity, n->row, part.n_rows, b, col, e);
	}
	for (size_t i = 0; i < part.n_owned && k == FMT_OK; i++) {
		k = fmt_batch_own(b, part.owned[i], e);
		part.owned[i] = NULL;
	}
	n->row += part.n_rows;
	fmt_batch_free(&part);
	return k;
}

/* ---- writing ---- */

fmt_kind fmt_ald_native_check_opts(const ald_opts *o, fmt_err *e)
{
	if (!o->trueno_native)
		return FMT_OK;
	if (o->compression != FMT_ALD_NONE)
		return fmt_fail(e, FMT_USAGE, "--trueno-native stores arrays uncompressed: use --compression none "
				"(or leave --compression out)");
	if (o->chunk_rows)
		return fmt_fail(e, FMT_USAGE, "--trueno-native and --chunk-rows cannot be combined");
	if (o->compat_alimentar)
		return fmt_fail(e, FMT_USAGE, "--trueno-native and --compat alimentar cannot be combined "
				"(alimentar 0.2 does not read TRUENO_NATIVE)");
	return FMT_OK;
}

typedef struct wcol {
	size_t field;
	uint8_t dtype;
	size_t width;
	FILE *spill;               /* the values */
	uint8_t *bits;             /* validity, from the first null on (NULL: none so far) */
	size_t bits_cap;
} wcol;

typedef struct nwriter {
	fmt_table *in;
	fmt_sink *k;
	wcol *cols;
	size_t n_cols;
	fmt_schema rest;
	size_t *rest_fields;       /* schema index of each payload column */
	fmt_column *rest_cols;     /* a batch's payload columns */
	FILE *payload;
	uint64_t payload_len, rows;
	fmt_ipc_writer ipc;
	int ipc_open;
	fmt_sb sb;
	fmt_sha256 *sha;           /* the caller's: the bytes from the first array on */
} nwriter;

#define PAYLOAD_SPILL "a temporary file for the payload"
#define COLUMN_SPILL "a temporary file for a column"

static fmt_kind drain_payload(nwriter *w, fmt_err *e)
{
	if (w->sb.oom)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = fmt_temp_file_write(w->payload, PAYLOAD_SPILL, w->sb.p, w->sb.len, e);
	w->payload_len += w->sb.len;
	w->sb.len = 0;
	return k;
}

static fmt_kind grow_bits(wcol *c, uint64_t rows, fmt_err *e)
{
	size_t need = (size_t)(rows / 8 + 1);
	if (need <= c->bits_cap)
		return FMT_OK;
	size_t cap = c->bits_cap ? c->bits_cap : 4096;
	while (cap < need)
		cap *= 2;
	uint8_t *p = realloc(c->bits, cap);
	if (!p)
		return fmt_fail(e, FMT_IO, "out of memory");
	memset(p + c->bits_cap, 0, cap - c->bits_cap);
	if (!c->bits)
		memset(p, 0, cap);
	c->bits = p;
	c->bits_cap = cap;
	return FMT_OK;
}

/* Validity of rows [at, at + n): only kept from the first null on (earlier rows all valid). */
static fmt_kind add_validity(wcol *c, const fmt_column *col, uint64_t at, uint64_t n, fmt_err *e)
{
	if (!c->bits && (!col->validity || col->null_count == 0))
		return FMT_OK;
	int fresh = !c->bits;
	fmt_kind k = grow_bits(c, at + n, e);
	if (k != FMT_OK)
		return k;
	if (fresh)
		for (uint64_t i = 0; i < at; i++)
			c->bits[i / 8] |= (uint8_t)(1u << (i % 8));
	for (uint64_t i = 0; i < n; i++)
		if (!col->validity || col->null_count == 0 || bit_at(col->validity, i))
			c->bits[(at + i) / 8] |= (uint8_t)(1u << ((at + i) % 8));
	return FMT_OK;
}

static fmt_kind add_batch(nwriter *w, const fmt_batch *b, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	for (size_t i = 0; i < w->n_cols && k == FMT_OK; i++) {
		wcol *c = &w->cols[i];
		const fmt_column *col = &b->columns[c->field];
		k = fmt_temp_file_write(c->spill, COLUMN_SPILL, col->values, (size_t)(b->n_rows * c->width), e);
		if (k == FMT_OK)
			k = add_validity(c, col, w->rows, b->n_rows, e);
	}
	fmt_batch part = { .n_rows = b->n_rows, .n_columns = w->rest.n_fields };
	for (size_t i = 0; i < w->rest.n_fields; i++)
		w->rest_cols[i] = b->columns[w->rest_fields[i]];
	part.columns = w->rest.n_fields ? w->rest_cols : NULL;
	if (k == FMT_OK)
		k = fmt_ipc_writer_batch(&w->ipc, &part, &w->sb, e);
	if (k == FMT_OK)
		k = drain_payload(w, e);
	w->rows += b->n_rows;
	return k;
}

static fmt_kind put_hashed(void *ctx, const void *p, size_t n, fmt_err *e)
{
	nwriter *w = ctx;
	fmt_kind k = fmt_sha256_update(w->sha, p, n, e);
	return k == FMT_OK ? fmt_sink_write(w->k, p, n, e) : k;
}

/* What f holds to the sink and the digest. */
static fmt_kind copy_out(nwriter *w, FILE *f, fmt_err *e)
{
	return fmt_temp_file_replay(f, "a temporary file", put_hashed, w, e);
}

static fmt_kind put(nwriter *w, const void *p, size_t n, int hash, fmt_err *e)
{
	fmt_kind k = hash ? fmt_sha256_update(w->sha, p, n, e) : FMT_OK;
	return k == FMT_OK ? fmt_sink_write(w->k, p, n, e) : k;
}

/* Zeros up to the next 64-byte file offset. */
static fmt_kind pad(nwriter *w, int hash, fmt_err *e)
{
	static const uint8_t zeros[ALIGN];
	size_t n = (size_t)((ALIGN - w->k->written % ALIGN) % ALIGN);
	return n ? put(w, zeros, n, hash, e) : FMT_OK;
}

static void entry(uint8_t *p, size_t column, uint8_t dtype, uint64_t length, uint64_t offset, uint64_t size)
{
	fmt_wr_u32(p, (uint32_t)column);
	p[4] = dtype;
	fmt_wr_u64(p + 5, length);
	p[13] = ALIGN;
	p[14] = 0;              /* backend hint: auto */
	fmt_wr_u64(p + 15, offset);
	fmt_wr_u64(p + 23, size);
}

static uint64_t align64(uint64_t x)
{
	return (x + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
}

/* The index (offsets follow from the sizes), then the arrays and the payload. */
static fmt_kind write_body(nwriter *w, fmt_err *e)
{
	size_t n_arrays = 0;
	for (size_t i = 0; i < w->n_cols; i++)
		n_arrays += 1 + (w->cols[i].bits != NULL);
	uint64_t bits_len = w->rows / 8 + (w->rows % 8 != 0);
	uint64_t at = align64(w->k->written + 4 + (uint64_t)ENTRY * n_arrays);
	uint8_t cnt[4], ent[ENTRY];
	fmt_wr_u32(cnt, (uint32_t)n_arrays);
	fmt_kind k = put(w, cnt, 4, 0, e);
	for (size_t i = 0; i < w->n_cols && k == FMT_OK; i++) {
		const wcol *c = &w->cols[i];
		uint64_t size = w->rows * c->width;
		entry(ent, c->field, c->dtype, w->rows, at, size);
		k = put(w, ent, ENTRY, 0, e);
		at = align64(at + size);
		if (k == FMT_OK && c->bits) {
			entry(ent, c->field, DT_VALIDITY, w->rows, at, bits_len);
			k = put(w, ent, ENTRY, 0, e);
			at = align64(at + bits_len);
		}
	}
	if (k == FMT_OK)
		k = pad(w, 0, e);
	for (size_t i = 0; i < w->n_cols && k == FMT_OK; i++) {
		const wcol *c = &w->cols[i];
		k = copy_out(w, c->spill, e);
		if (k == FMT_OK)
			k = pad(w, 1, e);
		if (k == FMT_OK && c->bits) {
			k = put(w, c->bits, (size_t)bits_len, 1, e);
			if (k == FMT_OK)
				k = pad(w, 1, e);
		}
	}
	if (k == FMT_OK && w->k->written != at)
		k = fmt_fail(e, FMT_INTERNAL, "TRUENO_NATIVE layout: wrote %llu bytes, planned %llu",
			     (unsigned long long)w->k->written, (unsigned long long)at);
	return k == FMT_OK ? copy_out(w, w->payload, e) : k;
}

static fmt_kind plan_columns(nwriter *w, fmt_err *e)
{
	const fmt_schema *s = &w->in->schema;
	w->cols = calloc(s->n_fields ? s->n_fields : 1, sizeof *w->cols);
	w->rest_fields = calloc(s->n_fields ? s->n_fields : 1, sizeof *w->rest_fields);
	w->rest_cols = calloc(s->n_fields ? s->n_fields : 1, sizeof *w->rest_cols);
	if (!w->cols || !w->rest_fields || !w->rest_cols)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < s->n_fields; i++) {
		int dt = dtype_of(&s->fields[i]);
		fmt_kind k;
		if (dt < 0) {
			w->rest_fields[w->rest.n_fields] = i;
			if ((k = fmt_schema_add_field(&w->rest, &s->fields[i], e)) != FMT_OK)
				return k;
			continue;
		}
		if (w->n_cols == MAX_ARRAY_COLUMNS)
			return fmt_fail(e, FMT_UNSUPPORTED, "--trueno-native handles at most %d numeric columns",
					MAX_ARRAY_COLUMNS);
		wcol *c = &w->cols[w->n_cols++];
		c->field = i;
		c->dtype = (uint8_t)dt;
		c->width = fmt_ctype_width(s->fields[i].type);
		if (!(c->spill = fmt_temp_file(COLUMN_SPILL, e)))
			return e->kind;
	}
	return FMT_OK;
}

static fmt_kind write_all(nwriter *w, fmt_err *e)
{
	fmt_kind k;
	if ((k = plan_columns(w, e)) != FMT_OK)
		return k;
	if (!(w->payload = fmt_temp_file(PAYLOAD_SPILL, e)))
		return e->kind;
	if ((k = fmt_ipc_writer_begin(&w->ipc, &w->rest, 0, &w->sb, e)) != FMT_OK)
		return k;
	w->ipc_open = 1;
	if ((k = drain_payload(w, e)) != FMT_OK)
		return k;
	for (;;) {
		fmt_batch b;
		int done;
		if ((k = fmt_table_next(w->in, &b, &done, e)) != FMT_OK)
			return k;
		if (!done && b.n_rows)
			k = add_batch(w, &b, e);
		fmt_batch_free(&b);
		if (k != FMT_OK)
			return k;
		if (done)
			break;
	}
	w->ipc_open = 0;
	if ((k = fmt_ipc_writer_end(&w->ipc, &w->sb, e)) != FMT_OK || (k = drain_payload(w, e)) != FMT_OK)
		return k;
	return write_body(w, e);
}

/* The part after the schema block (the caller wrote header room, card and schema, and
 * completes header, card and CRC). */
fmt_kind fmt_ald_native_body(fmt_table *in, fmt_sink *k, struct fmt_sha256 *sha, uint64_t *payload, uint64_t *rows,
			     fmt_err *e)
{
	nwriter w = { .in = in, .k = k, .sha = sha };
	fmt_schema_init(&w.rest);
	fmt_kind r = write_all(&w, e);
	*payload = w.payload_len;
	*rows = w.rows;
	if (w.ipc_open)
		fmt_ipc_writer_free(&w.ipc);
	for (size_t i = 0; i < w.n_cols; i++) {
		if (w.cols[i].spill)
			fclose(w.cols[i].spill);
		free(w.cols[i].bits);
	}
	free(w.cols);
	free(w.rest_fields);
	free(w.rest_cols);
	if (w.payload)
		fclose(w.payload);
	fmt_schema_free(&w.rest);
	fmt_sb_free(&w.sb);
	return r;
}
