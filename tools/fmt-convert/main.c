/* fmt-convert: move a model between formats, with dtype conversion and quantization. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/cli.h"
#include "fmt/out.h"
#include "convert.h"

#define TOOL "fmt-convert"
#define MAX_REPEATS 256

enum { OPT_TO = FMT_OPT_FIRST_TOOL_OPTION, OPT_DTYPE, OPT_ARCH, OPT_SET, OPT_SET_FROM, OPT_INCLUDE,
       OPT_EXCLUDE, OPT_DRY_RUN, OPT_SHARD, OPT_SIGN, OPT_NO_VERIFY, OPT_OVERFLOW, OPT_ALLOW_OVERFLOW };

static const fmt_cli_option options[] = {
	{ FMT_CLI_OPT("to", OPT_TO, "FORMAT", "the output format (default: from OUTPUT's extension):"),
	  .complete = FMT_COMPLETE_FORMAT },
	{ FMT_CLI_OPT("dtype", OPT_DTYPE, "TYPE", "f32, f16, bf16, q8_0, q4_0 (GGUF), int8, int4, fp8, fp6,\n"
		      "fp4 (.apsim compressed tensors) or keep (default: f16 for\nGGUF, keep otherwise)"),
	  .complete = FMT_COMPLETE_WORDS, .words = "f32 f16 bf16 q8_0 q4_0 int8 int4 fp8 fp6 fp4 keep" },
	{ FMT_CLI_OPT("shard", OPT_SHARD, "SIZE", "write a shard set of at most SIZE of tensor data per shard\n"
		      "(default: 5GB for safetensors, 4GB for .apsim, none for GGUF)") },
	{ FMT_CLI_OPT("sign", OPT_SIGN, NULL, "sign the .apsim output (the per-user key unless a secret is given)") },
	{ FMT_CLI_OPT("hmac-key", FMT_OPT_HMAC_KEY, NULL, "sign with the per-user key (fmt-sign keygen --hmac)") },
	{ FMT_CLI_OPT("secret-file", FMT_OPT_SECRET_FILE, "FILE", "sign with the team secret in FILE"),
	  .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("key-secret-file", FMT_OPT_SECRET_FILE, "FILE", "the same as --secret-file"),
	  .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("secret-env", FMT_OPT_SECRET_ENV, "NAME", "sign with the team secret in environment variable NAME"),
	  .complete = FMT_COMPLETE_ENV },
	{ FMT_CLI_OPT("secret-prompt", FMT_OPT_SECRET_PROMPT, NULL, "sign with a team secret typed at a prompt") },
	{ FMT_CLI_OPT("no-verify", OPT_NO_VERIFY, NULL, "do not check the input's digest before converting") },
	{ FMT_CLI_OPT("arch", OPT_ARCH, "NAME", "set general.architecture (GGUF)") },
	{ FMT_CLI_OPT("set", OPT_SET, "KEY[:TYPE]=VALUE", "add or replace a metadata key; TYPE is one of\n"
		      "u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool str (default str)"), .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("set-from", OPT_SET_FROM, "FILE", "add the keys of a JSON object"),
	  .complete = FMT_COMPLETE_FILE, .words = "*.json" },
	{ FMT_CLI_OPT("overflow", OPT_OVERFLOW, "MODE", "values the dtype cannot hold (F16 above 65504, Q8_0/Q4_0 blocks\n"
		      "whose scale overflows F16): refuse (default, exit 4), saturate\n"
		      "(F16/BF16 clamped; Q8_0/Q4_0 tensor written as F16) or widen\n"
		      "(tensor written as F32)"),
	  .complete = FMT_COMPLETE_WORDS, .words = "refuse saturate widen" },
	{ FMT_CLI_OPT("allow-overflow", OPT_ALLOW_OVERFLOW, NULL, "the same as --overflow=saturate") },
	{ FMT_CLI_OPT("include", OPT_INCLUDE, "GLOB", "convert only tensors whose name matches (repeatable)"),
	  .complete = FMT_COMPLETE_TENSOR, .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("exclude", OPT_EXCLUDE, "GLOB", "leave out tensors whose name matches (repeatable)"),
	  .complete = FMT_COMPLETE_TENSOR, .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("dry-run", OPT_DRY_RUN, NULL, "print the plan (every tensor, its dtypes and bytes); write nothing") },
	{ FMT_CLI_OPT("force", 'f', NULL, "overwrite OUTPUT if it exists") },
	{ FMT_CLI_OPT("threads", 'T', "N", "worker threads (default: number of cores); same bytes for any N") },
	{ FMT_CLI_OPT("json", 'j', NULL, "report as one JSON object") },
	{ FMT_CLI_OPT("quiet", 'q', NULL, "no warnings") },
	{ FMT_CLI_OPT("verbose", 'v', NULL, "print every tensor's conversion") },
	{ .name = NULL }
};

typedef struct convert_args {
	convert_opts o;
	const char *to_name;        /* --to */
	int overflow_given, allow_overflow;
} convert_args;

