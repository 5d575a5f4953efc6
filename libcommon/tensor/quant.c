/* ggml block formats: decoding to float32 and the Q8_0 / Q4_0 reference quantizers.
 * Arithmetic follows ggml's reference C code operation by operation in float32 (the project
 * builds with -ffp-contract=off, so no multiply-add is fused), which makes the results
 * bit-identical with an x86-64 build of ggml (specs/gguf.md §11, §12). */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/half.h"
#include "fmt/quant.h"

#define QK 32     /* elements per legacy block */
#define QK_K 256  /* elements per K-quant super-block */

static float rd_half(const uint8_t *p)
{
	return fmt_f16_to_f32(fmt_rd_u16(p));
}

static float rd_f32(const uint8_t *p)
{
	return fmt_bits_f32(fmt_rd_u32(p));
}

/* ---- legacy 32-element blocks ---- */

/* half d; u8 qs[16]: low nibble = element j, high nibble = element j+16 */
static void dec_q4_0(const uint8_t *b, float *y)
{
	const float d = rd_half(b);
	const uint8_t *qs = b + 2;
	for (int j = 0; j < QK / 2; j++) {
		y[j] = (float)((qs[j] & 0x0F) - 8) * d;
		y[j + QK / 2] = (float)((qs[j] >> 4) - 8) * d;
	}
}

/* half d; half m; u8 qs[16] */
static void dec_q4_1(const uint8_t *b, float *y)
{
	const float d = rd_half(b), m = rd_half(b + 2);
	const uint8_t *qs = b + 4;
	for (int j = 0; j < QK / 2; j++) {
		y[j] = (float)(qs[j] & 0x0F) * d + m;
		y[j + QK / 2] = (float)(qs[j] >> 4) * d + m;
	}
}

/* Fifth bit of element j (0..31) from the little-endian u32 qh. */
static int fifth_bit(uint32_t qh, int j)
{
	return (int)((qh >> j) & 1u) << 4;
}

/* half d; u8 qh[4]; u8 qs[16] */
static void dec_q5_0(const uint8_t *b, float *y)
{
	const float d = rd_half(b);
	const uint32_t qh = fmt_rd_u32(b + 2);
	const uint8_t *qs = b + 6;
	for (int j = 0; j < QK / 2; j++) {
		y[j] = (float)(((qs[j] & 0x0F) | fifth_bit(qh, j)) - 16) * d;
		y[j + QK / 2] = (float)(((qs[j] >> 4) | fifth_bit(qh, j + QK / 2)) - 16) * d;
	}
}

/* half d; half m; u8 qh[4]; u8 qs[16] */
static void dec_q5_1(const uint8_t *b, float *y)
{
	const float d = rd_half(b), m = rd_half(b + 2);
	const uint32_t qh = fmt_rd_u32(b + 4);
	const uint8_t *qs = b + 8;
	for (int j = 0; j < QK / 2; j++) {
		y[j] = (float)((qs[j] & 0x0F) | fifth_bit(qh, j)) * d + m;
		y[j + QK / 2] = (float)((qs[j] >> 4) | fifth_bit(qh, j + QK / 2)) * d + m;
	}
}

/* half d; i8 qs[32] */
static void dec_q8_0(const uint8_t *b, float *y)
{
	const float d = rd_half(b);
	for (int j = 0; j < QK; j++)
		y[j] = (float)(int8_t)b[2 + j] * d;
}

/* ---- K-quants (256-element super-blocks) ---- */

/* u8 scales[16]; u8 qs[64]; half d; half dmin. Sixteen 16-element groups, each with a 4-bit
 * scale (low nibble) and a 4-bit min (high nibble). Per 128 elements: 32 bytes of qs, whose
 * bit pairs 0-1, 2-3, 4-5, 6-7 hold the four 32-element quarters; within a quarter, bytes 0-15
 * give the first group and bytes 16-31 the second. */
