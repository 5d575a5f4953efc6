/* Apache Parquet (.parquet) as a table driver: the footer read at open, the rows a row group at
 * a time through one cursor per column (pages decoded as the rows are asked for, so the first
 * batches touch only the first pages), fmt-inspect's facts from the footer, fmt-verify's check
 * of every page, and the writer (fmt_pq_write.c). On -T 2 and more, the batches after the first
 * are decoded a batch ahead on a thread of their own (their columns on a pool from -T 3), while
 * the caller uses the one before. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/cell.h"
#include "fmt/checked.h"
#include "fmt/dataset.h"
#include "fmt/half.h"
#include "fmt/out.h"
#include "fmt/registry.h"
#include "fmt/rowops.h"
#include "fmt/thread.h"
#include "pq_internal.h"

/* The first batch is small and each next one twice as big, up to BATCH_MAX: --head reads
 * the first pages only; a conversion gets full-sized batches at once. */
#define BATCH_FIRST 1024
#define BATCH_MAX 65536
/* Fewer rows a batch when a row is wider (lists): about this many bytes of columns a batch,
 * the chunk of the memory rule (32 MiB + threads x chunk): a row group of embeddings is read a
 * piece of this size at a time, each list column's levels one byte a value of its page. */
#define BATCH_BYTES (1u << 20)
/* And fewer rows a batch when the row is wide (many columns): about this many bytes of the
 * columns read together a batch (a string's offset and a bool's byte counted; a string's bytes
 * are not known before it is read). 1000 BIGINT columns held 512 MiB a batch of BATCH_MAX rows;
 * a file of up to 16 columns of 8 bytes keeps BATCH_MAX rows (and so the record batches that
 * fmt-convert writes of them to Arrow IPC or .ald). */
#define BATCH_ALL_BYTES (8u << 20)
/* The values a column's slice (pq_read.c) holds at most: a batch's rows, or fewer when many
 * columns are read, so that their slices together (a value's bytes, its dictionary index and
 * level: about SLICE_VALUE_BYTES) stay near SLICES_ALL_BYTES; SLICE_LEAST at least (each slice
 * costs its set-up). The slices of 4000 BIGINT columns of a batch of 262 rows held 28 MB; of 64
 * values, 2 MB, which put a Parquet -> Parquet conversion of 4000 distinct BIGINT columns 0.4 MiB
 * over the memory rule at -T 1 (32 values: 8% more CPU for a file this wide, no change below
 * 2048 columns). */
#define SLICES_ALL_BYTES (2u << 20)
#define SLICE_VALUE_BYTES 16u
#define SLICE_LEAST 32u

/* The batch after the one the caller has, decoded on a thread of its own (-T 2 and more). */
typedef struct pq_ahead {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int started, stop;
	int full;                /* batch, kind, done and err hold the next outcome */
	int over;                /* the thread gave its last outcome (the end, or an error) */
	fmt_batch batch;
	fmt_kind kind;
	int done;
	fmt_err err;
	fmt_pool *pool;          /* the columns of a batch (-T 3 and more), or NULL */
	struct pq_take *takes;   /* per field: a column's outcome on the pool */
} pq_ahead;

/* The memory behind a fmt_col_range made of a column chunk's statistics. */
typedef struct pq_range {
	uint8_t fixed[16];         /* two fixed-width values, */
	int32_t offsets[3];        /* or two byte strings' offsets */
	fmt_sb bytes;              /* and bytes */
} pq_range;

typedef struct pq_state {
	pq_meta m;
	pq_file f;
	pq_group grp;            /* the chunks of the row group being read (or looked at) */
	size_t group;            /* the row group being read */
	uint64_t group_left;     /* its rows not handed out yet */
	int group_open;
	pq_cursor **cursors;     /* per leaf, made when first opened (NULL before: the leaves of a
				  * wide file that nothing reads cost a pointer, not 900 bytes that
				  * every pass over them touched, 90 MB for 100,000 columns); open
				  * for the leaves of converted fields (their buffers kept from one
				  * row group to the next) */
	long *leaf_of;           /* per field: its leaf, -1 for nested or not used */
	pq_budget budget;        /* what the open row group's cursors hold decoded */
	pq_spill spill;          /* what a batch leaves of the cursors' pages (pq_read.c, put_aside) */
	uint64_t batch_rows, batch_max;
	uint64_t slice_max;      /* a flat column's slice: values at most (SLICES_ALL_BYTES) */
	fmt_range_test_fn skip_test; /* --where pushed down (skip_blocks), or NULL */
	void *skip_ctx;
	pq_range range;            /* a row group's statistics for skip_test */
	const fmt_field *fields;   /* the driver's schema (what next is called with: a view over the
				    * table may have put another in t->schema since) */
	size_t n_fields;
	uint8_t **block_mem;       /* per field: its memory in a block of the batch being read, or
				    * NULL: buffers of its own */
	int threads;
	uint64_t batches;          /* handed out */
	pq_ahead ahead;
} pq_state;

typedef struct pq_opts {
	uint64_t group_rows;
	uint64_t group_bytes;
	int group_bytes_given;
} pq_opts;

static int probe(const uint8_t *head, size_t n, uint64_t size)
{
	return n >= 4 && memcmp(head, "PAR1", 4) == 0 && size >= 12 ? 100 : 0;
}

static void close_group(pq_state *s)
{
	s->group_open = 0;
}

static void ahead_stop(pq_state *s);

static void pq_close(fmt_table *t)
{
	pq_state *s = t->format_state;
	if (!s)
		return;
	ahead_stop(s);
	for (size_t i = 0; s->cursors && i < s->m.n_leaves; i++)
		if (s->cursors[i]) {
			fmt_pq_cursor_free(s->cursors[i]);
			free(s->cursors[i]);
		}
	free(s->cursors);
	free(s->leaf_of);
	free(s->block_mem);
	fmt_pq_spill_free(&s->spill);
	fmt_pq_group_free(&s->grp);
	fmt_sb_free(&s->range.bytes);
	fmt_pq_meta_free(&s->m);
	free(s);
	t->format_state = NULL;
}

/* Leaf l's cursor, made (zeroed) if it was not: NULL when out of memory. */
static pq_cursor *cursor_made(pq_state *s, size_t l)
{
	if (!s->cursors[l])
		s->cursors[l] = calloc(1, sizeof *s->cursors[l]);
	return s->cursors[l];
}

/* The size of list field f (leaf l): the values of its first row that has some, from the
 * row groups in order; a field of null and empty rows only is one fmtkit does not convert. */
