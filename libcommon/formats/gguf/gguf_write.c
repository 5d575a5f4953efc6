/* GGUF v3 writer (specs/gguf.md §2-§8, §13). Everything is validated before the first byte is
 * written; tensor bytes are streamed in bounded chunks through fmt_tensor_write_to.
 *
 * Choices: value types are written as stored in the model (the converter decides them); a
 * scalar tensor is written with n_dims = 1 and ne = {1} (other tensors keep their size-1
 * dims, like gguf-py); the alignment is o->alignment, else general.alignment, else 32, and the
 * file always states it: an existing general.alignment key is written with the effective value,
 * and one is appended after the other keys when the alignment is not 32. */
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/gguf.h"
#include "fmt/out.h"
#include "fmt/half.h"
#include "fmt/strbuf.h"
#include "gguf_internal.h"

/* Where the bytes go: the sink k, or (k NULL) the memory buffer mem, or (both NULL) nowhere:
 * pos counts them. */
typedef struct gw {
	fmt_sink *k;
	fmt_sb *mem;
	uint64_t pos;
	fmt_err *e;
} gw;

static fmt_kind put(gw *w, const void *p, size_t n)
{
	w->pos += n;
	if (w->k)
		return fmt_sink_write(w->k, p, n, w->e);
	if (!w->mem)
		return FMT_OK;
	fmt_sb_put(w->mem, p, n);
	return w->mem->oom ? fmt_fail(w->e, FMT_IO, "out of memory") : FMT_OK;
}

static fmt_kind put_u32(gw *w, uint32_t v)
{
	uint8_t b[4];
	fmt_wr_u32(b, v);
	return put(w, b, sizeof b);
}

static fmt_kind put_u64(gw *w, uint64_t v)
{
	uint8_t b[8];
	fmt_wr_u64(b, v);
	return put(w, b, sizeof b);
}

static fmt_kind put_str(gw *w, const char *s, size_t len)
{
	fmt_kind k = put_u64(w, len);
	return k == FMT_OK ? put(w, s, len) : k;
}

static fmt_kind put_pad(gw *w, uint32_t align)
{
	uint64_t to;
	if (fmt_align_up_u64(w->pos, align, &to))
		return fmt_fail(w->e, FMT_INTERNAL, "file offset overflows");
	uint64_t n = to - w->pos;
	if (!w->k) {
		static const uint8_t zeros[64];
		fmt_kind k = FMT_OK;
		for (uint64_t chunk; n > 0 && k == FMT_OK; n -= chunk)
			k = put(w, zeros, (size_t)(chunk = n < sizeof zeros ? n : sizeof zeros));
		return k;
	}
	w->pos = to;
	return fmt_sink_zeros(w->k, n, w->e);
}

static fmt_kind put_scalar(gw *w, const fmt_value *v)
{
	uint8_t b[8];
	switch (v->type) {
	case FMT_V_STR:
		return put_str(w, v->v.str.ptr ? v->v.str.ptr : "", v->v.str.ptr ? v->v.str.len : 0);
	case FMT_V_BOOL:
		b[0] = v->v.b ? 1 : 0;
		break;
	case FMT_V_U8: case FMT_V_I8: case FMT_V_U16: case FMT_V_I16:
	case FMT_V_U32: case FMT_V_I32: case FMT_V_U64: case FMT_V_I64:
		/* two's complement: the low bytes of u and of i are the same */
		fmt_wr_u64(b, v->type == FMT_V_U8 || v->type == FMT_V_U16 || v->type == FMT_V_U32 ||
				      v->type == FMT_V_U64 ? v->v.u : (uint64_t)v->v.i);
		break;
	case FMT_V_F32:
		fmt_wr_u32(b, fmt_f32_bits((float)v->v.f));
		break;
	case FMT_V_F64: {
		uint64_t bits;
		memcpy(&bits, &v->v.f, sizeof bits);
		fmt_wr_u64(b, bits);
		break;
	}
	default:
		return fmt_fail(w->e, FMT_INTERNAL, "value type %d is not a scalar", (int)v->type);
	}
	return put(w, b, fmt_gguf_scalar_size(v->type));
}

