#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/thread.h"

struct fmt_pool {
	pthread_mutex_t run;      /* one fmt_pool_run at a time: callers on other threads wait */
	pthread_mutex_t lock;
	pthread_cond_t work;      /* a new batch, or shutdown */
	pthread_cond_t done;      /* the last task of a batch finished */
	pthread_t *workers;
	int n_workers;
	unsigned long batch;      /* incremented per fmt_pool_run */
	int shutdown;
	fmt_task_fn fn;
	void *ctx;
	size_t next, n_tasks, unfinished;
};

/* Take tasks until none is left; called with the lock held, returns with it held. */
static void drain(fmt_pool *p)
{
	while (p->next < p->n_tasks) {
		size_t i = p->next++;
		pthread_mutex_unlock(&p->lock);
		p->fn(p->ctx, i);
		pthread_mutex_lock(&p->lock);
		if (--p->unfinished == 0)
			pthread_cond_broadcast(&p->done);
	}
}

static void *worker(void *arg)
{
	fmt_pool *p = arg;
	unsigned long seen = 0;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->shutdown && p->batch == seen)
			pthread_cond_wait(&p->work, &p->lock);
		if (p->shutdown)
			break;
		seen = p->batch;
		drain(p);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int fmt_thread_start(pthread_t *thread, size_t stack, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int r = pthread_attr_init(&attr);
	if (r == 0 && stack)
		r = pthread_attr_setstacksize(&attr, stack);
	if (r != 0)
		return r;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(thread, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return r;
}

fmt_kind fmt_pool_create(fmt_pool **pool, int threads, fmt_err *e)
{
	fmt_pool *p = calloc(1, sizeof *p);
	if (!p)
		return fmt_fail(e, FMT_IO, "out of memory");
	pthread_mutex_init(&p->run, NULL);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	int extra = threads > 1 ? threads - 1 : 0;
	if (extra) {
		p->workers = calloc((size_t)extra, sizeof *p->workers);
		if (!p->workers) {
			fmt_pool_destroy(p);
			return fmt_fail(e, FMT_IO, "out of memory");
		}
	}
	/* (the atomic sinks' multi-file commit defers a SIGTERM too) */
	int started = 1;
	for (int i = 0; i < extra && started; i++) {
		started = fmt_thread_start(&p->workers[i], 0, worker, p) == 0;
		if (started)
			p->n_workers++;
	}
	if (!started) {
		int no = p->n_workers + 1;
		fmt_pool_destroy(p);
		return fmt_fail(e, FMT_IO, "cannot start worker thread %d", no);
	}
	*pool = p;
	return FMT_OK;
}

void fmt_pool_destroy(fmt_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->shutdown = 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < p->n_workers; i++)
		pthread_join(p->workers[i], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->run);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	free(p->workers);
	free(p);
}

int fmt_pool_threads(const fmt_pool *p)
{
	return p->n_workers + 1;
}

void fmt_pool_run(fmt_pool *p, size_t n, fmt_task_fn fn, void *ctx)
{
	if (n == 0)
		return;
	if (p->n_workers == 0 || n == 1) {
		for (size_t i = 0; i < n; i++)
			fn(ctx, i);
		return;
	}
	pthread_mutex_lock(&p->run);
	pthread_mutex_lock(&p->lock);
	p->fn = fn;
	p->ctx = ctx;
	p->next = 0;
	p->n_tasks = n;
	p->unfinished = n;
	p->batch++;
	pthread_cond_broadcast(&p->work);
	drain(p);
	while (p->unfinished)
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_unlock(&p->run);
}

/* A few freed task buffers, kept for the next task. Each buffer starts with a header that holds
 * its capacity (SCRATCH_HEADER bytes, so that the buffer keeps malloc's alignment). */
#define SCRATCH_SLOTS 4
#define SCRATCH_HEADER 64
#define SCRATCH_KEEP_MAX (4u << 20)   /* larger buffers go back to malloc */

static pthread_mutex_t scratch_lock = PTHREAD_MUTEX_INITIALIZER;
static void *scratch_kept[SCRATCH_SLOTS];

static size_t scratch_cap(const void *block)
{
	size_t cap;
	memcpy(&cap, block, sizeof cap);
	return cap;
}

void *fmt_scratch_take(size_t n)
{
	void *best = NULL;
	int at = -1;
	pthread_mutex_lock(&scratch_lock);
	for (int i = 0; i < SCRATCH_SLOTS; i++)   /* the smallest kept buffer that holds n */
		if (scratch_kept[i] && scratch_cap(scratch_kept[i]) >= n &&
		    (!best || scratch_cap(scratch_kept[i]) < scratch_cap(best))) {
			best = scratch_kept[i];
			at = i;
		}
	if (at >= 0)
		scratch_kept[at] = NULL;
	pthread_mutex_unlock(&scratch_lock);
	if (!best) {
		if (n > SIZE_MAX - SCRATCH_HEADER || !(best = malloc(n + SCRATCH_HEADER)))
			return NULL;
		memcpy(best, &n, sizeof n);
	}
	return (char *)best + SCRATCH_HEADER;
}

/* The slot a buffer of cap bytes goes to: an empty one, else the one with the smallest buffer
 * if that is smaller; -1 for none. Called with scratch_lock held. */
static int scratch_slot_for(size_t cap)
{
	int smallest = 0;
	for (int i = 0; i < SCRATCH_SLOTS; i++) {
		if (!scratch_kept[i])
			return i;
		if (scratch_cap(scratch_kept[i]) < scratch_cap(scratch_kept[smallest]))
			smallest = i;
	}
	return scratch_cap(scratch_kept[smallest]) < cap ? smallest : -1;
}

void fmt_scratch_give(void *p)
{
	if (!p)
		return;
	void *block = (char *)p - SCRATCH_HEADER;
	if (scratch_cap(block) <= SCRATCH_KEEP_MAX) {
		pthread_mutex_lock(&scratch_lock);
		int at = scratch_slot_for(scratch_cap(block));
		if (at >= 0) {
			void *out = scratch_kept[at];
			scratch_kept[at] = block;
			block = out;
		}
		pthread_mutex_unlock(&scratch_lock);
	}
	free(block);
}
