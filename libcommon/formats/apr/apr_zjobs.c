/* One zstd frame per tensor (specs/apr.md A.4), compressed in independent jobs of APR_ZSTD_JOB
 * input bytes on the threads of a pool, as libzstd's own multithreaded compressor does
 * (zstdmt_compress.c) with no overlap between jobs: each job is compressed by a context begun
 * afresh with the frame's parameters; the first job's output starts with the frame header, the
 * others' header is dropped and their repeat offsets invalidated (a decoder's come from the
 * previous job, which this context never saw); the last job ends the frame. The bytes depend
 * on the job size and level only, never on the number of threads, and a tensor of one job is
 * the frame zstd makes on one thread.
 *
 * Debian's libzstd.a is built without threads (ZSTD_c_nbWorkers refused), so zstd could not
 * spread a frame over threads itself; the functions used here are its buffer-less block API
 * (ZSTD_STATIC_LINKING_ONLY) and ZSTD_invalidateRepCodes, which only its archive exports: the
 * tools link libzstd from its archive whatever LINK_STATIC says (GNUmakefile). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY
#define ZSTD_DISABLE_DEPRECATE_WARNINGS   /* the buffer-less API is marked deprecated from 1.5.5 */
#include <zstd.h>
#include "fmt/model.h"
#include "fmt/retype.h"
#include "fmt/zstd_thread.h"
#include "apr_internal.h"

/* Declared by libzstd's internal zstd_compress_internal.h: the next block uses no repeat offset
 * it did not itself make. */
void ZSTD_invalidateRepCodes(ZSTD_CCtx *cctx);

/* A job's output: its blocks (and the header for the first) */
#define JOB_OUT_CAP (ZSTD_COMPRESSBOUND(APR_ZSTD_JOB) + ZSTD_FRAMEHEADERSIZE_MAX)
/* Slots per thread: a thread compresses the next job while the one before waits to be written. */
#define SLOTS_PER_THREAD 2

typedef struct zslot {
	uint8_t *in;                   /* the job's input, read or gathered */
	uint8_t *out;
	size_t out_len;
	int done;                      /* compressed, not yet written (the job: see job_task) */
} zslot;

/* A compression context stays with the thread that used it last: its match-finder tables (about
 * 1 MiB at level 3) are then still in that core's cache for the next job. When contexts went
 * with the slots, a thread took its jobs' slots' contexts in turn and the match finder cost 2.4x
 * its one-thread CPU (perf: ZSTD_compressBlock_doubleFast). */
typedef struct zctx {
	ZSTD_CCtx *z;
	pthread_t owner;
	int owned, busy;
} zctx;

struct apr_zjobs {
	size_t n_slots, n_ctx;
	zslot *slots;
	zctx *ctx;
};

static void free_slots(apr_zjobs *jobs)
{
	for (size_t i = 0; i < jobs->n_slots; i++) {
		free(jobs->slots[i].in);
		free(jobs->slots[i].out);
	}
	for (size_t i = 0; i < jobs->n_ctx; i++)
		ZSTD_freeCCtx(jobs->ctx[i].z);
	free(jobs->slots);
	free(jobs->ctx);
	jobs->slots = NULL;
	jobs->ctx = NULL;
	jobs->n_slots = jobs->n_ctx = 0;
}

void fmt_apr_zjobs_free(apr_zjobs **jobs)
{
	if (*jobs) {
		free_slots(*jobs);
		free(*jobs);
		*jobs = NULL;
	}
}

/* *jobs with a context per thread and SLOTS_PER_THREAD slots per thread (made once, kept from
 * one tensor to the next). */
