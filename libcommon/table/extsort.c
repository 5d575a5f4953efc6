/* The external merge sort (fmt/extsort.h). A record in memory and in a run file:
 * u32 key length, u32 payload length, u64 sequence number (the stable tie-break), key, payload. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fmt/checked.h"
#include "fmt/extsort.h"
#include "fmt/io.h"

#define HEAD 16u
#define MAX_RUNS 64u

typedef struct run {
	FILE *f;
	uint8_t *rec;            /* the current record, HEAD + key + payload */
	size_t cap;
	int done;
} run;

struct fmt_extsort {
	uint64_t memory;
	uint8_t *arena;          /* records added since the last run */
	size_t len, cap;
	size_t *offs;            /* where each record of the arena starts */
	size_t n_recs, cap_recs;
	uint8_t **sorted;        /* the arena's records in order (finish, no run written) */
	size_t next_sorted;
	uint64_t seq;
	run *runs;
	size_t n_runs, cap_runs;
	size_t *heap;            /* merge: run indices, the least record on top */
	size_t n_heap;
	int finished;
	int stepped;             /* a merged record was handed out: step its run next */
	uint64_t merges;         /* times MAX_RUNS runs were merged into one */
};

static uint32_t key_len(const uint8_t *r) { return fmt_rd_u32(r); }
static uint32_t payload_len(const uint8_t *r) { return fmt_rd_u32(r + 4); }

static int compare_records(const uint8_t *a, const uint8_t *b)
{
	uint32_t la = key_len(a), lb = key_len(b);
	int c = memcmp(a + HEAD, b + HEAD, la < lb ? la : lb);
	if (c)
		return c;
	if (la != lb)
		return la < lb ? -1 : 1;
	uint64_t sa = fmt_rd_u64(a + 8), sb = fmt_rd_u64(b + 8);
	return sa < sb ? -1 : sa > sb;
}

static int compare_pointers(const void *a, const void *b)
{
	return compare_records(*(uint8_t *const *)a, *(uint8_t *const *)b);
}

fmt_kind fmt_extsort_new(uint64_t memory, fmt_extsort **out, fmt_err *e)
{
	fmt_extsort *s = calloc(1, sizeof *s);
	if (!s)
		return fmt_fail(e, FMT_IO, "out of memory");
	s->memory = memory ? memory : 1;
	*out = s;
	return FMT_OK;
}

/* The arena's records, sorted, as pointers (s->sorted). */
static fmt_kind sort_arena(fmt_extsort *s, fmt_err *e)
{
	free(s->sorted);
	s->sorted = malloc((s->n_recs ? s->n_recs : 1) * sizeof *s->sorted);
	if (!s->sorted)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < s->n_recs; i++)
		s->sorted[i] = s->arena + s->offs[i];
	qsort(s->sorted, s->n_recs, sizeof *s->sorted, compare_pointers);
	s->next_sorted = 0;
	return FMT_OK;
}

static FILE *temp_file(fmt_err *e)
{
	int fd = fmt_temp_fd("a sorted run", e);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, "w+b");
	if (!f) {
		close(fd);
		fmt_fail(e, FMT_IO, "out of memory");
	}
	return f;
}

static fmt_kind merge_runs(fmt_extsort *s, fmt_err *e);

/* The arena, sorted, as a new run file; the arena is empty after. At MAX_RUNS runs they are
 * merged into one first, so that a small memory bound never holds many files open. */
