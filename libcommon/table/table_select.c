/* --include/--exclude on a table: a view of the input with only the columns the patterns
 * select, in the input's order, as fmt-convert selects tensors. The view wraps the driver: its
 * next reads a batch of every column with the driver's own schema and state, and keeps the
 * selected ones; wrappers put on top later (fmt-watermark's) see the view's schema. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/out.h"
#include "fmt/table.h"
#include "rows_internal.h"

typedef struct view {
	fmt_table_wrap w;
	fmt_schema all;          /* the driver's schema; t->schema is the selected columns */
	size_t *keep;            /* t->schema's columns: their index in all */
} view;

int fmt_name_selected(const char *name, const char *const *include, size_t n_include,
		      const char *const *exclude, size_t n_exclude)
{
	int in = n_include == 0;
	for (size_t i = 0; !in && i < n_include; i++)
		in = fnmatch(include[i], name, 0) == 0;
	for (size_t i = 0; in && i < n_exclude; i++)
		in = fnmatch(exclude[i], name, 0) != 0;
	return in;
}

/* The driver's own schema in t, and back (swapped twice). */
static void swap_schema(fmt_table *t, view *v)
{
	fmt_schema s = t->schema;
	t->schema = v->all;
	v->all = s;
}

static fmt_kind view_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e)
{
	view *v = t->format_state;
	fmt_batch whole;
	fmt_kind k = fmt_batch_init(&whole, v->all.n_fields, e);
	if (k != FMT_OK)
		return k;
	swap_schema(t, v);
	k = fmt_table_wrap_next(t, &v->w, &whole, done, e);
	swap_schema(t, v);
	if (k == FMT_OK && !*done) {
		b->n_rows = whole.n_rows;
		b->first_row = whole.first_row;
		for (size_t i = 0; i < t->schema.n_fields; i++)
			b->columns[i] = whole.columns[v->keep[i]];
		/* the buffers the columns point into go with them */
		b->owned = whole.owned;
		b->n_owned = whole.n_owned;
		b->cap_owned = whole.cap_owned;
		whole.owned = NULL;
		whole.n_owned = whole.cap_owned = 0;
	}
	fmt_batch_free(&whole);
	return k;
}

static void view_close(fmt_table *t)
{
	view *v = t->format_state;
	swap_schema(t, v);
	fmt_table_wrap_remove(t, &v->w, 1);
	fmt_schema_free(&v->all); /* the selected columns' schema, now */
	free(v->keep);
	free(v);
}

/* "'a*'" or "'a*', 'b*'" for a message (cut short past size). */
static void quote_patterns(const char *const *p, size_t n, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s'%s'", i ? ", " : "", p[i]);
}

static fmt_kind nothing_selected(const fmt_table *t, const char *const *include, size_t n_include,
				 const char *const *exclude, size_t n_exclude, fmt_err *e)
{
	char pats[256], cols[256];
	int any_included = n_include == 0;
	for (size_t i = 0; i < t->schema.n_fields; i++)
		any_included |= fmt_name_selected(t->schema.fields[i].name, include, n_include, NULL, 0);
	fmt_schema_names_text(&t->schema, cols, sizeof cols);
	if (!any_included) {
		quote_patterns(include, n_include, pats, sizeof pats);
		return fmt_fail(e, FMT_USAGE, "--include %s: no column matches (the columns: %s)", pats, cols);
	}
	quote_patterns(exclude, n_exclude, pats, sizeof pats);
	return fmt_fail(e, FMT_USAGE, "--exclude %s: leaves no column (the columns: %s)", pats, cols);
}

/* Put v over t: t's schema becomes chosen (taken); keep says where each column comes from. */
static void put_view(fmt_table *t, view *v, size_t *keep, fmt_schema *chosen)
{
	v->keep = keep;
	v->all = t->schema;
	t->schema = *chosen;
	fmt_table_wrap_put(t, &v->w, v, view_next, view_close);
}

/* Keep t's columns keep[0..kept), kept > 0 (keep taken: freed on failure). */
static fmt_kind keep_columns(fmt_table *t, size_t *keep, size_t kept, fmt_err *e)
{
	view *v = calloc(1, sizeof *v);
	fmt_schema chosen;
	fmt_schema_init(&chosen);
	fmt_kind k = v ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; k == FMT_OK && i < kept; i++)
		k = fmt_schema_add_field(&chosen, &t->schema.fields[keep[i]], e);
	for (size_t i = 0; k == FMT_OK && i < t->schema.n_meta; i++)
		k = fmt_schema_add_meta(&chosen, t->schema.meta[i].key, t->schema.meta[i].value, e);
	if (k != FMT_OK || kept == t->schema.n_fields) { /* everything: no view needed */
		fmt_schema_free(&chosen);
		free(keep);
		free(v);
		return k;
	}
	if (t->driver->columns_used) /* the driver may skip reading the others */
		t->driver->columns_used(t, keep, kept);
	put_view(t, v, keep, &chosen);
	return FMT_OK;
}