static fmt_kind zjobs_ready(apr_zjobs **jobs, int threads, fmt_err *e)
{
	if (!*jobs && !(*jobs = calloc(1, sizeof **jobs)))
		return fmt_fail(e, FMT_IO, "out of memory");
	apr_zjobs *z = *jobs;
	const size_t n_ctx = (size_t)threads, n = threads > 1 ? n_ctx * SLOTS_PER_THREAD : 1;
	if (z->n_slots >= n && z->n_ctx >= n_ctx)
		return FMT_OK;
	free_slots(z);
	z->slots = calloc(n, sizeof *z->slots);
	z->ctx = calloc(n_ctx, sizeof *z->ctx);
	if (!z->slots || !z->ctx) {
		free_slots(z);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	z->n_slots = n;
	z->n_ctx = n_ctx;
	int made = 1;
	for (size_t i = 0; i < n; i++) {
		zslot *s = &z->slots[i];
		made &= (s->in = malloc(APR_ZSTD_JOB)) != NULL;
		made &= (s->out = malloc(JOB_OUT_CAP)) != NULL;
	}
	for (size_t i = 0; i < n_ctx; i++)
		made &= (z->ctx[i].z = ZSTD_createCCtx()) != NULL;
	if (!made) {
		free_slots(z);   /* none half-made is kept for the next tensor */
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	return FMT_OK;
}

/* The calling thread's context, or else one no running job holds, made the caller's; NULL when
 * every one is held (not while the pool runs at most a job per context). Under the frame's
 * lock. */
static zctx *take_ctx_locked(apr_zjobs *jobs)
{
	const pthread_t self = pthread_self();
	zctx *free_one = NULL;
	for (size_t i = 0; i < jobs->n_ctx; i++) {
		zctx *c = &jobs->ctx[i];
		if (c->busy)
			continue;
		if (c->owned && pthread_equal(c->owner, self)) {
			free_one = c;
			break;
		}
		if (!free_one || (free_one->owned && !c->owned))
			free_one = c;   /* an unowned one rather than another thread's */
	}
	if (!free_one)
		return NULL;
	free_one->busy = 1;
	free_one->owner = self;
	free_one->owned = 1;
	return free_one;
}

/* One tensor's frame. */
typedef struct zframe {
	const fmt_model *m;
	const fmt_tensor *t;           /* its bytes */
	ZSTD_parameters params;
	size_t n_jobs;                 /* at least 1: an empty tensor's frame is its header */
	apr_zjobs *jobs;
	apr_out *o;
	/* threads */
	pthread_mutex_t lock;
	pthread_cond_t cond;           /* a slot written, or a failure */
	size_t written;                /* jobs written, in order */
	int writing;
	size_t failed_at;              /* the first job in order that failed (SIZE_MAX: none) */
	fmt_kind kind;
	fmt_err err;
} zframe;

static size_t job_bytes(const zframe *f, size_t j)
{
	uint64_t off = (uint64_t)j * APR_ZSTD_JOB, left = f->t->nbytes - off;
	return left < APR_ZSTD_JOB ? (size_t)left : APR_ZSTD_JOB;
}

static fmt_kind zstd_fail(size_t r, fmt_err *e)
{
	return fmt_fail(e, fmt_zstd_kind(r, FMT_INTERNAL), "zstd: %s", ZSTD_getErrorName(r));
}

/* Job j of the frame, src[0..n), into s->out. The last job ends the frame (its last block
 * says so), and is begun with its own size pledged: ZSTD_compressEnd checks that the context
 * took in what was pledged (the parameters are the frame's all the same). */
static fmt_kind compress_job(const zframe *f, ZSTD_CCtx *z, zslot *s, size_t j, const uint8_t *src, size_t n,
			     fmt_err *e)
{
	const int last = j + 1 == f->n_jobs;
	size_t r = ZSTD_compressBegin_advanced(z, NULL, 0, f->params, j > 0 && last ? n : f->t->nbytes);
	size_t head = ZSTD_isError(r) ? r : ZSTD_compressContinue(z, s->out, JOB_OUT_CAP, src, 0);
	if (ZSTD_isError(head))
		return zstd_fail(head, e);
	if (j > 0) {
		head = 0;
		ZSTD_invalidateRepCodes(z);
	}
	r = last ? ZSTD_compressEnd(z, s->out + head, JOB_OUT_CAP - head, src, n)
		 : ZSTD_compressContinue(z, s->out + head, JOB_OUT_CAP - head, src, n);
	if (ZSTD_isError(r))
		return zstd_fail(r, e);
	s->out_len = head + r;
	return FMT_OK;
}

/* Job j read from the tensor (any range) into s and compressed. */
static fmt_kind read_and_compress(zframe *f, ZSTD_CCtx *z, zslot *s, size_t j, fmt_err *e)
{
	size_t n = job_bytes(f, j);
	const uint8_t *src = s->in;
	if (f->t->data) {
		src = f->t->data + (uint64_t)j * APR_ZSTD_JOB;
	} else if (n > 0) {
		fmt_kind k = fmt_tensor_read_own_range(f->m, f->t, (uint64_t)j * APR_ZSTD_JOB, s->in, n, e);
		if (k != FMT_OK)
			return k;
	}
	return compress_job(f, z, s, j, src, n, e);
}

/* ---- one thread ---- */

typedef struct gather {
	zframe *f;
	zslot *s;
	size_t job, held;
} gather;

static fmt_kind compress_held(gather *g, fmt_err *e)
{
	fmt_kind k = compress_job(g->f, g->f->jobs->ctx[0].z, g->s, g->job++, g->s->in, g->held, e);
	g->held = 0;
	return k == FMT_OK ? fmt_apr_out_write(g->f->o, g->s->out, g->s->out_len, e) : k;
}

/* A streamed tensor's chunks gathered into jobs. */
static fmt_kind gather_chunk(void *ctx, const uint8_t *p, size_t n, fmt_err *e)
{
	gather *g = ctx;
	while (n > 0) {
		size_t part = APR_ZSTD_JOB - g->held < n ? APR_ZSTD_JOB - g->held : n;
		memcpy(g->s->in + g->held, p, part);
		g->held += part;
		p += part;
		n -= part;
		if (g->held == APR_ZSTD_JOB && g->job + 1 < g->f->n_jobs) {
			fmt_kind k = compress_held(g, e);
			if (k != FMT_OK)
				return k;
		}
	}
	return FMT_OK;
}

static fmt_kind frame_in_turn(zframe *f, int any_range, fmt_err *e)
{
	zslot *s = &f->jobs->slots[0];
	if (!any_range) {   /* read once, front to back */
		gather g = { .f = f, .s = s };
		fmt_kind k = fmt_tensor_each_chunk(f->m, f->t, gather_chunk, &g, e);
		return k == FMT_OK ? compress_held(&g, e) : k;   /* the last job (the header alone when empty) */
	}
	fmt_kind k = FMT_OK;
	for (size_t j = 0; j < f->n_jobs && k == FMT_OK; j++) {
		k = read_and_compress(f, f->jobs->ctx[0].z, s, j, e);
		if (k == FMT_OK)
			k = fmt_apr_out_write(f->o, s->out, s->out_len, e);
	}
	return k;
}

/* ---- several threads ---- */

/* Job j failed (or its write did): kept if no earlier job failed, as one thread would report. */
static void fail_locked(zframe *f, size_t j, fmt_kind k, const fmt_err *e)
{
	if (j < f->failed_at) {
		f->failed_at = j;
		f->kind = k;
		f->err = *e;
	}
	pthread_cond_broadcast(&f->cond);
}

/* Write the compressed jobs that are next in order; one thread at a time, the lock released
 * around each write. */
static void write_ready_locked(zframe *f)
{
	if (f->writing)
		return;   /* that thread looks again after each write */
	f->writing = 1;
	for (;;) {
		size_t j = f->written;
		zslot *s = &f->jobs->slots[j % f->jobs->n_slots];
		if (j >= f->n_jobs || j >= f->failed_at || !s->done)
			break;
		fmt_err e;
		fmt_err_clear(&e);
		pthread_mutex_unlock(&f->lock);
		fmt_kind k = fmt_apr_out_write(f->o, s->out, s->out_len, &e);
		pthread_mutex_lock(&f->lock);
		if (k != FMT_OK) {
			fail_locked(f, j, k, &e);
			break;
		}
		s->done = 0;
		f->written++;
		pthread_cond_broadcast(&f->cond);
	}
	f->writing = 0;
}

/* Job j on a pool thread: into slot j % n_slots once the job before in that slot, j - n_slots,
 * is written. (Not merely once the slot is free: the thread that took job j - n_slots may not
 * have reached the slot yet, and the slot is then free but not j's.) */
static void job_task(void *ctx, size_t j)
{
	zframe *f = ctx;
	const size_t n_slots = f->jobs->n_slots;
	zslot *s = &f->jobs->slots[j % n_slots];
	pthread_mutex_lock(&f->lock);
	while (f->failed_at > j && j >= f->written + n_slots)
		pthread_cond_wait(&f->cond, &f->lock);
	if (f->failed_at < j) {   /* an earlier job failed: its error is the one to report */
		pthread_mutex_unlock(&f->lock);
		return;
	}
	zctx *c;
	while (!(c = take_ctx_locked(f->jobs)))
		pthread_cond_wait(&f->cond, &f->lock);   /* a job's end frees one and broadcasts */
	pthread_mutex_unlock(&f->lock);
	fmt_err e;
	fmt_err_clear(&e);
	fmt_kind k = read_and_compress(f, c->z, s, j, &e);
	pthread_mutex_lock(&f->lock);
	c->busy = 0;
	s->done = 1;
	if (k != FMT_OK)
		fail_locked(f, j, k, &e);
	pthread_cond_broadcast(&f->cond);
	write_ready_locked(f);
	pthread_mutex_unlock(&f->lock);
}

static fmt_kind frame_on_pool(zframe *f, fmt_pool *pool, fmt_err *e)
{
	f->failed_at = SIZE_MAX;
	f->kind = FMT_OK;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	for (size_t i = 0; i < f->jobs->n_slots; i++)
		f->jobs->slots[i].done = 0;
	fmt_pool_run(pool, f->n_jobs, job_task, f);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	if (f->kind != FMT_OK)
		*e = f->err;
	return f->kind;
}

fmt_kind fmt_apr_zstd_frame(const fmt_model *m, const fmt_tensor *t, int level, fmt_pool *pool, apr_zjobs **keep,
			    apr_out *o, fmt_err *e)
{
	if (level < 1 || level > ZSTD_maxCLevel())
		return fmt_fail(e, FMT_USAGE, "zstd level %d is not accepted", level);
	/* Read straight from the input file when the tensor's bytes are unchanged, into the job's
	 * buffer (copying 1 GB of page cache out of a mapping cost 0.58 s CPU on the 2-core bench
	 * VM, a fault per fresh page; pread 0.13 s). */
	const fmt_model *from = m;
	zframe f = { .t = fmt_tensor_same_bytes(&from, t), .o = o };
	f.m = from;
	if (f.t->nbytes > SIZE_MAX)
		return fmt_fail(e, FMT_IO, "out of memory compressing '%s'", t->name);
	f.n_jobs = f.t->nbytes ? (size_t)((f.t->nbytes - 1) / APR_ZSTD_JOB + 1) : 1;
	f.params = ZSTD_getParams(level, f.t->nbytes, 0);
	f.params.fParams = (ZSTD_frameParameters){ .contentSizeFlag = 1, .checksumFlag = 0, .noDictIDFlag = 1 };
	int any_range = f.t->data || fmt_tensor_reads_any_range(f.t);
	int threads = pool && any_range && f.n_jobs > 1 ? fmt_pool_threads(pool) : 1;
	apr_zjobs *own = NULL;
	apr_zjobs **jobs = keep ? keep : &own;
	fmt_kind k = zjobs_ready(jobs, threads, e);
	if (k == FMT_OK) {
		f.jobs = *jobs;
		k = threads > 1 ? frame_on_pool(&f, pool, e) : frame_in_turn(&f, any_range, e);
	}
	fmt_apr_zjobs_free(&own);
	return k;
}
