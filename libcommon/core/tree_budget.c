/* The memory budget of trees built from a file's bytes (fmt/tree_budget.h). */
#include <errno.h>
#include <string.h>
#include "fmt/tree_budget.h"
#include "fmt/checked.h"
#include "fmt/json_text.h"
#include "fmt/out.h"

uint64_t fmt_tree_max_values(size_t n, unsigned cost)
{
	uint64_t per = (uint64_t)n > (UINT64_MAX - FMT_TREE_BASE_BYTES) / FMT_TREE_BYTES_PER_BYTE
			       ? UINT64_MAX
			       : FMT_TREE_BASE_BYTES + FMT_TREE_BYTES_PER_BYTE * (uint64_t)n;
	return per / (cost ? cost : 1);
}

fmt_kind fmt_tree_check(const char *what, uint64_t values, size_t n, unsigned cost, fmt_err *e)
{
	uint64_t max = fmt_tree_max_values(n, cost);
	if (values <= max)
		return FMT_OK;
	return fmt_fail(e, FMT_INVALID_FORMAT, "%s holds more than %llu values, the most %zu bytes may hold "
			"(fmtkit(7), SAFETY)", what, (unsigned long long)max, n);
}

uint64_t fmt_json_values(const char *s, size_t n)
{
	uint64_t values = 1;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '"')
			i = fmt_json_string_end(s, n, i, 0, NULL);
		else
			values += c == '{' ? FMT_TREE_OBJECT_VALUES : c == '[' ? FMT_TREE_ARRAY_VALUES : c == ',' || c == ':';
	}
	return values;
}

fmt_kind fmt_json_budget(const char *what, const char *s, size_t n, unsigned cost, fmt_err *e)
{
	/* A byte adds at most FMT_TREE_OBJECT_VALUES (a '{'): a text that short is within the budget
	 * whatever it holds and is not scanned (a JSON Lines line each, most of them). */
	uint64_t most;
	if (!fmt_mul_u64((uint64_t)n, FMT_TREE_OBJECT_VALUES, &most) && most < fmt_tree_max_values(n, cost))
		return FMT_OK;
	return fmt_tree_check(what, fmt_json_values(s, n), n, cost, e);
}

int fmt_json_nomem(const json_error_t *je)
{
	/* the text first: jansson writes the code (text's last byte) only with a text, so the code
	 * of an error whose text is empty (lex_init's allocation failed) was never set. A string
	 * token whose copy could not be allocated is a syntax error to jansson ("string or '}'
	 * expected", "invalid token"): its allocator, when the CLI tracks it, says memory ran out. */
	return je->text[0] == '\0' || json_error_code(je) == json_error_out_of_memory || fmt_json_memory_failed();
}

json_t *fmt_json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *je)
{
	json_error_t mine;
	json_error_t *err = je ? je : &mine;
	unsigned long before = fmt_json_memory_failures();
	json_t *j = json_loadb(buffer, buflen, flags, err);
	if (fmt_json_memory_failures() == before)
		return j;
	json_decref(j);
	memset(err, 0, sizeof *err);
	errno = ENOMEM;
	return NULL;
}

fmt_kind fmt_fail_nomem(fmt_err *e, const char *what)
{
	return fmt_fail(e, FMT_IO, "out of memory reading %s", what);
}
