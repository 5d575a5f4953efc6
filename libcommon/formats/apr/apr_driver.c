/* The APR driver: one format, several byte layouts, told apart by their first bytes. */
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/out.h"
#include "fmt/shardset.h"
#include "apr_internal.h"

extern const fmt_driver fmt_driver_apr;

static const uint8_t MAGIC_SEED[4] = { 'A', 'P', 'R', 0x02 };
static const uint8_t MAGIC_AP[4] = { 'A', 'P', 'R', 0x00 };
static const uint8_t MAGIC_AP_LEGACY[4] = { 'A', 'P', 'R', '2' };
static const uint8_t MAGIC_V1[4] = { 'A', 'P', 'R', 'N' };

/* aprender-tsp: `APR\0`, u32 version 1, u32 type "\0PST" (§17). */
int fmt_apr_is_tsp(const uint8_t *head, size_t n)
{
	static const uint8_t sig[12] = { 'A', 'P', 'R', 0, 1, 0, 0, 0, 0x00, 0x50, 0x53, 0x54 };
	if (n < sizeof sig || memcmp(head, sig, sizeof sig) != 0)
		return 0;
	return n < APR_AP_HEADER || fmt_apr_ap_header_crc(head) != fmt_rd_u32(head + 40);
}

static int apr_probe(const uint8_t *head, size_t n, uint64_t file_size)
{
	(void)file_size;
	if (n < 4)
		return 0;
	if (!memcmp(head, MAGIC_SEED, 4) || !memcmp(head, MAGIC_AP, 4) || !memcmp(head, MAGIC_V1, 4))
		return 100;
	return memcmp(head, MAGIC_AP_LEGACY, 4) == 0 ? 90 : 0;
}

static fmt_kind apr_open(fmt_model *m, fmt_err *e)
{
	fmt_source *s = &m->sources[0];
	uint8_t head[APR_AP_HEADER];
	size_t n = s->size < sizeof head ? (size_t)s->size : sizeof head;
	fmt_kind k = fmt_source_read(s, 0, head, n, e);
	if (k != FMT_OK)
		return k;
	apr_state *st = calloc(1, sizeof *st);
	if (!st)
		return fmt_fail(e, FMT_IO, "out of memory");
	pthread_mutex_init(&st->prefetch_lock, NULL);
	m->format_state = st;
	if (n < 4)
		return fmt_fail(e, FMT_INVALID_FORMAT, "truncated: %zu bytes", n);
	if (fmt_apr_is_tsp(head, n))
		return fmt_fail(e, FMT_UNSUPPORTED, "an aprender-tsp solver model (a 16-byte header: APR, a zero byte, type TSP), "
				"not an APR model container: it holds no tensors");
	if (!memcmp(head, MAGIC_SEED, 4))
		return fmt_apr_seed_open(m, st, e);
	if (!memcmp(head, MAGIC_AP, 4) || !memcmp(head, MAGIC_AP_LEGACY, 4))
		return fmt_apr_ap_open(m, st, e);
	if (!memcmp(head, MAGIC_V1, 4))     /* v1 is small and read whole */
		return fmt_apr_v1_open(m, st, e);
	return fmt_fail(e, FMT_INVALID_FORMAT, "bad magic (not an APR file)");
}

static fmt_kind apr_verify(fmt_model *m, const fmt_verify_opts *o, fmt_err *e)
{
	const apr_state *st = m->format_state;
	if (st->layout != APR_V1 && o->keys.n_trusted && !o->signed_elsewhere)
		return fmt_fail(e, FMT_SIGNATURE, "not signed: APR v2 files have no signature block (apr.md §15); "
				"sign them with a detached FILE.minisig (fmt-sign sign -s SECKEY)");
	switch (st->layout) {
	case APR_SEED: return fmt_apr_seed_verify(m, st, !o->reads_follow, o->threads, e);
	case APR_APRENDER: return fmt_apr_ap_verify(m, st, e);
	case APR_V1: return fmt_apr_v1_verify(m, st, o, e);
	}
	return fmt_fail(e, FMT_INTERNAL, "unknown APR layout");
}

