/* Arrow columns and the Arrow IPC stream and file formats (written here: no Arrow C library
 * is packaged for Debian 12). A schema names typed fields; a batch holds one column per field
 * in the Arrow memory layout (validity bitmap, offsets, values), pointing into bytes the caller
 * keeps alive (a mapping, a decompressed payload, or builders' buffers). */
#ifndef FMT_ARROW_H
#define FMT_ARROW_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/err.h"
#include "fmt/strbuf.h"

typedef enum fmt_atype {
	FMT_AT_UNSUPPORTED = 0, /* read from a file, named by fmt_field.type_name, not converted */
	FMT_AT_BOOL,
	FMT_AT_INT8, FMT_AT_INT16, FMT_AT_INT32, FMT_AT_INT64,
	FMT_AT_UINT8, FMT_AT_UINT16, FMT_AT_UINT32, FMT_AT_UINT64,
	FMT_AT_FLOAT16, FMT_AT_FLOAT32, FMT_AT_FLOAT64,
	FMT_AT_UTF8, FMT_AT_LARGE_UTF8, FMT_AT_BINARY,
	FMT_AT_DATE32,
	FMT_AT_TIMESTAMP,
	FMT_AT_FIXED_SIZE_LIST
} fmt_atype;

/* Timestamp units, Arrow's TimeUnit numbering. */
enum { FMT_TU_SECOND = 0, FMT_TU_MILLI = 1, FMT_TU_MICRO = 2, FMT_TU_NANO = 3 };

/* Bytes per value of a fixed-width type (bool: 0, variable width: 0). */
size_t fmt_atype_width(fmt_atype t);
/* "int32", "float16", "utf8", ... (the base name; a field's full name is its type_name). */
const char *fmt_atype_name(fmt_atype t);
/* The type for a base name (as --schema files give it); FMT_AT_UNSUPPORTED if none. */
fmt_atype fmt_atype_by_name(const char *name);
int fmt_atype_is_integer(fmt_atype t);
int fmt_atype_is_float(fmt_atype t);

typedef struct fmt_field {
	char *name;
	fmt_atype type;
	int nullable;
	uint8_t unit;          /* timestamp */
	char *timezone;        /* timestamp: NULL when none */
	int32_t list_size;     /* fixed_size_list */
	fmt_atype item_type;   /* fixed_size_list: a fixed-width numeric type */
	int item_nullable;
	char *item_name;       /* fixed_size_list: the child field's name ("item") */
	char *type_name;       /* for display: "timestamp[ms, UTC]", "decimal128(10, 2)" */
} fmt_field;

typedef struct fmt_schema {
	size_t n_fields;
	fmt_field *fields;
} fmt_schema;

void fmt_schema_free(fmt_schema *s);
/* Deep copy; -1 when out of memory. */
int fmt_schema_copy(fmt_schema *dst, const fmt_schema *src);
/* Fill f->type_name from the other members; -1 when out of memory. */
int fmt_field_set_type_name(fmt_field *f);
/* The first field whose type this build cannot convert, or NULL. */
const fmt_field *fmt_schema_unsupported(const fmt_schema *s);
/* SchemaMismatch naming the first difference (field count, name, type, nullability). */
fmt_kind fmt_schema_expect(const fmt_schema *want, const fmt_schema *got, fmt_err *e);

typedef struct fmt_span {
	const uint8_t *p;
	uint64_t len;
} fmt_span;

typedef struct fmt_column {
	uint64_t length, null_count;
	fmt_span validity;        /* empty when null_count is 0 */
	fmt_span offsets;         /* utf8/binary: int32; large_utf8: int64; length + 1 entries */
	fmt_span values;          /* values, bits for bool, bytes for strings, items of a list */
	uint64_t item_null_count; /* fixed_size_list: nulls among the items */
	fmt_span item_validity;
} fmt_column;

typedef struct fmt_batch {
	uint64_t num_rows;
	size_t n_cols;
	fmt_column *cols;
} fmt_batch;

void fmt_batch_free(fmt_batch *b);

static inline int fmt_bit(const uint8_t *bits, uint64_t i)
{
	return (bits[i >> 3] >> (i & 7)) & 1;
}

static inline int fmt_column_valid(const fmt_column *c, uint64_t i)
{
	return c->null_count == 0 || fmt_bit(c->validity.p, i);
}

/* Row i of a utf8/binary/large_utf8 column: pointer and length. */
void fmt_column_bytes(const fmt_column *c, fmt_atype t, uint64_t i, const uint8_t **p, uint64_t *n);

/* ---- reading ---- */

/* Reads an IPC stream or an IPC file (ARROW1 magic; the footer gives the batches) from bytes
 * in memory. Every message, offset and buffer is checked against the bytes there. */
typedef struct fmt_ipc_reader {
	const uint8_t *data;
	size_t len;
	size_t pos;            /* stream: next message */
	int is_file;
	uint32_t n_blocks, next_block;
	size_t blocks_at;      /* file: the footer's record batch blocks */
	fmt_schema schema;
	uint64_t batches;      /* read so far */
} fmt_ipc_reader;

/* Parse the schema (the first message, or the footer). */
fmt_kind fmt_ipc_open(fmt_ipc_reader *r, const uint8_t *data, size_t len, fmt_err *e);
/* The next record batch in *b (*got = 1), or the end (*got = 0). A schema with a type this
 * build cannot decode is Unsupported naming the field and type. */
fmt_kind fmt_ipc_next(fmt_ipc_reader *r, fmt_batch *b, int *got, fmt_err *e);
void fmt_ipc_close(fmt_ipc_reader *r);
/* 1 if the bytes start like an IPC file (ARROW1) or stream (a Schema message). */
int fmt_ipc_probe(const uint8_t *head, size_t n);

/* ---- writing ---- */

/* Encodes messages as arrow-rs does (metadata V5, 64-byte alignment, a validity bitmap for
 * every column), appending to a byte buffer the caller drains. */
typedef struct fmt_ipc_writer {
	struct fb_builder *fb;
	const fmt_schema *schema;
	int file;              /* IPC file: magic, footer */
	uint64_t pos;          /* bytes produced so far */
	uint64_t *blocks;      /* file: offset, metadata length, body length per batch */
	size_t n_blocks, cap_blocks;
} fmt_ipc_writer;

fmt_kind fmt_ipc_writer_begin(fmt_ipc_writer *w, const fmt_schema *s, int file, fmt_sb *out, fmt_err *e);
fmt_kind fmt_ipc_writer_batch(fmt_ipc_writer *w, const fmt_batch *b, fmt_sb *out, fmt_err *e);
/* EOS (and the footer for a file); frees the writer. */
fmt_kind fmt_ipc_writer_end(fmt_ipc_writer *w, fmt_sb *out, fmt_err *e);
void fmt_ipc_writer_free(fmt_ipc_writer *w);

#endif
