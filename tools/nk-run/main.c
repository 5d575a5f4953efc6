/* nk-run: run netkit .nk networks (float v3, int8 v4) and their embedded regression tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fmt/cli.h"
#include "fmt/out.h"
#include "fmt/report.h"
#include "fmt/registry.h"
#include "nkrun.h"

#define TOOL "nk-run"

enum { OPT_INPUT_FILE = FMT_OPT_FIRST_TOOL_OPTION, OPT_INPUT_JSON, OPT_RANDOM, OPT_QUANTIZE, OPT_TOP, OPT_RAW,
       OPT_TEST, OPT_BENCH, OPT_PROFILE, OPT_MAX_WORK,
       OPT_MAX_VALUES };

typedef struct input_opts {
	const char *list, *file, *json;
	int have_seed;
	uint64_t seed;
} input_opts;

/* Everything the command line says. */
typedef struct args {
	input_opts in;
	nk_run_opts o;
	int test, sources;
} args;

static const fmt_cli_option options[] = {
	{ FMT_CLI_OPT("input", 'i', "VALUES", "numbers separated by ',' or ' ' (upstream's syntax)") },
	{ FMT_CLI_OPT("input-file", OPT_INPUT_FILE, "FILE", "raw little-endian float32 (int8 codes for int8 models)\n"
		      "or a JSON array; - reads standard input"), .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("input-json", OPT_INPUT_JSON, "JSON", "the input as a JSON array") },
	{ FMT_CLI_OPT("random", OPT_RANDOM, "SEED", "a reproducible random input (float: [0,1), int8: codes)") },
	{ FMT_CLI_OPT("quantize-input", OPT_QUANTIZE, NULL, "int8 models: quantize float input values with the\n"
		      "model's input scale (default: values are int8 codes)") },
	{ FMT_CLI_OPT("json", 'j', NULL, "one JSON object: shape, values, argmax, time") },
	{ FMT_CLI_OPT("top", OPT_TOP, "K", "with --json: the K largest outputs") },
	{ FMT_CLI_OPT("raw", OPT_RAW, NULL, "the output as binary (float32, or int8 codes) to a pipe") },
	{ FMT_CLI_OPT("test", OPT_TEST, NULL, "run every embedded test case of each MODEL") },
	{ FMT_CLI_OPT("bench", OPT_BENCH, "N", "N timed inferences after warm-up (default input: --random 1)") },
	{ FMT_CLI_OPT("profile", OPT_PROFILE, NULL, "per-layer time and output shape (with --bench, or one run)") },
	{ FMT_CLI_OPT("max-work", OPT_MAX_WORK, "N", "refuse a network above N multiply-adds per run\n"
		      "(default 17179869184 = 2^34)") },
	{ FMT_CLI_OPT("max-values", OPT_MAX_VALUES, "N", "refuse a run whose input and output hold more than N\n"
		      "values together (default 4194304 = 2^22)") },
	{ FMT_CLI_OPT("quiet", 'q', NULL, "--test: only the summary line") },
	{ FMT_CLI_OPT("verbose", 'v', NULL, "print upstream's network summary before the output") },
	{ .name = NULL }
};

static int on_option(void *ctx, int id, const char *arg, fmt_err *e)
{
	args *a = ctx;
	uint64_t u;
	switch (id) {
	case 'i': a->in.list = arg; a->sources++; return 0;
	case OPT_INPUT_FILE: a->in.file = arg; a->sources++; return 0;
	case OPT_INPUT_JSON: a->in.json = arg; a->sources++; return 0;
	case OPT_RANDOM:
		if (fmt_parse_u64(arg, UINT64_MAX, &a->in.seed, e) != FMT_OK)
			return fmt_fail(e, FMT_USAGE, "--random needs a whole number seed"), -1;
		a->in.have_seed = 1;
		a->sources++;
		return 0;
	case OPT_QUANTIZE: a->o.quantize_input = 1; return 0;
	case OPT_TOP:
		if (fmt_parse_u64(arg, 1u << 20, &u, e) != FMT_OK || u == 0)
			return fmt_fail(e, FMT_USAGE, "--top needs a count from 1"), -1;
		a->o.top = (unsigned)u;
		return 0;
	case OPT_RAW: a->o.raw = 1; return 0;
	case OPT_TEST: a->test = 1; return 0;
	case OPT_BENCH:
		if (fmt_parse_u64(arg, 100000000, &a->o.bench, e) != FMT_OK || a->o.bench == 0)
			return fmt_fail(e, FMT_USAGE, "--bench needs a run count from 1 to 100000000"), -1;
		return 0;
	case OPT_PROFILE: a->o.profile = 1; return 0;
	case OPT_MAX_WORK:
		if (fmt_parse_u64(arg, UINT64_MAX, &a->o.max_work, e) != FMT_OK || a->o.max_work == 0)
			return fmt_fail(e, FMT_USAGE, "--max-work needs a count of multiply-adds from 1"), -1;
		return 0;
	case OPT_MAX_VALUES:
		if (fmt_parse_u64(arg, UINT64_MAX, &a->o.max_values, e) != FMT_OK || a->o.max_values == 0)
			return fmt_fail(e, FMT_USAGE, "--max-values needs a count of values from 1"), -1;
		return 0;
	}
	return fmt_fail(e, FMT_USAGE, "unhandled option"), -1;
}

