/* fmt-convert: the plan from an input model to an output model, and its execution. */
#ifndef CONVERT_H
#define CONVERT_H

#include <stdio.h>
#include "fmt/crypto.h"
#include "fmt/minisign.h"
#include "fmt/dataset.h"
#include "fmt/model.h"
#include "fmt/overflow.h"
#include "fmt/registry.h"
#include "fmt/thread.h"

/* What the user asked for, after option parsing. */
typedef struct convert_opts {
	const fmt_driver *to;        /* output format */
	const char *dtype;           /* --dtype, NULL = the format's default */
	const char *arch;            /* --arch */
	const char **sets;           /* --set KEY[:TYPE]=VALUE, n_sets of them */
	size_t n_sets;
	const char *set_from;        /* --set-from FILE.json */
	const char **include, **exclude; /* --include / --exclude GLOB */
	size_t n_include, n_exclude;
	int dry_run, force, verbose, json, quiet, no_verify, no_progress;
	int threads;
	uint64_t shard;              /* --shard SIZE; 0 = the format's default */
	int shard_given;
	int force_set;               /* the output was named NAME.<ext>.index.json */
	int sign;                    /* --sign */
	const char *layout;          /* --apr-layout: one of the target driver's layouts */
	const char *compression;     /* -c/--compression, as given (parsed for the output's driver) */
	fmt_codec codec;             /* what it means for a model output */
	int codec_level;
	fmt_key_opts key;            /* which key --sign uses */
	const char *sign_key;        /* --sign-key SECKEY (Ed25519) */
	fmt_pass_opts passphrase;    /* its passphrase: --passphrase-file / --passphrase-env */
	const fmt_ms_secret *sign_secret; /* the key loaded (main), NULL without --sign-key */
	fmt_overflow_mode overflow;  /* --overflow (--allow-overflow = saturate) */
	/* datasets */
	const fmt_table_driver *table_to;   /* output table format (a dataset conversion) */
	const fmt_table_driver *table_from; /* --from: input table format, NULL = probe */
	fmt_dataset_opts dataset;    /* --delimiter, --compression, --chunk-rows, ... */
	const char *schema_file;     /* --schema FILE.json */
	const char *card_file;       /* --card FILE.json */
	/* fmt-watermark (which links this folder's plan, run and dataset code): called with the
	 * output model before it is written, and with the input table before its batches are
	 * pulled; NULL in fmt-convert. */
	fmt_kind (*model_hook)(fmt_model *out, void *ctx, fmt_err *e);
	fmt_kind (*table_hook)(fmt_table *in, void *ctx, fmt_err *e);
	void *hook_ctx;
} convert_opts;

/* One logical tensor of the plan: a plain tensor, or a compressed one (codes and scales). */
typedef struct plan_entry {
	const char *name;
	char from[16], to[16];       /* dtype names ("F32", "Q8_0") or Apsi formats ("int8") */
	uint64_t bytes;              /* output bytes, codes and scales together */
	const char *why;             /* why the result differs from what was asked, or NULL */
	int overflowed;              /* values beyond the asked dtype: saturated or widened */
	uint64_t overflow_elem;      /* the first of them, and its value */
	float overflow_value;
	char asked[16];              /* the dtype the values did not fit */
} plan_entry;

/* Tensor names a warning lists (pointing into the input model). */
typedef struct name_list {
	const char **names;
	size_t n;
} name_list;

typedef struct convert_plan {
	plan_entry *entries;
	size_t n_entries;
	size_t excluded;             /* tensors left out by --include/--exclude */
	name_list expanded;          /* compressed or quantized tensors expanded to a float type */
	size_t dropped_meta;         /* metadata entries the target cannot hold */
	name_list dropped_units;     /* tensors whose units the target cannot hold */
	fmt_model mid;               /* decoded compressed tensors, for conversions that need them */
	fmt_model out;               /* the output model (tensors read from the input on demand) */
	int verify_after;            /* the input is checked after its tensors are read (a stream,
				      * or a file checked by the reads themselves) */
} convert_plan;

/* Convert a dataset (o->table_to set) from input to output. */
fmt_kind convert_dataset(const char *input, const char *output, const convert_opts *o, fmt_err *e);

/* Convert input to output as o says; returns the error kind (e names the file). */
fmt_kind convert_run(const char *input, const char *output, const convert_opts *o, fmt_err *e);

/* Build the plan and the output model from in. Usage errors (a dtype the target cannot
 * hold, a malformed --set) are FMT_USAGE. */
fmt_kind plan_build(convert_plan *p, const fmt_model *in, const convert_opts *o, fmt_pool *pool,
		    fmt_err *e);
void plan_free(convert_plan *p);

/* --set KEY[:TYPE]=VALUE and --set-from FILE.json into model metadata (replacing in place). */
fmt_kind setkv_apply(fmt_model *m, const char *assignment, int strings_only, fmt_err *e);
fmt_kind setkv_apply_file(fmt_model *m, const char *path, int strings_only, fmt_err *e);
/* Replace key's value in place, or append it. */
fmt_kind setkv_put(fmt_model *m, const char *key, const fmt_value *v, fmt_err *e);

/* The plan as text or JSON (dry run and --verbose), and the warnings it implies. */
void plan_print(FILE *out, const convert_plan *p, const char *input, const char *output,
		const convert_opts *o);
void plan_warn(const convert_plan *p, const char *tool, fmt_overflow_mode mode);

#endif