/* Element type, count, items; an item that is itself an array carries its own type and count. */
static fmt_kind put_array(gw *w, const fmt_value *v)
{
	fmt_kind k;
	if ((k = put_u32(w, (uint32_t)v->v.arr.elem)) != FMT_OK ||
	    (k = put_u64(w, v->v.arr.count)) != FMT_OK)
		return k;
	if (v->v.arr.packed && v->v.arr.elem != FMT_V_STR) /* already GGUF's little-endian item encoding */
		return put(w, v->v.arr.packed, (size_t)v->v.arr.count * fmt_gguf_scalar_size(v->v.arr.elem));
	for (uint64_t i = 0; i < v->v.arr.count && k == FMT_OK; i++) {
		fmt_value it = fmt_array_item(v, i);
		k = v->v.arr.elem == FMT_V_ARRAY ? put_array(w, &it) : put_scalar(w, &it);
	}
	return k;
}

static fmt_kind put_value(gw *w, const fmt_value *v)
{
	fmt_kind k = put_u32(w, (uint32_t)v->type);
	if (k != FMT_OK)
		return k;
	return v->type == FMT_V_ARRAY ? put_array(w, v) : put_scalar(w, v);
}

/* ---- validation ---- */

static fmt_kind check_value_at(const char *key, const fmt_value *v, unsigned depth, fmt_err *e)
{
	if ((unsigned)v->type > FMT_V_F64)
		return fmt_fail(e, FMT_INTERNAL, "key '%s': invalid value type %d", key, (int)v->type);
	if (v->type == FMT_V_STR && v->v.str.len > FMT_GGUF_MAX_STRING)
		return fmt_fail(e, FMT_UNSUPPORTED, "key '%s': string of %zu bytes exceeds the GGUF limit", key,
				v->v.str.len);
	if (v->type != FMT_V_ARRAY)
		return FMT_OK;
	if (v->v.arr.elem == FMT_V_ARRAY && depth >= FMT_GGUF_MAX_NESTING)
		return fmt_fail(e, FMT_UNSUPPORTED, "key '%s': arrays nested more than %u levels deep", key,
				FMT_GGUF_MAX_NESTING);
	if ((unsigned)v->v.arr.elem > FMT_V_F64)
		return fmt_fail(e, FMT_INTERNAL, "key '%s': invalid array element type %d", key, (int)v->v.arr.elem);
	if (v->v.arr.count > FMT_GGUF_MAX_STRING)
		return fmt_fail(e, FMT_UNSUPPORTED, "key '%s': array of %llu items exceeds the GGUF limit", key,
				(unsigned long long)v->v.arr.count);
	if (v->v.arr.packed && v->v.arr.elem == FMT_V_ARRAY)
		return fmt_fail(e, FMT_INTERNAL, "key '%s': packed array of %s", key, fmt_vtype_name(v->v.arr.elem));
	if (v->v.arr.packed && v->v.arr.elem != FMT_V_STR)
		return FMT_OK;
	if (v->v.arr.count && !v->v.arr.items && !v->v.arr.packed)
		return fmt_fail(e, FMT_INTERNAL, "key '%s': array without items", key);
	for (uint64_t i = 0; i < v->v.arr.count; i++) {
		fmt_value item = fmt_array_item(v, i);
		const fmt_value *it = &item;
		if (it->type != v->v.arr.elem)
			return fmt_fail(e, FMT_INTERNAL, "key '%s': item %llu is %s in an array of %s", key,
					(unsigned long long)i, fmt_vtype_name(it->type), fmt_vtype_name(v->v.arr.elem));
		if (it->type == FMT_V_STR && it->v.str.len > FMT_GGUF_MAX_STRING)
			return fmt_fail(e, FMT_UNSUPPORTED, "key '%s': item %llu exceeds the GGUF string limit", key,
					(unsigned long long)i);
		if (it->type == FMT_V_ARRAY) {
			fmt_kind k = check_value_at(key, it, depth + 1, e);
			if (k != FMT_OK)
				return k;
		}
	}
	return FMT_OK;
}

