/* --set KEY[:TYPE]=VALUE and --set-from FILE.json: typed metadata from the command line. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "fmt/io.h"
#include "pipeline_internal.h"
#include "fmt/tree_budget.h"

static const struct { const char *name; fmt_vtype type; } type_names[] = {
	{ "u8", FMT_V_U8 }, { "i8", FMT_V_I8 }, { "u16", FMT_V_U16 }, { "i16", FMT_V_I16 },
	{ "u32", FMT_V_U32 }, { "i32", FMT_V_I32 }, { "u64", FMT_V_U64 }, { "i64", FMT_V_I64 },
	{ "f32", FMT_V_F32 }, { "f64", FMT_V_F64 }, { "bool", FMT_V_BOOL }, { "str", FMT_V_STR },
};

static int type_by_name(const char *s, size_t len, fmt_vtype *out)
{
	for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
		if (strlen(type_names[i].name) == len && memcmp(type_names[i].name, s, len) == 0) {
			*out = type_names[i].type;
			return 1;
		}
	return 0;
}

static int int_range(fmt_vtype t, int64_t *lo, uint64_t *hi)
{
	switch (t) {
	case FMT_V_U8: *lo = 0; *hi = UINT8_MAX; return 1;
	case FMT_V_U16: *lo = 0; *hi = UINT16_MAX; return 1;
	case FMT_V_U32: *lo = 0; *hi = UINT32_MAX; return 1;
	case FMT_V_U64: *lo = 0; *hi = UINT64_MAX; return 1;
	case FMT_V_I8: *lo = INT8_MIN; *hi = INT8_MAX; return 1;
	case FMT_V_I16: *lo = INT16_MIN; *hi = INT16_MAX; return 1;
	case FMT_V_I32: *lo = INT32_MIN; *hi = INT32_MAX; return 1;
	case FMT_V_I64: *lo = INT64_MIN; *hi = INT64_MAX; return 1;
	default: return 0;
	}
}

static int is_unsigned(fmt_vtype t)
{
	return t == FMT_V_U8 || t == FMT_V_U16 || t == FMT_V_U32 || t == FMT_V_U64;
}

/* Parse text as a value of type t; label names it in messages ("--set KEY", "--set-from KEY
 * item 3"). */
static fmt_kind parse_value(const char *label, const char *text, fmt_vtype t, fmt_value *v, fmt_err *e)
{
	int64_t lo;
	uint64_t hi;
	char *end;
	memset(v, 0, sizeof *v);
	v->type = t;
	errno = 0;
	/* strtoull and strtod skip blanks (and strtoull then accepts "-1" as 2^64-1). */
	if (t != FMT_V_STR && isspace((unsigned char)text[0]))
		return fmt_fail(e, FMT_USAGE, "%s: '%s' is not a valid %s", label, text, fmt_vtype_name(t));
	if (int_range(t, &lo, &hi)) {
		if (is_unsigned(t)) {
			if (text[0] == '-')
				errno = ERANGE;
			v->v.u = strtoull(text, &end, 0);
			if (!errno && v->v.u > hi)
				errno = ERANGE;
		} else {
			v->v.i = strtoll(text, &end, 0);
			if (!errno && (v->v.i < lo || (v->v.i > 0 && (uint64_t)v->v.i > hi)))
				errno = ERANGE;
		}
	} else if (t == FMT_V_F32 || t == FMT_V_F64) {
		v->v.f = strtod(text, &end);
		if (errno == ERANGE && v->v.f != 0 && fabs(v->v.f) < 1) /* a subnormal: exact enough */
			errno = 0;
		if (t == FMT_V_F32 && isfinite(v->v.f) && !isfinite((float)v->v.f))
			errno = ERANGE;
		if (t == FMT_V_F32)
			v->v.f = (double)(float)v->v.f;
	} else if (t == FMT_V_BOOL) {
		end = (char *)text + strlen(text);
		if (strcmp(text, "true") == 0 || strcmp(text, "1") == 0)
			v->v.b = 1;
		else if (strcmp(text, "false") != 0 && strcmp(text, "0") != 0)
			errno = EINVAL;
	} else {
		*v = fmt_value_str(text, strlen(text));
		return v->v.str.ptr ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	}
	if (errno || end == text || *end)
		return fmt_fail(e, FMT_USAGE, "%s: '%s' is not a valid %s", label, text, fmt_vtype_name(t));
	return FMT_OK;
}

