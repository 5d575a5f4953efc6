/* Importance matrices as llama-imatrix writes them and llama-quantize --imatrix reads them
 * (common/imatrix-loader.cpp and tools/quantize/quantize.cpp at the pinned commit, read, not
 * copied): the GGUF imatrix (tensors NAME.in_sum2 and NAME.counts, F32, and the keys
 * imatrix.datasets, imatrix.chunk_count, imatrix.chunk_size) and the legacy .dat file
 * (i32 n_entries; per entry i32 len, name, i32 ncall, i32 nval, f32 sums[nval]; then
 * optionally i32 chunks and a dataset name). Each entry becomes its importance weights: the
 * sums divided by the count (per expert), as llama-quantize computes them. Hostile files give
 * InvalidFormat naming the file and what is wrong, never a crash or a huge allocation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/gguf.h"
#include "fmt/half.h"
#include "fmt/io.h"

#define IMATRIX_MAX_BYTES (UINT64_C(4) << 30)  /* the biggest imatrix file read */
#define IMATRIX_MAX_NAME 4096

void fmt_gguf_imatrix_free(fmt_gguf_imatrix *im)
{
	for (size_t i = 0; i < im->n; i++) {
		free(im->entries[i].name);
		free(im->entries[i].values);
	}
	free(im->entries);
	fmt_nameset_free(&im->names);
	free(im->dataset);
	memset(im, 0, sizeof *im);
}

const fmt_gguf_imatrix_entry *fmt_gguf_imatrix_find(const fmt_gguf_imatrix *im, const char *name)
{
	long i = im ? fmt_nameset_find(&im->names, name) : -1;
	return i >= 0 ? &im->entries[i] : NULL;
}

static fmt_kind add_entry(fmt_gguf_imatrix *im, const char *name, size_t name_len, uint64_t n, fmt_err *e)
{
	char *copy = malloc(name_len + 1);
	float *values = malloc((size_t)(n ? n : 1) * sizeof *values);
	int added = -1;
	if (copy) {
		memcpy(copy, name, name_len);
		copy[name_len] = '\0';
	}
	if (copy && values && !fmt_grow_array(&im->entries, &im->cap, im->n + 1, sizeof *im->entries, 64))
		added = fmt_nameset_add(&im->names, copy);
	if (added != 1) {
		if (added == 0)
			fmt_fail(e, FMT_INVALID_FORMAT, "entry '%s' appears twice", copy);
		else
			fmt_fail(e, FMT_IO, "out of memory");
		free(copy);
		free(values);
		return e->kind;
	}
	im->entries[im->n++] = (fmt_gguf_imatrix_entry){ .name = copy, .values = values, .n = n };
	return FMT_OK;
}

/* ---- the legacy .dat file ---- */

typedef struct cursor {
	const uint8_t *p;
	size_t left;
} cursor;

static int take_i32(cursor *c, int32_t *v)
{
	if (c->left < 4)
		return 0;
	*v = (int32_t)fmt_rd_u32(c->p);
	c->p += 4;
	c->left -= 4;
	return 1;
}

static fmt_kind legacy_entry(fmt_gguf_imatrix *im, cursor *c, int32_t i, fmt_err *e)
{
	int32_t len, ncall, nval;
	if (!take_i32(c, &len) || len < 0 || len > IMATRIX_MAX_NAME || (size_t)len > c->left)
		return fmt_fail(e, FMT_INVALID_FORMAT, "entry %d: no name of a length 0 to %d in the file", i + 1,
				IMATRIX_MAX_NAME);
	const char *name = (const char *)c->p;
	c->p += len;
	c->left -= (size_t)len;
	if (memchr(name, '\0', (size_t)len))
		return fmt_fail(e, FMT_INVALID_FORMAT, "entry %d: its name holds a NUL byte", i + 1);
	if (!take_i32(c, &ncall) || !take_i32(c, &nval) || nval < 1 || (size_t)nval > c->left / 4)
		return fmt_fail(e, FMT_INVALID_FORMAT, "entry %d ('%.*s'): no count of 1 or more values that the file "
				"holds", i + 1, (int)len, name);
	fmt_kind k = add_entry(im, name, (size_t)len, (uint64_t)nval, e);
	if (k != FMT_OK)
		return k;
	float *v = im->entries[im->n - 1].values;
	for (int32_t j = 0; j < nval; j++) {
		const float sum = fmt_bits_f32(fmt_rd_u32(c->p + 4 * (size_t)j));
		v[j] = ncall > 0 ? sum / (float)ncall : sum;
	}
	c->p += 4 * (size_t)nval;
	c->left -= 4 * (size_t)nval;
	return FMT_OK;
}

