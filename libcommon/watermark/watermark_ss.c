/* The fmtkit-ss/1 spread-spectrum watermark (fmt/watermark_ss.h; specified in man/fmt-watermark.1). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include "fmt/watermark_ss.h"
#include "ss_internal.h"

#define STREAM_LABEL "fmtkit-ss/1 stream"
#define GRID 32                         /* prove's p-value: scores in steps of 1/32 */

void fmt_ss_stream_key(const fmt_wm_key *key, uint8_t sk[32])
{
	fmt_wm_derive(key, STREAM_LABEL, sk);
}

/* Chunks of the keystream: 64-byte ChaCha20 blocks, generated in place over zeros. */
#define STREAM_CHUNK 8192

void fmt_ss_stream(const uint8_t sk[32], uint64_t nelems, uint64_t first, size_t n, uint16_t *r)
{
	uint8_t nonce[crypto_stream_chacha20_ietf_NONCEBYTES] = { 0 };
	for (int i = 0; i < 8; i++)
		nonce[i] = (uint8_t)(nelems >> (8 * i));
	uint8_t buf[STREAM_CHUNK + 64];
	uint64_t byte = 2 * first;
	size_t done = 0;
	while (done < n) {
		uint64_t block = byte / 64;
		size_t skip = (size_t)(byte % 64), want = 2 * (n - done);
		if (want > STREAM_CHUNK)
			want = STREAM_CHUNK;
		size_t len = (skip + want + 63) / 64 * 64;
		memset(buf, 0, len);
		crypto_stream_chacha20_ietf_xor_ic(buf, buf, len, nonce, (uint32_t)block, sk);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		memcpy(r + done, buf + skip, want);
#else
		for (size_t i = 0; i < want / 2; i++)
			r[done + i] = (uint16_t)(buf[skip + 2 * i] | buf[skip + 2 * i + 1] << 8);
#endif
		done += want / 2;
		byte += want;
	}
}

void fmt_ss_codeword(uint64_t payload, int8_t d[FMT_SS_GROUPS])
{
	for (unsigned b = 0; b < FMT_SS_BYTES; b++) {
		unsigned byte = (unsigned)(payload >> (56 - 8 * b)) & 0xFF;
		for (unsigned x = 0; x < 256; x++)
			d[256 * b + x] = (int8_t)(__builtin_parity(byte & x) ? -1 : 1);
	}
}

/* Sums over a block in 4 lanes (i % 4), added at the end: the order of the additions is not part
 * of the scheme, and 4 independent chains in registers run several times as fast. */
#define LANES_TOTAL(a) (((a##0) + (a##1)) + ((a##2) + (a##3)))

static inline double load_value(const uint8_t *p, size_t i, int width)
{
	if (width == 4) {
		float f;
		memcpy(&f, p + 4 * i, 4);
		return f;
	}
	double d;
	memcpy(&d, p + 8 * i, 8);
	return d;
}

/* 0 for a non-finite value (which neither counts nor moves). */
static inline double finite_or_0(double v)
{
	return isfinite(v) ? v : 0;
}

/* The block's mean and population standard deviation over its finite values (two passes). */
static inline __attribute__((always_inline)) void block_std(const uint8_t *p, size_t n, const int width,
							    double *mean, double *std)
{
	double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
	uint64_t fin = 0;
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		double v0 = load_value(p, i, width), v1 = load_value(p, i + 1, width);
		double v2 = load_value(p, i + 2, width), v3 = load_value(p, i + 3, width);
		fin += (uint64_t)(isfinite(v0) != 0) + (isfinite(v1) != 0) + (isfinite(v2) != 0) + (isfinite(v3) != 0);
		a0 += finite_or_0(v0);
		a1 += finite_or_0(v1);
		a2 += finite_or_0(v2);
		a3 += finite_or_0(v3);
	}
	for (; i < n; i++) {
		double v = load_value(p, i, width);
		fin += isfinite(v) != 0;
		a0 += finite_or_0(v);
	}
	double m = fin ? LANES_TOTAL(a) / (double)fin : 0, q0 = 0, q1 = 0, q2 = 0, q3 = 0;
	for (i = 0; i + 4 <= n; i += 4) {
		double d0 = finite_or_0(load_value(p, i, width) - m), d1 = finite_or_0(load_value(p, i + 1, width) - m);
		double d2 = finite_or_0(load_value(p, i + 2, width) - m), d3 = finite_or_0(load_value(p, i + 3, width) - m);
		q0 += d0 * d0;
		q1 += d1 * d1;
		q2 += d2 * d2;
		q3 += d3 * d3;
	}
	for (; i < n; i++) {
		double d = finite_or_0(load_value(p, i, width) - m);
		q0 += d * d;
	}
	*mean = m;
	*std = fin ? sqrt(LANES_TOTAL(q) / (double)fin) : 0;
}

