/* Metadata values as JSON and as text: what the tools print for a fmt_value. */
#include <inttypes.h>
#include <math.h>
#include "fmt/model.h"
#include "fmt/out.h"

static json_t *json_number(double d)
{
	/* JSON has no NaN or Inf: those become strings. */
	if (isnan(d))
		return json_string("nan");
	if (isinf(d))
		return json_string(d > 0 ? "inf" : "-inf");
	return json_real(d);
}

json_t *fmt_json_value(const fmt_value *v, size_t max_items)
{
	switch (v->type) {
	case FMT_V_U8: case FMT_V_U16: case FMT_V_U32: case FMT_V_U64:
		return fmt_json_u64(v->v.u);
	case FMT_V_I8: case FMT_V_I16: case FMT_V_I32: case FMT_V_I64:
		return json_integer((json_int_t)v->v.i);
	case FMT_V_F32: case FMT_V_F64:
		return json_number(v->v.f);
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
		fputc('"', f);
		fmt_out_escaped(f, v->v.str.ptr, v->v.str.len);
		fputc('"', f);
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
