/* The pipeline's plan (plan.c), shared by its execution (run.c); --set metadata (setkv.c). */
#ifndef FMT_PIPELINE_INTERNAL_H
#define FMT_PIPELINE_INTERNAL_H

#include <pthread.h>
#include <stdio.h>
#include <jansson.h>
#include "fmt/pipeline.h"

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

/* When the input of a conversion is checked (fmt_model_verify). */
typedef enum verify_when {
	VERIFY_BEFORE,               /* before its tensors are read: done by the time the plan is made */
	VERIFY_AFTER,                /* after they are read (a stream, or a file the reads check) */
	VERIFY_BESIDE,               /* on a thread of its own while they are read */
} verify_when;

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
	char mix_note[FMT_ERR_MSG_MAX];  /* the target's mix's warning (fmt_driver.mix_dtypes), "" none */
	fmt_model mid;               /* decoded compressed tensors, for conversions that need them */
	fmt_model out;               /* the output model (tensors read from the input on demand) */
	verify_when verify;          /* when the input is checked */
	pthread_t verifier;          /* VERIFY_BESIDE: the thread checking verifier_model, once started */
	fmt_model *verifier_model;
	int verifier_started;
	fmt_kind verifier_kind;      /* ... and what it found */
	fmt_err verifier_err;
} convert_plan;

/* Build the plan and the output model from in. Usage errors (a dtype the target cannot
 * hold, a malformed --set) are FMT_USAGE. */
fmt_kind fmt_plan_build(convert_plan *p, const fmt_model *in, const fmt_convert_opts *o, fmt_pool *pool,
			fmt_err *e);
void fmt_plan_free(convert_plan *p);

/* --set KEY[:TYPE]=VALUE and --set-from FILE.json into model metadata (replacing in place). */
fmt_kind fmt_setkv_apply(fmt_model *m, const char *assignment, int strings_only, fmt_err *e);
/* The --set again (in place), after keys a driver set last (finish_meta), but not those of a key
 * an --override-kv names: applied after the --set, the override keeps the word it had. */
fmt_kind fmt_setkv_reapply(fmt_model *m, const char *const *sets, size_t n_sets, const char *const *overrides,
			   size_t n_overrides, int strings_only, fmt_err *e);
/* --override-kv KEY=TYPE:VALUE, llama-quantize's: TYPE int (written as u32), float (f32), bool
 * (true or false) or str (at most 127 bytes); the key moves to the end of m's keys. */
fmt_kind fmt_setkv_override(fmt_model *m, const char *assignment, int strings_only, fmt_err *e);
fmt_kind fmt_setkv_apply_file(fmt_model *m, const char *path, int strings_only, fmt_err *e);

/* --unset GLOB...: remove the keys each glob matches (every glob must match one; a key the
 * format tg requires is refused, UsageError naming it). */
fmt_kind fmt_meta_unset(fmt_model *m, const fmt_driver *tg, const char *const *globs, size_t n, fmt_err *e);
/* --metadata-from FILE [--keys GLOB]...: copy the keys of the model file at path (those the
 * globs match, or all) with their types, except the keys that describe that file itself (its
 * driver's layout_keys and derived_keys). strings_only: a key of another type is UsageError. */
fmt_kind fmt_meta_copy_from(fmt_model *m, const char *path, const char *const *keys, size_t n_keys,
			    int strings_only, fmt_err *e);
/* The user's metadata options of o on m, whose format is tg, in this order: --arch (its key
 * first), --unset, --metadata-from, --set-from, --set. */
fmt_kind fmt_meta_apply_user(fmt_model *m, const fmt_convert_opts *o, const fmt_driver *tg, fmt_err *e);

/* The plan as text or JSON (dry run and --verbose), and the warnings it implies; set, when not
 * NULL, the files of the set the output is written as (--shard, --keep-split, a default shard
 * size, a NAME.EXT.index.json output): to be written, or, after the run, written. */
struct fmt_shard_plan;
void fmt_plan_print(FILE *out, const convert_plan *p, const struct fmt_shard_plan *set, const char *input,
		    const char *output, const fmt_convert_opts *o);
/* The plan's JSON record as fmt_plan_print writes it (NULL out of memory). */
json_t *fmt_plan_json(const convert_plan *p, const struct fmt_shard_plan *set, const char *input,
		      const char *output, const fmt_convert_opts *o);
void fmt_plan_warn(const convert_plan *p, const fmt_convert_opts *o);
/* The ones of those a dry run gives too: the target's readers would not find the tensors by
 * their names (fmt_driver.foreign_names), and the target's mix's note (fmt_driver.mix_dtypes:
 * an option that names no tensor). */
void fmt_plan_warn_names(const convert_plan *p, const fmt_convert_opts *o);

/* A warning, or a --verbose note, through the caller's hook (o->warning, o->info). */
void fmt_pipeline_warn(const fmt_convert_opts *o, const char *format, ...) __attribute__((format(printf, 2, 3)));
void fmt_pipeline_info(const fmt_convert_opts *o, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* Unsupported, when in's driver cannot write its model as a network file of to (a model of
 * tensors only); FMT_OK when it can (network.c). */
fmt_kind fmt_network_writable(const fmt_model *in, const fmt_driver *to, fmt_err *e);

#endif
