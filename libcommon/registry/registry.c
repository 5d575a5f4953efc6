/* The registry: every model and table driver in one list, and the one lookup that finds a
 * format by name, by extension or by content. A new format is its own folder plus one line in
 * FMT_FORMATS below. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "fmt/io.h"
#include "fmt/registry.h"
#include "fmt/strbuf.h"
#include "fmt/table.h"

/* In probe order; the order matters only on equal scores (more specific formats first, a model
 * driver before a table driver), and is the order in which lists of formats are shown. */
#define FMT_FORMATS(X, TABLE) \
	X(fmt_driver_safetensors) \
	X(fmt_driver_st_index) \
	X(fmt_driver_gguf) \
	X(fmt_driver_apsim) \
	X(fmt_driver_apsim_index) \
	X(fmt_driver_apr) \
	X(fmt_driver_nk) \
	X(fmt_driver_onnx) \
	/* a new driver: one X(fmt_driver_NAME) \ line above this one */ \
	TABLE(fmt_table_driver_ald) \
	TABLE(fmt_table_driver_arrow) \
	TABLE(fmt_table_driver_arrow_stream) \
	TABLE(fmt_table_driver_jsonl) \
	TABLE(fmt_table_driver_csv) \
	TABLE(fmt_table_driver_parquet) \
	/* a new table driver: one TABLE(fmt_table_driver_NAME) \ line above this one */

#define DECLARE_MODEL(d) extern const fmt_driver d;
#define DECLARE_TABLE(d) extern const fmt_table_driver d;
#define POINT_TO(d) &d,
#define SKIP(d)
#define COUNT(d) +1
FMT_FORMATS(DECLARE_MODEL, DECLARE_TABLE)

/* Drivers of each kind that may be added at run time (fmt_format_register). */
#define EXTRA_DRIVERS 8
enum { BUILTIN_MODELS = 0 FMT_FORMATS(COUNT, SKIP), BUILTIN_TABLES = 0 FMT_FORMATS(SKIP, COUNT) };

/* The list, kept as its model drivers then its table drivers (the order of FMT_FORMATS, each
 * kind's drivers added at run time after its own): fmt_drivers and fmt_table_drivers hand these
 * out as they are, NULL-terminated. */
static const fmt_driver *models[BUILTIN_MODELS + EXTRA_DRIVERS + 1] = { FMT_FORMATS(POINT_TO, SKIP) };
static const fmt_table_driver *tables[BUILTIN_TABLES + EXTRA_DRIVERS + 1] = { FMT_FORMATS(SKIP, POINT_TO) };
static size_t n_models = BUILTIN_MODELS, n_tables = BUILTIN_TABLES;

/* The i-th format of the list; none (both NULL) past its end. */
static fmt_format format_at(size_t i)
{
	if (i < n_models)
		return (fmt_format){ .model = models[i] };
	if (i - n_models < n_tables)
		return (fmt_format){ .table = tables[i - n_models] };
	return (fmt_format){ 0 };
}

#define EACH_FORMAT(f, i) for (size_t i = 0; ((f) = format_at(i)).model || (f).table; i++)

static unsigned kind_of(fmt_format f)
{
	return f.model ? FMT_FORMAT_MODEL : FMT_FORMAT_TABLE;
}

const char *fmt_format_name(fmt_format f)
{
	return f.model ? f.model->name : f.table ? f.table->name : NULL;
}

const fmt_driver *const *fmt_drivers(void)
{
	return models;
}

const fmt_table_driver *const *fmt_table_drivers(void)
{
	return tables;
}

fmt_kind fmt_format_register(fmt_format f, fmt_err *e)
{
	if (!f.model == !f.table)
		return fmt_fail(e, FMT_INTERNAL, "a registry entry is a model or a table driver, not both or none");
	if (f.model ? n_models >= BUILTIN_MODELS + EXTRA_DRIVERS : n_tables >= BUILTIN_TABLES + EXTRA_DRIVERS)
		return fmt_fail(e, FMT_INTERNAL, "no room to register %s %s", f.model ? "driver" : "table driver",
				fmt_format_name(f));
	if (f.model)
		models[n_models++] = f.model;
	else
		tables[n_tables++] = f.table;
	return FMT_OK;
}

fmt_kind fmt_driver_register(const fmt_driver *d, fmt_err *e)
{
	return fmt_format_register((fmt_format){ .model = d }, e);
}

fmt_kind fmt_table_driver_register(const fmt_table_driver *d, fmt_err *e)
{
	return fmt_format_register((fmt_format){ .table = d }, e);
}

/* ---- the lookup ---- */

