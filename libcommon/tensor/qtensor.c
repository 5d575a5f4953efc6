/* Compressed tensors (specs/apsim.md §4): descriptors and their checks, the writer's quantizer
 * and the dequantizer as on-demand tensor readers, and the lossless GGUF Q8_0/Q4_0 mappings.
 *
 * Policies:
 *  - Quantizing computes every scale once (one streaming pass over the source, in parallel on
 *    the pool, exact whatever the thread count: a maximum does not depend on order) and keeps
 *    them with the tensor; codes are then produced for any byte range.
 *  - A scale that underflows to 0 for a block of tiny non-zero values gives codes 0 (the block
 *    decodes to zeros), like a block of zeros.
 *  - int4 codes are packed per row (the codes tensor's last dimension is ceil(n/2)); fp6 and
 *    fp4 over the flattened tensor.
 *  - Decoding accepts every code the packing can hold (int8 -128, int4 -8: GGUF Q4_0 needs
 *    it); scales must be finite (InvalidFormat when read).
 *  - A GGUF block whose fp16 d is infinite or NaN (Q4_0 of values beyond the fp16 range) has
 *    no valid Apsi scale: reading that scale is InvalidFormat naming the tensor and block. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/convert.h"
#include "fmt/half.h"
#include "fmt/overflow.h"
#include "fmt/qtensor.h"

#define NM "'%.200s'"
#define TASK_ELEMS (64u * 1024u)
#define QSCALE_SUFFIX "__qscale"

typedef struct qinfo {
	const char *name;
	fmt_dtype codes;
	const char *packing;
	float qmax;
	uint64_t codes_align;   /* bytes of codes that hold whole elements */
} qinfo;

static const qinfo QINFO[] = {
	[FMT_Q_INT8] = { "int8", FMT_DT_I8, "none", 127.0f, 1 },
	[FMT_Q_INT4] = { "int4", FMT_DT_U8, "nibble-lo-first", 7.0f, 1 },
	[FMT_Q_FP8] = { "fp8", FMT_DT_F8_E4M3, "none", 448.0f, 1 },
	[FMT_Q_FP6] = { "fp6", FMT_DT_F6_E3M2, "4-in-3", 28.0f, 3 },
	[FMT_Q_FP4] = { "fp4", FMT_DT_F4, "nibble-lo-first", 6.0f, 1 },
	[FMT_Q_BF16] = { "bf16", FMT_DT_BF16, "none", 0.0f, 2 },
};
#define N_QFORMATS (sizeof QINFO / sizeof QINFO[0])

static int qformat_ok(fmt_qformat f)
{
	return (unsigned)f < N_QFORMATS;
}

const char *fmt_qformat_name(fmt_qformat f)
{
	return qformat_ok(f) ? QINFO[f].name : "?";
}

int fmt_qformat_from_name(const char *name, fmt_qformat *out)
{
	for (size_t i = 0; i < N_QFORMATS; i++)
		if (strcmp(QINFO[i].name, name) == 0) {
			*out = (fmt_qformat)i;
			return 1;
		}
	return 0;
}

fmt_dtype fmt_qformat_codes_dtype(fmt_qformat f)
{
	return qformat_ok(f) ? QINFO[f].codes : FMT_DT_INVALID;
}

const char *fmt_qformat_packing(fmt_qformat f)
{
	return qformat_ok(f) ? QINFO[f].packing : "?";
}

/* ---- geometry: which scale each element uses ---- */

typedef struct geom {
	int nd;
	uint64_t shape[FMT_MAX_DIMS], sshape[FMT_MAX_DIMS], bs[FMT_MAX_DIMS];
	uint64_t n;          /* elements */
	uint64_t n_scales;
	uint64_t row;        /* last dimension (1 for a scalar) */
	uint64_t row_bytes;  /* int4 codes bytes per row */
} geom;

/* q is already checked (or planned): products fit, block sizes divide. */
static void geom_init(geom *g, const fmt_qtensor *q)
{
	memset(g, 0, sizeof *g);
	g->nd = q->ndim;
	g->n = 1;
	g->n_scales = 1;
	for (int d = 0; d < q->ndim; d++) {
		g->shape[d] = q->shape[d];
		g->sshape[d] = q->scale_shape[d];
		g->bs[d] = q->scale_shape[d] ? q->shape[d] / q->scale_shape[d] : 1;
		if (g->bs[d] == 0)
			g->bs[d] = 1;
		g->n *= q->shape[d];
		g->n_scales *= q->scale_shape[d];
	}
	if (q->format == FMT_Q_BF16)
		g->n_scales = 0;
	g->row = q->ndim ? q->shape[q->ndim - 1] : 1;
	g->row_bytes = (g->row + 1) / 2;
}

/* Scale index of flat element i; *run = elements from i on that share it along the last
 * dimension. */
static uint64_t scale_index(const geom *g, uint64_t i, uint64_t *run)
{
	uint64_t sidx = 0, mult = 1;
	*run = 1;
	for (int d = g->nd - 1; d >= 0; d--) {
		uint64_t id = i % g->shape[d];
		i /= g->shape[d];
		if (d == g->nd - 1) {
			uint64_t to_block = g->bs[d] - id % g->bs[d], to_row = g->shape[d] - id;
			*run = to_block < to_row ? to_block : to_row;
		}
		sidx += id / g->bs[d] * mult;
		mult *= g->sshape[d];
	}
	return sidx;
}

/* Byte range [*b0, *b1) of the codes that holds elements [e0, e1) (e1 > e0). */
static void code_bytes(fmt_qformat f, const geom *g, uint64_t e0, uint64_t e1, uint64_t *b0, uint64_t *b1)
{
	uint64_t last = e1 - 1;
	switch (f) {
	case FMT_Q_BF16:
		*b0 = 2 * e0;
		*b1 = 2 * e1;
		break;
	case FMT_Q_FP4:
		*b0 = e0 / 2;
		*b1 = last / 2 + 1;
		break;
	case FMT_Q_FP6:
		*b0 = e0 / 4 * 3;
		*b1 = last / 4 * 3 + 3;
		break;
	case FMT_Q_INT4:
		*b0 = e0 / g->row * g->row_bytes + e0 % g->row / 2;
		*b1 = last / g->row * g->row_bytes + last % g->row / 2 + 1;
		break;
	default:
		*b0 = e0;
		*b1 = e1;
	}
}

