/* ggml block quantization: spec worked examples (specs/gguf.md §11, §12), properties, golden
 * files from scripts/gen/quant-golden (an independent Python implementation), and decoding of
 * every supported block type against element-by-element re-derivations of the layouts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/half.h"
#include "fmt/quant.h"
#include "unit.h"

static uint64_t lcg_state;
static uint32_t lcg_next(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(lcg_state >> 40);
}
static float lcg_signed(void)
{
	return (float)lcg_next() / 8388608.0f - 1.0f;
}

/* ---- Q8_0 ---- */

TEST(quant_q8_0_example_a)
{
	const float x[32] = { -127, 2.5f, -2.5f, 0.5f, -0.5f, 1.5f, -1.5f, 126.5f, 3.49f, -3.51f, 0, -0.0f,
			      100, -100.25f, 64.5f, -64.5f, 1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4, -5, -6, -7, -8 };
	const uint8_t want[34] = { 0x00, 0x3C, 0x81, 0x03, 0xFD, 0x01, 0xFF, 0x02, 0xFE, 0x7F, 0x03, 0xFC,
				   0x00, 0x00, 0x64, 0x9C, 0x41, 0xBF, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
				   0x07, 0x08, 0xFF, 0xFE, 0xFD, 0xFC, 0xFB, 0xFA, 0xF9, 0xF8 };
	uint8_t out[34];
	fmt_err e;
	CHECK(fmt_quantize_q8_0(x, out, 32, &e) == FMT_OK);
	CHECK_MEM(out, want, sizeof want);
}

TEST(quant_q8_0_example_b)
{
	float x[32];
	for (int j = 0; j < 32; j++)
		x[j] = 0.5f * (float)j - 8.0f;
	const uint8_t want[34] = { 0x08, 0x2C, 0x81, 0x89, 0x91, 0x99, 0xA1, 0xA9, 0xB1, 0xB9, 0xC0, 0xC8,
				   0xD0, 0xD8, 0xE0, 0xE8, 0xF0, 0xF8, 0x00, 0x08, 0x10, 0x18, 0x20, 0x28,
				   0x30, 0x38, 0x40, 0x47, 0x4F, 0x57, 0x5F, 0x67, 0x6F, 0x77 };
	uint8_t out[34];
	float y[32];
	fmt_err e;
	CHECK(fmt_quantize_q8_0(x, out, 32, &e) == FMT_OK);
	CHECK_MEM(out, want, sizeof want);
	CHECK(fmt_dequant_f32(FMT_DT_Q8_0, out, 32, y, &e) == FMT_OK);
	CHECK(y[0] == -127.0f * 0.06298828125f);
	CHECK(fabsf(y[0] - -7.99951172f) < 1e-6f && fabsf(y[1] - -7.49560547f) < 1e-6f);
}

TEST(quant_q8_0_zero_block)
{
	float x[32] = { 0 };
	uint8_t out[34], zero[34] = { 0 };
	fmt_err e;
	memset(out, 0xAA, sizeof out);
	CHECK(fmt_quantize_q8_0(x, out, 32, &e) == FMT_OK);
	CHECK_MEM(out, zero, sizeof zero);
}

/* ---- Q4_0 ---- */

TEST(quant_q4_0_worked_example)
{
	const float x[32] = { 4, -4, 0.25f, -0.25f, 0.5f, -0.5f, 0.75f, -0.75f, 1, -1, 1.25f, -1.25f, 2, -2,
			      3.5f, -3.5f, 0, 0.125f, -0.125f, 3.75f, -3.75f, 2.5f, -2.5f, 1.5f, -1.5f, 3, -3,
			      0.375f, -0.375f, 2.25f, -2.25f, -4 };
	const uint8_t want[18] = { 0x00, 0xB8, 0x80, 0x8F, 0x88, 0x19, 0xF7, 0x39, 0xD7, 0x5A, 0xB6, 0x2A,
				   0xE6, 0x7B, 0x94, 0x4C, 0xD1, 0xFF };
	const float deq[32] = { 4, -3.5f, -0.0f, -0.5f, 0.5f, -0.5f, 0.5f, -1, 1, -1, 1, -1.5f, 2, -2, 3.5f,
				-3.5f, -0.0f, -0.0f, -0.0f, 3.5f, -3.5f, 2.5f, -2.5f, 1.5f, -1.5f, 3, -3, 0.5f,
				-0.5f, 2, -2.5f, -3.5f };
	uint8_t out[18];
	float y[32];
	fmt_err e;
	CHECK(fmt_quantize_q4_0(x, out, 32, &e) == FMT_OK);
	CHECK_MEM(out, want, sizeof want);
	CHECK(fmt_dequant_f32(FMT_DT_Q4_0, out, 32, y, &e) == FMT_OK);
	for (int j = 0; j < 32; j++) {
		CHECK(y[j] == deq[j]);
		CHECK(signbit(y[j]) == signbit(deq[j]));
	}
}

