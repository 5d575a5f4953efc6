/* The quantizers' scale searches with one SIMD lane per group (quant_lanes.inc), built for AVX2
 * and for AVX-512 and chosen at run time; the portable loops of quant_k.c are the reference and
 * these give the same bytes (tests force each level and compare). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/env.h"
#include "fmt/half.h"
#include "fmt/checked.h"
#include "fmt/quant.h"
#include "quant_internal.h"

#define GROUP_MAX_EPS 1e-15f  /* as quant_k.c: below this largest |x|, a group is all zero */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define QUANT_SIMD 1

/* ---- AVX2: eight lanes; masks are all-ones floats ---- */
#define W 8
#define LANES(name) name##_avx2
#define TARGET __attribute__((target("avx2")))
#define VF __m256
#define VI __m256i
#define VM __m256
#define VF_SET1(f) _mm256_set1_ps(f)
#define VF_LOAD(p) _mm256_loadu_ps(p)
#define VF_LOADU_LO(p) _mm256_loadu_ps(p)
#define VF_LOADU_HI(p) _mm256_loadu_ps((p) + 8)
#define VF_STORE(p, v) _mm256_storeu_ps(p, v)
#define VF_ADD(a, b) _mm256_add_ps(a, b)
#define VF_SUB(a, b) _mm256_sub_ps(a, b)
#define VF_MUL(a, b) _mm256_mul_ps(a, b)
#define VF_DIV(a, b) _mm256_div_ps(a, b)
#define VF_ABS(v) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v)
#define VF_NEG(v) _mm256_xor_ps(_mm256_set1_ps(-0.0f), v)
#define VF_FROM_I(v) _mm256_cvtepi32_ps(v)
#define VF_SEL(m, a, b) _mm256_blendv_ps(b, a, m)
#define VF_LUT16(lo, hi, idx) \
	_mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, idx), _mm256_permutevar8x32_ps(hi, idx), \
			 _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(7))))
#define VI_SET1(i) _mm256_set1_epi32(i)
#define VI_STORE(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), v)
#define VI_BITS(v) _mm256_castps_si256(v)
#define VI_ADD(a, b) _mm256_add_epi32(a, b)
#define VI_SUB(a, b) _mm256_sub_epi32(a, b)
#define VI_AND(a, b) _mm256_and_si256(a, b)
#define VI_MIN(a, b) _mm256_min_epi32(a, b)
#define VI_MAX(a, b) _mm256_max_epi32(a, b)
#define VI_SEL(m, a, b) _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(b), _mm256_castsi256_ps(a), m))
#define VI_INC_IF(c, m) _mm256_sub_epi32(c, _mm256_castps_si256(m))
#define VM_LT(a, b) _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define VM_LE(a, b) _mm256_cmp_ps(a, b, _CMP_LE_OQ)
#define VM_GT(a, b) _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define VM_GE(a, b) _mm256_cmp_ps(a, b, _CMP_GE_OQ)
#define VM_EQ(a, b) _mm256_cmp_ps(a, b, _CMP_EQ_OQ)
#define VM_NEQ(a, b) _mm256_cmp_ps(a, b, _CMP_NEQ_UQ)
#define VM_UNORD(a, b) _mm256_cmp_ps(a, b, _CMP_UNORD_Q)
#define VM_AND(a, b) _mm256_and_ps(a, b)
#define VM_OR(a, b) _mm256_or_ps(a, b)
#define VM_ANDNOT(a, b) _mm256_andnot_ps(b, a)
#define VM_NOT(m) _mm256_xor_ps(m, _mm256_castsi256_ps(_mm256_set1_epi32(-1)))
#define VM_ANY(m) (_mm256_movemask_ps(m) != 0)
#include "quant_lanes.inc"
#undef W
#undef LANES
#undef TARGET
#undef VF
#undef VI
#undef VM
#undef VF_SET1
#undef VF_LOAD
#undef VF_LOADU_LO
#undef VF_LOADU_HI
#undef VF_STORE
#undef VF_ADD
#undef VF_SUB
#undef VF_MUL
#undef VF_DIV
#undef VF_ABS
#undef VF_NEG
#undef VF_FROM_I
#undef VF_SEL
#undef VF_LUT16
#undef VI_SET1
#undef VI_STORE
#undef VI_BITS
#undef VI_ADD
#undef VI_SUB
#undef VI_AND
#undef VI_MIN
#undef VI_MAX
#undef VI_SEL
#undef VI_INC_IF
#undef VM_LT
#undef VM_LE
#undef VM_GT
#undef VM_GE
#undef VM_EQ
#undef VM_NEQ
#undef VM_UNORD
#undef VM_AND
#undef VM_OR
#undef VM_ANDNOT
#undef VM_NOT
#undef VM_ANY

