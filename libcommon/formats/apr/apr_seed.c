/* The seed layout (specs/apr.md Part A): 32-byte header, JSON metadata, tensor index,
 * 64-aligned segments (raw, or one LZ4/zstd frame each), footer with XXH3-64 and total size. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fmt/checked.h"
#include "fmt/shardset.h"
#include "fmt/strbuf.h"
#include "fmt/tree_budget.h"
#include "apr_internal.h"

static const uint8_t SEED_MAGIC[4] = { 'A', 'P', 'R', 0x02 };

/* ---- dtype codes (A.7) ---- */

static const fmt_dtype SEED_TYPES[] = {
	FMT_DT_F32, FMT_DT_F16, FMT_DT_Q4_0, FMT_DT_Q8_0, FMT_DT_Q4_K, FMT_DT_Q6_K, FMT_DT_I8,
	FMT_DT_I16, FMT_DT_I32, FMT_DT_I64, FMT_DT_F64, FMT_DT_BF16,
};

fmt_dtype fmt_apr_seed_dtype(unsigned code)
{
	fmt_dtype t = fmt_dtype_from_ggml(code);
	return fmt_apr_seed_code(t) >= 0 ? t : FMT_DT_INVALID;
}

int fmt_apr_seed_code(fmt_dtype t)
{
	for (size_t i = 0; i < sizeof SEED_TYPES / sizeof SEED_TYPES[0]; i++)
		if (SEED_TYPES[i] == t)
			return fmt_dtype_get(t)->ggml_id;
	return -1;
}

static int is_block(fmt_dtype t)
{
	return fmt_dtype_get(t)->block_elems > 1;
}

/* ---- checksum ---- */

static fmt_kind read_source(void *s, uint64_t off, void *dst, size_t n, fmt_err *e)
{
	return fmt_source_read(s, off, dst, n, e);
}

/* XXH3-64 of n bytes of a source from 0, read by pread (no mapping: mapping and populating
 * windows costs as much as the copy and charges the pages to the process); with a pool (not
 * NULL), the reads shared by its threads (fmt_xxh3_read). */
static fmt_kind xxh3_source(fmt_source *s, uint64_t n, fmt_pool *pool, uint64_t *out, fmt_err *e)
{
	XXH3_state_t *h = XXH3_createState();
	if (!h)
		return fmt_fail(e, FMT_IO, "out of memory");
	XXH3_64bits_reset(h);
	if (s->fd >= 0 && !s->sequential)
		(void)posix_fadvise(s->fd, 0, (off_t)n, POSIX_FADV_SEQUENTIAL);
	fmt_kind k = fmt_xxh3_read(h, n, read_source, s, s->observe ? NULL : pool, e);
	if (k == FMT_OK)
		*out = XXH3_64bits_digest(h);
	XXH3_freeState(h);
	return k;
}

static fmt_kind check_checksum(fmt_source *s, uint64_t expected, fmt_pool *pool, fmt_err *e)
{
	uint64_t got = 0;
	fmt_kind k = xxh3_source(s, s->size - APR_SEED_FOOTER, pool, &got, e);
	if (k == FMT_OK && got != expected)
		k = fmt_fail(e, FMT_CHECKSUM, "checksum mismatch: XXH3-64 of the file is %016llx, the footer says %016llx",
			     (unsigned long long)got, (unsigned long long)expected);
	return k;
}

/* ---- reading ---- */

/* The index, read through a window by pread (never mapped): at counts from base. */
typedef struct cursor {
	fmt_apr_window w;
	uint64_t n, at;
	uint64_t base;                 /* file offset of the index, for messages */
	fmt_kind kind;                 /* an I/O failure of the window */
	fmt_err err;
} cursor;

/* n bytes at the cursor, valid until the next take; 0 past the index area or on a read error
 * (then c->kind says which). */
static int take(cursor *c, uint64_t n, const uint8_t **out)
{
	if (n > c->n - c->at)
		return 0;
	c->kind = fmt_apr_window_get(&c->w, c->base + c->at, n, out, &c->err);
	if (c->kind != FMT_OK)
		return 0;
	c->at += n;
	return 1;
}

static fmt_kind truncated_index(const cursor *c, const char *what, uint64_t entry, fmt_err *e)
{
	if (c->kind != FMT_OK) {
		*e = c->err;
		return c->kind;
	}
	return fmt_fail(e, FMT_INVALID_FORMAT, "tensor index entry %llu: %s runs past the index area (offset %llu)",
			(unsigned long long)entry, what, (unsigned long long)(c->base + c->at));
}

static fmt_kind read_shard_record(apr_state *st, const json_t *raw, fmt_err *e)
{
	const json_t *s = json_object_get(raw, "shard");
	int flagged = (st->flags & APR_F_SHARDED) != 0;
	if (!s && !flagged)
		return FMT_OK;
	if (!s || !flagged)
		return fmt_fail(e, FMT_INVALID_FORMAT, "flag SHARDED and metadata 'shard' must come together");
	const json_t *i = json_object_get(s, "index"), *n = json_object_get(s, "count"),
		     *t = json_object_get(s, "tensors_total");
	if (!json_is_integer(i) || !json_is_integer(n) || !json_is_integer(t) || json_integer_value(n) < 1 ||
	    json_integer_value(i) < 1 || json_integer_value(i) > json_integer_value(n) || json_integer_value(t) < 0 ||
	    json_object_size(s) != 3)
		return fmt_fail(e, FMT_INVALID_FORMAT, "metadata 'shard' must be {\"index\":i,\"count\":N,\"tensors_total\":T} with 1 <= i <= N");
	st->shard_index = (uint64_t)json_integer_value(i);
	st->shard_count = (uint64_t)json_integer_value(n);
	st->tensors_total = (uint64_t)json_integer_value(t);
	return FMT_OK;
}

