/* embed: fmt-convert's conversion of IN to OUT (libcommon/pipeline, fmt/pipeline.h) with a
 * hook that wraps every selected float tensor's reader (or the input table's batches) so the
 * values are marked as the writer pulls them. The output is what fmt-convert --dtype keep
 * writes, but for the marked values; the marks depend on each value alone, so any -T and any
 * chunking give the same bytes. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/cli_keys.h"
#include "fmt/format_options.h"
#include "fmt/minisign.h"
#include "fmt/pipeline.h"
#include "fmt/progress.h"
#include "fmt/prompt.h"
#include "fmt/report.h"
#include "fmt/strbuf.h"
#include "fmt/table.h"
#include "fmt/thread.h"
#include "wm.h"

#define PIECE_VALUES 65536   /* the unit of -T work inside one read: fixed, so sums do not depend on -T */
_Static_assert(PIECE_VALUES == FMT_SS_BLOCK, "a piece is a fmtkit-ss/1 block");

typedef struct embed_ctx {
	fmt_pool *pool;
	const wm_opts *o;
	const fmt_wm_params *prm;
	const uint8_t *hash;         /* the buyer's (embed's record) */
	const char *input, *output;
	wm_result *r;
	int to_stdout;               /* OUT is -: perhaps partly written before the marks are counted */
	/* tables: the wrapped driver (its first member is what t->driver points to) */
	struct table_wrap { fmt_table_driver d; const fmt_table_driver *inner; struct embed_ctx *ctx;
			    long *col_of; } tw;
} embed_ctx;

/* The reader that replaces a float tensor's: the original bytes, then the marks. */
typedef struct tensor_wrap {
	fmt_tensor orig;
	wm_column *col;
	const fmt_wm_params *prm;
	const fmt_ss_params *ss;     /* fmtkit-ss/2 or /1 (else fmtkit-wm/1 under prm) */
	uint64_t nelems;
	int width;
	fmt_pool *pool;
} tensor_wrap;

/* A read [first, first + n) values of a tensor touches pieces first / PIECE_VALUES ... ; piece
 * i of the read is the part of absolute piece (first / PIECE_VALUES + i) that the read holds. */
typedef struct piece_job {
	const tensor_wrap *w;
	uint8_t *dst;                /* the read's bytes */
	uint64_t first;              /* the read's first value */
	uint64_t n;                  /* values read */
	struct wm_piece *out;        /* one per piece touched */
} piece_job;

static void mark_piece(void *ctx, size_t i)
{
	piece_job *j = ctx;
	uint64_t lo = (j->first / PIECE_VALUES + i) * PIECE_VALUES, hi = lo + PIECE_VALUES, end = j->first + j->n;
	if (lo < j->first)
		lo = j->first;
	if (hi > end)
		hi = end;
	struct wm_piece *pc = &j->out[i];
	pc->first = lo;
	pc->n = hi - lo;
	memset(&pc->d, 0, sizeof pc->d);
	uint8_t *at = j->dst + (lo - j->first) * (uint64_t)j->w->width;
	if (j->w->ss && j->w->ss->version == 2)
		fmt_ss2_embed(j->w->ss, at, j->w->nelems, lo, (size_t)(hi - lo), j->w->width, &pc->d);
	else if (j->w->ss)
		fmt_ss_embed(j->w->ss, at, j->w->nelems, lo, (size_t)(hi - lo), j->w->width, &pc->d);
	else
		fmt_wm_embed(j->w->prm, at, (size_t)(hi - lo), j->w->width, &pc->d);
}

