/* float32 <-> binary16 / bfloat16 exactly as specs/gguf.md §10. The portable functions use
 * integer operations only (no dependence on the FPU rounding mode); the f16 rows use F16C when
 * the CPU has it and the bf16 rows SSE2, both giving the portable bits (NaN included). */
#include <stdatomic.h>
#include <string.h>
#include "fmt/half.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

/* Round the low `shift` bits of v away, to nearest, ties to even. */
static uint32_t shift_rne(uint32_t v, unsigned shift)
{
	uint32_t kept = v >> shift;
	uint32_t rest = v & ((1u << shift) - 1);
	uint32_t half = 1u << (shift - 1);
	/* branch-free: the rounding direction is data-dependent and mispredicts badly */
	return kept + ((rest > half) | ((rest == half) & kept & 1));
}

/* Inlined into the row loop: a call per value cost more than the conversion. */
static inline uint16_t f32_to_f16(float f)
{
	uint32_t u = fmt_f32_bits(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
	uint32_t mag = u & 0x7FFFFFFF;
	if (mag > 0x7F800000)
		return sign | 0x7E00;                 /* any NaN: canonical quiet NaN */
	if (mag >= 0x477FF000)
		return sign | 0x7C00;                 /* >= 65520 rounds to Inf; Inf stays Inf */
	if (mag >= 0x38800000) {
		/* normal result: rebias the exponent (127 -> 15) and round 23 -> 10 mantissa bits;
		 * a carry out of the mantissa correctly bumps the exponent */
		return sign | (uint16_t)shift_rne(mag - (112u << 23), 13);
	}
	if (mag < 0x00800000)
		return sign;                          /* f32 zero or subnormal: ±0 */
	/* f16 subnormal: value * 2^24 = significand * 2^(exp - 126), rounded to an integer */
	uint32_t exp = mag >> 23;
	uint32_t significand = (mag & 0x7FFFFF) | 0x800000;
	unsigned shift = 126 - exp;                   /* >= 14 here */
	if (shift > 24)
		return sign;                          /* below 2^-25: rounds to ±0 */
	return sign | (uint16_t)shift_rne(significand, shift);
}

uint16_t fmt_f32_to_f16(float f)
{
	return f32_to_f16(f);
}

/* shift_rne for a double's bits (shift in [42, 54]). */
static uint64_t shift_rne64(uint64_t v, unsigned shift)
{
	uint64_t kept = v >> shift;
	uint64_t rest = v & ((UINT64_C(1) << shift) - 1);
	uint64_t half = UINT64_C(1) << (shift - 1);
	return kept + ((rest > half) | ((rest == half) & kept & 1));
}

/* The rule of f32_to_f16 on the 52 mantissa bits of a double: one rounding, where going
 * through float32 would round twice (1 + 2^-11 + 2^-40 is 1 as a float, then 1 as a half by
 * ties-to-even; it is 0x3C01 rounded once). */
uint16_t fmt_f64_to_f16(double d)
{
	uint64_t u = fmt_f64_bits(d);
	uint16_t sign = (uint16_t)((u >> 48) & 0x8000);
	uint64_t mag = u & UINT64_C(0x7FFFFFFFFFFFFFFF);
	if (mag > UINT64_C(0x7FF0000000000000))
		return sign | 0x7E00;                 /* any NaN: canonical quiet NaN */
	if (mag >= UINT64_C(0x40EFFE0000000000))
		return sign | 0x7C00;                 /* >= 65520 rounds to Inf; Inf stays Inf */
	if (mag >= UINT64_C(0x3F10000000000000))  /* >= 2^-14: normal, exponent 1023 -> 15 */
		return sign | (uint16_t)shift_rne64(mag - (UINT64_C(1008) << 52), 42);
	/* f16 subnormal: value * 2^24 = significand * 2^(exp - 1051), rounded to an integer */
	uint64_t exp = mag >> 52;
	unsigned shift = (unsigned)(1051 - exp);      /* >= 43 here */
	if (exp == 0 || shift > 54)
		return sign;                          /* below 2^-25 (or a double subnormal): ±0 */
	uint64_t significand = (mag & UINT64_C(0xFFFFFFFFFFFFF)) | (UINT64_C(1) << 52);
	return sign | (uint16_t)shift_rne64(significand, shift);
}

float fmt_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1F;
	uint32_t mant = h & 0x3FF;
	if (exp == 0x1F)                              /* Inf or NaN: payload kept bit for bit */
		return fmt_bits_f32(sign | 0x7F800000 | (mant << 13));
	if (exp != 0)
		return fmt_bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
	if (mant == 0)
		return fmt_bits_f32(sign);
	/* subnormal: mant * 2^-24, exact in float */
	float mag = (float)mant * 0x1p-24f;
	return fmt_bits_f32(sign | fmt_f32_bits(mag));
}

