/* Splits of a table's rows into parts (fmt-shard split --fractions) and tables read one after
 * another (fmt-shard merge of datasets): fmt/rowops.h.
 *
 * A split is drawn without replacement: each part's rows are fixed first as for the whole input
 * (largest remainders), then each stratum's rows per part (fmt_split_allocate, so that the parts
 * keep those totals), then each stratum's rows, in file order, go to part j with probability (rows part j still
 * needs) / (rows the stratum still has), from a generator seeded by the seed and the stratum's
 * number. Every pass over the same input draws the same parts. */
#include <stdlib.h>
#include <string.h>
#include "fmt/xxh3.h"
#include "fmt/checked.h"
#include "fmt/rowops.h"
#include "rows_internal.h"

#define MAX_PARTS 16

typedef struct stratum {
	uint64_t lo, hi;             /* the hash of its value's key */
	uint64_t rows;
} stratum;

struct fmt_split_plan {
	size_t k;
	double fractions[MAX_PARTS];
	long col;                    /* the stratify column, -1: none */
	uint64_t seed;
	stratum *strata;
	size_t n_strata, cap_strata;
	size_t *index;               /* open addressing over strata: slot -> stratum + 1 */
	size_t cap_index;
	uint64_t *counts;            /* n_strata x k */
};

void fmt_split_counts(uint64_t n, const double *fractions, size_t k, uint64_t *counts)
{
	double rest[MAX_PARTS];
	uint64_t given = 0;
	for (size_t j = 0; j < k; j++) {
		double exact = (double)n * fractions[j];
		counts[j] = (uint64_t)exact;
		rest[j] = exact - (double)counts[j];
		given += counts[j];
	}
	while (given < n) {
		size_t best = 0;
		for (size_t j = 1; j < k; j++)
			if (rest[j] > rest[best])
				best = j;
		counts[best]++;
		rest[best] = -1;
		given++;
	}
}

/* ---- the strata x parts table of counts ---- */

typedef struct cell {
	uint64_t rem;                /* (stratum's rows x part's rows) mod all rows */
	size_t at;                   /* stratum x k + part */
} cell;

typedef struct alloc {
	const uint64_t *rows, *part_rows;
	uint64_t total;
	size_t n_strata, k;
	uint64_t *row_need, part_need[MAX_PARTS]; /* rows still to round up */
	uint16_t *up;                /* per stratum: the parts whose cell is rounded up (a bit each) */
	uint16_t *has_rem;           /* per stratum: the parts whose cell has a remainder */
	size_t needy;                /* no stratum before it still needs a row */
	size_t cursor[MAX_PARTS];    /* where augment's scan from each part last found a stratum */
} alloc;

/* The remainder of a cell's ideal share, rows x part's rows / total, in 1/total rows. */
static uint64_t rem_of(const alloc *a, size_t s, size_t j)
{
	return (uint64_t)((unsigned __int128)a->rows[s] * a->part_rows[j] % a->total);
}

/* The parts whose cell of stratum s can still be rounded up: a remainder, not up yet. */
static unsigned can_go_up(const alloc *a, size_t s)
{
	return (unsigned)(a->has_rem[s] & ~a->up[s]);
}

/* The largest remainder first; on a tie the earlier stratum, then the earlier part. */
static int by_remainder(const void *x, const void *y)
{
	const cell *c = x, *d = y;
	if (c->rem != d->rem)
		return c->rem > d->rem ? -1 : 1;
	return (c->at > d->at) - (c->at < d->at);
}

/* Each part j reached from stratum from_row[j], by a cell taken from part from_part[j] (k: from
 * the stratum that needs a row): the path's cells flipped, one row less needed at each end. */
static void flip_path(alloc *a, const size_t *from_row, const size_t *from_part, size_t j)
{
	a->part_need[j]--;
	for (;;) {
		size_t s = from_row[j], back = from_part[j];
		a->up[s] = (uint16_t)(a->up[s] | 1u << j);
		if (back == a->k) {
			a->row_need[s]--;
			return;
		}
		a->up[s] = (uint16_t)(a->up[s] & ~(1u << back));
		j = back;
	}
}

