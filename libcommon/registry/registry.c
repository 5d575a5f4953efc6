/* The model drivers and the questions tools ask them. A new format is one line in
 * FMT_MODEL_DRIVERS below plus its own folder. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "fmt/minisign.h"
#include "fmt/registry.h"

/* In probe order; the order matters only on equal scores (more specific formats first), and
 * is the order in which lists of formats are shown. */
#define FMT_MODEL_DRIVERS(X) \
	X(fmt_driver_safetensors) \
	X(fmt_driver_st_index) \
	X(fmt_driver_gguf) \
	X(fmt_driver_apsim) \
	X(fmt_driver_apsim_index) \
	X(fmt_driver_apr) \
	X(fmt_driver_nk) \
	/* a new driver: one X(fmt_driver_NAME) \ line above this one */

#define DECLARE_DRIVER(d) extern const fmt_driver d;
#define POINT_TO_DRIVER(d) &d,
FMT_MODEL_DRIVERS(DECLARE_DRIVER)

#define EXTRA_DRIVERS 8
/* The built-in drivers, room for EXTRA_DRIVERS added at run time, and the NULL that ends it. */
static const fmt_driver *drivers[] = {
	FMT_MODEL_DRIVERS(POINT_TO_DRIVER)
	NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	NULL
};

const fmt_driver *const *fmt_drivers(void)
{
	return drivers;
}

const fmt_driver *fmt_driver_file_writer(const fmt_driver *d)
{
	return d && d->file_driver ? d->file_driver : d;
}

const fmt_driver *fmt_driver_set_writer(const fmt_driver *d)
{
	d = fmt_driver_file_writer(d);
	return d && d->plan_shards && d->write_sharded ? d : NULL;
}

fmt_kind fmt_driver_register(const fmt_driver *d, fmt_err *e)
{
	size_t n = 0;
	while (drivers[n])
		n++;
	if (n + 1 >= sizeof drivers / sizeof drivers[0])
		return fmt_fail(e, FMT_INTERNAL, "no room to register driver %s", d->name);
	drivers[n] = d;
	return FMT_OK;
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

/* Is word one of the space-separated words of list? */
static int has_word(const char *list, const char *word)
{
	size_t len = strlen(word);
	for (const char *p = list; (p = strstr(p, word)) != NULL; p += len)
		if ((p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0'))
			return 1;
	return 0;
}

void fmt_driver_arch_words(char *buf, size_t n)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; drivers[i]; i++)
		for (const char *const *a = drivers[i]->archs; a && *a && used < n; a++)
			if (!has_word(buf, *a))
				used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? " " : "", *a);
}

int fmt_driver_can(const fmt_driver *d, unsigned caps)
{
	return (d->caps & caps) == caps;
}

int fmt_driver_holds_dtype(const fmt_driver *d, fmt_dtype t)
{
	return d->holds_dtype ? d->holds_dtype(t) : fmt_dtype_get(t)->in_safetensors;
}

const fmt_driver *fmt_driver_with(unsigned caps)
{
	for (size_t i = 0; drivers[i]; i++)
		if (drivers[i]->write && fmt_driver_can(drivers[i], caps))
			return drivers[i];
	return NULL;
}

