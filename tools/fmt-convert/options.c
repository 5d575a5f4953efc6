/* fmt-convert's options: its own table, and every registered driver's options (a heading per
 * format in --help), parsed into the conversion's options. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "fmt/format_options.h"
#include "fmt/strbuf.h"
#include "fmt/table.h"
#include "convert.h"

enum { OPT_TO = FMT_OPT_FIRST_TOOL_OPTION, OPT_DTYPE, OPT_ARCH, OPT_SET, OPT_SET_FROM, OPT_INCLUDE,
       OPT_EXCLUDE, OPT_DRY_RUN, OPT_SHARD, OPT_SIGN, OPT_NO_VERIFY, OPT_OVERFLOW, OPT_ALLOW_OVERFLOW,
       OPT_FROM, OPT_COMPRESS, OPT_SIGN_KEY, OPT_PASS_FILE, OPT_PASS_ENV, OPT_ENC_PW_FILE, OPT_ENC_PW_ENV,
       OPT_ENC_TO, OPT_ALLOW_EXPIRED, OPT_ALLOW_REQUANTIZE, OPT_METADATA_FROM, OPT_KEYS, OPT_UNSET, OPT_OVERRIDE_KV,
       OPT_IN_PLACE,
       OPT_EMBED_TESTS, OPT_LABELS, OPT_TOLERANCE,
       OPT_CALIBRATION,
       OPT_RENAME, OPT_ROWS, OPT_WHERE, OPT_SAMPLE, OPT_SEED, OPT_SHUFFLE, OPT_DEDUPE, OPT_DEDUPE_ON, OPT_SORT,
       OPT_MEMORY,
       OPT_DRIVER_FIRST }; /* the drivers' options: OPT_DRIVER_FIRST + their index in driver_options */

/* Options that exclude each other (fmt_cli_option.group). */
enum { GROUP_KEY = 1 };

static const fmt_cli_value dtypes[] = {
	{ "f32", "float32", 0 },
	{ "f16", "IEEE half precision", 0 },
	{ "bf16", "bfloat16", 0 },
	{ "q8_0", "8-bit blocks of 32", 0 },
	{ "q4_0", "4-bit blocks of 32", 0 },
	{ "q4_1", "4-bit blocks of 32 with a min", 0 },
	{ "q5_0", "5-bit blocks of 32", 0 },
	{ "q5_1", "5-bit blocks of 32 with a min", 0 },
	{ "q2_k", "2-bit K-quant, super-blocks of 256", 0 },
	{ "q3_k", "3-bit K-quant, super-blocks of 256", 0 },
	{ "q4_k", "4-bit K-quant, super-blocks of 256", 0 },
	{ "q5_k", "5-bit K-quant, super-blocks of 256", 0 },
	{ "q6_k", "6-bit K-quant, super-blocks of 256", 0 },
	{ "iq4_nl", "4-bit non-linear blocks of 32", 0 },
	{ "iq4_xs", "4-bit non-linear, super-blocks of 256", 0 },
	{ "int8", "int8 codes, per-row scales", 0 },
	{ "int4", "int4 codes, block-32 scales", 0 },
	{ "fp8", "FP8 E4M3 codes", 0 },
	{ "fp6", "FP6 E3M2 codes", 0 },
	{ "fp4", "FP4 E2M1 codes", 0 },
	{ "keep", "keep each tensor's dtype", 0 },
	{ NULL, NULL, 0 }
};

/* What --dtype offers: dtypes[], then the writers' mixes of dtypes that are not one of them
 * (GGUF: Q4_K_M...; its Q4_0 and q4_k are the dtypes' names), filled by convert_tool. */
static fmt_cli_value dtype_values[sizeof dtypes / sizeof dtypes[0] + 32];

