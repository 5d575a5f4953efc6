/* Datasets: a schema of typed columns and record batches of Arrow-layout columns. Table drivers
 * (.ald, Arrow IPC, CSV, JSON Lines) build a fmt_table as model drivers build a fmt_model; the
 * same probe chooses among both kinds (fmt_open_any). */
#ifndef FMT_TABLE_H
#define FMT_TABLE_H

#include <stdint.h>
#include <stddef.h>
#include <jansson.h>
#include "fmt/err.h"
#include "fmt/io.h"
#include "fmt/model.h"
#include "fmt/crypto.h"
#include "fmt/drvopt.h"

/* Column types: Arrow's, the subset the dataset formats use. */
typedef enum fmt_ctype {
	FMT_C_BOOL,
	FMT_C_I8, FMT_C_I16, FMT_C_I32, FMT_C_I64,
	FMT_C_U8, FMT_C_U16, FMT_C_U32, FMT_C_U64,
	FMT_C_F16, FMT_C_F32, FMT_C_F64,
	FMT_C_UTF8,            /* int32 offsets */
	FMT_C_LARGE_UTF8,      /* int64 offsets */
	FMT_C_BINARY,          /* int32 offsets */
	FMT_C_DATE32,          /* days since 1970-01-01, int32 */
	FMT_C_TIMESTAMP,       /* int64 in unit since 1970-01-01T00:00:00 (UTC when zoned) */
	FMT_C_FIXED_SIZE_LIST, /* list_size values of a fixed-width elem type per row */
	FMT_C_OTHER            /* a type read from a file that fmtkit names (type_name) but does
				* not convert: decimal, struct, dictionary, ... */
} fmt_ctype;

typedef enum fmt_time_unit { FMT_TU_S, FMT_TU_MS, FMT_TU_US, FMT_TU_NS } fmt_time_unit;

typedef struct fmt_field {
	char *name;
	fmt_ctype type;
	int nullable;
	fmt_time_unit unit;    /* TIMESTAMP */
	char *timezone;        /* TIMESTAMP: "UTC", "+01:00"...; NULL for none */
	fmt_ctype elem;        /* FIXED_SIZE_LIST: a fixed-width type (not BOOL, not lists) */
	uint32_t list_size;    /* FIXED_SIZE_LIST: values per row, >= 1 */
	char *type_name;       /* OTHER: the type as the file has it ("decimal128(10, 2)") */
} fmt_field;

typedef struct fmt_kv { char *key, *value; } fmt_kv;

typedef struct fmt_schema {
	fmt_field *fields;
	size_t n_fields, cap_fields;
	fmt_kv *meta;          /* schema-level key/value metadata (Arrow custom_metadata) */
	size_t n_meta, cap_meta;
} fmt_schema;

/* One column of a batch, in Arrow's layout. Bits are LSB first. The buffers may point into a
 * mapping or into memory the batch owns (fmt_batch_own). */
typedef struct fmt_column {
	uint64_t null_count;
	const uint8_t *validity;     /* bit i set = row i is not null; NULL = no nulls */
	const void *offsets;         /* UTF8/BINARY: int32[rows+1], LARGE_UTF8: int64[rows+1] */
	const uint8_t *values;       /* fixed-width values (BOOL: one bit each), string bytes, or
				      * a FIXED_SIZE_LIST's rows*list_size element values */
	uint64_t values_len;         /* bytes available at values */
	const uint8_t *elem_validity; /* FIXED_SIZE_LIST: one bit per element; NULL = no nulls */
} fmt_column;

#define FMT_ROWS_UNKNOWN UINT64_MAX

typedef struct fmt_batch {
	uint64_t n_rows;
	uint64_t first_row;          /* the file's row of its first row (messages name rows from
				      * it): set by a reader that passes rows by (Parquet's row
				      * groups --where skips), else counted by the table for its
				      * reader's batches; FMT_ROWS_UNKNOWN (fmt_batch_init) for a
				      * batch no file row stands behind (sorted, filtered) */
	fmt_column *columns;         /* one per schema field, in order */
	size_t n_columns;
	void **owned;                /* freed with the batch */
	size_t n_owned, cap_owned;
} fmt_batch;

