/* What fmt-convert checks once the command line is parsed: the options among themselves, then
 * against the output's format (a dataset or a model, and which driver). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/format_options.h"
#include "fmt/minisign.h"
#include "fmt/progress.h"
#include "fmt/prompt.h"
#include "fmt/report.h"
#include "fmt/strbuf.h"
#include "fmt/table.h"
#include "convert.h"

const char *convert_check_line(convert_args *a, const fmt_cli *cli)
{
	fmt_convert_opts *o = &a->o;
	o->out = fmt_cli_records(&cli->common);
	o->err = stderr;
	fmt_cli_pipeline_reports(o);
	fmt_cli_decrypt_prompts(&o->decrypt, &cli->common);
	if (a->allow_overflow && a->overflow_given && o->overflow != FMT_OVERFLOW_SATURATE)
		return "--allow-overflow means --overflow=saturate; it contradicts --overflow=refuse or widen";
	if (a->allow_overflow)
		o->overflow = FMT_OVERFLOW_SATURATE;
	if (o->n_keys && !o->metadata_from)
		return "--keys chooses the keys of --metadata-from";
	if (cli->n_operands != 2)
		return "need INPUT and OUTPUT";
	if (o->sign_key && (o->sign || fmt_key_opts_given(&o->key)))
		return "--sign-key (Ed25519) and --sign or an HMAC key option are different signatures: give one";
	if ((o->passphrase.file || o->passphrase.env) && !o->sign_key && !o->decrypt.identity)
		return "--passphrase-file and --passphrase-env are for --sign-key or --identity";
	return fmt_cli_pass_check(o->passphrase.file, o->passphrase.env, !!o->sign_key + !!o->decrypt.identity);
}

void convert_take_common(fmt_convert_opts *o, const fmt_common_opts *c)
{
	o->json = c->json;
	o->quiet = c->quiet;
	o->verbose = c->verbose;
	o->no_progress = c->no_progress;
	o->threads = c->threads ? c->threads : fmt_cpu_count();
	o->passphrase = fmt_cli_pass_opts(o->passphrase.file, o->passphrase.env, c);
}

/* The writer for an output name; NAME.<ext>.index.json asks for a shard set of <ext>. */
static const fmt_driver *output_driver(const char *output, int *force_set)
{
	static const char index_suffix[] = ".index.json";
	const fmt_driver *d = fmt_driver_by_extension(output);
	size_t n = strlen(output), s = sizeof index_suffix - 1;
	if (d && fmt_driver_writes(d))
		return d;
	if (n <= s || strcmp(output + n - s, index_suffix) != 0)
		return NULL;
	char *base = strndup(output, n - s);
	d = base ? fmt_driver_by_extension(base) : NULL;
	free(base);
	*force_set = d && d->write_sharded;
	return *force_set ? d : NULL;
}

/* The output extensions of the writable table drivers: ".ald, .arrow, .feather, ...". */
static void table_extensions(char *buf, size_t n)
{
	size_t used = 0;
	buf[0] = '\0';
	for (const fmt_table_driver *const *d = fmt_table_drivers(); *d; d++) {
		if (!(*d)->write || !(*d)->extension)
			continue;
		used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s%s", used ? ", " : "", (*d)->extension);
		for (const char *const *x = (*d)->more_extensions; x && *x; x++)
			used += (size_t)snprintf(buf + used, used < n ? n - used : 0, ", %s", *x);
	}
}

/* A dataset output: no model option; -c for the table drivers that take it. */
static const char *dataset_target(convert_args *a)
{
	fmt_convert_opts *o = &a->o;
	fmt_err e;
	fmt_err_clear(&e);
	if (a->model_opt) {
		snprintf(a->msg, sizeof a->msg, "--%s applies to models, not to datasets (the output is %s)",
			 a->model_opt, o->table_to->name);
		return a->msg;
	}
	if (a->seed_given && !o->rows.sample_n && !(o->rows.sample_fraction > 0) && !o->rows.shuffle)
		return "--seed is for --sample and --shuffle";
	if (o->rows.memory && !o->rows.sample_n && !o->rows.shuffle && !o->rows.n_sort)
		return "--memory is for --sort, --shuffle and --sample N";
	if (o->compression && fmt_table_option_parse_for(&a->drvopts, o->table_to, "compression", o->compression, &e)) {
		a->msg_nomem = e.kind == FMT_IO;
		snprintf(a->msg, sizeof a->msg, "%s", e.msg);
		return a->msg;
	}
	return NULL;
}

