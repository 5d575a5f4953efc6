/* Apsi checkpoints (specs/apsim.md): the worked example byte for byte, reading and verifying
 * the fixture, every single-byte change of it, malformed metadata, shard sets, signing in
 * place. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fmt/apsim.h"
#include "fmt/checked.h"
#include "fmt/io.h"
#include "fmt/model.h"
#include "fmt/qtensor.h"
#include "fmt/registry.h"
#include "helpers.h"
#include "unit.h"

#define FIXTURE "tests/data/fixtures/apsim/example-signed-team-secret.apsim"

/* ---- helpers ---- */

static int ap_write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t put = fwrite(p, 1, n, f);
	return fclose(f) == 0 && put == n ? 0 : -1;
}

static uint8_t team_secret_bytes[] = "team secret";
static uint8_t other_secret_bytes[] = "team secreT";

static fmt_hmac_key shared_key(uint8_t *bytes)
{
	fmt_hmac_key k;
	memset(&k, 0, sizeof k);
	k.bytes = bytes;
	k.len = strlen((const char *)bytes);
	strcpy(k.id, "shared");
	return k;
}

static const float ex_w[4] = { 1.0f, -2.0f, 0.5f, 4.0f };
static const int8_t ex_q[4] = { 127, -64, 0, 127 };
static float ex_scales[2];
static const float ex_mass[2] = { 1.0f, 2.0f };

/* The model of §8. */
static void example_model(fmt_model *m)
{
	fmt_err e = { 0 };
	static const uint64_t s22[2] = { 2, 2 }, s21[2] = { 2, 1 }, s2[1] = { 2 };
	ex_scales[0] = 2.0f / 127.0f;
	ex_scales[1] = 0.25f / 127.0f;
	fmt_model_init(m);
	unit_add_tensor(m, "layers.0.W", FMT_DT_F32, 2, s22, ex_w, 16);
	unit_add_tensor(m, "layers.0.q", FMT_DT_I8, 2, s22, ex_q, 4);
	unit_add_tensor(m, "layers.0.q__qscale", FMT_DT_F32, 2, s21, ex_scales, 8);
	unit_add_tensor(m, "mass", FMT_DT_F32, 1, s2, ex_mass, 8);
	static const int8_t kg[FMT_UNIT_DIMS] = { 0, 1, 0, 0, 0, 0, 0 };
	CHECK(fmt_model_add_unit(m, "mass", kg, &e) == FMT_OK);
	fmt_qtensor q;
	memset(&q, 0, sizeof q);
	q.name = (char *)"layers.0.q";
	q.format = FMT_Q_INT8;
	q.axis = 0;
	q.ndim = 2;
	q.shape[0] = q.shape[1] = 2;
	q.scale_shape[0] = 2;
	q.scale_shape[1] = 1;
	CHECK(fmt_model_add_qtensor(m, &q, &e) == FMT_OK);
	fmt_value v = fmt_value_str("mlp", 3);
	CHECK(fmt_model_add_meta(m, "arch", &v, &e) == FMT_OK);
	fmt_value_free(&v);
	memset(&v, 0, sizeof v);
	v.type = FMT_V_U32;
	v.v.u = 12000;
	CHECK(fmt_model_add_meta(m, "step", &v, &e) == FMT_OK);
}

/* Write m with the driver's writer to path. */
static fmt_kind write_model(const fmt_model *m, const char *path, const fmt_hmac_key *key, fmt_err *e)
{
	fmt_sink k;
	fmt_write_opts o = { .sink_flags = FMT_SINK_FORCE, .threads = 1, .keys.hmac = key };
	fmt_kind r = fmt_sink_open(&k, path, FMT_SINK_FORCE, e);
	if (r != FMT_OK)
		return r;
	r = fmt_driver_apsim.write(m, &k, &o, e);
	if (r == FMT_OK)
		return fmt_sink_commit(&k, e);
	fmt_sink_abort(&k);
	return r;
}

/* Open path through the registry and verify it (what fmt-verify does). */
static fmt_kind open_verify(const char *path, const fmt_hmac_key *key, fmt_err *e)
{
	fmt_model m;
	fmt_kind k = fmt_model_open(&m, path, NULL, e);
	if (k != FMT_OK)
		return k;
	fmt_verify_opts o = { .keys.hmac = key, .threads = 2 };
	k = fmt_model_verify(&m, &o, e);
	fmt_model_free(&m);
	return k;
}

/* ---- the worked example ---- */

TEST(apsim_writer_reproduces_fixture)
{
	char *dir = unit_tmp_dir();
	char path[256];
	snprintf(path, sizeof path, "%s/ex.apsim", dir);
	fmt_model m;
	fmt_err e = { 0 };
	fmt_hmac_key key = shared_key(team_secret_bytes);
	example_model(&m);
	CHECK(write_model(&m, path, &key, &e) == FMT_OK);
	size_t n_fix = 0, n_out = 0;
	uint8_t *fix = unit_read_file(FIXTURE, 1 << 20, &n_fix), *out = unit_read_file(path, 1 << 20, &n_out);
	CHECK(fix && out);
	CHECK_EQ_U64(n_fix, 796);
	CHECK_EQ_U64(n_out, n_fix);
	if (fix && out && n_fix == n_out)
		CHECK_MEM(fix, out, n_fix);
	/* Unsigned: same data, no signature key, still verifies. */
	CHECK(write_model(&m, path, NULL, &e) == FMT_OK);
	CHECK(open_verify(path, NULL, &e) == FMT_OK);
	CHECK(open_verify(path, &key, &e) == FMT_SIGNATURE);
	CHECK(strstr(e.msg, "not signed") != NULL);
	fmt_model_free(&m);
	free(fix);
	free(out);
	unit_rm_dir(dir);
}