/* One more cell rounded up where the largest remainders alone got stuck: a breadth-first search
 * over the parts from the first stratum that still needs a row to a part that still needs one,
 * through cells that can go up and, back from a part, cells that are up (moved to another part
 * of their stratum). Each part's scan of the strata starts where its last one found a stratum
 * and goes round once: the strata before it that were of no use mostly still are, so that many
 * augmentations do not each rescan them. -1: no path. */
static int augment(alloc *a)
{
	size_t from_row[MAX_PARTS], from_part[MAX_PARTS], queue[MAX_PARTS], n_queue = 0;
	unsigned seen = 0, all = (1u << a->k) - 1;
	while (a->needy < a->n_strata && !a->row_need[a->needy])
		a->needy++;
	if (a->needy == a->n_strata)
		return -1;
	for (size_t s = a->needy, j = 0; j < a->k; j++)
		if (can_go_up(a, s) >> j & 1) {
			seen |= 1u << j;
			from_row[j] = s;
			from_part[j] = a->k;
			queue[n_queue++] = j;
		}
	for (size_t q = 0; q < n_queue; q++) {
		size_t j = queue[q];
		if (a->part_need[j]) {
			flip_path(a, from_row, from_part, j);
			return 0;
		}
		for (size_t i = 0, s = a->cursor[j]; i < a->n_strata && seen != all; i++, s = s + 1 == a->n_strata ? 0 : s + 1) {
			unsigned fresh = can_go_up(a, s) & ~seen;
			if (!(a->up[s] >> j & 1) || !fresh)
				continue;
			a->cursor[j] = s;
			for (size_t j2 = 0; j2 < a->k; j2++)
				if (fresh >> j2 & 1) {
					seen |= 1u << j2;
					from_row[j2] = s;
					from_part[j2] = j;
					queue[n_queue++] = j2;
				}
		}
	}
	return -1;
}

/* Every cell rounded down, the rows each stratum and each part still need, and the cells that
 * have a remainder; 0, or -1 when the counts do not add up to the same total. */
static int round_down(alloc *a, uint64_t *counts, cell *cells, size_t *n_cells)
{
	uint64_t sum = 0;
	for (size_t j = 0; j < a->k; j++) {
		a->part_need[j] = a->part_rows[j];
		sum += a->part_rows[j];
	}
	if (sum != a->total)
		return -1;
	*n_cells = 0;
	for (size_t s = 0; s < a->n_strata; s++) {
		a->row_need[s] = a->rows[s];
		for (size_t j = 0; j < a->k; j++) {
			size_t at = s * a->k + j;
			counts[at] = (uint64_t)((unsigned __int128)a->rows[s] * a->part_rows[j] / a->total);
			a->row_need[s] -= counts[at];
			a->part_need[j] -= counts[at];
			if (rem_of(a, s, j)) {
				cells[(*n_cells)++] = (cell){ rem_of(a, s, j), at };
				a->has_rem[s] = (uint16_t)(a->has_rem[s] | 1u << j);
			}
		}
	}
	return 0;
}

fmt_kind fmt_split_allocate(const uint64_t *rows, size_t n_strata, const uint64_t *part_rows, size_t k,
			    uint64_t *counts, fmt_err *e)
{
	alloc a = { rows, part_rows, 0, n_strata, k, NULL, { 0 }, NULL, NULL, 0, { 0 } };
	for (size_t s = 0; s < n_strata; s++)
		if (fmt_add_u64(a.total, rows[s], &a.total))
			return fmt_fail(e, FMT_INTERNAL, "split: the strata's rows overflow");
	if (k > MAX_PARTS)
		return fmt_fail(e, FMT_INTERNAL, "split: %zu parts", k);
	if (a.total == 0) {
		memset(counts, 0, n_strata * k * sizeof *counts);
		return FMT_OK;
	}
	size_t n_cells = 0, left = 0;
	a.row_need = malloc((n_strata + 1) * sizeof *a.row_need);
	a.up = calloc(n_strata + 1, sizeof *a.up);
	a.has_rem = calloc(n_strata + 1, sizeof *a.has_rem);
	cell *cells = malloc((n_strata * k + 1) * sizeof *cells);
	fmt_kind r = a.row_need && a.up && a.has_rem && cells ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	if (r == FMT_OK && round_down(&a, counts, cells, &n_cells) != 0)
		r = fmt_fail(e, FMT_INTERNAL, "split: the parts' rows are not the strata's");
	if (r == FMT_OK) {
		qsort(cells, n_cells, sizeof *cells, by_remainder);
		for (size_t i = 0; i < n_cells; i++) {
			size_t s = cells[i].at / k, j = cells[i].at % k;
			if (a.row_need[s] && a.part_need[j]) {
				a.up[s] = (uint16_t)(a.up[s] | 1u << j);
				a.row_need[s]--;
				a.part_need[j]--;
			}
		}
		for (size_t j = 0; j < k; j++)
			left += a.part_need[j];
		for (; left && augment(&a) == 0; left--)
			;
		if (left)
			r = fmt_fail(e, FMT_INTERNAL, "split: no rounding of the strata gives the parts' rows");
	}
	for (size_t i = 0; r == FMT_OK && i < n_strata * k; i++)
		counts[i] += a.up[i / k] >> (i % k) & 1;
	free(a.row_need);
	free(a.up);
	free(a.has_rem);
	free(cells);
	return r;
}

