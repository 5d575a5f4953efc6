/* ggml's K-quant (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) and IQ4 (IQ4_NL, IQ4_XS) quantizers as
 * llama-quantize runs them without an importance matrix: the quantize_row_*_ref functions and
 * their scale searches (make_qx_quants, make_q3_quants, make_qkx2_quants), and for IQ4 the
 * search of quantize_iq4_nl/quantize_iq4_xs with seven trial scales either side.
 *
 * Every float expression keeps ggml's operand order and float32 precision (the project builds
 * with -ffp-contract=off and without -ffast-math: nothing is fused or reassociated), every
 * comparison keeps ggml's form (NaN makes the same branch choices), and every narrowing
 * conversion keeps ggml's width, so that the bytes equal an x86-64 build of ggml for every
 * finite input, including blocks whose scales overflow (tests/data/golden/kquant_input.*). */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/half.h"
#include "quant_internal.h"

#define QK_K 256
#define GROUP_MAX_EPS 1e-15f  /* below this largest |x|, a group is all zero */

/* Round to nearest, ties to even, by adding 1.5 x 2^23 and reading the low mantissa bits.
 * For |f| > 2^22, infinities and NaN it gives ggml's same meaningless integer (the callers
 * clamp it), which is why it is computed this way and not with lrintf. */
static inline int nearest_int(float f)
{
	const float v = f + 12582912.0f;
	uint32_t bits;
	memcpy(&bits, &v, sizeof bits);
	return (int)(bits & 0x007FFFFFu) - 0x00400000;
}

static inline int clamp_int(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static void put_half(uint8_t *p, float f)
{
	fmt_wr_u16(p, fmt_f32_to_f16(f));
}

static float get_half(const uint8_t *p)
{
	return fmt_f16_to_f32(fmt_rd_u16(p));
}

/* The element of largest magnitude (the first one on ties) and that magnitude. */
static float signed_absmax(const float *x, int n, float *amax_out)
{
	float max = 0, amax = 0;
	for (int i = 0; i < n; ++i) {
		const float ax = fabsf(x[i]);
		if (ax > amax) {
			amax = ax;
			max = x[i];
		}
	}
	*amax_out = amax;
	return max;
}

/* The signed largest element of a group in *max; 1 (codes L all 0) when the group counts as
 * all zero (largest magnitude below GROUP_MAX_EPS). */
static int zero_group(const float *x, int n, int8_t *L, float *max)
{
	float amax;
	*max = signed_absmax(x, n, &amax);
	if (!(amax < GROUP_MAX_EPS))
		return 0;
	memset(L, 0, (size_t)n);
	return 1;
}

/* ---- scale searches ---- */

/* make_qx_quants with rmse_type 1: weights qw, or x^2 without (as Q6_K uses it without an
 * importance matrix): codes L in [0, 2 nmax) and the scale; nineteen trial scales around
 * nmax / max. */
static float qx_sums(int n, int nmax, const float *x, const float *qw, float iscale, float *sumlx_out)
{
	float sumlx = 0, suml2 = 0;
	for (int i = 0; i < n; ++i) {
		const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
		const float w = qw ? qw[i] : x[i] * x[i];
		sumlx += w * x[i] * (float)l;
		suml2 += w * (float)l * (float)l;
	}
	*sumlx_out = sumlx;
	return suml2;
}

static void qx_codes(int n, int nmax, const float *x, float iscale, int8_t *L)
{
	for (int i = 0; i < n; ++i)
		L[i] = (int8_t)(nmax + clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1));
}

float fmt_make_qx_quants(int n, int nmax, const float *x, const float *qw, int8_t *L)
{
	float max;
	if (zero_group(x, n, L, &max))
		return 0.f;
	float iscale = (float)-nmax / max;
	float sumlx, suml2 = qx_sums(n, nmax, x, qw, iscale, &sumlx);
	qx_codes(n, nmax, x, iscale, L);
	float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
	float best = scale * sumlx;
	for (int is = -9; is <= 9; ++is) {
		if (is == 0)
			continue;
		iscale = -((float)nmax + 0.1f * (float)is) / max;
		suml2 = qx_sums(n, nmax, x, qw, iscale, &sumlx);
		if (suml2 > 0 && sumlx * sumlx > best * suml2) {
			qx_codes(n, nmax, x, iscale, L);
			scale = sumlx / suml2;
			best = scale * sumlx;
		}
	}
	return scale;
}

/* make_q3_quants with do_rmse: codes in [-nmax, nmax) moved one at a time while the weighted
 * fit improves (at most five sweeps), then offset by nmax. */
