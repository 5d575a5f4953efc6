/* Apsi writers (specs/apsim.md §2, §5-§8): one .apsim in a single pass (placeholder header,
 * data streamed while hashed, then the real header patched in: sha256 and signature have
 * fixed lengths), sharded sets with their index, and signing in place.
 *
 * Writer policy:
 *  - __metadata__ holds exactly apsi, format, metadata, qtensors, sha256, shard, [signature],
 *    units, version; JSON values compact, object members sorted bytewise, strings escaped as
 *    serde_json does (the safetensors writer's escaping).
 *  - metadata: the model's metadata as typed JSON (strings, integers, reals in the shortest
 *    form that reads back to the same double, with ".0" when it would read as an integer,
 *    booleans, arrays). Refused (Unsupported, naming the key): NaN/Inf, unsigned values above
 *    2^63-1 (the reader could not hold them), strings with NUL bytes or invalid UTF-8, arrays
 *    nested deeper than the reader's limit.
 *  - The index is compact JSON with sorted members and a final newline:
 *    {"metadata":{"format":"apsi-model","shard_sha256":{...},["signature":"...",]
 *    "total_size":N},"weight_map":{...}}\n
 *  - Shards: tensors in the safetensors writer's order; a new shard starts when the next tensor
 *    (a compressed tensor's codes and scales counted together, placed at the first of the
 *    two) would take the shard above max_bytes; a larger tensor gets a shard of its own.
 *    Shards carry no signature (the index does). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fmt/checked.h"
#include "fmt/meta_json.h"
#include "fmt/out.h"
#include "fmt/qtensor.h"
#include "fmt/safetensors.h"
#include "fmt/shardset.h"
#include "apsim_internal.h"

#define NM APSIM_NM

/* Reals as printf's shortest %g that reads back; arrays nested up to one level less than the
 * readers' JSON nesting limit (the metadata object is the first). */
static const fmt_meta_json_style APSIM_JSON = {
	.readers = ".apsim readers", .max_levels = APSIM_MAX_DEPTH - 1, .key_shown = 200,
	.reals = FMT_REAL_PRINTF,
};

static int cmp_meta_ptr(const void *a, const void *b)
{
	return strcmp((*(const fmt_meta *const *)a)->key, (*(const fmt_meta *const *)b)->key);
}

static fmt_kind finish(fmt_sb *b, char **out, fmt_kind k, fmt_err *e)
{
	if (k == FMT_OK && b->oom)
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k != FMT_OK) {
		free(b->p);
		return k;
	}
	*out = b->p;
	return FMT_OK;
}

static fmt_kind metadata_json(const fmt_model *m, char **out, fmt_err *e)
{
	const fmt_meta **md = malloc((m->n_meta ? m->n_meta : 1) * sizeof *md);
	if (!md)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < m->n_meta; i++)
		md[i] = &m->meta[i];
	qsort(md, m->n_meta, sizeof *md, cmp_meta_ptr);
	fmt_sb b = { 0 };
	fmt_kind k = FMT_OK;
	int first = 1;
	fmt_sb_put(&b, "{", 1);
	for (size_t i = 0; i < m->n_meta && k == FMT_OK; i++) {
		if (i && strcmp(md[i - 1]->key, md[i]->key) == 0) {
			k = fmt_fail(e, FMT_INVALID_FORMAT, "duplicate metadata key " NM, md[i]->key);
			break;
		}
		k = fmt_meta_json_member(&b, &first, md[i]->key, &md[i]->val, 0, &APSIM_JSON, e);
	}
	fmt_sb_put(&b, "}", 1);
	free(md);
	return finish(&b, out, k, e);
}

static void sb_dims(fmt_sb *b, const int8_t *dims)
{
	fmt_sb_put(b, "[", 1);
	for (int i = 0; i < FMT_UNIT_DIMS; i++) {
		if (i)
			fmt_sb_put(b, ",", 1);
		fmt_sb_i64(b, dims[i]);
	}
	fmt_sb_put(b, "]", 1);
}

static int cmp_unit_ptr(const void *a, const void *b)
{
	return strcmp((*(const fmt_unit *const *)a)->tensor, (*(const fmt_unit *const *)b)->tensor);
}

static fmt_kind units_json(const fmt_model *m, char **out, fmt_err *e)
{
	const fmt_unit **u = malloc((m->n_units ? m->n_units : 1) * sizeof *u);
	if (!u)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < m->n_units; i++)
		u[i] = &m->units[i];
	qsort(u, m->n_units, sizeof *u, cmp_unit_ptr);
	fmt_sb b = { 0 };
	fmt_kind k = FMT_OK;
	fmt_sb_put(&b, "{", 1);
	for (size_t i = 0; i < m->n_units && k == FMT_OK; i++) {
		if (i && strcmp(u[i - 1]->tensor, u[i]->tensor) == 0)
			k = fmt_fail(e, FMT_INVALID_FORMAT, "two units for tensor " NM, u[i]->tensor);
		else if (!fmt_model_find_tensor(m, u[i]->tensor))
			k = fmt_fail(e, FMT_INVALID_FORMAT, "the model has a unit for " NM ", which is not one of its tensors",
				     u[i]->tensor);
		if (k != FMT_OK)
			break;
		if (i)
			fmt_sb_put(&b, ",", 1);
		fmt_sb_json_str(&b, u[i]->tensor, strlen(u[i]->tensor));
		fmt_sb_put(&b, ":", 1);
		sb_dims(&b, u[i]->dims);
	}
	fmt_sb_put(&b, "}", 1);
	free(u);
	return finish(&b, out, k, e);
}

