/* The quantizers of issue 23 (Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL, IQ4_XS) against golden blocks
 * written by ggml itself (scripts/gen/ggml-quant-golden: ggml_quantize_chunk without an
 * importance matrix, as llama-quantize --pure calls it), one 256-element row per case: random
 * rows, all zero, one huge value, subnormals, constant rows, negative-only rows, ties, zero
 * sub-blocks, and a row whose F16 scales overflow. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/half.h"
#include "fmt/quant.h"
#include "helpers.h"
#include "unit.h"

#define ROW 256
#define N_ROWS 22
#define OVERFLOW_ROW 21 /* -1e10 at element 200: every type's F16 scale is infinite */

/* What each row of kquant_input.f32 holds (the generator's order). */
static const char *const row_case[N_ROWS] = {
	"random x1", "random x0.02", "random x37.5", "random x0.001", "bell-shaped", "wide range",
	"all zero", "one huge value (30000)", "constant 0.5", "constant -0.25", "negative only",
	"positive only", "subnormals (1/d overflows)", "tiny normals (subnormal d)", "around 1e-15",
	"zero sub-blocks", "quarter steps and -0.0", "sparse", "large (60000)", "alternating +-0.75",
	"equal +-4 pair", "overflow (-1e10)",
};


static uint64_t row_bytes(fmt_dtype t)
{
	const fmt_dtype_info *d = fmt_dtype_get(t);
	return ROW / d->block_elems * d->block_bits / 8;
}

#define N_RANDOM_ROWS 32 /* kquant_random.f32: weight-like rows */

static float *read_rows(const char *file, int rows)
{
	size_t n = 0;
	uint8_t *raw = unit_read_golden(file, &n);
	CHECK_EQ_U64(n, (uint64_t)rows * ROW * 4);
	float *x = raw && n == (size_t)rows * ROW * 4 ? malloc(n) : NULL;
	if (x)
		memcpy(x, raw, n); /* little-endian host */
	free(raw);
	return x;
}

/* The same rows through fmt_quantize_fused (the tools' one pass with the checks): ggml's bytes
 * for every row, except the overflow row, which it leaves to the separate checks (Q8_0, Q4_0:
 * *redo) or refuses as fmt_quantize does (the scale check). */
static void check_fused_rows(fmt_dtype t, const float *x, const uint8_t *want, int rows, uint64_t rb, int level,
			     const char *const *names)
{
	uint8_t *got = malloc(rb);
	const int was = fmt_quant_use_simd(level);
	for (int r = 0; got && r < rows; r++) {
		fmt_err e;
		int redo = -1;
		fmt_err_clear(&e);
		fmt_kind k = fmt_quantize_fused(t, x + (size_t)r * ROW, got, ROW, 0, &redo, &e);
		const int overflow_row = names && r == OVERFLOW_ROW;
		const int legacy_overflow = t == FMT_DT_Q8_0 || t == FMT_DT_Q4_0;
		char m[160];
		snprintf(m, sizeof m, "fused %s row %d (%s) at SIMD level %d", fmt_dtype_name(t), r,
			 names ? names[r] : "random", level);
		if (overflow_row && legacy_overflow) {
			if (k != FMT_OK || redo != 1)
				unit_fail(__FILE__, __LINE__, m);
		} else if (overflow_row) {
			if (k != FMT_INVALID_FORMAT || redo != 0)
				unit_fail(__FILE__, __LINE__, m);
		} else if (k != FMT_OK || redo != 0 || memcmp(got, want + (size_t)r * rb, rb) != 0) {
			unit_fail(__FILE__, __LINE__, m);
		}
	}
	fmt_quant_use_simd(was);
	free(got);
}

/* Every row of base.f32 quantized to t equals ggml's blocks in base.<type>, row by row. */
static void check_rows(fmt_dtype t, const char *base, int rows, const char *const *names)
{
	char file[64], type[16];
	size_t n = 0;
	snprintf(file, sizeof file, "%s.f32", base);
	float *x = read_rows(file, rows);
	snprintf(type, sizeof type, "%s", fmt_dtype_name(t));
	for (char *c = type; *c; c++)
		*c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
	snprintf(file, sizeof file, "%s.%s", base, type);
	uint8_t *want = unit_read_golden(file, &n);
	const uint64_t rb = row_bytes(t);
	CHECK_EQ_U64(n, rows * rb);
	uint8_t *got = malloc(rows * rb);
	/* every SIMD level (0 portable, 1 AVX2, 2 AVX-512; the CPU's widest caps them) */
	for (int level = 0; level <= 2 && x && want && got && n == rows * rb; level++) {
		const int was = fmt_quant_use_simd(level);
		fmt_quantize_blocks(t, x, got, rows * (ROW / fmt_dtype_get(t)->block_elems));
		fmt_quant_use_simd(was);
		for (int r = 0; r < rows; r++) {
			if (memcmp(got + r * rb, want + r * rb, rb) != 0) {
				char m[160];
				snprintf(m, sizeof m, "%s: %s row %d (%s) differs from ggml at SIMD level %d", base,
					 fmt_dtype_name(t), r, names ? names[r] : "random", level);
				unit_fail(__FILE__, __LINE__, m);
			}
		}
		check_fused_rows(t, x, want, rows, rb, level, names);
	}
	free(x);
	free(want);
	free(got);
}