/* ---- AVX-512: sixteen lanes; masks are __mmask16 ---- */
#define W 16
#define LANES(name) name##_avx512
#define TARGET __attribute__((target("avx2,avx512f,avx512vl,avx512bw,avx512dq")))
#define VF __m512
#define VI __m512i
#define VM __mmask16
#define VF_SET1(f) _mm512_set1_ps(f)
#define VF_LOAD(p) _mm512_loadu_ps(p)
#define VF_LOADU_LO(p) _mm512_loadu_ps(p)
#define VF_LOADU_HI(p) _mm512_loadu_ps(p)
#define VF_STORE(p, v) _mm512_storeu_ps(p, v)
#define VF_ADD(a, b) _mm512_add_ps(a, b)
#define VF_SUB(a, b) _mm512_sub_ps(a, b)
#define VF_MUL(a, b) _mm512_mul_ps(a, b)
#define VF_DIV(a, b) _mm512_div_ps(a, b)
#define VF_ABS(v) _mm512_abs_ps(v)
#define VF_NEG(v) _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN)))
#define VF_FROM_I(v) _mm512_cvtepi32_ps(v)
#define VF_SEL(m, a, b) _mm512_mask_blend_ps(m, b, a)
#define VF_LUT16(lo, hi, idx) _mm512_permutexvar_ps(idx, lo)
#define VI_SET1(i) _mm512_set1_epi32(i)
#define VI_STORE(p, v) _mm512_storeu_si512((void *)(p), v)
#define VI_BITS(v) _mm512_castps_si512(v)
#define VI_ADD(a, b) _mm512_add_epi32(a, b)
#define VI_SUB(a, b) _mm512_sub_epi32(a, b)
#define VI_AND(a, b) _mm512_and_si512(a, b)
#define VI_MIN(a, b) _mm512_min_epi32(a, b)
#define VI_MAX(a, b) _mm512_max_epi32(a, b)
#define VI_SEL(m, a, b) _mm512_mask_blend_epi32(m, b, a)
#define VI_INC_IF(c, m) _mm512_mask_add_epi32(c, m, c, _mm512_set1_epi32(1))
#define VM_LT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define VM_LE(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ)
#define VM_GT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ)
#define VM_GE(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ)
#define VM_EQ(a, b) _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ)
#define VM_NEQ(a, b) _mm512_cmp_ps_mask(a, b, _CMP_NEQ_UQ)
#define VM_UNORD(a, b) _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q)
#define VM_AND(a, b) ((__mmask16)((a) & (b)))
#define VM_OR(a, b) ((__mmask16)((a) | (b)))
#define VM_ANDNOT(a, b) ((__mmask16)((a) & ~(b)))
#define VM_NOT(m) ((__mmask16)~(m))
#define VM_ANY(m) ((m) != 0)
#include "quant_lanes.inc"

/* ---- Q8_0 and Q4_0 blocks, AVX2: the element operations are independent, and the block's
 * largest magnitude does not depend on the order it is found in ---- */

#define LEGACY __attribute__((target("avx2"), always_inline)) inline

/* 1 when no element of the 32 is infinite or NaN. */
static LEGACY int finite32_avx2(const __m256 v[4])
{
	const __m256i exp = _mm256_set1_epi32(0x7F800000);
	__m256i bad = _mm256_setzero_si256();
	for (int k = 0; k < 4; ++k)
		bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(v[k]), exp), exp));
	return _mm256_testz_si256(bad, bad);
}

static LEGACY float absmax32_avx2(const __m256 v[4], __m256 a[4])
{
	const __m256 sign = _mm256_set1_ps(-0.0f);
	for (int k = 0; k < 4; ++k)
		a[k] = _mm256_andnot_ps(sign, v[k]);
	__m256 m = _mm256_max_ps(_mm256_max_ps(a[0], a[1]), _mm256_max_ps(a[2], a[3]));
	__m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
	h = _mm_max_ps(h, _mm_movehl_ps(h, h));
	h = _mm_max_ss(h, _mm_movehdup_ps(h));
	return _mm_cvtss_f32(h);
}

