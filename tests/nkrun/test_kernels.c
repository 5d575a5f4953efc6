/* The int8 kernels of every build this CPU runs (portable, AVX2, AVX-512, AVX-512 VNNI with
 * its weights pre-packed) give the same bytes on random shapes: dense rows short (the pair
 * tiles, the packed broadcasts) and long (the dot products), pointwise and spatial
 * convolutions, depthwise convolutions with interior and edge pixels, channel counts around
 * the vector widths, odd tap counts, random zero points, multipliers, shifts and clamps; the
 * int8 max pool gives the maximum of each window's in-range cells (0 for none). */
#include <stdlib.h>
#include <string.h>
#include "../unit/unit.h"
#include "fmt/nkrt.h"
#include "../../libcommon/nkrt/kernels.h"

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint32_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static long pick(long lo, long hi)
{
	return lo + (long)(next() % (uint32_t)(hi - lo + 1));
}

static void fill8(int8_t *p, long n)
{
	for (long i = 0; i < n; i++)
		p[i] = (int8_t)next();
}

/* A requantization of n channels: multipliers 0 or [2^30, 2^31), shifts -31..30. */
typedef struct rq_store {
	int32_t mult[256], lsh[256], rsh[256], bias[256];
	nk_rq rq;
} rq_store;

static void random_rq(rq_store *s, long n)
{
	for (long c = 0; c < n; c++) {
		s->mult[c] = next() % 16 == 0 ? 0 : (int32_t)((1u << 30) + (next() & 0x3fffffffu));
		int32_t shift = (int32_t)pick(-31, 30);
		if (next() % 2) /* the shifts real networks have */
			shift = (int32_t)pick(-12, 1);
		s->lsh[c] = shift > 0 ? shift : 0;
		s->rsh[c] = shift > 0 ? 0 : -shift;
		s->bias[c] = next() % 2 ? (int32_t)next() : (int32_t)pick(-5000, 5000);
	}
	int32_t lo = (int32_t)pick(-128, 127), hi = (int32_t)pick(lo, 127);
	if (next() % 2)
		lo = -128, hi = 127;
	s->rq = (nk_rq){ s->mult, s->lsh, s->rsh, (int32_t)pick(-128, 127), next() % 3 ? 0 : (int32_t)pick(-128, 127),
			 (int32_t)pick(-128, 127), lo, hi };
}

/* The kernel sets to compare: the portable one and what this CPU runs up to AVX2, up to
 * AVX-512 and beyond. */
static int kernel_sets(const nk_kernels **sets)
{
	int n = 0;
	const char *saved = getenv("NK_KERNELS");
	char *keep = saved ? strdup(saved) : NULL;
	sets[n++] = fmt_nk_kernels_generic();
	setenv("NK_KERNELS", "avx2", 1);
	sets[n++] = fmt_nk_kernels_get();
	setenv("NK_KERNELS", "avx512", 1);
	sets[n++] = fmt_nk_kernels_get();
	unsetenv("NK_KERNELS");
	sets[n++] = fmt_nk_kernels_get();
	if (keep)
		setenv("NK_KERNELS", keep, 1);
	free(keep);
	return n;
}

/* Runs a dense op on set k: pre-packed first when the set packs. */
static void run_qdense(const nk_kernels *k, const int8_t *x, int8_t *y, const int8_t *w, const rq_store *s, long rows,
		       long in, long out, int32_t *acc)
{
	void *pk = NULL;
	if (k->qpack) {
		CHECK(k->qpack(&pk, 0, w, s->bias, in * out, out, &s->rq) == 0);
		k->qdense_pk(pk, x, y, w, s->bias, rows, in, out, &s->rq, acc);
	} else {
		k->qdense(x, y, w, s->bias, rows, in, out, &s->rq, acc);
	}
	free(pk);
}

static void run_qdw(const nk_kernels *k, const int8_t *x, int8_t *y, const nk_geom *g, const int8_t *w, const rq_store *s)
{
	void *pk = NULL;
	if (k->qpack) {
		CHECK(k->qpack(&pk, 1, w, s->bias, g->c * g->kh * g->kw, g->c, &s->rq) == 0);
		k->qdw_pk(pk, x, y, g, w, s->bias, &s->rq);
	} else {
		k->qdw(x, y, g, w, s->bias, &s->rq);
	}
	free(pk);
}

static void check_same(const nk_kernels *const *sets, int n, int8_t *const *outs, long bytes, const char *what, long trial)
{
	for (int s = 1; s < n; s++) {
		if (memcmp(outs[0], outs[s], (size_t)bytes) != 0) {
			char msg[160];
			snprintf(msg, sizeof msg, "%s trial %ld: %s differs from %s", what, trial, fmt_nk_kernels_name(sets[s]),
				 fmt_nk_kernels_name(sets[0]));
			unit_fail(__FILE__, __LINE__, msg);
			return;
		}
	}
}

