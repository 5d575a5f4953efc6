#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/convert.h"
#include "fmt/overflow.h"
#include "fmt/quant.h"
#include "fmt/retype.h"
#include "fmt/thread.h"

/* Elements converted per task: big enough to amortise scheduling, small enough that the
 * per-task buffers (float32 values and input bytes) stay well under a megabyte. */
#define TASK_ELEMS (64u * 1024u)

typedef struct retype_ctx {
	const fmt_model *in;
	const fmt_tensor *src;
	fmt_dtype to;
	fmt_pool *pool;
	uint64_t unit_elems;   /* elements per indivisible unit: a block of both dtypes (a row) */
	uint64_t task_elems;   /* elements per task: whole units */
	fmt_overflow_mode overflow;
	const float *weights;  /* importance weights: row_elems per set of rows_per_set rows */
	uint64_t row_elems, rows_per_set;
} retype_ctx;

/* Bytes of n elements (a multiple of the dtype's block) of dtype t. */
static uint64_t bytes_of(fmt_dtype t, uint64_t n)
{
	const fmt_dtype_info *d = fmt_dtype_get(t);
	return n / d->block_elems * d->block_bits / 8;
}

static fmt_kind encode(fmt_dtype to, const float *x, uint8_t *dst, uint64_t n, uint64_t first_elem,
		       fmt_err *e)
{
	if (fmt_quantize_supported(to))
		return fmt_quantize(to, x, dst, n, first_elem, e);
	return fmt_encode_from_f32(to, x, n, dst, e);
}

/* With importance weights: row by row, each with its set's weights. */
static fmt_kind encode_rows(const retype_ctx *c, const float *x, uint8_t *dst, uint64_t n, uint64_t first_elem,
			    fmt_err *e)
{
	const uint64_t row_bytes = bytes_of(c->to, c->row_elems);
	fmt_kind k = FMT_OK;
	for (uint64_t r = 0; k == FMT_OK && r < n / c->row_elems; r++) {
		const uint64_t row = first_elem / c->row_elems + r;
		const float *qw = c->weights + row / c->rows_per_set * c->row_elems;
		k = fmt_quantize_row_weighted(c->to, x + r * c->row_elems, dst + r * row_bytes, c->row_elems, qw,
					      first_elem + r * c->row_elems, e);
	}
	return k;
}

static int can_encode(fmt_dtype to)
{
	return fmt_quantize_supported(to) || fmt_encode_supported(to);
}

int fmt_retype_possible(fmt_dtype from, fmt_dtype to)
{
	return from == to || (fmt_decode_supported(from) && can_encode(to));
}


/* One call of the reader is cut into tasks; each converts its own element range. */
typedef struct retype_job {
	const retype_ctx *c;
	uint64_t first_elem, n_elems;
	uint8_t *dst;
	pthread_mutex_t lock;
	fmt_kind kind;
	fmt_err err;
} retype_job;

static void record_error(retype_job *job, const fmt_err *e)
{
	pthread_mutex_lock(&job->lock);
	if (job->kind == FMT_OK) {
		job->kind = e->kind;
		job->err = *e;
	}
	pthread_mutex_unlock(&job->lock);
}

/* A quantizer refused the values: name the tensor and the element in the whole tensor. */
static void describe_bad_value(fmt_err *e, const retype_ctx *c, const float *values, uint64_t n,
			       uint64_t first_elem)
{
	for (uint64_t i = 0; i < n; i++) {
		if (!isfinite(values[i])) {
			fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': element %llu is %s; cannot quantize to %s",
				 c->src->name, (unsigned long long)(first_elem + i),
				 isnan(values[i]) ? "NaN" : values[i] > 0 ? "+Inf" : "-Inf", fmt_dtype_name(c->to));
			return;
		}
	}
	fmt_err_prefix(e, "tensor '%s'", c->src->name);
}

/* Values the target cannot hold: saturated when asked (F16, BF16), otherwise refused. The
 * planner turns Q8_0/Q4_0 tensors that overflow into F16 or F32 before anything is written. */
static fmt_kind check_overflow(const retype_ctx *c, float *values, uint64_t n, uint64_t first_elem,
			       fmt_err *e)
{
	uint64_t at;
	if (!fmt_overflow_possible(c->src->dtype, c->to))
		return FMT_OK;
	if (c->overflow == FMT_OVERFLOW_SATURATE)
		fmt_overflow_saturate(c->to, values, n);
	if (!fmt_overflow_find(c->to, values, n, &at))
		return FMT_OK;
	return fmt_overflow_fail(e, c->src->name, c->to, first_elem + at, values[at]);
}

/* The target bytes of n decoded values: quantized in one pass with the checks when that can
 * be (the value checks and messages otherwise, when the pass finds something to report). */