struct fmt_table_driver;
struct fmt_keyset;
struct fmt_license_req;
struct fmt_write_opts;
struct fmt_verify_opts;

#define FMT_ROWS_UNKNOWN UINT64_MAX

typedef struct fmt_table {
	const struct fmt_table_driver *driver;
	const struct fmt_table_driver *reader; /* the driver that opened it, under any wrapper */
	uint64_t rows_passed;        /* the reader's rows before its next batch */
	char *path;                  /* what the user named */
	fmt_source source;           /* the file, open while the table is */
	int has_source;
	fmt_schema schema;
	uint64_t n_rows;             /* FMT_ROWS_UNKNOWN when only reading every row tells */
	void *format_state;          /* driver-private, freed by driver->close */
	void *reader_state;          /* the reader's format_state once a wrapper's took its place
				      * (fmt_table_wrap_put); NULL: format_state is the reader's */
	const struct fmt_dataset_opts *opts; /* reading options (fmt/dataset.h) of
				      * a conversion; NULL: defaults */
	const struct fmt_keyset *keys; /* decrypt the rows of an encrypted file with these (its
				      * password or x25519 identity); NULL: none. Set after open. */
	int allow_expired;           /* --allow-expired: read the rows of a dataset whose licence
				      * has expired (the gate then says so in rows_note). Set after open. */
	int rows_gated;              /* fmt_table_rows_gate passed */
	int names_checked;           /* the column names are UTF-8 (checked before the first rows) */
	char rows_note[160];         /* what the gate let through ("" for nothing): a tool warns */
	int types_sampled;           /* the schema was inferred from the first rows only
				      * (fmt_dataset_opts.sample_bytes): a failure of any read may
				      * come from a row that contradicts it; n_rows is known at the end */
} fmt_table;

/* What reading a table's rows needs besides its bytes (fmt_table_secret). */
enum { FMT_SECRET_NONE = 0, FMT_SECRET_PASSWORD = 1, FMT_SECRET_IDENTITY = 2 };

/* The statistics of one column over a block of rows (a Parquet row group): its least and
 * greatest values as rows 0 and 1 of minmax when has_range (NaN left out, as writers do), its
 * null count (-1: unknown) and the block's rows. */
typedef struct fmt_col_range {
	const fmt_field *field;
	int has_range;
	fmt_column minmax;
	int64_t nulls;
	uint64_t rows;
} fmt_col_range;
/* 0 when no row of the block can pass the row tests on column col, as its range shows. */
typedef int (*fmt_range_test_fn)(void *ctx, size_t col, const fmt_col_range *r);