static void list_dtype_values(void)
{
	size_t n = 0;
	for (; dtypes[n].word; n++)
		dtype_values[n] = dtypes[n];
	fmt_drvopt_value mixes[32];
	size_t n_mixes = fmt_driver_dtype_mixes(mixes, sizeof mixes / sizeof mixes[0]);
	for (size_t i = 0; i < n_mixes && n + 1 < sizeof dtype_values / sizeof dtype_values[0]; i++) {
		size_t k = 0;
		while (dtypes[k].word && strcasecmp(dtypes[k].word, mixes[i].word) != 0)
			k++;
		if (!dtypes[k].word)
			dtype_values[n++] = (fmt_cli_value){ mixes[i].word, mixes[i].help, 0 };
	}
	dtype_values[n] = (fmt_cli_value){ NULL, NULL, 0 };
}

static const fmt_cli_option own_options[] = {
	{ FMT_CLI_OPT("to", OPT_TO, "FORMAT", "the output format (default: from OUTPUT's extension):"),
	  .complete = FMT_COMPLETE_FORMAT },
	{ FMT_CLI_OPT("dtype", OPT_DTYPE, "TYPE", "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k,\n"
		      "q4_k, q5_k, q6_k, iq4_nl, iq4_xs (GGUF; any case), int8,\n"
		      "int4, fp8, fp6, fp4 (.apsim compressed tensors) or keep\n"
		      "(default: f16 for GGUF, keep otherwise); for GGUF also\n"
		      "llama-quantize's presets (Q4_K_M, Q5_K_S, ...) and its type\n"
		      "numbers (15 is Q4_K_M)"),
	  .complete = FMT_COMPLETE_WORDS, .values = dtype_values },
	{ FMT_CLI_OPT("compression", 'c', "CODEC", "what the output format offers: .apr (seed layout, one frame\n"
		      "per tensor; default none): none, lz4[:1-12], zstd[:1-19],\n"
		      "zstd-max; .ald payload: none, zstd (default), zstd-max, lz4;\n"
		      ".parquet pages: none, snappy (default), gzip[:1-9],\n"
		      "zstd[:1-22], zstd-max, lz4; Arrow IPC (.arrow, .arrows)\n"
		      "buffers: none (default), lz4[:1-12], zstd[:1-22], zstd-max"),
	  .complete = FMT_COMPLETE_WORDS, .words = "none lz4 zstd zstd:19 zstd-max snappy gzip" },
	{ FMT_CLI_OPT("compress", OPT_COMPRESS, "CODEC", "the same as --compression"),
	  .complete = FMT_COMPLETE_WORDS, .words = "none lz4 zstd zstd:19 zstd-max snappy gzip" },
	{ FMT_CLI_OPT("shard", OPT_SHARD, "SIZE", "write a shard set of at most SIZE of tensor data per shard\n"
		      "(default: 5GB for safetensors, 4GB for .apsim, none for GGUF)") },
	{ FMT_CLI_OPT("sign", OPT_SIGN, NULL, "sign the .apsim output (the per-user key unless a secret is given)") },
	{ FMT_CLI_OPT("hmac-key", FMT_OPT_HMAC_KEY, NULL, "sign with the per-user key (fmt-sign keygen --hmac)"),
	  .group = GROUP_KEY },
	{ FMT_CLI_OPT("secret-file", FMT_OPT_SECRET_FILE, "FILE", "sign with the team secret in FILE"),
	  .complete = FMT_COMPLETE_FILE, .group = GROUP_KEY },
	{ FMT_CLI_OPT("key-secret-file", FMT_OPT_SECRET_FILE, "FILE", "the same as --secret-file"),
	  .complete = FMT_COMPLETE_FILE, .group = GROUP_KEY },
	{ FMT_CLI_OPT("secret-env", FMT_OPT_SECRET_ENV, "NAME", "sign with the team secret in environment variable NAME"),
	  .complete = FMT_COMPLETE_ENV, .group = GROUP_KEY },
	{ FMT_CLI_OPT("secret-prompt", FMT_OPT_SECRET_PROMPT, NULL, "sign with a team secret typed at a prompt"),
	  .group = GROUP_KEY },
	{ FMT_CLI_OPT("sign-key", OPT_SIGN_KEY, "SECKEY", "sign the output with this Ed25519 secret key (minisign\n"
		      "format): .apsim ed25519 signature, .ald signature block"),
	  .complete = FMT_COMPLETE_FILE, .words = "*.key", .group = GROUP_KEY },
	{ FMT_CLI_OPT("passphrase-file", OPT_PASS_FILE, "FILE", "--sign-key's or --identity's passphrase from FILE\n(one final newline removed)"),
	  .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("passphrase-env", OPT_PASS_ENV, "NAME", "the same from the environment variable NAME"),
	  .complete = FMT_COMPLETE_ENV },
	{ FMT_CLI_OPT("no-verify", OPT_NO_VERIFY, NULL, "do not check the input's digest before converting") },
	{ FMT_CLI_OPT("arch", OPT_ARCH, "NAME", "set general.architecture (GGUF; arch for APR)"),
	  .complete = FMT_COMPLETE_WORDS, .words_from = fmt_driver_arch_words },
	{ FMT_CLI_OPT("set", OPT_SET, "KEY[:TYPE]=VALUE", "add or replace a metadata key; TYPE is one of\n"
		      "u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool str (default str);\n"
		      "KEY:TYPE[]=V1,V2,... sets an array (\\, for a comma)"), .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("override-kv", OPT_OVERRIDE_KV, "KEY=TYPE:VALUE", "llama-quantize's --override-kv: TYPE int (written as u32),\n"
		      "float (f32), bool (true, false) or str (at most 127 bytes);\n"
		      "applied after --set, the key moved to the end (repeatable)"),
	  .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("set-from", OPT_SET_FROM, "FILE", "add the keys of a JSON object; {\"type\": T, \"value\": V}\n"
		      "types a value or an array's items (fmt-inspect --json --full\n"
		      "prints every key so: its \"metadata_typed\")"),
	  .complete = FMT_COMPLETE_FILE, .words = "*.json" },
	{ FMT_CLI_OPT("metadata-from", OPT_METADATA_FROM, "FILE", "copy the metadata keys of another model file (a GGUF\n"
		      "vocabulary), types kept; not its alignment, split or file type keys"),
	  .complete = FMT_COMPLETE_FILE, .words = "*.gguf", .flags = FMT_CLI_OUTPUT_MAY_REPLACE },
	{ FMT_CLI_OPT("keys", OPT_KEYS, "GLOB", "--metadata-from copies only the keys that match (repeatable)"),
	  .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("unset", OPT_UNSET, "GLOB", "remove the metadata keys that match (repeatable); never a key\n"
		      "the format requires (GGUF: general.architecture)"), .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("in-place", OPT_IN_PLACE, NULL, "edit the metadata of FILE (the only operand; GGUF) with the\n"
		      "options above; FILE is replaced atomically, its tensor data\n"
		      "copied as it is") },
	{ FMT_CLI_OPT("overflow", OPT_OVERFLOW, "MODE", "values the dtype cannot hold (F16 above 65504, Q8_0/Q4_0 blocks\n"
		      "whose scale overflows F16): refuse (default, exit 4), saturate\n"
		      "(F16/BF16 clamped; Q8_0/Q4_0 tensor written as F16) or widen\n"
		      "(tensor written as F32)"),
	  .complete = FMT_COMPLETE_WORDS, .words = "refuse saturate widen" },
	{ FMT_CLI_OPT("allow-overflow", OPT_ALLOW_OVERFLOW, NULL, "the same as --overflow=saturate") },
	{ FMT_CLI_OPT("allow-requantize", OPT_ALLOW_REQUANTIZE, NULL, "let a tensor of one GGUF block type (Q8_0...) become\n"
		      "another (without it: exit 2, as llama-quantize)") },
	{ FMT_CLI_OPT("include", OPT_INCLUDE, "GLOB", "convert only tensors (of a dataset: columns) whose name\nmatches (repeatable)"),
	  .complete = FMT_COMPLETE_TENSOR, .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("exclude", OPT_EXCLUDE, "GLOB", "leave out tensors (columns) whose name matches (repeatable)"),
	  .complete = FMT_COMPLETE_TENSOR, .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("rename", OPT_RENAME, "OLD=NEW", "datasets: name column OLD NEW in the output (repeatable)"),
	  .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("where", OPT_WHERE, "EXPR", "datasets: only the rows where EXPR holds: 'COLUMN OP VALUE'\n"
		      "(OP: = != < <= > >=, compared as the column's type) or\n"
		      "'COLUMN is null', 'COLUMN is not null'; repeated: all hold") ,
	  .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("dedupe", OPT_DEDUPE, NULL, "datasets: drop rows equal to an earlier row") },
	{ FMT_CLI_OPT("dedupe-on", OPT_DEDUPE_ON, "COLUMN", "datasets: --dedupe comparing only these columns (repeatable)"),
	  .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("sample", OPT_SAMPLE, "N|FRACTION", "datasets: N rows drawn uniformly (kept in input order), or\n"
		      "each row with probability FRACTION (0.1); see --seed") },
	{ FMT_CLI_OPT("sort", OPT_SORT, "COLUMN[:desc]", "datasets: order the rows by COLUMN (repeatable: then by the\n"
		      "next); nulls last; equal rows keep their order"), .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("shuffle", OPT_SHUFFLE, NULL, "datasets: the rows in a random order drawn from --seed") },
	{ FMT_CLI_OPT("seed", OPT_SEED, "S", "datasets: the seed of --sample and --shuffle (default 0): the\n"
		      "same seed, the same rows") },
	{ FMT_CLI_OPT("rows", OPT_ROWS, "START:END", "datasets: rows START to END-1 (from 0) of the result; START:\n"
		      "or :END for open ends") },
	{ FMT_CLI_OPT("memory", OPT_MEMORY, "SIZE", "datasets: rows --sort, --shuffle and --sample N hold in memory\n"
		      "before sorted runs go to temporary files in $TMPDIR\n"
		      "(default 256MiB)") },
	{ FMT_CLI_OPT("dry-run", OPT_DRY_RUN, NULL, "print the plan (every tensor, its dtypes and bytes; a\n"
		      "dataset's schema); write nothing") },
	{ FMT_CLI_OPT("from", OPT_FROM, "FORMAT", "datasets: read INPUT as this format, not by its content"),
	  .complete = FMT_COMPLETE_WORDS, .words_from = fmt_table_driver_words },
	{ FMT_CLI_OPT("encrypt-password-file", OPT_ENC_PW_FILE, "FILE", ".ald: encrypt the payload with the password in FILE\n"
		      "(Argon2id, AES-256-GCM)"), .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("encrypt-password-env", OPT_ENC_PW_ENV, "NAME", ".ald: encrypt with the password in variable NAME"),
	  .complete = FMT_COMPLETE_ENV },
	{ FMT_CLI_OPT("encrypt-to", OPT_ENC_TO, "PUBKEY", ".ald: encrypt to the X25519 public key file PUBKEY\n"
		      "(fmt-sign keygen --x25519)"), .complete = FMT_COMPLETE_FILE, .words = "*.pub" },
	FMT_CLI_DECRYPT_OPTIONS,
	{ FMT_CLI_OPT("allow-expired", OPT_ALLOW_EXPIRED, NULL, ".ald: read the rows although the licence has expired\n"
		      "(said on stderr); without it that is exit 10") },
	{ FMT_CLI_OPT("embed-tests", OPT_EMBED_TESTS, "INPUTS", ".nk: embed regression tests of these inputs (raw float32\n"
		      "or a JSON array of cases), expected outputs computed"), .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("labels", OPT_LABELS, "FILE", "--embed-tests: one label per case (-1: none)"),
	  .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("tolerance", OPT_TOLERANCE, "T", "--embed-tests: the absolute tolerance (default 1e-4)") },
	{ FMT_CLI_OPT("calibration", OPT_CALIBRATION, "INPUTS", ".nk with --dtype int8: quantize the network, activation\n"
		      "ranges from these inputs (as --embed-tests reads them)"), .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("force", 'f', NULL, "overwrite OUTPUT if it exists") },
	{ FMT_CLI_OPT("threads", 'T', "N", "worker threads (default: number of cores); same bytes for any N") },
	{ FMT_CLI_OPT("json", 'j', NULL, "report as one JSON object") },
	{ FMT_CLI_OPT("quiet", 'q', NULL, "no warnings") },
	{ FMT_CLI_OPT("verbose", 'v', NULL, "print every tensor's conversion") },
	{ .name = NULL }
};

