/* Format drivers and the registry that chooses one by content. Tools never switch on formats. */
#ifndef FMT_REGISTRY_H
#define FMT_REGISTRY_H

#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include "fmt/model.h"
#include "fmt/io.h"
#include "fmt/shardset.h"
#include "fmt/crypto.h"
#include "fmt/drvopt.h"
#include <jansson.h>

struct fmt_driver;

/* Compression of tensor data, for formats that compress (fmt_driver.compresses). DEFAULT: what
 * the model being written had in its file when it is of the same format (fmt-shard split and
 * merge keep a set compressed), else none. */
typedef enum fmt_codec { FMT_CODEC_DEFAULT, FMT_CODEC_NONE, FMT_CODEC_LZ4, FMT_CODEC_ZSTD } fmt_codec;

/* Options shared by the writers; a driver ignores what it cannot use. */
typedef struct fmt_write_opts {
	unsigned sink_flags;          /* FMT_SINK_FORCE */
	/* The values of the options drivers declare (fmt/drvopt.h): a driver takes its own
	 * (fmt_drvopt_values); NULL: every driver's defaults. */
	const fmt_drvopt_sets *options;
	fmt_codec codec;              /* FMT_CODEC_DEFAULT unless the driver compresses */
	int codec_level;              /* 0 = the codec's default */
	int threads;
	fmt_keyset keys;              /* sign with these (formats with signatures), none: unsigned */
	/* Options only one driver understands (its own struct, e.g. fmt_gguf_opts): used by
	 * private_for and ignored by every other driver. */
	const struct fmt_driver *private_for;
	const void *private_opts;
	/* Called once every byte is written, before the output is renamed into place (a set's
	 * before any of its files is): an error leaves nothing on disk. NULL: no gate. */
	fmt_kind (*before_commit)(void *ctx, fmt_err *e);
	void *commit_ctx;
	/* A set's writer stores here, before that gate, the size of each of its files in its
	 * plan's order (the shards, then the index), the first n_file_bytes of them: a record made
	 * at the gate lists them before they are in place. NULL: not wanted. */
	uint64_t *file_bytes;
	size_t n_file_bytes;
	/* Called with what a writer leaves out of a file it still writes (the card keys an .ald
	 * written with --compat alimentar has no place for), one message a call: the caller warns
	 * (once the output is in place). NULL: nothing is said. */
	void (*warning)(void *ctx, const char *msg);
	void *warning_ctx;
} fmt_write_opts;

static inline fmt_kind fmt_write_gate(const fmt_write_opts *wo, fmt_err *e)
{
	return wo && wo->before_commit ? wo->before_commit(wo->commit_ctx, e) : FMT_OK;
}

/* What verification checks beyond structure. */
typedef struct fmt_verify_opts {
	int threads;                  /* digests of shards in parallel */
	fmt_keyset keys;              /* check the signature with these (none: not asked) */
	/* The caller reads every tensor next (a converter): checks its reads make anyway (APR
	 * frames decode to their size) may be left to them, so the data is not decoded twice. */
	int reads_follow;
	/* A detached signature (FILE.minisig) by a trusted key was checked already: a file
	 * without an embedded signature is not refused for it (one that has one must verify). */
	int signed_elsewhere;
	/* When not NULL, filled with who signed what the driver checked (fmt_signer). */
	fmt_signer *signer;
	/* The caller replaces the licence next (fmt-sign license): the old licence's seller
	 * signature and expiry are not checked (renewing an expired licence is allowed). */
	int licence_replaced;
} fmt_verify_opts;

#define FMT_PROBE_BYTES 4096

/* What a format can hold and do, beyond tensors of the dtypes holds_dtype accepts. Tools and
 * the conversion planner ask these, never the driver's name. */