static fmt_kind encode_values(const retype_ctx *c, float *values, uint8_t *dst, uint64_t n, uint64_t elem,
			      fmt_err *e)
{
	if (!c->weights && fmt_quantize_supported(c->to) &&
	    (c->overflow == FMT_OVERFLOW_REFUSE || !fmt_overflow_possible(c->src->dtype, c->to))) {
		int redo;
		fmt_kind k = fmt_quantize_fused(c->to, values, dst, n, elem, &redo, e);
		if (!redo) {
			if (k == FMT_INVALID_FORMAT)
				describe_bad_value(e, c, values, n, elem);
			return k;
		}
	}
	fmt_kind k = check_overflow(c, values, n, elem, e);
	if (k != FMT_OK)
		return k;
	k = c->weights ? encode_rows(c, values, dst, n, elem, e) : encode(c->to, values, dst, n, elem, e);
	if (k == FMT_INVALID_FORMAT)
		describe_bad_value(e, c, values, n, elem);
	return k;
}

/* F32 input on a little-endian host is its own float32 values: read, not decoded. */
static int reads_as_values(fmt_dtype t)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return t == FMT_DT_F32;
#else
	(void)t;
	return 0;
#endif
}

static void convert_task(void *arg, size_t index)
{
	retype_job *job = arg;
	const retype_ctx *c = job->c;
	uint64_t start = (uint64_t)index * c->task_elems;
	uint64_t n = job->n_elems - start < c->task_elems ? job->n_elems - start : c->task_elems;
	uint64_t elem = job->first_elem + start;
	size_t in_bytes = (size_t)bytes_of(c->src->dtype, n);
	fmt_err e;
	fmt_err_clear(&e);
	const int direct = reads_as_values(c->src->dtype);
	float *values = fmt_scratch_take((size_t)n * sizeof(float));   /* (many a second: kept buffers) */
	uint8_t *raw = direct ? (uint8_t *)values : fmt_scratch_take(in_bytes ? in_bytes : 1);
	fmt_kind k = values && raw ? FMT_OK : fmt_fail(&e, FMT_IO, "out of memory converting '%s'", c->src->name);
	if (k == FMT_OK)
		k = fmt_tensor_read(c->in, c->src, bytes_of(c->src->dtype, elem), raw, in_bytes, &e);
	if (k == FMT_OK && !direct)
		k = fmt_decode_f32(c->src->dtype, raw, n, values, &e);
	if (k == FMT_OK)
		k = encode_values(c, values, job->dst + bytes_of(c->to, start), n, elem, &e);
	if (k != FMT_OK)
		record_error(job, &e);
	fmt_scratch_give(values);
	if (!direct)
		fmt_scratch_give(raw);
}

static fmt_kind retype_read(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst,
			    size_t n, fmt_err *e)
{
	(void)m;
	const retype_ctx *c = t->reader_ctx;
	if (c->to == c->src->dtype)
		return fmt_tensor_read(c->in, c->src, off, dst, n, e);
	const fmt_dtype_info *to = fmt_dtype_get(c->to);
	uint64_t block_bytes = to->block_bits / 8;
	retype_job job = { .c = c, .dst = dst, .kind = FMT_OK };
	job.first_elem = off / block_bytes * to->block_elems;
	job.n_elems = n / block_bytes * to->block_elems;
	pthread_mutex_init(&job.lock, NULL);
	size_t tasks = (size_t)((job.n_elems + c->task_elems - 1) / c->task_elems);
	if (c->pool && !fmt_tensor_reads_in_parallel())   /* a parallel writer's thread: its range only */
		fmt_pool_run(c->pool, tasks, convert_task, &job);
	else
		for (size_t i = 0; i < tasks; i++)
			convert_task(&job, i);
	pthread_mutex_destroy(&job.lock);
	if (job.kind != FMT_OK) {
		*e = job.err;
		return job.kind;
	}
	return FMT_OK;
}

fmt_kind fmt_model_add_retyped(fmt_model *out, const fmt_model *in, const fmt_tensor *src,
			       const char *name, fmt_dtype to, fmt_pool *pool, fmt_err *e)
{
	return fmt_model_add_retyped_mode(out, in, src, name, to, FMT_OVERFLOW_REFUSE, pool, e);
}