/* An array of n items of type t, items zeroed (filled by the caller). */
static fmt_kind new_array(fmt_vtype t, size_t n, fmt_value *v, fmt_err *e)
{
	memset(v, 0, sizeof *v);
	v->type = FMT_V_ARRAY;
	v->v.arr.elem = t;
	if (n == 0)
		return FMT_OK;
	v->v.arr.items = calloc(n, sizeof(fmt_value));
	return v->v.arr.items ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
}

/* The next item of a --set KEY:TYPE[]=... list at *p: up to an unescaped comma, with "\,"
 * and "\\" unescaped; *p moves past the comma. NULL on out of memory. */
static char *next_list_item(const char **p)
{
	const char *s = *p;
	char *item = malloc(strlen(s) + 1), *o = item;
	if (!item)
		return NULL;
	for (; *s && *s != ','; s++)
		*o++ = s[0] == '\\' && (s[1] == ',' || s[1] == '\\') ? *++s : *s;
	*o = '\0';
	*p = *s ? s + 1 : s;
	return item;
}

static size_t list_items(const char *text)
{
	size_t n = *text ? 1 : 0;
	for (const char *s = text; *s; s++) {
		if (s[0] == '\\' && (s[1] == ',' || s[1] == '\\'))
			s++;
		else if (*s == ',')
			n++;
	}
	return n;
}

/* --set KEY:TYPE[]=v1,v2,...: an array of TYPE (empty text: an empty array). */
static fmt_kind parse_list(const char *key, const char *text, fmt_vtype t, fmt_value *v, fmt_err *e)
{
	size_t n = list_items(text);
	fmt_kind k = new_array(t, n, v, e);
	for (size_t i = 0; i < n && k == FMT_OK; i++) {
		char label[FMT_ERR_MSG_MAX / 2], *item = next_list_item(&text);
		snprintf(label, sizeof label, "--set %s item %zu", key, i);
		k = item ? parse_value(label, item, t, &v->v.arr.items[i], e) : fmt_fail(e, FMT_IO, "out of memory");
		v->v.arr.count = i + 1;
		free(item);
	}
	if (k != FMT_OK)
		fmt_value_free(v);
	return k;
}

/* The length of the key an --override-kv (to its '=') or a --set (to its '=' or ':') names. */
static size_t assigned_key_len(const char *assignment, int typed)
{
	const char *eq = strchr(assignment, '=');
	size_t n = eq ? (size_t)(eq - assignment) : strlen(assignment);
	const char *colon = typed ? memchr(assignment, ':', n) : NULL;
	return colon ? (size_t)(colon - assignment) : n;
}

static int overridden(const char *set, const char *const *overrides, size_t n_overrides)
{
	size_t n = assigned_key_len(set, 1);
	for (size_t i = 0; i < n_overrides; i++)
		if (assigned_key_len(overrides[i], 0) == n && memcmp(overrides[i], set, n) == 0)
			return 1;
	return 0;
}

fmt_kind fmt_setkv_reapply(fmt_model *m, const char *const *sets, size_t n_sets, const char *const *overrides,
			   size_t n_overrides, int strings_only, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	for (size_t i = 0; k == FMT_OK && i < n_sets; i++)
		if (!overridden(sets[i], overrides, n_overrides))
			k = fmt_setkv_apply(m, sets[i], strings_only, e);
	return k;
}

