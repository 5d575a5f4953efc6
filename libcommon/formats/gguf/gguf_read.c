/* GGUF reader: header, metadata and tensor infos, validated per specs/gguf.md §16 and
 * Appendix A, reading only the header region (bounded chunks through fmt_source_read).
 *
 * Policy choices (where the spec leaves one):
 *  - versions 2 and 3 are read identically; 0, 1, byte-swapped and > 3 are Unsupported;
 *  - a BOOL byte other than 0/1 is InvalidFormat (the reference accepts it as true);
 *  - general.alignment must be UINT32, a non-zero power of two and at most 65536;
 *  - keys: non-empty, at most 65535 bytes, valid UTF-8, no control characters, unique (dotted
 *    snake case is not enforced: real files carry other spellings); string values may hold
 *    any bytes (tools escape them);
 *  - tensor names: < 64 bytes, valid UTF-8, no NUL, unique; empty is accepted (as ggml);
 *  - nested arrays (an array of ARRAY: each item its own element type, count and items, as
 *    gguf-py writes them) are read up to FMT_GGUF_MAX_NESTING levels deep. ggml's reader
 *    refuses them and the spec says to forbid them, but fmtkit's issue 3 asks for every value
 *    type including nested arrays, and the issue wins; empty arrays are accepted;
 *  - unknown or removed ggml type ids are Unsupported naming the id;
 *  - offsets must be exactly Σ align_up(nbytes) of the previous tensors, and every tensor must
 *    end within the file (data_start + offset + nbytes <= size). A missing pad after the last
 *    tensor and trailing bytes are accepted (as llama.cpp's mmap loader). A file without the pad
 *    after the infos cannot be told apart from one whose data merely starts later; it is
 *    rejected only when a tensor then runs past the end of the file.
 *  - metadata arrays may hold 2^25 items in all (real tokenizers use < 2^21). Scalar and string
 *    items are held packed, about their bytes in the file; an item of an array of arrays
 *    becomes a 40-byte fmt_value (12 bytes in the file at least), so memory stays below
 *    about 1.3 GiB whatever the file claims;
 *  - a file may hold up to FMT_GGUF_FREE_TENSORS (65536) tensors, more only if it has
 *    FMT_GGUF_TENSOR_BYTES (1 KiB) a tensor: a tensor costs about 1 KB of memory in a
 *    conversion (model, converted model, plan), 35 bytes in the file when it is empty;
 *  - element counts are checked products (< 2^63) and byte sizes are bounded by the file size,
 *    closing the two gaps of Appendix A ({2^32,2^31,2,1} and Q8_0 ne[0] = 2^62). */
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/half.h"
#include "fmt/gguf.h"
#include "fmt/out.h"
#include "gguf_internal.h"

#define RD_CHUNK 65536u
#define MIN_KV_BYTES 14u      /* 8 length + 1 key byte + 4 type + 1 value byte */
#define MIN_INFO_BYTES 24u    /* 8 length + 4 n_dims + 4 type + 8 offset */
#define I64_LIMIT (1ull << 63)

/* ---- helpers shared with the writer ---- */

size_t fmt_gguf_scalar_size(uint32_t type)
{
	switch (type) {
	case FMT_V_U8: case FMT_V_I8: case FMT_V_BOOL: return 1;
	case FMT_V_U16: case FMT_V_I16: return 2;
	case FMT_V_U32: case FMT_V_I32: case FMT_V_F32: return 4;
	case FMT_V_U64: case FMT_V_I64: case FMT_V_F64: return 8;
	default: return 0;
	}
}

/* ---- a bounded, buffered cursor over the source ---- */

typedef struct rd {
	fmt_source *s;
	uint64_t pos;
	uint8_t *chunk;
	uint64_t chunk_off;
	size_t chunk_len;
	uint64_t array_items; /* items in all metadata arrays so far */
	fmt_err *e;
} rd;

static uint64_t rd_left(const rd *r)
{
	return r->s->size - r->pos;
}

