/* Fuzz the safetensors reader (from memory, no files), the index JSON parser, both probes,
 * and the writer: every file the reader accepts must be writable, and what is written must
 * read back to the same tensors and metadata. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/registry.h"
#include "fmt/safetensors.h"

static int open_bytes(const uint8_t *data, size_t size, fmt_model *m, fmt_err *e)
{
	return fmt_model_open_memory(m, "fuzz", data, size, &fmt_driver_safetensors, e) == FMT_OK;
}

/* The writer's output, built in memory. */
static uint8_t *write_bytes(const fmt_model *m, size_t *n)
{
	fmt_err e;
	fmt_err_clear(&e);
	char *json = NULL;
	size_t len = 0, *order = NULL;
	if (fmt_st_header_json(m, &json, &len, &e) != FMT_OK || fmt_st_tensor_order(m, &order, &e) != FMT_OK)
		abort(); /* a file the reader accepted must be writable */
	size_t padded = (len + 7) & ~(size_t)7, total = 8 + padded;
	for (size_t i = 0; i < m->n_tensors; i++)
		total += (size_t)m->tensors[i].nbytes;
	uint8_t *out = malloc(total);
	if (!out)
		abort();
	fmt_wr_u64(out, padded);
	memcpy(out + 8, json, len);
	memset(out + 8 + len, ' ', padded - len);
	size_t at = 8 + padded;
	for (size_t i = 0; i < m->n_tensors; i++) {
		const fmt_tensor *t = &m->tensors[order[i]];
		const uint8_t *bytes;
		uint8_t *to_free;
		if (fmt_tensor_load(m, t, &bytes, &to_free, &e) != FMT_OK)
			abort();
		memcpy(out + at, bytes, (size_t)t->nbytes);
		at += (size_t)t->nbytes;
		free(to_free);
	}
	free(json);
	free(order);
	*n = total;
	return out;
}

static void check_same(const fmt_model *a, const fmt_model *b)
{
	if (a->n_tensors != b->n_tensors || a->n_meta != b->n_meta)
		abort();
	for (size_t i = 0; i < a->n_tensors; i++) {
		const fmt_tensor *x = &a->tensors[i];
		const fmt_tensor *y = fmt_model_find_tensor(b, x->name);
		if (!y || x->dtype != y->dtype || x->ndim != y->ndim || x->nbytes != y->nbytes ||
		    memcmp(x->shape, y->shape, sizeof x->shape) != 0)
			abort();
	}
	for (size_t i = 0; i < a->n_meta; i++) {
		const fmt_value *v = fmt_model_get_meta(b, a->meta[i].key);
		if (!v || v->type != FMT_V_STR || v->v.str.len != a->meta[i].val.v.str.len ||
		    memcmp(v->v.str.ptr, a->meta[i].val.v.str.ptr, v->v.str.len) != 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fmt_model m, again;
	fmt_err e;
	fmt_err_clear(&e);
	size_t head = size < FMT_PROBE_BYTES ? size : FMT_PROBE_BYTES;
	(void)fmt_driver_safetensors.probe(data, head, size);
	(void)fmt_driver_st_index.probe(data, head, size);
	if (open_bytes(data, size, &m, &e)) {
		size_t n;
		uint8_t *out = write_bytes(&m, &n);
		if (!open_bytes(out, n, &again, &e))
			abort();
		check_same(&m, &again);
		fmt_model_free(&again);
		free(out);
	}
	fmt_model_free(&m);

	fmt_st_index ix;
	if (fmt_st_index_parse((const char *)data, size, &ix, &e) == FMT_OK)
		fmt_st_index_free(&ix);
	return 0;
}
