/* fmt/half.h: the spec vectors of specs/gguf.md §10.1/§10.2, exhaustive sweeps of all 2^32
 * float32 inputs against independent reference conversions written with double arithmetic,
 * and the F16C row paths against the portable ones. */
#include <fenv.h>
#include <math.h>
#include <pthread.h>
#include <unistd.h>
#include "fmt/half.h"
#include "unit.h"

static float f32_of(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static uint32_t bits_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

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
	float f = f32_of(u);
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
	float f = f32_of(u);
	if (isnan(f))
		return sign | 0x7FC0 | (uint16_t)((u >> 16) & 0x7F);
	double ax = fabs((double)f);
	int k = f32_exponent(u);
	if (k < -126)
		k = -126;
	double r = isinf(ax) ? ax : round_to_grid(ax, k - 7);
	float rf = (float)r;          /* exact, or 2^128 -> Inf */
	return sign | (uint16_t)(bits_of(rf) >> 16);
}

/* binary16 -> float32 by value (exact in double), NaN/Inf by bits. */
static uint32_t ref_f16_widen(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31;
	int exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
	if (exp == 31)
		return sign | 0x7F800000u | ((uint32_t)mant << 13);
	double v = exp ? (1024 + mant) * pow2(exp - 25) : mant * pow2(-24);
	return sign | bits_of((float)v);
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
		CHECK_EQ_U64(fmt_f32_to_f16(f32_of(vec[i][0])), vec[i][1]);
		CHECK_EQ_U64(ref_f16(vec[i][0]), vec[i][1]);
		src[i] = f32_of(vec[i][0]);
	}
	CHECK_EQ_U64(fmt_f32_to_f16(65504.0f), 0x7BFF);
	fmt_f32_to_f16_row(src, fast, n);
	fmt_f32_to_f16_row_portable(src, portable, n);
	for (size_t i = 0; i < n; i++) {
		CHECK_EQ_U64(fast[i], vec[i][1]);
		CHECK_EQ_U64(portable[i], vec[i][1]);
	}
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
		CHECK_EQ_U64(fmt_f32_to_bf16(f32_of(vec[i][0])), vec[i][1]);
		CHECK_EQ_U64(ref_bf16(vec[i][0]), vec[i][1]);
		src[i] = f32_of(vec[i][0]);
	}
	fmt_f32_to_bf16_row(src, out, n);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ_U64(out[i], vec[i][1]);
	CHECK_EQ_U64(bits_of(fmt_bf16_to_f32(0x3F81)), 0x3F810000);
	CHECK_EQ_U64(bits_of(fmt_bf16_to_f32(0xFF80)), 0xFF800000);
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
		CHECK_EQ_U64(fmt_f32_to_f16(f32_of(vec[i][0])), vec[i][1]);
	/* each special value at each position of a 19-element row of ordinary values */
	for (size_t v = 0; v < n; v++)
		for (size_t pos = 0; pos < 19; pos++) {
			float src[19];
			uint16_t fast[19], portable[19];
			for (size_t i = 0; i < 19; i++)
				src[i] = (float)i * 0.37f - 3.0f;
			src[pos] = f32_of(vec[v][0]);
			fmt_f32_to_f16_row(src, fast, 19);
			fmt_f32_to_f16_row_portable(src, portable, 19);
			CHECK_MEM(fast, portable, sizeof fast);
			CHECK_EQ_U64(fast[pos], vec[v][1]);
		}
	/* signalling f16 NaNs widen with their payload intact (no quiet bit added) */
	uint16_t h[9] = { 0x7C01, 0xFC01, 0x7D55, 0x7E00, 0x7FFF, 0x3C00, 0x0001, 0x8001, 0x7C00 };
	float wide[9];
	fmt_f16_to_f32_row(h, wide, 9);
	CHECK_EQ_U64(bits_of(wide[0]), 0x7F802000);
	CHECK_EQ_U64(bits_of(wide[1]), 0xFF802000);
	CHECK_EQ_U64(bits_of(wide[2]), 0x7FAAA000);
	CHECK_EQ_U64(bits_of(wide[3]), 0x7FC00000);
	CHECK_EQ_U64(bits_of(wide[4]), 0x7FFFE000);
	CHECK_EQ_U64(bits_of(wide[5]), 0x3F800000);
	CHECK_EQ_U64(bits_of(wide[6]), 0x33800000);
	CHECK_EQ_U64(bits_of(wide[7]), 0xB3800000);
	CHECK_EQ_U64(bits_of(wide[8]), 0x7F800000);
}

/* The F16C path must round with its own RNE immediate, not the current MXCSR mode. */
TEST(half_f16_row_ignores_rounding_mode)
{
	float src[16];
	uint16_t fast[16], portable[16];
	for (int i = 0; i < 16; i++)
		src[i] = f32_of(0x3F801000u + (uint32_t)i * 0x1000u);   /* ties and near-ties */
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
		uint32_t p = bits_of(portable[i]);
		bad_ref += p != ref_f16_widen(h[i]);
		bad_fast += p != bits_of(fast[i]);
		bad_scalar += p != bits_of(fmt_f16_to_f32(h[i]));
		if (!isnan(portable[i]))
			bad_round_trip += fmt_f32_to_f16(portable[i]) != h[i];
	}
	CHECK_EQ_U64(bad_ref, 0);
	CHECK_EQ_U64(bad_fast, 0);
	CHECK_EQ_U64(bad_scalar, 0);
	CHECK_EQ_U64(bad_round_trip, 0);
}

