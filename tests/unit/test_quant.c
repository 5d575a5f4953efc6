/* ggml block quantization: spec worked examples (specs/gguf.md §11, §12), properties, golden
 * files from scripts/gen/quant-golden (an independent Python implementation), and decoding of
 * every supported block type against element-by-element re-derivations of the layouts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/half.h"
#include "fmt/quant.h"
#include "helpers.h"
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
	fmt_err e = { 0 };
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
	fmt_err e = { 0 };
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
	fmt_err e = { 0 };
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
	fmt_err e = { 0 };
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
	fmt_err e = { 0 };
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
	fmt_err e = { 0 };
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
	fmt_err e = { 0 };
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
	fmt_err e = { 0 };
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

TEST(quant_golden_python)
{
	size_t n_in = 0, n8 = 0, n4 = 0;
	uint8_t *in = unit_read_golden("quant_input.f32", &n_in);
	uint8_t *g8 = unit_read_golden("quant_input.q8_0", &n8);
	uint8_t *g4 = unit_read_golden("quant_input.q4_0", &n4);
	CHECK(in && g8 && g4);
	CHECK_EQ_U64(n_in, 64 * 32 * 4);
	CHECK_EQ_U64(n8, 64 * 34);
	CHECK_EQ_U64(n4, 64 * 18);
	if (in && g8 && g4 && n_in == 8192 && n8 == 2176 && n4 == 1152) {
		float x[64 * 32];
		uint8_t q8[64 * 34], q4[64 * 18];
		fmt_err e = { 0 };
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

/* n bytes from the generator seeded with seed. */
static void random_bytes(uint8_t *p, size_t n, uint64_t seed)
{
	lcg_state = seed;
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)lcg_next();
}

static void put_half(uint8_t *p, float f)
{
	uint16_t h = fmt_f32_to_f16(f);
	p[0] = (uint8_t)h;
	p[1] = (uint8_t)(h >> 8);
}

/* Element i of blocks b as the layout says, re-derived element by element. */
typedef double (*element_fn)(const uint8_t *b, int i);

/* Decode n elements (256 at most) of type t from b; each must equal want(b, i) exactly. A
 * failure names the first element that differs. */
static void check_decoding(fmt_dtype t, const uint8_t *b, int n, element_fn want, int line)
{
	float y[256];
	fmt_err e = { 0 };
	char msg[256];
	if (n > 256 || fmt_dequant_f32(t, b, (uint64_t)n, y, &e) != FMT_OK) {
		snprintf(msg, sizeof msg, "fmt_dequant_f32(%s, %d elements) == FMT_OK", fmt_dtype_name(t), n);
		unit_fail(__FILE__, line, msg);
		return;
	}
	for (int i = 0; i < n; i++) {
		if ((double)y[i] != want(b, i)) {
			snprintf(msg, sizeof msg, "%s element %d: %.9g, expected %.9g", fmt_dtype_name(t), i,
				 (double)y[i], want(b, i));
			unit_fail(__FILE__, line, msg);
			return;
		}
	}
}
#define CHECK_DECODING(t, b, n, want) check_decoding((t), (b), (n), (want), __LINE__)

/* Nibble i of 16 bytes at qs: the low nibbles are elements 0-15, the high ones 16-31. */
static int nibble(const uint8_t *qs, int i)
{
	return i < 16 ? qs[i] & 15 : qs[i - 16] >> 4;
}

static uint32_t u32_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The legacy blocks below share d = 0.25 at byte 0 and (Q4_1, Q5_1) m = -1.5 at byte 2. */
static double q4_1_element(const uint8_t *b, int i)
{
	return (float)nibble(b + 4, i) * 0.25f + -1.5f;
}

static double q5_0_element(const uint8_t *b, int i)
{
	int q = nibble(b + 6, i) | (int)((u32_at(b + 2) >> i) & 1) << 4;
	return (float)(q - 16) * 0.25f;
}

static double q5_1_element(const uint8_t *b, int i)
{
	int q = nibble(b + 8, i) | (int)((u32_at(b + 4) >> i) & 1) << 4;
	return (float)q * 0.25f + -1.5f;
}