TEST(apsim_fixture_reads_and_verifies)
{
	fmt_model m;
	fmt_err e = { 0 };
	fmt_hmac_key good = shared_key(team_secret_bytes), bad = shared_key(other_secret_bytes);
	CHECK(fmt_model_open(&m, FIXTURE, NULL, &e) == FMT_OK);
	CHECK(m.driver == &fmt_driver_apsim);
	CHECK_EQ_U64(m.n_tensors, 4);
	CHECK_EQ_U64(m.n_meta, 2);
	CHECK_STR(m.meta[0].key, "arch");
	CHECK(m.meta[0].val.type == FMT_V_STR);
	CHECK_STR(m.meta[1].key, "step");
	CHECK(m.meta[1].val.type == FMT_V_I64 && m.meta[1].val.v.i == 12000);
	CHECK_EQ_U64(m.n_units, 1);
	CHECK(fmt_model_find_unit(&m, "mass") && fmt_model_find_unit(&m, "mass")->dims[1] == 1);
	const fmt_qtensor *q = fmt_model_find_qtensor(&m, "layers.0.q");
	CHECK(q && q->format == FMT_Q_INT8 && q->axis == 0 && q->scale_shape[0] == 2 && q->scale_shape[1] == 1 &&
	      !q->has_unit);
	const fmt_apsim_info *info = fmt_apsim_info_of(&m);
	CHECK(info != NULL);
	if (info) {
		CHECK_STR(info->sha256, "de62918515ac057f52f228fd1902cb2e978d097059f89a33556a482517639801");
		CHECK_STR(info->apsi, "fmtkit 0.1.0");
		CHECK(info->shard_i == 1 && info->shard_n == 1 && info->n_shards == 1);
		CHECK(info->signature && strstr(info->signature, "hmac-sha256:shared:2052cecf") == info->signature);
	}
	char *table = NULL;
	size_t len = 0;
	CHECK(fmt_apsim_table(&m, &table, &len, &e) == FMT_OK);
	CHECK_EQ_U64(len, 428);
	static const char expect[] =
		"APSI-TABLE/1\n"
		"M 4:apsi 12:fmtkit 0.1.0\n"
		"M 6:format 10:apsi-model\n"
		"M 8:metadata 27:{\"arch\":\"mlp\",\"step\":12000}\n"
		"M 8:qtensors 104:{\"layers.0.q\":{\"axis\":0,\"format\":\"int8\",\"packing\":\"none\",\"scale_shape\":[2,1],\"shape\":[2,2],\"unit\":null}}\n"
		"M 5:shard 3:1/1\n"
		"M 5:units 24:{\"mass\":[0,1,0,0,0,0,0]}\n"
		"M 7:version 1:1\n"
		"T 10:layers.0.W F32 [2,2] 0 16\n"
		"T 18:layers.0.q__qscale F32 [2,1] 16 24\n"
		"T 4:mass F32 [2] 24 32\n"
		"T 10:layers.0.q I8 [2,2] 32 36\n"
		"END\n";
	if (table && len == sizeof expect - 1)
		CHECK_MEM(table, expect, len);
	free(table);
	json_t *d = m.driver->describe(&m);
	CHECK(d != NULL);
	if (d) {
		CHECK_STR(json_string_value(json_object_get(d, "key_id")), "shared");
		CHECK(json_is_true(json_object_get(d, "signed")));
		CHECK(json_array_size(json_object_get(d, "extra_keys")) == 0);
		CHECK(json_object_get(json_object_get(d, "qtensors"), "layers.0.q") != NULL);
		json_decref(d);
	}
	fmt_verify_opts none = { 0 }, with_good = { .keys.hmac = &good }, with_bad = { .keys.hmac = &bad };
	CHECK(fmt_model_verify(&m, &none, &e) == FMT_OK);
	CHECK(fmt_model_verify(&m, &with_good, &e) == FMT_OK);
	CHECK(fmt_model_verify(&m, &with_bad, &e) == FMT_SIGNATURE);
	CHECK(strstr(e.msg, "does not match") != NULL);
	fmt_hmac_key other_id = good;
	strcpy(other_id.id, "0123456789abcdef");
	fmt_verify_opts with_other = { .keys.hmac = &other_id };
	CHECK(fmt_model_verify(&m, &with_other, &e) == FMT_SIGNATURE);
	CHECK(strstr(e.msg, "signed with key 'shared'") != NULL);
	/* Dequantizing the compressed tensor gives codes x scales. */
	fmt_model out;
	fmt_model_init(&out);
	CHECK(fmt_model_add_dequantized(&out, &m, q, NULL, &e) == FMT_OK);
	if (out.n_tensors == 1) {
		float v[4];
		CHECK(fmt_tensor_read(&out, &out.tensors[0], 0, (uint8_t *)v, 16, &e) == FMT_OK);
		CHECK(v[0] == 127.0f * (2.0f / 127.0f) && v[1] == -64.0f * (2.0f / 127.0f) && v[2] == 0.0f &&
		      v[3] == 127.0f * (0.25f / 127.0f));
	}
	fmt_model_free(&out);
	fmt_model_free(&m);
}

/* Every offset of the fixture XOR 0x01, opened through the registry and verified with the
 * key, as fmt-verify does. */
