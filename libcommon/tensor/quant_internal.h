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
/* nblocks consecutive blocks of such a type (block_elems elements, block_bytes bytes each),
 * several searched together where SIMD lanes serve. */
void fmt_quantize_k_blocks(fmt_dtype t, const float *x, uint8_t *y, uint64_t nblocks, size_t block_elems,
			   size_t block_bytes);
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

/* The SIMD level the scale searches use: 0 portable C, 1 AVX2, 2 AVX-512 (the widest the CPU
 * runs, capped by FMTKIT_QUANT_SIMD=portable|avx2|avx512 (fmt/env.h) and by fmt_quant_use_simd). */
int fmt_quant_simd_level(void);

/* The searches of ngroups consecutive groups of n elements (n <= 32), one SIMD lane per group,
 * with the bytes of the portable searches: each returns how many leading groups it did (whole
 * SIMD widths; 0 at level 0), the caller does the rest. make_qkx2_quants (codes L, scales,
 * negated mins); make_qx_quants with rmse_type 1 (weights qw, NULL: x^2); the IQ4 block scale
 * of groups of 32 with their weights and 'tries' trial scales either side. */
int fmt_qkx2_lanes(int ngroups, int n, int nmax, const float *x, const float *weights, uint8_t *L, float *scales,
		   float *mins, float rmin, float rdelta, int nstep, int use_mad);
int fmt_qx_lanes(int ngroups, int n, int nmax, const float *x, const float *qw, int8_t *L, float *scales);
/* make_q3_quants (weights x^2) likewise: the groups done, from the first. */
int fmt_q3_lanes(int ngroups, int n, int nmax, const float *x, int8_t *L, float *scales);
int fmt_iq4_lanes(int ngroups, const float *x, const float *weight, int tries, float *scales);

/* Element-wise codes with SIMD lanes, 1 when done (n a multiple of the lanes), else 0 and the
 * caller's loop does them: clamp(nearest_int((x + add) / d), lo, hi) + offset (add 0 stands
 * for none: it only turns -0 into +0, whose code is the same); the IQ4 code of id * x. */
int fmt_affine_codes_lanes(int n, const float *x, float add, float d, int lo, int hi, int offset, uint8_t *L);
int fmt_iq4_codes_lanes(int n, const float *x, float id, uint8_t *L);

/* 1 when none of n floats is infinite or NaN, 0 when one is, -1 without SIMD (the caller
 * checks). */
int fmt_finite_lanes(const float *x, uint64_t n);

/* Q8_0 or Q4_0 blocks with SIMD and the checks fused: how many of the nblocks it wrote. It
 * stops before a block with an infinite or NaN element, an F16 scale that overflows or a 1/d
 * that does (a block of subnormals), and does none without SIMD or for another type: the
 * portable code takes it from there. */
uint64_t fmt_legacy_blocks_lanes(fmt_dtype t, const float *x, uint8_t *dst, uint64_t nblocks);

#endif