/* Elements [*e0, *e1) whose codes are the bytes [b0, b1) (b0, b1 on element boundaries). */
static void code_elems(fmt_qformat f, const geom *g, uint64_t b0, uint64_t b1, uint64_t *e0, uint64_t *e1)
{
	switch (f) {
	case FMT_Q_BF16:
		*e0 = b0 / 2;
		*e1 = b1 / 2;
		break;
	case FMT_Q_FP4:
		*e0 = 2 * b0;
		*e1 = 2 * b1 < g->n ? 2 * b1 : g->n;
		break;
	case FMT_Q_FP6:
		*e0 = b0 / 3 * 4;
		*e1 = b1 / 3 * 4 < g->n ? b1 / 3 * 4 : g->n;
		break;
	case FMT_Q_INT4: {
		uint64_t l = b1 - 1, end = 2 * (l % g->row_bytes) + 2;
		*e0 = b0 / g->row_bytes * g->row + 2 * (b0 % g->row_bytes);
		*e1 = l / g->row_bytes * g->row + (end < g->row ? end : g->row);
		break;
	}
	default:
		*e0 = b0;
		*e1 = b1;
	}
}

/* ---- decoding tables ---- */

static float fp8_table[256], fp6_table[64], fp4_table[16];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void)
{
	for (unsigned i = 0; i < 256; i++)
		fp8_table[i] = fmt_minifloat_decode(FMT_Q_FP8, i);
	for (unsigned i = 0; i < 64; i++)
		fp6_table[i] = fmt_minifloat_decode(FMT_Q_FP6, i);
	for (unsigned i = 0; i < 16; i++)
		fp4_table[i] = fmt_minifloat_decode(FMT_Q_FP4, i);
}

/* decode(code) of element e from codes bytes starting at byte base. */
static float decode_code(fmt_qformat f, const geom *g, const uint8_t *buf, uint64_t base, uint64_t e)
{
	switch (f) {
	case FMT_Q_INT8:
		return (float)(int8_t)buf[e - base];
	case FMT_Q_FP8:
		return fp8_table[buf[e - base]];
	case FMT_Q_BF16:
		return fmt_bf16_to_f32(fmt_rd_u16(buf + 2 * e - base));
	case FMT_Q_FP4: {
		uint8_t b = buf[e / 2 - base];
		return fp4_table[e & 1 ? b >> 4 : b & 15];
	}
	case FMT_Q_FP6: {
		const uint8_t *p = buf + e / 4 * 3 - base;
		uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
		return fp6_table[v >> (6 * (e % 4)) & 63];
	}
	case FMT_Q_INT4: {
		uint64_t col = e % g->row;
		uint8_t b = buf[e / g->row * g->row_bytes + col / 2 - base];
		int nib = col & 1 ? b >> 4 : b & 15;
		return (float)(nib >= 8 ? nib - 16 : nib);
	}
	}
	return NAN;
}

/* The code of value x for scale s (not bf16). */
static unsigned quantize_value(fmt_qformat f, float x, float s)
{
	if (s == 0.0f)
		return 0;
	float y = x / s;
	float qmax = QINFO[f].qmax;
	if (f == FMT_Q_INT8 || f == FMT_Q_INT4) {
		float r = rintf(y);
		r = r > qmax ? qmax : r < -qmax ? -qmax : r;
		int c = (int)r;
		return f == FMT_Q_INT8 ? (unsigned)(uint8_t)(int8_t)c : (unsigned)c & 15u;
	}
	return fmt_minifloat_encode(f, y);
}

/* ---- source values ---- */

static int plain_decodable(fmt_dtype t)
{
	const fmt_dtype_info *d = fmt_dtype_get(t);
	return d && d->block_elems == 1 && d->block_bits % 8 == 0 && fmt_decode_supported(t);
}

static fmt_kind read_values(const fmt_model *in, const fmt_tensor *src, uint64_t e0, uint64_t n,
			    float *vals, uint8_t *raw, fmt_err *e)
{
	uint64_t es = fmt_dtype_get(src->dtype)->block_bits / 8;
	fmt_kind k = fmt_tensor_read(in, src, e0 * es, raw, (size_t)(n * es), e);
	if (k == FMT_OK)
		k = fmt_decode_f32(src->dtype, raw, n, vals, e);
	return k;
}

/* Shared error slot of parallel tasks: the error at the lowest position wins, so the report
 * does not depend on the thread count. */
typedef struct task_err {
	pthread_mutex_t lock;
	fmt_kind kind;
	uint64_t pos;
	fmt_err err;
} task_err;

static void task_err_init(task_err *t)
{
	pthread_mutex_init(&t->lock, NULL);
	t->kind = FMT_OK;
	t->pos = UINT64_MAX;
}

static void task_err_put(task_err *t, uint64_t pos, const fmt_err *e)
{
	pthread_mutex_lock(&t->lock);
	if (t->kind == FMT_OK || pos < t->pos) {
		t->kind = e->kind;
		t->pos = pos;
		t->err = *e;
	}
	pthread_mutex_unlock(&t->lock);
}

static fmt_kind task_err_done(task_err *t, fmt_err *e)
{
	pthread_mutex_destroy(&t->lock);
	if (t->kind != FMT_OK)
		*e = t->err;
	return t->kind;
}

static void run_tasks(fmt_pool *pool, size_t n, fmt_task_fn fn, void *ctx)
{
	if (pool)
		fmt_pool_run(pool, n, fn, ctx);
	else
		for (size_t i = 0; i < n; i++)
			fn(ctx, i);
}

/* ---- quantizer ---- */

typedef struct qctx {
	int refs;
	pthread_mutex_t lock;
	const fmt_model *in;
	const fmt_tensor *src;
	char *name;
	fmt_qformat format;
	geom g;
	fmt_pool *pool;
	int scales_state;     /* 0 not computed, 1 computed, -1 failed */
	float *scales;
	uint32_t *maxbits;    /* |x| maxima as float bits while computing */
	fmt_kind scales_kind;
	fmt_err scales_err;
} qctx;

static void qctx_release(void *p)
{
	qctx *c = p;
	if (!c || --c->refs > 0)
		return;
	pthread_mutex_destroy(&c->lock);
	free(c->scales);
	free(c->maxbits);
	free(c->name);
	free(c);
}

/* Non-negative floats order like their bit patterns: an atomic maximum on the bits. */
static void atomic_max_bits(uint32_t *slot, uint32_t bits)
{
	uint32_t cur = __atomic_load_n(slot, __ATOMIC_RELAXED);
	while (bits > cur && !__atomic_compare_exchange_n(slot, &cur, bits, 1, __ATOMIC_RELAXED,
							  __ATOMIC_RELAXED))
		;
}