/* What marking one value did, for the block's distortion sums. */
typedef struct change { double d, dd, vd; uint64_t finite, marked; } change;

static inline __attribute__((always_inline)) void mark_one(uint8_t *p, size_t i, const int width, double delta,
							   change *c)
{
	double v = load_value(p, i, width);
	if (!isfinite(v))
		return;
	double v1 = v + delta;
	if (width == 4) {
		float f = (float)v1;
		memcpy(p + 4 * i, &f, 4);
		v1 = f;
	} else {
		memcpy(p + 8 * i, &v1, 8);
	}
	double diff = v1 - v;
	c->d += diff;
	c->dd += diff * diff;
	c->vd += v * diff;
	c->finite++;
	c->marked += v1 != v;
}

static inline __attribute__((always_inline)) void mark_block(uint8_t *p, size_t n, const int width,
							     const double *delta, const uint16_t *r, fmt_wm_dist *d)
{
	const unsigned mask = 2 * FMT_SS_GROUPS - 1;
	change c[4];
	memset(c, 0, sizeof c);
	size_t i = 0;
	for (; i + 4 <= n; i += 4)
		for (int l = 0; l < 4; l++)
			mark_one(p, i + (size_t)l, width, delta[r[i + (size_t)l] & mask], &c[l]);
	for (; i < n; i++)
		mark_one(p, i, width, delta[r[i] & mask], &c[0]);
	for (int l = 1; l < 4; l++) {
		c[0].d += c[l].d;
		c[0].dd += c[l].dd;
		c[0].vd += c[l].vd;
		c[0].finite += c[l].finite;
		c[0].marked += c[l].marked;
	}
	d->sum_d += c[0].d;
	d->sumsq_d += c[0].dd;
	d->finite += c[0].finite;
	d->eligible += c[0].finite;
	d->selected += c[0].finite;
	d->marked += c[0].marked;
	/* sum v'^2 = sum v^2 + 2 sum v (v' - v) + sum (v' - v)^2; sum v^2 from the block's moments */
	d->sumsq1 += 2 * c[0].vd + c[0].dd;
}

/* float32: the same arithmetic branch-free, two lanes of sums in registers; a non-finite value
 * keeps its bits (a NaN's payload too). */
static void mark_block_f32(uint8_t *p, size_t n, const double *delta, const uint16_t *r, fmt_wm_dist *d)
{
	const unsigned mask = 2 * FMT_SS_GROUPS - 1;
	double sd[2] = { 0, 0 }, sdd[2] = { 0, 0 }, svd[2] = { 0, 0 };
	uint64_t finite = 0, marked = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t bits, out;
		memcpy(&bits, p + 4 * i, 4);
		float f;
		memcpy(&f, &bits, 4);
		int ok = (bits & 0x7F800000u) != 0x7F800000u;
		double v = f;
		float g = (float)(v + delta[r[i] & mask]);
		memcpy(&out, &g, 4);
		out = ok ? out : bits;
		memcpy(p + 4 * i, &out, 4);
		double diff = ok ? (double)g - v : 0;
		sd[i & 1] += diff;
		sdd[i & 1] += diff * diff;
		svd[i & 1] += v * diff;
		finite += (uint64_t)ok;
		marked += out != bits;
	}
	d->sum_d += sd[0] + sd[1];
	d->sumsq_d += sdd[0] + sdd[1];
	d->finite += finite;
	d->eligible += finite;
	d->selected += finite;
	d->marked += marked;
	d->sumsq1 += 2 * (svd[0] + svd[1]) + sdd[0] + sdd[1];
}

