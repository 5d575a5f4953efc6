/* fmtkit-ss/2's kernels (ss_internal.h): the spread of a group and the marking of a run.
 *
 * The spread (man/fmtkit-watermark.7, "THE GROUP'S SPREAD"):
 * element i of the slice adds to lane i mod 32; per run of 512 elements each lane sums its 16
 * values of d = v - c and of d x d in the tensor's precision (float32: two roundings each, no
 * fused multiply-add), then adds that partial to its double sum; the 32 double sums are added as
 * a fixed tree (two independent chains per register: the adds' latency does not bound the loop). The AVX-512, AVX2 and portable loops do the same operations in the same order,
 * so the bits (and the marks that follow from them) are the same on every machine. A value that
 * is not finite adds 0 (the vector loops add everything first and redo a run whose partial sums
 * came out non-finite with the values masked). */
#include <float.h>
#include <math.h>
#include <string.h>
#include "ss_internal.h"

#define LANES 16                 /* of a run's marking sums */
#define SLANES 32                /* of a spread */
#define RUN 512

static double lanes_tree(const double l[LANES])
{
	return (((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))) +
	       (((l[8] + l[9]) + (l[10] + l[11])) + ((l[12] + l[13]) + (l[14] + l[15])));
}

/* One run of the portable loop: the lanes' partial sums in the tensor's type T (float32 or
 * double) added to d1, d2. */
#define RUN_PORTABLE(name, T)                                                                       \
	static void name(const uint8_t *p, size_t len, T c, double d1[SLANES], double d2[SLANES], uint64_t *fin) \
	{                                                                                           \
		T a1[SLANES] = { 0 }, a2[SLANES] = { 0 };                                           \
		for (size_t i = 0; i < len; i++) {                                                  \
			T v;                                                                        \
			memcpy(&v, p + sizeof v * i, sizeof v);                                     \
			if (!isfinite(v))                                                           \
				continue;                                                           \
			T d = v - c;                                                                \
			T sq = d * d;                                                               \
			a1[i % SLANES] += d;                                                        \
			a2[i % SLANES] += sq;                                                       \
			(*fin)++;                                                                   \
		}                                                                                   \
		for (int l = 0; l < SLANES; l++) {                                                  \
			d1[l] += (double)a1[l];                                                     \
			d2[l] += (double)a2[l];                                                     \
		}                                                                                   \
	}
RUN_PORTABLE(run32_portable, float)
RUN_PORTABLE(run64, double)

/* v + delta (exact) rounded to the type toward v: the nearest value, moved back by one step toward
 * v when it lies beyond v + delta, decided exactly (s + e is v + delta: Knuth's TwoSum). */
static inline double round_toward32(double v, double delta)
{
	double s = v + delta, z = s - v, e = (v - (s - z)) + (delta - z);
	float f = (float)s;
	double beyond = ((double)f - s) - e;   /* f - (v + delta); its sign is exact */
	if (delta > 0 ? beyond > 0 : beyond < 0)
		f = nextafterf(f, (float)v);
	return f;
}

static inline double round_toward64(double v, double delta)
{
	double s = v + delta, z = s - v, e = (v - (s - z)) + (delta - z);
	if (isinf(s))
		return copysign(DBL_MAX, s);
	if (delta > 0 ? e < 0 : e > 0)
		s = nextafter(s, v);
	return s;
}

typedef struct change_lanes {
	double d[LANES], dd[LANES], vd[LANES];
	uint64_t finite, marked;
} change_lanes;

static void change_add(change_lanes *c, size_t i, double v, double v1)
{
	double diff = v1 - v, sq = diff * diff, vd = v * diff;
	c->d[i % LANES] += diff;
	c->dd[i % LANES] += sq;
	c->vd[i % LANES] += vd;
	c->finite++;
	c->marked += v1 != v;
}

static void mark32_portable(uint8_t *p, const double *delta, size_t from, size_t len, change_lanes *c)
{
	for (size_t i = from; i < len; i++) {
		float f;
		memcpy(&f, p + 4 * i, 4);
		if (!isfinite(f))
			continue;
		double v1 = round_toward32(f, delta[i]);
		float g = (float)v1;
		memcpy(p + 4 * i, &g, 4);
		change_add(c, i, f, v1);
	}
}

