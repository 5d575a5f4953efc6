/* The CSV reader on several threads (-T). The inference pass splits the rows into one chunk a
 * thread at record boundaries: the quotes before a nominal split point say whether it lies in a
 * quoted field (a well-formed file toggles its quote state at every quote, "" included), and the
 * first line feed after it outside quotes ends a record. Each chunk is parsed and inferred on its
 * own; the chunks are merged in order, each checked to start where the one before really ended
 * (a malformed quote misleads the count: from the first chunk that does not, one thread reads
 * the rest), so types, row counts and the first error are those of one pass. Along the way a
 * checkpoint every CSV_CHECKPOINT_ROWS rows says where a record starts, and one after each record
 * that ends a batch (fmt_csv_record_cuts): the batches of the second pass (the rows one thread
 * would put in each) are parsed ahead on threads of their own while the caller writes the ones
 * before, each from the checkpoint before its first row, and handed out in order. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/thread.h"
#include "csv_internal.h"

#define MIN_CHUNK (64u << 10)   /* smaller files are read on one thread */
#define SCAN_BLOCK (1u << 20)

typedef struct par_slot {
	fmt_batch b;
	int ready;                 /* parsed (b, or k and e) */
	int done;                  /* no rows were left (not expected: the first pass counted them) */
	uint64_t start, start_line; /* where its first record starts, as the parse found */
	uint64_t end, end_line;    /* and where its last one ends */
	fmt_kind k;
	fmt_err e;
} par_slot;

/* The batches are parsed ahead by -T - 1 threads of their own (the caller's writes meanwhile),
 * at most one per thread ahead of the one handed out: each into the slot of its number. Memory
 * is what bounds it (a 48 MiB address space holds -T 2 and the .ald writer: table-memory.bats);
 * the threads need little stack. */
#define SLOTS_PER_THREAD 1
#define BATCH_THREAD_STACK (1u << 20)

struct csv_par {
	fmt_pool *pool;            /* the inference pass */
	csv_checkpoints cps;       /* rows counted from the first data row, ascending */
	/* the batches */
	const csv_state *proto;
	fmt_schema schema;         /* a copy: a column selection swaps t->schema while threads parse */
	uint64_t *starts;          /* batch j: rows [starts[j], starts[j + 1]) */
	uint64_t n_batches;
	pthread_t *threads;
	csv_state *workers;        /* one per thread */
	size_t n_threads, n_started;
	par_slot *slots;
	size_t n_slots;
	uint64_t next_parse, next_take; /* batch numbers */
	int stop, synced;          /* synced: lock and the conditions exist */
	int samples_merged;        /* the workers' inferences are in the reader's (merge_samples) */
	uint64_t read_end, read_end_line; /* where the batches handed out so far end */
	pthread_mutex_t lock;
	pthread_cond_t work, ready;
};

/* ---- the inference pass ---- */

/* One way of counting a chunk's records (scan_chunk_task): lines from the chunk's start. */
typedef struct scan_track {
	int state;                 /* TRACK_* */
	uint64_t start, start_line; /* after its first line feed outside quotes */
	uint64_t rec_off;          /* where the record being scanned starts */
	uint64_t rows;
	uint64_t end, end_line;    /* after its first line feed outside quotes at or past to */
	csv_checkpoints cps;       /* rows from its start */
} scan_track;

typedef struct chunk {
	uint64_t from, to;         /* nominal range; then [start, end) as found */
	uint64_t quotes, lfs;      /* in [from, to) */
	uint64_t start, start_line; /* the first record boundary after from (chunk 0: from) */
	uint64_t lfs_to_start;     /* line feeds in [from, start) */
	uint64_t end, end_line;    /* where its parse ended */
	int parity;                /* quotes before from, mod 2 */
	uint64_t rows;
	fmt_tv_infer *inf;
	csv_checkpoints cps;
	/* the counting pass (scan_chunk_task): the two ways, quotes (mod 2) and line feeds since
	 * from, and at to; where the scan stopped */
	scan_track tr[2];
	int qpar, quotes_to, prev_cr;
	uint64_t lines, lines_to, at;
	fmt_kind k;
	fmt_err e;
} chunk;