TEST(nk_int8_dense_kernels_agree)
{
	const nk_kernels *sets[4];
	int n = kernel_sets(sets);
	static int8_t x[5 * 4300], w[4300 * 140], out[4][5 * 140];
	static int32_t acc[256];
	static rq_store s;
	for (long trial = 0; trial < 300; trial++) {
		long rows = pick(1, 5), in = trial % 3 ? pick(1, 70) : pick(60, 200), o = pick(1, 140);
		if (trial < 20) /* the edges: one input, one output, the tile limit, whole vectors */
			in = (long[]){ 1, 2, 63, 64, 65, 16, 32, 31, 33, 128 }[trial % 10], o = (long[]){ 1, 8, 16, 64, 65 }[trial % 5];
		if (trial >= 240) /* rows longer than the packed (256) and the 4096-input pieces */
			rows = pick(1, 5), in = trial < 290 ? pick(250, 1700) : pick(4090, 4300), o = pick(1, 140);
		fill8(x, rows * in);
		fill8(w, in * o);
		random_rq(&s, o);
		int8_t *outs[4] = { out[0], out[1], out[2], out[3] };
		for (int k = 0; k < n; k++)
			run_qdense(sets[k], x, outs[k], w, &s, rows, in, o, acc);
		check_same(sets, n, outs, rows * o, "qdense", trial);
	}
}

/* A geometry of h x w x c in, k x k' taps, stride, pads; its output size. */
static nk_geom random_geom(long max_hw, long max_c, long oc, long max_k)
{
	nk_geom g = { 0 };
	g.h = pick(1, max_hw), g.w = pick(1, max_hw), g.c = pick(1, max_c);
	g.kh = pick(1, max_k), g.kw = pick(1, max_k), g.stride = pick(1, 2);
	g.pad_t = pick(0, 2), g.pad_l = pick(0, 2), g.pad_b = pick(0, 2), g.pad_r = pick(0, 2);
	if (g.h + g.pad_t + g.pad_b < g.kh)
		g.pad_b += g.kh - (g.h + g.pad_t + g.pad_b);
	if (g.w + g.pad_l + g.pad_r < g.kw)
		g.pad_r += g.kw - (g.w + g.pad_l + g.pad_r);
	g.oh = (g.h + g.pad_t + g.pad_b - g.kh) / g.stride + 1;
	g.ow = (g.w + g.pad_l + g.pad_r - g.kw) / g.stride + 1;
	g.oc = oc ? oc : g.c;
	return g;
}

TEST(nk_int8_conv_kernels_agree)
{
	const nk_kernels *sets[4];
	int n = kernel_sets(sets);
	static int8_t x[10 * 10 * 40], w[40 * 4 * 4 * 40], out[4][14 * 14 * 40]; /* pads grow the output */
	static int32_t acc[256];
	static rq_store s;
	for (long trial = 0; trial < 200; trial++) {
		nk_geom g = random_geom(10, 40, pick(1, 40), 4);
		if (trial % 4 == 0) /* pointwise: a dense over pixels */
			g.kh = g.kw = g.stride = 1, g.pad_t = g.pad_l = g.pad_b = g.pad_r = 0, g.oh = g.h, g.ow = g.w;
		fill8(x, g.h * g.w * g.c);
		fill8(w, g.oc * g.kh * g.kw * g.c);
		random_rq(&s, g.oc);
		int8_t *outs[4] = { out[0], out[1], out[2], out[3] };
		for (int k = 0; k < n; k++)
			sets[k]->qconv(x, outs[k], &g, w, s.bias, &s.rq, acc);
		check_same(sets, n, outs, g.oh * g.ow * g.oc, "qconv", trial);
	}
}

TEST(nk_int8_depthwise_kernels_agree)
{
	const nk_kernels *sets[4];
	int n = kernel_sets(sets);
	static int8_t x[14 * 14 * 192], w[192 * 7 * 7], out[4][18 * 18 * 192];
	static rq_store s;
	static const long widths[] = { 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48, 64, 65, 70 };
	static const long packed[] = { 16, 32, 64, 128, 192 };
	for (long trial = 0; trial < 400; trial++) {
		nk_geom g = random_geom(14, 70, 0, trial % 5 ? 3 : 7);
		if (trial < 28)
			g.c = g.oc = widths[trial % 14];
		if (trial >= 300) { /* the packed VNNI path: stride 1, no padding, 16, 32 or 64k channels */
			g.c = g.oc = packed[trial % 5];
			g.kh = pick(1, 4), g.kw = pick(1, 4), g.stride = 1, g.pad_t = g.pad_l = g.pad_b = g.pad_r = 0;
			g.h = pick(g.kh, 14), g.w = pick(g.kw, 14), g.oh = g.h - g.kh + 1, g.ow = g.w - g.kw + 1;
		}
		fill8(x, g.h * g.w * g.c);
		fill8(w, g.c * g.kh * g.kw);
		random_rq(&s, g.c);
		int8_t *outs[4] = { out[0], out[1], out[2], out[3] };
		for (int k = 0; k < n; k++)
			run_qdw(sets[k], x, outs[k], &g, w, &s);
		check_same(sets, n, outs, g.oh * g.ow * g.c, "qdw", trial);
	}
}

