/* Parquet (.parquet) inside its driver folder: the Thrift compact protocol, the footer as
 * structs, the encodings, the codecs, the reader's column cursors and the writer. */
#ifndef FMT_PQ_INTERNAL_H
#define FMT_PQ_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include "fmt/decode_budget.h"
#include "fmt/err.h"
#include "fmt/io.h"
#include "fmt/strbuf.h"
#include "fmt/table.h"

/* ---- Thrift compact protocol ---- */

enum { TC_STOP = 0, TC_TRUE = 1, TC_FALSE = 2, TC_BYTE = 3, TC_I16 = 4, TC_I32 = 5, TC_I64 = 6,
       TC_DOUBLE = 7, TC_BINARY = 8, TC_LIST = 9, TC_SET = 10, TC_MAP = 11, TC_STRUCT = 12 };

typedef struct tc_in {
	const uint8_t *p, *end;
	int depth;
	uint64_t after;             /* the message's bytes after end, not in memory (a window over a
				     * footer read a piece at a time): a list's or map's count is
				     * checked against them too, as in the whole message */
} tc_in;

/* Each returns 0, or -1 when the bytes are malformed or run out. */
int fmt_pq_tc_field(tc_in *r, int16_t *last, int *type, int16_t *id); /* 1 field, 0 stop, -1 */
int fmt_pq_tc_int(tc_in *r, int type, int64_t *v);     /* BYTE, I16, I32, I64 */
int fmt_pq_tc_i32(tc_in *r, int type, int32_t *v);     /* as fmt_pq_tc_int, within int32 */
int fmt_pq_tc_bool(tc_in *r, int type, int *v);        /* a field's TRUE/FALSE */
int fmt_pq_tc_binary(tc_in *r, int type, const uint8_t **p, uint32_t *n);
int fmt_pq_tc_list(tc_in *r, int type, int *elem, uint32_t *n);
int fmt_pq_tc_skip(tc_in *r, int type);
int fmt_pq_tc_enter(tc_in *r, int type);               /* a STRUCT field: depth checked */
void fmt_pq_tc_leave(tc_in *r);
/* The message's bytes from r->p on, those after the window (r->after) too. */
uint64_t fmt_pq_tc_left(const tc_in *r);

/* Writing: each field of a struct after its header. */
void fmt_pq_tw_field(fmt_sb *o, int16_t *last, int16_t id, int type);
void fmt_pq_tw_varint(fmt_sb *o, uint64_t v);
void fmt_pq_tw_i64(fmt_sb *o, int16_t *last, int16_t id, int64_t v);   /* an I64 field */
void fmt_pq_tw_i32(fmt_sb *o, int16_t *last, int16_t id, int32_t v);   /* an I32 field */
void fmt_pq_tw_bin(fmt_sb *o, int16_t *last, int16_t id, const void *p, size_t n);
void fmt_pq_tw_bool(fmt_sb *o, int16_t *last, int16_t id, int v);
void fmt_pq_tw_list(fmt_sb *o, int elem, uint32_t n);   /* a list's header */
void fmt_pq_tw_stop(fmt_sb *o);

/* ---- the file's structure (parquet.thrift) ---- */

enum { PT_BOOLEAN = 0, PT_INT32 = 1, PT_INT64 = 2, PT_INT96 = 3, PT_FLOAT = 4, PT_DOUBLE = 5,
       PT_BYTE_ARRAY = 6, PT_FLBA = 7 };
enum { ENC_PLAIN = 0, ENC_PLAIN_DICTIONARY = 2, ENC_RLE = 3, ENC_BIT_PACKED = 4, ENC_DELTA_BINARY_PACKED = 5,
       ENC_DELTA_LENGTH_BYTE_ARRAY = 6, ENC_DELTA_BYTE_ARRAY = 7, ENC_RLE_DICTIONARY = 8,
       ENC_BYTE_STREAM_SPLIT = 9 };
enum { CODEC_NONE = 0, CODEC_SNAPPY = 1, CODEC_GZIP = 2, CODEC_LZO = 3, CODEC_BROTLI = 4, CODEC_LZ4 = 5,
       CODEC_ZSTD = 6, CODEC_LZ4_RAW = 7 };
enum { PAGE_DATA = 0, PAGE_INDEX = 1, PAGE_DICTIONARY = 2, PAGE_DATA_V2 = 3 };
enum { REP_REQUIRED = 0, REP_OPTIONAL = 1, REP_REPEATED = 2 };

