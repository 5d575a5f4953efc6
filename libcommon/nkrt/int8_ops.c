/* Int8 (v4) layers, specs/nk.md §12, bit-exact with upstream's integer path: TFLite-style
 * requantization, int32 accumulation (wrapping as upstream's int32 does), the CMSIS-NN softmax
 * port with its radius wrap, the int8 residual add and its leading-UIB quirk. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "nkrt_internal.h"
#include "int8_math.h"

/* ---- fixed-point helpers (§12.2) ---- */

void fmt_nk_quantize_multiplier(double d, int32_t *mult, int32_t *shift)
{
	if (!(d > 0.0)) {
		*mult = 0;
		*shift = 0;
		return;
	}
	int e;
	double m = frexp(d, &e);
	long long q = llround(m * 2147483648.0);
	if (q == 2147483648LL) {
		q = 1073741824LL;
		e += 1;
	}
	if (e < -31) {
		q = 0;
		e = 0;
	}
	if (e > 30) {
		q = INT32_MAX;
		e = 30;
	}
	*mult = (int32_t)q;
	*shift = e;
}

static inline int32_t srdhm(int32_t a, int32_t b)
{
	if (a == INT32_MIN && b == INT32_MIN)
		return INT32_MAX;
	int64_t p = (int64_t)a * b;
	int64_t nudge = p >= 0 ? (1 << 30) : 1 - (1 << 30);
	return (int32_t)((p + nudge) / (1LL << 31));
}

static inline int32_t rdivpot(int32_t x, int n)
{
	if (n == 0)
		return x;
	int32_t mask = (int32_t)((1u << n) - 1u);
	int32_t rem = x & mask;
	int32_t thr = (mask >> 1) + (x < 0 ? 1 : 0);
	return (x >> n) + (rem > thr ? 1 : 0);
}

static inline int32_t mulq(int32_t x, int32_t q, int32_t e)
{
	int left = e > 0 ? e : 0, right = e > 0 ? 0 : -e;
	int32_t shifted = (int32_t)((uint32_t)x * (1u << left)); /* an int32 multiply: wraps */
	return rdivpot(srdhm(shifted, q), right);
}

int32_t fmt_nk_srdhm(int32_t a, int32_t b)
{
	return srdhm(a, b);
}

int32_t fmt_nk_rdivpot(int32_t x, int n)
{
	return rdivpot(x, n);
}

int32_t fmt_nk_mulq(int32_t x, int32_t q, int32_t e)
{
	return mulq(x, q, e);
}

static int8_t clamp8(int32_t v, int32_t lo, int32_t hi)
{
	return (int8_t)(v < lo ? lo : v > hi ? hi : v);
}

/* ---- softmax (§12.8), literally, with int32 wrap-around ---- */

static int32_t wrap32(int64_t v)
{
	return (int32_t)(uint32_t)(uint64_t)v;
}

static int32_t dhm(int32_t a, int32_t b)
{
	int64_t nudge = ((a < 0) != (b < 0)) ? 1 - (1LL << 30) : (1LL << 30);
	return wrap32(((int64_t)a * b + nudge) / (1LL << 31));
}

static int32_t dpot(int32_t x, int n)
{
	return wrap32(((int64_t)x + (x < 0 ? -1 : 0) + (1LL << (n - 1))) >> n);
}

static int32_t expn(int32_t v)
{
	static const int32_t k[7] = { 1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242 };
	int32_t vm = wrap32((int64_t)(v & ((1 << 24) - 1)) - (1 << 24));
	int32_t rem = wrap32((int64_t)vm - v);
	int32_t x = wrap32((int64_t)(int32_t)((uint32_t)vm << 5) + (1 << 28));
	int32_t x2 = dhm(x, x);
	int32_t o1 = wrap32((int64_t)dpot(dhm(x2, x2), 2) + dhm(x2, x));
	int32_t o2 = wrap32((int64_t)x + dpot(wrap32((int64_t)dhm(o1, 715827883) + x2), 1));
	int32_t r = wrap32(1895147668LL + dhm(1895147668, o2));
	for (int j = 0; j < 7; j++)
		if ((uint32_t)rem & (1u << (24 + j)))
			r = dhm(r, k[j]);
	if (v == 0)
		r = INT32_MAX;
	return r;
}

