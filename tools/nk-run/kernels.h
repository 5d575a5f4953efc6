/* The float kernels nk-run's layers are built from; chosen once at start-up (AVX2 when the CPU
 * has it), bit-identical whichever runs. */
#ifndef NK_KERNELS_H
#define NK_KERNELS_H

#include <stddef.h>

/* Geometry of a convolution or pool over an h x w x c NHWC input. */
typedef struct nk_geom {
	long h, w, c;            /* input */
	long oh, ow, oc;         /* output */
	long kh, kw, stride, pad_t, pad_l, pad_b, pad_r;
} nk_geom;

/* Floats of kernel scratch a convolution over g needs (the padded planar input), and a
 * depthwise one (its weights re-laid). */
/* Convolutions with at most this many taps per output (kh * kw * C) and 8 or more output
 * channels vectorize over output channels; the rest over output pixels. */
#ifndef NK_OVEC_TAPS
#define NK_OVEC_TAPS 8
#endif

static inline unsigned long long nk_conv_tmp(const nk_geom *g)
{
	if (g->oc >= 8 && g->kh * g->kw * g->c <= NK_OVEC_TAPS)
		return (unsigned long long)(g->kh * g->kw * g->c) * (unsigned long long)g->oc;
	return (unsigned long long)g->c * (unsigned long long)(g->h + g->pad_t + g->pad_b) *
	       (unsigned long long)(g->w + g->pad_l + g->pad_r);
}
static inline unsigned long long nk_depthwise_tmp(const nk_geom *g)
{
	return (unsigned long long)g->c * (unsigned long long)(g->kh * g->kw);
}

/* Clamps the kernels apply as they store (the relu and relu6 activations). */
enum { NK_CLAMP_NONE = 0, NK_CLAMP_RELU = 1, NK_CLAMP_RELU6 = 2 };

typedef struct nk_kernels {
	const char *name;        /* "avx2" or "generic" */
	void (*dense)(const float *x, float *y, const float *w, const float *bias, size_t rows, size_t in,
		      size_t out, int act);
	/* tmp: nk_conv_tmp(g) / nk_depthwise_tmp(g) floats of scratch. */
	void (*conv2d)(const float *x, float *y, const nk_geom *g, const float *w, const float *bias, float *tmp,
		       int act);
	void (*depthwise)(const float *x, float *y, const nk_geom *g, const float *w, const float *bias, float *tmp,
			  int act);
} nk_kernels;

/* The kernels for this CPU; NK_KERNELS=generic in the environment forces the portable ones. */
const nk_kernels *nk_kernels_get(void);
const nk_kernels *nk_kernels_generic(void);

#endif