static fmt_kind pieces_add(wm_column *c, const struct wm_piece *p, size_t n, fmt_err *e)
{
	pthread_mutex_lock(&c->lock);
	if (fmt_grow_array(&c->pieces, &c->cap_pieces, c->n_pieces + n, sizeof *c->pieces, 16)) {
		pthread_mutex_unlock(&c->lock);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	memcpy(c->pieces + c->n_pieces, p, n * sizeof *p);
	c->n_pieces += n;
	pthread_mutex_unlock(&c->lock);
	return FMT_OK;
}

/* Mark values [first, first + values) of a tensor, on piece boundaries, at dst. */
static fmt_kind mark_range(const tensor_wrap *w, uint8_t *dst, uint64_t first, uint64_t values, fmt_err *e)
{
	size_t pieces = (size_t)((first + values - 1) / PIECE_VALUES - first / PIECE_VALUES + 1);
	struct wm_piece one, *out = pieces > 1 ? malloc(pieces * sizeof *out) : &one;
	if (!out)
		return fmt_fail(e, FMT_IO, "out of memory");
	piece_job job = { w, dst, first, values, out };
	/* The writer's threads already read tensors side by side: mark on this one then. */
	if (pieces > 1 && w->pool && !fmt_tensor_reads_in_parallel())
		fmt_pool_run(w->pool, pieces, mark_piece, &job);
	else
		for (size_t i = 0; i < pieces; i++)
			mark_piece(&job, i);
	fmt_kind k = pieces_add(w->col, out, pieces, e);
	if (out != &one)
		free(out);
	return k;
}

/* fmtkit-ss marks whole blocks (fmtkit-ss/1: their std sets the amplitude; fmtkit-ss/2: a block is
 * a group, whose marked run follows its own values): a read that cuts a block reads and marks the
 * blocks it touches and keeps its part. */
static fmt_kind ss_marked_read(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst, size_t n,
			       fmt_err *e)
{
	tensor_wrap *w = t->reader_ctx;
	uint64_t width = (uint64_t)w->width;
	if (n == 0)
		return fmt_tensor_read(m, &w->orig, off, dst, n, e);
	if (off % width || n % width)
		return fmt_fail(e, FMT_INTERNAL, "tensor '%s': a read not on value boundaries", t->name);
	uint64_t first = off / width, end = first + n / width;
	uint64_t lo = first / PIECE_VALUES * PIECE_VALUES, hi = (end + PIECE_VALUES - 1) / PIECE_VALUES * PIECE_VALUES;
	if (hi > w->nelems)
		hi = w->nelems;
	uint8_t *buf = lo == first && hi == end ? dst : malloc((size_t)((hi - lo) * width));
	if (!buf)
		return fmt_fail(e, FMT_IO, "out of memory for a block of tensor '%s'", t->name);
	fmt_kind k = fmt_tensor_read(m, &w->orig, lo * width, buf, (size_t)((hi - lo) * width), e);
	if (k == FMT_OK)
		k = mark_range(w, buf, lo, hi - lo, e);
	if (buf != dst) {
		if (k == FMT_OK)
			memcpy(dst, buf + (first - lo) * width, n);
		free(buf);
	}
	return k;
}

/* The statistics are kept per piece of PIECE_VALUES values at fixed places in the tensor and
 * added in tensor order at the end, so that they do not depend on how the writer cuts its
 * reads (every writer reads whole tensors or chunks of a multiple of 1 MiB, on piece
 * boundaries) nor on -T; --dry-run reads as the writers do and prints the same figures. */
static fmt_kind marked_read(const fmt_model *m, const fmt_tensor *t, uint64_t off, uint8_t *dst, size_t n,
			    fmt_err *e)
{
	tensor_wrap *w = t->reader_ctx;
	if (w->ss)
		return ss_marked_read(m, t, off, dst, n, e);
	fmt_kind k = fmt_tensor_read(m, &w->orig, off, dst, n, e);
	if (k != FMT_OK || n == 0)
		return k;
	if (off % (uint64_t)w->width || n % (size_t)w->width)
		return fmt_fail(e, FMT_INTERNAL, "tensor '%s': a read not on value boundaries", t->name);
	return mark_range(w, dst, off / (uint64_t)w->width, n / (size_t)w->width, e);
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

static fmt_kind discard(void *ctx, const uint8_t *bytes, size_t n, fmt_err *e)
{
	(void)ctx, (void)bytes, (void)n, (void)e;
	return FMT_OK;
}

/* --dry-run: read every marked tensor as a writer would (in the order a stream gives them, in
 * the writers' chunks), which marks the values and counts what changes, and drop the bytes. */
static fmt_kind read_marked(const fmt_model *out, fmt_err *e)
{
	size_t *order;
	int moved;
	fmt_kind k = fmt_model_read_order(out, &order, &moved, e);
	if (k != FMT_OK)
		return k;
	for (size_t i = 0; k == FMT_OK && i < out->n_tensors; i++) {
		const fmt_tensor *t = &out->tensors[order[i]];
		if (t->reader == marked_read)
			k = fmt_tensor_each_chunk(out, t, discard, NULL, e);
	}
	free(order);
	return k;
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
		if (c->o->ss && t->nelems > FMT_SS_MAX_ELEMS)
			return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': %llu elements, more than fmtkit-ss's 2^37",
					t->name, (unsigned long long)t->nelems);
		fmt_kind k = wm_add_column(c->r, t->name, 1, fmt_dtype_name(t->dtype), width, e);
		tensor_wrap *w = k == FMT_OK ? calloc(1, sizeof *w) : NULL;
		if (k != FMT_OK)
			return k;
		if (!w)
			return fmt_fail(e, FMT_IO, "out of memory");
		w->orig = *t;
		w->col = c->r->cols[c->r->n_cols - 1];
		w->prm = c->prm;
		w->ss = c->o->ss;
		w->nelems = t->nelems;
		w->width = width;
		w->pool = c->pool;
		uint64_t align = t->chunk_align ? t->chunk_align : 1;
		t->chunk_align = fmt_lcm_u64(align, (uint64_t)width);
		t->data = NULL;
		t->owned_data = 0;
		t->source = -1;
		t->reader = marked_read;
		t->reader_ctx = w;
		t->free_ctx = wrap_free;
	}
	/* an output that carries no mark must not pass for a marked copy (exit 0, a warning) */
	if (c->r->n_cols == 0)
		return fmt_fail(e, FMT_UNSUPPORTED, "nothing to mark: no float32 or float64 tensor selected%s; nothing written",
				c->r->n_left ? " (F16/BF16 tensors have no room for a mark: embed into the float32 model, "
					       "then convert)" : "");
	return c->o->dry_run ? read_marked(out, e) : FMT_OK;
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
	if (c->r->n_cols == 0)
		return fmt_fail(e, FMT_UNSUPPORTED, "nothing to mark: no float32 or float64 column selected; nothing written");
	t->driver = &c->tw.d;
	/* --dry-run: pull (and mark) every batch as a writer would, and drop it */
	for (int done = !c->o->dry_run; !done;) {
		fmt_batch b;
		fmt_kind k = fmt_table_next(t, &b, &done, e);
		if (k != FMT_OK)
			return k;
		fmt_batch_free(&b);
	}
	return FMT_OK;
}