typedef struct infer_job {
	csv_state *s;
	chunk *c;
	size_t n;
	char **bufs;               /* a scan block per chunk */
	int typed;                 /* 0: the records counted, their values not typed */
} infer_job;

static void count_task(void *ctx, size_t i)
{
	infer_job *j = ctx;
	chunk *c = &j->c[i];
	for (uint64_t off = c->from; off < c->to && c->k == FMT_OK;) {
		size_t n = c->to - off < SCAN_BLOCK ? (size_t)(c->to - off) : SCAN_BLOCK;
		c->k = fmt_source_read(j->s->in.src, off, j->bufs[i], n, &c->e);
		if (c->k != FMT_OK)
			break;
		c->quotes += fmt_csv_count_byte(j->bufs[i], n, '"');
		c->lfs += fmt_csv_count_byte(j->bufs[i], n, '\n');
		off += n;
	}
}

/* The first record boundary after from (entered with the quote state parity): just past the
 * first line feed outside quotes, or the end of the file. */
static void boundary_task(void *ctx, size_t i)
{
	infer_job *j = ctx;
	chunk *c = &j->c[i];
	uint64_t size = j->s->in.src->size, off = c->from;
	int quoted = c->parity;
	c->start = size;
	if (i == 0) {
		c->start = c->from;
		return;
	}
	while (off < size && c->k == FMT_OK) {
		size_t n = size - off < SCAN_BLOCK ? (size_t)(size - off) : SCAN_BLOCK;
		const char *p = j->bufs[i];
		if ((c->k = fmt_source_read(j->s->in.src, off, j->bufs[i], n, &c->e)) != FMT_OK)
			return;
		for (size_t at = 0; (at += fmt_csv_special_byte(p + at, n - at, '"')) < n; at++) {
			if (p[at] == '"') {
				quoted = !quoted;
			} else if (p[at] == '\n') {
				c->lfs_to_start++;
				if (!quoted) {
					c->start = off + at + 1;
					return;
				}
			}
		}
		off += n;
	}
}

static void parse_task(void *ctx, size_t i)
{
	infer_job *j = ctx;
	chunk *c = &j->c[i];
	csv_state w;
	if (c->k != FMT_OK)
		return;
	if ((c->k = fmt_csv_state_clone(&w, j->s, c->start, c->start_line, &c->e)) == FMT_OK) {
		w.limit = i + 1 < j->n ? j->c[i + 1].start : UINT64_MAX;
		c->k = fmt_csv_infer_range(&w, c->inf, &c->rows, &c->cps, &c->e);
		c->end = fmt_csv_state_offset(&w);
		c->end_line = w.line;
	}
	fmt_csv_state_free(&w);
}

/* c's checkpoints onto the table's, its rows counted from first_row, its lines from first_line. */
static int add_checkpoints(csv_checkpoints *all, const csv_checkpoints *c, uint64_t first_row, uint64_t first_line)
{
	for (size_t i = 0; i < c->n; i++)
		if (!fmt_csv_checkpoint_add(all, first_row + c->v[i].row, c->v[i].off, first_line + c->v[i].line,
					    c->v[i].cut))
			return 0;
	return 1;
}

/* One thread from off (line) to the end: after a chunk that did not end where the next began. */
static fmt_kind read_rest(csv_state *s, uint64_t off, uint64_t line, fmt_tv_infer *inf, uint64_t *rows,
			  csv_checkpoints *all, fmt_err *e)
{
	csv_state w;
	csv_checkpoints cps = { 0 };
	uint64_t first_row = *rows;
	fmt_tv_infer *part = inf ? calloc(s->n_cols ? s->n_cols : 1, sizeof *part) : NULL;
	fmt_kind k = part || !inf ? fmt_csv_state_clone(&w, s, off, line, e) : fmt_fail(e, FMT_IO, "out of memory");
	if (inf && !part)
		return k;
	for (size_t i = 0; part && i < s->n_cols; i++)
		fmt_tv_infer_init(&part[i]);
	if (k == FMT_OK)
		k = fmt_csv_infer_range(&w, part, rows, &cps, e);
	fmt_csv_state_free(&w);
	for (size_t i = 0; k == FMT_OK && part && i < s->n_cols; i++)
		fmt_tv_infer_merge(&inf[i], &part[i]);
	if (k == FMT_OK && !add_checkpoints(all, &cps, first_row, 0))
		k = fmt_fail(e, FMT_IO, "out of memory");
	free(cps.v);
	free(part);
	return k;
}

