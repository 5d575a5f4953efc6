/* The INPUTS and --labels files of fmt-convert --embed-tests (documented in fmt-convert(1)):
 * raw float32 inputs or a JSON array of cases; labels one integer per case. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/io.h"
#include "nkrt_internal.h"
#include "fmt/tree_budget.h"

/* 16 cases of at most 16384 float32 values are 1 MiB; JSON spells them longer. */
#define MAX_EMBED_FILE (64u << 20)

size_t fmt_nk_first_nonfinite(const double *values, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isfinite(values[i]) || fabs(values[i]) > FLT_MAX)
			return i;
	return n;
}

/* Every value a finite float32. */
static fmt_kind check_finite(const nk_embed_set *set, fmt_err *e)
{
	for (size_t c = 0; c < set->n; c++) {
		size_t bad = fmt_nk_first_nonfinite(set->cases[c].values, set->cases[c].n);
		if (bad < set->cases[c].n)
			return fmt_fail(e, FMT_INVALID_FORMAT, "case %zu: input value %zu (%g) is not a finite float32", c,
					bad, set->cases[c].values[bad]);
	}
	return FMT_OK;
}

void fmt_nk_embed_cases_free(nk_embed_set *set)
{
	free(set->cases);
	free(set->values);
	free(set->names);
	memset(set, 0, sizeof *set);
}

/* n cases of per values each, every label -1 and no names. */
static fmt_kind alloc_set(nk_embed_set *set, size_t n, size_t per, fmt_err *e)
{
	set->cases = calloc(n ? n : 1, sizeof *set->cases);
	set->values = malloc((n * per > 0 ? n * per : 1) * sizeof *set->values);
	set->names = malloc(n * 128 + 1);
	if (!set->cases || !set->values || !set->names)
		return fmt_fail(e, FMT_IO, "out of memory");
	set->n = n;
	for (size_t c = 0; c < n; c++)
		set->cases[c] = (nk_embed_case){ .label = -1, .values = set->values + c * per, .n = per };
	return FMT_OK;
}

/* n inputs, beyond 1..max: the count refused (test cases, or calibration inputs). */
static fmt_kind count_fail(size_t n, size_t max, const char *unit, fmt_err *e)
{
	if (max == NK_MAX_CASES)
		return fmt_fail(e, FMT_INVALID_FORMAT, "%zu %s: a .nk file holds 1 to %d test cases", n, unit, NK_MAX_CASES);
	return fmt_fail(e, FMT_INVALID_FORMAT, "%zu %s: the calibration takes 1 to %zu inputs", n, unit, max);
}

static fmt_kind read_raw(const uint8_t *b, size_t size, const nk_model *nm, size_t max, nk_embed_set *set,
			 fmt_err *e)
{
	uint64_t per = nm->input_count * 4;
	if (size == 0 || size % per)
		return fmt_fail(e, FMT_INVALID_FORMAT,
				"%zu bytes: neither whole inputs of %llu float32 values (%llu bytes each) nor a JSON array",
				size, (unsigned long long)nm->input_count, (unsigned long long)per);
	size_t n = (size_t)(size / per);
	if (n > max)
		return count_fail(n, max, "inputs", e);
	fmt_kind k = alloc_set(set, n, (size_t)nm->input_count, e);
	for (size_t i = 0; k == FMT_OK && i < n * nm->input_count; i++)
		set->values[i] = fmt_nk_rd_f32(b + 4 * i);
	return k;
}

/* Case c of a JSON array: an array of numbers, or {"input", "name", "label"}; its values
 * flattened into v. */
static fmt_kind json_case(json_t *item, size_t c, nk_values *v, nk_embed_case *kc, char *name_store, fmt_err *e)
{
	json_t *input = item;
	if (json_is_object(item)) {
		const char *key;
		json_t *val;
		json_object_foreach(item, key, val)
			if (strcmp(key, "input") && strcmp(key, "name") && strcmp(key, "label"))
				return fmt_fail(e, FMT_INVALID_FORMAT, "case %zu: unknown member \"%s\" (input, name, label)",
						c, key);
		input = json_object_get(item, "input");
		json_t *name = json_object_get(item, "name"), *label = json_object_get(item, "label");
		if (name) {
			size_t len = json_string_length(name);
			if (!json_is_string(name) || len < 1 || len > 127)
				return fmt_fail(e, FMT_INVALID_FORMAT, "case %zu: \"name\" must be a string of 1 to 127 bytes", c);
			memcpy(name_store, json_string_value(name), len);
			kc->name = name_store;
			kc->name_len = len;
		}
		if (label && (!json_is_integer(label) || json_integer_value(label) < -1 ||
			      json_integer_value(label) > INT32_MAX))
			return fmt_fail(e, FMT_INVALID_FORMAT, "case %zu: \"label\" must be an integer from -1", c);
		if (label)
			kc->label = (int32_t)json_integer_value(label);
	}
	if (!json_is_array(input))
		return fmt_fail(e, FMT_INVALID_FORMAT, "case %zu: an input is an array of numbers, or an object with one "
			       "(\"input\")", c);
	return fmt_nk_values_from_json(input, v, e);
}