/* How a leaf's values become the column's: what the physical value means (DECIMAL, TIME,
 * UUID and INTERVAL: utf8 text, pq_text.c). */
enum { CONV_PLAIN = 0, CONV_INT96_NS, CONV_F16, CONV_DECIMAL, CONV_TIME, CONV_UUID, CONV_INTERVAL };

typedef struct pq_stats {
	const uint8_t *min, *max;   /* into the row group's footer bytes (pq_group); NULL when absent */
	uint32_t min_len, max_len;
	int64_t null_count;         /* -1 when absent */
	int64_t distinct_count;     /* -1 when absent */
	int legacy;                 /* min and max from the deprecated fields (signed byte order) */
} pq_stats;

typedef struct pq_chunk {
	int codec;
	uint32_t encodings;         /* bit per encoding id (< 32) */
	int64_t num_values;
	int64_t total_compressed, total_uncompressed;
	int64_t data_page_offset, dict_page_offset; /* dict: -1 when absent */
	pq_stats stats;
	uint64_t start, end;        /* the chunk's bytes in the file, checked */
} pq_chunk;

/* A row group as the footer's check at open leaves it: its column chunks are parsed again from
 * its bytes in the footer when they are used (fmt_pq_group_load), not held for every group. */
typedef struct pq_rowgroup {
	int64_t num_rows;
	uint64_t first_row;         /* of the file's rows, the group's first */
	int64_t total_byte_size;
	uint64_t stored;            /* its chunks' bytes in the file (what its budget is made of) */
	uint32_t foot_off, foot_len; /* its RowGroup struct in the footer */
} pq_rowgroup;

/* The most values a row of a list column holds (its fixed_size_list's size). */
#define PQ_MAX_LIST (1u << 20)

/* A leaf column of the schema, and which output field it fills (-1: none, nested). */
typedef struct pq_leaf {
	char *path;                 /* "a.b.c" */
	int ptype;
	int32_t type_length;
	int max_def, max_rep;
	long field;                 /* index into the table's schema, -1 for a nested leaf */
	int conv;                   /* CONV_* */
	/* A list field's one leaf (list != 0): each row a list of its values. Definition levels
	 * below list_def: a null row; list_def: an empty list; above it and below max_def: a null
	 * element; max_def: a value. max_rep is 1. */
	int list, list_def;
	uint64_t size_row;          /* the file's row the list size was taken from; UINT64_MAX:
				     * from the type (ARROW:schema's fixed_size_list) */
	char logical[64];           /* "STRING", "TIMESTAMP(us, UTC)", "DECIMAL(10, 2)", "" */
	int scale;                  /* CONV_DECIMAL: digits after the point */
	int unit, utc;              /* CONV_TIME: 1 ms, 2 us, 3 ns; adjusted to UTC */
} pq_leaf;

typedef struct pq_meta {
	int32_t version;
	int64_t num_rows;
	pq_leaf *leaves;
	size_t n_leaves;
	pq_rowgroup *groups;
	size_t n_groups;
	char *created_by;
	uint64_t footer_at;         /* the footer's offset in the file (where the data ends) */
	uint32_t footer_len;        /* its bytes */
} pq_meta;

/* The file being read: its bytes in memory (a buffer, a stream's head), or a regular file
 * whose bytes are read (pread) into buffers the reader reuses, never mapped: on this kind of
 * machine touching a mapping's pages costs more than copying them. */
typedef struct pq_file {
	fmt_source *src;
	const uint8_t *data;        /* the whole file, or NULL: read from src */
	uint64_t size;
} pq_file;

/* n bytes at off into dst (a range past the end is InvalidFormat). */
fmt_kind fmt_pq_file_read(const pq_file *f, uint64_t off, void *dst, size_t n, fmt_err *e);

/* Parse the footer of the file into m and the fields of s: all of it checked (every row group's
 * chunks too), read a window at a time. */
fmt_kind fmt_pq_meta_read(const pq_file *f, pq_meta *m, fmt_schema *s, fmt_err *e);
void fmt_pq_meta_free(pq_meta *m);

/* One row group's column chunks, parsed again from the footer when they are used: what a file
 * of many row groups of many columns holds of its footer is one group's (its chunks were 112
 * bytes each, for every group at once: 300,000 of them for 75 groups of 4,000 columns). */
