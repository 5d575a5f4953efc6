/* Run-time choice between the baseline and the AVX2 build of the same float kernels. */
#include <stdlib.h>
#include <string.h>
#include "kernels.h"

#define KATTR
#define KFN(n) n##_generic
#include "kern.inc"
#undef KATTR
#undef KFN

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_AVX2_BUILD 1
#define KATTR __attribute__((target("avx2")))
#define KFN(n) n##_avx2
#include "kern.inc"
#undef KATTR
#undef KFN
#endif

static const nk_kernels generic = { "generic", dense_generic, conv2d_generic, depthwise_generic };
#ifdef HAVE_AVX2_BUILD
static const nk_kernels avx2 = { "avx2", dense_avx2, conv2d_avx2, depthwise_avx2 };
#endif

const nk_kernels *nk_kernels_generic(void)
{
	return &generic;
}

const nk_kernels *nk_kernels_get(void)
{
	const char *force = getenv("NK_KERNELS");
	if (force && strcmp(force, "generic") == 0)
		return &generic;
#ifdef HAVE_AVX2_BUILD
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		return &avx2;
#endif
	return &generic;
}