/* 32 codes (int32, 0..255) as bytes, or two nibble vectors lo | hi << 4 when hi is given. */
static LEGACY __m128i bytes16_avx2(__m256i a, __m256i b)
{
	const __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8);
	return _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
}

/* The block's 32 values; 1 when none is infinite or NaN. */
static LEGACY int load32_avx2(const float *x, __m256 v[4])
{
	for (int k = 0; k < 4; ++k)
		v[k] = _mm256_loadu_ps(x + 8 * k);
	return finite32_avx2(v);
}

/* The F16 scale of d and 1/d (0 for d = 0): 0 when the F16 scale overflows, -1 when 1/d does,
 * else 1. */
static int scale_and_inverse(float d, uint16_t *h, float *id)
{
	*id = d != 0.0f ? 1.0f / d : 0.0f;
	*h = fmt_f32_to_f16(d);
	if ((*h & 0x7C00u) == 0x7C00u)
		return 0;
	return (fmt_f32_bits(*id) & 0x7F800000u) == 0x7F800000u ? -1 : 1;
}

/* Q8_0 (q8_0_block of quant.c), the same answers as signed32_avx2 below. */
static LEGACY int q8_0_avx2(const float *x, uint8_t *dst)
{
	__m256 v[4], a[4];
	if (!load32_avx2(x, v))
		return 0;
	uint16_t h;
	float id;
	const int scaled = scale_and_inverse(absmax32_avx2(v, a) / 127.0f, &h, &id);
	if (scaled != 1)
		return scaled;
	fmt_wr_u16(dst, h);
	const __m256 vid = _mm256_set1_ps(id), up = _mm256_set1_ps(0.5f), down = _mm256_set1_ps(-0.5f);
	__m256i q[4];
	for (int k = 0; k < 4; ++k) {  /* round half away from zero, as round_half_away_small */
		const __m256 f = _mm256_mul_ps(v[k], vid);
		const __m256i t = _mm256_cvttps_epi32(f);
		const __m256 rest = _mm256_sub_ps(f, _mm256_cvtepi32_ps(t));
		const __m256i ups = _mm256_castps_si256(_mm256_cmp_ps(rest, up, _CMP_GE_OQ));
		const __m256i downs = _mm256_castps_si256(_mm256_cmp_ps(rest, down, _CMP_LE_OQ));
		q[k] = _mm256_add_epi32(_mm256_sub_epi32(t, ups), downs);  /* masks are -1 */
	}
	const __m256i w0 = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[0], q[1]), 0xD8);
	const __m256i w1 = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[2], q[3]), 0xD8);
	const __m256i b = _mm256_permute4x64_epi64(_mm256_packs_epi16(w0, w1), 0xD8);
	_mm256_storeu_si256((__m256i *)(void *)(dst + 2), b);
	return 1;
}

/* The element of x equal to m that comes first: the portable searches keep the first of equal
 * candidates, which only differs from m in the sign of a zero. */
static LEGACY float first_equal_avx2(const float *x, const __m256 v[4], float m)
{
	const __m256 target = _mm256_set1_ps(m);
	uint32_t hits = 0;
	for (int k = 0; k < 4; ++k)
		hits |= (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v[k], target, _CMP_EQ_OQ)) << (8 * k);
	return x[__builtin_ctz(hits)];
}

/* Codes 0..15 of j and j + 16 as the nibbles of byte j. */
static LEGACY void nibbles_avx2(const __m256i q[4], uint8_t *qs)
{
	const __m256i lo = _mm256_or_si256(q[0], _mm256_slli_epi32(q[2], 4));
	const __m256i hi = _mm256_or_si256(q[1], _mm256_slli_epi32(q[3], 4));
	_mm_storeu_si128((__m128i *)(void *)qs, bytes16_avx2(lo, hi));
}

/* Low nibbles of codes j | j + 16 << 4 at qs, and the fifth bits (bit j of u32 qh) at qh_at:
 * pack_5bit of quant.c. */
static LEGACY void pack5_avx2(const __m256i q[4], uint8_t *qh_at, uint8_t *qs)
{
	const __m256i nib = _mm256_set1_epi32(0x0F);
	const __m256i lo = _mm256_or_si256(_mm256_and_si256(q[0], nib), _mm256_slli_epi32(_mm256_and_si256(q[2], nib), 4));
	const __m256i hi = _mm256_or_si256(_mm256_and_si256(q[1], nib), _mm256_slli_epi32(_mm256_and_si256(q[3], nib), 4));
	_mm_storeu_si128((__m128i *)(void *)qs, bytes16_avx2(lo, hi));
	uint32_t qh = 0;
	for (int k = 0; k < 4; ++k)
		qh |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32(q[k], 27))) << (8 * k);
	fmt_wr_u32(qh_at, qh);
}

