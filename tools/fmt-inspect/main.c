/* fmt-inspect: headers, tensors, metadata of model files, as text or JSON Lines. */
#include <stdio.h>
#include "fmt/cli.h"
#include "fmt/out.h"
#include "fmt/registry.h"
#include "inspect.h"

#define TOOL "fmt-inspect"

enum { OPT_TENSORS = FMT_OPT_FIRST_TOOL_OPTION, OPT_METADATA, OPT_TREE, OPT_FULL, OPT_FORMAT };

typedef struct inspect_args {
	inspect_opts report;
	const fmt_driver *forced;   /* --format */
} inspect_args;

static const fmt_cli_option options[] = {
	{ FMT_CLI_OPT("json", 'j', NULL, "one JSON object per file (JSON Lines)") },
	{ FMT_CLI_OPT("tensors", OPT_TENSORS, NULL, "only the tensor table") },
	{ FMT_CLI_OPT("metadata", OPT_METADATA, NULL, "only the metadata") },
	{ FMT_CLI_OPT("tree", OPT_TREE, NULL, "the parameter tree built from dotted tensor names") },
	{ FMT_CLI_OPT("tensor", 't', "NAME", "only this tensor"), .complete = FMT_COMPLETE_TENSOR },
	{ FMT_CLI_OPT("stats", 's', NULL, "with --tensor: min, max, mean, std, NaN/Inf counts, first values") },
	{ FMT_CLI_OPT("full", OPT_FULL, NULL, "do not abbreviate metadata arrays longer than 16 items") },
	{ FMT_CLI_OPT("format", OPT_FORMAT, "NAME", "skip detection:"), .complete = FMT_COMPLETE_FORMAT },
	{ FMT_CLI_OPT("quiet", 'q', NULL, "print nothing on success") },
	{ FMT_CLI_OPT("verbose", 'v', NULL, "more detail") },
	{ .name = NULL }
};

static int on_option(void *ctx, int id, const char *arg, fmt_err *e)
{
	inspect_args *a = ctx;
	switch (id) {
	case OPT_TENSORS: a->report.sections |= SECTION_TENSORS; return 0;
	case OPT_METADATA: a->report.sections |= SECTION_METADATA; return 0;
	case OPT_TREE: a->report.sections |= SECTION_TREE; return 0;
	case 't': a->report.tensor = arg; return 0;
	case 's': a->report.stats = 1; return 0;
	case OPT_FULL: a->report.full = 1; return 0;
	case OPT_FORMAT:
		a->forced = fmt_driver_by_name(arg);
		return a->forced ? 0 : (fmt_fail(e, FMT_USAGE, "unknown --format (see --help for the names)"), -1);
	}
	return fmt_fail(e, FMT_USAGE, "unhandled option"), -1;
}

static const fmt_cli_tool tool = {
	.name = TOOL,
	.synopsis = "[OPTIONS] FILE...",
	.about = "Show the format, tensors and metadata of model files (safetensors, sharded\n"
		 "safetensors index, GGUF). Reads only the headers unless --stats is given.",
	.options = options,
	.footer = "FILE may be - for standard input. Exit status: 0 ok, 2 usage, 3 I/O error,\n"
		  "4 invalid format, 5 unsupported version or type; the highest over all files.",
	.format_names = fmt_driver_names,
	.on_option = on_option,
};

static fmt_kind inspect_file(const char *path, const fmt_driver *forced, const inspect_opts *o,
			     const fmt_common_opts *common)
{
	fmt_model m;
	fmt_err e;
	fmt_err_clear(&e);
	fmt_kind k = fmt_model_open(&m, path, forced, &e);
	if (k == FMT_OK) {
		k = inspect_report(common->quiet ? NULL : stdout, &m, o, &e);
		fmt_model_free(&m);
	}
	if (k != FMT_OK)
		fmt_report_error(stderr, TOOL, path, &e, common->json);
	return k;
}

int main(int argc, char **argv)
{
	inspect_args a = { .report = { .sections = 0 } };
	fmt_cli cli;
	if (!fmt_cli_parse(&tool, argc, argv, &a, &cli))
		return cli.exit_code;
	if (cli.n_operands == 0)
		return fmt_cli_usage_error(&tool, "no input file");
	if (a.report.stats && !a.report.tensor)
		return fmt_cli_usage_error(&tool, "--stats needs --tensor NAME");
	if (!a.report.sections)
		a.report.sections = SECTION_ALL;
	a.report.json = cli.common.json;
	int status = 0;
	for (int i = 0; i < cli.n_operands; i++) {
		int code = fmt_kind_exit(inspect_file(cli.operands[i], a.forced, &a.report, &cli.common));
		if (code > status)
			status = code;
	}
	return fmt_cli_finish(&tool, &cli, status);
}