typedef struct maxjob {
	qctx *c;
	task_err err;
} maxjob;

static void max_task(void *arg, size_t index)
{
	maxjob *job = arg;
	qctx *c = job->c;
	uint64_t e0 = (uint64_t)index * TASK_ELEMS;
	uint64_t n = c->g.n - e0 < TASK_ELEMS ? c->g.n - e0 : TASK_ELEMS;
	fmt_err e;
	fmt_err_clear(&e);
	float *vals = malloc((size_t)n * sizeof *vals);
	uint8_t *raw = malloc((size_t)n * 8);
	fmt_kind k = vals && raw ? read_values(c->in, c->src, e0, n, vals, raw, &e)
				 : fmt_fail(&e, FMT_IO, "out of memory quantizing " NM, c->name);
	for (uint64_t i = 0; k == FMT_OK && i < n;) {
		uint64_t run, sidx = scale_index(&c->g, e0 + i, &run);
		if (run > n - i)
			run = n - i;
		float mx = 0.0f;
		for (uint64_t j = 0; j < run; j++) {
			float a = fabsf(vals[i + j]);
			if (!isfinite(a)) {
				k = fmt_fail(&e, FMT_INVALID_FORMAT, "tensor " NM ": element %llu is %s; cannot quantize to %s",
					     c->src->name, (unsigned long long)(e0 + i + j),
					     isnan(vals[i + j]) ? "NaN" : vals[i + j] > 0 ? "+Inf" : "-Inf",
					     fmt_qformat_name(c->format));
				break;
			}
			mx = a > mx ? a : mx;
		}
		uint32_t bits;
		memcpy(&bits, &mx, sizeof bits);
		atomic_max_bits(&c->maxbits[sidx], bits);
		i += run;
	}
	if (k != FMT_OK)
		task_err_put(&job->err, e0, &e);
	free(vals);
	free(raw);
}

static fmt_kind compute_scales(qctx *c, fmt_err *e)
{
	size_t ns = (size_t)c->g.n_scales;
	c->maxbits = calloc(ns ? ns : 1, sizeof *c->maxbits);
	c->scales = malloc((ns ? ns : 1) * sizeof *c->scales);
	if (!c->maxbits || !c->scales)
		return fmt_fail(e, FMT_IO, "out of memory for the scales of " NM, c->name);
	maxjob job = { .c = c };
	task_err_init(&job.err);
	run_tasks(c->pool, (size_t)((c->g.n + TASK_ELEMS - 1) / TASK_ELEMS), max_task, &job);
	fmt_kind k = task_err_done(&job.err, e);
	for (size_t i = 0; k == FMT_OK && i < ns; i++) {
		float mx;
		memcpy(&mx, &c->maxbits[i], sizeof mx);
		c->scales[i] = mx / QINFO[c->format].qmax;
	}
	free(c->maxbits);
	c->maxbits = NULL;
	return k;
}

static fmt_kind ensure_scales(qctx *c, fmt_err *e)
{
	pthread_mutex_lock(&c->lock);
	if (c->scales_state == 0) {
		fmt_err err;
		fmt_err_clear(&err);
		c->scales_kind = compute_scales(c, &err);
		c->scales_err = err;
		c->scales_state = c->scales_kind == FMT_OK ? 1 : -1;
	}
	fmt_kind k = c->scales_kind;
	if (k != FMT_OK)
		*e = c->scales_err;
	pthread_mutex_unlock(&c->lock);
	return k;
}

typedef struct codejob {
	qctx *c;
	uint64_t off, n;       /* the byte range asked for */
	uint64_t task_bytes;
	uint8_t *dst;
	task_err err;
} codejob;

static void pack_codes(const qctx *c, const uint8_t *codes, uint64_t e0, uint64_t b0, uint64_t b1,
		       uint8_t *dst)
{
	const geom *g = &c->g;
	switch (c->format) {
	case FMT_Q_FP4:
		for (uint64_t b = b0; b < b1; b++) {
			uint64_t el = 2 * b - e0;
			unsigned hi = 2 * b + 1 < g->n ? codes[el + 1] : 0;
			dst[b - b0] = (uint8_t)(codes[el] | hi << 4);
		}
		break;
	case FMT_Q_FP6:
		for (uint64_t b = b0; b < b1; b += 3) {
			uint64_t el = b / 3 * 4 - e0;
			uint32_t v = (uint32_t)codes[el] | (uint32_t)codes[el + 1] << 6 |
				     (uint32_t)codes[el + 2] << 12 | (uint32_t)codes[el + 3] << 18;
			dst[b - b0] = (uint8_t)v;
			dst[b - b0 + 1] = (uint8_t)(v >> 8);
			dst[b - b0 + 2] = (uint8_t)(v >> 16);
		}
		break;
	case FMT_Q_INT4:
		for (uint64_t b = b0; b < b1; b++) {
			uint64_t j = b % g->row_bytes, el = b / g->row_bytes * g->row + 2 * j - e0;
			unsigned hi = 2 * j + 1 < g->row ? codes[el + 1] : 0;
			dst[b - b0] = (uint8_t)(codes[el] | hi << 4);
		}
		break;
	default:
		memcpy(dst, codes, (size_t)(b1 - b0));
	}
}

