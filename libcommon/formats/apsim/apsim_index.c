/* Apsi shard sets (specs/apsim.md §7): NAME.apsim.index.json and its shards.
 *
 * Policy: the index must have metadata.format "apsi-model", a non-empty
 * metadata.shard_sha256, metadata.total_size (a non-negative integer), an optional
 * metadata.signature and weight_map; other keys are ignored. Shard names are plain names
 * (no '/', '\', NUL, "", ".", ".."). Syntax errors are InvalidFormat; every disagreement
 * between the index and the shards, or between shards, is SchemaMismatch (a missing shard
 * too). A shard's own errors name the shard file. The model's metadata and units are the
 * first shard's (all shards must agree); qtensors are the union; sources[0] is the index,
 * then the shards in the order shard_sha256 lists them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fmt/checked.h"
#include "fmt/json_text.h"
#include "fmt/nameset.h"
#include "fmt/safetensors.h"
#include "fmt/thread.h"
#include "fmt/meter.h"
#include "apsim_internal.h"
#include "fmt/tree_budget.h"

#define NM APSIM_NM

void fmt_apsim_index_free(fmt_apsim_index *ix)
{
	for (size_t i = 0; i < ix->n_files; i++)
		free(ix->files[i]);
	for (size_t i = 0; i < ix->n_tensors; i++) {
		free(ix->tensors[i]);
		free(ix->tensor_files[i]);
	}
	free(ix->files);
	free(ix->sha256);
	free(ix->tensors);
	free(ix->tensor_files);
	free(ix->signature);
	memset(ix, 0, sizeof *ix);
}

static fmt_kind parse_shard_sha(json_t *ss, fmt_apsim_index *ix, fmt_err *e)
{
	if (!json_is_object(ss) || json_object_size(ss) == 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "index metadata.shard_sha256 is not a non-empty object");
	size_t n = json_object_size(ss);
	ix->files = calloc(n, sizeof *ix->files);
	ix->sha256 = calloc(n, sizeof *ix->sha256);
	if (!ix->files || !ix->sha256)
		return fmt_fail(e, FMT_IO, "out of memory");
	const char *file;
	json_t *v;
	json_object_foreach(ss, file, v) {
		const char *why = fmt_unsafe_file_name(file, strlen(file));
		if (why)
			return fmt_fail(e, FMT_INVALID_FORMAT, "index shard name " NM " %s (expected a plain file name)", file, why);
		if (!json_is_string(v) || !fmt_apsim_hex64_ok(json_string_value(v), json_string_length(v)))
			return fmt_fail(e, FMT_INVALID_FORMAT, "index shard_sha256 for " NM " is not 64 lowercase hex digits", file);
		if (!(ix->files[ix->n_files] = strdup(file)))
			return fmt_fail(e, FMT_IO, "out of memory");
		memcpy(ix->sha256[ix->n_files], json_string_value(v), FMT_SHA256_HEX + 1);
		ix->n_files++;
	}
	return FMT_OK;
}

static fmt_kind parse_index_metadata(json_t *md, fmt_apsim_index *ix, fmt_err *e)
{
	if (!json_is_object(md))
		return fmt_fail(e, FMT_INVALID_FORMAT, "index has no \"metadata\" object");
	json_t *format = json_object_get(md, "format");
	if (!json_is_string(format) || strcmp(json_string_value(format), "apsi-model") != 0 ||
	    json_string_length(format) != 10)
		return fmt_fail(e, FMT_INVALID_FORMAT, "index metadata.format is not \"apsi-model\"");
	json_t *ts = json_object_get(md, "total_size");
	if (!json_is_integer(ts) || json_integer_value(ts) < 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "index metadata.total_size is not a non-negative integer");
	ix->total_size = (uint64_t)json_integer_value(ts);
	json_t *sig = json_object_get(md, "signature");
	if (sig) {
		if (!json_is_string(sig) || !fmt_apsim_signature_syntax_ok(json_string_value(sig), json_string_length(sig)))
			return fmt_fail(e, FMT_INVALID_FORMAT,
					"index metadata.signature is not 'hmac-sha256:<key-id>:<64 lowercase hex>' "
					"or 'ed25519:<key-id>:<base64>'");
		if (!(ix->signature = strdup(json_string_value(sig))))
			return fmt_fail(e, FMT_IO, "out of memory");
	}
	return parse_shard_sha(json_object_get(md, "shard_sha256"), ix, e);
}

/* The index being read and its shards' names, indexed (each weight_map entry's file looked for
 * among all the shards took 8 s for an index of 50,000). */
