/* fmt-inspect: headers, tensors, metadata of model files; schema, facts and rows of datasets;
 * as text or JSON Lines. */
#include <stdio.h>
#include <string.h>
#include "fmt/bundle.h"
#include "fmt/cli.h"
#include "fmt/cli_keys.h"
#include "fmt/encrypt.h"
#include "fmt/out.h"
#include "fmt/prompt.h"
#include "fmt/report.h"
#include "fmt/strbuf.h"
#include "fmt/table.h"
#include "fmt/registry.h"
#include "inspect.h"

enum { OPT_TENSORS = FMT_OPT_FIRST_TOOL_OPTION, OPT_METADATA, OPT_TREE, OPT_FULL, OPT_FORMAT, OPT_SCHEMA,
       OPT_HEAD, OPT_ALLOW_EXPIRED, OPT_QUALITY };

typedef struct inspect_args {
	inspect_opts report;
	const char *forced;         /* --format */
	fmt_decrypt_opts decrypt;
} inspect_args;

static const fmt_cli_option options[] = {
	{ FMT_CLI_OPT("json", 'j', NULL, "one JSON object per file (JSON Lines)") },
	{ FMT_CLI_OPT("tensors", OPT_TENSORS, NULL, "only the tensor table") },
	{ FMT_CLI_OPT("metadata", OPT_METADATA, NULL, "only the metadata") },
	{ FMT_CLI_OPT("tree", OPT_TREE, NULL, "the parameter tree built from dotted tensor names") },
	{ FMT_CLI_OPT("tensor", 't', "NAME", "only this tensor"), .complete = FMT_COMPLETE_TENSOR },
	{ FMT_CLI_OPT("stats", 's', NULL, "with --tensor: min, max, mean, std, NaN/Inf counts, first values;\n"
		      "for a dataset: count, nulls, min, max, mean (distinct strings) per column") },
	{ FMT_CLI_OPT("schema", OPT_SCHEMA, NULL, "datasets: only the schema") },
	{ FMT_CLI_OPT("quality", OPT_QUALITY, NULL, "datasets: per column null rate, distinct values, constant\n"
		      "columns, min, max, mean, std, p1, p50, p99; duplicate rows\n"
		      "(estimates and their error said in the report)") },
	{ FMT_CLI_OPT("head", OPT_HEAD, "N", "datasets: the first N rows (a table, or with --json one\n"
		      "object per row in \"head\"); decodes only what holds them") },
	FMT_CLI_DECRYPT_OPTIONS,
	FMT_CLI_IDENTITY_PASS_OPTIONS,
	{ FMT_CLI_OPT("allow-expired", OPT_ALLOW_EXPIRED, NULL, ".ald: --head and --stats read the rows although the\n"
		      "licence has expired (said on stderr); without it that is exit 10") },
	{ FMT_CLI_OPT("full", OPT_FULL, NULL, "do not abbreviate metadata arrays longer than 16 items;\nwith --json also \"metadata_typed\": every value with its\ntype, as fmt-convert --set-from reads it") },
	{ FMT_CLI_OPT("format", OPT_FORMAT, "NAME", "skip detection:"), .complete = FMT_COMPLETE_FORMAT },
	{ FMT_CLI_OPT("quiet", 'q', NULL, "print nothing on success") },
	{ FMT_CLI_OPT("verbose", 'v', NULL, "more detail") },
	{ .name = NULL }
};

static int on_option(void *ctx, int id, const char *arg, fmt_err *e)
{
	inspect_args *a = ctx;
	if (fmt_cli_decrypt_option(id, arg, &a->decrypt))
		return 0;
	switch (id) {
	case OPT_TENSORS: a->report.sections |= SECTION_TENSORS; return 0;
	case OPT_METADATA: a->report.sections |= SECTION_METADATA; return 0;
	case OPT_TREE: a->report.sections |= SECTION_TREE; return 0;
	case 't': a->report.tensor = arg; return 0;
	case 's': a->report.stats = 1; return 0;
	case OPT_FULL: a->report.full = 1; return 0;
	case OPT_FORMAT:
		a->forced = arg;
		return fmt_format_option_check(arg, e) == FMT_OK ? 0 : -1;
	case OPT_SCHEMA: a->report.schema = 1; return 0;
	case OPT_QUALITY: a->report.quality = 1; return 0;
	case OPT_ALLOW_EXPIRED: a->report.allow_expired = 1; return 0;
	case OPT_HEAD:
		if (fmt_parse_u64(arg, UINT32_MAX, &a->report.head, e) != FMT_OK)
			return fmt_fail(e, FMT_USAGE, "--head takes a row count"), -1;
		a->report.head_given = 1;
		return 0;
	}
	return fmt_fail(e, FMT_USAGE, "unhandled option"), -1;
}

