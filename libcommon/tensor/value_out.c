/* Metadata values as JSON and as text: what the tools print for a fmt_value, and what a JSON
 * value read from a file becomes. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/model.h"
#include "fmt/out.h"

json_t *fmt_json_value(const fmt_value *v, size_t max_items)
{
	switch (v->type) {
	case FMT_V_U8: case FMT_V_U16: case FMT_V_U32: case FMT_V_U64:
		return fmt_json_u64(v->v.u);
	case FMT_V_I8: case FMT_V_I16: case FMT_V_I32: case FMT_V_I64:
		return json_integer((json_int_t)v->v.i);
	case FMT_V_F32: case FMT_V_F64:
		return fmt_json_double(v->v.f);
	case FMT_V_BOOL:
		return json_boolean(v->v.b);
	case FMT_V_STR:
		return fmt_json_string(v->v.str.ptr, v->v.str.len);
	case FMT_V_ARRAY: {
		json_t *arr = json_array();
		uint64_t shown = v->v.arr.count;
		if (max_items && shown > max_items)
			shown = max_items;
		for (uint64_t i = 0; arr && i < shown; i++) {
			fmt_value item = fmt_array_item(v, i);
			if (json_array_append_new(arr, fmt_json_value(&item, max_items))) {
				json_decref(arr);
				return NULL;
			}
		}
		if (arr && shown < v->v.arr.count) {
			json_t *more = json_pack("{sI}", "truncated", (json_int_t)v->v.arr.count);
			if (json_array_append_new(arr, more)) {
				json_decref(arr);
				return NULL;
			}
		}
		return arr;
	}
	}
	return json_null();
}

int fmt_json_write_value(FILE *f, const fmt_value *v, size_t max_items)
{
	if (v->type != FMT_V_ARRAY) {
		json_t *j = fmt_json_value(v, max_items);
		int r = j ? fmt_json_write(f, j) : -1;
		json_decref(j);
		return r;
	}
	uint64_t shown = v->v.arr.count;
	if (max_items && shown > max_items)
		shown = max_items;
	int r = fputc('[', f) == EOF ? -1 : 0;
	for (uint64_t i = 0; r == 0 && i < shown; i++) {
		fmt_value item = fmt_array_item(v, i);
		if ((i && fputc(',', f) == EOF) || fmt_json_write_value(f, &item, max_items))
			r = -1;
	}
	if (r == 0 && shown < v->v.arr.count)
		r = fprintf(f, "%s{\"truncated\":%" PRIu64 "}", shown ? "," : "", v->v.arr.count) < 0 ? -1 : 0;
	return r == 0 && fputc(']', f) != EOF ? 0 : -1;
}

/* The one type of every item of v (an array) and of its nested arrays, if there is one. An
 * empty array of arrays has none: its items' type is not written anywhere. */
static int uniform_items(const fmt_value *v, fmt_vtype *t)
{
	if (v->v.arr.elem != FMT_V_ARRAY) {
		*t = v->v.arr.elem;
		return 1;
	}
	for (uint64_t i = 0; i < v->v.arr.count; i++) {
		fmt_vtype it;
		if (!uniform_items(&v->v.arr.items[i], &it) || (i && it != *t))
			return 0;
		*t = it;
	}
	return v->v.arr.count > 0;
}

int fmt_json_write_typed(FILE *f, const fmt_value *v)
{
	fmt_vtype t = v->type;
	if (v->type != FMT_V_ARRAY || uniform_items(v, &t))
		return fprintf(f, "{\"type\":\"%s\",\"value\":", fmt_vtype_name(t)) < 0 ||
		       fmt_json_write_value(f, v, 0) || fputc('}', f) == EOF ? -1 : 0;
	int r = fputs("{\"type\":\"array\",\"value\":[", f) == EOF ? -1 : 0;
	for (uint64_t i = 0; r == 0 && i < v->v.arr.count; i++)
		if ((i && fputc(',', f) == EOF) || fmt_json_write_typed(f, &v->v.arr.items[i]))
			r = -1;
	return r == 0 && fputs("]}", f) != EOF ? 0 : -1;
}