static void sb_shape(fmt_sb *b, const uint64_t *shape, int nd)
{
	fmt_sb_put(b, "[", 1);
	for (int d = 0; d < nd; d++) {
		if (d)
			fmt_sb_put(b, ",", 1);
		fmt_sb_u64(b, shape[d]);
	}
	fmt_sb_put(b, "]", 1);
}

static void sb_descriptor(fmt_sb *b, const fmt_qtensor *q)
{
	fmt_sb_puts(b, "{\"axis\":");
	if (q->axis < 0)
		fmt_sb_puts(b, "null");
	else
		fmt_sb_i64(b, q->axis);
	fmt_sb_puts(b, ",\"format\":\"");
	fmt_sb_puts(b, fmt_qformat_name(q->format));
	fmt_sb_puts(b, "\",\"packing\":\"");
	fmt_sb_puts(b, fmt_qformat_packing(q->format));
	fmt_sb_puts(b, "\",\"scale_shape\":");
	sb_shape(b, q->scale_shape, q->format == FMT_Q_BF16 ? 0 : q->ndim);
	fmt_sb_puts(b, ",\"shape\":");
	sb_shape(b, q->shape, q->ndim);
	fmt_sb_puts(b, ",\"unit\":");
	if (q->has_unit)
		sb_dims(b, q->unit);
	else
		fmt_sb_puts(b, "null");
	fmt_sb_put(b, "}", 1);
}

static int cmp_q_ptr(const void *a, const void *b)
{
	return strcmp((*(const fmt_qtensor *const *)a)->name, (*(const fmt_qtensor *const *)b)->name);
}

static char *scales_name(const char *name)
{
	char *s = malloc(strlen(name) + sizeof APSIM_QSCALE);
	if (s) {
		strcpy(s, name);
		strcat(s, APSIM_QSCALE);
	}
	return s;
}

/* The qtensors of m (checked against their tensors); with in_file, only those whose codes
 * tensor index is marked. */
static fmt_kind qtensors_json(const fmt_model *m, const unsigned char *in_file, char **out, fmt_err *e)
{
	const fmt_qtensor **q = malloc((m->n_qtensors ? m->n_qtensors : 1) * sizeof *q);
	if (!q)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < m->n_qtensors; i++)
		q[i] = &m->qtensors[i];
	qsort(q, m->n_qtensors, sizeof *q, cmp_q_ptr);
	fmt_sb b = { 0 };
	fmt_kind k = FMT_OK;
	int first = 1;
	fmt_sb_put(&b, "{", 1);
	for (size_t i = 0; i < m->n_qtensors && k == FMT_OK; i++) {
		if (i && strcmp(q[i - 1]->name, q[i]->name) == 0) {
			k = fmt_fail(e, FMT_INVALID_FORMAT, "two compressed-tensor descriptors for " NM, q[i]->name);
			break;
		}
		if (!fmt_qtensor_canonical(q[i])) {
			k = fmt_fail(e, FMT_UNSUPPORTED, "encoded tensor " NM ": .apsim stores no zero point and names "
				     "the scales NAME" APSIM_QSCALE, q[i]->name);
			break;
		}
		char *sname = scales_name(q[i]->name);
		if (!sname) {
			k = fmt_fail(e, FMT_IO, "out of memory");
			break;
		}
		const fmt_tensor *codes = fmt_model_find_tensor(m, q[i]->name);
		k = fmt_qtensor_check(q[i], codes, fmt_model_find_tensor(m, sname), e);
		free(sname);
		if (k != FMT_OK || (in_file && !in_file[codes - m->tensors]))
			continue;
		if (!first)
			fmt_sb_put(&b, ",", 1);
		first = 0;
		fmt_sb_json_str(&b, q[i]->name, strlen(q[i]->name));
		fmt_sb_put(&b, ":", 1);
		sb_descriptor(&b, q[i]);
	}
	fmt_sb_put(&b, "}", 1);
	free(q);
	return finish(&b, out, k, e);
}

/* ---- header ---- */

static int cmp_kv(const void *a, const void *b)
{
	return strcmp(((const apsim_kv *)a)->key, ((const apsim_kv *)b)->key);
}