static float make_q3_quants(int n, int nmax, const float *x, int8_t *L)
{
	float max;
	if (zero_group(x, n, L, &max))
		return 0.f;
	const float iscale = (float)-nmax / max;
	float sumlx = 0, suml2 = 0;
	for (int i = 0; i < n; ++i) {
		const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
		L[i] = (int8_t)l;
		const float w = x[i] * x[i];
		sumlx += w * x[i] * (float)l;
		suml2 += w * (float)l * (float)l;
	}
	for (int itry = 0; itry < 5; ++itry) {
		int n_changed = 0;
		for (int i = 0; i < n; ++i) {
			const float w = x[i] * x[i];
			float slx = sumlx - w * x[i] * (float)L[i];
			if (!(slx > 0))
				continue;
			float sl2 = suml2 - w * (float)L[i] * (float)L[i];
			const int new_l = clamp_int(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
			if (new_l == L[i])
				continue;
			slx += w * x[i] * (float)new_l;
			sl2 += w * (float)new_l * (float)new_l;
			if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
				L[i] = (int8_t)new_l;
				sumlx = slx;
				suml2 = sl2;
				++n_changed;
			}
		}
		if (!n_changed)
			break;
	}
	for (int i = 0; i < n; ++i)
		L[i] = (int8_t)(L[i] + nmax);
	return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* One trial of make_qkx2_quants: the codes of iscale and their weighted sums. */
typedef struct qkx_sums {
	float l, l2, xl;
} qkx_sums;

static qkx_sums qkx_trial(int n, int nmax, const float *x, const float *weights, float iscale, float min,
			  uint8_t *Laux)
{
	qkx_sums s = { 0, 0, 0 };
	for (int i = 0; i < n; ++i) {
		const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
		Laux[i] = (uint8_t)l;
		const float w = weights[i];
		s.l += w * (float)l;
		s.l2 += w * (float)l * (float)l;
		s.xl += w * (float)l * x[i];
	}
	return s;
}

/* The weighted error of codes L with scale and min: absolute (use_mad) or squared. */
static float qkx_error(int n, const float *x, const float *weights, const uint8_t *L, float scale, float min,
		       int use_mad)
{
	float err = 0;
	for (int i = 0; i < n; ++i) {
		float diff = scale * (float)L[i] + min - x[i];
		diff = use_mad ? fabsf(diff) : diff * diff;
		err += weights[i] * diff;
	}
	return err;
}

/* make_qkx2_quants: codes in [0, nmax] with a scale and a min (returned negated in the_min),
 * the least-squares fit of nstep + 1 trial scales kept when it lowers the weighted error. */
static float make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
			      float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep, int use_mad)
{
	float min = x[0], max = x[0];
	float sum_w = weights[0];
	float sum_x = sum_w * x[0];
	for (int i = 1; i < n; ++i) {
		if (x[i] < min)
			min = x[i];
		if (x[i] > max)
			max = x[i];
		const float w = weights[i];
		sum_w += w;
		sum_x += w * x[i];
	}
	if (min > 0)
		min = 0;
	if (max == min) {
		memset(L, 0, (size_t)n);
		*the_min = -min;
		return 0.f;
	}
	float iscale = (float)nmax / (max - min);
	float scale = 1 / iscale;
	for (int i = 0; i < n; ++i)
		L[i] = (uint8_t)clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
	float best_error = qkx_error(n, x, weights, L, scale, min, use_mad);
	for (int is = 0; is <= nstep; ++is) {
		iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
		const qkx_sums s = qkx_trial(n, nmax, x, weights, iscale, min, Laux);
		const float D = sum_w * s.l2 - s.l * s.l;
		if (!(D > 0))
			continue;
		float this_scale = (sum_w * s.xl - sum_x * s.l) / D;
		float this_min = (s.l2 * sum_x - s.l * s.xl) / D;
		if (this_min > 0) {
			this_min = 0;
			this_scale = s.xl / s.l2;
		}
		const float cur_error = qkx_error(n, x, weights, Laux, this_scale, this_min, use_mad);
		if (cur_error < best_error) {
			memcpy(L, Laux, (size_t)n);
			best_error = cur_error;
			scale = this_scale;
			min = this_min;
		}
	}
	*the_min = -min;
	return scale;
}

/* make_qkx2_quants over ngroups consecutive groups of n elements: SIMD lanes where they
 * serve, the portable search for the rest (the same bytes either way). */
static void fit_qkx2_groups(int ngroups, int n, int nmax, const float *x, const float *weights, uint8_t *L,
			    float *scales, float *mins, float rmin, float rdelta, int nstep, int use_mad)
{
	uint8_t Laux[32];
	for (int j = fmt_qkx2_lanes(ngroups, n, nmax, x, weights, L, scales, mins, rmin, rdelta, nstep, use_mad);
	     j < ngroups; ++j)
		scales[j] = make_qkx2_quants(n, nmax, x + n * j, weights + n * j, L + n * j, &mins[j], Laux, rmin, rdelta,
					     nstep, use_mad);
}

/* Pack 256 2-bit codes: per 128 elements 32 bytes, element j + 32k in bits 2k of byte j. */
static void pack_2bit(const uint8_t *L, uint8_t *qs)
{
	for (int j = 0; j < QK_K; j += 128)
		for (int l = 0; l < 32; ++l)
			qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
						  (L[j + l + 96] << 6));
}

float fmt_importance(const float *x, const float *qw, float sigma2, int n, float *w)
{
	float sum = 0;
	for (int j = 0; j < n; ++j)
		w[j] = qw[j] * sqrtf(sigma2 + x[j] * x[j]);
	for (int j = 0; j < n; ++j)
		sum += w[j];
	return sum;
}

float fmt_k_sigma2(const float *x, float factor)
{
	float sumx2 = 0;
	for (int j = 0; j < QK_K; ++j)
		sumx2 += x[j] * x[j];
	return factor * sumx2 / QK_K;
}

/* ---- Q2_K: u8 scales[16]; u8 qs[64]; half d; half dmin ---- */

static float make_qp_quants(int n, int nmax, const float *x, uint8_t *L, const float *w);

