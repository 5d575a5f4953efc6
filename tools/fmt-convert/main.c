/* fmt-convert: move a model between formats, with dtype conversion and quantization; move a
 * dataset between CSV, JSON Lines, Arrow IPC and .ald. */
#include <stdio.h>
#include <string.h>
#include "fmt/out.h"
#include "fmt/report.h"
#include "convert.h"

/* Where the record of a conversion that failed goes: stdout with --json, unless it carries the
 * output's bytes (NULL then). */
static FILE *records(const char *output, const fmt_convert_opts *o)
{
	int data_on_stdout = strcmp(output, "-") == 0 && !o->dry_run;
	return data_on_stdout ? NULL : o->out;
}

int main(int argc, char **argv)
{
	static convert_args a;
	const fmt_cli_tool *tool = convert_tool(&a);
	fmt_cli cli;
	fmt_err e;
	fmt_err_clear(&e);
	if (!fmt_cli_parse(tool, argc, argv, &a, &cli))
		return cli.exit_code;
	if (a.o.in_place)
		return convert_edit_in_place(&a, &cli, tool);
	if (a.embed.inputs || a.embed.labels || a.embed.tolerance_given || a.embed.calibration)
		return convert_network(&a, &cli, tool);
	const char *bad = convert_check_line(&a, &cli);
	if (bad)
		return fmt_cli_usage_error(tool, bad);
	const char *input = cli.operands[0], *output = cli.operands[1];
	if (fmt_cli_check_output(&cli, "OUT", output, &e) != FMT_OK)
		return fmt_cli_usage_error(tool, e.msg);
	convert_take_common(&a.o, &cli.common);
	if ((bad = convert_output(&a, output)))
		return fmt_cli_usage_error(tool, bad);
	/* every usage check before the key, whose passphrase may be asked for */
	if ((bad = convert_kind_checks(&a, output)) && a.msg_nomem)
		return fmt_report_failed(NULL, tool->name, NULL, NULL, &(fmt_err){ .kind = FMT_IO, .msg = "out of memory" }, 0);
	if (bad)
		return fmt_cli_usage_error(tool, bad);
	fmt_kind k = convert_load_sign_key(&a.o, &e);
	fmt_report_input(records(output, &a.o), input, NULL);
	if (k == FMT_OK)
		k = a.o.to ? fmt_pipeline_run(input, output, &a.o, &e) : fmt_pipeline_dataset(input, output, &a.o, &e);
	if (k != FMT_OK)
		fmt_report_failed(records(output, &a.o), TOOL, input, NULL, &e, a.o.json);
	return fmt_cli_finish(tool, &cli, fmt_kind_exit(k));
}