fmt_kind fmt_apsim_header_json(const apsim_kv *kv, size_t n_kv, const fmt_tensor *const *tensors,
			   const uint64_t *begins, size_t n_t, fmt_sb *b, fmt_err *e)
{
	apsim_kv *sorted = malloc((n_kv ? n_kv : 1) * sizeof *sorted);
	if (!sorted)
		return fmt_fail(e, FMT_IO, "out of memory");
	memcpy(sorted, kv, n_kv * sizeof *kv);
	qsort(sorted, n_kv, sizeof *sorted, cmp_kv);
	fmt_sb_puts(b, "{\"__metadata__\":{");
	for (size_t i = 0; i < n_kv; i++) {
		if (i)
			fmt_sb_put(b, ",", 1);
		fmt_sb_json_str(b, sorted[i].key, strlen(sorted[i].key));
		fmt_sb_put(b, ":", 1);
		fmt_sb_json_str(b, sorted[i].val, sorted[i].val_len);
	}
	fmt_sb_put(b, "}", 1);
	free(sorted);
	for (size_t i = 0; i < n_t; i++) {
		const fmt_tensor *t = tensors[i];
		fmt_sb_put(b, ",", 1);
		fmt_sb_json_str(b, t->name, strlen(t->name));
		fmt_sb_puts(b, ":{\"dtype\":\"");
		fmt_sb_puts(b, fmt_dtype_name(t->dtype));
		fmt_sb_puts(b, "\",\"shape\":");
		sb_shape(b, t->shape, t->ndim);
		fmt_sb_puts(b, ",\"data_offsets\":[");
		fmt_sb_u64(b, begins[i]);
		fmt_sb_put(b, ",", 1);
		fmt_sb_u64(b, begins[i] + t->nbytes);
		fmt_sb_puts(b, "]}");
	}
	fmt_sb_put(b, "}", 1);
	return b->oom ? fmt_fail(e, FMT_IO, "out of memory building the header") : FMT_OK;
}

/* 8-byte length + header padded with spaces to a multiple of 8. */
static fmt_kind padded_header(const apsim_kv *kv, size_t n_kv, const fmt_tensor *const *ts,
			      const uint64_t *begins, size_t n_t, fmt_sb *out, fmt_err *e)
{
	fmt_sb b = { 0 };
	fmt_sb_put(&b, "\0\0\0\0\0\0\0\0", 8);
	fmt_kind k = fmt_apsim_header_json(kv, n_kv, ts, begins, n_t, &b, e);
	while (k == FMT_OK && !b.oom && (b.len - 8) % 8 != 0)
		fmt_sb_put(&b, " ", 1);
	if (k == FMT_OK && b.oom)
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK && b.len - 8 > FMT_ST_HEADER_MAX)
		k = fmt_fail(e, FMT_UNSUPPORTED, "header would be %zu bytes, above the %u-byte safetensors cap", b.len - 8,
			     FMT_ST_HEADER_MAX);
	if (k != FMT_OK) {
		free(b.p);
		return k;
	}
	fmt_wr_u64((uint8_t *)b.p, b.len - 8);
	*out = b;
	return FMT_OK;
}

/* ---- one file ---- */

typedef struct hash_write {
	fmt_sha256 *h;
	fmt_sink *k;
} hash_write;

static fmt_kind hash_write_chunk(void *ctx, const uint8_t *bytes, size_t n, fmt_err *e)
{
	const hash_write *hw = ctx;
	fmt_kind r = hw->h ? fmt_sha256_update(hw->h, bytes, n, e) : FMT_OK;
	return r == FMT_OK && hw->k ? fmt_sink_write(hw->k, bytes, n, e) : r;
}

/* Hash (and write when k is not NULL) a tensor's bytes in bounded chunks. */
static fmt_kind stream_tensor(const fmt_model *m, const fmt_tensor *t, fmt_sha256 *h, fmt_sink *k,
			      fmt_err *e)
{
	hash_write hw = { h, k };
	return fmt_tensor_each_chunk(m, t, hash_write_chunk, &hw, e);
}

typedef struct wfile {
	const fmt_model *m;
	const fmt_tensor **ts;      /* file order */
	uint64_t *begins;
	size_t n_t;
	apsim_kv kv[12];            /* __metadata__ except sha256 and signature */
	size_t n_kv;
	const fmt_keyset *sign_keys; /* NULL: unsigned */
} wfile;

static fmt_kind stream_all(const wfile *w, fmt_sha256 *h, fmt_sink *k, fmt_err *e)
{
	for (size_t i = 0; i < w->n_t; i++) {
		fmt_kind r = stream_tensor(w->m, w->ts[i], h, k, e);
		if (r != FMT_OK)
			return r;
	}
	return FMT_OK;
}

/* The header with these sha256 and signature values. */
static fmt_kind header_with(const wfile *w, const char *sha, const char *sig, fmt_sb *out, fmt_err *e)
{
	apsim_kv kv[14];
	size_t n = w->n_kv;
	memcpy(kv, w->kv, n * sizeof *kv);
	kv[n++] = (apsim_kv){ (char *)"sha256", (char *)sha, strlen(sha) };
	if (sig)
		kv[n++] = (apsim_kv){ (char *)"signature", (char *)sig, strlen(sig) };
	return padded_header(kv, n, w->ts, w->begins, w->n_t, out, e);
}

