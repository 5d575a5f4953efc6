/* fmt-inspect: headers, tensors, metadata of model files, as text or JSON Lines. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/cli.h"
#include "fmt/out.h"
#include "fmt/registry.h"
#include "inspect.h"

#define TOOL "fmt-inspect"

enum { OPT_TENSORS = FMT_OPT_FIRST_TOOL_OPTION, OPT_METADATA, OPT_TREE, OPT_TENSOR, OPT_STATS,
       OPT_FULL, OPT_FORMAT };

static void usage(FILE *f)
{
	char names[256];
	fmt_driver_names(names, sizeof names);
	fprintf(f,
		"Usage: " TOOL " [OPTIONS] FILE...\n"
		"Show the format, tensors and metadata of model files (safetensors, sharded\n"
		"safetensors index, GGUF). Reads only the headers unless --stats is given.\n"
		"\n"
		"  -j, --json          one JSON object per file (JSON Lines)\n"
		"      --tensors       only the tensor table\n"
		"      --metadata      only the metadata\n"
		"      --tree          the parameter tree built from dotted tensor names\n"
		"  -t, --tensor NAME   only this tensor\n"
		"  -s, --stats         with --tensor: min, max, mean, std, NaN/Inf counts, first values\n"
		"      --full          do not abbreviate metadata arrays longer than 16 items\n"
		"      --format NAME   skip detection: %s\n"
		"  -q, --quiet         print nothing on success\n"
		"  -v, --verbose       more detail\n"
		"      --no-progress   no progress bar\n"
		"  -h, --help          this help\n"
		"      --version       print the version\n"
		"\n"
		"FILE may be - for standard input. Exit status: 0 ok, 2 usage, 3 I/O error,\n"
		"4 invalid format, 5 unsupported version or type; the highest over all files.\n", names);
}

static const struct option long_opts[] = {
	FMT_COMMON_LONG_OPTIONS,
	{ "tensors", no_argument, NULL, OPT_TENSORS },
	{ "metadata", no_argument, NULL, OPT_METADATA },
	{ "tree", no_argument, NULL, OPT_TREE },
	{ "tensor", required_argument, NULL, 't' },
	{ "stats", no_argument, NULL, 's' },
	{ "full", no_argument, NULL, OPT_FULL },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ NULL, 0, NULL, 0 }
};

static int usage_error(const char *msg)
{
	return fmt_report_usage(stderr, TOOL, msg);
}

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
	fmt_common_opts common = { 0 };
	inspect_opts o = { .sections = 0 };
	const fmt_driver *forced = NULL;
	fmt_err e;
	int c;
	fmt_err_clear(&e);
	while ((c = getopt_long(argc, argv, "jqvht:s", long_opts, NULL)) != -1) {
		int r = fmt_cli_common(c, optarg, &common, &e);
		if (r < 0)
			return usage_error(e.msg);
		if (r > 0)
			continue;
		switch (c) {
		case 'h': usage(stdout); return 0;
		case FMT_OPT_VERSION: fmt_cli_version(stdout, TOOL); return 0;
		case OPT_TENSORS: o.sections |= SECTION_TENSORS; break;
		case OPT_METADATA: o.sections |= SECTION_METADATA; break;
		case OPT_TREE: o.sections |= SECTION_TREE; break;
		case 't': o.tensor = optarg; break;
		case 's': o.stats = 1; break;
		case OPT_FULL: o.full = 1; break;
		case OPT_FORMAT:
			forced = fmt_driver_by_name(optarg);
			if (!forced)
				return usage_error("unknown --format (see --help for the names)");
			break;
		default: return usage_error("unknown option");
		}
	}
	if (optind >= argc)
		return usage_error("no input file");
	if (o.stats && !o.tensor)
		return usage_error("--stats needs --tensor NAME");
	if (!o.sections)
		o.sections = SECTION_ALL;
	o.json = common.json;
	int status = 0;
	for (int i = optind; i < argc; i++) {
		int code = fmt_kind_exit(inspect_file(argv[i], forced, &o, &common));
		if (code > status)
			status = code;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, TOOL ": error: cannot write to standard output\n");
		return FMT_IO;
	}
	return status;
}
