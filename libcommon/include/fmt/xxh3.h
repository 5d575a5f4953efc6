/* XXH3 from libxxhash's header, compiled into libcommon (core/xxh3.c) under the fmt_ prefix
 * instead of linked from libxxhash.so: a tool then maps one shared library fewer at start-up
 * (fmt-verify --version maps libc and libm: 2.63 ms a run against 3.11, perf stat -r 300).
 * Include this rather than <xxhash.h> (nothing links libxxhash): the names below are
 * libxxhash's (XXH3_64bits, XXH3_createState...), renamed to fmt_XXH3_... by XXH_NAMESPACE. A
 * file may instead define XXH_INLINE_ALL before <xxhash.h> for static copies of its own (the
 * Parquet writer's dictionary hashes short values inline). */
#ifndef FMT_XXH3_H
#define FMT_XXH3_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/err.h"
#include "fmt/thread.h"
#define XXH_NAMESPACE fmt_
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

/* XXH3_64bits_update on the widest vector unit the CPU has (AVX-512, AVX2, else SSE2): the same
 * state and digest, about twice the speed of the SSE2 loop on long inputs. */
XXH_errorcode fmt_xxh3_update(XXH3_state_t *state, const void *p, size_t n);

/* The same through one unit: 0 SSE2 (or the portable loop off x86-64), 1 AVX2, 2 AVX-512; the
 * caller checks that the CPU has it (fmt_xxh3_level). For the tests that compare the units. */
XXH_errorcode fmt_xxh3_update_level(XXH3_state_t *state, const void *p, size_t n, int level);

/* The widest unit fmt_xxh3_update uses on this CPU (0, 1 or 2, as above). */
int fmt_xxh3_level(void);

/* Reads n bytes at off of ctx into dst: FMT_OK, or an error kind with e filled. Called on
 * several threads at once when a pool is given below. */
typedef fmt_kind (*fmt_read_at_fn)(void *ctx, uint64_t off, void *dst, size_t n, fmt_err *e);

/* Feeds h the bytes [0, n) of what read_at reads, in order. With a pool of two threads or more,
 * a batch (FMT_XXH3_READ_BATCH bytes, two in memory) is read (in pieces, on every thread) while the one before it is hashed; otherwise in
 * small chunks hashed while still in the L2 cache. The first failed read's kind, e filled. */
#define FMT_XXH3_READ_BATCH (2u << 20)
fmt_kind fmt_xxh3_read(XXH3_state_t *h, uint64_t n, fmt_read_at_fn read_at, void *ctx, fmt_pool *pool,
		       fmt_err *e);

#endif
