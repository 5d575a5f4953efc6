/* A table format as a newcomer adds one: this file is the whole driver. The unit tests register
 * it at run time (test_table.c); tests/cli/new-format.bats copies it into a copy of the tree as
 * libcommon/formats/ttab/ttab.c, adds its one registry line, and drives the tools with it.
 *
 * The "ttab" format: a magic line "#ttab", a line of name:type[?] columns (types int64, utf8,
 * bool; ? = nullable) and comma-separated rows (an empty field is null), read in batches of two
 * rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/io.h"
#include "fmt/table.h"

#define TTAB_MAGIC "#ttab\n"
#define TTAB_BATCH_ROWS 2

typedef struct ttab_state {
	char *text;
	char *pos;       /* start of the next row line */
} ttab_state;

static int ttab_probe(const uint8_t *head, size_t n, uint64_t size)
{
	(void)size;
	return n >= strlen(TTAB_MAGIC) && memcmp(head, TTAB_MAGIC, strlen(TTAB_MAGIC)) == 0 ? 100 : 0;
}

static fmt_kind ttab_parse_column(fmt_table *t, char *spec, fmt_err *e)
{
	char *colon = strchr(spec, ':');
	if (!colon)
		return fmt_fail(e, FMT_INVALID_FORMAT, "column '%s' has no type", spec);
	*colon = '\0';
	char *type = colon + 1;
	size_t len = strlen(type);
	fmt_field f = { .name = spec, .nullable = len && type[len - 1] == '?' };
	if (f.nullable)
		type[len - 1] = '\0';
	if (strcmp(type, "int64") == 0)
		f.type = FMT_C_I64;
	else if (strcmp(type, "utf8") == 0)
		f.type = FMT_C_UTF8;
	else if (strcmp(type, "bool") == 0)
		f.type = FMT_C_BOOL;
	else
		return fmt_fail(e, FMT_UNSUPPORTED, "column '%s': type '%s'", spec, type);
	return fmt_schema_add_field(&t->schema, &f, e);
}

static fmt_kind ttab_open(fmt_table *t, fmt_err *e)
{
	ttab_state *st = calloc(1, sizeof *st);
	if (!st)
		return fmt_fail(e, FMT_IO, "out of memory");
	t->format_state = st;
	if (fmt_source_read_text(&t->source, 1 << 20, &st->text, e) != FMT_OK)
		return e->kind;
	if (strncmp(st->text, TTAB_MAGIC, strlen(TTAB_MAGIC)) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "no %.5s line", TTAB_MAGIC);
	char *cols = st->text + strlen(TTAB_MAGIC);
	char *end = strchr(cols, '\n');
	if (!end)
		return fmt_fail(e, FMT_INVALID_FORMAT, "no column line");
	*end = '\0';
	st->pos = end + 1;
	for (char *save, *c = strtok_r(cols, ",", &save); c; c = strtok_r(NULL, ",", &save))
		if (ttab_parse_column(t, c, e) != FMT_OK)
			return e->kind;
	return FMT_OK;
}

/* The i-th comma-separated field of line as [*p, *p + *n). */
static void ttab_field(const char *line, size_t i, const char **p, size_t *n)
{
	while (i-- && (line = strchr(line, ',')) != NULL)
		line++;
	if (!line) {
		*p = "";
		*n = 0;
		return;
	}
	*p = line;
	*n = strcspn(line, ",\n");
}

static void set_bit(uint8_t *bits, uint64_t i)
{
	bits[i / 8] = (uint8_t)(bits[i / 8] | (1u << (i % 8)));
}

/* Column c of rows lines (starting at lines[0]) in Arrow layout. */
static fmt_kind ttab_column(const fmt_field *f, size_t c, char **lines, uint64_t rows, fmt_batch *b,
			    fmt_column *col, fmt_err *e)
{
	uint8_t *validity = calloc(1, rows / 8 + 1);
	uint8_t *values = calloc(rows + 1, 8);
	int32_t *offsets = calloc(rows + 1, sizeof *offsets);
	size_t text_len = 0;
	for (uint64_t r = 0; r < rows; r++)
		text_len += strcspn(lines[r], "\n");
	char *text = malloc(text_len + 1);
	if (fmt_batch_own(b, validity, e) || fmt_batch_own(b, values, e) || fmt_batch_own(b, offsets, e) ||
	    fmt_batch_own(b, text, e) || !validity || !values || !offsets || !text)
		return fmt_fail(e, FMT_IO, "out of memory");
	size_t used = 0;
	for (uint64_t r = 0; r < rows; r++) {
		const char *p;
		size_t n;
		ttab_field(lines[r], c, &p, &n);
		if (n == 0 && f->nullable) {
			col->null_count++;
		} else {
			set_bit(validity, r);
			if (f->type == FMT_C_I64) {
				int64_t v = strtoll(p, NULL, 10);
				memcpy(values + r * 8, &v, 8);
			} else if (f->type == FMT_C_BOOL && n && *p == 't') {
				set_bit(values, r);
			} else if (f->type == FMT_C_UTF8) {
				memcpy(text + used, p, n);
				used += n;
			}
		}
		offsets[r + 1] = (int32_t)used;
	}
	col->validity = col->null_count ? validity : NULL;
	col->offsets = f->type == FMT_C_UTF8 ? offsets : NULL;
	col->values = f->type == FMT_C_UTF8 ? (const uint8_t *)text : values;
	col->values_len = f->type == FMT_C_UTF8 ? used : (rows + 1) * 8;
	return FMT_OK;
}