/* The chunks in order into inf, rows and the checkpoints. */
static fmt_kind merge_chunks(csv_state *s, chunk *c, size_t n, fmt_tv_infer *inf, uint64_t *rows, fmt_err *e)
{
	uint64_t off = s->data_off, line = s->data_line;
	for (size_t i = 0; i < n; i++) {
		if (c[i].start != off || c[i].start_line != line)
			return read_rest(s, off, line, inf, rows, &s->par->cps, e);
		if (c[i].k != FMT_OK) {
			*e = c[i].e;
			return c[i].k;
		}
		for (size_t col = 0; col < s->n_cols; col++)
			fmt_tv_infer_merge(&inf[col], &c[i].inf[col]);
		if (!add_checkpoints(&s->par->cps, &c[i].cps, *rows, 0))
			return fmt_fail(e, FMT_IO, "out of memory");
		*rows += c[i].rows;
		off = c[i].end;
		line = c[i].end_line;
	}
	return FMT_OK;
}

/* ---- the counting pass (types from a sample) ---- */

/* The records counted without parsing them, for a read whose types came from a sample, in one
 * pass and without the quote count that places the chunks' starts: as the parser reads a
 * well-formed file, a record ends at a line feed outside quotes (each quote toggles, a doubled one
 * twice) and an empty line (nothing, or a carriage return, before its line feed) is none. A
 * chunk does not know whether it starts inside quotes, so it counts both ways at once (a line
 * feed is outside quotes for the one way when the quotes since the chunk's start are even, for
 * the other when odd), and the chunks before it say which holds (scan_merge). Each way starts
 * after its first line feed outside quotes and ends after its first one at or past the chunk's
 * end (scanning on past it: at most SCAN_AHEAD bytes on the threads, then as far as the way that
 * holds needs, on one). Where a file is not well formed the counts may be wrong: each batch's parse
 * is checked to start where the one before ended and to end where one thread's batch would
 * (parse_batch), so the read fails and the caller starts again with every record parsed first.
 * 1 GB bench CSV on two threads (perf): 0.3 s of CPU, where the inference pass it replaces (every
 * record parsed and every value typed) cost 1.0-1.3 s more than -T 1's whole conversion. Only
 * the line feeds are visited: whether one is inside quotes comes from a prefix XOR of the quotes'
 * bits in its 64-byte block (odd_before). */
#define SCAN_AHEAD (1u << 20)

enum { TRACK_OFF, TRACK_SEEKING, TRACK_COUNTING, TRACK_ENDED };

/* The checkpoint lines of a way are counted from the chunk's start (scan_merge adds the lines
 * before it). */
static int track_checkpoint(scan_track *t, uint64_t off, uint64_t line, int cut)
{
	return fmt_csv_checkpoint_add(&t->cps, t->rows, off, line, cut);
}

/* A line feed at x outside quotes for t (lines: those of the chunk so far, this one counted). 0
 * when out of memory. */
static int track_lf(scan_track *t, uint64_t data_off, uint64_t to, uint64_t x, uint64_t lines, int after_cr)
{
	uint64_t end = x + 1;
	if (t->state == TRACK_SEEKING) {
		t->start = t->rec_off = end;
		t->start_line = lines;
		t->state = x >= to ? TRACK_ENDED : TRACK_COUNTING;
		t->end = end;
		t->end_line = lines;
		return t->state == TRACK_ENDED || track_checkpoint(t, end, lines, 0);
	}
	if (t->state != TRACK_COUNTING)
		return 1;
	if (x >= to) {
		t->state = TRACK_ENDED;
		t->end = end;
		t->end_line = lines;
	}
	if (x == t->rec_off || (after_cr && x == t->rec_off + 1)) {
		t->rec_off = end; /* an empty line */
		return 1;
	}
	t->rows++;
	int cut = fmt_text_record_cuts(t->rec_off - data_off, end - data_off);
	t->rec_off = end;
	if (cut && !track_checkpoint(t, end, lines, 1))
		return 0;
	return t->rows % CSV_CHECKPOINT_ROWS || track_checkpoint(t, end, lines, 0);
}