static fmt_kind data_digest(const wfile *w, fmt_sink *k, char hex[FMT_SHA256_HEX + 1], fmt_err *e)
{
	char *table = NULL;
	size_t len = 0;
	fmt_kind r = fmt_apsim_build_table(w->kv, w->n_kv, w->ts, w->begins, w->n_t, &table, &len, e);
	if (r != FMT_OK)
		return r;
	fmt_sha256 h;
	uint8_t digest[FMT_SHA256_LEN];
	r = fmt_sha256_init(&h, e);
	if (r == FMT_OK) {
		r = fmt_sha256_update(&h, table, len, e);
		if (r == FMT_OK)
			r = stream_all(w, &h, k, e);
		if (r == FMT_OK)
			r = fmt_sha256_final(&h, digest, e);
		fmt_sha256_free(&h);
	}
	free(table);
	if (r == FMT_OK)
		fmt_hex(digest, FMT_SHA256_LEN, hex);
	return r;
}

/* A signature value of the length the real one will have (the header is patched in place). */
static void placeholder_signature(const fmt_keyset *keys, char out[FMT_APSIM_SIG_MAX])
{
	char id[FMT_MS_KEY_ID_HEX];
	if (keys->hmac) {
		snprintf(out, FMT_APSIM_SIG_MAX, "hmac-sha256:%s:%0*d", keys->hmac->id, FMT_SHA256_HEX, 0);
		return;
	}
	fmt_ms_key_id(keys->ed25519_secret->keynum, id);
	snprintf(out, FMT_APSIM_SIG_MAX, "ed25519:%s:%0*d==", id, APSIM_ED25519_B64 - 2, 0);
}

static fmt_kind write_file(const wfile *w, fmt_sink *k, char sha[FMT_SHA256_HEX + 1], fmt_err *e)
{
	char zeros[FMT_SHA256_HEX + 1], sig[FMT_APSIM_SIG_MAX], *sigp = NULL;
	memset(zeros, '0', FMT_SHA256_HEX);
	zeros[FMT_SHA256_HEX] = '\0';
	if (w->sign_keys) {
		placeholder_signature(w->sign_keys, sig);
		sigp = sig;
	}
	fmt_sb placeholder = { 0 }, real = { 0 };
	fmt_kind r = header_with(w, zeros, sigp, &placeholder, e);
	if (r == FMT_OK && !k->is_stdout)
		r = fmt_sink_write(k, placeholder.p, placeholder.len, e);
	/* Standard output cannot be patched: hash first, then write. */
	if (r == FMT_OK)
		r = data_digest(w, k->is_stdout ? NULL : k, sha, e);
	if (r == FMT_OK && w->sign_keys) {
		const char *shas[1] = { sha };
		r = fmt_apsim_signature(w->sign_keys, shas, 1, sig, e);
	}
	if (r == FMT_OK)
		r = header_with(w, sha, sigp, &real, e);
	if (r == FMT_OK && real.len != placeholder.len)
		r = fmt_fail(e, FMT_INTERNAL, "apsim header changed length when patched");
	if (r == FMT_OK && !k->is_stdout)
		r = fmt_sink_pwrite(k, 0, real.p, real.len, e);
	else if (r == FMT_OK) {
		r = fmt_sink_write(k, real.p, real.len, e);
		if (r == FMT_OK)
			r = stream_all(w, NULL, k, e);
	}
	free(placeholder.p);
	free(real.p);
	return r;
}

/* The __metadata__ entries shared by every file of a model (everything but sha256, shard,
 * signature and qtensors). texts: [0] metadata, [1] units. */
static void base_kv(wfile *w, char *const *texts, const char *qtensors, const char *shard)
{
	size_t n = 0;
	w->kv[n++] = (apsim_kv){ (char *)"apsi", (char *)FMT_APSI_WRITER, strlen(FMT_APSI_WRITER) };
	w->kv[n++] = (apsim_kv){ (char *)"format", (char *)"apsi-model", 10 };
	w->kv[n++] = (apsim_kv){ (char *)"metadata", texts[0], strlen(texts[0]) };
	w->kv[n++] = (apsim_kv){ (char *)"qtensors", (char *)qtensors, strlen(qtensors) };
	w->kv[n++] = (apsim_kv){ (char *)"shard", (char *)shard, strlen(shard) };
	w->kv[n++] = (apsim_kv){ (char *)"units", texts[1], strlen(texts[1]) };
	w->kv[n++] = (apsim_kv){ (char *)"version", (char *)"1", 1 };
	w->n_kv = n;
}

static fmt_kind model_texts(const fmt_model *m, char *texts[2], fmt_err *e)
{
	texts[0] = texts[1] = NULL;
	fmt_kind k = metadata_json(m, &texts[0], e);
	if (k == FMT_OK)
		k = units_json(m, &texts[1], e);
	if (k == FMT_OK && (fmt_apsim_json_too_deep(texts[0], strlen(texts[0]), APSIM_MAX_DEPTH)))
		k = fmt_fail(e, FMT_UNSUPPORTED, "metadata nested deeper than %d levels", APSIM_MAX_DEPTH);
	if (k != FMT_OK) {
		free(texts[0]);
		free(texts[1]);
		texts[0] = texts[1] = NULL;
	}
	return k;
}

