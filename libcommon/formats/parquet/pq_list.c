/* Reading a list column: the repetition and definition levels of its one leaf walked value by
 * value (a row may run on from one page to the next), each row a list of the one length the
 * field's fixed_size_list type says; a null row, a null element (the element validity bitmap)
 * and every inconsistency of the levels told by the row it is in. */
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "pq_internal.h"

enum { ROW_NULL, ROW_EMPTY, ROW_VALUES };

/* The row being walked. */
typedef struct row_walk {
	int open;                   /* a row begun */
	int kind;                   /* ROW_* */
	uint64_t values;            /* its elements so far */
} row_walk;

static fmt_kind bad_levels(const pq_cursor *c, fmt_err *e, const char *what)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': %s", c->leaf->path, what);
}

static fmt_kind oom(fmt_err *e)
{
	return fmt_fail(e, FMT_IO, "out of memory");
}

/* The levels of the value at the cursor, its page read when the last one is used up; *none: the
 * chunk is over, and its pages held the values its metadata says. */
static fmt_kind peek(pq_cursor *c, int *rep, int *def, int *none, fmt_err *e)
{
	*none = 0;
	while (c->page_at == c->page_values) {
		fmt_kind k = fmt_pq_cursor_next_page(c, none, e);
		if (k != FMT_OK)
			return k;
		if (!*none)
			continue;
		if (c->values_seen != (uint64_t)c->chunk->num_values)
			return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': the pages hold %llu values, the "
					"chunk says %lld", c->leaf->path, (unsigned long long)c->values_seen,
					(long long)c->chunk->num_values);
		return FMT_OK;
	}
	*rep = c->reps[c->page_at];
	*def = c->defs[c->page_at];
	return FMT_OK;
}

static fmt_kind too_many_rows(const pq_cursor *c, fmt_err *e)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': the chunk holds more rows than its row group's "
			"%llu", c->leaf->path, (unsigned long long)c->group_rows);
}

/* A row begins at a value of definition level def: null, empty or with values. */
static fmt_kind row_begin(pq_cursor *c, row_walk *w, int def, fmt_err *e)
{
	if (++c->rows_begun > c->group_rows)
		return too_many_rows(c, e);
	w->open = 1;
	w->values = 0;
	w->kind = def < c->leaf->list_def ? ROW_NULL : def == c->leaf->list_def ? ROW_EMPTY : ROW_VALUES;
	return FMT_OK;
}

/* A value of repetition level 1 continues the row begun: there is one, and it has values. */
static fmt_kind row_continue(const pq_cursor *c, const row_walk *w, int def, fmt_err *e)
{
	if (!w->open)
		return bad_levels(c, e, "a repetition level of 1 at the start of the column chunk");
	if (w->kind != ROW_VALUES || def <= c->leaf->list_def)
		return bad_levels(c, e, "a repetition level of 1 in a null or empty list");
	return FMT_OK;
}

/* The file's row of the row being walked. */
static uint64_t file_row(const pq_cursor *c)
{
	return c->first_row + c->rows_begun - 1;
}

/* A row of another length than the field's. */
static fmt_kind wrong_length(const pq_cursor *c, const fmt_field *f, const row_walk *w, fmt_err *e)
{
	unsigned long long row = file_row(c), got = w->values;
	if (got > PQ_MAX_LIST)
		return fmt_fail(e, FMT_UNSUPPORTED, "column '%s': row %llu has over %u values (fmtkit converts lists "
				"of one length, up to %u)", f->name, row, PQ_MAX_LIST, PQ_MAX_LIST);
	if (c->leaf->size_row == UINT64_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "column '%s': row %llu has %llu values, ARROW:schema's "
				"fixed_size_list %u (fmtkit converts lists of one length)", f->name, row, got, f->list_size);
	if (c->leaf->size_row < row)
		return fmt_fail(e, FMT_UNSUPPORTED, "column '%s': row %llu has %llu values, the rows before it %u "
				"(fmtkit converts lists of one length)", f->name, row, got, f->list_size);
	return fmt_fail(e, FMT_UNSUPPORTED, "column '%s': row %llu has %llu values, row %llu has %u (fmtkit "
			"converts lists of one length)", f->name, row, got, (unsigned long long)c->leaf->size_row, f->list_size);
}

