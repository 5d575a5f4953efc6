/* MessagePack values as JSON, and the walk before msgpack-c (fmt/msgpack_json.h). */
#include <stdlib.h>
#include <string.h>
#include "fmt/msgpack_json.h"
#include "fmt/out.h"
#include "fmt/tree_budget.h"

#define STRICT_KEY_MAX 256

/* msgpack-c gives an empty string or binary a NULL pointer. */
static const char *mp_bytes(const char *p)
{
	return p ? p : "";
}

static json_t *mp_string(const char *p, uint32_t n, unsigned flags)
{
	return flags & FMT_MPJ_RAW_STRINGS ? json_stringn_nocheck(mp_bytes(p), n) : fmt_json_string(mp_bytes(p), n);
}

static json_t *mp_number(const msgpack_object *o, unsigned flags)
{
	switch (o->type) {
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		if ((flags & FMT_MPJ_BIG_AS_REAL) && o->via.u64 > INT64_MAX)
			return json_real((double)o->via.u64);
		return fmt_json_u64(o->via.u64);
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return json_integer((json_int_t)o->via.i64);
	default:   /* FLOAT32, FLOAT64 */
		return flags & FMT_MPJ_NONFINITE_TEXT ? fmt_json_double(o->via.f64) : json_real(o->via.f64);
	}
}

/* The key of kv as a C string (to free), or NULL. */
static char *mp_key(const msgpack_object *k, unsigned flags)
{
	if (k->type != MSGPACK_OBJECT_STR)
		return NULL;
	const char *p = mp_bytes(k->via.str.ptr);
	uint32_t n = k->via.str.size;
	if ((flags & FMT_MPJ_STRICT_KEYS) && (n >= STRICT_KEY_MAX || memchr(p, 0, n)))
		return NULL;
	return strndup(p, n);
}

static json_t *to_json(const msgpack_object *o, const fmt_mp_json_opts *opts, int depth)
{
	if (depth > opts->max_depth)
		return NULL;
	switch (o->type) {
	case MSGPACK_OBJECT_NIL: return json_null();
	case MSGPACK_OBJECT_BOOLEAN: return json_boolean(o->via.boolean);
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64: return mp_number(o, opts->flags);
	case MSGPACK_OBJECT_STR: return mp_string(o->via.str.ptr, o->via.str.size, opts->flags);
	case MSGPACK_OBJECT_BIN: return mp_string(o->via.bin.ptr, o->via.bin.size, opts->flags);
	case MSGPACK_OBJECT_ARRAY: {
		json_t *a = json_array();
		for (uint32_t i = 0; a && i < o->via.array.size; i++) {
			json_t *x = to_json(&o->via.array.ptr[i], opts, depth + 1);
			if (!x || json_array_append_new(a, x) != 0) {
				json_decref(a);
				return NULL;
			}
		}
		return a;
	}
	case MSGPACK_OBJECT_MAP: {
		json_t *m = json_object();
		for (uint32_t i = 0; m && i < o->via.map.size; i++) {
			const msgpack_object_kv *kv = &o->via.map.ptr[i];
			char *key = mp_key(&kv->key, opts->flags);
			json_t *x = key ? to_json(&kv->val, opts, depth + 1) : NULL;
			if (!x || json_object_set_new(m, key, x) != 0) {
				free(key);
				json_decref(m);
				return NULL;
			}
			free(key);
		}
		return m;
	}
	default:
		return NULL;
	}
}

json_t *fmt_mp_to_json(const msgpack_object *o, const fmt_mp_json_opts *opts)
{
	return to_json(o, opts, 0);
}

