/* fmt-convert: move a model between formats, with dtype conversion and quantization; move a
 * dataset between CSV, JSON Lines, Arrow IPC and .ald. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/cli.h"
#include "fmt/cli_keys.h"
#include "fmt/out.h"
#include "fmt/report.h"
#include "fmt/pipeline.h"
#include "fmt/progress.h"
#include "fmt/prompt.h"
#include "fmt/table.h"

#define TOOL "fmt-convert"
#define MAX_REPEATS 256

enum { OPT_TO = FMT_OPT_FIRST_TOOL_OPTION, OPT_DTYPE, OPT_ARCH, OPT_SET, OPT_SET_FROM, OPT_INCLUDE,
       OPT_EXCLUDE, OPT_DRY_RUN, OPT_SHARD, OPT_SIGN, OPT_NO_VERIFY, OPT_OVERFLOW, OPT_ALLOW_OVERFLOW,
       OPT_FROM, OPT_NO_HEADER, OPT_DELIMITER, OPT_NULL_VALUE, OPT_SCHEMA, OPT_COMPRESSION, OPT_TYPE,
       OPT_CARD, OPT_CHUNK_ROWS, OPT_TRUENO, OPT_COMPAT, OPT_APR_LAYOUT, OPT_SIGN_KEY, OPT_PASS_FILE,
       OPT_PASS_ENV, OPT_COMPRESS, OPT_ENC_PW_FILE, OPT_ENC_PW_ENV, OPT_ENC_TO, OPT_ALLOW_EXPIRED,
       OPT_METADATA_FROM, OPT_KEYS, OPT_UNSET, OPT_IN_PLACE };

static void dataset_type_words(char *buf, size_t n);

/* Options that exclude each other (fmt_cli_option.group). */
enum { GROUP_KEY = 1 };

static const fmt_cli_value dtypes[] = {
	{ "f32", "float32" },
	{ "f16", "IEEE half precision" },
	{ "bf16", "bfloat16" },
	{ "q8_0", "8-bit blocks of 32" },
	{ "q4_0", "4-bit blocks of 32" },
	{ "int8", "int8 codes, per-row scales" },
	{ "int4", "int4 codes, block-32 scales" },
	{ "fp8", "FP8 E4M3 codes" },
	{ "fp6", "FP6 E3M2 codes" },
	{ "fp4", "FP4 E2M1 codes" },
	{ "keep", "keep each tensor's dtype" },
	{ NULL, NULL }
};