typedef struct weight_ctx {
	fmt_apsim_index *ix;
	fmt_nameset files;
} weight_ctx;

static fmt_kind add_tensor_file(void *ctx, const char *tensor, const char *file, fmt_err *e)
{
	weight_ctx *w = ctx;
	fmt_apsim_index *ix = w->ix;
	if (fmt_nameset_find(&w->files, file) < 0)
		return fmt_fail(e, FMT_SCHEMA, "weight_map puts " NM " in " NM ", which has no shard_sha256 entry", tensor,
				file);
	ix->tensors[ix->n_tensors] = strdup(tensor);
	ix->tensor_files[ix->n_tensors] = strdup(file);
	ix->n_tensors++;
	if (!ix->tensors[ix->n_tensors - 1] || !ix->tensor_files[ix->n_tensors - 1])
		return fmt_fail(e, FMT_IO, "out of memory");
	return FMT_OK;
}

static fmt_kind parse_weight_map(json_t *wm, fmt_apsim_index *ix, fmt_err *e)
{
	if (!json_is_object(wm))
		return fmt_fail(e, FMT_INVALID_FORMAT, "index has no \"weight_map\" object");
	size_t n = json_object_size(wm);
	ix->tensors = calloc(n ? n : 1, sizeof *ix->tensors);
	ix->tensor_files = calloc(n ? n : 1, sizeof *ix->tensor_files);
	if (!ix->tensors || !ix->tensor_files)
		return fmt_fail(e, FMT_IO, "out of memory");
	weight_ctx w = { ix, { 0 } };
	fmt_kind k = FMT_OK;
	for (size_t i = 0; i < ix->n_files && k == FMT_OK; i++)
		if (fmt_nameset_add(&w.files, ix->files[i]) < 0)
			k = fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		k = fmt_st_index_each_weight(wm, add_tensor_file, &w, e);
	fmt_nameset_free(&w.files);
	return k;
}

fmt_kind fmt_apsim_index_parse(const char *json, size_t len, fmt_apsim_index *ix, fmt_err *e)
{
	memset(ix, 0, sizeof *ix);
	if (fmt_apsim_json_too_deep(json, len, APSIM_MAX_DEPTH))
		return fmt_fail(e, FMT_INVALID_FORMAT, "index JSON is nested deeper than %d levels", APSIM_MAX_DEPTH);
	json_error_t je;
	json_t *root = fmt_json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root && fmt_json_nomem(&je))
		return fmt_fail_nomem(e, "the index");
	if (!root)
		return fmt_fail(e, FMT_INVALID_FORMAT, "index is not valid JSON at byte %d: %s", je.position, je.text);
	fmt_kind k = json_is_object(root) ? FMT_OK : fmt_fail(e, FMT_INVALID_FORMAT, "index is not a JSON object");
	if (k == FMT_OK)
		k = parse_index_metadata(json_object_get(root, "metadata"), ix, e);
	if (k == FMT_OK)
		k = parse_weight_map(json_object_get(root, "weight_map"), ix, e);
	json_decref(root);
	if (k != FMT_OK)
		fmt_apsim_index_free(ix);
	return k;
}

/* ---- open ---- */

static int ai_probe(const uint8_t *head, size_t n, uint64_t file_size)
{
	(void)file_size;
	size_t i = fmt_json_skip_ws((const char *)head, n, 0);
	if (i >= n || head[i] != '{' || !memmem(head, n, "\"apsi-model\"", 12))
		return 0;
	return memmem(head, n, "\"shard_sha256\"", 14) || memmem(head, n, "\"weight_map\"", 12) ? 85 : 0;
}

static fmt_kind open_shard(fmt_model *m, const char *dir, const char *file, apsim_file *f, fmt_err *e)
{
	char *path;
	int idx = -1;
	fmt_kind k = fmt_model_open_shard(m, dir, file, "the index", &idx, &path, e);
	if (k == FMT_OK)
		k = fmt_apsim_read_file(m, idx, f, e);
	if (k == FMT_OK && !f->has_shard)
		k = fmt_fail(e, FMT_SCHEMA, "shard " NM " has no 'shard' key in its __metadata__", file);
	if (k != FMT_OK && path)
		fmt_err_file(e, path);
	free(path);
	return k;
}

