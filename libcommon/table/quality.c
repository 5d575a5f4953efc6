/* The quality report (fmt/quality.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/xxh3.h"
#include "fmt/cell.h"
#include "fmt/out.h"
#include "fmt/quality.h"
#include "fmt/rowops.h"
#include "fmt/stats.h"
#include "rows_internal.h"

#define HLL_BITS 14
#define HLL_REGS (1u << HLL_BITS)

/* A number as its column holds it: quantiles are values of the column. */
typedef union qnum {
	double d;
	int64_t i;
	uint64_t u;
} qnum;
enum { NUM_FLOAT = 1, NUM_SIGNED, NUM_UNSIGNED };

typedef struct col_quality {
	uint64_t nulls, values;
	fmt_hash_set exact;          /* distinct values while at most FMT_QUALITY_EXACT */
	int over;                    /* more than that: the HyperLogLog answers */
	uint8_t *hll;
	int numeric;                 /* NUM_*, or 0 */
	uint64_t n;                  /* numbers counted (NaN is not) */
	qnum min, max;               /* integers exact (an int64 beyond 2^53 is no double) */
	qnum shift;                  /* integers: the first value, subtracted exactly before Welford */
	unsigned __int128 isum;      /* integers: their exact sum (two's complement when signed), for the mean */
	fmt_running run;             /* Welford, of the values less shift (scaled: finite up to DBL_MAX) */
	qnum *sample;                /* reservoir of FMT_QUALITY_EXACT */
	uint64_t rng;
} col_quality;

struct fmt_quality {
	const fmt_schema *schema;
	col_quality *cols;
	uint64_t rows;
	fmt_hash_set row_set;
	size_t *all;                 /* every column's index, for the row keys */
	fmt_sb key;
};

static int numeric_kind(fmt_ctype t)
{
	return t >= FMT_C_I8 && t <= FMT_C_I64 ? NUM_SIGNED : t >= FMT_C_U8 && t <= FMT_C_U64 ? NUM_UNSIGNED
	       : t >= FMT_C_F16 && t <= FMT_C_F64 ? NUM_FLOAT : 0;
}

static int qnum_cmp(int kind, qnum a, qnum b)
{
	if (kind == NUM_SIGNED)
		return a.i < b.i ? -1 : a.i > b.i;
	if (kind == NUM_UNSIGNED)
		return a.u < b.u ? -1 : a.u > b.u;
	return a.d < b.d ? -1 : a.d > b.d;
}