typedef struct pq_group {
	size_t g;                   /* the group held, or SIZE_MAX */
	pq_chunk *chunks;           /* one per leaf */
	uint8_t *buf;               /* footer bytes from buf_at on, buf_len of them, read from the
				     * file: the group's (the statistics point there) and those after
				     * it; unused when the file is in memory */
	size_t cap, buf_len;
	uint64_t buf_at;
} pq_group;
void fmt_pq_group_init(pq_group *v);
/* Row group g of f's footer m into v (nothing done when v holds it already). */
fmt_kind fmt_pq_group_load(pq_group *v, const pq_file *f, const pq_meta *m, size_t g, fmt_err *e);
void fmt_pq_group_free(pq_group *v);

const char *fmt_pq_codec_name(int codec);
const char *fmt_pq_encoding_name(int enc);
const char *fmt_pq_ptype_name(int t);

/* ---- codecs ---- */

/* Decompress src, a page of column col, into dst of exactly dst_len bytes (the page header's
 * uncompressed size); a message names col. */
fmt_kind fmt_pq_decompress(const char *col, int codec, const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
			   fmt_err *e);
/* Compress src appended to o; level 0: the codec's default. */
fmt_kind fmt_pq_compress(int codec, int level, const uint8_t *src, size_t n, fmt_sb *o, fmt_err *e);

/* A page's body decompressed as it is read (ZSTD, GZIP, or none: read as it is), from the file
 * or from memory: what is held of it is a read's worth of compressed bytes and the codec's
 * state (ZSTD's window, zlib's 32 KiB). */
typedef struct pq_inflow {
	int codec;
	const char *col;            /* the column its messages name */
	const pq_file *file;
	const uint8_t *mem;         /* the compressed bytes not yet taken, in memory; NULL: in the file */
	uint64_t off, in_left;      /* their offset in the file, and count */
	const uint8_t *inp;         /* those taken: [in_pos, in_len) not yet decompressed */
	size_t in_pos, in_len;
	uint8_t *in;                /* a buffer of them read from the file */
	size_t in_cap;              /* its bytes */
	uint64_t out_size, out_left; /* the body's size decompressed (its header's), bytes not yet read */
	int done;                   /* the codec's stream ended */
	int direct;                 /* a page stored as it is, read from the file straight into each
				     * destination whatever its size (fmt_pq_inflow_move) */
	void *zstd, *gz;            /* ZSTD_DCtx, z_stream: kept from one page to the next */
} pq_inflow;
/* Whether a codec decompresses as a stream (SNAPPY and LZ4_RAW pages do not: whole). */
int fmt_pq_can_stream(int codec);
/* clen compressed bytes at mem, or at off in f, decompressing to ulen. */
fmt_kind fmt_pq_inflow_open(pq_inflow *s, const char *col, int codec, const pq_file *f, const uint8_t *mem,
			    uint64_t off, uint64_t clen, uint64_t ulen, fmt_err *e);
/* The next n bytes (n <= out_left); fewer there: InvalidFormat. */
fmt_kind fmt_pq_inflow_read(pq_inflow *s, uint8_t *dst, size_t n, fmt_err *e);
/* The rest read, and the stream must end there (as whole-page decompression checks). */
fmt_kind fmt_pq_inflow_end(pq_inflow *s, fmt_err *e);
/* A ZSTD or GZIP page's body of clen bytes at src (col's) into dst of exactly ulen bytes, as a stream
 * of them would give it (fmt_pq_inflow_read of all, fmt_pq_inflow_end: the same code and checks),
 * through a codec state made for it and freed: 0, or -1 when such a stream would fail or might (a
 * ZSTD frame asks for a larger window than a stream allows): read it as a stream then, whose
 * message says what is wrong where it always did. */
int fmt_pq_inflow_whole(const char *col, int codec, const uint8_t *src, size_t clen, uint8_t *dst, size_t ulen);
void fmt_pq_inflow_free(pq_inflow *s);
/* The bytes s holds: its buffer and the codec's state. */
uint64_t fmt_pq_inflow_bytes(const pq_inflow *s);
/* Whether what s has yet to read is in memory (fmt_pq_inflow_open's mem). */
int fmt_pq_inflow_in_memory(const pq_inflow *s);
/* A page stored as it is (CODEC_NONE) and read from memory: where its bytes not yet read (out_left
 * of them) begin, and, once they are also at off in f, s reading them from there, straight into
 * each destination (no buffer of its own). */
const uint8_t *fmt_pq_inflow_unread(const pq_inflow *s);
void fmt_pq_inflow_move(pq_inflow *s, const pq_file *f, uint64_t off);

/* ---- encodings ---- */