static size_t slot_of(const fmt_split_plan *p, uint64_t lo, uint64_t hi)
{
	size_t mask = p->cap_index - 1;
	for (size_t i = (size_t)lo & mask;; i = (i + 1) & mask) {
		size_t s = p->index[i];
		if (!s || (p->strata[s - 1].lo == lo && p->strata[s - 1].hi == hi))
			return i;
	}
}

static int grow_index(fmt_split_plan *p)
{
	size_t cap = p->cap_index ? 2 * p->cap_index : 64;
	size_t *old = p->index, old_cap = p->cap_index;
	p->index = calloc(cap, sizeof *p->index);
	if (!p->index) {
		p->index = old;
		return -1;
	}
	p->cap_index = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i])
			p->index[slot_of(p, p->strata[old[i] - 1].lo, p->strata[old[i] - 1].hi)] = old[i];
	free(old);
	return 0;
}

/* The stratum of row (added when add, else SIZE_MAX when unknown); SIZE_MAX - 1 out of memory. */
static size_t stratum_of(fmt_split_plan *p, const fmt_schema *s, const fmt_batch *b, uint64_t row, fmt_sb *key,
			 int add)
{
	if (p->col < 0)
		return 0;
	key->len = 0;
	fmt_row_key(&s->fields[p->col], &b->columns[p->col], row, 0, key);
	if (key->oom)
		return SIZE_MAX - 1;
	XXH128_hash_t h = XXH3_128bits(key->p, key->len);
	size_t i = slot_of(p, h.low64, h.high64);
	if (p->index[i])
		return p->index[i] - 1;
	if (!add)
		return SIZE_MAX;
	if (fmt_grow_array(&p->strata, &p->cap_strata, p->n_strata + 1, sizeof *p->strata, 64))
		return SIZE_MAX - 1;
	p->strata[p->n_strata++] = (stratum){ h.low64, h.high64, 0 };
	p->index[i] = p->n_strata;
	if (2 * p->n_strata > p->cap_index && grow_index(p) != 0)
		return SIZE_MAX - 1;
	return p->n_strata - 1;
}

struct count_ctx {
	fmt_split_plan *p;
	const fmt_schema *schema;
	fmt_sb *key;
};

/* The rows of b counted in their strata (added as they come). */
static fmt_kind count_batch(void *ctx, const fmt_batch *b, fmt_err *e)
{
	struct count_ctx *c = ctx;
	for (uint64_t r = 0; r < b->n_rows; r++) {
		size_t s = stratum_of(c->p, c->schema, b, r, c->key, 1);
		if (s >= SIZE_MAX - 1)
			return fmt_fail(e, FMT_IO, "out of memory");
		c->p->strata[s].rows++;
	}
	return FMT_OK;
}

static fmt_kind check_fractions(const double *fractions, size_t k, fmt_err *e)
{
	double sum = 0;
	if (k < 2 || k > MAX_PARTS)
		return fmt_fail(e, FMT_USAGE, "--fractions takes 2 to %d fractions", MAX_PARTS);
	for (size_t j = 0; j < k; j++) {
		if (!(fractions[j] > 0 && fractions[j] < 1))
			return fmt_fail(e, FMT_USAGE, "--fractions: each fraction is above 0 and below 1");
		sum += fractions[j];
	}
	if (sum < 1 - 1e-9 || sum > 1 + 1e-9)
		return fmt_fail(e, FMT_USAGE, "--fractions add up to %g, not 1", sum);
	return FMT_OK;
}

