/* fmt-watermark: embed, extract, prove and detect buyer watermarks in model tensors and dataset
 * float columns (specs/watermark.md); entropy analysis of numeric columns. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>
#include "fmt/cli_keys.h"
#include "fmt/prompt.h"
#include "fmt/report.h"
#include "wm.h"

enum { OPT_KEY = FMT_OPT_FIRST_TOOL_OPTION, OPT_BUYER, OPT_DENSITY, OPT_STRENGTH, OPT_COLUMNS, OPT_TENSORS,
       OPT_REGISTRY, OPT_SIGN_KEY, OPT_SCHEME, OPT_PASS_FILE, OPT_PASS_ENV, OPT_TO, OPT_DRY_RUN, OPT_SCHEMA,
       OPT_ALLOW_EXPIRED, OPT_SS_STRENGTH, OPT_CARD };

enum { CMD_EMBED, CMD_EXTRACT, CMD_PROVE, CMD_DETECT, CMD_ENTROPY };
#define ONLY(c) (1u << (c))
#define KEYED (ONLY(CMD_EMBED) | ONLY(CMD_EXTRACT) | ONLY(CMD_PROVE))
#define READERS (ONLY(CMD_EXTRACT) | ONLY(CMD_PROVE) | ONLY(CMD_DETECT) | ONLY(CMD_ENTROPY))

/* alimentar is read only (extract): the table says so, for the tool and its completions */
static const fmt_cli_value schemes[] = {
	{ "ss", "fmtkit-ss/2, spread spectrum (models' default)", 0 },
	{ "ss1", "fmtkit-ss/1", 0 },
	{ "qim", "fmtkit-wm/1 (datasets' default)", 0 },
	{ "fmtkit", "qim", 0 },
	{ "alimentar", "upstream's LSB scheme (extract only)", ONLY(CMD_EXTRACT) },
	{ NULL, NULL, 0 }
};

static const fmt_cli_command commands[] = {
	{ "embed", "write OUT: IN with BUYER's watermark in its float32/float64 values" },
	{ "extract", "recover the payload (buyer hash) from FILE with the seller's key" },
	{ "prove", "test FILE for BUYER's watermark: p-value, verdict, evidence" },
	{ "detect", "without a key: is FILE likely watermarked (lattice test)" },
	{ "entropy", "per-column statistics of the values' low bits" },
	{ NULL, NULL }
};