TEST(nk_int8_maxpool_kernels_agree)
{
	const nk_kernels *sets[4];
	int n = kernel_sets(sets);
	static int8_t x[12 * 12 * 80], out[4][16 * 16 * 80], ref[16 * 16 * 80];
	for (long trial = 0; trial < 200; trial++) {
		nk_geom g = random_geom(12, 80, 0, 4);
		if (trial % 7 == 0) /* windows wholly in the padding */
			g.pad_t = g.pad_l = g.kh = g.kw = 3, g.stride = 3, g.h = g.w = 1, g.pad_b = g.pad_r = 3,
			g.oh = g.ow = 2;
		fill8(x, g.h * g.w * g.c);
		for (long oy = 0; oy < g.oh; oy++)
			for (long ox = 0; ox < g.ow; ox++)
				for (long c = 0; c < g.c; c++) {
					int top = -129;
					for (long ky = 0; ky < g.kh; ky++)
						for (long kx = 0; kx < g.kw; kx++) {
							long iy = oy * g.stride - g.pad_t + ky, ix = ox * g.stride - g.pad_l + kx;
							if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w && x[(iy * g.w + ix) * g.c + c] > top)
								top = x[(iy * g.w + ix) * g.c + c];
						}
					ref[(oy * g.ow + ox) * g.c + c] = (int8_t)(top == -129 ? 0 : top);
				}
		int8_t *outs[4] = { out[0], out[1], out[2], out[3] };
		for (int k = 0; k < n; k++) {
			sets[k]->qmaxpool(x, outs[k], &g);
			CHECK_MEM(outs[k], ref, (size_t)(g.oh * g.ow * g.c));
		}
	}
}

/* A packed depthwise convolution with the 2 x 2 max pool of stride 2 after it, in one where the
 * kernels can (monotonic requantizations), else one after the other: the portable kernels'
 * bytes either way, and both ways taken. */
TEST(nk_int8_depthwise_maxpool_fused_agrees)
{
	const nk_kernels *sets[4];
	int n = kernel_sets(sets);
	static int8_t x[15 * 15 * 128], w[128 * 16], dw[15 * 15 * 128], ref[8 * 8 * 128], got[8 * 8 * 128];
	static rq_store s;
	static const long widths[] = { 16, 32, 64, 128, 32 };
	long fused = 0, declined = 0;
	for (long trial = 0; trial < 300; trial++) {
		nk_geom g = { 0 };
		g.c = g.oc = widths[trial % 5];
		g.kh = pick(1, 4), g.kw = pick(1, 4), g.stride = 1;
		g.h = pick(g.kh + 1, 15), g.w = pick(g.kw + 1, 15), g.oh = g.h - g.kh + 1, g.ow = g.w - g.kw + 1;
		nk_geom pool = { g.oh, g.ow, g.c, g.oh / 2, g.ow / 2, g.c, 2, 2, 2, 0, 0, 0, 0 };
		fill8(x, g.h * g.w * g.c);
		fill8(w, g.c * g.kh * g.kw);
		random_rq(&s, g.c);
		if (trial % 4) { /* the requantizations of real networks: no left shift, small biases */
			s.rq.w_zp = 0;
			for (long c = 0; c < g.c; c++)
				s.lsh[c] = 0, s.rsh[c] = (int32_t)pick(0, 12), s.bias[c] = (int32_t)pick(-5000, 5000);
		}
		const nk_kernels *k0 = fmt_nk_kernels_generic();
		k0->qdw(x, dw, &g, w, s.bias, &s.rq);
		k0->qmaxpool(dw, ref, &pool);
		for (int k = 0; k < n; k++) {
			if (!sets[k]->qdw_maxpool_pk)
				continue;
			void *pk = NULL;
			CHECK(sets[k]->qpack(&pk, 1, w, s.bias, g.c * g.kh * g.kw, g.c, &s.rq) == 0);
			memset(got, 0x55, sizeof got);
			if (sets[k]->qdw_maxpool_pk(pk, x, got, &g, &pool)) {
				fused++;
			} else {
				declined++;
				sets[k]->qdw_pk(pk, x, dw, &g, w, s.bias, &s.rq);
				sets[k]->qmaxpool(dw, got, &pool);
			}
			free(pk);
			if (memcmp(got, ref, (size_t)(pool.oh * pool.ow * g.c)) != 0) {
				char msg[160];
				snprintf(msg, sizeof msg, "dw+maxpool trial %ld (%ld channels, %ldx%ld taps): %s differs", trial,
					 g.c, g.kh, g.kw, fmt_nk_kernels_name(sets[k]));
				unit_fail(__FILE__, __LINE__, msg);
			}
		}
	}
	/* on a CPU with VNNI: both ways ran */
	for (int k = 0; k < n; k++)
		if (sets[k]->qdw_maxpool_pk)
			CHECK(fused > 50 && declined > 20);
}