static void code_task(void *arg, size_t index)
{
	codejob *job = arg;
	qctx *c = job->c;
	uint64_t b0 = job->off + (uint64_t)index * job->task_bytes;
	uint64_t end = job->off + job->n;
	uint64_t b1 = end - b0 < job->task_bytes ? end : b0 + job->task_bytes;
	uint64_t e0, e1;
	code_elems(c->format, &c->g, b0, b1, &e0, &e1);
	uint64_t n = e1 - e0;
	fmt_err e;
	fmt_err_clear(&e);
	float *vals = malloc((size_t)(n ? n : 1) * sizeof *vals);
	uint8_t *raw = malloc((size_t)(n ? n : 1) * 8);
	uint8_t *codes = malloc((size_t)(n ? n : 1) + 4);
	fmt_kind k = vals && raw && codes ? read_values(c->in, c->src, e0, n, vals, raw, &e)
					  : fmt_fail(&e, FMT_IO, "out of memory quantizing " NM, c->name);
	uint8_t *dst = job->dst + (b0 - job->off);
	uint64_t at;
	if (k == FMT_OK && c->format == FMT_Q_BF16 && fmt_overflow_find(FMT_DT_BF16, vals, n, &at)) {
		/* a finite value bf16 rounds to infinity (fmt-convert --overflow widens or saturates
		 * such tensors as plain ones before they get here) */
		k = fmt_overflow_fail(&e, c->src->name, FMT_DT_BF16, e0 + at, vals[at]);
	} else if (k == FMT_OK && c->format == FMT_Q_BF16) {
		for (uint64_t i = 0; i < n; i++)
			fmt_wr_u16(dst + 2 * i, fmt_f32_to_bf16(vals[i]));
	} else if (k == FMT_OK) {
		for (uint64_t i = 0; i < n;) {
			uint64_t run, sidx = scale_index(&c->g, e0 + i, &run);
			float s = c->scales[sidx];
			if (run > n - i)
				run = n - i;
			for (uint64_t j = 0; j < run; j++)
				codes[i + j] = (uint8_t)quantize_value(c->format, vals[i + j], s);
			i += run;
		}
		pack_codes(c, codes, e0, b0, b1, dst);
	}
	if (k != FMT_OK)
		task_err_put(&job->err, b0, &e);
	free(vals);
	free(raw);
	free(codes);
}

static fmt_kind codes_read(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst,
			   size_t n, fmt_err *e)
{
	(void)m;
	qctx *c = t->reader_ctx;
	if (n == 0)
		return FMT_OK;
	if (c->format != FMT_Q_BF16) {
		fmt_kind k = ensure_scales(c, e);
		if (k != FMT_OK)
			return k;
	}
	uint64_t align = QINFO[c->format].codes_align;
	codejob job = { .c = c, .off = off, .n = n, .dst = dst };
	job.task_bytes = (uint64_t)TASK_ELEMS / align * align;
	task_err_init(&job.err);
	run_tasks(c->pool, (size_t)((n + job.task_bytes - 1) / job.task_bytes), code_task, &job);
	return task_err_done(&job.err, e);
}

static fmt_kind scales_read(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst,
			    size_t n, fmt_err *e)
{
	(void)m;
	qctx *c = t->reader_ctx;
	fmt_kind k = ensure_scales(c, e);
	for (size_t i = 0; k == FMT_OK && i < n / 4; i++) {
		uint32_t bits;
		memcpy(&bits, &c->scales[off / 4 + i], sizeof bits);
		fmt_wr_u32(dst + 4 * i, bits);
	}
	return k;
}

/* ---- descriptors ---- */

static fmt_kind check_shape_rules(const fmt_qtensor *q, fmt_err *e)
{
	if (!qformat_ok(q->format))
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": unknown format", q->name);
	if (q->ndim < 0 || q->ndim > FMT_MAX_DIMS)
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": rank %d", q->name, q->ndim);
	if (q->axis < -1 || q->axis >= (q->ndim > 0 ? q->ndim : 0) || (q->axis >= 0 && q->ndim == 0))
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": axis %d is not a dimension of its rank-%d shape",
				q->name, q->axis, q->ndim);
	uint64_t n = 1;
	for (int d = 0; d < q->ndim; d++)
		if (fmt_mul_u64(n, q->shape[d], &n))
			return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": shape overflows", q->name);
	if (q->zero_point != 0 && q->format != FMT_Q_INT8 && q->format != FMT_Q_INT4)
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": %s codes have no zero point (has %d)", q->name,
				fmt_qformat_name(q->format), (int)q->zero_point);
	if ((q->format == FMT_Q_INT8 && (q->zero_point < -128 || q->zero_point > 127)) ||
	    (q->format == FMT_Q_INT4 && (q->zero_point < -8 || q->zero_point > 7)))
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": zero point %d is outside the %s codes", q->name,
				(int)q->zero_point, fmt_qformat_name(q->format));
	if (q->format == FMT_Q_BF16) {
		for (int d = 0; d < q->ndim; d++)
			if (q->scale_shape[d])
				return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": bf16 has no scales (scale_shape must be [])",
						q->name);
		if (q->axis != -1)
			return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": bf16 has no scales (axis must be null)", q->name);
		return FMT_OK;
	}
	for (int d = 0; d < q->ndim; d++) {
		uint64_t s = q->scale_shape[d], x = q->shape[d];
		if (s == 0 ? x != 0 : x % s != 0)
			return fmt_fail(e, FMT_INVALID_FORMAT,
					"qtensor " NM ": scale_shape[%d] = %llu does not divide shape[%d] = %llu",
					q->name, d, (unsigned long long)s, d, (unsigned long long)x);
		if (q->axis >= 0 && (d == q->axis ? s != x : s != 1))
			return fmt_fail(e, FMT_INVALID_FORMAT,
					"qtensor " NM ": axis %d means one scale per index of dimension %d, but scale_shape[%d] = %llu",
					q->name, q->axis, q->axis, d, (unsigned long long)s);
	}
	if (q->format == FMT_Q_FP6 && n % 4 != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": fp6 needs an element count that is a multiple of 4 (has %llu)",
				q->name, (unsigned long long)n);
	if (q->format == FMT_Q_FP4 && n % 2 != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": fp4 needs an even element count (has %llu)",
				q->name, (unsigned long long)n);
	return FMT_OK;
}

static int same_dims(const uint64_t *a, const uint64_t *b, int nd)
{
	for (int d = 0; d < nd; d++)
		if (a[d] != b[d])
			return 0;
	return 1;
}

/* The codes tensor's shape: the logical shape, int4 with a last dimension of ceil(n/2). */
static void codes_shape(const fmt_qtensor *q, uint64_t *shape)
{
	memcpy(shape, q->shape, sizeof q->shape);
	if (q->format == FMT_Q_INT4 && q->ndim > 0)
		shape[q->ndim - 1] = (q->shape[q->ndim - 1] + 1) / 2;
}