static const fmt_cli_tool tool = {
	.name = TOOL,
	.synopsis = "[OPTIONS] FILE...",
	.about = "Show the format, tensors and metadata of model files (safetensors, sharded\n"
		 "safetensors index, GGUF, .apsim), and the facts, schema and rows of datasets\n"
		 "(.ald, Arrow IPC, CSV, JSON Lines), and the members of tar bundles (fmt-shard pack).\n"
		 "Reads only the headers unless --stats is given (an .ald's whole report also checks\n"
		 "its CRC; --schema and --head do not; a bundle is checked as fmt-verify checks it).",
	.options = options,
	.footer = "FILE may be - for standard input. Exit status: 0 ok, 2 usage, 3 I/O error,\n"
		  "4 invalid format, 5 unsupported version or type, 6 checksum mismatch, 8 wrong or\n"
		  "missing password or key (encrypted .ald), 10 --head or --stats of an .ald whose\n"
		  "licence expired; the highest over all files.",
	.format_names = fmt_format_names,
	.on_option = on_option,
};

/* path as a bundle, a model or a dataset (a bundle found by content, as fmt-verify finds it;
 * --format names a model or table format, never a bundle). */
static fmt_kind open_input(const char *path, const char *forced, fmt_model *m, fmt_table *t, int *is_table,
			   fmt_source *bundle_stdin, int *bundle, fmt_err *e)
{
	*bundle = 0;
	if (forced)
		return fmt_open_any(path, forced, m, t, is_table, e);
	if (strcmp(path, "-") != 0) {
		*bundle = fmt_bundle_probe(path);
		return *bundle ? FMT_OK : fmt_open_any(path, NULL, m, t, is_table, e);
	}
	fmt_source src;
	fmt_kind k = fmt_bundle_open_stdin(&src, bundle, e);
	if (k == FMT_OK && *bundle)
		*bundle_stdin = src;
	else if (k == FMT_OK)
		k = fmt_open_any_source(&src, path, m, t, is_table, e);
	return k;
}

static fmt_kind inspect_file(const char *path, const char *forced, const inspect_opts *o,
			     const fmt_common_opts *common)
{
	fmt_model m;
	fmt_table t;
	fmt_source src;
	fmt_err e;
	int is_table = 0, bundle = 0;
	FILE *out = common->quiet ? NULL : stdout;
	fmt_err_clear(&e);
	fmt_report_input(out, path, NULL);
	fmt_kind k = open_input(path, forced, &m, &t, &is_table, &src, &bundle, &e);
	if (k == FMT_OK && bundle) {
		int on_stdin = strcmp(path, "-") == 0;
		k = inspect_bundle(out, path, on_stdin ? &src : NULL, o, &e);
		if (on_stdin)
			fmt_source_close(&src);
	} else if (k == FMT_OK && is_table) {
		k = inspect_dataset(out, &t, o, &e);
		fmt_table_free(&t);
	} else if (k == FMT_OK) {
		if (o->stats && !o->tensor)
			k = fmt_fail(&e, FMT_USAGE, "--stats needs --tensor NAME for a model");
		else if (o->schema || o->head_given || o->quality)
			k = fmt_fail(&e, FMT_USAGE, "--schema, --head and --quality are for datasets, not models");
		else
			k = inspect_report(out, &m, o, &e);
		fmt_model_free(&m);
	}
	if (k != FMT_OK)
		fmt_report_failed(out, TOOL, path, path, &e, common->json);
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
	const char *pass_bad = fmt_cli_pass_check(a.decrypt.passphrase.file, a.decrypt.passphrase.env, 1);
	if (pass_bad)
		return fmt_cli_usage_error(&tool, pass_bad);
	a.report.model_sections = a.report.sections != 0;
	if (!a.report.sections)
		a.report.sections = SECTION_ALL;
	a.report.json = cli.common.json;
	fmt_decrypt_keys dk;
	fmt_keyset keys = { 0 };
	fmt_err e;
	fmt_err_clear(&e);
	fmt_cli_decrypt_prompts(&a.decrypt, &cli.common);
	fmt_kind k = fmt_decrypt_keys_load(&a.decrypt, &dk, &keys, &e);
	if (k != FMT_OK)
		return fmt_cli_finish(&tool, &cli, fmt_report_failed_all(cli.common.quiet ? NULL : stdout, TOOL,
									 cli.operands, cli.n_operands, &e,
									 cli.common.json));
	a.report.dk = &dk;
	a.report.keys = &keys;
	int status = 0;
	for (int i = 0; i < cli.n_operands; i++) {
		int code = fmt_kind_exit(inspect_file(cli.operands[i], a.forced, &a.report, &cli.common));
		if (code > status)
			status = code;
	}
	fmt_decrypt_keys_free(&dk);
	return fmt_cli_finish(&tool, &cli, status);
}
