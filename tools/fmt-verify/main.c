/* fmt-verify: check every integrity layer a model file or shard set has. */
#include <stdio.h>
#include <string.h>
#include "fmt/minisign.h"
#include "fmt/bundle.h"
#include "fmt/cli.h"
#include "fmt/cli_keys.h"
#include "fmt/crypto.h"
#include "fmt/encrypt.h"
#include "fmt/out.h"
#include "fmt/prompt.h"
#include "fmt/report.h"
#include "fmt/strbuf.h"
#include "fmt/table.h"
#include "fmt/registry.h"
#include "verify.h"

enum { OPT_FORMAT = FMT_OPT_FIRST_TOOL_OPTION, OPT_RUN_TESTS, OPT_MAX_WORK };

typedef struct verify_args {
	const char *forced;         /* --format */
	fmt_key_opts key;
	fmt_trust_opts trust;       /* -p, -P, --trusted-keys */
	int run_tests;              /* --run-tests */
	uint64_t max_work;          /* --max-work N: the embedded tests' work limit (0: the default) */
	fmt_decrypt_opts decrypt;   /* --password-file, --password-env, --identity */
	fmt_decrypt_keys *dk;
	fmt_keyset *dec_keys;       /* what they loaded: decrypts, never a signature key */
} verify_args;

static const fmt_cli_option options[] = {
	{ FMT_CLI_OPT("hmac-key", FMT_OPT_HMAC_KEY, NULL, "check the signature with the per-user key") },
	{ FMT_CLI_OPT("secret-file", FMT_OPT_SECRET_FILE, "FILE", "check the signature with the team secret in FILE"),
	  .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("key-secret-file", FMT_OPT_SECRET_FILE, "FILE", "the same as --secret-file"),
	  .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("secret-env", FMT_OPT_SECRET_ENV, "NAME", "check it with the team secret in variable NAME"),
	  .complete = FMT_COMPLETE_ENV },
	{ FMT_CLI_OPT("secret-prompt", FMT_OPT_SECRET_PROMPT, NULL, "check it with a team secret typed at a prompt") },
	FMT_CLI_DECRYPT_OPTIONS,
	FMT_CLI_IDENTITY_PASS_OPTIONS,
	FMT_CLI_TRUST_OPTIONS(0),
	{ FMT_CLI_OPT("threads", 'T', "N", "digest shards in parallel (default: number of cores)") },
	{ FMT_CLI_OPT("run-tests", OPT_RUN_TESTS, NULL, "also run embedded regression tests (.nk: nk-run --test);\n"
		      "a failing case, or a .nk without tests, is exit 11") },
	{ FMT_CLI_OPT("max-work", OPT_MAX_WORK, "N", "--run-tests: the test runner refuses a network above N\n"
		      "multiply-adds per run (nk-run --max-work; default 2^34)") },
	{ FMT_CLI_OPT("json", 'j', NULL, "one JSON object per file (JSON Lines)") },
	{ FMT_CLI_OPT("format", OPT_FORMAT, "NAME", "skip detection:"), .complete = FMT_COMPLETE_FORMAT },
	{ FMT_CLI_OPT("quiet", 'q', NULL, "print nothing; the exit status tells") },
	{ FMT_CLI_OPT("verbose", 'v', NULL, "more detail") },
	{ .name = NULL }
};

static int on_option(void *ctx, int id, const char *arg, fmt_err *e)
{
	verify_args *a = ctx;
	if (fmt_cli_key_option(id, arg, &a->key) || fmt_cli_decrypt_option(id, arg, &a->decrypt) ||
	    fmt_cli_trust_option(id, arg, &a->trust))
		return 0;
	if (id == OPT_RUN_TESTS) {
		a->run_tests = 1;
		return 0;
	}
	if (id == OPT_MAX_WORK) {
		return fmt_parse_u64(arg, UINT64_MAX, &a->max_work, e) == FMT_OK && a->max_work > 0
			? 0 : (fmt_fail(e, FMT_USAGE, "--max-work needs a count of multiply-adds from 1"), -1);
	}
	if (id == OPT_FORMAT) {
		a->forced = arg;
		return fmt_format_option_check(arg, e) == FMT_OK ? 0 : -1;
	}
	return fmt_fail(e, FMT_USAGE, "unhandled option"), -1;
}

