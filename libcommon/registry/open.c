/* The universal opener: open, sign or license any file, whatever its format, found by content
 * (or named) through the registry. It sits above every driver; drivers open files with a driver
 * they know (formats/driver.c), never through here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/dataset.h"
#include "fmt/out.h"
#include "fmt/registry.h"
#include "fmt/strbuf.h"
#include "fmt/table.h"

/* "an ald dataset", "a csv dataset": the article of a format's name. */
static const char *article(const char *name)
{
	return name[0] && strchr("aeiou", name[0]) ? "an" : "a";
}

static fmt_unrecognised_fn unrecognised;

void fmt_format_set_unrecognised(fmt_unrecognised_fn fn)
{
	unrecognised = fn;
}

/* The format of the first bytes of s among kinds (the best score; a model driver on a tie). None
 * is InvalidFormat naming the formats of kinds. */
static fmt_format probe(fmt_source *s, unsigned kinds, fmt_err *e)
{
	uint8_t head[FMT_PROBE_BYTES];
	size_t n = s->size < sizeof head ? (size_t)s->size : sizeof head;
	if (fmt_source_read(s, 0, head, n, e) != FMT_OK)
		return (fmt_format){ 0 };
	unsigned long lost = fmt_json_memory_failures();
	errno = 0;
	fmt_format f = fmt_format_probe(s, head, n, kinds, NULL);
	fmt_format other = kinds == FMT_FORMAT_MODEL && !f.model ? fmt_format_probe(s, head, n, FMT_FORMAT_TABLE, NULL)
								    : (fmt_format){ 0 };
	if (errno == ENOMEM || fmt_json_memory_failures() != lost) {
		/* a probe that ran out of memory said no, which is not the file's answer */
		fmt_fail(e, FMT_IO, "out of memory identifying the format");
		return (fmt_format){ 0 };
	}
	if (other.table) {
		fmt_fail(e, FMT_INVALID_FORMAT, "%s %s dataset, not a model", article(other.table->name),
			 other.table->name);
	} else if (!f.model && !f.table && !(unrecognised && unrecognised(s, head, n, e))) {
		char names[512];
		if (kinds == FMT_FORMAT_MODEL)
			fmt_driver_names(names, sizeof names);
		else
			fmt_format_names(names, sizeof names);
		fmt_fail(e, FMT_INVALID_FORMAT, "unrecognised format (not one of: %s)", names);
	}
	return f;
}

/* ---- models ---- */

fmt_kind fmt_model_open_source(fmt_model *m, fmt_source *src, const char *path,
			       const fmt_driver *forced, fmt_err *e)
{
	fmt_model_init(m);
	const fmt_driver *d = forced ? forced : probe(src, FMT_FORMAT_MODEL, e).model;
	if (!d) {
		fmt_err_file(e, path);
		fmt_source_close(src);
		return e->kind;
	}
	return fmt_model_open_source_with(m, src, path, d, e);
}

fmt_kind fmt_model_open(fmt_model *m, const char *path, const fmt_driver *forced, fmt_err *e)
{
	fmt_source src;
	fmt_model_init(m);
	fmt_kind k = fmt_source_open_sequential(&src, path, e);
	if (k != FMT_OK)
		return k;
	const fmt_driver *d = forced ? forced : probe(&src, FMT_FORMAT_MODEL, e).model;
	if (d && fmt_driver_take_source(d, &src, 1, e) == FMT_OK)
		return fmt_model_open_source_with(m, &src, path, d, e);
	fmt_err_file(e, path);
	fmt_source_close(&src);
	return e->kind;
}

fmt_kind fmt_model_open_streaming(fmt_model *m, const char *path, const fmt_driver *forced, fmt_err *e)
{
	fmt_source src;
	fmt_model_init(m);
	fmt_kind k = fmt_source_open_sequential(&src, path, e);
	return k == FMT_OK ? fmt_model_open_source(m, &src, path, forced, e) : k;
}

fmt_kind fmt_model_open_memory(fmt_model *m, const char *name, const void *data, size_t n,
			       const fmt_driver *forced, fmt_err *e)
{
	fmt_source src;
	fmt_model_init(m);
	fmt_kind k = fmt_source_from_memory(&src, name, data, n, e);
	return k == FMT_OK ? fmt_model_open_source(m, &src, name, forced, e) : k;
}

fmt_kind fmt_sign_in_place(const char *path, const fmt_keyset *keys, int threads, fmt_err *e)
{
	fmt_model m;
	fmt_kind k = fmt_model_open(&m, path, NULL, e);
	if (k != FMT_OK)
		return k;
	const fmt_driver *d = m.driver;
	fmt_model_free(&m);
	if (!d->sign_in_place) {
		char names[256];
		fmt_driver_signing_names(names, sizeof names);
		return fmt_fail_file(e, FMT_USAGE, path, "%s files carry no signature (signed formats: %s)", d->name,
				     names);
	}
	k = d->sign_in_place(path, keys, threads, e);
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}

/* ---- tables ---- */