#define MAX_OPTIONS 120  /* what the runner takes, with room for its own */
#define MAX_DRIVER_OPTIONS 48
#define MAX_VALUES 16

static fmt_cli_option options[MAX_OPTIONS];
static fmt_format_option driver_options[MAX_DRIVER_OPTIONS];
static size_t n_driver_options;
static char sections[MAX_DRIVER_OPTIONS][sizeof driver_options[0].owners + 16];
static fmt_cli_value values[MAX_DRIVER_OPTIONS][MAX_VALUES + 1];

/* What an option is for: a conversion of models, of datasets, or either. An option for one
 * kind given with the other is refused, never ignored. */
enum { FOR_EITHER, FOR_MODELS, FOR_DATASETS };

static int option_is_for(int id)
{
	if (id >= OPT_DRIVER_FIRST) {
		unsigned kinds = driver_options[id - OPT_DRIVER_FIRST].kinds;
		return kinds == FMT_FOPT_MODELS ? FOR_MODELS : kinds == FMT_FOPT_TABLES ? FOR_DATASETS : FOR_EITHER;
	}
	switch (id) {
	case OPT_DTYPE: case OPT_SHARD: case OPT_SIGN: case FMT_OPT_HMAC_KEY: case FMT_OPT_SECRET_FILE:
	case FMT_OPT_SECRET_ENV: case FMT_OPT_SECRET_PROMPT: case OPT_ARCH: case OPT_SET: case OPT_SET_FROM:
	case OPT_OVERFLOW: case OPT_ALLOW_OVERFLOW: case OPT_ALLOW_REQUANTIZE: case OPT_METADATA_FROM: case OPT_KEYS:
	case OPT_UNSET: case OPT_IN_PLACE: case OPT_OVERRIDE_KV:
		return FOR_MODELS;
	case OPT_FROM: case OPT_ENC_PW_FILE: case OPT_ENC_PW_ENV: case OPT_ENC_TO: case FMT_OPT_PASSWORD_FILE:
	case FMT_OPT_PASSWORD_ENV: case FMT_OPT_IDENTITY: case OPT_ALLOW_EXPIRED:
	case OPT_RENAME: case OPT_ROWS: case OPT_WHERE: case OPT_SAMPLE: case OPT_SEED: case OPT_SHUFFLE: case OPT_DEDUPE:
	case OPT_DEDUPE_ON: case OPT_SORT: case OPT_MEMORY:
		return FOR_DATASETS;
	default:
		return FOR_EITHER;
	}
}

