/* Run-time choice between the baseline and the AVX2 build of the same float kernels. */
#include <stdlib.h>
#include <string.h>
#include "kernels.h"

#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wpsabi" /* v8 helpers are always inlined: no ABI crossing */

/* 8 float lanes; the generic build lowers them to pairs of SSE operations, AVX2 to one. */
typedef float v8 __attribute__((vector_size(32)));

static inline __attribute__((always_inline)) v8 v8_load(const float *p)
{
	v8 v;
	memcpy(&v, p, sizeof v);
	return v;
}

static inline __attribute__((always_inline)) void v8_store(float *p, v8 v)
{
	memcpy(p, &v, sizeof v);
}

static inline __attribute__((always_inline)) v8 v8_splat(float f)
{
	return (v8){ f, f, f, f, f, f, f, f };
}

static inline __attribute__((always_inline)) v8 v8_gather(const float *p, long s)
{
	return (v8){ p[0], p[s], p[2 * s], p[3 * s], p[4 * s], p[5 * s], p[6 * s], p[7 * s] };
}

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