/* Tensors in writer order with consecutive offsets. */
static fmt_kind ordered(const fmt_model *m, size_t **order, const fmt_tensor ***ts, uint64_t **begins,
			fmt_err *e)
{
	size_t n = m->n_tensors;
	fmt_kind k = fmt_st_tensor_order(m, order, e);
	if (k != FMT_OK)
		return k;
	*ts = malloc((n ? n : 1) * sizeof **ts);
	*begins = malloc((n ? n : 1) * sizeof **begins);
	if (!*ts || !*begins) {
		free(*order);
		free(*ts);
		free(*begins);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		(*ts)[i] = &m->tensors[(*order)[i]];
	return FMT_OK;
}

/* Offsets of ts[0..n) laid out from 0. */
static fmt_kind lay_out(const fmt_tensor *const *ts, size_t n, uint64_t *begins, uint64_t *total, fmt_err *e)
{
	uint64_t off = 0;
	for (size_t i = 0; i < n; i++) {
		begins[i] = off;
		if (fmt_add_u64(off, ts[i]->nbytes, &off))
			return fmt_fail(e, FMT_UNSUPPORTED, "total tensor size overflows 64 bits");
	}
	if (total)
		*total = off;
	return FMT_OK;
}

fmt_kind fmt_apsim_write(const fmt_model *m, fmt_sink *k, const fmt_write_opts *o, fmt_err *e)
{
	size_t *order = NULL;
	const fmt_tensor **ts = NULL;
	uint64_t *begins = NULL;
	char *texts[2] = { NULL, NULL }, *qt = NULL;
	char sha[FMT_SHA256_HEX + 1];
	fmt_kind r = ordered(m, &order, &ts, &begins, e);
	if (r != FMT_OK)
		return r;
	r = lay_out(ts, m->n_tensors, begins, NULL, e);
	if (r == FMT_OK)
		r = model_texts(m, texts, e);
	if (r == FMT_OK)
		r = qtensors_json(m, NULL, &qt, e);
	if (r == FMT_OK) {
		wfile w = { .m = m, .ts = ts, .begins = begins, .n_t = m->n_tensors,
			    .sign_keys = o && fmt_apsim_keys_sign(&o->keys) ? &o->keys : NULL };
		base_kv(&w, texts, qt, "1/1");
		r = write_file(&w, k, sha, e);
	}
	free(order);
	free(ts);
	free(begins);
	free(texts[0]);
	free(texts[1]);
	free(qt);
	return r;
}

/* ---- the index ---- */

typedef struct name_pair {
	const char *a, *b;
} name_pair;

static int cmp_pair(const void *x, const void *y)
{
	return strcmp(((const name_pair *)x)->a, ((const name_pair *)y)->a);
}

static void sb_pairs(fmt_sb *b, name_pair *p, size_t n)
{
	qsort(p, n, sizeof *p, cmp_pair);
	fmt_sb_put(b, "{", 1);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fmt_sb_put(b, ",", 1);
		fmt_sb_json_str(b, p[i].a, strlen(p[i].a));
		fmt_sb_put(b, ":", 1);
		fmt_sb_json_str(b, p[i].b, strlen(p[i].b));
	}
	fmt_sb_put(b, "}", 1);
}

/* Index JSON (§7, compact, sorted, final newline) written to k (not committed). */
static fmt_kind write_index_to(fmt_sink *k, char *const *files, const char (*shas)[FMT_SHA256_HEX + 1],
			       size_t n_files, const char *const *tensors, const char *const *tensor_files,
			       size_t n_t, uint64_t total, const char *signature, fmt_err *e)
{
	name_pair *p = malloc(((n_files > n_t ? n_files : n_t) + 1) * sizeof *p);
	if (!p)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_sb b = { 0 };
	fmt_sb_puts(&b, "{\"metadata\":{\"format\":\"apsi-model\",\"shard_sha256\":");
	for (size_t i = 0; i < n_files; i++)
		p[i] = (name_pair){ files[i], shas[i] };
	sb_pairs(&b, p, n_files);
	if (signature) {
		fmt_sb_puts(&b, ",\"signature\":");
		fmt_sb_json_str(&b, signature, strlen(signature));
	}
	fmt_sb_puts(&b, ",\"total_size\":");
	fmt_sb_u64(&b, total);
	fmt_sb_puts(&b, "},\"weight_map\":");
	for (size_t i = 0; i < n_t; i++)
		p[i] = (name_pair){ tensors[i], tensor_files[i] };
	sb_pairs(&b, p, n_t);
	fmt_sb_puts(&b, "}\n");
	free(p);
	fmt_kind r = b.oom ? fmt_fail(e, FMT_IO, "out of memory") : fmt_sink_write(k, b.p, b.len, e);
	free(b.p);
	return r;
}

/* The same written atomically over the index at path (signing it in place). */
static fmt_kind write_index(const char *path, char *const *files,
			    const char (*shas)[FMT_SHA256_HEX + 1], size_t n_files,
			    const char *const *tensors, const char *const *tensor_files, size_t n_t,
			    uint64_t total, const char *signature, fmt_err *e)
{
	fmt_sink k;
	fmt_kind r = fmt_sink_open_in_place(&k, path, e);
	if (r != FMT_OK)
		return r;
	r = write_index_to(&k, files, shas, n_files, tensors, tensor_files, n_t, total, signature, e);
	if (r == FMT_OK)
		return fmt_sink_commit(&k, e);
	fmt_sink_abort(&k);
	return r;
}

