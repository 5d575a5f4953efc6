/* fmt-shard: split and merge shard sets (safetensors, .apsim, GGUF); pack and unpack bundles. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "fmt/out.h"
#include "shard.h"

enum { OPT_MAX_SIZE = FMT_OPT_FIRST_TOOL_OPTION, OPT_MAX_TENSORS, OPT_NO_TFS, OPT_DRY_RUN, OPT_NO_VERIFY };

/* Which options each subcommand takes (bits of the option table's index). */
enum { B_MAX_SIZE = 1, B_MAX_TENSORS = 2, B_NO_TFS = 4, B_DRY_RUN = 8, B_NO_VERIFY = 16, B_OUTPUT = 32,
       B_DIR = 64, B_KEY = 128 };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " TOOL " split INPUT [--max-size SIZE | --max-tensors N] [-o PREFIX] [OPTIONS]\n"
		"       " TOOL " merge INDEX_OR_FIRST_SHARD -o OUTPUT [OPTIONS]\n"
		"       " TOOL " pack SET -o BUNDLE.tar[.zst] [OPTIONS]\n"
		"       " TOOL " unpack BUNDLE [-C DIR] [OPTIONS]\n"
		"Split a safetensors, .apsim or GGUF model into a shard set of the same format, merge\n"
		"a set back into one file, and pack a set into a tar bundle with a manifest of SHA-256\n"
		"digests (zstd-compressed when BUNDLE ends in .zst), or unpack and check one.\n"
		"\n"
		"      --max-size SIZE     split: at most SIZE of tensor data per shard (4GB, 500MB,\n"
		"                          2GiB); defaults: safetensors 5GB, .apsim 4GB\n"
		"      --max-tensors N     split: at most N tensors per shard (GGUF default: 128)\n"
		"      --no-tensor-first-split  split, GGUF: the first shard holds only metadata\n"
		"      --dry-run           split: print the plan (files, tensors, bytes); write nothing\n"
		"      --no-verify         split, merge: skip the digest check of an .apsim input\n"
		"  -o, --output PATH       split: PREFIX (default: INPUT without its extension);\n"
		"                          merge, pack: the file to write\n"
		"  -C, --directory DIR     unpack: extract into DIR (default: the current directory)\n"
		"      --hmac-key          unpack: verify the set's signature with the per-user key\n"
		"      --secret-file FILE  unpack: ... with the team secret in FILE\n"
		"      --secret-env NAME   unpack: ... with the team secret in variable NAME\n"
		"      --secret-prompt     unpack: ... with a team secret typed at a prompt\n"
		"                          (every member must be covered by the signature)\n"
		"  -f, --force             overwrite existing outputs\n"
		"  -T, --threads N         worker threads (default: number of cores)\n"
		"  -j, --json              report as one JSON object\n"
		"  -q, --quiet             print nothing on success\n"
		"  -v, --verbose           more detail (tensors of each shard, member digests)\n"
		"      --no-progress       no progress bar\n"
		"  -h, --help              this help\n"
		"      --version           print the version\n"
		"\n"
		"Exit status: 0 ok, 2 usage (or an existing output), 3 I/O error, 4 invalid format\n"
		"(also an unsafe bundle member), 5 unsupported, 6 checksum mismatch, 7 signature\n"
		"missing, wrong or not covering a member, 9 shard set or bundle members\n"
		"inconsistent with the index or manifest, 70 internal error.\n");
}

static const struct option long_opts[] = {
	FMT_COMMON_LONG_OPTIONS,
	{ "threads", required_argument, NULL, 'T' }, { "force", no_argument, NULL, 'f' },
	{ "output", required_argument, NULL, 'o' }, { "directory", required_argument, NULL, 'C' },
	{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
	{ "max-tensors", required_argument, NULL, OPT_MAX_TENSORS },
	{ "no-tensor-first-split", no_argument, NULL, OPT_NO_TFS },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN }, { "no-verify", no_argument, NULL, OPT_NO_VERIFY },
	FMT_KEY_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 }
};