static fmt_kind ttab_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e)
{
	ttab_state *st = t->format_state;
	char *lines[TTAB_BATCH_ROWS];
	uint64_t rows = 0;
	while (rows < TTAB_BATCH_ROWS && *st->pos) {
		lines[rows++] = st->pos;
		char *nl = strchr(st->pos, '\n');
		st->pos = nl ? nl + 1 : st->pos + strlen(st->pos);
	}
	*done = rows == 0;
	b->n_rows = rows;
	for (size_t c = 0; c < b->n_columns && rows; c++)
		if (ttab_column(&t->schema.fields[c], c, lines, rows, b, &b->columns[c], e) != FMT_OK)
			return e->kind;
	return FMT_OK;
}

static fmt_kind ttab_write_row(const fmt_schema *s, const fmt_batch *b, uint64_t r, fmt_sink *k,
			       fmt_err *e)
{
	for (size_t c = 0; c < s->n_fields; c++) {
		const fmt_column *col = &b->columns[c];
		char num[32];
		const uint8_t *p = (const uint8_t *)num;
		size_t n = 0;
		if (c && fmt_sink_write(k, ",", 1, e) != FMT_OK)
			return e->kind;
		if (fmt_column_is_null(col, r))
			continue;
		if (s->fields[c].type == FMT_C_UTF8) {
			fmt_column_bytes(col, FMT_C_UTF8, r, &p, &n);
		} else if (s->fields[c].type == FMT_C_BOOL) {
			n = (size_t)snprintf(num, sizeof num, "%s", fmt_column_bool(col, r) ? "true" : "false");
		} else {
			int64_t v;
			memcpy(&v, col->values + r * 8, 8);
			n = (size_t)snprintf(num, sizeof num, "%lld", (long long)v);
		}
		if (fmt_sink_write(k, p, n, e) != FMT_OK)
			return e->kind;
	}
	return fmt_sink_write(k, "\n", 1, e);
}

static fmt_kind ttab_write(fmt_table *in, fmt_sink *k, const struct fmt_write_opts *o, fmt_err *e)
{
	(void)o;
	const fmt_schema *s = &in->schema;
	if (fmt_sink_write(k, TTAB_MAGIC, strlen(TTAB_MAGIC), e) != FMT_OK)
		return e->kind;
	for (size_t c = 0; c < s->n_fields; c++) {
		char col[256];
		int n = snprintf(col, sizeof col, "%s%s:%s%s", c ? "," : "", s->fields[c].name,
				 s->fields[c].type == FMT_C_I64 ? "int64" : fmt_ctype_name(s->fields[c].type),
				 s->fields[c].nullable ? "?" : "");
		if (fmt_sink_write(k, col, (size_t)n, e) != FMT_OK)
			return e->kind;
	}
	if (fmt_sink_write(k, "\n", 1, e) != FMT_OK)
		return e->kind;
	for (;;) {
		fmt_batch b;
		int done = 0;
		if (fmt_table_next(in, &b, &done, e) != FMT_OK)
			return e->kind;
		fmt_kind kind = FMT_OK;
		for (uint64_t r = 0; r < b.n_rows && kind == FMT_OK; r++)
			kind = ttab_write_row(s, &b, r, k, e);
		fmt_batch_free(&b);
		if (kind != FMT_OK || done)
			return kind;
	}
}

static int ttab_can_hold(const fmt_field *f)
{
	return f->type == FMT_C_I64 || f->type == FMT_C_UTF8 || f->type == FMT_C_BOOL;
}

static void ttab_close(fmt_table *t)
{
	ttab_state *st = t->format_state;
	if (st)
		free(st->text);
	free(st);
	t->format_state = NULL;
}

extern const fmt_table_driver fmt_table_driver_ttab;

const fmt_table_driver fmt_table_driver_ttab = {
	.name = "ttab",
	.extension = ".ttab",
	.probe = ttab_probe,
	.open = ttab_open,
	.next = ttab_next,
	.write = ttab_write,
	.can_hold = ttab_can_hold,
	.close = ttab_close,
};

