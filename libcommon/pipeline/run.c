/* Carrying out a conversion: open and check the input, plan, write one file or a shard set. */
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/out.h"
#include "fmt/shardset.h"
#include "fmt/strbuf.h"
#include "pipeline_internal.h"

static uint64_t data_bytes(const fmt_model *m)
{
	uint64_t n = 0;
	for (size_t i = 0; i < m->n_tensors; i++)
		if (fmt_add_u64(n, m->tensors[i].nbytes, &n))
			return UINT64_MAX;
	return n;
}

/* The writer compresses the tensor data: asked to, or, by default, keeping what a model of its
 * own format had (fmt_codec). */
static int output_compressed(const convert_plan *p, const fmt_convert_opts *o)
{
	if (!o->to->compresses || o->codec == FMT_CODEC_NONE)
		return 0;
	return o->codec != FMT_CODEC_DEFAULT || p->out.driver == o->to;
}

/* What the output will hold at least: its tensor data, unless the writer compresses it (then
 * nothing is known before writing: 0). */
static uint64_t least_output_bytes(const convert_plan *p, const fmt_convert_opts *o)
{
	return output_compressed(p, o) ? 0 : data_bytes(&p->out);
}

/* 0: one file; otherwise the shard size limit (UINT64_MAX: none, a set all the same). */
static uint64_t shard_limit(const convert_plan *p, const fmt_convert_opts *o)
{
	if (!o->to->write_sharded || !o->to->plan_shards)
		return 0;
	if (fmt_model_laid_out(&p->out))
		return UINT64_MAX;   /* the writer follows the tensors' out_shard */
	uint64_t limit = o->shard_given ? o->shard : o->to->default_shard_bytes;
	if (o->force_set)
		return limit ? limit : UINT64_MAX;
	return limit && data_bytes(&p->out) > limit ? limit : 0;
}

static fmt_kind verify_input(fmt_model *in, int threads, fmt_err *e)
{
	fmt_verify_opts vo = { .threads = threads, .reads_follow = 1 };
	fmt_kind k = fmt_model_verify(in, &vo, e);
	if (k != FMT_OK)
		fmt_err_file(e, in->path);
	return k;
}

static void *verify_beside(void *arg)
{
	convert_plan *p = arg;
	fmt_err_clear(&p->verifier_err);
	p->verifier_kind = verify_input(p->verifier_model, 1, &p->verifier_err);
	return NULL;
}

/* VERIFY_BESIDE: start checking the input while its tensors are read. Without a thread, the
 * check is made when it is waited for. */
static void start_verifier(convert_plan *p, fmt_model *in)
{
	if (p->verify != VERIFY_BESIDE)   /* never with --no-verify (open_input) */
		return;
	p->verifier_model = in;
	p->verifier_started = pthread_create(&p->verifier, NULL, verify_beside, p) == 0;
}

/* An input read front to back, checked by the reads themselves or beside them, is checked
 * once all of it has passed: before the output is renamed into place. */
static fmt_kind verify_streamed(convert_plan *p, fmt_model *in, const fmt_convert_opts *o, fmt_err *e)
{
	if (p->verify == VERIFY_BEFORE || o->no_verify)
		return FMT_OK;
	if (!p->verifier_started)
		return verify_input(in, 1, e);
	pthread_join(p->verifier, NULL);
	p->verifier_started = 0;
	p->verify = VERIFY_BEFORE;   /* done */
	if (p->verifier_kind != FMT_OK)
		*e = p->verifier_err;
	return p->verifier_kind;
}

static fmt_kind write_single(convert_plan *p, fmt_model *in, const char *output, const fmt_write_opts *wo,
			     const fmt_convert_opts *o, fmt_err *e)
{
	fmt_sink sink;
	fmt_kind k = fmt_sink_open(&sink, output, wo->sink_flags, e);
	if (k != FMT_OK)
		return k;
	k = fmt_sink_check_room(&sink, least_output_bytes(p, o), e);
	if (k != FMT_OK) {
		fmt_sink_abort(&sink);
		return k;
	}
	k = o->to->write(&p->out, &sink, wo, e);
	if (k == FMT_OK) {
		k = verify_streamed(p, in, o, e);
	} else if ((k == FMT_INVALID_FORMAT || k == FMT_UNSUPPORTED) && p->verify != VERIFY_BEFORE) {
		/* What looks malformed in a file whose checksum fails is damage: say so. */
		fmt_err why = *e;
		if (verify_streamed(p, in, o, e) == FMT_CHECKSUM)
			fmt_err_prefix(e, "%s; and", why.msg);
		else
			*e = why;
		k = e->kind;
	}
	if (k == FMT_OK)
		k = fmt_write_gate(wo, e);
	if (k == FMT_OK)
		return fmt_sink_commit(&sink, e);
	fmt_sink_abort(&sink);
	return k;
}