TEST(apsim_fixture_every_byte_flip_detected)
{
	size_t n = 0;
	uint8_t *fix = unit_read_file(FIXTURE, 1 << 20, &n);
	CHECK(fix && n == 796);
	if (!fix || n != 796) {
		free(fix);
		return;
	}
	char *dir = unit_tmp_dir();
	char path[256];
	snprintf(path, sizeof path, "%s/m.apsim", dir);
	fmt_hmac_key key = shared_key(team_secret_bytes);
	unsigned counts[16] = { 0 };
	/* Regions: length field, __metadata__ key/value bytes by key, tensor entries, padding,
	 * data. */
	const char *h = (const char *)fix + 8;
	size_t sha_at = (size_t)(strstr(h, "\"sha256\":\"") - h) + 8 + 10;
	size_t sig_at = (size_t)(strstr(h, "\"signature\":\"hmac-sha256:shared:") - h) + 8 + 13;
	size_t sig_hex_at = sig_at + 19;
	for (size_t i = 0; i < n; i++) {
		fix[i] ^= 0x01;
		fmt_err e = { 0 };
		fmt_kind k = ap_write_file(path, fix, n) == 0 ? open_verify(path, &key, &e) : FMT_INTERNAL;
		fix[i] ^= 0x01;
		counts[k < 16 ? k : 15]++;
		if (k == FMT_OK) {
			char m[64];
			snprintf(m, sizeof m, "flip at offset %zu verifies OK", i);
			unit_fail(__FILE__, __LINE__, m);
		}
		if (i < 8 && k != FMT_INVALID_FORMAT) {
			char m[80];
			snprintf(m, sizeof m, "length byte %zu: kind %d, expected InvalidFormat", i, k);
			unit_fail(__FILE__, __LINE__, m);
		}
		if (i >= 760 && k != FMT_CHECKSUM) {
			char m[80];
			snprintf(m, sizeof m, "data byte %zu: kind %d, expected ChecksumMismatch", i, k);
			unit_fail(__FILE__, __LINE__, m);
		}
		/* A digit of the digest flipped to another hex digit: checksum (to a non-hex byte:
		 * invalid format). Same for the HMAC, as a signature failure. */
		int hexdig = (fix[i] ^ 1) >= '0' && (fix[i] ^ 1) <= '9' ? 1 : (fix[i] ^ 1) >= 'a' && (fix[i] ^ 1) <= 'f';
		if (i >= sha_at && i < sha_at + 64 && k != (hexdig ? FMT_CHECKSUM : FMT_INVALID_FORMAT)) {
			char m[80];
			snprintf(m, sizeof m, "sha256 byte %zu: kind %d", i, k);
			unit_fail(__FILE__, __LINE__, m);
		}
		if (i >= sig_hex_at && i < sig_hex_at + 64 && k != (hexdig ? FMT_SIGNATURE : FMT_INVALID_FORMAT)) {
			char m[80];
			snprintf(m, sizeof m, "signature byte %zu: kind %d", i, k);
			unit_fail(__FILE__, __LINE__, m);
		}
	}
	if (getenv("APSIM_FLIP_TABLE"))
		for (int k = 0; k < 16; k++)
			if (counts[k])
				fprintf(stderr, "flip table: %s %u\n", fmt_kind_name((fmt_kind)k), counts[k]);
	CHECK_EQ_U64(counts[FMT_OK], 0);
	/* The whole table (a regression check): 567 InvalidFormat, 1 Unsupported (version "1"
	 * -> "0"), 151 ChecksumMismatch (36 data bytes, digest digits, names, shapes, offsets,
	 * metadata values that stay valid), 77 SignatureInvalid (key id and HMAC digits). */
	CHECK_EQ_U64(counts[FMT_INVALID_FORMAT], 567);
	CHECK_EQ_U64(counts[FMT_UNSUPPORTED], 1);
	CHECK_EQ_U64(counts[FMT_CHECKSUM], 151);
	CHECK_EQ_U64(counts[FMT_SIGNATURE], 77);
	free(fix);
	unit_rm_dir(dir);
}

/* ---- malformed metadata ---- */

/* A copy of the fixture's header with one __metadata__ value replaced (raw JSON text of the
 * string, escaped), re-padded, and the data unchanged. */
static size_t patched(const uint8_t *fix, const char *from, const char *to, uint8_t *out)
{
	char h[2048];
	memcpy(h, fix + 8, 752);
	h[752] = '\0';
	char *end = h + 751;
	while (*end == ' ')
		*end-- = '\0';
	char *at = strstr(h, from);
	if (!at)
		return 0;
	char nh[2048];
	size_t pre = (size_t)(at - h);
	int len = snprintf(nh, sizeof nh, "%.*s%s%s", (int)pre, h, to, at + strlen(from));
	while (len % 8)
		nh[len++] = ' ';
	fmt_wr_u64(out, (uint64_t)len);
	memcpy(out + 8, nh, (size_t)len);
	memcpy(out + 8 + len, fix + 760, 36);
	return 8 + (size_t)len + 36;
}