const char *convert_option_name(int id)
{
	for (const fmt_cli_option *p = options; p->name; p++)
		if (p->id == id)
			return p->name;
	return "?";
}

static void note_kind(convert_args *a, int id)
{
	int kind = option_is_for(id);
	if (kind == FOR_MODELS && !a->model_opt)
		a->model_opt = convert_option_name(id);
	else if (kind == FOR_DATASETS && !a->dataset_opt)
		a->dataset_opt = convert_option_name(id);
}

static int push(const char **list, size_t *n, const char *item)
{
	if (*n >= MAX_REPEATS)
		return -1;
	list[(*n)++] = item;
	return 0;
}

/* The options of either kind. */
static int general_option(convert_args *a, int id, const char *arg, fmt_err *e)
{
	fmt_convert_opts *o = &a->o;
	int full = 0;
	switch (id) {
	case 'f': o->force = 1; break;
	case OPT_TO: a->to_name = arg; break;
	case OPT_INCLUDE: full = push(o->include, &o->n_include, arg); break;
	case OPT_EXCLUDE: full = push(o->exclude, &o->n_exclude, arg); break;
	case OPT_DRY_RUN: o->dry_run = 1; break;
	case OPT_SIGN_KEY: o->sign_key = arg; break;
	case OPT_PASS_FILE: o->passphrase.file = o->decrypt.passphrase.file = arg; break;
	case OPT_PASS_ENV: o->passphrase.env = o->decrypt.passphrase.env = arg; break;
	case OPT_NO_VERIFY: o->no_verify = 1; break;
	case 'c':
	case OPT_COMPRESS:
		if (o->compression)   /* the runner refuses each name twice; this, the two names */
			return fmt_fail(e, FMT_USAGE, "--compression and --compress are the same option "
					"(it takes one value)"), -1;
		o->compression = arg;
		break;
	default:
		return fmt_fail(e, FMT_USAGE, "unhandled option"), -1;
	}
	return full ? (fmt_fail(e, FMT_USAGE, "too many repeated options"), -1) : 0;
}

