/* Field types by name (as Arrow names them), the unsupported check, and schema comparison. */
#include <stdio.h>
#include <string.h>
#include "fmt/table.h"

static const char *unit_name(fmt_time_unit u)
{
	static const char *names[] = { "s", "ms", "us", "ns" };
	return (unsigned)u <= FMT_TU_NS ? names[u] : "?";
}

void fmt_field_type_name(const fmt_field *f, char *buf, size_t n)
{
	switch (f->type) {
	case FMT_C_OTHER:
		snprintf(buf, n, "%s", f->type_name ? f->type_name : "other");
		break;
	case FMT_C_TIMESTAMP:
		if (f->timezone)
			snprintf(buf, n, "timestamp[%s, %s]", unit_name(f->unit), f->timezone);
		else
			snprintf(buf, n, "timestamp[%s]", unit_name(f->unit));
		break;
	case FMT_C_FIXED_SIZE_LIST:
		snprintf(buf, n, "fixed_size_list<%s>[%u]", fmt_ctype_name(f->elem), (unsigned)f->list_size);
		break;
	default:
		snprintf(buf, n, "%s", fmt_ctype_name(f->type));
	}
}

const fmt_field *fmt_schema_unsupported(const fmt_schema *s)
{
	for (size_t i = 0; i < s->n_fields; i++)
		if (s->fields[i].type == FMT_C_OTHER)
			return &s->fields[i];
	return NULL;
}

fmt_kind fmt_field_expect(const fmt_field *a, const fmt_field *b, fmt_err *e)
{
	char ta[256], tb[256];
	fmt_field_type_name(a, ta, sizeof ta);
	fmt_field_type_name(b, tb, sizeof tb);
	if (strcmp(ta, tb) != 0)
		return fmt_fail(e, FMT_SCHEMA, "field \"%s\" has type %s, expected %s", a->name, tb, ta);
	if (a->nullable != b->nullable)
		return fmt_fail(e, FMT_SCHEMA, "field \"%s\" is %snullable, expected %snullable",
				a->name, b->nullable ? "" : "not ", a->nullable ? "" : "not ");
	return FMT_OK;
}

fmt_kind fmt_schema_expect(const fmt_schema *want, const fmt_schema *got, fmt_err *e)
{
	if (want->n_fields != got->n_fields)
		return fmt_fail(e, FMT_SCHEMA, "schema has %zu fields, expected %zu", got->n_fields,
				want->n_fields);
	for (size_t i = 0; i < want->n_fields; i++) {
		const fmt_field *a = &want->fields[i], *b = &got->fields[i];
		if (strcmp(a->name, b->name) != 0)
			return fmt_fail(e, FMT_SCHEMA, "field %zu is named \"%s\", expected \"%s\"", i,
					b->name, a->name);
		fmt_kind k = fmt_field_expect(a, b, e);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}