/* The 2-bit codes of each group from the 4-bit scales and mins as stored. */
static void q2_codes(const float *x, const uint8_t *sc, float d_all, float dmin_all, uint8_t *L)
{
	for (int j = 0; j < QK_K / 16; ++j) {
		const float d = d_all * (float)(sc[j] & 0xF);
		if (d == 0.0f)
			continue;
		const float dm = dmin_all * (float)(sc[j] >> 4);
		if (fmt_affine_codes_lanes(16, x + 16 * j, dm, d, 0, 3, 0, L + 16 * j))
			continue;
		for (int ii = 0; ii < 16; ++ii)
			L[16 * j + ii] = (uint8_t)clamp_int(nearest_int((x[16 * j + ii] + dm) / d), 0, 3);
	}
}

/* quantize_row_q2_K_impl: weights qw * sqrt(sigma2 + x^2) (sigma2 the mean square),
 * make_qkx3_quants per 16 elements, scales and mins coded by make_qp_quants. */
static void quantize_q2_k_weighted(const float *x, const float *qw, uint8_t *y)
{
	uint8_t L[QK_K], Ls[QK_K / 16], Lm[QK_K / 16];
	float weight[16], sw[QK_K / 16], mins[QK_K / 16], scales[QK_K / 16];
	const float sigma2 = fmt_k_sigma2(x, 1.f);
	for (int j = 0; j < QK_K / 16; ++j) {
		sw[j] = fmt_importance(x + 16 * j, qw + 16 * j, sigma2, 16, weight);
		scales[j] = fmt_make_qkx3_quants(16, 3, x + 16 * j, weight, L + 16 * j, &mins[j]);
	}
	const float dm = make_qp_quants(QK_K / 16, 15, scales, Ls, sw);
	const float mm = make_qp_quants(QK_K / 16, 15, mins, Lm, sw);
	put_half(y + 80, dm);
	put_half(y + 82, mm);
	for (int j = 0; j < QK_K / 16; ++j)
		y[j] = (uint8_t)(Ls[j] | (Lm[j] << 4));
	q2_codes(x, y, get_half(y + 80), get_half(y + 82), L);
	pack_2bit(L, y + 16);
}

static void quantize_q2_k_block(const float *x, uint8_t *y)
{
	uint8_t L[QK_K];
	float weights[QK_K], mins[QK_K / 16], scales[QK_K / 16];
	const float q4scale = 15.f;
	uint8_t *sc = y, *qs = y + 16;
	float max_scale = 0, max_min = 0;
	for (int l = 0; l < QK_K; ++l)
		weights[l] = fabsf(x[l]);
	fit_qkx2_groups(QK_K / 16, 16, 3, x, weights, L, scales, mins, -0.5f, 0.1f, 15, 1);
	for (int j = 0; j < QK_K / 16; ++j) {
		if (scales[j] > max_scale)
			max_scale = scales[j];
		if (mins[j] > max_min)
			max_min = mins[j];
	}
	if (max_scale > 0) {
		const float iscale = q4scale / max_scale;
		for (int j = 0; j < QK_K / 16; ++j)
			sc[j] = (uint8_t)nearest_int(iscale * scales[j]);
		put_half(y + 80, max_scale / q4scale);
	} else {
		memset(sc, 0, QK_K / 16);
		put_half(y + 80, 0.f);
	}
	if (max_min > 0) {
		const float iscale = q4scale / max_min;
		for (int j = 0; j < QK_K / 16; ++j)
			sc[j] = (uint8_t)(sc[j] | ((unsigned)nearest_int(iscale * mins[j]) << 4));
		put_half(y + 82, max_min / q4scale);
	} else {
		put_half(y + 82, 0.f);
	}
	q2_codes(x, sc, get_half(y + 80), get_half(y + 82), L);
	pack_2bit(L, qs);
}

/* ---- Q3_K: u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d ---- */

/* The stored 6-bit scale of group j (0..63), as fmt_dequant_f32's Q3_K decoder reads it + 32. */
static int q3_stored_scale(const uint8_t *s, int j)
{
	const int low = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
	return low | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4);
}

/* Sixteen 6-bit scales l (0..63) into Q3_K's 12 bytes: low nibbles, then 2-bit high parts. */
static void q3_pack_scale(uint8_t *sc, int j, int l)
{
	if (j < 8)
		sc[j] = (uint8_t)(l & 0xF);
	else
		sc[j - 8] = (uint8_t)(sc[j - 8] | ((l & 0xF) << 4));
	l >>= 4;
	sc[j % 4 + 8] = (uint8_t)(sc[j % 4 + 8] | (l << (2 * (j / 4))));
}

