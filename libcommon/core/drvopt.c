/* The values of the options drivers declare (fmt/drvopt.h), kept per driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/drvopt.h"
#include "fmt/strbuf.h"
#include "fmt/io.h"
#include "fmt/tree_budget.h"

static fmt_drvopt_set *set_of(const fmt_drvopt_sets *s, const fmt_drvopts *of)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (s->set[i].of == of)
			return (fmt_drvopt_set *)&s->set[i];
	return NULL;
}

int fmt_drvopt_parse(fmt_drvopt_sets *s, const fmt_drvopts *of, size_t i, const char *arg, fmt_err *e)
{
	fmt_drvopt_set *set = set_of(s, of);
	if (!set) {
		if (s->n == FMT_DRVOPT_MAX_SETS || i >= 64)
			return fmt_fail(e, FMT_INTERNAL, "too many driver options"), -1;
		set = &s->set[s->n];
		if (!(set->values = calloc(1, of->size ? of->size : 1)))
			return fmt_fail(e, FMT_IO, "out of memory"), -1;
		set->of = of;
		set->given = 0;
		s->n++;
	}
	int r = of->list[i].parse(set->values, arg, e);
	if (r == FMT_DRVOPT_GIVEN)
		set->given |= UINT64_C(1) << i;
	return r < 0 ? -1 : 0;
}

const void *fmt_drvopt_values(const fmt_drvopt_sets *s, const fmt_drvopts *of)
{
	const fmt_drvopt_set *set = set_of(s, of);
	return set ? set->values : NULL;
}

fmt_kind fmt_drvopt_load(fmt_drvopt_sets *s, fmt_err *e)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->set[i].of->load && s->set[i].of->load(s->set[i].values, e) != FMT_OK)
			return e->kind;
	return FMT_OK;
}

void fmt_drvopt_unload(fmt_drvopt_sets *s)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (s->set[i].of->free)
			s->set[i].of->free(s->set[i].values);
}

void fmt_drvopt_sets_free(fmt_drvopt_sets *s)
{
	fmt_drvopt_unload(s);
	for (size_t i = 0; i < s->n; i++)
		free(s->set[i].values);
	s->n = 0;
}

int fmt_drvopt_word(const fmt_drvopt_value *values, const char *name, const char *arg, fmt_err *e)
{
	char list[256], not_word[160];
	size_t n = 0, used = 0;
	fmt_nearest near;
	fmt_nearest_init(&near, arg);
	for (; values[n].word; n++) {
		if (strcmp(values[n].word, arg) == 0)
			return (int)n;
		fmt_nearest_offer(&near, values[n].word);
	}
	list[0] = '\0';
	for (size_t i = 0; i < n && used < sizeof list; i++)
		used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ",
					 values[i].word);
	return fmt_fail(e, FMT_USAGE, "--%s takes %s (%s)", name, list,
			fmt_not_word(not_word, sizeof not_word, arg, fmt_nearest_best(&near))), -1;
}

int fmt_codec_name_parse(const char *spec, const fmt_codec_name *codecs, size_t n, int *level)
{
	int max_alias = strcmp(spec, "zstd-max") == 0;
	const char *colon = max_alias ? NULL : strchr(spec, ':');
	size_t len = max_alias ? 4 : colon ? (size_t)(colon - spec) : strlen(spec);
	*level = max_alias ? 19 : 0;
	for (size_t i = 0; i < n; i++) {
		if (strlen(codecs[i].name) != len || strncmp(codecs[i].name, spec, len) != 0)
			continue;
		if (!colon)
			return (int)i;
		char *end;
		long v = strtol(colon + 1, &end, 10);
		if (!codecs[i].max || !colon[1] || *end || v < 1 || v > codecs[i].max)
			return -1;
		*level = (int)v;
		return (int)i;
	}
	return -1;
}

fmt_kind fmt_drvopt_load_json(const char *path, const char *what, json_t **out, fmt_err *e)
{
	char *text;
	size_t n;
	json_error_t je;
	fmt_kind k = fmt_read_file(path, 16u << 20, &text, &n, e);
	if (k != FMT_OK)
		return k;
	*out = fmt_json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!*out || !json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return fmt_fail_file(e, FMT_USAGE, path, "%s: not a JSON object (line %d: %s)", what, je.line,
				     *je.text ? je.text : "an object is expected");
	}
	return FMT_OK;
}