static fmt_kind read_header(fmt_source *s, apr_state *st, fmt_err *e)
{
	uint8_t h[APR_SEED_HEADER], f[APR_SEED_FOOTER];
	int seq = s->sequential;       /* a stream: its footer is checked at its end */
	if (!seq && s->size < APR_SEED_HEADER + APR_SEED_FOOTER)
		return fmt_fail(e, FMT_INVALID_FORMAT, "truncated: %llu bytes, an APR file has at least %u",
				(unsigned long long)s->size, APR_SEED_HEADER + APR_SEED_FOOTER);
	fmt_kind k = fmt_source_read(s, 0, h, sizeof h, e);
	if (k == FMT_OK && !seq)
		k = fmt_source_read(s, s->size - APR_SEED_FOOTER, f, sizeof f, e);
	if (k != FMT_OK)
		return k;
	if (memcmp(h, SEED_MAGIC, 4) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "bad magic (expected 41 50 52 02)");
	st->layout = APR_SEED;
	if (!seq) {
		st->checksum = fmt_rd_u64(f);
		uint64_t total = fmt_rd_u64(f + 8);
		if (total != s->size)
			return fmt_fail(e, FMT_INVALID_FORMAT, "the footer says the file has %llu bytes, it has %llu (truncated or extended)",
					(unsigned long long)total, (unsigned long long)s->size);
	}
	st->version_major = fmt_rd_u16(h + 4);
	st->flags = fmt_rd_u32(h + 6);
	st->metadata_size = fmt_rd_u64(h + 18);
	if (fmt_rd_u64(h + 10) != APR_SEED_HEADER)
		return fmt_fail(e, FMT_INVALID_FORMAT, "metadata_offset is %llu, must be 32",
				(unsigned long long)fmt_rd_u64(h + 10));
	if (st->version_major != 2)
		return fmt_fail(e, FMT_UNSUPPORTED, "APR version %u (this build reads version 2)", st->version_major);
	if (st->flags & ~APR_F_KNOWN)
		return fmt_fail(e, FMT_UNSUPPORTED, "unknown flag bits 0x%08x", st->flags & ~APR_F_KNOWN);
	for (int i = 26; i < 32; i++)
		if (h[i])
			return fmt_fail(e, FMT_UNSUPPORTED, "reserved header byte %d is not zero", i);
	if ((st->flags & APR_F_LZ4) && (st->flags & APR_F_ZSTD))
		return fmt_fail(e, FMT_INVALID_FORMAT, "flags COMPRESSED_LZ4 and COMPRESSED_ZSTD are both set");
	uint64_t body = seq ? FMT_SIZE_UNKNOWN - APR_SEED_FOOTER : s->size - APR_SEED_FOOTER;
	if (st->metadata_size > APR_MAX_META || APR_SEED_HEADER + st->metadata_size > body)
		return fmt_fail(e, FMT_INVALID_FORMAT, "metadata_size %llu runs past the end of the file",
				(unsigned long long)st->metadata_size);
	st->index_offset = apr_align64(APR_SEED_HEADER + st->metadata_size);
	if (st->index_offset + 8 > body)
		return fmt_fail(e, FMT_INVALID_FORMAT, "truncated: no room for the tensor index at offset %llu",
				(unsigned long long)st->index_offset);
	return FMT_OK;
}

/* An index entry: the tensor, with its segment's offset and size kept aside until data_offset
 * is known. */
typedef struct entry {
	fmt_tensor t;
	uint64_t rel, size;
} entry;

static fmt_kind parse_entry(cursor *c, uint64_t i, entry *en, char *name, fmt_err *e)
{
	const uint8_t *p;
	if (!take(c, 2, &p))
		return truncated_index(c, "name_len", i, e);
	uint16_t len = fmt_rd_u16(p);
	if (len == 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor index entry %llu: empty name", (unsigned long long)i);
	if (!take(c, len, &p))
		return truncated_index(c, "name", i, e);
	if (memchr(p, 0, len))
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor index entry %llu: name contains a NUL byte", (unsigned long long)i);
	memcpy(name, p, len);
	name[len] = '\0';
	if (!take(c, 2, &p))
		return truncated_index(c, "dtype and ndim", i, e);
	unsigned code = p[0], ndim = p[1];
	fmt_dtype t = fmt_apr_seed_dtype(code);
	if (t == FMT_DT_INVALID)
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': dtype code %u is not an APR dtype", name, code);
	if (ndim > APR_MAX_DIMS)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': %u dimensions (at most 8)", name, ndim);
	if (!take(c, 8ull * ndim + 16, &p))
		return truncated_index(c, "dims, offset and size", i, e);
	memset(en, 0, sizeof *en);
	en->t.name = name;
	en->t.dtype = t;
	en->t.ndim = (int)ndim;
	for (unsigned d = 0; d < ndim; d++)
		en->t.shape[d] = fmt_rd_u64(p + 8 * d);
	en->rel = fmt_rd_u64(p + 8 * ndim);
	en->size = fmt_rd_u64(p + 8 * ndim + 8);
	fmt_kind k = fmt_dtype_nbytes(t, en->t.shape, en->t.ndim, &en->t.nelems, &en->t.nbytes, e);
	if (k != FMT_OK) {
		fmt_err_prefix(e, "tensor '%s'", name);
		return k;
	}
	if (is_block(t) && ndim > 0 && !fmt_dtype_row_ok(t, en->t.shape[ndim - 1]))
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': the last dimension %llu is not a multiple of %s's block",
				name, (unsigned long long)en->t.shape[ndim - 1], fmt_dtype_name(t));
	return FMT_OK;
}