static const fmt_cli_option options[] = {
	{ FMT_CLI_OPT("key", OPT_KEY, "FILE", "the seller's watermark key (fmt-sign keygen --watermark)"),
	  .commands = KEYED, .complete = FMT_COMPLETE_FILE, .words = "*.key" },
	{ FMT_CLI_OPT("buyer", OPT_BUYER, "ID", "the buyer's id (any UTF-8 text)"),
	  .commands = ONLY(CMD_EMBED) | ONLY(CMD_PROVE) },
	{ FMT_CLI_OPT("density", OPT_DENSITY, "G", "fraction of values that carry a mark, 0 < G <= 1 (default 0.5)"),
	  .commands = KEYED },
	{ FMT_CLI_OPT("strength-bits", OPT_STRENGTH, "S", "QIM step 2^(e-S), 1..22 (default 12: changes <= 1.2e-4 relative)"),
	  .commands = KEYED },
	{ FMT_CLI_OPT("columns", OPT_COLUMNS, "LIST", "datasets: only these columns (comma-separated; repeatable)"),
	  .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("tensors", OPT_TENSORS, "GLOB", "models: only tensors whose name matches (repeatable)"),
	  .complete = FMT_COMPLETE_TENSOR, .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("registry", OPT_REGISTRY, "FILE", "embed: append buyer id and hash (JSON Lines);\n"
		      "extract: name the buyer from it"),
	  .commands = ONLY(CMD_EMBED) | ONLY(CMD_EXTRACT), .complete = FMT_COMPLETE_FILE, .words = "*.jsonl",
	  .flags = FMT_CLI_WRITTEN },
	{ FMT_CLI_OPT("scheme", OPT_SCHEME, "NAME", "ss (fmtkit-ss/2, spread spectrum: models' default; extract\n"
		      "and prove read fmtkit-ss/1 copies too), ss1 (fmtkit-ss/1),\n"
		      "qim (fmtkit-wm/1, alias fmtkit: datasets' default) or, for\n"
		      "extract, alimentar (upstream's LSB scheme); extract and\n"
		      "prove on a model without it read ss, ss1 and qim in one pass"),
	  .commands = KEYED, .complete = FMT_COMPLETE_WORDS, .values = schemes },
	{ FMT_CLI_OPT("strength", OPT_SS_STRENGTH, "A", "ss: each tensor's RMS change is A x its std, 0 < A <= 0.5\n"
		      "(default 0.01: 1 % of the std)"),
	  .commands = ONLY(CMD_EMBED) },
	{ FMT_CLI_OPT("sign-key", OPT_SIGN_KEY, "SECKEY", "prove: sign the evidence; embed: sign OUT (.apsim, .ald), as\n"
		      "fmt-convert --sign-key; with this Ed25519 secret key\n"
		      "(minisign's format, fmt-sign keygen)"),
	  .commands = ONLY(CMD_PROVE) | ONLY(CMD_EMBED), .complete = FMT_COMPLETE_FILE, .words = "*.key" },
	{ FMT_CLI_OPT("passphrase-file", OPT_PASS_FILE, "FILE", "the signing key's (and an encrypted\n"
		      "--identity's) passphrase from FILE"), .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("passphrase-env", OPT_PASS_ENV, "NAME", "the same from variable NAME"),
	  .complete = FMT_COMPLETE_ENV },
	{ FMT_CLI_OPT("output", 'o', "FILE", "prove: write the evidence JSON to FILE"),
	  .commands = ONLY(CMD_PROVE), .complete = FMT_COMPLETE_FILE, .words = "*.json",
	  .flags = FMT_CLI_WRITTEN },
	{ FMT_CLI_OPT("to", OPT_TO, "FORMAT", "embed: OUT's format (default: from OUT's name; OUT -\n"
		      "needs it), as fmt-convert --to:"),
	  .commands = ONLY(CMD_EMBED), .complete = FMT_COMPLETE_FORMAT },
	{ FMT_CLI_OPT("compression", 'c', "CODEC", "embed: as fmt-convert -c: .apr none (default), lz4[:1-12],\n"
		      "zstd[:1-19], zstd-max; .ald none, zstd (default), zstd-max, lz4"),
	  .commands = ONLY(CMD_EMBED), .complete = FMT_COMPLETE_WORDS, .words = "none lz4 zstd zstd:19 zstd-max" },
	{ FMT_CLI_OPT("schema", OPT_SCHEMA, "FILE", "embed: a CSV IN's column types, as fmt-convert\n"
		      "--schema: {\"column\": \"float32\", ...}"),
	  .commands = ONLY(CMD_EMBED), .complete = FMT_COMPLETE_FILE, .words = "*.json" },
	{ FMT_CLI_OPT("card", OPT_CARD, "FILE", "embed: an .ald OUT's dataset card, as fmt-convert --card\n"
		      "(default: IN's)"),
	  .commands = ONLY(CMD_EMBED), .complete = FMT_COMPLETE_FILE, .words = "*.json" },
	{ FMT_CLI_OPT("dry-run", OPT_DRY_RUN, NULL, "embed: read IN and print what embedding would do (the same\n"
		      "table); write nothing, append nothing to --registry"),
	  .commands = ONLY(CMD_EMBED) },
	{ FMT_CLI_OPT("allow-expired", OPT_ALLOW_EXPIRED, NULL, "read the rows of an .ald whose licence has expired (said\n"
		      "on stderr); without it that is exit 10") },
	FMT_CLI_DECRYPT_OPTIONS,
	{ FMT_CLI_OPT("force", 'f', NULL, "overwrite OUT (embed) or the evidence file (prove)"),
	  .commands = ONLY(CMD_EMBED) | ONLY(CMD_PROVE) },
	{ FMT_CLI_OPT("threads", 'T', "N", "worker threads (default: number of cores); same bytes and\n"
		      "results for any N") },
	{ FMT_CLI_OPT("json", 'j', NULL, "the result as one JSON object") },
	{ FMT_CLI_OPT("quiet", 'q', NULL, "embed: print nothing on success") },
	{ FMT_CLI_OPT("verbose", 'v', NULL, "extract: every bit's votes; detect: every column") },
	{ .name = NULL }
};

static int parse_double(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (!*s || *end)
		return -1;
	*out = v;
	return 0;
}