fmt_kind fmt_codec_parse(const fmt_driver *d, const char *spec, fmt_codec *codec, int *level, fmt_err *e)
{
	static const struct { const char *name; fmt_codec codec; int max; } codecs[] = {
		{ "none", FMT_CODEC_NONE, 0 }, { "lz4", FMT_CODEC_LZ4, 12 }, { "zstd", FMT_CODEC_ZSTD, 19 },
	};
	*level = 0;
	if (!d->compresses) {
		if (strcmp(spec, "none") == 0) {
			*codec = FMT_CODEC_NONE;
			return FMT_OK;
		}
		char names[256] = "";
		size_t used = 0;
		for (size_t i = 0; drivers[i] && used < sizeof names; i++)
			if (drivers[i]->compresses && drivers[i]->write)
				used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
							 drivers[i]->name);
		return fmt_fail(e, FMT_USAGE, "--compression: %s output is not compressed (only none; formats that "
				"compress: %s, ald)", d->name, names);
	}
	if (strcmp(spec, "zstd-max") == 0) {
		*codec = FMT_CODEC_ZSTD;
		*level = 19;
		return FMT_OK;
	}
	const char *colon = strchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
	for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++) {
		if (strlen(codecs[i].name) != n || strncmp(codecs[i].name, spec, n) != 0)
			continue;
		char *end;
		long v = colon ? strtol(colon + 1, &end, 10) : 0;
		if (colon && (!colon[1] || *end || v < 1 || v > codecs[i].max))
			break;
		*codec = codecs[i].codec;
		*level = (int)v;
		return FMT_OK;
	}
	return fmt_fail(e, FMT_USAGE, "--compression takes none, lz4[:1-12], zstd[:1-19] or zstd-max for %s output",
			d->name);
}

const fmt_driver *fmt_driver_holding(fmt_dtype t)
{
	for (size_t i = 0; drivers[i]; i++)
		if (drivers[i]->write && fmt_driver_holds_dtype(drivers[i], t))
			return drivers[i];
	return NULL;
}

