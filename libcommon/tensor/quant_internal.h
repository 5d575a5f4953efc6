/* Shared by the block decoders and quantizers of quant.c and quant_k.c. */
#ifndef FMT_QUANT_INTERNAL_H
#define FMT_QUANT_INTERNAL_H

#include <stdint.h>
#include "fmt/quant.h"

/* The sixteen IQ4_NL / IQ4_XS code values (ggml's int8 kvalues_iq4nl, here as the floats
 * every use converts them to), sorted. */
extern const float fmt_iq4nl_values[16];

/* The 6-bit scale and min of 32-element group sub (0..7) from Q4_K/Q5_K's 12 scale bytes. */
void fmt_k_scale_min(const uint8_t *s, int sub, uint8_t *scale, uint8_t *min);

/* One block of a K-quant or IQ4 type (Q2_K..Q6_K, IQ4_NL, IQ4_XS) from its elements. */
void fmt_quantize_k_block(fmt_dtype t, const float *x, uint8_t *y);
/* The same with importance weights qw (the block's columns of an imatrix; NULL: none), as
 * quantize_row_*_impl uses them: Q6_K, IQ4_NL and IQ4_XS (the others ignore qw). */
void fmt_quantize_k_block_weighted(fmt_dtype t, const float *x, const float *qw, uint8_t *y);

/* make_qx_quants with rmse_type 1: codes L in [0, 2 nmax) of n elements and their scale,
 * weights qw (NULL: x^2). */
float fmt_make_qx_quants(int n, int nmax, const float *x, const float *qw, int8_t *L);

/* The importance weights of the weighted quantizers: w[j] = qw[j] * sqrt(sigma2 + x[j]^2) for
 * n elements; returns their sum (added in order). */
float fmt_importance(const float *x, const float *qw, float sigma2, int n, float *w);

/* The sigma2 of the weighted K-quants: factor * (sum of x^2 over the 256-element super-block)
 * / 256 (factor 2; Q2_K 1). */
float fmt_k_sigma2(const float *x, float factor);

/* make_qkx3_quants as the weighted Q4_1, Q5_1, Q4_K and Q5_K call it (rmin -0.9, rdelta 0.05,
 * 36 steps, squared error): codes L in [0, nmax], the scale, the min negated in *the_min. */
float fmt_make_qkx3_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L, float *the_min);

#endif
