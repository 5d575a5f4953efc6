#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/out.h"

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 if it is not valid. */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		cp = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		cp = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

int fmt_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	while (n > 0) {
		size_t len = utf8_seq_len(p, n);
		if (len == 0)
			return 0;
		p += len;
		n -= len;
	}
	return 1;
}

void fmt_out_escaped(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	while (n > 0) {
		size_t len = utf8_seq_len(p, n);
		unsigned c = p[0];
		if (len == 0) {
			fprintf(f, "\\x%02x", c);
			len = 1;
		} else if (c == '\n') {
			fputs("\\n", f);
		} else if (c == '\t') {
			fputs("\\t", f);
		} else if (c == '\r') {
			fputs("\\r", f);
		} else if (c == '\\') {
			fputs("\\\\", f);
		} else if (c < 0x20 || c == 0x7F) {
			fprintf(f, "\\x%02x", c);
		} else if (len == 2 && c == 0xC2 && p[1] < 0xA0) {
			/* C1 control characters (U+0080..U+009F) move terminals too. */
			fprintf(f, "\\u%04x", (unsigned)p[1]);
		} else {
			fwrite(p, 1, len, f);
		}
		p += len;
		n -= len;
	}
}

json_t *fmt_json_string(const char *s, size_t n)
{
	if (fmt_utf8_valid(s, n))
		return json_stringn_nocheck(s, n);
	/* Each invalid byte becomes U+FFFD (3 bytes). */
	if (n > (SIZE_MAX - 1) / 3)
		return NULL;
	char *buf = malloc(n * 3 + 1);
	if (!buf)
		return NULL;
	const unsigned char *p = (const unsigned char *)s;
	size_t out = 0;
	while (n > 0) {
		size_t len = utf8_seq_len(p, n);
		if (len == 0) {
			memcpy(buf + out, "\xEF\xBF\xBD", 3);
			out += 3;
			len = 1;
		} else {
			memcpy(buf + out, p, len);
			out += len;
		}
		p += len;
		n -= len;
	}
	json_t *j = json_stringn_nocheck(buf, out);
	free(buf);
	return j;
}

json_t *fmt_json_u64(uint64_t v)
{
	char text[24];
	if (v <= (uint64_t)INT64_MAX)
		return json_integer((json_int_t)v);
	snprintf(text, sizeof text, "%" PRIu64, v);
	return json_string(text);
}

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

int fmt_json_line(FILE *f, json_t *obj)
{
	if (json_dumpf(obj, f, JSON_COMPACT | JSON_PRESERVE_ORDER) != 0)
		return -1;
	return fputc('\n', f) == EOF ? -1 : 0;
}

void fmt_report_error(FILE *f, const char *tool, const char *file, const fmt_err *e, int json)
{
	const char *where = e->file[0] ? e->file : file;
	fprintf(f, "%s: error: ", tool);
	if (where) {
		fmt_out_escaped(f, where, strlen(where));
		fputs(": ", f);
	}
	fmt_out_escaped(f, e->msg, strlen(e->msg));
	fputc('\n', f);
	if (!json)
		return;
	json_t *o = json_object();
	if (!o)
		return;
	json_object_set_new(o, "tool", json_string(tool));
	json_object_set_new(o, "file", where ? fmt_json_string(where, strlen(where)) : json_null());
	json_object_set_new(o, "error", json_string(fmt_kind_name(e->kind)));
	json_object_set_new(o, "exit", json_integer(fmt_kind_exit(e->kind)));
	json_object_set_new(o, "message", fmt_json_string(e->msg, strlen(e->msg)));
	fmt_json_line(f, o);
	json_decref(o);
}

int fmt_report_usage(FILE *f, const char *tool, const char *msg)
{
	fprintf(f, "%s: error: %s\nTry '%s --help'.\n", tool, msg, tool);
	return FMT_USAGE;
}

void fmt_report_warning(FILE *f, const char *tool, const char *format, ...)
{
	char msg[FMT_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, format);
	vsnprintf(msg, sizeof msg, format, ap);
	va_end(ap);
	fprintf(f, "%s: warning: ", tool);
	fmt_out_escaped(f, msg, strlen(msg));
	fputc('\n', f);
}

void fmt_format_bytes(char *buf, size_t n, uint64_t bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, n, "%.1f %s", v, units[u]);
}
