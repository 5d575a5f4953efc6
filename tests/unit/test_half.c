/* fmt/half.h: the spec vectors of specs/gguf.md §10.1/§10.2, exhaustive sweeps of all 2^32
 * float32 inputs against independent reference conversions written with double arithmetic,
 * and the F16C row paths against the portable ones. */
#include <fenv.h>
#include <math.h>
#include <pthread.h>
#include <unistd.h>
#include "fmt/half.h"
#include "unit.h"

/* 2^i for i in [-POW2_BIAS, POW2_BIAS) */
#define POW2_BIAS 200
static double pow2_table[2 * POW2_BIAS];
__attribute__((constructor)) static void pow2_init(void)
{
	for (int i = 0; i < 2 * POW2_BIAS; i++)
		pow2_table[i] = ldexp(1.0, i - POW2_BIAS);
}

static double pow2(int i)
{
	return pow2_table[i + POW2_BIAS];
}

/* Round |x| to a multiple of 2^m by letting the FPU do it: adding 2^(m+52) leaves no bits
 * below 2^m in a double, and the default mode rounds that addition to nearest, ties to even. */
static double round_to_grid(double ax, int m)
{
	double c = pow2(m + 52);
	return (ax + c) - c;
}

/* Binary exponent of a finite float32 from its bits (-127 for zeros and subnormals). */
static int f32_exponent(uint32_t u)
{
	return (int)((u >> 23) & 0xFF) - 127;
}

/* float32 -> binary16 by the rule of §10.1, written with double arithmetic. */
static uint16_t ref_f16(uint32_t u)
{
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
	float f = fmt_bits_f32(u);
	if (isnan(f))
		return sign | 0x7E00;
	double ax = fabs((double)f);
	if (ax >= 65520.0)
		return sign | 0x7C00;
	int k = f32_exponent(u);
	if (k < -14)
		k = -14;                 /* f16 subnormals live on the 2^-24 grid */
	int m = k - 10;
	double r = round_to_grid(ax, m);
	/* r / 2^m is an integer in [0, 2048]; 2048 carries into the next exponent */
	double steps = r * pow2(-m);
	return (uint16_t)(sign | (uint16_t)((k + 15) * 1024 + (int)steps - 1024));
}

/* float32 -> bfloat16 by the rule of §10.2, written with double arithmetic. */
static uint16_t ref_bf16(uint32_t u)
{
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
	float f = fmt_bits_f32(u);
	if (isnan(f))
		return sign | 0x7FC0 | (uint16_t)((u >> 16) & 0x7F);
	double ax = fabs((double)f);
	int k = f32_exponent(u);
	if (k < -126)
		k = -126;
	double r = isinf(ax) ? ax : round_to_grid(ax, k - 7);
	float rf = (float)r;          /* exact, or 2^128 -> Inf */
	return sign | (uint16_t)(fmt_f32_bits(rf) >> 16);
}

/* binary16 -> float32 by value (exact in double), NaN/Inf by bits. */
static uint32_t ref_f16_widen(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31;
	int exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
	if (exp == 31)
		return sign | 0x7F800000u | ((uint32_t)mant << 13);
	double v = exp ? (1024 + mant) * pow2(exp - 25) : mant * pow2(-24);
	return sign | fmt_f32_bits((float)v);
}

