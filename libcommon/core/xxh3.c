/* XXH3 (fmt/xxh3.h): libxxhash's implementation, from its header, with the AVX2 and AVX-512
 * loops built beside the SSE2 one (XXH_X86DISPATCH and the XXH_TARGET_ attributes the header
 * offers for this) and chosen at run time. */
#include "fmt/xxh3.h"
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