fmt_format fmt_format_by_name(const char *name, unsigned kinds)
{
	fmt_format f;
	EACH_FORMAT(f, i)
		if ((kind_of(f) & kinds) && strcasecmp(fmt_format_name(f), name) == 0)
			return f;
	return (fmt_format){ 0 };
}

static int answers_to(fmt_format f, const char *path)
{
	const char *ext = f.model ? f.model->extension : f.table->extension;
	if (ext && fmt_ends_with_nocase(path, ext))
		return 1;
	for (const char *const *x = f.table ? f.table->more_extensions : NULL; x && *x; x++)
		if (fmt_ends_with_nocase(path, *x))
			return 1;
	return 0;
}

fmt_format fmt_format_by_extension(const char *path, unsigned kinds)
{
	fmt_format f;
	EACH_FORMAT(f, i)
		if ((kind_of(f) & kinds) && answers_to(f, path))
			return f;
	return (fmt_format){ 0 };
}

/* How sure f is that s (head: its first n bytes; size bytes in all) is its format: a model
 * driver whose probe says 0 is asked its probe_source too, when there is a source s. */
static int score_of(fmt_format f, fmt_source *s, const uint8_t *head, size_t n, uint64_t size)
{
	if (f.table)
		return f.table->probe(head, n, size);
	int v = f.model->probe(head, n, size);
	if (v != 0 || !f.model->probe_source || !s)
		return v;
	/* a stream keeps the bytes it asks for only when its head could begin such a file: never
	 * the whole of it, which may not end */
	fmt_err e;
	size_t want = s->sequential && f.model->probe_wants_source ? f.model->probe_wants_source(head, n) : 0;
	if (s->sequential && (want == 0 || fmt_source_keep(s, want, &e) != FMT_OK))
		return 0;
	return f.model->probe_source(s);
}

static fmt_format best_probe(fmt_source *s, const uint8_t *head, size_t n, uint64_t size, unsigned kinds,
			     int *best_score)
{
	fmt_format f, best = { 0 };
	int best_v = 0;
	EACH_FORMAT(f, i) {
		if (!(kind_of(f) & kinds))
			continue;
		int v = score_of(f, s, head, n, size);
		if (v > best_v) {
			best = f;
			best_v = v;
		}
	}
	if (best_score)
		*best_score = best_v;
	return best;
}

fmt_format fmt_format_probe(fmt_source *s, const uint8_t *head, size_t n, unsigned kinds, int *best_score)
{
	return best_probe(s, head, n, s->size, kinds, best_score);
}

void fmt_probe_stream_init(fmt_probe_stream *ps, uint64_t size)
{
	memset(ps, 0, sizeof *ps);
	ps->size = size;
	ps->want = size < FMT_PROBE_BYTES ? (size_t)size : FMT_PROBE_BYTES;
}

void fmt_probe_stream_free(fmt_probe_stream *ps)
{
	free(ps->kept);
	ps->kept = NULL;
	ps->n = 0;
}

/* How many first bytes the model drivers whose probe says 0 to head want for their
 * probe_source (probe_wants_source), at most size; n when none wants more. */
static size_t head_wants(const uint8_t *head, size_t n, uint64_t size)
{
	fmt_format f;
	size_t most = n;
	EACH_FORMAT(f, i) {
		if (!f.model || !f.model->probe_source || !f.model->probe_wants_source || f.model->probe(head, n, size))
			continue;
		size_t w = f.model->probe_wants_source(head, n);
		if (w > most)
			most = w;
	}
	return most < size ? most : (size_t)size;
}

fmt_kind fmt_probe_stream_add(fmt_probe_stream *ps, const void *bytes, size_t n, fmt_err *e)
{
	const uint8_t *p = bytes;
	while (n > 0 && ps->n < ps->want) {
		if (!ps->kept && !(ps->kept = malloc(ps->want)))
			return fmt_fail(e, FMT_IO, "out of memory");
		size_t take = n < ps->want - ps->n ? n : ps->want - ps->n;
		memcpy(ps->kept + ps->n, p, take);
		ps->n += take;
		p += take;
		n -= take;
		if (ps->n < ps->want || ps->asked)
			continue;
		/* the first FMT_PROBE_BYTES are in: may a driver's mark lie further? */
		ps->asked = 1;
		size_t more = head_wants(ps->kept, ps->n, ps->size);
		uint8_t *grown = more > ps->want ? realloc(ps->kept, more) : ps->kept;
		if (!grown)
			return fmt_fail(e, FMT_IO, "out of memory");
		ps->kept = grown;
		ps->want = more;
	}
	return FMT_OK;
}