static fmt_kind read_json(json_t *j, const nk_model *nm, size_t max, nk_embed_set *set, fmt_err *e)
{
	size_t n = json_array_size(j);
	fmt_kind k = FMT_OK;
	if (n < 1 || n > max)
		k = count_fail(n, max, "cases", e);
	if (k == FMT_OK)
		k = alloc_set(set, n, (size_t)nm->input_count, e);
	for (size_t c = 0; k == FMT_OK && c < n; c++) {
		nk_values v = { 0 };
		nk_embed_case *kc = &set->cases[c];
		k = json_case(json_array_get(j, c), c, &v, kc, set->names + c * 128, e);
		if (k == FMT_OK && v.n != nm->input_count)
			k = fmt_fail(e, FMT_INVALID_FORMAT, "case %zu has %zu input values, the network takes %llu", c, v.n,
				     (unsigned long long)nm->input_count);
		if (k == FMT_OK)
			memcpy((double *)kc->values, v.v, v.n * sizeof *v.v);
		fmt_nk_values_free(&v);
	}
	return k;
}

fmt_kind fmt_nk_read_inputs(const char *path, const nk_model *nm, size_t max, nk_embed_set *set, fmt_err *e)
{
	char *text = NULL;
	size_t n = 0;
	memset(set, 0, sizeof *set);
	fmt_kind k = fmt_read_file(path, MAX_EMBED_FILE, &text, &n, e);
	if (k != FMT_OK)
		return k;
	const uint8_t *b = (const uint8_t *)text;
	/* JSON when it parses as such; raw floats that merely look like it still work */
	json_error_t je;
	json_t *j = fmt_nk_looks_like_json(b, n) ? fmt_json_loadb(text, n, JSON_REJECT_DUPLICATES, &je) : NULL;
	if (j)
		k = read_json(j, nm, max, set, e);
	else if (fmt_nk_looks_like_json(b, n) && fmt_json_nomem(&je))
		k = fmt_fail_nomem(e, path);
	else if (fmt_nk_looks_like_json(b, n) && n % (nm->input_count * 4))
		k = fmt_fail(e, FMT_INVALID_FORMAT, "JSON: %s (line %d)", je.text, je.line);
	else
		k = read_raw(b, n, nm, max, set, e);
	json_decref(j);
	if (k == FMT_OK)
		k = check_finite(set, e);
	free(text);
	if (k != FMT_OK) {
		fmt_nk_embed_cases_free(set);
		fmt_err_file(e, path);
	}
	return k;
}

fmt_kind fmt_nk_read_embed_inputs(const char *path, const nk_model *nm, nk_embed_set *set, fmt_err *e)
{
	return fmt_nk_read_inputs(path, nm, NK_MAX_CASES, set, e);
}

/* Integers separated by white space or commas, or a JSON array of them, into v. */
static fmt_kind parse_labels(const char *text, size_t n, nk_values *v, fmt_err *e)
{
	if (fmt_nk_looks_like_json((const uint8_t *)text, n))
		return fmt_nk_parse_value_json(text, n, v, e);
	memset(v, 0, sizeof *v);
	if (strlen(text) != n)
		return fmt_fail(e, FMT_INVALID_FORMAT, "labels: a NUL byte in the text");
	if (!(v->v = malloc((n / 2 + 1) * sizeof *v->v)))
		return fmt_fail(e, FMT_IO, "out of memory");
	for (const char *p = text;;) {
		p += strspn(p, " \t\r\n,");
		if (!*p)
			return FMT_OK;
		char *end;
		errno = 0;
		long x = strtol(p, &end, 10);
		if (end == p || errno || !strchr(" \t\r\n,", *end))
			return fmt_fail(e, FMT_INVALID_FORMAT, "labels: \"%.*s\" is not an integer",
					(int)(strcspn(p, " \t\r\n,") < 20 ? strcspn(p, " \t\r\n,") : 20), p);
		v->v[v->n++] = (double)x;
		p = end;
	}
}

fmt_kind fmt_nk_read_embed_labels(const char *path, nk_embed_set *set, fmt_err *e)
{
	char *text = NULL;
	size_t n = 0;
	nk_values v = { 0 };
	fmt_kind k = fmt_read_file(path, 1u << 20, &text, &n, e);
	if (k != FMT_OK)
		return k;
	k = parse_labels(text, n, &v, e);
	for (size_t i = 0; k == FMT_OK && i < v.n; i++)
		if (v.v[i] != (double)(int32_t)v.v[i] || v.v[i] < -1)
			k = fmt_fail(e, FMT_INVALID_FORMAT, "label %zu (%g) is not an integer from -1", i, v.v[i]);
	if (k == FMT_OK && v.n != set->n)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "%zu label%s for %zu test case%s", v.n, v.n == 1 ? "" : "s",
				     set->n, set->n == 1 ? "" : "s");
	for (size_t i = 0; k == FMT_OK && i < v.n; i++)
		set->cases[i].label = (int32_t)v.v[i];
	if (k != FMT_OK)
		fmt_err_file(e, path);
	fmt_nk_values_free(&v);
	free(text);
	return k;
}
