#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>
#include "fmt/checked.h"
#include "fmt/half.h"
#include "fmt/model.h"
#include "fmt/retype.h"
#include "fmt/thread.h"

void fmt_model_init(fmt_model *m)
{
	memset(m, 0, sizeof *m);
}

void fmt_value_free(fmt_value *v)
{
	if (v->type == FMT_V_STR) {
		free(v->v.str.ptr);
	} else if (v->type == FMT_V_ARRAY) {
		for (uint64_t i = 0; i < v->v.arr.count && v->v.arr.items; i++)
			fmt_value_free(&v->v.arr.items[i]);
		free(v->v.arr.items);
		free(v->v.arr.packed);
	}
	memset(v, 0, sizeof *v);
}

void fmt_model_free(fmt_model *m)
{
	if (m->close)
		m->close(m);
	for (size_t i = 0; i < m->n_meta; i++) {
		free(m->meta[i].key);
		fmt_value_free(&m->meta[i].val);
	}
	for (size_t i = 0; i < m->n_tensors; i++) {
		free(m->tensors[i].name);
		if (m->tensors[i].owned_data)
			free((void *)m->tensors[i].data);
		if (m->tensors[i].free_ctx)
			m->tensors[i].free_ctx(m->tensors[i].reader_ctx);
	}
	for (size_t i = 0; i < m->n_sources; i++)
		fmt_source_close(&m->sources[i]);
	for (size_t i = 0; i < m->n_units; i++)
		free(m->units[i].tensor);
	for (size_t i = 0; i < m->n_qtensors; i++) {
		free(m->qtensors[i].name);
		free(m->qtensors[i].scales);
	}
	fmt_nameset_free(&m->tensor_names);
	fmt_nameset_free(&m->qtensor_names);
	fmt_nameset_free(&m->qtensor_scales);
	fmt_nameset_free(&m->unit_names);
	free(m->units);
	free(m->qtensors);
	free(m->meta);
	free(m->tensors);
	free(m->sources);
	free(m->path);
	memset(m, 0, sizeof *m);
}

/* Grow *arr (of elem bytes each) so that it holds at least need elements. */
static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 8;
	while (n < need) {
		if (n > SIZE_MAX / 2 / elem)
			return -1;
		n *= 2;
	}
	void *p = realloc(*arr, n * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = n;
	return 0;
}

fmt_value fmt_value_str(const char *s, size_t len)
{
	fmt_value v;
	memset(&v, 0, sizeof v);
	v.type = FMT_V_STR;
	v.v.str.ptr = malloc(len + 1);
	if (v.v.str.ptr) {
		memcpy(v.v.str.ptr, s, len);
		v.v.str.ptr[len] = '\0';
		v.v.str.len = len;
	}
	return v;
}

/* A packed string array: count + 1 offsets (the last one the end of the strings), then the
 * strings, each NUL-terminated. */
static uint64_t *strs_offs(const fmt_value *a)
{
	return (uint64_t *)(void *)a->v.arr.packed;
}

static char *strs_base(const fmt_value *a)
{
	return (char *)a->v.arr.packed + (a->v.arr.count + 1) * sizeof(uint64_t);
}

static fmt_kind copy_strs(fmt_value *dst, const fmt_value *src, fmt_err *e)
{
	uint64_t n = src->v.arr.count, bytes = strs_offs(src)[n];
	fmt_kind k = fmt_value_strs(dst, n, bytes - n, e);
	if (k == FMT_OK)
		memcpy(dst->v.arr.packed, src->v.arr.packed, (size_t)((n + 1) * sizeof(uint64_t) + bytes));
	return k;
}

fmt_kind fmt_value_copy(fmt_value *dst, const fmt_value *src, fmt_err *e)
{
	*dst = *src;
	if (src->type == FMT_V_STR) {
		*dst = fmt_value_str(src->v.str.ptr, src->v.str.len);
		if (!dst->v.str.ptr)
			return fmt_fail(e, FMT_IO, "out of memory");
	} else if (src->type == FMT_V_ARRAY) {
		uint64_t n = src->v.arr.count;
		dst->v.arr.items = NULL;
		dst->v.arr.packed = NULL;
		dst->v.arr.count = 0;
		if (src->v.arr.packed && src->v.arr.elem == FMT_V_STR)
			return copy_strs(dst, src, e);
		if (src->v.arr.packed)
			return fmt_value_packed(dst, src->v.arr.elem, n, src->v.arr.packed, e);
		if (n == 0)
			return FMT_OK;
		if (n > SIZE_MAX / sizeof(fmt_value))
			return fmt_fail(e, FMT_IO, "out of memory");
		dst->v.arr.items = calloc((size_t)n, sizeof(fmt_value));
		if (!dst->v.arr.items)
			return fmt_fail(e, FMT_IO, "out of memory");
		for (uint64_t i = 0; i < n; i++) {
			fmt_kind k = fmt_value_copy(&dst->v.arr.items[i], &src->v.arr.items[i], e);
			dst->v.arr.count = i + 1;
			if (k != FMT_OK) {
				fmt_value_free(dst);
				return k;
			}
		}
	}
	return FMT_OK;
}