/* Each stratum's counts per part: the parts' totals those of the whole (fmt_split_counts), each
 * stratum spread over them by fmt_split_allocate. */
static fmt_kind allocate_plan(fmt_split_plan *p, fmt_err *e)
{
	uint64_t total = 0, part_rows[MAX_PARTS];
	uint64_t *rows = malloc((p->n_strata + 1) * sizeof *rows);
	if (!rows)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t s = 0; s < p->n_strata; s++) {
		rows[s] = p->strata[s].rows;
		total += rows[s];
	}
	fmt_split_counts(total, p->fractions, p->k, part_rows);
	fmt_kind k = fmt_split_allocate(rows, p->n_strata, part_rows, p->k, p->counts, e);
	free(rows);
	return k;
}

fmt_kind fmt_split_plan_count(fmt_table *t, const double *fractions, size_t n_fractions, const char *stratify,
			      uint64_t seed, fmt_split_plan **plan, fmt_err *e)
{
	fmt_kind k = check_fractions(fractions, n_fractions, e);
	if (k != FMT_OK)
		return k;
	fmt_split_plan *p = calloc(1, sizeof *p);
	fmt_sb key = { 0 };
	if (!p)
		return fmt_fail(e, FMT_IO, "out of memory");
	p->k = n_fractions;
	memcpy(p->fractions, fractions, n_fractions * sizeof *fractions);
	p->seed = seed;
	p->col = stratify ? fmt_schema_find(&t->schema, stratify) : -1;
	if (stratify && p->col < 0) {
		char cols[256];
		fmt_schema_names_text(&t->schema, cols, sizeof cols);
		k = fmt_fail(e, FMT_USAGE, "--stratify: no column '%s' (the columns: %s)", stratify, cols);
	} else if (stratify && t->schema.fields[p->col].type == FMT_C_OTHER) {
		k = fmt_fail(e, FMT_USAGE, "--stratify: column '%s' has type %s, which fmtkit does not compare", stratify,
			     t->schema.fields[p->col].type_name);
	}
	if (k == FMT_OK && grow_index(p) != 0)
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK && p->col < 0) {
		p->strata = calloc(1, sizeof *p->strata);
		p->n_strata = p->cap_strata = 1;
		if (!p->strata)
			k = fmt_fail(e, FMT_IO, "out of memory");
	}
	struct count_ctx c = { p, &t->schema, &key };
	if (k == FMT_OK)
		k = fmt_table_each_batch(t, count_batch, &c, e);
	p->counts = k == FMT_OK ? calloc(p->n_strata * p->k + 1, sizeof *p->counts) : NULL;
	if (k == FMT_OK && !p->counts)
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		k = allocate_plan(p, e);
	fmt_sb_free(&key);
	if (k != FMT_OK) {
		fmt_split_plan_free(p);
		return k;
	}
	*plan = p;
	return FMT_OK;
}

uint64_t fmt_split_plan_rows(const fmt_split_plan *p, size_t part)
{
	uint64_t n = 0;
	for (size_t s = 0; s < p->n_strata; s++)
		n += p->counts[s * p->k + part];
	return n;
}

size_t fmt_split_plan_strata(const fmt_split_plan *p)
{
	return p->n_strata;
}

void fmt_split_plan_free(fmt_split_plan *p)
{
	if (!p)
		return;
	free(p->strata);
	free(p->index);
	free(p->counts);
	free(p);
}

/* ---- one pass: the parts drawn ---- */

struct split_state {
	fmt_split_plan *plan;        /* its strata index is read, never grown */
	uint64_t *left;              /* n_strata x k: rows each part still needs */
	uint64_t *rng;               /* per stratum */
	fmt_sb key;
};


split_state *fmt_split_state_new(const fmt_split_plan *p)
{
	split_state *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->plan = (fmt_split_plan *)p;
	s->left = malloc((p->n_strata * p->k + 1) * sizeof *s->left);
	s->rng = malloc((p->n_strata + 1) * sizeof *s->rng);
	if (!s->left || !s->rng) {
		fmt_split_state_free(s);
		return NULL;
	}
	memcpy(s->left, p->counts, p->n_strata * p->k * sizeof *s->left);
	for (size_t i = 0; i < p->n_strata; i++) {
		uint8_t in[8];
		fmt_wr_u64(in, i);
		s->rng[i] = XXH3_64bits_withSeed(in, sizeof in, p->seed);
	}
	return s;
}

