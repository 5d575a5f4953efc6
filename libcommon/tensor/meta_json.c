/* Model metadata as JSON text (fmt/meta_json.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/meta_json.h"
#include "fmt/out.h"

/* The shortest decimal that reads back as the same float (f32 values as f32), laid out as
 * serde_json (ryu) writes it: 10000.0, 1.5, 0.00001, 1e-6, 1e16. */
static void put_real_serde(fmt_sb *b, double v, int as_f32)
{
	char sci[48], digits[24], out[64];
	int p = 1;
	for (; p <= 17; p++) {
		snprintf(sci, sizeof sci, "%.*e", p - 1, v);
		if (as_f32 ? strtof(sci, NULL) == (float)v : strtod(sci, NULL) == v)
			break;
	}
	const char *s = sci;
	size_t n = 0, o = 0;
	if (*s == '-')
		out[o++] = *s++;
	for (; *s && *s != 'e'; s++)
		if (*s != '.' && n < sizeof digits - 1)
			digits[n++] = *s;
	while (n > 1 && digits[n - 1] == '0')
		n--;
	digits[n] = '\0';
	int kk = (*s == 'e' ? atoi(s + 1) : 0) + 1, k = kk - (int)n;
	if (v == 0)
		snprintf(out + o, sizeof out - o, "0.0");
	else if (k >= 0 && kk <= 16)
		snprintf(out + o, sizeof out - o, "%s%.*s.0", digits, k, "0000000000000000");
	else if (kk > 0 && kk <= 16)
		snprintf(out + o, sizeof out - o, "%.*s.%s", kk, digits, digits + kk);
	else if (kk > -5 && kk <= 0)
		snprintf(out + o, sizeof out - o, "0.%.*s%s", -kk, "00000", digits);
	else if (n == 1)
		snprintf(out + o, sizeof out - o, "%se%d", digits, kk - 1);
	else
		snprintf(out + o, sizeof out - o, "%c.%se%d", digits[0], digits + 1, kk - 1);
	fmt_sb_puts(b, out);
}

static void put_real_printf(fmt_sb *b, double v)
{
	char tmp[40];
	for (int p = 1; p <= 17; p++) {
		snprintf(tmp, sizeof tmp, "%.*g", p, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	fmt_sb_puts(b, tmp);
	if (!strpbrk(tmp, ".eE"))
		fmt_sb_puts(b, ".0");
}

static fmt_kind put_value(fmt_sb *b, const fmt_value *v, const char *key, unsigned flags,
			  const fmt_meta_json_style *s, int depth, fmt_err *e)
{
	switch (v->type) {
	case FMT_V_STR:
		if (memchr(v->v.str.ptr, 0, v->v.str.len) || !fmt_utf8_valid(v->v.str.ptr, v->v.str.len))
			return fmt_fail(e, FMT_UNSUPPORTED,
					"metadata '%.*s': a string with a NUL byte or invalid UTF-8 cannot be stored",
					s->key_shown, key);
		if (flags & FMT_META_JSON_RAW)
			fmt_sb_put(b, v->v.str.ptr, v->v.str.len);
		else
			fmt_sb_json_str(b, v->v.str.ptr, v->v.str.len);
		return FMT_OK;
	case FMT_V_U8: case FMT_V_U16: case FMT_V_U32: case FMT_V_U64:
		/* jansson, and so every reader of this toolkit, stops at 2^63-1 */
		if (v->v.u > INT64_MAX)
			return fmt_fail(e, FMT_UNSUPPORTED, "metadata '%.*s': %llu is above 2^63-1, which %s cannot hold",
					s->key_shown, key, (unsigned long long)v->v.u, s->readers);
		fmt_sb_u64(b, v->v.u);
		return FMT_OK;
	case FMT_V_I8: case FMT_V_I16: case FMT_V_I32: case FMT_V_I64:
		fmt_sb_i64(b, v->v.i);
		return FMT_OK;
	case FMT_V_F32: case FMT_V_F64:
		if (!isfinite(v->v.f))
			return fmt_fail(e, FMT_UNSUPPORTED, "metadata '%.*s': NaN and infinities cannot be stored in JSON",
					s->key_shown, key);
		if (s->reals == FMT_REAL_SERDE)
			put_real_serde(b, v->v.f, v->type == FMT_V_F32);
		else
			put_real_printf(b, v->v.f);
		return FMT_OK;
	case FMT_V_BOOL:
		fmt_sb_puts(b, v->v.b ? "true" : "false");
		return FMT_OK;
	case FMT_V_ARRAY:
		if (depth >= s->max_levels)
			return fmt_fail(e, FMT_UNSUPPORTED, "metadata '%.*s': arrays nested deeper than %d levels",
					s->key_shown, key, s->max_levels);
		fmt_sb_put(b, "[", 1);
		for (uint64_t i = 0; i < v->v.arr.count; i++) {
			if (i)
				fmt_sb_put(b, ",", 1);
			/* items of scalar arrays may be held packed (items NULL): read them one by one */
			fmt_value item = fmt_array_item(v, i);
			fmt_kind k = put_value(b, &item, key, 0, s, depth + 1, e);
			if (k != FMT_OK)
				return k;
		}
		fmt_sb_put(b, "]", 1);
		return FMT_OK;
	}
	return fmt_fail(e, FMT_INTERNAL, "metadata '%.*s': unknown value type", s->key_shown, key);
}

fmt_kind fmt_meta_json_member(fmt_sb *b, int *first, const char *key, const fmt_value *v, unsigned flags,
			      const fmt_meta_json_style *s, fmt_err *e)
{
	if (!fmt_utf8_valid(key, strlen(key)))
		return fmt_fail(e, FMT_UNSUPPORTED, "metadata key '%.*s' is not valid UTF-8", s->key_shown, key);
	if (!*first)
		fmt_sb_put(b, ",", 1);
	*first = 0;
	fmt_sb_json_str(b, key, strlen(key));
	fmt_sb_put(b, ":", 1);
	return put_value(b, v, key, flags, s, 0, e);
}