fmt_kind fmt_setkv_apply(fmt_model *m, const char *assignment, int strings_only, fmt_err *e)
{
	const char *eq = strchr(assignment, '=');
	if (!eq || eq == assignment)
		return fmt_fail(e, FMT_USAGE, "--set takes KEY=VALUE, KEY:TYPE=VALUE or KEY:TYPE[]=V1,V2,... (not '%s')",
				assignment);
	size_t key_len = (size_t)(eq - assignment);
	fmt_vtype t = FMT_V_STR;
	int list = 0;
	const char *colon = memchr(assignment, ':', key_len);
	if (colon) {
		size_t type_len = (size_t)(eq - colon - 1);
		list = type_len > 2 && memcmp(eq - 2, "[]", 2) == 0;
		if (!type_by_name(colon + 1, type_len - (list ? 2 : 0), &t))
			return fmt_fail(e, FMT_USAGE, "--set %.*s: unknown type (u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool str, "
					"TYPE[] for an array)", (int)key_len, assignment);
		key_len = (size_t)(colon - assignment);
	}
	if (strings_only && (t != FMT_V_STR || list))
		return fmt_fail(e, FMT_USAGE, "--set %.*s: safetensors metadata holds strings only", (int)key_len, assignment);
	char *key = strndup(assignment, key_len), label[FMT_ERR_MSG_MAX / 2];
	if (!key)
		return fmt_fail(e, FMT_IO, "out of memory");
	snprintf(label, sizeof label, "--set %s", key);
	fmt_value v;
	fmt_kind k = list ? parse_list(key, eq + 1, t, &v, e) : parse_value(label, eq + 1, t, &v, e);
	if (k == FMT_OK)
		k = fmt_model_put_meta(m, key, &v, e);
	fmt_value_free(&v);
	free(key);
	return k;
}

/* ---- --override-kv KEY=TYPE:VALUE (llama-quantize's; common.cpp string_parse_kv_override,
 * written by llama-quant.cpp as below) ---- */

#define OVERRIDE_KEY_MAX 127   /* llama_model_kv_override.key[128] */
#define OVERRIDE_STR_MAX 127   /* ... .val_str[128] */

/* int: llama-quantize reads it with atol and writes the absolute value as a u32, cut to 32
 * bits; here decimal digits whose value a u32 holds, nothing else (a sign, blanks, a
 * value beyond: refused rather than written otherwise). */
static fmt_kind override_int(const char *label, const char *text, fmt_value *v, fmt_err *e)
{
	size_t n = strspn(text, "0123456789");
	memset(v, 0, sizeof *v);
	v->type = FMT_V_U32;
	errno = 0;
	if (n > 0 && text[n] == '\0')
		v->v.u = strtoull(text, NULL, 10);
	if (n == 0 || text[n] != '\0' || errno || v->v.u > UINT32_MAX)
		return fmt_fail(e, FMT_USAGE, "%s: int takes a whole number from 0 to 4294967295 (written as u32, as "
				"llama-quantize does), not '%s'", label, text);
	return FMT_OK;
}

static fmt_kind override_value(const char *label, const char *spec, fmt_value *v, fmt_err *e)
{
	static const char *const types[] = { "int:", "float:", "bool:", "str:" };
	size_t t = 0;
	while (t < 4 && strncmp(spec, types[t], strlen(types[t])) != 0)
		t++;
	const char *text = t < 4 ? spec + strlen(types[t]) : spec;
	switch (t) {
	case 0:
		return override_int(label, text, v, e);
	case 1:
		return parse_value(label, text, FMT_V_F32, v, e);
	case 2:
		if (strcmp(text, "true") != 0 && strcmp(text, "false") != 0)
			return fmt_fail(e, FMT_USAGE, "%s: bool takes true or false, not '%s'", label, text);
		return parse_value(label, text, FMT_V_BOOL, v, e);
	case 3:
		if (strlen(text) > OVERRIDE_STR_MAX)
			return fmt_fail(e, FMT_USAGE, "%s: a str value holds at most %d bytes (llama-quantize's limit), "
					"not %zu", label, OVERRIDE_STR_MAX, strlen(text));
		return parse_value(label, text, FMT_V_STR, v, e);
	default:
		return fmt_fail(e, FMT_USAGE, "%s: the value must start with int:, float:, bool: or str: (not '%s')",
				label, spec);
	}
}