/* Place an entry's segment: aligned, after the previous one, before the footer; raw segments
 * hold exactly the raw size. */
static fmt_kind place_entry(const apr_state *st, int src, uint64_t body, uint64_t *next_free, entry *en, fmt_err *e)
{
	const char *name = en->t.name;
	uint64_t start, end;
	if (en->rel % APR_ALIGN != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': offset %llu is not a multiple of 64", name,
				(unsigned long long)en->rel);
	if (en->rel < *next_free)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': offset %llu overlaps the segment before it (which ends at %llu)",
				name, (unsigned long long)en->rel, (unsigned long long)*next_free);
	if (fmt_add_u64(st->data_offset, en->rel, &start) || fmt_add_u64(start, en->size, &end) || end > body)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': segment at %llu of %llu bytes runs past the footer", name,
				(unsigned long long)en->rel, (unsigned long long)en->size);
	int compressed = (st->flags & (APR_F_LZ4 | APR_F_ZSTD)) != 0;
	if (!compressed && en->size != en->t.nbytes)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': size %llu, but %s %s needs %llu bytes", name,
				(unsigned long long)en->size, fmt_dtype_name(en->t.dtype), "data", (unsigned long long)en->t.nbytes);
	if (compressed && en->size == 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s': an empty segment is not a compressed frame", name);
	*next_free = en->rel + en->size;
	if (*next_free == en->rel)
		*next_free = en->rel + 1;  /* a zero-size raw tensor still takes its offset */
	en->t.file_offset = en->rel;
	en->t.offset = start;
	en->t.source = src;
	en->t.stored_bytes = compressed ? en->size : 0;
	return FMT_OK;
}

static int cmp_name_ptr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static fmt_kind check_unique(const fmt_model *m, fmt_err *e)
{
	const char **names = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *names);
	if (!names)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < m->n_tensors; i++)
		names[i] = m->tensors[i].name;
	qsort(names, m->n_tensors, sizeof *names, cmp_name_ptr);
	fmt_kind k = FMT_OK;
	for (size_t i = 1; i < m->n_tensors && k == FMT_OK; i++)
		if (strcmp(names[i - 1], names[i]) == 0)
			k = fmt_fail(e, FMT_INVALID_FORMAT, "tensor '%s' appears twice in the index", names[i]);
	free(names);
	return k;
}

static fmt_kind read_index(fmt_model *m, int src, apr_state *st, fmt_err *e)
{
	fmt_source *s = &m->sources[src];
	uint64_t body = s->sequential ? FMT_SIZE_UNKNOWN - APR_SEED_FOOTER : s->size - APR_SEED_FOOTER;
	cursor c = { .w = { .s = s, .limit = body }, .base = st->index_offset, .n = body - st->index_offset };
	fmt_kind k = FMT_OK;
	const uint8_t *p = NULL;
	if (!take(&c, 8, &p)) {
		fmt_apr_window_free(&c.w);
		return c.kind != FMT_OK ? (*e = c.err, c.kind) : fmt_fail(e, FMT_INVALID_FORMAT, "truncated: no tensor_count");
	}
	uint64_t count = fmt_rd_u64(p);
	/* The smallest entry: a 1-byte name, no dims. */
	if (count > (c.n - 8) / 21) {
		fmt_apr_window_free(&c.w);
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor_count %llu cannot fit in the file", (unsigned long long)count);
	}
	/* Entries go into the model as they are parsed (their segments placed once data_offset, which
	 * depends on the index's length, is known): memory follows the entries really there, never
	 * the count a header claims. */
	char *name = malloc(65536);  /* one name at a time: up to 65535 bytes and a NUL */
	size_t first = m->n_tensors;
	if (!name)
		k = fmt_fail(e, FMT_IO, "out of memory");
	for (uint64_t i = 0; i < count && k == FMT_OK; i++) {
		entry en;
		k = parse_entry(&c, i, &en, name, e);
		if (k != FMT_OK)
			break;
		en.t.file_offset = en.rel;
		en.t.stored_bytes = en.size;
		k = fmt_model_add_tensor(m, &en.t, NULL, e);
	}
	free(name);
	fmt_apr_window_free(&c.w);
	uint64_t next_free = 0;
	if (k == FMT_OK) {
		st->data_offset = apr_align64(st->index_offset + c.at);
		if (st->data_offset > body)
			k = fmt_fail(e, FMT_INVALID_FORMAT, "data_offset %llu lies past the footer", (unsigned long long)st->data_offset);
	}
	st->data_end = st->data_offset;
	int quantized = 0;
	apr_codec codec = st->flags & APR_F_LZ4 ? APR_CODEC_LZ4 : st->flags & APR_F_ZSTD ? APR_CODEC_ZSTD : APR_CODEC_NONE;
	for (size_t i = first; i < m->n_tensors && k == FMT_OK; i++) {
		fmt_tensor *t = &m->tensors[i];
		entry en = { .t = *t, .rel = t->file_offset, .size = t->stored_bytes };
		k = place_entry(st, src, body, &next_free, &en, e);
		quantized |= is_block(t->dtype);
		if (k != FMT_OK)
			break;
		en.t.name = t->name;
		*t = en.t;
		if (s->sequential)
			t->seq_pos = t->offset + 1;
		if (t->offset + en.size > st->data_end)
			st->data_end = t->offset + en.size;
		if (codec != APR_CODEC_NONE)
			k = fmt_apr_attach_frame(m, t, src, t->offset, en.size, codec, e);
	}
	if (k == FMT_OK && quantized != ((st->flags & APR_F_QUANTIZED) != 0))
		k = fmt_fail(e, FMT_INVALID_FORMAT, "flag QUANTIZED is %s but %s tensor is block-quantized",
			     quantized ? "clear" : "set", quantized ? "a" : "no");
	return k;
}

