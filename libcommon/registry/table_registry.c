/* The table drivers, and the one probe that chooses between a model and a table driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/dataset.h"
#include "fmt/registry.h"
#include "fmt/table.h"

/* In probe order (more specific formats first; the order matters only on equal scores), and
 * the order in which lists of formats are shown. */
#define FMT_TABLE_DRIVERS(X) \
	X(fmt_table_driver_ald) \
	X(fmt_table_driver_arrow) \
	X(fmt_table_driver_arrow_stream) \
	X(fmt_table_driver_jsonl) \
	X(fmt_table_driver_csv) \
	/* a new table driver: one X(fmt_table_driver_NAME) \ line above this one */

#define DECLARE_DRIVER(d) extern const fmt_table_driver d;
#define POINT_TO_DRIVER(d) &d,
FMT_TABLE_DRIVERS(DECLARE_DRIVER)

#define EXTRA_DRIVERS 8
/* The built-in drivers, room for EXTRA_DRIVERS added at run time, and the NULL that ends it. */
static const fmt_table_driver *drivers[] = {
	FMT_TABLE_DRIVERS(POINT_TO_DRIVER)
	NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	NULL
};

const fmt_table_driver *const *fmt_table_drivers(void)
{
	return drivers;
}

fmt_kind fmt_table_driver_register(const fmt_table_driver *d, fmt_err *e)
{
	size_t n = 0;
	while (drivers[n])
		n++;
	if (n + 1 >= sizeof drivers / sizeof drivers[0])
		return fmt_fail(e, FMT_INTERNAL, "no room to register table driver %s", d->name);
	drivers[n] = d;
	return FMT_OK;
}