static void mark64(uint8_t *p, const double *delta, size_t len, change_lanes *c)
{
	for (size_t i = 0; i < len; i++) {
		double v;
		memcpy(&v, p + 8 * i, 8);
		if (!isfinite(v))
			continue;
		double v1 = round_toward64(v, delta[i]);
		memcpy(p + 8 * i, &v1, 8);
		change_add(c, i, v, v1);
	}
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SP_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl")))
#define SP_AVX2 __attribute__((target("avx2")))

#define NONFINITE 0x99   /* vfpclassps: QNaN, +inf, -inf, SNaN */

SP_AVX512 static void spread32_avx512(const uint8_t *p, size_t n, float c, double d1[SLANES], double d2[SLANES],
				       uint64_t *fin)
{
	__m512d s1[4], s2[4];
	for (int k = 0; k < 4; k++) {
		s1[k] = _mm512_loadu_pd(d1 + 8 * k);
		s2[k] = _mm512_loadu_pd(d2 + 8 * k);
	}
	const __m512 cv = _mm512_set1_ps(c);
	for (size_t r = 0; r < n; r += RUN) {
		const uint8_t *q = p + 4 * r;
		size_t len = n - r < RUN ? n - r : RUN;
		__m512 a1[2] = { _mm512_setzero_ps(), _mm512_setzero_ps() }, a2[2] = { a1[0], a1[0] };
		int redo = len < RUN;
		if (!redo) {
			if (c == 0) {   /* v - 0 is v: the same bits without the subtraction */
				for (int t = 0; t < RUN / SLANES; t++)
					for (int h = 0; h < 2; h++) {
						__m512 d = _mm512_loadu_ps(q + 128 * t + 64 * h);
						a1[h] = _mm512_add_ps(a1[h], d);
						a2[h] = _mm512_add_ps(a2[h], _mm512_mul_ps(d, d));
					}
			} else {
				for (int t = 0; t < RUN / SLANES; t++)
					for (int h = 0; h < 2; h++) {
						__m512 d = _mm512_sub_ps(_mm512_loadu_ps(q + 128 * t + 64 * h), cv);
						a1[h] = _mm512_add_ps(a1[h], d);
						a2[h] = _mm512_add_ps(a2[h], _mm512_mul_ps(d, d));
					}
			}
			redo = (_mm512_fpclass_ps_mask(a1[0], NONFINITE) | _mm512_fpclass_ps_mask(a1[1], NONFINITE) |
				_mm512_fpclass_ps_mask(a2[0], NONFINITE) | _mm512_fpclass_ps_mask(a2[1], NONFINITE)) != 0;
			if (!redo)
				*fin += RUN;
		}
		if (redo) {
			a1[0] = a1[1] = a2[0] = a2[1] = _mm512_setzero_ps();
			for (size_t t = 0; SLANES * t < len; t++)
				for (int h = 0; h < 2; h++) {
					size_t from = SLANES * t + 16 * (size_t)h, left = len > from ? len - from : 0;
					__mmask16 in = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
					__m512 v = _mm512_maskz_loadu_ps(in, q + 4 * from);
					__mmask16 ok = in & (__mmask16)~_mm512_fpclass_ps_mask(v, NONFINITE);
					__m512 d = _mm512_maskz_sub_ps(ok, v, cv);
					a1[h] = _mm512_add_ps(a1[h], d);
					a2[h] = _mm512_add_ps(a2[h], _mm512_mul_ps(d, d));
					*fin += (uint64_t)__builtin_popcount(ok);
				}
		}
		for (int h = 0; h < 2; h++) {
			s1[2 * h] = _mm512_add_pd(s1[2 * h], _mm512_cvtps_pd(_mm512_castps512_ps256(a1[h])));
			s1[2 * h + 1] = _mm512_add_pd(s1[2 * h + 1], _mm512_cvtps_pd(_mm512_extractf32x8_ps(a1[h], 1)));
			s2[2 * h] = _mm512_add_pd(s2[2 * h], _mm512_cvtps_pd(_mm512_castps512_ps256(a2[h])));
			s2[2 * h + 1] = _mm512_add_pd(s2[2 * h + 1], _mm512_cvtps_pd(_mm512_extractf32x8_ps(a2[h], 1)));
		}
	}
	for (int k = 0; k < 4; k++) {
		_mm512_storeu_pd(d1 + 8 * k, s1[k]);
		_mm512_storeu_pd(d2 + 8 * k, s2[k]);
	}
}

/* Lanes 8h .. 8h + 7 in register h. */
SP_AVX2 static int nonfinite8(__m256 a)
{
	__m256 abs = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a);
	return _mm256_movemask_ps(_mm256_cmp_ps(abs, _mm256_set1_ps(INFINITY), _CMP_NLT_UQ)) != 0;
}

