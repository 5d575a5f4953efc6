/* What the text table drivers (CSV, JSON Lines) share: the block reader that keeps the current
 * record whole in memory, the loop that turns rows into batches, and the loop that writes a
 * table as lines of text (libcommon/table). */
#ifndef FMT_TEXTIO_H
#define FMT_TEXTIO_H

#include <stdint.h>
#include "fmt/dataset.h"
#include "fmt/strbuf.h"
#include "fmt/table.h"
#include "fmt/builder.h"

#define FMT_TEXT_BLOCK (1u << 20)     /* read and write size */
#define FMT_TEXT_MAX_RECORD (64u << 20) /* the longest record (line) the reader holds */

typedef struct fmt_text_in {
	fmt_source *src;
	uint64_t next_off;      /* next byte of the source to read */
	char *buf;
	size_t cap, start, end; /* buf[start, end) is read and not yet consumed */
	int eof;                /* nothing left to read past end */
	uint64_t text_off;      /* where the text begins: past a byte order mark (fmt_text_bom) */
} fmt_text_in;

/* The length of the UTF-8 byte order mark p starts with (3), or 0. Excel's "CSV UTF-8" and
 * Windows PowerShell's files start with one. The text drivers skip it: it is no part of the
 * first column's name (DuckDB's CSV reader skips it too) nor of the first object (RFC 8259 lets
 * a JSON reader ignore it; DuckDB's and Python's refuse it). */
size_t fmt_text_bom(const uint8_t *p, size_t n);
/* A reader at the start of src's text (text_off) with a first block allocated. */
fmt_kind fmt_text_in_init(fmt_text_in *in, fmt_source *src, fmt_err *e);
/* Move the unconsumed bytes to the front and read what fits after them; a full buffer doubles,
 * up to FMT_TEXT_MAX_RECORD: past that "line N: too_long" (N = line, the record's first). */
fmt_kind fmt_text_in_refill(fmt_text_in *in, uint64_t line, const char *too_long, fmt_err *e);
/* Continue reading at byte off of the source (the buffer's contents are dropped). */
void fmt_text_in_seek(fmt_text_in *in, uint64_t off);
/* The source offset of the first byte not yet consumed (inline: the readers ask per record). */
static inline uint64_t fmt_text_in_offset(const fmt_text_in *in)
{
	return in->next_off - (in->end - in->start);
}

/* Batches of text input are bounded in bytes as well as rows (the chunk of the memory rule,
 * issue 26): one ends after each record that reaches a multiple of FMT_TEXT_BATCH_BYTES past the
 * first data byte, a rule of the record's own offsets that a parallel reader's chunks apply each
 * on its own; and it holds at most fmt_text_batch_rows rows, since a field of one byte (an empty
 * one: null) takes 8 in an int64 column. A batch then holds at most about FMT_TEXT_BATCH_BYTES of
 * text and twice that of columns, whatever the width of a row. */
#define FMT_TEXT_BATCH_SHIFT 21
#define FMT_TEXT_BATCH_BYTES ((uint64_t)1 << FMT_TEXT_BATCH_SHIFT)
/* Whether the record at [from, to) (offsets past the first data byte) ends a batch. */
static inline int fmt_text_record_cuts(uint64_t from, uint64_t to)
{
	return from >> FMT_TEXT_BATCH_SHIFT != to >> FMT_TEXT_BATCH_SHIFT;
}
/* wanted rows a batch, or fewer for columns columns. */
uint64_t fmt_text_batch_rows(uint64_t wanted, size_t columns);
void fmt_text_in_free(fmt_text_in *in);

/* Appends the next row's values (of schema s) to the builders; *got = 0 at the end of the rows. */
typedef fmt_kind (*fmt_text_row_fn)(void *ctx, const fmt_schema *s, int *got, fmt_err *e);
/* Whether the row row() just gave ends its batch (fmt_text_record_cuts of its record). */
typedef int (*fmt_text_cuts_fn)(const void *ctx);
/* Up to batch_rows rows from row() into b, fewer when cuts (may be NULL) says a row ends the
 * batch (*done set, b empty, when there are none left). */
fmt_kind fmt_text_next_batch(fmt_text_row_fn row, fmt_text_cuts_fn cuts, void *ctx, uint64_t batch_rows,
			     col_builder *cols, const fmt_schema *s, fmt_batch *b, int *done, fmt_err *e);

/* Appends row of b as text (its line end included) to line; scratch: the caller's, for a
 * cell's text on the way; 0 when out of memory. Called from several threads at once with the
 * same ctx (read only) and each thread's own line and scratch. */
typedef int (*fmt_text_put_row_fn)(const void *ctx, const fmt_batch *b, uint64_t row, fmt_sb *line,
				   fmt_sb *scratch);
/* head (a header line, may be empty), then every row of every batch of in, through k in blocks
 * of about FMT_TEXT_BLOCK bytes (a quarter of that with threads >= 2: the rows formatted on
 * that many threads, the text the same; a batch of under 64 KiB of text by the caller alone, as
 * handing it over costs more). With threads >= 2, put_row runs while in's next batch
 * is read, when a column selection over in swaps in->schema for the driver's: ctx must hold
 * its own copy of the schema, not &in->schema. */
fmt_kind fmt_text_write(fmt_table *in, fmt_sink *k, const char *head, size_t head_len,
			fmt_text_put_row_fn put_row, const void *ctx, int threads, fmt_err *e);

#endif
