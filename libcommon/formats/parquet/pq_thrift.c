/* The Thrift compact protocol, the part Parquet's footer and page headers use: field headers
 * with id deltas, zigzag varints, binaries, lists and nested structs (depth capped). */
#include "pq_internal.h"

#define TC_MAX_DEPTH 32

static int varint(tc_in *r, uint64_t *v)
{
	uint64_t x = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			return -1;
		uint8_t b = *r->p++;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

uint64_t fmt_pq_tc_left(const tc_in *r)
{
	return (uint64_t)(r->end - r->p) + r->after;
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

int fmt_pq_tc_field(tc_in *r, int16_t *last, int *type, int16_t *id)
{
	if (r->p >= r->end)
		return -1;
	uint8_t b = *r->p++;
	if (b == 0)
		return 0;
	*type = b & 0x0f;
	int delta = b >> 4;
	if (delta) {
		int v = *last + delta;
		if (v > INT16_MAX)
			return -1;
		*id = (int16_t)v;
	} else {
		uint64_t u;
		if (varint(r, &u))
			return -1;
		int64_t v = unzigzag(u);
		if (v < INT16_MIN || v > INT16_MAX)
			return -1;
		*id = (int16_t)v;
	}
	*last = *id;
	return 1;
}

int fmt_pq_tc_int(tc_in *r, int type, int64_t *v)
{
	if (type == TC_BYTE) {
		if (r->p >= r->end)
			return -1;
		*v = (int8_t)*r->p++;
		return 0;
	}
	if (type != TC_I16 && type != TC_I32 && type != TC_I64)
		return -1;
	uint64_t u;
	if (varint(r, &u))
		return -1;
	*v = unzigzag(u);
	return 0;
}

int fmt_pq_tc_i32(tc_in *r, int type, int32_t *v)
{
	int64_t x;
	if (fmt_pq_tc_int(r, type, &x) || x < INT32_MIN || x > INT32_MAX)
		return -1;
	*v = (int32_t)x;
	return 0;
}

int fmt_pq_tc_bool(tc_in *r, int type, int *v)
{
	(void)r;
	if (type != TC_TRUE && type != TC_FALSE)
		return -1;
	*v = type == TC_TRUE;
	return 0;
}

int fmt_pq_tc_binary(tc_in *r, int type, const uint8_t **p, uint32_t *n)
{
	uint64_t len;
	if (type != TC_BINARY || varint(r, &len) || len > (uint64_t)(r->end - r->p) || len > UINT32_MAX)
		return -1;
	*p = r->p;
	*n = (uint32_t)len;
	r->p += len;
	return 0;
}

int fmt_pq_tc_list(tc_in *r, int type, int *elem, uint32_t *n)
{
	if ((type != TC_LIST && type != TC_SET) || r->p >= r->end)
		return -1;
	uint8_t b = *r->p++;
	uint64_t size = b >> 4;
	if (size == 15 && varint(r, &size))
		return -1;
	*elem = b & 0x0f;
	/* every element takes at least one byte */
	if (size > fmt_pq_tc_left(r))
		return -1;
	*n = (uint32_t)size;
	return 0;
}

int fmt_pq_tc_enter(tc_in *r, int type)
{
	if (type != TC_STRUCT || r->depth >= TC_MAX_DEPTH)
		return -1;
	r->depth++;
	return 0;
}

void fmt_pq_tc_leave(tc_in *r)
{
	r->depth--;
}

static int skip_struct(tc_in *r)
{
	int16_t last = 0, id;
	int type, f;
	if (fmt_pq_tc_enter(r, TC_STRUCT))
		return -1;
	while ((f = fmt_pq_tc_field(r, &last, &type, &id)) == 1)
		if (fmt_pq_tc_skip(r, type))
			return -1;
	fmt_pq_tc_leave(r);
	return f;
}

/* An element of a list: a bool is a byte there. */
static int skip_elem(tc_in *r, int type)
{
	if (type == TC_TRUE || type == TC_FALSE) {
		if (r->p >= r->end)
			return -1;
		r->p++;
		return 0;
	}
	return fmt_pq_tc_skip(r, type);
}

int fmt_pq_tc_skip(tc_in *r, int type)
{
	int64_t v;
	const uint8_t *p;
	uint32_t n;
	int elem;
	switch (type) {
	case TC_TRUE: case TC_FALSE:
		return 0;
	case TC_BYTE: case TC_I16: case TC_I32: case TC_I64:
		return fmt_pq_tc_int(r, type, &v);
	case TC_DOUBLE:
		if (r->end - r->p < 8)
			return -1;
		r->p += 8;
		return 0;
	case TC_BINARY:
		return fmt_pq_tc_binary(r, type, &p, &n);
	case TC_LIST: case TC_SET:
		if (fmt_pq_tc_list(r, type, &elem, &n) || r->depth >= TC_MAX_DEPTH)
			return -1;
		r->depth++;
		for (uint32_t i = 0; i < n; i++)
			if (skip_elem(r, elem))
				return -1;
		r->depth--;
		return 0;
	case TC_MAP: {
		uint64_t size;
		if (varint(r, &size))
			return -1;
		if (size == 0)
			return 0;
		if (r->p >= r->end || size > fmt_pq_tc_left(r) || r->depth >= TC_MAX_DEPTH)
			return -1;
		uint8_t kv = *r->p++;
		r->depth++;
		for (uint64_t i = 0; i < size; i++)
			if (skip_elem(r, kv >> 4) || skip_elem(r, kv & 0x0f))
				return -1;
		r->depth--;
		return 0;
	}
	case TC_STRUCT:
		return skip_struct(r);
	default:
		return -1;
	}
}

/* ---- writing ---- */

void fmt_pq_tw_varint(fmt_sb *o, uint64_t v)
{
	char b[10];
	size_t n = 0;
	while (v >= 0x80) {
		b[n++] = (char)(v | 0x80);
		v >>= 7;
	}
	b[n++] = (char)v;
	fmt_sb_put(o, b, n);
}

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

void fmt_pq_tw_field(fmt_sb *o, int16_t *last, int16_t id, int type)
{
	int delta = id - *last;
	if (delta > 0 && delta <= 15) {
		char b = (char)(delta << 4 | type);
		fmt_sb_put(o, &b, 1);
	} else {
		char b = (char)type;
		fmt_sb_put(o, &b, 1);
		fmt_pq_tw_varint(o, zigzag(id));
	}
	*last = id;
}

void fmt_pq_tw_i64(fmt_sb *o, int16_t *last, int16_t id, int64_t v)
{
	fmt_pq_tw_field(o, last, id, TC_I64);
	fmt_pq_tw_varint(o, zigzag(v));
}

void fmt_pq_tw_i32(fmt_sb *o, int16_t *last, int16_t id, int32_t v)
{
	fmt_pq_tw_field(o, last, id, TC_I32);
	fmt_pq_tw_varint(o, zigzag(v));
}

void fmt_pq_tw_bin(fmt_sb *o, int16_t *last, int16_t id, const void *p, size_t n)
{
	fmt_pq_tw_field(o, last, id, TC_BINARY);
	fmt_pq_tw_varint(o, n);
	fmt_sb_put(o, p, n);
}

void fmt_pq_tw_bool(fmt_sb *o, int16_t *last, int16_t id, int v)
{
	fmt_pq_tw_field(o, last, id, v ? TC_TRUE : TC_FALSE);
}

void fmt_pq_tw_list(fmt_sb *o, int elem, uint32_t n)
{
	if (n < 15) {
		char b = (char)(n << 4 | (uint32_t)elem);
		fmt_sb_put(o, &b, 1);
	} else {
		char b = (char)(0xf0 | elem);
		fmt_sb_put(o, &b, 1);
		fmt_pq_tw_varint(o, n);
	}
}

void fmt_pq_tw_stop(fmt_sb *o)
{
	fmt_sb_put(o, "", 1);
}
