/* A zstd decompression context per thread, for the readers that decompress whole buffers one
 * after another (Parquet pages, Arrow IPC buffers): made on the thread's first and kept for its
 * next, freed when the thread ends. Making one per buffer (ZSTD_decompress does) cost about
 * 95 KB of set-up each time: 7 % of the CPU of a 4,000-column Parquet file to CSV, 14 % of an
 * Arrow IPC file of 30,000 small compressed batches. */
#ifndef FMT_ZSTD_THREAD_H
#define FMT_ZSTD_THREAD_H

#include <stddef.h>
#include <zstd.h>

/* The calling thread's context (its state as the last use left it), or NULL when it cannot
 * be made. */
ZSTD_DCtx *fmt_zstd_thread_dctx(void);
/* ZSTD_decompress through the thread's context, its parameters reset first (the same result). */
size_t fmt_zstd_decompress(void *dst, size_t dst_len, const void *src, size_t src_len);

#endif
