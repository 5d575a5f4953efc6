/* fmt-shard: split and merge shard sets; pack and unpack bundles. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/cli_keys.h"
#include "fmt/format_options.h"
#include "fmt/out.h"
#include "fmt/report.h"
#include "shard.h"

enum { OPT_MAX_SIZE = FMT_OPT_FIRST_TOOL_OPTION, OPT_MAX_TENSORS, OPT_NO_TFS, OPT_DRY_RUN, OPT_NO_VERIFY, OPT_LIST,
       OPT_FRACTIONS, OPT_SEED, OPT_STRATIFY, OPT_ROWS, OPT_ALLOW_EXPIRED, OPT_CARD };

/* Subcommands, in the order of their bits in fmt_cli_option.commands. */
enum { CMD_SPLIT, CMD_MERGE, CMD_PACK, CMD_UNPACK, CMD_CONCAT };
/* Options that exclude each other (fmt_cli_option.group). */
enum { GROUP_LIMIT = 1, GROUP_KEY };
#define ONLY(cmd) (1u << (cmd))
#define MERGING (ONLY(CMD_MERGE) | ONLY(CMD_CONCAT))

static const fmt_cli_command commands[] = {
	{ "split", "cut a model into a shard set of the same format" },
	{ "merge", "write a shard set back as one file" },
	{ "pack", "bundle a set into a tar with a manifest of SHA-256 digests" },
	{ "unpack", "extract a bundle, checking every member" },
	{ "concat", "datasets: the same as merge" },
	{ NULL, NULL }
};

static const fmt_cli_option options[] = {
	{ FMT_CLI_OPT("max-size", OPT_MAX_SIZE, "SIZE", "split: at most SIZE of tensor data per shard (4GB, 500MB,\n"
		      "2GiB); without --max-size or --max-tensors, by format:\n"),
	  .commands = ONLY(CMD_SPLIT), .help_more = split_defaults_text, .group = GROUP_LIMIT },
	{ FMT_CLI_OPT("max-tensors", OPT_MAX_TENSORS, "N", "split: at most N tensors per shard"),
	  .commands = ONLY(CMD_SPLIT), .group = GROUP_LIMIT },
	{ FMT_CLI_OPT("no-tensor-first-split", OPT_NO_TFS, NULL, "split: the first shard holds only metadata"),
	  .commands = ONLY(CMD_SPLIT), .help_more = empty_first_text },
	{ FMT_CLI_OPT("dry-run", OPT_DRY_RUN, NULL, "split: print the plan (files, tensors, bytes); write nothing"),
	  .commands = ONLY(CMD_SPLIT) },
	{ FMT_CLI_OPT("list", OPT_LIST, NULL, "split: print the names of the files the split would write, one\n"
		      "per line (with --json: one object, \"files\"); write nothing"),
	  .commands = ONLY(CMD_SPLIT) },
	{ FMT_CLI_OPT("fractions", OPT_FRACTIONS, "F,F[,F]", "split a dataset: into parts of these fractions of its\n"
		      "rows (adding up to 1): train,test or train,validation,test"),
	  .commands = ONLY(CMD_SPLIT) },
	{ FMT_CLI_OPT("seed", OPT_SEED, "S", "split --fractions: which rows go where (default 0): the same\n"
		      "seed and input, the same split"), .commands = ONLY(CMD_SPLIT) },
	{ FMT_CLI_OPT("stratify", OPT_STRATIFY, "COLUMN", "split --fractions: the rows of each value of COLUMN\n"
		      "spread over the parts in proportion, the parts' sizes kept"), .commands = ONLY(CMD_SPLIT) },
	{ FMT_CLI_OPT("rows", OPT_ROWS, "N", "split a dataset: at most N rows per file"), .commands = ONLY(CMD_SPLIT) },
	{ FMT_CLI_OPT("allow-expired", OPT_ALLOW_EXPIRED, NULL, "datasets: read the rows of an .ald whose licence has\n"
		      "expired (said on stderr); without it that is exit 10"), .commands = ONLY(CMD_SPLIT) | MERGING },
	{ FMT_CLI_OPT("card", OPT_CARD, "FILE", "datasets: write each .ald with the card in FILE (JSON, as\n"
		      "fmt-convert --card takes) instead of the input's"),
	  .commands = ONLY(CMD_SPLIT) | MERGING, .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("compression", 'c', "CODEC", "datasets: compress the parts (.ald, Arrow IPC, Parquet) with\n"
		      "CODEC, as fmt-convert --compression takes it (default: the\n"
		      "format's, not the input's)"),
	  .commands = ONLY(CMD_SPLIT) | MERGING },
	{ FMT_CLI_OPT("no-verify", OPT_NO_VERIFY, NULL, "split, merge: do not verify the input's digests first"),
	  .commands = ONLY(CMD_SPLIT) | MERGING },
	{ FMT_CLI_OPT("output", 'o', "PATH", "split: PREFIX, without the set's extension if it has it\n"
		      "(default: INPUT without its extension), or\n"
		      "the directory of a dataset's parts; merge, pack: the file\n"
		      "to write"),
	  .commands = ONLY(CMD_SPLIT) | MERGING | ONLY(CMD_PACK), .complete = FMT_COMPLETE_FILE, .flags = FMT_CLI_WRITTEN },
	{ FMT_CLI_OPT("directory", 'C', "DIR", "unpack: extract into DIR (default: the current directory)"),
	  .commands = ONLY(CMD_UNPACK), .complete = FMT_COMPLETE_DIR },
	{ FMT_CLI_OPT("hmac-key", FMT_OPT_HMAC_KEY, NULL, "unpack: verify the set's signature with the per-user key\n"
		      "(every member must then be covered by it)"), .commands = ONLY(CMD_UNPACK),
	  .group = GROUP_KEY },
	{ FMT_CLI_OPT("secret-file", FMT_OPT_SECRET_FILE, "FILE", "unpack: ... with the team secret in FILE"),
	  .commands = ONLY(CMD_UNPACK), .complete = FMT_COMPLETE_FILE, .group = GROUP_KEY },
	{ FMT_CLI_OPT("key-secret-file", FMT_OPT_SECRET_FILE, "FILE", "the same as --secret-file"),
	  .commands = ONLY(CMD_UNPACK), .complete = FMT_COMPLETE_FILE, .group = GROUP_KEY },
	{ FMT_CLI_OPT("secret-env", FMT_OPT_SECRET_ENV, "NAME", "unpack: ... with the team secret in variable NAME"),
	  .commands = ONLY(CMD_UNPACK), .complete = FMT_COMPLETE_ENV, .group = GROUP_KEY },
	{ FMT_CLI_OPT("secret-prompt", FMT_OPT_SECRET_PROMPT, NULL, "unpack: ... with a team secret typed at a prompt"),
	  .commands = ONLY(CMD_UNPACK), .group = GROUP_KEY },
	FMT_CLI_TRUST_OPTIONS(ONLY(CMD_UNPACK)),
	{ FMT_CLI_OPT("force", 'f', NULL, "overwrite existing outputs") },
	{ FMT_CLI_OPT("threads", 'T', "N", "worker threads (default: number of cores)") },
	{ FMT_CLI_OPT("json", 'j', NULL, "report as one JSON object") },
	{ FMT_CLI_OPT("quiet", 'q', NULL, "print nothing on success") },
	{ FMT_CLI_OPT("verbose", 'v', NULL, "more detail (tensors of each shard, member digests)") },
	{ .name = NULL }
};