fmt_kind fmt_table_select(fmt_table *t, const char *const *include, size_t n_include,
			  const char *const *exclude, size_t n_exclude, fmt_err *e)
{
	size_t n = t->schema.n_fields, kept = 0;
	if (n_include == 0 && n_exclude == 0)
		return FMT_OK;
	size_t *keep = calloc(n ? n : 1, sizeof *keep);
	if (!keep)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (fmt_name_selected(t->schema.fields[i].name, include, n_include, exclude, n_exclude))
			keep[kept++] = i;
	if (kept == 0) {
		free(keep);
		return nothing_selected(t, include, n_include, exclude, n_exclude, e);
	}
	return keep_columns(t, keep, kept, e);
}

fmt_kind fmt_table_select_converted(fmt_table *t, fmt_err *e)
{
	size_t n = t->schema.n_fields, kept = 0;
	if (!fmt_schema_unsupported(&t->schema))
		return FMT_OK;
	size_t *keep = calloc(n, sizeof *keep);
	if (!keep)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (t->schema.fields[i].type != FMT_C_OTHER)
			keep[kept++] = i;
	if (kept == 0) {
		free(keep);
		return fmt_fail(e, FMT_UNSUPPORTED, "no column has a type fmtkit converts (the first: '%s', %s)",
				t->schema.fields[0].name, t->schema.fields[0].type_name);
	}
	return keep_columns(t, keep, kept, e);
}

/* OLD=NEW's two names; 0 when either is empty. */
static int rename_pair(const char *pair, size_t *old_len, const char **new_name)
{
	const char *eq = strchr(pair, '=');
	if (!eq || eq == pair || !eq[1])
		return 0;
	*old_len = (size_t)(eq - pair);
	*new_name = eq + 1;
	return 1;
}

static fmt_kind rename_one(fmt_schema *s, const char *pair, fmt_err *e)
{
	size_t n;
	const char *to;
	char cols[256];
	if (!rename_pair(pair, &n, &to))
		return fmt_fail(e, FMT_USAGE, "--rename takes OLD=NEW, not '%s'", pair);
	if (!fmt_utf8_valid(to, strlen(to)))
		return fmt_fail(e, FMT_USAGE, "--rename '%s': the new name is not valid UTF-8", pair);
	long from = -1;
	for (size_t i = 0; i < s->n_fields && from < 0; i++)
		if (strlen(s->fields[i].name) == n && memcmp(s->fields[i].name, pair, n) == 0)
			from = (long)i;
	if (from < 0) {
		fmt_schema_names_text(s, cols, sizeof cols);
		return fmt_fail(e, FMT_USAGE, "--rename '%s': no column '%.*s' (the columns: %s)", pair, (int)n, pair, cols);
	}
	long taken = fmt_schema_find(s, to);
	if (taken >= 0 && taken != from)
		return fmt_fail(e, FMT_USAGE, "--rename '%s': a column '%s' exists already", pair, to);
	char *name = strdup(to);
	if (!name)
		return fmt_fail(e, FMT_IO, "out of memory");
	free(s->fields[from].name);
	s->fields[from].name = name;
	return FMT_OK;
}

/* A view of every column, so that the names can change without the driver seeing it. */
static fmt_kind view_all(fmt_table *t, fmt_err *e)
{
	size_t n = t->schema.n_fields;
	view *v = calloc(1, sizeof *v);
	size_t *keep = calloc(n ? n : 1, sizeof *keep);
	fmt_schema all;
	fmt_schema_init(&all);
	fmt_kind k = v && keep ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; k == FMT_OK && i < n; i++) {
		keep[i] = i;
		k = fmt_schema_add_field(&all, &t->schema.fields[i], e);
	}
	for (size_t i = 0; k == FMT_OK && i < t->schema.n_meta; i++)
		k = fmt_schema_add_meta(&all, t->schema.meta[i].key, t->schema.meta[i].value, e);
	if (k != FMT_OK) {
		fmt_schema_free(&all);
		free(keep);
		free(v);
		return k;
	}
	put_view(t, v, keep, &all);
	return FMT_OK;
}

fmt_kind fmt_table_rename(fmt_table *t, const char *const *pairs, size_t n_pairs, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	if (n_pairs && t->driver->next != view_next)
		k = view_all(t, e);
	for (size_t i = 0; k == FMT_OK && i < n_pairs; i++)
		k = rename_one(&t->schema, pairs[i], e);
	return k;
}
