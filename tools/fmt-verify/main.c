/* fmt-verify: check every integrity layer a model file or shard set has. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "fmt/bundle.h"
#include "fmt/cli.h"
#include "fmt/crypto.h"
#include "fmt/out.h"
#include "fmt/registry.h"
#include "verify.h"


enum { OPT_FORMAT = FMT_OPT_FIRST_TOOL_OPTION, OPT_RUN_TESTS };

static int run_tests;

static void usage(FILE *f)
{
	char names[256];
	fmt_driver_names(names, sizeof names);
	fprintf(f,
		"Usage: " TOOL " [OPTIONS] FILE...\n"
		"Check every integrity layer of model files and shard sets (give the index .json\n"
		"or the first GGUF shard): structure, digests, shard sets, signatures; and of\n"
		"bundles made by fmt-shard pack, without extracting them. Prints one line per\n"
		"file: 'ok' or the first failure.\n"
		"\n"
		"      --hmac-key      check the signature with the per-user key\n"
		"      --secret-file FILE  check the signature with the team secret in FILE\n"
		"      --secret-env NAME   ... with the team secret in environment variable NAME\n"
		"      --secret-prompt     ... with a team secret typed at a prompt\n"
		"  -T, --threads N     digest shards in parallel (default: number of cores)\n"
		"      --run-tests     also run embedded regression tests (.nk: nk-run --test);\n"
		"                      a failing case, or a .nk without tests, is exit 11\n"
		"  -j, --json          one JSON object per file (JSON Lines)\n"
		"      --format NAME   skip detection: %s\n"
		"  -q, --quiet         print nothing; the exit status tells\n"
		"  -v, --verbose       more detail\n"
		"      --no-progress   no progress bar\n"
		"  -h, --help          this help\n"
		"      --version       print the version\n"
		"\n"
		"Exit status (the highest over all files): 0 every check passed, 2 usage,\n"
		"3 I/O error, 4 invalid format, 5 unsupported version or type, 6 checksum\n"
		"mismatch, 7 signature missing or wrong, 9 shard set inconsistent, 11 an embedded\n"
		"test failed.\n", names);
}

static const struct option long_opts[] = {
	FMT_COMMON_LONG_OPTIONS,
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "threads", required_argument, NULL, 'T' },
	{ "run-tests", no_argument, NULL, OPT_RUN_TESTS },
	FMT_KEY_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 }
};

static int usage_error(const char *msg)
{
	return fmt_report_usage(stderr, TOOL, msg);
}

static fmt_kind verify_file(const char *path, const fmt_driver *forced, const fmt_verify_opts *vo,
			    const fmt_common_opts *o)
{
	fmt_model m;
	fmt_err e;
	fmt_err_clear(&e);
	fmt_kind k = fmt_model_open(&m, path, forced, &e);
	if (k == FMT_OK) {
		k = fmt_model_verify(&m, vo, &e);
		if (k == FMT_OK && run_tests)
			k = run_embedded_tests(&m, path, &e);
		if (k == FMT_OK && !o->quiet)
			report_ok(&m, o);
		fmt_model_free(&m);
	}
	if (k != FMT_OK)
		report_failure(path, &e, o);
	return k;
}

int main(int argc, char **argv)
{
	fmt_common_opts common = { 0 };
	const fmt_driver *forced = NULL;
	fmt_err e;
	int c;
	fmt_err_clear(&e);
	fmt_key_opts key_opts = { 0 };
	fmt_hmac_key key = { 0 };
	while ((c = getopt_long(argc, argv, "jqvhT:", long_opts, NULL)) != -1) {
		int r = fmt_cli_common(c, optarg, &common, &e);
		if (r < 0)
			return usage_error(e.msg);
		if (r > 0 || fmt_cli_key_option(c, optarg, &key_opts))
			continue;
		switch (c) {
		case 'h': usage(stdout); return 0;
		case FMT_OPT_VERSION: fmt_cli_version(stdout, TOOL); return 0;
		case OPT_RUN_TESTS: run_tests = 1; break;
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
	fmt_verify_opts vo = { .threads = common.threads ? common.threads : fmt_cpu_count() };
	if (fmt_key_opts_given(&key_opts)) {
		fmt_kind k = fmt_key_from_opts(&key_opts, &key, &e);
		if (k != FMT_OK) {
			fmt_report_error(stderr, TOOL, NULL, &e, common.json);
			return fmt_kind_exit(k);
		}
		vo.keys.hmac = &key;
	}
	int status = 0;
	for (int i = optind; i < argc; i++) {
		int is_bundle = !forced && fmt_bundle_probe(argv[i]);
		int code = fmt_kind_exit(is_bundle ? verify_bundle(argv[i], &vo, &common)
						   : verify_file(argv[i], forced, &vo, &common));
		if (code > status)
			status = code;
	}
	fmt_hmac_key_free(&key);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, TOOL ": error: cannot write to standard output\n");
		return FMT_IO;
	}
	return status;
}
