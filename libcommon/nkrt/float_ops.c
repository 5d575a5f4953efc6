/* Float (v3) layers, specs/nk.md §11. Each writes its output to y; composite layers use the
 * engine's scratch, sized by fmt_nk_float_scratch when the engine is planned. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "nkrt_internal.h"

static const float *wt(const nk_engine *en, uint32_t p)
{
	return en->nm->weights[p].data;
}

static const float *bs(const nk_engine *en, uint32_t p)
{
	return en->nm->biases[p].data;
}

/* ---- element-wise ---- */

static void softmax(float *y, uint64_t n)
{
	float max = y[0];
	for (uint64_t i = 1; i < n; i++)
		if (y[i] > max)
			max = y[i];
	float sum = 0.0f;
	for (uint64_t i = 0; i < n; i++) {
		y[i] = expf(y[i] - max);
		sum += y[i];
	}
	float inv = 1.0f / sum;
	for (uint64_t i = 0; i < n; i++)
		y[i] *= inv;
}

static void activate(float *restrict y, uint64_t n, unsigned act, float alpha)
{
	switch (act) {
	case NK_ACT_RELU:
		for (uint64_t i = 0; i < n; i++)
			y[i] = y[i] > 0.0f ? y[i] : 0.0f;
		break;
	case NK_ACT_RELU6:
		for (uint64_t i = 0; i < n; i++)
			y[i] = y[i] > 0.0f ? (y[i] < 6.0f ? y[i] : 6.0f) : 0.0f;
		break;
	case NK_ACT_SIGMOID:
		for (uint64_t i = 0; i < n; i++)
			y[i] = 1.0f / (1.0f + expf(-y[i]));
		break;
	case NK_ACT_TANH:
		for (uint64_t i = 0; i < n; i++)
			y[i] = tanhf(y[i]);
		break;
	case NK_ACT_LEAKY:
		for (uint64_t i = 0; i < n; i++)
			y[i] = y[i] > 0.0f ? y[i] : alpha * y[i];
		break;
	case NK_ACT_SOFTMAX:
		softmax(y, n);
		break;
	default:
		break;
	}
}

static void silu(float *restrict y, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		y[i] = y[i] * (1.0f / (1.0f + expf(-y[i])));
}

static void gelu_tanh(float *restrict y, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		float u = y[i];
		y[i] = 0.5f * u * (1.0f + tanhf(0.7978845608f * (u + 0.044715f * u * u * u)));
	}
}

/* y = y * scale[c] + shift[c] (folded batch norm). */
static void batchnorm(float *restrict y, uint64_t pixels, uint64_t C, const float *restrict scale,
		      const float *restrict shift)
{
	for (uint64_t p = 0; p < pixels; p++, y += C)
		for (uint64_t c = 0; c < C; c++)
			y[c] = y[c] * scale[c] + shift[c];
}

static void add(float *restrict y, const float *restrict x, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		y[i] += x[i];
}

/* §11.8, per pixel over channels, in place. */
static void layernorm(float *restrict y, uint64_t pixels, uint64_t C, float eps, const float *restrict gamma,
		      const float *restrict beta)
{
	for (uint64_t p = 0; p < pixels; p++, y += C) {
		float mean = 0.0f, var = 0.0f;
		for (uint64_t c = 0; c < C; c++)
			mean += y[c];
		mean /= (float)C;
		for (uint64_t c = 0; c < C; c++)
			var += (y[c] - mean) * (y[c] - mean);
		var /= (float)C;
		float inv = 1.0f / sqrtf(var + eps);
		for (uint64_t c = 0; c < C; c++)
			y[c] = (y[c] - mean) * inv * gamma[c] + beta[c];
	}
}

/* ---- convolutions ---- */

static nk_geom geom(nk_shape in, nk_shape out, uint32_t kh, uint32_t kw, uint32_t stride, uint32_t pt, uint32_t pl,
		    uint32_t pb, uint32_t pr)
{
	return (nk_geom){ in.h, in.w, in.c, out.h, out.w, out.c, kh, kw, stride, pt, pl, pb, pr };
}