typedef struct fmt_table_driver {
	const char *name;            /* "csv", "ald", ... as shown to users */
	const char *extension;       /* ".csv": the output extension it answers to */
	const char *const *more_extensions; /* other output extensions, NULL-terminated; or NULL */
	/* Confidence 0..100 that head (the first bytes, up to FMT_PROBE_BYTES) is this format;
	 * compared with the model drivers' scores, so use the same scale. */
	int (*probe)(const uint8_t *head, size_t n, uint64_t file_size);
	/* Parse the header and schema (t->source is open); read no rows yet. */
	fmt_kind (*open)(fmt_table *t, fmt_err *e);
	/* The next batch into b (fmt_batch_init'ed with a column per field by fmt_table_next, which
	 * then checks it); *done = 1 and b empty after the last one. Batches are in file order; a
	 * driver chooses their size (bounded memory). */
	fmt_kind (*next)(fmt_table *t, fmt_batch *b, int *done, fmt_err *e);
	/* Integrity beyond open (CRC, digests, signatures); NULL when open checks everything. */
	fmt_kind (*verify)(fmt_table *t, const struct fmt_verify_opts *o, fmt_err *e);
	/* Optional: make what verify checks without o (the conversions' check) as next reads the
	 * rows, in one pass, rather than before: called before the first next, whose last call
	 * (*done) then fails as verify would; verify after it finds the check made, or makes what
	 * the reads did not. UnsupportedVersion when this table cannot (verify first then). */
	fmt_kind (*verify_as_read)(fmt_table *t, fmt_err *e);
	/* Write every batch of in (pulled with fmt_table_next) to k. NULL for read-only formats. */
	fmt_kind (*write)(fmt_table *in, fmt_sink *k, const struct fmt_write_opts *o, fmt_err *e);
	/* Which column types the format can hold (1/0); NULL = all of them. */
	int (*can_hold)(const fmt_field *f);
	void (*close)(fmt_table *t);  /* free format_state; may be NULL */
	/* Format-specific facts for fmt-inspect (card, compression, CRC...), or NULL. A member
	 * "warnings" (an array of strings, absent when empty) says what fmt-verify refuses but
	 * fmt-inspect shows anyway: fmt-inspect prints each as a warning. */
	json_t *(*describe)(const fmt_table *t);
	/* Of describe's members, only those fmt-verify reports: "crc", "payload_authenticated" and
	 * "license", the same values, without the rest, which may grow with the file's chunks or row
	 * groups (issue 26); NULL: the format has none of them. */
	json_t *(*verify_facts)(const fmt_table *t);
	/* FMT_SECRET_*: what the rows still need (an encrypted payload), or NULL: nothing. */
	int (*secret)(const fmt_table *t);
	/* Decrypt now with t->keys (authenticated: DecryptionFailed on a wrong key), so that
	 * nothing is written before a wrong key is found. NULL: nothing to do. */
	fmt_kind (*decrypt)(fmt_table *t, fmt_err *e);
	/* Whether the rows may be read at all: a licence past its expiry is LicenseExpired unless
	 * t->allow_expired (then a note in t->rows_note). NULL: always. */
	fmt_kind (*rows_gate)(fmt_table *t, fmt_err *e);
	/* The writer encrypts with fmt_write_opts.keys' password or x25519 recipient (pk). */
	int encrypts;
	int writes_text;             /* its files are text: standard output may be a terminal */
	/* Add or replace the licence of the file at path in place, atomically, signed by
	 * keys->ed25519_secret (fmt-sign license); NULL when the format has no licences. */
	fmt_kind (*license_in_place)(const char *path, const struct fmt_license_req *l,
				     const struct fmt_keyset *keys, fmt_err *e);
	unsigned caps;               /* FMT_CAP_ED25519, FMT_CAP_ED25519_SIGN (fmt/registry.h) */
	/* Sign the file at path in place, atomically, with a key of keys (fmt-sign sign --embed);
	 * NULL when the format has no embedded signature. */
	fmt_kind (*sign_in_place)(const char *path, const fmt_keyset *keys, int threads, fmt_err *e);
	/* Its own options (fmt-convert --delimiter, --type): what open reads (FMT_DRVOPT_READ, from
	 * fmt_dataset_opts.options) and write uses (FMT_DRVOPT_WRITE, from fmt_write_opts.options);
	 * or NULL. */
	const fmt_drvopts *options;
	/* Only the columns keep[0..n) of its schema (ascending) will be used (--include/--exclude):
	 * next may leave the others empty instead of reading them. NULL: it reads every column. */
	void (*columns_used)(fmt_table *t, const size_t *keep, size_t n);
	/* --where pushed to the reader: next skips, unread, each block of rows (row group) of which
	 * test says for some column that no row can pass; ctx lives as long as the table is read.
	 * NULL: every row is read. */
	void (*skip_blocks)(fmt_table *t, fmt_range_test_fn test, void *ctx);
} fmt_table_driver;

/* Types */
const char *fmt_ctype_name(fmt_ctype t);            /* "int64", "utf8", "fixed_size_list"... */
/* Bytes per value of a fixed-width type; 0 for BOOL (bits), the string types and lists. */
size_t fmt_ctype_width(fmt_ctype t);
/* One row's value bytes: the element width x list_size for FIXED_SIZE_LIST, else as above. */
fmt_kind fmt_field_row_width(const fmt_field *f, uint64_t *width, fmt_err *e);

/* Schemas (fields and strings copied). */
void fmt_schema_init(fmt_schema *s);
void fmt_schema_free(fmt_schema *s);
fmt_kind fmt_schema_add_field(fmt_schema *s, const fmt_field *f, fmt_err *e);
fmt_kind fmt_schema_add_meta(fmt_schema *s, const char *key, const char *value, fmt_err *e);
long fmt_schema_find(const fmt_schema *s, const char *name); /* field index, -1 if none */
/* The most columns a table may have: every reader refuses more (fmt_schema_check), so that
 * what one format's writer makes another's reader takes. */
