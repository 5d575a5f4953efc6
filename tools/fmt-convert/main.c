/* fmt-convert: move a model between formats, with dtype conversion and quantization. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/cli.h"
#include "fmt/out.h"
#include "convert.h"

#define TOOL "fmt-convert"
#define MAX_REPEATS 256

enum { OPT_TO = FMT_OPT_FIRST_TOOL_OPTION, OPT_DTYPE, OPT_ARCH, OPT_SET, OPT_SET_FROM, OPT_INCLUDE,
       OPT_EXCLUDE, OPT_DRY_RUN, OPT_SHARD, OPT_SIGN, OPT_NO_VERIFY };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " TOOL " [OPTIONS] INPUT OUTPUT\n"
		"Convert a model between safetensors (single file or sharded index), GGUF\n"
		"(single file or split set) and Apsi checkpoints (.apsim, single or sharded),\n"
		"with dtype conversion, quantization and compression.\n"
		"\n"
		"      --to FORMAT         safetensors, gguf or apsim (default: from OUTPUT's extension)\n"
		"      --dtype TYPE        f32, f16, bf16, q8_0, q4_0 (GGUF), int8, int4, fp8, fp6,\n"
		"                          fp4 (.apsim compressed tensors) or keep (default: f16 for\n"
		"                          GGUF, keep otherwise)\n"
		"      --shard SIZE        write a shard set of at most SIZE of tensor data per shard\n"
		"                          (default: 5GB for safetensors, 4GB for .apsim, none for GGUF)\n"
		"      --sign              sign the .apsim output (the per-user key unless a secret is given)\n"
		"      --hmac-key          sign with the per-user key (fmt-sign keygen --hmac)\n"
		"      --secret-file FILE  sign with the team secret in FILE\n"
		"      --secret-env NAME   sign with the team secret in environment variable NAME\n"
		"      --secret-prompt     sign with a team secret typed at a prompt\n"
		"      --no-verify         do not check the input's digest before converting\n"
		"      --arch NAME         set general.architecture (GGUF)\n"
		"      --set KEY[:TYPE]=VALUE  add or replace a metadata key; TYPE is one of\n"
		"                          u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool str (default str)\n"
		"      --set-from FILE     add the keys of a JSON object\n"
		"      --include GLOB      convert only tensors whose name matches (repeatable)\n"
		"      --exclude GLOB      leave out tensors whose name matches (repeatable)\n"
		"      --dry-run           print the plan (every tensor, its dtypes and bytes); write nothing\n"
		"  -f, --force             overwrite OUTPUT if it exists\n"
		"  -T, --threads N         worker threads (default: number of cores); same bytes for any N\n"
		"  -j, --json              report as one JSON object\n"
		"  -q, --quiet             no warnings\n"
		"  -v, --verbose           print every tensor's conversion\n"
		"      --no-progress       no progress bar\n"
		"  -h, --help              this help\n"
		"      --version           print the version\n"
		"\n"
		"OUTPUT may be - (standard output, not a terminal) with --to.\n"
		"Exit status: 0 ok, 2 usage, 3 I/O error, 4 invalid input (or NaN/Inf to quantize),\n"
		"5 unsupported version, type or conversion.\n");
}

static const struct option long_opts[] = {
	FMT_COMMON_LONG_OPTIONS,
	{ "threads", required_argument, NULL, 'T' }, { "force", no_argument, NULL, 'f' },
	{ "to", required_argument, NULL, OPT_TO }, { "dtype", required_argument, NULL, OPT_DTYPE },
	{ "arch", required_argument, NULL, OPT_ARCH }, { "set", required_argument, NULL, OPT_SET },
	{ "set-from", required_argument, NULL, OPT_SET_FROM },
	{ "include", required_argument, NULL, OPT_INCLUDE }, { "exclude", required_argument, NULL, OPT_EXCLUDE },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN }, { "shard", required_argument, NULL, OPT_SHARD },
	{ "sign", no_argument, NULL, OPT_SIGN }, { "no-verify", no_argument, NULL, OPT_NO_VERIFY },
	FMT_KEY_LONG_OPTIONS, { NULL, 0, NULL, 0 }
};

static int usage_error(const char *msg)
{
	return fmt_report_usage(stderr, TOOL, msg);
}

static int push(const char **list, size_t *n, const char *item)
{
	if (*n >= MAX_REPEATS)
		return -1;
	list[(*n)++] = item;
	return 0;
}

/* The writer for an output name; NAME.<ext>.index.json asks for a shard set of <ext>. */
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

int main(int argc, char **argv)
{
	static const char *sets[MAX_REPEATS], *includes[MAX_REPEATS], *excludes[MAX_REPEATS];
	fmt_common_opts common = { 0 };
	convert_opts o = { .sets = sets, .include = includes, .exclude = excludes };
	const char *to_name = NULL;
	fmt_err e;
	int c;
	fmt_err_clear(&e);
	while ((c = getopt_long(argc, argv, "jqvhfT:", long_opts, NULL)) != -1) {
		int r = fmt_cli_common(c, optarg, &common, &e);
		if (r < 0)
			return usage_error(e.msg);
		if (r > 0 || fmt_cli_key_option(c, optarg, &o.key))
			continue;
		int full = 0;
		switch (c) {
		case 'h': usage(stdout); return 0;
		case FMT_OPT_VERSION: fmt_cli_version(stdout, TOOL); return 0;
		case 'f': o.force = 1; break;
		case OPT_TO: to_name = optarg; break;
		case OPT_DTYPE: o.dtype = optarg; break;
		case OPT_ARCH: o.arch = optarg; break;
		case OPT_SET: full = push(sets, &o.n_sets, optarg); break;
		case OPT_SET_FROM: o.set_from = optarg; break;
		case OPT_INCLUDE: full = push(includes, &o.n_include, optarg); break;
		case OPT_EXCLUDE: full = push(excludes, &o.n_exclude, optarg); break;
		case OPT_DRY_RUN: o.dry_run = 1; break;
		case OPT_SHARD:
			if (fmt_parse_size(optarg, &o.shard, &e) != FMT_OK || o.shard == 0)
				return usage_error("--shard takes a size above 0, e.g. 2GB, 500MB, 1GiB");
			o.shard_given = 1;
			break;
		case OPT_SIGN: o.sign = 1; break;
		case OPT_NO_VERIFY: o.no_verify = 1; break;
		default: return usage_error("unknown option");
		}
		if (full)
			return usage_error("too many repeated options");
	}
	if (argc - optind != 2)
		return usage_error("need INPUT and OUTPUT");
	const char *input = argv[optind], *output = argv[optind + 1];
	o.to = to_name ? fmt_driver_by_name(to_name) : output_driver(output, &o.force_set);
	if (!o.to || !o.to->write) {
		char msg[FMT_ERR_MSG_MAX] = "cannot tell the output format from its name; use --to";
		if (to_name) {
			char names[512];
			fmt_driver_writer_names(names, sizeof names);
			snprintf(msg, sizeof msg, "--to takes %s", names);
		}
		return usage_error(msg);
	}
	o.json = common.json;
	o.quiet = common.quiet;
	o.verbose = common.verbose;
	o.no_progress = common.no_progress;
	o.threads = common.threads ? common.threads : fmt_cpu_count();
	if (o.sign && !fmt_key_opts_given(&o.key))
		o.key.hmac_key = 1;
	fmt_kind k = convert_run(input, output, &o, &e);
	if (k != FMT_OK)
		fmt_report_error(stderr, TOOL, NULL, &e, common.json);
	return fmt_kind_exit(k);
}