static const fmt_cli_option options[] = {
	{ FMT_CLI_OPT("to", OPT_TO, "FORMAT", "the output format (default: from OUTPUT's extension):"),
	  .complete = FMT_COMPLETE_FORMAT },
	{ FMT_CLI_OPT("dtype", OPT_DTYPE, "TYPE", "f32, f16, bf16, q8_0, q4_0 (GGUF), int8, int4, fp8, fp6,\n"
		      "fp4 (.apsim compressed tensors) or keep (default: f16 for\nGGUF, keep otherwise)"),
	  .complete = FMT_COMPLETE_WORDS, .values = dtypes },
	{ FMT_CLI_OPT("apr-layout", OPT_APR_LAYOUT, "LAYOUT", "seed (default: APR\\x02, XXH3 footer, compression) or\n"
		      "aprender (APR\\0, byte-identical to aprender's writer)"),
	  .complete = FMT_COMPLETE_WORDS, .words = "seed aprender" },
	{ FMT_CLI_OPT("compression", 'c', "CODEC", "what the output format offers: .apr (seed layout, one frame\n"
		      "per tensor; default none): none, lz4[:1-12], zstd[:1-19],\n"
		      "zstd-max; .ald payload: none, zstd (default), zstd-max, lz4"),
	  .complete = FMT_COMPLETE_WORDS, .words = "none lz4 zstd zstd:19 zstd-max" },
	{ FMT_CLI_OPT("compress", OPT_COMPRESS, "CODEC", "the same as --compression"),
	  .complete = FMT_COMPLETE_WORDS, .words = "none lz4 zstd zstd:19 zstd-max" },
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
	{ FMT_CLI_OPT("passphrase-file", OPT_PASS_FILE, "FILE", "--sign-key's passphrase from FILE (one final newline removed)"),
	  .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("passphrase-env", OPT_PASS_ENV, "NAME", "--sign-key's passphrase from the environment variable NAME"),
	  .complete = FMT_COMPLETE_ENV },
	{ FMT_CLI_OPT("no-verify", OPT_NO_VERIFY, NULL, "do not check the input's digest before converting") },
	{ FMT_CLI_OPT("arch", OPT_ARCH, "NAME", "set general.architecture (GGUF; arch for APR)"),
	  .complete = FMT_COMPLETE_WORDS, .words_from = fmt_driver_arch_words },
	{ FMT_CLI_OPT("set", OPT_SET, "KEY[:TYPE]=VALUE", "add or replace a metadata key; TYPE is one of\n"
		      "u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool str (default str);\n"
		      "KEY:TYPE[]=V1,V2,... sets an array (\\, for a comma)"), .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("set-from", OPT_SET_FROM, "FILE", "add the keys of a JSON object; {\"type\": T, \"value\": V}\n"
		      "types a value or an array's items (fmt-inspect --json --full\n"
		      "prints every key so: its \"metadata_typed\")"),
	  .complete = FMT_COMPLETE_FILE, .words = "*.json" },
	{ FMT_CLI_OPT("metadata-from", OPT_METADATA_FROM, "FILE", "copy the metadata keys of another model file (a GGUF\n"
		      "vocabulary), types kept; not its alignment, split or file type keys"),
	  .complete = FMT_COMPLETE_FILE, .words = "*.gguf" },
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
	{ FMT_CLI_OPT("include", OPT_INCLUDE, "GLOB", "convert only tensors (of a dataset: columns) whose name\nmatches (repeatable)"),
	  .complete = FMT_COMPLETE_TENSOR, .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("exclude", OPT_EXCLUDE, "GLOB", "leave out tensors (columns) whose name matches (repeatable)"),
	  .complete = FMT_COMPLETE_TENSOR, .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("dry-run", OPT_DRY_RUN, NULL, "print the plan (every tensor, its dtypes and bytes; a\n"
		      "dataset's schema); write nothing") },
	{ FMT_CLI_OPT("from", OPT_FROM, "FORMAT", "datasets: read INPUT as this format, not by its content"),
	  .complete = FMT_COMPLETE_WORDS, .words = "csv jsonl arrow arrow-stream ald" },
	{ FMT_CLI_OPT("no-header", OPT_NO_HEADER, NULL, "CSV: no header row (columns column_1, column_2, ...)") },
	{ FMT_CLI_OPT("delimiter", OPT_DELIMITER, "C", "CSV: field delimiter (default: detected from , tab ;),\n"
		      "'tab' for a tab") },
	{ FMT_CLI_OPT("null-value", OPT_NULL_VALUE, "S", "CSV: fields equal to S are null (empty ones always are)") },
	{ FMT_CLI_OPT("schema", OPT_SCHEMA, "FILE", "CSV: force column types, {\"column\": \"int32\", ...}"),
	  .complete = FMT_COMPLETE_FILE, .words = "*.json" },
	{ FMT_CLI_OPT("type", OPT_TYPE, "NAME", ".ald dataset type (default tabular)"),
	  .complete = FMT_COMPLETE_WORDS, .words = "tabular time_series graph spatial text_corpus "
	  "text_classification text_pairs sequence_labeling question_answering summarization translation "
	  "image_classification object_detection segmentation image_pairs video audio_classification "
	  "speech_recognition speaker_identification user_item_ratings implicit_feedback sequential_recs "
	  "image_text audio_text video_text custom" },
	{ FMT_CLI_OPT("card", OPT_CARD, "FILE", ".ald dataset card (JSON: name, version, license, tags, ...)"),
	  .complete = FMT_COMPLETE_FILE, .words = "*.json" },
	{ FMT_CLI_OPT("chunk-rows", OPT_CHUNK_ROWS, "N", ".ald STREAMING: independently compressed chunks of N rows") },
	{ FMT_CLI_OPT("trueno-native", OPT_TRUENO, NULL, ".ald TRUENO_NATIVE: numeric columns as aligned raw arrays") },
	{ FMT_CLI_OPT("compat", OPT_COMPAT, "NAME", ".ald as alimentar 0.2 writes it (metadata array, its CRC)"),
	  .complete = FMT_COMPLETE_WORDS, .words = "alimentar" },
	{ FMT_CLI_OPT("encrypt-password-file", OPT_ENC_PW_FILE, "FILE", ".ald: encrypt the payload with the password in FILE\n"
		      "(Argon2id, AES-256-GCM)"), .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("encrypt-password-env", OPT_ENC_PW_ENV, "NAME", ".ald: encrypt with the password in variable NAME"),
	  .complete = FMT_COMPLETE_ENV },
	{ FMT_CLI_OPT("encrypt-to", OPT_ENC_TO, "PUBKEY", ".ald: encrypt to the X25519 public key file PUBKEY\n"
		      "(fmt-sign keygen --x25519)"), .complete = FMT_COMPLETE_FILE, .words = "*.pub" },
	FMT_CLI_DECRYPT_OPTIONS,
	{ FMT_CLI_OPT("allow-expired", OPT_ALLOW_EXPIRED, NULL, ".ald: read the rows although the licence has expired\n"
		      "(said on stderr); without it that is exit 10") },
	{ FMT_CLI_OPT("force", 'f', NULL, "overwrite OUTPUT if it exists") },
	{ FMT_CLI_OPT("threads", 'T', "N", "worker threads (default: number of cores); same bytes for any N") },
	{ FMT_CLI_OPT("json", 'j', NULL, "report as one JSON object") },
	{ FMT_CLI_OPT("quiet", 'q', NULL, "no warnings") },
	{ FMT_CLI_OPT("verbose", 'v', NULL, "print every tensor's conversion") },
	{ .name = NULL }
};

