/* The reading and writing loops of the text table drivers (textio.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/textio.h"
#include "fmt/thread.h"

size_t fmt_text_bom(const uint8_t *p, size_t n)
{
	static const uint8_t bom[3] = { 0xEF, 0xBB, 0xBF };
	return n >= sizeof bom && memcmp(p, bom, sizeof bom) == 0 ? sizeof bom : 0;
}

fmt_kind fmt_text_in_init(fmt_text_in *in, fmt_source *src, fmt_err *e)
{
	memset(in, 0, sizeof *in);
	in->src = src;
	in->cap = FMT_TEXT_BLOCK;
	if (!(in->buf = malloc(in->cap)))
		return fmt_fail(e, FMT_IO, "out of memory");
	size_t head;
	fmt_kind k = fmt_source_read_upto(src, 0, in->buf, 3, &head, e);
	if (k != FMT_OK)
		return k;
	in->text_off = fmt_text_bom((const uint8_t *)in->buf, head);
	fmt_text_in_seek(in, in->text_off);
	return FMT_OK;
}

fmt_kind fmt_text_in_refill(fmt_text_in *in, uint64_t line, const char *too_long, fmt_err *e)
{
	if (in->start > 0) {
		memmove(in->buf, in->buf + in->start, in->end - in->start);
		in->end -= in->start;
		in->start = 0;
	}
	if (in->end == in->cap) {
		if (in->cap >= FMT_TEXT_MAX_RECORD)
			return fmt_fail(e, FMT_INVALID_FORMAT, "line %llu: %s", (unsigned long long)line, too_long);
		char *p = realloc(in->buf, in->cap * 2);
		if (!p)
			return fmt_fail(e, FMT_IO, "out of memory");
		in->buf = p;
		in->cap *= 2;
	}
	uint64_t left = in->src->size - in->next_off;
	size_t want = in->cap - in->end < left ? in->cap - in->end : (size_t)left;
	fmt_kind k = fmt_source_read(in->src, in->next_off, in->buf + in->end, want, e);
	if (k != FMT_OK)
		return k;
	in->end += want;
	in->next_off += want;
	in->eof = in->next_off == in->src->size;
	return FMT_OK;
}

uint64_t fmt_text_batch_rows(uint64_t wanted, size_t columns)
{
	uint64_t most = FMT_TEXT_BATCH_BYTES / 8 / (columns ? columns : 1);
	return wanted < most ? wanted : most ? most : 1;
}

void fmt_text_in_seek(fmt_text_in *in, uint64_t off)
{
	in->next_off = off;
	in->start = in->end = 0;
	in->eof = off == in->src->size;
}

void fmt_text_in_free(fmt_text_in *in)
{
	free(in->buf);
	in->buf = NULL;
}

fmt_kind fmt_text_next_batch(fmt_text_row_fn row, fmt_text_cuts_fn cuts, void *ctx, uint64_t batch_rows,
			     col_builder *cols, const fmt_schema *s, fmt_batch *b, int *done, fmt_err *e)
{
	uint64_t rows = 0;
	int got = 1;
	fmt_kind k = FMT_OK;
	*done = 0;
	for (size_t i = 0; i < s->n_fields; i++)
		fmt_cb_prepare(&cols[i]);
	while (rows < batch_rows && (k = row(ctx, s, &got, e)) == FMT_OK && got) {
		rows++;
		if (cuts && cuts(ctx))
			break;
	}
	if (k != FMT_OK)
		return k;
	if (rows == 0) {
		*done = 1;
		return FMT_OK;
	}
	b->n_rows = rows;
	for (size_t i = 0; i < s->n_fields && k == FMT_OK; i++)
		k = fmt_cb_finish(&cols[i], &s->fields[i], b, &b->columns[i], e);
	return k;
}

/* One thread: rows into one buffer, written out whenever it passes FMT_TEXT_BLOCK. */
static fmt_kind write_serial(fmt_table *in, fmt_sink *k, fmt_text_put_row_fn put_row, const void *ctx, fmt_sb *line,
			     fmt_err *e)
{
	fmt_sb scratch = { 0 };
	fmt_kind r = FMT_OK;
	for (;;) {
		fmt_batch b;
		int done;
		if (line->oom) {
			r = fmt_fail(e, FMT_IO, "out of memory");
			break;
		}
		if (line->len && (r = fmt_sink_write(k, line->p, line->len, e)) != FMT_OK)
			break;
		line->len = 0;
		if ((r = fmt_table_next(in, &b, &done, e)) != FMT_OK)
			break;
		if (done) {
			fmt_batch_free(&b);
			break;
		}
		for (uint64_t row = 0; row < b.n_rows && r == FMT_OK; row++) {
			if (!put_row(ctx, &b, row, line, &scratch) || line->oom)
				r = fmt_fail(e, FMT_IO, "out of memory");
			else if (line->len >= FMT_TEXT_BLOCK) {
				r = fmt_sink_write(k, line->p, line->len, e);
				line->len = 0;
			}
		}
		fmt_batch_free(&b);
		if (r != FMT_OK)
			break;
	}
	fmt_sb_free(&scratch);
	return r;
}

