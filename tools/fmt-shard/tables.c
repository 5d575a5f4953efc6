/* Datasets in fmt-shard: split a table into parts (--fractions: train/validation/test, drawn
 * from --seed, per --stratify column) and shards of --rows N rows, written in the input's format
 * into DIR as one set (every file or none); merge (concat) tables of the same schema into one. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fmt/format_options.h"
#include "fmt/out.h"
#include "fmt/report.h"
#include "fmt/rowops.h"
#include "shard.h"

#define MAX_FILES 100000

/* One output file: rows [start, end) of part `part`. */
typedef struct out_file {
	char *path;
	size_t part;
	uint64_t start, end;
} out_file;

typedef struct split_job {
	fmt_split_plan *plan;        /* NULL: no --fractions (one part: the whole input) */
	uint64_t total;              /* rows of the input */
	size_t n_parts;
	const char *part_names[16];
	char base[256];              /* the input's name without its extension */
	out_file *files;
	size_t n_files;
} split_job;

fmt_kind open_table_input(const char *input, fmt_table *t, int *is_table, fmt_err *e)
{
	fmt_model m;
	fmt_kind k = fmt_open_any(input, NULL, &m, t, is_table, e);
	if (k == FMT_OK && !*is_table)
		fmt_model_free(&m);
	return k;
}

/* Before a row is read: an .ald whose licence expired stops here (exit 10), or with
 * --allow-expired is read and a warning says so; an encrypted one is refused (its parts would
 * be written in the clear). */
static fmt_kind rows_readable(fmt_table *t, const shard_opts *o, fmt_err *e)
{
	t->allow_expired = o->allow_expired;
	fmt_kind k = fmt_table_rows_gate(t, e);
	if (k == FMT_OK && fmt_table_secret(t) != FMT_SECRET_NONE) {
		k = fmt_fail(e, FMT_UNSUPPORTED, "the rows are encrypted, and fmt-shard writes in the clear: decrypt it first "
			     "(fmt-convert --password-file FILE or --identity SECKEY), and encrypt the results after");
		fmt_err_file(e, t->path);
	}
	if (k == FMT_OK && t->rows_note[0] && !o->common.quiet)
		fmt_report_warning(stderr, TOOL, "%s: %s", t->path, t->rows_note);
	return k;
}

static uint64_t part_rows(const split_job *j, size_t part)
{
	return j->plan ? fmt_split_plan_rows(j->plan, part) : j->total;
}

/* "train", "validation", "test" for two or three parts, else part1, part2...; one part: the
 * input's name without its extension. */
static void name_parts(split_job *j, const char *input)
{
	char *base = j->base;
	size_t n = sizeof j->base;
	static const char *const two[] = { "train", "test" }, *const three[] = { "train", "validation", "test" };
	static char numbered[16][16];
	snprintf(base, n, "%s", fmt_base_name(input));
	char *dot = strrchr(base, '.');
	if (dot && dot != base)
		*dot = '\0';
	for (size_t i = 0; i < j->n_parts; i++) {
		snprintf(numbered[i], sizeof numbered[i], "part%zu", i + 1);
		j->part_names[i] = j->n_parts == 1 ? base : j->n_parts == 2 ? two[i] : j->n_parts == 3 ? three[i]
			: numbered[i];
	}
}