static int any_marked(const wm_result *r)
{
	for (size_t i = 0; i < r->n_cols; i++) {
		const wm_column *col = r->cols[i];
		if (col->dist.marked)
			return 1;
		for (size_t j = 0; j < col->n_pieces; j++)
			if (col->pieces[j].d.marked)
				return 1;
	}
	return 0;
}

static int piece_cmp(const void *a, const void *b)
{
	const struct wm_piece *x = a, *y = b;
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->n < y->n ? -1 : x->n > y->n;
}

/* Each piece's statistics once (a range a writer reads twice counts once), in tensor order. */
static void sum_pieces(wm_column *col)
{
	if (col->n_pieces > 1) /* none for an empty column: qsort wants a pointer */
		qsort(col->pieces, col->n_pieces, sizeof *col->pieces, piece_cmp);
	for (size_t j = 0; j < col->n_pieces; j++)
		if (j == 0 || piece_cmp(&col->pieces[j - 1], &col->pieces[j]) != 0)
			fmt_wm_dist_merge(&col->dist, &col->pieces[j].d);
}

static void sum_all(wm_result *r)
{
	for (size_t i = 0; !r->summed && i < r->n_cols; i++)
		sum_pieces(r->cols[i]);
	r->summed = 1;
}

/* The gate, all marks made: with -j, the record made before OUT is put in place (written once it
 * is), so that out of memory making it leaves none. */