/* Several threads. A reader's batch may point into memory its next batch reuses, so the caller
 * copies each batch (up to COPY_MAX bytes; a larger one is formatted before the next is read)
 * and reads the next while the copy is formatted: the workers, and the caller when it has
 * nothing else to do, take chunks of about CHUNK_TEXT bytes of text in row order, each into the
 * next slot of a ring; whoever finishes the chunk next in order writes the slots that are
 * ready, in order, one writer at a time. Memory: SLOTS_PER_THREAD * threads slots of text, and
 * a batch twice (the reader's and the copy). */
enum { CHUNK_TEXT = 256u << 10, SLOTS_PER_THREAD = 4, FIRST_CHUNK_ROWS = 256, FIRST_COLUMN_BYTES = 4,
       COPY_MAX = 16u << 20 };
enum { SLOT_FREE, SLOT_BUSY, SLOT_DONE };

/* one cache line or more each: two threads appending to neighbouring slots would otherwise
 * write the same line at every byte count (JSON Lines on two threads: 60 % more CPU) */
typedef struct text_slot {
	_Alignas(64) fmt_sb text;
	fmt_sb scratch;
	int state, ok;
} text_slot;

typedef struct text_par {
	pthread_mutex_t lock;
	pthread_cond_t cond;     /* a chunk taken, formatted or written, a batch, or stop */
	fmt_text_put_row_fn put_row;
	const void *ctx;
	fmt_sink *sink;
	const fmt_batch *batch;  /* the one being formatted, or NULL */
	uint64_t next_row;       /* its first row not taken yet */
	uint64_t active;         /* its chunks taken and not yet formatted */
	text_slot *slots;
	size_t n_slots;
	uint64_t taken, written; /* chunks, in sequence order */
	uint64_t text_bytes, text_rows; /* of the chunks formatted: the next chunk's size */
	int writing, stop;
	fmt_kind r;              /* the first failure (formatting or writing), with its message */
	fmt_err e;
} text_par;

static void fail_locked(text_par *p, fmt_kind r, const fmt_err *e)
{
	if (p->r == FMT_OK) {
		p->r = r;
		p->e = *e;
	}
}