/* At the end of the file: the last record, without a line feed, and where each way ends. */
static void tracks_at_eof(chunk *c, uint64_t size)
{
	for (int h = 0; h < 2; h++) {
		scan_track *t = &c->tr[h];
		if (t->state == TRACK_COUNTING && t->rec_off < size)
			t->rows++;
		if (t->state == TRACK_SEEKING) {
			t->start = t->rec_off = size;
			t->start_line = c->lines;
		}
		if (t->state == TRACK_SEEKING || t->state == TRACK_COUNTING) {
			t->state = TRACK_ENDED;
			t->end = size;
			t->end_line = c->lines;
		}
	}
}

static int tracks_ended(const chunk *c)
{
	return (c->tr[0].state == TRACK_OFF || c->tr[0].state == TRACK_ENDED) &&
	       (c->tr[1].state == TRACK_OFF || c->tr[1].state == TRACK_ENDED);
}

/* Bit i set when the quotes before bit i of the mask are odd in number (bit i itself a line
 * feed, not a quote): a prefix XOR of the quotes' bits. */
static uint64_t odd_before(uint64_t quotes)
{
	uint64_t x = quotes;
	x ^= x << 1;
	x ^= x << 2;
	x ^= x << 4;
	x ^= x << 8;
	x ^= x << 16;
	x ^= x << 32;
	return x;
}

/* Chunk c's bytes [off, end) through its ways; past the chunk's end (ahead), only until every
 * way has ended. c->at: where it stopped. */
static void scan_span(infer_job *j, chunk *c, char *buf, uint64_t off, uint64_t end, int ahead)
{
	uint64_t data_off = j->s->data_off;
	while (off < end && c->k == FMT_OK) {
		size_t n = end - off < SCAN_BLOCK ? (size_t)(end - off) : SCAN_BLOCK;
		if ((c->k = fmt_source_read(j->s->in.src, off, buf, n, &c->e)) != FMT_OK)
			return;
		for (size_t at = 0; at < n; at += 64) {
			size_t part = n - at < 64 ? n - at : 64;
			uint64_t quotes = fmt_csv_byte_mask(buf + at, part, '"');
			uint64_t inside = odd_before(quotes) ^ (c->qpar ? ~(uint64_t)0 : 0);
			for (uint64_t m = fmt_csv_byte_mask(buf + at, part, '\n'); m; m &= m - 1) {
				unsigned bit = (unsigned)__builtin_ctzll(m);
				size_t b = at + bit;
				int after_cr = b ? buf[b - 1] == '\r' : c->prev_cr, way = (int)(inside >> bit & 1);
				if (!track_lf(&c->tr[way], data_off, c->to, off + b, ++c->lines, after_cr)) {
					c->k = fmt_fail(&c->e, FMT_IO, "out of memory");
					return;
				}
				if (ahead && tracks_ended(c)) {
					c->at = off + b + 1;
					c->qpar = way;
					c->prev_cr = 0;
					return;
				}
			}
			c->qpar ^= __builtin_popcountll(quotes) & 1;
		}
		c->prev_cr = buf[n - 1] == '\r';
		off += n;
	}
	c->at = off;
}

/* Chunk i: its own bytes, then at most SCAN_AHEAD past them. */
static void scan_chunk_task(void *ctx, size_t i)
{
	infer_job *j = ctx;
	chunk *c = &j->c[i];
	uint64_t size = j->s->in.src->size;
	c->tr[0].state = c->tr[1].state = TRACK_SEEKING;
	if (i == 0) { /* starts with a record, outside quotes */
		c->tr[1].state = TRACK_OFF;
		c->tr[0].state = TRACK_COUNTING;
		c->tr[0].start = c->tr[0].rec_off = c->from;
		if (!track_checkpoint(&c->tr[0], c->from, 0, 0)) {
			c->k = fmt_fail(&c->e, FMT_IO, "out of memory");
			return;
		}
	}
	scan_span(j, c, j->bufs[i], c->from, c->to, 0);
	c->quotes_to = c->qpar;
	c->lines_to = c->lines;
	uint64_t ahead = size - c->to < SCAN_AHEAD ? size : c->to + SCAN_AHEAD;
	if (c->k == FMT_OK && !tracks_ended(c))
		scan_span(j, c, j->bufs[i], c->to, ahead, 1);
	if (c->k == FMT_OK && c->at == size)
		tracks_at_eof(c, size);
}