fmt_kind fmt_model_add_meta(fmt_model *m, const char *key, const fmt_value *val, fmt_err *e)
{
	if (grow((void **)&m->meta, &m->cap_meta, m->n_meta + 1, sizeof *m->meta))
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_meta *slot = &m->meta[m->n_meta];
	slot->key = strdup(key);
	if (!slot->key)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = fmt_value_copy(&slot->val, val, e);
	if (k != FMT_OK) {
		free(slot->key);
		return k;
	}
	m->n_meta++;
	return FMT_OK;
}

static fmt_kind replace_value(fmt_meta *slot, const fmt_value *val, fmt_err *e)
{
	fmt_value copy;
	fmt_kind k = fmt_value_copy(&copy, val, e);
	if (k != FMT_OK)
		return k;
	fmt_value_free(&slot->val);
	slot->val = copy;
	return FMT_OK;
}

fmt_kind fmt_model_put_meta(fmt_model *m, const char *key, const fmt_value *val, fmt_err *e)
{
	for (size_t i = 0; i < m->n_meta; i++)
		if (strcmp(m->meta[i].key, key) == 0)
			return replace_value(&m->meta[i], val, e);
	return fmt_model_add_meta(m, key, val, e);
}

/* keys: m's keys -> index. 0 when it cannot be (out of memory, or a key twice in m). */
static int index_meta(const fmt_model *m, fmt_nameset *keys)
{
	for (size_t i = 0; i < m->n_meta; i++)
		if (fmt_nameset_add(keys, m->meta[i].key) != 1)
			return 0;
	return 1;
}

fmt_kind fmt_model_put_metas(fmt_model *m, const fmt_meta *const *kv, size_t n, fmt_err *e)
{
	fmt_nameset keys = { 0 };
	fmt_kind k = FMT_OK;
	int indexed = index_meta(m, &keys);
	for (size_t i = 0; i < n && k == FMT_OK; i++) {
		long at = indexed ? fmt_nameset_find(&keys, kv[i]->key) : -1;
		if (at >= 0)
			k = replace_value(&m->meta[at], &kv[i]->val, e);
		else if (!indexed)
			k = fmt_model_put_meta(m, kv[i]->key, &kv[i]->val, e);
		else if ((k = fmt_model_add_meta(m, kv[i]->key, &kv[i]->val, e)) == FMT_OK)
			indexed = fmt_nameset_add(&keys, m->meta[m->n_meta - 1].key) == 1;
	}
	fmt_nameset_free(&keys);
	return k;
}

void fmt_model_remove_metas(fmt_model *m, int (*drop)(const char *key, const void *ctx), const void *ctx)
{
	size_t kept = 0;
	for (size_t i = 0; i < m->n_meta; i++) {
		if (!drop(m->meta[i].key, ctx)) {
			m->meta[kept++] = m->meta[i];
			continue;
		}
		free(m->meta[i].key);
		fmt_value_free(&m->meta[i].val);
	}
	m->n_meta = kept;
}

void fmt_model_remove_meta(fmt_model *m, const char *key)
{
	for (size_t i = 0; i < m->n_meta; i++) {
		if (strcmp(m->meta[i].key, key) != 0)
			continue;
		free(m->meta[i].key);
		fmt_value_free(&m->meta[i].val);
		memmove(&m->meta[i], &m->meta[i + 1], (m->n_meta - i - 1) * sizeof *m->meta);
		m->n_meta--;
		return;
	}
}

fmt_kind fmt_model_put_meta_last(fmt_model *m, const char *key, const fmt_value *val, fmt_err *e)
{
	fmt_value copy;   /* val may be freed by the removal */
	fmt_kind k = fmt_value_copy(&copy, val, e);
	if (k != FMT_OK)
		return k;
	fmt_model_remove_meta(m, key);
	k = fmt_model_add_meta(m, key, &copy, e);
	fmt_value_free(&copy);
	return k;
}

const fmt_value *fmt_model_get_meta(const fmt_model *m, const char *key)
{
	for (size_t i = 0; i < m->n_meta; i++)
		if (strcmp(m->meta[i].key, key) == 0)
			return &m->meta[i].val;
	return NULL;
}

