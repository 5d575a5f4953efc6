/* APR (specs/apr.md): the seed layout's worked example (A.10) and falsification tests FMT-001..004
 * (A.9), the aprender layout's worked example (§20) and vectors (§21) byte for byte, APR v1 and
 * the aprender-tsp files. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <msgpack.h>
#include <zlib.h>
#include "fmt/checked.h"
#include "fmt/io.h"
#include "fmt/model.h"
#include "fmt/registry.h"
#include "../../libcommon/formats/apr/apr_internal.h"
#include "helpers.h"
#include "unit.h"

extern const fmt_driver fmt_driver_apr;

/* ---- helpers ---- */

static void apr_meta_num(fmt_model *m, const char *key, fmt_vtype t, uint64_t u)
{
	fmt_err e = { 0 };
	fmt_value v;
	memset(&v, 0, sizeof v);
	v.type = t;
	v.v.u = u;
	CHECK(fmt_model_add_meta(m, key, &v, &e) == FMT_OK);
}

typedef enum { W_SEED_PLAIN, W_SEED, W_APRENDER } wmode;

/* Write m into memory (through a temporary file); *n bytes, malloc'd. */
static uint8_t *apr_write_mem(const fmt_model *m, wmode mode, apr_codec codec, size_t *n, fmt_kind *kind)
{
	char path[] = "/tmp/fmt-apr-unit-XXXXXX";
	int fd = mkstemp(path);
	fmt_err e = { 0 };
	fmt_sink k;
	uint8_t *buf = NULL;
	*n = 0;
	close(fd);
	*kind = fmt_sink_open(&k, path, FMT_SINK_FORCE, &e);
	if (*kind != FMT_OK)
		return NULL;
	apr_seed_opts so = { .codec = codec, .level = codec == APR_CODEC_ZSTD ? 3 : 0, .stamp = mode == W_SEED };
	*kind = mode == W_APRENDER ? fmt_apr_ap_write(m, &k, &e) : fmt_apr_seed_write(m, &k, &so, &e);
	if (*kind != FMT_OK) {
		fmt_sink_abort(&k);
		unlink(path);
		return NULL;
	}
	*kind = fmt_sink_commit(&k, &e);
	FILE *f = fopen(path, "rb");
	if (f) {
		buf = malloc(1 << 20);
		*n = buf ? fread(buf, 1, 1 << 20, f) : 0;
		fclose(f);
	}
	unlink(path);
	return buf;
}

/* Open bytes as APR and run every check; the first failing kind (FMT_OK when all pass). */
static fmt_kind apr_check_bytes(const uint8_t *p, size_t n)
{
	fmt_model m;
	fmt_err e = { 0 };
	fmt_kind k = fmt_model_open_memory(&m, "mem.apr", p, n, NULL, &e);
	if (k != FMT_OK)
		return k;
	k = fmt_model_verify(&m, NULL, &e);
	fmt_model_free(&m);
	return k;
}

static int hex_nibble(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* "41 50 ..." (spaces and newlines ignored) into bytes; returns the count. */
static size_t from_hex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	while (*s && n < cap) {
		if (hex_nibble(s[0]) < 0) {
			s++;
			continue;
		}
		out[n++] = (uint8_t)(hex_nibble(s[0]) << 4 | hex_nibble(s[1]));
		s += 2;
	}
	return n;
}

static const float one_to_four[4] = { 1.0f, 2.0f, 3.0f, 4.0f };
static const uint64_t shape22[2] = { 2, 2 };

/* ---- FMT-001: the padding function, exhaustively for 0..256 ---- */

TEST(apr_fmt001_align64_exhaustive)
{
	for (uint64_t x = 0; x <= 256; x++) {
		uint64_t a = apr_align64(x);
		CHECK(a % 64 == 0);
		CHECK(a >= x);
		CHECK(a - x < 64);
		uint64_t ref;
		CHECK(fmt_align_up_u64(x, 64, &ref) == 0 && ref == a);
	}
	CHECK_EQ_U64(apr_align64(0), 0);
	CHECK_EQ_U64(apr_align64(1), 64);
	CHECK_EQ_U64(apr_align64(64), 64);
	CHECK_EQ_U64(apr_align64(65), 128);
	CHECK_EQ_U64(apr_align64(256), 256);
}

