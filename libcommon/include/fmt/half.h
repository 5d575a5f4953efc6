/* Exact conversions between float32 and the 16-bit formats (specs/gguf.md §10), and float64
 * to binary16. */
#ifndef FMT_HALF_H
#define FMT_HALF_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>

/* The bits of a float32 and back, without aliasing rules getting in the way. */
static inline uint32_t fmt_f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static inline float fmt_bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* The same for a float64. */
static inline uint64_t fmt_f64_bits(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof u);
	return u;
}

static inline double fmt_bits_f64(uint64_t u)
{
	double d;
	memcpy(&d, &u, sizeof d);
	return d;
}

/* float32 -> binary16, round to nearest even; NaN -> 0x7E00 with the input's sign. */
uint16_t fmt_f32_to_f16(float f);
/* float64 -> binary16 by the same rule, rounded once from the double (not through a float32,
 * which rounds twice: 65519.999 would become 65520.0f, then Inf, instead of 65504). */
uint16_t fmt_f64_to_f16(double d);
/* Exact widening; a NaN keeps its sign and payload bit for bit (a signalling NaN stays
 * signalling: 0x7C01 -> 0x7F802000). */
float fmt_f16_to_f32(uint16_t h);
/* float32 -> bfloat16, round to nearest even; NaN keeps sign and top payload, quiet bit set. */
uint16_t fmt_f32_to_bf16(float f);
float fmt_bf16_to_f32(uint16_t h);

/* Row conversions; the f16 ones use F16C when the CPU has it, the bf16 ones SSE2 on x86-64;
 * all give exactly the bits of the scalar functions, NaN included, whatever the FPU rounding
 * mode. src and dst need no alignment beyond their element type's. */
void fmt_f32_to_f16_row(const float *src, uint16_t *dst, size_t n);
void fmt_f16_to_f32_row(const uint16_t *src, float *dst, size_t n);
void fmt_f32_to_bf16_row(const float *src, uint16_t *dst, size_t n);
void fmt_bf16_to_f32_row(const uint16_t *src, float *dst, size_t n);

/* The portable paths, for tests that compare them with the fast ones. */
void fmt_f32_to_f16_row_portable(const float *src, uint16_t *dst, size_t n);
void fmt_f16_to_f32_row_portable(const uint16_t *src, float *dst, size_t n);
int fmt_have_f16c(void);  /* F16C and OS-enabled AVX state (CPUID, asked once) */

#endif