SP_AVX2 static void spread32_avx2(const uint8_t *p, size_t n, float c, double d1[SLANES], double d2[SLANES],
				   uint64_t *fin)
{
	const __m256 cv = _mm256_set1_ps(c), inf = _mm256_set1_ps(INFINITY), sign = _mm256_set1_ps(-0.0f);
	for (size_t r = 0; r < n; r += RUN) {
		const uint8_t *q = p + 4 * r;
		size_t len = n - r < RUN ? n - r : RUN;
		__m256 a1[4], a2[4];
		for (int h = 0; h < 4; h++)
			a1[h] = a2[h] = _mm256_setzero_ps();
		int redo = len < RUN;
		if (!redo) {
			for (int t = 0; t < RUN / SLANES; t++)
				for (int h = 0; h < 4; h++) {
					__m256 d = _mm256_loadu_ps((const float *)(const void *)(q + 128 * t + 32 * h));
					if (c != 0)
						d = _mm256_sub_ps(d, cv);
					a1[h] = _mm256_add_ps(a1[h], d);
					a2[h] = _mm256_add_ps(a2[h], _mm256_mul_ps(d, d));
				}
			for (int h = 0; h < 4; h++)
				redo |= nonfinite8(a1[h]) | nonfinite8(a2[h]);
			if (!redo)
				*fin += RUN;
		}
		if (redo) {
			for (int h = 0; h < 4; h++)
				a1[h] = a2[h] = _mm256_setzero_ps();
			for (size_t t = 0; SLANES * t < len; t++)
				for (int h = 0; h < 4; h++) {
					size_t from = SLANES * t + 8 * (size_t)h;
					__m256i in = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(len > from ? len - from : 0)),
									_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
					__m256 v = _mm256_maskload_ps((const float *)(const void *)(q + 4 * from), in);
					__m256 ok = _mm256_and_ps(_mm256_castsi256_ps(in),
								  _mm256_cmp_ps(_mm256_andnot_ps(sign, v), inf, _CMP_LT_OQ));
					__m256 d = _mm256_and_ps(_mm256_sub_ps(v, cv), ok);
					a1[h] = _mm256_add_ps(a1[h], d);
					a2[h] = _mm256_add_ps(a2[h], _mm256_mul_ps(d, d));
					*fin += (uint64_t)__builtin_popcount((unsigned)_mm256_movemask_ps(ok));
				}
		}
		for (int h = 0; h < 4; h++) {
			double *x1 = d1 + 8 * h, *x2 = d2 + 8 * h;
			_mm256_storeu_pd(x1, _mm256_add_pd(_mm256_loadu_pd(x1), _mm256_cvtps_pd(_mm256_castps256_ps128(a1[h]))));
			_mm256_storeu_pd(x1 + 4, _mm256_add_pd(_mm256_loadu_pd(x1 + 4), _mm256_cvtps_pd(_mm256_extractf128_ps(a1[h], 1))));
			_mm256_storeu_pd(x2, _mm256_add_pd(_mm256_loadu_pd(x2), _mm256_cvtps_pd(_mm256_castps256_ps128(a2[h]))));
			_mm256_storeu_pd(x2 + 4, _mm256_add_pd(_mm256_loadu_pd(x2 + 4), _mm256_cvtps_pd(_mm256_extractf128_ps(a2[h], 1))));
		}
	}
}

/* round_toward32 on 8 values; over: the lanes to step back. */
SP_AVX512 static __m256 round_toward8(__m512d v, __m512d dl)
{
	__m512d s = _mm512_add_pd(v, dl), z = _mm512_sub_pd(s, v);
	__m512d e = _mm512_add_pd(_mm512_sub_pd(v, _mm512_sub_pd(s, z)), _mm512_sub_pd(dl, z));
	__m256 f = _mm512_cvtpd_ps(s);
	__m512d beyond = _mm512_sub_pd(_mm512_sub_pd(_mm512_cvtps_pd(f), s), e);
	const __m512d zero = _mm512_setzero_pd();
	__mmask8 up = _mm512_cmp_pd_mask(dl, zero, _CMP_GT_OQ), down = _mm512_cmp_pd_mask(dl, zero, _CMP_LT_OQ);
	__mmask8 over = (__mmask8)((up & _mm512_cmp_pd_mask(beyond, zero, _CMP_GT_OQ)) |
				   (down & _mm512_cmp_pd_mask(beyond, zero, _CMP_LT_OQ)));
	/* step toward v: f > v exactly when delta > 0 */
	const __m256i min = _mm256_set1_epi32(INT32_MIN);
	__m256i i = _mm256_castps_si256(f);
	__mmask8 ineg = _mm256_movepi32_mask(i);
	__m256i k = _mm256_mask_sub_epi32(i, ineg, min, i);
	k = _mm256_add_epi32(k, _mm256_mask_blend_epi32(up, _mm256_set1_epi32(1), _mm256_set1_epi32(-1)));
	__m256i back = _mm256_mask_sub_epi32(k, _mm256_movepi32_mask(k), min, k);
	return _mm256_mask_blend_ps(over, f, _mm256_castsi256_ps(back));
}

