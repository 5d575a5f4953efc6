/* Inside libcommon/table: rows as bytes (a sort's payload) and batches built row by row, for the
 * row operations (rowops.c, rowsplit.c) and the quality report (quality.c). */
#ifndef FMT_TABLE_ROWS_INTERNAL_H
#define FMT_TABLE_ROWS_INTERNAL_H

#include <stdint.h>
#include "fmt/builder.h"
#include "fmt/strbuf.h"
#include "fmt/table.h"

/* The batch that fmt_batch_slicer shares among its slices, each owning a reference (the pointer
 * + 2 in its owned list, as fmt_batch_free tells): released, freed with the last. */
void fmt_batch_share_release(void *share);

/* A row of b appended to out as bytes: per column a flag (0 null, 1 value) and the value
 * (fixed-width bytes; a u64 length and the bytes; a fixed-size list's bytes and one flag per
 * element). A column of type FMT_C_OTHER is stored as a null. */
void fmt_row_encode(const fmt_schema *s, const fmt_batch *b, uint64_t row, fmt_sb *out);

/* A batch being built row by row. */
typedef struct fmt_rows_out {
	const fmt_schema *schema;
	col_builder *cols;
	fmt_sb *elem_valid;          /* per column: fixed-size list element bits */
	uint64_t *elem_nulls;
	uint64_t rows;
} fmt_rows_out;

fmt_kind fmt_rows_out_init(fmt_rows_out *o, const fmt_schema *s, fmt_err *e);
/* Append row of b. */
void fmt_rows_out_copy(fmt_rows_out *o, const fmt_batch *b, uint64_t row);
/* Append a row fmt_row_encode wrote (n bytes at p); InvalidFormat when it does not parse. */
fmt_kind fmt_rows_out_decode(fmt_rows_out *o, const uint8_t *p, size_t n, fmt_err *e);
/* Move the rows into b (fmt_batch_init'ed with a column per field); empty after. */
fmt_kind fmt_rows_out_finish(fmt_rows_out *o, fmt_batch *b, fmt_err *e);
void fmt_rows_out_free(fmt_rows_out *o);

/* The ordered key of the columns cols[0..n) of row, concatenated (fmt_row_key). */
void fmt_row_keys(const fmt_schema *s, const fmt_batch *b, uint64_t row, const size_t *cols, size_t n, fmt_sb *out);

/* A set of 128-bit hashes (dedupe, duplicate rows); insert says whether it was new. */
typedef struct fmt_hash_set {
	uint64_t *slots;             /* pairs; (0, 0) marks a free slot */
	size_t cap, n;
} fmt_hash_set;
/* 1 new, 0 present, -1 out of memory. */
int fmt_hash_set_insert(fmt_hash_set *h, const void *bytes, size_t n);
void fmt_hash_set_free(fmt_hash_set *h);

/* One pass of a split (fmt-shard split, rowsplit.c): the parts drawn afresh, the same each
 * pass. part gives the part of the next row (rows in file order), SIZE_MAX for none. */
typedef struct split_state split_state;
struct fmt_split_plan;
split_state *fmt_split_state_new(const struct fmt_split_plan *p);
size_t fmt_split_state_part(split_state *s, const fmt_schema *sc, const fmt_batch *b, uint64_t row);
void fmt_split_state_free(split_state *s);

/* splitmix64: the next of a seeded sequence of uniform 64-bit numbers. */
static inline uint64_t fmt_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* "a, b, c" (cut short with "..."): the columns, for messages. */
void fmt_schema_names_text(const fmt_schema *s, char *buf, size_t n);

#endif