static void ss1_embed_block(const fmt_ss_params *prm, uint8_t *p, uint64_t nelems, uint64_t first, size_t n,
			    int width, fmt_wm_dist *d)
{
	uint16_t *r = malloc((n ? n : 1) * sizeof *r);
	double *delta = malloc(2 * FMT_SS_GROUPS * sizeof *delta);
	d->values += n;
	if (!r || !delta) {            /* callers give blocks of 128 KiB at most; no room: unmarked */
		free(r);
		free(delta);
		return;
	}
	double mean, std;
	uint64_t before = d->finite;
	if (width == 4)
		block_std(p, n, 4, &mean, &std);
	else
		block_std(p, n, 8, &mean, &std);
	double amp = prm->strength * std;
	for (unsigned j = 0; j < FMT_SS_GROUPS; j++) {
		delta[j] = amp * prm->d[j];                       /* sign bit 0: s = +1 */
		delta[FMT_SS_GROUPS + j] = -amp * prm->d[j];      /* sign bit 1: s = -1 */
	}
	fmt_ss_stream(prm->sk, nelems, first, n, r);
	if (width == 4)
		mark_block_f32(p, n, delta, r, d);
	else
		mark_block(p, n, 8, delta, r, d);
	/* the original values' sum and sum of squares, from the block's mean and std */
	double fin = (double)(d->finite - before), sumsq = fin * (std * std + mean * mean);
	d->sum0 += fin * mean;
	d->q0 += fin * std * std;
	d->sumsq0 += sumsq;
	d->sumsq1 += sumsq;
	free(r);
	free(delta);
}

void fmt_ss_embed(const fmt_ss_params *prm, uint8_t *p, uint64_t nelems, uint64_t first, size_t n, int width,
		  fmt_wm_dist *d)
{
	fmt_wm_dist block = { 0 };
	ss1_embed_block(prm, p, nelems, first, n, width, &block);
	fmt_wm_dist_merge(d, &block);
}

#define ACC_LOOP(V)                                                                        \
	do {                                                                               \
		uint16_t r[4096];                                                          \
		for (size_t done = 0; done < n;) {                                         \
			size_t k = n - done < 4096 ? n - done : 4096;                      \
			fmt_ss_stream(sk, nelems, first + done, k, r);                     \
			for (size_t i = 0; i < k; i++) {                                   \
				double x = (double)(V)[done + i];                          \
				if (!isfinite(x))                                          \
					continue;                                          \
				unsigned j = r[i] & (FMT_SS_GROUPS - 1);                   \
				double s = r[i] & FMT_SS_GROUPS ? -1.0 : 1.0;              \
				a->n[j]++;                                                 \
				a->s[j] += s;                                              \
				a->sv[j] += s * x;                                         \
				a->v1[j] += x;                                             \
				a->v2[j] += x * x;                                         \
			}                                                                  \
			done += k;                                                         \
		}                                                                          \
	} while (0)

void fmt_ss_acc_f32(const uint8_t sk[32], fmt_ss_acc *a, const float *v, uint64_t nelems, uint64_t first, size_t n)
{
	ACC_LOOP(v);
}

void fmt_ss_acc_f64(const uint8_t sk[32], fmt_ss_acc *a, const double *v, uint64_t nelems, uint64_t first, size_t n)
{
	ACC_LOOP(v);
}

void fmt_ss_acc_merge(fmt_ss_acc *into, const fmt_ss_acc *piece)
{
	for (unsigned j = 0; j < FMT_SS_GROUPS; j++) {
		into->n[j] += piece->n[j];
		into->s[j] += piece->s[j];
		into->sv[j] += piece->sv[j];
		into->v1[j] += piece->v1[j];
		into->v2[j] += piece->v2[j];
	}
}

void fmt_ss_sum_add(fmt_ss_sum *sum, const fmt_ss_acc *a)
{
	double total = 0, count = 0, energy = 0;
	for (unsigned j = 0; j < FMT_SS_GROUPS; j++) {
		total += a->v1[j];
		count += (double)a->n[j];
		energy += a->v2[j];
	}
	if (count == 0)
		return;
	double m = total / count;
	for (unsigned j = 0; j < FMT_SS_GROUPS; j++) {
		if (a->n[j] == 0)
			continue;
		double nj = (double)a->n[j];
		double q = a->v2[j] - 2 * m * a->v1[j] + nj * m * m;
		double c = a->sv[j] - m * a->s[j];
		/* no spread (a constant tensor): rounding, not evidence */
		double z = q > 1e-12 * energy / count * nj && q > 0 ? c / sqrt(q) : 0;
		sum->zw[j] += sqrt(nj) * z;
		sum->n[j] += nj;
	}
	sum->values += (uint64_t)count;
	sum->tensors++;
}

