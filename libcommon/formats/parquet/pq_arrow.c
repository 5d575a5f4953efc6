/* Arrow's schema beside Parquet's, as pyarrow keeps it (key/value ARROW:schema: the IPC Schema
 * message, Base64): the zone names of timestamp columns, which Parquet's isAdjustedToUTC only
 * says are instants, and the size of a fixed_size_list, which Parquet's LIST does not hold.
 * Written when a column has a zone other than UTC or is a fixed_size_list; read back over the
 * timestamps Parquet marks adjusted to UTC and the lists of the same element type. */
#include <stdlib.h>
#include <string.h>
#include "fmt/arrow.h"
#include "fmt/minisign.h"
#include "pq_internal.h"

static int named_zone(const fmt_field *f)
{
	return f->type == FMT_C_TIMESTAMP && f->timezone && strcmp(f->timezone, "UTC") != 0;
}

/* What Parquet alone does not say of f. */
static int needs_arrow(const fmt_field *f)
{
	return named_zone(f) || f->type == FMT_C_FIXED_SIZE_LIST;
}

/* A's list size over f, a list Parquet read whose size is not known yet, of the same element. */
static void take_list_size(fmt_field *f, const fmt_field *a)
{
	if (f->type == FMT_C_FIXED_SIZE_LIST && f->list_size == 0 && a->type == FMT_C_FIXED_SIZE_LIST &&
	    a->elem == f->elem && a->list_size >= 1 && a->list_size <= PQ_MAX_LIST)
		f->list_size = a->list_size;
}

fmt_kind fmt_pq_arrow_schema_value(const fmt_schema *s, char **out, fmt_err *e)
{
	fmt_schema fields;
	fmt_sb msg = { 0 };
	fmt_ipc_writer w;
	fmt_kind k = FMT_OK;
	size_t any = 0;
	*out = NULL;
	for (size_t i = 0; i < s->n_fields; i++)
		any += needs_arrow(&s->fields[i]);
	if (!any)
		return FMT_OK;
	fmt_schema_init(&fields); /* the columns alone: the metadata travels as key/values already */
	for (size_t i = 0; k == FMT_OK && i < s->n_fields; i++)
		k = fmt_schema_add_field(&fields, &s->fields[i], e);
	if (k == FMT_OK && (k = fmt_ipc_writer_begin(&w, &fields, 0, &msg, e)) == FMT_OK)
		fmt_ipc_writer_free(&w);
	if (k == FMT_OK && msg.oom)
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK) {
		size_t len = (msg.len + 2) / 3 * 4 + 1;
		if (!(*out = malloc(len)))
			k = fmt_fail(e, FMT_IO, "out of memory");
		else
			fmt_base64((const uint8_t *)msg.p, msg.len, *out, len);
	}
	fmt_sb_free(&msg);
	fmt_schema_free(&fields);
	return k;
}

/* The zones of the Arrow schema in text over s's instants; 0 when text is not one (then
 * nothing changes: the values are read as UTC, as without it). */
static int take_zones(fmt_schema *s, const char *text, fmt_err *e)
{
	size_t n = strlen(text), got, pre, head;
	uint8_t *bytes = malloc(n / 4 * 3 + 1);
	fmt_ipc_reader r;
	uint64_t body;
	int eos, ok = 0;
	if (!bytes || fmt_base64_decode(text, n, bytes, &got) != 0 ||
	    fmt_ipc_message_head(bytes, got, &pre, &head, &eos, e) != FMT_OK || eos || head > got ||
	    fmt_ipc_open_message(&r, bytes + pre, head - pre, &body, e) != FMT_OK) {
		free(bytes);
		return 0;
	}
	if (r.schema.n_fields == s->n_fields) {
		ok = 1;
		for (size_t i = 0; i < s->n_fields; i++) {
			fmt_field *f = &s->fields[i];
			const fmt_field *a = &r.schema.fields[i];
			if (strcmp(a->name, f->name) == 0)
				take_list_size(f, a);
			if (!named_zone(a) || f->type != FMT_C_TIMESTAMP || !f->timezone || strcmp(a->name, f->name) != 0)
				continue;
			char *zone = strdup(a->timezone);
			if (!zone)
				continue;
			free(f->timezone);
			f->timezone = zone;
		}
	}
	fmt_ipc_close(&r);
	free(bytes);
	return ok;
}

fmt_kind fmt_pq_arrow_schema_apply(fmt_schema *s, fmt_err *e)
{
	for (size_t i = 0; i < s->n_meta; i++) {
		if (strcmp(s->meta[i].key, FMT_PQ_ARROW_SCHEMA) != 0)
			continue;
		fmt_err ignored;
		take_zones(s, s->meta[i].value, &ignored);
		free(s->meta[i].key);
		free(s->meta[i].value);
		memmove(&s->meta[i], &s->meta[i + 1], (s->n_meta - i - 1) * sizeof *s->meta);
		s->n_meta--;
		break;
	}
	(void)e;
	return FMT_OK;
}