static fmt_kind load_legacy(fmt_gguf_imatrix *im, const uint8_t *data, size_t size, fmt_err *e)
{
	cursor c = { data, size };
	int32_t n_entries, chunks;
	if (!take_i32(&c, &n_entries) || n_entries < 1)
		return fmt_fail(e, FMT_INVALID_FORMAT, "not an importance matrix: no GGUF magic, and no entry count of "
				"a legacy .dat file");
	for (int32_t i = 0; i < n_entries; i++) {
		fmt_kind k = legacy_entry(im, &c, i, e);
		if (k != FMT_OK)
			return k;
	}
	int32_t len;
	if (!take_i32(&c, &chunks))   /* the optional trailer: chunks, then a dataset name */
		chunks = 0;
	else if (take_i32(&c, &len) && len > 0 && (size_t)len <= c.left &&
		 !(im->dataset = strndup((const char *)c.p, (size_t)len)))   /* up to a NUL, as read there */
		return fmt_fail(e, FMT_IO, "out of memory");
	im->chunks = chunks;
	im->legacy = 1;
	return FMT_OK;
}

/* ---- the GGUF imatrix ---- */

/* name without suffix (".in_sum2", ".counts"); 0 when it does not end so. */
static size_t stem_len(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);
	return n > s && strcmp(name + n - s, suffix) == 0 ? n - s : 0;
}

/* *out: the tensor named stem[0..len) + suffix, or NULL. tensors: m's names. */
static fmt_kind partner(const fmt_model *m, const fmt_nameset *tensors, const char *stem, size_t len,
			const char *suffix, const fmt_tensor **out, fmt_err *e)
{
	size_t n = strlen(suffix);
	char *name = malloc(len + n + 1);
	if (!name)
		return fmt_fail(e, FMT_IO, "out of memory");
	memcpy(name, stem, len);
	memcpy(name + len, suffix, n + 1);
	long i = fmt_nameset_find(tensors, name);
	free(name);
	*out = i >= 0 ? &m->tensors[i] : NULL;
	return FMT_OK;
}

static fmt_kind read_f32s(const fmt_model *m, const fmt_tensor *t, float **out, fmt_err *e)
{
	if (t->dtype != FMT_DT_F32)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s' is %s; the sums and counts must be F32", t->name,
				fmt_dtype_name(t->dtype));
	if (!(*out = malloc(t->nbytes ? (size_t)t->nbytes : 1)))
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = fmt_tensor_read(m, t, 0, (uint8_t *)*out, (size_t)t->nbytes, e);
	for (uint64_t i = 0; k == FMT_OK && i < t->nelems; i++)
		(*out)[i] = fmt_bits_f32(fmt_rd_u32((const uint8_t *)&(*out)[i]));
	return k;
}