fmt_kind fmt_qtensor_check(const fmt_qtensor *q, const fmt_tensor *codes, const fmt_tensor *scales,
			   fmt_err *e)
{
	fmt_kind k = check_shape_rules(q, e);
	if (k != FMT_OK)
		return k;
	if (!codes)
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": no codes tensor of that name", q->name);
	fmt_dtype want = QINFO[q->format].codes;
	if (codes->dtype != want)
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": codes tensor is %s, format %s needs %s",
				q->name, fmt_dtype_name(codes->dtype), QINFO[q->format].name, fmt_dtype_name(want));
	uint64_t cs[FMT_MAX_DIMS];
	codes_shape(q, cs);
	if (codes->ndim != q->ndim || !same_dims(codes->shape, cs, q->ndim))
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": codes tensor shape does not match the logical shape%s",
				q->name, q->format == FMT_Q_INT4 ? " (int4: last dimension ceil(n/2))" : "");
	if (q->format == FMT_Q_BF16) {
		if (scales)
			return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": bf16 has no scales, but tensor " NM " exists",
					q->name, scales->name);
		return FMT_OK;
	}
	if (!scales && q->scales)
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": scales tensor " NM " is missing",
				q->name, q->scales);
	if (!scales)
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": scales tensor '%.200s" QSCALE_SUFFIX "' is missing",
				q->name, q->name);
	if (scales->dtype != FMT_DT_F32)
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": scales tensor is %s, expected F32", q->name,
				fmt_dtype_name(scales->dtype));
	if (scales->ndim != q->ndim || !same_dims(scales->shape, q->scale_shape, q->ndim))
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": scales tensor shape differs from scale_shape",
				q->name);
	return FMT_OK;
}

fmt_kind fmt_qtensor_plan(const fmt_tensor *t, fmt_qformat f, fmt_qtensor *out, fmt_err *e)
{
	memset(out, 0, sizeof *out);
	if (!qformat_ok(f))
		return fmt_fail(e, FMT_USAGE, "unknown compressed format");
	out->name = t->name;
	out->format = f;
	out->axis = -1;
	out->ndim = t->ndim;
	memcpy(out->shape, t->shape, sizeof out->shape);
	if (f == FMT_Q_FP6 && t->nelems % 4 != 0)
		return fmt_fail(e, FMT_USAGE, "tensor " NM ": %llu elements cannot be stored as fp6 (needs a multiple of 4)",
				t->name, (unsigned long long)t->nelems);
	if (f == FMT_Q_FP4 && t->nelems % 2 != 0)
		return fmt_fail(e, FMT_USAGE, "tensor " NM ": %llu elements cannot be stored as fp4 (needs an even count)",
				t->name, (unsigned long long)t->nelems);
	if (f == FMT_Q_BF16 || t->ndim == 0)
		return FMT_OK;
	int nd = t->ndim;
	if (f == FMT_Q_INT8 || f == FMT_Q_FP8) {
		for (int d = 0; d < nd; d++)
			out->scale_shape[d] = 1;
		if (nd >= 2) {
			out->axis = 0;
			out->scale_shape[0] = t->shape[0];
		}
		return FMT_OK;
	}
	for (int d = 0; d < nd - 1; d++)
		out->scale_shape[d] = t->shape[d];
	uint64_t last = t->shape[nd - 1];
	out->scale_shape[nd - 1] = last % 32 == 0 ? last / 32 : 1;
	return FMT_OK;
}

/* ---- adding produced tensors ---- */

static fmt_kind add_reader_tensor(fmt_model *out, const char *name, fmt_dtype dtype, int nd,
				  const uint64_t *shape, fmt_tensor_reader reader, void *ctx,
				  void (*free_ctx)(void *), uint64_t align, fmt_err *e)
{
	fmt_tensor t;
	memset(&t, 0, sizeof t);
	t.name = (char *)name;
	t.dtype = dtype;
	t.ndim = nd;
	memcpy(t.shape, shape, sizeof t.shape);
	t.source = -1;
	fmt_kind k = fmt_dtype_nbytes(dtype, t.shape, nd, &t.nelems, &t.nbytes, e);
	if (k != FMT_OK) {
		fmt_err_prefix(e, "tensor " NM, name);
		return k;
	}
	t.reader = reader;
	t.reader_ctx = ctx;
	t.free_ctx = free_ctx;
	t.chunk_align = align;
	return fmt_model_add_tensor(out, &t, NULL, e);
}

char *fmt_qtensor_scales_name(const char *name)
{
	size_t n = strlen(name);
	char *s = malloc(n + sizeof QSCALE_SUFFIX);
	if (s) {
		memcpy(s, name, n);
		memcpy(s + n, QSCALE_SUFFIX, sizeof QSCALE_SUFFIX);
	}
	return s;
}

int fmt_qtensor_is_scales(const fmt_model *m, const char *name)
{
	if (fmt_nameset_find(&m->qtensor_scales, name) >= 0)
		return 1;
	size_t n = strlen(name), sl = sizeof QSCALE_SUFFIX - 1;
	if (n <= sl || strcmp(name + n - sl, QSCALE_SUFFIX) != 0)
		return 0;
	long i = fmt_nameset_find_prefix(&m->qtensor_names, name, n - sl);
	const fmt_qtensor *q = i >= 0 && (size_t)i < m->n_qtensors ? &m->qtensors[i] : NULL;
	return q && !q->scales && q->format != FMT_Q_BF16;
}

int fmt_qtensor_canonical(const fmt_qtensor *q)
{
	if (q->zero_point != 0)
		return 0;
	if (!q->scales || q->format == FMT_Q_BF16)
		return !q->scales;
	char *want = fmt_qtensor_scales_name(q->name);
	int same = want && strcmp(want, q->scales) == 0;
	free(want);
	return same;
}

fmt_kind fmt_model_add_quantized(fmt_model *out, const fmt_model *in, const fmt_tensor *src,
				 const fmt_qtensor *q, fmt_pool *pool, fmt_err *e)
{
	fmt_kind k = check_shape_rules(q, e);
	if (k != FMT_OK)
		return k;
	if (q->ndim != src->ndim || !same_dims(q->shape, src->shape, q->ndim))
		return fmt_fail(e, FMT_INTERNAL, "qtensor " NM ": shape differs from tensor " NM, q->name, src->name);
	if (!plain_decodable(src->dtype))
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor " NM ": cannot quantize %s data to %s", src->name,
				fmt_dtype_name(src->dtype), fmt_qformat_name(q->format));
	qctx *c = calloc(1, sizeof *c);
	char *sname = fmt_qtensor_scales_name(q->name);
	if (!c || !sname || !(c->name = strdup(q->name))) {
		free(c);
		free(sname);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	pthread_mutex_init(&c->lock, NULL);
	c->in = in;
	c->src = src;
	c->format = q->format;
	c->pool = pool;
	geom_init(&c->g, q);
	uint64_t cs[FMT_MAX_DIMS];
	codes_shape(q, cs);
	c->refs = 2; /* ours, released below, and the codes tensor's */
	k = add_reader_tensor(out, q->name, QINFO[q->format].codes, q->ndim, cs, codes_read, c, qctx_release,
			      QINFO[q->format].codes_align, e);
	if (k != FMT_OK)
		c->refs--;
	if (k == FMT_OK && q->format != FMT_Q_BF16) {
		c->refs++;
		k = add_reader_tensor(out, sname, FMT_DT_F32, q->ndim, q->scale_shape, scales_read, c,
				      qctx_release, 4, e);
		if (k != FMT_OK)
			c->refs--;
	}
	fmt_qtensor rec = *q;
	rec.scales = q->format == FMT_Q_BF16 ? NULL : sname;
	rec.zero_point = 0;
	if (k == FMT_OK)
		k = fmt_model_add_qtensor(out, &rec, e);
	qctx_release(c); /* the tensors hold their own references */
	free(sname);
	return k;
}

