/* The format-neutral model: ordered typed metadata and tensors whose bytes are mapped, held in
 * memory, or produced on demand. Every format driver builds one; every tool reads one. */
#ifndef FMT_MODEL_H
#define FMT_MODEL_H

#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>
#include "fmt/err.h"
#include "fmt/dtype.h"
#include "fmt/io.h"
#include "fmt/nameset.h"

#define FMT_MAX_DIMS 16

/* Value types; the numbering is GGUF's (specs/gguf.md §5.1) so GGUF reads and writes are direct. */
typedef enum fmt_vtype {
	FMT_V_U8 = 0, FMT_V_I8 = 1, FMT_V_U16 = 2, FMT_V_I16 = 3, FMT_V_U32 = 4, FMT_V_I32 = 5,
	FMT_V_F32 = 6, FMT_V_BOOL = 7, FMT_V_STR = 8, FMT_V_ARRAY = 9, FMT_V_U64 = 10,
	FMT_V_I64 = 11, FMT_V_F64 = 12
} fmt_vtype;

typedef struct fmt_value {
	fmt_vtype type;
	union {
		uint64_t u;     /* U8..U64 */
		int64_t i;      /* I8..I64 */
		double f;       /* F32 (exactly representable) and F64 */
		int b;          /* BOOL */
		struct { char *ptr; size_t len; } str;  /* bytes as stored; NUL-terminated copy */
		/* Scalar elements (U8..F64, BOOL) may be held packed: count little-endian items of
		 * fmt_vtype_size(elem) bytes each (F32 as its bits), items NULL; a hostile 2^25-item
		 * array then costs its own bytes, not 32 per item. STR elements too: count + 1
		 * uint64_t offsets, then every string NUL-terminated (fmt_value_strs); 2^25 empty
		 * strings cost 9 bytes each, not a fmt_value and a malloc. Read items with
		 * fmt_array_item. */
		struct { fmt_vtype elem; uint64_t count; struct fmt_value *items; uint8_t *packed; } arr;
	} v;
} fmt_value;

typedef struct fmt_meta {
	char *key;
	fmt_value val;
} fmt_meta;

struct fmt_tensor;
struct fmt_model;
/* Produces n bytes of a tensor starting at byte off (decoding, converting, decompressing) into
 * dst. off and n are multiples of the tensor's chunk_align, except that the last range ends at
 * nbytes. Must give the same bytes however the tensor is cut into ranges. */
typedef fmt_kind (*fmt_tensor_reader)(const struct fmt_model *m, const struct fmt_tensor *t,
				      uint64_t off, uint8_t *dst, size_t n, fmt_err *e);

typedef struct fmt_tensor {
	char *name;
	fmt_dtype dtype;
	int ndim;
	uint64_t shape[FMT_MAX_DIMS];  /* row-major, outermost first (GGUF ne reversed) */
	uint64_t nelems;
	uint64_t nbytes;
	/* Where the bytes are: exactly one of these three. */
	int source;                    /* index into model->sources, -1 if not file-backed */
	uint64_t offset;               /* absolute offset in that source */
	const uint8_t *data;           /* bytes in memory (owned by the model if owned_data) */
	int owned_data;
	fmt_tensor_reader reader;
	void *reader_ctx;
	void (*free_ctx)(void *ctx);   /* frees reader_ctx with the model; may be NULL */
	uint64_t chunk_align;          /* reader ranges are multiples of this many bytes (0 = 1) */
	/* Format-specific position for reporting (safetensors data_offsets begin, GGUF offset). */
	uint64_t file_offset;
	uint64_t stored_bytes;         /* bytes in the file when compressed there; 0 = nbytes */
	/* From a sequential source (fmt_model_sequential): 1 + where its bytes begin in the stream,
	 * and a tensor made from such a tensor (a conversion) carries it on; 0 = read in any order.
	 * Writers read tensors with a seq_pos in ascending seq_pos (fmt_model_read_order). */
	uint64_t seq_pos;
	/* The file of the output set a conversion puts it in, from 1 (a mix's fmt_mix_entry.shard:
	 * GGUF --keep-split); 0: the writer cuts the set (or writes one file). */
	unsigned out_shard;
} fmt_tensor;

struct fmt_driver;