void fmt_nk_softmax_s8(const int8_t *x, int8_t *y, uint64_t n, float logit_scale)
{
	double scaled = (double)(logit_scale > 0.0f ? logit_scale : 1.0f) * (double)(1 << 26);
	int32_t mult, shift;
	fmt_nk_quantize_multiplier(scaled < 2147483647.0 ? scaled : 2147483647.0, &mult, &shift);
	int t = shift + 5;
	int32_t R = (t >= 0 && t < 64) ? wrap32(llround(255.0 * ldexp(1.0, t))) : 0;
	int32_t diff_min = (int32_t)(0u - (uint32_t)R);
	uint32_t left = shift > 0 ? (1u << shift) : 1u; /* scales below 2^-26 shift by nothing */
	int8_t max = x[0];
	for (uint64_t i = 1; i < n; i++)
		if (x[i] > max)
			max = x[i];
	uint32_t sum = 0;
	for (uint64_t i = 0; i < n; i++) {
		int32_t d = x[i] - max;
		if (d >= diff_min)
			sum += (uint32_t)dpot(expn(dhm((int32_t)((uint32_t)d * left), mult)), 12);
	}
	int hr = sum ? __builtin_clz(sum) : 32;
	int32_t z = wrap32((int64_t)((int32_t)sum > 0 ? (int32_t)(sum << hr) : 0) - (1LL << 31));
	int64_t S = (int64_t)z + (1LL << 31);
	int32_t inv = S <= (1LL << 31) ? INT32_MAX : (int32_t)(((1LL << 62) + S / 2) / S);
	int bou = 12 - hr + 23;
	for (uint64_t i = 0; i < n; i++) {
		int32_t d = x[i] - max;
		if (d >= diff_min) {
			int32_t v = wrap32((int64_t)dpot(dhm(inv, expn(dhm((int32_t)((uint32_t)d * left), mult))), bou) - 128);
			y[i] = clamp8(v, -128, 127);
		} else {
			y[i] = -128;
		}
	}
}

/* ---- ops ---- */

static nk_rq rq_of(const nk_qop *op)
{
	return (nk_rq){ op->mult, op->lsh, op->rsh, op->in_zp, op->w_zp, op->out_zp, op->lo, op->hi };
}

/* Pair p's op runs as a depthwise convolution (1), a dense over rows of inputs (0: dense layers,
 * pointwise convolutions, the UIB's expand and project), or otherwise (-1). */
static int pair_form(const nk_model *nm, const nk_layer *l, uint32_t p)
{
	if (l->kind == NK_DEPTHWISE)
		return 1;
	if (l->kind == NK_DENSE || (l->kind == NK_CONV2D && l->kh == 1 && l->kw == 1))
		return 0;
	if (l->kind == NK_UIB) {
		const char *role = nm->pairs[p].role;
		return strcmp(role, "expand") == 0 || strcmp(role, "project") == 0 ? 0 : 1;
	}
	return -1;
}

/* Most outputs per row of an op with one input per output whose outputs for every input code
 * are tabled at load (256 rows of them). */
#define NK_LUT_OUT 1024

/* A dense op with one input: its outputs for each of the 256 input codes, computed by the
 * kernels themselves, so a run copies rows of the table. */
static fmt_kind plan_lut(nk_engine *en, uint32_t p, nk_qop *op, fmt_err *e)
{
	const nk_model *nm = en->nm;
	uint32_t out = nm->biases[p].count;
	int8_t codes[256];
	for (int i = 0; i < 256; i++)
		codes[i] = (int8_t)(i - 128);
	if (!(op->lut = malloc((size_t)256 * out)))
		return fmt_fail(e, FMT_IO, "out of memory");
	nk_rq rq = rq_of(op);
	en->k->qdense(codes, op->lut, nm->weights[p].data, nm->biases[p].data, 256, 1, (long)out, &rq,
		      (int32_t *)en->ktmp);
	return FMT_OK;
}

