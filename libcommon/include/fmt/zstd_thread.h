/* zstd decompression contexts lent and given back, for every reader that decompresses zstd
 * (whole buffers: Parquet pages, Arrow IPC buffers; streams: .ald payloads and chunks, APR
 * frames): a context is about 95 KB set up afresh by ZSTD_createDCtx (and by ZSTD_decompress),
 * 19 % of the CPU of an .ald of 30,000 STREAMING chunks to CSV when made per chunk, 14 % of an
 * Arrow IPC file of 30,000 small zstd batches, 17 % of fmt-verify of an APR file of 20,000 small
 * zstd tensors. Each thread keeps the last context it gave back (freed when the thread ends),
 * and a few more are kept for all threads (a stream may begin on one thread and end on
 * another); those kept are freed at exit. Thread-safe. */
#ifndef FMT_ZSTD_THREAD_H
#define FMT_ZSTD_THREAD_H

#include <stddef.h>
#include <zstd.h>
#include "fmt/err.h"

/* A context in the state ZSTD_createDCtx makes one (its session and parameters reset), the
 * calling thread's or one kept, or made; NULL when out of memory. Give it back when done. */
ZSTD_DCtx *fmt_zstd_dctx_take(void);
/* d (from fmt_zstd_dctx_take, in any state; on any thread) kept for the next take, or freed
 * when enough are kept. NULL: nothing. */
void fmt_zstd_dctx_give(ZSTD_DCtx *d);
/* The kind of zstd's error r: IO when its allocation failed (ZSTD_error_memory_allocation,
 * "Allocation error : not enough memory"), else otherwise (a bad frame, or a bug). */
fmt_kind fmt_zstd_kind(size_t r, fmt_kind otherwise);
/* ZSTD_decompress through a lent context (the same result). */
size_t fmt_zstd_decompress(void *dst, size_t dst_len, const void *src, size_t src_len);

#endif