static fmt_kind spill(fmt_extsort *s, fmt_err *e)
{
	if (s->n_runs == MAX_RUNS) {
		fmt_kind k = merge_runs(s, e);
		if (k != FMT_OK)
			return k;
	}
	fmt_kind k = sort_arena(s, e);
	if (k != FMT_OK)
		return k;
	if (fmt_grow_array(&s->runs, &s->cap_runs, s->n_runs + 1, sizeof *s->runs, 8))
		return fmt_fail(e, FMT_IO, "out of memory");
	FILE *f = temp_file(e);
	if (!f)
		return e->kind;
	s->runs[s->n_runs++] = (run){ .f = f };
	for (size_t i = 0; k == FMT_OK && i < s->n_recs; i++) {
		const uint8_t *r = s->sorted[i];
		k = fmt_temp_file_write(f, "a sorted run", r, HEAD + (size_t)key_len(r) + payload_len(r), e);
	}
	if (k == FMT_OK)
		k = fmt_temp_file_flush(f, "a sorted run", e);
	if (k != FMT_OK)
		return k;
	s->len = s->n_recs = 0;
	return FMT_OK;
}

fmt_kind fmt_extsort_add(fmt_extsort *s, const void *key, size_t klen, const void *payload, size_t plen,
			 fmt_err *e)
{
	uint64_t need;
	if (klen > UINT32_MAX || plen > UINT32_MAX || fmt_add_u64(HEAD + klen, plen, &need) ||
	    fmt_add_u64(need, s->len, &need) || need > SIZE_MAX / 2)
		return fmt_fail(e, FMT_UNSUPPORTED, "a row too large to sort (%zu bytes)", klen + plen);
	if (s->n_recs && need + s->n_recs * sizeof(size_t) > s->memory) {
		fmt_kind k = spill(s, e);
		if (k != FMT_OK)
			return k;
		need = HEAD + klen + plen;
	}
	if (need > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		while (cap < need)
			cap *= 2;
		uint8_t *p = realloc(s->arena, cap);
		if (!p)
			return fmt_fail(e, FMT_IO, "out of memory");
		s->arena = p;
		s->cap = cap;
	}
	if (fmt_grow_array(&s->offs, &s->cap_recs, s->n_recs + 1, sizeof *s->offs, 1024))
		return fmt_fail(e, FMT_IO, "out of memory");
	uint8_t *r = s->arena + s->len;
	fmt_wr_u32(r, (uint32_t)klen);
	fmt_wr_u32(r + 4, (uint32_t)plen);
	fmt_wr_u64(r + 8, s->seq++);
	if (klen)
		memcpy(r + HEAD, key, klen);
	if (plen)
		memcpy(r + HEAD + klen, payload, plen);
	s->offs[s->n_recs++] = s->len;
	s->len += HEAD + klen + plen;
	return FMT_OK;
}

/* The next record of run r into r->rec, or r->done. */
static fmt_kind run_read(run *r, fmt_err *e)
{
	uint8_t head[HEAD];
	size_t got = fread(head, 1, HEAD, r->f);
	if (got == 0 && feof(r->f)) {
		r->done = 1;
		return FMT_OK;
	}
	if (got != HEAD)
		return fmt_fail(e, FMT_IO, "cannot read a temporary file");
	size_t n = HEAD + (size_t)key_len(head) + payload_len(head);
	if (n > r->cap) {
		uint8_t *p = realloc(r->rec, n);
		if (!p)
			return fmt_fail(e, FMT_IO, "out of memory");
		r->rec = p;
		r->cap = n;
	}
	memcpy(r->rec, head, HEAD);
	if (fread(r->rec + HEAD, 1, n - HEAD, r->f) != n - HEAD)
		return fmt_fail(e, FMT_IO, "cannot read a temporary file");
	return FMT_OK;
}

static int heap_less(const fmt_extsort *s, size_t a, size_t b)
{
	return compare_records(s->runs[s->heap[a]].rec, s->runs[s->heap[b]].rec) < 0;
}

static void heap_down(fmt_extsort *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, least = i;
		if (l < s->n_heap && heap_less(s, l, least))
			least = l;
		if (l + 1 < s->n_heap && heap_less(s, l + 1, least))
			least = l + 1;
		if (least == i)
			return;
		size_t t = s->heap[i];
		s->heap[i] = s->heap[least];
		s->heap[least] = t;
		i = least;
	}
}

