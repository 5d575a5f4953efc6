/* fmt/watermark_ss.h (man/fmtkit-watermark.7): the Hadamard code, the p-value's bounds, and the
 * false-positive calibration on 200 unmarked models, each also after F16, Q8_0 and noise. */
#include <math.h>
#include <stdlib.h>
#include "fmt/half.h"
#include "fmt/quant.h"
#include "fmt/watermark_ss.h"
#include "unit.h"

TEST(ss_hadamard_code_words_differ_in_half)
{
	int8_t a[FMT_SS_GROUPS], b[FMT_SS_GROUPS];
	fmt_ss_codeword(0x00112233445566FFull, a);
	fmt_ss_codeword(0x01112233445566FEull, b);
	int diff0 = 0, diff7 = 0, same = 0;
	for (int x = 0; x < 256; x++) {
		diff0 += a[x] != b[x];
		diff7 += a[7 * 256 + x] != b[7 * 256 + x];
		for (int k = 1; k < 7; k++)
			same += a[256 * k + x] == b[256 * k + x];
	}
	CHECK_EQ_U64(diff0, 128);
	CHECK_EQ_U64(diff7, 128);
	CHECK_EQ_U64(same, 6 * 256);
	CHECK(a[0] == 1 && a[256 * 7 + 1] == -1);   /* x = 0 is even parity; 0xFF AND 1 is odd */
}

TEST(ss_score_p_bounds)
{
	static double score[FMT_SS_BYTES][256];
	/* no evidence at all: every buyer ties, p = 1 */
	CHECK(fmt_ss_score_p(score, 0x0102030405060708ull) == 1.0);
	/* the buyer is every byte's unique best: p = 2^-48 */
	for (int b = 0; b < FMT_SS_BYTES; b++)
		for (int a = 0; a < 256; a++)
			score[b][a] = a == b + 1 ? 9.0 : (double)(a % 7) / 7;
	CHECK(fmt_ss_score_p(score, 0x0102030405060708ull) == ldexp(1, -48));
	/* one byte ranked second of 256 and the rest first: 2 of 2^48 score as high */
	score[0][200] = 9.5;
	CHECK(fmt_ss_score_p(score, 0x0102030405060708ull) == ldexp(2, -48));
}

static uint64_t rng_state;