TEST(apsim_malformed_metadata)
{
	static const struct {
		const char *from, *to;
		fmt_kind open_kind;    /* FMT_OK: opens, then verify */
		fmt_kind verify_kind;
		const char *msg;
	} cases[] = {
		{ "\"version\":\"1\"", "\"version\":\"2\"", FMT_UNSUPPORTED, FMT_OK, "version '2'" },
		{ "\"apsi\":\"fmtkit 0.1.0\",", "", FMT_INVALID_FORMAT, FMT_OK, "required key 'apsi'" },
		{ "\"units\":\"{\\\"mass\\\":[0,1,0,0,0,0,0]}\"", "\"units\":\"{\\\"moss\\\":[0,1,0,0,0,0,0]}\"",
		  FMT_INVALID_FORMAT, FMT_OK, "units 'moss'" },
		{ "\"units\":\"{\\\"mass\\\":[0,1,0,0,0,0,0]}\"", "\"units\":\"{\\\"mass\\\":[0,1,0,0,0,0]}\"",
		  FMT_INVALID_FORMAT, FMT_OK, "7 integers" },
		{ "\"units\":\"{\\\"mass\\\":[0,1,0,0,0,0,0]}\"", "\"units\":\"{\\\"mass\\\":[0,1,0,0,0,0,200]}\"",
		  FMT_INVALID_FORMAT, FMT_OK, "-128 to 127" },
		{ "\"units\":\"{\\\"mass\\\":[0,1,0,0,0,0,0]}\"",
		  "\"units\":\"{\\\"mass\\\":[0,1,0,0,0,0,0],\\\"mass\\\":[0,1,0,0,0,0,0]}\"", FMT_INVALID_FORMAT, FMT_OK,
		  "duplicate" },
		{ "\"units\":\"{\\\"mass\\\":[0,1,0,0,0,0,0]}\"", "\"units\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\"",
		  FMT_INVALID_FORMAT, FMT_OK, "deeper than 32" },
		{ "\\\"format\\\":\\\"int8\\\"", "\\\"format\\\":\\\"int4\\\"", FMT_INVALID_FORMAT, FMT_OK, "packing" },
		{ "\\\"scale_shape\\\":[2,1]", "\\\"scale_shape\\\":[1,1]", FMT_INVALID_FORMAT, FMT_OK, "axis 0" },
		{ "\\\"unit\\\":null", "\\\"unit\\\":null,\\\"zz\\\":1", FMT_INVALID_FORMAT, FMT_OK, "unknown member" },
		{ "\"shard\":\"1/1\"", "\"shard\":\"01/1\"", FMT_INVALID_FORMAT, FMT_OK, "shard '01/1'" },
		{ "\"shard\":\"1/1\"", "\"shard\":\"2/1\"", FMT_INVALID_FORMAT, FMT_OK, "shard '2/1'" },
		{ "hmac-sha256:shared:", "hmac-sha256:sh/ared:", FMT_INVALID_FORMAT, FMT_OK, "signature" },
		{ "\"sha256\":\"de", "\"sha256\":\"De", FMT_INVALID_FORMAT, FMT_OK, "lowercase hex" },
		{ "\"sha256\":\"de", "\"sha256\":\"df", FMT_OK, FMT_CHECKSUM, "sha256 mismatch: file says df62" },
		{ "\"format\":\"apsi-model\",", "\"format\":\"apsi-model\",\"zextra\":\"x\",", FMT_OK, FMT_CHECKSUM,
		  "sha256 mismatch" },
		{ "\"metadata\":\"{\\\"arch\\\"", "\"metadata\":\"{\\\"arch\\\":1,\\\"arch\\\"", FMT_INVALID_FORMAT,
		  FMT_OK, "duplicate" },
	};
	size_t n = 0;
	uint8_t *fix = unit_read_file(FIXTURE, 1 << 20, &n);
	char *dir = unit_tmp_dir();
	char path[256];
	snprintf(path, sizeof path, "%s/bad.apsim", dir);
	CHECK(fix && n == 796);
	for (size_t i = 0; fix && n == 796 && i < sizeof cases / sizeof cases[0]; i++) {
		uint8_t buf[4096];
		size_t len = patched(fix, cases[i].from, cases[i].to, buf);
		CHECK(len > 0);
		if (!len || ap_write_file(path, buf, len) != 0)
			continue;
		fmt_model m;
		fmt_err e;
		fmt_err_clear(&e);
		fmt_kind k = fmt_model_open(&m, path, &fmt_driver_apsim, &e);
		if (k == FMT_OK) {
			fmt_verify_opts o = { 0 };
			k = fmt_model_verify(&m, &o, &e);
			if (k == FMT_OK && cases[i].open_kind == FMT_OK && strstr(cases[i].to, "zextra")) {
				json_t *d = m.driver->describe(&m);
				CHECK(d && json_array_size(json_object_get(d, "extra_keys")) == 1);
				json_decref(d);
			}
			fmt_model_free(&m);
			if (cases[i].open_kind != FMT_OK) {
				char msg[128];
				snprintf(msg, sizeof msg, "case %zu opened", i);
				unit_fail(__FILE__, __LINE__, msg);
				continue;
			}
		}
		fmt_kind want = cases[i].open_kind != FMT_OK ? cases[i].open_kind : cases[i].verify_kind;
		if (k != want || !strstr(e.msg, cases[i].msg)) {
			char msg[1400];
			snprintf(msg, sizeof msg, "case %zu: kind %d (want %d): %s", i, k, want, e.msg);
			unit_fail(__FILE__, __LINE__, msg);
		}
	}
	/* Tab padding: a valid safetensors header, refused as .apsim. */
	if (fix && n == 796) {
		uint8_t copy[796];
		memcpy(copy, fix, n);
		copy[759] = '\t';
		CHECK(ap_write_file(path, copy, n) == 0);
		fmt_model m;
		fmt_err e = { 0 };
		CHECK(fmt_model_open(&m, path, NULL, &e) == FMT_INVALID_FORMAT);
		CHECK(strstr(e.msg, "padding") != NULL);
	}
	free(fix);
	unit_rm_dir(dir);
}