/* Q4_0 and Q5_0 (q4_0_block, q5_0_block of quant.c): d = the first element of largest
 * magnitude / -half_range, codes MIN(top, x/d + half_range + 0.5) (that sum lies in
 * [0, 2 half_range + 0.5]: a truncation and a clamp). 1 when the scale is written, 0 when the
 * block has an infinite or NaN element or its F16 scale overflows (nothing useful written), -1
 * when 1/d overflows (a block of subnormals: the portable code does these). */
static LEGACY int signed32_avx2(const float *x, float half_range, int top, uint8_t *dst, __m256i q[4])
{
	__m256 v[4], a[4];
	if (!load32_avx2(x, v))
		return 0;
	const float amax = absmax32_avx2(v, a);
	const float max = amax > 0.0f ? first_equal_avx2(x, a, amax) : 0.0f;  /* all zero: +0 */
	uint16_t h;
	float id;
	const int scaled = scale_and_inverse(max / -half_range, &h, &id);
	if (scaled != 1)
		return scaled;
	fmt_wr_u16(dst, h);
	const __m256 vid = _mm256_set1_ps(id), add = _mm256_set1_ps(half_range + 0.5f);
	for (int k = 0; k < 4; ++k)
		q[k] = _mm256_min_epi32(_mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(v[k], vid), add)),
					_mm256_set1_epi32(top));
	return 1;
}

/* Q4_1 and Q5_1 (q4_1_block, q5_1_block of quant.c): the codes (x - min)/d + 0.5 truncated,
 * clamped to clamp (Q4_1) or not (clamp 0, Q5_1); answers as signed32_avx2. */
static LEGACY int affine32_avx2(const float *x, float top, int clamp, uint8_t *dst, __m256i q[4])
{
	__m256 v[4];
	if (!load32_avx2(x, v))
		return 0;
	__m256 lo = _mm256_min_ps(_mm256_min_ps(v[0], v[1]), _mm256_min_ps(v[2], v[3]));
	__m256 hi = _mm256_max_ps(_mm256_max_ps(v[0], v[1]), _mm256_max_ps(v[2], v[3]));
	__m128 l = _mm_min_ps(_mm256_castps256_ps128(lo), _mm256_extractf128_ps(lo, 1));
	__m128 m = _mm_max_ps(_mm256_castps256_ps128(hi), _mm256_extractf128_ps(hi, 1));
	l = _mm_min_ps(l, _mm_movehl_ps(l, l));
	m = _mm_max_ps(m, _mm_movehl_ps(m, m));
	float min = _mm_cvtss_f32(_mm_min_ss(l, _mm_movehdup_ps(l)));
	float max = _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
	if (min == 0.0f)  /* which zero: the first, as the portable search */
		min = first_equal_avx2(x, v, min);
	if (max == 0.0f)
		max = first_equal_avx2(x, v, max);
	uint16_t h;
	float id;
	const int scaled = scale_and_inverse((max - min) / top, &h, &id);
	if (scaled != 1)
		return scaled;
	fmt_wr_u16(dst, h);
	fmt_wr_u16(dst + 2, fmt_f32_to_f16(min));
	const __m256 vid = _mm256_set1_ps(id), vmin = _mm256_set1_ps(min), half = _mm256_set1_ps(0.5f);
	for (int k = 0; k < 4; ++k) {  /* (x - min)/d + 0.5 lies in [0.5, top + 0.5] */
		q[k] = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(v[k], vmin), vid), half));
		if (clamp)
			q[k] = _mm256_min_epi32(q[k], _mm256_set1_epi32(clamp));
	}
	return 1;
}