/* ---- A.10: the seed layout's worked example ---- */

static void a10_model(fmt_model *m)
{
	fmt_model_init(m);
	unit_add_str_meta(m, "general.architecture", "mlp");
	unit_add_sized_tensor(m, "w", FMT_DT_F32, 2, shape22, one_to_four);
}

TEST(apr_seed_worked_example_a10)
{
	fmt_model m;
	size_t n;
	fmt_kind k;
	a10_model(&m);
	uint8_t *got = apr_write_mem(&m, W_SEED_PLAIN, APR_CODEC_NONE, &n, &k);
	fmt_model_free(&m);
	CHECK(k == FMT_OK && got);
	uint8_t want[160];
	memset(want, 0, sizeof want);
	from_hex("41 50 52 02 02 00 00 00 00 00 20 00 00 00 00 00 00 00 0e 00 00 00 00 00 00 00", want, 26);
	memcpy(want + 32, "{\"arch\":\"mlp\"}", 14);
	from_hex("01 00 00 00 00 00 00 00 01 00 77 00 02 02 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00"
		 " 00 00 00 00 00 00 00 00 10 00 00 00 00 00 00 00", want + 64, 45);
	memcpy(want + 128, one_to_four, 16);
	fmt_wr_u64(want + 144, XXH3_64bits(want, 144));
	fmt_wr_u64(want + 152, 160);
	CHECK_EQ_U64(n, 160);
	CHECK(got && n == 160 && memcmp(got, want, 160) == 0);
	CHECK(apr_check_bytes(want, sizeof want) == FMT_OK);
	free(got);
}

TEST(apr_seed_reads_a10)
{
	fmt_model m, back;
	fmt_err e = { 0 };
	size_t n;
	fmt_kind k;
	a10_model(&m);
	uint8_t *bytes = apr_write_mem(&m, W_SEED, APR_CODEC_NONE, &n, &k);
	fmt_model_free(&m);
	CHECK(fmt_model_open_memory(&back, "a10.apr", bytes, n, NULL, &e) == FMT_OK);
	CHECK_STR(back.driver->name, "apr");
	CHECK_EQ_U64(back.n_tensors, 1);
	CHECK_STR(back.tensors[0].name, "w");
	const fmt_value *arch = fmt_model_get_meta(&back, "general.architecture");
	CHECK(arch && arch->type == FMT_V_STR && strcmp(arch->v.str.ptr, "mlp") == 0);
	/* The writer stamp describes the file, not the model. */
	CHECK(fmt_model_get_meta(&back, "writer") == NULL);
	const uint8_t *p;
	uint8_t *to_free;
	CHECK(fmt_tensor_load(&back, &back.tensors[0], &p, &to_free, &e) == FMT_OK);
	CHECK_MEM(p, one_to_four, 16);
	free(to_free);
	fmt_model_free(&back);
	free(bytes);
}

/* ---- FMT-002 (round trip) and FMT-001 (every offset of every written file) ---- */

static uint8_t rt_bytes[8][4096];

static void fill_random(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		p[i] = (uint8_t)(seed >> 24);
	}
}

