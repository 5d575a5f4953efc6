/* The conversion pipeline of fmt-convert and fmt-watermark: open and check an input model or
 * dataset, plan what each tensor becomes in the output format, and write it (one file or a
 * shard set). It prints only to the streams and through the hooks the caller gives. */
#ifndef FMT_PIPELINE_H
#define FMT_PIPELINE_H

#include <stdio.h>
#include "fmt/crypto.h"
#include "fmt/minisign.h"
#include "fmt/dataset.h"
#include "fmt/encrypt.h"
#include "fmt/model.h"
#include "fmt/overflow.h"
#include "fmt/registry.h"
#include "fmt/rowops.h"
#include "fmt/thread.h"

/* What the user asked for, after option parsing. */
typedef struct fmt_convert_opts {
	const fmt_driver *to;        /* output format */
	const char *dtype;           /* --dtype, NULL = the format's default */
	const char *arch;            /* --arch */
	const char **sets;           /* --set KEY[:TYPE]=VALUE, n_sets of them */
	size_t n_sets;
	const char **overrides;      /* --override-kv KEY=TYPE:VALUE (llama-quantize's), n_overrides */
	size_t n_overrides;
	const char *set_from;        /* --set-from FILE.json */
	const char *metadata_from;   /* --metadata-from FILE: keys copied from another model file */
	const char **keys;           /* --keys GLOB: which of its keys, n_keys of them (none: all) */
	size_t n_keys;
	const char **unsets;         /* --unset GLOB: keys removed, n_unsets of them */
	size_t n_unsets;
	int in_place;                /* --in-place: edit the metadata of the one FILE given */
	const char **include, **exclude; /* --include / --exclude GLOB */
	size_t n_include, n_exclude;
	int dry_run, force, verbose, json, quiet, no_verify, no_progress;
	int allow_expired;           /* --allow-expired: read a dataset whose licence expired */
	int threads;
	uint64_t shard;              /* --shard SIZE; 0 = the format's default */
	int shard_given;
	int force_set;               /* the output was named NAME.<ext>.index.json */
	int sign;                    /* --sign */
	const char *compression;     /* -c/--compression, as given (parsed for the output's driver) */
	fmt_codec codec;             /* what it means for a model output */
	int codec_level;
	fmt_key_opts key;            /* which key --sign uses */
	const char *sign_key;        /* --sign-key SECKEY (Ed25519) */
	fmt_pass_opts passphrase;    /* its passphrase: --passphrase-file / --passphrase-env */
	const fmt_ms_secret *sign_secret; /* the key loaded (main), NULL without --sign-key */
	fmt_overflow_mode overflow;  /* --overflow (--allow-overflow = saturate) */
	/* The options the drivers declare (--apr-layout, --delimiter, --type, ...) as the drivers
	 * parsed them (fmt/drvopt.h); NULL: none given. A dataset conversion loads what they name
	 * (fmt_drvopt_load) and refuses one that neither side uses. */
	fmt_drvopt_sets *options;
	int allow_requantize;        /* --allow-requantize: a block-type tensor may become another */
	/* datasets */
	const fmt_table_driver *table_to;   /* output table format (a dataset conversion) */
	const fmt_table_driver *table_from; /* --from: input table format, NULL = probe */
	fmt_rowops_opts rows;        /* --where, --rows, --sample, --shuffle, --dedupe, --sort */
	const char **renames;        /* --rename OLD=NEW, n_renames of them */
	size_t n_renames;
	/* fmt-watermark: called with the output model before it is written, and with the input
	 * table before its batches are pulled; NULL in fmt-convert. */
	fmt_kind (*model_hook)(fmt_model *out, void *ctx, fmt_err *e);
	fmt_kind (*table_hook)(fmt_table *in, void *ctx, fmt_err *e);
	/* and once the output is written, before it is put in place (an error: nothing is) */
	fmt_kind (*commit_hook)(void *ctx, fmt_err *e);
	void *hook_ctx;
	fmt_decrypt_opts decrypt;    /* --password-file, --password-env, --identity */
	const char *encrypt_password_file, *encrypt_password_env; /* --encrypt-password-* */
	const char *encrypt_to;      /* --encrypt-to PUBKEY */
	/* Where the pipeline reports: the tool name its warnings, progress and --verbose lines
	 * carry, out for the plan or report asked for (dry run, --json), err for the rest. */
	const char *tool;
	FILE *out, *err;
	/* How it says a warning, a --verbose note, and the progress of its writing (total bytes,
	 * from progress_begin to progress_end): the tool's printers, which the CLI layer gives
	 * (fmt_cli_pipeline_reports, fmt/report.h). A NULL hook says nothing. */
	void (*warning)(const struct fmt_convert_opts *o, const char *msg);
	void (*info)(const struct fmt_convert_opts *o, const char *msg);
	void *(*progress_begin)(const struct fmt_convert_opts *o, uint64_t total);
	void (*progress_end)(void *progress);
} fmt_convert_opts;

/* Convert a dataset (o->table_to set) from input to output. */
fmt_kind fmt_pipeline_dataset(const char *input, const char *output, const fmt_convert_opts *o, fmt_err *e);

/* o->dtype as the plan reads it: the name o->to's dtype_alias says it stands for (GGUF: 15 is
 * Q4_K_M), else o->dtype itself. */
const char *fmt_pipeline_dtype_name(const fmt_convert_opts *o);

/* o->dtype (when given) checked against o->to before any file is opened: a name no dtype, mix
 * or preset of the target has is UsageError ("--dtype takes ..."), as the plan would say; a
 * mix of o->to (GGUF's Q4_K_M) is left to the plan, which asks the input. */
fmt_kind fmt_pipeline_check_dtype(const fmt_convert_opts *o, fmt_err *e);

/* Convert input to output as o says; returns the error kind (e names the file). */
fmt_kind fmt_pipeline_run(const char *input, const char *output, const fmt_convert_opts *o, fmt_err *e);

/* The network in input as a file of to (a driver with FMT_CAP_NETWORK; NULL: the input's own
 * format, when it is one), in memory (*bytes malloc'd): the file's own bytes when it is one,
 * else what its driver's write_network makes of it with options (to's options); Unsupported
 * for a model of tensors only. */
struct fmt_drvopt_sets;
fmt_kind fmt_pipeline_network_bytes(const char *input, const struct fmt_driver *to,
				    const struct fmt_drvopt_sets *options, uint8_t **bytes, size_t *n, fmt_err *e);

/* --in-place: apply o's metadata options (--arch, --unset, --metadata-from, --set-from, --set)
 * to the model file at path, through its driver's edit_meta (atomically: the file is replaced
 * by a complete new one, or left as it was). Reports as fmt-convert does (o->out, o->json). */
fmt_kind fmt_pipeline_edit(const char *path, const fmt_convert_opts *o, fmt_err *e);

#endif