static fmt_kind rd_bytes(rd *r, void *dst, uint64_t n, const char *what)
{
	if (n > rd_left(r))
		return fmt_fail(r->e, FMT_INVALID_FORMAT,
				"truncated: %s at offset %llu needs %llu bytes, %llu left in the file", what,
				(unsigned long long)r->pos, (unsigned long long)n,
				(unsigned long long)rd_left(r));
	uint8_t *out = dst;
	while (n > 0) {
		if (r->pos >= r->chunk_off && r->pos < r->chunk_off + r->chunk_len) {
			size_t at = (size_t)(r->pos - r->chunk_off);
			size_t take = r->chunk_len - at < n ? r->chunk_len - at : (size_t)n;
			memcpy(out, r->chunk + at, take);
			out += take, n -= take, r->pos += take;
		} else if (n >= RD_CHUNK) {
			fmt_kind k = fmt_source_read(r->s, r->pos, out, (size_t)n, r->e);
			if (k != FMT_OK)
				return k;
			r->pos += n;
			n = 0;
		} else {
			uint64_t left = rd_left(r);
			r->chunk_off = r->pos;
			r->chunk_len = left < RD_CHUNK ? (size_t)left : RD_CHUNK;
			fmt_kind k = fmt_source_read(r->s, r->pos, r->chunk, r->chunk_len, r->e);
			if (k != FMT_OK)
				return k;
		}
	}
	return FMT_OK;
}

static fmt_kind rd_u32(rd *r, uint32_t *v, const char *what)
{
	uint8_t b[4];
	fmt_kind k = rd_bytes(r, b, 4, what);
	*v = k == FMT_OK ? fmt_rd_u32(b) : 0;
	return k;
}

static fmt_kind rd_u64(rd *r, uint64_t *v, const char *what)
{
	uint8_t b[8];
	fmt_kind k = rd_bytes(r, b, 8, what);
	*v = k == FMT_OK ? fmt_rd_u64(b) : 0;
	return k;
}

/* The length of a string of at most cap bytes whose bytes are all in the file. */
static fmt_kind rd_strlen(rd *r, uint64_t cap, uint64_t *len, const char *what)
{
	uint64_t n;
	fmt_kind k = rd_u64(r, &n, what);
	if (k != FMT_OK)
		return k;
	if (n > cap)
		return fmt_fail(r->e, FMT_INVALID_FORMAT, "%s at offset %llu: length %llu exceeds the limit %llu",
				what, (unsigned long long)(r->pos - 8), (unsigned long long)n,
				(unsigned long long)cap);
	if (n > rd_left(r))
		return fmt_fail(r->e, FMT_INVALID_FORMAT,
				"truncated: %s at offset %llu has length %llu, only %llu bytes left", what,
				(unsigned long long)(r->pos - 8), (unsigned long long)n,
				(unsigned long long)rd_left(r));
	*len = n;
	return FMT_OK;
}

/* A length-prefixed string of at most cap bytes, returned NUL-terminated (malloc'd). */
static fmt_kind rd_string(rd *r, uint64_t cap, char **out, uint64_t *len, const char *what)
{
	uint64_t n;
	*out = NULL;
	fmt_kind k = rd_strlen(r, cap, &n, what);
	if (k != FMT_OK)
		return k;
	char *s = malloc((size_t)n + 1);
	if (!s)
		return fmt_fail(r->e, FMT_IO, "out of memory reading %s (%llu bytes)", what,
				(unsigned long long)n);
	k = rd_bytes(r, s, n, what);
	if (k != FMT_OK) {
		free(s);
		return k;
	}
	s[n] = '\0';
	*out = s;
	*len = n;
	return FMT_OK;
}

/* ---- metadata ---- */

