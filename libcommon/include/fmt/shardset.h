/* Shard sets, for every format that writes them: one greedy cut, one NNNNN-of-NNNNN namer, one
 * all-or-nothing multi-file commit. A format states how its tensors are cut (fmt_shard_rules);
 * this module does the rest, so safetensors + index, gguf-split sets, .apsim + index (and APR)
 * are cut, named and committed the same way.
 *
 * How a driver that writes sets uses it:
 *   plan_shards    = fmt_shard_plan_make(m, &its_rules, prefix, limits, plan, e), after
 *                    applying its defaults to the limits (fmt_driver.plan_shards);
 *   write_sharded  = the same plan, then fmt_shard_write_plan with a function that writes
 *                    file i of it (shard i's tensors: fmt_shard_view gives a model holding
 *                    only them; i = n_shards: the index). That is the fmt_shard_writer loop
 *                    below, which a writer with other needs can run itself:
 *                      fmt_shard_writer_init(&w, plan.n_shards + (plan.index != NULL), ...);
 *                      per file: fmt_shard_writer_add(&w, path, &sink), write it;
 *                      fmt_shard_writer_commit(&w).
 *                    Every file is a temporary until the commit renames them all at once: an
 *                    error, SIGINT or SIGTERM before leaves nothing, and a failing commit puts
 *                    back whatever it replaced (fmt_sinks_commit).
 * Tools call the driver's hooks only (plan_shards for --dry-run and output checks,
 * write_sharded to write), never these functions with a format's rules of their own. */
#ifndef FMT_SHARDSET_H
#define FMT_SHARDSET_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "fmt/err.h"
#include "fmt/io.h"
#include "fmt/model.h"

#define FMT_SHARD_MAX_FILES 99999u  /* the five digits of NNNNN-of-NNNNN */

/* What the user asked for. 0 = no limit; a unit larger than max_bytes gets a shard of its own. */
typedef struct fmt_shard_limits {
	uint64_t max_bytes;        /* tensor data per shard, as the format's cost counts it */
	uint64_t max_tensors;      /* tensors per shard (a codes + scales pair counts two) */
	int empty_first;           /* shard 1 holds metadata only (gguf-split --no-tensor-first-split) */
} fmt_shard_limits;

/* Which limits a format honours (fmt_driver.shard_limits); plan_make refuses the others. */
#define FMT_SHARD_BY_BYTES 1u
#define FMT_SHARD_BY_TENSORS 2u
#define FMT_SHARD_EMPTY_FIRST 4u

/* How a format cuts. Units are taken in order; a unit is a tensor, or a tensor and its partner
 * (which goes to the same shard, placed at the first of the two); a new shard starts when the
 * next unit would take the current one past a limit and the current one is not empty. */
typedef struct fmt_shard_rules {
	const char *ext;           /* file extension without the dot: "safetensors" */
	int has_index;             /* the set has <prefix>.<ext>.index.json */
	size_t max_shards;         /* most shards the format can number (<= FMT_SHARD_MAX_FILES) */
	unsigned limits;           /* FMT_SHARD_* honoured */
	/* The order tensors are taken in: *order (malloc'd, m->n_tensors indices). NULL: model order. */
	fmt_kind (*order)(const fmt_model *m, size_t **order, fmt_err *e);
	/* What tensor t costs against max_bytes (e.g. padded); 0 or -1 on overflow. NULL: nbytes. */
	int (*cost)(const fmt_model *m, size_t t, uint64_t *cost);
	/* The tensor that must share t's shard, or SIZE_MAX. NULL: none. */
	size_t (*partner)(const fmt_model *m, size_t t);
} fmt_shard_rules;

typedef struct fmt_shard {
	size_t *members;           /* indices into m->tensors, in the order cut (into plan.members) */
	size_t count;
	uint64_t bytes;            /* tensor data bytes (unpadded) */
	uint64_t file_bytes;       /* the whole file's bytes, when the format's planner counts them
				    * (GGUF, safetensors, .apsim); 0: not counted */
	char *path;                /* <prefix>-NNNNN-of-NNNNN.<ext> */
} fmt_shard;

typedef struct fmt_shard_plan {
	fmt_shard *shards;
	size_t n_shards;
	size_t *members;           /* every tensor once, shard by shard */
	char *index;               /* <prefix>.<ext>.index.json, or NULL */
} fmt_shard_plan;

/* Cut m by the rules and limits and name the files after prefix. A limit the rules do not
 * honour is UsageError; more shards than the format can number is Unsupported. */
fmt_kind fmt_shard_plan_make(const fmt_model *m, const fmt_shard_rules *r, const char *prefix,
			     const fmt_shard_limits *l, fmt_shard_plan *p, fmt_err *e);
void fmt_shard_plan_free(fmt_shard_plan *p);

/* A planner's count of shard i's whole file bytes into p->shards[i].file_bytes (ctx: its own). */
typedef fmt_kind (*fmt_shard_count_fn)(const void *ctx, fmt_shard_plan *p, size_t i, fmt_err *e);
/* After k (the cut's result): every shard of p counted; on any failure p is freed. For the
 * planners of formats whose file sizes follow from the model (listed by --dry-run); the writers
 * plan the cut alone, since a written set's sizes come from its files (fmt_shard_plan_stat). */