const fmt_table_driver *fmt_table_driver_by_name(const char *name)
{
	for (size_t i = 0; drivers[i]; i++)
		if (strcmp(drivers[i]->name, name) == 0)
			return drivers[i];
	return NULL;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

const fmt_table_driver *fmt_table_driver_by_extension(const char *path)
{
	for (size_t i = 0; drivers[i]; i++) {
		if (drivers[i]->extension && ends_with(path, drivers[i]->extension))
			return drivers[i];
		for (const char *const *x = drivers[i]->more_extensions; x && *x; x++)
			if (ends_with(path, *x))
				return drivers[i];
	}
	return NULL;
}

void fmt_format_names(char *buf, size_t n)
{
	fmt_driver_names(buf, n);
	size_t used = strlen(buf);
	for (size_t i = 0; drivers[i] && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "", drivers[i]->name);
}

void fmt_writer_names(char *buf, size_t n)
{
	const char *names[64];
	size_t count = 0, used = 0;
	for (const fmt_driver *const *d = fmt_drivers(); *d && count < 64; d++)
		if ((*d)->write)
			names[count++] = (*d)->name;
	for (size_t i = 0; drivers[i] && count < 64; i++)
		if (drivers[i]->write)
			names[count++] = drivers[i]->name;
	buf[0] = '\0';
	for (size_t i = 0; i < count && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%s", i == 0 ? "" : i + 1 == count ? " or " : ", ",
					 names[i]);
}

/* What the first bytes of s are: a model driver or a table driver (the higher score; the
 * model driver on a tie). Neither is InvalidFormat. */
static fmt_kind probe(fmt_source *s, const fmt_driver **model, const fmt_table_driver **table,
		      fmt_err *e)
{
	uint8_t head[FMT_PROBE_BYTES];
	size_t n = s->size < sizeof head ? (size_t)s->size : sizeof head;
	if (fmt_source_read(s, 0, head, n, e) != FMT_OK)
		return e->kind;
	int best;
	*model = fmt_driver_probe(s, head, n, &best);
	*table = NULL;
	for (size_t i = 0; drivers[i]; i++) {
		int score = drivers[i]->probe(head, n, s->size);
		if (score > best) {
			*model = NULL;
			*table = drivers[i];
			best = score;
		}
	}
	if (*model || *table)
		return FMT_OK;
	char names[512];
	fmt_format_names(names, sizeof names);
	return fmt_fail(e, FMT_INVALID_FORMAT, "unrecognised format (not one of: %s)", names);
}

/* Open a table over src, which the table takes, with driver d. */
static fmt_kind open_table(fmt_table *t, fmt_source *src, const char *path, const fmt_table_driver *d,
			   fmt_err *e)
{
	t->source = *src;
	t->has_source = 1;
	t->path = strdup(path);
	if (!t->path) {
		fmt_table_free(t);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	t->driver = d;
	fmt_kind k = d->open(t, e);
	if (k == FMT_OK)
		k = fmt_schema_check(&t->schema, e);
	if (k != FMT_OK) {
		fmt_err_file(e, path);
		fmt_table_free(t);
	}
	return k;
}

static fmt_kind open_source_as_table(fmt_table *t, fmt_source *src, const char *path,
				     const fmt_table_driver *forced, fmt_err *e)
{
	const fmt_driver *model = NULL;
	const fmt_table_driver *d = forced;
	if (!d && probe(src, &model, &d, e) != FMT_OK) {
		fmt_source_close(src);
		fmt_err_file(e, path);
		return e->kind;
	}
	if (!d) {
		fmt_source_close(src);
		fmt_err_file(e, path);
		return fmt_fail(e, FMT_INVALID_FORMAT, "a %s model, not a dataset", model->name);
	}
	return open_table(t, src, path, d, e);
}

fmt_kind fmt_table_open(fmt_table *t, const char *path, const fmt_table_driver *forced, fmt_err *e)
{
	fmt_source src;
	fmt_table_init(t);
	fmt_kind k = fmt_source_open(&src, path, e);
	return k == FMT_OK ? open_source_as_table(t, &src, path, forced, e) : k;
}

fmt_kind fmt_table_open_opts(fmt_table *t, const char *path, const fmt_table_driver *forced,
			     const struct fmt_dataset_opts *o, fmt_err *e)
{
	fmt_source src;
	fmt_table_init(t);
	t->opts = o;
	fmt_kind k = fmt_source_open(&src, path, e);
	return k == FMT_OK ? open_source_as_table(t, &src, path, forced, e) : k;
}

fmt_kind fmt_table_open_memory(fmt_table *t, const char *name, const void *data, size_t n,
			       const fmt_table_driver *forced, fmt_err *e)
{
	fmt_source src;
	fmt_table_init(t);
	fmt_kind k = fmt_source_from_memory(&src, name, data, n, e);
	return k == FMT_OK ? open_source_as_table(t, &src, name, forced, e) : k;
}

fmt_kind fmt_open_any(const char *path, const char *forced, fmt_model *m, fmt_table *t,
		      int *is_table, fmt_err *e)
{
	const fmt_driver *model = forced ? fmt_driver_by_name(forced) : NULL;
	const fmt_table_driver *table = forced && !model ? fmt_table_driver_by_name(forced) : NULL;
	fmt_table_init(t);
	fmt_model_init(m);
	if (forced && !model && !table) {
		char names[512];
		fmt_format_names(names, sizeof names);
		return fmt_fail(e, FMT_USAGE, "unknown format '%s' (one of: %s)", forced, names);
	}
	fmt_source src;
	if (fmt_source_open_sequential(&src, path, e) != FMT_OK)
		return e->kind;
	if (!forced && probe(&src, &model, &table, e) != FMT_OK) {
		fmt_source_close(&src);
		fmt_err_file(e, path);
		return e->kind;
	}
	*is_table = table != NULL;
	if (table && fmt_source_make_whole(&src, e) != FMT_OK) {
		fmt_source_close(&src);
		fmt_err_file(e, path);
		return e->kind;
	}
	if (table)
		return open_table(t, &src, path, table, e);
	return fmt_model_open_source(m, &src, path, model, e);
}

fmt_kind fmt_sign_any_in_place(const char *path, const fmt_keyset *keys, int threads, fmt_err *e)
{
	fmt_model m;
	fmt_table t;
	int is_table = 0;
	fmt_kind k = fmt_open_any(path, NULL, &m, &t, &is_table, e);
	if (k != FMT_OK)
		return k;
	if (!is_table) {
		fmt_model_free(&m);
		return fmt_sign_in_place(path, keys, threads, e);
	}
	const fmt_table_driver *d = t.driver;
	fmt_table_free(&t);
	if (!d->sign_in_place) {
		fmt_err_file(e, path);
		return fmt_fail(e, FMT_USAGE, "%s files carry no embedded signature (sign them with a detached "
				".minisig: fmt-sign sign -s SECKEY without --embed)", d->name);
	}
	k = d->sign_in_place(path, keys, threads, e);
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}

fmt_kind fmt_license_any_in_place(const char *path, const fmt_license_req *l, const fmt_keyset *keys,
				  fmt_err *e)
{
	fmt_table t;
	fmt_kind k = fmt_table_open(&t, path, NULL, e);
	if (k != FMT_OK)
		return k;
	const fmt_table_driver *d = t.driver;
	fmt_table_free(&t);
	if (!d->license_in_place) {
		fmt_err_file(e, path);
		return fmt_fail(e, FMT_USAGE, "%s files carry no licence (.ald does)", d->name);
	}
	k = d->license_in_place(path, l, keys, e);
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}