/* Exhaustive sweeps, split across threads. */
enum { SWEEP_CHUNK = 4096 };

typedef struct sweep {
	uint64_t begin, end;
	uint64_t bad_f16_ref, bad_f16_fast, bad_bf16_ref;
	uint32_t first_bad;           /* some failing input, for the message */
} sweep;

static void note_bad(sweep *s, uint64_t *counter, uint32_t input)
{
	if (*counter == 0 && s->bad_f16_ref + s->bad_f16_fast + s->bad_bf16_ref == 0)
		s->first_bad = input;
	(*counter)++;
}

static void *sweep_f16(void *arg)
{
	sweep *s = arg;
	int fast = fmt_have_f16c();
	float src[SWEEP_CHUNK];
	uint16_t portable[SWEEP_CHUNK], accel[SWEEP_CHUNK];
	for (uint64_t base = s->begin; base < s->end; base += SWEEP_CHUNK) {
		for (uint32_t i = 0; i < SWEEP_CHUNK; i++)
			src[i] = f32_of((uint32_t)(base + i));
		fmt_f32_to_f16_row_portable(src, portable, SWEEP_CHUNK);
		for (uint32_t i = 0; i < SWEEP_CHUNK; i++)
			if (portable[i] != ref_f16((uint32_t)(base + i)))
				note_bad(s, &s->bad_f16_ref, (uint32_t)(base + i));
		if (!fast)
			continue;
		fmt_f32_to_f16_row(src, accel, SWEEP_CHUNK);
		if (memcmp(portable, accel, sizeof accel) != 0)
			for (uint32_t i = 0; i < SWEEP_CHUNK; i++)
				if (portable[i] != accel[i])
					note_bad(s, &s->bad_f16_fast, (uint32_t)(base + i));
	}
	return NULL;
}

static void *sweep_bf16(void *arg)
{
	sweep *s = arg;
	float src[SWEEP_CHUNK];
	uint16_t out[SWEEP_CHUNK];
	for (uint64_t base = s->begin; base < s->end; base += SWEEP_CHUNK) {
		for (uint32_t i = 0; i < SWEEP_CHUNK; i++)
			src[i] = f32_of((uint32_t)(base + i));
		fmt_f32_to_bf16_row(src, out, SWEEP_CHUNK);
		for (uint32_t i = 0; i < SWEEP_CHUNK; i++)
			if (out[i] != ref_bf16((uint32_t)(base + i)))
				note_bad(s, &s->bad_bf16_ref, (uint32_t)(base + i));
	}
	return NULL;
}

#define SWEEP_MAX_THREADS 16

/* Run fn over all 2^32 inputs; returns the summed counters in *total. */
static void sweep_all(void *(*fn)(void *), sweep *total)
{
	sweep parts[SWEEP_MAX_THREADS];
	pthread_t threads[SWEEP_MAX_THREADS];
	int started[SWEEP_MAX_THREADS] = { 0 };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int n = cpus < 1 ? 1 : cpus > SWEEP_MAX_THREADS ? SWEEP_MAX_THREADS : (int)cpus;
	uint64_t all = 1ull << 32, chunks = all / SWEEP_CHUNK;
	memset(total, 0, sizeof *total);
	for (int t = 0; t < n; t++) {
		memset(&parts[t], 0, sizeof parts[t]);
		parts[t].begin = chunks * (uint64_t)t / (uint64_t)n * SWEEP_CHUNK;
		parts[t].end = chunks * (uint64_t)(t + 1) / (uint64_t)n * SWEEP_CHUNK;
		started[t] = t > 0 && pthread_create(&threads[t], NULL, fn, &parts[t]) == 0;
	}
	fn(&parts[0]);
	for (int t = 1; t < n; t++) {
		if (started[t])
			pthread_join(threads[t], NULL);
		else
			fn(&parts[t]);  /* no thread: do its share here */
	}
	for (int t = 0; t < n; t++) {
		sweep *p = &parts[t];
		if (p->bad_f16_ref + p->bad_f16_fast + p->bad_bf16_ref && !total->first_bad)
			total->first_bad = p->first_bad;
		total->bad_f16_ref += p->bad_f16_ref;
		total->bad_f16_fast += p->bad_f16_fast;
		total->bad_bf16_ref += p->bad_bf16_ref;
	}
}

TEST(half_f16_all_2_32_inputs)
{
	sweep total;
	sweep_all(sweep_f16, &total);
	if (total.bad_f16_ref + total.bad_f16_fast)
		printf("  f16 sweep: first failing input 0x%08X\n", total.first_bad);
	CHECK_EQ_U64(total.bad_f16_ref, 0);
	CHECK_EQ_U64(total.bad_f16_fast, 0);
	if (!fmt_have_f16c())
		printf("  note: no F16C on this CPU; only the portable f16 path was swept\n");
}

TEST(half_bf16_all_2_32_inputs)
{
	sweep total;
	sweep_all(sweep_bf16, &total);
	if (total.bad_bf16_ref)
		printf("  bf16 sweep: first failing input 0x%08X\n", total.first_bad);
	CHECK_EQ_U64(total.bad_bf16_ref, 0);
}