static fmt_kind apr_verify_as_read(fmt_model *m, fmt_err *e)
{
	return fmt_apr_seed_verify_as_read(m, m->format_state, e);
}

/* What the default (seed) layout holds; the aprender writer refuses more, naming the tensor. */
static int apr_holds(fmt_dtype t)
{
	return fmt_apr_seed_code(t) >= 0;
}

/* Quantizing to ggml blocks: 1-D tensors (norms, biases) stay F32, rows that do not divide into
 * blocks become F16 (what GGUF's converters do too). */
static fmt_dtype apr_choose_dtype(const fmt_tensor *t, fmt_dtype want, const char **why)
{
	uint64_t block = fmt_dtype_get(want)->block_elems;
	if (block <= 1)
		return want;
	if (t->ndim <= 1) {
		*why = "1-D tensors stay F32 when quantizing";
		return FMT_DT_F32;
	}
	if (t->shape[t->ndim - 1] % block != 0) {
		*why = "rows are not a multiple of the block size";
		return FMT_DT_F16;
	}
	return want;
}

static fmt_kind apr_write(const fmt_model *m, fmt_sink *k, const fmt_write_opts *o, fmt_err *e)
{
	if (fmt_apr_aprender_asked(o)) {
		if (o->codec == FMT_CODEC_LZ4 || o->codec == FMT_CODEC_ZSTD)
			return fmt_fail(e, FMT_USAGE, "the aprender layout has no compression (aprender writes none); "
					"use the seed layout");
		return fmt_apr_ap_write(m, k, e);
	}
	apr_seed_opts so;
	fmt_kind r = fmt_apr_seed_opts_from(m, o, &so, e);
	if (r == FMT_OK)
		r = fmt_apr_seed_write(m, k, &so, e);
	fmt_pool_destroy(so.pool);
	return r;
}

fmt_kind fmt_apr_seed_opts_from(const fmt_model *m, const fmt_write_opts *o, apr_seed_opts *so, fmt_err *e)
{
	const apr_state *st = m->driver == &fmt_driver_apr ? m->format_state : NULL;
	memset(so, 0, sizeof *so);
	so->stamp = 1;
	so->level = o->codec_level;
	so->codec = o->codec == FMT_CODEC_LZ4 ? APR_CODEC_LZ4 : o->codec == FMT_CODEC_ZSTD ? APR_CODEC_ZSTD
											     : APR_CODEC_NONE;
	/* Rewriting an APR file (fmt-shard split, merge) keeps its compression unless told. */
	if (o->codec == FMT_CODEC_DEFAULT && st && st->layout == APR_SEED)
		so->codec = st->flags & APR_F_LZ4 ? APR_CODEC_LZ4 : st->flags & APR_F_ZSTD ? APR_CODEC_ZSTD : APR_CODEC_NONE;
	if (so->codec == APR_CODEC_ZSTD && so->level == 0)
		so->level = 3;
	return so->codec != APR_CODEC_NONE && o->threads > 1 ? fmt_pool_create(&so->pool, o->threads, e) : FMT_OK;
}

static void apr_close(fmt_model *m)
{
	apr_state *st = m->format_state;
	if (st) {
		json_decref(st->v1_meta);
		XXH3_freeState(st->stream_xxh);
		free(st->writer);
		free(st->parts);
		fmt_pool_destroy(st->pool);
		pthread_mutex_destroy(&st->prefetch_lock);
	}
	free(st);
	m->format_state = NULL;
}

/* ---- describe ---- */

