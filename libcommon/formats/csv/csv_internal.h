/* What the CSV driver's files share: the reader state, the record parser, the byte scans and
 * the parallel reader (csv_par.c). */
#ifndef CSV_INTERNAL_H
#define CSV_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/builder.h"
#include "fmt/strbuf.h"
#include "fmt/textio.h"
#include "fmt/textval.h"

typedef struct field_ref {
	size_t off, len;
	int quoted;            /* was in quotes (never null) */
	int in_rec;            /* unescaped into rec (it had a doubled quote); otherwise read in place in buf */
} field_ref;

struct csv_par;

typedef struct csv_state {
	fmt_text_in in;
	char delim;
	const char *null_value;
	uint64_t line;             /* line of the next record */
	uint64_t limit;            /* no record starts at or past this offset (UINT64_MAX: none) */
	uint64_t data_off, data_line; /* where the rows begin (after the header) */
	fmt_sb rec;                /* the current record's fields, unescaped */
	field_ref *fields;
	size_t n_fields, cap_fields;
	uint64_t rec_line;
	uint64_t rec_off;          /* where the current record starts (past any empty lines) */
	size_t n_cols;
	uint64_t batch_rows;
	col_builder *cols;
	int threads;               /* -T */
	uint64_t rows;             /* data rows, as the first pass counted them */
	struct csv_par *par;       /* the parallel reader's batches, NULL when reading on one thread */
	/* The types came from the first rows (fmt_dataset_opts.sample_bytes):
	 * the inference of every column goes on as the rows are read, and the read fails at the
	 * first row that contradicts the schema or at the end when the whole file infers another.
	 * NULL: every row was inferred before the first was read. */
	fmt_tv_infer *sample;
	uint64_t rows_read;        /* with sample: the rows read so far */
	/* the special bytes of in.buf[scan_at, scan_end) (at most 64): valid until the buffer moves */
	size_t scan_at, scan_end;
	uint64_t scan_mask;
} csv_state;

/* A record boundary every CSV_CHECKPOINT_ROWS rows: where a worker starts a batch. */
#define CSV_CHECKPOINT_ROWS 1024

typedef struct csv_checkpoint {
	uint64_t row, off, line;
	int cut;                   /* a batch starts here (fmt_csv_record_cuts said so of the record before) */
} csv_checkpoint;

/* The index of the first byte of p[0..n) that is delim, a quote or a line break; n when none. */
size_t fmt_csv_special_byte(const char *p, size_t n, char delim);
/* Bit i set when p[i] is delim, a quote or a line break, for the first min(n, 64) bytes. */
uint64_t fmt_csv_special_mask(const char *p, size_t n, char delim);
/* Bit i set when p[i] is c, for the first min(n, 64) bytes. */
uint64_t fmt_csv_byte_mask(const char *p, size_t n, char c);
/* How many bytes of p[0..n) equal c. */
size_t fmt_csv_count_byte(const char *p, size_t n, char c);

/* A reader of the same file and layout as proto, its own buffers, at off (line). */
fmt_kind fmt_csv_state_clone(csv_state *w, const csv_state *proto, uint64_t off, uint64_t line, fmt_err *e);
void fmt_csv_state_free(csv_state *s);
/* Continue reading at off, the start of a record on line. */
void fmt_csv_state_seek(csv_state *s, uint64_t off, uint64_t line);
/* The offset of the next unread byte. */
uint64_t fmt_csv_state_offset(const csv_state *s);
/* Whether the record just read ends a batch: a multiple of FMT_TEXT_BATCH_BYTES past data_off lies
 * after its first byte and at or before its end (fmt/textio.h's rule, the same on every -T: the
 * chunks of the parallel inference pass find the cuts each on its own). */
int fmt_csv_record_cuts(const csv_state *s);
fmt_kind fmt_csv_next_record(csv_state *s, int *got, fmt_err *e);
/* One record onto s->cols (fmt_text_row_fn). */
fmt_kind fmt_csv_row(void *ctx, const fmt_schema *schema, int *got, fmt_err *e);

/* The records from s's position to its limit into the per-column inferences inf[n_cols] (none
 * when NULL) and *rows (added to), with a checkpoint every CSV_CHECKPOINT_ROWS records and one (cut) after each
 * record that ends a batch onto cps when not NULL (rows counted from 0 at the start). */
typedef struct csv_checkpoints {
	csv_checkpoint *v;
	size_t n, cap;
} csv_checkpoints;
fmt_kind fmt_csv_infer_range(csv_state *s, fmt_tv_infer *inf, uint64_t *rows, csv_checkpoints *cps, fmt_err *e);
int fmt_csv_checkpoint_add(csv_checkpoints *cps, uint64_t row, uint64_t off, uint64_t line, int cut);

/* The inference pass on s->threads threads: chunks of the file split at record boundaries,
 * inferred each on its own and merged in order; the same answers and the same first error as
 * one thread. inf NULL: the records only read and counted (the types came from a sample).
 * Leaves s->par set up for fmt_csv_par_next. */
fmt_kind fmt_csv_par_infer(csv_state *s, fmt_tv_infer *inf, uint64_t *rows, fmt_err *e);
/* The next batch, parsed on the workers a few batches at a time. */
fmt_kind fmt_csv_par_next(csv_state *s, const fmt_schema *schema, fmt_batch *b, int *done, fmt_err *e);
void fmt_csv_par_free(csv_state *s);
/* Whether the parallel reader takes this file. */
int fmt_csv_par_wanted(const csv_state *s);

#endif