static fmt_kind rd_scalar(rd *r, uint32_t type, fmt_value *v, const char *key)
{
	uint8_t b[8];
	memset(v, 0, sizeof *v);
	v->type = (fmt_vtype)type;
	if (type == FMT_V_STR) {
		uint64_t len;
		fmt_kind k = rd_string(r, FMT_GGUF_MAX_STRING, &v->v.str.ptr, &len, "string value");
		if (k != FMT_OK)
			fmt_err_prefix(r->e, "key '%s'", key);
		v->v.str.len = k == FMT_OK ? (size_t)len : 0;
		return k;
	}
	size_t n = fmt_gguf_scalar_size(type);
	fmt_kind k = rd_bytes(r, b, n, "metadata value");
	if (k != FMT_OK) {
		fmt_err_prefix(r->e, "key '%s'", key);
		return k;
	}
	switch (type) {
	case FMT_V_U8: v->v.u = b[0]; break;
	case FMT_V_I8: v->v.i = (int8_t)b[0]; break;
	case FMT_V_U16: v->v.u = fmt_rd_u16(b); break;
	case FMT_V_I16: v->v.i = (int16_t)fmt_rd_u16(b); break;
	case FMT_V_U32: v->v.u = fmt_rd_u32(b); break;
	case FMT_V_I32: v->v.i = (int32_t)fmt_rd_u32(b); break;
	case FMT_V_U64: v->v.u = fmt_rd_u64(b); break;
	case FMT_V_I64: v->v.i = (int64_t)fmt_rd_u64(b); break;
	case FMT_V_F32: v->v.f = fmt_bits_f32(fmt_rd_u32(b)); break;
	case FMT_V_F64: v->v.f = fmt_bits_f64(fmt_rd_u64(b)); break;
	case FMT_V_BOOL:
		if (b[0] > 1)
			return fmt_fail(r->e, FMT_INVALID_FORMAT,
					"key '%s': BOOL byte %u at offset %llu (expected 0 or 1)", key, b[0],
					(unsigned long long)(r->pos - 1));
		v->v.b = b[0];
		break;
	}
	return FMT_OK;
}

/* Scalar items stay as the file's packed little-endian bytes (need was checked against the
 * bytes left): one byte per U8 item in memory, not a fmt_value each. */
static fmt_kind rd_packed(rd *r, fmt_value *v, const char *key, uint64_t count)
{
	size_t each = fmt_gguf_scalar_size(v->v.arr.elem), n = (size_t)count * each;
	v->v.arr.packed = malloc(n ? n : 1);
	if (!v->v.arr.packed)
		return fmt_fail(r->e, FMT_IO, "key '%s': out of memory for %llu array items", key,
				(unsigned long long)count);
	v->v.arr.count = count;
	uint64_t start = r->pos;
	fmt_kind k = rd_bytes(r, v->v.arr.packed, n, "array items");
	if (k != FMT_OK) {
		fmt_err_prefix(r->e, "key '%s'", key);
		return k;
	}
	if (v->v.arr.elem == FMT_V_BOOL)
		for (size_t i = 0; i < n; i++)
			if (v->v.arr.packed[i] > 1)
				return fmt_fail(r->e, FMT_INVALID_FORMAT,
						"key '%s': item %zu: BOOL byte %u at offset %llu (expected 0 or 1)", key, i,
						v->v.arr.packed[i], (unsigned long long)(start + i));
	return FMT_OK;
}

/* The strings of an array, packed in one buffer (fmt_value_strs): a first pass over their
 * lengths (checked as rd_string checks them) sizes it, a second reads the bytes into it. */
static fmt_kind rd_strs(rd *r, fmt_value *v, const char *key, uint64_t count)
{
	uint64_t start = r->pos, bytes = 0, len, i;
	fmt_kind k = FMT_OK;
	for (i = 0; i < count && k == FMT_OK; i++)
		if ((k = rd_strlen(r, FMT_GGUF_MAX_STRING, &len, "string value")) == FMT_OK) {
			r->pos += len; /* in the file: rd_strlen checked it */
			bytes += len;  /* at most the file's size */
		}
	if (k == FMT_OK && fmt_value_strs(v, count, bytes, r->e) != FMT_OK)
		return fmt_fail(r->e, FMT_IO, "key '%s': out of memory for %llu array items", key,
				(unsigned long long)count);
	for (r->pos = start, i = 0; i < count && k == FMT_OK; i++)
		if ((k = rd_u64(r, &len, "string value")) == FMT_OK)
			k = rd_bytes(r, fmt_value_strs_put(v, i, (size_t)len), len, "string value");
	if (k != FMT_OK) {
		fmt_err_prefix(r->e, "key '%s'", key);
		fmt_err_prefix(r->e, "item %llu", (unsigned long long)(i - 1));
	}
	return k;
}