/* In-place Walsh-Hadamard transform of 256 values: out[a] = sum_x (-1)^popcount(a & x) in[x]. */
static void wht256(double *v)
{
	for (unsigned h = 1; h < 256; h <<= 1)
		for (unsigned i = 0; i < 256; i += 2 * h)
			for (unsigned k = i; k < i + h; k++) {
				double x = v[k], y = v[k + h];
				v[k] = x + y;
				v[k + h] = x - y;
			}
}

void fmt_ss_scores(const fmt_ss_sum *sum, double score[FMT_SS_BYTES][256])
{
	for (unsigned b = 0; b < FMT_SS_BYTES; b++) {
		for (unsigned x = 0; x < 256; x++) {
			unsigned j = 256 * b + x;
			score[b][x] = sum->n[j] > 0 ? sum->zw[j] / sqrt(sum->n[j]) : 0;
		}
		wht256(score[b]);
		for (unsigned a = 0; a < 256; a++)
			score[b][a] /= 16;
	}
}

uint64_t fmt_ss_decode(const double score[FMT_SS_BYTES][256], unsigned *ties)
{
	uint64_t payload = 0;
	*ties = 0;
	for (unsigned b = 0; b < FMT_SS_BYTES; b++) {
		unsigned best = 0;
		for (unsigned a = 1; a < 256; a++)
			if (score[b][a] > score[b][best])
				best = a;
		*ties += fmt_ss_rank(score[b], best) > 1;
		payload = payload << 8 | best;
	}
	return payload;
}

unsigned fmt_ss_rank(const double score[256], unsigned v)
{
	unsigned r = 0;
	for (unsigned a = 0; a < 256; a++)
		r += score[a] >= score[v];
	return r;
}

double fmt_ss_score_p(const double score[FMT_SS_BYTES][256], uint64_t payload)
{
	/* per byte, the 256 scores on the grid (rounded up), offset by the byte's lowest */
	int64_t atom[FMT_SS_RANKED_BYTES][256], low[FMT_SS_RANKED_BYTES], span = 0;
	double observed = 0;
	for (int b = 0; b < FMT_SS_RANKED_BYTES; b++) {
		observed += score[b][(payload >> (56 - 8 * b)) & 0xFF];
		int64_t lo = INT64_MAX, hi = INT64_MIN;
		for (int a = 0; a < 256; a++) {
			atom[b][a] = (int64_t)ceil(score[b][a] * GRID);
			lo = atom[b][a] < lo ? atom[b][a] : lo;
			hi = atom[b][a] > hi ? atom[b][a] : hi;
		}
		low[b] = lo;
		for (int a = 0; a < 256; a++)
			atom[b][a] -= lo;
		span += hi - lo;
	}
	uint64_t *dist = calloc((size_t)span + 1, sizeof *dist), *next = calloc((size_t)span + 1, sizeof *next);
	if (!dist || !next) {
		free(dist);
		free(next);
		return -1;
	}
	dist[0] = 1;
	int64_t len = 1, shift = 0;
	for (int b = 0; b < FMT_SS_RANKED_BYTES; b++) {
		int64_t width = 0;
		for (int a = 0; a < 256; a++)
			width = atom[b][a] > width ? atom[b][a] : width;
		memset(next, 0, (size_t)(len + width) * sizeof *next);
		for (int64_t i = 0; i < len; i++)
			if (dist[i])
				for (int a = 0; a < 256; a++)
					next[i + atom[b][a]] += dist[i];
		len += width;
		shift += low[b];
		uint64_t *t = dist;
		dist = next;
		next = t;
	}
	/* sum of the rounded scores >= observed  <=>  index >= ceil(GRID observed) - shift */
	double first = ceil(observed * GRID) - (double)shift;
	uint64_t count = 0;
	for (int64_t i = first < 0 ? 0 : (int64_t)first; i < len; i++)
		count += dist[i];
	free(dist);
	free(next);
	return ldexp((double)count, -8 * FMT_SS_RANKED_BYTES);
}