static fmt_kind check_value(const char *key, const fmt_value *v, fmt_err *e)
{
	return check_value_at(key, v, 0, e);
}

static int key_chars_ok(const char *key, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((uint8_t)key[i] < 0x20 || key[i] == 0x7F)
			return 0;
	return fmt_utf8_valid(key, len);
}

static fmt_kind check_metadata(const fmt_meta *meta, size_t n, fmt_err *e)
{
	fmt_nameset seen = { 0 };
	fmt_kind k = FMT_OK;
	for (size_t i = 0; i < n && k == FMT_OK; i++) {
		const char *key = meta[i].key;
		size_t len = strlen(key);
		if (len == 0 || len > FMT_GGUF_MAX_KEY)
			k = fmt_fail(e, FMT_UNSUPPORTED, "metadata key %zu: length %zu (GGUF keys are 1 to %u bytes)",
				     i, len, FMT_GGUF_MAX_KEY);
		else if (!key_chars_ok(key, len))
			k = fmt_fail(e, FMT_UNSUPPORTED,
				     "metadata key %zu: invalid UTF-8 or control character (GGUF readers reject it)", i);
		else if ((k = check_value(key, &meta[i].val, e)) != FMT_OK)
			break;
		else {
			int added = fmt_nameset_add(&seen, key);
			if (added < 0)
				k = fmt_fail(e, FMT_IO, "out of memory");
			else if (added == 0)
				k = fmt_fail(e, FMT_INVALID_FORMAT, "duplicate metadata key '%s'", key);
		}
	}
	fmt_nameset_free(&seen);
	return k;
}

/* The ggml type id and byte size of t, refusing what GGUF cannot hold. */
static fmt_kind check_tensor(const fmt_tensor *t, int *type_id, fmt_err *e)
{
	size_t len = strlen(t->name);
	if (len > FMT_GGUF_MAX_NAME)
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': name is %zu bytes; GGUF allows at most %u",
				t->name, len, FMT_GGUF_MAX_NAME);
	if (!fmt_utf8_valid(t->name, len))
		return fmt_fail(e, FMT_UNSUPPORTED, "a tensor name is not valid UTF-8 (GGUF readers reject it)");
	if (t->ndim > 4 || t->ndim < 0)
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': %d dimensions; GGUF allows at most 4",
				t->name, t->ndim);
	const fmt_dtype_info *info = fmt_dtype_get(t->dtype);
	if (!info || info->ggml_id < 0)
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': dtype %s has no GGUF type", t->name,
				info && info->name ? info->name : "?");
	uint64_t inner = t->ndim ? t->shape[t->ndim - 1] : 1, nelems, nbytes;
	if (inner % info->block_elems != 0)
		return fmt_fail(e, FMT_UNSUPPORTED,
				"tensor '%s': innermost dimension %llu is not a multiple of the %s block size %u",
				t->name, (unsigned long long)inner, info->name, info->block_elems);
	fmt_kind k = fmt_dtype_nbytes(t->dtype, t->shape, t->ndim, &nelems, &nbytes, e);
	if (k != FMT_OK) {
		fmt_err_prefix(e, "tensor '%s'", t->name);
		return k;
	}
	if (nbytes != t->nbytes)
		return fmt_fail(e, FMT_INTERNAL, "tensor '%s': %llu bytes recorded, shape needs %llu", t->name,
				(unsigned long long)t->nbytes, (unsigned long long)nbytes);
	*type_id = info->ggml_id;
	return FMT_OK;
}

static fmt_kind check_tensors(const fmt_tensor *tensors, size_t n, fmt_err *e)
{
	fmt_nameset seen = { 0 };
	fmt_kind k = FMT_OK;
	for (size_t i = 0; i < n && k == FMT_OK; i++) {
		int id;
		if ((k = check_tensor(&tensors[i], &id, e)) != FMT_OK)
			break;
		int added = fmt_nameset_add(&seen, tensors[i].name);
		if (added < 0)
			k = fmt_fail(e, FMT_IO, "out of memory");
		else if (added == 0)
			k = fmt_fail(e, FMT_INVALID_FORMAT, "duplicate tensor name '%s'", tensors[i].name);
	}
	fmt_nameset_free(&seen);
	return k;
}

