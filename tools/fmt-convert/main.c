/* fmt-convert: move a model between formats, with dtype conversion and quantization. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/cli.h"
#include "fmt/out.h"
#include "convert.h"

#define TOOL "fmt-convert"
#define MAX_REPEATS 256

enum { OPT_TO = FMT_OPT_FIRST_TOOL_OPTION, OPT_DTYPE, OPT_ARCH, OPT_SET, OPT_SET_FROM, OPT_INCLUDE,
       OPT_EXCLUDE, OPT_DRY_RUN, OPT_SHARD, OPT_SIGN, OPT_NO_VERIFY, OPT_FROM, OPT_NO_HEADER,
       OPT_DELIMITER, OPT_NULL_VALUE, OPT_SCHEMA, OPT_COMPRESSION, OPT_TYPE, OPT_CARD, OPT_CHUNK_ROWS,
       OPT_TRUENO, OPT_COMPAT };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " TOOL " [OPTIONS] INPUT OUTPUT\n"
		"Convert a model between safetensors (single file or sharded index), GGUF\n"
		"(single file or split set) and Apsi checkpoints (.apsim, single or sharded),\n"
		"with dtype conversion, quantization and compression.\n"
		"\n"
		"      --to FORMAT         safetensors, gguf or apsim (default: from OUTPUT's extension)\n"
		"      --dtype TYPE        f32, f16, bf16, q8_0, q4_0 (GGUF), int8, int4, fp8, fp6,\n"
		"                          fp4 (.apsim compressed tensors) or keep (default: f16 for\n"
		"                          GGUF, keep otherwise)\n"
		"      --shard SIZE        write a shard set of at most SIZE of tensor data per shard\n"
		"                          (default: 5GB for safetensors, 4GB for .apsim, none for GGUF)\n"
		"      --sign              sign the .apsim output (the per-user key unless a secret is given)\n"
		"      --hmac-key          sign with the per-user key (fmt-sign keygen --hmac)\n"
		"      --secret-file FILE  sign with the team secret in FILE\n"
		"      --secret-env NAME   sign with the team secret in environment variable NAME\n"
		"      --secret-prompt     sign with a team secret typed at a prompt\n"
		"      --no-verify         do not check the input's digest before converting\n"
		"      --arch NAME         set general.architecture (GGUF)\n"
		"      --set KEY[:TYPE]=VALUE  add or replace a metadata key; TYPE is one of\n"
		"                          u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool str (default str)\n"
		"      --set-from FILE     add the keys of a JSON object\n"
		"      --include GLOB      convert only tensors whose name matches (repeatable)\n"
		"      --exclude GLOB      leave out tensors whose name matches (repeatable)\n"
		"      --dry-run           print the plan (every tensor, its dtypes and bytes); write nothing\n"
		"  -f, --force             overwrite OUTPUT if it exists\n"
		"  -T, --threads N         worker threads (default: number of cores); same bytes for any N\n"
		"  -j, --json              report as one JSON object\n"
		"  -q, --quiet             no warnings\n"
		"  -v, --verbose           print every tensor's conversion\n"
		"      --no-progress       no progress bar\n"
		"  -h, --help              this help\n"
		"      --version           print the version\n"
		"\n"
		"\n"
		"Datasets (CSV, JSON Lines, Arrow IPC file or stream, .ald), chosen by OUTPUT's\n"
		"extension (.csv .jsonl .arrow .arrows .ald) or --to csv|jsonl|arrow|arrow-stream|ald:\n"
		"      --from FORMAT       read INPUT as this format instead of detecting it\n"
		"      --no-header         the CSV has no header row (columns column_1, column_2, ...)\n"
		"      --delimiter C       CSV field delimiter (default: , or detected; 'tab' for a tab)\n"
		"      --null-value S      CSV fields equal to S are null (empty fields always are)\n"
		"      --schema FILE.json  force column types: {\"column\": \"int32\", ...}\n"
		"      --compression C     .ald payload: none, zstd (level 3, default), zstd-max (19), lz4\n"
		"      --type NAME         .ald dataset type (default tabular; see fmt-convert(1))\n"
		"      --card FILE.json    .ald dataset card (name, version, license, tags, ...)\n"
		"      --chunk-rows N      .ald STREAMING: independently compressed chunks of N rows\n"
		"      --compat alimentar  .ald as alimentar 0.2 writes it (metadata array, its CRC)\n"
		"\n"
		"OUTPUT may be - (standard output, not a terminal) with --to.\n"
		"Exit status: 0 ok, 2 usage, 3 I/O error, 4 invalid input (or NaN/Inf to quantize),\n"
		"5 unsupported version, type or conversion.\n");
}

static const struct option long_opts[] = {
	FMT_COMMON_LONG_OPTIONS,
	{ "threads", required_argument, NULL, 'T' }, { "force", no_argument, NULL, 'f' },
	{ "to", required_argument, NULL, OPT_TO }, { "dtype", required_argument, NULL, OPT_DTYPE },
	{ "arch", required_argument, NULL, OPT_ARCH }, { "set", required_argument, NULL, OPT_SET },
	{ "set-from", required_argument, NULL, OPT_SET_FROM },
	{ "include", required_argument, NULL, OPT_INCLUDE }, { "exclude", required_argument, NULL, OPT_EXCLUDE },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN }, { "shard", required_argument, NULL, OPT_SHARD },
	{ "sign", no_argument, NULL, OPT_SIGN }, { "no-verify", no_argument, NULL, OPT_NO_VERIFY },
	{ "from", required_argument, NULL, OPT_FROM }, { "no-header", no_argument, NULL, OPT_NO_HEADER },
	{ "delimiter", required_argument, NULL, OPT_DELIMITER },
	{ "null-value", required_argument, NULL, OPT_NULL_VALUE },
	{ "schema", required_argument, NULL, OPT_SCHEMA },
	{ "compression", required_argument, NULL, OPT_COMPRESSION },
	{ "type", required_argument, NULL, OPT_TYPE }, { "card", required_argument, NULL, OPT_CARD },
	{ "chunk-rows", required_argument, NULL, OPT_CHUNK_ROWS },
	{ "trueno-native", no_argument, NULL, OPT_TRUENO },
	{ "compat", required_argument, NULL, OPT_COMPAT },
	FMT_KEY_LONG_OPTIONS, { NULL, 0, NULL, 0 }
};

static int usage_error(const char *msg)
{
	return fmt_report_usage(stderr, TOOL, msg);
}

static int parse_count(const char *s, uint64_t *out)
{
	char *end;
	if (!*s || *s == '-')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end || v == 0 || v > UINT32_MAX)
		return -1;
	*out = v;
	return 0;
}

/* The dataset options; 0 when c was one and is valid, -1 with e filled otherwise. */
static int dataset_option(int c, const char *arg, convert_opts *o, fmt_err *e)
{
	fmt_dataset_opts *d = &o->dataset;
	char names[512];
	int id;
	switch (c) {
	case OPT_FROM:
		if (!(o->table_from = fmt_table_driver_by_name(arg)))
			return fmt_fail(e, FMT_USAGE, "--from takes csv, jsonl, arrow, arrow-stream or ald"), -1;
		return 0;
	case OPT_NO_HEADER: d->no_header = 1; return 0;
	case OPT_DELIMITER:
		if (!strcmp(arg, "tab") || !strcmp(arg, "\\t"))
			d->delimiter = '\t';
		else if (strlen(arg) == 1 && arg[0] != '"' && arg[0] != '\n' && arg[0] != '\r')
			d->delimiter = arg[0];
		else
			return fmt_fail(e, FMT_USAGE, "--delimiter takes one character (or 'tab'), not a quote or newline"), -1;
		return 0;
	case OPT_NULL_VALUE: d->null_value = arg; return 0;
	case OPT_SCHEMA: o->schema_file = arg; return 0;
	case OPT_CARD: o->card_file = arg; return 0;
	case OPT_COMPRESSION:
		if ((id = fmt_ald_compression_by_name(arg)) < 0)
			return fmt_fail(e, FMT_USAGE, "--compression takes none, zstd, zstd-max or lz4"), -1;
		d->compression = id;
		return 0;
	case OPT_TYPE:
		if ((id = fmt_ald_type_by_name(arg)) < 0) {
			fmt_ald_type_names(names, sizeof names);
			return fmt_fail(e, FMT_USAGE, "--type takes one of: %s", names), -1;
		}
		d->dataset_type = (uint16_t)id;
		return 0;
	case OPT_CHUNK_ROWS:
		if (parse_count(arg, &d->chunk_rows))
			return fmt_fail(e, FMT_USAGE, "--chunk-rows takes a row count from 1 to 4294967295"), -1;
		if (d->chunk_rows < 65536)
			d->batch_rows = d->chunk_rows;
		return 0;
	case OPT_TRUENO: d->trueno_native = 1; return 0;
	case OPT_COMPAT:
		if (strcmp(arg, "alimentar") != 0)
			return fmt_fail(e, FMT_USAGE, "--compat takes alimentar"), -1;
		d->compat_alimentar = 1;
		return 0;
	default:
		return fmt_fail(e, FMT_USAGE, "unknown option"), -1;
	}
}