static fmt_kind rd_array(rd *r, fmt_value *v, const char *key, unsigned depth)
{
	uint32_t elem;
	uint64_t count;
	memset(v, 0, sizeof *v);
	v->type = FMT_V_ARRAY;
	fmt_kind k = rd_u32(r, &elem, "array element type");
	if (k == FMT_OK)
		k = rd_u64(r, &count, "array count");
	if (k != FMT_OK) {
		fmt_err_prefix(r->e, "key '%s'", key);
		return k;
	}
	if (elem == FMT_V_ARRAY && depth >= FMT_GGUF_MAX_NESTING)
		return fmt_fail(r->e, FMT_INVALID_FORMAT, "key '%s': arrays nested more than %u levels deep", key,
				FMT_GGUF_MAX_NESTING);
	if (elem > FMT_V_F64)
		return fmt_fail(r->e, FMT_INVALID_FORMAT,
				"key '%s': array element type %u is not a GGUF value type (0-12)", key, elem);
	/* A string is at least its 8-byte length; a nested array its type and count. */
	uint64_t min_each = elem == FMT_V_STR ? 8 : elem == FMT_V_ARRAY ? 12 : fmt_gguf_scalar_size(elem), need;
	if (count > FMT_GGUF_MAX_STRING || fmt_mul_u64(count, min_each, &need) || need > rd_left(r))
		return fmt_fail(r->e, FMT_INVALID_FORMAT,
				"key '%s': array of %llu %s values needs more than the %llu bytes left", key,
				(unsigned long long)count, fmt_vtype_name((fmt_vtype)elem),
				(unsigned long long)rd_left(r));
	if (count > FMT_GGUF_MAX_ARRAY_ITEMS - r->array_items)
		return fmt_fail(r->e, FMT_INVALID_FORMAT,
				"key '%s': %llu more array items exceed the limit of %llu in all metadata arrays",
				key, (unsigned long long)count, (unsigned long long)FMT_GGUF_MAX_ARRAY_ITEMS);
	r->array_items += count;
	v->v.arr.elem = (fmt_vtype)elem;
	if (elem != FMT_V_STR && elem != FMT_V_ARRAY)
		return rd_packed(r, v, key, count);
	if (elem == FMT_V_STR)
		return rd_strs(r, v, key, count);
	if (count == 0)
		return FMT_OK;
	v->v.arr.items = calloc((size_t)count, sizeof(fmt_value));
	if (!v->v.arr.items)
		return fmt_fail(r->e, FMT_IO, "key '%s': out of memory for %llu array items", key,
				(unsigned long long)count);
	v->v.arr.count = count; /* calloc'd items are U8 zeros: safe to free at any point */
	for (uint64_t i = 0; i < count; i++) {
		k = elem == FMT_V_ARRAY ? rd_array(r, &v->v.arr.items[i], key, depth + 1)
					: rd_scalar(r, elem, &v->v.arr.items[i], key);
		if (k != FMT_OK) {
			fmt_err_prefix(r->e, "item %llu", (unsigned long long)i);
			return k;
		}
	}
	return FMT_OK;
}

static fmt_kind check_key(rd *r, const char *key, uint64_t len, uint64_t index)
{
	if (len == 0)
		return fmt_fail(r->e, FMT_INVALID_FORMAT, "key %llu: empty key", (unsigned long long)index);
	for (uint64_t i = 0; i < len; i++)
		if ((uint8_t)key[i] < 0x20 || key[i] == 0x7F)
			return fmt_fail(r->e, FMT_INVALID_FORMAT,
					"key %llu: control character 0x%02x in key", (unsigned long long)index,
					(uint8_t)key[i]);
	if (!fmt_utf8_valid(key, (size_t)len))
		return fmt_fail(r->e, FMT_INVALID_FORMAT, "key %llu: invalid UTF-8 in key", (unsigned long long)index);
	return FMT_OK;
}

static fmt_kind check_alignment(rd *r, const fmt_value *v, uint32_t *align)
{
	if (v->type != FMT_V_U32)
		return fmt_fail(r->e, FMT_INVALID_FORMAT, "general.alignment must be UINT32 (found %s)",
				fmt_vtype_name(v->type));
	uint64_t a = v->v.u;
	if (a == 0 || (a & (a - 1)) != 0 || a > FMT_GGUF_MAX_ALIGNMENT)
		return fmt_fail(r->e, FMT_INVALID_FORMAT,
				"general.alignment = %llu (expected a power of two from 1 to %u)",
				(unsigned long long)a, FMT_GGUF_MAX_ALIGNMENT);
	*align = (uint32_t)a;
	return FMT_OK;
}