/* The codes from the scales as stored, the third bits into hmask, the rest packed. */
static void q3_codes(const float *x, uint8_t *y, int8_t *L)
{
	uint8_t *hmask = y, *qs = y + 32, *sc = y + 96;
	const float d_all = get_half(y + 108);
	for (int j = 0; j < QK_K / 16; ++j) {
		const int8_t s = (int8_t)(q3_stored_scale(sc, j) - 32);
		const float d = d_all * (float)s;
		if (d == 0.0f || fmt_affine_codes_lanes(16, x + 16 * j, 0.f, d, -4, 3, 4, (uint8_t *)L + 16 * j))
			continue;
		for (int ii = 0; ii < 16; ++ii)
			L[16 * j + ii] = (int8_t)(clamp_int(nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
	}
	/* the third bit of element j: bit j/32 of hmask[j % 32]. Every code is in [0, 8) (here or
	 * from the search), so the bit is bit 2 of the code: no branch, which on real weights
	 * would go either way at random */
	memset(hmask, 0, QK_K / 8);
	for (int j = 0; j < QK_K; ++j) {
		hmask[j % 32] = (uint8_t)(hmask[j % 32] | ((L[j] >> 2) << (j / 32)));
		L[j] = (int8_t)(L[j] & 3);
	}
	pack_2bit((const uint8_t *)L, qs);
}

/* quantize_row_q3_K_impl: weights qw * sqrt(sigma2 + x^2) (sigma2 twice the mean square),
 * make_qx_quants per 16 elements and again for the sixteen scales (weighted by the groups'
 * weight sums). */
static void quantize_q3_k_weighted(const float *x, const float *qw, uint8_t *y)
{
	int8_t L[QK_K], Ls[QK_K / 16];
	float weight[16], sw[QK_K / 16], scales[QK_K / 16];
	const float sigma2 = fmt_k_sigma2(x, 2.f);
	for (int j = 0; j < QK_K / 16; ++j) {
		sw[j] = fmt_importance(x + 16 * j, qw + 16 * j, sigma2, 16, weight);
		scales[j] = fmt_make_qx_quants(16, 4, x + 16 * j, weight, L + 16 * j);
	}
	memset(y + 96, 0, 12);
	const float d_block = fmt_make_qx_quants(QK_K / 16, 32, scales, sw, Ls);
	for (int j = 0; j < QK_K / 16; ++j)
		q3_pack_scale(y + 96, j, Ls[j]);
	put_half(y + 108, d_block);
	q3_codes(x, y, L);
}

static void quantize_q3_k_block(const float *x, uint8_t *y)
{
	int8_t L[QK_K];
	float scales[QK_K / 16];
	uint8_t *sc = y + 96;
	float max_scale = 0, amax = 0;
	for (int j = fmt_q3_lanes(QK_K / 16, 16, 4, x, L, scales); j < QK_K / 16; ++j)
		scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
	for (int j = 0; j < QK_K / 16; ++j) {
		const float scale = fabsf(scales[j]);
		if (scale > amax) {
			amax = scale;
			max_scale = scales[j];
		}
	}
	memset(sc, 0, 12);
	if (max_scale != 0.0f) {
		const float iscale = -32.f / max_scale;
		for (int j = 0; j < QK_K / 16; ++j) {
			const int8_t l = (int8_t)nearest_int(iscale * scales[j]);
			q3_pack_scale(sc, j, clamp_int(l, -32, 31) + 32);
		}
		put_half(y + 108, 1 / iscale);
	} else {
		put_half(y + 108, 0.f);
	}
	q3_codes(x, y, L);
}

/* ---- Q4_K and Q5_K: half d; half dmin; u8 scales[12]; (Q5_K: u8 qh[32];) u8 qs[128] ---- */

float fmt_make_qkx3_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L, float *the_min)
{
	/* make_qkx3_quants is make_qkx2_quants but for "max <= min" (the same test on finite
	 * values: min is at most 0 and max at least min) and an early return without steps */
	uint8_t Laux[32];
	return make_qkx2_quants(n, nmax, x, weights, L, the_min, Laux, -0.9f, 0.05f, 36, 0);
}

/* make_qp_quants: codes in [0, nmax] (as uint8, as ggml keeps them) of n values x (a
 * super-block's scales or mins) and their scale, by weighted squared error over eight trial
 * scales, then at most five sweeps moving one code at a time. */
static float make_qp_quants(int n, int nmax, const float *x, uint8_t *L, const float *w)
{
	float max = 0;
	for (int i = 0; i < n; ++i)
		max = max > x[i] ? max : x[i];
	if (max < GROUP_MAX_EPS) {
		memset(L, 0, (size_t)n);
		return 0.f;
	}
	float iscale = (float)nmax / max;
	for (int i = 0; i < n; ++i)
		L[i] = (uint8_t)nearest_int(iscale * x[i]);
	const float scale = 1 / iscale;
	float best_mse = 0;
	for (int i = 0; i < n; ++i) {
		const float diff = x[i] - scale * (float)L[i];
		best_mse += w[i] * diff * diff;
	}
	for (int is = -4; is <= 4; ++is) {
		if (is == 0)
			continue;
		const float iscale_is = (0.1f * (float)is + (float)nmax) / max;
		const float scale_is = 1 / iscale_is;
		float mse = 0;
		for (int i = 0; i < n; ++i) {
			const int l = nearest_int(iscale_is * x[i]);
			const float diff = x[i] - scale_is * (float)(l < nmax ? l : nmax);
			mse += w[i] * diff * diff;
		}
		if (mse < best_mse) {
			best_mse = mse;
			iscale = iscale_is;
		}
	}
	float sumlx = 0, suml2 = 0;
	for (int i = 0; i < n; ++i) {
		const int l = nearest_int(iscale * x[i]);
		L[i] = (uint8_t)(l < nmax ? l : nmax);
		sumlx += w[i] * x[i] * (float)L[i];
		suml2 += w[i] * (float)L[i] * (float)L[i];
	}
	for (int itry = 0; itry < 5; ++itry) {
		int n_changed = 0;
		for (int i = 0; i < n; ++i) {
			float slx = sumlx - w[i] * x[i] * (float)L[i];
			float sl2 = suml2 - w[i] * (float)L[i] * (float)L[i];
			if (!(slx > 0 && sl2 > 0))
				continue;
			int new_l = nearest_int(x[i] * sl2 / slx);
			new_l = new_l < nmax ? new_l : nmax;
			if (new_l == L[i])
				continue;
			slx += w[i] * x[i] * (float)new_l;
			sl2 += w[i] * (float)new_l * (float)new_l;
			if (slx * slx * suml2 > sumlx * sumlx * sl2) {
				L[i] = (uint8_t)new_l;
				sumlx = slx;
				suml2 = sl2;
				++n_changed;
			}
		}
		if (!n_changed)
			break;
	}
	return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* The 12 scale bytes of Q4_K/Q5_K: group j's 6-bit scale and min (Ls, Lm), clamped to 63 or
 * not as each quantizer does. */
static void pack_k_scales(uint8_t *sc, const uint8_t *Ls, const uint8_t *Lm, int clamp63)
{
	for (int j = 0; j < QK_K / 32; ++j) {
		uint8_t ls = Ls[j], lm = Lm[j];
		if (clamp63) {
			ls = ls < 63 ? ls : 63;
			lm = lm < 63 ? lm : 63;
		}
		if (j < 4) {
			sc[j] = ls;
			sc[j + 4] = lm;
		} else {
			sc[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
			sc[j - 4] = (uint8_t)(sc[j - 4] | ((ls >> 4) << 6));
			sc[j] = (uint8_t)(sc[j] | ((lm >> 4) << 6));
		}
	}
}

/* The codes of each group from the scales and mins as stored (both Q4_K/Q5_K searches). */
static void kx_codes(const float *x, int nmax, const uint8_t *y, uint8_t *L)
{
	const uint8_t *sc = y + 4;
	const float d_all = get_half(y), dmin_all = get_half(y + 2);
	for (int j = 0; j < QK_K / 32; ++j) {
		uint8_t s, m;
		fmt_k_scale_min(sc, j, &s, &m);
		const float d = d_all * (float)s;
		if (d == 0.0f)
			continue;
		const float dm = dmin_all * (float)m;
		if (fmt_affine_codes_lanes(32, x + 32 * j, dm, d, 0, nmax, 0, L + 32 * j))
			continue;
		for (int ii = 0; ii < 32; ++ii)
			L[32 * j + ii] = (uint8_t)clamp_int(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax);
	}
}

/* quantize_row_q4_K_impl / _q5_K_impl with importance weights qw: per group weights
 * qw * sqrt(sigma2 + x^2) (sigma2 twice the super-block's mean square), make_qkx3_quants, and
 * the scales and mins coded by make_qp_quants weighted by the groups' weight sums. */
static void kx_groups_weighted(const float *x, const float *qw, int nmax, uint8_t *y, uint8_t *L)
{
	uint8_t Ls[QK_K / 32], Lm[QK_K / 32];
	float weights[32], sw[QK_K / 32], mins[QK_K / 32], scales[QK_K / 32];
	const float sigma2 = fmt_k_sigma2(x, 2.f);
	for (int j = 0; j < QK_K / 32; ++j) {
		sw[j] = fmt_importance(x + 32 * j, qw + 32 * j, sigma2, 32, weights);
		scales[j] = fmt_make_qkx3_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j]);
	}
	const float d_block = make_qp_quants(QK_K / 32, 63, scales, Ls, sw);
	const float m_block = make_qp_quants(QK_K / 32, 63, mins, Lm, sw);
	pack_k_scales(y + 4, Ls, Lm, nmax == 31);
	put_half(y, d_block);
	put_half(y + 2, m_block);
	kx_codes(x, nmax, y, L);
}


/* The weights of Q4_K/Q5_K's search for ngroups 32-element groups: av_x + |x|, av_x the
 * group's root mean square. */
static void kx_weights(const float *x, int ngroups, float *weights)
{
	for (int j = 0; j < ngroups; ++j) {
		float sum_x2 = 0;
		for (int l = 0; l < 32; ++l)
			sum_x2 += x[32 * j + l] * x[32 * j + l];
		const float av_x = sqrtf(sum_x2 / 32);
		for (int l = 0; l < 32; ++l)
			weights[32 * j + l] = av_x + fabsf(x[32 * j + l]);
	}
}

/* A super-block's eight fitted groups: their scales and mins as 6-bit multiples of d and
 * dmin, then the codes again with those. */
static void kx_finish(const float *x, int nmax, const float *scales, const float *mins, uint8_t *y, uint8_t *L)
{
	float max_scale = 0, max_min = 0;
	for (int j = 0; j < QK_K / 32; ++j) {
		if (scales[j] > max_scale)
			max_scale = scales[j];
		if (mins[j] > max_min)
			max_min = mins[j];
	}
	const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
	const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
	uint8_t Ls[QK_K / 32], Lm[QK_K / 32];
	for (int j = 0; j < QK_K / 32; ++j) {
		Ls[j] = (uint8_t)nearest_int(inv_scale * scales[j]);
		Lm[j] = (uint8_t)nearest_int(inv_min * mins[j]);
	}
	pack_k_scales(y + 4, Ls, Lm, 1);
	put_half(y, max_scale / 63.f);
	put_half(y + 2, max_min / 63.f);
	kx_codes(x, nmax, y, L);
}

#define K_RUN 2  /* super-blocks searched together: sixteen groups fill AVX-512's lanes */

/* nsb (at most K_RUN) consecutive super-blocks of Q4_K/Q5_K without importance weights: each
 * 32-element group fitted with make_qkx2_quants (weights av_x + |x|), then kx_finish. Codes
 * into L (256 per super-block), the scale bytes into y (block_bytes apart). */
static void kx_run(const float *x, int nsb, int nmax, float rmin, int nstep, uint8_t *y, size_t block_bytes,
		   uint8_t *L)
{
	float weights[K_RUN * QK_K], mins[K_RUN * QK_K / 32], scales[K_RUN * QK_K / 32];
	kx_weights(x, nsb * QK_K / 32, weights);
	fit_qkx2_groups(nsb * QK_K / 32, 32, nmax, x, weights, L, scales, mins, rmin, 0.1f, nstep, 0);
	for (int b = 0; b < nsb; ++b)
		kx_finish(x + b * QK_K, nmax, scales + b * QK_K / 32, mins + b * QK_K / 32, y + b * block_bytes,
			  L + b * QK_K);
}

static void q4_k_pack(const uint8_t *L, uint8_t *y)
{
	uint8_t *q = y + 16;
	for (int j = 0; j < QK_K; j += 64, q += 32)
		for (int l = 0; l < 32; ++l)
			q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
}

/* Codes in [0, 32): the fifth bit (bit 4) goes to qh without a branch, which on real weights
 * would go either way at random. */
static void q5_k_pack(const uint8_t *L, uint8_t *y)
{
	uint8_t *qh = y + 16, *ql = y + 48;
	memset(qh, 0, QK_K / 8);
	for (int n = 0, shift = 0; n < QK_K; n += 64, ql += 32, shift += 2) {
		for (int j = 0; j < 32; ++j) {
			const int l1 = L[n + j], l2 = L[n + j + 32];
			qh[j] = (uint8_t)(qh[j] | ((l1 >> 4) << shift) | ((l2 >> 4) << (shift + 1)));
			ql[j] = (uint8_t)((l1 & 15) | ((l2 & 15) << 4));
		}
	}
}

/* nsb super-blocks of Q4_K (nmax 15) or Q5_K (nmax 31) without importance weights: the
 * searches of quantize_row_q4_K_ref (rmin -1, 20 steps) and _q5_K_ref (rmin -0.5, 15 steps). */
static void kx_blocks(const float *x, int nsb, int nmax, uint8_t *y, size_t block_bytes)
{
	uint8_t L[K_RUN * QK_K];
	const int five = nmax == 31;
	kx_run(x, nsb, nmax, five ? -0.5f : -1.f, five ? 15 : 20, y, block_bytes, L);
	for (int b = 0; b < nsb; ++b)
		(five ? q5_k_pack : q4_k_pack)(L + b * QK_K, y + b * block_bytes);
}

/* One super-block of Q4_K or Q5_K, with importance weights qw or without (NULL). */
static void quantize_kx_block(const float *x, const float *qw, int nmax, uint8_t *y)
{
	uint8_t L[QK_K];
	if (!qw) {
		kx_blocks(x, 1, nmax, y, 0);
		return;
	}
	kx_groups_weighted(x, qw, nmax, y, L);
	(nmax == 31 ? q5_k_pack : q4_k_pack)(L, y);
}

/* ---- Q6_K: u8 ql[128]; u8 qh[64]; i8 scales[16]; half d ---- */

static void quantize_q6_k_block(const float *x, const float *qw, uint8_t *y)
{
	int8_t L[QK_K];
	float scales[QK_K / 16];
	float max_scale = 0, max_abs_scale = 0;
	for (int ib = fmt_qx_lanes(QK_K / 16, 16, 32, x, qw, L, scales); ib < QK_K / 16; ++ib)
		scales[ib] = fmt_make_qx_quants(16, 32, x + 16 * ib, qw ? qw + 16 * ib : NULL, L + 16 * ib);
	for (int ib = 0; ib < QK_K / 16; ++ib) {
		const float scale = scales[ib];
		const float abs_scale = fabsf(scale);
		if (abs_scale > max_abs_scale) {
			max_abs_scale = abs_scale;
			max_scale = scale;
		}
	}
	if (max_abs_scale < GROUP_MAX_EPS) {
		memset(y, 0, 210);
		put_half(y + 208, 0.f);
		return;
	}
	int8_t *sc = (int8_t *)(y + 192);
	const float iscale = -128.f / max_scale;
	put_half(y + 208, 1 / iscale);
	for (int ib = 0; ib < QK_K / 16; ++ib) {
		const int l = nearest_int(iscale * scales[ib]);
		sc[ib] = (int8_t)(l < 127 ? l : 127);
	}
	const float d_all = get_half(y + 208);
	for (int j = 0; j < QK_K / 16; ++j) {
		const float d = d_all * (float)sc[j];
		if (d == 0.0f || fmt_affine_codes_lanes(16, x + 16 * j, 0.f, d, -32, 31, 32, (uint8_t *)L + 16 * j))
			continue;
		for (int ii = 0; ii < 16; ++ii)
			L[16 * j + ii] = (int8_t)(clamp_int(nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
	}
	uint8_t *ql = y, *qh = y + 128;
	const uint8_t *u = (const uint8_t *)L;
	for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32) {
		for (int l = 0; l < 32; ++l) {
			ql[l] = (uint8_t)((u[j + l] & 0xF) | ((u[j + l + 64] & 0xF) << 4));
			ql[l + 32] = (uint8_t)((u[j + l + 32] & 0xF) | ((u[j + l + 96] & 0xF) << 4));
			qh[l] = (uint8_t)((u[j + l] >> 4) | ((u[j + l + 32] >> 4) << 2) | ((u[j + l + 64] >> 4) << 4) |
					  ((u[j + l + 96] >> 4) << 6));
		}
	}
}

/* ---- IQ4_NL (half d; u8 qs[16]) and IQ4_XS (half d; u16 scales_h; u8 scales_l[4]; u8 qs[128]) ---- */

#define IQ4_TRIES 7  /* trial scales either side, as quantize_iq4_nl / quantize_iq4_xs use */

/* The index of the nearest of the sixteen sorted IQ4 values (ties to the upper one only when
 * strictly nearer, as ggml's best_index_int8). */
static int iq4_best_index(float x)
{
	const float *val = fmt_iq4nl_values;
	if (x <= val[0])
		return 0;
	if (x >= val[15])
		return 15;
	int ml = 0, mu = 15;
	while (mu - ml > 1) {
		const int mav = (ml + mu) / 2;
		if (x < val[mav])
			mu = mav;
		else
			ml = mav;
	}
	return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

/* sumqx and sumq2 of the codes of id * x against x, weights x^2; codes into L when L. */
static float iq4_sums(const float *xb, const float *weight, float id, uint8_t *L, float *sumq2_out)
{
	float sumqx = 0, sumq2 = 0;
	for (int j = 0; j < 32; ++j) {
		const int l = iq4_best_index(id * xb[j]);
		if (L)
			L[j] = (uint8_t)l;
		const float q = fmt_iq4nl_values[l];
		const float w = weight[j];
		sumqx += w * q * xb[j];
		sumq2 += w * q * q;
	}
	*sumq2_out = sumq2;
	return sumqx;
}

/* The scale of one 32-element block (0 for an all-zero block, whose L is left as it is);
 * weights qw[j] * sqrt(sigma2 + x^2) with importance weights qw, else x^2. */
static float iq4_block_scale(const float *xb, const float *qw, float sigma2, uint8_t *L)
{
	float weight[32], amax, sumq2;
	if (qw)
		fmt_importance(xb, qw, sigma2, 32, weight);
	else
		for (int j = 0; j < 32; ++j)
			weight[j] = xb[j] * xb[j];
	const float max = signed_absmax(xb, 32, &amax);
	if (amax < GROUP_MAX_EPS)
		return 0;
	float d = -max / fmt_iq4nl_values[0];
	float id = 1 / d;
	float sumqx = iq4_sums(xb, weight, id, L, &sumq2);
	d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
	float best = d * sumqx;
	for (int itry = -IQ4_TRIES; itry <= IQ4_TRIES; ++itry) {
		id = ((float)itry + fmt_iq4nl_values[0]) / max; /* exact: small integers */
		sumqx = iq4_sums(xb, weight, id, NULL, &sumq2);
		if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
			d = sumqx / sumq2;
			best = d * sumqx;
		}
	}
	return d;
}

/* Sixteen bytes per 32 elements: low nibble element j, high nibble element j + 16. */
static void pack_iq4(const uint8_t *L, uint8_t *q4, int n)
{
	for (int i = 0; i < n / 32; ++i)
		for (int j = 0; j < 16; ++j)
			q4[16 * i + j] = (uint8_t)(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

/* sum x^2 * 2 / n over the super-block: the weights' sigma2 of quantize_row_iq4_nl_impl. */
static float iq4_sigma2(const float *x, int n)
{
	float sigma2 = 0;
	for (int j = 0; j < n; ++j)
		sigma2 += x[j] * x[j];
	return sigma2 * (2.f / (float)n);
}

/* The scales of ngroups consecutive 32-element groups (at most 2 super-blocks' worth):
 * weights qw * sqrt(sigma2 + x^2) with importance weights qw, else x^2; SIMD lanes where they
 * serve, iq4_block_scale for the rest. */
static void iq4_scales(const float *x, const float *qw, float sigma2, int ngroups, float *scales)
{
	float weight[K_RUN * QK_K];
	uint8_t L[32];
	if (qw)
		fmt_importance(x, qw, sigma2, 32 * ngroups, weight);
	else
		for (int j = 0; j < 32 * ngroups; ++j)
			weight[j] = x[j] * x[j];
	for (int ib = fmt_iq4_lanes(ngroups, x, weight, IQ4_TRIES, scales); ib < ngroups; ++ib)
		scales[ib] = iq4_block_scale(x + 32 * ib, qw ? qw + 32 * ib : NULL, sigma2, L);
}

/* An IQ4_NL block from its scale: the scale, then the codes of x / scale. */
static void iq4_nl_finish(const float *x, float scale, uint8_t *y)
{
	uint8_t L[32];
	put_half(y, scale);
	const float id = scale != 0.0f ? 1 / scale : 0;
	if (!fmt_iq4_codes_lanes(32, x, id, L))
		for (int j = 0; j < 32; ++j)
			L[j] = (uint8_t)iq4_best_index(id * x[j]);
	pack_iq4(L, y + 2, 32);
}

static void quantize_iq4_nl_block(const float *x, const float *qw, uint8_t *y)
{
	float scale;
	iq4_scales(x, qw, qw ? iq4_sigma2(x, 32) : 0.f, 1, &scale);
	iq4_nl_finish(x, scale, y);
}

/* An IQ4_XS super-block from its eight group scales: d from the largest, each group's 6-bit
 * multiple of d, the codes with those. */
static void iq4_xs_finish(const float *x, const float *scales, uint8_t *y)
{
	uint8_t L[QK_K];
	float max_scale = 0, amax_scale = 0;
	for (int ib = 0; ib < QK_K / 32; ++ib) {
		const float abs_d = fabsf(scales[ib]);
		if (abs_d > amax_scale) {
			amax_scale = abs_d;
			max_scale = scales[ib];
		}
	}
	uint16_t scales_h = 0;
	uint8_t *scales_l = y + 4;
	const float d = -max_scale / 32;
	put_half(y, d);
	const float id = d != 0.0f ? 1 / d : 0.f;
	for (int ib = 0; ib < QK_K / 32; ++ib) {
		int l = clamp_int(nearest_int(id * scales[ib]), -32, 31);
		const float dl = d * (float)l;
		const float idl = dl != 0.0f ? 1 / dl : 0.f;
		if (!fmt_iq4_codes_lanes(32, x + 32 * ib, idl, L + 32 * ib))
			for (int j = 0; j < 32; ++j)
				L[32 * ib + j] = (uint8_t)iq4_best_index(idl * x[32 * ib + j]);
		l += 32;
		const uint8_t l_l = (uint8_t)(l & 0xF), l_h = (uint8_t)(l >> 4);
		if (ib % 2 == 0)
			scales_l[ib / 2] = l_l;
		else
			scales_l[ib / 2] = (uint8_t)(scales_l[ib / 2] | (l_l << 4));
		scales_h = (uint16_t)(scales_h | (l_h << (2 * (ib % 8))));
	}
	fmt_wr_u16(y + 2, scales_h);
	memset(y + 8, 0, QK_K / 2);
	pack_iq4(L, y + 8, QK_K);
}

static void quantize_iq4_xs_block(const float *x, const float *qw, uint8_t *y)
{
	float scales[QK_K / 32];
	iq4_scales(x, qw, qw ? iq4_sigma2(x, QK_K) : 0.f, QK_K / 32, scales);
	iq4_xs_finish(x, scales, y);
}

void fmt_quantize_k_block_weighted(fmt_dtype t, const float *x, const float *qw, uint8_t *y)
{
	switch (t) {
	case FMT_DT_Q2_K:
		if (qw)
			quantize_q2_k_weighted(x, qw, y);
		else
			quantize_q2_k_block(x, y);
		break;
	case FMT_DT_Q3_K:
		if (qw)
			quantize_q3_k_weighted(x, qw, y);
		else
			quantize_q3_k_block(x, y);
		break;
	case FMT_DT_Q4_K: quantize_kx_block(x, qw, 15, y); break;
	case FMT_DT_Q5_K: quantize_kx_block(x, qw, 31, y); break;
	case FMT_DT_Q6_K: quantize_q6_k_block(x, qw, y); break;
	case FMT_DT_IQ4_NL: quantize_iq4_nl_block(x, qw, y); break;
	case FMT_DT_IQ4_XS: quantize_iq4_xs_block(x, qw, y); break;
	default: break;
	}
}

void fmt_quantize_k_block(fmt_dtype t, const float *x, uint8_t *y)
{
	fmt_quantize_k_block_weighted(t, x, NULL, y);
}

/* Up to K_RUN super-blocks (IQ4_NL: 16 blocks) of a type whose groups are searched together. */
static uint64_t k_run(fmt_dtype t, const float *x, uint8_t *y, uint64_t nblocks, size_t block_bytes)
{
	float scales[K_RUN * QK_K / 32];
	const int nsb = nblocks < K_RUN ? (int)nblocks : K_RUN;
	switch (t) {
	case FMT_DT_Q4_K: case FMT_DT_Q5_K:
		kx_blocks(x, nsb, t == FMT_DT_Q5_K ? 31 : 15, y, block_bytes);
		return (uint64_t)nsb;
	case FMT_DT_IQ4_XS:
		iq4_scales(x, NULL, 0.f, nsb * QK_K / 32, scales);
		for (int b = 0; b < nsb; ++b)
			iq4_xs_finish(x + b * QK_K, scales + b * QK_K / 32, y + b * block_bytes);
		return (uint64_t)nsb;
	case FMT_DT_IQ4_NL: {
		const int n = nblocks < K_RUN * QK_K / 32 ? (int)nblocks : K_RUN * QK_K / 32;
		iq4_scales(x, NULL, 0.f, n, scales);
		for (int b = 0; b < n; ++b)
			iq4_nl_finish(x + 32 * b, scales[b], y + b * block_bytes);
		return (uint64_t)n;
	}
	default:
		fmt_quantize_k_block(t, x, y);
		return 1;
	}
}

void fmt_quantize_k_blocks(fmt_dtype t, const float *x, uint8_t *y, uint64_t nblocks, size_t block_elems,
			   size_t block_bytes)
{
	while (nblocks > 0) {
		const uint64_t done = k_run(t, x, y, nblocks, block_bytes);
		x += done * block_elems;
		y += done * block_bytes;
		nblocks -= done;
	}
}
