/* safetensors (specs/safetensors.md): the single-file driver, its byte-exact writer, and the
 * Hugging Face sharded index (model.safetensors.index.json). */
#ifndef FMT_SAFETENSORS_H
#define FMT_SAFETENSORS_H

#include <stdint.h>
#include <stddef.h>
#include "fmt/err.h"
#include "fmt/io.h"
#include "fmt/model.h"
#include "fmt/registry.h"

extern const fmt_driver fmt_driver_safetensors;
extern const fmt_driver fmt_driver_st_index;

#define FMT_ST_HEADER_MAX 100000000u          /* §5.2: decimal bytes */
#define FMT_ST_INDEX_MAX ((size_t)64 << 20)   /* largest index JSON read */

/* ---- reader ---- */

/* Parse and validate the safetensors file m->sources[source] (header only) and append its
 * tensors to m with that source index; with with_meta, also append its __metadata__ entries.
 * The driver's open is fmt_st_open_source(m, 0, 1, e); the index driver calls it per shard.
 * On failure m may hold some of the file's tensors; the caller frees m. */
fmt_kind fmt_st_open_source(fmt_model *m, int source, int with_meta, fmt_err *e);

/* Header length N of a model opened by the safetensors driver (0 for anything else). */
uint64_t fmt_st_header_len(const fmt_model *m);

/* ---- writer (§6, byte for byte what the reference writer emits) ---- */

/* Write m as one safetensors file to k (k is not committed). String metadata is written with
 * keys sorted bytewise; other metadata types are skipped (fmt_st_write_ex counts them). */
fmt_kind fmt_st_write(const fmt_model *m, fmt_sink *k, fmt_err *e);
fmt_kind fmt_st_write_ex(const fmt_model *m, fmt_sink *k, size_t *skipped_meta, fmt_err *e);

/* The tensors of m in the order the writer stores them: *order (malloc'd, m->n_tensors
 * entries) holds indices into m->tensors. */
fmt_kind fmt_st_tensor_order(const fmt_model *m, size_t **order, fmt_err *e);

/* The unpadded header JSON the writer would emit (malloc'd, NUL-terminated). */
fmt_kind fmt_st_header_json(const fmt_model *m, char **json, size_t *len, fmt_err *e);

/* The whole file's bytes fmt_st_write writes for m: the length, the padded header, the data. */
fmt_kind fmt_st_file_bytes(const fmt_model *m, uint64_t *bytes, fmt_err *e);

/* ---- sharded index (§8) ---- */

typedef struct fmt_st_index_entry {
	char *tensor;     /* tensor name */
	char *file;       /* shard file name (a plain name, checked) */
} fmt_st_index_entry;

typedef struct fmt_st_index {
	fmt_st_index_entry *entries;   /* weight_map in file order */
	size_t n_entries;
	int has_total_size;
	uint64_t total_size;           /* metadata.total_size */
} fmt_st_index;

/* Parse index JSON text (no file access): weight_map entries, optional metadata.total_size.
 * Unknown keys are ignored; unsafe file names are InvalidFormat. */
fmt_kind fmt_st_index_parse(const char *json, size_t len, fmt_st_index *ix, fmt_err *e);
/* Every entry (tensor: file) of a weight_map object, for each index of this shape (.apsim's
 * too): add(ctx, tensor, file, e) in file order once the file is checked to be a JSON string
 * naming a plain file (else InvalidFormat); the first error stops the walk. */
typedef fmt_kind (*fmt_st_weight_fn)(void *ctx, const char *tensor, const char *file, fmt_err *e);
fmt_kind fmt_st_index_each_weight(json_t *wm, fmt_st_weight_fn add, void *ctx, fmt_err *e);
void fmt_st_index_free(fmt_st_index *ix);

/* For a model opened by the index driver: 1 and *total_size when the index declared
 * metadata.total_size, else 0. */
int fmt_st_index_total_size(const fmt_model *m, uint64_t *total_size);

/* Write an index file as transformers does (json.dumps(indent=2, sort_keys=True) + "\n"),
 * byte for byte: tensor_names[i] is stored in files[i]. */
fmt_kind fmt_st_index_write(const char *path, const char *const *tensor_names,
			    const char *const *files, size_t n, uint64_t total_size,
			    unsigned sink_flags, fmt_err *e);

/* The same written to an open sink (not committed): what a set writer does. */
fmt_kind fmt_st_index_write_to(fmt_sink *k, const char *const *tensor_names, const char *const *files,
			       size_t n, uint64_t total_size, fmt_err *e);

/* The driver's plan_shards and write_sharded: <prefix>-0000i-of-0000N.safetensors shards plus
 * <prefix>.safetensors.index.json; tensors in model order, cut by the shard-set module by data
 * bytes and/or tensor count; each shard written by fmt_st_write with the model's string
 * metadata. Without FMT_SINK_FORCE an existing output is refused before anything is written;
 * every file appears at the commit, or none (fmt/shardset.h). */
#define FMT_ST_SHARD_LIMITS (FMT_SHARD_BY_BYTES | FMT_SHARD_BY_TENSORS)
fmt_kind fmt_st_plan_shards(const fmt_model *m, const char *prefix, const fmt_shard_limits *l,
			    fmt_shard_plan *p, fmt_err *e);
fmt_kind fmt_st_write_sharded(const fmt_model *m, const char *prefix, const fmt_shard_limits *l,
			      const fmt_write_opts *o, char ***out_paths, size_t *n_out, fmt_err *e);

#endif