typedef struct convert_args {
	fmt_convert_opts o;
	const char *to_name;        /* --to */
	int overflow_given, allow_overflow;
	const char *model_opt;      /* the first option for models only that was given, or NULL */
	const char *dataset_opt;    /* ... for datasets only */
	const char *not_edit_opt;   /* the first option that --in-place cannot take, or NULL */
} convert_args;

/* The options of an in-place metadata edit. */
static int edits_metadata(int id)
{
	return id == OPT_ARCH || id == OPT_SET || id == OPT_SET_FROM || id == OPT_METADATA_FROM || id == OPT_KEYS ||
	       id == OPT_UNSET || id == OPT_IN_PLACE || id == 'f';
}

/* What an option is for: a conversion of models, of datasets, or either. An option for one
 * kind given with the other is refused, never ignored. */
enum { FOR_EITHER, FOR_MODELS, FOR_DATASETS };

static int option_is_for(int id)
{
	switch (id) {
	case OPT_DTYPE: case OPT_APR_LAYOUT: case OPT_SHARD: case OPT_SIGN: case FMT_OPT_HMAC_KEY:
	case FMT_OPT_SECRET_FILE: case FMT_OPT_SECRET_ENV: case FMT_OPT_SECRET_PROMPT: case OPT_ARCH:
	case OPT_SET: case OPT_SET_FROM: case OPT_OVERFLOW: case OPT_ALLOW_OVERFLOW:
	case OPT_METADATA_FROM: case OPT_KEYS: case OPT_UNSET: case OPT_IN_PLACE:
		return FOR_MODELS;
	case OPT_FROM: case OPT_NO_HEADER: case OPT_DELIMITER: case OPT_NULL_VALUE: case OPT_SCHEMA:
	case OPT_TYPE: case OPT_CARD: case OPT_CHUNK_ROWS: case OPT_TRUENO: case OPT_COMPAT:
	case OPT_ENC_PW_FILE: case OPT_ENC_PW_ENV: case OPT_ENC_TO: case FMT_OPT_PASSWORD_FILE:
	case FMT_OPT_PASSWORD_ENV: case FMT_OPT_IDENTITY: case OPT_ALLOW_EXPIRED:
		return FOR_DATASETS;
	default:
		return FOR_EITHER;
	}
}

/* The long name of option id (the first of its spellings). */
static const char *option_name(int id)
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
		a->model_opt = option_name(id);
	else if (kind == FOR_DATASETS && !a->dataset_opt)
		a->dataset_opt = option_name(id);
}

static int parse_count(const char *s, uint64_t *out)
{
	char *end;
	if (!*s || *s == '-' || *s == '+')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end || v == 0 || v > UINT32_MAX)
		return -1;
	*out = v;
	return 0;
}

/* The dataset options: 0 when id was one and its value is good, 1 when id is not one, -1 with
 * e filled on a bad value. */