TEST(quant_q4_0_sign_convention)
{
	float x[32] = { 0 };
	x[3] = -4;
	x[9] = 4;
	const uint8_t want[18] = { 0x00, 0x38, 0x88, 0x88, 0x88, 0x80, 0x88, 0x88, 0x88, 0x88, 0x88, 0x8F,
				   0x88, 0x88, 0x88, 0x88, 0x88, 0x88 };
	uint8_t out[18];
	float y[32];
	fmt_err e;
	CHECK(fmt_quantize_q4_0(x, out, 32, &e) == FMT_OK);
	CHECK_MEM(out, want, sizeof want);
	CHECK(fmt_dequant_f32(FMT_DT_Q4_0, out, 32, y, &e) == FMT_OK);
	CHECK(y[9] == 3.5f && y[3] == -4.0f);
}

/* The spec text says "00 00" then sixteen 88, but ggml computes d = max / -8 with max = +0.0,
 * i.e. d = -0.0, and its fp16 conversion keeps the sign (§10.1): the reference bytes are
 * "00 80" then sixteen 88 (the Python golden generator agrees). */
TEST(quant_q4_0_zero_block)
{
	float x[32] = { 0 };
	uint8_t out[18], want[18];
	fmt_err e;
	memset(want, 0x88, sizeof want);
	want[0] = 0x00;
	want[1] = 0x80;
	CHECK(fmt_quantize_q4_0(x, out, 32, &e) == FMT_OK);
	CHECK_MEM(out, want, sizeof want);
}

/* ---- properties ---- */

static void random_block(float *x, int kind)
{
	float scale = kind == 0 ? 1.0f : kind == 1 ? 1000.0f : 0.001f;
	for (int j = 0; j < 32; j++)
		x[j] = lcg_signed() * scale;
	if (kind == 3) { /* the largest magnitude is negative, and appears again positive later */
		int at = (int)(lcg_next() % 16);
		x[at] = -2.0f;
		x[at + 16] = 2.0f;
	}
}

TEST(quant_property_error_bounds)
{
	fmt_err e;
	lcg_state = 12345;
	for (int it = 0; it < 4000; it++) {
		float x[32], y8[32], y4[32];
		uint8_t q8[34], q4[18];
		random_block(x, it % 4);
		CHECK(fmt_quantize_q8_0(x, q8, 32, &e) == FMT_OK);
		CHECK(fmt_quantize_q4_0(x, q4, 32, &e) == FMT_OK);
		CHECK(fmt_dequant_f32(FMT_DT_Q8_0, q8, 32, y8, &e) == FMT_OK);
		CHECK(fmt_dequant_f32(FMT_DT_Q4_0, q4, 32, y4, &e) == FMT_OK);
		float amax = 0, max = 0;
		for (int j = 0; j < 32; j++)
			if (fabsf(x[j]) > amax) {
				amax = fabsf(x[j]);
				max = x[j];
			}
		/* q is computed with the float32 d and decoded with fp16(d): allow that difference */
		float d8 = amax / 127.0f, d8h = fmt_f16_to_f32(fmt_f32_to_f16(d8));
		float d4 = max / -8.0f, d4h = fmt_f16_to_f32(fmt_f32_to_f16(d4));
		CHECK(d4h * max <= 0.0f); /* sign convention */
		float tol8 = 0.5f * d8 * (1.0f + 1e-6f) + 127.0f * fabsf(d8h - d8) + 1e-30f;
		float tol4 = fabsf(d4) * (1.0f + 1e-6f) + 8.0f * fabsf(d4h - d4) + 1e-30f;
		int bad8 = 0, bad4 = 0;
		for (int j = 0; j < 32; j++) {
			bad8 |= fabsf(y8[j] - x[j]) > tol8;
			bad4 |= fabsf(y4[j] - x[j]) > tol4;
		}
		CHECK(!bad8);
		CHECK(!bad4);
		/* the first extreme element is reproduced by Q4_0 up to fp16 rounding of d */
		CHECK(fabsf(-8.0f * d4h - max) <= 8.0f * fabsf(d4h - d4));
	}
}

