/* nk-run: run netkit .nk networks (float v3, int8 v4) and their embedded regression tests. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fmt/cli.h"
#include "fmt/out.h"
#include "fmt/registry.h"
#include "nkrun.h"

#define TOOL "nk-run"

enum { OPT_INPUT_FILE = FMT_OPT_FIRST_TOOL_OPTION, OPT_INPUT_JSON, OPT_RANDOM, OPT_QUANTIZE, OPT_TOP, OPT_RAW,
       OPT_TEST, OPT_BENCH, OPT_PROFILE };

static void usage(FILE *f)
{
	fputs("Usage: " TOOL " [OPTIONS] MODEL.nk --input VALUES\n"
	      "       " TOOL " --test [OPTIONS] MODEL.nk...\n"
	      "       " TOOL " --bench N [--profile] MODEL.nk\n"
	      "Run a netkit .nk network (float v3 or int8 v4) on one input, run its embedded\n"
	      "regression tests, or time it.\n"
	      "\n"
	      "  -i, --input VALUES      numbers separated by ',' or ' ' (upstream's syntax)\n"
	      "      --input-file FILE   raw little-endian float32 (int8 for int8 models) or a\n"
	      "                          JSON array; - reads standard input\n"
	      "      --input-json JSON   the input as a JSON array\n"
	      "      --random SEED       a reproducible random input (float: [0,1), int8: codes)\n"
	      "      --quantize-input    int8 models: quantize float input values with the\n"
	      "                          model's input scale (default: values are int8 codes)\n"
	      "  -j, --json              one JSON object: shape, values, argmax, time\n"
	      "      --top K             with --json: the K largest outputs\n"
	      "      --raw               the output as binary (float32, or int8 codes) to a pipe\n"
	      "      --test              run every embedded test case of each MODEL\n"
	      "      --bench N           N timed inferences after warm-up (default input: --random 1)\n"
	      "      --profile           per-layer time and output shape (with --bench, or one run)\n"
	      "  -q, --quiet             --test: only the summary line\n"
	      "  -v, --verbose           print upstream's network summary before the output\n"
	      "      --no-progress       accepted for consistency (nk-run draws no progress)\n"
	      "  -h, --help              this help\n"
	      "      --version           print the version\n"
	      "\n"
	      "Exit status: 0 ok, 2 usage, 3 I/O error, 4 invalid model or input, 5 unsupported\n"
	      "version or layer, 11 an embedded test failed.\n",
	      f);
}

static const struct option long_opts[] = {
	FMT_COMMON_LONG_OPTIONS,
	{ "input", required_argument, NULL, 'i' },
	{ "input-file", required_argument, NULL, OPT_INPUT_FILE },
	{ "input-json", required_argument, NULL, OPT_INPUT_JSON },
	{ "random", required_argument, NULL, OPT_RANDOM },
	{ "quantize-input", no_argument, NULL, OPT_QUANTIZE },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "raw", no_argument, NULL, OPT_RAW },
	{ "test", no_argument, NULL, OPT_TEST },
	{ "bench", required_argument, NULL, OPT_BENCH },
	{ "profile", no_argument, NULL, OPT_PROFILE },
	{ NULL, 0, NULL, 0 }
};

typedef struct input_opts {
	const char *list, *file, *json;
	int have_seed;
	uint64_t seed;
} input_opts;

typedef struct loaded {
	fmt_model m;
	const nk_model *nm;
	nk_engine en;
} loaded;

static fmt_kind load(loaded *L, const char *path, const nk_run_opts *o, fmt_err *e)
{
	const fmt_driver *nk = fmt_driver_by_name("nk");
	fmt_kind k = fmt_model_open(&L->m, path, nk, e);
	if (k != FMT_OK)
		return k;
	L->nm = nk_model_of(&L->m);
	k = nk_engine_init(&L->en, L->nm, nk_kernels_get(), e);
	if (k == FMT_OK && o->profile)
		k = nk_engine_profile(&L->en, e);
	if (k != FMT_OK) {
		nk_engine_free(&L->en);
		fmt_model_free(&L->m);
	}
	return k;
}

static void unload(loaded *L)
{
	nk_engine_free(&L->en);
	fmt_model_free(&L->m);
}

static fmt_kind gather_input(const input_opts *in, const nk_model *nm, int quantize, void **dst, fmt_err *e)
{
	nk_values v = { 0 };
	fmt_kind k;
	if (in->list)
		k = nk_parse_value_list(in->list, &v, e);
	else if (in->json)
		k = nk_parse_value_json(in->json, strlen(in->json), &v, e);
	else if (in->file)
		k = nk_read_value_file(in->file, nm, &v, e);
	else
		k = nk_random_values(in->have_seed ? in->seed : 1, nm, &v, e);
	if (k == FMT_OK && !(*dst = malloc(nm->input_count * sizeof(float))))
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		k = nk_values_to_input(&v, nm, quantize, *dst, e);
	nk_values_free(&v);
	return k;
}

static int report(const char *path, const fmt_err *e, int json)
{
	fmt_report_error(stderr, TOOL, e->file[0] ? NULL : path, e, json);
	return fmt_kind_exit(e->kind);
}

static int run_tests(char **paths, int n, const nk_run_opts *o)
{
	unsigned passed = 0, failed = 0;
	int status = 0;
	for (int i = 0; i < n; i++) {
		loaded L;
		fmt_err e;
		fmt_err_clear(&e);
		fmt_kind k = load(&L, paths[i], o, &e);
		if (k == FMT_OK) {
			k = nk_report_tests(stdout, paths[i], L.nm, &L.en, o, &passed, &failed, &e);
			unload(&L);
		} else {
			failed++; /* a model that cannot be loaded counts as one failed case (§14) */
		}
		if (k != FMT_OK) {
			int code = report(paths[i], &e, o->json);
			status = code > status ? code : status;
		}
	}
	if (o->json) {
		json_t *j = json_pack("{s:I,s:I}", "passed", (json_int_t)passed, "failed", (json_int_t)failed);
		fmt_json_line(stdout, j);
		json_decref(j);
	} else {
		printf("%u passed, %u failed\n", passed, failed);
	}
	return failed && status < FMT_TEST_FAILED ? FMT_TEST_FAILED : status;
}

