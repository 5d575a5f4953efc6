/* split: cut a model (or re-cut a set) into a shard set of its own format; merge: write a set
 * back as one file with the same format's writer. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/out.h"
#include "fmt/report.h"
#include "fmt/progress.h"
#include "shard.h"

/* Open the input and find the driver that writes its sets (w); verify it when asked. */
static fmt_kind open_input(fmt_model *m, const char *input, const shard_opts *o, int verify,
			   const fmt_driver **w, fmt_err *e)
{
	fmt_kind k = fmt_model_open(m, input, NULL, e);
	if (k != FMT_OK)
		return k;
	k = set_writer_of(m, w, e);
	if (k == FMT_OK && verify && !o->no_verify)
		k = fmt_model_verify(m, NULL, e);
	if (k != FMT_OK)
		fmt_model_free(m);
	return k;
}

/* Refuse an output that is one of the input's files, or (without -f) that exists. */
static fmt_kind check_output(const fmt_model *m, const char *path, int force, fmt_err *e)
{
	for (size_t i = 0; i < m->n_sources; i++) {
		fmt_kind k = fmt_check_distinct(m->sources[i].path, path, e);
		if (k != FMT_OK)
			return k;
	}
	return fmt_sink_may_create(path, force ? FMT_SINK_FORCE : 0, e);
}

static void print_plan(const fmt_model *m, const fmt_driver *w, const fmt_shard_plan *p, const char *input,
		       const shard_opts *o)
{
	if (o->common.json) {
		json_t *j = json_pack("{s:o,s:s,s:b}", "input", fmt_json_string(input, strlen(input)), "format", w->name,
				      "dry_run", o->dry_run);
		if (j)
			fmt_shard_plan_json(j, p);   /* "shards" and "index", as fmt-convert lists a set */
		fmt_json_line(stdout, j);
		json_decref(j);
		return;
	}
	for (size_t i = 0; i < p->n_shards; i++) {
		const fmt_shard *g = &p->shards[i];
		fmt_out_escaped(stdout, g->path, strlen(g->path));
		printf(": %zu tensor%s, %" PRIu64 " bytes of tensor data\n", g->count, g->count == 1 ? "" : "s",
		       g->bytes);
		for (size_t t = 0; o->common.verbose && t < g->count; t++) {
			const char *name = m->tensors[g->members[t]].name;
			fputs("  ", stdout);
			fmt_out_escaped(stdout, name, strlen(name));
			fputc('\n', stdout);
		}
	}
	if (p->index) {
		fmt_out_escaped(stdout, p->index, strlen(p->index));
		fputs(": index\n", stdout);
	}
}

/* --list: the names the split writes, the index last (as the plan has them). */
static void print_names(const fmt_driver *w, const fmt_shard_plan *p, const char *input, const shard_opts *o)
{
	if (o->common.json) {
		json_t *files = json_array();
		for (size_t i = 0; i < p->n_shards; i++)
			json_array_append_new(files, fmt_json_string(p->shards[i].path, strlen(p->shards[i].path)));
		if (p->index)
			json_array_append_new(files, fmt_json_string(p->index, strlen(p->index)));
		json_t *j = json_pack("{s:o,s:s,s:o}", "input", fmt_json_string(input, strlen(input)), "format", w->name,
				      "files", files);
		fmt_json_line(stdout, j);
		json_decref(j);
		return;
	}
	for (size_t i = 0; i < p->n_shards; i++) {
		fmt_out_escaped(stdout, p->shards[i].path, strlen(p->shards[i].path));
		fputc('\n', stdout);
	}
	if (p->index) {
		fmt_out_escaped(stdout, p->index, strlen(p->index));
		fputc('\n', stdout);
	}
}

/* The writers sign only with a key, which fmt-shard does not take. */
static void warn_signature_dropped(const fmt_model *m, const char *input, const shard_opts *o)
{
	if (m->driver->signature && m->driver->signature(m) && !o->common.quiet)
		fmt_report_warning(stderr, TOOL, "%s: the signature is not carried over; sign the result with fmt-sign sign",
				   input);
}