static int dataset_option(int id, const char *arg, fmt_convert_opts *o, fmt_err *e)
{
	fmt_dataset_opts *d = &o->dataset;
	int v;
	switch (id) {
	case OPT_FROM:
		if (!(o->table_from = fmt_table_driver_by_name(arg)))
			return fmt_fail(e, FMT_USAGE, "--from takes csv, jsonl, arrow, arrow-stream or ald"), -1;
		return 0;
	case OPT_NO_HEADER: d->no_header = 1; d->given |= FMT_DOPT_NO_HEADER; return 0;
	case OPT_DELIMITER:
		if (!strcmp(arg, "tab"))
			d->delimiter = '\t';
		else if (strlen(arg) == 1 && arg[0] != '"' && arg[0] != '\n' && arg[0] != '\r')
			d->delimiter = arg[0];
		else
			return fmt_fail(e, FMT_USAGE, "--delimiter takes one character (or 'tab'), not a quote or a newline"), -1;
		d->given |= FMT_DOPT_DELIMITER;
		return 0;
	case OPT_NULL_VALUE: d->null_value = arg; d->given |= FMT_DOPT_NULL_VALUE; return 0;
	case OPT_SCHEMA: o->schema_file = arg; d->given |= FMT_DOPT_SCHEMA; return 0;
	case OPT_CARD: o->card_file = arg; d->given |= FMT_DOPT_CARD; return 0;
	case OPT_TYPE:
		if ((v = fmt_ald_type_by_name(arg)) < 0) {
			char names[512];
			dataset_type_words(names, sizeof names);
			return fmt_fail(e, FMT_USAGE, "--type takes one of: %s", names), -1;
		}
		d->dataset_type = (uint16_t)v;
		d->given |= FMT_DOPT_TYPE;
		return 0;
	case OPT_CHUNK_ROWS:
		if (parse_count(arg, &d->chunk_rows))
			return fmt_fail(e, FMT_USAGE, "--chunk-rows takes a row count from 1 to 4294967295"), -1;
		d->given |= FMT_DOPT_CHUNK_ROWS;
		return 0;
	case OPT_TRUENO: d->trueno_native = 1; d->given |= FMT_DOPT_TRUENO; return 0;
	case OPT_COMPAT:
		if (strcmp(arg, "alimentar") != 0)
			return fmt_fail(e, FMT_USAGE, "--compat takes alimentar"), -1;
		d->compat_alimentar = 1;
		d->given |= FMT_DOPT_COMPAT;
		return 0;
	default:
		return 1;
	}
}

static void dataset_type_words(char *buf, size_t n)
{
	fmt_ald_type_names(buf, n);
}

/* The output extensions of the writable table drivers: ".ald, .arrow, .feather, ...". */
static void table_extensions(char *buf, size_t n)
{
	size_t used = 0;
	buf[0] = '\0';
	for (const fmt_table_driver *const *d = fmt_table_drivers(); *d; d++) {
		if (!(*d)->write || !(*d)->extension)
			continue;
		used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s%s", used ? ", " : "", (*d)->extension);
		for (const char *const *x = (*d)->more_extensions; x && *x; x++)
			used += (size_t)snprintf(buf + used, used < n ? n - used : 0, ", %s", *x);
	}
}

static int push(const char **list, size_t *n, const char *item)
{
	if (*n >= MAX_REPEATS)
		return -1;
	list[(*n)++] = item;
	return 0;
}
static int has_layout(const fmt_driver *d, const char *layout)
{
	for (size_t i = 0; d->layouts && d->layouts[i]; i++)
		if (strcmp(d->layouts[i], layout) == 0)
			return 1;
	return 0;
}

/* The writer for an output name; NAME.<ext>.index.json asks for a shard set of <ext>. */
static const fmt_driver *output_driver(const char *output, int *force_set)
{
	static const char index_suffix[] = ".index.json";
	const fmt_driver *d = fmt_driver_by_extension(output);
	size_t n = strlen(output), s = sizeof index_suffix - 1;
	if (d && d->write)
		return d;
	if (n <= s || strcmp(output + n - s, index_suffix) != 0)
		return NULL;
	char *base = strndup(output, n - s);
	d = base ? fmt_driver_by_extension(base) : NULL;
	free(base);
	*force_set = d && d->write_sharded;
	return *force_set ? d : NULL;
}

