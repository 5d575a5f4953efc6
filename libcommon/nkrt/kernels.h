/* The float and int8 kernels the runtime's layers are built from; chosen once at start-up (AVX-512 with VNNI, AVX-512
 * or AVX2 when the CPU has it), bit-identical whichever runs. */
#ifndef NK_KERNELS_H
#define NK_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* Geometry of a convolution or pool over an h x w x c NHWC input. */
typedef struct nk_geom {
	long h, w, c;            /* input */
	long oh, ow, oc;         /* output */
	long kh, kw, stride, pad_t, pad_l, pad_b, pad_r;
} nk_geom;

/* Kernels read their weights in place, in the file's layout. Those that vectorize over
 * channels load one block of channels' weights at a time into a stack tile of NK_WTILE floats
 * (32 KiB) and sweep every pixel with it. */
#define NK_WTILE 8192

/* Convolutions with 8 or more output channels and weights of at most NK_OVEC_WEIGHTS floats
 * vectorize over output channels, 8 * nv of them at a time (nv 4, 2 or 1: the widest whose
 * tile fits); 0: larger ones vectorize over output pixels of a padded planar copy of the
 * input. */
#define NK_OVEC_WEIGHTS 65536
static inline int nk_conv_ovec_nv(const nk_geom *g)
{
	unsigned long long kk = (unsigned long long)(g->kh * g->kw * g->c);
	if (g->oc < 8 || kk * (unsigned long long)g->oc > NK_OVEC_WEIGHTS)
		return 0;
	for (int nv = 4; nv >= 1; nv /= 2)
		if (g->oc >= 8 * nv && kk * 8u * (unsigned)nv <= NK_WTILE)
			return nv;
	return 0;
}

/* Floats of kernel scratch (activations: the padded planar input) a convolution over g needs. */
static inline unsigned long long nk_conv_tmp(const nk_geom *g)
{
	if (nk_conv_ovec_nv(g))
		return 0;
	return (unsigned long long)g->c * (unsigned long long)(g->h + g->pad_t + g->pad_b) *
	       (unsigned long long)(g->w + g->pad_l + g->pad_r);
}

/* Channels per block of a depthwise convolution (32, 16 or 8); 0: fewer than 8 channels or
 * more taps than a tile holds, computed scalar. */
static inline long nk_depthwise_nl(const nk_geom *g)
{
	unsigned long long kk = (unsigned long long)(g->kh * g->kw);
	for (long nl = 32; nl >= 8; nl /= 2)
		if (g->c >= nl && kk * (unsigned long long)nl <= NK_WTILE)
			return nl;
	return 0;
}

/* Requantization of one int8 op (§12.2, §12.3): per output channel multiplier and the left and
 * right shifts its exponent gives, zero points, and the clamp of its activation. */
typedef struct nk_rq {
	const int32_t *mult, *lsh, *rsh;
	int32_t in_zp, w_zp, out_zp, lo, hi;
} nk_rq;

/* Products per int32 partial sum of the int8 kernels: 32768 * 255 * 255 < 2^31. */
#define NK_QCHUNK 32768
/* Int8 depthwise: channels per block and the int16 weight tile (32 KiB: up to 256 taps). */
#define NK_QDW_BLOCK 64
#define NK_QDW_TILE 16384
/* Int8 dense rows of at most this many inputs run on int16 weight tiles of NK_QDW_BLOCK outputs. */
#define NK_QTILE_IN 64

/* Clamps the kernels apply as they store (the relu and relu6 activations). */
enum { NK_CLAMP_NONE = 0, NK_CLAMP_RELU = 1, NK_CLAMP_RELU6 = 2 };

typedef struct nk_kernels {
	const char *name;        /* "vnni", "avx512", "avx2" or "generic" */
	void (*dense)(const float *x, float *y, const float *w, const float *bias, size_t rows, size_t in,
		      size_t out, int act);
	/* tmp: nk_conv_tmp(g) floats of activation scratch. */
	void (*conv2d)(const float *x, float *y, const nk_geom *g, const float *w, const float *bias, float *tmp,
		       int act);
	void (*depthwise)(const float *x, float *y, const nk_geom *g, const float *w, const float *bias, int act);
	/* int8: acc is scratch of as many int32 as the op has output channels */
	void (*qdense)(const int8_t *x, int8_t *y, const int8_t *w, const int32_t *bias, long rows, long in, long out,
		       const nk_rq *rq, int32_t *acc);
	void (*qconv)(const int8_t *x, int8_t *y, const nk_geom *g, const int8_t *w, const int32_t *bias,
		      const nk_rq *rq, int32_t *acc);
	void (*qdw)(const int8_t *x, int8_t *y, const nk_geom *g, const int8_t *w, const int32_t *bias,
		    const nk_rq *rq);
	/* float max (is_max) or average pool */
	void (*pool)(const float *x, float *y, const nk_geom *g, int is_max);
	/* int8 max pool (a window without in-range cells gives 0) */
	void (*qmaxpool)(const int8_t *x, int8_t *y, const nk_geom *g);
	/* Builds that pre-pack int8 weights at load (NULL in the others): qpack lays out one op's
	 * weights (n_out output channels, n_w weights, depthwise or dense/pointwise), its bias less
	 * the input zero point's share and its requantization constants in its own layout, into
	 * *pk (one free()able block; NULL: this op runs on the plain kernels); -1: out of memory.
	 * qdense_pk and qdw_pk run an op so packed, with the plain kernels' arguments and results. */
	int (*qpack)(void **pk, int depthwise, const int8_t *w, const int32_t *bias, long n_w, long n_out,
		     const nk_rq *rq);
	void (*qdense_pk)(const void *pk, const int8_t *x, int8_t *y, const int8_t *w, const int32_t *bias, long rows,
			  long in, long out, const nk_rq *rq, int32_t *acc);
	void (*qdw_pk)(const void *pk, const int8_t *x, int8_t *y, const nk_geom *g, const int8_t *w,
		       const int32_t *bias, const nk_rq *rq);
	/* A packed depthwise op followed by the max pool over pool (the depthwise output's
	 * geometry), into the pool's output y when it can (1), else nothing (0). */
	int (*qdw_maxpool_pk)(const void *pk, const int8_t *x, int8_t *y, const nk_geom *g, const nk_geom *pool);
} nk_kernels;


#endif