SP_AVX512 static size_t mark32_avx512(uint8_t *p, const double *delta, size_t len, change_lanes *c)
{
	__m512d sd[2], sdd[2], svd[2];
	for (int h = 0; h < 2; h++) {
		sd[h] = _mm512_loadu_pd(c->d + 8 * h);
		sdd[h] = _mm512_loadu_pd(c->dd + 8 * h);
		svd[h] = _mm512_loadu_pd(c->vd + 8 * h);
	}
	uint64_t finite = 0, marked = 0;
	size_t i = 0;
	for (; i + LANES <= len; i += LANES) {
		__m512 vf = _mm512_loadu_ps(p + 4 * i);
		__mmask16 ok = (__mmask16)~_mm512_fpclass_ps_mask(vf, NONFINITE);
		__m256 out[2];
		for (int h = 0; h < 2; h++) {
			__mmask8 okh = (__mmask8)(ok >> (8 * h));
			__m512d v = _mm512_maskz_cvtps_pd(okh, h ? _mm512_extractf32x8_ps(vf, 1) : _mm512_castps512_ps256(vf));
			__m512d dl = _mm512_maskz_loadu_pd(okh, delta + i + 8 * h);
			out[h] = round_toward8(v, dl);
			__m512d v1 = _mm512_cvtps_pd(out[h]);
			__m512d diff = _mm512_maskz_sub_pd(okh, v1, v);
			sd[h] = _mm512_add_pd(sd[h], diff);
			sdd[h] = _mm512_add_pd(sdd[h], _mm512_mul_pd(diff, diff));
			svd[h] = _mm512_add_pd(svd[h], _mm512_mul_pd(v, diff));
			marked += (uint64_t)__builtin_popcount(okh & _mm512_cmp_pd_mask(v1, v, _CMP_NEQ_OQ));
		}
		__m512 res = _mm512_insertf32x8(_mm512_castps256_ps512(out[0]), out[1], 1);
		_mm512_storeu_ps(p + 4 * i, _mm512_mask_blend_ps(ok, vf, res));
		finite += (uint64_t)__builtin_popcount(ok);
	}
	for (int h = 0; h < 2; h++) {
		_mm512_storeu_pd(c->d + 8 * h, sd[h]);
		_mm512_storeu_pd(c->dd + 8 * h, sdd[h]);
		_mm512_storeu_pd(c->vd + 8 * h, svd[h]);
	}
	c->finite += finite;
	c->marked += marked;
	return i;
}

static size_t mark32_vector(uint8_t *p, const double *delta, size_t len, change_lanes *c)
{
	return fmt_wm_vector_isa() == 2 ? mark32_avx512(p, delta, len, c) : 0;
}

static int spread32_vector(const uint8_t *p, size_t n, float c, double d1[SLANES], double d2[SLANES], uint64_t *fin)
{
	switch (fmt_wm_vector_isa()) {
	case 2: spread32_avx512(p, n, c, d1, d2, fin); return 1;
	case 1: spread32_avx2(p, n, c, d1, d2, fin); return 1;
	default: return 0;
	}
}
#else
static size_t mark32_vector(uint8_t *p, const double *delta, size_t len, change_lanes *c)
{
	(void)p, (void)delta, (void)len, (void)c;
	return 0;
}

static int spread32_vector(const uint8_t *p, size_t n, float c, double d1[SLANES], double d2[SLANES], uint64_t *fin)
{
	(void)p, (void)n, (void)c, (void)d1, (void)d2, (void)fin;
	return 0;
}
#endif

void fmt_ss2_spread_of(const uint8_t *p, size_t n, int width, double c, fmt_ss2_spread *out)
{
	double d1[SLANES] = { 0 }, d2[SLANES] = { 0 };
	uint64_t fin = 0;
	if (width == 4) {
		if (!spread32_vector(p, n, (float)c, d1, d2, &fin))
			for (size_t r = 0; r < n; r += RUN)
				run32_portable(p + 4 * r, n - r < RUN ? n - r : RUN, (float)c, d1, d2, &fin);
	} else {
		for (size_t r = 0; r < n; r += RUN)
			run64(p + 8 * r, n - r < RUN ? n - r : RUN, c, d1, d2, &fin);
	}
	out->n = fin;
	out->s1 = lanes_tree(d1) + lanes_tree(d1 + LANES);
	out->s2 = lanes_tree(d2) + lanes_tree(d2 + LANES);
}

void fmt_ss2_mark_of(uint8_t *p, const double *delta, size_t len, int width, fmt_ss2_change *c)
{
	change_lanes lanes;
	memset(&lanes, 0, sizeof lanes);
	if (width == 4)
		mark32_portable(p, delta, mark32_vector(p, delta, len, &lanes), len, &lanes);
	else
		mark64(p, delta, len, &lanes);
	c->d = lanes_tree(lanes.d);
	c->dd = lanes_tree(lanes.dd);
	c->vd = lanes_tree(lanes.vd);
	c->finite = lanes.finite;
	c->marked = lanes.marked;
}