/* A model output: no dataset option, a writer, the driver's own options and -c for it. */
static const char *model_target(convert_args *a, const char *output)
{
	fmt_convert_opts *o = &a->o;
	fmt_err e;
	fmt_err_clear(&e);
	if (o->decrypt.password_file || o->decrypt.password_env || o->decrypt.identity)
		return "--password-file, --password-env and --identity decrypt a dataset (.ald) and need a dataset output";
	if (a->dataset_opt) {
		char exts[256];
		table_extensions(exts, sizeof exts);
		snprintf(a->msg, sizeof a->msg, "--%s applies to datasets, not to models: dataset options need a "
			 "dataset output (%s or --to)", a->dataset_opt, exts);
		return a->msg;
	}
	o->to = a->to_name ? fmt_driver_by_name(a->to_name) : output_driver(output, &o->force_set);
	if (!o->to || !fmt_driver_writes(o->to)) {
		char names[512];
		if (!a->to_name && fmt_sink_may_create(output, FMT_SINK_FORCE, &e) != FMT_OK) {
			snprintf(a->msg, sizeof a->msg, "%s: %s", output, e.msg);
			return a->msg;
		}
		if (!a->to_name)
			return "cannot tell the output format from its name; use --to";
		char not_word[160];
		fmt_output_names(names, sizeof names);
		snprintf(a->msg, sizeof a->msg, "--to takes %s (%s)", names,
			 fmt_not_word(not_word, sizeof not_word, a->to_name, fmt_output_nearest(a->to_name)));
		return a->msg;
	}
	if (fmt_model_options_check(&a->drvopts, o->to, &e) != FMT_OK ||
	    (o->compression && fmt_codec_parse(o->to, o->compression, &o->codec, &o->codec_level, &e) != FMT_OK)) {
		snprintf(a->msg, sizeof a->msg, "%s", e.msg);
		return a->msg;
	}
	if (o->dtype && fmt_driver_can(o->to, FMT_CAP_NETWORK)) {
		snprintf(a->msg, sizeof a->msg, "a %s network is float32, or int8 with --dtype int8 --calibration INPUTS: "
			 "not --dtype %s alone", o->to->title, o->dtype);
		return a->msg;
	}
	o->dtype = fmt_pipeline_dtype_name(o);   /* GGUF: llama-quantize's 15 is Q4_K_M */
	if (fmt_pipeline_check_dtype(o, &e) != FMT_OK) { /* before any file: a usage error, not the input's */
		snprintf(a->msg, sizeof a->msg, "%s", e.msg);
		return a->msg;
	}
	if (o->sign && !fmt_key_opts_given(&o->key))
		o->key.hmac_key = 1;
	return NULL;
}

/* --sign-key needs a format with embedded Ed25519 signatures. */
static const char *sign_key_target(convert_args *a, const char *output)
{
	fmt_convert_opts *o = &a->o;
	if (!o->sign_key)
		return NULL;
	int ed = o->table_to && o->table_to->write ? (o->table_to->caps & FMT_CAP_ED25519_SIGN) != 0 : -1;
	if (ed < 0) {
		int force_set = 0;
		const fmt_driver *d = a->to_name ? fmt_driver_by_name(a->to_name) : output_driver(output, &force_set);
		ed = d && fmt_driver_can(d, FMT_CAP_ED25519_SIGN);
	}
	return ed ? NULL : "--sign-key needs an output format with embedded Ed25519 signatures (.apsim, .ald); "
			   "sign other files with fmt-sign sign -s";
}

const char *convert_output(convert_args *a, const char *output)
{
	fmt_convert_opts *o = &a->o;
	o->table_to = a->to_name ? fmt_table_driver_by_name(a->to_name) : fmt_table_driver_by_extension(output);
	return sign_key_target(a, output);
}

const char *convert_kind_checks(convert_args *a, const char *output)
{
	return a->o.table_to && a->o.table_to->write ? dataset_target(a) : model_target(a, output);
}

/* --sign-key's key, wiped at exit whichever way main returns. */
static fmt_ms_secret sign_secret;

static void wipe_sign_secret(void)
{
	fmt_ms_secret_free(&sign_secret);
}

fmt_kind convert_load_sign_key(fmt_convert_opts *o, fmt_err *e)
{
	if (!o->sign_key)
		return FMT_OK;
	fmt_kind k = fmt_ms_secret_load(o->sign_key, &o->passphrase, &sign_secret, e);
	if (k != FMT_OK)
		return k;
	o->sign_secret = &sign_secret;
	atexit(wipe_sign_secret);
	return FMT_OK;
}

int convert_edit_in_place(convert_args *a, fmt_cli *cli, const fmt_cli_tool *tool)
{
	fmt_convert_opts *o = &a->o;
	fmt_err e;
	fmt_err_clear(&e);
	o->out = fmt_cli_records(&cli->common);
	o->err = stderr;
	fmt_cli_pipeline_reports(o);
	o->json = cli->common.json;
	o->verbose = cli->common.verbose;
	if (a->not_edit_opt) {
		snprintf(a->msg, sizeof a->msg, "--in-place edits metadata only: --%s does not go with it", a->not_edit_opt);
		return fmt_cli_usage_error(tool, a->msg);
	}
	if (cli->n_operands != 1)
		return fmt_cli_usage_error(tool, "--in-place takes one FILE");
	if (!o->arch && !o->n_sets && !o->set_from && !o->metadata_from && !o->n_unsets && !o->n_overrides)
		return fmt_cli_usage_error(tool, "--in-place needs --set, --set-from, --override-kv, --metadata-from, "
					   "--unset or --arch");
	fmt_report_input(o->out, cli->operands[0], NULL);
	fmt_kind k = fmt_pipeline_edit(cli->operands[0], o, &e);
	if (k != FMT_OK)
		fmt_report_failed(o->out, TOOL, cli->operands[0], NULL, &e, o->json);
	return fmt_cli_finish(tool, cli, fmt_kind_exit(k));
}
