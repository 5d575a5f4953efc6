/* Run-time choice between the baseline and the AVX2 build of the same float and int8 kernels. */
#include <immintrin.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kernels.h"

/* 8 float lanes; the generic build lowers them to pairs of SSE operations, AVX2 to one. The
 * helpers are macros: a v8 passed or returned by value would cross the ABI differently in the
 * two builds. */
typedef float v8 __attribute__((vector_size(32)));

#define v8_load(p) ({ v8 v8_; memcpy(&v8_, (p), sizeof v8_); v8_; })
#define v8_store(p, v) do { v8 v8s_ = (v); memcpy((p), &v8s_, sizeof v8s_); } while (0)
#define v8_splat(f) ({ float f_ = (f); (v8){ f_, f_, f_, f_, f_, f_, f_, f_ }; })
/* The clamps fused into the kernels' stores (act: NK_CLAMP_*), as the scalar activations
 * compute them: relu x > 0 ? x : 0; relu6 x > 0 ? (x < 6 ? x : 6) : 0 (NaN gives 0). */
static inline float s_act(float v, int act)
{
	if (act == NK_CLAMP_RELU)
		return v > 0.0f ? v : 0.0f;
	if (act == NK_CLAMP_RELU6)
		return v > 0.0f ? (v < 6.0f ? v : 6.0f) : 0.0f;
	return v;
}

typedef int v8i __attribute__((vector_size(32)));
#define v8_act(v, act) ({ v8 a_ = (v); \
	if ((act) == NK_CLAMP_RELU6) { v8 six_ = v8_splat(6.0f); v8i lt_ = a_ < six_; \
		a_ = (v8)(((v8i)a_ & lt_) | ((v8i)six_ & ~lt_)); } \
	if ((act) != NK_CLAMP_NONE) a_ = (v8)((v8i)a_ & ((v) > v8_splat(0.0f))); \
	a_; })
#define v8_gather(p, s) ({ const float *p_ = (p); long s_ = (s); \
	(v8){ p_[0], p_[s_], p_[2 * s_], p_[3 * s_], p_[4 * s_], p_[5 * s_], p_[6 * s_], p_[7 * s_] }; })

/* Baseline: C fmaf (correctly rounded, exactly what the FMA instruction computes). */
#define S_FMA(a, b, c) fmaf((a), (b), (c))
#define V8_FMA(a, b, c) ({ v8 a_ = (a), b_ = (b), c_ = (c); \
	(v8){ fmaf(a_[0], b_[0], c_[0]), fmaf(a_[1], b_[1], c_[1]), fmaf(a_[2], b_[2], c_[2]), \
	      fmaf(a_[3], b_[3], c_[3]), fmaf(a_[4], b_[4], c_[4]), fmaf(a_[5], b_[5], c_[5]), \
	      fmaf(a_[6], b_[6], c_[6]), fmaf(a_[7], b_[7], c_[7]) }; })
#define KATTR
#define KFN(n) n##_generic
#include "kern.inc"
#include "qkern.inc"
#undef KATTR
#undef KFN
#undef S_FMA
#undef V8_FMA

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_AVX2_BUILD 1
#define S_FMA(a, b, c) __builtin_fmaf((a), (b), (c))
#define V8_FMA(a, b, c) ((v8)_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#define KATTR __attribute__((target("avx2,fma")))
#define KFN(n) n##_avx2
#include "kern.inc"
#include "qkern.inc"
#undef KATTR
#undef KFN
#endif

static const nk_kernels generic = { "generic", dense_generic, conv2d_generic, depthwise_generic,
				     qdense_generic, qconv_generic, qdw_generic };
#ifdef HAVE_AVX2_BUILD
static const nk_kernels avx2 = { "avx2", dense_avx2, conv2d_avx2, depthwise_avx2,
				  qdense_avx2, qconv_avx2, qdw_avx2 };
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
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return &avx2;
#endif
	return &generic;
}