static const fmt_cli_tool tool = {
	.name = TOOL,
	.synopsis = "[OPTIONS] MODEL.nk --input VALUES\n--test [OPTIONS] MODEL.nk...\n--bench N [--profile] MODEL.nk",
	.about = "Run a netkit .nk network (float v3 or int8 v4) on one input, run its embedded\n"
		 "regression tests, or time it.",
	.options = options,
	.footer = "Exit status: 0 ok, 2 usage, 3 I/O error, 4 invalid model or input, 5 unsupported\n"
		  "version or layer, or more work than --max-work or values than --max-values,\n"
		  "11 an embedded test failed.",
	.on_option = on_option,
};

typedef struct loaded {
	fmt_model m;
	const nk_model *nm;
	nk_engine en;
	int over_limit;          /* refused for its work (--max-work) or values (--max-values), not for what it is */
	int unplanned;           /* a valid model the engine could not plan (its arena, --profile) */
} loaded;

/* Where the failure records of models go (NULL: none). */
static FILE *records(const nk_run_opts *o)
{
	return o->quiet ? NULL : stdout;
}

/* Open, check (its work; with an input, its values: with_input) and plan path. */
static fmt_kind load(loaded *L, const char *path, const nk_run_opts *o, int with_input, fmt_err *e)
{
	fmt_report_input(records(o), path, NULL);
	L->over_limit = L->unplanned = 0;
	fmt_kind k = fmt_model_open(&L->m, path, &fmt_driver_nk, e);
	if (k != FMT_OK)
		return k;
	L->nm = fmt_nk_model_of(&L->m);
	k = fmt_nk_check_work(L->nm, o->max_work, e);
	if (k == FMT_OK && with_input)
		k = fmt_nk_check_values(L->nm, o->max_values, e);
	L->over_limit = k != FMT_OK;
	if (k != FMT_OK) {
		fmt_model_free(&L->m);
		return k;
	}
	k = fmt_nk_engine_init(&L->en, L->nm, fmt_nk_kernels_get(), e);
	if (k == FMT_OK && o->profile)
		k = fmt_nk_engine_profile(&L->en, e);
	if (k != FMT_OK) {
		L->unplanned = k != FMT_IO; /* out of memory is not the model's failure */
		fmt_nk_engine_free(&L->en);
		fmt_model_free(&L->m);
	}
	return k;
}

static void unload(loaded *L)
{
	fmt_nk_engine_free(&L->en);
	fmt_model_free(&L->m);
}

static fmt_kind gather_input(const input_opts *in, const nk_model *nm, int quantize, void **dst, fmt_err *e)
{
	nk_values v = { 0 };
	fmt_kind k;
	if (in->list)
		k = fmt_nk_parse_value_list(in->list, &v, e);
	else if (in->json)
		k = fmt_nk_parse_value_json(in->json, strlen(in->json), &v, e);
	else if (in->file)
		k = fmt_nk_read_value_file(in->file, nm, &v, e);
	else
		k = fmt_nk_random_values(in->have_seed ? in->seed : 1, nm, &v, e);
	if (k == FMT_OK && !(*dst = malloc(nm->input_count * sizeof(float))))
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		k = fmt_nk_values_to_input(&v, nm, quantize, *dst, e);
	fmt_nk_values_free(&v);
	return k;
}