TEST(half_f16_vectors)
{
	static const uint32_t vec[][2] = {
		{ 0x3F800000, 0x3C00 }, { 0x477FE000, 0x7BFF }, { 0x477FEFFF, 0x7BFF },
		{ 0x477FF000, 0x7C00 }, { 0x7F7FFFFF, 0x7C00 }, { 0xFF800000, 0xFC00 },
		{ 0x7FC00000, 0x7E00 }, { 0xFFC00000, 0xFE00 }, { 0x7FA00001, 0x7E00 },
		{ 0x33000000, 0x0000 }, { 0x33000001, 0x0001 }, { 0x33800000, 0x0001 },
		{ 0x38800000, 0x0400 }, { 0x387FC000, 0x03FF }, { 0x3F801000, 0x3C00 },
		{ 0x3F803000, 0x3C02 }, { 0x3DCCCCCD, 0x2E66 }, { 0x80000000, 0x8000 },
	};
	size_t n = sizeof vec / sizeof vec[0];
	float src[32];
	uint16_t fast[32], portable[32];
	for (size_t i = 0; i < n; i++) {
		CHECK_EQ_U64(fmt_f32_to_f16(fmt_bits_f32(vec[i][0])), vec[i][1]);
		CHECK_EQ_U64(ref_f16(vec[i][0]), vec[i][1]);
		src[i] = fmt_bits_f32(vec[i][0]);
	}
	CHECK_EQ_U64(fmt_f32_to_f16(65504.0f), 0x7BFF);
	fmt_f32_to_f16_row(src, fast, n);
	fmt_f32_to_f16_row_portable(src, portable, n);
	for (size_t i = 0; i < n; i++) {
		CHECK_EQ_U64(fast[i], vec[i][1]);
		CHECK_EQ_U64(portable[i], vec[i][1]);
	}
}

/* float64 -> binary16 by the rule of §10.1, rounded once from the double: ref_f16's grid
 * rounding with the double's own exponent. */
static uint16_t ref_f16_of_double(double x)
{
	uint16_t sign = signbit(x) ? 0x8000 : 0;
	if (isnan(x))
		return sign | 0x7E00;
	double ax = fabs(x);
	if (ax >= 65520.0)
		return sign | 0x7C00;
	if (ax == 0)
		return sign;
	int k = ilogb(ax);
	if (k < -14)
		k = -14;
	int m = k - 10;
	double steps = round_to_grid(ax, m) * pow2(-m);
	return (uint16_t)(sign | (uint16_t)((k + 15) * 1024 + (int)steps - 1024));
}

/* fmt_f64_to_f16 on the vectors where a float32 step rounds differently, and at every half, at
 * every midpoint between two neighbouring halves and one double either side of it, and on
 * doubles of every exponent, against ref_f16_of_double. */
TEST(half_f64_to_f16)
{
	static const struct { double d; uint16_t h; } vec[] = {
		{ 65504.0, 0x7BFF }, { 65519.999, 0x7BFF }, { 65520.0, 0x7C00 }, { -65520.0, 0xFC00 },
		{ 1.0 + 0x1p-11 + 0x1p-40, 0x3C01 },  /* (float) gives 1 + 2^-11, a tie: 0x3C00 */
		{ 1.0 + 0x1p-11, 0x3C00 }, { 0x1p-25, 0x0000 }, { 0x1p-25 + 0x1p-60, 0x0001 },
		{ 3 * 0x1p-25, 0x0002 }, { 5.96e-8, 0x0001 }, { 2.98e-8, 0x0000 }, { 0x1p-14, 0x0400 },
		{ -0.0, 0x8000 }, { 4.9e-324, 0x0000 }, { INFINITY, 0x7C00 }, { -NAN, 0xFE00 },
		{ 1e300, 0x7C00 }, { 0.1, 0x2E66 },
	};
	for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++) {
		CHECK_EQ_U64(fmt_f64_to_f16(vec[i].d), vec[i].h);
		CHECK_EQ_U64(ref_f16_of_double(vec[i].d), vec[i].h);
	}
	CHECK(fmt_f32_to_f16((float)(1.0 + 0x1p-11 + 0x1p-40)) == 0x3C00);
	uint64_t bad = 0;
	for (uint32_t h = 0; h < 0x7C00; h++) {
		double v = fmt_f16_to_f32((uint16_t)h);
		double next = h == 0x7BFF ? 65520.0 : fmt_f16_to_f32((uint16_t)(h + 1));
		double mid = (v + next) / 2;
		double xs[] = { v, mid, nextafter(mid, 0), nextafter(mid, INFINITY) };
		for (size_t j = 0; j < 4; j++)
			for (int neg = 0; neg < 2; neg++) {
				double x = neg ? -xs[j] : xs[j];
				bad += fmt_f64_to_f16(x) != ref_f16_of_double(x);
			}
	}
	uint64_t state = 0x9E3779B97F4A7C15u;
	for (int i = 0; i < 4000000; i++) {
		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		/* exponents 2^-30 ... 2^17 mostly, every exponent sometimes */
		uint64_t u = i % 8 ? (state & 0x800FFFFFFFFFFFFFu) | ((uint64_t)(993 + (state >> 52) % 48) << 52)
				   : state;
		bad += fmt_f64_to_f16(fmt_bits_f64(u)) != ref_f16_of_double(fmt_bits_f64(u));
	}
	CHECK_EQ_U64(bad, 0);
}