size_t fmt_split_state_part(split_state *s, const fmt_schema *sc, const fmt_batch *b, uint64_t row)
{
	const fmt_split_plan *p = s->plan;
	size_t st = stratum_of(s->plan, sc, b, row, &s->key, 0);
	if (st >= SIZE_MAX - 1)
		return SIZE_MAX;
	uint64_t *left = s->left + st * p->k, total = 0;
	for (size_t j = 0; j < p->k; j++)
		total += left[j];
	if (total == 0)
		return SIZE_MAX; /* a row the count did not see: the input changed */
	uint64_t pick = (uint64_t)(((unsigned __int128)fmt_splitmix64(&s->rng[st]) * total) >> 64);
	for (size_t j = 0; j < p->k; j++) {
		if (pick < left[j]) {
			left[j]--;
			return j;
		}
		pick -= left[j];
	}
	return SIZE_MAX;
}

void fmt_split_state_free(split_state *s)
{
	if (!s)
		return;
	free(s->left);
	free(s->rng);
	fmt_sb_free(&s->key);
	free(s);
}

/* ---- tables one after another ---- */

typedef struct concat {
	fmt_table_wrap w;
	fmt_table *rest;
	size_t n_rest, current;      /* 0: t's own rows; i: rest[i - 1]'s */
} concat;

static fmt_kind concat_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e)
{
	concat *c = t->format_state;
	for (;;) {
		fmt_kind k;
		if (c->current == 0) {
			k = fmt_table_wrap_next(t, &c->w, b, done, e);
		} else {
			fmt_batch_free(b);
			k = fmt_table_next(&c->rest[c->current - 1], b, done, e);
		}
		if (k != FMT_OK || !*done || c->current == c->n_rest)
			return k;
		c->current++;
		fmt_batch_free(b);
		if ((k = fmt_batch_init(b, t->schema.n_fields, e)) != FMT_OK)
			return k;
	}
}

static void concat_close(fmt_table *t)
{
	concat *c = t->format_state;
	fmt_table_wrap_remove(t, &c->w, 1);
	for (size_t i = 0; i < c->n_rest; i++)
		fmt_table_free(&c->rest[i]);
	free(c->rest);
	free(c);
}

fmt_kind fmt_table_concat(fmt_table *t, fmt_table *rest, size_t n_rest, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	/* nullable when any input is: a CSV whose column has no empty field is not a different schema */
	for (size_t i = 0; i < n_rest; i++)
		for (size_t f = 0; f < t->schema.n_fields && f < rest[i].schema.n_fields; f++)
			t->schema.fields[f].nullable |= rest[i].schema.fields[f].nullable;
	for (size_t i = 0; i < n_rest; i++)
		for (size_t f = 0; f < t->schema.n_fields && f < rest[i].schema.n_fields; f++)
			rest[i].schema.fields[f].nullable = t->schema.fields[f].nullable;
	for (size_t i = 0; k == FMT_OK && i < n_rest; i++)
		if ((k = fmt_schema_expect(&t->schema, &rest[i].schema, e)) != FMT_OK) {
			fmt_err_prefix(e, "not the schema of %s", t->path);
			fmt_err_file(e, rest[i].path);
		}
	concat *c = k == FMT_OK ? calloc(1, sizeof *c) : NULL;
	if (k == FMT_OK && !c)
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k != FMT_OK) {
		for (size_t i = 0; i < n_rest; i++)
			fmt_table_free(&rest[i]);
		free(rest);
		return k;
	}
	c->rest = rest;
	c->n_rest = n_rest;
	fmt_table_wrap_put(t, &c->w, c, concat_next, concat_close);
	uint64_t n = t->n_rows;
	for (size_t i = 0; i < n_rest && n != FMT_ROWS_UNKNOWN; i++)
		n = rest[i].n_rows == FMT_ROWS_UNKNOWN || fmt_add_u64(n, rest[i].n_rows, &n) ? FMT_ROWS_UNKNOWN : n;
	t->n_rows = n;
	return FMT_OK;
}