/* ---- the list size ---- */

fmt_kind fmt_pq_list_size(pq_cursor *c, uint64_t *size, uint64_t *row, int *found, fmt_err *e)
{
	row_walk w = { 0 };
	*found = 0;
	for (;;) {
		int rep = 0, def = 0, none;
		fmt_kind k = peek(c, &rep, &def, &none, e);
		if (k != FMT_OK)
			return k;
		if (none || rep == 0) {
			if (w.open && w.kind == ROW_VALUES) {
				*size = w.values;
				*row = file_row(c);
				*found = 1;
				return FMT_OK;
			}
			if (none)
				return FMT_OK;
			k = row_begin(c, &w, def, e);
		} else {
			k = row_continue(c, &w, def, e);
		}
		if (k != FMT_OK)
			return k;
		if (def > c->leaf->list_def && ++w.values > PQ_MAX_LIST)
			return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': row %llu holds over %u values (fmtkit "
					"reads lists of up to %u)", c->leaf->path, (unsigned long long)file_row(c),
					PQ_MAX_LIST, PQ_MAX_LIST);
		c->page_defined_at += def == c->leaf->max_def;
		c->page_at++;
	}
}

/* ---- rows out ---- */

/* The buffers of n rows: values (zeros), the rows' validity and the elements' (all set). */
typedef struct list_out {
	uint8_t *validity, *values, *elem_validity;
	uint64_t nulls, elem_nulls;
	size_t width;               /* bytes of an element */
	uint64_t items;             /* elements: n x list size */
} list_out;

static void list_out_free(list_out *o)
{
	fmt_batch_buffer_free(o->validity);
	fmt_batch_buffer_free(o->values);
	fmt_batch_buffer_free(o->elem_validity);
}

static uint8_t *bitmap_ones(uint64_t bits)
{
	size_t n = (size_t)((bits + 7) / 8);
	uint8_t *p = fmt_batch_buffer(n ? n : 1);
	if (p)
		memset(p, 0xff, n);
	return p;
}

static fmt_kind list_out_open(const pq_cursor *c, const fmt_field *f, uint64_t n, list_out *o, fmt_err *e)
{
	uint64_t bytes;
	o->width = fmt_ctype_width(f->elem);
	if (f->list_size == 0 || f->list_size > PQ_MAX_LIST || fmt_mul_u64(n, f->list_size, &o->items) ||
	    fmt_mul_u64(o->items, o->width, &bytes) || bytes > SIZE_MAX / 2)
		return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': %llu rows of %u values are too many",
				f->name, (unsigned long long)n, f->list_size);
	if (!(o->values = fmt_batch_buffer(bytes ? (size_t)bytes : 1)))
		return oom(e);
	memset(o->values, 0, (size_t)bytes);
	if (c->leaf->list_def > 0 && !(o->validity = bitmap_ones(n)))
		return oom(e);
	if (c->leaf->max_def > c->leaf->list_def + 1 && !(o->elem_validity = bitmap_ones(o->items)))
		return oom(e);
	return FMT_OK;
}

static void clear_bit(uint8_t *bits, uint64_t i)
{
	bits[i >> 3] &= (uint8_t)~(1u << (i & 7));
}

/* The element at the cursor (definition level def) as element i of the rows. */
static void put_element(pq_cursor *c, list_out *o, uint64_t i, int def)
{
	if (def == c->leaf->max_def) {
		fmt_pq_convert_value(c, c->fixed + c->page_defined_at * (size_t)c->width, o->values + i * o->width,
				     o->width);
		return;
	}
	clear_bit(o->elem_validity, i);  /* allocated: a level between list_def and max_def */
	o->elem_nulls++;
}