static fmt_kind add_file(split_job *j, const char *dir, const char *name, const char *ext, size_t part, uint64_t shard,
			 uint64_t shards, uint64_t rows_per, fmt_err *e)
{
	/* made to its length: a fixed buffer cut a long one short, into another file's name */
	out_file *f = &j->files[j->n_files];
	int made = shards > 1 ? asprintf(&f->path, "%s/%s-%05" PRIu64 "-of-%05" PRIu64 "%s", dir, name, shard + 1,
					 shards, ext)
			      : asprintf(&f->path, "%s/%s%s", dir, name, ext);
	if (made < 0) {
		f->path = NULL;
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	f->part = part;
	f->start = rows_per ? shard * rows_per : 0;
	f->end = rows_per ? f->start + rows_per : UINT64_MAX;
	j->n_files++;
	return FMT_OK;
}

/* The files: per part, one, or one per --rows N rows (at least one, which may be empty). */
static fmt_kind plan_files(split_job *j, const char *input, const char *ext, const shard_opts *o, fmt_err *e)
{
	uint64_t count = 0;
	name_parts(j, input);
	for (size_t p = 0; p < j->n_parts; p++) {
		uint64_t rows = part_rows(j, p);
		count += o->rows_per_shard && rows ? (rows + o->rows_per_shard - 1) / o->rows_per_shard : 1;
	}
	if (count > MAX_FILES)
		return fmt_fail(e, FMT_USAGE, "--rows %" PRIu64 " makes %" PRIu64 " files (at most %d)", o->rows_per_shard,
				count, MAX_FILES);
	j->files = calloc((size_t)count, sizeof *j->files);
	if (!j->files)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = FMT_OK;
	for (size_t p = 0; k == FMT_OK && p < j->n_parts; p++) {
		uint64_t rows = part_rows(j, p);
		uint64_t shards = o->rows_per_shard && rows ? (rows + o->rows_per_shard - 1) / o->rows_per_shard : 1;
		for (uint64_t s = 0; k == FMT_OK && s < shards; s++)
			k = add_file(j, o->output, j->part_names[p], ext, p, s, shards, o->rows_per_shard, e);
	}
	return k;
}

/* -c for the output's writer, then the check that every option given has a use. */
static fmt_kind writer_options(const shard_opts *o, const fmt_table_driver *in, const fmt_table_driver *out,
			       fmt_err *e)
{
	if (o->compression && fmt_table_option_parse_for(o->drvopts, out, "compression", o->compression, e) < 0)
		return e->kind;
	return fmt_table_options_check(o->drvopts, in, out, e);
}

/* One output file: the input opened again, the rows of its part and range, through the
 * input's own writer into a sink that stays a temporary file until the set is complete. */
static fmt_kind write_file(const char *input, const split_job *j, const out_file *f, const shard_opts *o,
			   fmt_sink *sink, fmt_err *e)
{
	fmt_table t;
	fmt_rowops_opts r = { .split = j->plan, .split_part = f->part, .has_range = o->rows_per_shard != 0,
			      .row_start = f->start, .row_end = f->end };
	fmt_write_opts wo = { .sink_flags = o->force ? FMT_SINK_FORCE : 0, .threads = o->common.threads,
			      .options = o->drvopts };
	fmt_kind k = fmt_table_open(&t, input, NULL, e);
	if (k != FMT_OK)
		return k;
	t.allow_expired = o->allow_expired; /* said once, by split_table */
	k = fmt_table_rowops(&t, &r, e);
	if (k == FMT_OK)
		k = fmt_sink_open(sink, f->path, wo.sink_flags | FMT_SINK_FILE, e);
	if (k == FMT_OK) {
		k = t.driver->write(&t, sink, &wo, e);
		if (k == FMT_OK)
			k = fmt_sink_finish(sink, e);
		if (k != FMT_OK)
			fmt_sink_abort(sink);
	}
	fmt_table_free(&t);
	return k;
}

static fmt_kind check_outputs(const split_job *j, const char *input, const shard_opts *o, fmt_err *e)
{
	for (size_t i = 0; i < j->n_files; i++) {
		fmt_kind k = fmt_check_distinct(input, j->files[i].path, e);
		if (k == FMT_OK)
			k = fmt_sink_may_create(j->files[i].path, (o->force ? FMT_SINK_FORCE : 0) | FMT_SINK_FILE, e);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

static fmt_kind write_set(const char *input, const split_job *j, const shard_opts *o, fmt_err *e)
{
	fmt_sink *sinks = calloc(j->n_files, sizeof *sinks);
	size_t done = 0;
	int made_dir = 0;
	fmt_kind k = sinks ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK && mkdir(o->output, 0777) == 0)
		made_dir = 1;
	else if (k == FMT_OK && errno != EEXIST)
		k = fmt_fail(e, FMT_IO, "cannot create the directory %s: %s", o->output, strerror(errno));
	for (; k == FMT_OK && done < j->n_files; done++)
		k = write_file(input, j, &j->files[done], o, &sinks[done], e);
	if (k == FMT_OK)
		k = fmt_sinks_commit(sinks, j->n_files, e);
	else
		for (size_t i = 0; i + 1 < done; i++) /* the failed one aborted itself */
			fmt_sink_abort(&sinks[i]);
	if (k != FMT_OK && made_dir)
		rmdir(o->output);
	free(sinks);
	return k;
}

static void print_split(const char *input, const fmt_table *t, const split_job *j, const shard_opts *o)
{
	if (o->common.quiet)
		return;
	if (o->common.json) {
		json_t *files = json_array();
		for (size_t i = 0; i < j->n_files; i++) {
			const out_file *f = &j->files[i];
			uint64_t rows = part_rows(j, f->part), end = f->end < rows ? f->end : rows;
			json_array_append_new(files, json_pack("{s:o,s:s,s:o}", "file",
					      fmt_json_string(f->path, strlen(f->path)), "part", j->part_names[f->part],
					      "rows", fmt_json_u64(end > f->start ? end - f->start : 0)));
		}
		json_t *r = json_pack("{s:o,s:s,s:b,s:o,s:o}", "input", fmt_json_string(input, strlen(input)), "format",
				      t->driver->name, "dry_run", o->dry_run || o->list, "rows", fmt_json_u64(j->total),
				      "files", files);
		if (j->plan) {
			json_object_set_new(r, "seed", fmt_json_u64(o->seed));
			json_object_set_new(r, "strata", fmt_json_u64(fmt_split_plan_strata(j->plan)));
		}
		fmt_json_line(stdout, r);
		json_decref(r);
		return;
	}
	for (size_t i = 0; i < j->n_files; i++) {
		const out_file *f = &j->files[i];
		fmt_out_escaped(stdout, f->path, strlen(f->path));
		if (o->list) {
			fputc('\n', stdout);
			continue;
		}
		uint64_t rows = part_rows(j, f->part), end = f->end < rows ? f->end : rows;
		uint64_t n = end > f->start ? end - f->start : 0;
		printf(": %" PRIu64 " row%s", n, n == 1 ? "" : "s");
		printf(j->plan ? " (%s)\n" : "\n", j->part_names[f->part]);
	}
}

static fmt_kind check_split_options(const shard_opts *o, fmt_err *e)
{
	if (o->max_size || o->max_tensors || o->no_tensor_first_split)
		return fmt_fail(e, FMT_USAGE, "--max-size, --max-tensors and --no-tensor-first-split split models; a "
				"dataset is split with --fractions or --rows");
	if (!o->n_fractions && !o->rows_per_shard)
		return fmt_fail(e, FMT_USAGE, "splitting a dataset needs --fractions or --rows");
	if (!o->output)
		return fmt_fail(e, FMT_USAGE, "splitting a dataset needs -o DIR");
	if ((o->seed_given || o->stratify) && !o->n_fractions)
		return fmt_fail(e, FMT_USAGE, "--seed and --stratify are for --fractions");
	return FMT_OK;
}

fmt_kind split_table(const char *input, fmt_table *t, const shard_opts *o, fmt_err *e)
{
	split_job j = { .n_parts = o->n_fractions ? o->n_fractions : 1 };
	fmt_kind k = check_split_options(o, e);
	if (k == FMT_OK && strcmp(input, "-") == 0)
		k = fmt_fail(e, FMT_USAGE, "splitting a dataset reads it once per output file: give a file, not standard input");
	if (k == FMT_OK && !t->driver->write)
		k = fmt_fail(e, FMT_USAGE, "fmt-shard writes the input's format, and %s is read-only", t->driver->name);
	if (k == FMT_OK)
		k = writer_options(o, t->driver, t->driver, e);
	if (k == FMT_OK && !o->no_verify)
		k = fmt_table_verify(t, NULL, e);
	if (k == FMT_OK)
		k = rows_readable(t, o, e);
	if (k == FMT_OK && o->n_fractions)
		k = fmt_split_plan_count(t, o->fractions, o->n_fractions, o->stratify, o->seed, &j.plan, e);
	if (k == FMT_OK)
		k = j.plan ? FMT_OK : fmt_table_count_rows(t, &j.total, e);
	for (size_t p = 0; k == FMT_OK && j.plan && p < j.n_parts; p++)
		j.total += fmt_split_plan_rows(j.plan, p);
	if (k == FMT_OK)
		k = plan_files(&j, input, t->driver->extension ? t->driver->extension : "", o, e);
	if (k == FMT_OK)
		k = check_outputs(&j, input, o, e);
	if (k == FMT_OK && !o->dry_run && !o->list)
		k = write_set(input, &j, o, e);
	if (k == FMT_OK)
		print_split(input, t, &j, o);
	for (size_t i = 0; i < j.n_files; i++)
		free(j.files[i].path);
	free(j.files);
	fmt_split_plan_free(j.plan);
	return k;
}

/* ---- merge / concat ---- */

static fmt_kind open_rest(const shard_opts *o, fmt_table **rest, fmt_err *e)
{
	*rest = calloc(o->n_inputs, sizeof **rest);
	if (!*rest)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 1; i < o->n_inputs; i++) {
		fmt_table *t = &(*rest)[i - 1];
		fmt_kind k = fmt_table_open(t, o->inputs[i], NULL, e);
		if (k == FMT_OK) {
			if (!o->no_verify)
				k = fmt_table_verify(t, NULL, e);
			if (k == FMT_OK)
				k = rows_readable(t, o, e);
			if (k != FMT_OK)
				fmt_table_free(t);
		}
		if (k != FMT_OK) {
			for (size_t j = 1; j < i; j++)
				fmt_table_free(&(*rest)[j - 1]);
			free(*rest);
			return k;
		}
	}
	return FMT_OK;
}

/* w: the format written ("format" says it, as a model merge's does). */
static void print_concat(const fmt_table_driver *w, const shard_opts *o, uint64_t rows)
{
	if (o->common.quiet || strcmp(o->output, "-") == 0)
		return;
	if (o->common.json) {
		json_t *in = json_array();
		for (size_t i = 0; i < o->n_inputs; i++)
			json_array_append_new(in, fmt_json_string(o->inputs[i], strlen(o->inputs[i])));
		json_t *j = json_pack("{s:o,s:s,s:o,s:o}", "inputs", in, "format", w->name, "output",
				      fmt_json_string(o->output, strlen(o->output)), "rows", fmt_json_u64(rows));
		fmt_json_line(stdout, j);
		json_decref(j);
		return;
	}
	fmt_out_escaped(stdout, o->output, strlen(o->output));
	printf(": %" PRIu64 " row%s from %zu file%s\n", rows, rows == 1 ? "" : "s", o->n_inputs, o->n_inputs == 1 ? "" : "s");
}

/* Counts the rows the writer pulls (a CSV input does not say how many it has). */
typedef struct counter {
	fmt_table_wrap w;
	uint64_t rows;
} counter;

static fmt_kind counter_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e)
{
	counter *c = t->format_state;
	fmt_kind k = fmt_table_wrap_next(t, &c->w, b, done, e);
	if (k == FMT_OK && !*done)
		c->rows += b->n_rows;
	return k;
}