/* Way h of chunk i on to its end, on this thread (its scan ahead stopped first). */
static fmt_kind scan_on(infer_job *j, size_t i, int h, fmt_err *e)
{
	chunk *c = &j->c[i];
	uint64_t size = j->s->in.src->size;
	c->tr[!h].state = TRACK_OFF;
	if (c->tr[h].state != TRACK_ENDED) {
		scan_span(j, c, j->bufs[i], c->at, size, 1);
		if (c->k == FMT_OK && c->at == size)
			tracks_at_eof(c, size);
	}
	if (c->k != FMT_OK)
		*e = c->e;
	return c->k;
}

/* The chunks' counts in order, each by the way the quotes before it say: rows and checkpoints.
 * A way that does not start where the chunk before ended (not expected: both follow the same
 * rule) sends the rest to one thread's parse. */
static fmt_kind scan_merge(csv_state *s, infer_job *j, uint64_t *rows, fmt_err *e)
{
	uint64_t off = s->data_off, line = s->data_line, base = s->data_line;
	int h = 0;
	for (size_t i = 0; i < j->n; i++) {
		chunk *c = &j->c[i];
		if (c->k != FMT_OK) {
			*e = c->e;
			return c->k;
		}
		fmt_kind k = scan_on(j, i, h, e);
		if (k != FMT_OK)
			return k;
		scan_track *t = &c->tr[h];
		if (t->start != off || base + t->start_line != line)
			return read_rest(s, off, line, NULL, rows, &s->par->cps, e);
		if (!add_checkpoints(&s->par->cps, &t->cps, *rows, base))
			return fmt_fail(e, FMT_IO, "out of memory");
		*rows += t->rows;
		off = t->end;
		line = base + t->end_line;
		base += c->lines_to;
		h ^= c->quotes_to;
	}
	return FMT_OK;
}

int fmt_csv_par_wanted(const csv_state *s)
{
	const fmt_source *src = s->in.src;
	return s->threads > 1 && !src->sequential && !src->observe && src->size > s->data_off &&
	       src->size - s->data_off >= 2 * (uint64_t)MIN_CHUNK;
}

static size_t chunk_count(const csv_state *s)
{
	uint64_t most = (s->in.src->size - s->data_off) / MIN_CHUNK;
	return (uint64_t)s->threads < most ? (size_t)s->threads : (size_t)most;
}

static fmt_kind setup_chunks(infer_job *j, fmt_err *e)
{
	csv_state *s = j->s;
	uint64_t bytes = s->in.src->size - s->data_off;
	for (size_t i = 0; i < j->n; i++) {
		chunk *c = &j->c[i];
		c->from = s->data_off + bytes / j->n * i;
		c->to = i + 1 < j->n ? s->data_off + bytes / j->n * (i + 1) : s->in.src->size;
		c->inf = j->typed ? calloc(s->n_cols ? s->n_cols : 1, sizeof *c->inf) : NULL;
		j->bufs[i] = malloc(SCAN_BLOCK);
		if ((j->typed && !c->inf) || !j->bufs[i])
			return fmt_fail(e, FMT_IO, "out of memory");
		for (size_t col = 0; c->inf && col < s->n_cols; col++)
			fmt_tv_infer_init(&c->inf[col]);
	}
	return FMT_OK;
}

/* The first error of the chunks' scans, in file order. */
static fmt_kind chunk_error(const infer_job *j, fmt_err *e)
{
	for (size_t i = 0; i < j->n; i++)
		if (j->c[i].k != FMT_OK) {
			*e = j->c[i].e;
			return j->c[i].k;
		}
	return FMT_OK;
}

