/* ggml block formats: decoding to float32, the legacy quantizers (Q8_0, Q4_0, Q4_1, Q5_0,
 * Q5_1) and the entry points of all quantizers (the K-quants and IQ4 are in quant_k.c).
 * Arithmetic follows ggml's reference C code operation by operation in float32 (the project
 * builds with -ffp-contract=off, so no multiply-add is fused), which makes the results
 * bit-identical with an x86-64 build of ggml (specs/gguf.md §11, §12). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/half.h"
#include "fmt/quant.h"
#include "quant_internal.h"

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
void fmt_k_scale_min(const uint8_t *s, int sub, uint8_t *scale, uint8_t *min)
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
		fmt_k_scale_min(scales, sub, &sc, &mn);
		const float d1 = d * (float)sc, m1 = dmin * (float)mn;
		fmt_k_scale_min(scales, sub + 1, &sc, &mn);
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
		fmt_k_scale_min(scales, sub, &sc, &mn);
		const float d1 = d * (float)sc, m1 = dmin * (float)mn;
		fmt_k_scale_min(scales, sub + 1, &sc, &mn);
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

/* ---- IQ4_NL and IQ4_XS: 4-bit indices into sixteen non-uniform values ---- */

const float fmt_iq4nl_values[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };

/* Sixteen bytes of 32 elements: low nibble element j, high nibble element j + 16. */
static void dec_iq4_group(const uint8_t *qs, float dl, float *y)
{
	for (int j = 0; j < 16; j++) {
		y[j] = dl * fmt_iq4nl_values[qs[j] & 0x0F];
		y[j + 16] = dl * fmt_iq4nl_values[qs[j] >> 4];
	}
}

/* half d; u8 qs[16] */
static void dec_iq4_nl(const uint8_t *b, float *y)
{
	dec_iq4_group(b + 2, rd_half(b), y);
}

/* half d; u16 scales_h; u8 scales_l[4]; u8 qs[128]. Group g (32 elements) has the 6-bit scale
 * (nibble g%2 of scales_l[g/2]) | (bits 2g of scales_h) << 4, minus 32. */