/* The set the output is written as, with its files' names, tensors and bytes: as the writer
 * plans it (write_sharded) with the same prefix and limits. */
static fmt_kind plan_set(const convert_plan *p, const char *prefix, const fmt_shard_limits *lim,
			 const fmt_convert_opts *o, fmt_shard_plan *set, fmt_err *e)
{
	return prefix ? o->to->plan_shards(&p->out, prefix, lim, set, e) : fmt_fail(e, FMT_IO, "out of memory");
}

/* The gate before the output is put in place (o->commit_hook), and with --json the record made
 * there, written once the output is in place: out of memory making it leaves no output. */
typedef struct record_gate {
	const convert_plan *p;
	fmt_shard_plan *set;         /* the files of a set (none: one file) */
	uint64_t *file_bytes;        /* ... their sizes, as the set's writer gives them */
	const char *input, *output;
	const fmt_convert_opts *o;
	fmt_json_rec rec;
} record_gate;

static fmt_kind gate_then_record(void *ctx, fmt_err *e)
{
	record_gate *g = ctx;
	fmt_kind k = g->o->commit_hook ? g->o->commit_hook(g->o->hook_ctx, e) : FMT_OK;
	if (k != FMT_OK)
		return k;
	for (size_t i = 0; g->set->shards && g->file_bytes && i < g->set->n_shards; i++)
		g->set->shards[i].file_bytes = g->file_bytes[i];
	unsigned long since = fmt_json_memory_failures();
	json_t *j = fmt_plan_json(g->p, g->set->shards ? g->set : NULL, g->input, g->output, g->o);
	return fmt_json_rec_make(&g->rec, j, since, e);
}

/* The files of the set are checked against the input's (its path and every shard) first: with
 * -f a set written over its own input would destroy what it reads. *set: the files written,
 * their bytes as they are on disk. g: the record to make before the set is in place, or NULL. */
static fmt_kind write_set(const convert_plan *p, const fmt_model *in, const char *output, uint64_t limit,
			  const fmt_write_opts *wo, const fmt_convert_opts *o, fmt_shard_plan *set, record_gate *g,
			  fmt_err *e)
{
	char **paths = NULL;
	size_t n = 0;
	fmt_shard_limits lim = { .max_bytes = limit };
	fmt_write_opts w = *wo;
	char *prefix = fmt_shard_prefix(output, o->to);
	fmt_kind k = plan_set(p, prefix, &lim, o, set, e);
	if (k == FMT_OK)
		k = fmt_shard_plan_check_outputs(set, in, wo->sink_flags, e);
	if (k == FMT_OK)
		k = fmt_check_room_beside(output, least_output_bytes(p, o), e);
	if (k == FMT_OK && g) { /* the record lists the files' sizes before they are in place */
		g->file_bytes = calloc(set->n_shards ? set->n_shards : 1, sizeof *g->file_bytes);
		w.file_bytes = g->file_bytes;
		w.n_file_bytes = set->n_shards;
		if (!g->file_bytes)
			k = fmt_fail(e, FMT_IO, "out of memory");
	}
	if (k == FMT_OK)
		k = o->to->write_sharded(&p->out, prefix, &lim, &w, &paths, &n, e);
	for (size_t i = 0; i < n; i++) {
		if (k == FMT_OK && o->verbose)
			fmt_pipeline_info(o, "wrote %s", paths[i]);
		free(paths[i]);
	}
	if (k == FMT_OK)
		fmt_shard_plan_stat(set);
	free(paths);
	free(prefix);
	if (g) {
		free(g->file_bytes);
		g->file_bytes = NULL;
	}
	return k;
}

/* Why the output cannot be a set (limit: shard_limit's), for the run and the dry run alike. */
static fmt_kind check_set(const convert_plan *p, const fmt_model *in, const char *output, uint64_t limit,
			  const fmt_convert_opts *o, fmt_err *e)
{
	if (o->shard_given && fmt_model_laid_out(&p->out))
		return fmt_fail(e, FMT_USAGE, "--shard cuts the output by size, but --keep-split keeps the input's shards: "
				"give one or the other");
	if (limit && strcmp(output, "-") == 0)
		return fmt_fail(e, FMT_USAGE, "a shard set cannot go to standard output");
	if (limit && fmt_model_sequential(in))
		return fmt_fail(e, FMT_USAGE, "a stream is converted to one file (its checksum is known at its end, after "
				"a set would be in place); convert it to a file first");
	return FMT_OK;
}

/* *set: the files written when the output is a set (else it stays empty). g: the --json record
 * to make before the output is in place (g->rec), or NULL. */