/* Quote parity and line of each chunk's start from the counts before it. */
static void place_starts(infer_job *j)
{
	uint64_t quotes = 0, lfs = 0;
	for (size_t i = 0; i < j->n; i++) {
		j->c[i].parity = (int)(quotes & 1);
		j->c[i].start_line = j->s->data_line + lfs;
		quotes += j->c[i].quotes;
		lfs += j->c[i].lfs;
	}
}

static void free_job(infer_job *j)
{
	for (size_t i = 0; j->c && i < j->n; i++) { /* j->c NULL: its allocation failed */
		free(j->c[i].inf);
		free(j->c[i].cps.v);
		free(j->c[i].tr[0].cps.v);
		free(j->c[i].tr[1].cps.v);
		if (j->bufs)
			free(j->bufs[i]);
	}
	free(j->c);
	free(j->bufs);
}

fmt_kind fmt_csv_par_infer(csv_state *s, fmt_tv_infer *inf, uint64_t *rows, fmt_err *e)
{
	infer_job j = { s, NULL, chunk_count(s), NULL, inf != NULL };
	fmt_kind k;
	if (!(s->par = calloc(1, sizeof *s->par)))
		return fmt_fail(e, FMT_IO, "out of memory");
	if ((k = fmt_pool_create(&s->par->pool, s->threads, e)) != FMT_OK)
		return k;
	j.c = calloc(j.n, sizeof *j.c);
	j.bufs = calloc(j.n, sizeof *j.bufs);
	k = j.c && j.bufs ? setup_chunks(&j, e) : fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK && !j.typed) {
		fmt_pool_run(s->par->pool, j.n, scan_chunk_task, &j);
		k = scan_merge(s, &j, rows, e);
		free_job(&j);
		fmt_pool_destroy(s->par->pool);
		s->par->pool = NULL;
		return k;
	}
	if (k == FMT_OK) {
		fmt_pool_run(s->par->pool, j.n, count_task, &j);
		k = chunk_error(&j, e);
	}
	if (k == FMT_OK) {
		place_starts(&j);
		fmt_pool_run(s->par->pool, j.n, boundary_task, &j);
		k = chunk_error(&j, e);
	}
	if (k == FMT_OK) {
		for (size_t i = 0; i < j.n; i++)
			j.c[i].start_line += j.c[i].lfs_to_start;
		for (size_t i = 0; i < j.n; i++) { /* the parse has buffers of its own */
			free(j.bufs[i]);
			j.bufs[i] = NULL;
		}
		fmt_pool_run(s->par->pool, j.n, parse_task, &j);
		k = merge_chunks(s, j.c, j.n, inf, rows, e);
	}
	free_job(&j);
	fmt_pool_destroy(s->par->pool); /* its threads are not needed for the batches */
	s->par->pool = NULL;
	return k;
}

/* ---- the batches ---- */

/* The last checkpoint at or before row. */
static const csv_checkpoint *checkpoint_before(const csv_checkpoints *cps, uint64_t row)
{
	size_t lo = 0, hi = cps->n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (cps->v[mid].row <= row)
			lo = mid;
		else
			hi = mid;
	}
	return &cps->v[lo];
}

/* The first row of each batch, the cuts fmt_csv_record_cuts made and batch_rows after each, as
 * one thread reading in order would make them, and the end of the rows. */
static fmt_kind batch_starts(struct csv_par *p, uint64_t rows, uint64_t batch_rows, fmt_err *e)
{
	size_t cap = 0, n = 0;
	uint64_t at = 0;
	for (size_t i = 0;; i++) {
		uint64_t cut = i < p->cps.n ? p->cps.v[i].row : rows;
		if (i < p->cps.n && (!p->cps.v[i].cut || cut >= rows || cut == at))
			continue;
		for (; at < cut; at = cut - at > batch_rows ? at + batch_rows : cut) {
			if (fmt_grow_array(&p->starts, &cap, n + 2, sizeof *p->starts, 64))
				return fmt_fail(e, FMT_IO, "out of memory");
			p->starts[n++] = at;
		}
		if (i >= p->cps.n)
			break;
	}
	if (fmt_grow_array(&p->starts, &cap, n + 1, sizeof *p->starts, 64))
		return fmt_fail(e, FMT_IO, "out of memory");
	p->starts[n] = rows;
	p->n_batches = n;
	return FMT_OK;
}

