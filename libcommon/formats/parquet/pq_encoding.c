/* The RLE/bit-packed hybrid (levels, booleans, dictionary indices) and DELTA_BINARY_PACKED,
 * decoded with every read bounded by the bytes given; the hybrid's encoder for the writer. */
#include <string.h>
#include "pq_internal.h"

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (*p >= end)
			return -1;
		uint8_t b = *(*p)++;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* width bits (<= 64) at bit position bit of p, which holds at least (bit + width + 7) / 8 bytes. */
static inline uint64_t bits_at(const uint8_t *p, uint64_t bit, int width, size_t len)
{
	size_t byte = (size_t)(bit >> 3);
	unsigned off = (unsigned)(bit & 7);
	if (width <= 56 && byte + 8 <= len) {
		uint64_t w;
		memcpy(&w, p + byte, 8);
		w >>= off;
		return width == 0 ? 0 : w & (~0ull >> (64 - width));
	}
	uint64_t v = 0;
	for (int k = 0; k < width;) {
		unsigned take = 8 - off;
		if (take > (unsigned)(width - k))
			take = (unsigned)(width - k);
		v |= (uint64_t)((p[byte] >> off) & ((1u << take) - 1)) << k;
		k += (int)take;
		off += take;
		if (off == 8)
			off = 0, byte++;
	}
	return v;
}

/* Value i of out: a uint32 array, or a uint8 one when out8 (the values then fit width <= 8). */
static inline void put_value(void *out, int out8, size_t i, uint32_t v)
{
	if (out8)
		((uint8_t *)out)[i] = (uint8_t)v;
	else
		((uint32_t *)out)[i] = v;
}

void fmt_pq_rle_init(pq_rle *r, const uint8_t *p, size_t len, int width)
{
	memset(r, 0, sizeof *r);
	r->p = p;
	r->end = p + len;
	r->width = width;
}

/* The next run's header at r->p, and an RLE run's value or a bit-packed run's bytes. */
static int rle_run(pq_rle *r, int max_width)
{
	uint64_t h;
	if (r->width < 0 || r->width > max_width || varint(&r->p, r->end, &h))
		return -1;
	r->at = 0;
	if (h & 1) {
		uint64_t groups = h >> 1, bytes;
		if (groups > (uint64_t)(r->end - r->p) || (bytes = groups * (uint64_t)r->width) > (uint64_t)(r->end - r->p))
			return -1; /* groups * width fits: groups <= len */
		r->packed = 1;
		r->bits = r->p;
		r->bits_len = (size_t)bytes;
		r->left = groups * 8;
		r->p += bytes;
		return 0;
	}
	size_t vbytes = ((size_t)r->width + 7) / 8;
	if (vbytes > (size_t)(r->end - r->p))
		return -1;
	uint32_t v = 0;
	for (size_t i = 0; i < vbytes; i++)
		v |= (uint32_t)r->p[i] << (8 * i);
	r->p += vbytes;
	if (r->width < 32 && (v >> r->width))
		return -1;
	r->packed = 0;
	r->value = v;
	r->left = h >> 1;
	return 0;
}

static int rle_next(pq_rle *r, void *out, int out8, size_t n)
{
	size_t got = 0;
	while (got < n) {
		if (r->left == 0) {
			if (rle_run(r, out8 ? 8 : 32))
				return -1;
			continue;
		}
		size_t take = r->left < n - got ? (size_t)r->left : n - got;
		if (r->packed)
			for (size_t i = 0; i < take; i++)
				put_value(out, out8, got + i, (uint32_t)bits_at(r->bits, (r->at + i) * (uint64_t)r->width,
										 r->width, r->bits_len));
		else if (out8)
			memset((uint8_t *)out + got, (int)r->value, take);
		else
			for (size_t i = 0; i < take; i++)
				((uint32_t *)out)[got + i] = r->value;
		r->at += take;
		r->left -= take;
		got += take;
	}
	return 0;
}

int fmt_pq_rle_next8(pq_rle *r, uint8_t *out, size_t n)
{
	return rle_next(r, out, 1, n);
}

int fmt_pq_rle_next32(pq_rle *r, uint32_t *out, size_t n)
{
	return rle_next(r, out, 0, n);
}

int fmt_pq_rle_decode(const uint8_t *p, size_t len, int width, uint32_t *out, size_t n)
{
	pq_rle r;
	fmt_pq_rle_init(&r, p, len, width);
	return rle_next(&r, out, 0, n);
}