/* sums / count per expert (a count of 0: weights 1), counts rounded as lround does. */
static fmt_kind gguf_entry(fmt_gguf_imatrix *im, const fmt_model *m, const fmt_nameset *tensors,
			   const fmt_tensor *sums, size_t len, fmt_err *e)
{
	const fmt_tensor *counts;
	float *s = NULL, *c = NULL;
	if (partner(m, tensors, sums->name, len, ".counts", &counts, e) != FMT_OK)
		return e->kind;
	if (!counts)
		return fmt_fail(e, FMT_INVALID_FORMAT, "'%.*s' has in_sum2 but no counts", (int)len, sums->name);
	if (counts->nelems == 0 || sums->nelems % counts->nelems != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "'%.*s': %llu sums do not divide among %llu counts", (int)len,
				sums->name, (unsigned long long)sums->nelems, (unsigned long long)counts->nelems);
	fmt_kind k = read_f32s(m, sums, &s, e);
	if (k == FMT_OK)
		k = read_f32s(m, counts, &c, e);
	if (k == FMT_OK)
		k = add_entry(im, sums->name, len, sums->nelems, e);
	const uint64_t per = counts->nelems ? sums->nelems / counts->nelems : 0;
	for (uint64_t j = 0; k == FMT_OK && j < counts->nelems; j++) {
		float *v = im->entries[im->n - 1].values + j * per;
		const float count = fabsf(c[j]) < 9.2e18f ? (float)lroundf(c[j]) : 0.f;
		for (uint64_t i = 0; i < per; i++)
			v[i] = count > 0.0f ? s[j * per + i] / count : 1;
	}
	free(s);
	free(c);
	return k;
}

/* t as an entry when it holds sums; counts without their sums are refused. */
static fmt_kind tensor_entry(fmt_gguf_imatrix *im, const fmt_model *m, const fmt_nameset *tensors,
			     const fmt_tensor *t, fmt_err *e)
{
	const fmt_tensor *sums;
	size_t len = stem_len(t->name, ".in_sum2");
	if (len)
		return gguf_entry(im, m, tensors, t, len, e);
	if (!(len = stem_len(t->name, ".counts")))
		return FMT_OK;
	if (partner(m, tensors, t->name, len, ".in_sum2", &sums, e) != FMT_OK)
		return e->kind;
	return sums ? FMT_OK : fmt_fail(e, FMT_INVALID_FORMAT, "'%.*s' has counts but no in_sum2", (int)len, t->name);
}

/* imatrix.datasets[0] when it is an array of strings (llama-quantize writes it into the model). */
static fmt_kind first_dataset(fmt_gguf_imatrix *im, const fmt_value *datasets, fmt_err *e)
{
	if (datasets->type != FMT_V_ARRAY || datasets->v.arr.elem != FMT_V_STR || datasets->v.arr.count == 0)
		return FMT_OK;
	const fmt_value first = fmt_array_item(datasets, 0);
	if (!(im->dataset = strndup(first.v.str.ptr, first.v.str.len)))
		return fmt_fail(e, FMT_IO, "out of memory");
	return FMT_OK;
}

static fmt_kind load_gguf(fmt_gguf_imatrix *im, const char *path, const uint8_t *data, size_t size, fmt_err *e)
{
	fmt_model m;
	fmt_source src;
	fmt_model_init(&m);
	fmt_kind k = fmt_source_from_memory(&src, path, data, size, e);
	if (k == FMT_OK)
		k = fmt_model_open_source_with(&m, &src, path, &fmt_driver_gguf, e);
	if (k != FMT_OK)
		return k;
	const fmt_value *chunks = fmt_model_get_meta(&m, "imatrix.chunk_count");
	if (!fmt_model_get_meta(&m, "imatrix.datasets") || !chunks || !fmt_model_get_meta(&m, "imatrix.chunk_size"))
		k = fmt_fail(e, FMT_INVALID_FORMAT, "a GGUF without imatrix.datasets, imatrix.chunk_count and "
			     "imatrix.chunk_size: not an importance matrix");
	if (k == FMT_OK && chunks->type == FMT_V_U32)
		im->chunks = (int64_t)chunks->v.u;
	if (k == FMT_OK)
		k = first_dataset(im, fmt_model_get_meta(&m, "imatrix.datasets"), e);
	fmt_nameset tensors = { 0 };   /* the reader refused a name given twice */
	for (size_t i = 0; k == FMT_OK && i < m.n_tensors; i++)
		if (fmt_nameset_add(&tensors, m.tensors[i].name) < 0)
			k = fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; k == FMT_OK && i < m.n_tensors; i++)
		k = tensor_entry(im, &m, &tensors, &m.tensors[i], e);
	if (k == FMT_OK && im->n == 0)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "no in_sum2 and counts tensors: no data");
	fmt_nameset_free(&tensors);
	fmt_model_free(&m);
	return k;
}

