/* fmt-convert: the plan from an input model to an output model, and its execution. */
#ifndef CONVERT_H
#define CONVERT_H

#include <stdio.h>
#include "fmt/model.h"
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
	int dry_run, force, verbose, json, quiet;
	int threads;
} convert_opts;

/* One tensor of the plan. */
typedef struct plan_entry {
	const fmt_tensor *src;
	fmt_dtype to;
	const char *why;             /* why the dtype differs from what was asked, or NULL */
} plan_entry;

typedef struct convert_plan {
	plan_entry *entries;
	size_t n_entries;
	size_t excluded;             /* tensors left out by --include/--exclude */
	size_t expanded;             /* quantized tensors expanded to a float type */
	size_t dropped_meta;         /* metadata entries the target cannot hold */
	fmt_model out;               /* the output model (tensors read from the input on demand) */
} convert_plan;

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
void plan_warn(const convert_plan *p, const char *tool);

#endif