static int push(const char **list, size_t *n, const char *item)
{
	if (*n >= MAX_REPEATS)
		return -1;
	list[(*n)++] = item;
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

int main(int argc, char **argv)
{
	static const char *sets[MAX_REPEATS], *includes[MAX_REPEATS], *excludes[MAX_REPEATS];
	fmt_common_opts common = { 0 };
	convert_opts o = { .sets = sets, .include = includes, .exclude = excludes,
			   .dataset = { .compression = FMT_ALD_ZSTD } };
	const char *to_name = NULL;
	int dataset_opts = 0;
	fmt_err e;
	int c;
	fmt_err_clear(&e);
	while ((c = getopt_long(argc, argv, "jqvhfT:", long_opts, NULL)) != -1) {
		int r = fmt_cli_common(c, optarg, &common, &e);
		if (r < 0)
			return usage_error(e.msg);
		if (r > 0 || fmt_cli_key_option(c, optarg, &o.key))
			continue;
		int full = 0;
		switch (c) {
		case 'h': usage(stdout); return 0;
		case FMT_OPT_VERSION: fmt_cli_version(stdout, TOOL); return 0;
		case 'f': o.force = 1; break;
		case OPT_TO: to_name = optarg; break;
		case OPT_DTYPE: o.dtype = optarg; break;
		case OPT_ARCH: o.arch = optarg; break;
		case OPT_SET: full = push(sets, &o.n_sets, optarg); break;
		case OPT_SET_FROM: o.set_from = optarg; break;
		case OPT_INCLUDE: full = push(includes, &o.n_include, optarg); break;
		case OPT_EXCLUDE: full = push(excludes, &o.n_exclude, optarg); break;
		case OPT_DRY_RUN: o.dry_run = 1; break;
		case OPT_SHARD:
			if (fmt_parse_size(optarg, &o.shard, &e) != FMT_OK || o.shard == 0)
				return usage_error("--shard takes a size above 0, e.g. 2GB, 500MB, 1GiB");
			o.shard_given = 1;
			break;
		case OPT_SIGN: o.sign = 1; break;
		case OPT_NO_VERIFY: o.no_verify = 1; break;
		default:
			if (dataset_option(c, optarg, &o, &e) != 0)
				return usage_error(e.msg);
			dataset_opts = 1;
		}
		if (full)
			return usage_error("too many repeated options");
	}
	if (argc - optind != 2)
		return usage_error("need INPUT and OUTPUT");
	const char *input = argv[optind], *output = argv[optind + 1];
	o.table_to = to_name ? fmt_table_driver_by_name(to_name) : fmt_table_driver_by_extension(output);
	if (o.table_to) {
		if (!o.table_to->write)
			return usage_error("that dataset format cannot be written");
		o.json = common.json;
		o.quiet = common.quiet;
		o.verbose = common.verbose;
		o.threads = common.threads ? common.threads : fmt_cpu_count();
		fmt_kind k = convert_dataset(input, output, &o, &e);
		if (k != FMT_OK)
			fmt_report_error(stderr, TOOL, NULL, &e, common.json);
		return fmt_kind_exit(k);
	}
	if (dataset_opts)
		return usage_error("dataset options need a dataset output (.csv, .jsonl, .arrow, .arrows, .ald or --to)");
	o.to = to_name ? fmt_driver_by_name(to_name) : output_driver(output, &o.force_set);
	if (!o.to || !o.to->write)
		return usage_error(to_name ? "--to takes safetensors, gguf or apsim"
					   : "cannot tell the output format from its name; use --to");
	o.json = common.json;
	o.quiet = common.quiet;
	o.verbose = common.verbose;
	o.no_progress = common.no_progress;
	o.threads = common.threads ? common.threads : fmt_cpu_count();
	if (o.sign && !fmt_key_opts_given(&o.key))
		o.key.hmac_key = 1;
	fmt_kind k = convert_run(input, output, &o, &e);
	if (k != FMT_OK)
		fmt_report_error(stderr, TOOL, NULL, &e, common.json);
	return fmt_kind_exit(k);
}