static fmt_kind write_output(convert_plan *p, fmt_model *in, const char *output, const fmt_convert_opts *o,
			     fmt_shard_plan *set, record_gate *g, fmt_err *e)
{
	fmt_hmac_key key = { 0 };
	fmt_write_opts wo = { .sink_flags = o->force ? FMT_SINK_FORCE : 0, .threads = o->threads,
			      .options = o->options, .codec = o->codec, .codec_level = o->codec_level,
			      .before_commit = o->commit_hook, .commit_ctx = o->hook_ctx };
	if (g) {
		wo.before_commit = gate_then_record;
		wo.commit_ctx = g;
	}
	fmt_kind k = FMT_OK;
	if (o->sign || fmt_key_opts_given(&o->key)) {
		k = fmt_key_from_opts(&o->key, &key, e);
		wo.keys.hmac = &key;
	}
	wo.keys.ed25519_secret = o->sign_secret;
	uint64_t limit = shard_limit(p, o);
	if (k == FMT_OK)
		k = check_set(p, in, output, limit, o, e);
	if (k == FMT_OK && limit && p->verify != VERIFY_BEFORE) {   /* a set is in place before the end: check first */
		k = verify_streamed(p, in, o, e);
		p->verify = VERIFY_BEFORE;
	}
	void *progress = o->progress_begin ? o->progress_begin(o, data_bytes(&p->out)) : NULL;
	if (k == FMT_OK)
		k = limit ? write_set(p, in, output, limit, &wo, o, set, g, e) : write_single(p, in, output, &wo, o, e);
	if (o->progress_end)
		o->progress_end(progress);
	fmt_hmac_key_free(&key);
	return k;
}

/* For --dry-run, the files of an output written as a set, as write_set plans them; set stays
 * empty for one file. */
static fmt_kind dry_set(const convert_plan *p, const fmt_model *in, const char *output, const fmt_convert_opts *o,
			fmt_shard_plan *set, fmt_err *e)
{
	fmt_shard_limits lim = { .max_bytes = shard_limit(p, o) };
	fmt_kind k = check_set(p, in, output, lim.max_bytes, o, e);
	if (k != FMT_OK || !lim.max_bytes)
		return k;
	char *prefix = fmt_shard_prefix(output, o->to);
	k = plan_set(p, prefix, &lim, o, set, e);
	free(prefix);
	return k;
}

/* Open the input and check what it carries (an Apsi digest) before reading its tensors; a
 * stream, and on one thread a file its driver can check as it is read (one pass instead of
 * two), are checked after; on several threads, a file whose check only reads it is checked
 * by a thread of its own beside the reads (*when). */
static fmt_kind open_input(fmt_model *in, const char *input, const fmt_convert_opts *o, verify_when *when, fmt_err *e)
{
	fmt_kind k = fmt_model_open_streaming(in, input, NULL, e);
	*when = k == FMT_OK && fmt_model_sequential(in) ? VERIFY_AFTER : VERIFY_BEFORE;
	if (k != FMT_OK || o->no_verify || *when == VERIFY_AFTER)
		return k;
	fmt_err ignored;
	if (o->threads <= 1 && fmt_model_verify_as_read(in, &ignored) == FMT_OK) {
		*when = VERIFY_AFTER;
		return FMT_OK;
	}
	if (o->threads > 1 && in->driver->verify_beside_reads) {
		*when = VERIFY_BESIDE;
		return FMT_OK;
	}
	k = verify_input(in, o->threads, e);
	if (k != FMT_OK)
		fmt_model_free(in);
	return k;
}

/* An output format that holds a whole network (FMT_CAP_NETWORK): the input's driver writes its
 * graph as one (write_network); a model of tensors only has none to give. */
static fmt_kind write_network(const fmt_model *in, const char *input, const char *output, const fmt_convert_opts *o,
			      fmt_err *e)
{
	fmt_kind k = fmt_network_writable(in, o->to, e);
	if (k != FMT_OK)
		return k;
	if (o->sign || fmt_key_opts_given(&o->key) || o->sign_secret)
		return fmt_fail(e, FMT_USAGE, "%s files have no signatures", o->to->title);
	fmt_write_opts wo = { .sink_flags = o->force ? FMT_SINK_FORCE : 0, .threads = o->threads,
			      .options = o->options };
	fmt_sink sink;
	fmt_json_rec rec = { 0 };
	k = o->dry_run ? FMT_OK : fmt_sink_open(&sink, output, wo.sink_flags, e);
	int opened = k == FMT_OK && !o->dry_run;
	if (opened)
		k = in->driver->write_network(in, o->to, &sink, &wo, e);
	if (k == FMT_OK && o->json) { /* made before the output is in place: out of memory leaves none */
		unsigned long since = fmt_json_memory_failures();
		json_t *j = json_pack("{s:o,s:o,s:s,s:b}", "input", fmt_json_string(input, strlen(input)), "output",
				      fmt_json_string(output, strlen(output)), "format", o->to->name, "dry_run", o->dry_run);
		k = fmt_json_rec_make(&rec, j, since, e);
	}
	if (opened && k == FMT_OK)
		k = fmt_sink_commit(&sink, e);
	else if (opened)
		fmt_sink_abort(&sink);
	if (k == FMT_OK) /* a failed write is the end of the run's (fmt_cli_finish) */
		fmt_json_rec_put(o->out, &rec);
	fmt_json_rec_free(&rec);
	return k;
}