static int push(const char **list, size_t *n, const char *item)
{
	if (*n >= MAX_REPEATS)
		return -1;
	list[(*n)++] = item;
	return 0;
}
static const fmt_driver *output_driver(const char *output, int *force_set)
{
	static const char index_suffix[] = ".index.json";
	const fmt_driver *d = fmt_driver_by_extension(output);
	size_t n = strlen(output), s = sizeof index_suffix - 1;
	if (d && d->write)
		return d;
	if (n <= s || strcmp(output + n - s, index_suffix) != 0)
		return NULL;
	char *base = strndup(output, n - s);
	d = base ? fmt_driver_by_extension(base) : NULL;
	free(base);
	*force_set = d && d->write_sharded;
	return *force_set ? d : NULL;
}

static int on_option(void *ctx, int id, const char *arg, fmt_err *e)
{
	convert_args *a = ctx;
	convert_opts *o = &a->o;
	int full = 0;
	if (fmt_cli_key_option(id, arg, &o->key))
		return 0;
	switch (id) {
	case 'f': o->force = 1; break;
	case OPT_TO: a->to_name = arg; break;
	case OPT_DTYPE: o->dtype = arg; break;
	case OPT_ARCH: o->arch = arg; break;
	case OPT_SET: full = push(o->sets, &o->n_sets, arg); break;
	case OPT_SET_FROM: o->set_from = arg; break;
	case OPT_INCLUDE: full = push(o->include, &o->n_include, arg); break;
	case OPT_EXCLUDE: full = push(o->exclude, &o->n_exclude, arg); break;
	case OPT_DRY_RUN: o->dry_run = 1; break;
	case OPT_SHARD:
		if (fmt_parse_size(arg, &o->shard, e) != FMT_OK || o->shard == 0)
			return fmt_fail(e, FMT_USAGE, "--shard takes a size above 0, e.g. 2GB, 500MB, 1GiB"), -1;
		o->shard_given = 1;
		break;
	case OPT_SIGN: o->sign = 1; break;
	case OPT_NO_VERIFY: o->no_verify = 1; break;
	case OPT_OVERFLOW:
		if (!fmt_overflow_mode_from_name(arg, &o->overflow))
			return fmt_fail(e, FMT_USAGE, "--overflow takes refuse, saturate or widen"), -1;
		a->overflow_given = 1;
		break;
	case OPT_ALLOW_OVERFLOW: a->allow_overflow = 1; break;
	default: return fmt_fail(e, FMT_USAGE, "unhandled option"), -1;
	}
	return full ? (fmt_fail(e, FMT_USAGE, "too many repeated options"), -1) : 0;
}

static const fmt_cli_tool tool = {
	.name = TOOL,
	.synopsis = "[OPTIONS] INPUT OUTPUT",
	.about = "Convert a model between safetensors (single file or sharded index), GGUF\n"
		 "(single file or split set) and Apsi checkpoints (.apsim, single or sharded),\n"
		 "with dtype conversion, quantization and compression.",
	.options = options,
	.footer = "OUTPUT may be - (standard output, not a terminal) with --to.\n"
		  "Exit status: 0 ok, 2 usage, 3 I/O error, 4 invalid input (or NaN/Inf to quantize, or\n"
		  "values the dtype cannot hold),\n"
		  "5 unsupported version, type or conversion.",
	.format_names = fmt_driver_writer_names,
	.on_option = on_option,
};

int main(int argc, char **argv)
{
	static const char *sets[MAX_REPEATS], *includes[MAX_REPEATS], *excludes[MAX_REPEATS];
	convert_args a = { .o = { .sets = sets, .include = includes, .exclude = excludes } };
	convert_opts *o = &a.o;
	fmt_cli cli;
	fmt_err e;
	fmt_err_clear(&e);
	if (!fmt_cli_parse(&tool, argc, argv, &a, &cli))
		return cli.exit_code;
	if (a.allow_overflow && a.overflow_given && o->overflow != FMT_OVERFLOW_SATURATE)
		return fmt_cli_usage_error(&tool, "--allow-overflow means --overflow=saturate; it contradicts --overflow=refuse or widen");
	if (a.allow_overflow)
		o->overflow = FMT_OVERFLOW_SATURATE;
	if (cli.n_operands != 2)
		return fmt_cli_usage_error(&tool, "need INPUT and OUTPUT");
	const char *input = cli.operands[0], *output = cli.operands[1];
	o->to = a.to_name ? fmt_driver_by_name(a.to_name) : output_driver(output, &o->force_set);
	if (!o->to || !o->to->write) {
		char msg[FMT_ERR_MSG_MAX] = "cannot tell the output format from its name; use --to";
		if (a.to_name) {
			char names[512];
			fmt_driver_writer_names(names, sizeof names);
			snprintf(msg, sizeof msg, "--to takes %s", names);
		}
		return fmt_cli_usage_error(&tool, msg);
	}
	o->json = cli.common.json;
	o->quiet = cli.common.quiet;
	o->verbose = cli.common.verbose;
	o->no_progress = cli.common.no_progress;
	o->threads = cli.common.threads ? cli.common.threads : fmt_cpu_count();
	if (o->sign && !fmt_key_opts_given(&o->key))
		o->key.hmac_key = 1;
	fmt_kind k = convert_run(input, output, o, &e);
	if (k != FMT_OK)
		fmt_report_error(stderr, TOOL, NULL, &e, cli.common.json);
	return fmt_cli_finish(&tool, &cli, fmt_kind_exit(k));
}
