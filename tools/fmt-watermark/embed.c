/* embed: fmt-convert's conversion of IN to OUT (libcommon/pipeline, fmt/pipeline.h) with a
 * hook that wraps every selected float tensor's reader (or the input table's batches) so the
 * values are marked as the writer pulls them. The output is what fmt-convert --dtype keep
 * writes, but for the marked values; the marks depend on each value alone, so any -T and any
 * chunking give the same bytes. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/pipeline.h"
#include "fmt/thread.h"
#include "wm.h"

#define PIECE_VALUES 65536   /* the unit of -T work inside one read: fixed, so sums do not depend on -T */

typedef struct embed_ctx {
	fmt_pool *pool;
	const wm_opts *o;
	const fmt_wm_params *prm;
	wm_result *r;
	/* tables: the wrapped driver (its first member is what t->driver points to) */
	struct table_wrap { fmt_table_driver d; const fmt_table_driver *inner; struct embed_ctx *ctx;
			    long *col_of; } tw;
} embed_ctx;

/* The reader that replaces a float tensor's: the original bytes, then the marks. */
typedef struct tensor_wrap {
	fmt_tensor orig;
	wm_column *col;
	const fmt_wm_params *prm;
	int width;
	fmt_pool *pool;
} tensor_wrap;

typedef struct piece_job {
	const tensor_wrap *w;
	uint8_t *dst;
	size_t n;                    /* values */
	fmt_wm_dist *dist;           /* one per piece */
} piece_job;

static void mark_piece(void *ctx, size_t i)
{
	piece_job *j = ctx;
	size_t first = i * PIECE_VALUES, n = j->n - first < PIECE_VALUES ? j->n - first : PIECE_VALUES;
	memset(&j->dist[i], 0, sizeof j->dist[i]);
	fmt_wm_embed(j->w->prm, j->dst + first * (size_t)j->w->width, n, j->w->width, &j->dist[i]);
}

static void piece_add(wm_column *c, uint64_t off, const fmt_wm_dist *d)
{
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->n_pieces; i++)
		if (c->pieces[i].off == off) {      /* a range read again: counted once */
			pthread_mutex_unlock(&c->lock);
			return;
		}
	if (c->n_pieces == c->cap_pieces) {
		size_t cap = c->cap_pieces ? 2 * c->cap_pieces : 16;
		void *p = realloc(c->pieces, cap * sizeof *c->pieces);
		if (!p) {
			pthread_mutex_unlock(&c->lock);
			return;                     /* the statistics only; the bytes are right */
		}
		c->pieces = p;
		c->cap_pieces = cap;
	}
	c->pieces[c->n_pieces].off = off;
	c->pieces[c->n_pieces++].d = *d;
	pthread_mutex_unlock(&c->lock);
}

static fmt_kind marked_read(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst, size_t n,
			    fmt_err *e)
{
	tensor_wrap *w = t->reader_ctx;
	fmt_kind k = fmt_tensor_read(m, &w->orig, off, dst, n, e);
	if (k != FMT_OK)
		return k;
	if (off % (uint64_t)w->width || n % (size_t)w->width)
		return fmt_fail(e, FMT_INTERNAL, "tensor '%s': a read not on value boundaries", t->name);
	fmt_wm_dist d = { 0 };
	size_t values = n / (size_t)w->width, pieces = (values + PIECE_VALUES - 1) / PIECE_VALUES;
	/* The writer's threads already read tensors side by side: mark on this one then. */
	fmt_wm_dist *dist = pieces > 1 && w->pool && !fmt_tensor_reads_in_parallel() ? malloc(pieces * sizeof *dist) : NULL;
	if (dist) {
		piece_job job = { w, dst, values, dist };
		fmt_pool_run(w->pool, pieces, mark_piece, &job);
		for (size_t i = 0; i < pieces; i++)
			fmt_wm_dist_merge(&d, &dist[i]);
		free(dist);
	} else {
		for (size_t first = 0; first < values; first += PIECE_VALUES) {
			fmt_wm_dist p = { 0 };
			size_t count = values - first < PIECE_VALUES ? values - first : PIECE_VALUES;
			fmt_wm_embed(w->prm, dst + first * (size_t)w->width, count, w->width, &p);
			fmt_wm_dist_merge(&d, &p);
		}
	}
	piece_add(w->col, off, &d);
	return FMT_OK;
}