/* llama-quantize refuses a matrix with a NaN or an infinity. */
static fmt_kind check_finite(const fmt_gguf_imatrix *im, fmt_err *e)
{
	for (size_t i = 0; i < im->n; i++)
		for (uint64_t j = 0; j < im->entries[i].n; j++)
			if (!isfinite(im->entries[i].values[j]))
				return fmt_fail(e, FMT_INVALID_FORMAT, "entry '%s': value %llu is not finite",
						im->entries[i].name, (unsigned long long)j);
	return FMT_OK;
}

/* names indexed again after entries moved */
static fmt_kind index_names(fmt_gguf_imatrix *im, fmt_err *e)
{
	fmt_nameset_free(&im->names);
	for (size_t i = 0; i < im->n; i++)
		if (fmt_nameset_add(&im->names, im->entries[i].name) < 0)
			return fmt_fail(e, FMT_IO, "out of memory");
	return FMT_OK;
}

/* --exclude-weights drops the entries whose name holds one of its strings, then
 * --include-weights keeps only those whose name holds one of its. */
static fmt_kind select_entries(fmt_gguf_imatrix *im, const fmt_gguf_quant_opts *o, fmt_err *e)
{
	size_t kept = 0;
	for (size_t i = 0; i < im->n; i++) {
		int keep = o->n_include == 0;
		for (size_t j = 0; j < o->n_exclude; j++)
			if (strstr(im->entries[i].name, o->exclude[j]))
				keep = -1;
		for (size_t j = 0; keep == 0 && j < o->n_include; j++)
			keep = strstr(im->entries[i].name, o->include[j]) != NULL;
		if (keep == 1) {
			im->entries[kept++] = im->entries[i];
		} else {
			free(im->entries[i].name);
			free(im->entries[i].values);
		}
	}
	im->n = kept;
	return index_names(im, e);
}

fmt_kind fmt_gguf_imatrix_parse(fmt_gguf_imatrix *im, const char *name, const uint8_t *data, size_t size,
				 fmt_err *e)
{
	fmt_kind k;
	memset(im, 0, sizeof *im);
	if (size >= 4 && memcmp(data, "GGUF", 4) == 0)
		k = load_gguf(im, name, data, size, e);
	else
		k = load_legacy(im, data, size, e);
	if (k == FMT_OK)
		k = check_finite(im, e);
	if (k != FMT_OK)
		fmt_gguf_imatrix_free(im);
	return k;
}

fmt_kind fmt_gguf_imatrix_load(fmt_gguf_imatrix *im, const char *path, const fmt_gguf_quant_opts *o, fmt_err *e)
{
	char *data;
	size_t size;
	memset(im, 0, sizeof *im);
	fmt_kind k = fmt_read_file(path, (size_t)IMATRIX_MAX_BYTES, &data, &size, e);
	if (k == FMT_OK) {
		k = fmt_gguf_imatrix_parse(im, path, (const uint8_t *)data, size, e);
		free(data);
		if (k != FMT_OK) {
			fmt_err_prefix(e, "--imatrix");
			fmt_err_file(e, path);
		}
	}
	if (k == FMT_OK && (k = select_entries(im, o, e)) != FMT_OK)
		fmt_gguf_imatrix_free(im);
	return k;
}