/* A comma list of column names, pushed one by one. */
static int push_columns(wm_opts *o, const char *arg)
{
	char *copy = strdup(arg), *save = NULL;
	if (!copy)
		return -1;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->n_columns >= WM_MAX_SELECT)
			return -1;
		o->columns[o->n_columns++] = tok;     /* copy lives as long as the process */
	}
	return 0;
}

static int on_option(void *ctx, int id, const char *arg, fmt_err *e)
{
	wm_opts *o = ctx;
	uint64_t v;
	if (fmt_cli_decrypt_option(id, arg, &o->decrypt))
		return 0;
	switch (id) {
	case OPT_KEY: o->key_file = arg; return 0;
	case OPT_BUYER:
		if (!*arg)
			return fmt_fail(e, FMT_USAGE, "--buyer takes a non-empty id"), -1;
		o->buyer = arg;
		return 0;
	case OPT_DENSITY:
		o->qim_params = 1;
		if (parse_double(arg, &o->density) || !(o->density > 0 && o->density <= 1))
			return fmt_fail(e, FMT_USAGE, "--density takes a fraction above 0 and at most 1 (e.g. 0.5)"), -1;
		return 0;
	case OPT_STRENGTH:
		o->qim_params = 1;
		if (fmt_parse_u64(arg, FMT_WM_MAX_STRENGTH, &v, e) != FMT_OK || v < FMT_WM_MIN_STRENGTH)
			return fmt_fail(e, FMT_USAGE, "--strength-bits takes 1 to 22"), -1;
		o->strength = (int)v;
		return 0;
	case OPT_COLUMNS:
		if (push_columns(o, arg))
			return fmt_fail(e, FMT_USAGE, "too many --columns"), -1;
		return 0;
	case OPT_TENSORS:
		if (o->n_tensors >= WM_MAX_SELECT)
			return fmt_fail(e, FMT_USAGE, "too many --tensors"), -1;
		o->tensors[o->n_tensors++] = arg;
		return 0;
	case OPT_REGISTRY: o->registry = arg; return 0;
	case OPT_SCHEME:
		if (strcmp(arg, "ss") == 0)
			o->scheme = WM_SCHEME_SS;
		else if (strcmp(arg, "ss1") == 0)
			o->scheme = WM_SCHEME_SS1;
		else if (strcmp(arg, "qim") == 0 || strcmp(arg, "fmtkit") == 0)
			o->scheme = WM_SCHEME_QIM;
		else if (strcmp(arg, "alimentar") == 0)
			o->scheme = WM_SCHEME_ALIMENTAR;
		else
			return fmt_fail(e, FMT_USAGE, "--scheme takes ss, ss1, qim (or fmtkit) or alimentar"), -1;
		return 0;
	case OPT_SS_STRENGTH:
		if (parse_double(arg, &o->ss_strength) || !(o->ss_strength > 0 && o->ss_strength <= FMT_SS_MAX_STRENGTH))
			return fmt_fail(e, FMT_USAGE, "--strength takes a fraction above 0 and at most 0.5 (e.g. 0.01)"), -1;
		return 0;
	case OPT_SIGN_KEY: o->sign_key = arg; return 0;
	case OPT_PASS_FILE: o->passphrase_file = o->decrypt.passphrase.file = arg; return 0;
	case OPT_PASS_ENV: o->passphrase_env = o->decrypt.passphrase.env = arg; return 0;
	case 'o': o->evidence = arg; return 0;
	case 'f': o->force = 1; return 0;
	case OPT_TO: o->to_name = arg; return 0;
	case 'c': o->compression = arg; return 0;
	case OPT_DRY_RUN: o->dry_run = 1; return 0;
	case OPT_SCHEMA: o->schema = arg; return 0;
	case OPT_CARD: o->card = arg; return 0;
	case OPT_ALLOW_EXPIRED: o->allow_expired = 1; return 0;
	}
	return fmt_fail(e, FMT_USAGE, "unhandled option"), -1;
}