/* One tensor per seed dtype, shapes that fit their blocks; typed metadata. */
static void every_dtype_model(fmt_model *m)
{
	static const fmt_dtype types[] = { FMT_DT_F32, FMT_DT_F16, FMT_DT_Q4_0, FMT_DT_Q8_0, FMT_DT_Q4_K, FMT_DT_Q6_K,
					   FMT_DT_I8, FMT_DT_I16, FMT_DT_I32, FMT_DT_I64, FMT_DT_F64, FMT_DT_BF16 };
	static uint8_t data[12][4096];
	static char names[12][32];
	fmt_model_init(m);
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		const fmt_dtype_info *d = fmt_dtype_get(types[i]);
		uint64_t shape[3] = { 2, 1, d->block_elems > 1 ? d->block_elems : 7 };
		fill_random(data[i], sizeof data[i], (uint32_t)i + 1);
		snprintf(names[i], sizeof names[i], "t.%s", d->name);
		unit_add_sized_tensor(m, names[i], types[i], i % 2 ? 3 : 2, i % 2 ? shape : shape + 1, data[i]);
	}
	static const uint64_t none[1] = { 0 };
	unit_add_sized_tensor(m, "empty", FMT_DT_F32, 1, none, rt_bytes[0]);
	unit_add_sized_tensor(m, "scalar", FMT_DT_F32, 0, none, one_to_four);
	unit_add_str_meta(m, "general.architecture", "llama");
	apr_meta_num(m, "llama.block_count", FMT_V_U32, 32);
	unit_add_str_meta(m, "note", "x\ty \xc3\xa9");
	fmt_err e = { 0 };
	fmt_value v = { .type = FMT_V_F32, .v.f = 1e-5f };
	CHECK(fmt_model_add_meta(m, "llama.attention.layer_norm_rms_epsilon", &v, &e) == FMT_OK);
	v = (fmt_value){ .type = FMT_V_BOOL, .v.b = 1 };
	CHECK(fmt_model_add_meta(m, "flag", &v, &e) == FMT_OK);
	v = (fmt_value){ .type = FMT_V_I64, .v.i = -5 };
	CHECK(fmt_model_add_meta(m, "negative", &v, &e) == FMT_OK);
}

static int same_value(const fmt_value *a, const fmt_value *b)
{
	if (a->type == FMT_V_STR || b->type == FMT_V_STR)
		return a->type == b->type && a->v.str.len == b->v.str.len && !memcmp(a->v.str.ptr, b->v.str.ptr, a->v.str.len);
	if (a->type == FMT_V_F32 || a->type == FMT_V_F64)
		return (b->type == FMT_V_F32 || b->type == FMT_V_F64) && a->v.f == b->v.f;
	if (a->type == FMT_V_BOOL)
		return b->type == FMT_V_BOOL && a->v.b == b->v.b;
	if (a->type == FMT_V_I64)
		return (b->type == FMT_V_I64 && a->v.i == b->v.i);
	return (b->type == FMT_V_U32 || b->type == FMT_V_U64 || b->type == FMT_V_I64) && a->v.u == b->v.u;
}

static void round_trip(apr_codec codec)
{
	fmt_model m, back;
	fmt_err e = { 0 };
	size_t n;
	fmt_kind k;
	every_dtype_model(&m);
	uint8_t *bytes = apr_write_mem(&m, W_SEED, codec, &n, &k);
	CHECK(k == FMT_OK && bytes);
	k = fmt_model_open_memory(&back, "rt.apr", bytes, n, NULL, &e);
	CHECK_STR(k == FMT_OK ? "" : e.msg, "");
	if (k != FMT_OK) {
		fmt_model_free(&m);
		free(bytes);
		return;
	}
	CHECK(fmt_model_verify(&back, NULL, &e) == FMT_OK);
	CHECK_EQ_U64(back.n_tensors, m.n_tensors);
	const apr_state *st = back.format_state;
	for (size_t i = 0; i < m.n_tensors && i < back.n_tensors; i++) {
		const fmt_tensor *a = &m.tensors[i], *b = &back.tensors[i];
		CHECK_STR(a->name, b->name);
		CHECK(a->dtype == b->dtype && a->ndim == b->ndim && a->nbytes == b->nbytes);
		CHECK(memcmp(a->shape, b->shape, sizeof a->shape) == 0);
		CHECK((st->data_offset + b->file_offset) % 64 == 0);   /* FMT-001 */
		const uint8_t *p;
		uint8_t *to_free;
		CHECK(fmt_tensor_load(&back, b, &p, &to_free, &e) == FMT_OK);
		CHECK(b->nbytes == 0 || memcmp(p, a->data, (size_t)a->nbytes) == 0);
		free(to_free);
		CHECK((codec != APR_CODEC_NONE) == (b->stored_bytes != 0));
	}
	CHECK_EQ_U64(back.n_meta, m.n_meta);
	for (size_t i = 0; i < m.n_meta; i++) {
		const fmt_value *v = fmt_model_get_meta(&back, m.meta[i].key);
		CHECK(v && same_value(&m.meta[i].val, v));
	}
	fmt_model_free(&back);
	fmt_model_free(&m);
	free(bytes);
}

