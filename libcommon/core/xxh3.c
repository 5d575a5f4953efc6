/* XXH3 (fmt/xxh3.h): libxxhash's implementation, from its header, with the AVX2 and AVX-512
 * loops built beside the SSE2 one (XXH_X86DISPATCH and the XXH_TARGET_ attributes the header
 * offers for this) and chosen at run time. */
#include "fmt/xxh3.h"
#include <stdlib.h>
#if defined(__x86_64__)
#include <immintrin.h>
#define XXH_X86DISPATCH
#define XXH_DISPATCH_AVX2 1
#define XXH_DISPATCH_AVX512 1
#define XXH_TARGET_AVX2 __attribute__((target("avx2")))
#define XXH_TARGET_AVX512 __attribute__((target("avx512f")))
#endif
#define XXH_IMPLEMENTATION
#include <xxhash.h>

#if defined(__x86_64__)

XXH_TARGET_AVX2 static XXH_errorcode update_avx2(XXH3_state_t *state, const void *p, size_t n)
{
	return XXH3_update(state, (const xxh_u8 *)p, n, XXH3_accumulate_512_avx2, XXH3_scrambleAcc_avx2);
}

XXH_TARGET_AVX512 static XXH_errorcode update_avx512(XXH3_state_t *state, const void *p, size_t n)
{
	return XXH3_update(state, (const xxh_u8 *)p, n, XXH3_accumulate_512_avx512, XXH3_scrambleAcc_avx512);
}

int fmt_xxh3_level(void)
{
	/* libgcc's table, filled before main: two loads, no CPUID per call */
	if (__builtin_cpu_supports("avx512f"))
		return 2;
	return __builtin_cpu_supports("avx2") ? 1 : 0;
}

XXH_errorcode fmt_xxh3_update_level(XXH3_state_t *state, const void *p, size_t n, int level)
{
	if (level >= 2)
		return update_avx512(state, p, n);
	if (level == 1)
		return update_avx2(state, p, n);
	return XXH3_64bits_update(state, p, n);
}

#else

int fmt_xxh3_level(void)
{
	return 0;
}

XXH_errorcode fmt_xxh3_update_level(XXH3_state_t *state, const void *p, size_t n, int level)
{
	(void)level;
	return XXH3_64bits_update(state, p, n);
}

#endif

XXH_errorcode fmt_xxh3_update(XXH3_state_t *state, const void *p, size_t n)
{
	return fmt_xxh3_update_level(state, p, n, fmt_xxh3_level());
}

/* Serial reads: small enough that the bytes are still in the L2 cache when hashed. 256 KiB
 * reads cost 1.6x the CPU of 128 KiB ones per GB on a 2-core AMD EPYC (1 MiB L2 per core:
 * perf stat task-clock 223 vs 138 ms for 1 GB from the page cache; xxhsum, 64 KiB reads: 140). */
#define READ_CHUNK (128u << 10)

static fmt_kind hash_serial(XXH3_state_t *h, uint64_t n, fmt_read_at_fn read_at, void *ctx, fmt_err *e)
{
	uint8_t *buf = malloc(READ_CHUNK);
	if (!buf)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = FMT_OK;
	for (uint64_t off = 0; k == FMT_OK && off < n; off += READ_CHUNK) {
		size_t part = n - off < READ_CHUNK ? (size_t)(n - off) : READ_CHUNK;
		k = read_at(ctx, off, buf, part, e);
		if (k == FMT_OK)
			fmt_xxh3_update(h, buf, part);
	}
	free(buf);
	return k;
}

/* Pipelined: the copy out of the page cache is three quarters of the work (1 GB on the 2-core
 * Xeon bench VM: 0.12 s of pread, 0.04 s of hashing), and only it can be shared: each round
 * hashes one batch on one thread while every other thread reads the next batch's pieces (the
 * thread done hashing first reads too). */
#define PIPE_PIECE (256u << 10)
#define PIPE_PIECES (FMT_XXH3_READ_BATCH / PIPE_PIECE)
#define PIPE_BATCH ((uint64_t)FMT_XXH3_READ_BATCH)

typedef struct pipe_round {
	XXH3_state_t *h;
	fmt_read_at_fn read_at;
	void *ctx;
	const uint8_t *hash_p;         /* the batch read last round, or NULL */
	size_t hash_n;
	uint8_t *read_p;               /* this round's batch, read at read_off */
	uint64_t read_off;
	size_t read_n;
	fmt_kind kind[PIPE_PIECES];
	fmt_err err[PIPE_PIECES];
} pipe_round;

static size_t round_pieces(size_t read_n)
{
	return (read_n + PIPE_PIECE - 1) / PIPE_PIECE;
}

/* Task 0 hashes, task 1 + j reads piece j. */
static void pipe_task(void *ctx, size_t i)
{
	pipe_round *r = ctx;
	if (i == 0) {
		if (r->hash_n)
			fmt_xxh3_update(r->h, r->hash_p, r->hash_n);
		return;
	}
	size_t j = i - 1, at = j * PIPE_PIECE, part = r->read_n - at < PIPE_PIECE ? r->read_n - at : PIPE_PIECE;
	r->kind[j] = r->read_at(r->ctx, r->read_off + at, r->read_p + at, part, &r->err[j]);
}

static fmt_kind hash_pipelined(XXH3_state_t *h, uint64_t n, fmt_read_at_fn read_at, void *ctx, fmt_pool *pool,
			       fmt_err *e)
{
	uint8_t *buf = malloc(2 * PIPE_BATCH);
	pipe_round *r = calloc(1, sizeof *r);
	fmt_kind k = buf && r ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		*r = (pipe_round){ .h = h, .read_at = read_at, .ctx = ctx };
	for (uint64_t off = 0, round = 0; k == FMT_OK && (off < n || r->hash_n); round++) {
		size_t read_n = n - off < PIPE_BATCH ? (size_t)(n - off) : (size_t)PIPE_BATCH;
		size_t pieces = round_pieces(read_n);
		r->read_p = buf + (round & 1) * PIPE_BATCH;
		r->read_off = off;
		r->read_n = read_n;
		for (size_t j = 0; j < pieces; j++)
			r->kind[j] = FMT_OK;
		fmt_pool_run(pool, 1 + pieces, pipe_task, r);
		for (size_t j = 0; j < pieces && k == FMT_OK; j++)
			if (r->kind[j] != FMT_OK) {
				*e = r->err[j];
				k = r->kind[j];
			}
		r->hash_p = r->read_p;
		r->hash_n = read_n;
		off += read_n;
	}
	free(r);
	free(buf);
	return k;
}

fmt_kind fmt_xxh3_read(XXH3_state_t *h, uint64_t n, fmt_read_at_fn read_at, void *ctx, fmt_pool *pool,
		       fmt_err *e)
{
	if (pool && fmt_pool_threads(pool) > 1 && n > PIPE_BATCH)
		return hash_pipelined(h, n, read_at, ctx, pool, e);
	return hash_serial(h, n, read_at, ctx, e);
}