/* Physical units: exponents of the SI base dimensions (m, kg, s, A, K, mol, cd). */
#define FMT_UNIT_DIMS 7
typedef struct fmt_unit {
	char *tensor;                  /* logical tensor name */
	int8_t dims[FMT_UNIT_DIMS];
} fmt_unit;

/* An encoded tensor: codes + scales, decoded on read. Its logical values are
 * (decode(code) - zero_point) x scale; the codes (a tensor named like the logical tensor) and
 * the scales (a tensor named in the record) are ordinary tensors of the model, and this record
 * says how to read them (fmt/qtensor.h decodes them, fmt_model_add_dequantized on demand). The
 * kinds of code are generic: Apsi checkpoints store all of them, .nk int8 weights are INT8 with
 * per-channel scales and a zero point, GGUF Q8_0/Q4_0 map onto INT8/INT4 in blocks of 32. */
typedef enum fmt_qformat {
	FMT_Q_INT8, FMT_Q_INT4, FMT_Q_FP8, FMT_Q_FP6, FMT_Q_FP4, FMT_Q_BF16
} fmt_qformat;

typedef struct fmt_qtensor {
	char *name;                    /* logical name, also the name of the codes tensor */
	char *scales;                  /* the scales tensor (F32, scale_shape); NULL: the default
					* name, fmt_qtensor_scales_name (BF16 has none) */
	int32_t zero_point;            /* INT8/INT4 codes: subtracted before scaling; else 0 */
	fmt_qformat format;            /* the kind of code */
	int axis;                      /* channel axis, -1 for null (per-tensor or blocks) */
	int ndim;
	uint64_t shape[FMT_MAX_DIMS];  /* logical shape */
	uint64_t scale_shape[FMT_MAX_DIMS]; /* same rank; all zero for bf16 (no scales) */
	int has_unit;
	int8_t unit[FMT_UNIT_DIMS];
} fmt_qtensor;

typedef struct fmt_model {
	const struct fmt_driver *driver;
	char *path;                    /* what the user named (the index for a shard set) */
	uint32_t version;              /* format version, 0 when the format has none */
	fmt_meta *meta;
	size_t n_meta, cap_meta;
	fmt_tensor *tensors;
	size_t n_tensors, cap_tensors;
	fmt_source *sources;           /* one per file: a single file, or every shard */
	size_t n_sources, cap_sources;
	fmt_unit *units;               /* tensors with physical units */
	size_t n_units, cap_units;
	fmt_qtensor *qtensors;         /* compressed tensors among the tensors */
	size_t n_qtensors, cap_qtensors;
	/* The names of tensors[] and qtensors[] -> their index, kept by fmt_model_add_tensor and
	 * fmt_model_add_qtensor for the look-ups by name (a file of 60,000 tensors took minutes
	 * when each was searched for among all). */
	fmt_nameset tensor_names, qtensor_names;
	fmt_nameset qtensor_scales;    /* the qtensors' scales names given (q->scales) */
	fmt_nameset unit_names;        /* units[]' tensor names -> their index (fmt_model_add_unit) */
	void *format_state;            /* driver-private, freed by close */
	/* The driver's close, set with driver when a driver opens the model (the model knows
	 * nothing of drivers: they sit above it). */
	void (*close)(struct fmt_model *m);
	/* Why this model's content cannot be converted (a file that holds no tensors the toolkit
	 * can read, such as APR v1's serialised structs), or NULL. Static text. */
	const char *opaque;
	/* Threads a driver may use to decode tensors ahead of their reads (the tool's -T; 0 or 1:
	 * none). */
	int reader_threads;
} fmt_model;

void fmt_model_init(fmt_model *m);
void fmt_model_free(fmt_model *m);

/* Metadata: append (keys are not checked for duplicates here; drivers do), look up. */
fmt_kind fmt_model_add_meta(fmt_model *m, const char *key, const fmt_value *val, fmt_err *e);
const fmt_value *fmt_model_get_meta(const fmt_model *m, const char *key);
/* Replace key's value in place (its position kept), or append it. */
fmt_kind fmt_model_put_meta(fmt_model *m, const char *key, const fmt_value *val, fmt_err *e);
/* Remove key (nothing happens when it is absent). */
void fmt_model_remove_meta(fmt_model *m, const char *key);
/* key set to val as the last key, wherever it was (as ggml's gguf_set_val_* does: removed and
 * appended); val may be m's own value of key. */
