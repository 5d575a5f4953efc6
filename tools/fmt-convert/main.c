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
       OPT_EXCLUDE, OPT_DRY_RUN };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " TOOL " [OPTIONS] INPUT OUTPUT\n"
		"Convert a model between safetensors (single file or sharded index) and GGUF\n"
		"(single file or split set), with dtype conversion and quantization.\n"
		"\n"
		"      --to FORMAT         safetensors or gguf (default: from OUTPUT's extension)\n"
		"      --dtype TYPE        f32, f16, bf16, q8_0, q4_0 or keep\n"
		"                          (default: f16 for GGUF, keep for safetensors)\n"
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
	{ "json", no_argument, NULL, 'j' }, { "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' }, { "no-progress", no_argument, NULL, FMT_OPT_NO_PROGRESS },
	{ "help", no_argument, NULL, 'h' }, { "version", no_argument, NULL, FMT_OPT_VERSION },
	{ "threads", required_argument, NULL, 'T' }, { "force", no_argument, NULL, 'f' },
	{ "to", required_argument, NULL, OPT_TO }, { "dtype", required_argument, NULL, OPT_DTYPE },
	{ "arch", required_argument, NULL, OPT_ARCH }, { "set", required_argument, NULL, OPT_SET },
	{ "set-from", required_argument, NULL, OPT_SET_FROM },
	{ "include", required_argument, NULL, OPT_INCLUDE }, { "exclude", required_argument, NULL, OPT_EXCLUDE },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN }, { NULL, 0, NULL, 0 }
};

static int usage_error(const char *msg)
{
	fprintf(stderr, TOOL ": error: %s\nTry '" TOOL " --help'.\n", msg);
	return FMT_USAGE;
}

static int push(const char **list, size_t *n, const char *item)
{
	if (*n >= MAX_REPEATS)
		return -1;
	list[(*n)++] = item;
	return 0;
}

/* Convert input to output as planned; returns the error kind. */
static fmt_kind run(const char *input, const char *output, const convert_opts *o, fmt_err *e)
{
	fmt_model in;
	convert_plan plan;
	fmt_pool *pool = NULL;
	fmt_sink sink;
	memset(&plan, 0, sizeof plan);
	fmt_kind k = fmt_check_distinct(input, output, e);
	if (k == FMT_OK)
		k = fmt_model_open(&in, input, NULL, e);
	if (k != FMT_OK)
		return k;
	k = fmt_pool_create(&pool, o->threads, e);
	if (k == FMT_OK)
		k = plan_build(&plan, &in, o, pool, e);
	if (k == FMT_OK && o->dry_run) {
		plan_print(stdout, &plan, input, output, o);
	} else if (k == FMT_OK) {
		fmt_write_opts wo = { .sink_flags = o->force ? FMT_SINK_FORCE : 0, .threads = o->threads };
		k = fmt_sink_open(&sink, output, wo.sink_flags, e);
		if (k == FMT_OK) {
			k = o->to->write(&plan.out, &sink, &wo, e);
			if (k == FMT_OK)
				k = fmt_sink_commit(&sink, e);
			else
				fmt_sink_abort(&sink);
		}
		if (k == FMT_OK && !o->quiet)
			plan_warn(&plan, TOOL);
		if (k == FMT_OK && (o->verbose || o->json) && strcmp(output, "-") != 0)
			plan_print(o->json ? stdout : stderr, &plan, input, output, o);
	}
	if (k != FMT_OK)
		fmt_err_file(e, input);
	plan_free(&plan);
	fmt_pool_destroy(pool);
	fmt_model_free(&in);
	return k;
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
		if (r > 0)
			continue;
		int full = 0;
		switch (c) {
		case 'h': usage(stdout); return 0;
		case FMT_OPT_VERSION: fmt_cli_version(TOOL); return 0;
		case 'f': o.force = 1; break;
		case OPT_TO: to_name = optarg; break;
		case OPT_DTYPE: o.dtype = optarg; break;
		case OPT_ARCH: o.arch = optarg; break;
		case OPT_SET: full = push(sets, &o.n_sets, optarg); break;
		case OPT_SET_FROM: o.set_from = optarg; break;
		case OPT_INCLUDE: full = push(includes, &o.n_include, optarg); break;
		case OPT_EXCLUDE: full = push(excludes, &o.n_exclude, optarg); break;
		case OPT_DRY_RUN: o.dry_run = 1; break;
		default: return usage_error("unknown option");
		}
		if (full)
			return usage_error("too many repeated options");
	}
	if (argc - optind != 2)
		return usage_error("need INPUT and OUTPUT");
	const char *input = argv[optind], *output = argv[optind + 1];
	o.to = to_name ? fmt_driver_by_name(to_name) : fmt_driver_by_extension(output);
	if (!o.to || !o.to->write)
		return usage_error(to_name ? "--to takes safetensors or gguf"
					   : "cannot tell the output format from its name; use --to");
	o.json = common.json;
	o.quiet = common.quiet;
	o.verbose = common.verbose;
	o.threads = common.threads ? common.threads : fmt_cpu_count();
	fmt_kind k = run(input, output, &o, &e);
	if (k != FMT_OK)
		fmt_report_error(stderr, TOOL, NULL, &e, common.json);
	return fmt_kind_exit(k);
}