static fmt_kind find_list_size(pq_state *s, fmt_field *f, size_t l, fmt_err *e)
{
	pq_leaf *leaf = &s->m.leaves[l];
	pq_cursor *c = cursor_made(s, l);
	if (!c)
		return fmt_fail(e, FMT_IO, "out of memory");
	uint64_t size = 0;
	int found = 0;
	for (size_t g = 0; !found && g < s->m.n_groups; g++) {
		fmt_pq_budget_open(&s->budget, &s->m, g);
		fmt_kind k = fmt_pq_group_load(&s->grp, &s->f, &s->m, g, e);
		if (k == FMT_OK)
			k = fmt_pq_cursor_open(c, leaf, &s->grp.chunks[l], &s->f, &s->budget, 0, 0, e);
		if (k != FMT_OK)
			return k;
		fmt_pq_cursor_rows(c, s->m.groups[g].first_row, (uint64_t)s->m.groups[g].num_rows);
		if ((k = fmt_pq_list_size(c, &size, &leaf->size_row, &found, e)) != FMT_OK)
			return k;
	}
	fmt_pq_cursor_free(c);      /* a page held whole (SNAPPY) is not kept beside the readers' */
	if (found) {
		f->list_size = (uint32_t)size;
		return FMT_OK;
	}
	char name[80];
	snprintf(name, sizeof name, "list<%s> of null and empty rows", fmt_ctype_name(f->elem));
	f->type = FMT_C_OTHER;
	return (f->type_name = strdup(name)) ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
}

/* The list sizes ARROW:schema did not give (those it gave: told as the type's). */
static fmt_kind list_sizes(fmt_table *t, pq_state *s, fmt_err *e)
{
	for (size_t i = 0; i < t->schema.n_fields; i++) {
		fmt_field *f = &t->schema.fields[i];
		long l = s->leaf_of[i];
		if (f->type != FMT_C_FIXED_SIZE_LIST || l < 0)
			continue;
		s->m.leaves[l].size_row = UINT64_MAX;
		fmt_kind k = f->list_size ? FMT_OK : find_list_size(s, f, (size_t)l, e);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

/* want rows, or fewer so that rows of width bytes stay near bytes (at least 1). */
static uint64_t rows_within(uint64_t width, uint64_t bytes, uint64_t want)
{
	uint64_t most = width ? bytes / width : want;
	most = most ? most : 1;
	return want < most ? want : most;
}

/* The bytes a row of list field f takes (0: f is not a list). */
static uint64_t list_width(const fmt_field *f)
{
	uint64_t width;
	fmt_err ignored;
	if (f->type != FMT_C_FIXED_SIZE_LIST || fmt_field_row_width(f, &width, &ignored) != FMT_OK)
		return 0;
	return width;
}

/* The bytes a row of field f takes in a batch: its values (a list's too), a string's offset, a
 * bool's byte (0: f is not converted). */
static uint64_t value_width(const fmt_field *f)
{
	switch (f->type) {
	case FMT_C_OTHER: return 0;
	case FMT_C_BOOL: return 1;
	case FMT_C_UTF8: case FMT_C_BINARY: return 4;
	case FMT_C_LARGE_UTF8: return 8;
	case FMT_C_FIXED_SIZE_LIST: return list_width(f);
	default: return fmt_ctype_width(f->type);
	}
}

static uint64_t rows_for(const fmt_field *f, uint64_t want)
{
	return rows_within(list_width(f), BATCH_BYTES, want);
}

/* The rows of s's batches: what t's options ask (BATCH_MAX), or fewer so that the list columns of
 * a batch together stay near BATCH_BYTES and the columns read (leaf_of) near BATCH_ALL_BYTES; the
 * first batch BATCH_FIRST rows at most. */
static void batch_sizes(pq_state *s, const fmt_table *t)
{
	const fmt_schema *sc = &t->schema;
	uint64_t lists = 0, all = 0, read = 0;
	for (size_t i = 0; i < sc->n_fields; i++) {
		uint64_t w = list_width(&sc->fields[i]), v = s->leaf_of[i] >= 0 ? value_width(&sc->fields[i]) : 0;
		lists = fmt_sat_add_u64(lists, w);
		all = fmt_sat_add_u64(all, v);
		read += v != 0;
	}
	uint64_t want = t->opts && t->opts->batch_rows ? t->opts->batch_rows : BATCH_MAX;
	s->batch_max = rows_within(all, BATCH_ALL_BYTES, rows_within(lists, BATCH_BYTES, want));
	s->batch_rows = BATCH_FIRST < s->batch_max ? BATCH_FIRST : s->batch_max;
	s->slice_max = rows_within(fmt_sat_mul_u64(read, SLICE_VALUE_BYTES), SLICES_ALL_BYTES, s->batch_max);
	if (s->slice_max < SLICE_LEAST && s->batch_max > SLICE_LEAST)
		s->slice_max = SLICE_LEAST;
}

/* The values a slice of leaf l's cursor holds at most (a list leaf's: a batch's rows). */
static uint64_t slice_max_of(const pq_state *s, size_t l)
{
	return s->m.leaves[l].list ? s->batch_max : s->slice_max;
}

static fmt_kind pq_open(fmt_table *t, fmt_err *e)
{
	pq_state *s = calloc(1, sizeof *s);
	if (!s)
		return fmt_fail(e, FMT_IO, "out of memory");
	t->format_state = s;
	fmt_pq_spill_init(&s->spill);
	fmt_pq_group_init(&s->grp);
	fmt_kind k = FMT_OK;
	s->f.src = &t->source;
	s->f.size = t->source.size;
	if (t->source.buf || t->source.sequential) /* in memory (a stream: its head, if it is all) */
		k = fmt_source_view(&t->source, 0, t->source.size, &s->f.data, e);
	if (k == FMT_OK && t->source.size > SIZE_MAX)
		k = fmt_fail(e, FMT_IO, "file too large to map");
	if (k == FMT_OK)
		k = fmt_pq_meta_read(&s->f, &s->m, &t->schema, e);
	if (k == FMT_OK)
		k = fmt_pq_arrow_schema_apply(&t->schema, e);
	if (k == FMT_OK && (!(s->cursors = calloc(s->m.n_leaves ? s->m.n_leaves : 1, sizeof *s->cursors)) ||
			    !(s->leaf_of = malloc((t->schema.n_fields ? t->schema.n_fields : 1) * sizeof *s->leaf_of))))
		k = fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; k == FMT_OK && i < t->schema.n_fields; i++)
		s->leaf_of[i] = -1;
	for (size_t i = 0; k == FMT_OK && i < s->m.n_leaves; i++)
		if (s->m.leaves[i].field >= 0)
			s->leaf_of[s->m.leaves[i].field] = (long)i;
	if (k == FMT_OK)
		k = list_sizes(t, s, e);
	if (k == FMT_OK)
		k = fmt_schema_check(&t->schema, e);
	if (k != FMT_OK) {
		pq_close(t);
		return k;
	}
	t->n_rows = (uint64_t)s->m.num_rows;
	batch_sizes(s, t);
	s->threads = t->opts && t->opts->threads > 1 ? t->opts->threads : 1;
	return FMT_OK;
}

/* A leaf of a field (not nested) has one value per row; a list's, a row is its values (its
 * cursor, open on the leaf's chunk of group g, counts them). */
static fmt_kind chunk_holds_the_rows(const pq_state *s, size_t g, size_t l, pq_cursor *c, fmt_err *e)
{
	const pq_rowgroup *rg = &s->m.groups[g];
	fmt_pq_cursor_rows(c, rg->first_row, (uint64_t)rg->num_rows);
	if (c->chunk->num_values == rg->num_rows || s->m.leaves[l].list)
		return FMT_OK;
	return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s' holds %lld values in a row group of %lld rows",
			s->m.leaves[l].path, (long long)c->chunk->num_values, (long long)rg->num_rows);
}