/* ---- sharded sets ---- */

/* The tensor index of name in m, or SIZE_MAX. */
static size_t tensor_index(const fmt_model *m, const char *name)
{
	const fmt_tensor *t = fmt_model_find_tensor(m, name);
	return t ? (size_t)(t - m->tensors) : SIZE_MAX;
}

/* The other half of a compressed tensor (codes <-> scales), or SIZE_MAX. */
static size_t partner_of(const fmt_model *m, const fmt_tensor *t)
{
	const fmt_qtensor *q = fmt_model_find_qtensor(m, t->name);
	if (q) {
		if (q->format == FMT_Q_BF16)
			return SIZE_MAX;
		char *s = scales_name(q->name);
		size_t i = s ? tensor_index(m, s) : SIZE_MAX;
		free(s);
		return i;
	}
	size_t n = strlen(t->name), sl = sizeof APSIM_QSCALE - 1;
	if (n <= sl || strcmp(t->name + n - sl, APSIM_QSCALE) != 0)
		return SIZE_MAX;
	char *base = strndup(t->name, n - sl);
	size_t i = SIZE_MAX;
	if (base && fmt_model_find_qtensor(m, base))
		i = tensor_index(m, base);
	free(base);
	return i;
}

static size_t apsim_partner(const fmt_model *m, size_t t)
{
	return partner_of(m, &m->tensors[t]);
}

/* Tensors in the safetensors writer's order; a compressed tensor's codes and scales are one
 * unit (specs/apsim.md §7). */
static const fmt_shard_rules apsim_rules = {
	.ext = "apsim",
	.has_index = 1,
	.max_shards = FMT_SHARD_MAX_FILES,
	.limits = FMT_APSIM_SHARD_LIMITS,
	.order = fmt_st_tensor_order,
	.partner = apsim_partner,
};

typedef struct set_plan {
	const fmt_model *m;
	const fmt_write_opts *o;
	const fmt_shard_plan *sp;
	size_t *order;
	const fmt_tensor **ts;
	uint64_t *begins;
	size_t *shard_of;
	size_t n_shards;
	char *texts[2];
	const char **names;                     /* shard file names (in sp's paths) */
	char (*shas)[FMT_SHA256_HEX + 1];
	uint64_t total;
} set_plan;

/* Shard s's file: its tensors in writer order laid out from 0, its __metadata__ entries (the
 * strings they point to in f); shard_file_free releases it. */
typedef struct shard_file {
	wfile w;
	char *qt, shard[48];
} shard_file;

static void shard_file_free(shard_file *f)
{
	free(f->qt);
	free(f->w.ts);
	free(f->w.begins);
}

static fmt_kind shard_file_of(const set_plan *p, size_t s, shard_file *f, fmt_err *e)
{
	const fmt_model *m = p->m;
	memset(f, 0, sizeof *f);
	f->w.m = m;
	unsigned char *in_file = calloc(m->n_tensors ? m->n_tensors : 1, 1);
	f->w.ts = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *f->w.ts);
	f->w.begins = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *f->w.begins);
	fmt_kind r = in_file && f->w.ts && f->w.begins ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; r == FMT_OK && i < m->n_tensors; i++)
		if (p->shard_of[p->order[i]] == s) {
			f->w.ts[f->w.n_t++] = p->ts[i];
			in_file[p->order[i]] = 1;
		}
	if (r == FMT_OK)
		r = lay_out(f->w.ts, f->w.n_t, f->w.begins, NULL, e);
	if (r == FMT_OK)
		r = qtensors_json(m, in_file, &f->qt, e);
	if (r == FMT_OK) {
		snprintf(f->shard, sizeof f->shard, "%zu/%zu", s + 1, p->n_shards);
		base_kv(&f->w, p->texts, f->qt, f->shard);
	}
	free(in_file);
	return r;
}

static fmt_kind write_shard(set_plan *p, size_t s, fmt_sink *k, fmt_err *e)
{
	shard_file f;
	fmt_kind r = shard_file_of(p, s, &f, e);
	if (r == FMT_OK)
		r = write_file(&f.w, k, p->shas[s], e);
	shard_file_free(&f);
	return r;
}

/* Shard s's whole file bytes, as write_shard writes it: the header (its sha256 of a fixed
 * length, no signature: the index carries it) and the tensor data (fmt_shard_count_fn). */