static int run_model(const char *path, const input_opts *in, const nk_run_opts *o)
{
	loaded L;
	fmt_err e;
	void *input = NULL;
	fmt_err_clear(&e);
	fmt_kind k = load(&L, path, o, &e);
	if (k != FMT_OK)
		return report(path, &e, o->json);
	k = gather_input(in, L.nm, o->quantize_input, &input, &e);
	if (k == FMT_OK)
		k = o->bench ? nk_report_bench(stdout, path, L.nm, &L.en, input, o, &e)
			     : nk_report_run(stdout, path, L.nm, &L.en, input, o, &e);
	if (k == FMT_OK && o->profile && !o->bench)
		k = nk_report_bench(stdout, path, L.nm, &L.en, input, &(nk_run_opts){ .json = o->json, .profile = 1, .bench = 1 },
				    &e);
	free(input);
	unload(&L);
	return k == FMT_OK ? 0 : report(path, &e, o->json);
}

static int usage_error(const char *msg)
{
	return fmt_report_usage(stderr, TOOL, msg);
}

int main(int argc, char **argv)
{
	fmt_common_opts common = { 0 };
	nk_run_opts o = { 0 };
	input_opts in = { 0 };
	int test = 0, sources = 0;
	uint64_t u;
	fmt_err e;
	int c;
	fmt_err_clear(&e);
	while ((c = getopt_long(argc, argv, "jqvhi:", long_opts, NULL)) != -1) {
		int r = fmt_cli_common(c, optarg, &common, &e);
		if (r < 0)
			return usage_error(e.msg);
		if (r > 0)
			continue;
		switch (c) {
		case 'h': usage(stdout); return 0;
		case FMT_OPT_VERSION: fmt_cli_version(stdout, TOOL); return 0;
		case 'i': in.list = optarg; sources++; break;
		case OPT_INPUT_FILE: in.file = optarg; sources++; break;
		case OPT_INPUT_JSON: in.json = optarg; sources++; break;
		case OPT_RANDOM:
			if (fmt_parse_u64(optarg, UINT64_MAX, &in.seed, &e) != FMT_OK)
				return usage_error("--random needs a whole number seed");
			in.have_seed = 1;
			sources++;
			break;
		case OPT_QUANTIZE: o.quantize_input = 1; break;
		case OPT_TOP:
			if (fmt_parse_u64(optarg, 1u << 20, &u, &e) != FMT_OK || u == 0)
				return usage_error("--top needs a count from 1");
			o.top = (unsigned)u;
			break;
		case OPT_RAW: o.raw = 1; break;
		case OPT_TEST: test = 1; break;
		case OPT_BENCH:
			if (fmt_parse_u64(optarg, 100000000, &o.bench, &e) != FMT_OK || o.bench == 0)
				return usage_error("--bench needs a run count from 1 to 100000000");
			break;
		case OPT_PROFILE: o.profile = 1; break;
		default: return usage_error("unknown option");
		}
	}
	o.json = common.json;
	o.quiet = common.quiet;
	o.verbose = common.verbose;
	if (optind >= argc)
		return usage_error("no model file");
	if (sources > 1)
		return usage_error("give one input: --input, --input-file, --input-json or --random");
	if (o.top && !o.json)
		return usage_error("--top goes with --json");
	if (o.raw && (o.json || test || o.bench || o.profile))
		return usage_error("--raw writes the output alone (not with --json, --test, --bench or --profile)");
	if (o.raw && isatty(STDOUT_FILENO))
		return usage_error("--raw writes binary; refusing to write it to a terminal (redirect or pipe it)");
	int status;
	if (test) {
		if (sources || o.bench)
			return usage_error("--test takes models only (their inputs are embedded)");
		status = run_tests(argv + optind, argc - optind, &o);
	} else {
		if (argc - optind > 1)
			return usage_error("one model at a time (several only with --test)");
		if (!sources && !o.bench && !o.profile)
			return usage_error("Missing required --input <a,b,c,...> (or --input-file, --input-json, --random)");
		status = run_model(argv[optind], &in, &o);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, TOOL ": error: cannot write to standard output\n");
		return status > FMT_IO ? status : FMT_IO;
	}
	return status;
}