static int record_cuts(const void *w)
{
	return fmt_csv_record_cuts(w);
}

/* Whether batch j, just parsed by w (rows rows, the last one cut or not), ends where one thread
 * reading in order ends a batch: after a record that cuts, after batch_rows rows, or with the
 * rows (no record after the last batch). Nothing else ends a batch short of its rows. */
static int batch_ends_right(struct csv_par *p, csv_state *w, uint64_t j, uint64_t rows, int cut, fmt_err *e)
{
	int got = 0;
	if (rows != p->starts[j + 1] - p->starts[j])
		return 0;
	if (j + 1 < p->n_batches)
		return cut || rows == w->batch_rows;
	return fmt_csv_next_record(w, &got, e) == FMT_OK && !got;
}

/* Batch j into slot, parsed by w from the checkpoint before its first row, and checked to end
 * as one thread's would (the checkpoints may come from a scan that did not parse: scan_chunk_task). */
static void parse_batch(struct csv_par *p, csv_state *w, uint64_t j, par_slot *slot)
{
	uint64_t row = p->starts[j];
	const csv_checkpoint *cp = checkpoint_before(&p->cps, row);
	int got = 1;
	slot->done = 0;
	slot->k = fmt_batch_init(&slot->b, p->schema.n_fields, &slot->e);
	if (slot->k != FMT_OK)
		return;
	fmt_csv_state_seek(w, cp->off, cp->line);
	for (uint64_t skip = row - cp->row; slot->k == FMT_OK && skip > 0 && got; skip--)
		slot->k = fmt_csv_next_record(w, &got, &slot->e);
	slot->start = fmt_csv_state_offset(w);
	slot->start_line = w->line;
	if (slot->k == FMT_OK)
		slot->k = fmt_text_next_batch(fmt_csv_row, record_cuts, w, p->starts[j + 1] - row, w->cols, &p->schema,
					      &slot->b, &slot->done, &slot->e);
	if (slot->k != FMT_OK)
		return;
	slot->end = fmt_csv_state_offset(w);
	slot->end_line = w->line;
	fmt_err ends_err;
	if (!batch_ends_right(p, w, j, slot->done ? 0 : slot->b.n_rows, fmt_csv_record_cuts(w), &ends_err))
		slot->k = fmt_fail(&slot->e, FMT_INTERNAL, "the parallel CSV reader's batch %llu does not end where one thread's would",
				   (unsigned long long)j + 1);
}

static void *batch_thread(void *arg)
{
	csv_state *w = arg;
	struct csv_par *p = w->par;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && (p->next_parse >= p->n_batches || p->next_parse - p->next_take >= p->n_slots))
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stop)
			break;
		uint64_t j = p->next_parse++;
		par_slot *slot = &p->slots[j % p->n_slots];
		pthread_mutex_unlock(&p->lock);
		parse_batch(p, w, j, slot);
		pthread_mutex_lock(&p->lock);
		slot->ready = 1;
		pthread_cond_broadcast(&p->ready);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Sampled types (fmt_dataset_opts.sample_bytes): each worker goes on inferring its own rows
 * from the sample's inference, merged into s's when every batch is read (the same answer
 * whatever the split: fmt_tv_infer_merge). */
static fmt_tv_infer *copy_sample(const csv_state *s)
{
	fmt_tv_infer *c = malloc((s->n_cols ? s->n_cols : 1) * sizeof *c);
	if (c)
		memcpy(c, s->sample, s->n_cols * sizeof *c);
	return c;
}

static void merge_samples(csv_state *s)
{
	struct csv_par *p = s->par;
	if (!s->sample || p->samples_merged)
		return;
	for (size_t i = 0; i < p->n_threads; i++)
		for (size_t col = 0; col < s->n_cols; col++)
			fmt_tv_infer_merge(&s->sample[col], &p->workers[i].sample[col]);
	s->rows_read = s->rows;
	p->samples_merged = 1;
}