static const fmt_cli_tool tool = {
	.name = TOOL,
	.synopsis = "[OPTIONS] FILE...",
	.about = "Check every integrity layer of model files and shard sets (give the index .json\n"
		 "or the first GGUF shard): structure, digests, shard sets, signatures; and of\n"
		 "bundles made by fmt-shard pack, without extracting them; of datasets (.ald:\n"
		 "CRC-32 in either variant, the card's payload SHA-256, the Ed25519 signature\n"
		 "block; Parquet: every page, and every value within its chunk's statistics;\n"
		 "and every row of .ald, Parquet, Arrow IPC, CSV and JSON Lines read as the\n"
		 "tools read it). With Ed25519 keys (-p, -P, --trusted-keys) every FILE must be\n"
		 "signed by one of them: FILE.minisig beside it, its embedded signature (.apsim,\n"
		 ".ald, APR v1), or both, each checked; a file with neither is refused (exit 7).\n"
		 "Prints one line per file: 'ok' or the first failure.",
	.options = options,
	.footer = "Exit status (the highest over all files): 0 every check passed, 2 usage,\n"
		  "3 I/O error, 4 invalid format, 5 unsupported version or type, 6 checksum\n"
		  "mismatch, 7 signature missing, wrong or by an untrusted key, 8 wrong password\n"
		  "or key (encrypted .ald), 9 shard set inconsistent, 10 licence expired, 11 an\n"
		  "embedded test failed (--run-tests).",
	.format_names = fmt_format_names,
	.on_option = on_option,
};

/* FILE.minisig is checked with Ed25519 keys, and noted as not checked when no key is given. */
static int detached_applies(const fmt_keyset *keys)
{
	return keys->n_trusted || fmt_keyset_empty(keys);
}

/* path, or stream (standard input, its head read already) when it is not NULL. */
static fmt_kind verify_file(const char *path, fmt_source *stream, const verify_args *a, fmt_verify_opts *vo,
			    const fmt_common_opts *o)
{
	fmt_model m;
	fmt_table t;
	fmt_err e;
	verify_sigs v;
	verify_tests tests = { 0 };
	int is_table = 0;
	memset(&v, 0, sizeof v);
	fmt_err_clear(&e);
	fmt_verify_opts mine = *vo;
	mine.signer = &v.signer;
	fmt_kind k = detached_applies(&vo->keys) ? verify_detached(path, &vo->keys, &v, &e) : FMT_OK;
	mine.signed_elsewhere = v.detached;
	if (k == FMT_OK)
		k = stream ? fmt_open_any_source(stream, path, &m, &t, &is_table, &e)
			   : fmt_open_any(path, a->forced, &m, &t, &is_table, &e);
	else if (stream)
		fmt_source_close(stream);
	if (k == FMT_OK && is_table) {
		if ((k = fmt_table_unlock(&t, a->dk, a->dec_keys, 0, &e)) == FMT_OK)
			k = fmt_table_verify(&t, &mine, &e);
		if (k == FMT_OK && !o->quiet)
			report_table_ok(&t, &v, o);
		fmt_table_free(&t);
	} else if (k == FMT_OK) {
		fmt_progress pr;
		progress_begin(&pr, o);
		k = fmt_model_verify(&m, &mine, &e);
		fmt_progress_end(&pr);
		if (k == FMT_OK)
			k = verify_set_detached(&m, path, &vo->keys, &v, &e);
		if (k == FMT_OK && a->run_tests)
			k = run_embedded_tests(&m, path, a->max_work, &tests, &e);
		if (k == FMT_OK && !o->quiet)
			report_ok(&m, &v, &tests, o);
		fmt_model_free(&m);
	}
	if (k != FMT_OK)
		report_failure(path, &e, &tests, o);
	verify_tests_free(&tests);
	return k;
}

/* A bundle: its own FILE.minisig first, then the members (with it, the set's embedded
 * signature is checked only with an HMAC key; the members' .minisig files always are). */