static void check_golden(fmt_dtype t)
{
	check_rows(t, "kquant_input", N_ROWS, row_case);
	check_rows(t, "kquant_random", N_RANDOM_ROWS, NULL);
}

TEST(quant_k_golden_q4_1) { check_golden(FMT_DT_Q4_1); }
TEST(quant_k_golden_q5_0) { check_golden(FMT_DT_Q5_0); }
TEST(quant_k_golden_q5_1) { check_golden(FMT_DT_Q5_1); }
TEST(quant_k_golden_q2_k) { check_golden(FMT_DT_Q2_K); }
TEST(quant_k_golden_q3_k) { check_golden(FMT_DT_Q3_K); }
TEST(quant_k_golden_q4_k) { check_golden(FMT_DT_Q4_K); }
TEST(quant_k_golden_q5_k) { check_golden(FMT_DT_Q5_K); }
TEST(quant_k_golden_q6_k) { check_golden(FMT_DT_Q6_K); }
TEST(quant_k_golden_iq4_nl) { check_golden(FMT_DT_IQ4_NL); }
TEST(quant_k_golden_iq4_xs) { check_golden(FMT_DT_IQ4_XS); }
/* Q8_0 and Q4_0 through the common entry point, against ggml too (not only the Python model) */
TEST(quant_k_golden_q8_0) { check_golden(FMT_DT_Q8_0); }
TEST(quant_k_golden_q4_0) { check_golden(FMT_DT_Q4_0); }

static const fmt_dtype new_types[] = { FMT_DT_Q4_1, FMT_DT_Q5_0, FMT_DT_Q5_1, FMT_DT_Q2_K, FMT_DT_Q3_K,
				       FMT_DT_Q4_K, FMT_DT_Q5_K, FMT_DT_Q6_K, FMT_DT_IQ4_NL, FMT_DT_IQ4_XS };
#define N_NEW (sizeof new_types / sizeof new_types[0])

TEST(quant_k_supported_types)
{
	for (size_t i = 0; i < N_NEW; i++)
		CHECK(fmt_quantize_supported(new_types[i]) && fmt_dequant_supported(new_types[i]));
	CHECK(fmt_quantize_supported(FMT_DT_Q8_0) && fmt_quantize_supported(FMT_DT_Q4_0));
	CHECK(!fmt_quantize_supported(FMT_DT_Q8_K) && !fmt_quantize_supported(FMT_DT_IQ2_XS) &&
	      !fmt_quantize_supported(FMT_DT_F16) && !fmt_quantize_supported(FMT_DT_TQ1_0));
	float x[256] = { 0 };
	uint8_t y[256];
	fmt_err e = { 0 };
	CHECK(fmt_quantize(FMT_DT_IQ2_XS, x, y, 256, 0, &e) == FMT_UNSUPPORTED);
	CHECK_STR(e.msg, "cannot quantize to IQ2_XS");
}

/* The public entry point: every row but the overflow one passes; the overflow row is refused
 * naming its elements (from first_elem on), as llama-quantize refuses the block. */
TEST(quant_k_overflow_refused)
{
	float *x = read_rows("kquant_input.f32", N_ROWS);
	if (!x)
		return;
	for (size_t i = 0; i < N_NEW; i++) {
		const fmt_dtype t = new_types[i];
		uint8_t *y = malloc(N_ROWS * row_bytes(t));
		fmt_err e = { 0 };
		CHECK(y && fmt_quantize(t, x, y, (uint64_t)OVERFLOW_ROW * ROW, 0, &e) == FMT_OK);
		CHECK(fmt_quantize(t, x + OVERFLOW_ROW * ROW, y, ROW, 1000 * 256, &e) == FMT_INVALID_FORMAT);
		/* the huge value is element 200: its block of 32 or its super-block of 256 */
		char want[160];
		const unsigned blk = fmt_dtype_get(t)->block_elems;
		const unsigned first = 1000 * 256 + (blk == 32 ? 192 : 0);
		snprintf(want, sizeof want, "elements %u to %u are too large for %s: the block's F16 scale is "
			 "infinite; cannot quantize", first, first + blk - 1, fmt_dtype_name(t));
		CHECK_STR(e.msg, want);
		free(y);
	}
	free(x);
}

