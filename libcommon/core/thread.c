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
	/* A SIGBUS the thread's own access raises (a mapped input truncated) must reach its handler:
	 * blocked, the kernel kills the process with it instead (fmt_cli_catch_truncation). */
	sigdelset(&all, SIGBUS);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(thread, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return r;
}

void fmt_thread_broken_pipe(void)
{
	sigset_t pipe_only, old;
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	/* the SIGPIPE the failed write raised is pending on this thread: it arrives here */
	pthread_sigmask(SIG_UNBLOCK, &pipe_only, &old);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
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

/* Each kept buffer starts with a header that holds its capacity (FMT_KEEP_HEADER bytes, so that
 * the buffer keeps malloc's alignment). */
#define FMT_KEEP_HEADER 64

static size_t keep_cap(const void *block)
{
	size_t cap;
	memcpy(&cap, block, sizeof cap);
	return cap;
}

void *fmt_keep_take(fmt_keep *k, size_t n)
{
	void *best = NULL;
	int at = -1;
	pthread_mutex_lock(&k->lock);
	for (int i = 0; i < k->slots; i++)   /* the smallest kept buffer that holds n */
		if (k->kept[i] && keep_cap(k->kept[i]) >= n && (!best || keep_cap(k->kept[i]) < keep_cap(best))) {
			best = k->kept[i];
			at = i;
		}
	if (at >= 0) {
		k->kept[at] = NULL;
		k->bytes -= keep_cap(best);
	}
	pthread_mutex_unlock(&k->lock);
	if (!best) {
		if (n > SIZE_MAX - FMT_KEEP_HEADER || !(best = malloc(n + FMT_KEEP_HEADER)))
			return NULL;
		memcpy(best, &n, sizeof n);
	}
	return (char *)best + FMT_KEEP_HEADER;
}

/* The slot a buffer of cap bytes goes to: an empty one, else the one with the smallest buffer
 * if that is smaller; -1 for none. Called with k->lock held. */
static int keep_slot_for(const fmt_keep *k, size_t cap)
{
	int smallest = 0;
	for (int i = 0; i < k->slots; i++) {
		if (!k->kept[i])
			return i;
		if (keep_cap(k->kept[i]) < keep_cap(k->kept[smallest]))
			smallest = i;
	}
	return keep_cap(k->kept[smallest]) < cap ? smallest : -1;
}

void fmt_keep_give(fmt_keep *k, void *p)
{
	if (!p)
		return;
	void *block = (char *)p - FMT_KEEP_HEADER;
	size_t cap = keep_cap(block);
	if (cap <= k->keep_max) {
		pthread_mutex_lock(&k->lock);
		int at = keep_slot_for(k, cap);
		size_t out = at >= 0 && k->kept[at] ? keep_cap(k->kept[at]) : 0;
		if (at >= 0 && k->bytes - out + cap <= k->bytes_max) {
			void *old = k->kept[at];
			k->kept[at] = block;
			k->bytes = k->bytes - out + cap;
			block = old;
		}
		pthread_mutex_unlock(&k->lock);
	}
	free(block);
}

/* A few freed task buffers, kept for the next task. */
static fmt_keep scratch = FMT_KEEP_INIT(4, 4u << 20, 16u << 20);

void *fmt_scratch_take(size_t n)
{
	return fmt_keep_take(&scratch, n);
}

void fmt_scratch_give(void *p)
{
	fmt_keep_give(&scratch, p);
}
