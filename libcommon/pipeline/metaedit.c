/* The user's metadata edits, in the order they apply after the input's keys: --arch, --unset
 * GLOB, --metadata-from FILE [--keys GLOB], --set-from FILE.json, --set KEY[:TYPE]=VALUE,
 * --override-kv KEY=TYPE:VALUE. Used by
 * conversions (plan.c) and by in-place edits (edit.c). */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/table.h"
#include "pipeline_internal.h"

static int in_list(const char *key, const char *const *globs)
{
	for (const char *const *g = globs; g && *g; g++)
		if (fnmatch(*g, key, 0) == 0)
			return 1;
	return 0;
}

/* The driver whose files have an architecture key: whom "--arch needs X output" names. */
static const fmt_driver *first_with_arch_key(void)
{
	for (const fmt_driver *const *d = fmt_drivers(); *d; d++)
		if ((*d)->arch_key && (*d)->write)
			return *d;
	return NULL;
}

/* --arch: the architecture key, first among the keys. */
static fmt_kind set_arch(fmt_model *m, const fmt_driver *tg, const char *arch, fmt_err *e)
{
	if (!tg->arch_key) {
		const fmt_driver *d = first_with_arch_key();
		return fmt_fail(e, FMT_USAGE, "--arch needs %s output", d ? d->title : "another");
	}
	fmt_value v = fmt_value_str(arch, strlen(arch));
	fmt_kind k = v.v.str.ptr ? fmt_model_put_meta(m, tg->arch_key, &v, e) : fmt_fail(e, FMT_IO, "out of memory");
	fmt_value_free(&v);
	for (size_t i = 0; k == FMT_OK && i < m->n_meta; i++) {
		if (strcmp(m->meta[i].key, tg->arch_key) == 0) {
			fmt_meta entry = m->meta[i];
			memmove(&m->meta[1], &m->meta[0], i * sizeof entry);
			m->meta[0] = entry;
			break;
		}
	}
	return k;
}

typedef struct glob_list {
	const char *const *globs;
	size_t n;
} glob_list;

static int matches_a_glob(const char *key, const void *ctx)
{
	const glob_list *g = ctx;
	return fmt_name_selected(key, g->globs, g->n, NULL, 0);
}

fmt_kind fmt_meta_unset(fmt_model *m, const fmt_driver *tg, const char *const *globs, size_t n, fmt_err *e)
{
	for (size_t g = 0; g < n; g++) {
		size_t matched = 0;
		for (size_t i = 0; i < m->n_meta; i++) {
			if (fnmatch(globs[g], m->meta[i].key, 0) != 0)
				continue;
			if (in_list(m->meta[i].key, tg->required_keys))
				return fmt_fail(e, FMT_USAGE, "--unset %s: %s is required in %s files", globs[g],
						m->meta[i].key, tg->title);
			matched++;
		}
		if (!matched)
			return fmt_fail(e, FMT_USAGE, "--unset %s matches no metadata key", globs[g]);
	}
	glob_list g = { globs, n };
	fmt_model_remove_metas(m, matches_a_glob, &g);
	return FMT_OK;
}

/* A key that describes the file it is in (its alignment, its place in a split set, its
 * tensors' types): not copied to another file. */
static int describes_its_file(const fmt_driver *d, const char *key)
{
	return in_list(key, d->layout_keys) || in_list(key, d->derived_keys);
}

/* The keys of src that --keys chooses (all when none is given) and that the output can hold. */
static fmt_kind keys_to_copy(const fmt_model *src, const char *path, const char *const *keys, size_t n_keys,
			     int strings_only, const fmt_meta **chosen, size_t *n, fmt_err *e)
{
	*n = 0;
	for (size_t i = 0; i < src->n_meta; i++) {
		const fmt_meta *mm = &src->meta[i];
		if (describes_its_file(src->driver, mm->key) || !fmt_name_selected(mm->key, keys, n_keys, NULL, 0))
			continue;
		if (strings_only && mm->val.type != FMT_V_STR)
			return fmt_fail(e, FMT_USAGE, "--metadata-from %s: %s is %s %s; the output's metadata holds "
					"strings only (choose keys with --keys)", path, mm->key,
					mm->val.type == FMT_V_ARRAY ? "an" : "a", fmt_vtype_name(mm->val.type));
		chosen[(*n)++] = mm;
	}
	return FMT_OK;
}

static fmt_kind copy_keys(fmt_model *m, const fmt_model *src, const char *path, const char *const *keys,
			  size_t n_keys, int strings_only, fmt_err *e)
{
	size_t n = 0;
	const fmt_meta **chosen = malloc((src->n_meta ? src->n_meta : 1) * sizeof *chosen);
	fmt_kind k = chosen ? keys_to_copy(src, path, keys, n_keys, strings_only, chosen, &n, e)
			    : fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		k = fmt_model_put_metas(m, chosen, n, e);
	free(chosen);
	if (k != FMT_OK)
		return k;
	for (size_t g = 0; g < n_keys; g++) {
		size_t matched = 0;
		for (size_t i = 0; i < src->n_meta; i++)
			matched += !describes_its_file(src->driver, src->meta[i].key) &&
				   fnmatch(keys[g], src->meta[i].key, 0) == 0;
		if (!matched)
			return fmt_fail(e, FMT_USAGE, "--keys %s matches no key of %s that can be copied", keys[g], path);
	}
	return FMT_OK;
}

fmt_kind fmt_meta_copy_from(fmt_model *m, const char *path, const char *const *keys, size_t n_keys,
			    int strings_only, fmt_err *e)
{
	fmt_model src;
	fmt_kind k = fmt_model_open(&src, path, NULL, e);
	if (k != FMT_OK) {
		fmt_err_prefix(e, "--metadata-from");
		return k;
	}
	k = copy_keys(m, &src, path, keys, n_keys, strings_only, e);
	fmt_model_free(&src);
	return k;
}

/* A key the format requires (general.architecture) set to "" is as good as unset. */
static fmt_kind required_not_empty(const fmt_model *m, const fmt_driver *tg, fmt_err *e)
{
	for (size_t i = 0; i < m->n_meta; i++)
		if (in_list(m->meta[i].key, tg->required_keys) && m->meta[i].val.type == FMT_V_STR &&
		    m->meta[i].val.v.str.len == 0)
			return fmt_fail(e, FMT_USAGE, "%s is required in %s files: it cannot be empty", m->meta[i].key,
					tg->title);
	return FMT_OK;
}

fmt_kind fmt_meta_apply_user(fmt_model *m, const fmt_convert_opts *o, const fmt_driver *tg, fmt_err *e)
{
	int strings_only = !fmt_driver_can(tg, FMT_CAP_TYPED_META);
	fmt_kind k = FMT_OK;
	if (o->arch)
		k = set_arch(m, tg, o->arch, e);
	if (k == FMT_OK && o->n_unsets)
		k = fmt_meta_unset(m, tg, o->unsets, o->n_unsets, e);
	if (k == FMT_OK && o->metadata_from)
		k = fmt_meta_copy_from(m, o->metadata_from, o->keys, o->n_keys, strings_only, e);
	if (k == FMT_OK && o->set_from)
		k = fmt_setkv_apply_file(m, o->set_from, strings_only, e);
	for (size_t i = 0; k == FMT_OK && i < o->n_sets; i++)
		k = fmt_setkv_apply(m, o->sets[i], strings_only, e);
	for (size_t i = 0; k == FMT_OK && i < o->n_overrides; i++)
		k = fmt_setkv_override(m, o->overrides[i], strings_only, e);
	return k == FMT_OK ? required_not_empty(m, tg, e) : k;
}