void fmt_driver_writer_names(char *buf, size_t n)
{
	size_t used = 0, count = 0, total = 0;
	buf[0] = '\0';
	for (size_t i = 0; drivers[i]; i++)
		total += drivers[i]->write != NULL;
	for (size_t i = 0; drivers[i] && used < n; i++) {
		if (!drivers[i]->write)
			continue;
		const char *sep = count == 0 ? "" : count + 1 == total ? " or " : ", ";
		used += (size_t)snprintf(buf + used, n - used, "%s%s", sep, drivers[i]->name);
		count++;
	}
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

const fmt_driver *fmt_driver_probe(fmt_source *src, const uint8_t *head, size_t n, int *score)
{
	const fmt_driver *best = NULL;
	int best_score = 0;
	for (size_t i = 0; drivers[i]; i++) {
		int s = drivers[i]->probe(head, n, src->size);
		if (s == 0 && drivers[i]->probe_source)
			s = drivers[i]->probe_source(src);
		if (s > best_score) {
			best = drivers[i];
			best_score = s;
		}
	}
	if (!best && src->sequential) {
		/* A mark past the head (probe_source): read the whole input and ask again. */
		fmt_err e;
		if (fmt_source_make_whole(src, &e) == FMT_OK)
			return fmt_driver_probe(src, head, n, score);
	}
	if (score)
		*score = best_score;
	return best;
}

static const fmt_driver *probe_source(fmt_source *s, fmt_err *e)
{
	uint8_t head[FMT_PROBE_BYTES];
	size_t n = s->size < sizeof head ? (size_t)s->size : sizeof head;
	if (fmt_source_read(s, 0, head, n, e) != FMT_OK)
		return NULL;
	const fmt_driver *best = fmt_driver_probe(s, head, n, NULL);
	if (!best) {
		char names[512];
		fmt_driver_names(names, sizeof names);
		fmt_fail(e, FMT_INVALID_FORMAT, "unrecognised format (not one of: %s)", names);
	}
	return best;
}

fmt_kind fmt_model_open_source(fmt_model *m, fmt_source *src, const char *path,
			       const fmt_driver *forced, fmt_err *e)
{
	fmt_model_init(m);
	const fmt_driver *d = forced ? forced : probe_source(src, e);
	if (!d) {
		fmt_err_file(e, path);
		fmt_source_close(src);
		return e->kind;
	}
	m->path = strdup(path);
	fmt_kind k = m->path ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK && src->sequential && !d->streams)
		k = fmt_source_make_whole(src, e);
	if (k == FMT_OK)
		k = fmt_model_add_source(m, src, NULL, e);
	if (k != FMT_OK) {
		fmt_source_close(src);
		fmt_model_free(m);
		return k;
	}
	m->driver = d;
	m->close = d->close;
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
	return k == FMT_OK ? fmt_model_open_source(m, &src, path, forced, e) : k;
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

fmt_kind fmt_model_verify(fmt_model *m, const fmt_verify_opts *o, fmt_err *e)
{
	static const fmt_verify_opts none = { 0 };
	if (!o)
		o = &none;
	int hmac_unusable = o->keys.hmac && !fmt_driver_can(m->driver, FMT_CAP_SIGNATURES);
	int ed_unusable = o->keys.n_trusted && !fmt_driver_can(m->driver, FMT_CAP_ED25519);
	if (hmac_unusable || (ed_unusable && !o->signed_elsewhere)) {
		fmt_err_file(e, m->path);
		if (hmac_unusable)
			return fmt_fail(e, FMT_SIGNATURE, "a key was given but %s files carry no signature",
					m->driver->name);
		return fmt_fail(e, FMT_SIGNATURE, "not signed: %s files carry no embedded Ed25519 signature "
				"and there is no FILE.minisig beside it", m->driver->name);
	}
	fmt_verify_opts plain;
	if (ed_unusable) { /* checked by FILE.minisig: the driver checks the rest */
		plain = (fmt_verify_opts){ .threads = o->threads, .reads_follow = o->reads_follow,
					   .signer = o->signer };
		o = &plain;
	}
	if (!m->driver->verify)
		return FMT_OK;
	fmt_kind k = m->driver->verify(m, o, e);
	if (k != FMT_OK)
		fmt_err_file(e, m->path);
	return k;
}

fmt_kind fmt_verify_signature_block(const fmt_verify_opts *o, int is_signed, const uint8_t *pk,
				    const void *msg, size_t len, const uint8_t *sig, fmt_err *e)
{
	char id[FMT_MS_KEY_ID_HEX];
	if (!o->keys.n_trusted) {
		if (is_signed && o->signer)
			o->signer->unchecked = "ed25519";
		return FMT_OK;
	}
	if (!is_signed)
		return o->signed_elsewhere ? FMT_OK
					   : fmt_fail(e, FMT_SIGNATURE, "not signed: no signature block (flag bit 1) "
						      "and no FILE.minisig");
	fmt_kind k = fmt_trust_check_embedded(o->keys.trusted, o->keys.n_trusted, pk, msg, len, sig, id, e);
	if (k == FMT_OK && o->signer) {
		o->signer->kind = "ed25519";
		snprintf(o->signer->key_id, sizeof o->signer->key_id, "%s", id);
	}
	return k;
}

/* "apsim, apsim-index": the drivers that sign files in place. */
static void signing_names(char *buf, size_t n)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; drivers[i] && used < n; i++)
		if (drivers[i]->sign_in_place)
			used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "", drivers[i]->name);
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
		signing_names(names, sizeof names);
		fmt_err_file(e, path);
		return fmt_fail(e, FMT_USAGE, "%s files carry no signature (signed formats: %s)", d->name, names);
	}
	k = d->sign_in_place(path, keys, threads, e);
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}

fmt_kind fmt_model_verify_as_read(fmt_model *m, fmt_err *e)
{
	if (!m->driver || !m->driver->verify_as_read)
		return fmt_fail(e, FMT_UNSUPPORTED, "%s files are verified before they are read",
				m->driver ? m->driver->name : "these");
	return m->driver->verify_as_read(m, e);
}

int fmt_model_sequential(const fmt_model *m)
{
	for (size_t i = 0; i < m->n_sources; i++)
		if (m->sources[i].sequential)
			return 1;
	return 0;
}

const char *fmt_model_signature(const fmt_model *m)
{
	return m->driver && m->driver->signature ? m->driver->signature(m) : NULL;
}