static const fmt_cli_tool tool = {
	.name = TOOL,
	.synopsis = "embed --key K --buyer ID [--scheme ss|ss1|qim] [--strength A] [--density G] [--strength-bits S]\n"
		    "      [--columns LIST | --tensors GLOB]\n"
		    "      [--registry FILE] [--schema FILE] [--card FILE] [--to FORMAT] [-c CODEC] [--sign-key SECKEY]\n"
		    "      [--dry-run] [-T N] IN OUT\n"
		    "extract --key K [--registry FILE] [--scheme ss|ss1|qim|alimentar] FILE\n"
		    "prove --key K --buyer ID [--scheme ss|ss1|qim] [--sign-key SECKEY] [-o EVIDENCE.json] FILE\n"
		    "detect [--columns LIST | --tensors GLOB] FILE\n"
		    "entropy [--columns LIST | --tensors GLOB] [-j] FILE",
	.about = "Give each buyer a copy whose float32/float64 values carry a 64-bit fingerprint\n"
		 "(48 bits of HMAC(key, buyer) and a CRC-16). Models (scheme ss, fmtkit-ss/2): one run\n"
		 "of 512 weights in each 65536, picked by the seller's key, moves along the\n"
		 "Hadamard-coded payload the way the run already leans, each tensor's RMS change\n"
		 "A x its std; positions and signs keyed by the tensor's element count and the\n"
		 "element's index; found by correlation, it survives F16/BF16, Q8_0/Q4_0/Q4_K, noise,\n"
		 "scaling, pruning, renaming, dropping tensors and every format conversion\n"
		 "(fmtkit-ss/1 copies, scheme ss1, are still found). Datasets (scheme qim, fmtkit-wm/1):\n"
		 "placed by a keyed PRF and embedded by quantization index modulation, every change\n"
		 "below 2^-(S+1) of the value; it survives shuffling, sampling, dropping columns,\n"
		 "format conversion, small noise and rounding to 6 significant digits.\n"
		 "IN and OUT: datasets (.ald, Arrow IPC, JSON Lines, CSV) and every model format\n"
		 "fmtkit writes (F16/BF16 tensors are left alone); IN - is standard input, OUT -\n"
		 "standard output (with --to; the report then goes to standard error).\n"
		 "Schemes: man 7 fmtkit-watermark (fmtkit-ss/2, /1), specs/watermark.md (fmtkit-wm/1).",
	.commands = commands,
	.options = options,
	.footer = "Exit status: 0 ok (extract: a valid payload; prove: match; detect: likely\n"
		  "watermarked), 1 no (no valid payload, not this buyer, nothing detected), 2 usage,\n"
		  "3 I/O error, 4 invalid input, 5 unsupported, 8 wrong passphrase, 10 an .ald whose\n"
		  "licence expired (--allow-expired).",
	.format_names = fmt_writer_names,
	.on_option = on_option,
};

static const char *check_usage(const wm_opts *o, const fmt_cli *cli)
{
	int want = cli->command == CMD_EMBED ? 2 : 1;
	if (cli->n_operands != want)
		return cli->command == CMD_EMBED ? "embed needs IN and OUT" : "give one FILE";
	if (cli->command <= CMD_PROVE && !o->key_file)
		return "--key FILE is needed (the seller's key: fmt-sign keygen --watermark)";
	if ((cli->command == CMD_EMBED || cli->command == CMD_PROVE) && !o->buyer)
		return "--buyer ID is needed";
	if (o->n_columns && o->n_tensors)
		return "--columns (datasets) and --tensors (models) select in different kinds of file: give one";
	if ((o->passphrase_file || o->passphrase_env) && !o->sign_key && !o->decrypt.identity)
		return "--passphrase-file and --passphrase-env unlock --sign-key or --identity";
	return fmt_cli_pass_check(o->passphrase_file, o->passphrase_env, !!o->sign_key + !!o->decrypt.identity);
}

/* embed: models get fmtkit-ss/2 and datasets fmtkit-wm/1 unless --scheme says otherwise; each
 * scheme's parameters only with it. */
static const char *embed_scheme(wm_opts *o)
{
	if (o->scheme == WM_SCHEME_AUTO)
		o->scheme = o->table_to ? WM_SCHEME_QIM : WM_SCHEME_SS;
	if ((o->scheme == WM_SCHEME_SS || o->scheme == WM_SCHEME_SS1) && o->table_to)
		return "--scheme ss marks model weights; a dataset's columns take --scheme qim";
	if ((o->scheme == WM_SCHEME_SS || o->scheme == WM_SCHEME_SS1) && o->qim_params)
		return "--density and --strength-bits are --scheme qim's; --scheme ss takes --strength";
	if (o->scheme == WM_SCHEME_QIM && o->ss_strength > 0)
		return "--strength is --scheme ss's; --scheme qim takes --strength-bits and --density";
	if (o->ss_strength == 0)
		o->ss_strength = FMT_SS_DEFAULT_STRENGTH;
	return NULL;
}