static fmt_kind open_source_as_table(fmt_table *t, fmt_source *src, const char *path,
				     const fmt_table_driver *forced, fmt_err *e)
{
	fmt_format f = { .table = forced };
	if (!forced && !(f = probe(src, FMT_FORMAT_ANY, e)).model && !f.table) {
		fmt_source_close(src);
		fmt_err_file(e, path);
		return e->kind;
	}
	if (!f.table) {
		fmt_source_close(src);
		return fmt_fail_file(e, FMT_INVALID_FORMAT, path, "%s %s model, not a dataset", article(f.model->name),
				     f.model->name);
	}
	if (fmt_source_make_whole(src, e) != FMT_OK) {
		fmt_source_close(src);
		fmt_err_file(e, path);
		return e->kind;
	}
	return fmt_table_open_source_with(t, src, path, f.table, e);
}

fmt_kind fmt_table_open_opts(fmt_table *t, const char *path, const fmt_table_driver *forced,
			     const struct fmt_dataset_opts *o, fmt_err *e)
{
	fmt_source src;
	fmt_table_init(t);
	t->opts = o;
	fmt_kind k = fmt_source_open_sequential(&src, path, e);
	return k == FMT_OK ? open_source_as_table(t, &src, path, forced, e) : k;
}

fmt_kind fmt_table_open(fmt_table *t, const char *path, const fmt_table_driver *forced, fmt_err *e)
{
	return fmt_table_open_opts(t, path, forced, NULL, e);
}

fmt_kind fmt_table_open_memory(fmt_table *t, const char *name, const void *data, size_t n,
			       const fmt_table_driver *forced, fmt_err *e)
{
	return fmt_table_open_memory_opts(t, name, data, n, forced, NULL, e);
}

fmt_kind fmt_table_open_memory_opts(fmt_table *t, const char *name, const void *data, size_t n,
				    const fmt_table_driver *forced, const struct fmt_dataset_opts *o, fmt_err *e)
{
	fmt_source src;
	fmt_table_init(t);
	t->opts = o;
	fmt_kind k = fmt_source_from_memory(&src, name, data, n, e);
	return k == FMT_OK ? open_source_as_table(t, &src, name, forced, e) : k;
}

fmt_kind fmt_license_any_in_place(const char *path, const fmt_license_req *l, const fmt_keyset *keys,
				  fmt_err *e)
{
	fmt_model m;
	fmt_table t;
	int is_table = 0;
	/* a model too: it is not malformed, it is the wrong kind of file for a licence (UsageError) */
	fmt_kind k = fmt_open_any(path, NULL, &m, &t, &is_table, e);
	if (k != FMT_OK)
		return k;
	const fmt_table_driver *d = is_table ? t.driver : NULL;
	const char *name = is_table ? t.driver->name : m.driver->name;
	if (is_table)
		fmt_table_free(&t);
	else
		fmt_model_free(&m);
	if (!d || !d->license_in_place)
		return fmt_fail_file(e, FMT_USAGE, path, "%s files carry no licence (.ald does)", name);
	k = d->license_in_place(path, l, keys, e);
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}

/* ---- either ---- */

/* src opened as the format forced (NULL: probed among both kinds). */
static fmt_kind open_any_as(fmt_source *src, const char *path, const fmt_format *forced, fmt_model *m,
			    fmt_table *t, int *is_table, fmt_err *e)
{
	fmt_format f = forced ? *forced : probe(src, FMT_FORMAT_ANY, e);
	if (!f.model && !f.table) {
		fmt_source_close(src);
		fmt_err_file(e, path);
		return e->kind;
	}
	*is_table = f.table != NULL;
	if (f.table && fmt_source_make_whole(src, e) != FMT_OK) {
		fmt_source_close(src);
		fmt_err_file(e, path);
		return e->kind;
	}
	if (f.table)
		return fmt_table_open_source_with(t, src, path, f.table, e);
	return fmt_model_open_source(m, src, path, f.model, e);
}

fmt_kind fmt_open_any(const char *path, const char *forced, fmt_model *m, fmt_table *t,
		      int *is_table, fmt_err *e)
{
	fmt_format f = forced ? fmt_format_by_name(forced, FMT_FORMAT_ANY) : (fmt_format){ 0 };
	fmt_table_init(t);
	fmt_model_init(m);
	if (forced && !f.model && !f.table) {
		char names[512];
		const char *near = fmt_format_nearest(forced);
		fmt_format_names(names, sizeof names);
		return fmt_fail(e, FMT_USAGE, "unknown format '%s' (one of: %s)%s%s%s", forced, names,
				near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
	}
	fmt_source src;
	if (fmt_source_open_sequential(&src, path, e) != FMT_OK)
		return e->kind;
	return open_any_as(&src, path, forced ? &f : NULL, m, t, is_table, e);
}

fmt_kind fmt_open_any_source(fmt_source *src, const char *path, fmt_model *m, fmt_table *t, int *is_table,
			     fmt_err *e)
{
	fmt_table_init(t);
	fmt_model_init(m);
	return open_any_as(src, path, NULL, m, t, is_table, e);
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
	if (!d->sign_in_place)
		return fmt_fail_file(e, FMT_USAGE, path, "%s files carry no embedded signature (sign them with a "
				     "detached .minisig: fmt-sign sign -s SECKEY without --embed)", d->name);
	k = d->sign_in_place(path, keys, threads, e);
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}
