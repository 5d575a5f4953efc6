/* A small fixed pool of worker threads running indexed tasks. */
#ifndef FMT_THREAD_H
#define FMT_THREAD_H

#include <pthread.h>
#include <stddef.h>
#include "fmt/err.h"

typedef struct fmt_pool fmt_pool;
typedef void (*fmt_task_fn)(void *ctx, size_t index);

/* Start fn(arg) on a thread that blocks every signal but SIGBUS (its own faults:
 * fmt_cli_catch_truncation, fmt/cli.h): a SIGTERM is handled by the thread that owns the files
 * (the atomic sinks' cleanup). stack: its size in bytes, 0 for the default. 0 on success, as
 * pthread_create. */
int fmt_thread_start(pthread_t *thread, size_t stack, void *(*fn)(void *), void *arg);

/* Call when a write failed with EPIPE (the reader of a pipe is gone). On a thread that blocks
 * SIGPIPE (one fmt_thread_start made), the SIGPIPE the kernel raised for that write waits: it is
 * taken now, as the main thread takes it at the write, so the process ends the same way whichever
 * thread wrote (the atomic sinks' handler removes the temporary files, then the process ends by
 * SIGPIPE, quietly). It returns only when SIGPIPE is ignored (the caller reports the EPIPE). */
void fmt_thread_broken_pipe(void);

/* threads <= 1 makes a pool that runs every task on the calling thread. */
fmt_kind fmt_pool_create(fmt_pool **pool, int threads, fmt_err *e);
void fmt_pool_destroy(fmt_pool *pool);
int fmt_pool_threads(const fmt_pool *pool);

/* Run fn(ctx, i) for i in 0..n-1 on the pool (the caller works too) and return when all are
 * done. Callers on several threads take turns. Tasks must not call fmt_pool_run on the same
 * pool. */
void fmt_pool_run(fmt_pool *pool, size_t n, fmt_task_fn fn, void *ctx);

/* A working buffer of n bytes for a task that runs many times a second (NULL: out of memory),
 * and back when done: a few are kept for the next task (on any thread) instead of freed, since
 * malloc hands big blocks back to the kernel on free and each new one faults its pages in again
 * (a tenth of the CPU of a Q4_0 conversion on two threads). */
void *fmt_scratch_take(size_t n);
void fmt_scratch_give(void *p);

/* The same for any use: a keeper holds up to slots freed buffers (the largest ones, each of at
 * most keep_max bytes, bytes_max in all) for the next take of a size one of them holds. */
#define FMT_KEEP_SLOTS_MAX 32
typedef struct fmt_keep {
	pthread_mutex_t lock;
	int slots;                         /* at most FMT_KEEP_SLOTS_MAX */
	size_t keep_max, bytes_max, bytes; /* bytes: what is kept now */
	void *kept[FMT_KEEP_SLOTS_MAX];
} fmt_keep;
#define FMT_KEEP_INIT(slots, keep_max, bytes_max) { PTHREAD_MUTEX_INITIALIZER, (slots), (keep_max), (bytes_max), 0, { 0 } }
void *fmt_keep_take(fmt_keep *k, size_t n);   /* NULL: out of memory */
void fmt_keep_give(fmt_keep *k, void *p);     /* p from fmt_keep_take of k, or NULL */

#endif