/* Put the shards in shard order: files[i] says i+1 of n. */
static fmt_kind order_shards(apsim_file *raw, char **names, size_t n, apsim_state *st, fmt_err *e)
{
	for (size_t i = 0; i < n; i++) {
		apsim_file *f = &raw[i];
		if (f->shard_n != n)
			return fmt_fail(e, FMT_SCHEMA, "shard " NM " says %u/%u, but the index lists %zu shards", names[i],
					(unsigned)f->shard_i, (unsigned)f->shard_n, n);
		size_t slot = f->shard_i - 1;
		if (st->shard_names[slot])
			return fmt_fail(e, FMT_SCHEMA, "shards " NM " and " NM " both say %u/%u", st->shard_names[slot], names[i],
					(unsigned)f->shard_i, (unsigned)f->shard_n);
		st->files[slot] = *f;
		memset(f, 0, sizeof *f);
		st->shard_names[slot] = names[i];
		names[i] = NULL;
	}
	return FMT_OK;
}

static fmt_kind check_same_keys(const apsim_state *st, fmt_err *e)
{
	const apsim_file *a = &st->files[0];
	for (size_t i = 1; i < st->n_files; i++) {
		const apsim_file *b = &st->files[i];
		const char *what = strcmp(a->units_text, b->units_text) ? "units"
				 : strcmp(a->metadata_text, b->metadata_text) ? "metadata"
				 : strcmp(a->apsi, b->apsi) ? "apsi" : NULL;
		if (what)
			return fmt_fail(e, FMT_SCHEMA, "shard " NM ": __metadata__ %s differs from shard 1 (" NM ")",
					st->shard_names[i], what, st->shard_names[0]);
	}
	return FMT_OK;
}

typedef struct name_ref {
	const char *name;
	size_t shard;
	int listed;               /* in weight_map */
} name_ref;

static int cmp_ref(const void *a, const void *b)
{
	return strcmp(((const name_ref *)a)->name, ((const name_ref *)b)->name);
}

static name_ref *find_ref(name_ref *refs, size_t n, const char *name)
{
	name_ref key = { name, 0, 0 };
	return bsearch(&key, refs, n, sizeof *refs, cmp_ref);
}

/* weight_map exactly the shards' tensors; total_size; unit names within the set. */
static fmt_kind check_contents(const fmt_model *m, const apsim_state *st, const fmt_apsim_index *ix, fmt_err *e)
{
	size_t n = m->n_tensors;
	name_ref *refs = malloc((n ? n : 1) * sizeof *refs);
	if (!refs)
		return fmt_fail(e, FMT_IO, "out of memory");
	uint64_t total = 0;
	fmt_kind k = FMT_OK;
	for (size_t s = 0; s < st->n_files; s++)
		for (size_t j = st->files[s].first_tensor; j < st->files[s].first_tensor + st->files[s].n_tensors; j++)
			refs[j] = (name_ref){ m->tensors[j].name, s, 0 };
	qsort(refs, n, sizeof *refs, cmp_ref);
	for (size_t i = 1; i < n && k == FMT_OK; i++)
		if (strcmp(refs[i - 1].name, refs[i].name) == 0)
			k = fmt_fail(e, FMT_SCHEMA, "tensor " NM " is in shards " NM " and " NM, refs[i].name,
				     st->shard_names[refs[i - 1].shard], st->shard_names[refs[i].shard]);
	for (size_t i = 0; i < ix->n_tensors && k == FMT_OK; i++) {
		name_ref *r = find_ref(refs, n, ix->tensors[i]);
		if (r)
			r->listed = 1;
		else
			k = fmt_fail(e, FMT_SCHEMA, "tensor " NM " is in weight_map (" NM ") but in no shard", ix->tensors[i],
				     ix->tensor_files[i]);
		if (r && strcmp(st->shard_names[r->shard], ix->tensor_files[i]) != 0)
			k = fmt_fail(e, FMT_SCHEMA, "tensor " NM " is in shard " NM " but weight_map names " NM, ix->tensors[i],
				     st->shard_names[r->shard], ix->tensor_files[i]);
	}
	if (k == FMT_OK && ix->n_tensors != n) {
		/* Every weight_map entry was found and names are unique: some tensor is unlisted (the
		 * first in the shards' order is named). */
		for (size_t i = 0; i < n && k == FMT_OK; i++)
			if (!find_ref(refs, n, m->tensors[i].name)->listed)
				k = fmt_fail(e, FMT_SCHEMA, "tensor " NM " of a shard is not listed in weight_map", m->tensors[i].name);
	}
	for (size_t i = 0; i < n && k == FMT_OK; i++)
		if (fmt_add_u64(total, m->tensors[i].nbytes, &total))
			k = fmt_fail(e, FMT_SCHEMA, "total tensor size overflows 64 bits");
	if (k == FMT_OK && total != ix->total_size)
		k = fmt_fail(e, FMT_SCHEMA, "index total_size %llu differs from the shards' %llu bytes of tensor data",
			     (unsigned long long)ix->total_size, (unsigned long long)total);
	const apsim_file *f = &st->files[0];
	for (size_t i = 0; i < f->n_units && k == FMT_OK; i++)
		if (!find_ref(refs, n, f->unit_list[i].tensor))
			k = fmt_fail(e, FMT_SCHEMA, "units " NM ": no tensor of that name in the set", f->unit_list[i].tensor);
	free(refs);
	return k;
}