/* Append (key, *v) to m, taking ownership of both. */
static fmt_kind add_meta_owned(fmt_model *m, char *key, fmt_value *v, fmt_err *e)
{
	fmt_value placeholder;
	memset(&placeholder, 0, sizeof placeholder);
	placeholder.type = FMT_V_U8;
	fmt_kind k = fmt_model_add_meta(m, key, &placeholder, e);
	free(key);
	if (k != FMT_OK) {
		fmt_value_free(v);
		return k;
	}
	m->meta[m->n_meta - 1].val = *v;
	return FMT_OK;
}

static fmt_kind rd_metadata(rd *r, uint64_t kv_count, fmt_model *dst, uint32_t *align)
{
	fmt_nameset seen = { 0 };
	fmt_kind k = FMT_OK;
	for (uint64_t i = 0; i < kv_count && k == FMT_OK; i++) {
		char *key;
		uint64_t len;
		uint32_t type;
		fmt_value v;
		k = rd_string(r, FMT_GGUF_MAX_KEY, &key, &len, "key");
		if (k != FMT_OK)
			break;
		k = check_key(r, key, len, i);
		if (k == FMT_OK && (k = rd_u32(r, &type, "value type")) != FMT_OK)
			fmt_err_prefix(r->e, "key '%s'", key);
		if (k == FMT_OK && type > FMT_V_F64)
			k = fmt_fail(r->e, FMT_INVALID_FORMAT,
				     "key '%s': value type %u is not a GGUF value type (0-12)", key, type);
		if (k == FMT_OK)
			k = type == FMT_V_ARRAY ? rd_array(r, &v, key, 0) : rd_scalar(r, type, &v, key);
		else
			memset(&v, 0, sizeof v);
		if (k == FMT_OK && strcmp(key, "general.alignment") == 0)
			k = check_alignment(r, &v, align);
		if (k != FMT_OK) {
			fmt_value_free(&v);
			free(key);
			break;
		}
		k = add_meta_owned(dst, key, &v, r->e);
		if (k != FMT_OK)
			break;
		const char *stored = dst->meta[dst->n_meta - 1].key;
		int added = fmt_nameset_add(&seen, stored);
		if (added < 0)
			k = fmt_fail(r->e, FMT_IO, "out of memory");
		else if (added == 0)
			k = fmt_fail(r->e, FMT_INVALID_FORMAT, "duplicate key '%s'", stored);
	}
	fmt_nameset_free(&seen);
	return k;
}

/* ---- tensor infos ---- */

static fmt_kind check_tensor_name(rd *r, const char *name, uint64_t len, uint64_t index)
{
	if (memchr(name, '\0', (size_t)len))
		return fmt_fail(r->e, FMT_INVALID_FORMAT, "tensor %llu: name contains a NUL byte",
				(unsigned long long)index);
	if (!fmt_utf8_valid(name, (size_t)len))
		return fmt_fail(r->e, FMT_INVALID_FORMAT, "tensor %llu: invalid UTF-8 in name",
				(unsigned long long)index);
	return FMT_OK;
}