/* Progress of a write on the terminal, fed by every sink; total = the model's tensor data. */
static void progress_begin(fmt_progress *pr, const fmt_model *m, const shard_opts *o)
{
	uint64_t total = 0;
	for (size_t i = 0; i < m->n_tensors; i++)
		total += m->tensors[i].nbytes;
	fmt_progress_start(pr, stderr, TOOL, total,
			   fmt_progress_wanted(stderr, o->common.quiet, o->common.no_progress));
	fmt_progress_follow_sinks(pr);
}

static void progress_finish(fmt_progress *pr)
{
	fmt_progress_follow_sinks(NULL);
	fmt_progress_end(pr);
}

static fmt_kind write_set(const fmt_model *m, const fmt_driver *w, const char *prefix, const fmt_shard_limits *l,
			  const shard_opts *o, fmt_err *e)
{
	fmt_write_opts wo = { .sink_flags = o->force ? FMT_SINK_FORCE : 0, .threads = o->common.threads };
	char **paths = NULL;
	size_t n = 0;
	fmt_progress pr;
	progress_begin(&pr, m, o);
	fmt_kind k = w->write_sharded(m, prefix, l, &wo, &paths, &n, e);
	progress_finish(&pr);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return k;
}

/* A dataset (a file, not standard input) goes to fn with its table open (*handled = 1); a
 * model is left to the caller. */
static fmt_kind dataset_instead(const char *input, const shard_opts *o,
				fmt_kind (*fn)(const char *, fmt_table *, const shard_opts *, fmt_err *), int *handled,
				fmt_err *e)
{
	fmt_table t;
	int is_table = 0;
	if (strcmp(input, "-") == 0)
		return FMT_OK;
	fmt_kind k = open_table_input(input, &t, &is_table, e);
	if (k != FMT_OK || !is_table)
		return k;
	*handled = 1;
	k = fn(input, &t, o, e);
	fmt_table_free(&t);
	return k;
}

fmt_kind cmd_split(const char *input, const shard_opts *o, fmt_err *e)
{
	int handled = 0;
	fmt_kind k = dataset_instead(input, o, split_table, &handled, e);
	if (handled || k != FMT_OK)
		return k;
	if ((o->n_fractions || o->rows_per_shard || o->stratify || o->seed_given) && strcmp(input, "-") == 0)
		return fmt_fail(e, FMT_USAGE, "splitting a dataset reads it once per output file: give a file, not "
				"standard input");
	if (o->n_fractions || o->rows_per_shard || o->stratify || o->seed_given || o->allow_expired)
		return fmt_fail(e, FMT_USAGE, "--fractions, --rows, --seed, --stratify and --allow-expired are for "
				"datasets, not models");
	if (o->writer_option)
		return fmt_fail(e, FMT_USAGE, "%s is for datasets, not models", o->writer_option);
	fmt_model m;
	const fmt_driver *w;
	fmt_shard_limits lim;
	fmt_shard_plan p;
	if (!o->output && strcmp(input, "-") == 0)
		return fmt_fail(e, FMT_USAGE, "splitting standard input needs -o PREFIX");
	int write = !o->dry_run && !o->list;
	k = open_input(&m, input, o, write, &w, e);
	if (k != FMT_OK)
		return k;
	char *prefix = o->output ? fmt_shard_prefix(o->output, w) : default_prefix(input);
	if (!prefix)
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		k = split_limits(w, o, &lim, e);
	if (k == FMT_OK)
		k = w->plan_shards(&m, prefix, &lim, &p, e);
	if (k == FMT_OK) {
		k = fmt_shard_plan_check_outputs(&p, &m, o->force || !write ? FMT_SINK_FORCE : 0, e);
		if (k == FMT_OK && write)
			k = write_set(&m, w, prefix, &lim, o, e);
		if (k == FMT_OK && write)   /* the report gives the files' bytes as written */
			fmt_shard_plan_stat(&p);
		if (k == FMT_OK && write)
			warn_signature_dropped(&m, input, o);
		if (k == FMT_OK && o->list)
			print_names(w, &p, input, o);
		else if (k == FMT_OK && !o->common.quiet)
			print_plan(&m, w, &p, input, o);
		fmt_shard_plan_free(&p);
	}
	free(prefix);
	fmt_model_free(&m);
	return k;
}

