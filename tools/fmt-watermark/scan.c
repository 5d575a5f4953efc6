/* Reading a file's values for extract, prove, detect and entropy: model tensors in bounded
 * ranges spread over -T threads (votes and lattice counts are sums of integers, so the result
 * is the same for any thread count), dataset columns batch by batch. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/convert.h"
#include "fmt/out.h"
#include "fmt/report.h"
#include "fmt/registry.h"
#include "fmt/thread.h"
#include "wm.h"

#define RANGE_BYTES (8u << 20)

int wm_dtype_width(fmt_dtype t)
{
	return t == FMT_DT_F32 ? 4 : t == FMT_DT_F64 ? 8 : 0;
}

int wm_ctype_width(fmt_ctype t)
{
	return t == FMT_C_F32 ? 4 : t == FMT_C_F64 ? 8 : 0;
}

/* Bytes of one block of a dtype fmtkit-ss reads (F64, or what fmt_decode_f32 decodes to float),
 * or 0: integers, sub-byte blocks and what cannot be decoded. */
static uint64_t ss_unit(fmt_dtype t)
{
	if (t == FMT_DT_F64)
		return 8;
	if (!fmt_decode_supported(t) || fmt_dtype_get(t)->is_int || fmt_dtype_get(t)->block_bits % 8)
		return 0;
	return fmt_dtype_get(t)->block_bits / 8;
}

/* Bytes of FMT_SS_BLOCK elements of a dtype fmtkit-ss reads, or 0 when its blocks do not tile it. */
static uint64_t ss_group_bytes(fmt_dtype t, uint64_t unit)
{
	uint64_t per_unit = t == FMT_DT_F64 ? 1 : fmt_dtype_get(t)->block_elems;
	return per_unit && FMT_SS_BLOCK % per_unit == 0 ? FMT_SS_BLOCK / per_unit * unit : 0;
}

int wm_tensor_wanted(const wm_opts *o, const char *name)
{
	if (o->n_tensors == 0)
		return 1;
	for (size_t i = 0; i < o->n_tensors; i++)
		if (fnmatch(o->tensors[i], name, 0) == 0)
			return 1;
	return 0;
}

int wm_column_wanted(const wm_opts *o, const char *name)
{
	if (o->n_columns == 0)
		return 1;
	for (size_t i = 0; i < o->n_columns; i++)
		if (strcmp(o->columns[i], name) == 0)
			return 1;
	return 0;
}