TEST(half_bf16_vectors)
{
	static const uint32_t vec[][2] = {
		{ 0x3F808000, 0x3F80 }, { 0x3F818000, 0x3F82 }, { 0x3F808001, 0x3F81 },
		{ 0x7F7FFFFF, 0x7F80 }, { 0x7F7F7FFF, 0x7F7F }, { 0x7F800001, 0x7FC0 },
		{ 0x7FA00001, 0x7FE0 }, { 0x00000001, 0x0000 }, { 0x80008000, 0x8000 },
	};
	size_t n = sizeof vec / sizeof vec[0];
	float src[16];
	uint16_t out[16];
	for (size_t i = 0; i < n; i++) {
		CHECK_EQ_U64(fmt_f32_to_bf16(fmt_bits_f32(vec[i][0])), vec[i][1]);
		CHECK_EQ_U64(ref_bf16(vec[i][0]), vec[i][1]);
		src[i] = fmt_bits_f32(vec[i][0]);
	}
	fmt_f32_to_bf16_row(src, out, n);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ_U64(out[i], vec[i][1]);
	CHECK_EQ_U64(fmt_f32_bits(fmt_bf16_to_f32(0x3F81)), 0x3F810000);
	CHECK_EQ_U64(fmt_f32_bits(fmt_bf16_to_f32(0xFF80)), 0xFF800000);
}

/* f32 subnormals flush to ±0; NaN payloads (quiet or signalling, either sign) become the
 * canonical 0x7E00|sign, in every lane position of the row paths and in their tails. */
TEST(half_f32_subnormal_and_nan_payloads)
{
	static const uint32_t vec[][2] = {
		{ 0x00000001, 0x0000 }, { 0x80000001, 0x8000 }, { 0x007FFFFF, 0x0000 },
		{ 0x807FFFFF, 0x8000 }, { 0x00400000, 0x0000 }, { 0x7F800001, 0x7E00 },
		{ 0xFF800001, 0xFE00 }, { 0x7FBFFFFF, 0x7E00 }, { 0x7FFFFFFF, 0x7E00 },
		{ 0xFFFFFFFF, 0xFE00 }, { 0x7FC02000, 0x7E00 }, { 0xFFC0E000, 0xFE00 },
		{ 0x7F802000, 0x7E00 }, { 0x00800000, 0x0000 }, { 0x33000000, 0x0000 },
	};
	size_t n = sizeof vec / sizeof vec[0];
	for (size_t i = 0; i < n; i++)
		CHECK_EQ_U64(fmt_f32_to_f16(fmt_bits_f32(vec[i][0])), vec[i][1]);
	/* each special value at each position of a 19-element row of ordinary values */
	for (size_t v = 0; v < n; v++)
		for (size_t pos = 0; pos < 19; pos++) {
			float src[19];
			uint16_t fast[19], portable[19];
			for (size_t i = 0; i < 19; i++)
				src[i] = (float)i * 0.37f - 3.0f;
			src[pos] = fmt_bits_f32(vec[v][0]);
			fmt_f32_to_f16_row(src, fast, 19);
			fmt_f32_to_f16_row_portable(src, portable, 19);
			CHECK_MEM(fast, portable, sizeof fast);
			CHECK_EQ_U64(fast[pos], vec[v][1]);
		}
	/* signalling f16 NaNs widen with their payload intact (no quiet bit added) */
	uint16_t h[9] = { 0x7C01, 0xFC01, 0x7D55, 0x7E00, 0x7FFF, 0x3C00, 0x0001, 0x8001, 0x7C00 };
	float wide[9];
	fmt_f16_to_f32_row(h, wide, 9);
	CHECK_EQ_U64(fmt_f32_bits(wide[0]), 0x7F802000);
	CHECK_EQ_U64(fmt_f32_bits(wide[1]), 0xFF802000);
	CHECK_EQ_U64(fmt_f32_bits(wide[2]), 0x7FAAA000);
	CHECK_EQ_U64(fmt_f32_bits(wide[3]), 0x7FC00000);
	CHECK_EQ_U64(fmt_f32_bits(wide[4]), 0x7FFFE000);
	CHECK_EQ_U64(fmt_f32_bits(wide[5]), 0x3F800000);
	CHECK_EQ_U64(fmt_f32_bits(wide[6]), 0x33800000);
	CHECK_EQ_U64(fmt_f32_bits(wide[7]), 0xB3800000);
	CHECK_EQ_U64(fmt_f32_bits(wide[8]), 0x7F800000);
}