TEST(apsim_nan_scale_refused)
{
	char *dir = unit_tmp_dir();
	char path[256];
	snprintf(path, sizeof path, "%s/nan.apsim", dir);
	fmt_model m, r;
	fmt_err e = { 0 };
	example_model(&m);
	float saved = ex_scales[1];
	uint32_t nan_bits = 0x7FC00000u;
	memcpy(&ex_scales[1], &nan_bits, 4);
	CHECK(write_model(&m, path, NULL, &e) == FMT_OK);
	CHECK(fmt_model_open(&r, path, NULL, &e) == FMT_OK);
	fmt_verify_opts o = { 0 };
	CHECK(fmt_model_verify(&r, &o, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "layers.0.q__qscale") && strstr(e.msg, "NaN"));
	fmt_model out;
	fmt_model_init(&out);
	CHECK(fmt_model_add_dequantized(&out, &r, &r.qtensors[0], NULL, &e) == FMT_OK);
	float v[4];
	CHECK(fmt_tensor_read(&out, &out.tensors[0], 0, (uint8_t *)v, 16, &e) == FMT_INVALID_FORMAT);
	fmt_model_free(&out);
	fmt_model_free(&r);
	ex_scales[1] = saved;
	fmt_model_free(&m);
	unit_rm_dir(dir);
}

/* Typed user metadata survives a write and read. */
TEST(apsim_metadata_types_round_trip)
{
	char *dir = unit_tmp_dir();
	char path[256];
	snprintf(path, sizeof path, "%s/meta.apsim", dir);
	fmt_model m, r;
	fmt_err e = { 0 };
	fmt_model_init(&m);
	static const float x[2] = { 1, 2 };
	static const uint64_t s2[1] = { 2 };
	unit_add_tensor(&m, "x", FMT_DT_F32, 1, s2, x, 8);
	fmt_value v;
	memset(&v, 0, sizeof v);
	v.type = FMT_V_F64;
	v.v.f = 0.1;
	CHECK(fmt_model_add_meta(&m, "real", &v, &e) == FMT_OK);
	v.v.f = 3.0;
	CHECK(fmt_model_add_meta(&m, "whole", &v, &e) == FMT_OK);
	v.type = FMT_V_I64;
	v.v.i = -5;
	CHECK(fmt_model_add_meta(&m, "neg", &v, &e) == FMT_OK);
	v.type = FMT_V_BOOL;
	v.v.b = 1;
	CHECK(fmt_model_add_meta(&m, "flag", &v, &e) == FMT_OK);
	fmt_value items[2];
	items[0] = fmt_value_str("a\"b", 3);
	items[1] = fmt_value_str("\n", 1);
	memset(&v, 0, sizeof v);
	v.type = FMT_V_ARRAY;
	v.v.arr.elem = FMT_V_STR;
	v.v.arr.count = 2;
	v.v.arr.items = items;
	CHECK(fmt_model_add_meta(&m, "list", &v, &e) == FMT_OK);
	fmt_value_free(&items[0]);
	fmt_value_free(&items[1]);
	CHECK(write_model(&m, path, NULL, &e) == FMT_OK);
	CHECK(fmt_model_open(&r, path, NULL, &e) == FMT_OK);
	CHECK_EQ_U64(r.n_meta, 5);
	const fmt_value *g;
	CHECK((g = fmt_model_get_meta(&r, "real")) && g->type == FMT_V_F64 && g->v.f == 0.1);
	CHECK((g = fmt_model_get_meta(&r, "whole")) && g->type == FMT_V_F64 && g->v.f == 3.0);
	CHECK((g = fmt_model_get_meta(&r, "neg")) && g->type == FMT_V_I64 && g->v.i == -5);
	CHECK((g = fmt_model_get_meta(&r, "flag")) && g->type == FMT_V_BOOL && g->v.b == 1);
	CHECK((g = fmt_model_get_meta(&r, "list")) && g->type == FMT_V_ARRAY && g->v.arr.count == 2 &&
	      g->v.arr.elem == FMT_V_STR && strcmp(fmt_array_item(g, 0).v.str.ptr, "a\"b") == 0);
	fmt_verify_opts o = { 0 };
	CHECK(fmt_model_verify(&r, &o, &e) == FMT_OK);
	fmt_model_free(&r);
	/* NaN cannot be stored. */
	memset(&v, 0, sizeof v);
	v.type = FMT_V_F64;
	v.v.f = 0.0 / 0.0;
	CHECK(fmt_model_add_meta(&m, "bad", &v, &e) == FMT_OK);
	CHECK(write_model(&m, path, NULL, &e) == FMT_UNSUPPORTED);
	CHECK(strstr(e.msg, "'bad'") != NULL);
	fmt_model_free(&m);
	unit_rm_dir(dir);
}

/* ---- shard sets ---- */

static void big_model(fmt_model *m, float *data, size_t n_per)
{
	fmt_err e = { 0 };
	fmt_model_init(m);
	static const char *names[4] = { "a", "b", "c", "d" };
	uint64_t shape[1] = { n_per };
	for (size_t i = 0; i < 4 * n_per; i++)
		data[i] = (float)i * 0.5f - 3.0f;
	for (int i = 0; i < 4; i++)
		unit_add_tensor(m, names[i], FMT_DT_F32, 1, shape, data + (size_t)i * n_per, n_per * 4);
	static const int8_t vel[FMT_UNIT_DIMS] = { 1, 0, -1, 0, 0, 0, 0 };
	CHECK(fmt_model_add_unit(m, "d", vel, &e) == FMT_OK);
	fmt_value v = fmt_value_str("x", 1);
	CHECK(fmt_model_add_meta(m, "name", &v, &e) == FMT_OK);
	fmt_value_free(&v);
}

