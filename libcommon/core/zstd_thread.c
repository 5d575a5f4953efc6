/* fmt/zstd_thread.h */
#include <pthread.h>
#include "fmt/zstd_thread.h"

static pthread_key_t zstd_key;
static pthread_once_t zstd_key_once = PTHREAD_ONCE_INIT;
static int zstd_key_made;

static void free_thread_dctx(void *dctx)
{
	ZSTD_freeDCtx(dctx);
}

static void make_zstd_key(void)
{
	zstd_key_made = pthread_key_create(&zstd_key, free_thread_dctx) == 0;
}

ZSTD_DCtx *fmt_zstd_thread_dctx(void)
{
	pthread_once(&zstd_key_once, make_zstd_key);
	if (!zstd_key_made)
		return NULL;
	ZSTD_DCtx *d = pthread_getspecific(zstd_key);
	if (!d && (d = ZSTD_createDCtx()) != NULL && pthread_setspecific(zstd_key, d) != 0) {
		ZSTD_freeDCtx(d);
		d = NULL;
	}
	return d;
}

size_t fmt_zstd_decompress(void *dst, size_t dst_len, const void *src, size_t src_len)
{
	ZSTD_DCtx *d = fmt_zstd_thread_dctx();
	if (!d)
		return ZSTD_decompress(dst, dst_len, src, src_len);
	ZSTD_DCtx_reset(d, ZSTD_reset_session_and_parameters);
	return ZSTD_decompressDCtx(d, dst, dst_len, src, src_len);
}
