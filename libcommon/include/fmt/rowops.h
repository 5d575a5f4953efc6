/* Row operations on tables (fmt-convert --where, --rows, --sample, --shuffle, --dedupe, --sort;
 * fmt-shard split of a dataset): a view of a table that passes, drops or reorders its rows,
 * on any table format, through the table model alone. Part of libcommon/table.
 *
 * The operations run in this order: --where (all must hold), --dedupe (the first of equal rows
 * stays), --sample, --sort or --shuffle, then --rows START:END on what is left. Without --sort,
 * --shuffle and --sample N the view streams (one batch at a time, nothing held); with them the
 * rows go through an external merge sort that holds at most `memory` bytes of rows and spills
 * sorted runs to unlinked temporary files ($TMPDIR, else /tmp) beyond that. */
#ifndef FMT_ROWOPS_H
#define FMT_ROWOPS_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/strbuf.h"
#include "fmt/table.h"

#define FMT_ROWOPS_MEMORY_DEFAULT (256ull << 20)

/* Which rows a split keeps (fmt-shard split): counts per stratum, filled by fmt_split_plan_*. */
typedef struct fmt_split_plan fmt_split_plan;

typedef struct fmt_rowops_opts {
	const char *const *where;    /* 'COLUMN OP VALUE', all must hold */
	size_t n_where;
	int has_range;               /* --rows START:END: rows [start, end) of the result */
	uint64_t row_start, row_end; /* end UINT64_MAX: to the end */
	uint64_t sample_n;           /* --sample N: N rows, uniformly, in input order; 0: none */
	double sample_fraction;      /* --sample FRACTION (0 < F < 1): each row kept with F; 0: none */
	uint64_t seed;               /* --seed of --sample, --shuffle and splits */
	int shuffle;                 /* --shuffle */
	int dedupe;                  /* --dedupe: rows equal in dedupe_cols (all when none) */
	const char *const *dedupe_cols;
	size_t n_dedupe_cols;
	const char *const *sort;     /* 'COLUMN' or 'COLUMN:desc' (or ':asc'), the first first */
	size_t n_sort;
	uint64_t memory;             /* bytes of rows a sort holds; 0: FMT_ROWOPS_MEMORY_DEFAULT */
	const fmt_split_plan *split; /* keep only the rows the plan gives to split_part */
	size_t split_part;
} fmt_rowops_opts;

/* Whether o asks for anything. */
int fmt_rowops_any(const fmt_rowops_opts *o);

/* Put the operations of o over t (its schema unchanged; t->n_rows becomes unknown). Every
 * column name and expression is checked here: an unknown column, a bad expression or a value
 * that is not of the column's type is UsageError naming it. Nothing to do when o asks for
 * nothing. */
fmt_kind fmt_table_rowops(fmt_table *t, const fmt_rowops_opts *o, fmt_err *e);

/* "START:END", "START:" or ":END" (rows counted from 0, END excluded); UsageError otherwise. */
fmt_kind fmt_rows_range_parse(const char *s, uint64_t *start, uint64_t *end, fmt_err *e);
/* "N" (a count above 0) or "F" with a point (0 < F < 1), into *n or *fraction. */
fmt_kind fmt_sample_parse(const char *s, uint64_t *n, double *fraction, fmt_err *e);

/* A value of a column as bytes that compare (memcmp, the shorter first on a common prefix) as
 * the values do: numbers by value (NaN above every number, -0 = 0), strings and binary byte by
 * byte, booleans false first, dates and timestamps by time, fixed-size lists element by element;
 * a null after every value (also with desc, as DuckDB's NULLS LAST). 0 for a type that has no
 * order (FMT_C_OTHER). */
int fmt_row_key(const fmt_field *f, const fmt_column *c, uint64_t row, int desc, fmt_sb *out);

/* The first of rows [0, n) of column c (of r's field) whose value lies outside r's least and
 * greatest values, n when none does or r has no range. Nulls and NaN lie within (a range leaves
 * NaN out), -0 = 0, and byte strings compare as memcmp, the shorter first on a common prefix (so
 * a truncated Parquet bound still holds the values it bounds). */
uint64_t fmt_range_first_outside(const fmt_col_range *r, const fmt_column *c, uint64_t n);

/* Splits: fractions (each > 0, sum 1) of a table's rows, exactly (largest remainders), each
 * stratum (the values of one column) spread over the parts in proportion when stratify is given
 * (fmt_split_allocate); which rows go where
 * is drawn from seed, the same for the same input and seed. Counting reads the table t once
 * (it is then at its end). */
fmt_kind fmt_split_plan_count(fmt_table *t, const double *fractions, size_t n_fractions, const char *stratify,
			      uint64_t seed, fmt_split_plan **plan, fmt_err *e);
/* Rows in part i (after counting). */
uint64_t fmt_split_plan_rows(const fmt_split_plan *p, size_t part);
size_t fmt_split_plan_strata(const fmt_split_plan *p);
void fmt_split_plan_free(fmt_split_plan *p);
/* Counts of n rows by fractions, largest remainders, ties to the earlier part. */
void fmt_split_counts(uint64_t n, const double *fractions, size_t k, uint64_t *counts);
/* counts (n_strata x k, stratum-major): rows[s] of each stratum spread over k parts whose totals
 * are part_rows (adding up to the rows), as scikit-learn's stratified splits do: each cell is its
 * ideal share rows[s] x part_rows[j] / all rows rounded down or up, so every part gets exactly
 * part_rows[j] and every stratum exactly rows[s]; the largest remainders are rounded up first, on
 * a tie the earlier stratum, then the earlier part; where that leaves a stratum and a part short,
 * cells are moved along an augmenting path (such a rounding always exists). Deterministic.
 * FMT_IO out of memory; FMT_INTERNAL when the totals differ. */
fmt_kind fmt_split_allocate(const uint64_t *rows, size_t n_strata, const uint64_t *part_rows, size_t k,
			    uint64_t *counts, fmt_err *e);

/* Tables one after another: t's batches then each of rest's (schemas checked equal first:
 * SchemaMismatch naming the first column that differs and the file; a column nullable in
 * one is nullable in all). rest, a malloc'd array of open tables, is taken (freed with t, or
 * here on failure). */
fmt_kind fmt_table_concat(fmt_table *t, fmt_table *rest, size_t n_rest, fmt_err *e);

#endif