static int on_option(void *ctx, int id, const char *arg, fmt_err *e)
{
	convert_args *a = ctx;
	fmt_convert_opts *o = &a->o;
	int full = 0;
	note_kind(a, id);
	if (!edits_metadata(id) && !a->not_edit_opt)
		a->not_edit_opt = option_name(id);
	if (fmt_cli_key_option(id, arg, &o->key) || fmt_cli_decrypt_option(id, arg, &o->decrypt))
		return 0;
	switch (id) {
	case OPT_ENC_PW_FILE: o->encrypt_password_file = arg; break;
	case OPT_ENC_PW_ENV: o->encrypt_password_env = arg; break;
	case OPT_ENC_TO: o->encrypt_to = arg; break;
	case OPT_ALLOW_EXPIRED: o->allow_expired = 1; break;
	case 'f': o->force = 1; break;
	case OPT_TO: a->to_name = arg; break;
	case OPT_DTYPE: o->dtype = arg; break;
	case OPT_ARCH: o->arch = arg; break;
	case OPT_SET: full = push(o->sets, &o->n_sets, arg); break;
	case OPT_SET_FROM: o->set_from = arg; break;
	case OPT_METADATA_FROM: o->metadata_from = arg; break;
	case OPT_KEYS: full = push(o->keys, &o->n_keys, arg); break;
	case OPT_UNSET: full = push(o->unsets, &o->n_unsets, arg); break;
	case OPT_IN_PLACE: o->in_place = 1; break;
	case OPT_INCLUDE: full = push(o->include, &o->n_include, arg); break;
	case OPT_EXCLUDE: full = push(o->exclude, &o->n_exclude, arg); break;
	case OPT_DRY_RUN: o->dry_run = 1; break;
	case OPT_SHARD:
		if (fmt_parse_size(arg, &o->shard, e) != FMT_OK || o->shard == 0)
			return fmt_fail(e, FMT_USAGE, "--shard takes a size above 0, e.g. 2GB, 500MB, 1GiB"), -1;
		o->shard_given = 1;
		break;
	case OPT_SIGN: o->sign = 1; break;
	case OPT_SIGN_KEY: o->sign_key = arg; break;
	case OPT_PASS_FILE: o->passphrase.file = arg; break;
	case OPT_PASS_ENV: o->passphrase.env = arg; break;
	case OPT_NO_VERIFY: o->no_verify = 1; break;
	case OPT_APR_LAYOUT: o->layout = arg; break;
	case 'c':
	case OPT_COMPRESS:
		if (o->compression)   /* the runner refuses each name twice; this, the two names */
			return fmt_fail(e, FMT_USAGE, "--compression and --compress are the same option "
					"(it takes one value)"), -1;
		o->compression = arg;
		break;
	case OPT_OVERFLOW:
		if (!fmt_overflow_mode_from_name(arg, &o->overflow))
			return fmt_fail(e, FMT_USAGE, "--overflow takes refuse, saturate or widen"), -1;
		a->overflow_given = 1;
		break;
	case OPT_ALLOW_OVERFLOW: a->allow_overflow = 1; break;
	default: {
		int r = dataset_option(id, arg, o, e);
		if (r == 1)
			return fmt_fail(e, FMT_USAGE, "unhandled option"), -1;
		if (r < 0)
			return -1;
	}
	}
	return full ? (fmt_fail(e, FMT_USAGE, "too many repeated options"), -1) : 0;
}

static const fmt_cli_tool tool = {
	.name = TOOL,
	.synopsis = "[OPTIONS] INPUT OUTPUT\n--in-place [METADATA OPTIONS] FILE",
	.about = "Convert a model between safetensors (single file or sharded index), GGUF\n"
		 "(single file or split set), Apsi checkpoints (.apsim, single or sharded) and\n"
		 "APR (.apr, seed or aprender layout), with dtype conversion, quantization and\n"
		 "compression; or a dataset between CSV, JSON Lines, Arrow IPC (file .arrow,\n"
		 "stream .arrows) and .ald.",
	.options = options,
	.footer = "OUTPUT may be - (standard output, not a terminal) with --to.\n"
		  "Exit status: 0 ok, 2 usage, 3 I/O error, 4 invalid input (or NaN/Inf to quantize, or\n"
		  "values the dtype cannot hold),\n"
		  "5 unsupported version, type or conversion, 6 checksum mismatch, 8 wrong or\n"
		  "missing password or key for an encrypted input, 10 the input's licence expired.",
	.format_names = fmt_writer_names,
	.on_option = on_option,
};