/* The kernels' load-time form of each dense or depthwise op: a table for one input per output,
 * else what the kernels pre-pack (nk_kernels.qpack), if they do. */
static fmt_kind plan_packed(nk_engine *en, fmt_err *e)
{
	const nk_model *nm = en->nm;
	for (uint32_t i = 0; i < nm->n_layers; i++) {
		const nk_layer *l = &nm->layers[i];
		for (uint32_t p = l->first_pair; p < l->first_pair + l->n_pairs; p++) {
			int form = pair_form(nm, l, p);
			nk_qop *op = &en->qops[p];
			uint64_t n_w = nm->weights[p].count, n_out = nm->biases[p].count;
			if (form < 0 || n_out == 0)
				continue;
			if (form == 0 && n_w == n_out && n_out <= NK_LUT_OUT) {
				if (plan_lut(en, p, op, e) != FMT_OK)
					return FMT_IO;
				continue;
			}
			nk_rq rq = rq_of(op);
			if (en->k->qpack && en->k->qpack(&op->pk, form, nm->weights[p].data, nm->biases[p].data, (long)n_w,
							 (long)n_out, &rq) != 0)
				return fmt_fail(e, FMT_IO, "out of memory");
		}
	}
	return FMT_OK;
}

/* The requantization plan of every pair (§12.2, §12.3), at load time. */
fmt_kind fmt_nk_int8_plan(nk_engine *en, fmt_err *e)
{
	const nk_model *nm = en->nm;
	if (!(en->qops = calloc(nm->n_weights, sizeof *en->qops)))
		return fmt_fail(e, FMT_IO, "out of memory");
	for (uint32_t i = 0; i < nm->n_layers; i++) {
		const nk_layer *l = &nm->layers[i];
		for (uint32_t p = l->first_pair; p < l->first_pair + l->n_pairs; p++) {
			const nk_quant *q = &nm->quant[p];
			nk_qop *op = &en->qops[p];
			uint32_t ch = nm->biases[p].count;
			op->mult = malloc(ch * sizeof(int32_t));
			op->shift = malloc(ch * sizeof(int32_t));
			op->lsh = malloc(ch * sizeof(int32_t));
			op->rsh = malloc(ch * sizeof(int32_t));
			if (!op->mult || !op->shift || !op->lsh || !op->rsh)
				return fmt_fail(e, FMT_IO, "out of memory");
			for (uint32_t c = 0; c < ch; c++) {
				float ws = q->n_scales == ch ? q->scales[c] : q->w_scale;
				fmt_nk_quantize_multiplier((double)q->in_scale * (double)ws / (double)q->out_scale, &op->mult[c],
						       &op->shift[c]);
				op->lsh[c] = op->shift[c] > 0 ? op->shift[c] : 0;
				op->rsh[c] = op->shift[c] > 0 ? 0 : -op->shift[c];
			}
			op->in_zp = q->in_zp;
			op->w_zp = q->w_zp;
			op->out_zp = q->out_zp;
			op->out_scale = q->out_scale;
			/* Activation clamp: UIB sub-ops are fixed (start none, expand relu, middle relu,
			 * project none); dense/conv honour relu and relu6, an int8 MLP relu only. */
			unsigned act = l->act;
			if (l->kind == NK_UIB) {
				const char *role = nm->pairs[p].role;
				act = (strcmp(role, "expand") == 0 || strcmp(role, "middle_dw") == 0) ? NK_ACT_RELU
													: NK_ACT_NONE;
			} else if (nm->network == NK_MLP && act != NK_ACT_RELU) {
				act = NK_ACT_NONE;
			}
			int32_t lo = -128, hi = 127;
			if (act == NK_ACT_RELU || act == NK_ACT_RELU6)
				lo = q->out_zp < -128 ? -128 : q->out_zp > 127 ? 127 : q->out_zp;
			if (act == NK_ACT_RELU6) {
				long long h = llround(6.0 / (double)q->out_scale) + q->out_zp;
				hi = h < lo ? lo : h > 127 ? 127 : (int32_t)h;
			}
			op->lo = lo;
			op->hi = hi;
		}
	}
	return plan_packed(en, e);
}

