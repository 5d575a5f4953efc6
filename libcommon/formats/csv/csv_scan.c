/* The CSV byte scans: where the next delimiter, quote or line break is, and the counts of
 * quotes and line feeds in a block (the parallel reader's chunk edges). A portable loop and
 * SSE2/AVX2 ones (and AVX-512 for the 64-byte block masks), chosen once at run time; every one
 * gives the same answers. FMTKIT_CSV_SCAN=portable|sse2|avx2|avx512 in the environment caps the
 * choice (tests). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/env.h"
#include "csv_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* Eight bytes at a time: a byte of w equal to c gives w ^ c*0x0101.. a zero byte, which
 * (x - 0x0101..) & ~x & 0x8080.. detects. */
static size_t special_portable(const char *p, size_t n, char delim)
{
	const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
	const uint64_t d = ones * (unsigned char)delim, dq = ones * '"', lf = ones * '\n', cr = ones * '\r';
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w, x;
		memcpy(&w, p + i, 8);
		x = ((w ^ d) - ones) & ~(w ^ d);
		x |= ((w ^ dq) - ones) & ~(w ^ dq);
		x |= ((w ^ lf) - ones) & ~(w ^ lf);
		x |= ((w ^ cr) - ones) & ~(w ^ cr);
		if (x & highs)
			break;
	}
	for (; i < n; i++) {
		char c = p[i];
		if (c == delim || c == '"' || c == '\n' || c == '\r')
			break;
	}
	return i;
}

static int is_special(char c, char delim)
{
	return c == delim || c == '"' || c == '\n' || c == '\r';
}

static uint64_t special_mask_portable(const char *p, size_t n, char delim)
{
	uint64_t mask = 0;
	for (size_t i = 0; i < n && i < 64; i++)
		mask |= (uint64_t)is_special(p[i], delim) << i;
	return mask;
}

static uint64_t byte_mask_portable(const char *p, size_t n, char c)
{
	uint64_t mask = 0;
	for (size_t i = 0; i < n && i < 64; i++)
		mask |= (uint64_t)(p[i] == c) << i;
	return mask;
}

static size_t count_byte_portable(const char *p, size_t n, char c)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++)
		count += p[i] == c;
	return count;
}

#if defined(__x86_64__)
__attribute__((target("sse2")))
static size_t special_sse2(const char *p, size_t n, char delim)
{
	const __m128i d = _mm_set1_epi8(delim), dq = _mm_set1_epi8('"'), lf = _mm_set1_epi8('\n'),
		      cr = _mm_set1_epi8('\r');
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m128i w = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
		__m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, d), _mm_cmpeq_epi8(w, dq)),
					   _mm_or_si128(_mm_cmpeq_epi8(w, lf), _mm_cmpeq_epi8(w, cr)));
		unsigned mask = (unsigned)_mm_movemask_epi8(hit);
		if (mask)
			return i + (size_t)__builtin_ctz(mask);
	}
	return i + special_portable(p + i, n - i, delim);
}

__attribute__((target("avx2")))
static size_t special_avx2(const char *p, size_t n, char delim)
{
	const __m256i d = _mm256_set1_epi8(delim), dq = _mm256_set1_epi8('"'), lf = _mm256_set1_epi8('\n'),
		      cr = _mm256_set1_epi8('\r');
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m256i w = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
		__m256i hit = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(w, d), _mm256_cmpeq_epi8(w, dq)),
					      _mm256_or_si256(_mm256_cmpeq_epi8(w, lf), _mm256_cmpeq_epi8(w, cr)));
		unsigned mask = (unsigned)_mm256_movemask_epi8(hit);
		if (mask)
			return i + (size_t)__builtin_ctz(mask);
	}
	return i + special_sse2(p + i, n - i, delim);
}

__attribute__((target("sse2")))
static uint64_t special_mask_sse2(const char *p, size_t n, char delim)
{
	if (n < 64)
		return special_mask_portable(p, n, delim);
	const __m128i d = _mm_set1_epi8(delim), dq = _mm_set1_epi8('"'), lf = _mm_set1_epi8('\n'),
		      cr = _mm_set1_epi8('\r');
	uint64_t mask = 0;
	for (int i = 0; i < 64; i += 16) {
		__m128i w = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
		__m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, d), _mm_cmpeq_epi8(w, dq)),
					   _mm_or_si128(_mm_cmpeq_epi8(w, lf), _mm_cmpeq_epi8(w, cr)));
		mask |= (uint64_t)(unsigned)_mm_movemask_epi8(hit) << i;
	}
	return mask;
}

__attribute__((target("avx2")))
static uint64_t special_mask_avx2(const char *p, size_t n, char delim)
{
	if (n < 64)
		return special_mask_portable(p, n, delim);
	const __m256i d = _mm256_set1_epi8(delim), dq = _mm256_set1_epi8('"'), lf = _mm256_set1_epi8('\n'),
		      cr = _mm256_set1_epi8('\r');
	uint64_t mask = 0;
	for (int i = 0; i < 64; i += 32) {
		__m256i w = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
		__m256i hit = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(w, d), _mm256_cmpeq_epi8(w, dq)),
					      _mm256_or_si256(_mm256_cmpeq_epi8(w, lf), _mm256_cmpeq_epi8(w, cr)));
		mask |= (uint64_t)(unsigned)_mm256_movemask_epi8(hit) << i;
	}
	return mask;
}