/* ---- fmtkit-ss/2 ---------------------------------------------------------------------------- */

#define STREAM2_LABEL "fmtkit-ss/2 stream"

void fmt_ss2_stream_key(const fmt_wm_key *key, uint8_t sk[32])
{
	fmt_wm_derive(key, STREAM2_LABEL, sk);
}

static uint64_t runs_of(uint64_t nelems)
{
	return (nelems + FMT_SS2_RUN - 1) / FMT_SS2_RUN;
}

static uint64_t run_len(uint64_t nelems, uint64_t run)
{
	uint64_t lo = run * FMT_SS2_RUN;
	return nelems - lo < FMT_SS2_RUN ? nelems - lo : FMT_SS2_RUN;
}

/* Bytes 4g .. 4g + 3 (u32 LE) of the ChaCha20 keystream with nonce nelems (u64 LE) || 1 (u32 LE),
 * modulo the group's run count. */
uint64_t fmt_ss2_marked_run(const uint8_t sk[32], uint64_t nelems, uint64_t group)
{
	uint8_t nonce[crypto_stream_chacha20_ietf_NONCEBYTES] = { 0 }, blk[64] = { 0 };
	for (int i = 0; i < 8; i++)
		nonce[i] = (uint8_t)(nelems >> (8 * i));
	nonce[8] = 1;
	crypto_stream_chacha20_ietf_xor_ic(blk, blk, sizeof blk, nonce, (uint32_t)(group / 16), sk);
	const uint8_t *u = blk + 4 * (group % 16);
	uint32_t x = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
	uint64_t first = group * FMT_SS2_GROUP, runs = runs_of(nelems);
	uint64_t count = runs - first < FMT_SS2_GROUP ? runs - first : FMT_SS2_GROUP;
	return first + x % count;
}

/* One run's sums over its finite values: their count, sum and sum of squares, and per code bit
 * c_j = sum s (v - m) (m: the run's mean). */
typedef struct run_sums {
	double c[FMT_SS_GROUPS];
	double count, sum, sumsq, q;   /* q: sum (v - m)^2 */
	uint32_t per_byte[FMT_SS_BYTES]; /* finite values on each payload byte's code bits */
	uint16_t r[FMT_SS2_RUN];
	double v[FMT_SS2_RUN];
} run_sums;

/* Sums in lanes i % 4, kept in registers (the index fixes the order of the additions). */
static void run_sums_compute(run_sums *rs, size_t n)
{
	double s0 = 0, s1 = 0, s2 = 0, s3 = 0, q0 = 0, q1 = 0, q2 = 0, q3 = 0, c0 = 0, c1 = 0, c2 = 0, c3 = 0;
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
#define ONE(k)                                                                                    \
	{                                                                                         \
		double v = rs->v[i + k];                                                          \
		int ok = isfinite(v) != 0;                                                        \
		v = ok ? v : 0;                                                                   \
		s##k += v;                                                                        \
		q##k += v * v;                                                                    \
		c##k += ok;                                                                       \
	}
		ONE(0) ONE(1) ONE(2) ONE(3)
#undef ONE
	}
	for (; i < n; i++) {   /* the tail: lanes 0, 1, 2 in turn, as the index says */
		double v = rs->v[i];
		int ok = isfinite(v) != 0;
		v = ok ? v : 0;
		double *sl = (i & 3) == 0 ? &s0 : (i & 3) == 1 ? &s1 : &s2;
		double *ql = (i & 3) == 0 ? &q0 : (i & 3) == 1 ? &q1 : &q2;
		double *cl = (i & 3) == 0 ? &c0 : (i & 3) == 1 ? &c1 : &c2;
		*sl += v;
		*ql += v * v;
		*cl += ok;
	}
	rs->count = (c0 + c1) + (c2 + c3);
	rs->sum = (s0 + s1) + (s2 + s3);
	rs->sumsq = (q0 + q1) + (q2 + q3);
	double m = rs->count > 0 ? rs->sum / rs->count : 0, d0 = 0, d1 = 0, d2 = 0, d3 = 0;
	memset(rs->c, 0, sizeof rs->c);
	memset(rs->per_byte, 0, sizeof rs->per_byte);
	for (i = 0; i + 4 <= n; i += 4) {
#define ONE(k)                                                                                    \
	{                                                                                         \
		double v = rs->v[i + k];                                                          \
		if (isfinite(v)) {                                                                \
			double x = v - m;                                                         \
			uint16_t r = rs->r[i + k];                                                \
			rs->c[r & (FMT_SS_GROUPS - 1)] += x * (1 - 2 * (double)((r >> 11) & 1)); \
			rs->per_byte[(r >> 8) & (FMT_SS_BYTES - 1)]++;                            \
			d##k += x * x;                                                            \
		}                                                                                 \
	}
		ONE(0) ONE(1) ONE(2) ONE(3)
#undef ONE
	}
	for (; i < n; i++) {
		double v = rs->v[i];
		if (!isfinite(v))
			continue;
		double x = v - m;
		rs->c[rs->r[i] & (FMT_SS_GROUPS - 1)] += rs->r[i] & FMT_SS_GROUPS ? -x : x;
		rs->per_byte[(rs->r[i] >> 8) & (FMT_SS_BYTES - 1)]++;
		*((i & 3) == 0 ? &d0 : (i & 3) == 1 ? &d1 : &d2) += x * x;
	}
	rs->q = (d0 + d1) + (d2 + d3);
}