#define FMT_TABLE_MAX_COLUMNS 100000
/* At most FMT_TABLE_MAX_COLUMNS columns, names unique and non-empty, list and timestamp
 * parameters valid. */
fmt_kind fmt_schema_check(const fmt_schema *s, fmt_err *e);
/* The schema as JSON: {"fields":[{"name":..,"type":..,"nullable":..,...}],"metadata":{...}}. */
json_t *fmt_schema_json(const fmt_schema *s);
/* A field's type for display: "int32", "timestamp[ms, UTC]", "fixed_size_list<float32>[4]",
 * or the name of a type fmtkit does not convert ("decimal128(10, 2)"). */
void fmt_field_type_name(const fmt_field *f, char *buf, size_t n);
/* The first field whose type this build cannot convert, or NULL. */
const fmt_field *fmt_schema_unsupported(const fmt_schema *s);
/* SchemaMismatch when got's type (with its unit, zone, list size) or nullability is not want's. */
fmt_kind fmt_field_expect(const fmt_field *want, const fmt_field *got, fmt_err *e);
/* SchemaMismatch naming the first difference (field count, name, type, nullability). */
fmt_kind fmt_schema_expect(const fmt_schema *want, const fmt_schema *got, fmt_err *e);

/* Batches */
fmt_kind fmt_batch_init(fmt_batch *b, size_t n_columns, fmt_err *e);
void fmt_batch_free(fmt_batch *b);
/* Hand p (malloc'd) to the batch, which frees it; on failure p is freed here. */
fmt_kind fmt_batch_own(fmt_batch *b, void *p, fmt_err *e);
/* A buffer of n bytes for a column that a reader fills batch after batch (NULL: out of memory).
 * Handed to a batch with fmt_batch_own_buffer, it is kept for a next one when the batch is freed
 * (on any thread), not given back to malloc, whose big blocks fault their pages in afresh each
 * time; fmt_batch_buffer_free gives back one that no batch took. */
void *fmt_batch_buffer(size_t n);
void fmt_batch_buffer_free(void *p);
fmt_kind fmt_batch_own_buffer(fmt_batch *b, void *p, fmt_err *e);
/* Every buffer of every column fits the rows and types the schema says (offsets start at 0,
 * never decrease and stay within values_len; strings are UTF-8; null_count matches the bitmap;
 * no nulls in a non-nullable field). fmt_table_next runs it on every batch a driver gives. A
 * row is named from the batch's first_row when it is known. */
fmt_kind fmt_batch_check(const fmt_schema *s, const fmt_batch *b, fmt_err *e);
/* The same, the rows named in its messages counted from first_row. */
fmt_kind fmt_batch_check_from(const fmt_schema *s, const fmt_batch *b, uint64_t first_row, fmt_err *e);
/* Rows [start, start + count) of src as dst: fixed-width values point into src (keep it alive),
 * bitmaps and string offsets are copied so that they start at row 0. */
fmt_kind fmt_batch_slice(const fmt_schema *s, const fmt_batch *src, uint64_t start, uint64_t count,
			 fmt_batch *dst, fmt_err *e);

/* A batch too big to hand on whole (issue 26: one record batch of an Arrow IPC file or an .ald
 * may hold gigabytes) goes to the consumers in row slices: one of more than FMT_SLICE_OVER bytes
 * (its values, offsets, string bytes and bitmaps) in slices of about FMT_SLICE_BYTES (a single
 * row may be more), each a whole multiple of 8 rows but the last, so that bitmaps are cut at byte
 * boundaries. How many slices and where they cut depends on the batch alone (its rows' bytes), so
 * that an output is the same bytes whatever reads it; a batch of at most FMT_SLICE_OVER (the
 * batches fmtkit's readers make, and so the record batches it writes) is handed on as it is. What
 * a slice takes from the mapping of src (when given) is read from the file into buffers the slice
 * owns (fmt_source_pread), so that the pages of the batch are never mapped: a batch's columns lie
 * far apart in the file, and a fault maps a page's whole folio. */