static fmt_kind verify_bundle_trusted(const char *path, fmt_source *stream, const fmt_verify_opts *vo,
				      const fmt_common_opts *o)
{
	fmt_err e;
	verify_sigs v;
	memset(&v, 0, sizeof v);
	fmt_err_clear(&e);
	if (detached_applies(&vo->keys) && verify_detached(path, &vo->keys, &v, &e) != FMT_OK) {
		report_failure(path, &e, NULL, o);
		return e.kind;
	}
	fmt_verify_opts mine = *vo;
	mine.signed_elsewhere = v.detached;
	return verify_bundle(path, stream, &mine, &v, o);
}

/* Standard input: a bundle (told by its first bytes: it cannot be read twice) or any other
 * format, read as a stream either way. */
static fmt_kind verify_stdin(const verify_args *a, fmt_verify_opts *vo, const fmt_common_opts *o)
{
	fmt_source src;
	fmt_err e;
	int bundle = 0;
	fmt_err_clear(&e);
	if (fmt_bundle_open_stdin(&src, &bundle, &e) != FMT_OK) {
		report_failure("-", &e, NULL, o);
		return e.kind;
	}
	if (!bundle)
		return verify_file("-", &src, a, vo, o);
	fmt_kind k = verify_bundle_trusted("-", &src, vo, o);
	fmt_source_close(&src);
	return k;
}

int main(int argc, char **argv)
{
	verify_args a = { 0 };
	fmt_check_keys ck;
	fmt_cli cli;
	fmt_err e;
	fmt_err_clear(&e);
	if (!fmt_cli_parse(&tool, argc, argv, &a, &cli))
		return cli.exit_code;
	if (cli.n_operands == 0)
		return fmt_cli_usage_error(&tool, "no input file");
	if (a.max_work && !a.run_tests)
		return fmt_cli_usage_error(&tool, "--max-work goes with --run-tests");
	const char *pass_bad = fmt_cli_pass_check(a.decrypt.passphrase.file, a.decrypt.passphrase.env, 1);
	if (pass_bad)
		return fmt_cli_usage_error(&tool, pass_bad);
	fmt_verify_opts vo = { .threads = cli.common.threads ? cli.common.threads : fmt_cpu_count() };
	FILE *records = cli.common.quiet ? NULL : stdout;
	fmt_kind k = fmt_check_keys_load(&a.key, &a.trust, &ck, &vo.keys, &e);
	if (k != FMT_OK) {
		fmt_check_keys_free(&ck);
		return fmt_cli_finish(&tool, &cli, fmt_report_failed_all(records, TOOL, cli.operands,
									 cli.n_operands, &e, cli.common.json));
	}
	fmt_decrypt_keys dk;
	fmt_keyset dec_keys = { 0 };
	fmt_cli_decrypt_prompts(&a.decrypt, &cli.common);
	fmt_kind dkk = fmt_decrypt_keys_load(&a.decrypt, &dk, &dec_keys, &e);
	if (dkk != FMT_OK) {
		fmt_check_keys_free(&ck);
		return fmt_cli_finish(&tool, &cli, fmt_report_failed_all(records, TOOL, cli.operands, cli.n_operands,
									 &e, cli.common.json));
	}
	a.dk = &dk;
	a.dec_keys = &dec_keys;
	int status = 0;
	for (int i = 0; i < cli.n_operands; i++) {
		const char *path = cli.operands[i];
		fmt_report_input(records, path, failure_json);
		int is_stdin = !a.forced && strcmp(path, "-") == 0;
		int is_bundle = !a.forced && !is_stdin && fmt_bundle_probe(path);
		int code = fmt_kind_exit(is_stdin    ? verify_stdin(&a, &vo, &cli.common)
					 : is_bundle ? verify_bundle_trusted(path, NULL, &vo, &cli.common)
						     : verify_file(path, NULL, &a, &vo, &cli.common));
		if (code > status)
			status = code;
	}
	fmt_check_keys_free(&ck);
	fmt_decrypt_keys_free(&dk);
	return fmt_cli_finish(&tool, &cli, status);
}