/* --sign-key's key, wiped at exit whichever way main returns. */
static fmt_ms_secret sign_secret;

static void wipe_sign_secret(void)
{
	fmt_ms_secret_free(&sign_secret);
}

/* The conversion failed: its error, and with --json its record on stdout unless stdout carries
 * the output's bytes. */
static void report_failed(const char *input, const char *output, const fmt_convert_opts *o, const fmt_err *e)
{
	int data_on_stdout = strcmp(output, "-") == 0 && !o->dry_run;
	fmt_report_failed(data_on_stdout ? NULL : o->out, TOOL, input, NULL, e, o->json);
}

/* --in-place FILE: the metadata options, nothing else. */
static int edit_in_place(convert_args *a, fmt_cli *cli)
{
	char msg[200];
	fmt_convert_opts *o = &a->o;
	fmt_err e;
	fmt_err_clear(&e);
	o->json = cli->common.json;
	o->verbose = cli->common.verbose;
	if (a->not_edit_opt) {
		snprintf(msg, sizeof msg, "--in-place edits metadata only: --%s does not go with it", a->not_edit_opt);
		return fmt_cli_usage_error(&tool, msg);
	}
	if (cli->n_operands != 1)
		return fmt_cli_usage_error(&tool, "--in-place takes one FILE");
	if (!o->arch && !o->n_sets && !o->set_from && !o->metadata_from && !o->n_unsets)
		return fmt_cli_usage_error(&tool, "--in-place needs --set, --set-from, --metadata-from, --unset or --arch");
	fmt_kind k = fmt_pipeline_edit(cli->operands[0], o, &e);
	if (k != FMT_OK)
		fmt_report_failed(o->out, TOOL, cli->operands[0], NULL, &e, o->json);
	return fmt_cli_finish(&tool, cli, fmt_kind_exit(k));
}