/* Every run at its first record, in the heap. */
static fmt_kind start_merge(fmt_extsort *s, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	free(s->heap);
	s->n_heap = 0;
	s->stepped = 0;
	s->heap = malloc((s->n_runs + 1) * sizeof *s->heap);
	if (!s->heap)
		k = fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; k == FMT_OK && i < s->n_runs; i++) {
		if (fseek(s->runs[i].f, 0, SEEK_SET) != 0)
			return fmt_fail(e, FMT_IO, "cannot read a temporary file");
		k = run_read(&s->runs[i], e);
		if (k == FMT_OK && !s->runs[i].done)
			s->heap[s->n_heap++] = i;
	}
	for (size_t i = s->n_heap; k == FMT_OK && i-- > 0;)
		heap_down(s, i);
	return k;
}

fmt_kind fmt_extsort_finish(fmt_extsort *s, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	s->finished = 1;
	if (s->n_runs == 0)
		return sort_arena(s, e);
	if (s->n_recs)
		k = spill(s, e);
	return k == FMT_OK ? start_merge(s, e) : k;
}

static void give(const uint8_t *r, const uint8_t **key, size_t *klen, const uint8_t **payload, size_t *plen)
{
	*klen = key_len(r);
	*plen = payload_len(r);
	*key = r + HEAD;
	*payload = r + HEAD + *klen;
}

fmt_kind fmt_extsort_next(fmt_extsort *s, const uint8_t **key, size_t *klen, const uint8_t **payload, size_t *plen,
			  int *done, fmt_err *e)
{
	*done = 0;
	if (!s->finished)
		return fmt_fail(e, FMT_INTERNAL, "extsort read before finish");
	if (s->n_runs == 0) {
		if (s->next_sorted == s->n_recs) {
			*done = 1;
			return FMT_OK;
		}
		give(s->sorted[s->next_sorted++], key, klen, payload, plen);
		return FMT_OK;
	}
	/* the top run's record was handed out last time: step that run now */
	if (s->stepped) {
		run *top = &s->runs[s->heap[0]];
		fmt_kind k = run_read(top, e);
		if (k != FMT_OK)
			return k;
		if (top->done)
			s->heap[0] = s->heap[--s->n_heap];
		heap_down(s, 0);
	}
	if (s->n_heap == 0) {
		*done = 1;
		return FMT_OK;
	}
	s->stepped = 1;
	give(s->runs[s->heap[0]].rec, key, klen, payload, plen);
	return FMT_OK;
}

/* Every run merged into one new run (records keep their sequence numbers: still stable). */
static fmt_kind merge_runs(fmt_extsort *s, fmt_err *e)
{
	FILE *out = temp_file(e);
	if (!out)
		return e->kind;
	s->finished = 1;
	fmt_kind k = start_merge(s, e);
	for (int done = 0; k == FMT_OK;) {
		const uint8_t *key, *payload;
		size_t kl, pl;
		if ((k = fmt_extsort_next(s, &key, &kl, &payload, &pl, &done, e)) != FMT_OK || done)
			break;
		const uint8_t *rec = key - HEAD;
		k = fmt_temp_file_write(out, "a sorted run", rec, HEAD + kl + pl, e);
	}
	if (k == FMT_OK)
		k = fmt_temp_file_flush(out, "a sorted run", e);
	for (size_t i = 0; i < s->n_runs; i++) {
		fclose(s->runs[i].f);
		free(s->runs[i].rec);
	}
	s->runs[0] = (run){ .f = out };
	s->n_runs = 1;
	s->n_heap = 0;
	s->stepped = 0;
	s->finished = 0;
	s->merges++;
	return k;
}

uint64_t fmt_extsort_runs(const fmt_extsort *s)
{
	return s->n_runs + s->merges * (MAX_RUNS - 1);
}

void fmt_extsort_free(fmt_extsort *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_runs; i++) {
		if (s->runs[i].f)
			fclose(s->runs[i].f);
		free(s->runs[i].rec);
	}
	free(s->runs);
	free(s->heap);
	free(s->arena);
	free(s->offs);
	free(s->sorted);
	free(s);
}