enum {
	FMT_CAP_TYPED_META = 1u << 0,   /* metadata of every fmt_vtype (else strings only) */
	FMT_CAP_ENCODED = 1u << 1,      /* encoded tensors (codes + scales, fmt_qtensor) natively */
	FMT_CAP_UNITS = 1u << 2,        /* physical units natively (m->units) */
	FMT_CAP_UNITS_AS_META = 1u << 3, /* units as FMT_UNITS_META_PREFIX<tensor> INT32[7] keys */
	FMT_CAP_SIGNATURES = 1u << 4,   /* HMAC signatures: an HMAC key makes sense for it */
	FMT_CAP_ED25519 = 1u << 5,      /* embedded Ed25519 signatures: verify checks them
					 * against keys.trusted */
	FMT_CAP_ED25519_SIGN = 1u << 6, /* ... and write and sign_in_place make them with
					 * keys.ed25519_secret */
	FMT_CAP_NETWORK = 1u << 7,      /* a whole network (layers and their weights), written only
					 * from a model whose driver has write_network (.nk from ONNX) */
	FMT_CAP_DEQUANT_GUARDED = 1u << 8, /* a tensor of a block type (Q8_0...) made a float dtype
					 * counts as requantizing it: refused without
					 * --allow-requantize (GGUF: llama-quantize refuses it) */
};

/* The metadata key prefix under which formats without native units keep them. */
#define FMT_UNITS_META_PREFIX "apsi.units."

/* What a format's mix (fmt_driver.mix_dtypes) makes of one tensor. */
typedef struct fmt_mix_entry {
	fmt_dtype type;          /* FMT_DT_INVALID: kept as it is */
	const char *why;         /* a note for the plan, or NULL */
	const float *weights;    /* importance weights to quantize it with (a row's count of floats
				  * per set of rows_per_set rows), or NULL; they live as long as the
				  * driver's option values */
	uint64_t rows_per_set;
	char *name;              /* its name in the output (malloc'd, freed by the planner), or NULL:
				  * its own (GGUF: --prune-layers renumbers layers) */
	int dropped;             /* 1: not in the output (GGUF: a layer --prune-layers leaves out) */
	unsigned shard;          /* the file of the output set it goes to, from 1, when the mix lays
				  * out the set (GGUF --keep-split: the input's shard); 0: none */
} fmt_mix_entry;

