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
/* Convolutions with 8 or more output channels and weights of at most NK_OVEC_WEIGHTS floats
 * vectorize over output channels, with the weights re-laid tap-major in the kernel scratch on
 * each run (a small copy); larger ones read their weights in place and vectorize over output
 * pixels of a padded planar copy of the input. */
#define NK_OVEC_WEIGHTS 65536
static inline int nk_conv_ovec(const nk_geom *g)
{
	return g->oc >= 8 && (unsigned long long)(g->kh * g->kw * g->c) * (unsigned long long)g->oc <= NK_OVEC_WEIGHTS;
}

static inline unsigned long long nk_conv_tmp(const nk_geom *g)
{
	if (nk_conv_ovec(g))
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