static void dec_q2_k(const uint8_t *b, float *y)
{
	const float d = rd_half(b + 80), dmin = rd_half(b + 82);
	const uint8_t *scales = b, *q = b + 16;
	for (int half = 0; half < 2; half++, q += 32) {
		for (int shift = 0; shift < 8; shift += 2) {
			for (int part = 0; part < 2; part++) {
				const uint8_t sc = *scales++;
				const float dl = d * (float)(sc & 0x0F), ml = dmin * (float)(sc >> 4);
				for (int l = 0; l < 16; l++)
					*y++ = dl * (float)((q[16 * part + l] >> shift) & 3) - ml;
			}
		}
	}
}

/* The sixteen 6-bit signed scales of Q3_K (stored + 32): low 4 bits in the nibbles of bytes
 * 0-7 (groups 0-7 low nibbles, 8-15 high nibbles), top 2 bits in bytes 8-11 (group k uses bits
 * 2*(k/4) of byte 8 + k%4). */
static int q3_k_scale(const uint8_t *s, int k)
{
	const int low = k < 8 ? s[k] & 0x0F : s[k - 8] >> 4;
	const int high = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
	return (low | high << 4) - 32;
}

/* u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d. As Q2_K for the low two bits (no mins);
 * the third bit of element l of the k-th 32-element quarter is bit k of hmask[l], and a clear
 * bit subtracts 4. */
static void dec_q3_k(const uint8_t *b, float *y)
{
	const float d = rd_half(b + 108);
	const uint8_t *hm = b, *q = b + 32, *scales = b + 96;
	int group = 0, bit = 0;
	for (int half = 0; half < 2; half++, q += 32) {
		for (int shift = 0; shift < 8; shift += 2, bit++) {
			for (int part = 0; part < 2; part++) {
				const float dl = d * (float)q3_k_scale(scales, group++);
				for (int l = 16 * part; l < 16 * part + 16; l++) {
					const int low = (q[l] >> shift) & 3;
					const int sub = (hm[l] >> bit) & 1 ? 0 : 4;
					*y++ = dl * (float)(low - sub);
				}
			}
		}
	}
}

/* The 12 scale bytes of Q4_K/Q5_K hold eight 6-bit scales and eight 6-bit mins: sub-blocks 0-3
 * in the low 6 bits of bytes 0-3 (scales) and 4-7 (mins); sub-blocks 4-7 in the nibbles of
 * bytes 8-11 (scale low, min high) with their top two bits in bits 6-7 of bytes 0-3 (scales)
 * and 4-7 (mins). */
static void k_scale_min(const uint8_t *s, int sub, uint8_t *scale, uint8_t *min)
{
	if (sub < 4) {
		*scale = s[sub] & 63;
		*min = s[sub + 4] & 63;
	} else {
		*scale = (uint8_t)((s[sub + 4] & 0x0F) | ((s[sub - 4] >> 6) << 4));
		*min = (uint8_t)((s[sub + 4] >> 4) | ((s[sub] >> 6) << 4));
	}
}

/* half d; half dmin; u8 scales[12]; u8 qs[128]. Each 64 elements use 32 bytes of qs: low
 * nibbles for the first 32, high nibbles for the next 32. */
static void dec_q4_k(const uint8_t *b, float *y)
{
	const float d = rd_half(b), dmin = rd_half(b + 2);
	const uint8_t *scales = b + 4, *q = b + 16;
	for (int sub = 0; sub < 8; sub += 2, q += 32) {
		uint8_t sc, mn;
		k_scale_min(scales, sub, &sc, &mn);
		const float d1 = d * (float)sc, m1 = dmin * (float)mn;
		k_scale_min(scales, sub + 1, &sc, &mn);
		const float d2 = d * (float)sc, m2 = dmin * (float)mn;
		for (int l = 0; l < 32; l++)
			*y++ = d1 * (float)(q[l] & 0x0F) - m1;
		for (int l = 0; l < 32; l++)
			*y++ = d2 * (float)(q[l] >> 4) - m2;
	}
}

/* half d; half dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]. As Q4_K, plus a fifth bit per
 * element: element l of the k-th 32-element group takes bit k of qh[l]. */