/* The output of a merge of datasets is named by a dataset format's extension or by none (then
 * the first input's format): a model format's name (m.gguf) would hold a dataset. */
static fmt_kind check_merge_output_name(const fmt_table *t, const char *output, fmt_err *e)
{
	fmt_format f = fmt_format_by_extension(output, FMT_FORMAT_ANY);
	if (!f.model)
		return FMT_OK;
	return fmt_fail(e, FMT_USAGE, "merge of datasets writes a dataset, not the %s model that an output named *%s "
			"would be: name it *%s (the first input's format) or by another dataset format", f.model->name,
			f.model->extension, t->driver->extension ? t->driver->extension : "");
}

fmt_kind merge_tables(const char *input, fmt_table *t, const shard_opts *o, fmt_err *e)
{
	fmt_table *rest = NULL;
	const fmt_table_driver *w = fmt_table_driver_by_extension(o->output);
	fmt_kind k = check_merge_output_name(t, o->output, e);
	(void)input; /* o->inputs[0] */
	for (size_t i = 0; k == FMT_OK && i < o->n_inputs; i++)
		k = fmt_check_distinct(o->inputs[i], o->output, e);
	if (k == FMT_OK && !o->no_verify)
		k = fmt_table_verify(t, NULL, e);
	if (k == FMT_OK)
		k = rows_readable(t, o, e);
	if (k == FMT_OK)
		k = open_rest(o, &rest, e);
	if (k == FMT_OK)
		k = fmt_table_concat(t, rest, o->n_inputs - 1, e);
	if (k != FMT_OK)
		return k;
	if (!w || !w->write)
		w = t->driver;
	if (!w->write)
		return fmt_fail(e, FMT_USAGE, "cannot tell the output's format from %s (and %s is read-only)", o->output,
				t->driver->name);
	if ((k = writer_options(o, t->driver, w, e)) != FMT_OK)
		return k;
	fmt_sink sink;
	counter count = { .rows = 0 };
	fmt_write_opts wo = { .sink_flags = (o->force ? FMT_SINK_FORCE : 0) | (w->writes_text ? FMT_SINK_TEXT : 0),
			      .threads = o->common.threads, .options = o->drvopts };
	if (fmt_sink_may_create(o->output, wo.sink_flags, e) != FMT_OK)
		return e->kind;
	for (size_t i = 0; i < t->schema.n_fields; i++)
		if (w->can_hold && !w->can_hold(&t->schema.fields[i]))
			return fmt_fail(e, FMT_UNSUPPORTED, "column '%s': %s cannot hold it", t->schema.fields[i].name,
					w->name);
	k = fmt_sink_open(&sink, o->output, wo.sink_flags, e);
	if (k == FMT_OK) {
		fmt_table_wrap_put(t, &count.w, &count, counter_next, NULL);
		k = w->write(t, &sink, &wo, e);
		fmt_table_wrap_remove(t, &count.w, 0);
		if (k == FMT_OK)
			k = fmt_sink_commit(&sink, e);
		else
			fmt_sink_abort(&sink);
	}
	if (k == FMT_OK)
		print_concat(w, o, count.rows);
	return k;
}
