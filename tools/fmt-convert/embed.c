/* fmt-convert --embed-tests INPUTS [--labels FILE] [--tolerance T] and --dtype int8
 * --calibration INPUTS, IN OUT.nk: the network of IN (a .nk file, or a graph its driver converts,
 * e.g. ONNX), quantized to int8 from the calibration inputs (fmt_nk_quantize), then given a TCAS
 * block of the test inputs, the expected outputs computed by the library's .nk runtime
 * (fmt_nk_embed_tests). Not driver options: they run the network, which the runtime does above
 * the drivers. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "fmt/format_options.h"
#include "fmt/io.h"
#include "fmt/nkrt.h"
#include "fmt/out.h"
#include "fmt/report.h"
#include "convert.h"

int convert_embed_tolerance(convert_args *a, const char *arg, fmt_err *e)
{
	char *end;
	errno = 0;
	float t = strtof(arg, &end);
	if (end == arg || *end || errno || !isfinite(t) || t < 0)
		return fmt_fail(e, FMT_USAGE, "--tolerance needs a finite number from 0, e.g. 1e-4"), -1;
	a->embed.tolerance = t;
	a->embed.tolerance_given = 1;
	return 0;
}

static float tolerance_of(const convert_args *a)
{
	return a->embed.tolerance_given ? a->embed.tolerance : 1e-4f;
}

/* What a run made, for the report. */
typedef struct net_result {
	uint8_t *bytes;
	size_t n;
	size_t n_cases;
	int quantized;
	nk_quant_report q;
} net_result;

/* The cases of an INPUTS file for the network in bytes (max of them); calibration inputs for a
 * network that has an int8 form only. */
static fmt_kind read_cases(const char *path, const uint8_t *bytes, size_t n, size_t max, nk_embed_set *set,
			   fmt_err *e)
{
	nk_model nm;
	fmt_kind k = fmt_nk_parse(&nm, bytes, n, e);
	if (k != FMT_OK)
		return k;
	if (max == NK_MAX_CALIBRATION)
		k = fmt_nk_int8_check(&nm, e);
	if (k == FMT_OK)
		k = fmt_nk_read_inputs(path, &nm, max, set, e);
	fmt_nk_free(&nm);
	return k;
}

/* The network becomes the new bytes (a step's output). */
static fmt_kind take_bytes(net_result *r, uint8_t *bytes, size_t n)
{
	free(r->bytes);
	r->bytes = bytes;
	r->n = n;
	return FMT_OK;
}

static fmt_kind quantize(const convert_args *a, net_result *r, fmt_err *e)
{
	nk_embed_set cal = { 0 };
	uint8_t *q = NULL;
	size_t n = 0;
	fmt_kind k = read_cases(a->embed.calibration, r->bytes, r->n, NK_MAX_CALIBRATION, &cal, e);
	if (k == FMT_OK)
		k = fmt_nk_quantize(r->bytes, r->n, &cal, &q, &n, &r->q, e);
	fmt_nk_embed_cases_free(&cal);
	r->quantized = k == FMT_OK;
	return k == FMT_OK ? take_bytes(r, q, n) : k;
}

static fmt_kind embed(const convert_args *a, net_result *r, fmt_err *e)
{
	nk_embed_set set = { 0 };
	uint8_t *out = NULL;
	size_t n = 0;
	fmt_kind k = read_cases(a->embed.inputs, r->bytes, r->n, NK_MAX_CASES, &set, e);
	if (k == FMT_OK && a->embed.labels)
		k = fmt_nk_read_embed_labels(a->embed.labels, &set, e);
	if (k == FMT_OK)
		k = fmt_nk_embed_tests(r->bytes, r->n, set.cases, set.n, tolerance_of(a), &out, &n, e);
	r->n_cases = set.n;
	fmt_nk_embed_cases_free(&set);
	return k == FMT_OK ? take_bytes(r, out, n) : k;
}

/* The network format output's name asks for, or NULL. */
static const fmt_driver *network_driver(const char *output)
{
	const fmt_driver *to = fmt_driver_by_extension(output);
	return to && fmt_driver_can(to, FMT_CAP_NETWORK) ? to : NULL;
}

/* The network of input (its own bytes, or converted to the output's network format), then
 * quantized and given its tests as asked. A loader's error names the input. */
static fmt_kind make(const convert_args *a, const char *input, const char *output, net_result *r, fmt_err *e)
{
	const fmt_driver *to = network_driver(output);
	fmt_kind k = fmt_pipeline_network_bytes(input, to, &a->drvopts, &r->bytes, &r->n, e);
	if (k != FMT_OK) {
		fmt_err_file(e, input);
		return k;
	}
	if (a->embed.calibration && (k = quantize(a, r, e)) != FMT_OK) {
		/* a layer without int8 form is the network's; a value is the calibration's */
		fmt_err_file(e, k == FMT_UNSUPPORTED ? input : a->embed.calibration);
		return k;
	}
	return a->embed.inputs ? embed(a, r, e) : FMT_OK;
}

static fmt_kind write_out(const char *path, const uint8_t *b, size_t n, int force, fmt_err *e)
{
	fmt_sink k;
	fmt_kind r = fmt_sink_open(&k, path, force ? FMT_SINK_FORCE : 0, e);
	if (r != FMT_OK)
		return r;
	if ((r = fmt_sink_write(&k, b, n, e)) == FMT_OK)
		r = fmt_sink_commit(&k, e);
	else
		fmt_sink_abort(&k);
	return r;
}