/* The options of a model conversion. */
static int model_option(convert_args *a, int id, const char *arg, fmt_err *e)
{
	fmt_convert_opts *o = &a->o;
	switch (id) {
	case OPT_DTYPE: o->dtype = arg; return 0;
	case OPT_ARCH: o->arch = arg; return 0;
	case OPT_SET:
		return push(o->sets, &o->n_sets, arg) ? (fmt_fail(e, FMT_USAGE, "too many repeated options"), -1) : 0;
	case OPT_SET_FROM: o->set_from = arg; return 0;
	case OPT_METADATA_FROM: o->metadata_from = arg; return 0;
	case OPT_KEYS:
		return push(o->keys, &o->n_keys, arg) ? (fmt_fail(e, FMT_USAGE, "too many repeated options"), -1) : 0;
	case OPT_UNSET:
		return push(o->unsets, &o->n_unsets, arg) ? (fmt_fail(e, FMT_USAGE, "too many repeated options"), -1) : 0;
	case OPT_OVERRIDE_KV:
		return push(o->overrides, &o->n_overrides, arg) ? (fmt_fail(e, FMT_USAGE, "too many repeated options"), -1) : 0;
	case OPT_IN_PLACE: o->in_place = 1; return 0;
	case OPT_SHARD:
		if (fmt_parse_size(arg, &o->shard, e) != FMT_OK || o->shard == 0)
			return fmt_fail(e, FMT_USAGE, "--shard takes a size above 0, e.g. 2GB, 500MB, 1GiB"), -1;
		o->shard_given = 1;
		return 0;
	case OPT_SIGN: o->sign = 1; return 0;
	case OPT_OVERFLOW:
		if (!fmt_overflow_mode_from_name(arg, &o->overflow))
			return fmt_fail(e, FMT_USAGE, "--overflow takes refuse, saturate or widen"), -1;
		a->overflow_given = 1;
		return 0;
	case OPT_ALLOW_OVERFLOW: a->allow_overflow = 1; return 0;
	case OPT_ALLOW_REQUANTIZE: a->o.allow_requantize = 1; return 0;
	default:
		return general_option(a, id, arg, e);
	}
}