#define FMT_SLICE_OVER ((uint64_t)8 << 20)
#define FMT_SLICE_BYTES ((uint64_t)2 << 20)
typedef struct fmt_batch_slicer {
	void *whole;           /* the batch being sliced, which its slices share (freed with the
				* last of them); NULL: none */
	uint64_t at, target;   /* its next row; the bytes a slice aims at */
} fmt_batch_slicer;
/* In a driver's next, b just read (checked or not) and not empty: when it holds more than
 * FMT_SLICE_OVER, sl takes it and b becomes its first slice. */
fmt_kind fmt_batch_slicer_take(fmt_batch_slicer *sl, const fmt_schema *s, const fmt_source *src, fmt_batch *b,
			       fmt_err *e);
/* The same for a batch whose buffers lie in the mapping of src, a spill file that the next read
 * unmaps: a batch the slicer would hand on whole becomes one slice of all its rows, read out of
 * the mapping into buffers it owns (at most FMT_SLICE_OVER of them, or 8 rows), so that no batch
 * handed on points into it. */
fmt_kind fmt_batch_slicer_take_out_of(fmt_batch_slicer *sl, const fmt_schema *s, const fmt_source *src,
				      fmt_batch *b, fmt_err *e);
/* In a driver's next, b as fmt_table_next gives it (initialised, empty): the next slice of the
 * batch sl holds into b, *got = 1; *got = 0 when sl holds none (then b is untouched). */
fmt_kind fmt_batch_slicer_next(fmt_batch_slicer *sl, const fmt_schema *s, const fmt_source *src, fmt_batch *b,
			       int *got, fmt_err *e);
void fmt_batch_slicer_free(fmt_batch_slicer *sl);

/* Row accessors on a checked batch. */
int fmt_column_is_null(const fmt_column *c, uint64_t row);
int fmt_column_bool(const fmt_column *c, uint64_t row);
/* The bytes of row of a UTF8, LARGE_UTF8 or BINARY column. */
void fmt_column_bytes(const fmt_column *c, fmt_ctype type, uint64_t row, const uint8_t **p,
		      size_t *n);

/* Tables */
void fmt_table_init(fmt_table *t);
void fmt_table_free(fmt_table *t);
/* The driver's rows_gate, once: fmt_table_next runs it before the first batch; a tool runs it
 * before it writes anything, and prints t->rows_note as a warning when that is set. */
fmt_kind fmt_table_rows_gate(fmt_table *t, fmt_err *e);
/* The next checked batch (fmt_batch_free it); *done = 1 after the last (after the gate). */
fmt_kind fmt_table_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e);
/* Every remaining batch of t to fn (checked, freed after), until the end or an error of
 * either. */
fmt_kind fmt_table_each_batch(fmt_table *t, fmt_kind (*fn)(void *ctx, const fmt_batch *b, fmt_err *e), void *ctx,
			      fmt_err *e);
/* t's row count: the one its header gives, else every remaining batch read and counted. */
fmt_kind fmt_table_count_rows(fmt_table *t, uint64_t *n, fmt_err *e);
/* The driver's verify; a key given for a format without signatures is SignatureInvalid
 * (unless o->signed_elsewhere: a detached signature was checked). In formats/driver.c, beside
 * fmt_model_verify: it asks fmt/registry.h's verify options and capabilities. */
fmt_kind fmt_table_verify(fmt_table *t, const struct fmt_verify_opts *o, fmt_err *e);
/* The column names are text as the values are (a JSON Lines key, an Arrow or Parquet name):
 * InvalidFormat naming the first that is not valid UTF-8. Checked once, before the first rows
 * (fmt_table_next) and by fmt_table_verify with options (fmt-verify), so that what fmt-verify
 * passes the tools read; fmt-inspect's report, which reads no rows, shows such a file. */
fmt_kind fmt_table_names_utf8(fmt_table *t, fmt_err *e);
/* A driver's verify when its open checks the structure and only reading decodes the values
 * (CSV, JSON Lines, Arrow IPC): with o (fmt-verify), every row read as a reader reads it (the
 * driver's decoding and fmt_table_next's checks, a row they refuse named counted from the
 * file's first) and counted into t->n_rows, so that a file fmt-verify passes is one the tools
 * read; t is then at its end. Without o (a tool about to read), nothing: the reads check as they
 * go. A column of a type this build does not convert (its reader leaves it empty) is passed by:
 * the others are what the tools read, with --exclude. */