fmt_kind fmt_shard_plan_count(fmt_kind k, fmt_shard_plan *p, fmt_shard_count_fn count, const void *ctx, fmt_err *e);

/* Once the set is written: each shard's file_bytes from its file (as the file system has it), for
 * a report of what was written, also of a format whose planner does not count them (compressed).
 * A file that cannot be looked at any more (removed since) gets 0, not counted: the set was
 * written, and the report is no reason to fail the run. */
void fmt_shard_plan_stat(fmt_shard_plan *p);

/* A set's files in a JSON report (fmt-convert, fmt-shard split), set on obj: "shards", one object
 * a file, {"file", "tensors", "bytes" (its tensor data), "file_bytes" (the whole file; null when
 * not counted)}, and "index" (the index file, or null). */
void fmt_shard_plan_json(json_t *obj, const fmt_shard_plan *p);

/* Refuse (UsageError "output is the same file as input ...") when a file of the plan is one of
 * in's files (its path or any source), and, without FMT_SINK_FORCE in sink_flags, when a file of
 * the plan exists ("output exists"). Checked before anything is written. */
fmt_kind fmt_shard_plan_check_outputs(const fmt_shard_plan *p, const fmt_model *in, unsigned sink_flags,
				      fmt_err *e);

/* The shard's tensors as a model of their own (metadata, sources, units, qtensors shared with m;
 * the tensor records copied in member order into *tensors, which the caller frees). */
fmt_kind fmt_shard_view(const fmt_model *m, const fmt_shard *s, fmt_model *view, fmt_tensor **tensors,
			fmt_err *e);

/* The namer: "<prefix>-NNNNN-of-NNNNN.<ext>" (malloc'd; NULL when out of memory), and the
 * other way: the length of a trailing "-NNNNN-of-NNNNN" in name[0..n) (0 if none), with the
 * numbers in *no and *count when not NULL. */
char *fmt_shard_file_name(const char *prefix, size_t no, size_t count, const char *ext);
size_t fmt_shard_name_suffix(const char *name, size_t n, unsigned *no, unsigned *count);

/* The prefix of a set named by an output path: the path without the writer's extension or
 * index name (or its single-file driver's: "out.safetensors" and "out.safetensors.index.json"
 * give "out"), else the path as it is (malloc'd; NULL when out of memory). */
char *fmt_shard_prefix(const char *output, const struct fmt_driver *w);

/* The files of one set being written; see the top of this header. */
typedef struct fmt_shard_writer {
	fmt_sink *sinks;
	size_t n, cap;
	unsigned sink_flags;
} fmt_shard_writer;

fmt_kind fmt_shard_writer_init(fmt_shard_writer *w, size_t n_files, unsigned sink_flags, fmt_err *e);
/* Finish the previous file and open the next at path; *k is where to write it. */
fmt_kind fmt_shard_writer_add(fmt_shard_writer *w, const char *path, fmt_sink **k, fmt_err *e);
/* Rename every file into place, all or none (fmt_sinks_commit); w is released either way. */
fmt_kind fmt_shard_writer_commit(fmt_shard_writer *w, fmt_err *e);
/* Remove every temporary file; w is released. */
void fmt_shard_writer_abort(fmt_shard_writer *w);

/* The plan's paths, shards then index, as write_sharded returns them (malloc'd copies). */
fmt_kind fmt_shard_plan_paths(const fmt_shard_plan *p, char ***paths, size_t *n, fmt_err *e);

/* What most write_sharded hooks are: refuse existing files (without FMT_SINK_FORCE), then
 * write_file(ctx, i, sink) for shard i = 0..n_shards-1 and, when the plan has an index,
 * i = n_shards for it, then commit them all; *paths as fmt_shard_plan_paths. Nothing is left
 * on disk when it fails. */
typedef fmt_kind (*fmt_shard_file_fn)(void *ctx, size_t i, fmt_sink *k, fmt_err *e);
struct fmt_write_opts; /* fmt/registry.h: its sink flags and its gate before the commit (NULL: none) */
fmt_kind fmt_shard_write_plan(const fmt_shard_plan *p, const struct fmt_write_opts *wo, fmt_shard_file_fn write_file,
			      void *ctx, char ***paths, size_t *n_paths, fmt_err *e);

/* The whole write_sharded of a format whose files need only the model and its plan: plan m with
 * plan_shards, then fmt_shard_write_plan, write_file's ctx being a fmt_shard_set. */
typedef struct fmt_shard_set {
	const fmt_model *m;
	const fmt_shard_plan *p;
} fmt_shard_set;
typedef fmt_kind (*fmt_shard_plan_fn)(const fmt_model *m, const char *prefix, const fmt_shard_limits *l,
				      fmt_shard_plan *p, fmt_err *e);
fmt_kind fmt_shard_write_model(const fmt_model *m, const char *prefix, const fmt_shard_limits *l,
			       const struct fmt_write_opts *wo, fmt_shard_plan_fn plan_shards, fmt_shard_file_fn write_file,
			       char ***paths, size_t *n_paths, fmt_err *e);

#endif