/* Buffers kept from the row groups before, when they hold more than half of what budget b allows:
 * freed (each group's columns are charged for what they need; what earlier groups' needed is
 * not kept beyond that). */
static void keep_within(pq_cursor **cursors, size_t n, const pq_budget *b)
{
	uint64_t kept = 0;
	for (size_t i = 0; i < n; i++)
		kept += cursors[i] ? fmt_pq_cursor_kept(cursors[i]) : 0;
	for (size_t i = 0; kept > b->limit / 2 && i < n; i++)
		if (cursors[i])
			fmt_pq_cursor_free(cursors[i]);
}

/* The cursors of row group g (its chunks in s->grp) for the fields this build converts. */
static fmt_kind open_group(pq_state *s, size_t g, fmt_err *e)
{
	fmt_pq_budget_open(&s->budget, &s->m, g);
	keep_within(s->cursors, s->m.n_leaves, &s->budget);
	fmt_pq_spill_rewind(&s->spill); /* what the group before put there is read */
	for (size_t i = 0; i < s->n_fields; i++) {
		long l = s->leaf_of[i];
		if (l < 0 || s->fields[i].type == FMT_C_OTHER)
			continue;
		pq_cursor *c = cursor_made(s, (size_t)l);
		if (!c)
			return fmt_fail(e, FMT_IO, "out of memory");
		fmt_kind k = fmt_pq_cursor_open(c, &s->m.leaves[l], &s->grp.chunks[l], &s->f, &s->budget, 0, 0, e);
		c->slice_max = slice_max_of(s, (size_t)l);
		c->shared = &s->spill;
		if (k == FMT_OK)
			k = chunk_holds_the_rows(s, g, (size_t)l, c, e);
		if (k != FMT_OK)
			return k;
	}
	s->group_open = 1;
	s->group_left = (uint64_t)s->m.groups[g].num_rows;
	return FMT_OK;
}

/* Column selection: the fields not kept are not read (their chunks are never touched). */
static void columns_used(fmt_table *t, const size_t *keep, size_t n)
{
	pq_state *s = t->format_state;
	for (size_t i = 0, k = 0; i < t->schema.n_fields; i++) {
		if (k < n && keep[k] == i)
			k++;
		else
			s->leaf_of[i] = -1;
	}
	batch_sizes(s, t);
}

/* ---- skipping row groups by their statistics ---- */

/* An integer statistic of a leaf (INT32 or INT64, by the field's signedness) into the field's
 * width at out; 0 when it has another size or does not fit. */
static int stat_integer(const pq_leaf *l, const fmt_field *f, const uint8_t *p, uint32_t n, uint8_t *out)
{
	int is_unsigned = f->type >= FMT_C_U8 && f->type <= FMT_C_U64;
	size_t width = fmt_ctype_width(f->type);
	uint64_t u;
	if (l->ptype == PT_INT32 && n == 4)
		u = is_unsigned ? fmt_rd_u32(p) : (uint64_t)(int64_t)(int32_t)fmt_rd_u32(p);
	else if (l->ptype == PT_INT64 && n == 8)
		u = fmt_rd_u64(p);
	else
		return 0;
	if (width < 8) {
		unsigned bits = (unsigned)width * 8;
		int64_t v = (int64_t)u;
		if (is_unsigned ? u >> bits != 0 : (v < -((int64_t)1 << (bits - 1)) || v >= ((int64_t)1 << (bits - 1))))
			return 0;
	}
	for (size_t i = 0; i < width; i++)
		out[i] = (uint8_t)(u >> (8 * i));
	return 1;
}

static int stat_is_nan(fmt_ctype t, const uint8_t *p)
{
	if (t == FMT_C_F16)
		return (fmt_rd_u16(p) & 0x7fff) > 0x7c00;
	if (t == FMT_C_F32)
		return (fmt_rd_u32(p) & 0x7fffffffu) > 0x7f800000u;
	return (fmt_rd_u64(p) & 0x7fffffffffffffffu) > 0x7ff0000000000000u;
}

/* Two fixed-width statistics (least, greatest) of field f as rows 0 and 1 in m->fixed. */
static int stat_fixed(pq_range *m, const pq_leaf *l, const fmt_field *f, const pq_stats *st)
{
	size_t width = fmt_ctype_width(f->type);
	if (f->type >= FMT_C_F16 && f->type <= FMT_C_F64) {
		if (st->min_len != width || st->max_len != width)
			return 0;
		memcpy(m->fixed, st->min, width);
		memcpy(m->fixed + width, st->max, width);
		return !stat_is_nan(f->type, st->min) && !stat_is_nan(f->type, st->max);
	}
	return stat_integer(l, f, st->min, st->min_len, m->fixed) &&
	       stat_integer(l, f, st->max, st->max_len, m->fixed + width);
}

/* A chunk's statistics of field f (leaf l) into r, its values in m: has_range when they are
 * there, new style, and values of f's type. */