TEST(quant_k_nan_inf_refused)
{
	float x[256];
	uint8_t y[256];
	for (int i = 0; i < 256; i++)
		x[i] = (float)i / 7.0f;
	x[130] = NAN;
	for (size_t i = 0; i < N_NEW; i++) {
		fmt_err e = { 0 };
		CHECK(fmt_quantize(new_types[i], x, y, 256, 0, &e) == FMT_INVALID_FORMAT);
		CHECK_STR(e.msg, "tensor has NaN/Inf at element 130; cannot quantize");
	}
	x[130] = -INFINITY;
	fmt_err e = { 0 };
	CHECK(fmt_quantize(FMT_DT_Q4_K, x, y, 256, 0, &e) == FMT_INVALID_FORMAT);
	/* a count that does not fill the blocks is the caller's bug */
	CHECK(fmt_quantize(FMT_DT_Q4_K, x, y, 224, 0, &e) == FMT_INTERNAL);
	CHECK_STR(e.msg, "cannot quantize 224 elements: not a multiple of 256");
}

/* Hand-checked blocks: an all-zero row gives ggml's zero bytes; IQ4_XS keeps the sign of
 * d = -0.0 / 32, stores each group's scale 0 as 0 + 32 (low nibbles 0, high bits 2: scales_h
 * 0xAAAA) and codes index 8 (value 1, the nearest to 0). */
TEST(quant_k_zero_rows)
{
	float x[256] = { 0 };
	uint8_t y[256], zero[256] = { 0 };
	fmt_err e = { 0 };
	CHECK(fmt_quantize(FMT_DT_Q4_K, x, y, 256, 0, &e) == FMT_OK);
	CHECK_MEM(y, zero, 144);
	CHECK(fmt_quantize(FMT_DT_Q6_K, x, y, 256, 0, &e) == FMT_OK);
	CHECK_MEM(y, zero, 210);
	CHECK(fmt_quantize(FMT_DT_Q2_K, x, y, 256, 0, &e) == FMT_OK);
	CHECK_MEM(y, zero, 84);
	CHECK(fmt_quantize(FMT_DT_IQ4_XS, x, y, 256, 0, &e) == FMT_OK);
	CHECK(y[0] == 0x00 && y[1] == 0x80);
	CHECK(y[2] == 0xAA && y[3] == 0xAA);
	CHECK(y[4] == 0 && y[5] == 0 && y[6] == 0 && y[7] == 0);
	for (int j = 8; j < 136; j++)
		CHECK(y[j] == 0x88);
	float back[256];
	CHECK(fmt_dequant_f32(FMT_DT_IQ4_XS, y, 256, back, &e) == FMT_OK);
	for (int j = 0; j < 256; j++)
		CHECK(back[j] == 0.0f);
}

/* Quantize, decode: every new type stays within a loose bound of the input on random data
 * (a fit, not only a copy: the decoder and the quantizer agree on the layouts). */
TEST(quant_k_roundtrip_error)
{
	float x[1024], y[1024];
	uint8_t q[1024];
	uint64_t s = 7;
	for (int i = 0; i < 1024; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		x[i] = (float)(s >> 40) / 8388608.0f - 1.0f;
	}
	/* the largest error ggml's own quantizers make on such data, with a margin */
	const float bound[N_NEW] = { 0.07f, 0.07f, 0.04f, 0.45f, 0.25f, 0.1f, 0.05f, 0.025f, 0.15f, 0.15f };
	for (size_t i = 0; i < N_NEW; i++) {
		fmt_err e = { 0 };
		CHECK(fmt_quantize(new_types[i], x, q, 1024, 0, &e) == FMT_OK);
		CHECK(fmt_dequant_f32(new_types[i], q, 1024, y, &e) == FMT_OK);
		float worst = 0;
		for (int j = 0; j < 1024; j++)
			worst = fmaxf(worst, fabsf(y[j] - x[j]));
		if (!(worst <= bound[i])) {
			char m[96];
			snprintf(m, sizeof m, "%s: largest error %g above %g", fmt_dtype_name(new_types[i]),
				 (double)worst, (double)bound[i]);
			unit_fail(__FILE__, __LINE__, m);
		}
	}
}

TEST(quant_k_row_fallback)
{
	CHECK(fmt_quantize_row_fallback(FMT_DT_Q4_K, 4096) == FMT_DT_Q4_K);
	CHECK(fmt_quantize_row_fallback(FMT_DT_Q4_K, 4096 + 32) == FMT_DT_Q5_0);
	CHECK(fmt_quantize_row_fallback(FMT_DT_Q5_K, 96) == FMT_DT_Q5_1);
	CHECK(fmt_quantize_row_fallback(FMT_DT_Q6_K, 96) == FMT_DT_Q8_0);
	CHECK(fmt_quantize_row_fallback(FMT_DT_Q2_K, 96) == FMT_DT_Q4_0);
	CHECK(fmt_quantize_row_fallback(FMT_DT_Q3_K, 96) == FMT_DT_Q4_0);
	CHECK(fmt_quantize_row_fallback(FMT_DT_IQ4_XS, 96) == FMT_DT_IQ4_NL);
	CHECK(fmt_quantize_row_fallback(FMT_DT_Q4_K, 100) == FMT_DT_F16);
	CHECK(fmt_quantize_row_fallback(FMT_DT_Q4_1, 100) == FMT_DT_F16);
	CHECK(fmt_quantize_row_fallback(FMT_DT_Q5_0, 64) == FMT_DT_Q5_0);
}

