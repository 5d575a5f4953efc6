/* Overflow-checked arithmetic for every size and offset read from a file. Each returns 0 on
 * success and 1 on overflow, leaving *out unspecified then. */
#ifndef FMT_CHECKED_H
#define FMT_CHECKED_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline int fmt_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_add_overflow(a, b, out);
}

static inline int fmt_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_mul_overflow(a, b, out);
}

/* a + b and a x b, UINT64_MAX when they overflow: for counts that only bound something (a
 * budget, a cost), where "too many" is the answer either way. */
static inline uint64_t fmt_sat_add_u64(uint64_t a, uint64_t b)
{
	uint64_t r;
	return fmt_add_u64(a, b, &r) ? UINT64_MAX : r;
}

static inline uint64_t fmt_sat_mul_u64(uint64_t a, uint64_t b)
{
	uint64_t r;
	return fmt_mul_u64(a, b, &r) ? UINT64_MAX : r;
}

/* Round x up to a multiple of align (a power of two). */
static inline int fmt_align_up_u64(uint64_t x, uint64_t align, uint64_t *out)
{
	uint64_t t;
	if (__builtin_add_overflow(x, align - 1, &t))
		return 1;
	*out = t & ~(align - 1);
	return 0;
}

/* Room for need elements of elem bytes in a grow-by-doubling array: arrayp is the address of
 * the array's pointer (a T **), *cap its capacity in elements, first the capacity of an empty
 * one. Doubles until need fits; the array is untouched on failure. 0 on success, 1 when the
 * size overflows or realloc fails. */
static inline int fmt_grow_array(void *arrayp, size_t *cap, size_t need, size_t elem, size_t first)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : first, bytes;
	while (c < need)
		if (__builtin_mul_overflow(c, 2, &c))
			return 1;
	if (__builtin_mul_overflow(c, elem, &bytes))
		return 1;
	void *old, *p;
	memcpy(&old, arrayp, sizeof old);
	if (!(p = realloc(old, bytes)))
		return 1;
	memcpy(arrayp, &p, sizeof p);
	*cap = c;
	return 0;
}

static inline uint16_t fmt_rd_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t fmt_rd_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t fmt_rd_u64(const uint8_t *p)
{
	return (uint64_t)fmt_rd_u32(p) | ((uint64_t)fmt_rd_u32(p + 4) << 32);
}
/* On a little-endian host one store (gcc -O2 leaves the byte loops as loops: a per-value
 * cost in the CSV and IPC writers). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline void fmt_wr_u16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void fmt_wr_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void fmt_wr_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
#else
static inline void fmt_wr_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void fmt_wr_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline void fmt_wr_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
#endif

/* Least common multiple of two non-zero block or alignment sizes (small: not overflow-checked). */
static inline uint64_t fmt_lcm_u64(uint64_t a, uint64_t b)
{
	uint64_t x = a, y = b;
	while (y) {
		uint64_t r = x % y;
		x = y;
		y = r;
	}
	return a / x * b;
}

#endif