/* The RLE/bit-packed hybrid of width bits: n values into out (uint32). */
int fmt_pq_rle_decode(const uint8_t *p, size_t len, int width, uint32_t *out, size_t n);
/* The same of width <= 8 into bytes (levels: no scratch of 4 bytes a value beside them). */
int fmt_pq_rle_decode8(const uint8_t *p, size_t len, int width, uint8_t *out, size_t n);
/* The hybrid read a few values at a time: the run being read and where the next one begins. */
typedef struct pq_rle {
	const uint8_t *p, *end;     /* the next run's header */
	int width;
	int packed;                 /* the run: bit-packed (its bytes at bits), or one value repeated */
	uint32_t value;
	const uint8_t *bits;
	size_t bits_len;
	uint64_t at, left;          /* values of the run read, and left */
} pq_rle;
void fmt_pq_rle_init(pq_rle *r, const uint8_t *p, size_t len, int width);
/* The next n values (width <= 8) into out; -1: malformed, or the bytes run out. */
int fmt_pq_rle_next8(pq_rle *r, uint8_t *out, size_t n);
/* The next n values (width <= 32) into out. */
int fmt_pq_rle_next32(pq_rle *r, uint32_t *out, size_t n);
/* DELTA_BINARY_PACKED of n values (int32 or int64 by is64) into out; *used: bytes read. */
int fmt_pq_delta_decode(const uint8_t *p, size_t len, int is64, void *out, size_t n, size_t *used);

void fmt_pq_rle_encode(fmt_sb *o, const uint32_t *v, size_t n, int width);
int fmt_pq_bit_width(uint64_t max);

/* ---- reading ---- */

/* What the cursors of one row group's columns may hold decoded together: fmt_decode_budget of
 * the group's bytes in the file and its rows (fmt/decode_budget.h). */
typedef struct pq_budget {
	size_t group;
	uint64_t stored, rows;      /* the group's bytes in the file, its rows */
	uint64_t limit;
	uint64_t held;              /* charged so far (atomic: columns decode on threads of their own) */
	int over;                   /* a charge passed the limit (its message names the group) */
} pq_budget;
/* b for row group g of m, nothing charged. */
void fmt_pq_budget_open(pq_budget *b, const pq_meta *m, size_t g);

/* A spill file that a reader's cursors share (pq_read.c, put_aside): the rest of a page each
 * decompressed whole, which a batch left unread, until the next batch reads it. Made at its first
 * use; each row group's bytes written from its start again (fmt_pq_spill_rewind). */
typedef struct pq_spill {
	fmt_source src;
	pq_file file;               /* src as the cursors read it */
	int state;                  /* 0 not made yet, 1 open, -1 cannot be made (the pages stay in memory) */
	uint64_t at;                /* the bytes written since the rewind (atomic: cursors take on threads) */
	pthread_mutex_t lock;       /* the making of the file */
} pq_spill;
void fmt_pq_spill_init(pq_spill *s);
void fmt_pq_spill_rewind(pq_spill *s);
void fmt_pq_spill_free(pq_spill *s);

/* A cursor's own spill file (a large page decompressed whole, pq_read.c) and the file it is read
 * as: allocated only by the cursors that make one. */
typedef struct pq_page_spill {
	fmt_source src;
	pq_file file;
} pq_page_spill;

/* A cursor's buffers, each charged with the most its chunk has needed of it. */
enum { B_RBUF, B_DICT, B_DICT_SPANS, B_PAGE, B_DEFS, B_VALS, B_SPANS, B_SCRATCH, B_IDX, B_PREFIX, B_REPS, B_LVL, B_CODEC,
       PQ_BUFFERS };

/* A span of one BYTE_ARRAY value. */
typedef struct pq_span { const uint8_t *p; uint32_t n; } pq_span;