TEST(apsim_sharded_set)
{
	char *dir = unit_tmp_dir();
	char prefix[256], index[300];
	snprintf(prefix, sizeof prefix, "%s/model", dir);
	snprintf(index, sizeof index, "%s.apsim.index.json", prefix);
	float data[4 * 64];
	fmt_model m;
	fmt_err e = { 0 };
	big_model(&m, data, 64);
	/* Quantize "b" to int8 (codes + scales stay together). */
	fmt_model q;
	fmt_model_init(&q);
	fmt_qtensor plan;
	for (size_t i = 0; i < m.n_tensors; i++) {
		if (strcmp(m.tensors[i].name, "b") == 0) {
			CHECK(fmt_qtensor_plan(&m.tensors[i], FMT_Q_INT4, &plan, &e) == FMT_OK);
			CHECK(fmt_model_add_quantized(&q, &m, &m.tensors[i], &plan, NULL, &e) == FMT_OK);
		} else {
			fmt_tensor t = m.tensors[i];
			CHECK(fmt_model_add_tensor(&q, &t, NULL, &e) == FMT_OK);
		}
	}
	static const int8_t vel[FMT_UNIT_DIMS] = { 1, 0, -1, 0, 0, 0, 0 };
	CHECK(fmt_model_add_unit(&q, "d", vel, &e) == FMT_OK);
	fmt_hmac_key key = shared_key(team_secret_bytes), bad = shared_key(other_secret_bytes);
	fmt_write_opts o = { .sink_flags = 0, .threads = 1, .keys.hmac = &key };
	char **paths = NULL;
	size_t n_paths = 0;
	CHECK(fmt_apsim_write_sharded(&q, prefix, &(fmt_shard_limits){ .max_bytes = 300 }, &o, &paths, &n_paths, &e) == FMT_OK);
	/* a (256), d (256), c (256), b codes (32) + scales (8) -> four shards of one group each
	 * except that b's 40 bytes join... order: F32 a, b__qscale, c, d, then U8 b. */
	CHECK(n_paths >= 3);
	for (size_t i = 0; i < n_paths; i++)
		free(paths[i]);
	free(paths);
	fmt_model r;
	CHECK(fmt_model_open(&r, index, NULL, &e) == FMT_OK);
	CHECK(r.driver == &fmt_driver_apsim_index);
	CHECK_EQ_U64(r.n_tensors, 5);
	CHECK_EQ_U64(r.n_qtensors, 1);
	CHECK_EQ_U64(r.n_units, 1);
	CHECK_EQ_U64(r.n_meta, 0);
	fmt_verify_opts vo = { .keys.hmac = &key, .threads = 3 }, vbad = { .keys.hmac = &bad, .threads = 1 };
	CHECK(fmt_model_verify(&r, &vo, &e) == FMT_OK);
	CHECK(fmt_model_verify(&r, &vbad, &e) == FMT_SIGNATURE);
	const fmt_apsim_info *info = fmt_apsim_info_of(&r);
	CHECK(info && info->n_shards >= 3 && info->signature);
	json_t *d = r.driver->describe(&r);
	CHECK(d && json_array_size(json_object_get(d, "shards")) == info->n_shards);
	json_decref(d);
	size_t n_shards = info ? info->n_shards : 0;
	fmt_model_free(&r);

	/* A shard of another checkpoint (same names, other data) is detected. */
	char shard2[400], other_prefix[300], other2[400];
	snprintf(shard2, sizeof shard2, "%s-00002-of-%05zu.apsim", prefix, n_shards);
	snprintf(other_prefix, sizeof other_prefix, "%s/other", dir);
	snprintf(other2, sizeof other2, "%s-00002-of-%05zu.apsim", other_prefix, n_shards);
	data[64 * 0 + 1] += 1.0f;
	data[64 * 2 + 1] += 1.0f;
	data[64 * 3 + 1] += 1.0f;
	CHECK(fmt_apsim_write_sharded(&q, other_prefix, &(fmt_shard_limits){ .max_bytes = 300 }, &o, &paths, &n_paths, &e) == FMT_OK);
	for (size_t i = 0; i < n_paths; i++)
		free(paths[i]);
	free(paths);
	size_t len = 0;
	uint8_t *saved = unit_read_file(shard2, 1 << 20, &len);
	CHECK(rename(other2, shard2) == 0);
	CHECK(fmt_model_open(&r, index, NULL, &e) == FMT_OK);
	CHECK(fmt_model_verify(&r, &vo, &e) == FMT_CHECKSUM);
	CHECK(strstr(e.msg, "another checkpoint") != NULL);
	fmt_model_free(&r);
	CHECK(ap_write_file(shard2, saved, len) == 0);
	free(saved);
	CHECK(open_verify(index, &key, &e) == FMT_OK);

	/* A missing shard, and a tampered index. */
	char moved[420];
	snprintf(moved, sizeof moved, "%s.moved", shard2);
	CHECK(rename(shard2, moved) == 0);
	CHECK(fmt_model_open(&r, index, NULL, &e) == FMT_SCHEMA);
	CHECK(rename(moved, shard2) == 0);
	char *text = (char *)unit_read_file(index, 1 << 20, &len);
	CHECK(text != NULL);
	if (text) {
		text[len] = '\0';
		char *wm = strstr(text, "\"a\":\"model-0000");
		CHECK(wm != NULL);
		if (wm) {
			char *bad_text = strdup(text);
			bad_text[wm - text + 1] = 'z'; /* weight_map names "z", which is in no shard */
			CHECK(ap_write_file(index, bad_text, len) == 0);
			CHECK(fmt_model_open(&r, index, NULL, &e) == FMT_SCHEMA);
			free(bad_text);
		}
		CHECK(ap_write_file(index, text, len) == 0);
	}
	free(text);

	/* Sign in place: unsigned set, then signed; a single file likewise. */
	o.keys.hmac = NULL;
	CHECK(fmt_apsim_write_sharded(&q, prefix, &(fmt_shard_limits){ .max_bytes = 300 }, &(fmt_write_opts){ .sink_flags = FMT_SINK_FORCE }, &paths,
				      &n_paths, &e) == FMT_OK);
	for (size_t i = 0; i < n_paths; i++)
		free(paths[i]);
	free(paths);
	CHECK(open_verify(index, &key, &e) == FMT_SIGNATURE);
	CHECK(fmt_sign_in_place(index, &(fmt_keyset){ .hmac = &key }, 2, &e) == FMT_OK);
	CHECK(open_verify(index, &key, &e) == FMT_OK);
	CHECK(open_verify(index, &bad, &e) == FMT_SIGNATURE);

	char single[300];
	snprintf(single, sizeof single, "%s/single.apsim", dir);
	CHECK(write_model(&q, single, NULL, &e) == FMT_OK);
	CHECK(fmt_sign_in_place(single, &(fmt_keyset){ .hmac = &key }, 1, &e) == FMT_OK);
	CHECK(open_verify(single, &key, &e) == FMT_OK);
	fmt_model_free(&q);
	fmt_model_free(&m);
	unit_rm_dir(dir);
}