/* Write the ready slots in order; with the lock held (released around each write). */
static void write_ready_locked(text_par *p)
{
	if (p->writing)
		return; /* that thread looks again after each write */
	p->writing = 1;
	while (p->r == FMT_OK && p->written < p->taken && p->slots[p->written % p->n_slots].state == SLOT_DONE) {
		text_slot *s = &p->slots[p->written % p->n_slots];
		fmt_err e;
		fmt_kind r = FMT_OK;
		fmt_err_clear(&e);
		pthread_mutex_unlock(&p->lock);
		if (!s->ok)
			r = fmt_fail(&e, FMT_IO, "out of memory");
		else if (s->text.len)
			r = fmt_sink_write(p->sink, s->text.p, s->text.len, &e);
		s->text.len = 0;
		pthread_mutex_lock(&p->lock);
		if (r != FMT_OK)
			fail_locked(p, r, &e);
		s->state = SLOT_FREE;
		p->written++;
		pthread_cond_broadcast(&p->cond);
	}
	p->writing = 0;
}

/* Whether a chunk can be taken now. */
static int can_take(const text_par *p)
{
	return p->r == FMT_OK && p->batch && p->next_row < p->batch->n_rows &&
	       p->slots[p->taken % p->n_slots].state == SLOT_FREE;
}

/* The rows of a chunk before the text's bytes a row are known: FIRST_CHUNK_ROWS, fewer when a row
 * has many columns (FIRST_COLUMN_BYTES each at least): 256 rows of 4000 columns were 5 MB of
 * text, and each slot that took them kept 8 MB. */
static uint64_t first_chunk_rows(const fmt_batch *b)
{
	uint64_t least = (uint64_t)b->n_columns * FIRST_COLUMN_BYTES, n = least ? CHUNK_TEXT / least + 1 : FIRST_CHUNK_ROWS;
	return n < FIRST_CHUNK_ROWS ? n : FIRST_CHUNK_ROWS;
}

/* Take the next chunk of the batch, format it and write what is ready; with the lock held. */
static void format_one_locked(text_par *p)
{
	text_slot *s = &p->slots[p->taken++ % p->n_slots];
	const fmt_batch *b = p->batch;
	uint64_t per_row = p->text_rows ? p->text_bytes / p->text_rows : 0;
	uint64_t row0 = p->next_row, n = per_row ? CHUNK_TEXT / (per_row + 1) + 1 : first_chunk_rows(b);
	if (n > b->n_rows - row0)
		n = b->n_rows - row0;
	p->next_row += n;
	p->active++;
	s->state = SLOT_BUSY;
	pthread_mutex_unlock(&p->lock);
	int ok = 1;
	s->text.len = 0;
	for (uint64_t row = row0; row < row0 + n && ok; row++)
		ok = p->put_row(p->ctx, b, row, &s->text, &s->scratch) && !s->text.oom;
	pthread_mutex_lock(&p->lock);
	s->ok = ok;
	s->state = SLOT_DONE;
	p->active--;
	p->text_bytes += s->text.len;
	p->text_rows += n;
	pthread_cond_broadcast(&p->cond);
	write_ready_locked(p);
}