/* A masked load: the bytes past n are never read, so a short block needs no other path. */
__attribute__((target("avx512f,avx512bw")))
static uint64_t special_mask_avx512(const char *p, size_t n, char delim)
{
	__mmask64 in = n >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << n) - 1;
	__m512i w = _mm512_maskz_loadu_epi8(in, p);
	__mmask64 hit = _mm512_cmpeq_epi8_mask(w, _mm512_set1_epi8(delim)) |
			_mm512_cmpeq_epi8_mask(w, _mm512_set1_epi8('"')) |
			_mm512_cmpeq_epi8_mask(w, _mm512_set1_epi8('\n')) |
			_mm512_cmpeq_epi8_mask(w, _mm512_set1_epi8('\r'));
	return (uint64_t)(hit & in);
}

__attribute__((target("sse2")))
static size_t count_byte_sse2(const char *p, size_t n, char c)
{
	const __m128i want = _mm_set1_epi8(c);
	size_t i = 0, count = 0;
	for (; i + 16 <= n; i += 16) {
		__m128i w = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
		count += (size_t)__builtin_popcount((unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(w, want)));
	}
	return count + count_byte_portable(p + i, n - i, c);
}

__attribute__((target("avx2,popcnt")))
static size_t count_byte_avx2(const char *p, size_t n, char c)
{
	const __m256i want = _mm256_set1_epi8(c);
	size_t i = 0, count = 0;
	for (; i + 32 <= n; i += 32) {
		__m256i w = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
		count += (size_t)__builtin_popcount((unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(w, want)));
	}
	return count + count_byte_sse2(p + i, n - i, c);
}

__attribute__((target("sse2")))
static uint64_t byte_mask_sse2(const char *p, size_t n, char c)
{
	if (n < 64)
		return byte_mask_portable(p, n, c);
	const __m128i want = _mm_set1_epi8(c);
	uint64_t mask = 0;
	for (int i = 0; i < 64; i += 16) {
		__m128i w = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
		mask |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(w, want)) << i;
	}
	return mask;
}

__attribute__((target("avx2")))
static uint64_t byte_mask_avx2(const char *p, size_t n, char c)
{
	if (n < 64)
		return byte_mask_portable(p, n, c);
	const __m256i want = _mm256_set1_epi8(c);
	uint64_t mask = 0;
	for (int i = 0; i < 64; i += 32) {
		__m256i w = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
		mask |= (uint64_t)(unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(w, want)) << i;
	}
	return mask;
}

__attribute__((target("avx512f,avx512bw")))
static uint64_t byte_mask_avx512(const char *p, size_t n, char c)
{
	__mmask64 in = n >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << n) - 1;
	return (uint64_t)(_mm512_cmpeq_epi8_mask(_mm512_maskz_loadu_epi8(in, p), _mm512_set1_epi8(c)) & in);
}
#endif

/* 0 portable, 1 SSE2, 2 AVX2, 3 AVX-512 (the block masks; the other scans use AVX2 there): what
 * the CPU has, capped by FMTKIT_CSV_SCAN; -1 until known.
 * Threads racing on the first call all store the same answer. */
static atomic_int scan_level = -1;

static int detect_level(void)
{
	/* unset (or avx512): what the CPU has */
	int cap = fmt_env_level(FMT_ENV_CSV_SCAN);
	if (cap < 0)
		cap = 3;
#if defined(__x86_64__)
	__builtin_cpu_init();
	int have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt") ? 2 : 1;
	if (have == 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
		have = 3;
#else
	int have = 0;
#endif
	return have < cap ? have : cap;
}

static int level(void)
{
	int l = atomic_load_explicit(&scan_level, memory_order_relaxed);
	if (l < 0) {
		l = detect_level();
		atomic_store_explicit(&scan_level, l, memory_order_relaxed);
	}
	return l;
}

size_t fmt_csv_special_byte(const char *p, size_t n, char delim)
{
#if defined(__x86_64__)
	switch (level()) {
	case 3: case 2: return special_avx2(p, n, delim);
	case 1: return special_sse2(p, n, delim);
	default: break;
	}
#endif
	return special_portable(p, n, delim);
}

size_t fmt_csv_count_byte(const char *p, size_t n, char c)
{
#if defined(__x86_64__)
	switch (level()) {
	case 3: case 2: return count_byte_avx2(p, n, c);
	case 1: return count_byte_sse2(p, n, c);
	default: break;
	}
#endif
	return count_byte_portable(p, n, c);
}

uint64_t fmt_csv_special_mask(const char *p, size_t n, char delim)
{
#if defined(__x86_64__)
	switch (level()) {
	case 3: return special_mask_avx512(p, n, delim);
	case 2: return special_mask_avx2(p, n, delim);
	case 1: return special_mask_sse2(p, n, delim);
	default: break;
	}
#endif
	return special_mask_portable(p, n, delim);
}

uint64_t fmt_csv_byte_mask(const char *p, size_t n, char c)
{
#if defined(__x86_64__)
	switch (level()) {
	case 3: return byte_mask_avx512(p, n, c);
	case 2: return byte_mask_avx2(p, n, c);
	case 1: return byte_mask_sse2(p, n, c);
	default: break;
	}
#endif
	return byte_mask_portable(p, n, c);
}