static int push_or_fail(const char **list, size_t *n, const char *item, fmt_err *e)
{
	return push(list, n, item) ? (fmt_fail(e, FMT_USAGE, "too many repeated options"), -1) : 0;
}

/* The row and column operations on a dataset (fmt/rowops.h). */
static int row_option(convert_args *a, int id, const char *arg, fmt_err *e)
{
	fmt_rowops_opts *r = &a->o.rows;
	switch (id) {
	case OPT_RENAME: return push_or_fail(a->o.renames, &a->o.n_renames, arg, e);
	case OPT_WHERE: return push_or_fail(a->where, &r->n_where, arg, e);
	case OPT_SORT: return push_or_fail(a->sort, &r->n_sort, arg, e);
	case OPT_DEDUPE_ON: r->dedupe = 1; return push_or_fail(a->dedupe_on, &r->n_dedupe_cols, arg, e);
	case OPT_DEDUPE: r->dedupe = 1; return 0;
	case OPT_SHUFFLE: r->shuffle = 1; return 0;
	case OPT_ROWS:
		r->has_range = 1;
		return fmt_rows_range_parse(arg, &r->row_start, &r->row_end, e) == FMT_OK ? 0 : -1;
	case OPT_SAMPLE: return fmt_sample_parse(arg, &r->sample_n, &r->sample_fraction, e) == FMT_OK ? 0 : -1;
	case OPT_SEED:
		a->seed_given = 1;
		return fmt_parse_u64(arg, UINT64_MAX, &r->seed, e) == FMT_OK ? 0
			: (fmt_fail(e, FMT_USAGE, "--seed takes a number from 0 to 18446744073709551615"), -1);
	case OPT_MEMORY:
		if (fmt_parse_size(arg, &r->memory, e) != FMT_OK || r->memory == 0)
			return fmt_fail(e, FMT_USAGE, "--memory takes a size above 0, e.g. 1GiB, 500MB"), -1;
		return 0;
	default:
		return model_option(a, id, arg, e);
	}
}