/* score_kb(a) = sum_x (-1)^popcount(a AND x) c_{256b+x} / sqrt(q / 8) (about N(0,1) without a
 * mark); 0 for a run without spread (constant: rounding, not evidence). */
static int run_scores(const run_sums *rs, double score[FMT_SS_BYTES][256])
{
	if (!(rs->count > 0 && rs->q > 0 && rs->q > 1e-12 * rs->sumsq))
		return 0;
	double scale = 1 / sqrt(rs->q / FMT_SS_BYTES);
	for (unsigned b = 0; b < FMT_SS_BYTES; b++) {
		memcpy(score[b], rs->c + 256 * b, sizeof score[b]);
		wht256(score[b]);
		for (unsigned a = 0; a < 256; a++)
			score[b][a] *= scale;
	}
	return 1;
}

/* The budget (man/fmtkit-watermark.7, "THE GROUP'S SPREAD"): a marked run carries its group's
 * share of strength^2 x the tensor's sum of squared deviations, bounded from below by the group's
 * own, q_g (the law of total variance), which is in turn bounded from below from the float32 sums:
 * their rounding is at most 98 x 2^-24 S2, and SLACK takes off 2^-14 S2. MU keeps the amplitude's
 * own roundings from carrying the energy over; rounding toward v keeps each change within its
 * delta. So the tensor's RMS change is at most strength x (1 - 2^-16) x its std, whatever its
 * values are. */
#define SS2_MU (1 - 0x1p-16)
#define SS2_SLACK 0x1p-14
#define SS2_TINY 0x1p-100          /* below this S2 the float32 squares may underflow: no mark */

/* c: 0 when the marked run's mean is small beside its spread (16 R1^2 <= n R2: the sums then
 * need no subtraction), else that mean rounded to the tensor's type. */
static double ss2_shift(const fmt_ss2_spread *run, int width)
{
	if (run->n == 0 || !isfinite(run->s1) || !isfinite(run->s2) ||
	    16 * (run->s1 * run->s1) <= (double)run->n * run->s2)
		return 0;
	double m = run->s1 / (double)run->n;
	return width == 4 ? (double)(float)m : m;
}

/* q_g, in this order of operations (every implementation finds the same bits); 0 for a group
 * without spread, or whose sums overflowed. */
static double ss2_budget(const fmt_ss2_spread *g)
{
	if (g->n == 0 || !isfinite(g->s1) || !isfinite(g->s2) || !(g->s2 >= SS2_TINY))
		return 0;
	double q = (g->s2 - g->s2 * SS2_SLACK) - g->s1 * g->s1 / (double)g->n;
	return q > 0 ? q : 0;
}

/* The report's moments of the original values: the group's exact count, sum and (estimated,
 * without the slack) sum of squared deviations. */