/* One block of Q4_0, Q5_0, Q4_1 or Q5_1 (t), the answers of signed32_avx2. */
static LEGACY int nibble_block_avx2(fmt_dtype t, const float *x, uint8_t *dst)
{
	__m256i q[4];
	const int with_min = t == FMT_DT_Q4_1 || t == FMT_DT_Q5_1, five_bits = t == FMT_DT_Q5_0 || t == FMT_DT_Q5_1;
	const float top = five_bits ? 31.0f : 15.0f;
	int done;
	if (with_min)
		done = affine32_avx2(x, top, five_bits ? 0 : 15, dst, q);
	else
		done = signed32_avx2(x, five_bits ? 16.0f : 8.0f, (int)top, dst, q);
	if (done != 1)
		return done;
	uint8_t *codes = dst + (with_min ? 4 : 2);
	if (five_bits)
		pack5_avx2(q, codes, codes + 4);
	else
		nibbles_avx2(q, codes);
	return 1;
}
#endif

/* -1: not chosen yet; else 0 portable, 1 AVX2, 2 AVX-512. */
static atomic_int chosen_level = -1;
static atomic_int level_cap = 2;

/* FMTKIT_QUANT_SIMD=portable|avx2|avx512 caps the level (tests compare the paths through the
 * tools; fmt/env.h). */
static int env_cap(void)
{
	const int v = fmt_env_level(FMT_ENV_QUANT_SIMD);
	return v < 0 ? 2 : v;
}

static int cpu_level(void)
{
#ifdef QUANT_SIMD
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
		return 2;
	return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
	return 0;
#endif
}

int fmt_quant_simd_level(void)
{
	int level = atomic_load_explicit(&chosen_level, memory_order_relaxed);
	if (level < 0) {
		const int cpu = cpu_level(), env = env_cap();
		level = cpu < env ? cpu : env;
		atomic_store_explicit(&chosen_level, level, memory_order_relaxed);
	}
	const int cap = atomic_load_explicit(&level_cap, memory_order_relaxed);
	return level < cap ? level : cap;
}

int fmt_quant_use_simd(int level)
{
	return atomic_exchange(&level_cap, level);
}

/* Lanes per call at the level in use (W of the widest kernel that fits ngroups), 0: none. */
static int lanes_for(int ngroups)
{
	const int level = fmt_quant_simd_level();
	if (level >= 2 && ngroups >= 16)
		return 16;
	return level >= 1 && ngroups >= 8 ? 8 : 0;
}

int fmt_qkx2_lanes(int ngroups, int n, int nmax, const float *x, const float *weights, uint8_t *L, float *scales,
		   float *mins, float rmin, float rdelta, int nstep, int use_mad)
{
	int done = 0;
#ifdef QUANT_SIMD
	for (int w; n <= 32 && (w = lanes_for(ngroups - done)) > 0; done += w) {
		const size_t at = (size_t)done * (size_t)n;
		if (w == 16)
			qkx2_avx512(n, nmax, x + at, weights + at, L + at, scales + done, mins + done, rmin, rdelta, nstep, use_mad);
		else
			qkx2_avx2(n, nmax, x + at, weights + at, L + at, scales + done, mins + done, rmin, rdelta, nstep, use_mad);
	}
#else
	(void)n, (void)nmax, (void)x, (void)weights, (void)L, (void)scales, (void)mins, (void)rmin, (void)rdelta;
	(void)nstep, (void)use_mad, (void)ngroups;
#endif
	return done;
}

int fmt_qx_lanes(int ngroups, int n, int nmax, const float *x, const float *qw, int8_t *L, float *scales)
{
	int done = 0;
#ifdef QUANT_SIMD
	for (int w; n <= 32 && (w = lanes_for(ngroups - done)) > 0; done += w) {
		const size_t at = (size_t)done * (size_t)n;
		const float *qw_at = qw ? qw + at : NULL;
		if (w == 16)
			qx_avx512(n, nmax, x + at, qw_at, L + at, scales + done);
		else
			qx_avx2(n, nmax, x + at, qw_at, L + at, scales + done);
	}
#else
	(void)n, (void)nmax, (void)x, (void)qw, (void)L, (void)scales, (void)ngroups;
#endif
	return done;
}

int fmt_q3_lanes(int ngroups, int n, int nmax, const float *x, int8_t *L, float *scales)
{
	int done = 0;
#ifdef QUANT_SIMD
	for (int w; n <= 32 && (w = lanes_for(ngroups - done)) > 0; done += w) {
		const size_t at = (size_t)done * (size_t)n;
		if (w == 16)
			q3_avx512(n, nmax, x + at, L + at, scales + done);
		else
			q3_avx2(n, nmax, x + at, L + at, scales + done);
	}
#else
	(void)n, (void)nmax, (void)x, (void)L, (void)scales, (void)ngroups;
#endif
	return done;
}