static fmt_kind choose_alignment(const fmt_meta *meta, size_t n, uint32_t request, uint32_t *align,
				 fmt_err *e)
{
	*align = request ? request : FMT_GGUF_DEFAULT_ALIGNMENT;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(meta[i].key, "general.alignment") != 0)
			continue;
		if (meta[i].val.type != FMT_V_U32)
			return fmt_fail(e, FMT_INVALID_FORMAT, "general.alignment must be UINT32 (found %s)",
					fmt_vtype_name(meta[i].val.type));
		if (!request)
			*align = (uint32_t)meta[i].val.v.u;
	}
	if (*align == 0 || (*align & (*align - 1)) != 0 || *align > FMT_GGUF_MAX_ALIGNMENT)
		return fmt_fail(e, request ? FMT_USAGE : FMT_INVALID_FORMAT,
				"%s %u (expected a power of two from 1 to %u)",
				request ? "alignment" : "general.alignment =", *align, FMT_GGUF_MAX_ALIGNMENT);
	return FMT_OK;
}

/* ---- writing ---- */

static fmt_kind put_metadata(gw *w, const fmt_meta *meta, size_t n, uint32_t align, int append_align)
{
	fmt_kind k = FMT_OK;
	for (size_t i = 0; i < n && k == FMT_OK; i++) {
		k = put_str(w, meta[i].key, strlen(meta[i].key));
		if (k != FMT_OK)
			break;
		if (strcmp(meta[i].key, "general.alignment") == 0) {
			fmt_value v = meta[i].val;
			v.v.u = align;
			k = put_value(w, &v);
		} else {
			k = put_value(w, &meta[i].val);
		}
	}
	if (k == FMT_OK && append_align) {
		static const char key[] = "general.alignment";
		fmt_value v;
		memset(&v, 0, sizeof v);
		v.type = FMT_V_U32;
		v.v.u = align;
		if ((k = put_str(w, key, sizeof key - 1)) == FMT_OK)
			k = put_value(w, &v);
	}
	return k;
}

static fmt_kind put_tensor_infos(gw *w, const fmt_tensor *tensors, size_t n, uint32_t align)
{
	uint64_t offset = 0;
	for (size_t i = 0; i < n; i++) {
		const fmt_tensor *t = &tensors[i];
		int id = fmt_dtype_get(t->dtype)->ggml_id;
		uint32_t n_dims = t->ndim > 0 ? (uint32_t)t->ndim : 1;
		fmt_kind k = put_str(w, t->name, strlen(t->name));
		if (k == FMT_OK)
			k = put_u32(w, n_dims);
		for (int d = 0; d < (int)n_dims && k == FMT_OK; d++)
			k = put_u64(w, t->ndim > 0 ? t->shape[t->ndim - 1 - d] : 1);
		if (k == FMT_OK)
			k = put_u32(w, (uint32_t)id);
		if (k == FMT_OK)
			k = put_u64(w, offset);
		if (k != FMT_OK)
			return k;
		uint64_t padded;
		if (fmt_align_up_u64(t->nbytes, align, &padded) || fmt_add_u64(offset, padded, &offset))
			return fmt_fail(w->e, FMT_UNSUPPORTED, "tensor '%s': data offsets overflow", t->name);
	}
	return FMT_OK;
}

/* The tensors' bytes, each padded to align: on threads > 1 placed by several threads at once
 * (converting tensors side by side, and writing one while another is converted), when the
 * output and input allow it; the bytes are the same. */