typedef struct fmt_driver {
	const char *name;             /* "safetensors", "gguf", ... as shown to users */
	const char *extension;        /* ".safetensors": the output extension it answers to */
	const char *title;            /* how messages call its files: "GGUF", ".apsim"... */
	/* Confidence 0..100 that head (the first bytes, up to FMT_PROBE_BYTES) is this format. */
	int (*probe)(const uint8_t *head, size_t n, uint64_t file_size);
	/* Optional: confidence from the whole source, for formats whose mark can lie past the
	 * first bytes; asked (after probe) only when probe said 0. */
	int (*probe_source)(fmt_source *s);
	/* With probe_source: how many first bytes of a file that head begins probe_source needs,
	 * when head could begin such a file whose mark lies further; 0 when it cannot. A stream
	 * keeps that many bytes for probe_source (fmt_source_keep), and is asked nothing else: an
	 * input no driver knows is neither read whole nor held beyond what the probe needs. */
	size_t (*probe_wants_source)(const uint8_t *head, size_t n);
	/* Parse and validate the structure; build the model without touching tensor data. The
	 * source is already added to m as sources[0]. */
	fmt_kind (*open)(fmt_model *m, fmt_err *e);
	/* Every integrity layer beyond what open checks (digests, signatures); reads data.
	 * NULL when open checks everything. A key given for a format without signatures is
	 * refused by fmt_model_verify, not here. */
	fmt_kind (*verify)(fmt_model *m, const fmt_verify_opts *o, fmt_err *e);
	/* Optional: check the file as its tensors are read rather than before, in one pass (a
	 * converter that reads every tensor in fmt_model_read_order); fmt_model_verify, called
	 * after them, completes the check. UnsupportedVersion when this model cannot. */
	fmt_kind (*verify_as_read)(fmt_model *m, fmt_err *e);
	/* 1 if verify with reads_follow only reads the sources (a checksum pass): a converter on
	 * several threads runs it on a thread of its own beside the tensor reads. */
	int verify_beside_reads;

	/* ---- capabilities ---- */
	unsigned caps;                /* FMT_CAP_* */
	/* 1 if a tensor of dtype t can be stored as it is; NULL: the safetensors dtypes. */
	int (*holds_dtype)(fmt_dtype t);
	/* What a float tensor asked to become want (a dtype the format holds) is stored as, by
	 * the format's conventions (GGUF: 1-D tensors stay F32); *why says why when it differs.
	 * NULL: want. */
	fmt_dtype (*choose_dtype)(const fmt_tensor *t, fmt_dtype want, const char **why);
	const char *default_dtype;    /* --dtype when none is given ("f16"); NULL: keep */
	/* Per-tensor dtypes by the format's own rules (GGUF: llama-quantize's presets, Q4_K_M...,
	 * and its --tensor-type... options), asked once per conversion before the planner's rules:
	 * name is --dtype as given (NULL: none), options the driver's option values
	 * (fmt_drvopt_values; NULL: none given), meta the metadata the output will carry. *mix =
	 * NULL: no mix is asked (the planner's rules apply); otherwise *mix names it (derive_meta
	 * gets it) and entries[i] says what m->tensors[i] becomes. note[0..note_n): a warning for
	 * the user about the options ("" when none: GGUF's --tensor-type that matches no tensor).
	 * NULL hook: the format has none. */
	fmt_kind (*mix_dtypes)(const fmt_model *m, const fmt_model *meta, const char *name, const void *options,
			       struct fmt_mix_entry *entries, const char **mix, char *note, size_t note_n, fmt_err *e);
	/* The names mix_dtypes takes, each with what it gives, into out[0..max): how many (what
	 * --help and the completions offer for --dtype). NULL: none. */
	size_t (*dtype_mixes)(fmt_drvopt_value *out, size_t max);
	/* Another spelling of one of the --dtype names the format takes that --help does not list
	 * (GGUF: llama-quantize's ftype numbers, 15 for Q4_K_M): the name it stands for, or NULL.
	 * NULL hook: none. */
	const char *(*dtype_alias)(const char *name);
	int compresses;               /* the writer compresses tensor data (fmt_write_opts.codec) */
	/* Reads a sequential source (a pipe, fmt/io.h) front to back: open reads header, metadata
	 * and index only; tensors are read in file order (fmt_tensor.seq_pos) and verify, called
	 * after them, reads the rest and checks the checksums the file carries. Other drivers are
	 * given such an input whole, in memory. */
	int streams;
	/* A format that is one text, read whole by open with fmt_source_read_text under this
	 * limit (a JSON index): a sequential source is left to open, which reads it into memory
	 * up to the limit + 1 byte, instead of being copied whole to a temporary file first (a
	 * huge stream filled the disk before the limit was checked). 0: not such a format. */
	size_t text_max;
	/* Optional, for a driver that does not stream: check the header of a sequential source
	 * from its first bytes (fmt_source_keep) before the source is read whole for open, so
	 * that a stream with a malformed header is refused without reading (and holding) the
	 * rest of it. What open would say of that header; the rest is checked by open. */
	fmt_kind (*check_head)(fmt_source *s, fmt_err *e);
	const char *arch_key;         /* the key naming the architecture, or NULL */
	/* Architectures its readers know (what --arch suggests), NULL-terminated, or NULL. */
	const char *const *archs;
	/* Shard sets: the set driver of a single-file format, and the single-file driver of a
	 * set (index) driver; NULL when there is none. */
	const struct fmt_driver *set_driver;
	const struct fmt_driver *file_driver;

	/* Write m to the sink. NULL for read-only formats. */
	fmt_kind (*write)(const fmt_model *m, fmt_sink *k, const fmt_write_opts *o, fmt_err *e);
	/* Shard sets (fmt/shardset.h). plan_shards decides where a set of m is cut for the limits
	 * and names its files after prefix (the output path without its extension): the one
	 * function behind both write_sharded and fmt-shard split --dry-run. write_sharded writes
	 * that plan, all files or none; *paths lists them (malloc'd: the shards, then the index).
	 * Both NULL when the format has no shard sets. */
	fmt_kind (*plan_shards)(const fmt_model *m, const char *prefix, const struct fmt_shard_limits *l,
				struct fmt_shard_plan *p, fmt_err *e);
	fmt_kind (*write_sharded)(const fmt_model *m, const char *prefix, const struct fmt_shard_limits *l,
				  const fmt_write_opts *o, char ***paths, size_t *n_paths, fmt_err *e);
	/* The limits plan_shards honours (FMT_SHARD_BY_BYTES | _BY_TENSORS | _EMPTY_FIRST). */
	unsigned shard_limits;
	/* Outputs with more tensor data than this are sharded unless the user says otherwise
	 * (Hugging Face's 5 GB for safetensors, Apsi's 4 GB); 0 = only when asked. */
	uint64_t default_shard_bytes;
	/* The same in tensors per shard (gguf-split's 128); 0 = only when asked. */
	uint64_t default_shard_tensors;

	/* ---- signatures (FMT_CAP_SIGNATURES) ---- */
	/* Sign the file or set at path in place, atomically, with a key of keys (fmt-sign). */
	fmt_kind (*sign_in_place)(const char *path, const fmt_keyset *keys, int threads, fmt_err *e);
	/* The signature m carries as stored, or NULL when unsigned. */
	const char *(*signature)(const fmt_model *m);

	/* ---- metadata the format derives from the tensors ---- */
	/* Set those keys in out's metadata from its tensors (GGUF: general.file_type, general.
	 * quantization_version); requested is the dtype the user asked for, FMT_DT_INVALID when
	 * the tensors keep theirs; mix the name mix_dtypes gave, or NULL; options the driver's option
	 * values (fmt_drvopt_values; NULL: none given). Converters call it before applying the
	 * user's keys, once out holds every tensor: with a mix it may reorder them in place (GGUF:
	 * in llama-quantize's order). NULL: none. */
	fmt_kind (*derive_meta)(fmt_model *out, fmt_dtype requested, const char *mix, const void *options,
				fmt_err *e);
	/* Called after the user's keys are applied, with the mix's name (or NULL) and the option
	 * values: keys the mix sets last (GGUF: --prune-layers' block_count, which llama-quantize
	 * sets after its --override-kv; the importance matrix's keys). The user's --set are applied
	 * again after it (they have the last word). NULL: none. */
	fmt_kind (*finish_meta)(fmt_model *out, const char *mix, const void *options, fmt_err *e);
	/* The keys derive_meta sets, NULL-terminated (or NULL): converters drop them when the
	 * output is in another format, where they would describe tensors that are not there. */
	const char *const *derived_keys;
	/* Why the format's readers would not find m's tensors by their names (GGUF: the names of a
	 * Hugging Face checkpoint, where llama.cpp looks for its own), written into why[0..n) and
	 * returned: converters warn, since they keep names as they are. NULL: nothing to say (or no
	 * hook). */
	const char *(*foreign_names)(const fmt_model *m, char *why, size_t n);

	void (*close)(fmt_model *m);  /* free format_state; may be NULL */
	/* Format-specific facts for fmt-inspect (digest, signature, shards...), or NULL. */
	json_t *(*describe)(const fmt_model *m);
	/* The format's own text summary, which fmt-inspect shows instead of its generic report
	 * (no option narrowing the report); NULL for the generic one. */
	void (*text_summary)(const fmt_model *m, FILE *out);
	/* The tool that shows the file's embedded tests case by case (fmt-verify --run-tests runs them
	 * in process, fmt_model_run_tests, and names this tool in its messages), or NULL. */
	const char *test_runner;
	/* Its own options (fmt-convert --apr-layout), parsed into fmt_write_opts.options; or NULL. */
	const fmt_drvopts *options;
	/* ---- metadata edits ---- */
	/* Keys (fnmatch globs, NULL-terminated, or NULL) its files must have: never removed. */
	const char *const *required_keys;
	/* Keys (globs) that describe the file they are in (alignment, split set): not copied
	 * into another file by --metadata-from. */
	const char *const *layout_keys;
	/* Replace the metadata of the file m was opened from by meta[0..n_meta), atomically (a
	 * temporary file renamed over it); tensors unchanged. *data_moved: 0 when the tensor data
	 * kept its offset (only the header changed), 1 when it had to move. NULL: not offered. */
	fmt_kind (*edit_meta)(const fmt_model *m, const fmt_meta *meta, size_t n_meta, int *data_moved,
			      fmt_err *e);
	/* ---- networks ---- */
	/* Write the network graph m holds as a file of to (a driver with FMT_CAP_NETWORK), o->options
	 * carrying to's options; Unsupported when this driver cannot make that format. NULL: m holds
	 * tensors only. */
	fmt_kind (*write_network)(const fmt_model *m, const struct fmt_driver *to, fmt_sink *k,
				  const fmt_write_opts *o, fmt_err *e);
} fmt_driver;