TEST(apr_fmt002_round_trip_none) { round_trip(APR_CODEC_NONE); }
TEST(apr_fmt002_round_trip_lz4) { round_trip(APR_CODEC_LZ4); }
TEST(apr_fmt002_round_trip_zstd) { round_trip(APR_CODEC_ZSTD); }

/* Metadata keys translate to the layout's names and back. */
/* Floats as serde_json writes them. */
TEST(apr_meta_floats_like_serde)
{
	static const struct { double v; int f32; const char *text; } cases[] = {
		{ 10000.0, 1, "10000.0" }, { 1e-5, 1, "0.00001" }, { 1e-6, 1, "1e-6" }, { 1.5, 0, "1.5" },
		{ 0.1, 0, "0.1" }, { 1e16, 0, "1e16" }, { 1234567.0, 0, "1234567.0" }, { -2.5e-7, 0, "-2.5e-7" },
		{ 0.0, 0, "0.0" }, { 123.456, 0, "123.456" }, { 1e15, 0, "1000000000000000.0" },
		{ 0.3f, 1, "0.3" }, { 3.4028234663852886e38, 1, "3.4028235e38" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		fmt_model m;
		fmt_err e = { 0 };
		char *text;
		size_t len, want_len;
		char want[96];
		fmt_model_init(&m);
		fmt_value v = { .type = cases[i].f32 ? FMT_V_F32 : FMT_V_F64, .v.f = cases[i].f32 ? (double)(float)cases[i].v : cases[i].v };
		CHECK(fmt_model_add_meta(&m, "x", &v, &e) == FMT_OK);
		CHECK(fmt_apr_meta_write(&m, APR_SEED, 0, NULL, &text, &len, &e) == FMT_OK);
		want_len = (size_t)snprintf(want, sizeof want, "{\"x\":%s}", cases[i].text);
		CHECK_STR(text, want);
		CHECK_EQ_U64(len, want_len);
		free(text);
		fmt_model_free(&m);
	}
}

TEST(apr_meta_keys_translate)
{
	fmt_model m;
	fmt_err e = { 0 };
	char *text;
	size_t len;
	every_dtype_model(&m);
	CHECK(fmt_apr_meta_write(&m, APR_SEED, 0, NULL, &text, &len, &e) == FMT_OK);
	CHECK_STR(text, "{\"arch\":\"llama\",\"num_layers\":32,\"rms_norm_eps\":0.00001,\"note\":\"x\\ty \xc3\xa9\","
			"\"flag\":true,\"negative\":-5}");
	free(text);
	CHECK(fmt_apr_meta_write(&m, APR_APRENDER, 0, NULL, &text, &len, &e) == FMT_OK);
	CHECK_STR(text, "{\"model_type\":\"\",\"license\":null,\"data_source\":null,\"data_license\":null,"
			"\"total_size\":0,\"param_count\":0,\"architecture\":\"llama\",\"num_layers\":32,"
			"\"rms_norm_eps\":0.00001,\"note\":\"x\\ty \xc3\xa9\",\"flag\":true,\"negative\":-5}");
	free(text);
	fmt_model_free(&m);
}

/* ---- FMT-003: wrong magic ---- */

TEST(apr_fmt003_wrong_magic)
{
	fmt_model m, bad;
	fmt_err e = { 0 };
	size_t n;
	fmt_kind k;
	a10_model(&m);
	uint8_t *bytes = apr_write_mem(&m, W_SEED, APR_CODEC_NONE, &n, &k);
	fmt_model_free(&m);
	for (int pos = 0; pos < 4; pos++) {
		for (int v = 0; v < 256; v++) {
			uint8_t save = bytes[pos];
			if (v == save || (pos == 3 && (v == 0 || v == 'N' || v == '2')))
				continue;
			bytes[pos] = (uint8_t)v;
			CHECK(fmt_model_open_memory(&bad, "bad.apr", bytes, n, NULL, &e) == FMT_INVALID_FORMAT);
			CHECK(fmt_model_open_memory(&bad, "bad.apr", bytes, n, &fmt_driver_apr, &e) == FMT_INVALID_FORMAT);
			bytes[pos] = save;
		}
	}
	CHECK(fmt_model_open_memory(&bad, "empty.apr", bytes, 0, &fmt_driver_apr, &e) == FMT_INVALID_FORMAT);
	free(bytes);
}

/* ---- FMT-004: every single-byte change is detected ---- */

static void every_byte_detected(uint8_t *bytes, size_t n, int *counts)
{
	CHECK(apr_check_bytes(bytes, n) == FMT_OK);
	for (size_t i = 0; i < n; i++) {
		for (int flip = 0; flip < 2; flip++) {
			uint8_t save = bytes[i];
			bytes[i] ^= flip ? 0xFF : 0x01;
			fmt_kind k = apr_check_bytes(bytes, n);
			if (k != FMT_INVALID_FORMAT && k != FMT_CHECKSUM) {
				char msg[96];
				snprintf(msg, sizeof msg, "byte %zu ^ %s gave kind %d", i, flip ? "ff" : "01", (int)k);
				unit_fail(__FILE__, __LINE__, msg);
			}
			counts[k == FMT_CHECKSUM]++;
			bytes[i] = save;
		}
	}
}

TEST(apr_fmt004_every_byte_seed)
{
	fmt_model m;
	size_t n;
	fmt_kind k;
	int counts[2] = { 0, 0 };
	a10_model(&m);
	for (apr_codec c = APR_CODEC_NONE; c <= APR_CODEC_ZSTD; c++) {
		uint8_t *bytes = apr_write_mem(&m, W_SEED, c, &n, &k);
		CHECK(k == FMT_OK && n > 0);
		every_byte_detected(bytes, n, counts);
		free(bytes);
	}
	CHECK(counts[1] > counts[0]);
	fmt_model_free(&m);
}

TEST(apr_fmt004_every_byte_aprender)
{
	fmt_model m;
	size_t n;
	fmt_kind k;
	int counts[2] = { 0, 0 };
	fmt_model_init(&m);
	unit_add_str_meta(&m, "model_type", "example");
	unit_add_sized_tensor(&m, "weight", FMT_DT_F32, 2, shape22, one_to_four);
	uint8_t *bytes = apr_write_mem(&m, W_APRENDER, APR_CODEC_NONE, &n, &k);
	CHECK(k == FMT_OK && n == 324);
	every_byte_detected(bytes, n, counts);
	free(bytes);
	fmt_model_free(&m);
}

/* ---- §20 and §21: aprender's writer, byte for byte ---- */

static const char S20_HEX[] =
	"41 50 52 00 02 00 00 04 01 00 00 00 40 00 00 00 00 00 00 00 6d 00 00 00 c0 00 00 00 00 00 00 00"
	"00 01 00 00 00 00 00 00 3b 99 b8 9b 00 00 00 00";

TEST(apr_aprender_worked_example_s20)
{
	static const char json[] = "{\"model_type\":\"example\",\"license\":null,\"data_source\":null,\"data_license\":null,"
				   "\"total_size\":0,\"param_count\":0}";
	uint8_t want[324];
	memset(want, 0, sizeof want);
	from_hex(S20_HEX, want, 48);
	memcpy(want + 0x40, json, sizeof json - 1);
	from_hex("06 00 77 65 69 67 68 74 00 02 02 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 00 00 00 00"
		 " 00 00 00 00 10 00 00 00 00 00 00 00", want + 0xc0, 42);
	memcpy(want + 0x100, one_to_four, 16);
	from_hex("9c c6 b0 c4", want + 0x140, 4);
	CHECK_EQ_U64(sizeof json - 1, 109);
	fmt_model m;
	size_t n;
	fmt_kind k;
	fmt_model_init(&m);
	unit_add_str_meta(&m, "model_type", "example");
	unit_add_sized_tensor(&m, "weight", FMT_DT_F32, 2, shape22, one_to_four);
	uint8_t *got = apr_write_mem(&m, W_APRENDER, APR_CODEC_NONE, &n, &k);
	fmt_model_free(&m);
	CHECK_EQ_U64(n, 324);
	CHECK(got && n == 324 && memcmp(got, want, 324) == 0);
	CHECK_EQ_U64(fmt_apr_ap_header_crc(want), 0x9BB8993Bu);
	CHECK_EQ_U64(crc32(0, want, 320), 0xC4B0C69Cu);
	/* and our reader takes it */
	fmt_model back;
	fmt_err e = { 0 };
	CHECK(fmt_model_open_memory(&back, "s20.apr", want, sizeof want, NULL, &e) == FMT_OK);
	CHECK(fmt_model_verify(&back, NULL, &e) == FMT_OK);
	const fmt_value *mt = fmt_model_get_meta(&back, "model_type");
	CHECK(mt && mt->type == FMT_V_STR && strcmp(mt->v.str.ptr, "example") == 0);
	CHECK(fmt_model_get_meta(&back, "license") == NULL);
	CHECK(back.n_tensors == 1 && back.tensors[0].dtype == FMT_DT_F32 && back.tensors[0].offset == 256);
	fmt_model_free(&back);
	free(got);
}

TEST(apr_aprender_golden_s21)
{
	static const float weights[8] = { 1.0f, 2.0f, 0.5f, -0.5f, 4.0f, -2.0f, 0.25f, 8.0f };
	static const float bias[1] = { 0.125f };
	static const uint64_t s8[1] = { 8 }, s1[1] = { 1 };
	static const char json[] = "{\"model_type\":\"linear_regression\",\"name\":\"golden-v2\",\"license\":null,"
				   "\"data_source\":null,\"data_license\":null,\"version\":\"0.0.0-golden\","
				   "\"created_at\":\"1700000000\",\"total_size\":0,\"param_count\":8}";
	fmt_model m;
	size_t n;
	fmt_kind k;
	fmt_model_init(&m);
	unit_add_str_meta(&m, "model_type", "linear_regression");
	unit_add_str_meta(&m, "general.name", "golden-v2");
	unit_add_str_meta(&m, "version", "0.0.0-golden");
	unit_add_str_meta(&m, "created_at", "1700000000");
	apr_meta_num(&m, "param_count", FMT_V_U64, 8);
	unit_add_sized_tensor(&m, "weights", FMT_DT_F32, 1, s8, weights);
	unit_add_sized_tensor(&m, "bias", FMT_DT_F32, 1, s1, bias);
	uint8_t *got = apr_write_mem(&m, W_APRENDER, APR_CODEC_NONE, &n, &k);
	fmt_model_free(&m);
	CHECK_EQ_U64(sizeof json - 1, 189);
	CHECK_EQ_U64(n, 516);
	CHECK(got && n == 516);
	if (!got || n != 516)
		return;
	CHECK_EQ_U64(fmt_rd_u32(got + 20), 189);
	CHECK_MEM(got + 64, json, 189);
	CHECK_EQ_U64(fmt_rd_u64(got + 24), 256);
	CHECK_EQ_U64(fmt_rd_u64(got + 32), 384);
	CHECK_EQ_U64(fmt_rd_u32(got + 40), 0x3BC08C02u);
	CHECK_EQ_U64(fmt_rd_u32(got + 512), 0x550F3F35u);
	/* index: bias (offset 0, size 4) then weights (offset 64, size 32): 67 bytes */
	CHECK(fmt_rd_u16(got + 256) == 4 && memcmp(got + 258, "bias", 4) == 0);
	CHECK_EQ_U64(fmt_rd_u64(got + 256 + 16), 0);
	CHECK_EQ_U64(fmt_rd_u64(got + 256 + 24), 4);
	CHECK(fmt_rd_u16(got + 256 + 32) == 7 && memcmp(got + 256 + 34, "weights", 7) == 0);
	CHECK_EQ_U64(fmt_rd_u64(got + 256 + 51), 64);
	CHECK_EQ_U64(fmt_rd_u64(got + 256 + 59), 32);
	CHECK_MEM(got + 384, bias, 4);
	CHECK_MEM(got + 448, weights, 32);
	CHECK(apr_check_bytes(got, n) == FMT_OK);
	free(got);
}

/* The aprender writer avoids codes 3..7 and alias keys (§7.3, §6.4). */
TEST(apr_aprender_hazards_avoided)
{
	static const int32_t ints[2] = { 1, 2 };
	static const uint64_t s2[1] = { 2 };
	fmt_model m;
	fmt_err e = { 0 };
	size_t n;
	fmt_kind k;
	fmt_model_init(&m);
	unit_add_sized_tensor(&m, "i", FMT_DT_I32, 1, s2, ints);
	uint8_t *got = apr_write_mem(&m, W_APRENDER, APR_CODEC_NONE, &n, &k);
	CHECK(k == FMT_UNSUPPORTED && !got);
	fmt_model_free(&m);
	fmt_model_init(&m);
	apr_meta_num(&m, "n_layers", FMT_V_U32, 4);
	apr_meta_num(&m, "num_attention_heads", FMT_V_U32, 8);
	apr_meta_num(&m, "num_heads", FMT_V_U32, 8);
	char *text;
	size_t len;
	CHECK(fmt_apr_meta_write(&m, APR_APRENDER, 0, NULL, &text, &len, &e) == FMT_OK);
	CHECK_STR(text, "{\"model_type\":\"\",\"license\":null,\"data_source\":null,\"data_license\":null,"
			"\"total_size\":0,\"param_count\":0,\"num_layers\":4,\"num_heads\":8}");
	free(text);
	fmt_model_free(&m);
	CHECK(fmt_apr_ap_code(FMT_DT_F64) < 0 && fmt_apr_ap_code(FMT_DT_I8) < 0 && fmt_apr_ap_code(FMT_DT_U8) < 0);
	CHECK(fmt_apr_ap_code(FMT_DT_BF16) == 30 && fmt_apr_ap_code(FMT_DT_Q6_K) == 14);
}

/* ---- aprender-tsp and v1 ---- */

static uint8_t *read_fixture(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = malloc(4096);
	*n = f && buf ? fread(buf, 1, 4096, f) : 0;
	if (f)
		fclose(f);
	return buf;
}

TEST(apr_tsp_files_refused)
{
	static const char *const files[] = { "tests/data/fixtures/apr/tsp-att48-aco.apr",
					     "tests/data/fixtures/apr/tsp-berlin52-aco.apr",
					     "tests/data/fixtures/apr/tsp-eil51-aco.apr" };
	for (size_t i = 0; i < 3; i++) {
		fmt_model m;
		fmt_err e = { 0 };
		size_t n;
		uint8_t *p = read_fixture(files[i], &n);
		CHECK_EQ_U64(n, 77);
		CHECK(fmt_model_open_memory(&m, files[i], p, n, NULL, &e) == FMT_UNSUPPORTED);
		CHECK(strstr(e.msg, "aprender-tsp") != NULL);
		free(p);
	}
}

/* A v1 file: header, MessagePack metadata, payload, CRC32. */
static size_t make_v1(uint8_t *out, uint8_t compression)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2);
	msgpack_pack_str_with_body(&pk, "created_at", 10);
	msgpack_pack_str_with_body(&pk, "1700000000", 10);
	msgpack_pack_str_with_body(&pk, "aprender_version", 16);
	msgpack_pack_str_with_body(&pk, "0.25.0", 6);
	static const uint8_t payload[12] = { 2, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4 };
	memset(out, 0, 32);
	memcpy(out, "APRN", 4);
	out[4] = 1;
	fmt_wr_u16(out + 6, 0x0001);
	fmt_wr_u32(out + 8, (uint32_t)sb.size);
	fmt_wr_u32(out + 12, sizeof payload);
	fmt_wr_u32(out + 16, sizeof payload);
	out[20] = compression;
	out[22] = 90;
	memcpy(out + 32, sb.data, sb.size);
	memcpy(out + 32 + sb.size, payload, sizeof payload);
	size_t n = 32 + sb.size + sizeof payload;
	fmt_wr_u32(out + n, (uint32_t)crc32(0, out, (uInt)n));
	msgpack_sbuffer_destroy(&sb);
	return n + 4;
}