fmt_kind fmt_pipeline_run(const char *input, const char *output, const fmt_convert_opts *o, fmt_err *e)
{
	fmt_model in;
	convert_plan plan;
	fmt_pool *pool = NULL;
	verify_when when = VERIFY_BEFORE;
	memset(&plan, 0, sizeof plan);
	fmt_kind k = fmt_check_distinct(input, output, e);
	/* Before the input is checked (a hash of every byte); a set's names are checked by its writer. */
	if (k == FMT_OK && !o->dry_run && !o->shard_given && !o->to->default_shard_bytes)
		k = fmt_sink_may_create(output, o->force ? FMT_SINK_FORCE : 0, e);
	if (k == FMT_OK && o->options)   /* what the drivers' options name (GGUF: --imatrix) */
		k = fmt_drvopt_load(o->options, e);
	if (k == FMT_OK)
		k = open_input(&in, input, o, &when, e);
	if (k != FMT_OK) {
		if (o->options)
			fmt_drvopt_unload(o->options);
		return k;
	}
	if (fmt_driver_can(o->to, FMT_CAP_NETWORK)) {
		k = write_network(&in, input, output, o, e);
		if (k != FMT_OK)
			fmt_err_file(e, input);
		fmt_model_free(&in);
		if (o->options)
			fmt_drvopt_unload(o->options);
		return k;
	}
	/* A stream is read by one thread, front to back. */
	int threads = fmt_model_sequential(&in) ? 1 : o->threads;
	in.reader_threads = threads;
	for (size_t i = 0; i < in.n_sources && k == FMT_OK; i++) /* a shard of an input set */
		k = fmt_check_distinct(in.sources[i].path, output, e);
	if (k == FMT_OK)
		k = fmt_pool_create(&pool, threads, e);
	if (k == FMT_OK)
		k = fmt_plan_build(&plan, &in, o, pool, e);
	plan.verify = when;
	if (k == FMT_OK && o->dry_run)     /* nothing is read: check now */
		k = verify_streamed(&plan, &in, o, e);
	if (k == FMT_OK && o->model_hook)
		k = o->model_hook(&plan.out, o->hook_ctx, e);
	fmt_shard_plan set = { 0 };   /* the files of an output written as a set */
	if (k == FMT_OK && o->dry_run) {
		k = dry_set(&plan, &in, output, o, &set, e);
		if (k == FMT_OK)
			fmt_plan_print(o->out, &plan, set.shards ? &set : NULL, input, output, o);
		if (k == FMT_OK && !o->quiet)
			fmt_plan_warn_names(&plan, o);
	} else if (k == FMT_OK) {
		/* with --json the record goes to o->out: not when that holds the data */
		int json_record = o->json && strcmp(output, "-") != 0;
		record_gate g = { .p = &plan, .set = &set, .input = input, .output = output, .o = o };
		start_verifier(&plan, &in);
		k = write_output(&plan, &in, output, o, &set, json_record ? &g : NULL, e);
		if (k == FMT_OK && !o->quiet)
			fmt_plan_warn(&plan, o);
		if (k == FMT_OK && json_record && g.rec.text) /* a failed write is the end of the run's */
			fmt_json_rec_put(o->out, &g.rec);
		else if (k == FMT_OK && (o->verbose || json_record) && strcmp(output, "-") != 0)
			fmt_plan_print(o->json ? o->out : o->err, &plan, set.shards ? &set : NULL, input, output, o);
		fmt_json_rec_free(&g.rec);
	}
	fmt_shard_plan_free(&set);
	if (plan.verifier_started)   /* the output failed first: the input is not read any more */
		pthread_join(plan.verifier, NULL);
	if (k != FMT_OK)
		fmt_err_file(e, input);
	fmt_plan_free(&plan);
	fmt_pool_destroy(pool);
	fmt_model_free(&in);
	if (o->options)
		fmt_drvopt_unload(o->options);
	return k;
}