static void dec_q5_k(const uint8_t *b, float *y)
{
	const float d = rd_half(b), dmin = rd_half(b + 2);
	const uint8_t *scales = b + 4, *qh = b + 16, *ql = b + 48;
	for (int sub = 0; sub < 8; sub += 2, ql += 32) {
		uint8_t sc, mn;
		k_scale_min(scales, sub, &sc, &mn);
		const float d1 = d * (float)sc, m1 = dmin * (float)mn;
		k_scale_min(scales, sub + 1, &sc, &mn);
		const float d2 = d * (float)sc, m2 = dmin * (float)mn;
		const uint8_t bit_lo = (uint8_t)(1u << sub), bit_hi = (uint8_t)(2u << sub);
		for (int l = 0; l < 32; l++)
			*y++ = d1 * (float)((ql[l] & 0x0F) + ((qh[l] & bit_lo) ? 16 : 0)) - m1;
		for (int l = 0; l < 32; l++)
			*y++ = d2 * (float)((ql[l] >> 4) + ((qh[l] & bit_hi) ? 16 : 0)) - m2;
	}
}

/* u8 ql[128]; u8 qh[64]; i8 scales[16]; half d. Per 128 elements: 64 bytes of ql (low nibbles
 * of bytes 0-31 -> elements 0-31, of bytes 32-63 -> 32-63, high nibbles -> 64-95, 96-127),
 * 32 bytes of qh (2 bits for each of the four quarters), 8 scales of 16 elements each. */
static void dec_q6_k(const uint8_t *b, float *y)
{
	const float d = rd_half(b + 208);
	const uint8_t *ql = b, *qh = b + 128;
	const int8_t *sc = (const int8_t *)(b + 192);
	for (int half = 0; half < 2; half++, y += 128, ql += 64, qh += 32, sc += 8) {
		for (int l = 0; l < 32; l++) {
			const int is = l / 16;
			const int q1 = ((ql[l] & 0x0F) | ((qh[l] & 3) << 4)) - 32;
			const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
			const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
			const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
			y[l] = d * (float)sc[is] * (float)q1;
			y[l + 32] = d * (float)sc[is + 2] * (float)q2;
			y[l + 64] = d * (float)sc[is + 4] * (float)q3;
			y[l + 96] = d * (float)sc[is + 6] * (float)q4;
		}
	}
}

/* f32 d; i8 qs[256]; i16 bsums[16] (bsums are only used by dot products) */
static void dec_q8_k(const uint8_t *b, float *y)
{
	const float d = rd_f32(b);
	for (int j = 0; j < QK_K; j++)
		y[j] = d * (float)(int8_t)b[4 + j];
}

/* ---- ternary, 1-bit and FP4 microscaled blocks ---- */

/* A base-3 digit packed by ggml's ternary types: byte * 3^n (mod 256) moves digit n to the
 * top, and (top * 3) >> 8 reads it (0, 1 or 2). */
static int ternary_digit(uint8_t byte, int n)
{
	static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
	const uint8_t shifted = (uint8_t)(byte * pow3[n]);
	return (shifted * 3) >> 8;
}

/* u8 qs[48]; u8 qh[4]; half d. Five digits per byte: bytes 0-31 give elements 0-159 (digit n
 * of byte m is element 32n + m), bytes 32-47 elements 160-239 (160 + 16n + m), and four digits
 * of each qh byte elements 240-255 (240 + 4n + j). Element value (digit - 1) * d. */
static void dec_tq1_0(const uint8_t *b, float *y)
{
	const float d = rd_half(b + 52);
	for (int n = 0; n < 5; n++)
		for (int m = 0; m < 32; m++)
			*y++ = (float)(ternary_digit(b[m], n) - 1) * d;
	for (int n = 0; n < 5; n++)
		for (int m = 0; m < 16; m++)
			*y++ = (float)(ternary_digit(b[32 + m], n) - 1) * d;
	for (int n = 0; n < 4; n++)
		for (int j = 0; j < 4; j++)
			*y++ = (float)(ternary_digit(b[48 + j], n) - 1) * d;
}