static void ss2_dist_group(fmt_wm_dist *d, const fmt_ss2_spread *g, double c)
{
	if (g->n == 0)
		return;
	double n = (double)g->n, mean = c + g->s1 / n, q = g->s2 - g->s1 * g->s1 / n;
	q = q > 0 ? q : 0;
	d->finite += g->n;
	d->eligible += g->n;
	d->sum0 += n * mean;
	d->q0 += q;
	d->sumsq0 += q + n * mean * mean;
	d->sumsq1 += q + n * mean * mean;
}

/* The marked run as embed sees it: its values (as doubles), keystream, and per payload byte the
 * count of finite values and their lean sum_i d_j s_i (v_i - m) = sum_x d_x c_x (m: the run's
 * mean), whose sign is the direction. */
typedef struct ss2_run {
	double v[FMT_SS2_RUN], delta[FMT_SS2_RUN], lean[FMT_SS_BYTES];
	uint16_t r[FMT_SS2_RUN];
	uint32_t per_byte[FMT_SS_BYTES];
} ss2_run;

static void ss2_lean(const fmt_ss_params *prm, ss2_run *run, size_t len)
{
	double s0 = 0, s1 = 0, n0 = 0, n1 = 0;
	for (size_t i = 0; i + 1 < len; i += 2) {
		int ok0 = isfinite(run->v[i]) != 0, ok1 = isfinite(run->v[i + 1]) != 0;
		s0 += ok0 ? run->v[i] : 0;
		s1 += ok1 ? run->v[i + 1] : 0;
		n0 += ok0;
		n1 += ok1;
	}
	if (len % 2 && isfinite(run->v[len - 1])) {
		s0 += run->v[len - 1];
		n0 += 1;
	}
	double m = n0 + n1 > 0 ? (s0 + s1) / (n0 + n1) : 0;
	memset(run->lean, 0, sizeof run->lean);
	memset(run->per_byte, 0, sizeof run->per_byte);
	for (size_t i = 0; i < len; i++) {
		if (!isfinite(run->v[i]))
			continue;
		unsigned j = run->r[i] & (FMT_SS_GROUPS - 1);
		double s = 1 - 2 * (double)((run->r[i] >> 11) & 1);   /* no branch: the bit is a coin */
		run->lean[j >> 8] += (run->v[i] - m) * (prm->d[j] * s);
		run->per_byte[j >> 8]++;
	}
}

/* delta_i = s_i x e_b x A_b x d_j: along the code word where the run's values lean to it
 * already, else against it; the buyer-hash bytes (what prove weighs) twice the CRC bytes'
 * amplitude. */
static void ss2_deltas(const fmt_ss_params *prm, ss2_run *run, size_t len, double amp)
{
	double sign[FMT_SS_BYTES];
	for (unsigned b = 0; b < FMT_SS_BYTES; b++) {
		double a = b < FMT_SS_RANKED_BYTES ? 2 * amp : amp;
		sign[b] = run->lean[b] >= 0 ? a : -a;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned j = run->r[i] & (FMT_SS_GROUPS - 1);
		double s = 1 - 2 * (double)((run->r[i] >> 11) & 1);
		run->delta[i] = sign[j >> 8] * prm->d[j] * s;
	}
}

static void ss2_embed_group(const fmt_ss_params *prm, uint8_t *p, uint64_t nelems, uint64_t first, size_t n,
			    int width, fmt_wm_dist *d)
{
	ss2_run rn, *rs = &rn;          /* 13 KiB: on the stack, not a malloc per group */
	uint64_t run = fmt_ss2_marked_run(prm->sk, nelems, first / FMT_SS_BLOCK);
	uint64_t lo = run * FMT_SS2_RUN, len = run_len(nelems, run);
	uint8_t *at = p + (lo - first) * (uint64_t)width;
	fmt_ss2_spread rsp, group;
	fmt_ss2_spread_of(at, (size_t)len, width, 0, &rsp);
	double c = ss2_shift(&rsp, width);
	fmt_ss2_spread_of(p, n, width, c, &group);
	ss2_dist_group(d, &group, c);
	double budget = ss2_budget(&group);
	if (budget <= 0)
		return;
	if (width == 4)
		for (size_t i = 0; i < len; i++)
			rs->v[i] = load_value(at, i, 4);
	else
		memcpy(rs->v, at, (size_t)len * 8);
	fmt_ss_stream(prm->sk, nelems, lo, (size_t)len, rs->r);
	ss2_lean(prm, rs, (size_t)len);
	/* E = sum_b n_b w_b^2: the run's energy sum_b n_b (w_b amp)^2 = strength^2 mu^2 q_g */
	double energy = 0;
	for (unsigned b = 0; b < FMT_SS_BYTES; b++)
		energy += rs->per_byte[b] * (b < FMT_SS_RANKED_BYTES ? 4.0 : 1.0);
	if (energy <= 0)
		return;
	double amp = (prm->strength * SS2_MU) * sqrt(budget / energy);
	if (!(amp > 0))
		return;
	ss2_deltas(prm, rs, (size_t)len, amp);
	fmt_ss2_change ch;
	fmt_ss2_mark_of(at, rs->delta, (size_t)len, width, &ch);
	d->selected += ch.finite;
	d->marked += ch.marked;
	d->sum_d += ch.d;
	d->sumsq_d += ch.dd;
	d->sumsq1 += 2 * ch.vd + ch.dd;
}