static const struct {
	const char *name;
	fmt_kind (*run)(const char *input, const shard_opts *o, fmt_err *e);
	unsigned allowed;
	int needs_output;
} commands[] = {
	{ "split", cmd_split, B_MAX_SIZE | B_MAX_TENSORS | B_NO_TFS | B_DRY_RUN | B_NO_VERIFY | B_OUTPUT, 0 },
	{ "merge", cmd_merge, B_NO_VERIFY | B_OUTPUT, 1 },
	{ "pack", cmd_pack, B_OUTPUT, 1 },
	{ "unpack", cmd_unpack, B_DIR | B_KEY, 0 },
};

static int usage_error(const char *msg)
{
	return fmt_report_usage(stderr, TOOL, msg);
}

/* Parse a tool option into o; returns the B_ bit it sets, 0 for one every subcommand takes,
 * or -1 after reporting a usage error. */
static int tool_option(int c, const char *arg, shard_opts *o)
{
	fmt_err e;
	fmt_err_clear(&e);
	switch (c) {
	case 'f': o->force = 1; return 0;
	case 'o': o->output = arg; return B_OUTPUT;
	case 'C': o->dir = arg; return B_DIR;
	case OPT_NO_TFS: o->no_tensor_first_split = 1; return B_NO_TFS;
	case OPT_DRY_RUN: o->dry_run = 1; return B_DRY_RUN;
	case OPT_NO_VERIFY: o->no_verify = 1; return B_NO_VERIFY;
	case OPT_MAX_SIZE:
		if (fmt_parse_size(arg, &o->max_size, &e) != FMT_OK || o->max_size == 0)
			return usage_error(e.msg[0] ? e.msg : "--max-size must be above 0"), -1;
		return B_MAX_SIZE;
	case OPT_MAX_TENSORS:
		if (fmt_parse_u64(arg, UINT32_MAX, &o->max_tensors, &e) != FMT_OK || o->max_tensors == 0)
			return usage_error(e.msg[0] ? e.msg : "--max-tensors must be above 0"), -1;
		return B_MAX_TENSORS;
	default: return usage_error("unknown option"), -1;
	}
}

int main(int argc, char **argv)
{
	shard_opts o = { 0 };
	unsigned given = 0;
	fmt_err e;
	int c;
	fmt_err_clear(&e);
	while ((c = getopt_long(argc, argv, "jqvhfT:o:C:", long_opts, NULL)) != -1) {
		int r = fmt_cli_common(c, optarg, &o.common, &e);
		if (r < 0)
			return usage_error(e.msg);
		if (r > 0)
			continue;
		if (fmt_cli_key_option(c, optarg, &o.keys)) {
			given |= B_KEY;
			continue;
		}
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == FMT_OPT_VERSION) {
			fmt_cli_version(stdout, TOOL);
			return 0;
		}
		int bit = tool_option(c, optarg, &o);
		if (bit < 0)
			return FMT_USAGE;
		given |= (unsigned)bit;
	}
	if (optind >= argc)
		return usage_error("no subcommand (split, merge, pack or unpack)");
	size_t ci = 0, n_cmds = sizeof commands / sizeof commands[0];
	while (ci < n_cmds && strcmp(argv[optind], commands[ci].name) != 0)
		ci++;
	if (ci == n_cmds)
		return usage_error("unknown subcommand (expected split, merge, pack or unpack)");
	if (argc - optind != 2)
		return usage_error(argc - optind < 2 ? "no input file" : "too many arguments");
	if (given & ~commands[ci].allowed)
		return usage_error("an option given does not apply to this subcommand (see --help)");
	if (commands[ci].needs_output && !o.output)
		return usage_error("this subcommand needs -o OUTPUT");
	if (o.max_size && o.max_tensors)
		return usage_error("--max-size and --max-tensors exclude each other");
	if (!o.common.threads)
		o.common.threads = fmt_cpu_count();
	const char *input = argv[optind + 1];
	fmt_kind k = commands[ci].run(input, &o, &e);
	if (k != FMT_OK)
		fmt_report_error(stderr, TOOL, input, &e, o.common.json);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, TOOL ": error: cannot write to standard output\n");
		return k != FMT_OK ? fmt_kind_exit(k) : FMT_IO;
	}
	return fmt_kind_exit(k);
}
