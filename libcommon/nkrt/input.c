/* Where nk-run's input comes from: upstream's --input syntax, a file (raw little-endian float32
 * or int8, or a JSON array), --input-json, or a reproducible random tensor; and how an int8
 * model takes it (integers, or floats quantized with the model's input scale). */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/io.h"
#include "nkrt_internal.h"
#include "fmt/tree_budget.h"

#define MAX_INPUT_FILE (1u << 30)

static fmt_kind grow(double **vals, size_t *cap, size_t n, fmt_err *e)
{
	if (n < *cap)
		return FMT_OK;
	size_t c = *cap ? *cap * 2 : 256;
	double *v = realloc(*vals, c * sizeof *v);
	if (!v)
		return fmt_fail(e, FMT_IO, "out of memory");
	*vals = v;
	*cap = c;
	return FMT_OK;
}

/* One --input number: decimal (sign, digits, fraction, exponent) or inf, infinity, nan, as
 * upstream's Rust parse takes them; hexadecimal (strtof's 0x1p1), leading spaces, and a finite
 * number beyond float32's range (1e999, which strtof makes infinite) are UsageError. */
static fmt_kind parse_value(const char *token, float *v, fmt_err *e)
{
	char *end;
	const char *digits = token + (*token == '+' || *token == '-');
	errno = 0;
	*v = strtof(token, &end);
	if (end == token || *end || !(isdigit((unsigned char)*digits) || *digits == '.' || isalpha((unsigned char)*digits)))
		return fmt_fail(e, FMT_USAGE, "Invalid --input values: '%s' is not a number", token);
	if (strpbrk(token, "xX"))
		return fmt_fail(e, FMT_USAGE, "Invalid --input values: '%s' is not a decimal number (hexadecimal is "
				"not taken)", token);
	if (errno == ERANGE && isinf(*v))
		return fmt_fail(e, FMT_USAGE, "Invalid --input values: '%s' is beyond float32's range "
				"(largest 3.4028235e+38)", token);
	return FMT_OK;
}

/* §15.3: numbers separated by runs of ',' and ' '; 1..16384 of them (parse_value). */
fmt_kind fmt_nk_parse_value_list(const char *text, nk_values *out, fmt_err *e)
{
	size_t cap = 0;
	memset(out, 0, sizeof *out);
	const char *p = text;
	for (;;) {
		while (*p == ',' || *p == ' ')
			p++;
		if (!*p)
			break;
		size_t len = strcspn(p, ", ");
		char token[128];
		if (len >= sizeof token)
			return fmt_fail(e, FMT_USAGE, "Invalid --input values: %.40s...", p);
		memcpy(token, p, len);
		token[len] = '\0';
		float v = 0;
		fmt_kind pk = parse_value(token, &v, e);
		if (pk != FMT_OK)
			return pk;
		if (out->n >= NK_MAX_CASE_VALUES)
			return fmt_fail(e, FMT_USAGE, "Invalid --input values: more than %u numbers", NK_MAX_CASE_VALUES);
		fmt_kind k = grow(&out->v, &cap, out->n, e);
		if (k != FMT_OK)
			return k;
		out->v[out->n++] = v;
		p += len;
	}
	if (!out->n)
		return fmt_fail(e, FMT_USAGE, "Invalid --input values: no numbers");
	return FMT_OK;
}