TEST(quant_decode_legacy_blocks)
{
	uint8_t b[24];
	random_bytes(b, sizeof b, 99);
	put_half(b, 0.25f);
	put_half(b + 2, -1.5f);
	CHECK_DECODING(FMT_DT_Q4_1, b, 32, q4_1_element); /* d, m, qs */
	CHECK_DECODING(FMT_DT_Q5_0, b, 32, q5_0_element); /* d, qh (u32), qs */
	CHECK_DECODING(FMT_DT_Q5_1, b, 32, q5_1_element); /* d, m, qh, qs */
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

/* Q4_K and Q5_K below: d = 0.125, dmin = 0.0625. */
static double q4_k_element(const uint8_t *b, int i)
{
	int g = i / 32, l = i % 32, sc, mn;
	uint8_t byte = b[16 + (g / 2) * 32 + l];
	int q = g % 2 ? byte >> 4 : byte & 15;
	k4_scale(b + 4, g, &sc, &mn);
	return (0.125f * (float)sc) * (float)q - 0.0625f * (float)mn;
}

static double q5_k_element(const uint8_t *b, int i)
{
	int g = i / 32, l = i % 32, sc, mn;
	uint8_t byte = b[48 + (g / 2) * 32 + l];
	int q = (g % 2 ? byte >> 4 : byte & 15) + 16 * ((b[16 + l] >> g) & 1);
	k4_scale(b + 4, g, &sc, &mn);
	return (0.125f * (float)sc) * (float)q - 0.0625f * (float)mn;
}

TEST(quant_decode_q4_k_q5_k)
{
	uint8_t b[176];
	random_bytes(b, sizeof b, 7);
	put_half(b, 0.125f);
	put_half(b + 2, 0.0625f);
	CHECK_DECODING(FMT_DT_Q4_K, b, 256, q4_k_element);
	CHECK_DECODING(FMT_DT_Q5_K, b, 256, q5_k_element);
}

/* Q6_K below: d = -0.5. */
static double q6_k_element(const uint8_t *b, int i)
{
	int half = i / 128, r = i % 128, quarter = r / 32, l = r % 32;
	uint8_t lo = b[half * 64 + l + (quarter % 2) * 32];
	int q = (quarter >= 2 ? lo >> 4 : lo & 15) + 16 * ((b[128 + half * 32 + l] >> (2 * quarter)) & 3) - 32;
	int sc = (int8_t)b[192 + half * 8 + quarter * 2 + l / 16];
	return (-0.5f * (float)sc) * (float)q;
}

/* Q8_K: a float32 d, then the int8 codes. */
static double q8_k_element(const uint8_t *b, int i)
{
	float d;
	memcpy(&d, b, 4);
	return d * (float)(int8_t)b[4 + i];
}

TEST(quant_decode_q6_k_q8_k)
{
	uint8_t b[292];
	random_bytes(b, sizeof b, 8);
	put_half(b + 208, -0.5f);
	CHECK_DECODING(FMT_DT_Q6_K, b, 256, q6_k_element);
	const float d = 0.375f;
	memcpy(b, &d, 4);
	CHECK_DECODING(FMT_DT_Q8_K, b, 256, q8_k_element);
}

/* Element i of a Q2_K/Q3_K super-block: which 128-element half, which of its four 32-element
 * quarters (the bit pair of qs), which 16-element group (the scale), and the qs byte. */
static void k_low_bits_position(int i, int *half, int *quarter, int *group, int *byte)
{
	*half = i / 128;
	*quarter = (i % 128) / 32;
	*group = i / 16;
	*byte = *half * 32 + i % 32;
}

/* Q2_K below: d = 0.0625, dmin = -0.03125. */
static double q2_k_element(const uint8_t *b, int i)
{
	int half, quarter, group, byte;
	k_low_bits_position(i, &half, &quarter, &group, &byte);
	int q = (b[16 + byte] >> (2 * quarter)) % 4;
	int sc = b[group] % 16, mn = b[group] / 16;
	return (0.0625f * (float)sc) * (float)q - (-0.03125f * (float)mn);
}

TEST(quant_decode_q2_k)
{
	uint8_t b[84];
	float y[256];
	fmt_err e = { 0 };
	random_bytes(b, sizeof b, 21);
	put_half(b + 80, 0.0625f);
	put_half(b + 82, -0.03125f);
	CHECK_DECODING(FMT_DT_Q2_K, b, 256, q2_k_element);
	/* one hand-made value: element 37 (half 0, quarter 1, group 2, byte 5) */
	memset(b, 0, sizeof b);
	put_half(b + 80, 0.5f);
	put_half(b + 82, 0.25f);
	b[2] = 0x37;            /* scale 7, min 3 */
	b[16 + 5] = 2 << 2;     /* bit pair 1 = 2 */
	CHECK(fmt_dequant_f32(FMT_DT_Q2_K, b, 256, y, &e) == FMT_OK);
	CHECK(y[37] == 0.5f * 7 * 2 - 0.25f * 3);
	CHECK(y[36] == -0.75f && y[5] == 0.0f);
}

/* Q3_K below: d = -0.125. */
static double q3_k_element(const uint8_t *b, int i)
{
	int half, quarter, group, byte;
	k_low_bits_position(i, &half, &quarter, &group, &byte);
	int low = (b[32 + byte] >> (2 * quarter)) % 4;
	int hbit = (b[i % 32] >> (half * 4 + quarter)) % 2;
	int q = low - (hbit ? 0 : 4);
	/* 6-bit scale: 4 low bits from the nibbles of bytes 96..103, 2 high bits from 104..107 */
	int lo4 = group < 8 ? b[96 + group] % 16 : b[96 + group - 8] / 16;
	int hi2 = (b[104 + group % 4] >> (2 * (group / 4))) % 4;
	int sc = lo4 + 16 * hi2 - 32;
	return (-0.125f * (float)sc) * (float)q;
}

TEST(quant_decode_q3_k)
{
	uint8_t b[110];
	float y[256];
	fmt_err e = { 0 };
	random_bytes(b, sizeof b, 22);
	put_half(b + 108, -0.125f);
	CHECK_DECODING(FMT_DT_Q3_K, b, 256, q3_k_element);
	/* hand-made: all high bits clear -> every element is (low - 4) * scale */
	memset(b, 0, sizeof b);
	put_half(b + 108, 1.0f);
	b[96 + 9 - 8] = 0x50;   /* group 9: low 4 bits 5 (high nibble of byte 97) */
	b[104 + 1] = 0x30;      /* group 9: high 2 bits 3 (bits 4-5 of byte 105) */
	b[32 + 32 + 18] = 3;    /* element 146: half 1, quarter 0, byte 18 of the half, group 9 */
	CHECK(fmt_dequant_f32(FMT_DT_Q3_K, b, 256, y, &e) == FMT_OK);
	CHECK(y[146] == (float)(5 + 48 - 32) * (3 - 4));
	CHECK(y[145] == (float)(5 + 48 - 32) * -4);
	CHECK(y[0] == 32.0f * 4); /* scale 0 - 32 = -32, q = -4 */
}

/* Digit n of a TQ1_0 byte, n = 0 the most significant: the byte holds a five-digit base-3
 * number v as ceil(v * 256 / 243); multiplying by 3 (mod 256) n times brings digit n to the
 * top, where byte * 3 / 256 reads it. The hand-made block below checks the packing itself. */
static int tq1_digit(uint8_t byte, int n)
{
	unsigned v = byte;
	for (int k = 0; k < n; k++)
		v = (v * 3) % 256;
	return (int)((v * 3) / 256);
}

/* TQ1_0 below: d = 0.75. */
static double tq1_0_element(const uint8_t *b, int i)
{
	int byte, n;
	if (i < 160) {
		byte = i % 32;
		n = i / 32;
	} else if (i < 240) {
		byte = 32 + (i - 160) % 16;
		n = (i - 160) / 16;
	} else {
		byte = 48 + (i - 240) % 4;
		n = (i - 240) / 4;
	}
	return (float)(tq1_digit(b[byte], n) - 1) * 0.75f;
}

TEST(quant_decode_tq1_0)
{
	uint8_t b[54];
	float y[256];
	fmt_err e = { 0 };
	random_bytes(b, sizeof b, 23);
	put_half(b + 52, 0.75f);
	CHECK_DECODING(FMT_DT_TQ1_0, b, 256, tq1_0_element);
	/* digits 2,0,1,2,1 (most significant first): v = 2*81 + 0*27 + 1*9 + 2*3 + 1 = 178;
	 * byte = ceil(178 * 256 / 243) = 188 */
	memset(b, 0, sizeof b);
	put_half(b + 52, 1.0f);
	b[7] = 188;
	CHECK(fmt_dequant_f32(FMT_DT_TQ1_0, b, 256, y, &e) == FMT_OK);
	CHECK(y[7] == 1 && y[39] == -1 && y[71] == 0 && y[103] == 1 && y[135] == 0);
	CHECK(y[8] == -1);
}

/* TQ2_0 below: d = -2. */
static double tq2_0_element(const uint8_t *b, int i)
{
	int byte = (i / 128) * 32 + i % 32, pair = (i % 128) / 32;
	int q = (b[byte] >> (2 * pair)) % 4;
	return (float)(q - 1) * -2.0f;
}

TEST(quant_decode_tq2_0)
{
	uint8_t b[66];
	random_bytes(b, sizeof b, 24);
	put_half(b + 64, -2.0f);
	CHECK_DECODING(FMT_DT_TQ2_0, b, 256, tq2_0_element);
}

/* FP4 E2M1: sign, 2 exponent bits (bias 1), 1 mantissa bit; written from the OCP MX table. */
static float e2m1(int code)
{
	static const float mag[8] = { 0, 0.5f, 1, 1.5f, 2, 3, 4, 6 };
	return code & 8 ? -mag[code & 7] : mag[code & 7];
}

static double mxfp4_element(const uint8_t *b, int i)
{
	const uint8_t *blk = b + 17 * (i / 32);
	int j = i % 32;
	int code = j < 16 ? blk[1 + j] & 15 : blk[1 + j - 16] >> 4;
	/* exact in double; 2^127 times 1.5 or more overflows float32 to Inf, as in ggml */
	return (float)((double)e2m1(code) * ldexp(1.0, blk[0] - 127));
}

TEST(quant_decode_mxfp4)
{
	uint8_t b[17 * 4];
	float y[128];
	fmt_err e = { 0 };
	random_bytes(b, sizeof b, 25);
	b[0] = 127;  /* 2^0 */
	b[17] = 0;   /* 2^-127 (a float32 subnormal scale) */
	b[34] = 254; /* 2^127 */
	b[51] = 120; /* 2^-7 */
	CHECK_DECODING(FMT_DT_MXFP4, b, 128, mxfp4_element);
	CHECK(fmt_dequant_f32(FMT_DT_MXFP4, b, 128, y, &e) == FMT_OK);
	CHECK(y[0] == e2m1(b[1] & 15));
	memset(b, 0, 17);
	b[0] = 254;
	b[1] = 0x17; /* element 0: code 7 (6.0), element 16: code 1 (0.5) */
	CHECK(fmt_dequant_f32(FMT_DT_MXFP4, b, 32, y, &e) == FMT_OK);
	CHECK(isinf(y[0]) && y[16] == 0x1p126f);
}

/* Unsigned E4M3 (bias 7) as ggml reads an NVFP4 scale: 0x7F (NaN) and 0 give 0. */
static double ue4m3(uint8_t x)
{
	int exp = (x >> 3) & 15, man = x & 7;
	if (x == 0x7F || x == 0)
		return 0;
	return exp == 0 ? ldexp(man, -9) : ldexp(8 + man, exp - 10);
}

/* Compared in double: the product of a code and a scale is exact there. */
static double nvfp4_element(const uint8_t *b, int i)
{
	const uint8_t *blk = b + 36 * (i / 64);
	int sub = (i % 64) / 16, j = i % 16;
	uint8_t byte = blk[4 + 8 * sub + j % 8];
	int code = j < 8 ? byte & 15 : byte >> 4;
	return (double)e2m1(code) * ue4m3(blk[sub]);
}

TEST(quant_decode_nvfp4)
{
	uint8_t b[36 * 2];
	float y[128];
	fmt_err e = { 0 };
	random_bytes(b, sizeof b, 26);
	b[0] = 0x38;         /* 1.0 */
	b[1] = 0x7F;         /* NaN pattern -> 0 */
	b[2] = 0x05;         /* subnormal 5 * 2^-9 */
	b[36] = 0x80 | 0x38; /* bit 7 is not a sign: exponent 7 -> 1.0 as well */
	CHECK_DECODING(FMT_DT_NVFP4, b, 128, nvfp4_element);
	CHECK(fmt_dequant_f32(FMT_DT_NVFP4, b, 128, y, &e) == FMT_OK);
	CHECK(y[16] == 0.0f);
}

/* Q1_0 and Q8_1 below: d = 1.5 (Q8_1's s, at byte 2, is ignored). */
static double q1_0_element(const uint8_t *b, int i)
{
	return (b[2 + i / 8] >> (i % 8)) % 2 ? 1.5f : -1.5f;
}

static double q8_1_element(const uint8_t *b, int i)
{
	return 1.5f * (float)(int8_t)b[4 + i];
}

TEST(quant_decode_q1_0_q8_1)
{
	uint8_t b[36];
	random_bytes(b, sizeof b, 27);
	put_half(b, 1.5f);
	CHECK_DECODING(FMT_DT_Q1_0, b, 128, q1_0_element);
	put_half(b + 2, 1000.0f);
	CHECK_DECODING(FMT_DT_Q8_1, b, 32, q8_1_element);
}

/* Q2_0 below: two blocks, d = 0.5 and -3. */
static double q2_0_element(const uint8_t *b, int i)
{
	const uint8_t *blk = b + 18 * (i / 64);
	float d = i < 64 ? 0.5f : -3.0f;
	int j = i % 64, code = (blk[2 + j / 4] >> (2 * (j % 4))) % 4;
	return (float)(code - 1) * d;
}

TEST(quant_decode_q2_0)
{
	uint8_t b[18 * 2];
	float y[128];
	fmt_err e = { 0 };
	random_bytes(b, sizeof b, 28);
	put_half(b, 0.5f);
	put_half(b + 18, -3.0f);
	CHECK_DECODING(FMT_DT_Q2_0, b, 128, q2_0_element);
	/* codes 00 01 10 11 are -1, 0, +1, +2 times d: byte 0xE4 = 11 10 01 00 */
	b[2] = 0xE4;
	CHECK(fmt_dequant_f32(FMT_DT_Q2_0, b, 64, y, &e) == FMT_OK);
	CHECK(y[0] == -0.5f && y[1] == 0.0f && y[2] == 0.5f && y[3] == 1.0f);
}

TEST(quant_decode_unsupported)
{
	uint8_t b[136] = { 0 };
	float y[256];
	fmt_err e = { 0 };
	CHECK(fmt_dequant_f32(FMT_DT_IQ2_S, b, 256, y, &e) == FMT_UNSUPPORTED);
	CHECK_STR(e.msg, "cannot decode IQ2_S data");
	const fmt_dtype codebook[] = { FMT_DT_IQ2_XXS, FMT_DT_IQ2_XS, FMT_DT_IQ3_XXS, FMT_DT_IQ1_S,
				       FMT_DT_IQ3_S, FMT_DT_IQ2_S, FMT_DT_IQ1_M };
	for (size_t i = 0; i < sizeof codebook / sizeof codebook[0]; i++)
		CHECK(!fmt_dequant_supported(codebook[i]));
	/* IQ4_NL and IQ4_XS use sixteen fixed values, no codebook (issue 23) */
	const fmt_dtype decoded[] = { FMT_DT_Q2_K, FMT_DT_Q3_K, FMT_DT_TQ1_0, FMT_DT_TQ2_0,
				      FMT_DT_MXFP4, FMT_DT_NVFP4, FMT_DT_Q1_0, FMT_DT_Q2_0, FMT_DT_Q8_1, FMT_DT_Q6_K,
				      FMT_DT_IQ4_NL, FMT_DT_IQ4_XS };
	for (size_t i = 0; i < sizeof decoded / sizeof decoded[0]; i++)
		CHECK(fmt_dequant_supported(decoded[i]));
	/* plain types pass through */
	const uint8_t h[4] = { 0x00, 0x3C, 0x00, 0xC0 };
	CHECK(fmt_dequant_f32(FMT_DT_F16, h, 2, y, &e) == FMT_OK);
	CHECK(y[0] == 1.0f && y[1] == -2.0f);
}