uint16_t fmt_f32_to_bf16(float f)
{
	uint32_t u = fmt_f32_bits(f);
	uint32_t nan = (u >> 16) | 0x0040;
	uint32_t rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16;
	/* a select, not a branch, so that row loops vectorize */
	return (uint16_t)((u & 0x7FFFFFFF) > 0x7F800000 ? nan : rounded);
}

float fmt_bf16_to_f32(uint16_t h)
{
	return fmt_bits_f32((uint32_t)h << 16);
}

void fmt_f32_to_f16_row_portable(const float *src, uint16_t *dst, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = f32_to_f16(src[i]);
}

void fmt_f16_to_f32_row_portable(const uint16_t *src, float *dst, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = fmt_f16_to_f32(src[i]);
}

#if defined(__x86_64__)

/* SSE2 (every x86-64) does the bf16 rule 8 lanes at a time; gcc -O2 leaves the scalar loop
 * unvectorized. The same integer operations as fmt_f32_to_bf16, so the same bits. */
static __m128i f32_to_bf16_lanes(__m128i u)
{
	const __m128i magnitude = _mm_set1_epi32(0x7FFFFFFF), inf = _mm_set1_epi32(0x7F800000);
	__m128i high = _mm_srli_epi32(u, 16);
	__m128i is_nan = _mm_cmpgt_epi32(_mm_and_si128(u, magnitude), inf);
	__m128i nan = _mm_or_si128(high, _mm_set1_epi32(0x0040));
	__m128i lsb = _mm_and_si128(high, _mm_set1_epi32(1));
	__m128i rounded = _mm_srli_epi32(_mm_add_epi32(_mm_add_epi32(u, _mm_set1_epi32(0x7FFF)), lsb), 16);
	__m128i r = _mm_or_si128(_mm_and_si128(is_nan, nan), _mm_andnot_si128(is_nan, rounded));
	/* sign-extend the low 16 bits so the signed-saturating pack keeps them unchanged */
	return _mm_srai_epi32(_mm_slli_epi32(r, 16), 16);
}

void fmt_f32_to_bf16_row(const float *src, uint16_t *dst, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m128i lo = f32_to_bf16_lanes(_mm_castps_si128(_mm_loadu_ps(src + i)));
		__m128i hi = f32_to_bf16_lanes(_mm_castps_si128(_mm_loadu_ps(src + i + 4)));
		_mm_storeu_si128((__m128i *)(void *)(dst + i), _mm_packs_epi32(lo, hi));
	}
	for (; i < n; i++)
		dst[i] = fmt_f32_to_bf16(src[i]);
}

void fmt_bf16_to_f32_row(const uint16_t *src, float *dst, size_t n)
{
	const __m128i zero = _mm_setzero_si128();
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m128i h = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
		/* interleaving zeros below each value is the shift left by 16 */
		_mm_storeu_si128((__m128i *)(void *)(dst + i), _mm_unpacklo_epi16(zero, h));
		_mm_storeu_si128((__m128i *)(void *)(dst + i + 4), _mm_unpackhi_epi16(zero, h));
	}
	for (; i < n; i++)
		dst[i] = fmt_bf16_to_f32(src[i]);
}

