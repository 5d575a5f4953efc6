/* The buyers registry fmt-watermark embed --registry appends to: JSON Lines, one object per
 * marked copy, {"buyer": ID, "buyer_hash": 64 hex digits, ...}. Read back to name the buyer
 * whose hash an extraction recovered. */
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "fmt/watermark.h"
#include "fmt/tree_budget.h"

#define LINE_MAX_BYTES 65536

static int is_hex64(const char *s)
{
	if (strlen(s) != 64)
		return 0;
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}

/* One registry line: its buyer and buyer_hash, checked; *o holds them (json_decref it). */
static fmt_kind parse_line(const char *line, size_t len, size_t line_no, json_t **o, const char **id,
			   const char **hash, fmt_err *e)
{
	json_error_t je;
	*id = *hash = NULL;
	if (len > LINE_MAX_BYTES)
		return fmt_fail(e, FMT_INVALID_FORMAT, "registry line %zu is longer than %u bytes", line_no,
				LINE_MAX_BYTES);
	*o = fmt_json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (*o && json_is_object(*o)) {
		*id = json_string_value(json_object_get(*o, "buyer"));
		*hash = json_string_value(json_object_get(*o, "buyer_hash"));
	}
	if (!*id || !*hash || !is_hex64(*hash))
		return fmt_fail(e, FMT_INVALID_FORMAT, "registry line %zu is not {\"buyer\": ID, \"buyer_hash\": "
				"64 hex digits, ...}", line_no);
	return FMT_OK;
}

fmt_kind fmt_wm_registry_find(const char *text, size_t n, const char *prefix, char **buyer, fmt_err *e)
{
	size_t plen = strlen(prefix), line_no = 0;
	fmt_kind k = FMT_OK;
	*buyer = NULL;
	for (size_t at = 0; at < n && k == FMT_OK;) {
		const char *nl = memchr(text + at, '\n', n - at);
		size_t len = nl ? (size_t)(nl - (text + at)) : n - at;
		const char *line = text + at;
		at += len + (nl != NULL);
		line_no++;
		if (len == 0 || (len == 1 && line[0] == '\r'))
			continue;
		json_t *o = NULL;
		const char *id, *hash;
		k = parse_line(line, len, line_no, &o, &id, &hash, e);
		if (k == FMT_OK && !*buyer && plen <= 64 && strncmp(hash, prefix, plen) == 0 && !(*buyer = strdup(id)))
			k = fmt_fail(e, FMT_IO, "out of memory");
		json_decref(o);
	}
	if (k != FMT_OK) {   /* a buyer found before a bad line is not handed out */
		free(*buyer);
		*buyer = NULL;
	}
	return k;
}