static void stat_range(pq_range *m, const pq_leaf *l, const fmt_field *f, const pq_chunk *c, uint64_t rows,
		       fmt_col_range *r)
{
	const pq_stats *st = &c->stats;
	memset(r, 0, sizeof *r);
	r->field = f;
	r->nulls = l->list ? -1 : st->null_count; /* a list leaf's counts null elements and empty lists too */
	r->rows = rows;
	if (!st->min || !st->max || st->legacy || l->conv == CONV_INT96_NS || fmt_pq_is_text(l))
		return;             /* text: its order is not the values' */
	switch (f->type) {
	case FMT_C_BOOL:
		if (st->min_len != 1 || st->max_len != 1)
			return;
		m->fixed[0] = (uint8_t)((st->min[0] & 1) | (st->max[0] & 1) << 1);
		r->minmax.values = m->fixed;
		r->minmax.values_len = 1;
		break;
	case FMT_C_UTF8: case FMT_C_BINARY:
		m->bytes.len = 0;
		fmt_sb_put(&m->bytes, (const char *)st->min, st->min_len);
		fmt_sb_put(&m->bytes, (const char *)st->max, st->max_len);
		if (m->bytes.oom || (uint64_t)st->min_len + st->max_len > INT32_MAX)
			return;
		m->offsets[0] = 0;
		m->offsets[1] = (int32_t)st->min_len;
		m->offsets[2] = (int32_t)(st->min_len + st->max_len);
		r->minmax.offsets = m->offsets;
		r->minmax.values = m->bytes.p ? (const uint8_t *)m->bytes.p : m->fixed;
		r->minmax.values_len = m->bytes.len;
		break;
	default:
		if (f->type == FMT_C_LARGE_UTF8 || f->type >= FMT_C_FIXED_SIZE_LIST || !stat_fixed(m, l, f, st))
			return;
		r->minmax.values = m->fixed;
		r->minmax.values_len = 2 * fmt_ctype_width(f->type);
	}
	r->has_range = 1;
}

/* Whether the --where tests let a row of group g (its chunks in s->grp) through, as its
 * statistics show. */
static int group_may_pass(pq_state *s, size_t g)
{
	const pq_rowgroup *rg = &s->m.groups[g];
	for (size_t i = 0; i < s->n_fields; i++) {
		long l = s->leaf_of[i];
		fmt_col_range r;
		if (l < 0 || s->fields[i].type == FMT_C_OTHER)
			continue;
		stat_range(&s->range, &s->m.leaves[l], &s->fields[i], &s->grp.chunks[l], (uint64_t)rg->num_rows, &r);
		if (!s->skip_test(s->skip_ctx, i, &r))
			return 0;
	}
	return 1;
}

static void skip_blocks(fmt_table *t, fmt_range_test_fn test, void *ctx)
{
	pq_state *s = t->format_state;
	s->skip_test = test;
	s->skip_ctx = ctx;
}

/* A column's outcome, taken on the pool: its buffers in own until they join the batch. */
typedef struct pq_take {
	fmt_batch own;
	fmt_kind kind;
	fmt_err err;
} pq_take;

typedef struct take_job {
	pq_state *s;
	fmt_batch *b;
	uint64_t n;
} take_job;

static void take_task(void *ctx, size_t i)
{
	take_job *j = ctx;
	pq_take *t = &j->s->ahead.takes[i];
	long l = j->s->leaf_of[i];
	memset(&t->own, 0, sizeof t->own);
	fmt_err_clear(&t->err);
	t->kind = FMT_OK;
	if (l >= 0 && j->s->fields[i].type != FMT_C_OTHER)
		t->kind = fmt_pq_cursor_take_into(j->s->cursors[l], &j->s->fields[i], j->n, j->s->block_mem[i],
						  &j->b->columns[i], &t->own, &t->err);
}

/* n rows of every field on the pool; the first failing field's error, as one after another. */
static fmt_kind take_on_pool(pq_state *s, fmt_batch *b, uint64_t n, fmt_err *e)
{
	take_job j = { s, b, n };
	fmt_kind k = FMT_OK;
	fmt_pool_run(s->ahead.pool, s->n_fields, take_task, &j);
	for (size_t i = 0; i < s->n_fields; i++) {
		pq_take *t = &s->ahead.takes[i];
		if (k == FMT_OK && t->kind != FMT_OK) {
			k = t->kind;
			*e = t->err;
		}
		for (size_t o = 0; o < t->own.n_owned; o++) {
			fmt_kind r = fmt_batch_own(b, t->own.owned[o], k == FMT_OK ? e : &t->err);
			k = k == FMT_OK ? r : k;
		}
		free(t->own.owned);
	}
	return k;
}

/* A batch's fixed-width columns of fewer bytes than BLOCK_COLUMN_MAX (bitmap and values) share
 * blocks of about BLOCK_BYTES that the batch owns (batch buffers of that size are kept for the
 * next batches, not given back to the system): a table of 4000 columns took 4000 buffers of
 * 2 KiB a batch, scattered over the malloc arenas of the threads that made them (10 MB more
 * peak RSS at -T 2). A column of more has its buffers, as a narrow table's always did. */
#define BLOCK_COLUMN_MAX (64u << 10)
#define BLOCK_BYTES (1u << 20)

/* The bytes field i of a batch of n rows takes in a block (0: none). */
static uint64_t block_bytes(const pq_state *s, size_t i, uint64_t n)
{
	long l = s->leaf_of[i];
	uint64_t need = l < 0 || s->fields[i].type == FMT_C_OTHER ? 0 : fmt_pq_take_bytes(s->cursors[l], &s->fields[i], n);
	return need < BLOCK_COLUMN_MAX ? need : 0;
}

/* A block of total bytes for the fields [from, to) of a batch of n rows, owned by b. */
static fmt_kind give_block(pq_state *s, fmt_batch *b, uint64_t n, size_t from, size_t to, uint64_t total, fmt_err *e)
{
	if (total == 0)
		return FMT_OK;
	uint8_t *block = fmt_batch_buffer((size_t)total);
	if (!block)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = fmt_batch_own_buffer(b, block, e);
	for (size_t i = from; k == FMT_OK && i < to; i++) {
		uint64_t need = block_bytes(s, i, n);
		s->block_mem[i] = need ? block : NULL;
		block += need;
	}
	return k;
}

/* s->block_mem for a batch of n rows into b. */
static fmt_kind batch_blocks(pq_state *s, fmt_batch *b, uint64_t n, fmt_err *e)
{
	size_t from = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < s->n_fields; i++) {
		uint64_t need = block_bytes(s, i, n);
		s->block_mem[i] = NULL;
		if (need && total + need > BLOCK_BYTES) {
			fmt_kind k = give_block(s, b, n, from, i, total, e);
			if (k != FMT_OK)
				return k;
			from = i;
			total = 0;
		}
		total += need;      /* below BLOCK_BYTES + BLOCK_COLUMN_MAX */
	}
	return give_block(s, b, n, from, s->n_fields, total, e);
}