/* Reading the fixture and writing it again with the same key gives the same bytes. */
TEST(apsim_fixture_read_write_identical)
{
	char *dir = unit_tmp_dir();
	char path[256];
	snprintf(path, sizeof path, "%s/again.apsim", dir);
	fmt_model m;
	fmt_err e = { 0 };
	fmt_hmac_key key = shared_key(team_secret_bytes);
	CHECK(fmt_model_open(&m, FIXTURE, NULL, &e) == FMT_OK);
	CHECK(write_model(&m, path, &key, &e) == FMT_OK);
	CHECK(unit_same_files(FIXTURE, path));
	fmt_model_free(&m);
	unit_rm_dir(dir);
}

/* Signing the unsigned example in place gives the fixture. */
TEST(apsim_sign_in_place_gives_fixture)
{
	char *dir = unit_tmp_dir();
	char path[256];
	snprintf(path, sizeof path, "%s/ex.apsim", dir);
	fmt_model m;
	fmt_err e = { 0 };
	fmt_hmac_key key = shared_key(team_secret_bytes);
	example_model(&m);
	CHECK(write_model(&m, path, NULL, &e) == FMT_OK);
	CHECK(fmt_sign_in_place(path, &(fmt_keyset){ .hmac = &key }, 1, &e) == FMT_OK);
	CHECK(unit_same_files(FIXTURE, path));
	fmt_model_free(&m);
	unit_rm_dir(dir);
}

TEST(apsim_index_parse)
{
	fmt_apsim_index ix;
	fmt_err e = { 0 };
	static const char good[] =
		"{\"metadata\":{\"format\":\"apsi-model\",\"shard_sha256\":{\"m-00001-of-00001.apsim\":"
		"\"de62918515ac057f52f228fd1902cb2e978d097059f89a33556a482517639801\"},\"total_size\":36},"
		"\"weight_map\":{\"w\":\"m-00001-of-00001.apsim\"}}";
	CHECK(fmt_apsim_index_parse(good, strlen(good), &ix, &e) == FMT_OK);
	CHECK(ix.n_files == 1 && ix.n_tensors == 1 && ix.total_size == 36 && !ix.signature);
	fmt_apsim_index_free(&ix);
	static const char traversal[] =
		"{\"metadata\":{\"format\":\"apsi-model\",\"shard_sha256\":{\"../x.apsim\":"
		"\"de62918515ac057f52f228fd1902cb2e978d097059f89a33556a482517639801\"},\"total_size\":36},"
		"\"weight_map\":{}}";
	CHECK(fmt_apsim_index_parse(traversal, strlen(traversal), &ix, &e) == FMT_INVALID_FORMAT);
	static const char unknown_file[] =
		"{\"metadata\":{\"format\":\"apsi-model\",\"shard_sha256\":{\"a.apsim\":"
		"\"de62918515ac057f52f228fd1902cb2e978d097059f89a33556a482517639801\"},\"total_size\":36},"
		"\"weight_map\":{\"w\":\"b.apsim\"}}";
	CHECK(fmt_apsim_index_parse(unknown_file, strlen(unknown_file), &ix, &e) == FMT_SCHEMA);
	CHECK(fmt_apsim_index_parse("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", 72, &ix, &e) ==
	      FMT_INVALID_FORMAT);
}

TEST(apsim_probe_scores)
{
	size_t n = 0;
	uint8_t *fix = unit_read_file(FIXTURE, 1 << 20, &n);
	CHECK(fix != NULL);
	if (fix) {
		CHECK(fmt_driver_apsim.probe(fix, n, n) > fmt_driver_apsim.probe(fix, 0, n));
		int ap = fmt_driver_apsim.probe(fix, n, n);
		for (const fmt_driver *const *d = fmt_drivers(); *d; d++)
			if (*d != &fmt_driver_apsim)
				CHECK((*d)->probe(fix, n, n) < ap);
	}
	free(fix);
}

/* The format of bytes fed to a fmt_probe_stream chunk bytes at a time; *kept: how many it held. */
static const char *streamed_format(const uint8_t *p, size_t n, size_t chunk, size_t *kept)
{
	fmt_probe_stream ps;
	fmt_err e = { 0 };
	fmt_probe_stream_init(&ps, n);
	for (size_t at = 0; at < n; at += chunk)
		CHECK(fmt_probe_stream_add(&ps, p + at, chunk < n - at ? chunk : n - at, &e) == FMT_OK);
	*kept = ps.n;
	return fmt_format_name(fmt_probe_stream_format(&ps, FMT_FORMAT_ANY, NULL));
}