typedef struct pq_cursor {
	const pq_leaf *leaf;
	const pq_chunk *chunk;
	const pq_file *file;
	uint64_t pos, len;          /* the next page header at chunk byte pos, of len */
	/* chunk bytes [win_off, win_off + win_len) at win: the whole chunk in memory, or what was
	 * last read of it into rbuf */
	const uint8_t *win;
	uint64_t win_off, win_len;
	uint8_t *rbuf;
	size_t rbuf_cap;
	/* the dictionary */
	int has_dict;
	uint8_t *dict_buf;          /* decompressed dictionary page */
	size_t dict_cap;
	const uint8_t *dict_fixed;  /* fixed-width dictionary values (in dict_buf) */
	pq_span *dict_spans;        /* byte-array dictionary values */
	size_t dict_spans_cap;
	uint32_t dict_n;
	/* the current data page */
	uint8_t *page_buf;          /* decompressed page */
	size_t page_cap;
	/* a large page decompressed whole (SNAPPY, LZ4_RAW) and read a slice at a time: written to
	 * an unlinked temporary file (made at the first such page; NULL before) and read from there,
	 * so that a row group's columns do not each hold theirs for the batches it spans */
	struct pq_page_spill *spill;
	uint64_t page_held;         /* the bytes of such a page it reads from page_buf (counted in
				     * the process's pages held: see read_decompressed) */
	int whole;                  /* the page was read whole (load_data): its values may lie in
				     * the window */
	pq_spill *shared;           /* its reader's spill file for what a batch leaves of such a page,
				     * or NULL (put_aside) */
	uint8_t *defs;              /* definition level per value of the page (NULL: all defined):
				     * 1 defined, 0 null; a list leaf's the levels themselves */
	size_t defs_cap;
	uint8_t *reps;              /* a list leaf's repetition level per value of the page */
	size_t reps_cap;
	/* a list leaf's rows: the chunk's first in the file, its row group's count, rows begun */
	uint64_t first_row, group_rows, rows_begun;
	const uint8_t *fixed;       /* the page's defined values, fixed width: in the page or vals */
	uint8_t *vals;              /* decoded fixed-width values */
	size_t vals_cap;
	pq_span *spans;             /* the page's defined values, byte arrays */
	int by_index;               /* ... unless they are the dictionary's spans at idx */
	size_t spans_cap;
	uint8_t *scratch;           /* rebuilt strings (DELTA_BYTE_ARRAY) */
	size_t scratch_cap;
	uint32_t *idx;              /* dictionary indices */
	size_t idx_cap;
	uint32_t *prefix;           /* a DELTA_BYTE_ARRAY page's prefix lengths */
	size_t prefix_cap;
	uint64_t page_stored;            /* bytes of the page in the file (its header's compressed size) */
	uint64_t page_values, page_at;   /* values of the page, the next one */
	uint64_t page_defined_at;        /* the next defined value */
	uint64_t values_seen;            /* of the chunk */
	uint64_t bytes_taken, rows_taken; /* string bytes and rows of the last take: the next one's guess */
	/* a data page of PLAIN fixed-width values or of dictionary indices decoded a slice at a time
	 * (page_values: the slice's): its levels' bytes (lvl_buf, or in the page's memory) and
	 * readers, its body */
	int sliced;
	uint64_t slice_left;             /* the page's values after the slice */
	uint64_t slice_max;              /* values a slice holds at most, 0: SLICE_BYTES or SLICE_INDICES
					  * worth (set after open: a batch's rows, so that the slices of
					  * a wide table's columns hold about a batch between them) */
	uint64_t pages_read;             /* data pages begun (not slices) */
	uint8_t *lvl_buf;
	size_t lvl_cap;
	pq_rle rep_rd, def_rd;
	int dict_page;                   /* its values dictionary indices (kept after the levels) */
	pq_rle idx_rd;
	pq_inflow in;
	int width;                  /* bytes of a fixed-width physical value */
	int verify_crc;
	int headers_only;           /* decompress pages, decode nothing (nested leaves in fmt-verify) */
	int walk_only;              /* page headers and CRCs only: what a reader checks before it reads */
	pq_budget *budget;          /* its row group's, or NULL */
	uint64_t peak[PQ_BUFFERS];  /* charged to it for this chunk */
} pq_cursor;

/* c zeroed, or a cursor opened before: its buffers are kept for this chunk (fmt_pq_cursor_free
 * frees them). */
fmt_kind fmt_pq_cursor_open(pq_cursor *c, const pq_leaf *leaf, const pq_chunk *chunk, const pq_file *file,
			pq_budget *budget, int verify_crc, int headers_only, fmt_err *e);
void fmt_pq_cursor_free(pq_cursor *c);
/* The bytes c's buffers hold (kept from its chunks before). */
uint64_t fmt_pq_cursor_kept(const pq_cursor *c);
/* The rows of c's chunk (a list leaf's: its first row in the file and its row group's rows). */
void fmt_pq_cursor_rows(pq_cursor *c, uint64_t first_row, uint64_t rows);
/* A list leaf's size: the values of the chunk's first row that holds some (*found = 0: none
 * does), and that row of the file. */