/* A damaged file says so: what looks like a future version or an unknown dtype in a file whose
 * checksum fails is damage, not the future. */
static fmt_kind damage_or(fmt_source *s, const apr_state *st, fmt_kind k, fmt_err *e)
{
	if (k != FMT_UNSUPPORTED || s->sequential || s->size < APR_SEED_HEADER + APR_SEED_FOOTER)
		return k;
	fmt_err why = *e;
	if (check_checksum(s, st->checksum, NULL, e) == FMT_CHECKSUM)
		fmt_err_prefix(e, "%s; and", why.msg);
	else
		*e = why;
	return e->kind;
}

/* Header, metadata (into the model when with_meta) and shard record of one file; *raw is the
 * metadata object as stored. */
static fmt_kind open_front(fmt_model *m, int src, apr_state *st, int with_meta, json_t **raw, fmt_err *e)
{
	fmt_source *s = &m->sources[src];
	uint8_t *meta = NULL;
	json_error_t jerr;
	*raw = NULL;
	fmt_kind k = read_header(s, st, e);
	if (k == FMT_OK)
		k = fmt_apr_read_grow(s, APR_SEED_HEADER, st->metadata_size, &meta, e);
	if (k == FMT_OK && with_meta)
		k = fmt_apr_meta_read(m, (const char *)meta, (size_t)st->metadata_size, APR_SEED, raw, e);
	else if (k == FMT_OK && (k = fmt_json_budget("the metadata", (const char *)meta, (size_t)st->metadata_size,
						     FMT_TREE_COST_JSON, e)) == FMT_OK &&
		 !(*raw = fmt_json_loadb((const char *)meta, (size_t)st->metadata_size, JSON_REJECT_DUPLICATES, &jerr)))
		k = fmt_json_nomem(&jerr) ? fmt_fail_nomem(e, "the metadata")
		  : fmt_fail(e, FMT_INVALID_FORMAT, "metadata is not valid JSON (%s at byte %d)", jerr.text, jerr.position);
	if (k == FMT_OK && !json_is_object(*raw))
		k = fmt_fail(e, FMT_INVALID_FORMAT, "metadata is not a JSON object");
	free(meta);
	if (k == FMT_OK)
		k = read_shard_record(st, *raw, e);
	const json_t *writer = k == FMT_OK && with_meta ? json_object_get(*raw, "writer") : NULL;
	if (json_is_string(writer) && !(st->writer = strdup(json_string_value(writer))))
		k = fmt_fail(e, FMT_IO, "out of memory");
	return damage_or(s, st, k, e);
}

static fmt_kind add_part(apr_state *st, int src, uint64_t checksum, fmt_err *e)
{
	apr_part *grown = realloc(st->parts, (st->n_parts + 1) * sizeof *grown);
	if (!grown)
		return fmt_fail(e, FMT_IO, "out of memory");
	st->parts = grown;
	st->parts[st->n_parts++] = (apr_part){ src, checksum };
	return FMT_OK;
}

/* "dir/NAME" of "dir/NAME-0000i-of-0000N.apr" (the shared namer's pattern) when i and N are
 * the shard's own, else NULL. */
static char *set_prefix(const char *path, uint64_t index, uint64_t count)
{
	static const char ext[] = ".apr";
	size_t n = strlen(path), e = sizeof ext - 1;
	unsigned no, of;
	if (n <= e || strcmp(path + n - e, ext) != 0)
		return NULL;
	size_t t = fmt_shard_name_suffix(path, n - e, &no, &of);
	if (t == 0 || no != index || of != count)
		return NULL;
	return strndup(path, n - e - t);
}

/* One sibling shard: its own header and index, the same set record and metadata. */
static fmt_kind open_sibling(fmt_model *m, const char *prefix, uint64_t k, const apr_state *st, const json_t *meta,
			     fmt_err *e)
{
	char *path = NULL, *dir = fmt_dir_prefix(prefix), *name = fmt_shard_file_name(prefix, (size_t)k,
										   (size_t)st->shard_count, "apr");
	int src = 0;
	json_t *raw = NULL;
	apr_state ps;
	memset(&ps, 0, sizeof ps);
	fmt_kind r = dir && name ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	if (r == FMT_OK)
		r = fmt_model_open_shard(m, dir, name + strlen(dir), m->path, &src, &path, e);
	free(dir);
	free(name);
	if (r == FMT_OK)
		r = open_front(m, src, &ps, 0, &raw, e);
	if (r == FMT_OK && (ps.shard_index != k || ps.shard_count != st->shard_count || ps.tensors_total != st->tensors_total))
		r = fmt_fail(e, FMT_SCHEMA, "its shard record says %llu of %llu (%llu tensors), the set needs %llu of %llu (%llu tensors)",
			     (unsigned long long)ps.shard_index, (unsigned long long)ps.shard_count,
			     (unsigned long long)ps.tensors_total, (unsigned long long)k,
			     (unsigned long long)st->shard_count, (unsigned long long)st->tensors_total);
	if (r == FMT_OK) {
		json_object_del(raw, "shard");
		if (!json_equal(raw, meta))
			r = fmt_fail(e, FMT_SCHEMA, "its metadata differs from the other shards'");
	}
	if (r == FMT_OK)
		r = read_index(m, src, &ps, e);
	if (r == FMT_OK)
		r = add_part((apr_state *)st, src, ps.checksum, e);
	if (r != FMT_OK && path)
		fmt_err_file(e, path);
	json_decref(raw);
	free(path);
	return r;
}