static fmt_kind count_shard_bytes(const void *ctx, fmt_shard_plan *sp, size_t s, fmt_err *e)
{
	const set_plan *p = ctx;
	uint64_t *bytes = &sp->shards[s].file_bytes;
	char zeros[FMT_SHA256_HEX + 1];
	memset(zeros, '0', FMT_SHA256_HEX);
	zeros[FMT_SHA256_HEX] = '\0';
	shard_file f;
	fmt_sb head = { 0 };
	uint64_t n = 0;
	fmt_kind r = shard_file_of(p, s, &f, e);
	if (r == FMT_OK)
		r = header_with(&f.w, zeros, NULL, &head, e);
	if (r == FMT_OK)
		r = lay_out(f.w.ts, f.w.n_t, f.w.begins, &n, e);
	if (r == FMT_OK && fmt_add_u64(n, head.len, bytes))
		r = fmt_fail(e, FMT_UNSUPPORTED, "total tensor size overflows 64 bits");
	free(head.p);
	shard_file_free(&f);
	return r;
}

static void plan_free(set_plan *p)
{
	free(p->order);
	free(p->ts);
	free(p->begins);
	free(p->shard_of);
	free(p->texts[0]);
	free(p->texts[1]);
	free(p->names);
	free(p->shas);
}

static fmt_kind write_set_index(set_plan *p, fmt_sink *k, fmt_err *e)
{
	const fmt_model *m = p->m;
	const fmt_write_opts *o = p->o;
	const char **tn = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *tn);
	const char **tf = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *tf);
	const char **shas = malloc(p->n_shards * sizeof *shas);
	char sig[FMT_APSIM_SIG_MAX];
	int sign = o && fmt_apsim_keys_sign(&o->keys);
	fmt_kind r = tn && tf && shas ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; r == FMT_OK && i < m->n_tensors; i++) {
		tn[i] = m->tensors[i].name;
		tf[i] = p->names[p->shard_of[i]];
	}
	for (size_t i = 0; r == FMT_OK && i < p->n_shards; i++)
		shas[i] = p->shas[i];
	if (r == FMT_OK && sign)
		r = fmt_apsim_signature(&o->keys, shas, p->n_shards, sig, e);
	if (r == FMT_OK)
		r = write_index_to(k, (char *const *)p->names, (const char (*)[FMT_SHA256_HEX + 1])p->shas,
				   p->n_shards, tn, tf, m->n_tensors, p->total, sign ? sig : NULL, e);
	free(tn);
	free(tf);
	free(shas);
	return r;
}

static fmt_kind write_set_file(void *ctx, size_t i, fmt_sink *k, fmt_err *e)
{
	set_plan *p = ctx;
	return i < p->n_shards ? write_shard(p, i, k, e) : write_set_index(p, k, e);
}

/* shard_of[tensor] and the shard file names from the cut. */
static fmt_kind take_plan(set_plan *p, fmt_err *e)
{
	const fmt_shard_plan *sp = p->sp;
	p->n_shards = sp->n_shards;
	p->shard_of = malloc((p->m->n_tensors ? p->m->n_tensors : 1) * sizeof *p->shard_of);
	p->names = calloc(sp->n_shards, sizeof *p->names);
	p->shas = calloc(sp->n_shards, sizeof *p->shas);
	if (!p->shard_of || !p->names || !p->shas)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t s = 0; s < sp->n_shards; s++) {
		p->names[s] = fmt_base_name(sp->shards[s].path);
		for (size_t i = 0; i < sp->shards[s].count; i++)
			p->shard_of[sp->shards[s].members[i]] = s;
	}
	return FMT_OK;
}

/* What writing the set of the cut sp takes: every tensor in writer order laid out, the model's
 * texts, every descriptor checked once, each tensor's shard; plan_free releases it. */
static fmt_kind set_plan_start(set_plan *p, const fmt_model *m, const fmt_write_opts *o, const fmt_shard_plan *sp,
			       fmt_err *e)
{
	memset(p, 0, sizeof *p);
	p->m = m;
	p->o = o;
	p->sp = sp;
	fmt_kind r = ordered(m, &p->order, &p->ts, &p->begins, e);
	if (r != FMT_OK)
		return r;
	r = lay_out(p->ts, m->n_tensors, p->begins, &p->total, e);
	if (r == FMT_OK)
		r = model_texts(m, p->texts, e);
	if (r == FMT_OK) {
		char *all = NULL;
		r = qtensors_json(m, NULL, &all, e); /* checks every descriptor once */
		free(all);
	}
	return r == FMT_OK ? take_plan(p, e) : r;
}

fmt_kind fmt_apsim_plan_shards(const fmt_model *m, const char *prefix, const fmt_shard_limits *l,
			       fmt_shard_plan *p, fmt_err *e)
{
	set_plan sp;
	memset(&sp, 0, sizeof sp);
	fmt_kind r = fmt_shard_plan_make(m, &apsim_rules, prefix, l, p, e);
	if (r == FMT_OK)
		r = set_plan_start(&sp, m, NULL, p, e);
	r = fmt_shard_plan_count(r, p, count_shard_bytes, &sp, e);
	plan_free(&sp);
	return r;
}