/* Dimensions, type and byte size of one tensor info (after its name). */
static fmt_kind rd_tensor_shape(rd *r, const char *name, fmt_tensor *t)
{
	uint32_t n_dims, type_id;
	uint64_t ne[4] = { 1, 1, 1, 1 };
	fmt_kind k = rd_u32(r, &n_dims, "n_dims");
	if (k != FMT_OK)
		return k;
	if (n_dims > 4)
		return fmt_fail(r->e, FMT_INVALID_FORMAT, "tensor '%s': n_dims = %u (at most 4)", name, n_dims);
	for (uint32_t d = 0; d < n_dims; d++) {
		if ((k = rd_u64(r, &ne[d], "ne")) != FMT_OK)
			return k;
		if (ne[d] >= I64_LIMIT)
			return fmt_fail(r->e, FMT_INVALID_FORMAT, "tensor '%s': ne[%u] = %lld is negative", name,
					d, (long long)(int64_t)ne[d]);
	}
	if ((k = rd_u32(r, &type_id, "tensor type")) != FMT_OK)
		return k;
	fmt_dtype dt = fmt_dtype_from_ggml((int32_t)type_id);
	const fmt_dtype_info *info = fmt_dtype_get(dt);
	if (dt == FMT_DT_INVALID || !info || info->block_elems == 0)
		return fmt_fail(r->e, FMT_UNSUPPORTED, "tensor '%s': unknown ggml type id %d", name,
				(int32_t)type_id);
	uint64_t blck = info->block_elems, tsize = info->block_bits / 8;
	if (ne[0] % blck != 0)
		return fmt_fail(r->e, FMT_INVALID_FORMAT,
				"tensor '%s': ne[0] = %llu is not a multiple of the %s block size %llu", name,
				(unsigned long long)ne[0], info->name, (unsigned long long)blck);
	/* nbytes = (ne0 / blck) * tsize * ne1 * ne2 * ne3, every step checked */
	uint64_t nelems = 1, nbytes;
	int over = fmt_mul_u64(ne[0] / blck, tsize, &nbytes);
	for (int d = 0; d < 4; d++) {
		over |= fmt_mul_u64(nelems, ne[d], &nelems);
		if (d > 0)
			over |= fmt_mul_u64(nbytes, ne[d], &nbytes);
	}
	if (over || nelems >= I64_LIMIT)
		return fmt_fail(r->e, FMT_INVALID_FORMAT,
				"tensor '%s': element count %llu x %llu x %llu x %llu overflows", name,
				(unsigned long long)ne[0], (unsigned long long)ne[1],
				(unsigned long long)ne[2], (unsigned long long)ne[3]);
	if (nbytes > r->s->size)
		return fmt_fail(r->e, FMT_INVALID_FORMAT,
				"tensor '%s': %llu bytes of data exceed the file size (%llu bytes)", name,
				(unsigned long long)nbytes, (unsigned long long)r->s->size);
	t->dtype = dt;
	t->ndim = (int)n_dims;
	for (uint32_t d = 0; d < n_dims; d++)
		t->shape[d] = ne[n_dims - 1 - d];
	t->nelems = nelems;
	t->nbytes = nbytes;
	return FMT_OK;
}

static fmt_kind rd_tensor_infos(rd *r, uint64_t count, fmt_model *dst, int src, uint32_t align)
{
	fmt_nameset seen = { 0 };
	uint64_t expected = 0;
	fmt_kind k = FMT_OK;
	for (uint64_t i = 0; i < count && k == FMT_OK; i++) {
		char *name;
		uint64_t len, offset;
		fmt_tensor t;
		memset(&t, 0, sizeof t);
		k = rd_string(r, FMT_GGUF_MAX_NAME, &name, &len, "tensor name");
		if (k != FMT_OK) {
			fmt_err_prefix(r->e, "tensor %llu", (unsigned long long)i);
			break;
		}
		k = check_tensor_name(r, name, len, i);
		if (k == FMT_OK)
			k = rd_tensor_shape(r, name, &t);
		if (k == FMT_OK && (k = rd_u64(r, &offset, "tensor offset")) != FMT_OK)
			fmt_err_prefix(r->e, "tensor '%s'", name);
		if (k == FMT_OK && offset != expected)
			k = fmt_fail(r->e, FMT_INVALID_FORMAT,
				     "tensor '%s': offset %llu, expected %llu (data must follow the previous tensor, padded to %u bytes)",
				     name, (unsigned long long)offset, (unsigned long long)expected, align);
		uint64_t padded;
		if (k == FMT_OK && (fmt_align_up_u64(t.nbytes, align, &padded) ||
				    fmt_add_u64(expected, padded, &expected)))
			k = fmt_fail(r->e, FMT_INVALID_FORMAT, "tensor '%s': data offsets overflow", name);
		if (k == FMT_OK) {
			t.name = name;
			t.source = src;
			t.offset = offset; /* relative until data_start is known */
			t.file_offset = offset;
			fmt_tensor *stored;
			k = fmt_model_add_tensor(dst, &t, &stored, r->e);
			if (k == FMT_OK) {
				int added = fmt_nameset_add(&seen, stored->name);
				if (added < 0)
					k = fmt_fail(r->e, FMT_IO, "out of memory");
				else if (added == 0)
					k = fmt_fail(r->e, FMT_INVALID_FORMAT, "duplicate tensor name '%s'", name);
			}
		}
		free(name);
	}
	fmt_nameset_free(&seen);
	return k;
}

/* ---- header ---- */