/* Shard i of the JSON order, opened into raw[i]. */
static fmt_kind open_all_shards(fmt_model *m, fmt_apsim_index *ix, apsim_file *raw, fmt_err *e)
{
	char *dir = fmt_dir_prefix(m->sources[0].path);
	if (!dir)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = FMT_OK;
	for (size_t i = 0; i < ix->n_files && k == FMT_OK; i++)
		k = open_shard(m, dir, ix->files[i], &raw[i], e);
	free(dir);
	return k;
}

static fmt_kind build_set(fmt_model *m, fmt_apsim_index *ix, apsim_state *st, fmt_err *e)
{
	size_t n = ix->n_files;
	apsim_file *raw = calloc(n, sizeof *raw);
	st->files = calloc(n, sizeof *st->files);
	st->shard_names = calloc(n, sizeof *st->shard_names);
	st->shard_sha = calloc(n, sizeof *st->shard_sha);
	if (!raw || !st->files || !st->shard_names || !st->shard_sha) {
		free(raw);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	st->n_files = n;
	fmt_kind k = open_all_shards(m, ix, raw, e);
	if (k == FMT_OK) {
		/* Shard order: the shard_sha256 entry of each name moves with it. */
		for (size_t i = 0; i < n; i++)
			if (raw[i].shard_i >= 1 && raw[i].shard_i <= n)
				memcpy(st->shard_sha[raw[i].shard_i - 1], ix->sha256[i], FMT_SHA256_HEX + 1);
		k = order_shards(raw, ix->files, n, st, e);
	}
	for (size_t i = 0; i < n; i++)
		fmt_apsim_file_free(&raw[i]);
	free(raw);
	if (k == FMT_OK)
		k = check_same_keys(st, e);
	if (k == FMT_OK)
		k = check_contents(m, st, ix, e);
	return k;
}

static fmt_kind ai_open(fmt_model *m, fmt_err *e)
{
	char *text = NULL;
	fmt_apsim_index ix;
	memset(&ix, 0, sizeof ix);
	m->version = 1;
	apsim_state *st = calloc(1, sizeof *st);
	if (!st)
		return fmt_fail(e, FMT_IO, "out of memory");
	st->is_set = 1;
	m->format_state = st;
	fmt_kind k = fmt_source_read_text(&m->sources[0], FMT_ST_INDEX_MAX, &text, e);
	if (k == FMT_OK)
		k = fmt_apsim_index_parse(text, (size_t)m->sources[0].size, &ix, e);
	free(text);
	if (k == FMT_OK)
		k = build_set(m, &ix, st, e);
	if (k == FMT_OK) {
		st->total_size = ix.total_size;
		st->index_signature = ix.signature;
		ix.signature = NULL;
		k = fmt_apsim_fill_meta_units(m, &st->files[0], e);
	}
	for (size_t i = 0; k == FMT_OK && i < st->n_files; i++)
		k = fmt_apsim_fill_qtensors(m, &st->files[i], e);
	if (k == FMT_OK)
		k = fmt_apsim_fill_info(st, &st->files[0], st->index_signature, e);
	fmt_apsim_index_free(&ix);
	return k;
}

static void ai_close(fmt_model *m)
{
	fmt_apsim_state_free(m->format_state);
	m->format_state = NULL;
}

/* ---- verify ---- */

typedef struct digest_job {
	fmt_model *m;
	apsim_state *st;
	char (*hex)[FMT_SHA256_HEX + 1];
	fmt_kind *kinds;
	fmt_err *errs;
} digest_job;

static void digest_task(void *arg, size_t i)
{
	digest_job *j = arg;
	fmt_err_clear(&j->errs[i]);
	j->kinds[i] = fmt_apsim_file_digest(j->m, &j->st->files[i], j->hex[i], &j->errs[i]);
}

static fmt_kind shard_digests(fmt_model *m, apsim_state *st, int threads, char (*hex)[FMT_SHA256_HEX + 1],
			      fmt_err *e)
{
	size_t n = st->n_files;
	digest_job job = { .m = m, .st = st, .hex = hex };
	for (size_t i = 0; i < n; i++)
		fmt_meter_planned(st->files[i].data_len);
	job.kinds = calloc(n, sizeof *job.kinds);
	job.errs = calloc(n, sizeof *job.errs);
	fmt_pool *pool = NULL;
	fmt_kind k = job.kinds && job.errs ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		k = fmt_pool_create(&pool, threads > (int)n ? (int)n : threads, e);
	if (k == FMT_OK) {
		fmt_pool_run(pool, n, digest_task, &job);
		fmt_pool_destroy(pool);
	}
	for (size_t i = 0; k == FMT_OK && i < n; i++) {
		const apsim_file *f = &st->files[i];
		if (job.kinds[i] != FMT_OK) {
			*e = job.errs[i];
			k = job.kinds[i];
			fmt_err_file(e, f->path);
		} else if (strcmp(hex[i], f->sha256) != 0) {
			k = fmt_fail(e, FMT_CHECKSUM, "sha256 mismatch: file says %s, data gives %s", f->sha256, hex[i]);
			fmt_err_file(e, f->path);
		} else if (strcmp(hex[i], st->shard_sha[i]) != 0) {
			k = fmt_fail(e, FMT_CHECKSUM,
				     "shard " NM " (%u/%zu) has sha256 %s, but the index records %s (a shard of another checkpoint?)",
				     st->shard_names[i], (unsigned)f->shard_i, n, hex[i], st->shard_sha[i]);
		}
	}
	free(job.kinds);
	free(job.errs);
	return k;
}

static fmt_kind ai_verify(fmt_model *m, const fmt_verify_opts *o, fmt_err *e)
{
	apsim_state *st = m->format_state;
	size_t n = st->n_files;
	char (*hex)[FMT_SHA256_HEX + 1] = calloc(n, sizeof *hex);
	const char **shas = calloc(n, sizeof *shas);
	fmt_kind k = hex && shas ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		k = shard_digests(m, st, o ? o->threads : 1, hex, e);
	if (o && o->signer && st->index_signature && fmt_keyset_empty(&o->keys))
		o->signer->unchecked = fmt_apsim_signature_kind(st->index_signature);
	if (k == FMT_OK && o && !fmt_keyset_empty(&o->keys)) {
		for (size_t i = 0; i < n; i++)
			shas[i] = st->shard_sha[i];
		k = fmt_apsim_check_signature(st->index_signature, o, shas, n, e);
	}
	if (k == FMT_OK)
		k = fmt_apsim_check_scales(m, e);
	free(hex);
	free(shas);
	return k;
}

static json_t *ai_describe(const fmt_model *m)
{
	const apsim_state *st = m->format_state;
	if (!st)
		return NULL;
	json_t *o = fmt_apsim_describe_common(st);
	json_t *shards = json_array();
	if (!o || !shards) {
		json_decref(o);
		json_decref(shards);
		return NULL;
	}
	for (size_t i = 0; i < st->n_files; i++) {
		char shard[48];
		snprintf(shard, sizeof shard, "%zu/%zu", i + 1, st->n_files);
		json_t *s = json_object();
		if (!s)
			continue;
		json_object_set_new(s, "file", json_string(st->shard_names[i]));
		json_object_set_new(s, "shard", json_string(shard));
		json_object_set_new(s, "sha256", json_string(st->shard_sha[i]));
		json_array_append_new(shards, s);
	}
	json_object_set_new(o, "shards", shards);
	json_object_set_new(o, "total_size", json_integer((json_int_t)st->total_size));
	return o;
}

const fmt_driver fmt_driver_apsim_index = {
	.name = "apsim-index",
	.extension = ".apsim.index.json",
	.title = ".apsim",
	.probe = ai_probe,
	.open = ai_open,
	.text_max = FMT_ST_INDEX_MAX,
	.verify = ai_verify,
	.caps = FMT_CAP_TYPED_META | FMT_CAP_ENCODED | FMT_CAP_UNITS | FMT_CAP_SIGNATURES | FMT_CAP_ED25519 | FMT_CAP_ED25519_SIGN,
	.file_driver = &fmt_driver_apsim,
	.write = NULL,
	.sign_in_place = fmt_apsim_sign_set_in_place,
	.signature = fmt_apsim_signature_of,
	.close = ai_close,
	.describe = ai_describe,
};