/* The F16C path must round with its own RNE immediate, not the current MXCSR mode. */
TEST(half_f16_row_ignores_rounding_mode)
{
	float src[16];
	uint16_t fast[16], portable[16];
	for (int i = 0; i < 16; i++)
		src[i] = fmt_bits_f32(0x3F801000u + (uint32_t)i * 0x1000u);   /* ties and near-ties */
	fmt_f32_to_f16_row_portable(src, portable, 16);
	int modes[] = { FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO };
	for (size_t m = 0; m < 3; m++) {
		fesetround(modes[m]);
		fmt_f32_to_f16_row(src, fast, 16);
		fesetround(FE_TONEAREST);
		CHECK_MEM(fast, portable, sizeof fast);
	}
}

TEST(half_f16_widening_all_65536)
{
	static uint16_t h[65536];
	static float portable[65536], fast[65536];
	for (uint32_t i = 0; i < 65536; i++)
		h[i] = (uint16_t)i;
	fmt_f16_to_f32_row_portable(h, portable, 65536);
	fmt_f16_to_f32_row(h, fast, 65536);
	uint32_t bad_ref = 0, bad_fast = 0, bad_round_trip = 0, bad_scalar = 0;
	for (uint32_t i = 0; i < 65536; i++) {
		uint32_t p = fmt_f32_bits(portable[i]);
		bad_ref += p != ref_f16_widen(h[i]);
		bad_fast += p != fmt_f32_bits(fast[i]);
		bad_scalar += p != fmt_f32_bits(fmt_f16_to_f32(h[i]));
		if (!isnan(portable[i]))
			bad_round_trip += fmt_f32_to_f16(portable[i]) != h[i];
	}
	CHECK_EQ_U64(bad_ref, 0);
	CHECK_EQ_U64(bad_fast, 0);
	CHECK_EQ_U64(bad_scalar, 0);
	CHECK_EQ_U64(bad_round_trip, 0);
}

TEST(half_bf16_widening_all_65536)
{
	static uint16_t h[65536 + 3];
	static float wide[65536 + 3];
	for (uint32_t i = 0; i < 65536 + 3; i++)
		h[i] = (uint16_t)i;
	fmt_bf16_to_f32_row(h, wide, 65536 + 3);
	uint32_t bad = 0;
	for (uint32_t i = 0; i < 65536 + 3; i++) {
		bad += fmt_f32_bits(wide[i]) != (uint32_t)h[i] << 16;
		bad += fmt_f32_bits(fmt_bf16_to_f32(h[i])) != (uint32_t)h[i] << 16;
	}
	CHECK_EQ_U64(bad, 0);
}

/* Exhaustive sweeps. The 2^32 inputs are taken as 512 blocks of one sign and one exponent
 * field (2^23 inputs each), split across threads. Inside a block the reference is a tight,
 * branch-free loop (ref_f16/ref_bf16 with the per-exponent constants hoisted); the spec
 * vectors above check that hoisting against the scalar references. */