#else

void fmt_f32_to_bf16_row(const float *src, uint16_t *dst, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = fmt_f32_to_bf16(src[i]);
}

void fmt_bf16_to_f32_row(const uint16_t *src, float *dst, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = fmt_bf16_to_f32(src[i]);
}

#endif

#if defined(__x86_64__)

/* clang 14 has no "f16c" for __builtin_cpu_supports, so read the CPUID bit ourselves;
 * "avx" also tells that the OS saves the YMM state. */
static int detect_f16c(void)
{
	unsigned eax, ebx, ecx, edx;
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx"))
		return 0;
	if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
		return 0;
	return (ecx & bit_F16C) != 0;
}

/* CPUID can trap to the hypervisor in a VM, so ask once: -1 until known. Threads racing on
 * the first call all store the same answer. */
static atomic_int f16c_cached = -1;

int fmt_have_f16c(void)
{
	int have = atomic_load_explicit(&f16c_cached, memory_order_relaxed);
	if (have < 0) {
		have = detect_f16c();
		atomic_store_explicit(&f16c_cached, have, memory_order_relaxed);
	}
	return have;
}

/* VCVTPS2PH keeps (truncated) NaN payloads, so a group of 8 holding a NaN takes the portable
 * path. Everything else (rounding with the explicit RNE immediate, overflow to Inf, f32
 * subnormals to ±0) matches the rule; the exhaustive unit test checks all 2^32 inputs. */
__attribute__((target("avx,f16c")))
static void f32_to_f16_row_f16c(const float *src, uint16_t *dst, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_loadu_ps(src + i);
		__m256 nan_lanes = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
		if (_mm256_movemask_ps(nan_lanes) != 0) {
			fmt_f32_to_f16_row_portable(src + i, dst + i, 8);
			continue;
		}
		__m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		_mm_storeu_si128((__m128i *)(void *)(dst + i), h);
	}
	fmt_f32_to_f16_row_portable(src + i, dst + i, n - i);
}

/* VCVTPH2PS sets the quiet bit of a signalling NaN, while the portable widening keeps every
 * payload bit; groups holding a NaN take the portable path. */
__attribute__((target("avx,f16c")))
static void f16_to_f32_row_f16c(const uint16_t *src, float *dst, size_t n)
{
	const __m128i magnitude = _mm_set1_epi16(0x7FFF);
	const __m128i inf = _mm_set1_epi16(0x7C00);
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m128i h = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
		__m128i nan_lanes = _mm_cmpgt_epi16(_mm_and_si128(h, magnitude), inf);
		if (_mm_movemask_epi8(nan_lanes) != 0) {
			fmt_f16_to_f32_row_portable(src + i, dst + i, 8);
			continue;
		}
		_mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
	}
	fmt_f16_to_f32_row_portable(src + i, dst + i, n - i);
}

void fmt_f32_to_f16_row(const float *src, uint16_t *dst, size_t n)
{
	if (fmt_have_f16c())
		f32_to_f16_row_f16c(src, dst, n);
	else
		fmt_f32_to_f16_row_portable(src, dst, n);
}

void fmt_f16_to_f32_row(const uint16_t *src, float *dst, size_t n)
{
	if (fmt_have_f16c())
		f16_to_f32_row_f16c(src, dst, n);
	else
		fmt_f16_to_f32_row_portable(src, dst, n);
}

#else

int fmt_have_f16c(void)
{
	return 0;
}

void fmt_f32_to_f16_row(const float *src, uint16_t *dst, size_t n)
{
	fmt_f32_to_f16_row_portable(src, dst, n);
}

void fmt_f16_to_f32_row(const uint16_t *src, float *dst, size_t n)
{
	fmt_f16_to_f32_row_portable(src, dst, n);
}

#endif