fmt_kind fmt_setkv_override(fmt_model *m, const char *assignment, int strings_only, fmt_err *e)
{
	const char *eq = strchr(assignment, '=');
	size_t key_len = eq ? (size_t)(eq - assignment) : 0;
	if (!eq || key_len == 0 || key_len > OVERRIDE_KEY_MAX)
		return fmt_fail(e, FMT_USAGE, "--override-kv takes KEY=TYPE:VALUE, KEY of 1 to %d bytes (not '%s')",
				OVERRIDE_KEY_MAX, assignment);
	char *key = strndup(assignment, key_len), label[FMT_ERR_MSG_MAX / 2];
	if (!key)
		return fmt_fail(e, FMT_IO, "out of memory");
	snprintf(label, sizeof label, "--override-kv %s", key);
	fmt_value v = { .type = FMT_V_U32 };
	fmt_kind k = override_value(label, eq + 1, &v, e);
	if (k == FMT_OK && strings_only && v.type != FMT_V_STR)
		k = fmt_fail(e, FMT_USAGE, "%s: safetensors metadata holds strings only", label);
	if (k == FMT_OK)   /* llama-quantize's gguf_set_val_*: the key last */
		k = fmt_model_put_meta_last(m, key, &v, e);
	fmt_value_free(&v);
	free(key);
	return k;
}

/* JSON -> value: strings, booleans, integers (u32 when 0..2^32-1 as llama.cpp's counts, i32
 * when negative and in range, else i64/u64), reals (f32), arrays of one kind, and the explicit
 * form {"type": T, "value": V}: V a scalar, or an array (nested arrays too) whose items are
 * all of type T; T "array" takes an array of such objects (arrays of arrays whose items differ). */
static fmt_kind json_to_value(const char *key, json_t *j, fmt_value *v, fmt_err *e);
static fmt_kind json_typed(const char *key, json_t *j, unsigned depth, fmt_value *v, fmt_err *e);

#define SET_FROM_MAX_DEPTH 16u

/* One scalar of type t from a JSON string, number or boolean; label names it. */
static fmt_kind typed_scalar(const char *label, json_t *val, fmt_vtype t, fmt_value *v, fmt_err *e)
{
	char text[64];
	memset(v, 0, sizeof *v);
	if (json_is_string(val) && t == FMT_V_STR) { /* its bytes, NUL included */
		*v = fmt_value_str(json_string_value(val), json_string_length(val));
		return v->v.str.ptr ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	}
	if (json_is_string(val))
		return parse_value(label, json_string_value(val), t, v, e);
	if (json_is_integer(val))
		snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, json_integer_value(val));
	else if (json_is_real(val))
		snprintf(text, sizeof text, "%.17g", json_real_value(val));
	else if (json_is_boolean(val))
		snprintf(text, sizeof text, "%s", json_is_true(val) ? "true" : "false");
	else
		return fmt_fail(e, FMT_USAGE, "%s: %s does not fit type %s", label,
				json_is_null(val) ? "null" : json_is_object(val) ? "an object" : "an array",
				fmt_vtype_name(t));
	return parse_value(label, text, t, v, e);
}

/* The JSON array arr as an array whose items (and the items of its nested arrays) are of
 * type t; t FMT_V_ARRAY: items are {"type", "value"} objects holding arrays. */
static fmt_kind typed_array(const char *key, json_t *arr, fmt_vtype t, unsigned depth, fmt_value *v, fmt_err *e)
{
	size_t n = json_array_size(arr);
	if (depth >= SET_FROM_MAX_DEPTH)
		return fmt_fail(e, FMT_USAGE, "--set-from %s: arrays nested more than %u levels deep", key, SET_FROM_MAX_DEPTH);
	fmt_kind k = new_array(t, n, v, e);
	for (size_t i = 0; i < n && k == FMT_OK; i++) {
		json_t *item = json_array_get(arr, i);
		fmt_value *out = &v->v.arr.items[i];
		char label[FMT_ERR_MSG_MAX / 2];
		snprintf(label, sizeof label, "--set-from %s item %zu", key, i);
		if (json_is_array(item) && t != FMT_V_ARRAY)
			k = typed_array(key, item, t, depth + 1, out, e);
		else if (json_is_object(item))
			k = json_typed(key, item, depth + 1, out, e);
		else if (t == FMT_V_ARRAY)
			k = fmt_fail(e, FMT_USAGE, "%s: type array takes {\"type\": T, \"value\": [...]} items", label);
		else
			k = typed_scalar(label, item, t, out, e);
		v->v.arr.count = i + 1;
		if (k == FMT_OK && i == 0) /* items of type t, or arrays (of items of type t) */
			v->v.arr.elem = out->type == FMT_V_ARRAY ? FMT_V_ARRAY : t;
		if (k == FMT_OK && out->type != v->v.arr.elem)
			k = fmt_fail(e, FMT_USAGE, "%s: %s in an array of %s (items must all have one type)", label,
				     fmt_vtype_name(out->type), fmt_vtype_name(v->v.arr.elem));
	}
	if (k != FMT_OK)
		fmt_value_free(v);
	return k;
}