static void *format_worker(void *arg)
{
	text_par *p = arg;
	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		if (can_take(p))
			format_one_locked(p);
		else
			pthread_cond_wait(&p->cond, &p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Help with the batch until every row of it is formatted (or a failure); with the lock held. */
static void finish_batch_locked(text_par *p)
{
	while (p->batch && p->active + (p->r == FMT_OK && p->next_row < p->batch->n_rows) > 0) {
		if (can_take(p))
			format_one_locked(p);
		else
			pthread_cond_wait(&p->cond, &p->lock);
	}
	p->batch = NULL;
}

/* A batch whose text comes to less than this (at the mean bytes a row so far) is formatted by
 * the caller itself once the workers have written all theirs, not handed over: each hand-over
 * wakes a worker and waits for it (futex calls, a context switch, the lock passed back and
 * forth), which costs more than formatting the rows. An .ald of 30,000 STREAMING chunks of 10
 * rows to CSV took 0.41 s of user CPU and 0.15 s of system on two threads against 0.27 s and
 * 0.03 s on one; chunks of 100 and 500 rows (7 and 37 KB of text) 0.13 and 0.11 s user on two
 * threads against 0.08 formatted by the caller, in no less wall time. */
enum { INLINE_TEXT = 64u << 10 };

/* Whether the caller formats b itself: small, the workers' text all written (waited for, with
 * the lock held; after finish_batch_locked). The first batch is handed over: no row's size is
 * known yet. */
static int mine_locked(text_par *p, const fmt_batch *b)
{
	if (!p->text_rows || b->n_rows > INLINE_TEXT / (p->text_bytes / p->text_rows + 1))
		return 0;
	while (p->r == FMT_OK && p->written < p->taken)
		pthread_cond_wait(&p->cond, &p->lock);
	return p->r == FMT_OK;
}

/* b's rows after the caller's text in line (*added bytes), written out once that passes
 * CHUNK_TEXT. */
static fmt_kind format_mine(const text_par *p, const fmt_batch *b, fmt_sb *line, fmt_sb *scratch, uint64_t *added,
			    fmt_err *e)
{
	size_t before = line->len;
	for (uint64_t row = 0; row < b->n_rows; row++)
		if (!p->put_row(p->ctx, b, row, line, scratch) || line->oom)
			return fmt_fail(e, FMT_IO, "out of memory");
	*added = line->len - before;
	if (line->len < CHUNK_TEXT)
		return FMT_OK;
	fmt_kind r = fmt_sink_write(p->sink, line->p, line->len, e);
	line->len = 0;
	return r;
}

/* The bytes a column's buffers hold for n rows of a checked batch (what the accessors read). */
static uint64_t column_bytes(const fmt_field *f, const fmt_column *c, uint64_t n, uint64_t *parts)
{
	uint64_t bits = (n + 7) / 8, w = fmt_ctype_width(f->type);
	parts[0] = c->validity ? bits : 0;
	parts[1] = parts[2] = parts[3] = 0;
	switch (f->type) {
	case FMT_C_BOOL:
		parts[2] = bits;
		break;
	case FMT_C_UTF8: case FMT_C_BINARY: case FMT_C_LARGE_UTF8: {
		int large = f->type == FMT_C_LARGE_UTF8;
		const uint8_t *o = c->offsets;
		if (!o)
			break;
		parts[1] = (n + 1) * (large ? 8 : 4);
		parts[2] = large ? fmt_rd_u64(o + 8 * n) : fmt_rd_u32(o + 4 * n); /* offsets start at 0 */
		break;
	}
	case FMT_C_FIXED_SIZE_LIST:
		parts[2] = n * f->list_size * fmt_ctype_width(f->elem);
		parts[3] = c->elem_validity ? (n * f->list_size + 7) / 8 : 0;
		break;
	default:
		parts[2] = n * w;
	}
	return ((parts[0] + 7) & ~(uint64_t)7) + ((parts[1] + 7) & ~(uint64_t)7) + ((parts[2] + 7) & ~(uint64_t)7) +
	       ((parts[3] + 7) & ~(uint64_t)7);
}

/* src's columns copied into one buffer (*mem, fmt_scratch_give it after fmt_batch_free(dst)):
 * 0 when they take more than COPY_MAX bytes or memory runs out (dst untouched then). */
static int copy_batch(const fmt_schema *s, const fmt_batch *src, fmt_batch *dst, void **mem)
{
	uint64_t total = 0, parts[4];
	for (size_t i = 0; i < s->n_fields && total <= COPY_MAX; i++)
		total += column_bytes(&s->fields[i], &src->columns[i], src->n_rows, parts);
	fmt_err e;
	if (total > COPY_MAX || fmt_batch_init(dst, s->n_fields, &e) != FMT_OK)
		return 0;
	/* whole MiBs: the next batch, a little larger, mostly fits the buffer given back */
	uint8_t *at = fmt_scratch_take((size_t)((total >> 20) + 1) << 20);
	if (!at) {
		fmt_batch_free(dst);
		return 0;
	}
	*mem = at;
	dst->n_rows = src->n_rows;
	for (size_t i = 0; i < s->n_fields; i++) {
		const fmt_column *c = &src->columns[i];
		fmt_column *d = &dst->columns[i];
		const void *from[4] = { c->validity, c->offsets, c->values, c->elem_validity };
		uint8_t *to[4] = { NULL, NULL, NULL, NULL };
		column_bytes(&s->fields[i], c, src->n_rows, parts);
		for (int j = 0; j < 4; j++) {
			if (!from[j])
				continue;
			to[j] = at;
			memcpy(at, from[j], (size_t)parts[j]);
			at += (parts[j] + 7) & ~(uint64_t)7;
		}
		*d = *c;
		d->validity = to[0];
		d->offsets = to[1];
		d->values = to[2] ? to[2] : c->values;
		d->values_len = parts[2];
		d->elem_validity = to[3];
	}
	return 1;
}

static fmt_kind write_parallel(fmt_table *in, fmt_sink *k, fmt_text_put_row_fn put_row, const void *ctx,
			       int threads, fmt_err *e)
{
	text_par p = { .put_row = put_row, .ctx = ctx, .sink = k };
	size_t n_workers = (size_t)threads - 1, started = 0;
	pthread_t *workers = calloc(n_workers, sizeof *workers);
	p.n_slots = SLOTS_PER_THREAD * (size_t)threads;
	p.slots = aligned_alloc(_Alignof(text_slot), p.n_slots * sizeof *p.slots);
	if (p.slots)
		memset(p.slots, 0, p.n_slots * sizeof *p.slots);
	if (!workers || !p.slots) {
		free(workers);
		free(p.slots);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	/* a worker that cannot be started leaves its share to the others and the caller */
	while (started < n_workers && fmt_thread_start(&workers[started], 0, format_worker, &p) == 0)
		started++;
	fmt_kind r = FMT_OK;
	fmt_batch held = { 0 };  /* the batch p.batch points at */
	void *held_mem = NULL;   /* its copy's buffer, or NULL when it is the reader's */
	/* The text of the small batches the caller formatted (mine_locked), not written yet: while
	 * it holds any, every chunk taken before it is written, and none is taken after it. */
	fmt_sb line = { 0 }, scratch = { 0 };
	uint64_t mine_bytes = 0, mine_rows = 0;   /* its rows' text not in p.text_bytes yet */
	for (;;) {
		fmt_batch b, copy;
		void *mem = NULL;
		int done;
		/* read the next batch while the workers format the one held */
		if ((r = fmt_table_next(in, &b, &done, e)) != FMT_OK)
			break;
		pthread_mutex_lock(&p.lock);
		finish_batch_locked(&p);
		/* the caller's rows count in the mean a chunk's size comes from too */
		p.text_bytes += mine_bytes;
		p.text_rows += mine_rows;
		mine_bytes = mine_rows = 0;
		int mine = !done && mine_locked(&p, &b);
		int failed = p.r != FMT_OK;
		pthread_mutex_unlock(&p.lock);
		/* the held copy's buffer goes back first: the new copy takes it again */
		fmt_batch_free(&held);
		fmt_scratch_give(held_mem);
		held_mem = NULL;
		if (mine && !failed) {
			uint64_t added = 0;
			r = format_mine(&p, &b, &line, &scratch, &added, e);
			mine_bytes += added;
			mine_rows += b.n_rows;
			fmt_batch_free(&b);
			if (r != FMT_OK)
				break;
			continue;
		}
		/* the caller's text before any the workers format next */
		if (!done && !failed && line.len) {
			r = fmt_sink_write(k, line.p, line.len, e);
			line.len = 0;
			if (r != FMT_OK) {
				fmt_batch_free(&b);
				break;
			}
		}
		int copied = !done && !failed && copy_batch(&in->schema, &b, &copy, &mem);
		if (copied) {
			fmt_batch_free(&b);
			held = copy;
			held_mem = mem;
		} else {
			held = b;
		}
		if (done || failed)
			break;
		pthread_mutex_lock(&p.lock);
		p.batch = &held;
		p.next_row = 0;
		pthread_cond_broadcast(&p.cond);
		if (held_mem) {
			pthread_mutex_unlock(&p.lock);
			continue;
		}
		/* the reader's own memory: formatted and freed before the next read */
		finish_batch_locked(&p);
		pthread_mutex_unlock(&p.lock);
		fmt_batch_free(&held);
	}
	pthread_mutex_lock(&p.lock);
	finish_batch_locked(&p);
	while (p.r == FMT_OK && p.written < p.taken)
		pthread_cond_wait(&p.cond, &p.lock);
	p.stop = 1;
	pthread_cond_broadcast(&p.cond);
	pthread_mutex_unlock(&p.lock);
	for (size_t i = 0; i < started; i++)
		pthread_join(workers[i], NULL);
	fmt_batch_free(&held);
	fmt_scratch_give(held_mem);
	if (r == FMT_OK && p.r != FMT_OK) {
		r = p.r;
		*e = p.e; /* the whole record: a fresh one (write_ready_locked's) */
	}
	if (r == FMT_OK && line.len) /* after the workers' text, all written */
		r = fmt_sink_write(k, line.p, line.len, e);
	fmt_sb_free(&line);
	fmt_sb_free(&scratch);
	for (size_t i = 0; i < p.n_slots; i++) {
		fmt_sb_free(&p.slots[i].text);
		fmt_sb_free(&p.slots[i].scratch);
	}
	pthread_cond_destroy(&p.cond);
	pthread_mutex_destroy(&p.lock);
	free(p.slots);
	free(workers);
	return r;
}

/* A table without columns has no text for its rows (CSV and JSON Lines readers, fmtkit's
 * too, refuse a file of empty lines or of objects without keys), and its rows cost the input
 * nothing: an Arrow IPC batch of 2^33 rows and no columns is a 1 KB file, which was written as
 * 12.9 GB of empty lines. Refused at the first batch with rows; a table of none is its head. */
static fmt_kind refuse_rows_without_columns(fmt_table *in, fmt_err *e)
{
	for (;;) {
		fmt_batch b;
		int done;
		fmt_kind r = fmt_table_next(in, &b, &done, e);
		if (r != FMT_OK)
			return r;
		uint64_t rows = done ? 0 : b.n_rows;
		fmt_batch_free(&b);
		if (done)
			return FMT_OK;
		if (rows)
			return fmt_fail(e, FMT_UNSUPPORTED, "the table has no columns: its rows (%llu in the first batch) "
					"have no text to write", (unsigned long long)rows);
	}
}

fmt_kind fmt_text_write(fmt_table *in, fmt_sink *k, const char *head, size_t head_len,
			fmt_text_put_row_fn put_row, const void *ctx, int threads, fmt_err *e)
{
	fmt_sb line = { 0 };
	fmt_kind r;
	fmt_sb_put(&line, head, head_len);
	if (in->schema.n_fields == 0) {
		r = refuse_rows_without_columns(in, e);
		if (r == FMT_OK && line.len)
			r = line.oom ? fmt_fail(e, FMT_IO, "out of memory") : fmt_sink_write(k, line.p, line.len, e);
	} else if (threads <= 1) {
		r = write_serial(in, k, put_row, ctx, &line, e);
	} else if (line.oom) {
		r = fmt_fail(e, FMT_IO, "out of memory");
	} else {
		r = line.len ? fmt_sink_write(k, line.p, line.len, e) : FMT_OK;
		if (r == FMT_OK)
			r = write_parallel(in, k, put_row, ctx, threads, e);
	}
	fmt_sb_free(&line);
	return r;
}