/* One embedded regression test case of a file, as its format's runtime checked it
 * (fmt_model_run_tests). */
typedef struct fmt_test_case {
	uint32_t index;
	const char *name;        /* as stored (any bytes), name_len of them */
	size_t name_len;
	int pass;
	const char *reason;      /* why it failed; NULL when it passed */
	double max_error, tolerance;
	uint64_t argmax, expected_argmax;
	int32_t label;           /* -1: none */
	int argmax_only;         /* compared by class only (an int8 network) */
} fmt_test_case;
typedef void (*fmt_test_case_fn)(void *ctx, const fmt_test_case *c);

/* Run the embedded tests of m in process (fmt-verify --run-tests), each case to each(ctx, c);
 * max_work bounds the multiply-adds of one run (0: the format's default). FMT_OK when every
 * case passed; TestFailed when one failed, when there are none, or when the network cannot be
 * planned; Unsupported when it needs more work than max_work; Unsupported too for a format
 * without embedded tests (the driver's test_runner is NULL). */
fmt_kind fmt_model_run_tests(const fmt_model *m, uint64_t max_work, fmt_test_case_fn each, void *ctx, fmt_err *e);

/* Capability questions (the answers of d's fields, with their defaults). */
int fmt_driver_can(const fmt_driver *d, unsigned caps);   /* every cap in caps */
int fmt_driver_holds_dtype(const fmt_driver *d, fmt_dtype t);
/* 1 when d makes files: a writer of tensors, or of networks (FMT_CAP_NETWORK). */
int fmt_driver_writes(const fmt_driver *d);
/* The first driver in registry order with every cap in caps and a writer, or NULL: whom a
 * message names when an option needs such a format. */