static fmt_kind json_typed(const char *key, json_t *j, unsigned depth, fmt_value *v, fmt_err *e)
{
	const char *type = json_string_value(json_object_get(j, "type"));
	json_t *val = json_object_get(j, "value");
	fmt_vtype t;
	char label[FMT_ERR_MSG_MAX / 2];
	memset(v, 0, sizeof *v);
	if (!type || !val || json_object_size(j) != 2)
		return fmt_fail(e, FMT_USAGE, "--set-from %s: an object must be {\"type\": T, \"value\": V}", key);
	if (strcmp(type, "array") == 0)
		t = FMT_V_ARRAY;
	else if (!type_by_name(type, strlen(type), &t))
		return fmt_fail(e, FMT_USAGE, "--set-from %s: unknown type '%s' (u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 "
				"bool str array)", key, type);
	if (json_is_array(val))
		return typed_array(key, val, t, depth, v, e);
	snprintf(label, sizeof label, "--set-from %s", key);
	if (t == FMT_V_ARRAY)
		return fmt_fail(e, FMT_USAGE, "%s: type array takes a JSON array", label);
	return typed_scalar(label, val, t, v, e);
}

/* One type for every number of an array: f32 if any is a real, else the narrowest of u32, i32,
 * i64, u64 that holds them all. */
static fmt_vtype array_number_type(json_t *arr)
{
	size_t i;
	json_t *item;
	int any_real = 0, any_negative = 0, beyond_i32 = 0, beyond_u32 = 0;
	json_array_foreach(arr, i, item) {
		if (json_is_real(item)) {
			any_real = 1;
			continue;
		}
		json_int_t v = json_integer_value(item);
		any_negative |= v < 0;
		beyond_i32 |= v < INT32_MIN || v > INT32_MAX;
		beyond_u32 |= v > (json_int_t)UINT32_MAX;
	}
	if (any_real)
		return FMT_V_F32;
	if (!any_negative)
		return beyond_u32 ? FMT_V_I64 : FMT_V_U32;
	return beyond_i32 ? FMT_V_I64 : FMT_V_I32;
}

static fmt_kind json_number_as(json_t *j, fmt_vtype t, fmt_value *v)
{
	memset(v, 0, sizeof *v);
	v->type = t;
	if (t == FMT_V_F32)
		v->v.f = (double)(float)json_number_value(j);
	else if (t == FMT_V_U32)
		v->v.u = (uint64_t)json_integer_value(j);
	else
		v->v.i = json_integer_value(j);
	return FMT_OK;
}

static fmt_kind json_array_value(const char *key, json_t *j, fmt_value *v, fmt_err *e)
{
	size_t n = json_array_size(j);
	memset(v, 0, sizeof *v);
	v->type = FMT_V_ARRAY;
	v->v.arr.elem = FMT_V_STR;
	if (n == 0)
		return FMT_OK;
	int numbers = json_is_number(json_array_get(j, 0));
	fmt_vtype number_type = numbers ? array_number_type(j) : FMT_V_STR;
	v->v.arr.items = calloc(n, sizeof(fmt_value));
	if (!v->v.arr.items)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *item = json_array_get(j, i);
		fmt_kind k;
		if (json_is_array(item) != json_is_array(json_array_get(j, 0)))
			k = fmt_fail(e, FMT_USAGE, "--set-from %s: array items must all have one type", key);
		else if (json_is_array(item))
			k = json_array_value(key, item, &v->v.arr.items[i], e);
		else if (numbers != json_is_number(item))
			k = fmt_fail(e, FMT_USAGE, "--set-from %s: array items must all have one type", key);
		else if (numbers)
			k = json_number_as(item, number_type, &v->v.arr.items[i]);
		else
			k = json_to_value(key, item, &v->v.arr.items[i], e);
		v->v.arr.count = i + 1;
		if (k == FMT_OK && v->v.arr.items[i].type != v->v.arr.items[0].type)
			k = fmt_fail(e, FMT_USAGE, "--set-from %s: array items must all have one type", key);
		if (k != FMT_OK) {
			fmt_value_free(v);
			return k;
		}
	}
	v->v.arr.elem = v->v.arr.items[0].type;
	return FMT_OK;
}