TEST(apr_v1_inspect_and_verify)
{
	uint8_t buf[256];
	size_t n = make_v1(buf, 0);
	fmt_model m;
	fmt_err e = { 0 };
	CHECK(fmt_model_open_memory(&m, "v1.apr", buf, n, NULL, &e) == FMT_OK);
	CHECK_EQ_U64(m.version, 1);
	CHECK_EQ_U64(m.n_tensors, 0);
	CHECK(m.opaque != NULL);
	const fmt_value *v = fmt_model_get_meta(&m, "aprender_version");
	CHECK(v && v->type == FMT_V_STR && strcmp(v->v.str.ptr, "0.25.0") == 0);
	CHECK(fmt_model_verify(&m, NULL, &e) == FMT_OK);
	fmt_model_free(&m);
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		buf[i] ^= 0x01;
		fmt_kind k = apr_check_bytes(buf, n);
		bad += k == FMT_OK;
		buf[i] ^= 0x01;
	}
	CHECK_EQ_U64(bad, 0);
	n = make_v1(buf, 7);
	CHECK(fmt_model_open_memory(&m, "v1.apr", buf, n, NULL, &e) == FMT_UNSUPPORTED);
}

/* A segment that is not one frame of its tensor's size fails verification even when the file's
 * checksum was made right after the damage (a hostile writer, not a flipped bit): a damaged
 * frame magic, a content size that disagrees with the index, a truncated frame. (Damage to
 * the compressed bytes themselves is the checksum's job: frames carry no checksum of their own.) */