/* A JSON array of numbers (nested arrays are flattened in order, so [[1,2],[3,4]] works). */
static fmt_kind flatten_json(json_t *j, nk_values *out, size_t *cap, int depth, fmt_err *e)
{
	if (depth > 8)
		return fmt_fail(e, FMT_INVALID_FORMAT, "JSON input nested deeper than 8 levels");
	if (json_is_number(j)) {
		fmt_kind k = grow(&out->v, cap, out->n, e);
		if (k == FMT_OK)
			out->v[out->n++] = json_number_value(j);
		return k;
	}
	if (!json_is_array(j))
		return fmt_fail(e, FMT_INVALID_FORMAT, "JSON input holds something other than numbers and arrays");
	size_t i;
	json_t *item;
	json_array_foreach(j, i, item) {
		fmt_kind k = flatten_json(item, out, cap, depth + 1, e);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

fmt_kind fmt_nk_values_from_json(json_t *j, nk_values *out, fmt_err *e)
{
	size_t cap = 0;
	memset(out, 0, sizeof *out);
	return flatten_json(j, out, &cap, 0, e);
}

fmt_kind fmt_nk_parse_value_json(const char *text, size_t len, nk_values *out, fmt_err *e)
{
	json_error_t je;
	size_t cap = 0;
	memset(out, 0, sizeof *out);
	json_t *j = fmt_json_loadb(text, len, JSON_DECODE_ANY, &je);
	if (!j)
		return fmt_fail(e, FMT_INVALID_FORMAT, "JSON input: %s (line %d)", je.text, je.line);
	fmt_kind k = json_is_array(j) ? flatten_json(j, out, &cap, 0, e)
				      : fmt_fail(e, FMT_INVALID_FORMAT, "JSON input must be an array of numbers");
	json_decref(j);
	return k;
}

int fmt_nk_looks_like_json(const uint8_t *b, size_t n)
{
	size_t i = 0, j = n;
	while (i < n && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t'))
		i++;
	while (j > i && (b[j - 1] == ' ' || b[j - 1] == '\n' || b[j - 1] == '\r' || b[j - 1] == '\t'))
		j--;
	return j > i && b[i] == '[' && b[j - 1] == ']';
}

/* A file (or "-"): raw values when its size is exactly count values of the model's input type,
 * otherwise a JSON array. */
fmt_kind fmt_nk_read_value_file(const char *path, const nk_model *nm, nk_values *out, fmt_err *e)
{
	char *text = NULL;
	size_t n = 0;
	memset(out, 0, sizeof *out);
	fmt_kind k = fmt_read_file(path, MAX_INPUT_FILE, &text, &n, e);
	if (k != FMT_OK)
		return k;
	const uint8_t *b = (const uint8_t *)text;
	size_t elem = nm->quantized ? 1 : 4;
	int raw_size = n == nm->input_count * elem;
	/* JSON first when it looks like JSON; raw bytes that merely look like it still work. */
	if (n && fmt_nk_looks_like_json(b, n) && (k = fmt_nk_parse_value_json(text, n, out, e)) == FMT_OK &&
	    (out->n == nm->input_count || !raw_size))
		;
	else if (raw_size) {
		fmt_nk_values_free(out);
		k = FMT_OK;
		if (!(out->v = malloc((n / elem ? n / elem : 1) * sizeof *out->v)))
			k = fmt_fail(e, FMT_IO, "out of memory");
		for (size_t i = 0; k == FMT_OK && i < n / elem; i++)
			out->v[i] = nm->quantized ? (double)(int8_t)b[i] : (double)fmt_nk_rd_f32(b + 4 * i);
		out->n = n / elem;
		out->raw = 1;
	} else if (k == FMT_OK) {
		k = fmt_fail(e, FMT_INVALID_FORMAT,
			     "%zu bytes: neither %llu raw %s values (%llu bytes) nor a JSON array", n,
			     (unsigned long long)nm->input_count, nm->quantized ? "int8" : "float32",
			     (unsigned long long)(nm->input_count * elem));
	}
	if (k != FMT_OK)
		fmt_err_file(e, path);
	free(text);
	return k;
}

/* splitmix64: the same stream on every machine. */
static uint64_t next_random(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Float models: uniform in [0, 1) with 24 random bits each; int8 models: uniform codes. */
fmt_kind fmt_nk_random_values(uint64_t seed, const nk_model *nm, nk_values *out, fmt_err *e)
{
	memset(out, 0, sizeof *out);
	if (!(out->v = malloc(nm->input_count * sizeof *out->v)))
		return fmt_fail(e, FMT_IO, "out of memory");
	uint64_t s = seed;
	for (uint64_t i = 0; i < nm->input_count; i++) {
		uint64_t r = next_random(&s);
		out->v[i] = nm->quantized ? (double)(int8_t)(r >> 56) : (double)(r >> 40) / 16777216.0;
	}
	out->n = nm->input_count;
	out->raw = 1;
	return FMT_OK;
}

/* The values as the model's input: float32, or int8 codes (integers in -128..127, or floats
 * quantized with the first op's scale and zero point when quantize is set). */
fmt_kind fmt_nk_values_to_input(const nk_values *v, const nk_model *nm, int quantize, void *dst, fmt_err *e)
{
	if (v->n != nm->input_count)
		return fmt_fail(e, FMT_USAGE, "Input has %zu values but model expects %llu", v->n,
				(unsigned long long)nm->input_count);
	if (!nm->quantized) {
		float *f = dst;
		for (size_t i = 0; i < v->n; i++)
			f[i] = (float)v->v[i];
		return FMT_OK;
	}
	int8_t *q = dst;
	float scale;
	int32_t zp;
	fmt_nk_input_quant(nm, &scale, &zp);
	for (size_t i = 0; i < v->n; i++) {
		double x = v->v[i];
		if (quantize && !v->raw) {
			/* Python's export rule: round half to even, then clamp. */
			double r = (double)nearbyintf((float)x / scale) + zp;
			if (isnan(r))
				return fmt_fail(e, FMT_USAGE, "input value %zu is NaN", i);
			q[i] = (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r);
		} else {
			if (!(x == floor(x)) || x < -128 || x > 127)
				return fmt_fail(e, FMT_USAGE,
						"input value %zu (%g) is not an int8 code; int8 models take integers "
						"-128..127, or floats with --quantize-input", i, x);
			q[i] = (int8_t)x;
		}
	}
	return FMT_OK;
}

void fmt_nk_values_free(nk_values *v)
{
	free(v->v);
	memset(v, 0, sizeof *v);
}