static json_t *flag_names(uint32_t flags, const char *const *names, int n)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++)
		if ((flags >> i) & 1u)
			json_array_append_new(a, names[i] ? json_string(names[i]) : json_sprintf("BIT%d", i));
	for (int i = n; i < 32; i++)
		if ((flags >> i) & 1u)
			json_array_append_new(a, json_sprintf("BIT%d", i));
	return a;
}

static const char *const SEED_FLAGS[] = { "COMPRESSED_LZ4", "COMPRESSED_ZSTD", "SHARDED", "QUANTIZED" };
static const char *const AP_FLAGS[] = { "LZ4_COMPRESSED", "ZSTD_COMPRESSED", "ENCRYPTED", "SIGNED", "SHARDED",
					"QUANTIZED", "HAS_FILTERBANK", "HAS_MODEL_CARD", "STREAMING", "HAS_VOCAB",
					"LAYOUT_ROW_MAJOR", "LAYOUT_COLUMN_MAJOR" };
static const char *const V1_FLAGS[] = { "ENCRYPTED", "SIGNED", "STREAMING", "LICENSED", "TRUENO_NATIVE",
					"QUANTIZED", "HAS_MODEL_CARD" };

static const char *v1_model_type(uint16_t t)
{
	static const struct { uint16_t t; const char *name; } names[] = {
		{ 0x01, "LinearRegression" }, { 0x02, "LogisticRegression" }, { 0x03, "DecisionTree" },
		{ 0x04, "RandomForest" }, { 0x05, "GradientBoosting" }, { 0x06, "KMeans" }, { 0x07, "PCA" },
		{ 0x08, "NaiveBayes" }, { 0x09, "KNN" }, { 0x0A, "SVM" }, { 0x10, "NgramLM" }, { 0x11, "TF-IDF" },
		{ 0x12, "CountVectorizer" }, { 0x20, "NeuralSequential" }, { 0x21, "NeuralCustom" },
		{ 0x30, "ContentRecommender" }, { 0x40, "MixtureOfExperts" }, { 0xFF, "Custom" },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i].t == t)
			return names[i].name;
	return "unknown";
}

static json_t *describe_v1(const apr_state *st)
{
	static const char *const comp[] = { "none", "zstd level 3", "zstd level 19", "lz4" };
	json_t *o = json_object();
	json_object_set_new(o, "layout", json_string("v1 (magic APRN)"));
	json_object_set_new(o, "model_type", json_sprintf("%s (0x%04x)", v1_model_type(st->model_type), st->model_type));
	json_object_set_new(o, "flags", flag_names(st->v1_flags, V1_FLAGS, 7));
	json_object_set_new(o, "compression", json_string(st->v1_compression < 4 ? comp[st->v1_compression] : "?"));
	json_object_set_new(o, "quality", json_integer(st->v1_quality));
	json_object_set_new(o, "payload_bytes", json_integer(st->payload_size));
	json_object_set_new(o, "uncompressed_bytes", json_integer(st->uncompressed_size));
	json_object_set_new(o, "checksum", json_sprintf("crc32 %08x", (unsigned)st->checksum));
	return o;
}