/* The options of a dataset conversion. */
static int dataset_option(convert_args *a, int id, const char *arg, fmt_err *e)
{
	fmt_convert_opts *o = &a->o;
	switch (id) {
	case OPT_FROM:
		if (!(o->table_from = fmt_table_driver_by_name(arg))) {
			char names[256], not_word[160];
			fmt_table_driver_names(names, sizeof names);
			return fmt_fail(e, FMT_USAGE, "--from takes %s (%s)", names,
					fmt_not_word(not_word, sizeof not_word, arg, fmt_table_driver_nearest(arg))), -1;
		}
		return 0;
	case OPT_ENC_PW_FILE: o->encrypt_password_file = arg; return 0;
	case OPT_ENC_PW_ENV: o->encrypt_password_env = arg; return 0;
	case OPT_ENC_TO: o->encrypt_to = arg; return 0;
	case OPT_ALLOW_EXPIRED: o->allow_expired = 1; return 0;
	default:
		return row_option(a, id, arg, e);
	}
}

/* The options of an in-place metadata edit. */
static int edits_metadata(int id)
{
	return id == OPT_ARCH || id == OPT_SET || id == OPT_SET_FROM || id == OPT_METADATA_FROM || id == OPT_KEYS ||
	       id == OPT_UNSET || id == OPT_OVERRIDE_KV || id == OPT_IN_PLACE || id == 'f';
}

/* --embed-tests and what goes with it. */
static int embed_option(convert_args *a, int id, const char *arg, fmt_err *e)
{
	if (id == OPT_EMBED_TESTS)
		a->embed.inputs = arg;
	else if (id == OPT_LABELS)
		a->embed.labels = arg;
	else
		return convert_embed_tolerance(a, arg, e);
	return 0;
}

static int on_option(void *ctx, int id, const char *arg, fmt_err *e)
{
	convert_args *a = ctx;
	if (id == OPT_CALIBRATION) {
		if (!a->not_edit_opt)
			a->not_edit_opt = convert_option_name(id);
		a->embed.calibration = arg;
		return 0;
	}
	if (id == OPT_EMBED_TESTS || id == OPT_LABELS || id == OPT_TOLERANCE) {
		if (!a->not_edit_opt)
			a->not_edit_opt = convert_option_name(id);
		return embed_option(a, id, arg, e);
	}
	if (id == OPT_DTYPE || id >= OPT_DRIVER_FIRST)  /* a network's int8, its driver's options */
		a->embed.dtype_or_driver = 1;
	else if (id != 'f' && !a->embed.other_net_opt)
		a->embed.other_net_opt = convert_option_name(id);
	if (id != 'f' && !a->embed.other_opt)
		a->embed.other_opt = convert_option_name(id);
	note_kind(a, id);
	if (!edits_metadata(id) && !a->not_edit_opt)
		a->not_edit_opt = convert_option_name(id);
	if (fmt_cli_key_option(id, arg, &a->o.key) || fmt_cli_decrypt_option(id, arg, &a->o.decrypt))
		return 0;
	if (id >= OPT_DRIVER_FIRST) {
		const fmt_format_option *d = &driver_options[id - OPT_DRIVER_FIRST];
		return fmt_format_option_parse(&a->drvopts, d->opt->name, d->kinds, arg, e);
	}
	return dataset_option(a, id, arg, e);
}

