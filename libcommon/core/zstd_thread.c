/* fmt/zstd_thread.h */
#include <pthread.h>
#include <stdlib.h>
#include <zstd_errors.h>
#include "fmt/zstd_thread.h"

/* Contexts given back beyond each thread's one: as many as streams that end on one thread
 * while others begin on another (the .ald reader's payload threads, APR tensors decoded
 * ahead) need. */
#define SHELF 8

static pthread_key_t slot_key;          /* the thread's kept context, freed when it ends */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int slot_made;
static pthread_mutex_t shelf_lock = PTHREAD_MUTEX_INITIALIZER;
static ZSTD_DCtx *shelf[SHELF];
static size_t n_shelf;

static void free_slot(void *dctx)
{
	ZSTD_freeDCtx(dctx);
}

/* At exit: the contexts kept (the exiting thread's and the shelf's), which no thread uses. */
static void free_kept(void)
{
	if (slot_made) {
		ZSTD_freeDCtx(pthread_getspecific(slot_key));
		pthread_setspecific(slot_key, NULL);
	}
	pthread_mutex_lock(&shelf_lock);
	while (n_shelf)
		ZSTD_freeDCtx(shelf[--n_shelf]);
	pthread_mutex_unlock(&shelf_lock);
}

static void init(void)
{
	slot_made = pthread_key_create(&slot_key, free_slot) == 0;
	atexit(free_kept);
}

static ZSTD_DCtx *from_slot(void)
{
	ZSTD_DCtx *d = slot_made ? pthread_getspecific(slot_key) : NULL;
	if (d)
		pthread_setspecific(slot_key, NULL);
	return d;
}

static ZSTD_DCtx *from_shelf(void)
{
	ZSTD_DCtx *d = NULL;
	pthread_mutex_lock(&shelf_lock);
	if (n_shelf)
		d = shelf[--n_shelf];
	pthread_mutex_unlock(&shelf_lock);
	return d;
}

ZSTD_DCtx *fmt_zstd_dctx_take(void)
{
	pthread_once(&once, init);
	ZSTD_DCtx *d = from_slot();
	if (!d)
		d = from_shelf();
	if (!d)
		return ZSTD_createDCtx();
	ZSTD_DCtx_reset(d, ZSTD_reset_session_and_parameters);
	return d;
}

void fmt_zstd_dctx_give(ZSTD_DCtx *d)
{
	if (!d)
		return;
	pthread_once(&once, init);
	if (slot_made && !pthread_getspecific(slot_key) && pthread_setspecific(slot_key, d) == 0)
		return;
	pthread_mutex_lock(&shelf_lock);
	if (n_shelf < SHELF) {
		shelf[n_shelf++] = d;
		d = NULL;
	}
	pthread_mutex_unlock(&shelf_lock);
	ZSTD_freeDCtx(d);
}

size_t fmt_zstd_decompress(void *dst, size_t dst_len, const void *src, size_t src_len)
{
	ZSTD_DCtx *d = fmt_zstd_dctx_take();
	if (!d)
		return ZSTD_decompress(dst, dst_len, src, src_len);
	size_t n = ZSTD_decompressDCtx(d, dst, dst_len, src, src_len);
	fmt_zstd_dctx_give(d);
	return n;
}

fmt_kind fmt_zstd_kind(size_t r, fmt_kind otherwise)
{
	return ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation ? FMT_IO : otherwise;
}