static json_t *apr_describe(const fmt_model *m)
{
	const apr_state *st = m->format_state;
	if (!st)
		return NULL;
	if (st->layout == APR_V1)
		return describe_v1(st);
	json_t *o = json_object();
	int seed = st->layout == APR_SEED;
	json_object_set_new(o, "layout", json_string(seed ? "seed (magic 41 50 52 02)" : "aprender (magic 41 50 52 00)"));
	json_object_set_new(o, "flags", seed ? flag_names(st->flags, SEED_FLAGS, 4) : flag_names(st->flags, AP_FLAGS, 12));
	if (seed) {
		json_object_set_new(o, "compression", json_string(st->flags & APR_F_LZ4 ? "lz4" : st->flags & APR_F_ZSTD ? "zstd" : "none"));
		json_object_set_new(o, "checksum", st->stream_xxh && !st->checksum
			? json_string("xxh3-64 (in the footer at the end of the stream, not read)")
			: json_sprintf("xxh3-64 %016llx", (unsigned long long)st->checksum));
		if (st->writer)
			json_object_set_new(o, "writer", fmt_json_string(st->writer, strlen(st->writer)));
		if (st->shard_count)
			json_object_set_new(o, "shard", json_sprintf("%llu of %llu (the set of %llu files is read from it)",
								      (unsigned long long)st->shard_index,
								      (unsigned long long)st->shard_count,
								      (unsigned long long)st->shard_count));
	} else {
		json_object_set_new(o, "header_crc", json_sprintf("%08x", st->header_crc));
		if (st->whole_codec != APR_CODEC_NONE)
			json_object_set_new(o, "compression", json_sprintf("the whole file after the header, %s (%llu bytes)",
				st->whole_codec == APR_CODEC_ZSTD ? "one zstd frame" : "one size-prepended LZ4 block",
				(unsigned long long)st->whole_stored));
		json_object_set_new(o, "checksum", st->has_footer ? json_sprintf("crc32 %08x", (unsigned)st->checksum)
					   : fmt_model_sequential(m) ? json_string("crc32 (in the footer at the end of the stream, not read)")
								      : json_string("none (no footer)"));
	}
	json_object_set_new(o, "data_offset", fmt_json_u64(st->data_offset));
	return o;
}

/* ---- the APR writing options ---- */

typedef struct apr_opts {
	int aprender;              /* --apr-layout aprender (else seed) */
} apr_opts;

static const fmt_drvopts apr_options;

int fmt_apr_aprender_asked(const fmt_write_opts *o)
{
	const apr_opts *a = fmt_drvopt_values(o->options, &apr_options);
	return a && a->aprender;
}

enum { LAYOUT_SEED, LAYOUT_APRENDER };

static const fmt_drvopt_value layouts[] = {
	[LAYOUT_SEED] = { "seed", "32-byte header, XXH3 footer, compression (default)" },
	[LAYOUT_APRENDER] = { "aprender", "byte-identical to aprender's writer" },
	{ NULL, NULL }
};

static int parse_layout(void *v, const char *arg, fmt_err *e)
{
	int layout = fmt_drvopt_word(layouts, "apr-layout", arg, e);
	if (layout < 0)
		return -1;
	((apr_opts *)v)->aprender = layout == LAYOUT_APRENDER;
	return FMT_DRVOPT_GIVEN;
}

static const fmt_drvopt apr_option_list[] = {
	{ "apr-layout", "LAYOUT", "seed (default: APR\\x02, XXH3 footer, compression) or\n"
	  "aprender (APR\\0, byte-identical to aprender's writer)", FMT_DRVOPT_WRITE, FMT_DRVOPT_WORDS,
	  .values = layouts, .parse = parse_layout },
	{ .name = NULL }
};

static const fmt_drvopts apr_options = { .list = apr_option_list, .size = sizeof(apr_opts) };

const fmt_driver fmt_driver_apr = {
	.name = "apr",
	.extension = ".apr",
	.title = "APR",
	.probe = apr_probe,
	.open = apr_open,
	.verify = apr_verify,
	.verify_as_read = apr_verify_as_read,
	.verify_beside_reads = 1,
	.write = apr_write,
	.plan_shards = fmt_apr_plan_shards,
	.write_sharded = fmt_apr_write_sharded,
	.shard_limits = APR_SHARD_LIMITS,
	/* A shard opens its whole set: one driver for both. */
	.set_driver = &fmt_driver_apr,
	.file_driver = &fmt_driver_apr,
	.caps = FMT_CAP_TYPED_META | FMT_CAP_ED25519,
	.holds_dtype = apr_holds,
	.choose_dtype = apr_choose_dtype,
	.arch_key = "general.architecture",
	.compresses = 1,
	.streams = 1,
	.close = apr_close,
	.describe = apr_describe,
	.options = &apr_options,
};