int main(int argc, char **argv)
{
	static const char *sets[MAX_REPEATS], *includes[MAX_REPEATS], *excludes[MAX_REPEATS];
	static const char *keys[MAX_REPEATS], *unsets[MAX_REPEATS];
	convert_args a = { .o = { .sets = sets, .include = includes, .exclude = excludes, .keys = keys,
				  .unsets = unsets, .dataset = { .compression = -1 }, .tool = TOOL } };
	fmt_convert_opts *o = &a.o;
	fmt_cli cli;
	fmt_err e;
	fmt_err_clear(&e);
	if (!fmt_cli_parse(&tool, argc, argv, &a, &cli))
		return cli.exit_code;
	o->out = stdout;
	o->err = stderr;
	fmt_cli_pipeline_reports(o);
	o->decrypt.ask = fmt_prompt_password;
	if (o->dataset.compression < 0) /* not given: zstd, or none for TRUENO_NATIVE's raw arrays */
		o->dataset.compression = o->dataset.trueno_native ? FMT_ALD_NONE : FMT_ALD_ZSTD;
	if (a.allow_overflow && a.overflow_given && o->overflow != FMT_OVERFLOW_SATURATE)
		return fmt_cli_usage_error(&tool, "--allow-overflow means --overflow=saturate; it contradicts --overflow=refuse or widen");
	if (a.allow_overflow)
		o->overflow = FMT_OVERFLOW_SATURATE;
	if (o->in_place)
		return edit_in_place(&a, &cli);
	if (o->n_keys && !o->metadata_from)
		return fmt_cli_usage_error(&tool, "--keys chooses the keys of --metadata-from");
	if (cli.n_operands != 2)
		return fmt_cli_usage_error(&tool, "need INPUT and OUTPUT");
	const char *input = cli.operands[0], *output = cli.operands[1];
	if (o->sign_key && (o->sign || fmt_key_opts_given(&o->key)))
		return fmt_cli_usage_error(&tool, "--sign-key (Ed25519) and --sign or an HMAC key option are "
					   "different signatures: give one");
	if ((o->passphrase.file || o->passphrase.env) && !o->sign_key)
		return fmt_cli_usage_error(&tool, "--passphrase-file and --passphrase-env are for --sign-key");
	if (o->passphrase.file && o->passphrase.env)
		return fmt_cli_usage_error(&tool, "--passphrase-file and --passphrase-env: give one");
	o->json = cli.common.json;
	o->quiet = cli.common.quiet;
	o->verbose = cli.common.verbose;
	o->no_progress = cli.common.no_progress;
	o->threads = cli.common.threads ? cli.common.threads : fmt_cpu_count();
	o->passphrase = fmt_cli_pass_opts(o->passphrase.file, o->passphrase.env, &cli.common);
	o->table_to = a.to_name ? fmt_table_driver_by_name(a.to_name) : fmt_table_driver_by_extension(output);
	if (o->sign_key) {
		int ed = o->table_to && o->table_to->write ? (o->table_to->caps & FMT_CAP_ED25519_SIGN) != 0 : -1;
		if (ed < 0) {
			const fmt_driver *d = a.to_name ? fmt_driver_by_name(a.to_name) : output_driver(output, &o->force_set);
			ed = d && fmt_driver_can(d, FMT_CAP_ED25519_SIGN);
		}
		if (!ed)
			return fmt_cli_usage_error(&tool, "--sign-key needs an output format with embedded Ed25519 "
						   "signatures (.apsim, .ald); sign other files with fmt-sign sign -s");
		fmt_kind k = fmt_ms_secret_load(o->sign_key, &o->passphrase, &sign_secret, &e);
		if (k != FMT_OK) {
			report_failed(input, output, o, &e);
			return fmt_cli_finish(&tool, &cli, fmt_kind_exit(k));
		}
		o->sign_secret = &sign_secret;
		atexit(wipe_sign_secret);
	}
	if (o->table_to && o->table_to->write) {
		if (a.model_opt) {
			char msg[200];
			snprintf(msg, sizeof msg, "--%s applies to models, not to datasets (the output is %s)",
				 a.model_opt, o->table_to->name);
			return fmt_cli_usage_error(&tool, msg);
		}
		int v = o->compression ? fmt_ald_compression_by_name(o->compression) : o->dataset.compression;
		if (v < 0)
			return fmt_cli_usage_error(&tool, "--compression takes none, zstd, zstd-max or lz4 for a dataset");
		o->dataset.compression = v;
		if (o->compression && v != FMT_ALD_NONE) /* none: what every other format does anyway */
			o->dataset.given |= FMT_DOPT_COMPRESSION;
		fmt_kind k = fmt_pipeline_dataset(input, output, o, &e);
		if (k != FMT_OK)
			report_failed(input, output, o, &e);
		return fmt_cli_finish(&tool, &cli, fmt_kind_exit(k));
	}
	if (o->decrypt.password_file || o->decrypt.password_env || o->decrypt.identity)
		return fmt_cli_usage_error(&tool, "--password-file, --password-env and --identity decrypt a dataset "
					   "(.ald) and need a dataset output");
	if (a.dataset_opt) {
		char exts[256], msg[400];
		table_extensions(exts, sizeof exts);
		snprintf(msg, sizeof msg, "--%s applies to datasets, not to models: dataset options need a dataset "
			 "output (%s or --to)", a.dataset_opt, exts);
		return fmt_cli_usage_error(&tool, msg);
	}
	o->to = a.to_name ? fmt_driver_by_name(a.to_name) : output_driver(output, &o->force_set);
	if (!o->to || !o->to->write) {
		char msg[FMT_ERR_MSG_MAX] = "cannot tell the output format from its name; use --to";
		if (a.to_name) {
			char names[512];
			fmt_writer_names(names, sizeof names);
			snprintf(msg, sizeof msg, "--to takes %s", names);
		}
		return fmt_cli_usage_error(&tool, msg);
	}
	if (o->layout && !has_layout(o->to, o->layout))
		return fmt_cli_usage_error(&tool, o->to->layouts ? "--apr-layout takes seed or aprender"
								 : "--apr-layout needs .apr output");
	if (o->compression && fmt_codec_parse(o->to, o->compression, &o->codec, &o->codec_level, &e) != FMT_OK)
		return fmt_cli_usage_error(&tool, e.msg);
	o->json = cli.common.json;
	o->quiet = cli.common.quiet;
	o->verbose = cli.common.verbose;
	o->no_progress = cli.common.no_progress;
	o->threads = cli.common.threads ? cli.common.threads : fmt_cpu_count();
	if (o->sign && !fmt_key_opts_given(&o->key))
		o->key.hmac_key = 1;
	fmt_kind k = fmt_pipeline_run(input, output, o, &e);
	if (k != FMT_OK)
		report_failed(input, output, o, &e);
	return fmt_cli_finish(&tool, &cli, fmt_kind_exit(k));
}
