/* Overflow of float32 values encoded as F16, BF16, Q8_0 or Q4_0: detection, saturation and the
 * refusal message. The thresholds are those of the encoders (fmt/half.h, fmt/quant.h). */
#include <math.h>
#include <string.h>
#include <strings.h>
#include "fmt/half.h"
#include "fmt/overflow.h"

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

int fmt_overflow_find(fmt_dtype to, const float *x, uint64_t n, uint64_t *at)
{
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
	for (uint64_t i = 0; i < n; i++) {
		const uint32_t mag = fmt_f32_bits(x[i]) & 0x7FFFFFFFu;
		if (mag >= 0x7F800000u)
			continue;
		if ((to == FMT_DT_F16 && fabsf(x[i]) >= 65520.0f) || (to == FMT_DT_BF16 && mag >= BF16_INF_FROM)) {
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
	return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': element %llu is %.9g, beyond what %s holds (%s)",
			tensor, (unsigned long long)elem, (double)value, fmt_dtype_name(to), limit);
}
