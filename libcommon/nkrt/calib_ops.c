/* The quantized operations (conv2d, depthwise, dense) of a float network in the arithmetic of
 * upstream's calibration run, whose float32 results decide the activation ranges and so the
 * bytes of the int8 file. The runtime's kernels (fused multiply-adds, blocked sums) are a few
 * ulps away from it, which moves a scale by one ulp. What upstream's mnist_cnn_dw_int8.nk shows
 * on MNIST x_train[:128] (tests/interop/mnist_calibration): a convolution starts from its bias
 * and adds each tap's product, both rounded to float32, taps in (ky, kx, c) order (NetKit's
 * NumPy reference under NumPy 2); a dense layer's sum is the exact one rounded once (double
 * accumulation; float32 in index order lands 3 ulps low there, its BLAS 4, NumPy's pairwise
 * sum 1, fmtkit's kernels 1 high). The build's -ffp-contract=off keeps the products rounded. */
#include "nkrt_internal.h"

static float clamp(float v, unsigned act)
{
	if (act == NK_ACT_RELU)
		return v > 0.0f ? v : 0.0f;
	if (act == NK_ACT_RELU6)
		return v > 0.0f ? (v < 6.0f ? v : 6.0f) : 0.0f;
	return v; /* linear; a softmax op's range is not used (its output scale is fixed) */
}

/* The input row (column) that output row o's tap k reads, or -1 in the padding. */
static long tap(uint32_t o, uint32_t k, const nk_layer *l, uint32_t pad, uint32_t n)
{
	long at = (long)o * l->stride + k - pad;
	return at >= 0 && at < (long)n ? at : -1;
}

/* One output (oy, ox) of a convolution over its window: bias, then at each tap (ky, kx) in
 * the input n products x[pixel * C + c] w[(ky * kw + kx) * wstep + c], c < n, in order. A
 * conv2d's channel o: w its [kh, kw, C] weights, n = wstep = C; a depthwise's channel c: x and
 * w offset to channel c's, n = wstep = 1. */
static float window_sum(const nk_layer *l, const float *x, const float *w, uint32_t wstep, uint32_t n, float bias,
			uint32_t oy, uint32_t ox)
{
	float acc = bias;
	for (uint32_t ky = 0; ky < l->kh; ky++) {
		long iy = tap(oy, ky, l, l->pad_t, l->in.h);
		for (uint32_t kx = 0; iy >= 0 && kx < l->kw; kx++) {
			long ix = tap(ox, kx, l, l->pad_l, l->in.w);
			if (ix < 0)
				continue;
			const float *px = x + ((uint64_t)iy * l->in.w + (uint64_t)ix) * l->in.c;
			const float *pw = w + ((uint64_t)ky * l->kw + kx) * wstep;
			for (uint32_t c = 0; c < n; c++) {
				float product = px[c] * pw[c];
				acc = acc + product;
			}
		}
	}
	return acc;
}

/* Convolution weights [O, kh, kw, C], depthwise [C, kh, kw]. */
static void convolve(const nk_layer *l, const float *x, float *y, const float *w, const float *b)
{
	int dw = l->kind == NK_DEPTHWISE;
	uint64_t taps = (uint64_t)l->kh * l->kw * (dw ? 1 : l->in.c);
	for (uint32_t oy = 0; oy < l->out.h; oy++)
		for (uint32_t ox = 0; ox < l->out.w; ox++, y += l->out.c)
			for (uint32_t o = 0; o < l->out.c; o++)
				y[o] = clamp(dw ? window_sum(l, x + o, w + o * taps, 1, 1, b[o], oy, ox)
						: window_sum(l, x, w + o * taps, l->in.c, l->in.c, b[o], oy, ox),
					     l->act);
}

/* y[r, o] = W[o, :] . x[r, :] + bias[o], the products (exact in double) summed in double. */
static void dense(const nk_layer *l, const float *x, float *y, const float *w, const float *b)
{
	uint32_t in = l->in.c, out = l->units;
	for (uint32_t r = 0; r < l->in.h; r++, x += in, y += out)
		for (uint32_t o = 0; o < out; o++) {
			const float *wo = w + (uint64_t)o * in;
			double acc = b[o];
			for (uint32_t i = 0; i < in; i++)
				acc += (double)x[i] * wo[i];
			y[o] = clamp((float)acc, l->act);
		}
}

void fmt_nk_calib_layer(nk_engine *en, uint32_t i, const float *x, float *y)
{
	const nk_model *nm = en->nm;
	const nk_layer *l = &nm->layers[i];
	switch (l->kind) {
	case NK_CONV2D:
	case NK_DEPTHWISE:
		convolve(l, x, y, nm->weights[l->first_pair].data, nm->biases[l->first_pair].data);
		break;
	case NK_DENSE: dense(l, x, y, nm->weights[l->first_pair].data, nm->biases[l->first_pair].data); break;
	default: fmt_nk_float_layer(en, i, x, y); break;
	}
}