void fmt_ss2_embed(const fmt_ss_params *prm, uint8_t *p, uint64_t nelems, uint64_t first, size_t n,
		   int width, fmt_wm_dist *d)
{
	fmt_wm_dist group = { .values = n };
	if (n)
		ss2_embed_group(prm, p, nelems, first, n, width, &group);
	fmt_wm_dist_merge(d, &group);
}

static void acc_run(const uint8_t sk[32], fmt_ss2_acc *a, run_sums *rs, uint64_t nelems, uint64_t run)
{
	size_t len = (size_t)run_len(nelems, run);
	fmt_ss_stream(sk, nelems, run * FMT_SS2_RUN, len, rs->r);
	run_sums_compute(rs, len);
	double score[FMT_SS_BYTES][256];
	if (!run_scores(rs, score))
		return;
	double w = sqrt(rs->count);
	for (unsigned b = 0; b < FMT_SS_BYTES; b++) {
		for (unsigned x = 0; x < 256; x++)
			a->y[b][x] += w * fabs(score[b][x]);
		a->w[b] += rs->count;
	}
	a->values += (uint64_t)rs->count;
	a->runs++;
}

#define ACC2_LOOP(V)                                                                               \
	do {                                                                                       \
		run_sums *rs = malloc(sizeof *rs);                                                 \
		if (!rs)                                                                           \
			return;                                                                    \
		for (uint64_t g = first / FMT_SS_BLOCK; g * FMT_SS_BLOCK < first + n; g++) {         \
			uint64_t run = fmt_ss2_marked_run(sk, nelems, g), lo = run * FMT_SS2_RUN;     \
			uint64_t len = run_len(nelems, run);                                       \
			if (lo < first || lo + len > first + n)                                    \
				continue;  /* not all of it here: callers give whole groups */     \
			for (size_t i = 0; i < len; i++)                                           \
				rs->v[i] = (double)(V)[lo - first + i];                            \
			acc_run(sk, a, rs, nelems, run);                                           \
		}                                                                                  \
		free(rs);                                                                          \
	} while (0)

void fmt_ss2_acc_f32(const uint8_t sk[32], fmt_ss2_acc *a, const float *v, uint64_t nelems, uint64_t first, size_t n)
{
	ACC2_LOOP(v);
}

void fmt_ss2_acc_f64(const uint8_t sk[32], fmt_ss2_acc *a, const double *v, uint64_t nelems, uint64_t first,
		     size_t n)
{
	ACC2_LOOP(v);
}

void fmt_ss2_acc_merge(fmt_ss2_acc *into, const fmt_ss2_acc *piece)
{
	for (unsigned b = 0; b < FMT_SS_BYTES; b++) {
		for (unsigned x = 0; x < 256; x++)
			into->y[b][x] += piece->y[b][x];
		into->w[b] += piece->w[b];
	}
	into->values += piece->values;
	into->runs += piece->runs;
}

void fmt_ss2_scores(const fmt_ss2_acc *a, double score[FMT_SS_BYTES][256])
{
	for (unsigned b = 0; b < FMT_SS_BYTES; b++)
		for (unsigned x = 0; x < 256; x++)
			score[b][x] = a->w[b] > 0 ? a->y[b][x] / sqrt(a->w[b]) : 0;
}