const fmt_driver *fmt_driver_with(unsigned caps);
/* The first writer able to hold dtype t as it is, or NULL. */
const fmt_driver *fmt_driver_holding(fmt_dtype t);
/* "llama qwen2 ...": the architectures the drivers know (fmt_driver.archs), once each. */
void fmt_driver_arch_words(char *buf, size_t n);
/* The writers' dtype mixes (fmt_driver.dtype_mixes: GGUF's Q4_K_M...) into out[0..max), once
 * each (names compared in any case): how many. */
size_t fmt_driver_dtype_mixes(fmt_drvopt_value *out, size_t max);
/* The writer whose dtype mixes include name (any letter case), or NULL. */
const fmt_driver *fmt_driver_with_mix(const char *name);
/* The writer whose dtype_alias reads name (GGUF: 15), or NULL. */
const fmt_driver *fmt_driver_with_alias(const char *name);
/* "safetensors, gguf or apsim": the writable single-file formats, for messages. */
void fmt_driver_writer_names(char *buf, size_t n);

/* A compression asked for d's output (fmt-convert --compression): none, lz4[:1-12],
 * zstd[:1-19] or zstd-max (zstd level 19) for a driver that compresses; none only for the
 * others. UsageError naming what d takes otherwise. */
fmt_kind fmt_codec_parse(const fmt_driver *d, const char *spec, fmt_codec *codec, int *level, fmt_err *e);

/* The driver that writes sets of models d opens (d itself, or its file_driver), or NULL. */
const fmt_driver *fmt_driver_set_writer(const fmt_driver *d);
/* The single-file driver of models d opens (d itself, or its file_driver). */
const fmt_driver *fmt_driver_file_writer(const fmt_driver *d);

/* ---- the registry (libcommon/registry/registry.c): one list of the model and the table
 * drivers, in probe order, and one lookup over it ---- */