int fmt_pq_rle_decode8(const uint8_t *p, size_t len, int width, uint8_t *out, size_t n)
{
	pq_rle r;
	fmt_pq_rle_init(&r, p, len, width);
	return rle_next(&r, out, 1, n);
}

int fmt_pq_delta_decode(const uint8_t *p, size_t len, int is64, void *out, size_t n, size_t *used)
{
	const uint8_t *start = p, *end = p + len;
	uint64_t block, minis, count, first;
	if (varint(&p, end, &block) || varint(&p, end, &minis) || varint(&p, end, &count) || varint(&p, end, &first))
		return -1;
	if (block == 0 || block % 128 || minis == 0 || block % minis || (block / minis) % 32 || count != n ||
	    block > (1u << 20))
		return -1;
	uint64_t per_mini = block / minis;
	uint64_t v = (first >> 1) ^ -(first & 1);
	size_t got = 0;
	int max_width = is64 ? 64 : 32;
	if (n > 0) {
		if (is64)
			((uint64_t *)out)[0] = v;
		else
			((uint32_t *)out)[0] = (uint32_t)v;
		got = 1;
	}
	while (got < n) {
		uint64_t zz;
		if (varint(&p, end, &zz) || minis > (uint64_t)(end - p))
			return -1;
		uint64_t min_delta = (zz >> 1) ^ -(zz & 1);
		const uint8_t *widths = p;
		p += minis;
		for (uint64_t m = 0; m < minis && got < n; m++) {
			int w = widths[m];
			if (w > max_width)
				return -1;
			uint64_t full = per_mini * (uint64_t)w / 8;
			size_t take = per_mini < n - got ? (size_t)per_mini : n - got;
			uint64_t need = ((uint64_t)take * (uint64_t)w + 7) / 8;
			if (need > (uint64_t)(end - p))
				return -1;
			size_t avail = full < (uint64_t)(end - p) ? (size_t)full : (size_t)(end - p);
			for (size_t i = 0; i < take; i++) {
				v += min_delta + bits_at(p, (uint64_t)i * (uint64_t)w, w, avail);
				if (is64)
					((uint64_t *)out)[got + i] = v;
				else
					((uint32_t *)out)[got + i] = (uint32_t)v;
			}
			got += take;
			p += avail;
		}
	}
	*used = (size_t)(p - start);
	return 0;
}

int fmt_pq_bit_width(uint64_t max)
{
	int w = 0;
	while (max) {
		w++;
		max >>= 1;
	}
	return w;
}

/* ---- encoding ---- */

static void put_run(fmt_sb *o, uint32_t v, size_t count, int width)
{
	fmt_pq_tw_varint(o, (uint64_t)count << 1);
	for (int i = 0; i < (width + 7) / 8; i++) {
		char b = (char)(v >> (8 * i));
		fmt_sb_put(o, &b, 1);
	}
}

static void put_packed(fmt_sb *o, const uint32_t *v, size_t count, int width)
{
	size_t groups = (count + 7) / 8, bytes = groups * (size_t)width;
	fmt_pq_tw_varint(o, (uint64_t)groups << 1 | 1);
	uint8_t *dst = (uint8_t *)fmt_sb_reserve(o, bytes);
	if (!dst)
		return;
	memset(dst, 0, bytes);
	/* LSB first: the values' low width bits through a 64-bit window, whole bytes out */
	uint64_t acc = 0, mask = width >= 32 ? UINT32_MAX : ((uint64_t)1 << width) - 1;
	int held = 0;
	uint8_t *at = dst;
	for (size_t i = 0; i < count; i++) {
		acc |= ((uint64_t)v[i] & mask) << held;
		held += width;
		for (; held >= 8; held -= 8, acc >>= 8)
			*at++ = (uint8_t)acc;
	}
	if (held)
		*at = (uint8_t)acc;
	fmt_sb_commit(o, bytes);
}

void fmt_pq_rle_encode(fmt_sb *o, const uint32_t *v, size_t n, int width)
{
	size_t i = 0, packed_from = 0;
	while (i < n) {
		size_t run = 1;
		while (i + run < n && v[i + run] == v[i])
			run++;
		if (run >= 8) {
			if (i > packed_from)
				put_packed(o, v + packed_from, i - packed_from, width);
			put_run(o, v[i], run, width);
			i += run;
			packed_from = i;
		} else {
			/* whole groups of 8 stay packed together */
			i = i + 8 < n ? i + 8 : n;
		}
	}
	if (n > packed_from)
		put_packed(o, v + packed_from, n - packed_from, width);
}