fmt_kind wm_add_column(wm_result *r, const char *name, int is_tensor, const char *dtype, int width,
		       fmt_err *e)
{
	wm_column **p = realloc(r->cols, (r->n_cols + 1) * sizeof *p);
	if (!p)
		return fmt_fail(e, FMT_IO, "out of memory");
	r->cols = p;
	wm_column *c = calloc(1, sizeof *c);
	if (!c || !(c->name = strdup(name))) {
		free(c);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	c->is_tensor = is_tensor;
	snprintf(c->dtype, sizeof c->dtype, "%s", dtype);
	c->width = width;
	pthread_mutex_init(&c->lock, NULL);
	r->cols[r->n_cols++] = c;
	return FMT_OK;
}

void wm_result_free(wm_result *r)
{
	for (size_t i = 0; i < r->n_cols; i++) {
		wm_column *c = r->cols[i];
		pthread_mutex_destroy(&c->lock);
		free(c->name);
		free(c->entropy);
		free(c->alim);
		free(c->ss);
		for (size_t j = c->ss_next; c->ss_pending && j < c->ss_ranges; j++)
			free(c->ss_pending[j]);
		free(c->ss_pending);
		free(c->ss2);
		for (size_t j = c->ss_next; c->ss2_pending && j < c->ss_ranges; j++)
			free(c->ss2_pending[j]);
		free(c->ss2_pending);
		free(c->pieces);
		free(c);
	}
	for (size_t i = 0; i < r->n_left; i++)
		free(r->left_alone[i]);
	free(r->left_alone);
	free(r->cols);
	fmt_json_rec_free(&r->embed_rec);
	memset(r, 0, sizeof *r);
}

/* One range of one tensor: the unit of work of the threads. */
typedef struct range { const fmt_tensor *t; wm_column *col; uint64_t off, n; } range;

typedef struct scan_ctx {
	const fmt_model *m;
	range *ranges;
	size_t n_ranges;
	wm_scan_kind kind;
	const fmt_wm_params *prm;
	const uint8_t *ss_key;         /* fmtkit-ss/1 sums too (votes) */
	const uint8_t *ss2_key;        /* fmtkit-ss/2 evidence too */
	int votes;                     /* fmtkit-wm/1 votes (votes) */
	pthread_mutex_t lock;
	size_t err_index;              /* the first failing range (lowest index), SIZE_MAX if none */
	fmt_err err;
} scan_ctx;

/* fmtkit-ss/1 and /2: a range's sums, merged into its column's in range order (sums of doubles: the
 * same order for any -T gives the same bits). */
static fmt_kind ss_range(scan_ctx *s, const range *rg, size_t index, const uint8_t *buf, fmt_err *e)
{
	const fmt_tensor *t = rg->t;
	const fmt_dtype_info *di = fmt_dtype_get(t->dtype);
	uint64_t unit = ss_unit(t->dtype), per_unit = t->dtype == FMT_DT_F64 ? 1 : di->block_elems;
	uint64_t first = rg->off / unit * per_unit, n = rg->n / unit * per_unit;
	fmt_ss_acc *acc = calloc(1, sizeof *acc);
	fmt_ss2_acc *acc2 = rg->col->ss2 ? calloc(1, sizeof *acc2) : NULL;
	float *vals = t->dtype == FMT_DT_F64 ? NULL : malloc((size_t)(n ? n : 1) * sizeof *vals);
	if (!acc || (rg->col->ss2 && !acc2) || (t->dtype != FMT_DT_F64 && !vals)) {
		free(acc);
		free(acc2);
		free(vals);
		return fmt_fail(e, FMT_IO, "out of memory for a range of tensor '%s'", t->name);
	}
	fmt_kind k = FMT_OK;
	if (t->dtype == FMT_DT_F64) {
		fmt_ss_acc_f64(s->ss_key, acc, (const double *)(const void *)buf, t->nelems, first, (size_t)n);
		if (acc2)
			fmt_ss2_acc_f64(s->ss2_key, acc2, (const double *)(const void *)buf, t->nelems, first, (size_t)n);
	} else if ((k = fmt_decode_f32(t->dtype, buf, n, vals, e)) == FMT_OK) {
		fmt_ss_acc_f32(s->ss_key, acc, vals, t->nelems, first, (size_t)n);
		if (acc2)
			fmt_ss2_acc_f32(s->ss2_key, acc2, vals, t->nelems, first, (size_t)n);
	}
	free(vals);
	if (k != FMT_OK) {
		free(acc);
		free(acc2);
		return k;
	}
	wm_column *c = rg->col;
	pthread_mutex_lock(&c->lock);
	c->ss_pending[index - c->ss_first] = acc;
	if (acc2)
		c->ss2_pending[index - c->ss_first] = acc2;
	while (c->ss_next < c->ss_ranges && c->ss_pending[c->ss_next]) {
		fmt_ss_acc_merge(c->ss, c->ss_pending[c->ss_next]);
		free(c->ss_pending[c->ss_next]);
		c->ss_pending[c->ss_next] = NULL;
		if (c->ss2) {
			fmt_ss2_acc_merge(c->ss2, c->ss2_pending[c->ss_next]);
			free(c->ss2_pending[c->ss_next]);
			c->ss2_pending[c->ss_next] = NULL;
		}
		c->ss_next++;
	}
	pthread_mutex_unlock(&c->lock);
	return FMT_OK;
}

static void scan_range(void *p, size_t i)
{
	scan_ctx *s = p;
	range *rg = &s->ranges[i];
	fmt_err e;
	fmt_err_clear(&e);
	uint8_t *buf = malloc(rg->n ? (size_t)rg->n : 1);
	fmt_kind k = buf ? fmt_tensor_read(s->m, rg->t, rg->off, buf, (size_t)rg->n, &e)
			 : fmt_fail(&e, FMT_IO, "out of memory for a range of tensor '%s'", rg->t->name);
	if (k == FMT_OK && rg->col->ss)
		k = ss_range(s, rg, i, buf, &e);
	if (k == FMT_OK && rg->col->width > 0 && (s->kind != WM_SCAN_VOTES || s->votes)) {
		size_t count = (size_t)rg->n / (size_t)rg->col->width;
		if (s->kind == WM_SCAN_VOTES) {
			fmt_wm_votes v = { { 0 }, { 0 } };
			fmt_wm_vote(s->prm, buf, count, rg->col->width, &v);
			pthread_mutex_lock(&rg->col->lock);
			fmt_wm_votes_merge(&rg->col->votes, &v);
			pthread_mutex_unlock(&rg->col->lock);
		} else {
			fmt_wm_lattice l;
			memset(&l, 0, sizeof l);
			fmt_wm_lattice_add(&l, buf, count, rg->col->width);
			pthread_mutex_lock(&rg->col->lock);
			fmt_wm_lattice_merge(&rg->col->lattice, &l);
			pthread_mutex_unlock(&rg->col->lock);
		}
	}
	free(buf);
	if (k != FMT_OK) {
		pthread_mutex_lock(&s->lock);
		if (i < s->err_index) {
			s->err_index = i;
			s->err = e;
		}
		pthread_mutex_unlock(&s->lock);
	}
}

typedef struct entropy_pass { wm_column *col; int second; } entropy_pass;

static fmt_kind entropy_chunk(void *ctx, const uint8_t *bytes, size_t n, fmt_err *e)
{
	(void)e;
	entropy_pass *ep = ctx;
	int w = ep->col->width;
	for (size_t i = 0; i + (size_t)w <= n; i += (size_t)w) {
		double v = fmt_wm_load_value(bytes + i, w);
		if (ep->second)
			fmt_wm_entropy_hist(ep->col->entropy, v);
		else
			fmt_wm_entropy_add(ep->col->entropy, v, fmt_wm_load_bits(bytes + i, w));
	}
	return FMT_OK;
}

static fmt_kind scan_model(fmt_model *m, wm_scan_kind kind, const wm_opts *o, const fmt_wm_params *prm,
			   wm_result *r, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	size_t n_ranges = 0, cap = 0;
	range *ranges = NULL;
	int want_ss = kind == WM_SCAN_VOTES && o->scheme != WM_SCHEME_QIM;
	int want_ss2 = want_ss && o->scheme != WM_SCHEME_SS1 && o->ss2_key;
	int want_votes = kind != WM_SCAN_VOTES || (o->scheme != WM_SCHEME_SS && o->scheme != WM_SCHEME_SS1);
	r->has_ss = want_ss;
	r->has_ss2 = want_ss2;
	r->has_qim = kind == WM_SCAN_VOTES && want_votes;
	for (size_t i = 0; i < m->n_tensors && k == FMT_OK; i++) {
		const fmt_tensor *t = &m->tensors[i];
		int width = want_votes ? wm_dtype_width(t->dtype) : 0;
		uint64_t unit = want_ss && t->nelems <= FMT_SS_MAX_ELEMS ? ss_unit(t->dtype) : 0;
		if ((!width && !unit) || !wm_tensor_wanted(o, t->name))
			continue;
		if ((k = wm_add_column(r, t->name, 1, fmt_dtype_name(t->dtype), width, e)) != FMT_OK)
			break;
		wm_column *col = r->cols[r->n_cols - 1];
		col->nelems = t->nelems;
		if (kind == WM_SCAN_ENTROPY) {
			if (!(col->entropy = malloc(sizeof *col->entropy))) {
				k = fmt_fail(e, FMT_IO, "out of memory");
				break;
			}
			fmt_wm_entropy_init(col->entropy);
			entropy_pass ep = { col, 0 };
			k = fmt_tensor_each_chunk(m, t, entropy_chunk, &ep, e);
			ep.second = 1;
			if (k == FMT_OK)
				k = fmt_tensor_each_chunk(m, t, entropy_chunk, &ep, e);
			continue;
		}
		uint64_t align = t->chunk_align ? t->chunk_align : 1, step = RANGE_BYTES;
		uint64_t grain = fmt_lcm_u64(align, unit ? unit : (uint64_t)width);
		if (width && unit)
			grain = fmt_lcm_u64(grain, (uint64_t)width);
		uint64_t group_bytes = unit ? ss_group_bytes(t->dtype, unit) : 0;
		int ss2 = want_ss2 && group_bytes;
		if (ss2)   /* fmtkit-ss/2 reads whole groups in a range */
			grain = fmt_lcm_u64(grain, group_bytes);
		step = grain * (RANGE_BYTES / grain ? RANGE_BYTES / grain : 1);
		if (ss2) {
			col->ss2 = calloc(1, sizeof *col->ss2);
			col->ss2_pending = calloc(t->nbytes ? (size_t)((t->nbytes - 1) / step + 1) : 1, sizeof *col->ss2_pending);
			if (!col->ss2 || !col->ss2_pending) {
				k = fmt_fail(e, FMT_IO, "out of memory");
				break;
			}
		}
		if (unit) {
			col->ss_first = n_ranges;
			col->ss_ranges = t->nbytes ? (size_t)((t->nbytes - 1) / step + 1) : 0;
			col->ss = calloc(1, sizeof *col->ss);
			col->ss_pending = calloc(col->ss_ranges ? col->ss_ranges : 1, sizeof *col->ss_pending);
			if (!col->ss || !col->ss_pending) {
				k = fmt_fail(e, FMT_IO, "out of memory");
				break;
			}
		}
		for (uint64_t off = 0; off < t->nbytes; off += step) {
			if (n_ranges == cap) {
				cap = cap ? 2 * cap : 64;
				range *p = realloc(ranges, cap * sizeof *p);
				if (!p) {
					free(ranges);
					return fmt_fail(e, FMT_IO, "out of memory");
				}
				ranges = p;
			}
			ranges[n_ranges++] = (range){ t, col, off, t->nbytes - off < step ? t->nbytes - off : step };
		}
	}
	if (k == FMT_OK && n_ranges) {
		fmt_pool *pool = NULL;
		scan_ctx s = { .m = m, .ranges = ranges, .n_ranges = n_ranges, .kind = kind, .prm = prm,
			       .ss_key = o->ss_key, .ss2_key = o->ss2_key, .votes = want_votes, .err_index = SIZE_MAX };
		pthread_mutex_init(&s.lock, NULL);
		k = fmt_pool_create(&pool, o->threads, e);
		if (k == FMT_OK) {
			fmt_pool_run(pool, n_ranges, scan_range, &s);
			fmt_pool_destroy(pool);
			if (s.err_index != SIZE_MAX) {
				*e = s.err;
				k = e->kind;
			}
		}
		pthread_mutex_destroy(&s.lock);
	}
	free(ranges);
	return k;
}

/* One batch column's values (nulls skipped) into a column's accumulator. */
static void scan_values(wm_column *col, const fmt_column *bc, uint64_t rows, wm_scan_kind kind, int pass,
			const fmt_wm_params *prm)
{
	size_t w = col->integer ? (size_t)col->integer : (size_t)col->width;
	int has_nulls = bc->validity && bc->null_count;
	if (!has_nulls && (kind == WM_SCAN_VOTES || kind == WM_SCAN_LATTICE)) {
		if (kind == WM_SCAN_VOTES)
			fmt_wm_vote(prm, bc->values, (size_t)rows, col->width, &col->votes);
		else
			fmt_wm_lattice_add(&col->lattice, bc->values, (size_t)rows, col->width);
		return;
	}
	for (uint64_t row = 0; row < rows; row++) {
		if (has_nulls && fmt_column_is_null(bc, row))
			continue;
		const uint8_t *p = bc->values + row * w;
		switch (kind) {
		case WM_SCAN_VOTES: fmt_wm_vote(prm, p, 1, col->width, &col->votes); break;
		case WM_SCAN_LATTICE: fmt_wm_lattice_add(&col->lattice, p, 1, col->width); break;
		case WM_SCAN_ALIMENTAR: fmt_wm_alim_add(col->alim, (int)(p[0] & 1)); break;
		case WM_SCAN_ENTROPY: {
			double v;
			uint64_t low;
			if (col->integer) {
				int64_t iv = 0;
				uint64_t uv = 0;
				memcpy(&uv, p, w);
				if (col->width < 0) {            /* signed: sign-extend */
					int shift = 64 - 8 * (int)w;
					iv = (int64_t)(uv << shift) >> shift;
					v = (double)iv;
				} else {
					v = (double)uv;
				}
				low = uv;
			} else {
				v = fmt_wm_load_value(p, col->width);
				low = fmt_wm_load_bits(p, col->width);
			}
			if (pass == 0)
				fmt_wm_entropy_add(col->entropy, v, low);
			else
				fmt_wm_entropy_hist(col->entropy, v);
			break;
		}
		}
	}
}

static int signed_int(fmt_ctype t)
{
	return t == FMT_C_I8 || t == FMT_C_I16 || t == FMT_C_I32 || t == FMT_C_I64;
}

static int unsigned_int(fmt_ctype t)
{
	return t == FMT_C_U8 || t == FMT_C_U16 || t == FMT_C_U32 || t == FMT_C_U64;
}

static fmt_kind table_columns(fmt_table *t, wm_scan_kind kind, const wm_opts *o, wm_result *r, long *col_of,
			      fmt_err *e)
{
	for (size_t f = 0; f < t->schema.n_fields; f++) {
		const fmt_field *fl = &t->schema.fields[f];
		int width = wm_ctype_width(fl->type), integer = 0;
		col_of[f] = -1;
		if (kind == WM_SCAN_ENTROPY && !width && (signed_int(fl->type) || unsigned_int(fl->type)))
			integer = (int)fmt_ctype_width(fl->type);
		if ((!width && !integer) || !wm_column_wanted(o, fl->name))
			continue;
		if (kind == WM_SCAN_ALIMENTAR && o->n_columns)
			continue;                           /* upstream reads every float column */
		fmt_kind k = wm_add_column(r, fl->name, 0, fmt_ctype_name(fl->type), width ? width : signed_int(fl->type) ? -1 : 1, e);
		if (k != FMT_OK)
			return k;
		wm_column *c = r->cols[r->n_cols - 1];
		c->integer = integer;
		if (kind == WM_SCAN_ENTROPY && !(c->entropy = malloc(sizeof *c->entropy)))
			return fmt_fail(e, FMT_IO, "out of memory");
		if (c->entropy)
			fmt_wm_entropy_init(c->entropy);
		if (kind == WM_SCAN_ALIMENTAR && !(c->alim = calloc(1, sizeof *c->alim)))
			return fmt_fail(e, FMT_IO, "out of memory");
		col_of[f] = (long)r->n_cols - 1;
	}
	return FMT_OK;
}

static fmt_kind table_pass(fmt_table *t, wm_scan_kind kind, int pass, const fmt_wm_params *prm, wm_result *r,
			   const long *col_of, fmt_err *e)
{
	for (;;) {
		fmt_batch b;
		int done = 0;
		fmt_kind k = fmt_table_next(t, &b, &done, e);
		if (k != FMT_OK)
			return k;
		if (done) {
			fmt_batch_free(&b);
			return FMT_OK;
		}
		for (size_t f = 0; f < t->schema.n_fields && f < b.n_columns; f++)
			if (col_of[f] >= 0)
				scan_values(r->cols[col_of[f]], &b.columns[f], b.n_rows, kind, pass, prm);
		fmt_batch_free(&b);
	}
}

static fmt_kind scan_table(const char *path, fmt_table *t, wm_scan_kind kind, const wm_opts *o,
			   const fmt_wm_params *prm, wm_result *r, fmt_err *e)
{
	long *col_of = malloc((t->schema.n_fields + 1) * sizeof *col_of);
	if (!col_of)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = fmt_table_verify(t, NULL, e);
	t->allow_expired = o->allow_expired;
	if (k == FMT_OK)
		k = fmt_table_rows_gate(t, e);
	if (k == FMT_OK && t->rows_note[0] && !o->common.quiet)
		fmt_report_warning(stderr, TOOL, "%s: %s", path, t->rows_note);
	if (k == FMT_OK)
		k = fmt_table_unlock(t, o->dk, o->keys, 1, e);
	if (k == FMT_OK)
		k = table_columns(t, kind, o, r, col_of, e);
	if (k == FMT_OK)
		k = table_pass(t, kind, 0, prm, r, col_of, e);
	if (k == FMT_OK && kind == WM_SCAN_ENTROPY) {
		/* the value histogram needs pass 1's min and max: read the table again */
		fmt_table t2;
		k = fmt_table_open(&t2, path, t->driver, e);
		if (k == FMT_OK) {
			t2.allow_expired = o->allow_expired;
			k = fmt_table_unlock(&t2, o->dk, o->keys, 1, e);
			if (k == FMT_OK)
				k = table_pass(&t2, kind, 1, prm, r, col_of, e);
			fmt_table_free(&t2);
		}
	}
	free(col_of);
	return k;
}

fmt_kind wm_scan(const char *path, wm_scan_kind kind, const wm_opts *o, const fmt_wm_params *prm,
		 wm_result *r, fmt_err *e)
{
	fmt_model m;
	fmt_table t;
	int is_table = 0;
	fmt_kind k = fmt_open_any(path, NULL, &m, &t, &is_table, e);
	if (k != FMT_OK)
		return k;
	r->is_table = is_table;
	if (is_table) {
		r->format = t.driver->name;
		r->has_qim = kind == WM_SCAN_VOTES;
		if (kind == WM_SCAN_VOTES && (o->scheme == WM_SCHEME_SS || o->scheme == WM_SCHEME_SS1))
			k = fmt_fail(e, FMT_USAGE, "--scheme ss reads model weights; a dataset's columns carry --scheme qim");
		else
			k = scan_table(path, &t, kind, o, prm, r, e);
		fmt_table_free(&t);
	} else {
		r->format = m.driver ? m.driver->name : "model";
		m.reader_threads = o->threads;
		if (kind == WM_SCAN_ALIMENTAR)
			k = fmt_fail(e, FMT_USAGE, "--scheme alimentar reads datasets (.ald float columns), not models");
		else
			k = scan_model(&m, kind, o, prm, r, e);
		fmt_model_free(&m);
	}
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}