/* The name fmt_format_probe gives a file of an 8-byte length and header (and 16 bytes of data). */
static const char *probed_header(const char *header, size_t hlen)
{
	uint8_t *b = malloc(8 + hlen + 16);
	CHECK(b != NULL);
	if (!b)
		return NULL;
	fmt_wr_u64(b, hlen);
	memcpy(b + 8, header, hlen);
	memset(b + 8 + hlen, 0, 16);
	fmt_source s;
	fmt_err e = { 0 };
	const char *name = NULL;
	if (fmt_source_from_memory(&s, "h.apsim", b, 8 + hlen + 16, &e) == FMT_OK) {
		name = fmt_format_name(fmt_format_probe(&s, b, FMT_PROBE_BYTES, FMT_FORMAT_ANY, NULL));
		fmt_source_close(&s);
	}
	free(b);
	return name;
}

/* The probe reads a long header 64 KiB at a time: the format key found across every cut of it
 * between two pieces, white space before the object however long, nothing before it but white
 * space. */
TEST(apsim_probe_source_pieces)
{
	static const char key[] = "\"format\":\"apsi-model\"";
	const size_t piece = 64u << 10, room = piece + 4096;
	char *h = malloc(room);
	CHECK(h != NULL);
	if (!h)
		return;
	for (size_t at = piece - sizeof key; at <= piece + 1; at++) {   /* the key from at */
		memset(h, ' ', room);
		memcpy(h, "{\"a\":\"", 6);
		memset(h + 6, 'p', at - 6 - 2);
		memcpy(h + at - 2, "\",", 2);
		memcpy(h + at, key, sizeof key - 1);
		h[at + sizeof key - 1] = '}';
		const char *name = probed_header(h, at + sizeof key);
		CHECK(name != NULL && strcmp(name, "apsim") == 0);
		if (!name || strcmp(name, "apsim") != 0)
			fprintf(stderr, "key at %zu\n", at);
	}
	memset(h, ' ', room);   /* 65,904 bytes of spaces (past the first piece), then the object */
	memcpy(h + 70000 - 4096, "{", 1);
	memcpy(h + 70000 - 4096 + 1, key, sizeof key - 1);
	h[70000 - 4096 + sizeof key] = '}';
	const char *name = probed_header(h, 70000 - 4096 + sizeof key + 1);
	CHECK(name != NULL && strcmp(name, "apsim") == 0);
	h[70000 - 4096] = 'x';   /* not an object: the key after it does not count */
	name = probed_header(h, 70000 - 4096 + sizeof key + 1);
	CHECK(name == NULL || strcmp(name, "apsim") != 0);
	free(h);
}

/* A bundle member is named by what streams by once (fmt_probe_stream): an .apsim whose format
 * key lies past the first 4 KiB as fmt_format_probe names the file, the header kept and no more;
 * a header that claims more than the data is kept only up to the data's end. */
TEST(apsim_probe_stream_long_header)
{
	size_t n = 0;
	uint8_t *fix = unit_read_file(FIXTURE, 1 << 20, &n);
	CHECK(fix != NULL && n > 8);
	if (!fix)
		return;
	uint64_t len = fmt_rd_u64(fix);
	const char pad[] = "{\"__metadata__\":{\"apad\":\"";
	size_t pad_n = 6000, grow = sizeof pad - 1 - 17 + pad_n + 2, hlen = (size_t)len + grow, total = n + grow;
	uint8_t *b = malloc(total);
	CHECK(b != NULL && memcmp(fix + 8, pad, 17) == 0);
	if (!b) {
		free(fix);
		return;
	}
	/* {"__metadata__":{"apad":"ppp…", then the rest of the fixture's header and data */
	fmt_wr_u64(b, hlen);
	memcpy(b + 8, pad, sizeof pad - 1);
	memset(b + 8 + sizeof pad - 1, 'p', pad_n);
	memcpy(b + 8 + sizeof pad - 1 + pad_n, "\",", 2);
	memcpy(b + 8 + sizeof pad - 1 + pad_n + 2, fix + 8 + 17, n - 8 - 17);
	CHECK(8 + sizeof pad - 1 + pad_n + 2 + n - 8 - 17 == total);
	CHECK(memmem(b, FMT_PROBE_BYTES, "\"format\":\"apsi-model\"", 21) == NULL);
	fmt_source s;
	fmt_err e = { 0 };
	CHECK(fmt_source_from_memory(&s, "long.apsim", b, total, &e) == FMT_OK);
	CHECK(strcmp(fmt_format_name(fmt_format_probe(&s, b, FMT_PROBE_BYTES, FMT_FORMAT_ANY, NULL)), "apsim") == 0);
	fmt_source_close(&s);
	size_t chunks[] = { 1, 7, 4095, 4096, 4097, 65536 }, kept;
	for (size_t i = 0; i < sizeof chunks / sizeof *chunks; i++) {
		CHECK(strcmp(streamed_format(b, total, chunks[i], &kept), "apsim") == 0);
		CHECK(kept == 8 + hlen);
	}
	/* a header length past the end: kept to the end, not to the length; no format key found */
	fmt_wr_u64(b, 99999999);
	CHECK(strcmp(streamed_format(b, total, 4096, &kept), "safetensors") == 0);
	CHECK(kept == total);
	/* a head no driver wants more of: 4 KiB kept */
	memset(b, 'x', total);
	(void)streamed_format(b, total, 100, &kept);
	CHECK(kept == FMT_PROBE_BYTES);
	/* less than 4 KiB, and nothing */
	CHECK(strcmp(streamed_format(fix, 100, 3, &kept), "apsim") == 0 && kept == 100); /* its key is in them */
	CHECK(streamed_format(fix, 0, 1, &kept) == NULL && kept == 0);
	free(b);
	free(fix);
}