fmt_kind fmt_pq_list_size(pq_cursor *c, uint64_t *size, uint64_t *row, int *found, fmt_err *e);
/* n rows of the column into col (buffers owned by b), converted as f says. */
fmt_kind fmt_pq_cursor_take(pq_cursor *c, const fmt_field *f, uint64_t n, fmt_column *col, fmt_batch *b, fmt_err *e);
/* The bytes n rows of f take in a block shared by a batch's columns (their bitmap and values,
 * each at a multiple of 64 bytes): 0 for a column whose buffers are its own (strings, lists). */
uint64_t fmt_pq_take_bytes(const pq_cursor *c, const fmt_field *f, uint64_t n);
/* fmt_pq_cursor_take into mem (fmt_pq_take_bytes of it, which the batch owns), or, NULL or a
 * column of its own buffers, into buffers b then owns. */
fmt_kind fmt_pq_cursor_take_into(pq_cursor *c, const fmt_field *f, uint64_t n, uint8_t *mem, fmt_column *col,
				 fmt_batch *b, fmt_err *e);
/* The next data page into the cursor (dictionary pages taken on the way); *none: the chunk's
 * bytes are over. */
fmt_kind fmt_pq_cursor_next_page(pq_cursor *c, int *none, fmt_err *e);
/* One defined physical value p as the column's value at out (width ow). */
void fmt_pq_convert_value(const pq_cursor *c, const uint8_t *p, uint8_t *out, size_t ow);
/* fmt_pq_cursor_take of a list leaf (pq_list.c): n rows of f's list size each. */
fmt_kind fmt_pq_list_take(pq_cursor *c, const fmt_field *f, uint64_t n, fmt_column *col, fmt_batch *b, fmt_err *e);
/* Every page of the chunk read and decoded (fmt-verify); *pages counts them. */
fmt_kind fmt_pq_cursor_check_all(pq_cursor *c, uint64_t *pages, fmt_err *e);

/* ---- values read as text (pq_text.c) ---- */

/* The longest text of a value (a DECIMAL of 76 digits, its sign, point and a leading 0). */
#define PQ_TEXT_MAX 96
/* The most digits of a DECIMAL fmtkit reads (Arrow's decimal256), and the most bytes of one. */
#define PQ_DECIMAL_DIGITS 76
#define PQ_DECIMAL_BYTES 32
/* Whether leaf l's values are read as text (DECIMAL, TIME, UUID, INTERVAL). */
int fmt_pq_is_text(const pq_leaf *l);
/* The most digits a DECIMAL of a fixed length of bytes holds. */
int fmt_pq_decimal_digits(int bytes);
/* The physical value p (n bytes) of leaf l as its text at out (PQ_TEXT_MAX bytes, NUL-ended):
 * its length, or -1 when it is out of its type's range (a TIME past 24:00:00, a DECIMAL of more
 * than PQ_DECIMAL_BYTES bytes). */
int fmt_pq_text(const pq_leaf *l, const uint8_t *p, size_t n, char *out);

/* ---- Arrow's schema (pq_arrow.c) ---- */

#define FMT_PQ_ARROW_SCHEMA "ARROW:schema"
/* The ARROW:schema value (malloc'd) for s when a timestamp column has a zone Parquet cannot
 * name (other than UTC), else *out = NULL. */
fmt_kind fmt_pq_arrow_schema_value(const fmt_schema *s, char **out, fmt_err *e);
/* Take the zones of an ARROW:schema key of s's metadata over its UTC-adjusted timestamps (a
 * malformed one is ignored: the values stay UTC) and drop the key. */
fmt_kind fmt_pq_arrow_schema_apply(fmt_schema *s, fmt_err *e);

/* ---- writing ---- */
/* The writer's default bound on what it holds for a row group (see fmt_pq_write): with the
 * reader's batches, within the memory rule's 32 MiB + threads x 1 MiB for a table of any width
 * (500 DOUBLE columns: 26 MiB at -T 1, 28 at -T 2; 16 MiB took 34.5 at -T 2); a narrow table's
 * groups of 122880 rows stay below it (4 columns of numbers and short strings hold 7.8 MB). */
#define PQ_GROUP_BYTES (12u << 20)

/* Rows of in as Parquet to k: a row group ends at group_rows rows, or when what the writer holds
 * for it reaches group_bytes (0: no bound). */
fmt_kind fmt_pq_write(fmt_table *in, fmt_sink *k, int codec, int level, uint64_t group_rows, uint64_t group_bytes,
		      fmt_err *e);

#endif