/* embed, with --registry: the registry is opened and locked first, so that a registry that
 * cannot take the line (a symbolic link, a directory, a FIFO, locked, no room) leaves nothing
 * written; a copy whose line could not be appended after all is removed. */
static fmt_kind embed_recorded(const char *input, const char *output, const wm_opts *o, const fmt_wm_params *prm,
			       const uint8_t hash[32], wm_result *r, fmt_err *e)
{
	wm_registry reg = { .fd = -1 };
	int record = o->registry && !o->dry_run;
	fmt_kind k = record ? wm_registry_open(&reg, o->registry, o->buyer, hash, prm->payload, output, e) : FMT_OK;
	if (k == FMT_OK)
		k = wm_embed(input, output, o, prm, hash, r, e);
	if (k == FMT_OK && record && (k = wm_registry_commit(&reg, e)) != FMT_OK && strcmp(output, "-") != 0) {
		unlink(output);
		fmt_err_prefix(e, "%s removed (a marked copy must be recorded)", output);
	}
	wm_registry_close(&reg);
	return k;
}

/* What embed and prove write (OUT, --registry, the evidence) must not be a file they read (IN,
 * the files the options name) nor each other: -f or not, it would be overwritten or appended
 * to. OUT over IN is the pipeline's own refusal. */
static fmt_kind check_written(const wm_opts *o, const fmt_cli *cli, fmt_err *e)
{
	const fmt_cli_file read[2] = { { "IN", cli->operands[0], 0 },
				       { "OUT", cli->command == CMD_EMBED ? cli->operands[1] : NULL, 1 } };
	if (cli->command == CMD_EMBED && fmt_cli_check_output(cli, "OUT", cli->operands[1], e) != FMT_OK)
		return e->kind;
	if (cli->command == CMD_EMBED && o->registry && !o->dry_run &&
	    fmt_cli_check_written(cli, "--registry", o->registry, read, 2, e) != FMT_OK)
		return e->kind;
	if (cli->command == CMD_PROVE && o->evidence && fmt_cli_check_written(cli, "-o", o->evidence, read, 1, e) != FMT_OK)
		return e->kind;
	return FMT_OK;
}

FILE *wm_records;