enum { SWEEP_CHUNK = 4096, SWEEP_BLOCKS = 512, BLOCK_INPUTS = 1 << 23 };

/* Sanitizer builds (make asan) run about 10x slower: there every block is still visited but
 * only one chunk in SWEEP_STRIDE. The normal build sweeps every input. */
#ifdef UNIT_SANITIZED
#define SWEEP_STRIDE 64u
#else
#define SWEEP_STRIDE 1u
#endif

typedef struct sweep {
	int first_block, end_block;
	int f16;                      /* 1: f32->f16 (and F16C), 0: f32->bf16 */
	uint64_t bad_ref, bad_fast;
	uint32_t first_bad;           /* some failing input, for the message */
} sweep;

static void count_bad(sweep *s, uint64_t *counter, const uint16_t *got, const uint16_t *want,
		      uint32_t base)
{
	if (memcmp(got, want, SWEEP_CHUNK * sizeof *got) == 0)
		return;
	for (uint32_t i = 0; i < SWEEP_CHUNK; i++)
		if (got[i] != want[i]) {
			if (s->bad_ref + s->bad_fast == 0)
				s->first_bad = base + i;
			(*counter)++;
		}
}

/* The reference loops below vectorize: on a CPU with wider vectors than SSE2 they take them
 * (the same double arithmetic, a quarter of the sweeps' time). */
#if defined(__x86_64__) && defined(__GNUC__)
#define SWEEP_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SWEEP_CLONES
#endif

/* Expected f16 for a chunk of one finite-exponent block: the ref_f16 arithmetic. */
SWEEP_CLONES static void ref_f16_chunk(const float *src, uint16_t *want, uint32_t base)
{
	uint16_t sign = (uint16_t)((base >> 16) & 0x8000);
	int k = f32_exponent(base);
	if (k > 15) {                         /* >= 2^16: Inf */
		for (uint32_t i = 0; i < SWEEP_CHUNK; i++)
			want[i] = sign | 0x7C00;
		return;
	}
	if (k < -14)
		k = -14;
	int m = k - 10;
	double c = pow2(m + 52), scale = pow2(-m);
	int offset = (k + 15) * 1024 - 1024;
	/* at k = 15 the values >= 65520 round to 2^16, i.e. steps 2048: 0x7C00, as the rule says */
	for (uint32_t i = 0; i < SWEEP_CHUNK; i++) {
		double ax = fabs((double)src[i]);
		double steps = ((ax + c) - c) * scale;
		want[i] = (uint16_t)(sign | (uint16_t)(offset + (int)steps));
	}
}

SWEEP_CLONES static void ref_bf16_chunk(const float *src, uint16_t *want, uint32_t base)
{
	uint16_t sign = (uint16_t)((base >> 16) & 0x8000);
	int k = f32_exponent(base);
	if (k < -126)
		k = -126;
	double c = pow2(k - 7 + 52);
	for (uint32_t i = 0; i < SWEEP_CHUNK; i++) {
		double ax = fabs((double)src[i]);
		float rounded = (float)((ax + c) - c);   /* exact, or 2^128 -> Inf */
		want[i] = sign | (uint16_t)(fmt_f32_bits(rounded) >> 16);
	}
}

/* Exponent field 255 (Inf and NaN): the scalar references. */
static void ref_special_chunk(int f16, uint16_t *want, uint32_t base)
{
	for (uint32_t i = 0; i < SWEEP_CHUNK; i++)
		want[i] = f16 ? ref_f16(base + i) : ref_bf16(base + i);
}