static nk_geom layer_geom(const nk_layer *l)
{
	return geom(l->in, l->out, l->kh, l->kw, l->stride, l->pad_t, l->pad_l, l->pad_b, l->pad_r);
}

static uint32_t out_dim(uint32_t n, uint32_t k, uint32_t s, uint32_t p)
{
	return (n + 2 * p - k) / s + 1;
}

/* 1x1 convolution with stride 1: a dense layer over the pixels. */
static void pointwise(const nk_engine *en, const float *x, float *y, uint64_t pixels, uint32_t in, uint32_t out,
		      uint32_t p)
{
	en->k->dense(x, y, wt(en, p), bs(en, p), pixels, in, out, NK_CLAMP_NONE);
}

/* k x k depthwise or full convolution with symmetric padding. */
static void conv_sym(const nk_engine *en, int depthwise, const float *x, float *y, nk_shape in, uint32_t oc,
		     uint32_t k, uint32_t stride, uint32_t pad, uint32_t p, nk_shape *out)
{
	nk_shape o = { out_dim(in.h, k, stride, pad), out_dim(in.w, k, stride, pad), oc, 0 };
	nk_geom g = geom(in, o, k, k, stride, pad, pad, pad, pad);
	if (depthwise)
		en->k->depthwise(x, y, &g, wt(en, p), bs(en, p), NK_CLAMP_NONE);
	else
		en->k->conv2d(x, y, &g, wt(en, p), bs(en, p), en->ktmp, NK_CLAMP_NONE);
	if (out)
		*out = o;
}

/* ---- composite layers ---- */

static void convnext(const nk_engine *en, const nk_layer *l, const float *x, float *y, float *s)
{
	uint64_t C = l->units, hw = (uint64_t)l->in.h * l->in.w;
	uint32_t p = l->first_pair;
	float *t = s, *u = s + hw * C, *g = u + hw * 4 * C;
	conv_sym(en, 1, x, t, l->in, (uint32_t)C, 7, 1, 3, p, NULL);
	layernorm(t, hw, C, l->eps, wt(en, p + 1), bs(en, p + 1));
	pointwise(en, t, u, hw, (uint32_t)C, (uint32_t)(4 * C), p + 2);
	gelu_tanh(u, hw * 4 * C);
	/* GRN over the plane: the square sums in double, as upstream accumulates them. */
	float mean = 0.0f;
	for (uint64_t c = 0; c < 4 * C; c++) {
		double sq = 0.0;
		for (uint64_t i = 0; i < hw; i++)
			sq += (double)u[i * 4 * C + c] * u[i * 4 * C + c];
		g[c] = sqrtf((float)sq);
		mean += g[c];
	}
	mean /= (float)(4 * C);
	const float *gamma = wt(en, p + 3), *beta = bs(en, p + 3);
	for (uint64_t c = 0; c < 4 * C; c++)
		g[c] = g[c] / (mean + l->eps);
	for (uint64_t i = 0; i < hw; i++)
		for (uint64_t c = 0; c < 4 * C; c++) {
			float v = u[i * 4 * C + c];
			u[i * 4 * C + c] = gamma[c] * (v * g[c]) + beta[c] + v;
		}
	pointwise(en, u, y, hw, (uint32_t)(4 * C), (uint32_t)C, p + 4);
	add(y, x, hw * C);
}