/* A model that failed: its error, and with --json its failure record on stdout. */
static int report(const char *path, const fmt_err *e, const nk_run_opts *o)
{
	return fmt_report_failed(records(o), TOOL, path, e->file[0] ? NULL : path, e, o->json);
}

static int run_tests(char **paths, int n, const nk_run_opts *o)
{
	unsigned passed = 0, failed = 0;
	int status = 0;
	for (int i = 0; i < n; i++) {
		loaded L;
		fmt_err e;
		fmt_err_clear(&e);
		fmt_kind k = load(&L, paths[i], o, 0, &e);
		if (k == FMT_OK) {
			k = nk_report_tests(o->out, paths[i], L.nm, &L.en, o, &passed, &failed, &e);
			unload(&L);
		} else if (!L.over_limit) {
			failed++; /* a model that cannot be loaded counts as one failed case (§14) */
			if (L.unplanned)
				e.kind = FMT_TEST_FAILED; /* a failed suite, as fmt-verify --run-tests says */
		}
		/* the file's own code: 11 for its failed cases, 3 or 4 when it cannot be opened or read */
		if (k != FMT_OK) {
			int code = report(paths[i], &e, o);
			status = code > status ? code : status;
		}
	}
	if (o->json) {
		json_t *j = json_pack("{s:I,s:I}", "passed", (json_int_t)passed, "failed", (json_int_t)failed);
		fmt_json_line(o->out, j);
		json_decref(j);
	} else {
		printf("%u passed, %u failed\n", passed, failed);
	}
	return status;
}

static int run_model(const char *path, const input_opts *in, const nk_run_opts *o)
{
	loaded L;
	fmt_err e;
	void *input = NULL;
	fmt_err_clear(&e);
	fmt_kind k = load(&L, path, o, 1, &e);
	if (k != FMT_OK)
		return report(path, &e, o);
	k = gather_input(in, L.nm, o->quantize_input, &input, &e);
	if (k == FMT_OK)
		k = o->bench ? nk_report_bench(o->out, path, L.nm, &L.en, input, o, &e)
			     : nk_report_run(o->out, path, L.nm, &L.en, input, o, &e);
	free(input);
	unload(&L);
	return k == FMT_OK ? 0 : report(path, &e, o);
}

static int usage_error(const char *msg)
{
	return fmt_cli_usage_error(&tool, msg);
}

/* What the options say together; a message when they do not fit. */
static const char *check_args(const args *a, int n_models)
{
	if (n_models < 1)
		return "no model file";
	if (a->sources > 1)
		return "give one input: --input, --input-file, --input-json or --random";
	if (a->o.top && !a->o.json)
		return "--top goes with --json";
	if (a->o.raw && (a->o.json || a->test || a->o.bench || a->o.profile))
		return "--raw writes the output alone (not with --json, --test, --bench or --profile)";
	if (a->o.raw && isatty(STDOUT_FILENO))
		return "--raw writes binary; refusing to write it to a terminal (redirect or pipe it)";
	if (a->test && (a->sources || a->o.bench))
		return "--test takes models only (their inputs are embedded)";
	if (!a->test && n_models > 1)
		return "one model at a time (several only with --test)";
	if (!a->test && !a->sources && !a->o.bench && !a->o.profile)
		return "Missing required --input <a,b,c,...> (or --input-file, --input-json, --random)";
	return NULL;
}

int main(int argc, char **argv)
{
	args a = { .o.max_work = NK_DEFAULT_MAX_WORK, .o.max_values = NK_DEFAULT_MAX_VALUES };
	fmt_cli cli;
	if (!fmt_cli_parse(&tool, argc, argv, &a, &cli))
		return cli.exit_code;
	a.o.json = cli.common.json;
	a.o.quiet = cli.common.quiet;
	a.o.verbose = cli.common.verbose;
	a.o.out = fmt_cli_records(&cli.common);
	const char *why = check_args(&a, cli.n_operands);
	if (why)
		return usage_error(why);
	int status = a.test ? run_tests(cli.operands, cli.n_operands, &a.o) : run_model(cli.operands[0], &a.in, &a.o);
	return fmt_cli_finish(&tool, &cli, status);
}