/* Rows of one input each: the table's row of each input code. */
static void qdense_lut(const int8_t *lut, const int8_t *x, int8_t *y, uint64_t rows, uint64_t out)
{
	for (uint64_t r = 0; r < rows; r++) {
		const int8_t *src = lut + (size_t)(uint8_t)(x[r] ^ 0x80) * out;
		int8_t *dst = y + r * out;
		uint64_t o = 0;
		for (; o + 16 <= out; o += 16)
			memcpy(dst + o, src + o, 16);
		for (; o < out; o++)
			dst[o] = src[o];
	}
}

static void qdense(const nk_engine *en, uint32_t p, const int8_t *x, int8_t *y, uint64_t rows, uint64_t in,
		   uint64_t out)
{
	const nk_qop *op = &en->qops[p];
	if (op->lut && in == 1) {
		qdense_lut(op->lut, x, y, rows, out);
		return;
	}
	nk_rq rq = rq_of(op);
	const int8_t *w = en->nm->weights[p].data;
	const int32_t *b = en->nm->biases[p].data;
	if (op->pk)
		en->k->qdense_pk(op->pk, x, y, w, b, (long)rows, (long)in, (long)out, &rq, (int32_t *)en->ktmp);
	else
		en->k->qdense(x, y, w, b, (long)rows, (long)in, (long)out, &rq, (int32_t *)en->ktmp);
}

static void qconv(const nk_engine *en, uint32_t p, int depthwise, const int8_t *x, int8_t *y, const nk_geom *g)
{
	const nk_qop *op = &en->qops[p];
	nk_rq rq = rq_of(op);
	const int8_t *w = en->nm->weights[p].data;
	const int32_t *b = en->nm->biases[p].data;
	if (depthwise) {
		if (op->pk)
			en->k->qdw_pk(op->pk, x, y, g, w, b, &rq);
		else
			en->k->qdw(x, y, g, w, b, &rq);
	} else if (g->kh == 1 && g->kw == 1 && g->stride == 1 && !g->pad_t && !g->pad_l && !g->pad_b && !g->pad_r) {
		qdense(en, p, x, y, (uint64_t)(g->h * g->w), (uint64_t)g->c, (uint64_t)g->oc); /* pointwise */
	} else {
		en->k->qconv(x, y, g, w, b, &rq, (int32_t *)en->ktmp);
	}
}

/* Max (the kernels') or average over the in-range cells of each window, channels innermost
 * (the NHWC rows): the average rounds half away from zero. */
static nk_geom layer_geom(const nk_layer *l)
{
	nk_geom g = { l->in.h, l->in.w, l->in.c, l->out.h, l->out.w, l->out.c, l->kh, l->kw, l->stride,
		      l->pad_t, l->pad_l, l->pad_b, l->pad_r };
	return g;
}