/* The next batch into b (whose columns are the driver's fields). */
static fmt_kind next_batch(pq_state *s, fmt_batch *b, int *done, fmt_err *e)
{
	*done = 0;
	while (!s->group_open || s->group_left == 0) {
		if (s->group_open) {
			close_group(s);
			s->group++;
		}
		if (s->group >= s->m.n_groups) {
			*done = 1;
			return FMT_OK;
		}
		fmt_kind k = fmt_pq_group_load(&s->grp, &s->f, &s->m, s->group, e);
		if (k != FMT_OK)
			return k;
		if (s->skip_test && !group_may_pass(s, s->group)) {
			s->group++;
			continue;
		}
		k = open_group(s, s->group, e);
		if (k != FMT_OK)
			return k;
	}
	uint64_t n = s->group_left < s->batch_rows ? s->group_left : s->batch_rows;
	if (s->batch_rows < s->batch_max)
		s->batch_rows = s->batch_rows * 2 < s->batch_max ? s->batch_rows * 2 : s->batch_max;
	b->n_rows = n;
	b->first_row = s->m.groups[s->group].first_row + ((uint64_t)s->m.groups[s->group].num_rows - s->group_left);
	fmt_kind bk = batch_blocks(s, b, n, e);
	if (bk != FMT_OK)
		return bk;
	if (s->ahead.pool) {
		fmt_kind k = take_on_pool(s, b, n, e);
		if (k != FMT_OK)
			return k;
	}
	for (size_t i = 0; !s->ahead.pool && i < s->n_fields; i++) {
		long l = s->leaf_of[i];
		if (l < 0 || s->fields[i].type == FMT_C_OTHER)
			continue; /* not converted: refused by the batch check unless deselected */
		fmt_kind k = fmt_pq_cursor_take_into(s->cursors[l], &s->fields[i], n, s->block_mem[i],
						     &b->columns[i], b, e);
		if (k != FMT_OK)
			return k;
	}
	s->group_left -= n;
	return FMT_OK;
}

static void *ahead_main(void *arg)
{
	pq_state *s = arg;
	pq_ahead *a = &s->ahead;
	pthread_mutex_lock(&a->lock);
	while (!a->stop) {
		if (a->full) {
			pthread_cond_wait(&a->cond, &a->lock);
			continue;
		}
		pthread_mutex_unlock(&a->lock);
		fmt_batch b;
		fmt_err err;
		int done = 0;
		fmt_err_clear(&err);
		fmt_kind k = fmt_batch_init(&b, s->n_fields, &err);
		if (k == FMT_OK)
			k = next_batch(s, &b, &done, &err);
		pthread_mutex_lock(&a->lock);
		a->batch = b;
		a->kind = k;
		a->done = done;
		a->err = err;
		a->full = 1;
		pthread_cond_broadcast(&a->cond);
		if (k != FMT_OK || done)
			break;
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* What ahead_start set up, the thread joined or never started. */
static void ahead_release(pq_ahead *a)
{
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->cond);
	if (a->pool)
		fmt_pool_destroy(a->pool);
	free(a->takes);
	memset(a, 0, sizeof *a);
}

/* The thread that decodes ahead (and its pool from -T 3); 0 when it cannot start (the caller
 * then decodes, as on one thread). */
static int ahead_start(pq_state *s)
{
	pq_ahead *a = &s->ahead;
	fmt_err ignored;
	if (s->threads > 2 && s->n_fields > 1) {
		a->takes = calloc(s->n_fields, sizeof *a->takes);
		if (!a->takes || fmt_pool_create(&a->pool, s->threads - 1, &ignored) != FMT_OK) {
			free(a->takes);
			a->takes = NULL;
			a->pool = NULL;
		}
	}
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->cond, NULL);
	a->started = fmt_thread_start(&a->thread, 0, ahead_main, s) == 0;
	if (!a->started)
		ahead_release(a);
	return a->started;
}

static void ahead_stop(pq_state *s)
{
	pq_ahead *a = &s->ahead;
	if (!a->started)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = 1;
	pthread_cond_broadcast(&a->cond);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->thread, NULL);
	if (a->full)
		fmt_batch_free(&a->batch);
	ahead_release(a);
}

/* The batch the thread decoded into b; the thread goes on to the next. After the last outcome
 * (the end or an error), the same again. */
static fmt_kind ahead_take(pq_state *s, fmt_batch *b, int *done, fmt_err *e)
{
	pq_ahead *a = &s->ahead;
	pthread_mutex_lock(&a->lock);
	while (!a->full && !a->over)
		pthread_cond_wait(&a->cond, &a->lock);
	fmt_kind k = a->kind;
	*done = a->done;
	if (k != FMT_OK)
		*e = a->err;
	if (a->full) {
		fmt_batch next = a->batch;
		a->full = 0;
		a->over = k != FMT_OK || *done;
		pthread_cond_broadcast(&a->cond);
		pthread_mutex_unlock(&a->lock);
		if (k == FMT_OK && !*done) {
			fmt_batch_free(b);
			*b = next;
		} else {
			fmt_batch_free(&next);
		}
		return k;
	}
	pthread_mutex_unlock(&a->lock);
	return k;
}

static fmt_kind pq_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e)
{
	pq_state *s = t->format_state;
	if (s->ahead.started)
		return ahead_take(s, b, done, e);
	s->fields = t->schema.fields;
	s->n_fields = t->schema.n_fields;
	if (!s->block_mem && !(s->block_mem = calloc(s->n_fields ? s->n_fields : 1, sizeof *s->block_mem)))
		return fmt_fail(e, FMT_IO, "out of memory");
	/* the first batch on the caller's thread: --head reads it and stops */
	if (s->threads > 1 && s->batches > 0 && ahead_start(s))
		return ahead_take(s, b, done, e);
	fmt_kind k = next_batch(s, b, done, e);
	s->batches++;
	return k;
}

/* ---- fmt-verify: every page of every column chunk ---- */

/* With o (fmt-verify): every page header, CRC, decompression and decoding, and the values of
 * each field against its statistics. Without (a tool about to read the rows, or fmt-inspect's
 * summary): the page headers, their CRCs and value counts, which reading then decodes once. */

/* Rows taken at a time to be checked against their chunk's statistics. */
#define CHECK_ROWS 65536

static const char *sb_text(const fmt_sb *b)
{
	return b->oom ? "?" : b->p ? b->p : "";
}

/* Row at of column c, the file's row file_row, lies outside the statistics r. */
static fmt_kind value_outside(const fmt_col_range *r, const fmt_column *c, uint64_t at, uint64_t file_row,
			      fmt_err *e)
{
	fmt_sb v = { 0 }, lo = { 0 }, hi = { 0 };
	fmt_cell_text(r->field, c, at, &v);
	fmt_cell_text(r->field, &r->minmax, 0, &lo);
	fmt_cell_text(r->field, &r->minmax, 1, &hi);
	fmt_kind k = fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': row %llu holds %s, outside the statistics "
			      "(min %s, max %s)", r->field->name, (unsigned long long)file_row, sb_text(&v),
			      sb_text(&lo), sb_text(&hi));
	fmt_sb_free(&v);
	fmt_sb_free(&lo);
	fmt_sb_free(&hi);
	return k;
}

