/* GGUF v2/v3 reader and v3 writer, single files and gguf-split sets (specs/gguf.md). */
#ifndef FMT_GGUF_H
#define FMT_GGUF_H

#include <stdint.h>
#include <stddef.h>
#include "fmt/err.h"
#include "fmt/io.h"
#include "fmt/model.h"
#include "fmt/nameset.h"
#include "fmt/registry.h"

#define FMT_GGUF_DEFAULT_ALIGNMENT 32u
/* general.alignment above this is refused (the reference has no bound; a huge value only
 * inflates padding). */
#define FMT_GGUF_MAX_ALIGNMENT 65536u
#define FMT_GGUF_MAX_STRING (1ull << 30)   /* string and array-count cap, as the reference */
#define FMT_GGUF_MAX_ARRAY_ITEMS (1ull << 25) /* items in all metadata arrays of one file */
#define FMT_GGUF_MAX_NESTING 8u               /* arrays of arrays: levels below the outer one */
/* Tensors of one file: up to FMT_GGUF_FREE_TENSORS whatever its size, more only in a file of at
 * least FMT_GGUF_TENSOR_BYTES a tensor (every tensor costs about 1 KB in memory, 35 bytes in
 * the file when it is empty; a model's tensors hold data). */
#define FMT_GGUF_FREE_TENSORS 65536u
#define FMT_GGUF_TENSOR_BYTES 1024u
#define FMT_GGUF_MAX_KEY 65535u            /* key length cap (spec) */
#define FMT_GGUF_MAX_NAME 63u              /* tensor names are < 64 bytes */
#define FMT_GGUF_SPLIT_TENSORS 128u        /* gguf-split's default tensors per shard */

/* The reader. open accepts versions 2 and 3 and checks every rule of specs/gguf.md §16 (see
 * gguf_read.c for the policy choices). A file named <prefix>-00001-of-0000N.gguf whose split.count
 * is N opens the whole set: shard 1's metadata without the split.* keys, every shard's tensors
 * in order, one source per shard. */
extern const fmt_driver fmt_driver_gguf;

/* What open found (NULL when m was not opened by the GGUF driver). */
typedef struct fmt_gguf_info {
	uint32_t alignment;   /* of the first file */
	uint64_t data_start;  /* of the first file */
	uint64_t infos_start, infos_end; /* where its tensor infos are */
	size_t n_shards;      /* 1 for a single file */
} fmt_gguf_info;
const fmt_gguf_info *fmt_gguf_info_of(const fmt_model *m);

/* The GGUF driver's own write options (fmt_write_opts.private_opts when private_for is
 * &fmt_driver_gguf). */
typedef struct fmt_gguf_opts {
	uint32_t alignment;   /* 0 = general.alignment, else 32 */
} fmt_gguf_opts;

/* The driver's capability hooks: every ggml type; llama.cpp's dtype conventions. */
int fmt_gguf_holds_dtype(fmt_dtype t);
fmt_dtype fmt_gguf_choose_dtype(const fmt_tensor *t, fmt_dtype want, const char **why);

/* Write m as one GGUF v3 file (the driver's write): metadata in model order with the value
 * types as stored; alignment from fmt_gguf_opts, else general.alignment (must be UINT32), else 32
 * (a general.alignment key is written, or appended, whenever the alignment is not 32); tensor
 * n_dims = max(ndim, 1) keeping size-1 dims, ne = the shape reversed; zero padding after the
 * infos and after every tensor. The sink is neither committed nor aborted here. */
fmt_kind fmt_gguf_write(const fmt_model *m, fmt_sink *k, const fmt_write_opts *o, fmt_err *e);

/* The driver's plan_shards and write_sharded: a gguf-split compatible set
 * <prefix>-0000i-of-0000N.gguf of consecutive groups of at most max_tensors tensors whose
 * Σ align_up(nbytes, 32) stays within max_bytes (a single larger tensor gets a shard of its
 * own); no limit at all means 128 tensors per shard; empty_first makes shard 1 metadata-only
 * (--no-tensor-first-split). Shard 1 holds every key (except existing split.*) then split.no,
 * split.tensors.count, split.count; the others only those three. Every file appears at the
 * commit, or none (fmt/shardset.h). */
#define FMT_GGUF_SHARD_LIMITS (FMT_SHARD_BY_BYTES | FMT_SHARD_BY_TENSORS | FMT_SHARD_EMPTY_FIRST)
fmt_kind fmt_gguf_plan_shards(const fmt_model *m, const char *prefix, const fmt_shard_limits *l,
			      fmt_shard_plan *p, fmt_err *e);
fmt_kind fmt_gguf_write_sharded(const fmt_model *m, const char *prefix, const fmt_shard_limits *l,
				const fmt_write_opts *o, char ***paths, size_t *n_paths, fmt_err *e);