void fmt_out_value(FILE *f, const fmt_value *v, size_t max_items)
{
	switch (v->type) {
	case FMT_V_U8: case FMT_V_U16: case FMT_V_U32: case FMT_V_U64:
		fprintf(f, "%" PRIu64, v->v.u);
		break;
	case FMT_V_I8: case FMT_V_I16: case FMT_V_I32: case FMT_V_I64:
		fprintf(f, "%" PRId64, v->v.i);
		break;
	case FMT_V_F32:
		fprintf(f, "%.9g", v->v.f);
		break;
	case FMT_V_F64:
		fprintf(f, "%.17g", v->v.f);
		break;
	case FMT_V_BOOL:
		fputs(v->v.b ? "true" : "false", f);
		break;
	case FMT_V_STR:
		fmt_out_quoted(f, v->v.str.ptr, v->v.str.len);
		break;
	case FMT_V_ARRAY: {
		uint64_t shown = v->v.arr.count;
		if (max_items && shown > max_items)
			shown = max_items;
		fputc('[', f);
		for (uint64_t i = 0; i < shown; i++) {
			if (i)
				fputs(", ", f);
			fmt_value item = fmt_array_item(v, i);
			fmt_out_value(f, &item, max_items);
		}
		if (shown < v->v.arr.count)
			fprintf(f, ", ... (%" PRIu64 " items)", v->v.arr.count);
		fputc(']', f);
		break;
	}
	}
}

/* ---- JSON to values ---- */

#define FROM_JSON_MAX_DEPTH 16

static fmt_kind json_text_value(const json_t *j, int sort_keys, fmt_value *out, fmt_err *e)
{
	char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | (sort_keys ? JSON_SORT_KEYS : JSON_PRESERVE_ORDER));
	if (!text)
		return fmt_fail(e, FMT_IO, "out of memory");
	*out = fmt_value_str(text, strlen(text));
	free(text);
	return out->v.str.ptr ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
}

static fmt_kind value_from_json(const json_t *j, int sort_keys, int depth, fmt_value *out, fmt_err *e);

/* The kinds are looked at first, so that an array kept as text is never converted item by item. */
static fmt_kind array_from_json(const json_t *j, int sort_keys, int depth, fmt_value *out, fmt_err *e)
{
	size_t n = json_array_size(j);
	int ints = 0, reals = 0, strs = 0, bools = 0, arrays = 0, other = 0;
	for (size_t i = 0; i < n; i++) {
		const json_t *x = json_array_get(j, i);
		ints |= json_is_integer(x);
		reals |= json_is_real(x);
		strs |= json_is_string(x);
		bools |= json_is_boolean(x);
		arrays |= json_is_array(x);
		other |= json_is_object(x) || json_is_null(x);
	}
	if (other || (ints || reals) + strs + bools + arrays > 1 || depth >= FROM_JSON_MAX_DEPTH)
		return json_text_value(j, sort_keys, out, e);
	fmt_vtype elem = reals ? FMT_V_F64 : ints ? FMT_V_I64 : strs ? FMT_V_STR : bools ? FMT_V_BOOL
		       : arrays ? FMT_V_ARRAY : FMT_V_I64;
	fmt_value *items = calloc(n ? n : 1, sizeof *items);
	if (!items)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = FMT_OK;
	size_t made = 0;
	for (; made < n && k == FMT_OK; made++) {
		k = value_from_json(json_array_get(j, made), sort_keys, depth + 1, &items[made], e);
		if (k == FMT_OK && elem == FMT_V_F64 && items[made].type == FMT_V_I64) {
			items[made].v.f = (double)items[made].v.i;
			items[made].type = FMT_V_F64;
		}
	}
	if (k != FMT_OK) {
		for (size_t i = 0; i < made; i++)
			fmt_value_free(&items[i]);
		free(items);
		return k;
	}
	memset(out, 0, sizeof *out);
	out->type = FMT_V_ARRAY;
	out->v.arr.elem = elem;
	out->v.arr.count = n;
	out->v.arr.items = items;
	return FMT_OK;
}

static fmt_kind value_from_json(const json_t *j, int sort_keys, int depth, fmt_value *out, fmt_err *e)
{
	memset(out, 0, sizeof *out);
	switch (json_typeof(j)) {
	case JSON_STRING:
		*out = fmt_value_str(json_string_value(j), json_string_length(j));
		return out->v.str.ptr ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	case JSON_INTEGER:
		out->type = FMT_V_I64;
		out->v.i = (int64_t)json_integer_value(j);
		return FMT_OK;
	case JSON_REAL:
		out->type = FMT_V_F64;
		out->v.f = json_real_value(j);
		return FMT_OK;
	case JSON_TRUE:
	case JSON_FALSE:
		out->type = FMT_V_BOOL;
		out->v.b = json_is_true(j);
		return FMT_OK;
	case JSON_ARRAY:
		return array_from_json(j, sort_keys, depth, out, e);
	default:
		return json_text_value(j, sort_keys, out, e);
	}
}

fmt_kind fmt_value_from_json(const json_t *j, int sort_keys, fmt_value *out, fmt_err *e)
{
	return value_from_json(j, sort_keys, 0, out, e);
}