/* The values of field f (leaf l) in row group g, read through c (open on its chunk), against the chunk's statistics,
 * which --where skips row groups by: every value within its min and max, as many nulls as its
 * null count, and each piece of rows as a reader checks it. The pages after the rows are left to
 * fmt_pq_cursor_check_all. */
static fmt_kind check_chunk_values(const pq_state *s, const fmt_field *f, size_t g, size_t l, pq_cursor *c,
				   fmt_err *e)
{
	const pq_rowgroup *rg = &s->m.groups[g];
	fmt_schema one = { .fields = (fmt_field *)f, .n_fields = 1 };
	pq_range m = { 0 };
	fmt_col_range r;
	uint64_t rows = (uint64_t)rg->num_rows, nulls = 0;
	stat_range(&m, &s->m.leaves[l], f, c->chunk, rows, &r);
	fmt_kind k = chunk_holds_the_rows(s, g, l, c, e);
	for (uint64_t first = 0; k == FMT_OK && first < rows;) {
		fmt_batch b;
		uint64_t n = rows_for(f, rows - first < CHECK_ROWS ? rows - first : CHECK_ROWS);
		if ((k = fmt_batch_init(&b, 1, e)) != FMT_OK)
			break;
		b.n_rows = n;
		k = fmt_pq_cursor_take(c, f, n, &b.columns[0], &b, e);
		if (k == FMT_OK)
			k = fmt_batch_check_from(&one, &b, rg->first_row + first, e);
		uint64_t at = k == FMT_OK ? fmt_range_first_outside(&r, &b.columns[0], n) : n;
		if (at < n)
			k = value_outside(&r, &b.columns[0], at, rg->first_row + first + at, e);
		nulls += b.columns[0].null_count;
		fmt_batch_free(&b);
		first += n;
	}
	if (k == FMT_OK && r.nulls >= 0 && (uint64_t)r.nulls != nulls)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': the pages hold %llu nulls, the statistics say "
			     "%lld", f->name, (unsigned long long)nulls, (long long)r.nulls);
	fmt_sb_free(&m.bytes);
	return k;
}

/* Row group g's chunks (loaded into v), in order, through cursor c; fields: the driver's schema
 * (with o). */
static fmt_kind verify_group(pq_state *s, const fmt_field *fields, size_t g, pq_cursor *c, pq_group *v,
			     int walk_only, fmt_err *e)
{
	pq_budget budget;           /* its columns' charges add up as a reader's would */
	fmt_pq_budget_open(&budget, &s->m, g);
	keep_within(&c, 1, &budget);
	fmt_kind lk = fmt_pq_group_load(v, &s->f, &s->m, g, e);
	if (lk != FMT_OK)
		return lk;
	for (size_t l = 0; l < s->m.n_leaves; l++) {
		uint64_t pages = 0;
		const pq_leaf *leaf = &s->m.leaves[l];
		fmt_kind k = fmt_pq_cursor_open(c, leaf, &v->chunks[l], &s->f, &budget, 1,
					       leaf->max_rep > 0 && !leaf->list, e);
		c->walk_only = walk_only;
		c->slice_max = slice_max_of(s, l);   /* as the reader's cursors */
		if (k == FMT_OK && !walk_only && leaf->field >= 0 && fields[leaf->field].type != FMT_C_OTHER)
			k = check_chunk_values(s, &fields[leaf->field], g, l, c, e);
		if (k == FMT_OK)
			k = fmt_pq_cursor_check_all(c, &pages, e);
		if (k != FMT_OK) {
			if (!budget.over)   /* its message names the group */
				fmt_err_prefix(e, "row group %zu", g);
			return k;
		}
	}
	return FMT_OK;
}

/* The row groups checked on a pool: each with a cursor no other task uses meanwhile; the
 * first failing group's error, as one after another would find it. */
typedef struct verify_job {
	pq_state *s;
	const fmt_field *fields;
	int walk_only;
	pthread_mutex_t lock;
	pq_cursor *cursors;
	pq_group *groups;        /* beside each cursor, the chunks it reads */
	int *busy;
	size_t n_cursors;
	size_t failed;           /* the first failing group so far (n_groups: none) */
	fmt_kind kind;
	fmt_err err;
} verify_job;

static void verify_task(void *ctx, size_t g)
{
	verify_job *j = ctx;
	size_t at = 0;
	pthread_mutex_lock(&j->lock);
	if (g > j->failed) {       /* an earlier group failed: its error is the one told */
		pthread_mutex_unlock(&j->lock);
		return;
	}
	while (j->busy[at])
		at++;
	j->busy[at] = 1;
	pthread_mutex_unlock(&j->lock);
	fmt_err e;
	fmt_err_clear(&e);
	fmt_kind k = verify_group(j->s, j->fields, g, &j->cursors[at], &j->groups[at], j->walk_only, &e);
	pthread_mutex_lock(&j->lock);
	j->busy[at] = 0;
	if (k != FMT_OK && g < j->failed) {
		j->failed = g;
		j->kind = k;
		j->err = e;
	}
	pthread_mutex_unlock(&j->lock);
}

static fmt_kind verify_on_pool(pq_state *s, const fmt_field *fields, int threads, int walk_only, fmt_err *e)
{
	verify_job j = { .s = s, .fields = fields, .walk_only = walk_only, .failed = s->m.n_groups, .kind = FMT_OK };
	fmt_pool *pool;
	fmt_err ignored;
	fmt_kind k = fmt_pool_create(&pool, threads, &ignored);
	if (k != FMT_OK && (k = fmt_pool_create(&pool, 1, e)) != FMT_OK) /* then on this thread */
		return k;
	j.n_cursors = (size_t)fmt_pool_threads(pool);
	j.cursors = calloc(j.n_cursors, sizeof *j.cursors);
	j.groups = malloc(j.n_cursors * sizeof *j.groups);
	j.busy = calloc(j.n_cursors, sizeof *j.busy);
	for (size_t i = 0; j.groups && i < j.n_cursors; i++)
		fmt_pq_group_init(&j.groups[i]);
	if (!j.cursors || !j.groups || !j.busy) {
		k = fmt_fail(e, FMT_IO, "out of memory");
	} else {
		pthread_mutex_init(&j.lock, NULL);
		fmt_pool_run(pool, s->m.n_groups, verify_task, &j);
		pthread_mutex_destroy(&j.lock);
		if ((k = j.kind) != FMT_OK)
			*e = j.err;
	}
	fmt_pool_destroy(pool);
	for (size_t i = 0; j.cursors && i < j.n_cursors; i++)
		fmt_pq_cursor_free(&j.cursors[i]);
	for (size_t i = 0; j.groups && i < j.n_cursors; i++)
		fmt_pq_group_free(&j.groups[i]);
	free(j.cursors);
	free(j.groups);
	free(j.busy);
	return k;
}

