/* fmt-convert --embed-tests INPUTS [--labels FILE] [--tolerance T] IN.nk OUT.nk: the network of
 * IN.nk with a TCAS block of those inputs, the expected outputs computed by the library's .nk
 * runtime (fmt_nk_embed_tests). Not a driver option: it runs the network, which the runtime
 * does above the drivers, and writes no other format. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/io.h"
#include "fmt/nkrt.h"
#include "fmt/out.h"
#include "fmt/report.h"
#include "convert.h"

/* A .nk file has at most 100 layers of checked sizes; its payload may be large. */
#define MAX_NK_FILE (1ull << 31)

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

/* The file with its tests, in memory, from the input's bytes and the INPUTS (and labels). */
static fmt_kind embed(const convert_args *a, const char *input, uint8_t **out, size_t *n_out, size_t *n_cases,
		      fmt_err *e)
{
	char *data = NULL;
	size_t size = 0;
	nk_model nm;
	nk_embed_set set = { 0 };
	fmt_kind k = fmt_read_file(input, MAX_NK_FILE, &data, &size, e);
	if (k != FMT_OK)
		return k;
	if ((k = fmt_nk_parse(&nm, data, size, e)) != FMT_OK) {
		fmt_err_file(e, input);
		free(data);
		return k;
	}
	k = fmt_nk_read_embed_inputs(a->embed.inputs, &nm, &set, e);
	if (k == FMT_OK && a->embed.labels)
		k = fmt_nk_read_embed_labels(a->embed.labels, &set, e);
	if (k == FMT_OK)
		k = fmt_nk_embed_tests(data, size, set.cases, set.n, a->embed.tolerance_given ? a->embed.tolerance : 1e-4f,
				       out, n_out, e);
	*n_cases = set.n;
	fmt_nk_embed_cases_free(&set);
	fmt_nk_free(&nm);
	free(data);
	return k;
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

static void report_ok(const char *input, const char *output, size_t n_cases, float tolerance, size_t bytes, const fmt_common_opts *c)
{
	if (c->json) {
		json_t *j = json_pack("{s:o,s:o,s:s,s:I,s:f,s:I}", "input", fmt_json_string(input, strlen(input)), "output",
				      fmt_json_string(output, strlen(output)), "format",
				      "nk", "test_cases", (json_int_t)n_cases, "tolerance", (double)tolerance, "bytes",
				      (json_int_t)bytes);
		fmt_json_line(stdout, j);
		json_decref(j);
	} else if (!c->quiet) {
		fmt_out_escaped(stdout, output, strlen(output));
		printf(": %zu embedded test case%s (tolerance %g), %zu bytes\n", n_cases, n_cases == 1 ? "" : "s",
		       (double)tolerance, bytes);
	}
}

int convert_embed_tests(convert_args *a, fmt_cli *cli, const fmt_cli_tool *tool)
{
	if (!a->embed.inputs)
		return fmt_cli_usage_error(tool, "--labels and --tolerance go with --embed-tests");
	if (a->embed.other_opt) {
		snprintf(a->msg, sizeof a->msg, "--embed-tests writes the same network with its tests: not with --%s",
			 a->embed.other_opt);
		return fmt_cli_usage_error(tool, a->msg);
	}
	if (cli->n_operands != 2)
		return fmt_cli_usage_error(tool, "--embed-tests takes INPUT.nk and OUTPUT.nk");
	const char *input = cli->operands[0], *output = cli->operands[1];
	fmt_err e;
	fmt_err_clear(&e);
	uint8_t *b = NULL;
	size_t n = 0, n_cases = 0;
	fmt_kind k = fmt_check_distinct(input, output, &e);
	if (k == FMT_OK)
		k = embed(a, input, &b, &n, &n_cases, &e);
	if (k == FMT_OK)
		k = write_out(output, b, n, a->o.force, &e);
	free(b);
	if (k == FMT_OK)
		report_ok(input, output, n_cases, a->embed.tolerance_given ? a->embed.tolerance : 1e-4f, n, &cli->common);
	else
		fmt_report_failed(cli->common.quiet ? NULL : stdout, TOOL, input, NULL, &e, cli->common.json);
	return fmt_cli_finish(tool, cli, fmt_kind_exit(k));
}