/* "0.8,0.1,0.1": each a number; their sum is checked with the split. */
static int parse_fractions(const char *arg, shard_opts *o, fmt_err *e)
{
	const char *p = arg;
	o->n_fractions = 0;
	for (;;) {
		char *end;
		double f = strtod(p, &end);
		if (end == p || (*end && *end != ',') || o->n_fractions == sizeof o->fractions / sizeof o->fractions[0])
			return fmt_fail(e, FMT_USAGE, "--fractions takes numbers separated by commas (0.8,0.1,0.1), not '%s'",
					arg), -1;
		o->fractions[o->n_fractions++] = f;
		if (!*end)
			return 0;
		p = end + 1;
	}
}

static int on_option(void *ctx, int id, const char *arg, fmt_err *e)
{
	shard_opts *o = ctx;
	if (fmt_cli_key_option(id, arg, &o->keys) || fmt_cli_trust_option(id, arg, &o->trust))
		return 0;
	switch (id) {
	case 'f': o->force = 1; return 0;
	case 'o': o->output = arg; return 0;
	case 'C': o->dir = arg; return 0;
	case OPT_NO_TFS: o->no_tensor_first_split = 1; return 0;
	case OPT_DRY_RUN: o->dry_run = 1; return 0;
	case OPT_LIST: o->list = 1; return 0;
	case OPT_NO_VERIFY: o->no_verify = 1; return 0;
	case OPT_ALLOW_EXPIRED: o->allow_expired = 1; return 0;
	case OPT_FRACTIONS: return parse_fractions(arg, o, e);
	case OPT_SEED:
		o->seed_given = 1;
		return fmt_parse_u64(arg, UINT64_MAX, &o->seed, e) == FMT_OK ? 0 : -1;
	case OPT_STRATIFY: o->stratify = arg; return 0;
	case OPT_CARD:
		o->writer_option = o->writer_option ? o->writer_option : "--card";
		return fmt_format_option_parse(o->drvopts, "card", FMT_FOPT_TABLES, arg, e);
	case 'c':
		o->writer_option = o->writer_option ? o->writer_option : "--compression";
		o->compression = arg;
		return 0;
	case OPT_ROWS:
		if (fmt_parse_u64(arg, UINT64_MAX, &o->rows_per_shard, e) != FMT_OK)
			return -1;
		return o->rows_per_shard ? 0 : (fmt_fail(e, FMT_USAGE, "--rows must be above 0"), -1);
	case OPT_MAX_SIZE:
		if (fmt_parse_size(arg, &o->max_size, e) != FMT_OK)
			return -1;
		return o->max_size ? 0 : (fmt_fail(e, FMT_USAGE, "--max-size must be above 0"), -1);
	case OPT_MAX_TENSORS:
		if (fmt_parse_u64(arg, UINT32_MAX, &o->max_tensors, e) != FMT_OK)
			return -1;
		return o->max_tensors ? 0 : (fmt_fail(e, FMT_USAGE, "--max-tensors must be above 0"), -1);
	}
	return fmt_fail(e, FMT_USAGE, "unhandled option"), -1;
}