static void dec_iq4_xs(const uint8_t *b, float *y)
{
	const float d = rd_half(b);
	const uint16_t scales_h = fmt_rd_u16(b + 2);
	for (int g = 0; g < 8; g++) {
		const int ls = ((b[4 + g / 2] >> (4 * (g % 2))) & 0x0F) | (((scales_h >> (2 * g)) & 3) << 4);
		dec_iq4_group(b + 8 + 16 * g, d * (float)(ls - 32), y + 32 * g);
	}
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
	case FMT_DT_IQ4_NL: return dec_iq4_nl;
	case FMT_DT_IQ4_XS: return dec_iq4_xs;
	default: return NULL; /* the other IQ types: their decoding needs ggml's codebook tables */
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

static fmt_kind check_input(const float *x, uint64_t nelems, uint64_t block, fmt_err *e)
{
	if (nelems % block != 0)
		return fmt_fail(e, FMT_INTERNAL, "cannot quantize %llu elements: not a multiple of %llu",
				(unsigned long long)nelems, (unsigned long long)block);
	for (uint64_t i = 0; i < nelems; i++)
		if (!is_finite_f32(x[i]))
			return fmt_fail(e, FMT_INVALID_FORMAT,
					"tensor has NaN/Inf at element %llu; cannot quantize",
					(unsigned long long)i);
	return FMT_OK;
}

/* The low byte of (int32)f as x86-64 cvttss2si computes it: truncation toward zero, and
 * INT32_MIN (low byte 0) when f is out of range. ggml's "(int8_t)float" and "(uint8_t)float"
 * compile to exactly this; in-range values are only exceeded when a block of subnormals
 * overflows 1/d. */
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

/* ggml's "MIN(top, (int8_t)f)" as a code byte. */
static uint8_t min_int8_code(float f, int top)
{
	const int q = (int8_t)x86_trunc_low_byte(f);
	return (uint8_t)(q < top ? q : top);
}

static void q8_0_block(const float *x, uint8_t *dst)
{
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

/* The first element of largest magnitude ("amax < |v|": the first extreme wins). */
static float first_absmax(const float *x)
{
	float amax = 0.0f, max = 0.0f;
	for (int j = 0; j < QK; j++) {
		if (amax < fabsf(x[j])) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	}
	return max;
}

static void q4_0_block(const float *x, uint8_t *dst)
{
	const float d = first_absmax(x) / -8.0f;
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
		for (int j = 0; j < QK; j++)
			codes[j] = min_int8_code(x[j] * id + 8.5f, 15);
	}
	for (int j = 0; j < QK / 2; j++)
		dst[2 + j] = (uint8_t)(codes[j] | (uint8_t)(codes[j + QK / 2] << 4));
}

/* 32 5-bit codes of Q5_0 and Q5_1: the fifth bits in qh (u32), the low nibbles in qs (element
 * j low, j + 16 high). */
static void pack_5bit(const uint8_t *codes, uint8_t *qh_at, uint8_t *qs)
{
	uint32_t qh = 0;
	for (int j = 0; j < QK / 2; j++) {
		const uint8_t c0 = codes[j], c1 = codes[j + QK / 2];
		qs[j] = (uint8_t)((c0 & 0x0F) | ((c1 & 0x0F) << 4));
		qh |= ((c0 & 0x10u) >> 4) << j;
		qh |= ((c1 & 0x10u) >> 4) << (j + QK / 2);
	}
	fmt_wr_u32(qh_at, qh);
}

/* Q5_0: half d; u8 qh[4]; u8 qs[16]. d = max / -16, codes MIN(31, (int8)(x/d + 16.5)). */
static void q5_0_block(const float *x, uint8_t *dst)
{
	const float d = first_absmax(x) / -16.0f;
	const float id = d != 0.0f ? 1.0f / d : 0.0f;
	fmt_wr_u16(dst, fmt_f32_to_f16(d));
	uint8_t codes[QK];
	for (int j = 0; j < QK; j++)
		codes[j] = min_int8_code(x[j] * id + 16.5f, 31);
	pack_5bit(codes, dst + 2, dst + 6);
}

/* The smallest and largest element of a 32-element block (Q4_1, Q5_1). */
static void block_min_max(const float *x, float *min_out, float *max_out)
{
	float min = FLT_MAX, max = -FLT_MAX;
	for (int j = 0; j < QK; j++) {
		if (x[j] < min)
			min = x[j];
		if (x[j] > max)
			max = x[j];
	}
	*min_out = min;
	*max_out = max;
}

/* Q4_1 and Q5_1 start with half d = (max - min) / top, half m = min; 1/d (0 for d = 0) and
 * min are returned for the codes. */
static float write_scale_min(const float *x, float top, uint8_t *dst, float *min_out)
{
	float min, max;
	block_min_max(x, &min, &max);
	const float d = (max - min) / top;
	fmt_wr_u16(dst, fmt_f32_to_f16(d));
	fmt_wr_u16(dst + 2, fmt_f32_to_f16(min));
	*min_out = min;
	return d != 0.0f ? 1.0f / d : 0.0f;
}

/* Q4_1: half d; half m; u8 qs[16]. d = (max - min) / 15, m = min, codes
 * MIN(15, (int8)((x - min)/d + 0.5)). */
static void q4_1_block(const float *x, uint8_t *dst)
{
	float min;
	const float id = write_scale_min(x, 15.0f, dst, &min);
	for (int j = 0; j < QK / 2; j++) {
		const uint8_t c0 = min_int8_code((x[j] - min) * id + 0.5f, 15);
		const uint8_t c1 = min_int8_code((x[j + QK / 2] - min) * id + 0.5f, 15);
		dst[4 + j] = (uint8_t)(c0 | (c1 << 4));
	}
}

/* Q5_1: half d; half m; u8 qh[4]; u8 qs[16]. d = (max - min) / 31, codes
 * (uint8)((x - min)/d + 0.5), unclamped. */
static void q5_1_block(const float *x, uint8_t *dst)
{
	float min;
	const float id = write_scale_min(x, 31.0f, dst, &min);
	uint8_t codes[QK];
	for (int j = 0; j < QK; j++)
		codes[j] = x86_trunc_low_byte((x[j] - min) * id + 0.5f);
	pack_5bit(codes, dst + 4, dst + 8);
}

typedef void (*block_quantizer)(const float *x, uint8_t *dst);

/* The legacy quantizer of t, or NULL (the K-quants and IQ4 go through fmt_quantize_k_blocks). */
static block_quantizer legacy_quantizer(fmt_dtype t)
{
	switch (t) {
	case FMT_DT_Q8_0: return q8_0_block;
	case FMT_DT_Q4_0: return q4_0_block;
	case FMT_DT_Q4_1: return q4_1_block;
	case FMT_DT_Q5_0: return q5_0_block;
	case FMT_DT_Q5_1: return q5_1_block;
	default: return NULL;
	}
}

static int is_k_type(fmt_dtype t)
{
	return t == FMT_DT_Q2_K || t == FMT_DT_Q3_K || t == FMT_DT_Q4_K || t == FMT_DT_Q5_K ||
	       t == FMT_DT_Q6_K || t == FMT_DT_IQ4_NL || t == FMT_DT_IQ4_XS;
}

int fmt_quantize_supported(fmt_dtype t)
{
	return legacy_quantizer(t) != NULL || is_k_type(t);
}

void fmt_quantize_blocks(fmt_dtype t, const float *x, uint8_t *dst, uint64_t nblocks)
{
	const fmt_dtype_info *info = fmt_dtype_get(t);
	const uint64_t elems = info->block_elems, bytes = info->block_bits / 8;
	block_quantizer q = legacy_quantizer(t);
	if (!q) {
		fmt_quantize_k_blocks(t, x, dst, nblocks, (size_t)elems, (size_t)bytes);
		return;
	}
	for (uint64_t b = 0; b < nblocks; b++, x += elems, dst += bytes)
		q(x, dst);
}

/* Byte offsets of the F16 scales a block of t carries (d, and dmin or m); -1 ends the list.
 * ggml_validate_row_data checks the same fields after llama-quantize quantizes. */
static const int *scale_offsets(fmt_dtype t)
{
	static const int at0[] = { 0, -1 }, at01[] = { 0, 2, -1 }, q2k[] = { 80, 82, -1 };
	static const int q3k[] = { 108, -1 }, q6k[] = { 208, -1 };
	switch (t) {
	case FMT_DT_Q4_1: case FMT_DT_Q5_1: case FMT_DT_Q4_K: case FMT_DT_Q5_K: return at01;
	case FMT_DT_Q2_K: return q2k;
	case FMT_DT_Q3_K: return q3k;
	case FMT_DT_Q6_K: return q6k;
	default: return at0;
	}
}

/* The first block whose F16 scale is infinite or NaN, or -1. */
static int64_t first_bad_scale(fmt_dtype t, const uint8_t *dst, uint64_t nblocks, uint64_t bytes)
{
	const int *at = scale_offsets(t);
	for (uint64_t b = 0; b < nblocks; b++)
		for (int i = 0; at[i] >= 0; i++)
			if ((fmt_rd_u16(dst + b * bytes + (uint64_t)at[i]) & 0x7C00u) == 0x7C00u)
				return (int64_t)b;
	return -1;
}

/* llama-quantize's validation of the blocks written: no infinite or NaN F16 scale. */
static fmt_kind check_scales(fmt_dtype t, const uint8_t *dst, uint64_t nblocks, uint64_t first_elem, fmt_err *e)
{
	const fmt_dtype_info *info = fmt_dtype_get(t);
	/* Q8_0 and Q4_0 keep their own overflow rule (fmt/overflow.h): the scale is written as
	 * it comes, as before. */
	if (t == FMT_DT_Q8_0 || t == FMT_DT_Q4_0)
		return FMT_OK;
	const int64_t bad = first_bad_scale(t, dst, nblocks, info->block_bits / 8);
	if (bad >= 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "elements %llu to %llu are too large for %s: the block's "
				"F16 scale is infinite; cannot quantize",
				(unsigned long long)(first_elem + (uint64_t)bad * info->block_elems),
				(unsigned long long)(first_elem + (uint64_t)(bad + 1) * info->block_elems - 1), info->name);
	return FMT_OK;
}

fmt_kind fmt_quantize(fmt_dtype t, const float *x, uint8_t *dst, uint64_t nelems, uint64_t first_elem,
		      fmt_err *e)
{
	if (!fmt_quantize_supported(t))
		return fmt_fail(e, FMT_UNSUPPORTED, "cannot quantize to %s", fmt_dtype_name(t));
	const fmt_dtype_info *info = fmt_dtype_get(t);
	fmt_kind k = check_input(x, nelems, info->block_elems, e);
	if (k != FMT_OK)
		return k;
	const uint64_t nblocks = nelems / info->block_elems;
	fmt_quantize_blocks(t, x, dst, nblocks);
	return check_scales(t, dst, nblocks, first_elem, e);
}

static int block_finite(const float *x, uint64_t n)
{
	const int simd = fmt_finite_lanes(x, n);
	if (simd >= 0)
		return simd;
	uint32_t bad = 0;
	for (uint64_t i = 0; i < n; i++)
		bad |= (fmt_f32_bits(x[i]) & 0x7F800000u) == 0x7F800000u;
	return !bad;
}

/* One legacy block with the checks: 1 written, 0 not finite or (Q8_0, Q4_0) its F16 scale
 * overflowed. */
static int legacy_block_checked(fmt_dtype t, block_quantizer q, const float *x, uint8_t *dst)
{
	if (!block_finite(x, QK))
		return 0;
	q(x, dst);
	return !((t == FMT_DT_Q8_0 || t == FMT_DT_Q4_0) && (fmt_rd_u16(dst) & 0x7C00u) == 0x7C00u);
}

fmt_kind fmt_quantize_fused(fmt_dtype t, const float *x, uint8_t *dst, uint64_t nelems, uint64_t first_elem,
			    int *redo, fmt_err *e)
{
	const fmt_dtype_info *info = fmt_dtype_get(t);
	*redo = 1;
	if (!fmt_quantize_supported(t) || nelems % info->block_elems != 0)
		return FMT_OK;
	const uint64_t elems = info->block_elems, bytes = info->block_bits / 8, nblocks = nelems / elems;
	block_quantizer q = legacy_quantizer(t);
	if (q) {
		for (uint64_t b = 0; b < nblocks; b++) {
			b += fmt_legacy_blocks_lanes(t, x + b * elems, dst + b * bytes, nblocks - b);
			if (b < nblocks && !legacy_block_checked(t, q, x + b * elems, dst + b * bytes))
				return FMT_OK;
		}
	} else {
		if (!block_finite(x, nelems))
			return FMT_OK;
		fmt_quantize_blocks(t, x, dst, nblocks);
	}
	*redo = 0;
	return check_scales(t, dst, nblocks, first_elem, e);
}

/* Q4_0, Q4_1, Q5_0 and Q5_1 with importance weights (quantize_row_q4_0_impl ...): weights
 * qw[j] * sqrt(sigma2 + x^2), sigma2 the row's mean square; make_qx_quants finds codes and
 * scale, for the types with a min make_qkx3_quants codes, scale and min. */
static void weighted_32_block(fmt_dtype t, const float *x, const float *qw, float sigma2, uint8_t *dst)
{
	float weight[QK], min;
	uint8_t L[QK];
	const int with_min = t == FMT_DT_Q4_1 || t == FMT_DT_Q5_1, five = t == FMT_DT_Q5_0 || t == FMT_DT_Q5_1;
	fmt_importance(x, qw, sigma2, QK, weight);
	const float d = with_min ? fmt_make_qkx3_quants(QK, five ? 31 : 15, x, weight, L, &min)
				 : fmt_make_qx_quants(QK, five ? 16 : 8, x, weight, (int8_t *)L);
	uint8_t *qs = dst + (with_min ? 4 : 2);
	fmt_wr_u16(dst, fmt_f32_to_f16(d));
	if (with_min)
		fmt_wr_u16(dst + 2, fmt_f32_to_f16(-min));
	if (five) {
		pack_5bit(L, qs, qs + 4);
		return;
	}
	for (int j = 0; j < QK / 2; j++)
		qs[j] = (uint8_t)(L[j] | (L[j + QK / 2] << 4));
}

int fmt_quantize_weighted_supported(fmt_dtype t)
{
	return fmt_quantize_supported(t);
}

fmt_kind fmt_quantize_row_weighted(fmt_dtype t, const float *x, uint8_t *dst, uint64_t row_elems, const float *qw,
				   uint64_t first_elem, fmt_err *e)
{
	if (!qw)
		return fmt_quantize(t, x, dst, row_elems, first_elem, e);
	if (!fmt_quantize_weighted_supported(t))
		return fmt_fail(e, FMT_UNSUPPORTED, "quantizing to %s with an importance matrix is not implemented",
				fmt_dtype_name(t));
	const fmt_dtype_info *info = fmt_dtype_get(t);
	const uint64_t elems = info->block_elems, bytes = info->block_bits / 8, nblocks = row_elems / elems;
	fmt_kind k = check_input(x, row_elems, elems, e);
	if (k != FMT_OK)
		return k;
	float sum_x2 = 0;
	for (uint64_t j = 0; j < row_elems; j++)
		sum_x2 += x[j] * x[j];
	const float sigma2 = sum_x2 / (float)row_elems;
	for (uint64_t b = 0; b < nblocks; b++) {
		const float *xb = x + b * elems, *wb = qw + b * elems;
		if (t == FMT_DT_Q8_0)
			q8_0_block(xb, dst + b * bytes);   /* ggml's quantize_q8_0 ignores the weights */
		else if (legacy_quantizer(t))
			weighted_32_block(t, xb, wb, sigma2, dst + b * bytes);
		else
			fmt_quantize_k_block_weighted(t, xb, wb, dst + b * bytes);
	}
	return check_scales(t, dst, nblocks, first_elem, e);
}

fmt_kind fmt_quantize_q8_0(const float *x, uint8_t *dst, uint64_t nelems, fmt_err *e)
{
	return fmt_quantize(FMT_DT_Q8_0, x, dst, nelems, 0, e);
}

fmt_kind fmt_quantize_q4_0(const float *x, uint8_t *dst, uint64_t nelems, fmt_err *e)
{
	return fmt_quantize(FMT_DT_Q4_0, x, dst, nelems, 0, e);
}

fmt_dtype fmt_quantize_row_fallback(fmt_dtype t, uint64_t row_elems)
{
	fmt_dtype to = t;
	if (row_elems % fmt_dtype_get(t)->block_elems == 0)
		return t;
	switch (t) {
	case FMT_DT_Q2_K: case FMT_DT_Q3_K: case FMT_DT_TQ1_0: case FMT_DT_TQ2_0: case FMT_DT_Q2_0:
		to = FMT_DT_Q4_0; break;
	case FMT_DT_Q4_K: to = FMT_DT_Q5_0; break;
	case FMT_DT_Q5_K: to = FMT_DT_Q5_1; break;
	case FMT_DT_Q6_K: to = FMT_DT_Q8_0; break;
	case FMT_DT_IQ4_XS: case FMT_DT_IQ1_S: case FMT_DT_IQ1_M: case FMT_DT_IQ2_XXS: case FMT_DT_IQ2_XS:
	case FMT_DT_IQ2_S: case FMT_DT_IQ3_XXS: case FMT_DT_IQ3_S:
		to = FMT_DT_IQ4_NL; break;
	default: break;
	}
	return row_elems % fmt_dtype_get(to)->block_elems == 0 ? to : FMT_DT_F16;
}