static fmt_kind put_tensor_data(gw *w, const fmt_model *src, const fmt_tensor *tensors, size_t n,
				uint32_t align, int threads)
{
	if (w->k) {
		const uint64_t start = w->k->written;
		int placed = 0;
		fmt_kind k = fmt_model_place_tensors(src, tensors, n, align, w->k, threads, &placed, w->e);
		if (placed || k != FMT_OK) {
			w->pos += w->k->written - start;
			return k;
		}
	}
	for (size_t i = 0; i < n; i++) {
		fmt_kind k = fmt_tensor_write_to(src, &tensors[i], w->k, w->e);
		if (k != FMT_OK)
			return k;
		w->pos += tensors[i].nbytes;
		if ((k = put_pad(w, align)) != FMT_OK)
			return k;
	}
	return FMT_OK;
}

/* Header, metadata, tensor infos and the pad before the data. */
static fmt_kind put_head(gw *w, const fmt_meta *meta, size_t n_meta, const fmt_tensor *tensors, size_t n_tensors,
			 uint32_t align, int append_align)
{
	uint8_t header[24];
	memcpy(header, "GGUF", 4);
	fmt_wr_u32(header + 4, 3);
	fmt_wr_u64(header + 8, n_tensors);
	fmt_wr_u64(header + 16, n_meta + (size_t)append_align);
	fmt_kind r = put(w, header, sizeof header);
	if (r == FMT_OK)
		r = put_metadata(w, meta, n_meta, align, append_align);
	if (r == FMT_OK)
		r = put_tensor_infos(w, tensors, n_tensors, align);
	if (r == FMT_OK)
		r = put_pad(w, align);
	return r;
}

/* The readers' rule on many tensors (FMT_GGUF_FREE_TENSORS): a file they would refuse is not
 * written. Its size is counted by a pass that writes nothing. */
static fmt_kind check_tensor_room(const fmt_meta *meta, size_t n_meta, const fmt_tensor *tensors, size_t n,
				  uint32_t align, int append_align, fmt_err *e)
{
	if (n <= FMT_GGUF_FREE_TENSORS)
		return FMT_OK;
	gw c = { .e = e };
	fmt_kind r = put_head(&c, meta, n_meta, tensors, n, align, append_align);
	uint64_t size = c.pos, padded;
	for (size_t i = 0; r == FMT_OK && i < n; i++)
		if (fmt_align_up_u64(tensors[i].nbytes, align, &padded) || fmt_add_u64(size, padded, &size))
			return FMT_OK; /* more than any count of tensors needs */
	if (r != FMT_OK || size / FMT_GGUF_TENSOR_BYTES >= n)
		return r;
	return fmt_fail(e, FMT_UNSUPPORTED,
			"%zu tensors in a GGUF file of %llu bytes: more than %u tensors need %u bytes of the "
			"file each (fmtkit's readers refuse it otherwise)", n, (unsigned long long)size,
			FMT_GGUF_FREE_TENSORS, FMT_GGUF_TENSOR_BYTES);
}

/* The alignment of the tensor data, and whether general.alignment must be appended to say it
 * (a non-default alignment the metadata does not name). */
static fmt_kind head_alignment(const fmt_meta *meta, size_t n_meta, uint32_t align_request, uint32_t *align,
			       int *append_align, fmt_err *e)
{
	fmt_kind r = choose_alignment(meta, n_meta, align_request, align, e);
	int have_key = 0;
	for (size_t i = 0; r == FMT_OK && i < n_meta; i++)
		have_key |= strcmp(meta[i].key, "general.alignment") == 0;
	*append_align = r == FMT_OK && !have_key && *align != FMT_GGUF_DEFAULT_ALIGNMENT;
	return r;
}

static fmt_kind write_file(const fmt_model *src, const fmt_meta *meta, size_t n_meta, const fmt_tensor *tensors,
			   size_t n_tensors, uint32_t align_request, int threads, fmt_sink *k, fmt_err *e)
{
	uint32_t align;
	int append_align;
	fmt_kind r = check_metadata(meta, n_meta, e);
	if (r == FMT_OK)
		r = check_tensors(tensors, n_tensors, e);
	if (r == FMT_OK)
		r = head_alignment(meta, n_meta, align_request, &align, &append_align, e);
	if (r != FMT_OK)
		return r;
	if ((r = check_tensor_room(meta, n_meta, tensors, n_tensors, align, append_align, e)) != FMT_OK)
		return r;

	gw w = { .k = k, .pos = 0, .e = e };
	r = put_head(&w, meta, n_meta, tensors, n_tensors, align, append_align);
	if (r == FMT_OK)
		r = put_tensor_data(&w, src, tensors, n_tensors, align, threads);
	return r;
}