static double uniform01(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return ((double)(rng_state >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(void)
{
	return sqrt(-2 * log(uniform01())) * cos(2 * M_PI * uniform01());
}

enum { TENSORS = 2, ELEMS = 8192, MODELS = 200 };

/* The model's p-value for a payload, and whether extract would call it watermarked, under
 * fmtkit-ss/1 or /2. */
static double model_p(int version, const uint8_t sk[32], float v[TENSORS][ELEMS], uint64_t payload, int *valid)
{
	static fmt_ss_acc acc;
	static fmt_ss_sum sum;
	static fmt_ss2_acc acc2;
	static double score[FMT_SS_BYTES][256];
	memset(&sum, 0, sizeof sum);
	memset(&acc2, 0, sizeof acc2);
	for (int t = 0; t < TENSORS; t++) {
		memset(&acc, 0, sizeof acc);
		if (version == 1) {
			fmt_ss_acc_f32(sk, &acc, v[t], ELEMS, 0, ELEMS);
			fmt_ss_sum_add(&sum, &acc);
		} else {
			fmt_ss2_acc_f32(sk, &acc2, v[t], ELEMS, 0, ELEMS);
		}
	}
	if (version == 1)
		fmt_ss_scores(&sum, score);
	else
		fmt_ss2_scores(&acc2, score);
	unsigned ties;
	uint64_t got = fmt_ss_decode(score, &ties);
	*valid = ties == 0 && fmt_wm_payload_valid(got);
	return fmt_ss_score_p(score, payload);
}

static void false_positives_and_calibration(int version)
{
	static float v[TENSORS][ELEMS], w[TENSORS][ELEMS];
	static uint8_t q8[ELEMS / 32 * 34];
	uint8_t sk[32];
	for (int i = 0; i < 32; i++)
		sk[i] = (uint8_t)(7 * i + 1);
	const uint64_t payload = 0xc879b5a7cda6c824ull;   /* a buyer's (hash prefix and its CRC) */
	int below01 = 0, below1 = 0, matches = 0, valid_any = 0;
	rng_state = 88172645463325252ull;
	for (int m = 0; m < MODELS; m++) {
		double sd = 0.01 + 0.1 * uniform01(), mean = 0.05 * normal();
		for (int t = 0; t < TENSORS; t++)
			for (int i = 0; i < ELEMS; i++)
				v[t][i] = (float)(mean + sd * normal());
		for (int variant = 0; variant < 4; variant++) {
			fmt_err e = { 0 };
			for (int t = 0; t < TENSORS; t++) {
				switch (variant) {
				case 0: memcpy(w[t], v[t], sizeof w[t]); break;
				case 1:
					for (int i = 0; i < ELEMS; i++)
						w[t][i] = fmt_f16_to_f32(fmt_f32_to_f16(v[t][i]));
					break;
				case 2:
					CHECK(fmt_quantize_q8_0(v[t], q8, ELEMS, &e) == FMT_OK);
					CHECK(fmt_dequant_f32(FMT_DT_Q8_0, q8, ELEMS, w[t], &e) == FMT_OK);
					break;
				default:
					for (int i = 0; i < ELEMS; i++)
						w[t][i] = v[t][i] + (float)(0.01 * sd * normal());
				}
			}
			int valid;
			double p = model_p(version, sk, w, payload, &valid);
			matches += p < FMT_WM_MATCH_P;
			valid_any += valid;
			if (variant == 0) {
				below01 += p < 0.01;
				below1 += p < 0.1;
			}
		}
	}
	CHECK_EQ_U64(matches, 0);
	CHECK_EQ_U64(valid_any, 0);
	/* calibrated: 2 and 20 expected of 200; bounds at P < 0.002 under Binomial(200, p) */
	CHECK(below01 <= 7);
	CHECK(below1 >= 8 && below1 <= 34);
}

TEST(ss_false_positives_and_calibration)
{
	false_positives_and_calibration(1);
}

TEST(ss2_false_positives_and_calibration)
{
	false_positives_and_calibration(2);
}

/* fmtkit-ss/2 end to end on values in memory: 3 tensors (one not a whole number of runs), marked
 * at strength 0.05, found (the payload valid, p = 2^-48); each tensor's RMS change within
 * strength x the std its marked runs estimate; every value outside the marked runs unchanged. */
TEST(ss2_embed_then_detect)
{
	enum { N0 = 3 * 65536, N1 = 65536 + 5000, N2 = 700 };
	static float orig[N0 + N1 + N2], v[N0 + N1 + N2];
	const uint64_t sizes[3] = { N0, N1, N2 };
	fmt_ss_params prm = { .strength = 0.05, .version = 2 };   /* 6 runs only: strong */
	for (int i = 0; i < 32; i++)
		prm.sk[i] = (uint8_t)(3 * i + 5);
	const uint64_t payload = 0xc879b5a7cda6c824ull;
	fmt_ss_codeword(payload, prm.d);
	rng_state = 2463534242ull;
	for (size_t i = 0; i < N0 + N1 + N2; i++)
		orig[i] = v[i] = (float)(0.3 + 0.02 * normal());
	static fmt_ss2_acc acc;
	memset(&acc, 0, sizeof acc);
	float *t = v;
	for (int k = 0; k < 3; k++) {
		fmt_wm_dist d = { 0 };
		for (uint64_t first = 0; first < sizes[k]; first += FMT_SS_BLOCK) {
			size_t n = (size_t)(sizes[k] - first < FMT_SS_BLOCK ? sizes[k] - first : FMT_SS_BLOCK);
			fmt_ss2_embed(&prm, (uint8_t *)(t + first), sizes[k], first, n, 4, &d);
		}
		CHECK_EQ_U64(d.values, sizes[k]);
		CHECK(fmt_wm_dist_rms_rel(&d) <= prm.strength);
		CHECK(fmt_wm_dist_rms_rel(&d) > 0.9 * prm.strength);
		/* exactly the marked runs changed: one in each group (the small tensor is one run) */
		uint64_t changed = 0, outside = 0;
		for (uint64_t i = 0; i < sizes[k]; i++) {
			uint64_t run = fmt_ss2_marked_run(prm.sk, sizes[k], i / FMT_SS_BLOCK);
			int in = i / FMT_SS2_RUN == run;
			changed += t[i] != orig[t - v + i];
			outside += !in && t[i] != orig[t - v + i];
		}
		CHECK_EQ_U64(outside, 0);
		CHECK(changed == d.marked && changed > 0);
		fmt_ss2_acc_f32(prm.sk, &acc, t, sizes[k], 0, (size_t)sizes[k]);
		t += sizes[k];
	}
	static double score[FMT_SS_BYTES][256];
	fmt_ss2_scores(&acc, score);
	unsigned ties;
	CHECK(fmt_ss_decode(score, &ties) == payload && ties == 0);
	CHECK(fmt_ss_score_p(score, payload) == ldexp(1, -48));
}

/* The tensor's RMS change over its std, over the finite values, in long double (two passes). */
static long double rms_over_std(const float *before, const float *after, size_t n)
{
	long double sum = 0, fin = 0, q = 0, dd = 0;
	for (size_t i = 0; i < n; i++)
		if (isfinite(before[i])) {
			sum += before[i];
			fin += 1;
		}
	long double m = sum / fin;
	for (size_t i = 0; i < n; i++)
		if (isfinite(before[i])) {
			long double x = (long double)before[i] - m, d = (long double)after[i] - before[i];
			q += x * x;
			dd += d * d;
		}
	return q > 0 ? sqrtl(dd / q) : 0;
}

static void ss2_embed_tensor(const fmt_ss_params *prm, float *v, uint64_t n, fmt_wm_dist *d)
{
	for (uint64_t first = 0; first < n; first += FMT_SS_BLOCK)
		fmt_ss2_embed(prm, (uint8_t *)(v + first), n, first,
			      (size_t)(n - first < FMT_SS_BLOCK ? n - first : FMT_SS_BLOCK), 4, d);
}

/* The distortion bound where the old amplitude (strength x the marked run's std x sqrt(128))
 * broke it: each group's marked run holds an outlier 10^4 times the other values' spread, so
 * the run stands for a group far wider than the group is (11 % of the std there). Every tensor,
 * of any values: RMS change <= strength x std, measured in long double; a constant tensor does
 * not move. */
TEST(ss2_rms_change_within_strength_for_any_values)
{
	enum { N = 3 * 65536 + 777 };
	static float orig[N], v[N];
	fmt_ss_params prm = { .strength = 0.01, .version = 2 };
	for (int i = 0; i < 32; i++)
		prm.sk[i] = (uint8_t)(7 * i + 1);
	fmt_ss_codeword(0x0123456789abcdefull, prm.d);
	for (int kind = 0; kind < 5; kind++) {
		rng_state = 88172645463325252ull + (uint64_t)kind;
		for (size_t i = 0; i < N; i++) {
			double x = normal();
			switch (kind) {
			case 0: x *= 0.02; break;                                   /* normal */
			case 1: x = x / fabs(normal()); break;                       /* Cauchy-like */
			case 2: x = 1000 + 1e-3 * x; break;                          /* mean >> std */
			case 3: x = uniform01() < 0.99 ? 0 : x; break;               /* mostly zeros */
			default: x = 0.5; break;                                     /* constant */
			}
			orig[i] = v[i] = (float)x;
		}
		if (kind == 0)   /* an outlier in every marked run */
			for (uint64_t g = 0; g * FMT_SS_BLOCK < N; g++) {
				uint64_t run = fmt_ss2_marked_run(prm.sk, N, g);
				orig[run * FMT_SS2_RUN + 3] = v[run * FMT_SS2_RUN + 3] = 200;
			}
		fmt_wm_dist d = { 0 };
		ss2_embed_tensor(&prm, v, N, &d);
		long double r = rms_over_std(orig, v, N);
		CHECK(r <= 0.01L);
		/* all of the budget but its slack; at 1000 +- 1e-3 the changes are a few float32 steps,
		 * and rounding toward the original value keeps less of them */
		CHECK(r > (kind == 2 ? 0.0095L : kind < 4 ? 0.00999L : -1));
		if (kind == 4)
			CHECK(memcmp(orig, v, sizeof v) == 0 && d.marked == 0);
		CHECK(fabs(fmt_wm_dist_rms_rel(&d) - (double)r) <= 1e-6);
	}
}

/* AVX-512, AVX2 and the portable loops: the same bytes and the same report sums, on values of
 * every kind (NaN, infinities, subnormals, zeros of either sign, 1e30 whose float32 squares
 * overflow: no mark there), shifted means (the subtraction path) and tails shorter than a run. */
TEST(ss2_vector_loops_equal_portable_loops)
{
	enum { N = 2 * 65536 + 1000 };
	static float in[N], vec[N], port[N];
	static double in64[N / 4], vec64[N / 4], port64[N / 4];
	fmt_ss_params prm = { .strength = 0.03, .version = 2 };
	for (int i = 0; i < 32; i++)
		prm.sk[i] = (uint8_t)(5 * i + 3);
	fmt_ss_codeword(0x1122334455667788ull, prm.d);
	rng_state = 1234567ull;
	for (size_t i = 0; i < N; i++) {
		double x = normal();
		uint64_t pick = rng_state % 1000;
		in[i] = (float)(i < 65536 ? 0.02 * x : i < 131072 ? 7 + x : x);
		if (pick == 1)
			in[i] = NAN;
		else if (pick == 2)
			in[i] = (pick & 1) ? INFINITY : -INFINITY;
		else if (pick == 3)
			in[i] = 1e-40f;
		else if (pick == 4)
			in[i] = -0.0f;
		if (i >= 131072 && i < 131072 + 600)
			in[i] = 1e30f;
	}
	for (size_t i = 0; i < N / 4; i++)
		in64[i] = (double)in[i] * 1.5;
	for (int level = 2; level >= 1; level--) {
		fmt_wm_dist dv = { 0 }, dp = { 0 };
		memcpy(vec, in, sizeof in);
		memcpy(port, in, sizeof in);
		fmt_wm_use_simd(level);
		ss2_embed_tensor(&prm, vec, N, &dv);
		fmt_wm_use_simd(0);
		ss2_embed_tensor(&prm, port, N, &dp);
		fmt_wm_use_simd(2);
		CHECK(memcmp(vec, port, sizeof vec) == 0);
		CHECK(memcmp(&dv, &dp, sizeof dv) == 0);
		CHECK(dv.marked > 1000 && dv.marked < 3 * FMT_SS2_RUN);   /* not the overflowing group */
	}
	fmt_wm_dist a = { 0 }, b = { 0 };
	memcpy(vec64, in64, sizeof in64);
	memcpy(port64, in64, sizeof in64);
	fmt_ss2_embed(&prm, (uint8_t *)vec64, N / 4, 0, N / 4, 8, &a);
	fmt_wm_use_simd(0);
	fmt_ss2_embed(&prm, (uint8_t *)port64, N / 4, 0, N / 4, 8, &b);
	fmt_wm_use_simd(2);
	CHECK(memcmp(vec64, port64, sizeof vec64) == 0 && memcmp(&a, &b, sizeof a) == 0 && a.marked > 400);
}
