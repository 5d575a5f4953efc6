/* Arrow types, schemas and columns: names, widths, copies, comparison. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/arrow.h"
#include "fmt/checked.h"

static const struct { fmt_atype t; const char *name; size_t width; } types[] = {
	{ FMT_AT_BOOL, "bool", 0 },
	{ FMT_AT_INT8, "int8", 1 }, { FMT_AT_INT16, "int16", 2 },
	{ FMT_AT_INT32, "int32", 4 }, { FMT_AT_INT64, "int64", 8 },
	{ FMT_AT_UINT8, "uint8", 1 }, { FMT_AT_UINT16, "uint16", 2 },
	{ FMT_AT_UINT32, "uint32", 4 }, { FMT_AT_UINT64, "uint64", 8 },
	{ FMT_AT_FLOAT16, "float16", 2 }, { FMT_AT_FLOAT32, "float32", 4 },
	{ FMT_AT_FLOAT64, "float64", 8 },
	{ FMT_AT_UTF8, "utf8", 0 }, { FMT_AT_LARGE_UTF8, "large_utf8", 0 },
	{ FMT_AT_BINARY, "binary", 0 },
	{ FMT_AT_DATE32, "date32", 4 },
	{ FMT_AT_TIMESTAMP, "timestamp", 8 },
	{ FMT_AT_FIXED_SIZE_LIST, "fixed_size_list", 0 },
};

size_t fmt_atype_width(fmt_atype t)
{
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (types[i].t == t)
			return types[i].width;
	return 0;
}

const char *fmt_atype_name(fmt_atype t)
{
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (types[i].t == t)
			return types[i].name;
	return "unsupported";
}

fmt_atype fmt_atype_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (strcmp(types[i].name, name) == 0)
			return types[i].t;
	return FMT_AT_UNSUPPORTED;
}

int fmt_atype_is_integer(fmt_atype t)
{
	return t >= FMT_AT_INT8 && t <= FMT_AT_UINT64;
}

int fmt_atype_is_float(fmt_atype t)
{
	return t >= FMT_AT_FLOAT16 && t <= FMT_AT_FLOAT64;
}

static const char *unit_name(uint8_t unit)
{
	static const char *names[] = { "s", "ms", "us", "ns" };
	return unit < 4 ? names[unit] : "?";
}

int fmt_field_set_type_name(fmt_field *f)
{
	char buf[512];
	switch (f->type) {
	case FMT_AT_UNSUPPORTED:
		return f->type_name ? 0 : -1;
	case FMT_AT_TIMESTAMP:
		if (f->timezone)
			snprintf(buf, sizeof buf, "timestamp[%s, %.400s]", unit_name(f->unit), f->timezone);
		else
			snprintf(buf, sizeof buf, "timestamp[%s]", unit_name(f->unit));
		break;
	case FMT_AT_FIXED_SIZE_LIST:
		snprintf(buf, sizeof buf, "fixed_size_list<%s>[%d]", fmt_atype_name(f->item_type),
			 (int)f->list_size);
		break;
	default:
		snprintf(buf, sizeof buf, "%s", fmt_atype_name(f->type));
	}
	free(f->type_name);
	f->type_name = strdup(buf);
	return f->type_name ? 0 : -1;
}

void fmt_schema_free(fmt_schema *s)
{
	for (size_t i = 0; i < s->n_fields; i++) {
		free(s->fields[i].name);
		free(s->fields[i].timezone);
		free(s->fields[i].item_name);
		free(s->fields[i].type_name);
	}
	free(s->fields);
	s->fields = NULL;
	s->n_fields = 0;
}

static int dup_opt(char **dst, const char *src)
{
	*dst = NULL;
	if (!src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : -1;
}

int fmt_schema_copy(fmt_schema *dst, const fmt_schema *src)
{
	dst->n_fields = 0;
	dst->fields = calloc(src->n_fields ? src->n_fields : 1, sizeof *dst->fields);
	if (!dst->fields)
		return -1;
	for (size_t i = 0; i < src->n_fields; i++) {
		const fmt_field *f = &src->fields[i];
		fmt_field *g = &dst->fields[i];
		*g = *f;
		g->name = g->timezone = g->item_name = g->type_name = NULL;
		dst->n_fields++;
		if (dup_opt(&g->name, f->name) || dup_opt(&g->timezone, f->timezone) ||
		    dup_opt(&g->item_name, f->item_name) || dup_opt(&g->type_name, f->type_name)) {
			fmt_schema_free(dst);
			return -1;
		}
	}
	return 0;
}

const fmt_field *fmt_schema_unsupported(const fmt_schema *s)
{
	for (size_t i = 0; i < s->n_fields; i++)
		if (s->fields[i].type == FMT_AT_UNSUPPORTED)
			return &s->fields[i];
	return NULL;
}

static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

fmt_kind fmt_schema_expect(const fmt_schema *want, const fmt_schema *got, fmt_err *e)
{
	if (want->n_fields != got->n_fields)
		return fmt_fail(e, FMT_SCHEMA, "schema has %zu fields, expected %zu", got->n_fields,
				want->n_fields);
	for (size_t i = 0; i < want->n_fields; i++) {
		const fmt_field *a = &want->fields[i], *b = &got->fields[i];
		if (!same_str(a->name, b->name))
			return fmt_fail(e, FMT_SCHEMA, "field %zu is named \"%s\", expected \"%s\"", i,
					b->name, a->name);
		if (!same_str(a->type_name, b->type_name) || a->type != b->type)
			return fmt_fail(e, FMT_SCHEMA, "field \"%s\" has type %s, expected %s", a->name,
					b->type_name, a->type_name);
		if (a->nullable != b->nullable)
			return fmt_fail(e, FMT_SCHEMA, "field \"%s\" is %snullable, expected %snullable",
					a->name, b->nullable ? "" : "not ", a->nullable ? "" : "not ");
	}
	return FMT_OK;
}

void fmt_batch_free(fmt_batch *b)
{
	free(b->cols);
	b->cols = NULL;
	b->n_cols = 0;
	b->num_rows = 0;
}

void fmt_column_bytes(const fmt_column *c, fmt_atype t, uint64_t i, const uint8_t **p, uint64_t *n)
{
	uint64_t a, z;
	if (t == FMT_AT_LARGE_UTF8) {
		a = fmt_rd_u64(c->offsets.p + 8 * i);
		z = fmt_rd_u64(c->offsets.p + 8 * (i + 1));
	} else {
		a = fmt_rd_u32(c->offsets.p + 4 * i);
		z = fmt_rd_u32(c->offsets.p + 4 * (i + 1));
	}
	*p = c->values.p + a;
	*n = z - a;
}
