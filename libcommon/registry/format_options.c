/* The options the registered drivers declare, as a tool sees them (fmt/format_options.h). */
#include <stdio.h>
#include <string.h>
#include "fmt/format_options.h"
#include "fmt/strbuf.h"

#define MAX_OWNERS 64

/* A driver that declares options. */
typedef struct owner {
	const fmt_drvopts *of;
	const char *name, *extension;
	unsigned kind;       /* FMT_FOPT_MODELS or FMT_FOPT_TABLES */
} owner;

/* Every driver with options, model drivers first, in registry order. */
static size_t owners(owner *out)
{
	size_t n = 0;
	for (const fmt_driver *const *d = fmt_drivers(); *d && n < MAX_OWNERS; d++)
		if ((*d)->options)
			out[n++] = (owner){ (*d)->options, (*d)->name, (*d)->extension, FMT_FOPT_MODELS };
	for (const fmt_table_driver *const *d = fmt_table_drivers(); *d && n < MAX_OWNERS; d++)
		if ((*d)->options)
			out[n++] = (owner){ (*d)->options, (*d)->name, (*d)->extension, FMT_FOPT_TABLES };
	return n;
}

/* The option named name in of, or NULL. */
static const fmt_drvopt *declared(const fmt_drvopts *of, const char *name)
{
	for (size_t i = 0; of && of->list[i].name; i++)
		if (strcmp(of->list[i].name, name) == 0)
			return &of->list[i];
	return NULL;
}

size_t fmt_format_options(fmt_format_option *out, size_t max)
{
	owner ow[MAX_OWNERS];
	size_t n_ow = owners(ow), n = 0;
	for (size_t i = 0; i < n_ow; i++) {
		for (const fmt_drvopt *o = ow[i].of->list; o->name && n < max; o++) {
			size_t k = 0;
			while (k < n && strcmp(out[k].opt->name, o->name) != 0)
				k++;
			if (k == n)
				out[n++] = (fmt_format_option){ .opt = o };
			out[k].kinds |= ow[i].kind;
		}
	}
	for (size_t k = 0; k < n; k++) {
		const char *names[MAX_OWNERS];
		size_t count = 0;
		for (size_t i = 0; i < n_ow; i++)
			if (declared(ow[i].of, out[k].opt->name))
				names[count++] = ow[i].name;
		fmt_join_words(names, count, " and ", out[k].owners, sizeof out[k].owners);
	}
	return n;
}

int fmt_format_option_parse(fmt_drvopt_sets *s, const char *name, unsigned kinds, const char *arg, fmt_err *e)
{
	owner ow[MAX_OWNERS];
	size_t n_ow = owners(ow);
	for (size_t i = 0; i < n_ow; i++) {
		const fmt_drvopt *o = (ow[i].kind & kinds) ? declared(ow[i].of, name) : NULL;
		if (o && fmt_drvopt_parse(s, ow[i].of, (size_t)(o - ow[i].of->list), arg, e) < 0)
			return -1;
	}
	return 0;
}

int fmt_table_option_parse_for(fmt_drvopt_sets *s, const fmt_table_driver *out, const char *name, const char *arg,
			       fmt_err *e)
{
	const fmt_drvopt *o = out->options ? declared(out->options, name) : NULL;
	if (o)
		return fmt_drvopt_parse(s, out->options, (size_t)(o - out->options->list), arg, e);
	return fmt_format_option_parse(s, name, FMT_FOPT_TABLES, arg, e);
}

/* d declares name for use (FMT_DRVOPT_READ or _WRITE). */
static int uses(const fmt_drvopts *of, const char *name, unsigned use)
{
	const fmt_drvopt *o = declared(of, name);
	return o && (o->use & use);
}

/* "csv input or ald output": the table drivers that use name. */
static void table_users(const char *name, char *buf, size_t size)
{
	static const char *const side[] = { "input", "output" };
	char words[MAX_OWNERS * 2][48];
	const char *list[MAX_OWNERS * 2];
	size_t n = 0;
	for (const fmt_table_driver *const *d = fmt_table_drivers(); *d && n + 2 <= MAX_OWNERS * 2; d++)
		for (int w = 0; w < 2; w++)
			if (uses((*d)->options, name, w ? FMT_DRVOPT_WRITE : FMT_DRVOPT_READ)) {
				snprintf(words[n], sizeof words[n], "%s %s", (*d)->name, side[w]);
				list[n] = words[n];
				n++;
			}
	fmt_join_words(list, n, " or ", buf, size);
}

/* The first given option (in the order given per driver) that keep() says no use of, or NULL. */
static const char *first_unused(const fmt_drvopt_sets *s, int (*keep)(const char *name, const void *ctx),
				const void *ctx)
{
	for (size_t i = 0; s && i < s->n; i++)
		for (size_t j = 0; s->set[i].of->list[j].name; j++)
			if ((s->set[i].given >> j & 1) && !keep(s->set[i].of->list[j].name, ctx))
				return s->set[i].of->list[j].name;
	return NULL;
}

typedef struct sides { const fmt_table_driver *in, *out; } sides;

static int table_uses(const char *name, const void *ctx)
{
	const sides *t = ctx;
	return uses(t->in->options, name, FMT_DRVOPT_READ) || uses(t->out->options, name, FMT_DRVOPT_WRITE);
}

fmt_kind fmt_table_options_check(const fmt_drvopt_sets *s, const fmt_table_driver *in,
				 const fmt_table_driver *out, fmt_err *e)
{
	sides t = { in, out };
	const char *name = first_unused(s, table_uses, &t);
	if (!name)
		return FMT_OK;
	char users[400];
	table_users(name, users, sizeof users);
	return fmt_fail(e, FMT_USAGE, "--%s has no use with %s input and %s output (it is for %s)", name, in->name,
			out->name, users);
}

static int model_writes(const char *name, const void *ctx)
{
	const fmt_driver *out = ctx;
	return uses(out->options, name, FMT_DRVOPT_WRITE) ||
	       uses(fmt_driver_file_writer(out)->options, name, FMT_DRVOPT_WRITE);
}

fmt_kind fmt_model_options_check(const fmt_drvopt_sets *s, const fmt_driver *out, fmt_err *e)
{
	const char *name = first_unused(s, model_writes, out);
	if (!name)
		return FMT_OK;
	const char *exts[MAX_OWNERS];
	size_t n = 0;
	char list[256];
	for (const fmt_driver *const *d = fmt_drivers(); *d && n < MAX_OWNERS; d++)
		if (uses((*d)->options, name, FMT_DRVOPT_WRITE) && (*d)->extension)
			exts[n++] = (*d)->extension;
	fmt_join_words(exts, n, " or ", list, sizeof list);
	return fmt_fail(e, FMT_USAGE, "--%s needs %s output", name, list);
}