/* ---- general.file_type and general.quantization_version ---- */

#define FMT_GGUF_KEY_FILE_TYPE "general.file_type"
#define FMT_GGUF_KEY_QUANT_VERSION "general.quantization_version"
#define FMT_GGUF_QUANT_VERSION 2u   /* ggml's GGML_QNT_VERSION */

/* The llama_ftype name of a general.file_type value ("MOSTLY_Q8_0"), NULL if unknown. */
const char *fmt_gguf_ftype_name(uint64_t ftype);

/* The general.file_type of a model whose weights are mostly of dtype t (for K-quants the
 * medium mix, as llama.cpp guesses when the key is absent); 0 when t has none. */
int fmt_gguf_ftype_of_dtype(fmt_dtype t, uint32_t *ftype);

/* Set general.file_type (UINT32) and general.quantization_version (UINT32 2) in m's metadata
 * from its tensors, as llama-quantize and llama.cpp's converters write them: the file type of
 * the requested dtype; with requested FMT_DT_INVALID (keep), of the dtype holding most bytes of
 * the 2-D and larger tensors (an existing value naming that dtype is kept; the existing value,
 * if any, stays when the dtype has no file type). quantization_version is set when any tensor
 * is a block type; otherwise removed when a float dtype was requested and kept as it is with
 * keep. A model without tensors keeps both keys as they are: a key is replaced by a derived
 * value, never dropped for want of one. Existing keys keep their position, except with mix:
 * when not NULL it names the llama-quantize preset the tensors were planned by
 * (fmt_gguf_mix_dtypes): the file type is that preset's (Q4_K_S: 14) whatever requested says,
 * the quantization version is written whatever the tensors are (llama-quantize writes it on its
 * F16 files too), and both become the last keys, the version first, as llama-quantize sets them. */
fmt_kind fmt_gguf_set_type_keys(fmt_model *m, fmt_dtype requested, const char *mix, fmt_err *e);
/* The driver's derive_meta: those keys; with a preset the tensors are put in llama-quantize's
 * order (its loader's: outside the layers by name, then by layer; with --keep-split the input's). */
fmt_kind fmt_gguf_derive_meta(fmt_model *m, fmt_dtype requested, const char *mix, const void *options, fmt_err *e);
/* The driver's finish_meta, after the user's keys (--set, --override-kv), as llama-quantize sets
 * its keys after its --override-kv: with a preset and an --imatrix of one or more entries
 * (options: fmt_gguf_quant_opts) the keys llama-quantize records it by, each set last, whatever
 * the user's keys said: quantize.imatrix.file (the path as given, its first 127 bytes), .dataset
 * (the matrix's first dataset, when it names one), .entries_count (the entries
 * --include-weights/--exclude-weights kept) and .chunks_count (when above 0), the counts as
 * UINT32; then with --prune-layers <arch>.block_count the layers left (u32, last). */
fmt_kind fmt_gguf_finish_meta(fmt_model *m, const char *mix, const void *options, fmt_err *e);

/* ---- llama-quantize's presets and overrides (gguf_preset.c) ---- */

#define FMT_GGUF_MAX_TENSOR_TYPES 64
/* --tensor-type and --tensor-type-file's patterns together (a file may list every tensor). */
#define FMT_GGUF_MAX_PATTERNS 1024
#define FMT_GGUF_MAX_TYPE_FILES 16
#define FMT_GGUF_MAX_PRUNE 1024

/* The GGUF output's quantization options, as the driver's options parse them. */
typedef struct fmt_gguf_quant_opts {
	fmt_dtype output_type;       /* --output-tensor-type; FMT_DT_INVALID: not given */
	fmt_dtype embd_type;         /* --token-embedding-type */
	int leave_output;            /* --leave-output-tensor */
	int pure;                    /* --pure */
	size_t n_patterns;           /* --tensor-type PATTERN=TYPE, in the order given */
	char pattern[FMT_GGUF_MAX_PATTERNS][128];
	fmt_dtype pattern_type[FMT_GGUF_MAX_PATTERNS];
	/* --tensor-type-file FILE: read by the options' load, its patterns put where the option
	 * was among the --tensor-type ones (at: how many came before it) */
	struct { const char *path; size_t at; } type_file[FMT_GGUF_MAX_TYPE_FILES];
	size_t n_type_files;
	int type_files_read;
	int tensor_type_given;       /* --tensor-type given (n_patterns counts the files' too) */
	const char *imatrix_file;    /* --imatrix FILE */
	const char *include[FMT_GGUF_MAX_TENSOR_TYPES];  /* --include-weights NAME */
	const char *exclude[FMT_GGUF_MAX_TENSOR_TYPES];  /* --exclude-weights NAME */
	size_t n_include, n_exclude;
	struct fmt_gguf_imatrix *imatrix;  /* what --imatrix holds, once loaded */
	int32_t prune[FMT_GGUF_MAX_PRUNE]; /* --prune-layers: the layers left out, sorted, once each */
	size_t n_prune;
	int keep_split;                    /* --keep-split: the output in the input's shards */
} fmt_gguf_quant_opts;