/* merge writes the set's own format (w): an output named as another format's file (a
 * model.safetensors of a GGUF set, an index name) is refused, not written in w under that
 * name. A name no format claims is the user's choice. */
static fmt_kind check_output_named(const fmt_driver *w, const char *path, fmt_err *e)
{
	fmt_format f = fmt_format_by_extension(path, FMT_FORMAT_ANY);
	const char *named = f.model ? f.model->name : f.table ? f.table->name : NULL;
	const char *ext = f.model ? f.model->extension : f.table ? f.table->extension : NULL;
	if (!named || f.model == w)
		return FMT_OK;
	return fmt_fail(e, FMT_USAGE, "merge writes the set's format (%s), not the %s that an output named *%s would "
			"be: name it *%s, or convert with fmt-convert", w->name, named, ext, w->extension);
}

static void print_merge(const fmt_model *m, const char *input, const char *output, const shard_opts *o)
{
	if (o->common.quiet || strcmp(output, "-") == 0)
		return;
	if (o->common.json) {
		json_t *j = json_pack("{s:o,s:s,s:o,s:I,s:I}", "input", fmt_json_string(input, strlen(input)),
				      "format", fmt_driver_file_writer(m->driver)->name, "output",
				      fmt_json_string(output, strlen(output)), "tensors", (json_int_t)m->n_tensors,
				      "files", (json_int_t)m->n_sources);
		fmt_json_line(stdout, j);
		json_decref(j);
		return;
	}
	fmt_out_escaped(stdout, output, strlen(output));
	printf(": %zu tensor%s from %zu file%s\n", m->n_tensors, m->n_tensors == 1 ? "" : "s", m->n_sources,
	       m->n_sources == 1 ? "" : "s");
}

fmt_kind cmd_merge(const char *input, const shard_opts *o, fmt_err *e)
{
	int handled = 0;
	fmt_kind k = dataset_instead(input, o, merge_tables, &handled, e);
	if (handled || k != FMT_OK)
		return k;
	if (o->n_inputs > 1)
		return fmt_fail(e, FMT_USAGE, "merge takes one INDEX_OR_SHARD of a model (several files: datasets)");
	if (o->allow_expired || o->writer_option)
		return fmt_fail(e, FMT_USAGE, "%s is for datasets, not models", o->writer_option ? o->writer_option : "--allow-expired");
	fmt_model m;
	const fmt_driver *w;
	fmt_sink sink;
	k = open_input(&m, input, o, 1, &w, e);
	if (k != FMT_OK)
		return k;
	fmt_write_opts wo = { .sink_flags = o->force ? FMT_SINK_FORCE : 0, .threads = o->common.threads };
	if (!w->write)
		k = fmt_fail(e, FMT_INTERNAL, "no writer for %s", w->name);
	if (k == FMT_OK)
		k = check_output_named(w, o->output, e);
	if (k == FMT_OK)
		k = check_output(&m, o->output, o->force, e);
	if (k == FMT_OK)
		k = fmt_sink_open(&sink, o->output, wo.sink_flags, e);
	if (k == FMT_OK) {
		fmt_progress pr;
		progress_begin(&pr, &m, o);
		k = w->write(&m, &sink, &wo, e);
		progress_finish(&pr);
		if (k == FMT_OK)
			k = fmt_sink_commit(&sink, e);
		else
			fmt_sink_abort(&sink);
	}
	if (k == FMT_OK)
		warn_signature_dropped(&m, input, o);
	if (k == FMT_OK)
		print_merge(&m, input, o->output, o);
	fmt_model_free(&m);
	return k;
}