fmt_kind fmt_model_put_meta_last(fmt_model *m, const char *key, const fmt_value *val, fmt_err *e);
/* 1 when m's tensors carry the file of the output set each goes to (fmt_tensor.out_shard: a mix
 * sets it on all of them or on none). */
static inline int fmt_model_laid_out(const fmt_model *m)
{
	return m->n_tensors > 0 && m->tensors[0].out_shard != 0;
}
/* fmt_model_put_meta of each of kv[0..n) in turn, through one index of m's keys (one at a
 * time, each key is looked for among all: a file of 200,000 keys copied with --metadata-from
 * took minutes). */
fmt_kind fmt_model_put_metas(fmt_model *m, const fmt_meta *const *kv, size_t n, fmt_err *e);
/* Remove every key for which drop(key, ctx) is nonzero, in one pass. */
void fmt_model_remove_metas(fmt_model *m, int (*drop)(const char *key, const void *ctx), const void *ctx);
/* Append a tensor (copied; name duplicated); returns a pointer into m->tensors. */
fmt_kind fmt_model_add_tensor(fmt_model *m, const fmt_tensor *t, fmt_tensor **out, fmt_err *e);
const fmt_tensor *fmt_model_find_tensor(const fmt_model *m, const char *name);
/* Take ownership of an open source; returns its index. */
fmt_kind fmt_model_add_source(fmt_model *m, fmt_source *s, int *index, fmt_err *e);

/* Open dir + file (a shard an index names) as a new source of m; *index is its place in
 * m->sources and *path (malloc'd, the caller frees it, also on failure) what was opened. A
 * missing file is SchemaMismatch ("shard 'f' named in <named_in> does not exist"). */
fmt_kind fmt_model_open_shard(fmt_model *m, const char *dir, const char *file, const char *named_in,
			      int *index, char **path, fmt_err *e);

/* Units and compressed tensors (copied; names duplicated). */
fmt_kind fmt_model_add_unit(fmt_model *m, const char *tensor, const int8_t dims[FMT_UNIT_DIMS], fmt_err *e);
const fmt_unit *fmt_model_find_unit(const fmt_model *m, const char *tensor);
fmt_kind fmt_model_add_qtensor(fmt_model *m, const fmt_qtensor *q, fmt_err *e);
const fmt_qtensor *fmt_model_find_qtensor(const fmt_model *m, const char *name);

/* A pointer to a tensor's nbytes bytes: a view into the mapping, its in-memory data, or a buffer
 * filled by its reader (then *to_free is set and the caller frees it). */
fmt_kind fmt_tensor_load(const fmt_model *m, const fmt_tensor *t, const uint8_t **bytes,
			 uint8_t **to_free, fmt_err *e);

/* Copy n bytes of a tensor from byte off into dst, by pread for file-backed tensors (no mapping,
 * so streaming a large model keeps resident memory bounded). */
fmt_kind fmt_tensor_read(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst,
			 size_t n, fmt_err *e);

/* Hand a tensor's bytes to fn in order, in bounded chunks (about 4 MiB, on chunk_align
 * boundaries; in-memory tensors in one piece); stops at the first error fn returns. */
typedef fmt_kind (*fmt_chunk_fn)(void *ctx, const uint8_t *bytes, size_t n, fmt_err *e);
fmt_kind fmt_tensor_each_chunk(const fmt_model *m, const fmt_tensor *t, fmt_chunk_fn fn, void *ctx,
			       fmt_err *e);

/* Write the tensors order[0..n) back to back from k's current end, in bounded chunks. Tensors
 * of a sequential input are read in fmt_model_read_order and placed with fmt_sink_write_at
 * when that differs from order (a file output only). With threads > 1 and a file output (and
 * no sequential input), tensors are read and placed on that many threads at once: decoding,
 * converting and copying into the file all run in parallel; the bytes are the same. */
fmt_kind fmt_model_write_tensors(const fmt_model *m, const size_t *order, size_t n, fmt_sink *k, int threads,
				 fmt_err *e);

/* The parallel case of fmt_model_write_tensors for tensors[0..n) (tensors of m, in that order),
 * each followed by zeros up to a multiple of align bytes from k's end (GGUF's padding): written
 * and *done set when it applies (threads > 1, a file output, no sequential input); otherwise
 * *done is 0, nothing is written and the caller writes them in order. */