fmt_format fmt_probe_stream_format(fmt_probe_stream *ps, unsigned kinds, int *best_score)
{
	static const uint8_t none[1];
	size_t head = ps->n < FMT_PROBE_BYTES ? ps->n : FMT_PROBE_BYTES;
	fmt_format f;
	fmt_source s;
	fmt_err e;
	if (ps->n <= FMT_PROBE_BYTES || fmt_source_adopt_memory(&s, "member", ps->kept, ps->n, &e) != FMT_OK) {
		f = best_probe(NULL, ps->kept ? ps->kept : none, head, ps->size, kinds, best_score);
		fmt_probe_stream_free(ps);
		return f;
	}
	/* probe_source reads the bytes kept, a source of their length (its mark lies within) */
	ps->kept = NULL;
	ps->n = 0;
	f = best_probe(&s, s.buf, head, ps->size, kinds, best_score);
	fmt_source_close(&s);
	return f;
}

const fmt_driver *fmt_driver_by_name(const char *name)
{
	return fmt_format_by_name(name, FMT_FORMAT_MODEL).model;
}

const fmt_table_driver *fmt_table_driver_by_name(const char *name)
{
	return fmt_format_by_name(name, FMT_FORMAT_TABLE).table;
}

const fmt_driver *fmt_driver_by_extension(const char *path)
{
	return fmt_format_by_extension(path, FMT_FORMAT_MODEL).model;
}

const fmt_table_driver *fmt_table_driver_by_extension(const char *path)
{
	return fmt_format_by_extension(path, FMT_FORMAT_TABLE).table;
}

const fmt_driver *fmt_driver_probe(fmt_source *src, const uint8_t *head, size_t n, int *score)
{
	return fmt_format_probe(src, head, n, FMT_FORMAT_MODEL, score).model;
}

/* ---- lists of names, for messages and help ---- */

static int any_format(fmt_format f)
{
	(void)f;
	return 1;
}

static int writes(fmt_format f)
{
	return f.model ? f.model->write != NULL : f.table->write != NULL;
}

/* writes, and the formats written only from a network (.nk from ONNX) */
static int makes_files(fmt_format f)
{
	return f.model ? fmt_driver_writes(f.model) : f.table->write != NULL;
}

static int signs_in_place(fmt_format f)
{
	return f.model && f.model->sign_in_place;
}

static int compresses(fmt_format f)
{
	return f.model && f.model->compresses && f.model->write;
}

/* The names of the formats of kinds that pass keep, in registry order: "a, b, c", or with
 * last = " or ", "a, b or c". */
#define LISTED_MAX 64   /* formats named in one list (the registry holds fewer) */
static void list_names(char *buf, size_t n, unsigned kinds, int (*keep)(fmt_format), const char *last)
{
	const char *names[LISTED_MAX];
	size_t count = 0;
	fmt_format f;
	EACH_FORMAT(f, i)
		if ((kind_of(f) & kinds) && keep(f) && count < LISTED_MAX)
			names[count++] = fmt_format_name(f);
	fmt_join_words(names, count, last, buf, n);
}

void fmt_driver_names(char *buf, size_t n)
{
	list_names(buf, n, FMT_FORMAT_MODEL, any_format, ", ");
}

void fmt_format_names(char *buf, size_t n)
{
	list_names(buf, n, FMT_FORMAT_ANY, any_format, ", ");
}

void fmt_driver_writer_names(char *buf, size_t n)
{
	list_names(buf, n, FMT_FORMAT_MODEL, writes, " or ");
}

void fmt_writer_names(char *buf, size_t n)
{
	list_names(buf, n, FMT_FORMAT_ANY, writes, " or ");
}

void fmt_output_names(char *buf, size_t n)
{
	list_names(buf, n, FMT_FORMAT_ANY, makes_files, " or ");
}

/* The name list_names(kinds, keep) would list that typed most likely meant, or NULL. */
static const char *nearest_name(const char *typed, unsigned kinds, int (*keep)(fmt_format))
{
	fmt_nearest near;
	fmt_format f;
	fmt_nearest_init(&near, typed);
	EACH_FORMAT(f, i)
		if ((kind_of(f) & kinds) && keep(f))
			fmt_nearest_offer(&near, fmt_format_name(f));
	return fmt_nearest_best(&near);
}

const char *fmt_format_nearest(const char *typed)
{
	return nearest_name(typed, FMT_FORMAT_ANY, any_format);
}

fmt_kind fmt_format_option_check(const char *typed, fmt_err *e)
{
	fmt_format f = fmt_format_by_name(typed, FMT_FORMAT_ANY);
	if (f.model || f.table)
		return FMT_OK;
	char names[512], not_word[160];
	fmt_format_names(names, sizeof names);
	return fmt_fail(e, FMT_USAGE, "--format takes %s (%s)", names,
			fmt_not_word(not_word, sizeof not_word, typed, fmt_format_nearest(typed)));
}