fmt_kind fmt_table_verify_rows(fmt_table *t, const struct fmt_verify_opts *o, fmt_err *e);
/* The driver's verify_as_read: ok, then every batch, then fmt_table_verify (o NULL), before
 * anything read is let out (a temporary file renamed into place after); UnsupportedVersion
 * when the driver or this table cannot (then verify before reading). */
fmt_kind fmt_table_verify_as_read(fmt_table *t, fmt_err *e);
/* FMT_SECRET_* that reading t's rows still needs. */
int fmt_table_secret(const fmt_table *t);
/* Give t the keys that decrypt it (t->keys = ks); when it needs a password that ks lacks, ask
 * for one as dk says (fmt_decrypt_keys_prompt: the tool's prompt asks the terminal when
 * standard input is one) and keep it in dk for the next files. With now,
 * decrypt at once (the rows are read next): a wrong or missing key fails here. */
struct fmt_decrypt_keys;
fmt_kind fmt_table_unlock(fmt_table *t, struct fmt_decrypt_keys *dk, struct fmt_keyset *ks, int now,
			  fmt_err *e);

/* A driver put over a table's own (selected columns, row operations, tables one after another):
 * d is t's driver with next and close replaced; inner and inner_state are t's own. */
typedef struct fmt_table_wrap {
	fmt_table_driver d;
	const fmt_table_driver *inner;
	void *inner_state;
} fmt_table_wrap;
/* Put w over t: t->driver = &w->d (next and close replaced; close NULL keeps the inner's), and
 * t->format_state = state (the wrapper's own, which holds w). */
void fmt_table_wrap_put(fmt_table *t, fmt_table_wrap *w, void *state,
			fmt_kind (*next)(fmt_table *, fmt_batch *, int *, fmt_err *), void (*close)(fmt_table *));
/* The inner driver's next batch into b, its state swapped in meanwhile (not checked). */
fmt_kind fmt_table_wrap_next(fmt_table *t, fmt_table_wrap *w, fmt_batch *b, int *done, fmt_err *e);
/* Give t its own driver and state back (a wrapper's close calls it before freeing itself, or
 * code that put a wrapper for a while); with close, also close them. */
void fmt_table_wrap_remove(fmt_table *t, fmt_table_wrap *w, int close);

/* The rule of --include/--exclude GLOB (fnmatch): name is in when it matches an include
 * (every name when none is given) and no exclude. */
int fmt_name_selected(const char *name, const char *const *include, size_t n_include,
		      const char *const *exclude, size_t n_exclude);
/* Keep only t's columns that the patterns select, in their order (batches from fmt_table_next
 * then hold those); call once t is verified and unlocked. None selected is UsageError naming
 * the patterns and the columns. Nothing to do without patterns. */
fmt_kind fmt_table_select(fmt_table *t, const char *const *include, size_t n_include,
			  const char *const *exclude, size_t n_exclude, fmt_err *e);
/* Keep only t's columns of types fmtkit converts (fmt-inspect showing rows of a table that has
 * others); none is Unsupported naming the first column. Nothing to do when all are. */
fmt_kind fmt_table_select_converted(fmt_table *t, fmt_err *e);

/* --rename OLD=NEW (each pair that text): the columns of t named anew, after the selection, in
 * a view (the driver keeps reading its own names). An unknown OLD, a NEW that another column
 * has, or a pair without both names is UsageError naming it. */
fmt_kind fmt_table_rename(fmt_table *t, const char *const *pairs, size_t n_pairs, fmt_err *e);

/* Sign the model, set or dataset at path in place with its driver's sign_in_place: whatever
 * format it is, found by content; one without embedded signatures is UsageError. */
fmt_kind fmt_sign_any_in_place(const char *path, const fmt_keyset *keys, int threads, fmt_err *e);

/* The table drivers of the registry (fmt/registry.h: one list with the model drivers), NULL-
 * terminated, in probe order; a new one is one line in libcommon/registry/registry.c. */