fmt_kind fmt_quality_new(const fmt_schema *s, fmt_quality **out, fmt_err *e)
{
	fmt_quality *q = calloc(1, sizeof *q);
	size_t n = s->n_fields ? s->n_fields : 1;
	if (!q || !(q->cols = calloc(n, sizeof *q->cols)) || !(q->all = calloc(n, sizeof *q->all))) {
		fmt_quality_free(q);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	q->schema = s;
	for (size_t i = 0; i < s->n_fields; i++) {
		col_quality *c = &q->cols[i];
		q->all[i] = i;
		c->numeric = numeric_kind(s->fields[i].type);
		c->hll = calloc(HLL_REGS, 1);
		c->rng = 0x9e3779b97f4a7c15ull * (i + 1);
		if (!c->hll || (c->numeric && !(c->sample = malloc(FMT_QUALITY_EXACT * sizeof *c->sample)))) {
			fmt_quality_free(q);
			return fmt_fail(e, FMT_IO, "out of memory");
		}
	}
	*out = q;
	return FMT_OK;
}

static void hll_add(uint8_t *regs, uint64_t h)
{
	uint32_t idx = (uint32_t)(h >> (64 - HLL_BITS));
	uint64_t rest = h << HLL_BITS | (1ull << (HLL_BITS - 1)); /* a stop bit: rank at most 64 - HLL_BITS + 1 */
	uint8_t rank = (uint8_t)(__builtin_clzll(rest) + 1);
	if (rank > regs[idx])
		regs[idx] = rank;
}

static double hll_estimate(const uint8_t *regs)
{
	double m = HLL_REGS, sum = 0, zeros = 0;
	for (uint32_t i = 0; i < HLL_REGS; i++) {
		sum += ldexp(1.0, -regs[i]);
		zeros += regs[i] == 0;
	}
	double est = 0.7213 / (1 + 1.079 / m) * m * m / sum;
	if (est <= 2.5 * m && zeros > 0)
		est = m * log(m / zeros);
	return est;
}

/* q less the column's shift, as double: integers far from 0 (2^60 + 1, 2^60 + 3) keep their
 * differences, which their doubles would round away. */
static double shifted(const col_quality *c, qnum q)
{
	if (c->numeric == NUM_SIGNED)
		return (double)((__int128)q.i - c->shift.i);
	if (c->numeric == NUM_UNSIGNED)
		return (double)((__int128)q.u - (__int128)c->shift.u);
	return q.d;
}

static void add_number(col_quality *c, qnum q)
{
	if (c->n == 0 && c->numeric != NUM_FLOAT)
		c->shift = q;
	double v = shifted(c, q);
	if (isnan(v))
		return;
	if (c->n == 0 || qnum_cmp(c->numeric, q, c->min) < 0)
		c->min = q;
	if (c->n == 0 || qnum_cmp(c->numeric, q, c->max) > 0)
		c->max = q;
	c->n++;
	fmt_running_add(&c->run, v);
	c->isum += c->numeric == NUM_SIGNED ? (unsigned __int128)(__int128)q.i : c->numeric == NUM_UNSIGNED ? q.u : 0;
	if (c->n <= FMT_QUALITY_EXACT) {
		c->sample[c->n - 1] = q;
		return;
	}
	uint64_t j = (uint64_t)(((unsigned __int128)fmt_splitmix64(&c->rng) * c->n) >> 64);
	if (j < FMT_QUALITY_EXACT)
		c->sample[j] = q;
}

static qnum cell_qnum(const fmt_field *f, const fmt_column *col, uint64_t r, int kind)
{
	qnum v;
	if (kind == NUM_SIGNED)
		v.i = fmt_cell_i64(f, col, r);
	else if (kind == NUM_UNSIGNED)
		v.u = fmt_cell_u64(f, col, r);
	else
		v.d = fmt_cell_number(f, col, r);
	return v;
}

static fmt_kind add_value(fmt_quality *q, size_t i, const fmt_batch *b, uint64_t r, fmt_err *e)
{
	const fmt_field *f = &q->schema->fields[i];
	const fmt_column *col = &b->columns[i];
	col_quality *c = &q->cols[i];
	if (fmt_column_is_null(col, r)) {
		c->nulls++;
		return FMT_OK;
	}
	c->values++;
	q->key.len = 0;
	if (!fmt_row_key(f, col, r, 0, &q->key) || q->key.oom)
		return q->key.oom ? fmt_fail(e, FMT_IO, "out of memory") : FMT_OK;
	hll_add(c->hll, XXH3_64bits(q->key.p, q->key.len));
	if (!c->over && fmt_hash_set_insert(&c->exact, q->key.p, q->key.len) < 0)
		return fmt_fail(e, FMT_IO, "out of memory");
	if (!c->over && c->exact.n > FMT_QUALITY_EXACT) {
		c->over = 1;
		fmt_hash_set_free(&c->exact);
	}
	if (c->numeric)
		add_number(c, cell_qnum(f, col, r, c->numeric));
	return FMT_OK;
}

fmt_kind fmt_quality_add(fmt_quality *q, const fmt_batch *b, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	for (uint64_t r = 0; k == FMT_OK && r < b->n_rows; r++) {
		for (size_t i = 0; k == FMT_OK && i < q->schema->n_fields; i++)
			k = add_value(q, i, b, r, e);
		q->key.len = 0;
		fmt_row_keys(q->schema, b, r, q->all, q->schema->n_fields, &q->key);
		if (k == FMT_OK && (q->key.oom || fmt_hash_set_insert(&q->row_set, q->key.p ? q->key.p : "", q->key.len) < 0))
			k = fmt_fail(e, FMT_IO, "out of memory");
		q->rows++;
	}
	return k;
}

static int compare_doubles(const void *a, const void *b)
{
	return qnum_cmp(NUM_FLOAT, *(const qnum *)a, *(const qnum *)b);
}

static int compare_signed(const void *a, const void *b)
{
	return qnum_cmp(NUM_SIGNED, *(const qnum *)a, *(const qnum *)b);
}

static int compare_unsigned(const void *a, const void *b)
{
	return qnum_cmp(NUM_UNSIGNED, *(const qnum *)a, *(const qnum *)b);
}

/* A number as JSON: the shortest text of a float64, integers as integers; NaN and infinities as
 * "nan", "inf", "-inf" (fmtkit(7)). */
static json_t *number_json(double v, int integral)
{
	char buf[64];
	if (!isfinite(v))
		return fmt_json_double(v);
	if (integral && fabs(v) < 9007199254740992.0)
		return json_integer((json_int_t)v);
	fmt_shortest_double(v, FMT_C_F64, buf, sizeof buf);
	return json_real(strtod(buf, NULL));
}

/* A value of the column: an integer exactly (json_integer, or the u64 helper above 2^63). */
static json_t *qnum_json(int kind, qnum v)
{
	if (kind == NUM_SIGNED)
		return json_integer((json_int_t)v.i);
	if (kind == NUM_UNSIGNED)
		return fmt_json_u64(v.u);
	return number_json(v.d, 0);
}

static void numeric_json(json_t *o, col_quality *c)
{
	if (c->n == 0)
		return;
	json_object_set_new(o, "min", qnum_json(c->numeric, c->min));
	json_object_set_new(o, "max", qnum_json(c->numeric, c->max));
	double mean = c->numeric == NUM_FLOAT ? fmt_running_mean(&c->run) : fmt_int_sum_mean(c->isum, c->numeric == NUM_SIGNED, c->n);
	json_object_set_new(o, "mean", number_json(mean, 0));
	json_object_set_new(o, "std", c->n > 1 ? number_json(fmt_running_std(&c->run, 1), 0) : json_null());
	size_t n = c->n < FMT_QUALITY_EXACT ? (size_t)c->n : FMT_QUALITY_EXACT;
	qsort(c->sample, n, sizeof *c->sample, c->numeric == NUM_SIGNED ? compare_signed
					       : c->numeric == NUM_UNSIGNED ? compare_unsigned : compare_doubles);
	static const struct { const char *name; double p; } qs[] = { { "p1", 0.01 }, { "p50", 0.5 }, { "p99", 0.99 } };
	for (size_t i = 0; i < 3; i++) { /* nearest rank: the ceil(n p)-th value */
		double rank = ceil((double)n * qs[i].p);
		size_t at = rank < 1 ? 0 : (size_t)rank - 1;
		json_object_set_new(o, qs[i].name, qnum_json(c->numeric, c->sample[at < n ? at : n - 1]));
	}
	json_object_set_new(o, "quantiles_exact", json_boolean(c->n <= FMT_QUALITY_EXACT));
}

static json_t *column_json(fmt_quality *q, size_t i)
{
	const fmt_field *f = &q->schema->fields[i];
	col_quality *c = &q->cols[i];
	char type[256];
	fmt_field_type_name(f, type, sizeof type);
	uint64_t distinct = c->over ? (uint64_t)llround(hll_estimate(c->hll)) : c->exact.n;
	json_t *o = json_object();
	json_object_set_new(o, "name", fmt_json_string(f->name, strlen(f->name)));
	json_object_set_new(o, "type", json_string(type));
	json_object_set_new(o, "nulls", json_integer((json_int_t)c->nulls));
	json_object_set_new(o, "null_rate", q->rows ? json_real((double)c->nulls / (double)q->rows) : json_null());
	if (f->type != FMT_C_OTHER) {
		json_object_set_new(o, "distinct", json_integer((json_int_t)distinct));
		json_object_set_new(o, "distinct_exact", json_boolean(!c->over));
		/* every row the same value: one value and no null, or nothing but nulls */
		json_object_set_new(o, "constant", json_boolean(q->rows > 0 && ((distinct == 1 && !c->over && c->nulls == 0) ||
									     c->values == 0)));
	}
	if (c->numeric)
		numeric_json(o, c);
	return o;
}

json_t *fmt_quality_json(fmt_quality *q)
{
	json_t *r = json_object(), *cols = json_array(), *method = json_object();
	if (!r || !cols || !method) {
		json_decref(r);
		json_decref(cols);
		json_decref(method);
		return NULL;
	}
	json_object_set_new(r, "rows", json_integer((json_int_t)q->rows));
	json_object_set_new(r, "duplicate_rows", json_integer((json_int_t)(q->rows - q->row_set.n)));
	for (size_t i = 0; i < q->schema->n_fields; i++)
		json_array_append_new(cols, column_json(q, i));
	json_object_set_new(r, "columns", cols);
	json_object_set_new(method, "distinct", json_string("exact up to 65536 values per column, then HyperLogLog "
							    "(2^14 registers, standard error 0.81%)"));
	json_object_set_new(method, "quantiles", json_string("discrete (as quantile_disc); exact up to 65536 values, "
							     "then a uniform sample of 65536: rank error at most 0.64% "
							     "with 99% probability"));
	json_object_set_new(method, "duplicate_rows", json_string("rows equal in every column, by a 128-bit hash"));
	json_object_set_new(r, "method", method);
	return r;
}

void fmt_quality_free(fmt_quality *q)
{
	if (!q)
		return;
	for (size_t i = 0; q->cols && q->schema && i < q->schema->n_fields; i++) {
		fmt_hash_set_free(&q->cols[i].exact);
		free(q->cols[i].hll);
		free(q->cols[i].sample);
	}
	free(q->cols);
	free(q->all);
	fmt_hash_set_free(&q->row_set);
	fmt_sb_free(&q->key);
	free(q);
}