fmt_kind fmt_model_add_tensor(fmt_model *m, const fmt_tensor *t, fmt_tensor **out, fmt_err *e)
{
	if (grow((void **)&m->tensors, &m->cap_tensors, m->n_tensors + 1, sizeof *m->tensors))
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_tensor *slot = &m->tensors[m->n_tensors];
	*slot = *t;
	slot->name = strdup(t->name);
	if (!slot->name || fmt_nameset_add_at(&m->tensor_names, slot->name, m->n_tensors) < 0) {
		free(slot->name);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	m->n_tensors++;
	if (out)
		*out = slot;
	return FMT_OK;
}

/* Where names (of the n elements) puts name, when every element was added to it (by the model's
 * functions, each at its place: a name given twice keeps its first place, as a scan would
 * find): -1 when none is so named; -2 when the set cannot tell. The elements may have been
 * reordered in place (gguf_split.c's front_to_back): the same names, so a miss is one, but the
 * caller checks a hit. */
static long indexed(const fmt_nameset *names, size_t n, const char *name)
{
	return names->offered == n ? fmt_nameset_find(names, name) : -2;
}

/* The name of element i of an array of elem-byte elements at base, its pointer at name_off. */
static const char *name_at(const void *base, size_t elem, size_t name_off, size_t i)
{
	const char *p;
	memcpy(&p, (const char *)base + i * elem + name_off, sizeof p);
	return p;
}

/* The place of the element named name (the first) among such an array of n, through its name
 * set when that can tell, else by a scan; -1 when none is so named. */
static long find_named(const fmt_nameset *names, const void *base, size_t n, size_t elem, size_t name_off,
		       const char *name)
{
	long at = indexed(names, n, name);
	if (at == -1 || (at >= 0 && strcmp(name_at(base, elem, name_off, (size_t)at), name) == 0))
		return at;
	for (size_t i = 0; i < n; i++)
		if (strcmp(name_at(base, elem, name_off, i), name) == 0)
			return (long)i;
	return -1;
}

const fmt_tensor *fmt_model_find_tensor(const fmt_model *m, const char *name)
{
	long at = find_named(&m->tensor_names, m->tensors, m->n_tensors, sizeof *m->tensors,
			     offsetof(fmt_tensor, name), name);
	return at >= 0 ? &m->tensors[at] : NULL;
}

fmt_kind fmt_model_add_unit(fmt_model *m, const char *tensor, const int8_t dims[FMT_UNIT_DIMS], fmt_err *e)
{
	if (grow((void **)&m->units, &m->cap_units, m->n_units + 1, sizeof *m->units))
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_unit *u = &m->units[m->n_units];
	u->tensor = strdup(tensor);
	if (!u->tensor || fmt_nameset_add_at(&m->unit_names, u->tensor, m->n_units) < 0) {
		free(u->tensor);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	memcpy(u->dims, dims, sizeof u->dims);
	m->n_units++;
	return FMT_OK;
}

const fmt_unit *fmt_model_find_unit(const fmt_model *m, const char *tensor)
{
	long at = find_named(&m->unit_names, m->units, m->n_units, sizeof *m->units, offsetof(fmt_unit, tensor),
			     tensor);
	return at >= 0 ? &m->units[at] : NULL;
}

fmt_kind fmt_model_add_qtensor(fmt_model *m, const fmt_qtensor *q, fmt_err *e)
{
	if (grow((void **)&m->qtensors, &m->cap_qtensors, m->n_qtensors + 1, sizeof *m->qtensors))
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_qtensor *slot = &m->qtensors[m->n_qtensors];
	*slot = *q;
	slot->name = strdup(q->name);
	slot->scales = q->scales ? strdup(q->scales) : NULL;
	if (!slot->name || (q->scales && !slot->scales) ||
	    fmt_nameset_add_at(&m->qtensor_names, slot->name, m->n_qtensors) < 0 ||
	    (slot->scales && fmt_nameset_add(&m->qtensor_scales, slot->scales) < 0)) {
		free(slot->name);
		free(slot->scales);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	m->n_qtensors++;
	return FMT_OK;
}

const fmt_qtensor *fmt_model_find_qtensor(const fmt_model *m, const char *name)
{
	long at = find_named(&m->qtensor_names, m->qtensors, m->n_qtensors, sizeof *m->qtensors,
			     offsetof(fmt_qtensor, name), name);
	return at >= 0 ? &m->qtensors[at] : NULL;
}

fmt_kind fmt_model_open_shard(fmt_model *m, const char *dir, const char *file, const char *named_in,
			      int *index, char **path, fmt_err *e)
{
	struct stat st;
	fmt_source src;
	if (asprintf(path, "%s%s", dir, file) < 0) {
		*path = NULL;
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	if (stat(*path, &st) != 0 && errno == ENOENT)
		return fmt_fail(e, FMT_SCHEMA, "shard '%.200s' named in %s does not exist (%.400s)", file, named_in,
				*path);
	fmt_kind k = fmt_source_open_found(&src, *path, e);
	if (k == FMT_OK) {
		k = fmt_model_add_source(m, &src, index, e);
		if (k != FMT_OK)
			fmt_source_close(&src);
	}
	return k;
}

fmt_kind fmt_model_add_source(fmt_model *m, fmt_source *s, int *index, fmt_err *e)
{
	if (grow((void **)&m->sources, &m->cap_sources, m->n_sources + 1, sizeof *m->sources))
		return fmt_fail(e, FMT_IO, "out of memory");
	m->sources[m->n_sources] = *s;
	memset(s, 0, sizeof *s);
	s->fd = -1;
	if (index)
		*index = (int)m->n_sources;
	m->n_sources++;
	return FMT_OK;
}

static fmt_kind out_of_memory_for(const fmt_tensor *t, fmt_err *e)
{
	return fmt_fail(e, FMT_IO, "out of memory for tensor '%s' (%llu bytes)", t->name,
			(unsigned long long)t->nbytes);
}

static fmt_kind tensor_source(const fmt_model *m, const fmt_tensor *t, fmt_source **s, fmt_err *e)
{
	if (t->source < 0 || (size_t)t->source >= m->n_sources)
		return fmt_fail(e, FMT_INTERNAL, "tensor '%s' has no bytes", t->name);
	*s = &m->sources[t->source];
	return FMT_OK;
}

fmt_kind fmt_tensor_read(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst,
			 size_t n, fmt_err *e)
{
	uint64_t end;
	if (fmt_add_u64(off, n, &end) || end > t->nbytes)
		return fmt_fail(e, FMT_INTERNAL, "tensor '%s': read past its %llu bytes", t->name,
				(unsigned long long)t->nbytes);
	if (t->data) {
		memcpy(dst, t->data + off, n);
		return FMT_OK;
	}
	if (t->reader)
		return t->reader(m, t, off, dst, n, e);
	fmt_source *s = NULL;
	fmt_kind k = tensor_source(m, t, &s, e);
	if (k == FMT_OK)
		k = fmt_source_read(s, t->offset + off, dst, n, e);
	if (k != FMT_OK && s) {
		fmt_err_file(e, s->path);
		fmt_err_prefix(e, "tensor '%s'", t->name);
	}
	return k;
}

fmt_kind fmt_tensor_load(const fmt_model *m, const fmt_tensor *t, const uint8_t **bytes,
			 uint8_t **to_free, fmt_err *e)
{
	*to_free = NULL;
	if (t->data) {
		*bytes = t->data;
		return FMT_OK;
	}
	if (t->reader || (t->source >= 0 && (size_t)t->source < m->n_sources && m->sources[t->source].sequential)) {
		if (t->nbytes > SIZE_MAX)
			return out_of_memory_for(t, e);
		uint8_t *buf = malloc(t->nbytes ? (size_t)t->nbytes : 1);
		if (!buf)
			return out_of_memory_for(t, e);
		fmt_kind k = fmt_tensor_read(m, t, 0, buf, (size_t)t->nbytes, e);
		if (k != FMT_OK) {
			free(buf);
			return k;
		}
		*bytes = buf;
		*to_free = buf;
		return FMT_OK;
	}
	fmt_source *s = NULL;
	fmt_kind k = tensor_source(m, t, &s, e);
	if (k == FMT_OK)
		k = fmt_source_view(s, t->offset, t->nbytes, bytes, e);
	if (k != FMT_OK && s) {
		fmt_err_file(e, s->path);
		fmt_err_prefix(e, "tensor '%s'", t->name);
	}
	return k;
}

#define STREAM_CHUNK (1u << 20)   /* writes of more than 1 MiB cost the kernel 4x as much per byte (copies out of L2) */

/* Pieces of about `about` bytes, on chunk_align boundaries, at most the whole tensor. */
static uint64_t chunk_of(const fmt_tensor *t, uint64_t about)
{
	uint64_t align = t->chunk_align ? t->chunk_align : 1;
	uint64_t chunk = about / align * align;
	if (chunk == 0)
		chunk = align;
	return chunk > t->nbytes ? t->nbytes : chunk;
}

static uint64_t stream_chunk(const fmt_tensor *t)
{
	return chunk_of(t, STREAM_CHUNK);
}

fmt_kind fmt_tensor_each_chunk(const fmt_model *m, const fmt_tensor *t, fmt_chunk_fn fn, void *ctx,
			       fmt_err *e)
{
	if (t->nbytes == 0)
		return FMT_OK;
	if (t->nbytes > SIZE_MAX)
		return out_of_memory_for(t, e);
	uint64_t chunk = stream_chunk(t);
	if (chunk > SIZE_MAX)
		return out_of_memory_for(t, e);
	if (t->data) {   /* in pieces too: what they go to (a write) is cheaper per byte in pieces */
		fmt_kind r = FMT_OK;
		for (uint64_t off = 0; r == FMT_OK && off < t->nbytes; off += chunk)
			r = fn(ctx, t->data + off, (size_t)(t->nbytes - off < chunk ? t->nbytes - off : chunk), e);
		return r;
	}
	uint8_t *buf = malloc((size_t)chunk);
	if (!buf)
		return out_of_memory_for(t, e);
	fmt_kind r = FMT_OK;
	for (uint64_t off = 0; r == FMT_OK && off < t->nbytes; off += chunk) {
		size_t n = (size_t)(t->nbytes - off < chunk ? t->nbytes - off : chunk);
		r = fmt_tensor_read(m, t, off, buf, n, e);
		if (r == FMT_OK)
			r = fn(ctx, buf, n, e);
	}
	free(buf);
	return r;
}

static fmt_kind write_chunk(void *sink, const uint8_t *bytes, size_t n, fmt_err *e)
{
	return fmt_sink_write(sink, bytes, n, e);
}

fmt_kind fmt_tensor_write_to(const fmt_model *m, const fmt_tensor *t, fmt_sink *k, fmt_err *e)
{
	return fmt_tensor_each_chunk(m, t, write_chunk, k, e);
}

static int read_order_matters(const fmt_model *m)
{
	for (size_t i = 0; i < m->n_tensors; i++)
		if (m->tensors[i].seq_pos)
			return 1;
	return 0;
}

static const fmt_tensor *order_base;

static int cmp_seq_pos(const void *a, const void *b)
{
	const fmt_tensor *x = &order_base[*(const size_t *)a], *y = &order_base[*(const size_t *)b];
	if (x->seq_pos != y->seq_pos)
		return x->seq_pos < y->seq_pos ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : *(const size_t *)a > *(const size_t *)b;
}

fmt_kind fmt_model_read_order(const fmt_model *m, size_t **order, int *moved, fmt_err *e)
{
	size_t *idx = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *idx);
	if (!idx)
		return fmt_fail(e, FMT_IO, "out of memory");
	int any = 0;
	for (size_t i = 0; i < m->n_tensors; i++) {
		idx[i] = i;
		any |= m->tensors[i].seq_pos != 0;
	}
	*moved = 0;
	if (any) {
		/* Tensors without a position keep theirs relative to each other; qsort with a global
		 * is fine here: writers run one at a time per model, and the comparison is total. */
		static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
		pthread_mutex_lock(&lock);
		order_base = m->tensors;
		qsort(idx, m->n_tensors, sizeof *idx, cmp_seq_pos);
		pthread_mutex_unlock(&lock);
		for (size_t i = 0; i < m->n_tensors; i++)
			*moved |= idx[i] != i;
	}
	*order = idx;
	return FMT_OK;
}

typedef struct placed {
	fmt_sink *k;
	uint64_t at;
} placed;

static fmt_kind write_placed_chunk(void *ctx, const uint8_t *bytes, size_t n, fmt_err *e)
{
	placed *p = ctx;
	fmt_kind k = fmt_sink_write_at(p->k, p->at, bytes, n, e);
	p->at += n;
	return k;
}

static _Thread_local int in_parallel_writer;

int fmt_tensor_reads_in_parallel(void)
{
	return in_parallel_writer;
}

fmt_kind fmt_tensor_read_own_range(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst, size_t n,
				   fmt_err *e)
{
	int was = in_parallel_writer;
	in_parallel_writer = 1;
	fmt_kind k = fmt_tensor_read(m, t, off, dst, n, e);
	in_parallel_writer = was;
	return k;
}

/* Tensors written by several threads, each piece to its own place in the file. A piece is a
 * whole tensor, or PIECE bytes of a tensor that may be read in any range on any thread (plain
 * bytes and conversions of them: fmt_tensor_reads_any_range): so one big tensor keeps every thread busy, and the threads take the
 * pieces in file order, hand nothing to each other and wait for nothing but the last piece
 * (small, so that the others wait little; a quarter of STREAM_CHUNK: about 1.8 MiB of F32 input
 * for 256 KiB of Q4_0, within L2). */
#define PIECE (STREAM_CHUNK / 4)

typedef struct parallel_job {
	const fmt_model *m;
	const fmt_tensor *const *list;
	const uint64_t *at;            /* where each of list[] goes */
	const size_t *first_piece;     /* list[i]'s pieces are first_piece[i] .. first_piece[i + 1] */
	size_t n;
	fmt_sink *k;
	pthread_mutex_t lock;
	fmt_kind kind;
	fmt_err err;
	size_t failed_at;              /* the first piece in file order that failed, or SIZE_MAX */
} parallel_job;

static int cut_in_pieces(const fmt_tensor *t)
{
	return fmt_tensor_reads_any_range(t);
}

static size_t pieces_of(const fmt_tensor *t)
{
	if (!cut_in_pieces(t) || t->nbytes == 0)
		return 1;
	uint64_t chunk = chunk_of(t, PIECE);
	return (size_t)((t->nbytes + chunk - 1) / chunk);
}

/* The tensor (index into list) that piece p belongs to. */
static size_t tensor_of_piece(const parallel_job *job, size_t p)
{
	size_t lo = 0, hi = job->n;   /* first_piece[lo] <= p < first_piece[hi] */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (job->first_piece[mid] <= p)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Bytes [off, off + n) of t, read and placed at `at`. */
static fmt_kind place_range(const fmt_model *m, const fmt_tensor *t, uint64_t off, size_t n, fmt_sink *k,
			    uint64_t at, fmt_err *e)
{
	if (t->data)
		return fmt_sink_write_at(k, at, t->data + off, n, e);
	uint8_t *buf = fmt_scratch_take(n);
	fmt_kind r = buf ? fmt_tensor_read(m, t, off, buf, n, e) : out_of_memory_for(t, e);
	if (r == FMT_OK)
		r = fmt_sink_write_at(k, at, buf, n, e);
	fmt_scratch_give(buf);
	return r;
}

static fmt_kind place_piece(const parallel_job *job, size_t p, fmt_err *e)
{
	const size_t i = tensor_of_piece(job, p);
	const fmt_tensor *t = job->list[i];
	if (!cut_in_pieces(t)) {
		placed to = { .k = job->k, .at = job->at[i] };
		return fmt_tensor_each_chunk(job->m, t, write_placed_chunk, &to, e);
	}
	if (t->nbytes == 0)
		return FMT_OK;
	if (t->nbytes > SIZE_MAX)
		return out_of_memory_for(t, e);
	const uint64_t chunk = chunk_of(t, PIECE), off = (uint64_t)(p - job->first_piece[i]) * chunk;
	const size_t n = (size_t)(t->nbytes - off < chunk ? t->nbytes - off : chunk);
	return place_range(job->m, t, off, n, job->k, job->at[i] + off, e);
}

static void parallel_task(void *ctx, size_t p)
{
	parallel_job *job = ctx;
	fmt_err e;
	fmt_err_clear(&e);
	pthread_mutex_lock(&job->lock);
	int failed = job->failed_at < p;   /* an earlier piece failed: its error is the one to report */
	pthread_mutex_unlock(&job->lock);
	if (failed)
		return;
	in_parallel_writer = 1;
	fmt_kind r = place_piece(job, p, &e);
	in_parallel_writer = 0;
	pthread_mutex_lock(&job->lock);
	if (r != FMT_OK && p < job->failed_at) {   /* as one thread writing in order would report */
		job->failed_at = p;
		job->kind = r;
		job->err = e;
	}
	pthread_mutex_unlock(&job->lock);
}

/* Where each of list[0..n) goes (at[], from start) and the first piece of each (first[], n + 1
 * entries). */
static fmt_kind lay_out(const fmt_tensor *const *list, size_t n, uint64_t align, uint64_t start, uint64_t *at,
			size_t *first, uint64_t *end, fmt_err *e)
{
	*end = start;
	first[0] = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t padded;
		at[i] = *end;
		if (fmt_add_u64(*end - start, list[i]->nbytes, &padded) || fmt_align_up_u64(padded, align, &padded) ||
		    fmt_add_u64(start, padded, end))
			return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': file offsets overflow", list[i]->name);
		first[i + 1] = first[i] + pieces_of(list[i]);
	}
	return FMT_OK;
}

/* list[0..n) back to back from k's end, each followed by zeros up to a multiple of align bytes
 * from there (1: none). */
static fmt_kind write_parallel(const fmt_model *m, const fmt_tensor *const *list, size_t n, uint64_t align,
			       fmt_sink *k, int threads, fmt_err *e)
{
	fmt_pool *pool = NULL;
	uint64_t *at = malloc((n ? n : 1) * sizeof *at), end = k->written;
	size_t *first = malloc((n + 1) * sizeof *first);
	fmt_kind r = at && first ? lay_out(list, n, align, k->written, at, first, &end, e)
				 : fmt_fail(e, FMT_IO, "out of memory");
	if (r == FMT_OK)
		r = fmt_pool_create(&pool, threads, e);
	if (r == FMT_OK) {
		parallel_job job = { .m = m, .list = list, .at = at, .first_piece = first, .n = n, .k = k,
				     .kind = FMT_OK, .failed_at = SIZE_MAX };
		pthread_mutex_init(&job.lock, NULL);
		fmt_pool_run(pool, first[n], parallel_task, &job);
		pthread_mutex_destroy(&job.lock);
		if (job.kind != FMT_OK) {
			*e = job.err;
			r = job.kind;
		}
	}
	if (r == FMT_OK && k->written < end)   /* empty tensors or padding at the end */
		r = fmt_sink_zeros(k, end - k->written, e);
	fmt_pool_destroy(pool);
	free(first);
	free(at);
	return r;
}

static int can_write_parallel(const fmt_model *m, size_t n, const fmt_sink *k, int threads)
{
	return threads > 1 && n > 1 && !k->is_stdout && !read_order_matters(m);
}

/* tensors[order[i]] (order NULL: tensors[i]) for i in 0..n, written in parallel. */
static fmt_kind write_list_parallel(const fmt_model *m, const fmt_tensor *tensors, const size_t *order, size_t n,
				    uint64_t align, fmt_sink *k, int threads, fmt_err *e)
{
	const fmt_tensor **list = malloc(n * sizeof *list);
	if (!list)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < n; i++)
		list[i] = &tensors[order ? order[i] : i];
	fmt_kind r = write_parallel(m, list, n, align, k, threads, e);
	free(list);
	return r;
}

fmt_kind fmt_model_place_tensors(const fmt_model *m, const fmt_tensor *tensors, size_t n, uint64_t align,
				 fmt_sink *k, int threads, int *done, fmt_err *e)
{
	*done = can_write_parallel(m, n, k, threads);
	return *done ? write_list_parallel(m, tensors, NULL, n, align, k, threads, e) : FMT_OK;
}

fmt_kind fmt_model_write_tensors(const fmt_model *m, const size_t *order, size_t n, fmt_sink *k, int threads,
				 fmt_err *e)
{
	size_t *ro = NULL;
	int moved = 0;
	if (can_write_parallel(m, n, k, threads))
		return write_list_parallel(m, m->tensors, order, n, 1, k, threads, e);
	fmt_kind r = fmt_model_read_order(m, &ro, &moved, e);
	for (size_t i = 0; i < n && r == FMT_OK; i++)   /* the layout's order is the read order? */
		moved |= i >= m->n_tensors || ro[i] != order[i];
	if (r != FMT_OK || !moved || !read_order_matters(m)) {
		free(ro);
		for (size_t i = 0; i < n && r == FMT_OK; i++)
			r = fmt_tensor_write_to(m, &m->tensors[order[i]], k, e);
		return r;
	}
	if (k->is_stdout) {
		free(ro);
		return fmt_fail(e, FMT_UNSUPPORTED, "the input is read front to back and its tensors come in another order "
				"than this format stores them: write to a file, not to %s", fmt_sink_stream_name(k));
	}
	uint64_t *at = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *at), end = k->written;
	if (!at)
		r = fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; r == FMT_OK && i < m->n_tensors; i++)
		at[i] = UINT64_MAX;
	for (size_t i = 0; r == FMT_OK && i < n; i++) {
		at[order[i]] = end;
		end += m->tensors[order[i]].nbytes;
	}
	for (size_t i = 0; r == FMT_OK && i < m->n_tensors; i++) {
		if (at[ro[i]] == UINT64_MAX)
			continue;
		placed p = { .k = k, .at = at[ro[i]] };
		r = fmt_tensor_each_chunk(m, &m->tensors[ro[i]], write_placed_chunk, &p, e);
	}
	if (r == FMT_OK && k->written < end)   /* only empty tensors at the end */
		r = fmt_sink_zeros(k, end - k->written, e);
	free(at);
	free(ro);
	return r;
}