const fmt_table_driver *const *fmt_table_drivers(void);
const fmt_table_driver *fmt_table_driver_by_name(const char *name);
const fmt_table_driver *fmt_table_driver_by_extension(const char *path);
/* Add a driver at run time (tests, programs embedding libcommon); at most 8. */
fmt_kind fmt_table_driver_register(const fmt_table_driver *d, fmt_err *e);

/* Open path (or src, which the table takes: closed on failure) with d, which the caller chose
 * (no probe): what a driver that reopens its own files calls (libcommon/formats/driver.c). On
 * failure t is freed and e names path. */
fmt_kind fmt_table_open_with(fmt_table *t, const char *path, const fmt_table_driver *d, fmt_err *e);
fmt_kind fmt_table_open_source_with(fmt_table *t, fmt_source *src, const char *path, const fmt_table_driver *d,
				    fmt_err *e);

/* Open path (or "-") as a table: probe (unless forced), open. On failure t is freed. A file
 * that probes as a model is InvalidFormat naming the model format. */
fmt_kind fmt_table_open(fmt_table *t, const char *path, const fmt_table_driver *forced, fmt_err *e);
/* The same with dataset options (CSV delimiter, forced schema, ...) the driver reads in open. */
fmt_kind fmt_table_open_opts(fmt_table *t, const char *path, const fmt_table_driver *forced,
			     const struct fmt_dataset_opts *o, fmt_err *e);
fmt_kind fmt_table_open_memory(fmt_table *t, const char *name, const void *data, size_t n,
			       const fmt_table_driver *forced, fmt_err *e);
fmt_kind fmt_table_open_memory_opts(fmt_table *t, const char *name, const void *data, size_t n,
				    const fmt_table_driver *forced, const struct fmt_dataset_opts *o, fmt_err *e);

/* Open path (or "-") as whatever it is: one probe over the model and the table drivers, the
 * best score wins (models first on equal scores). forced names a driver of either kind (NULL:
 * probe); an unknown name is UsageError listing fmt_format_names. On success exactly one of
 * *is_table = 0 (m open) or 1 (t open). A pipe stays a sequential source for a model driver
 * that streams, as with fmt_model_open_streaming. */
fmt_kind fmt_open_any(const char *path, const char *forced, fmt_model *m, fmt_table *t,
		      int *is_table, fmt_err *e);
/* The same, probed (no forced driver) from src, a source opened with fmt_source_open_sequential
 * whose head the caller may have read: it is taken over (closed on failure). */
fmt_kind fmt_open_any_source(fmt_source *src, const char *path, fmt_model *m, fmt_table *t, int *is_table,
			     fmt_err *e);

/* "gguf, apsim, ..., csv, ...": every model then table driver's name, for messages and help. */
void fmt_format_names(char *buf, size_t n);
/* "ald, arrow, arrow-stream, jsonl or csv": the table formats (--from's values), and the same
 * as words ("ald arrow ..."). */
void fmt_table_driver_names(char *buf, size_t n);
void fmt_table_driver_words(char *buf, size_t n);
/* "safetensors, gguf, ..., csv, jsonl or ald": every format that can be written, model then
 * table drivers, for --to's help and messages (fmt-convert, fmt-watermark embed). */
void fmt_writer_names(char *buf, size_t n);
/* fmt_writer_names and the formats made only from a network (fmt_driver_writes: .nk from
 * ONNX): every name fmt-convert --to takes. */
void fmt_output_names(char *buf, size_t n);
/* The name of those lists that typed most likely meant, for "did you mean": fmt_nearest
 * (fmt/strbuf.h) over fmt_format_names', fmt_writer_names', fmt_output_names' and
 * fmt_table_driver_names' formats. NULL: none is near. */
const char *fmt_format_nearest(const char *typed);
const char *fmt_writer_nearest(const char *typed);
const char *fmt_output_nearest(const char *typed);
const char *fmt_table_driver_nearest(const char *typed);
/* FMT_OK when typed names a format (any of fmt_format_names'); otherwise FMT_USAGE, "--format
 * takes ... (not 'x'; did you mean 'y'?)": the --format option of fmt-inspect and fmt-verify. */
fmt_kind fmt_format_option_check(const char *typed, fmt_err *e);

#endif