static void qpool(const nk_engine *en, const nk_layer *l, const int8_t *x, int8_t *y, int32_t zp)
{
	const long H = l->in.h, W = l->in.w, C = l->in.c;
	if (l->kind == NK_MAXPOOL) {
		nk_geom g = layer_geom(l);
		en->k->qmaxpool(x, y, &g);
		return;
	}
	int32_t acc[NK_QDW_BLOCK];
	for (long oy = 0; oy < l->out.h; oy++) {
		long iy0 = oy * (long)l->stride - l->pad_t;
		long ky0 = iy0 < 0 ? -iy0 : 0, ky1 = H - iy0 < (long)l->kh ? H - iy0 : (long)l->kh;
		for (long ox = 0; ox < l->out.w; ox++) {
			long ix0 = ox * (long)l->stride - l->pad_l;
			long kx0 = ix0 < 0 ? -ix0 : 0, kx1 = W - ix0 < (long)l->kw ? W - ix0 : (long)l->kw;
			int32_t n = (ky1 > ky0 && kx1 > kx0) ? (int32_t)((ky1 - ky0) * (kx1 - kx0)) : 0;
			int8_t *restrict yo = y + (oy * l->out.w + ox) * C;
			for (long c0 = 0; c0 < C; c0 += NK_QDW_BLOCK) {
				const long nc = C - c0 < NK_QDW_BLOCK ? C - c0 : NK_QDW_BLOCK;
				for (long c = 0; c < nc; c++)
					acc[c] = 0;
				for (long ky = ky0; ky < ky1; ky++)
					for (long kx = kx0; kx < kx1; kx++) {
						const int8_t *restrict xp = x + ((iy0 + ky) * W + ix0 + kx) * C + c0;
						for (long c = 0; c < nc; c++)
							acc[c] += xp[c] - zp;
					}
				for (long c = 0; c < nc; c++) {
					int32_t sum = acc[c];
					int32_t avg = n ? (sum >= 0 ? (sum + n / 2) / n : -((-sum + n / 2) / n)) : 0;
					yo[c0 + c] = clamp8(avg + zp, -128, 127);
				}
			}
		}
	}
}

/* §12.7 residual: a (project output, params s1/z1 = so/zo) + b (block input, s2/z2). */
static void qadd(const int8_t *a, const int8_t *b, int8_t *y, uint64_t n, float s1, int32_t z1, float s2,
		 int32_t z2, float so, int32_t zo)
{
	double tw = 2.0 * ((double)s1 > (double)s2 ? (double)s1 : (double)s2);
	int32_t m1, e1, m2, e2, mo, eo;
	fmt_nk_quantize_multiplier((double)s1 / tw, &m1, &e1);
	fmt_nk_quantize_multiplier((double)s2 / tw, &m2, &e2);
	fmt_nk_quantize_multiplier(tw / (1048576.0 * (double)so), &mo, &eo);
	for (uint64_t i = 0; i < n; i++) {
		int32_t ra = fmt_nk_mulq((a[i] - z1) * (1 << 20), m1, e1);
		int32_t rb = fmt_nk_mulq((b[i] - z2) * (1 << 20), m2, e2);
		int32_t v = wrap32((int64_t)fmt_nk_mulq(wrap32((int64_t)ra + rb), mo, eo) + zo);
		y[i] = clamp8(v, -128, 127);
	}
}

static nk_geom qgeom(nk_shape in, uint32_t oc, uint32_t k, uint32_t stride, uint32_t pad)
{
	nk_geom g = { in.h, in.w, in.c, (in.h + 2 * pad - k) / stride + 1, (in.w + 2 * pad - k) / stride + 1, oc,
		      k, k, stride, pad, pad, pad, pad };
	return g;
}

uint64_t fmt_nk_int8_kscratch(const nk_model *nm, const nk_layer *l)
{
	uint64_t n = 0;
	for (uint32_t p = l->first_pair; p < l->first_pair + l->n_pairs; p++)
		n = nm->biases[p].count > n ? nm->biases[p].count : n;
	return n;
}

uint64_t fmt_nk_int8_scratch(const nk_model *nm, const nk_layer *l)
{
	(void)nm;
	return l->kind == NK_UIB ? 2 * fmt_nk_uib_stage(l) : 0;
}

/* The block input's parameters are the current ones: 1.0 and 0 when the UIB is the first layer,
 * which is upstream's leading-UIB quirk (§12.7). */