/* ---- dequantizer ---- */

typedef struct dqctx {
	pthread_mutex_t lock;
	const fmt_model *in;
	const fmt_tensor *codes, *scales;
	char *name;
	fmt_qformat format;
	float zero_point;
	geom g;
	fmt_pool *pool;
	int scales_state;
	float *sc;
	fmt_kind scales_kind;
	fmt_err scales_err;
} dqctx;

static void dqctx_free(void *p)
{
	dqctx *c = p;
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	free(c->sc);
	free(c->name);
	free(c);
}

/* Read the scales tensor whole; every scale must be finite. */
static fmt_kind load_scales(const fmt_model *in, const fmt_tensor *scales, uint64_t count, float **out,
			    fmt_err *e)
{
	float *sc = malloc((size_t)(count ? count : 1) * sizeof *sc);
	uint8_t *raw = malloc((size_t)(count ? count : 1) * 4);
	fmt_kind k = sc && raw ? fmt_tensor_read(in, scales, 0, raw, (size_t)count * 4, e)
			       : fmt_fail(e, FMT_IO, "out of memory for the scales of " NM, scales->name);
	for (uint64_t i = 0; k == FMT_OK && i < count; i++) {
		uint32_t bits = fmt_rd_u32(raw + 4 * i);
		memcpy(&sc[i], &bits, sizeof bits);
		if (!isfinite(sc[i]))
			k = fmt_fail(e, FMT_INVALID_FORMAT, "tensor " NM ": scale %llu is %s (scales must be finite)",
				     scales->name, (unsigned long long)i,
				     isnan(sc[i]) ? "NaN" : sc[i] > 0 ? "+Inf" : "-Inf");
	}
	free(raw);
	if (k != FMT_OK) {
		free(sc);
		return k;
	}
	*out = sc;
	return FMT_OK;
}

static fmt_kind ensure_dq_scales(dqctx *c, fmt_err *e)
{
	if (c->format == FMT_Q_BF16)
		return FMT_OK;
	pthread_mutex_lock(&c->lock);
	if (c->scales_state == 0) {
		fmt_err err;
		fmt_err_clear(&err);
		c->scales_kind = load_scales(c->in, c->scales, c->g.n_scales, &c->sc, &err);
		c->scales_err = err;
		c->scales_state = c->scales_kind == FMT_OK ? 1 : -1;
	}
	fmt_kind k = c->scales_kind;
	if (k != FMT_OK)
		*e = c->scales_err;
	pthread_mutex_unlock(&c->lock);
	return k;
}

typedef struct dqjob {
	dqctx *c;
	uint64_t e_first, e_count;
	uint8_t *dst;
	task_err err;
} dqjob;

static void dq_task(void *arg, size_t index)
{
	dqjob *job = arg;
	dqctx *c = job->c;
	uint64_t start = (uint64_t)index * TASK_ELEMS;
	uint64_t n = job->e_count - start < TASK_ELEMS ? job->e_count - start : TASK_ELEMS;
	uint64_t e0 = job->e_first + start, b0, b1;
	code_bytes(c->format, &c->g, e0, e0 + n, &b0, &b1);
	fmt_err e;
	fmt_err_clear(&e);
	uint8_t *buf = malloc((size_t)(b1 - b0));
	fmt_kind k = buf ? fmt_tensor_read(c->in, c->codes, b0, buf, (size_t)(b1 - b0), &e)
			 : fmt_fail(&e, FMT_IO, "out of memory decoding " NM, c->name);
	uint8_t *dst = job->dst + 4 * start;
	for (uint64_t i = 0; k == FMT_OK && i < n;) {
		uint64_t run = n - i, sidx = 0;
		float s = 1.0f;
		if (c->format != FMT_Q_BF16) {
			sidx = scale_index(&c->g, e0 + i, &run);
			s = c->sc[sidx];
			if (run > n - i)
				run = n - i;
		}
		for (uint64_t j = 0; j < run; j++) {
			float v = decode_code(c->format, &c->g, buf, b0, e0 + i + j);
			if (c->format != FMT_Q_BF16)
				v = (v - c->zero_point) * s;
			uint32_t bits;
			memcpy(&bits, &v, sizeof bits);
			fmt_wr_u32(dst + 4 * (i + j), bits);
		}
		i += run;
	}
	if (k != FMT_OK)
		task_err_put(&job->err, e0, &e);
	free(buf);
}

static fmt_kind dq_read(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst, size_t n,
			fmt_err *e)
{
	(void)m;
	dqctx *c = t->reader_ctx;
	if (n == 0)
		return FMT_OK;
	fmt_kind k = ensure_dq_scales(c, e);
	if (k != FMT_OK)
		return k;
	dqjob job = { .c = c, .e_first = off / 4, .e_count = n / 4, .dst = dst };
	task_err_init(&job.err);
	run_tasks(c->pool, (size_t)((job.e_count + TASK_ELEMS - 1) / TASK_ELEMS), dq_task, &job);
	return task_err_done(&job.err, e);
}

/* The codes and scales tensors of q in `in`, checked. */
static fmt_kind find_parts(const fmt_model *in, const fmt_qtensor *q, const fmt_tensor **codes,
			   const fmt_tensor **scales, fmt_err *e)
{
	char *fallback = NULL;
	const char *sname = q->scales;
	if (!sname && q->format != FMT_Q_BF16 && !(sname = fallback = fmt_qtensor_scales_name(q->name)))
		return fmt_fail(e, FMT_IO, "out of memory");
	*codes = fmt_model_find_tensor(in, q->name);
	*scales = sname ? fmt_model_find_tensor(in, sname) : NULL;
	free(fallback);
	return fmt_qtensor_check(q, *codes, *scales, e);
}