static fmt_kind embed_record(const embed_ctx *c, fmt_err *e)
{
	wm_result *r = c->r;
	if (!c->o->common.json || c->o->common.quiet || c->o->dry_run || r->embed_rec.text)
		return FMT_OK;
	sum_all(r);
	unsigned long since = fmt_json_memory_failures();
	json_t *j = wm_embed_json(c->input, c->output, c->o, c->prm, c->hash, r);
	return fmt_json_rec_make(&r->embed_rec, j, since, e);
}

/* Every value read and marked: an output in which none took a mark (the selected values zero,
 * subnormal or not finite, or too few for --density to choose one) must not pass for a buyer's
 * marked copy. */
static fmt_kind marks_made(void *ctx, fmt_err *e)
{
	const embed_ctx *c = ctx;
	if (any_marked(c->r))
		return embed_record(c, e);
	return fmt_fail(e, FMT_UNSUPPORTED, "nothing marked: no value of the selected %s took a mark (a mark needs "
			"normal float values: not zero, subnormal, infinite or NaN%s); %s",
			c->r->is_table ? "columns" : "tensors", c->o->ss ? "" : ", and enough of them for --density",
			c->to_stdout ? "what standard output received is no marked copy" : "nothing written");
}

fmt_kind wm_embed_target(wm_opts *o, const char *output, fmt_err *e)
{
	if (o->to_name) {
		o->table_to = fmt_table_driver_by_name(o->to_name);
		o->to = o->table_to ? NULL : fmt_driver_by_name(o->to_name);
	} else {
		o->table_to = fmt_table_driver_by_extension(output);
		o->to = o->table_to ? NULL : fmt_driver_by_extension(output);
	}
	if ((o->table_to && !o->table_to->write) || (o->to && !o->to->write))
		o->table_to = NULL, o->to = NULL;
	if (!o->table_to && !o->to) {
		char names[512];
		fmt_writer_names(names, sizeof names);
		char not_word[160];
		if (o->to_name)
			return fmt_fail(e, FMT_USAGE, "--to takes %s (%s)", names,
					fmt_not_word(not_word, sizeof not_word, o->to_name, fmt_writer_nearest(o->to_name)));
		fmt_err dir;
		fmt_err_clear(&dir);
		if (fmt_sink_may_create(output, FMT_SINK_FORCE, &dir) != FMT_OK)
			return fmt_fail(e, dir.kind, "%s: %s", output, dir.msg);
		return fmt_fail(e, FMT_USAGE, "cannot tell the output format from OUT's name%s; use --to (%s)",
				strcmp(output, "-") == 0 ? " (standard output)" : "", names);
	}
	if (o->schema && !o->table_to)
		return fmt_fail(e, FMT_USAGE, "--schema gives a dataset's column types: OUT must be a dataset too");
	if (o->card && !o->table_to)
		return fmt_fail(e, FMT_USAGE, "--card gives an .ald's dataset card: OUT must be a dataset too");
	if (o->n_tensors && o->table_to)
		return fmt_fail(e, FMT_USAGE, "--tensors selects a model's tensors, and OUT is a dataset "
				"(select its columns with --columns)");
	if (o->n_columns && !o->table_to)
		return fmt_fail(e, FMT_USAGE, "--columns selects a dataset's columns, and OUT is a model "
				"(select its tensors with --tensors)");
	if (o->sign_key && !(o->table_to ? (o->table_to->caps & FMT_CAP_ED25519_SIGN) != 0
					  : fmt_driver_can(o->to, FMT_CAP_ED25519_SIGN)))
		return fmt_fail(e, FMT_USAGE, "--sign-key needs an output format with embedded Ed25519 signatures "
				"(.apsim, .ald); sign other files with fmt-sign sign -s");
	if (o->table_to) { /* the table drivers that take them check their values */
		if (o->compression && fmt_format_option_parse(&o->drvopts, "compression", FMT_FOPT_TABLES, o->compression, e))
			return e->kind;
		if (o->schema && fmt_format_option_parse(&o->drvopts, "schema", FMT_FOPT_TABLES, o->schema, e))
			return e->kind;
		if (o->card && fmt_format_option_parse(&o->drvopts, "card", FMT_FOPT_TABLES, o->card, e))
			return e->kind;
		return FMT_OK;
	}
	return o->compression ? fmt_codec_parse(o->to, o->compression, &o->codec, &o->codec_level, e) : FMT_OK;
}