static fmt_kind pq_verify(fmt_table *t, const fmt_verify_opts *o, fmt_err *e)
{
	pq_state *s = t->format_state;
	int threads = o ? o->threads : s->threads;
	const fmt_field *fields = t->schema.fields;
	if (threads > 1 && s->m.n_groups > 1)
		return verify_on_pool(s, fields, threads < (int)s->m.n_groups ? threads : (int)s->m.n_groups, o == NULL,
				      e);
	pq_cursor c = { 0 };        /* its buffers serve every chunk */
	pq_group v;
	fmt_kind k = FMT_OK;
	fmt_pq_group_init(&v);
	for (size_t g = 0; k == FMT_OK && g < s->m.n_groups; g++)
		k = verify_group(s, fields, g, &c, &v, o == NULL, e);
	fmt_pq_cursor_free(&c);
	fmt_pq_group_free(&v);
	return k;
}

/* ---- fmt-inspect ---- */

/* A statistic's bytes as the value they hold (NaN and infinities "nan", "inf", "-inf"). */
static json_t *stat_value(const pq_leaf *l, const fmt_field *f, const uint8_t *p, uint32_t n)
{
	if (!p)
		return NULL;
	if (fmt_pq_is_text(l)) {
		char text[PQ_TEXT_MAX];
		size_t need = l->ptype == PT_INT32 ? 4 : l->ptype == PT_INT64 ? 8 : l->ptype == PT_FLBA ? (size_t)l->type_length : 0;
		int len = (need == 0 || n == need) && n > 0 ? fmt_pq_text(l, p, n, text) : -1;
		return len < 0 ? NULL : json_stringn(text, (size_t)len);
	}
	int unsigned_int = f && (f->type == FMT_C_U8 || f->type == FMT_C_U16 || f->type == FMT_C_U32 ||
				 f->type == FMT_C_U64);
	switch (l->ptype) {
	case PT_BOOLEAN:
		return n == 1 ? json_boolean(p[0] != 0) : NULL;
	case PT_INT32:
		if (n != 4)
			return NULL;
		return unsigned_int ? json_integer((json_int_t)fmt_rd_u32(p)) : json_integer((int32_t)fmt_rd_u32(p));
	case PT_INT64:
		if (n != 8)
			return NULL;
		return unsigned_int ? fmt_json_u64(fmt_rd_u64(p)) : json_integer((json_int_t)fmt_rd_u64(p));
	case PT_FLOAT: {
		float v;
		if (n != 4)
			return NULL;
		memcpy(&v, p, 4);
		return fmt_json_double(v);
	}
	case PT_DOUBLE: {
		double v;
		if (n != 8)
			return NULL;
		memcpy(&v, p, 8);
		return fmt_json_double(v);
	}
	default:
		if (f && f->type == FMT_C_F16 && n == 2)
			return fmt_json_double(fmt_f16_to_f32(fmt_rd_u16(p)));
		if (f && f->type == FMT_C_UTF8) {
			json_t *v = json_stringn((const char *)p, n);
			if (v)
				return v;
		}
		char *hex = malloc((size_t)n * 2 + 1);
		if (!hex) {
			fmt_json_memory_lost(); /* the report is incomplete: it ends with exit 3 */
			return NULL;
		}
		for (uint32_t i = 0; i < n; i++)
			snprintf(hex + 2 * i, 3, "%02x", p[i]);
		json_t *v = json_string(hex);
		free(hex);
		return v;
	}
}

/* The encodings of bits by name, ", " between them: room for all 32 (unknown ids too: "unknown",
 * the longest name DELTA_LENGTH_BYTE_ARRAY) uncut. */
static json_t *encodings_text(uint32_t bits)
{
	char buf[32 * (sizeof "DELTA_LENGTH_BYTE_ARRAY" + 1)] = "";
	size_t used = 0;
	for (int i = 0; i < 32; i++)
		if (bits >> i & 1)
			used += (size_t)snprintf(buf + used, used < sizeof buf ? sizeof buf - used : 0, "%s%s",
						 used ? ", " : "", fmt_pq_encoding_name(i));
	return json_string(buf);
}

static json_t *chunk_json(const pq_leaf *l, const fmt_field *f, const pq_chunk *c)
{
	fmt_field elem;             /* a list's statistics are its elements' */
	if (f && f->type == FMT_C_FIXED_SIZE_LIST) {
		elem = *f;
		elem.type = f->elem;
		f = &elem;
	}
	json_t *o = json_object();
	json_object_set_new(o, "codec", json_string(fmt_pq_codec_name(c->codec)));
	json_object_set_new(o, "encodings", encodings_text(c->encodings));
	json_object_set_new(o, "values", json_integer(c->num_values));
	json_object_set_new(o, "compressed_bytes", json_integer(c->total_compressed));
	json_object_set_new(o, "uncompressed_bytes", json_integer(c->total_uncompressed));
	json_object_set_new(o, "offset", json_integer((json_int_t)c->start));
	if (c->stats.null_count >= 0)
		json_object_set_new(o, "null_count", json_integer(c->stats.null_count));
	if (c->stats.distinct_count >= 0)
		json_object_set_new(o, "distinct_count", json_integer(c->stats.distinct_count));
	json_t *min = stat_value(l, f, c->stats.min, c->stats.min_len);
	json_t *max = stat_value(l, f, c->stats.max, c->stats.max_len);
	if (min)
		json_object_set_new(o, "min", min);
	if (max)
		json_object_set_new(o, "max", max);
	return o;
}

/* Row group g of t (its chunks loaded into v): its rows, bytes and columns' chunks; when they
 * cannot be read again (the file changed since it was opened, a read failed), "error" says so
 * instead of the columns. NULL when memory ran out loading them (describe's NULL, which the
 * caller reports), not an "error" in a report that succeeds. */
static json_t *group_json(const fmt_table *t, size_t g, pq_group *v)
{
	const pq_state *s = t->format_state;
	json_t *gj = json_object(), *cols = json_object();
	fmt_err e;
	fmt_err_clear(&e);
	json_object_set_new(gj, "rows", json_integer(s->m.groups[g].num_rows));
	json_object_set_new(gj, "bytes", json_integer(s->m.groups[g].total_byte_size));
	errno = 0;
	if (fmt_pq_group_load(v, &s->f, &s->m, g, &e) != FMT_OK) {
		json_decref(cols);
		if (errno == ENOMEM) {
			json_decref(gj);
			return NULL;
		}
		json_object_set_new(gj, "error", fmt_json_string(e.msg, strlen(e.msg)));
		return gj;
	}
	for (size_t l = 0; l < s->m.n_leaves; l++) {
		const pq_leaf *leaf = &s->m.leaves[l];
		const fmt_field *f = leaf->field >= 0 ? &t->schema.fields[leaf->field] : NULL;
		/* a selected view renames nothing, but may have dropped the field */
		if (f && strcmp(f->name, leaf->path) != 0)
			f = NULL;
		fmt_json_set(cols, leaf->path, chunk_json(leaf, f, &v->chunks[l]));
	}
	json_object_set_new(gj, "columns", cols);
	return gj;
}