/* Every shard of the set the first file belongs to, in order 1..N. */
static fmt_kind open_set(fmt_model *m, apr_state *st, json_t *meta, fmt_err *e)
{
	char *prefix = set_prefix(m->sources[0].path, st->shard_index, st->shard_count);
	if (!prefix)
		return fmt_fail(e, FMT_SCHEMA, "shard %llu of %llu, but its name is not NAME-%05llu-of-%05llu.apr, so the "
				"other shards cannot be found", (unsigned long long)st->shard_index,
				(unsigned long long)st->shard_count, (unsigned long long)st->shard_index,
				(unsigned long long)st->shard_count);
	json_object_del(meta, "shard");
	fmt_kind k = FMT_OK;
	for (uint64_t i = 1; i <= st->shard_count && k == FMT_OK; i++) {
		if (i != st->shard_index) {
			k = open_sibling(m, prefix, i, st, meta, e);
			continue;
		}
		k = damage_or(&m->sources[0], st, read_index(m, 0, st, e), e);
		if (k == FMT_OK)
			k = add_part(st, 0, st->checksum, e);
	}
	free(prefix);
	if (k == FMT_OK && m->n_tensors != st->tensors_total)
		k = fmt_fail(e, FMT_SCHEMA, "the shards hold %zu tensors, their records say %llu", m->n_tensors,
			     (unsigned long long)st->tensors_total);
	return k;
}

static void xxh_observe(void *ctx, const uint8_t *p, size_t n)
{
	fmt_xxh3_update(ctx, p, n);
}

fmt_kind fmt_apr_seed_open(fmt_model *m, apr_state *st, fmt_err *e)
{
	json_t *raw = NULL;
	fmt_kind k = FMT_OK;
	m->version = 2;
	if (m->sources[0].sequential) {   /* hash the stream as it passes */
		st->stream_xxh = XXH3_createState();
		if (!st->stream_xxh)
			return fmt_fail(e, FMT_IO, "out of memory");
		XXH3_64bits_reset(st->stream_xxh);
		k = fmt_source_observe(&m->sources[0], xxh_observe, st->stream_xxh, e);
	}
	if (k == FMT_OK)
		k = open_front(m, 0, st, 1, &raw, e);
	if (k == FMT_OK && st->shard_count) {
		k = open_set(m, st, raw, e);
	} else if (k == FMT_OK) {
		k = damage_or(&m->sources[0], st, read_index(m, 0, st, e), e);
		if (k == FMT_OK)
			k = add_part(st, 0, st->checksum, e);
	}
	json_decref(raw);
	return k == FMT_OK ? check_unique(m, e) : k;
}