fmt_kind fmt_model_place_tensors(const fmt_model *m, const fmt_tensor *tensors, size_t n, uint64_t align,
				 fmt_sink *k, int threads, int *done, fmt_err *e);

/* 1 on a thread that a parallel writer (fmt_model_write_tensors) runs: each such thread reads
 * its own tensor, or its own range of one (fmt_tensor_reads_any_range), so readers should not
 * decode other tensors ahead nor hand their work to a pool. */
int fmt_tensor_reads_in_parallel(void);
/* fmt_tensor_read by one of several threads that each read their own range of t (a tensor that
 * reads any range: fmt_tensor_reads_any_range), as a parallel writer's threads do. */
fmt_kind fmt_tensor_read_own_range(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst, size_t n,
				   fmt_err *e);

/* Write all of a tensor's bytes to k in bounded chunks (about 4 MiB): what every writer uses. */
fmt_kind fmt_tensor_write_to(const fmt_model *m, const fmt_tensor *t, fmt_sink *k, fmt_err *e);

uint64_t fmt_model_param_count(const fmt_model *m);

/* The order in which a writer reads m's tensors: ascending seq_pos for tensors that come from a
 * sequential source, model order otherwise (*order: n_tensors indices, malloc'd). 1 in *moved
 * when it differs from model order. */
fmt_kind fmt_model_read_order(const fmt_model *m, size_t **order, int *moved, fmt_err *e);

/* Values */
fmt_value fmt_value_str(const char *s, size_t len); /* duplicates; type STR; ptr NULL on ENOMEM */
fmt_kind fmt_value_copy(fmt_value *dst, const fmt_value *src, fmt_err *e);
void fmt_value_free(fmt_value *v);
const char *fmt_vtype_name(fmt_vtype t);           /* "u32", "str", "array", ... */
/* Bytes of one packed scalar element (1, 2, 4 or 8; BOOL 1); 0 for STR and ARRAY. */
size_t fmt_vtype_size(fmt_vtype t);
/* Item i (< count) of an array: decoded from the packed bytes, or items[i] itself (a shallow
 * copy: do not free it). */
fmt_value fmt_array_item(const fmt_value *a, uint64_t i);
/* An array of count scalars of type elem taking a copy of their packed bytes. */
fmt_kind fmt_value_packed(fmt_value *out, fmt_vtype elem, uint64_t count, const void *bytes, fmt_err *e);
/* A packed array of count strings of bytes bytes in all (NULs not counted), to be filled in
 * order by fmt_value_strs_put; items not yet put must not be read. */
fmt_kind fmt_value_strs(fmt_value *out, uint64_t count, uint64_t bytes, fmt_err *e);
/* Item i of a packed string array as len bytes (items 0..i-1 put, the room fmt_value_strs
 * gave not exceeded): where to write them; their NUL is written. */
char *fmt_value_strs_put(fmt_value *a, uint64_t i, size_t len);

/* A JSON value as a metadata value: strings, integers (I64), reals (F64) and booleans as they
 * are; an array of one kind of scalar (integers and reals together as F64) or of arrays, a
 * typed array; anything else (objects, null, mixed arrays, nesting deeper than 16) as its
 * compact JSON text (a STR), with object keys in order, or sorted when sort_keys. */
fmt_kind fmt_value_from_json(const json_t *j, int sort_keys, fmt_value *out, fmt_err *e);

/* A metadata value as JSON; arrays longer than max_items (0 = no limit) are abbreviated to
 * their first max_items items plus {"truncated": total}. */
json_t *fmt_json_value(const fmt_value *v, size_t max_items);
/* The same JSON written to f as it is made, array items one at a time (a 2^25-item array is
 * never a tree), through fmt_json_write; 0, or -1 on a write error. */
int fmt_json_write_value(FILE *f, const fmt_value *v, size_t max_items);
/* v as {"type": T, "value": V}, every item written, as fmt-convert --set-from reads it back to
 * the same value: T the type of a scalar, or of every item of an array and of its nested
 * arrays; "array" (V a list of such objects) for an array of arrays whose items differ. */
int fmt_json_write_typed(FILE *f, const fmt_value *v);

/* Print the value as text (strings escaped and quoted, arrays abbreviated past max_items). */
void fmt_out_value(FILE *f, const fmt_value *v, size_t max_items);

#endif