int main(int argc, char **argv)
{
	static wm_opts o;
	fmt_cli cli;
	fmt_err e;
	fmt_err_clear(&e);
	o.density = FMT_WM_DEFAULT_DENSITY;
	o.strength = FMT_WM_DEFAULT_STRENGTH;
	if (!fmt_cli_parse(&tool, argc, argv, &o, &cli))
		return cli.exit_code;
	o.common = cli.common;
	o.threads = cli.common.threads ? cli.common.threads : fmt_cpu_count();
	const char *bad = check_usage(&o, &cli);
	if (bad)
		return fmt_cli_usage_error(&tool, bad);
	if (check_written(&o, &cli, &e) != FMT_OK)
		return fmt_cli_usage_error(&tool, e.msg);
	if (cli.command == CMD_EMBED && wm_embed_target(&o, cli.operands[1], &e) != FMT_OK)
		return fmt_cli_usage_error(&tool, e.msg);
	if (cli.command == CMD_EMBED && (bad = embed_scheme(&o)))
		return fmt_cli_usage_error(&tool, bad);
	if (cli.command == CMD_EMBED && !o.dry_run && strcmp(cli.operands[1], "-") == 0 && isatty(STDOUT_FILENO) &&
	    !(o.table_to && o.table_to->writes_text))
		return fmt_cli_usage_error(&tool, "refusing to write binary output to a terminal (redirect or pipe it)");
	o.input = cli.operands[0];
	wm_records = fmt_cli_records(&cli.common);
	o.records = cli.command == CMD_EMBED && !o.dry_run && strcmp(cli.operands[1], "-") == 0 ? NULL : wm_records;
	fmt_report_input(o.records, o.input, NULL);
	fmt_wm_key *key = NULL;
	uint8_t raw[FMT_WM_KEY_LEN], hash[FMT_WM_HASH_LEN] = { 0 };
	fmt_wm_params prm = { .density = o.density, .strength = o.strength };
	static fmt_ss_params ssp;      /* its stream key is wiped at the end */
	static uint8_t ss1_key[32], ss2_key[32];
	if (o.key_file) {
		if (wm_key_load(o.key_file, &key, raw, &e) != FMT_OK)
			return fmt_cli_finish(&tool, &cli, wm_fail(&o, NULL, &e));
		prm.key = key;
		if (o.buyer) {
			fmt_wm_buyer_hash(key, o.buyer, strlen(o.buyer), hash);
			prm.payload = fmt_wm_payload(hash);
		}
		fmt_ss_stream_key(key, ss1_key);
		fmt_ss2_stream_key(key, ss2_key);
		ssp.version = o.scheme == WM_SCHEME_SS1 ? 1 : 2;
		memcpy(ssp.sk, ssp.version == 1 ? ss1_key : ss2_key, sizeof ssp.sk);
		fmt_ss_codeword(prm.payload, ssp.d);
		ssp.strength = o.ss_strength;
		o.ss_key = ss1_key;
		o.ss2_key = o.scheme == WM_SCHEME_SS1 ? NULL : ss2_key;
		if (cli.command == CMD_EMBED && (o.scheme == WM_SCHEME_SS || o.scheme == WM_SCHEME_SS1))
			o.ss = &ssp;
		/* for this payload: the vector loops' table (fmtkit-wm/1's; fmtkit-ss needs none) */
		if (!o.ss && fmt_wm_params_prepare(&prm, &e) != FMT_OK) {
			fmt_wm_key_free(key);
			return fmt_cli_finish(&tool, &cli, wm_fail(&o, NULL, &e));
		}
	}
	/* the reading subcommands unlock an encrypted dataset themselves; embed's pipeline does */
	fmt_decrypt_keys dk;
	fmt_keyset keys = { 0 };
	int unlocks = cli.command != CMD_EMBED;
	if (unlocks) {
		fmt_cli_decrypt_prompts(&o.decrypt, &o.common);
		if (fmt_decrypt_keys_load(&o.decrypt, &dk, &keys, &e) != FMT_OK) {
			fmt_wm_key_free(key);
			return fmt_cli_finish(&tool, &cli, wm_fail(&o, NULL, &e));
		}
		o.dk = &dk;
		o.keys = &keys;
	}
	wm_result r;
	memset(&r, 0, sizeof r);
	const char *file = cli.operands[0];
	int status;
	fmt_kind k;
	switch (cli.command) {
	case CMD_EMBED:
		k = embed_recorded(cli.operands[0], cli.operands[1], &o, &prm, hash, &r, &e);
		/* standard output carries OUT's bytes: the report goes beside the messages */
		status = k != FMT_OK ? wm_fail(&o, NULL, &e)
		       : wm_report_embed(!o.dry_run && strcmp(cli.operands[1], "-") == 0 ? stderr : stdout,
					 cli.operands[0], cli.operands[1], &o, &prm, hash, &r);
		break;
	case CMD_EXTRACT:
		k = wm_scan(file, o.scheme == WM_SCHEME_ALIMENTAR ? WM_SCAN_ALIMENTAR : WM_SCAN_VOTES, &o, &prm, &r, &e);
		status = k != FMT_OK ? wm_fail(&o, NULL, &e)
		       : o.scheme == WM_SCHEME_ALIMENTAR ? wm_report_alimentar(file, &o, raw, &r) : wm_report_extract(file, &o, &r);
		break;
	case CMD_PROVE:
		k = wm_scan(file, WM_SCAN_VOTES, &o, &prm, &r, &e);
		status = k != FMT_OK ? wm_fail(&o, NULL, &e) : wm_report_prove(file, &o, &prm, hash, &r);
		break;
	case CMD_DETECT:
		k = wm_scan(file, WM_SCAN_LATTICE, &o, &prm, &r, &e);
		status = k != FMT_OK ? wm_fail(&o, NULL, &e) : wm_report_detect(file, &o, &r);
		break;
	default:
		k = wm_scan(file, WM_SCAN_ENTROPY, &o, &prm, &r, &e);
		status = k != FMT_OK ? wm_fail(&o, NULL, &e) : wm_report_entropy(file, &o, &r);
	}
	wm_result_free(&r);
	fmt_wm_key_free(key);
	if (unlocks)
		fmt_decrypt_keys_free(&dk);
	sodium_memzero(raw, sizeof raw);
	sodium_memzero(ssp.sk, sizeof ssp.sk);
	sodium_memzero(ss1_key, sizeof ss1_key);
	sodium_memzero(ss2_key, sizeof ss2_key);
	return fmt_cli_finish(&tool, &cli, status);
}