static fmt_kind add_retyped(fmt_model *out, const fmt_model *in, const fmt_tensor *src, const char *name,
			    fmt_dtype to, fmt_overflow_mode overflow, const float *weights, uint64_t rows_per_set,
			    fmt_pool *pool, fmt_err *e)
{
	if (!fmt_retype_possible(src->dtype, to))
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': cannot convert %s to %s", src->name,
				fmt_dtype_name(src->dtype), fmt_dtype_name(to));
	fmt_tensor t;
	memset(&t, 0, sizeof t);
	t.name = (char *)name;
	t.dtype = to;
	t.ndim = src->ndim;
	memcpy(t.shape, src->shape, sizeof t.shape);
	t.source = -1;
	fmt_kind k = fmt_dtype_nbytes(to, t.shape, t.ndim, &t.nelems, &t.nbytes, e);
	if (k != FMT_OK) {
		fmt_err_prefix(e, "tensor '%s' as %s", src->name, fmt_dtype_name(to));
		return k;
	}
	if (to != src->dtype && t.ndim > 0 && !fmt_dtype_row_ok(to, t.shape[t.ndim - 1]))
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': rows of %llu elements do not divide into %s blocks",
				src->name, (unsigned long long)t.shape[t.ndim - 1], fmt_dtype_name(to));
	retype_ctx *c = malloc(sizeof *c);
	if (!c)
		return fmt_fail(e, FMT_IO, "out of memory");
	*c = (retype_ctx){ .in = in, .src = src, .to = to, .pool = pool, .overflow = overflow, .weights = weights,
			   .row_elems = t.ndim ? t.shape[t.ndim - 1] : 1, .rows_per_set = rows_per_set ? rows_per_set : 1 };
	c->unit_elems = fmt_lcm_u64(fmt_dtype_get(src->dtype)->block_elems, fmt_dtype_get(to)->block_elems);
	c->task_elems = TASK_ELEMS;
	if (weights) {  /* whole rows: the weighted quantizers look at a row at a time */
		c->unit_elems = fmt_lcm_u64(c->unit_elems, c->row_elems);
		c->task_elems = c->unit_elems * (TASK_ELEMS / c->unit_elems ? TASK_ELEMS / c->unit_elems : 1);
	}
	/* Chunks cut only between whole units of both dtypes, and tasks between whole units too. */
	t.chunk_align = bytes_of(to, c->unit_elems);
	if (c->task_elems % c->unit_elems != 0) {
		free(c);
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': block size too large to convert", src->name);
	}
	t.reader = retype_read;
	t.reader_ctx = c;
	t.free_ctx = free;
	k = fmt_model_add_tensor(out, &t, NULL, e);
	if (k != FMT_OK)
		free(c);
	return k;
}

fmt_kind fmt_model_add_retyped_mode(fmt_model *out, const fmt_model *in, const fmt_tensor *src,
				    const char *name, fmt_dtype to, fmt_overflow_mode overflow,
				    fmt_pool *pool, fmt_err *e)
{
	return add_retyped(out, in, src, name, to, overflow, NULL, 0, pool, e);
}

fmt_kind fmt_model_add_retyped_weighted(fmt_model *out, const fmt_model *in, const fmt_tensor *src,
					const char *name, fmt_dtype to, const float *weights, uint64_t rows_per_set,
					fmt_pool *pool, fmt_err *e)
{
	return add_retyped(out, in, src, name, to, FMT_OVERFLOW_REFUSE, weights, rows_per_set, pool, e);
}

fmt_kind fmt_tensor_find_overflow(const fmt_model *in, const fmt_tensor *src, fmt_dtype to,
				  int *found, uint64_t *elem, float *value, fmt_err *e)
{
	*found = 0;
	if (!fmt_overflow_possible(src->dtype, to))
		return FMT_OK;
	if (!fmt_decode_supported(src->dtype))
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': cannot decode %s data", src->name,
				fmt_dtype_name(src->dtype));
	/* whole blocks of the source and whole 32-element blocks of the target in every chunk */
	const uint64_t unit = fmt_lcm_u64(fmt_dtype_get(src->dtype)->block_elems, 32);
	const uint64_t chunk = TASK_ELEMS / unit * unit;
	float *values = malloc((size_t)chunk * sizeof(float));
	uint8_t *raw = malloc((size_t)bytes_of(src->dtype, chunk) + 1);
	fmt_kind k = values && raw ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory scanning '%s'", src->name);
	for (uint64_t start = 0; k == FMT_OK && start < src->nelems; start += chunk) {
		uint64_t n = src->nelems - start < chunk ? src->nelems - start : chunk, at;
		k = fmt_tensor_read(in, src, bytes_of(src->dtype, start), raw, (size_t)bytes_of(src->dtype, n), e);
		if (k == FMT_OK)
			k = fmt_decode_f32(src->dtype, raw, n, values, e);
		if (k == FMT_OK && fmt_overflow_find(to, values, n, &at)) {
			*found = 1;
			*elem = start + at;
			*value = values[at];
			break;
		}
	}
	free(values);
	free(raw);
	return k;
}

int fmt_tensor_reads_any_range(const fmt_tensor *t)
{
	while (t->reader == retype_read)
		t = ((const retype_ctx *)t->reader_ctx)->src;
	return !t->reader;
}

const fmt_tensor *fmt_tensor_same_bytes(const fmt_model **m, const fmt_tensor *t)
{
	while (t->reader == retype_read) {
		const retype_ctx *c = t->reader_ctx;
		if (c->to != c->src->dtype)
			break;
		*m = c->in;
		t = c->src;
	}
	return t;
}