/* One entry of the registry: a model or a table driver (exactly one of the two is set; both
 * NULL: none found). */
typedef struct fmt_format {
	const struct fmt_driver *model;
	const struct fmt_table_driver *table;
} fmt_format;

/* Which kinds of driver a lookup considers. */
enum { FMT_FORMAT_MODEL = 1u, FMT_FORMAT_TABLE = 2u, FMT_FORMAT_ANY = 3u };

const char *fmt_format_name(fmt_format f);
/* The first format of kinds in registry order named name, or none. */
fmt_format fmt_format_by_name(const char *name, unsigned kinds);
/* The first format of kinds whose extension (or one of a table driver's more_extensions) ends
 * path, or none. */
fmt_format fmt_format_by_extension(const char *path, unsigned kinds);
/* The format of kinds whose probe scores head (the first n bytes of s) highest, first in
 * registry order on equal scores (so a model driver before a table driver), and its score; a
 * model driver whose probe says 0 is asked its probe_source too (a sequential source keeping
 * the first bytes its probe_wants_source asks for, when it says the head could begin such a
 * file).
 * None (score 0) when no driver recognises it. */
fmt_format fmt_format_probe(fmt_source *s, const uint8_t *head, size_t n, unsigned kinds, int *score);
/* What the opener (fmt_model_open, fmt_table_open, fmt_open_any...) says of data no driver
 * reads, when a layer above knows more than "unrecognised format" (fmt_bundle_explain, set by
 * fmt_cli_parse: a tar bundle, a plain tar): fn gets the source, its first n bytes, and fills e
 * and returns 1, or returns 0 for the plain message. Set once, at start-up; NULL unsets it. */
typedef int (*fmt_unrecognised_fn)(fmt_source *s, const uint8_t *head, size_t n, fmt_err *e);
void fmt_format_set_unrecognised(fmt_unrecognised_fn fn);
/* The format of data that streams by once, size bytes in all (a member of a tar bundle, hashed
 * as it is read): its first FMT_PROBE_BYTES are kept, and then, when a model driver's probe says
 * 0 but its probe_wants_source says the mark may lie further (an .apsim header longer than
 * them), as many first bytes as it asks for (at most size), so that its probe_source is asked on
 * them as on a file's; nothing more is ever held. */
typedef struct fmt_probe_stream {
	uint8_t *kept;     /* malloc'd: the first n bytes */
	size_t n, want;    /* want: how many are kept (FMT_PROBE_BYTES until a driver asks more) */
	uint64_t size;
	int asked;         /* the drivers were asked whether they want more */
} fmt_probe_stream;
void fmt_probe_stream_init(fmt_probe_stream *ps, uint64_t size);
/* The next n bytes of the data; IoError only when more bytes to keep cannot be allocated. */
fmt_kind fmt_probe_stream_add(fmt_probe_stream *ps, const void *bytes, size_t n, fmt_err *e);
/* The format as fmt_format_probe finds it on the file (none when no driver knows the data);
 * frees the bytes kept (ps is as after fmt_probe_stream_free). */
fmt_format fmt_probe_stream_format(fmt_probe_stream *ps, unsigned kinds, int *score);
void fmt_probe_stream_free(fmt_probe_stream *ps);
/* Add a driver of either kind at run time (tests, programs embedding libcommon); at most 8 of
 * each kind. */
fmt_kind fmt_format_register(fmt_format f, fmt_err *e);

/* The same for model drivers only. All of them, NULL-terminated: */
const fmt_driver *const *fmt_drivers(void);
fmt_kind fmt_driver_register(const fmt_driver *d, fmt_err *e);
const fmt_driver *fmt_driver_by_name(const char *name);
/* "safetensors, safetensors-index, gguf, ...": every driver's name in registry order. */
void fmt_driver_names(char *buf, size_t n);
/* "apsim, apsim-index": the drivers that sign files in place (sign_in_place). */
void fmt_driver_signing_names(char *buf, size_t n);
const fmt_driver *fmt_driver_by_extension(const char *path);
const fmt_driver *fmt_driver_probe(fmt_source *s, const uint8_t *head, size_t n, int *score);

