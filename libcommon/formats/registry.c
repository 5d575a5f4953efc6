#include <stdio.h>
#include <string.h>
#include "fmt/registry.h"

extern const fmt_driver fmt_driver_safetensors;
extern const fmt_driver fmt_driver_st_index;
extern const fmt_driver fmt_driver_gguf;
extern const fmt_driver fmt_driver_apsim;
extern const fmt_driver fmt_driver_apsim_index;
extern const fmt_driver fmt_driver_nk;

/* Probe order matters only on equal scores: more specific formats come first. */
static const fmt_driver *const drivers[] = {
	&fmt_driver_gguf,
	&fmt_driver_apsim,
	&fmt_driver_apsim_index,
	&fmt_driver_safetensors,
	&fmt_driver_st_index,
	&fmt_driver_nk,
	NULL
};

const fmt_driver *const *fmt_drivers(void)
{
	return drivers;
}

const fmt_driver *fmt_driver_by_name(const char *name)
{
	for (size_t i = 0; drivers[i]; i++)
		if (strcmp(drivers[i]->name, name) == 0)
			return drivers[i];
	return NULL;
}

void fmt_driver_names(char *buf, size_t n)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; drivers[i] && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", drivers[i]->name);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

const fmt_driver *fmt_driver_by_extension(const char *path)
{
	for (size_t i = 0; drivers[i]; i++)
		if (drivers[i]->extension && ends_with(path, drivers[i]->extension))
			return drivers[i];
	return NULL;
}

static const fmt_driver *probe_source(fmt_source *s, fmt_err *e)
{
	uint8_t head[FMT_PROBE_BYTES];
	size_t n = s->size < sizeof head ? (size_t)s->size : sizeof head;
	if (fmt_source_read(s, 0, head, n, e) != FMT_OK)
		return NULL;
	const fmt_driver *best = NULL;
	int best_score = 0;
	for (size_t i = 0; drivers[i]; i++) {
		int score = drivers[i]->probe(head, n, s->size);
		if (score > best_score) {
			best = drivers[i];
			best_score = score;
		}
	}
	if (!best)
		fmt_fail(e, FMT_INVALID_FORMAT, "unrecognised format (not safetensors, a safetensors index or GGUF)");
	return best;
}

/* Probe (unless forced) and open a model over src, which the model takes. */
static fmt_kind open_source(fmt_model *m, fmt_source *src, const char *path, const fmt_driver *forced,
			    fmt_err *e)
{
	const fmt_driver *d = forced ? forced : probe_source(src, e);
	if (!d) {
		fmt_err_file(e, path);
		fmt_source_close(src);
		return e->kind;
	}
	m->path = strdup(path);
	fmt_kind k = m->path ? fmt_model_add_source(m, src, NULL, e) : fmt_fail(e, FMT_IO, "out of memory");
	if (k != FMT_OK) {
		fmt_source_close(src);
		fmt_model_free(m);
		return k;
	}
	m->driver = d;
	k = d->open(m, e);
	if (k != FMT_OK) {
		fmt_err_file(e, path);
		fmt_model_free(m);
	}
	return k;
}

fmt_kind fmt_model_open(fmt_model *m, const char *path, const fmt_driver *forced, fmt_err *e)
{
	fmt_source src;
	fmt_model_init(m);
	fmt_kind k = fmt_source_open(&src, path, e);
	return k == FMT_OK ? open_source(m, &src, path, forced, e) : k;
}

fmt_kind fmt_model_open_memory(fmt_model *m, const char *name, const void *data, size_t n,
			       const fmt_driver *forced, fmt_err *e)
{
	fmt_source src;
	fmt_model_init(m);
	fmt_kind k = fmt_source_from_memory(&src, name, data, n, e);
	return k == FMT_OK ? open_source(m, &src, name, forced, e) : k;
}

fmt_kind fmt_model_verify(fmt_model *m, const fmt_verify_opts *o, fmt_err *e)
{
	static const fmt_verify_opts none = { 0 };
	if (!o)
		o = &none;
	if (o->key && !m->driver->has_signatures) {
		fmt_err_file(e, m->path);
		return fmt_fail(e, FMT_SIGNATURE, "a key was given but %s files carry no signature", m->driver->name);
	}
	if (!m->driver->verify)
		return FMT_OK;
	fmt_kind k = m->driver->verify(m, o, e);
	if (k != FMT_OK)
		fmt_err_file(e, m->path);
	return k;
}