/* The walk keeps a count of the items still to come in each open container, no recursion. */
fmt_kind fmt_mp_check(const uint8_t *p, size_t n, const fmt_mp_check_opts *o, uint64_t *values, fmt_err *e)
{
	uint64_t left[FMT_MP_CHECK_DEPTH_MAX + 1] = { 1 };   /* items still to come in each open container */
	int depth = 0, max_depth = o->max_depth < FMT_MP_CHECK_DEPTH_MAX ? o->max_depth : FMT_MP_CHECK_DEPTH_MAX;
	size_t at = 0;
	*values = 0;
	while (depth >= 0) {
		if (left[depth] == 0) {
			depth--;
			continue;
		}
		if (at >= n)
			return fmt_fail(e, FMT_INVALID_FORMAT, "%s: truncated: the MessagePack value runs past "
					"its %zu bytes", o->what, n);
		size_t where = at;
		uint8_t b = p[at++];
		++*values;
		uint64_t skip = 0, items = 0, count = 0;
		size_t len_bytes = 0;
		const char *what = NULL;
		if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
			;
		else if (b >= 0x80 && b <= 0x8f)
			count = b & 0x0f, items = 2 * count, what = "a map";
		else if (b >= 0x90 && b <= 0x9f)
			count = items = b & 0x0f, what = "an array";
		else if (b >= 0xa0 && b <= 0xbf)
			count = skip = b & 0x1f, what = "a string";
		else if (b >= 0xcc && b <= 0xd3)
			skip = 1u << ((b - 0xcc) & 3), what = "a number";
		else if (b == 0xca || b == 0xcb)
			skip = b == 0xca ? 4 : 8, what = "a float";
		else if (b >= 0xd4 && b <= 0xd8)
			skip = 1 + (1u << (b - 0xd4)), count = skip - 1, what = "an extension";
		else if (b == 0xc4 || b == 0xd9 || b == 0xc7)
			len_bytes = 1;
		else if (b == 0xc5 || b == 0xda || b == 0xc8 || b == 0xdc || b == 0xde)
			len_bytes = 2;
		else if (b == 0xc6 || b == 0xdb || b == 0xc9 || b == 0xdd || b == 0xdf)
			len_bytes = 4;
		else
			return fmt_fail(e, FMT_INVALID_FORMAT, "%s: byte %zu (0x%02x) is not a MessagePack type",
					o->what, where, b);
		if (len_bytes) {
			what = b == 0xdc || b == 0xdd ? "an array" : b == 0xde || b == 0xdf ? "a map"
			     : b >= 0xd9 && b <= 0xdb ? "a string" : b >= 0xc4 && b <= 0xc6 ? "a binary" : "an extension";
			if (n - at < len_bytes)
				return fmt_fail(e, FMT_INVALID_FORMAT, "%s: the length of %s at byte %zu runs past "
						"its %zu bytes", o->what, what, where, n);
			for (size_t i = 0; i < len_bytes; i++)
				count = count << 8 | p[at + i];
			at += len_bytes;
			if (b == 0xdc || b == 0xdd)
				items = count;
			else if (b == 0xde || b == 0xdf)
				items = 2 * count;
			else
				skip = count + (b >= 0xc7 && b <= 0xc9);   /* an extension's type byte */
		}
		if (items > n - at)
			return fmt_fail(e, FMT_INVALID_FORMAT, "%s: %s at byte %zu claims %llu %s, only %zu byte%s "
					"follow%s", o->what, what, where, (unsigned long long)count, items == count ? "items" : "entries",
					n - at, n - at == 1 ? "" : "s", n - at == 1 ? "s" : "");
		if (skip > n - at)
			return fmt_fail(e, FMT_INVALID_FORMAT, "%s: %s at byte %zu needs %llu bytes, only %zu "
					"follow%s", o->what, what, where, (unsigned long long)skip, n - at, n - at == 1 ? "s" : "");
		at += (size_t)skip;
		left[depth]--;
		if (what && !strcmp(what, "a map"))
			*values += FMT_TREE_OBJECT_VALUES - 1;
		else if (what && !strcmp(what, "an array"))
			*values += FMT_TREE_ARRAY_VALUES - 1;
		if (items == 0)
			continue;
		if (depth == max_depth)
			return fmt_fail(e, FMT_INVALID_FORMAT, "%s: %s at byte %zu is nested more than %d deep",
					o->what, what, where, max_depth);
		left[++depth] = items;
	}
	if (o->whole && at != n)
		return fmt_fail(e, FMT_INVALID_FORMAT, "%s: %zu byte%s follow%s its MessagePack value", o->what, n - at,
				n - at == 1 ? "" : "s", n - at == 1 ? "s" : "");
	return FMT_OK;
}