/* --dry-run: the pipeline's own plan is not this tool's report. */
static ssize_t write_nowhere(void *cookie, const char *buf, size_t n)
{
	(void)cookie, (void)buf;
	return (ssize_t)n;
}

fmt_kind wm_embed(const char *input, const char *output, const wm_opts *o, const fmt_wm_params *prm,
		  const uint8_t hash[32], wm_result *r, fmt_err *e)
{
	embed_ctx c = { .o = o, .prm = prm, .hash = hash, .input = input, .output = output, .r = r,
			.to_stdout = strcmp(output, "-") == 0 };
	fmt_convert_opts co = { .dtype = "keep", .force = o->force, .threads = o->threads, .dry_run = o->dry_run,
				.quiet = o->common.quiet, .no_progress = o->common.no_progress,
				.to = o->to, .table_to = o->table_to, .codec = o->codec, .codec_level = o->codec_level,
				.options = (fmt_drvopt_sets *)&o->drvopts,
				.model_hook = model_hook, .table_hook = table_hook, .commit_hook = marks_made,
				.hook_ctx = &c,
				.tool = TOOL, .out = stdout, .err = stderr, .allow_expired = o->allow_expired };
	fmt_cli_pipeline_reports(&co);
	co.decrypt = o->decrypt;
	fmt_cli_decrypt_prompts(&co.decrypt, &o->common); /* without a password file or variable: the terminal */
	FILE *nowhere = NULL;
	if (o->dry_run) {
		nowhere = fopencookie(NULL, "w", (cookie_io_functions_t){ .write = write_nowhere });
		if (!nowhere)
			return fmt_fail(e, FMT_IO, "out of memory");
		co.out = nowhere;
	}
	/* --sign-key: loaded (its passphrase asked) for a real run only */
	fmt_ms_secret sec;
	fmt_pass_opts pass = fmt_cli_pass_opts(o->passphrase_file, o->passphrase_env, &o->common);
	fmt_kind k = o->sign_key && !o->dry_run ? fmt_ms_secret_load(o->sign_key, &pass, &sec, e) : FMT_OK;
	if (k != FMT_OK) {
		if (nowhere)
			fclose(nowhere);
		return k;
	}
	co.sign_secret = o->sign_key && !o->dry_run ? &sec : NULL;
	k = fmt_pool_create(&c.pool, o->threads, e);
	r->is_table = o->table_to != NULL;
	r->out_format = o->table_to ? o->table_to->name : o->to->name;
	if (k == FMT_OK)
		k = r->is_table ? fmt_pipeline_dataset(input, output, &co, e) : fmt_pipeline_run(input, output, &co, e);
	if (k == FMT_OK && o->dry_run && (k = marks_made(&c, e)) != FMT_OK) /* what a real run refuses at its end */
		fmt_err_file(e, input);
	free(c.tw.col_of);
	fmt_pool_destroy(c.pool);
	if (co.sign_secret)
		fmt_ms_secret_free(&sec);
	if (nowhere)
		fclose(nowhere);
	sum_all(r);
	return k;
}