/* ---- the legacy block kernels (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1): each SIMD level against the
 * portable code on blocks that stress the edges (signed zeros in either order, one huge value,
 * subnormals, constant and negative-only blocks, exact rounding ties, overflows) ---- */

#define LEGACY_CASES 16

/* Block `which` of the edge cases, 32 values. */
static void legacy_edge_block(int which, float *x)
{
	for (int j = 0; j < 32; j++) {
		switch (which) {
		case 0: x[j] = 0.0f; break;
		case 1: x[j] = -0.0f; break;
		case 2: x[j] = j % 2 ? 0.0f : -0.0f; break;              /* -0 first */
		case 3: x[j] = j % 2 ? -0.0f : 0.0f; break;              /* +0 first */
		case 4: x[j] = j == 13 ? 30000.0f : 0.001f * (float)j; break;
		case 5: x[j] = (float)(j + 1) * 1e-45f; break;             /* subnormals: 1/d overflows */
		case 6: x[j] = (float)(j + 1) * 1.2e-38f; break;           /* tiny normals */
		case 7: x[j] = 0.75f; break;
		case 8: x[j] = -0.25f; break;
		case 9: x[j] = -1.0f - 0.125f * (float)j; break;           /* negative only */
		case 10: x[j] = 0.5f * (float)(j % 16) - 4.0f; break;      /* ties on the code grid */
		case 11: x[j] = j == 31 ? -7.5f : (j == 0 ? 7.5f : 0.0f); break; /* extremes at the ends */
		case 12: x[j] = j == 5 ? 1e10f : 1.0f; break;              /* F16 scale overflows */
		case 13: x[j] = j % 2 ? 3e38f : -3e38f; break;             /* max - min overflows */
		case 14: x[j] = j < 16 ? -0.0f : 2.0f; break;              /* min is -0 of a zero half */
		default: x[j] = j % 3 == 0 ? 4.0f : -4.0f; break;          /* equal +-4 */
		}
	}
}

static void check_legacy_level(fmt_dtype t, int level)
{
	float x[32 * LEGACY_CASES];
	uint8_t want[34 * LEGACY_CASES], got[34 * LEGACY_CASES];
	const uint64_t bb = fmt_dtype_get(t)->block_bits / 8;
	for (int c = 0; c < LEGACY_CASES; c++) {
		legacy_edge_block(c, x + 32 * c);
		for (int s = 0; s < 2; s++) {  /* alone, and in a run after the case before */
			if (c - s < 0)
				continue;
			const float *row = x + 32 * (c - s);
			int redo[2] = { -1, -1 };
			fmt_kind k[2];
			for (int pass = 0; pass < 2; pass++) {
				fmt_err e;
				fmt_err_clear(&e);
				memset(pass ? got : want, 0xA5, sizeof want);
				const int was = fmt_quant_use_simd(pass ? level : 0);
				k[pass] = fmt_quantize_fused(t, row, pass ? got : want, 32 * (uint64_t)(s + 1), 0, &redo[pass], &e);
				fmt_quant_use_simd(was);
			}
			char m[128];
			snprintf(m, sizeof m, "%s edge block %d (run of %d) at SIMD level %d differs from portable",
				 fmt_dtype_name(t), c, s + 1, level);
			if (k[0] != k[1] || redo[0] != redo[1] || memcmp(want, got, bb * (uint64_t)(s + 1)) != 0)
				unit_fail(__FILE__, __LINE__, m);
		}
	}
}

static void check_legacy_levels(fmt_dtype t)
{
	for (int level = 1; level <= 2; level++)
		check_legacy_level(t, level);
}

TEST(quant_legacy_simd_edges_q8_0) { check_legacy_levels(FMT_DT_Q8_0); }
TEST(quant_legacy_simd_edges_q4_0) { check_legacy_levels(FMT_DT_Q4_0); }
TEST(quant_legacy_simd_edges_q4_1) { check_legacy_levels(FMT_DT_Q4_1); }
TEST(quant_legacy_simd_edges_q5_0) { check_legacy_levels(FMT_DT_Q5_0); }
TEST(quant_legacy_simd_edges_q5_1) { check_legacy_levels(FMT_DT_Q5_1); }