static fmt_kind start_threads(csv_state *s, const fmt_schema *schema, fmt_err *e)
{
	struct csv_par *p = s->par;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->ready, NULL);
	p->synced = 1;
	p->proto = s;
	p->read_end = s->data_off;
	p->read_end_line = s->data_line;
	p->schema = *schema;
	fmt_kind r = batch_starts(p, s->rows, s->batch_rows, e);
	if (r != FMT_OK)
		return r;
	p->n_threads = (size_t)s->threads - 1; /* and the caller's, which writes */
	p->n_slots = SLOTS_PER_THREAD * p->n_threads;
	p->slots = calloc(p->n_slots, sizeof *p->slots);
	p->workers = calloc(p->n_threads, sizeof *p->workers);
	p->threads = calloc(p->n_threads, sizeof *p->threads);
	if (!p->slots || !p->workers || !p->threads)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < p->n_threads; i++) {
		csv_state *w = &p->workers[i];
		fmt_kind k = fmt_csv_state_clone(w, s, s->data_off, s->data_line, e);
		w->par = p; /* the thread's way to the queue */
		if (k == FMT_OK && !(w->cols = calloc(w->n_cols ? w->n_cols : 1, sizeof *w->cols)))
			k = fmt_fail(e, FMT_IO, "out of memory");
		if (k == FMT_OK && s->sample && !(w->sample = copy_sample(s)))
			k = fmt_fail(e, FMT_IO, "out of memory");
		if (k != FMT_OK)
			return k;
	}
	for (size_t i = 0; i < p->n_threads; i++) {
		if (fmt_thread_start(&p->threads[i], BATCH_THREAD_STACK, batch_thread, &p->workers[i]) != 0)
			break;
		p->n_started++;
	}
	if (p->n_started < p->n_threads)
		return fmt_fail(e, FMT_IO, "cannot start worker thread %zu", p->n_started + 1);
	return FMT_OK;
}

fmt_kind fmt_csv_par_next(csv_state *s, const fmt_schema *schema, fmt_batch *b, int *done, fmt_err *e)
{
	struct csv_par *p = s->par;
	fmt_kind k;
	*done = 0;
	if (!p->slots && (k = start_threads(s, schema, e)) != FMT_OK)
		return k;
	if (p->next_take >= p->n_batches) {
		merge_samples(s);
		*done = 1;
		return FMT_OK;
	}
	par_slot *slot = &p->slots[p->next_take % p->n_slots];
	pthread_mutex_lock(&p->lock);
	while (!slot->ready)
		pthread_cond_wait(&p->ready, &p->lock);
	pthread_mutex_unlock(&p->lock);
	if (slot->k != FMT_OK) {
		*e = slot->e;
		return slot->k; /* the batches after it are never asked for */
	}
	if (slot->start != p->read_end || slot->start_line != p->read_end_line)
		return fmt_fail(e, FMT_INTERNAL, "the parallel CSV reader's batch %llu does not start where the one before ended",
				(unsigned long long)p->next_take + 1);
	p->read_end = slot->end;
	p->read_end_line = slot->end_line;
	if (slot->done) {
		merge_samples(s);
		*done = 1;
		return FMT_OK;
	}
	fmt_batch_free(b);
	*b = slot->b;
	memset(&slot->b, 0, sizeof slot->b);
	pthread_mutex_lock(&p->lock);
	slot->ready = 0;
	p->next_take++;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	return FMT_OK;
}

void fmt_csv_par_free(csv_state *s)
{
	struct csv_par *p = s->par;
	if (!p)
		return;
	fmt_pool_destroy(p->pool);
	if (p->n_started) {
		pthread_mutex_lock(&p->lock);
		p->stop = 1;
		pthread_cond_broadcast(&p->work);
		pthread_mutex_unlock(&p->lock);
		for (size_t i = 0; i < p->n_started; i++)
			pthread_join(p->threads[i], NULL);
	}
	if (p->synced) {
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->work);
		pthread_cond_destroy(&p->ready);
	}
	for (size_t i = 0; p->slots && i < p->n_slots; i++)
		fmt_batch_free(&p->slots[i].b);
	for (size_t i = 0; p->workers && i < p->n_threads; i++)
		fmt_csv_state_free(&p->workers[i]);
	free(p->slots);
	free(p->starts);
	free(p->workers);
	free(p->threads);
	free(p->cps.v);
	free(p);
	s->par = NULL;
}