static void uib(const nk_engine *en, const nk_layer *l, const float *x, float *y, float *s)
{
	float *s1 = s, *s2 = s + fmt_nk_uib_stage(l);
	uint32_t p = l->first_pair, E = l->expanded;
	nk_shape cur = l->in;
	const float *src = x;
	if (l->start_dw) {
		conv_sym(en, 1, src, s1, cur, l->in_ch, l->start_dw, l->start_stride, (l->start_dw - 1u) / 2, p, &cur);
		batchnorm(s1, (uint64_t)cur.h * cur.w, l->in_ch, wt(en, p + 1), bs(en, p + 1));
		src = s1;
		p += 2;
	}
	uint64_t px = (uint64_t)cur.h * cur.w;
	pointwise(en, src, s2, px, l->in_ch, E, p);
	batchnorm(s2, px, E, wt(en, p + 1), bs(en, p + 1));
	activate(s2, px * E, NK_ACT_RELU, 0.0f);
	src = s2;
	p += 2;
	cur.c = E;
	if (l->middle_dw) {
		conv_sym(en, 1, src, s1, cur, E, l->middle_dw, l->middle_stride, (l->middle_dw - 1u) / 2, p, &cur);
		px = (uint64_t)cur.h * cur.w;
		batchnorm(s1, px, E, wt(en, p + 1), bs(en, p + 1));
		activate(s1, px * E, NK_ACT_RELU, 0.0f);
		src = s1;
		p += 2;
	}
	pointwise(en, src, y, px, E, l->out_ch, p);
	batchnorm(y, px, l->out_ch, wt(en, p + 1), bs(en, p + 1));
	if (l->uib_stride == 1 && l->in_ch == l->out_ch)
		add(y, x, nk_shape_count(l->out));
}

static void resnet(const nk_engine *en, const nk_layer *l, const float *x, float *y, float *s)
{
	uint64_t n = nk_shape_count(l->out), px = (uint64_t)l->out.h * l->out.w;
	uint32_t p = l->first_pair, O = l->out_ch;
	float *a = s, *sc = s + n;
	conv_sym(en, 0, x, a, l->in, O, 3, l->stride, 1, p, NULL);
	batchnorm(a, px, O, wt(en, p + 1), bs(en, p + 1));
	activate(a, n, NK_ACT_RELU, 0.0f);
	conv_sym(en, 0, a, y, l->out, O, 3, 1, 1, p + 2, NULL);
	batchnorm(y, px, O, wt(en, p + 3), bs(en, p + 3));
	if (l->n_pairs == 6) {
		conv_sym(en, 0, x, sc, l->in, O, 1, l->stride, 0, p + 4, NULL);
		batchnorm(sc, px, O, wt(en, p + 5), bs(en, p + 5));
		add(y, sc, n);
	} else {
		add(y, x, n);
	}
	activate(y, n, NK_ACT_RELU, 0.0f);
}

static uint64_t head_scratch(uint64_t px, uint64_t hid, uint64_t nc)
{
	return px * (3 * hid + nc + 5);
}

/* §11.12 decoupled head on an h x w x in input, pairs from p; y is h x w x (5 + nc). */
static void head(const nk_engine *en, const float *x, float *y, nk_shape in, uint32_t hid, uint32_t nc,
		 uint32_t convs, uint32_t p, float *s)
{
	uint64_t px = (uint64_t)in.h * in.w;
	float *stem = s, *f[2] = { s + px * hid, s + 2 * px * hid }, *cls = s + 3 * px * hid, *reg = cls + px * nc,
	      *obj = reg + px * 4;
	nk_shape hs = { in.h, in.w, hid, 0 };
	pointwise(en, x, stem, px, in.c, hid, p);
	silu(stem, px * hid);
	for (int branch = 0; branch < 2; branch++) {
		const float *cur = stem;
		for (uint32_t i = 0; i < convs; i++) {
			conv_sym(en, 0, cur, f[i & 1], hs, hid, 3, 1, 1, p + 1 + branch * convs + i, NULL);
			silu(f[i & 1], px * hid);
			cur = f[i & 1];
		}
		if (branch == 0) {
			pointwise(en, cur, cls, px, hid, nc, p + 1 + 2 * convs);
		} else {
			pointwise(en, cur, reg, px, hid, 4, p + 2 + 2 * convs);
			pointwise(en, cur, obj, px, hid, 1, p + 3 + 2 * convs);
		}
	}
	for (uint64_t i = 0; i < px; i++) {
		float *o = y + i * (5 + nc);
		memcpy(o, reg + i * 4, 4 * sizeof(float));
		o[4] = obj[i];
		memcpy(o + 5, cls + i * nc, nc * sizeof(float));
	}
}

