/* Inside libcommon/watermark: what watermark.c and watermark_ss.c share. */
#ifndef FMT_WATERMARK_SS_INTERNAL_H
#define FMT_WATERMARK_SS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* The vector units the loops may use (fmt_wm_use_simd): 2 AVX-512, 1 AVX2, 0 portable C. */
int fmt_wm_vector_isa(void);

/* A fmtkit-ss/2 spread (man/fmtkit-watermark.7, "THE GROUP'S SPREAD"): over the finite values v
 * of a slice that starts on a run boundary, their count and S1 = sum (v - c), S2 = sum (v - c)^2
 * in the page's exact order and precision (float32 lanes for a float32 tensor), so that every
 * implementation and every vector unit finds the same bits. */
typedef struct fmt_ss2_spread {
	uint64_t n;
	double s1, s2;
} fmt_ss2_spread;

/* n little-endian values of width 4 (c a float32) or 8 at p. */
void fmt_ss2_spread_of(const uint8_t *p, size_t n, int width, double c, fmt_ss2_spread *out);

/* What marking a run did: sums of v' - v, (v' - v)^2 and v (v' - v) over its finite values (in
 * lanes i mod 16, the same on every vector unit), their count, and how many changed. */
typedef struct fmt_ss2_change {
	double d, dd, vd;
	uint64_t finite, marked;
} fmt_ss2_change;

/* v' = v + delta_i rounded to the tensor's type toward v (|v' - v| <= |delta_i|), in place over
 * the len values at p (width 4 or 8, starting on a run boundary); values that are not finite
 * keep their bits. */
void fmt_ss2_mark_of(uint8_t *p, const double *delta, size_t len, int width, fmt_ss2_change *c);

#endif