TEST(quant_rejects_non_finite)
{
	float x[64];
	uint8_t out[68];
	fmt_err e;
	const float bad[3] = { NAN, INFINITY, -INFINITY };
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 64; j++)
			x[j] = (float)j;
		x[37] = bad[i];
		CHECK(fmt_quantize_q8_0(x, out, 64, &e) == FMT_INVALID_FORMAT);
		CHECK(strstr(e.msg, "NaN/Inf at element 37") != NULL);
		CHECK(fmt_quantize_q4_0(x, out, 64, &e) == FMT_INVALID_FORMAT);
		CHECK(strstr(e.msg, "cannot quantize") != NULL);
	}
	CHECK(fmt_quantize_q8_0(x, out, 31, &e) == FMT_INTERNAL);
}

/* ---- golden files ---- */

static uint8_t *read_golden(const char *name, size_t *len)
{
	char path[256];
	snprintf(path, sizeof path, "tests/data/golden/%s", name);
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t *buf = malloc(1 << 16);
	*len = buf ? fread(buf, 1, 1 << 16, f) : 0;
	fclose(f);
	return buf;
}

TEST(quant_golden_python)
{
	size_t n_in = 0, n8 = 0, n4 = 0;
	uint8_t *in = read_golden("quant_input.f32", &n_in);
	uint8_t *g8 = read_golden("quant_input.q8_0", &n8);
	uint8_t *g4 = read_golden("quant_input.q4_0", &n4);
	CHECK(in && g8 && g4);
	CHECK_EQ_U64(n_in, 64 * 32 * 4);
	CHECK_EQ_U64(n8, 64 * 34);
	CHECK_EQ_U64(n4, 64 * 18);
	if (in && g8 && g4 && n_in == 8192 && n8 == 2176 && n4 == 1152) {
		float x[64 * 32];
		uint8_t q8[64 * 34], q4[64 * 18];
		fmt_err e;
		memcpy(x, in, sizeof x); /* little-endian host */
		CHECK(fmt_quantize_q8_0(x, q8, 64 * 32, &e) == FMT_OK);
		CHECK(fmt_quantize_q4_0(x, q4, 64 * 32, &e) == FMT_OK);
		for (int b = 0; b < 64; b++) {
			if (memcmp(q8 + 34 * b, g8 + 34 * b, 34)) {
				char m[64];
				snprintf(m, sizeof m, "Q8_0 golden block %d differs", b);
				unit_fail(__FILE__, __LINE__, m);
			}
			if (memcmp(q4 + 18 * b, g4 + 18 * b, 18)) {
				char m[64];
				snprintf(m, sizeof m, "Q4_0 golden block %d differs", b);
				unit_fail(__FILE__, __LINE__, m);
			}
		}
	}
	free(in);
	free(g8);
	free(g4);
}

/* ---- decoding the other block types ---- */

static void random_bytes(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)lcg_next();
}

static void put_half(uint8_t *p, float f)
{
	uint16_t h = fmt_f32_to_f16(f);
	p[0] = (uint8_t)h;
	p[1] = (uint8_t)(h >> 8);
}

TEST(quant_decode_legacy_blocks)
{
	uint8_t b[24];
	float y[32];
	fmt_err e;
	lcg_state = 99;
	random_bytes(b, sizeof b);
	put_half(b, 0.25f);
	put_half(b + 2, -1.5f);
	/* Q4_1: d, m, qs */
	CHECK(fmt_dequant_f32(FMT_DT_Q4_1, b, 32, y, &e) == FMT_OK);
	for (int i = 0; i < 32; i++) {
		int q = i < 16 ? (b[4 + i] & 15) : (b[4 + i - 16] >> 4);
		CHECK(y[i] == (float)q * 0.25f + -1.5f);
	}
	/* Q5_0: d, qh (u32), qs */
	CHECK(fmt_dequant_f32(FMT_DT_Q5_0, b, 32, y, &e) == FMT_OK);
	uint32_t qh = (uint32_t)b[2] | (uint32_t)b[3] << 8 | (uint32_t)b[4] << 16 | (uint32_t)b[5] << 24;
	for (int i = 0; i < 32; i++) {
		int q = i < 16 ? (b[6 + i] & 15) : (b[6 + i - 16] >> 4);
		q |= (int)((qh >> i) & 1) << 4;
		CHECK(y[i] == (float)(q - 16) * 0.25f);
	}
	/* Q5_1: d, m, qh, qs */
	CHECK(fmt_dequant_f32(FMT_DT_Q5_1, b, 32, y, &e) == FMT_OK);
	qh = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 | (uint32_t)b[7] << 24;
	for (int i = 0; i < 32; i++) {
		int q = i < 16 ? (b[8 + i] & 15) : (b[8 + i - 16] >> 4);
		q |= (int)((qh >> i) & 1) << 4;
		CHECK(y[i] == (float)q * 0.25f + -1.5f);
	}
}