/* ---- the universal opener (libcommon/registry/open.c): any file, its driver found by the
 * registry ---- */

/* Open path (or "-"): probe the first bytes, choose a driver (or use forced when not NULL),
 * open. On failure m is freed and e says why; an unrecognised file is InvalidFormat. A pipe is
 * probed from its first bytes, then copied to a temporary file (fmt_driver_take_source): the
 * model reads it at random, as a file. */
fmt_kind fmt_model_open(fmt_model *m, const char *path, const fmt_driver *forced, fmt_err *e);

/* The same, but a pipe stays a sequential source when the driver streams
 * (fmt_model_sequential; a driver that does not gets the temporary file): for callers that read the tensors once in fmt_model_read_order and
 * call fmt_model_verify after them. */
fmt_kind fmt_model_open_streaming(fmt_model *m, const char *path, const fmt_driver *forced, fmt_err *e);

/* The same for bytes in memory (a copy is taken), named name in messages. */
fmt_kind fmt_model_open_memory(fmt_model *m, const char *name, const void *data, size_t n,
			       const fmt_driver *forced, fmt_err *e);

/* The same over an open source, which the model takes (closed on failure); path names it. */
fmt_kind fmt_model_open_source(fmt_model *m, fmt_source *src, const char *path,
			       const fmt_driver *forced, fmt_err *e);

/* Sign the file or set at path in place with a key of keys, through its driver's
 * sign_in_place; a format without signatures is UsageError naming those that have them. */
fmt_kind fmt_sign_in_place(const char *path, const fmt_keyset *keys, int threads, fmt_err *e);

/* ---- what drivers share (libcommon/formats/driver.c): nothing there chooses a driver ---- */

/* Make the sequential source src (a pipe, standard input) ready for d, whose probe chose it:
 * when d does not stream, or the caller reads at random (random_access: fmt_model_open), its
 * header is checked from its first bytes (check_head) and the stream is then copied to an
 * unlinked temporary file that src reads from (fmt_source_make_whole), so that no stream is
 * held in memory. Nothing to do for other sources, or for a driver that streams. */
fmt_kind fmt_driver_take_source(const fmt_driver *d, fmt_source *src, int random_access, fmt_err *e);
/* Open with d, which the caller chose (no probe): path, or src, which the model takes (closed
 * on failure). On failure m is freed and e names path. */
fmt_kind fmt_model_open_with(fmt_model *m, const char *path, const fmt_driver *d, fmt_err *e);
fmt_kind fmt_model_open_source_with(fmt_model *m, fmt_source *src, const char *path, const fmt_driver *d,
				    fmt_err *e);

/* The driver's verify_as_read: ok, then the tensors, then fmt_model_verify; UnsupportedVersion
 * when the driver or this model cannot (then verify before reading). */
fmt_kind fmt_model_verify_as_read(fmt_model *m, fmt_err *e);

/* 1 when m reads a sequential source: its tensors must be read once each, in ascending
 * seq_pos, and fmt_model_verify comes after them (it checks what only the end can tell). */
int fmt_model_sequential(const fmt_model *m);

/* The signature m carries as stored (its driver's signature hook), NULL when unsigned. */
const char *fmt_model_signature(const fmt_model *m);

/* A signature block that embeds the signer's bare public key (.ald, APR v1), as verify checks
 * it: without trusted keys nothing is checked (a block present is reported as unchecked through
 * o->signer); with them the block must be there (unless o->signed_elsewhere), its key trusted and
 * its signature of msg[0..len) valid (fmt_trust_check_embedded). pk and sig are read only when
 * is_signed. */
fmt_kind fmt_verify_signature_block(const fmt_verify_opts *o, int is_signed, const uint8_t *pk,
				    const void *msg, size_t len, const uint8_t *sig, fmt_err *e);

/* The driver's verify (digests, signatures). A key for a format without signatures is
 * SignatureInvalid: the user asked for a signature that cannot be there. o may be NULL. */
fmt_kind fmt_model_verify(fmt_model *m, const fmt_verify_opts *o, fmt_err *e);

#endif