static const fmt_cli_tool tool = {
	.name = TOOL,
	.synopsis = "split INPUT [--max-size SIZE | --max-tensors N] [-o PREFIX] [--list] [OPTIONS]\n"
		    "split DATASET (--fractions F,F[,F] [--seed S] [--stratify COLUMN] | --rows N) -o DIR\n"
		    "merge INDEX_OR_SHARD -o OUTPUT [OPTIONS]\n"
		    "merge|concat DATASET... -o OUTPUT [OPTIONS]\n"
		    "pack SET -o BUNDLE.tar[.zst] [OPTIONS]\n"
		    "unpack BUNDLE [-C DIR] [-p PUBKEY | -P BASE64 | --trusted-keys DIR | KEY OPTION] [OPTIONS]",
	.about = "Split a model into a shard set of the same format (the formats with sets are\n"
		 "listed under --max-size), merge a set back into one file, and pack a set into a tar\n"
		 "bundle with a manifest of SHA-256 digests (zstd-compressed when BUNDLE ends in .zst),\n"
		 "or unpack and check one. A dataset (CSV, JSON Lines, Arrow, .ald, ...) is split into\n"
		 "train/validation/test parts or files of N rows, written as one set in its format;\n"
		 "merge (concat) writes datasets of the same schema one after another into one.",
	.commands = commands,
	.options = options,
	.footer = "Exit status: 0 ok, 2 usage (or an existing output), 3 I/O error, 4 invalid format\n"
		  "(also an unsafe bundle member), 5 unsupported, 6 checksum mismatch, 7 signature\n"
		  "missing, wrong or not covering a member, 9 shard set or bundle members\n"
		  "inconsistent with the index or manifest, 10 an .ald whose licence expired\n"
		  "(--allow-expired), 70 internal error.",
	.on_option = on_option,
};

static fmt_kind (*const run[])(const char *input, const shard_opts *o, fmt_err *e) = {
	[CMD_SPLIT] = cmd_split, [CMD_MERGE] = cmd_merge, [CMD_PACK] = cmd_pack, [CMD_UNPACK] = cmd_unpack,
	[CMD_CONCAT] = cmd_merge,
};

int main(int argc, char **argv)
{
	fmt_drvopt_sets drvopts = { 0 };
	shard_opts o = { .drvopts = &drvopts };
	fmt_cli cli;
	fmt_err e;
	fmt_err_clear(&e);
	if (!fmt_cli_parse(&tool, argc, argv, &o, &cli))
		return cli.exit_code;
	int merging = cli.command == CMD_MERGE || cli.command == CMD_CONCAT;
	if (cli.n_operands < 1 || (cli.n_operands > 1 && !merging))
		return fmt_cli_usage_error(&tool, cli.n_operands < 1 ? "no input file" : "too many arguments");
	o.cli = &cli;
	o.inputs = (const char **)cli.operands;
	o.n_inputs = (size_t)cli.n_operands;
	if (cli.command != CMD_SPLIT && cli.command != CMD_UNPACK && !o.output)
		return fmt_cli_usage_error(&tool, "this subcommand needs -o OUTPUT");
	if (o.max_size && o.max_tensors)
		return fmt_cli_usage_error(&tool, "--max-size and --max-tensors exclude each other");
	o.common = cli.common;
	if (!o.common.threads)
		o.common.threads = fmt_cpu_count();
	const char *input = cli.operands[0];
	/* one record for the operation, named by its input; none when stdout carries the output */
	int quiet_stdout = o.common.quiet || (o.output && strcmp(o.output, "-") == 0);
	FILE *records = quiet_stdout ? NULL : stdout;
	fmt_report_input(records, input, NULL);
	fmt_kind k = fmt_drvopt_load(o.drvopts, &e); /* --card's file */
	if (k == FMT_OK)
		k = run[cli.command](input, &o, &e);
	fmt_drvopt_sets_free(o.drvopts);
	if (k != FMT_OK)
		fmt_report_failed(records, TOOL, input, input, &e, o.common.json);
	return fmt_cli_finish(&tool, &cli, fmt_kind_exit(k));
}