static fmt_kind check_version(rd *r, uint32_t version)
{
	if (version == 2 || version == 3)
		return FMT_OK;
	if (version == 0)
		return fmt_fail(r->e, FMT_UNSUPPORTED, "GGUF version 0 is not supported (2 and 3 are)");
	if (version == 1)
		return fmt_fail(r->e, FMT_UNSUPPORTED, "GGUF version 1 (32-bit counts) is not supported");
	if ((version & 0xFFFFu) == 0)
		return fmt_fail(r->e, FMT_UNSUPPORTED,
				"version field 0x%08x is byte-swapped: big-endian GGUF files are not supported",
				version);
	return fmt_fail(r->e, FMT_UNSUPPORTED, "GGUF version %u is not supported (2 and 3 are)", version);
}

static fmt_kind rd_header(rd *r, gguf_file_info *info, uint64_t *n_tensors, uint64_t *n_kv)
{
	uint8_t h[24];
	fmt_kind k = rd_bytes(r, h, sizeof h, "header");
	if (k != FMT_OK)
		return k;
	if (memcmp(h, "GGUF", 4) != 0)
		return fmt_fail(r->e, FMT_INVALID_FORMAT,
				"bad magic %02x %02x %02x %02x (expected \"GGUF\")", h[0], h[1], h[2], h[3]);
	info->version = fmt_rd_u32(h + 4);
	if ((k = check_version(r, info->version)) != FMT_OK)
		return k;
	*n_tensors = fmt_rd_u64(h + 8);
	*n_kv = fmt_rd_u64(h + 16);
	if (*n_tensors >= I64_LIMIT || *n_kv >= I64_LIMIT)
		return fmt_fail(r->e, FMT_INVALID_FORMAT, "%s %llu is negative as i64",
				*n_tensors >= I64_LIMIT ? "tensor_count" : "kv_count",
				(unsigned long long)(*n_tensors >= I64_LIMIT ? *n_tensors : *n_kv));
	uint64_t need_kv, need_ti, need;
	if (fmt_mul_u64(*n_kv, MIN_KV_BYTES, &need_kv) || fmt_mul_u64(*n_tensors, MIN_INFO_BYTES, &need_ti) ||
	    fmt_add_u64(need_kv, need_ti, &need) || need > rd_left(r))
		return fmt_fail(r->e, FMT_INVALID_FORMAT,
				"kv_count %llu and tensor_count %llu cannot fit in the %llu bytes after the header",
				(unsigned long long)*n_kv, (unsigned long long)*n_tensors,
				(unsigned long long)rd_left(r));
	if (*n_tensors > FMT_GGUF_FREE_TENSORS && *n_tensors > r->s->size / FMT_GGUF_TENSOR_BYTES)
		return fmt_fail(r->e, FMT_INVALID_FORMAT,
				"tensor_count %llu in a file of %llu bytes: more than %u tensors need %u bytes of "
				"the file each", (unsigned long long)*n_tensors, (unsigned long long)r->s->size,
				FMT_GGUF_FREE_TENSORS, FMT_GGUF_TENSOR_BYTES);
	return FMT_OK;
}

fmt_kind fmt_gguf_parse_file(fmt_model *meta_dst, fmt_model *tensor_dst, int src, gguf_file_info *info,
			 fmt_err *e)
{
	rd r = { .s = &tensor_dst->sources[src], .e = e };
	uint64_t n_tensors = 0, n_kv = 0;
	size_t first = tensor_dst->n_tensors;
	memset(info, 0, sizeof *info);
	info->alignment = FMT_GGUF_DEFAULT_ALIGNMENT;
	r.chunk = malloc(RD_CHUNK);
	if (!r.chunk)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = rd_header(&r, info, &n_tensors, &n_kv);
	if (k == FMT_OK)
		k = rd_metadata(&r, n_kv, meta_dst, &info->alignment);
	info->infos_start = r.pos;
	if (k == FMT_OK)
		k = rd_tensor_infos(&r, n_tensors, tensor_dst, src, info->alignment);
	info->infos_end = r.pos;
	free(r.chunk);
	if (k != FMT_OK)
		return k;
	if (fmt_align_up_u64(r.pos, info->alignment, &info->data_start))
		return fmt_fail(e, FMT_INVALID_FORMAT, "data section offset overflows");
	for (size_t i = first; i < tensor_dst->n_tensors; i++) {
		fmt_tensor *t = &tensor_dst->tensors[i];
		uint64_t begin, end;
		if (fmt_add_u64(info->data_start, t->file_offset, &begin) ||
		    fmt_add_u64(begin, t->nbytes, &end) || end > r.s->size)
			return fmt_fail(e, FMT_INVALID_FORMAT,
					"tensor '%s': data at offset %llu + %llu bytes runs past the end of the file (%llu bytes)",
					t->name, (unsigned long long)info->data_start + t->file_offset,
					(unsigned long long)t->nbytes, (unsigned long long)r.s->size);
		t->offset = begin;
	}
	return FMT_OK;
}

