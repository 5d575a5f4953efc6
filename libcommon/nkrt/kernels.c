/* Run-time choice between the baseline, the AVX2 and the AVX-512 builds of the same float and
 * int8 kernels (kern.inc, qkern.inc), and the AVX-512 build with its int8 ops on VNNI
 * (qvnni.inc), bit-identical whichever runs. */
#include <immintrin.h>
#include <stdint.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/env.h"
#include "fmt/nkrt.h"
#include "kernels.h"

/* 8- and 16-lane float vectors: the baseline and AVX2 builds use 8 lanes (SSE pairs, one ymm),
 * the AVX-512 build 16 where it can (one zmm). The helpers are macros: a vector passed or
 * returned by value would cross the ABI differently in the builds. */
typedef float v8 __attribute__((vector_size(32)));
typedef float v16 __attribute__((vector_size(64)));
typedef int v8i __attribute__((vector_size(32)));
typedef int v16i __attribute__((vector_size(64)));

#define v8_load(p) ({ v8 v8_; memcpy(&v8_, (p), sizeof v8_); v8_; })
#define v16_load(p) ({ v16 v16_; memcpy(&v16_, (p), sizeof v16_); v16_; })
#define v8_store(p, v) do { v8 v8s_ = (v); memcpy((p), &v8s_, sizeof v8s_); } while (0)
#define v16_store(p, v) do { v16 v16s_ = (v); memcpy((p), &v16s_, sizeof v16s_); } while (0)
#define v8_splat(f) ({ float f_ = (f); (v8){ f_, f_, f_, f_, f_, f_, f_, f_ }; })
#define v16_splat(f) ({ float f_ = (f); (v16){ f_, f_, f_, f_, f_, f_, f_, f_, f_, f_, f_, f_, f_, f_, f_, f_ }; })
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
#define VACT(T, TI, v, act) ({ T a_ = (v); \
	if ((act) == NK_CLAMP_RELU6) { T six_ = T##_splat(6.0f); TI lt_ = a_ < six_; \
		a_ = (T)(((TI)a_ & lt_) | ((TI)six_ & ~lt_)); } \
	if ((act) != NK_CLAMP_NONE) a_ = (T)((TI)a_ & ((v) > T##_splat(0.0f))); \
	a_; })
#define v8_act(v, act) VACT(v8, v8i, v, act)
#define v16_act(v, act) VACT(v16, v16i, v, act)
#define v8_gather(p, s) ({ const float *p_ = (p); long s_ = (s); \
	(v8){ p_[0], p_[s_], p_[2 * s_], p_[3 * s_], p_[4 * s_], p_[5 * s_], p_[6 * s_], p_[7 * s_] }; })
#define v16_gather(p, s) ({ const float *p_ = (p); long s_ = (s); \
	(v16){ p_[0], p_[s_], p_[2 * s_], p_[3 * s_], p_[4 * s_], p_[5 * s_], p_[6 * s_], p_[7 * s_], \
	       p_[8 * s_], p_[9 * s_], p_[10 * s_], p_[11 * s_], p_[12 * s_], p_[13 * s_], p_[14 * s_], p_[15 * s_] }; })

/* Baseline: C fmaf (correctly rounded, exactly what the FMA instruction computes). */
#define S_FMA(a, b, c) fmaf((a), (b), (c))
#define v8_FMA(a, b, c) ({ v8 a_ = (a), b_ = (b), c_ = (c), r_; \
	for (int i_ = 0; i_ < 8; i_++) \
		r_[i_] = fmaf(a_[i_], b_[i_], c_[i_]); \
	r_; })
#define v16_FMA(a, b, c) ({ v16 a_ = (a), b_ = (b), c_ = (c), r_; \
	for (int i_ = 0; i_ < 16; i_++) \
		r_[i_] = fmaf(a_[i_], b_[i_], c_[i_]); \
	r_; })
#define KATTR
#define KFN(n) n##_generic
#define KW 8
#include "kern.inc"
#include "qkern.inc"
#undef KATTR
#undef KFN
#undef KW
#undef S_FMA
#undef v8_FMA
#undef v16_FMA

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_X86_BUILDS 1
#define S_FMA(a, b, c) __builtin_fmaf((a), (b), (c))
#define v8_FMA(a, b, c) ((v8)_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#define KATTR __attribute__((target("avx2,fma")))
#define KFN(n) n##_avx2
#define KW 8
#define NK_QVEC 2
#include "kern.inc"
#include "qkern.inc"
#undef KATTR
#undef KFN
#undef KW
#undef NK_QVEC

#define v16_FMA(a, b, c) ((v16)_mm512_fmadd_ps((__m512)(a), (__m512)(b), (__m512)(c)))
#define KATTR __attribute__((target("avx2,fma,avx512f,avx512vl,avx512bw,avx512dq")))
#define KFN(n) n##_avx512
#define KW 16
#define NK_QVEC 3
#include "kern.inc"
#include "qkern.inc"
#undef KATTR
#undef KFN
#undef NK_QVEC
#include "qvnni.inc"
#endif

static const nk_kernels generic = { "generic", dense_generic, conv2d_generic, depthwise_generic,
				     qdense_generic, qconv_generic, qdw_generic, pool_generic, qmaxpool_generic,
				     NULL, NULL, NULL, NULL };
#ifdef HAVE_X86_BUILDS
static const nk_kernels avx2 = { "avx2", dense_avx2, conv2d_avx2, depthwise_avx2,
				  qdense_avx2, qconv_avx2, qdw_avx2, pool_avx2, qmaxpool_avx2,
				     NULL, NULL, NULL, NULL };
static const nk_kernels avx512 = { "avx512", dense_avx512, conv2d_avx512, depthwise_avx512,
				    qdense_avx512, qconv_avx512, qdw_avx512, pool_avx512, qmaxpool_avx512,
				     NULL, NULL, NULL, NULL };
/* The AVX-512 build, its int8 ops pre-packed for VNNI. */
static const nk_kernels vnni = { "vnni", dense_avx512, conv2d_avx512, depthwise_avx512,
				  qdense_avx512, qconv_avx512, qdw_avx512, pool_avx512, qmaxpool_avx512,
				  qpack_vnni, qdense_pk_vnni, qdw_pk_vnni, qdw_maxpool_pk_vnni };
#endif

const char *fmt_nk_kernels_name(const nk_kernels *k)
{
	return k->name;
}

const nk_kernels *fmt_nk_kernels_generic(void)
{
	return &generic;
}

/* The widest build this CPU runs; NK_KERNELS=generic (portable), avx2 or avx512 caps it (tests
 * compare them; fmt/env.h). */
const nk_kernels *fmt_nk_kernels_get(void)
{
	const int force = fmt_env_level(FMT_ENV_NK_KERNELS);
	if (force == 0)
		return &generic;
#ifdef HAVE_X86_BUILDS
	__builtin_cpu_init();
	int has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	int has_avx512 = has_avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
			 __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
	int has_vnni = has_avx512 && __builtin_cpu_supports("avx512vnni");
	int cap_avx2 = force == 1, cap_avx512 = force == 2;
	if (has_vnni && !cap_avx2 && !cap_avx512) {
		vnni_has_vbmi = __builtin_cpu_supports("avx512vbmi");
		return &vnni;
	}
	if (has_avx512 && !cap_avx2)
		return &avx512;
	if (has_avx2)
		return &avx2;
#endif
	return &generic;
}