TEST(apr_seed_bad_frame_with_good_checksum)
{
	fmt_model m;
	size_t n;
	fmt_kind k;
	static float ramp[1024];
	static const uint64_t s1k[1] = { 1024 };
	for (int i = 0; i < 1024; i++)
		ramp[i] = (float)(i % 8);
	for (apr_codec c = APR_CODEC_LZ4; c <= APR_CODEC_ZSTD; c++) {
		fmt_model_init(&m);
		unit_add_sized_tensor(&m, "ramp", FMT_DT_F32, 1, s1k, ramp);
		uint8_t *bytes = apr_write_mem(&m, W_SEED, c, &n, &k);
		fmt_model_free(&m);
		CHECK(k == FMT_OK && bytes && apr_check_bytes(bytes, n) == FMT_OK);
		fmt_model probe;
		fmt_err e = { 0 };
		CHECK(fmt_model_open_memory(&probe, "f.apr", bytes, n, NULL, &e) == FMT_OK);
		uint64_t frame = ((const apr_state *)probe.format_state)->data_offset;
		fmt_model_free(&probe);
		int rejected = 0, tried = 0;
		/* the frame magic (4 bytes) and its descriptor byte */
		for (uint64_t i = frame; i < frame + 5; i++) {
			bytes[i] ^= 0x5a;
			fmt_wr_u64(bytes + n - 16, XXH3_64bits(bytes, n - 16));
			rejected += apr_check_bytes(bytes, n) == FMT_INVALID_FORMAT;
			tried++;
			bytes[i] ^= 0x5a;
		}
		CHECK_EQ_U64(rejected, tried);
		/* the content size: 4096 raw bytes claimed as 4097 (LZ4 FLG has content size at byte 6) */
		uint64_t at = c == APR_CODEC_LZ4 ? frame + 6 : frame + 5;
		uint8_t save = bytes[at];
		bytes[at] = (uint8_t)(save + 1);
		fmt_wr_u64(bytes + n - 16, XXH3_64bits(bytes, n - 16));
		CHECK(apr_check_bytes(bytes, n) == FMT_INVALID_FORMAT);
		bytes[at] = save;
		free(bytes);
	}
}