/* Every frame holds exactly its tensor's raw size. */
static fmt_kind check_frames(fmt_model *m, fmt_err *e)
{
	for (size_t i = 0; i < m->n_tensors; i++) {
		fmt_kind k = m->tensors[i].reader ? fmt_apr_check_frame(m, &m->tensors[i], e) : FMT_OK;
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

static void xxh_hash(void *ctx, const uint8_t *p, size_t n)
{
	fmt_xxh3_update(ctx, p, n);
}

/* A stream: every byte has gone through the hash but the footer's, read last. */
static fmt_kind stream_verify(fmt_model *m, const apr_state *st, int frames, fmt_err *e)
{
	fmt_source *s = &m->sources[0];
	uint8_t f[APR_SEED_FOOTER];
	size_t flen;
	fmt_kind k = frames ? check_frames(m, e) : FMT_OK;
	if (k == FMT_INVALID_FORMAT) {     /* a bad frame in a stream whose checksum fails is damage */
		fmt_err why = *e;
		if (stream_verify(m, st, 0, e) == FMT_CHECKSUM)
			fmt_err_prefix(e, "%s; and", why.msg);
		else
			*e = why;
		return e->kind;
	}
	if (k == FMT_OK)
		k = fmt_apr_stream_tail(s, st->data_end, xxh_hash, st->stream_xxh, f, sizeof f, &flen, e);
	if (k == FMT_OK && flen < sizeof f)
		return fmt_fail(e, FMT_INVALID_FORMAT, "truncated: the stream ends %zu bytes after the last tensor, "
				"before the 16-byte footer", flen);
	if (k != FMT_OK)
		return k;
	uint64_t expected = fmt_rd_u64(f), total = fmt_rd_u64(f + 8), got = XXH3_64bits_digest(st->stream_xxh);
	((apr_state *)st)->checksum = expected;
	if (total != s->size)
		return fmt_fail(e, FMT_INVALID_FORMAT, "the footer says the file has %llu bytes, the stream had %llu "
				"(truncated or extended)", (unsigned long long)total, (unsigned long long)s->size);
	if (got != expected)
		return fmt_fail(e, FMT_CHECKSUM, "checksum mismatch: XXH3-64 of the file is %016llx, the footer says %016llx",
				(unsigned long long)got, (unsigned long long)expected);
	return FMT_OK;
}

fmt_kind fmt_apr_seed_verify_as_read(fmt_model *m, apr_state *st, fmt_err *e)
{
	fmt_source *s = &m->sources[0];
	if (st->layout != APR_SEED || m->n_sources != 1 || s->sequential || st->stream_xxh)
		return fmt_fail(e, FMT_UNSUPPORTED, "verified before it is read");
	if (!(st->stream_xxh = XXH3_createState()))
		return fmt_fail(e, FMT_IO, "out of memory");
	XXH3_64bits_reset(st->stream_xxh);
	fmt_kind k = fmt_source_observe(s, xxh_observe, st->stream_xxh, e);
	if (s->fd >= 0)   /* read front to back from here: a larger read-ahead */
		(void)posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	if (k == FMT_OK)
		k = fmt_source_observe_to(s, st->data_offset, e);   /* header, metadata, index */
	for (size_t i = 0; k == FMT_OK && i < m->n_tensors; i++)
		m->tensors[i].seq_pos = m->tensors[i].offset + 1;  /* read in file order */
	st->as_read = k == FMT_OK;
	return k;
}

/* The rest of the file (what no read reached) through the hash, then the footer's XXH3. */
static fmt_kind as_read_verify(fmt_model *m, const apr_state *st, fmt_err *e)
{
	fmt_source *s = &m->sources[0];
	fmt_kind k = fmt_source_observe_to(s, s->size - APR_SEED_FOOTER, e);
	if (k != FMT_OK)
		return k;
	uint64_t got = XXH3_64bits_digest(st->stream_xxh);
	if (got != st->checksum)
		return fmt_fail(e, FMT_CHECKSUM, "checksum mismatch: XXH3-64 of the file is %016llx, the footer says %016llx",
				(unsigned long long)got, (unsigned long long)st->checksum);
	return FMT_OK;
}

fmt_kind fmt_apr_seed_verify(fmt_model *m, const apr_state *st, int frames, int threads, fmt_err *e)
{
	if (m->sources[0].sequential)
		return stream_verify(m, st, frames, e);
	if (st->as_read)
		return as_read_verify(m, st, e);
	int batches = 0; /* a pool only for a file of more than one read batch (fmt_xxh3_read) */
	for (size_t i = 0; i < st->n_parts; i++)
		batches |= m->sources[st->parts[i].src].size > FMT_XXH3_READ_BATCH;
	fmt_pool *pool = NULL;
	fmt_kind k = threads > 1 && batches ? fmt_pool_create(&pool, threads, e) : FMT_OK;
	for (size_t i = 0; k == FMT_OK && i < st->n_parts; i++) {
		fmt_source *s = &m->sources[st->parts[i].src];
		k = check_checksum(s, st->parts[i].checksum, pool, e);
		if (k != FMT_OK)
			fmt_err_file(e, s->path);
	}
	fmt_pool_destroy(pool);
	return k == FMT_OK && frames ? check_frames(m, e) : k;
}

/* ---- writing ---- */

typedef struct seed_plan {
	uint32_t flags;
	char *meta;
	size_t meta_len;
	uint64_t index_offset, index_bytes, data_offset;
	uint64_t *rel, *size;          /* per tensor */
	apr_zjobs *zstd;               /* the zstd jobs' contexts, kept from tensor to tensor */
} seed_plan;

static void plan_free(seed_plan *p)
{
	fmt_apr_zjobs_free(&p->zstd);
	free(p->meta);
	free(p->rel);
	free(p->size);
}

static fmt_kind check_writable(const fmt_tensor *t, fmt_err *e)
{
	size_t len = strlen(t->name);
	if (fmt_apr_seed_code(t->dtype) < 0)
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': APR has no dtype code for %s", t->name,
				fmt_dtype_name(t->dtype));
	if (t->ndim > APR_MAX_DIMS)
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': %d dimensions (APR holds at most 8)", t->name, t->ndim);
	if (len == 0 || len > UINT16_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': an APR name has 1 to 65535 bytes", t->name);
	return FMT_OK;
}

static fmt_kind plan_layout(const fmt_model *m, const apr_seed_opts *o, seed_plan *p, fmt_err *e)
{
	char extra[160];
	memset(p, 0, sizeof *p);
	p->flags = o->codec == APR_CODEC_LZ4 ? APR_F_LZ4 : o->codec == APR_CODEC_ZSTD ? APR_F_ZSTD : 0;
	p->index_bytes = 8;
	for (size_t i = 0; i < m->n_tensors; i++) {
		const fmt_tensor *t = &m->tensors[i];
		fmt_kind k = check_writable(t, e);
		if (k != FMT_OK)
			return k;
		if (is_block(t->dtype))
			p->flags |= APR_F_QUANTIZED;
		p->index_bytes += 2 + strlen(t->name) + 2 + 8ull * (unsigned)t->ndim + 16;
	}
	if (o->shard_count) {
		p->flags |= APR_F_SHARDED;
		snprintf(extra, sizeof extra, "\"shard\":{\"index\":%llu,\"count\":%llu,\"tensors_total\":%llu}",
			 (unsigned long long)o->shard_index, (unsigned long long)o->shard_count,
			 (unsigned long long)o->tensors_total);
	}
	fmt_kind k = fmt_apr_meta_write(m, APR_SEED, o->stamp, o->shard_count ? extra : NULL, &p->meta, &p->meta_len, e);
	if (k != FMT_OK)
		return k;
	p->index_offset = apr_align64(APR_SEED_HEADER + p->meta_len);
	p->data_offset = apr_align64(p->index_offset + p->index_bytes);
	p->rel = calloc(m->n_tensors ? m->n_tensors : 1, sizeof *p->rel);
	p->size = calloc(m->n_tensors ? m->n_tensors : 1, sizeof *p->size);
	if (!p->rel || !p->size)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < m->n_tensors; i++)
		p->size[i] = m->tensors[i].nbytes;
	return FMT_OK;
}

/* Where the segment after one at rel of size bytes starts: the next multiple of 64, and past
 * rel even for an empty segment (offsets strictly increase, A.3). */
static uint64_t next_segment(uint64_t rel, uint64_t size)
{
	return apr_align64(rel + (size ? size : 1));
}

static void assign_offsets(const fmt_model *m, seed_plan *p)
{
	uint64_t cur = 0;
	for (size_t i = 0; i < m->n_tensors; i++) {
		p->rel[i] = cur;
		cur = next_segment(cur, p->size[i]);
	}
}

static void make_header(const seed_plan *p, uint8_t h[APR_SEED_HEADER])
{
	memset(h, 0, APR_SEED_HEADER);
	memcpy(h, SEED_MAGIC, 4);
	fmt_wr_u16(h + 4, 2);
	fmt_wr_u32(h + 6, p->flags);
	fmt_wr_u64(h + 10, APR_SEED_HEADER);
	fmt_wr_u64(h + 18, p->meta_len);
}

static fmt_kind make_index(const fmt_model *m, const seed_plan *p, uint8_t **out, fmt_err *e)
{
	uint8_t *b = malloc((size_t)p->index_bytes), *q = b;
	if (!b)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_wr_u64(q, m->n_tensors);
	q += 8;
	for (size_t i = 0; i < m->n_tensors; i++) {
		const fmt_tensor *t = &m->tensors[i];
		size_t len = strlen(t->name);
		fmt_wr_u16(q, (uint16_t)len);
		memcpy(q + 2, t->name, len);
		q += 2 + len;
		*q++ = (uint8_t)fmt_apr_seed_code(t->dtype);
		*q++ = (uint8_t)t->ndim;
		for (int d = 0; d < t->ndim; d++, q += 8)
			fmt_wr_u64(q, t->shape[d]);
		fmt_wr_u64(q, p->rel[i]);
		fmt_wr_u64(q + 8, p->size[i]);
		q += 16;
	}
	*out = b;
	return FMT_OK;
}

/* Header, metadata and index (or zeros in its place), each padded. */
static fmt_kind emit_front(const fmt_model *m, const seed_plan *p, int with_index, apr_out *o, fmt_err *e)
{
	uint8_t h[APR_SEED_HEADER];
	uint8_t *index = NULL;
	make_header(p, h);
	fmt_kind k = fmt_apr_out_write(o, h, sizeof h, e);
	if (k == FMT_OK)
		k = fmt_apr_out_write(o, p->meta, p->meta_len, e);
	if (k == FMT_OK)
		k = fmt_apr_out_pad(o, e);
	if (k == FMT_OK && with_index)
		k = make_index(m, p, &index, e);
	if (k == FMT_OK)
		k = with_index ? fmt_apr_out_write(o, index, (size_t)p->index_bytes, e) : fmt_apr_out_zeros(o, p->index_bytes, e);
	if (k == FMT_OK)
		k = fmt_apr_out_pad(o, e);
	free(index);
	return k;
}

static fmt_kind out_chunk(void *ctx, const uint8_t *bytes, size_t n, fmt_err *e)
{
	return fmt_apr_out_write(ctx, bytes, n, e);
}

/* Tensors [first, first + n) compressed into memory, one per pool thread. */
typedef struct packing {
	const fmt_model *m;
	const apr_seed_opts *o;
	size_t first;
	fmt_sb buf[APR_MAX_PACK];
	uint64_t stored[APR_MAX_PACK];
	fmt_kind kind[APR_MAX_PACK];
	fmt_err err[APR_MAX_PACK];
} packing;

static void pack_task(void *ctx, size_t j)
{
	packing *pk = ctx;
	apr_out mem = { .mem = &pk->buf[j] };
	fmt_err_clear(&pk->err[j]);
	pk->kind[j] = fmt_apr_compress_tensor(pk->m, &pk->m->tensors[pk->first + j], pk->o->codec, pk->o->level, NULL, NULL, &mem,
					  &pk->stored[j], &pk->err[j]);
}

/* Tensor i's segment: from memory when packed (j >= 0), else streamed from the tensor. */
static fmt_kind emit_one(const fmt_model *m, seed_plan *p, const apr_seed_opts *o, int check, apr_out *out,
			 size_t i, packing *pk, int j, fmt_err *e)
{
	const fmt_tensor *t = &m->tensors[i];
	uint64_t start = i ? p->data_offset + next_segment(p->rel[i - 1], p->size[i - 1]) : out->pos;
	fmt_kind k = fmt_apr_out_zeros(out, start - out->pos, e);
	uint64_t rel = out->pos - p->data_offset, stored = t->nbytes;
	if (k == FMT_OK && check && rel != p->rel[i])
		k = fmt_fail(e, FMT_INTERNAL, "tensor '%s' moved between passes", t->name);
	if (k == FMT_OK && j >= 0) {
		if (pk->kind[j] != FMT_OK) {
			*e = pk->err[j];
			return pk->kind[j];
		}
		if (pk->buf[j].oom)
			return fmt_fail(e, FMT_IO, "out of memory compressing '%s'", t->name);
		stored = pk->stored[j];
		k = fmt_apr_out_write(out, pk->buf[j].p, pk->buf[j].len, e);
	} else if (k == FMT_OK && o->codec == APR_CODEC_NONE) {
		k = fmt_tensor_each_chunk(m, t, out_chunk, out, e);
	} else if (k == FMT_OK) {
		k = fmt_apr_compress_tensor(m, t, o->codec, o->level, o->pool, &p->zstd, out, &stored, e);
	}
	if (k == FMT_OK && check && stored != p->size[i])
		k = fmt_fail(e, FMT_INTERNAL, "tensor '%s' compressed differently in two passes", t->name);
	p->rel[i] = rel;
	p->size[i] = stored;
	return k;
}

/* How many tensors from i on are compressed at once: consecutive small ones, up to one per pool
 * thread, so that memory holds at most that many small frames; a large tensor goes alone,
 * streamed (a zstd frame's jobs spread over the threads). */
static size_t pack_count(const fmt_model *m, const apr_seed_opts *o, size_t i)
{
	size_t most = o->codec == APR_CODEC_NONE || !o->pool ? 1 : (size_t)fmt_pool_threads(o->pool);
	if (most > APR_MAX_PACK)
		most = APR_MAX_PACK;
	size_t n = 0;
	while (n < most && i + n < m->n_tensors && m->tensors[i + n].nbytes <= APR_PACK_BYTES)
		n++;
	return n ? n : 1;
}

/* Every segment; with a codec, sizes are recorded (or, when check, compared with the plan).
 * With a pool, small tensors are compressed in parallel batches and written in order. */
static fmt_kind emit_segments(const fmt_model *m, seed_plan *p, const apr_seed_opts *o, int check, apr_out *out,
			      fmt_err *e)
{
	for (size_t i = 0; i < m->n_tensors;) {
		size_t n = pack_count(m, o, i);
		fmt_kind k = FMT_OK;
		if (n == 1) {
			k = emit_one(m, p, o, check, out, i, NULL, -1, e);
		} else {
			packing *pk = calloc(1, sizeof *pk);
			if (!pk)
				return fmt_fail(e, FMT_IO, "out of memory");
			*pk = (packing){ .m = m, .o = o, .first = i };
			fmt_pool_run(o->pool, n, pack_task, pk);
			for (size_t j = 0; j < n && k == FMT_OK; j++)
				k = emit_one(m, p, o, check, out, i + j, pk, (int)j, e);
			for (size_t j = 0; j < n; j++)
				free(pk->buf[j].p);
			free(pk);
		}
		if (k != FMT_OK)
			return k;
		i += n;
	}
	return FMT_OK;
}

static fmt_kind emit_footer(apr_out *o, fmt_err *e)
{
	uint8_t f[APR_SEED_FOOTER];
	fmt_wr_u64(f, XXH3_64bits_digest(o->xxh));
	fmt_wr_u64(f + 8, o->pos + APR_SEED_FOOTER);
	apr_out plain = { .k = o->k };
	return fmt_apr_out_write(&plain, f, sizeof f, e);
}

/* One pass, hashing as it goes: sizes are known (raw), or measured by a counting pass. */
static fmt_kind write_streaming(const fmt_model *m, fmt_sink *k, seed_plan *p, const apr_seed_opts *o,
				fmt_err *e)
{
	fmt_kind r = FMT_OK;
	if (o->codec != APR_CODEC_NONE) {
		apr_out count = { .pos = p->data_offset };
		r = emit_segments(m, p, o, 0, &count, e);
	} else {
		assign_offsets(m, p);
	}
	XXH3_state_t *h = XXH3_createState();
	if (!h)
		return fmt_fail(e, FMT_IO, "out of memory");
	XXH3_64bits_reset(h);
	apr_out out = { .k = k, .xxh = h };
	if (r == FMT_OK)
		r = emit_front(m, p, 1, &out, e);
	if (r == FMT_OK)
		r = emit_segments(m, p, o, 1, &out, e);
	if (r == FMT_OK)
		r = emit_footer(&out, e);
	XXH3_freeState(h);
	return r;
}

static fmt_kind read_sink(void *k, uint64_t off, void *dst, size_t n, fmt_err *e)
{
	return fmt_sink_read_back(k, off, dst, n) ? fmt_fail(e, FMT_IO, "cannot read back the output to checksum it")
						  : FMT_OK;
}

/* Compressed into a file: segments first (sizes learnt on the way), the index patched in,
 * then the checksum over what the file holds, read back from the page cache (through 4 MiB
 * mappings it cost 0.36 s for 1 GB against 0.07 s by pread on the 2-core AMD bench VM, a fault
 * per fresh page). The read-back is the one serial step left at the end of a -T 2 write: the
 * pool's threads share its copying (fmt_xxh3_read). */
static fmt_kind write_patched(const fmt_model *m, fmt_sink *k, seed_plan *p, const apr_seed_opts *o, fmt_err *e)
{
	apr_out out = { .k = k };
	uint8_t *index = NULL;
	fmt_kind r = emit_front(m, p, 0, &out, e);
	if (r == FMT_OK)
		r = emit_segments(m, p, o, 0, &out, e);
	if (r == FMT_OK)
		r = make_index(m, p, &index, e);
	/* Patching flushes the sink, so what follows reads the whole file back. */
	if (r == FMT_OK)
		r = fmt_sink_pwrite(k, p->index_offset, index, (size_t)p->index_bytes, e);
	free(index);
	XXH3_state_t *h = XXH3_createState();
	if (r == FMT_OK && !h)
		r = fmt_fail(e, FMT_IO, "out of memory");
	if (r == FMT_OK) {
		XXH3_64bits_reset(h);
		r = fmt_xxh3_read(h, out.pos, read_sink, k, o->pool, e);
	}
	if (r == FMT_OK) {
		out.xxh = h;
		r = emit_footer(&out, e);
	}
	XXH3_freeState(h);
	return r;
}

fmt_kind fmt_apr_seed_write(const fmt_model *m, fmt_sink *k, const apr_seed_opts *o, fmt_err *e)
{
	seed_plan p;
	fmt_kind r = plan_layout(m, o, &p, e);
	if (r == FMT_OK)
		r = o->codec != APR_CODEC_NONE && !k->is_stdout ? write_patched(m, k, &p, o, e)
								 : write_streaming(m, k, &p, o, e);
	plan_free(&p);
	return r;
}