static void wrap_free(void *p)
{
	tensor_wrap *w = p;
	if (w->orig.free_ctx)
		w->orig.free_ctx(w->orig.reader_ctx);
	if (w->orig.owned_data)
		free((void *)w->orig.data);
	free(w);
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

static fmt_kind model_hook(fmt_model *out, void *ctx, fmt_err *e)
{
	embed_ctx *c = ctx;
	for (size_t i = 0; i < out->n_tensors; i++) {
		fmt_tensor *t = &out->tensors[i];
		if (!wm_tensor_wanted(c->o, t->name))
			continue;
		int width = wm_dtype_width(t->dtype);
		if (!width) {
			if (t->dtype == FMT_DT_F16 || t->dtype == FMT_DT_BF16) {
				char *name = strdup(t->name);
				char **p = name ? realloc(c->r->left_alone, (c->r->n_left + 1) * sizeof *p) : NULL;
				if (!p) {
					free(name);
					return fmt_fail(e, FMT_IO, "out of memory");
				}
				p[c->r->n_left++] = name;
				c->r->left_alone = p;
			}
			continue;
		}
		fmt_kind k = wm_add_column(c->r, t->name, 1, fmt_dtype_name(t->dtype), width, e);
		tensor_wrap *w = k == FMT_OK ? calloc(1, sizeof *w) : NULL;
		if (k != FMT_OK)
			return k;
		if (!w)
			return fmt_fail(e, FMT_IO, "out of memory");
		w->orig = *t;
		w->col = c->r->cols[c->r->n_cols - 1];
		w->prm = c->prm;
		w->width = width;
		w->pool = c->pool;
		uint64_t align = t->chunk_align ? t->chunk_align : 1;
		t->chunk_align = align / gcd(align, (uint64_t)width) * (uint64_t)width;
		t->data = NULL;
		t->owned_data = 0;
		t->source = -1;
		t->reader = marked_read;
		t->reader_ctx = w;
		t->free_ctx = wrap_free;
	}
	return FMT_OK;
}

/* Dataset batches: the selected float columns copied into the batch's own memory and marked. */
static fmt_kind marked_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e)
{
	const struct table_wrap *tw = (const struct table_wrap *)t->driver;
	fmt_kind k = tw->inner->next(t, b, done, e);
	if (k != FMT_OK || *done)
		return k;
	embed_ctx *c = tw->ctx;
	for (size_t f = 0; f < t->schema.n_fields && f < b->n_columns; f++) {
		long ci = tw->col_of[f];
		if (ci < 0)
			continue;
		wm_column *col = c->r->cols[ci];
		fmt_column *bc = &b->columns[f];
		size_t width = (size_t)col->width, rows = (size_t)b->n_rows;
		if (rows == 0)
			continue;
		if (bc->values_len < (uint64_t)rows * width)
			return fmt_fail(e, FMT_INVALID_FORMAT, "column '%s': fewer value bytes than rows", col->name);
		uint8_t *copy = malloc(rows * width);
		if (!copy)
			return fmt_fail(e, FMT_IO, "out of memory for a batch of column '%s'", col->name);
		memcpy(copy, bc->values, rows * width);
		if ((k = fmt_batch_own(b, copy, e)) != FMT_OK)
			return k;
		fmt_wm_dist d = { 0 };
		if (!bc->validity || bc->null_count == 0) {
			fmt_wm_embed(c->prm, copy, rows, col->width, &d);
		} else {
			for (size_t row = 0; row < rows; row++)
				if (!fmt_column_is_null(bc, row))
					fmt_wm_embed(c->prm, copy + row * width, 1, col->width, &d);
		}
		fmt_wm_dist_merge(&col->dist, &d);
		bc->values = copy;
		bc->values_len = rows * width;
	}
	return FMT_OK;
}

static fmt_kind table_hook(fmt_table *t, void *ctx, fmt_err *e)
{
	embed_ctx *c = ctx;
	c->tw.d = *t->driver;
	c->tw.inner = t->driver;
	c->tw.ctx = c;
	c->tw.d.next = marked_next;
	c->tw.col_of = malloc((t->schema.n_fields + 1) * sizeof *c->tw.col_of);
	if (!c->tw.col_of)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t f = 0; f < t->schema.n_fields; f++) {
		const fmt_field *fl = &t->schema.fields[f];
		int width = wm_ctype_width(fl->type);
		c->tw.col_of[f] = -1;
		if (!width || !wm_column_wanted(c->o, fl->name))
			continue;
		fmt_kind k = wm_add_column(c->r, fl->name, 0, fmt_ctype_name(fl->type), width, e);
		if (k != FMT_OK)
			return k;
		c->tw.col_of[f] = (long)c->r->n_cols - 1;
	}
	t->driver = &c->tw.d;
	return FMT_OK;
}

static int piece_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct wm_piece *)a)->off, y = ((const struct wm_piece *)b)->off;
	return x < y ? -1 : x > y;
}

fmt_kind wm_embed(const char *input, const char *output, const wm_opts *o, const fmt_wm_params *prm,
		  wm_result *r, fmt_err *e)
{
	embed_ctx c = { .o = o, .prm = prm, .r = r };
	fmt_convert_opts co = { .dtype = "keep", .force = o->force, .threads = o->threads,
			    .quiet = o->common.quiet, .no_progress = o->common.no_progress,
			    .dataset = { .compression = FMT_ALD_ZSTD },
			    .model_hook = model_hook, .table_hook = table_hook, .hook_ctx = &c,
			    .tool = TOOL, .out = stdout, .err = stderr };
	fmt_kind k = fmt_pool_create(&c.pool, o->threads, e);
	if (k != FMT_OK)
		return k;
	co.table_to = fmt_table_driver_by_extension(output);
	if (co.table_to && co.table_to->write) {
		r->is_table = 1;
		k = fmt_pipeline_dataset(input, output, &co, e);
	} else {
		co.to = fmt_driver_by_extension(output);
		if (!co.to || !co.to->write)
			return fmt_pool_destroy(c.pool), fmt_fail(e, FMT_USAGE, "cannot tell the output format from OUTPUT's name (.safetensors, "
					".gguf, .apsim, .apr, .ald, ...)");
		k = fmt_pipeline_run(input, output, &co, e);
	}
	free(c.tw.col_of);
	fmt_pool_destroy(c.pool);
	for (size_t i = 0; i < r->n_cols; i++) {
		wm_column *col = r->cols[i];
		if (col->n_pieces > 1) /* none for an empty column: qsort wants a pointer */
			qsort(col->pieces, col->n_pieces, sizeof *col->pieces, piece_cmp);
		for (size_t j = 0; j < col->n_pieces; j++)
			fmt_wm_dist_merge(&col->dist, &col->pieces[j].d);
	}
	return k;
}