uint64_t fmt_model_param_count(const fmt_model *m)
{
	uint64_t total = 0;
	for (size_t i = 0; i < m->n_tensors; i++)
		if (fmt_add_u64(total, m->tensors[i].nelems, &total))
			return UINT64_MAX;
	return total;
}

const char *fmt_vtype_name(fmt_vtype t)
{
	static const char *const names[] = { "u8", "i8", "u16", "i16", "u32", "i32", "f32",
					     "bool", "str", "array", "u64", "i64", "f64" };
	return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

size_t fmt_vtype_size(fmt_vtype t)
{
	switch (t) {
	case FMT_V_U8: case FMT_V_I8: case FMT_V_BOOL: return 1;
	case FMT_V_U16: case FMT_V_I16: return 2;
	case FMT_V_U32: case FMT_V_I32: case FMT_V_F32: return 4;
	case FMT_V_U64: case FMT_V_I64: case FMT_V_F64: return 8;
	default: return 0;
	}
}

fmt_value fmt_array_item(const fmt_value *a, uint64_t i)
{
	fmt_value v;
	memset(&v, 0, sizeof v);
	if (!a->v.arr.packed)
		return a->v.arr.items[i];
	if (a->v.arr.elem == FMT_V_STR) {
		const uint64_t *offs = strs_offs(a);
		v.type = FMT_V_STR;
		v.v.str.ptr = strs_base(a) + offs[i];
		v.v.str.len = (size_t)(offs[i + 1] - offs[i] - 1);
		return v;
	}
	const uint8_t *p = a->v.arr.packed + i * fmt_vtype_size(a->v.arr.elem);
	v.type = a->v.arr.elem;
	switch (v.type) {
	case FMT_V_U8: v.v.u = p[0]; break;
	case FMT_V_I8: v.v.i = (int8_t)p[0]; break;
	case FMT_V_BOOL: v.v.b = p[0] != 0; break;
	case FMT_V_U16: v.v.u = fmt_rd_u16(p); break;
	case FMT_V_I16: v.v.i = (int16_t)fmt_rd_u16(p); break;
	case FMT_V_U32: v.v.u = fmt_rd_u32(p); break;
	case FMT_V_I32: v.v.i = (int32_t)fmt_rd_u32(p); break;
	case FMT_V_U64: v.v.u = fmt_rd_u64(p); break;
	case FMT_V_I64: v.v.i = (int64_t)fmt_rd_u64(p); break;
	case FMT_V_F32: v.v.f = fmt_bits_f32(fmt_rd_u32(p)); break;
	case FMT_V_F64: {
		uint64_t bits = fmt_rd_u64(p);
		memcpy(&v.v.f, &bits, sizeof v.v.f);
		break;
	}
	default: break;
	}
	return v;
}

fmt_kind fmt_value_packed(fmt_value *out, fmt_vtype elem, uint64_t count, const void *bytes, fmt_err *e)
{
	size_t each = fmt_vtype_size(elem);
	uint64_t n;
	memset(out, 0, sizeof *out);
	out->type = FMT_V_ARRAY;
	out->v.arr.elem = elem;
	if (!each)
		return fmt_fail(e, FMT_INTERNAL, "a %s array cannot be packed", fmt_vtype_name(elem));
	if (fmt_mul_u64(count, each, &n) || n > SIZE_MAX)
		return fmt_fail(e, FMT_IO, "out of memory for %llu array items", (unsigned long long)count);
	out->v.arr.packed = malloc(n ? (size_t)n : 1);
	if (!out->v.arr.packed)
		return fmt_fail(e, FMT_IO, "out of memory for %llu array items", (unsigned long long)count);
	if (n)
		memcpy(out->v.arr.packed, bytes, (size_t)n);
	out->v.arr.count = count;
	return FMT_OK;
}

fmt_kind fmt_value_strs(fmt_value *out, uint64_t count, uint64_t bytes, fmt_err *e)
{
	uint64_t offs, n;
	memset(out, 0, sizeof *out);
	out->type = FMT_V_ARRAY;
	out->v.arr.elem = FMT_V_STR;
	if (fmt_add_u64(count, 1, &offs) || fmt_mul_u64(offs, sizeof(uint64_t), &offs) ||
	    fmt_add_u64(offs, bytes, &n) || fmt_add_u64(n, count, &n) || n > SIZE_MAX)
		return fmt_fail(e, FMT_IO, "out of memory for %llu strings", (unsigned long long)count);
	out->v.arr.packed = malloc((size_t)n);
	if (!out->v.arr.packed)
		return fmt_fail(e, FMT_IO, "out of memory for %llu strings (%llu bytes)",
				(unsigned long long)count, (unsigned long long)n);
	out->v.arr.count = count;
	strs_offs(out)[0] = 0;
	return FMT_OK;
}

char *fmt_value_strs_put(fmt_value *a, uint64_t i, size_t len)
{
	uint64_t *offs = strs_offs(a);
	char *p = strs_base(a) + offs[i];
	p[len] = '\0';
	offs[i + 1] = offs[i] + len + 1;
	return p;
}
