/* MessagePack values as JSON (fmt/msgpack_json.h). */
#include <stdlib.h>
#include <string.h>
#include "fmt/msgpack_json.h"
#include "fmt/out.h"

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