/* ---- the driver ---- */

static int gguf_probe(const uint8_t *head, size_t n, uint64_t file_size)
{
	(void)file_size;
	return n >= 4 && memcmp(head, "GGUF", 4) == 0 ? 100 : 0;
}

static fmt_kind gguf_open(fmt_model *m, fmt_err *e)
{
	gguf_file_info info;
	fmt_gguf_info *st = calloc(1, sizeof *st);
	if (!st)
		return fmt_fail(e, FMT_IO, "out of memory");
	m->format_state = st;
	fmt_kind k = fmt_gguf_parse_file(m, m, 0, &info, e);
	if (k != FMT_OK)
		return k;
	m->version = info.version;
	st->alignment = info.alignment;
	st->data_start = info.data_start;
	st->infos_start = info.infos_start;
	st->infos_end = info.infos_end;
	st->n_shards = 1;
	return fmt_gguf_open_split_set(m, st, e);
}

static void gguf_close(fmt_model *m)
{
	free(m->format_state);
	m->format_state = NULL;
}

const fmt_gguf_info *fmt_gguf_info_of(const fmt_model *m)
{
	return m->driver == &fmt_driver_gguf ? m->format_state : NULL;
}

/* For fmt-inspect: the file type by name, when the file says it (as UINT32, as llama.cpp
 * reads it). */
static json_t *gguf_describe(const fmt_model *m)
{
	const fmt_value *v = fmt_model_get_meta(m, FMT_GGUF_KEY_FILE_TYPE);
	if (!v || v->type != FMT_V_U32)
		return NULL;
	const char *name = fmt_gguf_ftype_name(v->v.u);
	char unknown[40];
	if (!name) {
		snprintf(unknown, sizeof unknown, "unknown (%llu)", (unsigned long long)v->v.u);
		name = unknown;
	}
	return json_pack("{s:s}", "file_type", name);
}

/* What llama.cpp cannot load a model without; what describes one file of a set. */
static const char *const gguf_required_keys[] = { "general.architecture", NULL };
static const char *const gguf_layout_keys[] = { "general.alignment", "split.*", NULL };

/* general.architecture values of llama.cpp's most used converters. */
static const char *const gguf_archs[] = { "llama", "qwen2", "gemma2", "phi3", "gpt2", "mistral", NULL };

const fmt_driver fmt_driver_gguf = {
	.name = "gguf",
	.extension = ".gguf",
	.title = "GGUF",
	.probe = gguf_probe,
	.open = gguf_open,
	.verify = NULL,
	.caps = FMT_CAP_TYPED_META | FMT_CAP_UNITS_AS_META | FMT_CAP_DEQUANT_GUARDED,
	.holds_dtype = fmt_gguf_holds_dtype,
	.choose_dtype = fmt_gguf_choose_dtype,
	.default_dtype = "f16",
	.mix_dtypes = fmt_gguf_mix_dtypes,
	.dtype_mixes = fmt_gguf_dtype_mixes,
	.dtype_alias = fmt_gguf_dtype_alias,
	.options = &fmt_gguf_quant_options,
	.arch_key = "general.architecture",
	.archs = gguf_archs,
	/* The first shard of a gguf-split set opens the whole set: one driver for both. */
	.set_driver = &fmt_driver_gguf,
	.file_driver = &fmt_driver_gguf,
	.write = fmt_gguf_write,
	.plan_shards = fmt_gguf_plan_shards,
	.write_sharded = fmt_gguf_write_sharded,
	.shard_limits = FMT_GGUF_SHARD_LIMITS,
	.default_shard_tensors = FMT_GGUF_SPLIT_TENSORS,
	.derive_meta = fmt_gguf_derive_meta,
	.finish_meta = fmt_gguf_finish_meta,
	.derived_keys = fmt_gguf_derived_keys,
	.foreign_names = fmt_gguf_foreign_names,
	.close = gguf_close,
	.describe = gguf_describe,
	.required_keys = gguf_required_keys,
	.layout_keys = gguf_layout_keys,
	.edit_meta = fmt_gguf_edit_meta,
};