static const fmt_cli_tool tool = {
	.name = TOOL,
	.synopsis = "[OPTIONS] INPUT OUTPUT\n--in-place [METADATA OPTIONS] FILE",
	.about = "Convert a model between safetensors (single file or sharded index), GGUF\n"
		 "(single file or split set), Apsi checkpoints (.apsim, single or sharded) and\n"
		 "APR (.apr, seed or aprender layout), with dtype conversion, quantization and\n"
		 "compression; or a dataset between CSV, JSON Lines, Arrow IPC (file .arrow,\n"
		 "stream .arrows), .ald and Parquet; or an ONNX graph into a netkit .nk network.",
	.options = options,
	.footer = "OUTPUT may be - (standard output, not a terminal) with --to.\n"
		  "Exit status: 0 ok, 2 usage, 3 I/O error, 4 invalid input (or NaN/Inf to quantize, or\n"
		  "values the dtype cannot hold),\n"
		  "5 unsupported version, type or conversion, 6 checksum mismatch, 8 wrong or\n"
		  "missing password or key for an encrypted input, 10 the input's licence expired.",
	.format_names = fmt_output_names,
	.on_option = on_option,
};

static const fmt_cli_complete completes[] = {
	[FMT_DRVOPT_FREE] = FMT_COMPLETE_NONE, [FMT_DRVOPT_FILE] = FMT_COMPLETE_FILE,
	[FMT_DRVOPT_ENV] = FMT_COMPLETE_ENV, [FMT_DRVOPT_WORDS] = FMT_COMPLETE_WORDS,
};

/* A driver's option as an entry of the table, under its format's heading. */
static fmt_cli_option driver_entry(size_t i)
{
	const fmt_drvopt *d = driver_options[i].opt;
	for (size_t v = 0; d->values && d->values[v].word && v < MAX_VALUES; v++)
		values[i][v] = (fmt_cli_value){ d->values[v].word, d->values[v].help, 0 };
	snprintf(sections[i], sizeof sections[i], "Options for %s", driver_options[i].owners);
	return (fmt_cli_option){ FMT_CLI_OPT(d->name, OPT_DRIVER_FIRST + (int)i, d->arg, d->help),
				 .complete = completes[d->complete], .words = d->words,
				 .values = d->values ? values[i] : NULL, .words_from = d->words_from,
				 .section = sections[i], .flags = d->flags & FMT_DRVOPT_REPEAT ? FMT_CLI_REPEAT : 0 };
}

/* A name the tool's own table has (-c/--compression: the tool hands it to the output's driver). */
static int own_option(const char *name)
{
	for (const fmt_cli_option *p = own_options; p->name; p++)
		if (strcmp(p->name, name) == 0)
			return 1;
	return 0;
}

const fmt_cli_tool *convert_tool(convert_args *a)
{
	size_t n = 0;
	list_dtype_values();
	a->o.sets = a->sets;
	a->o.include = a->include;
	a->o.exclude = a->exclude;
	a->o.keys = a->keys;
	a->o.unsets = a->unsets;
	a->o.overrides = a->overrides;
	a->o.renames = a->renames;
	a->o.rows.where = a->where;
	a->o.rows.sort = a->sort;
	a->o.rows.dedupe_cols = a->dedupe_on;
	a->o.options = &a->drvopts;
	a->o.tool = TOOL;
	while (own_options[n].name && n + 1 < MAX_OPTIONS)
		options[n] = own_options[n], n++;
	n_driver_options = fmt_format_options(driver_options, MAX_DRIVER_OPTIONS);
	for (size_t i = 0; i < n_driver_options && n + 1 < MAX_OPTIONS; i++)
		if (!own_option(driver_options[i].opt->name))
			options[n++] = driver_entry(i);
	/* A full table may have dropped an option: a build that grew past it must not run. */
	if (n + 1 >= MAX_OPTIONS || n_driver_options >= MAX_DRIVER_OPTIONS) {
		fputs(TOOL ": internal error: the option table is full (raise MAX_OPTIONS)\n", stderr);
		abort();
	}
	options[n] = (fmt_cli_option){ .name = NULL };
	return &tool;
}
