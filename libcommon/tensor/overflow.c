/* Overflow of float32 values encoded as F16, BF16, Q8_0 or Q4_0: detection, saturation and the
 * refusal message. The thresholds are those of the encoders (fmt/half.h, fmt/quant.h). */
#include <math.h>
#include <string.h>
#include <strings.h>
#include "fmt/half.h"
#include "fmt/overflow.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define F16_MAX 65504.0f
#define BF16_MAX_BITS 0x7F7F0000u      /* 3.3895314e38 */
#define BF16_INF_FROM 0x7F7F8000u      /* |x| bits from here round to infinity (RNE) */
#define QK 32

static const char *const mode_names[] = { "refuse", "saturate", "widen" };

int fmt_overflow_mode_from_name(const char *name, fmt_overflow_mode *mode)
{
	for (int i = 0; i < 3; i++) {
		if (strcasecmp(name, mode_names[i]) == 0) {
			*mode = (fmt_overflow_mode)i;
			return 1;
		}
	}
	return 0;
}

const char *fmt_overflow_mode_name(fmt_overflow_mode mode)
{
	return (unsigned)mode < 3 ? mode_names[mode] : "?";
}

static int can_overflow_to(fmt_dtype to)
{
	return to == FMT_DT_F16 || to == FMT_DT_BF16 || to == FMT_DT_Q8_0 || to == FMT_DT_Q4_0;
}

int fmt_overflow_possible(fmt_dtype from, fmt_dtype to)
{
	if (!can_overflow_to(to) || from == to)
		return 0;
	/* F16 values (at most 65504) fit BF16 and the Q8_0/Q4_0 scales; BF16 fits nothing smaller */
	return !(from == FMT_DT_F16 && to != FMT_DT_F16);
}

static int is_finite(float f)
{
	return (fmt_f32_bits(f) & 0x7F800000u) != 0x7F800000u;
}

static int f16_inf(uint16_t h)
{
	return (h & 0x7FFFu) == 0x7C00u;
}

/* Q8_0: d = amax / 127 as fp16 (specs/gguf.md §11). */
static int q8_0_block_overflows(const float *x, int *at)
{
	float amax = 0.0f;
	for (int j = 0; j < QK; j++) {
		const float a = fabsf(x[j]);
		if (is_finite(a) && a > amax) {
			amax = a;
			*at = j;
		}
	}
	return f16_inf(fmt_f32_to_f16(amax / 127.0f));
}

/* Q4_0: d = max / -8 as fp16, max the first element of largest magnitude (§12). */
static int q4_0_block_overflows(const float *x, int *at)
{
	float amax = 0.0f, max = 0.0f;
	for (int j = 0; j < QK; j++) {
		if (is_finite(x[j]) && amax < fabsf(x[j])) {
			amax = fabsf(x[j]);
			max = x[j];
			*at = j;
		}
	}
	return f16_inf(fmt_f32_to_f16(max / -8.0f));
}

/* 1 if some finite x[i] has |x[i]| >= the float whose bits are min_bits: integer compares on
 * the magnitude bits (below 2^31, so signed compares do), four at a time with SSE2. This screen
 * is the whole cost of the check on ordinary data. */
static int any_finite_at_least(const float *x, uint64_t n, uint32_t min_bits)
{
	uint64_t i = 0;
	uint32_t hit = 0;
#if defined(__SSE2__)
	const __m128i abs_mask = _mm_set1_epi32(0x7FFFFFFF), below = _mm_set1_epi32((int)min_bits - 1);
	const __m128i inf = _mm_set1_epi32(0x7F800000);
	__m128i any = _mm_setzero_si128();
	for (; i + 4 <= n; i += 4) {
		__m128i mag = _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)(x + i)), abs_mask);
		any = _mm_or_si128(any, _mm_and_si128(_mm_cmpgt_epi32(mag, below), _mm_cmplt_epi32(mag, inf)));
	}
	hit = (uint32_t)_mm_movemask_epi8(any);
#endif
	for (; i < n; i++) {
		uint32_t mag;
		memcpy(&mag, &x[i], sizeof mag);
		mag &= 0x7FFFFFFFu;
		hit |= (uint32_t)(mag >= min_bits) & (uint32_t)(mag < 0x7F800000u);
	}
	return hit != 0;
}

/* Below these magnitudes nothing can overflow: F16 and BF16 exactly; for Q8_0 and Q4_0 the
 * largest |x| whose scale stays within F16's largest finite value 65504 (blocks above it are
 * then checked exactly, as the quantizer computes the scale). */
static uint32_t screen_bits(fmt_dtype to)
{
	switch (to) {
	case FMT_DT_F16: return 0x477FF000u;            /* 65520 */
	case FMT_DT_BF16: return BF16_INF_FROM;
	case FMT_DT_Q8_0: return fmt_f32_bits(127.0f * F16_MAX);
	default: return fmt_f32_bits(8.0f * F16_MAX);
	}
}

int fmt_overflow_find(fmt_dtype to, const float *x, uint64_t n, uint64_t *at)
{
	if (!can_overflow_to(to) || !any_finite_at_least(x, n, screen_bits(to)))
		return 0;
	if (to == FMT_DT_Q8_0 || to == FMT_DT_Q4_0) {
		for (uint64_t b = 0; b + QK <= n; b += QK) {
			int j = 0;
			if (to == FMT_DT_Q8_0 ? q8_0_block_overflows(x + b, &j) : q4_0_block_overflows(x + b, &j)) {
				*at = b + (uint64_t)j;
				return 1;
			}
		}
		return 0;
	}
	const uint32_t from = screen_bits(to);
	for (uint64_t i = 0; i < n; i++) {
		const uint32_t mag = fmt_f32_bits(x[i]) & 0x7FFFFFFFu;
		if (mag >= from && mag < 0x7F800000u) {
			*at = i;
			return 1;
		}
	}
	return 0;
}

uint64_t fmt_overflow_saturate(fmt_dtype to, float *x, uint64_t n)
{
	const float max = to == FMT_DT_F16 ? F16_MAX : fmt_bits_f32(BF16_MAX_BITS);
	uint64_t changed = 0;
	if (to != FMT_DT_F16 && to != FMT_DT_BF16)
		return 0;
	for (uint64_t i = 0; i < n; i++) {
		if (is_finite(x[i]) && fabsf(x[i]) > max) {
			x[i] = copysignf(max, x[i]);
			changed++;
		}
	}
	return changed;
}

fmt_kind fmt_overflow_fail(fmt_err *e, const char *tensor, fmt_dtype to, uint64_t elem, float value)
{
	const char *limit;
	switch (to) {
	case FMT_DT_F16: limit = "largest finite value 65504"; break;
	case FMT_DT_BF16: limit = "largest finite value 3.3895314e+38"; break;
	case FMT_DT_Q8_0: limit = "a block's largest |x| must stay below 127 x 65520 = 8321040, or its F16 scale is infinite"; break;
	default: limit = "a block's largest |x| must stay below 8 x 65520 = 524160, or its F16 scale is infinite"; break;
	}
	return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': element %llu is %.9g, beyond what %s holds (%s; see --overflow)",
			tensor, (unsigned long long)elem, (double)value, fmt_dtype_name(to), limit);
}