/* u8 qs[64]; half d. Per 128 elements 32 bytes; bit pair k of byte m is element 32k + m;
 * value (pair - 1) * d. */
static void dec_tq2_0(const uint8_t *b, float *y)
{
	const float d = rd_half(b + 64);
	for (int half = 0; half < 2; half++)
		for (int shift = 0; shift < 8; shift += 2)
			for (int m = 0; m < 32; m++)
				*y++ = (float)(((b[32 * half + m] >> shift) & 3) - 1) * d;
}

/* half d; u8 qs[16]: bit i%8 of byte i/8 set -> +d, clear -> -d (128 elements). */
static void dec_q1_0(const uint8_t *b, float *y)
{
	const float d = rd_half(b);
	for (int i = 0; i < 128; i++)
		y[i] = (b[2 + i / 8] >> (i % 8)) & 1 ? d : -d;
}

/* half d; u8 qs[16] (ggml's Q2_0, 64 elements): the 2-bit code of element j is bits
 * 2*(j%4) of byte j/4, worth (code - 1) * d. (Some llama.cpp forks give id 42 a 128-element,
 * 34-byte layout; such files do not match this block size and are refused when opened.) */
static void dec_q2_0(const uint8_t *b, float *y)
{
	const float d = rd_half(b);
	for (int j = 0; j < 64; j++)
		y[j] = (float)(((b[2 + j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
}

/* FP4 E2M1 values, doubled so they are integers; the block scales carry the factor 1/2. */
static const int8_t e2m1_doubled[16] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 };

/* E8M0 exponent e as 2^(e-127) / 2 (the half that undoes the doubled E2M1 values):
 * e = 0 and 1 are the float32 subnormals 2^-128 and 2^-127; e = 255 is 2^127, not NaN. */
static float e8m0_half(uint8_t e)
{
	return fmt_bits_f32(e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23);
}

/* u8 e; u8 qs[16]: low nibble element j, high nibble element j+16, value e2m1 * 2^(e-127). */
static void dec_mxfp4(const uint8_t *b, float *y)
{
	const float d = e8m0_half(b[0]);
	for (int j = 0; j < 16; j++) {
		y[j] = (float)e2m1_doubled[b[1 + j] & 0x0F] * d;
		y[j + 16] = (float)e2m1_doubled[b[1 + j] >> 4] * d;
	}
}

/* Unsigned E4M3 scale (bias 7, no sign), halved for the doubled E2M1 values; ggml reads 0x7F
 * (the NaN pattern) as 0. */
static float ue4m3_half(uint8_t x)
{
	if (x == 0 || x == 0x7F)
		return 0.0f;
	const int exp = (x >> 3) & 0x0F, man = x & 7;
	const float raw = exp == 0 ? ldexpf((float)man, -9) : ldexpf(1.0f + (float)man / 8.0f, exp - 7);
	return raw * 0.5f;
}

/* u8 d[4]; u8 qs[32]: four 16-element sub-blocks, sub-block s with scale d[s] and bytes
 * qs[8s .. 8s+7] (low nibbles elements 0-7, high nibbles 8-15). */
static void dec_nvfp4(const uint8_t *b, float *y)
{
	for (int s = 0; s < 4; s++, y += 16) {
		const float d = ue4m3_half(b[s]);
		const uint8_t *qs = b + 4 + 8 * s;
		for (int j = 0; j < 8; j++) {
			y[j] = (float)e2m1_doubled[qs[j] & 0x0F] * d;
			y[j + 8] = (float)e2m1_doubled[qs[j] >> 4] * d;
		}
	}
}

/* half d; half s; i8 qs[32] (s = d * sum(qs) serves dot products only). */
static void dec_q8_1(const uint8_t *b, float *y)
{
	const float d = rd_half(b);
	for (int j = 0; j < QK; j++)
		y[j] = (float)(int8_t)b[4 + j] * d;
}

typedef void (*block_decoder)(const uint8_t *block, float *y);

static block_decoder decoder_for(fmt_dtype t)
{
	switch (t) {
	case FMT_DT_Q4_0: return dec_q4_0;
	case FMT_DT_Q4_1: return dec_q4_1;
	case FMT_DT_Q5_0: return dec_q5_0;
	case FMT_DT_Q5_1: return dec_q5_1;
	case FMT_DT_Q8_0: return dec_q8_0;
	case FMT_DT_Q4_K: return dec_q4_k;
	case FMT_DT_Q5_K: return dec_q5_k;
	case FMT_DT_Q6_K: return dec_q6_k;
	case FMT_DT_Q8_K: return dec_q8_k;
	case FMT_DT_Q8_1: return dec_q8_1;
	case FMT_DT_Q2_K: return dec_q2_k;
	case FMT_DT_Q3_K: return dec_q3_k;
	case FMT_DT_TQ1_0: return dec_tq1_0;
	case FMT_DT_TQ2_0: return dec_tq2_0;
	case FMT_DT_Q1_0: return dec_q1_0;
	case FMT_DT_MXFP4: return dec_mxfp4;
	case FMT_DT_NVFP4: return dec_nvfp4;
	case FMT_DT_Q2_0: return dec_q2_0;
	default: return NULL; /* the IQ types: their decoding needs ggml's codebook tables */
	}
}

int fmt_dequant_supported(fmt_dtype t)
{
	return t == FMT_DT_F32 || t == FMT_DT_F16 || t == FMT_DT_BF16 || decoder_for(t) != NULL;
}

fmt_kind fmt_dequant_f32(fmt_dtype t, const uint8_t *src, uint64_t nelems, float *dst, fmt_err *e)
{
	const fmt_dtype_info *info = fmt_dtype_get(t);
	if (!info || !fmt_dequant_supported(t))
		return fmt_fail(e, FMT_UNSUPPORTED, "cannot decode %s data",
				info && info->name ? info->name : "unknown-type");
	switch (t) {
	case FMT_DT_F32:
		for (uint64_t i = 0; i < nelems; i++)
			dst[i] = rd_f32(src + 4 * i);
		return FMT_OK;
	case FMT_DT_F16:
		for (uint64_t i = 0; i < nelems; i++)
			dst[i] = fmt_f16_to_f32(fmt_rd_u16(src + 2 * i));
		return FMT_OK;
	case FMT_DT_BF16:
		for (uint64_t i = 0; i < nelems; i++)
			dst[i] = fmt_bf16_to_f32(fmt_rd_u16(src + 2 * i));
		return FMT_OK;
	default:
		break;
	}
	const uint64_t blck = info->block_elems, bsize = info->block_bits / 8;
	if (blck == 0 || nelems % blck != 0)
		return fmt_fail(e, FMT_INTERNAL, "cannot decode %llu %s elements: not a multiple of the block size %llu",
				(unsigned long long)nelems, info->name, (unsigned long long)blck);
	block_decoder dec = decoder_for(t);
	for (uint64_t b = 0; b < nelems / blck; b++)
		dec(src + b * bsize, dst + b * blck);
	return FMT_OK;
}

/* ---- quantizers ---- */

static int is_finite_f32(float f)
{
	return (fmt_f32_bits(f) & 0x7F800000u) != 0x7F800000u;
}

static fmt_kind check_input(const float *x, uint64_t nelems, fmt_err *e)
{
	if (nelems % QK != 0)
		return fmt_fail(e, FMT_INTERNAL, "cannot quantize %llu elements: not a multiple of 32",
				(unsigned long long)nelems);
	for (uint64_t i = 0; i < nelems; i++)
		if (!is_finite_f32(x[i]))
			return fmt_fail(e, FMT_INVALID_FORMAT,
					"tensor has NaN/Inf at element %llu; cannot quantize",
					(unsigned long long)i);
	return FMT_OK;
}

/* The low byte of (int32)f as x86-64 cvttss2si computes it: truncation toward zero, and
 * INT32_MIN (low byte 0) when f is out of range. ggml's "(int8_t)float" compiles to exactly
 * this; in-range values are only exceeded when a block of subnormals overflows 1/d. */
static uint8_t x86_trunc_low_byte(float f)
{
	int32_t i = (f > -2147483648.0f && f < 2147483648.0f) ? (int32_t)f : INT32_MIN;
	return (uint8_t)((uint32_t)i & 0xFFu);
}

/* roundf (half away from zero) for |f| < 2^23: the truncation is exact and so is the
 * remainder. Branch-free, so that the loops below vectorize. */
static inline int32_t round_half_away_small(float f)
{
	int32_t t = (int32_t)f;
	float rest = f - (float)t;
	return t + (rest >= 0.5f) - (rest <= -0.5f);
}

/* The general rule for any float, as ggml computes (int8_t)roundf(f) on x86-64. */
static uint8_t round_to_low_byte(float f)
{
	if (fabsf(f) < 8388608.0f)
		return (uint8_t)((uint32_t)round_half_away_small(f) & 0xFFu);
	return x86_trunc_low_byte(f);
}

fmt_kind fmt_quantize_q8_0(const float *x, uint8_t *dst, uint64_t nelems, fmt_err *e)
{
	fmt_kind k = check_input(x, nelems, e);
	if (k != FMT_OK)
		return k;
	for (uint64_t b = 0; b < nelems / QK; b++, x += QK, dst += 2 + QK) {
		float amax = 0.0f;
		for (int j = 0; j < QK; j++) {
			const float a = fabsf(x[j]);
			amax = a > amax ? a : amax;
		}
		const float d = amax / 127.0f;
		const float id = d != 0.0f ? 1.0f / d : 0.0f;
		fmt_wr_u16(dst, fmt_f32_to_f16(d));
		int8_t q[QK];
		if (isfinite(id)) {
			/* |x·id| <= ~127: every product is small, the fast rounding is exact. */
			for (int j = 0; j < QK; j++)
				q[j] = (int8_t)round_half_away_small(x[j] * id);
			memcpy(dst + 2, q, QK);
		} else {
			/* 1/d overflowed (a block of subnormals): products are Inf or NaN. */
			for (int j = 0; j < QK; j++)
				dst[2 + j] = round_to_low_byte(x[j] * id);
		}
	}
	return FMT_OK;
}

fmt_kind fmt_quantize_q4_0(const float *x, uint8_t *dst, uint64_t nelems, fmt_err *e)
{
	fmt_kind k = check_input(x, nelems, e);
	if (k != FMT_OK)
		return k;
	for (uint64_t b = 0; b < nelems / QK; b++, x += QK, dst += 2 + QK / 2) {
		float amax = 0.0f, max = 0.0f;
		for (int j = 0; j < QK; j++) {
			if (amax < fabsf(x[j])) { /* strict: the first extreme element wins */
				amax = fabsf(x[j]);
				max = x[j];
			}
		}
		const float d = max / -8.0f;
		const float id = d != 0.0f ? 1.0f / d : 0.0f;
		fmt_wr_u16(dst, fmt_f32_to_f16(d));
		uint8_t codes[QK];
		if (isfinite(id)) {
			/* u lies in [0, 16.5]: a plain truncation and a clamp. */
			for (int j = 0; j < QK; j++) {
				const float t = x[j] * id;
				const int32_t q = (int32_t)(t + 8.5f);
				codes[j] = (uint8_t)(q < 15 ? q : 15);
			}
		} else {
			for (int j = 0; j < QK; j++) {
				const float t = x[j] * id;
				const float u = t + 8.5f;
				const int q = (int8_t)x86_trunc_low_byte(u);
				codes[j] = (uint8_t)(q < 15 ? q : 15);
			}
		}
		for (int j = 0; j < QK / 2; j++)
			dst[2 + j] = (uint8_t)(codes[j] | (uint8_t)(codes[j + QK / 2] << 4));
	}
	return FMT_OK;
}