fmt_kind fmt_model_add_dequantized(fmt_model *out, const fmt_model *in, const fmt_qtensor *q,
				   fmt_pool *pool, fmt_err *e)
{
	const fmt_tensor *codes, *scales;
	fmt_kind k = find_parts(in, q, &codes, &scales, e);
	if (k != FMT_OK)
		return k;
	pthread_once(&tables_once, build_tables);
	dqctx *c = calloc(1, sizeof *c);
	if (!c || !(c->name = strdup(q->name))) {
		free(c);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	pthread_mutex_init(&c->lock, NULL);
	c->in = in;
	c->codes = codes;
	c->scales = scales;
	c->format = q->format;
	c->zero_point = (float)q->zero_point;
	c->pool = pool;
	geom_init(&c->g, q);
	uint64_t align = q->format == FMT_Q_FP6 ? 16 : q->format == FMT_Q_FP4 ? 8 : 4;
	k = add_reader_tensor(out, q->name, FMT_DT_F32, q->ndim, q->shape, dq_read, c, dqctx_free, align, e);
	if (k != FMT_OK)
		dqctx_free(c);
	return k;
}

/* ---- GGUF Q8_0 / Q4_0 ---- */

#define GG_PIECE 4096u /* blocks read at once */

typedef struct ggctx {
	int refs;
	const fmt_model *in;
	const fmt_tensor *src;     /* from_ggml: the Q8_0/Q4_0 tensor */
	const fmt_tensor *codes;   /* to_ggml: codes and scales */
	const fmt_tensor *scales;
	char *name;
	fmt_dtype type;            /* Q8_0 or Q4_0 */
} ggctx;

static void ggctx_release(void *p)
{
	ggctx *c = p;
	if (!c || --c->refs > 0)
		return;
	free(c->name);
	free(c);
}

static uint64_t gg_block_bytes(fmt_dtype t)
{
	return t == FMT_DT_Q8_0 ? 34 : 18;
}

static uint64_t gg_code_bytes(fmt_dtype t)
{
	return t == FMT_DT_Q8_0 ? 32 : 16;
}

/* Q4_0 block nibbles (element j low, j+16 high) -> int4 nibble-lo-first codes (code = nibble
 * - 8, two's complement: nibble ^ 8), and back. */
static void q4_to_int4(const uint8_t *qs, uint8_t *out)
{
	for (int k = 0; k < 16; k++) {
		int a = 2 * k, b = 2 * k + 1;
		unsigned na = a < 16 ? qs[a] & 15u : (unsigned)qs[a - 16] >> 4;
		unsigned nb = b < 16 ? qs[b] & 15u : (unsigned)qs[b - 16] >> 4;
		out[k] = (uint8_t)((na ^ 8u) | (nb ^ 8u) << 4);
	}
}

static void int4_to_q4(const uint8_t *codes, uint8_t *qs)
{
	uint8_t nib[32];
	for (int k = 0; k < 16; k++) {
		nib[2 * k] = (uint8_t)((codes[k] & 15u) ^ 8u);
		nib[2 * k + 1] = (uint8_t)((codes[k] >> 4) ^ 8u);
	}
	for (int j = 0; j < 16; j++)
		qs[j] = (uint8_t)(nib[j] | nib[j + 16] << 4);
}

/* Read blocks [b0, b0 + nb) of the ggml source in pieces and hand each to fn. */
static fmt_kind each_src_block(const ggctx *c, uint64_t b0, uint64_t nb,
			       int (*fn)(const uint8_t *block, uint64_t i, uint8_t *dst, int q8),
			       uint8_t *dst, fmt_err *e)
{
	uint64_t bb = gg_block_bytes(c->type);
	uint8_t *buf = malloc((size_t)(bb * (nb < GG_PIECE ? nb : GG_PIECE)) + 1);
	if (!buf)
		return fmt_fail(e, FMT_IO, "out of memory reading " NM, c->src->name);
	fmt_kind k = FMT_OK;
	for (uint64_t done = 0; k == FMT_OK && done < nb;) {
		uint64_t piece = nb - done < GG_PIECE ? nb - done : GG_PIECE;
		k = fmt_tensor_read(c->in, c->src, (b0 + done) * bb, buf, (size_t)(piece * bb), e);
		for (uint64_t i = 0; k == FMT_OK && i < piece; i++)
			if (fn(buf + i * bb, done + i, dst, c->type == FMT_DT_Q8_0) != 0)
				k = fmt_fail(e, FMT_INVALID_FORMAT,
					     "tensor " NM ": block %llu has a non-finite scale (fp16 0x%04x); compressed-tensor scales must be finite",
					     c->src->name, (unsigned long long)(b0 + done + i), (unsigned)fmt_rd_u16(buf + i * bb));
		done += piece;
	}
	free(buf);
	return k;
}

static int put_codes(const uint8_t *block, uint64_t i, uint8_t *dst, int q8)
{
	if (q8)
		memcpy(dst + 32 * i, block + 2, 32);
	else
		q4_to_int4(block + 2, dst + 16 * i);
	return 0;
}

static int put_scale(const uint8_t *block, uint64_t i, uint8_t *dst, int q8)
{
	(void)q8;
	float s = fmt_f16_to_f32(fmt_rd_u16(block));
	if (!isfinite(s))
		return 1;
	uint32_t bits;
	memcpy(&bits, &s, sizeof bits);
	fmt_wr_u32(dst + 4 * i, bits);
	return 0;
}

static fmt_kind gg_codes_read(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst,
			      size_t n, fmt_err *e)
{
	(void)m;
	const ggctx *c = t->reader_ctx;
	uint64_t cb = gg_code_bytes(c->type);
	return each_src_block(c, off / cb, n / cb, put_codes, dst, e);
}

static fmt_kind gg_scales_read(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst,
			       size_t n, fmt_err *e)
{
	(void)m;
	return each_src_block(t->reader_ctx, off / 4, n / 4, put_scale, dst, e);
}

fmt_kind fmt_model_add_from_ggml(fmt_model *out, const fmt_model *in, const fmt_tensor *src,
				 fmt_pool *pool, fmt_err *e)
{
	(void)pool;
	if (src->dtype != FMT_DT_Q8_0 && src->dtype != FMT_DT_Q4_0)
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor " NM ": only Q8_0 and Q4_0 map to compressed tensors (not %s)",
				src->name, fmt_dtype_name(src->dtype));
	if (src->ndim < 1 || src->shape[src->ndim - 1] % 32 != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor " NM ": rows are not whole 32-element blocks", src->name);
	fmt_qtensor q;
	memset(&q, 0, sizeof q);
	q.name = src->name;
	q.format = src->dtype == FMT_DT_Q8_0 ? FMT_Q_INT8 : FMT_Q_INT4;
	q.axis = -1;
	q.ndim = src->ndim;
	memcpy(q.shape, src->shape, sizeof q.shape);
	memcpy(q.scale_shape, src->shape, sizeof q.scale_shape);
	q.scale_shape[q.ndim - 1] /= 32;
	const fmt_unit *u = fmt_model_find_unit(in, src->name);
	if (u) {
		q.has_unit = 1;
		memcpy(q.unit, u->dims, sizeof q.unit);
	}
	ggctx *c = calloc(1, sizeof *c);
	char *sname = fmt_qtensor_scales_name(src->name);
	if (!c || !sname || !(c->name = strdup(src->name))) {
		free(c);
		free(sname);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	c->in = in;
	c->src = src;
	c->type = src->dtype;
	c->refs = 1;
	uint64_t cs[FMT_MAX_DIMS];
	codes_shape(&q, cs);
	c->refs++;
	fmt_kind k = add_reader_tensor(out, q.name, QINFO[q.format].codes, q.ndim, cs, gg_codes_read, c,
				       ggctx_release, gg_code_bytes(c->type), e);
	if (k != FMT_OK)
		c->refs--;
	if (k == FMT_OK) {
		c->refs++;
		k = add_reader_tensor(out, sname, FMT_DT_F32, q.ndim, q.scale_shape, gg_scales_read, c,
				      ggctx_release, 4, e);
		if (k != FMT_OK)
			c->refs--;
	}
	q.scales = sname;
	if (k == FMT_OK)
		k = fmt_model_add_qtensor(out, &q, e);
	ggctx_release(c);
	free(sname);
	return k;
}

int fmt_qtensor_ggml_compatible(const fmt_qtensor *q, fmt_dtype *ggml_type)
{
	if ((q->format != FMT_Q_INT8 && q->format != FMT_Q_INT4) || q->zero_point != 0 || q->ndim < 1 ||
	    q->ndim > FMT_MAX_DIMS)
		return 0;
	int last = q->ndim - 1;
	if (q->shape[last] == 0 || q->shape[last] % 32 != 0 || q->scale_shape[last] != q->shape[last] / 32)
		return 0;
	for (int d = 0; d < last; d++)
		if (q->scale_shape[d] != q->shape[d])
			return 0;
	if (ggml_type)
		*ggml_type = q->format == FMT_Q_INT8 ? FMT_DT_Q8_0 : FMT_DT_Q4_0;
	return 1;
}

static fmt_kind to_ggml_read(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst,
			     size_t n, fmt_err *e)
{
	(void)m;
	const ggctx *c = t->reader_ctx;
	uint64_t bb = gg_block_bytes(c->type), cb = gg_code_bytes(c->type);
	uint64_t b0 = off / bb, nb = n / bb;
	uint64_t piece_max = nb < GG_PIECE ? nb : GG_PIECE;
	uint8_t *codes = malloc((size_t)(piece_max * cb) + 1), *sc = malloc((size_t)(piece_max * 4) + 1);
	fmt_kind k = codes && sc ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory converting " NM, c->name);
	for (uint64_t done = 0; k == FMT_OK && done < nb;) {
		uint64_t piece = nb - done < GG_PIECE ? nb - done : GG_PIECE;
		k = fmt_tensor_read(c->in, c->codes, (b0 + done) * cb, codes, (size_t)(piece * cb), e);
		if (k == FMT_OK)
			k = fmt_tensor_read(c->in, c->scales, (b0 + done) * 4, sc, (size_t)(piece * 4), e);
		for (uint64_t i = 0; k == FMT_OK && i < piece; i++) {
			uint32_t bits = fmt_rd_u32(sc + 4 * i), back_bits;
			float s, back;
			memcpy(&s, &bits, sizeof s);
			uint16_t h = fmt_f32_to_f16(s);
			back = fmt_f16_to_f32(h);
			memcpy(&back_bits, &back, sizeof back_bits);
			if (!isfinite(s))
				k = fmt_fail(e, FMT_INVALID_FORMAT, "tensor " NM ": scale %llu is %s (scales must be finite)",
					     c->name, (unsigned long long)(b0 + done + i), isnan(s) ? "NaN" : "infinite");
			else if (back_bits != bits)
				k = fmt_fail(e, FMT_INVALID_FORMAT,
					     "tensor " NM ": scale %llu (%.9g) is not exactly representable in fp16; cannot store it as %s losslessly",
					     c->name, (unsigned long long)(b0 + done + i), (double)s, fmt_dtype_name(c->type));
			if (k != FMT_OK)
				break;
			uint8_t *block = dst + (done + i) * bb;
			fmt_wr_u16(block, h);
			if (c->type == FMT_DT_Q8_0)
				memcpy(block + 2, codes + i * cb, 32);
			else
				int4_to_q4(codes + i * cb, block + 2);
		}
		done += piece;
	}
	free(codes);
	free(sc);
	return k;
}

fmt_kind fmt_model_add_to_ggml(fmt_model *out, const fmt_model *in, const fmt_qtensor *q,
			       fmt_pool *pool, fmt_err *e)
{
	(void)pool;
	fmt_dtype type;
	const fmt_tensor *codes, *scales;
	fmt_kind k = find_parts(in, q, &codes, &scales, e);
	if (k != FMT_OK)
		return k;
	if (!fmt_qtensor_ggml_compatible(q, &type))
		return fmt_fail(e, FMT_UNSUPPORTED,
				"tensor " NM ": only int8/int4 with blocks of 32 along the last dimension map to Q8_0/Q4_0",
				q->name);
	ggctx *c = calloc(1, sizeof *c);
	if (!c || !(c->name = strdup(q->name))) {
		free(c);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	c->refs = 1;
	c->in = in;
	c->codes = codes;
	c->scales = scales;
	c->type = type;
	k = add_reader_tensor(out, q->name, type, q->ndim, q->shape, to_ggml_read, c, ggctx_release,
			      gg_block_bytes(type), e);
	if (k != FMT_OK)
		ggctx_release(c);
	return k;
}
