/* The Arrow IPC stream and file formats (written here: no Arrow C library is packaged for
 * Debian 12), over the schemas and batches of fmt/table.h. Batches read point into the bytes
 * the caller keeps alive (a mapping or a decompressed payload). */
#ifndef FMT_ARROW_H
#define FMT_ARROW_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/err.h"
#include "fmt/strbuf.h"
#include "fmt/table.h"

/* Reads an IPC stream or an IPC file (ARROW1 magic; the footer lists the batches) in memory.
 * Every message, offset and buffer is checked against the bytes there. */
typedef struct fmt_ipc_reader {
	const uint8_t *data;
	size_t len;
	size_t pos;            /* stream: next message */
	int is_file;
	uint32_t n_blocks, next_block;
	size_t blocks_at;      /* file: the footer's record batch blocks */
	fmt_schema schema;
	struct ipc_shape *shapes; /* per field: what its column takes of a RecordBatch */
	int has_dictionary;    /* a field, or one nested in it, is dictionary-encoded: a stream has
				* dictionary batches */
	uint64_t batches;      /* read so far */
	size_t last_lo, last_hi; /* the bytes of data the last message took */
	const fmt_source *source; /* data's, when set: each compressed buffer's pages leave the
				   * resident set once it is decompressed (fmt_source_drop) */
	/* one message at a time: its metadata, the body bytes its buffers use, their table */
	uint8_t *msg_meta, *msg_body, *msg_bufs;
	size_t msg_meta_cap, msg_body_cap, msg_bufs_cap;
	/* a body that may keep more than FMT_IPC_SPILL_MIN bytes, or (fmt_ipc_next, a table's
	 * reader: source set) a compressed batch whose buffers say they hold more decompressed:
	 * kept in an unlinked temporary file (spill.fd, open when spill_open), mapped (spill.map)
	 * while its batch is read (spilled) */
	fmt_source spill;
	int spill_open, spilled;
} fmt_ipc_reader;

/* Parse the schema (the first message, or the footer). */
fmt_kind fmt_ipc_open(fmt_ipc_reader *r, const uint8_t *data, size_t len, fmt_err *e);
/* The next record batch into b (fmt_batch_init'ed with one column per field): *done = 1 at
 * the end. A column of a type this build does not convert is stepped over and left empty (no
 * values, as Parquet's reader leaves one) and dictionary batches are passed by, so that the
 * other columns can be read; a type whose buffers cannot be counted (a type id Arrow does not
 * define, nesting deeper than 64) is Unsupported naming it. A batch compressed buffer by buffer
 * whose buffers say they hold more than FMT_IPC_SPILL_MIN decompressed (within the decode budget)
 * is decompressed a piece at a time into r->spill when r->source is set: r->spilled, its buffers
 * in the spill's mapping until the next call (slice it out: fmt_batch_slicer_take_out_of). */
fmt_kind fmt_ipc_next(fmt_ipc_reader *r, fmt_batch *b, int *done, fmt_err *e);
/* The bytes of a reader's mapping that its messages have passed since their pages last left the
 * resident set: [lo, hi), from 64 KiB before the last drop's end (the partial page there, and
 * what fault-around mapped past it). Zeroed: from the start. */
typedef struct fmt_ipc_passed { size_t lo, hi; } fmt_ipc_passed;
/* The last message r read is added to p; the pages wholly inside p leave r->source's resident
 * set once p spans a MiB (whatever the end), so that reading many small batches, which touches
 * every page, neither holds the file (issue 26) nor pays a madvise, and its TLB shootdown, a
 * batch. Blocks of a file out of order only make p wider. */
void fmt_ipc_drop_passed(const fmt_ipc_reader *r, fmt_ipc_passed *p, int end);
void fmt_ipc_close(fmt_ipc_reader *r);

/* Reading a stream one message at a time from a forward-only source (a decompressing window),
 * so that memory holds the bytes a batch's rows use, never a body's declared length. */
#define FMT_IPC_MAX_META (16u << 20)   /* a message's metadata: 100000 fields take under 10 MB */
/* The framing of the next message from the first avail bytes at d: the metadata follows *pre
 * prefix bytes and ends at *head (more than avail: give me that many); *eos at the
 * end-of-stream marker or when avail is 0. Metadata above FMT_IPC_MAX_META is InvalidFormat. */
fmt_kind fmt_ipc_message_head(const uint8_t *d, size_t avail, size_t *pre, size_t *head, int *eos, fmt_err *e);
/* Open r on the stream's Schema message, whose metadata is meta[0..n); *body is the body
 * length it declares (for the caller to drop). */
fmt_kind fmt_ipc_open_message(fmt_ipc_reader *r, const uint8_t *meta, size_t n, uint64_t *body, fmt_err *e);
/* pull copies the next n bytes of the source to dst, or drops them when dst is NULL; a
 * source that ends first is an error. */
typedef fmt_kind (*fmt_ipc_pull_fn)(void *ctx, uint8_t *dst, uint64_t n, fmt_err *e);
/* The RecordBatch whose metadata is meta[0..n) (copied first: it need not outlive the call's
 * first pull), its body the next bytes of pull: of each buffer only what the batch's rows use
 * is kept (in r, until the next call or fmt_ipc_close), padding and the rest of an over-long
 * buffer are dropped as they pass. A body whose buffers may keep more than FMT_IPC_SPILL_MIN
 * bytes is kept in a temporary file ($TMPDIR), mapped: r->spilled, and the batch's buffers lie in
 * r->spill's mapping, whose pages its decoding touched have left the resident set again (the
 * memory rule, issue 26: fmt_batch_slicer reads slices of it from the file). Other messages, and
 * a column of a type this build does not convert (an .ald holds none), are errors. */
#define FMT_IPC_SPILL_MIN ((uint64_t)16 << 20)
fmt_kind fmt_ipc_next_message(fmt_ipc_reader *r, const uint8_t *meta, size_t n, fmt_ipc_pull_fn pull, void *ctx,
			      fmt_batch *b, fmt_err *e);
/* 1 if the bytes start like an IPC file (ARROW1) or stream (a Schema message). */
int fmt_ipc_probe(const uint8_t *head, size_t n);

/* Record batch compression (BodyCompression's CompressionType + 1). */
enum { FMT_IPC_UNCOMPRESSED = 0, FMT_IPC_LZ4_FRAME, FMT_IPC_ZSTD };

/* What the record batches' headers say, their bodies unread. */
typedef struct fmt_ipc_survey {
	uint64_t batches, rows;
	uint64_t by_codec[3]; /* batches per FMT_IPC_* */
} fmt_ipc_survey;
/* Survey the batches of an opened reader (r itself unchanged). 0 when a message is malformed
 * or of a kind or codec the reader refuses: reading the batches says which, at that batch. */
int fmt_ipc_survey_batches(const fmt_ipc_reader *r, fmt_ipc_survey *s);

/* Encodes messages as arrow-rs does (metadata V5, 64-byte alignment, a validity bitmap for
 * every column), appending to a byte buffer the caller drains between calls. */
typedef struct fmt_ipc_writer {
	struct fmt_fb_builder *fb;
	const fmt_schema *schema;
	int file;              /* IPC file: magic, footer */
	int codec, level;      /* FMT_IPC_*, set after begin: each buffer compressed (an LZ4 frame
				* or zstd at level, 0 its default), stored as it is where that is
				* not smaller, after its uncompressed length (-1: stored) */
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