static fmt_kind json_to_value(const char *key, json_t *j, fmt_value *v, fmt_err *e)
{
	memset(v, 0, sizeof *v);
	if (json_is_string(j)) {
		*v = fmt_value_str(json_string_value(j), json_string_length(j));
		return v->v.str.ptr ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	}
	if (json_is_boolean(j)) {
		v->type = FMT_V_BOOL;
		v->v.b = json_is_true(j);
		return FMT_OK;
	}
	if (json_is_integer(j)) {
		json_int_t i = json_integer_value(j);
		if (i >= 0 && i <= (json_int_t)UINT32_MAX) {
			v->type = FMT_V_U32;
			v->v.u = (uint64_t)i;
		} else {
			v->type = i < 0 && i >= INT32_MIN ? FMT_V_I32 : FMT_V_I64;
			v->v.i = i;
		}
		return FMT_OK;
	}
	if (json_is_real(j)) {
		v->type = FMT_V_F32;
		v->v.f = (double)(float)json_real_value(j);
		return FMT_OK;
	}
	if (json_is_array(j))
		return json_array_value(key, j, v, e);
	if (json_is_object(j))
		return json_typed(key, j, 0, v, e);
	return fmt_fail(e, FMT_USAGE, "--set-from %s: null is not a metadata value", key);
}

/* A line of fmt-inspect --json --full is read as its "metadata_typed" object: a member of that
 * name which is not itself {"type", "value"} cannot be a key's value. */
static json_t *record_keys(json_t *root)
{
	json_t *typed = json_object_get(root, "metadata_typed");
	if (json_is_object(typed) && !(json_object_size(typed) == 2 && json_object_get(typed, "type") &&
					json_object_get(typed, "value")))
		return typed;
	return root;
}

/* The members of keys as values (kv[0..*n), keys borrowed from the JSON; each[i] = &kv[i]). */
static fmt_kind values_of(json_t *keys, int strings_only, fmt_meta *kv, const fmt_meta **each, size_t *n, fmt_err *e)
{
	const char *key;
	json_t *val;
	json_object_foreach(keys, key, val) {
		fmt_value v;
		fmt_kind k = json_to_value(key, val, &v, e);
		if (k == FMT_OK && strings_only && v.type != FMT_V_STR) {
			fmt_value_free(&v);
			k = fmt_fail(e, FMT_USAGE, "--set-from %s: safetensors metadata holds strings only", key);
		}
		if (k != FMT_OK)
			return k;
		kv[*n] = (fmt_meta){ .key = (char *)key, .val = v };
		each[*n] = &kv[*n];
		(*n)++;
	}
	return FMT_OK;
}

fmt_kind fmt_setkv_apply_file(fmt_model *m, const char *path, int strings_only, fmt_err *e)
{
	char *text;
	size_t len;
	fmt_kind k = fmt_read_file(path, (size_t)64 << 20, &text, &len, e);
	if (k != FMT_OK)
		return k;
	json_error_t jerr;
	json_t *root = fmt_json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	free(text);
	if (!json_is_object(root)) {
		json_decref(root);
		return fmt_fail(e, FMT_USAGE, "--set-from %s: not a JSON object (%s, line %d)", path,
				root ? "another JSON value" : jerr.text, jerr.line);
	}
	json_t *keys = record_keys(root);
	size_t n = 0, most = json_object_size(keys);
	fmt_meta *kv = calloc(most ? most : 1, sizeof *kv);
	const fmt_meta **each = malloc((most ? most : 1) * sizeof *each);
	k = kv && each ? values_of(keys, strings_only, kv, each, &n, e) : fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)   /* at once: one at a time, each key was looked for among all */
		k = fmt_model_put_metas(m, each, n, e);
	for (size_t i = 0; i < n; i++)
		fmt_value_free(&kv[i].val);
	free(kv);
	free(each);
	json_decref(root);
	return k;
}