/* 6-bit scale and min of sub-block j from the 12 packed bytes, written out bit by bit. */
static void k4_scale(const uint8_t *s, int j, int *sc, int *mn)
{
	if (j < 4) {
		*sc = s[j] % 64;
		*mn = s[4 + j] % 64;
	} else {
		*sc = (s[8 + j - 4] % 16) + 16 * (s[j - 4] / 64);
		*mn = (s[8 + j - 4] / 16) + 16 * (s[j] / 64);
	}
}

TEST(quant_decode_q4_k_q5_k)
{
	uint8_t b[176];
	float y[256];
	fmt_err e;
	lcg_state = 7;
	random_bytes(b, sizeof b);
	put_half(b, 0.125f);
	put_half(b + 2, 0.0625f);
	CHECK(fmt_dequant_f32(FMT_DT_Q4_K, b, 256, y, &e) == FMT_OK);
	int bad = 0;
	for (int i = 0; i < 256; i++) {
		int g = i / 32, l = i % 32, sc, mn;
		uint8_t byte = b[16 + (g / 2) * 32 + l];
		int q = g % 2 ? byte >> 4 : byte & 15;
		k4_scale(b + 4, g, &sc, &mn);
		float want = (0.125f * (float)sc) * (float)q - 0.0625f * (float)mn;
		bad |= y[i] != want;
	}
	CHECK(!bad);
	CHECK(fmt_dequant_f32(FMT_DT_Q5_K, b, 256, y, &e) == FMT_OK);
	for (int i = 0; i < 256; i++) {
		int g = i / 32, l = i % 32, sc, mn;
		uint8_t byte = b[48 + (g / 2) * 32 + l];
		int q = (g % 2 ? byte >> 4 : byte & 15) + 16 * ((b[16 + l] >> g) & 1);
		k4_scale(b + 4, g, &sc, &mn);
		float want = (0.125f * (float)sc) * (float)q - 0.0625f * (float)mn;
		bad |= y[i] != want;
	}
	CHECK(!bad);
}

TEST(quant_decode_q6_k_q8_k)
{
	uint8_t b[292];
	float y[256];
	fmt_err e;
	lcg_state = 8;
	random_bytes(b, sizeof b);
	put_half(b + 208, -0.5f);
	CHECK(fmt_dequant_f32(FMT_DT_Q6_K, b, 256, y, &e) == FMT_OK);
	int bad = 0;
	for (int i = 0; i < 256; i++) {
		int half = i / 128, r = i % 128, quarter = r / 32, l = r % 32;
		uint8_t lo = b[half * 64 + l + (quarter % 2) * 32];
		int q = (quarter >= 2 ? lo >> 4 : lo & 15) + 16 * ((b[128 + half * 32 + l] >> (2 * quarter)) & 3) - 32;
		int sc = (int8_t)b[192 + half * 8 + quarter * 2 + l / 16];
		bad |= y[i] != (-0.5f * (float)sc) * (float)q;
	}
	CHECK(!bad);
	const float d = 0.375f;
	memcpy(b, &d, 4);
	CHECK(fmt_dequant_f32(FMT_DT_Q8_K, b, 256, y, &e) == FMT_OK);
	for (int i = 0; i < 256; i++)
		bad |= y[i] != d * (float)(int8_t)b[4 + i];
	CHECK(!bad);
}

TEST(quant_decode_unsupported)
{
	uint8_t b[136] = { 0 };
	float y[256];
	fmt_err e;
	CHECK(fmt_dequant_f32(FMT_DT_IQ4_XS, b, 256, y, &e) == FMT_UNSUPPORTED);
	CHECK_STR(e.msg, "cannot decode IQ4_XS data");
	CHECK(fmt_dequant_f32(FMT_DT_Q2_K, b, 256, y, &e) == FMT_UNSUPPORTED);
	CHECK(!fmt_dequant_supported(FMT_DT_TQ1_0));
	CHECK(fmt_dequant_supported(FMT_DT_Q6_K));
	/* plain types pass through */
	const uint8_t h[4] = { 0x00, 0x3C, 0x00, 0xC0 };
	CHECK(fmt_dequant_f32(FMT_DT_F16, h, 2, y, &e) == FMT_OK);
	CHECK(y[0] == 1.0f && y[1] == -2.0f);
}