fmt_kind fmt_apsim_write_sharded(const fmt_model *m, const char *prefix, const fmt_shard_limits *l,
				 const fmt_write_opts *o, char ***out_paths, size_t *n_out, fmt_err *e)
{
	set_plan p;
	fmt_shard_plan sp;
	memset(&p, 0, sizeof p);
	memset(&sp, 0, sizeof sp);
	*out_paths = NULL;
	*n_out = 0;
	fmt_kind r = fmt_shard_plan_make(m, &apsim_rules, prefix, l, &sp, e);   /* the cut: sizes are not needed */
	if (r == FMT_OK)
		r = set_plan_start(&p, m, o, &sp, e);
	if (r == FMT_OK)
		r = fmt_shard_write_plan(&sp, o, write_set_file, &p, out_paths, n_out, e);
	plan_free(&p);
	fmt_shard_plan_free(&sp);
	return r;
}

/* ---- signing in place ---- */

static fmt_kind resign_file(fmt_model *m, const fmt_keyset *key, fmt_err *e)
{
	const apsim_state *st = m->format_state;
	const apsim_file *f = &st->files[0];
	const char *shas[1] = { f->sha256 };
	char sig[FMT_APSIM_SIG_MAX];
	fmt_kind r = fmt_apsim_signature(key, shas, 1, sig, e);
	if (r != FMT_OK)
		return r;
	apsim_kv *kv = malloc((f->n_kv + 1) * sizeof *kv);
	const fmt_tensor **ts = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *ts);
	uint64_t *begins = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *begins);
	fmt_sb head = { 0 };
	size_t n = 0;
	if (!kv || !ts || !begins)
		r = fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; r == FMT_OK && i < f->n_kv; i++)
		if (strcmp(f->kv[i].key, "signature") != 0)
			kv[n++] = f->kv[i];
	if (r == FMT_OK)
		kv[n++] = (apsim_kv){ (char *)"signature", sig, strlen(sig) };
	for (size_t i = 0; r == FMT_OK && i < f->n_tensors; i++) {
		ts[i] = &m->tensors[f->first_tensor + i];
		begins[i] = ts[i]->file_offset;
	}
	if (r == FMT_OK)
		r = padded_header(kv, n, ts, begins, f->n_tensors, &head, e);
	fmt_sink k;
	if (r == FMT_OK)
		r = fmt_sink_open_in_place(&k, m->path, e);
	if (r == FMT_OK) {
		/* The data is the tensors in file order, without holes (the reader checked): copy them. */
		r = fmt_sink_write(&k, head.p, head.len, e);
		for (size_t i = 0; r == FMT_OK && i < f->n_tensors; i++)
			r = fmt_tensor_write_to(m, ts[i], &k, e);
		if (r == FMT_OK)
			r = fmt_sink_commit(&k, e);
		else
			fmt_sink_abort(&k);
	}
	free(head.p);
	free(kv);
	free(ts);
	free(begins);
	return r;
}

static fmt_kind resign_index(fmt_model *m, const fmt_keyset *key, fmt_err *e)
{
	const apsim_state *st = m->format_state;
	size_t n = st->n_files;
	const char **shas = malloc(n * sizeof *shas);
	const char **tn = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *tn);
	const char **tf = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *tf);
	char sig[FMT_APSIM_SIG_MAX];
	fmt_kind r = shas && tn && tf ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; r == FMT_OK && i < n; i++) {
		shas[i] = st->shard_sha[i];
		const apsim_file *f = &st->files[i];
		for (size_t j = 0; j < f->n_tensors; j++) {
			tn[f->first_tensor + j] = m->tensors[f->first_tensor + j].name;
			tf[f->first_tensor + j] = st->shard_names[i];
		}
	}
	if (r == FMT_OK)
		r = fmt_apsim_signature(key, shas, n, sig, e);
	if (r == FMT_OK)
		r = write_index(m->path, st->shard_names, (const char (*)[FMT_SHA256_HEX + 1])st->shard_sha,
				n, tn, tf, m->n_tensors, st->total_size, sig, e);
	free(shas);
	free(tn);
	free(tf);
	return r;
}

/* Open path with d (the driver that found it: a checkpoint or an index), verify, re-sign. */
static fmt_kind sign_in_place(const fmt_driver *d, const char *path, const fmt_keyset *keys, int threads,
			      fmt_err *e)
{
	fmt_model m;
	const fmt_keyset *key = keys;
	if (!fmt_apsim_keys_sign(keys))
		return fmt_fail(e, FMT_USAGE, "signing needs an HMAC key or an Ed25519 secret key");
	fmt_kind r = fmt_model_open_with(&m, path, d, e);
	if (r != FMT_OK)
		return r;
	fmt_verify_opts vo = { .threads = threads };
	r = fmt_model_verify(&m, &vo, e);
	if (r == FMT_OK)
		r = m.driver == &fmt_driver_apsim ? resign_file(&m, key, e) : resign_index(&m, key, e);
	if (r != FMT_OK)
		fmt_err_file(e, path);
	fmt_model_free(&m);
	return r;
}

fmt_kind fmt_apsim_sign_file_in_place(const char *path, const fmt_keyset *keys, int threads, fmt_err *e)
{
	return sign_in_place(&fmt_driver_apsim, path, keys, threads, e);
}

fmt_kind fmt_apsim_sign_set_in_place(const char *path, const fmt_keyset *keys, int threads, fmt_err *e)
{
	return sign_in_place(&fmt_driver_apsim_index, path, keys, threads, e);
}