/* z = a + up2(b): b is half the height and width of a. */
static void add_up2(float *restrict z, const float *restrict a, const float *restrict b, nk_shape as)
{
	uint64_t C = as.c;
	for (uint64_t yy = 0; yy < as.h; yy++)
		for (uint64_t xx = 0; xx < as.w; xx++) {
			const float *bp = b + ((yy / 2) * (as.w / 2) + xx / 2) * C;
			const float *ap = a + (yy * as.w + xx) * C;
			float *zp = z + (yy * as.w + xx) * C;
			for (uint64_t c = 0; c < C; c++)
				zp[c] = ap[c] + bp[c];
		}
}

/* SiLU(pw(dw3x3(x, stride))) into y; d is the depthwise temporary. */
static void dwpw(const nk_engine *en, const float *x, float *y, float *d, nk_shape in, uint32_t stride, uint32_t p,
		 nk_shape *out)
{
	conv_sym(en, 1, x, d, in, in.c, 3, stride, 1, p, out);
	uint64_t px = (uint64_t)out->h * out->w;
	pointwise(en, d, y, px, in.c, in.c, p + 1);
	silu(y, px * in.c);
}

static uint64_t pafpn_scratch(const nk_layer *l)
{
	uint64_t A = (uint64_t)l->in.h * l->in.w, H = l->hidden;
	return 78 * A * H + head_scratch(16 * A, H, l->classes);
}

static void pafpn(const nk_engine *en, const nk_layer *l, const float *x, float *y, float *s)
{
	uint64_t A = (uint64_t)l->in.h * l->in.w, H = l->hidden;
	uint32_t h5 = l->in.h, w5 = l->in.w, p = l->first_pair, hs = 4 + 2 * l->convs; /* stem, 2 x convs, 3 predictions */
	float *l5 = s, *l4 = l5 + A * H, *l3 = l4 + 4 * A * H, *t = l3 + 16 * A * H, *d = t + 16 * A * H,
	      *p4 = d + 16 * A * H, *p3 = p4 + 4 * A * H, *n4 = p3 + 16 * A * H, *n5 = n4 + 4 * A * H,
	      *hscratch = n5 + A * H;
	nk_shape s5 = { h5, w5, (uint32_t)H, 0 }, s4 = { 2 * h5, 2 * w5, (uint32_t)H, 0 },
		 s3 = { 4 * h5, 4 * w5, (uint32_t)H, 0 }, o;
	pointwise(en, en->taps[0], l3, 16 * A, l->c3, (uint32_t)H, p);
	pointwise(en, en->taps[1], l4, 4 * A, l->c4, (uint32_t)H, p + 1);
	pointwise(en, x, l5, A, l->c5, (uint32_t)H, p + 2);
	add_up2(t, l4, l5, s4);
	dwpw(en, t, p4, d, s4, 1, p + 3, &o);
	add_up2(t, l3, p4, s3);
	dwpw(en, t, p3, d, s3, 1, p + 5, &o);
	dwpw(en, p3, n4, d, s3, 2, p + 7, &o);
	add(n4, p4, 4 * A * H);
	dwpw(en, n4, n5, d, s4, 2, p + 9, &o);
	add(n5, l5, A * H);
	uint64_t per = 5 + (uint64_t)l->classes;
	head(en, p3, y, s3, (uint32_t)H, l->classes, l->convs, p + 11, hscratch);
	head(en, n4, y + 16 * A * per, s4, (uint32_t)H, l->classes, l->convs, p + 11 + hs, hscratch);
	head(en, n5, y + 20 * A * per, s5, (uint32_t)H, l->classes, l->convs, p + 11 + 2 * hs, hscratch);
}