static void quib(const nk_engine *en, const nk_layer *l, const int8_t *x, int8_t *y, int8_t *s, int32_t in_zp,
		 float in_scale)
{
	int8_t *s1 = s, *s2 = s + fmt_nk_uib_stage(l);
	uint32_t p = l->first_pair, E = l->expanded;
	nk_shape cur = l->in;
	const int8_t *src = x;
	nk_geom g;
	if (l->start_dw) {
		g = qgeom(cur, l->in_ch, l->start_dw, l->start_stride, (l->start_dw - 1u) / 2);
		qconv(en, p++, 1, src, s1, &g);
		cur = (nk_shape){ (uint32_t)g.oh, (uint32_t)g.ow, l->in_ch, 0 };
		src = s1;
	}
	qdense(en, p++, src, s2, (uint64_t)cur.h * cur.w, l->in_ch, E);
	cur.c = E;
	src = s2;
	if (l->middle_dw) {
		g = qgeom(cur, E, l->middle_dw, l->middle_stride, (l->middle_dw - 1u) / 2);
		qconv(en, p++, 1, src, s1, &g);
		cur = (nk_shape){ (uint32_t)g.oh, (uint32_t)g.ow, E, 0 };
		src = s1;
	}
	uint64_t n = nk_shape_count(l->out);
	if (l->uib_stride == 1 && l->in_ch == l->out_ch) {
		int8_t *proj = src == s1 ? s2 : s1;
		qdense(en, p, src, proj, (uint64_t)cur.h * cur.w, E, l->out_ch);
		const nk_qop *op = &en->qops[p];
		qadd(proj, x, y, n, op->out_scale, op->out_zp, in_scale, in_zp, op->out_scale, op->out_zp);
	} else {
		qdense(en, p, src, y, (uint64_t)cur.h * cur.w, E, l->out_ch);
	}
}

/* A packed depthwise layer i and the max pool after it in one (the kernels' qdw_maxpool_pk),
 * when they can: y gets the pool's output, which the pool layer then passes on. */
static int qdw_maxpool(nk_engine *en, uint32_t i, const int8_t *x, int8_t *y, const nk_geom *g)
{
	const nk_model *nm = en->nm;
	const nk_layer *l = &nm->layers[i];
	const nk_qop *op = &en->qops[l->first_pair];
	if (l->kind != NK_DEPTHWISE || !op->pk || !en->k->qdw_maxpool_pk || i + 1 >= nm->n_layers ||
	    nm->layers[i + 1].kind != NK_MAXPOOL)
		return 0;
	nk_geom pool = layer_geom(&nm->layers[i + 1]);
	if (!en->k->qdw_maxpool_pk(op->pk, x, y, g, &pool))
		return 0;
	en->pooled = i + 2;
	return 1;
}

/* Runs layer i; *zp and *scale are the current activation's parameters (those of the most
 * recent conv, depthwise, dense or UIB; 0 and 1.0 before the first), updated here. */
void fmt_nk_int8_layer(nk_engine *en, uint32_t i, const int8_t *x, int8_t *y, int32_t *cur_zp, float *cur_scale)
{
	const nk_model *nm = en->nm;
	const nk_layer *l = &nm->layers[i];
	uint64_t n = nk_shape_count(l->out);
	if (en->pooled == i + 1) {
		memcpy(y, x, n);
		en->pooled = 0;
		return;
	}
	if (l->n_pairs) {
		const nk_quant *q = &nm->quant[l->first_pair + l->n_pairs - 1];
		switch (l->kind) {
		case NK_DENSE:
			qdense(en, l->first_pair, x, y, l->in.h, l->in.c, l->units);
			if (l->act == NK_ACT_SOFTMAX) {
				/* Logits to probabilities with scale 1/256, zero point -128; an int8 MLP
				 * converts its first row only (upstream), later rows keep their logits. */
				fmt_nk_softmax_s8(y, y, l->units, q->out_scale);
				*cur_zp = -128;
				*cur_scale = 1.0f / 256.0f;
				return;
			}
			break;
		case NK_CONV2D: case NK_DEPTHWISE: {
			nk_geom g = layer_geom(l);
			if (!qdw_maxpool(en, i, x, y, &g))
				qconv(en, l->first_pair, l->kind == NK_DEPTHWISE, x, y, &g);
			break;
		}
		default:
			quib(en, l, x, y, en->scratch, *cur_zp, *cur_scale);
			break;
		}
		*cur_zp = q->out_zp;
		*cur_scale = q->out_scale;
		return;
	}
	if (l->kind == NK_FLATTEN)
		memcpy(y, x, n);
	else
		qpool(en, l, x, y, *cur_zp);
}