static void *sweep_blocks(void *arg)
{
	sweep *s = arg;
	int fast = s->f16 && fmt_have_f16c();
	float src[SWEEP_CHUNK];
	uint16_t want[SWEEP_CHUNK], got[SWEEP_CHUNK];
	for (int b = s->first_block; b < s->end_block; b++) {
		uint32_t block_base = (uint32_t)b << 23;
		int special = (b & 0xFF) == 0xFF;
		for (uint32_t off = 0; off < BLOCK_INPUTS; off += SWEEP_CHUNK * SWEEP_STRIDE) {
			uint32_t base = block_base + off;
			for (uint32_t i = 0; i < SWEEP_CHUNK; i++)
				src[i] = fmt_bits_f32(base + i);
			if (special)
				ref_special_chunk(s->f16, want, base);
			else if (s->f16)
				ref_f16_chunk(src, want, base);
			else
				ref_bf16_chunk(src, want, base);
			if (s->f16)
				fmt_f32_to_f16_row_portable(src, got, SWEEP_CHUNK);
			else
				fmt_f32_to_bf16_row(src, got, SWEEP_CHUNK);
			count_bad(s, &s->bad_ref, got, want, base);
			if (!s->f16 && (off / SWEEP_CHUNK) % 64 == 0) {
				/* the row is SIMD; sample the scalar function (row tails) too */
				for (uint32_t i = 0; i < SWEEP_CHUNK; i++)
					got[i] = fmt_f32_to_bf16(src[i]);
				count_bad(s, &s->bad_ref, got, want, base);
			}
			if (fast) {
				fmt_f32_to_f16_row(src, got, SWEEP_CHUNK);
				count_bad(s, &s->bad_fast, got, want, base);
			}
		}
	}
	return NULL;
}

#define SWEEP_MAX_THREADS 16

/* Run the sweep over all 2^32 inputs; the summed counters land in *total. */
static void sweep_all(int f16, sweep *total)
{
	sweep parts[SWEEP_MAX_THREADS];
	pthread_t threads[SWEEP_MAX_THREADS];
	int started[SWEEP_MAX_THREADS] = { 0 };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int n = cpus < 1 ? 1 : cpus > SWEEP_MAX_THREADS ? SWEEP_MAX_THREADS : (int)cpus;
	memset(total, 0, sizeof *total);
	for (int t = 0; t < n; t++) {
		memset(&parts[t], 0, sizeof parts[t]);
		parts[t].f16 = f16;
		parts[t].first_block = SWEEP_BLOCKS * t / n;
		parts[t].end_block = SWEEP_BLOCKS * (t + 1) / n;
		started[t] = t > 0 && pthread_create(&threads[t], NULL, sweep_blocks, &parts[t]) == 0;
	}
	sweep_blocks(&parts[0]);
	for (int t = 1; t < n; t++) {
		if (started[t])
			pthread_join(threads[t], NULL);
		else
			sweep_blocks(&parts[t]);  /* no thread: do its share here */
	}
	for (int t = 0; t < n; t++) {
		sweep *p = &parts[t];
		if (p->bad_ref + p->bad_fast && total->bad_ref + total->bad_fast == 0)
			total->first_bad = p->first_bad;
		total->bad_ref += p->bad_ref;
		total->bad_fast += p->bad_fast;
	}
}

/* f32->f16 portable path vs the double-arithmetic rule, and the F16C row path vs the same. */
TEST(half_f16_all_2_32_inputs)
{
	sweep total;
	sweep_all(1, &total);
	if (total.bad_ref + total.bad_fast)
		printf("  f16 sweep: first failing input 0x%08X\n", total.first_bad);
	CHECK_EQ_U64(total.bad_ref, 0);
	CHECK_EQ_U64(total.bad_fast, 0);
	if (SWEEP_STRIDE > 1)
		printf("  note: sanitizer build; the f16/bf16 sweeps check 1 input in %u\n", SWEEP_STRIDE);
	if (!fmt_have_f16c())
		printf("  note: no F16C on this CPU; only the portable f16 path was swept\n");
}

TEST(half_bf16_all_2_32_inputs)
{
	sweep total;
	sweep_all(0, &total);
	if (total.bad_ref)
		printf("  bf16 sweep: first failing input 0x%08X\n", total.first_bad);
	CHECK_EQ_U64(total.bad_ref, 0);
}