const char *fmt_writer_nearest(const char *typed)
{
	return nearest_name(typed, FMT_FORMAT_ANY, writes);
}

const char *fmt_output_nearest(const char *typed)
{
	return nearest_name(typed, FMT_FORMAT_ANY, makes_files);
}

const char *fmt_table_driver_nearest(const char *typed)
{
	return nearest_name(typed, FMT_FORMAT_TABLE, any_format);
}

void fmt_table_driver_names(char *buf, size_t n)
{
	list_names(buf, n, FMT_FORMAT_TABLE, any_format, " or ");
}

void fmt_table_driver_words(char *buf, size_t n)
{
	const char *names[LISTED_MAX];
	size_t count = 0;
	for (const fmt_table_driver *const *d = fmt_table_drivers(); *d && count < LISTED_MAX; d++)
		names[count++] = (*d)->name;
	fmt_join_sep(names, count, " ", " ", buf, n);
}

void fmt_driver_signing_names(char *buf, size_t n)
{
	list_names(buf, n, FMT_FORMAT_MODEL, signs_in_place, ", ");
}

static int listed(const char *const *names, size_t count, const char *name)
{
	for (size_t i = 0; i < count; i++)
		if (strcmp(names[i], name) == 0)
			return 1;
	return 0;
}

void fmt_driver_arch_words(char *buf, size_t n)
{
	const char *names[LISTED_MAX];
	size_t count = 0;
	for (size_t i = 0; models[i]; i++)
		for (const char *const *a = models[i]->archs; a && *a && count < LISTED_MAX; a++)
			if (!listed(names, count, *a))
				names[count++] = *a;
	fmt_join_sep(names, count, " ", " ", buf, n);
}

size_t fmt_driver_dtype_mixes(fmt_drvopt_value *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; models[i]; i++) {
		if (!models[i]->write || !models[i]->dtype_mixes)
			continue;
		fmt_drvopt_value own[64];
		size_t got = models[i]->dtype_mixes(own, sizeof own / sizeof own[0]);
		for (size_t j = 0; j < got && n < max; j++) {
			size_t k = 0;
			while (k < n && strcasecmp(out[k].word, own[j].word) != 0)
				k++;
			if (k == n)
				out[n++] = own[j];
		}
	}
	return n;
}

const fmt_driver *fmt_driver_with_mix(const char *name)
{
	for (size_t i = 0; models[i]; i++) {
		if (!models[i]->write || !models[i]->dtype_mixes)
			continue;
		fmt_drvopt_value own[64];
		size_t got = models[i]->dtype_mixes(own, sizeof own / sizeof own[0]);
		for (size_t j = 0; j < got; j++)
			if (strcasecmp(own[j].word, name) == 0)
				return models[i];
	}
	return NULL;
}

const fmt_driver *fmt_driver_with_alias(const char *name)
{
	for (size_t i = 0; models[i]; i++)
		if (models[i]->write && models[i]->dtype_alias && models[i]->dtype_alias(name))
			return models[i];
	return NULL;
}

/* ---- questions about every model driver ---- */

const fmt_driver *fmt_driver_with(unsigned caps)
{
	for (size_t i = 0; models[i]; i++)
		if (models[i]->write && fmt_driver_can(models[i], caps))
			return models[i];
	return NULL;
}

const fmt_driver *fmt_driver_holding(fmt_dtype t)
{
	for (size_t i = 0; models[i]; i++)
		if (models[i]->write && fmt_driver_holds_dtype(models[i], t))
			return models[i];
	return NULL;
}

fmt_kind fmt_codec_parse(const fmt_driver *d, const char *spec, fmt_codec *codec, int *level, fmt_err *e)
{
	static const fmt_codec_name codec_names[] = { { "none", 0 }, { "lz4", 12 }, { "zstd", 19 } };
	static const fmt_codec codecs[] = { FMT_CODEC_NONE, FMT_CODEC_LZ4, FMT_CODEC_ZSTD };
	*level = 0;
	if (!d->compresses) {
		if (strcmp(spec, "none") == 0) {
			*codec = FMT_CODEC_NONE;
			return FMT_OK;
		}
		char names[256];
		list_names(names, sizeof names, FMT_FORMAT_MODEL, compresses, ", ");
		return fmt_fail(e, FMT_USAGE, "--compression: %s output is not compressed (only none; formats that "
				"compress: %s, ald)", d->name, names);
	}
	int i = fmt_codec_name_parse(spec, codec_names, sizeof codec_names / sizeof codec_names[0], level);
	if (i >= 0) {
		*codec = codecs[i];
		return FMT_OK;
	}
	*level = 0;
	return fmt_fail(e, FMT_USAGE, "--compression takes none, lz4[:1-12], zstd[:1-19] or zstd-max for %s output",
			d->name);
}