/* One entry of an importance matrix: a tensor's weights, n = its row's elements times its
 * experts. */
typedef struct fmt_gguf_imatrix_entry {
	char *name;
	float *values;
	uint64_t n;
} fmt_gguf_imatrix_entry;

typedef struct fmt_gguf_imatrix {
	fmt_gguf_imatrix_entry *entries;
	size_t n, cap;
	fmt_nameset names;           /* entries[i].name -> i */
	int legacy;                  /* from a .dat file */
	int64_t chunks;              /* chunks it was computed on (0: not said) */
	char *dataset;               /* the first dataset it was computed on, or NULL */
} fmt_gguf_imatrix;

/* Read the importance matrix at path (GGUF or legacy .dat, gguf_imatrix.c), keeping the
 * entries o's --include-weights / --exclude-weights select. InvalidFormat (naming the file)
 * for a malformed file or a non-finite value. */
fmt_kind fmt_gguf_imatrix_load(fmt_gguf_imatrix *im, const char *path, const fmt_gguf_quant_opts *o, fmt_err *e);
/* The same from bytes in memory (name for messages), without the selection. */
fmt_kind fmt_gguf_imatrix_parse(fmt_gguf_imatrix *im, const char *name, const uint8_t *data, size_t size,
				 fmt_err *e);
void fmt_gguf_imatrix_free(fmt_gguf_imatrix *im);
const fmt_gguf_imatrix_entry *fmt_gguf_imatrix_find(const fmt_gguf_imatrix *im, const char *name);

extern const fmt_drvopts fmt_gguf_quant_options;

/* 1 if any of q's options is given (q may be NULL). */
int fmt_gguf_quant_opts_given(const fmt_gguf_quant_opts *q);

/* The driver's dtype_mixes (fmt/registry.h): llama-quantize's preset names, each with the
 * dtype most of its tensors get. */
size_t fmt_gguf_dtype_mixes(fmt_drvopt_value *out, size_t max);

/* The driver's dtype_alias (fmt/registry.h): llama-quantize's ftype number of a type fmtkit
 * writes (0 F32, 1 F16, 2 Q4_0, ... 15 Q4_K_M, ... 32 BF16) as its name; NULL for any other
 * name (numbers llama-quantize refuses, and those of types fmtkit does not write, which
 * fmt_gguf_mix_dtypes refuses naming them). */
const char *fmt_gguf_dtype_alias(const char *name);

/* The llama_ftype of llama-quantize's preset name (any case: Q4_K_M 15, Q4_K 15), or 0. */
int fmt_gguf_preset_ftype(const char *name, uint32_t *ftype);

/* The driver's mix_dtypes (fmt/registry.h): for --dtype naming one of llama-quantize's presets
 * (Q2_K, Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K, IQ4_NL, IQ4_XS, Q4_0,
 * Q4_1, Q5_0, Q5_1, Q8_0; Q3_K, Q4_K, Q5_K for the _M ones; llama-quantize's numbers of them, 15
 * for Q4_K_M; F16, BF16 and F32 when an option is given, else no mix) the dtype llama-quant.cpp gives each
 * tensor of m, by its role, layer and rows and meta's general.architecture and <arch>.
 * block_count, expert_count, attention.head_count(_kv); options: fmt_gguf_quant_opts or NULL.
 * A preset that is also a dtype's name (Q4_0, q4_k) on a model without those keys is no mix
 * (*mix NULL: that dtype for every tensor); the other presets and the options need them
 * (UsageError). Types: FMT_DT_INVALID for a tensor llama-quantize leaves as it is. note: a
 * --tensor-type that matches no tensor's name, an --imatrix none of whose entries (of those
 * --include-weights / --exclude-weights keep) names a tensor; llama-quantize goes on without a
 * word, so this is a warning, not an error. */
fmt_kind fmt_gguf_mix_dtypes(const fmt_model *m, const fmt_model *meta, const char *name, const void *options,
			     fmt_mix_entry *entries, const char **mix, char *note, size_t note_n, fmt_err *e);

/* The driver's foreign_names (fmt/registry.h): m's tensors are named as in a Hugging Face
 * checkpoint (model.layers.N..., lm_head.weight, transformer.h.N...) and none as llama.cpp
 * names them (token_embd.weight, blk.N...). */
const char *fmt_gguf_foreign_names(const fmt_model *m, char *why, size_t n);

/* The two keys above, NULL-terminated (the driver's derived_keys). */
extern const char *const fmt_gguf_derived_keys[];

#endif