uint64_t fmt_nk_float_scratch(const nk_model *nm, const nk_layer *l)
{
	(void)nm;
	switch (l->kind) {
	case NK_CONVNEXT: {
		uint64_t hwc = nk_shape_count(l->in);
		return hwc + 4 * hwc + 4 * (uint64_t)l->units;
	}
	case NK_UIB: return 2 * fmt_nk_uib_stage(l);
	case NK_RESNET: return 2 * nk_shape_count(l->out);
	case NK_YOLOX_HEAD: return head_scratch((uint64_t)l->in.h * l->in.w, l->hidden, l->classes);
	case NK_PAFPN: return pafpn_scratch(l);
	default: return 0;
	}
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Kernel scratch of a k x k convolution with symmetric padding over an h x w x c input. */
static uint64_t conv_tmp(uint64_t h, uint64_t w, uint64_t c, uint64_t pad)
{
	return c * (h + 2 * pad) * (w + 2 * pad);
}

uint64_t fmt_nk_float_kscratch(const nk_model *nm, const nk_layer *l)
{
	(void)nm;
	nk_geom g = layer_geom(l);
	uint64_t h = l->in.h, w = l->in.w;
	switch (l->kind) {
	case NK_CONV2D: return nk_conv_tmp(&g);
	case NK_RESNET:
		return max64(conv_tmp(h, w, l->in_ch, 1), conv_tmp(l->out.h, l->out.w, l->out_ch, 1));
	case NK_YOLOX_HEAD: return conv_tmp(h, w, l->hidden, 1);
	case NK_PAFPN: return conv_tmp(4 * h, 4 * w, l->hidden, 1);
	default: return 0;
	}
}

void fmt_nk_float_layer(nk_engine *en, uint32_t i, const float *x, float *y)
{
	const nk_layer *l = &en->nm->layers[i];
	uint64_t n = nk_shape_count(l->out);
	float *s = en->scratch;
	nk_geom g = layer_geom(l);
	/* relu and relu6 are applied by the kernels as they store; the rest afterwards */
	int clamp = l->act == NK_ACT_RELU ? NK_CLAMP_RELU : l->act == NK_ACT_RELU6 ? NK_CLAMP_RELU6 : NK_CLAMP_NONE;
	switch (l->kind) {
	case NK_DENSE:
		en->k->dense(x, y, wt(en, l->first_pair), bs(en, l->first_pair), l->in.h, l->in.c, l->units, clamp);
		if (!clamp)
			activate(y, n, l->act, l->alpha);
		break;
	case NK_CONV2D:
		en->k->conv2d(x, y, &g, wt(en, l->first_pair), bs(en, l->first_pair), en->ktmp, clamp);
		if (!clamp)
			activate(y, n, l->act, l->alpha);
		break;
	case NK_DEPTHWISE:
		en->k->depthwise(x, y, &g, wt(en, l->first_pair), bs(en, l->first_pair), clamp);
		if (!clamp)
			activate(y, n, l->act, l->alpha);
		break;
	case NK_MAXPOOL: case NK_AVGPOOL: en->k->pool(x, y, &g, l->kind == NK_MAXPOOL); break;
	case NK_FLATTEN: memcpy(y, x, n * sizeof(float)); break;
	case NK_BATCHNORM:
		memcpy(y, x, n * sizeof(float));
		batchnorm(y, n / l->units, l->units, wt(en, l->first_pair), bs(en, l->first_pair));
		break;
	case NK_LAYERNORM:
		memcpy(y, x, n * sizeof(float));
		layernorm(y, n / l->units, l->units, l->eps, wt(en, l->first_pair), bs(en, l->first_pair));
		break;
	case NK_CONVNEXT: convnext(en, l, x, y, s); break;
	case NK_UIB: uib(en, l, x, y, s); break;
	case NK_RESNET: resnet(en, l, x, y, s); break;
	case NK_YOLOX_HEAD: head(en, x, y, l->in, l->hidden, l->classes, l->convs, l->first_pair, s); break;
	case NK_FEATURE_TAP:
		memcpy(y, x, n * sizeof(float));
		memcpy(en->taps[l->tap_id], x, n * sizeof(float));
		break;
	default: pafpn(en, l, x, y, s); break;
	}
}