int fmt_iq4_lanes(int ngroups, const float *x, const float *weight, int tries, float *scales)
{
	int done = 0;
#ifdef QUANT_SIMD
	for (int w; (w = lanes_for(ngroups - done)) > 0; done += w) {
		const size_t at = (size_t)done * 32;
		if (w == 16)
			iq4_avx512(x + at, weight + at, tries, scales + done);
		else
			iq4_avx2(x + at, weight + at, tries, scales + done);
	}
#else
	(void)x, (void)weight, (void)tries, (void)scales, (void)ngroups;
#endif
	return done;
}

#ifdef QUANT_SIMD
static __attribute__((target("avx2"))) uint64_t q8_0_run_avx2(const float *x, uint8_t *dst, uint64_t nblocks)
{
	uint64_t b = 0;
	while (b < nblocks && q8_0_avx2(x + 32 * b, dst + 34 * b) == 1)
		b++;
	return b;
}

/* The blocks of the run of (x, dst) of Q4_0, Q5_0, Q4_1 or Q5_1 (blocks of `bytes`) that the
 * kernel writes, up to the first it leaves to the portable code. */
static __attribute__((target("avx2"))) uint64_t nibble_run_avx2(fmt_dtype t, uint64_t bytes, const float *x, uint8_t *dst,
								 uint64_t nblocks)
{
	uint64_t b = 0;
	while (b < nblocks && nibble_block_avx2(t, x + 32 * b, dst + bytes * b) == 1)
		b++;
	return b;
}
#endif

uint64_t fmt_legacy_blocks_lanes(fmt_dtype t, const float *x, uint8_t *dst, uint64_t nblocks)
{
#ifdef QUANT_SIMD
	if (fmt_quant_simd_level() >= 1) {
		if (t == FMT_DT_Q8_0)
			return q8_0_run_avx2(x, dst, nblocks);
		if (t == FMT_DT_Q4_0 || t == FMT_DT_Q5_0 || t == FMT_DT_Q4_1 || t == FMT_DT_Q5_1)
			return nibble_run_avx2(t, fmt_dtype_get(t)->block_bits / 8, x, dst, nblocks);
	}
#else
	(void)t, (void)x, (void)dst, (void)nblocks;
#endif
	return 0;
}

/* The element-wise kernels: the widest whose lanes divide n. */
static int element_lanes(int n)
{
	const int level = fmt_quant_simd_level();
	if (level >= 2 && n % 16 == 0)
		return 16;
	return level >= 1 && n % 8 == 0 ? 8 : 0;
}

int fmt_affine_codes_lanes(int n, const float *x, float add, float d, int lo, int hi, int offset, uint8_t *L)
{
#ifdef QUANT_SIMD
	switch (element_lanes(n)) {
	case 16: affine_codes_avx512(n, x, add, d, lo, hi, offset, L); return 1;
	case 8: affine_codes_avx2(n, x, add, d, lo, hi, offset, L); return 1;
	default: return 0;
	}
#else
	(void)n, (void)x, (void)add, (void)d, (void)lo, (void)hi, (void)offset, (void)L;
	return 0;
#endif
}

int fmt_iq4_codes_lanes(int n, const float *x, float id, uint8_t *L)
{
#ifdef QUANT_SIMD
	switch (element_lanes(n)) {
	case 16: iq4_codes_avx512(n, x, id, L); return 1;
	case 8: iq4_codes_avx2(n, x, id, L); return 1;
	default: return 0;
	}
#else
	(void)n, (void)x, (void)id, (void)L;
	return 0;
#endif
}

#ifdef QUANT_SIMD
static __attribute__((target("avx2"))) int finite_avx2(const float *x, uint64_t n)
{
	const __m256i exp = _mm256_set1_epi32(0x7F800000);
	__m256i bad = _mm256_setzero_si256();
	uint64_t i = 0;
	for (; i + 8 <= n; i += 8)
		bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(x + i)), exp), exp));
	uint32_t tail = 0;
	for (; i < n; i++)
		tail |= (fmt_f32_bits(x[i]) & 0x7F800000u) == 0x7F800000u;
	return _mm256_testz_si256(bad, bad) && !tail;
}
#endif

int fmt_finite_lanes(const float *x, uint64_t n)
{
#ifdef QUANT_SIMD
	if (fmt_quant_simd_level() >= 1)
		return finite_avx2(x, n);
#else
	(void)x, (void)n;
#endif
	return -1;
}