static json_t *describe(const fmt_table *t)
{
	const pq_state *s = t->format_state;
	json_t *o = json_object();
	json_object_set_new(o, "version", json_integer(s->m.version));
	json_t *by = s->m.created_by ? json_stringn(s->m.created_by, strlen(s->m.created_by)) : NULL;
	if (by)
		json_object_set_new(o, "created_by", by);
	json_object_set_new(o, "footer_bytes", json_integer(s->m.footer_len));
	json_object_set_new(o, "row_group_count", json_integer((json_int_t)s->m.n_groups));
	json_t *leaves = json_object();
	for (size_t i = 0; i < s->m.n_leaves; i++) {
		const pq_leaf *l = &s->m.leaves[i];
		char buf[160];
		snprintf(buf, sizeof buf, "%s%s%s%s", fmt_pq_ptype_name(l->ptype), l->logical[0] ? " " : "", l->logical,
			 l->max_rep ? " (repeated)" : l->max_def ? " (optional)" : "");
		fmt_json_set(leaves, l->path, json_string(buf));
	}
	json_object_set_new(o, "leaf_columns", leaves);
	json_t *groups = json_object();
	pq_group v;
	fmt_pq_group_init(&v);
	for (size_t g = 0; g < s->m.n_groups; g++) {
		char key[32];
		snprintf(key, sizeof key, "%zu", g);
		json_t *gj = group_json(t, g, &v);
		if (!gj) {
			fmt_pq_group_free(&v);
			json_decref(groups);
			json_decref(o);
			return NULL;
		}
		json_object_set_new(groups, key, gj);
	}
	fmt_pq_group_free(&v);
	json_object_set_new(o, "row_groups", groups);
	return o;
}

/* ---- writing ---- */

static const fmt_drvopts pq_options;

typedef struct codec_choice { int codec, level, given; } codec_choice;

typedef struct pq_write_opts {
	pq_opts o;
	codec_choice c;
} pq_write_opts;

static fmt_kind pq_write_table(fmt_table *in, fmt_sink *k, const fmt_write_opts *o, fmt_err *e)
{
	const pq_write_opts *given = fmt_drvopt_values(o ? o->options : NULL, &pq_options);
	int codec = given && given->c.given ? given->c.codec : CODEC_SNAPPY;
	int level = given && given->c.given ? given->c.level : 0;
	uint64_t rows = given && given->o.group_rows ? given->o.group_rows : 122880;
	uint64_t bytes = given && given->o.group_bytes_given ? given->o.group_bytes : PQ_GROUP_BYTES;
	return fmt_pq_write(in, k, codec, level, rows, bytes, e);
}

static int parse_group_rows(void *v, const char *arg, fmt_err *e)
{
	char *end = NULL;
	unsigned long long n = *arg && *arg != '-' && *arg != '+' ? strtoull(arg, &end, 10) : 0;
	if (n == 0 || *end || n > INT32_MAX)
		return fmt_fail(e, FMT_USAGE, "--row-group-rows takes a row count from 1 to 2147483647"), -1;
	((pq_write_opts *)v)->o.group_rows = n;
	return FMT_DRVOPT_GIVEN;
}

static int parse_group_bytes(void *v, const char *arg, fmt_err *e)
{
	char *end = NULL;
	unsigned long long n = *arg >= '0' && *arg <= '9' ? strtoull(arg, &end, 10) : ULLONG_MAX;
	if (n == ULLONG_MAX || *end)
		return fmt_fail(e, FMT_USAGE, "--row-group-bytes takes a byte count (0: no bound)"), -1;
	((pq_write_opts *)v)->o.group_bytes = n;
	((pq_write_opts *)v)->o.group_bytes_given = 1;
	return FMT_DRVOPT_GIVEN;
}

static int parse_compression(void *v, const char *arg, fmt_err *e)
{
	static const fmt_codec_name names[] = { { "none", 0 }, { "snappy", 0 }, { "gzip", 9 }, { "zstd", 22 }, { "lz4", 0 } };
	static const int codecs[] = { CODEC_NONE, CODEC_SNAPPY, CODEC_GZIP, CODEC_ZSTD, CODEC_LZ4_RAW };
	pq_write_opts *o = v;
	int level, i = fmt_codec_name_parse(arg, names, sizeof names / sizeof names[0], &level);
	if (i >= 0) {
		o->c = (codec_choice){ codecs[i], level, 1 };
		return codecs[i] == CODEC_NONE ? FMT_DRVOPT_NEUTRAL : FMT_DRVOPT_GIVEN;
	}
	return fmt_fail(e, FMT_USAGE, "--compression takes none, snappy (default), gzip[:1-9], zstd[:1-22], "
			"zstd-max or lz4 for Parquet"), -1;
}

static const fmt_drvopt pq_option_list[] = {
	{ "compression", "CODEC", "page compression: none, snappy (default), gzip[:1-9],\nzstd[:1-22], zstd-max, lz4 (LZ4_RAW)",
	  FMT_DRVOPT_WRITE, FMT_DRVOPT_WORDS, "none snappy gzip zstd zstd-max lz4", .parse = parse_compression },
	{ "row-group-rows", "N", "rows per row group (default 122880)", FMT_DRVOPT_WRITE, .parse = parse_group_rows },
	{ "row-group-bytes", "N", "a row group ends when the writer holds N bytes for it\n(default 12582912, 12 MiB; 0: no bound)",
	  FMT_DRVOPT_WRITE, .parse = parse_group_bytes },
	{ .name = NULL }
};

static const fmt_drvopts pq_options = { .list = pq_option_list, .size = sizeof(pq_write_opts) };

static int can_hold(const fmt_field *f)
{
	return f->type != FMT_C_OTHER;
}

const fmt_table_driver fmt_table_driver_parquet = {
	.name = "parquet",
	.extension = ".parquet",
	.probe = probe,
	.open = pq_open,
	.next = pq_next,
	.verify = pq_verify,
	.write = pq_write_table,
	.can_hold = can_hold,
	.close = pq_close,
	.describe = describe,
	.options = &pq_options,
	.columns_used = columns_used,
	.skip_blocks = skip_blocks,
};