fmt_kind fmt_gguf_write_file(const fmt_model *src, const fmt_meta *meta, size_t n_meta,
			 const fmt_tensor *tensors, size_t n_tensors, uint32_t align_request,
			 fmt_sink *k, fmt_err *e)
{
	return write_file(src, meta, n_meta, tensors, n_tensors, align_request, 1, k, e);
}

fmt_kind fmt_gguf_file_bytes(const fmt_meta *meta, size_t n_meta, const fmt_tensor *tensors, size_t n_tensors,
			     uint32_t align_request, uint64_t *bytes, fmt_err *e)
{
	uint32_t align;
	int append_align;
	fmt_kind r = check_metadata(meta, n_meta, e);
	if (r == FMT_OK)
		r = head_alignment(meta, n_meta, align_request, &align, &append_align, e);
	if (r != FMT_OK)
		return r;
	gw c = { .e = e };   /* writes nothing: counts */
	r = put_head(&c, meta, n_meta, tensors, n_tensors, align, append_align);
	uint64_t size = c.pos, padded;
	for (size_t i = 0; r == FMT_OK && i < n_tensors; i++)
		if (fmt_align_up_u64(tensors[i].nbytes, align, &padded) || fmt_add_u64(size, padded, &size))
			r = fmt_fail(e, FMT_UNSUPPORTED, "a GGUF file beyond 2^64 bytes");
	*bytes = size;
	return r;
}

fmt_kind fmt_gguf_check_meta(const fmt_meta *meta, size_t n_meta, uint32_t *align, fmt_err *e)
{
	fmt_kind k = check_metadata(meta, n_meta, e);
	return k == FMT_OK ? choose_alignment(meta, n_meta, 0, align, e) : k;
}

fmt_kind fmt_gguf_put_meta(fmt_sb *mem, const fmt_meta *meta, size_t n_meta, uint32_t align, fmt_err *e)
{
	gw w = { .mem = mem, .e = e };
	return put_metadata(&w, meta, n_meta, align, 0);
}

/* The GGUF options of o (alignment), when o carries them. */
static const fmt_gguf_opts *gguf_opts(const fmt_write_opts *o)
{
	return o && o->private_for == &fmt_driver_gguf ? o->private_opts : NULL;
}

fmt_kind fmt_gguf_write(const fmt_model *m, fmt_sink *k, const fmt_write_opts *o, fmt_err *e)
{
	const fmt_gguf_opts *g = gguf_opts(o);
	return write_file(m, m->meta, m->n_meta, m->tensors, m->n_tensors, g ? g->alignment : 0, o ? o->threads : 1, k, e);
}

int fmt_gguf_holds_dtype(fmt_dtype t)
{
	return fmt_dtype_get(t)->ggml_id >= 0;
}

/* llama.cpp's converters: norms and biases (1-D) stay F32; rows that do not divide into the
 * 32-element blocks of Q8_0, Q4_0... are written as F16. A 256-element type is kept: the
 * planner refuses the tensor (llama-quantize's fallbacks to other types are for presets). */
fmt_dtype fmt_gguf_choose_dtype(const fmt_tensor *t, fmt_dtype want, const char **why)
{
	uint64_t row = t->ndim ? t->shape[t->ndim - 1] : 1;
	uint64_t block = fmt_dtype_get(want)->block_elems;
	if (want == FMT_DT_F32)
		return want;
	if (t->ndim <= 1) {
		*why = "1-D tensors stay F32 in GGUF";
		return FMT_DT_F32;
	}
	if (block > 1 && block <= 32 && row % block != 0) {
		*why = "rows are not a multiple of the block size";
		return FMT_DT_F16;
	}
	return want;
}
