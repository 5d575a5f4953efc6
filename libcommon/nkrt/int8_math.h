/* The integer arithmetic of upstream's int8 path (specs/nk.md §12.2, §12.8), exposed for the
 * unit tests that pin it down. */
#ifndef NK_INT8_MATH_H
#define NK_INT8_MATH_H

#include <stdint.h>

void fmt_nk_quantize_multiplier(double d, int32_t *mult, int32_t *shift);
int32_t fmt_nk_srdhm(int32_t a, int32_t b);
int32_t fmt_nk_rdivpot(int32_t x, int n);
int32_t fmt_nk_mulq(int32_t x, int32_t q, int32_t e);
/* n int8 logits of scale logit_scale (<= 0 means 1.0) to probabilities (scale 1/256, zero
 * point -128); x and y may be the same buffer. */
void fmt_nk_softmax_s8(const int8_t *x, int8_t *y, uint64_t n, float logit_scale);

#endif