static json_t *quant_json(const nk_quant_report *q)
{
	return json_pack("{s:I,s:I,s:f,s:I}", "inputs", (json_int_t)q->inputs, "argmax_agree", (json_int_t)q->argmax_agree,
			 "max_abs_error", q->max_abs_error, "max_error_input", (json_int_t)q->worst_input);
}

static json_t *record_json(const convert_args *a, const char *input, const char *output, const net_result *r)
{
	json_t *j = json_pack("{s:o,s:o,s:s}", "input", fmt_json_string(input, strlen(input)), "output",
			      fmt_json_string(output, strlen(output)), "format", "nk");
	if (r->quantized) {
		json_object_set_new(j, "dtype", json_string("int8"));
		json_object_set_new(j, "quantized_ops", json_integer(r->q.ops));
		json_object_set_new(j, "calibration", quant_json(&r->q));
	}
	if (a->embed.inputs) {
		json_object_set_new(j, "test_cases", json_integer((json_int_t)r->n_cases));
		json_object_set_new(j, "tolerance", json_real((double)tolerance_of(a)));
	}
	json_object_set_new(j, "bytes", json_integer((json_int_t)r->n));
	return j;
}

/* rec: the --json record, made before the output was written (out of memory leaves none). */
static void report_ok(const convert_args *a, const char *output, const net_result *r, const fmt_common_opts *c,
		      fmt_json_rec *rec)
{
	if (c->json) { /* a failed write is the end of the run's (fmt_cli_finish) */
		fmt_json_rec_put(fmt_cli_records(c), rec);
		return;
	}
	if (c->quiet)
		return;
	if (r->quantized) {
		fmt_out_escaped(stdout, output, strlen(output));
		printf(": int8, %u quantized operations; on the %zu calibration input%s the argmax agrees with the float "
		       "network's on %zu, the largest output difference is %g (input %zu)", r->q.ops, r->q.inputs,
		       r->q.inputs == 1 ? "" : "s", r->q.argmax_agree, r->q.max_abs_error, r->q.worst_input);
		printf(a->embed.inputs ? "\n" : ", %zu bytes\n", r->n);
	}
	if (a->embed.inputs) {
		fmt_out_escaped(stdout, output, strlen(output));
		printf(": %zu embedded test case%s (tolerance %g), %zu bytes\n", r->n_cases, r->n_cases == 1 ? "" : "s",
		       (double)tolerance_of(a), r->n);
	}
}

/* The command line's problem, or NULL. */
static const char *usage_problem(convert_args *a, const fmt_cli *cli)
{
	const char *other = a->embed.other_net_opt;
	if (!a->embed.inputs && (a->embed.labels || a->embed.tolerance_given))
		return "--labels and --tolerance go with --embed-tests";
	if (a->embed.calibration && !(a->o.dtype && strcasecmp(a->o.dtype, "int8") == 0))
		return "--calibration goes with --dtype int8";
	if (!a->embed.calibration && !other && a->o.dtype)
		other = "dtype";
	if (other) {
		snprintf(a->msg, sizeof a->msg, "%s: not with --%s",
			 a->embed.calibration ? "--calibration quantizes the network to int8"
					      : "--embed-tests writes the same network with its tests", other);
		return a->msg;
	}
	if (cli->n_operands != 2)
		return a->embed.calibration ? "--calibration takes INPUT and OUTPUT.nk" : "--embed-tests takes INPUT and OUTPUT.nk";
	/* a driver's option for another output than this network's is refused, as on conversions */
	const fmt_driver *to = network_driver(cli->operands[1]);
	fmt_err e;
	if (a->embed.dtype_or_driver && to && fmt_model_options_check(&a->drvopts, to, &e) != FMT_OK) {
		snprintf(a->msg, sizeof a->msg, "%s", e.msg);
		return a->msg;
	}
	return NULL;
}

int convert_network(convert_args *a, fmt_cli *cli, const fmt_cli_tool *tool)
{
	const char *bad = usage_problem(a, cli);
	if (bad)
		return fmt_cli_usage_error(tool, bad);
	const char *input = cli->operands[0], *output = cli->operands[1];
	fmt_err e;
	fmt_err_clear(&e);
	if (fmt_cli_check_output(cli, "OUT", output, &e) != FMT_OK)
		return fmt_cli_usage_error(tool, e.msg);
	net_result r = { 0 };
	FILE *records = cli->common.quiet ? NULL : stdout;
	fmt_report_input(records, input, NULL);
	fmt_kind k = fmt_check_distinct(input, output, &e);
	if (k == FMT_OK)
		k = make(a, input, output, &r, &e);
	fmt_json_rec rec = { 0 };
	if (k == FMT_OK && cli->common.json) {
		unsigned long since = fmt_json_memory_failures();
		k = fmt_json_rec_make(&rec, record_json(a, input, output, &r), since, &e);
	}
	if (k == FMT_OK)
		k = write_out(output, r.bytes, r.n, a->o.force, &e);
	if (k == FMT_OK)
		report_ok(a, output, &r, &cli->common, &rec);
	else
		fmt_report_failed(records, TOOL, input, NULL, &e, cli->common.json);
	fmt_json_rec_free(&rec);
	free(r.bytes);
	return fmt_cli_finish(tool, cli, fmt_kind_exit(k));
}