/* The row walked ends as row r of the rows out: of the field's length, or null. */
static fmt_kind row_end(const pq_cursor *c, const fmt_field *f, const row_walk *w, list_out *o, uint64_t r,
			fmt_err *e)
{
	if (w->kind == ROW_NULL) {
		clear_bit(o->validity, r);  /* allocated: list_def > 0 */
		o->nulls++;
		return FMT_OK;
	}
	return w->values == f->list_size ? FMT_OK : wrong_length(c, f, w, e);
}

/* The next value of the walk: a row begun or continued, its element put; *stop: n rows are out
 * (or the chunk is over) and the value at the cursor is the next row's. */
static fmt_kind list_step(pq_cursor *c, const fmt_field *f, row_walk *w, list_out *o, uint64_t n, uint64_t *row,
			  int *stop, fmt_err *e)
{
	int rep = 0, def = 0, none;
	fmt_kind k = peek(c, &rep, &def, &none, e);
	if (k != FMT_OK)
		return k;
	if (none || rep == 0) {
		if (w->open && (k = row_end(c, f, w, o, *row, e)) != FMT_OK)
			return k;
		*row += (uint64_t)w->open;
		w->open = 0;
		if (none || *row == n) {
			*stop = 1;  /* a row after the row group's last is one too many */
			return !none && c->rows_begun >= c->group_rows ? too_many_rows(c, e) : FMT_OK;
		}
		k = row_begin(c, w, def, e);
	} else {
		k = row_continue(c, w, def, e);
	}
	if (k != FMT_OK)
		return k;
	if (def > c->leaf->list_def) {
		if (w->values < f->list_size)
			put_element(c, o, *row * f->list_size + w->values, def);
		if (++w->values > PQ_MAX_LIST)
			return wrong_length(c, f, w, e);
	}
	c->page_defined_at += def == c->leaf->max_def;
	c->page_at++;
	return FMT_OK;
}

/* Hand the buffers of o to b as col's. */
static fmt_kind list_out_give(list_out *o, fmt_column *col, fmt_batch *b, fmt_err *e)
{
	if (o->nulls == 0) {
		fmt_batch_buffer_free(o->validity);
		o->validity = NULL;
	}
	if (o->elem_nulls == 0) {
		fmt_batch_buffer_free(o->elem_validity);
		o->elem_validity = NULL;
	}
	col->null_count = o->nulls;
	col->validity = o->validity;
	col->values = o->values;
	col->values_len = o->items * o->width;
	col->elem_validity = o->elem_validity;
	uint8_t *bufs[3] = { o->values, o->validity, o->elem_validity };
	fmt_kind k = FMT_OK;
	memset(o, 0, sizeof *o);
	for (int i = 0; i < 3; i++) {
		if (!bufs[i])
			continue;
		if (k != FMT_OK)
			fmt_batch_buffer_free(bufs[i]);
		else
			k = fmt_batch_own_buffer(b, bufs[i], e);
	}
	return k;
}

fmt_kind fmt_pq_list_take(pq_cursor *c, const fmt_field *f, uint64_t n, fmt_column *col, fmt_batch *b, fmt_err *e)
{
	list_out o = { 0 };
	row_walk w = { 0 };
	uint64_t row = 0;
	int stop = 0;
	fmt_kind k = list_out_open(c, f, n, &o, e);
	while (k == FMT_OK && !stop)
		k = list_step(c, f, &w, &o, n, &row, &stop, e);
	if (k == FMT_OK && row < n)
		k = bad_levels(c, e, "the chunk's pages end before its rows");
	if (k != FMT_OK) {
		list_out_free(&o);
		return k;
	}
	return list_out_give(&o, col, b, e);
}
