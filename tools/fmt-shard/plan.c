/* What fmt-shard asks the drivers before a split: which driver writes the set, with which limits,
 * and the default output prefix. Where a set is cut is the driver's plan_shards alone. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "shard.h"

fmt_kind set_writer_of(const fmt_model *m, const fmt_driver **w, fmt_err *e)
{
	char names[256] = "", *at = names;
	*w = fmt_driver_set_writer(m->driver);
	if (*w)
		return FMT_OK;
	for (const fmt_driver *const *d = fmt_drivers(); *d && at < names + sizeof names - 64; d++)
		if ((*d)->plan_shards && (*d)->write_sharded)
			at += snprintf(at, (size_t)(names + sizeof names - at), "%s%s", at == names ? "" : ", ", (*d)->name);
	return fmt_fail(e, FMT_UNSUPPORTED, "%s files cannot be sharded (these can: %s)", m->driver->name, names);
}

/* "GGUF" for an option only some formats take: the names of the drivers that honour cap. */
static void drivers_with(unsigned cap, char *buf, size_t n)
{
	size_t used = 0;
	buf[0] = '\0';
	for (const fmt_driver *const *d = fmt_drivers(); *d && used + 1 < n; d++) {
		if (!((*d)->shard_limits & cap))
			continue;
		if (used)
			used += (size_t)snprintf(buf + used, n - used, ", ");
		for (const char *c = (*d)->name; *c && used + 1 < n; c++)
			buf[used++] = (char)toupper((unsigned char)*c);
		buf[used] = '\0';
	}
}

/* 5000000000 as "5GB", 2^31 as "2GiB" (sizes as fmt_parse_size reads them). */
static void size_text(uint64_t v, char *buf, size_t n)
{
	static const struct { uint64_t unit; const char *name; } units[] = {
		{ 1000000000000ull, "TB" }, { 1ull << 40, "TiB" }, { 1000000000ull, "GB" }, { 1ull << 30, "GiB" },
		{ 1000000ull, "MB" }, { 1ull << 20, "MiB" }, { 1000ull, "KB" }, { 1ull << 10, "KiB" },
	};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (v >= units[i].unit && v % units[i].unit == 0) {
			snprintf(buf, n, "%llu%s", (unsigned long long)(v / units[i].unit), units[i].name);
			return;
		}
	}
	snprintf(buf, n, "%llu", (unsigned long long)v);
}

void split_defaults_text(char *buf, size_t n)
{
	size_t used = 0;
	buf[0] = '\0';
	for (const fmt_driver *const *d = fmt_drivers(); *d && used < n; d++) {
		char limit[32];
		if (!(*d)->plan_shards || !(*d)->write_sharded)
			continue;
		if ((*d)->default_shard_bytes)
			size_text((*d)->default_shard_bytes, limit, sizeof limit);
		else if ((*d)->default_shard_tensors)
			snprintf(limit, sizeof limit, "%llu tensors", (unsigned long long)(*d)->default_shard_tensors);
		else
			snprintf(limit, sizeof limit, "no limit");
		used += (size_t)snprintf(buf + used, n - used, "%s%s %s", used ? ", " : "", (*d)->name, limit);
	}
}

void empty_first_text(char *buf, size_t n)
{
	char names[128];
	drivers_with(FMT_SHARD_EMPTY_FIRST, names, sizeof names);
	snprintf(buf, n, " (%s)", names);
}

static fmt_kind refuse_option(const fmt_driver *w, const char *option, unsigned cap, fmt_err *e)
{
	char names[128];
	drivers_with(cap, names, sizeof names);
	return fmt_fail(e, FMT_USAGE, "%s is for %s only (this is %s)", option, names, w->name);
}

fmt_kind split_limits(const fmt_driver *w, const shard_opts *o, fmt_shard_limits *l, fmt_err *e)
{
	memset(l, 0, sizeof *l);
	if (o->no_tensor_first_split && !(w->shard_limits & FMT_SHARD_EMPTY_FIRST))
		return refuse_option(w, "--no-tensor-first-split", FMT_SHARD_EMPTY_FIRST, e);
	if (o->max_tensors && !(w->shard_limits & FMT_SHARD_BY_TENSORS))
		return refuse_option(w, "--max-tensors", FMT_SHARD_BY_TENSORS, e);
	if (o->max_size && !(w->shard_limits & FMT_SHARD_BY_BYTES))
		return refuse_option(w, "--max-size", FMT_SHARD_BY_BYTES, e);
	l->max_bytes = o->max_size;
	l->max_tensors = o->max_tensors;
	l->empty_first = o->no_tensor_first_split;
	if (!l->max_bytes && !l->max_tensors) {
		l->max_bytes = w->default_shard_bytes;
		l->max_tensors = w->default_shard_tensors;
	}
	return FMT_OK;
}

char *default_prefix(const char *input)
{
	size_t n = strlen(input);
	size_t base = (size_t)(fmt_base_name(input) - input);
	const fmt_driver *d = fmt_driver_by_extension(input);
	size_t ext = d ? strlen(d->extension) : 0;
	if (ext && n - ext > base) {
		n -= ext;
	} else {
		const char *dot = memrchr(input + base, '.', n - base);
		if (dot && dot > input + base)
			n = (size_t)(dot - input);
	}
	size_t suffix = fmt_shard_name_suffix(input + base, n - base, NULL, NULL);
	if (suffix && n - suffix > base)
		n -= suffix;
	return strndup(input, n);
}
